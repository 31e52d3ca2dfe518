/* exportctl.c - the exporter channel's codec and the checks both sides make
 * (exportctl.h). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "exportctl.h"

void exp_put_u32(struct exp_wire *w, uint32_t v)
{
	if (w->bad || w->cap - w->n < 4) {
		w->bad = true;
		return;
	}
	for (int i = 0; i < 4; i++)
		w->p[w->n++] = (uint8_t)(v >> (8 * i));
}

void exp_put_u64(struct exp_wire *w, uint64_t v)
{
	exp_put_u32(w, (uint32_t)v);
	exp_put_u32(w, (uint32_t)(v >> 32));
}

void exp_put_str(struct exp_wire *w, const char *s)
{
	size_t len = strlen(s);
	if (len > UINT32_MAX) {
		w->bad = true;
		return;
	}
	exp_put_u32(w, (uint32_t)len);
	if (w->bad || w->cap - w->n < len) {
		w->bad = true;
		return;
	}
	memcpy(w->p + w->n, s, len);
	w->n += len;
}

/* Reading consumes from the front: p advances, n is what is left. */
uint32_t exp_get_u32(struct exp_wire *r)
{
	uint32_t v = 0;
	if (r->bad || r->n < 4) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)r->p[i] << (8 * i);
	r->p += 4;
	r->n -= 4;
	return v;
}

uint64_t exp_get_u64(struct exp_wire *r)
{
	uint64_t lo = exp_get_u32(r);
	return lo | (uint64_t)exp_get_u32(r) << 32;
}

void exp_get_str(struct exp_wire *r, char *out, size_t max)
{
	uint32_t len = exp_get_u32(r);
	out[0] = '\0';
	if (r->bad || len > max || len > r->n || memchr(r->p, '\0', len) != NULL) {
		r->bad = true;
		return;
	}
	memcpy(out, r->p, len);
	out[len] = '\0';
	r->p += len;
	r->n -= len;
}

/* ---- URLs --------------------------------------------------------------------------- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_' || c == '~';
}

__attribute__((format(printf, 4, 5)))
static int refuse(char *why, size_t whylen, const char *url, const char *fmt, ...)
{
	char reason[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (whylen)
		snprintf(why, whylen, "the destination \"%.200s\" %s", url, reason);
	return -1;
}

int exp_url_parse(const char *url, struct exp_url *u, char *why, size_t whylen)
{
	const char *p;
	memset(u, 0, sizeof(*u));
	if (strlen(url) > EXP_URL_MAX - 1)
		return refuse(why, whylen, url, "is longer than %d bytes", EXP_URL_MAX - 1);
	if (strncmp(url, "http://", 7) == 0) {
		p = url + 7;
	} else if (strncmp(url, "https://", 8) == 0) {
		p = url + 8;
		u->tls = true;
	} else {
		return refuse(why, whylen, url, "is not an http:// or https:// URL");
	}
	const char *end = p + strcspn(p, "/?#");
	const char *at = memchr(p, '@', (size_t)(end - p));
	if (at != NULL)
		return refuse(why, whylen, url, "carries a user name or password; send a secret "
			      "with secret.ref instead");
	const char *host = p, *host_end, *colon;
	if (*p == '[') {
		host_end = memchr(p, ']', (size_t)(end - p));
		if (host_end == NULL)
			return refuse(why, whylen, url, "has an IPv6 address without its ']'");
		host++;
		colon = host_end + 1 < end && host_end[1] == ':' ? host_end + 1 : NULL;
		if (host_end + 1 != end && colon == NULL)
			return refuse(why, whylen, url, "has characters after its IPv6 address");
		u->ipv6 = true;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		host_end = colon ? colon : end;
	}
	size_t hlen = (size_t)(host_end - host);
	if (hlen == 0)
		return refuse(why, whylen, url, "names no host");
	if (hlen >= sizeof(u->host))
		return refuse(why, whylen, url, "has a host name over 255 bytes");
	memcpy(u->host, host, hlen);
	u->host[hlen] = '\0';
	if (u->ipv6) {
		struct in6_addr a6;
		if (inet_pton(AF_INET6, u->host, &a6) != 1)
			return refuse(why, whylen, url, "has \"%s\" in brackets, which is no IPv6 "
				      "address", u->host);
	} else {
		for (size_t i = 0; i < hlen; i++)
			if (!name_char(u->host[i]))
				return refuse(why, whylen, url, "has a host with the character "
					      "'%c'; write a host name or an IP address",
					      u->host[i] >= 0x21 && u->host[i] < 0x7f ? u->host[i] : '?');
	}
	u->port = u->tls ? 443 : 80;
	if (colon != NULL) {
		unsigned long port = 0;
		const char *d = colon + 1;
		if (d == end)
			return refuse(why, whylen, url, "has an empty port");
		for (; d < end; d++) {
			if (*d < '0' || *d > '9' || port > 65535)
				return refuse(why, whylen, url, "has a port that is not a number "
					      "from 1 to 65535");
			port = port * 10 + (unsigned long)(*d - '0');
		}
		if (port == 0 || port > 65535)
			return refuse(why, whylen, url, "has a port that is not a number from 1 "
				      "to 65535");
		u->port = (uint16_t)port;
		u->port_given = true;
	}
	if (*end == '?' || *end == '#' || strpbrk(end, "?#") != NULL)
		return refuse(why, whylen, url, "has a query or a fragment; the routes /v1/logs "
			      "and /v1/traces are added to the path");
	size_t plen = strlen(end);
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)end[i] <= 0x20 || (unsigned char)end[i] >= 0x7f)
			return refuse(why, whylen, url, "has a space, a control character or a "
				      "non-ASCII byte in its path; write it %%-encoded");
	while (plen > 0 && end[plen - 1] == '/')
		plen--;                 /* Box: the route goes at the base path */
	memcpy(u->path, end, plen);
	u->path[plen] = '\0';
	return 0;
}

bool exp_url_loopback(const struct exp_url *u)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcasecmp(u->host, "localhost") == 0)
		return true;
	if (u->ipv6)
		return inet_pton(AF_INET6, u->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	/* inet_aton reads what the resolver reads as an address: 127.1,
	 * 2130706433, 0x7f.1 */
	return inet_aton(u->host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

bool exp_header_value_ok(const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n > EXP_SECRET_MAX || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' ||
	    v[n - 1] == '\t')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

bool exp_header_name_ok(const char *v)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";
	if (*v == '\0' || strlen(v) > EXP_HEADER_MAX)
		return false;
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		      (*v >= '0' && *v <= '9') || strchr(extra, *v) != NULL))
			return false;
	return true;
}

int exp_secret_line(const char *header, const char *secret, char *out, size_t len)
{
	bool bearer = strcasecmp(header, "Authorization") == 0;
	int k = snprintf(out, len, "%s: %s%s\r\n", header, bearer ? "Bearer " : "", secret);
	return k < 0 || (size_t)k >= len ? -1 : k;
}
