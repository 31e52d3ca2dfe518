/* test_collector.c - the collector end to end on files: batches, include
 * filters, control records first and in one trace, the live lines, a full
 * or failing target, the resource's operator attributes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "collector.h"
#include "live.h"
#include "resource.h"
#include "test.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tm-test-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

static struct tm_rec *deny(const char *host)
{
	struct tm_decision d = { .time_ns = 1, .action = "net:connect", .resource = host,
				 .cause = TM_NO_MATCH, .reason = "no permit matched",
				 .rule = "<default-deny>", .subject = TM_SUBJECT_DEST,
				 .address = host, .port = 443 };
	tm_trace_begin(&d.trace, NULL);
	return tm_record_decision(&d);
}

static struct tm_rec *permit(const char *host)
{
	const struct tm_rule rules[] = { { "ok_rule", NULL } };
	struct tm_decision d = { .time_ns = 1, .action = "http:request", .resource = host,
				 .permit = true, .cause = TM_PERMITTED, .n_rules = 1,
				 .rules = rules, .subject = TM_SUBJECT_DEST, .address = host,
				 .port = 443, .method = "GET" };
	tm_trace_begin(&d.trace, "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01");
	return tm_record_decision(&d);
}

/* Every log record of a file, as "scope|verdict-or-op|traceId" lines. */
static size_t read_records(const char *path, char out[][160], size_t max, size_t *lines,
			   size_t *spans)
{
	size_t n = 0, len;
	char *text = test_read_file(path, &len);
	*lines = *spans = 0;
	if (text == NULL)
		return 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		(*lines)++;
		CHECK(j != NULL);
		if (j == NULL)
			continue;
		json_t *rs = json_object_get(j, "resourceLogs");
		if (rs == NULL) {
			json_t *sp = json_object_get(j, "resourceSpans");
			CHECK(sp != NULL);
			size_t i, k;
			json_t *r, *ss, *s;
			json_array_foreach(sp, i, r) json_array_foreach(json_object_get(r, "scopeSpans"), k, ss)
				*spans += json_array_size(json_object_get(ss, "spans"));
			(void)s;
			json_decref(j);
			continue;
		}
		size_t i, k, m;
		json_t *r, *sl, *lr;
		json_array_foreach(rs, i, r) json_array_foreach(json_object_get(r, "scopeLogs"), k, sl)
		{
			const char *scope = json_string_value(json_object_get(
				json_object_get(sl, "scope"), "name"));
			json_array_foreach(json_object_get(sl, "logRecords"), m, lr)
			{
				const char *what = json_string_value(json_object_get(lr, "severityText"));
				size_t q;
				json_t *a;
				/* a control record's operation (after the root's parent key) */
				json_array_foreach(json_object_get(lr, "attributes"), q, a)
					if (scope && strcmp(scope, "strands-box.control") == 0 &&
					    strcmp(json_string_value(json_object_get(a, "key")),
						   "strands.box.control.operation") == 0)
						what = json_string_value(json_object_get(
							json_object_get(a, "value"), "stringValue"));
				if (n < max)
					snprintf(out[n++], 160, "%s|%s|%s", scope, what,
						 json_string_value(json_object_get(lr, "traceId")));
			}
		}
		json_decref(j);
	}
	free(text);
	return n;
}

