#!/usr/bin/env bash
# Run every test of `make test` against a normal and an ASan+UBSan build, sum the
# counts each suite prints (`N passed, N failed`), and end with one such line.
# Usage: scripts/test.sh BUILD_DIR ASAN_BUILD_DIR
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
asan=$(cd "$2" && pwd)
data="$top/tests/data"        # what the suites read (tests/data/README.md)
total_pass=0
total_fail=0
suites_failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# run NAME CMD...: run a suite, echo its failure lines, add its closing counts.
run() {
	local name=$1; shift
	local out="$log/$(echo "$name" | tr ' /' '__').log"
	local start=$SECONDS
	"$@" >"$out" 2>&1
	local rc=$?
	local line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
		f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	else
		p=0
		f=1     # a suite that ends without its count has failed
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1     # crashed or leaked after printing its count
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	printf '%-44s %7s passed, %s failed  (%ss)\n' "$name" "$p" "$f" "$((SECONDS - start))"
	if [ "$f" -ne 0 ]; then
		suites_failed+=("$name")
		grep -E 'FAIL|CHECK|ERROR|error|Sanitizer|runtime error' "$out" | head -n 40 | sed 's/^/    /'
		[ -z "$line" ] && tail -n 20 "$out" | sed 's/^/    /'
	fi
}

conformance() {
	local runner=$1
	local cases p=0 f=0 line vd
	local detail
	detail="$log/conformance-$(basename "$(dirname "$runner")").log"
	: > "$detail"
	cases=("$data"/cedar/*/test.json)
	if [ ! -f "${cases[0]}" ]; then     # an unmatched glob stays literal
		echo "FAIL: no Cedar conformance cases in $data/cedar"
		echo "0 passed, 1 failed"
		return 1
	fi
	for t in "${cases[@]}"; do
		# failure lines go to the log; the count is the runner's last line
		line=$(cd "$(dirname "$t")" && "$runner" test.json | sed 's/^\([0-9]* passed\)/case \1/' |
			tee -a "$detail" | tail -n 1 | sed 's/^case //')
		if ! [[ $line =~ ^[0-9]+\ passed,\ [0-9]+\ failed ]]; then
			echo "FAIL: $t: the runner ended without its count" >>"$detail"
			f=$((f + 1))
			continue
		fi
		p=$((p + $(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')))
		f=$((f + $(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')))
	done
	grep -E '^(FAIL|VALIDATION)' "$detail"
	# every local case states shouldValidate; the validator must agree with it
	vd=$(grep -c '^VALIDATION-DISAGREE' "$detail")
	f=$((f + vd))
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}

replay_corpus() {
	local dir=$1 p=0 f=0
	for t in policy schema_cedar schema_json entities evschema trace event_codec toml http proxy link otlp_recv shim_frame; do
		if [ -d "$top/fuzz/corpus/$t" ]; then
			if "$dir/replay_$t" "$top/fuzz/corpus/$t"; then p=$((p + 1)); else f=$((f + 1)); fi
		else
			echo "FAIL: no corpus for $t"; f=$((f + 1))
		fi
	done
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}

# The compiled-in Box schema is Box's published one (tests/data/box/), byte for byte.
box_schema_current() {
	local p=0 f=0
	if cmp "$top/src/dogwood/engine/box-actions.cedarschema" "$data/box/box-actions.cedarschema"; then
		p=$((p + 1))
	else
		echo "FAIL: src/dogwood/engine/box-actions.cedarschema differs from tests/data/box/box-actions.cedarschema"
		f=$((f + 1))
	fi
	if sh "$top/src/dogwood/engine/gen-box-schema.sh" --check; then p=$((p + 1)); else f=$((f + 1)); fi
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}
run "box schema up to date" box_schema_current
run "engine layers (includes)" "$top/tests/layers/check.sh"
# nothing in the tree names data or documents outside it (tests/data/README.md)
run "the repository stands alone" "$top/tests/standalone/run.sh" "$top"

for b in "$build" "$asan"; do
	tag=$([ "$b" = "$build" ] && echo normal || echo asan)
	for t in "$b"/test_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		run "unit $(basename "$t") ($tag)" "$t"
	done
	run "cedar conformance ($tag)" conformance "$b/cedar-run"
	run "cli ($tag)" "$top/tests/cli/run.sh" "$b/cairn"
	run "cairn run ($tag)" "$top/tests/cli/run_box.sh" "$b/cairn"
	# the table's probe is the normal build's: a sanitized one cannot run its
	# leak checker inside the sandbox (no ptrace there)
	run "mediator, real programs ($tag)" "$top/tests/mediate/run.sh" "$b/cairn" "$build/med-calls"
	run "egress gateway, real clients ($tag)" "$top/tests/gateway/clients.sh" "$b/cairn"
	run "tools, shims and leaves ($tag)" "$top/tests/tools/run.sh" "$b/cairn"
	run "dogwood replay vectors ($tag)" "$top/tests/replay/run.sh" "$b/cairn"
	run "fuzz corpus replay ($tag)" replay_corpus "$b"
	# the incremental engine against the reference evaluator (tests/diff/temporal)
	run "temporal differential ($tag, 50000 decisions)" "$b/temporal-diff" --seed 1 --decisions 50000
done
run "escape (root)" "$top/tests/escape/run.sh" "$build/cairn" "$build/escape-probe"
run "escape (unprivileged)" "$top/tests/escape/run-unpriv.sh" "$build/cairn" "$build/escape-probe"
run "egress gateway, real clients (unprivileged)" "$top/tests/gateway/run-unpriv.sh" "$build/cairn"
run "mediator, real programs (unprivileged)" "$top/tests/mediate/run-unpriv.sh" "$build/cairn" "$build/med-calls"
run "tools, shims and leaves (unprivileged)" "$top/tests/tools/run-unpriv.sh" "$build/cairn"
# Claude Code and Codex CLI, pinned, against a scripted model behind the gateway
run "real agents in a mediated box" "$top/tests/e2e/run.sh" "$build/cairn"
run "real agents in a mediated box (unprivileged)" "$top/tests/e2e/run-unpriv.sh" "$build/cairn"
# the bench's supervisor peak is its own process, not the largest it reaped (bench/README.md)
run "sandbox-bench memory figures" "$top/tests/bench/sandbox_rss.sh" "$build"
run "TOML reader vs smol-toml (20000 documents)" \
	node "$top/tests/diff/toml-diff.mjs" --dump "$build/toml-dump" --cases 20000 --seed 1
run "OTLP harness on the official OpenTelemetry types" "$top/tests/telemetry/run.sh" "$build"
run "parse messages vs cedar-wasm" node "$top/tests/diff/parse-messages.mjs" "$build/cairn"
run "differential vs cedar-wasm (10000 cases)" \
	node "$top/tests/diff/cedar-diff.mjs" --runner "$build/cedar-run" --cases 10000 --seed 1 --strict-validation \
	--workdir "$log/diff"

echo
if [ ${#suites_failed[@]} -ne 0 ]; then
	echo "failed suites: ${suites_failed[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
