#!/usr/bin/env bash
# `cairn run`: usage, refusals, the box directory, exit statuses, signals, the
# environment, the disclosure and the gateway listener's floor.
# Usage: tests/cli/run_box.sh PATH/TO/cairn
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect_exit() {
	local want=$1; shift
	out=$("$@" 2>&1)
	local got=$?
	if [ "$got" -eq "$want" ]; then ok; else bad "exit $got (want $want): $*"; echo "$out" | head -20; fi
}
expect_out() {
	if printf '%s' "$out" | grep -qF -- "$1"; then ok; else bad "output lacks: $1"; echo "$out" | head -30; fi
}
expect_no() {
	if printf '%s' "$out" | grep -qF -- "$1"; then bad "output has: $1"; echo "$out" | head -30; else ok; fi
}
wait_for() {   # wait_for FILE: up to 10 s
	for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}
# signal_run CONFIG SIGNAL WANT WHAT: start a box whose workload touches
# ws/running, send cairn SIGNAL once it runs, and check its exit status.
signal_run() {
	env --default-signal=INT "$cairn" run --config "$1" >/dev/null 2>&1 &
	local p=$! st
	pids+=("$p")
	wait_for ws/running || bad "$4: the run did not start"
	kill -"$2" "$p"
	wait "$p"
	st=$?
	[ "$st" -eq "$3" ] && ok || bad "$4: exit $st (want $3)"
	rm -f ws/running
}

mkdir -p ws docs
echo "reference" > docs/guide.txt
echo 'permit (principal, action, resource);' > policy.dw
# box FILE COMMAND-TOML [EXTRA]: a config with the workspace writable
box() {
	cat > "$1" <<EOF
name = "t"
box_dir = "$work/box"
policy = "policy.dw"

[agent]
command = $2
workspace = "$work/ws"

[agent.filesystem]
write = ["$work/ws"]
read = ["$work/docs"]
${3:-}
EOF
}

# --- usage (exit 2) and refusals before the box (exit 1) ---
expect_exit 2 "$cairn" run
expect_out "--config <FILE>"
expect_exit 2 "$cairn" run --bogus
expect_out "unexpected argument '--bogus'"
expect_exit 1 "$cairn" run --config "$work/missing.toml"
expect_out "cannot read configuration file"
printf 'name = "t"\nbox_dir = "%s/box"\nbogus = 1\n[agent]\ncommand = ["/bin/true"]\n' "$work" > bad.toml
expect_exit 1 "$cairn" run --config bad.toml
expect_out "bad.toml:3:1"
[ ! -e "$work/box" ] && ok || bad "a refused config created the box directory"

echo 'permit (principal, action == Box::Action::"fs:raed", resource);' > broken.dw
box b.toml '["/bin/true"]'
sed -i 's/policy.dw/broken.dw/' b.toml
expect_exit 1 "$cairn" run --config b.toml
expect_out "will not load"
expect_out "broken.dw"
[ ! -e "$work/box" ] && ok || bad "an unloadable policy created the box directory"

# --- a box that runs: status, trailing args, disclosure, layout ---
box a.toml '["/bin/echo", "fixed"]'
expect_exit 0 "$cairn" run --config a.toml -- x -y --z
expect_out "fixed x -y --z"
expect_out "cairn: [agent] runs /usr/bin/echo with no policy decision over these paths:"
expect_out "  write  $work/ws"
expect_out "  read  $work/docs"
expect_out "cairn: [agent] HOME="
expect_out "cairn: starting workload"
[ "$(stat -c %a "$work/box")" = 700 ] && ok || bad "box_dir mode is not 0700"
for d in bin run trust private; do
	[ -d "$work/box/$d" ] && [ "$(stat -c %a "$work/box/$d")" = 700 ] && ok || bad "box_dir/$d missing or not 0700"
done
expect_exit 0 "$cairn" run --config a.toml
expect_out "opened"
# the box's durable history is there, its chain intact
expect_exit 0 "$cairn" history verify "$work/box"
expect_out "every CRC and the hash chain intact"

box s.toml '["/bin/sh", "-c", "exit 7"]'
expect_exit 7 "$cairn" run --config s.toml
box k.toml '["/bin/sh", "-c", "kill -TERM $$; sleep 5"]'
expect_exit 143 "$cairn" run --config k.toml

