/* fuzz_proxy.c - libFuzzer target: the egress gateway's connection handling
 * (src/gateway/gateway.h; proxy.c behind it), end to end in one process.
 *
 * Set up once (LLVMFuzzerInitialize): a box_config with the destination
 * floor off and up.test pinned to 127.0.0.1, an engine from FZ_POLICY, an
 * in-memory monitor, a gateway serving one loopback listener, and an
 * upstream on loopback (an accept thread, a thread per connection).  Torn
 * down at exit, so LeakSanitizer sees gw_free leave nothing behind.
 *
 * Input: CLIENT [ "\n===\n" UPSTREAM ]
 *   CLIENT    the bytes a workload sends on one fresh connection to the
 *             gateway; every "PORT" becomes the upstream's port, so
 *             "http://up.test:PORT/" reaches it.  "\n~~~\n" cuts it into
 *             pieces sent one after another, each once the gateway answered
 *             something or FZ_PAUSE_MS passed (a tunnelled request after
 *             CONNECT's 200, a body after 100 Continue).  Then the client
 *             half-closes and reads the answer to its end.
 *   UPSTREAM  what the upstream answers on each connection the gateway
 *             makes: "\n---\n" cuts it into replies, the k-th written once
 *             the k-th request head ("\r\n\r\n") arrived (none within
 *             FZ_UP_WAIT_MS: the upstream stops).  It half-closes after the
 *             last reply, or after one its framing does not end (close-
 *             delimited, cut short, malformed: only a close ends those);
 *             after a 101 it echoes what arrives (raw bytes, relayed) until
 *             the gateway closes.  Without "\n===\n" it half-closes at once.
 *
 * What is checked (a broken promise prints one line and aborts):
 *   - what reaches the upstream is what FZ_POLICY permits: each request
 *     head it receives (parsed with http.h, bodies skipped by their
 *     framing) has a method and canonical path the policy permits and a
 *     body within its size rule; no byte follows a request that carried a
 *     body or Connection: close (the gateway never reuses that upstream
 *     connection, so a body the origin leaves unread cannot become a
 *     request nobody decided); a chunked body going upstream is well
 *     formed.  After the upstream's 101 (raw relay) or a head http.h
 *     refuses (the gateway may forward heads at its limits) the connection
 *     is no longer checked;
 *   - the gateway's answer starts with an HTTP/1.1 status line;
 *   - before the next input, every thread the input started has ended (the
 *     connection threads end once both of their peers closed: a stuck one
 *     aborts after FZ_STUCK_MS), no descriptor is left open, and no
 *     permitted request is left pending in the monitor;
 *   - the sanitizers: memory errors, and leaks per input (nothing of an
 *     input is still running when the target returns).
 * Nothing is printed otherwise; no TLS (a CONNECT gets its answer, and what
 * follows is served as plain HTTP unless it starts with a TLS record). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boxconf.h"
#include "dogwood.h"
#include "gateway.h"
#include "http.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_SEP_UPSTREAM "\n===\n"       /* client bytes | upstream replies */
#define FZ_SEP_PAUSE    "\n~~~\n"       /* between client pieces */
#define FZ_SEP_REPLY    "\n---\n"       /* between upstream replies */
#define FZ_SEP_LEN      5
#define FZ_MAX_PIECES   4               /* pauses cost time: at most 3 per input */

#define FZ_PAUSE_MS     50              /* a pause waits this long for an answer */
#define FZ_IDLE_MS      500             /* the client gives up on a silent gateway */
#define FZ_UP_WAIT_MS   100             /* the upstream waits this long for a head */
#define FZ_UP_DRAIN_MS  2000            /* and this long for the gateway to close */
#define FZ_STUCK_MS     10000           /* a connection still running: a finding */

#define FZ_BODY_MAX     4096            /* FZ_POLICY's size rule */

/* The policy the gateway enforces; the upstream's oracle (fz_denied) mirrors
 * it, so the two change together.  %u: the upstream's port, the only one
 * net:connect permits, so no input can make the gateway dial anything else
 * on this host. */
