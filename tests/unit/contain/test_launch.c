/* test_launch.c - the launcher driven directly: a notification filter whose
 * listener reaches the supervisor and answers the workload's system call, a
 * gateway listener the workload connects to through its own loopback, exit
 * statuses, and setup failures reported with their stage. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contain.h"

static int n_pass, n_fail;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;
	if (ok) {
		n_pass++;
		return;
	}
	n_fail++;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static const struct ct_mount runtime[] = {
	{ .kind = CT_BIND, .path = "/usr", .access = CT_READ | CT_EXEC },
	{ .kind = CT_SYMLINK, .path = "/bin", .target = "usr/bin" },
	{ .kind = CT_SYMLINK, .path = "/lib", .target = "usr/lib" },
	{ .kind = CT_SYMLINK, .path = "/lib64", .target = "usr/lib64" },
	{ .kind = CT_BIND, .path = "/etc/ld.so.cache", .access = CT_READ, .optional = true },
};

static struct ct_spec spec_for(const char *const *argv)
{
	static const char *const env[] = { "PATH=/usr/bin:/bin", NULL };
	struct ct_spec s = { .argv = argv, .envp = env, .cwd = "/", .mounts = runtime,
			     .n_mounts = sizeof(runtime) / sizeof(runtime[0]),
			     .stdio = { -1, -1, -1 }, .tty_fd = -1, .private_proc = true };
	return s;
}

/* Run spec to its end; returns ct_wait's result, *status the wait status. */
static int run(struct ct_spec *s, const struct ct_host *h, int *status, struct ct_error *e)
{
	struct ct_proc p;
	if (ct_launch(s, h, &p, e) < 0)
		return -2;
	int r = ct_start(s, &p, e);
	if (r == 0)
		r = ct_wait(&p, -1, status, e);
	ct_release(&p);
	return r;
}

/* --- a notification filter: uname(2) goes to the supervisor --- */

struct responder {
	int fd;
	int nr_seen;
	pid_t pid_seen;
	int answered;
};

