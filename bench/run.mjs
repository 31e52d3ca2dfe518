#!/usr/bin/env node
// `make bench`: libdogwood against @cedar-policy/cedar-wasm on the same policies and requests.
//
//   node bench/run.mjs --driver BUILD/dw-bench [--sizes 10,100,1000,10000] [--seed N]
//                      [--shuffle P] [--requests N] [--budget-ms MS] [--keep DIR] [--quick]
//
// For each size: generate a policy set and requests (bench/gen.mjs) into a temp dir; load the
// Box schema and the policies into cedar-wasm (preparseSchema + preparsePolicySet) and time
// statefulIsAuthorized per request over several passes; spawn the C driver (bench/dw_bench.c)
// on the same files; compare every decision and its determining policies; print a table and
// one line per size ending `ratio vs cedar-wasm: N.NN` (our throughput / cedar-wasm's).
// Exit status 1 if the engines disagree on any request (goals are reported, never enforced).
// See bench/README.md.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { generate } from './gen.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const top = path.resolve(here, '..');
const require = createRequire(path.join(top, 'package.json'));
const cedar = require('@cedar-policy/cedar-wasm/nodejs');
const cedarPkg = JSON.parse(fs.readFileSync(path.join(path.dirname(require.resolve('@cedar-policy/cedar-wasm/nodejs')), '..', 'package.json'), 'utf8'));

// ---- options ----
const opt = { driver: null, sizes: [10, 100, 1000, 10000], seed: 1, shuffle: 0.3, requests: null, budgetMs: 6000, keep: null, quick: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i], v = process.argv[i + 1];
  if (a === '--driver') { opt.driver = v; i++; }
  else if (a === '--sizes') { opt.sizes = v.split(',').map(Number); i++; }
  else if (a === '--seed') { opt.seed = Number(v); i++; }
  else if (a === '--shuffle') { opt.shuffle = Number(v); i++; }
  else if (a === '--requests') { opt.requests = Number(v); i++; }
  else if (a === '--budget-ms') { opt.budgetMs = Number(v); i++; }
  else if (a === '--keep') { opt.keep = v; i++; }
  else if (a === '--quick') opt.quick = true;
  else { console.error(`usage: node bench/run.mjs --driver PATH [--sizes 10,100,1000,10000] [--seed N] [--shuffle P] [--requests N] [--budget-ms MS] [--keep DIR] [--quick]`); process.exit(2); }
}
if (!opt.driver) { console.error('run.mjs: --driver PATH (the dw-bench executable) is required'); process.exit(2); }
if (opt.quick) opt.budgetMs = Math.min(opt.budgetMs, 1500);

// Requests per size.  cedar-wasm's cost grows linearly with the policy count (it evaluates
// every policy; ~3-10 µs per policy per request on this machine), so the larger sets get
// fewer requests to keep `make bench` within a few minutes.  Every request of the set is
// cross-checked; each engine runs the whole set several times.
const REQUESTS = { 10: 2000, 100: 2000, 1000: 600, 10000: 100 };
const nRequestsFor = (n) => opt.requests ?? REQUESTS[n] ?? Math.max(100, Math.min(2000, Math.round(600000 / n)));

const schemaPath = path.join(top, 'src/dogwood/engine/box-actions.cedarschema');
const schemaText = fs.readFileSync(schemaPath, 'utf8');
const PRINCIPAL = { type: 'Box::Agent', id: 'self' };
const RESOURCE = { type: 'Box::Resource', id: 'unused' };

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const pct = (sorted, p) => sorted[Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length))) - 1];
const nowNs = () => process.hrtime.bigint();
const ms = (t0, t1) => Number(t1 - t0) / 1e6;

function firstError(r) {
  return r.errors && r.errors.length ? r.errors.map((e) => e.message).join('; ') : JSON.stringify(r);
}

