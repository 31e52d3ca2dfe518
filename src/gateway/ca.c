/* ca.c - the per-run CA, leaf minting and the gateway's two TLS contexts.
 *
 * Divisions: errors; host names; certificates (serial, validity, extensions);
 * the CA; the PEM file; leaves and their cache; the workload-side server
 * context; the upstream client context.
 *
 * Lifetimes.  A gw_ca and a gw_leaf are reference-counted with atomics.  The
 * cache holds one reference per leaf; a caller of gw_ca_leaf gets its own, so
 * an eviction never frees a leaf in use.  Installing a leaf on an SSL takes
 * OpenSSL's own references on the certificate, key and chain, after which the
 * leaf reference is dropped.  A server SSL_CTX holds a reference to its CA in
 * its ex_data, dropped by OpenSSL when the context is freed, so the servername
 * callback's argument cannot dangle. */
/* For EC_KEY only: see p256_key(). */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "cert_file.h"

#define CA_DAYS      GW_CA_DAYS
#define LEAF_DAYS    7
#define BACKDATE     GW_CA_BACKDATE     /* notBefore an hour back: clock skew */
#define REMINT_LEFT  86400              /* re-mint a cached leaf with less left */
#define CN_MAX       64                 /* ub-common-name (RFC 5280) */

/* --- errors --------------------------------------------------------------- */

static void vfail(char *err, size_t errlen, bool with_ossl, const char *fmt, va_list ap)
{
	unsigned long e = with_ossl ? ERR_peek_error() : 0;
	size_t used;

	if (err != NULL && errlen > 0) {
		vsnprintf(err, errlen, fmt, ap);
		used = strlen(err);
		if (e != 0 && used + 3 < errlen) {
			snprintf(err + used, errlen - used, ": ");
			ERR_error_string_n(e, err + used + 2, errlen - used - 2);
		}
	}
	/* The queue is per thread and SSL_get_error() reads it: leave it clean. */
	ERR_clear_error();
}

__attribute__((format(printf, 4, 5)))
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, errlen, false, fmt, ap);
	va_end(ap);
	return code;
}

/* The same, with OpenSSL's first queued reason appended. */
__attribute__((format(printf, 4, 5)))
static int ossl_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, errlen, true, fmt, ap);
	va_end(ap);
	return code;
}

/* --- host names ----------------------------------------------------------- */

#define SHOWN_MAX 80

/* A refused host comes from a peer (CONNECT line, SNI): quote at most 64
 * bytes of it in a message, anything unprintable as '?'. */
static const char *shown(const char *host, char buf[SHOWN_MAX])
{
	size_t i;

	if (host == NULL)
		return "(null)";
	for (i = 0; host[i] != '\0' && i < 64; i++)
		buf[i] = host[i] > 0x20 && host[i] < 0x7f && host[i] != '"' ? host[i] : '?';
	if (host[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

int gw_host_normalize(const char *host, char out[GW_HOST_MAX + 1])
{
	struct in6_addr a6;
	struct in_addr a4;
	size_t len, label = 0, i;
	bool digits_only = true;

	if (host == NULL)
		return -EINVAL;
	len = strnlen(host, GW_HOST_MAX + 1);
	if (len == 0 || len > GW_HOST_MAX)
		return -EINVAL;
	/* glibc's inet_pton takes only the dotted quad (no "127.1", no octal,
	 * no leading zeros), so every accepted literal has one text form. */
	if (inet_pton(AF_INET, host, &a4) == 1)
		return inet_ntop(AF_INET, &a4, out, GW_HOST_MAX + 1) ? 1 : -EINVAL;
	if (memchr(host, ':', len) != NULL) {
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return -EINVAL;
		return inet_ntop(AF_INET6, &a6, out, GW_HOST_MAX + 1) ? 1 : -EINVAL;
	}
	for (i = 0; i < len; i++) {
		char c = host[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return -EINVAL;         /* leading dot or ".." */
			label = 0;
			digits_only = true;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
			if (++label > 63)
				return -EINVAL;
			if (!(c >= '0' && c <= '9'))
				digits_only = false;
		} else {
			return -EINVAL;
		}
		out[i] = c;
	}
	/* No trailing dot (SNI forbids it).  An all-digit last label is no DNS
	 * name but an IPv4 form inet_pton refused ("127.1", "1.2.3.4.5"): a
	 * DNS SAN for it would never match what the client dials. */
	if (label == 0 || digits_only)
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

/* --- certificates --------------------------------------------------------- */

/* 128 random bits, a positive INTEGER of at most 17 octets (RFC 5280: 20). */
static int set_random_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn = NULL;
	int ok = 0;

	do {
		BN_free(bn);
		if (RAND_bytes(b, sizeof b) != 1)
			return 0;
		bn = BN_bin2bn(b, sizeof b, NULL);
		if (bn == NULL)
			return 0;
	} while (BN_is_zero(bn));
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok;
}

static int set_validity(X509 *x, time_t from, time_t to)
{
	return ASN1_TIME_set(X509_getm_notBefore(x), from) != NULL &&
	       ASN1_TIME_set(X509_getm_notAfter(x), to) != NULL;
}

static int add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, v3, nid, value);
	int ok = e != NULL && X509_add_ext(x, e, -1) == 1;

	X509_EXTENSION_free(e);
	return ok;
}

/* SAN with the one name, built as a structure: no text config to escape. */
static int add_san(X509 *x, const char *host, bool is_ip, bool critical)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_OCTET_STRING *ip = NULL;
	ASN1_IA5STRING *dns = NULL;
	int ok = 0;

	if (gens == NULL || gn == NULL)
		goto out;
	if (is_ip) {
		if ((ip = a2i_IPADDRESS(host)) == NULL)
			goto out;
		GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
	} else {
		if ((dns = ASN1_IA5STRING_new()) == NULL ||
		    ASN1_STRING_set(dns, host, (int)strlen(host)) != 1) {
			ASN1_IA5STRING_free(dns);
			goto out;
		}
		GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
	}
	if (sk_GENERAL_NAME_push(gens, gn) <= 0)
		goto out;
	gn = NULL;                              /* gens owns it */
	ok = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, critical ? 1 : 0,
			       X509V3_ADD_DEFAULT) == 1;
