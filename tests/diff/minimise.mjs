// Minimiser: shrink a failing case while the runner keeps disagreeing with cedar-wasm.
//
// Greedy, first-improvement delta debugging over the structured case (schema model, entity
// JSON, policy ASTs, one request). Candidates are produced biggest-cut-first (whole policies,
// clauses, scope constraints, then expression subtrees, entities, schema parts, data
// values). Each candidate is checked by cedar-wasm first (it must still parse and the
// request must still be accepted; its expected answer is recomputed), then candidates are
// handed to the runner in batches — one runner start judges a whole batch, which matters
// for a runner that takes time to start — and the first one that still fails is taken.
// A candidate must also be strictly smaller (printed size), so the loop always terminates.

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { evaluateWhole, writeCase } from './casefile.mjs';
import { judge } from './runner.mjs';
import { jsonText } from './print.mjs';

const clone = (x) => structuredClone(x);

function setAt(root, path, val) {
  if (path.length === 0) return val;
  let o = root;
  for (let i = 0; i < path.length - 1; i++) o = o[path[i]];
  o[path[path.length - 1]] = val;
  return root;
}
const getAt = (root, path) => path.reduce((o, k) => o[k], root);

// Paths (relative to node) of a node's child expressions.
function childPaths(n) {
  switch (n.t) {
    case 'not': case 'neg': case 'has': case 'like': case 'get': case 'paren': return [['a']];
    case 'bin': return [['a'], ['b']];
    case 'if': return [['c'], ['a'], ['b']];
    case 'is': return n.in ? [['a'], ['in']] : [['a']];
    case 'method': return [['recv'], ...n.args.map((_, i) => ['args', i])];
    case 'call': return n.args.map((_, i) => ['args', i]);
    case 'set': return n.elems.map((_, i) => ['elems', i]);
    case 'rec': return n.fields.map((_, i) => ['fields', i, 1]);
    default: return [];
  }
}

// Replacements for the subtree at each position of an expression, outermost first.
function* exprAlternatives(root) {
  const queue = [[]];
  while (queue.length) {
    const path = queue.shift();
    const n = getAt(root, path);
    const alt = (v) => setAt(clone(root), path, v);
    for (const cp of childPaths(n)) yield alt(clone(getAt(n, cp)));
    if (!(n.t === 'lit' && typeof n.v === 'boolean')) { yield alt({ t: 'lit', v: true }); yield alt({ t: 'lit', v: false }); }
    if (n.t === 'lit' && typeof n.v === 'string' && n.v.length) {
      yield alt({ ...n, v: '' });
      const cps = [...n.v];
      if (cps.length > 1) yield alt({ ...n, v: cps.slice(0, cps.length >> 1).join('') });
    }
    if (n.t === 'lit' && typeof n.v === 'bigint' && n.v !== 0n) { yield alt({ ...n, v: 0n }); yield alt({ ...n, v: 1n }); }
    if (n.t === 'set') for (let i = 0; i < n.elems.length; i++) { const m = clone(n); m.elems.splice(i, 1); yield alt(m); }
    if (n.t === 'rec') for (let i = 0; i < n.fields.length; i++) { const m = clone(n); m.fields.splice(i, 1); yield alt(m); }
    if (n.t === 'has' && n.path.length > 1) yield alt({ ...clone(n), path: n.path.slice(0, -1) });
    if (n.t === 'is' && n.in) yield alt({ ...clone(n), in: null });
    if (n.t === 'like') for (let i = 0; i < n.pat.length; i++) { const m = clone(n); m.pat.splice(i, 1); yield alt(m); }
    if (n.t === 'euid' && n.id.length) yield alt({ ...n, id: '' });
    if (n.p) yield alt({ ...clone(n), p: false });
    for (const cp of childPaths(n)) queue.push([...path, ...cp]);
  }
}

