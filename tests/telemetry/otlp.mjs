// Reading what cairn writes and sends as OpenTelemetry, with the official OTLP message types:
// the records file (OTLP/JSON, one ExportLogsServiceRequest or ExportTraceServiceRequest a
// line, as Box writes it) and the OTLP/HTTP protobuf bodies POSTed to /v1/logs and /v1/traces.
//
// The types are the protobufjs static module that opentelemetry-js generates from
// opentelemetry-proto and ships in @opentelemetry/otlp-transformer (build/src/generated/
// root.js; 0.214.0 is the last release whose generated root holds logs and traces: later ones
// serialize those by hand and drop protobufjs). No OpenTelemetry JS package decodes an OTLP/JSON
// *request* (otlp-transformer serializes requests and decodes responses only), so
// decodeJsonLine maps the OTLP/JSON specifics onto the generated types itself:
//
//   checked by this file, because the package does not:
//     - unknown keys at every level (verify and fromObject ignore them; OTLP/JSON receivers are
//       told to ignore them too, so this is stricter than a collector on purpose), including the
//       snake_case proto names that proto3 JSON parsers also accept;
//     - null only for message fields (Box writes "body":null, "status":null); verify treats a
//       null scalar as absent;
//     - traceId/spanId/parentSpanId as lowercase hex (verify takes any string as base64, and
//       OTLP/JSON receivers accept either case);
//     - the byte length of every id: 16/8, or empty where OTLP allows no id (a log record's
//       ids, a span's parentSpanId); verify checks no length. Applied to both decoders;
//     - 64-bit integers as decimal strings without sign (fixed64) or leading zeros, in range
//       (verify takes a JSON number, and would reject a string, which Long then parses leniently);
//     - uint32/fixed32 in 0..2^32-1 (verify checks only that it is an integer; fromObject
//       wraps with >>> 0);
//     - bytesValue as canonical base64;
//     - in protobuf: fields the types do not know (decode skips them silently) and string
//       fields that are not UTF-8 (decode replaces bad bytes with U+FFFD).
//   checked by the package (Type.verify, run on the mapped object and on every decoded body):
//     - the type of every known field (string, bool, number, integer, array, object, bytes);
//     - enums (severityNumber, span kind, status code) are integers the proto defines;
//     - at most one member of AnyValue's oneof is set;
//     - and decode throws on a truncated or malformed protobuf body.
//   checked by nobody here: duplicate keys in one JSON object (JSON.parse keeps the last);
//     duplicate attribute keys are caught only by records().
//
// Both decoders return the same canonical plain object: the request in OTLP/JSON's shape
// (camelCase keys, hex ids, 64-bit integers as decimal strings, enums as numbers, bytesValue as
// base64) with every default filled in (schemaUrl "", droppedAttributesCount 0, absent messages
// null, absent lists []), so a line written with or without defaults and the protobuf body of the
// same request compare equal with assert.deepStrictEqual.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const protobuf = require('protobufjs/minimal');
const Long = protobuf.util.Long;

