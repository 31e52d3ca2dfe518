/* test_filters.c - the workload's seccomp deny filter and its Landlock
 * ruleset, checked against the running kernel.
 *
 * Every probe runs in a forked child: no_new_privs, then the filter or the
 * ruleset, then the call; the child's exit status is the errno it saw (0:
 * the call worked).  Every refusal has a control: the same call in a child
 * without the sandbox must not fail with the errno asserted inside, so a
 * refusal the kernel would have given anyway proves nothing and fails.
 *
 * Calls that need privilege outside (fsopen, pivot_root, AF_PACKET ...) are
 * probed, with their controls, inside a fresh user, mount and network
 * namespace, so the test means the same as root and as an unprivileged user.
 * Ends with one line "N passed, M failed"; exits 1 when M > 0. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "filter.h"
#include "refusal.h"
#include "landlock.h"

extern char **environ;

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define X32_BIT 0x40000000L
#define NR_FCHMODAT2 452
#define NOWHERE "/nonexistent-cairn-test"

/* Exit codes of a probe child beyond errno values. */
enum { R_SETUP = 250, R_SKIP = 251, R_WRONG = 252 };
#define R_SIGNAL 1000   /* run() adds the signal number */

enum sandbox { SB_NONE, SB_FILTER, SB_LANDLOCK, SB_LANDLOCK_ABI1 };
enum { PRE_USERNS = 1 };        /* enter user+mount+net namespaces first */

static int n_pass, n_fail;

/* The fixture, made by main before any probe. */
static char g_dir[64];          /* the temp dir T */
static char g_path[16][128];    /* paths beneath it, see fx_path() */
static struct ct_rule g_rules[16];
static size_t g_n_rules;
static int g_abi;
static char g_abstract[64];     /* abstract name of the parent's listener */

enum { P_A, P_AF, P_ATRUE, P_B, P_BS1, P_BS2, P_C, P_CF, P_CG, P_X, P_XTRUE, P_M, P_IO, P_MODE };

static const char *fx_path(int i)
{
	return g_path[i];
}

/* ------------------------------------------------------------ reporting */

static const char *ename(int e)
{
	static char buf[32];
	const char *n;

	switch (e) {
	case 0:
		return "success";
	case R_SETUP:
		return "sandbox setup failed";
	case R_SKIP:
		return "skipped";
	case R_WRONG:
		return "wrong result";
	}
	if (e >= R_SIGNAL) {
		snprintf(buf, sizeof(buf), "signal %d", e - R_SIGNAL);
		return buf;
	}
	n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	ok ? n_pass++ : n_fail++;
}

static void skip(const char *name, const char *why)
{
	printf("skip - %s: %s\n", name, why);
}

/* ------------------------------------------------------------ children */

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Root of a fresh user namespace (mapped to who we are), with a private
 * mount namespace holding a tmpfs at P_M and an empty network namespace. */
