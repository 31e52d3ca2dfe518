/* med_int.h - what the mediator's files share (not a public header).
 *
 *   med_server.c   the listener, the worker threads, answers
 *   med_fs.c       file calls: classed, let through or performed
 *   med_exec.c     launches: decided, let through, verified; exit statuses
 *   med_decide.c   requests to the engine, the history, records, the
 *                  denial line on the process's stderr
 *   med_path.c     the view and the resolver (med_path.h)
 *   med_mem.c      the process's memory (med_mem.h) */
#ifndef CAIRN_MED_INT_H
#define CAIRN_MED_INT_H

#include <limits.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "med_path.h"
#include "mediate.h"

struct dw_request;
struct med_execs;
struct worker;
struct tm_kernel_limit;
struct ct_refusal;

#define MED_SAID 256            /* denial lines remembered, to say each once */
#define MED_COMMIT_LAG_NS 2000000       /* a write is durable within 2 ms */
#define MED_STANDBY_NS 2000000          /* a busy receiver is helped after 2 ms */

struct med {
	int listener;
	struct med_view view;
	struct dw_monitor *mon;
	const struct dw_engine *eng;
	struct tm_collector *tm;
	pid_t workload;
	dev_t shim_dev;                 /* the shim image: an exec of it is the broker's */
	ino_t shim_ino;
	const struct med_tool_program *tools;
	size_t n_tools;
	atomic_bool launched;           /* the workload's own first exec went through */
	bool observe_grant_reads;
	size_t notif_size, resp_size, addfd_size;
	int stop_fd;                    /* eventfd: the workers end */
	atomic_bool stopping;
	struct worker *workers;
	unsigned n_workers;
	/* One worker waits in RECV; the others stand by and join it only while
	 * it has been busy with one call for MED_STANDBY_NS: several threads in
	 * RECV together wake one another across CPUs (a let-through round trip
	 * took 12.7 us with four waiting, 4.7 with one: docs/mediator.md), and
	 * a slow call still holds only its own caller, others wait at most
	 * about that long. */
	atomic_ullong busy_since;       /* the receiver's current call (ns), 0: waiting */
	/* The receiver's token: held from RECV to the answer, and handed on
	 * before an ADDFD, whose answer the kernel delivers by waking the
	 * process and then the caller of the ioctl, each a wake across CPUs;
	 * the next call need not wait for the second (docs/mediator.md "One
	 * listener"). */
	pthread_mutex_t recv_lock;
	struct med_execs *execs;
	pthread_mutex_t said_lock;
	uint64_t said[MED_SAID];        /* hashes of (pid, resource) already told */
	/* the deny filter's refusals, recorded at Box's rate (kernel_limit.h):
	 * one limiter, used under its lock; the launch watcher closes its
	 * windows on time */
	pthread_mutex_t klimit_lock;
	struct tm_kernel_limit *klimit;
	/* the committer (sync_each false): the history made durable in groups,
	 * within MED_COMMIT_LAG_NS of the write that needs it */
	bool sync_each;
	pthread_mutex_t commit_lock;
	pthread_cond_t commit_cond;
	bool commit_dirty, commit_stop;
	pthread_t committer;
	bool have_committer;
	atomic_ullong st_notifications, st_continued, st_emulated, st_decided, st_denied,
		st_floor, st_kernel, st_execs;
};

/* One notification being answered by a worker. */
struct med_call {
	struct med *m;
	struct seccomp_notif *n;
	struct seccomp_notif_resp *r;
	pid_t pid;                      /* the calling thread, in the supervisor's pid namespace */
	struct dw_request *req;         /* the worker's, reset per decision */
	struct ct_refusal *ref;         /* the worker's, for a kernel refusal */
	int ns_tgid, ns_tid;            /* the caller in its own pid namespace, once read */
	bool have_ns;
	bool answered;
	bool *token;                    /* the worker holds recv_lock (NULL: a spare) */
};

/* ---- med_server.c: answers ---------------------------------------------------- */

