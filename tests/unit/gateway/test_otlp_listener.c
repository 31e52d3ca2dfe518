/* test_otlp_listener.c - the agent receiver's connections
 * (src/gateway/otlp_listener.h), driven over a socketpair: routes and
 * methods, the body limit, the request deadline (a stalled client and a
 * deadline shortened through stats.request_ms: nothing here measures time),
 * content types, chunked bodies, keep-alive and pipelining, Expect, and the
 * relay budget. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "otlp_listener.h"
#include "test.h"

static const struct tm_relay_stamp STAMP = {
	"box-0123456789abcdef", "0123456789abcdef0123456789abcdef", 0, NULL,
};

/* What the relay callback saw. */
struct seen {
	int calls;
	enum tm_relay_kind kind;
	char json[4096];
	size_t pb_len;
	int rc;                 /* what it returns */
	sem_t *entered, *release;  /* set: it posts entered, then waits for release */
};

static int relay_cb(void *arg, enum tm_relay_kind k, const struct tm_relay_out *o)
{
	struct seen *s = arg;
	__atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
	s->kind = k;
	size_t n = o->json.n < sizeof(s->json) - 1 ? o->json.n : sizeof(s->json) - 1;
	memcpy(s->json, o->json.p, n);
	s->json[n] = '\0';
	s->pb_len = o->pb.n;
	if (s->entered != NULL) {
		sem_post(s->entered);
		sem_wait(s->release);
	}
	return s->rc;
}

struct server {
	int fd;
	struct seen *seen;
	struct gw_otlp_stats *stats;
	pthread_t th;
};

static void *serve_thread(void *p)
{
	struct server *s = p;
	gw_otlp_serve(s->fd, -1, &STAMP, relay_cb, s->seen, s->stats);
	return NULL;
}

/* A connection: returns the client's end; the server runs on a thread. */
static int start(struct server *s, struct seen *seen, struct gw_otlp_stats *stats)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	s->fd = sv[1];
	s->seen = seen;
	s->stats = stats;
	pthread_create(&s->th, NULL, serve_thread, s);
	return sv[0];
}

static void finish(struct server *s, int cfd)
{
	shutdown(cfd, SHUT_WR);
	pthread_join(s->th, NULL);
	close(cfd);
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w <= 0)
			return;
		c += w;
		n -= (size_t)w;
	}
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* One response: status (0 at end of stream or on a hang), its head in head[]
 * (lower-cased), and the body of its content-length in body[]. A 30 s guard
 * keeps a broken server from hanging the suite; no result depends on it. */
struct resp {
	int status;
	char head[1024];
	char body[64];
};

static int read_byte(int fd, char *c)
{
	struct pollfd p = { fd, POLLIN, 0 };
	if (poll(&p, 1, 30000) != 1)
		return -1;
	return read(fd, c, 1) == 1 ? 0 : -1;
}

