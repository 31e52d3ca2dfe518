/* records_bench.c - `make bench`'s records part: what one decision record costs, against
 * Box's file discipline, in the same run (bench/README.md "Decision records").
 *
 * Workload: N gateway-like decisions (default 200,000, --quick 20,000), the same mix as
 * the gateway's records: http:request permits with a rule, a method and a request id;
 * net:connect permits per resolved address; net:connect denials that no permit matched
 * (<default-deny>); http:request denials by a forbid rule with a description. A quarter
 * carry a workload traceparent. They are emitted from 1 and from 8 deciding threads, each
 * doing what src/gateway/decide.c does for one decision: tm_trace_begin,
 * tm_record_decision, tm_emit.
 *
 * Arms, for each thread count:
 *   records on       a collector with one file target in the bench's directory, live
 *                    lines for denials to /dev/null: `cairn run`'s default;
 *   --no-records     a collector with no file target, the same live lines: what
 *                    `cairn run --no-records` keeps (its decisions are still built and
 *                    queued, for the live lines);
 *   records off      no collector: the gateway builds nothing (tm NULL), so this is the
 *                    harness and its clock alone, the floor under the two above;
 *   box-file-discipline  the peer: Box writes every export as one line with write(2) and
 *                    syncs it (sync_all), so each record's logs line and spans line are
 *                    encoded alone (tm_json_logs, tm_json_spans of one record), and each is
 *                    written and fsync'd, on the deciding thread. Syncing is slow, so the
 *                    peer makes fewer records (--box-records M, default 2,000, --quick
 *                    500); every figure is per record.
 *
 * Measured: on the deciding thread, each decision timed alone (CLOCK_MONOTONIC): p50 and
 * mean, and its thread CPU time over the records. For the writer of the records-on arm:
 * the wall time from the first emit to tm_collector_close's return, over the records
 * (everything written and synced), and the writer's CPU time over the records (the
 * process's CPU time less the deciding threads'). The deciding threads back off (outside
 * their timed calls) while 16,384 records wait, a quarter of the collector's queue, so no
 * record is lost to a full queue and the writer's figure is of every record; the back-offs
 * are counted. The files' bytes per 1,000 records. Every file is read back: it must hold
 * exactly one decision record per record emitted, or the bench fails (exit 1).
 *
 * Last, one more records-on pass paced at --rate R records a second (default 5,000, about
 * the gateway's decisions at c=64; 20,000 records, --quick 5,000), from one thread: at that
 * rate each record finds the writer idle, so batches are small; the writer's CPU time per
 * record, the batches a second, and the bytes per 1,000 records are printed.
 *
 * Usage: records-bench [--quick] [--records N] [--box-records M] [--rate R] [--dir DIR]
 *                      [--keep]
 * Exit: 0 when the measurements were taken (no goal is enforced); 1 when a collector
 * could not open or a file does not hold its records; 2 for a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "bench_host.h"
#include "bench_stats.h"
#include "collector.h"
#include "otlp.h"
#include "recfile.h"
#include "resource.h"

#define N_DEFAULT 200000
#define N_QUICK 20000
#define BOX_DEFAULT 2000
#define BOX_QUICK 500
#define N_MAX 10000000
#define PACED_DEFAULT 20000            /* 4 s at the default --rate */
#define PACED_QUICK 5000
#define POOL 4096                      /* distinct decisions, reused in turn */
#define BACKLOG 16384                  /* a quarter of the collector's QUEUE_MAX */
#define BACKLOG_EVERY 256              /* records between two looks at the backlog */
#define BOX_ID "box-0123456789abcdef"
#define DECISION_MARK "\"eventName\":\"strands.box.policy.decision\""

enum arm { ARM_ON, ARM_NOREC, ARM_OFF, ARM_BOX, N_ARMS };
static const char *const arm_name[N_ARMS] = { "records on", "--no-records", "records off",
					      "box-file-discipline" };

/* ---- the workload ------------------------------------------------------------------ */

