// Random generator of Cedar integration-format test cases: a schema, an entity store, a
// policy set and a batch of requests over them. Expected answers are NOT computed here —
// the oracle (cedar-wasm) does that — so the generator only has to produce inputs that are
// interesting, not inputs whose answers it knows.
//
// Strategy: policies are generated type-directed against an assumed request environment
// (one action and its principal/resource types, as the schema allows), drawing attribute
// paths from the schema and literals from the same pools as the entity data, so that
// conditions are well-typed and true or false about equally often. Errors come from
// deliberate perturbations: ill-typed subexpressions, overflowing arithmetic, bad extension
// strings, missing entities/attributes/tags, unguarded optional attributes, and requests for
// another environment than the one a policy was written for.

import { Rng } from './rng.mjs';
import { WILDCARD, isIdent } from './print.mjs';
import * as P from './pools.mjs';

// ---------------------------------------------------------------------------------------
// AST constructors (shapes documented in print.mjs)

const lit = (v, esc = 'std') => ({ t: 'lit', v, esc });
const v_ = (n) => ({ t: 'var', n });
const euid = (ty, id, esc = 'std') => ({ t: 'euid', ty, id, esc });
const not = (a) => ({ t: 'not', a });
const neg = (a) => ({ t: 'neg', a });
const bin = (op, a, b) => ({ t: 'bin', op, a, b });
const ite = (c, a, b) => ({ t: 'if', c, a, b });
const get = (a, attr, mode = 'dot', esc = 'std') => ({ t: 'get', a, attr, mode, esc });
const method = (recv, m, args) => ({ t: 'method', recv, m, args });
const call = (fn, args) => ({ t: 'call', fn, args });

// Resolved types: {k:'Long'|'String'|'Bool'} {k:'Entity', name: full} {k:'Set', elem}
// {k:'Record', attrs:[{name, type, req}]} {k:'Ext', name}
const LONG = { k: 'Long' }, STRING = { k: 'String' }, BOOL = { k: 'Bool' };
const ENT = (name) => ({ k: 'Entity', name });
const SET = (elem) => ({ k: 'Set', elem });
const EXT = (name) => ({ k: 'Ext', name });

export function typeEq(a, b) {
  if (a.k !== b.k) return false;
  switch (a.k) {
    case 'Entity': return a.name === b.name;
    case 'Ext': return a.name === b.name;
    case 'Set': return typeEq(a.elem, b.elem);
    case 'Record':
      return a.attrs.length === b.attrs.length &&
        a.attrs.every((x) => b.attrs.some((y) => y.name === x.name && y.req === x.req && typeEq(x.type, y.type)));
    default: return true;
  }
}

const clone = (x) => structuredClone(x);
// Entity keys for maps: type names never contain \u0001, ids may contain anything.
const key = (type, id) => `${type}\u0001${id}`;
const unkey = (k) => { const i = k.indexOf('\u0001'); return [k.slice(0, i), k.slice(i + 1)]; };

// Per-node weights. Exposed so that a run can be tuned from one place.
export const TUNING = {
  illTyped: 0.02,          // chance that a subexpression is generated at a random other type
  badExtArg: 0.12,         // chance that an extension constructor gets an invalid string
  unvalidatedRequest: 0.05 // share of requests with validateRequest: false
};

// ---------------------------------------------------------------------------------------
// Schema

function genSchemaType(rng, ctx, depth) {
  const names = ctx.typeNames;
  const w = [
    [3, 'Long'], [3, 'String'], [2, 'Bool'], [2.5, 'Entity'], [2, 'Set'],
    [depth < 2 ? 1.2 : 0, 'Record'], [2.5, 'Ext'], [ctx.commons.length ? 0.8 : 0, 'Common'],
  ];
  const k = rng.pickW(w);
  switch (k) {
    case 'Long': case 'String': case 'Bool': return { k, cedar: rng.chance(0.05) };
    case 'Entity': return { k, name: rng.pick(names), qualified: rng.chance(0.2) };
    case 'Set': {
      // Sets of records/sets are legal but rarely useful; keep the element simple.
      const ek = rng.pickW([[3, 'Long'], [3, 'String'], [3, 'Entity'], [1.5, 'Ext'], [depth < 2 ? 0.7 : 0, 'Record'], [0.5, 'Bool']]);
      if (ek === 'Entity') return { k: 'Set', elem: { k: 'Entity', name: rng.pick(names) } };
      if (ek === 'Ext') return { k: 'Set', elem: { k: 'Ext', name: rng.pick(P.EXT_NAMES) } };
      if (ek === 'Record') return { k: 'Set', elem: genRecordType(rng, ctx, depth + 1, 2) };
      return { k: 'Set', elem: { k: ek } };
    }
    case 'Record': return genRecordType(rng, ctx, depth + 1, 3);
    case 'Ext': return { k, name: rng.pick(P.EXT_NAMES), cedar: rng.chance(0.05) };
    case 'Common': return { k, name: rng.pick(ctx.commons) };
  }
  throw new Error('unreachable');
}

function genRecordType(rng, ctx, depth, maxAttrs) {
  const n = rng.int(0, maxAttrs);
  const attrs = rng.sample(P.ATTRS, n).map((name) => ({
    name, type: genSchemaType(rng, ctx, depth), req: rng.chance(0.7),
    quote: rng.chance(0.15), ann: rng.chance(0.04) ? rng.pick(P.ANN_KEYS) : null,
  }));
  return { k: 'Record', attrs, tc: rng.chance(0.1) };
}

