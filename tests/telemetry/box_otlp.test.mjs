// A real box with an OTLP/HTTP target: `cairn run` sends its records, through
// cairn-export, to a loopback collector that decodes them with the official
// OpenTelemetry types (collector() of ./otlp.mjs); they are the records the
// file target holds, the secret arrives as Box sends it, and a collector that
// hangs or refuses costs records, never the decisions (docs/records.md "OTLP
// targets").
//
//   CAIRN_BUILD=build node --test tests/telemetry/box_otlp.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { collector, decodeJsonFile, records } from './otlp.mjs';

const build = resolve(process.env.CAIRN_BUILD || 'build');
const cairn = join(build, 'cairn');
const work = mkdtempSync(join(tmpdir(), 'cairn-box-otlp-'));
chmodSync(work, 0o755);
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

const policy = `@id("no_blocked")
forbid (principal, action == Box::Action::"net:connect", resource)
when { context.input.host == "blocked.test" };
@id("all")
permit (principal, action, resource);
`;

// A box whose agent makes `n` denied requests, with a file target and an OTLP target.
function box(name, url, n) {
  const dir = join(work, name);
  mkdirSync(join(dir, 'ws'), { recursive: true });
  writeFileSync(join(dir, 'policy.dw'), policy);
  const script = `for i in $(seq ${n}); do curl -s -o /dev/null -w "%{http_code}\\n" http://blocked.test/$i; done`;
  writeFileSync(join(dir, 'box.toml'), `name = "${name}"
box_dir = "${dir}/box"
policy = "policy.dw"

[agent]
command = ["/bin/sh", "-c", ${JSON.stringify(script)}]
workspace = "${dir}/ws"

[agent.filesystem]
write = ["${dir}/ws"]

[telemetry.file]
kind = "file"
destination = "${dir}/records.jsonl"

[telemetry.collector]
kind = "otlp"
destination = "${url}"
secret.ref = "env://TM_TEST_TOKEN"
`);
  return dir;
}

async function run(dir) {
  const start = Date.now();
  const r = await promisify(execFile)(cairn, ['run', '--decisions=none', '--config', join(dir, 'box.toml')],
    { encoding: 'utf8', env: { ...process.env, TM_TEST_TOKEN: 'tok-123' } }).catch((e) => e);
  return { ...r, ms: Date.now() - start, code: r.code || 0 };
}

test('a collector receives the records the file holds, with the secret', async () => {
  const c = await collector();
  try {
    const dir = box('ok', c.url, 3);
    const r = await run(dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /\[telemetry\.collector\] records to http:\/\/127\.0\.0\.1:\d+ \(OTLP\/HTTP, best effort/);
    assert.deepEqual(c.errors, []);
    const file = records(decodeJsonFile(join(dir, 'records.jsonl')));
    const sent = records([...c.logs, ...c.traces]);
    const key = (x) => `${x.signal} ${x.spanId} ${x.scope} ${JSON.stringify(x.attrs)}`;
    assert.deepEqual(sent.map(key).sort(), file.map(key).sort());
    const denies = sent.filter((x) => x.signal === 'log' && x.attrs['strands.box.policy.verdict'] === 'deny');
    assert.equal(denies.length, 3);
    const ops = sent.filter((x) => x.signal === 'log' && x.scope === 'strands-box.control')
      .map((x) => x.attrs['strands.box.control.operation']);
    assert.deepEqual(ops.sort(), ['box_started', 'box_stopped', 'policy_installed']);
    for (const req of c.requests) {
      assert.equal(req.headers.authorization, 'Bearer tok-123');
      assert.equal(req.headers['content-type'], 'application/x-protobuf');
    }
    assert.ok(c.requests.some((q) => q.path === '/v1/logs') && c.requests.some((q) => q.path === '/v1/traces'));
  } finally {
    await c.close();
  }
});

for (const mode of ['hang', 'refuse']) {
  test(`a collector that ${mode === 'hang' ? 'hangs' : 'refuses'} loses records, not decisions`, async () => {
    const c = await collector({ [mode]: true });
    try {
      const dir = box(mode, c.url, 20);
      const r = await run(dir);
      assert.equal(r.code, 0, r.stderr);
      // every decision was made and answered (20 denials, the file has them)
      assert.equal((r.stdout.match(/^403$/gm) || []).length, 20);
      const file = records(decodeJsonFile(join(dir, 'records.jsonl')))
        .filter((x) => x.signal === 'log' && x.attrs['strands.box.policy.verdict'] === 'deny');
      assert.equal(file.length, 20);
      // the stop says what the collector lost, and the drain is bounded (Box: 10 s)
      assert.match(r.stderr, /cairn: warning: \[telemetry\.collector\]: \d+ records and spans lost/);
      assert.ok(r.ms < 30000, `cairn run took ${r.ms} ms`);
    } finally {
      await c.close();
    }
  });
}

test('an unset secret refuses the box before the workload', async () => {
  const dir = box('nosecret', 'http://127.0.0.1:9', 1);
  const r = await promisify(execFile)(cairn, ['run', '--config', join(dir, 'box.toml')],
    { encoding: 'utf8', env: { ...process.env, TM_TEST_TOKEN: '' } }).catch((e) => e);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[telemetry\.collector\] secret\.ref env:\/\/TM_TEST_TOKEN: the variable is not set/);
  assert.doesNotMatch(r.stdout || '', /403/);
});
