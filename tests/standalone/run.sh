#!/usr/bin/env bash
# The repository stands alone: a clone with nothing beside it builds and passes
# `make test`.  This suite fails when any file of the checkout (tracked, or new and
# not ignored) names what lives outside it: the folder that used to sit beside the
# checkout, the development machine's paths, the build macro and environment
# variable that pointed there, or the specification files kept there.  Tests read
# tests/data/; comments and docs cite docs/.
# Usage: tests/standalone/run.sh [TOP]      (TOP defaults to this checkout)
set -u

top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Each pattern is put together from pieces, so that this file does not match
# itself, nor a plain grep for the literal strings over the tree.  Each comes with
# a line it must find (so the suite can fail) and lines it must leave alone.
up='\.\.'
sib="$up/shared"                                   # the sibling folder
dev='(^|[^[:alnum:]_.-])/wo''rk/'                  # the development machine's tree
mac='CAIRN''_SHARED'                               # the macro and the variable
lay='(^|[^[:alnum:]_-])shared/(testdata|spec|hooks)([^[:alnum:]_-]|$)' # that folder's layout
spc='(^|[^[:alnum:]_-])sp''ec/'                    # citations of its spec folder
spf='(box-runtime|box-policy-egress|box-records|box-shell-python-mcp|dogwood-language|'
spf+='engine-performance|linux-sandbox|mcp-ecosystem|real-agents)\.md' # its pages by name
des='(^|[^[:alnum:]_/-])(DES''IGN|STY''LE)(\.md| §)'   # the design notes kept there

names=(sibling dev-paths macro layout spec-citation spec-page design-notes)
pats=("$sib" "$dev" "$mac" "$lay" "$spc" "$spf" "$des")
hits=("see ..""/sha""red/x"  "cd /wo""rk/main && make"  "-DCAIRN""_SHARED_DIR=x"
	"the sha""red/test""data layout"  "(sp""ec/cedar.md §4)"
	"box-policy""-egress.md §4"  "(STY""LE.md §7)")
misses=("./shared/x shared/y"  "/workspace/wo""rk/x /home/wo""rk/y"  "CAIRN_SOURCE_DIR"
	"a shared/testdatum; unshared/spec"  "ct_spec/ cedar-spec/ specs/"
	"docs/egress.md §4"  "design notes; docs/DESIGN.md")

# The controls: a broken pattern would let every file pass.
for i in "${!pats[@]}"; do
	if printf '%s\n' "${hits[$i]}" | grep -qE -- "${pats[$i]}"; then ok; else
		bad "pattern ${names[$i]} does not find its example '${hits[$i]}'"; fi
	if printf '%s\n' "${misses[$i]}" | grep -qE -- "${pats[$i]}"; then
		bad "pattern ${names[$i]} flags '${misses[$i]}'"; else ok; fi
done

# The files: git's list when this is a work tree (a clone, a worktree), else every
# file outside build trees (a directory holding build.ninja) and node_modules.
list=$(mktemp)
trap 'rm -f "$list"' EXIT
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$top" ls-files -z --cached --others --exclude-standard >"$list"
else
	(cd "$top" && find . \( -name .git -o -name node_modules -o \
		-exec test -f '{}/build.ninja' \; \) -prune -o -type f -printf '%P\0' >"$list")
fi
n_files=$(tr -cd '\0' <"$list" | wc -c)
if [ "$n_files" -ge 100 ]; then ok; else bad "only $n_files files listed under $top"; fi

for i in "${!pats[@]}"; do
	found=$(cd "$top" && xargs -0 -r grep -a -n -H -E -- "${pats[$i]}" 2>/dev/null <"$list" |
		cut -c 1-200)
	if [ -z "$found" ]; then
		ok
	else
		bad "${names[$i]}: these lines name what is outside the repository" \
			"(copy data into tests/data/, cite docs/):"
		printf '%s\n' "$found" | head -n 20 | sed 's/^/    /'
	fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
