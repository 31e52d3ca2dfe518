/* tval.c - values of the temporal domain (see tval.h).
 *
 * Divisions, in order:
 *   1. construction: decimals, canonical records
 *   2. dom_eq and its hash
 *   3. lookups: fields and dotted paths
 *   4. copies: into an arena, into one caller block
 *   5. JSON out (messages, `cairn history show`)
 *   6. JSON in (Cedar-style JSON through jansson)
 *
 * Nothing here recurses without a bound that someone checked: values come
 * from the trace parser, the event codec or dw_tval_from_json, each of which
 * refuses nesting past 128 levels. */
#include "tval.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ext.h"
#include "value.h"

/* Nesting accepted by dw_tval_from_json, the same bound as the trace parser
 * and the codec: the walk recurses once per level. */
#define TV_JSON_MAX_DEPTH 128

/* --- 1. construction -------------------------------------------------------- */

struct dw_tval dw_tv_decimal(struct dw_str text)
{
	struct dw_tval v = { .kind = DW_TV_DECIMAL, .s = text };
	const char *why;
	int64_t x;

	/* Only a spelling Cedar's decimal() accepts compares by value; any
	 * other text (`1`, `1.5e3`, `.5`) stays comparable by its bytes. */
	if (dw_decimal_parse(text.p, text.n, &x, &why) == 0) {
		v.dec_ok = true;
		v.i = x;
	}
	return v;
}

static int tv_field_cmp(const void *x, const void *y)
{
	const struct dw_tfv *a = x, *b = y;

	return dw_str_cmp(a->key, b->key);
}

int dw_tval_record(struct dw_arena *a, struct dw_tfv *f, uint32_t n, struct dw_tval *out,
		   struct dw_str *dup)
{
	struct dw_tfv *copy = NULL;
	bool sorted = true;

	/* Traces and decoders mostly hand fields over already in order: check
	 * before paying for a sort. */
	for (uint32_t i = 1; i < n && sorted; i++)
		if (dw_str_cmp(f[i - 1].key, f[i].key) >= 0)
			sorted = false;
	if (!sorted) {
		qsort(f, n, sizeof *f, tv_field_cmp);
		for (uint32_t i = 1; i < n; i++) {
			if (dw_str_eq(f[i - 1].key, f[i].key)) {
				if (dup != NULL)
					*dup = f[i].key;
				return -EEXIST;
			}
		}
	}
	if (n != 0) {
		copy = DW_NEWN(a, struct dw_tfv, n);
		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, f, (size_t)n * sizeof *f);
	}
	memset(out, 0, sizeof *out);
	out->kind = DW_TV_RECORD;
	out->n = n;
	out->fields = copy;
	return 0;
}

/* --- 2. dom_eq and hash ------------------------------------------------------- */

bool dw_tval_eq(const struct dw_tval *a, const struct dw_tval *b)
{
	if (a == b)
		return true;
	if (a->kind != b->kind)
		return false;          /* no coercion: 1 != 1.0 != "1" */
	switch (a->kind) {
	case DW_TV_NULL:
		return true;
	case DW_TV_BOOL:
		return a->b == b->b;
	case DW_TV_INT:
		return a->i == b->i;
	case DW_TV_DECIMAL:
		/* Identical text has the same validity, so "one valid, one not"
		 * can only be unequal; comparing the text says so. */
		if (a->dec_ok && b->dec_ok)
			return a->i == b->i;
		return dw_str_eq(a->s, b->s);
	case DW_TV_STRING:
		return dw_str_eq(a->s, b->s);
	case DW_TV_ENTITY:
		return dw_str_eq(a->type, b->type) && dw_str_eq(a->s, b->s);
	case DW_TV_ARRAY:
		if (a->n != b->n)
			return false;
		for (uint32_t i = 0; i < a->n; i++)
			if (!dw_tval_eq(&a->items[i], &b->items[i]))
				return false;
		return true;
	case DW_TV_RECORD:
		/* canonical records: the same fields sit at the same index */
		if (a->n != b->n)
			return false;
		for (uint32_t i = 0; i < a->n; i++)
			if (!dw_str_eq(a->fields[i].key, b->fields[i].key) ||
			    !dw_tval_eq(&a->fields[i].val, &b->fields[i].val))
				return false;
		return true;
	}
	return false;                  /* two values of an unknown kind are unequal */
}

