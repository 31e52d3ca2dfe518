/* gwio.h - one side of a gateway connection: a non-blocking socket, plain or
 * TLS, read and written with deadlines, closed gracefully.
 *
 * The proxy runs a thread per connection and writes straight-line code; this
 * layer turns OpenSSL's WANT_READ/WANT_WRITE and EAGAIN into poll(2) waits
 * bounded by a timeout, so no peer can hold a thread forever.
 *
 * Errors are negative errno values: -ETIMEDOUT (the deadline passed),
 * -ECONNRESET (the peer reset or a TLS record failed), -EPIPE (the peer
 * stopped reading), -EPROTO (a TLS protocol failure), -ECANCELED (the
 * gateway is stopping), -ENOMEM. */
#ifndef CAIRN_GW_IO_H
#define CAIRN_GW_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

struct gw_io {
	int fd;                 /* -1: not connected */
	int stop_fd;            /* readable when the gateway stops: every wait ends
	                           with -ECANCELED (-1: none) */
	SSL *ssl;               /* NULL: plain */
	bool eof;               /* the peer finished sending (read returned 0) */
};

/* A plain side over fd (made non-blocking here); stop_fd as above. */
void gw_io_init(struct gw_io *io, int fd, int stop_fd);

/* Wait for events on a bare descriptor (a dial in progress), within
 * timeout_ms, or until stop_fd: 0, -ETIMEDOUT, -ECANCELED. */
int gw_io_wait_fd(int fd, short events, int timeout_ms, int stop_fd);

/* Read at most n bytes: >0 bytes read, 0 at end of stream, or <0.  A TLS
 * peer that closes without close_notify ends the stream too when its
 * context has SSL_OP_IGNORE_UNEXPECTED_EOF (the gateway's do). */
ssize_t gw_io_read(struct gw_io *io, void *buf, size_t n, int timeout_ms);

/* Write all n bytes within timeout_ms of no progress: 0 or <0. */
int gw_io_write(struct gw_io *io, const void *buf, size_t n, int timeout_ms);

/* Bytes already decrypted and waiting in the TLS layer (read them without
 * polling the socket). */
bool gw_io_buffered(const struct gw_io *io);

/* Wait until a (and, if b is not NULL, b) has something to read: 0 with
 * *ra / *rb set, -ETIMEDOUT, or <0.  A side with buffered TLS bytes is
 * readable at once. */
int gw_io_wait(struct gw_io *a, struct gw_io *b, int timeout_ms, bool *ra, bool *rb);

/* TLS on top of the plain side: accept (the workload's side) or connect
 * (upstream) with ssl, which the io then owns.  0 or <0; on failure ssl is
 * freed and the io stays plain.  why gets OpenSSL's reason, if any. */
int gw_io_tls_accept(struct gw_io *io, SSL *ssl, int timeout_ms, char *why, size_t whylen);
int gw_io_tls_connect(struct gw_io *io, SSL *ssl, int timeout_ms, char *why, size_t whylen);

/* Close.  graceful: send TLS close_notify, half-close, and drain what the
 * peer still sends for up to linger_ms (a client that sees a reset after a
 * complete response treats the exchange as failed).  Else close at once. */
void gw_io_close(struct gw_io *io, bool graceful, int linger_ms);

#endif
