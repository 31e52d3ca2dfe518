/* test_monitor.c - the stateful monitor: live decisions, outcomes, pending
 * responses under concurrency, the durable history and its recovery. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dogwood.h"
#include "test.h"

/* ---- helpers -------------------------------------------------------------------- */

static struct dw_engine *engine(const char *policy)
{
	struct dw_input in = { "test.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg;
	struct dw_diags *d = dw_diags_new();
	struct dw_engine *eng = NULL;

	memset(&cfg, 0, sizeof cfg);
	cfg.policies = &in;
	cfg.n_policies = 1;
	cfg.flags = DW_VALIDATE;
	if (dw_engine_new(&cfg, &eng, d) != 0) {
		for (size_t i = 0; i < dw_diags_count(d); i++) {
			struct dw_diagnostic g;
			dw_diags_get(d, i, &g);
			fprintf(stderr, "%s:%u:%u: %s\n", g.file, g.line, g.col, g.message);
		}
	}
	dw_diags_free(d);
	return eng;
}

static struct dw_request *http_request(const struct dw_engine *eng, const char *host, long bytes)
{
	struct dw_request *r = dw_request_new();
	char ctx[512];
	char err[256];

	snprintf(ctx, sizeof ctx,
		 "{\"input\": {\"host\": \"%s\", \"port\": 443, \"method\": \"PUT\", \"path\": \"/x\", "
		 "\"body_bytes\": %ld, \"intercepted\": true}}", host, bytes);
	dw_request_set_action(r, "Box::Action", "http:request", strlen("http:request"));
	if (dw_request_set_context_json(r, eng, ctx, strlen(ctx), err, sizeof err) != 0)
		fprintf(stderr, "context: %s\n", err);
	dw_request_set_subject(r, host);
	return r;
}

static int64_t fake_now;

static int64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/cairn-mon-XXXXXX";
	char *d = mkdtemp(tmpl);

	return d ? strdup(d) : NULL;
}

static void rmdir_all(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static const char cap_policy[] =
	"@id(\"allow_http\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"@id(\"three_uploads\")\n"
	"@description(\"At most three uploads an hour.\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal {\n"
	"  (count for (t: Timepoint). where formerly within 1h\n"
	"     (Box::Action::\"http:request\"::response{ input.host: context.input.host } && tp(t))) >= 3\n"
	"};\n";

/* ---- live decisions ------------------------------------------------------------------ */

static void test_decide_record(void)
{
	struct dw_engine *eng = engine(cap_policy);
	struct dw_monitor_config cfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_request *r;
	struct dw_decision d;
	struct dw_monitor_stats st;
	char err[256];
	uint64_t t;

	CHECK(eng != NULL);
	if (eng == NULL)
		return;
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	r = http_request(eng, "a.example", 10);
	fake_now = 1000 * 1000000000LL;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
		CHECK_EQ_INT(d.verdict, DW_ALLOW);
		dw_decision_clear(&d);
		CHECK_EQ_INT(dw_record(m, t, "response", "{\"status\": 200}", 15, err, sizeof err), 0);
		fake_now += 1000000000LL;
	}
	/* the fourth: three responses inside the hour */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	CHECK_EQ_INT(d.cause, DW_CAUSE_FORBIDDEN);
	CHECK(d.n_reasons == 1 && d.reasons[0].index == 1);
	CHECK_EQ_STR(d.text, "policy denied this operation on 'a.example' [policy: three_uploads]: "
			     "At most three uploads an hour.");
	dw_decision_clear(&d);
	/* a denied request has no outcome to record */
	CHECK_EQ_INT(dw_record(m, t, "response", NULL, 0, err, sizeof err), -ENOENT);
	/* another host is its own budget */
	dw_request_free(r);
	r = http_request(eng, "b.example", 10);
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_record(m, t, "error", NULL, 0, err, sizeof err), 0);
	CHECK_EQ_INT(dw_record(m, t, "error", NULL, 0, err, sizeof err), -ENOENT);
	CHECK_EQ_INT(dw_record(m, 999, "bogus", NULL, 0, err, sizeof err), -EINVAL);
	CHECK_EQ_INT(dw_record(m, 999, "error", "{}", 2, err, sizeof err), -EINVAL);
	/* an hour and a second later the first response has left the window */
	dw_request_free(r);
	r = http_request(eng, "a.example", 10);
	fake_now = (1000 + 3601) * 1000000000LL;
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	/* a direct-grant effect enters the history without a decision */
	CHECK_EQ_INT(dw_observe(m, r, "response", "{\"status\": 200}", 15, err, sizeof err), 0);
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);   /* 2 in the window + the observed one + pending */
	dw_decision_clear(&d);
	dw_monitor_stats(m, &st);
	CHECK(st.events >= 10);
	CHECK_EQ_INT(st.pending, 1);
	dw_request_free(r);
	dw_monitor_free(m);
	dw_engine_free(eng);
}

/* Typed outputs (the mediator's hot path) are the JSON ones: a rule over
 * output.status and over an entity output sees them alike. */
