/* trace.c - the Dogwood trace format (see trace.h and docs/formats.md §4).
 *
 * Divisions, in order:
 *   1. errors and spans
 *   2. scanning: top-level splits, matching brackets, quotes
 *   3. strings: escape decoding
 *   4. values and argument groups
 *   5. one line: timestamp, envelopes, event head
 *   6. whole traces
 *   7. output: dw_trace_format
 *
 * The parser follows the reference (`log_parse.rs`): a line is cut into its
 * envelopes and groups by bracket-aware scans, and each group is split at
 * top-level commas and colons.  Where the reference silently produced a
 * value from malformed text (an unbalanced `[`, a string missing its closing
 * quote, an empty value, text after the event group, a scope field it does
 * not know) this parser reports an error instead: a trace that says something
 * other than what was meant must not decide anything. */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tval.h"
#include "value.h"

/* Nesting of logged values (arrays, records): the parser recurses per level,
 * and a line of a few KB of `[` must not exhaust the stack. */
#define TP_MAX_DEPTH 128

/* --- 1. errors and spans -------------------------------------------------------- */

struct sp {
	const char *p;
	size_t n;
};

struct tp {
	struct dw_arena *a;
	uint32_t line;
	char *err;
	size_t errlen;
};

static int tp_fail(struct tp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int tp_fail(struct tp *t, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (t->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(t->err, t->errlen, "line %" PRIu32 ": %s", t->line, msg);
	return -EINVAL;
}

static int tp_oom(struct tp *t)
{
	if (t->errlen != 0)
		snprintf(t->err, t->errlen, "line %" PRIu32 ": out of memory", t->line);
	return -ENOMEM;
}

/* Span text for messages: `%.*s` wants an int. */
#define SPF(s) (int)((s).n > 4096 ? 4096 : (s).n), (s).p

static struct sp sp_make(const char *p, size_t n)
{
	struct sp s = { p, n };
	return s;
}

static struct sp sp_sub(struct sp s, size_t from, size_t to)
{
	return sp_make(s.p + from, to - from);
}

/* ASCII whitespace: the trace format is ASCII at its seams. */
static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static struct sp sp_trim(struct sp s)
{
	while (s.n > 0 && is_ws(s.p[0]))
		s.p++, s.n--;
	while (s.n > 0 && is_ws(s.p[s.n - 1]))
		s.n--;
	return s;
}

static bool sp_eq(struct sp s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && memcmp(s.p, lit, n) == 0;
}

static bool sp_starts(struct sp s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n >= n && memcmp(s.p, lit, n) == 0;
}

static bool sp_contains(struct sp s, const char *lit)
{
	return memmem(s.p, s.n, lit, strlen(lit)) != NULL;
}

/* A copy in the arena (the events outlive the caller's text). */
static int tp_copy(struct tp *t, struct sp s, struct dw_str *out)
{
	char *p;

	if (s.n > UINT32_MAX)
		return tp_fail(t, "text longer than 4 GiB");
	if ((p = dw_arena_strndup(t->a, s.p, s.n)) == NULL)
		return tp_oom(t);
	*out = dw_str_make(p, s.n);
	return 0;
}

/* --- 2. scanning ------------------------------------------------------------------ */

/* The scans below share one notion of structure: `"` toggles a string (a
 * backslash inside one skips the next byte), and outside strings any of
 * `([{` opens and any of `)]}` closes one level. */

static bool is_open(char c)
{
	return c == '(' || c == '[' || c == '{';
}

static bool is_close(char c)
{
	return c == ')' || c == ']' || c == '}';
}

/* Next part of s split at top-level `delim`, from *pos.  false once every
 * part (possibly empty ones) has been handed out. */
static bool sp_next_part(struct sp s, char delim, size_t *pos, struct sp *part)
{
	size_t i = *pos, start = *pos;
	long depth = 0;
	bool in_str = false;

	if (i > s.n)
		return false;
	for (; i < s.n; i++) {
		char c = s.p[i];

		if (in_str && c == '\\') {
			i++;
			continue;
		}
		if (c == '"')
			in_str = !in_str;
		else if (!in_str && is_open(c))
			depth++;
		else if (!in_str && is_close(c))
			depth--;
		else if (c == delim && depth == 0 && !in_str)
			break;
	}
	if (i > s.n)                   /* a backslash ended the text */
		i = s.n;
	*part = sp_sub(s, start, i);
	*pos = i + 1;
	return true;
}

/* Index of the first top-level `delim`, or -1. */
static long sp_find_top(struct sp s, char delim)
{
	long depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];

		if (in_str && c == '\\') {
			i++;
			continue;
		}
		if (c == '"')
			in_str = !in_str;
		else if (c == delim && depth == 0 && !in_str)
			return (long)i;
		else if (!in_str && is_open(c))
			depth++;
		else if (!in_str && is_close(c))
			depth--;
	}
	return -1;
}

/* The `)` closing an already-consumed `(`: the first `)` met at depth 0. */
static long sp_matching_paren(struct sp s)
{
	long depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];

		if (in_str && c == '\\') {
			i++;
			continue;
		}
		if (c == '"') {
			in_str = !in_str;
		} else if (!in_str && is_open(c)) {
			depth++;
		} else if (!in_str && is_close(c)) {
			if (depth == 0 && c == ')')
				return (long)i;
			depth--;
		}
	}
	return -1;
}

/* s[0] opens a level: the index where that level closes again, or -1. */
static long sp_close_of_first(struct sp s)
{
	long depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];

		if (in_str && c == '\\') {
			i++;
			continue;
		}
		if (c == '"') {
			in_str = !in_str;
		} else if (!in_str && is_open(c)) {
			depth++;
		} else if (!in_str && is_close(c)) {
			if (--depth == 0)
				return (long)i;
		}
	}
	return -1;
}