# --- the environment is built from scratch ---
box e.toml '["/usr/bin/env"]' '[agent.env]
LANG = "C.UTF-8"'
out=$(env TERM=xterm SECRET_TOKEN=hunter2 "$cairn" run --config e.toml 2>/dev/null)
expect_out "HOME="
expect_out "PATH=$work/box/bin:"
expect_out "USER=strands-box"
expect_out "PWD=$work/ws"
expect_out "LANG=C.UTF-8"
expect_out "HTTPS_PROXY=http://127.0.0.1:3128"
expect_no "SECRET_TOKEN"
expect_no "TERM="

# --- what the workload sees ---
box v.toml '["/bin/sh", "-c", "echo pid=$$; echo draft > note && cat note; cat '"$work"'/docs/guide.txt; echo x > '"$work"'/docs/guide.txt || echo ro-refused; ls /proc | grep -c \"^[0-9]\" | sed s/^/procs=/; grep CapEff /proc/self/status"]'
expect_exit 0 "$cairn" run --config v.toml
expect_out "pid=2"
expect_out "draft"
expect_out "reference"
expect_out "Read-only file system"
expect_out "ro-refused"
expect_out "CapEff:	0000000000000000"
[ "$(cat ws/note)" = draft ] && ok || bad "the workspace write did not reach the host"
[ "$(cat docs/guide.txt)" = reference ] && ok || bad "a read grant was written"

# --- the gateway serves the listener: the destination floor refuses metadata ---
box g.toml '["/usr/bin/curl", "-sS", "-o", "/dev/stderr", "-w", "%{http_code}\n", "http://169.254.169.254/latest/meta-data/"]'
expect_exit 0 "$cairn" run --config g.toml
expect_out "403"
expect_out "net:connect refused: '169.254.169.254:80' is a cloud metadata address"

# --- the gateway's CA: made while the sandbox is built, complete when the workload
# starts (the workload reads it first thing, as a client dialling at once would) ---
box ca.toml '["/bin/sh", "-c", "cat \"$SSL_CERT_FILE\" > seen.pem; openssl x509 -in seen.pem -noout -subject"]'
for i in 1 2 3 4 5; do
	rm -f ws/seen.pem
	expect_exit 0 "$cairn" run --config ca.toml
	expect_out "subject=CN = cairn Ephemeral Egress CA"
	cmp -s ws/seen.pem box/trust/cert.pem && ok || bad "run $i: the workload read another cert.pem than the one written"
done
rm -f ws/seen.pem

# --- one run at a time; SIGTERM stops it; nothing survives ---
token="cairn-survivor-$$"
box l.toml '["/bin/sh", "-c", "(setsid sh -c \"exec -a '"$token"' sleep 60\" &) ; touch running; sleep 60"]'
"$cairn" run --config l.toml >/dev/null 2>&1 &
first=$!
pids+=("$first")
if wait_for ws/running; then ok; else bad "the first run did not start"; fi
expect_exit 1 "$cairn" run --config l.toml
expect_out "box t is already running, and one run owns a box at a time"
pgrep -f "$token" >/dev/null && ok || bad "the daemon did not start inside the box"
kill -TERM "$first"
wait "$first"
st=$?
[ "$st" -eq 143 ] && ok || bad "SIGTERM: exit $st (want 143)"
sleep 0.2
pgrep -f "$token" >/dev/null && bad "a double-forked daemon survived the run" || ok
rm -f ws/running

# --- a workload that ignores SIGTERM is killed a second later: 128 + SIGKILL ---
box tk.toml '["/bin/sh", "-c", "trap \"\" TERM; touch running; sleep 30"]'
signal_run tk.toml TERM 137 "SIGTERM ignored, then SIGKILL"

# --- resets on the gateway listener do not end the supervisor (SIGPIPE) ---
box rs.toml '["/usr/bin/python3", "-c", "import socket, struct\nfor i in range(200):\n    s = socket.create_connection((\"127.0.0.1\", 3128))\n    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack(\"ii\", 1, 0))\n    s.close()\nprint(\"still here\")"]'
expect_exit 0 "$cairn" run --config rs.toml
expect_out "still here"