// Smaller versions of a JSON data value (entity attribute, tag or context value).
function* jsonAlternatives(v) {
  const queue = [[]];
  while (queue.length) {
    const path = queue.shift();
    const x = getAt(v, path);
    const alt = (y) => setAt(clone(v), path, y);
    if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) { const m = clone(x); m.splice(i, 1); yield alt(m); }
      x.forEach((_, i) => queue.push([...path, i]));
    } else if (x && typeof x === 'object') {
      if (x.__entity) { yield alt(clone(x.__entity)); continue; }
      if (x.__extn) { if (!x.__extn.args) yield alt(x.__extn.arg); continue; }
      for (const k of Object.keys(x)) { const m = clone(x); delete m[k]; yield alt(m); }
      for (const k of Object.keys(x)) queue.push([...path, k]);
    } else if (typeof x === 'string' && x.length) yield alt('');
    else if (typeof x === 'number' && x !== 0) yield alt(0);
  }
}

const uidOf = (u) => (u.__entity ? u.__entity : u);

// Attributes of a schema record type and of the inline records nested in it (common types
// are shared, so they are left alone): where to splice in the type, and the matching path
// in the data.
function* nestedAttrs(t, typePath, dataPath) {
  if (!t || t.k !== 'Record') return;
  for (let k = 0; k < t.attrs.length; k++) {
    const a = t.attrs[k];
    yield { typePath, k, dataPath: [...dataPath, a.name] };
    yield* nestedAttrs(a.type, [...typePath, 'attrs', k, 'type'], [...dataPath, a.name]);
  }
}

// Deletes a nested key from data records, if the path is there.
function deleteAt(obj, path) {
  let o = obj;
  for (let i = 0; i < path.length - 1; i++) {
    o = o && typeof o === 'object' && !Array.isArray(o) ? o[path[i]] : undefined;
    if (o && (o.__entity || o.__extn)) return;
  }
  if (o && typeof o === 'object' && !Array.isArray(o)) delete o[path[path.length - 1]];
}
const fullName = (s, n) => (s.ns && !n.includes('::') ? `${s.ns}::${n}` : n);

