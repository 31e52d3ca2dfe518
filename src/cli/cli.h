/* cli.h - shared pieces of the cairn command line. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stddef.h>

#include "dogwood.h"
#include "render.h"

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
int cmd_replay(int argc, char **argv);       /* `policy replay` (replay_cmd.c) */
int cmd_history(int argc, char **argv);      /* `history show|verify` (history_cmd.c) */
int cmd_run(int argc, char **argv);
int cmd_records(int argc, char **argv);      /* `records show` (records_cmd.c) */          /* `run` (run_cmd.c): exits 1 box error, 2 usage */

/* Input files named on the command line (policy_cmd.c). */
#define CLI_MAX_INPUTS 64
struct inputs {
	struct dw_input v[CLI_MAX_INPUTS];
	size_t n;
};
int inputs_add(struct inputs *in, const char *path, enum dw_input_format fmt);
void inputs_free(struct inputs *in);
enum dw_input_format policy_format(const char *path);
enum dw_input_format schema_format(const char *path);
int parse_format(const char *s, enum render_format *out);
struct json_t;
void print_json(struct json_t *j);

#endif