# --- SIGHUP stops the workload with SIGTERM, as Box does ---
box hu.toml '["/bin/sh", "-c", "trap \"exit 5\" TERM; touch running; while :; do sleep 0.05; done"]'
signal_run hu.toml HUP 5 "SIGHUP (the workload's TERM trap)"

# --- SIGINT reaches the workload's group ---
box i.toml '["/bin/sh", "-c", "trap \"exit 42\" INT; touch running; while :; do sleep 0.05; done"]'
signal_run i.toml INT 42 "SIGINT"

# --- masks cannot be moved away with a parent (the next run would plan by path) ---
mkdir -p top/cfg/sub top/home/.config/gcloud top/home/proj top/boxes
echo token > top/home/.config/gcloud/credentials.db
echo 'permit (principal, action, resource);' > top/cfg/sub/policy.dw
T=$work/top
cat > top/cfg/sub/box.toml <<EOF
name = "pin"
box_dir = "$T/boxes/pin"
policy = "policy.dw"

[agent]
command = ["/bin/sh", "-c", "for d in cfg cfg/sub home/.config boxes; do python3 -c 'import os, sys\ntry: os.rename(sys.argv[1], sys.argv[2]); print(\"RENAMED-OK\")\nexcept OSError as e: print(\"rename:\", e.strerror)' $T/\$d $T/moved; done; cat $T/cfg/sub/box.toml 2>&1 | sed 's/.*: //'; cat $T/home/.config/gcloud/credentials.db 2>&1 | sed 's/.*: //'"]
workspace = "$T/home/proj"
env = { HOME = "$T/home" }

[agent.filesystem]
write = ["$T"]
deny = ["$T/cfg/sub/box.toml", "$T/cfg/sub/policy.dw"]
EOF
expect_exit 0 "$cairn" run --config top/cfg/sub/box.toml
expect_out "pinned  $T/cfg  (holds a masked path; cannot be renamed)"
expect_out "pinned  $T/boxes  (holds a masked path; cannot be renamed)"
expect_out "masked  $T/home/.config/gcloud  (credential store beneath a grant)"
n=$(printf '%s\n' "$out" | grep -cE '^rename: (Device or resource busy|Invalid cross-device link)$')
[ "$n" -eq 4 ] && ok || bad "renaming a parent of a mask: $n of 4 refused (EBUSY or EXDEV)"
expect_no "RENAMED-OK"
n=$(printf '%s\n' "$out" | grep -c '^Permission denied$')
[ "$n" -eq 2 ] && ok || bad "the masked config and store: $n of 2 refused with EACCES"
[ -f top/cfg/sub/box.toml ] && [ ! -e top/moved ] && ok || bad "a parent of a mask was renamed"

# --- a terminal: bound into /dev, the workload's group in the foreground, no TIOCSTI ---
if command -v script >/dev/null; then
	box t.toml '["/bin/sh", "-c", "test -t 0 && echo isatty; awk '"'"'{print ($5==$8) ? \"foreground\" : \"background\"}'"'"' /proc/self/stat; python3 -c '"'"'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\")'"'"' 2>&1 | tail -n 1"]'
	out=$(script -qec "$cairn run --config $work/t.toml" /dev/null 2>&1)
	expect_out "isatty"
	expect_out "foreground"
	expect_out "PermissionError: [Errno 1] Operation not permitted"
fi

# --- job control: Ctrl-Z stops the box as a job, fg continues it ---
if command -v python3 >/dev/null && [ -x /bin/bash ]; then
	box jc.toml '["/bin/sh", "-c", "while read l; do echo \"got $l\"; done; echo bye"]'
	out=$(python3 "$here/job_control.py" "$cairn" "$work/jc.toml" 2>&1)
	expect_out "5 passed, 0 failed"
fi

# --- the box directory is checked ---
box m.toml '["/bin/true"]'
sed -i "s|$work/box|$work/box2|" m.toml
mkdir -m 755 "$work/box2"
expect_exit 1 "$cairn" run --config m.toml
expect_out "unsafe box directory $work/box2: its mode is not 0700"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