struct spec {
	struct tm_decision d;           /* time_ns and trace are set per record */
	struct tm_rule rule;
	const char *traceparent;        /* NULL: a new trace */
	char resource[160], request_id[64], tp[64];
};

static struct spec pool[POOL];

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
	/* xorshift64*: a fixed seed, so every run decides the same records */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1du;
}

static void make_pool(void)
{
	static const char *const hosts[] = {
		"api.anthropic.com", "api.github.com", "registry.npmjs.org", "pypi.org",
		"files.pythonhosted.org", "objects.githubusercontent.com", "proxy.golang.org",
		"crates.io", "static.crates.io", "index.crates.io", "api.openai.com",
		"bedrock-runtime.us-east-1.amazonaws.com", "s3.us-east-1.amazonaws.com",
		"deb.debian.org", "pastebin.com", "hooks.slack.com",
	};
	static const char *const paths[] = {
		"/v1/messages", "/repos/acme/widgets/pulls/%u", "/simple/requests/",
		"/-/package-%u.tgz", "/v2/crates/serde/%u/download", "/model/claude/invoke",
		"/bench-artifacts/build-%u.tar.zst", "/api/chat.postMessage",
	};
	static const char *const methods[] = { "GET", "GET", "GET", "POST", "POST", "PUT",
					       "DELETE", "GET" };
	static const char *const permit_rules[] = { "model_api", "package_registries",
						    "github_read", "artifacts_upload" };
	const size_t nh = sizeof hosts / sizeof hosts[0], np = sizeof paths / sizeof paths[0];

	for (size_t i = 0; i < POOL; i++) {
		struct spec *s = &pool[i];
		const char *host = hosts[rng() % nh];
		unsigned port = rng() % 8 ? 443 : 8443;
		unsigned kind = (unsigned)(rng() % 10);   /* 0-4, 5-6, 7-8, 9: see the top */
		char path[96];

		snprintf(path, sizeof path, paths[rng() % np], (unsigned)(rng() % 100000));
		snprintf(s->request_id, sizeof s->request_id, "egress-%u-%" PRIu64 "-%zu",
			 4000 + (unsigned)(rng() % 60000),
			 (uint64_t)1796175118000000000u + rng() % 1000000000000u, i);
		if (rng() % 4 == 0) {
			snprintf(s->tp, sizeof s->tp, "00-%016" PRIx64 "%016" PRIx64 "-%016" PRIx64
				 "-01", rng() | 1, rng(), rng() | 1);
			s->traceparent = s->tp;
		}
		s->d = (struct tm_decision){ .action = "net:connect", .resource = s->resource,
					     .rule = "<default-deny>", .subject = TM_SUBJECT_DEST,
					     .address = host, .port = port,
					     .request_id = s->request_id, .rules = &s->rule };
		if (kind <= 4 || kind == 9) {
			s->d.action = "http:request";
			s->d.method = kind == 9 ? "POST" : methods[rng() % 8];
			snprintf(s->resource, sizeof s->resource, "%s:%u%s", host, port, path);
		} else {
			snprintf(s->resource, sizeof s->resource, "%s:%u", host, port);
		}
		if (kind <= 6) {
			s->d.permit = true;
			s->d.cause = TM_PERMITTED;
			s->rule = (struct tm_rule){ permit_rules[rng() % 4], NULL };
			s->d.n_rules = 1;
		} else if (kind <= 8) {
			s->d.cause = TM_NO_MATCH;
			s->d.reason = "no permit matched";
		} else {
			s->d.cause = TM_FORBIDDEN;
			s->d.reason = "a forbid rule matched";
			s->rule = (struct tm_rule){ "no_paste_sites",
						    "Uploads to paste sites are not allowed" };
			s->d.n_rules = 1;
		}
	}
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- one arm on T threads ----------------------------------------------------------- */

struct run {
	enum arm arm;
	struct tm_collector *c;         /* ARM_ON, ARM_NOREC */
	int fd;                         /* ARM_BOX: the file */
	const struct tm_resource *res;  /* ARM_BOX */
	pthread_barrier_t go;
	uint64_t pace_ns;               /* > 0: one record per pace_ns, as decisions arrive */
	int err;                        /* ARM_BOX: the first write or sync error */
	pthread_mutex_t mu;
};

struct worker {
	struct run *run;
	pthread_t th;
	size_t first, n;                /* records [first, first + n) */
	uint64_t *ns;                   /* each decision's wall time */
	uint64_t cpu;                   /* thread CPU time over the loop */
	uint64_t backoffs;
	uint64_t backoff_cpu;           /* thread CPU time spent backing off */
};

/* Box's discipline for one record: each export request its own line, written and synced. */
static int box_write(struct run *r, struct tm_rec *rec)
{
	struct tm_rec *v[1] = { rec };
	struct tm_buf b = { 0 };
	int e;

	rec->observed_ns = realtime_ns();
	tm_json_logs(&b, r->res, v, 1);
	e = b.oom ? ENOMEM : tm_write_all(r->fd, b.p, b.n);
	if (e == 0 && fsync(r->fd) != 0)
		e = errno;
	b.n = 0;
	tm_json_spans(&b, r->res, v, 1);
	if (e == 0)
		e = b.oom ? ENOMEM : tm_write_all(r->fd, b.p, b.n);
	if (e == 0 && fsync(r->fd) != 0)
		e = errno;
	tm_buf_free(&b);
	return e;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	uint64_t c0;

	pthread_barrier_wait(&r->go);
	c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t start = bench_now_ns();
	for (size_t k = 0; k < w->n; k++) {
		const struct spec *s = &pool[(w->first + k) % POOL];
		uint64_t t0, t1;

		if (r->pace_ns > 0) {
			uint64_t due = start + k * r->pace_ns;
			struct timespec ts = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
		if (r->arm == ARM_ON && k % BACKLOG_EVERY == 0) {
			/* the bench's own pacing, outside the timed call: see the top */
			struct tm_stats st;
			uint64_t b0 = 0;

			for (;;) {
				tm_collector_stats(r->c, &st);
				if (st.emitted - st.written - st.lost < BACKLOG)
					break;
				if (b0 == 0)
					b0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
				w->backoffs++;
				nanosleep(&(struct timespec){ 0, 200000 }, NULL);
			}
			/* the waiting is the bench's, not the decision's: its CPU is not counted */
			if (b0 != 0)
				w->backoff_cpu += cpu_ns(CLOCK_THREAD_CPUTIME_ID) - b0;
		}
		t0 = bench_now_ns();
		struct tm_decision d = s->d;
		d.time_ns = realtime_ns();
		if (r->arm != ARM_OFF) {
			/* what src/gateway/decide.c does for one decision */
			tm_trace_begin(&d.trace, s->traceparent);
			struct tm_rec *rec = tm_record_decision(&d);
			if (r->arm == ARM_BOX) {
				int e = rec ? box_write(r, rec) : ENOMEM;
				free(rec);
				if (e != 0) {
					pthread_mutex_lock(&r->mu);
					r->err = r->err ? r->err : e;
					pthread_mutex_unlock(&r->mu);
				}
			} else {
				tm_emit(r->c, rec);
			}
		}
		t1 = bench_now_ns();
		w->ns[k] = t1 - t0;
	}
	w->cpu = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0 - w->backoff_cpu;
	return NULL;
}

struct figures {
	double p50_us, mean_us, cpu_us;         /* the deciding threads, per record */
	double wall_us, writer_cpu_us;          /* first emit to close (box: to the last sync) */
	uint64_t backoffs, lost, records, bytes, lines, decisions;
};

/* Decision records and lines in path. -1 when it cannot be read. */
static int count_file(const char *path, uint64_t *bytes, uint64_t *decisions, uint64_t *lines)
{
	static char buf[(1 << 20) + sizeof DECISION_MARK];
	const size_t mark = sizeof DECISION_MARK - 1;
	size_t carry = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*bytes = *decisions = *lines = 0;
	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t k = read(fd, buf + carry, 1 << 20);
		size_t n;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			close(fd);
			return -1;
		}
		if (k == 0)
			break;
		*bytes += (uint64_t)k;
		for (char *p = buf + carry; (p = memchr(p, '\n', (size_t)(buf + carry + k - p)));
		     p++)
			(*lines)++;
		n = carry + (size_t)k;
		/* keep fewer bytes than one mark: a cut mark is found once, next time */
		for (char *p = buf; (p = memmem(p, (size_t)(buf + n - p), DECISION_MARK, mark));
		     p += mark)
			(*decisions)++;
		carry = n < mark - 1 ? n : mark - 1;
		memmove(buf, buf + n - carry, carry);
	}
	close(fd);
	return 0;
}

