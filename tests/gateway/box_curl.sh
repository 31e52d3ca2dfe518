#!/bin/bash
# Runs inside the box (clients.sh's "curl" run): curl through the gateway, each
# case's status, headers, body and exit code written to OUT for clients.sh to
# check.  Usage (in the box): box_curl.sh PARAMS.sh   (sets P, H, DOWN, OUT)
set -u
. "$1"
mkdir -p "$OUT"
cd "$OUT"

# c NAME CURL-ARGS...: one transfer; NAME.{w,hdr,body,err,rc}
c() {
	local name=$1; shift
	curl -sS --max-time 60 -o "$name.body" -D "$name.hdr" \
		-w '%{http_code} %{http_connect} %{num_connects}\n' "$@" >"$name.w" 2>"$name.err"
	echo $? >"$name.rc"
}

A=https://api.test:$P
env >env.txt
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' >proc-environ.txt
cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' >proc-cmdline.txt

# permits, keep-alive, plain HTTP
c get "$A/echo/curl/get?x=1"
c post -H 'Content-Type: application/json' --data-binary '{"hello":"cairn"}' "$A/echo/curl/post"
c head -I "$A/echo/curl/head"
curl -sS --max-time 30 -o ka1.body -o ka2.body -w '%{http_code} %{num_connects}\n' \
	"$A/echo/curl/ka1" "$A/echo/curl/ka2" >ka.w 2>ka.err
c plain "http://api.test:$H/echo/curl/plain?q=1"
c plainhost -H 'Host: other.test' "http://api.test:$H/echo/curl/plainhost"

# denials
c deny -X DELETE "$A/echo/curl/del"
c forbid "$A/admin/curl?token=1"
c canon --path-as-is "$A/echo/%2e%2e/admin/canon"
c otherhost "https://other.test:$P/echo/curl/other"
c blocked "https://blocked.test:$P/echo/curl/blocked"
c plaindeny -X POST -d x "http://api.test:$H/echo/curl/plainpost"
c authority -H "Host: other.test:$P" "$A/echo/curl/authority"
c down "https://down.test:$DOWN/echo/curl/down"
c untrusted "https://untrusted.test:$P/echo/curl/untrusted"
c wronghost "https://wrong.test:$P/echo/curl/wronghost"

# what upstream sends back
c marker "$A/marker/curl"
c chunked "$A/chunked/curl?n=7&size=3000"
c close "$A/close/curl?bytes=300000"
c redirect "$A/redirect/curl?to=https://elsewhere.test/x"
c status "$A/status/418/curl"
c bigdown "$A/big/curl?bytes=52428800"
c bigdownchunked "$A/big/curl-chunked?bytes=52428800&chunked=1"

# uploads: chunked, Content-Length with Expect: 100-continue, both 50 MiB
head -c 52428800 /dev/urandom >/tmp/big.bin
sha256sum /tmp/big.bin | cut -d' ' -f1 >big.sha
head -c 3000000 /dev/urandom >/tmp/mid.bin
sha256sum /tmp/mid.bin | cut -d' ' -f1 >mid.sha
c upchunked -H 'Transfer-Encoding: chunked' --data-binary @/tmp/big.bin "$A/echo/curl/upchunked"
c upexpect -v -T /tmp/big.bin "$A/echo/curl/upexpect"
c upexpectdeny -v -T /tmp/mid.bin "$A/admin/curl-expect"

# credentials: the box holds phantoms only
c bearer -H "Authorization: Bearer $API_TOKEN" "$A/bearer/echo/curl"
c bearermissing "$A/bearer/echo/curl-missing"
c bearerwrong -H "Authorization: Bearer strands_box_$(printf '0%.0s' $(seq 64))" "$A/bearer/echo/curl-wrong"
c bearergzip -H "Authorization: Bearer $API_TOKEN" "$A/bearer/gzip/curl"
c unbound -H "Authorization: Bearer $API_TOKEN" "$A/echo/curl/unbound"
c xkey -H "x-api-key: $XKEY_TOKEN" "$A/xkey/echo/curl"
c basic -u "whoever:$BASIC_CRED" "$A/basic/echo/curl"
c query "$A/query/echo/curl?a=1&api_key=$QUERY_KEY&b=2"
c plaincred -H "Authorization: Bearer $PLAIN_TOKEN" "http://api.test:$H/cred/echo/curl"
c plaincredbare "http://api.test:$H/cred/echo/curl-bare"

# SigV4: the gateway signs with the operator's profile, whatever the box sent
c s3get "https://s3.us-east-1.amazonaws.com:$P/cairn-bucket/curl/key.txt?list-type=2&prefix=a%2Fb"
c s3put -T /tmp/mid.bin "https://s3.us-east-1.amazonaws.com:$P/cairn-bucket/curl/mid.bin"
c bedrock -H 'Content-Type: application/json' --data-binary '{"prompt":"hi"}' \
	"https://bedrock-runtime.us-west-2.amazonaws.com:$P/model/anthropic.claude-3-haiku-20240307-v1:0/invoke"
c bedrockchunked -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' --data-binary @/tmp/mid.bin \
	"https://bedrock-runtime.us-west-2.amazonaws.com:$P/model/m1/invoke-with-response-stream"
rm -f /tmp/big.bin /tmp/mid.bin
echo done >done