static uint64_t tv_hash_u64(uint64_t x, uint64_t seed)
{
	unsigned char b[8];

	/* bytes in a fixed order so a hash never depends on the host */
	for (int k = 0; k < 8; k++)
		b[k] = (unsigned char)(x >> (8 * k));
	return dw_hash_bytes(b, sizeof b, seed);
}

/* Length first, so ("ab","c") and ("a","bc") hash apart. */
static uint64_t tv_hash_str(struct dw_str s, uint64_t seed)
{
	return dw_hash_str(s, tv_hash_u64(s.n, seed));
}

uint64_t dw_tval_hash(const struct dw_tval *v, uint64_t seed)
{
	uint64_t h = tv_hash_u64(v->kind, seed);

	switch (v->kind) {
	case DW_TV_BOOL:
		return tv_hash_u64(v->b, h);
	case DW_TV_INT:
		return tv_hash_u64((uint64_t)v->i, h);
	case DW_TV_DECIMAL:
		/* by value when valid (1.5 and 1.50 meet), else by text */
		if (v->dec_ok)
			return tv_hash_u64((uint64_t)v->i, tv_hash_u64(1, h));
		return tv_hash_str(v->s, tv_hash_u64(0, h));
	case DW_TV_STRING:
		return tv_hash_str(v->s, h);
	case DW_TV_ENTITY:
		return tv_hash_str(v->s, tv_hash_str(v->type, h));
	case DW_TV_ARRAY:
		h = tv_hash_u64(v->n, h);
		for (uint32_t i = 0; i < v->n; i++)
			h = dw_tval_hash(&v->items[i], h);
		return h;
	case DW_TV_RECORD:
		h = tv_hash_u64(v->n, h);
		for (uint32_t i = 0; i < v->n; i++)
			h = dw_tval_hash(&v->fields[i].val, tv_hash_str(v->fields[i].key, h));
		return h;
	default:
		return h;              /* NULL and unknown kinds: the kind alone */
	}
}

/* --- 3. lookups --------------------------------------------------------------- */