static const char typed_policy[] =
	"@id(\"allow_http\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"@id(\"after_503\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.host == \"a.example\" }\n"
	"when temporal { formerly within 1h Box::Action::\"http:request\"::response{ output.status: 503 } };\n"
	"@id(\"after_done\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.host == \"b.example\" }\n"
	"when temporal { formerly within 1h Box::Action::\"fs:read\"::response{ output.result: "
	"Box::FsResponseResult::\"completed\" } };\n";

static struct dw_request *fs_read(const struct dw_engine *eng, const char *path)
{
	struct dw_request *r = dw_request_new();
	char ctx[512], err[256];

	snprintf(ctx, sizeof ctx, "{\"input\": {\"operation\": {\"__entity\": {\"type\": "
		 "\"Box::FsReadOperation\", \"id\": \"read_content\"}}, \"path\": \"%s\"}}", path);
	dw_request_set_action(r, "Box::Action", "fs:read", strlen("fs:read"));
	if (dw_request_set_context_json(r, eng, ctx, strlen(ctx), err, sizeof err) != 0)
		fprintf(stderr, "context: %s\n", err);
	return r;
}

static int decide_verdict(struct dw_monitor *m, struct dw_request *r, uint64_t *t)
{
	struct dw_decision d;
	int v = dw_decide(m, r, &d, t) == 0 ? (int)d.verdict : -1;
	dw_decision_clear(&d);
	return v;
}

static void test_record_typed(void)
{
	struct dw_engine *eng = engine(typed_policy);
	struct dw_monitor *m = NULL;
	char err[256];
	uint64_t t;

	CHECK(eng != NULL);
	if (eng == NULL)
		return;
	CHECK_EQ_INT(dw_monitor_new(eng, NULL, &m, err, sizeof err), 0);
	struct dw_request *a = http_request(eng, "a.example", 10);
	struct dw_request *b = http_request(eng, "b.example", 10);
	CHECK_EQ_INT(decide_verdict(m, a, &t), DW_ALLOW);
	const struct dw_input_attr ok = { .name = "status", .kind = DW_ATTR_LONG, .i = 200 };
	CHECK_EQ_INT(dw_record_typed(m, t, "response", &ok, 1, err, sizeof err), 0);
	uint64_t ta;
	CHECK_EQ_INT(decide_verdict(m, a, &ta), DW_ALLOW);
	t = ta;
	/* a name given twice records nothing: the request stays pending */
	const struct dw_input_attr twice[2] = {
		{ .name = "status", .kind = DW_ATTR_LONG, .i = 503 },
		{ .name = "status", .kind = DW_ATTR_LONG, .i = 503 },
	};
	CHECK_EQ_INT(dw_record_typed(m, t, "response", twice, 2, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "status") != NULL);
	CHECK_EQ_INT(dw_record_typed(m, t, "error", &ok, 1, err, sizeof err), -EINVAL);
	CHECK_EQ_INT(decide_verdict(m, b, &t), DW_ALLOW);       /* b: nothing completed yet */
	const struct dw_input_attr bad = { .name = "status", .kind = DW_ATTR_LONG, .i = 503 };
	CHECK_EQ_INT(dw_record_typed(m, ta, "response", &bad, 1, err, sizeof err), 0);
	CHECK_EQ_INT(decide_verdict(m, a, &t), DW_DENY);        /* after a 503 */
	/* an entity output, observed without a decision */
	const struct dw_input_attr done = { .name = "result", .kind = DW_ATTR_ENTITY,
					    .type = "Box::FsResponseResult", .s = "completed",
					    .len = 9 };
	struct dw_request *f = fs_read(eng, "/x");
	CHECK_EQ_INT(decide_verdict(m, b, &t), DW_ALLOW);
	CHECK_EQ_INT(dw_observe_typed(m, f, "response", &done, 1, err, sizeof err), 0);
	CHECK_EQ_INT(decide_verdict(m, b, &t), DW_DENY);
	dw_request_free(f);
	CHECK_EQ_INT(dw_record_typed(m, 999, "response", &ok, 1, err, sizeof err), -ENOENT);
	dw_request_free(a);
	dw_request_free(b);
	dw_monitor_free(m);
	dw_engine_free(eng);
}

/* dw_engine_watches_action: which actions some temporal condition can see
 * (the mediator observes reads under grants only then). */
static void test_watches_action(void)
{
	struct dw_engine *eng = engine(cap_policy);       /* http:request in a count */
	CHECK(eng != NULL);
	if (eng != NULL) {
		CHECK(dw_engine_watches_action(eng, "http:request"));
		CHECK(!dw_engine_watches_action(eng, "fs:read"));
		dw_engine_free(eng);
	}
	eng = engine(typed_policy);     /* http:request and fs:read, each in a formerly */
	CHECK(eng != NULL);
	if (eng != NULL) {
		CHECK(dw_engine_watches_action(eng, "fs:read"));
		CHECK(dw_engine_watches_action(eng, "http:request"));
		CHECK(!dw_engine_watches_action(eng, "fs:write"));
		dw_engine_free(eng);
	}
	static const char since_policy[] =
		"@id(\"p\")\n"
		"permit (principal, action, resource);\n"
		"@id(\"push\")\n"
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when temporal { !((!Box::Action::\"fs:write\"::response{}) since within 1h "
		"Box::Action::\"shell:exec\"::response{ output.status: 0 }) };\n";
	eng = engine(since_policy);
	CHECK(eng != NULL);
	if (eng != NULL) {
		CHECK(dw_engine_watches_action(eng, "fs:write"));   /* under a negation */
		CHECK(dw_engine_watches_action(eng, "shell:exec"));
		CHECK(!dw_engine_watches_action(eng, "fs:read"));
		dw_engine_free(eng);
	}
	static const char plain[] = "@id(\"p\")\npermit (principal, action, resource);\n";
	eng = engine(plain);
	CHECK(eng != NULL);
	if (eng != NULL) {
		CHECK(!dw_engine_watches_action(eng, "fs:read"));
		dw_engine_free(eng);
	}
}

/* ---- exact caps under concurrency (beyond Box) ---------------------------------------- */

struct racer {
	struct dw_monitor *m;
	const struct dw_engine *eng;
	pthread_barrier_t *go;
	int allowed;
};

static void *race(void *arg)
{
	struct racer *rc = arg;
	struct dw_request *r = http_request(rc->eng, "cap.example", 1);
	struct dw_decision d;
	uint64_t t;

	pthread_barrier_wait(rc->go);
	if (dw_decide(rc->m, r, &d, &t) == 0 && d.verdict == DW_ALLOW)
		rc->allowed = 1;
	dw_decision_clear(&d);
	dw_request_free(r);
	return NULL;
}

static void test_racing_cap(void)
{
	enum { N = 64 };
	struct dw_engine *eng = engine(cap_policy);
	struct dw_monitor *m = NULL;
	pthread_t th[N];
	struct racer rc[N];
	pthread_barrier_t go;
	char err[256];

	if (eng == NULL) {
		CHECK(0);
		return;
	}
	for (int round = 0; round < 5; round++) {
		int allowed = 0;
		CHECK_EQ_INT(dw_monitor_new(eng, NULL, &m, err, sizeof err), 0);
		pthread_barrier_init(&go, NULL, N);
		for (int i = 0; i < N; i++) {
			rc[i] = (struct racer){ m, eng, &go, 0 };
			pthread_create(&th[i], NULL, race, &rc[i]);
		}
		for (int i = 0; i < N; i++) {
			pthread_join(th[i], NULL);
			allowed += rc[i].allowed;
		}
		/* no response is recorded yet: the three permits are pending responses */
		CHECK_EQ_INT(allowed, 3);
		pthread_barrier_destroy(&go);
		dw_monitor_free(m);
	}
	dw_engine_free(eng);
}

/* dw_release: a permit whose only event is its ::request (the gateway's
 * net:connect before DNS) stops counting as a pending ::response. */
static void test_release(void)
{
	struct dw_engine *eng = engine(cap_policy);
	struct dw_monitor_config cfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_monitor_stats before, after;
	struct dw_decision d;
	uint64_t t[3], t4;
	char err[256];

	if (eng == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	struct dw_request *r = http_request(eng, "a.example", 10);
	fake_now = 5000 * 1000000000LL;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(dw_decide(m, r, &d, &t[i]), 0);
		CHECK_EQ_INT(d.verdict, DW_ALLOW);
		dw_decision_clear(&d);
	}
	/* three pending permits fill the cap */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t4), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	dw_decision_clear(&d);
	dw_monitor_stats(m, &before);
	CHECK_EQ_INT(dw_release(m, t[1]), 0);
	dw_monitor_stats(m, &after);
	CHECK(after.events == before.events);           /* no event for a release */
	CHECK(after.pending + 1 == before.pending);
	CHECK_EQ_INT(dw_release(m, t[1]), -ENOENT);
	CHECK_EQ_INT(dw_record(m, t[1], "response", NULL, 0, err, sizeof err), -ENOENT);
	CHECK_EQ_INT(dw_release(m, t4), -ENOENT);       /* a denial has nothing pending */
	/* the released permit no longer counts: one more fits */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t4), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_record(m, t[0], "response", "{\"status\": 200}", 15, err, sizeof err), 0);
	dw_request_free(r);
	dw_monitor_free(m);
	dw_engine_free(eng);
}

/* dw_record_input: the outcome event carries a patched input (Box's
 * delivered body_bytes on http:request::response), and rules see it. */
static const char delivered_policy[] =
	"@id(\"allow_http\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"@id(\"after_big\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal { formerly within 1h\n"
	"  Box::Action::\"http:request\"::response{ input.body_bytes: 777 } };\n";

static void test_record_input(void)
{
	struct dw_engine *eng = engine(delivered_policy);
	struct dw_monitor_config cfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_decision d;
	uint64_t t;
	char err[256];

	if (eng == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	struct dw_request *r = http_request(eng, "a.example", 10);
	fake_now = 7000 * 1000000000LL;
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	/* a plain outcome keeps the offered 10: the rule does not fire */
	CHECK_EQ_INT(dw_record(m, t, "response", "{\"status\": 200}", 15, err, sizeof err), 0);
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	/* a bad patch records nothing and leaves the request pending */
	CHECK_EQ_INT(dw_record_input(m, t, "response", NULL, 0, "{\"bogus\": 1}", 12, err,
				     sizeof err), -EINVAL);
	CHECK_EQ_INT(dw_record_input(m, t, "response", NULL, 0, "[1]", 3, err, sizeof err),
		     -EINVAL);
	/* the delivered size replaces the offered one on the outcome */
	CHECK_EQ_INT(dw_record_input(m, t, "response", "{\"status\": 200}", 15,
				     "{\"body_bytes\": 777}", 19, err, sizeof err), 0);
	CHECK_EQ_INT(dw_record_input(m, t, "response", NULL, 0, "{\"body_bytes\": 1}", 17, err,
				     sizeof err), -ENOENT);
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	dw_decision_clear(&d);
	dw_request_free(r);
	dw_monitor_free(m);
	dw_engine_free(eng);
}

/* ---- the durable history --------------------------------------------------------------- */

/* A deterministic workload: event k at second 100 + k, hosts from a small pool;
 * every third permitted request records a response, the others an error. */
static const char *host_of(unsigned k)
{
	static const char *hosts[] = { "a.example", "b.example", "c.example" };
	return hosts[(k * 7u + k / 5u) % 3u];
}

/* Drive events [from, to) on m; decisions into out[k] ('A'/'D'). */
static void drive(struct dw_monitor *m, const struct dw_engine *eng, unsigned from, unsigned to,
		  char *out, int report_fd)
{
	char err[256];

	for (unsigned k = from; k < to; k++) {
		struct dw_request *r = http_request(eng, host_of(k), k);
		struct dw_decision d;
		uint64_t t;

		fake_now = (int64_t)(100 + k) * 1000000000LL;
		dw_decide(m, r, &d, &t);
		if (out)
			out[k] = d.verdict == DW_ALLOW ? 'A' : 'D';
		/* every permitted request gets its outcome: nothing stays pending */
		if (d.verdict == DW_ALLOW && k % 3 == 0)
			dw_record(m, t, "response", "{\"status\": 201}", 15, err, sizeof err);
		else if (d.verdict == DW_ALLOW)
			dw_record(m, t, "error", NULL, 0, err, sizeof err);
		dw_decision_clear(&d);
		dw_request_free(r);
		if (report_fd >= 0) {
			uint32_t done = k + 1;
			/* snapshots now and then: a kill may land in the middle of one */
			if (k % 40 == 39)
				dw_monitor_checkpoint(m);
			if (dw_sync(m) == 0 && write(report_fd, &done, sizeof done) != sizeof done)
				_exit(3);
		}
	}
}

static void test_durable_reopen(void)
{
	struct dw_engine *eng = engine(cap_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor *m = NULL, *mem = NULL;
	struct dw_monitor_config mcfg = { .clock = fake_clock };
	char a[200], b[200], err[512];

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &mem, err, sizeof err), 0);
	drive(m, eng, 0, 100, a, -1);
	drive(mem, eng, 0, 100, b, -1);
	CHECK_EQ_INT(dw_sync(m), 0);
	dw_monitor_free(m);
	/* reopened: the history is replayed, decisions continue as if it never stopped */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	drive(m, eng, 100, 200, a, -1);
	drive(mem, eng, 100, 200, b, -1);
	CHECK(memcmp(a, b, 200) == 0);
	{
		int n_allow = 0, n_deny = 0;
		for (int i = 0; i < 200; i++)
			a[i] == 'A' ? n_allow++ : n_deny++;
		CHECK(n_allow > 10 && n_deny > 10);    /* the workload exercises the cap */
	}
	dw_monitor_free(m);
	dw_monitor_free(mem);
	/* damage in the middle is refused with its offset */
	{
		char path[512];
		int fd;
		unsigned char byte;
		snprintf(path, sizeof path, "%s/history.log", dir);
		fd = open(path, O_RDWR);
		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(pread(fd, &byte, 1, 300) == 1);
			byte ^= 0x40;
			CHECK(pwrite(fd, &byte, 1, 300) == 1);
			close(fd);
		}
		m = NULL;
		CHECK(dw_monitor_new(eng, &cfg, &m, err, sizeof err) != 0);
		CHECK(m == NULL);
		CHECK(strstr(err, "offset") != NULL);
	}
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* A refusal is history: shown with its cause, rule and reason, sharing the
 * requestId of the decision it follows, replayed on reopen - and read by no
 * rule, so the cap (over ::response) and every decision stay as they were. */
struct shown {
	char text[8192];
	size_t len;
};

static int show_ev(void *arg, const struct dw_history_event *ev)
{
	struct shown *s = arg;
	int n = snprintf(s->text + s->len, sizeof s->text - s->len, "%s %s\n", ev->kind, ev->json);

	if (n > 0 && s->len + (size_t)n < sizeof s->text)
		s->len += (size_t)n;
	return 0;
}

static void test_refuse(void)
{
	struct dw_engine *eng = engine(cap_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_request *r;
	struct dw_decision d;
	struct dw_monitor_stats st;
	struct shown sh = { .len = 0 };
	char err[256];
	uint64_t t;
	const struct dw_refusal blocked = { "enforcement", "enforcement:egress",
					    "blocked by egress control", "{\"status\": 403}", NULL };

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	r = http_request(eng, "a.example", 10);
	fake_now = 5000 * 1000000000LL;
	/* before any decision: a new requestId */
	CHECK_EQ_INT(dw_refuse(m, r, 0, &blocked, err, sizeof err), 0);
	/* after a permit and its outcome: the decision's requestId */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_record(m, t, "error", NULL, 0, err, sizeof err), 0);
	const struct dw_refusal floor = { "enforcement", "enforcement:destination-floor",
					  "net:connect refused", NULL, NULL };
	CHECK_EQ_INT(dw_refuse(m, r, t, &floor, err, sizeof err), 0);
	/* bad refusals change nothing */
	dw_monitor_stats(m, &st);
	uint64_t events = st.events;
	const struct dw_refusal no_rule = { "enforcement", NULL, "x", NULL, NULL };
	const struct dw_refusal bad_out = { "enforcement", "enforcement:egress", "x", "[1]", NULL };
	CHECK_EQ_INT(dw_refuse(m, r, 0, &no_rule, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "cause, rule and reason") != NULL);
	CHECK_EQ_INT(dw_refuse(m, r, 0, &bad_out, err, sizeof err), -EINVAL);
	CHECK_EQ_INT(dw_refuse(m, r, 0, NULL, err, sizeof err), -EINVAL);
	dw_monitor_stats(m, &st);
	CHECK_EQ_INT(st.events, events);
	CHECK_EQ_INT(st.pending, 0);
	/* a hundred refusals count toward no cap: three responses still pass */
	for (int i = 0; i < 100; i++)
		dw_refuse(m, r, 0, &blocked, err, sizeof err);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
		CHECK_EQ_INT(d.verdict, DW_ALLOW);
		dw_decision_clear(&d);
		dw_record(m, t, "response", "{\"status\": 200}", 15, err, sizeof err);
	}
	CHECK_EQ_INT(dw_sync(m), 0);
	dw_monitor_free(m);
	/* reopened, the refusals are replayed as history and change nothing */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);      /* the fourth response: the cap holds */
	dw_decision_clear(&d);
	dw_monitor_free(m);
	CHECK_EQ_INT(dw_history_read(dir, show_ev, &sh, err, sizeof err), 0);
	CHECK(strncmp(sh.text, "refusal {", 9) == 0);
	CHECK(strstr(sh.text, "\"action\":\"Box::Action::\\\"http:request\\\"\",\"kind\":\"refusal\"")
	      != NULL);
	CHECK(strstr(sh.text, "\"cause\":\"enforcement\"") != NULL);
	CHECK(strstr(sh.text, "\"reason\":\"blocked by egress control\"") != NULL);
	CHECK(strstr(sh.text, "\"rule\":\"enforcement:egress\"") != NULL);
	CHECK(strstr(sh.text, "\"output\":{\"status\":403}") != NULL);
	CHECK(strstr(sh.text, "\"input\":{\"body_bytes\":10,\"host\":\"a.example\"") != NULL);
	{
		/* the floor refusal carries the requestId of the ::error before it */
		char *e = strstr(sh.text, "\nerror "), *f = strstr(sh.text, "enforcement:destination-floor");
		char *rid = e ? strstr(e, "\"requestId\":\"") : NULL, id[32] = "", want[64];
		if (rid != NULL)
			sscanf(rid + 13, "%31[0-9]", id);
		snprintf(want, sizeof want, "\"requestId\":\"%s\"", id);
		CHECK(f != NULL && id[0] != '\0');
		if (f != NULL) {
			char *eol = strchr(f, '\n');
			char *line = f;
			while (line > sh.text && line[-1] != '\n')
				line--;
			CHECK(eol != NULL && memmem(line, (size_t)(eol - line), want, strlen(want)) != NULL);
		}
	}
	dw_request_free(r);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* Kill a writer at random moments; every event it reported durable survives, and
 * the recovered monitor decides the continuation as one that never stopped. */
static void test_kill_recover(void)
{
	const char *env = getenv("CAIRN_MONITOR_KILL_CYCLES");
	int cycles = env ? atoi(env) : 50;
	struct dw_engine *eng = engine(cap_policy);
	unsigned seed = (unsigned)time(NULL);
	int compared = 0, longest = 0;

	if (eng == NULL) {
		CHECK(0);
		return;
	}
	srand(seed);
	for (int c = 0; c < cycles; c++) {
		char *dir = tmpdir();
		struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
		struct dw_monitor_config mcfg = { .clock = fake_clock };
		struct dw_monitor *m = NULL, *mem = NULL;
		int p[2];
		pid_t pid;
		uint32_t reported = 0, x;
		struct dw_monitor_stats st;
		char a[400], b[400], err[512];

		if (dir == NULL || pipe(p) != 0) {
			CHECK(0);
			free(dir);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			if (dw_monitor_new(eng, &cfg, &m, err, sizeof err) != 0)
				_exit(2);
			drive(m, eng, 0, 300, NULL, p[1]);
			_exit(0);
		}
		close(p[1]);
		/* let it get a random distance in, then kill it mid-flight: the kill
		 * lands anywhere in the next event (writes, decision, outcome) */
		{
			uint32_t target = (uint32_t)(rand() % 250);
			while (reported < target && read(p[0], &x, sizeof x) == sizeof x)
				reported = x;
			usleep((useconds_t)(rand() % 3000));
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		while (read(p[0], &x, sizeof x) == sizeof x)
			reported = x;
		close(p[0]);
		if (dw_monitor_new(eng, &cfg, &m, err, sizeof err) != 0) {
			fprintf(stderr, "cycle %d (seed %u): recovery failed: %s\n", c, seed, err);
			CHECK(0);
			rmdir_all(dir);
			free(dir);
			continue;
		}
		dw_monitor_stats(m, &st);
		/* every durable event is there (a request, maybe its response) */
		CHECK(st.events >= reported);
		/* the events in the log: replay the same workload prefix in memory */
		{
			uint64_t want = st.events;
			unsigned k = 0;
			CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &mem, err, sizeof err), 0);
			for (;;) {
				struct dw_monitor_stats ms;
				dw_monitor_stats(mem, &ms);
				if (ms.events >= want)
					break;
				drive(mem, eng, k, k + 1, NULL, -1);
				k++;
			}
			{
				struct dw_monitor_stats ms;
				dw_monitor_stats(mem, &ms);
				if (ms.events != want) {
					/* the kill fell between a request and its response: the
					 * response was never written, so feed no more than the log */
					fprintf(stderr, "cycle %d: %llu vs %llu events\n", c,
						(unsigned long long)ms.events, (unsigned long long)want);
				}
				CHECK(ms.events == want || ms.events == want + 1);
				if (ms.events == want) {
					compared++;
					if ((int)k > longest)
						longest = (int)k;
					drive(m, eng, k, k + 100, a, -1);
					drive(mem, eng, k, k + 100, b, -1);
					CHECK(memcmp(a + k, b + k, 100) == 0);
				}
			}
			dw_monitor_free(mem);
		}
		dw_monitor_free(m);
		rmdir_all(dir);
		free(dir);
	}
	/* most kills land between events, and some after real work */
	CHECK(compared >= cycles / 2);
	CHECK(cycles < 10 || longest > 20);
	printf("kill_recover: %d cycles, %d compared, longest prefix %d events (seed %u)\n",
	       cycles, compared, longest, seed);
	dw_engine_free(eng);
}

