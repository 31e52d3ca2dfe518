// history_match.mjs - every decision a box's history stored has its record in
// the box's records file, decoded with the official OpenTelemetry types, with
// the verdict, cause and rule the history implies; and the file holds no
// decision the history lacks (docs/records.md "Rebuilt from the history").
//
// Usage: node tests/telemetry/history_match.mjs CAIRN BOX_DIR...
// Ends with `N passed, N failed`.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { decodeJsonFile, records } from './otlp.mjs';

const [cairn, ...boxes] = process.argv.slice(2);
let pass = 0, fail = 0;
const ok = () => { pass++; };
const bad = (msg) => { fail++; console.log(`FAIL: ${msg}`); };

// the note: cairn1 run=… trace=… span=… [parent=…/…] [rid=…] [deny-only]
function parseNote(text) {
  if (typeof text !== 'string' || !text.startsWith('cairn1 ')) return null;
  const n = { denyOnly: false };
  for (const word of text.slice(7).split(' ')) {
    if (word === 'deny-only') n.denyOnly = true;
    else { const i = word.indexOf('='); n[word.slice(0, i)] = word.slice(i + 1); }
  }
  return n.span && n.trace && n.run ? n : null;
}

for (const box of boxes) {
  const name = box.split('/').pop();
  const file = `${box}/private/telemetry/records.jsonl`;
  if (!existsSync(`${box}/private/history`)) continue;
  let recs;
  try {
    recs = existsSync(file) ? records(decodeJsonFile(file)) : [];
    ok();
  } catch (e) {
    bad(`${name}: the records file does not decode with the official types: ${e.message}`);
    continue;
  }
  const logs = recs.filter((r) => r.signal === 'log' && r.scope === 'strands-box.policy');
  const spans = new Set(recs.filter((r) => r.signal === 'span' && r.scope === 'strands-box.policy')
    .map((r) => r.spanId));
  const bySpan = new Map(logs.map((r) => [r.spanId, r]));
  const events = execFileSync(cairn, ['history', 'show', box], { encoding: 'utf8', maxBuffer: 1 << 28 })
    .split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const expected = new Set();
  let decided = 0;
  for (const ev of events) {
    const action = ev.action.replace(/^.*::"(.*)"$/, '$1');
    const refusal = ev.kind === 'refusal';
    const d = refusal ? null : ev.decision;
    const note = parseNote(refusal ? ev.note : d && d.note);
    if (!note) continue;        // no record was asked for (no collector, or an outcome)
    decided++;
    const verdict = refusal ? 'deny' : d.verdict;
    if (!refusal && verdict === 'permit' && note.denyOnly) {
      if (bySpan.has(note.span)) bad(`${name}: seq ${ev.seq}: a permit before DNS has a record (Box records none)`);
      else ok();
      continue;
    }
    expected.add(note.span);
    const r = bySpan.get(note.span);
    if (!r) { bad(`${name}: seq ${ev.seq} (${action} ${verdict}): no record with span ${note.span}`); continue; }
    const cause = refusal ? ev.logged.cause : d.cause;
    const rule = refusal ? ev.logged.rule
      : (cause === 'permitted' || cause === 'forbidden') ? d.ids[0] : '<default-deny>';
    const want = {
      'strands.box.policy.action': action,
      'strands.box.policy.verdict': verdict,
      'strands.box.policy.cause': cause,
      'strands.box.policy.rule': rule,
    };
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, r.attrs[k]]));
    if (JSON.stringify(got) === JSON.stringify(want)) ok();
    else bad(`${name}: seq ${ev.seq}: the record says ${JSON.stringify(got)}, the history ${JSON.stringify(want)}`);
    if (r.traceId === note.trace) ok(); else bad(`${name}: seq ${ev.seq}: trace ${r.traceId}, the note ${note.trace}`);
    if (!refusal && (d.ids.length > 0) !== ('strands.box.policy.determining.ids' in r.attrs))
      bad(`${name}: seq ${ev.seq}: determining ids ${JSON.stringify(d.ids)} against the record's`);
    else ok();
    if (spans.has(note.span)) ok(); else bad(`${name}: seq ${ev.seq}: the record has no derived span`);
  }
  for (const r of logs) {
    if (expected.has(r.spanId)) ok();
    else bad(`${name}: a record (span ${r.spanId}, ${r.attrs['strands.box.policy.action']}) no decision in the history stands for`);
  }
  console.log(`  [${name}] ${decided} decisions in the history, ${logs.length} decision records`);
}
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail ? 1 : 0);