static int enter_userns(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return -1;
	if (write_file("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	return mount("tmpfs", fx_path(P_M), "tmpfs", 0, "size=64k");
}

static int sandbox(enum sandbox sb)
{
	char err[256];

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if (sb == SB_FILTER && ct_filter_install(err, sizeof(err)) < 0) {
		fprintf(stderr, "  ct_filter_install: %s\n", err);
		return -1;
	}
	/* As an ABI 1 kernel would be asked: newer rights must be stripped from
	 * the rules, or landlock_add_rule refuses them. */
	if ((sb == SB_LANDLOCK || sb == SB_LANDLOCK_ABI1) &&
	    ct_landlock_apply(sb == SB_LANDLOCK ? g_abi : 1, g_rules, g_n_rules, err,
			      sizeof(err)) < 0) {
		fprintf(stderr, "  ct_landlock_apply: %s\n", err);
		return -1;
	}
	return 0;
}

/* Wait for pid; its exit code, or R_SIGNAL + signal. */
static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return R_SETUP;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return R_SIGNAL + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

typedef int (*probe_fn)(void);

/* Run fn in a child under sb; what it returned.  Children leave with
 * _exit: no atexit handlers, no stdio flush, no leak check under ASan. */
static int run(probe_fn fn, unsigned pre, enum sandbox sb)
{
	pid_t pid = fork();

	if (pid < 0)
		return R_SETUP;
	if (pid == 0) {
		if ((pre & PRE_USERNS) && enter_userns() < 0)
			_exit(R_SKIP);
		if (sandbox(sb) < 0)
			_exit(R_SETUP);
		_exit(fn());
	}
	return reap(pid);
}

static int res(long r)
{
	return r < 0 ? errno : 0;
}

/* fn must give want under sb, and anything but want without it. */
static void expect_refused(const char *name, probe_fn fn, unsigned pre, enum sandbox sb, int want)
{
	int in = run(fn, pre, sb);
	int out = run(fn, pre, SB_NONE);

	if (in == R_SKIP || out == R_SKIP) {
		skip(name, (pre & PRE_USERNS) ? "no user namespace here" : "not testable here");
		return;
	}
	check(in == want, "%s: %s inside (want %s)", name, ename(in), ename(want));
	check(out != want && out != R_SETUP, "%s: control: %s outside", name, ename(out));
}

static void expect_works(const char *name, probe_fn fn, unsigned pre, enum sandbox sb)
{
	int in = run(fn, pre, sb);

	if (in == R_SKIP) {
		skip(name, "not testable here");
		return;
	}
	check(in == 0, "%s: %s inside (want success)", name, ename(in));
}

/* ------------------------------------------------------------ filter probes */

static int p_io_uring_setup(void)
{
	uint8_t params[120] = { 0 };    /* struct io_uring_params */

	return res(syscall(SYS_io_uring_setup, 1, params));
}

static int p_io_uring_enter(void)
{
	return res(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
}

/* The prober is a grandchild attaching to its parent, the probe child,
 * which waits for it; on success it takes the stop and detaches cleanly. */
static int p_ptrace_parent(void)
{
	pid_t parent = getpid();
	pid_t g = fork();

	if (g < 0)
		return R_SETUP;
	if (g == 0) {
		int st;

		if (ptrace(PTRACE_ATTACH, parent, 0, 0) < 0)
			_exit(errno);
		waitpid(parent, &st, __WALL);
		ptrace(PTRACE_DETACH, parent, 0, 0);
		_exit(0);
	}
	return reap(g);
}

static int p_ptrace_child(void)
{
	pid_t g = fork();
	int e;

	if (g < 0)
		return R_SETUP;
	if (g == 0) {
		pause();
		_exit(0);
	}
	e = res(ptrace(PTRACE_ATTACH, g, 0, 0));
	if (e == 0)
		waitpid(g, NULL, __WALL);
	kill(g, SIGKILL);
	reap(g);
	return e;
}

static int p_process_vm_readv(void)
{
	char src[8] = "abcdefg", dst[8] = "";
	struct iovec l = { dst, sizeof(dst) }, r = { src, sizeof(src) };

	return res(process_vm_readv(getpid(), &l, 1, &r, 1, 0));
}

static int p_process_vm_writev(void)
{
	char src[8] = "abcdefg", dst[8] = "";
	struct iovec l = { src, sizeof(src) }, r = { dst, sizeof(dst) };

	return res(process_vm_writev(getpid(), &l, 1, &r, 1, 0));
}

/* Arguments the kernel rejects before any privilege check, so the control
 * gives EFAULT / EBADF rather than EPERM for an unprivileged user too. */
static int p_bpf(void)
{
	return res(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 8));
}

static int p_perf_event_open(void)
{
	return res(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}

static int p_userfaultfd(void)
{
	return res(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
}

static int p_pidfd_getfd(void)
{
	return res(syscall(SYS_pidfd_getfd, -1, 0, 0));
}

static int p_keyctl(void)
{
	/* KEYCTL_GET_KEYRING_ID of the process keyring, not creating it */
	return res(syscall(SYS_keyctl, 0, -2, 0));
}

static int p_add_key(void)
{
	/* into the process keyring, which dies with the probe */
	return res(syscall(SYS_add_key, "user", "cairn-test", "x", 1, -2));
}

static int p_request_key(void)
{
	return res(syscall(SYS_request_key, "user", "cairn-test-none", NULL, 0));
}

static int p_mount(void)
{
	return res(mount("none", NOWHERE, "tmpfs", 0, NULL));
}

static int p_umount2(void)
{
	return res(umount2(NOWHERE, 0));
}

static int p_open_tree(void)
{
	return res(syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLOEXEC));
}

static int p_fsopen(void)
{
	return res(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
}

static int p_fsmount(void)
{
	return res(syscall(SYS_fsmount, -1, 0, 0));
}

static int p_fspick(void)
{
	return res(syscall(SYS_fspick, AT_FDCWD, fx_path(P_M), 0));
}

static int p_move_mount(void)
{
	return res(syscall(SYS_move_mount, AT_FDCWD, NOWHERE, AT_FDCWD, NOWHERE, 0));
}

/* An empty change on the prelude's own tmpfs. */
static int p_mount_setattr(void)
{
	uint64_t attr[4] = { 0 };       /* struct mount_attr */

	return res(syscall(SYS_mount_setattr, AT_FDCWD, fx_path(P_M), 0, attr, sizeof(attr)));
}

static int p_pivot_root(void)
{
	return res(syscall(SYS_pivot_root, NOWHERE, NOWHERE));
}

static int p_chroot(void)
{
	return res(chroot(NOWHERE));
}

static int p_setns(void)
{
	return res(setns(-1, 0));
}

static int p_unshare_user(void)
{
	return res(unshare(CLONE_NEWUSER));
}

static int p_unshare_ns(void)
{
	return res(unshare(CLONE_NEWNS));
}

static int p_unshare_net(void)
{
	return res(unshare(CLONE_NEWNET));
}

/* Raw clone without a new stack: the child runs on a copy of ours and
 * leaves at once. */
static int raw_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);

	if (r == 0)
		syscall(SYS_exit_group, 0);
	if (r < 0)
		return errno;
	return reap((pid_t)r);
}

static int p_clone_user(void)
{
	return raw_clone(CLONE_NEWUSER);
}

static int p_clone_ns(void)
{
	return raw_clone(CLONE_NEWNS);
}

static int p_clone3(void)
{
	uint64_t args[8] = { 0 };       /* struct clone_args, version 0 */
	long r;

	args[4] = SIGCHLD;              /* exit_signal */
	r = syscall(SYS_clone3, args, sizeof(args));
	if (r == 0)
		syscall(SYS_exit_group, 0);
	if (r < 0)
		return errno;
	return reap((pid_t)r);
}

/* Needs the user namespace prelude: a tmpfs owned by it lets the handle
 * reach the argument checks (EINVAL for an empty handle) without
 * CAP_DAC_READ_SEARCH on the host. */
static int p_open_by_handle_at(void)
{
	struct {
		unsigned int bytes;
		int type;
		unsigned char h[8];
	} fh = { 0, 0, { 0 } };
	int mfd = open(fx_path(P_M), O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (mfd < 0)
		return R_SETUP;
	return res(syscall(SYS_open_by_handle_at, mfd, &fh, O_RDONLY));
}

static int p_name_to_handle_at(void)
{
	struct {
		unsigned int bytes;
		int type;
		unsigned char h[128];
	} fh = { 128, 0, { 0 } };
	int mnt;

	return res(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mnt, 0));
}

static int p_clock_settime(void)
{
	struct timespec ts = { 1, 0 };

	/* CLOCK_MONOTONIC cannot be set: EINVAL outside, no clock changes. */
	return res(clock_settime(CLOCK_MONOTONIC, &ts));
}

static int p_adjtimex(void)
{
	struct timex tx = { .modes = 0 };       /* a read */

	return res(adjtimex(&tx));
}

static int p_modify_ldt(void)
{
#ifdef SYS_modify_ldt
	char buf[16];

	return res(syscall(SYS_modify_ldt, 0, buf, sizeof(buf)));
#else
	return R_SKIP;
#endif
}

static int p_iopl(void)
{
#ifdef SYS_iopl
	return res(syscall(SYS_iopl, 0));       /* level 0: no privilege needed */
#else
	return R_SKIP;
#endif
}

static int p_ioperm(void)
{
#ifdef SYS_ioperm
	return res(syscall(SYS_ioperm, 0x80, 1, 0));    /* turning off needs none */
#else
	return R_SKIP;
#endif
}

/* A pty that is our controlling terminal, so TIOCSTI works outside for an
 * unprivileged user too (it wants CAP_SYS_ADMIN on any other tty). */
static int ctty(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	const char *name;

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || (name = ptsname(m)) == NULL)
		return -1;
	if (setsid() < 0)
		return -1;
	return open(name, O_RDWR | O_CLOEXEC);
}

static int p_tiocsti(void)
{
	char c = ' ';
	int fd = ctty();

	return fd < 0 ? R_SETUP : res(ioctl(fd, TIOCSTI, &c));
}

/* CVE-2019-10063: the kernel compares only the low 32 bits of the request. */
static int p_tiocsti_high(void)
{
	char c = ' ';
	int fd = ctty();

	return fd < 0 ? R_SETUP
		      : res(syscall(SYS_ioctl, fd, 0xffffffff00000000UL | TIOCSTI, &c));
}

static int p_tioclinux(void)
{
	char sub = 0;
	int fd = ctty();

	return fd < 0 ? R_SETUP : res(ioctl(fd, TIOCLINUX, &sub));
}

static int sock(long domain, int type, int proto)
{
	long fd = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, proto);

	return res(fd);
}

