/* otlp_json.c - OTLP/JSON as Box's serializer writes it (otlp.h; docs/records.md
 * "Encoding"): opentelemetry-proto's serde form, field order included, so a
 * line of cairn's and a line of Box's differ only in ids, times and values. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "otlp.h"

void tm_json_str(struct tm_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	tm_buf_putc(b, '"');
	const char *run = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c >= 0x20)
				continue;
		}
		tm_buf_put(b, run, (size_t)(p - run));
		if (esc != NULL) {
			tm_buf_puts(b, esc);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			tm_buf_put(b, u, sizeof(u));
		}
		run = p + 1;
	}
	tm_buf_puts(b, run);
	tm_buf_putc(b, '"');
}

static void put_hex(struct tm_buf *b, const uint8_t *id, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t *d = tm_buf_room(b, 2 * n + 2);
	if (d == NULL)
		return;
	*d++ = '"';
	for (size_t i = 0; i < n; i++) {
		*d++ = (uint8_t)hex[id[i] >> 4];
		*d++ = (uint8_t)hex[id[i] & 15];
	}
	*d = '"';
	b->n += 2 * n + 2;
}

static void put_u64(struct tm_buf *b, uint64_t v, bool quoted)
{
	char tmp[24];
	int k = snprintf(tmp, sizeof(tmp), quoted ? "\"%" PRIu64 "\"" : "%" PRIu64, v);
	tm_buf_put(b, tmp, (size_t)k);
}

static void put_strval(struct tm_buf *b, const char *s)
{
	tm_buf_puts(b, "{\"stringValue\":");
	tm_json_str(b, s);
	tm_buf_putc(b, '}');
}

static void put_attrs(struct tm_buf *b, const struct tm_rec *r, bool parent_key)
{
	bool first = true;
	tm_buf_puts(b, "\"attributes\":[");
	if (parent_key && r->trace.has_parent) {
		tm_buf_puts(b, "{\"key\":\"strands.box.trace.parent_span_id\",\"value\":{"
			       "\"stringValue\":");
		put_hex(b, r->trace.parent_id, 8);
		tm_buf_puts(b, "}}");
		first = false;
	}
	for (size_t i = 0; i < r->n_attrs; i++) {
		const struct tm_attr *a = &r->attrs[i];
		if (!first)
			tm_buf_putc(b, ',');
		first = false;
		tm_buf_puts(b, "{\"key\":");
		tm_json_str(b, a->key);
		tm_buf_puts(b, ",\"value\":");
		switch (a->kind) {
		case TM_STR:
			put_strval(b, a->s);
			break;
		case TM_INT: {
			char tmp[32];
			int k = snprintf(tmp, sizeof(tmp), "{\"intValue\":\"%" PRId64 "\"}", a->i);
			tm_buf_put(b, tmp, (size_t)k);
			break;
		}
		case TM_STRS:
			tm_buf_puts(b, "{\"arrayValue\":{\"values\":[");
			for (size_t k = 0; k < a->n; k++) {
				if (k)
					tm_buf_putc(b, ',');
				put_strval(b, a->v[k]);
			}
			tm_buf_puts(b, "]}}");
			break;
		}
		tm_buf_putc(b, '}');
	}
	tm_buf_putc(b, ']');
}

static void put_resource(struct tm_buf *b, const struct tm_resource *res)
{
	tm_buf_puts(b, "{\"resource\":{\"attributes\":[");
	for (size_t i = 0; i < res->n; i++) {
		if (i)
			tm_buf_putc(b, ',');
		tm_buf_puts(b, "{\"key\":");
		tm_json_str(b, res->kv[i].key);
		tm_buf_puts(b, ",\"value\":");
		put_strval(b, res->kv[i].value);
		tm_buf_putc(b, '}');
	}
	tm_buf_puts(b, "],\"droppedAttributesCount\":0},");
}

static void put_scope(struct tm_buf *b, enum tm_scope s)
{
	tm_buf_puts(b, "{\"scope\":{\"name\":\"");
	tm_buf_puts(b, tm_scope_name(s));
	tm_buf_puts(b, "\",\"version\":\"\",\"attributes\":[],\"droppedAttributesCount\":0},");
}

static void put_log(struct tm_buf *b, const struct tm_rec *r)
{
	tm_buf_puts(b, "{\"timeUnixNano\":");
	put_u64(b, (uint64_t)r->time_ns, true);
	tm_buf_puts(b, ",\"observedTimeUnixNano\":");
	put_u64(b, (uint64_t)r->observed_ns, true);
	tm_buf_puts(b, ",\"severityNumber\":");
	put_u64(b, (uint64_t)r->severity, false);
	tm_buf_puts(b, ",\"severityText\":");
	tm_json_str(b, r->text);
	tm_buf_puts(b, ",\"body\":null,");
	put_attrs(b, r, true);
	tm_buf_puts(b, ",\"droppedAttributesCount\":0,\"flags\":");
	put_u64(b, r->flags, false);
	tm_buf_puts(b, ",\"traceId\":");
	put_hex(b, r->trace.trace_id, 16);
	tm_buf_puts(b, ",\"spanId\":");
	put_hex(b, r->trace.span_id, 8);
	tm_buf_puts(b, ",\"eventName\":");
	tm_json_str(b, r->event_name ? r->event_name : "");
	tm_buf_putc(b, '}');
}

static void put_span(struct tm_buf *b, const struct tm_rec *r)
{
	tm_buf_puts(b, "{\"traceId\":");
	put_hex(b, r->trace.trace_id, 16);
	tm_buf_puts(b, ",\"spanId\":");
	put_hex(b, r->trace.span_id, 8);
	tm_buf_puts(b, ",\"traceState\":\"\",\"parentSpanId\":");
	if (r->trace.has_parent)
		put_hex(b, r->trace.parent_id, 8);
	else
		tm_buf_puts(b, "\"\"");
	tm_buf_puts(b, ",\"flags\":");
	put_u64(b, r->span_flags, false);
	tm_buf_puts(b, ",\"name\":");
	tm_json_str(b, r->span_name);
	tm_buf_puts(b, ",\"kind\":1,\"startTimeUnixNano\":");
	put_u64(b, (uint64_t)r->time_ns, true);
	tm_buf_puts(b, ",\"endTimeUnixNano\":");
	put_u64(b, (uint64_t)r->time_ns, true);
	tm_buf_putc(b, ',');
	put_attrs(b, r, false);
	tm_buf_puts(b, ",\"droppedAttributesCount\":0,\"events\":[],\"droppedEventsCount\":0,"
		       "\"links\":[],\"droppedLinksCount\":0,\"status\":");
	if (r->status != NULL) {
		tm_buf_puts(b, "{\"message\":");
		tm_json_str(b, r->status);
		tm_buf_puts(b, ",\"code\":2}");
	} else {
		tm_buf_puts(b, "null");
	}
	tm_buf_putc(b, '}');
}

/* The scopes of v in the order they first appear. */
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

