/* export_main.c - cairn-export: the OTLP/HTTP exporter process (exportctl.h;
 * docs/records.md "OTLP targets").
 *
 * Started by `cairn run` only, at its first OTLP batch.  It links OpenSSL so
 * that the supervisor does not, holds the targets' secrets, and hardens
 * itself as cairn-gateway does.  One thread per target sends that target's
 * bodies in order, one request at a time, each within its own 4 s (lookup,
 * connect, TLS, sending, the response's status line), as Box's exporter:
 * POST, application/x-protobuf, no proxy, no redirect, no retry, a 2xx or it
 * failed.  The main thread reads the channel; when the supervisor shuts its
 * side, the threads finish what they hold and the process exits 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "exportctl.h"

#define HEAD_MAX 8192                   /* the response head we read, at most */

static const char *const routes[] = { "/v1/logs", "/v1/traces", "/v1/metrics" };

struct job {
	uint64_t seq;
	uint32_t route, records;
	uint8_t *body;                  /* mapped from the memfd */
	size_t len;
};

struct target {
	char label[EXP_LABEL_MAX + 1];
	char base[EXP_URL_MAX];         /* the URL without trailing '/', for messages */
	struct exp_url u;
	char host_header[300];
	char secret_line[EXP_HEADER_MAX + EXP_SECRET_MAX + 16];       /* "" for none */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job q[TM_EXPORT_QUEUE];  /* q[head] is in flight while n > 0 */
	size_t head, n;
	bool stopping;
	struct gaicb *lookup;           /* a lookup that outlived its request */
};

static struct target targets[TM_EXPORT_TARGETS_MAX];
static size_t n_targets;
static SSL_CTX *tls;                    /* NULL without an https target */
static char tls_error[160];
static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cairn-export: %s\n", msg);
	_exit(1);
}

/* As cairn-gateway: no core, not dumpable (it holds the secrets), no new
 * privileges, dead with the supervisor, no descriptor it was not given. */
