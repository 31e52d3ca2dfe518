#!/usr/bin/env bash
# The mediator's suite as an unprivileged user (the escape suite's user,
# tests/escape/run-unpriv.sh): binaries and the suite copied where it can
# run them, then run under runuser.  As anyone else: just run the suite.
# Usage: tests/mediate/run-unpriv.sh CAIRN_BINARY MED_CALLS_BINARY
set -u
if [ $# -ne 2 ]; then
	echo "usage: $0 CAIRN_BINARY MED_CALLS_BINARY" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$here/run.sh" "$@"
fi
. "$here/../unpriv.sh"
unpriv_setup cairn-med-bin
unpriv_cairn "$1"
mkdir -p "$dir/mediate" && cp "$2" "$dir/med-calls" &&
	cp "$(dirname "$2")/med-race" "$dir/med-race" &&
	cp "$here/run.sh" "$dir/mediate/run.sh" && cp "$here/../boxcheck.sh" "$dir/" ||
	unpriv_fail "cannot copy the binaries to $dir"
chmod -R a+rX "$dir"
cd /
exec runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
	bash "$dir/mediate/run.sh" "$dir/cairn" "$dir/med-calls"
