#!/usr/bin/env bash
# Tools (docs/tools.md): [tool.*] programs called through their shims,
# decided as shell:spawn and run in leaves of their own - what the agent
# gets, what reaches the host, what the history and the gateway say, and
# the broker's protocol under bad input.
# Usage: tests/tools/run.sh PATH/TO/cairn
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
base=${TOOLS_TMPDIR:-/var/tmp}
T=$(mktemp -d "$base/cairn-tools.XXXXXX") || { echo "0 passed, 1 failed"; exit 1; }
chmod 0755 "$T"
T=$(cd "$T" && pwd -P)
upstream_pid=
forge_pid=
trap '[ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null; [ -n "$forge_pid" ] && kill "$forge_pid" 2>/dev/null; [ -n "${TOOLS_KEEP:-}" ] || rm -rf "$T"' EXIT
. "$here/../boxcheck.sh"
proj=$T/proj
ws=$proj/ws
cfg=$proj/cfg
home=$T/home
box=$T/box
mkdir -p "$ws" "$cfg" "$home"
cp "$here/frames.py" "$ws/frames.py"

# An upstream for the leaf's egress: the gateway maps api.test to it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"upstream-ok\n"
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$port" &
upstream_pid=$!

cat > "$cfg/policy.dw" <<EOF
@id("exec")
permit (principal, action == Box::Action::"shell:exec", resource);