/* The records-on arm's target as `cairn run` opens its default: relative to a box's
 * private/ directory, path being <private>/telemetry/records.jsonl (staged and direct where
 * the file system has it: docs/records.md "Where records go"). -1 (said why) or the
 * directory's descriptor. */
static int private_dir(const char *path)
{
	static const char tail[] = "/telemetry/records.jsonl";
	size_t n = strlen(path);
	char priv[4200];
	if (n <= sizeof tail - 1 || n >= sizeof priv ||
	    strcmp(path + n - (sizeof tail - 1), tail) != 0) {
		fprintf(stderr, "records-bench: %s is not <dir>%s\n", path, tail);
		return -1;
	}
	memcpy(priv, path, n - (sizeof tail - 1));
	priv[n - (sizeof tail - 1)] = '\0';
	if (mkdir(priv, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "records-bench: %s: %s\n", priv, strerror(errno));
		return -1;
	}
	int fd = open(priv, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "records-bench: %s: %s\n", priv, strerror(errno));
	return fd;
}

/* Run arm with nthreads over records; its file (if any) is path, opened as the default
 * target when deflt (path as private_dir wants it), else as a declared one (O_APPEND,
 * buffered). 0, or -1 (said why). */
static int run_arm(enum arm arm, int nthreads, size_t records, uint64_t pace_ns,
		   const char *path, bool deflt, int nullfd, const struct tm_resource *res,
		   struct figures *f)
{
	struct run r = { .arm = arm, .fd = -1, .res = res, .pace_ns = pace_ns };
	struct worker w[8];
	uint64_t *ns = calloc(records ? records : 1, sizeof *ns);
	uint64_t t0, t1, p0, p1, sum = 0, cpu = 0, dcpu = 0;
	char err[700];
	int rc = -1;

