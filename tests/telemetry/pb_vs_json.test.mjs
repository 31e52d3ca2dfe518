// The protobuf cairn sends to OTLP/HTTP targets says exactly what the JSON lines of its records
// file say: for each case of varied records that otlp-dump builds (every attribute kind, parents,
// faults, control records, truncation, UTF-8), the official OpenTelemetry JS types decode the
// protobuf body (decodeProtobuf) to the same request as the JSON line (decodeJsonLine).
//
//   node --test tests/telemetry/pb_vs_json.test.mjs      (OTLP_DUMP: the driver; default
//                                                         build/otlp-dump)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { decodeJsonLine, decodeProtobuf, records } from './otlp.mjs';

const top = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dump = process.env.OTLP_DUMP || join(top, 'build/otlp-dump');

const dir = mkdtempSync(join(tmpdir(), 'otlp-pb-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const names = execFileSync(dump, ['encode', dir], { encoding: 'utf8' }).trim().split('\n');

test('the driver wrote the cases', () => {
  assert.deepEqual(names, ['deny_net', 'permit_parent', 'fault', 'process', 'fs_truncated',
    'control', 'mixed', 'kinds', 'int_extremes']);
});

for (const name of names) {
  for (const kind of ['logs', 'traces']) {
    const base = join(dir, `${name}.${kind}`);
    test(`${name} ${kind}: protobuf decodes to the JSON line's request`, () => {
      assert.ok(existsSync(`${base}.json`) || kind === 'traces', `${base}.json is missing`);
      if (!existsSync(`${base}.json`)) {
        assert.ok(!existsSync(`${base}.pb`), 'a protobuf body without its JSON line');
        return;
      }
      const fromJson = decodeJsonLine(readFileSync(`${base}.json`));
      const fromPb = decodeProtobuf(kind, readFileSync(`${base}.pb`));
      assert.deepStrictEqual(fromPb, fromJson);
      assert.ok(records(fromPb).length > 0);
    });
  }
}

// The comparison must be able to fail: a case's protobuf against another case's line.
test('a different request does not compare equal', () => {
  const a = decodeProtobuf('logs', readFileSync(join(dir, 'deny_net.logs.pb')));
  const b = decodeJsonLine(readFileSync(join(dir, 'fault.logs.json')));
  assert.notDeepStrictEqual(a, b);
});

// What each case is there for, read back from the protobuf with the official types.
test('the cases hold what they are for', () => {
  const pb = (name, kind) => records(decodeProtobuf(kind, readFileSync(join(dir, `${name}.${kind}.pb`))));

  const [permit] = pb('permit_parent', 'logs');
  assert.equal(permit.attrKeys[0], 'strands.box.trace.parent_span_id');
  assert.equal(permit.attrs['strands.box.trace.parent_span_id'], '0123456789abcdef');
  assert.equal(permit.flags, 3);
  assert.equal(permit.eventName, 'strands.box.policy.decision');
  const [permitSpan] = pb('permit_parent', 'traces');
  assert.equal(permitSpan.flags, 0x303);
  assert.equal(permitSpan.parentSpanId, '0123456789abcdef');
  assert.ok(!permitSpan.attrKeys.includes('strands.box.trace.parent_span_id'));

  const [faultSpan] = pb('fault', 'traces');
  assert.deepEqual(faultSpan.status, { message: 'policy evaluation failed', code: 2 });

  const [proc] = pb('process', 'logs');
  const args = proc.attrs['process.command_args'];
  assert.equal(args[0], '/usr/bin/uname');
  assert.equal(args.length, 1 + 64 + 1);
  assert.match(args[65], /^16 more… \(truncated\)$/);
  assert.equal(proc.attrs['process.working_directory'], '/srv/ü');

  const [fs] = pb('fs_truncated', 'logs');
  assert.ok(Buffer.byteLength(fs.attrs['file.path']) <= 4096);
  assert.match(fs.attrs['file.path'], /… \(truncated\)$/);

  const control = pb('control', 'traces');
  assert.deepEqual(control.map((s) => s.name), ['control box_started', 'control policy_refused',
    'control box_stopped']);
  assert.equal(control[1].status.code, 2);

  const mixed = pb('mixed', 'logs');
  assert.deepEqual([...new Set(mixed.map((r) => r.scope))],
    ['strands-box.control', 'strands-box.policy', 'strands-box.containment']);
  assert.equal(mixed[0].attrs['strands.box.control.subject'], 'q"\\\n\u0001\t\u007f');
  assert.equal(pb('mixed', 'traces').length, 4);      // the containment record has no span

  const [kinds] = pb('kinds', 'logs');
  assert.deepEqual(kinds.attrs, {
    's.empty': '', 'i.zero': '0', 'i.neg': '-5', 'i.big': '4294967296', 'a.empty': [],
    'a.strs': ['', 'x', ''], '': 'an empty key',
  });
  const [ext] = pb('int_extremes', 'logs');
  assert.deepEqual(ext.attrs, { 'i.max': '9223372036854775807', 'i.min': '-9223372036854775808' });
  assert.equal(kinds.timeUnixNano, '0');
  assert.equal(kinds.resource['team'], 'a b,é');
});
