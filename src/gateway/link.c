/* link.c - the wire between the gateway process and the supervisor (link.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collector.h"
#include "link.h"
#include "otlp_listener.h"

/* Field limits: a longer string is a malformed frame. */
#define HOST_MAX   1024
#define METHOD_MAX 64
#define PATH_MAX_  (64u << 10)
#define WORD_MAX   256                  /* ip, cause */
#define CORR_ID_MAX 256                 /* a request id (Box keeps 1..256 bytes) */
#define CORR_TP_MAX 512                 /* a traceparent, as Box bounds it */
#define RULE_MAX   (16u << 10)          /* a rule's @id: Cedar bounds it by nothing else */
#define TEXT_MAX   (16u << 10)          /* a denial text, a reason */

enum op {
	OP_CONNECT = 1,
	OP_HTTP,
	OP_OUTCOME,
	OP_REFUSE,
	OP_SYNC,
	OP_RELAY,
};

/* An agent payload crosses in a sealed memfd (OP_RELAY): its JSON line is
 * bounded by what relay.c may write for a body of GW_OTLP_BODY_MAX, its
 * protobuf by twice the body and the stamps of 1024 resources. */
#define RELAY_JSON_MAX ((uint64_t)TM_RELAY_EXPANSION * GW_OTLP_BODY_MAX + (1u << 20))
#define RELAY_PB_MAX ((uint64_t)4 * GW_OTLP_BODY_MAX)
#define RELAY_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* ---- frames ---------------------------------------------------------------- */

void gw_wire_init(struct gw_wire *w, unsigned char *buf, size_t cap)
{
	*w = (struct gw_wire){ .p = buf, .n = 0, .cap = cap };
}

void gw_wire_from(struct gw_wire *w, unsigned char *buf, size_t n)
{
	*w = (struct gw_wire){ .p = buf, .n = n, .cap = n };
}

static void put(struct gw_wire *w, const void *src, size_t len)
{
	if (len == 0)
		return;                 /* src may be NULL: an empty string */
	if (w->bad || len > w->cap - w->n) {
		w->bad = true;
		return;
	}
	memcpy(w->p + w->n, src, len);
	w->n += len;
}