	memset(f, 0, sizeof *f);
	memset(w, 0, sizeof w);
	if (ns == NULL) {
		fprintf(stderr, "records-bench: out of memory\n");
		return -1;
	}
	pthread_mutex_init(&r.mu, NULL);
	pthread_barrier_init(&r.go, NULL, (unsigned)nthreads + 1);
	if (arm == ARM_ON || arm == ARM_NOREC) {
		int pfd = arm == ARM_ON && deflt ? private_dir(path) : -1;
		const struct tm_file_target ft = { deflt ? NULL : "[telemetry.bench]", path, pfd,
						   TM_SIG_DENY | TM_SIG_PERMIT | TM_SIG_TRACE |
						   TM_SIG_KERNEL };
		const struct tm_config cfg = { .box_id = BOX_ID, .n_files = arm == ARM_ON,
					       .files = &ft, .live = TM_LIVE_DENY,
					       .live_fd = nullfd };

		if (arm == ARM_ON && deflt && pfd < 0)
			goto out;
		int opened = tm_collector_open(&cfg, &r.c, err, sizeof err);
		if (pfd >= 0)
			close(pfd);
		if (opened != 0) {
			fprintf(stderr, "records-bench: the collector did not open: %s\n", err);
			goto out;
		}
	} else if (arm == ARM_BOX) {
		r.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (r.fd < 0) {
			fprintf(stderr, "records-bench: %s: %s\n", path, strerror(errno));
			goto out;
		}
	}
	for (int i = 0; i < nthreads; i++) {
		w[i].run = &r;
		w[i].first = records * (size_t)i / (size_t)nthreads;
		w[i].n = records * (size_t)(i + 1) / (size_t)nthreads - w[i].first;
		w[i].ns = ns + w[i].first;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			/* the barrier waits for every thread: a missing one would hang it */
			fprintf(stderr, "records-bench: cannot start thread %d\n", i);
			exit(1);
		}
	}
	pthread_barrier_wait(&r.go);
	t0 = bench_now_ns();
	p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		cpu += w[i].cpu + w[i].backoff_cpu;   /* the deciding threads' time, all of it */
		dcpu += w[i].cpu;
		f->backoffs += w[i].backoffs;
	}
	if (r.c != NULL) {
		struct tm_stats st;

		tm_collector_stats(r.c, &st);
		f->lost = st.lost;
		int e = tm_collector_close(r.c, err, sizeof err);
		r.c = NULL;
		if (e != 0) {
			fprintf(stderr, "records-bench: %s\n", err);
			goto out;
		}
	}
	t1 = bench_now_ns();
	p1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (r.err != 0) {
		fprintf(stderr, "records-bench: %s: %s\n", path, strerror(r.err));
		goto out;
	}
	for (size_t i = 0; i < records; i++)
		sum += ns[i];
	f->records = records;
	f->mean_us = (double)sum / (double)records / 1e3;
	f->cpu_us = (double)dcpu / (double)records / 1e3;
	f->p50_us = (double)bench_pct(ns, records, 0.5) / 1e3;
	f->wall_us = (double)(t1 - t0) / (double)records / 1e3;
	f->writer_cpu_us = p1 - p0 > cpu ? (double)(p1 - p0 - cpu) / (double)records / 1e3 : 0;
	if (arm == ARM_ON || arm == ARM_BOX) {
		if (count_file(path, &f->bytes, &f->decisions, &f->lines) < 0) {
			fprintf(stderr, "records-bench: reading %s: %s\n", path, strerror(errno));
			goto out;
		}
		if (f->decisions != records) {
			fprintf(stderr, "records-bench: %s holds %" PRIu64 " decision records of the "
				"%zu the %s arm emitted (%" PRIu64 " lost)\n", path, f->decisions,
				records, arm_name[arm], f->lost);
			goto out;
		}
	}
	rc = 0;
