/* test_link.c - the wire between the gateway process and the supervisor
 * (src/gateway/link.c): the frame primitives, the supervisor's answerer
 * against the local decider, malformed requests, real decision channels
 * with concurrent callers, a supervisor gone, a server that answers garbage,
 * and frames with descriptors.
 *
 * Request frames are built here with the primitives, in the layout link.c
 * documents: u32 op, then
 *   OP_CONNECT  str host, u32 port, u8 has_ip, str ip, (corr)
 *   OP_HTTP     str host, u32 port, str method, str path, u64 body_bytes, u8 intercepted,
 *               (corr)
 *   (corr)      str request_id, str traceparent: printable ASCII, 256 and 512 at most
 *   OP_OUTCOME  u32 kind, u64 ticket, u32 status, u64 body_bytes
 *   OP_REFUSE   u8 http, (the HTTP or the CONNECT fields, corr), u64 ticket, str cause,
 *               str rule, str reason
 *   OP_SYNC     nothing
 * Replies: u32 rc, and for a decision u8 allow, u64 ticket, u32 cause, str rule,
 * str text. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector.h"
#include "decide.h"
#include "dogwood.h"
#include "link.h"
#include "policy_engine.h"
#include "test.h"

enum { OP_CONNECT = 1, OP_HTTP, OP_OUTCOME, OP_REFUSE, OP_SYNC, OP_RELAY };

static const char other_text[] = "policy denied this operation on 'other.test:443' "
				 "[default-deny]: No permit policy matched this request.";

/* ---- helpers --------------------------------------------------------------- */

struct fixture {
	struct dw_engine *eng;
	struct dw_monitor *mon;
	struct gw_decider dec;
};

static bool fixture_open(struct fixture *f, const char *text)
{
	struct dw_monitor_config mc = { 0 };
	char err[256] = "";

	memset(f, 0, sizeof(*f));
	f->eng = policy_engine(text);
	if (f->eng == NULL || dw_monitor_new(f->eng, &mc, &f->mon, err, sizeof(err)) != 0) {
		fprintf(stderr, "fixture: engine or monitor: %s\n", err);
		dw_engine_free(f->eng);
		f->eng = NULL;
		return false;
	}
	gw_decider_local(&f->dec, f->mon, f->eng, NULL);
	return true;
}

static void fixture_close(struct fixture *f)
{
	dw_monitor_free(f->mon);
	dw_engine_free(f->eng);
}

static uint64_t events(struct dw_monitor *m)
{
	struct dw_monitor_stats st;
	dw_monitor_stats(m, &st);
	return st.events;
}

static uint64_t pending(struct dw_monitor *m)
{
	struct dw_monitor_stats st;
	dw_monitor_stats(m, &st);
	return st.pending;
}

static void put_connect(struct gw_wire *w, const char *host, uint32_t port, uint8_t has_ip,
			const char *ip)
{
	gw_put_str(w, host);
	gw_put_u32(w, port);
	gw_put_u8(w, has_ip);
	gw_put_str(w, ip);
	gw_put_str(w, "");              /* no correlation */
	gw_put_str(w, "");
}

static void put_http(struct gw_wire *w, const char *host, uint32_t port, const char *method,
		     const char *path, int64_t body_bytes, uint8_t intercepted)
{
	gw_put_str(w, host);
	gw_put_u32(w, port);
	gw_put_str(w, method);
	gw_put_str(w, path);
	gw_put_u64(w, (uint64_t)body_bytes);
	gw_put_u8(w, intercepted);
	gw_put_str(w, "");
	gw_put_str(w, "");
}

/* A frame being built: a FRAME_MAX buffer and its wire. */
struct frame {
	unsigned char *b;
	struct gw_wire w;
};

static void frame_begin(struct frame *f, uint32_t op)
{
	if (f->b == NULL && (f->b = malloc(GW_LINK_FRAME_MAX)) == NULL)
		abort();
	gw_wire_init(&f->w, f->b, GW_LINK_FRAME_MAX);
	gw_put_u32(&f->w, op);
}

static void f_connect(struct frame *f, const char *host, uint32_t port, uint8_t has_ip,
		      const char *ip)
{
	frame_begin(f, OP_CONNECT);
	put_connect(&f->w, host, port, has_ip, ip);
}

static void f_http(struct frame *f, const char *host, uint32_t port, const char *method,
		   const char *path, int64_t body_bytes, uint8_t intercepted)
{
	frame_begin(f, OP_HTTP);
	put_http(&f->w, host, port, method, path, body_bytes, intercepted);
}

static void f_outcome(struct frame *f, uint32_t kind, uint64_t ticket, int32_t status,
		      uint64_t bytes)
{
	frame_begin(f, OP_OUTCOME);
	gw_put_u32(&f->w, kind);
	gw_put_u64(&f->w, ticket);
	gw_put_u32(&f->w, (uint32_t)status);
	gw_put_u64(&f->w, bytes);
}

static void f_refuse_tail(struct frame *f, uint64_t ticket, const char *cause, const char *rule,
			  const char *reason)
{
	gw_put_u64(&f->w, ticket);
	gw_put_str(&f->w, cause);
	gw_put_str(&f->w, rule);
	gw_put_str(&f->w, reason);
}

/* The reply to a frame: its rc, and a decision's fields when it has them
 * (ok: they parse with nothing left over). */
struct reply {
	size_t len;
	int32_t rc;
	bool ok;
	uint8_t allow;
	uint64_t ticket;
	uint32_t cause;
	char *rule, *text;
};

static void reply_clear(struct reply *r)
{
	free(r->rule);
	free(r->text);
	memset(r, 0, sizeof(*r));
}

/* Answer buf[0, n) on a copy (the answerer writes its reply over the request). */
static struct reply answer(struct gw_decider *d, const unsigned char *buf, size_t n, bool verdict)
{
	static unsigned char io[GW_LINK_FRAME_MAX];
	struct reply r = { 0 };
	struct gw_wire w;

	memcpy(io, buf, n);
	r.len = gw_link_answer(d, io, n, sizeof(io));
	gw_wire_from(&w, io, r.len);
	r.rc = (int32_t)gw_get_u32(&w);
	if (w.bad)
		r.rc = -99999;          /* not even an rc */
	if (verdict) {
		r.allow = gw_get_u8(&w);
		r.ticket = gw_get_u64(&w);
		r.cause = gw_get_u32(&w);
		gw_get_str(&w, GW_LINK_FRAME_MAX, &r.rule);
		gw_get_str(&w, GW_LINK_FRAME_MAX, &r.text);
	}
	r.ok = !w.bad && w.n == 0;
	return r;
}

static struct reply answer_frame(struct gw_decider *d, const struct frame *f, bool verdict)
{
	CHECK(!f->w.bad);               /* the test's own frame fits */
	return answer(d, f->b, f->w.n, verdict);
}

/* The answerer's reply to a decision is the local decider's verdict. */
static void same_verdict(const char *what, const struct reply *r, int rc,
			 const struct gw_verdict *v, bool expect_allow)
{
	unsigned long failed = test_failed;

	CHECK(r->ok);
	CHECK_EQ_INT(r->rc, rc);
	CHECK_EQ_INT(v->allow, expect_allow);   /* the comparison is not between two faults */
	CHECK_EQ_INT(r->allow, v->allow);
	CHECK_EQ_INT(r->cause, v->cause);
	CHECK_EQ_INT(r->ticket, v->ticket);
	CHECK_EQ_STR(r->rule, v->allow ? "" : gw_verdict_rule(v));
	CHECK_EQ_STR(r->text, v->text ? v->text : "");
	if (test_failed != failed)
		fprintf(stderr, "  (in: %s)\n", what);
}

/* ---- the wire primitives --------------------------------------------------- */

