// The agent receiver's re-stamping (src/telemetry/relay.c) against the official OpenTelemetry
// JS types: varied export requests of each kind (traces, logs, metrics) are encoded with the
// official encoder, re-stamped by relay-dump (tests/telemetry/relay_dump.c) from protobuf and
// from OTLP/JSON, and each output must decode, with the official types (otlp.mjs), to the same
// request a reference re-stamping in this file computes from the decoded input: Box's rules
// (strands.box.* stripped from resources, scopes, spans, events, links, log records, metric
// metadata, data points and exemplars; strands-box.* scopes renamed agent-claimed:...; each
// resource stamped with the operator's attributes, then source, name and run id).
//
// Run after building (`ninja -C build`): node --test tests/telemetry/relay.test.mjs
// RELAY_DUMP names another relay-dump (e.g. build-asan/relay-dump); RELAY_CASES the number of
// requests per kind (default 150).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJsonLine, decodeProtobuf, encodeProtobuf } from './otlp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const DUMP = process.env.RELAY_DUMP || join(here, '..', '..', 'build', 'relay-dump');
const CASES = Number(process.env.RELAY_CASES || 150);
const BOX = 'box-0123456789abcdef';
const RUN = '0123456789abcdef0123456789abcdef';
const OPERATOR = [['deployment.environment', 'ci'], ['team', 'ops']];