out:
	if (r.c != NULL)
		tm_collector_close(r.c, NULL, 0);
	if (r.fd >= 0)
		close(r.fd);
	pthread_barrier_destroy(&r.go);
	pthread_mutex_destroy(&r.mu);
	free(ns);
	return rc;
}

/* ---- the orchestrator ----------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) < 0)
		fprintf(stderr, "records-bench: could not remove %s: %s\n", path, strerror(errno));
	return 0;
}

static int parse_size(const char *s, size_t lo, size_t hi, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -1;
	*out = (size_t)v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: records-bench [--quick] [--records N] [--box-records M] [--rate R] [--dir DIR]\n"
		"                     [--keep]\n"
		"  the cost of one decision record on the deciding thread and on the collector's\n"
		"  writer, from 1 and 8 threads, against Box's file discipline (a write and an\n"
		"  fsync per line) in the same run; bytes per 1000 records; then the writer's cost\n"
		"  when records arrive at R a second (default 5000). Its files go under\n"
		"  DIR (default $TMPDIR, then /tmp): put it on a disk, where syncs cost.\n");
}

int main(int argc, char **argv)
{
	static const int thread_counts[] = { 1, 8 };
	size_t n = N_DEFAULT, nbox = BOX_DEFAULT, rate = 5000, npaced = PACED_DEFAULT;
	bool quick = false, keep = false, n_set = false, box_set = false;
	const char *base = NULL;
	char *dir = NULL, run_hex[33], err[512], load0[64], load1[64];
	struct tm_res res = { 0 };
	struct statfs sf;
	struct passwd *pw;
	int rc = 1, nullfd = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			base = argv[++i];
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc &&
			 parse_size(argv[i + 1], 100, N_MAX, &n) == 0)
			n_set = true, i++;
		else if (strcmp(argv[i], "--box-records") == 0 && i + 1 < argc &&
			 parse_size(argv[i + 1], 10, N_MAX, &nbox) == 0)
			box_set = true, i++;
		else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc &&
			 parse_size(argv[i + 1], 10, 1000000, &rate) == 0)
			i++;
		else {
			usage();
			return 2;
		}
	}
	if (quick) {
		n = n_set ? n : N_QUICK;
		nbox = box_set ? nbox : BOX_QUICK;
		npaced = PACED_QUICK;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	make_pool();
	if (base == NULL)
		base = getenv("TMPDIR");
	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (asprintf(&dir, "%s/records-bench.XXXXXX", base) < 0 || mkdtemp(dir) == NULL) {
		fprintf(stderr, "records-bench: mkdtemp under %s: %s\n", base, strerror(errno));
		free(dir);
		return 1;
	}
	if ((nullfd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "records-bench: /dev/null: %s\n", strerror(errno));
		goto out;
	}
	/* the peer's lines carry the same resource as the collector's */
	snprintf(run_hex, sizeof run_hex, "%016" PRIx64 "%016" PRIx64, rng(), rng());
	if (tm_res_build(&res, NULL, BOX_ID, "box", run_hex, err, sizeof err) != 0) {
		fprintf(stderr, "records-bench: the resource: %s\n", err);
		goto out;
	}

	pw = getpwuid(getuid());
	loadavg(load0, sizeof load0);
	printf("== decision records: the collector's cost per record against Box's file discipline "
	       "(a write and an fsync per line), %zu records per arm (box-file-discipline %zu) ==\n",
	       n, nbox);
	printf("  run by uid %u (%s); files under %s; load average at start: %s\n",
	       (unsigned)getuid(), pw ? pw->pw_name : "?", dir, load0);
	printf("  workload: 50%% http:request permits, 20%% net:connect permits, 20%% net:connect "
	       "denials (no permit matched), 10%% http:request denials (a forbid rule); %d distinct "
	       "decisions, each with host, port, request id, method and path on http:request, a "
	       "traceparent on a quarter\n", POOL);
	if (statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC)
		printf("  note: %s is on tmpfs, where a sync costs nothing; pass --dir on a disk\n",
		       dir);

	for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
		int nt = thread_counts[t];
		struct figures f[N_ARMS];
		char path[N_ARMS][4200];

		for (int a = 0; a < N_ARMS; a++) {
			if (a == ARM_BOX)
				snprintf(path[a], sizeof path[a], "%s/box-%d.jsonl", dir, nt);
			else
				snprintf(path[a], sizeof path[a], "%s/cairn-%d/telemetry/records.jsonl",
					 dir, nt);
			if (run_arm((enum arm)a, nt, a == ARM_BOX ? nbox : n, 0, path[a], true,
				    nullfd, &res.r, &f[a]) < 0)
				goto out;
		}
		const struct figures *on = &f[ARM_ON], *nr = &f[ARM_NOREC], *off = &f[ARM_OFF];
		const struct figures *box = &f[ARM_BOX];

		printf("  %d deciding thread%s:\n", nt, nt == 1 ? "" : "s");
		printf("    deciding thread, per record (tm_trace_begin + tm_record_decision + "
		       "tm_emit): records on p50 %.2f µs mean %.2f µs CPU %.2f µs | --no-records p50 "
		       "%.2f µs mean %.2f µs CPU %.2f µs | records off p50 %.2f µs mean %.2f µs\n",
		       on->p50_us, on->mean_us, on->cpu_us, nr->p50_us, nr->mean_us, nr->cpu_us,
		       off->p50_us, off->mean_us);
		printf("    writer, per record: %.2f µs wall (first emit to tm_collector_close's "
		       "return, everything written and synced, over %" PRIu64 " records), %.2f µs "
		       "CPU (the process's CPU less the deciding threads'); %" PRIu64 " batches "
		       "(%.0f records each), %" PRIu64 " back-offs, %" PRIu64 " lost\n",
		       on->wall_us, on->records, on->writer_cpu_us, on->lines / 2,
		       on->lines ? (double)on->records * 2 / (double)on->lines : 0.0, on->backoffs,
		       on->lost);
		printf("    box-file-discipline, per record: %.2f µs wall (each record's logs line and "
		       "spans line encoded alone, each written and fsync'd, on the deciding thread; "
		       "%" PRIu64 " records), deciding thread p50 %.2f µs mean %.2f µs\n",
		       box->wall_us, box->records, box->p50_us, box->mean_us);
		printf("    ratio vs box-file-discipline: %.2f (writer: cairn's wall time per record "
		       "written and synced / box's; lower is better)\n",
		       box->wall_us > 0 ? on->wall_us / box->wall_us : 0.0);
		printf("    ratio vs box-file-discipline: %.2f (deciding thread: cairn's mean time per "
		       "decision / box's; lower is better)\n",
		       box->mean_us > 0 ? on->mean_us / box->mean_us : 0.0);
		printf("    records file: %.0f bytes per 1000 records (cairn, %" PRIu64 " lines) | "
		       "box-file-discipline %.0f bytes per 1000 records (%" PRIu64 " lines)\n",
		       (double)on->bytes * 1000 / (double)on->records, on->lines,
		       (double)box->bytes * 1000 / (double)box->records, box->lines);
		if (!keep) {
			unlink(path[ARM_ON]);
			unlink(path[ARM_BOX]);
		}
	}

	/* At full speed the writer finds thousands of records per batch; a gateway's decisions
	 * arrive a few thousand a second, and each finds the writer idle: this pass shows what
	 * a record costs the writer then, and how many batches a second that makes, for the
	 * default target (staged, direct) and for a declared one (O_APPEND, buffered), each
	 * run twice, alternated. */
	{
		static const char *const form[2] = { "the default target (staged, O_DIRECT where "
						      "the file system has it)",
						      "a declared target (O_APPEND, buffered)" };
		struct figures f[2][2];
		double cpu[2] = { 0, 0 };

		for (int k = 0; k < 4; k++) {
			int d = k % 2 == 0 ? 0 : 1, rep = k / 2;
			char path[4200];

			if (d == 0)
				snprintf(path, sizeof path, "%s/paced-%d/telemetry/records.jsonl", dir,
					 rep);
			else
				snprintf(path, sizeof path, "%s/paced-%d.jsonl", dir, rep);
			if (run_arm(ARM_ON, 1, npaced, 1000000000u / rate, path, d == 0, nullfd,
				    &res.r, &f[d][rep]) < 0)
				goto out;
			cpu[d] += f[d][rep].writer_cpu_us / 2;
			if (!keep)
				unlink(path);
		}
		printf("  records on, paced at %zu records/s (1 deciding thread, %" PRIu64 " records "
		       "a run: decisions as a busy gateway makes them), two runs of each target "
		       "alternated:\n", rate, f[0][0].records);
		for (int d = 0; d < 2; d++) {
			const struct figures *g = &f[d][1];
			double secs = g->wall_us * (double)g->records / 1e6;
			printf("    %s: writer %.2f µs CPU per record (runs %.2f, %.2f); %" PRIu64
			       " batches (%.1f records each, %.0f batches/s, synced at most once a "
			       "second); records file %.0f bytes per 1000 records; deciding thread "
			       "p50 %.2f µs mean %.2f µs\n", form[d], cpu[d], f[d][0].writer_cpu_us,
			       f[d][1].writer_cpu_us, g->lines / 2,
			       g->lines ? (double)g->records * 2 / (double)g->lines : 0.0,
			       secs > 0 ? (double)(g->lines / 2) / secs : 0.0,
			       (double)g->bytes * 1000 / (double)g->records, g->p50_us, g->mean_us);
		}
	}
	loadavg(load1, sizeof load1);
	printf("  load average at end: %s\n", load1);
	rc = 0;
out:
	tm_res_free(&res);
	if (nullfd >= 0)
		close(nullfd);
	if (keep)
		fprintf(stderr, "records-bench: kept %s\n", dir);
	else if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "records-bench: could not remove %s: %s\n", dir, strerror(errno));
	free(dir);
	return rc;
}
