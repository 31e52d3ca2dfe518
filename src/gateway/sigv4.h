/* sigv4.h - AWS Signature Version 4 (AWS4-HMAC-SHA256, header form), as
 * the gateway signs a request for an aws:// or credsd:// route (issue 5 §6;
 * docs/egress.md "Credentials", AWS SigV4).
 *
 * Pure functions over strings and a gw_hdrs list; OpenSSL for SHA-256 and
 * HMAC.  Every function returns 0 or a negative errno (-EINVAL for input it
 * refuses, -ENOMEM); on failure its outputs are untouched.
 *
 * The canonical request, per AWS:
 *   METHOD \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n
 *   SignedHeaders \n PayloadHash
 *
 * CanonicalURI.  The path is taken as it travels on the wire (already
 * percent-encoded by the client, or not).
 *   - every service but s3: remove dot segments (RFC 3986 5.2.4), collapse
 *     runs of '/', then URI-encode every byte outside the unreserved set
 *     and '/' once more - so a wire "%3A" becomes "%253A".  Relative to the
 *     unencoded path that is AWS's "encode twice" rule; relative to the
 *     test suite's literal paths ("/example space/") it is "encode once".
 *   - s3: the path is kept as is (no normalisation: "a//b" and "./" are
 *     part of object keys); its %XX escapes are decoded and the bytes
 *     encoded once, so "~" and "%7E" sign alike.
 * CanonicalQuery.  Split on '&' (empty pieces dropped) and the first '=';
 * keys and values percent-decoded ('+' read as a space, form encoding; a
 * client meaning a plus sends %2B, as the AWS SDKs do) and re-encoded with
 * the RFC 3986 unreserved set; a key without
 * '=' gets an empty value; sorted by encoded key, then encoded value.
 * CanonicalHeaders.  Every field of the list except the ones a hop may
 * rewrite (connection, keep-alive, proxy-*, te, trailer, transfer-encoding,
 * upgrade, expect, user-agent, x-amzn-trace-id): names lower-cased, values
 * trimmed with each run of spaces and tabs made one space, repeated names
 * joined with ',' in wire order, sorted by name.  host and x-amz-date must
 * be among them.
 * PayloadHash.  Hex SHA-256 of the body (gw_sigv4_payload_hash).  For a
 * body the gateway streams instead of buffering, "UNSIGNED-PAYLOAD" - which
 * only S3 accepts, and only with the same value in x-amz-content-sha256
 * (Box adds that header for s3 alone).  Every other service needs the
 * body's hash, so its body is buffered (bounded) before signing.
 * "STREAMING-UNSIGNED-PAYLOAD-TRAILER" (unsigned aws-chunked, S3) passes
 * through as well. */
#ifndef CAIRN_GW_SIGV4_H
#define CAIRN_GW_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "cred.h"

#define GW_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define GW_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define GW_SIGV4_STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define GW_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* What to sign.  Every pointer is borrowed for the call. */
struct gw_sigv4_req {
	const char *method;             /* upper case as sent ("GET") */
	const char *path;               /* wire path without the query; "" is "/" */
	const char *query;              /* after '?'; NULL or "" for none */
	const struct gw_hdrs *hdrs;     /* the fields that will be sent */
	const char *payload_hash;       /* 64 lower-case hex, or one of the two literals above */
	const char *service;            /* signing name ("bedrock", "s3") */
	const char *region;
	const char *amz_date;           /* "20150830T123600Z", equal to the x-amz-date field */
	const char *key_id;
	const char *secret_key;
};

/* The signature and what it was computed from (for logs and tests).
 * Release with gw_sigv4_out_clear; the authorization value and the
 * canonical request are wiped there. */
struct gw_sigv4_out {
	char *canonical_request;
	char *string_to_sign;
	char *signed_headers;           /* "host;x-amz-date" */
	char *authorization;            /* "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…" */
	char signature[65];             /* lower-case hex */
};

int gw_sigv4_sign(const struct gw_sigv4_req *r, struct gw_sigv4_out *out);
void gw_sigv4_out_clear(struct gw_sigv4_out *o);

/* The pieces, each malloc'd (caller frees). */
int gw_sigv4_canonical_uri(const char *service, const char *path, char **out);
int gw_sigv4_canonical_query(const char *query, char **out);

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret, date8), region), service),
 * "aws4_request"); date8 is "YYYYMMDD". */
int gw_sigv4_signing_key(const char *secret_key, const char *date8, const char *region,
			 const char *service, unsigned char key[32]);

/* Hex SHA-256 of body[0, n) into out (65 bytes, NUL-terminated). */
int gw_sigv4_payload_hash(const void *body, size_t n, char out[65]);

/* "YYYYMMDDTHHMMSSZ" of t (UTC) into out (17 bytes). */
int gw_sigv4_amz_date(time_t t, char out[17]);

/* Signing service and region from an AWS endpoint host (no port), lower
 * case, one trailing dot ignored.  Suffixes .amazonaws.com,
 * .amazonaws.com.cn and .api.aws; forms:
 *   <service>.<region>.<suffix>            bedrock-runtime.us-west-2 -> bedrock, us-west-2
 *   <service>.<suffix>                     global endpoint, us-east-1 (iam, sts, s3)
 *   <api-id>.execute-api.<region>.<suffix> execute-api
 *   [bucket.]s3.<region>, [bucket.]s3.dualstack.<region>, [bucket.]s3-<region>,
 *   bucket.s3 (us-east-1), <account>.s3-control.<region>        s3
 * Signing names differing from the endpoint prefix: bedrock-runtime,
 * bedrock-agent-runtime and bedrock-agent sign as "bedrock"; email as
 * "ses".  Anything else: -EINVAL (the gateway refuses rather than guess a
 * scope).  *service and *region are malloc'd (caller frees). */
int gw_sigv4_service_region(const char *host, char **service, char **region);

#endif
