// Coverage bookkeeping: what the generated cases actually contained, so that a weak spot in
// the generator shows up as a small number in `--stats` instead of going unnoticed.

import { WILDCARD, isIdent } from './print.mjs';
import { I64_MAX, I64_MIN } from './pools.mjs';

export class Stats {
  constructor() { this.c = new Map(); }
  add(k, n = 1) { this.c.set(k, (this.c.get(k) || 0) + n); }
  get(k) { return this.c.get(k) || 0; }
  merge(o) { for (const [k, v] of o.c) this.add(k, v); }
}

// Features of one policy (each counted once per policy).
export function policyFeatures(p) {
  const f = new Set();
  f.add(`effect ${p.effect}`);
  f.add(`scope principal ${p.principal.op}`);
  f.add(`scope action ${p.action.op}`);
  f.add(`scope resource ${p.resource.op}`);
  if (p.annotations.length) f.add('annotations');
  if (p.ws) f.add(`whitespace ${p.ws.style}`);
  if (p.comment) f.add('comment line');
  for (const c of p.conds) f.add(`clause ${c.kind}`);
  if (p.conds.length > 1) f.add('clauses >1');
  const strFeat = (s, esc) => {
    if (s.includes('\0')) f.add('string with NUL');
    if ([...s].some((ch) => ch.codePointAt(0) < 0x20 && ch !== '\0')) f.add('string with control char');
    if ([...s].some((ch) => ch.codePointAt(0) > 0x7f)) f.add('string non-ASCII');
    if (esc === 'u') f.add('string escapes \\u{..}');
    if (esc === 'x') f.add('string escapes \\x..');
  };
  const walk = (n) => {
    switch (n.t) {
      case 'lit':
        if (typeof n.v === 'bigint') {
          f.add('Long literal');
          if (n.v === I64_MAX || n.v === I64_MIN) f.add('i64 min/max literal');
          if (n.v < 0n) f.add('negative literal');
          if (n.lz) f.add('Long literal with leading zeros');
        } else if (typeof n.v === 'string') { f.add('String literal'); strFeat(n.v, n.esc); }
        else f.add('Bool literal');
        break;
      case 'var': f.add(`var ${n.n}`); break;
      case 'euid': f.add('entity literal'); strFeat(n.id, n.esc); break;
      case 'not': f.add('!'); if (n.a.t === 'not') f.add('!! chain'); walk(n.a); break;
      case 'neg': f.add('neg -'); if (n.a.t === 'neg' || (n.a.t === 'lit' && n.a.v < 0n)) f.add('-- chain'); walk(n.a); break;
      case 'bin': f.add(n.op === '-' ? 'binary -' : n.op); walk(n.a); walk(n.b); break;
      case 'if': f.add('if-then-else'); walk(n.c); walk(n.a); walk(n.b); break;
      case 'has':
        f.add(n.path.length > 1 ? 'has a.b.c' : 'has');
        if (n.path.length === 1 && (n.quoted || !isIdent(n.path[0]))) f.add('has "str"');
        walk(n.a); break;
      case 'like':
        f.add('like');
        if (n.pat.includes(WILDCARD)) f.add('like with *');
        if (n.pat.includes('*')) f.add('like with \\*');
        walk(n.a); break;
      case 'is': f.add(n.in ? 'is-in' : 'is'); walk(n.a); if (n.in) walk(n.in); break;
      case 'get': f.add(n.mode === 'dot' && isIdent(n.attr) ? '.attr' : '["attr"]'); walk(n.a); break;
      case 'method': f.add(`.${n.m}()`); walk(n.recv); n.args.forEach(walk); break;
      case 'call': f.add(`${n.fn}()`); n.args.forEach(walk); break;
      case 'set':
        f.add(n.elems.length ? 'set literal' : 'empty set literal');
        if (n.elems.some((v) => v.t === 'rec' || v.t === 'set')) f.add('nested set/record literal');
        n.elems.forEach(walk); break;
      case 'rec':
        f.add('record literal');
        if (n.fields.some(([, v]) => v.t === 'rec' || v.t === 'set')) f.add('nested set/record literal');
        n.fields.forEach(([, v]) => walk(v)); break;
      case 'paren': f.add('nested parens'); walk(n.a); break;
      default: break;
    }
    if (n.p) f.add('redundant parens');
  };
  for (const c of p.conds) walk(c.body);
  for (const s of [p.principal, p.action, p.resource]) {
    if (s.e) walk(s.e);
    if (s.list) s.list.forEach(walk);
  }
  return f;
}

