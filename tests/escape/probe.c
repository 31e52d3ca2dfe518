/* escape-probe - one sandbox escape attempt per run (tests/escape/README.md).
 *
 *   escape-probe CASE [ARGS]             the attempt, as run inside `cairn run`
 *   escape-probe --control CASE [ARGS]   the same operation outside the sandbox,
 *                                        proving it is real on this host
 *   escape-probe --list                  every case name
 *
 * Each run prints one line, "PASS <case>: <detail>" (exit 0) or
 * "FAIL <case>: <detail>" (exit 1); a control that cannot be made on this host
 * prints "SKIP <case>: <why>" (exit 77).  Inside, every check asserts one
 * exact errno; arguments are chosen so that, without the sandbox, the call
 * would succeed or fail with a different errno (a bogus fd gives EBADF, not
 * the EPERM of a seccomp refusal).
 *
 * Helper modes used by run.sh: --serve-tcp ADDR PORTFILE, --serve-abstract NAME,
 * --serve-unix PATH (accept forever), --daemon-loop TOKEN FILE. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define NR_fchmodat2 452
#define NR_uselib 134
#define X32_BIT 0x40000000L
#define I386_getpid 20

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#define FSCONFIG_CMD_CREATE_ 6
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x00000004
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef ETH_P_ALL
#define ETH_P_ALL 0x0003
#endif
#define HIGH_BITS 0xffffffff00000000UL

struct clone_args_ {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		set_tid, set_tid_size, cgroup;
};

struct mount_attr_ {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* The verdict, in memory shared with forked children so checks made in a
 * child (a fresh user namespace, a clone) count. */
struct state {
	int nfail;
	size_t oklen, badlen;
	char ok[2048];
	char bad[2048];
};
static struct state *S;
static const char *g_case;
static bool g_control;
/* Inside a mediated box (CAIRN_ESCAPE_MEDIATED=1): a decided tree is in the
 * view with no right of the kernel's, and the mediator refuses there (and
 * at its floors) with EACCES before the kernel's own answer. */
static bool g_mediated;

static void append(char *buf, size_t cap, size_t *len, const char *fmt, va_list ap)
{
	if (*len + 2 >= cap)
		return;
	if (*len) {
		buf[(*len)++] = ';';
		buf[(*len)++] = ' ';
	}
	int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	append(S->ok, sizeof S->ok, &S->oklen, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void bad(const char *fmt, ...)
{
	va_list ap;
	S->nfail++;
	va_start(ap, fmt);
	append(S->bad, sizeof S->bad, &S->badlen, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2), noreturn)) static void skip(const char *fmt, ...)
{
	va_list ap;
	printf("SKIP %s: ", g_case);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(77);
}

static const char *ename(int e)
{
	static char buf[8][24];
	static int i;
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof buf[i], "errno %d", e);
	return buf[i];
}

/* r, e: a call's result and errno (-1 on failure, as libc and syscall()). */
static bool chk_err(const char *what, int want, long r, int e)
{
	if (r == -1 && e == want) {
		note("%s: %s", what, ename(e));
		return true;
	}
	if (r == -1 && g_mediated && e == EACCES &&
	    (want == ENOENT || want == EBUSY || want == EROFS || want == EXDEV)) {
		note("%s: EACCES (the mediator refused it; unmediated: %s)", what, ename(want));
		return true;
	}
	if (r == -1)
		bad("%s: %s, want %s", what, ename(e), ename(want));
	else
		bad("%s: succeeded (%ld), want %s", what, r, ename(want));
	return false;
}

static bool chk_ok(const char *what, long r, int e)
{
	if (r != -1) {
		note("%s: ok", what);
		return true;
	}
	bad("%s: %s, want success", what, ename(e));
	return false;
}

/* Success, or any errno but `not` (the call reached the kernel's own checks). */
static bool chk_not(const char *what, int not, long r, int e)
{
	if (r != -1) {
		note("%s: ok", what);
		return true;
	}
	if (e != not) {
		note("%s: %s", what, ename(e));
		return true;
	}
	bad("%s: %s (indistinguishable from a sandbox refusal)", what, ename(e));
	return false;
}

#define CALL_(call) ({ errno = 0; long r_ = (long)(call); int e_ = errno; (struct res){ r_, e_ }; })
struct res {
	long r;
	int e;
};
#define ERR(what, want, call) ({ struct res x_ = CALL_(call); chk_err(what, want, x_.r, x_.e); })
#define OK(what, call) ({ struct res x_ = CALL_(call); chk_ok(what, x_.r, x_.e); })
#define NOT(what, not, call) ({ struct res x_ = CALL_(call); chk_not(what, not, x_.r, x_.e); })
/* The result when the probe itself runs: inside the sandbox ERR, outside OK. */
#define DENY(what, want, call) (g_control ? OK(what, call) : ERR(what, want, call))

static int finish(void)
{
	if (S->nfail) {
		printf("FAIL %s: %s\n", g_case, S->bad);
		fflush(stdout);
		return 1;
	}
	printf("PASS %s: %s%s\n", g_case, g_control ? "control: " : "", S->ok);
	fflush(stdout);
	return 0;
}

/* ---- helpers ---- */

static char *cat(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 1);
	if (!s)
		abort();
	memcpy(s, a, la);
	memcpy(s + la, b, lb + 1);
	return s;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Read a file's first bytes; -1 with errno on failure. */
static long read_some(const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf);
	int e = errno;
	close(fd);
	errno = e;
	return n;
}

static long open_close(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_CLOEXEC, mode);
	if (fd >= 0)
		close(fd);
	return fd;
}

/* Enter a new user namespace (mapped to the caller's ids) with extra
 * namespaces: the place where controls of privileged operations run. */
static bool enter_userns(int extra)
{
	uid_t u = getuid();
	gid_t g = getgid();
	char map[64];
	if (unshare(CLONE_NEWUSER | extra) != 0) {
		bad("control: unshare(CLONE_NEWUSER|%#x): %s", extra, ename(errno));
		return false;
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)u);
	if (write_file("/proc/self/uid_map", map) != 0)
		bad("control: uid_map: %s", ename(errno));
	snprintf(map, sizeof map, "0 %u 1", (unsigned)g);
	if (write_file("/proc/self/gid_map", map) != 0)
		bad("control: gid_map: %s", ename(errno));
	if ((extra & CLONE_NEWNS) && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		bad("control: make / private: %s", ename(errno));
	return S->nfail == 0;
}

/* Run fn in a forked child; its checks land in S.  Returns the wait status. */
static int in_child(void (*fn)(void *), void *arg)
{
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		bad("fork: %s", ename(errno));
		return -1;
	}
	if (p == 0) {
		fn(arg);
		_exit(0);
	}
	int st = 0;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st))
		bad("child killed by signal %d (%s)", WTERMSIG(st), sigabbrev_np(WTERMSIG(st)) ?: "?");
	return st;
}

static pid_t spawn_sleeper(void)
{
	pid_t p = fork();
	if (p == 0) {
		for (;;)
			pause();
	}
	if (p < 0)
		bad("fork: %s", ename(errno));
	return p;
}

static void reap(pid_t p)
{
	if (p > 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long sock_connect_un(const char *path, bool abstract)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (abstract) {
		a.sun_path[0] = 0;
		strncpy(a.sun_path + 1, path, sizeof a.sun_path - 2);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	} else {
		strncpy(a.sun_path, path, sizeof a.sun_path - 1);
		len = sizeof a;
	}
	int r = connect(fd, (struct sockaddr *)&a, len);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static long sock_connect_in(int type, const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int r = connect(fd, (struct sockaddr *)&a, sizeof a);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static long sock_close(int domain, int type, int proto)
{
	int fd = socket(domain, type | SOCK_CLOEXEC, proto);
	if (fd >= 0)
		close(fd);
	return fd;
}

static long raw_socket(unsigned long domain, int type, int proto)
{
	long fd = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, proto);
	if (fd >= 0)
		close((int)fd);
	return fd;
}

/* Copy src to dst (mode 0755), to try executing a file written in the run. */
static bool copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		bad("open %s: %s", src, ename(errno));
		return false;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		bad("create %s: %s", dst, ename(errno));
		close(in);
		return false;
	}
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			bad("write %s: %s", dst, ename(errno));
			n = -1;
			break;
		}
	close(in);
	if (fchmod(out, 0755) != 0)
		bad("chmod %s: %s", dst, ename(errno));
	close(out);
	return n == 0;
}

static int copy_fd(const char *src, int out)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	return n == 0 ? 0 : -1;
}

/* A program that exits 0: the payload of laundered-exec attempts. */
static const char *true_prog(void)
{
	return access("/usr/bin/true", X_OK) == 0 ? "/usr/bin/true" : "/bin/true";
}

/* Exec path (or fd with AT_EMPTY_PATH) in a child.  Inside: want `want`;
 * control: the program must run (exit 0). */
struct exec_arg {
	const char *what;
	const char *path;
	int fd;
	int want;
};

static void exec_child(void *p)
{
	struct exec_arg *a = p;
	char *argv[] = { "true", NULL };
	char *envp[] = { NULL };
	struct res x;
	if (a->fd >= 0)
		x = CALL_(syscall(SYS_execveat, a->fd, "", argv, envp, AT_EMPTY_PATH));
	else
		x = CALL_(execve(a->path, argv, envp));
	if (g_control)
		chk_ok(a->what, x.r, x.e);
	else
		chk_err(a->what, a->want, x.r, x.e);
	_exit(99);
}