static void test_default_and_filtered(void)
{
	setup();
	char all[128], denies[128];
	snprintf(all, sizeof(all), "%s/private", dir);
	CHECK(mkdir(all, 0700) == 0);
	int pfd = open(all, O_RDONLY | O_DIRECTORY);
	snprintf(all, sizeof(all), "%s/private/telemetry/records.jsonl", dir);
	snprintf(denies, sizeof(denies), "%s/deep/er/denies.jsonl", dir);
	const struct tm_file_target files[] = {
		{ NULL, all, pfd, TM_SIG_DENY | TM_SIG_PERMIT | TM_SIG_TRACE | TM_SIG_KERNEL },
		{ "[telemetry.d]", denies, -1, TM_SIG_DENY },
	};
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 2, .files = files,
				 .live = TM_LIVE_ALL, .live_fd = pipefd[1],
				 .resource_env = "team=core,deploy.env=a%2Cb" };
	struct tm_collector *c = NULL;
	char err[256];
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);
	close(pfd);
	CHECK_EQ_INT(strlen(tm_collector_run_id(c)), 32);
	tm_control(c, TM_BOX_STARTED, "demo", NULL, NULL);
	tm_control(c, TM_POLICY_INSTALLED, "policy.dw", NULL, NULL);
	for (int i = 0; i < 100; i++)
		tm_emit(c, i % 2 ? deny("a.test:443") : permit("b.test:443/x"));
	tm_control(c, TM_BOX_STOPPED, "demo", NULL, NULL);
	struct tm_stats st;
	CHECK_EQ_INT(tm_collector_close(c, err, sizeof(err)), 0);

	char recs[200][160];
	size_t lines, spans;
	size_t n = read_records(all, recs, 200, &lines, &spans);
	CHECK_EQ_INT(n, 103);
	CHECK_EQ_INT(spans, 103);
	CHECK(lines >= 2 && lines % 2 == 0);
	CHECK(n > 0 && strncmp(recs[0], "strands-box.control|box_started|", 32) == 0);
	/* a batch groups by scope (as Box's does): box_stopped is the last
	 * control record, not always the last line's last record */
	size_t stop = n;
	for (size_t i = 0; i < n; i++)
		if (strncmp(recs[i], "strands-box.control|", 20) == 0)
			stop = i;
	CHECK(stop < n && strncmp(recs[stop], "strands-box.control|box_stopped|", 32) == 0);
	/* the control records share one trace, not the workload's */
	CHECK(stop < n && strcmp(strrchr(recs[0], '|'), strrchr(recs[stop], '|')) == 0);
	size_t permits_in_trace = 0;
	for (size_t i = 0; i < n; i++)
		permits_in_trace += strstr(recs[i], "|permit|0123456789abcdef0123456789abcdef") != NULL;
	CHECK_EQ_INT(permits_in_trace, 50);

	n = read_records(denies, recs, 200, &lines, &spans);
	CHECK_EQ_INT(n, 50);
	for (size_t i = 0; i < n; i++)
		CHECK(strncmp(recs[i], "strands-box.policy|deny|", 24) == 0);
	struct stat sb;
	CHECK(stat(denies, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK(stat(all, &sb) == 0 && (sb.st_mode & 0777) == 0600);

	/* the operator's attributes lead the resource; the box's follow */
	size_t len;
	char *text = test_read_file(all, &len);
	CHECK(text != NULL && strstr(text, "{\"key\":\"team\",\"value\":{\"stringValue\":\"core\"}},"
				     "{\"key\":\"deploy.env\",\"value\":{\"stringValue\":\"a,b\"}},"
				     "{\"key\":\"service.name\"") != NULL);
	free(text);

	/* live: one line per decision, in order, nothing for control records */
	close(pipefd[1]);
	char live[16384];
	ssize_t k = read(pipefd[0], live, sizeof(live) - 1);
	close(pipefd[0]);
	live[k > 0 ? k : 0] = '\0';
	size_t nl = 0;
	for (char *p = live; *p; p++)
		nl += *p == '\n';
	CHECK_EQ_INT(nl, 100);
	CHECK(strncmp(live, "cairn: permit  http:request  b.test:443/x  [ok_rule]\n"
			    "cairn: deny  net:connect  a.test:443  [default-deny]\n", 100) == 0);
	(void)st;
}

static void test_live_deny_only(void)
{
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	struct tm_config cfg = { .box_id = "box-0011223344556677", .live = TM_LIVE_DENY,
				 .live_fd = pipefd[1] };
	struct tm_collector *c = NULL;
	char err[256];
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);
	tm_emit(c, permit("p.test:443/"));
	tm_emit(c, deny("d.test:443"));
	CHECK_EQ_INT(tm_collector_close(c, err, sizeof(err)), 0);
	close(pipefd[1]);
	char live[4096];
	ssize_t k = read(pipefd[0], live, sizeof(live) - 1);
	close(pipefd[0]);
	live[k > 0 ? k : 0] = '\0';
	CHECK_EQ_STR(live, "cairn: deny  net:connect  d.test:443  [default-deny]\n");
}

static void test_live_escapes(void)
{
	char buf[256];
	tm_live_format(buf, sizeof(buf), "deny", "net:connect", "a\x1b[31mb\xc2\x9b" "c", "<x>");
	CHECK_EQ_STR(buf, "cairn: deny  net:connect  a\\x1b[31mb\\xc2\\x9bc  [x]\n");
	size_t n = tm_live_format(buf, 16, "deny", "net:connect", "long.resource", "r");
	CHECK_EQ_INT(n, 15);
	CHECK(buf[14] == '\n' && buf[15] == '\0');
}

