/* sandbox_bench.c - `make bench`'s sandbox part: start-up of `cairn run` against bwrap.
 *
 * One workload, two arms, in the same run:
 *
 * - cairn: `cairn run --config box.toml`, the box's [agent] being ["/bin/true"] with a
 *   private workspace it may write: the common box, with a policy (so a durable history)
 *   and one [egress.*] credential route (so a phantom; the gateway's CA as always);
 *   /bin/true asks for nothing, so nothing is decided;
 * - bwrap (Debian `bubblewrap`): /bin/true with the same namespaces (user, pid, net, ipc,
 *   uts, cgroup), /usr read-only, the merged-/usr symlinks, ld.so.cache, a fresh /proc,
 *   /dev and /tmp, the workspace bound read-write, a cleared environment.
 *
 * Each run is fork + execve + wait4 with stdin, stdout and stderr on /dev/null, timed on
 * CLOCK_MONOTONIC from before fork() to after wait4(). The arms alternate in ABBA order
 * so machine noise and any first-or-second effect fall on both; the first 5 rounds are a
 * warm-up and are discarded.
 *
 * Memory comes from a separate measuring pass after the timed runs (tracing would perturb
 * their timing): RSS_RUNS more runs of each arm, each started under ptrace. wait4()'s
 * ru_maxrss cannot give the supervisor's own peak: Linux reports the largest of the
 * process and of every descendant it reaped, so it is the largest process of the run
 * (with the egress gateway in a child process, that may be the gateway). The traced
 * process's own peak is its VmHWM at its PTRACE_EVENT_EXIT stop, where its mm still
 * exists; only that process is traced, not its threads or children. Both figures are
 * printed, for both arms: "supervisor peak RSS" is the own peak, "largest process of the
 * run" is ru_maxrss over every run. Where the pass cannot attach or read (Yama's
 * ptrace_scope, a seccomp profile forbidding ptrace, a set-id peer and a tracer that is
 * not root), the own peak is printed as unavailable, with why.
 *
 * Goals (printed, never enforced): cairn p50 <= 1.5x bwrap's and <= 10 ms; supervisor
 * peak RSS (its own process) <= 5 MiB.
 *
 * Usage: sandbox-bench --cairn PATH [--runs N] [--quick]
 * Exit: 0 when the measurements were taken, whether or not a goal is met; 1 when the
 * set-up failed or a run did not exit 0 (a run that fails measures nothing); 2 for a
 * usage error or no bwrap on PATH. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_host.h"
#include "bench_stats.h"

#define WARMUP 5
#define RUNS_DEFAULT 200
#define RUNS_QUICK 30
#define RUNS_MAX 100000
#define GOAL_RATIO 1.5
#define GOAL_MS 10.0
#define GOAL_RSS_MIB 5.0
#define RSS_RUNS 20              /* traced runs of each arm in the measuring pass */

/* One side of the comparison: what it runs and what it measured. */
struct arm {
	const char *name;
	char **argv;             /* argv[0] is an absolute path: execve, no PATH search */
	uint64_t *ns;            /* wall time of each counted run */
	size_t n;
	long maxrss_kib;         /* the largest ru_maxrss over every run, warm-up and the
	                          * measuring pass included: the largest process of a run */
	long hwm_kib;            /* the largest VmHWM of the arm's own process at its exit */
	char hwm_why[192];       /* not empty: why hwm_kib is unavailable */
};

static double pct_ms(uint64_t *v, size_t n, double p)
{
	return (double)bench_pct(v, n, p) / 1e6;     /* ms */
}

static double mean_ms(const uint64_t *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)v[i];
	return n ? s / (double)n / 1e6 : 0;
}


/* TOML basic strings need `"`, `\` and control characters escaped; our paths come from
 * mkdtemp under $TMPDIR, so refuse those rather than escape them. */