export function genSchema(rng) {
  const ns = rng.chance(0.45) ? rng.pick(P.NAMESPACES) : '';
  const typeNames = rng.sample(P.TYPE_NAMES, rng.int(2, 5));
  const enumNames = rng.chance(0.35) ? [rng.pick(P.ENUM_NAMES)] : [];
  const ctx = { typeNames: [...typeNames, ...enumNames], commons: [] };

  const commonTypes = [];
  for (const name of rng.sample(P.COMMON_NAMES, rng.chance(0.3) ? rng.int(1, 2) : 0)) {
    // Defined before being added to ctx.commons: no common type refers to another, so no cycles.
    commonTypes.push({ name, type: rng.chance(0.7) ? genRecordType(rng, ctx, 1, 3) : genSchemaType(rng, ctx, 1) });
  }
  ctx.commons = commonTypes.map((c) => c.name);

  const entityTypes = [];
  for (const name of typeNames) {
    const prev = entityTypes.filter((e) => !e.twinOf);
    if (prev.length && rng.chance(0.08)) {
      // `entity A, B ...` — shares the previous declaration.
      const base = prev[prev.length - 1];
      entityTypes.push({ ...structuredClone(base), name, twinOf: base.name });
      continue;
    }
    const parents = typeNames.filter((p) => (p === name ? rng.chance(0.45) : rng.chance(0.3)));
    if (enumNames.length && rng.chance(0.15)) parents.push(enumNames[0]);
    entityTypes.push({
      name, parents, qualifyParents: rng.chance(0.2),
      shape: rng.chance(0.8) ? genRecordType(rng, ctx, 0, 5) : null, eq: rng.chance(0.3),
      tags: rng.chance(0.3) ? genSchemaType(rng, ctx, 1) : null,
      ann: rng.chance(0.08) ? rng.pick(P.ANN_KEYS) : null, enumIds: null,
    });
  }
  for (const name of enumNames) {
    // Cedar keeps the list as written: the empty id and a repeated id both load
    // (`enum ["", ""]` validates), so both are generated.
    const enumIds = rng.sample(P.ENUM_IDS, rng.int(1, 4));
    if (rng.chance(0.2)) enumIds.splice(rng.int(0, enumIds.length), 0, '');
    if (rng.chance(0.2)) enumIds.splice(rng.int(0, enumIds.length), 0, rng.pick(enumIds));
    entityTypes.push({ name, parents: [], shape: null, tags: null, enumIds });
  }

  const actions = [];
  const groups = rng.sample(P.GROUP_ACTION_NAMES, rng.pickW([[3, 0], [3, 1], [1, 2]]));
  groups.forEach((g, i) => actions.push({ name: g, parents: i > 0 && rng.chance(0.5) ? [groups[0]] : [], appliesTo: null, quote: rng.chance(0.3) }));
  const nonEnum = typeNames;
  for (const name of rng.sample(P.ACTION_NAMES, rng.int(1, 3))) {
    const rel = (n) => (ns && rng.chance(0.2) ? `${ns}::${n}` : n);
    const principals = rng.sample(rng.chance(0.1) ? ctx.typeNames : nonEnum, rng.int(1, 2)).map(rel);
    const resources = rng.sample(ctx.typeNames, rng.int(1, 2)).map(rel);
    let context;
    const cr = rng.float();
    if (cr < 0.1) context = null; // omitted: the empty record
    else if (cr < 0.2 && commonTypes.some((c) => c.type.k === 'Record')) context = { k: 'Common', name: rng.pick(commonTypes.filter((c) => c.type.k === 'Record')).name };
    else context = genRecordType(rng, ctx, 0, 4);
    actions.push({
      name, quote: rng.chance(0.3), parents: groups.filter(() => rng.chance(0.6)),
      appliesTo: { principals, resources, context },
    });
  }
  return { ns, nsAnn: ns && rng.chance(0.1) ? rng.pick(P.ANN_KEYS) : null, commonTypes, entityTypes, actions };
}

// Resolve the schema model into the types the generator reasons with.
export function buildWorld(schema) {
  const ns = schema.ns;
  const full = (n) => (ns && !n.includes('::') ? `${ns}::${n}` : n);
  const commons = new Map(schema.commonTypes.map((c) => [c.name, c.type]));
  const resolve = (t) => {
    switch (t.k) {
      case 'Long': case 'String': case 'Bool': return { k: t.k };
      case 'Ext': return EXT(t.name);
      case 'Entity': return ENT(full(t.name));
      case 'Set': return SET(resolve(t.elem));
      case 'Record': return { k: 'Record', attrs: t.attrs.map((a) => ({ name: a.name, type: resolve(a.type), req: a.req })) };
      case 'Common': return resolve(commons.get(t.name));
    }
    throw new Error(`resolve ${t.k}`);
  };
  const types = new Map();
  for (const e of schema.entityTypes) {
    types.set(full(e.name), {
      full: full(e.name), parents: e.parents.map(full),
      shape: e.shape ? resolve(e.shape) : (e.enumIds ? null : { k: 'Record', attrs: [] }),
      tags: e.tags ? resolve(e.tags) : null, enumIds: e.enumIds,
    });
  }
  const actionType = full('Action');
  const actions = schema.actions.map((a) => ({
    uid: { type: actionType, id: a.name },
    parents: a.parents.map((p) => ({ type: actionType, id: p })),
    appliesTo: a.appliesTo && {
      principals: a.appliesTo.principals.map(full), resources: a.appliesTo.resources.map(full),
      ctx: a.appliesTo.context ? resolve(a.appliesTo.context) : { k: 'Record', attrs: [] },
    },
  }));
  return { ns, full, types, actionType, actions, applicable: actions.filter((a) => a.appliesTo), store: new Map(), anc: new Map() };
}

// ---------------------------------------------------------------------------------------
// Data values (entity attributes, tags, context). Extension and entity values are written in
// every JSON form Cedar accepts, so that the C loader's schema-based parsing is exercised.

function extString(rng, name, good = true) {
  return rng.pick(good ? P.EXT[name].good : P.EXT[name].bad);
}

function uidJson(rng, type, id) {
  return rng.chance(0.15) ? { __entity: { type, id } } : { type, id };
}

function pickEntityId(rng, world, type, missingChance = 0.15) {
  const t = world.types.get(type);
  if (t && t.enumIds) return rng.chance(0.97) ? rng.pick(t.enumIds) : rng.pick(P.ENUM_IDS);
  const ids = world.store.get(type) || [];
  if (ids.length && !rng.chance(missingChance)) return rng.pick(ids);
  return rng.pick(P.IDS);
}

export function genValue(rng, world, ty, depth = 0) {
  switch (ty.k) {
    case 'Long': return rng.pick(P.LONGS);
    case 'String': return rng.pick(P.STRINGS);
    case 'Bool': return rng.chance(0.5);
    case 'Entity': return uidJson(rng, ty.name, pickEntityId(rng, world, ty.name));
    case 'Set': {
      const n = rng.pickW([[1, 0], [3, 1], [3, 2], [2, 3]]);
      return Array.from({ length: n }, () => genValue(rng, world, ty.elem, depth + 1));
    }
    case 'Record': {
      const o = {};
      for (const a of ty.attrs) if (a.req || rng.chance(0.65)) o[a.name] = genValue(rng, world, a.type, depth + 1);
      return o;
    }
    case 'Ext': {
      const fn = P.EXT_CTOR[ty.name];
      const s = extString(rng, ty.name);
      const r = rng.float();
      if (ty.name === 'datetime' && r < 0.1) {
        // The form Cedar itself emits for datetimes: offset(datetime(epoch), duration(ms)).
        const ms = rng.pick([0, 1, -1, 86400000, 1577836800000, -86400001, 253402300799999]);
        return { __extn: { fn: 'offset', args: [{ __extn: { fn: 'datetime', arg: '1970-01-01' } }, { __extn: { fn: 'duration', arg: `${ms}ms` } }] } };
      }
      if (r < 0.5) return s;                           // schema-based implicit form
      if (r < 0.85) return { __extn: { fn, arg: s } }; // explicit form
      return { fn, arg: s };                           // schema-based implicit {fn, arg}
    }
  }
  throw new Error(`genValue ${ty.k}`);
}

