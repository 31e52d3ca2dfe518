/* http.c - the HTTP/1.1 message layer of the egress gateway (see http.h).
 *
 * Divisions, in order:
 *   1. characters and small helpers
 *   2. authorities (CONNECT targets, Host values, absolute-form URIs)
 *   3. the head parser: the byte scanner (limits, line endings, control
 *      characters as bytes arrive), then the parse of a complete head
 *      (start line, field lines, target, framing, connection)
 *   4. questions about a parsed head (lookup, keep-alive, hop-by-hop)
 *   5. the chunked decoder
 *   6. the policy path
 *   7. the head writer
 *
 * A head is handled in two steps.  The scanner looks at every byte once, as
 * it arrives, and refuses at once what can be refused byte by byte (bare CR
 * or LF, NUL, control characters, obs-fold, the size limits), so a peer
 * cannot make us buffer more than GW_HTTP_HEAD_MAX bytes or wait for the end
 * of a head that is already wrong.  When it sees the empty line that ends the
 * head, the whole head is parsed at once from the buffer, where every line is
 * known to end in CRLF and to hold no control character but HTAB.  Because
 * the scanner's state depends only on the bytes seen, not on how they were
 * split, the result is the same for any split of the input. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ==== 1. characters and small helpers ==================================== */

/* tchar (RFC 9110 §5.6.2): the characters of a token (method, field name,
 * transfer coding, connection option). */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)p[i]))
			return false;
	return true;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* ASCII case-insensitive equality; field names and tokens are ASCII. */
static bool eq_ci(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return false;
	return true;
}

static bool str_eq_ci(struct gw_str s, const char *lit)
{
	return s.p != NULL && eq_ci(s.p, s.n, lit, strlen(lit));
}

static bool is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static struct gw_str trim_ows(const char *p, size_t n)
{
	while (n > 0 && is_ows((unsigned char)p[0]))
		p++, n--;
	while (n > 0 && is_ows((unsigned char)p[n - 1]))
		n--;
	return (struct gw_str){ p, n };
}

/* Iterate the elements of a comma-separated list (RFC 9110 §5.6.1): *pos
 * walks the value; each call yields the next element with OWS trimmed, empty
 * elements included (callers skip them: "a recipient MUST ... ignore a
 * reasonable number of empty list elements").  false at the end. */
static bool list_next(struct gw_str v, size_t *pos, struct gw_str *elem)
{
	size_t start = *pos, end;
	const char *comma;

	if (start > v.n || v.p == NULL)
		return false;
	comma = memchr(v.p + start, ',', v.n - start);
	end = comma != NULL ? (size_t)(comma - v.p) : v.n;
	*elem = trim_ows(v.p + start, end - start);
	*pos = end + 1;          /* past the comma, or v.n + 1 at the end */
	return true;
}

/* ==== 2. authorities ======================================================= */

/* A reg-name host as we accept it: letters, digits, '-', '_' and '.', with
 * no empty label once one trailing dot is dropped.  RFC 3986 allows more
 * (sub-delims, percent-encoding) but no resolvable name needs them, and every
 * extra spelling is one more way for a name to slip past a policy rule. */
static int parse_reg_name(const char *p, size_t n, struct gw_authority *out)
{
	if (n > 0 && p[n - 1] == '.')
		n--;                           /* "example.com." is "example.com" */
	if (n == 0 || n > GW_HTTP_HOST_MAX || p[n - 1] == '.')
		return -EINVAL;        /* "a.b.." : an empty last label */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '.') {
			if (i == 0 || p[i - 1] == '.')
				return -EINVAL;        /* empty label */
		} else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
			     c == '-' || c == '_')) {
			return -EINVAL;
		}
		out->host[i] = (char)lower(c);
	}
	out->host[n] = '\0';
	out->ipv6 = false;
	return 0;
}

/* "[v6]" without its brackets: only hex digits, ':' and '.' (so no zone id
 * "%25eth0" and no IPvFuture "v1.x"), then inet_pton and back to RFC 5952
 * text, which inet_ntop writes in lower case. */
static int parse_ipv6(const char *p, size_t n, struct gw_authority *out)
{
	char tmp[INET6_ADDRSTRLEN];
	struct in6_addr a;

	if (n < 2 || n >= sizeof tmp)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (hex_value(c) < 0 && c != ':' && c != '.')
			return -EINVAL;
	}
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET6, tmp, &a) != 1)
		return -EINVAL;
	_Static_assert(sizeof out->host >= INET6_ADDRSTRLEN, "host holds any IPv6 text");
	if (inet_ntop(AF_INET6, &a, out->host, sizeof out->host) == NULL)
		return -EINVAL;
	out->ipv6 = true;
	return 0;
}