static bool toml_plain(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* The box's policy: a few of the rules an agent's box carries (docs/policy-reference.md),
 * one of them temporal, so the engine builds its temporal plan as a real box does. */
static const char BENCH_POLICY[] =
	"@id(\"read_project\")\n"
	"permit (principal, action == Box::Action::\"fs:read\", resource)\n"
	"when { context.input.path like \"~/proj/*\" };\n"
	"\n"
	"@id(\"model_api\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.host == \"api.example.com\" && context.input.port == 443 &&\n"
	"       context.input.intercepted };\n"
	"\n"
	"@id(\"no_secrets\")\n"
	"forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
	"when { context.input.path like \"*/.env\" };\n"
	"\n"
	"@id(\"post_rate\")\n"
	"@description(\"At most three posts per 10 minutes.\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.host == \"hooks.example.com\" }\n"
	"when temporal {\n"
	"  (count for (t: Timepoint). where formerly within 10m\n"
	"     (Box::Action::\"http:request\"::response{ input.host: \"hooks.example.com\" } &&\n"
	"      tp(t))) >= 3\n"
	"};\n";

/* The variable the box's egress route reads its secret from; set in this process's
 * environment, which the cairn arm inherits. */
#define BENCH_SECRET_VAR "CAIRN_BENCH_TOKEN"

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wxe");

	if (f == NULL) {
		int rc = -errno;

		fprintf(stderr, "sandbox-bench: create %s: %s\n", path, strerror(errno));
		return rc;
	}
	fputs(text, f);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "sandbox-bench: write %s failed\n", path);
		return -EIO;
	}
	return 0;
}

/* Make <tmp>/ws, <tmp>/policy.dw and <tmp>/box.toml in a fresh private directory. *dir,
 * *ws and *toml are heap strings the caller frees (and *dir the caller removes, once it
 * is set). */
static int make_box(char **dir, char **ws, char **toml)
{
	const char *base = getenv("TMPDIR");
	char *tmpl = NULL, *policy = NULL, *text = NULL;
	int rc;

	*dir = *ws = *toml = NULL;
	if (base == NULL || *base != '/')
		base = "/tmp";
	if (asprintf(&tmpl, "%s/sandbox-bench.XXXXXX", base) < 0)
		return -ENOMEM;
	if (mkdtemp(tmpl) == NULL) {
		rc = -errno;
		fprintf(stderr, "sandbox-bench: mkdtemp %s: %s\n", tmpl, strerror(errno));
		free(tmpl);
		return rc;
	}
	/* cairn wants grants that are already canonical: resolve a symlinked $TMPDIR here */
	*dir = realpath(tmpl, NULL);
	rc = *dir ? 0 : -errno;
	if (rc < 0) {
		fprintf(stderr, "sandbox-bench: realpath %s: %s\n", tmpl, strerror(errno));
		rmdir(tmpl);
	}
	free(tmpl);
	if (rc < 0)
		return rc;
	if (!toml_plain(*dir)) {
		fprintf(stderr, "sandbox-bench: %s cannot be written as a TOML string as is; "
			"set TMPDIR to a plain path\n", *dir);
		return -EINVAL;
	}
	if (asprintf(ws, "%s/ws", *dir) < 0 || asprintf(toml, "%s/box.toml", *dir) < 0)
		return -ENOMEM;
	if (mkdir(*ws, 0700) < 0) {
		rc = -errno;
		fprintf(stderr, "sandbox-bench: mkdir %s: %s\n", *ws, strerror(errno));
		return rc;
	}
	if (asprintf(&policy, "%s/policy.dw", *dir) < 0)
		return -ENOMEM;
	rc = write_file(policy, BENCH_POLICY);
	free(policy);
	if (rc < 0)
		return rc;
	/* box_dir is left for cairn to create (its parent must exist, the directory need
	 * not); the policy path is relative to box.toml. */
	if (asprintf(&text, "name = \"bench\"\n"
			    "box_dir = \"%s/box\"\n"
			    "policy = \"policy.dw\"\n"
			    "\n"
			    "[agent]\n"
			    "command = [\"/bin/true\"]\n"
			    "workspace = \"%s\"\n"
			    "\n"
			    "[agent.filesystem]\n"
			    "write = [\"%s\"]\n"
			    "\n"
			    "[egress.model]\n"
			    "destinations = [\"api.example.com\"]\n"
			    "secret.ref = \"env://" BENCH_SECRET_VAR "\"\n", *dir, *ws, *ws) < 0)
		return -ENOMEM;
	rc = write_file(*toml, text);
	free(text);
	return rc;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) < 0)
		fprintf(stderr, "sandbox-bench: could not remove %s: %s\n", path, strerror(errno));
	return 0;                  /* keep going: remove what can be removed */
}