// ---------------------------------------------------------------------------------------
// Entity store

export function genEntities(rng, world) {
  const nodes = []; // {type, id, rank}
  for (const [full, t] of world.types) {
    if (t.enumIds) continue;
    let ids;
    if (t.parents.includes(full) && rng.chance(0.3)) {
      // A long chain through a self-referencing type: depth 10+ hierarchies.
      const n = rng.int(10, 15);
      const base = rng.pick(['g', 'lvl', '', 'é']);
      ids = Array.from({ length: n }, (_, i) => `${base}${i}`);
      ids.forEach((id, i) => nodes.push({ type: full, id, rank: i / n, chain: i }));
      ids = rng.chance(0.5) ? [...ids, ...rng.sample(P.IDS.filter((x) => !ids.includes(x)), rng.int(0, 2))] : ids;
      for (const id of ids.slice(n)) nodes.push({ type: full, id, rank: rng.float() });
    } else {
      ids = rng.sample(P.IDS, rng.pickW([[1, 0], [3, 1], [4, 2], [3, 3], [2, 5]]));
      for (const id of ids) nodes.push({ type: full, id, rank: rng.float() });
    }
    world.store.set(full, ids);
  }
  // Parents only ever point to a higher rank, so the graph is a DAG (Cedar rejects cycles
  // at load time, which would make the whole file uninteresting).
  const entities = [];
  for (const n of nodes) {
    const t = world.types.get(n.type);
    const parents = [];
    if (n.chain !== undefined) {
      const next = nodes.find((m) => m.type === n.type && m.chain === n.chain + 1);
      if (next) parents.push(next);
    }
    const cands = nodes.filter((m) => t.parents.includes(m.type) && m.rank > n.rank && !parents.includes(m));
    parents.push(...rng.sample(cands, rng.pickW([[3, 0], [4, 1], [2, 2], [1, 3]])));
    const parentUids = parents.map((m) => [m.type, m.id]);
    if (t.parents.length && rng.chance(0.1)) {
      // A parent that is not in the store (or an enum entity): allowed, just a UID.
      const pt = rng.pick(t.parents);
      const pid = world.types.get(pt).enumIds ? rng.pick(world.types.get(pt).enumIds) : rng.pick(P.IDS);
      if (!(world.store.get(pt) || []).includes(pid) && !parentUids.some(([a, b]) => a === pt && b === pid)) parentUids.push([pt, pid]);
    }
    n.parentUids = parentUids;
  }
  // Ancestor sets, used to aim `in` constraints at entities that requests will actually hit.
  const byKey = new Map(nodes.map((n) => [key(n.type, n.id), n]));
  const anc = world.anc;
  const ancOf = (k) => {
    if (anc.has(k)) return anc.get(k);
    const s = new Set();
    const n = byKey.get(k);
    if (n) for (const [pt, pid] of n.parentUids) { const pk = key(pt, pid); s.add(pk); for (const a of ancOf(pk)) s.add(a); }
    anc.set(k, s);
    return s;
  };
  for (const n of nodes) ancOf(key(n.type, n.id));

  for (const n of rng.shuffle(nodes)) {
    const t = world.types.get(n.type);
    const e = { uid: uidJson(rng, n.type, n.id), attrs: genValue(rng, world, t.shape), parents: n.parentUids.map(([pt, pid]) => uidJson(rng, pt, pid)) };
    if (t.tags) {
      const tags = {};
      for (const k of rng.sample(P.TAG_KEYS, rng.int(0, 3))) tags[k] = genValue(rng, world, t.tags);
      if (Object.keys(tags).length || rng.chance(0.5)) e.tags = tags;
    } else if (rng.chance(0.1)) e.tags = {};
    entities.push(e);
  }
  // Action entities may also be listed explicitly; they must then match the schema exactly.
  if (rng.chance(0.2)) {
    for (const a of world.actions) entities.push({ uid: uidJson(rng, a.uid.type, a.uid.id), attrs: {}, parents: a.parents.map((p) => uidJson(rng, p.type, p.id)) });
  }
  return entities;
}

// ---------------------------------------------------------------------------------------
// Expressions

class ExprGen {
  constructor(rng, world, env) {
    this.rng = rng;
    this.world = world;
    this.env = env; // {P, R, action, ctx}
    this.sources = this.buildSources();
  }

  strEsc() { return this.rng.pickW([[7, 'std'], [1.5, 'u'], [1.5, 'x']]); }

  // Attribute paths reachable from the variables and a few entity literals, with their types.
  buildSources() {
    const { rng, world, env } = this;
    const roots = [
      { e: v_('principal'), ty: ENT(env.P), opt: false },
      { e: v_('resource'), ty: ENT(env.R), opt: false },
      { e: v_('context'), ty: env.ctx, opt: false },
    ];
    for (const [full, ids] of world.store) {
      if (ids.length && rng.chance(0.3)) roots.push({ e: euid(full, rng.pick(ids)), ty: ENT(full), opt: false });
    }
    const all = [...roots];
    let frontier = roots;
    for (let depth = 0; depth < 3 && all.length < 80; depth++) {
      const next = [];
      for (const s of frontier) {
        let attrs = null;
        if (s.ty.k === 'Entity') { const t = world.types.get(s.ty.name); attrs = t && t.shape ? t.shape.attrs : null; }
        else if (s.ty.k === 'Record') attrs = s.ty.attrs;
        if (!attrs) continue;
        for (const a of attrs) next.push({ e: get(s.e, a.name), ty: a.type, opt: s.opt || !a.req, parent: s, attr: a.name, attrReq: a.req });
      }
      all.push(...next);
      frontier = next;
    }
    return all;
  }

  // A fresh copy of a source expression, with `.a` / `["a"]` chosen anew.
  use(src) {
    const c = clone(src.e);
    const walk = (n) => { if (n.t === 'get') { n.mode = this.rng.chance(0.8) ? 'dot' : 'idx'; n.esc = this.strEsc(); walk(n.a); } };
    walk(c);
    return c;
  }

  sourceOf(ty) {
    const c = this.sources.filter((s) => typeEq(s.ty, ty));
    return c.length ? this.use(this.rng.pick(c)) : null;
  }

