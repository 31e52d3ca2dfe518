/* test_proxy.c - the gateway end to end in one process: a real listener, a
 * real upstream on loopback, raw bytes from a client socket, and the history
 * the decisions wrote.  The plain path and the abuse cases live here (this
 * test runs under ASan in make test); TLS interception with real clients is
 * tests/gateway/. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "boxconf.h"
#include "dogwood.h"
#include "test.h"
#include "policy_engine.h"
#include "ca.h"
#include "gateway.h"

/* the harness's counters: this file has its own main (shared set-up) */
unsigned long test_passed, test_failed;

#define CHECK_HAS(hay, needle)                                                            \
	do {                                                                              \
		if (strstr((hay), (needle)))                                              \
			test_passed++;                                                         \
		else {                                                                    \
			test_failed++;                                                         \
			printf("FAIL %s:%d: no \"%s\" in:\n%s\n", __FILE__, __LINE__,      \
			       (needle), (hay));                                          \
		}                                                                         \
	} while (0)

#define CHECK_NOT(hay, needle)                                                            \
	do {                                                                              \
		if (!strstr((hay), (needle)))                                             \
			test_passed++;                                                         \
		else {                                                                    \
			test_failed++;                                                         \
			printf("FAIL %s:%d: \"%s\" in:\n%s\n", __FILE__, __LINE__, (needle), \
			       (hay));                                                    \
		}                                                                         \
	} while (0)

/* ---- the upstream: a small HTTP/1.1 origin on loopback --------------------- */

static atomic_int up_conns, up_requests;
static int up_port;

static ssize_t read_until(int fd, char *buf, size_t cap, size_t *len, const char *end)
{
	while (!memmem(buf, *len, end, strlen(end))) {
		if (*len >= cap)
			return -1;
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n <= 0)
			return -1;
		*len += (size_t)n;
	}
	return 0;
}

static void write_all(int fd, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k <= 0)
			return;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

/* Take n bytes from buf[0, *len) (reading more from fd as needed) into out. */
static int take(int fd, char *buf, size_t cap, size_t *len, char *out, size_t n)
{
	while (*len < n) {
		ssize_t k = read(fd, buf + *len, cap - *len);
		if (k <= 0)
			return -1;
		*len += (size_t)k;
	}
	memcpy(out, buf, n);
	memmove(buf, buf + n, *len - n);
	*len -= n;
	return 0;
}

static int take_line(int fd, char *buf, size_t cap, size_t *len, char *out, size_t outcap)
{
	if (read_until(fd, buf, cap, len, "\r\n") < 0)
		return -1;
	char *e = memmem(buf, *len, "\r\n", 2);
	size_t n = (size_t)(e - buf);
	if (n >= outcap)
		return -1;
	take(fd, buf, cap, len, out, n + 2);
	out[n] = '\0';
	return 0;
}

static void *up_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[262144];
	size_t len = 0;
	atomic_fetch_add(&up_conns, 1);
	for (;;) {
		if (read_until(fd, buf, sizeof(buf), &len, "\r\n\r\n") < 0)
			break;
		char *end = memmem(buf, len, "\r\n\r\n", 4);
		size_t hlen = (size_t)(end - buf) + 4;
		char head[65536];
		if (hlen >= sizeof(head))
			break;
		memcpy(head, buf, hlen);
		head[hlen] = '\0';
		memmove(buf, buf + hlen, len - hlen);
		len -= hlen;
		atomic_fetch_add(&up_requests, 1);
		char method[16], path[256];
		if (sscanf(head, "%15s %255s", method, path) != 2)
			break;
		if (strstr(head, "Expect: 100-continue"))
			write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		/* the body (a careless origin leaves /nobody's unread: it stays in
		 * the buffer, where it would parse as the next request) */
		static char body[3 << 20];
		size_t blen = 0;
		const char *cl = strcasestr(head, "\r\ncontent-length:");
		if (strcmp(path, "/nobody") == 0) {
			/* nothing read */
		} else if (cl) {
			size_t n = strtoul(cl + 17, NULL, 10);
			if (n > sizeof(body) || take(fd, buf, sizeof(buf), &len, body, n) < 0)
				break;
			blen = n;
		} else if (strcasestr(head, "\r\ntransfer-encoding: chunked")) {
			for (;;) {
				char line[64];
				if (take_line(fd, buf, sizeof(buf), &len, line, sizeof(line)) < 0)
					goto done;
				size_t n = strtoul(line, NULL, 16);
				if (n == 0) {
					take_line(fd, buf, sizeof(buf), &len, line, sizeof(line));
					break;
				}
				if (blen + n > sizeof(body) ||
				    take(fd, buf, sizeof(buf), &len, body + blen, n) < 0 ||
				    take_line(fd, buf, sizeof(buf), &len, line, sizeof(line)) < 0)
					goto done;
				blen += n;
			}
		}
		char resp[300000];
		int n;
		if (strcmp(path, "/slow") == 0)
			sleep(4);       /* an upstream still working when the gateway stops */
		if (strcmp(path, "/count") == 0) {
			unsigned long sum = 0;
			for (size_t i = 0; i < blen; i++)
				sum = sum * 31 + (unsigned char)body[i];
			char line[80];
			int ln = snprintf(line, sizeof(line), "len=%-12zu sum=%-20lu\n", blen,
					  sum % 100000000000000000ul);
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s",
				     ln, line);
		} else if (strcmp(method, "HEAD") == 0) {
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
		} else if (strcmp(path, "/spoof") == 0) {
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nx-strands-box-egress: refused\r\n"
				     "X-Kept: yes\r\nContent-Length: 5\r\n\r\nspoof");
		} else if (strcmp(path, "/close") == 0) {
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
				     "until-the-end");
			write_all(fd, resp, (size_t)n);
			break;
		} else if (strcmp(path, "/chunked") == 0) {
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				     "2\r\nab\r\n3;ext=1\r\ncde\r\n0\r\nX-Trailer: t\r\n\r\n");
		} else if (strcmp(path, "/cut") == 0) {
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
			write_all(fd, resp, (size_t)n);
			break;
		} else {
			/* echo: the head as received, then the body */
			char text[280000];
			int t = snprintf(text, sizeof(text), "%s%.*s", head, (int)blen, body);
			n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s",
				     t, text);
		}
		write_all(fd, resp, (size_t)n);
		if (strcasestr(head, "\r\nconnection: close"))
			break;
	}
