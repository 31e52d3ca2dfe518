#!/usr/bin/env bash
# `make bench`: libdogwood against @cedar-policy/cedar-wasm (bench/README.md).
# Usage: scripts/bench.sh BUILD_DIR [run.mjs options, e.g. --sizes 10,1000 --quick]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/bench.sh BUILD_DIR [options]}
shift
driver=$(cd "$build" && pwd)/dw-bench

if [ ! -x "$driver" ]; then
	echo "bench: $driver not found; run 'make build' first" >&2
	exit 2
fi
if [ ! -d "$top/node_modules/@cedar-policy/cedar-wasm" ]; then
	echo "bench: installing node dependencies (npm install)" >&2
	(cd "$top" && npm install --no-audit --no-fund --loglevel=error)
fi
cd "$top"
exec node bench/run.mjs --driver "$driver" "$@"
