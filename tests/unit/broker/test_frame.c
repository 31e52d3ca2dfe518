/* test_frame.c - the shim's frames (src/broker/frame.h): what is sent is
 * read back the same, with its descriptors; every rule of the wire refuses
 * what breaks it, before allocating for it, and leaves no descriptor open. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "test.h"

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
}

/* Write raw bytes (a length prefix and body) with optional fds. */
static void raw(int fd, const void *b, size_t n, const int *fds, size_t nfds)
{
	char cm[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = { .iov_base = (void *)b, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		memset(cm, 0, sizeof(cm));
		mh.msg_control = cm;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)n)
		abort();
}

static void framed(int fd, const char *json, const int *fds, size_t nfds)
{
	size_t n = strlen(json);
	unsigned char b[8192];
	b[0] = (unsigned char)(n >> 24), b[1] = (unsigned char)(n >> 16);
	b[2] = (unsigned char)(n >> 8), b[3] = (unsigned char)n;
	memcpy(b + 4, json, n);
	raw(fd, b, n + 4, fds, nfds);
}

static void round_trip(void)
{
	int sv[2], fds[3];
	pair(sv);
	int before = open_fds();
	char *argv[] = { "git", "commit", "-m", "a \"quoted\"\nline", "é", NULL };
	struct brk_frame out = { .type = BRK_SPAWN, .argv = argv, .argc = 5, .cwd = "/w",
				 .foreground = true }, in;
	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
	char err[256];
	CHECK_EQ_INT(brk_send(sv[0], &out, fds, 3, err, sizeof(err)), 0);
	int v;
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &in, &v, err, sizeof(err)), 1);
	CHECK_EQ_INT(in.type, BRK_SPAWN);
	CHECK_EQ_INT(in.argc, 5);
	for (size_t i = 0; i < 5 && i < in.argc; i++)
		CHECK_EQ_STR(in.argv[i], argv[i]);
	CHECK(in.argv[in.argc] == NULL);
	CHECK_EQ_STR(in.cwd, "/w");
	CHECK(in.foreground);
	CHECK_EQ_INT(in.n_fds, 3);
	struct stat a, b;
	CHECK(fstat(in.fds[2], &a) == 0 && stat("/dev/null", &b) == 0 && a.st_rdev == b.st_rdev);
	CHECK(fcntl(in.fds[0], F_GETFD) & FD_CLOEXEC);
	brk_frame_clear(&in);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	CHECK_EQ_INT(open_fds(), before);

	struct brk_frame sig = { .type = BRK_SIGNAL, .signal = SIGINT },
			 ex = { .type = BRK_EXIT, .status = 141 },
			 re = { .type = BRK_REFUSED, .status = 126, .message = "cairn: no" };
	CHECK_EQ_INT(brk_send(sv[0], &sig, NULL, 0, err, sizeof(err)), 0);
	CHECK_EQ_INT(brk_send(sv[0], &ex, NULL, 0, err, sizeof(err)), 0);
	CHECK_EQ_INT(brk_send(sv[0], &re, NULL, 0, err, sizeof(err)), 0);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &in, &v, err, sizeof(err)), 1);
	CHECK(in.type == BRK_SIGNAL && in.signal == SIGINT);
	brk_frame_clear(&in);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &in, &v, err, sizeof(err)), 1);
	CHECK(in.type == BRK_EXIT && in.status == 141);
	brk_frame_clear(&in);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &in, &v, err, sizeof(err)), 1);
	CHECK(in.type == BRK_REFUSED && in.status == 126);
	CHECK_EQ_STR(in.message, "cairn: no");
	brk_frame_clear(&in);
	/* a clean end */
	close(sv[0]);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &in, &v, err, sizeof(err)), 0);
	close(sv[1]);
}

