#!/usr/bin/env bash
# The escape suite as an unprivileged user.  As root: make (or reuse) the system
# user cairn-escape, copy the binaries and run.sh where it can read and execute
# them (a build dir under a root-only tree may not be traversable), and run the
# suite under runuser.  As anyone else: just run the suite.
# Usage: tests/escape/run-unpriv.sh CAIRN_BINARY PROBE_BINARY
set -u

if [ $# -ne 2 ]; then
	echo "usage: $0 CAIRN_BINARY PROBE_BINARY" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$here/run.sh" "$@"
fi

user=cairn-escape
home=/var/lib/cairn-escape
if ! id -u "$user" >/dev/null 2>&1; then
	if ! useradd --system --user-group --create-home --home-dir "$home" \
		--shell /usr/sbin/nologin --comment "cairn escape suite" "$user"; then
		echo "FAIL: cannot create the user $user"
		echo "0 passed, 1 failed"
		exit 1
	fi
fi
home=$(getent passwd "$user" | cut -d: -f6)

dir=$(mktemp -d /var/tmp/cairn-escape-bin.XXXXXX) || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
# cairn-gateway and cairn-export beside cairn: the supervisor starts them from there
cp "$1" "$dir/cairn" && cp "$(dirname "$1")/cairn-gateway" "$dir/cairn-gateway" &&
	cp "$(dirname "$1")/cairn-export" "$dir/cairn-export" &&
	cp "$2" "$dir/escape-probe" && cp "$here/run.sh" "$dir/run.sh" || {
	echo "FAIL: cannot copy the binaries to $dir"
	echo "0 passed, 1 failed"
	exit 1
}
chmod 0755 "$dir/cairn" "$dir/cairn-gateway" "$dir/cairn-export" "$dir/escape-probe" "$dir/run.sh"

cd "$dir" || exit 1
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
	${ESCAPE_TMPDIR:+ESCAPE_TMPDIR="$ESCAPE_TMPDIR"} ${ESCAPE_CASES:+ESCAPE_CASES="$ESCAPE_CASES"} \
	runuser -u "$user" -- bash "$dir/run.sh" "$dir/cairn" "$dir/escape-probe"
