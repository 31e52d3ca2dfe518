/* event_codec.c - the binary encoding of an event (see event_codec.h).
 *
 * Layout, little-endian throughout (str = u32 length + bytes):
 *
 *   u8  version (1: the event alone; 2: the event, then its annotation)
 *   i64 ts                      u32 line
 *   u8  flags                   bit 0 principal, bit 1 resource, bit 2 context
 *   str ns, action, kind
 *   str principal type, id      only with bit 0
 *   str resource type, id       only with bit 1
 *   val context                 a record (empty when the event has none)
 *   val logged                  a record
 *   u32 n_entities, then each:  str type, id; val attrs (a record);
 *                               u32 n_parents, then str type, id each
 *   version 2 only, the annotation (event.h):
 *   u8  parts                   bit 0 decision, bit 1 reason, bit 2 description,
 *                               bit 3 note; never 0; reason and description
 *                               only with a decision
 *   u8  cause, u32 n_ids, n_ids × str id          only with bit 0
 *   str reason, str description, str note         each only with its bit
 *
 *   val = u8 tag (enum dw_tv_kind), then
 *         NULL: -   BOOL: u8 0|1   INT: i64   DECIMAL, STRING: str
 *         ENTITY: str type, str id   ARRAY: u32 n, n vals
 *         RECORD: u32 n, n × (str key, val), keys strictly increasing
 *
 * A decimal's canonical value is not stored: decode recomputes it from the
 * text, so a damaged number cannot disagree with its spelling.  Encoding
 * refuses what decoding would refuse, so every encoding decodes.
 *
 * An event without an annotation is written as version 1, so each event still
 * has one spelling (a version 2 record with nothing after the event is
 * refused), and the histories written before annotations existed read as they
 * always did.  A present string of the annotation is never empty, a note is
 * UTF-8 of at most DW_NOTE_MAX bytes, and the decision is consistent: a
 * permitted or forbidden one names a rule, a no-match none, a permit has no
 * reason, a description needs a permitting or forbidding rule. */
#include "event_codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value.h"

#define EC_VERSION 1          /* the event alone */
#define EC_VERSION_ANNOT 2    /* the event, then its annotation */

#define EC_AN_DECISION    0x01u
#define EC_AN_REASON      0x02u
#define EC_AN_DESCRIPTION 0x04u
#define EC_AN_NOTE        0x08u
#define EC_AN_KNOWN       0x0fu

#define EC_HAS_PRINCIPAL 0x01u
#define EC_HAS_RESOURCE  0x02u
#define EC_HAS_CONTEXT   0x04u
#define EC_FLAGS_KNOWN   0x07u

/* --- encoding ---------------------------------------------------------------------- */

static int put_u8(struct dw_buf *b, uint8_t v)
{
	return dw_buf_putc(b, (char)v);
}

static int put_u32(struct dw_buf *b, uint32_t v)
{
	char o[4];

	for (int k = 0; k < 4; k++)
		o[k] = (char)(v >> (8 * k));
	return dw_buf_put(b, o, sizeof o);
}

static int put_i64(struct dw_buf *b, int64_t v)
{
	uint64_t u = (uint64_t)v;
	char o[8];

	for (int k = 0; k < 8; k++)
		o[k] = (char)(u >> (8 * k));
	return dw_buf_put(b, o, sizeof o);
}

static int put_str(struct dw_buf *b, struct dw_str s)
{
	int r = put_u32(b, s.n);

	return r ? r : dw_buf_put(b, s.p, s.n);
}

static bool key_ok(struct dw_str k)
{
	size_t bad;

	return dw_utf8_valid(k.p, k.n, &bad);
}

static int put_val(struct dw_buf *b, const struct dw_tval *v, unsigned depth);

/* A record's count and fields, the values at depth. */
static int put_fields(struct dw_buf *b, const struct dw_tval *v, unsigned depth)
{
	int r = put_u32(b, v->n);

	for (uint32_t i = 0; r == 0 && i < v->n; i++) {
		struct dw_str k = v->fields[i].key;

		/* a record that is not canonical would not decode */
		if (!key_ok(k) || (i > 0 && dw_str_cmp(v->fields[i - 1].key, k) >= 0))
			return -EINVAL;
		if ((r = put_str(b, k)) == 0)
			r = put_val(b, &v->fields[i].val, depth);
	}
	return r;
}