/* The notification is still the call it was (the pid not reused, the
 * process not gone): check after every read of its memory or /proc. */
bool med_valid(struct med_call *c);
void med_continue(struct med_call *c);
void med_answer(struct med_call *c, int64_t val);
void med_fail(struct med_call *c, int err);
/* Install fd (not consumed) in the process as the call's result
 * (SECCOMP_ADDFD_FLAG_SEND): 0, or -errno (the call answered already,
 * or gone: ENOENT).  The outcome must be recorded before: the process
 * runs on as soon as it has the descriptor.  Hands the receiver's token
 * on. */
int med_send_fd(struct med_call *c, int fd, bool cloexec);

/* A pidfd for the calling thread (PIDFD_THREAD, 6.9: a thread that is not
 * its group's leader has no pidfd of its own otherwise): -1 and errno. */
int med_pidfd(struct med_call *c);

/* The thread's cwd, or the directory dirfd names, as a canonical path:
 * 0, or -errno to answer (EBADF, ENOTDIR, ENOENT for a removed one). */
int med_base(struct med_call *c, int dirfd, char out[PATH_MAX]);

/* The limiter's next due time (CLOCK_MONOTONIC ns, INT64_MAX: none), and
 * closing what is due: for the launch watcher. */
int64_t med_kernel_due(struct med *m);
void med_kernel_tick(struct med *m);

/* ---- med_fs.c ----------------------------------------------------------------- */

void med_fs_call(struct med_call *c);

/* ---- med_exec.c --------------------------------------------------------------- */

int med_execs_new(struct med *m, char *err, size_t errlen);
void med_execs_free(struct med *m);     /* records the launches still open */
void med_exec_call(struct med_call *c);
/* Record the exit statuses of launches that have ended and been reaped:
 * before a decision, so a rule sees every status its request follows
 * (`python3 test.py && cp …`: bash reaped python before it started cp). */
void med_execs_sweep(struct med *m);
/* A launch of this thread group awaits its check: verify it.  false: the
 * process was killed (the call is answered). */
bool med_exec_check(struct med_call *c);

/* ---- med_decide.c ------------------------------------------------------------- */

/* A file request, as Box's shell raises it. */
struct med_fs_ask {
	const char *action;             /* "fs:read" */
	const char *op;                 /* "read_content" */
	const char *path;               /* canonical */
	bool quiet;                     /* a metadata probe: recorded, not told */
};

/* Decide a: 1 (permit, *ticket for med_fs_done), 0 (denied: recorded and,
 * unless quiet, told on the process's stderr). */
int med_fs_decide(struct med_call *c, const struct med_fs_ask *a, uint64_t *ticket);
/* The outcome of a permitted request: result "completed" or
 * "descriptor_issued", or NULL for ::error. */
void med_fs_done(struct med_call *c, uint64_t ticket, const char *result);
/* An effect performed under a direct grant, without a decision. */
void med_fs_observe(struct med_call *c, const struct med_fs_ask *a, const char *result);
/* A floor refusal (cause enforcement): recorded and told. */
void med_fs_floor(struct med_call *c, const struct med_fs_ask *a, const char *why);

struct med_exec_ask {
	const char *program;            /* basename of the resolved file */
	const char *const *argv;        /* argv[0, argc) as the call passed it */
	size_t argc;
	const char *cwd;                /* canonical */
};
int med_exec_decide(struct med_call *c, const struct med_exec_ask *a, uint64_t *ticket);
/* A launch refused whatever a permit says (a tool's program run directly:
 * docs/tools.md): recorded with cause enforcement and rule, told. */
void med_exec_floor(struct med_call *c, const struct med_exec_ask *a, const char *rule,
		    const char *why);
void med_exec_done(struct med *m, uint64_t ticket, int status);

/* Everything recorded so far is durable (the result may reach the process). */
int med_sync(struct med_call *c);

/* Tell the process, once per resource: "cairn: <text>" on its stderr. */
void med_tell(struct med_call *c, const char *resource, const char *text);

#endif
