/* denial.c - see denial.h. */
#include "denial.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define DW_MESSAGE_LIMIT 4096
#define DW_RESOURCE_LIMIT 1024
#define DW_TRUNCATED "..."

struct dw_msg {
	struct dw_buf *b;
	bool full;      /* the limit was reached: nothing more is appended */
};

/* Decode one UTF-8 scalar; invalid bytes become U+FFFD (Rust strings are
 * always valid UTF-8, so this only matters for hostile input). */
static uint32_t dw_next_char(const char *s, size_t n, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[*i];
	size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
		     (c & 0xF8) == 0xF0 ? 4 : 0;

	if (len == 1) {
		(*i)++;
		return c;
	}
	if (len == 0 || *i + len > n) {
		(*i)++;
		return 0xFFFD;
	}
	c &= 0x7F >> len;
	for (size_t k = 1; k < len; k++) {
		if ((u[*i + k] & 0xC0) != 0x80) {
			(*i)++;
			return 0xFFFD;
		}
		c = (c << 6) | (u[*i + k] & 0x3F);
	}
	*i += len;
	return c;
}

static size_t dw_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

static bool dw_is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7F && c < 0xA0);
}

static bool dw_is_bidi(uint32_t c)
{
	return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
	       (c >= 0x2066 && c <= 0x2069);
}

/* Characters Rust's escape_debug writes as \u{…}: not printable, or grapheme
 * extenders.  Approximated by the classes that matter for a terminal:
 * controls, format characters (bidi, zero-width, BOM), separators, and the
 * common combining marks. */
