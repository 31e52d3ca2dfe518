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
expect_any() {   # expect_any TEXT...: the output has one of them
	for t in "$@"; do printf '%s' "$out" | grep -qF -- "$t" && { ok; return; }; done
	bad "output lacks every one of: $*"; echo "$out" | head -30
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
printf 'name = "t"\nname = "u"\n' > dup.toml
expect_exit 1 "$cairn" run --config dup.toml
expect_out "cairn: error: cannot parse config file $work/dup.toml: $work/dup.toml:2:1: duplicate key \`name\`"
n=$(printf '%s' "$out" | grep -o 'cannot parse config file' | wc -l)
[ "$n" -eq 1 ] && ok || bad "a TOML error is framed $n times, not once: $out"
[ ! -e "$work/box" ] && ok || bad "a refused config created the box directory"

echo 'permit (principal, action == Box::Action::"fs:raed", resource);' > broken.dw
box b.toml '["/bin/true"]'
sed -i 's/policy.dw/broken.dw/' b.toml
expect_exit 1 "$cairn" run --config b.toml
expect_out "will not load"
expect_out "broken.dw"
# Box's line word for word: the refusal right after `will not load: `
expect_out "cairn: error: policy file $work/broken.dw will not load: policy references unknown action: for policy \`policy_0\`, unrecognized action"
echo 'permit (principal, action == Box::Action::"fs:read", resource)' > broken.dw
expect_exit 1 "$cairn" run --config b.toml
expect_out "will not load: failed to parse policy source: dogwood parse: unexpected end of input; expected \`;\` to end the policy, or \`when\`/\`unless\` to add a condition"
# Box's order: the box directory, its records, then the policy; the refusal
# is the run's second control record (docs/records.md "Control records")
grep -q '"policy_refused"' "$work/box/private/telemetry/records.jsonl" && ok ||
	bad "an unloadable policy left no policy_refused record"
grep -q '"box_stopped"' "$work/box/private/telemetry/records.jsonl" && ok ||
	bad "an unloadable policy left no box_stopped record"
rm -rf "$work/box"

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
n=$(printf '%s\n' "$out" | grep -cE '^rename: (Device or resource busy|Invalid cross-device link|Permission denied)$')
[ "$n" -eq 4 ] && ok || bad "renaming a parent of a mask: $n of 4 refused (EBUSY, EXDEV, or EACCES from the mediator's floor)"
expect_no "RENAMED-OK"
n=$(printf '%s\n' "$out" | grep -c '^Permission denied$')
[ "$n" -eq 2 ] && ok || bad "the masked config and store: $n of 2 refused with EACCES"
[ -f top/cfg/sub/box.toml ] && [ ! -e top/moved ] && ok || bad "a parent of a mask was renamed"

# --- Box's own layout: box.toml and policy.dw in <workspace>/.strands-box, the
# workspace writable.  The folder is subtracted from the grant (masked), and
# the workload can neither read it, create in it, nor move or replace it. ---
H=$work/hw
mkdir -p "$H/.strands-box" "$H/other"
echo 'permit (principal, action, resource);' > "$H/.strands-box/policy.dw"
cat > "$H/probe.py" <<EOF
import ctypes, os
D = "$H/.strands-box"
libc = ctypes.CDLL(None, use_errno=True)
def exchange():
    if libc.renameat2(-100, D.encode(), -100, b"$H/other", 2) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
def create():
    open(D + "/planted", "w").close()
steps = [("write", lambda: open("$H/made", "w").write("ok")),
         ("list", lambda: os.listdir(D)),
         ("read", lambda: open(D + "/box.toml").read()),
         ("create", create),
         ("rename-away", lambda: os.rename(D, "$H/moved")),
         ("remove", lambda: os.rmdir(D)),
         ("rename-onto", lambda: os.rename("$H/other", D)),
         ("exchange", exchange),
         ("chmod", lambda: os.chmod(D, 0o777))]
for name, f in steps:
    try:
        f()
        print(name + ": OK")
    except OSError as e:
        print(name + ": " + e.strerror)
EOF
harness() {   # harness EXTRA: Box's harness config, the workspace writable
	cat > "$H/.strands-box/box.toml" <<EOF
name = "harness"
box_dir = "$work/hbox"
policy = "policy.dw"

[agent]
command = ["/usr/bin/python3", "$H/probe.py"]
workspace = "$H"

[agent.filesystem]
write = ["$H"]
$1
EOF
}
check_harness() {   # check_harness WHAT: the probe's results and the host's files
	expect_out "write: OK"
	expect_out "list: Permission denied"
	expect_out "read: Permission denied"
	expect_out "create: Permission denied"
	# the kernel's answer (a mount point, a read-only mask), or, mediated, the
	# mediator's floor refusing first
	for w in rename-away remove rename-onto exchange; do
		expect_any "$w: Device or resource busy" "$w: Permission denied"
	done
	expect_any "chmod: Read-only file system" "chmod: Permission denied"
	[ "$(cat "$H/made" 2>/dev/null)" = ok ] && ok || bad "$1: the workspace write did not reach the host"
	[ -f "$H/.strands-box/box.toml" ] && [ -f "$H/.strands-box/policy.dw" ] && [ -d "$H/other" ] &&
		[ ! -e "$H/moved" ] && [ ! -e "$H/.strands-box/planted" ] && ok ||
		bad "$1: the config's folder changed on the host"
	rm -f "$H/made"
}
harness ""
expect_exit 0 "$cairn" run --config "$H/.strands-box/box.toml"
expect_out "  write  $H  (readable too: a writable bind reads)"
expect_out "  masked  $H/.strands-box  (holds this run's config and policy, subtracted from $H)"
check_harness "harness"
# the user's own fix, a deny of the folder: it starts (no mask inside the mask)
harness "deny = [\"$H/.strands-box\"]"
expect_exit 0 "$cairn" run --config "$H/.strands-box/box.toml"
expect_out "  deny  $H/.strands-box"
expect_no "No space left on device"
check_harness "harness with a deny"
# unmediated, the kernel's own answers, exactly
harness "
[containment]
mediate = false"
expect_exit 0 "$cairn" run --config "$H/.strands-box/box.toml"
for w in rename-away remove rename-onto exchange; do expect_out "$w: Device or resource busy"; done
expect_out "chmod: Read-only file system"
check_harness "harness unmediated"

# --- a deny of a path that does not exist: Box's words ---
box dn.toml '["/bin/true"]' "deny = [\"$work/ws/not-yet\"]"
expect_exit 1 "$cairn" run --config dn.toml
expect_out "$work/ws/not-yet does not exist yet"
expect_out "create it first, or deny an existing directory above it"

# --- the login shell: the operator's (else /bin/bash), keeping the box's PATH ---
want_sh=$(getent passwd "$(id -u)" | cut -d: -f7)
case "$want_sh" in /bin/*|/usr/*) ;; *) want_sh=/bin/bash ;; esac
grep -qxF -- "$want_sh" /etc/shells && [ -x "$want_sh" ] || want_sh=/bin/bash
box ls.toml '["/bin/sh", "-c", "bash -lc \"echo L1=\\$PATH\"; sh -lc \"echo L2=\\$PATH\"; getent passwd $(id -u) | cut -d: -f7 | sed s/^/SH=/; echo ENV_SHELL=$SHELL"]'
# unmediated: a mediated box reads the operator's own dotfiles, as the policy lets it
printf '\n[containment]\nmediate = false\n' >> ls.toml
expect_exit 0 "$cairn" run --config ls.toml
expect_out "L1=$work/box/bin:/usr/local/bin:/usr/bin:/bin"
expect_out "L2=$work/box/bin:/usr/local/bin:/usr/bin:/bin"
expect_out "SH=$want_sh"
expect_out "ENV_SHELL=$want_sh"

# --- an env table may not set a route's phantom variable ---
box ph.toml '["/bin/true"]' '[agent.env]
API_TOKEN = "sk-live"
[egress.api]
destinations = ["api.example.test"]
secret.ref = "env://API_TOKEN"'
expect_exit 1 env API_TOKEN=secret "$cairn" run --config ph.toml
expect_out "$work/ph.toml:13:1: \`[agent.env]\` sets API_TOKEN, the variable that carries the phantom of \`[egress.api]\` (secret.ref \"env://API_TOKEN\" at 16:14)"

# --- HOME: Box's default (the operator's), said when the box cannot write it;
# docs/config.md's recipe gives the agent a home ---
op_home=$(getent passwd "$(id -u)" | cut -d: -f6)
box hm.toml '["/bin/sh", "-c", "mkdir -p $HOME/.codex && echo state > $HOME/.codex/s && cat $HOME/.codex/s"]'
# unmediated: mediated, HOME is a decided tree, which this policy lets the agent write
printf '\n[containment]\nmediate = false\n' >> hm.toml
expect_exit 1 "$cairn" run --config hm.toml
expect_out "cairn: warning: [agent] HOME $op_home is not writable in the box ("
expect_out "Read-only file system"
mkdir -p ah
box hm2.toml '["/bin/sh", "-c", "mkdir -p $HOME/.codex && echo state > $HOME/.codex/s && cat $HOME/.codex/s"]' "[agent.env]
HOME = \"$work/ah\""
sed -i "s|^write = .*|write = [\"$work/ws\", \"$work/ah\"]|" hm2.toml
expect_exit 0 "$cairn" run --config hm2.toml
expect_out "cairn: [agent] HOME=$work/ah "
expect_no "is not writable in the box"
expect_out "state"
[ "$(cat ah/.codex/s 2>/dev/null)" = state ] && ok || bad "the agent's home did not keep its state"

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

# --- the gateway process (docs/egress.md "Two processes") ---
# It starts on the sandbox's first connection: a run that never dials out
# never starts it.
gw_child() { pgrep -P "$1" -x cairn-gateway; }
box lz.toml '["/bin/sh", "-c", "touch running; sleep 1"]'
"$cairn" run --config lz.toml >lz.out 2>&1 &
p=$!
pids+=("$p")
wait_for ws/running || bad "lazy gateway: the run did not start"
if gw_child "$p" >/dev/null; then bad "the gateway process started with no connection"; else ok; fi
wait "$p" && ok || bad "lazy gateway: exit $? (want 0)"
rm -f ws/running
# The first connection starts it; if it dies while the workload runs, the box
# ends (exit 1) with how it ended.
box gd.toml '["/bin/sh", "-c", "curl -s -o /dev/null -w \"%{http_code}\\n\" http://169.254.169.254/; touch running; sleep 30"]'
"$cairn" run --config gd.toml >gd.out 2>&1 &
p=$!
pids+=("$p")
wait_for ws/running || bad "gateway death: the run did not start"
gp=$(gw_child "$p")
if [ -n "$gp" ]; then ok; else bad "the first connection did not start the gateway process"; fi
[ -n "$gp" ] && kill -KILL "$gp"
wait "$p"
st=$?
[ "$st" -eq 1 ] && ok || bad "gateway death: exit $st (want 1)"
out=$(cat gd.out)
expect_out "403"
expect_out "the gateway process was killed by signal 9 while the workload ran; stopping the box"
rm -f ws/running
# A check only the gateway can make ([gateway] extra_ca_files) starts it at
# once, and a failure refuses the box before the workload runs.
echo "not a certificate" > docs/bad-ca.pem
box ca.toml '["/bin/sh", "-c", "touch ran"]' "[gateway]
extra_ca_files = [\"$work/docs/bad-ca.pem\"]"
expect_exit 1 "$cairn" run --config ca.toml
expect_out "gateway TLS: extra CA file $work/docs/bad-ca.pem holds no certificate"
[ -e ws/ran ] && bad "the workload ran with a bad extra CA file" || ok

# --- decision records (docs/records.md): the file, Box's jq recipe, the live
# lines, cairn records show ---
cat > rec.dw <<'POL'
@id("no_blocked")
@description("blocked.test is off limits.")
forbid (principal, action == Box::Action::"net:connect", resource)
when { context.input.host == "blocked.test" };
@id("all")
permit (principal, action, resource);
POL
box r.toml '["/bin/sh", "-c", "curl -s -o /dev/null -w \"%{http_code}\\n\" -H \"traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\" http://blocked.test/; curl -s -o /dev/null -w \"%{http_code}\\n\" http://169.254.169.254/"]'
sed -i 's/policy.dw/rec.dw/' r.toml
rm -rf "$work/box"
expect_exit 0 "$cairn" run --config r.toml
rec="$work/box/private/telemetry/records.jsonl"
[ -f "$rec" ] && [ "$(stat -c %a "$rec")" = 600 ] && ok || bad "no records file, or not mode 0600"
expect_out "cairn: deny  net:connect  blocked.test:80  [no_blocked]"
expect_out "cairn: deny  net:connect  169.254.169.254:80  [enforcement:destination-floor]"
# Box's tutorial recipe, word for word
got=$(jq -r '
  .resourceLogs[]?.scopeLogs[]
  | select(.scope.name == "strands-box.policy")
  | .logRecords[]
  | [.attributes[] | select(.key | startswith("strands.box.policy."))
     | {(.key | ltrimstr("strands.box.policy.")): .value.stringValue}]
  | add
  | "\(.verdict)\t\(.action)\t\(.resource)\t\(.rule)"
' "$rec")
# (mediated: each curl the shell starts is a shell:exec decision, permitted)
c1="curl -s -o /dev/null -w '%{http_code}\\n' -H 'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' http://blocked.test/"
c2="curl -s -o /dev/null -w '%{http_code}\\n' http://169.254.169.254/"
want=$(printf 'permit\tshell:exec\t%s\tall\ndeny\tnet:connect\tblocked.test:80\tno_blocked\npermit\tshell:exec\t%s\tall\ndeny\tnet:connect\t169.254.169.254:80\tenforcement:destination-floor' "$c1" "$c2")
# (the mediator's records and the gateway's reach the file by two paths, so
# their order across the two is not fixed: compared as sets; curl's own
# reads of its config files in the decided home are the mediator's too, and
# depend on curl's version: left out)
[ "$(printf '%s\n' "$got" | grep -v '	fs:' | sort)" = "$(printf '%s\n' "$want" | sort)" ] && ok ||
	bad "the tutorial's jq recipe printed: $got"
# the first line is a control record; box_started, policy_installed, box_stopped
first=$(head -n 1 "$rec" | jq -r '.resourceLogs[0].scopeLogs[0].scope.name')
[ "$first" = strands-box.control ] && ok || bad "the first line's scope is $first"
ops=$(jq -r '.resourceLogs[]?.scopeLogs[] | select(.scope.name == "strands-box.control")
  | .logRecords[] | .attributes[] | select(.key == "strands.box.control.operation")
  | .value.stringValue' "$rec" | tr '\n' ' ')
[ "$ops" = "box_started policy_installed box_stopped " ] && ok || bad "control records: $ops"
# the workload's traceparent is the record's trace (a plain-HTTP request)
tid=$(jq -r '.resourceLogs[]?.scopeLogs[] | select(.scope.name == "strands-box.policy")
  | .logRecords[] | select(any(.attributes[]; .value.stringValue == "net:connect")) | .traceId' "$rec" | head -n 1)
[ "$tid" = 0af7651916cd43dd8448eb211c80319c ] && ok || bad "trace id $tid, not the workload's"
jq -c '.resourceSpans[]?.scopeSpans[].spans[] | select(.name == "policy net:connect")
  | select(.parentSpanId == "b7ad6b7169203331")' "$rec" | grep -q . && ok ||
	bad "the decision's span has not the workload's parent"
# resource: the box's id, and one run id on every line of the run
[ "$(jq -r '(.resourceLogs // .resourceSpans)[0].resource.attributes[]
  | select(.key == "strands.box.name") | .value.stringValue' "$rec" | sort -u)" = "$(cat "$work/box/private/box-id")" ] &&
	ok || bad "strands.box.name is not the box's id"
[ "$(jq -r '(.resourceLogs // .resourceSpans)[0].resource.attributes[]
  | select(.key == "strands.box.run.id") | .value.stringValue' "$rec" | sort -u | wc -l)" = 1 ] &&
	ok || bad "one run wrote more than one run id"
# the records show form matches the live lines
expect_exit 0 "$cairn" records show "$work/box"
expect_out "cairn: control  box_started  t  [ok]"
expect_out "cairn: deny  net:connect  blocked.test:80  [no_blocked]"
[ "$("$cairn" records show "$work/box" --json)" = "$(cat "$rec")" ] && ok || bad "records show --json is not the file"
# the history rebuilds what the file lacks: a removed file, a killed supervisor
mv "$work/box/private/telemetry/records.jsonl" "$work/saved.jsonl"
expect_exit 0 "$cairn" records show "$work/box"
expect_out "cairn: deny  net:connect  blocked.test:80  [no_blocked]  (rebuilt from the history)"
expect_out "decision records were not in the records file; rebuilt from the history"
got=$("$cairn" records show "$work/box" --json 2>/dev/null | jq -c '.resourceLogs[]?.scopeLogs[]
  | select(.scope.name == "strands-box.policy") | .logRecords[] | [.spanId, .traceId, .attributes]')
want=$(jq -c '.resourceLogs[]?.scopeLogs[] | select(.scope.name == "strands-box.policy")
  | .logRecords[] | [.spanId, .traceId, .attributes]' "$work/saved.jsonl")
[ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "the rebuilt records differ from the written ones: $(diff <(echo "$got") <(echo "$want"))"
mv "$work/saved.jsonl" "$work/box/private/telemetry/records.jsonl"
expect_exit 0 "$cairn" records show "$work/box"
case "$out" in *rebuilt*) bad "records show rebuilt records the file has" ;; *) ok ;; esac
# --decisions=none: no live line, the records still written; --no-records: no file growth
n0=$(wc -l < "$rec")
expect_exit 0 "$cairn" run --decisions=none --config r.toml
case "$out" in *"cairn: deny "*) bad "--decisions=none printed a decision" ;; *) ok ;; esac
[ "$(wc -l < "$rec")" -gt "$n0" ] && ok || bad "--decisions=none wrote no records"
n0=$(wc -l < "$rec")
expect_exit 0 "$cairn" run --no-records --decisions=none --config r.toml
[ "$(wc -l < "$rec")" -eq "$n0" ] && ok || bad "--no-records wrote records"
expect_exit 2 "$cairn" run --decisions=some --config r.toml
expect_out "invalid value 'some' for '--decisions <WHICH>'"
# a bad OTEL_RESOURCE_ATTRIBUTES refuses the box before the workload
export OTEL_RESOURCE_ATTRIBUTES=service.name=x
expect_exit 1 "$cairn" run --config r.toml
expect_out "telemetry configuration: OTEL_RESOURCE_ATTRIBUTES names a reserved key"
export OTEL_RESOURCE_ATTRIBUTES='team=core'
expect_exit 0 "$cairn" run --config r.toml
unset OTEL_RESOURCE_ATTRIBUTES
tail -n 2 "$rec" | grep -q '{"key":"team","value":{"stringValue":"core"}}' && ok ||
	bad "the operator's resource attribute is not on the records"
# a declared file target replaces the default
cat >> r.toml <<TOML

[telemetry.audit]
kind = "file"
destination = "$work/audit/denies.jsonl"
include = ["deny"]
TOML
n0=$(wc -l < "$rec")
expect_exit 0 "$cairn" run --config r.toml
[ "$(wc -l < "$rec")" -eq "$n0" ] && ok || bad "a declared target did not replace the default"
[ "$(jq -r '.resourceLogs[]?.scopeLogs[].logRecords[].severityText' "$work/audit/denies.jsonl" | sort -u)" = deny ] &&
	ok || bad "include = [\"deny\"] let other records through"
# SIGTERM to the supervisor: the records are complete and synced at exit
box rt.toml '["/bin/sh", "-c", "curl -s -o /dev/null http://blocked.test/; touch running; sleep 30"]'
sed -i 's/policy.dw/rec.dw/' rt.toml
rm -rf "$work/box"
"$cairn" run --config rt.toml >/dev/null 2>&1 &
p=$!
pids+=("$p")
wait_for ws/running || bad "records under SIGTERM: the run did not start"
kill -TERM "$p"
wait "$p"
rm -f ws/running
jq -r '.resourceLogs[]?.scopeLogs[].logRecords[].attributes[] | select(.key == "strands.box.control.operation") | .value.stringValue' \
	"$work/box/private/telemetry/records.jsonl" | grep -qx box_stopped && ok ||
	bad "SIGTERM: box_stopped is not in the records"
grep -q 'blocked.test' "$work/box/private/telemetry/records.jsonl" && ok ||
	bad "SIGTERM: the decision before it is not in the records"
# a killed supervisor: what its writer never wrote, the history has
rm -rf "$work/box"
"$cairn" run --config rt.toml >/dev/null 2>&1 &
p=$!
pids+=("$p")
wait_for ws/running || bad "SIGKILL: the run did not start"
kill -KILL "$p"
wait "$p" 2>/dev/null
rm -f ws/running
expect_exit 0 "$cairn" records show "$work/box"
expect_out "cairn: deny  net:connect  blocked.test:80  [no_blocked]"

# --- the agent receiver (docs/records.md "The agent receiver"): Box's
# variables, ${OTEL_EXPORTER_OTLP_*} in fixed arguments (never in the trailing
# ones), and a JSON payload relayed re-stamped ---
cat > otlp.json <<'J'
{"resourceLogs":[{"resource":{"attributes":[{"key":"strands.box.name","value":{"stringValue":"forged"}},{"key":"svc","value":{"stringValue":"mine"}}]},"scopeLogs":[{"scope":{"name":"strands-box.policy"},"logRecords":[{"body":{"stringValue":"agent says hi"},"attributes":[{"key":"strands.box.policy.verdict","value":{"stringValue":"permit"}},{"key":"keep","value":{"stringValue":"yes"}}]}]}]}]}
J
cp otlp.json docs/otlp.json
box o.toml '["/bin/sh", "-c", "echo \"arg=$0 $1 $2\"; env | grep ^OTEL_ | sort; curl -s -w \" %{http_code}\\n\" -H \"content-type: application/json\" --data-binary @'"$work"'/docs/otlp.json \"$OTEL_EXPORTER_OTLP_ENDPOINT/v1/logs\"; curl -s -o /dev/null -w \"%{http_code}\\n\" --data x \"$OTEL_EXPORTER_OTLP_ENDPOINT/v1/other\"", "${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}", "${OTEL_EXPORTER_OTLP_PROTOCOL}+${HOME}"]'
rm -rf "$work/box"
out=$("$cairn" run --config o.toml -- '${OTEL_EXPORTER_OTLP_ENDPOINT}' 2>/dev/null)
expect_out "arg=http://127.0.0.1:4318/v1/traces http/protobuf+\${HOME} \${OTEL_EXPORTER_OTLP_ENDPOINT}"
expect_out "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"
expect_out "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
expect_out "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces"
expect_out "{} 200"
expect_out "404"
rec="$work/box/private/telemetry/records.jsonl"
line=$(grep -F 'agent says hi' "$rec")
[ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] && ok || bad "the relayed payload is not one line of $rec"
got=$(printf '%s' "$line" | jq -c '[.resourceLogs[0].resource.attributes[] | [.key, .value.stringValue]]')
box_id=$(cat "$work/box/private/box-id")
run_id=$(head -n 1 "$rec" | jq -r '.resourceLogs[0].resource.attributes[] | select(.key == "strands.box.run.id") | .value.stringValue')
want='[["svc","mine"],["strands.box.source","agent"],["strands.box.name","'"$box_id"'"],["strands.box.run.id","'"$run_id"'"]]'
[ "$got" = "$want" ] && ok || bad "relayed resource: $got (want $want)"
got=$(printf '%s' "$line" | jq -c '.resourceLogs[0].scopeLogs[0] | [.scope.name, [.logRecords[0].attributes[].key]]')
[ "$got" = '["agent-claimed:strands-box.policy",["keep"]]' ] && ok || bad "relayed scope and attributes: $got"
# the live lines and `records show` are the box's decisions, not the agent's payloads
expect_exit 0 "$cairn" records show "$work/box"
expect_no "agent says hi"
# a table may not claim the receiver's variables
box oe.toml '["/bin/true"]' '[agent.env]
OTEL_EXPORTER_OTLP_ENDPOINT = "http://elsewhere:4318"'
expect_exit 1 "$cairn" run --config oe.toml
expect_out '`env` name "OTEL_EXPORTER_OTLP_ENDPOINT" is set by the box itself'

# --- kernel refusals (docs/records.md "Kernel refusals"): the filter's EPERM,
# observed and recorded, the first at once, the repeats counted ---
cat > docs/raw.py <<'PY2'
import socket
for i in range(5):
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        print("opened")
    except OSError as e:
        print("errno", e.errno)
PY2
box k.toml '["/usr/bin/python3", "'"$work"'/docs/raw.py", "--quiet", "hunter2"]'
rm -rf "$work/box"
out=$("$cairn" run --config k.toml 2>/dev/null)
[ "$(printf '%s\n' "$out" | grep -c '^errno 1$')" = 5 ] && ok || bad "AF_PACKET was not refused EPERM five times: $out"
rec="$work/box/private/telemetry/records.jsonl"
got=$(jq -c '.resourceLogs[]?.scopeLogs[] | select(.scope.name == "strands-box.containment") | .logRecords[]
  | [.severityText, .eventName, ([.attributes[] | {(.key): (.value.stringValue // .value.intValue // [.value.arrayValue.values[].stringValue])}] | add)]
  | [.[0], .[1], .[2]["strands.box.containment.syscall"], .[2]["strands.box.containment.arguments"],
     .[2]["strands.box.containment.suppressed"], .[2]["process.command_args"][1:]]' "$rec" | sort | tr '\n' ' ')
want='["refused","strands.box.containment.refusal","socket","family=AF_PACKET type=SOCK_RAW","0",["<redacted>","--quiet","<redacted>"]] ["refused","strands.box.containment.refusal","socket","family=AF_PACKET type=SOCK_RAW","4",["<redacted>","--quiet","<redacted>"]] '
[ "$got" = "$want" ] && ok || bad "kernel refusal records: $got (want $want)"
# --no-records: the plain filter, the same refusals
rm -rf "$work/box"
out=$("$cairn" run --no-records --config k.toml 2>/dev/null)
[ "$(printf '%s\n' "$out" | grep -c '^errno 1$')" = 5 ] && ok || bad "--no-records: AF_PACKET not refused: $out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