static void harden(const char *parent)
{
	struct rlimit r = { 0, 0 };
	char *end;
	long want = strtol(parent ? parent : "", &end, 10);
	if (parent == NULL || *end != '\0' || want <= 1)
		die("this program is started by `cairn run`, not by hand");
	if (setrlimit(RLIMIT_CORE, &r) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0 ||
	    prctl(PR_GET_DUMPABLE) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		die("refusing to run: it cannot harden itself");
	if (getppid() != (pid_t)want)
		_exit(1);               /* the supervisor is gone already */
	syscall(SYS_close_range, (unsigned)EXP_FD + 1, ~0u, 0u);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((format(printf, 3, 4)))
static int say(char *why, size_t wl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, wl, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- one request ---------------------------------------------------------------------- */

struct conn {
	int fd;
	SSL *ssl;
	long long deadline;
};

/* Wait until fd is ready for ev, or the deadline: 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, long long deadline)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = { .fd = fd, .events = ev };
		int k = poll(&pf, 1, (int)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k > 0)
			return 0;
	}
}

static void free_lookup(struct target *t)
{
	if (t->lookup == NULL)
		return;
	if (t->lookup->ar_result != NULL)
		freeaddrinfo(t->lookup->ar_result);
	free((char *)t->lookup->ar_name);
	free((char *)t->lookup->ar_service);
	free((void *)t->lookup->ar_request);
	free(t->lookup);
	t->lookup = NULL;
}

/* The target's addresses: an IP literal at once; a name through
 * getaddrinfo_a, so that a resolver that does not answer costs this
 * request's deadline and not more.  A lookup still running when its
 * request gave up is kept, and the next request waits for no second one
 * while it runs. */
static int resolve(struct target *t, long long deadline, struct addrinfo **out, char *why,
		   size_t wl)
{
	char port[8];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	snprintf(port, sizeof(port), "%u", t->u.port);
	if (getaddrinfo(t->u.host, port, &hints, out) == 0)
		return 0;
	if (t->lookup != NULL) {
		if (gai_error(t->lookup) == EAI_INPROGRESS)
			return say(why, wl, "the last lookup of %s has not finished", t->u.host);
		free_lookup(t);
	}
	struct gaicb *g = calloc(1, sizeof(*g));
	struct addrinfo *h = calloc(1, sizeof(*h));
	char *name = strdup(t->u.host), *serv = strdup(port);
	if (g == NULL || h == NULL || name == NULL || serv == NULL) {
		free(g), free(h), free(name), free(serv);
		return say(why, wl, "out of memory");
	}
	h->ai_socktype = SOCK_STREAM;
	h->ai_flags = AI_NUMERICSERV;
	g->ar_name = name;
	g->ar_service = serv;
	g->ar_request = h;
	t->lookup = g;
	struct gaicb *list[1] = { g };
	int e = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (e != 0) {
		free_lookup(t);
		return say(why, wl, "cannot look up %s: %s", t->u.host, gai_strerror(e));
	}
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			break;
		struct timespec ts = { left / 1000, (left % 1000) * 1000000 };
		e = gai_suspend((const struct gaicb *const *)list, 1, &ts);
		if (e != EAI_INTR)
			break;
	}
	e = gai_error(g);
	if (e == EAI_INPROGRESS) {
		if (gai_cancel(g) == EAI_CANCELED)
			free_lookup(t);
		return say(why, wl, "no address for %s within %d s", t->u.host,
			   TM_EXPORT_REQUEST_MS / 1000);
	}
	if (e != 0) {
		free_lookup(t);
		return say(why, wl, "cannot look up %s: %s", t->u.host, gai_strerror(e));
	}
	*out = g->ar_result;
	g->ar_result = NULL;
	free_lookup(t);
	return 0;
}

static int dial(struct target *t, struct conn *c, char *why, size_t wl)
{
	struct addrinfo *ai = NULL;
	int err = 0;
	if (resolve(t, c->deadline, &ai, why, wl) != 0)
		return -1;
	for (struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int e = 0;
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
			e = errno == EINPROGRESS ? -wait_fd(fd, POLLOUT, c->deadline) : errno;
			socklen_t sl = sizeof(e);
			if (e == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
				e = errno;
		}
		if (e == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			c->fd = fd;
			freeaddrinfo(ai);
			return 0;
		}
		close(fd);
		err = e;
		if (e == ETIMEDOUT && now_ms() >= c->deadline)
			break;
	}
	freeaddrinfo(ai);
	if (err == ETIMEDOUT)
		return say(why, wl, "no connection within %d s", TM_EXPORT_REQUEST_MS / 1000);
	return say(why, wl, "cannot connect: %s", strerror(err ? err : EHOSTUNREACH));
}

/* What OpenSSL says about the last failure, for a message. */
static void tls_why(struct conn *c, const char *what, char *why, size_t wl)
{
	long v = SSL_get_verify_result(c->ssl);
	unsigned long e = ERR_peek_last_error();
	if (v != X509_V_OK)
		say(why, wl, "TLS: the certificate was refused: %s", X509_verify_cert_error_string(v));
	else if (e != 0)
		say(why, wl, "TLS: %s: %s", what, ERR_reason_error_string(e) ?
		    ERR_reason_error_string(e) : "an OpenSSL error");
	else
		say(why, wl, "TLS: %s: the connection closed", what);
	ERR_clear_error();
}

/* One TLS step that may want to read or write first: 0 done, 1 again, -1 failed. */
static int tls_step(struct conn *c, int r, const char *what, char *why, size_t wl)
{
	if (r > 0)
		return 0;
	int e = SSL_get_error(c->ssl, r), w;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		w = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, c->deadline);
		if (w == 0)
			return 1;
		if (w == -ETIMEDOUT)
			return say(why, wl, "no answer within %d s", TM_EXPORT_REQUEST_MS / 1000);
		return say(why, wl, "%s: %s", what, strerror(-w));
	}
	if (e == SSL_ERROR_SYSCALL && errno != 0 && ERR_peek_last_error() == 0)
		return say(why, wl, "%s: %s", what, strerror(errno));
	tls_why(c, what, why, wl);
	return -1;
}