static int p_socket_packet(void)
{
	return sock(AF_PACKET, SOCK_DGRAM, 0);
}

static int p_socket_netlink(void)
{
	return sock(AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */);
}

static int p_socket_vsock(void)
{
	return sock(AF_VSOCK, SOCK_STREAM, 0);
}

/* The kernel reads an int: 0x100000001 is AF_UNIX to it. */
static int p_socket_high(void)
{
	return sock(0x100000000L | AF_UNIX, SOCK_STREAM, 0);
}

static int p_socket_inet(void)
{
	return sock(AF_INET, SOCK_STREAM, 0);
}

static int p_socket_inet6(void)
{
	int e = sock(AF_INET6, SOCK_STREAM, 0);

	return e == EAFNOSUPPORT ? R_SKIP : e;  /* IPv6 disabled on this host */
}

static int p_socket_unix(void)
{
	return sock(AF_UNIX, SOCK_STREAM, 0);
}

static int p_socketpair_netlink(void)
{
	int sv[2];

	return res(socketpair(AF_NETLINK, SOCK_RAW, 0, sv));
}

static int p_socketpair_unix(void)
{
	int sv[2];

	return res(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
}

static int memfd(unsigned flags)
{
	return res(syscall(SYS_memfd_create, "cairn-test", flags));
}

static int p_memfd_plain(void)
{
	return memfd(MFD_CLOEXEC);
}

static int p_memfd_zero(void)
{
	return memfd(0);
}

static int p_memfd_exec(void)
{
	return memfd(MFD_CLOEXEC | MFD_EXEC);
}

static int p_memfd_noexec(void)
{
	return memfd(MFD_CLOEXEC | MFD_NOEXEC_SEAL);
}

static int mode_fd(void)
{
	return open(fx_path(P_MODE), O_RDONLY | O_CLOEXEC);
}

static int p_fchmod_suid(void)
{
	int fd = mode_fd();

	return fd < 0 ? R_SETUP : res(fchmod(fd, 04755));
}

static int p_fchmod_plain(void)
{
	int fd = mode_fd();

	return fd < 0 ? R_SETUP : res(fchmod(fd, 0644));
}

static int p_chmod_sgid(void)
{
	return res(chmod(fx_path(P_MODE), 02755));
}

static int p_fchmodat_suid(void)
{
	return res(syscall(SYS_fchmodat, AT_FDCWD, fx_path(P_MODE), 04755));
}

static int p_fchmodat2_suid(void)
{
	long r = syscall(NR_FCHMODAT2, AT_FDCWD, fx_path(P_MODE), 04755, 0);

	return r < 0 && errno == ENOSYS ? R_SKIP : res(r);     /* before 6.6 */
}

static int p_chmod_plain(void)
{
	return res(chmod(fx_path(P_MODE), 0640));
}

/* Setid bits at creation: a fresh name in b/ per probe, removed after. */
static const char *fresh(char *buf, size_t n)
{
	snprintf(buf, n, "%s/made-%d", fx_path(P_B), (int)getpid());
	return buf;
}

static int made(long r, const char *path)
{
	int e = errno;

	if (r >= 0) {
		if (r > 2)
			close((int)r);
		unlink(path);
	}
	errno = e;
	return res(r < 0 ? -1 : 0);
}

static int p_open_creat_suid(void)
{
	char p[256];
	return made(open(fresh(p, sizeof p), O_CREAT | O_WRONLY | O_CLOEXEC, 04755), p);
}

static int p_openat_creat_sgid(void)
{
	char p[256];
	return made(syscall(SYS_openat, AT_FDCWD, fresh(p, sizeof p), O_CREAT | O_WRONLY, 02755), p);
}

static int p_creat_suid(void)
{
	char p[256];
	return made(syscall(SYS_creat, fresh(p, sizeof p), 04755), p);
}

static int p_mknod_suid(void)
{
	char p[256];
	return made(mknod(fresh(p, sizeof p), S_IFREG | 06755, 0), p);
}

static int p_tmpfile_sgid(void)
{
	int fd = open(fx_path(P_B), O_TMPFILE | O_WRONLY | O_CLOEXEC, 02755);
	int e = errno;
	if (fd >= 0)
		close(fd);
	errno = e;
	return res(fd < 0 ? -1 : 0);
}

static int p_open_creat_plain(void)
{
	char p[256];
	return made(open(fresh(p, sizeof p), O_CREAT | O_WRONLY | O_CLOEXEC, 0644), p);
}

static int p_open_plain_garbage_mode(void)
{
	/* no O_CREAT: the mode register means nothing and is not judged */
	return made(syscall(SYS_openat, AT_FDCWD, fx_path(P_MODE), O_RDONLY, 04755), "");
}

static int p_openat2(void)
{
	struct { uint64_t flags, mode, resolve; } how = { O_RDONLY, 0, 0 };
	return made(syscall(SYS_openat2, AT_FDCWD, fx_path(P_MODE), &how, sizeof how), "");
}

static struct sock_filter allow_insn[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
static struct sock_fprog allow_prog = { 1, allow_insn };

static int p_seccomp_listener(void)
{
	return res(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			   &allow_prog));
}

/* op is an unsigned int to the kernel. */
static int p_seccomp_listener_high(void)
{
	return res(syscall(SYS_seccomp, 0x100000000UL | SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER, &allow_prog));
}

static int p_seccomp_plain(void)
{
	return res(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &allow_prog));
}

