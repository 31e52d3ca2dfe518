// Value pools for the generator. Drawing literals and data from the same small pools is what
// makes comparisons in generated policies come out true often enough to be interesting.

export const I64_MAX = 9223372036854775807n;
export const I64_MIN = -9223372036854775808n;
// cedar-wasm takes entities/context as JS values; integers beyond 2^53 do not survive that
// trip exactly, so data Longs stay within ±2^53 (policy literals cover the i64 edges).
export const DATA_LONG_MAX = 2 ** 53;

// Longs used both in data and as policy literals.
export const LONGS = [0, 1, -1, 2, 3, 7, 10, 42, 100, -5, 255, 1000, 65536, 2 ** 31, -(2 ** 31), 2 ** 32,
  DATA_LONG_MAX, -DATA_LONG_MAX, DATA_LONG_MAX - 1, 4294967295, 123456789];
// Extra literal-only Longs: the overflow edges.
export const EDGE_LONGS = [I64_MAX, I64_MIN, I64_MAX - 1n, I64_MIN + 1n, 3037000499n, 3037000500n,
  -3037000500n, 4611686018427387904n, -4611686018427387904n];

// Strings: plain, escapes, NUL and other controls, combining marks, astral plane, BIDI
// controls (validation warns about them but must not reject), things that look like syntax.
export const STRINGS = ['', 'a', 'abc', 'alice', 'Bob', 'ALICE', 'alice ', ' alice', 'a*b', '*', '**',
  '\\', '"', "'", 'x\0y', '\0', '\n', 'tab\there', 'cr\rlf\n', '\u0001\u001f\u007f', 'é', 'e\u0301',
  '日本語', '🦀', 'a🦀b', '\u{10FFFF}', '\u{FFFD}', 'ab'.repeat(20), '1.2.3.4', '2020-01-01', '1d2h',
  '0.5', 'Ω', '\u200e', 'abc\u202edef', 'policy0', 'true', 'has', 'User::"a"', '\\*', 'a\\*b', '%', '/*'];

// Entity ids. Includes the empty id, NUL, quotes, backslashes, unicode and syntax-like text.
export const IDS = ['alice', 'bob', 'carol', 'a', 'b', '', '0', '\0', 'a\0b', 'é', '日本', '🦀', 'with space',
  'quote"', "it's", 'back\\slash', 'new\nline', '*', '::', 'Group::"x"', 'x'.repeat(40), '\u0007bell',
  'tab\t', 'admin', 'root', 'g1', 'doc.txt', '\u{10FFFF}', 'αβγ', '-1'];

// Attribute / record-key names: identifiers, reserved words (need ["..."] / quoting), the
// variable names, schema keywords, and keys that are not identifiers at all.
export const ATTRS = ['name', 'age', 'n', 'flag', 'owner', 'manager', 'level', 'ip', 'addr', 'score', 'when',
  'ttl', 'kind', 'items', 'meta', 'a', 'b', 'c', 'x', 'y', 'z', 'in', 'if', 'has', 'is', 'like', 'then',
  'principal', 'context', 'Long', 'Set', 'entity', 'type', 'tags', 'with space', 'ünï', '', '\0', 'a"b',
  'a\\b', '*', '__cedar', 'id', 'parents', 'attrs', '__entity', '__extn', 'fn'];
// Names that are plain identifiers, for the extended `has a.b.c` form.
export const IDENT_ATTRS = ATTRS.filter((a) => /^[_a-zA-Z][_a-zA-Z0-9]*$/.test(a) &&
  !['true', 'false', 'if', 'then', 'else', 'in', 'like', 'has', 'is', '__cedar'].includes(a));

export const TAG_KEYS = ['t', 'role', 'x', '', 'é', 'a b', '\0', 'level', '*'];

export const TYPE_NAMES = ['User', 'Group', 'Doc', 'Folder', 'Team', 'Role', 'Res', 'Thing', 'a', 'B_2', '_u', 'Principal', 'Resource_', 'Kind'];
export const ENUM_NAMES = ['Color', 'Status', 'Level_', 'e'];
export const ENUM_IDS = ['red', 'green', 'gr\u00e9en', 'a\0b', 'blue', 'x y', '"q"', '🦀', 'Red'];
export const COMMON_NAMES = ['Addr', 'Info', 'Meta_T', 'Tuple', 'Ctx'];
export const ACTION_NAMES = ['read', 'write', 'view', 'edit', 'delete', 'admin ops', '"quoted"', 'é', 'list', 'share', 'r:w'];
export const GROUP_ACTION_NAMES = ['all', 'readers', 'writers', 'every "thing"'];
export const NAMESPACES = ['NS', 'App::Sub', 'a', 'Box_1'];

