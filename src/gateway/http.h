/* http.h - the egress gateway's HTTP/1.1 message layer: heads, framing,
 * chunked bodies, hop-by-hop fields, the policy path, and a head writer
 * (issue 5 §1, §4; docs/egress.md "The route", "Limits"; RFC 9110, RFC 9112,
 * RFC 3986).
 *
 * Pure code: no I/O, no clock, no globals, no printing.  The caller reads
 * bytes from a socket and feeds them here in whatever pieces they arrive;
 * the answer never depends on how the bytes were split.  Memory is bounded
 * whatever the peer sends: a head parser holds at most GW_HTTP_HEAD_MAX bytes
 * of head and GW_HTTP_FIELDS_MAX fields, and the chunked decoder holds no
 * body bytes at all (it decodes in place or into the caller's buffer), so a
 * body of any size streams through a fixed amount of memory (docs/egress.md
 * "Beyond Box": Box buffers whole bodies up to 16 MiB; we do not).
 *
 * We are strict where leniency would let two parsers disagree about where a
 * message ends (request smuggling, RFC 9112 §11.2) and refuse, with the
 * status to answer, rather than repair:
 *   - lines end in CRLF only: a bare CR, a bare LF, NUL, and control
 *     characters other than HTAB anywhere in a head are refused;
 *   - obs-fold (a field line starting with SP/HTAB) and whitespace between a
 *     field name and its colon are refused;
 *   - Content-Length together with Transfer-Encoding, differing
 *     Content-Length values, a Transfer-Encoding whose final coding is not
 *     chunked, and Transfer-Encoding in an HTTP/1.0 message are refused;
 *   - only HTTP/1.0 and HTTP/1.1.
 * Empty lines (CRLF only) before a start line are skipped (RFC 9112 §2.2 asks
 * a server to tolerate a stray CRLF after a body); they count toward the head
 * limit and toward head_len.
 *
 * Error values: functions return 0 or a positive "state" on success and a
 * negative errno on failure: -EBADMSG for a message we refuse (the head or
 * decoder then says which HTTP status to answer and why), -ENOMEM, -EINVAL
 * for a bad argument, -ENOSPC when a caller's buffer is too small.
 *
 * Threads: each object is one connection's, used by one thread at a time;
 * the free functions are reentrant. */
#ifndef CAIRN_GW_HTTP_H
#define CAIRN_GW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits (Box's where Box has one; docs/egress.md "Limits") ----------- */

#define GW_HTTP_HEAD_MAX    65536   /* a whole head, start line to the empty line */
#define GW_HTTP_LINE_MAX    8192    /* request line or status line, without CRLF */
#define GW_HTTP_FIELDS_MAX  100     /* field lines in a head (and in a trailer section) */
#define GW_HTTP_HOST_MAX    253     /* a DNS name without its trailing dot (RFC 1035) */
#define GW_HTTP_INTERIM_MAX 16      /* 1xx responses before the final one (the caller counts) */
#define GW_CHUNK_LINE_MAX   8192    /* one chunk-size line with its extensions, without CRLF */
#define GW_CHUNK_META_MAX   65536   /* all chunk extensions of a body; and its trailer section */
#define GW_CHUNK_SIZE_LINE  20      /* room for gw_chunk_size_line(): 16 hex digits + CRLF + NUL */

/* ---- byte strings -------------------------------------------------------- */

/* A borrowed byte string, not NUL-terminated.  p == NULL means "absent" (and
 * n == 0); p != NULL with n == 0 is present and empty (a query after a bare
 * '?'). */
struct gw_str {
	const char *p;
	size_t n;
};

/* GW_STR("literal") for a string literal. */
#define GW_STR(lit) ((struct gw_str){ (lit), sizeof(lit) - 1 })

/* ---- a parsed head --------------------------------------------------------- */

/* One field line: name as sent (case kept), value with leading and trailing
 * SP/HTAB removed.  Both point into the head parser's buffer. */