out:
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(gens);
	return ok;
}

/* A new P-256 key.  Through the legacy EC_KEY interface on purpose: with
 * OpenSSL 3.0 a provider key makes X509_set_pubkey run the OSSL_ENCODER and
 * decoder machinery (about 170 us of the 270 us a leaf took, measured), where
 * a legacy key encodes its point directly (4 us); key generation itself is
 * 9 us against 30.  OpenSSL exports the key to its provider once, on first
 * use, and caches that in the EVP_PKEY.  The group is the CA's, shared
 * read-only (EC_KEY_set_group copies it). */
static EVP_PKEY *p256_key(const EC_GROUP *group)
{
	EVP_PKEY *pkey = EVP_PKEY_new();
	EC_KEY *ec = EC_KEY_new();

	if (pkey == NULL || ec == NULL || EC_KEY_set_group(ec, group) != 1 ||
	    EC_KEY_generate_key(ec) != 1 || EVP_PKEY_assign_EC_KEY(pkey, ec) != 1) {
		EC_KEY_free(ec);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;                            /* owns ec */
}

/* --- the CA --------------------------------------------------------------- */

struct cache_slot {
	struct gw_leaf *leaf;                   /* one reference; NULL when free */
	uint64_t used;                          /* ca->tick at the last hit */
};

struct gw_ca {
	int refs;                               /* __atomic */
	EVP_PKEY *key;                          /* memory only, never serialised */
	EC_GROUP *group;                        /* P-256, for every key minted */
	X509 *cert;
	time_t not_after;
	pthread_mutex_t lock;                   /* guards tick, n and slot[] */
	uint64_t tick;
	size_t n;
	struct cache_slot slot[GW_CA_CACHE_SIZE];
};

struct gw_leaf {
	int refs;                               /* __atomic */
	X509 *cert;
	EVP_PKEY *key;
	STACK_OF(X509) *chain;                  /* the CA certificate */
	time_t not_after;
	char host[GW_HOST_MAX + 1];
};

/* An empty CA with one reference and its lock: 0, or <0 with err. */
static int ca_alloc(struct gw_ca **out, char *err, size_t errlen)
{
	struct gw_ca *ca = calloc(1, sizeof *ca);
	int rc;

	if (ca == NULL)
		return fail(err, errlen, -ENOMEM, "gateway CA: out of memory");
	ca->refs = 1;
	if ((rc = pthread_mutex_init(&ca->lock, NULL)) != 0) {
		free(ca);
		return fail(err, errlen, -rc, "gateway CA: pthread_mutex_init: %s", strerror(rc));
	}
	*out = ca;
	return 0;
}

int gw_ca_new(struct gw_ca **out, char *err, size_t errlen)
{
	struct gw_ca *ca;
	X509_NAME *name;
	X509V3_CTX v3;
	time_t now = time(NULL);
	int rc;

	if ((rc = ca_alloc(&ca, err, errlen)) != 0)
		return rc;
	ca->not_after = now + (time_t)CA_DAYS * 86400;
	if ((ca->group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)) == NULL ||
	    (ca->key = p256_key(ca->group)) == NULL) {
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: P-256 key generation failed");
		goto bad;
	}
	if ((ca->cert = X509_new()) == NULL || X509_set_version(ca->cert, X509_VERSION_3) != 1 ||
	    !set_random_serial(ca->cert) || !set_validity(ca->cert, now - BACKDATE, ca->not_after) ||
	    X509_set_pubkey(ca->cert, ca->key) != 1) {
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: building the certificate failed");
		goto bad;
	}
	name = X509_get_subject_name(ca->cert);
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_ASC,
				       (const unsigned char *)GW_CA_CN, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(ca->cert, name) != 1) {
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: setting the name failed");
		goto bad;
	}
	X509V3_set_ctx(&v3, ca->cert, ca->cert, NULL, NULL, 0);
	if (!add_ext(ca->cert, &v3, NID_basic_constraints, "critical,CA:TRUE") ||
	    !add_ext(ca->cert, &v3, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
	    !add_ext(ca->cert, &v3, NID_subject_key_identifier, "hash")) {
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: adding extensions failed");
		goto bad;
	}
	if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0) {
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: self-signing failed");
		goto bad;
	}
	*out = ca;
	return 0;
