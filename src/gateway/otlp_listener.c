/* otlp_listener.c - the agent receiver's connections (otlp_listener.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gwio.h"
#include "http.h"
#include "otlp_listener.h"

#define RBUF 16384

struct conn {
	struct gw_io io;
	struct gw_otlp_stats *stats;
	char buf[RBUF];         /* bytes read and not yet parsed: [off, len) */
	size_t off, len;
	long long deadline;     /* of the current request, in ms of CLOCK_MONOTONIC; 0: none */
	uint8_t *body;
	size_t body_len, body_cap;
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(const struct conn *c)
{
	if (c->deadline == 0)
		return GW_OTLP_IDLE_MS;
	long long left = c->deadline - now_ms();
	return left <= 0 ? 0 : left > GW_OTLP_REQUEST_MS * 10 ? GW_OTLP_REQUEST_MS * 10 : (int)left;
}

static void start_deadline(struct conn *c)
{
	int ms = __atomic_load_n(&c->stats->request_ms, __ATOMIC_RELAXED);
	c->deadline = now_ms() + (ms > 0 ? ms : GW_OTLP_REQUEST_MS);
}

/* Read more into buf: >0, 0 at end of stream, -ETIMEDOUT past the deadline, <0. */
static ssize_t fill(struct conn *c)
{
	if (c->off == c->len)
		c->off = c->len = 0;
	if (c->len == sizeof(c->buf)) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	int t = left_ms(c);
	if (t == 0)
		return -ETIMEDOUT;
	ssize_t n = gw_io_read(&c->io, c->buf + c->len, sizeof(c->buf) - c->len, t);
	if (n > 0)
		c->len += (size_t)n;
	return n;
}


/* Every answer of Box's receiver: the status, content-type application/json, `{}`. */
static int answer(struct conn *c, int status, bool close)
{
	char head[256];
	struct gw_writer w;
	size_t n;
	const char *reason = gw_status_reason(status);

	if (status != 200)
		__atomic_add_fetch(&c->stats->refused, 1, __ATOMIC_RELAXED);
	gw_writer_init(&w, head, sizeof(head));
	gw_writer_status_line(&w, status, (struct gw_str){ reason, strlen(reason) });
	gw_writer_field(&w, GW_STR("content-type"), GW_STR("application/json"));
	gw_writer_field_u64(&w, GW_STR("content-length"), 2);
	if (status == 405)
		gw_writer_field(&w, GW_STR("allow"), GW_STR("POST"));
	if (close)
		gw_writer_field(&w, GW_STR("connection"), GW_STR("close"));
	if (gw_writer_finish(&w, &n) != 0 || n + 2 > sizeof(head))
		return -EINVAL;
	memcpy(head + n, "{}", 2);
	return gw_io_write(&c->io, head, n + 2, GW_OTLP_REQUEST_MS);
}

static bool media_is_json(const struct gw_msg *m)
{
	const struct gw_field *f = gw_msg_field(m, "content-type", 0);
	if (f == NULL)
		return false;
	const char *p = f->value.p, *semi = memchr(p, ';', f->value.n);
	size_t n = semi ? (size_t)(semi - p) : f->value.n;
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	while (n > 0 && (*p == ' ' || *p == '\t'))
		p++, n--;
	return n == 16 && strncasecmp(p, "application/json", 16) == 0;
}

static bool route(const struct gw_msg *m, enum tm_relay_kind *k)
{
	static const struct { const char *path; enum tm_relay_kind k; } routes[] = {
		{ "/v1/traces", TM_RELAY_TRACES },
		{ "/v1/logs", TM_RELAY_LOGS },
		{ "/v1/metrics", TM_RELAY_METRICS },
	};
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		size_t n = strlen(routes[i].path);
		if (m->target.path.n == n && memcmp(m->target.path.p, routes[i].path, n) == 0) {
			*k = routes[i].k;
			return true;
		}
	}
	return false;
}