done:
	close(fd);
	return NULL;
}

static void *up_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_t t;
		pthread_create(&t, NULL, up_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- the client ---------------------------------------------------------- */

static int gw_port;

static int client(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)gw_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read until the peer closes or `timeout_ms` passes with nothing new, or
 * (want > 0) until `want` occurrences of "HTTP/1.1 " followed by complete
 * bodies... kept simple: until close, or until the text holds `until`. */
static size_t recv_text(int fd, char *buf, size_t cap, const char *until, int timeout_ms,
			bool *closed)
{
	size_t len = 0;
	*closed = false;
	buf[0] = '\0';
	for (;;) {
		if (until && strstr(buf, until))
			return len;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, timeout_ms) <= 0)
			return len;
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n <= 0) {
			*closed = true;
			return len;
		}
		len += (size_t)n;
		buf[len] = '\0';
		if (len + 1 >= cap)
			return len;
	}
}

/* One exchange on a fresh connection: send req, read to close. */
static void exchange(const char *req, size_t reqlen, char *out, size_t cap, bool *closed)
{
	int fd = client();
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	write_all(fd, req, reqlen);
	recv_text(fd, out, cap, NULL, 5000, closed);
	close(fd);
}

/* ---- the history ----------------------------------------------------------- */

struct hist {
	char text[65536];
	size_t len;
};

/* The whole history, one line an event (it outgrows any slice read). */
struct hist_all {
	char text[8 << 20];
	size_t len;
};

static int on_event(void *arg, const struct dw_history_event *ev)
{
	struct hist_all *h = arg;
	int n = snprintf(h->text + h->len, sizeof(h->text) - h->len, "%s:%s %s\n", ev->action,
			 ev->kind, ev->json);
	if (n > 0 && h->len + (size_t)n < sizeof(h->text))
		h->len += (size_t)n;
	return 0;
}

/* The events since the last call, one line each: "action:kind {json}". */
static char hist_dir[PATH_MAX];
static size_t hist_seen;