static bool dw_debug_escapes(uint32_t c)
{
	return dw_is_control(c) || dw_is_bidi(c) || (c >= 0x200B && c <= 0x200D) ||
	       (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF || c == 0x00AD ||
	       (c >= 0x0300 && c <= 0x036F) || (c >= 0xFE00 && c <= 0xFE0F) ||
	       (c >= 0xD800 && c <= 0xDFFF) || c == 0xFFFE || c == 0xFFFF;
}

/* The escaped form of one character: quoted = escape_debug (the subject),
 * else escape_default for controls, backslash and bidi only (annotations). */
static size_t dw_escape(uint32_t c, bool quoted, char *o)
{
	if (c == '\t')
		return (size_t)sprintf(o, "\\t");
	if (c == '\r')
		return (size_t)sprintf(o, "\\r");
	if (c == '\n')
		return (size_t)sprintf(o, "\\n");
	if (c == '\\')
		return (size_t)sprintf(o, "\\\\");
	if (quoted) {
		if (c == 0)
			return (size_t)sprintf(o, "\\0");
		if (c == '\'' || c == '"')
			return (size_t)sprintf(o, "\\%c", (char)c);
		if (dw_debug_escapes(c))
			return (size_t)sprintf(o, "\\u{%x}", (unsigned)c);
		return dw_utf8(o, c);
	}
	if (dw_is_control(c) || dw_is_bidi(c))
		return (size_t)sprintf(o, "\\u{%x}", (unsigned)c);
	return dw_utf8(o, c);
}

static int dw_msg_put(struct dw_msg *m, const char *s, size_t n)
{
	const size_t room = DW_MESSAGE_LIMIT - (sizeof(DW_TRUNCATED) - 1);
	size_t fit;

	if (m->full)
		return 0;
	if (m->b->n + n <= room)
		return dw_buf_put(m->b, s, n);        /* the common case: all of it fits */
	/* whole characters only, keeping room for the "..." marker */
	fit = room > m->b->n ? room - m->b->n : 0;
	while (fit > 0 && fit < n && ((unsigned char)s[fit] & 0xC0) == 0x80)
		fit--;
	m->full = true;
	if (dw_buf_put(m->b, s, fit) != 0)
		return -ENOMEM;
	return dw_buf_put(m->b, DW_TRUNCATED, sizeof(DW_TRUNCATED) - 1);
}

/* Bytes that both escapings leave alone. */
static bool dw_plain_byte(unsigned char c, bool quoted)
{
	return c >= 0x20 && c < 0x7F && c != '\\' && (!quoted || (c != '\'' && c != '"'));
}

static int dw_msg_cstr(struct dw_msg *m, const char *s)
{
	return dw_msg_put(m, s, strlen(s));
}

static int dw_msg_annotation(struct dw_msg *m, const char *s)
{
	size_t n = strlen(s);
	char esc[16];

	for (size_t i = 0; i < n;) {
		size_t run = i;
		int r;
		while (run < n && dw_plain_byte((unsigned char)s[run], false))
			run++;
		if (run > i) {
			if ((r = dw_msg_put(m, s + i, run - i)) != 0)
				return r;
			i = run;
			continue;
		}
		uint32_t c = dw_next_char(s, n, &i);
		if ((r = dw_msg_put(m, esc, dw_escape(c, false, esc))) != 0)
			return r;
	}
	return 0;
}

static int dw_msg_subject(struct dw_msg *m, const char *s)
{
	size_t n = strlen(s), budget = DW_RESOURCE_LIMIT;
	char esc[16];
	int r = dw_msg_cstr(m, "'");

	for (size_t i = 0; r == 0 && i < n;) {
		size_t run = i;
		while (run < n && run - i < budget && dw_plain_byte((unsigned char)s[run], true))
			run++;
		if (run > i) {
			budget -= run - i;
			r = dw_msg_put(m, s + i, run - i);
			i = run;
			continue;
		}
		uint32_t c = dw_next_char(s, n, &i);
		size_t k = dw_escape(c, true, esc);
		if (k > budget) {
			r = dw_msg_cstr(m, DW_TRUNCATED);
			break;
		}
		budget -= k;
		r = dw_msg_put(m, esc, k);
	}
	return r ? r : dw_msg_cstr(m, "'");
}

static bool dw_blank(const char *s)
{
	if (s == NULL)
		return true;
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\v' && *s != '\f')
			return false;
	return true;
}

int dw_denial_format(struct dw_buf *out, enum dw_cause cause, const char *subject,
		     const struct dw_rule_ref *rules, size_t n_rules)
{
	struct dw_msg m = { out, false };
	int r;

	out->n = 0;
	if (out->p != NULL)
		out->p[0] = '\0';
	r = dw_msg_cstr(&m, cause == DW_CAUSE_PERMITTED ? "policy permitted this operation"
							: "policy denied this operation");
	if (r == 0 && !dw_blank(subject)) {
		r = dw_msg_cstr(&m, " on ");
		if (r == 0)
			r = dw_msg_subject(&m, subject);
	}
	if (r != 0)
		return r;
	switch (cause) {
	case DW_CAUSE_PERMITTED:
		return dw_msg_cstr(&m, ".");
	case DW_CAUSE_NO_MATCH:
		return dw_msg_cstr(&m, " [default-deny]: No permit policy matched this request.");
	case DW_CAUSE_INTERNAL_FAULT:
		return dw_msg_cstr(&m, " because the request could not be evaluated.");
	case DW_CAUSE_FORBIDDEN:
		break;
	}
	if (n_rules == 0)
		r = dw_msg_cstr(&m, " [policy: default-deny]");
	for (size_t i = 0; r == 0 && i < n_rules; i++) {
		const char *id = dw_blank(rules[i].id) ? rules[i].engine_id : rules[i].id;
		r = dw_msg_cstr(&m, i == 0 ? " [policy: " : "; [policy: ");
		if (r == 0)
			r = dw_msg_annotation(&m, id);
		if (r == 0)
			r = dw_msg_cstr(&m, "]");
		if (r == 0 && !dw_blank(rules[i].description)) {
			r = dw_msg_cstr(&m, ": ");
			if (r == 0)
				r = dw_msg_annotation(&m, rules[i].description);
		}
	}
	if (r == 0 && !m.full && out->n > 0 && out->p[out->n - 1] != '.' &&
	    out->p[out->n - 1] != '!' && out->p[out->n - 1] != '?')
		r = dw_msg_cstr(&m, ".");
	return r;
}
