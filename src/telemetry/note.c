/* note.c - record ids in the history (note.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "note.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool unhex(const char *s, size_t len, uint8_t *out, size_t n)
{
	if (len != 2 * n)
		return false;
	for (size_t i = 0; i < 2 * n; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return false;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(v << 4);
		else
			out[i / 2] |= (uint8_t)v;
	}
	return true;
}

size_t tm_note_format(const struct tm_note *n, char buf[TM_NOTE_MAX])
{
	char trace[33], span[17], parent[17];
	hex(n->trace.trace_id, 16, trace);
	hex(n->trace.span_id, 8, span);
	int k = snprintf(buf, TM_NOTE_MAX, "cairn1 run=%s trace=%s span=%s", n->run, trace, span);
	if (n->trace.has_parent) {
		hex(n->trace.parent_id, 8, parent);
		k += snprintf(buf + k, TM_NOTE_MAX - (size_t)k, " parent=%s/%02x", parent,
			      n->trace.parent_flags);
	}
	if (n->rid[0] != '\0' && tm_request_id_ok(n->rid))
		k += snprintf(buf + k, TM_NOTE_MAX - (size_t)k, " rid=%s", n->rid);
	if (n->deny_only)
		k += snprintf(buf + k, TM_NOTE_MAX - (size_t)k, " deny-only");
	return (size_t)k < TM_NOTE_MAX ? (size_t)k : TM_NOTE_MAX - 1;
}

int tm_note_parse(const char *text, struct tm_note *out)
{
	memset(out, 0, sizeof(*out));
	if (text == NULL || strncmp(text, "cairn1 ", 7) != 0)
		return -EINVAL;
	bool run = false, trace = false, span = false;
	for (const char *p = text + 7; *p;) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		uint8_t flags[1];
		if (len == 36 && strncmp(p, "run=", 4) == 0) {
			uint8_t tmp[16];
			if (!unhex(p + 4, 32, tmp, 16))
				return -EINVAL;
			memcpy(out->run, p + 4, 32);
			run = true;
		} else if (strncmp(p, "trace=", 6) == 0) {
			if (!(trace = unhex(p + 6, len - 6, out->trace.trace_id, 16)))
				return -EINVAL;
		} else if (strncmp(p, "span=", 5) == 0) {
			if (!(span = unhex(p + 5, len - 5, out->trace.span_id, 8)))
				return -EINVAL;
		} else if (strncmp(p, "parent=", 7) == 0 && len == 7 + 16 + 3 && p[23] == '/') {
			if (!unhex(p + 7, 16, out->trace.parent_id, 8) || !unhex(p + 24, 2, flags, 1))
				return -EINVAL;
			out->trace.has_parent = true;
			out->trace.parent_flags = flags[0];
		} else if (strncmp(p, "rid=", 4) == 0 && len - 4 <= TM_REQUEST_ID_MAX) {
			memcpy(out->rid, p + 4, len - 4);
			out->rid[len - 4] = '\0';
			if (!tm_request_id_ok(out->rid))
				return -EINVAL;
		} else if (len == 9 && strncmp(p, "deny-only", 9) == 0) {
			out->deny_only = true;
		} else {
			return -EINVAL;
		}
		p += len;
		if (*p == ' ')
			p++;
	}
	return run && trace && span ? 0 : -EINVAL;
}
