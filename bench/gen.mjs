// Deterministic workload generator for `make bench`: a policy set in Cedar syntax over the
// Box action schema (src/dogwood/engine/box-actions.cedarschema) and a list of requests against it.
//
//   generate({ nPolicies, nRequests, seed, shuffle }) -> { text, policies, requests }
//
// text      the policy set, one policy per line (Cedar ids policy0, policy1, … by position)
// policies  the structured form each line was printed from (effect, actions, conditions)
// requests  [{ action: "fs:read", context: {input: {...}} }]; principal Box::Agent::"self",
//           resource Box::Resource::"unused" for every one
//
// The mix ("realistic" for an agent sandbox): permits scoped to one Box action or to a list of
// related ones, with string equality, `like` on paths, `has` guards on optional shell
// arguments, numeric comparisons and operation-enum tests; a few unscoped rules; ~15% forbids.
// Conditions usually start with the most selective test (host, program, path), but in 30% of
// the rules that have several they come in random order (`shuffle`, default 0.3).
// Value pools (projects, hosts) grow with the policy count so that the share of requests that
// are allowed / forbidden / match nothing stays about the same at every size.
//
// Requests: half are built to satisfy a randomly chosen permit, 15% a randomly chosen forbid,
// the rest are drawn from the same pools with no target (mostly default-denied).  Whatever the
// targeting, the engines decide; the generator never predicts a decision.

// ---- seeded PRNG (sfc32 seeded through splitmix32; stable across Node versions) ----
function splitmix32(x) {
  return () => {
    x = (x + 0x9e3779b9) | 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  constructor(seed, stream = 0) {
    const sm = splitmix32((Math.imul(seed >>> 0, 0x2545f491) ^ Math.imul(stream >>> 0, 0x9e3779b1)) | 0);
    let a = sm(), b = sm(), c = sm(), d = sm();
    this.next = () => {
      a |= 0; b |= 0; c |= 0; d |= 0;
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) | 0;
      return (t >>> 0) / 4294967296;
    };
    for (let i = 0; i < 12; i++) this.next();
  }
  float() { return this.next(); }
  int(n) { return Math.floor(this.next() * n); }          // [0, n)
  range(lo, hi) { return lo + this.int(hi - lo + 1); }     // [lo, hi]
  pick(a) { return a[this.int(a.length)]; }
  chance(p) { return this.next() < p; }
  // pick by weight from [[weight, value], ...]
  weighted(pairs) {
    let total = 0;
    for (const [w] of pairs) total += w;
    let x = this.next() * total;
    for (const [w, v] of pairs) {
      if ((x -= w) < 0) return v;
    }
    return pairs[pairs.length - 1][1];
  }
}

// ---- the Box vocabulary ----
const FS_OPS = {
  'fs:read': ['Box::FsReadOperation', ['read_content', 'read_metadata', 'enumerate', 'read_link', 'change_dir', 'exec']],
  'fs:write': ['Box::FsWriteOperation', ['write_content', 'create_dir', 'set_permissions', 'symlink']],
  'fs:delete': ['Box::FsDeleteOperation', ['remove_file', 'remove_dir']],
  'fs:move': ['Box::FsMoveOperation', ['rename']],
};
const FS_ACTIONS = Object.keys(FS_OPS);
const HOME = '/home/dev';
const SUBDIRS = ['src', 'docs', 'test', 'build', 'lib', 'scripts', 'assets', 'include'];
const FILES = ['main.c', 'index.js', 'README.md', 'Makefile', 'config.json', 'notes.txt', 'a.out',
  'lib.rs', 'setup.py', 'Cargo.toml', 'package.json', 'data.csv'];
const SYS_DIRS = ['/usr/share', '/usr/lib', '/usr/include', '/etc', '/opt/tools', '/tmp', '/var/log'];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD'];
const PORTS = [443, 443, 443, 80, 8080, 22, 5432, 6379, 25, 9000];
const URL_PATHS = ['/v1', '/v2', '/api', '/static', '/graphql', '/upload', '/login', '/simple'];
const PROGRAMS = ['git', 'npm', 'node', 'make', 'gcc', 'ls', 'cat', 'grep', 'python3', 'cargo',
  'docker', 'curl', 'rm', 'cp', 'mv', 'tar', 'ssh', 'kubectl', 'go', 'pytest', 'sed', 'find'];
