#!/usr/bin/env bash
# The sandbox escape suite (tests/escape/README.md): every case first runs as a
# positive control outside the sandbox (it must work there), then inside
# `cairn run`, where it must be refused with its exact errno.
# Usage: tests/escape/run.sh CAIRN_BINARY PROBE_BINARY
# Runs as the current user (root or not).  ESCAPE_TMPDIR: where the private
# fixture directory is made (default /var/tmp); ESCAPE_CASES: a space-separated
# subset of case names to run.
set -u

if [ $# -ne 2 ]; then
	echo "usage: $0 CAIRN_BINARY PROBE_BINARY" >&2
	exit 2
fi
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd -P)" "$(basename "$1")"); }
cairn=$(abs "$1")
probe_src=$(abs "$2")
for b in "$cairn" "$probe_src"; do
	[ -x "$b" ] || { echo "not executable: $b" >&2; echo "0 passed, 1 failed"; exit 1; }
done

pass=0
fail=0
skipped=0
server_pids=()
T=
host_tmp=
cleanup() {
	local p
	for p in "${server_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${server_pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	[ -n "$T" ] && rm -rf "$T"
	[ -n "$host_tmp" ] && rm -f "$host_tmp" "$host_tmp.inside"
}
trap cleanup EXIT

# --- the fixture: a private directory (0700) holding every path the cases use ---
base=${ESCAPE_TMPDIR:-/var/tmp}
T=$(mktemp -d "$base/cairn-escape.XXXXXX") || { echo "0 passed, 1 failed"; exit 1; }
chmod 0700 "$T"
T=$(cd "$T" && pwd -P)                      # grants must be canonical
ws=$T/ws                                    # the workspace: write grant
ro=$T/ro                                    # read grant
xdir=$T/x                                   # exec grant: the probe
home=$T/home                                # a home-like dir, not granted
scratch=$T/scratch                          # host-side scratch, not granted
sockdir=$T/sock                             # a host listener's dir, not granted
cfgdir=$T/cfg                               # box.toml and the policy
box=$T/box                                  # box_dir, made by the first run
mkdir -p "$ws/deny" "$ro" "$xdir" "$home" "$scratch" "$sockdir" "$cfgdir"
echo "read-only data" > "$ro/file"
echo "deny-secret-$RANDOM$RANDOM" > "$ws/deny/secret"
echo "denied-file-$RANDOM$RANDOM" > "$ws/denied-file"
echo "home-secret-$RANDOM$RANDOM" > "$home/secret"
ln -s "$ws/deny/secret" "$ws/secret-link"
cp "$probe_src" "$xdir/escape-probe"
chmod 0755 "$xdir/escape-probe"
probe=$xdir/escape-probe
host_tmp=$(mktemp /tmp/cairn-escape-host.XXXXXX)
echo "host /tmp file" > "$host_tmp"

cfg=$cfgdir/box.toml
# write_config MEDIATED: the box, unmediated with a policy that permits all,
# or mediated with one that permits only launches
write_config() {
	if [ "$1" = 1 ]; then
		cat > "$cfgdir/policy.dw" <<'EOF'
// Mediated: launches are permitted; no file operation in a decided tree is.
permit (principal, action == Box::Action::"shell:exec", resource);
EOF
	else
		cat > "$cfgdir/policy.dw" <<'EOF'
// The kernel column is under test: the policy decides nothing.
permit (principal, action, resource);
EOF
	fi
	cat > "$cfg" <<EOF
name = "escape"
box_dir = "$box"
policy = "policy.dw"

[containment]
mediate = $([ "$1" = 1 ] && echo true || echo false)

[agent]
command = ["$probe"]
workspace = "$ws"
env = { CAIRN_ESCAPE_MEDIATED = "$1" }

[agent.filesystem]
read = ["$ro"]
write = ["$ws"]
exec = ["$xdir"]
deny = ["$ws/deny", "$ws/denied-file"]

[agent.limits]
pids = 64
memory = "256M"
tmp_size = "16M"
EOF
}
write_config 0
label_prefix=

