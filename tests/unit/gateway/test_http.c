/* test_http.c - the gateway's HTTP/1.1 message layer (src/gateway/http.c).
 *
 * Request heads on the proxy listener and inside a tunnel, response heads,
 * one test per error class with its status and reason, the smuggling cases
 * (CL+TE, differing CL, TE not ending in chunked, obs-fold, space before
 * colon), framing and keep-alive rules, the chunked decoder (extensions,
 * trailers, overflow, limits, in place), hop-by-hop names, the policy path,
 * the writer.  Every head is also fed byte by byte and split in two at
 * every offset: the outcome must not depend on how bytes arrive. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "http.h"
#include "test.h"

/* ---- helpers --------------------------------------------------------------- */

/* A text summary of a parser's outcome after feeding, so that different
 * splits of the same bytes can be compared in one strcmp. */
static void summary(struct gw_head *h, int rc, size_t used, char *out, size_t cap)
{
	const struct gw_msg *m = gw_head_msg(h);
	const char *reason = NULL;
	size_t o;

	if (rc != 1 || m == NULL) {
		int st = gw_head_error(h, &reason);

		snprintf(out, cap, "rc=%d status=%d reason=%s", rc, st, reason ? reason : "-");
		return;
	}
	o = (size_t)snprintf(out, cap,
			     "used=%zu v=%d m=%.*s t=%.*s form=%d host=%s v6=%d port=%u path=%.*s "
			     "q=%s%.*s st=%d r=%.*s body=%d cl=%llu ka=%d c=%d%d%d ws=%d exp=%d int=%d nf=%zu",
			     used, m->version, (int)m->method.n, m->method.p ? m->method.p : "",
			     (int)m->target_raw.n, m->target_raw.p ? m->target_raw.p : "",
			     (int)m->target.form, m->target.auth.host, m->target.auth.ipv6,
			     m->target.auth.port, (int)m->target.path.n,
			     m->target.path.p ? m->target.path.p : "", m->target.query.p ? "+" : "-",
			     (int)m->target.query.n, m->target.query.p ? m->target.query.p : "",
			     m->status, (int)m->reason.n, m->reason.p ? m->reason.p : "", (int)m->body,
			     (unsigned long long)m->content_length, m->keep_alive, m->conn_close,
			     m->conn_keep_alive, m->conn_upgrade, m->upgrade_websocket, (int)m->expect,
			     m->interim, m->nfields);
	for (size_t i = 0; i < m->nfields && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, " [%.*s|%.*s]", (int)m->fields[i].name.n,
				      m->fields[i].name.p, (int)m->fields[i].value.n,
				      m->fields[i].value.p);
}

/* Feed text[0, n) in pieces of `step` bytes (0: all at once); the
 * parser's summary goes to out. */
static int feed_steps(struct gw_head *h, const char *text, size_t n, size_t step, size_t *total)
{
	size_t off = 0, used = 0;
	int rc = 0;

	*total = 0;
	if (step == 0)
		step = n ? n : 1;
	do {
		size_t k = n - off < step ? n - off : step;

		rc = gw_head_feed(h, text + off, k, &used);
		*total += used;
		off += k;
		if (rc != 0)
			break;
	} while (off < n);
	return rc;
}

static char sum_whole[8192], sum_other[8192];

/* Parse text in every way (whole, byte by byte, split at every offset):
 * all outcomes must be the same.  Returns the whole-feed rc; the summary
 * is left in sum_whole. */
static int parse_all_ways(enum gw_head_kind kind, const char *text, size_t n, bool *same)
{
	struct gw_head *h = gw_head_new(kind);
	size_t total;
	int rc;

	*same = true;
	rc = feed_steps(h, text, n, 0, &total);
	summary(h, rc, total, sum_whole, sizeof sum_whole);
	gw_head_reset(h);
	int rc1 = feed_steps(h, text, n, 1, &total);
	summary(h, rc1, total, sum_other, sizeof sum_other);
	if (strcmp(sum_whole, sum_other) != 0) {
		fprintf(stderr, "  byte-at-a-time differs:\n  whole: %s\n  bytes: %s\n", sum_whole,
			sum_other);
		*same = false;
	}
	for (size_t cut = 1; cut < n && *same; cut++) {
		size_t used1 = 0, used2 = 0;
		int r;

		gw_head_reset(h);
		r = gw_head_feed(h, text, cut, &used1);
		if (r == 0)
			r = gw_head_feed(h, text + cut, n - cut, &used2);
		summary(h, r, used1 + used2, sum_other, sizeof sum_other);
		if (strcmp(sum_whole, sum_other) != 0) {
			fprintf(stderr, "  split at %zu differs:\n  whole: %s\n  split: %s\n", cut,
				sum_whole, sum_other);
			*same = false;
		}
	}
	gw_head_free(h);
	return rc;
}

/* Parse a complete head; the parser (caller frees) or NULL. */
static struct gw_head *ok_kind(enum gw_head_kind kind, const char *text)
{
	struct gw_head *h = gw_head_new(kind);
	size_t used = 0, n = strlen(text);
	int rc = gw_head_feed(h, text, n, &used);

	if (rc != 1) {
		const char *reason = NULL;
		int st = gw_head_error(h, &reason);

		fprintf(stderr, "  unexpected rc %d (%d %s) for:\n%s\n", rc, st, reason ? reason : "-",
			text);
	}
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(used, n);
	if (rc != 1) {
		gw_head_free(h);
		return NULL;
	}
	return h;
}

#define PROXY  GW_HEAD_PROXY_REQUEST
#define TUNNEL GW_HEAD_TUNNEL_REQUEST
#define RESP   GW_HEAD_RESPONSE

/* text is refused with status and a reason starting with want; the
 * outcome is also checked to be the same for every split. */
static void bad_kind(enum gw_head_kind kind, const char *text, size_t n, int status,
		     const char *want)
{
	struct gw_head *h = gw_head_new(kind);
	const char *reason = NULL;
	size_t used = 0;
	bool same;
	int rc = gw_head_feed(h, text, n, &used);
	int st = gw_head_error(h, &reason);

	if (rc >= 0 || st != status || reason == NULL || strncmp(reason, want, strlen(want)) != 0)
		fprintf(stderr, "  want %d \"%s\", got rc %d: %d \"%s\" for:\n%.*s\n", status, want,
			rc, st, reason ? reason : "-", (int)n, text);
	CHECK_EQ_INT(rc, -EBADMSG);
	CHECK_EQ_INT(st, status);
	CHECK(reason != NULL && strncmp(reason, want, strlen(want)) == 0);
	CHECK(gw_head_msg(h) == NULL);
	/* sticky */
	CHECK_EQ_INT(gw_head_feed(h, "x", 1, &used), -EBADMSG);
	CHECK_EQ_INT(used, 0);
	gw_head_free(h);
	if (n < 600) {
		parse_all_ways(kind, text, n, &same);
		CHECK(same);
	}
}

static void bad_k(enum gw_head_kind kind, const char *text, int status, const char *want)
{
	bad_kind(kind, text, strlen(text), status, want);
}

static void bad(const char *text, int status, const char *want)
{
	bad_kind(PROXY, text, strlen(text), status, want);
}

static bool buf_is(const char *buf, size_t len, const char *want)
{
	if (len == strlen(want) && memcmp(buf, want, len) == 0)
		return true;
	fprintf(stderr, "  wrote \"%.*s\"\n  want  \"%s\"\n", (int)len, buf, want);
	return false;
}