static void put_request(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
			size_t n, bool spans)
{
	enum tm_scope order[3];
	size_t k = scope_order(v, n, spans, order);
	if (k == 0)
		return;
	tm_buf_puts(b, spans ? "{\"resourceSpans\":[" : "{\"resourceLogs\":[");
	put_resource(b, res);
	tm_buf_puts(b, spans ? "\"scopeSpans\":[" : "\"scopeLogs\":[");
	for (size_t s = 0; s < k; s++) {
		if (s)
			tm_buf_putc(b, ',');
		put_scope(b, order[s]);
		tm_buf_puts(b, spans ? "\"spans\":[" : "\"logRecords\":[");
		bool first = true;
		for (size_t i = 0; i < n; i++) {
			if (v[i]->scope != order[s] || (spans && !v[i]->span))
				continue;
			if (!first)
				tm_buf_putc(b, ',');
			first = false;
			if (spans)
				put_span(b, v[i]);
			else
				put_log(b, v[i]);
		}
		tm_buf_puts(b, "],\"schemaUrl\":\"\"}");
	}
	tm_buf_puts(b, "],\"schemaUrl\":\"\"}]}\n");
}

void tm_json_logs(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		  size_t n)
{
	put_request(b, res, v, n, false);
}

void tm_json_spans(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		   size_t n)
{
	put_request(b, res, v, n, true);
}
