// toml-diff.mjs - differential test of cairn's TOML reader (src/config/toml.c,
// through build/toml-dump) against smol-toml.
//
//   node tests/diff/toml-diff.mjs --dump build/toml-dump --cases N --seed S [--show K] [--save DIR]
//
// A seeded generator writes documents of every TOML 1.0 construct, valid ones
// and mutations of them (deleted, duplicated or swapped lines and characters,
// bad escapes, overflowing integers, impossible dates, redefinitions). Every
// document goes to both parsers; they agree when both accept with equal values
// (compared by type, after normalising) or both reject. toml-dump runs once in
// --batch mode over NUL-separated documents, so thousands of cases take seconds.
//
// smol-toml implements TOML 1.1 and is lenient in places, where cairn reads
// TOML 1.0 strictly; KNOWN_DIFFERENCES below lists each such disagreement with
// why smol-toml, not our reader, departs from TOML 1.0. A disagreement is
// "known" only when our error message names that exact rule and smol-toml
// accepted; anything else counts as a failure. The last line is
// `N passed, M failed` (known differences are passed, and counted apart).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, TomlDate } from 'smol-toml';

// ---- known differences ------------------------------------------------------
//
// Each entry: our error message matches `ours`, smol-toml accepted the document.
const KNOWN_DIFFERENCES = [
  // TOML 1.1 (which smol-toml 1.9 implements) allows newlines and a trailing
  // comma in inline tables; TOML 1.0 says "No newlines are allowed between the
  // curly braces unless they are valid within a value" and forbids the comma.
  { name: 'toml-1.1 inline table newline', ours: /^newline in an inline table/ },
  { name: 'toml-1.1 inline table trailing comma', ours: /^trailing comma in an inline table/ },
  // Comments inside an inline table come with those newlines in 1.1.
  { name: 'toml-1.1 inline table comment', ours: /^expected `,` or `}` in an inline table, found `#`/ },
  { name: 'toml-1.1 inline table comment', ours: /^expected a key, found `#`/, doc: /\{[^}]*#/ },
  // \e and \xHH are TOML 1.1 escapes; TOML 1.0 lists only \b \t \n \f \r \" \\ \u \U.
  { name: 'toml-1.1 escape \\e or \\x', ours: /^invalid escape `\\[ex]`|^invalid escape `\\[ex]/ },
  // TOML 1.1 makes the seconds of a time optional; 1.0's partial-time requires them.
  { name: 'toml-1.1 time without seconds', ours: /seconds are required/ },
  // smol-toml's README: "certain invalid datetimes (e.g. 2020-02-30) are
  // gracefully accepted" (JavaScript's Date rolls them over to March 1).
  { name: 'smol-toml accepts impossible dates', ours: /^day \d+ out of range/ },
  // Ours: a finite float literal that rounds to infinity is refused instead of
  // silently becoming inf (TOML 1.0 only says floats are binary64); smol-toml
  // yields Infinity. A deliberate strictness, not a smol-toml bug.
  { name: 'float overflow refused by cairn', ours: /^float `.*` is out of range/ },
  // TOML 1.0: integers are 64-bit and "If an integer cannot be represented
  // losslessly, an error must be thrown"; with integersAsBigInt smol-toml
  // returns any BigInt instead.
  // smol-toml reads `2601-"2-31` as 2601-03-03; nothing that starts with
  // four digits and `-` is valid TOML unless it is YYYY-MM-DD.
  { name: 'smol-toml accepts malformed dates', ours: /^invalid date: expected YYYY-MM-DD/ },
  // [[a.b.c]] then [a] then `b.d = 1`: a.b, created by the first header, gets
  // key/value pairs from dotted keys under another header. TOML 1.0: a table
  // that dotted keys define "must have all its key/value pairs defined under
  // the current [table] header". smol-toml itself rejects the same document
  // with [a.b.c] in place of [[a.b.c]]; we treat both alike.
  { name: 'smol-toml lets dotted keys extend a table made by an [[array]] header',
    ours: /^cannot add to table `.*` with dotted keys: it was created by the header/ },
  { name: 'smol-toml accepts integers beyond 64 bits', ours: /^integer `.*` does not fit in 64 bits/ },
];

// Both accept but values differ, and smol-toml's value is the wrong one.
const KNOWN_VALUE_DIFFS = [
  // JavaScript's Date misreads fractional seconds of 10 or more digits
  // (".0597366507" becomes .597); TOML 1.0 says extra precision "must be
  // truncated, not rounded", and we truncate to nanoseconds.
  { name: 'smol-toml misreads fractions of 10+ digits', doc: /:\d\d\.\d{10,}/, why: /: (\d{4}-\d\d-\d\d|\d\d:\d\d)\S* vs \S+$/ },
];

// smol-toml rejects what TOML 1.0 allows: matched on the document when we accept.
const KNOWN_SMOL_REJECTS = [
  // RFC 3339 (which TOML 1.0 cites) allows second 60 for a leap second;
  // JavaScript's Date does not, so smol-toml says "invalid date".
  { name: 'smol-toml rejects leap second :60', doc: /\d\d:\d\d:60/ },
];

// ---- arguments ----------------------------------------------------------------

function args() {
  const a = { dump: 'build/toml-dump', cases: 2000, seed: 1, show: 5, save: null };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a) || i + 1 >= v.length) {
      console.error('usage: toml-diff.mjs --dump PATH --cases N --seed S [--show K] [--save DIR]');
      process.exit(2);
    }
    a[k] = k === 'dump' || k === 'save' ? v[++i] : Number(v[++i]);
  }
  return a;
}

