#!/usr/bin/env node
// cedar-diff — differential tester of our Cedar engine against Cedar's own implementation.
//
// Generates random Cedar test cases (schema + entities + policy set + requests) from a seed,
// computes the expected answers with @cedar-policy/cedar-wasm (the oracle), writes them as
// Cedar integration-format tests (docs/formats.md §1) into a work directory, runs the
// conformance runner under test over them, and on any disagreement minimises the failing
// case and prints it.
//
// Usage (from the repository root, after `npm ci`):
//   node tests/diff/cedar-diff.mjs --runner build/cedar-run \
//        --cases 10000 --seed 1 --workdir /tmp/cedar-diff
//
//   --runner CMD        the runner: an executable, or a .mjs/.js file run with this Node;
//                       CMD may carry arguments ("tests/diff/stand-in-runner.mjs --bug le-as-lt").
//                       It is started with cwd = a chunk directory and test file names as args.
//   (build/cedar-run is what `make` builds from tests/conformance/cedar_run.c.)
//
//   --cases N           number of cases = requests to generate (default 10000); 1000000 is fine:
//                       work is streamed in chunks, passing chunk directories are deleted.
//   --seed S            run seed (default 1). Each test file is derived from (seed, index), and
//                       every request description names "seed S case I.A request K".
//   --workdir DIR       where chunks and minimised cases go (default: a fresh dir under /tmp).
//   --start I           index of the first test file (default 0); with --files 1 reproduces one.
//   --files N           stop after N test files, whatever --cases says.
//   --requests A-B      requests per test file (default 8-20).
//   --chunk N           test files per runner invocation (default 250).
//   --stats             print coverage statistics (operators per policy, decisions, errors...).
//   --gen-only          no runner: generate + compute answers only (throughput, --stats).
//   --keep              keep passing chunk directories too.
//   --keep-going        keep generating after a failing chunk (exit status is still 1).
//   --keep-failing N    with --keep-going, keep at most N failing chunk directories (default 10).
//   --max-minimise N    minimise at most N failing test files (default 1; 0 = none).
//   --minimise-time S   time budget per minimisation in seconds (default 300).
//   --strict-validation treat VALIDATION-DISAGREE as failures (counted and minimised); by
//                       default they are only reported, since the validator comes later.
//   --timeout S         runner timeout per invocation (default 600).
//   --no-nul-keys       no NUL characters in attribute names, record keys and tag keys (ids
//                       and string values still have them) — for an engine that limits this.
//
// Reproducing: a failing file is named by its request descriptions ("seed S case I.A ...");
// `--seed S --start I --files 1` regenerates it (with the same version of this tester and
// the same generation options, which the description also names).
// A minimised case is saved in the layout of tests/data/cedar/ (test.json, policies.cedar,
// entities.json, schema.cedarschema) and can be run directly with the runner.
//
// Output: progress per chunk, validation agreement, failures with their minimised cases,
// and finally `N passed, N failed` counting cases (requests). Exit status 1 iff a case
// failed (or a validation disagreement with --strict-validation); 2 on usage errors.
//
// Self-test of the pipeline without the C engine (the stand-in runner evaluates with
// cedar-wasm itself; --bug injects a fake disagreement that must be found and minimised):
//   node tests/diff/cedar-diff.mjs --runner tests/diff/stand-in-runner.mjs --cases 2000
//   node tests/diff/cedar-diff.mjs --runner "tests/diff/stand-in-runner.mjs --bug le-as-lt" --cases 2000

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { genCase } from './gen.mjs';
import { restrictPools } from './pools.mjs';
import { Rng } from './rng.mjs';
import { caseTexts, loadCase, authorize, validate, cedarVersion } from './oracle.mjs';
import { writeCase } from './casefile.mjs';
import { judge, parseRunnerCommand, V8_FLAGS } from './runner.mjs';
import { minimise, findStart, reportCase } from './minimise.mjs';
import { Stats, policyFeatures, dataFeatures, schemaFeatures, hierarchyDepth, formatStats } from './stats.mjs';

