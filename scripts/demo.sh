#!/usr/bin/env bash
# `make run`: the cairn policy CLI on the example policy — a load check, a permit,
# a forbid, a default deny, a session decided over its history (a git push held back
# until tests pass, a rate limit, egress closed after a secret was reached), the
# durable history it leaves, and a policy the engine refuses to load.
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