bad:
	gw_ca_free(ca);
	return rc;
}

int gw_ca_from_der(const unsigned char *key, size_t key_len, const unsigned char *cert,
		   size_t cert_len, struct gw_ca **out, char *err, size_t errlen)
{
	struct gw_ca *ca;
	const unsigned char *p;
	EC_KEY *ec = NULL;
	struct tm tm;
	int rc;

	if ((rc = ca_alloc(&ca, err, errlen)) != 0)
		return rc;
	/* The legacy EC_KEY, as p256_key makes it (see there: leaves are
	 * minted and signed without the encoder machinery). */
	p = key;
	if (key_len > LONG_MAX || (ec = d2i_ECPrivateKey(NULL, &p, (long)key_len)) == NULL ||
	    p != key + key_len || EC_GROUP_get_curve_name(EC_KEY_get0_group(ec)) !=
	    NID_X9_62_prime256v1 || (ca->key = EVP_PKEY_new()) == NULL ||
	    EVP_PKEY_assign_EC_KEY(ca->key, ec) != 1) {
		EC_KEY_free(ec);
		rc = ossl_fail(err, errlen, -EINVAL, "gateway CA: the key is not a P-256 key");
		goto bad;
	}
	p = cert;
	if (cert_len > LONG_MAX || (ca->cert = d2i_X509(NULL, &p, (long)cert_len)) == NULL ||
	    p != cert + cert_len) {
		rc = ossl_fail(err, errlen, -EINVAL, "gateway CA: the certificate does not parse");
		goto bad;
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1 || X509_verify(ca->cert, ca->key) != 1 ||
	    X509_check_ca(ca->cert) != 1) {
		rc = ossl_fail(err, errlen, -EINVAL,
			       "gateway CA: the certificate is not a CA's, self-signed with its key");
		goto bad;
	}
	if ((ca->group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)) == NULL ||
	    ASN1_TIME_to_tm(X509_get0_notAfter(ca->cert), &tm) != 1) {
		rc = ossl_fail(err, errlen, -EINVAL, "gateway CA: the certificate has no end");
		goto bad;
	}
	ca->not_after = timegm(&tm);
	*out = ca;
	return 0;
bad:
	gw_ca_free(ca);
	return rc;
}

static void ca_ref(struct gw_ca *ca)
{
	__atomic_add_fetch(&ca->refs, 1, __ATOMIC_RELAXED);
}