uid=$(id -u)
passwd_home=$(getent passwd "$uid" | cut -d: -f6)
[ -n "$passwd_home" ] || passwd_home=/root
blockdev=/dev/sda
for d in /dev/sda /dev/vda /dev/nvme0n1 /dev/xvda /dev/mmcblk0; do
	if [ -b "$d" ]; then blockdev=$d; break; fi
done
eth_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1)
[ -n "$eth_ip" ] || eth_ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9.]+$' | grep -v '^127\.' | head -n 1)
export CAIRN_ESCAPE_SECRET="escape-env-secret-$RANDOM$RANDOM"

# --- host listeners and a host sleeper (proven live by each case's control) ---
start() { "$@" </dev/null >/dev/null 2>&1 & server_pids+=($!); }
wait_file() {
	local _i
	for _i in $(seq 1 100); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
start "$probe" --serve-tcp 127.0.0.1 "$T/tcp.port"
wait_file "$T/tcp.port"
tcp_port=$(cat "$T/tcp.port" 2>/dev/null)
ext_port=
if [ -n "$eth_ip" ]; then
	start "$probe" --serve-tcp "$eth_ip" "$T/ext.port"
	wait_file "$T/ext.port"
	ext_port=$(cat "$T/ext.port" 2>/dev/null)
fi
abstract_name="cairn-escape-$$-$RANDOM"
start "$probe" --serve-abstract "$abstract_name"
start "$probe" --serve-unix "$sockdir/listener.sock"
start sleep 300
sleeper=${server_pids[-1]}
for _ in $(seq 1 100); do
	[ -S "$sockdir/listener.sock" ] && break
	sleep 0.05
done

# Descriptors without close-on-exec, inherited by `cairn run`: they must not
# reach the workload.
exec 7<"$home/secret" 9<"$home/secret"

ok() { pass=$((pass + 1)); echo "PASS $label_prefix$1"; }
bad() { fail=$((fail + 1)); echo "FAIL $label_prefix$1"; }

# sandbox ARGS...: run the probe inside `cairn run`; sets out, rc, err.
sandbox() {
	out=$(timeout -k 5 60 "$cairn" run --config "$cfg" -- "$@" </dev/null 2>"$T/stderr")
	rc=$?
	err=$(tail -n 5 "$T/stderr")
}

selected() {
	[ -z "${ESCAPE_CASES:-}" ] && return 0
	case " $ESCAPE_CASES " in *" $1 "*) return 0 ;; esac
	return 1
}

# --- smoke: the sandbox runs the probe at all ---
sandbox --list
if [ "$rc" -eq 0 ] && [ "$out" = "$("$probe" --list)" ]; then
	ok "smoke: cairn run starts the probe"
else
	bad "smoke: cairn run --config box.toml -- --list: exit $rc: $(echo "$out" | head -n 3 | tr '\n' ' ') [stderr: $(echo "$err" | tr '\n' ' ')]"
fi

# check LABEL CASE ARGS...: the control outside, then the attempt inside.
check() {
	local label=$1; shift
	local name=$1
	selected "$name" || return 1
	local cout crc
	cout=$("$probe" --control "$@" </dev/null 2>&1)
	crc=$?
	if [ "$crc" -eq 77 ] && [[ "$cout" == "SKIP $name:"* ]]; then
		skipped=$((skipped + 1))
		echo "SKIP $label: control impossible on this host: ${cout#SKIP $name: }"
		return 1
	fi
	if [ "$crc" -ne 0 ] || [[ "$cout" != "PASS $name:"* ]]; then
		bad "$label: control failed (exit $crc): $cout"
		return 1
	fi
	sandbox "$@"
	case_out=$out
	if [ "$rc" -eq 0 ] && [[ "$out" == "PASS $name:"* ]]; then
		return 0
	fi
	if [ "$name" = memory-balloon ] && [ "$rc" -eq 137 ] && [[ "$out" != *FAIL* ]]; then
		case_out="PASS memory-balloon: the sandbox was OOM-killed (exit 137)"
		return 0
	fi
	bad "$label: exit $rc: ${out:-(no output)}${err:+ [stderr: $(echo "$err" | tr '\n' ' ')]}"
	return 1
}

# run_case LABEL CASE ARGS...: check, and count a pass.
run_case() {
	if check "$@"; then ok "$1: ${case_out#PASS $2: }"; fi
}