function* candidates(c) {
  const withC = (f) => { const d = clone(c); f(d); return d; };
  const req = c.requests[0];
  const reqAction = uidOf(req.action).id;

  // Big cuts first: everything of a kind at once.
  if (c.entities.length > 1) yield withC((d) => { d.entities = []; });
  if (c.policies.length > 2) for (let i = 0; i < c.policies.length; i++) yield withC((d) => { d.policies = [d.policies[i]]; });
  if (Object.keys(req.context).length > 1) yield withC((d) => { d.requests[0].context = {}; });
  if (c.entities.length > 1) yield withC((d) => { for (const e of d.entities) { e.attrs = {}; e.parents = []; delete e.tags; } });

  // Policies and their parts.
  if (c.policies.length > 1) for (let i = 0; i < c.policies.length; i++) yield withC((d) => d.policies.splice(i, 1));
  for (let i = 0; i < c.policies.length; i++) {
    const p = c.policies[i];
    for (let j = 0; j < p.conds.length; j++) yield withC((d) => d.policies[i].conds.splice(j, 1));
    for (const v of ['principal', 'resource']) {
      if (p[v].op !== 'any') yield withC((d) => { d.policies[i][v] = { op: 'any' }; });
      if (p[v].op === 'isin') {
        yield withC((d) => { d.policies[i][v] = { op: 'is', ty: p[v].ty }; });
        yield withC((d) => { d.policies[i][v] = { op: 'in', e: p[v].e }; });
      }
    }
    if (p.action.op !== 'any') yield withC((d) => { d.policies[i].action = { op: 'any' }; });
    if (p.action.op === 'inlist') {
      for (let k = 0; k < p.action.list.length; k++) yield withC((d) => d.policies[i].action.list.splice(k, 1));
      yield withC((d) => { d.policies[i].action = { op: '==', e: p.action.list[0] }; });
    }
    if (p.annotations.length) yield withC((d) => { d.policies[i].annotations = []; });
    if (p.comment || p.multiline || p.scopeTc) yield withC((d) => Object.assign(d.policies[i], { comment: null, multiline: false, scopeTc: false }));
    if (p.effect === 'forbid') yield withC((d) => { d.policies[i].effect = 'permit'; });
  }
  for (let i = 0; i < c.policies.length; i++) {
    for (let j = 0; j < c.policies[i].conds.length; j++) {
      for (const body of exprAlternatives(c.policies[i].conds[j].body)) yield withC((d) => { d.policies[i].conds[j].body = body; });
    }
  }

  // Entities: halves, then one at a time.
  if (c.entities.length > 3) {
    const h = c.entities.length >> 1;
    yield withC((d) => d.entities.splice(0, h));
    yield withC((d) => d.entities.splice(h));
  }
  for (let i = 0; i < c.entities.length; i++) yield withC((d) => d.entities.splice(i, 1));
  for (let i = 0; i < c.entities.length; i++) {
    const e = c.entities[i];
    for (let j = 0; j < e.parents.length; j++) yield withC((d) => d.entities[i].parents.splice(j, 1));
    if (e.tags) {
      yield withC((d) => { delete d.entities[i].tags; });
      for (const k of Object.keys(e.tags)) yield withC((d) => { delete d.entities[i].tags[k]; });
    }
    for (const k of Object.keys(e.attrs)) yield withC((d) => { delete d.entities[i].attrs[k]; });
  }

  // The request's context.
  for (const k of Object.keys(req.context)) yield withC((d) => { delete d.requests[0].context[k]; });

  // Schema parts (with the data that depends on them).
  const s = c.schema;
  for (let i = 0; i < s.actions.length; i++) {
    const a = s.actions[i];
    if (a.name === reqAction) continue;
    yield withC((d) => {
      d.schema.actions.splice(i, 1);
      for (const b of d.schema.actions) b.parents = b.parents.filter((x) => x !== a.name);
      d.entities = d.entities.filter((e) => !(uidOf(e.uid).id === a.name && uidOf(e.uid).type.endsWith('Action')));
      for (const e of d.entities) if (uidOf(e.uid).type.endsWith('Action')) e.parents = e.parents.filter((x) => uidOf(x).id !== a.name);
    });
  }
  for (let i = 0; i < s.entityTypes.length; i++) {
    const t = s.entityTypes[i];
    const full = fullName(s, t.name);
    yield withC((d) => {
      d.schema.entityTypes.splice(i, 1);
      for (const o of d.schema.entityTypes) {
        if (o.twinOf === t.name) delete o.twinOf;
        o.parents = (o.parents || []).filter((x) => x !== t.name);
      }
      for (const a of d.schema.actions) {
        if (!a.appliesTo) continue;
        a.appliesTo.principals = a.appliesTo.principals.filter((x) => fullName(s, x) !== full);
        a.appliesTo.resources = a.appliesTo.resources.filter((x) => fullName(s, x) !== full);
      }
      d.entities = d.entities.filter((e) => uidOf(e.uid).type !== full);
      for (const e of d.entities) e.parents = e.parents.filter((x) => uidOf(x).type !== full);
    });
    const forType = (d, f) => { for (const e of d.entities) if (uidOf(e.uid).type === full) f(e); };
    const twins = (d) => d.schema.entityTypes.filter((o) => o.name === t.name || (t.twinOf ? o.name === t.twinOf || o.twinOf === t.twinOf : o.twinOf === t.name));
    if (t.tags) yield withC((d) => { for (const o of twins(d)) o.tags = null; for (const o of twins(d)) forType(d, (e) => delete e.tags); });
    if (t.parents && t.parents.length) yield withC((d) => { for (const o of twins(d)) o.parents = []; forType(d, (e) => { e.parents = []; }); });
    if (t.shape && !t.twinOf) {
      for (const { typePath, k, dataPath } of nestedAttrs(t.shape, [], [])) {
        yield withC((d) => {
          for (const o of twins(d)) getAt(o.shape, typePath).attrs.splice(k, 1);
          for (const o of twins(d)) for (const e of d.entities) if (uidOf(e.uid).type === fullName(s, o.name)) deleteAt(e.attrs, dataPath);
        });
      }
    }
  }
  for (let i = 0; i < s.actions.length; i++) {
    const ctx = s.actions[i].appliesTo && s.actions[i].appliesTo.context;
    for (const { typePath, k, dataPath } of nestedAttrs(ctx, [], [])) {
      yield withC((d) => {
        getAt(d.schema.actions[i].appliesTo.context, typePath).attrs.splice(k, 1);
        if (s.actions[i].name === reqAction) deleteAt(d.requests[0].context, dataPath);
      });
    }
  }
  for (let i = 0; i < s.commonTypes.length; i++) yield withC((d) => d.schema.commonTypes.splice(i, 1));
  if (s.nsAnn) yield withC((d) => { d.schema.nsAnn = null; });

  // Data values, then plain UID forms.
  for (let i = 0; i < c.entities.length; i++) {
    const e = c.entities[i];
    for (const k of Object.keys(e.attrs)) for (const v of jsonAlternatives(e.attrs[k])) yield withC((d) => { d.entities[i].attrs[k] = v; });
    for (const k of Object.keys(e.tags || {})) for (const v of jsonAlternatives(e.tags[k])) yield withC((d) => { d.entities[i].tags[k] = v; });
    if (e.uid.__entity) yield withC((d) => { d.entities[i].uid = clone(e.uid.__entity); });
  }
  for (const k of Object.keys(req.context)) for (const v of jsonAlternatives(req.context[k])) yield withC((d) => { d.requests[0].context[k] = v; });
  for (const f of ['principal', 'action', 'resource']) if (req[f].__entity) yield withC((d) => { d.requests[0][f] = clone(req[f].__entity); });
}