static void rm_tree(const char *dir)
{
	if (dir && nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "sandbox-bench: could not remove %s: %s\n", dir, strerror(errno));
}

/* Run argv once: stdin and stdout on nullfd, stderr on errfd. Returns the wait status
 * and fills *ns (fork to reaped) and *ru, or -errno when it could not be started. */
static int run_once(char **argv, int nullfd, int errfd, uint64_t *ns, struct rusage *ru)
{
	extern char **environ;
	uint64_t t0 = bench_now_ns();
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* dup2 leaves the new descriptors without O_CLOEXEC; everything else we
		 * opened has it, so the child sees exactly 0, 1 and 2. */
		if (dup2(nullfd, 0) < 0 || dup2(nullfd, 1) < 0 || dup2(errfd, 2) < 0)
			_exit(126);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	while (wait4(pid, &status, 0, ru) < 0)
		if (errno != EINTR)
			return -errno;
	*ns = bench_now_ns() - t0;
	return status;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited %d%s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 127 ? " (could not execute?)" : "");
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "ended with wait status %#x", (unsigned)status);
}

/* The run that must succeed before anything is timed: its stderr goes to a file, shown
 * in full when the run does not exit 0. Returns 0 or -1. */
static int check_arm(const struct arm *a, const char *dir, int nullfd)
{
	char *errpath = NULL, what[64], buf[4096];
	struct rusage ru;
	uint64_t ns;
	int fd, status, rc = -1;
	ssize_t k;

	if (asprintf(&errpath, "%s/%s.stderr", dir, a->name) < 0)
		return -1;
	fd = open(errpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "sandbox-bench: create %s: %s\n", errpath, strerror(errno));
		goto out;
	}
	status = run_once(a->argv, nullfd, fd, &ns, &ru);
	if (status < 0) {
		fprintf(stderr, "sandbox-bench: could not start %s: %s\n", a->argv[0],
			strerror(-status));
		goto out;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rc = 0;
		goto out;
	}
	describe_status(status, what, sizeof what);
	fprintf(stderr, "sandbox-bench: the %s check run %s; a benchmark of a failure measures "
		"nothing. Its command:\n ", a->name, what);
	for (char **p = a->argv; *p; p++)
		fprintf(stderr, " %s", *p);
	fprintf(stderr, "\nIts stderr:\n");
	if (lseek(fd, 0, SEEK_SET) == 0)
		while ((k = read(fd, buf, sizeof buf)) > 0)
			fwrite(buf, 1, (size_t)k, stderr);
out:
	if (fd >= 0)
		close(fd);
	free(errpath);
	return rc;
}

