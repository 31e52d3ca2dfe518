// Printers: policy AST -> Cedar policy text, schema model -> .cedarschema text.
//
// The printer is deliberately minimal in its parenthesisation (only what the grammar
// requires, plus parentheses the generator asked for with `p: true`), so that the C parser
// is exercised on real precedence and associativity rather than on fully bracketed input.
// It is deterministic: the minimiser re-prints shrunk ASTs and must get the same shapes.

export const RESERVED = new Set(['true', 'false', 'if', 'then', 'else', 'in', 'like', 'has', 'is', '__cedar']);
const IDENT_RE = /^[_a-zA-Z][_a-zA-Z0-9]*$/;
export const isIdent = (s) => IDENT_RE.test(s) && !RESERVED.has(s);

// Words that are keywords somewhere in the schema grammar; an attribute or action named
// like this is always quoted in the schema so that the schema stays unambiguous.
const SCHEMA_WORDS = new Set([...RESERVED, 'entity', 'action', 'type', 'namespace', 'appliesTo',
  'principal', 'resource', 'context', 'tags', 'enum', 'Set', 'Long', 'String', 'Bool', 'Boolean',
  'Record', 'Entity', 'Extension', 'ipaddr', 'decimal', 'datetime', 'duration']);
export const isSchemaIdent = (s) => IDENT_RE.test(s) && !SCHEMA_WORDS.has(s);

export const WILDCARD = '\u{0}WILDCARD'; // pattern element meaning `*` (any sequence)

// ---------------------------------------------------------------------------------------
// Strings

