/* value.c - see value.h. */
#include "value.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"

const struct dw_set dw_empty_set = { 0 };
const struct dw_rec dw_empty_rec = { 0 };

void dw_uid_init(struct dw_uid *u, struct dw_str type, struct dw_str id)
{
	u->type = type;
	u->id = id;
	/* the type's hash seeds the id's so ("A","B::C") and ("A::B","C") differ */
	u->hash = dw_hash_str(id, dw_hash_str(type, 0x9e3779b97f4a7c15ULL));
}

struct dw_uid *dw_uid_new(struct dw_arena *a, struct dw_str type, struct dw_str id)
{
	struct dw_uid *u = DW_NEW(a, struct dw_uid);
	char *t, *i;

	if (u == NULL)
		return NULL;
	t = dw_arena_strndup(a, type.p ? type.p : "", type.n);
	i = dw_arena_strndup(a, id.p ? id.p : "", id.n);
	if (t == NULL || i == NULL)
		return NULL;
	dw_uid_init(u, dw_str_make(t, type.n), dw_str_make(i, id.n));
	return u;
}

static int dw_cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int dw_uid_cmp(const struct dw_uid *a, const struct dw_uid *b)
{
	int c = dw_str_cmp(a->type, b->type);

	return c != 0 ? c : dw_str_cmp(a->id, b->id);
}

int dw_val_cmp(struct dw_val a, struct dw_val b)
{
	if (a.kind != b.kind)
		return a.kind < b.kind ? -1 : 1;
	switch (a.kind) {
	case DW_V_BOOL:
		return (int)a.b - (int)b.b;
	case DW_V_LONG:
	case DW_V_DECIMAL:
	case DW_V_DATETIME:
	case DW_V_DURATION:
		return dw_cmp_i64(a.i, b.i);
	case DW_V_STRING:
		return dw_str_cmp(a.s, b.s);
	case DW_V_ENTITY:
		return a.uid == b.uid ? 0 : dw_uid_cmp(a.uid, b.uid);
	case DW_V_SET: {
		uint32_t n = a.set->n < b.set->n ? a.set->n : b.set->n;
		for (uint32_t i = 0; i < n; i++) {
			int c = dw_val_cmp(a.set->v[i], b.set->v[i]);
			if (c != 0)
				return c;
		}
		return dw_cmp_i64(a.set->n, b.set->n);
	}
	case DW_V_RECORD: {
		uint32_t n = a.rec->n < b.rec->n ? a.rec->n : b.rec->n;
		for (uint32_t i = 0; i < n; i++) {
			int c = dw_str_cmp(a.rec->f[i].key, b.rec->f[i].key);
			if (c == 0)
				c = dw_val_cmp(a.rec->f[i].val, b.rec->f[i].val);
			if (c != 0)
				return c;
		}
		return dw_cmp_i64(a.rec->n, b.rec->n);
	}
	case DW_V_IP: {
		int c = (int)a.ip->v6 - (int)b.ip->v6;
		if (c == 0)
			c = memcmp(a.ip->addr, b.ip->addr, 16);
		if (c == 0)
			c = (int)a.ip->prefix - (int)b.ip->prefix;
		return c;
	}
	}
	return 0;
}

bool dw_val_eq(struct dw_val a, struct dw_val b)
{
	if (a.kind != b.kind)
		return false;
	switch (a.kind) {
	case DW_V_BOOL:
		return a.b == b.b;
	case DW_V_LONG:
	case DW_V_DECIMAL:
	case DW_V_DATETIME:
	case DW_V_DURATION:
		return a.i == b.i;
	case DW_V_STRING:
		return dw_str_eq(a.s, b.s);
	case DW_V_ENTITY:
		return dw_uid_eq(a.uid, b.uid);
	case DW_V_IP:
		return dw_ip_eq(a.ip, b.ip);
	case DW_V_SET:
		if (a.set == b.set)
			return true;
		if (a.set->n != b.set->n)
			return false;
		for (uint32_t i = 0; i < a.set->n; i++)
			if (!dw_val_eq(a.set->v[i], b.set->v[i]))
				return false;
		return true;
	case DW_V_RECORD:
		if (a.rec == b.rec)
			return true;
		if (a.rec->n != b.rec->n)
			return false;
		for (uint32_t i = 0; i < a.rec->n; i++)
			if (!dw_str_eq(a.rec->f[i].key, b.rec->f[i].key) ||
			    !dw_val_eq(a.rec->f[i].val, b.rec->f[i].val))
				return false;
		return true;
	}
	return false;
}