static void test_wire(void)
{
	unsigned char buf[64];
	struct gw_wire w, r;
	char *s = NULL;
	const unsigned char *b = NULL;
	size_t n = 99;

	/* round trips, little-endian */
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_u8(&w, 0xfe);
	gw_put_u32(&w, 0x01020304u);
	gw_put_u64(&w, 0x1122334455667788ull);
	gw_put_str(&w, "hey");
	/* a NULL string is "" (put() once passed NULL to memcpy here, which
	 * UBSan stops on: every net:connect before DNS has ip NULL) */
	gw_put_str(&w, NULL);
	gw_put_bytes(&w, "a\0b", 3);
	gw_put_u32(&w, UINT32_MAX);
	CHECK(!w.bad);
	CHECK_EQ_INT(w.n, 1 + 4 + 8 + 7 + 4 + 7 + 4);
	CHECK(buf[1] == 0x04 && buf[2] == 0x03 && buf[3] == 0x02 && buf[4] == 0x01);
	CHECK(buf[5] == 0x88 && buf[12] == 0x11);
	gw_wire_from(&r, buf, w.n);
	CHECK_EQ_INT(gw_get_u8(&r), 0xfe);
	CHECK_EQ_INT(gw_get_u32(&r), 0x01020304u);
	CHECK(gw_get_u64(&r) == 0x1122334455667788ull);
	gw_get_str(&r, 3, &s);
	CHECK_EQ_STR(s, "hey");
	free(s);
	gw_get_str(&r, 0, &s);                          /* NULL went as "" */
	CHECK_EQ_STR(s, "");
	free(s);
	gw_get_bytes(&r, 3, &b, &n);
	CHECK(b == buf + 1 + 4 + 8 + 7 + 4 + 4 && n == 3 && memcmp(b, "a\0b", 3) == 0);
	CHECK_EQ_INT(gw_get_u32(&r), UINT32_MAX);
	CHECK(!r.bad && r.n == 0);

	/* overflow: bad, nothing written past the end, and it sticks */
	gw_wire_init(&w, buf, 6);
	gw_put_u32(&w, 7);
	CHECK(!w.bad);
	gw_put_u32(&w, 8);
	CHECK(w.bad && w.n == 4);
	gw_put_u8(&w, 9);                               /* would fit, but the wire is bad */
	CHECK(w.bad && w.n == 4);
	gw_wire_init(&w, buf, 6);
	gw_put_str(&w, "abc");                          /* 4 + 3 > 6 */
	CHECK(w.bad);
	gw_wire_init(&w, buf, 6);
	gw_put_bytes(&w, "ab", 2);                      /* exactly 6 */
	CHECK(!w.bad && w.n == 6);
	gw_put_bytes(&w, "", 0);
	CHECK(w.bad);

	/* short reads: bad, zero, and it sticks */
	buf[0] = 1, buf[1] = 2, buf[2] = 3;
	gw_wire_from(&r, buf, 3);
	CHECK_EQ_INT(gw_get_u32(&r), 0);
	CHECK(r.bad);
	CHECK_EQ_INT(gw_get_u8(&r), 0);                 /* a byte is there, but the wire is bad */
	gw_wire_from(&r, buf, 7);
	CHECK(gw_get_u64(&r) == 0 && r.bad);
	gw_wire_from(&r, buf, 0);
	CHECK(gw_get_u8(&r) == 0 && r.bad);

	/* strings: length past the frame, past max, an embedded NUL */
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_u32(&w, 5);                              /* a length of 5, three bytes after it */
	gw_put_u8(&w, 'a'), gw_put_u8(&w, 'b'), gw_put_u8(&w, 'c');
	gw_wire_from(&r, buf, w.n);
	s = (char *)"x";
	gw_get_str(&r, 64, &s);
	CHECK(s == NULL && r.bad);
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_str(&w, "abcd");
	gw_wire_from(&r, buf, w.n);
	gw_get_str(&r, 3, &s);
	CHECK(s == NULL && r.bad);
	gw_wire_from(&r, buf, w.n);
	gw_get_str(&r, 4, &s);                          /* max is inclusive */
	CHECK_EQ_STR(s, "abcd");
	CHECK(!r.bad);
	free(s);
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_bytes(&w, "ab\0cd", 5);
	gw_wire_from(&r, buf, w.n);
	gw_get_str(&r, 64, &s);
	CHECK(s == NULL && r.bad);
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_bytes(&w, "abc\0", 4);                   /* a trailing NUL is inside, too */
	gw_wire_from(&r, buf, w.n);
	gw_get_str(&r, 64, &s);
	CHECK(s == NULL && r.bad);

	/* bytes: bounded by max and by the frame; empty is fine */
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_bytes(&w, "12345", 5);
	gw_wire_from(&r, buf, w.n);
	gw_get_bytes(&r, 4, &b, &n);
	CHECK(b == NULL && n == 0 && r.bad);
	gw_wire_from(&r, buf, w.n);
	gw_get_bytes(&r, 5, &b, &n);
	CHECK(b == buf + 4 && n == 5 && !r.bad && r.n == 0);
	gw_wire_from(&r, buf, w.n - 1);
	gw_get_bytes(&r, 64, &b, &n);
	CHECK(b == NULL && n == 0 && r.bad);
	gw_wire_init(&w, buf, sizeof(buf));
	gw_put_bytes(&w, NULL, 0);
	gw_wire_from(&r, buf, w.n);
	gw_get_bytes(&r, 0, &b, &n);
	CHECK(n == 0 && !r.bad && r.n == 0);
	gw_wire_from(&r, buf, 2);                       /* no room for the length */
	gw_get_bytes(&r, 64, &b, &n);
	CHECK(b == NULL && n == 0 && r.bad);
}

/* ---- the answerer against the local decider ------------------------------- */

/* Both monitors stamp the same instants, so their histories compare byte for byte. */
static int64_t fixed_clock(void *arg)
{
	(void)arg;
	return 1800000000000000000ll;
}

struct lines {
	char **v;
	size_t n;
};