/* TLS 1.2 or later, the system's trust, the name (SNI) checked against the
 * certificate, or the IP literal. */
static int tls_open(struct target *t, struct conn *c, char *why, size_t wl)
{
	if (tls == NULL)
		return say(why, wl, "%s", tls_error);
	if ((c->ssl = SSL_new(tls)) == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
		return say(why, wl, "TLS: out of memory");
	struct in_addr a4;
	bool literal = t->u.ipv6 || inet_pton(AF_INET, t->u.host, &a4) == 1;
	if (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), t->u.host) != 1 :
		      (SSL_set_tlsext_host_name(c->ssl, t->u.host) != 1 ||
		       SSL_set1_host(c->ssl, t->u.host) != 1))
		return say(why, wl, "TLS: cannot set the name to verify");
	for (;;) {
		ERR_clear_error();
		int s = tls_step(c, SSL_connect(c->ssl), "handshake", why, wl);
		if (s <= 0)
			return s;
	}
}

static int send_all(struct conn *c, const void *p, size_t n, char *why, size_t wl)
{
	const uint8_t *b = p;
	while (n > 0) {
		if (c->ssl != NULL) {
			size_t done = 0;
			ERR_clear_error();
			int r = SSL_write_ex(c->ssl, b, n, &done);
			int s = tls_step(c, r, "sending", why, wl);
			if (s < 0)
				return -1;
			if (s == 0) {
				b += done;
				n -= done;
			}
			continue;
		}
		ssize_t k = send(c->fd, b, n, MSG_NOSIGNAL);
		if (k > 0) {
			b += k;
			n -= (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			int w = wait_fd(c->fd, POLLOUT, c->deadline);
			if (w == -ETIMEDOUT)
				return say(why, wl, "no answer within %d s",
					   TM_EXPORT_REQUEST_MS / 1000);
			if (w != 0)
				return say(why, wl, "sending: %s", strerror(-w));
		} else {
			return say(why, wl, "sending: %s", strerror(k < 0 ? errno : EPIPE));
		}
	}
	return 0;
}

/* Read into buf; the count, 0 at the end of the stream, or -1 with why. */
static ssize_t recv_some(struct conn *c, char *buf, size_t n, char *why, size_t wl)
{
	for (;;) {
		if (c->ssl != NULL) {
			size_t got = 0;
			ERR_clear_error();
			int r = SSL_read_ex(c->ssl, buf, n, &got);
			if (r == 1)
				return (ssize_t)got;
			if (SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN)
				return 0;
			int s = tls_step(c, r, "reading", why, wl);
			if (s < 0)
				return -1;
			continue;
		}
		ssize_t k = recv(c->fd, buf, n, 0);
		if (k >= 0)
			return k;
		if (errno != EAGAIN && errno != EINTR)
			return say(why, wl, "reading: %s", strerror(errno));
		int w = wait_fd(c->fd, POLLIN, c->deadline);
		if (w == -ETIMEDOUT)
			return say(why, wl, "no answer within %d s", TM_EXPORT_REQUEST_MS / 1000);
		if (w != 0)
			return say(why, wl, "reading: %s", strerror(-w));
	}
}

/* The status of the response's first line ("HTTP/1.1 200 OK"), and its
 * reason phrase (printable, bounded) into reason. */
static int read_status(struct conn *c, char *reason, size_t rl, char *why, size_t wl)
{
	char head[HEAD_MAX + 1];
	size_t n = 0;
	char *eol = NULL;
	while (eol == NULL) {
		if (n == HEAD_MAX)
			return say(why, wl, "the response's first line is over %d bytes", HEAD_MAX);
		ssize_t k = recv_some(c, head + n, HEAD_MAX - n, why, wl);
		if (k < 0)
			return -1;
		if (k == 0)
			return say(why, wl, "the connection closed before a response");
		n += (size_t)k;
		head[n] = '\0';
		eol = strstr(head, "\r\n");
	}
	*eol = '\0';
	if ((strncmp(head, "HTTP/1.1 ", 9) != 0 && strncmp(head, "HTTP/1.0 ", 9) != 0) ||
	    head[9] < '1' || head[9] > '5' || head[10] < '0' || head[10] > '9' ||
	    head[11] < '0' || head[11] > '9' || (head[12] != ' ' && head[12] != '\0'))
		return say(why, wl, "a response that is not HTTP/1.1");
	int status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
	const char *r = head[12] == ' ' ? head + 13 : "";
	size_t k = 0;
	for (; *r && k + 1 < rl && k < 64; r++)
		reason[k++] = (*r >= 0x20 && *r < 0x7f) ? *r : '?';
	reason[k] = '\0';
	return status;
}

/* POST one body; 0, or -1 with Box's words in why ("<url> did not answer:
 * <why>", "<url> answered <status>"). */
static int post(struct target *t, const struct job *j, char *why, size_t wl)
{
	struct conn c = { .fd = -1, .deadline = now_ms() + TM_EXPORT_REQUEST_MS };
	char head[EXP_URL_MAX + sizeof(t->host_header) + sizeof(t->secret_line) + 200];
	char detail[200], reason[80];
	int rc = -1, status = 0;
	const char *route = routes[j->route];

	int hn = snprintf(head, sizeof(head),
			  "POST %s%s HTTP/1.1\r\nhost: %s\r\ncontent-type: application/x-protobuf\r\n"
			  "content-length: %zu\r\n%sconnection: close\r\n\r\n",
			  t->u.path[0] ? t->u.path : "", route, t->host_header, j->len,
			  t->secret_line);
	if (hn < 0 || (size_t)hn >= sizeof(head)) {
		say(detail, sizeof(detail), "the request head does not fit");
	} else if (dial(t, &c, detail, sizeof(detail)) == 0 &&
		   (!t->u.tls || tls_open(t, &c, detail, sizeof(detail)) == 0) &&
		   send_all(&c, head, (size_t)hn, detail, sizeof(detail)) == 0 &&
		   send_all(&c, j->body, j->len, detail, sizeof(detail)) == 0 &&
		   (status = read_status(&c, reason, sizeof(reason), detail, sizeof(detail))) > 0) {
		if (status >= 200 && status < 300)
			rc = 0;
		else
			snprintf(why, wl, "%.100s%s answered %d%s%.79s", t->base, route, status,
				 reason[0] ? " " : "", reason);
	}
	explicit_bzero(head, sizeof(head));     /* it held the secret */
	if (rc != 0 && status <= 0)
		snprintf(why, wl, "%.100s%s did not answer: %.120s", t->base, route, detail);
	if (c.ssl != NULL) {
		SSL_shutdown(c.ssl);            /* once, not waited for */
		SSL_free(c.ssl);
	}
	if (c.fd >= 0)
		close(c.fd);
	return rc;
}

/* ---- the channel ---------------------------------------------------------------------------- */

static void send_done(uint32_t target, uint64_t seq, bool ok, const char *error)
{
	uint8_t buf[EXP_ERROR_MAX + 64];
	char e[EXP_ERROR_MAX + 1];
	snprintf(e, sizeof(e), "%s", ok ? "" : error[0] ? error : "failed");
	struct exp_wire w = { buf, 0, sizeof(buf), false };
	exp_put_u32(&w, EXP_DONE);
	exp_put_u32(&w, target);
	exp_put_u64(&w, seq);
	exp_put_u32(&w, ok ? 1 : 0);
	exp_put_str(&w, e);
	pthread_mutex_lock(&send_mu);
	ssize_t k;
	do
		k = send(EXP_FD, buf, w.n, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	pthread_mutex_unlock(&send_mu);
	if (k != (ssize_t)w.n)
		_exit(1);               /* the supervisor is gone */
}

static void *worker(void *arg)
{
	struct target *t = arg;
	uint32_t index = (uint32_t)(t - targets);
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (t->n == 0 && !t->stopping)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->n == 0)
			break;
		struct job j = t->q[t->head];
		pthread_mutex_unlock(&t->mu);
		char why[EXP_ERROR_MAX + 1] = "";
		int rc = post(t, &j, why, sizeof(why));
		munmap(j.body, j.len);
		/* the slot is free before the supervisor hears of it: it may
		 * submit again at once */
		pthread_mutex_lock(&t->mu);
		t->head = (t->head + 1) % TM_EXPORT_QUEUE;
		t->n--;
		pthread_mutex_unlock(&t->mu);
		send_done(index, j.seq, rc == 0, why);
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* One frame: its bytes into buf, and at most one descriptor into *fd (-1:
 * none).  The length; 0 when the supervisor shut its side. */
static size_t recv_frame(uint8_t *buf, size_t cap, int *fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b,
			    .msg_controllen = sizeof(c.b) };
	ssize_t k;
	do
		k = recvmsg(EXP_FD, &m, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		die("the channel failed: %s", strerror(errno));
	*fd = -1;
	size_t nfd = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h != NULL; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			die("the channel broke its protocol: an unexpected control message");
		nfd += (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfd == 1)
			memcpy(fd, CMSG_DATA(h), sizeof(int));
	}
	if (nfd > 1)
		die("the channel broke its protocol: %zu descriptors with one frame", nfd);
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		die("the channel broke its protocol: a frame over %zu bytes", cap);
	return (size_t)k;
}

static void setup(void)
{
	uint8_t buf[EXP_FRAME_MAX];
	int fd;
	size_t k = recv_frame(buf, sizeof(buf), &fd);
	if (k == 0)
		_exit(0);               /* stopped before it was given anything */
	struct exp_wire r = { buf, k, k, false };
	uint32_t op = exp_get_u32(&r), version = exp_get_u32(&r), n = exp_get_u32(&r);
	if (fd >= 0 || r.bad || r.n != 0 || op != EXP_HELLO)
		die("the channel broke its protocol: the first frame is not a hello");
	if (version != EXP_VERSION)
		die("the supervisor speaks version %u of the channel, this program %d", version,
		    EXP_VERSION);
	if (n == 0 || n > TM_EXPORT_TARGETS_MAX)
		die("the channel broke its protocol: %u targets", n);
	bool any_tls = false;
	for (uint32_t i = 0; i < n; i++) {
		struct target *t = &targets[i];
		char url[EXP_URL_MAX + 1], header[EXP_HEADER_MAX + 1], secret[EXP_SECRET_MAX + 1];
		char why[400];
		k = recv_frame(buf, sizeof(buf), &fd);
		r = (struct exp_wire){ buf, k, k, false };
		op = exp_get_u32(&r);
		uint32_t index = exp_get_u32(&r);
		exp_get_str(&r, t->label, EXP_LABEL_MAX);
		exp_get_str(&r, url, EXP_URL_MAX);
		exp_get_str(&r, header, EXP_HEADER_MAX);
		exp_get_str(&r, secret, EXP_SECRET_MAX);
		if (k == 0 || fd >= 0 || r.bad || r.n != 0 || op != EXP_TARGET || index != i)
			die("the channel broke its protocol: target %u of %u is malformed", i, n);
		explicit_bzero(buf, sizeof(buf));
		if (exp_url_parse(url, &t->u, why, sizeof(why)) != 0)
			die("%s: %s", t->label, why);
		if ((header[0] == '\0') != (secret[0] == '\0') ||
		    (header[0] && (!exp_header_name_ok(header) || !exp_header_value_ok(secret))))
			die("%s: a secret that cannot be sent as a header", t->label);
		if (header[0] && exp_secret_line(header, secret, t->secret_line,
						 sizeof(t->secret_line)) < 0)
			die("%s: a secret that cannot be sent as a header", t->label);
		explicit_bzero(secret, sizeof(secret));
		size_t blen = strlen(url);
		while (blen > 0 && url[blen - 1] == '/')
			blen--;
		memcpy(t->base, url, blen);
		t->base[blen] = '\0';
		bool dflt = t->u.port == (t->u.tls ? 443 : 80);
		int hl = snprintf(t->host_header, sizeof(t->host_header),
				  t->u.ipv6 ? "[%s]" : "%s", t->u.host);
		if (!dflt)
			snprintf(t->host_header + hl, sizeof(t->host_header) - (size_t)hl, ":%u",
				 t->u.port);
		any_tls |= t->u.tls;
		pthread_mutex_init(&t->mu, NULL);
		pthread_cond_init(&t->cv, NULL);
	}
	n_targets = n;
	if (any_tls) {
		tls = SSL_CTX_new(TLS_client_method());
		if (tls == NULL || SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION) != 1 ||
		    SSL_CTX_set_default_verify_paths(tls) != 1) {
			snprintf(tls_error, sizeof(tls_error), "TLS could not be set up: %s",
				 ERR_reason_error_string(ERR_peek_last_error()) ?
				 ERR_reason_error_string(ERR_peek_last_error()) : "OpenSSL failed");
			SSL_CTX_free(tls);
			tls = NULL;
		} else {
			SSL_CTX_set_verify(tls, SSL_VERIFY_PEER, NULL);
			SSL_CTX_set_options(tls, SSL_OP_NO_RENEGOTIATION |
					    SSL_OP_IGNORE_UNEXPECTED_EOF);
		}
	}
	for (size_t i = 0; i < n_targets; i++) {
		int e = pthread_create(&targets[i].thread, NULL, worker, &targets[i]);
		if (e != 0)
			die("cannot start a thread: %s", strerror(e));
	}
}

