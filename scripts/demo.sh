#!/usr/bin/env bash
# `make run`: a demo box and the policy engine.
#  1. `cairn run --config examples/demo/box.toml`: Box's headline story executed
#     in a mediated box by a scripted agent with the real npm, and git as a tool
#     in a sandbox of its own that pushes to a local HTTPS forge with a
#     credential the gateway injects; each decision live (docs/mediator.md,
#     docs/tools.md).
#  2. The cairn policy CLI on the example policy — a load check, a permit, a forbid,
#     a default deny, a session decided over its history (a git push held back until
#     tests pass, a rate limit, egress closed after a secret was reached), the durable
#     history it leaves, and a policy the engine refuses to load.
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../examples"
box=$(mktemp -d)

show() {
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
	echo "(exit status $?)"
}

# --- 1. the sandbox: Box's headline story, executed ---
# A scripted agent edits a small npm project in a mediated box: npm test
# fails, git push is refused by push_needs_green_tests, the fix turns the
# tests green and the push goes through; an rm -rf stops at a forbid part-way;
# a .env read closes egress.  Every decision of a launch, and every denial,
# shows as it happens (the files the agent reads and writes are decided too:
# they are counted, not shown).
demo=/tmp/cairn-demo
forge_pid=
trap 'rm -rf "$box"; [ -n "$forge_pid" ] && kill "$forge_pid" 2>/dev/null' EXIT
rm -rf "$demo"
mkdir -p "$demo/proj/build/fixtures" "$demo/home" "$demo/forge/git" "$demo/forge/up"
cp demo/agent.sh "$demo/agent.sh"
# The forge: git-http-backend behind an HTTPS server on 127.0.0.1:47443 (the
# gateway suite's upstream) with a CA of its own, wanting a Basic credential
# that only the gateway holds (box.toml's [egress.forge]).
tests=$(cd ../tests/gateway && pwd)
"$tests/mkcerts.sh" "$demo/forge/pki" >/dev/null 2>&1 ||
	{ echo "demo: cannot make the forge's certificates (openssl is needed: make deps-run)"; exit 1; }
DEMO_FORGE_CRED="demo:$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
export DEMO_FORGE_CRED
printf '{"basic_git": "%s"}\n' "$DEMO_FORGE_CRED" > "$demo/forge/up/secrets.json"
git init -q --bare "$demo/forge/git/remote.git" &&
	git -C "$demo/forge/git/remote.git" symbolic-ref HEAD refs/heads/main
python3 "$tests/upstream.py" --dir "$demo/forge/up" --cert "$demo/forge/pki/leaf.pem" \
	--key "$demo/forge/pki/leaf.key" --secrets "$demo/forge/up/secrets.json" \
	--git-root "$demo/forge/git" --https-port 47443 >"$demo/forge/up/stderr" 2>&1 &
forge_pid=$!
for _ in $(seq 100); do [ -s "$demo/forge/up/ports.json" ] && break; sleep 0.1; done
[ -s "$demo/forge/up/ports.json" ] ||
	{ echo "demo: the forge did not start on 127.0.0.1:47443: $(tail -n 1 "$demo/forge/up/stderr")"; exit 1; }
(
	cd "$demo/proj" &&
	printf '{ "name": "demo", "version": "1.0.0", "private": true,\n  "scripts": { "test": "node test.js" } }\n' > package.json &&
	printf 'module.exports = (a, b) => a + b;\n' > index.js &&
	printf "const assert = require('assert');\nassert.strictEqual(require('./index.js')(2, 3), 5);\nconsole.log('  tests: 2 + 3 = 5, ok');\n" > test.js &&
	printf 'API_KEY=sk-live-not-for-agents\n' > .env &&
	printf 'node_modules\n.env\nbuild\n' > .gitignore &&
	for f in a b c; do echo "$f" > "build/$f.o"; done &&
	echo fixture > build/fixtures/golden.json &&
	git init -q -b main . && git config user.name "Demo Agent" && git config user.email agent@demo.test &&
	git add -A && git commit -qm "initial" &&
	git push -q "$demo/forge/git/remote.git" main &&
	git remote add origin https://git.test:47443/basic-git/remote.git
) || { echo "demo: cannot set up $demo (git and npm are needed: make deps-run)"; exit 1; }
printf '\n\033[1m$ %s\033[0m\n' "cairn run --decisions=all --config examples/demo/box.toml"
perm=$(mktemp)
"$cairn" run --decisions=all --config demo/box.toml 2>&1 | while IFS= read -r line; do
	case "$line" in
	"cairn: permit  fs:"*) echo . >> "$perm" ;;
	*) printf '%s\n' "$line" ;;
	esac
done
printf '\n(%s file operations permitted along the way, not shown; the pushed history: %s)\n' \
	"$(wc -l < "$perm" | tr -d ' ')" "$(git -C "$demo/forge/git/remote.git" log --format=%s main | tr '\n' '<' | sed 's/<$//; s/</ < /g')"
rm -f "$perm"
printf '\n\033[1m$ %s\033[0m\n' "cairn history show $demo/box   (the launches and tool calls, and their exit statuses)"
"$cairn" history show "$demo/box" |
	jq -r 'select(.kind == "response" or .decision.verdict == "deny")
	  | select(.action == "Box::Action::\"shell:exec\"" or .action == "Box::Action::\"shell:spawn\"")
	  | "\(.action | ltrimstr("Box::Action::\"") | rtrimstr("\""))\t\(.kind)\t\(.decision.verdict // "")\t\(.logged.input.command)\t\(.logged.output.status // "")"' 2>/dev/null |
	grep -E 'npm|git (push|add|commit)' | sed 's/^/  /'
kill "$forge_pid" 2>/dev/null
forge_pid=
rm -rf "$demo"

# --- 2. the policy engine ---
show "$cairn" policy check policy.dw
for r in read-readme read-env http-example force-push; do
	show "$cairn" policy authorize --policies policy.dw --request "requests/$r.json"
done
mkdir -p "$box/private/history"
show "$cairn" policy replay policy.dw --trace session.log --text --history "$box/private/history"
show "$cairn" history verify "$box"
printf '\n\033[1m$ %s\033[0m\n' "$cairn history show BOX --action fs:read | head -n 2"
"$cairn" history show "$box" --action fs:read | head -n 2
show "$cairn" policy check bad-policy.dw
exit 0
