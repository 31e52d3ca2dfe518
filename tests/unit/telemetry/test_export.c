/* test_export.c - the exporter's channel (exportctl.h) held to its protocol
 * from both ends: cairn-export run directly and fed frames, good and bad
 * (each bad one refused with its reason, exit 1), and the supervisor's side
 * (export.c) when the process dies under it.  Also the shared checks: URLs,
 * header values, the secret's line. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export.h"
#include "exportctl.h"
#include "test.h"

/* ---- a loopback HTTP server answering each connection with one status ------------- */

struct server {
	int fd;
	uint16_t port;
	const char *answer;             /* NULL: accept and never answer */
	int served;
	pthread_t th;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	for (;;) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char buf[65536];
		ssize_t k;
		/* read the head and the body it announces */
		size_t got = 0, need = 0;
		char *end = NULL;
		while ((k = read(c, buf + got, sizeof(buf) - 1 - got)) > 0) {
			got += (size_t)k;
			buf[got] = '\0';
			if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
				const char *cl = strstr(buf, "content-length: ");
				need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
			}
			if (end != NULL && got >= need)
				break;
		}
		s->served++;
		if (s->answer == NULL) {
			pause();        /* hangs; the test ends the process */
		}
		(void)!write(c, s->answer, strlen(s->answer));
		close(c);
	}
}