/* One EXP_SUBMIT, checked, mapped and queued. */
static void on_submit(const uint8_t *buf, size_t k, int fd, uint64_t *last_seq)
{
	struct exp_wire r = { (uint8_t *)buf, k, k, false };
	uint32_t op = exp_get_u32(&r), target = exp_get_u32(&r), route = exp_get_u32(&r);
	uint32_t records = exp_get_u32(&r);
	uint64_t seq = exp_get_u64(&r);
	uint32_t len = exp_get_u32(&r);
	if (r.bad || r.n != 0 || op != EXP_SUBMIT)
		die("the channel broke its protocol: a frame that is not a submit");
	if (target >= n_targets || route > TM_ROUTE_METRICS || records == 0 || len == 0 ||
	    len > TM_EXPORT_BODY_MAX || seq != *last_seq + 1)
		die("the channel broke its protocol: a submit out of range (target %u, route %u, "
		    "%u records, %u bytes, seq %llu after %llu)", target, route, records, len,
		    (unsigned long long)seq, (unsigned long long)*last_seq);
	if (fd < 0)
		die("the channel broke its protocol: a submit without its body");
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)len ||
	    seals < 0 || (seals & need) != need)
		die("the channel broke its protocol: a body that is not a sealed memfd of %u bytes",
		    len);
	void *body = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (body == MAP_FAILED)
		die("cannot map a body: %s", strerror(errno));
	*last_seq = seq;
	struct target *t = &targets[target];
	pthread_mutex_lock(&t->mu);
	if (t->n == TM_EXPORT_QUEUE)
		die("the channel broke its protocol: target %u has %d bodies outstanding already",
		    target, TM_EXPORT_QUEUE);
	t->q[(t->head + t->n) % TM_EXPORT_QUEUE] =
		(struct job){ .seq = seq, .route = route, .records = records, .body = body,
			      .len = len };
	t->n++;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

int main(int argc, char **argv)
{
	harden(argc == 2 ? argv[1] : NULL);
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL) != 1)
		die("OpenSSL could not be initialised");
	setup();
	uint64_t last_seq = 0;
	for (;;) {
		uint8_t buf[64];
		int fd;
		size_t k = recv_frame(buf, sizeof(buf), &fd);
		if (k == 0)
			break;                  /* the supervisor is done: drain and stop */
		on_submit(buf, k, fd, &last_seq);
	}
	for (size_t i = 0; i < n_targets; i++) {
		struct target *t = &targets[i];
		pthread_mutex_lock(&t->mu);
		t->stopping = true;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
	}
	for (size_t i = 0; i < n_targets; i++) {
		pthread_join(targets[i].thread, NULL);
		explicit_bzero(targets[i].secret_line, sizeof(targets[i].secret_line));
		/* a lookup still running is the process's to end: it exits */
	}
	SSL_CTX_free(tls);
	return 0;
}
