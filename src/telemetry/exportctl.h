/* exportctl.h - the channel between the supervisor and cairn-export
 * (docs/records.md "OTLP targets"), and what both sides check the same way:
 * the frames' codec, a target's URL, a header's value.
 *
 * The supervisor starts cairn-export with:
 *   fd 3       the channel (AF_UNIX SOCK_SEQPACKET: one frame a message)
 *   argv[1]    the supervisor's pid (the process dies with it)
 *   env        SSL_CERT_FILE and SSL_CERT_DIR only, when set (the trust
 *              store; nothing else: no *_PROXY, no resolver variables)
 * Frames are little-endian: u32, u64, and str (a u32 length, then that many
 * bytes, no NUL among them).  In order:
 *
 *   supervisor -> EXP_HELLO   u32 version (1), u32 n (1..TM_EXPORT_TARGETS_MAX)
 *   supervisor -> EXP_TARGET  n of them, in order: u32 index, str label,
 *                             str url, str header, str secret (header and
 *                             secret both "" for none; the secret by value:
 *                             never in argv or the environment)
 *   supervisor -> EXP_SUBMIT  u32 target, u32 route (enum tm_route), u32
 *                             records (>= 1), u64 seq (1, 2, ... across
 *                             targets), u32 length (1..TM_EXPORT_BODY_MAX);
 *                             SCM_RIGHTS: one memfd holding exactly the body,
 *                             sealed against writing, shrinking and growing
 *                             (a 4 MiB body is more than one datagram may
 *                             carry; the memfd costs no copy through the
 *                             socket, and the seals make it immutable)
 *   cairn-export -> EXP_DONE  u32 target, u64 seq, u32 ok (1/0), str error
 *                             ("" when ok): one per submit, per target in the
 *                             order submitted
 *   ...
 *   supervisor shuts down its sending side: cairn-export finishes what it
 *   holds (each request has its own 4 s deadline), says DONE for each and
 *   exits 0.
 *
 * At most TM_EXPORT_QUEUE submits per target are unanswered at any time.
 * Every frame is decoded strictly: an unknown or out-of-order op, a field
 * out of range, trailing bytes, a missing, extra or unsealed descriptor, a
 * truncated message.  A bad frame from the supervisor makes cairn-export say
 * why on stderr and exit 1; a bad frame from cairn-export makes the
 * supervisor kill it and count what it held lost. */
#ifndef CAIRN_TM_EXPORTCTL_H
#define CAIRN_TM_EXPORTCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#define EXP_FD 3
#define EXP_VERSION 1
#define EXP_FRAME_MAX (16u << 10)
#define EXP_LABEL_MAX 256
#define EXP_URL_MAX 2048
#define EXP_HEADER_MAX 256
#define EXP_SECRET_MAX 8192
#define EXP_ERROR_MAX 255

enum exp_op {
	EXP_HELLO = 0x200,
	EXP_TARGET,
	EXP_SUBMIT,
	EXP_DONE,
};

/* A frame being written (into p[0, cap)) or read (from p[0, n)): a field
 * that does not fit, or is not there, sets bad and reads as zero. */
struct exp_wire {
	uint8_t *p;
	size_t n, cap;
	bool bad;
};

void exp_put_u32(struct exp_wire *w, uint32_t v);
void exp_put_u64(struct exp_wire *w, uint64_t v);
void exp_put_str(struct exp_wire *w, const char *s);
uint32_t exp_get_u32(struct exp_wire *r);
uint64_t exp_get_u64(struct exp_wire *r);
/* A str of at most max bytes, copied NUL-terminated into out[max + 1]. */
void exp_get_str(struct exp_wire *r, char *out, size_t max);

/* A target's URL, split. */
struct exp_url {
	bool tls;
	char host[256];                 /* a name, an IPv4 literal, or an IPv6 one
	                                   without its brackets */
	bool ipv6;
	uint16_t port;                  /* 80 / 443 when not written */
	bool port_given;
	char path[EXP_URL_MAX];         /* "" or "/prefix", without trailing '/' */
};

/* Split url: http:// or https://, a host (a name of [A-Za-z0-9.-_~], or an
 * IP literal, IPv6 in brackets), an optional :port (1..65535), an optional
 * path of printable characters; no userinfo, query or fragment.  0, or -1
 * with why ("the URL ... is not ...").  Both sides use this. */
int exp_url_parse(const char *url, struct exp_url *u, char *why, size_t whylen);

/* Box's loopback: localhost, an IPv4 address in 127/8 (any form the
 * resolver reads as one), ::1. */
bool exp_url_loopback(const struct exp_url *u);

/* A value that can go in an HTTP header as sent: 1..EXP_SECRET_MAX bytes,
 * no control character (a CR or LF would end the header and start
 * another), no leading or trailing space. */
bool exp_header_value_ok(const char *v);

/* A header name: an HTTP token. */
bool exp_header_name_ok(const char *v);

/* The header line a secret is sent as, Box's way: "Authorization: Bearer
 * <secret>" when the header is Authorization (any case), else "<header>:
 * <secret>".  Written into out[len]; the length, or -1 when it does not fit. */
int exp_secret_line(const char *header, const char *secret, char *out, size_t len);

#endif
