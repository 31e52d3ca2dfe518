/* med_floor.c - the kernel's share of a mediated call, with no mediator
 * (mediate-bench's floor rows, bench/README.md).
 *
 *   med-floor N    prints "continue_p50_ns addfd_p50_ns native_p50_ns"
 *
 * A child installs a seccomp filter that sends every openat to a listener
 * (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP set, as the mediator sets it) and
 * times N opens of /dev/null; the parent answers each at once, with no work
 * between receiving and answering: first with SECCOMP_USER_NOTIF_FLAG_CONTINUE
 * (what a let-through call costs at least), then by installing a descriptor
 * of its own with SECCOMP_IOCTL_NOTIF_ADDFD and SECCOMP_ADDFD_FLAG_SEND (what
 * a performed open costs at least).  The same opens unfiltered are the native
 * column.  Two threads take turns receiving, as the mediator's workers do
 * (src/mediate/med_server.c): one at a time in RECV, the turn handed on
 * before an ADDFD. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

static int send_fd(int sock, int fd)
{
	char c = 0;
	struct iovec iov = { &c, 1 };
	char buf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf,
			     .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { &c, 1 };
	char buf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf,
			     .msg_controllen = sizeof(buf) };
	if (recvmsg(sock, &mh, 0) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	if (cm == NULL || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The child: N timed opens, twice (the parent answers each round its way);
 * the p50s written to the socket. */
static void child(int sock, size_t n)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	uint64_t *t = calloc(n, sizeof(*t)), res[3];
	if (t == NULL || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(1);
	for (size_t i = 0; i < n; i++) {         /* native, before the filter */
		uint64_t t0 = bench_now_ns();
		int fd = open("/dev/null", O_RDONLY);
		t[i] = bench_now_ns() - t0;
		close(fd);
	}
	res[2] = bench_pct(t, n, 0.5);
	int lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			       SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0 || send_fd(sock, lfd) != 0)
		_exit(1);
	close(lfd);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < n; i++) {
			uint64_t t0 = bench_now_ns();
			int fd = open("/dev/null", O_RDONLY);
			t[i] = bench_now_ns() - t0;
			if (fd < 0)
				_exit(1);
			close(fd);
		}
		res[round] = bench_pct(t, n, 0.5);
	}
	if (write(sock, res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
	_exit(0);
}

struct server {
	int lfd, devnull;
	size_t n;
	size_t notif_size, resp_size;
	pthread_mutex_t turn;
	atomic_size_t served;
	atomic_bool failed;
};

static void *serve(void *arg)
{
	struct server *sv = arg;
	struct seccomp_notif *req = calloc(1, sv->notif_size);
	struct seccomp_notif_resp *resp = calloc(1, sv->resp_size);
	bool mine = false;
	while (req != NULL && resp != NULL && atomic_load(&sv->served) < 2 * sv->n) {
		if (!mine) {
			pthread_mutex_lock(&sv->turn);
			mine = true;
			continue;
		}
		memset(req, 0, sv->notif_size);
		if (ioctl(sv->lfd, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
			struct pollfd pf = { .fd = sv->lfd, .events = POLLIN };
			if (errno == EINTR || (errno == ENOENT && !(poll(&pf, 1, 0) == 1 &&
								   (pf.revents & POLLHUP))))
				continue;
			break;
		}
		if (atomic_fetch_add(&sv->served, 1) < sv->n) {
			memset(resp, 0, sv->resp_size);
			resp->id = req->id;
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			if (ioctl(sv->lfd, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0)
				atomic_store(&sv->failed, true);
		} else {
			struct seccomp_notif_addfd a = { .id = req->id, .flags = SECCOMP_ADDFD_FLAG_SEND,
							 .srcfd = (uint32_t)sv->devnull };
			mine = false;
			pthread_mutex_unlock(&sv->turn);
			if (ioctl(sv->lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0)
				atomic_store(&sv->failed, true);
		}
	}
	if (mine)
		pthread_mutex_unlock(&sv->turn);
	free(req);
	free(resp);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
	int sp[2];
	if (n == 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		close(sp[0]);
		child(sp[1], n);
	}
	close(sp[1]);
	struct server sv = { .n = n, .lfd = recv_fd(sp[0]) };
	if (sv.lfd < 0) {
		fprintf(stderr, "med-floor: no listener\n");
		return 1;
	}
	(void)ioctl(sv.lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0)
		return 1;
	sv.notif_size = sz.seccomp_notif > sizeof(struct seccomp_notif)
				? sz.seccomp_notif : sizeof(struct seccomp_notif);
	sv.resp_size = sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
			       ? sz.seccomp_notif_resp : sizeof(struct seccomp_notif_resp);
	sv.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&sv.turn, NULL);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, serve, &sv);
	uint64_t res[3];
	bool got = read(sp[0], res, sizeof(res)) == (ssize_t)sizeof(res);
	int st;
	waitpid(pid, &st, 0);           /* the listener hangs up: a waiting RECV ends */
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (!got || atomic_load(&sv.failed) || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "med-floor: the child's opens failed\n");
		return 1;
	}
	printf("%llu %llu %llu\n", (unsigned long long)res[0], (unsigned long long)res[1],
	       (unsigned long long)res[2]);
	return 0;
}
