#!/usr/bin/env bash
# The real agents as an unprivileged user (the escape suite's user,
# tests/escape/run-unpriv.sh): cairn and the agents' native binaries put
# where that user can run them (hard links when the file system allows),
# then test_real_agents.py under runuser.  As anyone else: just run.sh.
# Usage: tests/e2e/run-unpriv.sh CAIRN_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if [ $# -ne 1 ]; then
	echo "usage: $0 CAIRN_BINARY" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$here/run.sh" "$1"
fi
out=$(bash "$here/run.sh" --install-only)
case $? in
0) ;;
3) printf '%s\n' "$out"; exit 0 ;;      # skipped, loudly (not under CAIRN_CI)
*) printf '%s\n' "$out"; exit 1 ;;
esac
. "$here/../unpriv.sh"
unpriv_setup cairn-e2e-bin
unpriv_cairn "$1"
agents="$top/build/e2e-agents/node_modules"
mkdir -p "$dir/agents/node_modules/@anthropic-ai" "$dir/agents/node_modules/@openai" &&
	cp "$here/fake_model.py" "$here/test_real_agents.py" "$dir/" &&
	for pkg in @anthropic-ai/claude-code-linux-x64 @openai/codex-linux-x64; do
		cp -al "$agents/$pkg" "$dir/agents/node_modules/$pkg" 2>/dev/null ||
			cp -r "$agents/$pkg" "$dir/agents/node_modules/$pkg" || exit 1
	done ||
	unpriv_fail "cannot copy the binaries to $dir"
chmod -R a+rX "$dir"
cd /
runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" LANG=C.UTF-8 \
	python3 "$dir/test_real_agents.py" "$dir/cairn" "$dir/agents"
