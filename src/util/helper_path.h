/* helper_path.h - where cairn's helper programs are (cairn-gateway,
 * cairn-export, cairn-shim): beside the running executable (a build tree, or
 * an install that keeps them together), else in the installed libexec
 * directory. */
#ifndef CAIRN_UTIL_HELPER_PATH_H
#define CAIRN_UTIL_HELPER_PATH_H

#include <stddef.h>

/* The helper called name into path[0, len): 0 when it is there and
 * executable, -1 otherwise (path then holds the installed location, for the
 * error, and errno says why). */
int cairn_helper_path(const char *name, char *path, size_t len);

#endif
