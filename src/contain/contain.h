/* contain.h - the launcher: one program in a Linux sandbox built from a
 * ct_spec (docs/security.md "The sandbox").
 *
 * The launcher knows nothing of box.toml or of policy.  Its caller (the run,
 * later the broker) translates a process table into a ct_spec: the mounts of
 * the view, the Landlock rights, the environment, the limits, the listeners.
 *
 * Process model, all created by ct_launch:
 *
 *   supervisor (caller, host)          holds the pidfd, the control socket,
 *     │                                the listeners and the notify listener
 *     └─ reaper  (pid 1 of a new user, pid, mount, net, ipc, uts and cgroup
 *        │        namespace; builds the view, brings `lo` up, creates the
 *        │        listeners and sends them out; then reaps and forwards
 *        │        signals; drops every capability once the workload runs)
 *        └─ workload (pid 2: own process group, fds closed, Landlock,
 *                     capabilities dropped, no_new_privs, seccomp, exec)
 *
 * When the workload exits the reaper sends its wait status to the supervisor
 * and exits, which kills whatever else lives in the pid namespace: nothing
 * survives a run.
 *
 * ct_launch may be called from a threaded process: it plans the view and
 * the Landlock rules before clone3, and the sandbox's processes allocate
 * nothing and touch no lock libc's other threads might hold (no stdio, no
 * locale: ct_strerror).  Every failure of setup is reported with the stage
 * and the cause; the workload never runs with less than the spec asks for. */
#ifndef CAIRN_CONTAIN_H
#define CAIRN_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sock_fprog;

#define CT_MAX_LISTEN 4

/* Access a mount (and its Landlock rule) gives beneath its path. */
enum {
	CT_READ = 1u << 0,      /* read files, list directories */
	CT_WRITE = 1u << 1,     /* create, write, remove, rename beneath (implies CT_READ on Linux) */
	CT_EXEC = 1u << 2,      /* execute regular files (the mount is not noexec) */
	CT_DEV = 1u << 3,       /* a device node: keep it usable (no nodev) and allow its ioctls */
	CT_LIST = 1u << 4,      /* list directories only (Landlock READ_DIR), no file contents */
	CT_DECIDED = 1u << 5,   /* a mediated tree (docs/mediator.md): in the view, writable
	                           as a mount for the supervisor, with no Landlock right at
	                           all for the workload (never exec) */
};

enum ct_mount_kind {
	CT_BIND,                /* the host path, at the same path, with `access` */
	CT_MASK,                /* hide what is there: an empty read-only directory, or an
	                           empty read-only file over a file; never readable inside */
	CT_DIR,                 /* an empty read-only directory (a place to enter) */
	CT_SYMLINK,             /* a symbolic link at path pointing to `target` */
	CT_FILE,                /* a read-only regular file holding data[0, len) */
};

struct ct_mount {
	enum ct_mount_kind kind;
	const char *path;       /* absolute, canonical; where it appears inside */
	unsigned access;        /* CT_BIND: CT_READ|CT_WRITE|CT_EXEC|CT_DEV */
	bool optional;          /* CT_BIND: skip it when the host path is absent */
	const char *target;     /* CT_SYMLINK */
	const char *data;       /* CT_FILE */
	size_t len;
};

/* Landlock rights for a path that is already in the view through a wider
 * mount (an executable file inside a read-only tree, say). */
struct ct_rule {
	const char *path;
	unsigned access;        /* CT_READ|CT_WRITE|CT_EXEC|CT_DEV */
};

/* 0 in a field: not limited. */
struct ct_limits {
	uint32_t pids;
	uint64_t memory;        /* bytes */
	uint32_t cpu_milli;     /* thousandths of a CPU */
	uint64_t tmp_size;      /* bytes of the private /tmp; 0: CT_TMP_DEFAULT */
};

#define CT_TMP_DEFAULT (1024ull << 20)

/* How ct_launch enforces limits; decided by ct_preflight. */
enum ct_limits_mode {
	CT_LIMITS_CGROUP2 = 1,  /* a delegated cgroup v2 subtree: pids, memory (oom.group), cpu */
	CT_LIMITS_CGROUP1,      /* root on a host whose controllers are on cgroup v1 */
	CT_LIMITS_RLIMIT,       /* RLIMIT_NPROC, RLIMIT_DATA (cpu needs a cgroup) */
};

struct ct_spec {
	const char *const *argv;        /* argv[0]: absolute path of the program */
	const char *const *envp;        /* the whole environment, built by the caller */
	const char *cwd;                /* absolute; must exist in the view */
	const char *hostname;           /* UTS name; NULL: "cairn" */

	const struct ct_mount *mounts;  /* any order: applied shallowest first, stable */
	size_t n_mounts;
	const struct ct_rule *rules;
	size_t n_rules;

	struct ct_limits limits;
	enum ct_limits_mode limits_mode;
	const char *cgroup_name;        /* unique leaf name for cgroup modes */

	bool share_net;                 /* leaves with contain_egress = false: host netns */
	const uint16_t *listen_ports;   /* 127.0.0.1:<port> listeners made in the netns */
	size_t n_listen;                /* <= CT_MAX_LISTEN */

