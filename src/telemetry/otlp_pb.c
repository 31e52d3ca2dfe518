/* otlp_pb.c - OTLP protobuf as Box's exporter sends it (otlp.h; docs/records.md
 * "OTLP targets"): the ExportLogsServiceRequest and ExportTraceServiceRequest
 * of a batch, with the content of the JSON lines (otlp_json.c) field for
 * field.  Fields go in the order the .proto files declare them, as prost
 * (Box's encoder) writes them; a field at its proto3 default is left out, as
 * prost leaves it, except the one member of an AnyValue (a oneof has
 * presence: an empty string attribute is still a string).
 *
 * Lengths: every nested message is length-prefixed, and its length is only
 * known once it is written.  The same walk runs twice: the first pass writes
 * nothing and notes each message's length in the order the messages open;
 * the second, with every length known, writes the bytes once, in place, into
 * room reserved for exactly the total.  No copy, no back-patching, and the
 * walk is written once, so the two passes cannot disagree about what is in a
 * message (the second checks that they did not). */
#include <stdlib.h>
#include <string.h>

#include "otlp.h"

/* ---- field numbers (opentelemetry-proto, opentelemetry/proto/...) --------------------- */

/* collector/logs/v1/logs_service.proto ExportLogsServiceRequest */
#define LOGS_REQ_RESOURCE_LOGS 1        /* repeated ResourceLogs resource_logs = 1 */
/* collector/trace/v1/trace_service.proto ExportTraceServiceRequest */
#define TRACE_REQ_RESOURCE_SPANS 1      /* repeated ResourceSpans resource_spans = 1 */

/* logs/v1/logs.proto ResourceLogs, ScopeLogs, LogRecord */
#define RLOGS_RESOURCE 1                /* Resource resource = 1 */
#define RLOGS_SCOPE_LOGS 2              /* repeated ScopeLogs scope_logs = 2 */
#define SLOGS_SCOPE 1                   /* InstrumentationScope scope = 1 */
#define SLOGS_LOG_RECORDS 2             /* repeated LogRecord log_records = 2 */
#define LOG_TIME 1                      /* fixed64 time_unix_nano = 1 */
#define LOG_OBSERVED_TIME 11            /* fixed64 observed_time_unix_nano = 11 */
#define LOG_SEVERITY_NUMBER 2           /* SeverityNumber severity_number = 2 */
#define LOG_SEVERITY_TEXT 3             /* string severity_text = 3 */
#define LOG_ATTRIBUTES 6                /* repeated KeyValue attributes = 6 */
#define LOG_FLAGS 8                     /* fixed32 flags = 8 */
#define LOG_TRACE_ID 9                  /* bytes trace_id = 9 */
#define LOG_SPAN_ID 10                  /* bytes span_id = 10 */
#define LOG_EVENT_NAME 12               /* string event_name = 12 */

/* trace/v1/trace.proto ResourceSpans, ScopeSpans, Span, Status */
#define RSPANS_RESOURCE 1               /* Resource resource = 1 */
#define RSPANS_SCOPE_SPANS 2            /* repeated ScopeSpans scope_spans = 2 */
#define SSPANS_SCOPE 1                  /* InstrumentationScope scope = 1 */
#define SSPANS_SPANS 2                  /* repeated Span spans = 2 */
#define SPAN_TRACE_ID 1                 /* bytes trace_id = 1 */
#define SPAN_SPAN_ID 2                  /* bytes span_id = 2 */
#define SPAN_PARENT_SPAN_ID 4           /* bytes parent_span_id = 4 */
#define SPAN_FLAGS 16                   /* fixed32 flags = 16 */
#define SPAN_NAME 5                     /* string name = 5 */
#define SPAN_KIND 6                     /* SpanKind kind = 6 */
#define SPAN_START_TIME 7               /* fixed64 start_time_unix_nano = 7 */
#define SPAN_END_TIME 8                 /* fixed64 end_time_unix_nano = 8 */
#define SPAN_ATTRIBUTES 9               /* repeated KeyValue attributes = 9 */
#define SPAN_STATUS 15                  /* Status status = 15 */
#define STATUS_MESSAGE 2                /* string message = 2 */
#define STATUS_CODE 3                   /* StatusCode code = 3 */
#define SPAN_KIND_INTERNAL 1            /* SpanKind SPAN_KIND_INTERNAL = 1 */
#define STATUS_CODE_ERROR 2             /* StatusCode STATUS_CODE_ERROR = 2 */

