/* med_fs.c - file calls (docs/mediator.md "What each call gets").
 *
 * Every call here names a path (or a descriptor the process holds).  It is
 * read once from the process's memory, resolved (med_path.h), classed by
 * the tree that holds what it names, and then let through, performed here,
 * or refused.
 *
 * The decided trees are in the view with no Landlock right: the kernel
 * refuses every open, exec and change of the namespace there by itself.
 * So a call the kernel performs (let through) cannot be steered into them
 * by a thread rewriting its path meanwhile; what Landlock does not cover,
 * the mediator never lets through, whatever tree the path names:
 *
 *   let through   content opens and namespace changes outside decided
 *                 trees (Landlock judges whatever path the kernel then
 *                 reads); reads under a grant; chdir
 *   performed     metadata reads (stat, access, readlink, statfs, xattrs),
 *                 O_PATH opens, attribute changes (mode, owner, times,
 *                 xattrs), connect and inotify watches: everywhere, on the
 *                 bytes the mediator read; mutations under a write grant
 *                 (observed); what the policy permits in a decided tree
 *   refused       floors, and what the policy denies: EACCES
 *
 * Box's operations and the action each raises: docs/mediator.md, "What
 * each call gets". */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stddef.h>
#include <unistd.h>

#include "contain.h"
#include "med_calls.h"
#include "med_int.h"
#include "med_mem.h"

#define XATTR_VALUE_MAX 65536

static const char AUTHORITY[] =
	"resolves to an authority source that this run loaded, which no policy may open or change";

/* ---- reading the call ----------------------------------------------------------- */

static uint64_t arg(const struct med_call *c, int i)
{
	return c->n->data.args[i];
}

static int iarg(const struct med_call *c, int i)
{
	return (int)(int32_t)c->n->data.args[i];
}

/* The path at addr: 0, or -errno to answer. */
static int read_path(struct med_call *c, uint64_t addr, char buf[PATH_MAX])
{
	ssize_t n = med_read_str(c->pid, addr, buf, PATH_MAX);
	if (n == -ENAMETOOLONG)
		return -ENAMETOOLONG;
	return n < 0 ? -EFAULT : 0;
}

/* Read the path at addr (relative to dirfd) and resolve it.  *empty: the
 * path was "" (the caller decides what AT_EMPTY_PATH makes of it; *r is
 * then untouched).  0, or -errno to answer. */
static int resolve_at(struct med_call *c, int dirfd, uint64_t addr, unsigned flags,
		      struct med_res *r, bool *empty)
{
	char path[PATH_MAX], base[PATH_MAX];
	int rc = read_path(c, addr, path);
	if (rc < 0)
		return rc;
	if (empty != NULL)
		*empty = path[0] == '\0';
	if (path[0] == '\0')
		return empty != NULL ? 0 : -ENOENT;
	if (path[0] != '/' && (rc = med_base(c, dirfd, base)) < 0)
		return rc;
	/* what was read is the call's own only while the call still waits: checked
	 * before anything is decided or performed on it (act_for, obtain); a call
	 * let through needs no check, the kernel rereads it anyway */
	return med_resolve(&c->m->view, path[0] == '/' ? NULL : base, path, flags, r);
}

/* The process's umask (for the creates performed here). */
static mode_t umask_of(struct med_call *c)
{
	char p[64], buf[2048];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)c->pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 022;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 022;
	buf[n] = '\0';
	char *u = strstr(buf, "\nUmask:");
	return u ? (mode_t)strtoul(u + 7, NULL, 8) & 0777 : 022;
}

/* ---- what a path gets ------------------------------------------------------------- */

enum act { LET, GRANT, DECIDE, FLOOR };

static enum act classify(struct med_call *c, const struct med_res *r, bool mutation,
			 const char **why);

static enum act act_for(struct med_call *c, const struct med_res *r, bool mutation,
			const char **why)
{
	enum act a = classify(c, r, mutation, why);
	/* gone, or its pid reused: let through, which the kernel refuses (the
	 * call no longer waits), so nothing is decided on another's bytes */
	if (a != LET && !med_valid(c))
		return LET;
	return a;
}

static enum act classify(struct med_call *c, const struct med_res *r, bool mutation,
			 const char **why)
{
	const struct med_view *vw = &c->m->view;
	*why = NULL;
	if (r->area->cls == MED_FLOOR) {
		*why = r->area->why ? r->area->why : "it lies in a tree no policy may reach";
		return FLOOR;
	}
	if (r->exists && med_view_authority(vw, &r->st) != NULL) {
		*why = AUTHORITY;
		return FLOOR;
	}
	if (mutation && !r->stopped && med_view_holds_authority(vw, r->path, r->len)) {
		*why = AUTHORITY;
		return FLOOR;
	}
	if (r->stopped)
		return LET;
	switch (r->area->cls) {
	case MED_DECIDED:
		return DECIDE;
	case MED_GRANT:
		if (!mutation)
			return c->m->observe_grant_reads ? GRANT : LET;
		/* the kernel's answer for a read-only grant (EROFS) is cairn's */
		return (r->area->access & CT_WRITE) ? GRANT : LET;
	default:
		return LET;
	}
}

/* /proc/self and its spellings name the caller only in the caller's pid
 * namespace: rewritten to its number there, for a walk of the view's
 * /proc by the supervisor. */
/* The caller's thread group and thread ids in its own pid namespace (the
 * last numbers of NStgid and NSpid in /proc/<tid>/status), read once per
 * call. */
static void ns_ids(struct med_call *c)
{
	if (c->have_ns)
		return;
	c->have_ns = true;
	c->ns_tgid = c->ns_tid = -1;
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)c->pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (int k = 0; k < 2; k++) {
		char *l = strstr(buf, k ? "\nNSpid:" : "\nNStgid:");
		char *e = l ? strchr(l + 1, '\n') : NULL;
		if (e == NULL)
			continue;
		while (e > l && (e[-1] < '0' || e[-1] > '9'))
			e--;
		char *b = e;
		while (b > l && b[-1] >= '0' && b[-1] <= '9')
			b--;
		*(k ? &c->ns_tid : &c->ns_tgid) = (int)strtol(b, NULL, 10);
	}
}

/* /proc/self and its spellings name the caller only in the caller's pid
 * namespace: rewritten to its number there, for a walk of the view's
 * /proc by the supervisor. */
