/* cred.h - the gateway's credentials (issue 5 §6; docs/egress.md
 * "Credentials"): phantom tokens, route matching, the five injection
 * kinds, per-sandbox scoping, AWS profiles and response scrubbing.
 *
 * Everything here is a pure function over a header list, a request target
 * and byte buffers: no sockets, no environment, no clock (the caller passes
 * the time).  The one exception is gw_cred_aws_profile*, which reads the
 * operator's two AWS files.
 *
 * Secrets: every buffer this module allocates that held a secret (an env://
 * value, a signing key, an Authorization value it built) is wiped with
 * OPENSSL_cleanse before it is freed.  Header values the caller hands in
 * are the caller's.
 *
 * Errors are values: 0 or a positive result, or a negative errno with the
 * reason in err[0, errlen) (NUL-terminated; err may be NULL).  Nothing
 * prints or exits.  A failed call leaves its outputs and the header list
 * exactly as they were.
 *
 * Threads: a gw_cred_table is filled once at the start of a run and only
 * read afterwards, so gw_cred_apply may run on any number of threads at
 * once.  A gw_scrub is one response's, used by one thread at a time. */
#ifndef CAIRN_GW_CRED_H
#define CAIRN_GW_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "boxconf.h"

/* ---- header lists ---------------------------------------------------------
 *
 * A minimal owned list of HTTP header fields in wire order, for the HTTP
 * layer to hand in and take back.  Names compare case-insensitively; values
 * are kept as given (the HTTP layer has already removed surrounding OWS).
 * Every name and value is a malloc'd copy, NUL-terminated, with its length
 * beside it; neither may contain NUL, CR or LF (refused with -EINVAL).
 * At most GW_HDRS_MAX fields (-E2BIG beyond). */
#define GW_HDRS_MAX 1024

struct gw_hdr {
	char *name;
	size_t nlen;
	char *value;
	size_t vlen;
};

struct gw_hdrs {
	size_t n, cap;
	struct gw_hdr *v;
};

void gw_hdrs_init(struct gw_hdrs *h);
void gw_hdrs_clear(struct gw_hdrs *h);          /* frees every field; h is empty and reusable */

/* Append a copy of name[0, nlen): value[0, vlen).  0, -EINVAL, -E2BIG or
 * -ENOMEM (h unchanged). */
int gw_hdrs_add(struct gw_hdrs *h, const char *name, size_t nlen, const char *value, size_t vlen);

/* Remove every field named name, then append name: value.  0 or -errno
 * (h unchanged). */
int gw_hdrs_set(struct gw_hdrs *h, const char *name, const char *value);

/* Remove every field named name; returns how many were removed. */
size_t gw_hdrs_remove(struct gw_hdrs *h, const char *name);

/* Index of the first field named name at or after from, or -1. */
long gw_hdrs_find(const struct gw_hdrs *h, const char *name, size_t from);

/* The first value of name (borrowed from h), or NULL. */
const char *gw_hdrs_get(const struct gw_hdrs *h, const char *name);

/* A deep copy of src into *dst (dst need not be initialised).  0 or -ENOMEM
 * (*dst empty). */
int gw_hdrs_copy(struct gw_hdrs *dst, const struct gw_hdrs *src);

/* ---- phantoms ------------------------------------------------------------- */

#define GW_PHANTOM_PREFIX_MAX 64
#define GW_PHANTOM_HEX 64               /* 32 CSPRNG bytes, lower-case hex */
#define GW_PHANTOM_MAX (GW_PHANTOM_PREFIX_MAX + GW_PHANTOM_HEX)

/* prefix (1 to 64 of [A-Za-z0-9-_.~]) followed by 64 lower-case hex digits
 * from 32 bytes of getrandom(2), into out[0, outlen) NUL-terminated.  0,
 * -EINVAL (bad prefix), -ENOSPC (outlen < len + 1) or -EIO (no randomness). */
int gw_cred_phantom_new(const char *prefix, char *out, size_t outlen);

/* ---- routes ----------------------------------------------------------------
 *
 * A gw_cred_table is a run's credential routes: each [egress.<name>] (and
 * each http [mcp.<name>] that has a secret) with its destinations, its
 * secret.* settings and, for env:// routes, its minted phantom and the
 * resolved secret.  aws:// and credsd:// routes are signed and get no
 * phantom (Box's SignedAws routes); their credentials come per request. */