static void put_le(struct gw_wire *w, uint64_t v, size_t bytes)
{
	unsigned char b[8];
	for (size_t i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(w, b, bytes);
}

void gw_put_u8(struct gw_wire *w, uint8_t v) { put_le(w, v, 1); }
void gw_put_u32(struct gw_wire *w, uint32_t v) { put_le(w, v, 4); }
void gw_put_u64(struct gw_wire *w, uint64_t v) { put_le(w, v, 8); }

void gw_put_str(struct gw_wire *w, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	if (len > UINT32_MAX) {
		w->bad = true;
		return;
	}
	gw_put_u32(w, (uint32_t)len);
	put(w, s, len);
}

void gw_put_bytes(struct gw_wire *w, const void *b, size_t n)
{
	if (n > UINT32_MAX) {
		w->bad = true;
		return;
	}
	gw_put_u32(w, (uint32_t)n);
	put(w, b, n);
}

/* Reading consumes from the front: p advances, n counts what is left. */
static const unsigned char *take(struct gw_wire *w, size_t len)
{
	if (w->bad || len > w->n) {
		w->bad = true;
		return NULL;
	}
	const unsigned char *at = w->p;
	w->p += len;
	w->n -= len;
	return at;
}

static uint64_t get_le(struct gw_wire *w, size_t bytes)
{
	const unsigned char *b = take(w, bytes);
	uint64_t v = 0;
	for (size_t i = 0; b && i < bytes; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

uint8_t gw_get_u8(struct gw_wire *w) { return (uint8_t)get_le(w, 1); }
uint32_t gw_get_u32(struct gw_wire *w) { return (uint32_t)get_le(w, 4); }
uint64_t gw_get_u64(struct gw_wire *w) { return get_le(w, 8); }

void gw_get_str(struct gw_wire *w, size_t max, char **out)
{
	*out = NULL;
	uint32_t len = gw_get_u32(w);
	if (!w->bad && len > max)
		w->bad = true;
	const unsigned char *s = take(w, len);
	if (s == NULL)
		return;
	if (memchr(s, '\0', len) != NULL || (*out = malloc((size_t)len + 1)) == NULL) {
		w->bad = true;
		return;
	}
	memcpy(*out, s, len);
	(*out)[len] = '\0';
}

int gw_frame_send(int sock, const struct gw_wire *w, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 4)];
	} u;
	struct iovec iov = { .iov_base = w->p, .iov_len = w->n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (w->bad || nfds > 4)
		return -EMSGSIZE;
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	ssize_t k;
	do
		k = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	return k == (ssize_t)w->n ? 0 : -EMSGSIZE;
}

long gw_frame_recv(int sock, unsigned char *buf, size_t cap, int *fds, size_t max_fds,
		   size_t *nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	*nfds = 0;
	ssize_t k;
	do
		k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	bool bad = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (!bad && *nfds < max_fds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (bad) {
		for (size_t i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return -EPROTO;
	}
	return (long)k;
}

void gw_get_bytes(struct gw_wire *w, size_t max, const unsigned char **out, size_t *n)
{
	uint32_t len = gw_get_u32(w);
	if (!w->bad && len > max)
		w->bad = true;
	*out = w->bad ? NULL : take(w, len);
	*n = *out ? len : 0;
}

/* ---- the gateway's side ---------------------------------------------------- */

struct chan {
	int fd;                         /* -1: failed, not used again */
	bool busy;
	unsigned char *buf;             /* GW_LINK_FRAME_MAX: the request, then the reply */
};

struct gw_link {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t n;
	struct chan ch[GW_LINK_CHANNELS];
};

int gw_link_new(const int *fds, size_t n, struct gw_link **out)
{
	struct gw_link *l = calloc(1, sizeof(*l));
	bool ok = l != NULL;
	if (n > GW_LINK_CHANNELS)
		n = GW_LINK_CHANNELS;
	for (size_t i = 0; ok && i < n; i++)
		ok = (l->ch[i].buf = malloc(GW_LINK_FRAME_MAX)) != NULL;
	if (!ok) {
		for (size_t i = 0; l && i < n; i++)
			free(l->ch[i].buf);
		free(l);
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		l->ch[i].fd = fds[i];
	l->n = n;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	*out = l;
	return 0;
}

void gw_link_free(struct gw_link *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++) {
		if (l->ch[i].fd >= 0)
			close(l->ch[i].fd);
		free(l->ch[i].buf);
	}
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
}

/* A free channel, or NULL when every one has failed. */
static struct chan *chan_take(struct gw_link *l)
{
	pthread_mutex_lock(&l->lock);
	for (;;) {
		bool alive = false;
		for (size_t i = 0; i < l->n; i++) {
			if (l->ch[i].fd < 0)
				continue;
			alive = true;
			if (!l->ch[i].busy) {
				l->ch[i].busy = true;
				pthread_mutex_unlock(&l->lock);
				return &l->ch[i];
			}
		}
		if (!alive)
			break;
		pthread_cond_wait(&l->cond, &l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void chan_give(struct gw_link *l, struct chan *c, bool failed)
{
	pthread_mutex_lock(&l->lock);
	if (failed && c->fd >= 0) {
		/* a channel out of step with its server cannot be trusted to
		 * pair replies with requests again */
		close(c->fd);
		c->fd = -1;
	}
	c->busy = false;
	/* one free channel: one waiter (a broadcast would wake every
	 * connection thread waiting, to find one); a failed one may leave
	 * none, and every waiter must see that */
	if (failed)
		pthread_cond_broadcast(&l->cond);
	else
		pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Send the request in w (on c->buf), wait for the reply; on 0, r reads it
 * with its rc already taken. */
static int roundtrip_fd(struct chan *c, const struct gw_wire *w, int fd, struct gw_wire *r,
			int32_t *rc)
{
	if (w->bad)
		return -EMSGSIZE;
	ssize_t k;
	if (fd >= 0) {
		if (gw_frame_send(c->fd, w, &fd, 1) != 0)
			return -EPIPE;
	} else {
		do
			k = send(c->fd, c->buf, w->n, MSG_NOSIGNAL);
		while (k < 0 && errno == EINTR);
		if (k != (ssize_t)w->n)
			return -EPIPE;
	}
	do
		k = recv(c->fd, c->buf, GW_LINK_FRAME_MAX, MSG_TRUNC);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return -EPIPE;
	if ((size_t)k > GW_LINK_FRAME_MAX)
		return -EPROTO;
	gw_wire_from(r, c->buf, (size_t)k);
	*rc = (int32_t)gw_get_u32(r);
	return r->bad ? -EPROTO : 0;
}

static int roundtrip(struct chan *c, const struct gw_wire *w, struct gw_wire *r, int32_t *rc)
{
	return roundtrip_fd(c, w, -1, r, rc);
}

static void put_http(struct gw_wire *w, const struct gw_http_input *h)
{
	gw_put_str(w, h->host);
	gw_put_u32(w, h->port);
	gw_put_str(w, h->method);
	gw_put_str(w, h->path);
	gw_put_u64(w, (uint64_t)h->body_bytes);
	gw_put_u8(w, h->intercepted);
}

static void put_connect(struct gw_wire *w, const char *host, unsigned port, const char *ip)
{
	gw_put_str(w, host);
	gw_put_u32(w, port);
	gw_put_u8(w, ip != NULL);
	gw_put_str(w, ip);
}

static void put_corr(struct gw_wire *w, const struct gw_corr *c)
{
	gw_put_str(w, c ? c->request_id : NULL);
	gw_put_str(w, c ? c->traceparent : NULL);
}

/* A verdict reply: u8 allow, u64 ticket, u32 cause, str rule, str text. */
static int get_verdict(struct gw_wire *r, struct gw_verdict *out)
{
	memset(out, 0, sizeof(*out));
	out->allow = gw_get_u8(r) == 1;
	out->ticket = gw_get_u64(r);
	uint32_t cause = gw_get_u32(r);
	gw_get_str(r, RULE_MAX, &out->rule);
	gw_get_str(r, TEXT_MAX, &out->text);
	out->cause = (enum dw_cause)cause;
	if (r->bad || r->n != 0 || cause > DW_CAUSE_INTERNAL_FAULT ||
	    (out->allow && cause != DW_CAUSE_PERMITTED)) {
		gw_verdict_clear(out);
		return -EPROTO;
	}
	if (out->text[0] == '\0') {
		free(out->text);
		out->text = NULL;
	}
	return 0;
}

/* A verdict that never came: an internal fault. */
static int lost(struct gw_verdict *out, int rc)
{
	memset(out, 0, sizeof(*out));
	out->cause = DW_CAUSE_INTERNAL_FAULT;
	return rc;
}

static int ask_verdict(struct gw_link *l, int op, const struct gw_http_input *h,
		       const char *ip, struct gw_verdict *out)
{
	memset(out, 0, sizeof(*out));
	struct chan *c = chan_take(l);
	if (c == NULL)
		return lost(out, -EPIPE);
	struct gw_wire w, r;
	int32_t rc = 0;
	gw_wire_init(&w, c->buf, GW_LINK_FRAME_MAX);
	gw_put_u32(&w, (uint32_t)op);
	if (op == OP_HTTP)
		put_http(&w, h);
	else
		put_connect(&w, h->host, h->port, ip);
	put_corr(&w, h->corr);
	int e = roundtrip(c, &w, &r, &rc);
	if (e == 0 && r.n == 0 && rc < 0 && rc >= -4095) {
		/* no verdict, only why (a request it could not parse: -EPROTO):
		 * a denial, and the channel is still in step */
		chan_give(l, c, false);
		return lost(out, rc);
	}
	if (e == 0)
		e = get_verdict(&r, out);
	/* the engine's own failures (-ENOMEM, -EIO) arrive with a denying
	 * verdict, as from dw_decide */
	if (e == 0 && rc != 0 && (rc > 0 || rc < -4095 || out->allow)) {
		gw_verdict_clear(out);
		e = -EPROTO;
	}
	chan_give(l, c, e != 0 && e != -EMSGSIZE);
	return e != 0 ? lost(out, e) : rc;
}

static int link_connect(struct gw_decider *d, const char *host, unsigned port, const char *ip,
			const struct gw_corr *corr, struct gw_verdict *out)
{
	const struct gw_http_input h = { .host = host, .port = port, .corr = corr };
	return ask_verdict(d->link, OP_CONNECT, &h, ip, out);
}

static int link_http(struct gw_decider *d, const struct gw_http_input *h, struct gw_verdict *out)
{
	return ask_verdict(d->link, OP_HTTP, h, NULL, out);
}

/* A request whose reply is its rc alone (fd: one to pass with it, or -1). */
static int ask_rc_fd(struct gw_link *l, struct chan *c, struct gw_wire *w, int fd)
{
	struct gw_wire r;
	int32_t rc = 0;
	int e = roundtrip_fd(c, w, fd, &r, &rc);
	if (e == 0 && (r.n != 0 || rc > 0 || rc < -4095))
		e = -EPROTO;
	chan_give(l, c, e != 0 && e != -EMSGSIZE);
	return e != 0 ? e : rc;
}

static int ask_rc(struct gw_link *l, struct chan *c, struct gw_wire *w)
{
	return ask_rc_fd(l, c, w, -1);
}

static int link_outcome(struct gw_decider *d, enum gw_outcome kind, uint64_t ticket, int status,
			uint64_t bytes)
{
	struct chan *c = chan_take(d->link);
	if (c == NULL)
		return -EPIPE;
	struct gw_wire w;
	gw_wire_init(&w, c->buf, GW_LINK_FRAME_MAX);
	gw_put_u32(&w, OP_OUTCOME);
	gw_put_u32(&w, (uint32_t)kind);
	gw_put_u64(&w, ticket);
	gw_put_u32(&w, (uint32_t)status);
	gw_put_u64(&w, bytes);
	return ask_rc(d->link, c, &w);
}

static int link_refuse(struct gw_decider *d, const struct gw_http_input *h, const char *ip,
		       uint64_t ticket, const char *cause, const char *rule, const char *reason)
{
	struct chan *c = chan_take(d->link);
	if (c == NULL)
		return -EPIPE;
	struct gw_wire w;
	gw_wire_init(&w, c->buf, GW_LINK_FRAME_MAX);
	gw_put_u32(&w, OP_REFUSE);
	gw_put_u8(&w, h->method != NULL);
	if (h->method != NULL)
		put_http(&w, h);
	else
		put_connect(&w, h->host, h->port, ip);
	put_corr(&w, h->corr);
	gw_put_u64(&w, ticket);
	gw_put_str(&w, cause);
	gw_put_str(&w, rule);
	gw_put_str(&w, reason);
	return ask_rc(d->link, c, &w);
}

static int link_sync(struct gw_decider *d)
{
	struct chan *c = chan_take(d->link);
	if (c == NULL)
		return -EPIPE;
	struct gw_wire w;
	gw_wire_init(&w, c->buf, GW_LINK_FRAME_MAX);
	gw_put_u32(&w, OP_SYNC);
	return ask_rc(d->link, c, &w);
}

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The payload goes in a memfd sealed against every change, so that the
 * supervisor maps what it checked and the collector writes it without a
 * copy: a frame could not hold it (GW_LINK_FRAME_MAX), and bytes on the
 * wire would be copied twice more. */
static int link_relay(struct gw_decider *d, enum tm_relay_kind kind, const struct tm_relay_out *o)
{
	if (o->json.n == 0 || o->json.n > RELAY_JSON_MAX || o->pb.n > RELAY_PB_MAX)
		return -E2BIG;
	int fd = memfd_create("cairn-relay", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int e = write_all(fd, o->json.p, o->json.n);
	if (e == 0 && o->pb.n > 0)
		e = write_all(fd, o->pb.p, o->pb.n);
	if (e == 0 && fcntl(fd, F_ADD_SEALS, RELAY_SEALS | F_SEAL_SEAL) != 0)
		e = -errno;
	struct chan *c = e == 0 ? chan_take(d->link) : NULL;
	if (e == 0 && c == NULL)
		e = -EPIPE;
	if (e == 0) {
		struct gw_wire w;
		gw_wire_init(&w, c->buf, GW_LINK_FRAME_MAX);
		gw_put_u32(&w, OP_RELAY);
		gw_put_u32(&w, (uint32_t)kind);
		gw_put_u64(&w, o->json.n);
		gw_put_u64(&w, o->pb.n);
		e = ask_rc_fd(d->link, c, &w, fd);
	}
	close(fd);
	return e;
}

void gw_decider_link(struct gw_decider *d, struct gw_link *l)
{
	*d = (struct gw_decider){ .connect = link_connect, .http = link_http,
				  .outcome = link_outcome, .refuse = link_refuse,
				  .sync = link_sync, .relay = link_relay, .link = l };
}

/* ---- the supervisor's side ------------------------------------------------- */

/* What a request frame carries (strings malloc'd). */
struct req {
	char *host, *method, *path, *ip, *cause, *rule, *reason, *rid, *tp;
	unsigned port;
	int64_t body_bytes;
	bool intercepted, has_ip;
};

static void req_free(struct req *q)
{
	free(q->host);
	free(q->method);
	free(q->path);
	free(q->ip);
	free(q->cause);
	free(q->rule);
	free(q->reason);
	free(q->rid);
	free(q->tp);
}

static void get_port(struct gw_wire *r, struct req *q)
{
	uint32_t port = gw_get_u32(r);
	if (port == 0 || port > 65535)
		r->bad = true;
	q->port = port;
}

static void get_connect(struct gw_wire *r, struct req *q)
{
	gw_get_str(r, HOST_MAX, &q->host);
	get_port(r, q);
	uint8_t has = gw_get_u8(r);
	gw_get_str(r, WORD_MAX, &q->ip);
	if (has > 1 || (!has && q->ip && q->ip[0]))
		r->bad = true;
	q->has_ip = has == 1;
}

static void get_http(struct gw_wire *r, struct req *q)
{
	gw_get_str(r, HOST_MAX, &q->host);
	get_port(r, q);
	gw_get_str(r, METHOD_MAX, &q->method);
	gw_get_str(r, PATH_MAX_, &q->path);
	uint64_t b = gw_get_u64(r);
	uint8_t in = gw_get_u8(r);
	/* -1 (unknown) and up; a method and a path are never empty */
	if ((int64_t)b < -1 || in > 1 || (q->method && !q->method[0]) || (q->path && !q->path[0]))
		r->bad = true;
	q->body_bytes = (int64_t)b;
	q->intercepted = in == 1;
}

/* The correlation: a request id and a traceparent, each printable ASCII
 * (the supervisor checks their shapes before a record uses them). */
static void get_corr(struct gw_wire *r, struct req *q)
{
	gw_get_str(r, CORR_ID_MAX, &q->rid);
	gw_get_str(r, CORR_TP_MAX, &q->tp);
	for (int k = 0; k < 2 && !r->bad; k++)
		for (const char *p = k ? q->tp : q->rid; p && *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				r->bad = true;
}

static size_t reply_rc(unsigned char *buf, size_t cap, int rc)
{
	struct gw_wire w;
	gw_wire_init(&w, buf, cap);
	gw_put_u32(&w, (uint32_t)(int32_t)rc);
	return w.n;
}

static size_t reply_verdict(unsigned char *buf, size_t cap, int rc, const struct gw_verdict *v)
{
	struct gw_wire w;
	gw_wire_init(&w, buf, cap);
	gw_put_u32(&w, (uint32_t)(int32_t)rc);
	gw_put_u8(&w, v->allow);
	gw_put_u64(&w, v->ticket);
	gw_put_u32(&w, (uint32_t)v->cause);
	const char *rule = v->allow ? "" : gw_verdict_rule(v);
	size_t rl = strnlen(rule, RULE_MAX);
	gw_put_u32(&w, (uint32_t)rl);
	put(&w, rule, rl);
	/* Box's texts are bounded (gw_denial_body keeps 8 KiB of one) */
	const char *text = v->text ? v->text : "";
	size_t len = strnlen(text, TEXT_MAX);
	gw_put_u32(&w, (uint32_t)len);
	put(&w, text, len);
	return w.bad ? reply_rc(buf, cap, -EMSGSIZE) : w.n;
}

struct mapped {
	struct tm_payload p;
	void *base;
	size_t len;
};

static void mapped_release(struct tm_payload *p)
{
	struct mapped *m = (struct mapped *)p;
	munmap(m->base, m->len);
	free(m);
}

/* OP_RELAY's memfd: sealed, of the size the frame says, a JSON line of one
 * line (so that a gateway cannot write two records' worth into the file);
 * handed to the collector mapped, without a copy.  fd is the caller's. */
static int relay_mapped(struct gw_decider *dec, uint32_t kind, int fd, uint64_t json_len,
			uint64_t pb_len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & RELAY_SEALS) != RELAY_SEALS || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != json_len + pb_len)
		return -EPROTO;
	if (dec->records == NULL)
		return 0;
	size_t len = (size_t)(json_len + pb_len);
	void *base = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	const unsigned char *json = base;
	if (json[json_len - 1] != '\n' || memchr(json, '\n', json_len - 1) != NULL) {
		munmap(base, len);
		return -EPROTO;
	}
	struct mapped *m = malloc(sizeof(*m));
	if (m == NULL) {
		munmap(base, len);
		return -ENOMEM;
	}
	*m = (struct mapped){ .p = { .kind = (enum tm_relay_kind)kind, .json = json,
				     .json_len = json_len, .pb = json + json_len,
				     .pb_len = pb_len, .release = mapped_release },
			      .base = base, .len = len };
	tm_relay_emit(dec->records, &m->p);
	return 0;
}

size_t gw_link_answer(struct gw_decider *dec, unsigned char *buf, size_t n, size_t cap)
{
	return gw_link_answer_fd(dec, buf, n, cap, -1);
}

size_t gw_link_answer_fd(struct gw_decider *dec, unsigned char *buf, size_t n, size_t cap, int fd)
{
	struct gw_wire r;
	struct req q = { 0 };
	struct gw_verdict v = { 0 };
	size_t out;
	int rc;
	gw_wire_from(&r, buf, n);
	uint32_t op = gw_get_u32(&r);
	if (fd >= 0 && op != OP_RELAY)
		r.bad = true;                   /* only a payload comes with a descriptor */
	switch (r.bad ? 0 : op) {
	case OP_CONNECT:
	case OP_HTTP:
		if (op == OP_CONNECT)
			get_connect(&r, &q);
		else
			get_http(&r, &q);
		get_corr(&r, &q);
		if (r.bad || r.n != 0) {
			out = reply_rc(buf, cap, -EPROTO);
			break;
		}
		const struct gw_corr corr = { q.rid, q.tp };
		if (op == OP_CONNECT) {
			rc = gw_decide_connect_corr(dec, q.host, q.port, q.has_ip ? q.ip : NULL,
						    &corr, &v);
		} else {
			const struct gw_http_input h = { q.host, q.port, q.method, q.path,
							 q.body_bytes, q.intercepted, &corr };
			rc = gw_decide_http(dec, &h, &v);
		}
		out = reply_verdict(buf, cap, rc, &v);
		gw_verdict_clear(&v);
		break;
	case OP_OUTCOME: {
		uint32_t kind = gw_get_u32(&r);
		v.ticket = gw_get_u64(&r);
		int status = (int)(int32_t)gw_get_u32(&r);
		uint64_t bytes = gw_get_u64(&r);
		if (r.bad || r.n != 0 || status < -1 || status > 999) {
			out = reply_rc(buf, cap, -EPROTO);
			break;
		}
		if (kind >= GW_OUT_RESPONSE && kind <= GW_OUT_RELEASE)
			rc = dec->outcome(dec, (enum gw_outcome)kind, v.ticket, status, bytes);
		else
			rc = -EPROTO;
		out = reply_rc(buf, cap, rc);
		break;
	}
	case OP_REFUSE: {
		uint8_t http = gw_get_u8(&r);
		if (http == 1)
			get_http(&r, &q);
		else if (http == 0)
			get_connect(&r, &q);
		else
			r.bad = true;
		get_corr(&r, &q);
		uint64_t ticket = gw_get_u64(&r);
		gw_get_str(&r, WORD_MAX, &q.cause);
		gw_get_str(&r, RULE_MAX, &q.rule);
		gw_get_str(&r, TEXT_MAX, &q.reason);
		if (r.bad || r.n != 0) {
			out = reply_rc(buf, cap, -EPROTO);
			break;
		}
		const struct gw_corr corr = { q.rid, q.tp };
		if (http) {
			const struct gw_http_input h = { q.host, q.port, q.method, q.path,
							 q.body_bytes, q.intercepted, &corr };
			rc = gw_refuse_http(dec, &h, ticket, q.cause, q.rule, q.reason);
		} else {
			rc = gw_refuse_connect_corr(dec, q.host, q.port, q.has_ip ? q.ip : NULL,
						    &corr, ticket, q.cause, q.rule, q.reason);
		}
		out = reply_rc(buf, cap, rc);
		break;
	}
	case OP_SYNC:
		out = reply_rc(buf, cap, r.n != 0 ? -EPROTO : gw_sync(dec));
		break;
	case OP_RELAY: {
		uint32_t kind = gw_get_u32(&r);
		uint64_t json_len = gw_get_u64(&r), pb_len = gw_get_u64(&r);
		if (r.bad || r.n != 0 || fd < 0 || kind > TM_RELAY_METRICS || json_len == 0 ||
		    json_len > RELAY_JSON_MAX || pb_len > RELAY_PB_MAX)
			rc = -EPROTO;
		else
			rc = relay_mapped(dec, kind, fd, json_len, pb_len);
		out = reply_rc(buf, cap, rc);
		break;
	}
	default:
		out = reply_rc(buf, cap, -EPROTO);
		break;
	}
	req_free(&q);
	return out;
}

struct server_chan {
	struct gw_link_server *s;
	int fd;
	pthread_t thread;
	bool started;
};

struct gw_link_server {
	struct gw_decider *dec;
	size_t n;
	struct server_chan ch[GW_LINK_CHANNELS];
};

static void *serve_main(void *arg)
{
	struct server_chan *c = arg;
	unsigned char *buf = malloc(GW_LINK_FRAME_MAX);
	while (buf != NULL) {
		int fd = -1;
		size_t nfds = 0;
		long k = gw_frame_recv(c->fd, buf, GW_LINK_FRAME_MAX, &fd, 1, &nfds);
		if (k == 0 || (k < 0 && k != -EPROTO))
			break;                  /* the gateway's end closed */
		/* -EPROTO: a frame past GW_LINK_FRAME_MAX, or too many descriptors */
		size_t out = k < 0 ? reply_rc(buf, GW_LINK_FRAME_MAX, -EPROTO)
			: gw_link_answer_fd(c->s->dec, buf, (size_t)k, GW_LINK_FRAME_MAX,
					    nfds ? fd : -1);
		if (nfds)
			close(fd);
		if (send(c->fd, buf, out, MSG_NOSIGNAL) != (ssize_t)out)
			break;
	}
	free(buf);
	/* the gateway sees its channel close: its requests there deny */
	shutdown(c->fd, SHUT_RDWR);
	return NULL;
}

int gw_link_server_start(struct gw_decider *dec, const int *fds, size_t n,
			 struct gw_link_server **out)
{
	struct gw_link_server *s = calloc(1, sizeof(*s));
	if (n > GW_LINK_CHANNELS)
		n = GW_LINK_CHANNELS;
	if (s == NULL) {
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return -ENOMEM;
	}
	s->dec = dec;
	s->n = n;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256u << 10);   /* the evaluator's depth */
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		s->ch[i] = (struct server_chan){ .s = s, .fd = fds[i] };
		if (rc == 0) {
			rc = pthread_create(&s->ch[i].thread, &attr, serve_main, &s->ch[i]);
			s->ch[i].started = rc == 0;
		}
	}
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		/* the threads started end at once: their channels hang up */
		for (size_t i = 0; i < n; i++)
			shutdown(s->ch[i].fd, SHUT_RDWR);
		gw_link_server_stop(s);
		return -rc;
	}
	*out = s;
	return 0;
}

void gw_link_server_stop(struct gw_link_server *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		if (s->ch[i].started)
			pthread_join(s->ch[i].thread, NULL);
		close(s->ch[i].fd);
	}
	free(s);
}