const sizeOf = (texts, c) => texts.policies.length + texts.schema.length + JSON.stringify(c.entities).length + JSON.stringify(c.requests).length;

// The class of a failure: a crash stays a crash, a rejected context stays a rejected
// context, a wrong answer stays a wrong answer (the first words of what the runner says
// after the request description) — otherwise shrinking drifts onto whatever other bug is
// easiest to reach.
function failKind(v, desc) {
  if (v.broken) return v.broken.replace(/\d+/g, 'N');
  if (v.fileLevel) return 'file-level FAIL';
  const line = v.lines[0] || '';
  const at = desc ? line.indexOf(`${desc}: `) : -1;
  const rest = at >= 0 ? line.slice(at + desc.length + 2) : line.replace(/^FAIL \S+ \[\d+\]:? ?/, '');
  // File names (which differ between candidates) and numbers do not make a class.
  return rest.replace(/\S+\.(?:json|cedar|cedarschema)(?::\d+)*:?/g, 'FILE').replace(/\d+/g, 'N')
    .split(/\s+/).slice(0, 3).join(' ');
}

// The minimiser starts from one request. Find one of the file's requests that fails on
// its own, with the same kind of failure as the file did: {c, verdict} or null.
export async function findStart(c, verdict, opts) {
  // The file-level verdict names no request; compare by the class of failure only.
  const kind = (v) => (v.broken ? v.broken.replace(/\d+/g, 'N') : v.fileLevel ? 'file-level FAIL' : 'request');
  const order = [...new Set([...[...(verdict.failIdx || [])].sort((a, b) => a - b), ...c.requests.keys()])].slice(0, 24);
  const batch = [];
  for (const i of order) {
    const one = { ...c, requests: [c.requests[i]] };
    const ev = evaluateWhole(one);
    if (ev) batch.push({ c: one, ev });
  }
  if (!batch.length) return null;
  rmSync(opts.dir, { recursive: true, force: true });
  mkdirSync(opts.dir, { recursive: true });
  const files = batch.map((b, i) => writeCase(opts.dir, `s${String(i).padStart(3, '0')}`, b.c, b.ev.texts, b.ev.answers, b.ev.validation.ok));
  const { verdicts } = await judge(opts.cmd, files, opts.dir, opts.timeoutMs);
  const want = kind(verdict);
  for (let i = 0; i < batch.length; i++) {
    const v = verdicts.get(files[i].name);
    if (opts.mode === 'validation' ? v.valLine : v.failing && kind(v) === want) return { c: batch[i].c, verdict: v };
  }
  return null;
}

