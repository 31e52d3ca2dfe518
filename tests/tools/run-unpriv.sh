#!/usr/bin/env bash
# The tools' suite as an unprivileged user (the escape suite's user,
# tests/unpriv.sh): cairn and its helpers copied where that user can run
# them, then run under runuser.  As anyone else: just run the suite.
# Usage: tests/tools/run-unpriv.sh CAIRN_BINARY
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 CAIRN_BINARY" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$here/run.sh" "$@"
fi
. "$here/../unpriv.sh"
unpriv_setup cairn-tools-bin
unpriv_cairn "$1"
mkdir -p "$dir/tools" "$dir/gateway" &&
	cp "$here/run.sh" "$here/frames.py" "$here/pty_check.py" "$dir/tools/" &&
	cp "$here/../gateway/mkcerts.sh" "$here/../gateway/upstream.py" "$here/../gateway/sigv4.py" "$dir/gateway/" &&
	cp "$here/../boxcheck.sh" "$dir/" ||
	unpriv_fail "cannot copy the suite to $dir"
chmod -R a+rX "$dir"
cd /
exec runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
	bash "$dir/tools/run.sh" "$dir/cairn"