static void try_exec(struct exec_arg *a)
{
	int st = in_child(exec_child, a);
	if (st < 0 || WIFSIGNALED(st))
		return;
	if (WEXITSTATUS(st) == 0) {
		if (g_control)
			note("%s: ran", a->what);
		else
			bad("%s: the written program ran, want %s", a->what, ename(a->want));
	}
}

static int status_field(const char *name, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t n = strlen(name);
	int found = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			char *v = line + n + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = 0;
			snprintf(out, cap, "%s", v);
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

/* ---- cases: files outside the grants ---- */

static void c_write_home(char **a)
{
	char *p = cat(a[0], "/escape-probe-new");
	if (g_control) {
		OK("create in the home dir", open_close(p, O_WRONLY | O_CREAT | O_EXCL, 0600));
		unlink(p);
	} else {
		ERR("create in the ungranted home dir", ENOENT, open_close(p, O_WRONLY | O_CREAT | O_EXCL, 0600));
		struct stat st;
		ERR("stat the ungranted home dir", ENOENT, stat(a[0], &st));
	}
}

static void c_read_home_secret(char **a)
{
	DENY("read the ungranted secret", ENOENT, read_some(a[0]));
}

static void c_write_real_home(char **a)
{
	char *p = cat(a[0], "/.cairn-escape-probe");
	struct stat st;
	if (g_control) {
		OK("stat the passwd home", stat(a[0], &st));
		OK("the passwd home is writable", access(a[0], W_OK));
	} else {
		ERR("create in the passwd home", ENOENT, open_close(p, O_WRONLY | O_CREAT | O_EXCL, 0600));
	}
}

static void c_write_read_grant(char **a)
{
	char *nf = cat(a[0], "/escape-new");
	char *ren = cat(a[0], "/escape-renamed");
	if (g_control) {
		OK("create in the read dir", open_close(nf, O_WRONLY | O_CREAT | O_EXCL, 0600));
		unlink(nf);
		OK("open the read file for writing", open_close(a[1], O_WRONLY, 0));
		OK("utimensat the read file", utimensat(AT_FDCWD, a[1], NULL, 0));
		return;
	}
	ERR("create in the read grant", EROFS, open_close(nf, O_WRONLY | O_CREAT | O_EXCL, 0600));
	ERR("open the read file for writing", EROFS, open_close(a[1], O_WRONLY, 0));
	ERR("truncate the read file", EROFS, truncate(a[1], 0));
	ERR("unlink the read file", EROFS, unlink(a[1]));
	ERR("rename the read file", EROFS, rename(a[1], ren));
	ERR("chmod the read file", EROFS, chmod(a[1], 0666));
	ERR("utimensat the read file", EROFS, utimensat(AT_FDCWD, a[1], NULL, 0));
}

static void c_write_grant_parent(char **a)
{
	char *nf = cat(a[0], "/escape-new");
	char *nd = cat(a[0], "/escape-newdir");
	if (g_control) {
		OK("create in the grants' parent", open_close(nf, O_WRONLY | O_CREAT | O_EXCL, 0600));
		unlink(nf);
		OK("mkdir in the grants' parent", mkdir(nd, 0700));
		rmdir(nd);
		return;
	}
	ERR("create in the grants' parent", EROFS, open_close(nf, O_WRONLY | O_CREAT | O_EXCL, 0600));
	ERR("mkdir in the grants' parent", EROFS, mkdir(nd, 0700));
}

static void c_host_tmp(char **a)
{
	if (g_control) {
		OK("read the host /tmp file", read_some(a[0]));
		return;
	}
	ERR("read the host /tmp file", ENOENT, read_some(a[0]));
	ERR("write the host /tmp file", ENOENT, open_close(a[0], O_WRONLY, 0));
	/* run.sh checks this one never reaches the host's /tmp */
	char *in = cat(a[0], ".inside");
	OK("create a file in the private /tmp", open_close(in, O_WRONLY | O_CREAT, 0600));
}

/* ---- denied reads ---- */

static void c_deny_read(char **a)
{
	struct stat st;
	if (g_control) {
		OK("read the secret", read_some(a[0]));
		return;
	}
	ERR("read the denied secret", EACCES, read_some(a[0]));
	ERR("stat the denied secret", EACCES, stat(a[0], &st));
	ERR("list the denied dir", EACCES, open_close(a[1], O_RDONLY | O_DIRECTORY, 0));
	ERR("create in the denied dir", EACCES, open_close(cat(a[1], "/escape-new"), O_WRONLY | O_CREAT, 0600));
}

static void c_deny_file(char **a)
{
	char *moved = cat(a[0], ".moved");
	if (g_control) {
		OK("read the denied file", read_some(a[0]));
		return;
	}
	ERR("read the denied file", EACCES, read_some(a[0]));
	ERR("open the denied file for writing", EACCES, open_close(a[0], O_WRONLY, 0));
	ERR("rename the denied file's mask away", EBUSY, rename(a[0], moved));
	ERR("unlink the denied file's mask", EBUSY, unlink(a[0]));
}

static void c_deny_symlink(char **a)
{
	DENY("read the secret through a workspace symlink", EACCES, read_some(a[0]));
}

static void c_deny_proc_self_root(char **a)
{
	DENY("read via /proc/self/root", EACCES, read_some(cat("/proc/self/root", a[0])));
	DENY("read via /proc/thread-self/root", EACCES, read_some(cat("/proc/thread-self/root", a[0])));
}

static void c_deny_proc1(char **a)
{
	char buf[256];
	if (g_control) {
		/* the same links of another process of ours */
		char pfx[64];
		snprintf(pfx, sizeof pfx, "/proc/%d", (int)getppid());
		OK("read via /proc/<parent>/root", read_some(cat(cat(pfx, "/root"), a[0])));
		OK("readlink /proc/<parent>/cwd", readlink(cat(pfx, "/cwd"), buf, sizeof buf));
		OK("open /proc/<parent>/cwd", open_close(cat(pfx, "/cwd/."), O_RDONLY | O_DIRECTORY, 0));
		return;
	}
	ERR("read via /proc/1/root", EACCES, read_some(cat("/proc/1/root", a[0])));
	ERR("readlink /proc/1/cwd", EACCES, readlink("/proc/1/cwd", buf, sizeof buf));
	ERR("open /proc/1/cwd/.", EACCES, open_close("/proc/1/cwd/.", O_RDONLY | O_DIRECTORY, 0));
}

static void c_deny_proc_supervisor(char **a)
{
	char pfx[64];
	char buf[256];
	struct stat st;
	snprintf(pfx, sizeof pfx, "/proc/%s", a[1]);
	if (g_control) {
		OK("stat /proc/<pid>", stat(pfx, &st));
		OK("read via /proc/<pid>/root", read_some(cat(cat(pfx, "/root"), a[0])));
		OK("readlink /proc/<pid>/cwd", readlink(cat(pfx, "/cwd"), buf, sizeof buf));
		return;
	}
	ERR("stat /proc/<supervisor>", ENOENT, stat(pfx, &st));
	ERR("read via /proc/<supervisor>/root", ENOENT, read_some(cat(cat(pfx, "/root"), a[0])));
	ERR("open /proc/<supervisor>/cwd", ENOENT, open_close(cat(pfx, "/cwd/."), O_RDONLY, 0));
}

static void c_hardlink(char **a)
{
	char *dst = cat(a[1], "/escape-hardlink");
	if (g_control) {
		OK("hard link the read file into the workspace", link(a[0], dst));
		unlink(dst);
		return;
	}
	ERR("hard link the read file into the workspace", EXDEV, link(a[0], dst));
}

static void c_deny_rename(char **a)
{
	char *moved = cat(a[0], ".moved");
	if (g_control) {
		if (OK("rename the deny dir", rename(a[0], moved)))
			rename(moved, a[0]);
		return;
	}
	ERR("rename the deny mask away", EBUSY, rename(a[0], moved));
	ERR("rmdir the deny mask", EBUSY, rmdir(a[0]));
}

/* ---- /proc, /sys, /run ---- */

static void ro_proc_file(const char *path)
{
	char what[128];
	snprintf(what, sizeof what, "utimensat %s", path);
	if (g_control) {
		NOT(what, EROFS, utimensat(AT_FDCWD, path, NULL, 0));
		snprintf(what, sizeof what, "open %s for writing", path);
		NOT(what, EROFS, open_close(path, O_WRONLY, 0));
		return;
	}
	ERR(what, EROFS, utimensat(AT_FDCWD, path, NULL, 0));
	/* The permission check comes before the mount's: only root reaches EROFS. */
	snprintf(what, sizeof what, "open %s for writing", path);
	ERR(what, geteuid() == 0 ? EROFS : EACCES, open_close(path, O_WRONLY, 0));
}

static void c_proc_sys_write(char **a)
{
	(void)a;
	ro_proc_file("/proc/sys/kernel/hostname");
	ro_proc_file("/proc/sys/net/ipv4/ip_forward");
}

static void c_sysrq_write(char **a)
{
	struct stat st;
	(void)a;
	if (g_control && stat("/proc/sysrq-trigger", &st) != 0)
		skip("no /proc/sysrq-trigger on this host (no CONFIG_MAGIC_SYSRQ)");
	ro_proc_file("/proc/sysrq-trigger");
}

static void c_sys_absent(char **a)
{
	struct stat st;
	(void)a;
	if (g_control) {
		OK("stat /sys/kernel", stat("/sys/kernel", &st));
		return;
	}
	ERR("stat /sys", ENOENT, stat("/sys", &st));
	ERR("open /sys/fs/cgroup/cgroup.procs for writing", ENOENT,
	    open_close("/sys/fs/cgroup/cgroup.procs", O_WRONLY, 0));
}

static void c_run_absent(char **a)
{
	struct stat st;
	(void)a;
	if (g_control) {
		OK("stat /run", stat("/run", &st));
		return;
	}
	ERR("stat /run", ENOENT, stat("/run", &st));
	ERR("stat /var/run", ENOENT, stat("/var/run", &st));
}

static void c_host_socket(char **a)
{
	struct stat st;
	if (g_control) {
		if (stat(a[0], &st) != 0 || !S_ISSOCK(st.st_mode))
			skip("no socket %s on this host", a[0]);
		NOT("connect", ENOENT, sock_connect_un(a[0], false));
		return;
	}
	ERR("connect the host daemon socket", ENOENT, sock_connect_un(a[0], false));
}

/* ---- other processes ---- */

static void c_ptrace(char **a)
{
	(void)a;
	pid_t c = spawn_sleeper();
	if (g_control) {
		OK("PTRACE_ATTACH own child", ptrace(PTRACE_ATTACH, c, 0, 0));
	} else {
		ERR("PTRACE_ATTACH pid 1", EPERM, ptrace(PTRACE_ATTACH, 1, 0, 0));
		ERR("PTRACE_SEIZE pid 1", EPERM, ptrace(PTRACE_SEIZE, 1, 0, 0));
		ERR("PTRACE_ATTACH own child", EPERM, ptrace(PTRACE_ATTACH, c, 0, 0));
		ERR("PTRACE_TRACEME", EPERM, ptrace(PTRACE_TRACEME, 0, 0, 0));
	}
	reap(c);
}

static void c_proc1_mem(char **a)
{
	(void)a;
	if (g_control) {
		pid_t c = spawn_sleeper();
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/mem", (int)c);
		OK("open /proc/<child>/mem O_RDWR", open_close(p, O_RDWR, 0));
		reap(c);
		return;
	}
	ERR("open /proc/1/mem O_RDWR", EACCES, open_close("/proc/1/mem", O_RDWR, 0));
	ERR("open /proc/1/mem O_RDONLY", EACCES, open_close("/proc/1/mem", O_RDONLY, 0));
}

static void c_proc1_environ_fd(char **a)
{
	(void)a;
	if (g_control) {
		pid_t c = spawn_sleeper();
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/environ", (int)c);
		OK("read /proc/<child>/environ", read_some(p));
		snprintf(p, sizeof p, "/proc/%d/fd/1", (int)c);
		OK("open /proc/<child>/fd/1", open_close(p, O_WRONLY, 0));
		reap(c);
		return;
	}
	ERR("read /proc/1/environ", EACCES, read_some("/proc/1/environ"));
	char buf[256];
	ERR("readlink /proc/1/fd/0", EACCES, readlink("/proc/1/fd/0", buf, sizeof buf));
	DIR *d = opendir("/proc/1/fd");
	if (!d) {
		note("list /proc/1/fd: %s", ename(errno));
		return;
	}
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[300], what[320];
		snprintf(p, sizeof p, "/proc/1/fd/%s", de->d_name);
		snprintf(what, sizeof what, "open %s", p);
		ERR(what, EACCES, open_close(p, O_RDONLY, 0));
		n++;
	}
	closedir(d);
	note("%d fds of pid 1 listed", n);
}