/* Room for k more body bytes, never past GW_OTLP_BODY_MAX: 0, -E2BIG, -ENOMEM. */
static int body_room(struct conn *c, size_t k)
{
	if (k > GW_OTLP_BODY_MAX - c->body_len)
		return -E2BIG;
	if (c->body_len + k <= c->body_cap)
		return 0;
	size_t cap = c->body_cap ? c->body_cap : 65536;
	while (cap < c->body_len + k)
		cap *= 2;
	if (cap > GW_OTLP_BODY_MAX)
		cap = GW_OTLP_BODY_MAX;
	uint8_t *p = realloc(c->body, cap);
	if (p == NULL)
		return -ENOMEM;
	c->body = p;
	c->body_cap = cap;
	return 0;
}

/* Read a body of exactly n bytes: 0, -E2BIG, -ETIMEDOUT, or another <0. */
static int read_length(struct conn *c, uint64_t n)
{
	if (n > GW_OTLP_BODY_MAX)
		return -E2BIG;
	int rc = body_room(c, (size_t)n);
	if (rc < 0)
		return rc;
	size_t have = c->len - c->off;
	size_t take = have < n ? have : (size_t)n;
	memcpy(c->body, c->buf + c->off, take);
	c->off += take;
	c->body_len = take;
	while (c->body_len < n) {
		int t = left_ms(c);
		if (t == 0)
			return -ETIMEDOUT;
		ssize_t r = gw_io_read(&c->io, c->body + c->body_len, (size_t)n - c->body_len, t);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0)
			return (int)r;
		c->body_len += (size_t)r;
	}
	return 0;
}

/* Decode a chunked body into c->body: 0, -E2BIG, -EBADMSG, -ETIMEDOUT, <0. */
static int read_chunked(struct conn *c)
{
	struct gw_chunked ck;
	gw_chunked_init(&ck, false);
	for (;;) {
		if (c->off == c->len) {
			ssize_t r = fill(c);
			if (r == 0)
				return -ECONNRESET;
			if (r < 0)
				return (int)r;
		}
		if (c->body_cap == c->body_len && c->body_len < GW_OTLP_BODY_MAX) {
			size_t want = c->body_cap ? c->body_cap : 65536;
			if (want > GW_OTLP_BODY_MAX - c->body_len)
				want = GW_OTLP_BODY_MAX - c->body_len;
			int rc = body_room(c, want);
			if (rc < 0)
				return rc;
		}
		size_t room = c->body_cap - c->body_len, used, produced;
		int rc = gw_chunked_feed(&ck, c->buf + c->off, c->len - c->off, &used,
					 room ? c->body + c->body_len : NULL, room, &produced);
		c->off += used;
		c->body_len += produced;
		if (rc == 1)
			return 0;
		if (rc < 0)
			return -EBADMSG;
		/* stopped with input left: the body wants more than GW_OTLP_BODY_MAX */
		if (c->off < c->len && room == 0 && used == 0)
			return -E2BIG;
	}
}

