#!/usr/bin/env bash
# The Node suites of tests/telemetry (the OTLP harness on the official
# OpenTelemetry JS types, and what cairn writes and sends decoded with it),
# ending with the `N passed, N failed` line scripts/test.sh sums.
# Usage: tests/telemetry/run.sh [BUILD_DIR]   (BUILD_DIR: the drivers' build, for suites that need them)
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
export CAIRN_BUILD=${1:-}
[ -n "$CAIRN_BUILD" ] && export OTLP_DUMP=$CAIRN_BUILD/otlp-dump
out=$(node --test "$here"/*.test.mjs 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '^not ok|^# Subtest|error' | grep -B1 -A0 '^not ok' | sed 's/^/FAIL: /'
p=$(printf '%s\n' "$out" | sed -n 's/^# pass //p' | tail -n 1)
f=$(printf '%s\n' "$out" | sed -n 's/^# fail //p' | tail -n 1)
[ -n "$p" ] || { printf '%s\n' "$out" | tail -n 20; p=0; f=1; }
[ "$rc" -eq 0 ] || [ "${f:-0}" -ne 0 ] || f=1
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