  randomType(depth = 0) {
    const { rng, world } = this;
    const r = rng.pickW([[3, 'Long'], [3, 'String'], [2, 'Bool'], [3, 'Entity'], [2, 'Set'], [2, 'Ext'], [1, 'Source'], [depth < 2 ? 0.8 : 0, 'Record']]);
    switch (r) {
      case 'Entity': return ENT(rng.pick([...world.types.keys(), world.actionType]));
      case 'Set': return SET(depth < 2 && rng.chance(0.25) ? this.randomType(depth + 1) : rng.pick([LONG, STRING, ENT(rng.pick([...world.types.keys()]))]));
      case 'Ext': return EXT(rng.pick(P.EXT_NAMES));
      case 'Source': return rng.pick(this.sources).ty;
      case 'Record': return { k: 'Record', attrs: rng.sample(P.ATTRS, rng.int(0, 3)).map((name) => ({ name, type: rng.chance(0.3) ? this.randomType(depth + 1) : rng.pick([LONG, STRING, BOOL]), req: true })) };
      default: return { k: r };
    }
  }

  // Generate an expression of type ty (in the assumed environment). d bounds the depth.
  gen(ty, d) {
    if (this.rng.chance(TUNING.illTyped)) ty = this.randomType();
    const n = this.genOfType(ty, d);
    // Redundant parentheses now and then: the parser must not care.
    if (this.rng.chance(0.04)) n.p = true;
    return n;
  }

  genOfType(ty, d) {
    switch (ty.k) {
      case 'Bool': return this.genBool(d);
      case 'Long': return this.genLong(d);
      case 'String': return this.genString(d);
      case 'Entity': return this.genEntity(ty.name, d);
      case 'Set': return this.genSet(ty, d);
      case 'Record': return this.genRecord(ty, d);
      case 'Ext': return this.genExt(ty.name, d);
    }
    throw new Error(`gen ${ty.k}`);
  }

  literal(ty, d = 1) {
    const { rng } = this;
    switch (ty.k) {
      case 'Bool': return lit(rng.chance(0.5));
      case 'Long': {
        const n = lit(rng.chance(0.85) ? BigInt(rng.pick(P.LONGS)) : rng.pick(P.EDGE_LONGS));
        if (rng.chance(0.03)) n.lz = rng.int(1, 3);
        return n;
      }
      case 'String': return lit(rng.pick(P.STRINGS), this.strEsc());
      case 'Entity': return this.entityLit(ty.name);
      case 'Ext': return this.extCtor(ty.name);
      case 'Set': return this.genSet(ty, Math.min(d, 1));
      case 'Record': return this.genRecord(ty, Math.min(d, 1), true);
    }
    throw new Error(`literal ${ty.k}`);
  }

  entityLit(type) {
    const { rng, world } = this;
    if (rng.chance(0.02)) return euid(world.full(rng.pick(['Unknown', 'Missing_T'])), rng.pick(P.IDS), this.strEsc());
    if (type === world.actionType) return euid(type, rng.pick(world.actions).uid.id, this.strEsc());
    return euid(type, pickEntityId(rng, world, type, 0.2), this.strEsc());
  }

  extCtor(name) {
    const { rng } = this;
    const fn = P.EXT_CTOR[name];
    const r = rng.float();
    if (r < 0.01) return call(fn, []); // arity errors only show at evaluation
    if (r < 0.02) return call(fn, [lit(extString(rng, name)), lit(extString(rng, name))]);
    if (r < 0.04) {
      // Non-literal argument: evaluates, but the validator rejects it.
      const s = this.sourceOf(STRING);
      if (s) return call(fn, [s]);
    }
    const n = call(fn, [lit(extString(rng, name, !rng.chance(TUNING.badExtArg)), this.strEsc())]);
    if (rng.chance(0.05)) n.tc = true;
    return n;
  }

