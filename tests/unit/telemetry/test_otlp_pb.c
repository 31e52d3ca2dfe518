/* test_otlp_pb.c - the protobuf encoder (otlp_pb.c): a small record's bytes
 * written out by hand from opentelemetry-proto's field numbers, and real
 * records read back with a tiny protobuf reader that checks every length
 * (tests/telemetry/pb_vs_json.test.mjs compares with the official types). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "record.h"
#include "test.h"

static const struct tm_kv kv1[] = { { "k", "v" } };
static const struct tm_resource res1 = { 1, kv1 };

/* A record built by hand, with room for n attributes. */
static struct tm_rec *rec_new(size_t n)
{
	struct tm_rec *r = calloc(1, sizeof(*r) + n * sizeof(r->attrs[0]));
	r->n_attrs = n;
	return r;
}

static void check_bytes(const struct tm_buf *b, const uint8_t *want, size_t n, int line)
{
	bool same = !b->oom && b->n == n && memcmp(b->p, want, n) == 0;
	CHECK(same);
	if (same)
		return;
	fprintf(stderr, "line %d: got %zu bytes:", line, b->n);
	for (size_t i = 0; i < b->n; i++)
		fprintf(stderr, " %02x", b->p[i]);
	fprintf(stderr, "\n");
}

/* ---- hand-checked bytes --------------------------------------------------------------- */

/* A control-scope log record: time 1, observed 2, severity 10 "ok", three
 * attributes (a string, 300 as a two-byte varint, -1 as ten bytes), flags 3,
 * the ids, no event name.  Every length below is counted by hand. */
static void test_hand_logs(void)
{
	struct tm_rec *r = rec_new(3);
	r->scope = TM_SCOPE_CONTROL;
	r->time_ns = 1;
	r->observed_ns = 2;
	r->severity = 10;
	r->text = "ok";
	r->flags = 3;
	for (int i = 0; i < 16; i++)
		r->trace.trace_id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 8; i++)
		r->trace.span_id[i] = (uint8_t)(0xb0 + i);
	r->attrs[0] = (struct tm_attr){ .key = "a", .kind = TM_STR, .s = "b" };
	r->attrs[1] = (struct tm_attr){ .key = "n", .kind = TM_INT, .i = 300 };
	r->attrs[2] = (struct tm_attr){ .key = "m", .kind = TM_INT, .i = -1 };
	static const uint8_t want[] = {
		0x0a, 0x86, 0x01,               /* resource_logs = 1, 134 bytes (two-byte length) */
		0x0a, 0x0a,                     /*  resource = 1, 10 */
		0x0a, 0x08,                     /*   attributes = 1, KeyValue of 8 */
		0x0a, 0x01, 'k',                /*    key = 1 */
		0x12, 0x03, 0x0a, 0x01, 'v',    /*    value = 2: AnyValue { string_value = 1 } */
		0x12, 0x78,                     /*  scope_logs = 2, 120 */
		0x0a, 0x15,                     /*   scope = 1, 21 */
		0x0a, 0x13, 's', 't', 'r', 'a', 'n', 'd', 's', '-', 'b', 'o', 'x', '.',
		'c', 'o', 'n', 't', 'r', 'o', 'l', /* name = 1, 19 */
		0x12, 0x5f,                     /*   log_records = 2, 95 */
		0x09, 1, 0, 0, 0, 0, 0, 0, 0,   /*    time_unix_nano = 1, fixed64 */
		0x59, 2, 0, 0, 0, 0, 0, 0, 0,   /*    observed_time_unix_nano = 11, fixed64 */
		0x10, 0x0a,                     /*    severity_number = 2 */
		0x1a, 0x02, 'o', 'k',           /*    severity_text = 3 */
		0x32, 0x08, 0x0a, 0x01, 'a', 0x12, 0x03, 0x0a, 0x01, 'b', /* attributes = 6 */
		0x32, 0x08, 0x0a, 0x01, 'n', 0x12, 0x03, 0x18, 0xac, 0x02, /* int_value = 3: 300 */
		0x32, 0x10, 0x0a, 0x01, 'm', 0x12, 0x0b, 0x18,           /* int_value = 3: -1 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
		0x45, 3, 0, 0, 0,               /*    flags = 8, fixed32 */
		0x4a, 0x10, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, /* trace_id = 9 */
		0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
		0x52, 0x08, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, /* span_id = 10 */
	};
	struct tm_rec *v[1] = { r };
	struct tm_buf b = { 0 };
	tm_pb_logs(&b, &res1, v, 1);
	check_bytes(&b, want, sizeof(want), __LINE__);

	/* appended, not overwritten: a second request after the first */
	tm_pb_logs(&b, &res1, v, 1);
	CHECK_EQ_INT(b.n, 2 * sizeof(want));
	CHECK(b.n == 2 * sizeof(want) && memcmp(b.p + sizeof(want), want, sizeof(want)) == 0);
	tm_buf_free(&b);

	/* no span: no traces request at all */
	tm_pb_spans(&b, &res1, v, 1);
	CHECK_EQ_INT(b.n, 0);
	tm_buf_free(&b);
	free(r);
}