static int p_x32(void)
{
	return res(syscall(SYS_getpid | X32_BIT));
}

/* getpid (20) through the i386 entry.  Without IA32 emulation the kernel
 * answers int 0x80 with SIGSEGV: run() reports the signal. */
static int p_int80(void)
{
#if defined(__x86_64__)
	int r;

	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory", "cc", "r8", "r9", "r10", "r11");
	return r < 0 ? -r : 0;
#else
	return R_SKIP;
#endif
}

static int p_personality_aslr(void)
{
	return res(syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */));
}

/* Allowed: 0, PER_LINUX32, UNAME26, both, and the query; judged on the low
 * 32 bits as the kernel reads them. */
static bool persona_allowed(uint64_t v)
{
	uint32_t lo = (uint32_t)v;

	return lo == 0xffffffffu || (lo & ~(uint32_t)(0x0008 | 0x0020000)) == 0;
}

static int p_personality_table(void)
{
	uint64_t vals[80];
	size_t n = 0;
	int bad = 0;

	for (unsigned b = 0; b < 32; b++) {
		vals[n++] = 1ULL << b;
		vals[n++] = 0xffffffffULL & ~(1ULL << b);
	}
	vals[n++] = 0;
	vals[n++] = 0x0008;
	vals[n++] = 0x0020000;
	vals[n++] = 0x0020008;
	vals[n++] = 0xffffffffULL;
	vals[n++] = 0x100000000ULL | 0x0040000;        /* high bits + ADDR_NO_RANDOMIZE */
	vals[n++] = 0x1ffffffffULL;                    /* the query to the kernel */
	vals[n++] = 0x100000000ULL;                    /* PER_LINUX to the kernel */
	for (size_t i = 0; i < n; i++) {
		long r = syscall(SYS_personality, vals[i]);
		bool ok = r != -1;

		if (ok != persona_allowed(vals[i])) {
			fprintf(stderr, "  personality(%#llx): %s\n", (unsigned long long)vals[i],
				ok ? "allowed" : strerror(errno));
			bad = 1;
		}
		syscall(SYS_personality, 0);
	}
	return bad ? R_WRONG : 0;
}

/* Ordinary work under the filter. */
static int p_fork(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(7);
	return reap(pid) == 7 ? 0 : R_WRONG;
}

static int exec_wait(const char *path)
{
	char *argv[] = { (char *)"true", NULL };
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		execve(path, argv, environ);
		_exit(errno);
	}
	return reap(pid);
}

static int p_exec_true(void)
{
	return exec_wait("/bin/true");
}

/* glibc's posix_spawn tries clone3 first: ENOSYS must send it to clone. */
static int p_posix_spawn(void)
{
	char *argv[] = { (char *)"true", NULL };
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);

	return e ? e : reap(pid);
}

static void *thread_main(void *arg)
{
	return arg;
}

static int p_pthread(void)
{
	pthread_t t;
	void *ret = NULL;
	int e = pthread_create(&t, NULL, thread_main, &ret);

	if (e)
		return e;
	e = pthread_join(t, &ret);
	return e ? e : 0;
}

