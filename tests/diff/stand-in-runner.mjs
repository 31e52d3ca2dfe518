#!/usr/bin/env node
// Stand-in for the C conformance runner, built on cedar-wasm itself, so that the
// differential pipeline (generation, chunking, verdict parsing, minimisation) can be tested
// before — and independently of — the C engine. It speaks the same protocol as cedar-run:
//
//   node tests/diff/stand-in-runner.mjs [--bug NAME]... TEST.json...
//
// Output: `FAIL <test.json> [<i>] <description>: <what differs>` per failing request,
// `VALIDATION-DISAGREE <test.json>: ...` per validation disagreement, then
// `validation: N agree, M disagree` and `N passed, N failed`; exit 1 iff a request failed.
//
// --bug injects a fake engine bug, to check that the tester notices and minimises it:
//   le-as-lt        evaluates `<=` as `<` (rewrites the policy text)
//   like-star       treats an escaped `\*` in like patterns as a wildcard
//   forbid-errors   reports no erroring policies at all in files whose policies contain `forbid`
//   crash-has       aborts (SIGABRT) on any file whose policies use `has`
//   validate-contains  flips shouldValidate for policies that use `.contains(`
// Without --bug it must agree with cedar-wasm on everything the tester writes.

import v8 from 'node:v8';
import { readFileSync } from 'node:fs';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';

// cedar-diff starts this file with V8 flags that dodge a V8 deoptimizer crash (see
// cedar-diff.mjs); when run by hand, set them here as well as is still possible.
v8.setFlagsFromString('--no-turbo-inline-js-wasm-calls --no-turbo-inline-array-builtins');

const args = process.argv.slice(2);
const bugs = new Set();
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--bug') bugs.add(args[++i]);
  else files.push(args[i]);
}

const setEq = (a, b) => a.length === b.length && a.every((x) => b.includes(x));
let passed = 0, failed = 0, vAgree = 0, vDisagree = 0;
const out = [];

for (const f of files) {
  const test = JSON.parse(readFileSync(f, 'utf8'));
  let policies = readFileSync(test.policies, 'utf8');
  const schema = readFileSync(test.schema, 'utf8');
  const entities = JSON.parse(readFileSync(test.entities, 'utf8'));
  if (bugs.has('crash-has') && /\bhas\b/.test(policies)) process.kill(process.pid, 'SIGABRT');
  if (bugs.has('le-as-lt')) policies = policies.replaceAll(' <= ', ' < ');
  if (bugs.has('like-star')) policies = policies.replaceAll('\\*', '*');

  const v = cedar.validate({ schema, policies: { staticPolicies: policies }, validationSettings: { mode: 'strict' } });
  let valid = v.type === 'success' && v.validationErrors.length === 0;
  if (bugs.has('validate-contains') && policies.includes('.contains(')) valid = !valid;
  if (valid === test.shouldValidate) vAgree++;
  else {
    vDisagree++;
    const msg = v.type === 'success' ? v.validationErrors.map((e) => e.error.message).join('; ') : v.errors.map((e) => e.message).join('; ');
    out.push(`VALIDATION-DISAGREE ${f}: expected shouldValidate=${test.shouldValidate}, got ${valid}: ${msg || 'no errors'}`);
  }

  const okSchema = cedar.preparseSchema('s', schema).type === 'success';
  const okPolicies = cedar.preparsePolicySet('p', { staticPolicies: policies }).type === 'success';
  test.requests.forEach((req, i) => {
    const fail = (what) => { failed++; out.push(`FAIL ${f} [${i}] ${req.description}: ${what}`); };
    if (!okSchema || !okPolicies) return fail('cannot load schema or policies');
    const r = cedar.statefulIsAuthorized({
      principal: req.principal, action: req.action, resource: req.resource, context: req.context,
      preparsedSchemaName: 's', preparsedPolicySetId: 'p', entities, validateRequest: req.validateRequest !== false,
    });
    if (r.type !== 'success') return fail(`request rejected: ${r.errors.map((e) => e.message).join('; ')}`);
    const dec = r.response.decision;
    const reason = [...new Set(r.response.diagnostics.reason)];
    let errors = r.response.diagnostics.errors.map((e) => e.policyId);
    if (bugs.has('forbid-errors') && policies.includes('forbid')) errors = [];
    errors = [...new Set(errors)];
    const diffs = [];
    if (dec !== req.decision) diffs.push(`decision expected ${req.decision}, got ${dec}`);
    if (!setEq(reason, req.reason)) diffs.push(`reason expected ${JSON.stringify(req.reason)}, got ${JSON.stringify(reason)}`);
    if (!setEq(errors, req.errors)) diffs.push(`errors expected ${JSON.stringify(req.errors)}, got ${JSON.stringify(errors)}`);
    if (diffs.length) fail(diffs.join('; '));
    else passed++;
  });
}
out.push(`validation: ${vAgree} agree, ${vDisagree} disagree`);
out.push(`${passed} passed, ${failed} failed`);
process.stdout.write(out.join('\n') + '\n');
process.exitCode = failed ? 1 : 0;
