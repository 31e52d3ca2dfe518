/* proxy.c - one client connection of the egress gateway (proxy.h).
 *
 * A connection is served by one thread in straight-line code: read a head,
 * decide, dial, forward, relay, and loop while both sides keep the
 * connection alive.  Every wait is bounded (gwio.c).  Memory is bounded per
 * connection whatever the bodies: the head parsers hold at most one head,
 * bodies pass through two fixed buffers, and nothing is kept between
 * requests but the parsers' small buffers and the two TLS sessions. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "decide.h"
#include "gwio.h"
#include "http.h"
#include "proxy.h"
#include "sigv4.h"

#define BUF 16384
#define FRAME (GW_CHUNK_SIZE_LINE + BUF + 2)

/* A read buffer in front of one side: bytes read but not yet consumed. */
struct rbuf {
	char *p;
	size_t off, len;
};

#define TRACEPARENT_MAX 512

struct conn {
	const struct gw_shared *sh;
	const struct gw_who *who;
	struct gw_io cli, up;
	struct rbuf cin, uin;
	struct gw_head *req, *resp;
	/* Body scratch, on the heap and only during an exchange: a thread's
	 * stack pages stay resident for the life of its connection, freed heap
	 * is shared, so an idle connection keeps neither. */
	char *piece;                    /* BUF: decoded body bytes */
	char *frame;                    /* FRAME: a chunk with its size line */
	/* the tunnel (after CONNECT) */
	bool tunnel;
	bool tunnel_tls;                /* intercepted; else plain HTTP through the tunnel */
	bool sni_mismatch;
	char t_host[GW_DEST_HOST_MAX + 1];
	uint16_t t_port;
	/* the upstream: where up is connected (or was, for a redial) */
	char u_host[GW_DEST_HOST_MAX + 1];
	uint16_t u_port;
	struct gw_dest_pin pin;
	size_t pin_at;                  /* the pinned entry dialled */
	bool have_pin;
	/* what joins this connection's records to the workload's telemetry
	 * (docs/records.md "Trace context") */
	char rid[80];                   /* egress-<pid>-<ns>-<seq>, one per connection */
	char tp[TRACEPARENT_MAX + 1];   /* the current request's traceparent, or "" */
	struct gw_corr corr;
};

/* ---- small helpers -------------------------------------------------------- */

/* Box's request id for egress: one per client connection, shared by the
 * connection's net:connect and http:request records. */