static int p_file_io(void)
{
	char buf[6] = "";
	int fd = open(fx_path(P_IO), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	if (write(fd, "hello", 5) != 5 || lseek(fd, 0, SEEK_SET) != 0 || read(fd, buf, 5) != 5)
		return errno ? errno : R_WRONG;
	close(fd);
	unlink(fx_path(P_IO));
	return strcmp(buf, "hello") == 0 ? 0 : R_WRONG;
}

/* JITs need writable-then-executable memory (docs/security.md "seccomp": no W^X rule). */
static int p_mmap_exec(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return errno;
	if (mprotect(p, 4096, PROT_READ | PROT_WRITE) < 0 ||
	    mprotect(p, 4096, PROT_READ | PROT_EXEC) < 0)
		return errno;
	return res(munmap(p, 4096));
}

/* ------------------------------------------------------------ landlock probes */

static int open_res(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int p_ll_read_a(void)
{
	return open_res(fx_path(P_AF), O_RDONLY);
}

static int p_ll_write_a(void)
{
	return open_res(fx_path(P_AF), O_WRONLY);
}

static int p_ll_truncate_a(void)
{
	return res(truncate(fx_path(P_AF), 5));
}

static int p_ll_create_b(void)
{
	char path[160];
	int e;

	snprintf(path, sizeof(path), "%s/new", fx_path(P_B));
	e = open_res(path, O_WRONLY | O_CREAT | O_EXCL);
	unlink(path);
	return e;
}

/* Across directories: needs REFER (ABI 2), EXDEV without it. */
static int p_ll_rename_b(void)
{
	char from[160], to[160];
	int e;

	snprintf(from, sizeof(from), "%s/f", fx_path(P_BS1));
	snprintf(to, sizeof(to), "%s/f", fx_path(P_BS2));
	e = res(rename(from, to));
	if (e == 0 && rename(to, from) < 0)
		return errno;
	return e;
}

static int p_ll_mkfifo_b(void)
{
	char path[160];
	int e;

	snprintf(path, sizeof(path), "%s/fifo", fx_path(P_B));
	e = res(mkfifo(path, 0600));
	unlink(path);
	return e;
}

/* CT_WRITE never grants MAKE_CHAR; Landlock answers before the capability
 * check, so EACCES inside and, outside, success (root) or EPERM. */
static int p_ll_mknod_b(void)
{
	char path[160];
	int e;

	snprintf(path, sizeof(path), "%s/null", fx_path(P_B));
	e = res(mknod(path, S_IFCHR | 0600, makedev(1, 3)));
	unlink(path);
	return e;
}

static int p_ll_read_c(void)
{
	return open_res(fx_path(P_CF), O_RDONLY);
}

/* A file rule with CT_WRITE: only file rights survive, and they work. */
static int p_ll_write_cg(void)
{
	return open_res(fx_path(P_CG), O_WRONLY);
}

/* CT_LIST on the temp dir: c/ can be listed, its files not read. */
static int p_ll_list_c(void)
{
	DIR *d = opendir(fx_path(P_C));

	if (!d)
		return errno;
	closedir(d);
	return 0;
}

static int exec_direct(const char *path)
{
	char *argv[] = { (char *)"true", NULL };
	char *envp[] = { NULL };

	execve(path, argv, envp);
	return errno;
}

static int p_ll_exec_x(void)
{
	return exec_direct(fx_path(P_XTRUE));
}

static int p_ll_exec_a(void)
{
	return exec_direct(fx_path(P_ATRUE));
}

/* The parent's abstract name (leading NUL) in *sa; its length. */
static socklen_t abstract_addr(struct sockaddr_un *sa)
{
	size_t len = strlen(g_abstract + 1) + 1;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, g_abstract, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
}

static int p_ll_abstract(void)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(&sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return R_SETUP;
	return res(connect(fd, (struct sockaddr *)&sa, len));
}

static int p_ll_kill_parent(void)
{
	return res(kill(getppid(), 0));
}

/* ct_landlock_apply's refusals, each in a child so a wrong success cannot
 * restrict the test itself. */
static int apply_fails(int abi, const struct ct_rule *r, size_t n, const char *want1,
		       const char *want2)
{
	char err[256] = "";

	if (ct_landlock_apply(abi, r, n, err, sizeof(err)) == 0) {
		fprintf(stderr, "  ct_landlock_apply succeeded\n");
		return R_WRONG;
	}
	if (!strstr(err, want1) || (want2 && !strstr(err, want2))) {
		fprintf(stderr, "  unexpected message: %s\n", err);
		return R_WRONG;
	}
	return 0;
}

static int p_ll_missing(void)
{
	struct ct_rule r[2] = { { "/usr", CT_READ }, { NOWHERE "/sub", CT_READ } };

	return apply_fails(g_abi, r, 2, "landlock: cannot open " NOWHERE "/sub",
			   "No such file or directory");
}

static int p_ll_abi0(void)
{
	struct ct_rule r = { "/usr", CT_READ };

	return apply_fails(0, &r, 1, "landlock", NULL);
}

static int p_ll_abi_neg(void)
{
	struct ct_rule r = { "/usr", CT_READ };

	return apply_fails(-ENOSYS, &r, 1, "landlock: not available: ", strerror(ENOSYS));
}

static int p_ll_no_nnp(void)
{
	struct ct_rule r = { "/usr", CT_READ };

	return apply_fails(g_abi, &r, 1, "no_new_privs", NULL);
}

static int p_filter_no_nnp(void)
{
	char err[256] = "";

	if (ct_filter_install(err, sizeof(err)) == 0)
		return R_WRONG;
	return strstr(err, "no_new_privs") ? 0 : R_WRONG;
}

/* Without the prelude's no_new_privs: forked straight. */
static int run_bare(probe_fn fn)
{
	pid_t pid = fork();

	if (pid < 0)
		return R_SETUP;
	if (pid == 0)
		_exit(fn());
	return reap(pid);
}

/* ------------------------------------------------------------ fixture */

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int rc = 0;

	if (in < 0 || out < 0)
		rc = -1;
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) != 0)
		if (n < 0 || write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0)
		rc = -1;
	return rc;
}

static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int fixture(void)
{
	static const struct {
		int id;
		const char *rel;
		char kind;      /* d: directory, f: file, t: copy of /bin/true, -: name only */
	} tree[] = {
		{ P_A, "a", 'd' }, { P_AF, "a/f", 'f' }, { P_ATRUE, "a/true", 't' },
		{ P_B, "b", 'd' }, { P_BS1, "b/s1", 'd' }, { P_BS2, "b/s2", 'd' },
		{ P_C, "c", 'd' }, { P_CF, "c/f", 'f' }, { P_CG, "c/g", 'f' },
		{ P_X, "x", 'd' }, { P_XTRUE, "x/true", 't' }, { P_M, "m", 'd' },
		{ P_IO, "io", '-' }, { P_MODE, "mode", 'f' },
	};
	char bs1f[160];

	strcpy(g_dir, "/tmp/cairn-filters-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
		char *p = g_path[tree[i].id];

		snprintf(p, sizeof(g_path[0]), "%s/%s", g_dir, tree[i].rel);
		if ((tree[i].kind == 'd' && mkdir(p, 0755) < 0) ||
		    (tree[i].kind == 'f' && put(p, "hello") < 0) ||
		    (tree[i].kind == 't' && copy_file("/bin/true", p, 0755) < 0))
			return -1;
	}
	snprintf(bs1f, sizeof(bs1f), "%s/f", fx_path(P_BS1));
	if (put(bs1f, "x") < 0)
		return -1;

	g_rules[g_n_rules++] = (struct ct_rule){ g_dir, CT_LIST };
	g_rules[g_n_rules++] = (struct ct_rule){ fx_path(P_A), CT_READ };
	g_rules[g_n_rules++] = (struct ct_rule){ fx_path(P_AF), CT_LIST };   /* nothing on a file */
	g_rules[g_n_rules++] = (struct ct_rule){ fx_path(P_B), CT_WRITE };
	g_rules[g_n_rules++] = (struct ct_rule){ fx_path(P_CG), CT_WRITE };
	g_rules[g_n_rules++] = (struct ct_rule){ fx_path(P_X), CT_EXEC };
	g_rules[g_n_rules++] = (struct ct_rule){ "/usr", CT_EXEC };
	g_rules[g_n_rules++] = (struct ct_rule){ "/etc/ld.so.cache", CT_READ };
	g_rules[g_n_rules++] = (struct ct_rule){ "/dev/null", CT_READ | CT_WRITE | CT_DEV };
	/* merged-/usr hosts have these as links into /usr; others need them */
	if (access("/lib", F_OK) == 0)
		g_rules[g_n_rules++] = (struct ct_rule){ "/lib", CT_EXEC };
	if (access("/lib64", F_OK) == 0)
		g_rules[g_n_rules++] = (struct ct_rule){ "/lib64", CT_EXEC };
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	remove(path);
	return 0;
}