struct gw_cred_table;

int gw_cred_table_new(struct gw_cred_table **out);
void gw_cred_table_free(struct gw_cred_table *t);       /* NULL is a no-op; wipes secrets */

/* Add a route.  name, dests and sec are borrowed and must outlive t (they
 * live in the box_config).  For an env:// route a phantom is minted here,
 * unique across the table - except that routes reading one variable share
 * one phantom (the sandbox's variable holds one value; their phantom
 * prefixes must agree, else -EINVAL).  Returns the route's index (>= 0) or -EINVAL,
 * -EIO, -ENOMEM. */
int gw_cred_table_add(struct gw_cred_table *t, const char *name, const struct box_dests *dests,
		      const struct box_secret *sec, char *err, size_t errlen);

/* Every [egress.<name>] of cfg, in order (route i is cfg->egress[i]), then
 * every http [mcp.<name>] with a secret. */
int gw_cred_table_from_config(struct gw_cred_table *t, const struct box_config *cfg, char *err,
			      size_t errlen);

/* Give env:// route i its resolved secret (copied).  Box's rule: non-empty,
 * not blank, no byte < 0x20 or 0x7f; -EINVAL otherwise. */
int gw_cred_table_set_secret(struct gw_cred_table *t, size_t i, const char *value, char *err,
			     size_t errlen);

/* Give env:// route i the phantom the supervisor minted (the gateway
 * process's table is built again from the same config): it must be one of
 * the route's phantoms (its prefix and 64 hex digits) and no other route's,
 * but for a route reading the same variable.
 * 0 or -EINVAL. */
int gw_cred_table_set_phantom(struct gw_cred_table *t, size_t i, const char *phantom, char *err,
			      size_t errlen);

/* Resolve every env:// secret from this process's environment (Box's
 * rule, gw_cred_table_set_secret), and refuse credsd:// routes, which need
 * a daemon this build does not talk to.  0, or -EINVAL with the route and
 * the variable named in err. */
int gw_cred_table_read_secrets(struct gw_cred_table *t, char *err, size_t errlen);

/* Route i's resolved secret (NULL: none set).  Borrowed. */
const char *gw_cred_route_secret_value(const struct gw_cred_table *t, size_t i);

/* Box's placeholder keys for aws:// routes: clients that insist on
 * credentials sign with these, and the gateway re-signs with the real ones. */
#define GW_AWS_FAKE_KEY_ID "AKIAIOSFODNN7EXAMPLE"
#define GW_AWS_FAKE_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

/* The variables every sandbox gets from the routes, as "NAME=value" into
 * env[0, max) (each malloc'd; *n of them, also on failure, for the caller to
 * free): one phantom per env:// variable, and the placeholder AWS keys when an
 * aws:// route exists.  0, -ENOSPC or -ENOMEM. */
int gw_cred_sandbox_env(const struct gw_cred_table *t, char **env, size_t max, size_t *n);

size_t gw_cred_table_count(const struct gw_cred_table *t);
const char *gw_cred_route_name(const struct gw_cred_table *t, size_t i);
const struct box_secret *gw_cred_route_secret(const struct gw_cred_table *t, size_t i);
/* The route's phantom, or NULL for a signed (aws://, credsd://) route. */
const char *gw_cred_route_phantom(const struct gw_cred_table *t, size_t i);
/* The environment variable the phantom is given under (the env:// NAME), or NULL. */
const char *gw_cred_route_env_name(const struct gw_cred_table *t, size_t i);

/* Does route i's destination list match this request?  host compares
 * case-insensitively (one trailing dot ignored); a bare destination matches
 * ports 443 and 80, `:port` exactly; `*.x.com` strict subdomains only; a
 * path prefix `/v1` matches /v1 and /v1/... (by whole segment; `/v1/` any
 * path under it); a star pattern (a slash, a star, then a suffix: "/",
 * "*", "/upload" run together) matches any path ending in the suffix
 * (Box's `ends_with`, no boundary).  path is the request path without its
 * query, in canonical form (gw_cred_apply canonicalises a wire path). */
bool gw_cred_route_matches(const struct gw_cred_table *t, size_t i, const char *host,
			   unsigned port, const char *path);

/* The route for a request: -1 when none matches.  Signed (aws://, credsd://)
 * routes win over the others, as in Box; among routes of one kind the most
 * specific destination wins (exact host over wildcard, longer suffix,
 * explicit port, longer path pattern).  box.toml refuses overlapping
 * destinations at load, so ties only arise between the two kinds. */