/* One request: >0 to keep the connection, 0 to close it. */
static int serve_one(struct conn *c, struct gw_head *h, const struct tm_relay_stamp *st,
		     gw_otlp_relay_fn relay, void *arg)
{
	int rc;
	c->deadline = 0;
	for (;;) {
		size_t used = 0;
		rc = gw_head_feed(h, c->buf + c->off, c->len - c->off, &used);
		if (used > 0 && c->deadline == 0)
			start_deadline(c);
		c->off += used;
		if (rc != 0)
			break;
		ssize_t n = fill(c);
		if (n == -ETIMEDOUT && c->deadline != 0) {
			answer(c, 408, true);
			return 0;
		}
		if (n <= 0)
			return 0;       /* closed, idle too long, reset or stopping: no answer */
		if (c->deadline == 0)
			start_deadline(c);
	}
	if (rc < 0) {
		int status = gw_head_error(h, NULL);
		answer(c, status ? status : 400, true);
		return 0;
	}

	const struct gw_msg *m = gw_head_msg(h);
	bool has_body = m->body == GW_BODY_CHUNKED ||
			(m->body == GW_BODY_LENGTH && m->content_length > 0);
	bool keep = gw_msg_keep_alive(m);
	enum tm_relay_kind kind;
	if (!route(m, &kind)) {
		answer(c, 404, has_body || !keep);
		return keep && !has_body;
	}
	if (m->method.n != 4 || memcmp(m->method.p, "POST", 4) != 0) {
		answer(c, 405, has_body || !keep);
		return keep && !has_body;
	}
	if (m->body == GW_BODY_LENGTH && m->content_length > GW_OTLP_BODY_MAX) {
		answer(c, 413, true);
		return 0;
	}
	if (m->expect == GW_EXPECT_CONTINUE && has_body) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (gw_io_write(&c->io, cont, sizeof(cont) - 1, GW_OTLP_REQUEST_MS) < 0)
			return 0;
	}
	bool json = media_is_json(m);

	c->body_len = 0;
	rc = 0;
	if (m->body == GW_BODY_LENGTH)
		rc = read_length(c, m->content_length);
	else if (m->body == GW_BODY_CHUNKED)
		rc = read_chunked(c);
	if (rc == -E2BIG) {
		answer(c, 413, true);
		return 0;
	}
	if (rc == -ETIMEDOUT) {
		answer(c, 408, true);
		return 0;
	}
	if (rc == -EBADMSG) {
		answer(c, 400, true);
		return 0;
	}
	if (rc < 0) {
		if (rc == -ENOMEM)
			answer(c, 500, true);
		return 0;
	}

	/* Box takes its one relay slot after the body, before decoding, and a
	 * payload that finds it busy is answered 200 and dropped.  Here the
	 * slot is a budget instead: payloads relayed at once hold at most
	 * GW_OTLP_BODY_MAX bytes of body between them, so memory is bounded as
	 * Box bounds it (one full body), while an SDK that flushes its traces,
	 * logs and metrics at the same moment loses none of them. */
	size_t held = __atomic_load_n(&c->stats->relay_bytes, __ATOMIC_RELAXED);
	do {
		if (c->body_len > GW_OTLP_BODY_MAX - held) {
			__atomic_add_fetch(&c->stats->dropped_busy, 1, __ATOMIC_RELAXED);
			return answer(c, 200, !keep) == 0 && keep;
		}
	} while (!__atomic_compare_exchange_n(&c->stats->relay_bytes, &held, held + c->body_len,
					      true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
	struct tm_relay_out out;
	char err[256];
	rc = tm_relay_restamp(kind, json, c->body, c->body_len, st, &out, err, sizeof(err));
	if (rc == 0) {
		/* Box ignores a relay's failure (`let _ =`): the agent gets its 200 */
		if (relay != NULL)
			(void)relay(arg, kind, &out);
		tm_relay_out_free(&out);
		__atomic_add_fetch(&c->stats->accepted, 1, __ATOMIC_RELAXED);
	}
	__atomic_sub_fetch(&c->stats->relay_bytes, c->body_len, __ATOMIC_RELEASE);
	int status = rc == 0 ? 200 : rc == -EINVAL ? 400 : rc == -E2BIG ? 413 : 500;
	return answer(c, status, !keep) == 0 && keep;
}

void gw_otlp_serve(int fd, int stop_fd, const struct tm_relay_stamp *st, gw_otlp_relay_fn relay,
		   void *arg, struct gw_otlp_stats *stats)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct gw_head *h = gw_head_new(GW_HEAD_TUNNEL_REQUEST);
	if (c == NULL || h == NULL) {
		free(c);
		gw_head_free(h);
		close(fd);
		return;
	}
	gw_io_init(&c->io, fd, stop_fd);
	c->stats = stats;
	while (serve_one(c, h, st, relay, arg) > 0) {
		gw_head_reset(h);
		/* a body of an earlier request is not kept while the connection idles */
		if (c->body_cap > 65536) {
			free(c->body);
			c->body = NULL;
			c->body_cap = 0;
		}
	}
	gw_io_close(&c->io, true, 200);
	gw_head_free(h);
	free(c->body);
	free(c);
}
