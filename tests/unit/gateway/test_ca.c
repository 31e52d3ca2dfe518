/* test_ca.c - the gateway's CA, leaves and TLS contexts (src/gateway/ca.c).
 *
 * Certificates are checked with OpenSSL's own parsers and verifier against a
 * store holding only our CA; handshakes run in this process over a
 * non-blocking socketpair, both ends pumped in turn from one thread.  Files
 * live in one mkdtemp directory removed at exit.  Timings are printed as
 * "# ..." lines for the report; they are not checks.
 *
 * The CA the supervisor mints with Nettle (ca_mint.c) is read back here with
 * OpenSSL, as the gateway process reads it (gw_ca_from_der), and beside a
 * strict DER reader of our own. */
/* d2i_ECPrivateKey and EC_KEY: the interface ca.c reads the minted key with. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "test.h"

static char root[PATH_MAX];
static int rootfd = -1;
static struct gw_ca *the_ca;            /* one CA for most tests, freed at the end */
static char ca_path[PATH_MAX + 16];     /* its cert.pem */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void cleanup(void)
{
	gw_ca_free(the_ca);
	the_ca = NULL;
	if (rootfd >= 0)
		close(rootfd);
	if (root[0] != '\0')
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup_root(void)
{
	char err[256];

	if (the_ca != NULL)
		return;
	snprintf(root, sizeof root, "/tmp/cairn-gwca-XXXXXX");
	if (mkdtemp(root) == NULL || (rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		perror("mkdtemp");
		exit(2);
	}
	atexit(cleanup);
	if (gw_ca_new(&the_ca, err, sizeof err) != 0) {
		fprintf(stderr, "gw_ca_new: %s\n", err);
		exit(2);
	}
	if (gw_ca_write_cert(the_ca, rootfd, "cert.pem", err, sizeof err) != 0) {
		fprintf(stderr, "gw_ca_write_cert: %s\n", err);
		exit(2);
	}
	snprintf(ca_path, sizeof ca_path, "%s/cert.pem", root);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static bool ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	return i >= 0 && X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

static bool has_ext(X509 *x, int nid)
{
	return X509_get_ext_by_NID(x, nid, -1) >= 0;
}

static const char *cn_of(X509 *x, char *buf, size_t n)
{
	buf[0] = '\0';
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, (int)n) < 0)
		return "";
	return buf;
}

static bool is_p256(EVP_PKEY *k)
{
	char group[64];
	size_t glen = 0;

	return k != NULL && EVP_PKEY_is_a(k, "EC") &&
	       EVP_PKEY_get_group_name(k, group, sizeof group, &glen) == 1 &&
	       strcmp(group, "prime256v1") == 0;
}

static int serial_bits(X509 *x)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	int bits = bn ? BN_num_bits(bn) : -1;

	if (bn && BN_is_negative(bn))
		bits = -1;
	BN_free(bn);
	return bits;
}

/* Seconds from now to t (negative: in the past). */
static long long secs_from_now(const ASN1_TIME *t)
{
	int day = 0, sec = 0;

	if (ASN1_TIME_diff(&day, &sec, NULL, t) != 1)
		return 0x7fffffff;
	return (long long)day * 86400 + sec;
}

/* Verify leaf against a store holding only trust, as a TLS server for
 * name (a DNS name or an IP literal).  X509_V_OK or the verifier's error. */
static int verify_leaf(X509 *trust, X509 *leaf, const char *name, bool ip)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *cx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *pm;
	int rc = -1;

	if (st == NULL || cx == NULL || X509_STORE_add_cert(st, trust) != 1 ||
	    X509_STORE_CTX_init(cx, st, leaf, NULL) != 1)
		goto out;
	pm = X509_STORE_CTX_get0_param(cx);
	X509_VERIFY_PARAM_set_purpose(pm, X509_PURPOSE_SSL_SERVER);
	if (ip)
		X509_VERIFY_PARAM_set1_ip_asc(pm, name);
	else
		X509_VERIFY_PARAM_set1_host(pm, name, 0);
	rc = X509_verify_cert(cx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(cx);
out:
	X509_STORE_CTX_free(cx);
	X509_STORE_free(st);
	ERR_clear_error();
	return rc;
}

/* --- host names ----------------------------------------------------------- */

static void test_host_normalize(void)
{
	setup_root();
	char h[GW_HOST_MAX + 1], big[300];

	CHECK_EQ_INT(gw_host_normalize("API.Example.TEST", h), 0);
	CHECK_EQ_STR(h, "api.example.test");
	CHECK_EQ_INT(gw_host_normalize("127.0.0.1", h), 1);
	CHECK_EQ_STR(h, "127.0.0.1");
	CHECK_EQ_INT(gw_host_normalize("0:0:0:0:0:0:0:1", h), 1);
	CHECK_EQ_STR(h, "::1");
	CHECK_EQ_INT(gw_host_normalize("::FFFF:10.0.0.1", h), 1);
	CHECK_EQ_STR(h, "::ffff:10.0.0.1");
	CHECK_EQ_INT(gw_host_normalize("xn--bcher-kva.example", h), 0);

	/* 253 characters in labels of 63: the longest name. */
	snprintf(big, sizeof big, "%.63s.%.63s.%.63s.%.61s",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		 "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
		 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
	CHECK_EQ_INT(strlen(big), 253);
	CHECK_EQ_INT(gw_host_normalize(big, h), 0);
	strcat(big, "d");
	CHECK_EQ_INT(gw_host_normalize(big, h), -EINVAL);           /* 254 */

	static const char *const bad[] = {
		"", "a_b.example", "a..b", ".a.example", "a.example.", "exa mple.test",
		"host/path", "127.1", "1.2.3.4.5", "010.0.0.1", "[::1]", "fe80::1%eth0",
		"::1::2", "a\xc3\xa9.example", "host:443",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (gw_host_normalize(bad[i], h) != -EINVAL) {
			fprintf(stderr, "accepted bad host \"%s\"\n", bad[i]);
			CHECK(0);
		} else {
			CHECK(1);
		}
	CHECK_EQ_INT(gw_host_normalize(NULL, h), -EINVAL);
}

/* --- the CA --------------------------------------------------------------- */

static void test_ca_cert(void)
{
	setup_root();
	X509 *ca = gw_ca_cert(the_ca);
	BASIC_CONSTRAINTS *bc;
	EVP_PKEY *pub = X509_get0_pubkey(ca);
	struct gw_ca *other = NULL;
	char cn[128], err[256];

	CHECK_EQ_INT(X509_get_version(ca), X509_VERSION_3);
	CHECK_EQ_STR(cn_of(ca, cn, sizeof cn), "cairn Ephemeral Egress CA");
	CHECK_EQ_INT(X509_NAME_cmp(X509_get_subject_name(ca), X509_get_issuer_name(ca)), 0);
	CHECK(X509_verify(ca, pub) == 1);                  /* self-signed */
	CHECK(is_p256(pub));
	CHECK_EQ_INT(X509_get_signature_nid(ca), NID_ecdsa_with_SHA256);
	CHECK_EQ_INT(X509_check_ca(ca), 1);

	CHECK(ext_critical(ca, NID_basic_constraints));
	bc = X509_get_ext_d2i(ca, NID_basic_constraints, NULL, NULL);
	CHECK(bc != NULL && bc->ca && bc->pathlen == NULL);
	BASIC_CONSTRAINTS_free(bc);
	CHECK(ext_critical(ca, NID_key_usage));
	CHECK_EQ_INT(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN | KU_DIGITAL_SIGNATURE);
	CHECK(X509_get0_subject_key_id(ca) != NULL);
	CHECK(!has_ext(ca, NID_ext_key_usage));

	/* 128 random bits: positive, and at least 100 of them in use but for a
	 * 2^-28 chance. */
	CHECK(serial_bits(ca) > 100 && serial_bits(ca) <= 128);
	CHECK(secs_from_now(X509_get0_notBefore(ca)) <= -3590 &&
	      secs_from_now(X509_get0_notBefore(ca)) >= -3610);
	CHECK(secs_from_now(X509_get0_notAfter(ca)) > 29 * 86400 &&
	      secs_from_now(X509_get0_notAfter(ca)) <= 30 * 86400);

	/* A second run gets a different key and serial. */
	CHECK_EQ_INT(gw_ca_new(&other, err, sizeof err), 0);
	if (other != NULL) {
		CHECK(EVP_PKEY_eq(X509_get0_pubkey(gw_ca_cert(other)), pub) != 1);
		CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(gw_ca_cert(other)),
				       X509_get0_serialNumber(ca)) != 0);
	}
	gw_ca_free(other);
	gw_ca_free(NULL);
	ERR_clear_error();
}

/* --- the PEM file --------------------------------------------------------- */

static unsigned mode_at(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0xffff;
	return (unsigned)(st.st_mode & 07777);
}

static void put_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		perror(name);
	if (fd >= 0)
		close(fd);
}

static void test_pem_write(void)
{
	setup_root();
	char err[256], *text;
	size_t n = 0;
	X509 *back = NULL;
	FILE *f;
	int d;
	mode_t old;

	/* setup_root wrote cert.pem already. */
	CHECK_EQ_INT(mode_at(rootfd, "cert.pem"), 0400);
	text = test_read_file(ca_path, &n);
	CHECK(text != NULL && strstr(text, "-----BEGIN CERTIFICATE-----") == text);
	/* no key of any kind: a PEM key's armour ends "KEY-----" (its base64 body
	 * holds no '-'; a bare "KEY" turns up in a random certificate's body about
	 * one run in 250) */
	CHECK(text != NULL && strstr(text, "KEY-----") == NULL);
	CHECK(text != NULL && strstr(strstr(text, "BEGIN") + 1, "BEGIN") == NULL);  /* one block */
	free(text);
	if ((f = fopen(ca_path, "r")) != NULL) {
		back = PEM_read_X509(f, NULL, NULL, NULL);
		if (back != NULL) {
			X509 *extra = PEM_read_X509(f, NULL, NULL, NULL);

			CHECK(extra == NULL);                         /* one certificate only */
			X509_free(extra);
		}
		fclose(f);
	}
	CHECK(back != NULL && X509_cmp(back, gw_ca_cert(the_ca)) == 0);
	X509_free(back);
	ERR_clear_error();

	/* O_EXCL: an existing file is refused, and left as it was. */
	err[0] = '\0';
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, rootfd, "cert.pem", err, sizeof err), -EEXIST);
	CHECK(strstr(err, "cert.pem already exists") != NULL);
	CHECK_EQ_INT(gw_ca_check_cert_file(rootfd, "cert.pem", err, sizeof err), 0);

	/* A stale file from an earlier run: removed, then the write succeeds. */
	if ((d = mkdirat(rootfd, "trust", 0700)) == 0)
		d = openat(rootfd, "trust", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(d >= 0);
	put_file(d, "cert.pem", "-----BEGIN CERTIFICATE-----\nstale\n-----END CERTIFICATE-----\n");
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "cert.pem", err, sizeof err), -EEXIST);
	CHECK_EQ_INT(gw_ca_remove_stale(d, "cert.pem", err, sizeof err), 0);
	CHECK_EQ_INT(mode_at(d, "cert.pem"), 0xffff);
	CHECK_EQ_INT(gw_ca_remove_stale(d, "cert.pem", err, sizeof err), 0);  /* absent: fine */
	/* Whatever the umask, the mode is 0400. */
	old = umask(0777);
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "cert.pem", err, sizeof err), 0);
	umask(old);
	CHECK_EQ_INT(mode_at(d, "cert.pem"), 0400);

	/* Only regular files are removed; links are not followed. */
	CHECK_EQ_INT(symlinkat("/etc/passwd", d, "link.pem"), 0);
	CHECK_EQ_INT(gw_ca_remove_stale(d, "link.pem", err, sizeof err), -ENOTSUP);
	CHECK(strstr(err, "not a regular file") != NULL);
	CHECK_EQ_INT(faccessat(d, "link.pem", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "link.pem", err, sizeof err), -EEXIST);
	CHECK_EQ_INT(symlinkat("nowhere", d, "dangling.pem"), 0);
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "dangling.pem", err, sizeof err), -EEXIST);
	CHECK_EQ_INT(faccessat(d, "nowhere", F_OK, 0), -1);          /* nothing made there */
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "link.pem", err, sizeof err), -EINVAL);
	CHECK_EQ_INT(mkdirat(d, "dir.pem", 0700), 0);
	CHECK_EQ_INT(gw_ca_remove_stale(d, "dir.pem", err, sizeof err), -ENOTSUP);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "dir.pem", err, sizeof err), -EINVAL);
	CHECK_EQ_INT(mkfifoat(d, "fifo.pem", 0600), 0);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "fifo.pem", err, sizeof err), -EINVAL);
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "sub/cert.pem", err, sizeof err), -EINVAL);
	CHECK_EQ_INT(gw_ca_write_cert(the_ca, d, "..", err, sizeof err), -EINVAL);

	/* The read-back checks on planted contents. */
	put_file(d, "key.pem", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
			       "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "key.pem", err, sizeof err), -EPERM);
	CHECK(strstr(err, "key material") != NULL && strstr(err, "key.pem") != NULL);
	put_file(d, "eckey.pem", "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n");
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "eckey.pem", err, sizeof err), -EPERM);
	put_file(d, "empty.pem", "hello\n");
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "empty.pem", err, sizeof err), -EINVAL);
	CHECK(strstr(err, "no certificate") != NULL);
	put_file(d, "big.pem", "-----BEGIN CERTIFICATE-----\n");
	{
		int fd = openat(d, "big.pem", O_WRONLY | O_CLOEXEC);

		CHECK(fd >= 0 && ftruncate(fd, (off_t)GW_CERT_FILE_MAX + 1) == 0);
		if (fd >= 0)
			close(fd);
	}
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "big.pem", err, sizeof err), -EFBIG);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "missing.pem", err, sizeof err), -ENOENT);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "cert.pem", err, sizeof err), 0);
	if (d >= 0)
		close(d);
}

