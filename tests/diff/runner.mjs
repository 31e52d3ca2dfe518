// Running the conformance runner under test and reading its verdicts.
//
// Contract of the runner (`cedar-run TEST.json...`, run with cwd = the directory holding
// the test files, since the paths inside them are relative):
//   FAIL <test.json> [<request index>] <description>: <what differs>     one per failing request
//   FAIL <test.json>: <why>          the whole file could not be run (counts as one failure)
//   VALIDATION-DISAGREE <test.json>: expected shouldValidate=<b>, got <b>: <message>
//   validation: N agree, M disagree
//   N passed, N failed                                                   last line (requests)
// Exit status non-zero iff a request failed. Anything else it prints is ignored.
//
// A runner that crashes, hangs, or accounts for fewer requests than the files hold (for
// instance because it refused to load a file) is also a failure; judge() narrows such a
// chunk down to the offending files by bisection.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

// V8 flags for Node processes that call cedar-wasm in a loop (see cedar-diff.mjs).
export const V8_FLAGS = ['--no-turbo-inline-js-wasm-calls', '--no-turbo-inline-array-builtins'];

export function parseRunnerCommand(s) {
  const parts = s.trim().split(/\s+/);
  // The runner is started inside chunk directories: make a relative path absolute.
  if (parts[0].includes('/') && existsSync(parts[0])) parts[0] = resolve(parts[0]);
  // A .mjs/.js "runner" (the stand-in) is started with this same Node.
  if (/\.(mjs|js)$/.test(parts[0])) parts.unshift(process.execPath, ...V8_FLAGS);
  return parts;
}

export function runRunner(cmd, files, cwd, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(cmd[0], [...cmd.slice(1), ...files], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [], err = [];
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', (e) => { clearTimeout(timer); resolve({ stdout: '', stderr: String(e), code: null, signal: null, timedOut, spawnError: e }); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code, signal, timedOut });
    });
  });
}

export function parseRunnerOutput(stdout) {
  const fails = new Map();        // file -> [{idx, line}]
  const fileFails = new Map();    // file -> line, for a file the runner could not run at all
  const valDisagree = new Map();  // file -> line
  let summary = null, validation = null;
  for (const line of stdout.split('\n')) {
    let m;
    if ((m = /^FAIL (\S+) \[(\d+)\]/.exec(line))) {
      if (!fails.has(m[1])) fails.set(m[1], []);
      fails.get(m[1]).push({ idx: Number(m[2]), line });
    } else if ((m = /^FAIL (\S+?): /.exec(line))) {
      fileFails.set(m[1], line);
    } else if ((m = /^VALIDATION-DISAGREE (\S+?):/.exec(line))) {
      valDisagree.set(m[1], line);
    } else if ((m = /^validation: (\d+) agree, (\d+) disagree/.exec(line))) {
      validation = { agree: Number(m[1]), disagree: Number(m[2]) };
    } else if ((m = /^(?:\w+: )?(\d+) passed, (\d+) failed/.exec(line))) {
      summary = { passed: Number(m[1]), failed: Number(m[2]) };
    }
  }
  return { fails, fileFails, valDisagree, summary, validation };
}

const tail = (s, n = 600) => (s.length > n ? '…' + s.slice(-n) : s);

// Describes why a run cannot be trusted file by file, or null if it can.
function brokenRun(res, parsed, expectedRequests) {
  if (res.spawnError) return `cannot start runner: ${res.spawnError.message}`;
  if (res.timedOut) return 'runner timed out';
  if (res.signal) return `runner killed by ${res.signal}`;
  if (!parsed.summary) return `runner exited ${res.code} without a "N passed, N failed" line`;
  if (parsed.summary.passed + parsed.summary.failed !== expectedRequests) {
    return `runner accounted for ${parsed.summary.passed + parsed.summary.failed} of ${expectedRequests} requests`;
  }
  if ((res.code !== 0) !== (parsed.summary.failed > 0)) return `runner exit status ${res.code} with ${parsed.summary.failed} failures`;
  return null;
}

// Runs the runner over files ([{name, nRequests}]) and returns a verdict per file:
// Map name -> {failing: bool, lines: [...], broken: string|null, valLine: string|null}.
// With firstOnly (the minimiser's need), bisection stops at the first failing file in list
// order, and later files may have no verdict.
export async function judge(cmd, files, cwd, timeoutMs, { firstOnly = false } = {}) {
  const verdicts = new Map();
  let runs = 0;
  let found = false;
  const visit = async (group) => {
    if (firstOnly && found) return;
    runs++;
    const res = await runRunner(cmd, group.map((f) => f.name), cwd, timeoutMs);
    if (res.spawnError) throw new Error(`cannot start runner ${cmd.join(' ')}: ${res.spawnError.message}`);
    const parsed = parseRunnerOutput(res.stdout);
    // A file-level FAIL stands for the whole file and counts once.
    const total = group.reduce((a, f) => a + (parsed.fileFails.has(f.name) ? 1 : f.nRequests), 0);
    const broken = brokenRun(res, parsed, total);
    if (broken && group.length > 1) {
      const mid = group.length >> 1;
      await visit(group.slice(0, mid));
      await visit(group.slice(mid));
      return;
    }
    for (const f of group) {
      const fl = parsed.fails.get(f.name) || [];
      const fileLine = parsed.fileFails.get(f.name) || null;
      if (fl.length || broken || fileLine) found = true;
      verdicts.set(f.name, {
        failing: fl.length > 0 || !!broken || !!fileLine,
        lines: broken ? [`${broken}; stderr: ${tail(res.stderr)}`, ...fl.map((x) => x.line)] : fileLine ? [fileLine] : fl.map((x) => x.line),
        fileLevel: !!fileLine,
        failIdx: new Set(fl.map((x) => x.idx)),
        broken,
        valLine: parsed.valDisagree.get(f.name) || null,
      });
    }
  };
  await visit(files);
  return { verdicts, runs };
}