struct gw_field {
	struct gw_str name;
	struct gw_str value;
};

enum gw_form {
	GW_FORM_ORIGIN = 1,   /* "/path?query": inside an intercepted TLS tunnel */
	GW_FORM_ABSOLUTE,     /* "http://host[:port]/path?query": on the proxy listener */
	GW_FORM_AUTHORITY,    /* "host:port": CONNECT only */
	GW_FORM_ASTERISK,     /* "*": OPTIONS only */
};

/* How the body after a head is delimited (RFC 9112 §6.3). */
enum gw_body {
	GW_BODY_NONE = 1,     /* no body: the next message starts right after the head */
	GW_BODY_LENGTH,       /* content_length bytes (possibly 0) */
	GW_BODY_CHUNKED,      /* chunked: feed it to a gw_chunked decoder */
	GW_BODY_CLOSE,        /* response only: everything until the server closes */
	GW_BODY_TUNNEL,       /* response only: 2xx to CONNECT or 101: raw bytes both ways */
};

enum gw_expect {
	GW_EXPECT_NONE = 0,
	GW_EXPECT_CONTINUE,   /* "Expect: 100-continue" in an HTTP/1.1 request */
	GW_EXPECT_OTHER,      /* any other expectation: the gateway may answer 417 */
};

/* Where a request is going.  host is lower-cased and NUL-terminated, without
 * the brackets of an IPv6 literal (which is rewritten in RFC 5952 text by
 * inet_ntop, so "[0:0::1]" and "[::1]" are the same host) and without one
 * trailing dot ("example.com." is "example.com": policy and the CONNECT/Host
 * binding compare names, and the dot would let one name pass as another).
 * Reg-names hold only letters, digits, '-', '_' and '.', with no empty label. */
struct gw_authority {
	char host[GW_HTTP_HOST_MAX + 1];
	bool ipv6;            /* host was a bracketed IPv6 literal */
	uint16_t port;        /* 1..65535; the default when none was written */
};

struct gw_target {
	enum gw_form form;
	struct gw_authority auth;  /* ABSOLUTE and AUTHORITY: from the target; ORIGIN
	                            * and ASTERISK: from the Host field (default port 443) */
	struct gw_str path;   /* ORIGIN, ABSOLUTE: as sent, "/" if the URI had none;
	                       * ASTERISK: "*"; AUTHORITY: absent */
	struct gw_str query;  /* after '?', up to '#' or the end; absent without '?' */
	/* A fragment ("#...") is dropped (Box: "fragment dropped"). */
};

/* A complete head.  Every gw_str points into the parser's buffer (or at a
 * string literal) and stays valid until the parser is reset or freed. */
struct gw_msg {
	bool response;
	int version;                 /* 10 or 11 */
	/* requests */
	struct gw_str method;        /* case-sensitive token as sent */
	struct gw_str target_raw;    /* the request-target as sent */
	struct gw_target target;
	enum gw_expect expect;
	/* responses */
	int status;                  /* 100..599 */
	struct gw_str reason;        /* may be empty */
	bool interim;                /* 1xx other than 101: a final response follows */
	/* fields, in order */
	const struct gw_field *fields;
	size_t nfields;
	/* framing and connection */
	enum gw_body body;
	uint64_t content_length;     /* GW_BODY_LENGTH only; at most INT64_MAX */
	bool conn_close;             /* Connection: close */
	bool conn_keep_alive;        /* Connection: keep-alive */
	bool conn_upgrade;           /* Connection: upgrade */
	bool upgrade_websocket;      /* HTTP/1.1, Connection: upgrade and Upgrade lists websocket */
	bool keep_alive;             /* see gw_msg_keep_alive */
	size_t head_len;             /* bytes of the head, leading empty lines included */
};

/* ---- the head parser ------------------------------------------------------- */

