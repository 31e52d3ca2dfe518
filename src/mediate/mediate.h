/* mediate.h - the mediator: the agent sandbox's file operations and program
 * launches decided by the policy at the system-call boundary
 * (docs/mediator.md).
 *
 * The launcher installs med_filter_prog() in the workload (ct_spec.notify_prog
 * with notify_has_deny); its listener comes here.  Worker threads receive
 * each notification, read the call's path from the process's memory,
 * resolve it in the sandbox's view and class it (med_area_spec), and answer:
 *
 *   runtime   let through (the kernel performs it; nothing recorded)
 *   grant     let through when the kernel's rights give cairn's answer;
 *             mutations performed here and observed in the history
 *   decided   asked of the engine; performed here only on permit;
 *             ::request, then ::response or ::error
 *   floor     refused whatever a permit says, recorded (cause enforcement)
 *
 * What is decided or recorded is performed by the supervisor on the bytes
 * it judged and handed back (SECCOMP_IOCTL_NOTIF_ADDFD for descriptors), so
 * no check-then-use race reaches it.  Launches (execve, execveat) raise
 * shell:exec, are let through on permit and verified at the new image's
 * first mediated call; their exit statuses are recorded. */
#ifndef CAIRN_MEDIATE_H
#define CAIRN_MEDIATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct dw_monitor;
struct dw_engine;
struct tm_collector;

/* How a tree of the sandbox's view is mediated (docs/mediator.md "The view"). */
enum med_class {
	MED_ROOT = 1,           /* the view's own skeleton: "/" and its empty directories */
	MED_RUNTIME,            /* read-only runtime mounts (/usr, /etc files): let through */
	MED_SCRATCH,            /* writable runtime (/tmp): let through once resolved */
	MED_KERNEL,             /* /proc, /dev: let through unresolved (magic links stay the
	                           kernel's, and Landlock judges what they reach) */
	MED_GRANT,              /* a direct grant (access: CT_READ, CT_WRITE, CT_EXEC) */
	MED_DECIDED,            /* a decided root: the operator's home, the agent's, the
	                           workspace; in the view with no right of the kernel's */
	MED_FLOOR,              /* refused whatever a permit says (why) */
};

/* One tree; the deepest tree holding a path classes it.  Strings borrowed. */
struct med_area_spec {
	const char *path;       /* absolute, canonical */
	enum med_class cls;
	unsigned access;        /* MED_GRANT: the grant's CT_* rights */
	const char *why;        /* MED_FLOOR: the refusal's reason */
};

/* A program some [tool.*] table runs (docs/tools.md "Calling a tool"): an
 * exec in the agent's sandbox of that file under any name, or of any file
 * with its name, is refused with the shim to call instead, so the tool
 * never runs with the agent's grants. */
struct med_tool_program {
	dev_t dev;
	ino_t ino;
	const char *path;               /* canonical */
	const char *shim;               /* <box_dir>/bin/<name> */
};

struct med_config {
	const struct med_area_spec *areas;
	size_t n_areas;
	const char *home;               /* the operator's home: paths under it are `~/…` */
	const char *config_path;        /* the loaded box.toml and policy (NULL: none): */
	const char *policy_path;        /* refused by identity, their ancestors unmovable */
	pid_t workload_pid;             /* its first exec is the box's own, not decided */
	int view_fd;                    /* O_PATH of the view's root (ct_proc.view_fd),
	                                   borrowed: the mediator keeps a copy */
	struct dw_monitor *mon;         /* borrowed until med_stop */
	const struct dw_engine *eng;
	struct tm_collector *tm;        /* NULL: no records */
	bool observe_grant_reads;       /* record reads under grants (docs/mediator.md) */
	bool sync_each;                 /* every decided or observed call waits for its
	                                   fdatasync; else a committer makes the history
	                                   durable within MED_COMMIT_LAG_NS of a write
	                                   (docs/mediator.md "The history") */
	unsigned workers;               /* 0: the default */
	/* Tools: an exec of the shim image (hard-linked under every tool's
	 * name) is the broker's: not decided here, shell:spawn is.  0/0: no
	 * shims. */
	dev_t shim_dev;
	ino_t shim_ino;
	const struct med_tool_program *tool_programs;  /* borrowed until med_stop */
	size_t n_tool_programs;
};

struct med;
struct sock_fprog;

/* The seccomp program the launcher installs for a mediated workload
 * (ct_spec.notify_prog, with notify_has_deny): the deny filter with the
 * mediated calls folded in (static storage). */
const struct sock_fprog *med_filter_prog(void);

/* Serve listener (taken over) with cfg's areas.  0 and *out, or -1 with err
 * (the listener closed, nothing served: the caller refuses the box). */
int med_start(int listener, const struct med_config *cfg, struct med **out, char *err,
	      size_t errlen);

/* Stop serving once the workload has ended; record the launches still
 * open; free.  NULL is a no-op. */
void med_stop(struct med *m);

/* Counters, for the start line, tests and benchmarks. */
struct med_stats {
	unsigned long long notifications, continued, emulated, decided, denied, refused_floor,
		kernel_refusals, execs;
};
void med_get_stats(struct med *m, struct med_stats *out);

/* The `command` of a launch as shell:exec and shell:spawn carry it: argv
 * shell-quoted (bare words bare, others in single quotes) and joined by
 * spaces, cut at len - 1 bytes.  Its length. */
size_t med_command_text(const char *const *argv, size_t argc, char *out, size_t len);

/* The start-up probe (docs/mediator.md "When it is on"): a child installs a
 * listener, and this process receives its notification, reads its memory,
 * copies a descriptor into it and emulates an open end to end.  0, or -1
 * with err naming the step that failed and the host setting to fix. */
int med_probe(char *err, size_t errlen);

#endif
