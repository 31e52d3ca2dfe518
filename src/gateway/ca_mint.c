/* ca_mint.c - the run's CA, minted with Nettle (ca_mint.h).
 *
 * The certificate is written as DER by hand: its shape is fixed, so a
 * small writer of tag-length-value triples is all it takes.  Each
 * constructed value is opened (open), filled, and closed (close), which
 * moves its contents up to make room for the header. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <gmp.h>
#include <nettle/base64.h>
#include <nettle/bignum.h>
#include <nettle/dsa.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>

#include "ca_mint.h"

#define P256_BYTES 32

/* DER encodings of the object identifiers, without tag and length */
static const unsigned char OID_ECDSA_SHA256[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02 };
static const unsigned char OID_EC_PUBLIC_KEY[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01 };
static const unsigned char OID_PRIME256V1[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const unsigned char OID_CN[] = { 0x55, 0x04, 0x03 };
static const unsigned char OID_BASIC_CONSTRAINTS[] = { 0x55, 0x1d, 0x13 };
static const unsigned char OID_KEY_USAGE[] = { 0x55, 0x1d, 0x0f };
static const unsigned char OID_SKI[] = { 0x55, 0x1d, 0x0e };

enum {
	T_BOOLEAN = 0x01, T_INTEGER = 0x02, T_BIT_STRING = 0x03, T_OCTET_STRING = 0x04,
	T_OID = 0x06, T_UTF8 = 0x0c, T_UTC_TIME = 0x17, T_GENERALIZED_TIME = 0x18,
	T_SEQUENCE = 0x30, T_SET = 0x31, T_CTX0 = 0xa0, T_CTX1 = 0xa1, T_CTX3 = 0xa3,
};

struct der {
	unsigned char *p;
	size_t n, cap;
	bool bad;
};

static void raw(struct der *d, const void *b, size_t n)
{
	if (d->bad || n > d->cap - d->n) {
		d->bad = true;
		return;
	}
	memcpy(d->p + d->n, b, n);
	d->n += n;
}

static size_t open_(struct der *d)
{
	return d->n;
}

/* Close the value whose contents began at start: put tag and length before
 * them. */
static void close_(struct der *d, unsigned char tag, size_t start)
{
	if (d->bad)
		return;
	size_t len = d->n - start;
	unsigned char h[4];
	size_t hn = 0;
	h[hn++] = tag;
	if (len < 0x80) {
		h[hn++] = (unsigned char)len;
	} else if (len < 0x100) {
		h[hn++] = 0x81;
		h[hn++] = (unsigned char)len;
	} else {
		h[hn++] = 0x82;
		h[hn++] = (unsigned char)(len >> 8);
		h[hn++] = (unsigned char)len;
	}
	if (hn > d->cap - d->n) {
		d->bad = true;
		return;
	}
	memmove(d->p + start + hn, d->p + start, len);
	memcpy(d->p + start, h, hn);
	d->n += hn;
}

static void prim(struct der *d, unsigned char tag, const void *b, size_t n)
{
	size_t at = open_(d);
	raw(d, b, n);
	close_(d, tag, at);
}

/* An unsigned big-endian number as a DER INTEGER: no leading zero octets,
 * one 0x00 before a high bit. */
static void integer(struct der *d, const unsigned char *b, size_t n)
{
	while (n > 1 && b[0] == 0)
		b++, n--;
	size_t at = open_(d);
	if (n == 0 || b[0] & 0x80)
		raw(d, "", 1);
	raw(d, b, n);
	close_(d, T_INTEGER, at);
}

static void algorithm(struct der *d, const unsigned char *oid, size_t n)
{
	size_t at = open_(d);
	prim(d, T_OID, oid, n);
	close_(d, T_SEQUENCE, at);
}

static void name_cn(struct der *d, const char *cn)
{
	size_t seq = open_(d), set = open_(d), atv = open_(d);
	prim(d, T_OID, OID_CN, sizeof(OID_CN));
	prim(d, T_UTF8, cn, strlen(cn));
	close_(d, T_SEQUENCE, atv);
	close_(d, T_SET, set);
	close_(d, T_SEQUENCE, seq);
}

/* RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050. */
static void when(struct der *d, time_t t)
{
	struct tm tm;
	char s[64];
	if (gmtime_r(&t, &tm) == NULL) {
		d->bad = true;
		return;
	}
	int year = tm.tm_year + 1900;
	if (year >= 1950 && year < 2050) {
		snprintf(s, sizeof(s), "%02d%02d%02d%02d%02d%02dZ", year % 100, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		prim(d, T_UTC_TIME, s, 13);
	} else {
		snprintf(s, sizeof(s), "%04d%02d%02d%02d%02d%02dZ", year % 10000, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		prim(d, T_GENERALIZED_TIME, s, 15);
	}
}

/* One extension, critical or not, its value already DER in v[0, n). */
static void extension(struct der *d, const unsigned char *oid, size_t oid_n, bool critical,
		      const unsigned char *v, size_t n)
{
	static const unsigned char yes = 0xff;
	size_t at = open_(d);
	prim(d, T_OID, oid, oid_n);
	if (critical)
		prim(d, T_BOOLEAN, &yes, 1);
	prim(d, T_OCTET_STRING, v, n);
	close_(d, T_SEQUENCE, at);
}

/* Randomness for Nettle, from the kernel; a failure is remembered (Nettle's
 * callback returns nothing) and fails the mint. */
struct rnd {
	bool failed;
};

static void rnd_fill(void *ctx, size_t n, uint8_t *dst)
{
	struct rnd *r = ctx;
	for (size_t got = 0; got < n;) {
		ssize_t k = getrandom(dst + got, n - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->failed = true;
			memset(dst + got, 0, n - got);
			return;
		}
		got += (size_t)k;
	}
}

static void mpz_fixed(unsigned char *out, size_t n, const mpz_t x)
{
	size_t len = nettle_mpz_sizeinbase_256_u(x);
	memset(out, 0, n);
	if (len <= n)
		nettle_mpz_get_str_256(len, out + n - len, x);
}

static int fail(char *err, size_t errlen, const char *what)
{
	if (errlen)
		snprintf(err, errlen, "the gateway's CA: %s", what);
	return -EIO;
}

int gw_ca_mint(struct gw_ca_minted *m, time_t now, char *err, size_t errlen)
{
	const struct ecc_curve *curve = nettle_get_secp_256r1();
	struct ecc_point pub;
	struct ecc_scalar key;
	struct dsa_signature sig;
	struct rnd rnd = { false };
	mpz_t x, y, z;
	unsigned char point[1 + 2 * P256_BYTES], priv[P256_BYTES], serial[16];
	unsigned char ski[SHA1_DIGEST_SIZE], digest[SHA256_DIGEST_SIZE];
	unsigned char tbs[GW_CA_CERT_DER_MAX];
	int rc = 0;

	memset(m, 0, sizeof(*m));
	ecc_point_init(&pub, curve);
	ecc_scalar_init(&key, curve);
	dsa_signature_init(&sig);
	mpz_inits(x, y, z, NULL);
	ecdsa_generate_keypair(&pub, &key, &rnd, rnd_fill);
	ecc_point_get(&pub, x, y);
	ecc_scalar_get(&key, z);
	point[0] = 0x04;                        /* uncompressed */
	mpz_fixed(point + 1, P256_BYTES, x);
	mpz_fixed(point + 1 + P256_BYTES, P256_BYTES, y);
	mpz_fixed(priv, P256_BYTES, z);
	do
		rnd_fill(&rnd, sizeof(serial), serial);
	while (!rnd.failed && memcmp(serial, (unsigned char[16]){ 0 }, 16) == 0);
	if (rnd.failed) {
		rc = fail(err, errlen, "no randomness for its key");
		goto out;
	}
	struct sha1_ctx h1;
	sha1_init(&h1);
	sha1_update(&h1, sizeof(point), point);
	sha1_digest(&h1, sizeof(ski), ski);

	/* tbsCertificate */
	struct der t = { .p = tbs, .cap = sizeof(tbs) };
	size_t tbs_at = open_(&t);
	size_t v = open_(&t);
	integer(&t, (const unsigned char[]){ 2 }, 1);           /* v3 */
	close_(&t, T_CTX0, v);
	integer(&t, serial, sizeof(serial));
	algorithm(&t, OID_ECDSA_SHA256, sizeof(OID_ECDSA_SHA256));
	name_cn(&t, GW_CA_CN);
	size_t validity = open_(&t);
	when(&t, now - GW_CA_BACKDATE);
	when(&t, now + (time_t)GW_CA_DAYS * 86400);
	close_(&t, T_SEQUENCE, validity);
	name_cn(&t, GW_CA_CN);
	size_t spki = open_(&t), alg = open_(&t);
	prim(&t, T_OID, OID_EC_PUBLIC_KEY, sizeof(OID_EC_PUBLIC_KEY));
	prim(&t, T_OID, OID_PRIME256V1, sizeof(OID_PRIME256V1));
	close_(&t, T_SEQUENCE, alg);
	size_t bits = open_(&t);
	raw(&t, "", 1);                         /* no unused bits */
	raw(&t, point, sizeof(point));
	close_(&t, T_BIT_STRING, bits);
	close_(&t, T_SEQUENCE, spki);
	size_t exts_tag = open_(&t), exts = open_(&t);
	static const unsigned char ca_true[] = { 0x30, 0x03, 0x01, 0x01, 0xff };
	/* digitalSignature (bit 0), keyCertSign (5), cRLSign (6): 1000 0110, one unused bit */
	static const unsigned char usage[] = { 0x03, 0x02, 0x01, 0x86 };
	unsigned char ski_v[2 + SHA1_DIGEST_SIZE] = { T_OCTET_STRING, SHA1_DIGEST_SIZE };
	memcpy(ski_v + 2, ski, sizeof(ski));
	extension(&t, OID_BASIC_CONSTRAINTS, sizeof(OID_BASIC_CONSTRAINTS), true, ca_true,
		  sizeof(ca_true));
	extension(&t, OID_KEY_USAGE, sizeof(OID_KEY_USAGE), true, usage, sizeof(usage));
	extension(&t, OID_SKI, sizeof(OID_SKI), false, ski_v, sizeof(ski_v));
	close_(&t, T_SEQUENCE, exts);
	close_(&t, T_CTX3, exts_tag);
	close_(&t, T_SEQUENCE, tbs_at);
	if (t.bad) {
		rc = fail(err, errlen, "its certificate does not fit");
		goto out;
	}

	/* signed with its own key */
	struct sha256_ctx h2;
	sha256_init(&h2);
	sha256_update(&h2, t.n, tbs);
	sha256_digest(&h2, sizeof(digest), digest);
	ecdsa_sign(&key, &rnd, rnd_fill, sizeof(digest), digest, &sig);
	if (rnd.failed) {
		rc = fail(err, errlen, "no randomness for its signature");
		goto out;
	}
	unsigned char r[P256_BYTES], s[P256_BYTES];
	mpz_fixed(r, sizeof(r), sig.r);
	mpz_fixed(s, sizeof(s), sig.s);

	struct der c = { .p = m->cert, .cap = sizeof(m->cert) };
	size_t cert_at = open_(&c);
	raw(&c, tbs, t.n);
	algorithm(&c, OID_ECDSA_SHA256, sizeof(OID_ECDSA_SHA256));
	size_t sv = open_(&c);
	raw(&c, "", 1);
	size_t rs = open_(&c);
	integer(&c, r, sizeof(r));
	integer(&c, s, sizeof(s));
	close_(&c, T_SEQUENCE, rs);
	close_(&c, T_BIT_STRING, sv);
	close_(&c, T_SEQUENCE, cert_at);

	/* the key, as RFC 5915 writes it */
	struct der k = { .p = m->key, .cap = sizeof(m->key) };
	size_t key_at = open_(&k);
	integer(&k, (const unsigned char[]){ 1 }, 1);
	prim(&k, T_OCTET_STRING, priv, sizeof(priv));
	size_t params = open_(&k);
	prim(&k, T_OID, OID_PRIME256V1, sizeof(OID_PRIME256V1));
	close_(&k, T_CTX0, params);
	size_t pk = open_(&k), pkb = open_(&k);
	raw(&k, "", 1);
	raw(&k, point, sizeof(point));
	close_(&k, T_BIT_STRING, pkb);
	close_(&k, T_CTX1, pk);
	close_(&k, T_SEQUENCE, key_at);
	if (c.bad || k.bad) {
		rc = fail(err, errlen, "its certificate does not fit");
		goto out;
	}
	m->cert_len = c.n;
	m->key_len = k.n;

	/* PEM: base64 in lines of 64, as OpenSSL writes it */
	static const char head[] = "-----BEGIN CERTIFICATE-----\n";
	static const char tail[] = "-----END CERTIFICATE-----\n";
	char b64[BASE64_ENCODE_RAW_LENGTH(GW_CA_CERT_DER_MAX)];
	size_t bn = BASE64_ENCODE_RAW_LENGTH(m->cert_len), pn = 0;
	base64_encode_raw(b64, m->cert_len, m->cert);
	if (sizeof(head) - 1 + bn + bn / 64 + 1 + sizeof(tail) > sizeof(m->pem)) {
		rc = fail(err, errlen, "its certificate does not fit");
		goto out;
	}
	memcpy(m->pem, head, sizeof(head) - 1);
	pn = sizeof(head) - 1;
	for (size_t i = 0; i < bn; i += 64) {
		size_t line = bn - i < 64 ? bn - i : 64;
		memcpy(m->pem + pn, b64 + i, line);
		pn += line;
		m->pem[pn++] = '\n';
	}
	memcpy(m->pem + pn, tail, sizeof(tail));
	m->pem_len = pn + sizeof(tail) - 1;
out:
	/* the private scalar: our copies, and Nettle's limbs before they are freed */
	explicit_bzero(priv, sizeof(priv));
	explicit_bzero(tbs, sizeof(tbs));
	explicit_bzero(key.p, (size_t)ecc_size(curve) * sizeof(mp_limb_t));
	explicit_bzero(z->_mp_d, (size_t)z->_mp_alloc * sizeof(mp_limb_t));
	mpz_clears(x, y, z, NULL);
	dsa_signature_clear(&sig);
	ecc_scalar_clear(&key);
	ecc_point_clear(&pub);
	if (rc != 0)
		gw_ca_minted_wipe(m);
	return rc;
}