/* resource/v1/resource.proto Resource */
#define RESOURCE_ATTRIBUTES 1           /* repeated KeyValue attributes = 1 */

/* common/v1/common.proto InstrumentationScope, KeyValue, AnyValue, ArrayValue */
#define SCOPE_NAME 1                    /* string name = 1 */
#define KV_KEY 1                        /* string key = 1 */
#define KV_VALUE 2                      /* AnyValue value = 2 */
#define ANY_STRING 1                    /* oneof value: string string_value = 1 */
#define ANY_INT 3                       /* oneof value: int64 int_value = 3 */
#define ANY_ARRAY 5                     /* oneof value: ArrayValue array_value = 5 */
#define ARRAY_VALUES 1                  /* repeated AnyValue values = 1 */

/* wire types (protobuf encoding: "Message Structure") */
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2
#define WT_I32 5

#define PB_DEPTH 8                      /* the deepest nesting here is 6 */

struct pb {
	uint8_t *out;                   /* NULL: the sizing pass */
	size_t pos;                     /* bytes so far */
	size_t *len;                    /* each message's length, in the order they open */
	size_t n_len, cap_len, next;
	size_t open[PB_DEPTH];          /* sizing: the slot; writing: the end expected */
	size_t depth;
	bool bad;                       /* out of memory, or the passes disagreed */
};

static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_raw(struct pb *e, const void *p, size_t n)
{
	if (e->out != NULL)
		memcpy(e->out + e->pos, p, n);
	e->pos += n;
}

static void put_varint(struct pb *e, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	put_raw(e, tmp, n);
}

static void put_tag(struct pb *e, unsigned field, unsigned wt)
{
	put_varint(e, (uint64_t)field << 3 | wt);
}