enum gw_head_kind {
	/* Requests on the gateway's listener (Box: "absolute-form http:// -> plain
	 * path; CONNECT -> TLS path; https:// absolute-form and origin-form -> 400").
	 * Host is optional here (a proxy replaces it, RFC 9112 §3.2.2) but at most
	 * one, and valid when present. */
	GW_HEAD_PROXY_REQUEST = 1,
	/* Requests inside an intercepted TLS tunnel: origin-form, or "*" with
	 * OPTIONS; exactly one valid Host (default port 443), which fills
	 * target.auth (Box: "origin-form (or * with OPTIONS), exactly one Host"). */
	GW_HEAD_TUNNEL_REQUEST,
	/* Responses from upstream.  Their errors answer 502. */
	GW_HEAD_RESPONSE,
};

struct gw_head;   /* opaque: one connection's parser, reused message after message */

/* A parser for heads of this kind, ready for the first message; NULL when out
 * of memory or kind is not a gw_head_kind.  Free with gw_head_free. */
struct gw_head *gw_head_new(enum gw_head_kind kind);

void gw_head_free(struct gw_head *h);   /* NULL is a no-op */

/* Ready for the next message on the same connection (after a body, or after
 * a 1xx response).  Every gw_str of the previous message becomes invalid.
 * Keeps a small buffer for the next head and frees a large one, so an idle
 * keep-alive connection holds little memory.  The request method set by
 * gw_head_set_request is kept (a 1xx and the final response share it). */
void gw_head_reset(struct gw_head *h);

/* Responses only: the method of the request this response answers, which
 * decides the framing (HEAD: no body; 2xx to CONNECT: tunnel).  method is
 * copied (only whether it is HEAD or CONNECT is kept).  Until the first call
 * a response is framed as one to GET. */
void gw_head_set_request(struct gw_head *h, struct gw_str method);

/* Feed the next n bytes of the connection.  Returns:
 *    0  need more: all n bytes were taken (*used == n);
 *    1  the head is complete: *used bytes (at most n) were taken, the rest of
 *       p belongs to the body or the next message; gw_head_msg() holds it.
 *       Further feeds take nothing and return 1 until gw_head_reset;
 *  < 0  -EBADMSG (refused) or -ENOMEM; gw_head_error() says what to answer.
 *       The error is sticky: further feeds return it until gw_head_reset.
 * p may be NULL when n is 0.  Limits are checked as bytes arrive: a request
 * line past GW_HTTP_LINE_MAX fails at once (414), not at the end of the head. */
int gw_head_feed(struct gw_head *h, const void *p, size_t n, size_t *used);

/* The complete message, or NULL unless the last feed returned 1. */
const struct gw_msg *gw_head_msg(const struct gw_head *h);

/* After a failed feed: the status to answer (requests: 400, 414, 431, 501,
 * 505, or 500 for -ENOMEM; responses: 502) and a short static reason naming
 * what was wrong ("bare CR in head", "Content-Length with Transfer-Encoding").
 * Returns 0 and *reason NULL when the parser is not in error.  reason may be NULL. */
int gw_head_error(const struct gw_head *h, const char **reason);

/* ---- questions about a complete head -------------------------------------- */

/* The nth (0-based) field named name (case-insensitive), or NULL. */
const struct gw_field *gw_msg_field(const struct gw_msg *m, const char *name, size_t nth);

/* How many field lines are named name (case-insensitive). */
size_t gw_msg_count(const struct gw_msg *m, const char *name);

/* Does the connection stay open after this message (and its body)?
 * HTTP/1.1: yes unless "Connection: close".  HTTP/1.0: only with
 * "Connection: keep-alive" and without close (RFC 9112 §9.3).  Never after a
 * CONNECT request, a close-delimited or tunnelled response.  The connection
 * is reused only if both the request and its response say yes. */
bool gw_msg_keep_alive(const struct gw_msg *m);

