/* test_bpf.c - the mediator's reading of its seccomp program (med_bpf.h,
 * med_filter.h): the supervisor's interpreter says "refused" exactly where
 * the kernel, running the plain deny filter, refuses.
 *
 * Each call runs in a forked child under the plain deny filter (ERRNO, no
 * listener): its exit status says whether the kernel answered EPERM.  The
 * same registers, as a seccomp_data, go through med_filter_refused.  And
 * the mediator's own program hands the mediated calls to the listener and
 * lets the rest through. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "filter.h"
#include "med_bpf.h"
#include "med_calls.h"
#include "med_filter.h"
#include "test.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

struct call {
	const char *what;
	int nr;
	uint64_t a[6];
};

/* The kernel's answer under the plain deny filter: true when EPERM. */
static bool kernel_refuses(const struct call *c)
{
	pid_t pid = fork();
	if (pid == 0) {
		char err[256];
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ct_filter_install(err, sizeof(err)) != 0)
			_exit(2);
		errno = 0;
		long r = syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
		_exit(r == -1 && errno == EPERM ? 1 : 0);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 1;
}

static struct seccomp_data data_of(const struct call *c)
{
	struct seccomp_data d = { .nr = c->nr, .arch = AUDIT_ARCH_X86_64 };
	for (int i = 0; i < 6; i++)
		d.args[i] = c->a[i];
	return d;
}

static void agrees(void)
{
	static const char bogus[] = "/nonexistent/cairn-bpf-test";
	const struct call calls[] = {
		{ "socket AF_PACKET", SYS_socket, { AF_PACKET, SOCK_RAW, 0 } },
		{ "socket AF_INET", SYS_socket, { AF_INET, SOCK_STREAM, 0 } },
		{ "socket AF_UNIX", SYS_socket, { AF_UNIX, SOCK_STREAM, 0 } },
		{ "chmod setuid", SYS_chmod, { (uintptr_t)bogus, 04755 } },
		{ "chmod 0755", SYS_chmod, { (uintptr_t)bogus, 0755 } },
		{ "fchmodat setgid", SYS_fchmodat, { (uint64_t)AT_FDCWD, (uintptr_t)bogus, 02755 } },
		{ "openat O_CREAT setuid", SYS_openat,
		  { (uint64_t)AT_FDCWD, (uintptr_t)bogus, O_CREAT | O_WRONLY, 04755 } },
		{ "openat O_CREAT 0644", SYS_openat,
		  { (uint64_t)AT_FDCWD, (uintptr_t)bogus, O_CREAT | O_WRONLY, 0644 } },
		{ "memfd_create exec", SYS_memfd_create, { (uintptr_t)"x", 0 } },
		{ "memfd_create noexec", SYS_memfd_create, { (uintptr_t)"x", MFD_NOEXEC_SEAL } },
		{ "unshare user", SYS_unshare, { CLONE_NEWUSER } },
		{ "unshare files", SYS_unshare, { CLONE_FILES } },
		{ "ioctl TIOCSTI", SYS_ioctl, { 0, TIOCSTI, 0 } },
		{ "ioctl TIOCSTI high bits", SYS_ioctl, { 0, TIOCSTI | 0x100000000ull, 0 } },
		{ "ioctl TIOCGWINSZ", SYS_ioctl, { 0, TIOCGWINSZ, 0 } },
		{ "mount", SYS_mount, { 0, 0, 0, 0, 0 } },
		{ "ptrace", SYS_ptrace, { 0, 0, 0, 0 } },
		{ "getpid", SYS_getpid, { 0 } },
		{ "mknod setuid", SYS_mknod, { (uintptr_t)bogus, 0100000 | 04755, 0 } },
		{ "seccomp new listener", SYS_seccomp, { 1, 8, 0 } },
	};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct seccomp_data d = data_of(&calls[i]);
		bool k = kernel_refuses(&calls[i]), m = med_filter_refused(&d);
		if (k != m)
			fprintf(stderr, "%s: the kernel %s, the mediator says %s\n", calls[i].what,
				k ? "refuses" : "lets it through", m ? "refused" : "not refused");
		CHECK(k == m);
	}
}

/* The mediator's program: every listed call is a notification, others pass
 * (and a foreign ABI is refused whole). */
static void program(void)
{
	const struct sock_fprog *p = med_filter_prog();
	CHECK(p->len == med_filter_bpf_len && p->len > 0);
	for (size_t i = 0; i < med_n_calls; i++) {
		struct seccomp_data d = { .nr = med_calls[i].nr, .arch = AUDIT_ARCH_X86_64 };
		uint32_t r = med_bpf_run(med_filter_bpf, med_filter_bpf_len, &d);
		if ((r & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_USER_NOTIF)
			fprintf(stderr, "%s: not handed to the mediator (%#x)\n", med_calls[i].name, r);
		CHECK((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF);
	}
	const int passed[] = { SYS_read, SYS_write, SYS_close, SYS_mmap, SYS_fstat, SYS_getdents64,
			       SYS_fchdir, SYS_ftruncate };
	for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++) {
		struct seccomp_data d = { .nr = passed[i], .arch = AUDIT_ARCH_X86_64 };
		CHECK((med_bpf_run(med_filter_bpf, med_filter_bpf_len, &d) & SECCOMP_RET_ACTION_FULL) ==
		      SECCOMP_RET_ALLOW);
	}
	struct seccomp_data i386 = { .nr = SYS_getpid, .arch = AUDIT_ARCH_I386 };
	CHECK((med_bpf_run(med_filter_bpf, med_filter_bpf_len, &i386) & SECCOMP_RET_ACTION_FULL) ==
	      SECCOMP_RET_ERRNO);
	/* openat2 stays the kernel's ENOSYS: an error outranks a notification */
	struct seccomp_data o2 = { .nr = SYS_openat2, .arch = AUDIT_ARCH_X86_64 };
	CHECK(med_bpf_run(med_filter_bpf, med_filter_bpf_len, &o2) == (SECCOMP_RET_ERRNO | ENOSYS));
}

/* A program the kernel would refuse to load is read as a kill. */
static void malformed(void)
{
	struct seccomp_data d = { .nr = SYS_getpid, .arch = AUDIT_ARCH_X86_64 };
	const struct sock_filter off_end[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0) };
	CHECK(med_bpf_run(off_end, 1, &d) == SECCOMP_RET_KILL_PROCESS);
	const struct sock_filter far[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096),
					   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	CHECK(med_bpf_run(far, 2, &d) == SECCOMP_RET_KILL_PROCESS);
	const struct sock_filter jump[] = { BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
					    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	CHECK(med_bpf_run(jump, 2, &d) == SECCOMP_RET_KILL_PROCESS);
	const struct sock_filter div0[] = { BPF_STMT(BPF_LD | BPF_IMM, 1),
					    BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
					    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	CHECK(med_bpf_run(div0, 3, &d) == SECCOMP_RET_KILL_PROCESS);
	const struct sock_filter ok[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
					  BPF_STMT(BPF_MISC | BPF_TAX, 0),
					  BPF_STMT(BPF_ALU | BPF_ADD | BPF_X, 0),
					  BPF_STMT(BPF_RET | BPF_A, 0) };
	CHECK(med_bpf_run(ok, 4, &d) == 2u * SYS_getpid);
}

static const struct test_case tests[] = {
	{ "the interpreter agrees with the kernel", agrees },
	{ "the mediator's program", program },
	{ "malformed programs", malformed },
};

TEST_MAIN(tests)