/* An abstract listener made before any child restricts itself. */
static int listener(void)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(g_abstract + 1, sizeof(g_abstract) - 1, "cairn-test-%d", (int)getpid());
	len = abstract_addr(&sa);
	if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ------------------------------------------------------------ main */

static void filter_tests(void)
{
	static const struct {
		const char *name;
		probe_fn fn;
		unsigned pre;
		int want;
	} refused[] = {
		{ "io_uring_setup", p_io_uring_setup, 0, EPERM },
		{ "io_uring_enter on a bogus fd", p_io_uring_enter, 0, EPERM },
		{ "ptrace(PTRACE_ATTACH) on the parent", p_ptrace_parent, 0, EPERM },
		{ "ptrace(PTRACE_ATTACH) on a child", p_ptrace_child, 0, EPERM },
		{ "process_vm_readv", p_process_vm_readv, 0, EPERM },
		{ "process_vm_writev", p_process_vm_writev, 0, EPERM },
		{ "pidfd_getfd", p_pidfd_getfd, 0, EPERM },
		{ "bpf", p_bpf, 0, EPERM },
		{ "perf_event_open", p_perf_event_open, 0, EPERM },
		{ "userfaultfd", p_userfaultfd, 0, EPERM },
		{ "keyctl", p_keyctl, 0, EPERM },
		{ "add_key", p_add_key, 0, EPERM },
		{ "request_key", p_request_key, 0, EPERM },
		{ "mount", p_mount, 0, EPERM },
		{ "umount2", p_umount2, 0, EPERM },
		{ "open_tree", p_open_tree, 0, EPERM },
		{ "fsopen", p_fsopen, PRE_USERNS, EPERM },
		{ "fsmount", p_fsmount, PRE_USERNS, EPERM },
		{ "fspick", p_fspick, PRE_USERNS, EPERM },
		{ "move_mount", p_move_mount, PRE_USERNS, EPERM },
		{ "mount_setattr", p_mount_setattr, PRE_USERNS, EPERM },
		{ "pivot_root", p_pivot_root, PRE_USERNS, EPERM },
		{ "chroot", p_chroot, 0, EPERM },
		{ "setns", p_setns, 0, EPERM },
		{ "unshare(CLONE_NEWUSER)", p_unshare_user, 0, EPERM },
		{ "unshare(CLONE_NEWNS)", p_unshare_ns, PRE_USERNS, EPERM },
		{ "unshare(CLONE_NEWNET)", p_unshare_net, PRE_USERNS, EPERM },
		{ "clone(CLONE_NEWUSER)", p_clone_user, 0, EPERM },
		{ "clone(CLONE_NEWNS)", p_clone_ns, PRE_USERNS, EPERM },
		{ "clone3", p_clone3, 0, ENOSYS },
		{ "open_by_handle_at", p_open_by_handle_at, PRE_USERNS, EPERM },
		{ "name_to_handle_at", p_name_to_handle_at, 0, EPERM },
		{ "clock_settime", p_clock_settime, 0, EPERM },
		{ "adjtimex (read)", p_adjtimex, 0, EPERM },
		{ "modify_ldt", p_modify_ldt, 0, EPERM },
		{ "iopl", p_iopl, 0, EPERM },
		{ "ioperm", p_ioperm, 0, EPERM },
		{ "ioctl(TIOCSTI)", p_tiocsti, 0, EPERM },
		{ "ioctl(TIOCSTI | 0xffffffff00000000)", p_tiocsti_high, 0, EPERM },
		{ "ioctl(TIOCLINUX)", p_tioclinux, 0, EPERM },
		{ "socket(AF_PACKET)", p_socket_packet, PRE_USERNS, EPERM },
		{ "socket(AF_NETLINK)", p_socket_netlink, 0, EPERM },
		{ "socket(AF_VSOCK)", p_socket_vsock, 0, EPERM },
		{ "socket(0x100000000 | AF_UNIX)", p_socket_high, 0, EPERM },
		{ "socketpair(AF_NETLINK)", p_socketpair_netlink, 0, EPERM },
		{ "memfd_create(0)", p_memfd_zero, 0, EPERM },
		{ "memfd_create(MFD_CLOEXEC)", p_memfd_plain, 0, EPERM },
		{ "memfd_create(MFD_EXEC)", p_memfd_exec, 0, EPERM },
		{ "fchmod(04755)", p_fchmod_suid, 0, EPERM },
		{ "chmod(02755)", p_chmod_sgid, 0, EPERM },
		{ "fchmodat(04755)", p_fchmodat_suid, 0, EPERM },
		{ "fchmodat2(04755)", p_fchmodat2_suid, 0, EPERM },
		{ "open(O_CREAT, 04755)", p_open_creat_suid, 0, EPERM },
		{ "openat(O_CREAT, 02755)", p_openat_creat_sgid, 0, EPERM },
		{ "creat(04755)", p_creat_suid, 0, EPERM },
		{ "mknod(S_IFREG | 06755)", p_mknod_suid, 0, EPERM },
		{ "open(O_TMPFILE, 02755)", p_tmpfile_sgid, 0, EPERM },
		{ "openat2 (its mode is out of seccomp's reach)", p_openat2, 0, ENOSYS },
		{ "seccomp(NEW_LISTENER)", p_seccomp_listener, 0, EPERM },
		{ "seccomp(1 | 1 << 32, NEW_LISTENER)", p_seccomp_listener_high, 0, EPERM },
		{ "personality(ADDR_NO_RANDOMIZE)", p_personality_aslr, 0, EPERM },
		{ "x32 getpid (nr | 0x40000000)", p_x32, 0, EPERM },
	};
	static const struct {
		const char *name;
		probe_fn fn;
	} works[] = {
		{ "socket(AF_INET)", p_socket_inet },
		{ "socket(AF_INET6)", p_socket_inet6 },
		{ "socket(AF_UNIX)", p_socket_unix },
		{ "socketpair(AF_UNIX)", p_socketpair_unix },
		{ "memfd_create(MFD_NOEXEC_SEAL)", p_memfd_noexec },
		{ "fchmod(0644)", p_fchmod_plain },
		{ "chmod(0640)", p_chmod_plain },
		{ "open(O_CREAT, 0644)", p_open_creat_plain },
		{ "openat(O_RDONLY) with a setuid-looking mode register", p_open_plain_garbage_mode },
		{ "seccomp(SET_MODE_FILTER) without a listener", p_seccomp_plain },
		{ "personality table", p_personality_table },
		{ "fork", p_fork },
		{ "exec /bin/true", p_exec_true },
		{ "posix_spawn (clone3 falls back to clone)", p_posix_spawn },
		{ "pthread_create", p_pthread },
		{ "open/read/write", p_file_io },
		{ "mmap PROT_EXEC, mprotect W then X", p_mmap_exec },
	};
	int in, out;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		expect_refused(refused[i].name, refused[i].fn, refused[i].pre, SB_FILTER,
			       refused[i].want);
	for (size_t i = 0; i < sizeof(works) / sizeof(works[0]); i++)
		expect_works(works[i].name, works[i].fn, 0, SB_FILTER);

	/* The i386 entry: EPERM inside; the control is only meaningful when
	 * the kernel has IA32 emulation. */
	in = run(p_int80, 0, SB_FILTER);
	out = run(p_int80, 0, SB_NONE);
	if (in == R_SKIP || out == R_SIGNAL + SIGSEGV) {
		skip("int 0x80 control", "no IA32 emulation in this kernel");
		check(in == EPERM || in == R_SIGNAL + SIGSEGV, "int 0x80 getpid: %s inside", ename(in));
	} else {
		check(in == EPERM, "int 0x80 getpid: %s inside (want EPERM)", ename(in));
		check(out == 0, "int 0x80 getpid: control: %s outside", ename(out));
	}
}