const work = mkdtempSync(join(tmpdir(), 'relay-test-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

// relay-dump on one body: { json, pb } (the line and the protobuf bytes), or { error }.
function relay(kind, format, body) {
  const oj = join(work, 'out.jsonl');
  const op = join(work, 'out.pb');
  try {
    execFileSync(DUMP, [kind, format, oj, op, ...OPERATOR.map(([k, v]) => `${k}=${v}`)],
      { input: body, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    return { error: `${e.stderr}`.trim() || e.message };
  }
  return { json: readFileSync(oj), pb: readFileSync(op) };
}

// ---- a seeded generator of requests, in the OTLP/JSON shape encodeProtobuf takes ----------

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gen(seed) {
  const r = rng(seed);
  const int = (n) => Math.floor(r() * n);
  const pick = (a) => a[int(a.length)];
  const maybe = (p = 0.5) => r() < p;
  const list = (max, f) => Array.from({ length: int(max + 1) }, f);
  const hex = (bytes) => Array.from({ length: bytes }, () => int(256).toString(16).padStart(2, '0')).join('');
  const u64 = () => pick(['0', '1', '1767225600123456789', '18446744073709551615', String(int(1e9))]);
  const i64 = () => pick(['0', '-1', '42', '-9223372036854775808', '9223372036854775807', String(int(1e6) - 5e5)]);
  const dbl = () => pick([0, 1.5, -2.25, 1e300, 5e-324, 0.1, 123456.789, -1e-10]);
  const str = () => pick(['', 'a', 'GET /v1/x', 'é ü', '日本', 'line\nbreak', 'tab\t"q"\\', '\u0001', 'x'.repeat(300)]);
  const key = () => pick(['service.name', 'http.method', 'strands.box.source', 'strands.box.policy.verdict',
    'strands.box.', 'strands.boxer', 'strands-box.x', 'team', 'deployment.environment', 'k', '']);
  const scopeName = () => pick(['', 'agent', 'strands-box.policy', 'strands-box.', 'strands-boxy', 'Strands-Box.policy',
    'my.lib', 'strands.box.scope']);
  const anyValue = (depth) => {
    const k = int(depth > 2 ? 5 : 8);
    switch (k) {
      case 0: return { stringValue: str() };
      case 1: return { boolValue: maybe() };
      case 2: return { intValue: i64() };
      case 3: return { doubleValue: dbl() };
      case 4: return { bytesValue: Buffer.from(hex(int(6)), 'hex').toString('base64') };
      case 5: return { arrayValue: { values: list(3, () => anyValue(depth + 1)) } };
      case 6: return { kvlistValue: { values: list(3, () => kv(depth + 1)) } };
      default: return {};
    }
  };
  const kv = (depth = 0) => ({ key: key(), value: anyValue(depth) });
  const attrs = () => list(5, () => kv());
  const resource = () => {
    if (maybe(0.2)) return undefined;
    const res = { attributes: attrs(), droppedAttributesCount: int(3) };
    if (maybe(0.3)) res.entityRefs = list(2, () => ({ schemaUrl: str(), type: 'service', idKeys: ['service.name'], descriptionKeys: list(2, key) }));
    return res;
  };
  const scope = () => (maybe(0.15) ? undefined
    : { name: scopeName(), version: pick(['', '1.0']), attributes: attrs(), droppedAttributesCount: int(2) });
  const top = (items) => list(3, () => {
    const o = {};
    const res = resource();
    if (res) o.resource = res;
    o[items[0]] = list(3, () => {
      const s = {};
      const sc = scope();
      if (sc) s.scope = sc;
      s[items[1]] = list(3, items[2]);
      if (maybe(0.3)) s.schemaUrl = 'https://opentelemetry.io/schemas/1.26.0';
      return s;
    });
    if (maybe(0.3)) o.schemaUrl = 'https://example/schema';
    return o;
  });

  const span = () => {
    const s = {
      traceId: hex(16), spanId: hex(8), traceState: pick(['', 'a=b']), parentSpanId: pick(['', hex(8)]),
      flags: pick([0, 1, 0x301]), name: str(), kind: int(6), startTimeUnixNano: u64(), endTimeUnixNano: u64(),
      attributes: attrs(), droppedAttributesCount: int(2),
      events: list(2, () => ({ timeUnixNano: u64(), name: str(), attributes: attrs(), droppedAttributesCount: int(2) })),
      droppedEventsCount: int(2),
      links: list(2, () => ({ traceId: hex(16), spanId: hex(8), traceState: '', attributes: attrs(), droppedAttributesCount: 0, flags: pick([0, 256]) })),
      droppedLinksCount: int(2),
    };
    if (maybe()) s.status = { message: str(), code: int(3) };
    return s;
  };
  const log = () => {
    const l = {
      timeUnixNano: u64(), observedTimeUnixNano: u64(), severityNumber: int(25), severityText: pick(['', 'INFO', 'deny']),
      attributes: attrs(), droppedAttributesCount: int(2), flags: pick([0, 1, 3]),
      traceId: pick(['', hex(16)]), spanId: pick(['', hex(8)]), eventName: pick(['', 'agent.event']),
    };
    if (maybe(0.7)) l.body = anyValue(0);
    return l;
  };
  const exemplar = () => {
    const e = { filteredAttributes: attrs(), timeUnixNano: u64(), spanId: pick(['', hex(8)]), traceId: pick(['', hex(16)]) };
    if (maybe()) e.asDouble = dbl(); else if (maybe()) e.asInt = i64();
    return e;
  };
  const point = () => ({ attributes: attrs(), startTimeUnixNano: u64(), timeUnixNano: u64(), flags: int(2) });
  const numberPoint = () => {
    const p = { ...point(), exemplars: list(2, exemplar) };
    if (maybe()) p.asDouble = dbl(); else if (maybe()) p.asInt = i64();
    return p;
  };
  const optional = (p) => {
    for (const f of ['sum', 'min', 'max']) if (maybe()) p[f] = pick([0, dbl()]);
    return p;
  };
  const buckets = () => ({ offset: int(11) - 5, bucketCounts: list(4, u64) });
  const metric = () => {
    const m = { name: str(), description: str(), unit: pick(['', 'ms', '1']), metadata: attrs() };
    switch (int(6)) {
      case 0: m.gauge = { dataPoints: list(3, numberPoint) }; break;
      case 1: m.sum = { dataPoints: list(3, numberPoint), aggregationTemporality: int(3), isMonotonic: maybe() }; break;
      case 2: m.histogram = {
        dataPoints: list(3, () => {
          const n = int(4);
          return optional({ ...point(), count: u64(), bucketCounts: Array.from({ length: n + 1 }, u64),
            explicitBounds: Array.from({ length: n }, dbl), exemplars: list(2, exemplar) });
        }),
        aggregationTemporality: int(3),
      }; break;
      case 3: m.exponentialHistogram = {
        dataPoints: list(3, () => {
          const p = optional({ ...point(), count: u64(), scale: int(41) - 20, zeroCount: u64(), exemplars: list(2, exemplar),
            zeroThreshold: pick([0, 1e-9]) });
          if (maybe()) p.positive = buckets();
          if (maybe()) p.negative = buckets();
          return p;
        }),
        aggregationTemporality: int(3),
      }; break;
      case 4: m.summary = {
        dataPoints: list(3, () => ({ ...point(), count: u64(), sum: dbl(),
          quantileValues: list(3, () => ({ quantile: pick([0, 0.5, 0.99, 1]), value: dbl() })) })),
      }; break;
      default: break; // no data
    }
    return m;
  };
  return {
    traces: { resourceSpans: top(['scopeSpans', 'spans', span]) },
    logs: { resourceLogs: top(['scopeLogs', 'logRecords', log]) },
    metrics: { resourceMetrics: top(['scopeMetrics', 'metrics', metric]) },
  };
}

// ---- the reference re-stamping, over the canonical decoded request ----------------------

const strip = (list) => list.filter((a) => !a.key.startsWith('strands.box.'));
const strKv = (key, value) => ({ key, value: { stringValue: value } });
const TOP = {
  traces: ['resourceSpans', 'scopeSpans', 'spans'],
  logs: ['resourceLogs', 'scopeLogs', 'logRecords'],
  metrics: ['resourceMetrics', 'scopeMetrics', 'metrics'],
};

function restampItem(kind, it) {
  if (kind === 'traces') {
    it.attributes = strip(it.attributes);
    for (const e of it.events) e.attributes = strip(e.attributes);
    for (const l of it.links) l.attributes = strip(l.attributes);
  } else if (kind === 'logs') {
    it.attributes = strip(it.attributes);
  } else {
    it.metadata = strip(it.metadata);
    for (const d of ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary']) {
      if (!it[d]) continue;
      for (const p of it[d].dataPoints) {
        p.attributes = strip(p.attributes);
        for (const e of p.exemplars || []) e.filteredAttributes = strip(e.filteredAttributes);
      }
    }
  }
}

function restamp(kind, req) {
  const out = structuredClone(req);
  const [rk, sk, ik] = TOP[kind];
  const operatorKeys = new Set(OPERATOR.map(([k]) => k));
  for (const r of out[rk]) {
    const res = r.resource || { attributes: [], droppedAttributesCount: 0, entityRefs: [] };
    res.attributes = [
      ...strip(res.attributes).filter((a) => !operatorKeys.has(a.key)),
      ...OPERATOR.map(([k, v]) => strKv(k, v)),
      strKv('strands.box.source', 'agent'), strKv('strands.box.name', BOX), strKv('strands.box.run.id', RUN),
    ];
    r.resource = res;
    for (const s of r[sk]) {
      if (s.scope) {
        if (s.scope.name.startsWith('strands-box.')) s.scope.name = `agent-claimed:${s.scope.name}`;
        s.scope.attributes = strip(s.scope.attributes);
      }
      for (const it of s[ik]) restampItem(kind, it);
    }
  }
  return out;
}

// ---- the tests --------------------------------------------------------------------------------

test('relay-dump is built', () => {
  assert.ok(existsSync(DUMP), `${DUMP} is missing: build it (ninja -C build relay-dump) or set RELAY_DUMP`);
});

for (const kind of ['traces', 'logs', 'metrics']) {
  test(`${kind}: the protobuf and the JSON line decode to Box's re-stamping of the request, from either input`, () => {
    let resources = 0;
    for (let i = 0; i < CASES; i++) {
      const obj = gen(1000 * i + 7)[kind];
      const body = encodeProtobuf(kind, obj);
      const input = decodeProtobuf(kind, body);
      const want = restamp(kind, input);
      const where = `case ${i} (${kind}, seed ${1000 * i + 7})`;

      const fromPb = relay(kind, 'pb', body);
      assert.equal(fromPb.error, undefined, `${where}: relay-dump refused the protobuf: ${fromPb.error}`);
      const pbOut = decodeProtobuf(kind, fromPb.pb);
      const jsonOut = decodeJsonLine(fromPb.json, { metrics: true });
      assert.deepStrictEqual(pbOut, jsonOut, `${where}: the protobuf and the JSON line differ`);
      assert.deepStrictEqual(pbOut, want, `${where}: not Box's re-stamping`);
      assert.ok(fromPb.json.at(-1) === 0x0a && fromPb.json.indexOf(0x0a) === fromPb.json.length - 1, `${where}: not one line`);

      const fromJson = relay(kind, 'json', Buffer.from(JSON.stringify(obj)));
      assert.equal(fromJson.error, undefined, `${where}: relay-dump refused the JSON: ${fromJson.error}`);
      assert.deepStrictEqual(decodeProtobuf(kind, fromJson.pb), want, `${where}: from JSON, the protobuf`);
      assert.deepStrictEqual(decodeJsonLine(fromJson.json, { metrics: true }), want, `${where}: from JSON, the line`);
      resources += want[TOP[kind][0]].length;
    }
    assert.ok(resources > CASES, `too few resources generated (${resources})`);
  });
}

test('a protobuf body the official types encode, with every kind of field, keeps every value', () => {
  // one request of each kind carrying every field at a non-default value, so a field the
  // relay dropped or mis-typed shows up here even if the generator skipped it
  const metrics = {
    resourceMetrics: [{
      resource: { attributes: [strKv('service.name', 'a')], droppedAttributesCount: 1, entityRefs: [{ schemaUrl: 's', type: 't', idKeys: ['a'], descriptionKeys: ['b'] }] },
      scopeMetrics: [{
        scope: { name: 'strands-box.metrics', version: 'v', attributes: [strKv('x', 'y')], droppedAttributesCount: 2 },
        metrics: [
          { name: 'h', description: 'd', unit: 'u', metadata: [strKv('m', 'n')],
            histogram: { aggregationTemporality: 1, dataPoints: [{ attributes: [], startTimeUnixNano: '1', timeUnixNano: '2', count: '3',
              sum: 0, bucketCounts: ['1', '18446744073709551615'], explicitBounds: [2.5], flags: 1, min: -1, max: 0,
              exemplars: [{ filteredAttributes: [], timeUnixNano: '4', asInt: '-5', spanId: '0011223344556677', traceId: '00112233445566778899aabbccddeeff' }] }] } },
          { name: 'e', exponentialHistogram: { aggregationTemporality: 2, dataPoints: [{ count: '1', scale: -20, zeroCount: '9',
            positive: { offset: -3, bucketCounts: ['7'] }, negative: { offset: 0, bucketCounts: [] }, zeroThreshold: 1e-9, sum: 3 }] } },
        ],
      }],
    }],
  };
  const body = encodeProtobuf('metrics', metrics);
  const out = relay('metrics', 'pb', body);
  assert.equal(out.error, undefined, out.error);
  assert.deepStrictEqual(decodeProtobuf('metrics', out.pb), restamp('metrics', decodeProtobuf('metrics', body)));
  const line = JSON.parse(out.json);
  const hdp = line.resourceMetrics[0].scopeMetrics[0].metrics[0].histogram.dataPoints[0];
  assert.equal(hdp.sum, 0);             // a present optional 0 is kept
  assert.equal(hdp.max, 0);
  assert.deepEqual(hdp.bucketCounts, ['1', '18446744073709551615']);
  assert.equal(line.resourceMetrics[0].scopeMetrics[0].scope.name, 'agent-claimed:strands-box.metrics');
  const ehdp = line.resourceMetrics[0].scopeMetrics[0].metrics[1].exponentialHistogram.dataPoints[0];
  assert.equal('min' in ehdp, false);  // an absent optional stays absent
});

test('refusals name where and why', () => {
  const bad = relay('traces', 'pb', Buffer.from([0x0a, 0x05, 0x0a]));
  assert.match(bad.error, /^EINVAL: protobuf \$ \(byte 1\): a length of 5 runs past the end/);
  const badJson = relay('logs', 'json', Buffer.from('{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"traceId":"xyz"}]}]}]}'));
  assert.match(badJson.error, /^EINVAL: \$\.resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[0\]: an id must be an even number of hex digits/);
  const many = relay('metrics', 'pb', Buffer.alloc(2 * 1025, Buffer.from([0x0a, 0x00])));
  assert.match(many.error, /^E2BIG: .*1025 resources, where at most 1024/);
});
