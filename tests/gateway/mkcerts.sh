#!/usr/bin/env bash
# The gateway suite's PKI, made with the openssl CLI:
#   ca.pem/ca.key          "cairn gateway test CA" (the gateway's upstream trust,
#                          [gateway] extra_ca_files)
#   leaf.pem/leaf.key      one upstream leaf, signed by the CA, for every name the
#                          suite serves: api.test, other.test, git.test,
#                          s3.us-east-1.amazonaws.com,
#                          bedrock-runtime.us-west-2.amazonaws.com, IP 127.0.0.1
#                          (wrong.test is deliberately absent: hostname checks)
#   rogue-ca.pem, rogue.pem/rogue.key
#                          a second CA the gateway does not trust, and a leaf
#                          for untrusted.test signed by it
# Usage: tests/gateway/mkcerts.sh OUTDIR
set -euo pipefail
out=$1
mkdir -p "$out"
cd "$out"
days=7

ca() {  # ca NAME CN
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
		-keyout "$1.key" -out "$1.pem" -days "$days" -subj "/CN=$2" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-addext "subjectKeyIdentifier=hash" 2>/dev/null
}
leaf() {  # leaf NAME CA CN SAN
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
		-keyout "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
	cat > "$1.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
subjectAltName=$4
EXT
	openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
		-days "$days" -sha256 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}

ca ca "cairn gateway test CA"
leaf leaf ca api.test "DNS:api.test,DNS:other.test,DNS:git.test,DNS:s3.us-east-1.amazonaws.com,DNS:bedrock-runtime.us-west-2.amazonaws.com,IP:127.0.0.1"
ca rogue-ca "cairn gateway rogue CA"
leaf rogue rogue-ca untrusted.test "DNS:untrusted.test"
openssl verify -CAfile ca.pem leaf.pem >/dev/null
openssl verify -CAfile rogue-ca.pem rogue.pem >/dev/null