static void history_since(struct hist *out)
{
	static struct hist_all all;
	char err[256];
	all.len = 0;
	out->len = 0;
	out->text[0] = '\0';
	dw_history_read(hist_dir, on_event, &all, err, sizeof(err));
	size_t lines = 0;
	for (char *p = all.text; p < all.text + all.len; p = strchr(p, '\n') + 1) {
		if (lines++ >= hist_seen) {
			size_t n = (size_t)(strchr(p, '\n') + 1 - p);
			if (out->len + n >= sizeof(out->text))
				break;
			memcpy(out->text + out->len, p, n);
			out->len += n;
		}
	}
	out->text[out->len] = '\0';
	hist_seen = lines;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* The first history line holding needle, copied into out ("" if none). */
static const char *line_with(const char *hay, const char *needle, char *out, size_t cap)
{
	const char *p = strstr(hay, needle), *b, *e;
	out[0] = '\0';
	if (p == NULL)
		return out;
	for (b = p; b > hay && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	size_t n = e ? (size_t)(e - b) : strlen(b);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, b, n);
	out[n] = '\0';
	return out;
}

/* The requestId of a history line ("" if none). */
static const char *request_id(const char *line, char *out, size_t cap)
{
	const char *p = strstr(line, "\"requestId\":\"");
	out[0] = '\0';
	if (p != NULL)
		snprintf(out, cap, "%.*s", (int)strcspn(p + 13, "\""), p + 13);
	return out;
}

/* A refusal's line holds cause, rule, reason and status 403, and shares the
 * requestId of the decision line before it (decision NULL: none). */
static void check_refusal(const char *hist, const char *action, const char *cause,
			  const char *rule, const char *reason, const char *decision)
{
	char line[8192], want[2048], rid[32], drid[32], dline[8192];
	snprintf(want, sizeof(want), "%s:refusal ", action);
	line_with(hist, want, line, sizeof(line));
	CHECK_HAS(line, want);
	snprintf(want, sizeof(want), "\"cause\":\"%s\"", cause);
	CHECK_HAS(line, want);
	snprintf(want, sizeof(want), "\"rule\":\"%s\"", rule);
	CHECK_HAS(line, want);
	snprintf(want, sizeof(want), "\"reason\":\"%s", reason);
	CHECK_HAS(line, want);
	CHECK_HAS(line, "\"output\":{\"status\":403}");
	if (decision != NULL) {
		line_with(hist, decision, dline, sizeof(dline));
		CHECK(dline[0] != '\0' && strcmp(request_id(dline, drid, sizeof(drid)),
						   request_id(line, rid, sizeof(rid))) == 0);
		CHECK(strstr(hist, dline) < strstr(hist, line));     /* the decision first */
	}
}

/* ---- the resolver seam (dest.c): "rebind.test" answers 127.0.0.1 ------------ */

extern int (*gw_dest_getaddrinfo_)(const char *, const char *, const struct addrinfo *,
				   struct addrinfo **);
extern void (*gw_dest_freeaddrinfo_)(struct addrinfo *);

static int rebind_gai(const char *node, const char *service, const struct addrinfo *hints,
		      struct addrinfo **res)
{
	if (strcmp(node, "rebind.test") != 0)
		return getaddrinfo(node, service, hints, res);
	return getaddrinfo("127.0.0.1", service, &(struct addrinfo){ .ai_flags = AI_NUMERICHOST,
			   .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, res);
}

/* Set while no gateway thread resolves (between requests of one test). */
static void use_rebind_dns(void)
{
	gw_dest_getaddrinfo_ = rebind_gai;
}

static void use_real_dns(void)
{
	gw_dest_getaddrinfo_ = getaddrinfo;
}

/* ---- the gateway ------------------------------------------------------------- */

static const char policy[] =
	"@id(\"connect\")\n"
	"permit (principal, action == Box::Action::\"net:connect\", resource)\n"
	"when { context.input.host == \"up.test\" || context.input.host == \"127.0.0.1\" ||\n"
	"  context.input.host == \"rebind.test\" || context.input.host == \"meta.test\" };\n"
	"@id(\"reads\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.method == \"GET\" || context.input.method == \"HEAD\" ||\n"
	"  context.input.path == \"/upload\" || context.input.path == \"/count\" };\n"
	"@id(\"no_admin\")\n"
	"@description(\"No admin paths.\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.path like \"/admin*\" };\n";


struct gw_run {
	struct box_config *cfg;
	struct gw_decider dec;
	struct gateway *g;
	int port;
};

static int start(struct gw_run *r, const char *dir, bool floor, struct dw_engine *eng,
		 struct dw_monitor *mon)
{
	char toml[1024], err[512];
	struct box_config_error cerr;
	snprintf(toml, sizeof(toml),
		 "name = \"gwtest\"\nbox_dir = \"%s/box\"\n[gateway]\ndestination_floor = %s\n"
		 "hosts = { \"up.test\" = \"127.0.0.1\", \"meta.test\" = \"169.254.169.254\" }\n",
		 dir, floor ? "true" : "false");
	if (box_config_load("/nonexistent/box.toml", toml, strlen(toml), "/root", &r->cfg,
			    &cerr) != 0) {
		printf("config: %s: %s\n", cerr.where, cerr.msg);
		return -1;
	}
	int lfd = listen_any(&r->port);
	int tfd = open(dir, O_RDONLY | O_DIRECTORY);
	uint16_t self = (uint16_t)r->port;
	gw_decider_local(&r->dec, mon, eng, NULL);
	struct gw_params p = { .cfg = r->cfg, .dec = &r->dec, .home = "/nonexistent",
			       .trust_dirfd = tfd, .self_ports = &self, .n_self_ports = 1 };
	int rc = gw_new(&p, &r->g, err, sizeof(err));
	close(tfd);
	if (rc != 0) {
		printf("gw_new: %s\n", err);
		return -1;
	}
	/* cert.pem is written; a second gateway in this directory replaces it */
	if (gw_serve(r->g, lfd, "[agent]", NULL, err, sizeof(err)) != 0) {
		printf("gw_serve: %s\n", err);
		return -1;
	}
	return 0;
}

static void stop(struct gw_run *r)
{
	gw_free(r->g);
	box_config_free(r->cfg);
}

/* ---- the cases ----------------------------------------------------------------- */

static char out[400000];

static void test_plain(void)
{
	char req[1024];
	bool closed;
	struct hist h;

	/* a permitted GET: the head forwarded as a proxy should, the events in order */
	int n = snprintf(req, sizeof(req),
			 "GET http://up.test:%d/hello?q=1 HTTP/1.1\r\nHost: up.test:%d\r\n"
			 "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
			 "Connection: close, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n",
			 up_port, up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK\r\n");
	CHECK_HAS(out, "GET /hello?q=1 HTTP/1.1\r\n");
	CHECK_HAS(out, "X-Keep: 2\r\n");
	CHECK_NOT(out, "X-Drop");                       /* nominated by Connection */
	CHECK_NOT(out, "Proxy-");                       /* hop-by-hop */
	CHECK_HAS(out, "Connection: close\r\n");        /* the client asked to close */
	CHECK(closed);
	history_since(&h);
	/* Box's order: net:connect without ip (request only), with ip
	 * (request, response), http:request (request, response 200) */
	/* the first event: the pre-DNS net:connect, without ip */
	char *nl = strchr(h.text, '\n');
	CHECK(strncmp(h.text, "net:connect:request ", 20) == 0);
	CHECK(nl != NULL && !memmem(h.text, (size_t)(nl - h.text), "\"ip\"", 4));
	CHECK(count(h.text, "net:connect:request") == 2);
	CHECK(count(h.text, "net:connect:response") == 1);
	CHECK(count(h.text, "http:request:request") == 1);
	CHECK(count(h.text, "http:request:response") == 1);
	CHECK_HAS(h.text, "\"input\":{\"host\":\"up.test\",\"port\":");
	CHECK_HAS(h.text, "\"ip\":\"127.0.0.1\"");
	CHECK_HAS(h.text, "\"method\":\"GET\",\"path\":\"/hello\"");
	CHECK_HAS(h.text, "\"intercepted\":false");
	CHECK_HAS(h.text, "\"output\":{\"status\":200}");
	/* body_bytes is the request's: offered on ::request, delivered
	 * upstream on ::response (0 for a GET either way) */
	char *resp = strstr(h.text, "http:request:response");
	CHECK(resp != NULL && strstr(resp, "\"body_bytes\":0,") != NULL);
}

/* The upstream gets the path the policy judged. */
static void test_path_forwarded(void)
{
	char req[512];
	bool closed;
	int n = snprintf(req, sizeof(req), "GET http://up.test:%d/a/./b/../c%%7e/x\\..\\y?q=%%2e HTTP/1.1\r\n"
			 "Connection: close\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "GET /a/c~/x%5C..%5Cy?q=%2e HTTP/1.1\r\n");
	struct hist h;
	history_since(&h);
	CHECK_HAS(h.text, "\"path\":\"/a/c~/x%5C..%5Cy\"");    /* the same path decided */
}

static void test_keepalive_pipelined(void)
{
	char req[2048];
	bool closed;
	int before = atomic_load(&up_conns), reqs = atomic_load(&up_requests);
	struct hist h;

	/* three requests in one write: answered in order on one connection,
	 * each decided, one upstream connection */
	int n = snprintf(req, sizeof(req),
			 "GET http://up.test:%d/one HTTP/1.1\r\nHost: up.test\r\n\r\n"
			 "GET http://up.test:%d/two HTTP/1.1\r\n\r\n"
			 "GET http://up.test:%d/three HTTP/1.1\r\nConnection: close\r\n\r\n",
			 up_port, up_port, up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	char *one = strstr(out, "GET /one "), *two = strstr(out, "GET /two "),
	     *three = strstr(out, "GET /three ");
	CHECK(one && two && three && one < two && two < three);
	CHECK(count(out, "HTTP/1.1 200 OK") == 3);
	CHECK(closed);
	CHECK(atomic_load(&up_conns) == before + 1);
	CHECK(atomic_load(&up_requests) == reqs + 3);
	/* Host rewritten to the URL's authority (port kept unless 80) */
	char want[64];
	snprintf(want, sizeof(want), "Host: up.test:%d\r\n", up_port);
	CHECK(count(out, want) == 3);
	history_since(&h);
	CHECK(count(h.text, "http:request:request") == 3);
	CHECK(count(h.text, "http:request:response") == 3);
	CHECK(count(h.text, "net:connect:request") == 2);   /* one connection */
}

static void test_denials(void)
{
	char req[1024];
	bool closed;
	struct hist h;
	int reqs = atomic_load(&up_requests);

	/* default deny: POST is not permitted */
	int n = snprintf(req, sizeof(req),
			 "POST http://up.test:%d/items HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
			 up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	char want[512];
	snprintf(want, sizeof(want),
		 "http:request gate: policy denied this operation on 'up.test:%d/items' "
		 "[default-deny]: No permit policy matched this request.", up_port);
	CHECK(strncmp(out, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	CHECK_HAS(out, "x-strands-box-egress: refused\r\n");
	CHECK_HAS(out, "Connection: close\r\n");
	CHECK_HAS(out, want);
	CHECK(closed);
	/* the refusal is history, with its cause, after its ::request */
	history_since(&h);
	check_refusal(h.text, "http:request", "no_match", "<default-deny>", want,
		      "http:request:request ");
	CHECK(count(h.text, "http:request:refusal") == 1);
	/* a forbid with a description; the path canonical (dot segments, %7E) */
	n = snprintf(req, sizeof(req),
		     "GET http://up.test:%d/x/../admin/%%7Eroot?token=1 HTTP/1.1\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	snprintf(want, sizeof(want),
		 "http:request gate: policy denied this operation on 'up.test:%d/admin/~root' "
		 "[policy: no_admin]: No admin paths.", up_port);
	CHECK_HAS(out, want);
	history_since(&h);
	check_refusal(h.text, "http:request", "forbidden", "no_admin", want, "http:request:request ");
	CHECK_HAS(h.text, "\"path\":\"/admin/~root\"");
	/* net:connect denied before DNS: 403, no prefix */
	exchange("GET http://other.test/ HTTP/1.1\r\n\r\n", strlen("GET http://other.test/ HTTP/1.1\r\n\r\n"), out, sizeof(out), &closed);
	CHECK_HAS(out, "\r\n\r\npolicy denied this operation on 'other.test:80' [default-deny]");
	CHECK_NOT(out, "gate:");
	CHECK(atomic_load(&up_requests) == reqs);       /* nothing went upstream */
	history_since(&h);
	CHECK(count(h.text, "http:request:response") == 0);
	CHECK_HAS(h.text, "\"host\":\"other.test\",\"port\":80}");
	check_refusal(h.text, "net:connect", "no_match", "<default-deny>",
		      "policy denied this operation on 'other.test:80' [default-deny]: No permit "
		      "policy matched this request.", "net:connect:request ");
	/* an upstream's marker is stripped, other fields kept */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/spoof HTTP/1.1\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	CHECK_HAS(out, "X-Kept: yes");
	CHECK_NOT(out, "x-strands-box-egress");
}

/* The tunnel binding (a plain-HTTP tunnel: no TLS needed to reach it): a
 * Host naming another authority is refused, recorded before any decision. */
static void test_authority(void)
{
	char req[1024];
	bool closed;
	struct hist h;
	int reqs = atomic_load(&up_requests);
	history_since(&h);
	int fd = client();
	int n = snprintf(req, sizeof(req), "CONNECT up.test:%d HTTP/1.1\r\n\r\n", up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), "\r\n\r\n", 5000, &closed);
	CHECK(strncmp(out, "HTTP/1.1 200 Connection Established\r\n\r\n", 39) == 0);
	n = snprintf(req, sizeof(req), "GET /x/../elsewhere HTTP/1.1\r\nHost: other.test:%d\r\n"
		     "Content-Length: 2\r\n\r\nhi", up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), NULL, 5000, &closed);
	close(fd);
	CHECK(strncmp(out, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	CHECK_HAS(out, "x-strands-box-egress: refused\r\n");
	CHECK_HAS(out, "\r\n\r\nrequest authority rejected");
	CHECK(atomic_load(&up_requests) == reqs);
	history_since(&h);
	CHECK(count(h.text, "http:request:request") == 0);      /* the policy was not asked */
	check_refusal(h.text, "http:request", "enforcement", "enforcement:egress",
		      "request authority rejected", NULL);
	char line[8192], want[128];
	line_with(h.text, "http:request:refusal", line, sizeof(line));
	/* the tunnel's destination, the canonical path, the offered size */
	snprintf(want, sizeof(want), "\"host\":\"up.test\",\"intercepted\":false,"
		 "\"method\":\"GET\",\"path\":\"/elsewhere\",\"port\":%d}", up_port);
	CHECK_HAS(line, want);
	CHECK_HAS(line, "\"body_bytes\":2,");
}

static void test_bodies(void)
{
	char req[4096];
	bool closed;

	/* a chunked upload arrives whole, re-chunked */
	int n = snprintf(req, sizeof(req),
			 "POST http://up.test:%d/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			 "Connection: close\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			 up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	/* read ahead whole (under 1 MiB): measured, sent with its length */
	CHECK_HAS(out, "Content-Length: 11\r\n\r\nhello world");
	struct hist h;
	history_since(&h);
	CHECK_HAS(h.text, "\"body_bytes\":11,");
	/* a chunked upload past 1 MiB is offered as unknown (INT64_MAX: size
	 * rules fail closed) and streams through whole */
	{
		static char up[1300000 + 4096];
		size_t total = 1200000, k = 0;
		k += (size_t)snprintf(up, sizeof(up), "POST http://up.test:%d/count HTTP/1.1\r\n"
				      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
				      up_port);
		unsigned long sum = 0;
		for (size_t done = 0; done < total;) {
			size_t piece = total - done < 50000 ? total - done : 50000;
			k += (size_t)snprintf(up + k, sizeof(up) - k, "%zx\r\n", piece);
			for (size_t i = 0; i < piece; i++) {
				char ch = (char)('a' + (done + i) % 26);
				up[k++] = ch;
				sum = sum * 31 + (unsigned char)ch;
			}
			k += (size_t)snprintf(up + k, sizeof(up) - k, "\r\n");
			done += piece;
		}
		k += (size_t)snprintf(up + k, sizeof(up) - k, "0\r\n\r\n");
		exchange(up, k, out, sizeof(out), &closed);
		char want[80];
		snprintf(want, sizeof(want), "len=%-12zu sum=%-20lu\n", total,
			 sum % 100000000000000000ul);
		CHECK_HAS(out, want);
		history_since(&h);
		CHECK_HAS(h.text, "\"body_bytes\":9223372036854775807,");
	}
	/* Expect: 100-continue: the upstream's 100 is relayed, then the body */
	int fd = client();
	n = snprintf(req, sizeof(req),
		     "POST http://up.test:%d/upload HTTP/1.1\r\nContent-Length: 4\r\n"
		     "Expect: 100-continue\r\nConnection: close\r\n\r\n", up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), "\r\n\r\n", 5000, &closed);
	CHECK(strncmp(out, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0);
	write_all(fd, "data", 4);
	recv_text(fd, out, sizeof(out), NULL, 5000, &closed);
	CHECK_HAS(out, "Expect: 100-continue");
	CHECK_HAS(out, "\r\n\r\ndata");
	close(fd);
	/* a chunked response: decoded, trailers dropped, re-chunked */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/chunked HTTP/1.1\r\n"
		     "Connection: close\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	/* one decoded piece, one chunk */
	CHECK_HAS(out, "Transfer-Encoding: chunked\r\n");
	CHECK_HAS(out, "\r\n\r\n5\r\nabcde\r\n0\r\n\r\n");
	CHECK_NOT(out, "X-Trailer");
	/* a close-delimited response goes chunked to an HTTP/1.1 client, whose
	 * connection stays open for the next request */
	fd = client();
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/close HTTP/1.1\r\n\r\n", up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), "0\r\n\r\n", 5000, &closed);
	CHECK_HAS(out, "Transfer-Encoding: chunked\r\n\r\nd\r\nuntil-the-end\r\n0\r\n\r\n");
	CHECK(!closed);
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/again HTTP/1.1\r\n"
		     "Connection: close\r\n\r\n", up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), NULL, 5000, &closed);
	CHECK_HAS(out, "GET /again HTTP/1.1");
	close(fd);
	/* HEAD: no body, and the representation's length kept */
	fd = client();
	n = snprintf(req, sizeof(req), "HEAD http://up.test:%d/head HTTP/1.1\r\n\r\n"
		     "GET http://up.test:%d/after-head HTTP/1.1\r\nConnection: close\r\n\r\n",
		     up_port, up_port);
	write_all(fd, req, (size_t)n);
	recv_text(fd, out, sizeof(out), NULL, 5000, &closed);
	CHECK(strncmp(out, "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", 41) == 0);
	CHECK_HAS(out, "\r\n\r\nHTTP/1.1 200 OK\r\n");  /* the next response follows at once */
	CHECK_HAS(out, "GET /after-head HTTP/1.1");
	close(fd);
	/* a body cut short upstream: no terminating chunk, the connection ends */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/cut HTTP/1.1\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "Content-Length: 100\r\n\r\nshort");
	CHECK(closed);
	/* a 100 KiB body streams through */
	static char big[120000];
	n = snprintf(big, sizeof(big), "POST http://up.test:%d/upload HTTP/1.1\r\n"
		     "Content-Length: 102400\r\nConnection: close\r\n\r\n", up_port);
	memset(big + n, 'z', 102400);
	exchange(big, (size_t)n + 102400, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	CHECK(count(out, "z") == 102400);
	/* the upload as delivered, on the ::response an upload budget sums */
	history_since(&h);
	char *up_resp = strstr(h.text, "http:request:response");
	CHECK(up_resp != NULL && strstr(up_resp, "\"body_bytes\":102400,") != NULL);
}

/* A body the origin never reads must not become an undecided request. */
static void test_smuggle(void)
{
	char req[1024];
	bool closed;
	struct hist h;
	static const char inner[] = "DELETE /admin HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
	history_since(&h);
	int reqs = atomic_load(&up_requests);
	int n = snprintf(req, sizeof(req),
			 "GET http://up.test:%d/nobody HTTP/1.1\r\nContent-Length: %zu\r\n\r\n%s"
			 "GET http://up.test:%d/next HTTP/1.1\r\nConnection: close\r\n\r\n",
			 up_port, sizeof(inner) - 1, inner, up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	char want[64];                                 /* told upstream: no reuse after a body */
	snprintf(want, sizeof(want), "Connection: close\r\nContent-Length: %zu\r\n", sizeof(inner) - 1);
	CHECK_HAS(out, want);
	CHECK_HAS(out, "GET /next HTTP/1.1");          /* the next request on a new connection */
	CHECK_NOT(out, "DELETE /admin");
	CHECK(atomic_load(&up_requests) == reqs + 2);  /* /nobody and /next, nothing else */
	history_since(&h);
	CHECK(count(h.text, "http:request:request") == 2);
	CHECK(count(h.text, "net:connect:request") == 4);      /* two connections */
}

static void test_abuse(void)
{
	char req[1024];
	bool closed;
	int reqs = atomic_load(&up_requests);

	/* a connection trickling its head (slowloris) does not hold the others */
	int slow = client();
	write_all(slow, "GET http://up.test/", 19);
	/* Content-Length with Transfer-Encoding: refused, nothing forwarded */
	int n = snprintf(req, sizeof(req),
			 "POST http://up.test:%d/upload HTTP/1.1\r\nContent-Length: 5\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
	CHECK_HAS(out, "x-cairn-reason: Content-Length with Transfer-Encoding\r\n");
	CHECK_HAS(out, "Content-Length: 0\r\n");
	CHECK(closed);
	/* malformed request lines */
	exchange("GET\r\n\r\n", strlen("GET\r\n\r\n"), out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);
	exchange("GET http://up.test/ HTTP/1.1\nHost: x\n\n", strlen("GET http://up.test/ HTTP/1.1\nHost: x\n\n"), out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);
	exchange("GET http://up.test/ HTTP/2.0\r\n\r\n", strlen("GET http://up.test/ HTTP/2.0\r\n\r\n"), out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 505 ", 13) == 0);
	exchange("GET https://up.test/ HTTP/1.1\r\n\r\n", strlen("GET https://up.test/ HTTP/1.1\r\n\r\n"), out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);
	exchange("GET /origin-form HTTP/1.1\r\nHost: up.test\r\n\r\n", strlen("GET /origin-form HTTP/1.1\r\nHost: up.test\r\n\r\n"), out, sizeof(out),
		 &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);
	/* oversized head: 431 */
	static char huge[80000];
	n = snprintf(huge, sizeof(huge), "GET http://up.test:%d/ HTTP/1.1\r\n", up_port);
	for (int i = 0; i < 70; i++)
		n += snprintf(huge + n, sizeof(huge) - (size_t)n, "X-Pad-%d: %01000d\r\n", i, 0);
	n += snprintf(huge + n, sizeof(huge) - (size_t)n, "\r\n");
	exchange(huge, (size_t)n, out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 431 ", 13) == 0);
	CHECK(atomic_load(&up_requests) == reqs);       /* none of these went upstream */
	/* an invalid chunk size in a permitted upload: 400, the connection ends
	 * (the head was already forwarded: the body streams) */
	n = snprintf(req, sizeof(req),
		     "POST http://up.test:%d/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		     "zz\r\nhello\r\n0\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);
	CHECK(closed);
	/* CONNECT to a literal private... here a literal the policy does not
	 * name, and one the floor refuses (tested in test_floor) */
	exchange("CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n", strlen("CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n"), out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	CHECK_HAS(out, "policy denied this operation on '10.1.2.3:443' [default-deny]");
	/* an unsupported expectation */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/ HTTP/1.1\r\nExpect: magic\r\n\r\n",
		     up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK(strncmp(out, "HTTP/1.1 417 ", 13) == 0);
	/* the slow connection is still open and the others were served */
	struct pollfd p = { .fd = slow, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 0);
	close(slow);
	/* and a good request still works */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/ok HTTP/1.1\r\nConnection: close\r\n\r\n",
		     up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "GET /ok HTTP/1.1");
}

static void test_floor(struct dw_engine *eng, struct dw_monitor *mon, const char *dir)
{
	struct gw_run r;
	char req[1024];
	bool closed;
	if (start(&r, dir, true, eng, mon) != 0) {
		CHECK(0);
		return;
	}
	int saved = gw_port;
	gw_port = r.port;
	struct hist h;
	history_since(&h);
	int n = snprintf(req, sizeof(req), "GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	char want[256];
	snprintf(want, sizeof(want), "net:connect refused: '127.0.0.1:%d' is a loopback address, "
		 "which the gateway's destination floor never connects to", up_port);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, "x-strands-box-egress: refused");
	CHECK_HAS(out, want);
	/* the floor on the name (a literal here): its refusal follows the
	 * pre-DNS net:connect, and nothing else is decided */
	history_since(&h);
	check_refusal(h.text, "net:connect", "enforcement", "enforcement:destination-floor", want,
		      "net:connect:request ");
	CHECK(count(h.text, "net:connect:request") == 1);
	CHECK(count(h.text, "http:request:") == 0);
	/* a [gateway] hosts entry to loopback opens that name, the floor on */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/opted-in HTTP/1.1\r\n"
		     "Connection: close\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	CHECK_HAS(out, "GET /opted-in HTTP/1.1");
	/* but not the gateway's own port behind it */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/loop HTTP/1.1\r\n\r\n", r.port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	snprintf(want, sizeof(want), "net:connect refused: '127.0.0.1:%d' is the gateway's own "
		 "port, which the gateway's destination floor never connects to", r.port);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, want);
	history_since(&h);
	check_refusal(h.text, "net:connect", "enforcement", "enforcement:destination-floor", want,
		      "net:connect:error ");
	/* a name DNS resolves into loopback stays refused per address */
	use_rebind_dns();
	n = snprintf(req, sizeof(req), "GET http://rebind.test:%d/ HTTP/1.1\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	snprintf(want, sizeof(want), "net:connect refused: '127.0.0.1:%d' is a loopback address",
		 up_port);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, want);
	use_real_dns();
	/* the floor on the address: the permit's ::error, then the refusal */
	history_since(&h);
	check_refusal(h.text, "net:connect", "enforcement", "enforcement:destination-floor", want,
		      "net:connect:error ");
	{
		char line[8192];
		line_with(h.text, "net:connect:refusal", line, sizeof(line));
		CHECK_HAS(line, "\"host\":\"rebind.test\",\"ip\":\"127.0.0.1\"");
	}
	/* and a hosts entry to a metadata address stays refused */
	exchange("GET http://meta.test/ HTTP/1.1\r\n\r\n",
		 strlen("GET http://meta.test/ HTTP/1.1\r\n\r\n"), out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, "'169.254.169.254:80' is a cloud metadata address");
	exchange("CONNECT localhost:443 HTTP/1.1\r\n\r\n", strlen("CONNECT localhost:443 HTTP/1.1\r\n\r\n"), out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	/* localhost is not named by the policy: the decision comes first */
	CHECK_HAS(out, "[default-deny]");
	exchange("GET http://[::ffff:169.254.169.254]/ HTTP/1.1\r\n\r\n", strlen("GET http://[::ffff:169.254.169.254]/ HTTP/1.1\r\n\r\n"), out, sizeof(out),
		 &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	/* the gateway's own port on loopback: a loop, refused even past a permit */
	n = snprintf(req, sizeof(req), "GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n", r.port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	gw_port = saved;
	stop(&r);
}

/* cairn's per-tool scoping: a tool listing its routes gets only their
 * phantoms, and a request carrying another route's phantom is refused on its
 * listener, while the agent's listener (every route) forwards it. */
static void test_scope(struct dw_engine *eng, struct dw_monitor *mon, const char *dir)
{
	char toml[2048], err[512], req[1024];
	struct box_config_error cerr;
	struct box_config *cfg = NULL;
	struct gateway *g = NULL;
	bool closed;

	setenv("CAIRN_TEST_A", "secret-a-0123456789", 1);
	setenv("CAIRN_TEST_B", "secret-b-0123456789", 1);
	setenv("CAIRN_TEST_C", "secret-c-0123456789", 1);
	snprintf(toml, sizeof(toml),
		 "name = \"gwscope\"\nbox_dir = \"%s/box\"\n"
		 "[tool.t]\ncommand = [\"/bin/true\"]\negress = [\"a\"]\n"
		 "[egress.a]\ndestinations = [\"a.example.com\"]\nsecret.ref = \"env://CAIRN_TEST_A\"\n"
		 "[egress.b]\ndestinations = [\"b.example.com\"]\nsecret.ref = \"env://CAIRN_TEST_B\"\n"
		 "[egress.c]\ndestinations = [\"up.test:%d/cred\"]\nsecret.ref = \"env://CAIRN_TEST_C\"\n"
		 "[gateway]\ndestination_floor = false\nhosts = { \"up.test\" = \"127.0.0.1\" }\n", dir,
		 up_port);
	if (box_config_load("/nonexistent/box.toml", toml, strlen(toml), "/root", &cfg, &cerr) != 0) {
		printf("FAIL config: %s: %s\n", cerr.where, cerr.msg);
		test_failed++;
		return;
	}
	int tool_port, agent_port;
	int tfd_l = listen_any(&tool_port), afd_l = listen_any(&agent_port);
	int tfd = open(dir, O_RDONLY | O_DIRECTORY);
	uint16_t self[2] = { (uint16_t)tool_port, (uint16_t)agent_port };
	struct gw_decider dec;
	gw_decider_local(&dec, mon, eng, NULL);
	struct gw_params p = { .cfg = cfg, .dec = &dec, .home = "/nonexistent",
			       .trust_dirfd = tfd, .self_ports = self, .n_self_ports = 2 };
	CHECK(gw_new(&p, &g, err, sizeof(err)) == 0);
	close(tfd);
	if (g == NULL) {
		printf("gw_new: %s\n", err);
		box_config_free(cfg);
		return;
	}
	/* the phantoms: prefix and 64 hex digits, one per env:// route */
	const char *pa = NULL, *pb = NULL;
	for (size_t i = 0; gw_env(g, i); i++) {
		if (strncmp(gw_env(g, i), "CAIRN_TEST_A=", 13) == 0)
			pa = gw_env(g, i) + 13;
		if (strncmp(gw_env(g, i), "CAIRN_TEST_B=", 13) == 0)
			pb = gw_env(g, i) + 13;
	}
	CHECK(pa && pb && strlen(pa) == 12 + 64 && strncmp(pa, "strands_box_", 12) == 0);
	CHECK(pa && pb && strcmp(pa, pb) != 0);
	CHECK(gw_serve(g, tfd_l, "[tool.t]", &cfg->tools[0].proc, err, sizeof(err)) == 0);
	CHECK(gw_serve(g, afd_l, "[agent]", NULL, err, sizeof(err)) == 0);
	int saved = gw_port;
	/* the tool sends route b's phantom: refused before anything else */
	gw_port = tool_port;
	int n = snprintf(req, sizeof(req), "GET http://up.test:%d/x HTTP/1.1\r\nX-Token: %s\r\n"
			 "Connection: close\r\n\r\n", up_port, pb ? pb : "");
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, "\r\n\r\nblocked by egress control");
	/* recorded, with its cause, though the policy was never asked */
	struct hist h;
	history_since(&h);
	CHECK(count(h.text, "http:request:request") == 0);
	check_refusal(h.text, "http:request", "enforcement", "enforcement:egress",
		      "blocked by egress control", NULL);
	CHECK_HAS(h.text, "\"method\":\"GET\",\"path\":\"/x\"");
	/* its own route's phantom to a host the route does not name goes as is */
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/x HTTP/1.1\r\nX-Token: %s\r\n"
		     "Connection: close\r\n\r\n", up_port, pa ? pa : "");
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	if (pa)
		CHECK_HAS(out, pa);
	/* the agent receives every route: b's phantom is forwarded unchanged */
	gw_port = agent_port;
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/x HTTP/1.1\r\nX-Token: %s\r\n"
		     "Connection: close\r\n\r\n", up_port, pb ? pb : "");
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 200 OK");
	/* and the secrets never travel on plain HTTP */
	CHECK_NOT(out, "secret-b-0123456789");
	/* a credential route's destination on plain HTTP: refused and recorded */
	history_since(&h);
	n = snprintf(req, sizeof(req), "GET http://up.test:%d/cred/x HTTP/1.1\r\n"
		     "Connection: close\r\n\r\n", up_port);
	exchange(req, (size_t)n, out, sizeof(out), &closed);
	CHECK_HAS(out, "HTTP/1.1 403 Forbidden");
	CHECK_HAS(out, "\r\n\r\ncredential not permitted on a plaintext request");
	history_since(&h);
	CHECK(count(h.text, "http:request:request") == 0);
	check_refusal(h.text, "http:request", "enforcement", "enforcement:egress",
		      "credential not permitted on a plaintext request", NULL);
	gw_port = saved;
	gw_free(g);
	box_config_free(cfg);
}

/* Stopping while a connection waits on its upstream: gw_free returns only
 * after that thread has ended, so the monitor and config it used can be freed
 * at once (under ASan a thread outliving them is a use-after-free). */
static void test_stop(const char *dir)
{
	char err[256], req[512];
	struct dw_engine *eng = policy_engine(policy);
	struct dw_monitor *mon = NULL;
	struct gw_run r;
	if (!eng || dw_monitor_new(eng, NULL, &mon, err, sizeof(err)) != 0 ||
	    start(&r, dir, false, eng, mon) != 0) {
		CHECK(0);
		return;
	}
	int saved = gw_port;
	gw_port = r.port;
	int fds[4];
	for (int i = 0; i < 4; i++) {
		fds[i] = client();
		int n = i < 2 ? snprintf(req, sizeof(req), "GET http://up.test:%d/slow HTTP/1.1\r\n\r\n",
					 up_port)
			      : snprintf(req, sizeof(req), "GET http://up.test:%d/x HTT", up_port);
		write_all(fds[i], req, (size_t)n);
	}
	usleep(300000);
	stop(&r);
	dw_monitor_free(mon);
	dw_engine_free(eng);
	/* every client sees its connection end */
	for (int i = 0; i < 4; i++) {
		bool closed;
		recv_text(fds[i], out, sizeof(out), NULL, 5000, &closed);
		CHECK(closed);
		close(fds[i]);
	}
	gw_port = saved;
}

/* The CA is made on a thread: gw_new leaves trust/cert.pem present (the
 * stale one replaced), and gw_ready returns once it is complete - the
 * supervisor calls it before the workload starts. */
static void test_ca_ready(struct dw_engine *eng, struct dw_monitor *mon, const char *dir)
{
	char toml[512], err[512], trust[PATH_MAX];
	struct box_config_error cerr;
	struct box_config *cfg = NULL;
	struct gateway *g = NULL;
	struct stat st;
	snprintf(toml, sizeof(toml), "name = \"gwca\"\nbox_dir = \"%s/box\"\n", dir);
	snprintf(trust, sizeof(trust), "%s/trust-ready", dir);
	if (box_config_load("/nonexistent/box.toml", toml, strlen(toml), "/root", &cfg, &cerr) != 0 ||
	    mkdir(trust, 0700) != 0) {
		CHECK(0);
		box_config_free(cfg);
		return;
	}
	int tfd = open(trust, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int sfd = openat(tfd, "cert.pem", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(sfd >= 0 && write(sfd, "stale\n", 6) == 6);
	if (sfd >= 0)
		close(sfd);
	uint16_t self = 3128;
	struct gw_decider dec;
	gw_decider_local(&dec, mon, eng, NULL);
	struct gw_params p = { .cfg = cfg, .dec = &dec, .home = "/nonexistent",
			       .trust_dirfd = tfd, .self_ports = &self, .n_self_ports = 1 };
	for (int round = 0; round < 4; round++) {
		/* rounds 2 and 3: the CA started before the gateway, as cairn run does */
		p.ca_maker = NULL;
		if (round >= 2)
			CHECK(gw_ca_maker_start(&p.ca_maker, err, sizeof(err)) == 0);
		CHECK(gw_new(&p, &g, err, sizeof(err)) == 0);
		if (g == NULL) {
			printf("gw_new: %s\n", err);
			break;
		}
		/* present from gw_new on, for the sandbox to bind; the stale one gone */
		CHECK(fstatat(tfd, "cert.pem", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		      (st.st_mode & 07777) == 0400 && st.st_size != 6);
		if (round == 3) {
			gw_free(g);             /* never waited for: gw_free ends the thread */
			g = NULL;
			break;
		}
		CHECK(gw_ready(g, err, sizeof(err)) == 0);
		CHECK(gw_ca_check_cert_file(tfd, "cert.pem", err, sizeof(err)) == 0);
		int cfd = openat(tfd, "cert.pem", O_RDONLY | O_CLOEXEC);
		FILE *f = cfd >= 0 ? fdopen(cfd, "r") : NULL;
		X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
		char cn[64] = "";
		if (x)
			X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
						  sizeof(cn));
		CHECK(strcmp(cn, GW_CA_CN) == 0);
		X509_free(x);
		if (f)
			fclose(f);
		else if (cfd >= 0)
			close(cfd);
		CHECK(gw_ready(g, err, sizeof(err)) == 0);      /* the same answer again */
		gw_free(g);
		g = NULL;
	}
	/* Something not a file where cert.pem goes refuses the gateway at gw_new
	 * (which frees the maker it was given: ASan's leak check). */
	unlinkat(tfd, "cert.pem", 0);
	CHECK(mkdirat(tfd, "cert.pem", 0700) == 0);
	CHECK(gw_ca_maker_start(&p.ca_maker, err, sizeof(err)) == 0);
	CHECK(gw_new(&p, &g, err, sizeof(err)) != 0 && g == NULL);
	CHECK(strstr(err, "the gateway's CA") != NULL && strstr(err, "not a regular file") != NULL);
	unlinkat(tfd, "cert.pem", AT_REMOVEDIR);
	close(tfd);
	box_config_free(cfg);
}

int main(void)
{
	char dir[] = "/tmp/cairn-test-proxy-XXXXXX", err[256];
	if (!mkdtemp(dir))
		return 1;
	snprintf(hist_dir, sizeof(hist_dir), "%s/history", dir);
	mkdir(hist_dir, 0700);
	struct dw_engine *eng = policy_engine(policy);
	struct dw_monitor *mon = NULL;
	struct dw_monitor_config mc = { .history_dir = hist_dir };
	if (!eng || dw_monitor_new(eng, &mc, &mon, err, sizeof(err)) != 0) {
		printf("FAIL: engine or monitor: %s\n", err);
		return 1;
	}
	int ufd = listen_any(&up_port);
	pthread_t ut;
	pthread_create(&ut, NULL, up_main, (void *)(intptr_t)ufd);
	pthread_detach(ut);

	struct gw_run r;
	if (start(&r, dir, false, eng, mon) != 0) {
		printf("FAIL: the gateway did not start\n");
		return 1;
	}
	gw_port = r.port;
	test_plain();
	test_path_forwarded();
	test_keepalive_pipelined();
	test_denials();
	test_authority();
	test_bodies();
	test_smuggle();
	test_abuse();
	stop(&r);
	test_floor(eng, mon, dir);
	test_scope(eng, mon, dir);
	test_stop(dir);
	test_ca_ready(eng, mon, dir);

	dw_monitor_free(mon);
	dw_engine_free(eng);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		test_passed += 0;
	printf("%lu passed, %lu failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}
