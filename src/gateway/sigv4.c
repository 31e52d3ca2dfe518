/* sigv4.c - AWS Signature Version 4 over a gw_hdrs list (contract: sigv4.h).
 *
 * Divisions: a small string builder; URI encoding; the canonical URI, query
 * and headers; the key derivation and signature; the host -> scope map. */
#include "sigv4.h"
#include "secbuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

/* ---- string builder ------------------------------------------------------- */

static void hex_encode(const unsigned char *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* ---- URI encoding --------------------------------------------------------- */

/* ---- canonical URI ----------------------------------------------------------- */

struct seg {
	const char *p;
	size_t n;
};

/* Non-S3: dot segments removed, '/' runs collapsed, each segment encoded. */
static int canonical_uri_normalized(const char *path, char **out)
{
	size_t len = strlen(path), nseg = 1, top = 0;
	struct seg *st;
	struct gw_sb b = { 0 };
	bool trailing = false;

	for (size_t i = 0; i < len; i++)
		nseg += path[i] == '/';
	if ((st = calloc(nseg, sizeof *st)) == NULL)
		return -ENOMEM;
	for (const char *s = path; s < path + len;) {
		const char *e = memchr(s, '/', (size_t)(path + len - s));
		size_t n = e ? (size_t)(e - s) : (size_t)(path + len - s);

		/* RFC 3986 5.2.4: a path ending in "/", "/." or "/.." keeps a
		 * trailing slash; a segment after the last '/' does not. */
		trailing = e != NULL || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
		if (n == 0 || (n == 1 && s[0] == '.')) {
			/* empty (a '/' run) or ".": nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (top > 0)
				top--;
		} else {
			st[top].p = s, st[top].n = n;
			top++;
		}
		s += n + (e != NULL);
	}
	gw_sb_addc(&b, '/');
	for (size_t i = 0; i < top; i++) {
		if (i > 0)
			gw_sb_addc(&b, '/');
		gw_sb_pct_encode(&b, st[i].p, st[i].n, false);
	}
	if (trailing && top > 0)
		gw_sb_addc(&b, '/');
	free(st);
	return (*out = gw_sb_take(&b)) ? 0 : -ENOMEM;
}

/* S3: the key as sent, its escapes decoded and the bytes encoded once. */
static int canonical_uri_s3(const char *path, char **out)
{
	struct gw_sb dec = { 0 }, b = { 0 };

	gw_sb_pct_decode(&dec, path, strlen(path), false);
	if (dec.oom) {
		gw_sb_free(&dec);
		return -ENOMEM;
	}
	gw_sb_pct_encode(&b, dec.p ? dec.p : "", dec.len, true);
	gw_sb_free(&dec);
	return (*out = gw_sb_take(&b)) ? 0 : -ENOMEM;
}

int gw_sigv4_canonical_uri(const char *service, const char *path, char **out)
{
	if (service == NULL || path == NULL)
		return -EINVAL;
	if (path[0] == '\0')
		path = "/";
	if (path[0] != '/' || strpbrk(path, "?#") != NULL)
		return -EINVAL;
	return strcmp(service, "s3") == 0 ? canonical_uri_s3(path, out)
					  : canonical_uri_normalized(path, out);
}

/* ---- canonical query ---------------------------------------------------------- */

struct qparam {
	char *k, *v;
};

static int qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = strcmp(x->k, y->k);

	return c != 0 ? c : strcmp(x->v, y->v);
}

/* One key or value: decoded, then encoded with nothing but the unreserved set kept. */
static char *query_part(const char *s, size_t n)
{
	struct gw_sb dec = { 0 }, enc = { 0 };

	gw_sb_pct_decode(&dec, s, n, true);
	if (dec.oom) {
		gw_sb_free(&dec);
		return NULL;
	}
	gw_sb_pct_encode(&enc, dec.p ? dec.p : "", dec.len, false);
	gw_sb_free(&dec);
	return gw_sb_take(&enc);
}

int gw_sigv4_canonical_query(const char *query, char **out)
{
	size_t len, cap = 1, n = 0;
	struct qparam *v;
	struct gw_sb b = { 0 };
	int rc = -ENOMEM;

	if (query == NULL)
		query = "";
	len = strlen(query);
	if (memchr(query, '#', len) != NULL)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		cap += query[i] == '&';
	if ((v = calloc(cap, sizeof *v)) == NULL)
		return -ENOMEM;
	for (const char *s = query; s < query + len;) {
		const char *e = memchr(s, '&', (size_t)(query + len - s));
		size_t pn = e ? (size_t)(e - s) : (size_t)(query + len - s);
		const char *eq = memchr(s, '=', pn);

		if (pn > 0) {
			size_t kn = eq ? (size_t)(eq - s) : pn;

			v[n].k = query_part(s, kn);
			v[n].v = eq ? query_part(eq + 1, pn - kn - 1) : strdup("");
			n++;
			if (v[n - 1].k == NULL || v[n - 1].v == NULL)
				goto out;
		}
		s += pn + (e != NULL);
	}
	qsort(v, n, sizeof *v, qparam_cmp);
	gw_sb_add(&b, "");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			gw_sb_addc(&b, '&');
		gw_sb_add(&b, v[i].k);
		gw_sb_addc(&b, '=');
		gw_sb_add(&b, v[i].v);
	}
	if ((*out = gw_sb_take(&b)) != NULL)
		rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		gw_cred_wipe_free(v[i].k);
		gw_cred_wipe_free(v[i].v);
	}
	free(v);
	return rc;
}

/* ---- canonical headers ------------------------------------------------------- */

/* Fields a hop may add, drop or rewrite between us and AWS: signing them
 * would make the signature depend on the path the bytes take. */
static const char *const unsigned_headers[] = {
	"connection", "keep-alive", "proxy-connection", "proxy-authorization",
	"proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade",
	"expect", "user-agent", "x-amzn-trace-id", NULL,
};

static bool header_signed(const char *name)
{
	for (size_t i = 0; unsigned_headers[i] != NULL; i++)
		if (strcasecmp(name, unsigned_headers[i]) == 0)
			return false;
	return true;
}

struct chdr {
	char *name;             /* lower case */
	const char *value;      /* borrowed from the list */
	size_t vlen;
	size_t idx;             /* wire order, for a stable sort */
};

static int chdr_cmp(const void *a, const void *b)
{
	const struct chdr *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* value trimmed, each run of SP/HTAB one space. */
static void sb_header_value(struct gw_sb *b, const char *v, size_t n)
{
	size_t i = 0, end = n;
	bool space = false;

	while (i < end && (v[i] == ' ' || v[i] == '\t'))
		i++;
	while (end > i && (v[end - 1] == ' ' || v[end - 1] == '\t'))
		end--;
	for (; i < end; i++) {
		if (v[i] == ' ' || v[i] == '\t') {
			space = true;
			continue;
		}
		if (space)
			gw_sb_addc(b, ' ');
		space = false;
		gw_sb_addc(b, v[i]);
	}
}

static bool token_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
}

/* canonical headers into *ch (each line ending '\n'), signed names into *sh. */
static int canonical_headers(const struct gw_hdrs *h, const char *amz_date, struct gw_sb *ch,
			     struct gw_sb *sh)
{
	struct chdr *v;
	size_t n = 0;
	bool have_host = false, have_date = false;
	int rc = -EINVAL;

	if (h->n == 0 || (v = calloc(h->n, sizeof *v)) == NULL)
		return h->n == 0 ? -EINVAL : -ENOMEM;
	for (size_t i = 0; i < h->n; i++) {
		const struct gw_hdr *f = &h->v[i];

		if (f->nlen == 0)
			goto out;
		for (size_t j = 0; j < f->nlen; j++)
			if (!token_char((unsigned char)f->name[j]))
				goto out;
		if (!header_signed(f->name))
			continue;
		if ((v[n].name = strdup(f->name)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		for (char *c = v[n].name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		v[n].value = f->value, v[n].vlen = f->vlen, v[n].idx = i;
		if (strcmp(v[n].name, "host") == 0)
			have_host = true;
		if (strcmp(v[n].name, "x-amz-date") == 0) {
			struct gw_sb d = { 0 };

			sb_header_value(&d, f->value, f->vlen);
			if (d.oom) {
				n++;
				rc = -ENOMEM;
				goto out;
			}
			/* Two dates, or one that is not the date signed, would
			 * make AWS compute a different string to sign. */
			if (have_date || d.p == NULL || strcmp(d.p, amz_date) != 0) {
				gw_sb_free(&d);
				n++;
				goto out;
			}
			gw_sb_free(&d);
			have_date = true;
		}
		n++;
	}
	if (!have_host || !have_date)
		goto out;
	qsort(v, n, sizeof *v, chdr_cmp);
	for (size_t i = 0; i < n; i++) {
		bool first = i == 0 || strcmp(v[i - 1].name, v[i].name) != 0;
		bool last = i + 1 == n || strcmp(v[i + 1].name, v[i].name) != 0;

		if (first) {
			if (sh->len > 0)
				gw_sb_addc(sh, ';');
			gw_sb_add(sh, v[i].name);
			gw_sb_add(ch, v[i].name);
			gw_sb_addc(ch, ':');
		} else {
			gw_sb_addc(ch, ',');
		}
		sb_header_value(ch, v[i].value, v[i].vlen);
		if (last)
			gw_sb_addc(ch, '\n');
	}
	rc = ch->oom || sh->oom ? -ENOMEM : 0;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return rc;
}

/* ---- keys and the signature ------------------------------------------------- */

static bool scope_part(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

static bool amz_date_ok(const char *d)
{
	if (d == NULL || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
		return false;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (d[i] < '0' || d[i] > '9'))
			return false;
	return true;
}

static bool hmac256(const void *key, size_t klen, const void *msg, size_t mlen,
		    unsigned char out[32])
{
	unsigned int olen = 0;

	return HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &olen) != NULL && olen == 32;
}

int gw_sigv4_signing_key(const char *secret_key, const char *date8, const char *region,
			 const char *service, unsigned char key[32])
{
	unsigned char k[32];
	size_t sl;
	char *seed;
	bool ok;

	if (secret_key == NULL || date8 == NULL || strlen(date8) != 8 || !scope_part(region) ||
	    !scope_part(service))
		return -EINVAL;
	sl = strlen(secret_key);
	if (sl == 0 || sl > 1024)
		return -EINVAL;
	if ((seed = malloc(sl + 5)) == NULL)
		return -ENOMEM;
	memcpy(seed, "AWS4", 4);
	memcpy(seed + 4, secret_key, sl + 1);
	ok = hmac256(seed, sl + 4, date8, 8, k) &&
	     hmac256(k, 32, region, strlen(region), k) &&
	     hmac256(k, 32, service, strlen(service), k) &&
	     hmac256(k, 32, "aws4_request", 12, k);
	OPENSSL_cleanse(seed, sl + 5);
	free(seed);
	if (ok)
		memcpy(key, k, 32);
	OPENSSL_cleanse(k, sizeof k);
	return ok ? 0 : -EIO;
}

int gw_sigv4_payload_hash(const void *body, size_t n, char out[65])
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	unsigned int dl = 0;

	if (body == NULL && n > 0)
		return -EINVAL;
	if (!EVP_Digest(n ? body : "", n, d, &dl, EVP_sha256(), NULL) || dl != sizeof d)
		return -EIO;
	hex_encode(d, sizeof d, out);
	return 0;
}

int gw_sigv4_amz_date(time_t t, char out[17])
{
	struct tm tm;
	char b[64];

	if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 1970 || tm.tm_year + 1900 > 9999)
		return -EINVAL;
	if (snprintf(b, sizeof b, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec) != 16)
		return -EINVAL;
	memcpy(out, b, 17);
	return 0;
}

static bool payload_hash_ok(const char *h)
{
	if (h == NULL)
		return false;
	if (strcmp(h, GW_SIGV4_UNSIGNED_PAYLOAD) == 0 ||
	    strcmp(h, GW_SIGV4_STREAMING_UNSIGNED_TRAILER) == 0)
		return true;
	if (strlen(h) != 64)
		return false;
	for (; *h; h++)
		if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
			return false;
	return true;
}

static bool key_id_ok(const char *k)
{
	size_t n;

	if (k == NULL || (n = strlen(k)) == 0 || n > 128)
		return false;
	for (; *k; k++)
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9')))
			return false;
	return true;
}

static bool method_ok(const char *m)
{
	if (m == NULL || *m == '\0' || strlen(m) > 32)
		return false;
	for (; *m; m++)
		if (!token_char((unsigned char)*m))
			return false;
	return true;
}

void gw_sigv4_out_clear(struct gw_sigv4_out *o)
{
	if (o == NULL)
		return;
	gw_cred_wipe_free(o->canonical_request);
	free(o->string_to_sign);
	free(o->signed_headers);
	gw_cred_wipe_free(o->authorization);
	memset(o, 0, sizeof *o);
}

int gw_sigv4_sign(const struct gw_sigv4_req *r, struct gw_sigv4_out *out)
{
	struct gw_sb creq = { 0 }, ch = { 0 }, sh = { 0 }, sts = { 0 }, auth = { 0 };
	char *uri = NULL, *query = NULL, date8[9], creq_hash[65], sig[65];
	unsigned char key[32], mac[32];
	struct gw_sigv4_out o = { 0 };
	int rc;

	if (r == NULL || out == NULL || r->hdrs == NULL || !method_ok(r->method) ||
	    !payload_hash_ok(r->payload_hash) || !scope_part(r->service) ||
	    !scope_part(r->region) || !amz_date_ok(r->amz_date) || !key_id_ok(r->key_id) ||
	    r->secret_key == NULL)
		return -EINVAL;
	memcpy(date8, r->amz_date, 8);
	date8[8] = '\0';
	if ((rc = gw_sigv4_canonical_uri(r->service, r->path ? r->path : "", &uri)) != 0 ||
	    (rc = gw_sigv4_canonical_query(r->query, &query)) != 0 ||
	    (rc = canonical_headers(r->hdrs, r->amz_date, &ch, &sh)) != 0)
		goto out;

	gw_sb_add(&creq, r->method);
	gw_sb_addc(&creq, '\n');
	gw_sb_add(&creq, uri);
	gw_sb_addc(&creq, '\n');
	gw_sb_add(&creq, query);
	gw_sb_addc(&creq, '\n');
	gw_sb_addn(&creq, ch.p, ch.len);
	gw_sb_addc(&creq, '\n');
	gw_sb_addn(&creq, sh.p, sh.len);
	gw_sb_addc(&creq, '\n');
	gw_sb_add(&creq, r->payload_hash);
	rc = -ENOMEM;
	if (creq.oom)
		goto out;
	if ((rc = gw_sigv4_payload_hash(creq.p, creq.len, creq_hash)) != 0)
		goto out;

	gw_sb_add(&sts, GW_SIGV4_ALGORITHM "\n");
	gw_sb_add(&sts, r->amz_date);
	gw_sb_addc(&sts, '\n');
	gw_sb_add(&sts, date8);
	gw_sb_addc(&sts, '/');
	gw_sb_add(&sts, r->region);
	gw_sb_addc(&sts, '/');
	gw_sb_add(&sts, r->service);
	gw_sb_add(&sts, "/aws4_request\n");
	gw_sb_add(&sts, creq_hash);
	rc = -ENOMEM;
	if (sts.oom)
		goto out;

	if ((rc = gw_sigv4_signing_key(r->secret_key, date8, r->region, r->service, key)) != 0)
		goto out;
	if (!hmac256(key, sizeof key, sts.p, sts.len, mac)) {
		rc = -EIO;
		goto out;
	}
	hex_encode(mac, sizeof mac, sig);

	gw_sb_add(&auth, GW_SIGV4_ALGORITHM " Credential=");
	gw_sb_add(&auth, r->key_id);
	gw_sb_addc(&auth, '/');
	gw_sb_add(&auth, date8);
	gw_sb_addc(&auth, '/');
	gw_sb_add(&auth, r->region);
	gw_sb_addc(&auth, '/');
	gw_sb_add(&auth, r->service);
	gw_sb_add(&auth, "/aws4_request, SignedHeaders=");
	gw_sb_addn(&auth, sh.p, sh.len);
	gw_sb_add(&auth, ", Signature=");
	gw_sb_add(&auth, sig);

	rc = -ENOMEM;
	o.canonical_request = gw_sb_take(&creq);
	o.string_to_sign = gw_sb_take(&sts);
	o.signed_headers = gw_sb_take(&sh);
	o.authorization = gw_sb_take(&auth);
	memcpy(o.signature, sig, sizeof sig);
	if (o.canonical_request == NULL || o.string_to_sign == NULL || o.signed_headers == NULL ||
	    o.authorization == NULL) {
		gw_sigv4_out_clear(&o);
		goto out;
	}
	*out = o;
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof key);
	OPENSSL_cleanse(mac, sizeof mac);
	gw_sb_free(&creq);
	gw_sb_free(&ch);
	gw_sb_free(&sh);
	gw_sb_free(&sts);
	gw_sb_free(&auth);
	free(uri);
	gw_cred_wipe_free(query);
	return rc;
}

/* ---- host -> service and region --------------------------------------------- */

/* "us-east-1", "us-gov-west-1", "cn-north-1": letters, then hyphenated
 * letter groups, then a number. */
static bool region_ok(const char *s, size_t n)
{
	size_t parts = 0, i = 0;

	while (i < n) {
		size_t st = i;
		bool digits = true, letters = true;

		while (i < n && s[i] != '-') {
			if (s[i] >= '0' && s[i] <= '9')
				letters = false;
			else if (s[i] >= 'a' && s[i] <= 'z')
				digits = false;
			else
				return false;
			i++;
		}
		if (i == st)
			return false;
		parts++;
		if (i == n) {
			if (!digits || parts < 3)
				return false;
		} else {
			if (!letters)
				return false;
			i++;
			if (i == n)
				return false;
		}
	}
	return parts >= 3;
}

static bool label_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static bool label_is(const struct seg *l, const char *s)
{
	return l->n == strlen(s) && memcmp(l->p, s, l->n) == 0;
}

static const char *signing_name(const struct seg *l)
{
	/* Endpoint prefixes whose SigV4 signing name differs (the SDKs'
	 * signingName); the rest sign under their own prefix. */
	static const char *const map[][2] = {
		{ "bedrock-runtime", "bedrock" },
		{ "bedrock-agent-runtime", "bedrock" },
		{ "bedrock-agent", "bedrock" },
		{ "email", "ses" },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (label_is(l, map[i][0]))
			return map[i][1];
	return NULL;
}

#define MAX_LABELS 64

int gw_sigv4_service_region(const char *host, char **service, char **region)
{
	static const char *const suffixes[] = { ".amazonaws.com", ".amazonaws.com.cn", ".api.aws" };
	char h[256];
	struct seg l[MAX_LABELS], legacy;
	size_t hl, nl = 0, rest = 0;
	const struct seg *svc = NULL, *reg = NULL;
	const char *fixed_svc = NULL, *fixed_reg = NULL;
	char *s, *r;

	if (host == NULL || service == NULL || region == NULL)
		return -EINVAL;
	hl = strlen(host);
	if (hl > 0 && host[hl - 1] == '.')
		hl--;
	if (hl == 0 || hl >= sizeof h)
		return -EINVAL;
	for (size_t i = 0; i < hl; i++)
		h[i] = (char)(host[i] >= 'A' && host[i] <= 'Z' ? host[i] - 'A' + 'a' : host[i]);
	h[hl] = '\0';
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		size_t sl = strlen(suffixes[i]);

		if (hl > sl && strcmp(h + hl - sl, suffixes[i]) == 0) {
			rest = hl - sl;
			break;
		}
	}
	if (rest == 0)
		return -EINVAL;
	for (size_t i = 0; i <= rest;) {
		const char *e = memchr(h + i, '.', rest - i);
		size_t n = e ? (size_t)(e - (h + i)) : rest - i;

		if (nl == MAX_LABELS || !label_ok(h + i, n))
			return -EINVAL;
		l[nl].p = h + i, l[nl].n = n;
		nl++;
		i += n + 1;
	}

	/* S3's bucket forms first: a bucket name may look like anything. */
	if (label_is(&l[nl - 1], "s3")) {
		fixed_svc = "s3", fixed_reg = "us-east-1";          /* [bucket.]s3.amazonaws.com */
	} else if (l[nl - 1].n > 3 && memcmp(l[nl - 1].p, "s3-", 3) == 0) {
		const struct seg *t = &l[nl - 1];

		fixed_svc = "s3";                                   /* [bucket.]s3-<region> (legacy) */
		if (label_is(t, "s3-external-1"))
			fixed_reg = "us-east-1";
		else if (region_ok(t->p + 3, t->n - 3))
			legacy.p = t->p + 3, legacy.n = t->n - 3, reg = &legacy;
		else
			return -EINVAL;
	} else if (nl >= 2 && label_is(&l[nl - 2], "s3") && region_ok(l[nl - 1].p, l[nl - 1].n)) {
		fixed_svc = "s3", reg = &l[nl - 1];                 /* [bucket.]s3.<region> */
	} else if (nl >= 3 && label_is(&l[nl - 3], "s3") && label_is(&l[nl - 2], "dualstack") &&
		   region_ok(l[nl - 1].p, l[nl - 1].n)) {
		fixed_svc = "s3", reg = &l[nl - 1];                 /* [bucket.]s3.dualstack.<region> */
	} else if (nl == 3 && label_is(&l[1], "s3-control") && region_ok(l[2].p, l[2].n)) {
		fixed_svc = "s3", reg = &l[2];                      /* <account>.s3-control.<region> */
	} else if (nl == 3 && label_is(&l[1], "execute-api") && region_ok(l[2].p, l[2].n)) {
		fixed_svc = "execute-api", reg = &l[2];
	} else if (nl == 2 && region_ok(l[1].p, l[1].n)) {
		svc = &l[0], reg = &l[1];                           /* <service>.<region> */
	} else if (nl == 1 && !region_ok(l[0].p, l[0].n)) {
		svc = &l[0], fixed_reg = "us-east-1";               /* global <service> */
	} else {
		return -EINVAL;
	}
	if (svc != NULL && (fixed_svc = signing_name(svc)) == NULL)
		s = strndup(svc->p, svc->n);
	else
		s = strdup(fixed_svc);
	r = reg != NULL ? strndup(reg->p, reg->n) : strdup(fixed_reg);
	if (s == NULL || r == NULL) {
		free(s);
		free(r);
		return -ENOMEM;
	}
	*service = s, *region = r;
	return 0;
}