static void landlock_tests(void)
{
	static const struct {
		const char *name;
		probe_fn fn;
		int want;       /* 0: must work */
		int min_abi;
	} cases[] = {
		{ "landlock: read in a/ (CT_READ)", p_ll_read_a, 0, 1 },
		{ "landlock: write in a/", p_ll_write_a, EACCES, 1 },
		{ "landlock: truncate in a/", p_ll_truncate_a, EACCES, 3 },
		{ "landlock: create in b/ (CT_WRITE)", p_ll_create_b, 0, 1 },
		{ "landlock: rename across b/s1 -> b/s2 (REFER)", p_ll_rename_b, 0, 2 },
		{ "landlock: mkfifo in b/", p_ll_mkfifo_b, 0, 1 },
		{ "landlock: mknod char in b/", p_ll_mknod_b, EACCES, 1 },
		{ "landlock: read in c/ (no rule)", p_ll_read_c, EACCES, 1 },
		{ "landlock: write c/g (file rule, CT_WRITE)", p_ll_write_cg, 0, 1 },
		{ "landlock: list c/ (CT_LIST above)", p_ll_list_c, 0, 1 },
		{ "landlock: exec in x/ (CT_EXEC)", p_ll_exec_x, 0, 1 },
		{ "landlock: exec of the copy in a/ (CT_READ)", p_ll_exec_a, EACCES, 1 },
		{ "landlock: abstract unix connect out of the domain", p_ll_abstract, EPERM, 6 },
		{ "landlock: kill(parent, 0) out of the domain", p_ll_kill_parent, EPERM, 6 },
	};
	int r;

	g_abi = ct_landlock_abi();
	if (g_abi < 1) {
		skip("landlock", "not available on this kernel");
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (g_abi < cases[i].min_abi) {
			skip(cases[i].name, "needs a newer Landlock ABI");
			continue;
		}
		if (cases[i].want == 0)
			expect_works(cases[i].name, cases[i].fn, 0, SB_LANDLOCK);
		else
			expect_refused(cases[i].name, cases[i].fn, 0, SB_LANDLOCK, cases[i].want);
	}

	r = run(p_ll_missing, 0, SB_NONE);
	check(r == 0, "landlock: a rule on a missing path is an error naming it: %s", ename(r));
	r = run(p_ll_abi0, 0, SB_NONE);
	check(r == 0, "landlock: ABI 0 refused: %s", ename(r));
	r = run(p_ll_abi_neg, 0, SB_NONE);
	check(r == 0, "landlock: ABI -ENOSYS refused naming the cause: %s", ename(r));

	/* At ABI 1 nothing newer is handled: truncate is not a right yet, a
	 * cross-directory rename is always EXDEV, nothing is scoped. */
	r = run(p_ll_truncate_a, 0, SB_LANDLOCK_ABI1);
	check(r == 0, "landlock ABI 1: truncate in a/ unhandled: %s", ename(r));
	r = run(p_ll_rename_b, 0, SB_LANDLOCK_ABI1);
	check(r == EXDEV, "landlock ABI 1: rename across b/s1 -> b/s2: %s (want EXDEV)", ename(r));
	r = run(p_ll_kill_parent, 0, SB_LANDLOCK_ABI1);
	check(r == 0, "landlock ABI 1: kill(parent, 0) unscoped: %s", ename(r));
	r = run(p_ll_read_c, 0, SB_LANDLOCK_ABI1);
	check(r == EACCES, "landlock ABI 1: read in c/: %s (want EACCES)", ename(r));
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
		skip("landlock/seccomp without no_new_privs", "the test itself runs with it set");
		return;
	}
	r = run_bare(p_ll_no_nnp);
	check(r == 0, "landlock: refused without no_new_privs: %s", ename(r));
	r = run_bare(p_filter_no_nnp);
	check(r == 0, "seccomp: refused without no_new_privs: %s", ename(r));
}

