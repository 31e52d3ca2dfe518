/* test_relay.c - the agent receiver's re-stamping (src/telemetry/relay.h):
 * hand-built protobuf and OTLP/JSON payloads of each kind, Box's stripping at
 * every level it strips, the scope renaming, the resource's stamps in Box's
 * order, the 1024-resource limit, every malformed-input class, and round
 * trips (JSON -> protobuf -> JSON gives the same line: re-stamping is
 * idempotent). */
#include <errno.h>
#include <stdbool.h>

#include "relay.h"
#include "test.h"

/* ---- a protobuf writer for hand-built bodies ---------------------------------- */

struct pb {
	uint8_t *b;
	size_t n, cap;
};

static void pb_raw(struct pb *p, const void *s, size_t n)
{
	if (n == 0)
		return;
	if (p->n + n > p->cap) {
		p->cap = (p->n + n) * 2 + 64;
		p->b = realloc(p->b, p->cap);
	}
	memcpy(p->b + p->n, s, n);
	p->n += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	do {
		uint8_t b = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b |= 0x80;
		pb_raw(p, &b, 1);
	} while (v);
}

static void pb_tag(struct pb *p, int num, int wt)
{
	pb_varint(p, (uint64_t)num << 3 | (uint64_t)wt);
}

static void pb_bytes(struct pb *p, int num, const void *s, size_t n)
{
	pb_tag(p, num, 2);
	pb_varint(p, n);
	pb_raw(p, s, n);
}

static void pb_str(struct pb *p, int num, const char *s)
{
	pb_bytes(p, num, s, strlen(s));
}

/* sub is consumed (freed) */
static void pb_sub(struct pb *p, int num, struct pb *sub)
{
	pb_bytes(p, num, sub->b, sub->n);
	free(sub->b);
	*sub = (struct pb){ 0 };
}

static void pb_fixed64(struct pb *p, int num, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	pb_tag(p, num, 1);
	pb_raw(p, b, 8);
}

/* KeyValue{key, AnyValue{string_value}} */
static void pb_kv(struct pb *p, int num, const char *key, const char *value)
{
	struct pb kv = { 0 }, any = { 0 };
	pb_str(&any, 1, value);
	pb_str(&kv, 1, key);
	pb_sub(&kv, 2, &any);
	pb_sub(p, num, &kv);
}

/* ---- helpers --------------------------------------------------------------------- */

static const struct tm_kv OPERATOR[] = { { "deployment.environment", "ci" }, { "team", "ops" } };
static const struct tm_relay_stamp STAMP = {
	"box-0123456789abcdef", "0123456789abcdef0123456789abcdef", 2, OPERATOR,
};
static const struct tm_relay_stamp BARE = { "box-0123456789abcdef", "0123456789abcdef0123456789abcdef", 0, NULL };

static char errbuf[512];

static int run(enum tm_relay_kind k, bool json, const void *body, size_t n, struct tm_relay_out *o)
{
	return tm_relay_restamp(k, json, body, n, &STAMP, o, errbuf, sizeof(errbuf));
}

/* The JSON line of o as a C string (o's buffer, NUL-terminated in place). */
static const char *line_of(struct tm_relay_out *o)
{
	tm_buf_putc(&o->json, '\0');
	o->json.n--;
	return (const char *)o->json.p;
}

static bool has(const char *hay, const char *needle)
{
	bool ok = strstr(hay, needle) != NULL;
	if (!ok)
		fprintf(stderr, "  missing %s\n", needle);
	return ok;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* o's protobuf, re-stamped again, gives o's JSON line again. */
static void check_round_trip_with(enum tm_relay_kind k, struct tm_relay_out *o,
				  const struct tm_relay_stamp *st)
{
	struct tm_relay_out o2;
	int rc = tm_relay_restamp(k, false, o->pb.p, o->pb.n, st, &o2, errbuf, sizeof(errbuf));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK_EQ_STR(line_of(&o2), line_of(o));
		CHECK_EQ_INT(o2.n_resources, o->n_resources);
	} else {
		fprintf(stderr, "  %s\n", errbuf);
	}
	/* and the JSON line, re-stamped, gives itself and the same protobuf */
	struct tm_relay_out o3;
	rc = tm_relay_restamp(k, true, o->json.p, o->json.n, st, &o3, errbuf, sizeof(errbuf));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK_EQ_STR(line_of(&o3), line_of(o));
		CHECK(o3.pb.n == o->pb.n && memcmp(o3.pb.p, o->pb.p, o->pb.n) == 0);
	}
	tm_relay_out_free(&o2);
	tm_relay_out_free(&o3);
}

static void check_pb_round_trip(enum tm_relay_kind k, struct tm_relay_out *o)
{
	check_round_trip_with(k, o, &STAMP);
}

static void expect_fail(enum tm_relay_kind k, bool json, const void *body, size_t n, int want,
			const char *msg)
{
	struct tm_relay_out o;
	int rc = run(k, json, body, n, &o);
	CHECK_EQ_INT(rc, want);
	if (!has(errbuf, msg))
		fprintf(stderr, "  got: %s\n", errbuf);
	CHECK(o.json.p == NULL && o.pb.p == NULL && o.n_resources == 0);
}

/* ---- traces ------------------------------------------------------------------------ */