/* --- leaves --------------------------------------------------------------- */

static void check_leaf(const char *host, const char *canon, bool ip)
{
	struct gw_leaf *leaf = NULL;
	X509 *ca = gw_ca_cert(the_ca), *x;
	GENERAL_NAMES *san;
	const GENERAL_NAME *gn;
	char err[256], cn[300];

	CHECK_EQ_INT(gw_ca_leaf(the_ca, host, &leaf, err, sizeof err), 0);
	if (leaf == NULL)
		return;
	x = gw_leaf_cert(leaf);
	CHECK_EQ_STR(gw_leaf_host(leaf), canon);
	CHECK_EQ_INT(verify_leaf(ca, x, canon, ip), X509_V_OK);
	CHECK_EQ_INT(verify_leaf(ca, x, ip ? "10.9.9.9" : "other.example.test", ip),
		     ip ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH);
	if (strlen(canon) <= 64)
		CHECK_EQ_STR(cn_of(x, cn, sizeof cn), canon);
	else
		CHECK(X509_NAME_entry_count(X509_get_subject_name(x)) == 0 &&
		      ext_critical(x, NID_subject_alt_name));
	san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	CHECK(san != NULL && sk_GENERAL_NAME_num(san) == 1);
	if (san != NULL && sk_GENERAL_NAME_num(san) == 1) {
		gn = sk_GENERAL_NAME_value(san, 0);
		CHECK_EQ_INT(gn->type, ip ? GEN_IPADD : GEN_DNS);
	}
	GENERAL_NAMES_free(san);
	CHECK(X509_get0_authority_key_id(x) != NULL &&
	      ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x), X509_get0_subject_key_id(ca)) == 0);
	CHECK(X509_get_extension_flags(x) & EXFLAG_XKUSAGE);
	CHECK_EQ_INT(X509_get_extended_key_usage(x), XKU_SSL_SERVER);
	CHECK_EQ_INT(X509_check_ca(x), 0);
	CHECK(is_p256(gw_leaf_key(leaf)) && EVP_PKEY_eq(gw_leaf_key(leaf), X509_get0_pubkey(ca)) != 1);
	CHECK(X509_check_private_key(x, gw_leaf_key(leaf)) == 1);
	CHECK(serial_bits(x) > 100 && serial_bits(x) <= 128);
	CHECK(secs_from_now(X509_get0_notBefore(x)) < -60);
	CHECK(secs_from_now(X509_get0_notAfter(x)) > 6 * 86400 &&
	      secs_from_now(X509_get0_notAfter(x)) <= 7 * 86400);
	CHECK(sk_X509_num(gw_leaf_chain(leaf)) == 1 &&
	      X509_cmp(sk_X509_value(gw_leaf_chain(leaf), 0), ca) == 0);
	gw_leaf_put(leaf);
	ERR_clear_error();
}

static void test_leaf_verify(void)
{
	setup_root();
	struct gw_ca *stranger = NULL;
	struct gw_leaf *leaf = NULL;
	char err[256], big[260];

	check_leaf("api.example.test", "api.example.test", false);
	check_leaf("127.0.0.1", "127.0.0.1", true);
	check_leaf("::1", "::1", true);
	memset(big, 'a', 3 * 61);
	big[60] = big[121] = big[182] = '.';
	snprintf(big + 183, sizeof big - 183, "example");
	check_leaf(big, big, false);                            /* 197 chars: no CN */

	/* Another run's CA does not vouch for our leaves. */
	CHECK_EQ_INT(gw_ca_new(&stranger, err, sizeof err), 0);
	CHECK_EQ_INT(gw_ca_leaf(the_ca, "api.example.test", &leaf, err, sizeof err), 0);
	if (stranger != NULL && leaf != NULL)
		CHECK(verify_leaf(gw_ca_cert(stranger), gw_leaf_cert(leaf), "api.example.test",
				  false) != X509_V_OK);
	gw_leaf_put(leaf);
	gw_ca_free(stranger);
}

static void test_cache(void)
{
	setup_root();
	struct gw_ca *ca = NULL;
	struct gw_leaf *a = NULL, *a2 = NULL, *b = NULL, *h0 = NULL, *h1 = NULL, *l = NULL;
	char err[256], host[64];

	CHECK_EQ_INT(gw_ca_new(&ca, err, sizeof err), 0);
	if (ca == NULL)
		return;
	CHECK_EQ_INT(gw_ca_leaf(ca, "a.example.test", &a, err, sizeof err), 0);
	CHECK_EQ_INT(gw_ca_leaf(ca, "A.Example.Test", &a2, err, sizeof err), 0);
	CHECK(a != NULL && a == a2);
	CHECK(a != NULL && a2 != NULL && X509_cmp(gw_leaf_cert(a), gw_leaf_cert(a2)) == 0);
	CHECK_EQ_INT(gw_ca_leaf(ca, "b.example.test", &b, err, sizeof err), 0);
	CHECK(b != NULL && b != a && X509_cmp(gw_leaf_cert(a), gw_leaf_cert(b)) != 0);
	CHECK(b != NULL && EVP_PKEY_eq(gw_leaf_key(a), gw_leaf_key(b)) != 1);  /* a key per host */
	CHECK_EQ_INT(gw_ca_cache_len(ca), 2);
	gw_leaf_put(a), gw_leaf_put(a2), gw_leaf_put(b);

	/* Fill to 64 (h0 .. h61 plus a and b), touch h0, then one more host:
	 * the least recently used (a) goes, h0 stays. */
	for (int i = 0; i < 62; i++) {
		snprintf(host, sizeof host, "h%d.example.test", i);
		CHECK_EQ_INT(gw_ca_leaf(ca, host, i == 0 ? &h0 : i == 1 ? &h1 : &l, err, sizeof err),
			     0);
		if (i > 1)
			gw_leaf_put(l);
	}
	CHECK_EQ_INT(gw_ca_cache_len(ca), GW_CA_CACHE_SIZE);
	CHECK_EQ_INT(gw_ca_leaf(ca, "a.example.test", &a, err, sizeof err), 0);  /* a: a hit */
	CHECK(a != NULL && a == a2);            /* a2's memory is held by the cache still */
	gw_leaf_put(a);
	/* Now b is the oldest. */
	CHECK_EQ_INT(gw_ca_leaf(ca, "h62.example.test", &l, err, sizeof err), 0);
	gw_leaf_put(l);
	CHECK_EQ_INT(gw_ca_cache_len(ca), GW_CA_CACHE_SIZE);
	CHECK_EQ_INT(gw_ca_leaf(ca, "h0.example.test", &l, err, sizeof err), 0);
	CHECK(l != NULL && l == h0);                            /* still cached */
	gw_leaf_put(l);
	/* b was evicted: asking again mints a new one (h1 is the oldest now). */
	CHECK_EQ_INT(gw_ca_leaf(ca, "b.example.test", &b, err, sizeof err), 0);
	CHECK_EQ_INT(gw_ca_cache_len(ca), GW_CA_CACHE_SIZE);
	/* h1 was evicted by b, yet the reference we hold stays valid. */
	CHECK_EQ_INT(gw_ca_leaf(ca, "h1.example.test", &l, err, sizeof err), 0);
	CHECK(l != NULL && h1 != NULL && l != h1 &&
	      X509_cmp(gw_leaf_cert(l), gw_leaf_cert(h1)) != 0);
	CHECK(h1 != NULL && strcmp(gw_leaf_host(h1), "h1.example.test") == 0 &&
	      verify_leaf(gw_ca_cert(ca), gw_leaf_cert(h1), "h1.example.test", false) == X509_V_OK);
	gw_leaf_put(l), gw_leaf_put(b), gw_leaf_put(h0), gw_leaf_put(h1);

	/* Bad hosts. */
	static const char *const bad[] = { "", "bad_host.test", "a b", "x/y", "127.1", "[::1]" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		l = NULL;
		err[0] = '\0';
		CHECK(gw_ca_leaf(ca, bad[i], &l, err, sizeof err) == -EINVAL && l == NULL &&
		      strstr(err, "not a host name") != NULL);
	}
	CHECK_EQ_INT(gw_ca_leaf(ca, "evil\r\nX-Injected: 1", &l, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "\"evil??X-Injected:?1\"") != NULL);     /* quoted safely */
	memset(host, 'a', sizeof host - 1);
	host[sizeof host - 1] = '\0';                           /* a 63-char label is fine */
	CHECK_EQ_INT(gw_ca_leaf(ca, host, &l, err, sizeof err), 0);
	gw_leaf_put(l);
	{
		char huge[400];

		memset(huge, 'a', sizeof huge - 1);
		for (size_t i = 50; i < sizeof huge - 1; i += 50)
			huge[i] = '.';
		huge[sizeof huge - 1] = '\0';
		CHECK_EQ_INT(gw_ca_leaf(ca, huge, &l, err, sizeof err), -EINVAL);
	}
	gw_ca_free(ca);
}

/* Many threads asking for overlapping hosts: every answer names its host,
 * the cache never passes its bound. */
struct race {
	struct gw_ca *ca;
	int seed;
	int wrong;
};