static const char FZ_POLICY[] =
	"@id(\"connect\")\n"
	"permit (principal, action == Box::Action::\"net:connect\", resource)\n"
	"when { context.input.host == \"up.test\" && context.input.port == %u };\n"
	"@id(\"reads\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.method == \"GET\" || context.input.method == \"HEAD\" };\n"
	"@id(\"uploads\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { (context.input.method == \"POST\" || context.input.method == \"PUT\") &&\n"
	"  context.input.path == \"/upload\" };\n"
	"@id(\"no_admin\")\n"
	"@description(\"No admin paths.\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.path like \"/admin*\" };\n"
	"@id(\"small_bodies\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.body_bytes > 4096 };\n";

static const char FZ_CONFIG[] =
	"name = \"fuzzproxy\"\n"
	"box_dir = \"/nonexistent/box\"\n"
	"[gateway]\n"
	"destination_floor = false\n"
	"hosts = { \"up.test\" = \"127.0.0.1\" }\n";

/* Everything the target sets up once.  The lock guards reply, reply_n,
 * has_replies and up_live; the rest is written before any thread starts. */
static struct {
	bool ready;
	struct box_config *cfg;
	struct dw_engine *eng;
	struct dw_monitor *mon;
	struct gw_decider dec;
	struct gateway *gw;
	uint16_t gw_port, up_port;
	int up_fd;
	pthread_t up_thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const uint8_t *reply;           /* the current input's upstream part */
	size_t reply_n;
	bool has_replies;
	int up_live;                    /* upstream connection threads running */
	long base_threads;              /* threads between inputs (-1: not known yet) */
} fz = { .up_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	 .base_threads = -1 };

__attribute__((noreturn)) static void fz_fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_proxy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static long long fz_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline, at least 0. */
static int fz_left(long long deadline)
{
	long long left = deadline - fz_now_ms();

	return left > 0 ? (int)left : 0;
}

static const uint8_t *fz_find(const uint8_t *p, size_t n, const char *sep)
{
	return memmem(p, n, sep, FZ_SEP_LEN);
}

/* ---- the process: threads and descriptors ------------------------------------ */

/* Threads of this process (/proc/self/stat field 20), or -1. */
static long fz_threads(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	char *p, *end;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the command name may hold spaces: count fields after its ')', the
	 * k-th space after it starts field k + 2 */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	for (int k = 1; k <= 18; k++) {
		p = strchr(p + 1, ' ');
		if (p == NULL)
			return -1;
	}
	long v = strtol(p + 1, &end, 10);

	return end == p + 1 ? -1 : v;
}

/* Open descriptors of this process, or -1. */
static long fz_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;           /* not the directory's own */
}

/* Wait until every thread an input started has ended.  Both peers of the
 * gateway's connection are closed by now (ours) or close on their own
 * within FZ_UP_DRAIN_MS (the upstream), so a thread still running after
 * FZ_STUCK_MS waits on something that will never come. */
static void fz_settle(void)
{
	long long deadline = fz_now_ms() + FZ_STUCK_MS;
	long n;

	while ((n = fz_threads()) > fz.base_threads) {
		if (fz_now_ms() > deadline)
			fz_fail("a connection thread did not end after both of its peers closed",
				NULL);
		usleep(200);
	}
	/* a thread of libFuzzer's may have ended meanwhile */
	if (n >= 0 && n < fz.base_threads)
		fz.base_threads = n;
}

