#!/usr/bin/env bash
# Run every libFuzzer target of fuzz/ for a while and fail on any finding.
# Usage: scripts/fuzz.sh FUZZ_BUILD_DIR SECONDS        (make fuzz FUZZ_SECONDS=N)
#
# Each FUZZ_BUILD_DIR/fuzz_<t> runs for SECONDS with fuzz/dict/<t>.dict, on a
# writable corpus fuzz/out/<t>/corpus (git-ignored) seeded from fuzz/corpus/<t>
# and kept between runs, so coverage accumulates.  Artifacts (crash-*, leak-*,
# timeout-*, oom-*) land in fuzz/out/<t>/artifacts/, emptied at the start of a
# run; a target fails when one appears or libFuzzer exits non-zero.  Targets run
# FUZZ_JOBS at a time (default: the number of CPUs, at most 4).
# Prints one line per target, then `N passed, N failed` over targets.
#
# Environment: FUZZ_MAX_LEN (default 16384: longer seeds are cut to it while
# fuzzing; `make test` replays them whole), FUZZ_TIMEOUT (seconds per input,
# default 25), FUZZ_TARGETS (default: all twelve), FUZZ_JOBS.
set -uo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 FUZZ_BUILD_DIR SECONDS" >&2
	exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) || exit 2
seconds=$2
targets=${FUZZ_TARGETS:-policy schema_cedar schema_json entities evschema trace event_codec toml http proxy link otlp_recv}
max_len=${FUZZ_MAX_LEN:-16384}
timeout=${FUZZ_TIMEOUT:-25}
ncpu=$(nproc 2>/dev/null || echo 1)
jobs=${FUZZ_JOBS:-$((ncpu < 4 ? ncpu : 4))}
[ "$jobs" -ge 1 ] || jobs=1

case "$seconds" in
'' | *[!0-9]*) echo "fuzz: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac

# libFuzzer only sees edges of code compiled with coverage instrumentation.  The
# targets get -fsanitize=fuzzer, but libdogwood and libcairnconfig (the TOML
# reader) need -fsanitize=fuzzer-no-link, or the fuzzer is blind to them;
# meson.build gives it to them (and libgateway) under -Dfuzz=true.  Add it to
# this build directory (used only for fuzzing) when either lacks it, with -O1
# (libFuzzer's usual level: -O0 runs the policy target about 8 times slower).
uninstrumented=
for lib in libdogwood libcairnconfig; do
	cov_syms=$(nm -A "$build/$lib.a" 2>/dev/null | grep -c '__sanitizer_cov_\|__sancov_gen_')
	[ "${cov_syms:-0}" -eq 0 ] && uninstrumented="$uninstrumented $lib"
done
if [ -n "$uninstrumented" ]; then
	echo "fuzz:$uninstrumented in $build without coverage instrumentation;" \
	     "reconfiguring with c_args=-fsanitize=fuzzer-no-link, optimization=1" >&2
	meson configure "$build" -Dc_args=-fsanitize=fuzzer-no-link -Doptimization=1 >/dev/null ||
		{ echo "fuzz: meson configure failed" >&2; exit 1; }
fi
# Rebuild just the fuzzers (not the rest of the tree) so they match the sources.
fuzzers=()
for t in $targets; do fuzzers+=("fuzz_$t"); done
ninja -C "$build" "${fuzzers[@]}" >/dev/null || { echo "fuzz: building ${fuzzers[*]} failed" >&2; exit 1; }

# Sanitizer settings for the fuzzers: report leaks, stop at the first error.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run_one T: fuzz target T; writes its verdict to fuzz/out/T/result.
run_one() {
	local t=$1
	local out="$top/fuzz/out/$t"
	local bin="$build/fuzz_$t"
	local dict="$top/fuzz/dict/$t.dict"
	local dict_arg=()
	mkdir -p "$out/corpus" "$out/artifacts"
	rm -f "$out/artifacts"/* "$out/result"
	if [ ! -x "$bin" ]; then
		echo "FAIL missing $bin" >"$out/result"
		return
	fi
	if [ -d "$top/fuzz/corpus/$t" ]; then
		cp -n "$top/fuzz/corpus/$t"/* "$out/corpus/" 2>/dev/null
	fi
	[ -f "$dict" ] && dict_arg=(-dict="$dict")
	"$bin" "$out/corpus" "${dict_arg[@]}" \
		-max_total_time="$seconds" -rss_limit_mb=2048 -max_len="$max_len" \
		-timeout="$timeout" -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
		>"$out/fuzz.log" 2>&1
	local rc=$?
	local found
	found=$(find "$out/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' \
		-o -name 'timeout-*' -o -name 'oom-*' \) | sort)
	local execs cov ft units
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -n 1)
	cov=$(grep -oE 'cov: [0-9]+' "$out/fuzz.log" | tail -n 1 | cut -d' ' -f2)
	ft=$(grep -oE 'ft: [0-9]+' "$out/fuzz.log" | tail -n 1 | cut -d' ' -f2)
	units=$(find "$out/corpus" -type f | wc -l)
	local summary="execs ${execs:-?}, cov ${cov:-?}, ft ${ft:-?}, corpus $units"
	if [ -n "$found" ] || [ "$rc" -ne 0 ]; then
		{
			echo "FAIL $summary (libFuzzer exit $rc)"
			for a in $found; do echo "  artifact: ${a#"$top"/}"; done
			grep -E -m 3 'ERROR: |runtime error|Sanitizer|ALARM|out-of-memory' "$out/fuzz.log" |
				sed 's/^/  /'
			echo "  log: ${out#"$top"/}/fuzz.log"
		} >"$out/result"
	else
		echo "ok   $summary" >"$out/result"
	fi
}

running=0
for t in $targets; do
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

pass=0
fail=0
for t in $targets; do
	r="$top/fuzz/out/$t/result"
	if [ -f "$r" ] && head -n 1 "$r" | grep -q '^ok'; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
	printf '%-14s %s\n' "$t" "$(head -n 1 "$r" 2>/dev/null || echo 'FAIL no result')"
	tail -n +2 "$r" 2>/dev/null
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
