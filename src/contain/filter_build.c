/* filter_build.c - the workload's seccomp deny filter (docs/security.md "seccomp"),
 * built with libseccomp.  At build time gen_filter.c exports it as BPF into
 * filter_bpf.c, which filter.c loads at run time: the program is constant,
 * so no run pays for compiling it (nor for loading libseccomp).
 *
 * Default allow: the real boundary is the namespaces, the view and Landlock;
 * this filter takes away kernel interfaces a workload never needs and that
 * either reach past those boundaries (mount API, namespaces, keyrings, the
 * host clock) or are large attack surface (io_uring, bpf, perf, userfaultfd).
 * Everything refused is refused with EPERM (clone3 with ENOSYS), so programs
 * see an ordinary error rather than a kill.
 *
 * Arguments the kernel reads as 32-bit are compared on their low 32 bits
 * (or exactly, where any high bit must refuse the call): the register holds
 * 64 and the kernel ignores the top half (CVE-2019-10063).
 *
 * The kernel caches a constant verdict per system call (5.11+), so the
 * length of these tables costs nothing on calls they do not name. */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "filter.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "filter.c: the deny filter is written and tested for x86_64 and aarch64 only"
#endif

/* Newer than Debian 12's headers.  fchmodat2 has the same number on every
 * architecture (the unified table); libseccomp's SCMP_SYS() names it through
 * __NR_fchmodat2. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

#define LOW32 0xffffffffULL

struct deny {
	int nr;                 /* SCMP_SYS(): negative when not a call on this architecture */
	const char *name;
	const char *why;
};

#define DENY(call, why) { SCMP_SYS(call), #call, why }

/* Refused whatever their arguments. */
static const struct deny deny_always[] = {
	DENY(io_uring_setup, "io_uring: a second syscall path no filter sees into"),
	DENY(io_uring_enter, "io_uring"),
	DENY(io_uring_register, "io_uring"),
	DENY(ptrace, "tracing the reaper, siblings or the supervisor's helpers"),
	DENY(process_vm_readv, "another process's memory"),
	DENY(process_vm_writev, "another process's memory"),
	DENY(pidfd_getfd, "stealing another process's descriptors"),
	DENY(process_madvise, "acting on another process's memory"),
	DENY(bpf, "kernel attack surface"),
	DENY(perf_event_open, "kernel attack surface, side channels"),
	DENY(userfaultfd, "stalls kernel copies at will: race exploitation aid"),
	DENY(keyctl, "kernel keyrings are not namespaced"),
	DENY(add_key, "kernel keyrings are not namespaced"),
	DENY(request_key, "kernel keyrings are not namespaced; may upcall to the host"),
	DENY(kexec_load, "replaces the host kernel"),
	DENY(kexec_file_load, "replaces the host kernel"),
	DENY(init_module, "loads host kernel code"),
	DENY(finit_module, "loads host kernel code"),
	DENY(delete_module, "unloads host kernel code"),
	DENY(mount, "the view is fixed: no mounts over protected paths"),
	DENY(umount2, "unmounting would reveal what the view covers"),
	DENY(pivot_root, "the view is fixed"),
	DENY(chroot, "the view is fixed"),
	DENY(fsopen, "new mount API"),
	DENY(fsconfig, "new mount API"),
	DENY(fsmount, "new mount API"),
	DENY(fspick, "new mount API"),
	DENY(move_mount, "new mount API"),
	DENY(open_tree, "new mount API: detached copies of the view"),
	DENY(mount_setattr, "could clear ro/nosuid/nodev/noexec"),
	DENY(open_by_handle_at, "opens by inode, past every path rule (\"shocker\")"),
	DENY(name_to_handle_at, "the other half of open_by_handle_at"),
	DENY(setns, "no joining other namespaces"),
	DENY(acct, "host process accounting"),
	DENY(swapon, "host swap"),
	DENY(swapoff, "host swap"),
	DENY(reboot, "host power"),
	DENY(settimeofday, "the host clock is shared"),
	DENY(clock_settime, "the host clock is shared"),
	DENY(clock_adjtime, "the host clock is shared"),
	DENY(adjtimex, "the host clock is shared"),
	DENY(syslog, "the host kernel log"),
	DENY(quotactl, "host quotas"),
	DENY(quotactl_fd, "host quotas"),
	DENY(lookup_dcookie, "kernel profiling; gone since 6.9"),
	DENY(vhangup, "hangs up the terminal"),
	DENY(uselib, "obsolete loader path"),
	DENY(nfsservctl, "obsolete"),
	/* The x86-only calls are pseudo numbers elsewhere and are skipped. */
	DENY(modify_ldt, "x86 segment tables: kernel attack surface"),
	DENY(iopl, "x86 port I/O"),
	DENY(ioperm, "x86 port I/O"),
};