const ARG1 = {
  git: ['status', 'diff', 'log', 'push', 'pull', 'commit', 'fetch', 'clone', 'checkout'],
  npm: ['install', 'test', 'run', 'ci', 'publish'],
  cargo: ['build', 'test', 'run', 'publish'],
  docker: ['run', 'build', 'ps', 'pull', 'push'],
  kubectl: ['get', 'apply', 'delete', 'logs'],
  rm: ['-rf', '-f', '-r'],
  go: ['build', 'test', 'mod', 'run'],
  make: ['all', 'test', 'clean', 'install'],
  default: ['-l', '-v', '--help', '-r', '.', 'x'],
};
const arg1For = (prog) => ARG1[prog] || ARG1.default;

const lit = (s) => JSON.stringify(s);   // Cedar string literals: JSON escapes suffice here
const act = (a) => `Box::Action::${lit(a)}`;

// ---- pools that grow with n ----
function pools(n) {
  const nProj = Math.max(4, Math.ceil(n / 8));
  const nHost = Math.max(4, Math.ceil(n / 6));
  return {
    proj: (rng) => `${HOME}/proj${rng.int(nProj)}`,
    host: (rng) => rng.chance(0.8) ? `h${rng.int(nHost)}.example.com` : `svc${rng.int(nHost)}.internal.example.com`,
  };
}

// ---- conditions: printable, and each knows how to make an input satisfy it ----
//   {k:'eq', f, v}         context.input.f == v         (string, Long or Bool)
//   {k:'like', f, pat}     context.input.f like pat     (pat: string with *)
//   {k:'has_eq', f, v}     context.input has f && context.input.f == v
//   {k:'le'|'ge', f, v}    context.input.f <= v / >= v
//   {k:'op', f, type, id}  context.input.operation == Type::"id"
//   {k:'has_like', f, pat} context.input has f && context.input.f like pat   (unscoped rules)
//   {k:'has_seq', f, v}    context.input has f && context.input.f == v      (unscoped rules)
function condText(c) {
  const x = `context.input.${c.f}`;
  switch (c.k) {
    case 'eq': return `${x} == ${typeof c.v === 'string' ? lit(c.v) : String(c.v)}`;
    case 'like': return `${x} like ${lit(c.pat)}`;
    case 'has_eq': case 'has_seq': return `context.input has ${c.f} && ${x} == ${lit(c.v)}`;
    case 'has_like': return `context.input has ${c.f} && ${x} like ${lit(c.pat)}`;
    case 'le': return `${x} <= ${c.v}`;
    case 'ge': return `${x} >= ${c.v}`;
    case 'op': return `${x} == ${c.type}::${lit(c.id)}`;
    default: throw new Error(`condition kind ${c.k}`);
  }
}

// A string that `like pat` matches: a leading * becomes a project directory, any other *
// a relative path (after a '/' if the literal before it does not end in one).
function fillPattern(rng, P, pat) {
  return pat.split('*').map((part, i, a) => {
    if (i === a.length - 1) return part;
    if (i === 0 && part === '') return P.proj(rng) + (rng.chance(0.5) ? `/${rng.pick(SUBDIRS)}` : '');
    return part + (part.endsWith('/') ? '' : '/') + randSeg(rng);
  }).join('');
}
function randSeg(rng) {
  return rng.chance(0.5) ? `${rng.pick(SUBDIRS)}/${rng.pick(FILES)}` : rng.pick(FILES);
}