static void proc_self(struct med_call *c, const char *in, char *out, size_t len)
{
	static const struct { const char *prefix, *fmt; } map[] = {
		{ "/proc/self", "/proc/%d%s" }, { "/proc/thread-self", "/proc/%d/task/%d%s" },
		{ "/dev/fd", "/proc/%d/fd%s" }, { "/dev/stdin", "/proc/%d/fd/0%s" },
		{ "/dev/stdout", "/proc/%d/fd/1%s" }, { "/dev/stderr", "/proc/%d/fd/2%s" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t pl = strlen(map[i].prefix);
		if (strncmp(in, map[i].prefix, pl) != 0 || (in[pl] != '\0' && in[pl] != '/'))
			continue;
		ns_ids(c);
		if (i == 1)
			snprintf(out, len, map[i].fmt, c->ns_tgid, c->ns_tid, in + pl);
		else
			snprintf(out, len, map[i].fmt, c->ns_tgid, in + pl);
		return;
	}
	snprintf(out, len, "%s", in);
}

/* /proc/<n>/<entry> (or .../task/<t>/<entry>) that the kernel shows only
 * to a caller allowed to trace n.  The supervisor reads /proc with its own
 * rights, so for any process but the caller's own thread group these are
 * refused here, as the kernel refuses them the reaper (pid 1). */
static long proc_guarded_pid(const char *p);

static bool proc_guarded(struct med_call *c, const char *p)
{
	long n = proc_guarded_pid(p);
	if (n < 0)
		return false;
	ns_ids(c);              /* only for a guarded entry: a read of the status */
	return n != c->ns_tgid;
}

/* The pid of a guarded /proc/<n>/<entry>, or -1. */
static long proc_guarded_pid(const char *p)
{
	static const char *const guarded[] = {
		"fd", "fdinfo", "exe", "cwd", "root", "environ", "mem", "maps", "smaps",
		"smaps_rollup", "pagemap", "stack", "syscall", "auxv", "personality", "ns",
		"map_files", "io", "timers", "timerslack_ns",
	};
	char *end;
	if (strncmp(p, "/proc/", 6) != 0)
		return -1;
	long n = strtol(p + 6, &end, 10);
	if (end == p + 6 || (*end != '/' && *end != '\0'))
		return -1;
	const char *e = *end ? end + 1 : end;
	if (strncmp(e, "task/", 5) == 0) {
		e = strchr(e + 5, '/');
		if (e == NULL)
			return -1;
		e++;
	}
	size_t el = strcspn(e, "/");
	for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++)
		if (strlen(guarded[i]) == el && strncmp(e, guarded[i], el) == 0)
			return n;
	return -1;
}

/* The object a walk that stopped in a runtime or kernel tree names, opened
 * (O_PATH) as the kernel would resolve it in the view: r->fd, r->st.  0,
 * or -errno (ENOENT: nothing there). */
static int obtain(struct med_call *c, struct med_res *r, bool follow)
{
	if (!med_valid(c))
		return -ENOENT;         /* gone: nothing is performed for it */
	if (!r->stopped)
		return r->exists ? 0 : -ENOENT;
	char p[PATH_MAX + 64];
	proc_self(c, r->path, p, sizeof(p));
	if (r->area->cls == MED_KERNEL && proc_guarded(c, p))
		return -EACCES;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
		/* /proc's magic links (fd/N, exe, cwd) name what the caller holds
		 * or is: followed there (a scoped walk would refuse the jump), and
		 * nowhere else */
		.resolve = r->area->cls == MED_KERNEL ? 0 : RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int root = c->m->view.v[c->m->view.root].fd;
	int fd = (int)syscall(SYS_openat2, root, p[0] == '/' ? p + 1 : p, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &r->st) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	r->fd = fd;
	r->exists = true;
	return 0;
}

/* A performed call's object in a tree the kernel answers for (a stopped
 * walk): opened here (a missing one is the call's ENOENT).  false: the call
 * is answered (an error). */
static bool obtain_for(struct med_call *c, struct med_res *r, enum act a, bool follow)
{
	int rc;
	if (a != LET || (rc = obtain(c, r, follow)) >= 0 || rc == -ENOENT)
		return true;
	med_fail(c, rc);
	med_res_close(r);
	return false;
}

/* Decide (DECIDE) or note (GRANT) one request; FLOOR refuses.  1: go on
 * (*ticket set for a decision), 0: answered (refused). */
static int ask(struct med_call *c, enum act act, const char *why, const char *action,
	       const char *op, const char *path, bool quiet, uint64_t *ticket)
{
	struct med_fs_ask a = { action, op, path, quiet };
	*ticket = 0;
	if (act == FLOOR) {
		med_fs_floor(c, &a, why);
		med_fail(c, EACCES);
		return 0;
	}
	if (act != DECIDE)
		return 1;
	if (med_fs_decide(c, &a, ticket) != 1) {
		(void)med_sync(c);
		med_fail(c, EACCES);
		return 0;
	}
	return 1;
}

/* After the effect: the outcome recorded (a decision's, or an observed
 * mutation's), durable, then the answer may go. */
static void outcome(struct med_call *c, enum act act, uint64_t ticket, const char *action,
		    const char *op, const char *path, bool mutation, int rc, const char *result)
{
	if (act == DECIDE) {
		med_fs_done(c, ticket, rc < 0 ? NULL : result);
	} else if (act == GRANT && (mutation || c->m->observe_grant_reads)) {
		/* a mutation under a write grant, or a read under any grant
		 * while a history rule watches fs:read (run_cmd.c) */
		struct med_fs_ask a = { action, op, path, true };
		med_fs_observe(c, &a, rc < 0 ? NULL : result);
	} else {
		return;
	}
	(void)med_sync(c);
}

/* A performed read's end: a decision's outcome recorded before the answer,
 * then the answer (rc < 0: the error; else val). */
static void read_done(struct med_call *c, enum act a, uint64_t t, struct med_res *r, int rc,
		      int64_t val)
{
	if (a == DECIDE) {
		med_fs_done(c, t, rc < 0 ? NULL : "completed");
		(void)med_sync(c);
	}
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, val);
	med_res_close(r);
}

/* ---- opens ------------------------------------------------------------------------ */

/* The object itself, reopened with flags (our own magic link: the
 * resolver's O_PATH descriptor, never the process's). */
static int reopen(int fd, int flags, mode_t mode)
{
	char p[40];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int r = open(p, flags | O_CLOEXEC, mode);
	return r < 0 ? -errno : r;
}

