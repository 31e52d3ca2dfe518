/* refusal.c - describing and answering the observed deny filter's refusals
 * (refusal.h).  The names and argument words cover what filter_build.c
 * refuses with EPERM; the unit test checks every such call has a name. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "refusal.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "refusal.c: x86_64 and aarch64 only, as filter_build.c"
#endif

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

/* How a call's arguments are described: which rule of filter_build.c read them. */
enum argv_kind { A_NONE, A_SOCKET, A_CLONE_FLAGS, A_IOCTL, A_SECCOMP, A_MEMFD, A_MODE1, A_MODE2,
		 A_OPEN1, A_OPEN2, A_PERSONA };

struct call {
	int nr;
	const char *name;
	enum argv_kind kind;
};

#define C(n, k) { __NR_##n, #n, k }

static const struct call calls[] = {
	C(io_uring_setup, A_NONE), C(io_uring_enter, A_NONE), C(io_uring_register, A_NONE),
	C(ptrace, A_NONE), C(process_vm_readv, A_NONE), C(process_vm_writev, A_NONE),
	C(pidfd_getfd, A_NONE), C(process_madvise, A_NONE), C(bpf, A_NONE),
	C(perf_event_open, A_NONE), C(userfaultfd, A_NONE), C(keyctl, A_NONE),
	C(add_key, A_NONE), C(request_key, A_NONE), C(kexec_load, A_NONE),
	C(kexec_file_load, A_NONE), C(init_module, A_NONE), C(finit_module, A_NONE),
	C(delete_module, A_NONE), C(mount, A_NONE), C(umount2, A_NONE), C(pivot_root, A_NONE),
	C(chroot, A_NONE), C(fsopen, A_NONE), C(fsconfig, A_NONE), C(fsmount, A_NONE),
	C(fspick, A_NONE), C(move_mount, A_NONE), C(open_tree, A_NONE),
	C(mount_setattr, A_NONE), C(open_by_handle_at, A_NONE), C(name_to_handle_at, A_NONE),
	C(setns, A_NONE), C(acct, A_NONE), C(swapon, A_NONE), C(swapoff, A_NONE),
	C(reboot, A_NONE), C(settimeofday, A_NONE), C(clock_settime, A_NONE),
	C(clock_adjtime, A_NONE), C(adjtimex, A_NONE), C(syslog, A_NONE), C(quotactl, A_NONE),
	C(quotactl_fd, A_NONE), C(lookup_dcookie, A_NONE), C(vhangup, A_NONE),
	C(nfsservctl, A_NONE),
#ifdef __NR_uselib
	C(uselib, A_NONE),
#endif
#ifdef __NR_modify_ldt
	C(modify_ldt, A_NONE), C(iopl, A_NONE), C(ioperm, A_NONE),
#endif
	C(unshare, A_CLONE_FLAGS), C(clone, A_CLONE_FLAGS), C(ioctl, A_IOCTL),
	C(socket, A_SOCKET), C(socketpair, A_SOCKET), C(seccomp, A_SECCOMP),
	C(memfd_create, A_MEMFD),
#ifdef __NR_chmod
	C(chmod, A_MODE1), C(creat, A_MODE1), C(mknod, A_MODE1), C(open, A_OPEN1),
#endif
	C(fchmod, A_MODE1), C(fchmodat, A_MODE2), C(fchmodat2, A_MODE2), C(mknodat, A_MODE2),
	C(openat, A_OPEN2), C(personality, A_PERSONA),
};

static const struct call *find(int nr)
{
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].nr == nr)
			return &calls[i];
	return NULL;
}

const char *ct_refusal_name(int nr, char *buf, size_t len)
{
	const struct call *c = find(nr);
	if (c != NULL)
		return c->name;
	snprintf(buf, len, "syscall %d", nr);
	return buf;
}

struct word {
	uint64_t v;
	const char *name;
};

/* The families the filter refuses, by name (linux/socket.h). */
static const struct word families[] = {
	{ 0, "AF_UNSPEC" }, { 3, "AF_AX25" }, { 4, "AF_IPX" }, { 5, "AF_APPLETALK" },
	{ 6, "AF_NETROM" }, { 7, "AF_BRIDGE" }, { 8, "AF_ATMPVC" }, { 9, "AF_X25" },
	{ 11, "AF_ROSE" }, { 12, "AF_DECnet" }, { 13, "AF_NETBEUI" }, { 14, "AF_SECURITY" },
	{ 15, "AF_KEY" }, { 16, "AF_NETLINK" }, { 17, "AF_PACKET" }, { 18, "AF_ASH" },
	{ 19, "AF_ECONET" }, { 20, "AF_ATMSVC" }, { 21, "AF_RDS" }, { 22, "AF_SNA" },
	{ 23, "AF_IRDA" }, { 24, "AF_PPPOX" }, { 25, "AF_WANPIPE" }, { 26, "AF_LLC" },
	{ 27, "AF_IB" }, { 28, "AF_MPLS" }, { 29, "AF_CAN" }, { 30, "AF_TIPC" },
	{ 31, "AF_BLUETOOTH" }, { 32, "AF_IUCV" }, { 33, "AF_RXRPC" }, { 34, "AF_ISDN" },
	{ 35, "AF_PHONET" }, { 36, "AF_IEEE802154" }, { 37, "AF_CAIF" }, { 38, "AF_ALG" },
	{ 39, "AF_NFC" }, { 40, "AF_VSOCK" }, { 41, "AF_KCM" }, { 42, "AF_QIPCRTR" },
	{ 43, "AF_SMC" }, { 44, "AF_XDP" }, { 45, "AF_MCTP" },
	{ 1, "AF_UNIX" }, { 2, "AF_INET" }, { 10, "AF_INET6" },
};