  genBool(d) {
    const { rng } = this;
    const src = () => this.sourceOf(BOOL);
    if (d <= 0) return rng.chance(0.6) ? (src() || lit(rng.chance(0.5))) : lit(rng.chance(0.5));
    const optSources = this.sources.filter((s) => s.opt && s.parent);
    const tagged = [...this.world.types.entries()].filter(([, t]) => t.tags);
    const kind = rng.pickW([
      [0.6, 'lit'], [1.5, 'src'], [2, 'not'], [4, 'and'], [3, 'or'], [1, 'if'], [9, 'predSrc'], [3, 'predGen'],
      [optSources.length ? 3 : 0, 'guard'], [1, 'eqAny'], [tagged.length ? 2 : 0, 'tag'], [3, 'in'], [2, 'is'],
      [1.5, 'like'], [0.6, 'hasX'], [0.3, 'arity'], [1.5, 'arith'], [1, 'action'], [0.4, 'notnot'], [1.2, 'hasPath'], [0.3, 'deep'], [5, 'ext'], [1, 'nested'],
    ]);
    switch (kind) {
      case 'lit': return lit(rng.chance(0.5));
      case 'src': return src() || this.genBool(d - 1);
      case 'not': return not(this.genBool(d - 1));
      case 'and': return bin('&&', this.gen(BOOL, d - 1), this.gen(BOOL, d - 1));
      case 'or': return bin('||', this.gen(BOOL, d - 1), this.gen(BOOL, d - 1));
      case 'if': return ite(this.gen(BOOL, d - 1), this.gen(BOOL, d - 1), this.gen(BOOL, d - 1));
      case 'predSrc': { const s = rng.pick(this.sources); return this.pred(this.use(s), s.ty, d - 1); }
      case 'predGen': { const ty = this.randomType(); return this.pred(this.gen(ty, d - 1), ty, d - 1); }
      case 'guard': {
        // `x has a && <predicate on x.a>`: the shape the validator needs for optional attrs.
        const s = rng.pick(optSources);
        const chain = [];
        let root = s;
        while (root.parent) { chain.unshift(root.attr); root = root.parent; }
        let guard;
        if (chain.length > 1 && chain.length <= 3 && chain.every(isIdent) && rng.chance(0.5)) {
          guard = { t: 'has', a: this.use(root), path: chain, esc: 'std' }; // extended has a.b.c
        } else {
          guard = { t: 'has', a: this.use(s.parent), path: [s.attr], esc: this.strEsc(), quoted: rng.chance(0.1) };
        }
        const body = this.pred(this.use(s), s.ty, d - 1);
        return rng.chance(0.85) ? bin('&&', guard, body) : ite(guard, body, lit(rng.chance(0.5)));
      }
      case 'eqAny': {
        // == between values of (probably) different types: false, never an error.
        return bin(rng.chance(0.7) ? '==' : '!=', this.gen(this.randomType(), d - 1), this.gen(this.randomType(), d - 1));
      }
      case 'tag': {
        const [full, t] = rng.pick(tagged);
        const e = this.sourceOf(ENT(full)) || this.entityLit(full);
        const k = rng.chance(0.8) ? lit(rng.pick(P.TAG_KEYS), this.strEsc()) : this.gen(STRING, d - 1);
        if (rng.chance(0.4)) return method(clone(e), 'hasTag', [clone(k)]);
        const g = method(e, 'getTag', [k]);
        const body = this.pred(g, t.tags, d - 1);
        return rng.chance(0.6) ? bin('&&', method(clone(e), 'hasTag', [clone(k)]), body) : body;
      }
      case 'in': {
        const lhs = rng.chance(0.7) ? v_(rng.pick(['principal', 'resource'])) : this.gen(ENT(this.anyEntityType()), d - 1);
        return bin('in', lhs, this.inTarget(lhs, d - 1));
      }
      case 'is': {
        const lhs = rng.chance(0.7) ? v_(rng.pick(['principal', 'resource'])) : this.gen(ENT(this.anyEntityType()), d - 1);
        const ty = rng.chance(0.9) ? this.anyEntityType() : this.world.full('Unknown');
        return { t: 'is', a: lhs, ty, in: rng.chance(0.35) ? this.inTarget(lhs, d - 1) : null };
      }
      case 'like': return this.likeOn(this.gen(STRING, d - 1));
      case 'hasX': {
        // `has` on something that is not a record or entity: a type error.
        return { t: 'has', a: this.gen(rng.pick([LONG, STRING, SET(LONG)]), d - 1), path: [rng.pick(P.ATTRS)], esc: 'std' };
      }
      case 'ext': {
        // Extension values and their methods, independent of what the schema declares.
        const ty = EXT(rng.pick(P.EXT_NAMES));
        return this.pred(this.gen(ty, d - 1), ty, d - 1);
      }
      case 'nested': {
        // Structural equality / membership over nested set and record literals (equal
        // copies, reordered keys, duplicates).
        const inner = { k: 'Record', attrs: rng.sample(P.ATTRS, rng.int(1, 2)).map((name) => ({ name, type: rng.pick([LONG, STRING, SET(LONG)]), req: true })) };
        const ty = rng.chance(0.5) ? SET(inner) : { k: 'Record', attrs: [{ name: rng.pick(P.ATTRS), type: SET(inner), req: true }] };
        const a = this.literal(ty, 3);
        const b = rng.chance(0.5) ? clone(a) : this.literal(ty, 3);
        if (b.t === 'rec') b.fields = rng.shuffle(b.fields);
        if (ty.k === 'Set' && rng.chance(0.4)) return method(a, rng.pick(['contains', 'containsAll', 'containsAny']), [rng.chance(0.5) && b.elems && b.elems.length ? b.elems[0] : b]);
        return bin(rng.chance(0.8) ? '==' : '!=', a, b);
      }
      case 'arith': {
        // Arithmetic near the i64 edges, compared to something: overflow errors.
        const e = () => (rng.chance(0.5) ? lit(rng.pick(P.EDGE_LONGS)) : this.gen(LONG, d - 1));
        const op = rng.pick(['+', '-', '*', '*']);
        const a = rng.chance(0.2) ? neg(e()) : bin(op, e(), e());
        return bin(rng.pick(['==', '<', '>=', '!=']), a, this.gen(LONG, 0));
      }
      case 'action': {
        const acts = this.world.actions;
        const one = () => euid(this.world.actionType, rng.pick(acts).uid.id, this.strEsc());
        if (rng.chance(0.4)) return bin('==', v_('action'), one());
        if (rng.chance(0.5)) return bin('in', v_('action'), one());
        return bin('in', v_('action'), { t: 'set', elems: Array.from({ length: rng.int(1, 3) }, one) });
      }
      case 'notnot': {
        // `!!x`, `!!!x`: chains of the same prefix operator (at most 4 parse).
        let n = this.genBool(d - 1);
        for (let i = rng.int(2, 4); i > 0; i--) n = not(n);
        return n;
      }
      case 'hasPath': {
        // `e has a.b.c` over nested records, when all names are identifiers.
        const recs = this.sources.filter((x) => x.ty.k === 'Record' || x.ty.k === 'Entity');
        const s = rng.pick(recs);
        let ty = s.ty;
        const path = [];
        while (path.length < 3) {
          const attrs = ty.k === 'Record' ? ty.attrs : (this.world.types.get(ty.name) || {}).shape?.attrs;
          if (!attrs || !attrs.length) break;
          const a = rng.pick(attrs);
          path.push(a.name);
          ty = a.type;
          if (ty.k !== 'Record' && ty.k !== 'Entity') break;
        }
        if (rng.chance(0.3) || !path.length) path.push(rng.pick(P.IDENT_ATTRS));
        const usable = path.filter(isIdent);
        return { t: 'has', a: this.use(s), path: usable.length ? usable : [rng.pick(P.IDENT_ATTRS)], esc: 'std' };
      }
      case 'deep': {
        // Deep nesting (cedar-wasm itself overflows its stack past ~100 levels of some forms,
        // so stay well below that): parentheses, !(…), if-chains, nested sets, && chains.
        const n = rng.int(15, 50);
        const k = rng.pick(['parens', 'not', 'if', 'set', 'and']);
        let e = this.genBool(Math.min(d - 1, 1));
        if (k === 'parens') for (let i = 0; i < n; i++) e = { t: 'paren', a: e };
        if (k === 'not') for (let i = 0; i < n; i++) e = { ...not(e), p: true };
        if (k === 'if') for (let i = 0; i < n; i++) e = ite(lit(rng.chance(0.9)), e, lit(rng.chance(0.5)));
        if (k === 'and') for (let i = 0; i < n * 2; i++) e = bin(rng.chance(0.8) ? '&&' : '||', e, this.genBool(0));
        if (k === 'set') {
          let v = this.literal(LONG);
          for (let i = 0; i < n; i++) v = { t: 'set', elems: [v] };
          e = method(v, rng.chance(0.5) ? 'contains' : 'containsAny', [rng.chance(0.5) ? clone(v.elems[0]) : v]);
        }
        return e;
      }
      case 'arity': {
        // Extension methods with the wrong number of arguments fail only at evaluation.
        const m = rng.pick(['isIpv4', 'isLoopback', 'lessThan', 'isInRange', 'toDate', 'offset']);
        const recv = this.gen(EXT(rng.pick(P.EXT_NAMES)), d - 1);
        return method(recv, m, rng.chance(0.5) ? [] : [this.gen(LONG, 0), this.gen(LONG, 0)]);
      }
    }
    throw new Error(kind);
  }

  anyEntityType() {
    const { rng, env, world } = this;
    return rng.pickW([[3, env.P], [3, env.R], [3, rng.pick([...world.types.keys()])], [0.5, world.actionType]]);
  }

