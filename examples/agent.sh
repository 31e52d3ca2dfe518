#!/bin/sh
# The demo's "agent": it tries things and reports what the sandbox did.
try() {
	desc=$1; shift
	if out=$("$@" 2>&1); then
		printf '  allowed  %-46s %s\n' "$desc" "$(printf '%s' "$out" | head -n 1)"
	else
		printf '  refused  %-46s %s\n' "$desc" "$(printf '%s' "$out" | tail -n 1)"
	fi
}
[ $# -gt 0 ] && echo "agent: my arguments (appended by cairn run): $*" && exit 0
echo "agent: I am $(id -un 2>/dev/null || id -u) in $(pwd), pid $$ ($(hostname))"
try "write in the workspace"        sh -c 'echo draft > notes.txt && cat notes.txt'
try "read the docs (read grant)"    cat /tmp/cairn-demo/docs/guide.txt
try "write the docs (read grant)"   sh -c 'echo x >> /tmp/cairn-demo/docs/guide.txt'
try "read proj/secrets (deny)"      cat /tmp/cairn-demo/proj/secrets/token
try "read the operator's home"      ls "$(getent passwd 0 | cut -d: -f6)/.."
try "read /etc/shadow"              cat /etc/shadow
try "count the processes it can see" sh -c 'ls /proc | grep -c "^[0-9]"'
try "capabilities"                  sh -c 'grep CapEff /proc/self/status'
try "mount a tmpfs"                 sh -c 'mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>&1 | head -n 1; exit 1'
try "a new user namespace"          unshare -U true
# The gateway's answers: a 403 carries the reason as its body.
web() {
	desc=$1; shift
	out=$(curl -sS -w '\n%{http_code}' "$@" 2>&1)
	code=$(printf '%s' "$out" | tail -n 1)
	case $code in
	2*) printf '  allowed  %-46s %s\n' "$desc" "HTTP $code" ;;
	*) printf '  refused  %-46s HTTP %s %s\n' "$desc" "$code" "$(printf '%s' "$out" | sed '$d' | tail -n 1)" ;;
	esac
}
command -v curl >/dev/null && web "HTTP to a host no rule permits" http://example.com/
command -v curl >/dev/null && try "TCP straight to 1.1.1.1:443" curl -sS --noproxy '*' --connect-timeout 2 https://1.1.1.1/
command -v python3 >/dev/null && try "python3 in the box" python3 -c 'import os; print("python", os.getpid())'
exit 0