/* A span with a parent, the remote-parent flags (0x303, a fixed32), a status,
 * an arrayValue and an empty string (a oneof member, so written); the parent
 * key is a log attribute only. */
static void test_hand_span(void)
{
	struct tm_rec *r = rec_new(2);
	const char *arr[] = { "x", "" };
	r->scope = TM_SCOPE_POLICY;
	r->time_ns = 0x0102030405060708;
	r->span = true;
	r->span_flags = 0x303;
	r->span_name = "p";
	r->status = "f";
	r->trace.has_parent = true;
	memset(r->trace.trace_id, 0x11, 16);
	memset(r->trace.span_id, 0x22, 8);
	memset(r->trace.parent_id, 0x33, 8);
	r->attrs[0] = (struct tm_attr){ .key = "s", .kind = TM_STRS, .n = 2, .v = arr };
	r->attrs[1] = (struct tm_attr){ .key = "e", .kind = TM_STR, .s = "" };
	static const uint8_t want[] = {
		0x0a, 0x8b, 0x01,               /* resource_spans = 1, 139 */
		0x0a, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 0x0a, 0x01, 'v', /* resource */
		0x12, 0x7d,                     /*  scope_spans = 2, 125 */
		0x0a, 0x14,                     /*   scope = 1, 20 */
		0x0a, 0x12, 's', 't', 'r', 'a', 'n', 'd', 's', '-', 'b', 'o', 'x', '.',
		'p', 'o', 'l', 'i', 'c', 'y',   /*    name = 1, 18 */
		0x12, 0x65,                     /*   spans = 2, 101 */
		0x0a, 0x10, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, /* trace_id = 1 */
		0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
		0x12, 0x08, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, /* span_id = 2 */
		0x22, 0x08, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33, /* parent_span_id = 4 */
		0x85, 0x01, 0x03, 0x03, 0x00, 0x00, /* flags = 16 (a two-byte tag), fixed32 0x303 */
		0x2a, 0x01, 'p',                /*    name = 5 */
		0x30, 0x01,                     /*    kind = 6: SPAN_KIND_INTERNAL */
		0x39, 8, 7, 6, 5, 4, 3, 2, 1,   /*    start_time_unix_nano = 7 */
		0x41, 8, 7, 6, 5, 4, 3, 2, 1,   /*    end_time_unix_nano = 8 */
		0x4a, 0x10, 0x0a, 0x01, 's',    /*    attributes = 9, 16: key */
		0x12, 0x0b, 0x2a, 0x09,         /*     AnyValue (11) { array_value = 5, 9 */
		0x0a, 0x03, 0x0a, 0x01, 'x',    /*      values = 1: AnyValue "x" */
		0x0a, 0x02, 0x0a, 0x00,         /*      values = 1: AnyValue "" (present) } */
		0x4a, 0x07, 0x0a, 0x01, 'e', 0x12, 0x02, 0x0a, 0x00, /* "e" = "" */
		0x7a, 0x05,                     /*    status = 15, 5 */
		0x12, 0x01, 'f',                /*     message = 2 */
		0x18, 0x02,                     /*     code = 3: STATUS_CODE_ERROR */
	};
	struct tm_rec *v[1] = { r };
	struct tm_buf b = { 0 };
	tm_pb_spans(&b, &res1, v, 1);
	check_bytes(&b, want, sizeof(want), __LINE__);
	tm_buf_free(&b);
	free(r);
}

/* ---- a tiny reader ---------------------------------------------------------------------- */

