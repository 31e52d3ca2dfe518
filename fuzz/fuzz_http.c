/* fuzz_http.c - libFuzzer target: the gateway's HTTP/1.1 message layer
 * (src/gateway/http.h).
 *
 * Input: byte 0 picks what runs, byte 1 seeds how the rest is split; the
 * rest is the bytes of a connection.
 *   byte 0 & 3:  0 proxy-listener requests, 1 tunnel requests, 2 responses,
 *                3 a chunked body alone, then the rest as a policy path and
 *                as an authority;
 *   byte 0 >> 2: responses: the request method (HEAD, CONNECT, GET);
 *                chunked: whether the body is a response's.
 *
 * The promises of http.h this target checks (a broken one aborts):
 *   - the outcome of a head does not depend on how its bytes are split:
 *     whole, one byte at a time (short inputs) and pieces of pseudo-random
 *     sizes give the same result, the same bytes used, the same message;
 *   - a refusal carries a status of its kind (400/414/431/501/505 or 500
 *     for requests, 502 for responses) and a reason, and sticks;
 *   - a parsed head keeps its limits and shapes: at most 100 fields and
 *     64 KiB, tokens for names, values without CR/LF/NUL or outer OWS,
 *     lower-case host without a trailing dot, port >= 1, the target form
 *     allowed for the listener, framing consistent with the message;
 *     lookups find every field;
 *   - what follows a head (the whole input in mode 3) through the chunked
 *     decoder: whole, in pieces through small output buffers, and in place
 *     give the same bytes and outcome; output never runs ahead of input;
 *   - the canonical path of a parsed path never needs more than
 *     GW_PATH_CANON_MAX, starts with '/', holds no dot segment and no
 *     lower-case escape, and is a fixed point;
 *   - a parsed tunnel request or response, written back with gw_writer
 *     (hop-by-hop fields dropped), parses again to the same message;
 *   - an authority that parses prints back to one that parses the same.
 * Everything is freed before returning; nothing is printed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(c) do { if (!(c)) abort(); } while (0)

/* ---- helpers ---------------------------------------------------------------- */