static int put_val(struct dw_buf *b, const struct dw_tval *v, unsigned depth)
{
	int r;

	if (depth > DW_CODEC_MAX_DEPTH)
		return -EINVAL;
	switch (v->kind) {
	case DW_TV_NULL:
		return put_u8(b, DW_TV_NULL);
	case DW_TV_BOOL:
		r = put_u8(b, DW_TV_BOOL);
		return r ? r : put_u8(b, v->b ? 1 : 0);
	case DW_TV_INT:
		r = put_u8(b, DW_TV_INT);
		return r ? r : put_i64(b, v->i);
	case DW_TV_DECIMAL:
	case DW_TV_STRING:
		r = put_u8(b, v->kind);
		return r ? r : put_str(b, v->s);
	case DW_TV_ENTITY:
		r = put_u8(b, DW_TV_ENTITY);
		if (r == 0)
			r = put_str(b, v->type);
		return r ? r : put_str(b, v->s);
	case DW_TV_ARRAY:
		if ((r = put_u8(b, DW_TV_ARRAY)) != 0 || (r = put_u32(b, v->n)) != 0)
			return r;
		for (uint32_t i = 0; i < v->n; i++)
			if ((r = put_val(b, &v->items[i], depth + 1)) != 0)
				return r;
		return 0;
	case DW_TV_RECORD:
		r = put_u8(b, DW_TV_RECORD);
		return r ? r : put_fields(b, v, depth + 1);
	}
	return -EINVAL;
}

/* The records of an event: a zeroed value (kind 0) is the empty record.  Their
 * fields are at depth 0, as the trace parser counts, so whatever a trace line
 * holds encodes. */
static int put_record(struct dw_buf *b, const struct dw_tval *v)
{
	static const struct dw_tval empty = { .kind = DW_TV_RECORD };
	int r;

	if (v->kind == 0)
		v = &empty;
	if (v->kind != DW_TV_RECORD)
		return -EINVAL;
	r = put_u8(b, DW_TV_RECORD);
	return r ? r : put_fields(b, v, 0);
}

/* What makes an annotation one that decoding refuses, or NULL (see the top of
 * this file).  Shared by both directions, so every encoding decodes. */
static const char *annot_problem(const struct dw_event_annot *an)
{
	size_t bad;

	if (!an->has_decision) {
		if (an->n_ids != 0 || an->reason.n != 0 || an->description.n != 0)
			return "a reason, description or rule id without a decision";
		if (an->note.n == 0)
			return "an annotation with neither a decision nor a note";
	} else {
		if (an->cause >= DW_AC_COUNT)
			return "unknown cause";
		if (an->cause == DW_AC_PERMITTED && an->reason.n != 0)
			return "a denial reason on a permit";
		if ((an->cause == DW_AC_PERMITTED || an->cause == DW_AC_FORBIDDEN) && an->n_ids == 0)
			return "a permit or forbid with no determining rule";
		if (an->cause == DW_AC_NO_MATCH && an->n_ids != 0)
			return "determining rules on a no-match";
		if (an->description.n != 0 && an->cause != DW_AC_PERMITTED &&
		    an->cause != DW_AC_FORBIDDEN)
			return "a description without a permitting or forbidding rule";
		for (uint32_t i = 0; i < an->n_ids; i++)
			if (an->ids[i].n == 0)
				return "an empty rule id";
	}
	if (an->note.n > DW_NOTE_MAX)
		return "a note longer than 1024 bytes";
	if (!dw_utf8_valid(an->note.p, an->note.n, &bad))
		return "a note that is not UTF-8";
	return NULL;
}

static int put_annot(struct dw_buf *b, const struct dw_event_annot *an)
{
	uint8_t parts = (an->has_decision ? EC_AN_DECISION : 0) |
			(an->reason.n != 0 ? EC_AN_REASON : 0) |
			(an->description.n != 0 ? EC_AN_DESCRIPTION : 0) |
			(an->note.n != 0 ? EC_AN_NOTE : 0);
	int r;

	if (annot_problem(an) != NULL)
		return -EINVAL;
	if ((r = put_u8(b, parts)) != 0)
		return r;
	if (an->has_decision) {
		if ((r = put_u8(b, an->cause)) != 0 || (r = put_u32(b, an->n_ids)) != 0)
			return r;
		for (uint32_t i = 0; i < an->n_ids; i++)
			if ((r = put_str(b, an->ids[i])) != 0)
				return r;
	}
	if ((parts & EC_AN_REASON) && (r = put_str(b, an->reason)) != 0)
		return r;
	if ((parts & EC_AN_DESCRIPTION) && (r = put_str(b, an->description)) != 0)
		return r;
	if ((parts & EC_AN_NOTE) && (r = put_str(b, an->note)) != 0)
		return r;
	return 0;
}