static const struct word types[] = {
	{ 1, "SOCK_STREAM" }, { 2, "SOCK_DGRAM" }, { 3, "SOCK_RAW" }, { 4, "SOCK_RDM" },
	{ 5, "SOCK_SEQPACKET" }, { 6, "SOCK_DCCP" }, { 10, "SOCK_PACKET" },
};

static const struct word clone_flags[] = {
	{ CLONE_NEWNS, "CLONE_NEWNS" }, { CLONE_NEWUSER, "CLONE_NEWUSER" },
	{ CLONE_NEWPID, "CLONE_NEWPID" }, { CLONE_NEWNET, "CLONE_NEWNET" },
	{ CLONE_NEWIPC, "CLONE_NEWIPC" }, { CLONE_NEWUTS, "CLONE_NEWUTS" },
	{ CLONE_NEWCGROUP, "CLONE_NEWCGROUP" }, { 0x80, "CLONE_NEWTIME" },
};

static const struct word memfd_flags[] = {
	{ 0x1, "MFD_CLOEXEC" }, { 0x2, "MFD_ALLOW_SEALING" }, { 0x4, "MFD_HUGETLB" },
	{ 0x8, "MFD_NOEXEC_SEAL" }, { 0x10, "MFD_EXEC" },
};

/* out += "<key>=<name of v>" (or v in decimal). */
static void put_word(char *out, size_t len, const char *key, uint64_t v, const struct word *w,
		     size_t n)
{
	size_t at = strlen(out);
	for (size_t i = 0; i < n; i++)
		if (w[i].v == v) {
			snprintf(out + at, len - at, "%s%s=%s", at ? " " : "", key, w[i].name);
			return;
		}
	snprintf(out + at, len - at, "%s%s=%llu", at ? " " : "", key, (unsigned long long)v);
}

/* out += "<key>=A|B" for the bits of v named in w (v's other bits as 0x...; "0" for none). */
static void put_bits(char *out, size_t len, const char *key, uint64_t v, const struct word *w,
		     size_t n)
{
	size_t at = strlen(out);
	at += (size_t)snprintf(out + at, len - at, "%s%s=", at ? " " : "", key);
	bool any = false;
	for (size_t i = 0; i < n && at < len; i++)
		if (v & w[i].v) {
			at += (size_t)snprintf(out + at, len - at, "%s%s", any ? "|" : "", w[i].name);
			v &= ~w[i].v;
			any = true;
		}
	if (at < len && (v != 0 || !any))
		snprintf(out + at, len - at, "%s0x%llx", any ? "|" : "", (unsigned long long)v);
}

static void put_mode(char *out, size_t len, uint64_t mode)
{
	size_t at = strlen(out);
	snprintf(out + at, len - at, "%smode=0%llo", at ? " " : "",
		 (unsigned long long)(mode & 07777));
}