static uint32_t fz_rand(uint32_t *s)
{
	/* xorshift32: the split must be reproducible from the input */
	uint32_t x = *s ? *s : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static bool fz_str_eq(struct gw_str a, struct gw_str b)
{
	if ((a.p == NULL) != (b.p == NULL) || a.n != b.n)
		return false;
	return a.n == 0 || memcmp(a.p, b.p, a.n) == 0;
}

static bool fz_msg_eq(const struct gw_msg *a, const struct gw_msg *b)
{
	if (a->response != b->response || a->version != b->version || a->status != b->status ||
	    a->interim != b->interim || a->nfields != b->nfields || a->body != b->body ||
	    a->content_length != b->content_length || a->conn_close != b->conn_close ||
	    a->conn_keep_alive != b->conn_keep_alive || a->conn_upgrade != b->conn_upgrade ||
	    a->upgrade_websocket != b->upgrade_websocket || a->keep_alive != b->keep_alive ||
	    a->expect != b->expect || a->head_len != b->head_len)
		return false;
	if (!fz_str_eq(a->method, b->method) || !fz_str_eq(a->target_raw, b->target_raw) ||
	    !fz_str_eq(a->reason, b->reason) || !fz_str_eq(a->target.path, b->target.path) ||
	    !fz_str_eq(a->target.query, b->target.query) || a->target.form != b->target.form ||
	    strcmp(a->target.auth.host, b->target.auth.host) != 0 ||
	    a->target.auth.port != b->target.auth.port || a->target.auth.ipv6 != b->target.auth.ipv6)
		return false;
	for (size_t i = 0; i < a->nfields; i++)
		if (!fz_str_eq(a->fields[i].name, b->fields[i].name) ||
		    !fz_str_eq(a->fields[i].value, b->fields[i].value))
			return false;
	return true;
}

struct fz_out {
	int rc;
	size_t used;
	int status;
	const char *reason;
};

/* Feed p[0, n) in pieces: step 0 all at once, 1 byte by byte, otherwise
 * pseudo-random pieces of 1..step bytes. */
static struct fz_out fz_feed(struct gw_head *h, const uint8_t *p, size_t n, size_t step,
			     uint32_t seed)
{
	struct fz_out o = { 0, 0, 0, NULL };
	size_t off = 0;

	do {
		size_t k = step == 0 ? n - off : step == 1 ? 1 : 1 + fz_rand(&seed) % step;
		size_t used = 99;

		if (k > n - off)
			k = n - off;
		o.rc = gw_head_feed(h, p + off, k, &used);
		FZ_CHECK(used <= k);
		if (o.rc == 0)
			FZ_CHECK(used == k);
		o.used += used;
		off += k;
		if (o.rc != 0)
			break;
	} while (off < n);
	o.status = gw_head_error(h, &o.reason);
	return o;
}

static bool fz_out_eq(struct fz_out a, struct fz_out b)
{
	/* reasons are static strings: the same refusal is the same pointer */
	return a.rc == b.rc && a.status == b.status && a.reason == b.reason &&
	       (a.rc != 1 || a.used == b.used);
}

static bool fz_is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* ---- a parsed head's shape ------------------------------------------------------ */

static void fz_check_msg(const struct gw_msg *m, enum gw_head_kind kind, size_t used)
{
	FZ_CHECK(m->head_len == used && used <= GW_HTTP_HEAD_MAX);
	FZ_CHECK(m->version == 10 || m->version == 11);
	FZ_CHECK(m->nfields <= GW_HTTP_FIELDS_MAX);
	for (size_t i = 0; i < m->nfields; i++) {
		const struct gw_field *f = &m->fields[i];

		FZ_CHECK(f->name.p != NULL && f->name.n > 0 && f->value.p != NULL);
		for (size_t k = 0; k < f->name.n; k++)
			FZ_CHECK(fz_is_tchar((unsigned char)f->name.p[k]));
		for (size_t k = 0; k < f->value.n; k++) {
			unsigned char c = (unsigned char)f->value.p[k];

			FZ_CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
		}
		if (f->value.n > 0)
			FZ_CHECK(f->value.p[0] != ' ' && f->value.p[0] != '\t' &&
				 f->value.p[f->value.n - 1] != ' ' && f->value.p[f->value.n - 1] != '\t');
		/* lookups find it: the name's first occurrence, and it counts */
		char name[GW_HTTP_HEAD_MAX + 1];

		memcpy(name, f->name.p, f->name.n);
		name[f->name.n] = '\0';
		FZ_CHECK(gw_msg_count(m, name) >= 1 && gw_msg_field(m, name, 0) != NULL &&
			 gw_msg_field(m, name, 0) <= f);
		(void)gw_msg_is_hop_by_hop(m, f->name);
	}
	FZ_CHECK(gw_msg_keep_alive(m) == m->keep_alive);
	if (m->body != GW_BODY_LENGTH)
		FZ_CHECK(m->content_length == 0);
	FZ_CHECK(m->content_length <= (uint64_t)INT64_MAX);
	if (m->version == 10)
		FZ_CHECK(m->body != GW_BODY_CHUNKED && !m->upgrade_websocket &&
			 m->expect == GW_EXPECT_NONE);
	if (m->conn_close)
		FZ_CHECK(!m->keep_alive);
	if (m->response) {
		FZ_CHECK(kind == GW_HEAD_RESPONSE);
		FZ_CHECK(m->status >= 100 && m->status <= 599);
		FZ_CHECK(m->interim == (m->status < 200 && m->status != 101));
		if (m->body == GW_BODY_CLOSE || m->body == GW_BODY_TUNNEL)
			FZ_CHECK(!m->keep_alive);
		return;
	}
	const struct gw_target *t = &m->target;
	size_t hl = strlen(t->auth.host);

	FZ_CHECK(kind != GW_HEAD_RESPONSE && m->method.n > 0);
	FZ_CHECK(hl > 0 && hl <= GW_HTTP_HOST_MAX && t->auth.port >= 1);
	FZ_CHECK(t->auth.ipv6 || t->auth.host[hl - 1] != '.');
	for (size_t k = 0; k < hl; k++)
		FZ_CHECK(!(t->auth.host[k] >= 'A' && t->auth.host[k] <= 'Z'));
	FZ_CHECK(m->body == GW_BODY_NONE || m->body == GW_BODY_LENGTH || m->body == GW_BODY_CHUNKED);
	switch (t->form) {
	case GW_FORM_AUTHORITY:
		FZ_CHECK(kind == GW_HEAD_PROXY_REQUEST && t->path.p == NULL && !m->keep_alive);
		FZ_CHECK(m->body == GW_BODY_NONE);
		break;
	case GW_FORM_ABSOLUTE:
		FZ_CHECK(kind == GW_HEAD_PROXY_REQUEST && t->path.n > 0 && t->path.p[0] == '/');
		break;
	case GW_FORM_ORIGIN:
		FZ_CHECK(kind == GW_HEAD_TUNNEL_REQUEST && t->path.n > 0 && t->path.p[0] == '/');
		break;
	case GW_FORM_ASTERISK:
		FZ_CHECK(kind == GW_HEAD_TUNNEL_REQUEST && t->path.n == 1 && t->path.p[0] == '*');
		break;
	default:
		abort();
	}
	if (t->path.p != NULL)
		FZ_CHECK(memchr(t->path.p, '?', t->path.n) == NULL &&
			 memchr(t->path.p, '#', t->path.n) == NULL);
	if (t->query.p != NULL)
		FZ_CHECK(memchr(t->query.p, '#', t->query.n) == NULL);
}

/* ---- the policy path ------------------------------------------------------------ */

static int fz_hex_upper_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '%' && (i + 2 >= n ||
				    !((p[i + 1] >= '0' && p[i + 1] <= '9') || (p[i + 1] >= 'A' && p[i + 1] <= 'F')) ||
				    !((p[i + 2] >= '0' && p[i + 2] <= '9') || (p[i + 2] >= 'A' && p[i + 2] <= 'F'))))
			return 0;
	return 1;
}

