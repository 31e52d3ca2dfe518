/* fuzz_event_util.h - helpers shared by fuzz_trace.c and fuzz_event_codec.c:
 * event equality, what trace.h says can be formatted, and the format round
 * trip.  Static functions in a header because each target is one file (see
 * meson.build); both targets use all of them. */
#ifndef CAIRN_FUZZ_EVENT_UTIL_H
#define CAIRN_FUZZ_EVENT_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "trace.h"
#include "tval.h"
#include "value.h"

/* Nesting the formatter writes (trace.h: "nesting past 128" is refused). */
#define FZ_MAX_DEPTH 128

/* --- event equality ---------------------------------------------------------------- */

/* A zeroed record (kind 0) stands for the empty one (trace.h, event_codec.h). */
static const struct dw_tval fz_empty = { .kind = DW_TV_RECORD };

static const struct dw_tval *fz_rec(const struct dw_tval *v)
{
	return v->kind == 0 ? &fz_empty : v;
}

static bool fz_rec_eq(const struct dw_tval *a, const struct dw_tval *b)
{
	return dw_tval_eq(fz_rec(a), fz_rec(b));
}

enum {
	FZ_EQ_LINE = 1,      /* compare ev->line (the trace format does not write it) */
};

static bool fz_event_eq(const struct dw_event *a, const struct dw_event *b, unsigned flags)
{
	if (a->ts != b->ts || !dw_str_eq(a->ns, b->ns) || !dw_str_eq(a->action, b->action) ||
	    !dw_str_eq(a->kind, b->kind) || a->has_principal != b->has_principal ||
	    a->has_resource != b->has_resource || a->has_context != b->has_context ||
	    a->n_entities != b->n_entities)
		return false;
	if ((flags & FZ_EQ_LINE) && a->line != b->line)
		return false;
	if (a->has_principal && (!dw_str_eq(a->principal_type, b->principal_type) ||
				 !dw_str_eq(a->principal_id, b->principal_id)))
		return false;
	if (a->has_resource && (!dw_str_eq(a->resource_type, b->resource_type) ||
				!dw_str_eq(a->resource_id, b->resource_id)))
		return false;
	/* without has_context the context is not part of the event (trace.h) */
	if ((a->has_context && !fz_rec_eq(&a->context, &b->context)) ||
	    !fz_rec_eq(&a->logged, &b->logged))
		return false;
	for (uint32_t i = 0; i < a->n_entities; i++) {
		const struct dw_event_entity *x = &a->entities[i], *y = &b->entities[i];

		if (!dw_str_eq(x->type, y->type) || !dw_str_eq(x->id, y->id) ||
		    !fz_rec_eq(&x->attrs, &y->attrs) || x->n_parents != y->n_parents)
			return false;
		for (uint32_t k = 0; k < x->n_parents; k++)
			if (!dw_str_eq(x->parent_types[k], y->parent_types[k]) ||
			    !dw_str_eq(x->parent_ids[k], y->parent_ids[k]))
				return false;
	}
	return true;
}

/* --- what dw_trace_format must accept (trace.h, restated) -------------------------- */

static bool fz_utf8(struct dw_str s)
{
	size_t bad;

	return dw_utf8_valid(s.p, s.n, &bad);
}