/* One timed run of a; counted when counted is true. Returns 0 or -1 (said why). */
static int timed_run(struct arm *a, int nullfd, bool counted, unsigned round)
{
	struct rusage ru;
	uint64_t ns;
	char what[64];
	int status;

	memset(&ru, 0, sizeof ru);
	status = run_once(a->argv, nullfd, nullfd, &ns, &ru);
	if (status < 0) {
		fprintf(stderr, "sandbox-bench: could not start %s: %s\n", a->argv[0],
			strerror(-status));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		describe_status(status, what, sizeof what);
		fprintf(stderr, "sandbox-bench: %s run %u %s after the check run passed; a "
			"benchmark of a failure measures nothing\n", a->name, round, what);
		return -1;
	}
	if (ru.ru_maxrss > a->maxrss_kib)
		a->maxrss_kib = ru.ru_maxrss;
	if (counted)
		a->ns[a->n++] = ns;
	return 0;
}

/* The VmHWM line of /proc/<pid>/status, in KiB: the peak resident set of pid's mm over
 * its whole life. Returns 0, or -errno (-ENODATA: no such line, as when the mm is gone). */
static int read_hwm(pid_t pid, long *kib)
{
	char path[64], line[256];
	FILE *f;
	int rc = -ENODATA;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", kib) == 1) {
			rc = 0;
			break;
		}
	if (rc < 0 && ferror(f))
		rc = -EIO;
	fclose(f);
	return rc;
}

/* Why PTRACE_SEIZE failed with err, into buf: with Yama loaded, its scope names the fix. */
static void seize_refused(int err, char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (err == EPERM && scope == 2)
		snprintf(buf, len, "ptrace(PTRACE_SEIZE): %s: kernel.yama.ptrace_scope is 2, only "
			 "a tracer with CAP_SYS_PTRACE may attach; run the bench as root",
			 strerror(err));
	else if (err == EPERM && scope == 3)
		snprintf(buf, len, "ptrace(PTRACE_SEIZE): %s: kernel.yama.ptrace_scope is 3, "
			 "ptrace is off until reboot", strerror(err));
	else if (err == EPERM)
		snprintf(buf, len, "ptrace(PTRACE_SEIZE): %s (a container's seccomp profile or "
			 "an LSM may forbid ptrace)", strerror(err));
	else
		snprintf(buf, len, "ptrace(PTRACE_SEIZE): %s", strerror(err));
}

/* A traced run the bench gives up on, just before it exits 1: SIGKILL ends even a stopped
 * tracee, and the bench's exit detaches it, so init reaps it. Nothing is left to report if
 * the kill fails: the process is already gone. */
static void abandon(pid_t pid)
{
	(void)kill(pid, SIGKILL);
}

static bool stopping_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* One measuring run of a under ptrace, for its own process's peak: the VmHWM at its
 * PTRACE_EVENT_EXIT stop, where the process has run its last instruction but still holds
 * its mm. Only the process a->argv[0] becomes is traced (no PTRACE_O_TRACECLONE or
 * TRACEFORK): its children run untraced and never enter the figure; its threads share
 * the mm, so theirs do. The child waits on a pipe until it is seized, so the exec and
 * everything after it happen traced; cairn's PR_SET_DUMPABLE 0 after exec does not detach
 * a tracer that is already attached. Stdin, stdout and stderr are on nullfd, as in the
 * timed runs. Returns 0 when measured; 1 when the figure is unavailable (a->hwm_why says
 * why); -1 when the run failed (said why). */
