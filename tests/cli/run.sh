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
expect_out() {   # expect_out SUBSTRING: in the last $out
	if printf '%s' "$out" | grep -qF -- "$1"; then ok; else bad "output lacks: $1"; echo "$out" | head -20; fi
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
expect_out 'unexpected end of input; expected `;` to end the policy, or `when`/`unless` to add a condition'

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
expect_out "information providers are not enabled in this build"
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
policy '@id("project_read")
permit (principal, action == Box::Action::"fs:read", resource) when { context.input.path like "~/project/*" };
@id("project_read")
permit (principal, action == Box::Action::"fs:write", resource) when { context.input.path like "~/project/*" };'
expect_exit 2 "$cairn" policy check p.dw
expect_out 'policy gives one @id to more than one rule: @id("project_read") is on rules 1, 2'
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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