static bool fz_ident(const char *p, size_t n)
{
	if (n == 0 || !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(p[i] == '_' || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9')))
			return false;
	return true;
}

/* Ident(::Ident)* */
static bool fz_path(struct dw_str s)
{
	const char *p = s.p, *end = s.p + s.n;

	for (;;) {
		const char *sep = s.n ? memmem(p, (size_t)(end - p), "::", 2) : NULL;

		if (sep == NULL)
			return fz_ident(p, (size_t)(end - p));
		if (!fz_ident(p, (size_t)(sep - p)))
			return false;
		p = sep + 2;
	}
}

/* Non-empty, no `(`, `)` or control characters, no edge whitespace. */
static bool fz_kind_ok(struct dw_str k)
{
	static const char ws[] = " \t\n\r\v\f";

	if (k.n == 0 || !fz_utf8(k) || memchr(ws, k.p[0], sizeof ws - 1) != NULL ||
	    memchr(ws, k.p[k.n - 1], sizeof ws - 1) != NULL)
		return false;
	for (uint32_t i = 0; i < k.n; i++) {
		unsigned char c = (unsigned char)k.p[i];

		if (c < 0x20 || c == 0x7f || c == '(' || c == ')')
			return false;
	}
	return true;
}

static bool fz_digits(struct dw_str s, uint32_t *i)
{
	uint32_t from = *i;

	while (*i < s.n && s.p[*i] >= '0' && s.p[*i] <= '9')
		(*i)++;
	return *i > from;
}

/* Text the trace parser reads as a decimal again (docs/formats.md §4: has a `.` and a
 * float's shape): [+-]? (D+ '.' D* | D* '.' D+) ([eE] [+-]? D+)? */
static bool fz_decimal_text(struct dw_str s)
{
	uint32_t i = 0;
	bool d1, d2;

	if (i < s.n && (s.p[i] == '+' || s.p[i] == '-'))
		i++;
	d1 = fz_digits(s, &i);
	if (i >= s.n || s.p[i] != '.')
		return false;
	i++;
	d2 = fz_digits(s, &i);
	if (!d1 && !d2)
		return false;
	if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
		i++;
		if (i < s.n && (s.p[i] == '+' || s.p[i] == '-'))
			i++;
		if (!fz_digits(s, &i))
			return false;
	}
	return i == s.n;
}

static bool fz_value_ok(const struct dw_tval *v, unsigned depth);

/* A record's fields at depth; a zeroed value is the empty record. */
static bool fz_fields_ok(const struct dw_tval *rec, unsigned depth)
{
	if (rec->kind == 0)
		return true;
	if (rec->kind != DW_TV_RECORD)
		return false;
	for (uint32_t i = 0; i < rec->n; i++)
		if (!fz_utf8(rec->fields[i].key) || !fz_value_ok(&rec->fields[i].val, depth))
			return false;
	return true;
}

static bool fz_value_ok(const struct dw_tval *v, unsigned depth)
{
	if (depth > FZ_MAX_DEPTH)
		return false;
	switch (v->kind) {
	case DW_TV_NULL:
	case DW_TV_BOOL:
	case DW_TV_INT:
		return true;
	case DW_TV_DECIMAL:
		return fz_decimal_text(v->s);
	case DW_TV_STRING:
		return fz_utf8(v->s);
	case DW_TV_ENTITY:
		return fz_path(v->type) && fz_utf8(v->s);
	case DW_TV_ARRAY:
		for (uint32_t i = 0; i < v->n; i++)
			if (!fz_value_ok(&v->items[i], depth + 1))
				return false;
		return true;
	case DW_TV_RECORD:
		return fz_fields_ok(v, depth + 1);
	}
	return false;
}

/* Can ev be written so that it reads back equal, by trace.h's own list of
 * refusals?  (The event's records hold their fields at depth 0.) */
static bool fz_formattable(const struct dw_event *ev)
{
	if (!fz_path(ev->ns) || !fz_utf8(ev->action) || !fz_kind_ok(ev->kind))
		return false;
	if (ev->has_principal && (!fz_path(ev->principal_type) || !fz_utf8(ev->principal_id)))
		return false;
	if (ev->has_resource && (!fz_path(ev->resource_type) || !fz_utf8(ev->resource_id)))
		return false;
	if ((ev->has_context && !fz_fields_ok(&ev->context, 0)) || !fz_fields_ok(&ev->logged, 0))
		return false;
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		const struct dw_event_entity *e = &ev->entities[i];

		/* attributes are read one level down; one entity named twice is refused */
		if (!fz_path(e->type) || !fz_utf8(e->id) || !fz_fields_ok(&e->attrs, 1))
			return false;
		for (uint32_t k = 0; k < i; k++)
			if (dw_str_eq(e->type, ev->entities[k].type) &&
			    dw_str_eq(e->id, ev->entities[k].id))
				return false;
		for (uint32_t k = 0; k < e->n_parents; k++)
			if (!fz_path(e->parent_types[k]) || !fz_utf8(e->parent_ids[k]))
				return false;
	}
	return true;
}

/* --- round trips ------------------------------------------------------------------- */

/* 1: format, re-parse, compare; the re-parsed event formats to the same line. */
static void fz_format_round_trip(struct dw_arena *a, const struct dw_event *ev)
{
	struct dw_buf b = { 0 }, b2 = { 0 };
	struct dw_arena_mark m = dw_arena_mark(a);
	struct dw_event re;
	char err[256];
	bool expect = fz_formattable(ev);
	int r;

	if (dw_buf_put(&b, "x", 1) != 0)   /* a prefix, to see that errors keep it */
		return;
	r = dw_trace_format(&b, ev);
	if (r == -ENOMEM)
		goto out;
	if (r == -EINVAL) {
		if (expect || b.n != 1)
			abort();
		goto out;
	}
	if (r != 0 || !expect || memchr(b.p + 1, '\n', b.n - 1) != NULL)
		abort();
	r = dw_trace_parse_line(a, b.p + 1, b.n - 1, ev->line ? ev->line : 1, &re, err, sizeof err);
	if (r == -ENOMEM)
		goto out;
	if (r != 0 || !fz_event_eq(ev, &re, 0))
		abort();
	r = dw_trace_format(&b2, &re);
	if (r == -ENOMEM)
		goto out;
	if (r != 0 || b2.n != b.n - 1 || memcmp(b2.p, b.p + 1, b2.n) != 0)
		abort();
out:
	dw_arena_reset(a, m);
	dw_buf_free(&b2);
	dw_buf_free(&b);

#endif
