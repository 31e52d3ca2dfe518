/* test_record.c - decision and control records, whole lines against Box's
 * documented records (docs/records.md), and the pieces: trace context,
 * bounds, redaction, categories, request ids. */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "note.h"
#include "otlp.h"
#include "record.h"
#include "test.h"

static const struct tm_kv res_kv[] = {
	{ "service.name", "strands-box" },
	{ "strands.box.name", "box-3f9a0c1d2e4b5a67" },
	{ "strands.box.source", "box" },
	{ "strands.box.run.id", "6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b" },
};
static const struct tm_resource res = { 4, res_kv };

#define RES_JSON                                                                          \
	"{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":" \
	"\"strands-box\"}},{\"key\":\"strands.box.name\",\"value\":{\"stringValue\":"          \
	"\"box-3f9a0c1d2e4b5a67\"}},{\"key\":\"strands.box.source\",\"value\":{\"stringValue\":" \
	"\"box\"}},{\"key\":\"strands.box.run.id\",\"value\":{\"stringValue\":"                \
	"\"6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b\"}}],\"droppedAttributesCount\":0},"

static void set_hex(uint8_t *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

static char *line_of(struct tm_rec *r, bool spans)
{
	struct tm_buf b = { 0 };
	struct tm_rec *v[1] = { r };
	if (spans)
		tm_json_spans(&b, &res, v, 1);
	else
		tm_json_logs(&b, &res, v, 1);
	tm_buf_putc(&b, '\0');
	return (char *)b.p;
}

/* Box's documented net:connect no-match record, field by field (Box's resource
 * also carries telemetry.sdk.*, which only Rust's SDK adds). */
static void test_net_connect_no_match(void)
{
	struct tm_decision d = {
		.time_ns = 1767225600123456789, .action = "net:connect",
		.resource = "telemetry.strandsagents.com:443", .permit = false,
		.cause = TM_NO_MATCH, .reason = "no permit matched", .rule = "<default-deny>",
		.subject = TM_SUBJECT_DEST, .address = "telemetry.strandsagents.com", .port = 443,
	};
	set_hex(d.trace.trace_id, "9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f", 16);
	set_hex(d.trace.span_id, "1a2b3c4d5e6f7a8b", 8);
	struct tm_rec *r = tm_record_decision(&d);
	CHECK(r != NULL);
	r->observed_ns = 1767225600123470001;
	char *got = line_of(r, false);
	CHECK_EQ_STR(got,
		"{\"resourceLogs\":[" RES_JSON "\"scopeLogs\":[{\"scope\":{\"name\":\"strands-box.policy\","
		"\"version\":\"\",\"attributes\":[],\"droppedAttributesCount\":0},\"logRecords\":[{"
		"\"timeUnixNano\":\"1767225600123456789\",\"observedTimeUnixNano\":\"1767225600123470001\","
		"\"severityNumber\":13,\"severityText\":\"deny\",\"body\":null,\"attributes\":["
		"{\"key\":\"strands.box.policy.principal\",\"value\":{\"stringValue\":\"agent:self\"}},"
		"{\"key\":\"strands.box.policy.action\",\"value\":{\"stringValue\":\"net:connect\"}},"
		"{\"key\":\"strands.box.policy.resource\",\"value\":{\"stringValue\":\"telemetry.strandsagents.com:443\"}},"
		"{\"key\":\"strands.box.policy.verdict\",\"value\":{\"stringValue\":\"deny\"}},"
		"{\"key\":\"strands.box.policy.cause\",\"value\":{\"stringValue\":\"no_match\"}},"
		"{\"key\":\"strands.box.policy.reason\",\"value\":{\"stringValue\":\"no permit matched\"}},"
		"{\"key\":\"strands.box.policy.rule\",\"value\":{\"stringValue\":\"<default-deny>\"}},"
		"{\"key\":\"strands.box.policy.category\",\"value\":{\"stringValue\":\"net\"}},"
		"{\"key\":\"server.address\",\"value\":{\"stringValue\":\"telemetry.strandsagents.com\"}},"
		"{\"key\":\"server.port\",\"value\":{\"intValue\":\"443\"}}],"
		"\"droppedAttributesCount\":0,\"flags\":3,\"traceId\":\"9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f\","
		"\"spanId\":\"1a2b3c4d5e6f7a8b\",\"eventName\":\"strands.box.policy.decision\"}],"
		"\"schemaUrl\":\"\"}],\"schemaUrl\":\"\"}]}\n");
	free(got);
	got = line_of(r, true);
	CHECK_EQ_STR(got,
		"{\"resourceSpans\":[" RES_JSON "\"scopeSpans\":[{\"scope\":{\"name\":\"strands-box.policy\","
		"\"version\":\"\",\"attributes\":[],\"droppedAttributesCount\":0},\"spans\":[{"
		"\"traceId\":\"9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f\",\"spanId\":\"1a2b3c4d5e6f7a8b\","
		"\"traceState\":\"\",\"parentSpanId\":\"\",\"flags\":3,\"name\":\"policy net:connect\","
		"\"kind\":1,\"startTimeUnixNano\":\"1767225600123456789\","
		"\"endTimeUnixNano\":\"1767225600123456789\",\"attributes\":["
		"{\"key\":\"strands.box.policy.principal\",\"value\":{\"stringValue\":\"agent:self\"}},"
		"{\"key\":\"strands.box.policy.action\",\"value\":{\"stringValue\":\"net:connect\"}},"
		"{\"key\":\"strands.box.policy.resource\",\"value\":{\"stringValue\":\"telemetry.strandsagents.com:443\"}},"
		"{\"key\":\"strands.box.policy.verdict\",\"value\":{\"stringValue\":\"deny\"}},"
		"{\"key\":\"strands.box.policy.cause\",\"value\":{\"stringValue\":\"no_match\"}},"
		"{\"key\":\"strands.box.policy.reason\",\"value\":{\"stringValue\":\"no permit matched\"}},"
		"{\"key\":\"strands.box.policy.rule\",\"value\":{\"stringValue\":\"<default-deny>\"}},"
		"{\"key\":\"strands.box.policy.category\",\"value\":{\"stringValue\":\"net\"}},"
		"{\"key\":\"server.address\",\"value\":{\"stringValue\":\"telemetry.strandsagents.com\"}},"
		"{\"key\":\"server.port\",\"value\":{\"intValue\":\"443\"}}],"
		"\"droppedAttributesCount\":0,\"events\":[],\"droppedEventsCount\":0,\"links\":[],"
		"\"droppedLinksCount\":0,\"status\":null}],\"schemaUrl\":\"\"}],\"schemaUrl\":\"\"}]}\n");
	free(got);
	free(r);
}

/* The tutorial's fs:read denial (Box's first-policy tutorial): the
 * governing rule's @id and description, file.path copied from the resource,
 * the determining ids. */
static void test_fs_read_forbidden(void)
{
	const struct tm_rule rules[] = {
		{ "no_env", "The .env file holds credentials the agent must not read." },
	};
	const char *text = "policy denied this operation on '~/box-tutorial/my-project/.env' "
			   "[policy: no_env]: The .env file holds credentials the agent must not read.";
	struct tm_decision d = {
		.time_ns = 1767225600123456789, .ns = "Box", .action = "fs:read",
		.resource = "~/box-tutorial/my-project/.env", .cause = TM_FORBIDDEN,
		.reason = text, .rule = "<default-deny>", .n_rules = 1, .rules = rules,
	};
	struct tm_rec *r = tm_record_decision(&d);
	CHECK(r != NULL);
	static const char *const keys[] = {
		"strands.box.policy.principal", "strands.box.policy.action",
		"strands.box.policy.resource", "strands.box.policy.verdict",
		"strands.box.policy.cause", "strands.box.policy.reason", "strands.box.policy.rule",
		"strands.box.policy.category", "strands.box.policy.description", "file.path",
		"strands.box.policy.determining.ids",
	};
	CHECK_EQ_INT(r->n_attrs, sizeof(keys) / sizeof(keys[0]));
	for (size_t i = 0; i < r->n_attrs && i < sizeof(keys) / sizeof(keys[0]); i++)
		CHECK_EQ_STR(r->attrs[i].key, keys[i]);
	CHECK_EQ_STR(r->attrs[5].s, text);
	CHECK_EQ_STR(r->attrs[6].s, "no_env");
	CHECK_EQ_STR(r->attrs[7].s, "fs");
	CHECK_EQ_STR(r->attrs[9].s, "~/box-tutorial/my-project/.env");
	CHECK(r->attrs[10].kind == TM_STRS && r->attrs[10].n == 1);
	CHECK_EQ_STR(r->attrs[10].v[0], "no_env");
	CHECK_EQ_INT(r->severity, 13);
	CHECK(r->status == NULL);
	char *got = line_of(r, false);
	CHECK(strstr(got, "{\"key\":\"strands.box.policy.determining.ids\",\"value\":{\"arrayValue\":"
			  "{\"values\":[{\"stringValue\":\"no_env\"}]}}}]") != NULL);
	free(got);
	free(r);
}

/* A permit names its rule; an internal fault carries error.type and the
 * span's status; a workload's parent joins its trace. */
static void test_permit_fault_parent(void)
{
	const struct tm_rule rules[] = { { "model_api", "" }, { "second", NULL } };
	struct tm_decision d = {
		.time_ns = 5, .action = "http:request", .resource = "model.example:443/v1/messages",
		.permit = true, .cause = TM_PERMITTED, .n_rules = 2, .rules = rules,
		.subject = TM_SUBJECT_DEST, .address = "model.example", .port = 443,
		.method = "POST", .request_id = "egress-1-2-3",
	};
	CHECK_EQ_INT(tm_traceparent_parse("00-0123456789abcdef0123456789abcdef-0123456789abcdef-03",
					  55, &d.trace), 0);
	set_hex(d.trace.span_id, "1111111111111111", 8);
	struct tm_rec *r = tm_record_decision(&d);
	CHECK_EQ_STR(r->attrs[0].key, "strands.box.request.id");
	CHECK_EQ_STR(r->attrs[0].s, "egress-1-2-3");
	CHECK_EQ_STR(r->rule, "model_api");
	CHECK_EQ_INT(r->flags, 3);
	CHECK_EQ_INT(r->span_flags, 0x303);
	CHECK_EQ_INT(r->severity, 9);
	for (size_t i = 0; i < r->n_attrs; i++) {
		CHECK(strcmp(r->attrs[i].key, "strands.box.policy.reason") != 0);
		CHECK(strcmp(r->attrs[i].key, "strands.box.policy.description") != 0);
	}
	char *log = line_of(r, false), *span = line_of(r, true);
	CHECK(strstr(log, "\"attributes\":[{\"key\":\"strands.box.trace.parent_span_id\",\"value\":"
			  "{\"stringValue\":\"0123456789abcdef\"}},{\"key\":\"strands.box.request.id\"") != NULL);
	CHECK(strstr(log, "\"traceId\":\"0123456789abcdef0123456789abcdef\"") != NULL);
	CHECK(strstr(span, "parent_span_id") == NULL);
	CHECK(strstr(span, "\"parentSpanId\":\"0123456789abcdef\",\"flags\":771") != NULL);
	CHECK(strstr(span, "{\"key\":\"http.request.method\",\"value\":{\"stringValue\":\"POST\"}}") != NULL);
	free(log);
	free(span);
	free(r);

	d.permit = false;
	d.cause = TM_INTERNAL_FAULT;
	d.reason = "the request could not be evaluated, so it was refused";
	d.trace.parent_flags = 0;
	d.request_id = "bad id with spaces";
	r = tm_record_decision(&d);
	CHECK_EQ_INT(r->flags, 1);
	CHECK_EQ_STR(r->rule, "<default-deny>");     /* a fault keeps no attribution */
	CHECK_EQ_STR(r->attrs[0].key, "strands.box.policy.principal");
	CHECK_EQ_STR(r->attrs[5].key, "error.type");
	CHECK_EQ_STR(r->attrs[5].s, "strands.box.policy.evaluation_error");
	span = line_of(r, true);
	CHECK(strstr(span, "\"status\":{\"message\":\"policy evaluation failed\",\"code\":2}") != NULL);
	free(span);
	free(r);
}

static void test_traceparent(void)
{
	struct tm_trace t;
	static const char *const bad[] = {
		"00-0123456789ABCDEF0123456789abcdef-0123456789abcdef-01",     /* uppercase */
		"00-00000000000000000000000000000000-0123456789abcdef-01",     /* zero trace */
		"00-0123456789abcdef0123456789abcdef-0000000000000000-01",     /* zero parent */
		"ff-0123456789abcdef0123456789abcdef-0123456789abcdef-01",     /* version ff */
		"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01-x",   /* 00 has 4 parts */
		"00-1-2-01", "0-0123456789abcdef0123456789abcdef-0123456789abcdef-01", "",
		"00-0123456789abcdef0123456789abcdef-0123456789abcdef-0g",
		"01-0123456789abcdef0123456789abcdef-0123456789abcdef-01x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(tm_traceparent_parse(bad[i], strlen(bad[i]), &t), -EINVAL);
	const char *later = "01-0123456789abcdef0123456789abcdef-0123456789abcdef-01-future";
	CHECK_EQ_INT(tm_traceparent_parse(later, strlen(later), &t), 0);
	CHECK(t.has_parent && t.parent_flags == 1 && t.trace_id[0] == 0x01 && t.parent_id[7] == 0xef);
}

static void test_bounds_and_args(void)
{
	char big[6000], out[TM_ATTR_MAX + 1];
	/* 'a' then 3-byte characters: the cut must not split one */
	big[0] = 'a';
	size_t n = 1;
	while (n + 3 < sizeof(big) - 1) {
		memcpy(big + n, "\xe2\x82\xac", 3);
		n += 3;
	}
	big[n] = '\0';
	const char *b = tm_bounded(big, out);
	CHECK(b == out);
	CHECK(strlen(b) <= TM_ATTR_MAX);
	size_t len = strlen(b);
	CHECK(len > 16 && strcmp(b + len - strlen("\xe2\x80\xa6 (truncated)"), "\xe2\x80\xa6 (truncated)") == 0);
	size_t body = len - strlen("\xe2\x80\xa6 (truncated)");
	CHECK((body - 1) % 3 == 0);         /* whole characters after the 'a' */
	CHECK(tm_bounded("short", out) != out);

	CHECK_EQ_STR(tm_reportable_arg("-x", out), "-x");
	CHECK_EQ_STR(tm_reportable_arg("--dry-run", out), "--dry-run");
	CHECK_EQ_STR(tm_reportable_arg("--token=s3cr3t", out), "--token=<redacted>");
	CHECK_EQ_STR(tm_reportable_arg("-xvalue", out), "<redacted>");
	CHECK_EQ_STR(tm_reportable_arg("--Token", out), "<redacted>");
	CHECK_EQ_STR(tm_reportable_arg("s3cr3t", out), "<redacted>");
	CHECK_EQ_STR(tm_reportable_arg("--abcdefghijklmnopqrstuvwxyzabcdefg", out), "<redacted>");

	const char *args[70];
	bool lit[70];
	for (size_t i = 0; i < 70; i++)
		args[i] = i == 0 ? "--token=abc" : i == 1 ? "-v" : "secret", lit[i] = i == 2;
	struct tm_decision d = { .action = "shell:exec", .resource = "git push", .permit = true,
				 .cause = TM_PERMITTED, .subject = TM_SUBJECT_PROCESS,
				 .program = "git", .n_args = 70, .args = args, .literal = lit,
				 .cwd = "/work" };
	struct tm_rec *r = tm_record_decision(&d);
	const struct tm_attr *a = NULL;
	for (size_t i = 0; i < r->n_attrs; i++)
		if (strcmp(r->attrs[i].key, "process.command_args") == 0)
			a = &r->attrs[i];
	CHECK(a != NULL && a->n == 1 + 64 + 1);
	if (a != NULL && a->n == 66) {
		CHECK_EQ_STR(a->v[0], "git");
		CHECK_EQ_STR(a->v[1], "--token=<redacted>");
		CHECK_EQ_STR(a->v[2], "-v");
		CHECK_EQ_STR(a->v[3], "secret");          /* literal: kept */
		CHECK_EQ_STR(a->v[4], "<redacted>");
		CHECK_EQ_STR(a->v[65], "6 more\xe2\x80\xa6 (truncated)");
	}
	CHECK_EQ_STR(r->attrs[r->n_attrs - 1].key, "process.working_directory");
	free(r);

	/* invalid UTF-8 from the workload becomes '?' */
	struct tm_decision e = { .action = "net:connect", .resource = "a\xff" "b:443",
				 .cause = TM_NO_MATCH, .reason = "x" };
	r = tm_record_decision(&e);
	CHECK_EQ_STR(r->resource, "a?b:443");
	free(r);
}

static void test_category_and_ids(void)
{
	struct tm_decision d = { .ns = "github", .action = "fs:read", .resource = "github/fs:read",
				 .cause = TM_NO_MATCH, .reason = "no permit matched" };
	struct tm_rec *r = tm_record_decision(&d);
	for (size_t i = 0; i < r->n_attrs; i++) {
		if (strcmp(r->attrs[i].key, "strands.box.policy.category") == 0)
			CHECK_EQ_STR(r->attrs[i].s, "github");
		CHECK(strcmp(r->attrs[i].key, "file.path") != 0);   /* a tool cannot pose as fs */
	}
	free(r);
	CHECK(tm_request_id_ok("egress-1-2-3"));
	CHECK(tm_request_id_ok("a:/._-Z9"));
	CHECK(!tm_request_id_ok(""));
	CHECK(!tm_request_id_ok("a b"));
	char long_id[258];
	memset(long_id, 'a', 257);
	long_id[257] = '\0';
	CHECK(!tm_request_id_ok(long_id));
	long_id[256] = '\0';
	CHECK(tm_request_id_ok(long_id));
}

static void test_control(void)
{
	struct tm_trace t = { 0 };
	set_hex(t.trace_id, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 16);
	set_hex(t.span_id, "bbbbbbbbbbbbbbbb", 8);
	struct tm_rec *r = tm_record_control(TM_BOX_STARTED, "demo", NULL, NULL, 7, &t);
	r->observed_ns = 8;
	char *got = line_of(r, false);
	CHECK_EQ_STR(got,
		"{\"resourceLogs\":[" RES_JSON "\"scopeLogs\":[{\"scope\":{\"name\":\"strands-box.control\","
		"\"version\":\"\",\"attributes\":[],\"droppedAttributesCount\":0},\"logRecords\":[{"
		"\"timeUnixNano\":\"7\",\"observedTimeUnixNano\":\"8\",\"severityNumber\":10,"
		"\"severityText\":\"ok\",\"body\":null,\"attributes\":["
		"{\"key\":\"strands.box.control.operation\",\"value\":{\"stringValue\":\"box_started\"}},"
		"{\"key\":\"strands.box.control.outcome\",\"value\":{\"stringValue\":\"ok\"}},"
		"{\"key\":\"strands.box.control.subject\",\"value\":{\"stringValue\":\"demo\"}}],"
		"\"droppedAttributesCount\":0,\"flags\":3,\"traceId\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
		"\"spanId\":\"bbbbbbbbbbbbbbbb\",\"eventName\":\"\"}],\"schemaUrl\":\"\"}],"
		"\"schemaUrl\":\"\"}]}\n");
	free(got);
	free(r);
	t.has_parent = true;
	set_hex(t.parent_id, "cccccccccccccccc", 8);
	r = tm_record_control(TM_POLICY_REFUSED, "policy.dw", "it will not load", NULL, 9, &t);
	got = line_of(r, true);
	CHECK(strstr(got, "\"parentSpanId\":\"cccccccccccccccc\",\"flags\":3,\"name\":"
			  "\"control policy_refused\"") != NULL);
	CHECK(strstr(got, "\"status\":{\"message\":\"control-plane operation failed\",\"code\":2}") != NULL);
	CHECK(strstr(got, "{\"key\":\"strands.box.control.reason\",\"value\":{\"stringValue\":"
			  "\"it will not load\"}}") != NULL);
	free(got);
	free(r);
}

/* Scopes group in the order they first appear; strings are escaped as
 * serde_json escapes them. */
static void test_grouping_and_escapes(void)
{
	struct tm_trace t = { 0 };
	t.trace_id[0] = t.span_id[0] = 1;
	struct tm_rec *c1 = tm_record_control(TM_BOX_STARTED, "q\"\\\n\x01", NULL, NULL, 1, &t);
	struct tm_decision d = { .action = "net:connect", .resource = "x:1", .cause = TM_NO_MATCH,
				 .reason = "r", .trace = t };
	struct tm_rec *p1 = tm_record_decision(&d), *p2 = tm_record_decision(&d);
	struct tm_rec *v[3] = { c1, p1, p2 };
	struct tm_buf b = { 0 };
	tm_json_logs(&b, &res, v, 3);
	tm_buf_putc(&b, '\0');
	const char *s = (const char *)b.p;
	const char *ctl = strstr(s, "strands-box.control"), *pol = strstr(s, "strands-box.policy");
	CHECK(ctl != NULL && pol != NULL && ctl < pol);
	CHECK(strstr(pol + 1, "strands-box.policy") == NULL);      /* one scope entry */
	CHECK(strstr(s, "\"q\\\"\\\\\\n\\u0001\"") != NULL);
	CHECK(strchr(s, '\n') == s + strlen(s) - 1);
	tm_buf_free(&b);
	free(c1);
	free(p1);
	free(p2);
}

/* A note round-trips; anything else is not one of ours. */
static void test_note(void)
{
	struct tm_note n = { .rid = "egress-1-2-3", .deny_only = true }, m;
	memcpy(n.run, "6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b", 33);
	CHECK_EQ_INT(tm_traceparent_parse("00-0123456789abcdef0123456789abcdef-0123456789abcdef-03",
					  55, &n.trace), 0);
	set_hex(n.trace.span_id, "1a2b3c4d5e6f7a8b", 8);
	char buf[TM_NOTE_MAX];
	tm_note_format(&n, buf);
	CHECK_EQ_STR(buf, "cairn1 run=6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b trace=0123456789abcdef0123456789abcdef "
			  "span=1a2b3c4d5e6f7a8b parent=0123456789abcdef/03 rid=egress-1-2-3 deny-only");
	CHECK_EQ_INT(tm_note_parse(buf, &m), 0);
	CHECK(memcmp(&m.trace, &n.trace, sizeof(m.trace)) == 0);
	CHECK_EQ_STR(m.run, n.run);
	CHECK_EQ_STR(m.rid, "egress-1-2-3");
	CHECK(m.deny_only);
	static const char *const bad[] = {
		"", "cairn2 run=6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b", "cairn1 span=1a2b3c4d5e6f7a8b",
		"cairn1 run=6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b trace=0123 span=1a2b3c4d5e6f7a8b",
		"cairn1 run=6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b trace=0123456789abcdef0123456789abcdef "
		"span=1a2b3c4d5e6f7a8b rid=a b",
		"cairn1 run=6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b trace=0123456789ABCDEF0123456789abcdef "
		"span=1a2b3c4d5e6f7a8b",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(tm_note_parse(bad[i], &m), -EINVAL);
}

/* The collector's one-pass form writes what the two calls write. */
static void test_batch_same(void)
{
	struct tm_trace t = { 0 };
	t.trace_id[0] = t.span_id[0] = 1;
	struct tm_rec *v[3];
	v[0] = tm_record_control(TM_BOX_STARTED, "demo", NULL, NULL, 1, &t);
	struct tm_decision d = { .action = "net:connect", .resource = "x:1", .cause = TM_NO_MATCH,
				 .reason = "r", .subject = TM_SUBJECT_DEST, .address = "x",
				 .port = 1 };
	CHECK_EQ_INT(tm_traceparent_parse("00-0123456789abcdef0123456789abcdef-0123456789abcdef-01",
					  55, &d.trace), 0);
	v[1] = tm_record_decision(&d);
	d.trace.has_parent = false;
	d.permit = true;
	d.cause = TM_PERMITTED;
	v[2] = tm_record_decision(&d);
	struct tm_buf a = { 0 }, b = { 0 };
	tm_json_logs(&a, &res, v, 3);
	tm_json_spans(&a, &res, v, 3);
	tm_json_batch(&b, &res, v, 3);
	CHECK(a.n == b.n && memcmp(a.p, b.p, a.n) == 0);
	tm_buf_free(&a);
	tm_buf_free(&b);
	for (int i = 0; i < 3; i++)
		free(v[i]);
}

/* The reference forms of the encoder's fast paths: JSON escaping one byte at
 * a time, and UTF-8 clean-up one character at a time, as they were written
 * before the eight-bytes-at-a-time scans. */
static void ref_json_str(struct tm_buf *b, const unsigned char *p)
{
	tm_buf_putc(b, '"');
	for (; *p; p++) {
		char u[8];
		switch (*p) {
		case '"': tm_buf_puts(b, "\\\""); break;
		case '\\': tm_buf_puts(b, "\\\\"); break;
		case '\n': tm_buf_puts(b, "\\n"); break;
		case '\r': tm_buf_puts(b, "\\r"); break;
		case '\t': tm_buf_puts(b, "\\t"); break;
		case '\b': tm_buf_puts(b, "\\b"); break;
		case '\f': tm_buf_puts(b, "\\f"); break;
		default:
			if (*p < 0x20) {
				snprintf(u, sizeof(u), "\\u%04x", *p);
				tm_buf_puts(b, u);
			} else {
				tm_buf_putc(b, (char)*p);
			}
		}
	}
	tm_buf_putc(b, '"');
}

/* The reference clean-up decodes with libc's UTF-8 (mbrtowc in C.UTF-8), not
 * with a second copy of record.c's table, so a mistake in that table cannot
 * pass here by being made twice.  glibc takes five-byte forms and values past
 * U+10FFFF; Unicode's UTF-8 does not, and neither does the record. */
static void ref_utf8_clean(const unsigned char *s, char *out)
{
	size_t n = strlen((const char *)s);
	for (size_t i = 0; i < n;) {
		mbstate_t st;
		wchar_t w;
		memset(&st, 0, sizeof(st));
		size_t k = mbrtowc(&w, (const char *)s + i, n - i, &st);
		if (k == 0 || k > 4 || (unsigned long)w > 0x10ffff) {
			out[i++] = '?';         /* (size_t)-1 and -2 are > 4 too */
			continue;
		}
		memcpy(out + i, s + i, k);
		i += k;
	}
	out[n] = '\0';
}

/* Random strings, mostly ASCII with every kind of byte the fast paths must
 * stop at, at every offset within a word: the encoder and the clean-up give
 * what the one-byte-at-a-time forms give. */
static void test_fast_paths(void)
{
	/* the reference clean-up decodes with libc's UTF-8 */
	CHECK(setlocale(LC_CTYPE, "C.UTF-8") != NULL);
	static const unsigned char pieces[][5] = {
		"a", "Z", "0", "/", " ", "~", "\"", "\\", "\n", "\x01", "\x1f", "\x7f", "\x80",
		"\xff", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\xa0\x80",
		"\xc0\xaf", "\xe2\x82", "\xf5\x80\x80\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80",
	};
	const size_t n_pieces = sizeof(pieces) / sizeof(pieces[0]);
	unsigned seed = 12345;
	size_t bad = 0;
	for (int iter = 0; iter < 20000; iter++) {
		unsigned char s[128];
		char clean[128];
		size_t n = 0, want = (size_t)(rand_r(&seed) % 40);
		while (n < want) {
			/* three in four a plain letter: runs long enough for a word scan */
			const unsigned char *pc = rand_r(&seed) % 4 ? pieces[0]
							     : pieces[(size_t)rand_r(&seed) % n_pieces];
			size_t k = strlen((const char *)pc);
			if (n + k >= sizeof(s) - 1)
				break;
			memcpy(s + n, pc, k);
			n += k;
		}
		s[n] = '\0';

		struct tm_buf got = { 0 }, ref = { 0 };
		tm_json_str(&got, (const char *)s);
		ref_json_str(&ref, s);
		if (got.n != ref.n || memcmp(got.p, ref.p, got.n) != 0)
			bad++;
		tm_buf_free(&got);
		tm_buf_free(&ref);

		ref_utf8_clean(s, clean);
		struct tm_decision d = { .action = "net:connect", .resource = (const char *)s,
					 .cause = TM_NO_MATCH, .reason = "r" };
		struct tm_rec *r = tm_record_decision(&d);
		if (r == NULL || strcmp(r->resource, clean) != 0)
			bad++;
		free(r);
	}
	CHECK_EQ_INT((int)bad, 0);

	/* the two-digit number writer, at each width's edges */
	static const int64_t times[] = { 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345,
					 1796213661650635744, INT64_MAX };
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		struct tm_decision d = { .time_ns = times[i], .action = "net:connect",
					 .resource = "x:1", .cause = TM_NO_MATCH, .reason = "r",
					 .subject = TM_SUBJECT_DEST, .address = "x",
					 .port = (unsigned)(times[i] % 65536) };
		struct tm_rec *r = tm_record_decision(&d);
		char *line = line_of(r, false), want[80];
		snprintf(want, sizeof(want), "\"timeUnixNano\":\"%" PRId64 "\"", times[i]);
		CHECK(strstr(line, want) != NULL);
		snprintf(want, sizeof(want), "{\"intValue\":\"%u\"}", (unsigned)(times[i] % 65536));
		CHECK(strstr(line, want) != NULL);
		free(line);
		free(r);
	}
}

static const struct test_case tests[] = {
	{ "fast_paths", test_fast_paths },
	{ "batch_same", test_batch_same },
	{ "note", test_note },
	{ "net_connect_no_match", test_net_connect_no_match },
	{ "fs_read_forbidden", test_fs_read_forbidden },
	{ "permit_fault_parent", test_permit_fault_parent },
	{ "traceparent", test_traceparent },
	{ "bounds_and_args", test_bounds_and_args },
	{ "category_and_ids", test_category_and_ids },
	{ "control", test_control },
	{ "grouping_and_escapes", test_grouping_and_escapes },
};

TEST_MAIN(tests)