static const char TRACE_JSON[] =
	"{\"resourceSpans\":[{\"resource\":{\"attributes\":["
	"{\"key\":\"service.name\",\"value\":{\"stringValue\":\"agent\"}},"
	"{\"key\":\"strands.box.source\",\"value\":{\"stringValue\":\"box\"}},"
	"{\"key\":\"strands.box.run.id\",\"value\":{\"stringValue\":\"forged\"}},"
	"{\"key\":\"team\",\"value\":{\"stringValue\":\"agent-team\"}},"
	"{\"key\":\"strands.boxer\",\"value\":{\"stringValue\":\"kept\"}}]},"
	"\"scopeSpans\":[{\"scope\":{\"name\":\"strands-box.policy\",\"version\":\"1\",\"attributes\":["
	"{\"key\":\"strands.box.scope\",\"value\":{\"boolValue\":true}},"
	"{\"key\":\"scope.kept\",\"value\":{\"boolValue\":true}}]},"
	"\"spans\":[{\"traceId\":\"0123456789ABCDEF0123456789ABCDEF\",\"spanId\":\"0123456789abcdef\","
	"\"name\":\"work\",\"kind\":\"SPAN_KIND_CLIENT\",\"startTimeUnixNano\":17,"
	"\"endTimeUnixNano\":\"18446744073709551615\",\"flags\":257,"
	"\"attributes\":[{\"key\":\"strands.box.policy.verdict\",\"value\":{\"stringValue\":\"permit\"}},"
	"{\"key\":\"span.kept\",\"value\":{\"kvlistValue\":{\"values\":["
	"{\"key\":\"strands.box.nested\",\"value\":{\"intValue\":\"-7\"}}]}}}],"
	"\"events\":[{\"name\":\"ev\",\"time_unix_nano\":\"5\",\"attributes\":["
	"{\"key\":\"strands.box.ev\",\"value\":{\"doubleValue\":0.5}},"
	"{\"key\":\"ev.kept\",\"value\":{\"bytesValue\":\"aGk\"}}]}],"
	"\"links\":[{\"traceId\":\"00112233445566778899aabbccddeeff\",\"spanId\":\"0011223344556677\","
	"\"attributes\":[{\"key\":\"strands.box.link\",\"value\":{\"stringValue\":\"x\"}},"
	"{\"key\":\"link.kept\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":\"a\"}]}}}]}],"
	"\"status\":{\"code\":\"STATUS_CODE_ERROR\",\"message\":\"bad\"},"
	"\"someFutureField\":{\"x\":[1,2]}}]},"
	"{\"scope\":{\"name\":\"strands-boxy\"},\"spans\":[]}]}]}";

static void test_traces_json(void)
{
	struct tm_relay_out o;
	int rc = run(TM_RELAY_TRACES, true, TRACE_JSON, strlen(TRACE_JSON), &o);
	CHECK_EQ_INT(rc, 0);
	if (rc != 0) {
		fprintf(stderr, "  %s\n", errbuf);
		return;
	}
	const char *l = line_of(&o);
	CHECK_EQ_INT(o.n_resources, 1);
	CHECK(l[o.json.n - 1] == '\n' && strchr(l, '\n') == l + o.json.n - 1);
	/* the resource: the agent's keys kept but the operator's and strands.box.*, then
	 * the operator's, then source, name, run id */
	CHECK(has(l, "{\"resource\":{\"attributes\":["
		     "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"agent\"}},"
		     "{\"key\":\"strands.boxer\",\"value\":{\"stringValue\":\"kept\"}},"
		     "{\"key\":\"deployment.environment\",\"value\":{\"stringValue\":\"ci\"}},"
		     "{\"key\":\"team\",\"value\":{\"stringValue\":\"ops\"}},"
		     "{\"key\":\"strands.box.source\",\"value\":{\"stringValue\":\"agent\"}},"
		     "{\"key\":\"strands.box.name\",\"value\":{\"stringValue\":\"box-0123456789abcdef\"}},"
		     "{\"key\":\"strands.box.run.id\",\"value\":{\"stringValue\":\"0123456789abcdef0123456789abcdef\"}}],"
		     "\"droppedAttributesCount\":0,\"entityRefs\":[]}"));
	CHECK(strstr(l, "agent-team") == NULL && strstr(l, "forged") == NULL);
	/* scopes: renamed when they claim strands-box., else kept; attributes stripped */
	CHECK(has(l, "\"scope\":{\"name\":\"agent-claimed:strands-box.policy\",\"version\":\"1\","
		     "\"attributes\":[{\"key\":\"scope.kept\",\"value\":{\"boolValue\":true}}],"
		     "\"droppedAttributesCount\":0}"));
	CHECK(has(l, "\"name\":\"strands-boxy\""));
	/* the span: ids lowercased, enums as numbers, 64-bit as strings, defaults written */
	CHECK(has(l, "\"spans\":[{\"traceId\":\"0123456789abcdef0123456789abcdef\","
		     "\"spanId\":\"0123456789abcdef\",\"traceState\":\"\",\"parentSpanId\":\"\","
		     "\"flags\":257,\"name\":\"work\",\"kind\":3,\"startTimeUnixNano\":\"17\","
		     "\"endTimeUnixNano\":\"18446744073709551615\",\"attributes\":["
		     "{\"key\":\"span.kept\",\"value\":{\"kvlistValue\":{\"values\":["
		     "{\"key\":\"strands.box.nested\",\"value\":{\"intValue\":\"-7\"}}]}}}]"));
	CHECK(has(l, "\"events\":[{\"timeUnixNano\":\"5\",\"name\":\"ev\",\"attributes\":["
		     "{\"key\":\"ev.kept\",\"value\":{\"bytesValue\":\"aGk=\"}}],\"droppedAttributesCount\":0}]"));
	CHECK(has(l, "\"links\":[{\"traceId\":\"00112233445566778899aabbccddeeff\",\"spanId\":\"0011223344556677\","
		     "\"traceState\":\"\",\"attributes\":[{\"key\":\"link.kept\",\"value\":{\"arrayValue\":"
		     "{\"values\":[{\"stringValue\":\"a\"}]}}}],\"droppedAttributesCount\":0,\"flags\":0}]"));
	CHECK(has(l, "\"status\":{\"message\":\"bad\",\"code\":2}"));
	CHECK(strstr(l, "someFutureField") == NULL);
	/* every strands.box. key left is a stamp or a value nested in an AnyValue */
	CHECK_EQ_INT(count_of(l, "\"key\":\"strands.box."), 4);
	check_pb_round_trip(TM_RELAY_TRACES, &o);
	tm_relay_out_free(&o);
	tm_relay_out_free(&o);          /* twice is harmless */
}

