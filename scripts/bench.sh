#!/usr/bin/env bash
# `make bench`: libdogwood against @cedar-policy/cedar-wasm, then the temporal engine
# against its reference evaluator and Dogwood's published figures, then sandbox start-up
# (`cairn run`) against bwrap, then the egress gateway against mitmproxy and no proxy
# (bench/README.md).
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
node bench/run.mjs --driver "$driver" "$@"
echo
# durable histories go under the build tree: the repository's disk, never tmpfs
quick=
for a in "$@"; do [ "$a" = "--quick" ] && quick=--quick; done
"$(cd "$build" && pwd)/dw-tbench" $quick --dir "$(cd "$build" && pwd)"
echo
# sandbox start-up: `cairn run` of a /bin/true box against bwrap in the same run
"$(cd "$build" && pwd)/sandbox-bench" $quick --cairn "$(cd "$build" && pwd)/cairn"
echo
# egress gateway: cairn against mitmproxy and direct, in the same run; the box's durable
# history (synced before each answer) goes under the build tree, on the repository's disk
"$(cd "$build" && pwd)/gateway-bench" $quick --cairn "$(cd "$build" && pwd)/cairn" \
	--dir "$(cd "$build" && pwd)"
echo
# the mediator: per call and workloads, mediated against unmediated, native and gVisor
# (bench/README.md "The mediator"); a clean build of cairn itself is the --full part
full=--full
[ -n "$quick" ] && full=
python3 "$top/bench/mediate_bench.py" $quick $full --cairn "$(cd "$build" && pwd)/cairn" \
	--probe "$(cd "$build" && pwd)/med-bench-calls" --source "$top" --dir "$(cd "$build" && pwd)"
echo
# tools: a call through the shim and a leaf, against the same exec in the agent's sandbox
# and against bwrap; 100 concurrent calls (bench/README.md "Tools")
python3 "$top/bench/tools_bench.py" $quick --cairn "$(cd "$build" && pwd)/cairn" \
	--probe "$(cd "$build" && pwd)/med-bench-calls" --dir "$(cd "$build" && pwd)"
