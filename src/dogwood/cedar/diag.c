/* diag.c - see diag.h. */
#include "diag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dw_diags_init(struct dw_diags *d)
{
	memset(d, 0, sizeof *d);
	dw_arena_init(&d->arena);
}

void dw_diags_fini(struct dw_diags *d)
{
	free(d->v);
	dw_arena_fini(&d->arena);
	memset(d, 0, sizeof *d);
}

/* Characters (not bytes) from line start to p: a caret under a non-ASCII line
 * must count code points, not UTF-8 continuation bytes. */
static uint32_t dw_count_chars(const char *s, size_t n)
{
	uint32_t c = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			c++;
	return c;
}

static void dw_locate(const char *src, size_t srclen, size_t off, uint32_t *line,
		      uint32_t *col, size_t *ls, size_t *le)
{
	size_t start = 0;
	uint32_t ln = 1;

	if (off > srclen)
		off = srclen;
	for (size_t i = 0; i < off; i++) {
		if (src[i] == '\n') {
			ln++;
			start = i + 1;
		}
	}
	*line = ln;
	*col = dw_count_chars(src + start, off - start) + 1;
	if (ls != NULL) {
		size_t e = start;
		while (e < srclen && src[e] != '\n')
			e++;
		if (e > start && src[e - 1] == '\r')
			e--;
		*ls = start;
		*le = e;
	}
}

int dw_diags_addv(struct dw_diags *d, enum dw_severity sev, const char *file,
		  const char *src, size_t srclen, size_t off, size_t end,
		  const char *fmt, va_list ap)
{
	struct dw_diag g;
	char buf[1024];
	size_t ls = 0, le = 0;

	memset(&g, 0, sizeof g);
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct dw_diag *v = realloc(d->v, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	vsnprintf(buf, sizeof buf, fmt, ap);
	g.sev = sev;
	g.file = dw_arena_strdup(&d->arena, file ? file : "");
	g.msg = dw_arena_strdup(&d->arena, buf);
	if (src != NULL) {
		if (off > srclen)
			off = srclen;
		if (end < off)
			end = off;
		if (end > srclen)
			end = srclen;
		g.off = (uint32_t)off;
		g.end = (uint32_t)end;
		dw_locate(src, srclen, off, &g.line, &g.col, &ls, &le);
		dw_locate(src, srclen, end, &g.end_line, &g.end_col, NULL, NULL);
		g.line_text = dw_arena_strndup(&d->arena, src + ls, le - ls);
	} else {
		g.line_text = NULL;
	}
	if (g.file == NULL || g.msg == NULL || (src != NULL && g.line_text == NULL))
		return -ENOMEM;
	d->v[d->n++] = g;
	if (sev == DW_SEV_ERROR)
		d->n_errors++;
	return 0;
}

int dw_diags_add(struct dw_diags *d, enum dw_severity sev, const char *file,
		 const char *src, size_t srclen, size_t off, size_t end,
		 const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = dw_diags_addv(d, sev, file, src, srclen, off, end, fmt, ap);
	va_end(ap);
	return r;
}

int dw_diags_append(struct dw_diags *dst, const struct dw_diags *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const struct dw_diag *s = &src->v[i];
		struct dw_diag g = *s;

		if (dst->n == dst->cap) {
			size_t cap = dst->cap ? dst->cap * 2 : 8;
			struct dw_diag *v = realloc(dst->v, cap * sizeof *v);
			if (v == NULL)
				return -ENOMEM;
			dst->v = v;
			dst->cap = cap;
		}
		g.file = dw_arena_strdup(&dst->arena, s->file);
		g.msg = dw_arena_strdup(&dst->arena, s->msg);
		g.line_text = s->line_text ? dw_arena_strdup(&dst->arena, s->line_text) : NULL;
		if (g.file == NULL || g.msg == NULL || (s->line_text && g.line_text == NULL))
			return -ENOMEM;
		dst->v[dst->n++] = g;
		if (g.sev == DW_SEV_ERROR)
			dst->n_errors++;
	}
	return 0;
}

void dw_diags_set_policy(struct dw_diags *d, uint32_t i)
{
	if (d->n != 0)
		d->v[d->n - 1].policy = i + 1;
}