// ---- cedar-wasm ----
function cedarLoad(policiesText) {
  const reps = [];
  // three loads, median; just one when a load takes over a second
  for (let k = 0; k < 3 && !(k > 0 && reps[0].policies > 1000); k++) {
    const t0 = nowNs();
    let r = cedar.preparseSchema('box', schemaText);
    const t1 = nowNs();
    if (r.type !== 'success') throw new Error(`cedar-wasm: schema: ${firstError(r)}`);
    r = cedar.preparsePolicySet('bench', { staticPolicies: policiesText });
    const t2 = nowNs();
    if (r.type !== 'success') throw new Error(`cedar-wasm: policies: ${firstError(r)}`);
    reps.push({ schema: ms(t0, t1), policies: ms(t1, t2) });
  }
  const t0 = nowNs();
  const v = cedar.validate({ schema: schemaText, policies: { staticPolicies: policiesText }, validationSettings: { mode: 'strict' } });
  const t1 = nowNs();
  if (v.type !== 'success') throw new Error(`cedar-wasm validate: ${firstError(v)}`);
  if (v.validationErrors.length) {
    throw new Error(`cedar-wasm: generated policies do not validate: ${v.validationErrors.slice(0, 3).map((e) => `${e.policyId}: ${e.error.message}`).join('; ')}`);
  }
  return {
    schemaMs: median(reps.map((r) => r.schema)),
    policiesMs: median(reps.map((r) => r.policies)),
    validateMs: ms(t0, t1),
  };
}

function cedarCall(q) {
  return cedar.statefulIsAuthorized({
    principal: q.principal ?? PRINCIPAL,
    action: { type: 'Box::Action', id: q.action },
    resource: q.resource ?? RESOURCE,
    context: q.context,
    preparsedSchemaName: 'box',   // the context is parsed against the action's schema type
    preparsedPolicySetId: 'bench',
    entities: [],
    validateRequest: false,       // dogwood's dw_authorize does not validate either
  });
}

function cedarRun(requests, budgetMs) {
  const n = requests.length;
  // reference pass: decisions and reasons (also warms the JIT and the wasm tier-up)
  const ref = requests.map((q, i) => {
    const r = cedarCall(q);
    if (r.type !== 'success') throw new Error(`cedar-wasm rejected request ${i}: ${firstError(r)}\n  ${JSON.stringify(q)}`);
    const d = r.response.diagnostics;
    return {
      decision: r.response.decision === 'allow' ? 'A' : 'D',
      reasons: [...new Set(d.reason)].sort(),
      errors: d.errors.map((e) => `${e.policyId}: ${e.error.message}`),
    };
  });
  // more warm-up when the reference pass was short: at least 200 ms in all
  const w0 = nowNs();
  for (let i = 0; ms(w0, nowNs()) < 200 && i < 100 * n; i++) cedarCall(requests[i % n]);
  const p50s = [], p99s = [], means = [], tputs = [], wtputs = [], perPass = [];
  let samples;
  const start = nowNs();
  let sink = 0;
  // at least 3 passes, then more while within the budget (at most 30)
  while (p50s.length < 3 || (ms(start, nowNs()) < budgetMs && p50s.length < 30)) {
    samples = new Float64Array(n);
    perPass.push(samples);
    const c0 = process.cpuUsage();
    const p0 = nowNs();
    for (let i = 0; i < n; i++) {
      const t0 = nowNs();
      const r = cedarCall(requests[i]);
      const t1 = nowNs();
      samples[i] = Number(t1 - t0) / 1e3;
      sink += r.type === 'success' && r.response.decision === 'allow';
    }
    const p1 = nowNs();
    const cpu = process.cpuUsage(c0);
    const s = Array.from(samples).sort((a, b) => a - b);
    p50s.push(pct(s, 0.5));
    p99s.push(pct(s, 0.99));
    means.push(s.reduce((a, b) => a + b, 0) / n);
    // per-call timer overhead (~0.1 µs) is negligible next to a cedar-wasm call, so the
    // latency pass gives the throughput directly: over the process's CPU time (user +
    // system, all threads; robust on a busy machine), and over wall time
    tputs.push(n / (Math.max(1, cpu.user + cpu.system) / 1e6));
    wtputs.push(n / (ms(p0, p1) / 1e3));
  }
  if (sink < 0) console.log(sink);
  // each request's median latency over the passes, for the per-action breakdown
  const requestUs = requests.map((_, i) => median(perPass.map((v) => v[i])));
  return { ref, requestUs, passes: p50s.length, p50: median(p50s), p99: median(p99s), mean: median(means), throughput: median(tputs), throughputWall: median(wtputs) };
}