/* One frame's bytes and descriptors, and what brk_recv makes of them. */
static int recv_of(const char *json, size_t nfds, char *err, size_t errlen, int *version)
{
	int sv[2], fds[8];
	pair(sv);
	for (size_t i = 0; i < nfds; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	framed(sv[0], json, fds, nfds);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	struct brk_frame f;
	int before = open_fds();
	int rc = brk_recv(sv[1], 1000, &f, version, err, errlen);
	brk_frame_clear(&f);
	/* nothing received is left open, whatever the answer */
	CHECK(open_fds() <= before);
	close(sv[0]);
	close(sv[1]);
	return rc;
}

#define SPAWN(body) "{\"version\":1,\"frame_type\":\"spawn\",\"body\":" body "}"

static void refusals(void)
{
	char err[256];
	int v;
	static const struct { const char *json; size_t nfds; const char *why; } bad[] = {
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\",\"foreground\":false,\"env\":{}}"), 3,
		  "exactly argv" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\"}"), 3, "exactly argv" },
		{ SPAWN("{\"argv\":[],\"cwd\":\"/\",\"foreground\":false}"), 3, "1 to 4096" },
		{ SPAWN("{\"argv\":[1],\"cwd\":\"/\",\"foreground\":false}"), 3, "argv[0]" },
		{ SPAWN("{\"argv\":[\"a\\u0000b\"],\"cwd\":\"/\",\"foreground\":false}"), 3, "" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"rel\",\"foreground\":false}"), 3, "absolute" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\",\"foreground\":1}"), 3, "boolean" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\",\"foreground\":false}"), 0, "three" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\",\"foreground\":false}"), 2, "three" },
		{ SPAWN("{\"argv\":[\"git\"],\"cwd\":\"/\",\"foreground\":false}"), 5, "three" },
		{ "{\"version\":1,\"frame_type\":\"signal\",\"body\":{\"signal\":9}}", 0, "forwards" },
		{ "{\"version\":1,\"frame_type\":\"signal\",\"body\":{\"signal\":2}}", 1, "no other" },
		{ "{\"version\":1,\"frame_type\":\"exit\",\"body\":{\"status\":256}}", 0, "0 to 255" },
		{ "{\"version\":1,\"frame_type\":\"refused\",\"body\":{\"status\":1,\"message\":\"x\"}}",
		  0, "125-127" },
		{ "{\"version\":1,\"frame_type\":\"launch\",\"body\":{}}", 0, "none of spawn" },
		{ "{\"version\":1,\"frame_type\":\"spawn\"}", 0, "exactly version" },
		{ "{\"frame_type\":\"spawn\",\"body\":{}}", 0, "no version" },
		{ "{\"version\":1,\"version\":1,\"frame_type\":\"exit\",\"body\":{\"status\":0}}", 0,
		  "not JSON" },
		{ "[1,2]", 0, "no version" },
		{ "{nope", 0, "not JSON" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int rc = recv_of(bad[i].json, bad[i].nfds, err, sizeof(err), &v);
		if (rc != BRK_E_MALFORMED || strstr(err, bad[i].why) == NULL)
			fprintf(stderr, "case %zu: rc %d, err \"%s\"\n", i, rc, err);
		CHECK_EQ_INT(rc, BRK_E_MALFORMED);
		CHECK(strstr(err, bad[i].why) != NULL);
	}
	/* another version: said as such, with the version */
	CHECK_EQ_INT(recv_of("{\"version\":7,\"frame_type\":\"exit\",\"body\":{\"status\":0}}", 0,
			     err, sizeof(err), &v), BRK_E_VERSION);
	CHECK_EQ_INT(v, 7);
	CHECK(strstr(err, "unsupported protocol version 7; this box speaks 1") != NULL);
}