static void test_bad_targets(void)
{
	setup();
	char path[160];
	snprintf(path, sizeof(path), "%s/link", dir);
	CHECK(symlink("/etc/passwd", path) == 0);
	const struct tm_file_target t = { "[telemetry.x]", path, -1, TM_SIG_DENY };
	struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 1, .files = &t,
				 .live_fd = -1 };
	struct tm_collector *c = NULL;
	char err[256] = "";
	CHECK(tm_collector_open(&cfg, &c, err, sizeof(err)) < 0 && c == NULL);
	CHECK(strstr(err, "could not be opened") != NULL);

	cfg.n_files = 0;
	static const char *const bad_env[] = {
		"novalue", "=v", "service.name=x", "strands.box.name=x", "a=1,a=2", "a=%zz", "a=%c3",
	};
	static const char *const why[] = {
		"has no `=`", "empty key", "reserved key", "reserved key", "twice", "percent escape",
		"not UTF-8",
	};
	for (size_t i = 0; i < sizeof(bad_env) / sizeof(bad_env[0]); i++) {
		cfg.resource_env = bad_env[i];
		c = NULL;
		CHECK(tm_collector_open(&cfg, &c, err, sizeof(err)) < 0 && c == NULL);
		CHECK(strstr(err, why[i]) != NULL);
		CHECK(strncmp(err, "telemetry configuration: OTEL_RESOURCE_ATTRIBUTES", 49) == 0);
	}
	char longenv[1100];
	memset(longenv, 'a', sizeof(longenv) - 1);
	longenv[sizeof(longenv) - 1] = '\0';
	cfg.resource_env = longenv;
	CHECK(tm_collector_open(&cfg, &c, err, sizeof(err)) < 0);
	CHECK(strstr(err, "write at most 1024") != NULL);
}

/* A target that cannot take its records (here /dev/full) loses them and
 * says so; the others and the decisions go on. */
static void test_failing_target(void)
{
	setup();
	char ok[160];
	snprintf(ok, sizeof(ok), "%s/ok.jsonl", dir);
	const struct tm_file_target t[] = { { "[telemetry.full]", "/dev/full", -1, TM_SIG_DENY },
					    { NULL, ok, -1, TM_SIG_DENY } };
	struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 2, .files = t,
				 .live_fd = -1 };
	struct tm_collector *c = NULL;
	char err[256];
	/* /dev/full is not a regular file: refused at open, before any record */
	CHECK(tm_collector_open(&cfg, &c, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not a regular file") != NULL);
	cfg.files = t + 1;
	cfg.n_files = 1;
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);
	for (int i = 0; i < 10; i++)
		tm_emit(c, deny("x.test:443"));
	tm_emit(c, NULL);                   /* a record that could not be built */
	struct tm_stats st;
	CHECK_EQ_INT(tm_collector_close(c, err, sizeof(err)), 0);
	(void)st;
}

/* Many threads emitting at once: every record arrives once. */
static struct tm_collector *shared;
static void *emitter(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		tm_emit(shared, deny("t.test:443"));
	return NULL;
}

/* Both kinds of target: the default (staged, direct where the file system
 * has it) and a declared one (O_APPEND). */