void ct_refusal_args(int nr, const uint64_t a[6], char *out, size_t len)
{
	static const struct word ioctls[] = { { 0x5412, "TIOCSTI" }, { 0x541c, "TIOCLINUX" } };
	static const struct word seccomp_ops[] = { { 1, "SECCOMP_SET_MODE_FILTER" } };
	static const struct word seccomp_flags[] = {
		{ 1, "SECCOMP_FILTER_FLAG_TSYNC" }, { 2, "SECCOMP_FILTER_FLAG_LOG" },
		{ 4, "SECCOMP_FILTER_FLAG_SPEC_ALLOW" }, { 8, "SECCOMP_FILTER_FLAG_NEW_LISTENER" },
		{ 16, "SECCOMP_FILTER_FLAG_TSYNC_ESRCH" },
		{ 32, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV" },
	};
	static const struct word open_flags[] = { { O_CREAT, "O_CREAT" },
						  { __O_TMPFILE, "O_TMPFILE" } };
	const struct call *c = find(nr);
	const uint64_t ns = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
			    CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | 0x80;

	if (len == 0)
		return;
	out[0] = '\0';
	switch (c ? c->kind : A_NONE) {
	case A_NONE:
		break;
	case A_SOCKET:
		/* the kernel reads ints: a refused domain may be any 64-bit value */
		put_word(out, len, "family", a[0], families, sizeof(families) / sizeof(families[0]));
		put_word(out, len, "type", a[1] & 0xf, types, sizeof(types) / sizeof(types[0]));
		break;
	case A_CLONE_FLAGS:
		/* only the namespace bits refuse it; clone's low byte is its exit signal */
		put_bits(out, len, "flags", a[0] & (nr == __NR_clone ? ns & ~0x80ULL : ns),
			 clone_flags, sizeof(clone_flags) / sizeof(clone_flags[0]));
		break;
	case A_IOCTL:
		put_word(out, len, "request", a[1] & 0xffffffffULL, ioctls, 2);
		break;
	case A_SECCOMP:
		put_word(out, len, "operation", a[0] & 0xffffffffULL, seccomp_ops, 1);
		put_bits(out, len, "flags", a[1], seccomp_flags,
			 sizeof(seccomp_flags) / sizeof(seccomp_flags[0]));
		break;
	case A_MEMFD:
		put_bits(out, len, "flags", a[1] & 0xffffffffULL, memfd_flags,
			 sizeof(memfd_flags) / sizeof(memfd_flags[0]));
		break;
	case A_MODE1:
		put_mode(out, len, a[1]);
		break;
	case A_MODE2:
		put_mode(out, len, a[2]);
		break;
	case A_OPEN1:
	case A_OPEN2: {
		unsigned f = c->kind == A_OPEN1 ? 1 : 2;
		uint64_t flags = a[f] & (O_CREAT | __O_TMPFILE);
		if ((flags & __O_TMPFILE) == __O_TMPFILE)
			flags &= ~(uint64_t)O_DIRECTORY;        /* O_TMPFILE holds O_DIRECTORY */
		put_bits(out, len, "flags", flags, open_flags, 2);
		put_mode(out, len, a[f + 1]);
		break;
	}
	case A_PERSONA: {
		size_t at = strlen(out);
		snprintf(out + at, len - at, "persona=0x%08llx",
			 (unsigned long long)(a[0] & 0xffffffffULL));
		break;
	}
	}
}

/* readlink of /proc/<pid>/<what> into out ("" when it cannot be read). */
static void proc_link(pid_t pid, const char *what, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	ssize_t n = readlink(path, out, len - 1);
	out[n > 0 ? (size_t)n : 0] = '\0';
}

static size_t proc_cmdline(pid_t pid, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	while (fd >= 0 && n < len) {
		ssize_t k = read(fd, out + n, len - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (fd >= 0)
		close(fd);
	if (n == len)
		out[len - 1] = '\0';    /* cut: the last argument ends at the cut */
	else if (n > 0 && out[n - 1] != '\0')
		out[n++] = '\0';
	return n;
}

size_t ct_refusal_argv(const struct ct_refusal *f, const char **argv, size_t max)
{
	size_t n = 0;
	for (size_t at = 0; at < f->cmdline_len && n < max;) {
		argv[n++] = f->cmdline + at;
		at += strnlen(f->cmdline + at, f->cmdline_len - at) + 1;
	}
	return n;
}

bool ct_refusal_describe(int fd, const struct seccomp_notif *n, struct ct_refusal *out)
{
	char unknown[32];
	memset(out, 0, offsetof(struct ct_refusal, exe));
	out->pid = (pid_t)n->pid;
	if (n->data.arch == NATIVE_ARCH) {
		const char *name = ct_refusal_name(n->data.nr, unknown, sizeof(unknown));
		out->syscall = name == unknown ? "(unknown)" : name;
		ct_refusal_args(n->data.nr, (const uint64_t *)n->data.args, out->args,
				sizeof(out->args));
	} else {
		out->syscall = "(foreign ABI)";         /* never: the filter refuses them whole */
		out->args[0] = '\0';
	}
	proc_link(out->pid, "exe", out->exe, sizeof(out->exe));
	proc_link(out->pid, "cwd", out->cwd, sizeof(out->cwd));
	out->cmdline_len = proc_cmdline(out->pid, out->cmdline, sizeof(out->cmdline));
	/* Still the caller that made the call (it could have been killed and its
	 * pid reused while /proc was read)?  Then what was read is its own. */
	return ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) == 0;
}

int ct_refusal_next(int fd, int stop_fd, int timeout_ms, struct ct_refusal *out)
{
	struct pollfd pf[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	int k = poll(pf, stop_fd >= 0 ? 2 : 1, timeout_ms);
	if (k < 0)
		return errno == EINTR ? 0 : -errno;
	if (k == 0 || (stop_fd >= 0 && (pf[1].revents & POLLIN)))
		return 0;
	if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
		return (pf[0].revents & POLLHUP) ? -EPIPE : -EIO;
	if (!(pf[0].revents & POLLIN))
		return 0;

	struct seccomp_notif n;
	memset(&n, 0, sizeof(n));       /* the kernel refuses a struct that is not zeroed */
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0)
		return errno == ENOENT || errno == EINTR ? 0 : -errno;  /* ENOENT: it vanished */

	bool valid = ct_refusal_describe(fd, &n, out);
	struct seccomp_notif_resp r = { .id = n.id, .error = -EPERM };
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &r) != 0 || !valid)
		return 0;               /* gone: nothing was answered, nothing happened */
	return 1;
}