/* One field of a message: its number, wire type, and value (varint, fixed,
 * or the bytes of a length-delimited field). */
struct field {
	unsigned num, wt;
	uint64_t u;
	const uint8_t *p;
	size_t n;
};

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (r->p == r->end) {
			r->bad = true;
			return 0;
		}
		uint8_t c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* The next field of r, or false at the end (r->bad: malformed). */
static bool rd_field(struct rd *r, struct field *f)
{
	if (r->p == r->end || r->bad)
		return false;
	uint64_t tag = rd_varint(r);
	f->num = (unsigned)(tag >> 3);
	f->wt = (unsigned)(tag & 7);
	f->p = NULL;
	f->n = 0;
	f->u = 0;
	size_t k = f->wt == 1 ? 8 : f->wt == 5 ? 4 : 0;
	switch (f->wt) {
	case 0:
		f->u = rd_varint(r);
		break;
	case 1:
	case 5:
		if ((size_t)(r->end - r->p) < k) {
			r->bad = true;
			return false;
		}
		for (size_t i = 0; i < k; i++)
			f->u |= (uint64_t)r->p[i] << (8 * i);
		r->p += k;
		break;
	case 2:
		f->n = (size_t)rd_varint(r);
		if (r->bad || f->n > (size_t)(r->end - r->p)) {
			r->bad = true;
			return false;
		}
		f->p = r->p;
		r->p += f->n;
		break;
	default:
		r->bad = true;
	}
	return !r->bad && f->num != 0;
}

static struct rd rd_of(const struct field *f)
{
	return (struct rd){ f->p, f->p + f->n, false };
}

static bool str_is(const struct field *f, const char *s)
{
	return f->wt == 2 && f->n == strlen(s) && memcmp(f->p, s, f->n) == 0;
}

/* The AnyValue in f matches a. */
static bool value_is(const struct field *f, const struct tm_attr *a)
{
	struct rd r = rd_of(f);
	struct field g;
	if (!rd_field(&r, &g) || r.p != r.end)
		return false;
	switch (a->kind) {
	case TM_STR:
		return g.num == 1 && str_is(&g, a->s);
	case TM_INT:
		return g.num == 3 && g.wt == 0 && (int64_t)g.u == a->i;
	case TM_STRS: {
		struct rd arr = rd_of(&g);
		struct field h;
		size_t k = 0;
		if (g.num != 5)
			return false;
		while (rd_field(&arr, &h)) {
			struct rd one = rd_of(&h);
			struct field s;
			if (h.num != 1 || k >= a->n || !rd_field(&one, &s) || s.num != 1 ||
			    !str_is(&s, a->v[k]) || one.p != one.end)
				return false;
			k++;
		}
		return !arr.bad && k == a->n;
	}
	}
	return false;
}

/* The KeyValue list of a log record or span (fields num) matches r's
 * attributes, the parent key first when parent_key. */
static void check_attrs(const struct field *msg, unsigned num, const struct tm_rec *r,
			bool parent_key)
{
	struct rd m = rd_of(msg);
	struct field f;
	size_t i = 0;
	bool parent_seen = false;
	while (rd_field(&m, &f)) {
		if (f.num != num)
			continue;
		struct rd kv = rd_of(&f);
		struct field key, val;
		CHECK(rd_field(&kv, &key) && key.num == 1);
		CHECK(rd_field(&kv, &val) && val.num == 2);
		CHECK(kv.p == kv.end);
		if (parent_key && r->trace.has_parent && !parent_seen) {
			CHECK(str_is(&key, "strands.box.trace.parent_span_id"));
			parent_seen = true;
			continue;
		}
		CHECK(i < r->n_attrs);
		if (i >= r->n_attrs)
			break;
		CHECK(str_is(&key, r->attrs[i].key));
		CHECK(value_is(&val, &r->attrs[i]));
		i++;
	}
	CHECK(!m.bad);
	CHECK_EQ_INT(i, r->n_attrs);
	CHECK(parent_seen == (parent_key && r->trace.has_parent));
}

/* Walk a request: one resource entry; per scope entry, its name and its
 * records in order, each compared with v; every length consumed exactly. */