static void do_open(struct med_call *c, int dirfd, uint64_t addr, int flags, mode_t mode)
{
	struct med_res r;
	const char *why;
	uint64_t t1 = 0, t2 = 0;
	bool tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
	bool opath = flags & O_PATH;
	int acc = flags & O_ACCMODE;
	bool writes = !opath && (acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) || tmpfile);
	int rc = resolve_at(c, dirfd, addr,
			    ((flags & O_NOFOLLOW) ? 0 : MED_FOLLOW) | MED_PARENT, &r, NULL);
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	enum act a = act_for(c, &r, writes, &why);
	if (opath) {
		/* O_PATH: SECCOMP_IOCTL_NOTIF_ADDFD cannot hand over an O_PATH
		 * descriptor (the kernel's fget refuses one), so it is decided as
		 * a metadata read and then the kernel's: a thread that rewrites
		 * the path meanwhile gets an O_PATH handle of another file in the
		 * view, its metadata and nothing more (docs/mediator.md "Edges") */
		if (a == LET || a == GRANT ||
		    ask(c, a, why, "fs:read", "read_metadata", r.path, true, &t1)) {
			if (t1 != 0) {
				med_fs_done(c, t1, r.exists ? "completed" : NULL);
				(void)med_sync(c);
			}
			med_continue(c);
		}
		med_res_close(&r);
		return;
	}
	if (!r.exists && !(flags & O_CREAT) && !tmpfile) {
		/* nothing to open: the kernel's ENOENT where it can say it; in a
		 * decided tree the policy is asked first, as Box's shell asks
		 * before it looks, so a denied path says nothing of whether it
		 * exists (quietly: no line for a file that is not there) */
		if (a == LET) {
			med_continue(c);
		} else if (ask(c, a, why, writes ? "fs:write" : "fs:read",
			       writes ? "write_content" : "read_content", r.path, true, &t1)) {
			med_fs_done(c, t1, NULL);
			med_fail(c, ENOENT);
		}
		med_res_close(&r);
		return;
	}
	bool dir = r.exists && S_ISDIR(r.st.st_mode);
	/* the view's skeleton ("/", the directories above the trees) is not
	 * the kernel's to list: opened here */
	bool skeleton = a == LET && !r.stopped && r.area->cls == MED_ROOT && dir && !writes;
	if (a == LET && !skeleton) {
		med_continue(c);
		med_res_close(&r);
		return;
	}
	const char *act1 = "fs:read", *op1 = "read_content", *act2 = NULL, *op2 = NULL;
	bool quiet = false;
	if (writes) {
		act1 = "fs:write", op1 = "write_content";
		if (acc == O_RDWR && !tmpfile)
			act2 = "fs:read", op2 = "read_content";      /* it reads too */
	} else if (dir || (flags & O_DIRECTORY)) {
		op1 = "enumerate";
	}
	if (!ask(c, a, why, act1, op1, r.path, quiet, &t1) ||
	    (act2 != NULL && !ask(c, a, why, act2, op2, r.path, quiet, &t2))) {
		if (t1 != 0)
			med_fs_done(c, t1, NULL);
		med_res_close(&r);
		return;
	}
	int fd;
	{
		mode_t um = (flags & O_CREAT) || tmpfile ? umask_of(c) : 0;
		int oflags = (flags & ~O_CLOEXEC) | O_CLOEXEC | O_NOFOLLOW;
		if (tmpfile)
			oflags &= ~O_NOFOLLOW;
		if (r.name[0] == '\0') {
			fd = reopen(r.fd, oflags & ~(O_CREAT | O_EXCL | O_NOFOLLOW), mode & ~um);
		} else {
			fd = openat(r.dirfd, r.name, oflags, mode & ~um);
			if (fd < 0)
				fd = -errno;
		}
	}
	/* the outcome is in the history before the process has its result:
	 * the descriptor is open, so it is issued (an ADDFD the kernel then
	 * refuses, the process's table full, leaves it so: docs/mediator.md
	 * "Edges") */
	const char *result = "descriptor_issued";
	rc = fd < 0 ? fd : 0;
	outcome(c, a, t1, act1, op1, r.path, writes, rc, result);
	if (t2 != 0)
		med_fs_done(c, t2, rc < 0 ? NULL : result);
	if (fd >= 0) {
		rc = med_send_fd(c, fd, flags & O_CLOEXEC);
		close(fd);
	}
	if (!c->answered)
		med_fail(c, rc);
	med_res_close(&r);
}

/* ---- metadata --------------------------------------------------------------------- */

/* stat, statx, faccessat2 with AT_EMPTY_PATH and "": the descriptor
 * itself (glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH)).  Performed
 * through /proc/<pid>/fd/<fd>: the kernel would read the path again. */
static void meta_of_fd(struct med_call *c, int fd, int kind, uint64_t buf, uint64_t extra,
		       int flags)
{
	char p[64];
	if (fd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)c->pid);
	else if (fd < 0) {
		med_fail(c, EBADF);
		return;
	} else
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)c->pid, fd);
	int rc = 0;
	if (kind == SYS_statx) {
		struct statx sx;
		if (statx(AT_FDCWD, p, flags & AT_STATX_SYNC_TYPE, (unsigned)extra, &sx) != 0)
			rc = errno == ENOENT ? -EBADF : -errno;
		else if (!med_valid(c))
			rc = -ENOENT;
		else if (med_write(c->pid, buf, &sx, sizeof(sx)) != 0)
			rc = -EFAULT;
	} else if (kind == SYS_newfstatat) {
		struct stat st;
		if (stat(p, &st) != 0)
			rc = errno == ENOENT ? -EBADF : -errno;
		else if (!med_valid(c))
			rc = -ENOENT;
		else if (med_write(c->pid, buf, &st, sizeof(st)) != 0)
			rc = -EFAULT;
	} else {
		if (faccessat(AT_FDCWD, p, (int)buf, flags & AT_EACCESS) != 0)
			rc = -errno;
	}
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
}

/* A metadata read of the object (the resolver's descriptor) into the
 * process's buffer. */