static void c_proc1_exe(char **a)
{
	char buf[256];
	(void)a;
	if (g_control) {
		pid_t c = spawn_sleeper();
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/exe", (int)c);
		OK("open /proc/<child>/exe", open_close(p, O_RDONLY, 0));
		OK("readlink /proc/<child>/exe", readlink(p, buf, sizeof buf));
		reap(c);
		return;
	}
	ERR("open /proc/1/exe for reading", EACCES, open_close("/proc/1/exe", O_RDONLY, 0));
	ERR("open /proc/1/exe for writing", EACCES, open_close("/proc/1/exe", O_WRONLY, 0));
	ERR("readlink /proc/1/exe", EACCES, readlink("/proc/1/exe", buf, sizeof buf));
}

static volatile long g_target = 1;

static void c_process_vm(char **a)
{
	(void)a;
	long v = 2;
	struct iovec l = { &v, sizeof v }, r = { (void *)&g_target, sizeof g_target };
	pid_t c = spawn_sleeper();
	if (g_control) {
		OK("process_vm_writev own child", process_vm_writev(c, &l, 1, &r, 1, 0));
		OK("process_vm_readv own child", process_vm_readv(c, &l, 1, &r, 1, 0));
	} else {
		ERR("process_vm_writev own child", EPERM, process_vm_writev(c, &l, 1, &r, 1, 0));
		ERR("process_vm_readv own child", EPERM, process_vm_readv(c, &l, 1, &r, 1, 0));
		ERR("process_vm_writev pid 1", EPERM, process_vm_writev(1, &l, 1, &r, 1, 0));
	}
	reap(c);
}

/* ---- io_uring ---- */

static void c_io_uring_setup(char **a)
{
	struct io_uring_params p;
	(void)a;
	memset(&p, 0, sizeof p);
	if (g_control) {
		struct res x = CALL_(syscall(SYS_io_uring_setup, 4, &p));
		if (x.r >= 0)
			close((int)x.r);
		chk_not("io_uring_setup", EPERM, x.r, x.e);
		return;
	}
	ERR("io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 4, &p));
}

static void c_io_uring_enter(char **a)
{
	(void)a;
	if (g_control) {
		ERR("io_uring_enter(bogus fd)", EBADF, syscall(SYS_io_uring_enter, 999, 1, 0, 0, NULL, 0));
		ERR("io_uring_register(bogus fd)", EBADF, syscall(SYS_io_uring_register, 999, 0, NULL, 0));
		return;
	}
	ERR("io_uring_enter(bogus fd)", EPERM, syscall(SYS_io_uring_enter, 999, 1, 0, 0, NULL, 0));
	ERR("io_uring_register(bogus fd)", EPERM, syscall(SYS_io_uring_register, 999, 0, NULL, 0));
}

/* ---- terminal injection ---- */

/* Control: TIOCSTI (req) on a pty that is the child's controlling terminal
 * really pushes input. */
static void pty_child(void *p)
{
	unsigned long req = *(unsigned long *)p;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m)) {
		bad("control: no pty: %s", ename(errno));
		return;
	}
	setsid();
	int s = open(ptsname(m), O_RDWR);
	if (s < 0) {
		bad("control: open pty: %s", ename(errno));
		return;
	}
	char c = 'Z', nl = '\n', got[8] = { 0 };
	struct res x = CALL_(syscall(SYS_ioctl, s, req, &c));
	if (x.r == -1 && x.e == EIO && geteuid() != 0) {
		/* dev.tty.legacy_tiocsti = 0: refused to unprivileged callers */
		note("TIOCSTI on a pty: EIO (legacy_tiocsti off)");
		return;
	}
	if (!chk_ok(req == TIOCSTI ? "TIOCSTI on a pty" : "TIOCSTI|high bits on a pty", x.r, x.e))
		return;
	syscall(SYS_ioctl, s, req, &nl);
	if (read(s, got, sizeof got - 1) < 1 || got[0] != 'Z')
		bad("control: injected byte not read back (%s)", got);
	else
		note("injected byte read back");
}

static void tty_req(const char *what, unsigned long req, void *arg)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		bad("open /dev/null: %s", ename(errno));
		return;
	}
	if (g_control)
		ERR(what, ENOTTY, syscall(SYS_ioctl, fd, req, arg));
	else
		ERR(what, EPERM, syscall(SYS_ioctl, fd, req, arg));
	close(fd);
}

static void c_tiocsti(char **a)
{
	char c = 'x';
	(void)a;
	tty_req("TIOCSTI on /dev/null", TIOCSTI, &c);
	if (!g_control) {
		struct res x = CALL_(syscall(SYS_ioctl, 0, TIOCSTI, &c));
		chk_err("TIOCSTI on fd 0", EPERM, x.r, x.e);
	} else {
		unsigned long req = TIOCSTI;
		in_child(pty_child, &req);
	}
}

static void c_tiocsti_highbits(char **a)
{
	char c = 'x';
	(void)a;
	tty_req("TIOCSTI|0xffffffff00000000 on /dev/null", HIGH_BITS | TIOCSTI, &c);
	tty_req("TIOCSTI|0x100000000 on /dev/null", 0x100000000UL | TIOCSTI, &c);
	if (g_control) {
		unsigned long req = HIGH_BITS | TIOCSTI;
		in_child(pty_child, &req);
	}
}

static void c_tioclinux(char **a)
{
	char sub = 6; /* TIOCL_GETSHIFTSTATE */
	(void)a;
	tty_req("TIOCLINUX on /dev/null", TIOCLINUX, &sub);
	tty_req("TIOCLINUX|high bits on /dev/null", HIGH_BITS | TIOCLINUX, &sub);
}

/* ---- devices ---- */

static void dev_absent(const char *path)
{
	struct stat st;
	if (g_control) {
		if (stat(path, &st) != 0)
			skip("no %s on this host", path);
		if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
			skip("%s is not a device here", path);
		note("%s is a device on the host", path);
		return;
	}
	ERR("open for writing", ENOENT, open_close(path, O_WRONLY, 0));
	ERR("stat", ENOENT, stat(path, &st));
}