static void check_request(const struct tm_buf *b, struct tm_rec *const *v, size_t n, bool spans)
{
	struct rd top = { b->p, b->p + b->n, false };
	struct field rs, f;
	size_t seen = 0;
	CHECK(rd_field(&top, &rs) && rs.num == 1 && rs.wt == 2);
	CHECK(!rd_field(&top, &f) && !top.bad);          /* one resource entry */
	struct rd r = rd_of(&rs);
	bool have_resource = false;
	while (rd_field(&r, &f)) {
		if (f.num == 1) {
			have_resource = true;
			continue;
		}
		CHECK(f.num == 2);
		struct rd sc = rd_of(&f);
		struct field g, name = { 0 };
		const char *scope = NULL;
		while (rd_field(&sc, &g)) {
			if (g.num == 1) {
				struct rd is = rd_of(&g);
				CHECK(rd_field(&is, &name) && name.num == 1);
				for (int s = 0; s < 3; s++)
					if (str_is(&name, tm_scope_name((enum tm_scope)s)))
						scope = tm_scope_name((enum tm_scope)s);
				CHECK(scope != NULL);
				continue;
			}
			CHECK(g.num == 2);
			/* the next record of v of this scope (with a span, for spans) */
			while (seen < n && (spans && !v[seen]->span))
				seen++;
			CHECK(seen < n);
			if (seen >= n)
				return;
			const struct tm_rec *rec = v[seen++];
			CHECK(scope != NULL && strcmp(scope, tm_scope_name(rec->scope)) == 0);
			struct rd lr = rd_of(&g);
			struct field h;
			bool id = false, sid = false, event = false;
			while (rd_field(&lr, &h)) {
				unsigned tid = spans ? 1 : 9, spid = spans ? 2 : 10;
				if (h.num == tid) {
					id = h.n == 16 && memcmp(h.p, rec->trace.trace_id, 16) == 0;
				} else if (h.num == spid) {
					sid = h.n == 8 && memcmp(h.p, rec->trace.span_id, 8) == 0;
				} else if (!spans && h.num == 1) {
					CHECK(h.wt == 1 && h.u == (uint64_t)rec->time_ns);
				} else if (!spans && h.num == 2) {
					CHECK(h.wt == 0 && h.u == (uint64_t)rec->severity);
				} else if (!spans && h.num == 3) {
					CHECK(str_is(&h, rec->text));
				} else if (!spans && h.num == 8) {
					CHECK(h.wt == 5 && h.u == rec->flags);
				} else if (!spans && h.num == 12) {
					CHECK(rec->event_name != NULL && str_is(&h, rec->event_name));
					event = true;
				} else if (spans && h.num == 16) {
					CHECK(h.wt == 5 && h.u == rec->span_flags);
				} else if (spans && h.num == 4) {
					CHECK(rec->trace.has_parent && h.n == 8 &&
					      memcmp(h.p, rec->trace.parent_id, 8) == 0);
				} else if (spans && h.num == 5) {
					CHECK(str_is(&h, rec->span_name));
				} else if (spans && h.num == 15) {
					struct rd st = rd_of(&h);
					struct field m, c;
					CHECK(rec->status != NULL);
					CHECK(rd_field(&st, &m) && m.num == 2 && str_is(&m, rec->status));
					CHECK(rd_field(&st, &c) && c.num == 3 && c.u == 2);
				} else {
					/* the rest: observed time, attributes; kind and times */
					unsigned ok[] = { 11, 6 }, ok_span[] = { 6, 7, 8, 9 };
					bool known = false;
					for (size_t q = 0; !spans && q < 2; q++)
						known |= h.num == ok[q];
					for (size_t q = 0; spans && q < 4; q++)
						known |= h.num == ok_span[q];
					CHECK(known);
				}
			}
			CHECK(!lr.bad && id && sid);
			CHECK(spans || event == (rec->event_name != NULL));
			check_attrs(&g, spans ? 9 : 6, rec, !spans);
		}
		CHECK(!sc.bad);
	}
	CHECK(!r.bad && have_resource);
	while (seen < n && spans && !v[seen]->span)
		seen++;
	CHECK_EQ_INT(seen, n);
}

/* Real records: a decision with every subject key, a fault with a parent,
 * control records; read back field by field.  Records of one scope are
 * grouped, so the batch is ordered here as the encoder groups it. */