/* The first `"` in p[0, n) not escaped by a backslash, or -1. */
static long find_unescaped_quote(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return (long)i;
	}
	return -1;
}

/* Is s exactly one quoted string, `"…"` with its first unescaped closing
 * quote at the end? */
static bool sp_is_quoted(struct sp s)
{
	return s.n >= 2 && s.p[0] == '"' &&
	       find_unescaped_quote(s.p + 1, s.n - 1) == (long)s.n - 2;
}

/* In `Ns::Type::"id"`: the index of the `::` before the id's opening quote,
 * for the first `::"` whose quoted id runs exactly to the end; or -1. */
static long find_entity_quote_open(struct sp s)
{
	size_t from = 0;

	while (from < s.n) {
		const char *hit = memmem(s.p + from, s.n - from, "::\"", 3);
		size_t at, q;
		long close;

		if (hit == NULL)
			return -1;
		at = (size_t)(hit - s.p);
		q = at + 3;
		close = find_unescaped_quote(s.p + q, s.n - q);
		if (close >= 0 && q + (size_t)close == s.n - 1)
			return (long)at;
		from = at + 3;
	}
	return -1;
}

/* Rust's i64 grammar: [+-]?[0-9]+, in range. */
static bool parse_i64(struct sp s, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	int64_t v = 0;

	if (s.n > 0 && (s.p[0] == '+' || s.p[0] == '-'))
		neg = s.p[0] == '-', i = 1;
	if (i == s.n)
		return false;
	for (; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return false;
		/* accumulate toward the sign so INT64_MIN is reachable */
		if (__builtin_mul_overflow(v, 10, &v) ||
		    (neg ? __builtin_sub_overflow(v, s.p[i] - '0', &v)
			 : __builtin_add_overflow(v, s.p[i] - '0', &v)))
			return false;
	}
	*out = v;
	return true;
}

/* A float as Rust's f64 parser reads it, with a `.` (the reference's test for
 * a decimal): [+-]? (D+ '.' D* | D* '.' D+) ([eE] [+-]? D+)? */
static bool is_float_with_dot(struct sp s)
{
	size_t i = 0, d1 = 0, d2 = 0, d3 = 0;

	if (i < s.n && (s.p[i] == '+' || s.p[i] == '-'))
		i++;
	while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
		i++, d1++;
	if (i >= s.n || s.p[i] != '.')
		return false;
	i++;
	while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
		i++, d2++;
	if (d1 + d2 == 0)
		return false;
	if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
		i++;
		if (i < s.n && (s.p[i] == '+' || s.p[i] == '-'))
			i++;
		while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
			i++, d3++;
		if (d3 == 0)
			return false;
	}
	return i == s.n;
}

/* --- 3. strings ------------------------------------------------------------------- */

/* Decode the escapes of a string or id body into the arena:
 * `\" \\ \' \n \t \r \0`, `\u{H…}` (a Unicode scalar), `\xH[H]` (U+0000 to
 * U+00FF).  Anything else, a malformed `\u{…}` included, is kept verbatim so
 * nothing is silently lost.  No escape is longer decoded than written, so
 * s.n bytes always suffice. */
static int tp_unescape(struct tp *t, struct sp s, struct dw_str *out)
{
	char *o, *w;

	if (memchr(s.p, '\\', s.n) == NULL)
		return tp_copy(t, s, out);
	if (s.n > UINT32_MAX)
		return tp_fail(t, "text longer than 4 GiB");
	if ((o = dw_arena_alloc(t->a, s.n + 1, 1)) == NULL)
		return tp_oom(t);
	w = o;
	for (size_t i = 0; i < s.n;) {
		char c = s.p[i];

		if (c != '\\' || i + 1 == s.n) {
			*w++ = c;
			i++;
			continue;
		}
		c = s.p[i + 1];
		switch (c) {
		case '"': case '\\': case '\'':
			*w++ = c;
			i += 2;
			continue;
		case 'n': *w++ = '\n'; i += 2; continue;
		case 't': *w++ = '\t'; i += 2; continue;
		case 'r': *w++ = '\r'; i += 2; continue;
		case '0': *w++ = '\0'; i += 2; continue;
		case 'u':
			if (i + 2 < s.n && s.p[i + 2] == '{') {
				size_t j = i + 3, nd = 0;
				uint32_t cp = 0;
				bool ok = true;

				for (; j < s.n && s.p[j] != '}'; j++, nd++) {
					int h = dw_hex_digit(s.p[j]);

					if (h < 0 || cp > 0x10FFFF)
						ok = false;
					else
						cp = cp * 16 + (uint32_t)h;
				}
				ok = ok && j < s.n && nd > 0 && cp <= 0x10FFFF &&
				     !(cp >= 0xD800 && cp <= 0xDFFF);
				if (ok) {
					w += dw_utf8_put(w, cp);
					i = j + 1;
				} else {
					/* `\u{` and all up to and including the `}` (or the end) */
					size_t end = j < s.n ? j + 1 : s.n;

					memcpy(w, s.p + i, end - i);
					w += end - i;
					i = end;
				}
				continue;
			}
			break;
		case 'x': {
			int h1 = i + 2 < s.n ? dw_hex_digit(s.p[i + 2]) : -1;
			int h2 = h1 >= 0 && i + 3 < s.n ? dw_hex_digit(s.p[i + 3]) : -1;

			if (h1 < 0)
				break;
			if (h2 >= 0) {
				w += dw_utf8_put(w, (uint32_t)(h1 * 16 + h2));
				i += 4;
			} else {
				w += dw_utf8_put(w, (uint32_t)h1);
				i += 3;
			}
			continue;
		}
		default:
			break;
		}
		/* unknown escape: the backslash stays, the next byte follows as data */
		*w++ = '\\';
		i++;
	}
	*w = '\0';
	*out = dw_str_make(o, (size_t)(w - o));
	return 0;
}

