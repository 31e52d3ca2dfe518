#!/usr/bin/env bash
# `make run`: the cairn policy CLI on the example policy — a load check, a permit,
# a forbid, a default deny, and a policy the engine refuses to load.
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../examples"

show() {
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
	echo "(exit status $?)"
}

show "$cairn" policy check policy.dw
for r in read-readme read-env http-example force-push; do
	show "$cairn" policy authorize --policies policy.dw --request "requests/$r.json"
done
show "$cairn" policy check bad-policy.dw
exit 0