static void *race_run(void *arg)
{
	struct race *r = arg;
	char host[64], err[256];
	struct gw_leaf *l;

	for (int i = 0; i < 150; i++) {
		snprintf(host, sizeof host, "r%d.example.test", (i * 7 + r->seed * 13) % 80);
		if (gw_ca_leaf(r->ca, host, &l, err, sizeof err) != 0) {
			r->wrong++;
			continue;
		}
		if (strcmp(gw_leaf_host(l), host) != 0)
			r->wrong++;
		gw_leaf_put(l);
	}
	return NULL;
}

static void test_cache_threads(void)
{
	setup_root();
	struct gw_ca *ca = NULL;
	struct race r[8];
	pthread_t t[8];
	char err[256];
	int started = 0, wrong = 0;

	CHECK_EQ_INT(gw_ca_new(&ca, err, sizeof err), 0);
	if (ca == NULL)
		return;
	for (int i = 0; i < 8; i++) {
		r[i] = (struct race){ .ca = ca, .seed = i };
		if (pthread_create(&t[i], NULL, race_run, &r[i]) == 0)
			started++;
		else
			break;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		wrong += r[i].wrong;
	}
	CHECK_EQ_INT(started, 8);
	CHECK_EQ_INT(wrong, 0);
	CHECK_EQ_INT(gw_ca_cache_len(ca), GW_CA_CACHE_SIZE);
	gw_ca_free(ca);
}

/* --- handshakes ----------------------------------------------------------- */

struct pair {
	SSL *c, *s;
	int fd[2];
};

static bool pair_open(struct pair *p, SSL_CTX *cctx, SSL_CTX *sctx)
{
	p->c = p->s = NULL;
	p->fd[0] = p->fd[1] = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, p->fd) != 0)
		return false;
	p->c = SSL_new(cctx);
	p->s = SSL_new(sctx);
	if (p->c == NULL || p->s == NULL || SSL_set_fd(p->c, p->fd[0]) != 1 ||
	    SSL_set_fd(p->s, p->fd[1]) != 1)
		return false;
	SSL_set_connect_state(p->c);
	SSL_set_accept_state(p->s);
	return true;
}

static void pair_close(struct pair *p)
{
	SSL_free(p->c);
	SSL_free(p->s);
	if (p->fd[0] >= 0)
		close(p->fd[0]);
	if (p->fd[1] >= 0)
		close(p->fd[1]);
	ERR_clear_error();
}

static bool step(SSL *ssl, bool *done)
{
	int r, e;

	if (*done)
		return true;
	if ((r = SSL_do_handshake(ssl)) == 1) {
		*done = true;
		return true;
	}
	e = SSL_get_error(ssl, r);
	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* Both ends in turn until both finish (true) or one fails (false). */
static bool pump(struct pair *p)
{
	bool cd = false, sd = false;

	for (int i = 0; i < 100 && !(cd && sd); i++)
		if (!step(p->c, &cd) || !step(p->s, &sd))
			return false;
	return cd && sd;
}

/* One request line through, to show the keys agree. */
static bool round_trip(struct pair *p)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[64];
	int n;

	if (SSL_write(p->c, req, (int)sizeof req - 1) != (int)sizeof req - 1)
		return false;
	n = SSL_read(p->s, buf, sizeof buf);
	return n == (int)sizeof req - 1 && memcmp(buf, req, (size_t)n) == 0;
}

static bool alpn_is(SSL *ssl, const char *want)
{
	const unsigned char *a = NULL;
	unsigned int alen = 0;

	SSL_get0_alpn_selected(ssl, &a, &alen);
	if (want == NULL)
		return alen == 0;
	return alen == strlen(want) && memcmp(a, want, alen) == 0;
}

/* A plain OpenSSL client trusting only the CA file we wrote. */
static SSL_CTX *ca_only_client(void)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());

	if (c == NULL || SSL_CTX_load_verify_locations(c, ca_path, NULL) != 1) {
		SSL_CTX_free(c);
		return NULL;
	}
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	return c;
}

static void test_handshake(void)
{
	setup_root();
	SSL_CTX *sctx = NULL, *cctx = ca_only_client();
	struct pair p;
	char err[256], cn[128];
	X509 *peer;

	CHECK(cctx != NULL);
	CHECK_EQ_INT(gw_tls_server_ctx(the_ca, &sctx, err, sizeof err), 0);
	if (sctx == NULL || cctx == NULL)
		goto out;
	CHECK_EQ_INT(SSL_CTX_get_min_proto_version(sctx), TLS1_2_VERSION);
	CHECK(SSL_CTX_get_options(sctx) & SSL_OP_NO_TICKET);

	/* SNI api.example.test, hostname checked, ALPN h2 + http/1.1 offered. */
	CHECK(pair_open(&p, cctx, sctx));
	SSL_set_tlsext_host_name(p.c, "api.example.test");
	SSL_set1_host(p.c, "api.example.test");
	SSL_set_alpn_protos(p.c, (const unsigned char *)"\x02h2\x08http/1.1", 12);
	CHECK(pump(&p));
	CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_OK);
	CHECK(alpn_is(p.c, "http/1.1") && alpn_is(p.s, "http/1.1"));
	CHECK_EQ_STR(gw_tls_served_host(p.s), "api.example.test");
	peer = SSL_get1_peer_certificate(p.c);
	CHECK(peer != NULL);
	CHECK_EQ_STR(peer ? cn_of(peer, cn, sizeof cn) : "", "api.example.test");
	X509_free(peer);
	CHECK_EQ_INT(sk_X509_num(SSL_get_peer_cert_chain(p.c)), 2);   /* leaf + CA */
	CHECK(SSL_version(p.c) >= TLS1_2_VERSION);
	CHECK(round_trip(&p));
	CHECK(SSL_session_reused(p.c) == 0);
	pair_close(&p);

	/* The client checks a name the certificate does not carry: refused. */
	CHECK(pair_open(&p, cctx, sctx));
	SSL_set_tlsext_host_name(p.c, "api.example.test");
	SSL_set1_host(p.c, "wrong.example.test");
	CHECK(!pump(&p));
	CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_ERR_HOSTNAME_MISMATCH);
	pair_close(&p);

	/* h2 only: no ALPN, the handshake goes on. */
	CHECK(pair_open(&p, cctx, sctx));
	SSL_set_tlsext_host_name(p.c, "api.example.test");
	SSL_set_alpn_protos(p.c, (const unsigned char *)"\x02h2", 3);
	CHECK(pump(&p));
	CHECK(alpn_is(p.c, NULL));
	pair_close(&p);

	/* No SNI: the CONNECT host given before SSL_accept, here an IP. */
	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_set_default_host(p.s, "10.1.2.3", err, sizeof err), 0);
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(p.c), "10.1.2.3");
	CHECK(pump(&p));
	CHECK(SSL_get_servername(p.s, TLSEXT_NAMETYPE_host_name) == NULL);
	CHECK_EQ_STR(gw_tls_served_host(p.s), "10.1.2.3");
	CHECK(round_trip(&p));
	pair_close(&p);

	/* SNI wins over the default; the proxy sees both and compares. */
	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_set_default_host(p.s, "Connect.Example.Test", err, sizeof err), 0);
	SSL_set_tlsext_host_name(p.c, "api.example.test");
	SSL_set1_host(p.c, "api.example.test");
	CHECK(pump(&p));
	CHECK_EQ_STR(gw_tls_served_host(p.s), "api.example.test");
	pair_close(&p);

	/* No SNI and no default host: nothing to serve. */
	CHECK(pair_open(&p, cctx, sctx));
	CHECK(!pump(&p));
	CHECK(gw_tls_served_host(p.s) == NULL);
	pair_close(&p);

	/* An SNI we would not mint for. */
	CHECK(pair_open(&p, cctx, sctx));
	SSL_set_tlsext_host_name(p.c, "bad_host.example.test");
	CHECK(!pump(&p));
	pair_close(&p);

	/* A bad default host is refused up front. */
	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_set_default_host(p.s, "a..b", err, sizeof err), -EINVAL);
	pair_close(&p);

	/* TLS 1.1 is refused. */
	SSL_CTX_set_min_proto_version(cctx, TLS1_VERSION);
	SSL_CTX_set_max_proto_version(cctx, TLS1_1_VERSION);
	SSL_CTX_set_security_level(cctx, 0);
	CHECK(pair_open(&p, cctx, sctx));
	SSL_set_tlsext_host_name(p.c, "api.example.test");
	CHECK(!pump(&p));
	pair_close(&p);
out:
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
}

/* The server context keeps its CA alive after the caller's reference goes. */
static void test_server_ctx_holds_ca(void)
{
	setup_root();
	struct gw_ca *ca = NULL;
	SSL_CTX *sctx = NULL, *cctx = NULL;
	struct pair p;
	char err[256];

	CHECK_EQ_INT(gw_ca_new(&ca, err, sizeof err), 0);
	CHECK_EQ_INT(gw_tls_server_ctx(ca, &sctx, err, sizeof err), 0);
	gw_ca_free(ca);                                         /* sctx's reference remains */
	cctx = SSL_CTX_new(TLS_client_method());
	if (sctx == NULL || cctx == NULL)
		goto out;
	CHECK(pair_open(&p, cctx, sctx));                       /* verify off: any CA */
	SSL_set_tlsext_host_name(p.c, "held.example.test");
	CHECK(pump(&p));
	pair_close(&p);
out:
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
}

static void write_text(const char *name, const char *text)
{
	put_file(rootfd, name, text);
}