/* --- 4. values and argument groups ------------------------------------------------- */

static int tp_value(struct tp *t, struct sp s, unsigned depth, struct dw_tval *out);

/* A field name: a quoted key is decoded, a bare one is taken as written. */
static int tp_key(struct tp *t, struct sp k, struct sp part, struct dw_str *out)
{
	k = sp_trim(k);
	if (k.n > 0 && k.p[0] == '"') {
		if (!sp_is_quoted(k))
			return tp_fail(t, "malformed quoted field name in `%.*s`", SPF(part));
		return tp_unescape(t, sp_sub(k, 1, k.n - 1), out);
	}
	if (k.n == 0)
		return tp_fail(t, "field `%.*s` has an empty name", SPF(part));
	return tp_copy(t, k, out);
}

/* Count the non-blank parts of s split at top-level commas. */
static size_t tp_count_parts(struct sp s)
{
	struct sp part;
	size_t pos = 0, n = 0;

	while (sp_next_part(s, ',', &pos, &part))
		if (sp_trim(part).n != 0)
			n++;
	return n;
}

/* `k: v, k: v` (an argument group when record_form is false, the inside of
 * `{…}` when true) into a canonical record.  The fields are gathered in a
 * malloc'd scratch array: dw_tval_record copies them into the arena, and a
 * second arena copy per record would double what a trace costs. */
static int tp_fields(struct tp *t, struct sp src, unsigned depth, bool record_form,
		     struct dw_tval *out)
{
	size_t n = tp_count_parts(src), i = 0, pos = 0;
	struct dw_tfv *f = NULL;
	struct sp part;
	struct dw_str dup;
	int r = 0;

	if (n > UINT32_MAX)
		return tp_fail(t, "too many fields");
	if (n != 0 && (f = calloc(n, sizeof *f)) == NULL)
		return tp_oom(t);
	while (r == 0 && sp_next_part(src, ',', &pos, &part)) {
		struct sp k, v;
		long colon;

		part = sp_trim(part);
		if (part.n == 0)
			continue;
		colon = sp_find_top(part, ':');
		if (colon < 0) {
			r = record_form ? tp_fail(t, "object field `%.*s` missing `:`", SPF(part))
					: tp_fail(t, "argument `%.*s` missing `:`", SPF(part));
			break;
		}
		k = sp_sub(part, 0, (size_t)colon);
		v = sp_trim(sp_sub(part, (size_t)colon + 1, part.n));
		if ((r = tp_key(t, k, part, &f[i].key)) != 0)
			break;
		if (v.n == 0) {
			r = tp_fail(t, "field `%.*s` has no value", (int)f[i].key.n, f[i].key.p);
			break;
		}
		if ((r = tp_value(t, v, depth, &f[i].val)) != 0)
			break;
		i++;
	}
	if (r == 0) {
		r = dw_tval_record(t->a, f, (uint32_t)n, out, &dup);
		if (r == -EEXIST)
			r = record_form
				? tp_fail(t, "record has a duplicate field `%.*s`", (int)dup.n, dup.p)
				: tp_fail(t, "duplicate field `%.*s`", (int)dup.n, dup.p);
		else if (r != 0)
			r = tp_oom(t);
	}
	free(f);
	return r;
}

static int tp_array(struct tp *t, struct sp inner, unsigned depth, struct dw_tval *out)
{
	size_t n = tp_count_parts(inner), i = 0, pos = 0;
	struct dw_tval *items = NULL;
	struct sp part;
	int r;

	if (n > UINT32_MAX)
		return tp_fail(t, "too many array items");
	if (n != 0 && (items = DW_NEWN(t->a, struct dw_tval, n)) == NULL)
		return tp_oom(t);
	while (sp_next_part(inner, ',', &pos, &part)) {
		part = sp_trim(part);
		if (part.n == 0)
			continue;       /* `[1,,2]` and a trailing comma, as the reference */
		if ((r = tp_value(t, part, depth, &items[i++])) != 0)
			return r;
	}
	memset(out, 0, sizeof *out);
	out->kind = DW_TV_ARRAY;
	out->n = (uint32_t)n;
	out->items = items;
	return 0;
}

/* One value (docs/formats.md §4): null, booleans, arrays, records, entity UIDs, quoted
 * strings, i64 integers, decimals (a `.` and a float's shape; kept as text)
 * and, for anything else, the bare token as a string.  An integer out of the
 * i64 range is such a bare token, as in the reference: a String. */