// Escape one code point. style:
//   'std' — named escapes for the usual controls, \u{..} for the other controls, other
//           non-ASCII raw (UTF-8 in the file);
//   'u'   — \u{..} for everything outside printable ASCII, and \' for quotes;
//   'x'   — \xHH for ASCII controls, \u{00HH}-style zero-padded escapes for non-ASCII, raw tab.
function escapeChar(ch, style, inPattern) {
  const cp = ch.codePointAt(0);
  if (ch === '"') return '\\"';
  if (ch === '\\') return '\\\\';
  if (inPattern && ch === '*') return '\\*';
  if (style === 'u') {
    if (ch === "'") return "\\'";
    if (cp < 0x20 || cp >= 0x7f) return `\\u{${cp.toString(16)}}`;
    return ch;
  }
  if (style === 'x') {
    if (ch === '\t') return ch; // raw tab inside a string is legal
    if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, '0')}`;
    if (cp > 0x7f) return `\\u{${cp.toString(16).toUpperCase().padStart(4, '0')}}`;
    return ch;
  }
  switch (ch) {
    case '\n': return '\\n';
    case '\r': return '\\r';
    case '\t': return '\\t';
    case '\0': return '\\0';
  }
  if (cp < 0x20 || cp === 0x7f) return `\\u{${cp.toString(16)}}`;
  return ch;
}

export function cedarString(s, style = 'std') {
  let out = '"';
  for (const ch of s) out += escapeChar(ch, style, false);
  return out + '"';
}

// A `like` pattern: array of single characters and WILDCARD.
export function cedarPattern(elems, style = 'std') {
  let out = '"';
  for (const e of elems) out += e === WILDCARD ? '*' : escapeChar(e, style, true);
  return out + '"';
}

export const euidText = (ty, id, style) => `${ty}::${cedarString(id, style)}`;

// ---------------------------------------------------------------------------------------
// Expressions
//
// Precedence levels (loosest first): 0 if, 1 ||, 2 &&, 3 relations (== != < <= > >= in has
// like is), 4 + -, 5 *, 6 unary ! -, 7 member access / method call, 8 primary.

const REL_OPS = new Set(['==', '!=', '<', '<=', '>', '>=', 'in']);

function level(n) {
  switch (n.t) {
    case 'if': return 0;
    case 'bin':
      if (n.op === '||') return 1;
      if (n.op === '&&') return 2;
      if (REL_OPS.has(n.op)) return 3;
      if (n.op === '+' || n.op === '-') return 4;
      if (n.op === '*') return 5;
      throw new Error(`bad op ${n.op}`);
    case 'has': case 'like': case 'is': return 3;
    case 'not': case 'neg': return 6;
    case 'lit': return typeof n.v === 'bigint' && n.v < 0n ? 6 : 8;
    case 'get': case 'method': return 7;
    default: return 8;
  }
}

// The unary operator a node starts with, for the "at most 4 of the same operator, never
// mixed" rule of the grammar: ['!', count] or ['-', count] or null.
function unaryChain(n) {
  if (n.p) return null;
  if (n.t === 'not') { const c = unaryChain(n.a); return ['!', c && c[0] === '!' ? c[1] + 1 : 1]; }
  if (n.t === 'neg') { const c = unaryChain(n.a); return ['-', c && c[0] === '-' ? c[1] + 1 : 1]; }
  if (n.t === 'lit' && typeof n.v === 'bigint' && n.v < 0n) return ['-', 1];
  return null;
}

function sub(n, min) {
  const s = expr(n);
  return n.p || level(n) < min ? `(${s})` : s;
}

function unaryOperand(op, a) {
  // The operand of ! or - is a Member, or a chain of the same operator that stays within 4.
  const c = unaryChain(a);
  if (c && c[0] === op && c[1] < 4) return expr(a);
  // `- 5` would be folded by the parser into the literal -5; print the negation explicitly
  // only when the AST really is neg(lit) — it means the same value, so it is harmless.
  return sub(a, 7);
}

function attrAccess(name, style, mode) {
  if (mode === 'dot' && isIdent(name)) return `.${name}`;
  return `[${cedarString(name, style)}]`;
}

function recKey(k, style, quoted) {
  return !quoted && isIdent(k) ? k : cedarString(k, style);
}

const list = (items, tc) => items.join(', ') + (tc && items.length ? ',' : '');

export function expr(n) {
  switch (n.t) {
    case 'lit':
      if (typeof n.v === 'boolean') return String(n.v);
      if (typeof n.v === 'bigint') {
        // lz: leading zeros, which the lexer must accept (`007` is 7).
        const digits = '0'.repeat(n.lz || 0) + (n.v < 0n ? -n.v : n.v).toString();
        return n.v < 0n ? `-${digits}` : digits;
      }
      return cedarString(n.v, n.esc);
    case 'var': return n.n;
    case 'euid': return euidText(n.ty, n.id, n.esc);
    case 'slot': return n.n;
    case 'paren': return `(${expr(n.a)})`;
    case 'not': return '!' + unaryOperand('!', n.a);
    case 'neg': return '-' + unaryOperand('-', n.a);
    case 'bin': {
      const lv = level(n);
      // Relations are non-associative: both sides must be tighter. + - * are left-assoc.
      const [l, r] = lv === 3 ? [4, 4] : [lv, lv + 1];
      return `${sub(n.a, l)} ${n.op} ${sub(n.b, r)}`;
    }
    case 'if': return `if ${sub(n.c, 0)} then ${sub(n.a, 0)} else ${sub(n.b, 0)}`;
    case 'has': {
      const left = sub(n.a, 4);
      if (n.path.length === 1) {
        const k = n.path[0];
        return `${left} has ${!n.quoted && isIdent(k) ? k : cedarString(k, n.esc)}`;
      }
      if (!n.path.every(isIdent)) throw new Error('extended has needs identifiers');
      return `${left} has ${n.path.join('.')}`;
    }
    case 'like': return `${sub(n.a, 4)} like ${cedarPattern(n.pat, n.esc)}`;
    case 'is': return `${sub(n.a, 4)} is ${n.ty}` + (n.in ? ` in ${sub(n.in, 4)}` : '');
    case 'get': return sub(n.a, 7) + attrAccess(n.attr, n.esc, n.mode);
    case 'method': return `${sub(n.recv, 7)}.${n.m}(${list(n.args.map((a) => sub(a, 0)), n.tc)})`;
    case 'call': return `${n.fn}(${list(n.args.map((a) => sub(a, 0)), n.tc)})`;
    case 'set': return `[${list(n.elems.map((a) => sub(a, 0)), n.tc)}]`;
    case 'rec': return `{${list(n.fields.map(([k, v]) => `${recKey(k, n.esc, n.quoted)}: ${sub(v, 0)}`), n.tc)}}`;
    default: throw new Error(`unknown node ${n.t}`);
  }
}

// ---------------------------------------------------------------------------------------
// Policies

function scopeText(v, s) {
  switch (s.op) {
    case 'any': return v;
    case '==': return `${v} == ${expr(s.e)}`;
    case 'in': return `${v} in ${expr(s.e)}`;
    case 'is': return `${v} is ${s.ty}`;
    case 'isin': return `${v} is ${s.ty} in ${expr(s.e)}`;
    case 'inlist': return `${v} in [${list(s.list.map(expr), s.tc)}]`;
    default: throw new Error(`bad scope ${s.op}`);
  }
}

export function policyText(p) {
  let out = '';
  if (p.comment) out += `// ${p.comment}\n`;
  for (const [k, v] of p.annotations) out += v === null ? `@${k}\n` : `@${k}(${cedarString(v, 'std')})\n`;
  const sep = p.multiline ? ',\n  ' : ', ';
  out += `${p.effect}(${p.multiline ? '\n  ' : ''}${scopeText('principal', p.principal)}${sep}` +
    `${scopeText('action', p.action)}${sep}${scopeText('resource', p.resource)}` +
    `${p.scopeTc ? ',' : ''}${p.multiline ? '\n' : ''})`;
  for (const c of p.conds) out += `\n${c.kind} { ${expr(c.body)} }`;
  return out + ';\n';
}

export const policySetText = (ps) => ps.map((p) => respace(policyText(p), p.ws)).join('\n');

// ---------------------------------------------------------------------------------------
// Whitespace variety. Cedar skips any Unicode White_Space and `//` comments between tokens;
// respace() rewrites some of the single spaces outside string literals accordingly. It is
// driven by its own small deterministic generator (ws.seed), so a shrunk AST re-prints the
// same way.