/* Snapshots: a clean close writes one, the next open loads it and replays only
 * the tail; decisions continue exactly; another policy ignores it and replays. */
static const char scan_policy[] =
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal { formerly within 1h (Box::Action::\"http:request\"::response{ input.host: "
	"\"a.example\" } && previous within 10m Box::Action::\"http:request\"::error{}) };\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal { (count for (h: String). where formerly within 30m "
	"Box::Action::\"http:request\"::request{ input.host: h }) >= 3 && "
	"!((!Box::Action::\"http:request\"::error{ input.host: context.input.host }) since within 1h "
	"Box::Action::\"http:request\"::response{ input.host: context.input.host }) };\n";

static void snapshot_case(const char *policy_a, const char *policy_b)
{
	struct dw_engine *eng = engine(policy_a), *eng2 = policy_b ? engine(policy_b) : NULL;
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor_config mcfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL, *mem = NULL;
	struct dw_monitor_stats st;
	char a[400], b[400], err[512];

	memset(a, 0, sizeof a);
	memset(b, 0, sizeof b);
	if (eng == NULL || dir == NULL || (policy_b && eng2 == NULL)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	drive(m, eng, 0, 150, a, -1);
	dw_monitor_free(m);      /* writes the snapshot */
	/* a little more history after it: the tail is replayed on top */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK(st.from_snapshot);
	CHECK_EQ_INT(st.replayed, 0);
	drive(m, eng, 150, 170, a, -1);
	CHECK_EQ_INT(dw_sync(m), 0);
	/* kill-like stop: no snapshot at 170 (copy the old one back over it) */
	dw_monitor_free(m);
	if (policy_b == NULL) {
		CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
		CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &mem, err, sizeof err), 0);
		drive(mem, eng, 0, 170, b, -1);
		dw_monitor_stats(m, &st);
		CHECK(st.from_snapshot);
		drive(m, eng, 170, 300, a, -1);
		drive(mem, eng, 170, 300, b, -1);
		CHECK(memcmp(a + 170, b + 170, 130) == 0);
	} else {
		/* another policy: the snapshot is not its state; it replays the history,
		 * exactly as a copy of the history without any snapshot does */
		char cmd[1024], *copy = tmpdir();
		struct dw_monitor_config ccfg = { .history_dir = copy, .clock = fake_clock };
		if (copy == NULL) {
			CHECK(0);
			return;
		}
		snprintf(cmd, sizeof cmd, "cp '%s/history.log' '%s/'", dir, copy);
		CHECK(system(cmd) == 0);
		CHECK_EQ_INT(dw_monitor_new(eng2, &cfg, &m, err, sizeof err), 0);
		CHECK_EQ_INT(dw_monitor_new(eng2, &ccfg, &mem, err, sizeof err), 0);
		dw_monitor_stats(m, &st);
		CHECK(!st.from_snapshot);
		CHECK(st.replayed > 0);
		dw_monitor_stats(mem, &st);
		CHECK(!st.from_snapshot);
		drive(m, eng2, 170, 300, a, -1);
		drive(mem, eng2, 170, 300, b, -1);
		CHECK(memcmp(a + 170, b + 170, 130) == 0);
		dw_monitor_free(mem);
		mem = NULL;
		rmdir_all(copy);
		free(copy);
	}
	dw_monitor_free(m);
	dw_monitor_free(mem);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
	dw_engine_free(eng2);
}

static void test_snapshot(void)
{
	snapshot_case(cap_policy, NULL);
	snapshot_case(scan_policy, NULL);       /* scanned leaves: events refilled from the log */
	snapshot_case(cap_policy, scan_policy); /* a changed policy replays */
	snapshot_case(scan_policy, cap_policy);
}

/* Retention on disk: with a one-minute window, a long run compacts the log on
 * the compactor thread while decisions go on; the log stays verifiable, holds
 * far fewer records than were written, and a reopened monitor continues as
 * one that never stopped. */
static const char minute_policy[] =
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal { (count for (t: Timepoint). where formerly within 1m "
	"(Box::Action::\"http:request\"::response{ input.host: context.input.host } && tp(t))) >= 20 };\n";

static void test_compaction(void)
{
	struct dw_engine *eng = engine(minute_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor_config mcfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL, *mem = NULL;
	static char a[200500], b[200500];
	char err[512];
	uint64_t n_records = 0;
	unsigned n = 200000;

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &mem, err, sizeof err), 0);
	drive(m, eng, 0, n, a, -1);
	drive(mem, eng, 0, n, b, -1);
	CHECK(memcmp(a, b, n) == 0);
	CHECK_EQ_INT(dw_sync(m), 0);
	dw_monitor_free(m);     /* waits for a compaction in flight */
	CHECK_EQ_INT(dw_history_verify(dir, &n_records, err, sizeof err), 0);
	/* ~260,000 events were written; a minute of them (and the dead prefix
	 * not yet dropped) remain */
	CHECK(n_records > 0 && n_records < 140000);
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	drive(m, eng, n, n + 500, a, -1);
	drive(mem, eng, n, n + 500, b, -1);
	CHECK(memcmp(a + n, b + n, 500) == 0);
	dw_monitor_free(m);
	dw_monitor_free(mem);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* A request in flight longer than the window still counts until its outcome
 * is recorded (found in review: it used to leave the window with its time),
 * and a snapshot taken with requests in flight loads (they are not saved). */
static void test_pending_long(void)
{
	static const char one_per_10m[] =
		"permit (principal, action == Box::Action::\"http:request\", resource);\n"
		"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
		"when temporal { (count for (h: String), (t: Timepoint). where formerly within 10m "
		"(Box::Action::\"http:request\"::response{ input.host: h } && tp(t))) >= 1 };\n"
		"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
		"when { context.input.body_bytes == 7 }\n"
		"when temporal { (count for (h: String). where formerly within 10m "
		"Box::Action::\"http:request\"::response{ input.host: h }) >= 2 };\n";
	struct dw_engine *eng = engine(one_per_10m);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_monitor_stats st;
	struct dw_request *r;
	struct dw_decision d;
	char err[256];
	uint64_t ta, tb;

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	r = http_request(eng, "a.example", 1);
	fake_now = 1000LL * 1000000000LL;
	CHECK_EQ_INT(dw_decide(m, r, &d, &ta), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	fake_now += 60LL * 1000000000LL;
	CHECK_EQ_INT(dw_decide(m, r, &d, &tb), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);            /* A is in flight */
	dw_decision_clear(&d);
	fake_now += 600LL * 1000000000LL;            /* 11 minutes after A */
	CHECK_EQ_INT(dw_decide(m, r, &d, &tb), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);            /* still in flight: still counts */
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_record(m, ta, "error", NULL, 0, err, sizeof err), 0);
	CHECK_EQ_INT(dw_decide(m, r, &d, &tb), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);           /* released by the error */
	dw_decision_clear(&d);
	/* close with tb in flight: the snapshot loads, without it */
	dw_monitor_free(m);
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK(st.from_snapshot);
	CHECK_EQ_INT(st.pending, 0);
	CHECK_EQ_INT(dw_decide(m, r, &d, &tb), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);           /* nothing recorded, nothing pending */
	dw_decision_clear(&d);
	dw_request_free(r);
	dw_monitor_free(m);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}


/* ---- decisions in the history (issue 12 §2, docs/engine.md) ---------------------------- */

static const char annot_policy[] =
	"@id(\"allow_http\")\n"
	"@description(\"Uploads are allowed.\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource);\n"
	"@id(\"three_uploads\")\n"
	"@description(\"At most three uploads an hour.\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when temporal {\n"
	"  (count for (t: Timepoint). where formerly within 1h\n"
	"     (Box::Action::\"http:request\"::response{ input.host: context.input.host } && tp(t))) >= 3\n"
	"};\n"
	"@id(\"overflow\")\n"
	"forbid (principal, action == Box::Action::\"net:connect\", resource)\n"
	"when { context.input.host == \"fault.example\" &&\n"
	"       context.input.port * 9223372036854775807 > 0 };\n";

static struct dw_request *connect_request(const struct dw_engine *eng, const char *host)
{
	struct dw_request *r = dw_request_new();
	char ctx[256], subject[128], err[256];

	snprintf(ctx, sizeof ctx, "{\"input\": {\"host\": \"%s\", \"port\": 443}}", host);
	snprintf(subject, sizeof subject, "%s:443", host);
	dw_request_set_action(r, "Box::Action", "net:connect", strlen("net:connect"));
	if (dw_request_set_context_json(r, eng, ctx, strlen(ctx), err, sizeof err) != 0)
		fprintf(stderr, "context: %s\n", err);
	dw_request_set_subject(r, subject);
	return r;
}

/* Every event's JSON line, by position. */
struct lines {
	char *json[64];
	char kind[64][16];
	size_t n;
};

static int collect(void *arg, const struct dw_history_event *ev)
{
	struct lines *l = arg;

	if (l->n < sizeof l->json / sizeof l->json[0]) {
		l->json[l->n] = strdup(ev->json);
		snprintf(l->kind[l->n], sizeof l->kind[l->n], "%s", ev->kind);
		l->n++;
	}
	return 0;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->json[i]);
	l->n = 0;
}

/* line i holds want (and says so when it does not) */
static void check_line(const struct lines *l, size_t i, const char *want)
{
	if (i >= l->n || l->json[i] == NULL || strstr(l->json[i], want) == NULL) {
		fprintf(stderr, "  line %zu = %s\n  want ... %s ...\n", i,
			i < l->n && l->json[i] ? l->json[i] : "(none)", want);
		CHECK(0);
	} else {
		CHECK(1);
	}
}

/* Each decision — permit, forbid, no-match, internal fault — is stored with its
 * event: verdict, cause, the determining ids, the denial text, the governing
 * rule's description and the note, and dw_history_read shows them; outcome
 * events carry none, a refusal only its note; a reopened monitor replays the
 * history and decides as before (annotations decide nothing). */
static void test_decisions_stored(void)
{
	struct dw_engine *eng = engine(annot_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_request *ra, *rc, *rf;
	struct dw_decision d;
	struct lines l = { .n = 0 };
	char err[512];
	uint64_t t, n_records = 0;
	const struct dw_refusal refused = { "forbidden", "three_uploads", "policy said no",
					    "{\"status\": 403}", "{\"records\":[\"r5\"]}" };

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	ra = http_request(eng, "a.example", 10);
	rc = connect_request(eng, "c.example");
	rf = connect_request(eng, "fault.example");
	fake_now = 2000 * 1000000000LL;
	CHECK_EQ_INT(dw_request_set_note(ra, "{\"record\":\"r1\"}"), 0);
	for (int i = 0; i < 3; i++) {                              /* events 0..5 */
		CHECK_EQ_INT(dw_decide(m, ra, &d, &t), 0);
		CHECK_EQ_INT(d.verdict, DW_ALLOW);
		dw_decision_clear(&d);
		CHECK_EQ_INT(dw_record(m, t, "response", "{\"status\": 200}", 15, err, sizeof err), 0);
		CHECK_EQ_INT(dw_request_set_note(ra, NULL), 0);    /* only the first has one */
		fake_now += 1000000000LL;
	}
	CHECK_EQ_INT(dw_decide(m, ra, &d, &t), 0);                 /* 6: forbidden */
	CHECK_EQ_INT(d.cause, DW_CAUSE_FORBIDDEN);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_refuse(m, ra, t, &refused, err, sizeof err), 0);   /* 7 */
	CHECK_EQ_INT(dw_decide(m, rc, &d, &t), 0);                 /* 8: no match */
	CHECK_EQ_INT(d.cause, DW_CAUSE_NO_MATCH);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_request_set_note(rf, "fault \xc3\xa9"), 0);
	CHECK_EQ_INT(dw_decide(m, rf, &d, &t), 0);                 /* 9: the rule errs */
	CHECK_EQ_INT(d.cause, DW_CAUSE_INTERNAL_FAULT);
	CHECK_EQ_INT(d.n_errors, 1);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_sync(m), 0);
	dw_monitor_free(m);

	CHECK_EQ_INT(dw_history_read(dir, collect, &l, err, sizeof err), 0);
	CHECK_EQ_INT(l.n, 10);
	check_line(&l, 0, "}},\"decision\":{\"verdict\":\"permit\",\"cause\":\"permitted\","
		   "\"ids\":[\"allow_http\"],\"description\":\"Uploads are allowed.\","
		   "\"note\":\"{\\\"record\\\":\\\"r1\\\"}\"}}");
	check_line(&l, 2, ",\"decision\":{\"verdict\":\"permit\",\"cause\":\"permitted\","
		   "\"ids\":[\"allow_http\"],\"description\":\"Uploads are allowed.\"}}");
	check_line(&l, 6, ",\"decision\":{\"verdict\":\"deny\",\"cause\":\"forbidden\","
		   "\"ids\":[\"three_uploads\"],\"reason\":\"policy denied this operation on "
		   "'a.example' [policy: three_uploads]: At most three uploads an hour.\","
		   "\"description\":\"At most three uploads an hour.\"}}");
	check_line(&l, 7, "\"reason\":\"policy said no\"");
	check_line(&l, 7, "}},\"note\":\"{\\\"records\\\":[\\\"r5\\\"]}\"}");
	check_line(&l, 8, ",\"decision\":{\"verdict\":\"deny\",\"cause\":\"no_match\",\"ids\":[],"
		   "\"reason\":\"policy denied this operation on 'c.example:443' [default-deny]: "
		   "No permit policy matched this request.\"}}");
	check_line(&l, 9, ",\"decision\":{\"verdict\":\"deny\",\"cause\":\"internal_fault\","
		   "\"ids\":[],\"reason\":\"policy denied this operation on 'fault.example:443' "
		   "because the request could not be evaluated.\",\"note\":\"fault \xc3\xa9\"}}");
	for (size_t i = 0; i < l.n; i++) {
		bool request = strcmp(l.kind[i], "request") == 0;
		/* one decision on each request, none elsewhere; a note only where set */
		CHECK(request == (l.json[i] != NULL && strstr(l.json[i], "\"decision\":{") != NULL));
		if (i != 0 && i != 7 && i != 9)
			CHECK(l.json[i] != NULL && strstr(l.json[i], "\"note\"") == NULL);
	}
	lines_free(&l);
	CHECK_EQ_INT(dw_history_verify(dir, &n_records, err, sizeof err), 0);
	CHECK_EQ_INT(n_records, 10);

	/* reopened: replayed (the snapshot set aside), the cap still holds */
	{
		char snap[600];
		snprintf(snap, sizeof snap, "%s/snapshot", dir);
		unlink(snap);
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	{
		struct dw_monitor_stats st;
		dw_monitor_stats(m, &st);
		CHECK_EQ_INT(st.replayed, 10);
		CHECK(!st.from_snapshot);
	}
	CHECK_EQ_INT(dw_decide(m, ra, &d, &t), 0);
	CHECK_EQ_INT(d.cause, DW_CAUSE_FORBIDDEN);
	dw_decision_clear(&d);
	dw_monitor_free(m);
	dw_request_free(ra);
	dw_request_free(rc);
	dw_request_free(rf);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* The note's rules: at most 1024 bytes of UTF-8, NULL or "" clears, a refused
 * one leaves the note as it was; a refusal's note follows the same rules and
 * a bad one records nothing.  The note never reaches a rule or the state: two
 * monitors fed the same requests with and without notes decide alike and
 * keep the same state. */
static void test_note_rules(void)
{
	struct dw_engine *eng = engine(annot_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor_config mcfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL, *plain = NULL;
	struct dw_monitor_stats st, st2;
	struct dw_request *r, *bare;
	struct dw_decision d, d2;
	struct lines l = { .n = 0 };
	char note[1100], err[512];
	uint64_t t;

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	r = http_request(eng, "a.example", 10);
	bare = http_request(eng, "a.example", 10);
	memset(note, 'n', sizeof note);
	note[1024] = '\0';
	CHECK_EQ_INT(dw_request_set_note(r, note), 0);             /* 1024 bytes: fine */
	note[1024] = 'n';
	note[1025] = '\0';
	CHECK_EQ_INT(dw_request_set_note(r, note), -EINVAL);       /* 1025: too long */
	CHECK_EQ_INT(dw_request_set_note(r, "bad \xff byte"), -EINVAL);
	CHECK_EQ_INT(dw_request_set_note(r, "\xed\xa0\x80"), -EINVAL);   /* a surrogate */
	CHECK_EQ_INT(dw_request_set_note(r, "\xc3"), -EINVAL);     /* cut short */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &plain, err, sizeof err), 0);
	fake_now = 3000 * 1000000000LL;
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);                  /* 0: the 1024-byte note */
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_request_set_note(r, ""), 0);               /* cleared */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);                  /* 1: none */
	dw_decision_clear(&d);
	{
		const struct dw_refusal too_long = { "enforcement", "enforcement:egress", "x", NULL,
						     note };
		const struct dw_refusal not_utf8 = { "enforcement", "enforcement:egress", "x", NULL,
						     "\xc0\xaf" };
		const struct dw_refusal empty = { "enforcement", "enforcement:egress", "x", NULL, "" };
		dw_monitor_stats(m, &st);
		CHECK_EQ_INT(dw_refuse(m, r, 0, &too_long, err, sizeof err), -EINVAL);
		CHECK(strstr(err, "note: longer than 1024 bytes") != NULL);
		CHECK_EQ_INT(dw_refuse(m, r, 0, &not_utf8, err, sizeof err), -EINVAL);
		CHECK(strstr(err, "note: not UTF-8 (byte 0)") != NULL);
		dw_monitor_stats(m, &st2);
		CHECK_EQ_INT(st2.events, st.events);                /* nothing recorded */
		CHECK_EQ_INT(dw_refuse(m, r, 0, &empty, err, sizeof err), 0);   /* 2: no note */
	}
	dw_monitor_free(m);
	CHECK_EQ_INT(dw_history_read(dir, collect, &l, err, sizeof err), 0);
	CHECK_EQ_INT(l.n, 3);
	{
		char want[1100];
		snprintf(want, sizeof want, "\"note\":\"%.*s\"}}", 1024, note);
		check_line(&l, 0, want);
	}
	CHECK(l.n == 3 && strstr(l.json[1], "\"note\"") == NULL && strstr(l.json[2], "\"note\"") == NULL);
	lines_free(&l);

	/* the same requests, one with notes, one without: same decisions, same state */
	CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &m, err, sizeof err), 0);
	for (int i = 0; i < 6; i++) {
		uint64_t t2;
		snprintf(note, sizeof note, "{\"record\":%d}", i);
		CHECK_EQ_INT(dw_request_set_note(r, note), 0);
		CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
		CHECK_EQ_INT(dw_decide(plain, bare, &d2, &t2), 0);
		CHECK_EQ_INT(d.verdict, d2.verdict);
		CHECK_EQ_INT(d.cause, d2.cause);
		CHECK_EQ_STR(d.text, d2.text);
		if (d.verdict == DW_ALLOW) {
			dw_record(m, t, "response", "{\"status\": 200}", 15, err, sizeof err);
			dw_record(plain, t2, "response", "{\"status\": 200}", 15, err, sizeof err);
		}
		dw_decision_clear(&d);
		dw_decision_clear(&d2);
		fake_now += 1000000000LL;
	}
	dw_monitor_stats(m, &st);
	dw_monitor_stats(plain, &st2);
	CHECK_EQ_INT(st.state_bytes, st2.state_bytes);
	CHECK_EQ_INT(st.events, st2.events);
	dw_monitor_free(m);
	dw_monitor_free(plain);
	dw_request_free(r);
	dw_request_free(bare);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* A history write that fails during dw_decide (the file size limit cuts the
 * record): the permit it would have been is an internal-fault deny, nothing
 * stays pending, the monitor is broken (every later decision denies, and it
 * writes no snapshot of a state the log lacks), and the reopened history —
 * its torn tail cut — decides as a monitor that never saw the request. */