const P = root.opentelemetry.proto;
const T = {
  ExportLogsServiceRequest: P.collector.logs.v1.ExportLogsServiceRequest,
  ExportTraceServiceRequest: P.collector.trace.v1.ExportTraceServiceRequest,
  ExportLogsServiceResponse: P.collector.logs.v1.ExportLogsServiceResponse,
  ExportTraceServiceResponse: P.collector.trace.v1.ExportTraceServiceResponse,
  ResourceLogs: P.logs.v1.ResourceLogs,
  ScopeLogs: P.logs.v1.ScopeLogs,
  LogRecord: P.logs.v1.LogRecord,
  ResourceSpans: P.trace.v1.ResourceSpans,
  ScopeSpans: P.trace.v1.ScopeSpans,
  Span: P.trace.v1.Span,
  Event: P.trace.v1.Span.Event,
  Link: P.trace.v1.Span.Link,
  Status: P.trace.v1.Status,
  Resource: P.resource.v1.Resource,
  EntityRef: P.common.v1.EntityRef,
  InstrumentationScope: P.common.v1.InstrumentationScope,
  KeyValue: P.common.v1.KeyValue,
  AnyValue: P.common.v1.AnyValue,
  ArrayValue: P.common.v1.ArrayValue,
  KeyValueList: P.common.v1.KeyValueList,
  ExportMetricsServiceRequest: P.collector.metrics.v1.ExportMetricsServiceRequest,
  ResourceMetrics: P.metrics.v1.ResourceMetrics,
  ScopeMetrics: P.metrics.v1.ScopeMetrics,
  Metric: P.metrics.v1.Metric,
  Gauge: P.metrics.v1.Gauge,
  Sum: P.metrics.v1.Sum,
  Histogram: P.metrics.v1.Histogram,
  ExponentialHistogram: P.metrics.v1.ExponentialHistogram,
  Summary: P.metrics.v1.Summary,
  NumberDataPoint: P.metrics.v1.NumberDataPoint,
  HistogramDataPoint: P.metrics.v1.HistogramDataPoint,
  ExponentialHistogramDataPoint: P.metrics.v1.ExponentialHistogramDataPoint,
  Buckets: P.metrics.v1.ExponentialHistogramDataPoint.Buckets,
  SummaryDataPoint: P.metrics.v1.SummaryDataPoint,
  ValueAtQuantile: P.metrics.v1.SummaryDataPoint.ValueAtQuantile,
  Exemplar: P.metrics.v1.Exemplar,
};