static int collect(void *arg, const struct dw_history_event *ev)
{
	struct lines *l = arg;
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	l->v = v;
	if ((l->v[l->n] = strdup(ev->json)) == NULL)
		return -1;
	l->n++;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* One decision both ways: over a frame on A, directly on B. */
struct pair {
	struct gw_decider a, b;
	struct dw_monitor *ma, *mb;
	struct frame f;
};

static void pair_stats(const char *what, struct pair *p, uint64_t before, uint64_t added)
{
	unsigned long failed = test_failed;

	CHECK_EQ_INT(events(p->ma), events(p->mb));
	CHECK_EQ_INT(events(p->ma), before + added);
	CHECK_EQ_INT(pending(p->ma), pending(p->mb));
	if (test_failed != failed)
		fprintf(stderr, "  (in: %s)\n", what);
}

static uint64_t pair_connect(struct pair *p, const char *host, unsigned port, const char *ip,
			     bool allow)
{
	struct gw_verdict v;
	uint64_t before = events(p->ma);

	f_connect(&p->f, host, port, ip != NULL, ip);
	struct reply r = answer_frame(&p->a, &p->f, true);
	int rc = gw_decide_connect(&p->b, host, port, ip, &v);
	same_verdict(host, &r, rc, &v, allow);
	pair_stats(host, p, before, 1);
	uint64_t ticket = v.ticket;
	gw_verdict_clear(&v);
	reply_clear(&r);
	return ticket;
}

static uint64_t pair_http(struct pair *p, const char *method, const char *path, int64_t bytes,
			  bool intercepted, bool allow)
{
	struct gw_verdict v;
	uint64_t before = events(p->ma);
	const struct gw_http_input h = { "api.bound.test", 443, method, path, bytes, intercepted, NULL };

	f_http(&p->f, h.host, h.port, method, path, bytes, intercepted);
	struct reply r = answer_frame(&p->a, &p->f, true);
	int rc = gw_decide_http(&p->b, &h, &v);
	same_verdict(path, &r, rc, &v, allow);
	pair_stats(path, p, before, 1);
	uint64_t ticket = v.ticket;
	gw_verdict_clear(&v);
	reply_clear(&r);
	return ticket;
}

/* An outcome both ways; its rc is the local one's (expect_rc: 0 or an error). */
static void pair_outcome(struct pair *p, enum gw_outcome kind, uint64_t ticket, int status,
			 uint64_t bytes, bool expect_ok)
{
	uint64_t before = events(p->ma);

	f_outcome(&p->f, kind, ticket, status, bytes);
	struct reply r = answer_frame(&p->a, &p->f, false);
	int rc = p->b.outcome(&p->b, kind, ticket, status, bytes);
	CHECK(r.ok && r.len == 4);
	CHECK_EQ_INT(r.rc, rc);
	CHECK_EQ_INT(rc == 0, expect_ok);
	/* RELEASE and failures append nothing */
	pair_stats("outcome", p, before, rc == 0 && kind != GW_OUT_RELEASE ? 1 : 0);
}

static void pair_refuse(struct pair *p, const char *method, const char *ip, uint64_t ticket,
			const char *cause, const char *rule, const char *reason)
{
	uint64_t before = events(p->ma);
	const struct gw_http_input h = { "api.bound.test", 443, method, "/r", 5, true, NULL };

	frame_begin(&p->f, OP_REFUSE);
	gw_put_u8(&p->f.w, method != NULL);
	if (method != NULL)
		put_http(&p->f.w, h.host, h.port, method, h.path, h.body_bytes, h.intercepted);
	else
		put_connect(&p->f.w, h.host, h.port, ip != NULL, ip);
	f_refuse_tail(&p->f, ticket, cause, rule, reason);
	struct reply r = answer_frame(&p->a, &p->f, false);
	int rc = method != NULL ? gw_refuse_http(&p->b, &h, ticket, cause, rule, reason)
				: gw_refuse_connect(&p->b, h.host, h.port, ip, ticket, cause, rule,
						    reason);
	CHECK(r.ok && r.len == 4);
	CHECK_EQ_INT(r.rc, rc);
	CHECK_EQ_INT(rc, 0);
	pair_stats("refuse", p, before, 1);
}

static void test_answer_matches_local(void)
{
	char dir_a[] = "/tmp/cairn-link-a.XXXXXX", dir_b[] = "/tmp/cairn-link-b.XXXXXX";
	struct dw_engine *eng = policy_engine(GW_TEST_POLICY);
	struct dw_monitor_config ca = { .history_dir = dir_a, .clock = fixed_clock };
	struct dw_monitor_config cb = { .history_dir = dir_b, .clock = fixed_clock };
	struct pair p = { 0 };
	char err[256] = "";

	CHECK(eng != NULL);
	if (eng == NULL || !mkdtemp(dir_a) || !mkdtemp(dir_b) ||
	    dw_monitor_new(eng, &ca, &p.ma, err, sizeof(err)) != 0 ||
	    dw_monitor_new(eng, &cb, &p.mb, err, sizeof(err)) != 0) {
		fprintf(stderr, "answer: set-up failed: %s\n", err);
		test_failed++;
		return;
	}
	gw_decider_local(&p.a, p.ma, eng, NULL);
	gw_decider_local(&p.b, p.mb, eng, NULL);

	/* net:connect: allowed before DNS, default-deny, a forbid with its text */
	uint64_t t = pair_connect(&p, "api.bound.test", 443, NULL, true);
	pair_outcome(&p, GW_OUT_RELEASE, t, 0, 0, true);
	pair_connect(&p, "other.test", 443, NULL, false);
	uint64_t meta = pair_connect(&p, "api.bound.test", 443, "169.254.169.254", false);
	t = pair_connect(&p, "api.bound.test", 443, "192.0.2.7", true);
	pair_outcome(&p, GW_OUT_RESPONSE, t, -1, 0, true);
	t = pair_connect(&p, "api.bound.test", 443, "192.0.2.8", true);
	pair_outcome(&p, GW_OUT_ERROR, t, 0, 0, true);

	/* http:request: a denial, the cap over responses, each outcome kind */
	uint64_t del = pair_http(&p, "DELETE", "/v1/items/1", 0, true, false);
	uint64_t a = pair_http(&p, "GET", "/a", 0, true, true);
	uint64_t b = pair_http(&p, "GET", "/b", -1, false, true);
	pair_http(&p, "GET", "/c", 0, true, false);
	pair_outcome(&p, GW_OUT_RESPONSE, a, 200, 0, true);
	pair_outcome(&p, GW_OUT_ERROR, b, 0, 0, true);
	pair_outcome(&p, GW_OUT_RESPONSE, a, 200, 0, false);   /* a ticket closes once */
	pair_outcome(&p, GW_OUT_RELEASE, 999999, 0, 0, false); /* unknown ticket */
	t = pair_http(&p, "GET", "/d", 12, true, true);
	pair_outcome(&p, GW_OUT_DELIVERED, t, 999, 345, true);

	/* refusals: after a decision, before any, of either action */
	pair_refuse(&p, "DELETE", NULL, del, "no_match", "<default-deny>", "http:request gate: no");
	pair_refuse(&p, NULL, "169.254.169.254", meta, "forbidden", "metadata_addresses", "meta");
	pair_refuse(&p, NULL, NULL, 0, "enforcement", GW_GATE_FLOOR, "floor");
	pair_refuse(&p, "POST", NULL, 0, "enforcement", GW_GATE_EGRESS, "blocked by egress control");

	/* sync */
	frame_begin(&p.f, OP_SYNC);
	struct reply r = answer_frame(&p.a, &p.f, false);
	CHECK(r.ok && r.len == 4 && r.rc == 0);
	CHECK_EQ_INT(r.rc, gw_sync(&p.b));

	/* the same records, byte for byte */
	dw_monitor_free(p.ma);
	dw_monitor_free(p.mb);
	struct lines la = { 0 }, lb = { 0 };
	CHECK_EQ_INT(dw_history_read(dir_a, collect, &la, err, sizeof(err)), 0);
	CHECK_EQ_INT(dw_history_read(dir_b, collect, &lb, err, sizeof(err)), 0);
	CHECK_EQ_INT(la.n, lb.n);
	CHECK_EQ_INT(la.n, 19);        /* 10 decisions, 5 outcomes, 4 refusals */
	for (size_t i = 0; i < la.n && i < lb.n; i++)
		CHECK_EQ_STR(la.v[i], lb.v[i]);
	for (size_t i = 0; i < la.n; i++)
		free(la.v[i]);
	for (size_t i = 0; i < lb.n; i++)
		free(lb.v[i]);
	free(la.v);
	free(lb.v);
	free(p.f.b);
	nftw(dir_a, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	nftw(dir_b, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	dw_engine_free(eng);
}

/* ---- malformed requests ----------------------------------------------------- */

/* buf[0, n) is answered -EPROTO (an rc alone) and changes nothing. */
static void refused(struct fixture *fx, const unsigned char *buf, size_t n, const char *what,
		    size_t at)
{
	uint64_t ev = events(fx->mon), pe = pending(fx->mon);
	unsigned long failed = test_failed;

	struct reply r = answer(&fx->dec, buf, n, false);
	CHECK_EQ_INT(r.rc, -EPROTO);
	CHECK(r.ok && r.len == 4);
	CHECK_EQ_INT(events(fx->mon), ev);
	CHECK_EQ_INT(pending(fx->mon), pe);
	if (test_failed != failed)
		fprintf(stderr, "  (in: %s, %zu bytes of it)\n", what, at);
}

static void refused_frame(struct fixture *fx, struct frame *f, const char *what)
{
	CHECK(!f->w.bad);
	refused(fx, f->b, f->w.n, what, f->w.n);
}

/* A frame whose every strict prefix and whose one-byte extension are refused,
 * while the frame itself is answered (when accept: rc 0, added events). */
static void every_cut(struct fixture *fx, struct frame *f, const char *what, bool verdict,
		      uint64_t added)
{
	CHECK(!f->w.bad);
	for (size_t k = 0; k < f->w.n; k++)
		refused(fx, f->b, k, what, k);
	f->b[f->w.n] = 0;
	refused(fx, f->b, f->w.n + 1, what, f->w.n + 1);
	/* the whole frame is fine: the cuts above were refused for being cut */
	uint64_t ev = events(fx->mon);
	struct reply r = answer(&fx->dec, f->b, f->w.n, verdict);
	CHECK(r.ok && r.rc == 0);
	CHECK_EQ_INT(events(fx->mon), ev + added);
	if (r.rc != 0 || !r.ok)
		fprintf(stderr, "  (in: %s, whole)\n", what);
	reply_clear(&r);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	if (s == NULL)
		abort();
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void test_answer_malformed(void)
{
	struct fixture fx;
	struct frame f = { 0 };
	struct gw_verdict v;

	if (!fixture_open(&fx, GW_TEST_POLICY)) {
		test_failed++;
		return;
	}
	struct gw_decider *d = &fx.dec;
	/* two permitted requests still pending: an outcome that slipped
	 * through would close one of them */
	CHECK(gw_decide_connect(d, "api.bound.test", 443, "192.0.2.1", &v) == 0 && v.allow);
	uint64_t t1 = v.ticket;
	gw_verdict_clear(&v);
	CHECK(gw_decide_connect(d, "api.bound.test", 443, "192.0.2.2", &v) == 0 && v.allow);
	uint64_t t2 = v.ticket;
	gw_verdict_clear(&v);
	CHECK_EQ_INT(pending(fx.mon), 2);

	/* cut at every byte, and one byte too many */
	f_connect(&f, "api.bound.test", 443, 0, NULL);
	every_cut(&fx, &f, "connect", true, 1);
	f_connect(&f, "api.bound.test", 443, 1, "192.0.2.9");
	every_cut(&fx, &f, "connect ip", true, 1);
	f_http(&f, "api.bound.test", 443, "DELETE", "/x", 7, 1);
	every_cut(&fx, &f, "http", true, 1);
	f_outcome(&f, GW_OUT_RESPONSE, t1, 200, 0);
	every_cut(&fx, &f, "outcome", false, 1);
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 1);
	put_http(&f.w, "api.bound.test", 443, "DELETE", "/x", 7, 1);
	f_refuse_tail(&f, 0, "no_match", "<default-deny>", "nope");
	every_cut(&fx, &f, "refuse http", false, 1);
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 443, 1, "169.254.169.254");
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_FLOOR, "floor");
	every_cut(&fx, &f, "refuse connect", false, 1);
	frame_begin(&f, OP_SYNC);
	every_cut(&fx, &f, "sync", false, 0);

	/* unknown ops */
	frame_begin(&f, 0);
	refused_frame(&fx, &f, "op 0");
	frame_begin(&f, OP_SYNC + 1);
	refused_frame(&fx, &f, "op 6");
	f_connect(&f, "api.bound.test", 443, 0, NULL);
	f.b[0] = OP_SYNC + 1;                           /* a connect's fields under an unknown op */
	refused_frame(&fx, &f, "op 6 with fields");
	frame_begin(&f, UINT32_MAX);
	refused_frame(&fx, &f, "op ~0");

	/* ports */
	f_connect(&f, "api.bound.test", 0, 0, NULL);
	refused_frame(&fx, &f, "connect port 0");
	f_connect(&f, "api.bound.test", 65536, 0, NULL);
	refused_frame(&fx, &f, "connect port 65536");
	f_http(&f, "api.bound.test", 0, "GET", "/", 0, 1);
	refused_frame(&fx, &f, "http port 0");
	f_http(&f, "api.bound.test", 65536, "GET", "/", 0, 1);
	refused_frame(&fx, &f, "http port 65536");
	f_connect(&f, "api.bound.test", 65535, 0, NULL);  /* the edge is a port */
	struct reply r = answer_frame(d, &f, true);
	CHECK(r.ok && r.rc == 0 && r.allow == 0);
	reply_clear(&r);

	/* has_ip */
	f_connect(&f, "api.bound.test", 443, 2, "192.0.2.9");
	refused_frame(&fx, &f, "has_ip 2");
	f_connect(&f, "api.bound.test", 443, 2, NULL);
	refused_frame(&fx, &f, "has_ip 2, no ip");
	f_connect(&f, "api.bound.test", 443, 0, "192.0.2.9");
	refused_frame(&fx, &f, "ip with has_ip 0");

	/* http fields */
	f_http(&f, "api.bound.test", 443, "GET", "/", -2, 1);
	refused_frame(&fx, &f, "body_bytes -2");
	f_http(&f, "api.bound.test", 443, "GET", "/", INT64_MIN, 1);
	refused_frame(&fx, &f, "body_bytes INT64_MIN");
	f_http(&f, "api.bound.test", 443, "", "/", 0, 1);
	refused_frame(&fx, &f, "empty method");
	f_http(&f, "api.bound.test", 443, "GET", "", 0, 1);
	refused_frame(&fx, &f, "empty path");
	f_http(&f, "api.bound.test", 443, "GET", "/", 0, 2);
	refused_frame(&fx, &f, "intercepted 2");
	f_http(&f, "api.bound.test", 443, "GET", "/", -1, 0);   /* -1 is "unknown": fine */
	r = answer_frame(d, &f, true);
	CHECK(r.ok && r.rc == 0 && r.allow == 1);
	CHECK(gw_release(d, &(struct gw_verdict){ .ticket = r.ticket }) == 0);
	reply_clear(&r);

	/* outcomes */
	f_outcome(&f, 0, t2, 200, 0);
	refused_frame(&fx, &f, "outcome kind 0");
	f_outcome(&f, GW_OUT_RELEASE + 1, t2, 200, 0);
	refused_frame(&fx, &f, "outcome kind 5");
	f_outcome(&f, GW_OUT_RESPONSE, t2, -2, 0);
	refused_frame(&fx, &f, "status -2");
	f_outcome(&f, GW_OUT_RESPONSE, t2, 1000, 0);
	refused_frame(&fx, &f, "status 1000");
	f_outcome(&f, GW_OUT_RESPONSE, t2, INT32_MIN, 0);
	refused_frame(&fx, &f, "status INT32_MIN");
	CHECK_EQ_INT(gw_record_response(d, &(struct gw_verdict){ .ticket = t2 }, 200), 0);

	/* refusals */
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 2);
	put_http(&f.w, "api.bound.test", 443, "GET", "/", 0, 1);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, "no");
	refused_frame(&fx, &f, "refuse http flag 2 (http fields)");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 2);
	put_connect(&f.w, "api.bound.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, "no");
	refused_frame(&fx, &f, "refuse http flag 2 (connect fields)");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 0, 0, NULL);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, "no");
	refused_frame(&fx, &f, "refuse connect port 0");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 1);
	put_http(&f.w, "api.bound.test", 443, "GET", "", 0, 1);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, "no");
	refused_frame(&fx, &f, "refuse http empty path");

	/* strings over their limits (host 1024, method 64, path 64 KiB, ip/cause
	 * 256, rule and reason 16 KiB), each beside the same frame at the limit */
	char *host = repeat('h', 1025), *method = repeat('M', 65), *word = repeat('w', 257);
	char *path = repeat('p', (64u << 10) + 1), *reason = repeat('r', (16u << 10) + 1);
	path[0] = '/';
	f_connect(&f, host, 443, 0, NULL);
	refused_frame(&fx, &f, "host 1025");
	f_http(&f, host, 443, "GET", "/", 0, 1);
	refused_frame(&fx, &f, "http host 1025");
	f_http(&f, "api.bound.test", 443, method, "/", 0, 1);
	refused_frame(&fx, &f, "method 65");
	f_http(&f, "api.bound.test", 443, "GET", path, 0, 1);
	refused_frame(&fx, &f, "path 64 KiB + 1");
	f_connect(&f, "api.bound.test", 443, 1, word);
	refused_frame(&fx, &f, "ip 257");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, word, GW_GATE_EGRESS, "no");
	refused_frame(&fx, &f, "cause 257");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, "enforcement", reason, "no");
	refused_frame(&fx, &f, "rule 16 KiB + 1");
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, reason);
	refused_frame(&fx, &f, "reason 16 KiB + 1");

	host[1024] = method[64] = path[64u << 10] = reason[16u << 10] = '\0';
	uint64_t ev = events(fx.mon);
	f_connect(&f, host, 443, 0, NULL);
	r = answer_frame(d, &f, true);
	CHECK(r.ok && r.rc == 0 && r.allow == 0);
	reply_clear(&r);
	f_http(&f, "api.bound.test", 443, method, path, 0, 1);
	r = answer_frame(d, &f, true);
	CHECK(r.ok && r.rc == 0 && r.allow == 0);
	reply_clear(&r);
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "api.bound.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, "enforcement", GW_GATE_EGRESS, reason);
	r = answer_frame(d, &f, false);
	CHECK(r.ok && r.rc == 0);
	reply_clear(&r);
	CHECK_EQ_INT(events(fx.mon), ev + 3);

	/* an embedded NUL in a string */
	frame_begin(&f, OP_CONNECT);
	gw_put_bytes(&f.w, "api.bound.test\0.evil", 20);
	gw_put_u32(&f.w, 443);
	gw_put_u8(&f.w, 0);
	gw_put_str(&f.w, "");
	refused_frame(&fx, &f, "host with a NUL");

	free(host);
	free(method);
	free(word);
	free(path);
	free(reason);
	free(f.b);
	fixture_close(&fx);
}