void gw_ca_free(struct gw_ca *ca)
{
	if (ca == NULL || __atomic_sub_fetch(&ca->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < ca->n; i++)
		gw_leaf_put(ca->slot[i].leaf);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EC_GROUP_free(ca->group);
	pthread_mutex_destroy(&ca->lock);
	free(ca);
}

X509 *gw_ca_cert(const struct gw_ca *ca)
{
	return ca->cert;
}

/* --- the PEM file (cert_file.c) -------------------------------------------- */

int gw_ca_remove_stale(int dirfd, const char *name, char *err, size_t errlen)
{
	return gw_cert_file_remove_stale(dirfd, name, err, errlen);
}

int gw_ca_check_cert_file(int dirfd, const char *name, char *err, size_t errlen)
{
	return gw_cert_file_check(dirfd, name, err, errlen);
}

int gw_ca_create_cert_file(int dirfd, const char *name, char *err, size_t errlen)
{
	return gw_cert_file_create(dirfd, name, err, errlen);
}

int gw_ca_fill_cert_file(const struct gw_ca *ca, int fd, int dirfd, const char *name, char *err,
			 size_t errlen)
{
	BIO *mem = NULL;
	char *pem;
	long pemlen;
	int rc;

	/* The certificate alone: PEM_write_bio_X509 has no way to add the key. */
	if ((mem = BIO_new(BIO_s_mem())) == NULL || PEM_write_bio_X509(mem, ca->cert) != 1 ||
	    (pemlen = BIO_get_mem_data(mem, &pem)) <= 0) {
		close(fd);
		rc = ossl_fail(err, errlen, -EIO, "gateway CA: encoding the certificate failed");
	} else {
		rc = gw_cert_file_fill(fd, dirfd, name, pem, (size_t)pemlen, err, errlen);
	}
	BIO_free(mem);
	return rc;
}

int gw_ca_write_cert(const struct gw_ca *ca, int dirfd, const char *name, char *err,
		     size_t errlen)
{
	int fd = gw_ca_create_cert_file(dirfd, name, err, errlen);

	return fd < 0 ? fd : gw_ca_fill_cert_file(ca, fd, dirfd, name, err, errlen);
}

/* --- leaves and their cache ----------------------------------------------- */

void gw_leaf_put(struct gw_leaf *leaf)
{
	if (leaf == NULL || __atomic_sub_fetch(&leaf->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	X509_free(leaf->cert);
	EVP_PKEY_free(leaf->key);
	sk_X509_pop_free(leaf->chain, X509_free);
	free(leaf);
}

static struct gw_leaf *leaf_ref(struct gw_leaf *leaf)
{
	__atomic_add_fetch(&leaf->refs, 1, __ATOMIC_RELAXED);
	return leaf;
}

X509 *gw_leaf_cert(const struct gw_leaf *leaf) { return leaf->cert; }
EVP_PKEY *gw_leaf_key(const struct gw_leaf *leaf) { return leaf->key; }
STACK_OF(X509) *gw_leaf_chain(const struct gw_leaf *leaf) { return leaf->chain; }
const char *gw_leaf_host(const struct gw_leaf *leaf) { return leaf->host; }

static int mint(struct gw_ca *ca, const char *host, bool is_ip, struct gw_leaf **out, char *err,
		size_t errlen)
{
	struct gw_leaf *leaf;
	X509_NAME *name;
	X509V3_CTX v3;
	time_t now = time(NULL);
	size_t hlen = strlen(host);
	int rc;

	if ((leaf = calloc(1, sizeof *leaf)) == NULL)
		return fail(err, errlen, -ENOMEM, "gateway leaf %s: out of memory", host);
	leaf->refs = 1;
	memcpy(leaf->host, host, hlen + 1);
	leaf->not_after = now + (time_t)LEAF_DAYS * 86400;
	if (leaf->not_after > ca->not_after)
		leaf->not_after = ca->not_after;
	if ((leaf->key = p256_key(ca->group)) == NULL) {
		rc = ossl_fail(err, errlen, -EIO, "gateway leaf %s: key generation failed", host);
		goto bad;
	}
	if ((leaf->cert = X509_new()) == NULL || X509_set_version(leaf->cert, X509_VERSION_3) != 1 ||
	    !set_random_serial(leaf->cert) ||
	    !set_validity(leaf->cert, now - BACKDATE, leaf->not_after) ||
	    X509_set_pubkey(leaf->cert, leaf->key) != 1 ||
	    X509_set_issuer_name(leaf->cert, X509_get_subject_name(ca->cert)) != 1) {
		rc = ossl_fail(err, errlen, -EIO, "gateway leaf %s: building it failed", host);
		goto bad;
	}
	/* Past 64 characters a CN is out of bounds: the subject stays empty and
	 * RFC 5280 §4.2.1.6 then wants the SAN critical. */
	name = X509_get_subject_name(leaf->cert);
	if (hlen <= CN_MAX &&
	    X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_ASC,
				       (const unsigned char *)host, -1, -1, 0) != 1) {
		rc = ossl_fail(err, errlen, -EIO, "gateway leaf %s: setting the CN failed", host);
		goto bad;
	}
	X509V3_set_ctx(&v3, ca->cert, leaf->cert, NULL, NULL, 0);
	if (!add_ext(leaf->cert, &v3, NID_basic_constraints, "critical,CA:FALSE") ||
	    !add_ext(leaf->cert, &v3, NID_key_usage, "critical,digitalSignature") ||
	    !add_ext(leaf->cert, &v3, NID_ext_key_usage, "serverAuth") ||
	    !add_ext(leaf->cert, &v3, NID_subject_key_identifier, "hash") ||
	    !add_ext(leaf->cert, &v3, NID_authority_key_identifier, "keyid:always") ||
	    !add_san(leaf->cert, host, is_ip, hlen > CN_MAX)) {
		rc = ossl_fail(err, errlen, -EIO, "gateway leaf %s: adding extensions failed", host);
		goto bad;
	}
	if (X509_sign(leaf->cert, ca->key, EVP_sha256()) <= 0) {
		rc = ossl_fail(err, errlen, -EIO, "gateway leaf %s: signing failed", host);
		goto bad;
	}
	if ((leaf->chain = sk_X509_new_null()) == NULL ||
	    !X509_add_cert(leaf->chain, ca->cert, X509_ADD_FLAG_UP_REF)) {
		rc = ossl_fail(err, errlen, -ENOMEM, "gateway leaf %s: out of memory", host);
		goto bad;
	}
	*out = leaf;
	return 0;
bad:
	gw_leaf_put(leaf);
	return rc;
}

static bool fresh(const struct gw_ca *ca, const struct gw_leaf *leaf, time_t now)
{
	/* A leaf capped at the CA's end cannot be bettered by minting again. */
	return leaf->not_after - now > REMINT_LEFT || leaf->not_after >= ca->not_after;
}

/* Under ca->lock: the slot of host, or -1. */
static int find(const struct gw_ca *ca, const char *host)
{
	for (size_t i = 0; i < ca->n; i++)
		if (strcmp(ca->slot[i].leaf->host, host) == 0)
			return (int)i;
	return -1;
}

int gw_ca_leaf(struct gw_ca *ca, const char *host, struct gw_leaf **out, char *err,
	       size_t errlen)
{
	char h[GW_HOST_MAX + 1], show[SHOWN_MAX];
	struct gw_leaf *leaf = NULL, *mine = NULL, *drop = NULL;
	time_t now = time(NULL);
	int kind, i, rc;

	if ((kind = gw_host_normalize(host, h)) < 0)
		return fail(err, errlen, -EINVAL,
			    "gateway leaf: \"%s\" is not a host name or IP address",
			    shown(host, show));

	pthread_mutex_lock(&ca->lock);
	if ((i = find(ca, h)) >= 0 && fresh(ca, ca->slot[i].leaf, now)) {
		ca->slot[i].used = ++ca->tick;
		leaf = leaf_ref(ca->slot[i].leaf);
	}
	pthread_mutex_unlock(&ca->lock);
	if (leaf != NULL) {
		*out = leaf;
		return 0;
	}

	/* Mint outside the lock (tens of microseconds): other hosts' hits go on. */
	if ((rc = mint(ca, h, kind == 1, &mine, err, errlen)) != 0)
		return rc;

	pthread_mutex_lock(&ca->lock);
	i = find(ca, h);
	if (i >= 0 && fresh(ca, ca->slot[i].leaf, now)) {
		leaf = leaf_ref(ca->slot[i].leaf);      /* another thread won the race */
		drop = mine;
	} else {
		if (i < 0 && ca->n < GW_CA_CACHE_SIZE) {
			i = (int)ca->n++;
		} else if (i < 0) {
			i = 0;                          /* the least recently used */
			for (size_t k = 1; k < ca->n; k++)
				if (ca->slot[k].used < ca->slot[i].used)
					i = (int)k;
		}
		drop = ca->slot[i].leaf;                /* stale or evicted; NULL if new */
		ca->slot[i].leaf = leaf_ref(mine);
		leaf = mine;
	}
	ca->slot[i].used = ++ca->tick;
	pthread_mutex_unlock(&ca->lock);
	gw_leaf_put(drop);
	*out = leaf;
	return 0;
}

size_t gw_ca_cache_len(struct gw_ca *ca)
{
	size_t n;

	pthread_mutex_lock(&ca->lock);
	n = ca->n;
	pthread_mutex_unlock(&ca->lock);
	return n;
}

/* --- contexts built on first use ------------------------------------------ */

/* An SSL_CTX built by its first user (gw_server, gw_upstream): the first
 * caller builds it under the lock while the others wait, and every caller
 * gets that one context; a failed build keeps nothing, so the next caller
 * tries again.  Once built, a caller takes only the acquire load. */
struct lazy_ctx {
	pthread_mutex_t lock;                   /* serialises the build of ctx */
	SSL_CTX *ctx;                           /* __atomic; NULL until the first build */
};

typedef int (*ctx_build_fn)(const void *arg, SSL_CTX **out, char *err, size_t errlen);

static int lazy_init(struct lazy_ctx *l, char *err, size_t errlen)
{
	int rc = pthread_mutex_init(&l->lock, NULL);

	l->ctx = NULL;
	return rc == 0 ? 0 : fail(err, errlen, -rc, "gateway TLS: pthread_mutex_init: %s",
				  strerror(rc));
}

static void lazy_fini(struct lazy_ctx *l)
{
	SSL_CTX_free(l->ctx);
	pthread_mutex_destroy(&l->lock);
}

static int lazy_get(struct lazy_ctx *l, ctx_build_fn build, const void *arg, SSL_CTX **out,
		    char *err, size_t errlen)
{
	SSL_CTX *ctx = __atomic_load_n(&l->ctx, __ATOMIC_ACQUIRE);
	int rc = 0;

	if (ctx == NULL) {
		pthread_mutex_lock(&l->lock);
		ctx = __atomic_load_n(&l->ctx, __ATOMIC_ACQUIRE);
		if (ctx == NULL && (rc = build(arg, &ctx, err, errlen)) == 0)
			__atomic_store_n(&l->ctx, ctx, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&l->lock);
		if (rc != 0)
			return rc;
	}
	*out = ctx;
	return 0;
}

static bool lazy_built(struct lazy_ctx *l)
{
	return __atomic_load_n(&l->ctx, __ATOMIC_ACQUIRE) != NULL;
}

/* --- TLS toward the workload ---------------------------------------------- */

/* Per-SSL state, in ex_data: the CONNECT host and the host served. */
struct tls_conn {
	char default_host[GW_HOST_MAX + 1];
	char served[GW_HOST_MAX + 1];
};

static pthread_once_t idx_once = PTHREAD_ONCE_INIT;
static int ssl_idx = -1, ctx_idx = -1;

static void conn_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		      void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	free(ptr);
}

/* SSL_dup copies ex_data pointers: give the copy its own state. */
static int conn_dup(CRYPTO_EX_DATA *to, const CRYPTO_EX_DATA *from, void **from_d, int idx,
		    long argl, void *argp)
{
	struct tls_conn *c;

	(void)to, (void)from, (void)idx, (void)argl, (void)argp;
	if (*from_d == NULL)
		return 1;
	if ((c = malloc(sizeof *c)) == NULL) {
		*from_d = NULL;
		return 0;
	}
	memcpy(c, *from_d, sizeof *c);
	*from_d = c;
	return 1;
}

static void ctx_ca_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
			void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	gw_ca_free(ptr);
}