static void c_dev_block(char **a) { dev_absent(a[0]); }
static void c_dev_kmsg(char **a) { (void)a; dev_absent("/dev/kmsg"); }
static void c_dev_mem(char **a) { (void)a; dev_absent("/dev/mem"); }
static void c_dev_kvm(char **a) { (void)a; dev_absent("/dev/kvm"); }
static void c_dev_fuse(char **a) { (void)a; dev_absent("/dev/fuse"); }

static void c_dev_list(char **a)
{
	static const char *allowed[] = { "null", "zero", "full", "random", "urandom", "fd", "shm",
					  "stdin", "stdout", "stderr", NULL };
	(void)a;
	DIR *d = opendir("/dev");
	if (!d) {
		bad("list /dev: %s", ename(errno));
		return;
	}
	struct dirent *de;
	int n = 0, extra = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		bool ok = false;
		for (int i = 0; allowed[i]; i++)
			ok |= strcmp(de->d_name, allowed[i]) == 0;
		if (!ok) {
			extra++;
			if (!g_control)
				bad("/dev/%s is present", de->d_name);
		}
	}
	closedir(d);
	if (g_control) {
		if (extra == 0)
			bad("the host /dev has nothing beyond the sandbox's set");
		else
			note("host /dev has %d entries beyond the sandbox's set", extra);
	} else {
		note("%d entries in /dev", n);
	}
}

/* ---- mounts ---- */

static void c_mount_ctl(void *p)
{
	(void)p;
	if (!enter_userns(CLONE_NEWNS))
		return;
	OK("mount tmpfs in an own namespace", mount("none", "/tmp", "tmpfs", 0, ""));
}

static void c_mount(char **a)
{
	if (g_control) {
		in_child(c_mount_ctl, NULL);
		return;
	}
	ERR("mount tmpfs on /tmp", EPERM, mount("none", "/tmp", "tmpfs", 0, ""));
	ERR("remount the read grant rw", EPERM, mount(NULL, a[0], NULL, MS_REMOUNT | MS_BIND, NULL));
	ERR("bind the workspace over the deny mask", EPERM, mount(a[1], a[2], NULL, MS_BIND, NULL));
}

static void c_umount_ctl(void *p)
{
	(void)p;
	if (!enter_userns(CLONE_NEWNS))
		return;
	if (OK("mount tmpfs", mount("none", "/tmp", "tmpfs", 0, "")))
		OK("umount2 MNT_DETACH", umount2("/tmp", MNT_DETACH));
}

static void c_umount(char **a)
{
	if (g_control) {
		in_child(c_umount_ctl, NULL);
		return;
	}
	ERR("umount2 /proc", EPERM, umount2("/proc", MNT_DETACH));
	ERR("umount2 the read grant", EPERM, umount2(a[0], MNT_DETACH));
	ERR("umount2 the deny mask", EPERM, umount2(a[1], MNT_DETACH));
}

static void c_open_tree(char **a)
{
	if (g_control) {
		struct res x = CALL_(syscall(SYS_open_tree, AT_FDCWD, "/", 0));
		if (x.r >= 0)
			close((int)x.r);
		chk_ok("open_tree /", x.r, x.e);
		return;
	}
	ERR("open_tree /", EPERM, syscall(SYS_open_tree, AT_FDCWD, "/", 0));
	ERR("open_tree the read grant CLONE", EPERM,
	    syscall(SYS_open_tree, AT_FDCWD, a[0], OPEN_TREE_CLONE | AT_RECURSIVE));
}

static void fsopen_calls(bool ctl)
{
	struct mount_attr_ attr = { .attr_clr = MOUNT_ATTR_RDONLY };
	if (ctl) {
		struct res x = CALL_(syscall(SYS_fsopen, "tmpfs", 0));
		if (x.r >= 0)
			close((int)x.r);
		chk_ok("fsopen tmpfs", x.r, x.e);
		NOT("fspick /", EPERM, syscall(SYS_fspick, AT_FDCWD, "/", 0));
		ERR("fsconfig(bogus fd)", EBADF, syscall(SYS_fsconfig, 999, FSCONFIG_CMD_CREATE_, NULL, NULL, 0));
		ERR("fsmount(bogus fd)", EBADF, syscall(SYS_fsmount, 999, 0, 0));
		ERR("move_mount(bogus fd)", EBADF,
		    syscall(SYS_move_mount, 999, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH_));
		ERR("mount_setattr(bogus fd)", EBADF,
		    syscall(SYS_mount_setattr, 999, "", AT_EMPTY_PATH, &attr, sizeof attr));
		return;
	}
	ERR("fsopen tmpfs", EPERM, syscall(SYS_fsopen, "tmpfs", 0));
	ERR("fspick /", EPERM, syscall(SYS_fspick, AT_FDCWD, "/", 0));
	ERR("fsconfig(bogus fd)", EPERM, syscall(SYS_fsconfig, 999, FSCONFIG_CMD_CREATE_, NULL, NULL, 0));
	ERR("fsmount(bogus fd)", EPERM, syscall(SYS_fsmount, 999, 0, 0));
	ERR("move_mount(bogus fd)", EPERM,
	    syscall(SYS_move_mount, 999, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH_));
	ERR("mount_setattr / clear RDONLY", EPERM,
	    syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr));
	ERR("mount_setattr(bogus fd)", EPERM,
	    syscall(SYS_mount_setattr, 999, "", AT_EMPTY_PATH, &attr, sizeof attr));
}

static void c_fsopen_ctl(void *p)
{
	(void)p;
	if (enter_userns(CLONE_NEWNS))
		fsopen_calls(true);
}

static void c_fsopen(char **a)
{
	(void)a;
	if (g_control)
		in_child(c_fsopen_ctl, NULL);
	else
		fsopen_calls(false);
}

static void c_chroot_ctl(void *p)
{
	(void)p;
	if (!enter_userns(CLONE_NEWNS))
		return;
	NOT("pivot_root(absent paths)", EPERM,
	    syscall(SYS_pivot_root, "/nonexistent-escape-a", "/nonexistent-escape-b"));
	OK("chroot /", chroot("/"));
}

static void c_pivot_chroot(char **a)
{
	(void)a;
	if (g_control) {
		in_child(c_chroot_ctl, NULL);
		return;
	}
	ERR("chroot /tmp", EPERM, chroot("/tmp"));
	ERR("pivot_root /tmp /tmp", EPERM, syscall(SYS_pivot_root, "/tmp", "/tmp"));
}

/* ---- namespaces ---- */

static void unshare_child(void *p)
{
	int flag = *(int *)p;
	char what[64];
	snprintf(what, sizeof what, "unshare(%#x)", flag);
	if (g_control)
		OK(what, unshare(flag));
	else
		ERR(what, EPERM, unshare(flag));
}

static void c_unshare_user(char **a)
{
	int f = CLONE_NEWUSER;
	(void)a;
	in_child(unshare_child, &f);
}

static const int ns_flags[] = { CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS,
				CLONE_NEWCGROUP, CLONE_NEWTIME };
static const char *ns_names[] = { "NEWNS", "NEWNET", "NEWPID", "NEWIPC", "NEWUTS", "NEWCGROUP",
				  "NEWTIME" };

static void unshare_ns_ctl(void *p)
{
	(void)p;
	if (!enter_userns(0))
		return;
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		char what[64];
		snprintf(what, sizeof what, "unshare(CLONE_%s)", ns_names[i]);
		OK(what, unshare(ns_flags[i]));
	}
}

static void c_unshare_ns(char **a)
{
	(void)a;
	if (g_control) {
		in_child(unshare_ns_ctl, NULL);
		return;
	}
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		char what[64];
		snprintf(what, sizeof what, "unshare(CLONE_%s)", ns_names[i]);
		ERR(what, EPERM, unshare(ns_flags[i]));
	}
}

static void raw_clone(const char *what, unsigned long flags)
{
	fflush(stdout);
	struct res x = CALL_(syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0));
	if (x.r == 0)
		_exit(0);
	if (x.r > 0)
		waitpid((pid_t)x.r, NULL, 0);
	if (g_control)
		chk_ok(what, x.r, x.e);
	else
		chk_err(what, EPERM, x.r, x.e);
}

static void c_clone_newuser(char **a)
{
	(void)a;
	raw_clone("clone(CLONE_NEWUSER)", CLONE_NEWUSER);
	if (!g_control) {
		raw_clone("clone(CLONE_NEWNS)", CLONE_NEWNS);
		raw_clone("clone(CLONE_NEWUSER|CLONE_NEWNS)", CLONE_NEWUSER | CLONE_NEWNS);
	}
}

static void clone3_try(const char *what, uint64_t flags)
{
	struct clone_args_ ca;
	memset(&ca, 0, sizeof ca);
	ca.flags = flags;
	ca.exit_signal = SIGCHLD;
	fflush(stdout);
	struct res x = CALL_(syscall(SYS_clone3, &ca, sizeof ca));
	if (x.r == 0)
		_exit(0);
	if (x.r > 0)
		waitpid((pid_t)x.r, NULL, 0);
	if (g_control)
		chk_ok(what, x.r, x.e);
	else
		chk_err(what, ENOSYS, x.r, x.e);
}