static void do_meta(struct med_call *c, int dirfd, uint64_t addr, bool follow, int kind,
		    uint64_t buf, uint64_t extra, int flags)
{
	struct med_res r;
	const char *why;
	uint64_t t;
	bool empty;
	/* what needs only the object's stat (or, for a link, its name) */
	bool st_only = kind == SYS_stat || kind == SYS_lstat || kind == SYS_newfstatat ||
		       kind == SYS_readlink || kind == SYS_readlinkat || kind == SYS_chdir;
	int rc = resolve_at(c, dirfd, addr, (follow ? MED_FOLLOW : 0) | (st_only ? MED_META : 0),
			    &r, &empty);
	if (rc == 0 && empty) {
		if (flags & AT_EMPTY_PATH)
			meta_of_fd(c, dirfd, kind, buf, extra, flags);
		else
			med_fail(c, ENOENT);
		return;
	}
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	enum act a = act_for(c, &r, false, &why);
	if (kind == SYS_chdir && a == LET) {
		/* the cwd moves in the kernel's view, nothing read */
		med_continue(c);
		med_res_close(&r);
		return;
	}
	if (!obtain_for(c, &r, a, follow))
		return;
	const char *op = kind == SYS_readlink || kind == SYS_readlinkat ? "read_link"
		       : kind == SYS_chdir ? "change_dir" : "read_metadata";
	if (!ask(c, a, why, "fs:read", op, r.path, kind != SYS_chdir, &t)) {
		med_res_close(&r);
		return;
	}
	int64_t val = 0;
	rc = 0;
	if (!r.exists) {
		rc = -ENOENT;
	} else if (kind == SYS_chdir) {
		/* decided, and the kernel moves the cwd */
		if (!S_ISDIR(r.st.st_mode)) {
			rc = -ENOTDIR;
		} else {
			med_fs_done(c, t, "completed");
			(void)med_sync(c);
			med_continue(c);
			med_res_close(&r);
			return;
		}
	} else if (kind == SYS_statx) {
		struct statx sx;
		unsigned mask = (unsigned)extra;
		if (statx(r.fd, "", AT_EMPTY_PATH | (flags & AT_STATX_SYNC_TYPE), mask, &sx) != 0)
			rc = -errno;
		else if (med_write(c->pid, buf, &sx, sizeof(sx)) != 0)
			rc = -EFAULT;
	} else if (kind == SYS_statfs) {
		struct statfs sf;
		if (fstatfs(r.fd, &sf) != 0)
			rc = -errno;
		else if (med_write(c->pid, buf, &sf, sizeof(sf)) != 0)
			rc = -EFAULT;
	} else if (kind == SYS_readlink || kind == SYS_readlinkat) {
		char tgt[PATH_MAX];
		size_t want = (size_t)extra;
		ssize_t n = -1;
		if ((int64_t)extra <= 0 || !S_ISLNK(r.st.st_mode))
			rc = -EINVAL;   /* most are: a realpath asks of every component */
		else if ((n = r.fd >= 0 ? readlinkat(r.fd, "", tgt, sizeof(tgt))
					: readlinkat(r.dirfd, r.name, tgt, sizeof(tgt))) < 0)
			rc = -errno;
		else if ((size_t)n > want)
			n = (ssize_t)want;
		if (rc == 0 && n >= 0 && med_write(c->pid, buf, tgt, (size_t)n) != 0)
			rc = -EFAULT;
		val = n;
	} else if (kind == SYS_access || kind == SYS_faccessat || kind == SYS_faccessat2) {
		int mode = (int)buf;
		if (faccessat(r.fd, "", mode, AT_EMPTY_PATH | (flags & AT_EACCESS)) != 0)
			rc = -errno;
	} else if (med_write(c->pid, buf, &r.st, sizeof(r.st)) != 0) {
		/* r.st: the resolver's (or obtain's) fstat of the object */
		rc = -EFAULT;
	}
	read_done(c, a, t, &r, rc, val);
}

/* xattr reads: the kernel's where it can answer; a decided object is read
 * here as a metadata read. */
static void do_xattr_get(struct med_call *c, int dirfd, uint64_t addr, bool follow, bool list,
			 uint64_t name_addr, uint64_t val_addr, uint64_t size)
{
	struct med_res r;
	const char *why;
	uint64_t t;
	int rc = resolve_at(c, dirfd, addr, follow ? MED_FOLLOW : 0, &r, NULL);
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	enum act a = act_for(c, &r, false, &why);
	if (!obtain_for(c, &r, a, follow))
		return;
	if (!ask(c, a, why, "fs:read", "read_metadata", r.path, true, &t)) {
		med_res_close(&r);
		return;
	}
	char name[256], p[40];
	ssize_t n = -1;
	char *v = NULL;
	size_t want = size > XATTR_VALUE_MAX ? XATTR_VALUE_MAX : (size_t)size;
	rc = 0;
	if (!r.exists)
		rc = -ENOENT;
	else if (!list && med_read_str(c->pid, name_addr, name, sizeof(name)) < 0)
		rc = -ERANGE;
	else if (want > 0 && (v = malloc(want)) == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", r.fd);
		n = list ? listxattr(p, v, want) : getxattr(p, name, v, want);
		if (n < 0)
			rc = -errno;
		else if (want > 0 && med_write(c->pid, val_addr, v, (size_t)n) != 0)
			rc = -EFAULT;
	}
	free(v);
	read_done(c, a, t, &r, rc, n);
}

/* ---- the namespace ------------------------------------------------------------------ */

/* r's object is a mount point of the view (a mask, a pin, a tree's root).
 * The kernel refuses to remove or rename one (EBUSY), but it asks the
 * caller's mount namespace, and the supervisor's holds none of the view's:
 * so it is asked here, by comparing the mounts of the object and of its
 * directory. */
static bool mount_point(const struct med_res *r)
{
	struct statx a, b;
	if (r->fd < 0 || r->dirfd < 0)
		return r->fd >= 0;      /* an anchor: a tree's own root */
	if (statx(r->fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &a) != 0 ||
	    statx(r->dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &b) != 0)
		return true;            /* unknown: refused as one */
	return a.stx_mnt_id != b.stx_mnt_id;
}


/* Resolve a namespace call's path and class it: false when the call is
 * answered already (an error, or let through: namespace changes are
 * Landlock's outside decided trees); true with *r open and *a, *why set. */
static bool begin_name(struct med_call *c, int dirfd, uint64_t addr, struct med_res *r,
		       enum act *a, const char **why)
{
	int rc = resolve_at(c, dirfd, addr, MED_PARENT, r, NULL);
	if (rc < 0) {
		med_fail(c, rc);
		return false;
	}
	*a = act_for(c, r, true, why);
	if (*a == LET) {
		med_continue(c);
		med_res_close(r);
		return false;
	}
	return true;
}

