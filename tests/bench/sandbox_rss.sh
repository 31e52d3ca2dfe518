#!/usr/bin/env bash
# sandbox-bench's memory figures (bench/README.md, "Sandbox start-up"): "supervisor peak
# RSS" is the supervisor's own process, "largest process of the run" also counts what it
# reaped. A stand-in supervisor reaps a child that writes 64 MiB, so the two must differ
# by that much; it also exits 0 only if its SIGCHLD reached it and it stopped and was
# continued, so a tracer that swallows signals fails the bench (exit 1). Then the real
# cairn must come through the traced runs too.
# Usage: tests/bench/sandbox_rss.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# mib LABEL: the MiB figure that follows "LABEL: " in $out, or nothing
mib() {
	printf '%s\n' "$out" | sed -nE "s/^ *$1: ([0-9]+\.[0-9]) MiB.*/\1/p" | head -n 1
}
# below A B: A < B, for one-decimal figures
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# The stand-in, started as `fake run --config TOML` like cairn.
cat >"$work/fake" <<'EOF'
#!/usr/bin/env python3
import os, signal, sys, time

got = []
signal.signal(signal.SIGCHLD, lambda s, f: got.append(s))
child = os.fork()
if child == 0:
    big = b"x" * (64 << 20)           # written, so resident: 64 MiB in the child only
    os._exit(0 if len(big) else 1)
os.waitpid(child, 0)
# The kernel queues SIGCHLD before waitpid returns: the handler runs at the first call
# below, unless a tracer swallowed the signal. The bound only ends that failure.
for _ in range(1000):
    if got:
        break
    time.sleep(0.001)
if not got:
    sys.exit(3)

# Stop once; a helper sends SIGCONT when it sees us stopped (T, or t when traced).
me = os.getpid()
helper = os.fork()
if helper == 0:
    for _ in range(10000):
        with open(f"/proc/{me}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                os.kill(me, signal.SIGCONT)
                os._exit(0)
        time.sleep(0.001)
    os.kill(me, signal.SIGCONT)       # never stopped: the SIGSTOP went missing
    os._exit(1)
os.kill(me, signal.SIGSTOP)
_, st = os.waitpid(helper, 0)
sys.exit(0 if os.waitstatus_to_exitcode(st) == 0 else 4)
EOF
chmod 755 "$work/fake"

out=$(TMPDIR=$work "$build/sandbox-bench" --cairn "$work/fake" --runs 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "sandbox-bench on the stand-in exited $rc"; echo "$out" | tail -n 20; fi
own=$(mib "supervisor peak RSS")
big=$(mib "largest process of the run")
# The stand-in itself is a Python interpreter (about 10 MiB); its child is 64 MiB more.
if [ -n "$own" ] && below "$own" 40; then ok; else
	bad "supervisor peak RSS of the stand-in is '${own:-missing}' MiB, want its own process (< 40)"
	echo "$out" | grep -A 3 "peak RSS"
fi
if [ -n "$big" ] && ! below "$big" 64; then ok; else
	bad "largest process of the stand-in's run is '${big:-missing}' MiB, want its 64 MiB child"
	echo "$out" | grep -A 4 "peak RSS"
fi
if printf '%s\n' "$out" | grep -q "VmHWM of the supervisor at its exit"; then ok; else
	bad "no line says how the supervisor's peak was taken"
fi

# The real supervisor under the same tracer: it must still exit 0 and get a figure (or
# say why there is none).
out=$(TMPDIR=$work "$build/sandbox-bench" --cairn "$build/cairn" --runs 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "sandbox-bench on cairn exited $rc"; echo "$out" | tail -n 20; fi
own=$(mib "supervisor peak RSS")
if [ -n "$own" ] || printf '%s\n' "$out" | grep -q "^    cairn unavailable: ."; then ok; else
	bad "sandbox-bench on cairn gave neither a supervisor peak nor why not"
	echo "$out" | grep -A 4 "peak RSS"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
