/* race.c - med-race: bypass attempts on the mediator by rewriting what a
 * pending call names (tests/mediate/run.sh runs it in a mediated box).
 *
 *   med-race paths ROUNDS OK SECRET    a thread flips the path an open and a
 *                                      stat are called with between OK (let
 *                                      through or permitted) and SECRET
 *                                      (forbidden); a symlink is swapped
 *                                      between them likewise
 *   med-race argv ROUNDS               a thread flips execve's argv[1] between
 *                                      "ok" (permitted) and "evil" (forbidden),
 *                                      from a threaded process and from a
 *                                      vfork child
 *
 * SECRET's content starts with "SECRET"; nothing may read it or stat its
 * size (a size no other file has).  Each mode prints "ok <what>" or "FAIL
 * <what>", and its control: how many calls reached each side, so a race
 * that never happened cannot pass. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[4096];
static const char *A, *B;
static atomic_bool stop;

static void *flipper(void *arg)
{
	(void)arg;
	size_t la = strlen(A) + 1, lb = strlen(B) + 1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memcpy(buf, A, la);
		sched_yield();
		memcpy(buf, B, lb);
		sched_yield();
	}
	return NULL;
}

static int fails;

static void verdict(const char *what, int bad, const char *detail)
{
	if (bad) {
		fails++;
		printf("FAIL %s: %s\n", what, detail);
	} else {
		printf("ok %s (%s)\n", what, detail);
	}
}

static int paths(long rounds, const char *ok, const char *secret)
{
	struct stat ss;
	if (stat(secret, &ss) == 0) {
		printf("FAIL the secret is readable without a race: the fixture is wrong\n");
		return 1;
	}
	A = ok, B = secret;
	memcpy(buf, A, strlen(A) + 1);
	pthread_t t;
	pthread_create(&t, NULL, flipper, NULL);
	long read_ok = 0, refused = 0, leaked = 0, st_ok = 0, st_leak = 0;
	struct stat okst;
	stat(ok, &okst);
	for (long i = 0; i < rounds; i++) {
		char got[16] = { 0 };
		int fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, got, sizeof(got) - 1);
			close(fd);
			if (n >= 6 && memcmp(got, "SECRET", 6) == 0)
				leaked++;
			else
				read_ok++;
		} else {
			refused++;
		}
		struct stat st;
		if (stat(buf, &st) == 0) {
			if (st.st_size == 12345)
				st_leak++;
			else
				st_ok++;
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	char d[256];
	snprintf(d, sizeof(d), "%ld rounds: %ld opens of the permitted file, %ld refused, %ld of the "
		 "secret; %ld stats of it, %ld of the secret", rounds, read_ok, refused, leaked, st_ok,
		 st_leak);
	verdict("a path rewritten while the call waits", leaked > 0 || st_leak > 0, d);
	verdict("... and the race happened (both sides reached)", read_ok == 0 || refused == 0, d);

	/* a symlink swapped between the two */
	char link[4096];
	snprintf(link, sizeof(link), "%s", secret);
	char *slash = strrchr(link, '/');
	snprintf(slash, sizeof(link) - (size_t)(slash - link), "/../race.lnk");
	atomic_store(&stop, false);
	pid_t p = fork();
	if (p == 0) {
		char tmp[4200];
		snprintf(tmp, sizeof(tmp), "%s.tmp", link);
		for (;;) {
			unlink(tmp);
			if (symlink(ok, tmp) == 0)
				rename(tmp, link);
			unlink(tmp);
			if (symlink(secret, tmp) == 0)
				rename(tmp, link);
		}
	}
	read_ok = refused = leaked = 0;
	for (long i = 0; i < rounds / 10; i++) {
		char got[16] = { 0 };
		int fd = open(link, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, got, sizeof(got) - 1);
			close(fd);
			if (n >= 6 && memcmp(got, "SECRET", 6) == 0)
				leaked++;
			else
				read_ok++;
		} else {
			refused++;
		}
	}
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	snprintf(d, sizeof(d), "%ld opens through the link: %ld of the permitted file, %ld refused, "
		 "%ld of the secret", rounds / 10, read_ok, refused, leaked);
	verdict("a symlink swapped while the call waits", leaked > 0, d);
	verdict("... and the swap happened (both sides reached)", read_ok == 0 || refused == 0, d);
	return 0;
}

/* execve(echo, [echo, buf]) in a child with a flipping thread: "evil" must
 * never print. */
static void exec_race(long rounds, bool use_vfork, long *ok, long *evil, long *refused)
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return;
	for (long i = 0; i < rounds; i++) {
		pid_t p = fork();
		if (p == 0) {
			dup2(pfd[1], 1);
			close(pfd[0]);
			A = "ok", B = "evil";
			memcpy(buf, A, 3);
			atomic_store(&stop, false);
			pthread_t t;
			pthread_create(&t, NULL, flipper, NULL);
			char *argv[] = { "echo", buf, NULL };
			char *envp[] = { NULL };
			if (use_vfork) {
				pid_t c = vfork();
				if (c == 0) {
					execve("/usr/bin/echo", argv, envp);
					_exit(errno == EACCES ? 126 : 127);
				}
				int ws;
				waitpid(c, &ws, 0);
				_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
			}
			execve("/usr/bin/echo", argv, envp);
			_exit(errno == EACCES ? 126 : 127);
		}
		int ws;
		waitpid(p, &ws, 0);
		if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			(*refused)++;
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	char line[64];
	while (f && fgets(line, sizeof(line), f)) {
		if (strcmp(line, "evil\n") == 0)
			(*evil)++;
		else if (strcmp(line, "ok\n") == 0)
			(*ok)++;
	}
	if (f)
		fclose(f);
}

static int argvs(long rounds)
{
	char d[256];
	for (int v = 0; v < 2; v++) {
		long ok = 0, evil = 0, refused = 0;
		exec_race(rounds, v == 1, &ok, &evil, &refused);
		snprintf(d, sizeof(d), "%ld launches: %ld ran with \"ok\", %ld refused or killed, %ld ran "
			 "with \"evil\"", rounds, ok, refused, evil);
		verdict(v ? "argv rewritten by the vfork parent's thread" :
			    "argv rewritten by a thread while execve waits", evil > 0, d);
		verdict("... and the race happened (both sides reached)", ok == 0 || refused == 0, d);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "paths") == 0)
		paths(strtol(argv[2], NULL, 10), argv[3], argv[4]);
	else if (argc == 3 && strcmp(argv[1], "argv") == 0)
		argvs(strtol(argv[2], NULL, 10));
	else {
		fprintf(stderr, "usage: med-race paths ROUNDS OK SECRET | argv ROUNDS\n");
		return 2;
	}
	return fails ? 1 : 0;
}
