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

. "$here/../unpriv.sh"
unpriv_setup cairn-escape-bin
unpriv_cairn "$1"
cp "$2" "$dir/escape-probe" && cp "$here/run.sh" "$dir/run.sh" ||
	unpriv_fail "cannot copy the binaries to $dir"
chmod 0755 "$dir/escape-probe" "$dir/run.sh"

cd "$dir" || exit 1
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
	${ESCAPE_TMPDIR:+ESCAPE_TMPDIR="$ESCAPE_TMPDIR"} ${ESCAPE_CASES:+ESCAPE_CASES="$ESCAPE_CASES"} \
	runuser -u "$user" -- bash "$dir/run.sh" "$dir/cairn" "$dir/escape-probe"
