#!/usr/bin/env bash
# `make conformance`: the long runs.
#  1. one million differential cases against @cedar-policy/cedar-wasm;
#  2. the public Cedar integration-test corpus, when CEDAR_CORPUS names a checkout of
#     cedar-integration-tests with corpus-tests.tar.gz unpacked (the tests name their
#     files relative to that directory, so cedar-run runs from there).
# Usage: scripts/conformance.sh BUILD_DIR   (env: DIFF_CASES, DIFF_SEED, CEDAR_CORPUS)
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

if [ -n "${CEDAR_CORPUS:-}" ]; then
	echo "== Cedar integration tests in $CEDAR_CORPUS"
	(cd "$CEDAR_CORPUS" && find tests corpus-tests -name '*.json' ! -name '*.entities.json' \
		-print0 2>/dev/null | xargs -0 -n 100000 "$build/cedar-run" -q | tail -n 2) || rc=1
else
	echo "== Cedar integration tests: skipped (set CEDAR_CORPUS to a cedar-integration-tests checkout)"
fi
exit $rc