static void corr_init(struct conn *c)
{
	static uint64_t seq;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(c->rid, sizeof(c->rid), "egress-%d-%lld-%llu", (int)getpid(),
		 (long long)ts.tv_sec * 1000000000 + ts.tv_nsec,
		 (unsigned long long)__atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	c->tp[0] = '\0';
	c->corr = (struct gw_corr){ c->rid, c->tp };
}

/* The request's traceparent, as Box takes it: exactly one field, at most
 * 512 bytes of printable ASCII; otherwise none (the supervisor checks its
 * shape). */
static void corr_take(struct conn *c, const struct gw_msg *m)
{
	const struct gw_field *f = gw_msg_count(m, "traceparent") == 1
		? gw_msg_field(m, "traceparent", 0) : NULL;
	c->tp[0] = '\0';
	if (f == NULL || f->value.n > TRACEPARENT_MAX)
		return;
	for (size_t i = 0; i < f->value.n; i++)
		if (f->value.p[i] < 0x20 || f->value.p[i] > 0x7e)
			return;
	memcpy(c->tp, f->value.p, f->value.n);
	c->tp[f->value.n] = '\0';
}

static int rbuf_ready(struct rbuf *b)
{
	if (b->p == NULL && (b->p = malloc(BUF)) == NULL)
		return -ENOMEM;
	return 0;
}

static size_t rbuf_avail(const struct rbuf *b)
{
	return b->len - b->off;
}

/* Drop the buffer while nothing is in it: an idle connection keeps none. */
static void rbuf_trim(struct rbuf *b)
{
	if (b->p != NULL && rbuf_avail(b) == 0) {
		OPENSSL_cleanse(b->p, b->len);  /* it may have held a reflected secret */
		free(b->p);
		b->p = NULL;
		b->off = b->len = 0;
	}
}

/* Read more into b (which must be empty) from io. */
static ssize_t rbuf_fill(struct rbuf *b, struct gw_io *io, int timeout_ms)
{
	int rc = rbuf_ready(b);
	if (rc < 0)
		return rc;
	b->off = b->len = 0;
	ssize_t n = gw_io_read(io, b->p, BUF, timeout_ms);
	if (n > 0)
		b->len = (size_t)n;
	return n;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *strndup_str(struct gw_str s)
{
	char *p = malloc(s.n + 1);
	if (p) {
		memcpy(p, s.p ? s.p : "", s.n);
		p[s.n] = '\0';
	}
	return p;
}


/* Make the events an answer depends on durable before the answer leaves
 * (docs/egress.md "Durability").  A history that cannot sync refuses the
 * answer. */
static int durable(const struct conn *c)
{
	return gw_sync(c->sh->dec) == 0 ? 0 : -EIO;
}

/* The gateway's own answer, then the connection closes: Box's 403 with its
 * marker and a text body, or an empty-bodied status.  why (optional) goes
 * in x-cairn-reason so a user can see what a bare 400 or 502 was about. */
static void answer(struct conn *c, int status, const char *body, bool marker, const char *why)
{
	char head[1024], clean[256];
	size_t blen = body ? strlen(body) : 0;
	if (durable(c) < 0) {
		status = 503, body = NULL, blen = 0, marker = false;
		why = "the box's history could not be made durable";
	}
	/* why is ours (static texts, dest.c messages) but may quote a host:
	 * keep it printable ASCII so it cannot break the head */
	size_t k = 0;
	for (const char *p = why ? why : ""; *p && k < sizeof(clean) - 1; p++)
		clean[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	clean[k] = '\0';
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n%s%s%s%s%s"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, gw_status_reason(status),
			 marker ? "x-strands-box-egress: refused\r\n" : "",
			 blen ? "Content-Type: text/plain; charset=utf-8\r\n" : "",
			 k ? "x-cairn-reason: " : "", clean, k ? "\r\n" : "", blen);
	if (n > 0 && (size_t)n < sizeof(head) &&
	    gw_io_write(&c->cli, head, (size_t)n, GW_IO_MS) == 0 && blen)
		gw_io_write(&c->cli, body, blen, GW_IO_MS);
}

/* Every 403 is recorded as a refusal before it is answered, so the answer's
 * sync makes it durable with the rest (docs/egress.md "Refusals in the
 * history").  A record that fails leaves the refusal standing (and a
 * history that cannot be made durable turns the answer into 503).
 *
 * The policy denied net:connect: its refusal follows its ::request. */
static void deny_connect(struct conn *c, const struct gw_verdict *v, const char *host,
			 unsigned port, const char *ip)
{
	char body[8200];
	gw_denial_body(v, false, body, sizeof(body));
	gw_refuse_connect_corr(c->sh->dec, host, port, ip, &c->corr, v->ticket,
			       gw_verdict_cause(v), gw_verdict_rule(v), body);
	answer(c, 403, body, true, NULL);
}

/* ---- heads ---------------------------------------------------------------- */

/* Read one head into h.  1: complete; 0: the peer closed or stayed idle
 * before sending a byte (end quietly); <0: -EBADMSG (h says why),
 * -ETIMEDOUT (a head started and did not finish in time) or an I/O error. */
static int read_head(struct gw_io *io, struct rbuf *b, struct gw_head *h, int idle_ms)
{
	bool started = false;
	long long deadline = 0;
	for (;;) {
		if (rbuf_avail(b) > 0) {
			size_t used = 0;
			int r = gw_head_feed(h, b->p + b->off, rbuf_avail(b), &used);
			b->off += used;
			if (r != 0)
				return r;
			if (!started) {
				started = true;
				deadline = now_ms() + GW_HEAD_MS;
			}
		}
		int t = idle_ms;
		if (started) {
			long long left = deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			t = (int)left;
		}
		ssize_t n = rbuf_fill(b, io, t);
		if (n == 0)
			return started ? -ECONNRESET : 0;
		if (n < 0)
			return (!started && (n == -ETIMEDOUT || n == -ECONNRESET)) ? 0 : (int)n;
	}
}

/* A head that failed to parse: answer its status (400, 414, 431, 501, 505)
 * with an empty body, as Box does, and the reason beside it. */
static void answer_head_error(struct conn *c, struct gw_head *h, int rc)
{
	const char *reason = NULL;
	int status = rc == -ETIMEDOUT ? 408 : gw_head_error(h, &reason);
	if (rc == -ETIMEDOUT)
		reason = "the request head did not arrive in time";
	if (status == 0)
		return;         /* an I/O error: nobody to answer */
	answer(c, status, NULL, false, reason);
}

/* ---- the upstream ----------------------------------------------------------- */

/* Dial one pinned address within GW_DIAL_MS.  0 or -errno. */
static int dial(const struct gw_dest_pin_entry *e, int stop_fd, int *fdp)
{
	socklen_t len;
	const struct sockaddr *sa = gw_dest_addr_sa(&e->addr, &len);
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		int e2 = -errno;
		close(fd);
		return e2;
	}
	int r = gw_io_wait_fd(fd, POLLOUT, GW_DIAL_MS, stop_fd);
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (r < 0)
		soerr = -r;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		soerr = errno ? errno : EIO;
	if (soerr != 0) {
		close(fd);
		return -soerr;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

static const char *floor_text(char *buf, size_t len, const char *reason, const char *host,
			      unsigned port)
{
	bool v6 = strchr(host, ':') != NULL;
	/* "a loopback address", "an unspecified address", "the gateway's own port" */
	const char *article = strncmp(reason, "the ", 4) == 0 ? ""
			      : strchr("aeiou", reason[0]) ? "an " : "a ";
	snprintf(buf, len, "net:connect refused: '%s%s%s:%u' is %s%s, which the gateway's "
		 "destination floor never connects to", v6 ? "[" : "", host, v6 ? "]" : "", port,
		 article, reason);
	return buf;
}

/* The destination floor refused host:port (ip: the address, NULL for the
 * name); ticket is the net:connect decision it follows. */
static void refuse_floor(struct conn *c, const char *why, const char *host, unsigned port,
			 const char *ip, uint64_t ticket)
{
	char text[600];
	floor_text(text, sizeof(text), why, ip ? ip : host, port);
	gw_refuse_connect_corr(c->sh->dec, host, port, ip, &c->corr, ticket, "enforcement",
			       GW_GATE_FLOOR, text);
	answer(c, 403, text, true, NULL);
}

/* The per-address half of Box's order, from entry `from` of the pin:
 * floor, net:connect with ip, dial; a failed dial records ::error and goes
 * on to the next address.  0 connected (c->up), 1 refused (answered), or
 * -1 nothing could be reached (the caller answers 502). */
static int dial_pinned(struct conn *c, size_t from)
{
	const struct gw_shared *sh = c->sh;
	const struct gw_dest_pin_entry *e;
	for (size_t i = from; (e = gw_dest_pin_get(&c->pin, i)) != NULL; i++) {
		/* the floor, with a [gateway] hosts entry's loopback opt-in */
		const char *why = gw_dest_floor_pinned(&sh->floor, e);
		struct gw_verdict v;
		gw_decide_connect_corr(sh->dec, c->pin.host, c->pin.port, e->ip, &c->corr, &v);
		if (!v.allow) {
			deny_connect(c, &v, c->pin.host, c->pin.port, e->ip);
			gw_verdict_clear(&v);
			return 1;
		}
		if (why != NULL) {
			/* the permit's outcome (nothing connected), then why */
			gw_record_error(sh->dec, &v);
			refuse_floor(c, why, c->pin.host, c->pin.port, e->ip, v.ticket);
			gw_verdict_clear(&v);
			return 1;
		}
		int fd = -1;
		if (!gw_dest_pin_contains(&c->pin, &e->addr.u.sa) || dial(e, sh->stop_fd, &fd) < 0) {
			gw_record_error(sh->dec, &v);
			gw_verdict_clear(&v);
			continue;
		}
		gw_record_response(sh->dec, &v, -1);
		gw_verdict_clear(&v);
		gw_io_init(&c->up, fd, sh->stop_fd);
		c->pin_at = i;
		return 0;
	}
	return -1;
}

/* Box's order up to the dial: net:connect on host:port without ip (its
 * ::request is all that is recorded), the floor on the name, resolve once
 * into the pin, then dial_pinned.  0 connected, 1 refused (answered), -1
 * failed (answered 502). */
static int connect_upstream(struct conn *c, const char *host, uint16_t port)
{
	const struct gw_shared *sh = c->sh;
	struct gw_verdict v;
	gw_decide_connect_corr(sh->dec, host, port, NULL, &c->corr, &v);
	if (!v.allow) {
		deny_connect(c, &v, host, port, NULL);
		gw_verdict_clear(&v);
		return 1;
	}
	uint64_t ticket = v.ticket;
	gw_release(sh->dec, &v);
	gw_verdict_clear(&v);
	const char *why = gw_dest_floor_name(&sh->floor, host);
	if (why != NULL) {
		refuse_floor(c, why, host, port, NULL, ticket);
		return 1;
	}
	struct gw_dest_error derr;
	c->have_pin = false;
	if (gw_dest_pin_resolve(&c->pin, host, port, sh->cfg->gateway.hosts,
				sh->cfg->gateway.n_hosts, &derr) != 0) {
		answer(c, 502, NULL, false, derr.msg);
		return -1;
	}
	c->have_pin = true;
	snprintf(c->u_host, sizeof(c->u_host), "%s", host);
	c->u_port = port;
	int r = dial_pinned(c, 0);
	if (r < 0)
		answer(c, 502, NULL, false, "no address of the destination accepted a connection");
	return r;
}

/* An idle upstream that has closed (or sent something unasked) is stale. */
static bool upstream_stale(struct conn *c)
{
	if (c->up.fd < 0 || c->up.eof || rbuf_avail(&c->uin) > 0)
		return true;
	struct pollfd p = { .fd = c->up.fd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}

static void upstream_close(struct conn *c, bool graceful)
{
	gw_io_close(&c->up, graceful, graceful ? 100 : 0);
	c->uin.off = c->uin.len = 0;
	rbuf_trim(&c->uin);
}

/* ---- bodies ----------------------------------------------------------------- */

/* A body being read from one side, decoded. */
struct body_in {
	enum gw_body kind;
	uint64_t left;                  /* GW_BODY_LENGTH */
	struct gw_chunked ch;           /* GW_BODY_CHUNKED */
	bool done;
	uint64_t bytes;
};

static void body_in_init(struct body_in *b, const struct gw_msg *m)
{
	memset(b, 0, sizeof(*b));
	b->kind = m->body;
	b->left = m->content_length;
	gw_chunked_init(&b->ch, m->response);
	b->done = m->body == GW_BODY_NONE || (m->body == GW_BODY_LENGTH && m->content_length == 0);
}

/* Decode body bytes already buffered in rb into out[0, cap), without
 * reading: *n bytes.  0, or -EBADMSG (a bad chunked body). */
static int body_take(struct body_in *b, struct rbuf *rb, char *out, size_t cap, size_t *n)
{
	size_t avail = rbuf_avail(rb);
	*n = 0;
	if (b->done || avail == 0)
		return 0;
	switch (b->kind) {
	case GW_BODY_LENGTH: {
		size_t k = avail < cap ? avail : cap;
		if (k > b->left)
			k = (size_t)b->left;
		memcpy(out, rb->p + rb->off, k);
		rb->off += k;
		b->left -= k;
		*n = k;
		b->done = b->left == 0;
		break;
	}
	case GW_BODY_CHUNKED: {
		size_t used = 0, produced = 0;
		int r = gw_chunked_feed(&b->ch, rb->p + rb->off, avail, &used, out, cap, &produced);
		rb->off += used;
		*n = produced;
		if (r < 0)
			return -EBADMSG;
		b->done = r == 1;
		break;
	}
	case GW_BODY_CLOSE:
	case GW_BODY_TUNNEL: {
		size_t k = avail < cap ? avail : cap;
		memcpy(out, rb->p + rb->off, k);
		rb->off += k;
		*n = k;
		break;
	}
	default:
		b->done = true;
	}
	b->bytes += *n;
	return 0;
}

/* Read and decode the next piece: >0 bytes in out, 0 when the body ended,
 * <0 an error (-EBADMSG, -ECONNRESET for a body cut short, I/O errors). */
static ssize_t body_read(struct body_in *b, struct rbuf *rb, struct gw_io *io, char *out,
			 size_t cap, int timeout_ms)
{
	for (;;) {
		size_t n;
		if (b->done)
			return 0;
		if (body_take(b, rb, out, cap, &n) < 0)
			return -EBADMSG;
		if (n > 0)
			return (ssize_t)n;
		if (b->done)
			return 0;
		ssize_t r = rbuf_fill(rb, io, timeout_ms);
		if (r == 0) {
			if (b->kind == GW_BODY_CLOSE) {
				b->done = true;
				return 0;
			}
			return -ECONNRESET;
		}
		if (r < 0)
			return r;
	}
}

/* A body being written to one side, framed. */
struct body_out {
	struct gw_io *io;
	char *frame;                    /* FRAME bytes of scratch (chunked only) */
	bool chunked;                   /* re-chunk (else the bytes go as they are) */
	uint64_t bytes;
};

static int body_write(struct body_out *o, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	o->bytes += n;
	if (!o->chunked)
		return gw_io_write(o->io, p, n, GW_IO_MS);
	/* one write per chunk: size line, data and CRLF in one TLS record */
	char *frame = o->frame;
	while (n > 0) {
		size_t k = n < BUF ? n : BUF;
		size_t h = gw_chunk_size_line(frame, k);
		memcpy(frame + h, p, k);
		memcpy(frame + h + k, "\r\n", 2);
		int r = gw_io_write(o->io, frame, h + k + 2, GW_IO_MS);
		if (r < 0)
			return r;
		p = (const char *)p + k;
		n -= k;
	}
	return 0;
}

static int body_end(struct body_out *o)
{
	return o->chunked ? gw_io_write(o->io, "0\r\n\r\n", 5, GW_IO_MS) : 0;
}

static int scrub_emit(void *ctx, const void *p, size_t n)
{
	return body_write(ctx, p, n);
}

/* ---- one request ------------------------------------------------------------ */

struct exchange {
	const struct gw_msg *m;
	char *method, *path, *query, *canon;
	char host[GW_DEST_HOST_MAX + 1];
	uint16_t port;
	bool intercepted;
	int64_t offered;                /* body_bytes as the policy is (or would be) offered */
	struct gw_hdrs hdrs;            /* the end-to-end fields, as injection leaves them */
	struct gw_cred_result cred;
	bool cred_applied;
	char *body;                     /* a body read ahead (to be signed, or measured) */
	size_t body_len, body_cap;      /* body_cap is reserved from the gateway's budget */
	bool body_buffered;             /* body holds the whole body */
	bool continued;                 /* the gateway sent the workload its 100 Continue */
	struct gw_verdict v;
	bool decided;                   /* v holds a permit waiting for its outcome */
	bool replied;                   /* the final response head arrived */
	bool up_close;                  /* the upstream connection ends with this request */
	bool recorded;
};

/* Wipe and free a body read ahead, and return its budget.  body_len stays:
 * it is what went upstream. */
static void body_release(const struct gw_shared *sh, struct exchange *x)
{
	if (x->body) {
		OPENSSL_cleanse(x->body, x->body_len);
		free(x->body);
		atomic_fetch_sub(sh->buffered, x->body_cap);
		x->body = NULL;
		x->body_cap = 0;
	}
}

static void exchange_clear(const struct gw_shared *sh, struct exchange *x)
{
	free(x->method);
	free(x->path);
	free(x->query);
	free(x->canon);
	gw_hdrs_clear(&x->hdrs);
	if (x->cred_applied)
		gw_cred_result_clear(&x->cred);
	body_release(sh, x);
	gw_verdict_clear(&x->v);
}

/* The ::response once the reply was delivered, its input.body_bytes the
 * request bytes that reached the upstream (Box: the offer on ::request, the
 * delivered size on ::response - an upload budget sums these).  A refused
 * patch must not leave the permit pending: record without it. */
static void record_delivered(struct conn *c, struct exchange *x, int status, uint64_t sent)
{
	gw_record_delivered(c->sh->dec, &x->v, status, sent);
	x->recorded = true;
}

static void record_error(struct conn *c, struct exchange *x)
{
	if (x->decided && !x->recorded) {
		gw_record_error(c->sh->dec, &x->v);
		x->recorded = true;
	}
}

/* The gateway refused this request (the policy's verdict, or a check of its
 * own): its refusal recorded, after the decision named by ticket (0: none),
 * then the 403 with the marker. */
static void refuse_http(struct conn *c, const struct exchange *x, uint64_t ticket,
			const char *cause, const char *rule, const char *body, const char *why)
{
	const struct gw_http_input h = { x->host, x->port, x->method, x->canon, x->offered,
					 x->intercepted, &c->corr };
	gw_refuse_http(c->sh->dec, &h, ticket, cause, rule, body);
	answer(c, 403, body, true, why);
}

static void deny_http(struct conn *c, const struct exchange *x)
{
	char body[8200];
	gw_denial_body(&x->v, true, body, sizeof(body));
	refuse_http(c, x, x->v.ticket, gw_verdict_cause(&x->v), gw_verdict_rule(&x->v), body,
		    NULL);
}

/* A refusal by the credential leg: after the permit's ::error when the
 * request was decided (a signed route signs after the policy). */
static void refuse_cred(struct conn *c, struct exchange *x, const char *body)
{
	record_error(c, x);
	refuse_http(c, x, x->decided ? x->v.ticket : 0, "enforcement", GW_GATE_EGRESS, body, NULL);
}

static bool eq_ci(struct gw_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && strncasecmp(s.p, lit, n) == 0;
}

/* The end-to-end fields to forward: hop-by-hop ones, framing and Host are
 * the gateway's to write. */
static int collect_fields(const struct gw_msg *m, struct gw_hdrs *out, bool response)
{
	for (size_t i = 0; i < m->nfields; i++) {
		const struct gw_field *f = &m->fields[i];
		/* A response without a body (to HEAD, 204, 304) keeps its
		 * Content-Length: it describes the representation, not framing. */
		bool framing_cl = eq_ci(f->name, "content-length") &&
				  !(response && m->body == GW_BODY_NONE);
		if (gw_msg_is_hop_by_hop(m, f->name) || framing_cl ||
		    eq_ci(f->name, "transfer-encoding") || (!response && eq_ci(f->name, "host")) ||
		    (!response && eq_ci(f->name, "expect")) ||
		    (response && eq_ci(f->name, "x-strands-box-egress")))
			continue;
		int r = gw_hdrs_add(out, f->name.p, f->name.n, f->value.p, f->value.n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* host[:port] for a Host field, the port omitted when it is the scheme's. */
static void host_field(char *buf, size_t len, const char *host, uint16_t port, bool tls)
{
	bool v6 = strchr(host, ':') != NULL;
	if (port == (tls ? 443 : 80))
		snprintf(buf, len, v6 ? "[%s]" : "%s", host);
	else
		snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

static struct gw_str str_of(const char *s)
{
	return (struct gw_str){ s, s ? strlen(s) : 0 };
}

/* Reserve n more bytes of the gateway's budget for bodies read ahead. */
static bool budget_take(const struct gw_shared *sh, size_t n)
{
	size_t cur = atomic_load(sh->buffered);
	do {
		if (cur + n > GW_BUFFERED_MAX || cur + n < cur)
			return false;
	} while (!atomic_compare_exchange_weak(sh->buffered, &cur, cur + n));
	return true;
}

/* Read the request body into x->body until it ends or holds limit bytes
 * (x->body_buffered says which).  The memory comes from the gateway's
 * budget, so 256 connections cannot make the supervisor hold 256 bodies.
 * 0, or 1 answered (the body was malformed or cut short; the budget is
 * spent: 503), or <0 (answered 500). */
static int read_ahead(struct conn *c, struct exchange *x, struct body_in *bi, size_t limit)
{
	const struct gw_shared *sh = c->sh;
	char *piece = c->piece;
	while (x->body_len < limit) {
		size_t want = limit - x->body_len < BUF ? limit - x->body_len : BUF;
		ssize_t n = body_read(bi, &c->cin, &c->cli, piece, want, GW_IO_MS);
		if (n == 0)
			break;
		if (n < 0) {
			answer(c, 400, NULL, false, "the request body ended early or was malformed");
			return 1;
		}
		if (x->body_len + (size_t)n > x->body_cap) {
			size_t nc = x->body_cap ? x->body_cap * 2 : 65536;
			while (nc < x->body_len + (size_t)n)
				nc *= 2;
			/* while growing, both buffers are live: reserve the new one
			 * whole, give the old one back after the copy */
			if (!budget_take(sh, nc)) {
				answer(c, 503, NULL, false, "the gateway's buffer for bodies read ahead "
				       "is full; retry");
				return 1;
			}
			char *nb = malloc(nc);
			if (nb == NULL) {
				atomic_fetch_sub(sh->buffered, nc);
				answer(c, 500, NULL, false, "out of memory");
				return -ENOMEM;
			}
			if (x->body) {
				memcpy(nb, x->body, x->body_len);
				OPENSSL_cleanse(x->body, x->body_len);
				free(x->body);
				atomic_fetch_sub(sh->buffered, x->body_cap);
			}
			x->body = nb;
			x->body_cap = nc;
		}
		memcpy(x->body + x->body_len, piece, (size_t)n);
		x->body_len += (size_t)n;
	}
	if (x->body_len >= limit && !bi->done) {
		/* at the limit: the body ends here or goes on */
		size_t k;
		if (body_take(bi, &c->cin, piece, 0, &k) < 0) {
			answer(c, 400, NULL, false, "malformed chunked request body");
			return 1;
		}
	}
	x->body_buffered = bi->done;
	return 0;
}

/* The credential leg (docs/egress.md "Credentials").  0 go on, 1 refused (answered),
 * <0 fault (answered). */
static int apply_credentials(struct conn *c, struct exchange *x, bool signed_route,
			     struct body_in *bi)
{
	const struct gw_shared *sh = c->sh;
	char err[512];
	char *key_id = NULL, *secret = NULL, *token = NULL;
	char hash[65];
	struct gw_cred_req req = {
		.host = x->host, .port = x->port, .tls = x->intercepted, .method = x->method,
		.path = x->path, .query = x->query, .hdrs = &x->hdrs, .scope = c->who->scope,
		.now = time(NULL),
	};
	if (signed_route && x->intercepted) {
		long route = gw_cred_route_for(sh->creds, x->host, x->port, x->canon);
		const struct box_secret *sec = gw_cred_route_secret(sh->creds, (size_t)route);
		char *service = NULL, *region = NULL;
		bool s3 = gw_sigv4_service_region(x->host, &service, &region) == 0 &&
			  strcmp(service, "s3") == 0;
		free(service);
		free(region);
		if (!s3 || bi->kind != GW_BODY_NONE) {
			int r = x->body_buffered ? 0 : read_ahead(c, x, bi, GW_SIGN_MAX);
			if (r != 0)
				return r;
			if (!x->body_buffered) {
				answer(c, 413, NULL, false, "a body to be signed is larger than 16 MiB");
				return 1;
			}
			gw_sigv4_payload_hash(x->body ? x->body : "", x->body_len, hash);
			req.payload_hash = hash;
		}
		if (sec->scheme == BOX_SECRET_AWS &&
		    gw_cred_aws_profile_files(sh->aws_credentials, sh->aws_config, sec->ref_name,
					      &key_id, &secret, &token, err, sizeof(err)) != 0) {
			fprintf(stderr, "cairn: gateway: egress route %s: %s\n",
				gw_cred_route_name(sh->creds, (size_t)route), err);
			refuse_cred(c, x, GW_CRED_BLOCKED);
			return 1;
		}
		req.key_id = key_id, req.secret_key = secret, req.session_token = token;
	}
	int rc = gw_cred_apply(sh->creds, &req, &x->cred, err, sizeof(err));
	gw_cred_wipe_free(key_id);
	gw_cred_wipe_free(secret);
	gw_cred_wipe_free(token);
	if (rc == 0) {
		x->cred_applied = true;
		if (x->cred.advisory && sh->warn_always)
			fprintf(stderr, "cairn: gateway: egress route %s: credential attached to a "
				"request without its placeholder (inject = \"always\")\n",
				gw_cred_route_name(sh->creds, (size_t)x->cred.route));
		return 0;
	}
	if (rc == 1)
		return 0;
	bool plaintext = rc == -EACCES && !x->intercepted && x->cred.route >= 0;
	refuse_cred(c, x, plaintext ? GW_CRED_PLAINTEXT : GW_CRED_BLOCKED);
	return 1;
}

/* Write the request head upstream.  0 or <0. */
static int send_request_head(struct conn *c, struct exchange *x, const struct body_in *bi)
{
	const struct gw_msg *m = x->m;
	size_t cap = m->head_len + 4096;
	for (size_t i = 0; i < x->hdrs.n; i++)
		cap += x->hdrs.v[i].nlen + x->hdrs.v[i].vlen + 4;
	if (x->cred.query)
		cap += strlen(x->cred.query);
	char *buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	struct gw_writer w;
	char hostf[GW_DEST_HOST_MAX + 16];
	gw_writer_init(&w, buf, cap);
	struct gw_str query = m->target.query;
	if (x->cred_applied && x->cred.query != NULL)
		query = x->cred.query[0] ? str_of(x->cred.query) : (struct gw_str){ NULL, 0 };
	gw_writer_request_line(&w, m->method, str_of(x->path), query);
	/* SigV4 signs a Host of its own and puts it in the list */
	if (gw_hdrs_get(&x->hdrs, "host") == NULL) {
		host_field(hostf, sizeof(hostf), x->host, x->port, x->intercepted);
		gw_writer_field(&w, GW_STR("Host"), str_of(hostf));
	}
	for (size_t i = 0; i < x->hdrs.n; i++)
		gw_writer_field(&w, (struct gw_str){ x->hdrs.v[i].name, x->hdrs.v[i].nlen },
				(struct gw_str){ x->hdrs.v[i].value, x->hdrs.v[i].vlen });
	if (m->upgrade_websocket) {
		gw_writer_field(&w, GW_STR("Connection"), GW_STR("Upgrade"));
		gw_writer_field(&w, GW_STR("Upgrade"), GW_STR("websocket"));
	} else if (x->up_close) {
		gw_writer_field(&w, GW_STR("Connection"), GW_STR("close"));
	}
	if (x->body_buffered) {
		if (x->body_len > 0 || bi->kind != GW_BODY_NONE)
			gw_writer_field_u64(&w, GW_STR("Content-Length"), x->body_len);
	} else if (m->body == GW_BODY_LENGTH) {
		gw_writer_field_u64(&w, GW_STR("Content-Length"), m->content_length);
		if (m->expect == GW_EXPECT_CONTINUE && m->content_length > 0 && !x->continued)
			gw_writer_field(&w, GW_STR("Expect"), GW_STR("100-continue"));
	} else if (m->body == GW_BODY_CHUNKED) {
		gw_writer_field(&w, GW_STR("Transfer-Encoding"), GW_STR("chunked"));
		if (m->expect == GW_EXPECT_CONTINUE && !x->continued)
			gw_writer_field(&w, GW_STR("Expect"), GW_STR("100-continue"));
	}
	size_t len = 0;
	int rc = gw_writer_finish(&w, &len);
	if (rc == 0)
		rc = gw_io_write(&c->up, buf, len, GW_IO_MS);
	if (x->cred_applied)
		OPENSSL_cleanse(buf, len ? len : cap);  /* it carried the credential */
	free(buf);
	return rc;
}

/* Forward a response head (final or interim) to the workload. */
static int send_response_head(struct conn *c, const struct gw_msg *r, struct gw_hdrs *fields,
			      const char *framing, bool close_after, bool upgrade, bool own_reason)
{
	size_t cap = r->head_len + 512;
	for (size_t i = 0; i < fields->n; i++)
		cap += fields->v[i].nlen + fields->v[i].vlen + 4;
	char *buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	struct gw_writer w;
	gw_writer_init(&w, buf, cap);
	/* on a scrubbed route the upstream's reason phrase is not relayed:
	 * it is free text that could echo the secret */
	gw_writer_status_line(&w, r->status, own_reason ? str_of(gw_status_reason(r->status)) : r->reason);
	for (size_t i = 0; i < fields->n; i++)
		gw_writer_field(&w, (struct gw_str){ fields->v[i].name, fields->v[i].nlen },
				(struct gw_str){ fields->v[i].value, fields->v[i].vlen });
	if (upgrade) {
		gw_writer_field(&w, GW_STR("Connection"), GW_STR("Upgrade"));
		gw_writer_field(&w, GW_STR("Upgrade"), GW_STR("websocket"));
	} else if (framing != NULL) {
		const char *colon = strchr(framing, ':');
		gw_writer_field(&w, (struct gw_str){ framing, (size_t)(colon - framing) },
				str_of(colon + 2));
	}
	if (close_after && !upgrade)
		gw_writer_field(&w, GW_STR("Connection"), GW_STR("close"));
	size_t len = 0;
	int rc = gw_writer_finish(&w, &len);
	if (rc == 0)
		rc = gw_io_write(&c->cli, buf, len, GW_IO_MS);
	free(buf);
	return rc;
}

/* Relay raw bytes both ways until either side ends (a WebSocket after 101). */
static void relay_tunnel(struct conn *c)
{
	char *buf = c->piece;
	/* bytes that arrived with the heads go first */
	if (rbuf_avail(&c->uin) > 0) {
		if (gw_io_write(&c->cli, c->uin.p + c->uin.off, rbuf_avail(&c->uin), GW_IO_MS) < 0)
			return;
		c->uin.off = c->uin.len;
	}
	if (rbuf_avail(&c->cin) > 0) {
		if (gw_io_write(&c->up, c->cin.p + c->cin.off, rbuf_avail(&c->cin), GW_IO_MS) < 0)
			return;
		c->cin.off = c->cin.len;
	}
	for (;;) {
		if (atomic_load(c->sh->stopping))
			return;
		bool rc_ = false, ru = false;
		if (gw_io_wait(&c->cli, &c->up, GW_TUNNEL_MS, &rc_, &ru) < 0)
			return;
		if (rc_) {
			ssize_t n = gw_io_read(&c->cli, buf, BUF, 0);
			if (n == 0 || (n < 0 && n != -ETIMEDOUT))
				return;
			if (n > 0 && gw_io_write(&c->up, buf, (size_t)n, GW_IO_MS) < 0)
				return;
		}
		if (ru) {
			ssize_t n = gw_io_read(&c->up, buf, BUF, 0);
			if (n == 0 || (n < 0 && n != -ETIMEDOUT))
				return;
			if (n > 0 && gw_io_write(&c->cli, buf, (size_t)n, GW_IO_MS) < 0)
				return;
		}
	}
}

/* The exchange after the request head went upstream: the request body and
 * the response head race (an upstream may answer early, or send 100
 * Continue); then the response body.  Returns whether the client
 * connection may carry another request. */
static bool run_exchange(struct conn *c, struct exchange *x, struct body_in *bi)
{
	const struct gw_shared *sh = c->sh;
	const struct gw_msg *m = x->m;
	struct body_out uo = { .io = &c->up, .frame = c->frame,
			       .chunked = m->body == GW_BODY_CHUNKED };
	char *piece = c->piece;
	int interim = 0;
	bool client_gone = false;
	bool scrubbing = x->cred_applied && x->cred.scrub;

	/* ---- request body and response head ---- */
	if (x->body_buffered) {
		if (x->body_len && gw_io_write(&c->up, x->body, x->body_len, GW_IO_MS) < 0)
			goto upstream_failed;
		bi->done = true;
	} else if (x->body_len > 0 && body_write(&uo, x->body, x->body_len) < 0) {
		goto upstream_failed;   /* the part read ahead, then the rest streams */
	}
	body_release(sh, x);            /* upstream has it: give the budget back now */
	gw_head_reset(c->resp);
	gw_head_set_request(c->resp, m->method);
	const struct gw_msg *r = NULL;
	for (;;) {
		/* body bytes already here go first */
		if (!bi->done && rbuf_avail(&c->cin) > 0) {
			size_t n;
			if (body_take(bi, &c->cin, piece, BUF, &n) < 0) {
				record_error(c, x);
				answer(c, 400, NULL, false, "malformed chunked request body");
				upstream_close(c, false);
				return false;
			}
			if (body_write(&uo, piece, n) < 0)
				goto upstream_failed;
			if (bi->done && body_end(&uo) < 0)
				goto upstream_failed;
			continue;
		}
		if (rbuf_avail(&c->uin) > 0) {
			size_t used = 0;
			int hr = gw_head_feed(c->resp, c->uin.p + c->uin.off, rbuf_avail(&c->uin), &used);
			c->uin.off += used;
			if (hr < 0)
				goto upstream_failed;
			if (hr == 1) {
				r = gw_head_msg(c->resp);
				if (r->status == 101 && !m->upgrade_websocket)
					goto upstream_failed;
				if (!r->interim)
					break;
				/* 1xx: relay it (100 Continue lets the body come), not
				 * to an HTTP/1.0 client (RFC 9110 §15.2), and scrubbed
				 * like the final head on a scrubbed route */
				if (++interim > GW_HTTP_INTERIM_MAX)
					goto upstream_failed;
				struct gw_hdrs f;
				struct gw_scrub *is = NULL;
				gw_hdrs_init(&f);
				int fr = collect_fields(r, &f, true);
				if (fr == 0 && scrubbing &&
				    (gw_cred_scrub_new(sh->creds, (size_t)x->cred.route, &is) != 0 ||
				     gw_scrub_headers(is, &f) < 0))
					fr = -ENOMEM;
				gw_scrub_free(is);
				if (fr == 0 && !client_gone && m->version == 11)
					fr = send_response_head(c, r, &f, NULL, false, false, scrubbing);
				gw_hdrs_clear(&f);
				if (fr < 0)
					client_gone = true;
				gw_head_reset(c->resp);
				gw_head_set_request(c->resp, m->method);
				continue;
			}
		}
		bool rc_ = false, ru = false;
		int w = gw_io_wait(&c->up, bi->done ? NULL : &c->cli, GW_IO_MS, &ru, &rc_);
		if (w < 0)
			goto upstream_failed;
		/* Readable is not "has data": a TLS peer's socket wakes for
		 * records that carry none (TLS 1.3 session tickets), so read
		 * without waiting and go back to the poll on nothing. */
		if (ru && rbuf_avail(&c->uin) == 0) {
			ssize_t n = rbuf_fill(&c->uin, &c->up, 0);
			if (n <= 0 && n != -ETIMEDOUT)
				goto upstream_failed;
		}
		if (rc_ && !bi->done && rbuf_avail(&c->cin) == 0) {
			ssize_t n = rbuf_fill(&c->cin, &c->cli, 0);
			if (n <= 0 && n != -ETIMEDOUT) {
				/* the workload stopped sending mid-body */
				record_error(c, x);
				upstream_close(c, false);
				return false;
			}
		}
	}

	/* ---- the final response head ---- */
	bool req_complete = bi->done;
	bool upgrade = r->status == 101;
	struct gw_hdrs f;
	gw_hdrs_init(&f);
	struct gw_scrub *scrub = NULL;
	bool has_body = r->body != GW_BODY_NONE &&
			!(r->body == GW_BODY_LENGTH && r->content_length == 0);
	if (collect_fields(r, &f, true) < 0) {
		gw_hdrs_clear(&f);
		goto upstream_failed;
	}
	/* The ::response is written once the reply was delivered, with the
	 * bytes delivered (a killed supervisor keeps it; the next sync makes it
	 * durable).  What this answer depends on - the permit - was synced
	 * while the request travelled. */
	x->replied = true;
	/* A reply the gateway will not relay: the exchange happened (the
	 * request went upstream and was answered, so its ::response carries the
	 * status and the bytes delivered, as Box records it before scrubbing),
	 * then the refusal the workload gets instead. */
	if (scrubbing && upgrade) {
		/* a relayed WebSocket could carry the secret back unscanned */
		gw_hdrs_clear(&f);
		record_delivered(c, x, r->status, x->body_buffered ? x->body_len : uo.bytes);
		refuse_http(c, x, x->v.ticket, "enforcement", GW_GATE_EGRESS,
			    GW_CRED_RESPONSE_BLOCKED, "no upgrade on a scrubbed route");
		upstream_close(c, false);
		return false;
	}
	if (scrubbing) {
		if (has_body && !gw_cred_response_encoding_ok(&f)) {
			gw_hdrs_clear(&f);
			record_delivered(c, x, r->status, x->body_buffered ? x->body_len : uo.bytes);
			refuse_http(c, x, x->v.ticket, "enforcement", GW_GATE_EGRESS,
				    GW_CRED_RESPONSE_BLOCKED, "a compressed response cannot be scrubbed");
			upstream_close(c, false);
			return false;
		}
		if (gw_cred_scrub_new(sh->creds, (size_t)x->cred.route, &scrub) != 0 ||
		    gw_scrub_headers(scrub, &f) < 0) {
			gw_scrub_free(scrub);
			gw_hdrs_clear(&f);
			answer(c, 502, NULL, false, "out of memory");
			upstream_close(c, false);
			return false;
		}
	}
	/* How the workload gets the body: as framed upstream, except that a
	 * body whose length changes (scrubbed) or is unknown (close-delimited)
	 * goes chunked to an HTTP/1.1 client, so its connection stays alive. */
	bool client_keep = gw_msg_keep_alive(m) && req_complete && !upgrade && !client_gone;
	const char *framing = NULL;
	struct body_out co = { .io = &c->cli, .frame = c->frame };
	char cl[48];
	if (has_body) {
		bool length_known = r->body == GW_BODY_LENGTH && scrub == NULL;
		if (length_known) {
			snprintf(cl, sizeof(cl), "Content-Length: %" PRIu64, r->content_length);
			framing = cl;
		} else if (m->version == 11) {
			framing = "Transfer-Encoding: chunked";
			co.chunked = true;
		} else {
			client_keep = false;            /* HTTP/1.0: the close ends the body */
		}
	} else if (r->body == GW_BODY_LENGTH) {
		framing = "Content-Length: 0";
	}
	int hr = send_response_head(c, r, &f, framing, !client_keep, upgrade, scrubbing);
	gw_hdrs_clear(&f);
	if (hr < 0) {
		gw_scrub_free(scrub);
		upstream_close(c, false);
		return false;
	}
	if (upgrade) {
		record_delivered(c, x, r->status, x->body_buffered ? x->body_len : uo.bytes);
		x->recorded = true;
		relay_tunnel(c);
		upstream_close(c, true);
		return false;
	}

	/* ---- the response body ---- */
	struct body_in ri;
	body_in_init(&ri, r);
	if (!has_body)
		ri.done = true;
	bool ok = true;
	for (;;) {
		/* a stream that never waits never sees the stop eventfd */
		if (atomic_load(sh->stopping)) {
			ok = false;
			break;
		}
		ssize_t n = body_read(&ri, &c->uin, &c->up, piece, BUF, GW_IO_MS);
		if (n == 0)
			break;
		if (n < 0) {
			ok = false;
			break;
		}
		int wr = scrub ? gw_scrub_feed(scrub, piece, (size_t)n, scrub_emit, &co)
			       : body_write(&co, piece, (size_t)n);
		if (wr < 0) {
			ok = false;
			client_keep = false;
			break;
		}
	}
	if (ok && scrub && gw_scrub_finish(scrub, scrub_emit, &co) < 0)
		ok = false;
	gw_scrub_free(scrub);
	if (ok && has_body && body_end(&co) < 0)
		ok = false;
	record_delivered(c, x, r->status, x->body_buffered ? x->body_len : uo.bytes);
	x->recorded = true;
	/* A body cut short: the workload must see the failure, not a shorter
	 * body that looks complete - so no terminating chunk, and the
	 * connection ends. */
	if (!ok)
		client_keep = false;
	bool up_keep = ok && req_complete && !x->up_close && gw_msg_keep_alive(r) &&
		       r->body != GW_BODY_CLOSE;
	if (!up_keep)
		upstream_close(c, ok);
	gw_head_reset(c->resp);
	rbuf_trim(&c->uin);
	return client_keep;

upstream_failed:;
	bool responded = x->replied;    /* a response was already under way: just end */
	record_error(c, x);
	if (!client_gone && !responded)
		answer(c, 502, NULL, false, "the upstream failed or sent a malformed response");
	upstream_close(c, false);
	return false;
}

/* The upstream for this request: the connection made at CONNECT (or for
 * the last request to the same destination), or a new one.  0 ready, 1
 * refused or failed (answered). */
static int ensure_upstream(struct conn *c, struct exchange *x)
{
	if (!c->tunnel) {
		if (c->up.fd >= 0 && (strcmp(c->u_host, x->host) != 0 || c->u_port != x->port ||
				      upstream_stale(c)))
			upstream_close(c, false);
		if (c->up.fd < 0)
			return connect_upstream(c, x->host, x->port) == 0 ? 0 : 1;
		return 0;
	}
	if (c->up.fd >= 0 && upstream_stale(c))
		upstream_close(c, false);
	if (c->up.fd < 0) {
		/* redial the address decided for this tunnel: decided again,
		 * never re-resolved */
		int r = dial_pinned(c, c->pin_at);
		if (r < 0)
			answer(c, 502, NULL, false, "the upstream could not be reached again");
		if (r != 0)
			return 1;
	}
	return 0;
}

static int upstream_tls(struct conn *c, struct exchange *x)
{
	char why[256];
	SSL_CTX *ctx;
	SSL *ssl = NULL;
	if (gw_upstream_ctx(c->sh->upstream, &ctx, why, sizeof(why)) != 0) {
		record_error(c, x);
		answer(c, 502, NULL, false, why);
		upstream_close(c, false);
		return 1;
	}
	ssl = SSL_new(ctx);
	if (ssl == NULL || gw_tls_client_prepare(ssl, c->t_host, why, sizeof(why)) != 0) {
		SSL_free(ssl);
		record_error(c, x);
		answer(c, 502, NULL, false, "upstream TLS could not be prepared");
		upstream_close(c, false);
		return 1;
	}
	if (gw_io_tls_connect(&c->up, ssl, GW_TLS_MS, why, sizeof(why)) != 0) {
		record_error(c, x);
		answer(c, 502, NULL, false, why);
		upstream_close(c, false);
		return 1;
	}
	return 0;
}

/* Serve one request whose head is in c->req.  Returns whether the client
 * connection may carry another. */
static bool serve_request(struct conn *c, const struct gw_msg *m)
{
	const struct gw_shared *sh = c->sh;
	struct exchange x = { .m = m, .intercepted = c->tunnel_tls };
	struct body_in bi;
	bool keep = false, misbound = false;
	corr_take(c, m);
	gw_hdrs_init(&x.hdrs);
	body_in_init(&bi, m);
	c->piece = malloc(BUF);
	c->frame = malloc(FRAME);
	if (c->piece == NULL || c->frame == NULL) {
		answer(c, 500, NULL, false, "out of memory");
		goto out;
	}

	if (c->tunnel) {
		/* the binding: the request's Host names the CONNECT destination
		 * (its port defaults to the scheme's: 443 under TLS, else 80) */
		struct gw_authority a = m->target.auth;
		const struct gw_field *hf = gw_msg_field(m, "host", 0);
		if (!c->tunnel_tls && (hf == NULL || gw_authority_parse(hf->value, 80, &a) != 0))
			a.port = 0;
		/* refused once the request is known well enough to record */
		misbound = c->sni_mismatch || strcmp(a.host, c->t_host) != 0 ||
			   a.port != c->t_port;
		snprintf(x.host, sizeof(x.host), "%s", c->t_host);
		x.port = c->t_port;
	} else {
		if (m->target.form != GW_FORM_ABSOLUTE) {
			answer(c, 400, NULL, false, m->target.form == GW_FORM_AUTHORITY
			       ? "CONNECT target on a non-CONNECT request"
			       : "a proxy request needs an absolute http:// URI");
			goto out;
		}
		struct gw_dest_host dh;
		struct gw_dest_error de;
		if (gw_dest_host_parse(m->target.auth.host, strlen(m->target.auth.host), &dh,
				       &de) != 0) {
			answer(c, 400, NULL, false, de.msg);
			goto out;
		}
		snprintf(x.host, sizeof(x.host), "%s", dh.name);
		x.port = m->target.auth.port;
	}
	if (m->expect == GW_EXPECT_OTHER) {
		answer(c, 417, NULL, false, "only the 100-continue expectation is supported");
		goto out;
	}
	x.method = strndup_str(m->method);
	x.path = strndup_str(m->target.path);
	x.query = m->target.query.p ? strndup_str(m->target.query) : NULL;
	x.canon = malloc(GW_PATH_CANON_MAX(m->target.path.n));
	size_t clen;
	if (!x.method || !x.path || (m->target.query.p && !x.query) || !x.canon) {
		answer(c, 500, NULL, false, "out of memory");
		goto out;
	}
	if (gw_path_canonical(m->target.path, x.canon, GW_PATH_CANON_MAX(m->target.path.n),
			      &clen) != 0) {
		answer(c, 400, NULL, false, "the request path has an invalid escape");
		goto out;
	}
	/* The upstream gets the path the policy judged: dot segments removed,
	 * '\' and other raw bytes escaped.  A server that reads '\' as '/'
	 * (or resolves "..\" itself) cannot be steered past a path rule. */
	free(x.path);
	if ((x.path = strdup(x.canon)) == NULL) {
		answer(c, 500, NULL, false, "out of memory");
		goto out;
	}
	/* before the read-ahead a chunked body's size is unknown */
	x.offered = m->body == GW_BODY_LENGTH ? (int64_t)m->content_length
		    : m->body == GW_BODY_CHUNKED ? INT64_MAX : 0;
	if (misbound) {
		refuse_http(c, &x, 0, "enforcement", GW_GATE_EGRESS, "request authority rejected",
			    c->sni_mismatch ? "the TLS SNI names another host"
					    : "Host is not the CONNECT target");
		goto out;
	}
	if (collect_fields(m, &x.hdrs, false) < 0) {
		answer(c, 400, NULL, false, "a request field could not be forwarded");
		goto out;
	}

	/* Box's order on the plain path: the connection's net:connect first */
	if (!c->tunnel && ensure_upstream(c, &x) != 0)
		goto out;

	long route = gw_cred_route_for(sh->creds, x.host, x.port, x.canon);
	const struct box_secret *sec = route >= 0 ? gw_cred_route_secret(sh->creds, (size_t)route)
						  : NULL;
	bool signed_route = sec && (sec->scheme == BOX_SECRET_AWS ||
				    sec->scheme == BOX_SECRET_CREDSD);
	/* Unsigned routes: the credential leg may refuse before the policy.
	 * Signed ones need the body first, so they sign after a permit. */
	if (!signed_route && apply_credentials(c, &x, false, &bi) != 0)
		goto out;

	int64_t offered = m->body == GW_BODY_LENGTH ? (int64_t)m->content_length : 0;
	if (m->body == GW_BODY_CHUNKED && signed_route && x.intercepted) {
		/* a body to be signed is read whole anyway: read it before the
		 * decision, so the policy sees its size */
		if (m->expect == GW_EXPECT_CONTINUE) {
			if (gw_io_write(&c->cli, "HTTP/1.1 100 Continue\r\n\r\n", 25, GW_IO_MS) < 0)
				goto out;
			x.continued = true;
		}
		if (read_ahead(c, &x, &bi, GW_SIGN_MAX) != 0)
			goto out;
		if (!x.body_buffered) {
			answer(c, 413, NULL, false, "a body to be signed is larger than 16 MiB");
			goto out;
		}
		offered = (int64_t)x.body_len;
	} else if (m->body == GW_BODY_CHUNKED && !signed_route) {
		/* A chunked body has no length to offer: read up to GW_PEEK_MAX
		 * of it first.  A body that ends there is offered at its size
		 * (and goes upstream with a Content-Length); a longer one is
		 * offered as INT64_MAX - unknown, and larger than any limit a
		 * rule sets, so size rules fail closed - and then streams. */
		if (m->expect == GW_EXPECT_CONTINUE) {
			if (gw_io_write(&c->cli, "HTTP/1.1 100 Continue\r\n\r\n", 25, GW_IO_MS) < 0)
				goto out;
			x.continued = true;
		}
		if (read_ahead(c, &x, &bi, GW_PEEK_MAX) != 0)
			goto out;
		offered = x.body_buffered ? (int64_t)x.body_len : INT64_MAX;
	}
	x.offered = offered;
	const struct gw_http_input hin = { x.host, x.port, x.method, x.canon, offered,
					   x.intercepted, &c->corr };
	gw_decide_http(sh->dec, &hin, &x.v);
	if (!x.v.allow) {
		deny_http(c, &x);
		goto out;
	}
	x.decided = true;
	if (signed_route) {
		if (!x.intercepted) {
			refuse_cred(c, &x, GW_CRED_PLAINTEXT);
			goto out;
		}
		if (m->expect == GW_EXPECT_CONTINUE && !x.continued && durable(c) == 0) {
			gw_io_write(&c->cli, "HTTP/1.1 100 Continue\r\n\r\n", 25, GW_IO_MS);
			x.continued = true;
		}
		if (apply_credentials(c, &x, true, &bi) != 0) {
			record_error(c, &x);
			goto out;
		}
	}
	if (c->tunnel) {
		if (ensure_upstream(c, &x) != 0) {
			record_error(c, &x);
			goto out;
		}
		if (c->tunnel_tls && c->up.ssl == NULL && upstream_tls(c, &x) != 0)
			goto out;
	}
	/* An upstream connection carries the next request only after a request
	 * without a body.  A server that answers without reading a body (and
	 * keeps the connection) would read those bytes as a request nobody
	 * decided; after a body the upstream is told to close, and is not
	 * reused.  Nor after the workload's own "Connection: close". */
	x.up_close = m->body != GW_BODY_NONE || !gw_msg_keep_alive(m);
	if (send_request_head(c, &x, &bi) < 0) {
		record_error(c, &x);
		answer(c, 502, NULL, false, "the request could not be sent upstream");
		upstream_close(c, false);
		goto out;
	}
	/* The permit becomes durable while the upstream works on the request:
	 * the fdatasync overlaps its round trip instead of adding to it, and
	 * nothing of the answer reaches the workload before it. */
	if (durable(c) < 0) {
		record_error(c, &x);
		answer(c, 503, NULL, false, "the box's history could not be made durable");
		upstream_close(c, false);
		goto out;
	}
	keep = run_exchange(c, &x, &bi);
out:
	record_error(c, &x);
	if (x.cred_applied && x.cred.scrub) {
		/* the raw upstream bytes may have held the secret before scrubbing */
		if (c->piece != NULL)
			OPENSSL_cleanse(c->piece, BUF);
		if (c->frame != NULL)
			OPENSSL_cleanse(c->frame, FRAME);
		if (c->uin.p != NULL)
			OPENSSL_cleanse(c->uin.p, BUF);
	}
	exchange_clear(sh, &x);
	free(c->piece);
	free(c->frame);
	c->piece = c->frame = NULL;
	return keep;
}

/* ---- CONNECT ----------------------------------------------------------------- */

/* Box's CONNECT order up to the tunnel, then TLS toward the workload with a
 * minted leaf, then requests until the connection ends. */
static void serve_connect(struct conn *c, const struct gw_msg *m)
{
	const struct gw_shared *sh = c->sh;
	struct gw_dest_host dh;
	struct gw_dest_error de;
	char why[256];

	if (m->target.form != GW_FORM_AUTHORITY) {
		answer(c, 400, NULL, false, "CONNECT needs a host:port target");
		return;
	}
	if (gw_dest_host_parse(m->target.auth.host, strlen(m->target.auth.host), &dh, &de) != 0) {
		answer(c, 400, NULL, false, de.msg);
		return;
	}
	if (m->body != GW_BODY_NONE || rbuf_avail(&c->cin) > 0) {
		answer(c, 400, NULL, false, "data after CONNECT before the tunnel was established");
		return;
	}
	/* Box: a CONNECT's net:connect records join no caller trace; the
	 * requests inside the tunnel bring their own */
	c->tp[0] = '\0';
	if (connect_upstream(c, dh.name, m->target.auth.port) != 0)
		return;
	/* The leaf is minted for the CONNECT host; a name the CA cannot put in
	 * a certificate ('_' in a label) cannot be intercepted. */
	snprintf(c->t_host, sizeof(c->t_host), "%s", dh.name);
	c->t_port = m->target.auth.port;
	SSL_CTX *sctx;
	if (gw_server_ctx(sh->server, &sctx, why, sizeof(why)) != 0) {
		answer(c, 500, NULL, false, why);
		return;
	}
	SSL *ssl = SSL_new(sctx);
	if (ssl == NULL || gw_tls_set_default_host(ssl, dh.name, why, sizeof(why)) != 0) {
		SSL_free(ssl);
		answer(c, 400, NULL, false, "the CONNECT host cannot be named in a certificate");
		return;
	}
	if (durable(c) < 0) {
		SSL_free(ssl);
		answer(c, 503, NULL, false, "the box's history could not be made durable");
		return;
	}
	if (gw_io_write(&c->cli, "HTTP/1.1 200 Connection Established\r\n\r\n", 39, GW_IO_MS) < 0) {
		SSL_free(ssl);
		return;
	}
	/* What comes through the tunnel: a TLS ClientHello (a record of type
	 * 22) is intercepted; anything else is served as plain HTTP, as
	 * clients that tunnel http:// URLs through CONNECT expect (undici's
	 * proxy agent, behind Node's NODE_USE_ENV_PROXY, does). */
	unsigned char first = 0;
	if (gw_io_wait_fd(c->cli.fd, POLLIN, GW_TLS_MS, sh->stop_fd) < 0 ||
	    recv(c->cli.fd, &first, 1, MSG_PEEK) != 1) {
		SSL_free(ssl);
		return;
	}
	c->tunnel = true;
	if (first != 0x16) {
		SSL_free(ssl);
	} else {
		if (gw_io_tls_accept(&c->cli, ssl, GW_TLS_MS, why, sizeof(why)) != 0)
			return;         /* the workload does not trust us */
		c->tunnel_tls = true;
		char norm[GW_HOST_MAX + 1];
		const char *served = gw_tls_served_host(c->cli.ssl);
		c->sni_mismatch = served == NULL || gw_host_normalize(dh.name, norm) < 0 ||
				  strcmp(served, norm) != 0;
	}
	struct gw_head *tr = gw_head_new(GW_HEAD_TUNNEL_REQUEST);
	if (tr == NULL)
		return;
	gw_head_free(c->req);
	c->req = tr;
	for (;;) {
		int r = read_head(&c->cli, &c->cin, c->req, GW_IDLE_MS);
		if (r == 0)
			break;
		if (r < 0) {
			answer_head_error(c, c->req, r);
			break;
		}
		if (!serve_request(c, gw_head_msg(c->req)))
			break;
		gw_head_reset(c->req);
		rbuf_trim(&c->cin);
	}
}

/* ---- the connection ------------------------------------------------------------- */

void gw_proxy_serve(const struct gw_shared *sh, const struct gw_who *who, int fd)
{
	struct conn c = { .sh = sh, .who = who };
	corr_init(&c);
	gw_io_init(&c.cli, fd, sh->stop_fd);
	gw_io_init(&c.up, -1, sh->stop_fd);
	c.req = gw_head_new(GW_HEAD_PROXY_REQUEST);
	c.resp = gw_head_new(GW_HEAD_RESPONSE);
	if (c.req == NULL || c.resp == NULL)
		goto out;
	for (;;) {
		int r = read_head(&c.cli, &c.cin, c.req, GW_IDLE_MS);
		if (r == 0)
			break;
		if (r < 0) {
			answer_head_error(&c, c.req, r);
			break;
		}
		const struct gw_msg *m = gw_head_msg(c.req);
		if (m->method.n == 7 && memcmp(m->method.p, "CONNECT", 7) == 0) {
			serve_connect(&c, m);
			break;
		}
		if (!serve_request(&c, m))
			break;
		gw_head_reset(c.req);
		rbuf_trim(&c.cin);
	}
out:
	upstream_close(&c, true);
	gw_io_close(&c.cli, true, GW_LINGER_MS);
	gw_head_free(c.req);
	gw_head_free(c.resp);
	free(c.cin.p);
	free(c.uin.p);
}