/* ---- real channels ----------------------------------------------------------- */

struct channels {
	int gw[GW_LINK_CHANNELS], sup[GW_LINK_CHANNELS];
};

static bool channels_open(struct channels *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
			perror("socketpair");
			return false;
		}
		c->gw[i] = sv[0];
		c->sup[i] = sv[1];
	}
	return true;
}

struct worker {
	struct gw_decider *d;
	int id;
	int wrong;
	uint64_t tickets[60];
	size_t n_tickets, allowed;
	pthread_barrier_t *start;
};

#define ROUNDS 60

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char ip[32];

	pthread_barrier_wait(w->start);
	for (int i = 0; i < ROUNDS; i++) {
		struct gw_verdict v;
		int rc;
		switch ((i + w->id) % 4) {
		case 0:         /* allowed, then recorded */
			snprintf(ip, sizeof(ip), "192.0.%d.%d", w->id, i);
			rc = gw_decide_connect(w->d, "api.bound.test", 443, ip, &v);
			if (rc != 0 || !v.allow || v.cause != DW_CAUSE_PERMITTED || v.text != NULL ||
			    gw_record_response(w->d, &v, -1) != 0)
				w->wrong++;
			w->allowed++;
			break;
		case 1:         /* denied by default, Box's text */
			rc = gw_decide_connect(w->d, "other.test", 443, NULL, &v);
			if (rc != 0 || v.allow || v.cause != DW_CAUSE_NO_MATCH || v.text == NULL ||
			    strcmp(v.text, other_text) != 0 ||
			    strcmp(gw_verdict_rule(&v), "<default-deny>") != 0)
				w->wrong++;
			break;
		case 2:         /* denied by a forbid, its description */
			rc = gw_decide_connect(w->d, "api.bound.test", 443, "169.254.169.254", &v);
			if (rc != 0 || v.allow || v.cause != DW_CAUSE_FORBIDDEN || v.text == NULL ||
			    strstr(v.text, "[policy: metadata_addresses]: No cloud metadata.") == NULL ||
			    strcmp(gw_verdict_rule(&v), "metadata_addresses") != 0)
				w->wrong++;
			break;
		default: {      /* http:request denied: not a GET */
			const struct gw_http_input h = { "api.bound.test", 443, "POST", "/p", 3, true, NULL };
			rc = gw_decide_http(w->d, &h, &v);
			if (rc != 0 || v.allow || v.text == NULL ||
			    strstr(v.text, "'api.bound.test:443/p' [default-deny]") == NULL)
				w->wrong++;
			break;
		}
		}
		w->tickets[w->n_tickets++] = v.ticket;
		gw_verdict_clear(&v);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void expect_lost(struct gw_decider *d, const char *what)
{
	struct gw_verdict v;
	unsigned long failed = test_failed;

	memset(&v, 0x5a, sizeof(v));
	CHECK_EQ_INT(gw_decide_connect(d, "api.bound.test", 443, NULL, &v), -EPIPE);
	CHECK(!v.allow && v.cause == DW_CAUSE_INTERNAL_FAULT && v.text == NULL);
	CHECK_EQ_STR(gw_verdict_rule(&v), "<internal-fault>");
	gw_verdict_clear(&v);
	const struct gw_http_input h = { "api.bound.test", 443, "GET", "/", 0, true, NULL };
	memset(&v, 0x5a, sizeof(v));
	CHECK_EQ_INT(gw_decide_http(d, &h, &v), -EPIPE);
	CHECK(!v.allow && v.cause == DW_CAUSE_INTERNAL_FAULT);
	CHECK_EQ_STR(gw_verdict_rule(&v), "<internal-fault>");
	gw_verdict_clear(&v);
	v = (struct gw_verdict){ .ticket = 1 };
	CHECK_EQ_INT(gw_record_response(d, &v, 200), -EPIPE);
	CHECK_EQ_INT(gw_record_delivered(d, &v, 200, 5), -EPIPE);
	CHECK_EQ_INT(gw_record_error(d, &v), -EPIPE);
	CHECK_EQ_INT(gw_release(d, &v), -EPIPE);
	CHECK_EQ_INT(gw_refuse_http(d, &h, 0, "enforcement", GW_GATE_EGRESS, "no"), -EPIPE);
	CHECK_EQ_INT(gw_refuse_connect(d, "api.bound.test", 443, NULL, 0, "enforcement",
				       GW_GATE_FLOOR, "no"), -EPIPE);
	CHECK_EQ_INT(gw_sync(d), -EPIPE);
	if (test_failed != failed)
		fprintf(stderr, "  (in: %s)\n", what);
}

static void test_channels(void)
{
	struct fixture fx;
	struct channels ch;
	struct gw_link_server *srv = NULL;
	struct gw_link *link = NULL;
	struct gw_decider ld, *d = &ld;
	struct gw_verdict v;

	if (!fixture_open(&fx, GW_TEST_POLICY)) {
		test_failed++;
		return;
	}
	CHECK(channels_open(&ch, GW_LINK_CHANNELS));
	CHECK_EQ_INT(gw_link_server_start(&fx.dec, ch.sup, GW_LINK_CHANNELS, &srv), 0);
	CHECK_EQ_INT(gw_link_new(ch.gw, GW_LINK_CHANNELS, &link), 0);
	if (srv == NULL || link == NULL) {
		test_failed++;
		return;
	}
	gw_decider_link(d, link);

	/* one caller: the verdicts and records the local decider gives */
	CHECK(gw_decide_connect(d, "api.bound.test", 443, NULL, &v) == 0 && v.allow &&
	      v.cause == DW_CAUSE_PERMITTED && v.text == NULL && v.ticket != 0);
	CHECK_EQ_INT(gw_release(d, &v), 0);
	CHECK(gw_release(d, &v) != 0);                  /* released once */
	gw_verdict_clear(&v);
	const struct gw_http_input del = { "api.bound.test", 443, "DELETE", "/v1/items/1", 0, true, NULL };
	CHECK(gw_decide_http(d, &del, &v) == 0 && !v.allow && v.cause == DW_CAUSE_NO_MATCH);
	CHECK_EQ_STR(v.text, "policy denied this operation on 'api.bound.test:443/v1/items/1' "
			     "[default-deny]: No permit policy matched this request.");
	CHECK_EQ_STR(gw_verdict_rule(&v), "<default-deny>");
	uint64_t ev = events(fx.mon);
	CHECK_EQ_INT(gw_refuse_http(d, &del, v.ticket, gw_verdict_cause(&v), gw_verdict_rule(&v),
				    "http:request gate: no"), 0);
	CHECK_EQ_INT(events(fx.mon), ev + 1);
	gw_verdict_clear(&v);
	const struct gw_http_input get = { "api.bound.test", 443, "GET", "/g", 10, true, NULL };
	CHECK(gw_decide_http(d, &get, &v) == 0 && v.allow);
	CHECK_EQ_INT(gw_record_delivered(d, &v, 200, 77), 0);
	gw_verdict_clear(&v);
	CHECK_EQ_INT(gw_sync(d), 0);
	CHECK_EQ_INT(pending(fx.mon), 0);

	/* eight callers at once over four channels */
	pthread_barrier_t start;
	pthread_t th[8];
	struct worker w[8];
	pthread_barrier_init(&start, NULL, 8);
	ev = events(fx.mon);
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .d = d, .id = i, .start = &start };
		CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
	}
	uint64_t all[8 * ROUNDS];
	size_t n_all = 0, allowed = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ_INT(w[i].wrong, 0);
		CHECK_EQ_INT(w[i].n_tickets, ROUNDS);
		memcpy(all + n_all, w[i].tickets, w[i].n_tickets * sizeof(uint64_t));
		n_all += w[i].n_tickets;
		allowed += w[i].allowed;
	}
	pthread_barrier_destroy(&start);
	/* every decision and record reached the monitor, each ticket its own */
	CHECK_EQ_INT(events(fx.mon), ev + n_all + allowed);
	CHECK_EQ_INT(pending(fx.mon), 0);
	qsort(all, n_all, sizeof(all[0]), cmp_u64);
	size_t dups = 0;
	for (size_t i = 1; i < n_all; i++)
		dups += all[i] == all[i - 1] || all[i] == 0;
	CHECK_EQ_INT(dups, 0);

	/* the supervisor's side stops: its threads see their channels shut,
	 * the gateway's next calls deny as internal faults */
	for (size_t i = 0; i < GW_LINK_CHANNELS; i++)
		shutdown(ch.sup[i], SHUT_RDWR);
	gw_link_server_stop(srv);
	ev = events(fx.mon);
	expect_lost(d, "server stopped");
	expect_lost(d, "server stopped, again");        /* every channel has failed by now */
	CHECK_EQ_INT(events(fx.mon), ev);
	gw_link_free(link);

	/* a supervisor that is simply gone: its ends closed */
	CHECK(channels_open(&ch, 2));
	close(ch.sup[0]);
	close(ch.sup[1]);
	CHECK_EQ_INT(gw_link_new(ch.gw, 2, &link), 0);
	gw_decider_link(d, link);
	expect_lost(d, "server closed");
	gw_link_free(link);

	fixture_close(&fx);
}

