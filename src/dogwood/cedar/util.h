/* util.h - small shared pieces of the engine: counted strings and hashing. */
#ifndef DW_UTIL_H
#define DW_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DW_LIKELY(x) __builtin_expect(!!(x), 1)
#define DW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DW_N_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

/* A counted byte string.  Cedar strings and entity ids may hold NUL, so the
 * engine never relies on termination; p may be NULL when n == 0. */
struct dw_str {
	const char *p;
	uint32_t n;
};

#define DW_STR_LIT(s) ((struct dw_str){ (s), (uint32_t)(sizeof(s) - 1) })

static inline struct dw_str dw_str_make(const char *p, size_t n)
{
	struct dw_str s = { p, (uint32_t)n };
	return s;
}

static inline struct dw_str dw_str_c(const char *p)
{
	return dw_str_make(p, strlen(p));
}

static inline bool dw_str_eq(struct dw_str a, struct dw_str b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline bool dw_str_eq_c(struct dw_str a, const char *b)
{
	return dw_str_eq(a, dw_str_c(b));
}

/* Byte-wise total order (shorter prefix first): also the order of Unicode scalar
 * values for valid UTF-8. */
static inline int dw_str_cmp(struct dw_str a, struct dw_str b)
{
	uint32_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;

	if (c != 0)
		return c;
	return (a.n > b.n) - (a.n < b.n);
}

/* The value of one hex digit, or -1: for the \xHH and \u{…} escapes of the
 * engine's string literals (Cedar policies and schemas, JSON, traces). */
static inline int dw_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Write cp (a Unicode scalar value, which the caller has checked) as UTF-8 at o,
 * which has room for 4 bytes; returns the bytes written. */
static inline size_t dw_utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* 64-bit FNV-1a followed by a final avalanche: cheap, good enough for tables
 * that also compare keys. */
static inline uint64_t dw_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static inline uint64_t dw_hash_str(struct dw_str s, uint64_t seed)
{
	return dw_hash_bytes(s.p, s.n, seed);
}

/* Is s[0, n) valid UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF)?  On false, *bad is the offset of the first bad byte. */
static inline bool dw_utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		unsigned c = u[i];
		size_t len;
		unsigned cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0)
			len = 2, cp = c & 0x1F, min = 0x80;
		else if ((c & 0xF0) == 0xE0)
			len = 3, cp = c & 0x0F, min = 0x800;
		else if ((c & 0xF8) == 0xF0)
			len = 4, cp = c & 0x07, min = 0x10000;
		else
			goto fail;
		if (i + len > n)
			goto fail;
		for (size_t k = 1; k < len; k++) {
			if ((u[i + k] & 0xC0) != 0x80)
				goto fail;
			cp = (cp << 6) | (u[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			goto fail;
		i += len;
		continue;
fail:
		*bad = i;
		return false;
	}
	return true;
}

#endif
