#!/usr/bin/env bash
# The engine's layers (docs/engine.md, "Layers"): every file of src/dogwood/<layer>/
# includes only headers of its own folder and of the layers below it.  The build
# enforces the same thing (meson.build gives each layer only those include folders);
# this check says which line breaks it, and also catches a header that a lower layer
# could reach through a folder outside the engine.
# Usage: tests/layers/check.sh [SOURCE_DIR]   (default: this checkout)
set -uo pipefail

top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
dw=$top/src/dogwood
layers=(cedar temporal engine)
# what each layer may include besides the layers below it
extra_engine=("$top/include" "$top/src/history")
pass=0
fail=0

for i in "${!layers[@]}"; do
	layer=${layers[$i]}
	dirs=()
	for j in $(seq 0 "$i"); do dirs+=("$dw/${layers[$j]}"); done
	[ "$layer" = engine ] && dirs+=("${extra_engine[@]}")
	files=("$dw/$layer"/*.[ch])
	if [ ! -e "${files[0]}" ]; then
		echo "FAIL: $dw/$layer has no sources"
		fail=$((fail + 1))
		continue
	fi
	for f in "${files[@]}"; do
		ok=1
		while IFS=: read -r n h; do
			found=0
			for d in "${dirs[@]}"; do
				[ -f "$d/$h" ] && found=1 && break
			done
			if [ "$found" -eq 0 ]; then
				where=$(for l in "${layers[@]}"; do [ -f "$dw/$l/$h" ] && echo "$l/"; done)
				echo "FAIL: ${f#"$top"/}:$n: includes \"$h\"${where:+ (from ${where%/}, a layer above)}; $layer may include only ${dirs[*]#"$top"/}"
				ok=0
			fi
		done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
			 sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
		if [ "$ok" -eq 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	done
done
# Nothing may sit in src/dogwood itself: a file there belongs to no layer.
for f in "$dw"/*; do
	[ -d "$f" ] && continue
	echo "FAIL: ${f#"$top"/} is outside the layer folders (${layers[*]})"
	fail=$((fail + 1))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
