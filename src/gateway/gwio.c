/* gwio.c - one side of a gateway connection (gwio.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "gwio.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gw_io_init(struct gw_io *io, int fd, int stop_fd)
{
	io->fd = fd;
	io->stop_fd = stop_fd;
	io->ssl = NULL;
	io->eof = false;
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
}

static long long deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* The poll(2) timeout left until deadline (-1: none), or -ETIMEDOUT. */
static int time_left(long long deadline, int *t)
{
	*t = -1;
	if (deadline < 0)
		return 0;
	long long left = deadline - now_ms();
	if (left <= 0)
		return -ETIMEDOUT;
	*t = left > 1000000 ? 1000000 : (int)left;
	return 0;
}

/* Wait for events on fd until deadline (-1: none), or until stop_fd (the
 * gateway's stop) becomes readable: -ECANCELED. */
static int wait_fd(int fd, short events, long long deadline, int stop_fd)
{
	for (;;) {
		int t;
		if (time_left(deadline, &t) < 0)
			return -ETIMEDOUT;
		struct pollfd p[2] = { { .fd = fd, .events = events },
				       { .fd = stop_fd, .events = POLLIN } };
		int r = poll(p, 2, t);
		if (r > 0 && p[1].revents)
			return -ECANCELED;
		if (r > 0)
			return 0;       /* readable, writable, or an error the next call reports */
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int gw_io_wait_fd(int fd, short events, int timeout_ms, int stop_fd)
{
	return wait_fd(fd, events, deadline_of(timeout_ms), stop_fd);
}

/* Map an SSL call's failure: 1 to retry after waiting for *ev, or <0. */
static int ssl_retry(SSL *ssl, int ret, short *ev)
{
	switch (SSL_get_error(ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		*ev = POLLIN;
		return 1;
	case SSL_ERROR_WANT_WRITE:
		*ev = POLLOUT;
		return 1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return errno == EPIPE ? -EPIPE : -ECONNRESET;
	default:
		ERR_clear_error();
		return -EPROTO;
	}
}

ssize_t gw_io_read(struct gw_io *io, void *buf, size_t n, int timeout_ms)
{
	long long deadline = deadline_of(timeout_ms);
	if (io->fd < 0)
		return -EBADF;
	for (;;) {
		short ev = POLLIN;
		if (io->ssl) {
			size_t got = 0;
			ERR_clear_error();
			int r = SSL_read_ex(io->ssl, buf, n, &got);
			if (r == 1)
				return (ssize_t)got;
			int k = ssl_retry(io->ssl, r, &ev);
			if (k == 0) {
				io->eof = true;
				return 0;
			}
			if (k < 0)
				return k;
		} else {
			ssize_t r = recv(io->fd, buf, n, 0);
			if (r >= 0) {
				if (r == 0)
					io->eof = true;
				return r;
			}
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return errno == ECONNRESET ? -ECONNRESET : -errno;
		}
		int w = wait_fd(io->fd, ev, deadline, io->stop_fd);
		if (w < 0)
			return w;
	}
}

int gw_io_write(struct gw_io *io, const void *buf, size_t n, int timeout_ms)
{
	const char *p = buf;
	if (io->fd < 0)
		return -EBADF;
	while (n > 0) {
		short ev = POLLOUT;
		if (io->ssl) {
			size_t put = 0;
			ERR_clear_error();
			int r = SSL_write_ex(io->ssl, p, n, &put);
			if (r == 1) {
				p += put, n -= put;
				continue;
			}
			int k = ssl_retry(io->ssl, r, &ev);
			if (k <= 0)
				return k == 0 ? -EPIPE : k;
		} else {
			ssize_t r = send(io->fd, p, n, MSG_NOSIGNAL);
			if (r >= 0) {
				p += r, n -= (size_t)r;
				continue;
			}
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
		}
		/* the deadline counts from the last progress */
		int w = wait_fd(io->fd, ev, deadline_of(timeout_ms), io->stop_fd);
		if (w < 0)
			return w;
	}
	return 0;
}

bool gw_io_buffered(const struct gw_io *io)
{
	return io->ssl != NULL && SSL_pending(io->ssl) > 0;
}

int gw_io_wait(struct gw_io *a, struct gw_io *b, int timeout_ms, bool *ra, bool *rb)
{
	*ra = gw_io_buffered(a);
	if (rb)
		*rb = b && gw_io_buffered(b);
	if (*ra || (rb && *rb))
		return 0;
	long long deadline = deadline_of(timeout_ms);
	for (;;) {
		struct pollfd p[3] = { { .fd = a->fd, .events = POLLIN },
				       { .fd = b ? b->fd : -1, .events = POLLIN },
				       { .fd = a->stop_fd, .events = POLLIN } };
		int t;
		if (time_left(deadline, &t) < 0)
			return -ETIMEDOUT;
		int r = poll(p, 3, t);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		if (p[2].revents)
			return -ECANCELED;
		*ra = p[0].revents != 0;
		if (rb)
			*rb = b && p[1].revents != 0;
		return 0;
	}
}

static void ssl_why(char *why, size_t whylen)
{
	unsigned long e = ERR_peek_last_error();
	if (whylen == 0)
		return;
	if (e != 0)
		ERR_error_string_n(e, why, whylen);
	else
		snprintf(why, whylen, "%s", errno ? strerror(errno) : "the peer closed the connection");
	ERR_clear_error();
}

static int handshake(struct gw_io *io, SSL *ssl, bool server, int timeout_ms, char *why,
		     size_t whylen)
{
	long long deadline = deadline_of(timeout_ms);
	if (whylen)
		why[0] = '\0';
	if (SSL_set_fd(ssl, io->fd) != 1) {
		ssl_why(why, whylen);
		SSL_free(ssl);
		return -ENOMEM;
	}
	for (;;) {
		short ev = POLLIN;
		ERR_clear_error();
		errno = 0;
		int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
		if (r == 1) {
			io->ssl = ssl;
			return 0;
		}
		int e = SSL_get_error(ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			ev = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
			int w = wait_fd(io->fd, ev, deadline, io->stop_fd);
			if (w < 0) {
				if (whylen)
					snprintf(why, whylen, "TLS handshake timed out");
				SSL_free(ssl);
				return w;
			}
			continue;
		}
		if (server || SSL_get_verify_result(ssl) == X509_V_OK)
			ssl_why(why, whylen);
		else if (whylen)
			snprintf(why, whylen, "certificate verify failed: %s",
				 X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
		ERR_clear_error();
		SSL_free(ssl);
		return -EPROTO;
	}
}

int gw_io_tls_accept(struct gw_io *io, SSL *ssl, int timeout_ms, char *why, size_t whylen)
{
	return handshake(io, ssl, true, timeout_ms, why, whylen);
}

int gw_io_tls_connect(struct gw_io *io, SSL *ssl, int timeout_ms, char *why, size_t whylen)
{
	return handshake(io, ssl, false, timeout_ms, why, whylen);
}

void gw_io_close(struct gw_io *io, bool graceful, int linger_ms)
{
	if (io->fd < 0)
		return;
	if (graceful) {
		if (io->ssl) {
			ERR_clear_error();
			SSL_shutdown(io->ssl);          /* our close_notify; no wait for theirs */
			ERR_clear_error();
		}
		shutdown(io->fd, SHUT_WR);
		long long deadline = now_ms() + linger_ms;
		char sink[4096];
		size_t drained = 0;
		while (drained < (1u << 20)) {
			ssize_t r = recv(io->fd, sink, sizeof(sink), 0);
			if (r == 0)
				break;
			if (r > 0) {
				drained += (size_t)r;
				continue;
			}
			if (errno == EINTR)
				continue;
			if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			    wait_fd(io->fd, POLLIN, deadline, io->stop_fd) < 0)
				break;
		}
	}
	if (io->ssl) {
		SSL_free(io->ssl);
		io->ssl = NULL;
	}
	close(io->fd);
	io->fd = -1;
	io->eof = false;
}