static int encode(struct dw_buf *b, const struct dw_event *ev)
{
	uint8_t flags = (ev->has_principal ? EC_HAS_PRINCIPAL : 0) |
			(ev->has_resource ? EC_HAS_RESOURCE : 0) |
			(ev->has_context ? EC_HAS_CONTEXT : 0);
	int r;

	if ((r = put_u8(b, ev->annot != NULL ? EC_VERSION_ANNOT : EC_VERSION)) != 0 ||
	    (r = put_i64(b, ev->ts)) != 0 ||
	    (r = put_u32(b, ev->line)) != 0 || (r = put_u8(b, flags)) != 0 ||
	    (r = put_str(b, ev->ns)) != 0 || (r = put_str(b, ev->action)) != 0 ||
	    (r = put_str(b, ev->kind)) != 0)
		return r;
	if (ev->has_principal &&
	    ((r = put_str(b, ev->principal_type)) != 0 || (r = put_str(b, ev->principal_id)) != 0))
		return r;
	if (ev->has_resource &&
	    ((r = put_str(b, ev->resource_type)) != 0 || (r = put_str(b, ev->resource_id)) != 0))
		return r;
	if ((r = put_record(b, &ev->context)) != 0 || (r = put_record(b, &ev->logged)) != 0 ||
	    (r = put_u32(b, ev->n_entities)) != 0)
		return r;
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		const struct dw_event_entity *e = &ev->entities[i];

		if ((r = put_str(b, e->type)) != 0 || (r = put_str(b, e->id)) != 0 ||
		    (r = put_record(b, &e->attrs)) != 0 || (r = put_u32(b, e->n_parents)) != 0)
			return r;
		for (uint32_t k = 0; k < e->n_parents; k++)
			if ((r = put_str(b, e->parent_types[k])) != 0 ||
			    (r = put_str(b, e->parent_ids[k])) != 0)
				return r;
	}
	return ev->annot != NULL ? put_annot(b, ev->annot) : 0;
}

int dw_event_encode(struct dw_buf *b, const struct dw_event *ev)
{
	size_t start = b->n;
	int r = encode(b, ev);

	if (r != 0 && b->p != NULL) {  /* no half-written event stays in b */
		b->n = start;
		b->p[start] = '\0';
	}
	return r;
}

int dw_event_encode_annot(struct dw_buf *b, size_t start, const struct dw_event_annot *an)
{
	size_t end = b->n;
	int r;

	if (start >= b->n || (unsigned char)b->p[start] != EC_VERSION)
		return -EINVAL;
	if ((r = put_annot(b, an)) != 0) {
		b->n = end;
		b->p[end] = '\0';
		return r;
	}
	b->p[start] = (char)EC_VERSION_ANNOT;
	return 0;
}

/* --- decoding ---------------------------------------------------------------------- */

struct dec {
	struct dw_arena *a;
	const unsigned char *p;
	size_t n, off;
	char *err;
	size_t errlen;
};

