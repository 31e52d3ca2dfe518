/* helper_path.c - where cairn's helpers are (helper_path.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helper_path.h"

int cairn_helper_path(const char *name, char *path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(path, len, "%s/%s", self, name) < len &&
			    access(path, X_OK) == 0)
				return 0;
		}
	}
	if ((size_t)snprintf(path, len, "%s/%s", CAIRN_LIBEXECDIR, name) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return access(path, X_OK);
}