static void put_fixed64(struct pb *e, unsigned field, uint64_t v)
{
	uint8_t tmp[8];
	if (v == 0)
		return;
	for (int i = 0; i < 8; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	put_tag(e, field, WT_I64);
	put_raw(e, tmp, 8);
}

static void put_fixed32(struct pb *e, unsigned field, uint32_t v)
{
	uint8_t tmp[4];
	if (v == 0)
		return;
	for (int i = 0; i < 4; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	put_tag(e, field, WT_I32);
	put_raw(e, tmp, 4);
}

/* An enum or int32: negative values are sign-extended to ten bytes. */
static void put_int(struct pb *e, unsigned field, int64_t v)
{
	if (v == 0)
		return;
	put_tag(e, field, WT_VARINT);
	put_varint(e, (uint64_t)v);
}

static void put_bytes(struct pb *e, unsigned field, const void *p, size_t n)
{
	put_tag(e, field, WT_LEN);
	put_varint(e, n);
	put_raw(e, p, n);
}

/* A string or bytes field; empty is the default and left out. */
static void put_str(struct pb *e, unsigned field, const char *s)
{
	if (s != NULL && *s != '\0')
		put_bytes(e, field, s, strlen(s));
}

/* A nested message: open, its fields, close. */
static void msg_open(struct pb *e, unsigned field)
{
	if (e->depth == PB_DEPTH) {
		e->bad = true;
		return;
	}
	put_tag(e, field, WT_LEN);
	if (e->out == NULL) {
		if (e->n_len == e->cap_len) {
			size_t cap = e->cap_len ? 2 * e->cap_len : 256;
			size_t *p = realloc(e->len, cap * sizeof(*p));
			if (p == NULL) {
				e->bad = true;
				e->open[e->depth++] = 0;
				return;
			}
			e->len = p;
			e->cap_len = cap;
		}
		e->len[e->n_len] = e->pos;      /* where its content starts */
		e->open[e->depth++] = e->n_len++;
		return;
	}
	size_t n = e->next < e->n_len ? e->len[e->next++] : 0;
	put_varint(e, n);
	e->open[e->depth++] = e->pos + n;
}

static void msg_close(struct pb *e)
{
	if (e->depth == 0) {
		e->bad = true;
		return;
	}
	size_t slot = e->open[--e->depth];
	if (e->bad)
		return;
	if (e->out == NULL) {
		size_t n = e->pos - e->len[slot];
		e->len[slot] = n;
		e->pos += varint_size(n);       /* the length, written before the content */
	} else if (e->pos != slot) {
		e->bad = true;                  /* the passes disagreed: a bug, caught */
	}
}

/* ---- the messages ------------------------------------------------------------------ */

static void put_string_value(struct pb *e, unsigned field, const char *s)
{
	msg_open(e, field);                     /* AnyValue */
	put_bytes(e, ANY_STRING, s, strlen(s)); /* a oneof member: written even when "" */
	msg_close(e);
}

static void put_kv_str(struct pb *e, unsigned field, const char *key, const char *value)
{
	msg_open(e, field);                     /* KeyValue */
	put_str(e, KV_KEY, key);
	put_string_value(e, KV_VALUE, value);
	msg_close(e);
}

static void put_attr(struct pb *e, unsigned field, const struct tm_attr *a)
{
	msg_open(e, field);                     /* KeyValue */
	put_str(e, KV_KEY, a->key);
	switch (a->kind) {
	case TM_STR:
		put_string_value(e, KV_VALUE, a->s);
		break;
	case TM_INT:
		msg_open(e, KV_VALUE);          /* AnyValue */
		put_tag(e, ANY_INT, WT_VARINT); /* a oneof member: written even when 0 */
		put_varint(e, (uint64_t)a->i);
		msg_close(e);
		break;
	case TM_STRS:
		msg_open(e, KV_VALUE);          /* AnyValue */
		msg_open(e, ANY_ARRAY);         /* ArrayValue */
		for (size_t k = 0; k < a->n; k++)
			put_string_value(e, ARRAY_VALUES, a->v[k]);
		msg_close(e);
		msg_close(e);
		break;
	}
	msg_close(e);
}

/* The record's attributes; the log record's start with the parent key. */
static void put_attrs(struct pb *e, unsigned field, const struct tm_rec *r, bool parent_key)
{
	if (parent_key && r->trace.has_parent) {
		static const char hex[] = "0123456789abcdef";
		char h[17];
		for (int i = 0; i < 8; i++) {
			h[2 * i] = hex[r->trace.parent_id[i] >> 4];
			h[2 * i + 1] = hex[r->trace.parent_id[i] & 15];
		}
		h[16] = '\0';
		put_kv_str(e, field, "strands.box.trace.parent_span_id", h);
	}
	for (size_t i = 0; i < r->n_attrs; i++)
		put_attr(e, field, &r->attrs[i]);
}

static void put_resource(struct pb *e, unsigned field, const struct tm_resource *res)
{
	msg_open(e, field);                     /* Resource */
	for (size_t i = 0; i < res->n; i++)
		put_kv_str(e, RESOURCE_ATTRIBUTES, res->kv[i].key, res->kv[i].value);
	msg_close(e);
}

static void put_scope(struct pb *e, unsigned field, enum tm_scope s)
{
	msg_open(e, field);                     /* InstrumentationScope */
	put_str(e, SCOPE_NAME, tm_scope_name(s));
	msg_close(e);
}

static void put_log(struct pb *e, const struct tm_rec *r)
{
	msg_open(e, SLOGS_LOG_RECORDS);         /* LogRecord */
	put_fixed64(e, LOG_TIME, (uint64_t)r->time_ns);
	put_fixed64(e, LOG_OBSERVED_TIME, (uint64_t)r->observed_ns);
	put_int(e, LOG_SEVERITY_NUMBER, r->severity);
	put_str(e, LOG_SEVERITY_TEXT, r->text);
	put_attrs(e, LOG_ATTRIBUTES, r, true);
	put_fixed32(e, LOG_FLAGS, r->flags);
	put_bytes(e, LOG_TRACE_ID, r->trace.trace_id, 16);
	put_bytes(e, LOG_SPAN_ID, r->trace.span_id, 8);
	put_str(e, LOG_EVENT_NAME, r->event_name);
	msg_close(e);
}

static void put_span(struct pb *e, const struct tm_rec *r)
{
	msg_open(e, SSPANS_SPANS);              /* Span */
	put_bytes(e, SPAN_TRACE_ID, r->trace.trace_id, 16);
	put_bytes(e, SPAN_SPAN_ID, r->trace.span_id, 8);
	if (r->trace.has_parent)
		put_bytes(e, SPAN_PARENT_SPAN_ID, r->trace.parent_id, 8);
	put_fixed32(e, SPAN_FLAGS, r->span_flags);
	put_str(e, SPAN_NAME, r->span_name);
	put_int(e, SPAN_KIND, SPAN_KIND_INTERNAL);
	put_fixed64(e, SPAN_START_TIME, (uint64_t)r->time_ns);
	put_fixed64(e, SPAN_END_TIME, (uint64_t)r->time_ns);
	put_attrs(e, SPAN_ATTRIBUTES, r, false);
	if (r->status != NULL) {
		msg_open(e, SPAN_STATUS);       /* Status */
		put_str(e, STATUS_MESSAGE, r->status);
		put_int(e, STATUS_CODE, STATUS_CODE_ERROR);
		msg_close(e);
	}
	msg_close(e);
}

/* The scopes of v in the order they first appear (as otlp_json.c groups). */
static size_t scope_order(struct tm_rec *const *v, size_t n, bool spans, enum tm_scope out[3])
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < 3; i++) {
		if (spans && !v[i]->span)
			continue;
		size_t j = 0;
		while (j < k && out[j] != v[i]->scope)
			j++;
		if (j == k)
			out[k++] = v[i]->scope;
	}
	return k;
}

