/* secbuf.c - wiping text buffers and percent-encoding (secbuf.h). */
#include <stdlib.h>
#include <string.h>

#include "secbuf.h"

#define SB_MAX ((size_t)16 << 20)

void gw_sb_free(struct gw_sb *b)
{
	if (b->p != NULL) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	b->p = NULL, b->len = b->cap = 0;
}

bool gw_sb_reserve(struct gw_sb *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	if (__builtin_add_overflow(b->len, n + 1, &need) || need > SB_MAX) {
		b->oom = true;
		return false;
	}
	if (need <= b->cap)
		return true;
	for (cap = b->cap ? b->cap : 128; cap < need;)
		cap *= 2;
	/* Not realloc: the old block may hold secret bytes and must be wiped. */
	if ((p = malloc(cap)) == NULL) {
		b->oom = true;
		return false;
	}
	if (b->p != NULL) {
		memcpy(p, b->p, b->len);
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	b->p = p, b->cap = cap;
	return true;
}

void gw_sb_addn(struct gw_sb *b, const void *s, size_t n)
{
	if (!gw_sb_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void gw_sb_add(struct gw_sb *b, const char *s)
{
	gw_sb_addn(b, s, strlen(s));
}

void gw_sb_addc(struct gw_sb *b, char c)
{
	gw_sb_addn(b, &c, 1);
}

char *gw_sb_take(struct gw_sb *b)
{
	char *p;

	if (b->oom || !gw_sb_reserve(b, 0)) {
		gw_sb_free(b);
		return NULL;
	}
	p = b->p;
	b->p = NULL, b->len = b->cap = 0;
	return p;
}

bool gw_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int gw_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void gw_sb_pct_encode(struct gw_sb *b, const char *s, size_t n, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (gw_unreserved(c) || (c == '/' && keep_slash)) {
			gw_sb_addc(b, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			gw_sb_addn(b, e, 3);
		}
	}
}

void gw_sb_pct_decode(struct gw_sb *b, const char *s, size_t n, bool form)
{
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n && (hi = gw_hexval(s[i + 1])) >= 0 &&
		    (lo = gw_hexval(s[i + 2])) >= 0) {
			gw_sb_addc(b, (char)(hi << 4 | lo));
			i += 2;
		} else if (s[i] == '+' && form) {
			gw_sb_addc(b, ' ');
		} else {
			gw_sb_addc(b, s[i]);
		}
	}
}
