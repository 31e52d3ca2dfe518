#!/usr/bin/env bash
# The mediator with real programs (docs/mediator.md): bash, coreutils, find,
# xargs, python3, node, git and a C compiler in a mediated box; what each
# call got, what reached the host, and what the history says.
# Usage: tests/mediate/run.sh PATH/TO/cairn [PATH/TO/med-calls]
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
calls=${2:-$(dirname "$cairn")/med-calls}
here=$(cd "$(dirname "$0")" && pwd)
base=${MEDIATE_TMPDIR:-/var/tmp}
T=$(mktemp -d "$base/cairn-med.XXXXXX") || { echo "0 passed, 1 failed"; exit 1; }
chmod 0755 "$T"
T=$(cd "$T" && pwd -P)
trap '[ -n "${MEDIATE_KEEP:-}" ] || rm -rf "$T"' EXIT
. "$here/../boxcheck.sh"
ws=$T/ws
home=$T/home
box=$T/box
mkdir -p "$ws" "$home" "$T/cfg" "$T/granted"

cat > "$T/cfg/policy.dw" <<EOF
@id("ws_read")
permit (principal, action == Box::Action::"fs:read", resource)
when { context.input.path == "$ws" || context.input.path like "$ws/*" };

@id("ws_write")
permit (principal, action in [Box::Action::"fs:write", Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when { context.input.path like "$ws/*" };

@id("home")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write", Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when { context.input.path == "$home" || context.input.path like "$home/*" };

@id("locked")
@description("Nothing under calls/locked.")
forbid (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write", Box::Action::"fs:delete", Box::Action::"fs:move", Box::Action::"fs:other"], resource)
when { context.input.path like "$ws/calls/locked/*" };

@id("no_evil")
@description("No evil echoes.")
forbid (principal, action == Box::Action::"shell:exec", resource)
when { context.input.program == "echo" && context.input has arg1 && context.input.arg1 == "evil" };

@id("keep")
@description("build/keep stays.")
forbid (principal, action == Box::Action::"fs:delete", resource)
when { context.input.path like "$ws/build/keep/*" };

@id("no_env")
@description("Secrets stay on the host.")
forbid (principal, action == Box::Action::"fs:read", resource)
when { context.input.path like "*/.env" };

@id("tools")
permit (principal, action == Box::Action::"shell:exec", resource)
when { ["bash", "sh", "dash", "cat", "ls", "rm", "mkdir", "mv", "cp", "ln", "chmod", "echo",
        "touch", "find", "xargs", "python3", "node", "git", "cc", "gcc", "true", "false",
        "stat", "wc", "sort", "grep", "sleep", "curl", "med-calls", "ld-linux-x86-64.so.2",
        "head", "readlink", "pwd", "env", "tr", "cc1", "as", "uniq", "med-race"].contains(context.input.program) };

@id("no_ld_so")
@description("The loader runs no program by itself.")
forbid (principal, action == Box::Action::"shell:exec", resource)
when { context.input.program == "ld-linux-x86-64.so.2" };

@id("deploy_after_green")
@description("Run the tests (python3 test.py) successfully before deploying.")
forbid (principal, action == Box::Action::"shell:exec", resource)
when { context.input.program == "cp" && context.input has arg1 && context.input.arg1 == "deploy.txt" }
when temporal {
  !(formerly within 1h Box::Action::"shell:exec"::response{ input.program: "python3", input.arg1: "test.py", output.status: 0 })
};

@id("net")
permit (principal, action == Box::Action::"net:connect", resource);

@id("api")
permit (principal, action == Box::Action::"http:request", resource)
when { context.input.host == "api.test" };

@id("wc_before_notes")
@description("No wc after the granted notes were read.")
forbid (principal, action == Box::Action::"shell:exec", resource)
when { context.input.program == "wc" }
when temporal { formerly within 1h Box::Action::"fs:read"::response{ input.path like "*/granted/notes.txt" } };

@id("no_egress_after_secrets")
@description("No egress after anything tried to read a .env file.")
forbid (principal, action == Box::Action::"net:connect", resource)
when temporal { formerly within 24h Box::Action::"fs:read"::request{ input.path like "*/.env" } };
EOF
cat > "$T/cfg/box.toml" <<EOF
name = "med"
box_dir = "$box"
policy = "policy.dw"

[agent]
command = ["/bin/bash", "-c"]
workspace = "$ws"

[agent.env]
HOME = "$home"
LANG = "C.UTF-8"

[agent.filesystem]
read = ["$T/granted"]
$([ -x "$calls" ] && echo "exec = [\"$(cd "$(dirname "$calls")" && pwd -P)\"]")

[gateway]
hosts = { "api.test" = "127.0.0.1" }
EOF

# run_in SCRIPT: run it in the box (cwd: the workspace); out, err, rc
run_in() { box_run "$T/cfg/box.toml" "$ws" "$1"; }
# events JQ-FILTER: the history's events that pass the filter, one JSON per line

# --- a start line says it; the workload's own start is not decided ---
run_in 'echo hi'
want_rc 0 "echo"
want_out hi "echo"
want_err "cairn: mediation on: the agent's file operations and launches are decided by $T/cfg/policy.dw" "start line"

# --- reading a secret closes egress (first: no .env read yet in this box) ---
printf 'TOKEN=1\n' > "$ws/.env"
m=$(mark)
run_in 'curl -s -o /dev/null -w "%{http_code}\n" http://api.test:9/; cat .env; curl -s -o /dev/null -w "%{http_code}\n" http://api.test:9/'
codes=$(printf '%s\n' "$out" | tr '\n' ' ')
case "$codes" in "403 "*) bad "egress refused before the secret read: $codes" ;; *" 403 ") ok ;; *) bad "egress after the secret read: $codes" ;; esac
want_err "cairn: deny  net:connect  api.test:9  [no_egress_after_secrets]" "egress closed after the secret"