const struct dw_tval *dw_tval_field(const struct dw_tval *rec, struct dw_str key)
{
	uint32_t lo = 0, hi;

	if (rec == NULL || rec->kind != DW_TV_RECORD)
		return NULL;
	hi = rec->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(rec->fields[mid].key, key);

		if (c == 0)
			return &rec->fields[mid].val;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct dw_tval *dw_tval_path(const struct dw_tval *rec, struct dw_str dotted)
{
	const struct dw_tval *v = rec;
	uint32_t start = 0;

	/* Segment by segment; a key holding '.' is unreachable this way, as it
	 * is for the `input.path` fields predicates name. */
	for (uint32_t i = 0; i <= dotted.n; i++) {
		if (i < dotted.n && dotted.p[i] != '.')
			continue;
		v = dw_tval_field(v, dw_str_make(dotted.p + start, i - start));
		if (v == NULL)
			return NULL;
		start = i + 1;
	}
	return v;
}

/* --- 4. copies ---------------------------------------------------------------- */

static size_t tv_round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* A copied string keeps a NUL after its bytes (handy for messages); the empty
 * string points at a shared literal instead of taking eight bytes. */
static size_t tv_str_size(struct dw_str s)
{
	return s.n == 0 ? 0 : tv_round8((size_t)s.n + 1);
}

static struct dw_str tv_str_copy(struct dw_str s, char **buf)
{
	char *p = *buf;

	if (s.n == 0)
		return dw_str_make("", 0);
	memcpy(p, s.p, s.n);
	p[s.n] = '\0';
	*buf = p + tv_str_size(s);
	return dw_str_make(p, s.n);
}

size_t dw_tval_deep_size(const struct dw_tval *v)
{
	size_t n = 0;

	/* The sum stays below twice the bytes the value already occupies, so it
	 * cannot wrap. */
	switch (v->kind) {
	case DW_TV_DECIMAL:
	case DW_TV_STRING:
		return tv_str_size(v->s);
	case DW_TV_ENTITY:
		return tv_str_size(v->type) + tv_str_size(v->s);
	case DW_TV_ARRAY:
		n = tv_round8((size_t)v->n * sizeof(struct dw_tval));
		for (uint32_t i = 0; i < v->n; i++)
			n += dw_tval_deep_size(&v->items[i]);
		return n;
	case DW_TV_RECORD:
		n = tv_round8((size_t)v->n * sizeof(struct dw_tfv));
		for (uint32_t i = 0; i < v->n; i++)
			n += tv_str_size(v->fields[i].key) + dw_tval_deep_size(&v->fields[i].val);
		return n;
	default:
		return 0;
	}
}

void dw_tval_deep_copy(const struct dw_tval *v, struct dw_tval *out, char **buf)
{
	struct dw_tval *items;
	struct dw_tfv *fields;

	*out = *v;
	switch (v->kind) {
	case DW_TV_DECIMAL:
	case DW_TV_STRING:
		out->s = tv_str_copy(v->s, buf);
		break;
	case DW_TV_ENTITY:
		out->type = tv_str_copy(v->type, buf);
		out->s = tv_str_copy(v->s, buf);
		break;
	case DW_TV_ARRAY:
		if (v->n == 0) {
			out->items = NULL;
			break;
		}
		items = (struct dw_tval *)*buf;
		*buf += tv_round8((size_t)v->n * sizeof *items);
		for (uint32_t i = 0; i < v->n; i++)
			dw_tval_deep_copy(&v->items[i], &items[i], buf);
		out->items = items;
		break;
	case DW_TV_RECORD:
		if (v->n == 0) {
			out->fields = NULL;
			break;
		}
		fields = (struct dw_tfv *)*buf;
		*buf += tv_round8((size_t)v->n * sizeof *fields);
		for (uint32_t i = 0; i < v->n; i++) {
			fields[i].key = tv_str_copy(v->fields[i].key, buf);
			dw_tval_deep_copy(&v->fields[i].val, &fields[i].val, buf);
		}
		out->fields = fields;
		break;
	default:
		break;
	}
}

int dw_tval_copy(struct dw_arena *a, const struct dw_tval *v, struct dw_tval *out)
{
	size_t need = dw_tval_deep_size(v);
	char *buf = NULL;

	if (need != 0 && (buf = dw_arena_alloc(a, need, 8)) == NULL)
		return -ENOMEM;
	dw_tval_deep_copy(v, out, &buf);
	return 0;
}

/* --- 5. JSON out -------------------------------------------------------------- */

/* A JSON string.  Control characters (NUL included) are escaped, as JSON
 * requires; bytes that are not UTF-8 cannot be said in JSON at all and come
 * out as U+FFFD, which is acceptable for a rendering. */
static int tv_json_str(struct dw_buf *b, struct dw_str s)
{
	int r = dw_buf_putc(b, '"');
	size_t i = 0, run = 0;

	while (r == 0 && i < s.n) {
		unsigned char c = (unsigned char)s.p[i];
		const char *esc = NULL;
		size_t bad, len;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0x80) {
			/* length of this sequence if valid, else it is one bad byte */
			len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
			      (c & 0xF8) == 0xF0 ? 4 : 1;
			if (len > 1 && i + len <= s.n && dw_utf8_valid(s.p + i, len, &bad)) {
				i += len;
				continue;
			}
		}
		r = dw_buf_put(b, s.p + run, i - run);
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		}
		if (r == 0) {
			if (esc != NULL)
				r = dw_buf_put(b, esc, 2);
			else if (c < 0x80)
				r = dw_buf_printf(b, "\\u%04x", c);
			else
				r = dw_buf_put(b, "\\ufffd", 6);
		}
		i++;
		run = i;
	}
	if (r == 0)
		r = dw_buf_put(b, s.p + run, i - run);
	return r ? r : dw_buf_putc(b, '"');
}

