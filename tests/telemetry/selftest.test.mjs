// Checks of the OTLP harness itself (otlp.mjs), before it checks cairn: Box's two example
// lines decode, each broken variant is refused for the reason it is broken, and a protobuf body
// built with the official types reaches the loopback collector and decodes to the same object
// as the equivalent JSON line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import {
  decodeJsonLine, decodeJsonFile, decodeProtobuf, encodeProtobuf, collector, records, types as T, Long,
} from './otlp.mjs';

const require = createRequire(import.meta.url);
const { Writer } = require('protobufjs/minimal');

const here = dirname(fileURLToPath(import.meta.url));
const EXAMPLE = join(here, 'box-example.jsonl');
const [LOG_LINE, SPAN_LINE] = readFileSync(EXAMPLE, 'utf8').split('\n');
const BOX_ATTRS = [
  'strands.box.policy.principal', 'strands.box.policy.action', 'strands.box.policy.resource',
  'strands.box.policy.verdict', 'strands.box.policy.cause', 'strands.box.policy.reason',
  'strands.box.policy.rule', 'strands.box.policy.category', 'server.address', 'server.port',
];

// A copy of an example line, changed by edit(obj): the rejection tests start from a line
// that decodes and change one thing.
function edited(line, edit) {
  const o = JSON.parse(line);
  edit(o);
  return JSON.stringify(o);
}
const logRecord = (o) => o.resourceLogs[0].scopeLogs[0].logRecords[0];
const span = (o) => o.resourceSpans[0].scopeSpans[0].spans[0];
const LR = '\\$\\.resourceLogs\\[0\\]\\.scopeLogs\\[0\\]\\.logRecords\\[0\\]';
const SP = '\\$\\.resourceSpans\\[0\\]\\.scopeSpans\\[0\\]\\.spans\\[0\\]';

test('the example decision log line decodes, with Box fields and attribute order', () => {
  const [r, ...rest] = records(decodeJsonLine(LOG_LINE));
  assert.equal(rest.length, 0);
  assert.equal(r.signal, 'log');
  assert.equal(r.scope, 'strands-box.policy');
  assert.equal(r.eventName, 'strands.box.policy.decision');
  assert.equal(r.severityNumber, 13);
  assert.equal(r.severityText, 'deny');
  assert.equal(r.traceId, '9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f');
  assert.equal(r.spanId, '1a2b3c4d5e6f7a8b');
  assert.equal(r.flags, 3);
  assert.equal(r.timeUnixNano, '1767225600123456789');
  assert.equal(r.observedTimeUnixNano, '1767225600123470001');
  assert.equal(r.body, null);
  assert.deepEqual(r.attrKeys, BOX_ATTRS);
  assert.equal(r.attrs['strands.box.policy.verdict'], 'deny');
  assert.equal(r.attrs['server.port'], '443');
  assert.equal(r.resource['service.name'], 'strands-box');
  assert.equal(r.resource['strands.box.run.id'], '6f1c0e9b2a7d4c3e8b5a1f0d2c4e6a8b');
});

test('the example decision span line decodes: same ids and attributes, no parent, no status', () => {
  const [log] = records(decodeJsonLine(LOG_LINE));
  const [s, ...rest] = records(decodeJsonLine(SPAN_LINE));
  assert.equal(rest.length, 0);
  assert.equal(s.signal, 'span');
  assert.equal(s.scope, 'strands-box.policy');
  assert.equal(s.name, 'policy net:connect');
  assert.equal(s.kind, 1);
  assert.equal(s.traceId, log.traceId);
  assert.equal(s.spanId, log.spanId);
  assert.equal(s.parentSpanId, '');
  assert.equal(s.traceState, '');
  assert.equal(s.flags, 3);
  assert.equal(s.startTimeUnixNano, log.timeUnixNano);
  assert.equal(s.endTimeUnixNano, log.timeUnixNano);
  assert.equal(s.status, null);
  assert.deepEqual(s.attrKeys, log.attrKeys);
  assert.deepEqual(s.attrs, log.attrs);
  assert.deepEqual(s.resource, log.resource);
});