  // Right-hand side of `in`: biased towards ancestors of entities the requests will use.
  inTarget(lhs, d) {
    const { rng, world } = this;
    const aimed = () => {
      const ks = [...world.anc.entries()].filter(([, s]) => s.size);
      if (!ks.length) return null;
      const [k, s] = rng.pick(ks);
      const a = rng.chance(0.8) ? rng.pick([...s]) : k;
      const [type, id] = unkey(a);
      return euid(type, id, this.strEsc());
    };
    const r = rng.float();
    if (r < 0.5) return aimed() || this.entityLit(this.anyEntityType());
    if (r < 0.7) return { t: 'set', elems: Array.from({ length: rng.int(0, 3) }, () => aimed() || this.entityLit(this.anyEntityType())) };
    if (r < 0.8) return this.gen(SET(ENT(this.anyEntityType())), d);
    if (r < 0.85 && lhs.t === 'var') return v_(lhs.n === 'principal' ? 'resource' : 'principal');
    if (r < 0.87) return { t: 'set', elems: [this.entityLit(this.anyEntityType()), this.literal(LONG)] }; // non-entity element
    if (r < 0.89 && world.actions.length) return euid(world.actionType, rng.pick(world.actions).uid.id);
    return this.gen(ENT(this.anyEntityType()), d);
  }

  // A `like` whose pattern is derived from a pool string, so that it matches sometimes.
  likeOn(e) {
    const { rng } = this;
    const base = [...rng.pick(P.STRINGS)];
    const pat = [];
    for (const ch of base) {
      const r = rng.float();
      if (r < 0.15) pat.push(WILDCARD);
      else if (r < 0.2) { pat.push(WILDCARD); pat.push(ch); }
      else if (r < 0.23) continue;
      else pat.push(ch);
    }
    if (rng.chance(0.3)) pat.unshift(WILDCARD);
    if (rng.chance(0.3)) pat.push(WILDCARD);
    if (rng.chance(0.1)) pat.push('*'); // a literal star (printed as \*)
    return { t: 'like', a: e, pat, esc: this.strEsc() };
  }

  // A Bool predicate about e, which has (assumed) type ty.
  pred(e, ty, d) {
    const { rng } = this;
    const d1 = Math.max(d, 0);
    const cmp = (ops) => bin(rng.pick(ops), e, this.gen(ty, d1));
    switch (ty.k) {
      case 'Bool': return rng.pickW([[3, () => e], [1, () => not(e)], [1, () => cmp(['==', '!='])]])();
      case 'Long': return cmp(['==', '!=', '<', '<=', '>', '>=']);
      case 'String': return rng.chance(0.4) ? this.likeOn(e) : cmp(['==', '!=']);
      case 'Entity': {
        const k = rng.pickW([[3, 'eq'], [3, 'in'], [1, 'is'], [2, 'has'], [2, 'attr'], [1, 'tag']]);
        const t = this.world.types.get(ty.name);
        if (k === 'in') return bin('in', e, this.inTarget(e, d1));
        if (k === 'is') return { t: 'is', a: e, ty: rng.chance(0.5) ? ty.name : this.anyEntityType(), in: rng.chance(0.3) ? this.inTarget(e, d1) : null };
        if (k === 'has' || (k === 'attr' && !(t && t.shape && t.shape.attrs.length))) {
          const names = t && t.shape ? t.shape.attrs.map((a) => a.name) : [];
          return { t: 'has', a: e, path: [names.length && rng.chance(0.8) ? rng.pick(names) : rng.pick(P.ATTRS)], esc: this.strEsc(), quoted: rng.chance(0.1) };
        }
        if (k === 'attr') { const a = rng.pick(t.shape.attrs); return this.pred(get(e, a.name, rng.chance(0.8) ? 'dot' : 'idx', this.strEsc()), a.type, d1 - 1); }
        if (k === 'tag') return method(e, 'hasTag', [lit(rng.pick(P.TAG_KEYS), this.strEsc())]);
        return cmp(['==', '!=']);
      }
      case 'Set': {
        const k = rng.pickW([[3, 'contains'], [2, 'containsAll'], [2, 'containsAny'], [1.5, 'isEmpty'], [1, 'eq']]);
        if (k === 'contains') return method(e, 'contains', [this.gen(ty.elem, d1)]);
        if (k === 'containsAll' || k === 'containsAny') return method(e, k, [this.gen(ty, d1)]);
        if (k === 'isEmpty') return method(e, 'isEmpty', []);
        return cmp(['==', '!=']);
      }
      case 'Record': {
        if (ty.attrs.length && rng.chance(0.5)) {
          const a = rng.pick(ty.attrs);
          if (a.req || rng.chance(0.3)) return this.pred(get(e, a.name, rng.chance(0.8) ? 'dot' : 'idx', this.strEsc()), a.type, d1 - 1);
          return bin('&&', { t: 'has', a: clone(e), path: [a.name], esc: 'std' }, this.pred(get(e, a.name), a.type, d1 - 1));
        }
        if (rng.chance(0.6)) {
          // Extended has through nested records when the names allow it.
          const path = [];
          let cur = ty;
          while (cur && cur.k === 'Record' && cur.attrs.length && path.length < 3) {
            const a = rng.pick(cur.attrs);
            path.push(a.name);
            cur = a.type;
            if (!rng.chance(0.6)) break;
          }
          if (!path.length) path.push(rng.pick(P.ATTRS));
          if (path.length > 1 && !path.every(isIdent)) path.length = 1;
          return { t: 'has', a: e, path, esc: this.strEsc(), quoted: rng.chance(0.1) };
        }
        return cmp(['==', '!=']);
      }
      case 'Ext':
        switch (ty.name) {
          case 'ipaddr':
            if (rng.chance(0.6)) return method(e, rng.pick(['isIpv4', 'isIpv6', 'isLoopback', 'isMulticast']), []);
            if (rng.chance(0.7)) return method(e, 'isInRange', [this.gen(ty, d1)]);
            return cmp(['==', '!=']);
          case 'decimal':
            if (rng.chance(0.8)) return method(e, rng.pick(['lessThan', 'lessThanOrEqual', 'greaterThan', 'greaterThanOrEqual']), [this.gen(ty, d1)]);
            return cmp(['==', '!=', '<']); // `<` on decimals is a type error
          case 'datetime': {
            const r = rng.float();
            if (r < 0.5) return cmp(['==', '!=', '<', '<=', '>', '>=']);
            if (r < 0.65) return bin(rng.pick(['==', '<', '>=']), method(e, 'toDate', []), this.gen(ty, d1));
            if (r < 0.8) return bin(rng.pick(['==', '<', '>=']), method(e, 'toTime', []), this.gen(EXT('duration'), d1));
            if (r < 0.9) return bin(rng.pick(['<', '>', '==']), method(e, 'offset', [this.gen(EXT('duration'), d1)]), this.gen(ty, d1));
            return bin(rng.pick(['<', '>=', '==']), method(e, 'durationSince', [this.gen(ty, d1)]), this.gen(EXT('duration'), d1));
          }
          case 'duration': {
            if (rng.chance(0.5)) return cmp(['==', '!=', '<', '<=', '>', '>=']);
            const m = rng.pick(['toMilliseconds', 'toSeconds', 'toMinutes', 'toHours', 'toDays']);
            return bin(rng.pick(['==', '<', '>=', '!=']), method(e, m, []), this.gen(LONG, d1));
          }
        }
    }
    throw new Error(`pred ${ty.k}`);
  }