static void fz_check_path(struct gw_str path)
{
	size_t cap = GW_PATH_CANON_MAX(path.n), len = 12345, len2;
	char *out = malloc(cap), *again = malloc(cap);
	int r;

	if (out == NULL || again == NULL)
		goto done;
	r = gw_path_canonical(path, out, cap, &len);
	FZ_CHECK(r == 0 || r == -EINVAL);
	if (r != 0) {
		FZ_CHECK(len == 12345);
		goto done;
	}
	FZ_CHECK(len < cap && out[len] == '\0' && strlen(out) == len);
	if (len == 1 && out[0] == '*')
		goto done;
	FZ_CHECK(out[0] == '/');
	FZ_CHECK(fz_hex_upper_ok(out, len));
	/* no "." or ".." segment is left */
	for (size_t i = 0; i < len; i++) {
		if (out[i] != '/')
			continue;
		size_t e = i + 1;

		while (e < len && out[e] != '/')
			e++;
		FZ_CHECK(!(e - i - 1 == 1 && out[i + 1] == '.'));
		FZ_CHECK(!(e - i - 1 == 2 && out[i + 1] == '.' && out[i + 2] == '.'));
	}
	/* a fixed point, and it fits where the input did */
	FZ_CHECK(gw_path_canonical((struct gw_str){ out, len }, again, cap, &len2) == 0);
	FZ_CHECK(len2 == len && memcmp(again, out, len) == 0);
done:
	free(again);
	free(out);
}

/* ---- writing back ---------------------------------------------------------------- */

static void fz_round_trip(const struct gw_msg *m, enum gw_head_kind kind, bool req_head,
			  bool req_connect)
{
	size_t cap = m->head_len + 2 * m->nfields + 64, len = 0, used = 0, kept = 0;
	char *buf = malloc(cap);
	struct gw_writer w;
	struct gw_head *h2 = NULL;
	const struct gw_msg *m2;

	if (buf == NULL)
		return;
	gw_writer_init(&w, buf, cap);
	if (m->response)
		gw_writer_status_line(&w, m->status, m->reason);
	else
		gw_writer_request_line(&w, m->method, m->target.path, m->target.query);
	for (size_t i = 0; i < m->nfields; i++) {
		if (gw_msg_is_hop_by_hop(m, m->fields[i].name))
			continue;
		gw_writer_field(&w, m->fields[i].name, m->fields[i].value);
		kept++;
	}
	FZ_CHECK(gw_writer_finish(&w, &len) == 0);
	FZ_CHECK(len <= cap);
	if (len > GW_HTTP_HEAD_MAX)
		goto out;      /* "a:b" written as "a: b" can push a full head past the limit */
	if ((h2 = gw_head_new(kind)) == NULL)
		goto out;
	if (req_head)
		gw_head_set_request(h2, GW_STR("HEAD"));
	else if (req_connect)
		gw_head_set_request(h2, GW_STR("CONNECT"));
	int r = gw_head_feed(h2, buf, len, &used);

	if (r == -ENOMEM)
		goto out;
	FZ_CHECK(r == 1 && used == len);
	m2 = gw_head_msg(h2);
	FZ_CHECK(m2->nfields == kept && m2->status == m->status && fz_str_eq(m2->reason, m->reason));
	FZ_CHECK(fz_str_eq(m2->method, m->method) && fz_str_eq(m2->target.path, m->target.path) &&
		 fz_str_eq(m2->target.query, m->target.query) &&
		 strcmp(m2->target.auth.host, m->target.auth.host) == 0 &&
		 m2->target.auth.port == m->target.auth.port);
	for (size_t i = 0, k = 0; i < m->nfields; i++) {
		if (gw_msg_is_hop_by_hop(m, m->fields[i].name))
			continue;
		FZ_CHECK(fz_str_eq(m2->fields[k].name, m->fields[i].name) &&
			 fz_str_eq(m2->fields[k].value, m->fields[i].value));
		k++;
	}
	/* framing survives unless it came from Transfer-Encoding (hop-by-hop) */
	if (m->body != GW_BODY_CHUNKED && m2->body != GW_BODY_CHUNKED)
		FZ_CHECK(m2->content_length == m->content_length);
out:
	gw_head_free(h2);
	free(buf);
}