static void test_threads(void)
{
	setup();
	char path[160], deflt[160];
	snprintf(path, sizeof(path), "%s/t.jsonl", dir);
	snprintf(deflt, sizeof(deflt), "%s/private", dir);
	CHECK(mkdir(deflt, 0700) == 0);
	int pfd = open(deflt, O_RDONLY | O_DIRECTORY);
	snprintf(deflt, sizeof(deflt), "%s/private/telemetry/records.jsonl", dir);
	const struct tm_file_target t[] = { { NULL, deflt, pfd, TM_SIG_DENY },
					    { "[telemetry.t]", path, -1, TM_SIG_DENY } };
	struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 2, .files = t,
				 .live_fd = -1 };
	char err[256];
	CHECK_EQ_INT(tm_collector_open(&cfg, &shared, err, sizeof(err)), 0);
	close(pfd);
	pthread_t th[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, emitter, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	struct tm_stats st;
	tm_collector_stats(shared, &st);
	CHECK_EQ_INT(st.emitted, 16000);
	CHECK_EQ_INT(tm_collector_close_stats(shared, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.written, 16000);        /* in both targets */
	CHECK_EQ_INT(st.lost, 0);
	static char recs[16001][160];
	size_t lines, spans;
	for (int i = 0; i < 2; i++) {
		CHECK_EQ_INT(read_records(i ? path : deflt, recs, 16001, &lines, &spans), 16000);
		CHECK_EQ_INT(spans, 16000);
		/* batched: far fewer lines than records */
		CHECK(lines < 16000);
	}
}

/* Agent payloads (tm_relay_emit): each its own line, unchanged, to every
 * file target, traces only where include names trace; released once
 * written; the stamp is the run's; a queue past TM_RELAY_QUEUE drops and
 * counts. */
static int released;
static void count_release(struct tm_payload *p)
{
	__atomic_add_fetch(&released, 1, __ATOMIC_SEQ_CST);
	free(p);
}

static struct tm_payload *payload(enum tm_relay_kind k, const char *line)
{
	struct tm_payload *p = calloc(1, sizeof(*p));
	*p = (struct tm_payload){ .kind = k, .json = (const uint8_t *)line,
				  .json_len = strlen(line), .release = count_release };
	return p;
}

static void test_relay(void)
{
	setup();
	char all[128], denies[128];
	snprintf(all, sizeof(all), "%s/all.jsonl", dir);
	snprintf(denies, sizeof(denies), "%s/denies.jsonl", dir);
	const struct tm_file_target files[] = {
		{ NULL, all, -1, TM_SIG_DENY | TM_SIG_TRACE },
		{ "[telemetry.d]", denies, -1, TM_SIG_DENY },
	};
	struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 2, .files = files,
				 .live_fd = -1, .resource_env = "team=core,env=ci" };
	struct tm_collector *c = NULL;
	char err[256];
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);

	struct tm_relay_stamp st;
	tm_collector_stamp(c, &st);
	CHECK_EQ_STR(st.box_id, "box-0011223344556677");
	CHECK_EQ_STR(st.run_id, tm_collector_run_id(c));
	CHECK_EQ_INT(st.n_operator, 2);
	CHECK_EQ_STR(st.operator_attrs[0].key, "team");
	CHECK_EQ_STR(st.operator_attrs[1].value, "ci");

	released = 0;
	tm_relay_emit(c, payload(TM_RELAY_TRACES, "{\"resourceSpans\":[]}\n"));
	tm_relay_emit(c, payload(TM_RELAY_LOGS, "{\"resourceLogs\":[]}\n"));
	tm_emit(c, deny("a.test:443"));
	tm_relay_emit(c, payload(TM_RELAY_METRICS, "{\"resourceMetrics\":[]}\n"));
	struct tm_stats stats;
	CHECK_EQ_INT(tm_collector_close_stats(c, &stats, err, sizeof(err)), 0);
	CHECK_EQ_INT(released, 3);
	CHECK_EQ_INT(stats.relayed, 3);
	CHECK_EQ_INT(stats.relay_lost, 0);

	size_t len;
	char *text = test_read_file(all, &len);
	CHECK(text != NULL && strstr(text, "{\"resourceSpans\":[]}\n") != NULL);
	CHECK(text != NULL && strstr(text, "{\"resourceLogs\":[]}\n") != NULL);
	CHECK(text != NULL && strstr(text, "{\"resourceMetrics\":[]}\n") != NULL);
	free(text);
	text = test_read_file(denies, &len);
	CHECK(text != NULL && strstr(text, "{\"resourceSpans\":[]}") == NULL);
	CHECK(text != NULL && strstr(text, "{\"resourceLogs\":[]}\n") != NULL);
	CHECK(text != NULL && strstr(text, "{\"resourceMetrics\":[]}\n") != NULL);
	CHECK(text != NULL && strstr(text, "a.test") != NULL);
	free(text);

	/* a burst past TM_RELAY_QUEUE may find the writer busy and lose some
	 * (how many depends on the scheduler), a payload after the stop is
	 * always lost, and every payload is released, and written once or
	 * counted lost */
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);
	released = 0;
	static const char line[] = "{\"resourceLogs\":[]}\n";
	size_t n = TM_RELAY_QUEUE + 50;
	for (size_t i = 0; i < n; i++)
		tm_relay_emit(c, payload(TM_RELAY_LOGS, line));
	tm_collector_finish(c);
	tm_relay_emit(c, payload(TM_RELAY_LOGS, line));        /* after the stop: lost */
	CHECK_EQ_INT(tm_collector_close_stats(c, &stats, err, sizeof(err)), 0);
	CHECK_EQ_INT(released, n + 1);
	CHECK_EQ_INT(stats.relayed, n + 1);
	CHECK(stats.relay_lost >= 1);
	text = test_read_file(denies, &len);
	size_t lines = 0;
	for (char *q = text; q && (q = strstr(q, line)) != NULL; q += sizeof(line) - 1)
		lines++;
	/* (the first run's logs line is in the file too) */
	CHECK_EQ_INT(lines + stats.relay_lost, n + 1 + 1);
	free(text);
}

static const struct test_case tests[] = {
	{ "default_and_filtered", test_default_and_filtered },
	{ "live_deny_only", test_live_deny_only },
	{ "live_escapes", test_live_escapes },
	{ "bad_targets", test_bad_targets },
	{ "failing_target", test_failing_target },
	{ "threads", test_threads },
	{ "relay", test_relay },
};

TEST_MAIN(tests)
