#!/usr/bin/env bash
# The real-client gateway suite as an unprivileged user: the supervisor, its
# gateway threads and the sandbox without root.  As root: make (or reuse) the
# system user cairn-escape (the escape suite's), copy cairn where it can run
# it, and run clients.sh under runuser.  As anyone else: just run the suite.
# Usage: tests/gateway/run-unpriv.sh CAIRN_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$here/clients.sh" "$1"
fi
. "$here/../unpriv.sh"
unpriv_setup cairn-gw-bin
# the suite's own files and node_modules are read where they are
runuser -u "$user" -- test -r "$here/clients.sh" ||
	unpriv_fail "$here is not readable by $user (clone the repository where others can read it)"
unpriv_cairn "$1"
cd "$dir" || exit 1
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 TMPDIR=/tmp \
	runuser -u "$user" -- bash "$here/clients.sh" "$dir/cairn"
