/* otlp_dump.c - the test driver of the Node tests in tests/telemetry/ (otlp-dump).
 *
 *   otlp-dump encode DIR
 *       For each case of varied records (every attribute kind, parents,
 *       faults, control records, truncation, UTF-8), write DIR/NAME.logs.json
 *       and DIR/NAME.logs.pb, and DIR/NAME.traces.json and .pb when a record
 *       has a span (tm_json_* and tm_pb_*); print the names, one a line.
 *   otlp-dump export [--case NAME] [--route logs|traces|both] [--stop-ms MS]
 *                    --target URL [--secret HEADER=VALUE] [--repeat N] ...
 *       Send the case's protobuf bodies through the real cairn-export
 *       (tm_exporter_*), to each --target in turn, N times (--secret and
 *       --repeat apply to the --target before them); print one JSON line
 *       {"submits":[rc...],"stopMs":ms,"stop":rc,"targets":[{"sent","lost",
 *       "lastError"}...]}.  "big" is a case of about 3 MiB. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "otlp.h"
#include "record.h"
#include "resource.h"

#define MAX_RECS 512

struct batch {
	const char *name;
	struct tm_rec *v[MAX_RECS];
	size_t n;
};

static void add(struct batch *b, struct tm_rec *r, int64_t observed)
{
	if (r == NULL || b->n == MAX_RECS) {
		fprintf(stderr, "otlp-dump: cannot build case %s\n", b->name);
		exit(2);
	}
	r->observed_ns = observed;
	b->v[b->n++] = r;
}

static void ids(struct tm_trace *t, uint8_t seed)
{
	for (int i = 0; i < 16; i++)
		t->trace_id[i] = (uint8_t)(seed * 16 + i + 1);
	for (int i = 0; i < 8; i++)
		t->span_id[i] = (uint8_t)(seed * 8 + i + 0x81);
}

/* A record built by hand, for the attribute kinds no enforcement point
 * makes (a negative and a zero int, an empty array, empty strings). */
static struct tm_rec *kinds_record(void)
{
	static const char *const none[1] = { NULL };
	static const char *const empties[] = { "", "x", "" };
	struct tm_rec *r = calloc(1, sizeof(*r) + 8 * sizeof(r->attrs[0]));
	r->scope = TM_SCOPE_POLICY;
	r->signal = TM_SIG_DENY;
	r->time_ns = 0;                 /* a default: left out of protobuf, "0" in JSON */
	r->severity = 13;
	r->text = "deny";
	r->event_name = "strands.box.policy.decision";
	ids(&r->trace, 9);
	r->flags = 3;
	r->span = true;
	r->span_flags = 3;
	r->span_name = "policy kinds";
	size_t k = 0;
	r->attrs[k++] = (struct tm_attr){ .key = "s.empty", .kind = TM_STR, .s = "" };
	r->attrs[k++] = (struct tm_attr){ .key = "i.zero", .kind = TM_INT, .i = 0 };
	r->attrs[k++] = (struct tm_attr){ .key = "i.neg", .kind = TM_INT, .i = -5 };
	r->attrs[k++] = (struct tm_attr){ .key = "i.big", .kind = TM_INT, .i = 4294967296 };
	r->attrs[k++] = (struct tm_attr){ .key = "a.empty", .kind = TM_STRS, .n = 0, .v = none };
	r->attrs[k++] = (struct tm_attr){ .key = "a.strs", .kind = TM_STRS, .n = 3, .v = empties };
	r->attrs[k++] = (struct tm_attr){ .key = "", .kind = TM_STR, .s = "an empty key" };
	r->n_attrs = k;
	return r;
}

static char *repeat(const char *unit, size_t times)
{
	size_t u = strlen(unit);
	char *s = malloc(u * times + 1);
	for (size_t i = 0; i < times; i++)
		memcpy(s + i * u, unit, u);
	s[u * times] = '\0';
	return s;
}