/* A span built as protobuf: the same stripping, and unknown fields dropped. */
static void test_traces_pb(void)
{
	struct pb span = { 0 }, ev = { 0 }, link = { 0 }, scope = { 0 }, ss = { 0 }, res = { 0 },
		  rs = { 0 }, req = { 0 };
	static const uint8_t tid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t sid[8] = { 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0, 1 };
	pb_bytes(&span, 1, tid, 16);
	pb_bytes(&span, 2, sid, 8);
	pb_str(&span, 5, "op");
	pb_tag(&span, 6, 0);
	pb_varint(&span, 2);
	pb_fixed64(&span, 7, 1767225600123456789ull);
	pb_kv(&span, 9, "strands.box.policy.rule", "forged");
	pb_kv(&span, 9, "http.method", "GET");
	pb_tag(&span, 99, 0);           /* an unknown field: skipped, not re-encoded */
	pb_varint(&span, 12345);
	pb_str(&span, 100, "unknown");
	pb_tag(&span, 101, 3);          /* an unknown group with a field inside */
	pb_tag(&span, 1, 0);
	pb_varint(&span, 1);
	pb_tag(&span, 101, 4);
	pb_str(&ev, 2, "ev");
	pb_kv(&ev, 3, "strands.box.ev", "x");
	pb_sub(&span, 11, &ev);
	pb_bytes(&link, 1, tid, 16);
	pb_bytes(&link, 2, sid, 8);
	pb_kv(&link, 4, "strands.box.link", "x");
	pb_sub(&span, 13, &link);
	pb_str(&scope, 1, "strands-box.control");
	pb_kv(&scope, 3, "strands.box.s", "x");
	pb_sub(&ss, 1, &scope);
	pb_sub(&ss, 2, &span);
	pb_kv(&res, 1, "strands.box.name", "box-forged");
	pb_kv(&res, 1, "service.name", "a");
	pb_sub(&rs, 1, &res);
	pb_sub(&rs, 2, &ss);
	pb_sub(&req, 1, &rs);

	struct tm_relay_out o;
	int rc = tm_relay_restamp(TM_RELAY_TRACES, false, req.b, req.n, &BARE, &o, errbuf, sizeof(errbuf));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		const char *l = line_of(&o);
		CHECK(has(l, "\"traceId\":\"0102030405060708090a0b0c0d0e0f10\",\"spanId\":\"aabbccddeeff0001\""));
		CHECK(has(l, "\"kind\":2,\"startTimeUnixNano\":\"1767225600123456789\""));
		CHECK(has(l, "\"attributes\":[{\"key\":\"http.method\",\"value\":{\"stringValue\":\"GET\"}}]"));
		CHECK(has(l, "\"name\":\"agent-claimed:strands-box.control\",\"version\":\"\",\"attributes\":[]"));
		CHECK(has(l, "\"events\":[{\"timeUnixNano\":\"0\",\"name\":\"ev\",\"attributes\":[]"));
		CHECK(has(l, "\"traceState\":\"\",\"attributes\":[],\"droppedAttributesCount\":0,\"flags\":0}]"));
		CHECK(has(l, "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"a\"}},"
			     "{\"key\":\"strands.box.source\",\"value\":{\"stringValue\":\"agent\"}},"
			     "{\"key\":\"strands.box.name\",\"value\":{\"stringValue\":\"box-0123456789abcdef\"}}"));
		CHECK(strstr(l, "forged") == NULL && strstr(l, "unknown") == NULL);
		CHECK(memmem(o.pb.p, o.pb.n, "unknown", 7) == NULL);
		CHECK(o.pb.n < req.n);
		check_round_trip_with(TM_RELAY_TRACES, &o, &BARE);
	} else {
		fprintf(stderr, "  %s\n", errbuf);
	}
	tm_relay_out_free(&o);
	free(req.b);
}

/* ---- logs ---------------------------------------------------------------------------- */