static void c_clone3(char **a)
{
	(void)a;
	clone3_try("clone3()", 0);
	clone3_try("clone3(CLONE_NEWUSER)", CLONE_NEWUSER);
}

static void setns_ctl(void *p)
{
	(void)p;
	if (!enter_userns(CLONE_NEWUTS))
		return;
	int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	OK("setns(own uts ns)", setns(fd, CLONE_NEWUTS));
	ERR("setns(bogus fd)", EBADF, setns(999, 0));
}

static void c_setns(char **a)
{
	(void)a;
	if (g_control) {
		in_child(setns_ctl, NULL);
		return;
	}
	int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		bad("open /proc/self/ns/uts: %s", ename(errno));
	ERR("setns(own uts ns)", EPERM, setns(fd, CLONE_NEWUTS));
	ERR("setns(bogus fd)", EPERM, setns(999, 0));
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pfd >= 0)
		ERR("setns(own pidfd, CLONE_NEWNS)", EPERM, setns(pfd, CLONE_NEWNS));
}

/* ---- sockets ---- */

static void c_abstract_unix(char **a)
{
	/* The host's abstract names live in the host's network namespace: from
	 * the sandbox's own netns the lookup fails before Landlock's scope check. */
	if (g_control)
		OK("connect the host abstract listener", sock_connect_un(a[0], true));
	else
		ERR("connect the host abstract listener", ECONNREFUSED, sock_connect_un(a[0], true));
}

static void c_unix_path(char **a)
{
	DENY("connect the host pathname listener", ENOENT, sock_connect_un(a[0], false));
}

static void x32_child(void *p)
{
	(void)p;
	if (g_control)
		NOT("x32 getpid", EPERM, syscall(39 | X32_BIT));
	else
		ERR("x32 getpid", EPERM, syscall(39 | X32_BIT));
	if (g_control)
		NOT("x32 socket(AF_NETLINK)", EPERM, syscall(41 | X32_BIT, AF_NETLINK, SOCK_RAW, 0));
	else
		ERR("x32 socket(AF_NETLINK)", EPERM, syscall(41 | X32_BIT, AF_NETLINK, SOCK_RAW, 0));
}

static void c_x32(char **a)
{
	(void)a;
	in_child(x32_child, NULL);
}

static long int80(long nr, long b, long c, long d)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(b), "c"(c), "d"(d)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static void int80_child(void *p)
{
	(void)p;
	long r = int80(I386_getpid, 0, 0, 0);
	if (g_control) {
		if (r == getpid())
			note("int 0x80 getpid: %ld", r);
		else
			bad("int 0x80 getpid returned %ld", r);
		return;
	}
	if (r == -EPERM)
		note("int 0x80 getpid: EPERM");
	else if (r < 0 && r > -4096)
		bad("int 0x80 getpid: %s, want EPERM", ename((int)-r));
	else
		bad("int 0x80 getpid succeeded (%ld), want EPERM", r);
}

static void c_int80(char **a)
{
	(void)a;
	if (g_control) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			_exit(int80(I386_getpid, 0, 0, 0) == getpid() ? 0 : 1);
		}
		int st;
		waitpid(p, &st, 0);
		if (WIFSIGNALED(st))
			skip("no IA32 emulation here (int 0x80 gives signal %d)", WTERMSIG(st));
	}
	in_child(int80_child, NULL);
}

static void packet_ctl(void *p)
{
	(void)p;
	if (enter_userns(CLONE_NEWNET)) {
		OK("socket(AF_PACKET, SOCK_DGRAM)", sock_close(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL)));
		OK("socket(AF_INET, SOCK_RAW)", sock_close(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	}
}

static void c_af_packet(char **a)
{
	(void)a;
	if (g_control) {
		in_child(packet_ctl, NULL);
		return;
	}
	ERR("socket(AF_PACKET, SOCK_DGRAM)", EPERM, sock_close(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL)));
	ERR("socket(AF_PACKET, SOCK_RAW)", EPERM, sock_close(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
}

static void c_raw_inet(char **a)
{
	(void)a;
	if (g_control) {
		in_child(packet_ctl, NULL);
		return;
	}
	ERR("socket(AF_INET, SOCK_RAW)", EPERM, sock_close(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	ERR("socket(AF_INET6, SOCK_RAW)", EPERM, sock_close(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6));
}

static void c_af_netlink(char **a)
{
	(void)a;
	DENY("socket(AF_NETLINK, NETLINK_ROUTE)", EPERM, sock_close(AF_NETLINK, SOCK_RAW, 0));
	DENY("socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", EPERM, sock_close(AF_NETLINK, SOCK_DGRAM, 15));
}

static void c_af_vsock(char **a)
{
	(void)a;
	if (g_control)
		NOT("socket(AF_VSOCK)", EPERM, sock_close(AF_VSOCK, SOCK_STREAM, 0));
	else
		ERR("socket(AF_VSOCK)", EPERM, sock_close(AF_VSOCK, SOCK_STREAM, 0));
}

static void af_other_calls(void *p);

static void c_af_other(char **a)
{
	(void)a;
	if (g_control) {
		/* AF_XDP wants CAP_NET_RAW: try them where we have it */
		in_child(af_other_calls, NULL);
		return;
	}
	af_other_calls(NULL);
}

static void af_other_calls(void *p)
{
	static const struct {
		const char *what;
		unsigned long dom;
		int type;
	} t[] = {
		{ "socket(AF_ALG)", AF_ALG, SOCK_SEQPACKET },
		{ "socket(AF_KEY)", AF_KEY, SOCK_RAW },
		{ "socket(AF_BLUETOOTH)", AF_BLUETOOTH, SOCK_STREAM },
		{ "socket(AF_XDP)", AF_XDP, SOCK_RAW },
		{ "socket(AF_NETLINK|high bits)", HIGH_BITS | AF_NETLINK, SOCK_RAW },
	};
	(void)p;
	if (g_control && !enter_userns(CLONE_NEWNET))
		return;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (g_control)
			NOT(t[i].what, EPERM, raw_socket(t[i].dom, t[i].type, 0));
		else
			ERR(t[i].what, EPERM, raw_socket(t[i].dom, t[i].type, 0));
	}
}

static void c_tcp_loopback(char **a)
{
	int port = atoi(a[0]);
	if (g_control)
		OK("connect host 127.0.0.1:<port>", sock_connect_in(SOCK_STREAM, "127.0.0.1", port));
	else
		ERR("connect host 127.0.0.1:<port>", ECONNREFUSED, sock_connect_in(SOCK_STREAM, "127.0.0.1", port));
}

static void c_tcp_external(char **a)
{
	int port = atoi(a[1]);
	if (g_control)
		OK("connect the host's own address", sock_connect_in(SOCK_STREAM, a[0], port));
	else
		ERR("connect the host's own address", ENETUNREACH, sock_connect_in(SOCK_STREAM, a[0], port));
}

static void c_udp_external(char **a)
{
	(void)a;
	if (g_control) {
		struct res x = CALL_(sock_connect_in(SOCK_DGRAM, "8.8.8.8", 53));
		if (x.r == -1 && (x.e == ENETUNREACH || x.e == EHOSTUNREACH))
			skip("no default route on this host");
		chk_ok("UDP connect 8.8.8.8:53", x.r, x.e);
		return;
	}
	ERR("UDP connect 8.8.8.8:53", ENETUNREACH, sock_connect_in(SOCK_DGRAM, "8.8.8.8", 53));
	ERR("TCP connect 1.1.1.1:443", ENETUNREACH, sock_connect_in(SOCK_STREAM, "1.1.1.1", 443));
}

/* ---- descriptors, credentials, signals ---- */

static void c_fd_leak(char **a)
{
	(void)a;
	if (g_control) {
		OK("fd 7 open in run.sh", fcntl(7, F_GETFD));
		OK("fd 9 open in run.sh", fcntl(9, F_GETFD));
		return;
	}
	ERR("fcntl(7, F_GETFD)", EBADF, fcntl(7, F_GETFD));
	ERR("fcntl(9, F_GETFD)", EBADF, fcntl(9, F_GETFD));
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		bad("list /proc/self/fd: %s", ename(errno));
		return;
	}
	int dfd = dirfd(d);
	struct dirent *de;
	char list[256] = "";
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dfd)
			bad("fd %d is open", fd);
		if (strlen(list) + strlen(de->d_name) + 2 < sizeof list) {
			strcat(list, " ");
			strcat(list, de->d_name);
		}
	}
	closedir(d);
	note("/proc/self/fd:%s (dir fd %d)", list, dfd);
}