static void test_decode_back(void)
{
	static const char *const args[] = { "-c", "--token=abc", "ls" };
	static const bool literal[] = { true, false, false };
	const struct tm_rule rules[] = { { "r1", "why" }, { "r2", NULL } };
	struct tm_decision d = {
		.time_ns = 1767225600123456789, .action = "shell:spawn", .resource = "/bin/sh -c",
		.permit = false, .cause = TM_FORBIDDEN, .reason = "a forbid rule matched",
		.n_rules = 2, .rules = rules, .subject = TM_SUBJECT_PROCESS, .program = "/bin/sh",
		.n_args = 3, .args = args, .literal = literal, .cwd = "/w", .request_id = "req-1",
		.jsonrpc_id = "7",
	};
	memset(d.trace.trace_id, 0x5a, 16);
	memset(d.trace.span_id, 0x6b, 8);
	struct tm_rec *a = tm_record_decision(&d);
	d.subject = TM_SUBJECT_DEST;
	d.action = "net:connect";
	d.address = "api.example";
	d.port = 443;
	d.cause = TM_INTERNAL_FAULT;
	CHECK_EQ_INT(tm_traceparent_parse("00-0123456789abcdef0123456789abcdef-fedcba9876543210-01",
					  55, &d.trace), 0);
	struct tm_rec *b = tm_record_decision(&d);
	struct tm_trace t = { 0 };
	memset(t.trace_id, 0x77, 16);
	memset(t.span_id, 0x01, 8);
	struct tm_rec *c = tm_record_control(TM_BOX_STARTED, "demo", NULL, NULL, 5, &t);
	t.has_parent = true;
	memset(t.parent_id, 0x01, 8);
	struct tm_rec *e = tm_record_control(TM_BOX_STOPPED, "demo", "it broke", "detail", 6, &t);
	CHECK(a && b && c && e);
	a->observed_ns = b->observed_ns = c->observed_ns = e->observed_ns = 99;

	struct tm_rec *v[4] = { a, b, c, e };
	static const struct tm_kv kv[] = { { "service.name", "strands-box" },
					   { "strands.box.run.id", "00ff" } };
	const struct tm_resource res = { 2, kv };
	struct tm_buf lb = { 0 }, sb = { 0 };
	tm_pb_logs(&lb, &res, v, 4);
	tm_pb_spans(&sb, &res, v, 4);
	CHECK(!lb.oom && lb.n > 0 && !sb.oom && sb.n > 0);
	check_request(&lb, v, 4, false);
	check_request(&sb, v, 4, true);
	tm_buf_free(&lb);
	tm_buf_free(&sb);
	free(a);
	free(b);
	free(c);
	free(e);
}

/* Lengths past one and two varint bytes: a 4 KiB attribute (cut with `…
 * (truncated)`), UTF-8 kept byte for byte, and a batch of 200 records (a
 * request over 16 KiB: three-byte lengths). */
static void test_long(void)
{
	char *big = malloc(10000);
	for (size_t i = 0; i + 2 < 10000; i += 2) {
		big[i] = (char)0xc3;            /* "é" */
		big[i + 1] = (char)0xa9;
	}
	big[9998] = '\0';
	struct tm_decision d = { .action = "fs:read", .resource = big, .cause = TM_NO_MATCH,
				 .reason = "no permit matched", .rule = "<default-deny>" };
	memset(d.trace.trace_id, 1, 16);
	memset(d.trace.span_id, 2, 8);
	struct tm_rec *v[200];
	for (size_t i = 0; i < 200; i++) {
		v[i] = tm_record_decision(&d);
		v[i]->observed_ns = (int64_t)i + 1;
	}
	struct tm_buf b = { 0 };
	tm_pb_logs(&b, &res1, v, 200);
	CHECK(b.n > 200 * 8192);                /* resource and file.path, 4 KiB each */
	check_request(&b, v, 200, false);
	/* the resource value as recorded: cut on a character boundary */
	CHECK(strlen(v[0]->attrs[2].s) <= TM_ATTR_MAX);
	tm_buf_free(&b);
	tm_pb_spans(&b, &res1, v, 200);
	check_request(&b, v, 200, true);
	tm_buf_free(&b);
	for (size_t i = 0; i < 200; i++)
		free(v[i]);
	free(big);
}

static const struct test_case tests[] = {
	{ "hand_logs", test_hand_logs },
	{ "hand_span", test_hand_span },
	{ "decode_back", test_decode_back },
	{ "long", test_long },
};

TEST_MAIN(tests)