/* The programs compiled in at build time are the ones filter_build.c makes
 * now, and the observed one differs from the plain one only where a rule
 * answers EPERM: there it notifies. */
static void compiled_filter_is_current(void)
{
	static const struct {
		bool observed;
		const struct sock_filter *prog;
		const size_t *len;
	} progs[] = { { false, ct_filter_bpf, &ct_filter_bpf_len },
		      { true, ct_filter_observed_bpf, &ct_filter_observed_bpf_len } };
	for (size_t i = 0; i < 2; i++) {
		char err[256] = "";
		int fd = memfd_create("filter", MFD_CLOEXEC);
		struct stat st;
		bool same = false;

		if (fd >= 0 && ct_filter_export(fd, progs[i].observed, err, sizeof(err)) == 0 &&
		    fstat(fd, &st) == 0 &&
		    (size_t)st.st_size == *progs[i].len * sizeof(struct sock_filter)) {
			struct sock_filter *buf = malloc((size_t)st.st_size);
			same = buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size &&
			       memcmp(buf, progs[i].prog, (size_t)st.st_size) == 0;
			free(buf);
		}
		if (fd >= 0)
			close(fd);
		check(same, "the compiled-in %s BPF (%zu instructions) equals a fresh libseccomp "
		      "build %s", progs[i].observed ? "observed" : "plain", *progs[i].len, err);
	}
	/* libseccomp lays the two out differently: the observed one is checked
	 * by what it does (observed_refusals) */
}

/* The observed filter: a child installs it and hands its listener over; what
 * it refuses with EPERM arrives here, is described, and is answered EPERM;
 * what it refuses with ENOSYS (clone3) and what it allows never arrive; once
 * the child is gone the listener says so (-EPIPE). */
static void send_fd(int sock, int fd)
{
	char c = 'R';
	struct iovec iov = { &c, 1 };
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != 1)
		_exit(90);
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { &c, 1 };
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	if (recvmsg(sock, &mh, 0) != 1 || CMSG_FIRSTHDR(&mh) == NULL)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	return fd;
}

static void observed_refusals(void)
{
	int sv[2], res[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 || pipe(res) != 0) {
		check(false, "observed: socketpair/pipe");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		close(res[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			_exit(91);
		int lfd = ct_filter_install_observed();
		if (lfd < 0)
			_exit(92);
		send_fd(sv[1], lfd);
		close(lfd);
		int e[5];
		errno = 0;
		e[0] = socket(AF_PACKET, SOCK_RAW, 0) < 0 ? errno : 0;
		e[1] = unshare(CLONE_NEWUSER) < 0 ? errno : 0;
		e[2] = syscall(__NR_io_uring_setup, 1, NULL) < 0 ? errno : 0;
		e[3] = syscall(__NR_clone3, NULL, 0) < 0 ? errno : 0;
		e[4] = getpid() > 0 ? 0 : 1;
		_exit(write(res[1], e, sizeof(e)) == sizeof(e) ? 0 : 93);
	}
	close(sv[1]);
	close(res[1]);
	int lfd = recv_fd(sv[0]);
	check(lfd >= 0, "observed: the child handed its listener over");
	static struct ct_refusal got[4];
	size_t n = 0;
	int r = 0;
	while (lfd >= 0 && n < 4 && (r = ct_refusal_next(lfd, -1, 5000, &got[n])) >= 0) {
		if (r == 1)
			n++;
		else
			break;          /* 5 s without one: the child is stuck or gone */
	}
	check(n == 3, "observed: three refusals arrived (%zu, last %d)", n, r);
	if (n >= 3) {
		check(strcmp(got[0].syscall, "socket") == 0 &&
		      strcmp(got[0].args, "family=AF_PACKET type=SOCK_RAW") == 0,
		      "observed: socket described: %s(%s)", got[0].syscall, got[0].args);
		check(strcmp(got[1].syscall, "unshare") == 0 &&
		      strcmp(got[1].args, "flags=CLONE_NEWUSER") == 0,
		      "observed: unshare described: %s(%s)", got[1].syscall, got[1].args);
		check(strcmp(got[2].syscall, "io_uring_setup") == 0 && got[2].args[0] == '\0',
		      "observed: io_uring_setup described: %s(%s)", got[2].syscall, got[2].args);
		char self[PATH_MAX];
		ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[k > 0 ? k : 0] = '\0';
		check(got[0].pid == pid && strcmp(got[0].exe, self) == 0 && got[0].cwd[0] == '/' &&
		      got[0].cmdline_len > 0 && strcmp(got[0].cmdline, self) == 0,
		      "observed: the caller: pid %d exe %s cwd %s", (int)got[0].pid, got[0].exe,
		      got[0].cwd);
	}
	int e[5] = { -1, -1, -1, -1, -1 };
	check(read(res[0], e, sizeof(e)) == sizeof(e), "observed: the child reported");
	check(e[0] == EPERM && e[1] == EPERM && e[2] == EPERM && e[3] == ENOSYS && e[4] == 0,
	      "observed: errnos %d %d %d %d %d (EPERM x3, ENOSYS, allowed)", e[0], e[1], e[2],
	      e[3], e[4]);
	int st;
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "observed: the child exited 0 (%d)", st);
	if (lfd >= 0) {
		r = ct_refusal_next(lfd, -1, 5000, &got[0]);
		check(r == -EPIPE, "observed: the listener hangs up with its last process (%d)", r);
		close(lfd);
	}
	close(sv[0]);
	close(res[0]);
	char buf[32];
	check(strcmp(ct_refusal_name(99999, buf, sizeof(buf)), "syscall 99999") == 0,
	      "observed: an unknown call by number");
}

int main(void)
{
	int lfd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fixture() < 0 || (lfd = listener()) < 0) {
		fprintf(stderr, "test_filters: fixture: %s\n", strerror(errno));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	compiled_filter_is_current();
	observed_refusals();
	filter_tests();
	landlock_tests();
	close(lfd);
	nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail > 0;
}