function applyCond(rng, P, input, c) {
  switch (c.k) {
    case 'eq': case 'has_eq': case 'has_seq': input[c.f] = c.v; break;
    case 'like': case 'has_like': input[c.f] = fillPattern(rng, P, c.pat); break;
    case 'le': input[c.f] = Math.max(0, c.v - rng.int(Math.max(1, c.v))); break;
    case 'ge': input[c.f] = c.v + rng.int(1000); break;
    case 'op': input[c.f] = entity(rng, c.type, c.id); break;
    default: throw new Error(`condition kind ${c.k}`);
  }
  if (c.f === 'arg1' && !(input.arg_count >= 1)) input.arg_count = 1;
}

// An entity reference in context JSON: the explicit `__entity` escape or the implicit
// {type, id} form that a schema-directed parser accepts; half each.
function entity(rng, type, id) {
  return rng.chance(0.5) ? { __entity: { type, id } } : { type, id };
}

// ---- policy generation ----
function genPolicy(rng, P, isForbid, shuffle) {
  const kind = isForbid
    ? rng.weighted([[40, 'fs'], [25, 'http'], [20, 'shell'], [10, 'net'], [5, 'any']])
    : rng.weighted([[36, 'fs'], [24, 'http'], [20, 'shell'], [11, 'net'], [2, 'any']]);
  const effect = isForbid ? 'forbid' : 'permit';
  let actions; // null: unscoped; [a]: action ==; [a, b, ...]: action in [...]
  const conds = [];
  switch (kind) {
    case 'fs': {
      const proj = P.proj(rng);
      if (isForbid) {
        const shape = rng.int(4);
        actions = shape < 2 ? FS_ACTIONS.slice() : [rng.pick(['fs:write', 'fs:delete'])];
        if (rng.chance(0.3)) actions = actions.slice(0, 1);
        const pats = [`*/.ssh/*`, `${proj}/.git/*`, `*/.env`, `${proj}/secrets/*`, `${proj}/*.pem`];
        if (shape === 3) conds.push({ k: 'eq', f: 'path', v: `${proj}/${rng.pick(FILES)}` });
        else conds.push({ k: 'like', f: 'path', pat: rng.pick(pats) });
      } else {
        const shape = rng.int(10);
        if (shape < 5) actions = [rng.weighted([[6, 'fs:read'], [3, 'fs:write'], [1, 'fs:delete'], [1, 'fs:move']])];
        else if (shape < 8) actions = ['fs:read', 'fs:write'];
        else actions = FS_ACTIONS.slice();
        const where = rng.int(10);
        if (where < 6) conds.push({ k: 'like', f: 'path', pat: `${proj}/*` });
        else if (where < 8) conds.push({ k: 'like', f: 'path', pat: `${proj}/${rng.pick(SUBDIRS)}/*` });
        else if (where < 9) conds.push({ k: 'eq', f: 'path', v: `${proj}/${rng.pick(FILES)}` });
        else conds.push({ k: 'like', f: 'path', pat: `${rng.pick(SYS_DIRS)}/*` });
        if (actions.length === 1 && rng.chance(0.35)) {
          const [type, ids] = FS_OPS[actions[0]];
          conds.push({ k: 'op', f: 'operation', type, id: rng.pick(ids) });
        }
      }
      break;
    }
    case 'http': {
      actions = ['http:request'];
      conds.push({ k: 'eq', f: 'host', v: P.host(rng) });
      const extra = rng.int(6);
      if (isForbid) {
        if (extra < 3) conds.push({ k: 'eq', f: 'method', v: rng.pick(['POST', 'PUT', 'DELETE']) });
        else if (extra < 5) conds.push({ k: 'eq', f: 'port', v: 80 });
        else conds.push({ k: 'ge', f: 'body_bytes', v: 1048576 });
      } else {
        if (extra === 0) conds.push({ k: 'eq', f: 'method', v: 'GET' });
        else if (extra === 1) conds.push({ k: 'eq', f: 'port', v: 443 });
        else if (extra === 2) conds.push({ k: 'like', f: 'path', pat: `${rng.pick(URL_PATHS)}/*` });
        else if (extra === 3) { conds.push({ k: 'eq', f: 'method', v: rng.pick(METHODS.slice(0, 3)) }); conds.push({ k: 'le', f: 'body_bytes', v: 65536 }); }
        else if (extra === 4) conds.push({ k: 'eq', f: 'intercepted', v: true });
        // extra === 5: host only
      }
      break;
    }
    case 'net': {
      actions = rng.chance(0.6) ? ['net:connect'] : ['net:connect', 'http:request'];
      conds.push({ k: 'eq', f: 'host', v: P.host(rng) });
      if (isForbid) conds.push({ k: 'eq', f: 'port', v: rng.pick([25, 22, 6379]) });
      else if (rng.chance(0.6)) conds.push({ k: 'eq', f: 'port', v: rng.pick([443, 443, 80, 22, 5432]) });
      break;
    }
    case 'shell': {
      actions = rng.chance(0.75) ? ['shell:spawn'] : ['shell:spawn', 'shell:exec'];
      const prog = isForbid ? rng.pick(['rm', 'curl', 'ssh', 'git', 'docker', 'kubectl']) : rng.pick(PROGRAMS);
      conds.push({ k: 'eq', f: 'program', v: prog });
      const extra = rng.int(4);
      if (isForbid) {
        if (prog === 'git' || prog === 'docker' || extra < 2) conds.push({ k: 'has_eq', f: 'arg1', v: rng.pick(arg1For(prog)) });
        if (extra >= 2) conds.push({ k: 'like', f: 'cwd', pat: `${P.proj(rng)}/*` });
      } else {
        if (extra === 0) conds.push({ k: 'has_eq', f: 'arg1', v: rng.pick(arg1For(prog)) });
        else if (extra === 1) conds.push({ k: 'like', f: 'cwd', pat: `${P.proj(rng)}*` });
        else if (extra === 2) { conds.push({ k: 'has_eq', f: 'arg1', v: rng.pick(arg1For(prog)) }); conds.push({ k: 'like', f: 'cwd', pat: `${P.proj(rng)}*` }); }
        else conds.push({ k: 'le', f: 'arg_count', v: rng.range(1, 4) });
      }
      break;
    }
    case 'any': {
      actions = null;
      if (isForbid) conds.push({ k: 'has_like', f: 'path', pat: rng.pick(['/etc/shadow*', '*/id_rsa', '/root/*', '*/.aws/*']) });
      else conds.push({ k: 'has_seq', f: 'host', v: `svc${rng.int(8)}.internal.example.com` });
      break;
    }
    default: throw new Error(kind);
  }
  // People do not always write the most selective test first: in 30% of the rules with
  // several conditions they come in a random order (a `has` guard stays with its access).
  if (conds.length > 1 && rng.chance(shuffle)) {
    for (let i = conds.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [conds[i], conds[j]] = [conds[j], conds[i]];
    }
  }
  return { effect, actions, conds };
}