# --- reads: permitted, forbidden with Box's words, metadata probes quiet ---
printf 'hello\n' > "$ws/README.md"
printf 'TOKEN=1\n' > "$ws/.env"
m=$(mark)
run_in 'cat README.md; cat .env; echo rc=$?; ls -a | sort | tr "\n" " "'
want_out hello "cat README.md"
want_out "rc=1" "cat .env fails"
want_err "cairn: policy denied this operation on '$ws/.env' [policy: no_env]: Secrets stay on the host." "the denial line"
[ "$(printf '%s' "$err" | grep -c "cairn: policy denied this operation on '$ws/.env'")" = 1 ] && ok ||
	bad "the denial line is said once per process and resource"
want_out ". .. .env README.md" "ls -a lists the decided workspace"
[ "$(since "$m" 'select(.kind == "request" and .logged.input.path == "'"$ws"'/README.md") | .decision.verdict' | sort -u)" = '"permit"' ] && ok ||
	bad "cat README.md: no permitted fs:read in the history"
[ "$(since "$m" 'select(.kind == "response" and .logged.input.path == "'"$ws"'/README.md" and .logged.input.operation.__entity.id == "read_content") | .logged.output.result.__entity.id')" = '"descriptor_issued"' ] && ok ||
	bad "cat README.md: its ::response is not descriptor_issued"
[ "$(since "$m" 'select(.kind == "request" and .logged.input.path == "'"$ws"'/.env" and .logged.input.operation.__entity.id == "read_content") | .decision.ids[0]')" = '"no_env"' ] && ok ||
	bad "cat .env: the denial names no_env in the history"