static void test_logs(void)
{
	struct pb lr = { 0 }, body = { 0 }, kvl = { 0 }, scope = { 0 }, sl = { 0 }, rl = { 0 },
		  req = { 0 }, rl2 = { 0 };
	pb_fixed64(&lr, 1, 1000);
	pb_tag(&lr, 2, 0);
	pb_varint(&lr, 13);
	pb_str(&lr, 3, "WARN");
	pb_kv(&kvl, 1, "strands.box.inside", "kept: a value, not an attribute");
	pb_sub(&body, 6, &kvl);
	pb_sub(&lr, 5, &body);
	pb_kv(&lr, 6, "strands.box.policy.verdict", "permit");
	pb_kv(&lr, 6, "log.kept", "yes");
	pb_str(&lr, 12, "agent.event");
	pb_str(&scope, 1, "strands-box.policy");
	pb_sub(&sl, 1, &scope);
	pb_sub(&sl, 2, &lr);
	pb_sub(&rl, 2, &sl);            /* no resource: a default one is stamped */
	pb_sub(&req, 1, &rl);
	pb_str(&rl2, 3, "https://schema");
	pb_sub(&req, 1, &rl2);

	struct tm_relay_out o;
	int rc = run(TM_RELAY_LOGS, false, req.b, req.n, &o);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		const char *l = line_of(&o);
		CHECK_EQ_INT(o.n_resources, 2);
		static const char head[] = "{\"resourceLogs\":[{\"resource\":{\"attributes\":["
					   "{\"key\":\"deployment.environment\",\"value\":{\"stringValue\":\"ci\"}},";
		CHECK(strncmp(l, head, sizeof(head) - 1) == 0);
		CHECK_EQ_INT(count_of(l, "\"key\":\"strands.box.source\",\"value\":{\"stringValue\":\"agent\"}"), 2);
		CHECK(has(l, "\"logRecords\":[{\"timeUnixNano\":\"1000\",\"observedTimeUnixNano\":\"0\","
			     "\"severityNumber\":13,\"severityText\":\"WARN\",\"body\":{\"kvlistValue\":{\"values\":"
			     "[{\"key\":\"strands.box.inside\""));
		CHECK(has(l, "\"attributes\":[{\"key\":\"log.kept\",\"value\":{\"stringValue\":\"yes\"}}],"
			     "\"droppedAttributesCount\":0,\"flags\":0,\"traceId\":\"\",\"spanId\":\"\","
			     "\"eventName\":\"agent.event\"}"));
		CHECK(has(l, "\"scopeLogs\":[],\"schemaUrl\":\"https://schema\"}"));
		CHECK(has(l, "agent-claimed:strands-box.policy"));
		check_pb_round_trip(TM_RELAY_LOGS, &o);
	} else {
		fprintf(stderr, "  %s\n", errbuf);
	}
	tm_relay_out_free(&o);
	free(req.b);

	/* a record of Box's own shape in JSON: body null, every field */
	static const char box_like[] =
		"{\"resourceLogs\":[{\"resource\":{\"attributes\":[],\"droppedAttributesCount\":0},"
		"\"scopeLogs\":[{\"scope\":{\"name\":\"strands-box.control\",\"version\":\"\",\"attributes\":[],"
		"\"droppedAttributesCount\":0},\"logRecords\":[{\"timeUnixNano\":\"1\",\"observedTimeUnixNano\":\"2\","
		"\"severityNumber\":\"SEVERITY_NUMBER_INFO2\",\"severityText\":\"ok\",\"body\":null,\"attributes\":[],"
		"\"droppedAttributesCount\":0,\"flags\":3,\"traceId\":\"\",\"spanId\":\"\",\"eventName\":\"\"}],"
		"\"schemaUrl\":\"\"}],\"schemaUrl\":\"\"}]}";
	rc = run(TM_RELAY_LOGS, true, box_like, strlen(box_like), &o);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		const char *l = line_of(&o);
		CHECK(has(l, "\"severityNumber\":10,\"severityText\":\"ok\",\"body\":null,\"attributes\":[]"));
		CHECK(has(l, "\"flags\":3,"));
		check_pb_round_trip(TM_RELAY_LOGS, &o);
	}
	tm_relay_out_free(&o);
}

/* ---- metrics ------------------------------------------------------------------------- */