static void test_client_ctx(void)
{
	setup_root();
	SSL_CTX *cctx = NULL, *sctx = NULL, *plain = NULL, *fixed = NULL;
	struct gw_leaf *leaf = NULL;
	char err[512], path[PATH_MAX + 32];
	const char *files[2];
	struct pair p;

	/* Extra CA files that do not load, each named in the error. */
	files[0] = ca_path;
	files[1] = "/nonexistent/cairn-extra-ca.pem";
	err[0] = '\0';
	CHECK(gw_tls_client_ctx(files, 2, &cctx, err, sizeof err) == -ENOENT && cctx == NULL);
	CHECK(strstr(err, "/nonexistent/cairn-extra-ca.pem") != NULL);

	write_text("garbage.pem", "this is not a certificate\n");
	snprintf(path, sizeof path, "%s/garbage.pem", root);
	files[0] = path;
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), -EINVAL);
	CHECK(strstr(err, path) != NULL && strstr(err, "holds no certificate") != NULL);

	write_text("keyonly.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
	snprintf(path, sizeof path, "%s/keyonly.pem", root);
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), -EINVAL);
	CHECK(strstr(err, path) != NULL);

	write_text("damaged.pem", "-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n");
	snprintf(path, sizeof path, "%s/damaged.pem", root);
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), -EINVAL);
	CHECK(strstr(err, path) != NULL && strstr(err, "damaged") != NULL);
	CHECK(ERR_peek_error() == 0);                   /* the error queue is left clean */

	snprintf(path, sizeof path, "%s", root);        /* a directory */
	CHECK(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err) < 0 && strstr(err, root) != NULL);

	/* With no extra file our CA is not trusted: the system store is not enough. */
	CHECK_EQ_INT(gw_tls_server_ctx(the_ca, &sctx, err, sizeof err), 0);
	CHECK_EQ_INT(gw_tls_client_ctx(NULL, 0, &plain, err, sizeof err), 0);
	if (sctx != NULL && plain != NULL) {
		CHECK(pair_open(&p, plain, sctx));
		CHECK_EQ_INT(gw_tls_client_prepare(p.c, "api.example.test", err, sizeof err), 0);
		CHECK(!pump(&p));
		CHECK(SSL_get_verify_result(p.c) != X509_V_OK);
		pair_close(&p);
	}

	/* Our own CA PEM as the extra file: the upstream path end to end. */
	files[0] = ca_path;
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), 0);
	if (cctx == NULL || sctx == NULL)
		goto out;
	CHECK_EQ_INT(SSL_CTX_get_min_proto_version(cctx), TLS1_2_VERSION);
	CHECK_EQ_INT(SSL_CTX_get_verify_mode(cctx), SSL_VERIFY_PEER);

	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_client_prepare(p.c, "API.example.test", err, sizeof err), 0);
	CHECK(pump(&p));
	CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_OK);
	CHECK_EQ_STR(SSL_get_servername(p.s, TLSEXT_NAMETYPE_host_name), "api.example.test");
	CHECK(alpn_is(p.c, "http/1.1"));
	CHECK(round_trip(&p));
	pair_close(&p);

	/* IP literals: no SNI sent, the IP SAN checked. */
	for (int v6 = 0; v6 < 2; v6++) {
		const char *ip = v6 ? "::1" : "127.0.0.1";

		CHECK(pair_open(&p, cctx, sctx));
		CHECK_EQ_INT(gw_tls_set_default_host(p.s, ip, err, sizeof err), 0);
		CHECK_EQ_INT(gw_tls_client_prepare(p.c, ip, err, sizeof err), 0);
		CHECK(pump(&p));
		CHECK(SSL_get_servername(p.s, TLSEXT_NAMETYPE_host_name) == NULL);
		CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_OK);
		pair_close(&p);
	}

	/* The server presents a leaf for another IP than the one checked. */
	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_set_default_host(p.s, "127.0.0.2", err, sizeof err), 0);
	CHECK_EQ_INT(gw_tls_client_prepare(p.c, "127.0.0.1", err, sizeof err), 0);
	CHECK(!pump(&p));
	CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_ERR_IP_ADDRESS_MISMATCH);
	pair_close(&p);

	CHECK(pair_open(&p, cctx, sctx));
	CHECK_EQ_INT(gw_tls_client_prepare(p.c, "bad host", err, sizeof err), -EINVAL);
	pair_close(&p);

	/* An upstream presenting a trusted certificate for another name: a
	 * plain server with our leaf for other.example.test installed by hand. */
	CHECK_EQ_INT(gw_ca_leaf(the_ca, "other.example.test", &leaf, err, sizeof err), 0);
	fixed = SSL_CTX_new(TLS_server_method());
	if (leaf != NULL && fixed != NULL) {
		CHECK_EQ_INT(SSL_CTX_use_cert_and_key(fixed, gw_leaf_cert(leaf), gw_leaf_key(leaf),
						      gw_leaf_chain(leaf), 1), 1);
		CHECK(pair_open(&p, cctx, fixed));
		CHECK_EQ_INT(gw_tls_client_prepare(p.c, "api.example.test", err, sizeof err), 0);
		CHECK(!pump(&p));
		CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_ERR_HOSTNAME_MISMATCH);
		pair_close(&p);
		CHECK(pair_open(&p, cctx, fixed));          /* the control: the right name */
		CHECK_EQ_INT(gw_tls_client_prepare(p.c, "other.example.test", err, sizeof err), 0);
		CHECK(pump(&p));
		pair_close(&p);
	}
	gw_leaf_put(leaf);
	SSL_CTX_free(fixed);
out:
	SSL_CTX_free(plain);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
}

/* --- the upstream trust, built on first use -------------------------------- */

struct first_use {
	struct gw_upstream *u;          /* the racers ask u for the client side, */
	struct gw_server *sv;           /* or sv for the server side */
	pthread_barrier_t *go;
	SSL_CTX *peer;                  /* the other side of the handshake */
	SSL_CTX *got;
	int rc;
	long verify;                    /* the handshake's verify result, or -1 */
};

/* One of the racers: ask for the context with the others at once, then
 * use it in a handshake with the peer. */
static void *first_use_run(void *arg)
{
	struct first_use *f = arg;
	struct pair p = { .fd = { -1, -1 } };
	bool open;

	f->verify = -1;
	pthread_barrier_wait(f->go);
	f->rc = f->u ? gw_upstream_ctx(f->u, &f->got, NULL, 0) : gw_server_ctx(f->sv, &f->got,
										 NULL, 0);
	if (f->rc != 0)
		return NULL;
	open = f->u ? pair_open(&p, f->got, f->peer) : pair_open(&p, f->peer, f->got);
	if (open && gw_tls_client_prepare(p.c, "api.example.test", NULL, 0) == 0 && pump(&p))
		f->verify = SSL_get_verify_result(p.c);
	pair_close(&p);
	return NULL;
}

/* Racers for the first context of u (or sv); checks they got one and the
 * same context, each with verify result want (-1: the handshake failed). */
static void race_first_use(struct gw_upstream *u, struct gw_server *sv, SSL_CTX *peer,
			   long want)
{
	enum { N = 8 };
	struct first_use f[N];
	pthread_barrier_t go;
	pthread_t t[N];
	int started = 0, same = 0, verified = 0;

	CHECK_EQ_INT(pthread_barrier_init(&go, NULL, N), 0);
	for (int i = 0; i < N; i++) {
		f[i] = (struct first_use){ .u = u, .sv = sv, .go = &go, .peer = peer };
		if (pthread_create(&t[i], NULL, first_use_run, &f[i]) != 0)
			break;
		started++;
	}
	CHECK_EQ_INT(started, N);
	if (started != N)
		abort();                /* the others wait on the barrier for ever */
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < N; i++) {
		CHECK_EQ_INT(f[i].rc, 0);
		same += f[i].got != NULL && f[i].got == f[0].got;
		verified += f[i].verify == want;
	}
	CHECK_EQ_INT(same, N);          /* one context, built once */
	CHECK_EQ_INT(verified, N);      /* the same trust for each */
}

static void test_upstream_first_use(void)
{
	setup_root();
	struct gw_upstream *u = NULL, *bare = NULL;
	SSL_CTX *sctx = NULL, *again = NULL;
	char err[512], path[PATH_MAX + 32], *pem;
	const char *files[1] = { path };
	size_t n = 0;

	CHECK_EQ_INT(gw_tls_server_ctx(the_ca, &sctx, err, sizeof err), 0);
	pem = test_read_file(ca_path, &n);
	if (sctx == NULL || pem == NULL)
		goto out;
	/* Our CA as the extra file; read by gw_upstream_new, and only then. */
	write_text("upstream-extra.pem", pem);
	snprintf(path, sizeof path, "%s/upstream-extra.pem", root);
	CHECK_EQ_INT(gw_upstream_new(files, 1, &u, err, sizeof err), 0);
	if (u == NULL)
		goto out;
	CHECK(!gw_upstream_loaded(u));  /* nothing built, the system store not read */
	write_text("upstream-extra.pem", "this is not a certificate\n");

	race_first_use(u, NULL, sctx, X509_V_OK);
	CHECK(gw_upstream_loaded(u));
	CHECK_EQ_INT(gw_upstream_ctx(u, &again, err, sizeof err), 0);
	CHECK(again != NULL && SSL_CTX_get_verify_mode(again) == SSL_VERIFY_PEER);
	CHECK_EQ_INT(SSL_CTX_get_min_proto_version(again), TLS1_2_VERSION);
	CHECK(again != NULL && (SSL_CTX_get_options(again) & SSL_OP_IGNORE_UNEXPECTED_EOF) != 0);

	/* Without the extra file our CA is not trusted, by any of the racers. */
	CHECK_EQ_INT(gw_upstream_new(NULL, 0, &bare, err, sizeof err), 0);
	if (bare != NULL)
		race_first_use(bare, NULL, sctx, -1);

	/* A file read at gw_upstream_new refuses there, named (the box's start). */
	gw_upstream_free(bare);
	bare = NULL;
	CHECK_EQ_INT(gw_upstream_new(files, 1, &bare, err, sizeof err), -EINVAL);
	CHECK(bare == NULL);
	CHECK(strstr(err, path) != NULL && strstr(err, "holds no certificate") != NULL);
out:
	gw_upstream_free(u);
	gw_upstream_free(bare);
	SSL_CTX_free(sctx);
	free(pem);
}

/* The workload-side context, made by the first TLS connection. */
static void test_server_first_use(void)
{
	setup_root();
	struct gw_server *sv = NULL;
	SSL_CTX *cctx = NULL, *sctx = NULL;
	const char *files[1] = { ca_path };
	char err[512];

	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), 0);
	CHECK_EQ_INT(gw_server_new(the_ca, &sv, err, sizeof err), 0);
	if (cctx == NULL || sv == NULL)
		goto out;
	CHECK(!gw_server_loaded(sv));   /* nothing of libssl's server side made yet */
	race_first_use(NULL, sv, cctx, X509_V_OK);
	CHECK(gw_server_loaded(sv));
	CHECK_EQ_INT(gw_server_ctx(sv, &sctx, err, sizeof err), 0);
	CHECK(sctx != NULL && (SSL_CTX_get_options(sctx) & SSL_OP_IGNORE_UNEXPECTED_EOF) != 0);
	CHECK(sctx != NULL && (SSL_CTX_get_options(sctx) & SSL_OP_NO_TICKET) != 0);
out:
	gw_server_free(sv);             /* its reference to the CA goes; the_ca stays */
	CHECK(gw_ca_cert(the_ca) != NULL);
	SSL_CTX_free(cctx);
}

/* The CA file in two steps: present (empty, 0400) before the CA exists, so a
 * sandbox can bind it; complete and checked after the fill. */
static void test_cert_file_halves(void)
{
	setup_root();
	char err[256], *text;
	struct stat st;
	size_t n = 0;
	int d, fd;

	if ((d = mkdirat(rootfd, "halves", 0700)) == 0)
		d = openat(rootfd, "halves", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(d >= 0);
	if (d < 0)
		return;
	fd = gw_ca_create_cert_file(d, "cert.pem", err, sizeof err);
	CHECK(fd >= 0);
	CHECK(fstatat(d, "cert.pem", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	      st.st_size == 0 && (st.st_mode & 07777) == 0400);
	CHECK_EQ_INT(gw_ca_create_cert_file(d, "cert.pem", err, sizeof err), -EEXIST);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "cert.pem", err, sizeof err), -EINVAL);
	if (fd >= 0)
		CHECK_EQ_INT(gw_ca_fill_cert_file(the_ca, fd, d, "cert.pem", err, sizeof err), 0);
	CHECK_EQ_INT(gw_ca_check_cert_file(d, "cert.pem", err, sizeof err), 0);
	text = test_read_file(ca_path, &n);
	if (text != NULL) {
		int back = openat(d, "cert.pem", O_RDONLY | O_CLOEXEC);
		char buf[4096];
		ssize_t k = back >= 0 ? read(back, buf, sizeof buf) : -1;

		/* the same certificate setup_root wrote in one step */
		CHECK(k > 0 && (size_t)k == n && memcmp(buf, text, n) == 0);
		if (back >= 0)
			close(back);
	}
	free(text);
	CHECK_EQ_INT(mode_at(d, "cert.pem"), 0400);

	/* The name no longer holding the file written: the read-back refuses. */
	fd = gw_ca_create_cert_file(d, "gone.pem", err, sizeof err);
	CHECK(fd >= 0);
	CHECK_EQ_INT(unlinkat(d, "gone.pem", 0), 0);
	if (fd >= 0)
		CHECK_EQ_INT(gw_ca_fill_cert_file(the_ca, fd, d, "gone.pem", err, sizeof err),
			     -ENOENT);
	CHECK(strstr(err, "gone.pem") != NULL);
	CHECK_EQ_INT(gw_ca_create_cert_file(d, "a/b", err, sizeof err), -EINVAL);
	close(d);
}

