/* broker.h - tools: the agent's calls through a shim, decided as
 * shell:spawn and run in leaf sandboxes of their own (docs/tools.md).
 *
 * The supervisor binds <box_dir>/run/box.sock and hands the listener here.
 * One thread accepts; each call gets a thread of its own (at most
 * BRK_MAX_CALLS at once: the rest wait in the listen backlog), so a tool
 * that never exits holds only its own shim.  A call:
 *
 *   1. reads the shim's spawn frame (frame.h) within BRK_FRAME_MS, with its
 *      three descriptors, and checks them (no directory, no O_PATH);
 *   2. finds the tools named like the shim (127 "not found" when none), the
 *      program's identity unchanged since the run judged it, and the table
 *      whose fixed arguments are the longest prefix of the call's;
 *   3. decides shell:spawn (program, program_path, arg1, arg2, arg_count,
 *      cwd, command, credential_reads); a refusal is 126 with Box's line;
 *      a permit that no table's arguments match is refused too, "no tool
 *      runs ...";
 *   4. starts the leaf from the table's plan with the shim's own
 *      descriptors as its stdio and, when the shim's group owns its
 *      terminal, the terminal's foreground; forwards the shim's signals;
 *      kills the leaf if the shim goes away;
 *   5. records shell:spawn::response with output.status (128 + N for a
 *      signal), durable before the status reaches the shim, and answers.
 *
 * Errors are values; the broker prints nothing (a refused shim prints the
 * line it is sent). */
#ifndef CAIRN_BROKER_H
#define CAIRN_BROKER_H

#include <stddef.h>
#include <sys/types.h>

#define BRK_MAX_CALLS 64

struct plan;
struct ct_host;
struct dw_monitor;
struct dw_engine;
struct tm_collector;
struct gw_proc;

/* One [tool.<label>] table, planned at start.  Strings borrowed. */
struct brk_tool {
	const char *label;              /* "git" of [tool.git] */
	const char *name;               /* its shim: the basename of command[0] */
	const struct plan *plan;        /* the leaf (plan_tool) */
	const char *const *fixed;       /* the table's fixed arguments, expanded */
	size_t n_fixed;
	const char *const *cred_reads;  /* credential stores its lists name, `~/…` */
	size_t n_cred;
};

struct brk_config {
	const struct brk_tool *tools;
	size_t n_tools;
	const char *home;               /* the operator's home: paths spelled `~/…` */
	const char *shim_dir;           /* <box_dir>/bin, for the refusal texts */
	struct dw_monitor *mon;         /* decisions and outcomes; borrowed until brk_stop */
	const struct dw_engine *eng;    /* the requests' schema */
	struct tm_collector *tm;        /* records; NULL: none */
	const struct ct_host *host;     /* how leaves are limited */
	const char *cgroup_prefix;      /* a leaf's cgroup: <prefix>-t<n> */
	struct gw_proc *gw;             /* a contained leaf's listener is served here */
	pid_t agent_pid;                /* the agent's workload (host pid): the terminal is
	                                   handed only from groups in its pid namespace */
};

struct brk;

/* <box_dir>/bin: the shim image (.shim-image, a copy of the installed
 * cairn-shim, mode 0555, replaced only when it differs) and a hard link to
 * it per name in names[0, n); every other entry removed.  *dev, *ino: the
 * image's identity (0 with no names).  0, or -1 with err. */
int brk_install_shims(int box_fd, const char *const *names, size_t n, dev_t *dev, ino_t *ino,
		      char *err, size_t errlen);

/* <box_dir>/run/box.sock, bound (mode 0600) and listening; a stale one is
 * replaced.  The listening fd, or -1 with err (Box's "its broker socket
 * path exceeds the platform limit" when the path cannot be connected to). */
int brk_listen(int box_fd, const char *box_path, char *err, size_t errlen);

/* Serve listener (a listening AF_UNIX stream socket, taken over) with cfg
 * (borrowed until brk_stop).  0 and *out, or -1 with err. */
int brk_start(int listener, const struct brk_config *cfg, struct brk **out, char *err,
	      size_t errlen);

/* Stop: accept no more, kill every leaf still running (its outcome
 * recorded), wait for every call to end, free.  NULL is a no-op. */
void brk_stop(struct brk *b);

/* Counters, for tests and benchmarks. */
struct brk_stats {
	unsigned long long calls, spawned, refused, not_found, malformed;
};
void brk_get_stats(struct brk *b, struct brk_stats *out);

#endif
