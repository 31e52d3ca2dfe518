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
user=cairn-escape
if ! id -u "$user" >/dev/null 2>&1 &&
	! useradd --system --user-group --create-home --home-dir /var/lib/cairn-escape \
		--shell /usr/sbin/nologin --comment "cairn escape suite" "$user"; then
	echo "FAIL: cannot create the user $user"
	echo "0 passed, 1 failed"
	exit 1
fi
home=$(getent passwd "$user" | cut -d: -f6)
# the suite's own files and node_modules are read where they are
if ! runuser -u "$user" -- test -r "$here/clients.sh"; then
	echo "FAIL: $here is not readable by $user (clone the repository where others can read it)"
	echo "0 passed, 1 failed"
	exit 1
fi
dir=$(mktemp -d /var/tmp/cairn-gw-bin.XXXXXX) || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
# cairn-gateway and cairn-export beside cairn: the supervisor starts them from there
cp "$1" "$dir/cairn" && cp "$(dirname "$1")/cairn-gateway" "$dir/cairn-gateway" &&
	cp "$(dirname "$1")/cairn-export" "$dir/cairn-export" &&
	chmod 0755 "$dir/cairn" "$dir/cairn-gateway" "$dir/cairn-export" || { echo "0 passed, 1 failed"; exit 1; }
cd "$dir" || exit 1
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 TMPDIR=/tmp \
	runuser -u "$user" -- bash "$here/clients.sh" "$dir/cairn"