static void server_start(struct server *s, const char *answer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	s->answer = answer;
	s->served = 0;
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(bind(s->fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(s->fd, 16) == 0 &&
	      getsockname(s->fd, (struct sockaddr *)&a, &al) == 0);
	s->port = ntohs(a.sin_port);
	pthread_create(&s->th, NULL, serve, s);
}

/* ---- cairn-export, run by hand ------------------------------------------------------ */

struct proc {
	pid_t pid;
	int ctl;                        /* our end of fd 3 */
	int err;                        /* its stderr */
};

static void proc_start(struct proc *p)
{
	int sv[2], ep[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(pipe2(ep, O_CLOEXEC) == 0);
	char parent[24];
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	p->pid = fork();
	if (p->pid == 0) {
		dup2(sv[1], EXP_FD);
		dup2(ep[1], 2);
		execl(EXPORT_PATH, "cairn-export", parent, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	close(ep[1]);
	p->ctl = sv[0];
	p->err = ep[0];
}

/* Wait for it (killed if it has not ended in 20 s: a frame it should have
 * refused and did not): its exit status, and its stderr in out. */
static int proc_end(struct proc *p, char *out, size_t len)
{
	int st = 0;
	size_t n = 0;
	bool killed = false;
	for (int waited = 0;;) {
		struct pollfd pf = { .fd = p->err, .events = POLLIN };
		int k = poll(&pf, 1, 100);
		if (k > 0) {
			ssize_t r = read(p->err, out + n, len - 1 - n);
			if (r <= 0 || (n += (size_t)r) + 1 >= len)
				break;
		} else if ((waited += 100) >= 20000 && !killed) {
			kill(p->pid, SIGKILL);
			killed = true;
		}
	}
	out[n] = '\0';
	waitpid(p->pid, &st, 0);
	if (p->ctl >= 0)
		close(p->ctl);
	close(p->err);
	if (killed)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void send_w(struct proc *p, const struct exp_wire *w, const int *fds, size_t nfds)
{
	struct iovec iov = { .iov_base = w->p, .iov_len = w->n };
	union {
		char b[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} c;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		memset(&c, 0, sizeof(c));
		m.msg_control = c.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * nfds);
	}
	(void)sendmsg(p->ctl, &m, MSG_NOSIGNAL);
}

static void send_hello(struct proc *p, uint32_t version, uint32_t n)
{
	uint8_t b[64];
	struct exp_wire w = { b, 0, sizeof(b), false };
	exp_put_u32(&w, EXP_HELLO);
	exp_put_u32(&w, version);
	exp_put_u32(&w, n);
	send_w(p, &w, NULL, 0);
}

static void send_target(struct proc *p, uint32_t index, const char *url, const char *trailer)
{
	uint8_t b[4096];
	struct exp_wire w = { b, 0, sizeof(b), false };
	exp_put_u32(&w, EXP_TARGET);
	exp_put_u32(&w, index);
	exp_put_str(&w, "[telemetry.t]");
	exp_put_str(&w, url);
	exp_put_str(&w, "x-key");
	exp_put_str(&w, "k");
	if (trailer != NULL)
		exp_put_str(&w, trailer);
	send_w(p, &w, NULL, 0);
}

/* A memfd of len bytes, sealed (or not). */
static int body(size_t len, bool sealed)
{
	int fd = memfd_create("b", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char x[64] = { 0x0a, 0x00 };
	for (size_t i = 0; i < len; i += sizeof(x))
		(void)!write(fd, x, len - i < sizeof(x) ? len - i : sizeof(x));
	if (sealed)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	return fd;
}

static void send_submit(struct proc *p, uint32_t target, uint64_t seq, uint32_t len, int fd,
			int fd2)
{
	uint8_t b[64];
	struct exp_wire w = { b, 0, sizeof(b), false };
	int fds[2] = { fd, fd2 };
	exp_put_u32(&w, EXP_SUBMIT);
	exp_put_u32(&w, target);
	exp_put_u32(&w, TM_ROUTE_LOGS);
	exp_put_u32(&w, 1);
	exp_put_u64(&w, seq);
	exp_put_u32(&w, len);
	send_w(p, &w, fds, fd < 0 ? 0 : fd2 < 0 ? 1 : 2);
}

/* The next EXP_DONE: 0 and its fields, or -1. */
static int read_done(struct proc *p, uint64_t *seq, uint32_t *ok, char *error)
{
	uint8_t b[512];
	struct pollfd pf = { .fd = p->ctl, .events = POLLIN };
	if (poll(&pf, 1, 20000) != 1)
		return -1;
	ssize_t k = recv(p->ctl, b, sizeof(b), 0);
	if (k <= 0)
		return -1;
	struct exp_wire r = { b, (size_t)k, (size_t)k, false };
	uint32_t op = exp_get_u32(&r);
	exp_get_u32(&r);
	*seq = exp_get_u64(&r);
	*ok = exp_get_u32(&r);
	exp_get_str(&r, error, EXP_ERROR_MAX);
	return op == EXP_DONE && !r.bad && r.n == 0 ? 0 : -1;
}

static void test_good_exchange(void)
{
	struct server s;
	struct proc p;
	char url[64], err[1024], error[EXP_ERROR_MAX + 1];
	uint64_t seq;
	uint32_t ok;
	server_start(&s, "HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", s.port);
	proc_start(&p);
	send_hello(&p, EXP_VERSION, 1);
	send_target(&p, 0, url, NULL);
	int fd = body(100, true);
	send_submit(&p, 0, 1, 100, fd, -1);
	close(fd);
	CHECK(read_done(&p, &seq, &ok, error) == 0);
	CHECK_EQ_INT(seq, 1);
	CHECK_EQ_INT(ok, 1);
	CHECK_EQ_STR(error, "");
	fd = body(5000, true);
	send_submit(&p, 0, 2, 5000, fd, -1);
	close(fd);
	CHECK(read_done(&p, &seq, &ok, error) == 0 && seq == 2 && ok == 1);
	shutdown(p.ctl, SHUT_WR);               /* the drain: it exits 0 */
	CHECK_EQ_INT(proc_end(&p, err, sizeof(err)), 0);
	CHECK_EQ_STR(err, "");
	CHECK_EQ_INT(s.served, 2);
	close(s.fd);
}

/* Each bad frame ends the process with status 1 and says why. */
static void expect_refusal(struct proc *p, const char *why)
{
	char err[1024];
	CHECK_EQ_INT(proc_end(p, err, sizeof(err)), 1);
	CHECK(strstr(err, why) != NULL);
	if (strstr(err, why) == NULL)
		fprintf(stderr, "  wanted \"%s\", got \"%s\"\n", why, err);
}

static void test_bad_frames(void)
{
	struct proc p;
	uint8_t b[64];
	struct exp_wire w = { b, 0, sizeof(b), false };

	proc_start(&p);                         /* a submit first */
	send_submit(&p, 0, 1, 10, -1, -1);
	expect_refusal(&p, "the first frame is not a hello");

	proc_start(&p);
	send_hello(&p, 2, 1);
	expect_refusal(&p, "speaks version 2 of the channel");

	proc_start(&p);
	send_hello(&p, EXP_VERSION, 0);
	expect_refusal(&p, "0 targets");

	proc_start(&p);
	send_hello(&p, EXP_VERSION, TM_EXPORT_TARGETS_MAX + 1);
	expect_refusal(&p, "17 targets");

	proc_start(&p);                         /* trailing bytes after the hello */
	exp_put_u32(&w, EXP_HELLO);
	exp_put_u32(&w, EXP_VERSION);
	exp_put_u32(&w, 1);
	exp_put_u32(&w, 0);
	send_w(&p, &w, NULL, 0);
	expect_refusal(&p, "the first frame is not a hello");

	proc_start(&p);
	send_hello(&p, EXP_VERSION, 2);
	send_target(&p, 1, "http://127.0.0.1:9", NULL);     /* out of order */
	expect_refusal(&p, "target 0 of 2 is malformed");

	proc_start(&p);
	send_hello(&p, EXP_VERSION, 1);
	send_target(&p, 0, "http://127.0.0.1:9", "extra");
	expect_refusal(&p, "target 0 of 1 is malformed");

	proc_start(&p);
	send_hello(&p, EXP_VERSION, 1);
	send_target(&p, 0, "http://u@127.0.0.1:9", NULL);
	expect_refusal(&p, "[telemetry.t]: the destination \"http://u@127.0.0.1:9\" carries a user "
		       "name or password");

	static const struct {
		uint32_t target;
		uint64_t seq;
		uint32_t len;
		int kind;               /* 0 sealed, 1 none, 2 unsealed, 3 two, 4 wrong size */
		const char *why;
	} sub[] = {
		{ 0, 1, 10, 1, "a submit without its body" },
		{ 0, 1, 10, 2, "a body that is not a sealed memfd of 10 bytes" },
		{ 0, 1, 10, 3, "2 descriptors with one frame" },
		{ 0, 1, 10, 4, "a body that is not a sealed memfd of 10 bytes" },
		{ 1, 1, 10, 0, "a submit out of range (target 1" },
		{ 0, 2, 10, 0, "seq 2 after 0" },
		{ 0, 1, 0, 0, "0 bytes" },
		{ 0, 1, (4u << 20) + 1, 0, "4194305 bytes" },
	};
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		proc_start(&p);
		send_hello(&p, EXP_VERSION, 1);
		send_target(&p, 0, "http://127.0.0.1:9", NULL);
		/* the range is checked before the body: a one-byte body will do */
		int a = -1, c = -1;
		if (sub[i].kind == 0 || sub[i].kind == 3)
			a = body(sub[i].kind == 0 ? 1 : 10, true);
		if (sub[i].kind == 2)
			a = body(10, false);
		if (sub[i].kind == 3)
			c = body(10, true);
		if (sub[i].kind == 4)
			a = body(11, true);
		send_submit(&p, sub[i].target, sub[i].seq, sub[i].len, a, c);
		if (a >= 0)
			close(a);
		if (c >= 0)
			close(c);
		expect_refusal(&p, sub[i].why);
	}

	/* more outstanding than the supervisor may have: a hung collector
	 * holds the first, the queue the next three, the fifth is refused */
	struct server s;
	char url[64];
	server_start(&s, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", s.port);
	proc_start(&p);
	send_hello(&p, EXP_VERSION, 1);
	send_target(&p, 0, url, NULL);
	for (uint64_t q = 1; q <= TM_EXPORT_QUEUE + 1; q++) {
		int fd = body(10, true);
		send_submit(&p, 0, q, 10, fd, -1);
		close(fd);
	}
	expect_refusal(&p, "target 0 has 4 bodies outstanding already");
}

/* Started by hand, not by cairn run: refused. */
static void test_not_by_hand(void)
{
	char err[256];
	struct proc p;
	int ep[2];
	CHECK(pipe2(ep, O_CLOEXEC) == 0);
	p.pid = fork();
	if (p.pid == 0) {
		dup2(ep[1], 2);
		execl(EXPORT_PATH, "cairn-export", (char *)NULL);
		_exit(127);
	}
	close(ep[1]);
	p.err = ep[0];
	p.ctl = -1;
	int st = proc_end(&p, err, sizeof(err));
	CHECK_EQ_INT(st, 1);
	CHECK(strstr(err, "started by `cairn run`, not by hand") != NULL);
}

/* ---- the supervisor's side --------------------------------------------------------------- */

/* The exporter this process spawned (its only child). */
static pid_t child_of_self(void)
{
	char path[64], buf[64] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atoi(buf);
}

static void test_dead_exporter(void)
{
	struct server s;
	char url[64], err[512];
	server_start(&s, NULL);                 /* hangs: the body stays outstanding */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", s.port);
	struct tm_otlp_target t = { "[telemetry.t]", url, NULL, NULL };
	struct tm_exporter *x = NULL;
	CHECK(tm_exporter_start(&t, 1, &x, err, sizeof(err)) == 0);
	uint8_t bodyb[16] = { 0x0a, 0x00 };
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_LOGS, bodyb, 2, 3), 0);
	CHECK_EQ_INT(tm_exporter_submit(x, 1, TM_ROUTE_LOGS, bodyb, 2, 3), -EINVAL);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_LOGS, bodyb, 0, 3), -EINVAL);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_LOGS, bodyb, 2, 0), -EINVAL);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, (enum tm_route)3, bodyb, 2, 1), -EINVAL);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_LOGS, bodyb, TM_EXPORT_BODY_MAX + 1, 1),
		     -EINVAL);
	pid_t pid = child_of_self();
	CHECK(pid > 0);
	/* wait for its request to reach the server, then kill it */
	for (int i = 0; i < 2000 && s.served == 0; i++)
		usleep(1000);
	CHECK_EQ_INT(s.served, 1);
	kill(pid, SIGKILL);
	/* dead: a zombie the exporter's side reaps, with no thread left (the
	 * leader is a zombie before its other threads have ended, and the
	 * descriptors close with the last of them) */
	bool zombie = false;
	for (int i = 0; i < 5000 && !zombie; i++) {
		char task[64];
		size_t threads = 0;
		snprintf(task, sizeof(task), "/proc/%d/task", (int)pid);
		DIR *d = opendir(task);
		for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
			threads += e->d_name[0] != '.';
		if (d != NULL)
			closedir(d);
		char path[64], stat[256] = "";
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		FILE *f = fopen(path, "r");
		if (f != NULL) {
			if (fgets(stat, sizeof(stat), f) == NULL)
				stat[0] = '\0';
			fclose(f);
		}
		const char *paren = strrchr(stat, ')');
		zombie = paren != NULL && paren[1] == ' ' && paren[2] == 'Z' && threads == 1;
		if (!zombie)
			usleep(1000);
	}
	CHECK(zombie);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_LOGS, bodyb, 2, 5), -EPIPE);
	CHECK_EQ_INT(tm_exporter_submit(x, 0, TM_ROUTE_TRACES, bodyb, 2, 5), -EPIPE);
	struct tm_export_report rep;
	CHECK_EQ_INT(tm_exporter_stop(x, &rep, 1, 1000), -1);
	CHECK_EQ_INT(rep.sent, 0);
	CHECK_EQ_INT(rep.lost, 3);              /* the refused submits are the caller's */
	CHECK_EQ_STR(rep.last_error, "the exporter process was killed by signal 9");
	close(s.fd);
}