test('a line without its default fields decodes to the same object (OTLP/JSON allows leaving them out)', () => {
  const bare = edited(LOG_LINE, (o) => {
    delete o.resourceLogs[0].schemaUrl;
    delete o.resourceLogs[0].resource.droppedAttributesCount;
    const sl = o.resourceLogs[0].scopeLogs[0];
    delete sl.schemaUrl;
    sl.scope = { name: sl.scope.name };
    const r = logRecord(o);
    delete r.body;
    delete r.droppedAttributesCount;
  });
  assert.notEqual(bare.length, LOG_LINE.length);
  assert.deepEqual(decodeJsonLine(bare), decodeJsonLine(LOG_LINE));
  // And a status, a link and every AnyValue kind come through.
  const rich = edited(SPAN_LINE, (o) => {
    const s = span(o);
    s.status = { code: 2, message: 'policy evaluation failed' };
    s.parentSpanId = '00f067aa0ba902b7';
    s.links = [{ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceState: '', attributes: [], droppedAttributesCount: 0, flags: 0 }];
    s.attributes.push(
      { key: 'b', value: { boolValue: true } }, { key: 'd', value: { doubleValue: 1.5 } },
      { key: 'y', value: { bytesValue: 'AP8=' } }, { key: 'neg', value: { intValue: '-9223372036854775808' } },
      { key: 'argv', value: { arrayValue: { values: [{ stringValue: 'ls' }, { intValue: '1' }] } } },
      { key: 'kv', value: { kvlistValue: { values: [{ key: 'k', value: { stringValue: 'v' } }] } } },
      { key: 'none', value: {} });
  });
  const [s] = records(decodeJsonLine(rich));
  assert.deepEqual(s.status, { code: 2, message: 'policy evaluation failed' });
  assert.equal(s.parentSpanId, '00f067aa0ba902b7');
  assert.equal(s.links[0].traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(s.attrs.b, true);
  assert.equal(s.attrs.d, 1.5);
  assert.equal(s.attrs.y, 'AP8=');
  assert.equal(s.attrs.neg, '-9223372036854775808');
  assert.deepEqual(s.attrs.argv, ['ls', '1']);
  assert.deepEqual(s.attrs.kv, { k: 'v' });
  assert.equal(s.attrs.none, null);
});

test('the largest fixed64 comes back as itself, not as a negative number', () => {
  const line = edited(LOG_LINE, (o) => { logRecord(o).timeUnixNano = '18446744073709551615'; });
  assert.equal(records(decodeJsonLine(line))[0].timeUnixNano, '18446744073709551615');
});

// Each broken line, and the words its refusal must contain: a refusal for another reason
// would not show that the check under test works.
const BROKEN = [
  ['uppercase hex trace id', LOG_LINE, (o) => { logRecord(o).traceId = '9B2D4F6A8C0E1F3A5B7D9E1C3A5B7D9F'; },
    `${LR}\\.traceId: an id must be a string of lowercase hex digits`],
  ['uppercase hex span id in a span', SPAN_LINE, (o) => { span(o).spanId = '1A2B3C4D5E6F7A8B'; },
    `${SP}\\.spanId: an id must be a string of lowercase hex digits`],
  ['odd number of hex digits', LOG_LINE, (o) => { logRecord(o).spanId = '1a2b3c4d5e6f7a8'; },
    `${LR}\\.spanId: an id must be a string of lowercase hex digits`],
  ['base64 where hex belongs', LOG_LINE, (o) => { logRecord(o).traceId = 'my1PaowOHzpbfZ4cOlt9nw=='; },
    `${LR}\\.traceId: an id must be a string of lowercase hex digits`],
  ['trace id of 15 bytes', LOG_LINE, (o) => { logRecord(o).traceId = '9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d'; },
    `${LR}\\.traceId: an id of 15 bytes, where 16 or none are required`],
  ['span id of 9 bytes', SPAN_LINE, (o) => { span(o).spanId = '1a2b3c4d5e6f7a8b9c'; },
    `${SP}\\.spanId: an id of 9 bytes, where 8 are required`],
  ['parent span id of 16 bytes', SPAN_LINE, (o) => { span(o).parentSpanId = '9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f'; },
    `${SP}\\.parentSpanId: an id of 16 bytes, where 8 or none are required`],
  ['a span without a trace id', SPAN_LINE, (o) => { span(o).traceId = ''; },
    `${SP}\\.traceId: an id of 0 bytes, where 16 are required`],
  ['numeric timeUnixNano', LOG_LINE, (o) => { logRecord(o).timeUnixNano = 1767225600123456; },
    `${LR}\\.timeUnixNano: a 64-bit integer must be a decimal string`],
  ['numeric span end time', SPAN_LINE, (o) => { span(o).endTimeUnixNano = 1767225600123456; },
    `${SP}\\.endTimeUnixNano: a 64-bit integer must be a decimal string`],
  ['numeric intValue', LOG_LINE, (o) => { logRecord(o).attributes[9].value.intValue = 443; },
    `${LR}\\.attributes\\[9\\]\\.value\\.intValue: a 64-bit integer must be a decimal string`],
  ['intValue with a leading zero', LOG_LINE, (o) => { logRecord(o).attributes[9].value.intValue = '0443'; },
    'intValue: a 64-bit integer must be a decimal string'],
  ['intValue in exponent form', LOG_LINE, (o) => { logRecord(o).attributes[9].value.intValue = '4.43e2'; },
    'intValue: a 64-bit integer must be a decimal string'],
  ['intValue past int64', LOG_LINE, (o) => { logRecord(o).attributes[9].value.intValue = '9223372036854775808'; },
    'intValue: 9223372036854775808 is out of range for int64'],
  ['negative timeUnixNano', LOG_LINE, (o) => { logRecord(o).timeUnixNano = '-1'; },
    `${LR}\\.timeUnixNano: a 64-bit integer must be a decimal string without sign`],
  ['timeUnixNano past 2^64-1', LOG_LINE, (o) => { logRecord(o).timeUnixNano = '18446744073709551616'; },
    `${LR}\\.timeUnixNano: 18446744073709551616 is out of range for fixed64`],
  ['unknown field in a log record', LOG_LINE, (o) => { logRecord(o).severity = 13; },
    `${LR}: unknown field "severity" in LogRecord`],
  ['snake_case name of a known field', LOG_LINE, (o) => { const r = logRecord(o); r.trace_id = r.traceId; delete r.traceId; },
    `${LR}: unknown field "trace_id" in LogRecord`],
  ['unknown field in the resource', LOG_LINE, (o) => { o.resourceLogs[0].resource.labels = []; },
    '\\$\\.resourceLogs\\[0\\]\\.resource: unknown field "labels" in Resource'],
  ['unknown field at the top', SPAN_LINE, (o) => { o.partialSuccess = {}; },
    '\\$: unknown field "partialSuccess" in ExportTraceServiceRequest'],
  ['unknown field in a span', SPAN_LINE, (o) => { span(o).parentId = ''; },
    `${SP}: unknown field "parentId" in Span`],
  ['severityText as a number', LOG_LINE, (o) => { logRecord(o).severityText = 13; },
    'ExportLogsServiceRequest\\.verify \\(official types\\): resourceLogs\\.scopeLogs\\.logRecords\\.severityText: string expected'],
  ['flags as a string', LOG_LINE, (o) => { logRecord(o).flags = '3'; },
    'logRecords\\.flags: integer expected'],
  ['span kind as a fraction', SPAN_LINE, (o) => { span(o).kind = 1.5; },
    'spans\\.kind: enum value expected'],
  ['attributes not a list', LOG_LINE, (o) => { logRecord(o).attributes = {}; },
    'logRecords\\.attributes: array expected'],
  ['boolValue as a string', LOG_LINE, (o) => { logRecord(o).attributes[0].value = { boolValue: 'true' }; },
    'attributes\\.value\\.boolValue: boolean expected'],
  ['severityNumber past the enum', LOG_LINE, (o) => { logRecord(o).severityNumber = 25; },
    'logRecords\\.severityNumber: enum value expected'],
  ['severityNumber by name', LOG_LINE, (o) => { logRecord(o).severityNumber = 'SEVERITY_NUMBER_WARN'; },
    'logRecords\\.severityNumber: enum value expected'],
  ['span kind past the enum', SPAN_LINE, (o) => { span(o).kind = 6; },
    'spans\\.kind: enum value expected'],
  ['status code past the enum', SPAN_LINE, (o) => { span(o).status = { code: 3, message: '' }; },
    'spans\\.status\\.code: enum value expected'],
  ['two AnyValue members', LOG_LINE, (o) => { logRecord(o).attributes[0].value = { stringValue: 'a', intValue: '1' }; },
    'attributes\\.value\\.value: multiple values'],
  ['null for a string', LOG_LINE, (o) => { logRecord(o).severityText = null; },
    `${LR}\\.severityText: null, which OTLP/JSON as Box writes it gives only to message fields`],
  ['droppedAttributesCount below zero', LOG_LINE, (o) => { logRecord(o).droppedAttributesCount = -1; },
    `${LR}\\.droppedAttributesCount: -1 is out of range for a 32-bit unsigned integer`],
  ['span flags past 32 bits', SPAN_LINE, (o) => { span(o).flags = 2 ** 32; },
    `${SP}\\.flags: 4294967296 is out of range for a 32-bit unsigned integer`],
  ['bytesValue not base64', LOG_LINE, (o) => { logRecord(o).attributes[0].value = { bytesValue: 'AP8' }; },
    'bytesValue: bytesValue must be base64'],
  ['logs and spans in one line', LOG_LINE, (o) => { o.resourceSpans = []; },
    'exactly one of resourceLogs or resourceSpans expected, got resourceLogs, resourceSpans'],
  ['a metrics request', LOG_LINE, (o) => { o.resourceMetrics = o.resourceLogs; delete o.resourceLogs; },
    'exactly one of resourceLogs or resourceSpans expected, got resourceMetrics'],
];

for (const [name, line, edit, want] of BROKEN) {
  test(`refused: ${name}`, () => {
    const bad = edited(line, edit);
    assert.throws(() => decodeJsonLine(bad), { name: 'OtlpError', message: new RegExp(want) });
  });
}

test('refused: not JSON, two lines in one, bytes that are not UTF-8', () => {
  assert.throws(() => decodeJsonLine(LOG_LINE.slice(0, -1)), /records line: not JSON/);
  assert.throws(() => decodeJsonLine(`${LOG_LINE}\n${LOG_LINE}`), /a line break inside one line/);
  const bytes = Buffer.from(edited(LOG_LINE, (o) => { logRecord(o).severityText = 'XX'; }));
  const at = bytes.indexOf('XX');
  bytes[at] = 0xc3; // a lead byte followed by "X": not UTF-8
  assert.throws(() => decodeJsonLine(bytes), /records line: not UTF-8/);
  bytes[at] = 0x58;
  assert.equal(records(decodeJsonLine(bytes))[0].severityText, 'XX');
});

test('decodeJsonFile reads every line and names the line it refuses; a cut last line is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'otlp-selftest-'));
  try {
    assert.equal(decodeJsonFile(EXAMPLE).length, 2);
    const f = join(dir, 'records.jsonl');
    writeFileSync(f, `${LOG_LINE}\n${SPAN_LINE}`);
    assert.throws(() => decodeJsonFile(f), /records\.jsonl: the last line does not end with a newline/);
    writeFileSync(f, `${LOG_LINE}\n${SPAN_LINE.replace('"kind":1', '"kind":9')}\n`);
    assert.throws(() => decodeJsonFile(f), /records\.jsonl:2: .*kind: enum value expected/);
    writeFileSync(f, '');
    assert.deepEqual(decodeJsonFile(f), []);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('records() refuses an attribute key given twice', () => {
  const line = edited(LOG_LINE, (o) => { logRecord(o).attributes.push({ key: 'server.port', value: { intValue: '80' } }); });
  const req = decodeJsonLine(line);
  assert.throws(() => records(req), /the attribute "server\.port" appears twice/);
});

// The example lines built directly with the official types (Buffer ids, Long times): nothing
// from otlp.mjs's JSON mapping is involved.
function anyValue(v) {
  if ('intValue' in v) return { intValue: Long.fromString(v.intValue) };
  return { stringValue: v.stringValue };
}
const kvs = (list) => list.map((a) => ({ key: a.key, value: anyValue(a.value) }));
const id = (hex) => Buffer.from(hex, 'hex');
const u64 = (s) => Long.fromString(s, true);

function officialLogs() {
  const j = JSON.parse(LOG_LINE).resourceLogs[0];
  const r = j.scopeLogs[0].logRecords[0];
  return T.ExportLogsServiceRequest.encode(T.ExportLogsServiceRequest.fromObject({
    resourceLogs: [{
      resource: { attributes: kvs(j.resource.attributes) },
      scopeLogs: [{
        scope: { name: 'strands-box.policy' },
        logRecords: [{
          timeUnixNano: u64(r.timeUnixNano), observedTimeUnixNano: u64(r.observedTimeUnixNano),
          severityNumber: 13, severityText: 'deny', attributes: kvs(r.attributes), flags: 3,
          traceId: id(r.traceId), spanId: id(r.spanId), eventName: 'strands.box.policy.decision',
        }],
      }],
    }],
  })).finish();
}

function officialSpans() {
  const j = JSON.parse(SPAN_LINE).resourceSpans[0];
  const s = j.scopeSpans[0].spans[0];
  return T.ExportTraceServiceRequest.encode(T.ExportTraceServiceRequest.fromObject({
    resourceSpans: [{
      resource: { attributes: kvs(j.resource.attributes) },
      scopeSpans: [{
        scope: { name: 'strands-box.policy' },
        spans: [{
          traceId: id(s.traceId), spanId: id(s.spanId), flags: 3, name: 'policy net:connect', kind: 1,
          startTimeUnixNano: u64(s.startTimeUnixNano), endTimeUnixNano: u64(s.endTimeUnixNano),
          attributes: kvs(s.attributes),
        }],
      }],
    }],
  })).finish();
}

function post(port, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length, ...headers },
    }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('protobuf from the official types, POSTed to the collector, equals the JSON lines decoded', async () => {
  const c = await collector();
  try {
    const a = await post(c.port, '/v1/logs', officialLogs(), { authorization: 'Bearer t0ken' });
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/x-protobuf');
    assert.equal(a.body.length, 0);
    assert.deepEqual(response('logs', a.body), {});
    const b = await post(c.port, '/v1/traces', gzipSync(officialSpans()), { 'content-encoding': 'gzip' });
    assert.equal(b.status, 200);
    assert.deepEqual(response('traces', b.body), {});
    assert.deepEqual(c.errors, []);
    assert.equal(c.logs.length, 1);
    assert.equal(c.traces.length, 1);
    assert.deepEqual(c.logs[0], decodeJsonLine(LOG_LINE));
    assert.deepEqual(c.traces[0], decodeJsonLine(SPAN_LINE));
    assert.equal(c.headers[0].authorization, 'Bearer t0ken');
    assert.deepEqual(c.requests.map((r) => [r.path, r.status]), [['/v1/logs', 200], ['/v1/traces', 200]]);
  } finally {
    await c.close();
  }
  // encodeProtobuf (the JSON mapping, then the official encoder) gives the same body back.
  assert.deepEqual(decodeProtobuf('logs', encodeProtobuf('logs', JSON.parse(LOG_LINE))), decodeJsonLine(LOG_LINE));
});

function response(kind, body) {
  const R = kind === 'logs' ? T.ExportLogsServiceResponse : T.ExportTraceServiceResponse;
  return R.toObject(R.decode(body));
}

// A protobuf body holding one log record: the record's own bytes (from the official encoder,
// plus whatever a test appends), wrapped by hand in ScopeLogs.log_records (2),
// ResourceLogs.scope_logs (2) and ExportLogsServiceRequest.resource_logs (1).
function logsBody(record, extra = new Uint8Array(0)) {
  const bytes = Buffer.concat([T.LogRecord.encode(T.LogRecord.fromObject(record)).finish(), extra]);
  const scope = Writer.create().uint32((2 << 3) | 2).bytes(bytes).finish();
  const rl = Writer.create().uint32((2 << 3) | 2).bytes(scope).finish();
  return Writer.create().uint32((1 << 3) | 2).bytes(rl).finish();
}
const GOOD = { severityNumber: 9, traceId: id('9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f'), spanId: id('1a2b3c4d5e6f7a8b') };

test('protobuf: a well-formed hand-wrapped record decodes (the control for the refusals below)', () => {
  const extra = Writer.create().uint32((3 << 3) | 2).bytes(Buffer.from('é')).finish();
  const [r] = records(decodeProtobuf('logs', logsBody(GOOD, extra)));
  assert.equal(r.severityNumber, 9);
  assert.equal(r.severityText, 'é');
  assert.equal(r.traceId, '9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d9f');
});

const BROKEN_PB = [
  ['a field the types do not define', logsBody(GOOD, Writer.create().uint32((99 << 3) | 0).uint32(1).finish()),
    'ExportLogsServiceRequest \\(protobuf\\): a field the official types do not define \\(wire type 0\\)'],
  ['a string that is not UTF-8', logsBody(GOOD, Writer.create().uint32((3 << 3) | 2).bytes(Buffer.from([0xc3])).finish()),
    'ExportLogsServiceRequest \\(protobuf\\): a string field that is not UTF-8'],
  ['severity number past the enum', logsBody({ ...GOOD, severityNumber: 99 }),
    'verify \\(official types\\): resourceLogs\\.scopeLogs\\.logRecords\\.severityNumber: enum value expected'],
  ['a trace id of 15 bytes', logsBody({ ...GOOD, traceId: id('9b2d4f6a8c0e1f3a5b7d9e1c3a5b7d') }),
    '\\$\\.resourceLogs\\[0\\]\\.scopeLogs\\[0\\]\\.logRecords\\[0\\]\\.traceId: an id of 15 bytes'],
  ['a cut body', logsBody(GOOD).subarray(0, 20),
    'ExportLogsServiceRequest \\(protobuf\\): index out of range'],
];

for (const [name, body, want] of BROKEN_PB) {
  test(`protobuf refused: ${name}`, () => {
    assert.throws(() => decodeProtobuf('logs', body), { name: 'OtlpError', message: new RegExp(want) });
  });
}

test('protobuf refused: a span without ids', () => {
  const body = T.ExportTraceServiceRequest.encode(T.ExportTraceServiceRequest.fromObject({
    resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'policy x', kind: 1 }] }] }],
  })).finish();
  assert.throws(() => decodeProtobuf('traces', body), /\.spans\[0\]\.traceId: an id of 0 bytes, where 16 are required/);
});