/* ---- the chunked decoder -------------------------------------------------------- */

static void fz_chunked(const uint8_t *p, size_t n, bool response, uint32_t seed)
{
	uint8_t *whole = malloc(n + 1), *pieces = malloc(n + 1), *inplace = malloc(n + 1);
	struct gw_chunked a, b, c;
	size_t used_a, prod_a, used_b = 0, prod_b = 0, used_c, prod_c, off = 0;
	int ra, rb = 0, rc;

	if (whole == NULL || pieces == NULL || inplace == NULL)
		goto out;
	gw_chunked_init(&a, response);
	ra = gw_chunked_feed(&a, p, n, &used_a, whole, n, &prod_a);
	FZ_CHECK(ra == 0 || ra == 1 || ra == -EBADMSG);
	FZ_CHECK(used_a <= n && prod_a <= used_a);
	if (ra == 0)
		FZ_CHECK(used_a == n);
	if (ra == -EBADMSG) {
		const char *reason = NULL;

		FZ_CHECK(gw_chunked_error(&a, &reason) == (response ? 502 : 400) && reason != NULL);
	}
	FZ_CHECK(a.body_bytes == prod_a);

	/* pieces of 1..16 input bytes through output windows of 0..8 bytes */
	gw_chunked_init(&b, response);
	for (bool stalled = false; off < n; ) {
		size_t k = 1 + fz_rand(&seed) % 16, ocap = fz_rand(&seed) % 9, u, pr;

		if (stalled && ocap == 0)
			ocap = 1;    /* an empty window stalls on data: give room */
		if (k > n - off)
			k = n - off;
		rb = gw_chunked_feed(&b, p + off, k, &u, pieces + prod_b, ocap, &pr);
		FZ_CHECK(u <= k && pr <= ocap && pr <= u);
		off += u;
		prod_b += pr;
		if (rb != 0)
			break;
		FZ_CHECK(u > 0 || ocap == 0);   /* room and input: progress */
		stalled = u == 0;
	}
	used_b = off;
	if (off == n && rb == 0) {
		/* everything fed: the outcome must match the whole feed */
		FZ_CHECK(ra == 0 && used_a == n);
	} else {
		FZ_CHECK(rb == ra && used_b == used_a);
	}
	FZ_CHECK(prod_b == prod_a && memcmp(pieces, whole, prod_a) == 0);

	/* in place */
	memcpy(inplace, p, n);
	gw_chunked_init(&c, response);
	rc = gw_chunked_feed(&c, inplace, n, &used_c, inplace, n, &prod_c);
	FZ_CHECK(rc == ra && used_c == used_a && prod_c == prod_a &&
		 memcmp(inplace, whole, prod_a) == 0);
	/* sticky */
	if (ra != 0) {
		size_t u, pr;

		FZ_CHECK(gw_chunked_feed(&a, "0\r\n\r\n", 5, &u, whole, n, &pr) == ra && u == 0 && pr == 0);
	}
out:
	free(inplace);
	free(pieces);
	free(whole);
}

/* ---- authorities ---------------------------------------------------------------- */

static void fz_authority(const uint8_t *p, size_t n)
{
	struct gw_authority a, b;
	char text[GW_HTTP_HOST_MAX + 16];

	if (gw_authority_parse((struct gw_str){ (const char *)p, n }, 0, &a) != 0)
		return;
	size_t hl = strlen(a.host);

	FZ_CHECK(hl > 0 && hl <= GW_HTTP_HOST_MAX && a.port >= 1);
	int k = snprintf(text, sizeof text, a.ipv6 ? "[%s]:%u" : "%s:%u", a.host, a.port);

	FZ_CHECK(k > 0 && (size_t)k < sizeof text);
	FZ_CHECK(gw_authority_parse((struct gw_str){ text, (size_t)k }, 0, &b) == 0);
	FZ_CHECK(strcmp(a.host, b.host) == 0 && a.port == b.port && a.ipv6 == b.ipv6);
}