/* --- the CA the supervisor mints (ca_mint.c) ------------------------------ */

/* A strict DER reader for the minted bytes: one-octet tags, lengths in
 * their shortest form, nothing past a value's end.  d2i_X509 takes some
 * encodings DER forbids; this says where the hand-written DER went wrong. */
struct tlv {
	unsigned tag;
	const unsigned char *v;                 /* the contents */
	size_t len;
};

static bool der_get(const unsigned char **p, const unsigned char *end, unsigned tag,
		    struct tlv *t)
{
	const unsigned char *q = *p;
	size_t len;

	if (end - q < 2 || *q != tag)
		return false;
	t->tag = *q++;
	len = *q++;
	if (len == 0x81) {
		if (end - q < 1 || *q < 0x80)
			return false;           /* the short form would do */
		len = *q++;
	} else if (len == 0x82) {
		if (end - q < 2 || q[0] == 0)
			return false;           /* 0x81 would do */
		len = (size_t)q[0] << 8 | q[1];
		q += 2;
	} else if (len >= 0x80) {
		return false;
	}
	if ((size_t)(end - q) < len)
		return false;
	t->v = q;
	t->len = len;
	*p = q + len;
	return true;
}

/* A non-negative INTEGER in its one DER form: no leading 0x00 but before a
 * high bit, no high bit of its own. */
static bool der_uint_ok(const struct tlv *t)
{
	return t->tag == 0x02 && t->len >= 1 && !(t->v[0] & 0x80) &&
	       !(t->len > 1 && t->v[0] == 0 && !(t->v[1] & 0x80));
}

static bool der_nonzero(const struct tlv *t)
{
	for (size_t i = 0; i < t->len; i++)
		if (t->v[i] != 0)
			return true;
	return false;
}

struct minted_parts {
	struct tlv serial, r, s;
	struct tlv point;                       /* the SPKI's uncompressed point, 65 octets */
	struct tlv priv, key_point;             /* from the ECPrivateKey */
	size_t sig_off, sig_len;                /* the signature BIT STRING's contents */
};

/* Walk a certificate of the shape ca_mint.h describes.  NULL when every
 * part is where and as it should be, else the part that is not. */
static const char *der_walk_cert(const unsigned char *c, size_t n, struct minted_parts *mp)
{
	const unsigned char *p = c, *end = c + n, *q, *qe, *r, *re;
	struct tlv cert, tbs, alg, sig, t, ver, talg, iss, val, subj, spki, exts, rs;

	if (!der_get(&p, end, 0x30, &cert) || p != end)
		return "Certificate SEQUENCE (or bytes after it)";
	q = cert.v, qe = cert.v + cert.len;
	if (!der_get(&q, qe, 0x30, &tbs) || !der_get(&q, qe, 0x30, &alg) ||
	    !der_get(&q, qe, 0x03, &sig) || q != qe)
		return "Certificate's three parts";
	r = tbs.v, re = tbs.v + tbs.len;
	if (!der_get(&r, re, 0xa0, &ver))
		return "version [0]";
	q = ver.v;
	if (!der_get(&q, ver.v + ver.len, 0x02, &t) || q != ver.v + ver.len || !der_uint_ok(&t) ||
	    t.len != 1 || t.v[0] != 2)
		return "version INTEGER 2";
	if (!der_get(&r, re, 0x02, &mp->serial) || !der_uint_ok(&mp->serial) ||
	    !der_nonzero(&mp->serial) || mp->serial.len > 20)
		return "serialNumber";
	if (!der_get(&r, re, 0x30, &talg) || talg.len != alg.len ||
	    memcmp(talg.v, alg.v, alg.len) != 0)
		return "tbsCertificate signature (the same as signatureAlgorithm)";
	if (!der_get(&r, re, 0x30, &iss) || !der_get(&r, re, 0x30, &val))
		return "issuer, validity";
	q = val.v, qe = val.v + val.len;
	for (int i = 0; i < 2; i++)
		if (!der_get(&q, qe, 0x17, &t) && !der_get(&q, qe, 0x18, &t))
			return "validity times";
	if (q != qe)
		return "validity: bytes after notAfter";
	if (!der_get(&r, re, 0x30, &subj) || subj.len != iss.len ||
	    memcmp(subj.v, iss.v, iss.len) != 0)
		return "subject (the same bytes as issuer)";
	if (!der_get(&r, re, 0x30, &spki))
		return "subjectPublicKeyInfo";
	q = spki.v, qe = spki.v + spki.len;
	if (!der_get(&q, qe, 0x30, &t) || !der_get(&q, qe, 0x03, &mp->point) || q != qe ||
	    mp->point.len != 66 || mp->point.v[0] != 0 || mp->point.v[1] != 0x04)
		return "subjectPublicKey: no unused bits, an uncompressed P-256 point";
	mp->point.v++, mp->point.len--;
	if (!der_get(&r, re, 0xa3, &exts) || r != re)
		return "extensions [3], last in tbsCertificate";
	q = exts.v;
	if (!der_get(&q, exts.v + exts.len, 0x30, &t) || q != exts.v + exts.len)
		return "Extensions SEQUENCE";
	if (sig.len < 1 || sig.v[0] != 0)
		return "signature BIT STRING: no unused bits";
	q = sig.v + 1, qe = sig.v + sig.len;
	if (!der_get(&q, qe, 0x30, &rs) || q != qe)
		return "Ecdsa-Sig-Value SEQUENCE";
	q = rs.v, qe = rs.v + rs.len;
	if (!der_get(&q, qe, 0x02, &mp->r) || !der_get(&q, qe, 0x02, &mp->s) || q != qe)
		return "Ecdsa-Sig-Value r, s";
	if (!der_uint_ok(&mp->r) || !der_nonzero(&mp->r) || mp->r.len > 33)
		return "signature r";
	if (!der_uint_ok(&mp->s) || !der_nonzero(&mp->s) || mp->s.len > 33)
		return "signature s";
	mp->sig_off = (size_t)(sig.v - c);
	mp->sig_len = sig.len;
	return NULL;
}

/* The ECPrivateKey of RFC 5915: version 1, the scalar in exactly 32
 * octets, the named curve, the public point. */
static const char *der_walk_key(const unsigned char *k, size_t n, struct minted_parts *mp)
{
	static const unsigned char p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01,
					      0x07 };
	const unsigned char *p = k, *end = k + n, *q, *qe;
	struct tlv seq, ver, params, pub;

	if (!der_get(&p, end, 0x30, &seq) || p != end)
		return "ECPrivateKey SEQUENCE (or bytes after it)";
	q = seq.v, qe = seq.v + seq.len;
	if (!der_get(&q, qe, 0x02, &ver) || !der_uint_ok(&ver) || ver.len != 1 || ver.v[0] != 1)
		return "version 1";
	if (!der_get(&q, qe, 0x04, &mp->priv) || mp->priv.len != 32 || !der_nonzero(&mp->priv))
		return "privateKey: 32 octets";
	if (!der_get(&q, qe, 0xa0, &params) || params.len != sizeof p256 ||
	    memcmp(params.v, p256, sizeof p256) != 0)
		return "parameters [0]: prime256v1";
	if (!der_get(&q, qe, 0xa1, &pub) || q != qe)
		return "publicKey [1], last";
	q = pub.v;
	if (!der_get(&q, pub.v + pub.len, 0x03, &mp->key_point) || q != pub.v + pub.len ||
	    mp->key_point.len != 66 || mp->key_point.v[0] != 0 || mp->key_point.v[1] != 0x04)
		return "publicKey BIT STRING: an uncompressed point";
	mp->key_point.v++, mp->key_point.len--;
	return NULL;
}

static bool mint_ok(struct gw_ca_minted *m, time_t now)
{
	char err[256];
	int rc = gw_ca_mint(m, now, err, sizeof err);

	if (rc != 0)
		fprintf(stderr, "gw_ca_mint: %d %s\n", rc, err);
	return rc == 0;
}

/* The certificate, parsed whole (NULL if anything is left over). */
static X509 *minted_x509(const struct gw_ca_minted *m)
{
	const unsigned char *p = m->cert;
	X509 *x = d2i_X509(NULL, &p, (long)m->cert_len);

	if (x != NULL && p != m->cert + m->cert_len) {
		X509_free(x);
		x = NULL;
	}
	ERR_clear_error();
	return x;
}

/* The key as ca.c reads it: d2i_ECPrivateKey, nothing left over. */
static EVP_PKEY *minted_key(const unsigned char *der, size_t n)
{
	const unsigned char *p = der;
	EC_KEY *ec = d2i_ECPrivateKey(NULL, &p, (long)n);
	EVP_PKEY *k = NULL;

	if (ec != NULL && p == der + n && (k = EVP_PKEY_new()) != NULL &&
	    EVP_PKEY_assign_EC_KEY(k, ec) == 1)
		ec = NULL;                      /* k owns it */
	else {
		EVP_PKEY_free(k);
		k = NULL;
	}
	EC_KEY_free(ec);
	ERR_clear_error();
	return k;
}

/* An ASN1_TIME as seconds since the epoch, or LLONG_MIN. */
static long long time_of(const ASN1_TIME *t)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return LLONG_MIN;
	return (long long)timegm(&tm);
}

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_sec = s };

	return timegm(&tm);
}

/* A DER encoding into a malloc'd buffer (*n its length), or NULL. */
#define I2D(fn, obj, n) i2d_dup((int (*)(const void *, unsigned char **))(fn), (obj), (n))
static unsigned char *i2d_dup(int (*fn)(const void *, unsigned char **), const void *obj,
			      size_t *n)
{
	unsigned char *der = NULL;
	int len = fn(obj, &der);

	*n = len > 0 ? (size_t)len : 0;
	return len > 0 ? der : NULL;
}

static bool same_der(int (*fn)(const void *, unsigned char **), const void *a, const void *b)
{
	size_t na, nb;
	unsigned char *da = i2d_dup(fn, a, &na), *db = i2d_dup(fn, b, &nb);
	bool same = da != NULL && db != NULL && na == nb && memcmp(da, db, na) == 0;

	OPENSSL_free(da);
	OPENSSL_free(db);
	return same;
}
#define SAME_DER(fn, a, b) same_der((int (*)(const void *, unsigned char **))(fn), (a), (b))

static bool ext_value_is(X509_EXTENSION *e, const unsigned char *v, size_t n)
{
	const ASN1_OCTET_STRING *d = X509_EXTENSION_get_data(e);

	return d != NULL && (size_t)ASN1_STRING_length(d) == n &&
	       memcmp(ASN1_STRING_get0_data(d), v, n) == 0;
}

/* The PEM as OpenSSL writes it: one block, base64 in lines of 64. */
static bool pem_shape(const char *pem)
{
	static const char head[] = "-----BEGIN CERTIFICATE-----\n";
	static const char tail[] = "-----END CERTIFICATE-----\n";
	const char *p, *body_end;
	size_t n = strlen(pem);

	if (n < sizeof head + sizeof tail || strncmp(pem, head, sizeof head - 1) != 0 ||
	    strcmp(pem + n - (sizeof tail - 1), tail) != 0)
		return false;
	body_end = pem + n - (sizeof tail - 1);
	for (p = pem + sizeof head - 1; p < body_end;) {
		const char *nl = memchr(p, '\n', (size_t)(body_end - p));
		size_t len = nl ? (size_t)(nl - p) : 0;

		if (nl == NULL || len == 0 || len > 64 || (len < 64 && nl + 1 != body_end))
			return false;           /* short only on the last line */
		for (size_t i = 0; i < len; i++)
			if (!(isalnum((unsigned char)p[i]) || p[i] == '+' || p[i] == '/' ||
			      p[i] == '='))
				return false;
		p = nl + 1;
	}
	return true;
}