static int dec_fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int dec_fail(struct dec *d, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (d->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(d->err, d->errlen, "event record, offset %zu: %s", d->off, msg);
	return -EINVAL;
}

static int dec_oom(struct dec *d)
{
	if (d->errlen != 0)
		snprintf(d->err, d->errlen, "out of memory");
	return -ENOMEM;
}

static size_t dec_left(const struct dec *d)
{
	return d->n - d->off;
}

static int get_u8(struct dec *d, uint8_t *v)
{
	if (dec_left(d) < 1)
		return dec_fail(d, "truncated");
	*v = d->p[d->off++];
	return 0;
}

static int get_u32(struct dec *d, uint32_t *v)
{
	uint32_t x = 0;

	if (dec_left(d) < 4)
		return dec_fail(d, "truncated");
	for (int k = 0; k < 4; k++)
		x |= (uint32_t)d->p[d->off + (size_t)k] << (8 * k);
	d->off += 4;
	*v = x;
	return 0;
}

static int get_i64(struct dec *d, int64_t *v)
{
	uint64_t x = 0;

	if (dec_left(d) < 8)
		return dec_fail(d, "truncated");
	for (int k = 0; k < 8; k++)
		x |= (uint64_t)d->p[d->off + (size_t)k] << (8 * k);
	d->off += 8;
	*v = (int64_t)x;
	return 0;
}

/* A string, copied into the arena; the length is checked against what is
 * left before anything is allocated. */
static int get_str(struct dec *d, struct dw_str *out)
{
	uint32_t len = 0;
	char *s;
	int r;

	if ((r = get_u32(d, &len)) != 0)
		return r;
	if (len > dec_left(d))
		return dec_fail(d, "truncated (a string of %" PRIu32 " bytes)", len);
	if ((s = dw_arena_strndup(d->a, (const char *)d->p + d->off, len)) == NULL)
		return dec_oom(d);
	d->off += len;
	*out = dw_str_make(s, len);
	return 0;
}

/* A count of things each at least min bytes long: more than the rest of the
 * buffer could hold is damage, caught before the allocation it would size. */
static int get_count(struct dec *d, size_t min, const char *what, uint32_t *n)
{
	int r = get_u32(d, n);

	if (r == 0 && *n > dec_left(d) / min)
		return dec_fail(d, "truncated (%" PRIu32 " %s)", *n, what);
	return r;
}

static int get_val(struct dec *d, unsigned depth, struct dw_tval *out);

/* A record's count and fields (its tag already read), the values at depth. */
static int get_fields(struct dec *d, unsigned depth, struct dw_tval *out)
{
	struct dw_tfv *f = NULL;
	uint32_t n = 0;
	int r;

	if ((r = get_count(d, 5, "record fields", &n)) != 0)
		return r;
	if (n != 0 && (f = DW_NEWN(d->a, struct dw_tfv, n)) == NULL)
		return dec_oom(d);
	for (uint32_t i = 0; i < n; i++) {
		size_t bad, key_at = d->off;

		if ((r = get_str(d, &f[i].key)) != 0)
			return r;
		if (!dw_utf8_valid(f[i].key.p, f[i].key.n, &bad)) {
			d->off = key_at;
			return dec_fail(d, "record key is not UTF-8");
		}
		/* strictly increasing: canonical, so lookups bisect */
		if (i > 0 && dw_str_cmp(f[i - 1].key, f[i].key) >= 0) {
			d->off = key_at;
			return dec_fail(d, "record key out of order or repeated");
		}
		if ((r = get_val(d, depth, &f[i].val)) != 0)
			return r;
	}
	memset(out, 0, sizeof *out);
	out->kind = DW_TV_RECORD;
	out->n = n;
	out->fields = f;
	return 0;
}

static int get_val(struct dec *d, unsigned depth, struct dw_tval *out)
{
	size_t at = d->off;
	uint8_t tag = 0, b = 0;
	uint32_t n = 0;
	int r;

	if (depth > DW_CODEC_MAX_DEPTH)
		return dec_fail(d, "values nested deeper than %d", DW_CODEC_MAX_DEPTH);
	if ((r = get_u8(d, &tag)) != 0)
		return r;
	memset(out, 0, sizeof *out);
	out->kind = tag;
	switch (tag) {
	case DW_TV_NULL:
		return 0;
	case DW_TV_BOOL:
		if ((r = get_u8(d, &b)) != 0)
			return r;
		if (b > 1)
			return dec_fail(d, "boolean byte %u", b);
		out->b = b == 1;
		return 0;
	case DW_TV_INT:
		return get_i64(d, &out->i);
	case DW_TV_DECIMAL:
		if ((r = get_str(d, &out->s)) != 0)
			return r;
		*out = dw_tv_decimal(out->s);
		return 0;
	case DW_TV_STRING:
		return get_str(d, &out->s);
	case DW_TV_ENTITY:
		if ((r = get_str(d, &out->type)) != 0)
			return r;
		return get_str(d, &out->s);
	case DW_TV_ARRAY: {
		struct dw_tval *items = NULL;

		if ((r = get_count(d, 1, "array items", &n)) != 0)
			return r;
		if (n != 0 && (items = DW_NEWN(d->a, struct dw_tval, n)) == NULL)
			return dec_oom(d);
		for (uint32_t i = 0; i < n; i++)
			if ((r = get_val(d, depth + 1, &items[i])) != 0)
				return r;
		out->n = n;
		out->items = items;
		return 0;
	}
	case DW_TV_RECORD:
		return get_fields(d, depth + 1, out);
	}
	d->off = at;
	return dec_fail(d, "unknown value tag %u", tag);
}

/* One of the event's records: fields at depth 0, as put_record writes them. */
static int get_record(struct dec *d, const char *what, struct dw_tval *out)
{
	uint8_t tag = 0;
	int r = get_u8(d, &tag);

	if (r != 0)
		return r;
	if (tag != DW_TV_RECORD) {
		d->off--;
		return dec_fail(d, "%s is not a record", what);
	}
	return get_fields(d, 0, out);
}

/* A string of the annotation that its parts byte says is there: never empty
 * (an empty one would be a second spelling of an absent one). */
static int get_part(struct dec *d, const char *what, struct dw_str *out)
{
	size_t at = d->off;
	int r = get_str(d, out);

	if (r == 0 && out->n == 0) {
		d->off = at;
		return dec_fail(d, "annotation: an empty %s", what);
	}
	return r;
}

static int get_annot(struct dec *d, struct dw_event_annot **out)
{
	struct dw_event_annot *an = DW_NEW(d->a, struct dw_event_annot);
	size_t at = d->off;
	uint8_t parts = 0;
	const char *why;
	int r;

	if (an == NULL)
		return dec_oom(d);
	memset(an, 0, sizeof *an);
	if ((r = get_u8(d, &parts)) != 0)
		return r;
	if (parts == 0 || (parts & ~EC_AN_KNOWN) ||
	    (!(parts & EC_AN_DECISION) && (parts & (EC_AN_REASON | EC_AN_DESCRIPTION)))) {
		d->off = at;
		return dec_fail(d, "annotation: parts 0x%02x", parts);
	}
	an->has_decision = parts & EC_AN_DECISION;
	if (an->has_decision) {
		if ((r = get_u8(d, &an->cause)) != 0 ||
		    (r = get_count(d, 5, "rule ids", &an->n_ids)) != 0)
			return r;
		if (an->n_ids != 0 && (an->ids = DW_NEWN(d->a, struct dw_str, an->n_ids)) == NULL)
			return dec_oom(d);
		for (uint32_t i = 0; i < an->n_ids; i++)
			if ((r = get_part(d, "rule id", &an->ids[i])) != 0)
				return r;
	}
	if ((parts & EC_AN_REASON) && (r = get_part(d, "reason", &an->reason)) != 0)
		return r;
	if ((parts & EC_AN_DESCRIPTION) && (r = get_part(d, "description", &an->description)) != 0)
		return r;
	if ((parts & EC_AN_NOTE) && (r = get_part(d, "note", &an->note)) != 0)
		return r;
	if ((why = annot_problem(an)) != NULL) {
		d->off = at;
		return dec_fail(d, "annotation: %s", why);
	}
	*out = an;
	return 0;
}

static int decode(struct dec *d, struct dw_event *ev)
{
	uint8_t version = 0, flags = 0;
	int r;

	memset(ev, 0, sizeof *ev);
	if ((r = get_u8(d, &version)) != 0)
		return r;
	if (version != EC_VERSION && version != EC_VERSION_ANNOT) {
		d->off = 0;
		return dec_fail(d, "unknown encoding version %u", version);
	}
	if ((r = get_i64(d, &ev->ts)) != 0 || (r = get_u32(d, &ev->line)) != 0 ||
	    (r = get_u8(d, &flags)) != 0)
		return r;
	if (flags & ~EC_FLAGS_KNOWN) {
		d->off--;
		return dec_fail(d, "unknown flags 0x%02x", flags);
	}
	ev->has_principal = flags & EC_HAS_PRINCIPAL;
	ev->has_resource = flags & EC_HAS_RESOURCE;
	ev->has_context = flags & EC_HAS_CONTEXT;
	if ((r = get_str(d, &ev->ns)) != 0 || (r = get_str(d, &ev->action)) != 0 ||
	    (r = get_str(d, &ev->kind)) != 0)
		return r;
	if (ev->has_principal &&
	    ((r = get_str(d, &ev->principal_type)) != 0 || (r = get_str(d, &ev->principal_id)) != 0))
		return r;
	if (ev->has_resource &&
	    ((r = get_str(d, &ev->resource_type)) != 0 || (r = get_str(d, &ev->resource_id)) != 0))
		return r;
	if ((r = get_record(d, "the context", &ev->context)) != 0 ||
	    (r = get_record(d, "the logged record", &ev->logged)) != 0)
		return r;
	/* an entity takes at least 4 + 4 + 5 + 4 bytes */
	if ((r = get_count(d, 17, "entities", &ev->n_entities)) != 0)
		return r;
	if (ev->n_entities != 0 &&
	    (ev->entities = DW_NEWN(d->a, struct dw_event_entity, ev->n_entities)) == NULL)
		return dec_oom(d);
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		struct dw_event_entity *e = &ev->entities[i];

		memset(e, 0, sizeof *e);
		if ((r = get_str(d, &e->type)) != 0 || (r = get_str(d, &e->id)) != 0 ||
		    (r = get_record(d, "an entity's attributes", &e->attrs)) != 0 ||
		    (r = get_count(d, 8, "parents", &e->n_parents)) != 0)
			return r;
		if (e->n_parents == 0)
			continue;
		e->parent_types = DW_NEWN(d->a, struct dw_str, e->n_parents);
		e->parent_ids = DW_NEWN(d->a, struct dw_str, e->n_parents);
		if (e->parent_types == NULL || e->parent_ids == NULL)
			return dec_oom(d);
		for (uint32_t k = 0; k < e->n_parents; k++)
			if ((r = get_str(d, &e->parent_types[k])) != 0 ||
			    (r = get_str(d, &e->parent_ids[k])) != 0)
				return r;
	}
	if (version == EC_VERSION_ANNOT) {
		struct dw_event_annot *an = NULL;

		if (dec_left(d) == 0)
			return dec_fail(d, "version 2 without an annotation");
		if ((r = get_annot(d, &an)) != 0)
			return r;
		ev->annot = an;
	}
	if (d->off != d->n)
		return dec_fail(d, "%zu bytes after the event", dec_left(d));
	return 0;
}

