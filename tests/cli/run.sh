#!/usr/bin/env bash
# CLI tests: `cairn policy check` and `cairn policy authorize`, their texts and exit
# statuses.  Usage: tests/cli/run.sh PATH/TO/cairn
set -u
cairn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_exit WANT CMD...: run, keep stdout+stderr in $out
expect_exit() {
	local want=$1; shift
	out=$("$@" 2>&1)
	local got=$?
	if [ "$got" -eq "$want" ]; then ok; else bad "exit $got (want $want): $*"; echo "$out" | head -20; fi
}
# A substring of the whole output, so one spanning lines is matched as a block.
expect_out() {   # expect_out SUBSTRING: in the last $out
	if [[ "$out" == *"$1"* ]]; then ok; else bad "output lacks: $1"; echo "$out" | head -20; fi
}
expect_no_out() {   # expect_no_out SUBSTRING: not in the last $out
	if [[ "$out" == *"$1"* ]]; then bad "output has: $1"; echo "$out" | head -20; else ok; fi
}
policy() { printf '%s\n' "$1" > "$work/p.dw"; }
cpolicy() { printf '%s\n' "$1" > "$work/p.cedar"; }

export HOME=/home/dev

# --- check: valid, invalid, usage ---
expect_exit 0 "$cairn" policy check "$top/examples/policy.dw"
expect_out "OK: "
expect_exit 2 "$cairn" policy check "$top/examples/bad-policy.dw"
expect_out "bad-policy.dw:4:"
expect_out 'policy fails schema validation: for policy `policy_0`, attribute `input.paht` in context for Box::Action::"fs:read" not found'
expect_out 'optional attribute `input.arg1`'
expect_out "FAILED: "
expect_exit 1 "$cairn" policy check "$work/does-not-exist.dw"
expect_out "cannot read"
expect_exit 1 "$cairn" policy check
expect_exit 1 "$cairn" policy check "$top/examples/policy.dw" --format yaml

# --- parse errors: location, caret, messages ---
policy 'permit (principal, action == Box::Action::"fs:read", resource)'
expect_exit 2 "$cairn" policy check p.dw
expect_out "p.dw:2:1"
expect_out "^"
expect_out 'error: failed to parse policy source: dogwood parse: unexpected end of input; expected `;` to end the policy, or `when`/`unless` to add a condition'

policy 'permit (principal, action == Box::Action::"fs:read", resource) when { 1 / 2 == 0 };'
expect_exit 2 "$cairn" policy check p.dw
expect_out "division is not supported"
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { 3 % 2 == 1 };'
expect_exit 2 "$cairn" policy check p.dw
expect_out "remainder/modulo is not supported"
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { 1 < 2 < 3 };'
expect_exit 2 "$cairn" policy check p.dw
expect_out "multiple relational operators"
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path == "\q" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'the input `\q` is not a valid escape'
policy 'permit (principal, action == Box::Action::"shell:exec", resource) when { Scanner::classify(context.input.command) == "safe" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out "error: failed to parse policy source: dogwood: information providers are not enabled in this build"
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { foo };'
expect_exit 2 "$cairn" policy check p.dw
expect_out '`foo` is not a valid variable'

# deep nesting is a diagnostic, not a crash
python3 -c "print('permit (principal, action, resource) when { ' + '(' * 100000 + 'true' + ')' * 100000 + ' };')" > deep.cedar
expect_exit 2 "$cairn" policy check deep.cedar
expect_out "nesting"
python3 -c "print('permit (principal, action, resource) when { ' + '[' * 100000 + ']' * 100000 + ' == [] };')" > deep2.cedar
expect_exit 2 "$cairn" policy check deep2.cedar
expect_out "nesting"