  genLong(d) {
    const { rng } = this;
    if (d <= 0) return rng.chance(0.5) ? (this.sourceOf(LONG) || this.literal(LONG)) : this.literal(LONG);
    const tagged = [...this.world.types.entries()].filter(([, t]) => t.tags && t.tags.k === 'Long');
    const k = rng.pickW([[4, 'lit'], [4, 'src'], [1, 'neg'], [2, '+'], [2, '-'], [2, '*'], [1, 'dur'], [0.4, 'if'], [tagged.length ? 1 : 0, 'tag'], [0.3, 'rec']]);
    switch (k) {
      case 'lit': return this.literal(LONG);
      case 'src': return this.sourceOf(LONG) || this.literal(LONG);
      case 'neg': {
        let n = neg(this.gen(LONG, d - 1));
        if (rng.chance(0.3)) n = neg(n); // `--x`
        return n;
      }
      case '+': case '-': case '*': return bin(k, this.gen(LONG, d - 1), this.gen(LONG, d - 1));
      case 'dur': return method(this.gen(EXT('duration'), d - 1), rng.pick(['toMilliseconds', 'toSeconds', 'toMinutes', 'toHours', 'toDays']), []);
      case 'if': return ite(this.gen(BOOL, d - 1), this.gen(LONG, d - 1), this.gen(LONG, d - 1));
      case 'tag': { const [full] = rng.pick(tagged); return method(this.sourceOf(ENT(full)) || this.entityLit(full), 'getTag', [lit(rng.pick(P.TAG_KEYS))]); }
      case 'rec': { const name = rng.pick(P.ATTRS); return get({ t: 'rec', fields: [[name, this.gen(LONG, d - 1)]], esc: 'std' }, name, rng.chance(0.5) ? 'dot' : 'idx'); }
    }
    throw new Error(k);
  }

  genString(d) {
    const { rng } = this;
    if (d <= 0) return rng.chance(0.4) ? (this.sourceOf(STRING) || this.literal(STRING)) : this.literal(STRING);
    const tagged = [...this.world.types.entries()].filter(([, t]) => t.tags && t.tags.k === 'String');
    const k = rng.pickW([[5, 'lit'], [4, 'src'], [0.4, 'if'], [tagged.length ? 1 : 0, 'tag']]);
    switch (k) {
      case 'lit': return this.literal(STRING);
      case 'src': return this.sourceOf(STRING) || this.literal(STRING);
      case 'if': return ite(this.gen(BOOL, d - 1), this.gen(STRING, d - 1), this.gen(STRING, d - 1));
      case 'tag': { const [full] = rng.pick(tagged); return method(this.sourceOf(ENT(full)) || this.entityLit(full), 'getTag', [lit(rng.pick(P.TAG_KEYS))]); }
    }
    throw new Error(k);
  }

  genEntity(type, d) {
    const { rng, env } = this;
    const vars = [];
    if (type === env.P) vars.push('principal');
    if (type === env.R) vars.push('resource');
    if (type === this.world.actionType) vars.push('action');
    const k = rng.pickW([[vars.length ? 4 : 0, 'var'], [4, 'lit'], [d > 0 ? 3 : 1, 'src'], [d > 0 ? 0.3 : 0, 'if']]);
    switch (k) {
      case 'var': return v_(rng.pick(vars));
      case 'lit': return this.entityLit(type);
      case 'src': return this.sourceOf(ENT(type)) || this.entityLit(type);
      case 'if': return ite(this.gen(BOOL, d - 1), this.gen(ENT(type), d - 1), this.gen(ENT(type), d - 1));
    }
    throw new Error(k);
  }

  genSet(ty, d) {
    const { rng } = this;
    if (rng.chance(0.4)) { const s = this.sourceOf(ty); if (s) return s; }
    const n = rng.pickW([[0.5, 0], [3, 1], [3, 2], [2, 3]]);
    const elems = Array.from({ length: n }, () => this.gen(ty.elem, Math.max(d - 1, 0)));
    if (elems.length && rng.chance(0.1)) elems.splice(rng.int(0, elems.length), 0, clone(rng.pick(elems))); // duplicates
    return { t: 'set', elems, tc: rng.chance(0.05) };
  }

  genRecord(ty, d, literalOnly = false) {
    const { rng } = this;
    if (!literalOnly && rng.chance(0.6)) { const s = this.sourceOf(ty); if (s) return s; }
    const fields = ty.attrs.filter((a) => a.req || rng.chance(0.5)).map((a) => [a.name, this.gen(a.type, Math.max(d - 1, 0))]);
    return { t: 'rec', fields: rng.shuffle(fields), esc: this.strEsc(), quoted: rng.chance(0.15), tc: rng.chance(0.05) };
  }

  genExt(name, d) {
    const { rng } = this;
    if (d > 0) {
      if (name === 'datetime') {
        const r = rng.float();
        if (r < 0.12) return method(this.gen(EXT('datetime'), d - 1), 'offset', [this.gen(EXT('duration'), d - 1)]);
        if (r < 0.2) return method(this.gen(EXT('datetime'), d - 1), 'toDate', []);
      }
      if (name === 'duration') {
        const r = rng.float();
        if (r < 0.1) return method(this.gen(EXT('datetime'), d - 1), 'durationSince', [this.gen(EXT('datetime'), d - 1)]);
        if (r < 0.18) return method(this.gen(EXT('datetime'), d - 1), 'toTime', []);
      }
    }
    if (rng.chance(0.35)) { const s = this.sourceOf(EXT(name)); if (s) return s; }
    return this.extCtor(name);
  }
}

// ---------------------------------------------------------------------------------------
// Policies