static void test_mint_fields(void)
{
	setup_root();
	const time_t now = 1764547200;          /* 2025-12-01 00:00:00 UTC */
	static const int want_nid[] = { NID_basic_constraints, NID_key_usage,
					NID_subject_key_identifier };
	static const unsigned char ca_true[] = { 0x30, 0x03, 0x01, 0x01, 0xff };
	static const unsigned char usage[] = { 0x03, 0x02, 0x01, 0x86 };
	struct gw_ca_minted m, m2;
	struct minted_parts mp;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const char *bad, *bad_key;
	X509 *x = NULL, *x2 = NULL, *px = NULL;
	EVP_PKEY *k = NULL;
	BIO *bio = NULL;

	if (!mint_ok(&m, now) || !mint_ok(&m2, now)) {
		CHECK(0);
		return;
	}
	bad = der_walk_cert(m.cert, m.cert_len, &mp);
	if (bad != NULL)
		fprintf(stderr, "minted certificate: %s\n", bad);
	CHECK(bad == NULL);
	bad_key = der_walk_key(m.key, m.key_len, &mp);
	if (bad_key != NULL)
		fprintf(stderr, "minted key: %s\n", bad_key);
	CHECK(bad_key == NULL);

	x = minted_x509(&m);
	x2 = minted_x509(&m2);
	CHECK(x != NULL && x2 != NULL);
	if (x == NULL || x2 == NULL)
		goto out;
	CHECK_EQ_INT(X509_get_version(x), X509_VERSION_3);

	/* serial: positive, non-zero, 128 bits in the least octets that hold
	 * them (16, or 17 with the 0x00 before a high bit); another mint's differs */
	const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
	int bits = serial_bits(x);
	CHECK_EQ_INT(ASN1_STRING_type(sn), V_ASN1_INTEGER);
	CHECK(bits > 100 && bits <= 128);       /* fails by chance once in 2^28 */
	if (bad == NULL)
		CHECK_EQ_INT(mp.serial.len, bits / 8 + 1);
	CHECK(ASN1_INTEGER_cmp(sn, X509_get0_serialNumber(x2)) != 0);

	/* names: one CN, a UTF8String, issuer the same bytes as subject */
	X509_NAME *nm = X509_get_subject_name(x);
	CHECK_EQ_INT(X509_NAME_entry_count(nm), 1);
	if (X509_NAME_entry_count(nm) == 1) {
		X509_NAME_ENTRY *e = X509_NAME_get_entry(nm, 0);
		const ASN1_STRING *d = X509_NAME_ENTRY_get_data(e);

		CHECK_EQ_INT(OBJ_obj2nid(X509_NAME_ENTRY_get_object(e)), NID_commonName);
		CHECK_EQ_INT(ASN1_STRING_type(d), V_ASN1_UTF8STRING);
		CHECK(ASN1_STRING_length(d) == (int)strlen("cairn Ephemeral Egress CA") &&
		      memcmp(ASN1_STRING_get0_data(d), "cairn Ephemeral Egress CA",
			     strlen("cairn Ephemeral Egress CA")) == 0);
	}
	CHECK(SAME_DER(i2d_X509_NAME, X509_get_issuer_name(x), nm));

	/* validity: exactly an hour back and 30 days on */
	CHECK_EQ_INT(time_of(X509_get0_notBefore(x)), now - 3600);
	CHECK_EQ_INT(time_of(X509_get0_notAfter(x)), now + 30 * 86400);

	/* extensions: these three, in this order, nothing else */
	CHECK_EQ_INT(X509_get_ext_count(x), 3);
	for (int i = 0; i < 3 && i < X509_get_ext_count(x); i++)
		CHECK_EQ_INT(OBJ_obj2nid(X509_EXTENSION_get_object(X509_get_ext(x, i))),
			     want_nid[i]);
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
	CHECK(ext_critical(x, NID_basic_constraints));
	CHECK(bc != NULL && bc->ca && bc->pathlen == NULL);
	BASIC_CONSTRAINTS_free(bc);
	CHECK(ext_value_is(X509_get_ext(x, X509_get_ext_by_NID(x, NID_basic_constraints, -1)),
			   ca_true, sizeof ca_true));
	CHECK(ext_critical(x, NID_key_usage));
	CHECK_EQ_INT(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE | KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	CHECK(ext_value_is(X509_get_ext(x, X509_get_ext_by_NID(x, NID_key_usage, -1)), usage,
			   sizeof usage));
	CHECK(has_ext(x, NID_subject_key_identifier) &&
	      !ext_critical(x, NID_subject_key_identifier));
	const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(x);
	CHECK_EQ_INT(X509_pubkey_digest(x, EVP_sha1(), md, &mdlen), 1);
	CHECK(ski != NULL && mdlen == 20 && ASN1_STRING_length(ski) == 20 &&
	      memcmp(ASN1_STRING_get0_data(ski), md, 20) == 0);
	CHECK_EQ_INT(X509_check_ca(x), 1);

	/* signed with ecdsa-with-SHA256 (no parameters, RFC 5758) by its own key */
	const X509_ALGOR *sa;
	int ptype = -1;
	X509_get0_signature(NULL, &sa, x);
	X509_ALGOR_get0(NULL, &ptype, NULL, sa);
	CHECK_EQ_INT(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	CHECK_EQ_INT(ptype, V_ASN1_UNDEF);
	CHECK_EQ_INT(X509_ALGOR_cmp(sa, X509_get0_tbs_sigalg(x)), 0);
	CHECK(is_p256(X509_get0_pubkey(x)));
	CHECK_EQ_INT(X509_verify(x, X509_get0_pubkey(x)), 1);
	CHECK(X509_verify(x, X509_get0_pubkey(x2)) != 1);      /* the control: another key */
	ERR_clear_error();

	/* the key: P-256, valid, the certificate's; another mint's key differs */
	k = minted_key(m.key, m.key_len);
	CHECK(k != NULL && is_p256(k));
	if (k != NULL) {
		CHECK_EQ_INT(EC_KEY_check_key(EVP_PKEY_get0_EC_KEY(k)), 1);
		CHECK_EQ_INT(X509_check_private_key(x, k), 1);
		CHECK(X509_check_private_key(x2, k) != 1);
	}
	if (bad == NULL && bad_key == NULL)
		CHECK(mp.key_point.len == 65 && memcmp(mp.key_point.v, mp.point.v, 65) == 0);
	CHECK(EVP_PKEY_eq(X509_get0_pubkey(x), X509_get0_pubkey(x2)) != 1);
	ERR_clear_error();

	/* the PEM: the same DER, laid out as OpenSSL writes it, byte for byte */
	CHECK_EQ_INT(m.pem_len, strlen(m.pem));
	CHECK(pem_shape(m.pem));
	if ((bio = BIO_new_mem_buf(m.pem, (int)m.pem_len)) != NULL)
		px = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	CHECK(px != NULL);
	if (px != NULL) {
		size_t n = 0;
		unsigned char *der = I2D(i2d_X509, px, &n);

		CHECK(der != NULL && n == m.cert_len && memcmp(der, m.cert, n) == 0);
		OPENSSL_free(der);
	}
	if ((bio = BIO_new(BIO_s_mem())) != NULL && PEM_write_bio_X509(bio, x) == 1) {
		char *text;
		long n = BIO_get_mem_data(bio, &text);

		CHECK(n > 0 && (size_t)n == m.pem_len && memcmp(text, m.pem, m.pem_len) == 0);
	} else {
		CHECK(0);
	}
	BIO_free(bio);
out:
	X509_free(px);
	X509_free(x);
	X509_free(x2);
	EVP_PKEY_free(k);
	gw_ca_minted_wipe(&m);
	gw_ca_minted_wipe(&m2);
	ERR_clear_error();
}

/* The minted CA beside the one OpenSSL makes (gw_ca_new, ca.h's reference):
 * the same shape wherever randomness does not decide. */
static void test_mint_vs_openssl(void)
{
	setup_root();
	struct gw_ca_minted m;
	struct minted_parts mp;
	X509 *x = NULL, *o = gw_ca_cert(the_ca);
	X509_ALGOR *pa_x = NULL, *pa_o = NULL;
	unsigned char *der = NULL;
	size_t n = 0;
	const char *bad;
	int dx = 0, sx = 0, d_o = 0, s_o = 0;

	if (!mint_ok(&m, time(NULL)) || (x = minted_x509(&m)) == NULL) {
		CHECK(0);
		return;
	}
	/* The DER reader passes OpenSSL's own certificate: it checks DER, not
	 * our writer's habits. */
	der = I2D(i2d_X509, o, &n);
	bad = der != NULL ? der_walk_cert(der, n, &mp) : "i2d_X509";
	if (bad != NULL)
		fprintf(stderr, "gw_ca_new's certificate: %s\n", bad);
	CHECK(bad == NULL);
	OPENSSL_free(der);

	CHECK_EQ_INT(X509_get_version(x), X509_get_version(o));
	CHECK(SAME_DER(i2d_X509_NAME, X509_get_subject_name(x), X509_get_subject_name(o)));
	CHECK(SAME_DER(i2d_X509_NAME, X509_get_issuer_name(x), X509_get_issuer_name(o)));
	CHECK(SAME_DER(i2d_X509_ALGOR, X509_get0_tbs_sigalg(x), X509_get0_tbs_sigalg(o)));
	CHECK_EQ_INT(X509_get_signature_nid(x), X509_get_signature_nid(o));
	X509_PUBKEY_get0_param(NULL, NULL, NULL, &pa_x, X509_get_X509_PUBKEY(x));
	X509_PUBKEY_get0_param(NULL, NULL, NULL, &pa_o, X509_get_X509_PUBKEY(o));
	CHECK(pa_x != NULL && pa_o != NULL && SAME_DER(i2d_X509_ALGOR, pa_x, pa_o));
	CHECK_EQ_INT(ASN1_STRING_length(X509_get0_pubkey_bitstr(x)),
		     ASN1_STRING_length(X509_get0_pubkey_bitstr(o)));

	/* the same span, in the same time type */
	CHECK_EQ_INT(ASN1_TIME_diff(&dx, &sx, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
	CHECK_EQ_INT(ASN1_TIME_diff(&d_o, &s_o, X509_get0_notBefore(o), X509_get0_notAfter(o)), 1);
	CHECK_EQ_INT((long long)dx * 86400 + sx, (long long)d_o * 86400 + s_o);
	CHECK_EQ_INT((long long)dx * 86400 + sx, 30 * 86400 + 3600);
	CHECK_EQ_INT(ASN1_STRING_type(X509_get0_notBefore(x)),
		     ASN1_STRING_type(X509_get0_notBefore(o)));
	CHECK_EQ_INT(ASN1_STRING_type(X509_get0_notAfter(x)),
		     ASN1_STRING_type(X509_get0_notAfter(o)));

	/* the extensions, one by one: the same, but for the key identifier's bytes */
	CHECK_EQ_INT(X509_get_ext_count(x), X509_get_ext_count(o));
	for (int i = 0; i < X509_get_ext_count(x) && i < X509_get_ext_count(o); i++) {
		X509_EXTENSION *ex = X509_get_ext(x, i), *eo = X509_get_ext(o, i);
		const ASN1_OCTET_STRING *vx = X509_EXTENSION_get_data(ex);
		const ASN1_OCTET_STRING *vo = X509_EXTENSION_get_data(eo);
		int nid = OBJ_obj2nid(X509_EXTENSION_get_object(ex));

		CHECK_EQ_INT(nid, OBJ_obj2nid(X509_EXTENSION_get_object(eo)));
		CHECK_EQ_INT(X509_EXTENSION_get_critical(ex), X509_EXTENSION_get_critical(eo));
		if (nid == NID_subject_key_identifier)
			CHECK_EQ_INT(ASN1_STRING_length(vx), ASN1_STRING_length(vo));
		else
			CHECK_EQ_INT(ASN1_STRING_cmp(vx, vo), 0);
	}
	CHECK_EQ_INT(X509_get_key_usage(x), X509_get_key_usage(o));
	CHECK_EQ_INT(X509_check_ca(x), X509_check_ca(o));
	/* what OpenSSL concludes from them all (CA, self-signed, key usage...) */
	CHECK_EQ_INT(X509_get_extension_flags(x), X509_get_extension_flags(o));
	X509_free(x);
	gw_ca_minted_wipe(&m);
	ERR_clear_error();
}

/* One validity time: the instant and the ASN.1 type RFC 5280 §4.1.2.5 wants
 * (UTCTime through 2049, GeneralizedTime before 1950 and from 2050), in the
 * very bytes ASN1_TIME_set writes for it. */
static void check_time(const ASN1_TIME *got, time_t want, int type)
{
	ASN1_TIME *ref = ASN1_TIME_set(NULL, want);

	CHECK_EQ_INT(time_of(got), (long long)want);
	CHECK_EQ_INT(ASN1_STRING_type(got), type);
	CHECK_EQ_INT(ASN1_STRING_length(got), type == V_ASN1_UTCTIME ? 13 : 15);
	CHECK(ref != NULL && ASN1_STRING_cmp(got, ref) == 0);
	ASN1_TIME_free(ref);
}

static void test_mint_times(void)
{
	setup_root();
	const struct {
		time_t now;
		int before, after;              /* the types of notBefore, notAfter */
	} cases[] = {
		{ utc(2030, 6, 15, 12, 34, 56), V_ASN1_UTCTIME, V_ASN1_UTCTIME },
		/* notAfter 2050-01-19 */
		{ utc(2049, 12, 20, 0, 0, 0), V_ASN1_UTCTIME, V_ASN1_GENERALIZEDTIME },
		/* notAfter 2050-01-01 00:00:00, then a second before */
		{ utc(2050, 1, 1, 0, 0, 0) - 30 * 86400, V_ASN1_UTCTIME, V_ASN1_GENERALIZEDTIME },
		{ utc(2050, 1, 1, 0, 0, 0) - 30 * 86400 - 1, V_ASN1_UTCTIME, V_ASN1_UTCTIME },
		{ utc(1949, 6, 1, 0, 0, 0), V_ASN1_GENERALIZEDTIME, V_ASN1_GENERALIZEDTIME },
		/* notBefore 1950-01-01 00:00:00 */
		{ utc(1950, 1, 1, 1, 0, 0), V_ASN1_UTCTIME, V_ASN1_UTCTIME },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gw_ca_minted m;
		struct gw_ca *ca = NULL;
		char err[256];
		X509 *x;

		if (!mint_ok(&m, cases[i].now) || (x = minted_x509(&m)) == NULL) {
			fprintf(stderr, "mint at %lld\n", (long long)cases[i].now);
			CHECK(0);
			continue;
		}
		check_time(X509_get0_notBefore(x), cases[i].now - 3600, cases[i].before);
		check_time(X509_get0_notAfter(x), cases[i].now + 30 * 86400, cases[i].after);
		CHECK_EQ_INT(X509_verify(x, X509_get0_pubkey(x)), 1);
		CHECK_EQ_INT(gw_ca_from_der(m.key, m.key_len, m.cert, m.cert_len, &ca, err,
					    sizeof err), 0);
		gw_ca_free(ca);
		X509_free(x);
		gw_ca_minted_wipe(&m);
	}
	ERR_clear_error();
}

/* gw_ca_from_der refuses, changes nothing and leaves no OpenSSL error. */
static int from_der_refused(const unsigned char *key, size_t key_len, const unsigned char *cert,
			    size_t cert_len, const char *what)
{
	struct gw_ca *ca = NULL;
	char err[256] = "";
	int rc = gw_ca_from_der(key, key_len, cert, cert_len, &ca, err, sizeof err);
	bool ok = rc == -EINVAL && ca == NULL && strncmp(err, "gateway CA: ", 12) == 0 &&
		  ERR_peek_error() == 0;

	if (!ok)
		fprintf(stderr, "gw_ca_from_der, %s: rc %d, \"%s\"%s\n", what, rc, err,
			ca != NULL ? ", a CA made" : "");
	gw_ca_free(ca);
	ERR_clear_error();
	return ok;
}

enum ss_kind { SS_CA, SS_NOT_CA, SS_KU_ONLY, SS_V1 };

static bool add_ext_text(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, v3, nid, value);
	bool ok = e != NULL && X509_add_ext(x, e, -1) == 1;

	X509_EXTENSION_free(e);
	return ok;
}

/* A self-signed certificate over k, made here with OpenSSL: a CA's
 * (the control), one with CA:FALSE, one whose keyUsage has keyCertSign
 * but that has no basicConstraints (X509_check_ca says 4), a v1 one (3).
 * Its DER and k's ECPrivateKey DER, malloc'd by OpenSSL. */
static bool self_signed(EVP_PKEY *k, enum ss_kind kind, unsigned char **cert, size_t *cert_len,
			unsigned char **key, size_t *key_len)
{
	X509 *x = X509_new();
	X509V3_CTX v3;
	bool ok = false;
	const char *bc = kind == SS_CA ? "critical,CA:TRUE" : "critical,CA:FALSE";

	*cert = *key = NULL;
	if (x == NULL ||
	    X509_set_version(x, kind == SS_V1 ? X509_VERSION_1 : X509_VERSION_3) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), 7) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL || X509_set_pubkey(x, k) != 1 ||
	    X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, MBSTRING_ASC,
				       (const unsigned char *)"test self-signed", -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
		goto out;
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (kind != SS_V1) {
		const char *ku = "critical,keyCertSign,cRLSign,digitalSignature";

		if ((kind != SS_KU_ONLY && !add_ext_text(x, &v3, NID_basic_constraints, bc)) ||
		    !add_ext_text(x, &v3, NID_key_usage, ku))
			goto out;
	}
	if (X509_sign(x, k, EVP_sha256()) <= 0)
		goto out;
	*cert = I2D(i2d_X509, x, cert_len);
	*key = I2D(i2d_PrivateKey, k, key_len);
	ok = *cert != NULL && *key != NULL;
out:
	X509_free(x);
	ERR_clear_error();
	return ok;
}

static void test_mint_from_der(void)
{
	setup_root();
	struct gw_ca_minted m, other;
	struct minted_parts mp;
	struct gw_ca *ca = NULL;
	struct gw_leaf *leaf = NULL;
	unsigned char buf[GW_CA_CERT_DER_MAX + 1], kbuf[GW_CA_KEY_DER_MAX + 1];
	char err[256];
	int refused = 0, tries = 0;

	if (!mint_ok(&m, time(NULL)) || !mint_ok(&other, time(NULL)) ||
	    der_walk_cert(m.cert, m.cert_len, &mp) != NULL) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(gw_ca_from_der(m.key, m.key_len, m.cert, m.cert_len, &ca, err, sizeof err), 0);
	CHECK(ca != NULL && ERR_peek_error() == 0);
	if (ca != NULL) {
		X509 *x = minted_x509(&m);

		CHECK(x != NULL && X509_cmp(gw_ca_cert(ca), x) == 0);
		X509_free(x);
	}

	/* one byte of the signature changed, wherever it is, either way */
	for (size_t i = mp.sig_off; i < mp.sig_off + mp.sig_len; i++)
		for (int mask = 0x01; mask <= 0x80; mask <<= 7) {
			char what[64];

			memcpy(buf, m.cert, m.cert_len);
			buf[i] ^= (unsigned char)mask;
			snprintf(what, sizeof what, "signature byte %zu ^ 0x%02x", i, mask);
			refused += from_der_refused(m.key, m.key_len, buf, m.cert_len, what);
			tries++;
		}
	CHECK_EQ_INT(refused, tries);
	CHECK_EQ_INT(tries, 2 * (int)mp.sig_len);
	/* ... or of what it signs (the last byte of the CN) */
	{
		const unsigned char *cn = memmem(m.cert, m.cert_len, "Egress CA", 9);

		CHECK(cn != NULL);
		memcpy(buf, m.cert, m.cert_len);
		if (cn != NULL)
			buf[cn - m.cert + 8] ^= 0x01;
		CHECK(from_der_refused(m.key, m.key_len, buf, m.cert_len, "the CN changed"));
	}

	CHECK(from_der_refused(other.key, other.key_len, m.cert, m.cert_len, "another mint's key"));
	CHECK(from_der_refused(m.key, m.key_len, other.cert, other.cert_len,
			       "another mint's cert"));
	memcpy(buf, m.cert, m.cert_len);
	buf[m.cert_len] = 0;
	CHECK(from_der_refused(m.key, m.key_len, buf, m.cert_len + 1, "a byte after the cert"));
	CHECK(from_der_refused(m.key, m.key_len, m.cert, m.cert_len - 1, "the cert cut short"));
	memcpy(kbuf, m.key, m.key_len);
	kbuf[m.key_len] = 0;
	CHECK(from_der_refused(kbuf, m.key_len + 1, m.cert, m.cert_len, "a byte after the key"));
	CHECK(from_der_refused(m.key, m.key_len - 1, m.cert, m.cert_len, "the key cut short"));
	CHECK(from_der_refused(m.key, 0, m.cert, m.cert_len, "an empty key"));
	CHECK(from_der_refused(m.key, m.key_len, m.cert, 0, "an empty cert"));
	CHECK(from_der_refused(m.cert, m.cert_len, m.key, m.key_len, "key and cert swapped"));

	/* a leaf, with its own key: not a CA, and not self-signed */
	if (ca != NULL)
		CHECK_EQ_INT(gw_ca_leaf(ca, "leaf.example.test", &leaf, err, sizeof err), 0);
	if (leaf != NULL) {
		size_t cl = 0, kl = 0;
		unsigned char *c = I2D(i2d_X509, gw_leaf_cert(leaf), &cl);
		unsigned char *k = I2D(i2d_PrivateKey, gw_leaf_key(leaf), &kl);

		CHECK(c != NULL && k != NULL);
		if (c != NULL && k != NULL)
			CHECK(from_der_refused(k, kl, c, cl, "a leaf and its key"));
		if (c != NULL)
			CHECK(from_der_refused(m.key, m.key_len, c, cl, "a leaf and the CA's key"));
		OPENSSL_free(c);
		OPENSSL_free(k);
	}
	gw_leaf_put(leaf);

	/* self-signed with a P-256 key of its own: only a CA's certificate
	 * (basicConstraints CA:TRUE) passes; the control passes */
	{
		static const char *const what[] = { "a self-signed CA (the control)",
						    "a self-signed CA:FALSE",
						    "keyCertSign without basicConstraints",
						    "a v1 self-signed" };
		EVP_PKEY *k = EVP_EC_gen("P-256");

		CHECK(k != NULL);
		for (int kind = SS_CA; k != NULL && kind <= SS_V1; kind++) {
			unsigned char *c, *kd;
			size_t cl, kl;
			struct gw_ca *got = NULL;

			CHECK(self_signed(k, (enum ss_kind)kind, &c, &cl, &kd, &kl));
			if (c != NULL && kd != NULL && kind == SS_CA) {
				CHECK_EQ_INT(gw_ca_from_der(kd, kl, c, cl, &got, err, sizeof err),
					     0);
				gw_ca_free(got);
			} else if (c != NULL && kd != NULL) {
				CHECK(from_der_refused(kd, kl, c, cl, what[kind]));
			}
			OPENSSL_free(c);
			OPENSSL_free(kd);
		}
		EVP_PKEY_free(k);
		/* a CA on another curve */
		k = EVP_EC_gen("P-384");
		if (k != NULL) {
			unsigned char *c, *kd;
			size_t cl, kl;

			CHECK(self_signed(k, SS_CA, &c, &cl, &kd, &kl));
			if (c != NULL && kd != NULL)
				CHECK(from_der_refused(kd, kl, c, cl, "a P-384 CA"));
			OPENSSL_free(c);
			OPENSSL_free(kd);
		}
		EVP_PKEY_free(k);
	}
	gw_ca_free(ca);
	gw_ca_minted_wipe(&m);
	gw_ca_minted_wipe(&other);
	ERR_clear_error();
}

/* Leaves of a loaded CA verify against the PEM the workload trusts, in a
 * store and over TLS through the gateway's two contexts. */
static void test_mint_leaf(void)
{
	setup_root();
	struct gw_ca_minted m, other;
	struct gw_ca *ca = NULL;
	struct gw_leaf *leaf = NULL;
	X509 *trust = NULL, *stranger;
	SSL_CTX *sctx = NULL, *cctx = NULL;
	BIO *bio;
	char err[512], path[PATH_MAX + 32];
	const char *files[1] = { path };
	struct pair p;

	if (!mint_ok(&m, time(NULL)) || !mint_ok(&other, time(NULL))) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(gw_ca_from_der(m.key, m.key_len, m.cert, m.cert_len, &ca, err, sizeof err), 0);
	if ((bio = BIO_new_mem_buf(m.pem, (int)m.pem_len)) != NULL)
		trust = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	stranger = minted_x509(&other);
	CHECK(ca != NULL && trust != NULL && stranger != NULL);
	if (ca == NULL || trust == NULL || stranger == NULL)
		goto out;
	CHECK_EQ_INT(gw_ca_leaf(ca, "API.example.test", &leaf, err, sizeof err), 0);
	if (leaf == NULL)
		goto out;
	CHECK_EQ_INT(verify_leaf(trust, gw_leaf_cert(leaf), "api.example.test", false), X509_V_OK);
	CHECK_EQ_INT(verify_leaf(trust, gw_leaf_cert(leaf), "other.example.test", false),
		     X509_V_ERR_HOSTNAME_MISMATCH);
	CHECK(verify_leaf(stranger, gw_leaf_cert(leaf), "api.example.test", false) != X509_V_OK);
	CHECK(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(gw_leaf_cert(leaf)),
				    X509_get0_subject_key_id(trust)) == 0);
	CHECK(secs_from_now(X509_get0_notAfter(gw_leaf_cert(leaf))) > 6 * 86400 &&
	      secs_from_now(X509_get0_notAfter(gw_leaf_cert(leaf))) <= 7 * 86400);
	CHECK(sk_X509_num(gw_leaf_chain(leaf)) == 1 &&
	      X509_cmp(sk_X509_value(gw_leaf_chain(leaf), 0), trust) == 0);

	/* the PEM as the workload's CA file: a handshake through the gateway's
	 * server context on the loaded CA */
	write_text("minted.pem", m.pem);
	snprintf(path, sizeof path, "%s/minted.pem", root);
	CHECK_EQ_INT(gw_tls_server_ctx(ca, &sctx, err, sizeof err), 0);
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), 0);
	if (sctx != NULL && cctx != NULL) {
		CHECK(pair_open(&p, cctx, sctx));
		CHECK_EQ_INT(gw_tls_client_prepare(p.c, "api.example.test", err, sizeof err), 0);
		CHECK(pump(&p));
		CHECK_EQ_INT(SSL_get_verify_result(p.c), X509_V_OK);
		CHECK(round_trip(&p));
		pair_close(&p);
	}