// Node 20's V8 (11.3) sometimes aborts with "Fatal error ... unreachable code" in
// Deoptimizer::DoComputeBuiltinContinuation while lazily deoptimizing TurboFan code around
// a cedar-wasm call (seen in the oracle's authorize(), roughly once per 10,000-50,000
// cases). Turning off TurboFan's inlining of JS->Wasm calls (and of array builtins, whose
// continuations take the same path) avoids it. Command-line flags are the reliable way to
// set V8 flags, so the tester re-runs itself with them (CEDAR_DIFF_KEEP_V8_FLAGS=1: don't).
if (!process.env.CEDAR_DIFF_KEEP_V8_FLAGS && !V8_FLAGS.every((f) => process.execArgv.includes(f))) {
  const r = spawnSync(process.execPath, [...V8_FLAGS, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.error) throw r.error;
  if (r.signal) process.stderr.write(`cedar-diff: killed by ${r.signal}\n`);
  process.exit(r.status ?? 2);
}

function usage(msg) {
  process.stderr.write(`cedar-diff: ${msg}\n(see --help, or the comment at the top of tests/diff/cedar-diff.mjs)\n`);
  process.exit(2);
}

// --help prints the usage comment at the top of this file.
function help() {
  const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  const out = [];
  for (const l of lines.slice(1)) { if (!l.startsWith('//')) break; out.push(l.replace(/^\/\/ ?/, '')); }
  process.stdout.write(out.join('\n') + '\n');
  process.exit(0);
}

function parseArgs(argv) {
  const o = {
    runner: null, cases: 10000, seed: 1, workdir: null, start: 0, files: Infinity, reqMin: 8, reqMax: 20,
    chunk: 250, stats: false, genOnly: false, keep: false, keepGoing: false, maxMinimise: 1,
    minimiseTime: 300, strictValidation: false, timeout: 600, keepFailing: 10, noNulKeys: false,
  };
  const num = (v, name) => { const n = Number(v); if (!Number.isInteger(n) || n < 0) usage(`bad ${name}: ${v}`); return n; };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    switch (a) {
      case '--runner': o.runner = val(); break;
      case '--cases': o.cases = num(val(), a); break;
      case '--seed': o.seed = num(val(), a); break;
      case '--workdir': o.workdir = val(); break;
      case '--start': o.start = num(val(), a); break;
      case '--files': o.files = num(val(), a); break;
      case '--requests': {
        const m = /^(\d+)-(\d+)$/.exec(val());
        if (!m || Number(m[1]) < 1 || Number(m[1]) > Number(m[2])) usage('--requests wants A-B');
        o.reqMin = Number(m[1]); o.reqMax = Number(m[2]); break;
      }
      case '--chunk': o.chunk = Math.max(1, num(val(), a)); break;
      case '--stats': o.stats = true; break;
      case '--gen-only': o.genOnly = true; break;
      case '--keep': o.keep = true; break;
      case '--keep-going': o.keepGoing = true; break;
      case '--max-minimise': o.maxMinimise = num(val(), a); break;
      case '--minimise-time': o.minimiseTime = num(val(), a); break;
      case '--strict-validation': o.strictValidation = true; break;
      case '--no-nul-keys': o.noNulKeys = true; break;
      case '--keep-failing': o.keepFailing = num(val(), a); break;
      case '--timeout': o.timeout = Math.max(1, num(val(), a)); break;
      case '-h': case '--help': help(); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!o.runner && !o.genOnly) usage('--runner is required (or --gen-only)');
  return o;
}

const sec = (ms) => (ms / 1000).toFixed(1);

// Keep a few sample messages per rejection stage: a generator bug shows up here first.
class Samples {
  constructor(max = 3) { this.m = new Map(); this.max = max; }
  add(k, msg) {
    if (!this.m.has(k)) this.m.set(k, new Set());
    const s = this.m.get(k);
    if (s.size < this.max) s.add(msg.slice(0, 300));
  }
}

const ENTITY_ERROR = /entity does not conform|entity deserialization|transitive closure|duplicate entity/i;

// Generates one test file: tries up to 8 re-rolls of the case when cedar-wasm rejects its
// schema/policies/entities; keeps the requests cedar-wasm accepts.
function generateFile(o, index, dir, st, samples, limit) {
  const nReq = Math.min(limit, new Rng(o.seed ^ 0x5bd1e995, index).int(o.reqMin, o.reqMax));
  for (let attempt = 0; attempt < 8; attempt++) {
    const { c, more } = genCase(o.seed, index, attempt, `seed ${o.seed}${o.noNulKeys ? ' --no-nul-keys' : ''}`);
    const texts = caseTexts(c);
    const rej = loadCase(c, texts);
    if (rej) { st.add(`rejected: ${rej.stage}`); samples.add(rej.stage, rej.message); continue; }
    const answers = [];
    for (let tries = 0; answers.length < nReq && tries < nReq * 3; tries++) {
      const r = more();
      const a = authorize(c, r);
      if (a.rejected) {
        // Entity-file problems reject every request; give up on the file early then.
        if (ENTITY_ERROR.test(a.rejected)) { st.add('rejected: entities'); samples.add('entities', a.rejected); break; }
        st.add('rejected: request'); samples.add('request', a.rejected);
        continue;
      }
      c.requests.push(r);
      answers.push(a);
    }
    if (!answers.length) { st.add('rejected: file with no accepted request'); continue; }
    const val = validate(texts);
    if (val.crashed) { st.add('rejected: cedar-wasm crashed validating'); samples.add('validate', val.messages[0]); continue; }
    const stem = `c${String(index).padStart(7, '0')}`;
    const file = writeCase(dir, stem, c, texts, answers, val.ok);
    recordStats(st, c, answers, val);
    return { ...file, c, answers, val };
  }
  st.add('rejected: gave up on file');
  return null;
}

// Coarse classes of strict-validation errors, for the coverage report.
function validationKind(msg) {
  const m = msg.replace(/^for policy `policy\d+`, /, '');
  if (/are not compatible/.test(m)) return 'types not compatible';
  if (/attribute .* not found/.test(m)) return 'attribute not found';
  if (/optional attribute/.test(m)) return 'unguarded optional attribute';
  if (/access to tag/.test(m)) return 'unguarded tag';
  let x;
  if ((x = /unexpected type: expected (\S+?)[,. ]/.exec(m))) return `unexpected type (expected ${x[1].replace(/^__cedar::internal::/, '')})`;
  return m.replace(/`[^`]*`/g, '`_`').replace(/"[^"]*"/g, '"_"').replace(/\d+/g, 'N').slice(0, 60);
}

function recordStats(st, c, answers, val) {
  st.add('files: total');
  st.add(`files: shouldValidate ${val.ok}`);
  st.add(`files: ${c.policies.length} policies`);
  const depth = hierarchyDepth(c.entities);
  st.add(`files: hierarchy depth ${depth >= 10 ? '10+' : depth >= 4 ? '4-9' : depth >= 1 ? '1-3' : '0'}`);
  const f = new Set();
  schemaFeatures(c.schema, f);
  for (const e of c.entities) {
    dataFeatures(e.attrs, f);
    if (e.tags && Object.keys(e.tags).length) { f.add('data: entity tags'); dataFeatures(e.tags, f); }
    if (e.uid.__entity) f.add('data: explicit __entity');
  }
  for (const r of c.requests) dataFeatures(r.context, f);
  for (const x of f) st.add(x.startsWith('data:') || x.startsWith('schema:') ? `${x} (files)` : `schema: ${x} (files)`);
  // Per policy: which operators it uses, and how it fared across the requests.
  c.policies.forEach((p, i) => {
    st.add('policies: total');
    for (const x of policyFeatures(p)) st.add(`policy uses: ${x}`);
    const id = `policy${i}`;
    if (answers.some((a) => a.errors.includes(id))) st.add('policies: error in some request');
    if (answers.some((a) => a.reason.includes(id))) st.add('policies: determining in some request');
  });
  for (const a of answers) {
    st.add('requests: total');
    st.add(`requests: ${a.decision}`);
    if (a.errors.length) st.add('requests: with evaluation errors');
    if (a.errors.length && a.decision === 'allow') st.add('requests: allow despite errors');
    if (a.reason.length > 1) st.add('requests: several determining policies');
    for (const m of a.errorMessages) st.add(`error kinds: ${m.replace(/^policy\d+: /, '').replace(/`[^`]*`/g, '`_`').replace(/\d+/g, 'N').slice(0, 70)}`);
  }
  for (const r of c.requests) if (r.validateRequest === false) st.add('requests: validateRequest false');
  for (const m of new Set(val.messages.map(validationKind))) st.add(`validation errors (files): ${m}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const cmd = o.runner ? parseRunnerCommand(o.runner) : null;
  if (o.noNulKeys) restrictPools((k) => !k.includes('\0'));
  const workdir = o.workdir ? resolve(o.workdir) : mkdtempSync(join(tmpdir(), 'cedar-diff-'));
  mkdirSync(workdir, { recursive: true });
  const log = (s) => process.stdout.write(s + '\n');
  log(`cedar-diff: cedar-wasm ${cedarVersion()}, seed ${o.seed}, ${o.cases} cases, workdir ${workdir}` + (cmd ? `, runner ${cmd.join(' ')}` : ', no runner'));

  const st = new Stats();
  const samples = new Samples();
  const tStart = Date.now();
  let genMs = 0, genCpuMs = 0, runMs = 0; // CPU time too: the machine may be shared
  let produced = 0, filesDone = 0, index = o.start, chunkNo = 0;
  let passed = 0, failed = 0, valAgree = 0, valDisagree = 0;
  const failures = [];      // {chunk, file, verdict}
  const valFailures = [];   // {chunk, file, verdict}
  let stop = false;
  let failingChunks = 0;
  let pending = null;       // runner judging the previous chunk while we generate the next

  const finishChunk = async (ch) => {
    const t = Date.now();
    const { verdicts } = await judge(cmd, ch.files, ch.dir, o.timeout * 1000);
    runMs += Date.now() - t;
    let bad = false;
    for (const f of ch.files) {
      const v = verdicts.get(f.name);
      const nFail = v.broken || v.fileLevel ? f.nRequests : v.failIdx.size;
      failed += nFail;
      passed += f.nRequests - nFail;
      // Bounded memory on long runs: only the first failures keep their case models.
      const keepModel = (list) => (list.length < Math.max(o.maxMinimise, 20) ? f : { name: f.name, nRequests: f.nRequests });
      if (v.failing) { bad = true; failures.push({ ch, f: keepModel(failures), v }); }
      if (v.valLine) { valDisagree++; if (o.strictValidation) { bad = true; valFailures.push({ ch, f: keepModel(valFailures), v }); } } else valAgree++;
    }
    log(`chunk ${ch.no}: ${ch.files.length} files, ${ch.requests} cases` + (bad ? `, FAILURES (kept in ${ch.dir})` : ', ok'));
    // A runner that breaks on every single file is not buggy but unusable (wrong path,
    // missing library, ...): minimising would only shrink towards the empty case.
    const broken = ch.files.map((f) => verdicts.get(f.name).broken);
    if (ch.files.length > 1 && broken.every((b) => b)) {
      const v = verdicts.get(ch.files[0].name);
      throw new Error(`the runner fails on every file; first: ${v.lines[0]}`);
    }
    // Bounded disk: passing chunks go, and so do failing ones beyond the first few.
    if (bad) {
      if (!o.keepGoing) stop = true;
      if (++failingChunks > o.keepFailing && !o.keep) { rmSync(ch.dir, { recursive: true, force: true }); ch.dir += ' (deleted: --keep-failing)'; }
    } else if (!o.keep) rmSync(ch.dir, { recursive: true, force: true });
    // Only the failing files' models are kept (for minimisation); drop the rest.
    if (!bad) ch.files = null;
  };

  while (produced < o.cases && filesDone < o.files && !stop) {
    const dir = join(workdir, `chunk-${String(chunkNo).padStart(5, '0')}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const t = Date.now();
    const cpu0 = process.cpuUsage();
    const files = [];
    let requests = 0;
    while (files.length < o.chunk && produced < o.cases && filesDone < o.files) {
      const f = generateFile(o, index, dir, st, samples, o.cases - produced);
      index++;
      filesDone++;
      if (!f) continue;
      files.push(f);
      requests += f.nRequests;
      produced += f.nRequests;
    }
    genMs += Date.now() - t;
    const cpu = process.cpuUsage(cpu0);
    genCpuMs += (cpu.user + cpu.system) / 1000;
    const ch = { no: chunkNo++, dir, files, requests };
    if (!cmd) {
      log(`chunk ${ch.no}: ${files.length} files, ${requests} cases generated`);
      if (!o.keep) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (pending) await pending;
    if (stop) break;
    pending = finishChunk(ch);
  }
  if (pending) await pending;
  const totalMs = Date.now() - tStart;

  log(`generated ${produced} cases in ${filesDone} test files; generator + cedar-wasm ${sec(genMs)} s ` +
    `(${Math.round(produced / Math.max(genMs, 1) * 1000)} cases/s; ${Math.round(produced / Math.max(genCpuMs, 1) * 1000)} per CPU-second)` + (cmd ? `, runner ${sec(runMs)} s` : '') + `, wall ${sec(totalMs)} s`);
  if (o.stats) {
    log(formatStats(st));
    for (const [k, s] of samples.m) log(`sample rejection (${k}): ${[...s].join(' | ')}`);
  }
  if (!cmd) { log(`generated ${produced} cases (no runner)`); return 0; }

  log(`validation: ${valAgree} agree, ${valDisagree} disagree`);
  const allFailures = [...failures.map((x) => ({ ...x, mode: 'request' })), ...valFailures.map((x) => ({ ...x, mode: 'validation' }))];
  for (const { v } of failures.slice(0, 20)) for (const l of v.lines.slice(0, 3)) log(l);
  if (failures.length > 20) log(`... and ${failures.length - 20} more failing test files`);
  for (const { v } of valFailures.slice(0, 10)) log(v.valLine);
  if (!o.strictValidation && valDisagree) log('(validation disagreements are not failures without --strict-validation)');

  // Minimise the first failing files.
  for (const { ch, f, v, mode } of allFailures.filter((x) => x.f.c).slice(0, o.maxMinimise)) {
    const mdir = join(workdir, `minimise-${f.name.replace(/\.json$/, '')}`);
    const mopts = { cmd, dir: join(mdir, 'work'), timeoutMs: o.timeout * 1000, budgetMs: o.minimiseTime * 1000, batch: 40, mode, log };
    // The minimiser needs one request that fails on its own.
    const start = await findStart(f.c, v, mopts);
    if (!start) { log(`\n=== ${f.name}: no single request reproduces the failure on its own; see ${ch.dir} ===`); continue; }
    log(`\n=== minimising ${f.name} (${mode}): ${start.c.requests[0].description} ===`);
    const m = await minimise(start.c, start.verdict, mopts);
    log(`minimised in ${m.steps} steps, ${m.runs} runner runs, ${m.tried} candidates, ${sec(m.ms)} s${m.timedOut ? ' (time budget exhausted)' : ''}`);
    log(reportCase(m, join(mdir, 'minimised')));
  }

  const exitBad = failed > 0 || (o.strictValidation && valDisagree > 0);
  log(`${passed} passed, ${failed} failed`);
  return exitBad ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (e) => { process.stderr.write(`cedar-diff: ${e.stack || e}\n`); process.exitCode = 2; });
