/* ca.h - the egress gateway's TLS: the per-run CA, leaf certificates minted
 * per host, and the two SSL_CTXs (issue 5 §2; docs/egress.md "TLS").
 *
 * The CA is ECDSA P-256, generated in memory at the start of a run; its key
 * is never written anywhere.  Only its certificate goes to disk, into the
 * box's trust/ directory, for the workload to trust.  Leaves are minted per
 * host on demand (a fresh P-256 key each) and kept in a 64-entry LRU cache.
 *
 * Errors are values: every call that can fail returns 0 or a negative errno
 * and writes what failed and why into err[0, errlen) (NUL-terminated; err
 * may be NULL).  No call prints, exits or leaves entries on the calling
 * thread's OpenSSL error queue.
 *
 * Threads: a gw_ca and the server SSL_CTX made from it may be used from any
 * number of threads at once (the leaf cache has a mutex; minting runs
 * outside it).  A single SSL is one thread's at a time, as OpenSSL wants. */
#ifndef CAIRN_GW_CA_H
#define CAIRN_GW_CA_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "ca_mint.h"
#include "cert_file.h"


#define GW_CA_CACHE_SIZE 64             /* leaves kept, least recently used evicted */
#define GW_HOST_MAX      253            /* a DNS name's longest text form */

struct gw_ca;                           /* opaque, reference-counted */
struct gw_leaf;                         /* opaque, reference-counted */

/* --- the CA --------------------------------------------------------------- */

/* A new CA for this run: P-256 key (memory only), self-signed X.509v3
 * certificate, CN GW_CA_CN, 128-bit random serial, valid from one hour ago
 * for 30 days, basicConstraints critical CA:TRUE (no path length),
 * keyUsage critical keyCertSign|cRLSign|digitalSignature, subjectKeyIdentifier.
 * Returns 0 and *out (one reference; gw_ca_free), or <0 with *out untouched.
 * Leaves minted after the 30 days are capped at the CA's notAfter, so a run
 * longer than that needs a new CA. */
int gw_ca_new(struct gw_ca **out, char *err, size_t errlen);

/* The CA the supervisor minted (ca_mint.h): its key (ECPrivateKey DER) and
 * certificate (DER), each consumed whole.  Refused unless the key is P-256,
 * the certificate is a CA's (basicConstraints CA:TRUE) and self-signed with
 * that very key.  0 and *out, or -EINVAL/-ENOMEM with err. */
int gw_ca_from_der(const unsigned char *key, size_t key_len, const unsigned char *cert,
		   size_t cert_len, struct gw_ca **out, char *err, size_t errlen);

/* Drop the caller's reference; the CA and its cache go with the last one
 * (server SSL_CTXs hold their own).  NULL is a no-op. */
void gw_ca_free(struct gw_ca *ca);

/* The CA certificate, borrowed: valid while the caller holds its reference. */
X509 *gw_ca_cert(const struct gw_ca *ca);

/* Unlink dirfd/name if it is a regular file (a stale cert.pem of an earlier
 * run).  0 when removed or absent; -ENOTSUP (nothing removed) when something
 * else is there (a symbolic link, a directory, a FIFO...). */
int gw_ca_remove_stale(int dirfd, const char *name, char *err, size_t errlen);

/* Write the CA certificate - and nothing else - as PEM to dirfd/name (name:
 * one path component), created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0400 (set
 * with fchmod too, whatever the umask).  An existing name is refused with
 * -EEXIST: remove a stale file first with gw_ca_remove_stale.  The file is
 * then read back through gw_ca_check_cert_file and compared byte for byte
 * with what was written.  On failure after the create the file may remain:
 * the run must not start.  The same as gw_ca_create_cert_file followed by
 * gw_ca_fill_cert_file. */
int gw_ca_write_cert(const struct gw_ca *ca, int dirfd, const char *name, char *err,
		     size_t errlen);

/* The two halves of gw_ca_write_cert, so the file can exist (a sandbox can
 * bind it) before the CA is made.  Create dirfd/name empty, as
 * gw_ca_write_cert does, and return its write-only fd (O_CLOEXEC), or <0. */
int gw_ca_create_cert_file(int dirfd, const char *name, char *err, size_t errlen);