static void *respond(void *arg)
{
	struct responder *r = arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct pollfd pf = { .fd = r->fd, .events = POLLIN };
	/* One notification, answered EACCES; stop when the listener hangs up. */
	while (poll(&pf, 1, 10000) > 0 && !(pf.revents & (POLLHUP | POLLERR))) {
		memset(&req, 0, sizeof(req));
		if (ioctl(r->fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			break;
		r->nr_seen = req.data.nr;
		r->pid_seen = (pid_t)req.pid;
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.error = -EACCES;
		if (ioctl(r->fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0)
			r->answered++;
	}
	return NULL;
}

static void test_notify(const struct ct_host *h)
{
	/* uname -> USER_NOTIF, everything else allowed (arch checked first). */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_uname, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	static const char *const argv[] = { "/usr/bin/uname", "-s", NULL };
	struct ct_spec s = spec_for(argv);
	s.notify_prog = &prog;
	int devnull = open("/dev/null", O_WRONLY);
	s.stdio[1] = s.stdio[2] = devnull;

	struct ct_proc p;
	struct ct_error e;
	int status = -1;
	if (ct_launch(&s, h, &p, &e) < 0) {
		check(false, "notify: launch: %s", e.msg);
		close(devnull);
		return;
	}
	check(p.notify_fd >= 0, "notify: the listener reached the supervisor");
	struct responder r = { .fd = p.notify_fd };
	pthread_t t;
	bool threaded = pthread_create(&t, NULL, respond, &r) == 0;
	int rc = ct_start(&s, &p, &e);
	if (rc == 0)
		rc = ct_wait(&p, -1, &status, &e);
	pid_t workload = p.workload_pid;
	ct_release(&p);       /* closes the listener: the responder sees the hang-up */
	if (threaded)
		pthread_join(t, NULL);
	close(devnull);
	check(rc == 0, "notify: the run ended normally (%s)", e.msg);
	check(r.answered == 1 && r.nr_seen == __NR_uname,
	      "notify: the supervisor answered uname (%d answers, nr %d)", r.answered, r.nr_seen);
	check(r.pid_seen == workload && workload > 0,
	      "notify: the notification names the workload's host pid (%d vs %d)", r.pid_seen,
	      workload);
	check(WIFEXITED(status) && WEXITSTATUS(status) != 0,
	      "notify: uname failed with the supervisor's EACCES (status %#x)", status);
}

/* --- the gateway listener: made inside, accepted outside --- */

static void test_listener(const struct ct_host *h)
{
	static const uint16_t ports[] = { 3128 };
	/* The workload connects to its own 127.0.0.1:3128 and prints what it reads. */
	static const char *const argv[] = {
		"/usr/bin/python3", "-c",
		"import socket; s=socket.create_connection(('127.0.0.1',3128)); "
		"print(s.recv(64).decode(), end='')", NULL };
	if (access("/usr/bin/python3", X_OK) != 0) {
		printf("skip: listener: no /usr/bin/python3\n");
		return;
	}
	struct ct_spec s = spec_for(argv);
	s.listen_ports = ports;
	s.n_listen = 1;
	int pfd[2];
	if (pipe(pfd) < 0)
		return;
	s.stdio[1] = pfd[1];
	struct ct_proc p;
	struct ct_error e;
	int status = -1;
	if (ct_launch(&s, h, &p, &e) < 0) {
		check(false, "listener: launch: %s", e.msg);
		return;
	}
	check(p.n_listen == 1 && p.listen_fds[0] >= 0, "listener: one listening socket passed out");
	close(pfd[1]);
	ct_start(&s, &p, &e);
	int c = accept(p.listen_fds[0], NULL, NULL);
	check(c >= 0, "listener: the workload's connection arrived outside (%s)", strerror(errno));
	if (c >= 0) {
		const char hello[] = "hello from outside";
		check(write(c, hello, sizeof(hello) - 1) == (ssize_t)sizeof(hello) - 1, "listener: write");
		close(c);
	}
	char buf[64] = "";
	ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	int rc = ct_wait(&p, -1, &status, &e);
	ct_release(&p);
	check(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "listener: workload ok");
	check(strcmp(buf, "hello from outside") == 0, "listener: the workload read \"%s\"", buf);
}

static void test_statuses(const struct ct_host *h)
{
	struct ct_error e;
	int status;

	static const char *const exit7[] = { "/bin/sh", "-c", "exit 7", NULL };
	struct ct_spec s = spec_for(exit7);
	check(run(&s, h, &status, &e) == 0 && ct_exit_code(status) == 7, "exit 7 -> 7");

	static const char *const sig[] = { "/bin/sh", "-c", "kill -KILL $$", NULL };
	s = spec_for(sig);
	check(run(&s, h, &status, &e) == 0 && ct_exit_code(status) == 128 + SIGKILL,
	      "SIGKILL -> 137 (%d)", ct_exit_code(status));

	static const char *const missing[] = { "/usr/bin/no-such-program-here", NULL };
	s = spec_for(missing);
	int r = run(&s, h, &status, &e);
	check(r == -1 && strstr(e.msg, "during exec: cannot execute /usr/bin/no-such-program-here"),
	      "exec failure reported: %d %s", r, e.msg);

	static const struct ct_mount bad[] = {
		{ .kind = CT_BIND, .path = "/usr", .access = CT_READ | CT_EXEC },
		{ .kind = CT_BIND, .path = "/no/such/grant", .access = CT_READ },
	};
	static const char *const t[] = { "/usr/bin/true", NULL };
	s = spec_for(t);
	s.mounts = bad;
	s.n_mounts = 2;
	r = run(&s, h, &status, &e);
	check(r == -2 && strstr(e.msg, "during mounts: cannot open /no/such/grant"),
	      "missing source refused with its stage: %s", e.msg);

	check(ct_exit_code(0) == 0 && ct_exit_code(W_EXITCODE(255, 0)) == 255 &&
	      ct_exit_code(W_EXITCODE(0, SIGTERM)) == 143, "ct_exit_code mapping");
}

/* Without a terminal too, the workload executes only at ct_start: cairn run
 * writes the gateway's CA certificate between the two, and a workload that
 * ran before would read an empty file. */
static void test_held_until_start(const struct ct_host *h)
{
	static const char *const argv[] = { "/usr/bin/true", NULL };
	struct ct_spec s = spec_for(argv);
	struct ct_proc p;
	struct ct_error e;
	int status = -1;

	if (ct_launch(&s, h, &p, &e) < 0) {
		check(false, "held: launch: %s", e.msg);
		return;
	}
	/* /usr/bin/true, were it running, would have ended long before. */
	int r = ct_wait(&p, 300, &status, &e);
	check(r == 1, "held: the workload has not run before ct_start (ct_wait %d)", r);
	if (r == 1) {
		r = ct_start(&s, &p, &e);
		if (r == 0)
			r = ct_wait(&p, -1, &status, &e);
		check(r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "held: runs once started (%d %d %s)", r, status, e.msg);
	}
	ct_release(&p);
}

/* Mount points whose parents the view does not hold yet are made, and a
 * parent path that crosses a symbolic link (here in a bound host tree) is
 * refused: the rules the launcher's walk keeps whichever way it resolves
 * the parent. */
static void test_view_points(const struct ct_host *h)
{
	struct ct_error e;
	int status;
	char tmpl[] = "/tmp/ct-view-XXXXXX", real[64], link[64], planted[96], probe[96];

	char *dir = mkdtemp(tmpl);
	if (!dir) {
		check(false, "view points: mkdtemp");
		return;
	}
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(planted, sizeof(planted), "%s/link/planted", dir);
	snprintf(probe, sizeof(probe), "%s/real/planted", dir);
	if (mkdir(real, 0755) < 0 || symlink("real", link) < 0) {
		check(false, "view points: set-up");
		return;
	}

	static const char *const sh[] = {
		"/bin/sh", "-c",
		"test \"$(cat /a/b/c/deep)\" = deep && test \"$(cat /etc/near)\" = near && "
		"test \"$(cat /a/b/side)\" = side", NULL };
	struct ct_mount deep[] = {
		{ .kind = CT_BIND, .path = "/usr", .access = CT_READ | CT_EXEC },
		{ .kind = CT_SYMLINK, .path = "/bin", .target = "usr/bin" },
		{ .kind = CT_SYMLINK, .path = "/lib", .target = "usr/lib" },
		{ .kind = CT_SYMLINK, .path = "/lib64", .target = "usr/lib64" },
		{ .kind = CT_FILE, .path = "/a/b/c/deep", .data = "deep\n", .len = 5 },
		{ .kind = CT_FILE, .path = "/etc/near", .data = "near\n", .len = 5 },
		{ .kind = CT_FILE, .path = "/a/b/side", .data = "side\n", .len = 5 },
	};
	struct ct_spec s = spec_for(sh);
	s.mounts = deep;
	s.n_mounts = sizeof(deep) / sizeof(deep[0]);
	int r = run(&s, h, &status, &e);
	check(r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "view points: files under parents made on the way (%d %d %s)", r, status, e.msg);

	static const char *const t[] = { "/usr/bin/true", NULL };
	struct ct_mount through[] = {
		{ .kind = CT_BIND, .path = "/usr", .access = CT_READ | CT_EXEC },
		{ .kind = CT_BIND, .path = dir, .access = CT_READ | CT_WRITE },
		{ .kind = CT_FILE, .path = planted, .data = "x", .len = 1 },
	};
	s = spec_for(t);
	s.mounts = through;
	s.n_mounts = sizeof(through) / sizeof(through[0]);
	r = run(&s, h, &status, &e);
	check(r == -2 && strstr(e.msg, "during mounts: ") && strstr(e.msg, planted),
	      "view points: a symbolic link on the parent path is refused: %d %s", r, e.msg);
	check(access(probe, F_OK) < 0 && errno == ENOENT,
	      "view points: nothing was made through the link");

	unlink(probe);
	unlink(link);
	rmdir(real);
	rmdir(dir);
}

/* Launch while another thread allocates all the time: the sandbox's
 * processes must not need a lock that thread held at clone3. */
static volatile int churn_stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!churn_stop) {
		void *v[64];
		for (int i = 0; i < 64; i++)
			v[i] = malloc((size_t)(16 + i * 37));
		for (int i = 0; i < 64; i++)
			free(v[i]);
	}
	return NULL;
}

static void test_threaded(const struct ct_host *h)
{
	static const char *const argv[] = { "/usr/bin/true", NULL };
	pthread_t t;
	int ok = 0, status;
	struct ct_error e;

	if (pthread_create(&t, NULL, churn, NULL) != 0) {
		check(false, "threaded: pthread_create");
		return;
	}
	alarm(120);     /* a deadlock fails the test instead of hanging it */
	for (int i = 0; i < 30; i++) {
		struct ct_spec s = spec_for(argv);
		ok += run(&s, h, &status, &e) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	alarm(0);
	churn_stop = 1;
	pthread_join(t, NULL);
	check(ok == 30, "threaded: 30 launches beside an allocating thread (%d ok)", ok);
}

int main(void)
{
	struct ct_host h;
	struct ct_error e;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ct_preflight(&h, NULL, &e) < 0) {
		printf("FAIL: preflight: %s\n0 passed, 1 failed\n", e.msg);
		return 1;
	}
	test_statuses(&h);
	test_held_until_start(&h);
	test_view_points(&h);
	test_listener(&h);
	test_notify(&h);
	test_threaded(&h);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail > 0;
}
