# tests/unpriv.sh - sourced by the run-unpriv.sh scripts (escape, mediate,
# e2e): the unprivileged user they run their suite as, and a directory that
# user can read and execute (a build dir under a root-only tree may not be
# traversable).  After `unpriv_setup PREFIX`: $user, $home, and $dir (removed
# on exit).  A failure prints the suite's closing count and exits 1.
unpriv_fail() {
	echo "FAIL: $*"
	echo "0 passed, 1 failed"
	exit 1
}

unpriv_setup() {
	user=cairn-escape
	home=/var/lib/cairn-escape
	if ! id -u "$user" >/dev/null 2>&1; then
		useradd --system --user-group --create-home --home-dir "$home" \
			--shell /usr/sbin/nologin --comment "cairn escape suite" "$user" ||
			unpriv_fail "cannot create the user $user"
	fi
	home=$(getent passwd "$user" | cut -d: -f6)
	mkdir -p "$home" && chown "$user:$user" "$home" || unpriv_fail "cannot make $home"
	dir=$(mktemp -d "/var/tmp/$1.XXXXXX") || unpriv_fail "mktemp"
	trap 'rm -rf "$dir"' EXIT
	chmod 0755 "$dir"
}

# cairn into $dir, with cairn-gateway, cairn-export and cairn-shim beside it: the
# supervisor starts them from there (and copies the shim into bin/).
unpriv_cairn() {
	local b
	b=$(dirname "$1")
	cp "$1" "$dir/cairn" && cp "$b/cairn-gateway" "$b/cairn-export" "$b/cairn-shim" "$dir/" &&
		chmod 0755 "$dir/cairn" "$dir/cairn-gateway" "$dir/cairn-export" "$dir/cairn-shim" ||
		unpriv_fail "cannot copy cairn to $dir"
}
