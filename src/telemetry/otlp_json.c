/* otlp_json.c - OTLP/JSON as Box's serializer writes it (otlp.h; docs/records.md
 * "Encoding"): opentelemetry-proto's serde form, field order included, so a
 * line of cairn's and a line of Box's differ only in ids, times and values. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"

/* Which bytes need an escape: '"', '\\' and the C0 controls. */
static const unsigned char needs_escape[256] = {
	[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1,
};

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether any of w's eight bytes needs an escape: one below 0x20, a '"' or a
 * '\\' (the has-less-than and has-zero-byte tests; exact as a yes or no). */
static inline bool word_needs_escape(uint64_t w)
{
	uint64_t ctl = (w - ONES * 0x20) & ~w;
	uint64_t q = w ^ (ONES * '"'), bs = w ^ (ONES * '\\');
	return ((ctl | ((q - ONES) & ~q) | ((bs - ONES) & ~bs)) & HIGHS) != 0;
}

/* The first byte of [p, end) that needs an escape, or end.  A record's
 * strings rarely hold one, so they are passed eight bytes at a time
 * (docs/records.md "What records cost"). */
static const unsigned char *clean_run(const unsigned char *p, const unsigned char *end)
{
	while (end - p >= 8) {
		uint64_t w;
		memcpy(&w, p, sizeof(w));
		if (word_needs_escape(w))
			break;
		p += 8;
	}
	while (p < end && !needs_escape[*p])
		p++;
	return p;
}

void tm_json_str(struct tm_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s), *run = p;
	tm_buf_putc(b, '"');
	for (;; p++) {
		p = clean_run(p, end);
		tm_buf_put(b, run, (size_t)(p - run));
		if (p == end)
			break;
		const char *esc = NULL;
		switch (*p) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		}
		if (esc != NULL) {
			tm_buf_put(b, esc, 2);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
			tm_buf_put(b, u, sizeof(u));
		}
		run = p + 1;
	}
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
	static const char pairs[] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	char tmp[24];
	size_t n = sizeof(tmp);
	if (quoted)
		tmp[--n] = '"';
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		tmp[--n] = pairs[d + 1];
		tmp[--n] = pairs[d];
	}
	if (v >= 10) {
		tmp[--n] = pairs[v * 2 + 1];
		tmp[--n] = pairs[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	if (quoted)
		tmp[--n] = '"';
	tm_buf_put(b, tmp + n, sizeof(tmp) - n);
}

static void put_strval(struct tm_buf *b, const char *s)
{
	tm_buf_puts(b, "{\"stringValue\":");
	tm_json_str(b, s);
	tm_buf_putc(b, '}');
}

/* A batch's records' attribute lists, each encoded once for both its log
 * record and its span (the lists differ only by the log's parent key). */
struct attr_cache {
	struct tm_buf text;
	size_t *off, *len;              /* per record of the batch, by index */
};

/* An attribute's key and the opening of its value.  A key is one of
 * record.c's static names, which need no escape (record.h), so it is copied
 * as it is: escaping each key of every record was a sixth of the writer's
 * encoding (docs/records.md "What records cost"). */
static void put_key(struct tm_buf *b, const char *key, const char *open, size_t open_len)
{
	static const char head[] = "{\"key\":\"", mid[] = "\",\"value\":";
	const size_t hn = sizeof(head) - 1, mn = sizeof(mid) - 1, k = strlen(key);
	uint8_t *d = tm_buf_room(b, hn + k + mn + open_len);
	if (d == NULL)
		return;
	memcpy(d, head, hn);
	memcpy(d + hn, key, k);
	memcpy(d + hn + k, mid, mn);
	memcpy(d + hn + k + mn, open, open_len);
	b->n += hn + k + mn + open_len;
}

#define PUT_KEY(b, key, open) put_key(b, key, open, sizeof(open) - 1)

/* The record's attributes without the parent key, comma-separated. */
static void put_attr_items(struct tm_buf *b, const struct tm_rec *r)
{
	for (size_t i = 0; i < r->n_attrs; i++) {
		const struct tm_attr *a = &r->attrs[i];
		if (i > 0)
			tm_buf_putc(b, ',');
		switch (a->kind) {
		case TM_STR:
			PUT_KEY(b, a->key, "{\"stringValue\":");
			tm_json_str(b, a->s);
			tm_buf_putc(b, '}');
			break;
		case TM_INT:
			PUT_KEY(b, a->key, "{\"intValue\":");
			if (a->i < 0) {
				tm_buf_puts(b, "\"-");
				put_u64(b, (uint64_t)0 - (uint64_t)a->i, false);
				tm_buf_putc(b, '"');
			} else {
				put_u64(b, (uint64_t)a->i, true);
			}
			tm_buf_putc(b, '}');
			break;
		case TM_STRS:
			PUT_KEY(b, a->key, "{\"arrayValue\":{\"values\":[");
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
}

static void put_attrs(struct tm_buf *b, const struct tm_rec *r, bool parent_key,
		      const struct attr_cache *c, size_t idx)
{
	tm_buf_puts(b, "\"attributes\":[");
	if (parent_key && r->trace.has_parent) {
		tm_buf_puts(b, "{\"key\":\"strands.box.trace.parent_span_id\",\"value\":{"
			       "\"stringValue\":");
		put_hex(b, r->trace.parent_id, 8);
		tm_buf_puts(b, "}}");
		if (r->n_attrs > 0)
			tm_buf_putc(b, ',');
	}
	if (c != NULL)
		tm_buf_put(b, c->text.p + c->off[idx], c->len[idx]);
	else
		put_attr_items(b, r);
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

static void put_log(struct tm_buf *b, const struct tm_rec *r, const struct attr_cache *c,
		    size_t idx)
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
	put_attrs(b, r, true, c, idx);
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

static void put_span(struct tm_buf *b, const struct tm_rec *r, const struct attr_cache *c,
		     size_t idx)
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
	size_t at = b->n;
	put_u64(b, (uint64_t)r->time_ns, true);
	size_t len = b->n - at;
	tm_buf_puts(b, ",\"endTimeUnixNano\":");
	uint8_t *d = tm_buf_room(b, len);       /* the same time: its digits again */
	if (d != NULL) {
		memcpy(d, b->p + at, len);
		b->n += len;
	}
	tm_buf_putc(b, ',');
	put_attrs(b, r, false, c, idx);
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
			size_t n, bool spans, const struct attr_cache *c)
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
				put_span(b, v[i], c, i);
			else
				put_log(b, v[i], c, i);
		}
		tm_buf_puts(b, "],\"schemaUrl\":\"\"}");
	}
	tm_buf_puts(b, "],\"schemaUrl\":\"\"}]}\n");
}

void tm_json_logs(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		  size_t n)
{
	put_request(b, res, v, n, false, NULL);
}

void tm_json_spans(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		   size_t n)
{
	put_request(b, res, v, n, true, NULL);
}

void tm_json_batch(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		   size_t n)
{
	struct attr_cache c = { .off = malloc(n * sizeof(size_t)),
				.len = malloc(n * sizeof(size_t)) };
	if (c.off == NULL || c.len == NULL) {
		free(c.off);
		free(c.len);
		tm_json_logs(b, res, v, n);
		tm_json_spans(b, res, v, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		c.off[i] = c.text.n;
		put_attr_items(&c.text, v[i]);
		c.len[i] = c.text.n - c.off[i];
	}
	if (c.text.oom) {
		b->oom = true;
	} else {
		put_request(b, res, v, n, false, &c);
		put_request(b, res, v, n, true, &c);
	}
	tm_buf_free(&c.text);
	free(c.off);
	free(c.len);
}