// ---- dogwood (the C driver) ----
function dogwoodRun(policiesFile, requestsFile, quick) {
  const args = ['--policies', policiesFile, '--requests', requestsFile, '--per-request'];
  if (quick) args.push('--min-ms', '300', '--min-passes', '3');
  const r = spawnSync(opt.driver, args, { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error) throw new Error(`cannot run ${opt.driver}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${opt.driver} exited ${r.status ?? r.signal}:\n${r.stderr}`);
  if (r.stderr) process.stderr.write(r.stderr);
  return JSON.parse(r.stdout);
}

// ---- formatting ----
const fmtUs = (x) => (x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : x >= 100 ? `${x.toFixed(0)} µs` : x >= 10 ? `${x.toFixed(1)} µs` : `${x.toFixed(2)} µs`);
const fmtMs = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const fmtRate = (x) => (x >= 1e6 ? `${(x / 1e6).toFixed(2)}M/s` : x >= 1e3 ? `${(x / 1e3).toFixed(1)}k/s` : `${x.toFixed(0)}/s`);
const pad = (s, w) => String(s).padStart(w);
const padr = (s, w) => String(s).padEnd(w);

// ---- main ----
const tmp = opt.keep ? (fs.mkdirSync(opt.keep, { recursive: true }), opt.keep) : fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-'));
const results = [];
let totalMismatch = 0;
const tStart = Date.now();

console.log(`dogwood (${path.relative(process.cwd(), opt.driver) || opt.driver}) vs @cedar-policy/cedar-wasm ${cedarPkg.version} (Cedar ${cedar.getCedarVersion()}), node ${process.version}, ${os.cpus().length} CPUs, load avg ${os.loadavg()[0].toFixed(2)}`);
console.log(`workload: bench/gen.mjs seed ${opt.seed}, shuffle ${opt.shuffle}; Box schema; principal Box::Agent::"self", resource Box::Resource::"unused"`);

try {
  // warm cedar-wasm up (module compilation, first-call costs) before anything is timed
  cedarLoad(generate({ nPolicies: 10, nRequests: 1, seed: opt.seed }).text);
  for (const n of opt.sizes) {
    const nReq = nRequestsFor(n);
    const g = generate({ nPolicies: n, nRequests: nReq, seed: opt.seed, shuffle: opt.shuffle });
    const pFile = path.join(tmp, `policies-${n}.cedar`);
    const qFile = path.join(tmp, `requests-${n}.json`);
    fs.writeFileSync(pFile, g.text);
    fs.writeFileSync(qFile, JSON.stringify(g.requests));
    const nForbid = g.policies.filter((p) => p.effect === 'forbid').length;
    const nUnscoped = g.policies.filter((p) => p.actions === null).length;

    const cl = cedarLoad(g.text);
    const cw = cedarRun(g.requests, opt.budgetMs);
    const dw = dogwoodRun(pFile, qFile, opt.quick);

    if (dw.rules !== n) throw new Error(`dw-bench loaded ${dw.rules} rules, expected ${n}`);
    if (dw.requests !== nReq) throw new Error(`dw-bench read ${dw.requests} requests, expected ${nReq}`);
    // cross-check: decision, then the determining policies
    let decMis = 0, reaMis = 0, cwErr = 0;
    const examples = [];
    const mix = { A: 0, F: 0, N: 0 };
    for (let i = 0; i < nReq; i++) {
      const c = cw.ref[i];
      const ours = dw.decisions[i];
      const ourReasons = dw.reasons ? dw.reasons[i].map((k) => `policy${k}`).sort() : null;
      if (c.errors.length) cwErr++;
      mix[c.decision === 'A' ? 'A' : c.reasons.length ? 'F' : 'N']++;
      const dBad = ours !== c.decision;
      const rBad = ourReasons && ourReasons.join(',') !== c.reasons.join(',');
      if (dBad) decMis++;
      else if (rBad) reaMis++;
      if ((dBad || rBad) && examples.length < 5) {
        examples.push({ i, request: g.requests[i], cedar: c, dogwood: { decision: ours, cause: dw.causes[i], reasons: ourReasons } });
      }
    }
    totalMismatch += decMis + reaMis;
    results.push({ n, nReq, nForbid, nUnscoped, cl, cw, dw, decMis, reaMis, cwErr, mix, examples });

    const r = results[results.length - 1];
    console.log(`\n== ${n} policies (${nForbid} forbid, ${nUnscoped} unscoped), ${nReq} requests: ` +
      `${(100 * mix.A / nReq).toFixed(0)}% allowed, ${(100 * mix.F / nReq).toFixed(0)}% forbidden, ${(100 * mix.N / nReq).toFixed(0)}% no match`);
    console.log(`   load      dogwood ${fmtMs(dw.load_ms)} ms (parse + validate + index) | cedar-wasm ${fmtMs(cl.policiesMs)} ms preparsePolicySet` +
      ` + ${fmtMs(cl.schemaMs)} ms preparseSchema; strict validate ${fmtMs(cl.validateMs)} ms` +
      ` | load ratio ${(cl.policiesMs + cl.schemaMs + cl.validateMs) > 0 ? ((cl.policiesMs + cl.schemaMs + cl.validateMs) / dw.load_ms).toFixed(2) : 'n/a'}x faster (vs cedar parse+schema+validate)`);
    console.log(`   dogwood   p50 ${fmtUs(dw.p50_us)}  p99 ${fmtUs(dw.p99_us)}  mean ${fmtUs(dw.mean_us)}  ${fmtRate(dw.throughput)}  (wall-clock ${fmtRate(dw.throughput_wall)}; ${dw.passes} passes; request build ${fmtUs(dw.build_us_p50)} p50, untimed)`);
    console.log(`   cedar     p50 ${fmtUs(cw.p50)}  p99 ${fmtUs(cw.p99)}  mean ${fmtUs(cw.mean)}  ${fmtRate(cw.throughput)}  (wall-clock ${fmtRate(cw.throughputWall)}; ${cw.passes} passes)`);
    {
      const by = new Map();
      g.requests.forEach((q, i) => {
        if (!by.has(q.action)) by.set(q.action, { dw: [], cw: [] });
        by.get(q.action).dw.push(dw.request_us[i]);
        by.get(q.action).cw.push(cw.requestUs[i]);
      });
      const parts = [...by.entries()].sort((a, b) => b[1].dw.length - a[1].dw.length)
        .map(([a, v]) => `${a} ${fmtUs(median(v.dw))}/${fmtUs(median(v.cw))} (${v.dw.length})`);
      console.log(`   p50 by action, dogwood/cedar-wasm (requests): ${parts.join(', ')}`);
    }
    console.log(`   cross-check: ${decMis} decision mismatches, ${reaMis} reason mismatches (of ${nReq}); evaluation errors: dogwood ${dw.n_errors}, cedar-wasm ${cwErr}` +
      (dw.unstable ? `; dogwood decisions unstable across passes: ${dw.unstable}` : ''));
    for (const e of r.examples) {
      console.log(`   MISMATCH request ${e.i}: ${JSON.stringify(e.request)}`);
      console.log(`     cedar-wasm ${e.cedar.decision} reasons [${e.cedar.reasons}] errors ${JSON.stringify(e.cedar.errors)}`);
      console.log(`     dogwood    ${e.dogwood.decision} (${e.dogwood.cause}) reasons [${e.dogwood.reasons}]`);
      const ids = new Set([...e.cedar.reasons, ...(e.dogwood.reasons ?? [])]);
      for (const id of ids) console.log(`     ${id}: ${g.text.split('\n')[Number(id.slice(6))]}`);
    }
    console.log(`${pad(n, 6)} policies: dogwood ${fmtRate(dw.throughput)} p50 ${fmtUs(dw.p50_us)} p99 ${fmtUs(dw.p99_us)} | cedar-wasm ${fmtRate(cw.throughput)} p50 ${fmtUs(cw.p50)} p99 ${fmtUs(cw.p99)}` +
      ` | latency ratio (cedar-wasm/dogwood) p50 ${(cw.p50 / dw.p50_us).toFixed(2)} p99 ${(cw.p99 / dw.p99_us).toFixed(2)}` +
      ` | ratio vs cedar-wasm: ${(dw.throughput / cw.throughput).toFixed(2)}`);
  }
} catch (e) {
  console.error(`\nbench: ${e.message}`);
  if (!opt.keep) fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(2);
}

// ---- summary ----
console.log('\nsummary (medians over passes; throughput in decisions per CPU second; ratio = dogwood throughput / cedar-wasm throughput)');
console.log(`${pad('policies', 8)} ${pad('reqs', 5)} | ${pad('load dw', 9)} ${pad('load cw', 9)} | ${pad('p50 dw', 9)} ${pad('p50 cw', 9)} | ${pad('p99 dw', 9)} ${pad('p99 cw', 9)} | ${pad('thr dw', 9)} ${pad('thr cw', 9)} | ${pad('ratio', 8)} | mismatch`);
for (const r of results) {
  console.log(`${pad(r.n, 8)} ${pad(r.nReq, 5)} | ${pad(fmtMs(r.dw.load_ms) + 'ms', 9)} ${pad(fmtMs(r.cl.policiesMs + r.cl.schemaMs) + 'ms', 9)} | ` +
    `${pad(fmtUs(r.dw.p50_us), 9)} ${pad(fmtUs(r.cw.p50), 9)} | ${pad(fmtUs(r.dw.p99_us), 9)} ${pad(fmtUs(r.cw.p99), 9)} | ` +
    `${pad(fmtRate(r.dw.throughput), 9)} ${pad(fmtRate(r.cw.throughput), 9)} | ${pad((r.dw.throughput / r.cw.throughput).toFixed(2), 8)} | ${r.decMis + r.reaMis}`);
}
console.log('(load cw = preparseSchema + preparsePolicySet, no validation; load dw includes strict validation)');

const at = (n) => results.find((r) => r.n === n);
const g1k = at(1000), g10k = at(10000);
if (g1k) {
  const x = g1k.dw.throughput / g1k.cw.throughput;
  console.log(`goal: >= 10x cedar-wasm throughput at 1,000 policies: ${x >= 10 ? 'met' : 'NOT met'} (${x.toFixed(2)}x)`);
}
if (g10k) {
  console.log(`goal: p50 <= 20 µs at 10,000 policies: ${g10k.dw.p50_us <= 20 ? 'met' : 'NOT met'} (${fmtUs(g10k.dw.p50_us)})`);
}
console.log(`mismatches: ${totalMismatch}`);
console.log(`bench took ${((Date.now() - tStart) / 1000).toFixed(0)} s; load avg now ${os.loadavg()[0].toFixed(2)}`);
if (!opt.keep) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(totalMismatch ? 1 : 0);
