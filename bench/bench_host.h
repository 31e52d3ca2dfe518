/* bench_host.h - the host a benchmark runs on: a peer program (bwrap,
 * mitmdump) on $PATH, and the load average printed beside the figures. */
#ifndef CAIRN_BENCH_HOST_H
#define CAIRN_BENCH_HOST_H

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

/* "l1 l5 l15" from /proc/loadavg, or "unknown". */
static inline void loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "re");
	double l1, l5, l15;

	if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", l1, l5, l15);
	else
		snprintf(buf, len, "unknown");
	if (f)
		fclose(f);
}

#endif