int dw_event_decode(struct dw_arena *a, const void *p, size_t n, struct dw_event *ev,
		    char *err, size_t errlen)
{
	struct dec d = { .a = a, .p = p, .n = n, .err = err, .errlen = errlen };
	struct dw_arena_mark m = dw_arena_mark(a);
	struct dw_event e;
	int r;

	if (errlen != 0)
		err[0] = '\0';
	r = decode(&d, &e);
	if (r != 0) {
		dw_arena_reset(a, m);  /* a refused record leaves nothing behind */
		return r;
	}
	*ev = e;
	return 0;
}

/* --- clone -------------------------------------------------------------------------- */

/* Strings in the block keep a NUL after their bytes, like dw_tval_deep_copy's;
 * the empty string points at a literal. */
static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static size_t str_size(struct dw_str s)
{
	return s.n == 0 ? 0 : round8((size_t)s.n + 1);
}

static struct dw_str str_copy(struct dw_str s, char **buf)
{
	char *p = *buf;

	if (s.n == 0)
		return dw_str_make("", 0);
	memcpy(p, s.p, s.n);
	p[s.n] = '\0';
	*buf = p + str_size(s);
	return dw_str_make(p, s.n);
}

/* The records of an event, a zeroed one read as empty (as the encoder does). */
static size_t rec_size(const struct dw_tval *v)
{
	return v->kind == 0 ? 0 : dw_tval_deep_size(v);
}