/* One walk of the request: ExportLogsServiceRequest { ResourceLogs { Resource,
 * ScopeLogs { scope, LogRecord... }... } }, or the traces' likewise. */
static void walk(struct pb *e, const struct tm_resource *res, struct tm_rec *const *v, size_t n,
		 bool spans, const enum tm_scope *order, size_t k)
{
	msg_open(e, spans ? TRACE_REQ_RESOURCE_SPANS : LOGS_REQ_RESOURCE_LOGS);
	put_resource(e, spans ? RSPANS_RESOURCE : RLOGS_RESOURCE, res);
	for (size_t s = 0; s < k; s++) {
		msg_open(e, spans ? RSPANS_SCOPE_SPANS : RLOGS_SCOPE_LOGS);
		put_scope(e, spans ? SSPANS_SCOPE : SLOGS_SCOPE, order[s]);
		for (size_t i = 0; i < n; i++) {
			if (v[i]->scope != order[s] || (spans && !v[i]->span))
				continue;
			if (spans)
				put_span(e, v[i]);
			else
				put_log(e, v[i]);
		}
		msg_close(e);
	}
	msg_close(e);
}

static void put_request(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
			size_t n, bool spans)
{
	enum tm_scope order[3];
	size_t k = scope_order(v, n, spans, order);
	struct pb e = { 0 };
	if (k == 0 || b->oom)
		return;
	walk(&e, res, v, n, spans, order, k);
	size_t total = e.pos;
	uint8_t *out = e.bad ? NULL : tm_buf_room(b, total);
	if (out != NULL) {
		e.out = out;
		e.pos = 0;
		e.depth = 0;
		walk(&e, res, v, n, spans, order, k);
		if (!e.bad && e.pos == total && e.depth == 0)
			b->n += total;
		else
			b->oom = true;          /* never expected: the two walks are one code */
	} else {
		b->oom = true;
	}
	free(e.len);
}

void tm_pb_logs(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		size_t n)
{
	put_request(b, res, v, n, false);
}

void tm_pb_spans(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		 size_t n)
{
	put_request(b, res, v, n, true);
}