long gw_cred_route_for(const struct gw_cred_table *t, const char *host, unsigned port,
		       const char *path);

/* ---- per-sandbox scoping ---------------------------------------------------
 *
 * cairn's addition: a tool table may list the routes it receives
 * (`egress = ["github"]`).  A scope is one flag per route of the table;
 * NULL everywhere below means "every route" (a tool without an `egress`
 * key, a stdio MCP server: Box's "the box is the credential boundary"; the
 * agent too, unless a tool names a route, which is then the tool's
 * alone). */

/* Flags for proc (allowed[i] = 1 when route i is listed), malloc'd into
 * *out; *out = NULL when proc names no `egress` list (every route).
 * -EINVAL when a listed name is not a route of t. */
int gw_cred_scope_new(const struct gw_cred_table *t, const struct box_process *proc,
		      unsigned char **out, char *err, size_t errlen);

/* ---- injection ------------------------------------------------------------ */

/* The agent's flags: every route but those some [tool.*] `egress` list
 * names, which are that tool's alone (docs/tools.md "The leaf's network");
 * *out = NULL when no tool names any (every route).  -ENOMEM. */
int gw_cred_scope_agent(const struct gw_cred_table *t, const struct box_config *cfg,
			unsigned char **out, char *err, size_t errlen);

/* A request as the workload sent it, and what injection may change. */
struct gw_cred_req {
	const char *host;               /* as in the request (CONNECT or Host) */
	unsigned port;
	bool tls;                       /* inside an intercepted TLS tunnel */
	const char *method;
	const char *path;               /* as sent on the wire, no query; "" is "/".  Routes
	                                   match its canonical form (unreserved %XX decoded,
	                                   dot segments removed); SigV4 signs it as sent */
	const char *query;              /* after '?', as sent; NULL: no '?' */
	struct gw_hdrs *hdrs;           /* edited in place on success */
	const unsigned char *scope;     /* the sandbox's routes (gw_cred_scope_new); NULL: all */

	/* Signed routes only. */
	time_t now;                     /* signing time (UTC seconds) */
	const char *key_id;             /* from gw_cred_aws_profile or credsd */
	const char *secret_key;
	const char *session_token;      /* NULL or "": none */
	const char *payload_hash;       /* hex SHA-256 of the body (gw_sigv4_payload_hash), or
	                                   NULL: not computed (allowed for s3 only, which
	                                   then signs UNSIGNED-PAYLOAD) */
};

struct gw_cred_result {
	long route;                     /* the route applied, or -1 */
	char *query;                    /* non-NULL: the new query to send ("": drop the '?');
	                                   NULL: unchanged.  Freed by gw_cred_result_clear */
	bool advisory;                  /* inject = "always" attached without the phantom */
	bool signed_aws;                /* SigV4: the request must be sent exactly as signed */
	bool scrub;                     /* env:// route: scan the response (gw_cred_scrub_*) */
};

void gw_cred_result_clear(struct gw_cred_result *r);   /* wipes and frees query */

/* Box's body for a credential refusal (403). */
#define GW_CRED_BLOCKED "blocked by egress control"
#define GW_CRED_RESPONSE_BLOCKED "response blocked by egress control"
#define GW_CRED_PLAINTEXT "credential not permitted on a plaintext request"

/* Apply the credential of the request's route.  The policy decision has
 * already seen the request as sent; this runs after a permit.
 *
 *   0          a credential was attached: hdrs edited (and out->query when
 *              the query changed); every credentialed request also gets
 *              `accept-encoding: identity`.
 *   1          no route for this destination (or a route outside the
 *              sandbox's scope): forward unchanged.
 *   -EACCES    refused: answer 403 GW_CRED_BLOCKED.  Why: err.  Causes: a
 *              plaintext request for a route; the phantom missing from its
 *              slot or a different value there (another route's phantom
 *              included) under inject = "phantom"; a phantom of a route
 *              outside req->scope anywhere in the headers or the target; an
 *              AWS host whose service and region cannot be derived; an
 *              aws-chunked signed-streaming upload.
 *   -EINVAL, -ENOMEM   internal faults (also answered 403).
 *
 * *out is overwritten: filled on 0; on any other result only out->route
 * is set (the route concerned, or -1) and nothing needs clearing.  On any
 * result but 0, hdrs is unchanged. */
