/* cli.h - shared pieces of the cairn command line. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stddef.h>

/* Exit statuses of every cairn command. */
enum {
	EXIT_OK = 0,
	EXIT_USAGE = 1,      /* usage or I/O error (also: the box refused to start) */
	EXIT_REJECTED = 2,   /* the input was read and rejected */
};

/* Read a whole file (or stdin for "-"); NUL-terminated, *len without the NUL.
 * NULL with errno set on failure.  Files above 64 MiB are refused (EFBIG). */
char *cli_read_file(const char *path, size_t *len);

int cmd_policy(int argc, char **argv);

#endif
