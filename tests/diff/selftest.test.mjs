// Self-test of the differential tester, without the C engine: `node --test tests/diff/`.
// The stand-in runner evaluates with cedar-wasm itself, so it must agree on everything;
// with an injected fake bug the tester must notice, and the minimiser must shrink the case
// to something small that still shows the bug.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { genCase } from './gen.mjs';
import { caseTexts, loadCase } from './oracle.mjs';
import { respace } from './print.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const tool = join(here, 'cedar-diff.mjs');
const standIn = join(here, 'stand-in-runner.mjs');

function runTool(args) {
  const work = mkdtempSync(join(tmpdir(), 'cedar-diff-selftest-'));
  const r = spawnSync(process.execPath, [tool, '--workdir', work, ...args], { encoding: 'utf8', timeout: 600_000 });
  return { ...r, work };
}

test('generation is deterministic per (seed, index)', () => {
  for (let i = 0; i < 20; i++) {
    const a = genCase(7, i), b = genCase(7, i);
    assert.deepEqual(caseTexts(a.c), caseTexts(b.c));
    assert.deepEqual(a.c.entities, b.c.entities);
    assert.deepEqual(a.more(), b.more());
  }
});

test('cedar-wasm accepts the generated schemas and policies', () => {
  let rejected = 0;
  for (let i = 0; i < 60; i++) {
    const { c } = genCase(11, i);
    const rej = loadCase(c);
    if (rej) { rejected++; assert.fail(`case ${i}: ${rej.stage}: ${rej.message}`); }
  }
  assert.equal(rejected, 0);
});

test('respace leaves string literals alone', () => {
  const text = 'permit(principal, action, resource) when { "a b  c" like "x * y" };';
  for (const style of ['ascii', 'unicode', 'comments']) {
    const out = respace(text, { seed: 3, style, rate: 1 });
    assert.ok(out.includes('"a b  c"') && out.includes('"x * y"'), out);
  }
});

test('stand-in runner agrees with the oracle on every case', () => {
  const r = runTool(['--runner', standIn, '--cases', '400', '--seed', '3']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^400 passed, 0 failed$/m);
  assert.match(r.stdout, /^validation: \d+ agree, 0 disagree$/m);
  rmSync(r.work, { recursive: true, force: true });
});

test('an injected bug is found and minimised', () => {
  // le-as-lt: the stand-in evaluates `<=` as `<`. The tool stops after the first failing
  // chunk, so a large --cases with small chunks costs only as much as finding the bug.
  const r = runTool(['--runner', `${standIn} --bug le-as-lt`, '--cases', '40000', '--chunk', '40', '--seed', '3', '--minimise-time', '240']);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^\d+ passed, [1-9]\d* failed$/m);
  const saved = /--- saved as (.*)\/test\.json ---/.exec(r.stdout);
  assert.ok(saved, r.stdout);
  const policies = readFileSync(join(saved[1], 'policies.cedar'), 'utf8');
  // The bug needs a `<=` to show; minimisation must keep it and drop most of the rest.
  assert.match(policies, /<=/);
  assert.ok(policies.length < 400, `minimised policies still ${policies.length} bytes:\n${policies}`);
  rmSync(r.work, { recursive: true, force: true });
});

test('a crashing runner is reported per file', () => {
  const r = runTool(['--runner', `${standIn} --bug crash-has`, '--cases', '150', '--seed', '4', '--max-minimise', '0']);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /runner killed by SIGABRT/);
  rmSync(r.work, { recursive: true, force: true });
});