static void lengths(void)
{
	char err[256];
	int sv[2], v;
	struct brk_frame f;
	/* over 1 MiB: refused from the prefix alone, nothing allocated for it */
	pair(sv);
	unsigned char big[4] = { 0x00, 0x10, 0x00, 0x01 };
	raw(sv[0], big, 4, NULL, 0);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &f, &v, err, sizeof(err)), BRK_E_MALFORMED);
	CHECK(strstr(err, "1048577 bytes") != NULL);
	close(sv[0]);
	close(sv[1]);
	/* zero */
	pair(sv);
	unsigned char zero[4] = { 0 };
	raw(sv[0], zero, 4, NULL, 0);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &f, &v, err, sizeof(err)), BRK_E_MALFORMED);
	close(sv[0]);
	close(sv[1]);
	/* a prefix cut short, then a body cut short: an I/O end, not a clean one */
	pair(sv);
	raw(sv[0], "\0\0", 2, NULL, 0);
	close(sv[0]);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &f, &v, err, sizeof(err)), BRK_E_IO);
	close(sv[1]);
	pair(sv);
	raw(sv[0], "\0\0\0\x20{\"version\":1", 16, NULL, 0);
	close(sv[0]);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &f, &v, err, sizeof(err)), BRK_E_IO);
	close(sv[1]);
	/* nothing within the wait: a timeout */
	pair(sv);
	CHECK_EQ_INT(brk_recv(sv[1], 50, &f, &v, err, sizeof(err)), BRK_E_IO);
	close(sv[0]);
	close(sv[1]);
	/* a frame split across writes is read whole */
	pair(sv);
	const char *j = "{\"version\":1,\"frame_type\":\"exit\",\"body\":{\"status\":3}}";
	unsigned char h[4] = { 0, 0, 0, (unsigned char)strlen(j) };
	raw(sv[0], h, 3, NULL, 0);
	raw(sv[0], h + 3, 1, NULL, 0);
	raw(sv[0], j, 10, NULL, 0);
	raw(sv[0], j + 10, strlen(j) - 10, NULL, 0);
	CHECK_EQ_INT(brk_recv(sv[1], 1000, &f, &v, err, sizeof(err)), 1);
	CHECK(f.type == BRK_EXIT && f.status == 3);
	brk_frame_clear(&f);
	close(sv[0]);
	close(sv[1]);
	/* a word that is not UTF-8 is not sent */
	pair(sv);
	char *argv[] = { "git", "\xff", NULL };
	struct brk_frame s = { .type = BRK_SPAWN, .argv = argv, .argc = 2, .cwd = "/" };
	int fds[3] = { 0, 1, 2 };
	CHECK(brk_send(sv[0], &s, fds, 3, err, sizeof(err)) != 0);
	close(sv[0]);
	close(sv[1]);
}

/* A peer trickling its frame a byte at a time holds the reader for one
 * BRK_FRAME_MS from its first byte, not for a new one per byte: the
 * trickle of this 40-byte frame would need 20 s, the read ends on the way. */
static void trickle(void)
{
	int sv[2];
	char err[256];
	struct brk_frame f;
	int v;
	pair(sv);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		const char *j = "{\"version\":1,\"frame_type\":\"exit\",\"body\":{\"status\":0}}";
		unsigned char h[4] = { 0, 0, 0, (unsigned char)strlen(j) };
		for (int i = 0; i < 4; i++) {
			if (write(sv[0], h + i, 1) != 1)
				_exit(0);
			usleep(500000);
		}
		for (size_t i = 0; i < strlen(j); i++) {
			if (write(sv[0], j + i, 1) != 1)
				_exit(0);      /* the reader gave up: done */
			usleep(500000);
		}
		_exit(0);
	}
	close(sv[0]);
	int rc = brk_recv(sv[1], 1000, &f, &v, err, sizeof(err));
	CHECK_EQ_INT(rc, BRK_E_IO);
	if (rc == 1)
		brk_frame_clear(&f);
	close(sv[1]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void signals(void)
{
	CHECK(brk_signal_forwarded(SIGINT) && brk_signal_forwarded(SIGTERM) &&
	      brk_signal_forwarded(SIGCONT) && brk_signal_forwarded(SIGWINCH));
	CHECK(!brk_signal_forwarded(SIGKILL) && !brk_signal_forwarded(SIGSTOP) &&
	      !brk_signal_forwarded(SIGSEGV) && !brk_signal_forwarded(0));
}

static const struct test_case tests[] = {
	{ "round trip, descriptors included", round_trip },
	{ "malformed frames are refused", refusals },
	{ "lengths, splits and ends", lengths },
	{ "the forwarded signals", signals },
	{ "one deadline per frame", trickle },
};

TEST_MAIN(tests)