int dw_tval_to_json(struct dw_buf *b, const struct dw_tval *v)
{
	int r = 0;

	switch (v->kind) {
	case DW_TV_NULL:
		return dw_buf_put(b, "null", 4);
	case DW_TV_BOOL:
		return v->b ? dw_buf_put(b, "true", 4) : dw_buf_put(b, "false", 5);
	case DW_TV_INT:
		return dw_buf_printf(b, "%" PRId64, v->i);
	case DW_TV_DECIMAL:
		/* the text as written, so an invalid spelling shows what it was */
		r = dw_buf_put(b, "{\"__extn\":{\"fn\":\"decimal\",\"arg\":", 32);
		if (r == 0)
			r = tv_json_str(b, v->s);
		return r ? r : dw_buf_put(b, "}}", 2);
	case DW_TV_STRING:
		return tv_json_str(b, v->s);
	case DW_TV_ENTITY:
		r = dw_buf_put(b, "{\"__entity\":{\"type\":", 20);
		if (r == 0)
			r = tv_json_str(b, v->type);
		if (r == 0)
			r = dw_buf_put(b, ",\"id\":", 6);
		if (r == 0)
			r = tv_json_str(b, v->s);
		return r ? r : dw_buf_put(b, "}}", 2);
	case DW_TV_ARRAY:
		r = dw_buf_putc(b, '[');
		for (uint32_t i = 0; r == 0 && i < v->n; i++) {
			if (i != 0)
				r = dw_buf_putc(b, ',');
			if (r == 0)
				r = dw_tval_to_json(b, &v->items[i]);
		}
		return r ? r : dw_buf_putc(b, ']');
	case DW_TV_RECORD:
		r = dw_buf_putc(b, '{');
		for (uint32_t i = 0; r == 0 && i < v->n; i++) {
			if (i != 0)
				r = dw_buf_putc(b, ',');
			if (r == 0)
				r = tv_json_str(b, v->fields[i].key);
			if (r == 0)
				r = dw_buf_putc(b, ':');
			if (r == 0)
				r = dw_tval_to_json(b, &v->fields[i].val);
		}
		return r ? r : dw_buf_putc(b, '}');
	}
	return -EINVAL;                /* not a value: nothing sensible to print */
}

/* --- 6. JSON in --------------------------------------------------------------- */

struct tv_json {
	struct dw_arena *a;
	struct dw_buf path;            /* `.input.path[2]`, for messages */
	char *err;
	size_t errlen;
};

static int tv_json_fail(struct tv_json *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int tv_json_fail(struct tv_json *c, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->errlen == 0)
		return code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->path.n == 0)
		snprintf(c->err, c->errlen, "%s", msg);
	else if (c->path.n <= 200)
		snprintf(c->err, c->errlen, "at %s: %s", c->path.p, msg);
	else                           /* keep both ends of a deep path */
		snprintf(c->err, c->errlen, "at %.100s...%s: %s", c->path.p,
			 c->path.p + c->path.n - 80, msg);
	return code;
}

static const char *tv_json_kind(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a non-integer number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "an unknown JSON value";
}

static int tv_json_string(struct tv_json *c, const json_t *j, struct dw_str *out)
{
	size_t n = json_string_length(j);
	char *p;

	if (n > UINT32_MAX)
		return tv_json_fail(c, -EINVAL, "string longer than 4 GiB");
	p = dw_arena_strndup(c->a, json_string_value(j), n);
	if (p == NULL)
		return tv_json_fail(c, -ENOMEM, "out of memory");
	*out = dw_str_make(p, n);
	return 0;
}