/* The cases; b[0, n) filled, the count returned. */
static size_t build(struct batch *b, bool big)
{
	size_t n = 0;
	struct tm_decision d;
	struct tm_trace t;

	/* a net:connect no-match (docs/records.md, the golden line of test_record.c) */
	b[n].name = "deny_net";
	d = (struct tm_decision){ .time_ns = 1767225600123456789, .action = "net:connect",
				  .resource = "telemetry.strandsagents.com:443", .cause = TM_NO_MATCH,
				  .reason = "no permit matched", .rule = "<default-deny>",
				  .subject = TM_SUBJECT_DEST, .address = "telemetry.strandsagents.com",
				  .port = 443, .request_id = "egress-1-2-3" };
	ids(&d.trace, 1);
	add(&b[n], tm_record_decision(&d), 1767225600123470001);
	n++;

	/* a permit under a remote parent: flags 3 and 0x303, the parent key,
	 * request ids, determining rules with a description */
	b[n].name = "permit_parent";
	static const struct tm_rule rules[] = { { "model_api", "the model's API" },
						{ "second", NULL } };
	d = (struct tm_decision){ .time_ns = 1767225600000000001, .action = "http:request",
				  .resource = "model.example:443/v1/messages", .permit = true,
				  .cause = TM_PERMITTED, .n_rules = 2, .rules = rules,
				  .subject = TM_SUBJECT_DEST, .address = "model.example", .port = 443,
				  .method = "POST", .request_id = "egress-9-8-7", .jsonrpc_id = "7" };
	tm_traceparent_parse("00-0123456789abcdef0123456789abcdef-0123456789abcdef-03", 55, &d.trace);
	ids(&t, 2);
	memcpy(d.trace.span_id, t.span_id, 8);
	add(&b[n], tm_record_decision(&d), 1767225600000000002);
	n++;

	/* an internal fault: error.type, the span's status; unsampled parent */
	b[n].name = "fault";
	d.permit = false;
	d.cause = TM_INTERNAL_FAULT;
	d.reason = "the request could not be evaluated, so it was refused";
	d.trace.parent_flags = 0;
	add(&b[n], tm_record_decision(&d), 5);
	n++;

	/* a process: program, redacted and literal arguments, the 64-argument
	 * cap, working directory; forbidden by a rule */
	b[n].name = "process";
	static const char *args[80];
	static bool literal[80];
	static char argbuf[80][16];
	for (int i = 0; i < 80; i++) {
		snprintf(argbuf[i], sizeof(argbuf[i]), i % 3 == 0 ? "--opt%d=v" : i % 3 == 1 ?
			 "-x" : "arg%d", i);
		args[i] = argbuf[i];
		literal[i] = i % 5 == 0;
	}
	static const struct tm_rule forbid[] = { { "no-spawn", "no spawning" } };
	d = (struct tm_decision){ .time_ns = 42, .action = "shell:spawn",
				  .resource = "/usr/bin/uname -s", .cause = TM_FORBIDDEN,
				  .reason = "a forbid rule matched", .n_rules = 1, .rules = forbid,
				  .subject = TM_SUBJECT_PROCESS, .program = "/usr/bin/uname",
				  .n_args = 80, .args = args, .literal = literal, .cwd = "/srv/ü" };
	ids(&d.trace, 3);
	add(&b[n], tm_record_decision(&d), 43);
	n++;

	/* a file past 4 KiB, cut on a character boundary; UTF-8 of every length */
	b[n].name = "fs_truncated";
	char *path = repeat("/é€😀", 600);
	d = (struct tm_decision){ .time_ns = 7, .action = "fs:read", .resource = path,
				  .cause = TM_POLICY_PENDING,
				  .reason = "the complete policy bundle is not installed",
				  .rule = "<policy-pending>" };
	ids(&d.trace, 4);
	add(&b[n], tm_record_decision(&d), 8);
	free(path);
	n++;

	/* control records: the root, a refusal under it (status), a detail */
	b[n].name = "control";
	ids(&t, 5);
	add(&b[n], tm_record_control(TM_BOX_STARTED, "box-demo", NULL, NULL, 100, &t), 101);
	t.has_parent = true;
	memcpy(t.parent_id, t.span_id, 8);
	t.span_id[0] ^= 0xff;
	add(&b[n], tm_record_control(TM_POLICY_REFUSED, "policy.dw", "it will not load", NULL,
				     102, &t), 103);
	t.span_id[1] ^= 0xff;
	add(&b[n], tm_record_control(TM_BOX_STOPPED, "box-demo", NULL, "3 records lost", 104, &t),
	    105);
	n++;

	/* one batch, scopes interleaved (grouped in first-seen order), a
	 * containment record (no span), escapes and an MCP server's action */
	b[n].name = "mixed";
	ids(&t, 6);
	t.has_parent = false;
	add(&b[n], tm_record_control(TM_BOX_STARTED, "q\"\\\n\x01\t\x7f", NULL, NULL, 1, &t), 2);
	d = (struct tm_decision){ .time_ns = 3, .ns = "github", .action = "get_me",
				  .resource = "github/get_me", .cause = TM_NO_MATCH,
				  .reason = "no permit matched", .rule = "<default-deny>",
				  .jsonrpc_id = "abc-1" };
	ids(&d.trace, 7);
	add(&b[n], tm_record_decision(&d), 4);
	t.has_parent = true;
	memcpy(t.parent_id, t.span_id, 8);
	t.span_id[7] ^= 0x55;
	add(&b[n], tm_record_control(TM_POLICY_INSTALLED, "policy.dw", NULL, NULL, 5, &t), 6);
	struct tm_rec *k = kinds_record();
	k->scope = TM_SCOPE_CONTAINMENT;
	k->span = false;
	k->severity = 14;
	k->text = "refused";
	k->event_name = "strands.box.containment.refusal";
	add(&b[n], k, 7);
	d.action = "fs:write";
	d.ns = NULL;
	d.resource = "~/notes.txt";
	d.cause = TM_ENFORCEMENT;
	d.rule = "enforcement:floor";
	d.reason = "the box directory is never writable";
	add(&b[n], tm_record_decision(&d), 8);
	n++;

	/* every attribute kind, defaults included */
	b[n].name = "kinds";
	add(&b[n], kinds_record(), 0);
	n++;

	/* 64-bit integers at their limits: 20 characters in JSON, ten bytes
	 * of varint */
	b[n].name = "int_extremes";
	k = kinds_record();
	k->n_attrs = 2;
	k->attrs[0] = (struct tm_attr){ .key = "i.max", .kind = TM_INT, .i = INT64_MAX };
	k->attrs[1] = (struct tm_attr){ .key = "i.min", .kind = TM_INT, .i = INT64_MIN };
	add(&b[n], k, 1);
	n++;

	if (big) {
		/* about 3 MiB: more than one datagram can carry */
		b[n].name = "big";
		char *p = repeat("/big", 1100);
		d = (struct tm_decision){ .time_ns = 9, .action = "fs:read", .resource = p,
					  .cause = TM_NO_MATCH, .reason = "no permit matched",
					  .rule = "<default-deny>" };
		for (int i = 0; i < 370; i++) {
			ids(&d.trace, (uint8_t)i);
			add(&b[n], tm_record_decision(&d), 10 + i);
		}
		free(p);
		n++;
	}
	return n;
}