static void c_caps(char **a)
{
	static const char *f[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	char v[64];
	(void)a;
	for (size_t i = 0; i < 5; i++) {
		if (status_field(f[i], v, sizeof v) != 0) {
			bad("%s missing from /proc/self/status", f[i]);
			continue;
		}
		unsigned long long x = strtoull(v, NULL, 16);
		if (g_control) {
			if (i == 3 && x == 0)
				bad("control: CapBnd is already 0 outside");
			else if (i == 3)
				note("CapBnd %s outside", v);
			continue;
		}
		if (x != 0)
			bad("%s = %s, want 0", f[i], v);
		else
			note("%s 0", f[i]);
	}
	if (status_field("NoNewPrivs", v, sizeof v) != 0)
		bad("NoNewPrivs missing");
	else if (!g_control && strcmp(v, "1") != 0)
		bad("NoNewPrivs = %s, want 1", v);
	else if (!g_control)
		note("NoNewPrivs 1");
	if (status_field("Seccomp", v, sizeof v) != 0)
		bad("Seccomp missing");
	else if (!g_control && strcmp(v, "2") != 0)
		bad("Seccomp = %s, want 2 (filter)", v);
	else if (!g_control)
		note("Seccomp 2");
}

static void c_kill_init(char **a)
{
	(void)a;
	if (g_control) {
		pid_t c = spawn_sleeper();
		OK("kill(own child, 0)", kill(c, 0));
		OK("kill(own child, SIGKILL)", kill(c, SIGKILL));
		waitpid(c, NULL, 0);
		return;
	}
	ERR("kill(1, 0)", EPERM, kill(1, 0));
	ERR("kill(1, SIGKILL)", EPERM, kill(1, SIGKILL));
}

static void c_kill_all(char **a)
{
	pid_t host = (pid_t)atoi(a[0]);
	if (g_control) {
		/* never kill(-1) outside: the host sleeper must be signalable */
		OK("kill(host sleeper, 0)", kill(host, 0));
		return;
	}
	ERR("kill(host sleeper pid, 0)", ESRCH, kill(host, 0));
	ERR("kill(-1, SIGKILL)", ESRCH, kill(-1, SIGKILL));
}

/* ---- resource limits ---- */

static void c_fork_bomb(char **a)
{
	enum { CAP = 256, CONTROL_N = 100 };
	static pid_t kids[CAP];
	int n = 0, err = 0;
	(void)a;
	int lim = g_control ? CONTROL_N : CAP;
	fflush(stdout);
	while (n < lim) {
		pid_t p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (p < 0) {
			err = errno;
			break;
		}
		kids[n++] = p;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	if (g_control) {
		if (n == lim)
			note("%d children forked", n);
		else
			bad("control: fork failed after %d children: %s", n, ename(err));
		return;
	}
	if (n == lim)
		bad("%d children forked, no limit hit", n);
	else if (err != EAGAIN)
		bad("fork failed after %d children with %s, want EAGAIN", n, ename(err));
	else if (n > 64)
		bad("%d children forked before EAGAIN, want at most 64", n);
	else
		note("fork: EAGAIN after %d children", n);
}

static void c_memory_balloon(char **a)
{
	const size_t GiB = 1ul << 30, MiB = 1ul << 20;
	size_t touch = g_control ? 320 * MiB : GiB;
	(void)a;
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		char *m = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(errno == ENOMEM ? 10 : 11);
		for (size_t off = 0; off < touch; off += 4096)
			m[off] = 1;
		/* and malloc on top of it, for RLIMIT_AS */
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	if (g_control) {
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			note("1 GiB mapped, 320 MiB touched outside");
		else
			bad("control: balloon child status %#x", st);
		return;
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		note("the balloon was SIGKILLed (OOM)");
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 10)
		note("mmap 1 GiB: ENOMEM");
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		bad("1 GiB mapped and touched, no memory limit");
	else
		bad("balloon child status %#x", st);
}

static void c_tmp_fill(char **a)
{
	static char buf[1 << 20];
	const char *dir = g_control ? a[0] : "/tmp";
	char *p = cat(dir, "/escape-fill");
	size_t total = 0, lim = g_control ? 20u << 20 : 64u << 20;
	int err = 0;
	memset(buf, 'f', sizeof buf);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		bad("create %s: %s", p, ename(errno));
		return;
	}
	while (total < lim) {
		ssize_t n = write(fd, buf, sizeof buf);
		if (n < 0) {
			err = errno;
			break;
		}
		total += (size_t)n;
		if ((size_t)n < sizeof buf) {
			n = write(fd, buf, sizeof buf);
			if (n < 0) {
				err = errno;
				break;
			}
			total += (size_t)n;
		}
	}
	close(fd);
	unlink(p);
	if (g_control) {
		if (err)
			bad("control: %s after %zu bytes", ename(err), total);
		else
			note("%zu MiB written outside", total >> 20);
		return;
	}
	if (!err)
		bad("%zu MiB written to /tmp, no size limit", total >> 20);
	else if (err != ENOSPC)
		bad("%s after %zu bytes, want ENOSPC", ename(err), total);
	else if (total < (15u << 20) || total > (16u << 20))
		bad("ENOSPC after %zu bytes, want 15-16 MiB", total);
	else
		note("ENOSPC after %zu bytes", total);
}

/* ---- exec laundering, setuid ---- */

static void c_memfd_create(char **a)
{
	(void)a;
	if (g_control) {
		OK("memfd_create(0)", syscall(SYS_memfd_create, "x", 0));
		return;
	}
	ERR("memfd_create(0)", EPERM, syscall(SYS_memfd_create, "x", 0));
	ERR("memfd_create(MFD_CLOEXEC)", EPERM, syscall(SYS_memfd_create, "x", MFD_CLOEXEC));
	ERR("memfd_create(MFD_ALLOW_SEALING)", EPERM, syscall(SYS_memfd_create, "x", MFD_ALLOW_SEALING));
	ERR("memfd_create(MFD_EXEC)", EPERM, syscall(SYS_memfd_create, "x", MFD_EXEC));
}

static void c_memfd_exec(char **a)
{
	(void)a;
	if (g_control) {
		struct res x = CALL_(syscall(SYS_memfd_create, "x", MFD_CLOEXEC | MFD_EXEC));
		if (x.r == -1 && x.e == EINVAL)
			x = CALL_(syscall(SYS_memfd_create, "x", MFD_CLOEXEC));
		if (!chk_ok("memfd_create", x.r, x.e))
			return;
		if (copy_fd(true_prog(), (int)x.r) != 0) {
			bad("control: copy %s: %s", true_prog(), ename(errno));
			return;
		}
		struct exec_arg ea = { "execveat(memfd, AT_EMPTY_PATH)", NULL, (int)x.r, 0 };
		try_exec(&ea);
		return;
	}
	struct res x = CALL_(syscall(SYS_memfd_create, "x", MFD_CLOEXEC | MFD_NOEXEC_SEAL));
	if (x.r == -1 && x.e == EPERM) {
		note("memfd_create(MFD_NOEXEC_SEAL): EPERM (memfd refused outright)");
		return;
	}
	if (!chk_ok("memfd_create(MFD_NOEXEC_SEAL)", x.r, x.e))
		return;
	int fd = (int)x.r;
	if (copy_fd(true_prog(), fd) != 0)
		bad("copy %s into the memfd: %s", true_prog(), ename(errno));
	ERR("fchmod(memfd, 0755)", EPERM, fchmod(fd, 0755));
	struct exec_arg ea = { "execveat(memfd, AT_EMPTY_PATH)", NULL, fd, EACCES };
	try_exec(&ea);
}

static void exec_written(const char *dir, const char *what)
{
	char *p = cat(dir, "/escape-exec");
	if (!copy_file(true_prog(), p))
		return;
	struct exec_arg ea = { what, p, -1, EACCES };
	try_exec(&ea);
	unlink(p);
}

static void c_tmp_exec(char **a)
{
	exec_written(g_control ? a[0] : "/tmp", "exec a program written to /tmp");
}

static void c_shm_exec(char **a)
{
	exec_written(g_control ? a[0] : "/dev/shm", "exec a program written to /dev/shm");
}

static void c_ws_exec(char **a)
{
	exec_written(a[0], "exec a program written to the workspace");
}

static void c_chmod_suid(char **a)
{
	char *p = cat(a[0], "/escape-suid");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	struct stat st;
	if (fd < 0) {
		bad("create %s: %s", p, ename(errno));
		return;
	}
	DENY("fchmod 04755", EPERM, fchmod(fd, 04755));
	DENY("chmod 04755", EPERM, chmod(p, 04755));
	DENY("fchmodat 04755", EPERM, fchmodat(AT_FDCWD, p, 04755, 0));
	if (g_control)
		NOT("fchmodat2 04755", EPERM, syscall(NR_fchmodat2, AT_FDCWD, p, 04755, 0));
	else
		ERR("fchmodat2 04755", EPERM, syscall(NR_fchmodat2, AT_FDCWD, p, 04755, 0));
	if (!g_control) {
		ERR("fchmod 02755 (setgid)", EPERM, fchmod(fd, 02755));
		if (fstat(fd, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
			bad("the file is now mode %o", st.st_mode & 07777);
	}
	close(fd);
	unlink(p);
}

/* ---- kernel interfaces ---- */

static void c_bpf(char **a)
{
	/* A non-zero tail past the kernel's bpf_attr: E2BIG before any
	 * privilege check, so only a filter answers EPERM. */
	static unsigned char attr[4096];
	(void)a;
	attr[sizeof attr - 1] = 1;
	if (g_control)
		NOT("bpf(BPF_PROG_LOAD, oversized attr)", EPERM, syscall(SYS_bpf, 5, attr, sizeof attr));
	else
		ERR("bpf(BPF_PROG_LOAD, oversized attr)", EPERM, syscall(SYS_bpf, 5, attr, sizeof attr));
	if (!g_control)
		ERR("bpf(BPF_MAP_CREATE)", EPERM, syscall(SYS_bpf, 0, attr, 64));
}

static void c_perf_event_open(char **a)
{
	struct perf_event_attr pe;
	(void)a;
	memset(&pe, 0, sizeof pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.size = sizeof pe;
	pe.config = PERF_COUNT_SW_TASK_CLOCK;
	pe.disabled = 1;
	pe.exclude_kernel = 1;
	pe.exclude_hv = 1;
	struct res x = CALL_(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
	if (x.r >= 0)
		close((int)x.r);
	if (g_control)
		chk_not("perf_event_open(self, task clock)", EPERM, x.r, x.e);
	else
		chk_err("perf_event_open(self, task clock)", EPERM, x.r, x.e);
}

static void c_userfaultfd(char **a)
{
	(void)a;
	struct res x = CALL_(syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | O_CLOEXEC));
	if (x.r >= 0)
		close((int)x.r);
	if (g_control) {
		chk_ok("userfaultfd(UFFD_USER_MODE_ONLY)", x.r, x.e);
		return;
	}
	chk_err("userfaultfd(UFFD_USER_MODE_ONLY)", EPERM, x.r, x.e);
	ERR("userfaultfd(0)", EPERM, syscall(SYS_userfaultfd, O_CLOEXEC));
}

static void c_keyctl(char **a)
{
	(void)a;
	if (g_control) {
		OK("keyctl(GET_KEYRING_ID, user)", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
		NOT("request_key", EPERM, syscall(SYS_request_key, "user", "cairn-escape-none", NULL, 0));
		return;
	}
	ERR("keyctl(GET_KEYRING_ID, user)", EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
	ERR("add_key", EPERM, syscall(SYS_add_key, "user", "cairn-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING));
	ERR("request_key", EPERM, syscall(SYS_request_key, "user", "cairn-escape-none", NULL, 0));
}

static void c_open_by_handle(char **a)
{
	/* a bogus mount fd: EBADF before any privilege check without a filter */
	struct {
		unsigned int bytes;
		int type;
		unsigned char h[128];
	} fh = { 8, 1, { 0 } };
	(void)a;
	if (g_control)
		NOT("open_by_handle_at(bogus fd)", EPERM, syscall(SYS_open_by_handle_at, 999, &fh, O_RDONLY));
	else
		ERR("open_by_handle_at(bogus fd)", EPERM, syscall(SYS_open_by_handle_at, 999, &fh, O_RDONLY));
	if (!g_control)
		ERR("open_by_handle_at(AT_FDCWD)", EPERM, syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
}

static void listener_child(void *p)
{
	(void)p;
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, f };
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	struct res x = CALL_(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
	if (g_control)
		chk_ok("seccomp(NEW_LISTENER)", x.r, x.e);
	else
		chk_err("seccomp(NEW_LISTENER)", EPERM, x.r, x.e);
}

static void c_seccomp_listener(char **a)
{
	(void)a;
	in_child(listener_child, NULL);
}

static void c_self_exe_write(char **a)
{
	(void)a;
	/* A running executable is write-denied before the mount is consulted. */
	ERR("open /proc/self/exe for writing", ETXTBSY, open_close("/proc/self/exe", O_WRONLY, 0));
	if (g_control)
		OK("utimensat /proc/self/exe", utimensat(AT_FDCWD, "/proc/self/exe", NULL, 0));
	else {
		ERR("utimensat /proc/self/exe", EROFS, utimensat(AT_FDCWD, "/proc/self/exe", NULL, 0));
		ERR("truncate /proc/self/exe", EROFS, truncate("/proc/self/exe", 0));
	}
}

static void c_pidfd_getfd(char **a)
{
	(void)a;
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pfd < 0)
		bad("pidfd_open(self): %s", ename(errno));
	if (g_control) {
		OK("pidfd_getfd(self, 0)", syscall(SYS_pidfd_getfd, pfd, 0, 0));
		ERR("pidfd_getfd(bogus fd)", EBADF, syscall(SYS_pidfd_getfd, 999, 0, 0));
		return;
	}
	ERR("pidfd_getfd(self, 0)", EPERM, syscall(SYS_pidfd_getfd, pfd, 0, 0));
	ERR("pidfd_getfd(bogus fd)", EPERM, syscall(SYS_pidfd_getfd, 999, 0, 0));
}

static void c_x86_legacy(char **a)
{
	char ldt[64];
	(void)a;
	if (g_control) {
		OK("modify_ldt(read)", syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
		NOT("iopl(0)", EPERM, syscall(SYS_iopl, 0));
		NOT("ioperm(0x80, 1, off)", EPERM, syscall(SYS_ioperm, 0x80, 1, 0));
		NOT("uselib(absent)", EPERM, syscall(NR_uselib, "/nonexistent-escape"));
		return;
	}
	ERR("modify_ldt(read)", EPERM, syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
	ERR("iopl(0)", EPERM, syscall(SYS_iopl, 0));
	ERR("ioperm(0x80, 1, off)", EPERM, syscall(SYS_ioperm, 0x80, 1, 0));
	ERR("uselib(absent)", EPERM, syscall(NR_uselib, "/nonexistent-escape"));
}

/* ---- teardown ---- */

static int daemon_loop(const char *token, const char *file)
{
	int nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	for (int i = 0; i < 1200; i++) { /* gives up by itself after 60 s */
		int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0) {
			char line[128];
			int n = snprintf(line, sizeof line, "%s %d\n", token, i);
			if (write(fd, line, (size_t)n) < 0)
				(void)0;
			close(fd);
		}
		sleep_ms(50);
	}
	return 0;
}

static off_t file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? st.st_size : -1;
}

static void c_daemon(char **a)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		bad("pipe: %s", ename(errno));
		return;
	}
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pid_t g = fork();
		if (g == 0) {
			setsid();
			char *argv[] = { "escape-probe", "--daemon-loop", a[0], a[1], NULL };
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		if (write(pfd[1], &g, sizeof g) != sizeof g)
			_exit(1);
		_exit(0);
	}
	pid_t g = -1;
	close(pfd[1]);
	if (read(pfd[0], &g, sizeof g) != sizeof g)
		bad("no daemon pid");
	close(pfd[0]);
	waitpid(c, NULL, 0);
	off_t s0 = -1;
	for (int i = 0; i < 40 && s0 <= 0; i++) {
		sleep_ms(25);
		s0 = file_size(a[1]);
	}
	sleep_ms(250);
	off_t s1 = file_size(a[1]);
	if (s0 <= 0 || s1 <= s0)
		bad("the daemon is not appending (%lld then %lld bytes)", (long long)s0, (long long)s1);
	else
		note("daemon pid %d appending", (int)g);
}

static void c_env_leak(char **a)
{
	const char *v = getenv(a[0]);
	if (g_control) {
		if (v && *v)
			note("%s is set outside", a[0]);
		else
			bad("control: %s is not set outside", a[0]);
		return;
	}
	if (v)
		bad("%s leaked into the sandbox", a[0]);
	else
		note("%s absent", a[0]);
	extern char **environ;
	int n = 0;
	for (char **e = environ; *e; e++)
		n++;
	note("%d variables", n);
}

static int numeric_proc_entries(int *first, int *second)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	*first = *second = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9') {
			int p = atoi(de->d_name);
			if (n == 0)
				*first = p;
			else if (n == 1)
				*second = p;
			n++;
		}
	closedir(d);
	return n;
}

static void c_pid_ns_view(char **a)
{
	int p1, p2;
	(void)a;
	int n = numeric_proc_entries(&p1, &p2);
	if (g_control) {
		if (n > 2)
			note("%d processes visible outside", n);
		else
			bad("control: %d processes visible outside", n);
		return;
	}
	if (getpid() != 2)
		bad("the workload is pid %d, want 2", (int)getpid());
	if (getppid() != 1)
		bad("the workload's parent is pid %d, want 1", (int)getppid());
	if (n != 2 || p1 != 1 || p2 != 2)
		bad("/proc lists %d processes (%d, %d...), want 1 and 2", n, p1, p2);
	else
		note("pid 2 under pid 1; /proc lists only 1 and 2");
}

static void c_netns_view(char **a)
{
	/* /proc/net/dev, not if_nameindex(): netlink is refused inside */
	FILE *f = fopen("/proc/net/dev", "re");
	char line[512];
	int n = 0, lo = 0;
	(void)a;
	if (!f) {
		bad("open /proc/net/dev: %s", ename(errno));
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		char *name = line + strspn(line, " ");
		n++;
		if (strcmp(name, "lo") == 0)
			lo = 1;
		else if (!g_control)
			bad("interface %s is present", name);
	}
	fclose(f);
	if (g_control) {
		if (n < 2)
			skip("the host has no interface but lo");
		note("%d interfaces outside", n);
		return;
	}
	if (!lo) {
		bad("no lo");
		return;
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq r;
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &r) != 0)
		bad("SIOCGIFFLAGS lo: %s", ename(errno));
	else if (!(r.ifr_flags & IFF_UP))
		bad("lo is down");
	else
		note("only lo, up");
	if (s >= 0)
		close(s);
}

static void c_boxdir_view(char **a)
{
	struct stat st;
	char *priv = cat(a[0], "/private");
	if (g_control) {
		OK("stat the box's private dir on the host", stat(priv, &st));
		return;
	}
	DIR *d = opendir(a[0]);
	if (!d) {
		bad("list the box dir: %s", ename(errno));
		return;
	}
	struct dirent *de;
	int bin = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, "bin") == 0)
			bin = 1;
		else if (strcmp(de->d_name, "trust") != 0)
			bad("the box dir shows %s", de->d_name);
	}
	closedir(d);
	if (!bin)
		note("bin/ not shown");
	/* trust/ shows the gateway's CA certificate and nothing else: no key,
	 * and not writable */
	char *trust = cat(a[0], "/trust");
	if ((d = opendir(trust)) != NULL) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
			    strcmp(de->d_name, "cert.pem") != 0)
				bad("trust/ shows %s", de->d_name);
		closedir(d);
		char *cert = cat(trust, "/cert.pem");
		char pem[8192];
		int fd = open(cert, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, pem, sizeof(pem) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			pem[n] = '\0';
			if (strstr(pem, "PRIVATE KEY") || !strstr(pem, "BEGIN CERTIFICATE"))
				bad("trust/cert.pem holds something other than a certificate");
		} else {
			bad("read trust/cert.pem: %s", ename(errno));
		}
		ERR("write the CA certificate", EACCES, open_close(cert, O_WRONLY, 0));
	}
	ERR("stat the box's private dir", ENOENT, stat(priv, &st));
	ERR("create in the box dir", EROFS, open_close(cat(a[0], "/escape-new"), O_WRONLY | O_CREAT, 0600));
}

