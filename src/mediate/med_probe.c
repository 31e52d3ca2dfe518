/* med_probe.c - the start-up probe (mediate.h, docs/mediator.md "When it is on").
 *
 * A host can leave a mediator blind while it looks healthy: a container's
 * seccomp profile refusing listeners, Yama or AppArmor refusing the
 * supervisor another process's memory or descriptors.  Every trapped call
 * would then fail, or worse, nothing would be trapped.  So before a box
 * starts, a child installs a listener on openat and opens a path; this
 * process receives the notification, reads the path from the child's
 * memory, copies a descriptor out of it, and answers with a descriptor of
 * its own that the child reads back: the whole path one emulated open
 * takes.  Any step failing refuses the box with the fix named. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "med_mem.h"
#include "mediate.h"

#define PROBE_PATH "/cairn-mediator-probe"
#define PROBE_DATA "cairn-probe"
#define TIMEOUT_MS 5000

static int send_fd(int sock, int fd)
{
	char c = 'L';
	struct iovec io = { &c, 1 };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_fd(int sock, char *tag)
{
	struct iovec io = { tag, 1 };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	if (h == NULL || h->cmsg_type != SCM_RIGHTS)
		return -2;
	int fd;
	memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

/* The child: raw system calls only (the supervisor may have threads). */
static _Noreturn void child(int sock)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	char err = 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* the supervisor hardened itself non-dumpable, and a fork keeps that:
	 * a sandboxed workload is dumpable again once it execs, so is this */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(2);
	long lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
			   &prog);
	if (lfd < 0) {
		err = (char)errno;
		(void)!write(sock, &err, 1);
		_exit(3);
	}
	if (send_fd(sock, (int)lfd) != 0)
		_exit(4);
	close((int)lfd);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, PROBE_PATH, O_RDONLY | O_CLOEXEC);
	char buf[32] = { 0 };
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char ok = n == (ssize_t)strlen(PROBE_DATA) && memcmp(buf, PROBE_DATA, (size_t)n) == 0
			  ? 'Y' : 'N';
	(void)!write(sock, &ok, 1);
	_exit(0);
}

static int fail(char *err, size_t errlen, const char *fmt, const char *a, int e)
{
	char what[512];
	snprintf(what, sizeof(what), fmt, a);
	snprintf(err, errlen, "the mediator's probe failed: %s (%s). cairn will not run a box it "
		 "cannot mediate; fix the host, or set [containment] mediate = false to leave files "
		 "and launches to the grants", what, strerror(e));
	return -1;
}

int med_probe(char *err, size_t errlen)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return fail(err, errlen, "socketpair%s", "", errno);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return fail(err, errlen, "fork%s", "", e);
	}
	if (pid == 0) {
		close(sv[1]);
		child(sv[0]);
	}
	close(sv[0]);
	int rc = -1, lfd = -1, pfd = -1, pipes[2] = { -1, -1 };
	struct pollfd p = { .fd = sv[1], .events = POLLIN };
	char tag = 0;
	if (poll(&p, 1, TIMEOUT_MS) != 1) {
		fail(err, errlen, "the probe process did not answer%s", "", ETIMEDOUT);
		goto out;
	}
	lfd = recv_fd(sv[1], &tag);
	if (lfd < 0) {
		fail(err, errlen, "the kernel refused a seccomp notification listener%s: a "
		     "container's seccomp profile may refuse it (Docker: --security-opt "
		     "seccomp=unconfined), or the kernel is older than 5.19", "",
		     tag ? tag : EPERM);
		goto out;
	}
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0) {
		fail(err, errlen, "seccomp(SECCOMP_GET_NOTIF_SIZES)%s", "", errno);
		goto out;
	}
	char nbuf[1024] = { 0 }, rbuf[256] = { 0 };
	struct seccomp_notif *n = (void *)nbuf;
	struct seccomp_notif_resp *r = (void *)rbuf;
	if (sz.seccomp_notif > sizeof(nbuf) || sz.seccomp_notif_resp > sizeof(rbuf)) {
		fail(err, errlen, "the kernel's notification is larger than cairn knows%s", "", E2BIG);
		goto out;
	}
	struct pollfd lp = { .fd = lfd, .events = POLLIN };
	if (poll(&lp, 1, TIMEOUT_MS) != 1 || ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, n) != 0) {
		fail(err, errlen, "no notification arrived on the listener%s", "", errno ? errno : ETIMEDOUT);
		goto out;
	}
	char path[64];
	ssize_t pl = med_read_str(n->pid, n->data.args[1], path, sizeof(path));
	if (pl < 0) {
		fail(err, errlen, "cannot read a trapped process's memory%s: Yama "
		     "(kernel.yama.ptrace_scope must be 2 or lower) or an AppArmor or SELinux "
		     "policy refuses process_vm_readv", "", pl == -EFAULT ? EPERM : (int)-pl);
		goto out;
	}
	if (strcmp(path, PROBE_PATH) != 0) {
		fail(err, errlen, "the trapped call's path read back as \"%s\"", path, EIO);
		goto out;
	}
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) != 0) {
		fail(err, errlen, "SECCOMP_IOCTL_NOTIF_ID_VALID%s", "", errno);
		goto out;
	}
	pfd = (int)syscall(SYS_pidfd_open, n->pid, 0);
	int copy = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, 0, 0);
	if (copy < 0) {
		fail(err, errlen, "cannot copy a trapped process's descriptor (pidfd_getfd)%s: "
		     "Yama or a security module refuses it, or the kernel is older than 5.6", "",
		     errno);
		goto out;
	}
	close(copy);
	if (pipe2(pipes, O_CLOEXEC) != 0 ||
	    write(pipes[1], PROBE_DATA, strlen(PROBE_DATA)) != (ssize_t)strlen(PROBE_DATA)) {
		fail(err, errlen, "pipe%s", "", errno);
		goto out;
	}
	struct seccomp_notif_addfd a = { .id = n->id, .flags = SECCOMP_ADDFD_FLAG_SEND,
					 .srcfd = (uint32_t)pipes[0], .newfd_flags = O_CLOEXEC };
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0) {
		fail(err, errlen, "cannot hand the trapped process a descriptor "
		     "(SECCOMP_IOCTL_NOTIF_ADDFD with SEND)%s: the kernel is older than 5.14", "",
		     errno);
		goto out;
	}
	(void)r;
	p.revents = 0;
	char ok = 0;
	if (poll(&p, 1, TIMEOUT_MS) != 1 || read(sv[1], &ok, 1) != 1 || ok != 'Y') {
		fail(err, errlen, "the trapped process did not read the emulated open's "
		     "descriptor back%s", "", EIO);
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < 2; i++)
		if (pipes[i] >= 0)
			close(pipes[i]);
	if (pfd >= 0)
		close(pfd);
	if (lfd >= 0)
		close(lfd);
	close(sv[1]);
	return rc;
}