# --- rm -rf with a forbid on part of the tree: those files stay, rm exits 1,
# one fs:delete per file ---
mkdir -p "$ws/build/a/b" "$ws/build/keep"
for i in 1 2 3; do echo "$i" > "$ws/build/f$i"; echo "$i" > "$ws/build/a/b/g$i"; done
echo k1 > "$ws/build/keep/k1"; echo k2 > "$ws/build/keep/k2"
m=$(mark)
run_in 'rm -rf build; echo rm=$?'
want_out "rm=1" "rm -rf build exits 1"
[ -f "$ws/build/keep/k1" ] && [ -f "$ws/build/keep/k2" ] && ok || bad "rm -rf: the forbidden files went"
[ ! -e "$ws/build/f1" ] && [ ! -e "$ws/build/a" ] && ok || bad "rm -rf: the permitted files stayed"
del=$(since_raw "$m" 'select(.kind == "request" and .action == "Box::Action::\"fs:delete\"") | [.logged.input.path, .logged.input.operation.__entity.id, .decision.verdict] | @tsv' | sort)
for f in f1 f2 f3 a/b/g1 a/b/g2 a/b/g3; do
	printf '%s\n' "$del" | grep -F "$ws/build/$f" | grep -q 'remove_file	permit' && ok ||
		bad "rm -rf: no permitted fs:delete for build/$f"
done
[ "$(printf '%s\n' "$del" | grep -c "$ws/build/f1")" = 1 ] && ok || bad "rm -rf: build/f1 decided more than once"
[ "$(printf '%s\n' "$del" | grep "$ws/build/keep/k" | grep -c deny)" = 2 ] && ok ||
	bad "rm -rf: the two kept files are not two denied fs:delete: $del"
printf '%s\n' "$del" | grep -q "$ws/build/a/b.*remove_dir.*permit" && ok || bad "rm -rf: no remove_dir for build/a/b"

# --- mv, cp -r, ln -s, ln, chmod, mkdir -p, touch: effects on the host ---
run_in 'mkdir -p d1/d2/d3 && echo x > d1/f && cp -r d1 d1c && mv d1c d1m && ln -s d1/f lnk && ln d1/f hard && chmod 600 d1/f && touch -d @1000000000 d1/f && cat lnk && stat -c "%a %Y" d1/f'
want_rc 0 "file operations"
[ -d "$ws/d1/d2/d3" ] && [ -f "$ws/d1m/f" ] && [ ! -e "$ws/d1c" ] && [ -L "$ws/lnk" ] &&
	[ "$(stat -c %h "$ws/hard")" = 2 ] && ok || bad "mkdir -p / cp -r / mv / ln: the host does not show them"
want_out "600 1000000000" "chmod and touch -d"
[ "$(stat -c %a "$ws/d1/f")" = 600 ] && ok || bad "chmod did not reach the host"

# --- find -exec and xargs: every nested launch decided ---
m=$(mark)
run_in 'find d1 -name f -exec cat {} \; ; ls d1 | xargs echo got'
want_out "got d2 f" "xargs"
[ "$(since "$m" 'select(.kind == "request" and .action == "Box::Action::\"shell:exec\"") | .logged.input.program' | sort | uniq -c | tr -s ' ' | tr '\n' ',')" = ' 1 "cat", 1 "echo", 1 "find", 1 "ls", 1 "xargs",' ] && ok ||
	bad "find -exec / xargs: launches decided: $(since "$m" 'select(.kind == "request" and .action == "Box::Action::\"shell:exec\"") | .logged.input.command' | tr '\n' ' ')"

# --- launches: exit statuses in the history, a signal as 128 + N, a
# program that exists nowhere is not found, not denied ---
m=$(mark)
run_in 'bash -c "exit 3"; bash -c "kill -9 \$\$"; nosuchprog; echo nf=$?; id; echo id=$?'
want_out "nf=127" "a missing program"
want_out "id=126" "a program no rule permits"
want_err "cairn: policy denied this operation on 'id' [default-deny]: No permit policy matched this request." "exec denial line"
st=$(since "$m" 'select(.kind == "response" and .action == "Box::Action::\"shell:exec\"" and .logged.input.program == "bash") | .logged.output.status' | tr '\n' ' ')
[ "$st" = "3 137 " ] && ok || bad "exit statuses in the history: $st (want 3 137)"
[ "$(since "$m" 'select(.logged.input.program == "nosuchprog")' | grep -c .)" = 0 ] && ok ||
	bad "a missing program was decided"