export const ANN_KEYS = ['id', 'doc', 'if', 'in', 'advice', 'x_1', 'true', 'principal'];

// Extension-function arguments. The "bad" ones must fail at evaluation (extension error);
// data values use only the good ones, since a bad one makes the whole entity file unloadable.
export const EXT = {
  ipaddr: {
    good: ['127.0.0.1', '10.0.0.1/8', '192.168.1.1/24', '224.0.0.1', '0.0.0.0/0', '255.255.255.255',
      '::1', '::', 'ff02::1', '2001:db8::/32', 'fe80::1/64', '::1/127', '127.1.2.3/7', '::ffff:1:2',
      '1:2:3:4:5:6:7:8/128', '1111:2222:3333:4444:5555:6666:7777:8888/128', '10.0.0.0/8', '10.1.2.3', '127.0.0.1/8', '224.0.0.0/3', 'ff00::/8', 'FF02::2'],
    bad: ['', '1.2.3', '01.2.3.4', '256.1.1.1', '1.2.3.4/33', '1.2.3.4/', '::1/129', '::ffff:1.2.3.4',
      '1.2.3.4 ', 'a::b::c', 'fe80::1%eth0', '1.2.3.4/08', ' ::1', '1:2:3:4:5:6:7:8:9', '::/0128', '1111:2222:3333:4444:5555:6666:7777:8888/0128'],
  },
  decimal: {
    good: ['0.0', '1.0', '-1.5', '123.4567', '922337203685477.5807', '-922337203685477.5808', '0.1234',
      '-0.0001', '007.1', '1.00', '2.5', '-0.0', '1.1'],
    bad: ['1', '1.', '.5', '1.23456', '922337203685477.5808', '-922337203685477.5809', '1e3', '+1.0',
      '1.0 ', '--1.0', '', 'abc', '1,0', '99999999999999999.0'],
  },
  datetime: {
    good: ['1970-01-01', '2020-02-29', '2024-12-31T23:59:59Z', '2000-01-01T00:00:00.123Z',
      '2000-01-01T00:00:00+0100', '2000-01-01T00:00:00.999-2359', '1969-12-31T23:59:59Z', '0000-01-01',
      '9999-12-31T23:59:59.999Z', '2020-01-01', '2020-01-01T12:00:00Z', '1900-03-01T00:00:00+2359'],
    bad: ['2021-02-29', '2020-13-01', '2020-1-01', '20-01-01', '2020-01-01T24:00:00Z',
      '2020-01-01T00:00:60Z', '2020-01-01Z', '2020-01-01T00:00:00', '2020-01-01T00:00:00+2400',
      '2020-01-01T00:00:00.12Z', '2020-01-01 ', '+2020-01-01', '2020-01-01T00:00:00+01:00', '', 'x',
      '2020-01-01T00:00:00+0160', '1900-02-29'],
  },
  duration: {
    good: ['0ms', '1d', '-1d2h3m4s5ms', '1h', '90m', '4m70s', '100ms', '106751991167d', '9223372036854775807ms',
      '-9223372036854775808ms', '153722867280912m', '1s', '59s', '1d1ms', '-0ms', '24h', '3600s'],
    bad: ['', '-', '1', '1x', '1s1d', '1d1d', '1.5h', 'd', '1 d', '+1d', '9223372036854775808ms',
      '106751991167300d', '2562047788015215h', '9223372036854776s', 'ms', '1D', '-1d-2h'],
  },
};
export const EXT_NAMES = ['ipaddr', 'decimal', 'datetime', 'duration'];
export const EXT_CTOR = { ipaddr: 'ip', decimal: 'decimal', datetime: 'datetime', duration: 'duration' };

// Drops keys (attribute names, record keys, tag keys) that fail keep(); for engines with a
// documented limitation, so that one known gap does not drown every other finding.
export function restrictPools(keep) {
  for (const arr of [ATTRS, IDENT_ATTRS, TAG_KEYS]) {
    const kept = arr.filter(keep);
    arr.length = 0;
    arr.push(...kept);
  }
}