static int dw_val_qcmp(const void *x, const void *y)
{
	return dw_val_cmp(*(const struct dw_val *)x, *(const struct dw_val *)y);
}

const struct dw_set *dw_set_build(struct dw_arena *a, struct dw_val *v, uint32_t n)
{
	struct dw_set *s;
	uint32_t m = 0;

	if (n > 1)
		qsort(v, n, sizeof *v, dw_val_qcmp);
	for (uint32_t i = 0; i < n; i++)
		if (m == 0 || dw_val_cmp(v[m - 1], v[i]) != 0)
			v[m++] = v[i];
	s = dw_arena_alloc(a, sizeof *s + (size_t)m * sizeof(struct dw_val), _Alignof(struct dw_set));
	if (s == NULL)
		return NULL;
	s->n = m;
	if (m != 0)
		memcpy(s->v, v, (size_t)m * sizeof *v);
	return s;
}

/* Stable order on keys that remembers the caller's position, so a duplicate
 * can be reported as the later of the two occurrences. */
struct dw_field_pos {
	struct dw_field f;
	uint32_t pos;
};

static int dw_field_qcmp(const void *x, const void *y)
{
	const struct dw_field_pos *a = x, *b = y;
	int c = dw_str_cmp(a->f.key, b->f.key);

	return c != 0 ? c : dw_cmp_i64(a->pos, b->pos);
}

const struct dw_rec *dw_rec_build(struct dw_arena *a, struct dw_field *f, uint32_t n,
				  uint32_t *dup)
{
	struct dw_rec *r;
	struct dw_field_pos *tmp = NULL;
	bool sorted = true;

	for (uint32_t i = 1; i < n && sorted; i++)
		if (dw_str_cmp(f[i - 1].key, f[i].key) >= 0)
			sorted = false;
	if (!sorted) {
		tmp = malloc((size_t)n * sizeof *tmp);
		if (tmp == NULL) {
			*dup = UINT32_MAX;
			return NULL;
		}
		for (uint32_t i = 0; i < n; i++) {
			tmp[i].f = f[i];
			tmp[i].pos = i;
		}
		qsort(tmp, n, sizeof *tmp, dw_field_qcmp);
		for (uint32_t i = 1; i < n; i++) {
			if (dw_str_eq(tmp[i - 1].f.key, tmp[i].f.key)) {
				*dup = tmp[i].pos;
				free(tmp);
				return NULL;
			}
		}
		for (uint32_t i = 0; i < n; i++)
			f[i] = tmp[i].f;
		free(tmp);
	}
	r = dw_arena_alloc(a, sizeof *r + (size_t)n * sizeof(struct dw_field), _Alignof(struct dw_rec));
	if (r == NULL) {
		*dup = UINT32_MAX;
		return NULL;
	}
	r->n = n;
	if (n != 0)
		memcpy(r->f, f, (size_t)n * sizeof *f);
	return r;
}