static int traced_run(struct arm *a, int nullfd, unsigned run)
{
	extern char **environ;
	struct rusage ru;
	char what[64];
	int go[2], status, err = 0;
	long hwm = -1, r;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0) {
		fprintf(stderr, "sandbox-bench: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "sandbox-bench: fork: %s\n", strerror(errno));
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if (pid == 0) {
		char c;

		/* without a write end of its own, the child reads EOF if the parent gives up */
		close(go[1]);
		if (dup2(nullfd, 0) < 0 || dup2(nullfd, 1) < 0 || dup2(nullfd, 2) < 0)
			_exit(126);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execve(a->argv[0], a->argv, environ);
		_exit(127);
	}
	close(go[0]);
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXIT) < 0) {
		seize_refused(errno, a->hwm_why, sizeof a->hwm_why);
		close(go[1]);            /* the untraced child reads EOF and exits 126 */
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return 1;
	}
	if (write(go[1], "g", 1) != 1)   /* the child then exits 126, reported below */
		fprintf(stderr, "sandbox-bench: write to the %s measuring run's start pipe: %s\n",
			a->name, strerror(errno));
	close(go[1]);

	for (;;) {
		int sig;
		unsigned event;

		if (wait4(pid, &status, __WALL, &ru) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "sandbox-bench: wait4 on the traced %s: %s\n", a->name,
				strerror(errno));
			abandon(pid);
			return -1;
		}
		if (!WIFSTOPPED(status))
			break;               /* exited or killed, and reaped */
		sig = WSTOPSIG(status);
		event = (unsigned)status >> 16;
		if (event == PTRACE_EVENT_EXIT) {
			err = read_hwm(pid, &hwm);
			r = ptrace(PTRACE_CONT, pid, 0, 0);
		} else if (event == PTRACE_EVENT_STOP && stopping_signal(sig)) {
			/* a group-stop, as PTRACE_SEIZE reports one: PTRACE_LISTEN keeps the
			 * process stopped, as it would be untraced, until a SIGCONT */
			r = ptrace(PTRACE_LISTEN, pid, 0, 0);
		} else if (event != 0) {
			/* the event stop that ends a listen (SIGTRAP): nothing to deliver */
			r = ptrace(PTRACE_CONT, pid, 0, 0);
		} else {
			/* a signal-delivery stop: deliver the signal, or cairn would never
			 * see its SIGCHLD */
			r = ptrace(PTRACE_CONT, pid, 0, sig);
		}
		/* ESRCH: killed while stopped; the next wait4 collects it */
		if (r < 0 && errno != ESRCH) {
			fprintf(stderr, "sandbox-bench: ptrace restart of the traced %s: %s\n",
				a->name, strerror(errno));
			abandon(pid);
			return -1;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		describe_status(status, what, sizeof what);
		fprintf(stderr, "sandbox-bench: %s measuring run %u (under ptrace) %s after the "
			"timed runs passed; a benchmark of a failure measures nothing\n", a->name,
			run, what);
		return -1;
	}
	if (ru.ru_maxrss > a->maxrss_kib)
		a->maxrss_kib = ru.ru_maxrss;
	if (err < 0) {
		snprintf(a->hwm_why, sizeof a->hwm_why, "reading /proc/%d/status at its exit "
			 "stop: %s", (int)pid, strerror(-err));
		return 1;
	}
	if (hwm < 0) {
		snprintf(a->hwm_why, sizeof a->hwm_why, "the traced %s exited without a "
			 "PTRACE_EVENT_EXIT stop", a->name);
		return 1;
	}
	if (hwm > a->hwm_kib)
		a->hwm_kib = hwm;
	return 0;
}

/* The measuring pass over one arm: RSS_RUNS traced runs, or none with a->hwm_why set when
 * tracing cannot work. A set-id program run traced by an unprivileged tracer is executed
 * without its privileges, so it would not be the program the timed runs measured.
 * Returns 0, or -1 when a run failed (said why). */
static int measure_arm(struct arm *a, int nullfd)
{
	struct stat st;

	if (geteuid() != 0 && stat(a->argv[0], &st) == 0 &&
	    (st.st_mode & (S_ISUID | S_ISGID)) != 0) {
		snprintf(a->hwm_why, sizeof a->hwm_why, "%s is set-id; traced by a non-root "
			 "user it would run without its privileges", a->argv[0]);
		return 0;
	}
	for (unsigned r = 0; r < RSS_RUNS && a->hwm_why[0] == '\0'; r++)
		if (traced_run(a, nullfd, r) < 0)
			return -1;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: sandbox-bench --cairn PATH [--runs N] [--quick]\n"
			"  times `cairn run` of a box whose [agent] is /bin/true against bwrap\n"
			"  running /bin/true with the same namespaces (default %d runs each, "
			"--quick %d)\n", RUNS_DEFAULT, RUNS_QUICK);
}