static const char METRICS_JSON[] =
	"{\"resourceMetrics\":[{\"scopeMetrics\":[{\"scope\":{\"name\":\"strands-box.m\"},\"metrics\":["
	"{\"name\":\"g\",\"metadata\":[{\"key\":\"strands.box.meta\",\"value\":{}},{\"key\":\"m.kept\",\"value\":{}}],"
	" \"gauge\":{\"dataPoints\":[{\"attributes\":[{\"key\":\"strands.box.dp\",\"value\":{\"stringValue\":\"x\"}}],"
	"  \"asInt\":\"-9223372036854775808\",\"exemplars\":[{\"filteredAttributes\":[{\"key\":\"strands.box.ex\","
	"  \"value\":{}},{\"key\":\"ex.kept\",\"value\":{}}],\"asDouble\":\"NaN\",\"traceId\":\"AABB\"}]}]}},"
	"{\"name\":\"s\",\"sum\":{\"dataPoints\":[{\"asDouble\":-0.0,\"attributes\":[{\"key\":\"strands.box.a\",\"value\":{}}]}],"
	" \"aggregationTemporality\":\"AGGREGATION_TEMPORALITY_CUMULATIVE\",\"isMonotonic\":true}},"
	"{\"name\":\"h\",\"histogram\":{\"dataPoints\":[{\"count\":3,\"sum\":0,\"bucketCounts\":[\"1\",2,0],"
	" \"explicitBounds\":[0.5,\"Infinity\"],\"attributes\":[{\"key\":\"strands.box.h\",\"value\":{}}],"
	" \"exemplars\":[{\"filtered_attributes\":[{\"key\":\"strands.box.hx\",\"value\":{}}],\"as_int\":5}],"
	" \"max\":1e300}],\"aggregationTemporality\":1}},"
	"{\"name\":\"e\",\"exponentialHistogram\":{\"dataPoints\":[{\"scale\":-3,\"zeroCount\":\"4\","
	" \"positive\":{\"offset\":-2,\"bucketCounts\":[\"18446744073709551615\",\"0\"]},"
	" \"attributes\":[{\"key\":\"strands.box.e\",\"value\":{}}],\"zeroThreshold\":1.5,"
	" \"exemplars\":[{\"filteredAttributes\":[{\"key\":\"strands.box.ee\",\"value\":{}}]}]}]}},"
	"{\"name\":\"q\",\"summary\":{\"dataPoints\":[{\"count\":\"2\",\"sum\":3.25,"
	" \"quantileValues\":[{\"quantile\":0.5,\"value\":1}],\"attributes\":[{\"key\":\"strands.box.q\",\"value\":{}}]}]}}"
	"]}]}]}";

static void test_metrics(void)
{
	struct tm_relay_out o;
	int rc = run(TM_RELAY_METRICS, true, METRICS_JSON, strlen(METRICS_JSON), &o);
	CHECK_EQ_INT(rc, 0);
	if (rc != 0) {
		fprintf(stderr, "  %s\n", errbuf);
		return;
	}
	const char *l = line_of(&o);
	/* stripped: metadata, the data points of all five kinds, exemplars (both spellings) */
	CHECK_EQ_INT(count_of(l, "\"key\":\"strands.box."), 3);
	CHECK(has(l, "\"metadata\":[{\"key\":\"m.kept\",\"value\":{}}]"));
	CHECK(has(l, "\"filteredAttributes\":[{\"key\":\"ex.kept\",\"value\":{}}]"));
	CHECK(has(l, "agent-claimed:strands-box.m"));
	/* the oneof member set, and only it; optional doubles written when present, even 0 */
	CHECK(has(l, "\"timeUnixNano\":\"0\",\"asInt\":\"-9223372036854775808\",\"exemplars\""));
	CHECK(has(l, "\"asDouble\":\"NaN\",\"spanId\":\"\",\"traceId\":\"aabb\""));
	CHECK(has(l, "\"asDouble\":-0.0,\"exemplars\":[]"));
	CHECK(has(l, "\"aggregationTemporality\":2,\"isMonotonic\":true"));
	CHECK(has(l, "\"count\":\"3\",\"sum\":0,\"bucketCounts\":[\"1\",\"2\",\"0\"],"
		     "\"explicitBounds\":[0.5,\"Infinity\"]"));
	CHECK(has(l, "\"flags\":0,\"max\":1e+300}"));
	CHECK(strstr(l, "\"min\"") == NULL);
	CHECK(has(l, "\"asInt\":\"5\""));
	CHECK(has(l, "\"scale\":-3,\"zeroCount\":\"4\",\"positive\":{\"offset\":-2,"
		     "\"bucketCounts\":[\"18446744073709551615\",\"0\"]},\"negative\":null"));
	CHECK(has(l, "\"zeroThreshold\":1.5}"));
	CHECK(has(l, "\"count\":\"2\",\"sum\":3.25,\"quantileValues\":[{\"quantile\":0.5,\"value\":1}]"));
	check_pb_round_trip(TM_RELAY_METRICS, &o);
	tm_relay_out_free(&o);
}

/* ---- the resource limit ----------------------------------------------------------------- */

static void test_resource_limit(void)
{
	for (int kind = 0; kind < 3; kind++) {
		struct pb req = { 0 };
		for (int i = 0; i < TM_RELAY_RESOURCES_MAX; i++)
			pb_bytes(&req, 1, "", 0);
		struct tm_relay_out o;
		CHECK_EQ_INT(run((enum tm_relay_kind)kind, false, req.b, req.n, &o), 0);
		CHECK_EQ_INT(o.n_resources, TM_RELAY_RESOURCES_MAX);
		tm_relay_out_free(&o);
		pb_bytes(&req, 1, "", 0);
		expect_fail((enum tm_relay_kind)kind, false, req.b, req.n, -E2BIG,
			    "1025 resources, where at most 1024");
		free(req.b);
	}
	struct pb js = { 0 };
	pb_raw(&js, "{\"resourceSpans\":[{}", 20);
	for (int i = 1; i <= TM_RELAY_RESOURCES_MAX; i++)
		pb_raw(&js, ",{}", 3);
	pb_raw(&js, "]}", 2);
	expect_fail(TM_RELAY_TRACES, true, js.b, js.n, -E2BIG, "1025 resources");
	free(js.b);
}

/* ---- malformed input --------------------------------------------------------------------- */