// The OTLP/JSON mapping of each field: 'msg:X' one message, 'rep:X' a list of X, 'id16'/'id8'
// an id of that many bytes ('?': or empty), 'fixed64'/'int64' decimal strings (also uint64 and
// sfixed64, which OTLP/JSON writes alike), 'u32' uint32 or fixed32, 'b64' bytes, 'double' a
// number or "NaN"/"Infinity"/"-Infinity" (metrics' doubles); 'pass' (string, bool, double, enum,
// int32) is left to verify. 'rep:<scalar kind>' is a list of that scalar.
const SCHEMA = {
  ExportLogsServiceRequest: { resourceLogs: 'rep:ResourceLogs' },
  ExportTraceServiceRequest: { resourceSpans: 'rep:ResourceSpans' },
  ResourceLogs: { resource: 'msg:Resource', scopeLogs: 'rep:ScopeLogs', schemaUrl: 'pass' },
  ScopeLogs: { scope: 'msg:InstrumentationScope', logRecords: 'rep:LogRecord', schemaUrl: 'pass' },
  LogRecord: {
    timeUnixNano: 'fixed64', observedTimeUnixNano: 'fixed64', severityNumber: 'pass',
    severityText: 'pass', body: 'msg:AnyValue', attributes: 'rep:KeyValue',
    droppedAttributesCount: 'u32', flags: 'u32', traceId: 'id16?', spanId: 'id8?', eventName: 'pass',
  },
  ResourceSpans: { resource: 'msg:Resource', scopeSpans: 'rep:ScopeSpans', schemaUrl: 'pass' },
  ScopeSpans: { scope: 'msg:InstrumentationScope', spans: 'rep:Span', schemaUrl: 'pass' },
  Span: {
    traceId: 'id16', spanId: 'id8', traceState: 'pass', parentSpanId: 'id8?', flags: 'u32',
    name: 'pass', kind: 'pass', startTimeUnixNano: 'fixed64', endTimeUnixNano: 'fixed64',
    attributes: 'rep:KeyValue', droppedAttributesCount: 'u32', events: 'rep:Event',
    droppedEventsCount: 'u32', links: 'rep:Link', droppedLinksCount: 'u32', status: 'msg:Status',
  },
  Event: { timeUnixNano: 'fixed64', name: 'pass', attributes: 'rep:KeyValue', droppedAttributesCount: 'u32' },
  Link: {
    traceId: 'id16', spanId: 'id8', traceState: 'pass', attributes: 'rep:KeyValue',
    droppedAttributesCount: 'u32', flags: 'u32',
  },
  Status: { message: 'pass', code: 'pass' },
  Resource: { attributes: 'rep:KeyValue', droppedAttributesCount: 'u32', entityRefs: 'rep:EntityRef' },
  EntityRef: { schemaUrl: 'pass', type: 'pass', idKeys: 'rep:pass', descriptionKeys: 'rep:pass' },
  InstrumentationScope: { name: 'pass', version: 'pass', attributes: 'rep:KeyValue', droppedAttributesCount: 'u32' },
  KeyValue: { key: 'pass', value: 'msg:AnyValue' },
  AnyValue: {
    stringValue: 'pass', boolValue: 'pass', intValue: 'int64', doubleValue: 'pass',
    arrayValue: 'msg:ArrayValue', kvlistValue: 'msg:KeyValueList', bytesValue: 'b64',
  },
  ArrayValue: { values: 'rep:AnyValue' },
  KeyValueList: { values: 'rep:KeyValue' },
  ExportMetricsServiceRequest: { resourceMetrics: 'rep:ResourceMetrics' },
  ResourceMetrics: { resource: 'msg:Resource', scopeMetrics: 'rep:ScopeMetrics', schemaUrl: 'pass' },
  ScopeMetrics: { scope: 'msg:InstrumentationScope', metrics: 'rep:Metric', schemaUrl: 'pass' },
  Metric: {
    name: 'pass', description: 'pass', unit: 'pass', gauge: 'msg:Gauge', sum: 'msg:Sum',
    histogram: 'msg:Histogram', exponentialHistogram: 'msg:ExponentialHistogram', summary: 'msg:Summary',
    metadata: 'rep:KeyValue',
  },
  Gauge: { dataPoints: 'rep:NumberDataPoint' },
  Sum: { dataPoints: 'rep:NumberDataPoint', aggregationTemporality: 'pass', isMonotonic: 'pass' },
  Histogram: { dataPoints: 'rep:HistogramDataPoint', aggregationTemporality: 'pass' },
  ExponentialHistogram: { dataPoints: 'rep:ExponentialHistogramDataPoint', aggregationTemporality: 'pass' },
  Summary: { dataPoints: 'rep:SummaryDataPoint' },
  NumberDataPoint: {
    attributes: 'rep:KeyValue', startTimeUnixNano: 'fixed64', timeUnixNano: 'fixed64', asDouble: 'double',
    asInt: 'int64', exemplars: 'rep:Exemplar', flags: 'u32',
  },
  HistogramDataPoint: {
    attributes: 'rep:KeyValue', startTimeUnixNano: 'fixed64', timeUnixNano: 'fixed64', count: 'fixed64',
    sum: 'double', bucketCounts: 'rep:fixed64', explicitBounds: 'rep:double', exemplars: 'rep:Exemplar',
    flags: 'u32', min: 'double', max: 'double',
  },
  ExponentialHistogramDataPoint: {
    attributes: 'rep:KeyValue', startTimeUnixNano: 'fixed64', timeUnixNano: 'fixed64', count: 'fixed64',
    sum: 'double', scale: 'pass', zeroCount: 'fixed64', positive: 'msg:Buckets', negative: 'msg:Buckets',
    flags: 'u32', exemplars: 'rep:Exemplar', min: 'double', max: 'double', zeroThreshold: 'double',
  },
  Buckets: { offset: 'pass', bucketCounts: 'rep:fixed64' },
  SummaryDataPoint: {
    attributes: 'rep:KeyValue', startTimeUnixNano: 'fixed64', timeUnixNano: 'fixed64', count: 'fixed64',
    sum: 'double', quantileValues: 'rep:ValueAtQuantile', flags: 'u32',
  },
  ValueAtQuantile: { quantile: 'double', value: 'double' },
  Exemplar: {
    filteredAttributes: 'rep:KeyValue', timeUnixNano: 'fixed64', asDouble: 'double', asInt: 'int64',
    spanId: 'id8?', traceId: 'id16?',
  },
};

// The table must name exactly the fields of the generated types, so that a proto the package
// updates (a new field) fails here rather than passing as "unknown field" or going unchecked.
for (const [name, fields] of Object.entries(SCHEMA)) {
  const proto = T[name].prototype;
  const generated = Object.keys(proto).filter((k) => typeof proto[k] !== 'function').sort();
  const ours = Object.keys(fields).sort();
  if (generated.join() !== ours.join())
    throw new Error(`otlp.mjs: the table for ${name} has fields ${ours.join(',')} but the generated type has ${generated.join(',')}`);
}

