/* refusal.h - the supervisor's side of the observed deny filter (filter.h,
 * docs/records.md "Kernel refusals"): each call the filter refuses arrives
 * on the listener as a notification; it is described here (the system
 * call's name, the arguments a rule read, the process that made it) and
 * answered EPERM, the answer the plain filter gives.
 *
 * No allocation, no globals: one thread answers one listener. */
#ifndef CAIRN_CT_REFUSAL_H
#define CAIRN_CT_REFUSAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CT_REFUSAL_ARGS 160
#define CT_REFUSAL_CMDLINE 8192

/* One refused call, as the supervisor saw it. */
struct ct_refusal {
	pid_t pid;                      /* in the supervisor's pid namespace */
	const char *syscall;            /* "socket"; static */
	char args[CT_REFUSAL_ARGS];     /* "family=AF_PACKET type=SOCK_RAW": what the rule
	                                   that refused it read; "" when it reads none */
	char exe[PATH_MAX];             /* /proc/<pid>/exe; "" when it cannot be read */
	char cwd[PATH_MAX];             /* /proc/<pid>/cwd; "" likewise */
	char cmdline[CT_REFUSAL_CMDLINE];       /* argv, each ending in '\0' (cut at the end) */
	size_t cmdline_len;
};

/* Wait up to timeout_ms (-1: without end) for the next refused call on
 * listener fd, describe it in *out and answer it EPERM.  Returns 1 with
 * *out; 0 when the time passed, stop_fd (-1: none) became readable, or the
 * call vanished first (its process was killed: nothing to answer); -errno
 * when the listener is done (-EPIPE: every process under the filter has
 * ended) or failed.  The description is read while the caller is still
 * blocked in the call, and kept only when the notification is still valid
 * after it, so it is of the process that made the call. */
int ct_refusal_next(int fd, int stop_fd, int timeout_ms, struct ct_refusal *out);

struct seccomp_notif;

/* Describe the refused call n, received on listener fd (the mediator's,
 * which folds the deny filter's refusals in): true when the notification
 * was still valid after /proc was read, so the description is its
 * caller's.  It does not answer. */
bool ct_refusal_describe(int fd, const struct seccomp_notif *n, struct ct_refusal *out);

/* f's argv words (from /proc/<pid>/cmdline) into argv[0, max): their
 * number.  Borrowed from f. */
size_t ct_refusal_argv(const struct ct_refusal *f, const char **argv, size_t max);

/* The call's name ("syscall <nr>" for one the table does not know, in buf)
 * and the arguments the filter's rules read, as ct_refusal_next gives them:
 * for tests. */
const char *ct_refusal_name(int nr, char *buf, size_t len);
void ct_refusal_args(int nr, const uint64_t args[6], char *out, size_t len);

#endif