# --- Box load refusals ---
policy 'permit (principal, action == Box::Action::"fs:raed", resource);'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy references unknown action: for policy `policy_0`, unrecognized action `Box::Action::"fs:raed"`'
policy '@id("other_only")
permit (principal, action == Box::Action::"fs:other", resource);'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy names only a reserved action: rule @id("other_only") (rule 1) names only the reserved action "fs:other"'
policy '@id("other_only")
permit (principal, action == Box::Action::"fs:other", resource);
permit (principal, action == Box::Action::"fs:read", resource);
forbid (principal, action in [Box::Action::"fs:other"], resource);'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'error: policy names only a reserved action: rule @id("other_only") (rule 1) names only the reserved action "fs:other"; the forbid rule with no @id (rule 3) names only the reserved action "fs:other"; no operation raises it, so the rule cannot match; name fs:read, fs:write, fs:delete, or fs:move, alone or beside fs:other'
expect_out 'FAILED: p.dw: 1 error, 0 warnings.'
policy '@id("project_read")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "~/project/*" };
@id("project_read")
permit (principal, action == Box::Action::"fs:write", resource) when { context.input.path like "~/project/*" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy gives one @id to more than one rule: @id("project_read") is on rules 1, 2; a denial and a telemetry record name a rule by its @id, so give each rule its own @id'
# every shared @id in one message, ids in byte order; a blank @id shares nothing
policy '@id("b") permit (principal, action, resource);
@id("a") permit (principal, action, resource);
@id(" ") permit (principal, action, resource);
@id("b") permit (principal, action, resource);
@id("a") permit (principal, action, resource);
@id(" ") permit (principal, action, resource);
@id("b") permit (principal, action, resource);'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'error: policy gives one @id to more than one rule: @id("a") is on rules 2, 5; @id("b") is on rules 1, 4, 7; a denial and a telemetry record name a rule by its @id, so give each rule its own @id'
expect_out 'FAILED: p.dw: 1 error, 0 warnings.'
policy '@id("project_read")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "/home/dev/project/*" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy compares an inert literal: rule @id("project_read") compares context.input.path with the pattern "/home/dev/project/*", and a path under the operator home is spelled ~/…; write "~/project/*"'
policy '@id("project_read")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "~/project/" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'and a directory is spelled without a trailing slash; write "~/project"'
policy 'forbid (principal, action == Box::Action::"fs:read", resource) when { context.input.operation == Box::FsReadOperation::"list" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'Box::FsReadOperation::"list"'

policy '@id("writes")
permit (principal, action == Box::Action::"fs:write", resource);
@id("write_budget")
permit (principal, action == Box::Action::"fs:write", resource)
when temporal { formerly within 1h Box::Action::"fs:write"::request{} };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy writes a cap as a permit: rule @id("write_budget") (rule 2) carries a temporal clause beside rule @id("writes") (rule 1), which permits the same action with no condition; a permit cannot narrow another permit, so write the cap as a forbid'
policy '@id("project_writes")
permit (principal, action == Box::Action::"fs:write", resource) when { context.input.path like "~/p/*" };
@id("write_budget")
permit (principal, action == Box::Action::"fs:write", resource)
when temporal { formerly within 1h Box::Action::"fs:write"::request{} };'
expect_exit 0 "$cairn" policy check p.dw
expect_out 'warning: rule @id("write_budget") (rule 2) carries a temporal clause beside rule @id("project_writes") (rule 1), which also permits that action'
# The other permit's scope decides, as in Box: a resource it narrows leaves the
# budget's coverage undecided (a warning), another principal does not cover it
# (silent), a catch-all covers it (refused), and every refusal is in one message.
cap='@id("write_budget")
permit (principal == Box::Agent::"self", action == Box::Action::"fs:write", resource)
when temporal { formerly within 1h Box::Action::"fs:write"::request{} };'
policy "@id(\"one_resource\")
permit (principal == Box::Agent::\"self\", action == Box::Action::\"fs:write\", resource == Box::Resource::\"unused\");
$cap"
expect_exit 0 "$cairn" policy check p.dw
expect_out 'warning: rule @id("write_budget") (rule 2) carries a temporal clause beside rule @id("one_resource") (rule 1), which also permits that action; the budget is inert for every request the other rule admits, so write a cap as a forbid'
expect_out 'OK: p.dw: 2 rules valid (1 warning).'
policy "permit (principal == Box::Agent::\"other\", action == Box::Action::\"fs:write\", resource);
$cap"
expect_exit 0 "$cairn" policy check p.dw
expect_no_out 'warning'
expect_out 'OK: p.dw: 2 rules valid.'
policy "permit (principal, action, resource);
$cap
@id(\"exec_budget\")
permit (principal, action == Box::Action::\"shell:exec\", resource)
when temporal { formerly within 1h Box::Action::\"shell:exec\"::request{} };"
expect_exit 2 "$cairn" policy check p.dw
expect_out 'error: policy writes a cap as a permit: rule @id("write_budget") (rule 2) carries a temporal clause beside the permit rule with no @id (rule 1), which permits the same action with no condition; a permit cannot narrow another permit, so write the cap as a forbid; rule @id("exec_budget") (rule 3) carries a temporal clause beside the permit rule with no @id (rule 1), which permits'
expect_out 'FAILED: p.dw: 1 error, 0 warnings.'
# beside a refusal Box reports no warning of the same check
policy "permit (principal, action, resource);
@id(\"project_writes\")
permit (principal, action == Box::Action::\"fs:write\", resource) when { context.input.path like \"~/p/*\" };
$cap"
expect_exit 2 "$cairn" policy check p.dw
expect_out 'rule @id("write_budget") (rule 3) carries a temporal clause beside the permit rule with no @id (rule 1), which permits the same action with no condition'
expect_out 'FAILED: p.dw: 1 error, 0 warnings.'
policy '@id("")
permit (principal, action, resource) when { true };
@id("")
permit (principal, action == Box::Action::"fs:write", resource)
when temporal { formerly within 1h Box::Action::"fs:write"::request{} };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy writes a cap as a permit: rule @id("") (rule 2) carries a temporal clause beside rule @id("") (rule 1), which permits the same action with no condition'
policy '@id("no_bin_rm")
forbid (principal, action == Box::Action::"shell:exec", resource) when { context.input.program == "/bin/rm" };'
expect_exit 0 "$cairn" policy check p.dw
expect_out 'warning: rule @id("no_bin_rm") compares context.input.program with "/bin/rm", which matches only a first word spelled that way; compare context.input.program_path to match the resolved binary'
policy '@id("later_home")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "*/home/dev/project/*" };'
expect_exit 0 "$cairn" policy check p.dw
expect_out 'names the operator home after a wildcard; a path under the operator home is spelled ~/…, so the pattern may match nothing'

# --- JSON output ---
expect_exit 2 "$cairn" policy check "$top/examples/bad-policy.dw" --format json
printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["valid"] is False and len(d["errors"]) >= 2 and d["errors"][0]["line"] == 4' && ok || bad "json output"

# --- Dogwood additions parse: temporal blocks, macros ---
policy 'def cedar is_git(?p) { ?p.program == "git" };
@id("push_after_tests")
forbid (principal, action == Box::Action::"shell:spawn", resource)
when { is_git(context.input) && context.input has arg1 && context.input.arg1 == "push" }
unless temporal { formerly within 1h (Box::Action::"shell:spawn"::response{ input.program: "npm", input.arg1: "test", output.status: 0 }) };'
expect_exit 0 "$cairn" policy check p.dw
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { undefined_macro(1) };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'unknown function or macro `undefined_macro`'

# --- authorize: permit, forbid, default deny, their texts ---
cd "$top/examples"
expect_exit 0 "$cairn" policy authorize --policies policy.dw --request requests/read-readme.json
expect_out "decision: ALLOW"
expect_out "text: policy permitted this operation on '~/proj/README.md'."
expect_exit 0 "$cairn" policy authorize --policies policy.dw --request requests/read-env.json
expect_out "decision: DENY"
expect_out "cause: forbidden"
expect_out "text: policy denied this operation on '~/proj/.env' [policy: no_secrets]: Secrets stay on the host: .env files are not readable."
expect_exit 0 "$cairn" policy authorize --policies policy.dw --request requests/http-example.json
expect_out "cause: no_match"
expect_out "text: policy denied this operation on 'example.com:443/' [default-deny]: No permit policy matched this request."
expect_exit 0 "$cairn" policy authorize --policies policy.dw --request requests/force-push.json --format json
printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["decision"]=="deny" and d["cause"]=="forbidden" and d["reasons"][0]["id"]=="no_force_push", d' && ok || bad "authorize json"
cd "$work"

# an evaluation error denies as an internal fault, whatever the permits say
policy 'permit (principal, action == Box::Action::"fs:read", resource);
forbid (principal, action == Box::Action::"fs:read", resource) when { 9223372036854775807 + 1 > 0 };'
printf '%s' '{"action": "Box::Action::\"fs:read\"", "context": {"input": {"path": "~/x", "operation": {"type": "Box::FsReadOperation", "id": "read_content"}}}, "subject": "~/x"}' > r.json
expect_exit 0 "$cairn" policy authorize --policies p.dw --request r.json
expect_out "cause: internal_fault"
expect_out "policy_1: integer overflow"
expect_out "text: policy denied this operation on '~/x' because the request could not be evaluated."
# a context that does not match the schema is refused, naming why
printf '%s' '{"action": "Box::Action::\"fs:read\"", "context": {"input": {"path": 3, "operation": {"type": "Box::FsReadOperation", "id": "read_content"}}}}' > r.json
expect_exit 2 "$cairn" policy authorize --policies p.dw --request r.json

# --- temporal: acceptance, windows, replay, history ---
policy 'forbid (principal, action == Box::Action::"fs:read", resource)
when temporal { formerly within 48h Box::Action::"fs:read"::request{ input.path: "~/x" } };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'error: policy fails schema validation: temporal window `48h` exceeds the maximum allowed window `24h` set by the event schema'"'"'s `max_window`; shorten this window to at most `24h`, or raise `max_window` in the event schema'
expect_out "p.dw:2:"
policy 'forbid (principal, action == Box::Action::"fs:read", resource)
when temporal { formerly within 1h Box::Action::"fs:read"::request{ input.path: p } };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'variable `p` is free in this temporal condition'
policy 'forbid (principal, action == Box::Action::"http:request", resource)
when temporal { formerly within 1h Box::Action::"fs:read"::response{ input.path like "~/customer-data/*" } };'
expect_exit 0 "$cairn" policy check p.dw
policy 'forbid (principal, action == Box::Action::"http:request", resource)
when temporal { formerly within 1h Box::Action::"http:request"::response{ input.port like "4*" } };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'like` applies only to String fields'
# a shape the incremental engine does not keep is named
policy 'permit (principal, action == Box::Action::"fs:read", resource);
forbid (principal, action == Box::Action::"fs:read", resource)
when temporal { formerly within 1h (Box::Action::"fs:read"::request{ input.path: "~/a" } && previous within 1m Box::Action::"fs:read"::request{ input.path: "~/b" }) };'
expect_exit 0 "$cairn" policy check p.dw
expect_out 'rule 2 (policy_1): a temporal condition is evaluated by a bounded scan'
expect_exit 0 "$cairn" policy check --format json p.dw
expect_out '"incremental": false'
# a scanned cap over responses is named: requests in flight do not count toward it
policy 'permit (principal, action == Box::Action::"http:request", resource);
forbid (principal, action == Box::Action::"http:request", resource)
when temporal { (count for (t: Timepoint). where formerly within 1h (Box::Action::"http:request"::response{} && tp(t) && previous within 1h Box::Action::"fs:read"::request{})) >= 3 };'
expect_exit 0 "$cairn" policy check p.dw
expect_out 'does not see requests still in flight'

v=$top/tests/data/dogwood/git_push_after_green_tests
expect_exit 0 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log"
expect_out "@36120 (time point 2): DENY  [rules: 1]"
expect_exit 0 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log" --format json
expect_out '"determining_rules": ['
expect_exit 1 "$cairn" policy replay "$v/policy.dw"
expect_exit 1 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log" --engine fast
printf '%s\n' '@0 Box::Action::"fs:read"(input: {path: "~/x"})' > bad.log
expect_exit 2 "$cairn" policy replay "$v/policy.dw" --trace bad.log
expect_out 'line 1: event head'
printf '%s\n' '36000 Box::Action::"fs:read"::request(input: {path: "~/x"})' > bad.log
expect_exit 2 "$cairn" policy replay "$v/policy.dw" --trace bad.log
expect_out 'line 1: timepoint must start with `@`'
# a decision event without a scope is denied, with the reason
printf '%s\n' '@1 Box::Action::"shell:spawn"::request(input: {program: "git"})' > noscope.log
expect_exit 0 "$cairn" policy replay "$v/policy.dw" --trace noscope.log
expect_out "@1 (time point 0): DENY"
expect_out "    error: decision event has no principal in scope"
# a trace's request_context is taken as given, as Dogwood's replay takes it: a
# missing required attribute or an undeclared one is no error, a rule reading the
# missing one errors; --strict-context checks it against the schema as before
policy '@id("reads")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "~/*" };
@id("no_list")
forbid (principal, action == Box::Action::"fs:read", resource) when { context.input.operation == Box::FsReadOperation::"enumerate" };'
printf '%s\n' '@0 scope(principal: Box::Agent::"self", resource: Box::Resource::"unused") request_context(input: {path: "~/x"}) Box::Action::"fs:read"::request(input: {path: "~/x"})' \
	'@1 scope(principal: Box::Agent::"self", resource: Box::Resource::"unused") request_context(input: {path: "~/y", operation: Box::FsReadOperation::"read_content"}, system: {box: "b"}) Box::Action::"fs:read"::request(input: {path: "~/y"})' > t.log
expect_exit 0 "$cairn" policy replay p.dw --trace t.log --text
expect_out "@0 (time point 0): ALLOW  [rules: 0]
    error: record does not have the attribute \`operation\`
    policy denied this operation on '~/x' because the request could not be evaluated.
@1 (time point 1): ALLOW  [rules: 0]"
expect_no_out "required attribute is missing"
expect_exit 0 "$cairn" policy replay p.dw --trace t.log --strict-context
expect_out '@0 (time point 0): DENY
    error: context: attribute "input"."operation": required attribute is missing
@1 (time point 1): DENY
    error: context: attribute "system": not declared in the schema'
# a value not of its declared type is kept as written: only a rule that reads it errors
policy 'permit (principal, action == Box::Action::"fs:read", resource) when { context.input.operation == Box::FsReadOperation::"read_content" };
forbid (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "*/.env" };'
printf '%s\n' '@0 scope(principal: Box::Agent::"self", resource: Box::Resource::"unused") request_context(input: {path: 5, operation: Box::FsReadOperation::"read_content"}) Box::Action::"fs:read"::request(input: {path: 5})' > t.log
expect_exit 0 "$cairn" policy replay p.dw --trace t.log
expect_out '@0 (time point 0): ALLOW  [rules: 0]
    error: type error: expected string, got long'
expect_exit 0 "$cairn" policy replay p.dw --trace t.log --strict-context
expect_out '@0 (time point 0): DENY
    error: context: attribute "input"."path": expected String, got Long'
# policy authorize keeps the Cedar CLI's request validation
printf '%s' '{"action": "Box::Action::\"fs:read\"", "context": {"input": {"path": "~/x"}}}' > req.json
expect_exit 2 "$cairn" policy authorize --policies p.dw --request req.json
expect_out 'required attribute is missing'

# `history show` → trace → replay: a box stamps events in nanoseconds, so its
# times convert to seconds with a fraction, which replay reads (Dogwood's own
# traces hold whole seconds, and read as before)
policy '@id("spawn")
permit (principal, action == Box::Action::"shell:spawn", resource);
@id("push_after_tests")
forbid (principal, action == Box::Action::"shell:spawn", resource)
when { context.input.program == "git" && context.input has arg1 && context.input.arg1 == "push" }
unless temporal { formerly within 1h Box::Action::"shell:spawn"::response{ input.program: "npm", output.status: 0 } };'
sp='scope(principal: Box::Agent::"self", resource: Box::Resource::"unused")'
git='input: {command: "git push", program: "git", program_path: "/usr/bin/git", arg1: "push", arg_count: 1, cwd: "~/p"}'
npm='input: {command: "npm test", program: "npm", program_path: "/usr/bin/npm", arg1: "test", arg_count: 1, cwd: "~/p"}'
printf '%s\n' "@36000.000 $sp request_context($git) Box::Action::\"shell:spawn\"::request($git, requestId: \"r1\")" \
	"@36060.25 $sp request_context($npm) Box::Action::\"shell:spawn\"::request($npm, requestId: \"r2\")" \
	"@36070.123456789 $sp request_context($npm) Box::Action::\"shell:spawn\"::response($npm, output: {status: 0}, requestId: \"r2\")" \
	"@36080.5 $sp request_context($git) Box::Action::\"shell:spawn\"::request($git, requestId: \"r3\")" > frac.log
mkdir -p rt/private/history
expect_exit 0 "$cairn" policy replay p.dw --trace frac.log --history rt/private/history
first=$out
expect_out '@36000 (time point 0): DENY  [rules: 1]
@36060.25 (time point 1): ALLOW  [rules: 0]
@36080.5 (time point 2): ALLOW  [rules: 0]'
expect_exit 0 "$cairn" history show rt
printf '%s\n' "$out" > rt.jsonl
python3 - rt.jsonl > rt.log <<'PY'
import json, re, sys
def v(x):
    if isinstance(x, bool): return 'true' if x else 'false'
    if x is None: return 'null'
    if isinstance(x, int): return str(x)
    if isinstance(x, str): return json.dumps(x, ensure_ascii=False)
    if isinstance(x, list): return '[' + ', '.join(v(i) for i in x) + ']'
    if '__entity' in x: return x['__entity']['type'] + '::' + json.dumps(x['__entity']['id'])
    return '{' + ', '.join(k + ': ' + v(i) for k, i in x.items()) + '}'
args = lambda rec: ', '.join(k + ': ' + v(i) for k, i in rec.items())
for line in open(sys.argv[1]):
    e = json.loads(line)
    ts = '%d.%09d' % divmod(e['ts'], 10**9)
    print('@%s scope(principal: %s, resource: %s) request_context(%s) %s::%s(%s)' % (
        ts, v(e['principal']), v(e['resource']), args(e['context']), e['action'], e['kind'],
        args(e['logged'])))
PY
grep -q '^@36070.123456789 ' rt.log && grep -q '^@36000.000000000 ' rt.log && ok || bad "history show times did not convert: $(head -c 300 rt.log)"
expect_exit 0 "$cairn" policy replay p.dw --trace rt.log
[ "$out" = "$first" ] && ok || bad "the round trip decided differently: $out"

# an event schema from a file; a malformed one is refused with line:col
printf 'max_window = 2d\ndecision event <A>::request { ...inputs(A) }\n' > ev.dwschema
policy 'forbid (principal, action == Box::Action::"fs:read", resource)
when temporal { formerly within 48h Box::Action::"fs:read"::request{ input.path: "~/x" } };'
printf '%s\n' '@0 scope(principal: Box::Agent::"self", resource: Box::Resource::"unused") request_context(input: {path: "~/x", operation: Box::FsReadOperation::"read_content"}) Box::Action::"fs:read"::request(input: {path: "~/x", operation: Box::FsReadOperation::"read_content"})' > t.log
expect_exit 0 "$cairn" policy replay p.dw --trace t.log --event-schema ev.dwschema
expect_out "@0 (time point 0): DENY  [rules: 0]"
printf 'decision event <A>::request { ...inputs(B) }\n' > ev.dwschema
expect_exit 2 "$cairn" policy replay p.dw --trace t.log --event-schema ev.dwschema
expect_out "ev.dwschema:1:"

# the durable history: replayed into, shown, verified, damage named
mkdir -p box/private/history
expect_exit 0 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log" --history box/private/history
expect_exit 0 "$cairn" history verify box
expect_out "OK: 12 records"
expect_exit 0 "$cairn" history show box --action shell:spawn
expect_out '"kind":"response"'
expect_out '"output":{"status":0}'
expect_exit 0 "$cairn" history show box --action 'Box::Action::"fs:read"'
[ -z "$out" ] && ok || bad "history show --action fs:read printed events"
# reopening replays it: the decisions continue where they were
expect_exit 0 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log" --history box/private/history
expect_out "@36000 (time point 0): ALLOW  [rules: 0]"
expect_exit 0 "$cairn" history verify box
expect_out "OK: 24 records"
printf '\x00' | dd of=box/private/history/history.log bs=1 seek=300 conv=notrunc 2>/dev/null
expect_exit 2 "$cairn" history verify box
expect_out "FAILED: "
expect_out "offset "
expect_exit 2 "$cairn" history show box
expect_exit 1 "$cairn" policy replay "$v/policy.dw" --trace "$v/trace.log" --history box/private/history
expect_out "offset "
expect_exit 1 "$cairn" history verify
expect_exit 1 "$cairn" history show box --since 5y

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