const HEX = /^[0-9a-f]*$/;
const U64 = /^(0|[1-9][0-9]*)$/;
const I64 = /^(0|-?[1-9][0-9]*)$/;
const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
const show = (v) => (typeof v === 'string' ? JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v) : Array.isArray(v) ? 'an array' : v === null ? 'null' : `${typeof v} ${JSON.stringify(v)}`);

class OtlpError extends Error {
  constructor(message) { super(message); this.name = 'OtlpError'; }
}

// OTLP/JSON value of one scalar field → what the generated fromObject/verify take.
function jsonScalar(kind, v, path) {
  if (kind.startsWith('id')) {
    if (typeof v !== 'string' || !HEX.test(v) || v.length % 2)
      throw new OtlpError(`${path}: an id must be a string of lowercase hex digits, got ${show(v)}`);
    return Buffer.from(v, 'hex');
  }
  if (kind === 'fixed64' || kind === 'int64') {
    const unsigned = kind === 'fixed64';
    if (typeof v !== 'string' || !(unsigned ? U64 : I64).test(v))
      throw new OtlpError(`${path}: a 64-bit integer must be a decimal string${unsigned ? ' without sign' : ''} and without leading zeros, got ${show(v)}`);
    const n = BigInt(v);
    if (unsigned ? n > U64_MAX : n < I64_MIN || n > I64_MAX)
      throw new OtlpError(`${path}: ${v} is out of range for ${unsigned ? 'fixed64' : 'int64'}`);
    return Long.fromString(v, unsigned);
  }
  if (kind === 'u32') {
    if (typeof v === 'number' && Number.isInteger(v) && (v < 0 || v > 0xffffffff))
      throw new OtlpError(`${path}: ${v} is out of range for a 32-bit unsigned integer`);
    return v; // a non-integer or a string: verify says so
  }
  if (kind === 'double') {
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    return v; // a number, or anything else: verify says "number expected"
  }
  if (kind === 'b64') {
    if (typeof v !== 'string' || !B64.test(v))
      throw new OtlpError(`${path}: bytesValue must be base64, got ${show(v)}`);
    return Buffer.from(v, 'base64');
  }
  return v; // 'pass': verify checks the type
}

function jsonValue(kind, v, path) {
  if (kind.startsWith('msg:')) return isObject(v) ? jsonMessage(kind.slice(4), v, path) : v;
  if (kind.startsWith('rep:')) {
    if (!Array.isArray(v)) return v; // verify: "array expected"
    return v.map((e, i) => jsonValue(Object.hasOwn(SCHEMA, kind.slice(4)) ? `msg:${kind.slice(4)}` : kind.slice(4), e, `${path}[${i}]`));
  }
  return jsonScalar(kind, v, path);
}

function jsonMessage(type, obj, path) {
  const fields = SCHEMA[type];
  const out = {};
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(fields, key))
      throw new OtlpError(`${path}: unknown field ${JSON.stringify(key)} in ${type} (it has ${Object.keys(fields).join(', ')})`);
    const kind = fields[key];
    const v = obj[key];
    if (v === null) {
      if (!kind.startsWith('msg:'))
        throw new OtlpError(`${path}.${key}: null, which OTLP/JSON as Box writes it gives only to message fields`);
      continue;
    }
    out[key] = jsonValue(kind, v, `${path}.${key}`);
  }
  return out;
}

// A message the generated types produced (fromObject or decode) → the canonical object.
function canonical(type, msg, path) {
  const o = T[type].toObject(msg, { defaults: true, arrays: true, longs: String, bytes: String });
  return canonicalWalk(type, o, path);
}