/* ---- a server that answers garbage ------------------------------------------ */

struct fake {
	int fd;
	unsigned char first[64];        /* the first reply */
	size_t first_n;
	int frames;                     /* requests it saw */
};

/* Later replies: a well-formed denial only this fake gives. */
static size_t fake_later(unsigned char *buf, size_t cap)
{
	struct gw_wire w;
	gw_wire_init(&w, buf, cap);
	gw_put_u32(&w, 0);
	gw_put_u8(&w, 0);
	gw_put_u64(&w, 4242);
	gw_put_u32(&w, DW_CAUSE_FORBIDDEN);
	gw_put_str(&w, "fake-rule");
	gw_put_str(&w, "from the fake");
	return w.n;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	unsigned char buf[256], *req = malloc(GW_LINK_FRAME_MAX);

	while (req != NULL) {
		ssize_t k = recv(f->fd, req, GW_LINK_FRAME_MAX, 0);
		if (k <= 0)
			break;                  /* the gateway closed this channel */
		f->frames++;
		size_t n = f->frames == 1 ? f->first_n : fake_later(buf, sizeof(buf));
		if (send(f->fd, f->frames == 1 ? f->first : buf, n, MSG_NOSIGNAL) != (ssize_t)n)
			break;
	}
	free(req);
	close(f->fd);
	return NULL;
}

enum first_call { ASK_CONNECT, ASK_HTTP, ASK_RECORD };

/* Channel 0 is the fake (link.c takes the first free channel, so the first
 * call goes there), channel 1 a real server.  The first call gets the fake's
 * first reply: want_rc; when kept (a well-formed reply), the next calls go
 * to the fake again, else to the real server and the fake sees no more. */