out:
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	gw_leaf_put(leaf);
	X509_free(trust);
	X509_free(stranger);
	gw_ca_free(ca);
	gw_ca_minted_wipe(&m);
	gw_ca_minted_wipe(&other);
	ERR_clear_error();
}

/* Many mints: an INTEGER written wrong only when its top octet is zero or
 * has its high bit set (r, s, the serial, the key) shows up in some of
 * them.  The counts check both sides of the 0x00 padding were seen: each
 * of r, s and the serial has its high bit set with odds 1/2, so 200 mints
 * fall outside [50, 150] with odds below 1e-12. */
static void test_mint_many(void)
{
	setup_root();
	enum { N = 200 };
	static unsigned char serials[N][17];
	static size_t serial_len[N];
	int bad = 0, s17 = 0, s_short = 0, r33 = 0, ss33 = 0, dup = 0;
	double t0, spent = 0;

	for (int i = 0; i < N; i++) {
		struct gw_ca_minted m;
		struct minted_parts mp;
		struct gw_ca *ca = NULL;
		const char *why = NULL;
		EVP_PKEY *k = NULL;
		X509 *x = NULL;
		char err[256];

		t0 = now_us();
		if (!mint_ok(&m, time(NULL))) {
			bad++;
			continue;
		}
		spent += now_us() - t0;
		if ((why = der_walk_cert(m.cert, m.cert_len, &mp)) == NULL)
			why = der_walk_key(m.key, m.key_len, &mp);
		if (why == NULL && ((x = minted_x509(&m)) == NULL ||
				    X509_verify(x, X509_get0_pubkey(x)) != 1))
			why = "d2i_X509 / X509_verify";
		if (why == NULL && ((k = minted_key(m.key, m.key_len)) == NULL ||
				    X509_check_private_key(x, k) != 1))
			why = "d2i_ECPrivateKey / X509_check_private_key";
		if (why == NULL && gw_ca_from_der(m.key, m.key_len, m.cert, m.cert_len, &ca, err,
						  sizeof err) != 0)
			why = err;
		if (why != NULL) {
			fprintf(stderr, "mint %d: %s\n", i, why);
			bad++;
		} else {
			s17 += mp.serial.len == 17;
			s_short += mp.serial.len < 16;
			r33 += mp.r.len == 33;
			ss33 += mp.s.len == 33;
			serial_len[i] = mp.serial.len;
			memcpy(serials[i], mp.serial.v, mp.serial.len);
			for (int j = 0; j < i; j++)
				dup += serial_len[j] == serial_len[i] &&
				       memcmp(serials[j], serials[i], serial_len[i]) == 0;
		}
		gw_ca_free(ca);
		EVP_PKEY_free(k);
		X509_free(x);
		gw_ca_minted_wipe(&m);
		ERR_clear_error();
	}
	printf("# mint the CA (Nettle, P-256 key + signature, DER, PEM): %.1f us\n", spent / N);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(dup, 0);
	CHECK(s17 >= 50 && s17 <= 150);
	CHECK(r33 >= 50 && r33 <= 150);
	CHECK(ss33 >= 50 && ss33 <= 150);
	CHECK(s_short <= 10);                   /* 16 octets but for a zero top octet (1/256) */
	if (!(s17 >= 50 && s17 <= 150 && r33 >= 50 && r33 <= 150 && ss33 >= 50 && ss33 <= 150))
		fprintf(stderr, "17-octet serials %d, 33-octet r %d, s %d of %d\n", s17, r33, ss33,
			N);
}

