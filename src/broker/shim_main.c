/* shim_main.c - cairn-shim: how the agent calls a tool (docs/tools.md).
 *
 * One image, hard-linked in <box_dir>/bin/ under each tool's name.  It runs
 * in the agent's sandbox and is trusted with nothing: the broker decides
 * shell:spawn on what it sends and starts the tool in a sandbox of its own.
 * The shim
 *   - closes every descriptor above 2 (nothing of the agent's leaks to a tool
 *     but its stdio);
 *   - finds its name and the socket from its own executable's path, never
 *     from argv or the environment: <dir>/bin/<name> talks to
 *     <dir>/run/box.sock;
 *   - sends its argv (argv[0] replaced by that name), its cwd and its
 *     descriptors 0-2, whether or not its group owns its terminal;
 *   - forwards the signals of brk_signal_forwarded while the tool runs;
 *   - exits with the tool's status, or prints the broker's refusal and exits
 *     with its status (126 refused, 127 not found, 125 the box failed).
 * Its own failures: "cairn-shim: <why>" and status 125, as Box's alias. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "frame.h"

#define SHIM_FAIL 125
#define CONNECT_MS 5000

/* The image's own name in bin/: it runs for no tool. */
#define IMAGE_NAME ".shim-image"

/* An ASan build (make test's second pass) checks for leaks at exit by
 * tracing the process, which the agent's sandbox refuses, and would turn
 * every tool's status into 1: the shim leaves leaks to frame.c's unit
 * test, which runs outside. */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t w = write(sig_pipe[1], &b, 1);
	(void)w;
	errno = e;
}

static int fail(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "cairn-shim: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return SHIM_FAIL;
}

/* Descriptors 0-2 as the tool will get them: one that is closed becomes
 * /dev/null, so the tool never inherits a number the broker reuses. */
static int stdio_fds(int fds[3])
{
	for (int i = 0; i < 3; i++) {
		if (fcntl(i, F_GETFD) >= 0) {
			fds[i] = i;
			continue;
		}
		int n = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (n < 0)
			return -1;
		fds[i] = n;
	}
	return 0;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A full backlog (the broker serves a bounded number of calls at
	 * once) refuses a non-blocking AF_UNIX connect with EAGAIN, which never
	 * completes: retry until CONNECT_MS. */
	for (int waited = 0;; waited += 20) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e != EAGAIN || waited >= CONNECT_MS) {
			errno = e == EAGAIN ? ETIMEDOUT : e;
			return -1;
		}
		usleep(20000);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	/* nothing of the agent's but stdio reaches the broker or the tool */
	if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);

	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1)
		return fail("cannot read its own path: %s%s", strerror(errno), "");
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash == NULL || slash == exe)
		return fail("its path %s has no directory%s", exe, "");
	char name[NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", slash + 1);
	if (strcmp(name, IMAGE_NAME) == 0 || name[0] == '\0')
		return fail("the shim image runs only under a tool's name, not as %s%s", name, "");
	*slash = '\0';                          /* <dir>/bin */
	slash = strrchr(exe, '/');
	if (slash == NULL || strcmp(slash + 1, "bin") != 0)
		return fail("%s is not a box's bin/ directory%s", exe, "");
	*slash = '\0';
	char sock[PATH_MAX + 16];
	snprintf(sock, sizeof(sock), "%s/run/box.sock", exe[0] ? exe : "");

	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return fail("cannot read the current directory: %s%s", strerror(errno), "");
	int fds[3];
	if (stdio_fds(fds) < 0)
		return fail("cannot open /dev/null: %s%s", strerror(errno), "");

	/* argv by value, argv[0] the name the broker selects a tool by */
	struct brk_frame sp = { .type = BRK_SPAWN, .cwd = cwd };
	size_t ac = 0;
	while (argv[ac] != NULL)
		ac++;
	if (ac == 0 || ac > BRK_ARGV_MAX)
		return fail("%s: too many arguments%s", name, "");
	sp.argv = argv;
	sp.argv[0] = name;
	sp.argc = ac;
	pid_t fg = isatty(fds[0]) ? tcgetpgrp(fds[0]) : -1;
	sp.foreground = fg > 0 && fg == getpgrp();

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return fail("pipe: %s%s", strerror(errno), "");
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	for (int s = 1; s < 32; s++)
		if (brk_signal_forwarded(s))
			sigaction(s, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	int fd = connect_to(sock);
	if (fd < 0)
		return fail("cannot reach the broker at %s: %s", sock, strerror(errno));
	char err[256];
	if (brk_send(fd, &sp, fds, 3, err, sizeof(err)) != 0)
		return fail("cannot send the call: %s%s", err, "");

	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = sig_pipe[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return fail("poll: %s%s", strerror(errno), "");
		}
		if (p[1].revents & POLLIN) {
			unsigned char b[16];
			ssize_t k = read(sig_pipe[0], b, sizeof(b));
			for (ssize_t i = 0; i < k; i++) {
				struct brk_frame s = { .type = BRK_SIGNAL, .signal = b[i] };
				(void)brk_send(fd, &s, NULL, 0, err, sizeof(err));
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		struct brk_frame f;
		int v;
		int r = brk_recv(fd, 0, &f, &v, err, sizeof(err));
		if (r == 0)
			return fail("the broker ended the call without a status%s%s", "", "");
		if (r < 0)
			return fail("the broker's answer is malformed: %s%s", err, "");
		if (f.type == BRK_EXIT) {
			int st = f.status;
			brk_frame_clear(&f);
			return st;
		}
		if (f.type == BRK_REFUSED) {
			fprintf(stderr, "%s\n", f.message);
			int st = f.status;
			brk_frame_clear(&f);
			return st;
		}
		brk_frame_clear(&f);
		return fail("the broker sent a frame a shim does not take%s%s", "", "");
	}
}