/* Write ca's certificate into fd (from gw_ca_create_cert_file for
 * dirfd/name; taken over and closed, whatever the outcome), then read
 * dirfd/name back and check it as gw_ca_write_cert does.  0 or <0; on
 * failure the file may hold part of the PEM: the run must not start. */
int gw_ca_fill_cert_file(const struct gw_ca *ca, int fd, int dirfd, const char *name, char *err,
			 size_t errlen);

/* The read-back check alone: dirfd/name (not followed if a link) is a regular
 * file of at most GW_CERT_FILE_MAX bytes that holds "BEGIN CERTIFICATE" and no
 * "PRIVATE KEY".  0, or -EPERM (key material), -EINVAL (no certificate, not a
 * regular file), -EFBIG, or the open/read errno. */
int gw_ca_check_cert_file(int dirfd, const char *name, char *err, size_t errlen);

/* --- leaves --------------------------------------------------------------- */

/* Copy host into out[GW_HOST_MAX + 1] in the canonical form leaves and the
 * cache use: a DNS name lower-cased, 1..253 characters of [a-z0-9.-] in
 * labels of 1..63 (no empty label, no trailing dot, last label not all
 * digits), or an IPv4 / IPv6 literal (no brackets, no zone) in inet_ntop's
 * form.  Returns 1 for an IP literal, 0 for a name, -EINVAL for anything else
 * (out then holds nothing usable). */
int gw_host_normalize(const char *host, char out[GW_HOST_MAX + 1]);

/* The leaf for host, from the cache or minted now: a fresh P-256 key; CN=host
 * (omitted past X.509's 64-character bound, SAN then critical); SAN DNS:host,
 * or IP:host for a literal; AKI = the CA's SKI; random serial; basicConstraints
 * CA:FALSE; keyUsage digitalSignature; extendedKeyUsage serverAuth; valid from
 * one hour ago for 7 days (a cached leaf with under a day left is re-minted).
 * host goes through gw_host_normalize (-EINVAL when refused).  Returns 0 and
 * *out holding one reference (gw_leaf_put), or <0 with *out untouched.
 * The cache holds GW_CA_CACHE_SIZE hosts and evicts the least recently used
 * one when full (Box clears the whole cache instead; LRU keeps the busy hosts
 * warm).  Eviction only drops the cache's reference: a leaf in use stays valid. */
int gw_ca_leaf(struct gw_ca *ca, const char *host, struct gw_leaf **out, char *err,
	       size_t errlen);

void gw_leaf_put(struct gw_leaf *leaf);                 /* NULL is a no-op */

/* Borrowed while the caller holds its leaf reference. */
X509 *gw_leaf_cert(const struct gw_leaf *leaf);
EVP_PKEY *gw_leaf_key(const struct gw_leaf *leaf);
STACK_OF(X509) *gw_leaf_chain(const struct gw_leaf *leaf);  /* the chain past the leaf: the CA */
const char *gw_leaf_host(const struct gw_leaf *leaf);      /* canonical host */

/* Number of leaves in the cache now (statistics, tests). */
size_t gw_ca_cache_len(struct gw_ca *ca);

/* --- TLS toward the workload ---------------------------------------------- */

/* A server SSL_CTX for the workload's side (free with SSL_CTX_free; it holds
 * its own reference to ca).  TLS 1.2 and 1.3; no renegotiation; buffers
 * released while idle (SSL_MODE_RELEASE_BUFFERS).  ALPN: "http/1.1" selected
 * when offered, else no ALPN (a client offering only h2 goes on without).
 * The certificate is chosen per connection during the ClientHello: for the
 * SNI name when the client sent one, else for the host given to
 * gw_tls_set_default_host; a connection with neither, or with an SNI that
 * gw_host_normalize refuses, gets a fatal alert.
 * Sessions: no tickets, no session cache - every connection is a full
 * handshake, so every connection runs the leaf selection for its own SNI
 * (a resumed session would carry the identity of an earlier connection),
 * and no ticket key lives in the gateway; keep-alive amortises the cost. */
int gw_tls_server_ctx(struct gw_ca *ca, SSL_CTX **out, char *err, size_t errlen);