@id("files")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write", Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when { context.input.path like "$proj/*" || context.input.path like "$home/*" || context.input.path == "$home" };

@id("spawn")
permit (principal, action == Box::Action::"shell:spawn", resource)
when { ["git", "dash", "yes", "curl", "wc", "id"].contains(context.input.program) };

@id("tag_after_green")
@description("Run sh tests.sh successfully before tagging.")
forbid (principal, action == Box::Action::"shell:spawn", resource)
when { context.input.program == "git" && context.input has arg1 && context.input.arg1 == "tag" }
when temporal {
  !(formerly within 1h Box::Action::"shell:spawn"::response{ input.program: "dash", input.arg1: "tests.sh", output.status: 0 })
};

@id("net")
permit (principal, action == Box::Action::"net:connect", resource);

@id("api")
permit (principal, action == Box::Action::"http:request", resource)
when { context.input.host == "api.test" };

@id("no_secret_path")
@description("Not the secret path.")
forbid (principal, action == Box::Action::"http:request", resource)
when { context.input.path like "/secret*" };
EOF
cat > "$cfg/box.toml" <<EOF
name = "tools"
box_dir = "$box"
policy = "policy.dw"

[agent]
command = ["/bin/bash", "-c"]
workspace = "$ws"

[agent.env]
HOME = "$home"
LANG = "C.UTF-8"

[tool.git]
command = ["git"]
[tool.git.env]
HOME = "$home"
GIT_CONFIG_NOSYSTEM = "1"
[tool.git.filesystem]
write = ["$ws", "$home"]

[tool.sh]
command = ["/bin/sh"]
[tool.sh.filesystem]
write = ["$proj"]

[tool.yes]
command = ["yes"]
[tool.yes.env]
HOME = "$home"
[tool.yes.filesystem]
read_file = ["$home/.netrc"]

[tool.tr]
command = ["tr"]

[tool.lines]
command = ["wc", "-l"]

[tool.id]
command = ["id"]
network = { contain_egress = false }

[tool.sh.limits]
pids = 24

[tool.curl]
command = ["curl"]

[gateway]
hosts = { "api.test" = "127.0.0.1" }
EOF
printf '[user]\n\tname = Tool\n\temail = tool@example.com\n[init]\n\tdefaultBranch = main\n' > "$home/.gitconfig"
printf 'machine forge\n' > "$home/.netrc"
printf 'exit "${1:-0}"\n' > "$ws/tests.sh"
printf 'sleep 1; exit 0\n' > "$ws/slow-tests.sh"

# run_in SCRIPT: run it in the box (cwd: the workspace); out, err, rc
run_in() { box_run "$cfg/box.toml" "$ws" "$1"; }
spawns() { events_raw "select(.seq > $1 and .action == \"Box::Action::\\\"shell:spawn\\\"\") | [.kind, .logged.input.command, (.decision.verdict // \"\"), (.logged.output.status // \"\")] | @tsv"; }

# --- start: the tools' grants are disclosed first, the agent's view has the shims ---
run_in 'type -p git; echo rc=$?'
want_rc 0 "a first box"
want_out "$box/bin/git" "the shim is first on PATH"
want_err "cairn: [tool.git] runs /usr/bin/git with no policy decision over these paths:" "the tool's disclosure"
want_err "connect  $box/run/box.sock  (the broker: tools run through it)" "the agent's view has the socket"
[ "$(printf '%s\n' "$err" | grep -n 'cairn: \[tool.git\] runs' | cut -d: -f1)" -lt \
  "$(printf '%s\n' "$err" | grep -n 'cairn: \[agent\] runs' | cut -d: -f1)" ] && ok ||
	bad "the tools are disclosed before the agent (Box's order)"
for n in git sh yes tr curl; do
	[ "$(stat -c %i "$box/bin/$n")" = "$(stat -c %i "$box/bin/.shim-image")" ] && ok ||
		bad "bin/$n is not a hard link of the shim image"
done
[ "$(stat -c %a "$box/bin/.shim-image")" = 555 ] && ok || bad "the shim image is not mode 0555"

# --- a permitted host binary runs and its output returns; the history has it ---
m=$(mark)
run_in 'git --version; echo rc=$?'
want_out "git version" "git --version through its shim"
want_out "rc=0" "git --version's status"
s=$(spawns "$m")
has "$s" "request	git --version	permit	" && ok || bad "no permitted shell:spawn request: $s"
has "$s" "response	git --version		0" && ok || bad "no shell:spawn::response status 0: $s"
[ "$(since "$m" 'select(.action == "Box::Action::\"shell:exec\"" and .logged.input.program == "git") | .seq' | grep -c .)" = 0 ] && ok ||
	bad "the shim's exec was decided as shell:exec too"
ctx=$(events_raw 'select(.seq > '"$m"' and .kind == "request" and .action == "Box::Action::\"shell:spawn\"") | .logged.input | [.program, .program_path, .arg1, .arg_count, .cwd] | @tsv' | head -n 1)
[ "$ctx" = "$(printf 'git\t/usr/bin/git\t--version\t1\t%s' "$ws")" ] && ok || bad "shell:spawn's context: $ctx"
[ "$(events_raw 'select(.seq > '"$m"' and .kind == "request" and .action == "Box::Action::\"shell:spawn\"") | .logged.input | has("credential_reads")')" = false ] && ok ||
	bad "a table naming no credential store sends credential_reads"

# --- the tool writes what the agent may only ask for: git in the workspace ---
m=$(mark)
run_in 'git init -q . && echo hi > a.txt && git add a.txt && git commit -q -m first && git log --oneline | wc -l; git nosuchcommand; echo rc=$?'
want_out "1" "git commit through the tool"
[ -d "$ws/.git" ] && [ "$(git -C "$ws" log --format=%s 2>/dev/null)" = first ] && ok || bad "the commit did not reach the host"
want_out "rc=1" "a tool's non-zero exit reaches the agent"
has "$(spawns "$m")" "response	git nosuchcommand		1" && ok || bad "the non-zero exit is not in the history: $(spawns "$m")"

# --- a signal: 128 + N in the history (yes dies of SIGPIPE when head is done) ---
m=$(mark)
run_in 'yes | head -n 2; echo "ps=${PIPESTATUS[*]}"'
want_out "ps=141 0" "yes ends with SIGPIPE: 141"
has "$(spawns "$m")" "response	yes		141" && ok || bad "the signal is not 128 + N in the history: $(spawns "$m")"
# a table that names a credential store says so in its spawns
[ "$(events_raw 'select(.seq > '"$m"' and .kind == "request" and .logged.input.program == "yes") | .logged.input.credential_reads | @json')" = "[\"$home/.netrc\"]" ] && ok ||
	bad "credential_reads: $(events_raw 'select(.seq > '"$m"' and .kind == "request" and .logged.input.program == "yes") | .logged.input')"


# --- refused: no spawn permit (126, Box's line, no output); not found is 127 ---
m=$(mark)
run_in 'echo abc | tr a-z A-Z; echo rc=$?; nosuchprogram; echo rc=$?'
lacks_out "ABC" "tr without a spawn permit produced output"
want_out "rc=126" "a refused tool exits 126"
want_err "cairn: policy denied this operation on 'tr a-z A-Z' [default-deny]: No permit policy matched this request." "the refusal in Box's words"
want_out "rc=127" "a program that exists nowhere is not found"
has "$(spawns "$m")" "request	tr a-z A-Z	deny" && ok || bad "the refused spawn is not in the history"

# --- a permit narrowed by the tables: [tool.lines] runs only `wc -l`; an
# `id` on the host's network is a recorded downgrade ---
m=$(mark)
run_in 'printf "a\nb\n" | wc -l; echo l=$?; wc -c README 2>&1; echo c=$?; id -u; echo i=$?'
want_out "2" "wc -l through [tool.lines], stdin from the agent's pipe"
want_out "l=0" "wc -l's status"
want_out "c=126" "wc -c: no table's fixed arguments match"
want_out "cairn: wc: no tool runs /usr/bin/wc: no \`[tool.<name>] command\` matches this program and its leading arguments" "Box's no-tool text"
has "$(spawns "$m")" "request	wc -c README	permit" && ok || bad "the narrowed spawn was permitted by policy first: $(spawns "$m")"
[ "$(events_raw 'select(.seq > '"$m"' and .kind == "error" and .logged.input.command == "wc -c README") | .kind')" = error ] && ok ||
	bad "the narrowed spawn has no ::error"
want_out "i=0" "a tool with native egress runs"
want_err "cairn: [tool.id] native egress: connects to the network directly" "native egress is disclosed"
grep -q '"stringValue":"egress:native"' "$box/private/telemetry/records.jsonl" && ok ||
	bad "native egress is not recorded (egress:native)"
# a tool's limits hold in its leaf
run_in 'sh -c "i=0; while [ \$i -lt 40 ]; do sleep 2 & i=\$((i+1)); done; wait" 2>&1 | grep -c "fork" | sed "s/^/forks-refused=/"'
printf '%s\n' "$out" | grep -qE '^forks-refused=[1-9]' && ok || bad "[tool.sh.limits] pids = 24 did not hold: $out"
want_err "cairn: [tool.sh] limits: pids 24" "the tool's limits are disclosed"

# --- the program itself, by path or by any name for its file, is refused
# with the shim to call; by the shim's path, and from programs that are not
# shells (env, xargs), it runs ---
run_in '/usr/bin/git --version; echo rc=$?; /bin/git --version; echo rc2=$?; dash -c true; echo rc3=$?; /usr/lib/git-core/git --version; echo rc4=$?; '"$box"'/bin/git --version; env git --version; echo --version | xargs '"$box"'/bin/git'
want_out "rc=126" "/usr/bin/git by path is refused"
want_out "rc4=126" "a copy of git under its name (/usr/lib/git-core/git) is refused"
want_out "rc2=126" "/bin/git, another spelling, is refused"
want_out "rc3=126" "dash, the sh tool's program, is refused by its own name"
want_err "/usr/bin/git runs as a tool in this box, in a sandbox of its own: call it through its shim, $box/bin/git" "the line names the shim"
want_err "/usr/bin/dash runs as a tool in this box, in a sandbox of its own: call it through its shim, $box/bin/sh" "the line names sh's shim"
[ "$(printf '%s\n' "$out" | grep -c '^git version')" = 3 ] && ok || bad "the shim by name and by path: $out"

# --- a spawn rule keyed on an earlier spawn's response lifts only after it completes ---
m=$(mark)
run_in 'git tag v0; echo a=$?; sh tests.sh 1; git tag v0; echo b=$?; sh slow-tests.sh & sleep 0.2; git tag v0; echo c=$?; wait; sh tests.sh 0; git tag v1; echo d=$?'
want_out "a=126" "tag before any green test run"
want_out "b=126" "tag after a red test run"
want_out "c=126" "tag while the tests are still running"
want_out "d=0" "tag after the green run"
want_err "[policy: tag_after_green]: Run sh tests.sh successfully before tagging." "the rule's words"
[ "$(git -C "$ws" tag)" = v1 ] && ok || bad "tags on the host: $(git -C "$ws" tag | tr '\n' ' ')"

# --- the leaf cannot change, move or read the loaded config and policy ---
cp "$cfg/policy.dw" "$T/policy.before"
run_in 'sh -c "cat '"$cfg"'/policy.dw >/dev/null && echo read-policy; echo x >> '"$cfg"'/policy.dw && echo wrote; mv '"$cfg"' '"$proj"'/moved && echo moved; rm -f '"$cfg"'/box.toml; ln -sf /etc/passwd '"$cfg"'/policy.dw && echo linked; touch '"$proj"'/leaf-wrote && echo leaf-ok"'
lacks_out "read-policy" "the leaf read the policy"
lacks_out "wrote" "the leaf wrote the policy"
lacks_out "moved" "the leaf moved the config's directory"
lacks_out "linked" "the leaf replaced the policy"
want_out "leaf-ok" "the leaf writes its grant (positive control)"
cmp -s "$cfg/policy.dw" "$T/policy.before" && [ -f "$cfg/box.toml" ] && [ -d "$cfg" ] && ok ||
	bad "the config or policy changed"
[ -f "$proj/leaf-wrote" ] && ok || bad "the leaf's write did not reach the host"

# --- the socket can be reached but not replaced; the image runs for no other name ---
run_in 'rm -f '"$box"'/run/box.sock; echo rm=$?; mv '"$box"'/run/box.sock /tmp/s 2>/dev/null; echo mv=$?; '"$box"'/bin/.shim-image; echo img=$?; git --version >/dev/null; echo after=$?'
want_out "after=0" "the shim still works after the attempts"
lacks_out "rm=0" "the agent removed the socket"
lacks_out "mv=0" "the agent moved the socket"
want_out "img=125" "the image under its own name"
want_err "cairn-shim: the shim image runs only under a tool's name" "the image's refusal"
[ -S "$box/run/box.sock" ] || [ ! -e "$box/run/box.sock" ] && ok || bad "the socket was replaced"

# --- the leaf's egress is judged by the gateway, through its own listener ---
m=$(mark)
run_in 'curl -s -w "code=%{http_code}\n" http://api.test:'"$port"'/; curl -s -o /dev/null -w "code=%{http_code}\n" http://api.test:'"$port"'/secret'
want_out "upstream-ok" "a permitted request from the leaf"
want_out "code=200" "its status"
want_out "code=403" "a request the policy does not permit, refused by the gateway"
[ "$(events_raw 'select(.seq > '"$m"' and .kind == "request" and .action == "Box::Action::\"http:request\"") | [.logged.input.path, .decision.verdict] | @tsv' | tr '\n' ' ')" = "/	permit /secret	deny " ] && ok ||
	bad "the leaf's requests are not in the history: $(since "$m" 'select(.action == "Box::Action::\"http:request\"")')"

# --- streaming: the agent reads the tool's first line while the tool runs ---
rm -f "$ws/go"
run_in 'sh -c "echo first; i=0; while [ ! -e '"$ws"'/go ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done; echo second" | { read l; echo "got $l"; touch go; read l2; echo "got $l2"; }'
want_out "got first" "the first line"
want_out "got second" "the second line"
[ -e "$ws/go" ] && ok || bad "the agent never saw the first line while the tool ran"
# stdin reaches the tool
run_in 'printf "one\ntwo\n" | sh -c "while read x; do echo in:\$x; done"'
want_out "in:two" "the tool reads the agent's pipe"

# --- at the agent's terminal: a tool reads it, ^C ends the tool and not the agent ---
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok ;;
	*) bad "terminal: $line" ;;
	esac
done < <(python3 "$here/pty_check.py" "$cairn" "$cfg/box.toml" "$ws" 2>&1)

# --- a shim that goes away kills its tool; the box's end kills what is left ---
run_in 'sh -c "sleep 300" & p=$!; sleep 0.5; kill -TERM $p; wait $p; echo rc=$?'
want_out "rc=143" "SIGTERM to the shim reaches the tool (128 + 15)"
# a number of this run's own, so another suite's sleeps are not counted
nap=$((20000 + $$ % 10000))
run_in 'sh -c "sleep '"$nap"'" & sleep 0.5; echo bye'
want_out "bye" "the agent ends with a tool still running"
sleep 0.5
pgrep -x -f "sleep $nap" >/dev/null && bad "a tool outlived its box: $(pgrep -a -x -f "sleep $nap")" || ok

# --- the protocol: bad frames end their connection and nothing else ---
run_in "python3 frames.py $box/run/box.sock ok version notjson unknown_key oversize zero no_fds two_fds dir_stdin opath_stdout not_found slash_name relative_cwd signal_first truncated silent ok"
want_out "ok 0" "a well-formed frame (positive control)"
want_out "version 125 cairn: unsupported protocol version 7; this box speaks 1" "another version"
for c in notjson unknown_key oversize zero no_fds two_fds relative_cwd signal_first; do
	printf '%s\n' "$out" | grep -q "^$c 125 cairn: the shim's call is malformed" && ok || bad "$c: $(printf '%s\n' "$out" | grep "^$c ")"
done
want_out "dir_stdin 125 cairn: git: descriptor 0 is a directory" "a directory as stdin"
want_out "opath_stdout 125 cairn: git: descriptor 1 is an O_PATH handle" "an O_PATH handle as stdout"
want_out "not_found 127 cairn: nosuchtool: command not found" "a name no tool has"
want_out "slash_name 127" "a path as the name"
printf '%s\n' "$out" | grep -qE "^truncated (125|closed)" && ok || bad "a truncated frame"
want_out "silent 125 cairn: the shim's call is malformed: the frame's length did not arrive" "a connection that says nothing is timed out"
[ "$(printf '%s\n' "$out" | grep -c '^ok 0')" = 2 ] && ok || bad "the broker serves after bad frames"
# a flood of idle connections is bounded: a real call still runs after them
run_in "python3 frames.py $box/run/box.sock flood 100"
want_out "flood held 100" "100 idle connections"
want_out "flood-call=0" "a call during the flood runs"

# --- credentials scoped per tool: git, a tool with egress = ["forge"], pushes
# to a local HTTPS git server (git-http-backend behind the gateway suite's
# upstream, Basic auth) with a credential the gateway injects; the agent,
# calling the forge itself, gets none ---
gw=$here/../gateway
pki=$T/pki
if "$gw/mkcerts.sh" "$pki" >/dev/null 2>&1; then ok; else bad "mkcerts.sh"; fi
mkdir -p "$T/forge/up" "$T/forge/git" "$T/fws" "$T/fhome"
git init -q --bare "$T/forge/git/repo.git"
git -C "$T/forge/git/repo.git" symbolic-ref HEAD refs/heads/main
git init -q -b main "$T/forge/src"
echo hello > "$T/forge/src/README"
git -C "$T/forge/src" add README
git -C "$T/forge/src" -c user.email=t@t -c user.name=t commit -q -m "initial"
git -C "$T/forge/src" push -q "$T/forge/git/repo.git" main
FORGE_CRED="forgeuser:$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
printf '{"basic_git": "%s"}\n' "$FORGE_CRED" > "$T/forge/up/secrets.json"
python3 "$gw/upstream.py" --dir "$T/forge/up" --cert "$pki/leaf.pem" --key "$pki/leaf.key" \
	--secrets "$T/forge/up/secrets.json" --git-root "$T/forge/git" >"$T/forge/up/stderr" 2>&1 &
forge_pid=$!
for _ in $(seq 100); do [ -s "$T/forge/up/ports.json" ] && break; sleep 0.1; done
FP=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["https"])' "$T/forge/up/ports.json" 2>/dev/null)
if [ -z "$FP" ]; then
	bad "the forge did not start: $(cat "$T/forge/up/stderr")"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok
printf '[user]\n\tname = Tool\n\temail = tool@example.com\n' > "$T/fhome/.gitconfig"
cat > "$cfg/forge.dw" <<POLICY
@id("exec")
permit (principal, action == Box::Action::"shell:exec", resource);
@id("files")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write", Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when { context.input.path == "$T/fws" || context.input.path like "$T/fws/*" || context.input.path like "$T/fhome*" };
@id("git")
permit (principal, action == Box::Action::"shell:spawn", resource)
when { context.input.program == "git" };
@id("forge")
permit (principal, action in [Box::Action::"net:connect", Box::Action::"http:request"], resource)
when { context.input.host == "git.test" };
POLICY
cat > "$cfg/forge.toml" <<CONFIG
name = "forge"
box_dir = "$T/fbox"
policy = "forge.dw"

[agent]
command = ["/bin/bash", "-c"]
workspace = "$T/fws"
[agent.env]
HOME = "$T/fhome"

[tool.git]
command = ["git"]
egress = ["forge"]
[tool.git.env]
HOME = "$T/fhome"
GIT_CONFIG_NOSYSTEM = "1"
GIT_TERMINAL_PROMPT = "0"
[tool.git.filesystem]
write = ["$T/fws", "$T/fhome"]

[egress.forge]
destinations = ["git.test:$FP"]
[egress.forge.secret]
ref = "env://FORGE_CRED"
placement = "basic_auth"
inject = "always"

[gateway]
hosts = { "git.test" = "127.0.0.1" }
extra_ca_files = ["$pki/ca.pem"]
CONFIG
pw=${FORGE_CRED#*:}
out=$(cd "$T/fws" && FORGE_CRED=$FORGE_CRED timeout -k 5 120 "$cairn" run --config "$cfg/forge.toml" -- '
git clone -q https://git.test:'"$FP"'/basic-git/repo.git r; echo clone=$?
cd r && echo change > f && git add f && git commit -q -m "from the tool" && git push -q origin HEAD:refs/heads/from-tool; echo push=$?
curl -s -o /dev/null -w "agent=%{http_code}\n" "https://git.test:'"$FP"'/basic-git/repo.git/info/refs?service=git-upload-pack"
echo "secret-in-env=$(env | grep -c '"$pw"')"
echo "phantom-in-env=$(env | grep -c "^FORGE_CRED=")"' 2>"$T/ferr" </dev/null)
want_out "clone=0" "the tool clones from the forge with the injected credential"
want_out "push=0" "the tool pushes to the forge"
want_out "agent=401" "the agent, calling the forge itself, gets no credential"
want_out "secret-in-env=0" "the secret is nowhere in the agent's environment"
want_out "phantom-in-env=0" "nor the route's phantom: the route is git's alone"
[ "$(git -C "$T/forge/git/repo.git" log --format=%s -1 refs/heads/from-tool 2>/dev/null)" = "from the tool" ] && ok ||
	bad "the push did not reach the forge: $(grep -v '^  ' "$T/ferr" | tail -n 5)"
grep -q '"git": "unauthorized"' "$T/forge/up/requests.jsonl" && ok ||
	bad "the forge saw no unauthorized request (the agent's)"
grep -rqF "$pw" "$T/fws" "$T/fhome" && bad "the secret reached the box's files" || ok
kill "$forge_pid" 2>/dev/null

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