// c0: a case with the single failing request; verdict0: the runner's verdict on it.
// opts: {cmd, dir, timeoutMs, budgetMs, batch, mode: 'request'|'validation', log}.
export async function minimise(c0, verdict0, opts) {
  const mode = opts.mode || 'request';
  const desc = c0.requests[0].description;
  const kind0 = failKind(verdict0, desc);
  const stillFails = (v) => (mode === 'validation' ? !!v.valLine : v.failing && failKind(v, desc) === kind0);

  let cur = c0;
  let curEval = evaluateWhole(cur);
  if (!curEval) throw new Error('minimise: cedar-wasm rejects the starting case');
  let curSize = sizeOf(curEval.texts, cur);
  let verdict = verdict0;
  const t0 = Date.now();
  let steps = 0, runs = 0, tried = 0, round = 0;
  const dir = opts.dir;

  const tryBatch = async (batch) => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const files = batch.map((b, i) => writeCase(dir, `m${round}-${String(i).padStart(3, '0')}`, b.c, b.ev.texts, b.ev.answers, b.ev.validation.ok));
    round++;
    const { verdicts, runs: r } = await judge(opts.cmd, files, dir, opts.timeoutMs, { firstOnly: true });
    runs += r;
    for (let i = 0; i < batch.length; i++) {
      const v = verdicts.get(files[i].name);
      if (v && stillFails(v)) return { ...batch[i], verdict: v };
    }
    return null;
  };

  let progress = true;
  while (progress && Date.now() - t0 < opts.budgetMs) {
    progress = false;
    let batch = [];
    for (const cand of candidates(cur)) {
      if (Date.now() - t0 > opts.budgetMs) break;
      const ev = evaluateWhole(cand);
      tried++;
      if (!ev) continue;
      const size = sizeOf(ev.texts, cand);
      if (size >= curSize) continue;
      batch.push({ c: cand, ev, size });
      if (batch.length >= opts.batch) {
        const hit = await tryBatch(batch);
        batch = [];
        if (hit) { cur = hit.c; curEval = hit.ev; curSize = hit.size; verdict = hit.verdict; steps++; progress = true; break; }
      }
    }
    if (!progress && batch.length) {
      const hit = await tryBatch(batch);
      if (hit) { cur = hit.c; curEval = hit.ev; curSize = hit.size; verdict = hit.verdict; steps++; progress = true; }
    }
    if (opts.log && progress) opts.log(`  minimise: step ${steps}, size ${curSize}`);
  }
  rmSync(dir, { recursive: true, force: true });
  return { c: cur, ev: curEval, verdict, steps, runs, tried, ms: Date.now() - t0, timedOut: Date.now() - t0 >= opts.budgetMs };
}

// Human-readable report of a (minimised) case, and a copy on disk in the tests/data/cedar
// layout (test.json + policies.cedar + entities.json + schema.cedarschema).
export function reportCase(m, saveDir) {
  mkdirSync(saveDir, { recursive: true });
  writeCase(saveDir, 'test', m.c, m.ev.texts, m.ev.answers, m.ev.validation.ok,
    { policies: 'policies.cedar', entities: 'entities.json', schema: 'schema.cedarschema', test: 'test.json' });
  const a = m.ev.answers[0];
  const r = m.c.requests[0];
  return [
    '--- schema.cedarschema ---', m.ev.texts.schema.trimEnd(),
    '--- policies.cedar ---', m.ev.texts.policies.trimEnd(),
    '--- entities.json ---', jsonText(m.c.entities).trimEnd(),
    '--- request ---', JSON.stringify({ principal: r.principal, action: r.action, resource: r.resource, context: r.context, ...(r.validateRequest === false ? { validateRequest: false } : {}) }),
    '--- cedar-wasm ---',
    `decision ${a.decision}, reason ${JSON.stringify(a.reason)}, errors ${JSON.stringify(a.errors)}` + (a.errorMessages.length ? `\n  ${a.errorMessages.join('\n  ')}` : ''),
    `shouldValidate ${m.ev.validation.ok}${m.ev.validation.messages.length ? ': ' + m.ev.validation.messages.join('; ') : ''}`,
    '--- runner ---', ...m.verdict.lines, ...(m.verdict.valLine ? [m.verdict.valLine] : []),
    `--- saved as ${saveDir}/test.json ---`,
  ].join('\n');
}