static void test_stop_unstarted(void)
{
	struct tm_otlp_target t = { "[telemetry.t]", "https://collector.example/otlp/", "Authorization",
				    "s" };
	struct tm_exporter *x = NULL;
	char err[512];
	struct tm_export_report rep = { 1, 1, "x" };
	CHECK(tm_exporter_start(&t, 1, &x, err, sizeof(err)) == 0);
	CHECK_EQ_INT(tm_exporter_stop(x, &rep, 1, 1000), 0);   /* never spawned */
	CHECK(rep.sent == 0 && rep.lost == 0 && rep.last_error[0] == '\0');
	CHECK_EQ_INT(tm_exporter_stop(NULL, NULL, 0, 0), 0);
	CHECK(tm_exporter_start(&t, 0, &x, err, sizeof(err)) == -1);
	CHECK(strstr(err, "a box takes 1 to 16") != NULL);
}

/* ---- the shared checks ------------------------------------------------------------------- */

static void test_urls(void)
{
	struct exp_url u;
	char why[400];
	CHECK(exp_url_parse("https://collector.example:4318/otlp//", &u, why, sizeof(why)) == 0);
	CHECK(u.tls && u.port == 4318 && u.port_given);
	CHECK_EQ_STR(u.host, "collector.example");
	CHECK_EQ_STR(u.path, "/otlp");
	CHECK(exp_url_parse("http://[::1]:8080", &u, why, sizeof(why)) == 0);
	CHECK(u.ipv6 && u.port == 8080 && exp_url_loopback(&u));
	CHECK_EQ_STR(u.host, "::1");
	CHECK_EQ_STR(u.path, "");
	CHECK(exp_url_parse("http://LocalHost", &u, why, sizeof(why)) == 0 && u.port == 80 &&
	      exp_url_loopback(&u));
	CHECK(exp_url_parse("http://127.9.9.9", &u, why, sizeof(why)) == 0 && exp_url_loopback(&u));
	CHECK(exp_url_parse("http://2130706433", &u, why, sizeof(why)) == 0 && exp_url_loopback(&u));
	CHECK(exp_url_parse("http://128.0.0.1", &u, why, sizeof(why)) == 0 && !exp_url_loopback(&u));
	CHECK(exp_url_parse("http://localhost.example", &u, why, sizeof(why)) == 0 &&
	      !exp_url_loopback(&u));
	static const struct {
		const char *url, *why;
	} bad[] = {
		{ "collector:4318", "is not an http:// or https:// URL" },
		{ "http://", "names no host" },
		{ "http://:80", "names no host" },
		{ "http://a@localhost", "carries a user name or password" },
		{ "http://h:0", "port that is not a number" },
		{ "http://h:65536", "port that is not a number" },
		{ "http://h:", "has an empty port" },
		{ "http://h:8x", "port that is not a number" },
		{ "http://[::1", "without its ']'" },
		{ "http://[::1]x", "characters after its IPv6 address" },
		{ "http://[nope]", "which is no IPv6 address" },
		{ "http://h%41", "the character '%'" },
		{ "http://h/p?q", "a query or a fragment" },
		{ "http://h#f", "a query or a fragment" },
		{ "http://h/a b", "a space, a control character" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CHECK(exp_url_parse(bad[i].url, &u, why, sizeof(why)) == -1);
		CHECK(strstr(why, bad[i].why) != NULL);
		if (strstr(why, bad[i].why) == NULL)
			fprintf(stderr, "  %s: %s\n", bad[i].url, why);
	}
}

static void test_headers(void)
{
	char line[128];
	CHECK(exp_header_value_ok("abc.def-123"));
	CHECK(exp_header_value_ok("a b"));
	CHECK(!exp_header_value_ok(""));
	CHECK(!exp_header_value_ok("a\r\nx-injected: 1"));
	CHECK(!exp_header_value_ok("a\nb"));
	CHECK(!exp_header_value_ok(" lead"));
	CHECK(!exp_header_value_ok("trail "));
	CHECK(!exp_header_value_ok("del\x7f"));
	CHECK(exp_header_name_ok("x-vendor-team"));
	CHECK(!exp_header_name_ok("x vendor"));
	CHECK(!exp_header_name_ok("x:y"));
	CHECK(!exp_header_name_ok(""));
	CHECK(exp_secret_line("AUTHORIZATION", "t0k", line, sizeof(line)) > 0);
	CHECK_EQ_STR(line, "AUTHORIZATION: Bearer t0k\r\n");
	CHECK(exp_secret_line("x-vendor-team", "vendor-key", line, sizeof(line)) > 0);
	CHECK_EQ_STR(line, "x-vendor-team: vendor-key\r\n");
	CHECK_EQ_INT(exp_secret_line("x", "0123456789", line, 8), -1);
}

static const struct test_case tests[] = {
	{ "good_exchange", test_good_exchange },
	{ "bad_frames", test_bad_frames },
	{ "not_by_hand", test_not_by_hand },
	{ "dead_exporter", test_dead_exporter },
	{ "stop_unstarted", test_stop_unstarted },
	{ "urls", test_urls },
	{ "headers", test_headers },
};

TEST_MAIN(tests)