int main(int argc, char **argv)
{
	const char *cairn_arg = NULL;
	char *cairn = NULL, *bwrap = NULL, *dir = NULL, *ws = NULL, *toml = NULL;
	struct arm ca = { .name = "cairn" }, bw = { .name = "bwrap" };
	long runs = RUNS_DEFAULT;
	bool quick = false, runs_set = false;
	char load0[64], load1[64];
	struct passwd *pw;
	int nullfd = -1, rc = 1;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--cairn") == 0 && i + 1 < argc) {
			cairn_arg = argv[++i];
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
			errno = 0;
			runs = strtol(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || runs < 1 || runs > RUNS_MAX) {
				fprintf(stderr, "sandbox-bench: --runs wants 1 to %d, got \"%s\"\n",
					RUNS_MAX, argv[i]);
				return 2;
			}
			runs_set = true;
		} else {
			usage();
			return 2;
		}
	}
	if (cairn_arg == NULL) {
		usage();
		return 2;
	}
	if (quick && !runs_set)
		runs = RUNS_QUICK;
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* execve takes the path as given: make it absolute so a relative --cairn means the
	 * same file whatever the child's working directory */
	if ((cairn = realpath(cairn_arg, NULL)) == NULL || access(cairn, X_OK) < 0) {
		fprintf(stderr, "sandbox-bench: %s is not an executable cairn: %s; build it first "
			"(ninja -C BUILD_DIR)\n", cairn_arg, strerror(errno));
		free(cairn);
		return 2;
	}
	if ((bwrap = find_on_path("bwrap")) == NULL) {
		fprintf(stderr, "bench: bwrap not installed (Debian package bubblewrap; it is the "
			"peer this benchmark compares against)\n");
		free(cairn);
		return 2;
	}
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nullfd < 0) {
		fprintf(stderr, "sandbox-bench: open /dev/null: %s\n", strerror(errno));
		goto out;
	}
	if (make_box(&dir, &ws, &toml) < 0)
		goto out;
	/* The route's secret: an unset variable refuses the box.  Not a real credential;
	 * bwrap's run clears its environment, so only cairn sees it. */
	if (setenv(BENCH_SECRET_VAR, "bench-not-a-secret", 1) < 0) {
		fprintf(stderr, "sandbox-bench: setenv: %s\n", strerror(errno));
		goto out;
	}

	char *cairn_argv[] = { cairn, "run", "--config", toml, NULL };
	/* cairn does not setsid(), so neither does this: no --new-session */
	char *bwrap_argv[] = {
		bwrap,
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
		"--unshare-uts", "--unshare-cgroup", "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/sbin", "/sbin",
		"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", ws, ws, "--chdir", ws,
		"--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
		"/bin/true", NULL,
	};
	ca.argv = cairn_argv;
	bw.argv = bwrap_argv;
	ca.ns = calloc((size_t)runs, sizeof *ca.ns);
	bw.ns = calloc((size_t)runs, sizeof *bw.ns);
	if (ca.ns == NULL || bw.ns == NULL) {
		fprintf(stderr, "sandbox-bench: out of memory\n");
		goto out;
	}
	if (check_arm(&ca, dir, nullfd) < 0 || check_arm(&bw, dir, nullfd) < 0)
		goto out;

	pw = getpwuid(getuid());
	loadavg(load0, sizeof load0);
	printf("== sandbox start-up: `cairn run -- /bin/true` against bwrap, same namespaces "
	       "(%ld runs each, interleaved ABBA, %d warm-up rounds discarded; then %d traced "
	       "runs each for memory) ==\n", runs, WARMUP, RSS_RUNS);
	printf("  cairn's box: a policy (4 rules, 1 temporal; durable history) and one [egress.*] "
	       "route (env:// secret, phantom)\n");
	printf("  run by uid %u (%s), euid %u; cairn %s; bwrap %s\n", (unsigned)getuid(),
	       pw ? pw->pw_name : "?", (unsigned)geteuid(), cairn, bwrap);
	printf("  load average at start: %s\n", load0);

	for (unsigned r = 0; r < WARMUP + (unsigned)runs; r++) {
		bool counted = r >= WARMUP;
		struct arm *first = (r % 2 == 0) ? &ca : &bw, *second = (r % 2 == 0) ? &bw : &ca;

		if (timed_run(first, nullfd, counted, r) < 0 ||
		    timed_run(second, nullfd, counted, r) < 0)
			goto out;
	}
	if (measure_arm(&ca, nullfd) < 0 || measure_arm(&bw, nullfd) < 0)
		goto out;

	double c50 = pct_ms(ca.ns, ca.n, 0.5), c90 = pct_ms(ca.ns, ca.n, 0.9);
	double b50 = pct_ms(bw.ns, bw.n, 0.5), b90 = pct_ms(bw.ns, bw.n, 0.9);
	double ratio = c50 / b50;
	double c_hwm = (double)ca.hwm_kib / 1024.0, b_hwm = (double)bw.hwm_kib / 1024.0;
	double c_rss = (double)ca.maxrss_kib / 1024.0, b_rss = (double)bw.maxrss_kib / 1024.0;
	bool time_met = ratio <= GOAL_RATIO && c50 <= GOAL_MS;

	loadavg(load1, sizeof load1);
	printf("  sandbox start (cairn run -- /bin/true): p50 %.2f ms p90 %.2f ms mean %.2f ms | "
	       "bwrap: p50 %.2f ms p90 %.2f ms mean %.2f ms\n", c50, c90, mean_ms(ca.ns, ca.n),
	       b50, b90, mean_ms(bw.ns, bw.n));
	printf("  ratio vs bwrap: %.2f (cairn/bwrap wall time, p50; lower is better; goal <= %.1f)\n",
	       ratio, GOAL_RATIO);
	printf("  goal: <= %.1fx bwrap and <= %.0f ms: %s (%.2fx, p50 %.2f ms)\n", GOAL_RATIO,
	       GOAL_MS, time_met ? "met" : "not met", ratio, c50);
	if (ca.hwm_why[0])
		printf("  supervisor peak RSS: unavailable (goal <= %.0f MiB: not judged)",
		       GOAL_RSS_MIB);
	else
		printf("  supervisor peak RSS: %.1f MiB (goal <= %.0f MiB: %s)", c_hwm,
		       GOAL_RSS_MIB, c_hwm <= GOAL_RSS_MIB ? "met" : "not met");
	if (bw.hwm_why[0])
		printf(" | bwrap: unavailable\n");
	else
		printf(" | bwrap: %.1f MiB\n", b_hwm);
	printf("    (VmHWM of the supervisor at its exit, ptrace exit stop, largest over %d runs;\n"
	       "     bwrap's likewise, of its own first process)\n", RSS_RUNS);
	if (ca.hwm_why[0])
		printf("    cairn unavailable: %s\n", ca.hwm_why);
	if (bw.hwm_why[0])
		printf("    bwrap unavailable: %s\n", bw.hwm_why);
	printf("  largest process of the run: %.1f MiB (wait4 ru_maxrss: the supervisor or any "
	       "process it reaped) | bwrap: %.1f MiB\n", c_rss, b_rss);
	printf("  load average at end: %s\n", load1);
	rc = 0;                  /* measured: goals are reported, never enforced */
out:
	if (dir)
		rm_tree(dir);
	if (nullfd >= 0)
		close(nullfd);
	free(ca.ns);
	free(bw.ns);
	free(dir);
	free(ws);
	free(toml);
	free(bwrap);
	free(cairn);
	return rc;
}