const struct dw_val *dw_rec_get(const struct dw_rec *r, struct dw_str key)
{
	uint32_t lo = 0, hi = r->n;

	/* Records are small: a linear scan beats bisection below a few fields. */
	if (hi <= 8) {
		for (uint32_t i = 0; i < hi; i++)
			if (dw_str_eq(r->f[i].key, key))
				return &r->f[i].val;
		return NULL;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(r->f[mid].key, key);
		if (c == 0)
			return &r->f[mid].val;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool dw_set_contains(const struct dw_set *s, struct dw_val v)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_val_cmp(s->v[mid], v);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* --- rendering --------------------------------------------------------------- */

int dw_buf_grow(struct dw_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 64;
	char *p;

	if (n > SIZE_MAX / 2 - b->n - 1)
		return -ENOMEM;
	while (cap < b->n + n + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int dw_buf_putc(struct dw_buf *b, char c)
{
	return dw_buf_put(b, &c, 1);
}

int dw_buf_printf(struct dw_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof small)
		return dw_buf_put(b, small, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (big == NULL)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r = dw_buf_put(b, big, (size_t)n);
	free(big);
	return r;
}

void dw_buf_free(struct dw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

/* Decode one UTF-8 scalar at s[*i]; invalid bytes come back as themselves
 * (>= 0x80) and are escaped as \xNN-like \u{} by the caller. */
static uint32_t dw_utf8_next(const char *s, size_t n, size_t *i, bool *ok)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[*i];
	size_t len = 0;

	*ok = true;
	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if ((c & 0xE0) == 0xC0)
		len = 2, c &= 0x1F;
	else if ((c & 0xF0) == 0xE0)
		len = 3, c &= 0x0F;
	else if ((c & 0xF8) == 0xF0)
		len = 4, c &= 0x07;
	if (len == 0 || *i + len > n) {
		*ok = false;
		return u[(*i)++];
	}
	for (size_t k = 1; k < len; k++) {
		if ((u[*i + k] & 0xC0) != 0x80) {
			*ok = false;
			return u[(*i)++];
		}
		c = (c << 6) | (u[*i + k] & 0x3F);
	}
	*i += len;
	return c;
}

int dw_buf_put_quoted(struct dw_buf *b, struct dw_str s)
{
	int r = dw_buf_putc(b, '"');

	for (size_t i = 0; r == 0 && i < s.n;) {
		size_t start = i;
		bool ok;
		uint32_t c = dw_utf8_next(s.p, s.n, &i, &ok);

		if (!ok)
			r = dw_buf_printf(b, "\\u{%x}", (unsigned)c);
		else if (c == '"')
			r = dw_buf_put(b, "\\\"", 2);
		else if (c == '\\')
			r = dw_buf_put(b, "\\\\", 2);
		else if (c == '\n')
			r = dw_buf_put(b, "\\n", 2);
		else if (c == '\r')
			r = dw_buf_put(b, "\\r", 2);
		else if (c == '\t')
			r = dw_buf_put(b, "\\t", 2);
		else if (c == 0)
			r = dw_buf_put(b, "\\0", 2);
		else if (c < 0x20 || c == 0x7f)
			r = dw_buf_printf(b, "\\u{%x}", (unsigned)c);
		else
			r = dw_buf_put(b, s.p + start, i - start);
	}
	return r ? r : dw_buf_putc(b, '"');
}

int dw_uid_format(struct dw_buf *b, const struct dw_uid *u)
{
	int r = dw_buf_put(b, u->type.p, u->type.n);

	if (r == 0)
		r = dw_buf_put(b, "::", 2);
	return r ? r : dw_buf_put_quoted(b, u->id);
}

int dw_val_format(struct dw_buf *b, struct dw_val v)
{
	char tmp[96];
	int r = 0;

	switch (v.kind) {
	case DW_V_BOOL:
		return dw_buf_printf(b, "%s", v.b ? "true" : "false");
	case DW_V_LONG:
		return dw_buf_printf(b, "%" PRId64, v.i);
	case DW_V_STRING:
		return dw_buf_put_quoted(b, v.s);
	case DW_V_ENTITY:
		return dw_uid_format(b, v.uid);
	case DW_V_SET:
		r = dw_buf_putc(b, '[');
		for (uint32_t i = 0; r == 0 && i < v.set->n; i++) {
			if (i != 0)
				r = dw_buf_put(b, ", ", 2);
			if (r == 0)
				r = dw_val_format(b, v.set->v[i]);
		}
		return r ? r : dw_buf_putc(b, ']');
	case DW_V_RECORD:
		r = dw_buf_putc(b, '{');
		for (uint32_t i = 0; r == 0 && i < v.rec->n; i++) {
			if (i != 0)
				r = dw_buf_put(b, ", ", 2);
			if (r == 0)
				r = dw_buf_put_quoted(b, v.rec->f[i].key);
			if (r == 0)
				r = dw_buf_put(b, ": ", 2);
			if (r == 0)
				r = dw_val_format(b, v.rec->f[i].val);
		}
		return r ? r : dw_buf_putc(b, '}');
	case DW_V_IP:
		dw_ip_format(v.ip, tmp, sizeof tmp);
		return dw_buf_printf(b, "ip(\"%s\")", tmp);
	case DW_V_DECIMAL:
		dw_decimal_format(v.i, tmp, sizeof tmp);
		return dw_buf_printf(b, "decimal(\"%s\")", tmp);
	case DW_V_DATETIME:
		dw_datetime_format(v.i, tmp, sizeof tmp);
		return dw_buf_printf(b, "datetime(\"%s\")", tmp);
	case DW_V_DURATION:
		dw_duration_format(v.i, tmp, sizeof tmp);
		return dw_buf_printf(b, "duration(\"%s\")", tmp);
	}
	return -EINVAL;
}
