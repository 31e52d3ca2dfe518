#!/usr/bin/env bash
# `make run`: a demo box and the policy engine.
#  1. `cairn run --config examples/box.toml`: a small agent script in the sandbox,
#     showing the grants cairn disclosed and what the sandbox allows and refuses,
#     each decision live on stderr, then the run's decision records.
#  2. The cairn policy CLI on the example policy — a load check, a permit, a forbid,
#     a default deny, a session decided over its history (a git push held back until
#     tests pass, a rate limit, egress closed after a secret was reached), the durable
#     history it leaves, and a policy the engine refuses to load.
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../examples"
box=$(mktemp -d)
trap 'rm -rf "$box"' EXIT

show() {
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
	echo "(exit status $?)"
}

# --- 1. the sandbox ---
demo=/tmp/cairn-demo
rm -rf "$demo"
mkdir -p "$demo/proj/secrets" "$demo/docs"
echo "Read me: the box can read this, not change it." > "$demo/docs/guide.txt"
echo "sk-live-not-for-agents" > "$demo/proj/secrets/token"
cp agent.sh "$demo/proj/agent.sh"
show "$cairn" run --config box.toml
show "$cairn" run --config box.toml -- --verbose "one more"
# every decision of both runs, as records (docs/records.md), and Box's jq recipe
show "$cairn" records show "$demo/box"
if command -v jq >/dev/null; then
	printf '\n\033[1m$ %s\033[0m\n' "jq … $demo/box/private/telemetry/records.jsonl   (Box's tutorial recipe)"
	jq -r '.resourceLogs[]?.scopeLogs[] | select(.scope.name == "strands-box.policy")
	  | .logRecords[] | [.attributes[] | select(.key | startswith("strands.box.policy."))
	  | {(.key | ltrimstr("strands.box.policy.")): .value.stringValue}] | add
	  | "\(.verdict)\t\(.action)\t\(.resource)\t\(.rule)"' "$demo/box/private/telemetry/records.jsonl"
fi
printf '\n(the workspace after the run: %s)\n' "$(ls "$demo/proj" | tr '\n' ' ')"
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