function genScope(rng, world, eg, type, applicableTypes) {
  const k = rng.pickW([[3, 'any'], [2, 'is'], [2, '=='], [2, 'in'], [1.5, 'isin']]);
  const aimedIn = () => {
    // An ancestor of (or the) entity of this type that requests are likely to use.
    const ids = world.store.get(type) || [];
    if (ids.length && rng.chance(0.85)) {
      const k0 = key(type, rng.pick(ids));
      const s = world.anc.get(k0);
      const a = s && s.size && rng.chance(0.75) ? rng.pick([...s]) : k0;
      const [t, id] = unkey(a);
      return euid(t, id, eg.strEsc());
    }
    return eg.entityLit(rng.pick([...world.types.keys()]));
  };
  switch (k) {
    case 'any': return { op: 'any' };
    case 'is': return { op: 'is', ty: rng.chance(0.95) ? type : rng.pick([...world.types.keys()]) };
    case '==': return { op: '==', e: eg.entityLit(rng.chance(0.9) ? type : rng.pick(applicableTypes)) };
    case 'in': return { op: 'in', e: aimedIn() };
    case 'isin': return { op: 'isin', ty: type, e: aimedIn() };
  }
  throw new Error(k);
}

export function genPolicy(rng, world) {
  const A = rng.pick(world.applicable);
  const Pt = rng.pick(A.appliesTo.principals);
  const Rt = rng.pick(A.appliesTo.resources);
  const eg = new ExprGen(rng, world, { P: Pt, R: Rt, ctx: A.appliesTo.ctx });
  const ak = rng.pickW([[4, '=='], [2, 'in'], [1.5, 'inlist'], [3, 'any']]);
  let action;
  if (ak === '==') action = { op: '==', e: euid(A.uid.type, A.uid.id, eg.strEsc()) };
  else if (ak === 'in') action = { op: 'in', e: euid(A.uid.type, (A.parents.length && rng.chance(0.8) ? rng.pick(A.parents) : A.uid).id) };
  else if (ak === 'inlist') {
    const others = rng.sample(world.actions, rng.int(0, 2)).filter((a) => a !== A);
    action = { op: 'inlist', list: rng.shuffle([A, ...others]).map((a) => euid(a.uid.type, a.uid.id, eg.strEsc())), tc: rng.chance(0.1) };
  } else action = { op: 'any' };
  const principal = genScope(rng, world, eg, Pt, A.appliesTo.principals);
  const resource = genScope(rng, world, eg, Rt, A.appliesTo.resources);
  const nConds = rng.pickW([[1.5, 0], [5, 1], [2, 2], [0.7, 3]]);
  const depth = rng.int(2, 4);
  const conds = Array.from({ length: nConds }, () => ({ kind: rng.chance(0.75) ? 'when' : 'unless', body: eg.gen(BOOL, depth) }));
  const annotations = [];
  if (rng.chance(0.3)) for (const k of rng.sample(P.ANN_KEYS, rng.int(1, 3))) annotations.push([k, rng.chance(0.3) ? null : rng.pick(P.STRINGS)]);
  return {
    effect: rng.chance(0.7) ? 'permit' : 'forbid', annotations, principal, action, resource, conds,
    env: { action: A.uid.id, P: Pt, R: Rt }, // not printed: lets requests aim at this policy
    multiline: rng.chance(0.3), scopeTc: rng.chance(0.08), comment: rng.chance(0.08) ? 'generated' : null,
    ws: rng.chance(0.25) ? { seed: rng.int(0, 2 ** 31), style: rng.pick(['ascii', 'ascii', 'unicode', 'comments']), rate: rng.pick([0.1, 0.3, 1]) } : null,
  };
}

// Entities the policies' scopes name, so requests can aim at them.
function scopeTargets(policies) {
  const out = [];
  for (const p of policies) for (const s of [p.principal, p.resource]) if (s.e && s.e.t === 'euid') out.push(s.e);
  return out;
}

export function genRequest(rng, world, policies, idx) {
  const targets = scopeTargets(policies);
  const pickEntity = (type) => {
    const r = rng.float();
    const t = targets.filter((e) => e.ty === type);
    if (r < 0.2 && t.length) return { type, id: rng.pick(t).id };
    if (r < 0.4 && t.length) {
      // A descendant of a scope target: exercises `in` through the hierarchy.
      const tg = rng.pick(targets);
      const tk = key(tg.ty, tg.id);
      const desc = (world.store.get(type) || []).filter((id) => (world.anc.get(key(type, id)) || new Set()).has(tk));
      if (desc.length) return { type, id: rng.pick(desc) };
    }
    return { type, id: pickEntityId(rng, world, type, 0.12) };
  };
  const unvalidated = rng.chance(TUNING.unvalidatedRequest);
  // Mostly aim at the environment some policy was written for, so conditions get evaluated.
  const aim = !unvalidated && rng.chance(0.65) ? rng.pick(policies).env : null;
  const A = aim ? world.applicable.find((a) => a.uid.id === aim.action)
    : unvalidated && rng.chance(0.3) ? rng.pick(world.actions) : rng.pick(world.applicable);
  const allTypes = [...world.types.keys()];
  const pt = aim ? aim.P : unvalidated || !A.appliesTo ? rng.pick(allTypes) : rng.pick(A.appliesTo.principals);
  const rt = aim ? aim.R : unvalidated || !A.appliesTo ? rng.pick(allTypes) : rng.pick(A.appliesTo.resources);
  const ctxType = A.appliesTo ? A.appliesTo.ctx : { k: 'Record', attrs: [] };
  const uid = (u) => (rng.chance(0.1) ? { __entity: u } : u);
  const req = {
    description: idx,
    principal: uid(pickEntity(pt)), action: uid({ ...A.uid }), resource: uid(pickEntity(rt)),
    context: genValue(rng, world, ctxType),
  };
  if (unvalidated) req.validateRequest = false;
  else if (rng.chance(0.3)) req.validateRequest = true;
  return req;
}

// One test file's inputs. The request count is chosen by the caller (batches of 8-20).
// `attempt` re-rolls a case that cedar-wasm rejected, keeping (seed, index) reproducible.
// `label` names the run in request descriptions (default "seed S").
export function genCase(seed, index, attempt = 0, label = `seed ${seed}`) {
  const rng = new Rng((seed + Math.imul(attempt, 1000003)) | 0, index);
  const schema = genSchema(rng);
  const world = buildWorld(schema);
  const entities = genEntities(rng, world);
  const nPol = rng.pickW([[3, 1], [3, 2], [2, 3], [1, 4], [1, 5], [0.5, 6]]);
  const policies = Array.from({ length: nPol }, () => genPolicy(rng, world));
  const c = { seed, index, attempt, schema, entities, policies, requests: [] };
  let n = 0;
  // Requests are drawn on demand: the caller keeps the ones cedar-wasm accepts.
  const more = () => genRequest(rng, world, policies, `${label} case ${index}.${attempt} request ${n++}`);
  return { c, more };
}