/* The same context built by its first user: the workload's first TLS
 * connection, in a run that has one.  Making it starts libssl (its
 * ciphers, groups and signature algorithms from the provider: about half
 * a millisecond and some hundreds of KiB), which a run without TLS from
 * the workload does not pay.  gw_server_new takes its own reference to ca.
 * gw_server_ctx: the context of gw_tls_server_ctx, with
 * SSL_OP_IGNORE_UNEXPECTED_EOF (a client's EOF without close_notify ends
 * its stream), borrowed until gw_server_free; thread-safe as
 * gw_upstream_ctx is (one context for every caller; a failed build keeps
 * nothing and is tried again). */
struct gw_server;                       /* opaque */
int gw_server_new(struct gw_ca *ca, struct gw_server **out, char *err, size_t errlen);
int gw_server_ctx(struct gw_server *sv, SSL_CTX **out, char *err, size_t errlen);
bool gw_server_loaded(struct gw_server *sv);            /* built yet (tests) */
void gw_server_free(struct gw_server *sv);              /* NULL is a no-op */

/* On an SSL of that context, before SSL_accept: the host to serve when the
 * ClientHello carries no SNI - the CONNECT host.  Copied (normalized). */
int gw_tls_set_default_host(SSL *ssl, const char *host, char *err, size_t errlen);

/* After the handshake: the canonical host whose leaf was served (SNI or
 * default), or NULL.  Borrowed from ssl.  The proxy compares it with the
 * CONNECT host (SSL_get_servername gives the raw SNI). */
const char *gw_tls_served_host(const SSL *ssl);

/* --- TLS upstream --------------------------------------------------------- */

/* The upstream trust of one run: the extra CAs read now, the system trust
 * store when the first upstream TLS connection needs it.  Loading the
 * system store (144 certificates on Debian 12) costs 30 to 45 ms and
 * about 1.5 MiB of heap, measured; a run that never dials TLS upstream
 * pays neither (docs/egress.md "TLS"). */
struct gw_upstream;                     /* opaque */

/* Read every certificate in each of extra_ca_files[0, n) (PEM) now: a file
 * that cannot be read, holds no certificate, or has a damaged PEM block
 * fails the call with its path in the message, so a bad file refuses the
 * box at start.  What was read is kept: later changes to the files do not
 * reach this run.  0 and *out (gw_upstream_free), or <0 with *out untouched. */
int gw_upstream_new(const char *const *extra_ca_files, size_t n, struct gw_upstream **out,
		    char *err, size_t errlen);

/* The client SSL_CTX for upstream connections, borrowed until
 * gw_upstream_free: TLS 1.2+, SSL_VERIFY_PEER against the system trust
 * store (read now, on the first call) plus the extra CAs, every trusted
 * certificate a trust anchor, self-signed or not (X509_V_FLAG_PARTIAL_CHAIN),
 * as in webpki; an upstream's EOF without close_notify ends the stream
 * (SSL_OP_IGNORE_UNEXPECTED_EOF).  Thread-safe: the first caller builds it
 * while the others wait, and every caller gets that one context.  A build
 * that fails returns <0 with err and keeps nothing, so a later call tries
 * again. */
int gw_upstream_ctx(struct gw_upstream *u, SSL_CTX **out, char *err, size_t errlen);

/* Whether the context is built yet (tests, statistics). */
bool gw_upstream_loaded(struct gw_upstream *u);

void gw_upstream_free(struct gw_upstream *u);           /* NULL is a no-op */

/* The same context built at once, for a caller of its own (free with
 * SSL_CTX_free): gw_upstream_new and gw_upstream_ctx in one call. */
int gw_tls_client_ctx(const char *const *extra_ca_files, size_t n, SSL_CTX **out, char *err,
		      size_t errlen);

/* On an SSL of that context, before SSL_connect: verify the peer as host
 * (SSL_set1_host for a name, no partial wildcards; the IP SAN check for a
 * literal), send host as SNI (names only, never literals), offer ALPN
 * "http/1.1".  host goes through gw_host_normalize. */
int gw_tls_client_prepare(SSL *ssl, const char *host, char *err, size_t errlen);

#endif
