/* ca_mint.h - the run's CA, minted by the supervisor (docs/egress.md "TLS",
 * "Two processes").
 *
 * ECDSA P-256 with Nettle: no TLS library in the supervisor, and none of
 * OpenSSL's start (its first key and signature cost some 3.5 ms, measured)
 * on the way to the workload.  The certificate is the one ca.h describes:
 * self-signed X.509v3, CN GW_CA_CN, a 128-bit random serial, valid from
 * GW_CA_BACKDATE seconds ago for GW_CA_DAYS days, basicConstraints critical
 * CA:TRUE, keyUsage critical digitalSignature|keyCertSign|cRLSign,
 * subjectKeyIdentifier the SHA-1 of the public key (RFC 5280 §4.2.1.2 (1)).
 * The key goes to the gateway process over its control channel and nowhere
 * else; the certificate to trust/cert.pem (cert_file.h). */
#ifndef CAIRN_GW_CA_MINT_H
#define CAIRN_GW_CA_MINT_H

#include <stddef.h>
#include <string.h>
#include <time.h>

/* Subject CN of our CA.  Box's is "Strands Box Ephemeral Egress CA"; no
 * client pins either name, so ours says what it is. */
#define GW_CA_CN "cairn Ephemeral Egress CA"
#define GW_CA_DAYS 30
#define GW_CA_BACKDATE 3600             /* clocks a little behind still accept it */

#define GW_CA_KEY_DER_MAX 160
#define GW_CA_CERT_DER_MAX 1024
#define GW_CA_PEM_MAX 1600

struct gw_ca_minted {
	unsigned char key[GW_CA_KEY_DER_MAX];   /* ECPrivateKey (RFC 5915), DER */
	size_t key_len;
	unsigned char cert[GW_CA_CERT_DER_MAX]; /* the certificate, DER */
	size_t cert_len;
	char pem[GW_CA_PEM_MAX];                /* the certificate, PEM, NUL-terminated */
	size_t pem_len;
};

/* Mint a CA valid from now - GW_CA_BACKDATE.  0, or -EIO (no randomness,
 * a signature that failed) with err. */
int gw_ca_mint(struct gw_ca_minted *m, time_t now, char *err, size_t errlen);

/* Wipe the key (and the rest). */
static inline void gw_ca_minted_wipe(struct gw_ca_minted *m)
{
	explicit_bzero(m, sizeof(*m));
}

#endif