static void bad_reply(struct fixture *fx, const char *what, const unsigned char *first,
		      size_t first_n, enum first_call call, int want_rc, bool kept)
{
	struct channels ch;
	struct gw_link_server *srv = NULL;
	struct gw_link *link = NULL;
	struct gw_decider ld, *d = &ld;
	struct gw_verdict v;
	struct fake fk = { .first_n = first_n };
	pthread_t th;
	unsigned long failed = test_failed;

	memcpy(fk.first, first, first_n);
	if (!channels_open(&ch, 2) || gw_link_server_start(&fx->dec, &ch.sup[1], 1, &srv) != 0) {
		test_failed++;
		return;
	}
	fk.fd = ch.sup[0];
	CHECK(pthread_create(&th, NULL, fake_main, &fk) == 0);
	CHECK_EQ_INT(gw_link_new(ch.gw, 2, &link), 0);
	gw_decider_link(d, link);

	const struct gw_http_input h = { "api.bound.test", 443, "GET", "/f", 0, true, NULL };
	uint64_t ev = events(fx->mon);
	if (call == ASK_RECORD) {
		v = (struct gw_verdict){ .ticket = 1 };
		CHECK_EQ_INT(gw_record_response(d, &v, 200), want_rc);
	} else {
		int rc = call == ASK_HTTP ? gw_decide_http(d, &h, &v)
					  : gw_decide_connect(d, "api.bound.test", 443, NULL, &v);
		CHECK_EQ_INT(rc, want_rc);
		CHECK(!v.allow);
		if (want_rc == -EPROTO || want_rc == -EPIPE) {
			CHECK(v.cause == DW_CAUSE_INTERNAL_FAULT && v.text == NULL);
			CHECK_EQ_STR(gw_verdict_rule(&v), "<internal-fault>");
		}
		gw_verdict_clear(&v);
	}
	CHECK_EQ_INT(events(fx->mon), ev);              /* the fake decides nothing */

	/* the next calls: link.c takes the first free channel, the fake's when kept */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(gw_decide_connect(d, "api.bound.test", 443, NULL, &v), 0);
		if (kept) {
			CHECK(!v.allow && v.ticket == 4242);
			CHECK_EQ_STR(v.text, "from the fake");
		} else {
			CHECK(v.allow && v.cause == DW_CAUSE_PERMITTED);
			if (v.allow)
				CHECK_EQ_INT(gw_release(d, &v), 0);
		}
		gw_verdict_clear(&v);
	}
	gw_link_free(link);                             /* the fake sees its end close */
	pthread_join(th, NULL);
	gw_link_server_stop(srv);
	/* kept: every call went to the fake; else the first only */
	CHECK_EQ_INT(fk.frames, kept ? 4 : 1);
	if (test_failed != failed)
		fprintf(stderr, "  (in: %s)\n", what);
}

/* A verdict reply, optionally with a trailing byte. */
static size_t verdict_bytes(unsigned char *buf, int32_t rc, uint8_t allow, uint32_t cause,
			    const char *rule, const char *text, bool trailing)
{
	struct gw_wire w;
	gw_wire_init(&w, buf, 64);
	gw_put_u32(&w, (uint32_t)rc);
	gw_put_u8(&w, allow);
	gw_put_u64(&w, 4242);
	gw_put_u32(&w, cause);
	gw_put_str(&w, rule);
	gw_put_str(&w, text);
	if (trailing)
		gw_put_u8(&w, 0);
	return w.n;
}

static void test_bad_replies(void)
{
	struct fixture fx;
	unsigned char b[64];
	size_t n;

	if (!fixture_open(&fx, GW_TEST_POLICY)) {
		test_failed++;
		return;
	}
	/* controls: well-formed replies are taken, the channel kept */
	n = verdict_bytes(b, 0, 0, DW_CAUSE_FORBIDDEN, "r", "t", false);
	bad_reply(&fx, "a denial", b, n, ASK_CONNECT, 0, true);
	n = verdict_bytes(b, -EIO, 0, DW_CAUSE_INTERNAL_FAULT, "", "", false);
	bad_reply(&fx, "an engine failure", b, n, ASK_CONNECT, -EIO, true);
	n = verdict_bytes(b, 0, 1, DW_CAUSE_PERMITTED, "", "", false);
	/* an allow from the fake: checked here, not in bad_reply (which wants a denial) */
	{
		struct channels ch;
		struct gw_link *link = NULL;
		struct gw_decider ld;
		struct gw_verdict v;
		struct fake fk = { .first_n = n };
		pthread_t th;
		memcpy(fk.first, b, n);
		CHECK(channels_open(&ch, 1));
		fk.fd = ch.sup[0];
		CHECK(pthread_create(&th, NULL, fake_main, &fk) == 0);
		CHECK_EQ_INT(gw_link_new(ch.gw, 1, &link), 0);
		gw_decider_link(&ld, link);
		CHECK(gw_decide_connect(&ld, "x.test", 443, NULL, &v) == 0 && v.allow &&
		      v.ticket == 4242 && v.text == NULL);
		gw_verdict_clear(&v);
		gw_link_free(link);
		pthread_join(th, NULL);
	}

	/* garbage: -EPROTO, a denial, the channel dropped */
	bad_reply(&fx, "empty reply", b, 0, ASK_CONNECT, -EPIPE, false);
	b[0] = 0, b[1] = 0;
	bad_reply(&fx, "two bytes", b, 2, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 0, 1, DW_CAUSE_PERMITTED, "", "", false);
	bad_reply(&fx, "a verdict cut short", b, n - 1, ASK_HTTP, -EPROTO, false);
	bad_reply(&fx, "rc alone to a decision", b, 4, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 0, 1, DW_CAUSE_FORBIDDEN, "", "", false);
	bad_reply(&fx, "allow with cause forbidden", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 0, 1, DW_CAUSE_NO_MATCH, "", "", false);
	bad_reply(&fx, "allow with cause no_match", b, n, ASK_HTTP, -EPROTO, false);
	n = verdict_bytes(b, 0, 0, DW_CAUSE_INTERNAL_FAULT + 1, "", "", false);
	bad_reply(&fx, "cause out of range", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 0, 1, DW_CAUSE_PERMITTED, "", "", true);
	bad_reply(&fx, "allow with a trailing byte", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 0, 0, DW_CAUSE_FORBIDDEN, "r", "t", true);
	bad_reply(&fx, "deny with a trailing byte", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, 1, 0, DW_CAUSE_FORBIDDEN, "r", "t", false);
	bad_reply(&fx, "positive rc", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, -EIO, 1, DW_CAUSE_PERMITTED, "", "", false);
	bad_reply(&fx, "an error that allows", b, n, ASK_CONNECT, -EPROTO, false);
	n = verdict_bytes(b, -5000, 0, DW_CAUSE_INTERNAL_FAULT, "", "", false);
	bad_reply(&fx, "rc below -4095", b, n, ASK_CONNECT, -EPROTO, false);
	/* a record's reply is its rc alone */
	b[0] = 0, b[1] = 0, b[2] = 0, b[3] = 0, b[4] = 0;
	bad_reply(&fx, "record: trailing byte", b, 5, ASK_RECORD, -EPROTO, false);
	bad_reply(&fx, "record: three bytes", b, 3, ASK_RECORD, -EPROTO, false);
	b[0] = 1;
	bad_reply(&fx, "record: positive rc", b, 4, ASK_RECORD, -EPROTO, false);
	b[0] = (unsigned char)-ENOENT, b[1] = b[2] = b[3] = 0xff;
	bad_reply(&fx, "record: -ENOENT", b, 4, ASK_RECORD, -ENOENT, true);
	fixture_close(&fx);
}

/* ---- frames with descriptors ------------------------------------------------- */

/* The pipe's write end is closed everywhere: its read end sees EOF. */
static bool writer_gone(int rd)
{
	char c;
	int fl = fcntl(rd, F_GETFL);
	fcntl(rd, F_SETFL, fl | O_NONBLOCK);
	ssize_t k = read(rd, &c, 1);
	fcntl(rd, F_SETFL, fl);
	return k == 0;
}