static void test_failed_write(void)
{
	struct dw_engine *eng = engine(cap_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor_config mcfg = { .clock = fake_clock };
	struct dw_monitor *m = NULL, *mem = NULL;
	struct dw_monitor_stats st;
	struct dw_request *r;
	struct dw_decision d;
	struct rlimit old, lim;
	struct stat sb;
	void (*oldsig)(int);
	char path[600], err[512];
	uint64_t t;
	int rc;

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	CHECK_EQ_INT(dw_monitor_new(eng, &mcfg, &mem, err, sizeof err), 0);
	r = http_request(eng, "a.example", 10);
	fake_now = 4000 * 1000000000LL;
	for (int i = 0; i < 2; i++) {          /* two permits, with their responses */
		struct dw_monitor *both[2] = { m, mem };
		for (int k = 0; k < 2; k++) {
			CHECK_EQ_INT(dw_decide(both[k], r, &d, &t), 0);
			CHECK_EQ_INT(d.verdict, DW_ALLOW);
			dw_decision_clear(&d);
			CHECK_EQ_INT(dw_record(both[k], t, "response", "{}", 2, err, sizeof err), 0);
		}
		fake_now += 1000000000LL;
	}
	CHECK_EQ_INT(dw_sync(m), 0);
	snprintf(path, sizeof path, "%s/history.log", dir);
	CHECK(stat(path, &sb) == 0);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	oldsig = signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = (rlim_t)sb.st_size + 20;
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	rc = dw_decide(m, r, &d, &t);          /* would be the third permit */
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	signal(SIGXFSZ, oldsig);
	CHECK_EQ_INT(rc, -EIO);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	CHECK_EQ_INT(d.cause, DW_CAUSE_INTERNAL_FAULT);
	CHECK(d.text != NULL && strstr(d.text, "could not be evaluated") != NULL);
	CHECK(d.n_errors == 1 && strstr(d.errors[0].message, "can record no more events") != NULL);
	dw_decision_clear(&d);
	dw_monitor_stats(m, &st);
	CHECK_EQ_INT(st.pending, 0);           /* the permit was withdrawn */
	CHECK_EQ_INT(dw_record(m, t, "response", "{}", 2, err, sizeof err), -ENOENT);
	/* broken: later decisions deny, and no snapshot is written */
	CHECK_EQ_INT(dw_decide(m, r, &d, &t), -EIO);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_monitor_checkpoint(m), -EIO);
	dw_monitor_free(m);
	snprintf(path, sizeof path, "%s/snapshot", dir);
	CHECK(stat(path, &sb) != 0);
	/* reopened: the cut record is gone; the third permit is still to come */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK_EQ_INT(st.replayed, 4);
	for (int i = 0; i < 2; i++) {
		struct dw_decision d2;
		uint64_t t2;
		CHECK_EQ_INT(dw_decide(m, r, &d, &t), 0);
		CHECK_EQ_INT(dw_decide(mem, r, &d2, &t2), 0);
		CHECK_EQ_INT(d.verdict, i == 0 ? DW_ALLOW : DW_DENY);
		CHECK_EQ_INT(d.verdict, d2.verdict);
		if (d.verdict == DW_ALLOW) {
			dw_record(m, t, "response", "{}", 2, err, sizeof err);
			dw_record(mem, t2, "response", "{}", 2, err, sizeof err);
		}
		dw_decision_clear(&d);
		dw_decision_clear(&d2);
	}
	dw_monitor_free(m);
	dw_monitor_free(mem);
	dw_request_free(r);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* A history written before decisions were stored (event codec version 1:
 * tests/data/history-v1/) opens, replays and decides as it would have, and
 * what is appended to it now carries its decision. */
static void test_v1_history(void)
{
	struct dw_engine *eng = engine(cap_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .history_dir = dir, .clock = fake_clock };
	struct dw_monitor *m = NULL;
	struct dw_monitor_stats st;
	struct dw_request *ra, *rb;
	struct dw_decision d;
	struct lines l = { .n = 0 };
	char cmd[1200], err[512];
	uint64_t t, n_records = 0;

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	snprintf(cmd, sizeof cmd, "cp '%s/history-v1/history.log' '%s/'", TEST_DATA_DIR, dir);
	CHECK(system(cmd) == 0);
	CHECK_EQ_INT(dw_history_verify(dir, &n_records, err, sizeof err), 0);
	CHECK_EQ_INT(n_records, 12);
	CHECK_EQ_INT(dw_history_read(dir, collect, &l, err, sizeof err), 0);
	CHECK_EQ_INT(l.n, 12);
	for (size_t i = 0; i < l.n; i++)
		CHECK(strstr(l.json[i], "\"decision\"") == NULL && strstr(l.json[i], "\"note\"") == NULL);
	lines_free(&l);
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK_EQ_INT(st.replayed, 12);
	CHECK_EQ_INT(st.pending, 0);
	/* within the hour: a.example has three responses (capped), b.example one */
	fake_now = 1010 * 1000000000LL;
	ra = http_request(eng, "a.example", 10);
	rb = http_request(eng, "b.example", 10);
	CHECK_EQ_INT(dw_decide(m, ra, &d, &t), 0);
	CHECK_EQ_INT(d.cause, DW_CAUSE_FORBIDDEN);
	dw_decision_clear(&d);
	CHECK_EQ_INT(dw_decide(m, rb, &d, &t), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	dw_decision_clear(&d);
	/* requestIds go on past the old ones */
	dw_monitor_free(m);
	CHECK_EQ_INT(dw_history_verify(dir, &n_records, err, sizeof err), 0);
	CHECK_EQ_INT(n_records, 14);
	CHECK_EQ_INT(dw_history_read(dir, collect, &l, err, sizeof err), 0);
	CHECK_EQ_INT(l.n, 14);
	check_line(&l, 12, "\"requestId\":\"13\"},");
	check_line(&l, 12, "\"decision\":{\"verdict\":\"deny\",\"cause\":\"forbidden\"");
	check_line(&l, 13, "\"decision\":{\"verdict\":\"permit\",\"cause\":\"permitted\","
		   "\"ids\":[\"allow_http\"]}}");
	lines_free(&l);
	/* and opens again, from the snapshot and by replay */
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK(st.from_snapshot);
	dw_monitor_free(m);
	snprintf(cmd, sizeof cmd, "%s/snapshot", dir);
	unlink(cmd);
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	dw_monitor_stats(m, &st);
	CHECK_EQ_INT(st.replayed, 14);
	dw_monitor_free(m);
	dw_request_free(ra);
	dw_request_free(rb);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

/* Decisions of a trace replayed into a durable history are stored too. */
static void test_trace_decisions_stored(void)
{
	static const char trace[] =
		"@10 scope(principal: Box::Agent::\"self\", resource: Box::Resource::\"unused\") "
		"request_context(input: {host: \"c.example\", port: 443}) "
		"Box::Action::\"net:connect\"::request(input: {host: \"c.example\", port: 443})\n"
		"@11 scope(principal: Box::Agent::\"self\", resource: Box::Resource::\"unused\") "
		"request_context(input: {host: \"c.example\", port: 443}) "
		"Box::Action::\"net:connect\"::response(input: {host: \"c.example\", port: 443})\n";
	struct dw_engine *eng = engine(annot_policy);
	char *dir = tmpdir();
	struct dw_monitor_config cfg = { .flags = DW_MON_CALLER_TIME, .history_dir = dir };
	struct dw_monitor *m = NULL;
	struct dw_trace *tr = NULL;
	struct dw_decision d;
	struct lines l = { .n = 0 };
	bool decided;
	char err[512];

	if (eng == NULL || dir == NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(dw_trace_load(trace, strlen(trace), &tr, err, sizeof err), 0);
	CHECK_EQ_INT(dw_monitor_new(eng, &cfg, &m, err, sizeof err), 0);
	for (size_t i = 0; tr != NULL && i < dw_trace_len(tr); i++) {
		memset(&d, 0, sizeof d);
		CHECK_EQ_INT(dw_monitor_feed_trace(m, tr, i, &decided, &d), 0);
		CHECK(decided == (i == 0));
		dw_decision_clear(&d);
	}
	dw_monitor_free(m);
	CHECK_EQ_INT(dw_history_read(dir, collect, &l, err, sizeof err), 0);
	CHECK_EQ_INT(l.n, 2);
	check_line(&l, 0, ",\"decision\":{\"verdict\":\"deny\",\"cause\":\"no_match\",\"ids\":[],"
		   "\"reason\":\"policy denied this operation on 'c.example:443' [default-deny]: "
		   "No permit policy matched this request.\"}}");
	CHECK(l.n == 2 && strstr(l.json[1], "\"decision\"") == NULL);
	lines_free(&l);
	dw_trace_free(tr);
	rmdir_all(dir);
	free(dir);
	dw_engine_free(eng);
}

static const struct test_case tests[] = {
	{ "pending_long", test_pending_long },
	{ "compaction", test_compaction },
	{ "snapshot", test_snapshot },
	{ "decide_record", test_decide_record },
	{ "record_typed", test_record_typed },
	{ "watches_action", test_watches_action },
	{ "racing_cap", test_racing_cap },
	{ "release", test_release },
	{ "record_input", test_record_input },
	{ "durable_reopen", test_durable_reopen },
	{ "refuse", test_refuse },
	{ "decisions_stored", test_decisions_stored },
	{ "note_rules", test_note_rules },
	{ "failed_write", test_failed_write },
	{ "v1_history", test_v1_history },
	{ "trace_decisions_stored", test_trace_decisions_stored },
	{ "kill_recover", test_kill_recover },
};

TEST_MAIN(tests)