// ---- random -------------------------------------------------------------------

function rng(seed) {
  // sfc32 seeded through splitmix32: stable on every Node version.
  let x = seed | 0;
  const sm = () => {
    x = (x + 0x9e3779b9) | 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = sm(), b = sm(), c = sm(), d = sm();
  const next = () => {
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  const r = {
    f: next,
    int: (n) => Math.floor(next() * n),
    range: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    chance: (p) => next() < p,
  };
  return r;
}

// ---- generator: pieces ----------------------------------------------------------

const BARE = ['a', 'b', 'c', 'key', 'name', 'x', 'y', 'server', 'port', '1', '2_0', 'true',
  'inf', 'A-b_c', '-', '_', 'ümlaut'];
const UNICODE = ['é', 'ß', '日本', '😀', '\u2028', '\u00a0', 'Ω', '\u{10FFFF}', '\uFEFF'];

function digits(r, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += String(r.int(10));
  return s;
}

function underscored(r, s) {
  // put single underscores between some digits
  if (s.length < 2 || !r.chance(0.3)) return s;
  let o = s[0];
  for (let i = 1; i < s.length; i++) o += (r.chance(0.3) ? '_' : '') + s[i];
  return o;
}

function genInt(r) {
  switch (r.int(9)) {
    case 0: return r.pick(['0', '+0', '-0', '9223372036854775807', '-9223372036854775808', '1', '-1']);
    case 1: return '0x' + underscored(r, r.pick(['DEADBEEF', 'dead_beef'.replace('_', ''), '7fffffffffffffff', '0', '00ff', 'aBcD']));
    case 2: return '0o' + underscored(r, r.pick(['777', '0', '755', '777777777777777777777']));
    case 3: return '0b' + underscored(r, r.pick(['1', '0', '101010', '0111']));
    case 4: return r.pick(['', '+', '-']) + underscored(r, String(r.range(1, 9)) + digits(r, r.int(18)));
    default: return r.pick(['', '-']) + underscored(r, String(r.range(1, 9)) + digits(r, r.int(6)));
  }
}

function genFloat(r) {
  const sign = r.pick(['', '', '+', '-']);
  switch (r.int(8)) {
    case 0: return sign + r.pick(['inf', 'nan']);
    case 1: return sign + r.pick(['0.0', '0e0', '0E-0', '1e+1', '1E1', '5e-324', '1.7976931348623157e308', '3.141592653589793']);
    case 2: return sign + underscored(r, String(r.range(1, 9)) + digits(r, r.int(4))) + 'e' + r.pick(['', '+', '-']) + underscored(r, digits(r, r.range(1, 3)));
    default: {
      const ip = r.chance(0.3) ? '0' : underscored(r, String(r.range(1, 9)) + digits(r, r.int(5)));
      const fp = underscored(r, digits(r, r.range(1, 8)));
      const ex = r.chance(0.3) ? r.pick(['e', 'E']) + r.pick(['', '+', '-']) + digits(r, r.range(1, 2)) : '';
      return sign + ip + '.' + fp + ex;
    }
  }
}

function pad(n, w) { return String(n).padStart(w, '0'); }

function genDate(r) {
  const y = r.chance(0.2) ? r.pick([0, 1, 1900, 2000, 2024, 2100, 9999]) : r.range(1000, 2999);
  const m = r.range(1, 12);
  const dim = [31, (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
  const d = r.chance(0.2) ? dim : r.range(1, dim);
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`;
}

function genTime(r) {
  let t = `${pad(r.range(0, 23), 2)}:${pad(r.range(0, 59), 2)}:${pad(r.range(0, 59), 2)}`;
  if (r.chance(0.4)) t += '.' + digits(r, r.pick([1, 2, 3, 3, 6, 9, 12]));
  return t;
}

function genDatetime(r) {
  switch (r.int(4)) {
    case 0: return genDate(r);
    case 1: return genTime(r);
    case 2: return genDate(r) + r.pick(['T', 't', ' ']) + genTime(r);
    default: {
      const off = r.chance(0.4) ? r.pick(['Z', 'z']) :
        r.pick(['+', '-']) + pad(r.range(0, 23), 2) + ':' + pad(r.range(0, 59), 2);
      return genDate(r) + r.pick(['T', 't', ' ']) + genTime(r) + off;
    }
  }
}

function strChar(r) {
  switch (r.int(10)) {
    case 0: return r.pick(UNICODE);
    case 1: return r.pick(['\t', ' ', '#', '=', '[', ']', '{', '}', ',', '.']);
    default: return r.pick('abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 -_'.split(''));
  }
}

function escapeBasic(r, s) {
  let o = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') o += '\\' + ch;
    else if (ch === '\t' && r.chance(0.5)) o += '\\t';
    else if (cp < 0x20 || cp === 0x7f) o += '\\u' + cp.toString(16).padStart(4, '0');
    else if (cp > 0x7f && r.chance(0.3)) o += cp > 0xffff ? '\\U' + cp.toString(16).padStart(8, '0') : '\\u' + cp.toString(16).toUpperCase().padStart(4, '0');
    else o += ch;
  }
  return o;
}

function genString(r, allowMulti = true) {
  let s = '';
  const n = r.int(12);
  for (let i = 0; i < n; i++) s += strChar(r);
  const form = allowMulti ? r.int(6) : r.int(2);
  switch (form) {
    case 0: {  // basic, with escapes
      let body = escapeBasic(r, s);
      if (r.chance(0.3)) body += r.pick(['\\b', '\\t', '\\n', '\\f', '\\r', '\\"', '\\\\', '\\u0000', '\\u00E9', '\\U0001F600', '\\u001F']);
      return '"' + body + '"';
    }
    case 1:   // literal
      return "'" + s.replace(/'/g, '') + "'";
    case 2: case 3: {  // multi-line basic
      let body = escapeBasic(r, s).replace(/\\t/g, '\t');
      if (r.chance(0.3)) body += '\\\n   ' + escapeBasic(r, 'more');
      if (r.chance(0.3)) body = '\n' + body;
      if (r.chance(0.3)) body += 'line\nnext';
      if (r.chance(0.3)) body += r.pick(['"', '""', '\\"\\"\\"', ' \\  \n\n  x']);
      return '"""' + body + '"""';
    }
    default: {  // multi-line literal
      let body = s.replace(/'/g, '');
      if (r.chance(0.3)) body = '\n' + body;
      if (r.chance(0.3)) body += 'a\\b\nc\td';
      if (r.chance(0.3)) body += r.pick(["'", "''"]);
      return "'''" + body + "'''";
    }
  }
}

function genKeyPart(r) {
  switch (r.int(8)) {
    case 0: return '"' + escapeBasic(r, r.pick(BARE.concat(['a.b', 'with space', '', 'é', '"q"', 'tab\t']))) + '"';
    case 1: return "'" + r.pick(['a.b', 'with space', '', 'lit"', 'x']) + "'";
    default: return r.pick(BARE.slice(0, 13));
  }
}

function genKey(r) {
  const n = r.chance(0.7) ? 1 : r.range(2, 3);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(genKeyPart(r));
  return parts.join(r.pick(['.', '.', ' . ', '.\t']));
}

function genArray(r, depth) {
  const n = r.int(5);
  const items = [];
  for (let i = 0; i < n; i++) items.push(genValue(r, depth + 1));
  const sep = () => r.chance(0.2) ? ',\n  ' : r.chance(0.1) ? ', # note\n ' : r.pick([',', ', ', ' ,']);
  let s = '[' + (r.chance(0.2) ? '\n  ' : '');
  s += items.join(sep());
  if (n > 0 && r.chance(0.3)) s += ',';
  if (r.chance(0.2)) s += r.chance(0.5) ? '\n' : ' # c\n';
  return s + ']';
}

function genInline(r, depth) {
  const n = r.int(4);
  const used = new Set();
  const parts = [];
  for (let i = 0; i < n; i++) {
    let k = genKey(r);
    if (used.has(k) && r.chance(0.8)) continue;
    used.add(k);
    parts.push(k + r.pick(['=', ' = ', '= ']) + genValue(r, depth + 1, false));
  }
  return '{' + (parts.length && r.chance(0.5) ? ' ' : '') + parts.join(r.pick([', ', ',', ' , '])) +
    (parts.length && r.chance(0.5) ? ' ' : '') + '}';
}

function genValue(r, depth = 0, multiLine = true) {
  const k = r.int(depth > 3 ? 6 : 8);
  switch (k) {
    case 0: return genString(r, multiLine);
    case 1: return genInt(r);
    case 2: return genFloat(r);
    case 3: return r.pick(['true', 'false']);
    case 4: return genDatetime(r);
    case 5: return genString(r, multiLine);
    case 6: return genArray(r, depth);
    default: return genInline(r, depth);
  }
}

// A whole document: a root block, then sections with headers. Paths come from
// a small vocabulary so that implicit tables, dotted keys, [[arrays]] and
// inline tables meet (and sometimes collide) often.
function genDocument(r) {
  const lines = [];
  const nl = r.chance(0.1) ? '\r\n' : '\n';
  const kvBlock = () => {
    const n = r.int(5);
    const used = new Set();
    for (let i = 0; i < n; i++) {
      let k = genKey(r);
      if (used.has(k) && r.chance(0.9)) continue;
      used.add(k);
      let line = (r.chance(0.1) ? '  ' : '') + k + r.pick([' = ', '=', ' =\t']) + genValue(r);
      if (r.chance(0.15)) line += r.pick([' # comment', '# é', '\t#']);
      lines.push(line);
      if (r.chance(0.1)) lines.push(r.pick(['', '# just a comment', '   ', '#']));
    }
  };
  kvBlock();
  const sections = r.int(5);
  for (let i = 0; i < sections; i++) {
    const depth = r.range(1, 3);
    const parts = [];
    for (let j = 0; j < depth; j++) parts.push(r.chance(0.85) ? r.pick(['a', 'b', 'c', 'srv', 'x']) : genKeyPart(r));
    const path = parts.join(r.pick(['.', ' . ']));
    const header = r.chance(0.3) ? '[[' + path + ']]' : r.chance(0.1) ? '[ ' + path + ' ]' : '[' + path + ']';
    lines.push(header + (r.chance(0.1) ? ' # header' : ''));
    kvBlock();
  }
  return lines.join(nl) + (r.chance(0.8) ? nl : '');
}

// ---- generator: invalid documents and mutations ---------------------------------

const INVALID_SNIPPETS = [
  'a = 01', 'a = +0x10', 'a = 0x', 'a = 1__0', 'a = _1', 'a = 1_', 'a = 0o8', 'a = 0b2',
  'a = 9223372036854775808', 'a = -9223372036854775809', 'a = 0xFFFFFFFFFFFFFFFF',
  'a = 1.', 'a = .1', 'a = 1e', 'a = 1.e5', 'a = 01.5', 'a = 1._5', 'a = 1e_5', 'a = infinity',
  'a = +nan_', 'a = NaN', 'a = Inf', 'a = 1,000', 'a = 0_0',
  'a = "\\q"', 'a = "\\ "', 'a = "\\uD800"', 'a = "\\U00110000"', 'a = "\\u12"', 'a = "\\x41"',
  'a = "\\e"', 'a = "unterminated', "a = 'unterminated", 'a = """open', "a = '''open",
  'a = "new\nline"', "a = 'new\nline'", 'a = """x""""""', "a = '''x''''''",
  'a = 2023-02-29', 'a = 2024-13-01', 'a = 2024-00-10', 'a = 2024-04-31', 'a = 2024-01-32',
  'a = 24:00:00', 'a = 12:60:00', 'a = 12:00:61', 'a = 12:00', 'a = 2024-01-01T12:00',
  'a = 2024-01-01T12:00:00+24:00', 'a = 2024-01-01T12:00:00+1:00', 'a = 2024-1-01',
  'a = 12:00:00Z', 'a = 2024-01-01T12:00:00.', 'a = 2024-01-01X12:00:00',
  'a = 1\na = 2', '[t]\n[t]', '[t]\nx=1\n[t]', 'a.b = 1\n[a]', 'a.b = 1\n[a.b]', 'a = {}\n[a]',
  'a = {b=1}\na.c = 2', '[[a]]\n[a]', '[a]\n[[a]]', 'a = []\n[[a]]', 'a = [{}]\n[[a]]',
  '[a.b]\n[a]\nb.c = 1', '[a]\nb.c = 1\n[a.b]', 'a = {b.c = 1}\n[a.b.d]', 'a.b = 1\na.b.c = 2',
  'a = 1\n[a.b]', 'a = {b = 1, b = 2}', 'a = {b = 1,}', 'a = {\nb = 1}', 'a = {b = 1 c = 2}',
  'a = [1 2]', 'a = [1,,2]', 'a = [,]', 'a = [1', 'a = {', 'a =', '= 1', 'a b = 1', 'a. = 1',
  '.a = 1', 'a..b = 1', '[a', '[a]]', '[[a]', '[ [a]]', '[]', '[[]]', '[a.]', 'a = 1 b = 2',
  '[a] b = 1', 'a = true1', 'a = truee', 'a = tru', 'a = "x" "y"', '"""k""" = 1', 'a\n= 1',
  'a = 1\r', 'a\r= 1', '# c\r', 'a = "x\x01"', "a = 'x\x7f'", '# \x00', 'a = """\x08"""',
  'a = "\r"', 'a = 1e400', 'a = -1e999', 'a = 2024-01-01T00:00:60Z', 'a = {a = 1}\na.a = 2',
  'a = [[1], [2]]\n[[a]]', 'a = "x"\n[[a.b]]', '[[a.b]]\n[a]\n[a.b]',
];

const INTERESTING = ['"', "'", '[', ']', '{', '}', '=', ',', '.', '#', '\\', '\n', '\r', '\t',
  ' ', '_', '-', '+', ':', '0', '1', 'e', 'x', 'T', 'Z', '\x00', '\x01', '\x7f', 'é', '😀', '\u2028'];

function mutate(r, doc) {
  const lines = doc.split('\n');
  switch (r.int(10)) {
    case 0: { // delete a line
      if (lines.length > 1) lines.splice(r.int(lines.length), 1);
      return lines.join('\n');
    }
    case 1: { // duplicate a line
      const i = r.int(lines.length);
      lines.splice(r.int(lines.length + 1), 0, lines[i]);
      return lines.join('\n');
    }
    case 2: { // swap two lines
      const i = r.int(lines.length), j = r.int(lines.length);
      [lines[i], lines[j]] = [lines[j], lines[i]];
      return lines.join('\n');
    }
    case 3: { // swap adjacent characters
      const a = [...doc];
      if (a.length < 2) return doc;
      const i = r.int(a.length - 1);
      [a[i], a[i + 1]] = [a[i + 1], a[i]];
      return a.join('');
    }
    case 4: { // insert an interesting character
      const a = [...doc];
      a.splice(r.int(a.length + 1), 0, r.pick(INTERESTING));
      return a.join('');
    }
    case 5: { // delete a character
      const a = [...doc];
      if (a.length) a.splice(r.int(a.length), 1);
      return a.join('');
    }
    case 6: { // replace a character
      const a = [...doc];
      if (a.length) a[r.int(a.length)] = r.pick(INTERESTING);
      return a.join('');
    }
    case 7: // truncate
      return [...doc].slice(0, r.int([...doc].length + 1)).join('');
    case 8: { // bad escape / overflow / bad date spliced into a value
      return doc.replace(/"[^"\n]*"|\b\d{4}-\d\d-\d\d\b|\b\d+\b/, (m) => {
        if (m.startsWith('"')) return '"' + r.pick(['\\q', '\\a', '\\x41', '\\e', '\\u', '\\uDFFF', '\\U0011FFFF', '\\\n']) + m.slice(1);
        if (m.includes('-')) return r.pick(['2023-02-29', '2024-02-30', '2024-06-31', '1999-13-01']);
        return r.pick(['9223372036854775808', '99999999999999999999', '0xffffffffffffffff1', '00']);
      });
    }
    default: { // redefinition: repeat a header or a key line at the end
      const cands = lines.filter((l) => /^\s*\[|^\s*[\w"'.-]+\s*=/.test(l));
      if (!cands.length) return doc;
      return doc + (doc.endsWith('\n') ? '' : '\n') + r.pick(cands) + '\n';
    }
  }
}

function genCase(r) {
  const k = r.int(10);
  if (k < 4) return genDocument(r);
  if (k < 6) {
    let d = r.pick(INVALID_SNIPPETS);
    if (r.chance(0.5)) d = genDocument(r) + d + '\n';
    return d;
  }
  let d = genDocument(r);
  const n = r.range(1, 2);
  for (let i = 0; i < n; i++) d = mutate(r, d);
  return d;
}

// ---- comparing ----------------------------------------------------------------

// toml-test encoding of a smol-toml value.
function tag(v) {
  if (typeof v === 'string') return { type: 'string', value: v };
  if (typeof v === 'bigint') return { type: 'integer', value: String(v) };
  if (typeof v === 'number') return { type: 'float', value: v };
  if (typeof v === 'boolean') return { type: 'bool', value: String(v) };
  if (v instanceof TomlDate) {
    const type = v.isDate() ? 'date-local' : v.isTime() ? 'time-local' : v.isLocal() ? 'datetime-local' : 'datetime';
    return { type, value: v.toISOString() };
  }
  if (Array.isArray(v)) return v.map(tag);
  const o = {};
  for (const k of Object.keys(v)) o[k] = tag(v[k]);
  return o;
}

// Date-times to one shape: fraction to milliseconds (smol-toml keeps no more),
// offset as +HH:MM (Z, z and -00:00 all mean UTC+0 in TOML).
function normDate(s) {
  const m = /^(\d{4}-\d\d-\d\d)?T?(\d\d:\d\d:\d\d)?(?:\.(\d+))?(Z|z|[+-]\d\d:\d\d)?$/.exec(s);
  if (!m) return s;
  let out = m[1] ?? '';
  if (m[1] && m[2]) out += 'T';
  if (m[2]) out += m[2] + '.' + (m[3] ?? '').slice(0, 3).padEnd(3, '0');
  if (m[4]) out += /^[Zz]$|^-00:00$/.test(m[4]) ? '+00:00' : m[4];
  return out;
}

function floatOf(s) {
  if (typeof s === 'number') return s;
  if (s === 'nan') return NaN;
  if (s === 'inf') return Infinity;
  if (s === '-inf') return -Infinity;
  return Number(s);
}

function isScalar(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.type === 'string' &&
    'value' in v && Object.keys(v).length === 2;
}

// Where a and b differ (a path and a reason), or null. Tables compare as sets
// of keys: smol-toml's objects put integer-like keys first.
function diff(a, b, path = '') {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return `${path}: array vs non-array`;
    if (a.length !== b.length) return `${path}: length ${a.length} vs ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = diff(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  const sa = isScalar(a), sb = isScalar(b);
  if (sa && sb && !(typeof a.value === 'object' || typeof b.value === 'object')) {
    if (a.type !== b.type) return `${path}: type ${a.type} vs ${b.type}`;
    if (a.type === 'float') {
      const x = floatOf(a.value), y = floatOf(b.value);
      if (Number.isNaN(x) && Number.isNaN(y)) return null;
      return Object.is(x, y) ? null : `${path}: float ${a.value} vs ${b.value}`;
    }
    if (a.type.startsWith('date') || a.type.startsWith('time')) {
      return normDate(a.value) === normDate(b.value) ? null : `${path}: ${a.value} vs ${b.value}`;
    }
    // CRLF inside multi-line strings: TOML lets a parser normalise newlines
    const na = a.type === 'string' ? a.value.replace(/\r\n/g, '\n') : a.value;
    const nb = b.type === 'string' ? b.value.replace(/\r\n/g, '\n') : b.value;
    return na === nb ? null : `${path}: ${JSON.stringify(a.value)} vs ${JSON.stringify(b.value)}`;
  }
  if (sa !== sb && (sa || sb) && !(typeof (sa ? a : b).value === 'object')) return `${path}: scalar vs table`;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return `${path}: shape`;
  const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
  if (ka.join('\0') !== kb.join('\0')) return `${path}: keys [${ka}] vs [${kb}]`;
  for (const k of ka) {
    const d = diff(a[k], b[k], `${path}.${JSON.stringify(k)}`);
    if (d) return d;
  }
  return null;
}

// ---- run ----------------------------------------------------------------------

function main() {
  const a = args();
  const r = rng(a.seed);
  const docs = [];
  for (let i = 0; i < a.cases; i++) {
    let s = genCase(r);
    // a document cannot carry NUL through the batch framing; test NUL as \x00 → U+0000 escape text
    s = s.replace(/\x00/g, '\x01');
    docs.push(Buffer.from(s, 'utf8'));
  }
  // a few documents with invalid UTF-8, which smol-toml (reading a JS string) cannot see
  const rb = rng(a.seed ^ 0x5eed);
  const badUtf8 = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x80]];
  for (let i = 0; i < docs.length; i += 97) {
    const b = rb.pick(badUtf8);
    const at = Buffer.from(rb.pick(['a = "', '# ', "a = '", 'a = """', "'", '']), 'utf8');
    docs[i] = Buffer.concat([at, Buffer.from(b), Buffer.from(rb.chance(0.5) ? '"\n' : '\n')]);
  }

  const input = Buffer.concat(docs.flatMap((d) => [d, Buffer.from([0])]));
  const res = spawnSync(a.dump, ['--batch'], { input, maxBuffer: 1 << 30 });
  if (res.status !== 0) {
    console.error(`toml-dump --batch failed: status ${res.status} ${res.stderr}`);
    process.exit(2);
  }
  const outs = res.stdout.toString('utf8').split('\n').filter((l) => l.length);
  if (outs.length !== docs.length) {
    console.error(`toml-dump gave ${outs.length} results for ${docs.length} documents`);
    process.exit(2);
  }

  let passed = 0, failed = 0, acc = 0, rej = 0;
  const known = new Map();
  const failures = [];
  const dec = new TextDecoder('utf-8', { fatal: true });
  for (let i = 0; i < docs.length; i++) {
    const ours = JSON.parse(outs[i]);
    let text = null, theirs;
    try {
      text = dec.decode(docs[i]);
    } catch {
      theirs = { ok: false, error: 'invalid UTF-8 (not given to smol-toml)' };
    }
    if (text !== null) {
      try {
        theirs = { ok: true, value: tag(parse(text, { integersAsBigInt: true })) };
      } catch (e) {
        theirs = { ok: false, error: String(e.message).split('\n')[0] };
      }
    }
    let why = null;
    if (ours.ok && theirs.ok) why = diff(ours.value, theirs.value);
    else if (ours.ok !== theirs.ok) why = ours.ok ? 'cairn accepts, smol-toml rejects' : 'cairn rejects, smol-toml accepts';
    if (!why) {
      passed++;
      ours.ok ? acc++ : rej++;
      continue;
    }
    let k = null;
    if (ours.ok && theirs.ok) {
      k = KNOWN_VALUE_DIFFS.find((x) => x.doc.test(text) && x.why.test(why));
    } else if (!ours.ok && theirs.ok) {
      k = KNOWN_DIFFERENCES.find((x) => x.ours.test(ours.error) && (!x.doc || x.doc.test(text)));
    } else if (ours.ok && !theirs.ok) {
      k = KNOWN_SMOL_REJECTS.find((x) => x.doc.test(text));
    }
    if (k) {
      passed++;
      known.set(k.name, (known.get(k.name) ?? 0) + 1);
      continue;
    }
    failed++;
    failures.push({ i, doc: text ?? docs[i].toString('latin1'), ours, theirs, why });
  }

  for (const f of failures.slice(0, a.show)) {
    console.log(`--- case ${f.i} (seed ${a.seed}): ${f.why}`);
    console.log(JSON.stringify(f.doc));
    console.log('cairn:     ' + (f.ours.ok ? JSON.stringify(f.ours.value) : `${f.ours.line}:${f.ours.col}: ${f.ours.error}`));
    console.log('smol-toml: ' + (f.theirs.ok ? JSON.stringify(f.theirs.value) : f.theirs.error));
  }
  if (a.save && failures.length) {
    mkdirSync(a.save, { recursive: true });
    for (const f of failures) writeFileSync(join(a.save, `case-${a.seed}-${f.i}.toml`), docs[f.i]);
  }
  console.log(`agreed: ${acc} accepted by both, ${rej} rejected by both`);
  for (const [name, n] of known) console.log(`known difference: ${name}: ${n}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