int gw_cred_apply(const struct gw_cred_table *t, const struct gw_cred_req *req,
		  struct gw_cred_result *out, char *err, size_t errlen);

/* ---- AWS profiles ----------------------------------------------------------
 *
 * Static keys of a named profile, as Box reads them: `[profile NAME]` (or
 * `[NAME]`) in config, `[NAME]` in credentials, credentials winning on a
 * collision; aws_access_key_id, aws_secret_access_key, aws_session_token.
 * Refused by name, before any key is read: credential_process (it would run
 * a program named by an operator file outside containment), and the shapes
 * that need an STS or SSO call (role_arn, source_profile, sso_session,
 * sso_start_url, web_identity_token_file).  No ambient fallback.  Files
 * above 1 MiB are refused.
 *
 * 0 and three malloc'd strings (*token NULL when the profile has none;
 * free each with gw_cred_wipe_free), or -ENOENT (profile in neither file),
 * -EACCES (a refused shape), -EINVAL (a key missing or malformed), -EFBIG,
 * -EIO, -ENOMEM, with the outputs untouched. */
int gw_cred_aws_profile(const char *home, const char *profile, char **key_id, char **secret,
			char **token, char *err, size_t errlen);

/* The same with explicit paths (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE
 * are the caller's to honour); either may be NULL. */
int gw_cred_aws_profile_files(const char *credentials_path, const char *config_path,
			      const char *profile, char **key_id, char **secret, char **token,
			      char *err, size_t errlen);

void gw_cred_wipe_free(char *s);                /* OPENSSL_cleanse(strlen) then free; NULL ok */

/* ---- response scrubbing ----------------------------------------------------
 *
 * Occurrences of a secret in a response become "[REDACTED]" (Box's
 * marker).  The streaming scrubber holds at most a fixed window
 * (max(8 KiB, 2 x the longest needle)) whatever the body size: it keeps
 * back only the last (longest needle - 1) bytes that could begin a match,
 * so a secret split across any chunk boundary is still found.  Where
 * needles overlap the longest match at the leftmost position wins.
 *
 * Responses of env:// routes only (signed routes are not scanned); a
 * response with a non-identity Content-Encoding and a body is refused
 * instead (gw_cred_response_encoding_ok), as Box does. */
#define GW_REDACTED "[REDACTED]"
#define GW_SCRUB_NEEDLES 4

struct gw_scrub;

/* Output sink: 0 to continue, or a negative errno that the feed returns. */
typedef int (*gw_scrub_emit_fn)(void *ctx, const void *p, size_t n);

/* Scrub for needles[0, n) (1 to GW_SCRUB_NEEDLES non-empty strings, copied
 * and wiped at free).  0, -EINVAL or -ENOMEM. */
int gw_scrub_new(const char *const *needles, size_t n, struct gw_scrub **out);
void gw_scrub_free(struct gw_scrub *s);         /* NULL is a no-op */

/* The needles to scrub for route i's responses: its secret, and for
 * basic_auth the base64 form it travelled in too.  -EINVAL for a route
 * without a secret (signed, or not yet set). */
int gw_cred_scrub_new(const struct gw_cred_table *t, size_t i, struct gw_scrub **out);

/* Feed the next n bytes of the stream; every byte that can no longer be
 * part of a match goes to emit (possibly across several calls).  Returns 0
 * or emit's error (the scrubber is then unusable until reset). */
int gw_scrub_feed(struct gw_scrub *s, const void *p, size_t n, gw_scrub_emit_fn emit, void *ctx);

/* End of stream: emit the bytes held back.  The scrubber is reset for the
 * next stream. */
int gw_scrub_finish(struct gw_scrub *s, gw_scrub_emit_fn emit, void *ctx);

void gw_scrub_reset(struct gw_scrub *s);        /* drop anything held back */
uint64_t gw_scrub_count(const struct gw_scrub *s);      /* redactions since new */

/* Scrub every header value of h in place; returns the number of redactions
 * or -ENOMEM (h unchanged). */
long gw_scrub_headers(struct gw_scrub *s, struct gw_hdrs *h);

/* true when a response may be scanned: no Content-Encoding, or only
 * "identity".  false: the caller answers 403 GW_CRED_RESPONSE_BLOCKED when
 * the response has a body. */
bool gw_cred_response_encoding_ok(const struct gw_hdrs *h);

#endif
