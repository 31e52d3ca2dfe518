/* link.h - the wire between the gateway process and the supervisor
 * (docs/egress.md "Two processes").
 *
 * The gateway process parses what the workload sends, terminates its TLS and
 * holds the CA key and the secrets; the supervisor holds the engine and the
 * history.  Every decision and every record the gateway needs crosses a
 * decision channel: an AF_UNIX SOCK_SEQPACKET pair, one frame per request and
 * one per reply, synchronous.  GW_LINK_CHANNELS of them run side by side (a
 * connection thread takes a free one), each served by one supervisor thread,
 * so concurrent requests still share the history's group commit.  A channel
 * is held through its request's sync, so their number bounds how many
 * requests one fdatasync carries: 16 carried about 1.4 times the requests
 * of 4 at 64 connections, and 32 no more (docs/egress.md "Two processes").
 *
 * A frame is an op (u32), then its fields: integers little-endian, strings
 * as a u32 length and that many bytes (no NUL inside).  A request that does
 * not parse is answered -EPROTO and decides nothing: the gateway then denies,
 * as for any internal fault.  A reply that does not parse denies too.
 *
 * The supervisor trusts the gateway process no further than the calls here:
 * it can ask for decisions, record outcomes and refusals, and relay the
 * agent's own telemetry (one JSON line each, in a sealed memfd); it cannot load
 * a policy, read the history or reach the supervisor's memory. */
#ifndef CAIRN_GW_LINK_H
#define CAIRN_GW_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decide.h"

#define GW_LINK_CHANNELS 16
#define GW_LINK_FRAME_MAX (96u << 10)   /* a head's path, Box's 8 KiB reason, and room */

/* ---- frames ---------------------------------------------------------------- */

struct gw_wire {
	unsigned char *p;
	size_t n, cap;                  /* writing: bytes so far; reading: bytes left */
	bool bad;                       /* a put overflowed or a get ran short/was malformed */
};

void gw_wire_init(struct gw_wire *w, unsigned char *buf, size_t cap);   /* for writing */
void gw_wire_from(struct gw_wire *w, unsigned char *buf, size_t n);     /* for reading */
void gw_put_u8(struct gw_wire *w, uint8_t v);
void gw_put_u32(struct gw_wire *w, uint32_t v);
void gw_put_u64(struct gw_wire *w, uint64_t v);
void gw_put_str(struct gw_wire *w, const char *s);      /* NULL: as "" */
void gw_put_bytes(struct gw_wire *w, const void *b, size_t n);
uint8_t gw_get_u8(struct gw_wire *w);
uint32_t gw_get_u32(struct gw_wire *w);
uint64_t gw_get_u64(struct gw_wire *w);
/* A string of at most max bytes, copied NUL-terminated into malloc'd
 * storage (*out; NULL on failure, with w->bad set). */
void gw_get_str(struct gw_wire *w, size_t max, char **out);
/* Bytes of at most max, borrowed from the frame (*out, *n). */
void gw_get_bytes(struct gw_wire *w, size_t max, const unsigned char **out, size_t *n);

/* A frame with descriptors (SCM_RIGHTS), for the control channel
 * (gwctl.h).  Send: 0 or -errno.  Receive: the frame's length (0: the peer
 * closed) and up to max_fds descriptors (*nfds; extra ones, and every one on
 * a truncated frame, are closed and the frame is -EPROTO), or -errno.  The
 * descriptors received are close-on-exec. */
int gw_frame_send(int sock, const struct gw_wire *w, const int *fds, size_t nfds);
long gw_frame_recv(int sock, unsigned char *buf, size_t cap, int *fds, size_t max_fds,
		   size_t *nfds);

/* ---- decision channels: the gateway's side --------------------------------- */

struct gw_link;

/* Take over fds[0, n) (n <= GW_LINK_CHANNELS), the gateway's ends of the
 * channels.  0 and *out, or -ENOMEM (the fds are closed). */
int gw_link_new(const int *fds, size_t n, struct gw_link **out);
void gw_link_free(struct gw_link *l);

/* A decider whose every call goes over l (l must outlive it); each call
 * waits for a free channel and its reply.  A channel that fails (the
 * supervisor gone, a bad reply) gives -EPIPE or -EPROTO, denies, and is not
 * used again. */
void gw_decider_link(struct gw_decider *d, struct gw_link *l);

/* ---- decision channels: the supervisor's side ------------------------------ */

/* Answer one request frame: buf[0, n) holds it, and on return the reply
 * (at most cap bytes), whose length is returned.  dec decides locally
 * (gw_decider_local).  A frame that does not parse gets -EPROTO. */
size_t gw_link_answer(struct gw_decider *dec, unsigned char *buf, size_t n, size_t cap);

/* The same for a frame that came with descriptor fd (-1: none; the caller
 * closes it): only an agent payload does (a sealed memfd, handed to
 * dec->records mapped); any other frame with one is -EPROTO. */
size_t gw_link_answer_fd(struct gw_decider *dec, unsigned char *buf, size_t n, size_t cap, int fd);

/* One thread per channel, answering until the gateway's end closes.
 * fds are taken over.  0 and *out, or -errno. */
struct gw_link_server;
int gw_link_server_start(struct gw_decider *dec, const int *fds, size_t n,
			 struct gw_link_server **out);
/* Wait for every channel to close (the gateway process has ended, or
 * closed them), then free.  NULL is a no-op. */
void gw_link_server_stop(struct gw_link_server *s);

#endif