static int read_resp(int fd, struct resp *r)
{
	size_t n = 0;
	memset(r, 0, sizeof(*r));
	while (n < sizeof(r->head) - 1) {
		char c;
		if (read_byte(fd, &c) < 0)
			return r->status = 0;
		r->head[n++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
		if (n >= 4 && memcmp(r->head + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (sscanf(r->head, "http/1.1 %d", &r->status) != 1)
		return r->status = 0;
	const char *cl = strstr(r->head, "content-length: ");
	size_t len = cl ? strtoul(cl + 16, NULL, 10) : 0;
	for (size_t i = 0; i < len && i < sizeof(r->body) - 1; i++)
		if (read_byte(fd, &r->body[i]) < 0)
			break;
	return r->status;
}

static bool at_eof(int fd)
{
	char c;
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, 30000) == 1 && read(fd, &c, 1) == 0;
}

/* Box's answer: the status, content-type application/json, `{}`. */
static void check_answer(const struct resp *r, int status)
{
	CHECK_EQ_INT(r->status, status);
	CHECK(strstr(r->head, "\r\ncontent-type: application/json\r\n") != NULL);
	CHECK_EQ_STR(r->body, "{}");
}

static const char SPAN_JSON[] =
	"{\"resourceSpans\":[{\"scopeSpans\":[{\"scope\":{\"name\":\"strands-box.policy\"},\"spans\":"
	"[{\"name\":\"s\",\"attributes\":[{\"key\":\"strands.box.policy.verdict\",\"value\":{}}]}]}]}]}";

/* ExportLogsServiceRequest{resource_logs: [{}]} */
static const char LOGS_PB[] = { 0x0a, 0x00 };

/* Send one POST with a Content-Length body. */
static void post(int fd, const char *path, const char *ctype, const void *body, size_t n)
{
	char head[512];
	snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: 127.0.0.1:4318\r\n%s%s%s"
		 "Content-Length: %zu\r\n\r\n", path, ctype ? "Content-Type: " : "",
		 ctype ? ctype : "", ctype ? "\r\n" : "", n);
	send_str(fd, head);
	send_all(fd, body, n);
}

static void test_routes_and_types(void)
{
	struct seen seen = { 0 };
	struct gw_otlp_stats stats = { 0 };
	struct server s;
	struct resp r;
	int c = start(&s, &seen, &stats);

	/* JSON, the media type in any case with parameters */
	post(c, "/v1/traces", "Application/JSON; charset=utf-8", SPAN_JSON, strlen(SPAN_JSON));
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.calls, 1);
	CHECK_EQ_INT(seen.kind, TM_RELAY_TRACES);
	CHECK(strstr(seen.json, "\"name\":\"agent-claimed:strands-box.policy\"") != NULL);
	CHECK(strstr(seen.json, "\"strands.box.policy.verdict\"") == NULL);
	CHECK(strstr(seen.json, "{\"key\":\"strands.box.source\",\"value\":{\"stringValue\":\"agent\"}}") != NULL);
	CHECK(seen.pb_len > 0);

	/* kept alive: protobuf with no content-type, then with x-protobuf */
	post(c, "/v1/logs", NULL, LOGS_PB, sizeof(LOGS_PB));
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.calls, 2);
	CHECK_EQ_INT(seen.kind, TM_RELAY_LOGS);
	CHECK(strstr(seen.json, "\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"strands.box.source\"") != NULL);

	/* metrics, as JSON; application/jsonp is not JSON, so these bytes are bad protobuf */
	static const char m[] = "{\"resourceMetrics\":[]}";
	post(c, "/v1/metrics", "application/json", m, strlen(m));
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.kind, TM_RELAY_METRICS);
	post(c, "/v1/metrics", "application/jsonp", m, strlen(m));
	read_resp(c, &r);
	check_answer(&r, 400);
	CHECK_EQ_INT(seen.calls, 3);

	/* the same JSON on the logs route: unknown keys are ignored, an empty request */
	post(c, "/v1/logs", "application/json", SPAN_JSON, strlen(SPAN_JSON));
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_STR(seen.json, "{\"resourceLogs\":[]}\n");

	/* other paths 404, other methods 405; no body, so the connection stays */
	static const char *const paths[] = { "/", "/v1/traces/extra", "/v1/profiles", "/v1/logs/extra",
					     "/v1/trace" };
	for (size_t i = 0; i < 5; i++) {
		char req[256];
		snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", paths[i]);
		send_str(c, req);
		read_resp(c, &r);
		check_answer(&r, 404);
	}
	send_str(c, "GET /v1/traces HTTP/1.1\r\nHost: x\r\n\r\n");
	read_resp(c, &r);
	check_answer(&r, 405);
	CHECK(strstr(r.head, "\r\nallow: post\r\n") != NULL);
	send_str(c, "PUT /v1/logs?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
	read_resp(c, &r);
	check_answer(&r, 405);
	/* a query does not change the route */
	post(c, "/v1/logs?tenant=a", NULL, LOGS_PB, 0);
	read_resp(c, &r);
	check_answer(&r, 200);

	/* bad bodies: 400, the connection stays */
	post(c, "/v1/traces", "application/json", "{\"resourceSpans\":7}", 19);
	read_resp(c, &r);
	check_answer(&r, 400);
	send_all(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n\x0a\x05", 58);
	read_resp(c, &r);
	check_answer(&r, 400);

	/* a 404 with a body it does not read: answered, then closed */
	post(c, "/nope", NULL, "abc", 3);
	read_resp(c, &r);
	check_answer(&r, 404);
	CHECK(strstr(r.head, "\r\nconnection: close\r\n") != NULL);
	CHECK(at_eof(c));
	finish(&s, c);
	CHECK_EQ_INT(stats.accepted, 5);
	CHECK_EQ_INT(stats.refused, 11);
	CHECK_EQ_INT(stats.dropped_busy, 0);
}

static void test_framing(void)
{
	struct seen seen = { 0 };
	struct gw_otlp_stats stats = { 0 };
	struct server s;
	struct resp r;
	int c = start(&s, &seen, &stats);

	/* chunked, with an extension and a trailer */
	send_str(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n5;x=y\r\n{\"res\r\n");
	char chunk[256];
	snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n0\r\nX-T: 1\r\n\r\n", strlen(SPAN_JSON) - 5, SPAN_JSON + 5);
	send_str(c, chunk);
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.calls, 1);
	CHECK(strstr(seen.json, "agent-claimed:strands-box.policy") != NULL);

	/* pipelined: two requests in one write, two answers in order */
	char two[512];
	size_t k = 0;
	for (int i = 0; i < 2; i++) {
		k += (size_t)snprintf(two + k, sizeof(two) - k, "POST /v1/logs HTTP/1.1\r\nHost: x\r\n"
				      "Content-Length: 2\r\n\r\n");
		memcpy(two + k, LOGS_PB, 2);
		k += 2;
	}
	send_all(c, two, k);
	read_resp(c, &r);
	check_answer(&r, 200);
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.calls, 3);

	/* Expect: 100-continue gets its interim answer before the body is sent */
	send_str(c, "POST /v1/logs HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
	read_resp(c, &r);
	CHECK_EQ_INT(r.status, 100);
	send_all(c, LOGS_PB, 2);
	read_resp(c, &r);
	check_answer(&r, 200);

	/* a relay that fails is Box's `let _ =`: the agent still gets 200 */
	seen.rc = -EIO;
	send_all(c, two, k / 2);
	read_resp(c, &r);
	check_answer(&r, 200);

	/* HTTP/1.0 without keep-alive: answered, then closed */
	send_str(c, "POST /v1/logs HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK(strstr(r.head, "\r\nconnection: close\r\n") != NULL);
	CHECK(at_eof(c));
	finish(&s, c);

	/* a head the parser refuses: its status, then closed */
	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/logs HTTP/1.1\nHost: x\r\n\r\n");
	read_resp(c, &r);
	check_answer(&r, 400);
	CHECK(at_eof(c));
	finish(&s, c);
	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/logs HTTP/1.1\r\nContent-Length: 0\r\n\r\n");      /* no Host */
	read_resp(c, &r);
	check_answer(&r, 400);
	finish(&s, c);
	/* a bad chunk size */
	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/logs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
	read_resp(c, &r);
	check_answer(&r, 400);
	CHECK(at_eof(c));
	finish(&s, c);
}

struct writer {
	int fd;
	const char *p;
	size_t n;
	pthread_t th;
};

static void *write_thread(void *p)
{
	struct writer *w = p;
	send_all(w->fd, w->p, w->n);
	return NULL;
}

static void test_limits(void)
{
	struct seen seen = { 0 };
	struct gw_otlp_stats stats = { 0 };
	struct server s;
	struct resp r;

	/* Content-Length past 4 MiB: 413 before a byte of the body is read */
	int c = start(&s, &seen, &stats);
	char req[256];
	snprintf(req, sizeof(req), "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\n\r\n",
		 GW_OTLP_BODY_MAX + 1);
	send_str(c, req);
	read_resp(c, &r);
	check_answer(&r, 413);
	CHECK(at_eof(c));
	finish(&s, c);

	/* exactly 4 MiB is read (and refused as protobuf: zero bytes are field 0) */
	size_t big = GW_OTLP_BODY_MAX + 4096;
	char *body = calloc(1, big + 64);
	c = start(&s, &seen, &stats);
	snprintf(req, sizeof(req), "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\n\r\n",
		 GW_OTLP_BODY_MAX);
	send_str(c, req);
	struct writer w = { c, body, GW_OTLP_BODY_MAX, 0 };
	pthread_create(&w.th, NULL, write_thread, &w);
	read_resp(c, &r);
	pthread_join(w.th, NULL);
	check_answer(&r, 400);
	finish(&s, c);

	/* chunked past 4 MiB: 413 */
	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
	int k = snprintf(body, 64, "%zx\r\n", big);
	w = (struct writer){ c, body, (size_t)k + big, 0 };
	memset(body + k, 'a', big);
	pthread_create(&w.th, NULL, write_thread, &w);
	read_resp(c, &r);
	shutdown(c, SHUT_RD);   /* the writer stops when the server is gone */
	finish(&s, c);
	pthread_join(w.th, NULL);
	check_answer(&r, 413);
	free(body);

	/* 1025 resources: 413, nothing relayed */
	int before = seen.calls;
	c = start(&s, &seen, &stats);
	static char many[2 * 1025];
	for (int i = 0; i < 1025; i++)
		many[2 * i] = 0x0a, many[2 * i + 1] = 0;
	snprintf(req, sizeof(req), "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", sizeof(many));
	send_str(c, req);
	send_all(c, many, sizeof(many));
	read_resp(c, &r);
	check_answer(&r, 413);
	CHECK_EQ_INT(seen.calls, before);
	/* 1024 pass on the same connection */
	snprintf(req, sizeof(req), "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", sizeof(many) - 2);
	send_str(c, req);
	send_all(c, many, sizeof(many) - 2);
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen.calls, before + 1);
	finish(&s, c);
}

/* The deadline, shortened: a client that stalls in the head and one that
 * stalls in the body get 408 and a closed connection. */
static void test_deadline(void)
{
	struct seen seen = { 0 };
	struct gw_otlp_stats stats = { .request_ms = 50 };
	struct server s;
	struct resp r;

	int c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\n");
	read_resp(c, &r);
	check_answer(&r, 408);
	CHECK(at_eof(c));
	finish(&s, c);

	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{\"re");
	read_resp(c, &r);
	check_answer(&r, 408);
	CHECK(at_eof(c));
	finish(&s, c);

	c = start(&s, &seen, &stats);
	send_str(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab");
	read_resp(c, &r);
	check_answer(&r, 408);
	finish(&s, c);
	CHECK_EQ_INT(seen.calls, 0);
	CHECK_EQ_INT(stats.refused, 3);

	/* a connection that closes before a request: no answer, no count */
	c = start(&s, &seen, &stats);
	finish(&s, c);
	CHECK_EQ_INT(stats.refused, 3);
}

struct poster {
	struct server s;
	int c;
	struct resp r;
	pthread_t th;
	const char *body;
	size_t len;
};

static void *post_thread(void *p)
{
	struct poster *q = p;
	post(q->c, "/v1/traces", "application/json", q->body, q->len);
	read_resp(q->c, &q->r);
	return NULL;
}

/* A traces body of about n bytes: one span whose name fills it. */
static char *big_body(size_t n)
{
	static const char head[] = "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"";
	static const char tail[] = "\"}]}]}]}";
	char *b = malloc(n + 1);
	memcpy(b, head, sizeof(head) - 1);
	memset(b + sizeof(head) - 1, 'x', n - (sizeof(head) - 1) - (sizeof(tail) - 1));
	memcpy(b + n - (sizeof(tail) - 1), tail, sizeof(tail));
	return b;
}

/* The relay budget: payloads relayed at once hold at most GW_OTLP_BODY_MAX
 * of body between them.  While a near-full body is being relayed a second
 * payload is answered 200 and dropped before it is decoded (so even a bad
 * body gets 200), as Box's one slot drops it; small payloads relay side by
 * side (where Box's slot would drop all but one). */
static void test_relay_budget(void)
{
	sem_t entered, release;
	sem_init(&entered, 0, 0);
	sem_init(&release, 0, 0);
	struct seen seen_a = { .entered = &entered, .release = &release }, seen_b = { 0 };
	struct gw_otlp_stats stats = { 0 };
	struct poster a;
	struct resp r;

	char *big = big_body(GW_OTLP_BODY_MAX - 4);   /* less room than any body below */
	a.body = big;
	a.len = strlen(big);
	a.c = start(&a.s, &seen_a, &stats);
	pthread_create(&a.th, NULL, post_thread, &a);
	sem_wait(&entered);             /* a's payload holds nearly all the budget */
	CHECK_EQ_INT(__atomic_load_n(&stats.relay_bytes, __ATOMIC_SEQ_CST), a.len);

	struct server s;
	int c = start(&s, &seen_b, &stats);
	post(c, "/v1/traces", "application/json", SPAN_JSON, strlen(SPAN_JSON));
	read_resp(c, &r);
	check_answer(&r, 200);
	post(c, "/v1/traces", "application/json", "not json", 8);
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(__atomic_load_n(&stats.dropped_busy, __ATOMIC_SEQ_CST), 2);
	CHECK_EQ_INT(seen_b.calls, 0);

	sem_post(&release);
	pthread_join(a.th, NULL);
	check_answer(&a.r, 200);
	CHECK_EQ_INT(seen_a.calls, 1);
	CHECK_EQ_INT(__atomic_load_n(&stats.relay_bytes, __ATOMIC_SEQ_CST), 0);

	/* a small payload being relayed leaves room: another relays beside it */
	a.body = SPAN_JSON;
	a.len = strlen(SPAN_JSON);
	pthread_create(&a.th, NULL, post_thread, &a);
	sem_wait(&entered);
	post(c, "/v1/logs", NULL, LOGS_PB, 2);
	read_resp(c, &r);
	check_answer(&r, 200);
	CHECK_EQ_INT(seen_b.calls, 1);
	CHECK_EQ_INT(seen_b.kind, TM_RELAY_LOGS);
	sem_post(&release);
	pthread_join(a.th, NULL);
	check_answer(&a.r, 200);
	CHECK_EQ_INT(seen_a.calls, 2);

	/* the budget is whole again: the next payload is decoded (and refused) */
	post(c, "/v1/traces", "application/json", "not json", 8);
	read_resp(c, &r);
	check_answer(&r, 400);
	finish(&s, c);
	finish(&a.s, a.c);
	CHECK_EQ_INT(stats.accepted, 3);
	CHECK_EQ_INT(stats.dropped_busy, 2);
	CHECK_EQ_INT(stats.refused, 1);
	CHECK_EQ_INT(stats.relay_bytes, 0);
	free(big);
	sem_destroy(&entered);
	sem_destroy(&release);
}

/* The stop descriptor ends an idle connection without an answer. */
struct stopper {
	int fd, stop;
	struct seen *seen;
	struct gw_otlp_stats *stats;
};

static void *stop_thread(void *p)
{
	struct stopper *h = p;
	gw_otlp_serve(h->fd, h->stop, &STAMP, relay_cb, h->seen, h->stats);
	return NULL;
}

static void test_stop(void)
{
	struct seen seen = { 0 };
	struct gw_otlp_stats stats = { 0 };
	int sv[2], stop[2];
	pthread_t th;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(pipe(stop) == 0);
	struct stopper h = { sv[1], stop[0], &seen, &stats };
	pthread_create(&th, NULL, stop_thread, &h);
	CHECK(write(stop[1], "x", 1) == 1);
	CHECK(at_eof(sv[0]));
	pthread_join(th, NULL);
	CHECK_EQ_INT(stats.refused, 0);
	close(sv[0]);
	close(stop[0]);
	close(stop[1]);
}

static const struct test_case tests[] = {
	{ "routes_and_types", test_routes_and_types },
	{ "framing", test_framing },
	{ "limits", test_limits },
	{ "deadline", test_deadline },
	{ "relay_budget", test_relay_budget },
	{ "stop", test_stop },
};

TEST_MAIN(tests)