/* Is the field named name (case-insensitive) hop-by-hop in this message, so
 * a proxy must not forward it (RFC 9110 §7.6.1)?  True for connection,
 * proxy-connection, proxy-authorization, proxy-authenticate, keep-alive, te,
 * transfer-encoding, upgrade, trailer (Box's list), and for every name the
 * message's Connection fields nominate, except Host and Content-Length: those
 * route and frame the message, and a peer naming them in Connection must not
 * get them stripped from a message whose body is then forwarded as framed.
 * m may be NULL: the fixed list only. */
bool gw_msg_is_hop_by_hop(const struct gw_msg *m, struct gw_str name);

/* Parse an authority "host[:port]" ("[v6]:port"), as a Host field value or a
 * CONNECT target is parsed: default_port 0 means the port is required.
 * Userinfo, an empty port, port 0, zone ids and IPvFuture are refused.
 * Returns 0 and fills *out, or -EINVAL (*out unspecified). */
int gw_authority_parse(struct gw_str s, uint16_t default_port, struct gw_authority *out);

/* The reason phrase of a status the gateway and the OTLP receiver answer or
 * relay (RFC 9110 §15), or "" for one it does not know (an empty reason is
 * valid HTTP). */
const char *gw_status_reason(int status);

/* ---- chunked bodies (RFC 9112 §7.1) --------------------------------------- */

/* A streaming decoder for one chunked body.  Holds no body bytes.  Limits:
 * each chunk-size line GW_CHUNK_LINE_MAX, all extensions together
 * GW_CHUNK_META_MAX, the trailer section GW_CHUNK_META_MAX and
 * GW_HTTP_FIELDS_MAX fields; chunk sizes up to INT64_MAX.  Chunk extensions
 * are checked against the grammar and dropped; trailer fields are checked
 * (a field line like a head's, no obs-fold) and dropped (RFC 9110 §6.5.1
 * lets a recipient that removes the chunked coding discard them).
 * The fields are private: use the functions. */
struct gw_chunked {
	int state;
	int err_status;              /* 400 for requests, 502 for responses */
	const char *reason;          /* after an error */
	uint64_t remaining;          /* bytes left in the current chunk */
	uint64_t body_bytes;         /* decoded so far */
	size_t line_len;             /* current chunk-size line */
	size_t ext_bytes;            /* extension bytes so far */
	size_t trailer_bytes;
	size_t trailer_fields;
	bool size_digits;            /* the size line has at least one digit */
};

/* Ready for a new body; response selects the status reported on errors. */
void gw_chunked_init(struct gw_chunked *c, bool response);

/* Decode from in[0, n) into out[0, cap).  out may be in itself (in-place
 * decoding: output never runs ahead of input) or a buffer not overlapping
 * in.  Stops when the input is used up, out is full, or the body ends.
 * Returns:
 *    0  more body to come: *used bytes taken (n, or fewer when out filled),
 *       *produced body bytes written;
 *    1  the body ended (last chunk and trailer section read): *used bytes
 *       taken, what follows in in[*used, n) is the next message;
 *       further calls take nothing and return 1;
 *  -EBADMSG: refused (sticky); gw_chunked_error() says why.  *used and
 *       *produced still count what was taken and written before the error.
 * in may be NULL when n is 0, out may be NULL when cap is 0. */
int gw_chunked_feed(struct gw_chunked *c, const void *in, size_t n, size_t *used,
		    void *out, size_t cap, size_t *produced);

/* After -EBADMSG: the status to answer (400 or 502) and a static reason. */
int gw_chunked_error(const struct gw_chunked *c, const char **reason);

/* Write "<hex size>\r\n" for re-chunking a body; returns its length (at most
 * GW_CHUNK_SIZE_LINE - 1) and NUL-terminates.  Size 0 is the last chunk: the
 * caller then writes the final "\r\n" (no trailers). */
size_t gw_chunk_size_line(char out[GW_CHUNK_SIZE_LINE], uint64_t size);

/* ---- the policy path ----------------------------------------------------- */