static void test_frames_fds(void)
{
	int sv[2], p[4][2];
	unsigned char out[64], in[64];
	struct gw_wire w;
	int fds[4];
	size_t nfds = 99;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(pipe(p[i]) == 0);
	gw_wire_init(&w, out, sizeof(out));
	gw_put_u32(&w, 77);
	gw_put_str(&w, "ten bytes!");

	/* two fds arrive, close-on-exec, working; the frame is whole */
	int two[2] = { p[0][1], p[1][1] };
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, two, 2), 0);
	long k = gw_frame_recv(sv[1], in, sizeof(in), fds, 4, &nfds);
	CHECK_EQ_INT(k, (long)w.n);
	CHECK(k == (long)w.n && memcmp(in, out, w.n) == 0);
	CHECK_EQ_INT(nfds, 2);
	for (size_t i = 0; i < nfds && i < 2; i++) {
		char c = 0;
		CHECK(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
		CHECK(write(fds[i], "x", 1) == 1 && read(p[i][0], &c, 1) == 1 && c == 'x');
		close(fds[i]);
	}

	/* a frame without fds */
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, NULL, 0), 0);
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, sizeof(in), fds, 4, &nfds), (long)w.n);
	CHECK_EQ_INT(nfds, 0);

	/* more than the sender takes, a bad wire */
	int five[5] = { p[0][1], p[0][1], p[0][1], p[0][1], p[0][1] };
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, five, 5), -EMSGSIZE);
	struct gw_wire bad = w;
	bad.bad = true;
	CHECK_EQ_INT(gw_frame_send(sv[0], &bad, NULL, 0), -EMSGSIZE);

	/* a buffer too small: -EPROTO, and the fd that came is closed */
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, &p[0][1], 1), 0);
	close(p[0][1]);
	nfds = 99;
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, w.n - 1, fds, 4, &nfds), -EPROTO);
	CHECK_EQ_INT(nfds, 0);
	CHECK(writer_gone(p[0][0]));

	/* fds beyond max_fds are closed, the first ones kept */
	int three[3] = { p[1][1], p[2][1], p[3][1] };
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, three, 3), 0);
	close(p[2][1]);
	close(p[3][1]);
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, sizeof(in), fds, 1, &nfds), (long)w.n);
	CHECK_EQ_INT(nfds, 1);
	CHECK(writer_gone(p[2][0]));
	CHECK(writer_gone(p[3][0]));
	close(p[1][1]);
	CHECK(!writer_gone(p[1][0]));                   /* the one kept still writes */
	close(fds[0]);
	CHECK(writer_gone(p[1][0]));

	/* max_fds 0: every fd closed, the frame still read */
	int wr;
	int pp[2];
	CHECK(pipe(pp) == 0);
	wr = pp[1];
	CHECK_EQ_INT(gw_frame_send(sv[0], &w, &wr, 1), 0);
	close(wr);
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, sizeof(in), NULL, 0, &nfds), (long)w.n);
	CHECK_EQ_INT(nfds, 0);
	CHECK(writer_gone(pp[0]));
	close(pp[0]);

	/* more fds than the receiver's control buffer holds (MSG_CTRUNC): -EPROTO,
	 * none left open */
	CHECK(pipe(pp) == 0);
	{
		int many[12];
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(many))];
		} u;
		struct iovec iov = { .iov_base = out, .iov_len = w.n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
				     .msg_controllen = sizeof(u.b) };
		for (int i = 0; i < 12; i++)
			many[i] = pp[1];
		memset(&u, 0, sizeof(u));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(many));
		memcpy(CMSG_DATA(cm), many, sizeof(many));
		CHECK(sendmsg(sv[0], &mh, 0) == (ssize_t)w.n);
	}
	close(pp[1]);
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, sizeof(in), fds, 4, &nfds), -EPROTO);
	CHECK_EQ_INT(nfds, 0);
	CHECK(writer_gone(pp[0]));
	close(pp[0]);

	/* the peer closed */
	close(sv[0]);
	CHECK_EQ_INT(gw_frame_recv(sv[1], in, sizeof(in), fds, 4, &nfds), 0);
	close(sv[1]);
	for (int i = 0; i < 4; i++)
		close(p[i][0]);
}

/* ---- what the gateway can send that the answerer refuses -------------------- */

/* The answerer refuses a request over its field limits with an rc alone
 * (-EPROTO), the protocol's own answer to a frame that does not parse: the
 * gateway's side denies that request and keeps the channel.  (It once read
 * it as a broken reply and dropped the channel; the gateway's HTTP parser
 * takes any method token up to the 8 KiB request line while the answerer's
 * limit is 64 bytes, so four requests with a 65-byte method left no
 * channel, and every later decision of the run denied.) */
static void test_overlong_method_keeps_channels(void)
{
	struct fixture fx;
	struct channels ch;
	struct gw_link_server *srv = NULL;
	struct gw_link *link = NULL;
	struct gw_decider ld, *d = &ld;
	struct gw_verdict v;
	char *method = repeat('M', 65);

	if (!fixture_open(&fx, GW_TEST_POLICY) || !channels_open(&ch, GW_LINK_CHANNELS) ||
	    gw_link_server_start(&fx.dec, ch.sup, GW_LINK_CHANNELS, &srv) != 0 ||
	    gw_link_new(ch.gw, GW_LINK_CHANNELS, &link) != 0) {
		test_failed++;
		return;
	}
	gw_decider_link(d, link);
	const struct gw_http_input h = { "api.bound.test", 443, method, "/", 0, true, NULL };
	for (int i = 0; i < GW_LINK_CHANNELS; i++) {
		CHECK(gw_decide_http(d, &h, &v) != 0 && !v.allow);
		gw_verdict_clear(&v);
	}
	/* allowed (rc 0) */
	int rc = gw_decide_connect(d, "api.bound.test", 443, NULL, &v);
	CHECK_EQ_INT(rc, 0);
	CHECK(v.allow);
	if (v.allow)
		gw_release(d, &v);
	gw_verdict_clear(&v);
	gw_link_free(link);
	gw_link_server_stop(srv);
	free(method);
	fixture_close(&fx);
}

/* A rule's @id is not bounded by the policy language: a 300-byte one
 * crosses the link both ways (it once was refused past 256 bytes: -EPROTO,
 * "<internal-fault>" instead of the rule, the channel dropped, and the
 * refusal record that names it refused). */
static void test_long_rule_id(void)
{
	char id[301];
	memset(id, 'r', 300);
	id[300] = '\0';
	char *text = malloc(1024);
	if (text == NULL)
		abort();
	snprintf(text, 1024,
		 "@id(\"%s\")\n"
		 "forbid (principal, action == Box::Action::\"net:connect\", resource)\n"
		 "when { context.input.host == \"long.test\" };\n"
		 "@id(\"all\")\n"
		 "permit (principal, action == Box::Action::\"net:connect\", resource);\n",
		 id);
	struct fixture fx;
	struct channels ch;
	struct gw_link_server *srv = NULL;
	struct gw_link *link = NULL;
	struct gw_decider ld, *d = &ld;
	struct gw_verdict v;

	if (!fixture_open(&fx, text) || !channels_open(&ch, 1) ||
	    gw_link_server_start(&fx.dec, ch.sup, 1, &srv) != 0 ||
	    gw_link_new(ch.gw, 1, &link) != 0) {
		test_failed++;
		free(text);
		return;
	}
	/* locally the denial names the rule: the policy is fine */
	CHECK(gw_decide_connect(&fx.dec, "long.test", 443, NULL, &v) == 0 && !v.allow);
	CHECK_EQ_STR(gw_verdict_rule(&v), id);
	gw_verdict_clear(&v);

	gw_decider_link(d, link);
	/* rc 0, the rule named */
	CHECK_EQ_INT(gw_decide_connect(d, "long.test", 443, NULL, &v), 0);
	CHECK(!v.allow);
	CHECK_EQ_STR(gw_verdict_rule(&v), id);
	gw_verdict_clear(&v);
	/* expected: the channel is still there, an allowed request allowed */
	CHECK_EQ_INT(gw_decide_connect(d, "short.test", 443, NULL, &v), 0);
	CHECK(v.allow);
	if (v.allow)
		gw_release(d, &v);
	gw_verdict_clear(&v);
	gw_link_free(link);
	gw_link_server_stop(srv);

	/* the refusal that follows such a denial is recorded */
	uint64_t ev = events(fx.mon);
	struct frame f = { 0 };
	frame_begin(&f, OP_REFUSE);
	gw_put_u8(&f.w, 0);
	put_connect(&f.w, "long.test", 443, 0, NULL);
	f_refuse_tail(&f, 0, "forbidden", id, "policy denied this operation");
	struct reply r = answer_frame(&fx.dec, &f, false);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_INT(events(fx.mon), ev + 1);
	free(f.b);
	free(text);
	fixture_close(&fx);
}

/* The correlation a frame carries reaches the decision's record: the
 * request id as strands.box.request.id, a valid traceparent as the trace;
 * a malformed one decides nothing. */