static void make_indices(void)
{
	ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, conn_dup, conn_free);
	ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ctx_ca_free);
}

static int indices(void)
{
	pthread_once(&idx_once, make_indices);
	return ssl_idx >= 0 && ctx_idx >= 0;
}

static struct tls_conn *conn_of(SSL *ssl, bool create)
{
	struct tls_conn *c = SSL_get_ex_data(ssl, ssl_idx);

	if (c == NULL && create && (c = calloc(1, sizeof *c)) != NULL &&
	    SSL_set_ex_data(ssl, ssl_idx, c) != 1) {
		free(c);
		c = NULL;
	}
	return c;
}

/* Called for every ClientHello, SNI or not (OpenSSL 1.1.1+), before the
 * certificate is chosen: install the leaf for this connection. */
static int on_servername(SSL *ssl, int *alert, void *arg)
{
	struct gw_ca *ca = arg;
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	struct tls_conn *c = conn_of(ssl, true);
	struct gw_leaf *leaf;
	char host[GW_HOST_MAX + 1];
	int ok;

	if (c == NULL) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	if (sni != NULL) {
		if (gw_host_normalize(sni, host) < 0) {
			*alert = SSL_AD_UNRECOGNIZED_NAME;
			return SSL_TLSEXT_ERR_ALERT_FATAL;
		}
	} else if (c->default_host[0] != '\0') {
		memcpy(host, c->default_host, sizeof host);
	} else {
		*alert = SSL_AD_UNRECOGNIZED_NAME;      /* nothing to mint for */
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	if (gw_ca_leaf(ca, host, &leaf, NULL, 0) != 0) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	ok = SSL_use_cert_and_key(ssl, leaf->cert, leaf->key, leaf->chain, 1);
	gw_leaf_put(leaf);                              /* ssl holds its own references */
	if (ok != 1) {
		ERR_clear_error();
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	memcpy(c->served, host, sizeof host);
	return SSL_TLSEXT_ERR_OK;
}

/* Select http/1.1 from the client's list, or go on without ALPN. */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		   const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int i = 0, l;

	(void)ssl, (void)arg;
	while (i < inlen) {
		l = in[i];
		if (l == 0 || l > inlen - i - 1)
			return SSL_TLSEXT_ERR_NOACK;    /* malformed; OpenSSL checked already */
		if (l == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + l;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

int gw_tls_server_ctx(struct gw_ca *ca, SSL_CTX **out, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if (!indices())
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: no ex_data index");
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: SSL_CTX_new failed");
	/* The context's reference to ca, dropped by ctx_ca_free in SSL_CTX_free. */
	ca_ref(ca);
	if (SSL_CTX_set_ex_data(ctx, ctx_idx, ca) != 1) {
		gw_ca_free(ca);
		SSL_CTX_free(ctx);
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: SSL_CTX_set_ex_data failed");
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_num_tickets(ctx, 0) != 1) {
		SSL_CTX_free(ctx);
		return ossl_fail(err, errlen, -EIO, "gateway TLS: configuring the server failed");
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
	SSL_CTX_set_tlsext_servername_arg(ctx, ca);
	SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
	*out = ctx;
	return 0;
}

struct gw_server {
	struct gw_ca *ca;                       /* our reference */
	struct lazy_ctx lz;
};

int gw_server_new(struct gw_ca *ca, struct gw_server **out, char *err, size_t errlen)
{
	struct gw_server *sv;
	int rc;

	if ((sv = calloc(1, sizeof *sv)) == NULL)
		return fail(err, errlen, -ENOMEM, "gateway TLS: out of memory");
	if ((rc = lazy_init(&sv->lz, err, errlen)) != 0) {
		free(sv);
		return rc;
	}
	ca_ref(ca);
	sv->ca = ca;
	*out = sv;
	return 0;
}

static int server_ctx_build(const void *arg, SSL_CTX **out, char *err, size_t errlen)
{
	const struct gw_server *sv = arg;
	int rc = gw_tls_server_ctx(sv->ca, out, err, errlen);

	/* As upstream: a client's EOF without close_notify ends its stream. */
	if (rc == 0)
		SSL_CTX_set_options(*out, SSL_OP_IGNORE_UNEXPECTED_EOF);
	return rc;
}

int gw_server_ctx(struct gw_server *sv, SSL_CTX **out, char *err, size_t errlen)
{
	return lazy_get(&sv->lz, server_ctx_build, sv, out, err, errlen);
}

bool gw_server_loaded(struct gw_server *sv)
{
	return lazy_built(&sv->lz);
}

void gw_server_free(struct gw_server *sv)
{
	if (sv == NULL)
		return;
	lazy_fini(&sv->lz);                     /* the context's own reference to ca goes too */
	gw_ca_free(sv->ca);
	free(sv);
}

int gw_tls_set_default_host(SSL *ssl, const char *host, char *err, size_t errlen)
{
	char h[GW_HOST_MAX + 1], show[SHOWN_MAX];
	struct tls_conn *c;

	if (!indices())
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: no ex_data index");
	if (gw_host_normalize(host, h) < 0)
		return fail(err, errlen, -EINVAL,
			    "gateway TLS: \"%s\" is not a host name or IP address",
			    shown(host, show));
	if ((c = conn_of(ssl, true)) == NULL)
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: out of memory");
	memcpy(c->default_host, h, sizeof h);
	return 0;
}

const char *gw_tls_served_host(const SSL *ssl)
{
	struct tls_conn *c;

	if (!indices() || (c = SSL_get_ex_data(ssl, ssl_idx)) == NULL || c->served[0] == '\0')
		return NULL;
	return c->served;
}

/* --- TLS upstream --------------------------------------------------------- */

/* Every certificate of the PEM file at path, appended to certs. */
static int load_ca_file(STACK_OF(X509) *certs, const char *path, char *err, size_t errlen)
{
	BIO *in;
	X509 *x;
	unsigned long e;
	int count = 0, rc = 0;

	errno = 0;
	if ((in = BIO_new_file(path, "r")) == NULL) {
		int en = errno ? errno : EIO;

		return fail(err, errlen, -en, "gateway TLS: cannot read extra CA file %s: %s", path,
			    strerror(en));
	}
	while ((x = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
		if (sk_X509_push(certs, x) <= 0) {
			X509_free(x);
			rc = ossl_fail(err, errlen, -ENOMEM, "gateway TLS: extra CA file %s", path);
			goto out;
		}
		count++;
	}
	/* The loop ends on "no start line" at the end of the file; anything
	 * else is a damaged block. */
	e = ERR_peek_last_error();
	if (e != 0 && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
		rc = ossl_fail(err, errlen, -EINVAL,
			       "gateway TLS: extra CA file %s has a damaged certificate", path);
		goto out;
	}
	ERR_clear_error();
	if (count == 0)
		rc = fail(err, errlen, -EINVAL, "gateway TLS: extra CA file %s holds no certificate",
			  path);
out:
	BIO_free(in);
	return rc;
}

struct gw_upstream {
	STACK_OF(X509) *extra;                  /* read at gw_upstream_new */
	struct lazy_ctx lz;
};

int gw_upstream_new(const char *const *extra_ca_files, size_t n, struct gw_upstream **out,
		    char *err, size_t errlen)
{
	struct gw_upstream *u;
	int rc;

	if ((u = calloc(1, sizeof *u)) == NULL)
		return fail(err, errlen, -ENOMEM, "gateway TLS: out of memory");
	if ((rc = lazy_init(&u->lz, err, errlen)) != 0) {
		free(u);
		return rc;
	}
	if ((u->extra = sk_X509_new_null()) == NULL) {
		gw_upstream_free(u);
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (extra_ca_files[i] == NULL) {
			gw_upstream_free(u);
			return fail(err, errlen, -EINVAL, "gateway TLS: extra CA file %zu is NULL", i);
		}
		if ((rc = load_ca_file(u->extra, extra_ca_files[i], err, errlen)) != 0) {
			gw_upstream_free(u);
			return rc;
		}
	}
	*out = u;
	return 0;
}

void gw_upstream_free(struct gw_upstream *u)
{
	if (u == NULL)
		return;
	lazy_fini(&u->lz);
	sk_X509_pop_free(u->extra, X509_free);
	free(u);
}

/* The client context: the system store (SSL_CERT_FILE / SSL_CERT_DIR, else
 * OpenSSL's default paths) and the extra CAs. */
static int client_ctx_build(const void *arg, SSL_CTX **out, char *err, size_t errlen)
{
	const struct gw_upstream *u = arg;
	X509_STORE *store;
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: SSL_CTX_new failed");
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), X509_V_FLAG_PARTIAL_CHAIN) != 1) {
		SSL_CTX_free(ctx);
		return ossl_fail(err, errlen, -EIO, "gateway TLS: configuring the client failed");
	}
	store = SSL_CTX_get_cert_store(ctx);
	for (int i = 0; i < sk_X509_num(u->extra); i++)
		if (X509_STORE_add_cert(store, sk_X509_value(u->extra, i)) != 1) {
			SSL_CTX_free(ctx);
			return ossl_fail(err, errlen, -EIO, "gateway TLS: adding an extra CA failed");
		}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* Most servers end TLS without close_notify.  Read that as the end of
	 * the stream: a close-delimited body then ends there, and a framed one
	 * that stops early is still seen as cut short by its framing. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	*out = ctx;
	return 0;
}

int gw_upstream_ctx(struct gw_upstream *u, SSL_CTX **out, char *err, size_t errlen)
{
	/* The first upstream TLS connection builds it. */
	return lazy_get(&u->lz, client_ctx_build, u, out, err, errlen);
}

bool gw_upstream_loaded(struct gw_upstream *u)
{
	return lazy_built(&u->lz);
}

int gw_tls_client_ctx(const char *const *extra_ca_files, size_t n, SSL_CTX **out, char *err,
		      size_t errlen)
{
	struct gw_upstream *u;
	SSL_CTX *ctx;
	int rc;

	if ((rc = gw_upstream_new(extra_ca_files, n, &u, err, errlen)) != 0)
		return rc;
	if ((rc = gw_upstream_ctx(u, &ctx, err, errlen)) == 0 && SSL_CTX_up_ref(ctx) == 1)
		*out = ctx;
	else if (rc == 0)
		rc = ossl_fail(err, errlen, -EIO, "gateway TLS: SSL_CTX_up_ref failed");
	gw_upstream_free(u);
	return rc;
}

int gw_tls_client_prepare(SSL *ssl, const char *host, char *err, size_t errlen)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	char h[GW_HOST_MAX + 1], show[SHOWN_MAX];
	int kind = gw_host_normalize(host, h);

	if (kind < 0)
		return fail(err, errlen, -EINVAL,
			    "gateway TLS: \"%s\" is not a host name or IP address",
			    shown(host, show));
	if (kind == 1) {
		/* RFC 6066: no literal in SNI; the IP SAN is what is checked. */
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), h) != 1)
			return ossl_fail(err, errlen, -EIO, "gateway TLS: IP check for %s", h);
	} else {
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set_tlsext_host_name(ssl, h) != 1 || SSL_set1_host(ssl, h) != 1)
			return ossl_fail(err, errlen, -EIO, "gateway TLS: SNI / host check for %s", h);
	}
	/* SSL_set_alpn_protos returns 0 on success. */
	if (SSL_set_alpn_protos(ssl, alpn, sizeof alpn - 1) != 0)
		return ossl_fail(err, errlen, -ENOMEM, "gateway TLS: ALPN for %s", h);
	return 0;
}