[ "$(since "$m" 'select(.kind == "request" and .logged.input.program == "id") | .decision.verdict')" = '"deny"' ] && ok ||
	bad "id: no denied shell:exec"
ex=$(since "$m" 'select(.kind == "request" and .logged.input.program == "bash") | [.logged.input.arg1, .logged.input.arg2, .logged.input.arg_count, .logged.input.command, .logged.input.cwd]' | head -n 1)
[ "$ex" = '["-c","exit 3",2,"bash -c '"'"'exit 3'"'"'","'"$ws"'"]' ] && ok || bad "shell:exec input: $ex"

# --- a rule reading an earlier command's exit status ---
printf 'import sys\nsys.exit(1)\n' > "$ws/test.py"
echo release > "$ws/deploy.txt"
run_in 'python3 test.py; cp deploy.txt out.txt; echo cp=$?'
want_out "cp=126" "deploy before green tests"
want_err "[policy: deploy_after_green]: Run the tests (python3 test.py) successfully before deploying." "deploy denial"
printf 'import sys\nsys.exit(0)\n' > "$ws/test.py"
run_in 'python3 test.py && cp deploy.txt out.txt; echo cp=$?'
want_out "cp=0" "deploy after green tests"
[ -f "$ws/out.txt" ] && ok || bad "the permitted cp did not write out.txt"