static int tp_value(struct tp *t, struct sp s, unsigned depth, struct dw_tval *out)
{
	int64_t i;
	long q;
	int r;

	if (depth > TP_MAX_DEPTH)
		return tp_fail(t, "logged value nested deeper than the limit of %d", TP_MAX_DEPTH);
	s = sp_trim(s);
	memset(out, 0, sizeof *out);
	if (s.n == 0)
		return tp_fail(t, "missing value");
	if (sp_eq(s, "null")) {
		out->kind = DW_TV_NULL;
		return 0;
	}
	if (sp_eq(s, "true") || sp_eq(s, "false")) {
		out->kind = DW_TV_BOOL;
		out->b = s.p[0] == 't';
		return 0;
	}
	if (s.p[0] == '[' || s.p[0] == '{') {
		char want = s.p[0] == '[' ? ']' : '}';

		if (sp_close_of_first(s) != (long)s.n - 1 || s.p[s.n - 1] != want)
			return tp_fail(t, "malformed %s `%.*s`", want == ']' ? "array" : "record",
				       SPF(s));
		if (want == ']')
			return tp_array(t, sp_sub(s, 1, s.n - 1), depth + 1, out);
		return tp_fields(t, sp_sub(s, 1, s.n - 1), depth + 1, true, out);
	}
	if (s.p[0] == '"') {
		if (!sp_is_quoted(s))
			return tp_fail(t, "malformed string `%.*s`", SPF(s));
		out->kind = DW_TV_STRING;
		return tp_unescape(t, sp_sub(s, 1, s.n - 1), &out->s);
	}
	if (s.p[s.n - 1] == '"' && sp_contains(s, "::") && (q = find_entity_quote_open(s)) >= 0) {
		out->kind = DW_TV_ENTITY;
		if ((r = tp_copy(t, sp_sub(s, 0, (size_t)q), &out->type)) != 0)
			return r;
		return tp_unescape(t, sp_sub(s, (size_t)q + 3, s.n - 1), &out->s);
	}
	if (parse_i64(s, &i)) {
		*out = dw_tv_int(i);
		return 0;
	}
	if (is_float_with_dot(s)) {
		struct dw_str text;

		if ((r = tp_copy(t, s, &text)) != 0)
			return r;
		*out = dw_tv_decimal(text);
		return 0;
	}
	out->kind = DW_TV_STRING;
	return tp_copy(t, s, &out->s);
}

/* An entity UID where only one will do (scope, entities envelope). */
static int tp_uid(struct tp *t, struct sp s, struct dw_str *type, struct dw_str *id,
		  bool *is_uid)
{
	struct dw_tval v;
	int r = tp_value(t, s, 0, &v);

	*is_uid = r == 0 && v.kind == DW_TV_ENTITY;
	if (*is_uid) {
		*type = v.type;
		*id = v.s;
	}
	return r;
}

/* --- 5. one line ------------------------------------------------------------------ */

/* `scope(principal: T::"p", resource: T::"r")`: inside is the text between
 * `scope(` and the first `)`, as in the reference. */
static int tp_scope(struct tp *t, struct sp inside, struct dw_event *ev)
{
	struct dw_tval rec;
	int r = tp_fields(t, inside, 0, false, &rec);

	if (r != 0)
		return r;
	for (uint32_t i = 0; i < rec.n; i++) {
		const struct dw_tfv *f = &rec.fields[i];
		bool principal = dw_str_eq_c(f->key, "principal");

		/* The event has nowhere to keep other scope fields; dropping them
		 * would decide on less than the trace says. */
		if (!principal && !dw_str_eq_c(f->key, "resource"))
			return tp_fail(t, "scope has an unknown field `%.*s` (it takes principal "
				       "and resource)", (int)f->key.n, f->key.p);
		if (f->val.kind != DW_TV_ENTITY)
			return tp_fail(t, "scope `%.*s` is not an entity ref `Ns::Type::\"id\"`",
				       (int)f->key.n, f->key.p);
		if (principal) {
			ev->has_principal = true;
			ev->principal_type = f->val.type;
			ev->principal_id = f->val.s;
		} else {
			ev->has_resource = true;
			ev->resource_type = f->val.type;
			ev->resource_id = f->val.s;
		}
	}
	return 0;
}

static uint64_t tp_uid_hash(struct dw_str type, struct dw_str id)
{
	return dw_hash_str(id, dw_hash_str(type, type.n));
}

/* One `UID: {attrs} [in [UID, …]]` entry of the entities envelope. */
static int tp_entity(struct tp *t, struct sp entry, struct dw_event_entity *e,
		     struct sp *uid_text)
{
	struct sp uid, rec, rest, list;
	long brace, close;
	size_t pos = 0, n = 0;
	struct sp item;
	bool ok;
	int r;

	memset(e, 0, sizeof *e);
	brace = sp_find_top(entry, '{');
	if (brace < 0)
		return tp_fail(t, "entities entry `%.*s` missing an attribute record `{ ... }`",
			       SPF(entry));
	uid = sp_trim(sp_sub(entry, 0, (size_t)brace));
	if (uid.n == 0 || uid.p[uid.n - 1] != ':')
		return tp_fail(t, "entities entry `%.*s` missing `:` before `{`", SPF(entry));
	uid = sp_trim(sp_sub(uid, 0, uid.n - 1));
	*uid_text = uid;
	if (uid.n == 0)
		ok = false;
	else if ((r = tp_uid(t, uid, &e->type, &e->id, &ok)) != 0)
		return r;
	if (!ok)
		return tp_fail(t, "entities entry `%.*s` is not an entity ref `Ns::Type::\"id\"`",
			       SPF(uid));
	rec = sp_sub(entry, (size_t)brace, entry.n);
	close = sp_close_of_first(rec);
	if (close < 0 || rec.p[close] != '}')
		return tp_fail(t, "entities entry `%.*s` has an unterminated `{ ... }`",
			       SPF(entry));
	if ((r = tp_value(t, sp_sub(rec, 0, (size_t)close + 1), 0, &e->attrs)) != 0)
		return r;
	rest = sp_trim(sp_sub(rec, (size_t)close + 1, rec.n));
	if (rest.n == 0)
		return 0;
	if (!sp_starts(rest, "in"))
		return tp_fail(t, "entities entry `%.*s` has trailing text after its record; "
			       "expected `in [ ... ]`, found `%.*s`", SPF(uid), SPF(rest));
	list = sp_trim(sp_sub(rest, 2, rest.n));
	if (list.n < 2 || list.p[0] != '[' || list.p[list.n - 1] != ']')
		return tp_fail(t, "entities entry `%.*s` parents must be a bracketed list "
			       "`in [ ... ]`, found `%.*s`", SPF(uid), SPF(list));
	list = sp_sub(list, 1, list.n - 1);
	n = tp_count_parts(list);
	if (n > UINT32_MAX)
		return tp_fail(t, "too many parents");
	if (n != 0) {
		e->parent_types = DW_NEWN(t->a, struct dw_str, n);
		e->parent_ids = DW_NEWN(t->a, struct dw_str, n);
		if (e->parent_types == NULL || e->parent_ids == NULL)
			return tp_oom(t);
	}
	while (sp_next_part(list, ',', &pos, &item)) {
		item = sp_trim(item);
		if (item.n == 0)
			continue;
		r = tp_uid(t, item, &e->parent_types[e->n_parents],
			   &e->parent_ids[e->n_parents], &ok);
		if (r != 0)
			return r;
		if (!ok)
			return tp_fail(t, "entities entry `%.*s` parent `%.*s` is not an entity ref "
				       "`Ns::Type::\"id\"`", SPF(uid), SPF(item));
		e->n_parents++;
	}
	return 0;
}