/* ---- the target ------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum gw_head_kind kinds[] = { GW_HEAD_PROXY_REQUEST, GW_HEAD_TUNNEL_REQUEST,
						   GW_HEAD_RESPONSE };
	struct gw_head *h1 = NULL, *h2 = NULL;
	struct fz_out o1, o2;
	enum gw_head_kind kind;
	const uint8_t *p;
	size_t n;
	uint32_t seed;
	bool req_head, req_connect;

	if (size < 2)
		return 0;
	seed = (uint32_t)data[1] * 2654435761u + (uint32_t)size;
	p = data + 2;
	n = size - 2;
	if ((data[0] & 3) == 3) {
		fz_chunked(p, n, (data[0] >> 2) & 1, seed);
		fz_check_path((struct gw_str){ (const char *)p, n });
		fz_authority(p, n);
		return 0;
	}
	kind = kinds[data[0] & 3];
	req_head = ((data[0] >> 2) & 3) == 1;
	req_connect = ((data[0] >> 2) & 3) == 2;

	if ((h1 = gw_head_new(kind)) == NULL || (h2 = gw_head_new(kind)) == NULL)
		goto out;
	if (req_head) {
		gw_head_set_request(h1, GW_STR("HEAD"));
		gw_head_set_request(h2, GW_STR("HEAD"));
	} else if (req_connect) {
		gw_head_set_request(h1, GW_STR("CONNECT"));
		gw_head_set_request(h2, GW_STR("CONNECT"));
	}
	o1 = fz_feed(h1, p, n, 0, 0);
	if (o1.rc == -ENOMEM)
		goto out;
	FZ_CHECK(o1.rc == 0 || o1.rc == 1 || o1.rc == -EBADMSG);
	if (o1.rc < 0) {
		FZ_CHECK(o1.reason != NULL && o1.reason[0] != '\0');
		if (kind == GW_HEAD_RESPONSE)
			FZ_CHECK(o1.status == 502);
		else
			FZ_CHECK(o1.status == 400 || o1.status == 414 || o1.status == 431 ||
				 o1.status == 501 || o1.status == 505);
		size_t u = 7;

		FZ_CHECK(gw_head_feed(h1, "\r\n\r\n", 4, &u) == o1.rc && u == 0);
		FZ_CHECK(gw_head_msg(h1) == NULL);
	} else if (o1.rc == 0) {
		FZ_CHECK(o1.used == n && o1.status == 0 && gw_head_msg(h1) == NULL);
	} else {
		FZ_CHECK(o1.status == 0 && gw_head_msg(h1) != NULL);
		fz_check_msg(gw_head_msg(h1), kind, o1.used);
	}

	/* the same bytes, split two other ways, give the same outcome */
	for (int way = 0; way < 2; way++) {
		size_t step = way == 0 ? 1 : 1 + (size_t)(seed % 64);

		if (way == 0 && n > 4096)
			continue;         /* byte by byte only on short inputs: speed */
		gw_head_reset(h2);
		o2 = fz_feed(h2, p, n, step, seed);
		if (o2.rc == -ENOMEM)
			goto out;
		FZ_CHECK(fz_out_eq(o1, o2));
		if (o1.rc == 1)
			FZ_CHECK(fz_msg_eq(gw_head_msg(h1), gw_head_msg(h2)));
	}

	if (o1.rc == 1) {
		const struct gw_msg *m = gw_head_msg(h1);

		if (!m->response && m->target.path.p != NULL)
			fz_check_path(m->target.path);
		if (kind != GW_HEAD_PROXY_REQUEST)
			fz_round_trip(m, kind, req_head, req_connect);
		/* the body, if chunked; a tunnel's first bytes otherwise */
		if (m->body == GW_BODY_CHUNKED || kind == GW_HEAD_PROXY_REQUEST)
			fz_chunked(p + o1.used, n - o1.used, m->response, seed);
		/* the next message on the connection parses from a reset */
		gw_head_reset(h1);
		FZ_CHECK(gw_head_msg(h1) == NULL && gw_head_error(h1, NULL) == 0);
	}
out:
	gw_head_free(h2);
	gw_head_free(h1);
	return 0;
}