/* The canonical form of a request path for policy (http:request
 * input.path; Box: "path canonicalised, no query").  path is the target's
 * path (no query, no fragment): empty, "/..." or "*".  Rules, in order, per
 * byte of the input:
 *   1. "%XY" with two hex digits: if it decodes to an unreserved character
 *      (A-Z a-z 0-9 - . _ ~) it is replaced by that character ("%7E" -> "~",
 *      "%2e" -> "."); otherwise it stays encoded with uppercase hex ("%2f" ->
 *      "%2F", "%c3%a9" -> "%C3%A9").  "%00" and a '%' not followed by two hex
 *      digits are refused (-EINVAL).
 *   2. Unreserved characters, sub-delims (! $ & ' ( ) * + , ; =), ':', '@'
 *      and '/' are kept as they are.
 *   3. Every other byte (a raw NUL is refused) is percent-encoded with
 *      uppercase hex: '\' -> "%5C", '|' -> "%7C", UTF-8 bytes -> "%C3%A9", so
 *      a raw byte and its escape give the same path.
 *   4. Dot segments are removed (RFC 3986 §5.2.4) from the result of 1-3, so
 *      "%2E%2E" counts as "..": "/a/./b/../c" -> "/a/c", "/a/b/.." -> "/a/",
 *      "/../x" -> "/x", "/.." -> "/".  Only segments delimited by a raw '/'
 *      count: "%2F" does not split a segment.
 *   5. Nothing else changes: "//" is kept, case is kept, ';' parameters are
 *      kept, no trailing slash is added or removed (but see 4).
 * An empty path is "/"; "*" (OPTIONS *) is "*"; any other path not starting
 * with '/' is refused (-EINVAL).  The result is NUL-terminated in out[0, cap)
 * and its length stored in *len.  Returns 0, -EINVAL, or -ENOSPC when cap is
 * too small for the work (a dot segment is written before it is taken back,
 * so "/a/.." needs 5 bytes for its 2-byte result); a cap of
 * GW_PATH_CANON_MAX(path.n) is always enough.  On error out is unspecified
 * and *len untouched. */
#define GW_PATH_CANON_MAX(n) (3 * (size_t)(n) + 2)
int gw_path_canonical(struct gw_str path, char *out, size_t cap, size_t *len);

/* ---- writing heads -------------------------------------------------------- */

/* Builds one head into a caller's buffer, for forwarding a request upstream
 * or a response to the workload.  Always writes HTTP/1.1 (an intermediary
 * sends its own version, RFC 9110 §2.5).  The first error sticks: later calls
 * do nothing, gw_writer_finish returns it.  Every piece is checked, so a
 * value from a peer cannot inject a line: tokens must be tokens, the target
 * and values may not hold CR, LF, NUL or other control characters (HTAB
 * allowed in values and reasons).  Fields are private: use the functions. */
struct gw_writer {
	char *buf;
	size_t cap, len;
	int err;        /* 0, -ENOSPC (buffer full) or -EINVAL (bad piece) */
	int lines;      /* start lines written: exactly one is needed */
};

void gw_writer_init(struct gw_writer *w, char *buf, size_t cap);

/* "METHOD path[?query] HTTP/1.1\r\n": query absent (p == NULL) writes no '?'.
 * For CONNECT or OPTIONS *, pass the target as path and an absent query. */
void gw_writer_request_line(struct gw_writer *w, struct gw_str method, struct gw_str path,
			    struct gw_str query);

/* "HTTP/1.1 NNN reason\r\n"; status 100..599. */
void gw_writer_status_line(struct gw_writer *w, int status, struct gw_str reason);

/* "name: value\r\n". */
void gw_writer_field(struct gw_writer *w, struct gw_str name, struct gw_str value);

/* "name: <decimal>\r\n" (Content-Length). */
void gw_writer_field_u64(struct gw_writer *w, struct gw_str name, uint64_t value);

/* Ends the head with the empty line.  Returns 0 and *len (the head's length
 * in buf), or the first error (*len untouched; buf holds a partial head that
 * must not be sent).  -EINVAL also when no start line or two were written. */
int gw_writer_finish(struct gw_writer *w, size_t *len);

#endif