/* The member `key` of an escape body, which must be a string. */
static int tv_json_member(struct tv_json *c, const json_t *body, const char *form,
			  const char *key, struct dw_str *out)
{
	const json_t *m = json_object_get(body, key);

	if (m == NULL)
		return tv_json_fail(c, -EINVAL, "%s without \"%s\"", form, key);
	if (!json_is_string(m))
		return tv_json_fail(c, -EINVAL, "\"%s\" of %s must be a string, got %s", key,
				    form, tv_json_kind(m));
	return tv_json_string(c, m, out);
}

/* {"__entity":{"type":T,"id":I}} and {"__extn":{"fn":"decimal","arg":A}}. */
static int tv_json_escape(struct tv_json *c, const json_t *j, const char *key,
			  struct dw_tval *out)
{
	const json_t *body = json_object_get(j, key);
	bool entity = strcmp(key, "__entity") == 0;
	const char *form = entity ? "an __entity" : "an __extn";
	const char *k1 = entity ? "type" : "fn", *k2 = entity ? "id" : "arg";
	struct dw_str s1, s2;
	int r;

	if (json_object_size(j) != 1)
		return tv_json_fail(c, -EINVAL, "an object with \"%s\" must have no other keys",
				    key);
	if (!json_is_object(body))
		return tv_json_fail(c, -EINVAL, "\"%s\" must hold an object, got %s", key,
				    tv_json_kind(body));
	if (json_object_size(body) != 2 || json_object_get(body, k1) == NULL ||
	    json_object_get(body, k2) == NULL)
		return tv_json_fail(c, -EINVAL, "%s object has exactly \"%s\" and \"%s\"",
				    form, k1, k2);
	if ((r = tv_json_member(c, body, form, k1, &s1)) != 0 ||
	    (r = tv_json_member(c, body, form, k2, &s2)) != 0)
		return r;
	if (entity) {
		memset(out, 0, sizeof *out);
		out->kind = DW_TV_ENTITY;
		out->type = s1;
		out->s = s2;
		return 0;
	}
	/* The temporal domain has decimals only; ip, datetime and duration
	 * would silently become something else. */
	if (!dw_str_eq_c(s1, "decimal"))
		return tv_json_fail(c, -EINVAL, "extension function `%s` has no temporal value "
				    "(only decimal does)", s1.p);
	*out = dw_tv_decimal(s2);
	return 0;
}

static int tv_json_value(struct tv_json *c, const json_t *j, unsigned depth,
			 struct dw_tval *out);

static int tv_json_array(struct tv_json *c, const json_t *j, unsigned depth,
			 struct dw_tval *out)
{
	size_t n = json_array_size(j), mark = c->path.n;
	struct dw_tval *items = NULL;
	int r;

	if (n > UINT32_MAX)
		return tv_json_fail(c, -EINVAL, "array longer than 2^32 items");
	if (n != 0 && (items = DW_NEWN(c->a, struct dw_tval, n)) == NULL)
		return tv_json_fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (dw_buf_printf(&c->path, "[%zu]", i) != 0)
			return tv_json_fail(c, -ENOMEM, "out of memory");
		r = tv_json_value(c, json_array_get(j, i), depth + 1, &items[i]);
		if (r != 0)
			return r;
		c->path.n = mark;
		c->path.p[mark] = '\0';
	}
	memset(out, 0, sizeof *out);
	out->kind = DW_TV_ARRAY;
	out->n = (uint32_t)n;
	out->items = items;
	return 0;
}

static int tv_json_object(struct tv_json *c, const json_t *j, unsigned depth,
			  struct dw_tval *out)
{
	size_t n = json_object_size(j), i = 0, mark = c->path.n, klen;
	struct dw_tfv *f = NULL;
	struct dw_str dup;
	const char *key;
	json_t *v;
	int r;