static bool str_is(struct gw_str s, const char *want)
{
	return s.p != NULL && s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

/* ---- request heads on the proxy listener --------------------------------- */

static void test_absolute_form(void)
{
	const char *text = "GET http://Example.COM:8080/a/b?x=1&y#frag HTTP/1.1\r\n"
			   "Host: example.com:8080\r\n"
			   "User-Agent:  curl/8.5 \r\n"
			   "Accept: */*\r\n\r\n";
	struct gw_head *h = ok_kind(PROXY, text);
	const struct gw_msg *m = h ? gw_head_msg(h) : NULL;

	CHECK(m != NULL);
	if (m == NULL)
		return;
	CHECK(!m->response);
	CHECK(str_is(m->method, "GET"));
	CHECK_EQ_INT(m->version, 11);
	CHECK_EQ_INT(m->target.form, GW_FORM_ABSOLUTE);
	CHECK_EQ_STR(m->target.auth.host, "example.com");
	CHECK_EQ_INT(m->target.auth.port, 8080);
	CHECK(!m->target.auth.ipv6);
	CHECK(str_is(m->target.path, "/a/b"));
	CHECK(str_is(m->target.query, "x=1&y"));
	CHECK(str_is(m->target_raw, "http://Example.COM:8080/a/b?x=1&y#frag"));
	CHECK_EQ_INT(m->nfields, 3);
	CHECK(str_is(m->fields[1].name, "User-Agent"));
	CHECK(str_is(m->fields[1].value, "curl/8.5"));     /* OWS trimmed both sides */
	CHECK_EQ_INT(m->body, GW_BODY_NONE);
	CHECK(m->keep_alive);
	CHECK(gw_msg_keep_alive(m));
	CHECK_EQ_INT(m->expect, GW_EXPECT_NONE);
	CHECK_EQ_INT(m->head_len, strlen(text));
	gw_head_free(h);

	/* no path, query without path, default port, scheme case */
	h = ok_kind(PROXY, "GET HTTP://h.test HTTP/1.1\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK(str_is(m->target.path, "/"));
		CHECK(m->target.query.p == NULL);
		CHECK_EQ_INT(m->target.auth.port, 80);
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://h.test?q HTTP/1.1\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK(str_is(m->target.path, "/"));
		CHECK(str_is(m->target.query, "q"));
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://h.test/p? HTTP/1.1\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK(m->target.query.p != NULL && m->target.query.n == 0);   /* present, empty */
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://h.test./p#only-frag HTTP/1.1\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_STR(m->target.auth.host, "h.test");        /* trailing dot dropped */
		CHECK(str_is(m->target.path, "/p"));
		CHECK(m->target.query.p == NULL);
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://[::1]:81/ HTTP/1.1\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_STR(m->target.auth.host, "::1");
		CHECK(m->target.auth.ipv6);
		CHECK_EQ_INT(m->target.auth.port, 81);
		gw_head_free(h);
	}

	bad("GET https://h.test/ HTTP/1.1\r\n\r\n", 400, "https:// absolute-form refused");
	bad("GET ftp://h.test/ HTTP/1.1\r\n\r\n", 400, "unsupported URI scheme");
	bad("GET http://user:pw@h.test/ HTTP/1.1\r\n\r\n", 400, "userinfo");
	bad("GET http:///x HTTP/1.1\r\n\r\n", 400, "invalid host");
	bad("GET http://h.test:0/ HTTP/1.1\r\n\r\n", 400, "invalid host or port");
	bad("GET http://h.test:65536/ HTTP/1.1\r\n\r\n", 400, "invalid host or port");
	bad("GET http://h.test:/ HTTP/1.1\r\n\r\n", 400, "invalid host or port");
	bad("GET http://h%41.test/ HTTP/1.1\r\n\r\n", 400, "invalid host");
	bad("GET h.test:80 HTTP/1.1\r\n\r\n", 400, "invalid request target");
	bad("GET /index.html HTTP/1.1\r\nHost: h\r\n\r\n", 400, "origin-form target on the proxy");
	bad("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 400, "'*' target on the proxy");
	bad("GET http://h.test/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host");
	bad("GET http://h.test/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host field");
}

static void test_connect(void)
{
	struct gw_head *h = ok_kind(PROXY, "CONNECT api.Example.com:443 HTTP/1.1\r\n"
					   "Host: api.example.com:443\r\n\r\n");
	const struct gw_msg *m;

	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_INT(m->target.form, GW_FORM_AUTHORITY);
		CHECK_EQ_STR(m->target.auth.host, "api.example.com");
		CHECK_EQ_INT(m->target.auth.port, 443);
		CHECK(m->target.path.p == NULL);
		CHECK_EQ_INT(m->body, GW_BODY_NONE);
		CHECK(!m->keep_alive);                   /* a tunnel or a refusal follows */
		gw_head_free(h);
	}
	/* IPv6 literal, rewritten in RFC 5952 text; no Host (old clients) */
	h = ok_kind(PROXY, "CONNECT [2001:DB8:0:0::1]:8443 HTTP/1.0\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_STR(m->target.auth.host, "2001:db8::1");
		CHECK(m->target.auth.ipv6);
		CHECK_EQ_INT(m->target.auth.port, 8443);
		CHECK_EQ_INT(m->version, 10);
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "CONNECT h:1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	if (h) {
		CHECK_EQ_INT(gw_head_msg(h)->target.auth.port, 1);
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "CONNECT h:65535 HTTP/1.1\r\n\r\n");
	gw_head_free(h);
	bad("CONNECT h.test HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT h.test:0 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT h.test:65536 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT [::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT [v1.x]:443 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT http://h.test:443/ HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT u@h.test:443 HTTP/1.1\r\n\r\n", 400, "invalid CONNECT target");
	bad("CONNECT h:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 400, "body on a CONNECT");
	bad("CONNECT h:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "body on a CONNECT");
	/* methods are case-sensitive: "connect" is some other method, absolute-form expected */
	bad("connect h:443 HTTP/1.1\r\n\r\n", 400, "invalid request target");
}

/* ---- request heads inside a tunnel --------------------------------------- */

static void test_tunnel(void)
{
	struct gw_head *h = ok_kind(TUNNEL, "POST /v1/items?id=7 HTTP/1.1\r\n"
					    "Host: API.test\r\nContent-Length: 12\r\n\r\n");
	const struct gw_msg *m;

	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_INT(m->target.form, GW_FORM_ORIGIN);
		CHECK_EQ_STR(m->target.auth.host, "api.test");
		CHECK_EQ_INT(m->target.auth.port, 443);
		CHECK(str_is(m->target.path, "/v1/items"));
		CHECK(str_is(m->target.query, "id=7"));
		CHECK_EQ_INT(m->body, GW_BODY_LENGTH);
		CHECK_EQ_INT(m->content_length, 12);
		gw_head_free(h);
	}
	h = ok_kind(TUNNEL, "OPTIONS * HTTP/1.1\r\nHost: api.test:8443\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK_EQ_INT(m->target.form, GW_FORM_ASTERISK);
		CHECK(str_is(m->target.path, "*"));
		CHECK_EQ_INT(m->target.auth.port, 8443);
		gw_head_free(h);
	}
	bad_k(TUNNEL, "GET / HTTP/1.1\r\n\r\n", 400, "missing Host");
	bad_k(TUNNEL, "GET / HTTP/1.0\r\n\r\n", 400, "missing Host");
	bad_k(TUNNEL, "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400, "more than one Host");
	bad_k(TUNNEL, "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400, "invalid Host");
	bad_k(TUNNEL, "GET / HTTP/1.1\r\nHost: a:0\r\n\r\n", 400, "invalid Host");
	bad_k(TUNNEL, "GET https://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "absolute-form target inside");
	bad_k(TUNNEL, "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "CONNECT inside a tunnel");
	bad_k(TUNNEL, "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "'*' target without OPTIONS");
}

/* ---- the request line ----------------------------------------------------- */

static void test_request_line(void)
{
	static char big[GW_HTTP_LINE_MAX + 64];
	struct gw_head *h;
	size_t used;
	int rc;

	bad("GET http://h/ HTTP/2.0\r\n\r\n", 505, "HTTP version not supported");
	bad("GET http://h/ HTTP/1.2\r\n\r\n", 505, "HTTP version not supported");
	bad("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP version not supported");
	bad("GET http://h/ http/1.1\r\n\r\n", 400, "malformed HTTP version");
	bad("GET http://h/ HTTP/1.1 x\r\n\r\n", 400, "malformed HTTP version");
	bad("GET http://h/ HTTP/11\r\n\r\n", 400, "malformed HTTP version");
	bad("GET /\r\n\r\n", 400, "malformed request line");      /* HTTP/0.9 */
	bad("GET  http://h/ HTTP/1.1\r\n\r\n", 400, "malformed HTTP version");
	bad("GET http://h/\tx HTTP/1.1\r\n\r\n", 400, "invalid character in request target");
	bad("GE(T http://h/ HTTP/1.1\r\n\r\n", 400, "invalid method");
	bad("GET  HTTP/1.1\r\n\r\n", 400, "empty request target");
	bad(" GET http://h/ HTTP/1.1\r\n\r\n", 400, "invalid method");

	/* a request line of exactly the limit passes, one byte more is 414,
	 * and 414 comes as soon as the line is too long, before its end */
	memset(big, 'a', sizeof big);
	memcpy(big, "GET http://h/", 13);
	memcpy(big + GW_HTTP_LINE_MAX - 9, " HTTP/1.1\r\n\r\n", 13);
	h = gw_head_new(PROXY);
	CHECK_EQ_INT(gw_head_feed(h, big, GW_HTTP_LINE_MAX + 4, &used), 1);
	gw_head_free(h);
	h = gw_head_new(PROXY);
	CHECK_EQ_INT(gw_head_feed(h, big, GW_HTTP_LINE_MAX, &used), 0);
	rc = gw_head_feed(h, "a", 1, &used);
	CHECK_EQ_INT(rc, -EBADMSG);
	CHECK_EQ_INT(gw_head_error(h, NULL), 414);
	gw_head_free(h);

	/* leading empty lines are skipped and counted */
	h = ok_kind(PROXY, "\r\n\r\nGET http://h/ HTTP/1.1\r\n\r\n");
	if (h) {
		CHECK_EQ_INT(gw_head_msg(h)->head_len, 4 + 26);
		gw_head_free(h);
	}
	bad("\nGET http://h/ HTTP/1.1\r\n\r\n", 400, "bare LF");
	bad("\r\r\nGET http://h/ HTTP/1.1\r\n\r\n", 400, "bare CR");
}

/* ---- field lines ------------------------------------------------------------ */

static void test_fields(void)
{
	static char big[GW_HTTP_HEAD_MAX + 4096];
	struct gw_head *h;
	size_t n, used;
	int rc;

	/* the byte classes refused anywhere in a head */
	bad("GET http://h/ HTTP/1.1\r\nA: b\rc\r\n\r\n", 400, "bare CR");
	bad("GET http://h/ HTTP/1.1\r\nA: b\nC: d\r\n\r\n", 400, "bare LF");
	bad("GET http://h/ HTTP/1.1\nA: b\r\n\r\n", 400, "bare LF");
	bad_kind(PROXY, "GET http://h/ HTTP/1.1\r\nA: b\0c\r\n\r\n",
		 sizeof "GET http://h/ HTTP/1.1\r\nA: b\0c\r\n\r\n" - 1, 400, "NUL");
	bad("GET http://h/ HTTP/1.1\r\nA: b\x01\r\n\r\n", 400, "control character");
	bad("GET http://h/ HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400, "control character");
	bad("GET http://h/ HTTP/1.1\r\nA: b\x1b[2J\r\n\r\n", 400, "control character");
	/* the smuggling classes */
	bad("GET http://h/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400, "obs-fold");
	bad("GET http://h/ HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", 400, "obs-fold");
	bad("GET http://h/ HTTP/1.1\r\n A: b\r\n\r\n", 400, "obs-fold");
	bad("GET http://h/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400,
	    "whitespace before colon");
	bad("GET http://h/ HTTP/1.1\r\nA\t: b\r\n\r\n", 400, "whitespace before colon");
	bad("GET http://h/ HTTP/1.1\r\nNoColon\r\n\r\n", 400, "field line without a colon");
	bad("GET http://h/ HTTP/1.1\r\n: b\r\n\r\n", 400, "empty field name");
	bad("GET http://h/ HTTP/1.1\r\nA b: c\r\n\r\n", 400, "invalid character in field name");
	bad("GET http://h/ HTTP/1.1\r\nA(b): c\r\n\r\n", 400, "invalid character in field name");

	/* obs-text, HTAB and an empty value are fine */
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.1\r\nX-A: caf\xc3\xa9\tau lait\r\nX-Empty:\r\n\r\n");
	if (h) {
		const struct gw_msg *m = gw_head_msg(h);

		CHECK(str_is(m->fields[0].value, "caf\xc3\xa9\tau lait"));
		CHECK(m->fields[1].value.p != NULL && m->fields[1].value.n == 0);
		gw_head_free(h);
	}

	/* GW_HTTP_FIELDS_MAX fields pass, one more is 431 */
	n = (size_t)sprintf(big, "GET http://h/ HTTP/1.1\r\n");
	for (int i = 0; i < GW_HTTP_FIELDS_MAX; i++)
		n += (size_t)sprintf(big + n, "X-%d: %d\r\n", i, i);
	memcpy(big + n, "\r\n", 2);
	h = gw_head_new(PROXY);
	CHECK_EQ_INT(gw_head_feed(h, big, n + 2, &used), 1);
	if (gw_head_msg(h)) {
		CHECK_EQ_INT(gw_head_msg(h)->nfields, GW_HTTP_FIELDS_MAX);
		CHECK_EQ_INT(gw_msg_count(gw_head_msg(h), "x-99"), 1);
	}
	gw_head_free(h);
	n += (size_t)sprintf(big + n, "X-last: 1\r\n\r\n");
	bad_kind(PROXY, big, n, 431, "too many header fields");

	/* a head of exactly GW_HTTP_HEAD_MAX passes, one byte more is 431,
	 * refused as the byte arrives */
	n = (size_t)sprintf(big, "GET http://h/ HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'v', GW_HTTP_HEAD_MAX - n - 4);
	memcpy(big + GW_HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	h = gw_head_new(PROXY);
	CHECK_EQ_INT(gw_head_feed(h, big, GW_HTTP_HEAD_MAX, &used), 1);
	CHECK_EQ_INT(used, GW_HTTP_HEAD_MAX);
	/* reset after a big head: the next small one parses */
	gw_head_reset(h);
	CHECK_EQ_INT(gw_head_feed(h, "GET http://s/ HTTP/1.1\r\n\r\n", 26, &used), 1);
	gw_head_free(h);
	memset(big + n, 'v', GW_HTTP_HEAD_MAX - n - 3);
	memcpy(big + GW_HTTP_HEAD_MAX - 3, "\r\n\r\n", 4);
	bad_kind(PROXY, big, GW_HTTP_HEAD_MAX + 1, 431, "request head too large");
	h = gw_head_new(PROXY);
	rc = gw_head_feed(h, big, GW_HTTP_HEAD_MAX, &used);
	CHECK_EQ_INT(rc, 0);
	rc = gw_head_feed(h, big + GW_HTTP_HEAD_MAX, 1, &used);
	CHECK_EQ_INT(rc, -EBADMSG);
	CHECK_EQ_INT(gw_head_error(h, NULL), 431);
	gw_head_free(h);

	/* lookups are case-insensitive and count occurrences */
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.1\r\nAccept: a\r\nX: 1\r\naccept: b\r\n\r\n");
	if (h) {
		const struct gw_msg *m = gw_head_msg(h);
		const struct gw_field *f = gw_msg_field(m, "ACCEPT", 1);

		CHECK(f != NULL && str_is(f->value, "b"));
		CHECK(gw_msg_field(m, "accept", 2) == NULL);
		CHECK(gw_msg_field(m, "nope", 0) == NULL);
		CHECK_EQ_INT(gw_msg_count(m, "Accept"), 2);
		CHECK_EQ_INT(gw_msg_count(m, "x"), 1);
		gw_head_free(h);
	}
}

/* ---- framing of requests (RFC 9112 §6) ------------------------------------ */

static const struct gw_msg *req(struct gw_head **hp, const char *fields)
{
	static char buf[4096];

	snprintf(buf, sizeof buf, "POST http://h/ HTTP/1.1\r\n%s\r\n", fields);
	*hp = ok_kind(PROXY, buf);
	return *hp ? gw_head_msg(*hp) : NULL;
}

static void bad_fields(const char *fields, int status, const char *want)
{
	char buf[4096];

	snprintf(buf, sizeof buf, "POST http://h/ HTTP/1.1\r\n%s\r\n", fields);
	bad(buf, status, want);
}

static void test_request_framing(void)
{
	struct gw_head *h;
	const struct gw_msg *m;

	if ((m = req(&h, "Content-Length: 10\r\n"))) {
		CHECK_EQ_INT(m->body, GW_BODY_LENGTH);
		CHECK_EQ_INT(m->content_length, 10);
	}
	gw_head_free(h);
	if ((m = req(&h, "Content-Length: 0\r\n"))) {
		CHECK_EQ_INT(m->body, GW_BODY_LENGTH);
		CHECK_EQ_INT(m->content_length, 0);
	}
	gw_head_free(h);
	if ((m = req(&h, "Content-Length: 5, 5\r\nContent-Length: 5\r\n")))
		CHECK_EQ_INT(m->content_length, 5);        /* identical values coalesce */
	gw_head_free(h);
	if ((m = req(&h, "Content-Length: 9223372036854775807\r\n")))
		CHECK(m->content_length == (uint64_t)INT64_MAX);
	gw_head_free(h);
	if ((m = req(&h, "Transfer-Encoding: chunked\r\n")))
		CHECK_EQ_INT(m->body, GW_BODY_CHUNKED);
	gw_head_free(h);
	if ((m = req(&h, "Transfer-Encoding: ,Chunked , \r\n")))
		CHECK_EQ_INT(m->body, GW_BODY_CHUNKED);    /* empty list elements ignored */
	gw_head_free(h);
	if ((m = req(&h, "X: y\r\n")))
		CHECK_EQ_INT(m->body, GW_BODY_NONE);
	gw_head_free(h);

	/* smuggling: each refused with 400 (501 for a coding we lack) */
	bad_fields("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400,
		   "Content-Length with Transfer-Encoding");
	bad_fields("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", 400,
		   "Content-Length with Transfer-Encoding");
	bad_fields("Content-Length: 5\r\nContent-Length: 6\r\n", 400, "differing Content-Length");
	bad_fields("Content-Length: 5, 6\r\n", 400, "differing Content-Length");
	bad_fields("Content-Length: +5\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: -1\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 5a\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 5 5\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length:\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 5,\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 0x10\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 9223372036854775808\r\n", 400, "invalid Content-Length");
	bad_fields("Content-Length: 99999999999999999999999\r\n", 400, "invalid Content-Length");
	bad_fields("Transfer-Encoding: chunked, identity\r\n", 400, "chunked is not the final");
	bad_fields("Transfer-Encoding: chunked,identity\r\n", 400, "chunked is not the final");
	bad_fields("Transfer-Encoding: identity\r\n", 400, "chunked is not the final");
	bad_fields("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", 400,
		   "chunked is not the final");
	bad_fields("Transfer-Encoding: chunked, chunked\r\n", 400, "chunked applied more than once");
	bad_fields("Transfer-Encoding: chunked;x=1\r\n", 400, "chunked is not the final");
	bad_fields("Transfer-Encoding: xchunked\r\n", 400, "chunked is not the final");
	bad_fields("Transfer-Encoding:\r\n", 400, "empty Transfer-Encoding");
	bad_fields("Transfer-Encoding: \"chunked\"\r\n", 400, "invalid Transfer-Encoding");
	bad_fields("Transfer-Encoding: gzip, chunked\r\n", 501, "unsupported transfer coding");
	bad_fields("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501,
		   "unsupported transfer coding");
	bad("POST http://h/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
	    "Transfer-Encoding in an HTTP/1.0");
}

/* ---- Expect, Connection, Upgrade, keep-alive ------------------------------- */

static void test_connection(void)
{
	struct gw_head *h;
	const struct gw_msg *m;

	if ((m = req(&h, "Expect: 100-continue\r\nContent-Length: 3\r\n")))
		CHECK_EQ_INT(m->expect, GW_EXPECT_CONTINUE);
	gw_head_free(h);
	if ((m = req(&h, "Expect: 100-Continue\r\n")))
		CHECK_EQ_INT(m->expect, GW_EXPECT_CONTINUE);
	gw_head_free(h);
	if ((m = req(&h, "Expect: something-else\r\n")))
		CHECK_EQ_INT(m->expect, GW_EXPECT_OTHER);
	gw_head_free(h);
	h = ok_kind(PROXY, "POST http://h/ HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	if (h) {
		CHECK_EQ_INT(gw_head_msg(h)->expect, GW_EXPECT_NONE);   /* ignored from 1.0 */
		gw_head_free(h);
	}

	/* keep-alive defaults: 1.1 open, 1.0 closed */
	if ((m = req(&h, "")))
		CHECK(gw_msg_keep_alive(m));
	gw_head_free(h);
	if ((m = req(&h, "Connection: close\r\n"))) {
		CHECK(!gw_msg_keep_alive(m));
		CHECK(m->conn_close);
	}
	gw_head_free(h);
	if ((m = req(&h, "Connection: keep-alive, Close\r\n")))
		CHECK(!gw_msg_keep_alive(m));
	gw_head_free(h);
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.0\r\n\r\n");
	if (h) {
		CHECK(!gw_msg_keep_alive(gw_head_msg(h)));
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
	if (h) {
		CHECK(gw_msg_keep_alive(gw_head_msg(h)));
		CHECK(gw_head_msg(h)->conn_keep_alive);
		gw_head_free(h);
	}
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n");
	if (h) {
		CHECK(!gw_msg_keep_alive(gw_head_msg(h)));
		gw_head_free(h);
	}
	bad_fields("Connection: close x\r\n", 400, "invalid Connection field");

	/* WebSocket upgrade */
	h = ok_kind(TUNNEL, "GET /chat HTTP/1.1\r\nHost: ws.test\r\nConnection: keep-alive, Upgrade\r\n"
			    "Upgrade: WebSocket\r\nSec-WebSocket-Version: 13\r\n\r\n");
	if (h) {
		m = gw_head_msg(h);
		CHECK(m->conn_upgrade);
		CHECK(m->upgrade_websocket);
		gw_head_free(h);
	}
	if ((m = req(&h, "Upgrade: websocket\r\n")))
		CHECK(!m->upgrade_websocket);                    /* not nominated by Connection */
	gw_head_free(h);
	if ((m = req(&h, "Connection: upgrade\r\nUpgrade: h2c, foo/2\r\n")))
		CHECK(!m->upgrade_websocket);
	gw_head_free(h);
	h = ok_kind(PROXY, "GET http://h/ HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n");
	if (h) {
		CHECK(!gw_head_msg(h)->upgrade_websocket);       /* Upgrade is 1.1 only */
		gw_head_free(h);
	}
}

static void test_hop_by_hop(void)
{
	struct gw_head *h;
	const struct gw_msg *m = req(&h, "Connection: X-Trace, keep-alive\r\nX-Trace: 1\r\n"
				       "Keep-Alive: timeout=5\r\nContent-Type: text/plain\r\n");

	if (m == NULL)
		return;
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("Connection")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("proxy-connection")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("Proxy-Authorization")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("proxy-authenticate")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("Keep-Alive")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("TE")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("transfer-encoding")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("Upgrade")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("Trailer")));
	CHECK(gw_msg_is_hop_by_hop(m, GW_STR("x-trace")));     /* nominated */
	CHECK(!gw_msg_is_hop_by_hop(m, GW_STR("Content-Type")));
	CHECK(!gw_msg_is_hop_by_hop(m, GW_STR("Trailers")));
	CHECK(!gw_msg_is_hop_by_hop(m, GW_STR("X-Trac")));
	CHECK(!gw_msg_is_hop_by_hop(NULL, GW_STR("x-trace")));
	CHECK(gw_msg_is_hop_by_hop(NULL, GW_STR("te")));
	gw_head_free(h);
	/* Connection cannot strip the fields that frame and route a message */
	m = req(&h, "Connection: Content-Length, host, x-a\r\nContent-Length: 3\r\nHost: h\r\n");
	if (m) {
		CHECK(!gw_msg_is_hop_by_hop(m, GW_STR("content-length")));
		CHECK(!gw_msg_is_hop_by_hop(m, GW_STR("Host")));
		CHECK(gw_msg_is_hop_by_hop(m, GW_STR("X-A")));
		CHECK_EQ_INT(m->content_length, 3);
	}
	gw_head_free(h);
}

/* ---- responses ------------------------------------------------------------- */

static struct gw_head *resp_to(const char *method, const char *text)
{
	struct gw_head *h = gw_head_new(RESP);
	size_t used = 0, n = strlen(text);
	size_t head = (size_t)(strstr(text, "\r\n\r\n") - text) + 4;   /* what follows is body */

	gw_head_set_request(h, (struct gw_str){ method, strlen(method) });
	CHECK_EQ_INT(gw_head_feed(h, text, n, &used), 1);
	CHECK_EQ_INT(used, head);
	if (gw_head_msg(h) == NULL) {
		fprintf(stderr, "  response refused: %s\n", text);
		gw_head_free(h);
		return NULL;
	}
	return h;
}

static void test_responses(void)
{
	struct gw_head *h;
	const struct gw_msg *m;
	size_t used;

	if ((h = resp_to("GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))) {
		m = gw_head_msg(h);
		CHECK(m->response);
		CHECK_EQ_INT(m->status, 200);
		CHECK(str_is(m->reason, "OK"));
		CHECK_EQ_INT(m->body, GW_BODY_LENGTH);
		CHECK_EQ_INT(m->content_length, 5);
		CHECK(m->keep_alive);
		CHECK(!m->interim);
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_CHUNKED);
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 200 OK\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_CLOSE);       /* read until close */
		CHECK(!gw_msg_keep_alive(gw_head_msg(h)));
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 204 No Content\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_NONE);
		CHECK(gw_msg_keep_alive(gw_head_msg(h)));
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_NONE);
		CHECK_EQ_INT(gw_head_msg(h)->content_length, 0);
		gw_head_free(h);
	}
	if ((h = resp_to("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_NONE);
		gw_head_free(h);
	}
	if ((h = resp_to("head", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_LENGTH);     /* "head" is not HEAD */
		gw_head_free(h);
	}
	if ((h = resp_to("CONNECT", "HTTP/1.1 200 Connection Established\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_TUNNEL);
		CHECK(!gw_msg_keep_alive(gw_head_msg(h)));
		gw_head_free(h);
	}
	if ((h = resp_to("CONNECT", "HTTP/1.1 407 Auth\r\nContent-Length: 0\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->body, GW_BODY_LENGTH);
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
				"Upgrade: websocket\r\n\r\n"))) {
		m = gw_head_msg(h);
		CHECK_EQ_INT(m->body, GW_BODY_TUNNEL);
		CHECK(!m->interim);
		CHECK(m->upgrade_websocket);
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"))) {
		CHECK(!gw_msg_keep_alive(gw_head_msg(h)));            /* 1.0 default */
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"))) {
		CHECK(gw_head_msg(h)->reason.n == 0);                 /* no SP, no reason */
		gw_head_free(h);
	}
	if ((h = resp_to("GET", "HTTP/1.1 599 \r\nContent-Length: 0\r\n\r\n"))) {
		CHECK_EQ_INT(gw_head_msg(h)->status, 599);
		gw_head_free(h);
	}

	/* 100 Continue then the final response, on one parser, as a proxy
	 * sees them after an Expect: 100-continue request */
	{
		const char *both = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
				   "Content-Length: 2\r\n\r\nok";
		size_t n = strlen(both);

		h = gw_head_new(RESP);
		gw_head_set_request(h, GW_STR("PUT"));
		CHECK_EQ_INT(gw_head_feed(h, both, n, &used), 1);
		CHECK_EQ_INT(used, 25);
		m = gw_head_msg(h);
		CHECK(m != NULL && m->interim && m->status == 100 && m->body == GW_BODY_NONE);
		gw_head_reset(h);
		size_t used2;
		CHECK_EQ_INT(gw_head_feed(h, both + used, n - used, &used2), 1);
		m = gw_head_msg(h);
		CHECK(m != NULL && m->status == 201 && !m->interim && m->content_length == 2);
		CHECK_EQ_INT(used + used2, n - 2);
		gw_head_free(h);
	}

	/* every response fault answers 502 */
	bad_k(RESP, "HTTP/1.1 20 OK\r\n\r\n", 502, "malformed status line");
	bad_k(RESP, "HTTP/1.1 2000 OK\r\n\r\n", 502, "malformed status line");
	bad_k(RESP, "HTTP/1.1 099 X\r\n\r\n", 502, "invalid status code");
	bad_k(RESP, "HTTP/1.1 600 X\r\n\r\n", 502, "invalid status code");
	bad_k(RESP, "HTTP/2 200 OK\r\n\r\n", 502, "malformed status line");
	bad_k(RESP, "HTTP/2.0 200 OK\r\n\r\n", 502, "unsupported HTTP version");
	bad_k(RESP, "ICY 200 OK\r\n\r\n", 502, "malformed status line");
	bad_k(RESP, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 502, "Content-Length with Transfer-Encoding");
	bad_k(RESP, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 502,
		 "differing Content-Length");
	bad_k(RESP, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 502,
		 "unsupported transfer coding");
	bad_k(RESP, "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 502,
		 "Transfer-Encoding in an HTTP/1.0");
	bad_k(RESP, "HTTP/1.1 200 OK\nA: b\r\n\r\n", 502, "bare LF");
	bad_k(RESP, "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", 502, "obs-fold");
}

/* ---- pipelining, stickiness, every split ------------------------------------ */

static void test_pipelining(void)
{
	const char *two = "GET http://a/ HTTP/1.1\r\n\r\nGET http://b/x HTTP/1.1\r\nConnection: close\r\n\r\n";
	struct gw_head *h = gw_head_new(PROXY);
	size_t n = strlen(two), used = 0, used2 = 0;

	CHECK_EQ_INT(gw_head_feed(h, two, n, &used), 1);
	CHECK_EQ_INT(used, 26);
	CHECK_EQ_STR(gw_head_msg(h)->target.auth.host, "a");
	/* done is sticky until reset: takes nothing */
	CHECK_EQ_INT(gw_head_feed(h, two + used, n - used, &used2), 1);
	CHECK_EQ_INT(used2, 0);
	CHECK_EQ_INT(gw_head_error(h, NULL), 0);
	gw_head_reset(h);
	CHECK(gw_head_msg(h) == NULL);
	CHECK_EQ_INT(gw_head_feed(h, two + used, n - used, &used2), 1);
	CHECK_EQ_INT(used + used2, n);
	CHECK_EQ_STR(gw_head_msg(h)->target.auth.host, "b");
	CHECK(!gw_msg_keep_alive(gw_head_msg(h)));
	/* feeding nothing is fine */
	gw_head_reset(h);
	CHECK_EQ_INT(gw_head_feed(h, NULL, 0, &used), 0);
	CHECK_EQ_INT(used, 0);
	gw_head_free(h);
	gw_head_free(NULL);
	CHECK(gw_head_new((enum gw_head_kind)0) == NULL);
}

static void test_every_split(void)
{
	static const struct {
		enum gw_head_kind kind;
		const char *text;
	} cases[] = {
		{ PROXY, "GET http://Example.com:8080/a?b#c HTTP/1.1\r\nHost: example.com\r\n"
			 "Connection: keep-alive, X-A\r\nX-A: 1\r\nExpect: 100-continue\r\n\r\nBODY" },
		{ PROXY, "\r\nCONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n" },
		{ PROXY, "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n" },
		{ TUNNEL, "GET /chat HTTP/1.1\r\nHost: ws\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n" },
		{ RESP, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX:  y z \r\n\r\nabc" },
		{ RESP, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n" },
		/* refusals come out the same too */
		{ PROXY, "GET http://h/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n" },
		{ PROXY, "POST http://h/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n" },
		{ PROXY, "GET http://h/ HTTP/1.1\r\nA: b\rX\r\n\r\n" },
		{ TUNNEL, "GET / HTTP/1.1\r\n\r\n" },
		{ RESP, "HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool same;

		parse_all_ways(cases[i].kind, cases[i].text, strlen(cases[i].text), &same);
		CHECK(same);
	}
}

/* ---- authorities ------------------------------------------------------------- */

static void test_authority(void)
{
	struct gw_authority a;
	char name[300];

	CHECK_EQ_INT(gw_authority_parse(GW_STR("Example.COM."), 80, &a), 0);
	CHECK_EQ_STR(a.host, "example.com");
	CHECK_EQ_INT(a.port, 80);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("under_score-1.test:08080"), 0, &a), 0);
	CHECK_EQ_INT(a.port, 8080);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("[::FFFF:1.2.3.4]"), 443, &a), 0);
	CHECK_EQ_STR(a.host, "::ffff:1.2.3.4");
	CHECK_EQ_INT(gw_authority_parse(GW_STR("h"), 0, &a), -EINVAL);          /* port required */
	CHECK_EQ_INT(gw_authority_parse(GW_STR("a..b"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR(".a"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("."), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("a.b.."), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("[::1]x"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("[::1"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("[1.2.3.4]"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("h:123456"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("h:+1"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("h:1:2"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR("h\xc3\xa9"), 80, &a), -EINVAL);
	CHECK_EQ_INT(gw_authority_parse(GW_STR(""), 80, &a), -EINVAL);
	memset(name, 'a', sizeof name);
	CHECK_EQ_INT(gw_authority_parse((struct gw_str){ name, 253 }, 80, &a), 0);
	name[253] = '.';
	CHECK_EQ_INT(gw_authority_parse((struct gw_str){ name, 254 }, 80, &a), 0);
	CHECK_EQ_INT(gw_authority_parse((struct gw_str){ name, 255 }, 80, &a), -EINVAL);
}

/* ---- the chunked decoder ------------------------------------------------------ */

/* Decode body whole; returns rc and the decoded bytes in out. */
static int chunked_whole(const char *body, size_t n, char *out, size_t cap, size_t *used,
			 size_t *produced)
{
	struct gw_chunked c;

	gw_chunked_init(&c, false);
	return gw_chunked_feed(&c, body, n, used, out, cap, produced);
}

/* Decode body one input byte at a time into an output of ocap bytes per
 * call; the result must equal the whole decode. */
static int chunked_bytes(const char *body, size_t n, size_t ocap, char *out, size_t *produced,
			 size_t *used_total)
{
	struct gw_chunked c;
	size_t off = 0, o = 0;
	int rc = 0;

	gw_chunked_init(&c, false);
	while (off < n) {
		size_t used, prod, k = 1;

		rc = gw_chunked_feed(&c, body + off, k, &used, out + o, ocap, &prod);
		off += used;
		o += prod;
		if (rc != 0)
			break;
		if (used == 0 && prod == 0)
			break;       /* no progress: must not happen with ocap > 0 */
	}
	*produced = o;
	*used_total = off;
	return rc;
}

#define ALL SIZE_MAX      /* chunked_ok: the whole body is used */

static void chunked_ok(const char *body, const char *want, size_t want_used)
{
	char out[4096], out2[4096], inplace[4096];
	size_t n = strlen(body), used, prod, used2, prod2;
	int rc = chunked_whole(body, n, out, sizeof out, &used, &prod);

	if (want_used == ALL)
		want_used = n;
	if (rc != 1)
		fprintf(stderr, "  chunked refused (%d): %s\n", rc, body);
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(used, want_used);
	CHECK(prod == strlen(want) && memcmp(out, want, prod) == 0);
	rc = chunked_bytes(body, n, 1, out2, &prod2, &used2);
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(used2, want_used);
	CHECK(prod2 == prod && memcmp(out2, want, prod) == 0);
	/* in place */
	memcpy(inplace, body, n);
	{
		struct gw_chunked c;

		gw_chunked_init(&c, false);
		rc = gw_chunked_feed(&c, inplace, n, &used, inplace, n, &prod);
		CHECK_EQ_INT(rc, 1);
		CHECK(prod == strlen(want) && memcmp(inplace, want, prod) == 0);
	}
}

static void chunked_bad(const char *body, size_t n, const char *want)
{
	char out[256];
	struct gw_chunked c;
	size_t used, prod, used2, prod2;
	const char *reason = NULL;
	int rc;

	gw_chunked_init(&c, false);
	{
		/* whole, through a small output buffer so long data loops */
		size_t off = 0;

		do {
			rc = gw_chunked_feed(&c, body + off, n - off, &used, out, sizeof out, &prod);
			off += used;
		} while (rc == 0 && off < n && used > 0);
	}
	CHECK_EQ_INT(rc, -EBADMSG);
	CHECK_EQ_INT(gw_chunked_error(&c, &reason), 400);
	if (reason == NULL || strncmp(reason, want, strlen(want)) != 0)
		fprintf(stderr, "  chunked: want \"%s\", got \"%s\"\n", want, reason ? reason : "-");
	CHECK(reason != NULL && strncmp(reason, want, strlen(want)) == 0);
	CHECK_EQ_INT(gw_chunked_feed(&c, "0", 1, &used, out, sizeof out, &prod), -EBADMSG);
	CHECK_EQ_INT(used, 0);
	if (n < 2048) {
		static char big[2048];

		rc = chunked_bytes(body, n, 1, big, &prod2, &used2);
		CHECK_EQ_INT(rc, -EBADMSG);
	}
}

static void test_chunked(void)
{
	static char big[80000];
	struct gw_chunked c;
	char out[64];
	size_t used, prod, n;
	const char *reason;
	int rc;

	chunked_ok("5\r\nhello\r\n0\r\n\r\n", "hello", 15);
	chunked_ok("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET next", "hello world", 26);
	chunked_ok("0\r\n\r\n", "", 5);
	chunked_ok("A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20);     /* hex, upper */
	chunked_ok("a\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20);
	chunked_ok("0005\r\nhello\r\n000\r\n\r\n", "hello", 20);           /* leading zeros */
	/* extensions: tokens, quoted strings with escapes, BWS around ';' and '=' */
	chunked_ok("5;a=b;c=\"q\\\"x;y\"\r\nhello\r\n0;last\r\n\r\n", "hello", ALL);
	chunked_ok("5 ; a = b ;c\r\nhello\r\n0\r\n\r\n", "hello", ALL);
	chunked_ok("5;a=\"x\";b\r\nhello\r\n0;a=\"\" ;b\r\n\r\n", "hello", ALL);
	chunked_ok("5;a ;b\t=\tc\r\nhello\r\n0\r\n\r\n", "hello", ALL);
	/* trailers, checked and dropped */
	chunked_ok("3\r\nabc\r\n0\r\nX-Sum: 1\r\nY:\r\n\r\n", "abc", ALL);
	chunked_ok("3\r\nabc\r\n0\r\nX-Sum: 1\r\nY:\r\n\r\nHTTP/1.1 200 OK\r\n", "abc", 27);

	chunked_bad("5\r\nhelloX\r\n0\r\n\r\n", 17, "missing CRLF after chunk data");
	chunked_bad("5\r\nhello\rX0\r\n\r\n", 15, "missing CRLF after chunk data");
	chunked_bad("5\r\nhello\n0\r\n\r\n", 14, "missing CRLF after chunk data");
	chunked_bad("\r\nhello\r\n", 9, "missing chunk size");
	chunked_bad(";a\r\n", 4, "missing chunk size");
	chunked_bad("g\r\n", 3, "missing chunk size");
	chunked_bad("5g\r\n", 4, "invalid character in chunk size");
	chunked_bad("-5\r\n", 4, "missing chunk size");
	chunked_bad("5 \r\nhello\r\n0\r\n\r\n", 16, "malformed chunk extension");
	chunked_bad("5\nhello\r\n0\r\n\r\n", 14, "invalid character in chunk size");
	chunked_bad("5\rhello", 7, "bare CR in chunk size line");
	chunked_bad("5;\r\nhello", 9, "malformed chunk extension");
	chunked_bad("5;a=\r\nhello", 11, "malformed chunk extension");
	chunked_bad("5;a b\r\n", 7, "malformed chunk extension");
	chunked_bad("5;=b\r\n", 6, "invalid chunk extension name");
	chunked_bad("5;a=\"x\r\n", 8, "CR in quoted chunk extension");
	chunked_bad("5;a=\"x\"y\r\n", 10, "malformed chunk extension");
	chunked_bad("5;a=(\r\n", 7, "invalid chunk extension value");
	chunked_bad("5;a=b c\r\n", 9, "malformed chunk extension");
	chunked_bad("5;a\x01\r\n", 6, "invalid chunk extension name");
	chunked_bad("5;a =\x01\r\n", 8, "invalid chunk extension value");
	chunked_bad("5;a=\"\x01\"\r\n", 9, "invalid character in quoted");
	chunked_bad("5;a=\"\\\x01\"\r\n", 10, "invalid character in quoted");
	chunked_bad("5;a=\"\"\t=\r\n", 10, "malformed chunk extension");
	/* sizes: 16 hex digits up to INT64_MAX; past it, refused, not wrapped */
	chunked_bad("8000000000000000\r\n", 18, "chunk size too large");
	chunked_bad("FFFFFFFFFFFFFFFFF\r\n", 19, "chunk size too large");
	chunked_bad("10000000000000000000000000000005\r\nhello", 39, "chunk size too large");
	gw_chunked_init(&c, false);
	rc = gw_chunked_feed(&c, "7FFFFFFFFFFFFFFF\r\nabc", 21, &used, out, sizeof out, &prod);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(prod, 3);
	CHECK(c.remaining == (uint64_t)INT64_MAX - 3);
	/* trailers */
	chunked_bad("0\r\nA: b\r\n c\r\n\r\n", 15, "obs-fold in trailer");
	chunked_bad("0\r\nA : b\r\n\r\n", 11, "whitespace before colon in trailer");
	chunked_bad("0\r\n: b\r\n\r\n", 9, "invalid trailer field name");
	chunked_bad("0\r\nA(: b\r\n\r\n", 11, "invalid trailer field name");
	chunked_bad("0\r\nA: b\x01\r\n\r\n", 11, "invalid character in trailer");
	chunked_bad("0\r\nA: b\nB: c\r\n\r\n", 16, "invalid character in trailer");
	chunked_bad("0\r\nA: b\rx\r\n\r\n", 12, "bare CR in trailer");
	chunked_bad("0\r\n\rx", 5, "bare CR in trailer");

	/* limits: the size line, extension bytes across chunks, trailer size and count */
	n = 0;
	memset(big, '0', GW_CHUNK_LINE_MAX);
	big[GW_CHUNK_LINE_MAX - 1] = '1';
	memcpy(big + GW_CHUNK_LINE_MAX, "\r\nx\r\n0\r\n\r\n", 10);
	gw_chunked_init(&c, false);
	CHECK_EQ_INT(gw_chunked_feed(&c, big, GW_CHUNK_LINE_MAX + 10, &used, out, sizeof out, &prod), 1);
	CHECK(prod == 1 && out[0] == 'x');
	memset(big, '0', GW_CHUNK_LINE_MAX + 1);
	chunked_bad(big, GW_CHUNK_LINE_MAX + 1, "chunk size line too long");
	for (n = 0; n + 8000 < sizeof big - 100; ) {
		n += (size_t)sprintf(big + n, "1;e=");
		memset(big + n, 'v', 7000);
		n += 7000;
		n += (size_t)sprintf(big + n, "\r\nz\r\n");
	}
	chunked_bad(big, n, "chunk extensions too large");
	n = (size_t)sprintf(big, "0\r\n");
	for (int i = 0; i < 35; i++)     /* 35 * 2 KiB > 64 KiB */
		n += (size_t)sprintf(big + n, "X-%d: %0*d\r\n", i, 2000, i);
	chunked_bad(big, n, "trailer section too large");
	n = (size_t)sprintf(big, "0\r\n");
	for (int i = 0; i <= GW_HTTP_FIELDS_MAX; i++)
		n += (size_t)sprintf(big + n, "T: %d\r\n", i);
	chunked_bad(big, n, "too many trailer fields");

	/* a small output buffer: input is taken only as output room allows */
	gw_chunked_init(&c, true);
	rc = gw_chunked_feed(&c, "5\r\nhello\r\n0\r\n\r\n", 15, &used, out, 2, &prod);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(used, 5);
	CHECK_EQ_INT(prod, 2);
	CHECK(memcmp(out, "he", 2) == 0);
	CHECK_EQ_INT(c.body_bytes, 2);
	rc = gw_chunked_feed(&c, "llo\r\n0\r\n\r\n", 10, &used, out, 0, &prod);
	CHECK_EQ_INT(rc, 0);                   /* no room: nothing taken */
	CHECK_EQ_INT(used, 0);
	rc = gw_chunked_feed(&c, "llo\r\n0\r\n\r\n", 10, &used, out, sizeof out, &prod);
	CHECK_EQ_INT(rc, 1);
	CHECK_EQ_INT(c.body_bytes, 5);
	/* done is sticky */
	CHECK_EQ_INT(gw_chunked_feed(&c, "5\r\n", 3, &used, out, sizeof out, &prod), 1);
	CHECK_EQ_INT(used, 0);
	CHECK_EQ_INT(gw_chunked_error(&c, &reason), 0);
	CHECK(reason == NULL);
	/* responses report 502 */
	gw_chunked_init(&c, true);
	CHECK_EQ_INT(gw_chunked_feed(&c, "z", 1, &used, out, sizeof out, &prod), -EBADMSG);
	CHECK_EQ_INT(gw_chunked_error(&c, NULL), 502);

	/* a long body streams through a 64-byte buffer */
	{
		size_t total = 0, off = 0;

		n = 0;
		for (int i = 0; i < 100; i++) {
			n += (size_t)sprintf(big + n, "1f4\r\n");      /* 500 */
			memset(big + n, 'a' + i % 26, 500);
			n += 500;
			n += (size_t)sprintf(big + n, "\r\n");
		}
		n += (size_t)sprintf(big + n, "0\r\n\r\n");
		gw_chunked_init(&c, false);
		do {
			rc = gw_chunked_feed(&c, big + off, n - off, &used, out, sizeof out, &prod);
			off += used;
			total += prod;
		} while (rc == 0 && off < n);
		CHECK_EQ_INT(rc, 1);
		CHECK_EQ_INT(off, n);
		CHECK_EQ_INT(total, 50000);
		CHECK_EQ_INT(c.body_bytes, 50000);
	}

	{
		char line[GW_CHUNK_SIZE_LINE];

		CHECK_EQ_INT(gw_chunk_size_line(line, 0), 3);
		CHECK_EQ_STR(line, "0\r\n");
		CHECK_EQ_INT(gw_chunk_size_line(line, 255), 4);
		CHECK_EQ_STR(line, "ff\r\n");
		CHECK_EQ_INT(gw_chunk_size_line(line, UINT64_MAX), 18);
		CHECK_EQ_STR(line, "ffffffffffffffff\r\n");
	}
}

/* ---- the policy path --------------------------------------------------------- */

static void canon(const char *in, const char *want)
{
	char out[512];
	size_t len = 0;
	int rc = gw_path_canonical((struct gw_str){ in, strlen(in) }, out, sizeof out, &len);

	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK_EQ_STR(out, want);
		CHECK_EQ_INT(len, strlen(want));
		/* canonical is a fixed point */
		char again[512];
		size_t len2;

		CHECK(gw_path_canonical((struct gw_str){ out, len }, again, sizeof again, &len2) == 0 &&
		      strcmp(again, out) == 0);
	}
}

static void canon_bad(const char *in, int err)
{
	char out[512];
	size_t len = 77;

	CHECK_EQ_INT(gw_path_canonical((struct gw_str){ in, strlen(in) }, out, sizeof out, &len), err);
	CHECK_EQ_INT(len, 77);
}

static void test_canonical_path(void)
{
	char out[16];
	size_t len;

	canon("/a/./b/../c", "/a/c");
	canon("/%7E", "/~");
	canon("/%7euser/x", "/~user/x");
	canon("/a%2fb", "/a%2Fb");
	canon("/a%2Fb/../c", "/c");                /* %2F does not split a segment */
	canon("/../", "/");
	canon("/..", "/");
	canon("/.", "/");
	canon("/../x", "/x");
	canon("/a/b/..", "/a/");
	canon("/a/b/.", "/a/b/");
	canon("/a/./", "/a/");
	canon("/a/../../../b", "/b");
	canon("/%2E%2E/%2e/x", "/x");             /* encoded dots are dots */
	canon("/.%2E/x", "/x");
	canon("/a/.../b", "/a/.../b");
	canon("/a/.b/..c", "/a/.b/..c");
	canon("/a//b", "/a//b");                 /* nothing else collapses */
	canon("/a//..", "/a/");
	canon("//..", "/");
	canon("/A/%41%5a", "/A/AZ");
	canon("/%c3%a9", "/%C3%A9");
	canon("/\xc3\xa9", "/%C3%A9");          /* a raw byte and its escape agree */
	canon("/a\\b", "/a%5Cb");
	canon("/a|b{c}", "/a%7Cb%7Bc%7D");
	canon("/%25", "/%25");
	canon("/%3b;p=1,2:@!$&'()*+", "/%3B;p=1,2:@!$&'()*+");
	canon("/", "/");
	canon("", "/");
	canon("*", "*");
	canon("/a/", "/a/");
	canon_bad("/%00", -EINVAL);
	canon_bad("/a%zz", -EINVAL);
	canon_bad("/a%4", -EINVAL);
	canon_bad("/a%", -EINVAL);
	canon_bad("a/b", -EINVAL);
	CHECK_EQ_INT(gw_path_canonical((struct gw_str){ "/a\0b", 4 }, out, sizeof out, &len), -EINVAL);
	/* room: exactly enough passes, one less is -ENOSPC */
	CHECK_EQ_INT(gw_path_canonical(GW_STR("/\xff"), out, 5, &len), 0);
	CHECK_EQ_STR(out, "/%FF");
	CHECK_EQ_INT(gw_path_canonical(GW_STR("/\xff"), out, 4, &len), -ENOSPC);
	/* room for the work, not just the result: "/a/.." needs its bytes before
	 * the dot segment takes them back; GW_PATH_CANON_MAX is always enough */
	CHECK_EQ_INT(gw_path_canonical(GW_STR("/a/.."), out, 2, &len), -ENOSPC);
	CHECK_EQ_INT(gw_path_canonical(GW_STR("/a/.."), out, 5, &len), 0);
	CHECK_EQ_INT(gw_path_canonical(GW_STR(""), out, 1, &len), -ENOSPC);
	{
		/* the documented bound holds for the worst input */
		char in[] = "/\x80\x80\x80\x80/..";
		char o[GW_PATH_CANON_MAX(sizeof in - 1)];

		CHECK_EQ_INT(gw_path_canonical((struct gw_str){ in, sizeof in - 1 }, o, sizeof o, &len), 0);
		CHECK_EQ_STR(o, "/");
		CHECK_EQ_INT(gw_path_canonical(GW_STR("/\x80\x80\x80\x80"), o, GW_PATH_CANON_MAX(5), &len), 0);
	}
}

/* ---- the writer -------------------------------------------------------------- */

static void test_writer(void)
{
	char buf[256];
	struct gw_writer w;
	size_t len = 0;
	struct gw_head *h;

	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_request_line(&w, GW_STR("GET"), GW_STR("/a/b"), GW_STR("x=1"));
	gw_writer_field(&w, GW_STR("Host"), GW_STR("h.test:8080"));
	gw_writer_field_u64(&w, GW_STR("Content-Length"), 1234567890123ULL);
	gw_writer_field(&w, GW_STR("X-Empty"), (struct gw_str){ NULL, 0 });
	CHECK_EQ_INT(gw_writer_finish(&w, &len), 0);
	CHECK(len == strlen("GET /a/b?x=1 HTTP/1.1\r\nHost: h.test:8080\r\n"
			    "Content-Length: 1234567890123\r\nX-Empty: \r\n\r\n") &&
	      memcmp(buf, "GET /a/b?x=1 HTTP/1.1\r\nHost: h.test:8080\r\n"
			  "Content-Length: 1234567890123\r\nX-Empty: \r\n\r\n", len) == 0);
	/* what we write, we read back the same */
	h = gw_head_new(TUNNEL);
	{
		size_t used;

		CHECK_EQ_INT(gw_head_feed(h, buf, len, &used), 1);
		const struct gw_msg *m = gw_head_msg(h);

		CHECK(m && str_is(m->target.query, "x=1") && m->content_length == 1234567890123ULL);
	}
	gw_head_free(h);

	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 403, GW_STR("Forbidden"));
	gw_writer_field(&w, GW_STR("x-strands-box-egress"), GW_STR("refused"));
	gw_writer_field(&w, GW_STR("Connection"), GW_STR("close"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), 0);
	CHECK(buf_is(buf, len, "HTTP/1.1 403 Forbidden\r\nx-strands-box-egress: refused\r\n"
			       "Connection: close\r\n\r\n"));
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_request_line(&w, GW_STR("CONNECT"), GW_STR("h:443"), (struct gw_str){ NULL, 0 });
	CHECK_EQ_INT(gw_writer_finish(&w, &len), 0);
	CHECK(buf_is(buf, len, "CONNECT h:443 HTTP/1.1\r\n\r\n"));

	/* injection and bad pieces: -EINVAL, sticky */
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 200, GW_STR("OK"));
	gw_writer_field(&w, GW_STR("X"), GW_STR("a\r\nSet-Cookie: evil"));
	gw_writer_field(&w, GW_STR("Y"), GW_STR("fine"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 200, GW_STR("OK"));
	gw_writer_field(&w, GW_STR("X Y"), GW_STR("v"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 200, GW_STR("O\nK"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 99, GW_STR("x"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_request_line(&w, GW_STR("GET"), GW_STR("/a b"), (struct gw_str){ NULL, 0 });
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_request_line(&w, GW_STR("G T"), GW_STR("/"), (struct gw_str){ NULL, 0 });
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_request_line(&w, GW_STR("GET"), GW_STR("/"), GW_STR("a\r\nb"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_field(&w, GW_STR("X"), GW_STR("v"));             /* before a start line */
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);
	gw_writer_init(&w, buf, sizeof buf);
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);         /* no start line */
	gw_writer_init(&w, buf, sizeof buf);
	gw_writer_status_line(&w, 200, GW_STR("OK"));
	gw_writer_status_line(&w, 200, GW_STR("OK"));
	CHECK_EQ_INT(gw_writer_finish(&w, &len), -EINVAL);         /* two start lines */

	/* overflow: -ENOSPC at any size short of the head, never past cap */
	for (size_t cap = 0; cap < 40; cap++) {
		char small[64];

		memset(small, '#', sizeof small);
		gw_writer_init(&w, small, cap);
		gw_writer_status_line(&w, 200, GW_STR("OK"));
		gw_writer_field(&w, GW_STR("Content-Length"), GW_STR("0"));
		len = 999;
		int rc = gw_writer_finish(&w, &len);

		if (cap < 38) {
			if (rc != -ENOSPC || len != 999 || small[cap] != '#')
				CHECK(false);
		} else {
			CHECK_EQ_INT(rc, 0);
			CHECK_EQ_INT(len, 38);
		}
	}
}

static const struct test_case tests[] = {
	{ "absolute_form", test_absolute_form },
	{ "connect", test_connect },
	{ "tunnel", test_tunnel },
	{ "request_line", test_request_line },
	{ "fields", test_fields },
	{ "request_framing", test_request_framing },
	{ "connection", test_connection },
	{ "hop_by_hop", test_hop_by_hop },
	{ "responses", test_responses },
	{ "pipelining", test_pipelining },
	{ "every_split", test_every_split },
	{ "authority", test_authority },
	{ "chunked", test_chunked },
	{ "canonical_path", test_canonical_path },
	{ "writer", test_writer },
};

TEST_MAIN(tests)