static void test_correlation(void)
{
	struct fixture fx;
	struct frame f = { 0 };
	char path[] = "/tmp/cairn-link-records-XXXXXX", err[256];

	if (!fixture_open(&fx, GW_TEST_POLICY) || mkstemp(path) < 0) {
		test_failed++;
		return;
	}
	const struct tm_file_target t = { NULL, path, -1, TM_SIG_DENY | TM_SIG_PERMIT };
	const struct tm_config cfg = { .box_id = "box-0000000000000001", .n_files = 1, .files = &t,
				       .live_fd = -1 };
	struct tm_collector *tm = NULL;
	CHECK_EQ_INT(tm_collector_open(&cfg, &tm, err, sizeof(err)), 0);
	gw_decider_local(&fx.dec, fx.mon, fx.eng, tm);

	/* a denied connect before DNS (recorded), with the caller's trace */
	frame_begin(&f, OP_CONNECT);
	gw_put_str(&f.w, "other.test");
	gw_put_u32(&f.w, 443);
	gw_put_u8(&f.w, 0);
	gw_put_str(&f.w, "");
	gw_put_str(&f.w, "egress-7-8-9");
	gw_put_str(&f.w, "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01");
	struct reply r = answer(&fx.dec, f.b, f.w.n, true);
	CHECK(r.ok && r.allow == 0);
	reply_clear(&r);
	/* a permitted connect before DNS: Box records nothing */
	frame_begin(&f, OP_CONNECT);
	gw_put_str(&f.w, "api.bound.test");
	gw_put_u32(&f.w, 443);
	gw_put_u8(&f.w, 0);
	gw_put_str(&f.w, "");
	gw_put_str(&f.w, "egress-7-8-9");
	gw_put_str(&f.w, "");
	r = answer(&fx.dec, f.b, f.w.n, true);
	CHECK(r.ok && r.allow == 1);
	reply_clear(&r);
	/* control characters, and an id past 256 bytes: -EPROTO, nothing decided */
	uint64_t before = events(fx.mon);
	static const char *const bad[][2] = { { "egress\x01", "" }, { "", "00-\x7f" } };
	for (size_t i = 0; i < 2; i++) {
		frame_begin(&f, OP_CONNECT);
		gw_put_str(&f.w, "other.test");
		gw_put_u32(&f.w, 443);
		gw_put_u8(&f.w, 0);
		gw_put_str(&f.w, "");
		gw_put_str(&f.w, bad[i][0]);
		gw_put_str(&f.w, bad[i][1]);
		r = answer(&fx.dec, f.b, f.w.n, false);
		CHECK_EQ_INT(r.rc, -EPROTO);
		reply_clear(&r);
	}
	char id[300];
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	f_http(&f, "api.bound.test", 443, "GET", "/", 0, 1);
	f.w.n -= 8;                     /* the two empty strings put_http ended with */
	gw_put_str(&f.w, id);
	gw_put_str(&f.w, "");
	r = answer(&fx.dec, f.b, f.w.n, false);
	CHECK_EQ_INT(r.rc, -EPROTO);
	reply_clear(&r);
	CHECK_EQ_INT(events(fx.mon), before);

	CHECK_EQ_INT(tm_collector_close(tm, err, sizeof(err)), 0);
	size_t n;
	char *text = test_read_file(path, &n);
	CHECK(text != NULL);
	if (text != NULL) {
		CHECK(strstr(text, "\"strands.box.request.id\",\"value\":{\"stringValue\":"
				   "\"egress-7-8-9\"}") != NULL);
		CHECK(strstr(text, "\"traceId\":\"0123456789abcdef0123456789abcdef\"") != NULL);
		CHECK(strstr(text, "\"resource\",\"value\":{\"stringValue\":\"other.test:443\"}") ||
		      strstr(text, "other.test:443") != NULL);
		CHECK(strstr(text, "api.bound.test") == NULL);      /* the permit before DNS */
		CHECK(strstr(text, "\"strands.box.policy.reason\",\"value\":{\"stringValue\":"
				   "\"no permit matched\"}") != NULL);
	}
	free(text);
	unlink(path);
	free(f.b);
	fixture_close(&fx);
}

/* A memfd holding text, sealed with seals (0: none). */
static int memfd_of(const char *text, int seals)
{
	int fd = memfd_create("test-relay", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals) != 0))
		abort();
	return fd;
}

/* OP_RELAY answered with fd: its rc. */
static int32_t relay_rc(struct gw_decider *d, uint32_t op, uint32_t kind, uint64_t jl, uint64_t pl,
			int fd)
{
	static unsigned char io[GW_LINK_FRAME_MAX];
	struct gw_wire w;
	gw_wire_init(&w, io, sizeof(io));
	gw_put_u32(&w, op);
	if (op == OP_RELAY) {
		gw_put_u32(&w, kind);
		gw_put_u64(&w, jl);
		gw_put_u64(&w, pl);
	}
	size_t n = gw_link_answer_fd(d, io, w.n, sizeof(io), fd);
	gw_wire_from(&w, io, n);
	int32_t rc = (int32_t)gw_get_u32(&w);
	if (fd >= 0)
		close(fd);
	return w.bad ? -99999 : rc;
}

/* An agent payload crosses in a sealed memfd: over a real channel it
 * reaches the collector's file once, as written; a memfd that is not
 * sealed, whose size is not the frame's, whose JSON is not one line, a
 * descriptor on another op, or none on OP_RELAY: -EPROTO, nothing written. */
static void test_relay(void)
{
	struct fixture fx;
	struct channels ch;
	struct gw_link *l = NULL;
	struct gw_link_server *srv = NULL;
	char path[] = "/tmp/cairn-link-relay-XXXXXX", err[256];
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

	if (!fixture_open(&fx, GW_TEST_POLICY) || mkstemp(path) < 0 || !channels_open(&ch, 1)) {
		test_failed++;
		return;
	}
	const struct tm_file_target t = { NULL, path, -1, TM_SIG_DENY | TM_SIG_TRACE };
	const struct tm_config cfg = { .box_id = "box-0000000000000001", .n_files = 1, .files = &t,
				       .live_fd = -1 };
	struct tm_collector *tm = NULL;
	CHECK_EQ_INT(tm_collector_open(&cfg, &tm, err, sizeof(err)), 0);
	gw_decider_local(&fx.dec, fx.mon, fx.eng, tm);
	CHECK_EQ_INT(gw_link_server_start(&fx.dec, ch.sup, 1, &srv), 0);
	CHECK_EQ_INT(gw_link_new(ch.gw, 1, &l), 0);
	struct gw_decider gd;
	gw_decider_link(&gd, l);

	static const char good[] = "{\"resourceSpans\":[{\"good\":1}]}\n";
	struct tm_relay_out o = { 0 };
	tm_buf_put(&o.json, good, strlen(good));
	tm_buf_put(&o.pb, "\x0a\x00", 2);
	CHECK_EQ_INT(gw_relay(&gd, TM_RELAY_TRACES, &o), 0);
	tm_relay_out_free(&o);
	/* two lines, no final newline: the supervisor refuses; the channel stays */
	tm_buf_put(&o.json, "{\"a\":1}\n{\"b\":2}\n", 16);
	CHECK_EQ_INT(gw_relay(&gd, TM_RELAY_LOGS, &o), -EPROTO);
	tm_relay_out_free(&o);
	tm_buf_put(&o.json, "{\"c\":3}", 7);
	CHECK_EQ_INT(gw_relay(&gd, TM_RELAY_LOGS, &o), -EPROTO);
	tm_relay_out_free(&o);
	CHECK_EQ_INT(gw_relay(&gd, TM_RELAY_LOGS, &o), -E2BIG);        /* no line at all */
	CHECK_EQ_INT(gw_sync(&gd), 0);                                  /* still answering */
	gw_link_free(l);
	gw_link_server_stop(srv);

	/* the supervisor's checks, frame by frame */
	static const char line[] = "{\"d\":4}\n";
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 8, 0, memfd_of(line, 0)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 8, 0, memfd_of(line, F_SEAL_SHRINK |
								      F_SEAL_GROW)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 7, 0, memfd_of(line, seals)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 8, 1, memfd_of(line, seals)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 3, 8, 0, memfd_of(line, seals)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 0, 8, memfd_of(line, seals)), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 8, 0, -1), -EPROTO);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_SYNC, 0, 0, 0, memfd_of(line, seals)), -EPROTO);
	int pfd[2];
	CHECK(pipe(pfd) == 0);          /* not a memfd: no seals to read */
	close(pfd[1]);
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 1, 8, 0, pfd[0]), -EPROTO);
	/* and a good one, the same way */
	CHECK_EQ_INT(relay_rc(&fx.dec, OP_RELAY, 2, 8, 0, memfd_of(line, seals)), 0);

	CHECK_EQ_INT(tm_collector_close(tm, err, sizeof(err)), 0);
	size_t n;
	char *text = test_read_file(path, &n);
	CHECK(text != NULL);
	if (text != NULL) {
		char *at = strstr(text, good);
		CHECK(at != NULL && strstr(at + 1, good) == NULL);
		CHECK(strstr(text, "{\"a\":1}") == NULL && strstr(text, "{\"c\":3}") == NULL);
		CHECK(strstr(text, line) != NULL);
	}
	free(text);
	unlink(path);
	fixture_close(&fx);
}

static const struct test_case tests[] = {
	{ "relay", test_relay },
	{ "correlation", test_correlation },
	{ "wire", test_wire },
	{ "answer_matches_local", test_answer_matches_local },
	{ "answer_malformed", test_answer_malformed },
	{ "channels", test_channels },
	{ "bad_replies", test_bad_replies },
	{ "frames_fds", test_frames_fds },
	{ "overlong_method", test_overlong_method_keeps_channels },
	{ "long_rule_id", test_long_rule_id },
};

TEST_MAIN(tests)