function canonicalWalk(type, o, path) {
  const fields = SCHEMA[type];
  for (const [key, kind] of Object.entries(fields)) {
    if (!Object.hasOwn(o, key)) continue; // an unset oneof member
    const v = o[key];
    const p = `${path}.${key}`;
    if (v === null) continue;
    if (kind.startsWith('msg:')) canonicalWalk(kind.slice(4), v, p);
    else if (kind.startsWith('rep:') && Object.hasOwn(SCHEMA, kind.slice(4))) v.forEach((e, i) => canonicalWalk(kind.slice(4), e, `${p}[${i}]`));
    else if (kind.startsWith('id')) {
      const bytes = Buffer.from(v, 'base64');
      const want = kind.startsWith('id16') ? 16 : 8;
      if (bytes.length !== want && !(kind.endsWith('?') && bytes.length === 0))
        throw new OtlpError(`${p}: an id of ${bytes.length} bytes, where ${want}${kind.endsWith('?') ? ' or none' : ''} are required`);
      o[key] = bytes.toString('hex');
    } else if (kind === 'fixed64') {
      // fromObject marks a fixed64 Long signed (protobufjs's converter does so for every 64-bit
      // type but uint64); decode marks it unsigned. Either way the 64 bits are the same.
      o[key] = BigInt.asUintN(64, BigInt(v)).toString();
    } else if (kind === 'int64') o[key] = BigInt.asIntN(64, BigInt(v)).toString();
    else if (kind === 'rep:fixed64') o[key] = v.map((e) => BigInt.asUintN(64, BigInt(e)).toString());
  }
  return o;
}

function requestType(kind) {
  if (kind === 'logs') return 'ExportLogsServiceRequest';
  if (kind === 'traces') return 'ExportTraceServiceRequest';
  if (kind === 'metrics') return 'ExportMetricsServiceRequest';
  throw new OtlpError(`kind must be 'logs', 'traces' or 'metrics', got ${show(kind)}`);
}