static int f_fail(char *err, size_t errlen, const char *call, int rc)
{
	if (err && errlen > 0)
		snprintf(err, errlen, "seccomp: %s: %s", call, strerror(-rc));
	return -1;
}

/* The observed program (ct_filter_observed_bpf) hands every EPERM to the
 * supervisor as a notification, which answers EPERM and records it
 * (docs/records.md "Kernel refusals"); the ENOSYS answers are fallbacks a
 * program takes in its stride, not refusals, and stay in the kernel. */
static bool observing;

/* Add one rule: nr refused with e when every cmp[0, n) holds. */
static int f_rule(scmp_filter_ctx ctx, int nr, const char *name, int e, unsigned n,
		  const struct scmp_arg_cmp *cmp, char *err, size_t errlen)
{
	int rc;

	if (nr < 0)
		return 0;       /* not a system call on this architecture */
	uint32_t act = observing && e == EPERM ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO((uint32_t)e);
	rc = seccomp_rule_add_array(ctx, act, nr, n, cmp);
	return rc < 0 ? f_fail(err, errlen, name, rc) : 0;
}

/* Refused when (arg & bit) == bit, for each bit of bits. */
static int f_deny_bits(scmp_filter_ctx ctx, int nr, const char *name, unsigned arg,
		       uint64_t bits, char *err, size_t errlen)
{
	for (unsigned b = 0; b < 64; b++) {
		uint64_t bit = 1ULL << b;
		struct scmp_arg_cmp c = { arg, SCMP_CMP_MASKED_EQ, bit, bit };

		if ((bits & bit) && f_rule(ctx, nr, name, EPERM, 1, &c, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* No nested namespaces.  Without capabilities most would fail anyway, but a
 * user namespace gives them back, and with them the whole of the kernel's
 * namespaced-root surface (mount, netfilter, ...) (escape cases unshare-*,
 * clone-newuser, setns, mount: tests/escape/README.md). */
#define NS_FLAGS                                                                        \
	((uint64_t)(CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |         \
		    CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME))

static int f_namespaces(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	/* clone(2)'s flags are its first argument on x86_64 and aarch64 alike
	 * (only s390 swaps them).  Its low byte is the exit signal, where
	 * CLONE_NEWTIME's bit lives for unshare; clone cannot ask for a time
	 * namespace at all. */
	if (f_deny_bits(ctx, SCMP_SYS(unshare), "unshare", 0, NS_FLAGS, err, errlen) < 0 ||
	    f_deny_bits(ctx, SCMP_SYS(clone), "clone", 0, NS_FLAGS & ~(uint64_t)CLONE_NEWTIME,
			err, errlen) < 0)
		return -1;
	/* clone3 passes its flags in memory seccomp cannot read: ENOSYS makes
	 * glibc (and others) fall back to clone, which is checked above. */
	return f_rule(ctx, SCMP_SYS(clone3), "clone3", ENOSYS, 0, NULL, err, errlen);
}

/* TIOCSTI types into the terminal the supervisor's user reads (escape case tiocsti);
 * TIOCLINUX does the same on a virtual console. */
static int f_ioctls(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	static const unsigned long reqs[] = { TIOCSTI, TIOCLINUX };

	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		struct scmp_arg_cmp c = { 1, SCMP_CMP_MASKED_EQ, LOW32, reqs[i] };

		if (f_rule(ctx, SCMP_SYS(ioctl), "ioctl", EPERM, 1, &c, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* Sockets of AF_UNIX, AF_INET and AF_INET6 only: no raw packets, netlink,
 * vsock (a path to the hypervisor host), bluetooth and the rest.  The
 * comparison is on all 64 bits: the kernel reads an int, so a domain with
 * high bits set is refused even when its low half names an allowed family.
 * libseccomp takes one comparison per argument, so the refused set is
 * spelled as the values below AF_INET6 that are not allowed, and all above. */
static int f_socket_domains(scmp_filter_ctx ctx, int nr, const char *name, char *err,
			    size_t errlen)
{
	struct scmp_arg_cmp above = { 0, SCMP_CMP_GT, AF_INET6, 0 };

	for (uint64_t d = 0; d < AF_INET6; d++) {
		struct scmp_arg_cmp c = { 0, SCMP_CMP_EQ, d, 0 };

		if (d == AF_UNIX || d == AF_INET)
			continue;
		if (f_rule(ctx, nr, name, EPERM, 1, &c, err, errlen) < 0)
			return -1;
	}
	return f_rule(ctx, nr, name, EPERM, 1, &above, err, errlen);
}

/* A workload's own USER_NOTIF filter would be newer than the supervisor's
 * and so win: it could answer CONTINUE to itself.
 * Other filters stay allowed: browsers and runtimes install their own. */
static int f_seccomp(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	struct scmp_arg_cmp c[2] = {
		{ 0, SCMP_CMP_MASKED_EQ, LOW32, SECCOMP_SET_MODE_FILTER },
		{ 1, SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		  SECCOMP_FILTER_FLAG_NEW_LISTENER },
	};

	return f_rule(ctx, SCMP_SYS(seccomp), "seccomp", EPERM, 2, c, err, errlen);
}

/* Landlock's EXECUTE right cannot see a memfd, so memfd_create +
 * execveat(AT_EMPTY_PATH) would run code no path rule allowed (docs/security.md
 * "seccomp").  Only sealed non-executable memfds are allowed (6.3+: before,
 * the kernel refuses MFD_NOEXEC_SEAL and memfds are unavailable). */
static int f_memfd(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	struct scmp_arg_cmp no_seal = { 1, SCMP_CMP_MASKED_EQ, MFD_NOEXEC_SEAL, 0 };
	struct scmp_arg_cmp exec = { 1, SCMP_CMP_MASKED_EQ, MFD_EXEC, MFD_EXEC };
	int nr = SCMP_SYS(memfd_create);

	if (f_rule(ctx, nr, "memfd_create", EPERM, 1, &no_seal, err, errlen) < 0)
		return -1;
	return f_rule(ctx, nr, "memfd_create", EPERM, 1, &exec, err, errlen);
}

/* Binds share the host's inodes: a setuid or setgid bit set inside would
 * stay on the host file, where no no_new_privs protects whoever runs it. */
static int f_setid_modes(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	static const struct {
		int nr;
		const char *name;
		unsigned mode_arg;
	} calls[] = {
		{ SCMP_SYS(chmod), "chmod", 1 },        /* not on aarch64: skipped */
		{ SCMP_SYS(fchmod), "fchmod", 1 },
		{ SCMP_SYS(fchmodat), "fchmodat", 2 },
		{ SCMP_SYS(fchmodat2), "fchmodat2", 2 },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (f_deny_bits(ctx, calls[i].nr, calls[i].name, calls[i].mode_arg,
				S_ISUID | S_ISGID, err, errlen) < 0)
			return -1;

	/* The bits can also be set when a file is made: creat, mknod, and open
	 * with O_CREAT or O_TMPFILE.  open's mode means something only with one of
	 * those flags, so only then is it judged (a program may pass garbage). */
	static const struct {
		int nr;
		const char *name;
		unsigned mode_arg;
	} makers[] = {
		{ SCMP_SYS(creat), "creat", 1 },
		{ SCMP_SYS(mknod), "mknod", 1 },
		{ SCMP_SYS(mknodat), "mknodat", 2 },
	};
	for (size_t i = 0; i < sizeof(makers) / sizeof(makers[0]); i++)
		if (f_deny_bits(ctx, makers[i].nr, makers[i].name, makers[i].mode_arg,
				S_ISUID | S_ISGID, err, errlen) < 0)
			return -1;
	static const struct {
		int nr;
		const char *name;
		unsigned flags_arg, mode_arg;
	} opens[] = {
		{ SCMP_SYS(open), "open", 1, 2 },
		{ SCMP_SYS(openat), "openat", 2, 3 },
	};
	static const uint64_t creating[] = { O_CREAT, __O_TMPFILE };
	static const uint64_t setid[] = { S_ISUID, S_ISGID };
	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++)
		for (size_t f = 0; f < 2; f++)
			for (size_t b = 0; b < 2; b++) {
				struct scmp_arg_cmp c[2] = {
					{ opens[i].flags_arg, SCMP_CMP_MASKED_EQ, creating[f], creating[f] },
					{ opens[i].mode_arg, SCMP_CMP_MASKED_EQ, setid[b], setid[b] },
				};
				if (f_rule(ctx, opens[i].nr, opens[i].name, EPERM, 2, c, err,
					   errlen) < 0)
					return -1;
			}
	/* openat2 keeps its flags and mode in a struct seccomp cannot read:
	 * ENOSYS, and callers fall back to openat (glibc's open never uses it). */
	return f_rule(ctx, SCMP_SYS(openat2), "openat2", ENOSYS, 0, NULL, err, errlen);
}

/* personality(2): exec domains are gone from the kernel, but its flags
 * remain, and ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the
 * address-limit flags only ever weaken what the workload runs next.  Allowed:
 * PER_LINUX (0), PER_LINUX32 and UNAME26 (`linux32`/`setarch` for builds)
 * alone or together, and the query 0xffffffff.  The kernel reads an unsigned
 * int: only the low 32 bits count.
 *
 * With one comparison per argument, "a bit outside the allowed two is set
 * and the value is not all ones" becomes a union of two-bit masks.  Take the
 * 30 other bits as a ring: when they are neither all clear nor all set, some
 * set bit is followed by a clear one, and (bit i set, bit i+1 clear) is one
 * masked comparison.  When they are all set, the value is the query unless
 * PER_LINUX32 or UNAME26 is clear: two more.  When all clear, it is allowed. */
static int f_personality(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	const uint64_t allowed = PER_LINUX32 | UNAME26;
	uint64_t other[32];
	unsigned n = 0;
	int nr = SCMP_SYS(personality);

	for (unsigned b = 0; b < 32; b++)
		if (!(allowed & (1ULL << b)))
			other[n++] = 1ULL << b;
	for (unsigned i = 0; i < n; i++) {
		uint64_t next = other[(i + 1) % n];
		struct scmp_arg_cmp c = { 0, SCMP_CMP_MASKED_EQ, other[i] | next, other[i] };

		if (f_rule(ctx, nr, "personality", EPERM, 1, &c, err, errlen) < 0)
			return -1;
	}
	for (unsigned b = 0; b < 32; b++) {
		uint64_t bit = 1ULL << b;
		struct scmp_arg_cmp c = { 0, SCMP_CMP_MASKED_EQ, other[0] | bit, other[0] };

		if ((allowed & bit) && f_rule(ctx, nr, "personality", EPERM, 1, &c, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static int f_build(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	int rc;

	/* The i386 entry (int 0x80) has its own numbers and socketcall/ipc
	 * multiplexers; refuse it whole.  libseccomp's x86_64 filter also sends
	 * x32 numbers (nr | 0x40000000) here: the unit test checks it. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
	if (rc < 0)
		return f_fail(err, errlen, "seccomp_attr_set(BADARCH)", rc);
	/* The caller sets no_new_privs (and we check it): libseccomp setting it
	 * quietly would hide a caller that forgot. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc < 0)
		return f_fail(err, errlen, "seccomp_attr_set(NNP)", rc);
	/* The same rules as a binary tree of syscall numbers, not a list: on
	 * install the kernel runs the program over every syscall number to
	 * cache the ones always allowed, and a list makes that walk long
	 * (measured: installing took ~230 us as a list, ~115 us as a tree, on
	 * the start path of every workload). */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		return f_fail(err, errlen, "seccomp_attr_set(OPTIMIZE)", rc);

	for (size_t i = 0; i < sizeof(deny_always) / sizeof(deny_always[0]); i++) {
		const struct deny *d = &deny_always[i];

		if (f_rule(ctx, d->nr, d->name, EPERM, 0, NULL, err, errlen) < 0)
			return -1;
	}
	if (f_namespaces(ctx, err, errlen) < 0 || f_ioctls(ctx, err, errlen) < 0 ||
	    f_socket_domains(ctx, SCMP_SYS(socket), "socket", err, errlen) < 0 ||
	    f_socket_domains(ctx, SCMP_SYS(socketpair), "socketpair", err, errlen) < 0 ||
	    f_seccomp(ctx, err, errlen) < 0 || f_memfd(ctx, err, errlen) < 0 ||
	    f_setid_modes(ctx, err, errlen) < 0 || f_personality(ctx, err, errlen) < 0)
		return -1;
	return 0;
}

int ct_filter_export(int fd, bool observed, char *err, size_t errlen)
{
	return ct_filter_export_with(fd, observed, NULL, 0, err, errlen);
}

int ct_filter_export_with(int fd, bool observed, const int *notify, size_t n_notify, char *err,
			  size_t errlen)
{
	scmp_filter_ctx ctx;
	int rc;

	observing = observed;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return f_fail(err, errlen, "seccomp_init", -ENOMEM);
	if (f_build(ctx, err, errlen) < 0) {
		seccomp_release(ctx);
		return -1;
	}
	/* Whole calls handed to the supervisor: an unconditional rule takes
	 * in the refusals of that call (the same action when observed), which
	 * the supervisor tells apart by running the observed program itself. */
	for (size_t i = 0; i < n_notify; i++) {
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, notify[i], 0, NULL);
		if (rc < 0) {
			char name[32];
			snprintf(name, sizeof(name), "syscall %d", notify[i]);
			seccomp_release(ctx);
			return f_fail(err, errlen, name, rc);
		}
	}
	rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	return rc < 0 ? f_fail(err, errlen, "seccomp_export_bpf", rc) : 0;
}