export function policyText(p) {
  const principal = p.principalSelf ? 'principal == Box::Agent::"self"' : 'principal';
  let action = 'action';
  if (p.actions && p.actions.length === 1) action = `action == ${act(p.actions[0])}`;
  else if (p.actions) action = `action in [${p.actions.map(act).join(', ')}]`;
  const when = p.conds.length ? ` when { ${p.conds.map(condText).join(' && ')} }` : '';
  return `${p.effect}(${principal}, ${action}, resource)${when};`;
}

// ---- request generation ----
function baseInput(rng, P, action) {
  if (action in FS_OPS) {
    const [type, ids] = FS_OPS[action];
    const path = rng.chance(0.85) ? `${P.proj(rng)}/${randSeg(rng)}` : `${rng.pick(SYS_DIRS)}/${rng.pick(FILES)}`;
    return { path, operation: entity(rng, type, rng.pick(ids)) };
  }
  switch (action) {
    case 'http:request': return {
      host: P.host(rng), port: rng.pick(PORTS), method: rng.pick(METHODS),
      path: `${rng.pick(URL_PATHS)}/${rng.pick(['items', 'users', 'x', 'pkg/a', ''])}`,
      body_bytes: rng.chance(0.6) ? 0 : rng.int(2 * 1048576), intercepted: rng.chance(0.5),
    };
    case 'net:connect': {
      const o = { host: P.host(rng), port: rng.pick(PORTS) };
      if (rng.chance(0.5)) o.ip = `10.${rng.int(256)}.${rng.int(256)}.${rng.int(256)}`;
      return o;
    }
    case 'shell:spawn': case 'shell:exec': {
      const program = rng.pick(PROGRAMS);
      const argc = rng.weighted([[2, 0], [5, 1], [3, 2], [2, 3], [1, 5]]);
      const o = { command: '', program, arg_count: argc, cwd: `${P.proj(rng)}${rng.chance(0.5) ? '/' + rng.pick(SUBDIRS) : ''}` };
      if (action === 'shell:spawn') o.program_path = `/usr/bin/${program}`;
      if (argc >= 1) o.arg1 = rng.pick(arg1For(program));
      if (argc >= 2) o.arg2 = rng.pick(['-v', '.', 'origin', 'main', '--all', 'x.txt']);
      return o;
    }
    default: throw new Error(action);
  }
}