static void do_mkdir(struct med_call *c, int dirfd, uint64_t addr, mode_t mode, bool node,
		     dev_t dev)
{
	struct med_res r;
	const char *why;
	uint64_t t;
	enum act a;
	int rc;
	if (!begin_name(c, dirfd, addr, &r, &a, &why))
		return;
	const char *action = "fs:write", *op = node ? "write_content" : "create_dir";
	if (node && !S_ISREG(mode) && !S_ISFIFO(mode) && (mode & S_IFMT) != 0)
		action = "fs:other", op = "other";      /* devices, sockets: no rule reaches */
	if (!ask(c, a, why, action, op, r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	if (r.exists || r.name[0] == '\0') {
		rc = -EEXIST;
	} else {
		mode_t um = umask_of(c);
		rc = node ? mknodat(r.dirfd, r.name, mode & ~um, dev)
			  : mkdirat(r.dirfd, r.name, mode & ~um);
		rc = rc < 0 ? -errno : 0;
	}
	outcome(c, a, t, action, op, r.path, true, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

static void do_unlink(struct med_call *c, int dirfd, uint64_t addr, int flags)
{
	struct med_res r;
	const char *why;
	uint64_t t;
	enum act a;
	int rc;
	if (!begin_name(c, dirfd, addr, &r, &a, &why))
		return;
	bool rmdir_ = flags & AT_REMOVEDIR;
	const char *op = rmdir_ ? "remove_dir" : "remove_file";
	if (!r.exists && a != FLOOR) {
		med_fail(c, ENOENT);    /* nothing to delete, nothing decided */
		med_res_close(&r);
		return;
	}
	if (!ask(c, a, why, "fs:delete", op, r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	if (r.name[0] == '\0' || mount_point(&r))
		rc = -EBUSY;
	else
		rc = unlinkat(r.dirfd, r.name, flags & AT_REMOVEDIR) < 0 ? -errno : 0;
	outcome(c, a, t, "fs:delete", op, r.path, true, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

/* rename and link: two names, each judged where it lies. */
static void do_two(struct med_call *c, bool link_, int od, uint64_t oaddr, int nd,
		   uint64_t naddr, unsigned flags)
{
	struct med_res s, d;
	const char *why_s, *why_d;
	uint64_t ts[3] = { 0 }, td[2] = { 0 };
	bool follow = link_ && (flags & AT_SYMLINK_FOLLOW);
	int rc = resolve_at(c, od, oaddr, follow ? MED_FOLLOW : 0, &s, NULL);
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	rc = resolve_at(c, nd, naddr, MED_PARENT, &d, NULL);
	if (rc < 0) {
		med_res_close(&s);
		med_fail(c, rc);
		return;
	}
	enum act as = act_for(c, &s, !link_, &why_s);
	enum act ad = act_for(c, &d, true, &why_d);
	/* a hard link to the loaded config or policy reaches it too */
	if (link_ && s.exists && med_view_authority(&c->m->view, &s.st) != NULL)
		as = FLOOR, why_s = AUTHORITY;
	if (as == LET && ad == LET) {
		med_continue(c);
		goto out;
	}
	if (!s.exists && as != FLOOR) {
		med_fail(c, ENOENT);
		goto out;
	}
	bool exchange = flags & RENAME_EXCHANGE;
	int ok = 1;
	if (link_) {
		/* decided on the source's read rules too (docs/mediator.md) */
		ok = ask(c, as, why_s, "fs:read", "read_content", s.path, false, &ts[0]) &&
		     ask(c, ad, why_d, "fs:write", "write_content", d.path, false, &td[0]);
	} else {
		ok = ask(c, as, why_s, "fs:move", "rename", s.path, false, &ts[0]) &&
		     ask(c, ad, why_d, "fs:move", "rename", d.path, false, &td[0]) &&
		     ask(c, as, why_s, "fs:read", "read_content", s.path, false, &ts[1]);
		if (ok && d.exists && !exchange)
			ok = ask(c, ad, why_d, "fs:delete",
				 S_ISDIR(d.st.st_mode) ? "remove_dir" : "remove_file", d.path, false,
				 &td[1]);
		if (ok && exchange)
			ok = ask(c, ad, why_d, "fs:read", "read_content", d.path, false, &ts[2]);
	}
	if (!ok) {
		for (int i = 0; i < 3; i++)
			med_fs_done(c, ts[i], NULL);
		for (int i = 0; i < 2; i++)
			med_fs_done(c, td[i], NULL);
		goto out;
	}
	if (s.name[0] == '\0' || d.name[0] == '\0' ||
	    (!link_ && (mount_point(&s) || (d.exists && mount_point(&d))))) {
		rc = -EBUSY;
	} else if (link_) {
		rc = linkat(s.dirfd, s.name, d.dirfd, d.name, 0) < 0 ? -errno : 0;
	} else {
		rc = (int)syscall(SYS_renameat2, s.dirfd, s.name, d.dirfd, d.name, flags);
		rc = rc < 0 ? -errno : 0;
	}
	const char *res = rc < 0 ? NULL : "completed";
	if (link_) {
		if (as == DECIDE)
			med_fs_done(c, ts[0], res);
		outcome(c, ad, td[0], "fs:write", "write_content", d.path, true, rc, "completed");
	} else {
		for (int i = 0; i < 3; i++)
			med_fs_done(c, ts[i], res);
		for (int i = 0; i < 2; i++)
			med_fs_done(c, td[i], res);
		if (as == GRANT)
			outcome(c, as, 0, "fs:move", "rename", s.path, true, rc, "completed");
		if (ad == GRANT)
			outcome(c, ad, 0, "fs:move", "rename", d.path, true, rc, "completed");
		(void)med_sync(c);
	}
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
out:
	med_res_close(&s);
	med_res_close(&d);
}

static void do_symlink(struct med_call *c, uint64_t taddr, int nd, uint64_t naddr)
{
	char target[PATH_MAX];
	struct med_res r;
	const char *why;
	uint64_t t;
	enum act a;
	int rc = read_path(c, taddr, target);
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	if (!begin_name(c, nd, naddr, &r, &a, &why))
		return;
	if (!ask(c, a, why, "fs:write", "symlink", r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	if (target[0] == '\0')
		rc = -ENOENT;
	else if (r.exists || r.name[0] == '\0')
		rc = -EEXIST;
	else
		rc = symlinkat(target, r.dirfd, r.name) < 0 ? -errno : 0;
	outcome(c, a, t, "fs:write", "symlink", r.path, true, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

/* ---- contents and attributes by path ------------------------------------------------ */

enum attr_kind { A_TRUNCATE, A_CHMOD, A_CHOWN, A_TIMES, A_XATTR };

static int perform_attr(struct med_call *c, int fd, enum attr_kind k, uint64_t a1, uint64_t a2,
			uint64_t a3, uint64_t a4, int sysno)
{
	char p[40];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	switch (k) {
	case A_TRUNCATE:
		/* truncate(2) itself, for the kernel's order of refusals (EROFS
		 * before ETXTBSY) */
		return truncate(p, (off_t)a1) < 0 ? -errno : 0;
	case A_CHMOD:
		return chmod(p, (mode_t)a1 & 07777) < 0 ? -errno : 0;
	case A_CHOWN:
		return fchownat(fd, "", (uid_t)a1, (gid_t)a2, AT_EMPTY_PATH) < 0 ? -errno : 0;
	case A_TIMES: {
		struct timespec ts[2];
		const struct timespec *tp = NULL;
		if (a1 != 0) {
			if (sysno == SYS_utimensat) {
				if (med_read(c->pid, a1, ts, sizeof(ts)) != 0)
					return -EFAULT;
			} else if (sysno == SYS_utime) {
				long u[2];
				if (med_read(c->pid, a1, u, sizeof(u)) != 0)
					return -EFAULT;
				ts[0] = (struct timespec){ u[0], 0 };
				ts[1] = (struct timespec){ u[1], 0 };
			} else {
				struct timeval tv[2];
				if (med_read(c->pid, a1, tv, sizeof(tv)) != 0)
					return -EFAULT;
				ts[0] = (struct timespec){ tv[0].tv_sec, tv[0].tv_usec * 1000 };
				ts[1] = (struct timespec){ tv[1].tv_sec, tv[1].tv_usec * 1000 };
			}
			tp = ts;
		}
		return utimensat(AT_FDCWD, p, tp, 0) < 0 ? -errno : 0;
	}
	case A_XATTR: {
		char name[256];
		if (med_read_str(c->pid, a1, name, sizeof(name)) < 0)
			return -ERANGE;
		if (a2 == 0 && a3 == 0 && a4 == (uint64_t)-1)
			return removexattr(p, name) < 0 ? -errno : 0;
		size_t size = (size_t)a3;
		if (size > XATTR_VALUE_MAX)
			return -E2BIG;
		char *v = malloc(size ? size : 1);
		if (v == NULL)
			return -ENOMEM;
		int rc = size && med_read(c->pid, a2, v, size) != 0 ? -EFAULT : 0;
		if (rc == 0 && setxattr(p, name, v, size, (int)a4) < 0)
			rc = -errno;
		free(v);
		return rc;
	}
	}
	return -EINVAL;
}

/* k's action and operation.  An owner change to the owner the process
 * already is (its uid, its group, or -1: what sed -i and cp -p do to their
 * own files) is a permission change; any other owner, and xattrs, are
 * fs:other, which no rule reaches by default.  a1, a2: chown's uid, gid. */
static const char *attr_op(struct med_call *c, enum attr_kind k, const char **action,
			   uint64_t a1, uint64_t a2)
{
	char name[256];
	switch (k) {
	case A_XATTR:
		/* an ACL is a permission (sed -i and cp -p copy one); a user.*
		 * attribute is data the owner keeps with the file; security.* and
		 * trusted.* are fs:other */
		if (med_read_str(c->pid, a1, name, sizeof(name)) > 0) {
			if (strcmp(name, "system.posix_acl_access") == 0 ||
			    strcmp(name, "system.posix_acl_default") == 0) {
				*action = "fs:write";
				return "set_permissions";
			}
			if (strncmp(name, "user.", 5) == 0) {
				*action = "fs:write";
				return "write_content";
			}
		}
		*action = "fs:other";
		return "other";
	case A_TRUNCATE:
	case A_TIMES:
		*action = "fs:write";
		return "write_content";
	case A_CHMOD:
		*action = "fs:write";
		return "set_permissions";
	case A_CHOWN:
		if (((uint32_t)a1 == (uint32_t)-1 || (uid_t)a1 == getuid()) &&
		    ((uint32_t)a2 == (uint32_t)-1 || (gid_t)a2 == getgid())) {
			*action = "fs:write";
			return "set_permissions";
		}
		__attribute__((fallthrough));
	default:
		*action = "fs:other";
		return "other";
	}
}

static void do_attr(struct med_call *c, int dirfd, uint64_t addr, bool follow, enum attr_kind k,
		    uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct med_res r;
	const char *why, *action;
	uint64_t t;
	bool empty;
	int rc = resolve_at(c, dirfd, addr, follow ? MED_FOLLOW : 0, &r, &empty);
	if (rc == 0 && empty) {
		med_fail(c, ENOENT);
		return;
	}
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	enum act a = act_for(c, &r, true, &why);
	/* mode, owner, times and xattrs are no right of Landlock's: never the
	 * kernel's to perform on a path */
	if (!obtain_for(c, &r, a, follow))
		return;
	const char *op = attr_op(c, k, &action, a1, a2);
	if (!r.exists && a != FLOOR) {
		med_fail(c, ENOENT);
		med_res_close(&r);
		return;
	}
	if (!ask(c, a, why, action, op, r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	rc = perform_attr(c, r.fd, k, a1, a2, a3, a4, (int)c->n->data.nr);
	outcome(c, a, t, action, op, r.path, true, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

/* Attribute changes through a descriptor the process holds: the file it
 * names decides, and a copy of the descriptor is acted on. */
static void do_fd_attr(struct med_call *c, int fd, enum attr_kind k, uint64_t a1, uint64_t a2,
		       uint64_t a3, uint64_t a4)
{
	char p[64], path[PATH_MAX];
	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)c->pid, fd);
	ssize_t n = readlink(p, path, sizeof(path) - 1);
	if (n < 0 || !med_valid(c)) {
		med_fail(c, EBADF);
		return;
	}
	path[n] = '\0';
	if (path[0] != '/') {
		med_continue(c);        /* a pipe, a socket: no tree holds it */
		return;
	}
	struct med_res r;
	const char *why, *action;
	uint64_t t;
	if (med_resolve(&c->m->view, NULL, path, 0, &r) != 0) {
		/* removed, or moved since: judge what the kernel's view holds */
		med_continue(c);
		return;
	}
	enum act a = act_for(c, &r, true, &why);
	if (a == LET) {
		med_continue(c);
		med_res_close(&r);
		return;
	}
	const char *op = attr_op(c, k, &action, a1, a2);
	if (!ask(c, a, why, action, op, r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	int pfd = med_pidfd(c);
	int copy = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	int rc = copy < 0 ? -EBADF : perform_attr(c, copy, k, a1, a2, a3, a4, (int)c->n->data.nr);
	if (copy >= 0)
		close(copy);
	if (pfd >= 0)
		close(pfd);
	outcome(c, a, t, action, op, r.path, true, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

/* ---- sockets and watches -------------------------------------------------------------- */

/* A copy of the process's descriptor fd (the same open file): -errno. */
static int their_fd(struct med_call *c, int fd)
{
	int pfd = med_pidfd(c);
	if (pfd < 0)
		return -ESRCH;
	int copy = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	int e = errno;
	close(pfd);
	return copy < 0 ? (e == EBADF ? -EBADF : -e) : copy;
}

/* connect and bind: the address is read once and the call made here on the
 * process's own socket (a copy of its descriptor is the same socket), so
 * the kernel never reads an address the mediator did not judge.  A
 * pathname unix socket is a file of its tree: connecting to one in a
 * decided tree is fs:other, which no rule reaches by default. */
static void do_sockaddr(struct med_call *c, bool bind_)
{
	int sfd = iarg(c, 0);
	uint64_t addr = arg(c, 1);
	socklen_t len = (socklen_t)arg(c, 2);
	struct sockaddr_storage sa;
	if (len > sizeof(sa) || (len > 0 && addr == 0)) {
		med_fail(c, len > sizeof(sa) ? EINVAL : EFAULT);
		return;
	}
	if (len > 0 && med_read(c->pid, addr, &sa, len) != 0) {
		med_fail(c, EFAULT);
		return;
	}
	struct sockaddr_un *un = (struct sockaddr_un *)&sa;
	bool path = len > offsetof(struct sockaddr_un, sun_path) && sa.ss_family == AF_UNIX &&
		    un->sun_path[0] != '\0';
	if (bind_ && !path) {
		med_continue(c);        /* nothing in any tree: addresses only */
		return;
	}
	struct med_res r;
	const char *why, *action = NULL, *op = NULL;
	uint64_t t = 0;
	enum act a = LET;
	struct sockaddr_un via;
	socklen_t vlen = len;
	memset(&r, 0, sizeof(r));
	r.dirfd = r.fd = -1;
	if (path) {
		char sp[sizeof(un->sun_path) + 1];
		size_t pl = len - offsetof(struct sockaddr_un, sun_path);
		memcpy(sp, un->sun_path, pl);
		sp[pl] = '\0';
		char base[PATH_MAX];
		int rc = sp[0] == '/' ? 0 : med_base(c, AT_FDCWD, base);
		if (rc == 0)
			rc = med_resolve(&c->m->view, sp[0] == '/' ? NULL : base, sp,
					 bind_ ? MED_PARENT : MED_FOLLOW, &r);
		if (rc < 0) {
			med_fail(c, rc);
			return;
		}
		a = act_for(c, &r, bind_, &why);
		if (bind_ && a == LET) {
			/* creating the socket file is Landlock's MAKE_SOCK */
			med_continue(c);
			med_res_close(&r);
			return;
		}
		/* binding makes the socket's file (fs:write, as mknod does);
		 * connecting reaches whoever listens there (fs:other) */
		action = bind_ ? "fs:write" : "fs:other";
		op = bind_ ? "write_content" : "other";
		if (!ask(c, a, why, action, op, r.path, false, &t)) {
			med_res_close(&r);
			return;
		}
		/* the judged file, by the resolver's descriptors (sun_path is short) */
		int parent = r.dirfd;
		if (r.stopped) {
			char p[PATH_MAX + 64];
			proc_self(c, r.path, p, sizeof(p));
			char *slash = strrchr(p, '/');
			*slash = '\0';
			struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
						.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
			int root = c->m->view.v[c->m->view.root].fd;
			parent = (int)syscall(SYS_openat2, root, p[1] ? p + 1 : ".", &how, sizeof(how));
			snprintf(r.name, sizeof(r.name), "%s", slash + 1);
			r.dirfd = parent;
		}
		memset(&via, 0, sizeof(via));
		via.sun_family = AF_UNIX;
		int n = snprintf(via.sun_path, sizeof(via.sun_path), "/proc/self/fd/%d/%s", parent,
				 r.name);
		if (parent < 0 || n < 0 || (size_t)n >= sizeof(via.sun_path)) {
			med_fs_done(c, t, NULL);
			med_fail(c, parent < 0 ? ENOENT : ENAMETOOLONG);
			med_res_close(&r);
			return;
		}
		vlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	}
	int copy = med_valid(c) ? their_fd(c, sfd) : -ENOENT;
	int rc;
	if (copy < 0) {
		rc = copy;
	} else {
		const struct sockaddr *to = path ? (const struct sockaddr *)&via
						 : (const struct sockaddr *)&sa;
		rc = (bind_ ? bind(copy, to, path ? vlen : len)
			    : connect(copy, to, path ? vlen : len)) < 0 ? -errno : 0;
		close(copy);
	}
	if (path)
		outcome(c, a, t, action, op, r.path, bind_, rc, "completed");
	if (rc < 0)
		med_fail(c, rc);
	else
		med_answer(c, 0);
	med_res_close(&r);
}

/* inotify_add_watch: the watch is added here, to the process's own
 * instance, on the object judged (a watch on a decided directory is an
 * enumerate of it). */
static void do_watch(struct med_call *c)
{
	struct med_res r;
	const char *why;
	uint64_t t;
	uint32_t mask = (uint32_t)arg(c, 2);
	bool follow = !(mask & IN_DONT_FOLLOW);
	int rc = resolve_at(c, AT_FDCWD, arg(c, 1), follow ? MED_FOLLOW : 0, &r, NULL);
	if (rc < 0) {
		med_fail(c, rc);
		return;
	}
	enum act a = act_for(c, &r, false, &why);
	if (a == LET && (rc = obtain(c, &r, follow)) < 0) {
		med_fail(c, rc);
		med_res_close(&r);
		return;
	}
	if (!r.exists) {
		med_fail(c, ENOENT);
		med_res_close(&r);
		return;
	}
	if (!ask(c, a, why, "fs:read", "enumerate", r.path, false, &t)) {
		med_res_close(&r);
		return;
	}
	int copy = their_fd(c, iarg(c, 0));
	char p[40];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", r.fd);
	int wd = copy < 0 ? copy : inotify_add_watch(copy, p, mask & ~IN_DONT_FOLLOW);
	if (copy >= 0 && wd < 0)
		wd = -errno;
	if (copy >= 0)
		close(copy);
	read_done(c, a, t, &r, wd < 0 ? wd : 0, wd);
}

/* ---- the table ------------------------------------------------------------------------ */

void med_fs_call(struct med_call *c)
{
	int nr = (int)c->n->data.nr;
	switch (nr) {
	case SYS_open:
		do_open(c, AT_FDCWD, arg(c, 0), iarg(c, 1), (mode_t)arg(c, 2));
		return;
	case SYS_openat:
		do_open(c, iarg(c, 0), arg(c, 1), iarg(c, 2), (mode_t)arg(c, 3));
		return;
	case SYS_creat:
		do_open(c, AT_FDCWD, arg(c, 0), O_CREAT | O_WRONLY | O_TRUNC, (mode_t)arg(c, 1));
		return;
	case SYS_stat:
		do_meta(c, AT_FDCWD, arg(c, 0), true, nr, arg(c, 1), 0, 0);
		return;
	case SYS_lstat:
		do_meta(c, AT_FDCWD, arg(c, 0), false, nr, arg(c, 1), 0, 0);
		return;
	case SYS_newfstatat:
		do_meta(c, iarg(c, 0), arg(c, 1), !(iarg(c, 3) & AT_SYMLINK_NOFOLLOW), nr,
			arg(c, 2), 0, iarg(c, 3));
		return;
	case SYS_statx:
		do_meta(c, iarg(c, 0), arg(c, 1), !(iarg(c, 2) & AT_SYMLINK_NOFOLLOW), nr,
			arg(c, 4), arg(c, 3), iarg(c, 2));
		return;
	case SYS_access:
		do_meta(c, AT_FDCWD, arg(c, 0), true, nr, arg(c, 1), 0, 0);
		return;
	case SYS_faccessat:
		do_meta(c, iarg(c, 0), arg(c, 1), true, nr, arg(c, 2), 0, 0);
		return;
	case SYS_faccessat2:
		do_meta(c, iarg(c, 0), arg(c, 1), !(iarg(c, 3) & AT_SYMLINK_NOFOLLOW), nr,
			arg(c, 2), 0, iarg(c, 3));
		return;
	case SYS_readlink:
		do_meta(c, AT_FDCWD, arg(c, 0), false, nr, arg(c, 1), arg(c, 2), 0);
		return;
	case SYS_readlinkat:
		do_meta(c, iarg(c, 0), arg(c, 1), false, nr, arg(c, 2), arg(c, 3), 0);
		return;
	case SYS_statfs:
		do_meta(c, AT_FDCWD, arg(c, 0), true, nr, arg(c, 1), 0, 0);
		return;
	case SYS_chdir:
		do_meta(c, AT_FDCWD, arg(c, 0), true, nr, 0, 0, 0);
		return;
	case SYS_getxattr:
	case SYS_lgetxattr:
		do_xattr_get(c, AT_FDCWD, arg(c, 0), nr == SYS_getxattr, false, arg(c, 1), arg(c, 2),
			     arg(c, 3));
		return;
	case SYS_listxattr:
	case SYS_llistxattr:
		do_xattr_get(c, AT_FDCWD, arg(c, 0), nr == SYS_listxattr, true, 0, arg(c, 1),
			     arg(c, 2));
		return;
	case SYS_mkdir:
		do_mkdir(c, AT_FDCWD, arg(c, 0), (mode_t)arg(c, 1), false, 0);
		return;
	case SYS_mkdirat:
		do_mkdir(c, iarg(c, 0), arg(c, 1), (mode_t)arg(c, 2), false, 0);
		return;
	case SYS_mknod:
		do_mkdir(c, AT_FDCWD, arg(c, 0), (mode_t)arg(c, 1), true, (dev_t)arg(c, 2));
		return;
	case SYS_mknodat:
		do_mkdir(c, iarg(c, 0), arg(c, 1), (mode_t)arg(c, 2), true, (dev_t)arg(c, 3));
		return;
	case SYS_unlink:
		do_unlink(c, AT_FDCWD, arg(c, 0), 0);
		return;
	case SYS_rmdir:
		do_unlink(c, AT_FDCWD, arg(c, 0), AT_REMOVEDIR);
		return;
	case SYS_unlinkat:
		do_unlink(c, iarg(c, 0), arg(c, 1), iarg(c, 2));
		return;
	case SYS_rename:
		do_two(c, false, AT_FDCWD, arg(c, 0), AT_FDCWD, arg(c, 1), 0);
		return;
	case SYS_renameat:
		do_two(c, false, iarg(c, 0), arg(c, 1), iarg(c, 2), arg(c, 3), 0);
		return;
	case SYS_renameat2:
		do_two(c, false, iarg(c, 0), arg(c, 1), iarg(c, 2), arg(c, 3), (unsigned)arg(c, 4));
		return;
	case SYS_link:
		do_two(c, true, AT_FDCWD, arg(c, 0), AT_FDCWD, arg(c, 1), 0);
		return;
	case SYS_linkat:
		if (iarg(c, 4) & AT_EMPTY_PATH) {
			/* an open file given a name (O_TMPFILE): not yet */
			med_fail(c, EPERM);
			return;
		}
		do_two(c, true, iarg(c, 0), arg(c, 1), iarg(c, 2), arg(c, 3), (unsigned)arg(c, 4));
		return;
	case SYS_symlink:
		do_symlink(c, arg(c, 0), AT_FDCWD, arg(c, 1));
		return;
	case SYS_symlinkat:
		do_symlink(c, arg(c, 0), iarg(c, 1), arg(c, 2));
		return;
	case SYS_truncate:
		do_attr(c, AT_FDCWD, arg(c, 0), true, A_TRUNCATE, arg(c, 1), 0, 0, 0);
		return;
	case SYS_chmod:
		do_attr(c, AT_FDCWD, arg(c, 0), true, A_CHMOD, arg(c, 1), 0, 0, 0);
		return;
	case SYS_fchmodat:
		do_attr(c, iarg(c, 0), arg(c, 1), true, A_CHMOD, arg(c, 2), 0, 0, 0);
		return;
	case SYS_fchmodat2:
		do_attr(c, iarg(c, 0), arg(c, 1), !(iarg(c, 3) & AT_SYMLINK_NOFOLLOW), A_CHMOD,
			arg(c, 2), 0, 0, 0);
		return;
	case SYS_chown:
	case SYS_lchown:
		do_attr(c, AT_FDCWD, arg(c, 0), nr == SYS_chown, A_CHOWN, arg(c, 1), arg(c, 2), 0, 0);
		return;
	case SYS_fchownat:
		if ((iarg(c, 4) & AT_EMPTY_PATH)) {
			char b[2];
			if (med_read(c->pid, arg(c, 1), b, 1) == 0 && b[0] == '\0') {
				do_fd_attr(c, iarg(c, 0), A_CHOWN, arg(c, 2), arg(c, 3), 0, 0);
				return;
			}
		}
		do_attr(c, iarg(c, 0), arg(c, 1), !(iarg(c, 4) & AT_SYMLINK_NOFOLLOW), A_CHOWN,
			arg(c, 2), arg(c, 3), 0, 0);
		return;
	case SYS_utime:
	case SYS_utimes:
		do_attr(c, AT_FDCWD, arg(c, 0), true, A_TIMES, arg(c, 1), 0, 0, 0);
		return;
	case SYS_futimesat:
		do_attr(c, iarg(c, 0), arg(c, 1), true, A_TIMES, arg(c, 2), 0, 0, 0);
		return;
	case SYS_utimensat:
		if (arg(c, 1) == 0) {
			do_fd_attr(c, iarg(c, 0), A_TIMES, arg(c, 2), 0, 0, 0);
			return;
		}
		do_attr(c, iarg(c, 0), arg(c, 1), !(iarg(c, 3) & AT_SYMLINK_NOFOLLOW), A_TIMES,
			arg(c, 2), 0, 0, 0);
		return;
	case SYS_setxattr:
	case SYS_lsetxattr:
		do_attr(c, AT_FDCWD, arg(c, 0), nr == SYS_setxattr, A_XATTR, arg(c, 1), arg(c, 2),
			arg(c, 3), arg(c, 4));
		return;
	case SYS_removexattr:
	case SYS_lremovexattr:
		do_attr(c, AT_FDCWD, arg(c, 0), nr == SYS_removexattr, A_XATTR, arg(c, 1), 0, 0,
			(uint64_t)-1);
		return;
	case SYS_fchmod:
		do_fd_attr(c, iarg(c, 0), A_CHMOD, arg(c, 1), 0, 0, 0);
		return;
	case SYS_fchown:
		do_fd_attr(c, iarg(c, 0), A_CHOWN, arg(c, 1), arg(c, 2), 0, 0);
		return;
	case SYS_fsetxattr:
		do_fd_attr(c, iarg(c, 0), A_XATTR, arg(c, 1), arg(c, 2), arg(c, 3), arg(c, 4));
		return;
	case SYS_fremovexattr:
		do_fd_attr(c, iarg(c, 0), A_XATTR, arg(c, 1), 0, 0, (uint64_t)-1);
		return;
	case SYS_connect:
		do_sockaddr(c, false);
		return;
	case SYS_bind:
		do_sockaddr(c, true);
		return;
	case SYS_inotify_add_watch:
		do_watch(c);
		return;
	default:
		/* the *at xattr calls (6.13) and file_getattr/setattr (6.17) carry
		 * their arguments in structures: answered as a kernel without them
		 * would, and C libraries fall back to the calls above */
		med_fail(c, ENOSYS);
		return;
	}
}
