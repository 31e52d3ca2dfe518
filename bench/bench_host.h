/* bench_path.h - finding a peer program (bwrap, mitmdump) on $PATH. */
#ifndef CAIRN_BENCH_PATH_H
#define CAIRN_BENCH_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first executable regular file called name on $PATH, or NULL. Caller frees. */
static inline char *find_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *hit = NULL;

	if (path == NULL || *path == '\0')
		path = "/usr/bin:/bin";
	if ((copy = strdup(path)) == NULL)
		return NULL;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		struct stat st;
		char *p;

		if (*dir != '/')            /* a relative PATH entry would depend on our cwd */
			continue;
		if (asprintf(&p, "%s/%s", dir, name) < 0)
			break;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
			hit = p;
			break;
		}
		free(p);
	}
	free(copy);
	return hit;
}

#endif