secret=$ws/deny/secret
all_cases() {
	run_case write-home write-home "$home"
	run_case read-home-secret read-home-secret "$home/secret"
	run_case write-real-home write-real-home "$passwd_home"
	run_case write-read-grant write-read-grant "$ro" "$ro/file"
	run_case write-grant-parent write-grant-parent "$T"
	if check host-tmp host-tmp "$host_tmp"; then
		if [ -e "$host_tmp.inside" ]; then
			bad "host-tmp: a file created in the sandbox's /tmp appeared in the host's /tmp"
		else
			ok "host-tmp: ${case_out#PASS host-tmp: }; nothing reached the host /tmp"
		fi
	fi
	run_case deny-read deny-read "$secret" "$ws/deny"
	run_case deny-file deny-file "$ws/denied-file"
	run_case deny-symlink deny-symlink "$ws/secret-link"
	run_case deny-proc-self-root deny-proc-self-root "$secret"
	run_case deny-proc1 deny-proc1 "$secret"
	# the supervisor's pid: the shell that execs `cairn run`
	if selected deny-proc-supervisor; then
		cout=$("$probe" --control deny-proc-supervisor "$secret" "$$" 2>&1)
		if [[ "$cout" != "PASS deny-proc-supervisor:"* ]]; then
			bad "deny-proc-supervisor: control failed: $cout"
		else
			out=$(timeout -k 5 60 bash -c 'exec "$0" run --config "$1" -- deny-proc-supervisor "$2" $$' \
				"$cairn" "$cfg" "$secret" </dev/null 2>"$T/stderr")
			rc=$?
			if [ "$rc" -eq 0 ] && [[ "$out" == "PASS deny-proc-supervisor:"* ]]; then
				ok "deny-proc-supervisor: ${out#PASS deny-proc-supervisor: }"
			else
				bad "deny-proc-supervisor: exit $rc: ${out:-(no output)} $(tail -n 3 "$T/stderr" | tr '\n' ' ')"
			fi
		fi
	fi
	run_case hardlink-exdev hardlink-exdev "$ro/file" "$ws"
	run_case deny-rename deny-rename "$ws/deny"
	run_case proc-sys-write proc-sys-write
	run_case sysrq-write sysrq-write
	run_case sys-absent sys-absent
	run_case run-absent run-absent
	for s in /run/dbus/system_bus_socket /var/run/docker.sock /run/docker.sock \
		/run/containerd/containerd.sock /run/podman/podman.sock "/run/user/$uid/bus" \
		"/run/user/$uid/podman/podman.sock" /tmp/.X11-unix/X0 ${SSH_AUTH_SOCK:+"$SSH_AUTH_SOCK"}; do
		run_case "host-socket $s" host-socket "$s"
	done
	run_case ptrace ptrace
	run_case proc1-mem proc1-mem
	run_case proc1-environ-fd proc1-environ-fd
	run_case proc1-exe proc1-exe
	run_case process-vm process-vm
	run_case io-uring-setup io-uring-setup
	run_case io-uring-enter io-uring-enter
	run_case tiocsti tiocsti
	run_case tiocsti-highbits tiocsti-highbits
	run_case tioclinux tioclinux
	run_case "dev-block $blockdev" dev-block "$blockdev"
	run_case dev-kmsg dev-kmsg
	run_case dev-mem dev-mem
	run_case dev-kvm dev-kvm
	run_case dev-fuse dev-fuse
	run_case dev-list dev-list
	run_case mount mount "$ro" "$ws" "$ws/deny"
	run_case umount umount "$ro" "$ws/deny"
	run_case open-tree open-tree "$ro"
	run_case fsopen fsopen
	run_case pivot-chroot pivot-chroot
	run_case unshare-user unshare-user
	run_case unshare-ns unshare-ns
	run_case clone-newuser clone-newuser
	run_case clone3 clone3
	run_case setns setns
	run_case abstract-unix abstract-unix "$abstract_name"
	run_case unix-path unix-path "$sockdir/listener.sock"
	run_case x32 x32
	run_case int80 int80
	run_case af-packet af-packet
	run_case af-netlink af-netlink
	run_case af-vsock af-vsock
	run_case af-other af-other
	run_case raw-inet raw-inet
	run_case tcp-loopback tcp-loopback "$tcp_port"
	if [ -n "$ext_port" ]; then
		run_case tcp-external tcp-external "$eth_ip" "$ext_port"
	elif selected tcp-external; then
		skipped=$((skipped + 1))
		echo "SKIP tcp-external: control impossible on this host: no non-loopback IPv4 address"
	fi
	run_case udp-external udp-external
	run_case fd-leak fd-leak
	run_case caps caps
	run_case kill-init kill-init
	if check kill-all kill-all "$sleeper"; then
		if kill -0 "$sleeper" 2>/dev/null; then
			ok "kill-all: ${case_out#PASS kill-all: }; the host sleeper lives"
		else
			bad "kill-all: the host sleeper $sleeper died"
		fi
	fi
	run_case fork-bomb fork-bomb
	run_case memory-balloon memory-balloon
	run_case tmp-fill tmp-fill "$scratch"
	run_case memfd-create memfd-create
	run_case memfd-exec memfd-exec
	run_case tmp-exec tmp-exec "$scratch"
	run_case shm-exec shm-exec "$scratch"
	run_case ws-exec ws-exec "$ws"
	run_case chmod-suid chmod-suid "$ws"
	run_case bpf bpf
	run_case perf-event-open perf-event-open
	run_case userfaultfd userfaultfd
	run_case keyctl keyctl
	run_case open-by-handle open-by-handle
	run_case seccomp-listener seccomp-listener
	run_case self-exe-write self-exe-write
	run_case pidfd-getfd pidfd-getfd
	run_case x86-legacy x86-legacy

	# daemon: a double-forked, setsid()ed, SIGTERM-ignoring appender must not
	# outlive the run.  Its control proves such a daemon survives outside.
	daemon_pids() { pgrep -f -- "$1" 2>/dev/null | tr '\n' ' '; }
	if selected daemon; then
		ctl_token="cairn-escape-daemon-ctl-$$-$RANDOM"
		cout=$("$probe" --control daemon "$ctl_token" "$scratch/daemon.log" 2>&1)
		sleep 0.2
		left=$(daemon_pids "$ctl_token")
		for p in $left; do kill -KILL "$p" 2>/dev/null; done
		if [[ "$cout" != "PASS daemon:"* ]] || [ -z "$left" ]; then
			bad "daemon: control failed: $cout (pids: ${left:-none})"
		else
			token="cairn-escape-daemon-$$-$RANDOM"
			log=$ws/daemon.log
			sandbox daemon "$token" "$log"
			sleep 0.3
			left=$(daemon_pids "$token")
			s1=$(stat -c %s "$log" 2>/dev/null || echo 0)
			sleep 0.3
			s2=$(stat -c %s "$log" 2>/dev/null || echo 0)
			for p in $left; do kill -KILL "$p" 2>/dev/null; done
			if [ "$rc" -ne 0 ] || [[ "$out" != "PASS daemon:"* ]]; then
				bad "daemon: exit $rc: ${out:-(no output)} $err"
			elif [ -n "$left" ]; then
				bad "daemon: survived the run: host pids $left"
			elif [ "$s1" != "$s2" ]; then
				bad "daemon: $log still grows after the run ($s1 -> $s2 bytes)"
			else
				ok "daemon: ${out#PASS daemon: } inside; gone after the run, $log stopped at $s2 bytes"
			fi
		fi
	fi
	run_case env-leak env-leak CAIRN_ESCAPE_SECRET
	run_case pid-ns-view pid-ns-view
	run_case netns-view netns-view
	run_case boxdir-view boxdir-view "$box"
}

# The kernel column first (mediation off: the policy permits everything and
# decides nothing), then the same cases mediated, under a policy that
# permits launches and nothing else: the decided trees are then refused by
# the mediator (EACCES) where the kernel's view has them absent, masked or
# read-only, and the probe, told so, takes either refusal.
all_cases
label_prefix="mediated: "
write_config 1
all_cases

exec 7<&- 9<&-
echo "$skipped skipped (control impossible on this host)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