static int tp_entities(struct tp *t, struct sp inside, struct dw_event *ev)
{
	size_t n = tp_count_parts(inside), pos = 0;
	struct dw_event_entity *es = NULL;
	uint64_t *hashes = NULL;
	struct sp entry;
	int r;

	if (n > UINT32_MAX)
		return tp_fail(t, "too many entities");
	if (n != 0) {
		es = DW_NEWN(t->a, struct dw_event_entity, n);
		hashes = DW_NEWN(t->a, uint64_t, n);
		if (es == NULL || hashes == NULL)
			return tp_oom(t);
	}
	ev->entities = es;
	ev->n_entities = 0;
	while (sp_next_part(inside, ',', &pos, &entry)) {
		struct dw_event_entity *e;
		struct sp uid = { NULL, 0 };

		entry = sp_trim(entry);
		if (entry.n == 0)
			continue;
		e = &es[ev->n_entities];
		if ((r = tp_entity(t, entry, e, &uid)) != 0)
			return r;
		/* A repeated uid is refused, not last-wins: which binding survived
		 * would be invisible in the decision. */
		hashes[ev->n_entities] = tp_uid_hash(e->type, e->id);
		for (uint32_t k = 0; k < ev->n_entities; k++) {
			if (hashes[k] == hashes[ev->n_entities] && dw_str_eq(es[k].type, e->type) &&
			    dw_str_eq(es[k].id, e->id))
				return tp_fail(t, "entities envelope has a duplicate uid `%.*s`",
					       SPF(uid));
		}
		ev->n_entities++;
	}
	return 0;
}

/* `Ns::Action::"id"::kind`. */
static int tp_head(struct tp *t, struct sp head, struct dw_event *ev)
{
	const char *hit = memmem(head.p, head.n, "::\"", 3);
	size_t q_open, id_start;
	struct sp kind;
	long id_len;
	int r;

	if (hit == NULL)
		return tp_fail(t, "event head `%.*s` is missing a quoted action id", SPF(head));
	q_open = (size_t)(hit - head.p);
	id_start = q_open + 3;
	id_len = find_unescaped_quote(head.p + id_start, head.n - id_start);
	if (id_len < 0)
		return tp_fail(t, "event head `%.*s` has an unterminated action id", SPF(head));
	kind = sp_trim(sp_sub(head, id_start + (size_t)id_len + 1, head.n));
	if (!sp_starts(kind, "::") || sp_trim(sp_sub(kind, 2, kind.n)).n == 0)
		return tp_fail(t, "event head `%.*s` is missing a `::kind` segment", SPF(head));
	kind = sp_trim(sp_sub(kind, 2, kind.n));
	if ((r = tp_copy(t, sp_sub(head, 0, q_open), &ev->ns)) != 0 ||
	    (r = tp_unescape(t, sp_sub(head, id_start, id_start + (size_t)id_len),
			     &ev->action)) != 0)
		return r;
	return tp_copy(t, kind, &ev->kind);
}

/* `@<seconds>` as Dogwood writes it (an i64), or with up to nine digits after a
 * point: cairn's history records nanoseconds, and `history show` times convert
 * to `@1764622800.123456789` (Dogwood's own parser takes only the integer). */
static int parse_ts(struct tp *t, struct sp s, int64_t *ns)
{
	size_t dot = 0, i;
	int64_t secs, frac = 0;

	while (dot < s.n && s.p[dot] != '.')
		dot++;
	if (!parse_i64(sp_sub(s, 0, dot), &secs))
		return tp_fail(t, "bad timestamp `%.*s`", SPF(s));
	if (dot < s.n) {
		size_t digits = s.n - dot - 1;
		if (digits == 0 || digits > 9)
			return tp_fail(t, "bad timestamp `%.*s`: write whole seconds, or up to nine "
				       "digits after the point", SPF(s));
		for (i = dot + 1; i < s.n; i++) {
			if (s.p[i] < '0' || s.p[i] > '9')
				return tp_fail(t, "bad timestamp `%.*s`", SPF(s));
			frac = frac * 10 + (s.p[i] - '0');
		}
		for (; digits < 9; digits++)
			frac *= 10;
	}
	/* -0.5 is half a second before 0: the fraction takes the written sign */
	if (s.n > 0 && s.p[0] == '-')
		frac = -frac;
	if (__builtin_mul_overflow(secs, DW_NS_PER_SEC, ns) || __builtin_add_overflow(*ns, frac, ns))
		return tp_fail(t, "timestamp `%.*s` is out of range", SPF(s));
	return 0;
}

