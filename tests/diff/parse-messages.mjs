// Parse errors of the Cedar dialect must read as Cedar's own: each policy text below is
// given to cedar-wasm (checkParsePolicySet) and to `cairn policy check`, and the first error
// message must be equal (Cedar's "failed to parse policies from string: " prefix dropped).
//   node tests/diff/parse-messages.mjs PATH/TO/cairn
// Ends with `N passed, N failed`.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const cedar = require('@cedar-policy/cedar-wasm/nodejs');
const cairn = process.argv[2];
const P = 'permit(principal, action, resource)';
const cases = [
  `${P} when { 1 / 2 == 0 };`,
  `${P} when { 3 % 2 == 1 };`,
  `${P} when { 1 < 2 < 3 };`,
  `${P} when { 1 == 2 in 3 };`,
  `${P} when { 1 = 2 };`,
  `${P} when { "\\q" == "" };`,
  `${P} when { "\\x80" == "" };`,
  `${P} when { !!!!!true };`,
  `${P} when { -----1 == 1 };`,
  `${P} when { foo };`,
  `${P} when { foo(1) };`,
  `${P} when { [1].frob() };`,
  `${P} when { [1].contains() };`,
  `${P} when { [1].isEmpty(1) };`,
  `${P} when { [1].containsAll([1], [2]) };`,
  `${P} when { "x" like principal };`,
  `${P} when {};`,
  `${P} unless {};`,
  `${P} when { principal[principal] };`,
  'permit(principal : User, action, resource);',
  'permit(principal, action is Action, resource);',
  'permit(principal is User == User::"a", action, resource);',
  `${P} when { ?principal == principal };`,
  `${P} unless { ?resource == resource };`,
  `${P} when { ?other == principal };`,
  `${P} when { 9223372036854775808 == 0 };`,
  `${P} when { {a: 1, a: 2} == {} };`,
  'allow(principal, action, resource);',
  `${P} if { true };`,
  'permit(principal, action, resource, context);',
  'permit(principal, action == User::"a", resource);',
  '@id("a") @id("b") permit(principal, action, resource);',
  P,
];

const dir = mkdtempSync(join(tmpdir(), 'parse-messages-'));
let pass = 0, fail = 0;
for (const text of cases) {
  const r = cedar.checkParsePolicySet({ staticPolicies: text });
  const want = r.type === 'success' ? 'OK' : r.errors[0].message.replace(/^failed to parse policies from string: /, '');
  const file = join(dir, 'p.cedar');
  writeFileSync(file, text);
  let out;
  try {
    out = execFileSync(cairn, ['policy', 'check', file], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  } catch (e) {
    out = e.stderr.toString();
  }
  const line = out.split('\n').find((l) => l.startsWith('error: '));
  const got = line ? line.slice('error: '.length) : 'OK';
  if (got === want) pass++;
  else { fail++; console.log(`FAIL: ${text}\n  cedar: ${want}\n  cairn: ${got}`); }
}
rmSync(dir, { recursive: true, force: true });
console.log(`${pass} passed, ${fail} failed`);
process.exitCode = fail ? 1 : 0;
