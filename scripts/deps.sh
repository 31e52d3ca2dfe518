#!/usr/bin/env bash
# Install what building and testing cairn needs on Debian 12, when it is missing.
# Run as root it uses apt-get; otherwise it only reports what is missing.
# Usage: scripts/deps.sh [build|test|bench|fuzz]   (each includes build)
set -euo pipefail

want="${1:-build}"
pkgs=(gcc make meson ninja-build pkg-config libjansson-dev libssl-dev libseccomp-dev nettle-dev libgmp-dev)
case "$want" in
# jq: Box's tutorial recipes on the records file (tests/cli/run_box.sh)
# openssl: the gateway and tools suites make their test CAs with the CLI
test) pkgs+=(nodejs npm clang libclang-rt-14-dev bubblewrap curl python3 jq git openssl) ;;
# the demo: its agent's git push after npm test, its forge (python3, openssl's CLI for its CA)
run) pkgs+=(git nodejs npm curl jq python3 openssl) ;;
fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
# bench: node for run.mjs, bwrap for sandbox-bench, mitmproxy (8.1.1) for gateway-bench
bench) pkgs+=(nodejs npm bubblewrap mitmproxy runsc git python3) ;;
esac

missing=()
for p in "${pkgs[@]}"; do
	# A tool that is already on PATH (e.g. a newer Node from elsewhere) counts as present.
	case "$p" in
	nodejs) command -v node >/dev/null 2>&1 && continue ;;
	npm) command -v npm >/dev/null 2>&1 && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]} (run as root, or: apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