	/* Installed by the workload after every other step but the deny filter
	 * (whose ERRNO outranks a notification, so the order cannot weaken it),
	 * with SECCOMP_FILTER_FLAG_NEW_LISTENER; its listener reaches the
	 * supervisor as ct_proc.notify_fd.  NULL: none. */
	const struct sock_fprog *notify_prog;
	/* notify_prog holds the deny filter's rules itself, its refusals as
	 * notifications (the mediator's program): the deny filter is not
	 * installed beside it.  The listener waits killably once a call is
	 * received (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so a signal cannot
	 * restart a call the supervisor is performing. */
	bool notify_has_deny;
	/* The mediator decides or performs what the kernel does not (docs/
	 * mediator.md "The view"): a CT_WRITE bind stays writable as a mount,
	 * but Landlock gives the workload only its read (and exec) rights
	 * there; the view's skeleton is not listable ("/" has no rule: /dev and
	 * /etc, which hold only runtime files, are). */
	bool mediated;
	/* The deny filter observed (filter.h, docs/records.md "Kernel
	 * refusals"): its refusals become notifications whose listener reaches
	 * the supervisor as ct_proc.refusals_fd, to be answered EPERM and
	 * recorded.  Not with notify_prog (one listener per filter chain). */
	bool observe_refusals;

	int stdio[3];                   /* the workload's fds 0-2; -1: the caller's own */
	int tty_fd;                     /* a terminal among stdio to bind into /dev and to hand the
	                                   foreground to; -1: none */
	pid_t tty_owner;                /* the group whose foreground is handed over (a tool's
	                                   shim's); 0: the caller's own group */
	bool private_proc;              /* false: bind the host's /proc ([containment]) */
};

struct ct_proc {
	pid_t pid;                      /* host pid of the reaper */
	int pidfd;                      /* of the reaper */
	pid_t workload_pid;             /* host pid of the workload = its process group */
	int ctl_fd;                     /* control socket to the reaper */
	int listen_fds[CT_MAX_LISTEN];  /* in the order of listen_ports */
	size_t n_listen;
	int notify_fd;                  /* -1 without notify_prog */
	int view_fd;                    /* spec.mediated: O_PATH of the view's root, as the
	                                   workload sees it (the mediator resolves there);
	                                   else -1 */
	int refusals_fd;                /* observe_refusals: the listener, or -1 ... */
	int refusals_errno;             /* ... and why it could not be installed */
	int cgroup_fd;                  /* the run's cgroup directory, -1 for rlimits */
	char cgroup_path[600];
	int landlock_abi;
	/* what the sandbox said before the reaper ended (ct_event, ct_wait) */
	bool ended, failed;
	int end_status;
	char fail_msg[480];
	/* CT_LIMITS_CGROUP1: the run's cgroup name and host, for ct_release */
	char v1_name[128];
	const struct ct_host *v1_host;
};

struct ct_error {
	char msg[768];                  /* "containment setup failed during <stage>: <cause>" */
};

/* What this host offers.  ct_preflight fills it and returns -1 with a
 * message that names the fix when a mechanism the sandbox needs is missing
 * (never a degraded run). */
struct ct_host {
	int landlock_abi;
	bool userns;
	enum ct_limits_mode limits_mode;
	char cgroup_dir[256];           /* cgroup modes: where run cgroups are made */
	char limits_text[256];          /* "cgroup v2 under /sys/fs/cgroup/…" */
};

int ct_preflight(struct ct_host *host, const struct ct_limits *want, struct ct_error *err);

/* Start spec's program.  0: *out filled (the workload may still fail to
 * exec: ct_wait reports it); -1: *err says why and nothing is left running. */
int ct_launch(const struct ct_spec *spec, const struct ct_host *host, struct ct_proc *out,
	      struct ct_error *err);

/* Hand the terminal to the workload (when tty_fd) and let it exec: until
 * then it waits, set up, before execve, with or without a terminal.  Split
 * from ct_launch so the supervisor can take the listeners and the notify
 * listener, and finish the files the view binds, first. */
int ct_start(const struct ct_spec *spec, struct ct_proc *p, struct ct_error *err);

/* Wait for the run to end.  *status: the workload's wait status (as
 * waitpid's).  Returns 0, or -1 when setup or exec failed (*err says why).
 * Returns 1 (nothing waited) when timeout_ms elapsed; -1 blocks. */
int ct_wait(struct ct_proc *p, int timeout_ms, int *status, struct ct_error *err);

/* Read what the sandbox says while it runs (p->ctl_fd polled readable).
 * Returns the signal that stopped the workload (SIGTSTP, SIGTTIN, ... - job
 * control: the caller takes the terminal back, stops itself, and on its
 * own continuation calls ct_continue), 0, or -1 once the reaper has hung up
 * (stop polling ctl_fd; the pidfd tells the end).  The end of the run
 * (status or failure) is kept for ct_wait. */
int ct_event(struct ct_proc *p);

/* Give the terminal back to the workload (when tty_fd is ours to give) and
 * continue its process group. */
int ct_continue(const struct ct_spec *spec, struct ct_proc *p);

/* Forward sig to the workload's process group (through the reaper). */
int ct_signal(struct ct_proc *p, int sig);

/* Kill everything in the sandbox now. */
void ct_kill(struct ct_proc *p);

/* Close every descriptor, give the terminal back, remove the cgroup. */
void ct_release(struct ct_proc *p);

/* strerrordesc_np: the untranslated text, with no locale lookup (and so no
 * lock) - safe in the sandbox's processes after clone3. */
#include <string.h>
static inline const char *ct_strerror(int e)
{
	const char *d = strerrordesc_np(e);
	return d ? d : "Unknown error";
}

/* Exit status of `cairn run` for a workload wait status: the code, or
 * 128 + signal (255 when that overflows). */
int ct_exit_code(int status);

#endif
