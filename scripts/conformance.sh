#!/usr/bin/env bash
# `make conformance`: the long runs.
#  1. one million differential cases against @cedar-policy/cedar-wasm;
#  2. five million temporal decisions: the incremental engine against the
#     reference evaluator on random policies and traces;
#  3. 1,000 SIGKILL cycles of the history log and 1,000 of the monitor;
#  4. the public Cedar integration-test corpus, when CEDAR_CORPUS names a checkout of
#     cedar-integration-tests with corpus-tests.tar.gz unpacked (the tests name their
#     files relative to that directory, so cedar-run runs from there).
# Usage: scripts/conformance.sh BUILD_DIR
#   (env: DIFF_CASES, DIFF_SEED, TEMPORAL_DECISIONS, KILL_CYCLES, CEDAR_CORPUS)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
rc=0

echo "== differential: ${DIFF_CASES:-1000000} cases against cedar-wasm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node "$top/tests/diff/cedar-diff.mjs" --runner "$build/cedar-run" --cases "${DIFF_CASES:-1000000}" \
	--strict-validation --keep-going \
	--seed "${DIFF_SEED:-$(date +%s)}" --workdir "$work/diff" || rc=1

seed=${DIFF_SEED:-$(date +%s)}
echo "== temporal differential: ${TEMPORAL_DECISIONS:-5000000} decisions (seed $seed)"
"$build/temporal-diff" --seed "$seed" --decisions "${TEMPORAL_DECISIONS:-5000000}" | tail -n 6 || rc=1

echo "== crash recovery: ${KILL_CYCLES:-1000} SIGKILL cycles of the log and of the monitor"
CAIRN_HISTORY_KILL_CYCLES=${KILL_CYCLES:-1000} "$build/test_history_log" crash | tail -n 1 || rc=1
CAIRN_MONITOR_KILL_CYCLES=${KILL_CYCLES:-1000} "$build/test_monitor" kill_recover | tail -n 2 || rc=1

if [ -n "${CEDAR_CORPUS:-}" ]; then
	echo "== Cedar integration tests in $CEDAR_CORPUS"
	(cd "$CEDAR_CORPUS" && find tests corpus-tests -name '*.json' ! -name '*.entities.json' \
		-print0 2>/dev/null | xargs -0 -n 100000 "$build/cedar-run" -q | tail -n 2) || rc=1
else
	echo "== Cedar integration tests: skipped (set CEDAR_CORPUS to a cedar-integration-tests checkout)"
fi
exit $rc