function verified(type, obj) {
  const err = T[type].verify(obj);
  if (err) throw new OtlpError(`${type}.verify (official types): ${err}`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// One line of a records file (a string, or bytes to be checked as UTF-8; one trailing "\n" is
// allowed) → the canonical ExportLogsServiceRequest or ExportTraceServiceRequest; with
// { metrics: true }, an ExportMetricsServiceRequest too (the relayed agent metrics Box writes;
// a box's own records are never metrics, so by default such a line is refused).
export function decodeJsonLine(line, { metrics = false } = {}) {
  let text = line;
  if (line instanceof Uint8Array) {
    try { text = utf8.decode(line); } catch { throw new OtlpError('records line: not UTF-8'); }
  }
  if (typeof text !== 'string') throw new OtlpError(`records line: a string or bytes expected, got ${typeof line}`);
  if (text.endsWith('\n')) text = text.slice(0, -1);
  if (/[\r\n]/.test(text)) throw new OtlpError('records line: a line break inside one line (one line must be one export request)');
  let obj;
  try { obj = JSON.parse(text); } catch (e) { throw new OtlpError(`records line: not JSON: ${e.message}`); }
  if (!isObject(obj)) throw new OtlpError(`records line: an export request object expected, got ${show(obj)}`);
  const TOP = { resourceLogs: 'ExportLogsServiceRequest', resourceSpans: 'ExportTraceServiceRequest' };
  if (metrics) TOP.resourceMetrics = 'ExportMetricsServiceRequest';
  const kinds = Object.keys(obj).filter((k) => Object.hasOwn(TOP, k));
  if (kinds.length !== 1) {
    const keys = Object.keys(obj).join(', ') || 'no key';
    throw new OtlpError(`records line: exactly one of ${Object.keys(TOP).join(' or ')} expected, got ${keys}`);
  }
  const type = TOP[kinds[0]];
  const mapped = jsonMessage(type, obj, '$');
  verified(type, mapped);
  return canonical(type, T[type].fromObject(mapped), '$');
}

// A whole records file: every line decoded, the last one ended by "\n" (a cut last line is an
// error, not a record dropped quietly). Errors name the file and line. { metrics: true } allows
// the relayed agent metrics lines.
export function decodeJsonFile(path, { metrics = false } = {}) {
  const bytes = readFileSync(path);
  if (bytes.length === 0) return [];
  if (bytes[bytes.length - 1] !== 0x0a) throw new OtlpError(`${path}: the last line does not end with a newline`);
  const out = [];
  let start = 0;
  for (let n = 1; start < bytes.length; n++) {
    const end = bytes.indexOf(0x0a, start);
    try { out.push(decodeJsonLine(bytes.subarray(start, end), { metrics })); } catch (e) { throw new OtlpError(`${path}:${n}: ${e.message}`); }
    start = end + 1;
  }
  return out;
}

// One OTLP/HTTP protobuf body → the same canonical object decodeJsonLine gives.
export function decodeProtobuf(kind, buffer) {
  const type = requestType(kind);
  const reader = protobuf.Reader.create(buffer instanceof Uint8Array ? buffer : Buffer.from(buffer));
  // The generated decode calls skipType only for a field number its message does not define,
  // and reads every string through string(): both are hooked on this one reader.
  reader.skipType = function skipType(wireType) {
    throw new OtlpError(`${type} (protobuf): a field the official types do not define (wire type ${wireType}) before byte ${this.pos}`);
  };
  reader.string = function string() {
    const at = this.pos;
    try { return utf8.decode(this.bytes()); } catch { throw new OtlpError(`${type} (protobuf): a string field that is not UTF-8 at byte ${at}`); }
  };
  let msg;
  try { msg = T[type].decode(reader); } catch (e) {
    if (e instanceof OtlpError) throw e;
    throw new OtlpError(`${type} (protobuf): ${e.message}`);
  }
  verified(type, msg);
  return canonical(type, msg, '$');
}

// The plain object a test builds (hex ids, decimal-string 64-bit integers: the OTLP/JSON shape)
// → a protobuf body, through the same mapping and the official encoder.
export function encodeProtobuf(kind, obj) {
  const type = requestType(kind);
  const mapped = jsonMessage(type, obj, '$');
  verified(type, mapped);
  return T[type].encode(T[type].fromObject(mapped)).finish();
}

export function kindOf(req) {
  if (isObject(req) && Array.isArray(req.resourceLogs)) return 'logs';
  if (isObject(req) && Array.isArray(req.resourceSpans)) return 'traces';
  if (isObject(req) && Array.isArray(req.resourceMetrics)) return 'metrics';
  throw new OtlpError('not a decoded export request');
}

// AnyValue → a plain value: stringValue → string, intValue → decimal string (as OTLP/JSON has
// it), boolValue, doubleValue, bytesValue (base64 string), arrayValue → array, kvlistValue →
// object; an empty AnyValue → null.
export function unwrap(v, path = 'value') {
  if (v === null || v === undefined) return null;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return v.intValue;
  if ('boolValue' in v) return v.boolValue;
  if ('doubleValue' in v) return v.doubleValue;
  if ('bytesValue' in v) return v.bytesValue;
  if ('arrayValue' in v) return v.arrayValue.values.map((e, i) => unwrap(e, `${path}[${i}]`));
  if ('kvlistValue' in v) return attributes(v.kvlistValue.values, path).attrs;
  return null;
}

function attributes(list, path) {
  const attrs = {};
  const keys = [];
  for (const kv of list) {
    if (Object.hasOwn(attrs, kv.key)) throw new OtlpError(`${path}: the attribute ${JSON.stringify(kv.key)} appears twice`);
    attrs[kv.key] = unwrap(kv.value, `${path}.${kv.key}`);
    keys.push(kv.key);
  }
  return { attrs, keys };
}

// Decoded requests (one, or a list, of either kind) → one flat entry per log record and per span,
// in order. attrKeys keeps the attributes' order (Box's order is part of the format).
export function records(objs) {
  const out = [];
  for (const req of Array.isArray(objs) ? objs : [objs]) {
    if (kindOf(req) === 'metrics') throw new OtlpError('records(): a metrics request holds no log records or spans');
    const logs = kindOf(req) === 'logs';
    for (const rs of logs ? req.resourceLogs : req.resourceSpans) {
      const resource = rs.resource ? attributes(rs.resource.attributes, 'resource').attrs : {};
      for (const ss of logs ? rs.scopeLogs : rs.scopeSpans) {
        const scope = ss.scope ? ss.scope.name : '';
        const scopeVersion = ss.scope ? ss.scope.version : '';
        for (const r of logs ? ss.logRecords : ss.spans) {
          const { attrs, keys } = attributes(r.attributes, `${scope} ${logs ? r.eventName : r.name}`);
          const common = { resource, scope, scopeVersion, traceId: r.traceId, spanId: r.spanId, flags: r.flags, attrs, attrKeys: keys };
          if (logs) {
            out.push({
              signal: 'log', ...common, severityNumber: r.severityNumber, severityText: r.severityText,
              eventName: r.eventName, timeUnixNano: r.timeUnixNano, observedTimeUnixNano: r.observedTimeUnixNano,
              body: unwrap(r.body),
            });
          } else {
            out.push({
              signal: 'span', ...common, name: r.name, kind: r.kind, parentSpanId: r.parentSpanId,
              traceState: r.traceState, startTimeUnixNano: r.startTimeUnixNano, endTimeUnixNano: r.endTimeUnixNano,
              status: r.status, events: r.events, links: r.links,
            });
          }
        }
      }
    }
  }
  return out;
}

const RESPONSE = {
  logs: Buffer.from(T.ExportLogsServiceResponse.encode({}).finish()),
  traces: Buffer.from(T.ExportTraceServiceResponse.encode({}).finish()),
  metrics: Buffer.from(P.collector.metrics.v1.ExportMetricsServiceResponse.encode({}).finish()),
};
const BODY_LIMIT = 64 << 20;

// A loopback OTLP/HTTP collector. Each POST to /v1/logs, /v1/traces or /v1/metrics (the relayed
// agent metrics) with content-type
// application/x-protobuf (gzip content-encoding allowed) is decoded with decodeProtobuf;
// accepted requests land in logs/traces/metrics and get 200 with an empty Export*ServiceResponse.
// { hang: true } reads each request and never answers; { refuse: true } answers 503.
// Every request, answered or not, is in requests (with its headers, and its decoded body or the
// decode error); headers is the list of request headers in order; errors lists every request
// that was not a valid OTLP protobuf export (answered 400/404/405/413/415), so a test should
// assert it is empty. wait(pred) resolves once pred(collector) holds, checked at once and after
// each request; close() ends the server and any connection left open.
export function collector({ hang = false, refuse = false } = {}) {
  const c = { port: 0, logs: [], traces: [], metrics: [], headers: [], requests: [], errors: [] };
  const waiters = [];
  const settle = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].pred(c)) { waiters[i].resolve(c); waiters.splice(i, 1); }
    }
  };
  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (d) => { size += d.length; if (size > BODY_LIMIT) tooBig = true; else chunks.push(d); });
    req.on('end', () => {
      const path = req.url.split('?')[0];
      const entry = { method: req.method, path, headers: req.headers, bytes: size, status: null, body: null, error: null };
      c.requests.push(entry);
      c.headers.push(req.headers);
      const kind = { '/v1/logs': 'logs', '/v1/traces': 'traces', '/v1/metrics': 'metrics' }[path] || null;
      const answer = (status, type, body) => {
        if (hang) return; // read, recorded, never answered
        entry.status = status;
        res.writeHead(status, { 'content-type': type }).end(body);
      };
      const fail = (status, why) => {
        entry.error = `${req.method} ${path}: ${why}`;
        c.errors.push(entry.error);
        answer(status, 'text/plain', `${why}\n`);
      };
      const mediaType = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
      const encoding = (req.headers['content-encoding'] || 'identity').toLowerCase();
      if (!kind) fail(404, 'not an OTLP/HTTP path (/v1/logs, /v1/traces or /v1/metrics)');
      else if (req.method !== 'POST') fail(405, 'OTLP/HTTP takes POST');
      else if (tooBig) fail(413, `body over ${BODY_LIMIT} bytes`);
      else if (mediaType !== 'application/x-protobuf') fail(415, `content-type ${JSON.stringify(req.headers['content-type'] || '')}, where application/x-protobuf is expected`);
      else if (encoding !== 'identity' && encoding !== 'gzip') fail(415, `content-encoding ${encoding}`);
      else {
        try {
          let body = Buffer.concat(chunks);
          if (encoding === 'gzip') body = gunzipSync(body);
          entry.body = decodeProtobuf(kind, body);
        } catch (e) {
          fail(400, e.message);
        }
        if (entry.body) {
          if (refuse) answer(503, 'text/plain', 'refused by the test collector\n');
          else {
            if (!hang) c[kind].push(entry.body);
            answer(200, 'application/x-protobuf', RESPONSE[kind]);
          }
        }
      }
      settle();
    });
  });
  c.wait = (pred) => new Promise((resolve) => { if (pred(c)) resolve(c); else waiters.push({ pred, resolve }); });
  c.close = () => new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      c.port = server.address().port;
      c.url = `http://127.0.0.1:${c.port}`;
      resolve(c);
    });
  });
}

export { OtlpError, T as types, Long };
