# tests/boxcheck.sh - sourced by the suites that run programs in a box
# (tests/mediate/run.sh, tests/tools/run.sh): the counters, a box run and
# the checks on what it printed and what its history holds.
# The suite sets $cairn and $box (the box directory), and $T (a scratch
# directory); it ends with: echo "$pass passed, $fail failed".
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# box_run CONFIG DIR SCRIPT: `cairn run --config CONFIG -- SCRIPT` in DIR;
# out, err, rc.  An ASan build's report is a failure wherever it appears.
box_run() {
	out=$(cd "$2" && timeout -k 5 120 "$cairn" run --config "$1" -- "$3" 2>"$T/err" </dev/null)
	rc=$?
	err=$(cat "$T/err")
	if grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$T/err"; then
		bad "a sanitizer report: $(grep -E -A12 'Sanitizer|runtime error:' "$T/err" | head -n 30)"
	fi
}
has() { printf '%s' "$1" | grep -qF -- "$2"; }
want_out() { has "$out" "$1" && ok || bad "$2: output lacks '$1': $(printf '%s' "$out" | head -c 600)"; }
lacks_out() { has "$out" "$1" && bad "$2: output has '$1'" || ok; }
want_err() { has "$err" "$1" && ok || bad "$2: stderr lacks '$1': $(printf '%s' "$err" | grep -v '^  ' | tail -n 8)"; }
want_rc() { [ "$rc" = "$1" ] && ok || bad "$2: exit $rc, want $1: $(printf '%s' "$err" | grep -v '^  ' | tail -n 5)"; }

# The history: events JQ (compact JSON), events_raw JQ (raw strings), the
# last sequence number (mark), and what came after a mark.
events() { "$cairn" history show "$box" 2>/dev/null | jq -c "$1"; }
events_raw() { "$cairn" history show "$box" 2>/dev/null | jq -r "$1"; }
count() { events "$1" | grep -c .; }
mark() { local s; s=$("$cairn" history show "$box" 2>/dev/null | tail -n 1 | jq -r .seq); echo "${s:-0}"; }
since() { events "select(.seq > $1) | $2"; }
since_raw() { events_raw "select(.seq > $1) | $2"; }