static int write_file(const char *dir, const char *name, const char *ext,
		      const struct tm_buf *b)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0) {
		fprintf(stderr, "otlp-dump: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int resource(struct tm_res *res)
{
	char err[256];
	/* the operator's attributes too, percent-decoded */
	if (tm_res_build(res, "deployment.environment=test,team=a%20b%2C%C3%A9", "box-3f9a0c1d2e4b5a67",
			 "box", "6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b", err, sizeof(err)) != 0) {
		fprintf(stderr, "otlp-dump: the resource: %s\n", err);
		return -1;
	}
	return 0;
}

static int encode(const char *dir)
{
	static struct batch b[16];
	struct tm_res res;
	if (resource(&res) != 0)
		return 2;
	size_t n = build(b, false);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct tm_buf j = { 0 }, p = { 0 };
		tm_json_logs(&j, &res.r, b[i].v, b[i].n);
		tm_pb_logs(&p, &res.r, b[i].v, b[i].n);
		if (j.oom || p.oom || write_file(dir, b[i].name, "logs.json", &j) != 0 ||
		    write_file(dir, b[i].name, "logs.pb", &p) != 0)
			rc = 2;
		tm_buf_free(&j);
		tm_buf_free(&p);
		tm_json_spans(&j, &res.r, b[i].v, b[i].n);
		tm_pb_spans(&p, &res.r, b[i].v, b[i].n);
		if ((j.n == 0) != (p.n == 0))
			rc = 2;
		if (j.n > 0 && (j.oom || p.oom || write_file(dir, b[i].name, "traces.json", &j) != 0 ||
				write_file(dir, b[i].name, "traces.pb", &p) != 0))
			rc = 2;
		tm_buf_free(&j);
		tm_buf_free(&p);
		printf("%s\n", b[i].name);
		for (size_t k = 0; k < b[i].n; k++)
			free(b[i].v[k]);
	}
	tm_res_free(&res);
	return rc;
}

static void json_str(const char *s)
{
	struct tm_buf b = { 0 };
	tm_json_str(&b, s);
	fwrite(b.p, 1, b.n, stdout);
	tm_buf_free(&b);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int export(int argc, char **argv)
{
	struct tm_otlp_target tg[TM_EXPORT_TARGETS_MAX];
	size_t nt = 0;
	const char *name = "deny_net", *route = "both";
	int repeat_n[TM_EXPORT_TARGETS_MAX], stop_ms = 10000;
	static char secrets[TM_EXPORT_TARGETS_MAX][1024];
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL) {
			fprintf(stderr, "otlp-dump: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--case") == 0) {
			name = v;
		} else if (strcmp(a, "--repeat") == 0 && nt > 0) {
			repeat_n[nt - 1] = atoi(v);
		} else if (strcmp(a, "--route") == 0) {
			route = v;
		} else if (strcmp(a, "--stop-ms") == 0) {
			stop_ms = atoi(v);
		} else if (strcmp(a, "--target") == 0 && nt < TM_EXPORT_TARGETS_MAX) {
			repeat_n[nt] = 1;
			tg[nt++] = (struct tm_otlp_target){ .label = "[telemetry.test]", .url = v };
		} else if (strcmp(a, "--secret") == 0 && nt > 0 && strchr(v, '=') != NULL) {
			snprintf(secrets[nt - 1], sizeof(secrets[0]), "%s", v);
			char *eq = strchr(secrets[nt - 1], '=');
			*eq = '\0';
			tg[nt - 1].header = secrets[nt - 1];
			tg[nt - 1].secret = eq + 1;
		} else {
			fprintf(stderr, "otlp-dump: unknown option %s\n", a);
			return 2;
		}
	}
	static struct batch b[16];
	struct tm_res res;
	if (resource(&res) != 0)
		return 2;
	size_t n = build(b, strcmp(name, "big") == 0), c = 0;
	while (c < n && strcmp(b[c].name, name) != 0)
		c++;
	if (c == n) {
		fprintf(stderr, "otlp-dump: no case %s\n", name);
		return 2;
	}
	struct tm_buf logs = { 0 }, spans = { 0 };
	tm_pb_logs(&logs, &res.r, b[c].v, b[c].n);
	tm_pb_spans(&spans, &res.r, b[c].v, b[c].n);
	uint32_t n_spans = 0;
	for (size_t i = 0; i < b[c].n; i++)
		n_spans += b[c].v[i]->span;

	char err[512];
	struct tm_exporter *x = NULL;
	if (tm_exporter_start(tg, nt, &x, err, sizeof(err)) != 0) {
		printf("{\"startError\":");
		json_str(err);
		printf("}\n");
		goto out;
	}
	printf("{\"submits\":[");
	bool first = true;
	for (size_t t = 0; t < nt; t++) {
		for (int r = 0; r < repeat_n[t]; r++) {
			if (strcmp(route, "traces") != 0) {
				int rc = tm_exporter_submit(x, t, TM_ROUTE_LOGS, logs.p, logs.n,
							    (uint32_t)b[c].n);
				printf("%s%d", first ? "" : ",", rc);
				first = false;
			}
			if (strcmp(route, "logs") != 0 && spans.n > 0) {
				int rc = tm_exporter_submit(x, t, TM_ROUTE_TRACES, spans.p, spans.n,
							    n_spans);
				printf("%s%d", first ? "" : ",", rc);
				first = false;
			}
		}
	}
	struct tm_export_report rep[TM_EXPORT_TARGETS_MAX];
	long long t0 = now_ms();
	int rc = tm_exporter_stop(x, rep, nt, stop_ms);
	printf("],\"bodyBytes\":%zu,\"stopMs\":%lld,\"stop\":%d,\"targets\":[", logs.n,
	       now_ms() - t0, rc);
	for (size_t t = 0; t < nt; t++) {
		printf("%s{\"sent\":%llu,\"lost\":%llu,\"lastError\":", t ? "," : "",
		       (unsigned long long)rep[t].sent, (unsigned long long)rep[t].lost);
		json_str(rep[t].last_error);
		printf("}");
	}
	printf("]}\n");
out:
	tm_buf_free(&logs);
	tm_buf_free(&spans);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < b[i].n; k++)
			free(b[i].v[k]);
	tm_res_free(&res);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "encode") == 0)
		return encode(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "export") == 0)
		return export(argc - 2, argv + 2);
	fprintf(stderr, "usage: otlp-dump encode DIR | otlp-dump export [--case NAME] "
		"[--route logs|traces|both] [--stop-ms MS] --target URL "
		"[--secret HEADER=VALUE] [--repeat N] ...\n");
	return 2;
}