static int tp_line(struct tp *t, struct sp line, struct dw_event *ev)
{
	struct sp rest, ts_text, after;
	const char *open, *close;
	size_t ws = 0, i;
	long end;
	int r;

	memset(ev, 0, sizeof *ev);
	ev->line = t->line;
	ev->context.kind = DW_TV_RECORD;
	ev->logged.kind = DW_TV_RECORD;

	if (line.p[0] != '@')
		return tp_fail(t, "timepoint must start with `@`");
	rest = sp_sub(line, 1, line.n);
	while (ws < rest.n && !is_ws(rest.p[ws]))
		ws++;
	if (ws == rest.n)
		return tp_fail(t, "expected whitespace after timestamp");
	ts_text = sp_sub(rest, 0, ws);
	if ((r = parse_ts(t, ts_text, &ev->ts)) != 0)
		return r;
	after = sp_trim(sp_sub(rest, ws, rest.n));

	/* Envelopes, each optional, in this order.  scope holds only UIDs, so its
	 * first `)` closes it; the others hold values and need the matching one. */
	if (sp_starts(after, "scope(")) {
		struct sp in = sp_sub(after, 6, after.n);
		const char *c = memchr(in.p, ')', in.n);

		if (c == NULL)
			return tp_fail(t, "scope missing `)`");
		if ((r = tp_scope(t, sp_sub(in, 0, (size_t)(c - in.p)), ev)) != 0)
			return r;
		after = sp_trim(sp_sub(in, (size_t)(c - in.p) + 1, in.n));
	}
	if (sp_starts(after, "entities(")) {
		struct sp in = sp_sub(after, 9, after.n);

		if ((end = sp_matching_paren(in)) < 0)
			return tp_fail(t, "entities missing `)`");
		if ((r = tp_entities(t, sp_sub(in, 0, (size_t)end), ev)) != 0)
			return r;
		after = sp_trim(sp_sub(in, (size_t)end + 1, in.n));
	}
	if (sp_starts(after, "request_context(")) {
		struct sp in = sp_sub(after, 16, after.n);

		if ((end = sp_matching_paren(in)) < 0)
			return tp_fail(t, "request_context missing `)`");
		if ((r = tp_fields(t, sp_sub(in, 0, (size_t)end), 0, false, &ev->context)) != 0)
			return r;
		ev->has_context = true;
		after = sp_trim(sp_sub(in, (size_t)end + 1, in.n));
	}

	/* The event group runs from the first `(` to the last `)`. */
	open = memchr(after.p, '(', after.n);
	if (open == NULL)
		return tp_fail(t, "event missing `(`");
	close = memrchr(after.p, ')', after.n);
	if (close == NULL)
		return tp_fail(t, "event missing `)`");
	if (open >= close)
		return tp_fail(t, "event group `(` and `)` are out of order");
	for (i = (size_t)(close - after.p) + 1; i < after.n; i++)
		if (!is_ws(after.p[i]))
			return tp_fail(t, "unexpected text `%.*s` after the event group",
				       SPF(sp_sub(after, i, after.n)));
	if ((r = tp_head(t, sp_trim(sp_sub(after, 0, (size_t)(open - after.p))), ev)) != 0)
		return r;
	return tp_fields(t, sp_sub(after, (size_t)(open - after.p) + 1,
				   (size_t)(close - after.p)), 0, false, &ev->logged);
}

int dw_trace_parse_line(struct dw_arena *a, const char *line, size_t len, uint32_t line_no,
			struct dw_event *ev, char *err, size_t errlen)
{
	struct tp t = { .a = a, .line = line_no, .err = err, .errlen = errlen };
	struct dw_arena_mark m = dw_arena_mark(a);
	struct sp s = sp_trim(sp_make(line, len));
	struct dw_event e;
	size_t bad;
	int r;

	if (errlen != 0)
		err[0] = '\0';
	if (s.n == 0)
		return -ENOENT;
	/* Escapes only ever produce UTF-8, so checking the text once makes every
	 * string of the event UTF-8 (the codec relies on it for keys). */
	if (!dw_utf8_valid(s.p, s.n, &bad))
		return tp_fail(&t, "not valid UTF-8 (byte %zu of the line)",
			       (size_t)(s.p - line) + bad + 1);
	r = tp_line(&t, s, &e);
	if (r != 0) {
		dw_arena_reset(a, m);  /* nothing of a failed line stays behind */
		return r;
	}
	*ev = e;
	return 0;
}

/* --- 6. whole traces --------------------------------------------------------------- */

/* The next line of text from *pos (without its `\n`); false at the end. */
static bool next_line(const char *text, size_t len, size_t *pos, struct sp *line)
{
	const char *nl;

	if (*pos >= len)
		return false;
	nl = memchr(text + *pos, '\n', len - *pos);
	*line = sp_make(text + *pos, nl ? (size_t)(nl - text) - *pos : len - *pos);
	*pos = nl ? (size_t)(nl - text) + 1 : len;
	return true;
}

