/* med_bench_calls.c - mediate-bench's probe, run inside a box or outside
 * (bench/mediate_bench.c).
 *
 *   med-bench-calls calls KIND PATH N   N calls of KIND on PATH, each timed;
 *                                       prints "p50_ns mean_ns"
 *   med-bench-calls time CMD ARGS...    run CMD, print its wall time in ns
 *   med-bench-calls run N CMD ARGS...   N runs of CMD (fork + execve + wait, stdout
 *                                       on /dev/null, status 0 required), each
 *                                       timed; prints "p50_ns mean_ns p90_ns"
 *   med-bench-calls par N CMD ARGS...   N runs of CMD started at once; prints the
 *                                       wall time from the first fork to the last
 *                                       wait, in ns
 *
 * KIND: open (open O_RDONLY + close), openw (open O_WRONLY + close), stat,
 * fstat (of an open descriptor of PATH), exec (fork + execve PATH + wait). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"

extern char **environ;

static int one(const char *kind, const char *path, int fd)
{
	struct stat st;
	if (strcmp(kind, "open") == 0 || strcmp(kind, "openw") == 0) {
		int f = open(path, kind[4] ? O_WRONLY : O_RDONLY);
		if (f < 0)
			return -1;
		close(f);
		return 0;
	}
	if (strcmp(kind, "stat") == 0)
		return stat(path, &st);
	if (strcmp(kind, "fstat") == 0)
		return fstat(fd, &st);
	if (strcmp(kind, "exec") == 0) {
		pid_t p = fork();
		if (p == 0) {
			char *a[] = { (char *)path, NULL };
			execve(path, a, environ);
			_exit(127);
		}
		int ws;
		if (p < 0 || waitpid(p, &ws, 0) != p || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			return -1;
		return 0;
	}
	return -1;
}

/* Start CMD (stdout on /dev/null); its pid, or -1. */
static pid_t start(char **cmd)
{
	pid_t p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	return p;
}

static int reap(pid_t p)
{
	int ws;
	if (p < 0 || waitpid(p, &ws, 0) != p)
		return -1;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1;
}

static int runs(long n, char **cmd, bool parallel)
{
	uint64_t *v = malloc((size_t)n * sizeof(*v));
	pid_t *ps = malloc((size_t)n * sizeof(*ps));
	if (v == NULL || ps == NULL)
		return 1;
	if (parallel) {
		uint64_t t0 = bench_now_ns();
		for (long i = 0; i < n; i++)
			ps[i] = start(cmd);
		int bad = 0;
		for (long i = 0; i < n; i++)
			bad |= reap(ps[i]);
		uint64_t t1 = bench_now_ns();
		if (bad) {
			fprintf(stderr, "med-bench-calls: a run of %s failed\n", cmd[0]);
			return 1;
		}
		printf("%llu\n", (unsigned long long)(t1 - t0));
		return 0;
	}
	for (long i = 0; i < n / 10 + 1; i++)  /* warm-up, untimed */
		if (reap(start(cmd)) != 0) {
			fprintf(stderr, "med-bench-calls: a run of %s failed\n", cmd[0]);
			return 1;
		}
	uint64_t sum = 0;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();
		if (reap(start(cmd)) != 0) {
			fprintf(stderr, "med-bench-calls: a run of %s failed\n", cmd[0]);
			return 1;
		}
		v[i] = bench_now_ns() - t0;
		sum += v[i];
	}
	printf("%llu %llu %llu\n", (unsigned long long)bench_pct(v, (size_t)n, 0.5),
	       (unsigned long long)(sum / (uint64_t)n),
	       (unsigned long long)bench_pct(v, (size_t)n, 0.9));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "par") == 0)) {
		long n = strtol(argv[2], NULL, 10);
		if (n <= 0 || n > 100000)
			return 2;
		return runs(n, argv + 3, argv[1][0] == 'p');
	}
	if (argc >= 3 && strcmp(argv[1], "time") == 0) {
		uint64_t t0 = bench_now_ns();
		pid_t p = fork();
		if (p == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		int ws;
		waitpid(p, &ws, 0);
		uint64_t t1 = bench_now_ns();
		printf("%llu\n", (unsigned long long)(t1 - t0));
		return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
	}
	if (argc != 5 || strcmp(argv[1], "calls") != 0) {
		fprintf(stderr, "usage: med-bench-calls calls KIND PATH N | time CMD ARGS... | "
			"run N CMD ARGS... | par N CMD ARGS...\n");
		return 2;
	}
	const char *kind = argv[2], *path = argv[3];
	long n = strtol(argv[4], NULL, 10);
	if (n <= 0 || n > 10000000)
		return 2;
	int fd = open(path, O_RDONLY);
	uint64_t *v = malloc((size_t)n * sizeof(*v));
	if (v == NULL)
		return 1;
	/* a warm-up of a tenth, untimed */
	for (long i = 0; i < n / 10; i++)
		if (one(kind, path, fd) != 0) {
			perror(path);
			return 1;
		}
	uint64_t sum = 0;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();
		if (one(kind, path, fd) != 0) {
			perror(path);
			return 1;
		}
		v[i] = bench_now_ns() - t0;
		sum += v[i];
	}
	printf("%llu %llu\n", (unsigned long long)bench_pct(v, (size_t)n, 0.5),
	       (unsigned long long)(sum / (uint64_t)n));
	return 0;
}