// JSON-encoding features of entity/context data.
export function dataFeatures(v, f) {
  if (Array.isArray(v)) { v.forEach((x) => dataFeatures(x, f)); return; }
  if (v && typeof v === 'object') {
    if (v.__entity) { f.add('data: explicit __entity'); return; }
    if (v.__extn) { f.add(v.__extn.args ? 'data: __extn offset(args)' : 'data: explicit __extn'); return; }
    if (typeof v.fn === 'string' && 'arg' in v && Object.keys(v).length === 2) { f.add('data: implicit {fn,arg}'); return; }
    if (typeof v.type === 'string' && typeof v.id === 'string' && Object.keys(v).length === 2) { f.add('data: implicit {type,id}'); return; }
    f.add('data: record');
    for (const x of Object.values(v)) dataFeatures(x, f);
    return;
  }
  if (typeof v === 'number' && Math.abs(v) >= 2 ** 53) f.add('data: Long ±2^53');
}

export function schemaFeatures(s, f) {
  if (s.ns) f.add(`schema: namespace${s.ns.includes('::') ? ' (nested path)' : ''}`);
  if (s.commonTypes.length) f.add('schema: common types');
  const types = (t, out) => {
    out.add(`schema type ${t.k === 'Ext' ? t.name : t.k}`);
    if (t.k === 'Set') types(t.elem, out);
    if (t.k === 'Record') for (const a of t.attrs) { if (!a.req) out.add('schema: optional attribute'); types(a.type, out); }
  };
  for (const e of s.entityTypes) {
    if (e.enumIds) f.add('schema: enum entity type');
    if (e.tags) f.add('schema: tags');
    if (e.twinOf) f.add('schema: entity A, B declaration');
    if (e.parents && e.parents.includes(e.name)) f.add('schema: self-membership');
    if (e.shape) types(e.shape, f);
  }
  for (const a of s.actions) {
    if (a.parents.length) f.add('schema: action groups');
    if (a.appliesTo && a.appliesTo.context) types(a.appliesTo.context, f);
  }
}

// Depth of the longest parent chain in an entity file (missing parents count as one step).
export function hierarchyDepth(entities) {
  const uidOf = (u) => (u.__entity ? u.__entity : u);
  const k = (u) => { const x = uidOf(u); return `${x.type}\u0001${x.id}`; };
  const parents = new Map(entities.map((e) => [k(e.uid), e.parents.map(k)]));
  const memo = new Map();
  const depth = (key) => {
    if (memo.has(key)) return memo.get(key);
    memo.set(key, 0);
    let d = 0;
    for (const p of parents.get(key) || []) d = Math.max(d, 1 + depth(p));
    memo.set(key, d);
    return d;
  };
  let max = 0;
  for (const key of parents.keys()) max = Math.max(max, depth(key));
  return max;
}

export function formatStats(st, title = 'coverage') {
  const lines = [`--- ${title} ---`];
  const groups = new Map();
  for (const [k, v] of st.c) {
    const g = k.includes(':') ? k.slice(0, k.indexOf(':')) : 'other';
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push([k.slice(k.indexOf(':') + 1).trim() || k, v]);
  }
  for (const [g, items] of [...groups].sort()) {
    lines.push(`${g}:`);
    items.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    // Several per line keeps the report readable.
    let line = '  ';
    for (const [k, v] of items) {
      const cell = `${k}=${v}`;
      if (line.length + cell.length > 110) { lines.push(line.trimEnd()); line = '  '; }
      line += cell + '  ';
    }
    if (line.trim()) lines.push(line.trimEnd());
  }
  return lines.join('\n');
}