const WS = {
  ascii: ['\t', '\n', '\r\n', '\r', '\u000b', '\u000c', '  '],
  unicode: ['\u00a0', '\u2028', '\u2029', '\u3000', '\u1680', '\u2003', '\u200a', '\u202f', '\u205f', '\u0085'],
  comments: [' // c\n', '//\n', ' // "not a string\n', '\n// line\n', ' //\u00e9*\\\n'],
};

export function respace(text, ws) {
  if (!ws) return text;
  let x = ws.seed >>> 0;
  const next = () => { x = (Math.imul(x, 1664525) + 1013904223) >>> 0; return x / 4294967296; };
  const pool = WS[ws.style];
  let out = '', inStr = false, inComment = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inComment) { out += ch; if (ch === '\n') inComment = false; continue; }
    if (inStr) {
      out += ch;
      if (ch === '\\') { out += text[++i]; continue; }
      if (ch === '"') inStr = false;
      continue;
    }
    if (ch === '"') { inStr = true; out += ch; continue; }
    if (ch === '/' && text[i + 1] === '/') { inComment = true; out += ch; continue; }
    if (ch === ' ' && next() < ws.rate) { out += pool[Math.floor(next() * pool.length)]; continue; }
    out += ch;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Schema (.cedarschema). Type model:
//   {k:'Long'|'String'|'Bool', cedar?:true}  (cedar: print with the __cedar:: prefix)
//   {k:'Entity', name}                       (name relative to the namespace)
//   {k:'Set', elem}, {k:'Record', attrs:[{name, type, req, ann?}]}
//   {k:'Ext', name, cedar?}, {k:'Common', name}

function schemaName(s, quote) {
  return !quote && isSchemaIdent(s) ? s : cedarString(s, 'std');
}

export function schemaType(t, ns, ind = '') {
  switch (t.k) {
    case 'Long': case 'String': case 'Bool':
      return (t.cedar ? '__cedar::' : '') + t.k;
    case 'Ext': return (t.cedar ? '__cedar::' : '') + t.name;
    case 'Entity': return t.qualified && ns ? `${ns}::${t.name}` : t.name;
    case 'Common': return t.name;
    case 'Set': return `Set<${schemaType(t.elem, ns, ind)}>`;
    case 'Record': {
      if (t.attrs.length === 0) return '{}';
      const inner = ind + '  ';
      const lines = t.attrs.map((a) => `${inner}${a.ann ? `@${a.ann} ` : ''}${schemaName(a.name, a.quote)}${a.req ? '' : '?'}: ${schemaType(a.type, ns, inner)}`);
      return `{\n${lines.join(',\n')}${t.tc ? ',' : ''}\n${ind}}`;
    }
    default: throw new Error(`bad schema type ${t.k}`);
  }
}

export function schemaText(s) {
  const ns = s.ns;
  const ind = ns ? '  ' : '';
  const decls = [];
  for (const c of s.commonTypes) decls.push(`${ind}type ${c.name} = ${schemaType(c.type, ns, ind)};`);
  for (const e of s.entityTypes) {
    if (e.twinOf) continue; // printed together with the type it shares a declaration with
    const names = [e.name, ...s.entityTypes.filter((x) => x.twinOf === e.name).map((x) => x.name)];
    let d = `${ind}${e.ann ? `@${e.ann}\n${ind}` : ''}entity ${names.join(', ')}`;
    if (e.enumIds) {
      decls.push(`${d} enum [${e.enumIds.map((i) => cedarString(i, 'std')).join(', ')}];`);
      continue;
    }
    if (e.parents.length) d += ` in [${e.parents.map((p) => (e.qualifyParents && ns ? `${ns}::${p}` : p)).join(', ')}]`;
    if (e.shape) d += `${e.eq ? ' =' : ''} ${schemaType(e.shape, ns, ind)}`;
    if (e.tags) d += ` tags ${schemaType(e.tags, ns, ind)}`;
    decls.push(d + ';');
  }
  for (const a of s.actions) {
    let d = `${ind}action ${schemaName(a.name, a.quote)}`;
    if (a.parents.length) d += ` in [${a.parents.map((p) => schemaName(p, true)).join(', ')}]`;
    if (a.appliesTo) {
      const ap = a.appliesTo;
      const inner = ind + '  ';
      const parts = [`${inner}principal: [${ap.principals.join(', ')}]`, `${inner}resource: [${ap.resources.join(', ')}]`];
      if (ap.context) parts.push(`${inner}context: ${schemaType(ap.context, ns, inner)}`);
      d += ` appliesTo {\n${parts.join(',\n')}\n${ind}}`;
    }
    decls.push(d + ';');
  }
  const body = decls.join('\n');
  return ns ? `${s.nsAnn ? `@${s.nsAnn}\n` : ''}namespace ${ns} {\n${body}\n}\n` : body + '\n';
}

// ---------------------------------------------------------------------------------------
// JSON. The data model keeps every Long as a JS number within ±2^53 (cedar-wasm receives
// JS values and cannot take larger integers exactly), so JSON.stringify is exact.

export const jsonText = (v) => JSON.stringify(v, null, 1) + '\n';