	if (json_object_get(j, "__entity") != NULL)
		return tv_json_escape(c, j, "__entity", out);
	if (json_object_get(j, "__extn") != NULL)
		return tv_json_escape(c, j, "__extn", out);
	if (n > UINT32_MAX)
		return tv_json_fail(c, -EINVAL, "object with more than 2^32 keys");
	if (n != 0 && (f = DW_NEWN(c->a, struct dw_tfv, n)) == NULL)
		return tv_json_fail(c, -ENOMEM, "out of memory");
	/* jansson's iteration takes a mutable object; nothing here changes it */
	json_object_keylen_foreach((json_t *)j, key, klen, v) {
		char *k;

		size_t bad;

		if (klen > UINT32_MAX)
			return tv_json_fail(c, -EINVAL, "key longer than 4 GiB");
		/* jansson checks what it parses, not what a caller built; the
		 * codec refuses keys that are not UTF-8, so refuse them here */
		if (!dw_utf8_valid(key, klen, &bad))
			return tv_json_fail(c, -EINVAL, "key is not UTF-8");
		if ((k = dw_arena_strndup(c->a, key, klen)) == NULL)
			return tv_json_fail(c, -ENOMEM, "out of memory");
		f[i].key = dw_str_make(k, klen);
		if (dw_buf_putc(&c->path, '.') != 0 ||
		    dw_buf_put(&c->path, key, klen) != 0)
			return tv_json_fail(c, -ENOMEM, "out of memory");
		r = tv_json_value(c, v, depth + 1, &f[i].val);
		if (r != 0)
			return r;
		c->path.n = mark;
		c->path.p[mark] = '\0';
		i++;
	}
	r = dw_tval_record(c->a, f, (uint32_t)n, out, &dup);
	if (r == -EEXIST)              /* jansson dedupes; only a NUL-split key gets here */
		return tv_json_fail(c, -EINVAL, "duplicate key \"%.*s\"", (int)dup.n, dup.p);
	if (r != 0)
		return tv_json_fail(c, r, "out of memory");
	return 0;
}

static int tv_json_value(struct tv_json *c, const json_t *j, unsigned depth,
			 struct dw_tval *out)
{
	if (depth > TV_JSON_MAX_DEPTH)
		return tv_json_fail(c, -EINVAL, "value nested deeper than the limit of %d",
				    TV_JSON_MAX_DEPTH);
	memset(out, 0, sizeof *out);
	switch (json_typeof(j)) {
	case JSON_NULL:
		out->kind = DW_TV_NULL;
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		out->kind = DW_TV_BOOL;
		out->b = json_is_true(j);
		return 0;
	case JSON_INTEGER:
		*out = dw_tv_int((int64_t)json_integer_value(j));
		return 0;
	case JSON_REAL:
		/* A float would have to become a decimal or an integer, and
		 * either guess changes what the value equals. */
		return tv_json_fail(c, -EINVAL, "number %.17g is not an integer; write a decimal as "
				    "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"...\"}}",
				    json_real_value(j));
	case JSON_STRING:
		out->kind = DW_TV_STRING;
		return tv_json_string(c, j, &out->s);
	case JSON_ARRAY:
		return tv_json_array(c, j, depth, out);
	case JSON_OBJECT:
		return tv_json_object(c, j, depth, out);
	}
	return tv_json_fail(c, -EINVAL, "unknown JSON value");
}

_Static_assert(sizeof(json_int_t) == sizeof(int64_t), "jansson must use 64-bit integers");

int dw_tval_from_json(struct dw_arena *a, const struct json_t *j, struct dw_tval *out,
		      char *err, size_t errlen)
{
	struct tv_json c = { .a = a, .err = err, .errlen = errlen };
	struct dw_arena_mark m = dw_arena_mark(a);
	struct dw_tval v;
	int r;

	if (errlen != 0)
		err[0] = '\0';
	if (j == NULL)
		return tv_json_fail(&c, -EINVAL, "no JSON value");
	r = tv_json_value(&c, j, 0, &v);
	dw_buf_free(&c.path);
	if (r != 0) {
		dw_arena_reset(a, m);  /* a failed conversion leaves nothing behind */
		return r;
	}
	*out = v;
	return 0;
}
