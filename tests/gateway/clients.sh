#!/usr/bin/env bash
# The egress gateway end to end: real clients (curl, python3 urllib and raw
# sockets, node fetch, git) inside `cairn run`, against local TLS upstreams on
# loopback (upstream.py with a test CA).  Permits, denials with their exact
# bodies, the history each produced, credentials arriving upstream and never
# inside, abuse answered without harming other connections, SigV4 verified by
# the upstream (sigv4.py, checked against AWS's vectors).
# Usage: tests/gateway/clients.sh PATH/TO/cairn   (CAIRN_GW_KEEP=1 keeps the work directory)
set -u
export PYTHONDONTWRITEBYTECODE=1
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(cd "$here/../.." && pwd -P)
work=$(mktemp -d)
chmod 755 "$work"
work=$(cd "$work" && pwd -P)
up_pid=
cleanup() {
	[ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null
	if [ -n "${CAIRN_GW_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# sub WHAT FILE: add the `N passed, N failed` a script printed into FILE,
# showing its FAIL lines; a script that printed no count has failed.
sub() {
	local line p f
	grep -E '^FAIL' "$2" | sed "s/^FAIL: /FAIL: [$1] /"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$1: no count; its output ends:"
		tail -n 15 "$2" | sed 's/^/    /'
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
}

# The engineer may be rebuilding cairn: wait for it a little.
for _ in $(seq 60); do [ -x "$cairn" ] && break; sleep 1; done
[ -x "$cairn" ] || { bad "no cairn at $cairn"; echo "$pass passed, $fail failed"; exit 1; }

# --- the test CA, the upstream's repository, the operator's secrets ---
"$here/mkcerts.sh" "$work/pki" || { bad "mkcerts.sh"; echo "$pass passed, $fail failed"; exit 1; }
python3 "$here/sigv4.py" >"$work/sigv4.out" 2>&1
sub "sigv4 vectors" "$work/sigv4.out"

mkdir -p "$work/git" "$work/up" "$work/ws/home" "$work/boxes" "$work/ophome/.aws"
git init -q --bare "$work/git/repo.git"
git -C "$work/git/repo.git" symbolic-ref HEAD refs/heads/main
git init -q -b main "$work/git/src"
echo hello >"$work/git/src/README"
git -C "$work/git/src" add README
git -C "$work/git/src" -c user.email=t@t -c user.name=t commit -q -m "initial commit from the host"
git -C "$work/git/src" push -q "$work/git/repo.git" main

secret() { python3 -c 'import secrets; print("real-" + secrets.token_hex(20))'; }
API_TOKEN=$(secret); XKEY_TOKEN=$(secret); QUERY_KEY=$(secret); PLAIN_TOKEN=$(secret); GIT_TOKEN=$(secret)
BASIC_CRED="realuser:$(secret)"
AWS_KEY_ID=AKIDCAIRNTESTREAL001
AWS_SECRET="cairn/Real+Secret/$(secret)"
cat >"$work/ophome/.aws/credentials" <<EOF
[cairntest]
aws_access_key_id = $AWS_KEY_ID
aws_secret_access_key = $AWS_SECRET
EOF
: >"$work/ophome/.aws/config"
chmod 600 "$work/ophome/.aws/credentials"
cat >"$work/up/secrets.json" <<EOF
{"git": "$GIT_TOKEN", "aws": {"$AWS_KEY_ID": "$AWS_SECRET"}}
EOF

# --- the upstream ---
python3 "$here/upstream.py" --dir "$work/up" --cert "$work/pki/leaf.pem" --key "$work/pki/leaf.key" \
	--rogue-cert "$work/pki/rogue.pem" --rogue-key "$work/pki/rogue.key" \
	--secrets "$work/up/secrets.json" --git-root "$work/git" >"$work/up/stderr" 2>&1 &
up_pid=$!
for _ in $(seq 100); do [ -s "$work/up/ports.json" ] && break; sleep 0.1; done
if [ ! -s "$work/up/ports.json" ]; then
	bad "upstream.py did not start"; cat "$work/up/stderr"; echo "$pass passed, $fail failed"; exit 1
fi
P=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["https"])' "$work/up/ports.json")
H=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$work/up/ports.json")
DOWN=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# the upstream itself, straight (no gateway): a sanity check of the fixture
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$work/pki/ca.pem" \
	--resolve "api.test:$P:127.0.0.1" "https://api.test:$P/echo/fixture" 2>&1)
[ "$code" = 200 ] && ok || bad "the upstream does not answer directly: $code"

cat >"$work/host.json" <<EOF
{"P": $P, "H": $H, "DOWN": $DOWN, "aws_key_id": "$AWS_KEY_ID",
 "secrets": {"API_TOKEN": "$API_TOKEN", "XKEY_TOKEN": "$XKEY_TOKEN", "QUERY_KEY": "$QUERY_KEY",
  "PLAIN_TOKEN": "$PLAIN_TOKEN", "GIT_TOKEN": "$GIT_TOKEN", "BASIC_CRED": "$BASIC_CRED",
  "AWS_SECRET": "$AWS_SECRET"}}
EOF
# what the box may read: ports, never secrets
for r in curl git; do
	printf 'P=%s\nH=%s\nDOWN=%s\nOUT=%s\n' "$P" "$H" "$DOWN" "$work/ws/$r" >"$work/ws/$r.params.sh"
done
# A name the host's own resolver puts on loopback (no [gateway] hosts entry):
# the floor run checks it stays refused.  localhost is refused by its name.
LOOPNAME=$(python3 - <<'PY'
import socket
names = []
try:
    for line in open("/etc/hosts"):
        names += line.split("#")[0].split()[1:]
except OSError:
    pass
names.append(socket.gethostname())
for n in names:
    n = n.lower().rstrip(".")
    if n == "localhost" or n.endswith(".localhost") or n.endswith(".test"):
        continue
    try:
        addrs = {a[4][0] for a in socket.getaddrinfo(n, 443, type=socket.SOCK_STREAM)}
    except OSError:
        continue
    if addrs and all(a.startswith("127.") or a == "::1" for a in addrs):
        print(n)
        break
PY
)
printf '{"P": %s, "H": %s, "DOWN": %s, "aws_key_id": "%s", "LOOPNAME": %s}\n' "$P" "$H" "$DOWN" "$AWS_KEY_ID" \
	"$( [ -n "$LOOPNAME" ] && printf '"%s"' "$LOOPNAME" || printf null)" >"$work/ws/params.json"

cp "$here/policy.dw" "$work/policy.dw"
node_read=
[ -d "$top/node_modules/undici" ] && node_read=", \"$top/node_modules\""
# box NAME FLOOR COMMAND-TOML: a config for one run
box() {
	cat >"$work/$1.toml" <<EOF
name = "gw-$1"
box_dir = "$work/boxes/$1"
policy = "$work/policy.dw"

[agent]
command = $3
workspace = "$work/ws"

[agent.env]
HOME = "$work/ws/home"

[agent.filesystem]
write = ["$work/ws"]
read = ["$here"$node_read]

[gateway]
hosts = { "api.test" = "127.0.0.1", "other.test" = "127.0.0.1", "git.test" = "127.0.0.1", "blocked.test" = "127.0.0.1", "down.test" = "127.0.0.1", "untrusted.test" = "127.0.0.1", "wrong.test" = "127.0.0.1", "s3.us-east-1.amazonaws.com" = "127.0.0.1", "bedrock-runtime.us-west-2.amazonaws.com" = "127.0.0.1" }
extra_ca_files = ["$work/pki/ca.pem"]
destination_floor = $2

[egress.bearer]
destinations = ["api.test:$P/bearer"]
secret.ref = "env://API_TOKEN"

[egress.xkey]
destinations = ["api.test:$P/xkey"]
secret.ref = "env://XKEY_TOKEN"
secret.header = "x-api-key"

[egress.basic]
destinations = ["api.test:$P/basic"]
secret.ref = "env://BASIC_CRED"
secret.placement = "basic_auth"

[egress.query]
destinations = ["api.test:$P/query"]
secret.ref = "env://QUERY_KEY"
secret.placement = "query_param"
secret.param = "api_key"

[egress.plain]
destinations = ["api.test:$H/cred"]
secret.ref = "env://PLAIN_TOKEN"

[egress.git]
destinations = ["git.test:$P/auth-git"]
secret.ref = "env://GIT_TOKEN"

[egress.s3]
destinations = ["s3.us-east-1.amazonaws.com:$P"]
secret.ref = "aws://cairntest"

[egress.bedrock]
destinations = ["bedrock-runtime.us-west-2.amazonaws.com:$P"]
secret.ref = "aws://cairntest"
EOF
}

# start NAME: run the box as the operator (secrets in its environment, its
# HOME holding the AWS profile) and keep the history it wrote; files only, so
# a run can go in the background.  finish NAME: check what start left.
start() {
	env API_TOKEN="$API_TOKEN" XKEY_TOKEN="$XKEY_TOKEN" QUERY_KEY="$QUERY_KEY" PLAIN_TOKEN="$PLAIN_TOKEN" \
		GIT_TOKEN="$GIT_TOKEN" BASIC_CRED="$BASIC_CRED" HOME="$work/ophome" \
		timeout -k 5 150 "$cairn" run --config "$work/$1.toml" >"$work/$1.out" 2>"$work/$1.err"
	echo $? >"$work/$1.rc"
	"$cairn" history show "$work/boxes/$1" >"$work/$1.hist.jsonl" 2>"$work/$1.hist.err"
	echo $? >"$work/$1.hist.rc"
	"$cairn" history verify "$work/boxes/$1" >"$work/$1.verify" 2>&1
	echo $? >"$work/$1.verify.rc"
}
finish() {
	[ "$(cat "$work/$1.hist.rc")" = 0 ] && ok || bad "$1: cairn history show failed: $(head -c 300 "$work/$1.hist.err")"
	[ "$(cat "$work/$1.verify.rc")" = 0 ] && ok || bad "$1: cairn history verify: $(head -c 300 "$work/$1.verify")"
	[ -s "$work/$1.hist.jsonl" ] && ok || bad "$1: the run left no history"
	if grep -qE 'Sanitizer|runtime error' "$work/$1.err"; then
		bad "$1: sanitizer report"; grep -E -A12 'Sanitizer|runtime error' "$work/$1.err" | head -40
	else
		ok
	fi
}
checks() { python3 "$here/checks.py" "$1" "$work" >"$work/$1.checks" 2>&1; sub "$1 (host)" "$work/$1.checks"; }
in_box() {  # in_box NAME: the in-box script's own count
	[ "$(cat "$work/$1.rc")" = 0 ] && ok || bad "$1: the box exited $(cat "$work/$1.rc")"
	sub "$1 (box)" "$work/$1.out"
	grep -E '^(slowloris|health|node)[: ]' "$work/$1.out" | sed "s/^/  [$1] /"
}

# --- abuse, in the background: its slowloris connections take half a minute ---
box abuse false "[\"/usr/bin/python3\", \"$here/abuse.py\", \"$work/ws/params.json\"]"
start abuse &
abuse_pid=$!

# --- curl ---
box curl false "[\"/bin/bash\", \"$here/box_curl.sh\", \"$work/ws/curl.params.sh\"]"
start curl
finish curl
[ "$(cat "$work/curl.rc")" = 0 ] && ok || { bad "curl: the box exited $(cat "$work/curl.rc")"; tail -5 "$work/curl.err"; }
[ -f "$work/ws/curl/done" ] && ok || bad "curl: box_curl.sh did not finish"
checks curl

# --- python3: urllib, raw sockets, WebSocket, SigV4 from a signing client ---
box py false "[\"/usr/bin/python3\", \"$here/box_py.py\", \"$work/ws/params.json\"]"
start py
finish py
in_box py
checks py

# --- node fetch ---
if [ -n "$node_read" ]; then
	box node false "[\"/usr/bin/node\", \"$here/box_node.mjs\", \"$work/ws/params.json\", \"$top/node_modules/undici/index.js\"]"
	start node
	finish node
	in_box node
	checks node
else
	bad "node: $top/node_modules/undici is missing (npm ci)"
fi

# --- git clone over https ---
box git false "[\"/bin/bash\", \"$here/box_git.sh\", \"$work/ws/git.params.sh\"]"
start git
finish git
[ -f "$work/ws/git/done" ] && ok || bad "git: box_git.sh did not finish"
checks git

# --- abuse: its results ---
wait "$abuse_pid"
finish abuse
in_box abuse
checks abuse

# --- the destination floor (on by default) ---
box floor true "[\"/usr/bin/python3\", \"$here/box_floor.py\", \"$work/ws/params.json\"]"
sed -i '/^destination_floor/d' "$work/floor.toml"
# a hosts entry to a metadata address: the floor still refuses it
sed -i 's/^hosts = { "api.test" = "127.0.0.1",/hosts = { "meta.test" = "169.254.169.254", "api.test" = "127.0.0.1",/' "$work/floor.toml"
start floor
finish floor
in_box floor
checks floor

# --- the secrets never entered the box ---
for v in "$API_TOKEN" "$XKEY_TOKEN" "$QUERY_KEY" "$PLAIN_TOKEN" "$GIT_TOKEN" "$BASIC_CRED" \
	"$(printf '%s' "$BASIC_CRED" | base64 -w0)" "$AWS_SECRET"; do
	if grep -rqF -- "$v" "$work/ws"; then
		bad "a real secret is in the box's workspace: $(grep -rlF -- "$v" "$work/ws" | head -3)"
	else
		ok
	fi
done
n=$(grep -c 'strands_box_' "$work/ws/curl/proc-environ.txt" 2>/dev/null)
[ "${n:-0}" -ge 6 ] && ok || bad "the box's processes do not carry the phantoms ($n)"
for b in curl py; do
	cert=$work/boxes/$b/trust/cert.pem
	if [ -f "$cert" ] && ! grep -q "PRIVATE KEY" "$cert" && openssl x509 -in "$cert" -noout -text | grep -q "CA:TRUE"; then
		ok
	else
		bad "$b: trust/cert.pem is not a bare CA certificate"
	fi
done
a=$(openssl x509 -in "$work/boxes/curl/trust/cert.pem" -noout -fingerprint 2>/dev/null)
b=$(openssl x509 -in "$work/boxes/py/trust/cert.pem" -noout -fingerprint 2>/dev/null)
[ -n "$a" ] && [ "$a" != "$b" ] && ok || bad "the gateway CA is not new per run"

# --- every decision the clients caused has its record, read with the official
# OpenTelemetry types, with the verdict the history implies (docs/records.md) ---
node "$top/tests/telemetry/history_match.mjs" "$cairn" "$work"/boxes/* >"$work/records.out" 2>&1
sub records "$work/records.out"
grep '^  \[' "$work/records.out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
