#!/usr/bin/env bash
# Replay every Dogwood vector (tests/data/dogwood/*/) with both evaluators
# and compare with its expected.out, then the vectors of tests/replay/cases/.
# Usage: tests/replay/run.sh CAIRN_BINARY
set -uo pipefail

cairn=$1
top=$(cd "$(dirname "$0")/../.." && pwd)
pass=0
fail=0

check() {       # check NAME DIR [extra args]
	local name=$1 dir=$2 engine out
	shift 2
	for engine in incremental reference; do
		out=$("$cairn" policy replay "$dir/policy.dw" --trace "$dir/trace.log" \
			--engine "$engine" "$@" 2>&1)
		if [ "$out" = "$(cat "$dir/expected.out")" ]; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: $name ($engine)"
			diff <(echo "$out") "$dir/expected.out" | head -n 20 | sed 's/^/    /'
		fi
	done
}

vectors=0
for d in "$top"/tests/data/dogwood/*/; do
	[ -f "$d/expected.out" ] || continue
	check "$(basename "$d")" "$d"
	vectors=$((vectors + 1))
done
# the vectors are the floor of this suite: finding none is a failure, not a pass
if [ "$vectors" -lt 8 ]; then
	fail=$((fail + 1))
	echo "FAIL: $vectors Dogwood vectors with an expected.out in $top/tests/data/dogwood (want at least 8)"
fi
for d in "$top"/tests/replay/cases/*/; do
	[ -f "$d/expected.out" ] || continue
	args=()
	[ -f "$d/schema.cedarschema" ] && args+=(--schema "$d/schema.cedarschema")
	[ -f "$d/events.dwschema" ] && args+=(--event-schema "$d/events.dwschema")
	check "cases/$(basename "$d")" "$d" "${args[@]}"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