# --- python3: a denial is a catchable PermissionError; node: EACCES ---
run_in "python3 -c 'open(\"hello.txt\",\"w\").write(\"py\")
try:
    open(\".env\").read()
except PermissionError as e:
    print(\"caught\", e.errno)'"
want_out "caught 13" "python3 PermissionError"
[ "$(cat "$ws/hello.txt" 2>/dev/null)" = py ] && ok || bad "python3's write did not reach the host"
run_in "node -e 'const fs=require(\"fs\"); try { fs.readFileSync(\".env\") } catch (e) { console.log(\"node\", e.code) } console.log(fs.readFileSync(\"README.md\",\"utf8\").trim())'"
want_out "node EACCES" "node EACCES"
want_out "hello" "node reads a permitted file"

# --- git in the workspace ---
run_in 'git init -q repo && cd repo && git config user.email t@t && git config user.name t && echo one > a && git add a && git commit -qm first && echo two >> a && git status --short && git log --oneline | wc -l'
want_rc 0 "git"
want_out " M a" "git status"
[ -d "$ws/repo/.git/objects" ] && [ "$(git -C "$ws/repo" log --format=%s)" = first ] && ok ||
	bad "git commit did not reach the host"

# --- a C compile ---
printf 'int main(void) { return 0; }\n' > "$ws/m.c"
run_in 'cc -c m.c -o m.o && echo compiled'
want_out compiled "cc -c"
[ -s "$ws/m.o" ] && ok || bad "the object file is not on the host"

# --- a rename within the home, refused outside it ---
echo r > "$home/r1"
run_in "python3 -c 'import os
os.rename(\"$home/r1\", \"$home/r2\")
try:
    os.rename(\"$home/r2\", \"/var/tmp/cairn-outside\")
except OSError as e:
    print(\"outside\", e.errno)'"
[ -f "$home/r2" ] && [ ! -e "$home/r1" ] && ok || bad "a rename within the home"
want_out "outside " "a rename out of the home is refused"

# --- the loader runs nothing by itself; a memfd runs nothing ---
run_in '/lib64/ld-linux-x86-64.so.2 /usr/bin/true; echo ld=$?'
want_out "ld=126" "ld.so ./program"
run_in "python3 -c 'import os
fd = os.memfd_create(\"x\", os.MFD_CLOEXEC | 8)
os.write(fd, open(\"/usr/bin/true\",\"rb\").read())
try:
    os.execv(\"/proc/self/fd/%d\" % fd, [\"t\"])
except OSError as e:
    print(\"memfd\", e.errno)'"
want_out "memfd 13" "exec of a memfd"

# --- the raw calls, one per row of the table (tests/mediate/calls.c) ---
if [ -x "$calls" ]; then
	mkdir -p "$ws/calls/locked/d"
	echo secret > "$ws/calls/locked/secret"
	run_in "$calls $ws/calls $home"
	printf '%s\n' "$out" | grep '^FAIL' | sed 's/^/  /'
	p=$(printf '%s\n' "$out" | grep -c '^ok ')
	f=$(printf '%s\n' "$out" | grep -c '^FAIL')
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$p" -gt 0 ] && ok || bad "med-calls ran nothing: $(printf '%s' "$err" | tail -n 5)"
	# what the forbidden calls must not have changed, seen from the host
	[ -f "$ws/calls/locked/secret" ] && [ -d "$ws/calls/locked/d" ] && [ ! -e "$ws/calls/locked/new" ] &&
		[ ! -e "$ws/calls/locked/r3" ] && [ ! -e "$ws/calls/stolen" ] && [ ! -e "$ws/calls/hard2" ] &&
		[ ! -e "$ws/calls/locked/m1" ] && [ ! -e "$ws/calls/locked/sock" ] && ok ||
		bad "a forbidden call changed the host: $(ls -la "$ws/calls" "$ws/calls/locked" | tr '\n' ' ')"
fi

# --- reads under a grant are observed while a history rule watches fs:read
# (wc_before_notes): performed, recorded as ::response, seen by the rule ---
printf 'one\ntwo\n' > "$T/granted/notes.txt"
printf 'x\n' > "$T/granted/other.txt"
m=$(mark)
run_in "wc -l < $T/granted/other.txt; cat $T/granted/notes.txt; wc -l < $T/granted/other.txt; echo rc=\$?"
want_out "1" "wc before the notes were read"
want_out "two" "cat of a granted file"
want_out "rc=126" "wc after the notes were read is refused"
want_err "[policy: wc_before_notes]" "the history rule's denial"
[ "$(since "$m" 'select(.kind == "response" and .logged.input.path == "'"$T"'/granted/notes.txt" and .logged.input.operation.__entity.id == "read_content") | .logged.output.result.__entity.id' | sort -u)" = '"descriptor_issued"' ] && ok ||
	bad "the granted read is not observed in the history"
[ "$(since "$m" 'select(.kind == "request" and .logged.input.path == "'"$T"'/granted/notes.txt")' | grep -c .)" = 0 ] && ok ||
	bad "a granted read was decided: grants are not asked"

# --- bypass attempts: a path, a link and argv rewritten while the call waits ---
race=$(dirname "$calls")/med-race
if [ -x "$race" ]; then
	mkdir -p "$ws/calls/locked"
	{ printf 'SECRET'; head -c 12339 /dev/zero; } > "$ws/calls/locked/secret2"
	echo "permitted" > "$ws/calls/okfile"
	for okp in /usr/lib/os-release "$ws/calls/okfile"; do
		run_in "$race paths ${MEDIATE_RACE_ROUNDS:-100000} $okp $ws/calls/locked/secret2"
		printf '%s\n' "$out" | sed 's/^/  /'        # the controls' counts, for the log
		pass=$((pass + $(printf '%s\n' "$out" | grep -c '^ok ')))
		fail=$((fail + $(printf '%s\n' "$out" | grep -c '^FAIL')))
		[ "$(printf '%s\n' "$out" | grep -c '^ok ')" = 4 ] && ok || bad "med-race paths ($okp): $(printf '%s' "$out$err" | tail -n 5)"
	done
	run_in "$race argv ${MEDIATE_EXEC_ROUNDS:-2000}"
	printf '%s\n' "$out" | sed 's/^/  /'
	pass=$((pass + $(printf '%s\n' "$out" | grep -c '^ok ')))
	fail=$((fail + $(printf '%s\n' "$out" | grep -c '^FAIL')))
	[ "$(printf '%s\n' "$out" | grep -c '^ok ')" = 4 ] && ok || bad "med-race argv: $(printf '%s' "$out$err" | tail -n 5)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
