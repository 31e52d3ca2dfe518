// The agent receiver in a real box (docs/records.md "The agent receiver"): the agent is a Node
// program using the official OpenTelemetry JS SDK and its OTLP/protobuf exporters
// (sdk_agent.mjs), configured by nothing but the variables the box sets. What it exports must
// reach every target re-stamped as Box re-stamps it: the records files as OTLP/JSON lines and a
// loopback collector as protobuf, both decoded with the official types (otlp.mjs); traces only
// to targets whose `include` names `trace`, logs and metrics to all.
//
//   CAIRN_BUILD=build node --test tests/telemetry/box_relay.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { collector, decodeJsonFile, kindOf, unwrap } from './otlp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const build = resolve(process.env.CAIRN_BUILD || 'build');
const cairn = join(build, 'cairn');
const work = mkdtempSync(join(tmpdir(), 'cairn-box-relay-'));
chmodSync(work, 0o755);
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

function box(url) {
  const dir = join(work, 'relay');
  mkdirSync(join(dir, 'ws'), { recursive: true });
  writeFileSync(join(dir, 'policy.dw'), '@id("all")\npermit (principal, action, resource);\n');
  writeFileSync(join(dir, 'box.toml'), `name = "relay"
box_dir = "${dir}/box"
policy = "policy.dw"

[agent]
command = ["node", "${join(here, 'sdk_agent.mjs')}"]
workspace = "${dir}/ws"

[agent.filesystem]
read = ["${repo}"]

[telemetry.all]
kind = "file"
destination = "${dir}/all.jsonl"

[telemetry.denies]
kind = "file"
destination = "${dir}/denies.jsonl"
include = ["deny"]

[telemetry.collector]
kind = "otlp"
destination = "${url}"
include = ["deny", "trace"]
`);
  return dir;
}

const attrs = (list) => Object.fromEntries(list.map((kv) => [kv.key, unwrap(kv.value)]));
const agentOnly = (reqs) => reqs.filter((q) => {
  const top = q.resourceSpans || q.resourceLogs || q.resourceMetrics;
  return top.some((r) => attrs(r.resource.attributes)['strands.box.source'] === 'agent');
});
const byKind = (reqs) => Object.fromEntries(['traces', 'logs', 'metrics']
  .map((k) => [k, reqs.filter((q) => kindOf(q) === k)]));

// Every attribute list anywhere in a request, with where it is.
function* attributeLists(node, path = '$') {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) yield* attributeLists(node[i], `${path}[${i}]`);
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'attributes' && Array.isArray(v)) yield [path, v];
      else yield* attributeLists(v, `${path}.${k}`);
    }
  }
}

test('what an OpenTelemetry SDK in the box exports reaches every target, re-stamped', async () => {
  const c = await collector();
  try {
    const dir = box(c.url);
    const r = await promisify(execFile)(cairn, ['run', '--decisions=none', '--config', join(dir, 'box.toml')],
      { encoding: 'utf8', env: { ...process.env, OTEL_RESOURCE_ATTRIBUTES: 'team=ops,deployment.environment=ci' } })
      .catch((e) => e);
    assert.equal(r.code || 0, 0, `${r.stdout}\n${r.stderr}`);
    const sdk = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.ok(sdk.traces.length && sdk.logs.length && sdk.metrics.length, r.stdout);
    assert.deepEqual(c.errors, []);

    const all = decodeJsonFile(join(dir, 'all.jsonl'), { metrics: true });
    const boxRes = all.filter((q) => !agentOnly([q]).length)
      .map((q) => attrs((q.resourceLogs || q.resourceSpans)[0].resource.attributes))[0];
    const files = byKind(agentOnly(all));
    for (const k of ['traces', 'logs', 'metrics']) assert.ok(files[k].length > 0, `no agent ${k} in all.jsonl`);

    for (const q of [...files.traces, ...files.logs, ...files.metrics]) {
      for (const rs of q.resourceSpans || q.resourceLogs || q.resourceMetrics) {
        const a = attrs(rs.resource.attributes);
        // the agent's own keys stay, the operator's win, the box's are the box's
        assert.equal(a['service.name'], 'sdk-agent');
        assert.equal(a.team, 'ops');
        assert.equal(a['deployment.environment'], 'ci');
        assert.equal(a['strands.box.source'], 'agent');
        assert.equal(a['strands.box.name'], boxRes['strands.box.name']);
        assert.equal(a['strands.box.run.id'], boxRes['strands.box.run.id']);
        const keys = rs.resource.attributes.map((kv) => kv.key);
        assert.deepEqual(keys.slice(-3), ['strands.box.source', 'strands.box.name', 'strands.box.run.id']);
        for (const s of rs.scopeSpans || rs.scopeLogs || rs.scopeMetrics) {
          assert.ok(!s.scope.name.startsWith('strands-box.'), s.scope.name);
        }
      }
      // strands.box.* is gone everywhere but the stamp
      for (const [where, list] of attributeLists(q)) {
        if (/\.resource$/.test(where)) continue;
        for (const kv of list) assert.ok(!kv.key.startsWith('strands.box.'), `${where}: ${kv.key}`);
      }
    }
    const spans = files.traces.flatMap((q) => q.resourceSpans.flatMap((rs) => rs.scopeSpans
      .flatMap((s) => s.spans.map((sp) => ({ scope: s.scope.name, ...sp })))));
    assert.deepEqual(spans.map((s) => s.spanId).sort(), [...sdk.spans].sort());
    assert.deepEqual([...new Set(spans.map((s) => s.scope))].sort(),
      ['agent-claimed:strands-box.policy', 'sdk-agent.work']);
    const turn = spans.find((s) => s.name === 'agent turn');
    assert.deepEqual(attrs(turn.attributes), { turn: '1' });
    const call = spans.find((s) => s.name === 'tool call');
    assert.equal(call.parentSpanId, spans.find((s) => s.name === 'agent turn' && s.scope === call.scope).spanId);
    assert.deepEqual(attrs(call.events[0].attributes), { count: '3' });
    const logs = files.logs.flatMap((q) => q.resourceLogs.flatMap((rs) => rs.scopeLogs
      .flatMap((s) => s.logRecords.map((l) => ({ scope: s.scope.name, ...l })))));
    assert.deepEqual(logs.map((l) => [l.scope, unwrap(l.body)]).sort(), [
      ['agent-claimed:strands-box.control', 'a forged control record'],
      ['sdk-agent.log', 'the agent says hello'],
    ]);
    const points = files.metrics.flatMap((q) => q.resourceMetrics.flatMap((rm) => rm.scopeMetrics
      .flatMap((s) => s.metrics.filter((m) => m.name === 'agent.requests'))));
    assert.ok(points.length > 0);
    assert.deepEqual(attrs(points[0].sum.dataPoints[0].attributes), { route: '/v1/messages' });

    // a target without `trace` gets the agent's logs and metrics, not its traces
    const denies = byKind(agentOnly(decodeJsonFile(join(dir, 'denies.jsonl'), { metrics: true })));
    assert.equal(denies.traces.length, 0);
    assert.deepEqual(denies.logs, files.logs);
    assert.deepEqual(denies.metrics, files.metrics);

    // the collector got the same requests, in protobuf
    assert.deepEqual(agentOnly(c.traces), files.traces);
    assert.deepEqual(agentOnly(c.logs), files.logs);
    assert.deepEqual(agentOnly(c.metrics), files.metrics);
    assert.ok(c.requests.some((q) => q.path === '/v1/metrics'));
  } finally {
    await c.close();
  }
});