/* --- costs (printed, not checked) ----------------------------------------- */

/* n handshakes through the gateway's client and server contexts, to host or
 * (host == NULL) a new host each; prints the mean, all and server side. */
static void time_handshakes(SSL_CTX *cctx, SSL_CTX *sctx, const char *host, int n)
{
	struct pair p;
	char name[64];
	double server = 0, t0, ts;
	int ok = 0;

	t0 = now_us();
	for (int i = 0; i < n; i++) {
		bool cd = false, sd = false, alive = true;

		snprintf(name, sizeof name, "hs%d.example.test", i);
		if (pair_open(&p, cctx, sctx) &&
		    gw_tls_client_prepare(p.c, host ? host : name, NULL, 0) == 0) {
			for (int k = 0; k < 100 && alive && !(cd && sd); k++) {
				alive = step(p.c, &cd);
				ts = now_us();
				alive = alive && step(p.s, &sd);
				server += now_us() - ts;
			}
			ok += cd && sd;
		}
		pair_close(&p);
	}
	printf("# full handshake over a socketpair (TLS 1.3, X25519, ECDSA P-256 leaf, client "
	       "verifying), %s: %.1f us in all, %.1f us of it in the server\n",
	       host ? "one host (leaf cached)" : "a new host each (leaf minted)",
	       (now_us() - t0) / n, server / n);
	CHECK_EQ_INT(ok, n);
}

static void test_costs(void)
{
	setup_root();
	struct gw_ca *ca = NULL;
	SSL_CTX *sctx = NULL, *cctx = NULL;
	const char *files[1] = { ca_path };
	struct gw_leaf *l;
	char err[256], host[64];
	int n = 200, ok = 0;
	double t0;

	CHECK_EQ_INT(gw_ca_new(&ca, err, sizeof err), 0);
	if (ca == NULL)
		return;
	t0 = now_us();
	for (int i = 0; i < n; i++) {
		snprintf(host, sizeof host, "bench%d.example.test", i);
		if (gw_ca_leaf(ca, host, &l, err, sizeof err) == 0) {
			ok++;
			gw_leaf_put(l);
		}
	}
	printf("# mint one leaf (P-256 key + sign, cache miss): %.1f us\n", (now_us() - t0) / n);
	CHECK_EQ_INT(ok, n);
	t0 = now_us();
	for (int i = 0; i < 100000; i++)
		if (gw_ca_leaf(ca, "bench199.example.test", &l, err, sizeof err) == 0)
			gw_leaf_put(l);
	printf("# cached leaf lookup: %.3f us\n", (now_us() - t0) / 100000);
	gw_ca_free(ca);

	CHECK_EQ_INT(gw_tls_server_ctx(the_ca, &sctx, err, sizeof err), 0);
	CHECK_EQ_INT(gw_tls_client_ctx(files, 1, &cctx, err, sizeof err), 0);
	if (sctx != NULL && cctx != NULL) {
		time_handshakes(cctx, sctx, "bench.example.test", n);
		time_handshakes(cctx, sctx, NULL, n);
	}
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
}

static void test_teardown(void)
{
	CHECK(ERR_peek_error() == 0);           /* no call left an error queued */
}

static void test_setup(void)
{
	setup_root();
	CHECK(the_ca != NULL);
}

static const struct test_case tests[] = {
	{ "setup", test_setup },
	{ "host_normalize", test_host_normalize },
	{ "ca_cert", test_ca_cert },
	{ "pem_write", test_pem_write },
	{ "leaf_verify", test_leaf_verify },
	{ "cache", test_cache },
	{ "cache_threads", test_cache_threads },
	{ "handshake", test_handshake },
	{ "server_ctx_holds_ca", test_server_ctx_holds_ca },
	{ "client_ctx", test_client_ctx },
	{ "upstream_first_use", test_upstream_first_use },
	{ "server_first_use", test_server_first_use },
	{ "cert_file_halves", test_cert_file_halves },
	{ "mint_fields", test_mint_fields },
	{ "mint_vs_openssl", test_mint_vs_openssl },
	{ "mint_times", test_mint_times },
	{ "mint_from_der", test_mint_from_der },
	{ "mint_leaf", test_mint_leaf },
	{ "mint_many", test_mint_many },
	{ "costs", test_costs },
	{ "teardown", test_teardown },
};

TEST_MAIN(tests)