/* ---- the table ---- */

struct pcase {
	const char *name;
	int nargs;
	const char *args;
	void (*fn)(char **);
};

static const struct pcase cases[] = {
	{ "write-home", 1, "HOMEDIR", c_write_home },
	{ "read-home-secret", 1, "FILE", c_read_home_secret },
	{ "write-real-home", 1, "PASSWD_HOME", c_write_real_home },
	{ "write-read-grant", 2, "RODIR ROFILE", c_write_read_grant },
	{ "write-grant-parent", 1, "DIR", c_write_grant_parent },
	{ "host-tmp", 1, "HOST_TMP_FILE", c_host_tmp },
	{ "deny-read", 2, "SECRET DENYDIR", c_deny_read },
	{ "deny-file", 1, "FILE", c_deny_file },
	{ "deny-symlink", 1, "LINK", c_deny_symlink },
	{ "deny-proc-self-root", 1, "SECRET", c_deny_proc_self_root },
	{ "deny-proc1", 1, "SECRET", c_deny_proc1 },
	{ "deny-proc-supervisor", 2, "SECRET PID", c_deny_proc_supervisor },
	{ "hardlink-exdev", 2, "ROFILE WSDIR", c_hardlink },
	{ "deny-rename", 1, "DENYDIR", c_deny_rename },
	{ "proc-sys-write", 0, "", c_proc_sys_write },
	{ "sysrq-write", 0, "", c_sysrq_write },
	{ "sys-absent", 0, "", c_sys_absent },
	{ "run-absent", 0, "", c_run_absent },
	{ "host-socket", 1, "PATH", c_host_socket },
	{ "ptrace", 0, "", c_ptrace },
	{ "proc1-mem", 0, "", c_proc1_mem },
	{ "proc1-environ-fd", 0, "", c_proc1_environ_fd },
	{ "proc1-exe", 0, "", c_proc1_exe },
	{ "process-vm", 0, "", c_process_vm },
	{ "io-uring-setup", 0, "", c_io_uring_setup },
	{ "io-uring-enter", 0, "", c_io_uring_enter },
	{ "tiocsti", 0, "", c_tiocsti },
	{ "tiocsti-highbits", 0, "", c_tiocsti_highbits },
	{ "tioclinux", 0, "", c_tioclinux },
	{ "dev-block", 1, "BLOCKDEV", c_dev_block },
	{ "dev-kmsg", 0, "", c_dev_kmsg },
	{ "dev-mem", 0, "", c_dev_mem },
	{ "dev-kvm", 0, "", c_dev_kvm },
	{ "dev-fuse", 0, "", c_dev_fuse },
	{ "dev-list", 0, "", c_dev_list },
	{ "mount", 3, "RODIR WSDIR DENYDIR", c_mount },
	{ "umount", 2, "RODIR DENYDIR", c_umount },
	{ "open-tree", 1, "RODIR", c_open_tree },
	{ "fsopen", 0, "", c_fsopen },
	{ "pivot-chroot", 0, "", c_pivot_chroot },
	{ "unshare-user", 0, "", c_unshare_user },
	{ "unshare-ns", 0, "", c_unshare_ns },
	{ "clone-newuser", 0, "", c_clone_newuser },
	{ "clone3", 0, "", c_clone3 },
	{ "setns", 0, "", c_setns },
	{ "abstract-unix", 1, "NAME", c_abstract_unix },
	{ "unix-path", 1, "PATH", c_unix_path },
	{ "x32", 0, "", c_x32 },
	{ "int80", 0, "", c_int80 },
	{ "af-packet", 0, "", c_af_packet },
	{ "af-netlink", 0, "", c_af_netlink },
	{ "af-vsock", 0, "", c_af_vsock },
	{ "af-other", 0, "", c_af_other },
	{ "raw-inet", 0, "", c_raw_inet },
	{ "tcp-loopback", 1, "PORT", c_tcp_loopback },
	{ "tcp-external", 2, "ADDR PORT", c_tcp_external },
	{ "udp-external", 0, "", c_udp_external },
	{ "fd-leak", 0, "", c_fd_leak },
	{ "caps", 0, "", c_caps },
	{ "kill-init", 0, "", c_kill_init },
	{ "kill-all", 1, "HOST_SLEEPER_PID", c_kill_all },
	{ "fork-bomb", 0, "", c_fork_bomb },
	{ "memory-balloon", 0, "", c_memory_balloon },
	{ "tmp-fill", 1, "SCRATCHDIR", c_tmp_fill },
	{ "memfd-create", 0, "", c_memfd_create },
	{ "memfd-exec", 0, "", c_memfd_exec },
	{ "tmp-exec", 1, "SCRATCHDIR", c_tmp_exec },
	{ "shm-exec", 1, "SCRATCHDIR", c_shm_exec },
	{ "ws-exec", 1, "WSDIR", c_ws_exec },
	{ "chmod-suid", 1, "WSDIR", c_chmod_suid },
	{ "bpf", 0, "", c_bpf },
	{ "perf-event-open", 0, "", c_perf_event_open },
	{ "userfaultfd", 0, "", c_userfaultfd },
	{ "keyctl", 0, "", c_keyctl },
	{ "open-by-handle", 0, "", c_open_by_handle },
	{ "seccomp-listener", 0, "", c_seccomp_listener },
	{ "self-exe-write", 0, "", c_self_exe_write },
	{ "pidfd-getfd", 0, "", c_pidfd_getfd },
	{ "x86-legacy", 0, "", c_x86_legacy },
	{ "daemon", 2, "TOKEN FILE", c_daemon },
	{ "env-leak", 1, "VARNAME", c_env_leak },
	{ "pid-ns-view", 0, "", c_pid_ns_view },
	{ "netns-view", 0, "", c_netns_view },
	{ "boxdir-view", 1, "BOXDIR", c_boxdir_view },
};