function finishInput(action, input) {
  if (action === 'shell:spawn' || action === 'shell:exec') {
    // keep the optional arguments consistent with arg_count
    if (input.arg_count < 1) { delete input.arg1; }
    if (input.arg_count < 2) { delete input.arg2; }
    if (input.arg1 !== undefined && input.arg_count < 1) input.arg_count = 1;
    input.command = [input.program, input.arg1, input.arg2].filter((x) => x !== undefined).join(' ');
    if (action === 'shell:spawn') input.program_path = `/usr/bin/${input.program}`;
  }
  return input;
}

const REQ_ACTIONS = [[14, 'fs:read'], [6, 'fs:write'], [2, 'fs:delete'], [1, 'fs:move'],
  [6, 'http:request'], [3, 'net:connect'], [5, 'shell:spawn'], [1, 'shell:exec']];

function requestFor(rng, P, policy) {
  let action;
  if (policy.actions) action = rng.pick(policy.actions);
  else {
    // unscoped rule: pick an action that has the guarded field
    const f = policy.conds[0].f;
    action = f === 'path' ? rng.pick(FS_ACTIONS) : rng.pick(['http:request', 'net:connect']);
  }
  const input = baseInput(rng, P, action);
  for (const c of policy.conds) {
    if (c.k === 'op' && !(action in FS_OPS && FS_OPS[action][0] === c.type)) continue;
    applyCond(rng, P, input, c);
  }
  return { action, context: { input: finishInput(action, input) } };
}

export function generate({ nPolicies, nRequests, seed = 1, shuffle = 0.3 }) {
  const rng = new Rng(seed, nPolicies);
  const P = pools(nPolicies);
  const policies = [];
  const nUnscopedMax = Math.max(1, Math.ceil(nPolicies / 200));
  let nUnscoped = 0;
  for (let i = 0; i < nPolicies; i++) {
    let p;
    do {
      p = genPolicy(rng, P, rng.chance(0.15), shuffle);
    } while (p.actions === null && nUnscoped >= nUnscopedMax);
    if (p.actions === null) nUnscoped++;
    p.principalSelf = rng.chance(0.2);
    policies.push(p);
  }
  const permits = policies.filter((p) => p.effect === 'permit');
  const forbids = policies.filter((p) => p.effect === 'forbid');
  const requests = [];
  const rr = new Rng(seed ^ 0x5bd1e995, nPolicies);
  for (let i = 0; i < nRequests; i++) {
    const x = rr.float();
    if (x < 0.5 && permits.length) requests.push(requestFor(rr, P, rr.pick(permits)));
    else if (x < 0.65 && forbids.length) requests.push(requestFor(rr, P, rr.pick(forbids)));
    else {
      const action = rr.weighted(REQ_ACTIONS);
      requests.push({ action, context: { input: finishInput(action, baseInput(rr, P, action)) } });
    }
  }
  const text = policies.map(policyText).join('\n') + '\n';
  return { text, policies, requests };
}