static int fz_listen(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- the upstream's oracle ---------------------------------------------------- */

/* What the upstream receives, parsed as the origin would: heads, then
 * bodies by their framing. */
struct fz_oracle {
	enum { OR_HEAD, OR_LENGTH, OR_CHUNKED, OR_END, OR_OFF } state;
	struct gw_head *h;
	uint64_t left;                  /* OR_LENGTH */
	struct gw_chunked ch;           /* OR_CHUNKED */
	bool last;                      /* the request being read ends the connection */
	char method[16];                /* of the last request head ("" if too long) */
};

static bool fz_is(struct gw_str s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* Why FZ_POLICY denies the request m, as the gateway forwarded it (its
 * path is the canonical one the policy judged), or NULL. */
static const char *fz_denied(const struct gw_msg *m)
{
	struct gw_str path = m->target.path;
	bool read = fz_is(m->method, "GET") || fz_is(m->method, "HEAD");
	bool upload = (fz_is(m->method, "POST") || fz_is(m->method, "PUT")) &&
		      fz_is(path, "/upload");

	if (!read && !upload)
		return "a method and path no rule permits";
	if (path.n >= 6 && memcmp(path.p, "/admin", 6) == 0)
		return "a path under /admin (forbidden)";
	/* a chunked body still streaming after GW_PEEK_MAX was offered as
	 * INT64_MAX: the size rule denies it */
	if (m->body == GW_BODY_CHUNKED)
		return "a body of unknown size (the size rule denies it)";
	if (m->body == GW_BODY_LENGTH && m->content_length > FZ_BODY_MAX)
		return "a body over 4096 bytes (forbidden)";
	return NULL;
}

/* The message read (head and body) is over: the next starts, or the
 * connection must end here. */
static void fz_oracle_next(struct fz_oracle *o)
{
	if (o->last) {
		o->state = OR_END;
		return;
	}
	gw_head_reset(o->h);
	o->state = OR_HEAD;
}

static void fz_oracle_feed(struct fz_oracle *o, const uint8_t *p, size_t n)
{
	static __thread char sink[4096];

	while (n > 0) {
		switch (o->state) {
		case OR_OFF:
			return;
		case OR_END:
			fz_fail("the gateway sent more on an upstream connection after a request "
				"that carried a body or Connection: close", NULL);
		case OR_HEAD: {
			size_t used = 0;
			int r = gw_head_feed(o->h, p, n, &used);

			p += used, n -= used;
			if (r == 0)
				return;
			if (r < 0) {
				o->state = OR_OFF;      /* a head at http.h's limits, or TLS */
				return;
			}
			const struct gw_msg *m = gw_head_msg(o->h);
			const char *why = fz_denied(m);
			int ml = m->method.n < sizeof o->method ? (int)m->method.n : 0;

			/* the next reply is framed as an answer to this method */
			snprintf(o->method, sizeof o->method, "%.*s", ml, m->method.p);
			if (why != NULL) {
				int tl = m->method.n > 20 ? 20 : (int)m->method.n;
				int pl = m->target.path.n > 80 ? 80 : (int)m->target.path.n;
				char text[160];

				snprintf(text, sizeof text, "%.*s %.*s: %s", tl, m->method.p, pl,
					 m->target.path.p, why);
				fz_fail("the upstream received a request the policy denies", text);
			}
			o->last = m->body != GW_BODY_NONE || !gw_msg_keep_alive(m);
			if (m->body == GW_BODY_LENGTH && m->content_length > 0) {
				o->left = m->content_length;
				o->state = OR_LENGTH;
			} else if (m->body == GW_BODY_CHUNKED) {
				gw_chunked_init(&o->ch, false);
				o->state = OR_CHUNKED;
			} else {
				fz_oracle_next(o);
			}
			break;
		}
		case OR_LENGTH: {
			size_t k = n < o->left ? n : (size_t)o->left;

			p += k, n -= k;
			o->left -= k;
			if (o->left == 0)
				fz_oracle_next(o);
			break;
		}
		case OR_CHUNKED: {
			size_t used = 0, produced = 0;
			int r = gw_chunked_feed(&o->ch, p, n, &used, sink, sizeof sink, &produced);

			p += used, n -= used;
			if (r < 0) {
				const char *reason = NULL;

				gw_chunked_error(&o->ch, &reason);
				fz_fail("the gateway sent a malformed chunked body upstream",
					reason);
			}
			if (r == 1)
				fz_oracle_next(o);
			break;
		}
		}
	}
}

/* ---- the upstream --------------------------------------------------------------- */

enum fz_reply { FZ_REPLY_OPEN, FZ_REPLY_DONE, FZ_REPLY_TUNNEL };

/* How reply r[0, n) to a request of this method ends, as the gateway will
 * read it: FZ_REPLY_DONE a complete final response (after any 1xx; bytes
 * may follow); FZ_REPLY_TUNNEL a 101, raw bytes after it; FZ_REPLY_OPEN
 * anything else - incomplete, close-delimited, malformed - which ends only
 * when the upstream closes, so it closes at once (waiting for a next
 * request the gateway cannot send would only cost time). */
static enum fz_reply fz_reply_end(const uint8_t *r, size_t n, const char *method)
{
	struct gw_head *h = gw_head_new(GW_HEAD_RESPONSE);
	enum fz_reply end = FZ_REPLY_OPEN;
	const struct gw_msg *m = NULL;
	size_t used;

	if (h == NULL)
		fz_fail("out of memory", NULL);
	gw_head_set_request(h, (struct gw_str){ method, strlen(method) });
	for (;;) {
		if (gw_head_feed(h, r, n, &used) != 1)
			goto out;
		r += used, n -= used;
		m = gw_head_msg(h);
		if (!m->interim)
			break;
		gw_head_reset(h);
	}
	if (m->body == GW_BODY_NONE) {
		end = FZ_REPLY_DONE;
	} else if (m->body == GW_BODY_LENGTH) {
		end = m->content_length <= n ? FZ_REPLY_DONE : FZ_REPLY_OPEN;
	} else if (m->body == GW_BODY_CHUNKED) {
		static __thread char sink[4096];
		struct gw_chunked ch;
		size_t produced;
		int rc = 0;

		gw_chunked_init(&ch, true);
		while (rc == 0 && n > 0) {
			rc = gw_chunked_feed(&ch, r, n, &used, sink, sizeof sink, &produced);
			r += used, n -= used;
		}
		end = rc == 1 ? FZ_REPLY_DONE : FZ_REPLY_OPEN;
	} else if (m->body == GW_BODY_TUNNEL && m->status == 101) {
		end = FZ_REPLY_TUNNEL;
	}
out:
	gw_head_free(h);
	return end;
}

/* One connection the gateway made: its replies (a copy of the input's
 * upstream part), what it has received. */
struct fz_up {
	int fd;
	bool has_replies;
	bool eof;                       /* the gateway finished sending */
	bool echo;                      /* after a 101: send back what arrives */
	unsigned heads;                 /* "\r\n\r\n" seen */
	int crlf;                       /* bytes of "\r\n\r\n" just seen */
	struct fz_oracle o;
	size_t n;
	uint8_t data[];
};

/* Read what is there: the oracle and the head count see every byte. */
static void fz_up_recv(struct fz_up *u)
{
	static const char end[] = "\r\n\r\n";
	uint8_t buf[16384];

	for (;;) {
		ssize_t k = recv(u->fd, buf, sizeof buf, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			u->eof = true;
			return;
		}
		fz_oracle_feed(&u->o, buf, (size_t)k);
		/* a WebSocket echo; what the socket cannot take now is dropped */
		if (u->echo && send(u->fd, buf, (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
		    errno != EAGAIN && errno != EWOULDBLOCK)
			u->echo = false;
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] == (uint8_t)end[u->crlf])
				u->crlf++;
			else
				u->crlf = buf[i] == '\r' ? 1 : 0;
			if (u->crlf == 4) {
				u->heads++;
				u->crlf = 0;
			}
		}
	}
}

/* Wait (reading) until want heads arrived.  0, or -1: the gateway closed or
 * stayed silent for FZ_UP_WAIT_MS. */
static int fz_up_wait_heads(struct fz_up *u, unsigned want)
{
	long long deadline = fz_now_ms() + FZ_UP_WAIT_MS;

	while (u->heads < want) {
		struct pollfd p = { .fd = u->fd, .events = POLLIN };

		if (u->eof)
			return -1;
		int r = poll(&p, 1, fz_left(deadline));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		fz_up_recv(u);
	}
	return 0;
}

/* Write p[0, n), reading meanwhile (the gateway may be writing a body to us
 * while we write to it).  0, or -1 when the gateway stopped reading. */
static int fz_up_send(struct fz_up *u, const uint8_t *p, size_t n)
{
	while (n > 0) {
		struct pollfd pf = { .fd = u->fd, .events = POLLIN | POLLOUT };
		int r = poll(&pf, 1, FZ_UP_WAIT_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if ((pf.revents & POLLIN) && !u->eof)
			fz_up_recv(u);
		if (pf.revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t k = send(u->fd, p, n, MSG_NOSIGNAL);

			if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return -1;
			if (k > 0)
				p += k, n -= (size_t)k;
		}
	}
	return 0;
}

static void *fz_up_conn(void *arg)
{
	struct fz_up *u = arg;
	const uint8_t *r = u->data, *end = u->data + u->n;
	bool tunnel = false;

	/* reply k once head k arrived; after the last, or one that only a
	 * close can end, half-close; after a 101, relay until the gateway closes */
	for (unsigned k = 1; u->has_replies; k++) {
		const uint8_t *sep = fz_find(r, (size_t)(end - r), FZ_SEP_REPLY);
		const uint8_t *re = sep ? sep : end;

		if (fz_up_wait_heads(u, k) != 0)
			break;
		enum fz_reply how = fz_reply_end(r, (size_t)(re - r), u->o.method);

		/* after a 101 the gateway relays raw bytes: nothing more to parse */
		tunnel = how == FZ_REPLY_TUNNEL;
		if (tunnel)
			u->o.state = OR_OFF;
		if (fz_up_send(u, r, (size_t)(re - r)) != 0)
			break;
		if (sep == NULL || how != FZ_REPLY_DONE)
			break;
		r = sep + FZ_SEP_LEN;
	}
	if (tunnel)
		u->echo = true;
	else
		shutdown(u->fd, SHUT_WR);
	/* read to the gateway's close: the oracle sees everything, and closing
	 * with unread bytes would reset the connection and drop our reply */
	long long deadline = fz_now_ms() + FZ_UP_DRAIN_MS;

	while (!u->eof) {
		struct pollfd p = { .fd = u->fd, .events = POLLIN };
		int pr = poll(&p, 1, fz_left(deadline));

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			break;
		fz_up_recv(u);
	}
	gw_head_free(u->o.h);
	close(u->fd);
	free(u);
	pthread_mutex_lock(&fz.lock);
	fz.up_live--;
	pthread_cond_broadcast(&fz.cond);
	pthread_mutex_unlock(&fz.lock);
	return NULL;
}

static void *fz_up_main(void *arg)
{
	pthread_attr_t attr;

	(void)arg;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int fd = accept4(fz.up_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;          /* the listener was shut down (fz_teardown) */
		}
		pthread_mutex_lock(&fz.lock);
		size_t n = fz.reply_n;
		struct fz_up *u = calloc(1, sizeof *u + n + 1);

		if (u != NULL) {
			if (n > 0)
				memcpy(u->data, fz.reply, n);
			u->n = n;
			u->has_replies = fz.has_replies;
			fz.up_live++;
		}
		pthread_mutex_unlock(&fz.lock);
		if (u == NULL || (u->o.h = gw_head_new(GW_HEAD_TUNNEL_REQUEST)) == NULL)
			fz_fail("out of memory", NULL);
		snprintf(u->o.method, sizeof u->o.method, "GET");
		u->fd = fd;
		/* replies in pieces go out at once, not after a delayed ACK */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		pthread_t t;

		if (pthread_create(&t, &attr, fz_up_conn, u) != 0)
			fz_fail("cannot start an upstream thread", NULL);
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

/* ---- set-up and teardown --------------------------------------------------------- */

static struct dw_engine *fz_engine(const char *policy)
{
	struct dw_input in = { "fuzz_proxy.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg = { .policies = &in, .n_policies = 1,
					.flags = DW_VALIDATE | DW_BOX_RULES };
	struct dw_diags *d = dw_diags_new();
	struct dw_engine *eng = NULL;

	if (d == NULL)
		return NULL;
	if (dw_engine_new(&cfg, &eng, d) != 0) {
		for (size_t i = 0; i < dw_diags_count(d); i++) {
			struct dw_diagnostic g;

			dw_diags_get(d, i, &g);
			fprintf(stderr, "fuzz_proxy: policy %u:%u: %s\n", g.line, g.col, g.message);
		}
		eng = NULL;
	}
	dw_diags_free(d);
	return eng;
}

/* At exit: stop the gateway (which waits for its connection threads), then
 * the upstream, and free everything, so a leak in gw_free shows. */
static void fz_teardown(void)
{
	if (!fz.ready)
		return;
	gw_free(fz.gw);
	shutdown(fz.up_fd, SHUT_RDWR);          /* wakes accept4 */
	pthread_join(fz.up_thread, NULL);
	pthread_mutex_lock(&fz.lock);
	while (fz.up_live > 0)
		pthread_cond_wait(&fz.cond, &fz.lock);
	pthread_mutex_unlock(&fz.lock);
	close(fz.up_fd);
	dw_monitor_free(fz.mon);
	dw_engine_free(fz.eng);
	box_config_free(fz.cfg);
	fz.ready = false;
}

/* The CA's cert.pem goes into a directory of its own, removed at once:
 * gw_new is the only writer. */
static void fz_new_gateway(void)
{
	char dir[] = "/tmp/fuzz_proxy-XXXXXX", err[512];
	int gw_fd, dfd;

	if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fz_fail("cannot make a trust directory", strerror(errno));
	if ((gw_fd = fz_listen(&fz.gw_port)) < 0)
		fz_fail("cannot listen on loopback", strerror(errno));
	uint16_t self = fz.gw_port;
	gw_decider_local(&fz.dec, fz.mon, fz.eng, NULL);
	struct gw_params p = { .cfg = fz.cfg, .dec = &fz.dec, .home = "/nonexistent",
			       .trust_dirfd = dfd, .self_ports = &self, .n_self_ports = 1 };
	int rc = gw_new(&p, &fz.gw, err, sizeof err);

	/* the CA's thread writes cert.pem: wait for it before removing it */
	if (rc == 0 && gw_ready(fz.gw, err, sizeof err) != 0)
		fz_fail("gw_ready", err);
	unlinkat(dfd, "cert.pem", 0);
	close(dfd);
	rmdir(dir);
	if (rc != 0)
		fz_fail("gw_new", err);
	if (gw_serve(fz.gw, gw_fd, "[agent]", NULL, err, sizeof err) != 0)
		fz_fail("gw_serve", err);
}

static void fz_setup(void)
{
	struct box_config_error cerr;
	char policy[sizeof FZ_POLICY + 8], err[256];

	if (fz.ready)
		return;
	if ((fz.up_fd = fz_listen(&fz.up_port)) < 0)
		fz_fail("cannot listen on loopback", strerror(errno));
	snprintf(policy, sizeof policy, FZ_POLICY, (unsigned)fz.up_port);
	if ((fz.eng = fz_engine(policy)) == NULL)
		fz_fail("the policy did not load", NULL);
	if (dw_monitor_new(fz.eng, NULL, &fz.mon, err, sizeof err) != 0)
		fz_fail("dw_monitor_new", err);
	if (box_config_load("/nonexistent/box.toml", FZ_CONFIG, strlen(FZ_CONFIG), "/nonexistent",
			    &fz.cfg, &cerr) != 0)
		fz_fail("the box config did not load", cerr.msg);
	fz_new_gateway();
	if (pthread_create(&fz.up_thread, NULL, fz_up_main, NULL) != 0)
		fz_fail("cannot start the upstream", NULL);
	fz.ready = true;
	atexit(fz_teardown);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_setup();
	return 0;
}

/* ---- the client ----------------------------------------------------------------- */

struct fz_answer {
	size_t n;                       /* bytes the gateway sent */
	char head[12];                  /* the first of them */
	bool done;                      /* it closed (or reset) */
};

/* Read what is there.  Sets a->done at the end of the stream. */
static void fz_recv(int fd, struct fz_answer *a)
{
	char buf[16384];

	while (!a->done) {
		ssize_t k = recv(fd, buf, sizeof buf, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			a->done = true;
			return;
		}
		if (a->n < sizeof a->head) {
			size_t room = sizeof a->head - a->n;

			memcpy(a->head + a->n, buf, room < (size_t)k ? room : (size_t)k);
		}
		a->n += (size_t)k;
	}
}

/* Send p[0, n), reading the answer meanwhile (a gateway that answers early
 * stops reading; neither side may wait on the other).  Gives up when the
 * gateway closes or stays blocked for FZ_IDLE_MS. */
static void fz_send(int fd, const uint8_t *p, size_t n, struct fz_answer *a)
{
	while (n > 0 && !a->done) {
		struct pollfd pf = { .fd = fd, .events = POLLIN | POLLOUT };
		int r = poll(&pf, 1, FZ_IDLE_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (pf.revents & (POLLIN | POLLHUP | POLLERR))
			fz_recv(fd, a);
		if (pf.revents & POLLOUT) {
			ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

			if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return;
			if (k > 0)
				p += k, n -= (size_t)k;
		}
	}
}

/* Read until the gateway sends something new, closes, or ms pass.
 * Returns whether it went quiet. */
static bool fz_await(int fd, struct fz_answer *a, int ms)
{
	long long deadline = fz_now_ms() + ms;
	size_t before = a->n;

	while (a->n == before && !a->done) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, fz_left(deadline));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return true;
		fz_recv(fd, a);
	}
	return false;
}

/* One connection: the pieces of msg[0, n), the half-close, the answer. */
static void fz_client(const uint8_t *msg, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(fz.gw_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct fz_answer a = { .n = 0 };
	bool quiet = false;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		fz_fail("cannot connect to the gateway", strerror(errno));
	if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0)
		fz_fail("fcntl", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	for (int piece = 1; !a.done; piece++) {
		const uint8_t *sep = piece < FZ_MAX_PIECES ? fz_find(msg, n, FZ_SEP_PAUSE) : NULL;
		size_t k = sep ? (size_t)(sep - msg) : n;

		fz_send(fd, msg, k, &a);
		if (sep == NULL)
			break;
		msg = sep + FZ_SEP_LEN;
		n -= k + FZ_SEP_LEN;
		fz_await(fd, &a, FZ_PAUSE_MS);
	}
	shutdown(fd, SHUT_WR);
	while (!a.done && !quiet)
		quiet = fz_await(fd, &a, FZ_IDLE_MS);
	close(fd);
	/* every answer of the gateway, its own or relayed, starts with its
	 * status line (it writes HTTP/1.1 whatever the upstream spoke) */
	size_t h = a.n < sizeof a.head ? a.n : sizeof a.head;
	static const char want[] = "HTTP/1.1 ";

	for (size_t i = 0; i < h; i++)
		if (i < 9 ? a.head[i] != want[i] : (a.head[i] < '0' || a.head[i] > '9'))
			fz_fail("the gateway's answer does not start with an HTTP/1.1 status line",
				NULL);
}

/* The client's bytes with every "PORT" replaced by the upstream's port;
 * malloc'd, *len set. */
static uint8_t *fz_with_port(const uint8_t *p, size_t n, size_t *len)
{
	char port[8];
	int pl = snprintf(port, sizeof port, "%u", (unsigned)fz.up_port);
	uint8_t *out = malloc(n + n / 4 + 1);   /* 4 bytes become at most 5 */
	size_t o = 0;

	if (out == NULL)
		fz_fail("out of memory", NULL);
	for (size_t i = 0; i < n; ) {
		if (n - i >= 4 && memcmp(p + i, "PORT", 4) == 0) {
			memcpy(out + o, port, (size_t)pl);
			o += (size_t)pl;
			i += 4;
		} else {
			out[o++] = p[i++];
		}
	}
	*len = o;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = fz_find(data, size, FZ_SEP_UPSTREAM);
	size_t cn = sep ? (size_t)(sep - data) : size, msg_n;
	struct dw_monitor_stats st;
	uint8_t *msg;

	fz_setup();
	/* the baseline, once libFuzzer's own threads run */
	if (fz.base_threads < 0 && (fz.base_threads = fz_threads()) < 0)
		fz_fail("cannot count threads in /proc/self/stat", NULL);
	long fds = fz_fds();

	pthread_mutex_lock(&fz.lock);
	fz.reply = sep ? sep + FZ_SEP_LEN : NULL;
	fz.reply_n = sep ? size - cn - FZ_SEP_LEN : 0;
	fz.has_replies = sep != NULL;
	pthread_mutex_unlock(&fz.lock);

	msg = fz_with_port(data, cn, &msg_n);
	fz_client(msg, msg_n);
	free(msg);
	fz_settle();

	pthread_mutex_lock(&fz.lock);
	fz.reply = NULL;
	fz.reply_n = 0;
	fz.has_replies = false;
	pthread_mutex_unlock(&fz.lock);

	if (fds >= 0 && fz_fds() > fds)
		fz_fail("a descriptor was left open", NULL);
	dw_monitor_stats(fz.mon, &st);
	if (st.pending != 0)
		fz_fail("a permitted request was left pending (no ::response or ::error)", NULL);
	return 0;
}