test('the collector answers a bad body 400, another path 404, JSON 415, and lists each', async () => {
  const c = await collector();
  try {
    assert.equal((await post(c.port, '/v1/logs', logsBody({ ...GOOD, severityNumber: 99 }))).status, 400);
    assert.equal((await post(c.port, '/v1/profiles', logsBody(GOOD))).status, 404);
    assert.equal((await post(c.port, '/v1/logs', Buffer.from(LOG_LINE), { 'content-type': 'application/json' })).status, 415);
    assert.equal(c.logs.length, 0);
    assert.equal(c.errors.length, 3);
    assert.match(c.errors[0], /POST \/v1\/logs: .*severityNumber: enum value expected/);
    assert.match(c.errors[1], /POST \/v1\/profiles: not an OTLP\/HTTP path/);
    assert.match(c.errors[2], /content-type "application\/json", where application\/x-protobuf is expected/);
  } finally {
    await c.close();
  }
});

test('a refusing collector answers 503 and keeps nothing as accepted', async () => {
  const c = await collector({ refuse: true });
  try {
    const a = await post(c.port, '/v1/logs', officialLogs());
    assert.equal(a.status, 503);
    assert.equal(c.logs.length, 0);
    assert.equal(c.requests.length, 1);
    assert.equal(c.requests[0].status, 503);
    assert.deepEqual(c.requests[0].body, decodeJsonLine(LOG_LINE));
  } finally {
    await c.close();
  }
});

test('a hanging collector reads the request and never answers; close() ends the connection', async () => {
  const c = await collector({ hang: true });
  let answered = null;
  const sent = post(c.port, '/v1/traces', officialSpans()).then((r) => { answered = r; }, (e) => e);
  try {
    await c.wait((x) => x.requests.length === 1);
    assert.equal(c.requests[0].status, null);
    assert.deepEqual(c.requests[0].body, decodeJsonLine(SPAN_LINE));
    assert.equal(c.traces.length, 0);
  } finally {
    await c.close();
  }
  const err = await sent;
  assert.equal(answered, null);
  assert.ok(err instanceof Error, 'the client saw its connection end without an answer');
  assert.match(err.code || err.message, /ECONNRESET|socket hang up/);
});