static void test_malformed_pb(void)
{
	/* a varint of 11 bytes, in an unknown field of a ScopeSpans */
	static const uint8_t long_varint[] = { 0x0a, 0x0e, 0x12, 0x0c, 0x48, 0xff, 0xff, 0xff, 0xff,
					       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	expect_fail(TM_RELAY_TRACES, false, long_varint, sizeof(long_varint), -EINVAL,
		    "$.resourceSpans[0].scopeSpans[0] (byte 5): a varint longer than 64 bits");
	static const uint8_t varint_past[] = { 0x0a, 0x02, 0x48, 0x80 };
	expect_fail(TM_RELAY_LOGS, false, varint_past, sizeof(varint_past), -EINVAL,
		    "a varint runs past the end");
	/* a length past the end, at the top and inside */
	static const uint8_t len_past[] = { 0x0a, 0x05, 0x0a, 0x00 };
	expect_fail(TM_RELAY_TRACES, false, len_past, sizeof(len_past), -EINVAL,
		    "protobuf $ (byte 1): a length of 5 runs past the end");
	static const uint8_t len_inner[] = { 0x0a, 0x03, 0x0a, 0x09, 0x00 };
	expect_fail(TM_RELAY_TRACES, false, len_inner, sizeof(len_inner), -EINVAL,
		    "a length of 9 runs past the end of its message (1 bytes left)");
	/* a known field with the wrong wire type: resource_spans as a varint */
	static const uint8_t wrong_wt[] = { 0x08, 0x01 };
	expect_fail(TM_RELAY_TRACES, false, wrong_wt, sizeof(wrong_wt), -EINVAL,
		    "field 1 (resourceSpans) has wire type 0, where ExportTraceServiceRequest needs 2");
	/* Span.flags (fixed32) sent as a varint */
	struct pb span = { 0 }, ss = { 0 }, rs = { 0 }, req = { 0 };
	pb_tag(&span, 16, 0);
	pb_varint(&span, 1);
	pb_sub(&ss, 2, &span);
	pb_sub(&rs, 2, &ss);
	pb_sub(&req, 1, &rs);
	expect_fail(TM_RELAY_TRACES, false, req.b, req.n, -EINVAL,
		    "$.resourceSpans[0].scopeSpans[0].spans[0] (byte 6): field 16 (flags) has wire type 0");
	free(req.b);
	/* a string that is not UTF-8: an overlong '/', and a surrogate */
	static const char *bad_utf8[] = { "\xc0\xaf", "\xed\xa0\x80", "\xff", "ab\xe2\x82" };
	for (size_t i = 0; i < 4; i++) {
		struct pb sc = { 0 }, sl = { 0 }, rl = { 0 }, r = { 0 };
		pb_str(&sc, 1, bad_utf8[i]);
		pb_sub(&sl, 1, &sc);
		pb_sub(&rl, 2, &sl);
		pb_sub(&r, 1, &rl);
		expect_fail(TM_RELAY_LOGS, false, r.b, r.n, -EINVAL,
			    "$.resourceLogs[0].scopeLogs[0].scope.name (byte 8): a string that is not UTF-8");
		free(r.b);
	}
	/* nesting past the bound: AnyValue{array{AnyValue{array...}}} */
	struct pb deep = { 0 };
	for (int i = 0; i < 100; i++) {
		struct pb any = { 0 }, arr = { 0 };
		if (deep.n)
			pb_sub(&arr, 1, &deep);
		pb_sub(&any, 5, &arr);
		deep = any;
	}
	{
		struct pb kv = { 0 }, res = { 0 }, rs2 = { 0 }, r = { 0 };
		pb_str(&kv, 1, "k");
		pb_sub(&kv, 2, &deep);
		pb_sub(&res, 1, &kv);
		pb_sub(&rs2, 1, &res);
		pb_sub(&r, 1, &rs2);
		expect_fail(TM_RELAY_TRACES, false, r.b, r.n, -EINVAL, "nested deeper than 64 messages");
		free(r.b);
	}
	/* field number 0, a wire type that does not exist, a stray end group */
	static const uint8_t field0[] = { 0x02, 0x00 };
	expect_fail(TM_RELAY_TRACES, false, field0, sizeof(field0), -EINVAL, "field number 0 is not a valid one");
	static const uint8_t wt7[] = { 0x0f };
	expect_fail(TM_RELAY_TRACES, false, wt7, sizeof(wt7), -EINVAL, "wire type 7 does not exist");
	static const uint8_t endgroup[] = { 0x14 };
	expect_fail(TM_RELAY_TRACES, false, endgroup, sizeof(endgroup), -EINVAL, "end-group tag with no group open");
	static const uint8_t open_group[] = { 0x13, 0x08, 0x01 };
	expect_fail(TM_RELAY_TRACES, false, open_group, sizeof(open_group), -EINVAL, "group 2 has no end");
	/* packed fixed64 bucket counts of 7 bytes */
	struct pb hdp = { 0 }, h = { 0 }, m = { 0 }, sm = { 0 }, rm = { 0 }, mr = { 0 };
	pb_bytes(&hdp, 6, "1234567", 7);
	pb_sub(&h, 1, &hdp);
	pb_sub(&m, 9, &h);
	pb_sub(&sm, 2, &m);
	pb_sub(&rm, 2, &sm);
	pb_sub(&mr, 1, &rm);
	expect_fail(TM_RELAY_METRICS, false, mr.b, mr.n, -EINVAL, "bucketCounts: packed 8-byte values in 7 bytes");
	free(mr.b);
}

static void test_malformed_json(void)
{
	static const struct {
		enum tm_relay_kind k;
		const char *body, *msg;
	} cases[] = {
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[", "$: not JSON: " },
		{ TM_RELAY_TRACES, "", "$: not JSON" },
		{ TM_RELAY_TRACES, "[]", "$: an ExportTraceServiceRequest object expected" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":{}}", "$: resourceSpans must be an array" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[7]}", "$.resourceSpans[0]: resourceSpans must be an object (ResourceSpans)" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[null]}", "$.resourceSpans[0]: null inside a list" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"0g\"}]}]}]}",
		  "$.resourceSpans[0].scopeSpans[0].spans[0]: an id must be hex digits, got a 'g' at 1" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"abc\"}]}]}]}",
		  "an id must be an even number of hex digits, got 3" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"kind\":\"SERVER\"}]}]}]}",
		  "kind must be an enum number or name, got \"SERVER\"" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"startTimeUnixNano\":\"-1\"}]}]}]}",
		  "startTimeUnixNano is unsigned, got a negative value" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"startTimeUnixNano\":\"18446744073709551616\"}]}]}]}",
		  "startTimeUnixNano must be a decimal integer" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"flags\":4294967296}]}]}]}",
		  "flags: 4294967296 is out of range" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"droppedEventsCount\":1.5}]}]}]}",
		  "droppedEventsCount must be an integer, got 1.5" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":5}]}]}]}",
		  "name must be a string" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"trace_id\":\"\",\"traceId\":\"\"}]}]}]}",
		  "traceId given twice (as traceId and trace_id)" },
		{ TM_RELAY_LOGS, "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":"
		  "{\"stringValue\":\"a\",\"intValue\":\"1\"}}]}}]}",
		  "$.resourceLogs[0].resource.attributes[0].value: stringValue and intValue are of one oneof" },
		{ TM_RELAY_LOGS, "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":"
		  "{\"bytesValue\":\"a$==\"}}]}}]}", "not base64: a character outside the alphabet at 1" },
		{ TM_RELAY_LOGS, "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":"
		  "{\"bytesValue\":\"abcde\"}}]}}]}", "not base64 (5 digits)" },
		{ TM_RELAY_LOGS, "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":"
		  "{\"boolValue\":\"true\"}}]}}]}", "boolValue must be true or false" },
		{ TM_RELAY_LOGS, "{\"resourceLogs\":[],\"resourceLogs\":[]}", "not JSON: duplicate object key" },
		{ TM_RELAY_METRICS, "{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"gauge\":{},\"sum\":{}}]}]}]}",
		  "gauge and sum are of one oneof" },
		{ TM_RELAY_METRICS, "{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"gauge\":{\"dataPoints\":"
		  "[{\"asDouble\":\"1.5x\"}]}}]}]}]}", "asDouble must be a number" },
		{ TM_RELAY_METRICS, "{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"gauge\":{\"dataPoints\":"
		  "[{\"asInt\":\"9223372036854775808\"}]}}]}]}]}", "asInt: 9223372036854775808 is out of range" },
		{ TM_RELAY_TRACES, "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"startTimeUnixNano\":\"1\\u00002\"}]}]}]}",
		  "startTimeUnixNano: a NUL inside a number" },
		{ TM_RELAY_METRICS, "{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"gauge\":{\"dataPoints\":"
		  "[{\"asDouble\":\"1\\u0000\"}]}}]}]}]}", "asDouble must be a number" },
		{ TM_RELAY_METRICS, "{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"exponentialHistogram\":"
		  "{\"dataPoints\":[{\"scale\":2147483648}]}}]}]}]}", "scale: 2147483648 is out of range" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_fail(cases[i].k, true, cases[i].body, strlen(cases[i].body), -EINVAL, cases[i].msg);

	/* nesting: refused before jansson recurses */
	struct pb deep = { 0 };
	pb_raw(&deep, "{\"resourceSpans\":", 17);
	for (int i = 0; i < 5000; i++)
		pb_raw(&deep, "[", 1);
	expect_fail(TM_RELAY_TRACES, true, deep.b, deep.n, -EINVAL, "nested deeper than 130 arrays and objects");
	free(deep.b);
	/* deep in messages but shallow enough for the bracket scan */
	static const char arr[] = "{\"arrayValue\":{\"values\":[";
	struct pb d2 = { 0 };
	pb_raw(&d2, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":", 64);
	for (int i = 0; i < 29; i++)
		pb_raw(&d2, arr, sizeof(arr) - 1);
	for (int i = 0; i < 29; i++)
		pb_raw(&d2, "]}}", 3);
	pb_raw(&d2, "}]}}]}", 6);
	struct tm_relay_out o;
	CHECK_EQ_INT(run(TM_RELAY_TRACES, true, d2.b, d2.n, &o), 0);  /* 5 + 2*29 messages deep */
	tm_relay_out_free(&o);
	free(d2.b);
}

/* Lenient where the spec says receivers are: proto names, either hex case, enum
 * names, numbers for 64-bit integers, URL-safe unpadded base64, null as absent. */
static void test_lenient_json(void)
{
	static const char in[] =
		"{\"resource_spans\":[{\"resource\":null,\"scope_spans\":[{\"spans\":[{\"trace_id\":\"ABCDEF\","
		"\"start_time_unix_nano\":12,\"kind\":5,\"status\":null,\"attributes\":[{\"key\":\"b\","
		"\"value\":{\"bytes_value\":\"-_8\"}},{\"key\":\"n\",\"value\":{\"int_value\":-3}}],"
		"\"dropped_attributes_count\":\"4\",\"name\":null}]}]}]}";
	struct tm_relay_out o;
	int rc = tm_relay_restamp(TM_RELAY_TRACES, true, in, strlen(in), &BARE, &o, errbuf, sizeof(errbuf));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		const char *l = line_of(&o);
		CHECK(has(l, "\"traceId\":\"abcdef\""));
		CHECK(has(l, "\"startTimeUnixNano\":\"12\""));
		CHECK(has(l, "\"kind\":5"));
		CHECK(has(l, "{\"bytesValue\":\"+/8=\"}"));
		CHECK(has(l, "{\"intValue\":\"-3\"}"));
		CHECK(has(l, "\"droppedAttributesCount\":4,"));
		CHECK(has(l, "\"name\":\"\""));
		CHECK(has(l, "\"status\":null"));
		CHECK(has(l, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"strands.box.source\""));
		check_round_trip_with(TM_RELAY_TRACES, &o, &BARE);
	} else {
		fprintf(stderr, "  %s\n", errbuf);
	}
	tm_relay_out_free(&o);

	/* escapes and a NUL inside a string survive both ways */
	static const char esc[] = "{\"resourceLogs\":[{\"scopeLogs\":[{\"logRecords\":[{\"severityText\":"
				  "\"a\\u0000b\\\"\\\\\\n\\u001f\\u00e9\"}]}]}]}";
	rc = run(TM_RELAY_LOGS, true, esc, strlen(esc), &o);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK(has(line_of(&o), "\"severityText\":\"a\\u0000b\\\"\\\\\\n\\u001f\xc3\xa9\""));
		check_pb_round_trip(TM_RELAY_LOGS, &o);
	}
	tm_relay_out_free(&o);

	/* an empty protobuf body is an empty request; unknown keys are ignored */
	rc = run(TM_RELAY_METRICS, false, "", 0, &o);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0)
		CHECK_EQ_STR(line_of(&o), "{\"resourceMetrics\":[]}\n");
	CHECK_EQ_INT(o.pb.n, 0);
	tm_relay_out_free(&o);
	rc = run(TM_RELAY_METRICS, true, "{\"resourceLogs\":[{}]}", 21, &o);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0)
		CHECK_EQ_STR(line_of(&o), "{\"resourceMetrics\":[]}\n");
	tm_relay_out_free(&o);
}