/* ":port" (p points at the ':'), 1..65535 in at most 5 digits. */
static int parse_port(const char *p, size_t n, uint16_t *port)
{
	unsigned v = 0;

	if (n < 2 || n > 6 || p[0] != ':')
		return -EINVAL;        /* "host:" (empty port) is refused, not defaulted */
	for (size_t i = 1; i < n; i++) {
		if (!is_digit((unsigned char)p[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int gw_authority_parse(struct gw_str s, uint16_t default_port, struct gw_authority *out)
{
	const char *rest;
	size_t rest_n;
	int r;

	if (s.p == NULL || s.n == 0 || out == NULL)
		return -EINVAL;
	if (memchr(s.p, '@', s.n) != NULL)
		return -EINVAL;        /* userinfo: credentials in a URI are refused */
	if (s.p[0] == '[') {
		const char *close = memchr(s.p, ']', s.n);

		if (close == NULL)
			return -EINVAL;
		if ((r = parse_ipv6(s.p + 1, (size_t)(close - s.p) - 1, out)) != 0)
			return r;
		rest = close + 1;
	} else {
		const char *colon = memchr(s.p, ':', s.n);
		size_t host_n = colon != NULL ? (size_t)(colon - s.p) : s.n;

		if ((r = parse_reg_name(s.p, host_n, out)) != 0)
			return r;
		rest = s.p + host_n;
	}
	rest_n = s.n - (size_t)(rest - s.p);
	if (rest_n == 0) {
		if (default_port == 0)
			return -EINVAL;    /* CONNECT: "port required" */
		out->port = default_port;
		return 0;
	}
	return parse_port(rest, rest_n, &out->port);
}

/* ==== 3. the head parser ==================================================== */

enum { HS_RUN, HS_DONE, HS_ERROR };                 /* gw_head.state */
enum { SC_LINE_START, SC_IN_LINE, SC_CR };          /* gw_head.scan */

#define HEAD_BUF_MIN  1024       /* first allocation: most heads fit */
#define HEAD_BUF_KEEP 4096       /* gw_head_reset frees buffers larger than this */

struct gw_head {
	enum gw_head_kind kind;
	int state;
	int err;                 /* -EBADMSG or -ENOMEM when state == HS_ERROR */
	int err_status;
	const char *err_reason;

	/* the scanner */
	int scan;
	bool started;            /* a byte of the start line was seen */
	bool in_start;           /* the current line is the start line */
	bool line_empty;         /* the CR being matched ended an empty line */
	size_t line_len;         /* bytes of the current line so far */
	size_t field_lines;

	/* the head's bytes: everything consumed, leading empty lines included */
	char *buf;
	size_t len, cap;

	/* responses: the request they answer */
	bool req_head, req_connect;

	struct gw_msg msg;
	struct gw_field fields[GW_HTTP_FIELDS_MAX];
};

struct gw_head *gw_head_new(enum gw_head_kind kind)
{
	struct gw_head *h;

	if (kind != GW_HEAD_PROXY_REQUEST && kind != GW_HEAD_TUNNEL_REQUEST &&
	    kind != GW_HEAD_RESPONSE)
		return NULL;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return NULL;
	h->kind = kind;
	gw_head_reset(h);
	return h;
}

void gw_head_free(struct gw_head *h)
{
	if (h == NULL)
		return;
	free(h->buf);
	free(h);
}

void gw_head_reset(struct gw_head *h)
{
	if (h->cap > HEAD_BUF_KEEP) {
		/* one large head must not pin 64 KiB to an idle connection */
		free(h->buf);
		h->buf = NULL;
		h->cap = 0;
	}
	h->len = 0;
	h->state = HS_RUN;
	h->err = 0;
	h->err_status = 0;
	h->err_reason = NULL;
	h->scan = SC_LINE_START;
	h->started = false;
	h->in_start = false;
	h->line_empty = false;
	h->line_len = 0;
	h->field_lines = 0;
	memset(&h->msg, 0, sizeof h->msg);
}

void gw_head_set_request(struct gw_head *h, struct gw_str method)
{
	/* Methods are case-sensitive (RFC 9110 §9.1): "head" is not HEAD. */
	h->req_head = method.p != NULL && method.n == 4 && memcmp(method.p, "HEAD", 4) == 0;
	h->req_connect = method.p != NULL && method.n == 7 && memcmp(method.p, "CONNECT", 7) == 0;
}

int gw_head_error(const struct gw_head *h, const char **reason)
{
	if (reason != NULL)
		*reason = h->state == HS_ERROR ? h->err_reason : NULL;
	return h->state == HS_ERROR ? h->err_status : 0;
}

const struct gw_msg *gw_head_msg(const struct gw_head *h)
{
	return h->state == HS_DONE ? &h->msg : NULL;
}

/* Refuse the message: status for a request, 502 for any response fault
 * (the upstream broke HTTP; the workload gets "bad gateway"). */
static int head_fail(struct gw_head *h, int status, const char *reason)
{
	h->state = HS_ERROR;
	h->err = -EBADMSG;
	h->err_status = h->kind == GW_HEAD_RESPONSE ? 502 : status;
	h->err_reason = reason;
	return -EBADMSG;
}

/* ---- 3a. the scanner ---- */

/* Look at one byte: 0 go on, 1 it ended the head, < 0 refused.  consumed
 * is the head's length including this byte. */
static int scan_byte(struct gw_head *h, unsigned char c, size_t consumed)
{
	bool req = h->kind != GW_HEAD_RESPONSE;

	if (consumed > GW_HTTP_HEAD_MAX)
		return head_fail(h, 431, req ? "request head too large" : "response head too large");
	if (h->scan == SC_CR) {
		if (c != '\n')
			return head_fail(h, 400, "bare CR in head");
		h->scan = SC_LINE_START;
		if (h->line_empty) {
			/* An empty line: before the start line it is skipped
			 * (RFC 9112 §2.2), after it it ends the head. */
			return h->started ? 1 : 0;
		}
		h->in_start = false;
		h->line_len = 0;
		return 0;
	}
	if (c == '\r') {
		h->line_empty = h->scan == SC_LINE_START;
		h->scan = SC_CR;
		return 0;
	}
	if (c == '\n')
		return head_fail(h, 400, "bare LF in head");
	if (c == '\0')
		return head_fail(h, 400, "NUL in head");
	if ((c < 0x20 && c != '\t') || c == 0x7f)
		return head_fail(h, 400, "control character in head");
	if (h->scan == SC_LINE_START) {
		if (!h->started) {
			h->started = true;
			h->in_start = true;
		} else {
			/* A field line starting with whitespace is obs-fold, or
			 * whitespace before the first field (RFC 9112 §2.2, §5.2):
			 * both refused, never joined. */
			if (c == ' ' || c == '\t')
				return head_fail(h, 400, "obs-fold or leading whitespace in field line");
			if (++h->field_lines > GW_HTTP_FIELDS_MAX)
				return head_fail(h, 431, "too many header fields");
		}
		h->scan = SC_IN_LINE;
	}
	if (h->in_start && ++h->line_len > GW_HTTP_LINE_MAX)
		return head_fail(h, 414, req ? "request line too long" : "status line too long");
	return 0;
}

/* Append p[0, n) to the head buffer; the scanner has kept len + n within
 * GW_HTTP_HEAD_MAX. */
static int head_append(struct gw_head *h, const unsigned char *p, size_t n)
{
	size_t need = h->len + n, cap;
	char *b;

	if (n == 0)
		return 0;
	if (need > h->cap) {
		for (cap = h->cap ? h->cap : HEAD_BUF_MIN; cap < need; )
			cap = cap > GW_HTTP_HEAD_MAX / 2 ? GW_HTTP_HEAD_MAX : cap * 2;
		if ((b = realloc(h->buf, cap)) == NULL) {
			h->state = HS_ERROR;
			h->err = -ENOMEM;
			h->err_status = 500;
			h->err_reason = "out of memory";
			return -ENOMEM;
		}
		h->buf = b;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, p, n);
	h->len = need;
	return 0;
}

static int parse_head(struct gw_head *h);

int gw_head_feed(struct gw_head *h, const void *vp, size_t n, size_t *used)
{
	const unsigned char *p = vp;
	bool complete = false;
	size_t i;
	int r;

	*used = 0;
	if (h->state == HS_DONE)
		return 1;
	if (h->state == HS_ERROR)
		return h->err;
	for (i = 0; i < n; i++) {
		r = scan_byte(h, p[i], h->len + i + 1);
		if (r < 0) {
			*used = i;
			return r;
		}
		if (r == 1) {
			complete = true;
			i++;           /* the LF that ended the head is part of it */
			break;
		}
	}
	if ((r = head_append(h, p, i)) != 0)
		return r;
	*used = i;
	if (!complete)
		return 0;
	if ((r = parse_head(h)) != 0)
		return r;
	h->state = HS_DONE;
	return 1;
}

/* ---- 3b. the parse of a complete head ----
 * From here on the buffer is known to hold: optional empty lines, the start
 * line, field lines, the empty line; every line ends in CRLF; no byte is NUL,
 * CR or LF inside a line, or a control character other than HTAB. */

/* "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3; case-sensitive): 10 or 11, 0 for
 * another well-formed version, -1 when malformed. */
static int parse_version(const char *p, size_t n)
{
	if (n != 8 || memcmp(p, "HTTP/", 5) != 0 || !is_digit((unsigned char)p[5]) || p[6] != '.' ||
	    !is_digit((unsigned char)p[7]))
		return -1;
	if (p[5] == '1' && (p[7] == '0' || p[7] == '1'))
		return p[7] == '0' ? 10 : 11;
	return 0;
}

static int parse_field_line(struct gw_head *h, const char *p, size_t n, struct gw_field *f)
{
	const char *colon = memchr(p, ':', n);
	size_t nn;

	if (colon == NULL)
		return head_fail(h, 400, "field line without a colon");
	nn = (size_t)(colon - p);
	if (nn == 0)
		return head_fail(h, 400, "empty field name");
	/* "Name : v" is refused (RFC 9112 §5.1): parsers that strip the
	 * space and parsers that keep it see different fields. */
	if (is_ows((unsigned char)p[nn - 1]))
		return head_fail(h, 400, "whitespace before colon in field line");
	if (!is_token(p, nn))
		return head_fail(h, 400, "invalid character in field name");
	f->name = (struct gw_str){ p, nn };
	f->value = trim_ows(colon + 1, n - nn - 1);
	return 0;
}

/* Path, query and fragment of an origin-form target or of what follows the
 * authority of an absolute-form one.  The fragment is dropped. */
static void split_path_query(struct gw_target *t, const char *p, size_t n)
{
	const char *hash = memchr(p, '#', n), *q;

	if (hash != NULL)
		n = (size_t)(hash - p);
	q = memchr(p, '?', n);
	t->path = (struct gw_str){ p, q != NULL ? (size_t)(q - p) : n };
	t->query = q != NULL ? (struct gw_str){ q + 1, n - (size_t)(q + 1 - p) }
			     : (struct gw_str){ NULL, 0 };
	if (t->path.n == 0)
		t->path = GW_STR("/");     /* "http://host?x": the path of an empty URI path */
}

/* The Host field of a request (RFC 9112 §3.2): at most one, valid when
 * present; in a tunnel exactly one, and it names the origin (default 443). */
static int parse_host_field(struct gw_head *h)
{
	struct gw_msg *m = &h->msg;
	struct gw_authority scratch;
	const struct gw_field *f;
	bool tunnel = h->kind == GW_HEAD_TUNNEL_REQUEST;

	if (gw_msg_count(m, "host") > 1)
		return head_fail(h, 400, "more than one Host field");
	f = gw_msg_field(m, "host", 0);
	if (f == NULL)
		return tunnel ? head_fail(h, 400, "missing Host field") : 0;
	if (gw_authority_parse(f->value, 443, tunnel ? &m->target.auth : &scratch) != 0)
		return head_fail(h, 400, "invalid Host field");
	return 0;
}

static bool method_is(const struct gw_msg *m, const char *name)
{
	return m->method.n == strlen(name) && memcmp(m->method.p, name, m->method.n) == 0;
}

/* The request-target's form, checked against where the request arrived
 * (Box: absolute-form http:// or CONNECT on the listener, origin-form or
 * OPTIONS * inside a tunnel; everything else 400). */
static int parse_target(struct gw_head *h, struct gw_str t)
{
	struct gw_msg *m = &h->msg;
	struct gw_target *tg = &m->target;
	bool tunnel = h->kind == GW_HEAD_TUNNEL_REQUEST;
	size_t i, a, e;

	if (method_is(m, "CONNECT")) {
		if (tunnel)
			return head_fail(h, 400, "CONNECT inside a tunnel");
		if (gw_authority_parse(t, 0, &tg->auth) != 0)
			return head_fail(h, 400, "invalid CONNECT target (host:port expected)");
		tg->form = GW_FORM_AUTHORITY;
		return 0;
	}
	if (t.n == 1 && t.p[0] == '*') {
		if (!method_is(m, "OPTIONS"))
			return head_fail(h, 400, "'*' target without OPTIONS");
		if (!tunnel)
			return head_fail(h, 400, "'*' target on the proxy listener");
		tg->form = GW_FORM_ASTERISK;
		tg->path = GW_STR("*");
		return 0;
	}
	if (t.p[0] == '/') {
		if (!tunnel)
			return head_fail(h, 400, "origin-form target on the proxy listener "
					 "(absolute-form http:// or CONNECT expected)");
		tg->form = GW_FORM_ORIGIN;
		split_path_query(tg, t.p, t.n);
		return 0;
	}
	if (tunnel)
		return head_fail(h, 400, "absolute-form target inside a tunnel");
	/* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" "//" */
	for (i = 0; i < t.n; i++) {
		unsigned char c = (unsigned char)t.p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (i > 0 && (is_digit(c) || c == '+' || c == '-' || c == '.'))))
			break;
	}
	if (i == 0 || t.n - i < 3 || memcmp(t.p + i, "://", 3) != 0)
		return head_fail(h, 400, "invalid request target");
	if (eq_ci(t.p, i, "https", 5))
		return head_fail(h, 400, "https:// absolute-form refused (use CONNECT)");
	if (!eq_ci(t.p, i, "http", 4))
		return head_fail(h, 400, "unsupported URI scheme in request target");
	a = i + 3;
	for (e = a; e < t.n && t.p[e] != '/' && t.p[e] != '?' && t.p[e] != '#'; e++)
		;
	if (memchr(t.p + a, '@', e - a) != NULL)
		return head_fail(h, 400, "userinfo in request target");
	if (gw_authority_parse((struct gw_str){ t.p + a, e - a }, 80, &tg->auth) != 0)
		return head_fail(h, 400, "invalid host or port in request target");
	tg->form = GW_FORM_ABSOLUTE;
	split_path_query(tg, t.p + e, t.n - e);
	return 0;
}

static int parse_request_line(struct gw_head *h, const char *p, size_t n)
{
	struct gw_msg *m = &h->msg;
	const char *end = p + n, *sp1, *sp2;
	struct gw_str t;
	int v;

	sp1 = memchr(p, ' ', n);
	sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
	if (sp2 == NULL)
		return head_fail(h, 400, "malformed request line");
	m->method = (struct gw_str){ p, (size_t)(sp1 - p) };
	t = (struct gw_str){ sp1 + 1, (size_t)(sp2 - sp1 - 1) };
	if (!is_token(m->method.p, m->method.n))
		return head_fail(h, 400, "invalid method");
	v = parse_version(sp2 + 1, (size_t)(end - sp2 - 1));
	if (v < 0)
		return head_fail(h, 400, "malformed HTTP version");
	if (v == 0)
		return head_fail(h, 505, "HTTP version not supported");
	m->version = v;
	if (t.n == 0)
		return head_fail(h, 400, "empty request target");
	for (size_t i = 0; i < t.n; i++) {
		unsigned char c = (unsigned char)t.p[i];

		/* Bytes >= 0x80 are tolerated here (paths, queries; the
		 * canonical path escapes them); hosts refuse them. */
		if (c <= 0x20 || c == 0x7f)
			return head_fail(h, 400, "invalid character in request target");
	}
	m->target_raw = t;
	return 0;
}

static int parse_status_line(struct gw_head *h, const char *p, size_t n)
{
	struct gw_msg *m = &h->msg;
	int v;

	/* HTTP-version SP 3DIGIT SP [ reason ]; the second SP may be missing
	 * (RFC 9112 §4: recipients SHOULD accept that). */
	if (n < 12 || p[8] != ' ' || !is_digit((unsigned char)p[9]) ||
	    !is_digit((unsigned char)p[10]) || !is_digit((unsigned char)p[11]) ||
	    (n > 12 && p[12] != ' '))
		return head_fail(h, 502, "malformed status line");
	v = parse_version(p, 8);
	if (v <= 0)
		return head_fail(h, 502, "unsupported HTTP version in response");
	m->version = v;
	m->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (m->status < 100 || m->status > 599)
		return head_fail(h, 502, "invalid status code");
	m->reason = n > 12 ? (struct gw_str){ p + 13, n - 13 } : (struct gw_str){ p + n, 0 };
	return 0;
}

/* Content-Length (RFC 9112 §6.3 item 5): 1*DIGIT; several fields, or a
 * list in one, are accepted only when every value is the same.  Values are
 * capped at INT64_MAX (policy's body_bytes is a Long). */
enum { CL_OK, CL_INVALID, CL_DIFFERING };

static int parse_content_length(const struct gw_msg *m, uint64_t *out)
{
	bool seen = false;
	uint64_t first = 0;

	for (size_t k = 0; k < m->nfields; k++) {
		struct gw_str e;
		size_t pos = 0;

		if (!eq_ci(m->fields[k].name.p, m->fields[k].name.n, "content-length", 14))
			continue;
		while (list_next(m->fields[k].value, &pos, &e)) {
			uint64_t v = 0;

			if (e.n == 0)
				return CL_INVALID;
			for (size_t i = 0; i < e.n; i++) {
				unsigned d = (unsigned char)e.p[i] - (unsigned)'0';

				if (d > 9 || v > ((uint64_t)INT64_MAX - d) / 10)
					return CL_INVALID;
				v = v * 10 + d;
			}
			if (seen && v != first)
				return CL_DIFFERING;
			seen = true;
			first = v;
		}
	}
	*out = first;
	return CL_OK;
}

/* Transfer-Encoding, all fields as one list (RFC 9112 §6.1). */
enum { TE_CHUNKED, TE_OTHER_CODINGS, TE_NOT_FINAL, TE_TWICE, TE_EMPTY, TE_INVALID };

static int parse_transfer_encoding(const struct gw_msg *m)
{
	bool seen_chunked = false, last_chunked = false, others = false;
	size_t count = 0;

	for (size_t k = 0; k < m->nfields; k++) {
		struct gw_str e;
		size_t pos = 0;

		if (!eq_ci(m->fields[k].name.p, m->fields[k].name.n, "transfer-encoding", 17))
			continue;
		while (list_next(m->fields[k].value, &pos, &e)) {
			const char *semi;
			struct gw_str name;

			if (e.n == 0)
				continue;
			semi = memchr(e.p, ';', e.n);
			name = semi != NULL ? trim_ows(e.p, (size_t)(semi - e.p)) : e;
			if (!is_token(name.p, name.n))
				return TE_INVALID;
			/* "chunked;x" is not chunked: chunked takes no parameters */
			last_chunked = semi == NULL && eq_ci(e.p, e.n, "chunked", 7);
			if (last_chunked) {
				if (seen_chunked)
					return TE_TWICE;
				seen_chunked = true;
			} else {
				others = true;
			}
			count++;
		}
	}
	if (count == 0)
		return TE_EMPTY;
	if (!last_chunked)
		return TE_NOT_FINAL;
	return others ? TE_OTHER_CODINGS : TE_CHUNKED;
}

/* The body's framing (RFC 9112 §6.3), with Box's refusals: CL+TE, multiple
 * differing CL, any coding but chunked. */
static int parse_framing(struct gw_head *h)
{
	struct gw_msg *m = &h->msg;
	bool resp = m->response;
	size_t n_te = gw_msg_count(m, "transfer-encoding"), n_cl = gw_msg_count(m, "content-length");
	uint64_t cl = 0;

	if (n_te > 0 && n_cl > 0)
		return head_fail(h, 400, "Content-Length with Transfer-Encoding");
	if (n_te > 0) {
		/* RFC 9112 §6.1: TE in HTTP/1.0 means faulty framing */
		if (m->version == 10)
			return head_fail(h, 400, "Transfer-Encoding in an HTTP/1.0 message");
		switch (parse_transfer_encoding(m)) {
		case TE_CHUNKED:
			break;
		case TE_OTHER_CODINGS:
			/* a request we cannot decode: 501 (RFC 9112 §6.1); a
			 * response we could not re-frame for the workload */
			return head_fail(h, 501, "unsupported transfer coding");
		case TE_NOT_FINAL:
			return head_fail(h, 400, "chunked is not the final transfer coding");
		case TE_TWICE:
			return head_fail(h, 400, "chunked applied more than once");
		case TE_EMPTY:
			return head_fail(h, 400, "empty Transfer-Encoding");
		default:
			return head_fail(h, 400, "invalid Transfer-Encoding");
		}
		m->body = GW_BODY_CHUNKED;
	} else if (n_cl > 0) {
		switch (parse_content_length(m, &cl)) {
		case CL_OK:
			break;
		case CL_DIFFERING:
			return head_fail(h, 400, "differing Content-Length values");
		default:
			return head_fail(h, 400, "invalid Content-Length");
		}
		m->body = GW_BODY_LENGTH;
		m->content_length = cl;
	} else {
		m->body = resp ? GW_BODY_CLOSE : GW_BODY_NONE;
	}

	if (!resp) {
		/* After CONNECT the bytes are the tunnel's: a body would be
		 * read as tunnel data by one side and as body by the other. */
		if (method_is(m, "CONNECT")) {
			if (m->body == GW_BODY_CHUNKED || (m->body == GW_BODY_LENGTH && cl > 0))
				return head_fail(h, 400, "body on a CONNECT request");
			m->body = GW_BODY_NONE;
		}
		return 0;
	}
	/* Responses: the status and the request decide first (§6.3 items 1, 2). */
	if (m->status == 101) {
		m->body = GW_BODY_TUNNEL;
	} else if (m->status < 200) {
		m->body = GW_BODY_NONE;
		m->interim = true;
	} else if (h->req_connect && m->status < 300) {
		m->body = GW_BODY_TUNNEL;
	} else if (h->req_head || m->status == 204 || m->status == 304) {
		m->body = GW_BODY_NONE;
	}
	if (m->body != GW_BODY_LENGTH)
		m->content_length = 0;
	return 0;
}

/* Connection, Upgrade and Expect. */
static int parse_connection(struct gw_head *h)
{
	struct gw_msg *m = &h->msg;
	bool ws = false, expect_continue = false, expect_other = false;

	for (size_t k = 0; k < m->nfields; k++) {
		const struct gw_field *f = &m->fields[k];
		struct gw_str e;
		size_t pos = 0;

		if (eq_ci(f->name.p, f->name.n, "connection", 10)) {
			while (list_next(f->value, &pos, &e)) {
				if (e.n == 0)
					continue;
				if (!is_token(e.p, e.n))
					return head_fail(h, 400, "invalid Connection field");
				if (str_eq_ci(e, "close"))
					m->conn_close = true;
				else if (str_eq_ci(e, "keep-alive"))
					m->conn_keep_alive = true;
				else if (str_eq_ci(e, "upgrade"))
					m->conn_upgrade = true;
			}
		} else if (eq_ci(f->name.p, f->name.n, "upgrade", 7)) {
			/* protocol [ "/" version ] */
			while (list_next(f->value, &pos, &e)) {
				const char *slash = memchr(e.p, '/', e.n);
				size_t pn = slash != NULL ? (size_t)(slash - e.p) : e.n;

				if (eq_ci(e.p, pn, "websocket", 9))
					ws = true;
			}
		} else if (!m->response && eq_ci(f->name.p, f->name.n, "expect", 6)) {
			while (list_next(f->value, &pos, &e)) {
				if (e.n == 0)
					continue;
				if (str_eq_ci(e, "100-continue"))
					expect_continue = true;
				else
					expect_other = true;
			}
		}
	}
	/* RFC 9110 §10.1.1: a server MUST ignore 100-continue from HTTP/1.0;
	 * Upgrade is HTTP/1.1 only (RFC 9110 §7.8). */
	if (m->version == 11) {
		m->expect = expect_other ? GW_EXPECT_OTHER
			  : expect_continue ? GW_EXPECT_CONTINUE : GW_EXPECT_NONE;
		m->upgrade_websocket = ws && m->conn_upgrade;
	}
	if (m->version == 11)
		m->keep_alive = !m->conn_close;
	else
		m->keep_alive = m->conn_keep_alive && !m->conn_close;
	if (!m->response && method_is(m, "CONNECT"))
		m->keep_alive = false;       /* a tunnel or a refusal follows */
	if (m->response && (m->body == GW_BODY_CLOSE || m->body == GW_BODY_TUNNEL))
		m->keep_alive = false;
	return 0;
}

static int parse_head(struct gw_head *h)
{
	struct gw_msg *m = &h->msg;
	const char *p = h->buf, *end = h->buf + h->len, *eol;
	const char *start;
	size_t start_n, nf = 0;
	int r;

	memset(m, 0, sizeof *m);
	m->response = h->kind == GW_HEAD_RESPONSE;
	m->head_len = h->len;
	while (p[0] == '\r')
		p += 2;                       /* leading empty lines */
	eol = memchr(p, '\r', (size_t)(end - p));
	start = p;
	start_n = (size_t)(eol - p);
	r = m->response ? parse_status_line(h, start, start_n)
			: parse_request_line(h, start, start_n);
	if (r != 0)
		return r;
	for (p = eol + 2; p[0] != '\r'; p = eol + 2) {
		eol = memchr(p, '\r', (size_t)(end - p));
		/* nf < GW_HTTP_FIELDS_MAX: the scanner counted the lines */
		if ((r = parse_field_line(h, p, (size_t)(eol - p), &h->fields[nf])) != 0)
			return r;
		nf++;
	}
	m->fields = h->fields;
	m->nfields = nf;
	if (!m->response) {
		if ((r = parse_host_field(h)) != 0)
			return r;
		if ((r = parse_target(h, m->target_raw)) != 0)
			return r;
	}
	if ((r = parse_framing(h)) != 0)
		return r;
	return parse_connection(h);
}

/* ==== 4. questions about a parsed head ===================================== */

const struct gw_field *gw_msg_field(const struct gw_msg *m, const char *name, size_t nth)
{
	size_t n = strlen(name);

	for (size_t k = 0; k < m->nfields; k++)
		if (eq_ci(m->fields[k].name.p, m->fields[k].name.n, name, n) && nth-- == 0)
			return &m->fields[k];
	return NULL;
}

size_t gw_msg_count(const struct gw_msg *m, const char *name)
{
	size_t n = strlen(name), count = 0;

	for (size_t k = 0; k < m->nfields; k++)
		count += eq_ci(m->fields[k].name.p, m->fields[k].name.n, name, n);
	return count;
}

bool gw_msg_keep_alive(const struct gw_msg *m)
{
	return m->keep_alive;
}

/* RFC 9110 §7.6.1 plus the legacy and proxy fields Box strips. */
static const char *const hop_by_hop[] = {
	"connection", "proxy-connection", "proxy-authorization", "proxy-authenticate",
	"keep-alive", "te", "transfer-encoding", "upgrade", "trailer",
};

bool gw_msg_is_hop_by_hop(const struct gw_msg *m, struct gw_str name)
{
	if (name.p == NULL)
		return false;
	for (size_t i = 0; i < sizeof hop_by_hop / sizeof hop_by_hop[0]; i++)
		if (str_eq_ci(name, hop_by_hop[i]))
			return true;
	/* Connection may not nominate the fields that frame and route the
	 * message: a proxy that dropped "Content-Length" and then forwarded
	 * the body would hand upstream a body it reads as the next request. */
	if (m == NULL || str_eq_ci(name, "content-length") || str_eq_ci(name, "host"))
		return false;
	for (size_t k = 0; k < m->nfields; k++) {
		struct gw_str e;
		size_t pos = 0;

		if (!eq_ci(m->fields[k].name.p, m->fields[k].name.n, "connection", 10))
			continue;
		while (list_next(m->fields[k].value, &pos, &e))
			if (e.n > 0 && eq_ci(e.p, e.n, name.p, name.n))
				return true;
	}
	return false;
}

/* ==== 5. the chunked decoder ============================================== */

enum {
	CK_SIZE,               /* hex digits */
	CK_SIZE_BWS,           /* BWS after the size or a value: only ';' may follow */
	CK_EXT_NAME_BWS,       /* after ';' */
	CK_EXT_NAME,
	CK_EXT_NAME_END,       /* BWS after a name: '=' or ';' */
	CK_EXT_VAL_BWS,        /* after '=' */
	CK_EXT_TOKEN,
	CK_EXT_QUOTED,
	CK_EXT_QUOTED_ESC,
	CK_EXT_QUOTED_END,
	CK_SIZE_LF,            /* CR of the size line seen */
	CK_DATA,
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TRAILER_START,      /* start of a trailer line (or the final CRLF) */
	CK_TRAILER_NAME,
	CK_TRAILER_VALUE,
	CK_TRAILER_LF,
	CK_END_LF,
	CK_DONE,
	CK_ERROR,
};

void gw_chunked_init(struct gw_chunked *c, bool response)
{
	memset(c, 0, sizeof *c);
	c->state = CK_SIZE;
	c->err_status = response ? 502 : 400;
}

int gw_chunked_error(const struct gw_chunked *c, const char **reason)
{
	if (reason != NULL)
		*reason = c->state == CK_ERROR ? c->reason : NULL;
	return c->state == CK_ERROR ? c->err_status : 0;
}

static int ck_fail(struct gw_chunked *c, const char *reason)
{
	c->state = CK_ERROR;
	c->reason = reason;
	return -EBADMSG;
}

/* qdtext / quoted-pair octets (RFC 9110 §5.6.4) */
static bool is_qdtext(unsigned char c)
{
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
	       (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

static bool is_field_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* One metadata byte of the size line (extensions included). */
static int ck_size_line(struct gw_chunked *c, unsigned char b)
{
	int d;

	if (b == '\r') {
		switch (c->state) {
		case CK_SIZE:
			if (!c->size_digits)
				return ck_fail(c, "missing chunk size");
			break;
		case CK_EXT_NAME:
		case CK_EXT_TOKEN:
		case CK_EXT_QUOTED_END:
			break;
		case CK_EXT_QUOTED:
			return ck_fail(c, "CR in quoted chunk extension");
		default:
			/* "5 \r\n", "5;\r\n", "5;a=\r\n": BWS only before ';' */
			return ck_fail(c, "malformed chunk extension");
		}
		c->state = CK_SIZE_LF;
		return 0;
	}
	if (++c->line_len > GW_CHUNK_LINE_MAX)
		return ck_fail(c, "chunk size line too long");
	if (c->state != CK_SIZE && ++c->ext_bytes > GW_CHUNK_META_MAX)
		return ck_fail(c, "chunk extensions too large");
	switch (c->state) {
	case CK_SIZE:
		if ((d = hex_value(b)) >= 0) {
			/* chunk sizes are capped at INT64_MAX: no overflow, and
			 * body_bytes stays a Long */
			if (c->remaining > ((uint64_t)INT64_MAX - (uint64_t)d) / 16)
				return ck_fail(c, "chunk size too large");
			c->remaining = c->remaining * 16 + (uint64_t)d;
			c->size_digits = true;
			return 0;
		}
		if (!c->size_digits)
			return ck_fail(c, "missing chunk size");
		if (is_ows(b))
			c->state = CK_SIZE_BWS;
		else if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else
			return ck_fail(c, "invalid character in chunk size");
		return 0;
	case CK_SIZE_BWS:
		if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else if (!is_ows(b))
			return ck_fail(c, "malformed chunk extension");
		return 0;
	case CK_EXT_NAME_BWS:
		if (is_tchar(b))
			c->state = CK_EXT_NAME;
		else if (!is_ows(b))
			return ck_fail(c, "invalid chunk extension name");
		return 0;
	case CK_EXT_NAME:
		if (b == '=')
			c->state = CK_EXT_VAL_BWS;
		else if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else if (is_ows(b))
			c->state = CK_EXT_NAME_END;
		else if (!is_tchar(b))
			return ck_fail(c, "invalid chunk extension name");
		return 0;
	case CK_EXT_NAME_END:
		if (b == '=')
			c->state = CK_EXT_VAL_BWS;
		else if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else if (!is_ows(b))
			return ck_fail(c, "malformed chunk extension");
		return 0;
	case CK_EXT_VAL_BWS:
		if (b == '"')
			c->state = CK_EXT_QUOTED;
		else if (is_tchar(b))
			c->state = CK_EXT_TOKEN;
		else if (!is_ows(b))
			return ck_fail(c, "invalid chunk extension value");
		return 0;
	case CK_EXT_TOKEN:
		if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else if (is_ows(b))
			c->state = CK_SIZE_BWS;
		else if (!is_tchar(b))
			return ck_fail(c, "invalid chunk extension value");
		return 0;
	case CK_EXT_QUOTED:
		if (b == '"')
			c->state = CK_EXT_QUOTED_END;
		else if (b == '\\')
			c->state = CK_EXT_QUOTED_ESC;
		else if (!is_qdtext(b))
			return ck_fail(c, "invalid character in quoted chunk extension");
		return 0;
	case CK_EXT_QUOTED_ESC:
		if (!is_field_vchar(b))
			return ck_fail(c, "invalid character in quoted chunk extension");
		c->state = CK_EXT_QUOTED;
		return 0;
	case CK_EXT_QUOTED_END:
		if (b == ';')
			c->state = CK_EXT_NAME_BWS;
		else if (is_ows(b))
			c->state = CK_SIZE_BWS;
		else
			return ck_fail(c, "malformed chunk extension");
		return 0;
	default:
		return ck_fail(c, "internal: bad chunk state");
	}
}

/* One byte of the trailer section. */
static int ck_trailer(struct gw_chunked *c, unsigned char b)
{
	if (++c->trailer_bytes > GW_CHUNK_META_MAX)
		return ck_fail(c, "trailer section too large");
	switch (c->state) {
	case CK_TRAILER_START:
		if (b == '\r') {
			c->state = CK_END_LF;
		} else if (is_tchar(b)) {
			if (++c->trailer_fields > GW_HTTP_FIELDS_MAX)
				return ck_fail(c, "too many trailer fields");
			c->state = CK_TRAILER_NAME;
		} else if (is_ows(b)) {
			return ck_fail(c, "obs-fold in trailer section");
		} else {
			return ck_fail(c, "invalid trailer field name");
		}
		return 0;
	case CK_TRAILER_NAME:
		if (b == ':')
			c->state = CK_TRAILER_VALUE;
		else if (is_ows(b))
			return ck_fail(c, "whitespace before colon in trailer field");
		else if (!is_tchar(b))
			return ck_fail(c, "invalid trailer field name");
		return 0;
	case CK_TRAILER_VALUE:
		if (b == '\r')
			c->state = CK_TRAILER_LF;
		else if (!is_field_vchar(b))
			return ck_fail(c, "invalid character in trailer field");
		return 0;
	case CK_TRAILER_LF:
	case CK_END_LF:
		if (b != '\n')
			return ck_fail(c, "bare CR in trailer section");
		c->state = c->state == CK_END_LF ? CK_DONE : CK_TRAILER_START;
		return 0;
	default:
		return ck_fail(c, "internal: bad chunk state");
	}
}

int gw_chunked_feed(struct gw_chunked *c, const void *vin, size_t n, size_t *used,
		    void *vout, size_t cap, size_t *produced)
{
	const unsigned char *in = vin;
	unsigned char *out = vout;
	size_t i = 0, o = 0;
	int r = 0;

	while (i < n && r == 0 && c->state != CK_DONE && c->state != CK_ERROR) {
		unsigned char b = in[i];

		switch (c->state) {
		case CK_SIZE_LF:
			if (b != '\n') {
				r = ck_fail(c, "bare CR in chunk size line");
				break;
			}
			c->state = c->remaining == 0 ? CK_TRAILER_START : CK_DATA;
			c->line_len = 0;
			c->size_digits = false;
			i++;
			break;
		case CK_DATA: {
			size_t k = n - i;

			if (k > c->remaining)
				k = (size_t)c->remaining;
			if (k > cap - o)
				k = cap - o;
			if (k == 0)
				goto out;           /* out is full */
			/* out may be in: o <= i, and memmove copes with overlap */
			memmove(out + o, in + i, k);
			i += k, o += k;
			c->remaining -= k;
			if (__builtin_add_overflow(c->body_bytes, (uint64_t)k, &c->body_bytes)) {
				r = ck_fail(c, "body too large");
				break;
			}
			if (c->remaining == 0)
				c->state = CK_DATA_CR;
			break;
		}
		case CK_DATA_CR:
			if (b != '\r')
				r = ck_fail(c, "missing CRLF after chunk data");
			else
				c->state = CK_DATA_LF, i++;
			break;
		case CK_DATA_LF:
			if (b != '\n')
				r = ck_fail(c, "missing CRLF after chunk data");
			else
				c->state = CK_SIZE, i++;
			break;
		case CK_TRAILER_START:
		case CK_TRAILER_NAME:
		case CK_TRAILER_VALUE:
		case CK_TRAILER_LF:
		case CK_END_LF:
			if ((r = ck_trailer(c, b)) == 0)
				i++;
			break;
		default:
			if ((r = ck_size_line(c, b)) == 0)
				i++;
			break;
		}
	}
out:
	*used = i;
	*produced = o;
	if (c->state == CK_ERROR)
		return -EBADMSG;
	return c->state == CK_DONE ? 1 : 0;
}

size_t gw_chunk_size_line(char out[GW_CHUNK_SIZE_LINE], uint64_t size)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = hex[size & 0xf];
		size >>= 4;
	} while (size != 0);
	while (n > 0)
		out[k++] = tmp[--n];
	out[k++] = '\r';
	out[k++] = '\n';
	out[k] = '\0';
	return k;
}

/* ==== 6. the policy path ================================================== */

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

/* Kept raw in a path: unreserved, sub-delims, ':' '@' (pchar) and '/'. */
static bool is_path_raw(unsigned char c)
{
	return is_unreserved(c) || (c != '\0' && strchr("!$&'()*+,;=:@/", c) != NULL);
}

int gw_path_canonical(struct gw_str path, char *out, size_t cap, size_t *len)
{
	static const char HEX[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)path.p;
	size_t n = path.p != NULL ? path.n : 0, i = 0, o = 0, seg;

	if (out == NULL || len == NULL)
		return -EINVAL;
	if (n == 0 || (n == 1 && p[0] == '*')) {
		const char *s = n == 0 ? "/" : "*";

		if (cap < 2)
			return -ENOSPC;
		memcpy(out, s, 2);
		*len = 1;
		return 0;
	}
	if (p[0] != '/')
		return -EINVAL;
	/* One segment per round: write "/" and the segment's canonical bytes,
	 * then, if it reads "." or "..", take it back (and for ".." the
	 * segment before it) -- RFC 3986 §5.2.4 on an absolute path.  A dot
	 * segment that ends the path leaves a trailing '/'. */
	bool trailing = false;

	while (i < n) {
		i++;                                /* the '/' */
		if (o + 1 > cap)
			return -ENOSPC;
		out[o++] = '/';
		seg = o;
		while (i < n && p[i] != '/') {
			unsigned char c = p[i];
			int hi, lo;

			if (c == '%') {
				if (n - i < 3 || (hi = hex_value(p[i + 1])) < 0 ||
				    (lo = hex_value(p[i + 2])) < 0)
					return -EINVAL;     /* invalid escape */
				c = (unsigned char)(hi * 16 + lo);
				if (c == '\0')
					return -EINVAL;     /* encoded NUL */
				i += 3;
				if (is_unreserved(c)) {
					if (o + 1 > cap)
						return -ENOSPC;
					out[o++] = (char)c;
					continue;
				}
			} else {
				if (c == '\0')
					return -EINVAL;
				i++;
				if (is_path_raw(c)) {
					if (o + 1 > cap)
						return -ENOSPC;
					out[o++] = (char)c;
					continue;
				}
			}
			if (cap - o < 3)
				return -ENOSPC;
			out[o++] = '%';
			out[o++] = HEX[c >> 4];
			out[o++] = HEX[c & 0xf];
		}
		trailing = false;
		if (o - seg == 1 && out[seg] == '.') {
			o = seg - 1;                /* "/." */
			trailing = true;
		} else if (o - seg == 2 && out[seg] == '.' && out[seg + 1] == '.') {
			o = seg - 1;                /* "/.." and the segment before */
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			trailing = true;
		}
	}
	if (trailing || o == 0) {
		if (o + 1 > cap)
			return -ENOSPC;
		out[o++] = '/';
	}
	if (o + 1 > cap)
		return -ENOSPC;
	out[o] = '\0';
	*len = o;
	return 0;
}

/* ==== 7. the head writer ================================================== */

void gw_writer_init(struct gw_writer *w, char *buf, size_t cap)
{
	w->buf = buf;
	w->cap = buf != NULL ? cap : 0;
	w->len = 0;
	w->err = 0;
	w->lines = 0;
}

static bool w_ok_target(struct gw_str s, bool may_be_empty)
{
	if (s.p == NULL)
		return may_be_empty;
	if (s.n == 0)
		return may_be_empty;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];

		if (c <= 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

/* Field values and reason phrases: HTAB, SP, VCHAR, obs-text; never CR or
 * LF, which would let a peer's bytes start a line of their own. */
static bool w_ok_text(struct gw_str s)
{
	for (size_t i = 0; i < s.n; i++)
		if (!is_field_vchar((unsigned char)s.p[i]))
			return false;
	return true;
}

/* Room for n more bytes, or the sticky -ENOSPC. */
static bool w_room(struct gw_writer *w, size_t n)
{
	if (w->err != 0)
		return false;
	if (n > w->cap - w->len) {
		w->err = -ENOSPC;
		return false;
	}
	return true;
}

static void w_put(struct gw_writer *w, const void *p, size_t n)
{
	if (n > 0)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static bool w_invalid(struct gw_writer *w)
{
	if (w->err == 0)
		w->err = -EINVAL;
	return false;
}

void gw_writer_request_line(struct gw_writer *w, struct gw_str method, struct gw_str path,
			    struct gw_str query)
{
	size_t need;

	if (w->err != 0)
		return;
	if (method.p == NULL || !is_token(method.p, method.n) || !w_ok_target(path, false) ||
	    (query.p != NULL && !w_ok_target(query, true)) ||
	    (query.p != NULL && memchr(query.p, '#', query.n) != NULL) ||
	    memchr(path.p, '?', path.n) != NULL || memchr(path.p, '#', path.n) != NULL) {
		w_invalid(w);
		return;
	}
	/* each term is at most a caller's object size; four cannot wrap a
	 * size_t on our 64-bit targets, but say so rather than assume */
	if (__builtin_add_overflow(method.n, path.n, &need) ||
	    __builtin_add_overflow(need, query.n + (query.p != NULL), &need) ||
	    __builtin_add_overflow(need, sizeof " " " HTTP/1.1\r\n" - 1, &need))
		need = SIZE_MAX;
	if (!w_room(w, need))
		return;
	w_put(w, method.p, method.n);
	w_put(w, " ", 1);
	w_put(w, path.p, path.n);
	if (query.p != NULL) {
		w_put(w, "?", 1);
		w_put(w, query.p, query.n);
	}
	w_put(w, " HTTP/1.1\r\n", 11);
	w->lines++;
}

void gw_writer_status_line(struct gw_writer *w, int status, struct gw_str reason)
{
	char code[4];
	size_t need;

	if (w->err != 0)
		return;
	if (status < 100 || status > 599 || (reason.p == NULL && reason.n != 0) || !w_ok_text(reason)) {
		w_invalid(w);
		return;
	}
	code[0] = (char)('0' + status / 100);
	code[1] = (char)('0' + status / 10 % 10);
	code[2] = (char)('0' + status % 10);
	code[3] = ' ';
	if (__builtin_add_overflow(reason.n, sizeof "HTTP/1.1 " - 1 + 4 + 2, &need))
		need = SIZE_MAX;
	if (!w_room(w, need))
		return;
	w_put(w, "HTTP/1.1 ", 9);
	w_put(w, code, 4);
	w_put(w, reason.p, reason.n);
	w_put(w, "\r\n", 2);
	w->lines++;
}

void gw_writer_field(struct gw_writer *w, struct gw_str name, struct gw_str value)
{
	size_t need;

	if (w->err != 0)
		return;
	if (w->lines != 1 || name.p == NULL || !is_token(name.p, name.n) ||
	    (value.p == NULL && value.n != 0) || !w_ok_text(value)) {
		w_invalid(w);
		return;
	}
	if (__builtin_add_overflow(name.n, value.n, &need) ||
	    __builtin_add_overflow(need, sizeof ": \r\n" - 1, &need))
		need = SIZE_MAX;
	if (!w_room(w, need))
		return;
	w_put(w, name.p, name.n);
	w_put(w, ": ", 2);
	w_put(w, value.p, value.n);
	w_put(w, "\r\n", 2);
}

void gw_writer_field_u64(struct gw_writer *w, struct gw_str name, uint64_t value)
{
	char tmp[20], dec[20];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + value % 10);
		value /= 10;
	} while (value != 0);
	while (n > 0)
		dec[k++] = tmp[--n];
	gw_writer_field(w, name, (struct gw_str){ dec, k });
}

int gw_writer_finish(struct gw_writer *w, size_t *len)
{
	if (w->err == 0 && w->lines != 1)
		w->err = -EINVAL;
	if (w->err == 0 && w_room(w, 2))
		w_put(w, "\r\n", 2);
	if (w->err != 0)
		return w->err;
	w->lines++;               /* finished: further calls are refused */
	*len = w->len;
	return 0;
}

const char *gw_status_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 103: return "Early Hints";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 429: return "Too Many Requests";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "";             /* an empty reason is valid HTTP */
	}
}