/* ---- helper servers ---- */

static int serve(int ls)
{
	if (listen(ls, 64) != 0) {
		perror("listen");
		return 1;
	}
	alarm(900); /* never outlives a forgotten suite by long */
	for (;;) {
		int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			close(c);
	}
}

static int serve_tcp(const char *addr, const char *portfile)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof a;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 || ls < 0 ||
	    bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 64) != 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &len) != 0) {
		perror("serve-tcp");
		return 1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, portfile) != 0) {
		perror(portfile);
		return 1;
	}
	return serve(ls);
}

static int serve_unix(const char *name, bool abstract)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (abstract) {
		strncpy(a.sun_path + 1, name, sizeof a.sun_path - 2);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	} else {
		strncpy(a.sun_path, name, sizeof a.sun_path - 1);
		len = sizeof a;
	}
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, len) != 0) {
		perror("serve-unix");
		return 1;
	}
	return serve(ls);
}

static int usage(void)
{
	fprintf(stderr, "usage: escape-probe [--control] CASE [ARGS] | --list\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			printf("%s%s%s\n", cases[i].name, cases[i].nargs ? " " : "", cases[i].args);
		return 0;
	}
	if (strcmp(argv[1], "--serve-tcp") == 0 && argc == 4)
		return serve_tcp(argv[2], argv[3]);
	if (strcmp(argv[1], "--serve-abstract") == 0 && argc == 3)
		return serve_unix(argv[2], true);
	if (strcmp(argv[1], "--serve-unix") == 0 && argc == 3)
		return serve_unix(argv[2], false);
	if (strcmp(argv[1], "--daemon-loop") == 0 && argc == 4)
		return daemon_loop(argv[2], argv[3]);
	int i = 1;
	if (strcmp(argv[1], "--control") == 0) {
		g_control = true;
		i++;
	}
	g_mediated = !g_control && getenv("CAIRN_ESCAPE_MEDIATED") != NULL &&
		     strcmp(getenv("CAIRN_ESCAPE_MEDIATED"), "1") == 0;
	if (i >= argc)
		return usage();
	const struct pcase *c = NULL;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		if (strcmp(cases[k].name, argv[i]) == 0)
			c = &cases[k];
	if (!c) {
		fprintf(stderr, "escape-probe: unknown case %s\n", argv[i]);
		return 2;
	}
	g_case = c->name;
	if (argc - i - 1 != c->nargs) {
		printf("FAIL %s: wants %d argument(s): %s\n", c->name, c->nargs, c->args);
		return 1;
	}
	S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		printf("FAIL %s: mmap: %s\n", c->name, ename(errno));
		return 1;
	}
	memset(S, 0, sizeof *S);
	c->fn(argv + i + 1);
	return finish();
}
