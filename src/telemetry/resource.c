/* resource.c - the box's resource and the operator's attributes (resource.h).
 *
 * OTEL_RESOURCE_ATTRIBUTES is `key=value,key=value` with values
 * percent-decoded (the OpenTelemetry specification's resource SDK section);
 * Box reads it itself and refuses what it cannot read, so a box never starts
 * with a resource its operator did not mean. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resource.h"

#define ENV_MAX 1024
#define BOX_KEYS 4

__attribute__((format(printf, 3, 4)))
static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
			 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		if (k == 0 || i + k > n)
			return false;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		/* overlong 3/4-byte forms, surrogates and past U+10FFFF */
		if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
		    (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
			return false;
		i += k;
	}
	return true;
}

/* Percent-decode s[0, n) into out (NUL-terminated); its length, or -1. */
static long pct_decode(const char *s, size_t n, char *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[k++] = s[i];
			continue;
		}
		if (i + 2 >= n)
			return -1;
		int a = hexv(s[i + 1]), b = hexv(s[i + 2]);
		if (a < 0 || b < 0)
			return -1;
		out[k++] = (char)(a << 4 | b);
		i += 2;
	}
	out[k] = '\0';
	return (long)k;
}

static bool reserved(const char *key)
{
	return strcmp(key, "service.name") == 0 || strncmp(key, "strands.box.", 12) == 0;
}

static char *trim(char *s, char **end)
{
	while (s < *end && (*s == ' ' || *s == '\t'))
		s++;
	while (*end > s && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
		(*end)--;
	return s;
}

int tm_res_build(struct tm_res *out, const char *env, const char *box_id, const char *source,
		 const char *run_hex, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	size_t len = env ? strlen(env) : 0;
	if (len > ENV_MAX)
		return refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES is %zu bytes; write at most %d",
			      len, ENV_MAX);
	size_t entries = 0;
	for (size_t i = 0; i < len; i++)
		entries += env[i] == ',';
	entries += len > 0;
	out->kv = calloc(entries + BOX_KEYS, sizeof(*out->kv));
	/* decoding never lengthens; room for the box's own values after */
	out->text = malloc(2 * len + 2 + strlen(box_id) + strlen(source) + strlen(run_hex) + 4);
	if (out->kv == NULL || out->text == NULL) {
		tm_res_free(out);
		return -ENOMEM;
	}
	char *dst = out->text;
	size_t n = 0;
	char copy[ENV_MAX + 1];
	memcpy(copy, env ? env : "", len);
	copy[len] = '\0';
	for (char *p = copy; len > 0 && p <= copy + len;) {
		char *comma = strchr(p, ',');
		char *end = comma ? comma : copy + len;
		char *s = trim(p, &end);
		p = comma ? comma + 1 : copy + len + 1;
		if (s == end)
			continue;               /* an empty entry (a trailing comma) */
		char *eq = memchr(s, '=', (size_t)(end - s));
		char save = *end;
		*end = '\0';
		if (eq == NULL) {
			int r = refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES entry \"%s\" has no `=`; "
				       "write key=value", s);
			tm_res_free(out);
			return r;
		}
		*end = save;
		char *kend = eq, *vstart = eq + 1, *vend = end;
		char *k = trim(s, &kend);
		char *v = trim(vstart, &vend);
		long kl = pct_decode(k, (size_t)(kend - k), dst);
		if (kl == 0) {
			tm_res_free(out);
			return refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES entry has an empty key");
		}
		char *key = dst;
		long vl = kl < 0 ? -1 : pct_decode(v, (size_t)(vend - v), dst + kl + 1);
		if (kl < 0 || vl < 0 || !utf8_ok((unsigned char *)key, (size_t)kl) ||
		    !utf8_ok((unsigned char *)dst + kl + 1, (size_t)vl)) {
			tm_res_free(out);
			return refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES has an invalid percent "
				      "escape or a value that is not UTF-8");
		}
		char *val = dst + kl + 1;
		dst = val + vl + 1;
		if (reserved(key)) {
			int r = refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES names a reserved key; the "
				       "box writes `service.name` and every `strands.box.` key itself");
			tm_res_free(out);
			return r;
		}
		for (size_t j = 0; j < n; j++)
			if (strcmp(out->kv[j].key, key) == 0) {
				int r = refuse(err, errlen, "OTEL_RESOURCE_ATTRIBUTES names the key "
					       "\"%.200s\" twice", key);
				tm_res_free(out);
				return r;
			}
		out->kv[n++] = (struct tm_kv){ key, val };
	}
	out->n_operator = n;
	const char *mine[BOX_KEYS][2] = { { "service.name", "strands-box" },
					  { "strands.box.name", box_id },
					  { "strands.box.source", source },
					  { "strands.box.run.id", run_hex } };
	for (size_t j = 0; j < BOX_KEYS; j++) {
		size_t k = strlen(mine[j][1]) + 1;
		if (j > 0)
			memcpy(dst, mine[j][1], k);
		out->kv[n++] = (struct tm_kv){ mine[j][0], j > 0 ? dst : mine[j][1] };
		if (j > 0)
			dst += k;
	}
	out->r = (struct tm_resource){ n, out->kv };
	return 0;
}

void tm_res_free(struct tm_res *r)
{
	free(r->kv);
	free(r->text);
	memset(r, 0, sizeof(*r));
}