int dw_trace_parse(struct dw_arena *a, const char *text, size_t len, struct dw_event **events,
		   size_t *n_events, char *err, size_t errlen)
{
	struct dw_event one;
	struct dw_arena_mark m = dw_arena_mark(a);
	struct dw_event *evs = NULL;
	size_t n = 0, k = 0, pos = 0;
	uint32_t line_no = 0;
	struct sp line;
	int r;

	if (errlen != 0)
		err[0] = '\0';
	/* Count first, so the events land in one array of the right size. */
	while (next_line(text, len, &pos, &line))
		if (sp_trim(line).n != 0)
			n++;
	if (n != 0 && (evs = DW_NEWN(a, struct dw_event, n)) == NULL) {
		if (errlen != 0)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pos = 0;
	while (next_line(text, len, &pos, &line)) {
		if (line_no == UINT32_MAX) {
			if (errlen != 0)
				snprintf(err, errlen, "trace has more than %" PRIu32 " lines",
					 UINT32_MAX);
			dw_arena_reset(a, m);
			return -EINVAL;
		}
		line_no++;
		/* parse into a local: with only blank lines there is no array at all */
		r = dw_trace_parse_line(a, line.p, line.n, line_no, &one, err, errlen);
		if (r == -ENOENT)
			continue;
		if (r != 0) {
			dw_arena_reset(a, m);
			return r;
		}
		evs[k++] = one;
	}
	*events = evs;
	*n_events = k;
	return 0;
}

/* --- 7. output ---------------------------------------------------------------------- */

/* Formatting refuses (-EINVAL) what would not parse back to the same event:
 * bytes that are not UTF-8, type paths and namespaces that are not
 * `Ident::Ident…`, a kind the head cannot carry, a decimal whose text would
 * read back as something else. */

static bool is_ident(const char *p, size_t n)
{
	if (n == 0 || !((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z') ||
			p[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return false;
	return true;
}

static bool is_path(struct dw_str s)
{
	size_t start = 0;

	for (size_t i = 0; i + 1 < s.n; i++) {
		if (s.p[i] == ':' && s.p[i + 1] == ':') {
			if (!is_ident(s.p + start, i - start))
				return false;
			start = i + 2;
			i++;
		}
	}
	return is_ident(s.p + start, s.n - start);
}

static bool is_utf8(struct dw_str s)
{
	size_t bad;

	return dw_utf8_valid(s.p, s.n, &bad);
}

/* A quoted string the parser decodes back to s; `also` (0 for none) is one
 * more character to hide behind \u{…} from a scan that does not honour
 * quotes (`)` in scope, `(` in the event head). */
static int tf_quoted(struct dw_buf *b, struct dw_str s, char also)
{
	size_t run = 0;
	int r;

	if (!is_utf8(s))
		return -EINVAL;
	if ((r = dw_buf_putc(b, '"')) != 0)
		return r;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		const char *esc = NULL;

		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\0': esc = "\\0"; break;
		default:
			if (c >= 0x20 && c != 0x7f && (also == 0 || c != (unsigned char)also))
				continue;
		}
		if ((r = dw_buf_put(b, s.p + run, i - run)) != 0)
			return r;
		r = esc ? dw_buf_put(b, esc, 2) : dw_buf_printf(b, "\\u{%x}", c);
		if (r != 0)
			return r;
		run = i + 1;
	}
	if ((r = dw_buf_put(b, s.p + run, s.n - run)) != 0)
		return r;
	return dw_buf_putc(b, '"');
}

static int tf_uid(struct dw_buf *b, struct dw_str type, struct dw_str id, char also)
{
	int r;

	if (!is_path(type))
		return -EINVAL;
	if ((r = dw_buf_put(b, type.p, type.n)) != 0 || (r = dw_buf_put(b, "::", 2)) != 0)
		return r;
	return tf_quoted(b, id, also);
}

static int tf_key(struct dw_buf *b, struct dw_str k)
{
	if (is_ident(k.p, k.n))
		return dw_buf_put(b, k.p, k.n);
	return tf_quoted(b, k, 0);
}

static int tf_value(struct dw_buf *b, const struct dw_tval *v, unsigned depth);

/* `k: v, k: v`, the values at depth (as the parser counts: a group's own
 * values are at 0); a zeroed (kind 0) value stands for the empty record. */
static int tf_fields(struct dw_buf *b, const struct dw_tval *rec, unsigned depth)
{
	int r = 0;

	if (rec->kind == 0)
		return 0;
	if (rec->kind != DW_TV_RECORD)
		return -EINVAL;
	for (uint32_t i = 0; r == 0 && i < rec->n; i++) {
		if (i != 0)
			r = dw_buf_put(b, ", ", 2);
		if (r == 0)
			r = tf_key(b, rec->fields[i].key);
		if (r == 0)
			r = dw_buf_put(b, ": ", 2);
		if (r == 0)
			r = tf_value(b, &rec->fields[i].val, depth);
	}
	return r;
}

static int tf_value(struct dw_buf *b, const struct dw_tval *v, unsigned depth)
{
	int r = 0;

	if (depth > TP_MAX_DEPTH)
		return -EINVAL;        /* the parser would refuse it */
	switch (v->kind) {
	case DW_TV_NULL:
		return dw_buf_put(b, "null", 4);
	case DW_TV_BOOL:
		return v->b ? dw_buf_put(b, "true", 4) : dw_buf_put(b, "false", 5);
	case DW_TV_INT:
		return dw_buf_printf(b, "%" PRId64, v->i);
	case DW_TV_DECIMAL:
		/* bare, and only when the parser will read a decimal again */
		if (!is_float_with_dot(sp_make(v->s.p, v->s.n)))
			return -EINVAL;
		return dw_buf_put(b, v->s.p, v->s.n);
	case DW_TV_STRING:
		return tf_quoted(b, v->s, 0);
	case DW_TV_ENTITY:
		return tf_uid(b, v->type, v->s, 0);
	case DW_TV_ARRAY:
		r = dw_buf_putc(b, '[');
		for (uint32_t i = 0; r == 0 && i < v->n; i++) {
			if (i != 0)
				r = dw_buf_put(b, ", ", 2);
			if (r == 0)
				r = tf_value(b, &v->items[i], depth + 1);
		}
		return r ? r : dw_buf_putc(b, ']');
	case DW_TV_RECORD:
		r = dw_buf_putc(b, '{');
		if (r == 0)
			r = tf_fields(b, v, depth + 1);
		return r ? r : dw_buf_putc(b, '}');
	}
	return -EINVAL;
}

/* The kind sits between the id's closing quote and the group's `(`. */
static bool kind_ok(struct dw_str k)
{
	if (k.n == 0 || !is_utf8(k) || is_ws(k.p[0]) || is_ws(k.p[k.n - 1]))
		return false;
	for (size_t i = 0; i < k.n; i++) {
		unsigned char c = (unsigned char)k.p[i];

		if (c < 0x20 || c == 0x7f || c == '(' || c == ')')
			return false;
	}
	return true;
}

void dw_trace_ts_text(int64_t ns, char buf[DW_TRACE_TS_MAX])
{
	int64_t secs = ns / DW_NS_PER_SEC, frac = ns % DW_NS_PER_SEC;
	int n;

	if (frac == 0) {
		snprintf(buf, DW_TRACE_TS_MAX, "%" PRId64, secs);
		return;
	}
	n = snprintf(buf, DW_TRACE_TS_MAX, "%s%" PRId64 ".%09" PRId64, ns < 0 ? "-" : "",
		     secs < 0 ? -secs : secs, frac < 0 ? -frac : frac);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
}

static int tf_event(struct dw_buf *b, const struct dw_event *ev)
{
	char ts[DW_TRACE_TS_MAX];
	int r;

	if (!is_path(ev->ns) || !kind_ok(ev->kind))
		return -EINVAL;
	dw_trace_ts_text(ev->ts, ts);
	if ((r = dw_buf_printf(b, "@%s ", ts)) != 0)
		return r;
	if (ev->has_principal || ev->has_resource) {
		r = dw_buf_put(b, "scope(", 6);
		if (r == 0 && ev->has_principal) {
			r = dw_buf_put(b, "principal: ", 11);
			if (r == 0)
				r = tf_uid(b, ev->principal_type, ev->principal_id, ')');
		}
		if (r == 0 && ev->has_principal && ev->has_resource)
			r = dw_buf_put(b, ", ", 2);
		if (r == 0 && ev->has_resource) {
			r = dw_buf_put(b, "resource: ", 10);
			if (r == 0)
				r = tf_uid(b, ev->resource_type, ev->resource_id, ')');
		}
		if (r == 0)
			r = dw_buf_put(b, ") ", 2);
		if (r != 0)
			return r;
	}
	/* the parser refuses an envelope naming one entity twice */
	for (uint32_t i = 0; i < ev->n_entities; i++)
		for (uint32_t k = 0; k < i; k++)
			if (dw_str_eq(ev->entities[i].type, ev->entities[k].type) &&
			    dw_str_eq(ev->entities[i].id, ev->entities[k].id))
				return -EINVAL;
	if (ev->n_entities != 0) {
		r = dw_buf_put(b, "entities(", 9);
		for (uint32_t i = 0; r == 0 && i < ev->n_entities; i++) {
			const struct dw_event_entity *e = &ev->entities[i];

			if (i != 0)
				r = dw_buf_put(b, ", ", 2);
			if (r == 0)
				r = tf_uid(b, e->type, e->id, 0);
			if (r == 0)
				r = dw_buf_put(b, ": {", 3);
			/* the parser reads an entity's attributes one level down */
			if (r == 0)
				r = tf_fields(b, &e->attrs, 1);
			if (r == 0)
				r = dw_buf_putc(b, '}');
			if (r == 0 && e->n_parents != 0)
				r = dw_buf_put(b, " in [", 5);
			for (uint32_t k = 0; r == 0 && k < e->n_parents; k++) {
				if (k != 0)
					r = dw_buf_put(b, ", ", 2);
				if (r == 0)
					r = tf_uid(b, e->parent_types[k], e->parent_ids[k], 0);
			}
			if (r == 0 && e->n_parents != 0)
				r = dw_buf_putc(b, ']');
		}
		if (r == 0)
			r = dw_buf_put(b, ") ", 2);
		if (r != 0)
			return r;
	}
	if (ev->has_context) {
		r = dw_buf_put(b, "request_context(", 16);
		if (r == 0)
			r = tf_fields(b, &ev->context, 0);
		if (r == 0)
			r = dw_buf_put(b, ") ", 2);
		if (r != 0)
			return r;
	}
	if ((r = dw_buf_put(b, ev->ns.p, ev->ns.n)) != 0 || (r = dw_buf_put(b, "::", 2)) != 0 ||
	    (r = tf_quoted(b, ev->action, '(')) != 0 || (r = dw_buf_put(b, "::", 2)) != 0 ||
	    (r = dw_buf_put(b, ev->kind.p, ev->kind.n)) != 0 || (r = dw_buf_putc(b, '(')) != 0 ||
	    (r = tf_fields(b, &ev->logged, 0)) != 0)
		return r;
	return dw_buf_putc(b, ')');
}

int dw_trace_format(struct dw_buf *b, const struct dw_event *ev)
{
	size_t start = b->n;
	int r = tf_event(b, ev);

	if (r != 0 && b->p != NULL) {  /* nothing half-written stays in b */
		b->n = start;
		b->p[start] = '\0';
	}
	return r;
}
