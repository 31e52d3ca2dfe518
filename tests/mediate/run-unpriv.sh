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
mkdir -p "$home" && chown "$user:$user" "$home"
dir=$(mktemp -d /var/tmp/cairn-med-bin.XXXXXX) || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
cp "$1" "$dir/cairn" && cp "$(dirname "$1")/cairn-gateway" "$dir/cairn-gateway" &&
	cp "$(dirname "$1")/cairn-export" "$dir/cairn-export" &&
	cp "$2" "$dir/med-calls" && cp "$(dirname "$2")/med-race" "$dir/med-race" &&
	cp "$here/run.sh" "$dir/run.sh" || {
	echo "FAIL: cannot copy the binaries to $dir"
	echo "0 passed, 1 failed"
	exit 1
}
chmod -R a+rX "$dir"
cd /
exec runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
	bash "$dir/run.sh" "$dir/cairn" "$dir/med-calls"