static void rec_copy(const struct dw_tval *v, struct dw_tval *out, char **buf)
{
	if (v->kind == 0) {
		memset(out, 0, sizeof *out);
		out->kind = DW_TV_RECORD;
		return;
	}
	dw_tval_deep_copy(v, out, buf);
}

struct dw_event *dw_event_clone(const struct dw_event *ev)
{
	struct dw_event *c;
	size_t need = round8(sizeof *c);
	char *buf;

	/* Every term is bounded by bytes ev already occupies (at most doubled by
	 * rounding), so the sum cannot wrap. */
	need += str_size(ev->ns) + str_size(ev->action) + str_size(ev->kind);
	if (ev->has_principal)
		need += str_size(ev->principal_type) + str_size(ev->principal_id);
	if (ev->has_resource)
		need += str_size(ev->resource_type) + str_size(ev->resource_id);
	need += rec_size(&ev->context) + rec_size(&ev->logged);
	need += round8((size_t)ev->n_entities * sizeof(struct dw_event_entity));
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		const struct dw_event_entity *e = &ev->entities[i];

		need += str_size(e->type) + str_size(e->id) + rec_size(&e->attrs);
		need += 2 * round8((size_t)e->n_parents * sizeof(struct dw_str));
		for (uint32_t k = 0; k < e->n_parents; k++)
			need += str_size(e->parent_types[k]) + str_size(e->parent_ids[k]);
	}
	if (ev->annot != NULL) {
		const struct dw_event_annot *an = ev->annot;

		need += round8(sizeof *an) + round8((size_t)an->n_ids * sizeof(struct dw_str));
		for (uint32_t i = 0; i < an->n_ids; i++)
			need += str_size(an->ids[i]);
		need += str_size(an->reason) + str_size(an->description) + str_size(an->note);
	}
	if ((c = malloc(need)) == NULL)
		return NULL;
	buf = (char *)c + round8(sizeof *c);
	memset(c, 0, sizeof *c);
	c->ts = ev->ts;
	c->line = ev->line;
	c->ns = str_copy(ev->ns, &buf);
	c->action = str_copy(ev->action, &buf);
	c->kind = str_copy(ev->kind, &buf);
	c->has_principal = ev->has_principal;
	c->has_resource = ev->has_resource;
	c->has_context = ev->has_context;
	if (ev->has_principal) {
		c->principal_type = str_copy(ev->principal_type, &buf);
		c->principal_id = str_copy(ev->principal_id, &buf);
	}
	if (ev->has_resource) {
		c->resource_type = str_copy(ev->resource_type, &buf);
		c->resource_id = str_copy(ev->resource_id, &buf);
	}
	rec_copy(&ev->context, &c->context, &buf);
	rec_copy(&ev->logged, &c->logged, &buf);
	c->n_entities = ev->n_entities;
	if (ev->n_entities != 0) {
		c->entities = (struct dw_event_entity *)buf;
		buf += round8((size_t)ev->n_entities * sizeof(struct dw_event_entity));
	}
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		const struct dw_event_entity *e = &ev->entities[i];
		struct dw_event_entity *o = &c->entities[i];
		size_t arr = round8((size_t)e->n_parents * sizeof(struct dw_str));

		memset(o, 0, sizeof *o);
		o->type = str_copy(e->type, &buf);
		o->id = str_copy(e->id, &buf);
		rec_copy(&e->attrs, &o->attrs, &buf);
		o->n_parents = e->n_parents;
		if (e->n_parents == 0)
			continue;
		o->parent_types = (struct dw_str *)buf;
		o->parent_ids = (struct dw_str *)(buf + arr);
		buf += 2 * arr;
		for (uint32_t k = 0; k < e->n_parents; k++) {
			o->parent_types[k] = str_copy(e->parent_types[k], &buf);
			o->parent_ids[k] = str_copy(e->parent_ids[k], &buf);
		}
	}
	if (ev->annot != NULL) {
		const struct dw_event_annot *an = ev->annot;
		struct dw_event_annot *o = (struct dw_event_annot *)buf;

		buf += round8(sizeof *o);
		*o = *an;
		o->ids = NULL;
		if (an->n_ids != 0) {
			o->ids = (struct dw_str *)buf;
			buf += round8((size_t)an->n_ids * sizeof(struct dw_str));
		}
		for (uint32_t i = 0; i < an->n_ids; i++)
			o->ids[i] = str_copy(an->ids[i], &buf);
		o->reason = str_copy(an->reason, &buf);
		o->description = str_copy(an->description, &buf);
		o->note = str_copy(an->note, &buf);
		c->annot = o;
	}
	return c;
}

/* --- single values (snapshots) ----------------------------------------------------- */

int dw_tval_encode(struct dw_buf *b, const struct dw_tval *v)
{
	size_t n0 = b->n;
	int r = put_val(b, v, 0);

	if (r != 0)
		b->n = n0;
	return r;
}

int dw_tval_decode(struct dw_arena *a, const void *p, size_t n, size_t *off, struct dw_tval *out,
		   char *err, size_t errlen)
{
	struct dec d = { .a = a, .p = p, .n = n, .off = *off, .err = err, .errlen = errlen };
	int r = get_val(&d, 0, out);

	if (r == 0)
		*off = d.off;
	return r;
}