/* A non-repeated field given twice in protobuf keeps its last value, and of a
 * oneof the last member set (as the official JS types decode). */
static void test_last_wins(void)
{
	struct pb any = { 0 }, kv = { 0 }, res = { 0 }, rl = { 0 }, req = { 0 };
	pb_str(&any, 1, "first");
	pb_tag(&any, 3, 0);
	pb_varint(&any, 42);
	pb_str(&kv, 1, "old");
	pb_str(&kv, 1, "k");
	pb_sub(&kv, 2, &any);
	pb_sub(&res, 1, &kv);
	pb_sub(&rl, 1, &res);
	pb_sub(&req, 1, &rl);
	struct tm_relay_out o;
	int rc = tm_relay_restamp(TM_RELAY_LOGS, false, req.b, req.n, &BARE, &o, errbuf, sizeof(errbuf));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		const char *l = line_of(&o);
		CHECK(has(l, "{\"key\":\"k\",\"value\":{\"intValue\":\"42\"}}"));
		CHECK(strstr(l, "first") == NULL && strstr(l, "old") == NULL);
	}
	tm_relay_out_free(&o);
	free(req.b);
}

static void test_expansion_bound(void)
{
	/* 2-byte empty spans: each becomes a JSON object of every default field;
	 * past TM_RELAY_EXPANSION per input byte the body is refused, not allocated */
	size_t n_spans = 600000;
	struct pb ss = { 0 }, rs = { 0 }, req = { 0 };
	for (size_t i = 0; i < n_spans; i++)
		pb_bytes(&ss, 2, "", 0);
	pb_sub(&rs, 2, &ss);
	pb_sub(&req, 1, &rs);
	expect_fail(TM_RELAY_TRACES, false, req.b, req.n, -E2BIG, "the OTLP/JSON line would pass");
	free(req.b);
}

static void test_bad_args(void)
{
	struct tm_relay_out o;
	CHECK_EQ_INT(tm_relay_restamp((enum tm_relay_kind)7, false, "", 0, &BARE, &o, errbuf, sizeof(errbuf)),
		     -EINVAL);
	CHECK_EQ_INT(tm_relay_restamp(TM_RELAY_LOGS, false, NULL, 3, &BARE, &o, NULL, 0), -EINVAL);
	CHECK_EQ_STR(tm_relay_kind_name(TM_RELAY_METRICS), "metrics");
	tm_relay_out_free(NULL);
}

static const struct test_case tests[] = {
	{ "traces_json", test_traces_json },
	{ "traces_pb", test_traces_pb },
	{ "logs", test_logs },
	{ "metrics", test_metrics },
	{ "resource_limit", test_resource_limit },
	{ "malformed_pb", test_malformed_pb },
	{ "malformed_json", test_malformed_json },
	{ "lenient_json", test_lenient_json },
	{ "last_wins", test_last_wins },
	{ "expansion_bound", test_expansion_bound },
	{ "bad_args", test_bad_args },
};

TEST_MAIN(tests)
