// cairn-export, the real exporter process, against loopback collectors that decode with the
// official OpenTelemetry JS types (collector() of ./otlp.mjs) and against small raw servers for
// what collector() does not do (a redirect, a path prefix). Driven by otlp-dump export, which
// submits a case's protobuf bodies through tm_exporter_start/submit/stop and prints the submits'
// return codes and the stop's per-target report.
//
//   node --test tests/telemetry/export.test.mjs      (OTLP_DUMP: the driver; default
//                                                     build/otlp-dump; cairn-export beside it)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { collector, decodeJsonLine, decodeProtobuf, records } from './otlp.mjs';

const top = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dump = process.env.OTLP_DUMP || join(top, 'build/otlp-dump');
const EAGAIN = -11;

// The driver runs asynchronously: the collectors live in this process's event loop.
async function exportCase(args, env = {}) {
  const { stdout } = await promisify(execFile)(dump, ['export', ...args],
    { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

// The JSON lines of a case, decoded: what the protobuf a collector receives must equal.
const dir = mkdtempSync(join(tmpdir(), 'otlp-export-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
execFileSync(dump, ['encode', dir]);
const line = (name, kind) => decodeJsonLine(readFileSync(join(dir, `${name}.${kind}.json`)));

// A raw HTTP server: every request's path and headers, answered by answer(req, res).
function rawServer(answer) {
  const s = { requests: [] };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      s.requests.push({ method: req.method, path: req.url, headers: req.headers });
      answer(req, res);
    });
  });
  s.close = () => new Promise((r) => { server.close(() => r()); server.closeAllConnections(); });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => {
    s.url = `http://127.0.0.1:${server.address().port}`;
    r(s);
  }));
}

test('records arrive, decoded by the official types as the JSON lines read; the secret as a header', async () => {
  const a = await collector();
  const b = await collector();
  try {
    for (const name of ['deny_net', 'mixed', 'kinds']) {
      a.logs.length = a.traces.length = b.logs.length = b.traces.length = 0;
      a.requests.length = b.requests.length = 0;
      const out = await exportCase(['--case', name,
        '--target', a.url, '--secret', 'authorization=s3cret',
        '--target', `${b.url}/`, '--secret', 'x-vendor-team=vendor-key']);
      assert.deepEqual(out.submits, [0, 0, 0, 0], name);
      assert.equal(out.stop, 0);
      const nLogs = records(line(name, 'logs')).length;
      const nSpans = records(line(name, 'traces')).length;
      assert.deepEqual(out.targets, [{ sent: nLogs + nSpans, lost: 0, lastError: '' },
        { sent: nLogs + nSpans, lost: 0, lastError: '' }]);
      for (const c of [a, b]) {
        assert.deepEqual(c.errors, []);
        assert.deepEqual(c.logs, [line(name, 'logs')]);
        assert.deepEqual(c.traces, [line(name, 'traces')]);
        assert.deepEqual(c.requests.map((r) => r.path).sort(), ['/v1/logs', '/v1/traces']);
        for (const r of c.requests) {
          assert.equal(r.headers['content-type'], 'application/x-protobuf');
          assert.equal(Number(r.headers['content-length']), r.bytes);
        }
      }
      // Authorization in any case: "Bearer <secret>"; any other header: the bare value
      assert.deepEqual(a.requests.map((r) => r.headers.authorization), ['Bearer s3cret', 'Bearer s3cret']);
      assert.deepEqual(b.requests.map((r) => r.headers['x-vendor-team']), ['vendor-key', 'vendor-key']);
      assert.ok(b.requests.every((r) => r.headers.authorization === undefined));
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('a body of about 3 MiB goes whole (more than one datagram of the channel)', async () => {
  const c = await collector();
  try {
    const out = await exportCase(['--case', 'big', '--route', 'logs', '--target', c.url]);
    assert.ok(out.bodyBytes > 3 << 20 && out.bodyBytes < 4 << 20, `${out.bodyBytes} bytes`);
    assert.deepEqual(out.submits, [0]);
    assert.deepEqual(out.targets, [{ sent: 370, lost: 0, lastError: '' }]);
    assert.deepEqual(c.errors, []);
    assert.equal(records(c.logs).length, 370);
    assert.equal(c.requests[0].bytes, out.bodyBytes);
  } finally {
    await c.close();
  }
});

test('a hanging collector costs its own records, one request at most 4 s; a fast one beside it is not held up', async () => {
  const hang = await collector({ hang: true });
  const fast = await collector();
  try {
    const out = await exportCase(['--case', 'deny_net', '--stop-ms', '6000',
      '--target', hang.url, '--repeat', '3', '--target', fast.url, '--repeat', '2']);
    // four bodies outstanding per target at most: the fifth and sixth are refused at once
    assert.deepEqual(out.submits, [0, 0, 0, 0, EAGAIN, EAGAIN, 0, 0, 0, 0]);
    assert.deepEqual(out.targets[1], { sent: 4, lost: 0, lastError: '' });
    assert.equal(fast.logs.length, 2);
    assert.equal(fast.traces.length, 2);
    // the first request gave up after 4 s; the drain ended (6 s) before the rest did
    assert.deepEqual({ sent: out.targets[0].sent, lost: out.targets[0].lost }, { sent: 0, lost: 4 });
    assert.match(out.targets[0].lastError,
      /^http:\/\/127\.0\.0\.1:\d+\/v1\/(logs|traces) did not answer before the drain ended \(6000 ms\)$/);
    assert.equal(out.stop, -1);
    assert.ok(hang.requests.length >= 1 && hang.requests.length <= 2, `${hang.requests.length} requests`);
    assert.ok(out.stopMs < 8000, `the stop took ${out.stopMs} ms`);
  } finally {
    await hang.close();
    await fast.close();
  }
});

test('one request to a hanging collector fails after 4 s, and says so', async () => {
  const hang = await collector({ hang: true });
  try {
    const out = await exportCase(['--case', 'deny_net', '--route', 'logs', '--stop-ms', '10000',
      '--target', hang.url]);
    assert.deepEqual(out.targets, [{ sent: 0, lost: 1,
      lastError: `${hang.url}/v1/logs did not answer: no answer within 4 s` }]);
    assert.equal(hang.requests.length, 1);
    assert.ok(out.stopMs < 8000, `the stop took ${out.stopMs} ms`);
  } finally {
    await hang.close();
  }
});

test('a 503 is counted lost, not retried', async () => {
  const c = await collector({ refuse: true });
  try {
    const out = await exportCase(['--case', 'control', '--target', c.url]);
    assert.deepEqual(out.submits, [0, 0]);
    assert.equal(out.targets[0].sent, 0);
    assert.equal(out.targets[0].lost, 6);       // three records, three spans
    assert.match(out.targets[0].lastError, /^http:\/\/127\.0\.0\.1:\d+\/v1\/(logs|traces) answered 503 Service Unavailable$/);
    assert.equal(c.requests.length, 2);
    assert.deepEqual(c.errors, []);
  } finally {
    await c.close();
  }
});

test('a 302 is a failure and is not followed', async () => {
  const s = await rawServer((req, res) => res.writeHead(302, { location: '/elsewhere/v1/logs' }).end());
  try {
    const out = await exportCase(['--case', 'deny_net', '--route', 'logs',
      '--target', s.url, '--secret', 'Authorization=never-twice']);
    assert.deepEqual(out.targets, [{ sent: 0, lost: 1, lastError: `${s.url}/v1/logs answered 302 Found` }]);
    assert.deepEqual(s.requests.map((r) => r.path), ['/v1/logs']);
  } finally {
    await s.close();
  }
});

test('the routes go at the base path, a trailing slash dropped; the method is POST', async () => {
  const s = await rawServer((req, res) => res.writeHead(200).end());
  try {
    const out = await exportCase(['--case', 'deny_net', '--target', `${s.url}/collector/`]);
    assert.equal(out.targets[0].lost, 0);
    assert.deepEqual(s.requests.map((r) => `${r.method} ${r.path}`).sort(),
      ['POST /collector/v1/logs', 'POST /collector/v1/traces']);
    assert.equal(s.requests[0].headers.host, s.url.slice('http://'.length));
  } finally {
    await s.close();
  }
});

test('HTTP_PROXY and its siblings are ignored', async () => {
  const c = await collector();
  const proxy = await rawServer((req, res) => res.writeHead(502).end());
  try {
    const env = {};
    for (const v of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy'])
      env[v] = proxy.url;
    env.NO_PROXY = env.no_proxy = '';
    const out = await exportCase(['--case', 'deny_net', '--target', c.url], env);
    assert.deepEqual(out.targets, [{ sent: 2, lost: 0, lastError: '' }]);
    assert.equal(c.logs.length, 1);
    assert.deepEqual(proxy.requests, []);
  } finally {
    await c.close();
    await proxy.close();
  }
});

test('a closed port is counted lost with the reason', async () => {
  const s = await rawServer(() => {});
  const url = s.url;
  await s.close();
  const out = await exportCase(['--case', 'deny_net', '--route', 'logs', '--target', url]);
  assert.deepEqual(out.targets, [{ sent: 0, lost: 1,
    lastError: `${url}/v1/logs did not answer: cannot connect: Connection refused` }]);
});

test('targets the exporter cannot serve are refused at start, naming why', async () => {
  const cases = [
    [['--target', 'http://collector.example:4318', '--secret', 'Authorization=x'],
      /neither https nor loopback/],
    [['--target', 'ftp://collector.example'], /is not an http:\/\/ or https:\/\/ URL/],
    [['--target', 'http://user:pw@collector.example'], /carries a user name or password/],
    [['--target', 'http://collector.example:99999'], /port that is not a number from 1 to 65535/],
    [['--target', 'http://collector.example/v?x=1'], /has a query or a fragment/],
    [['--target', 'https://collector.example', '--secret', 'Authorization=a\nb'], /cannot be sent as an HTTP header/],
    [['--target', 'https://collector.example', '--secret', 'bad header=x'], /is not an HTTP header name/],
  ];
  for (const [args, want] of cases) {
    const out = await exportCase(['--case', 'deny_net', ...args]);
    assert.match(out.startError ?? '', want, JSON.stringify(args));
    assert.ok(!out.startError.includes('\n'), 'the secret is not echoed');
  }
  // a secret to loopback over plain http is allowed, as Box allows it
  const c = await collector();
  try {
    const out = await exportCase(['--case', 'deny_net', '--target', c.url.replace('127.0.0.1', 'localhost'),
      '--secret', 'Authorization=x']);
    assert.equal(out.startError, undefined);
  } finally {
    await c.close();
  }
});

// https: a test CA as the trust store (SSL_CERT_FILE, which the supervisor passes on, as
// OpenSSL's default paths read it), the gateway suite's certificates (tests/gateway/mkcerts.sh:
// a leaf for 127.0.0.1 and api.test, and one from a CA nobody trusts).
const pki = join(dir, 'pki');
execFileSync(join(top, 'tests/gateway/mkcerts.sh'), [pki]);

function tlsServer(name) {
  const s = { requests: [], bodies: [], sni: [] };
  const creds = { key: readFileSync(join(pki, `${name}.key`)), cert: readFileSync(join(pki, `${name}.pem`)) };
  const context = createSecureContext(creds);
  const sni = (servername, cb) => { s.sni.push(servername); cb(null, context); };
  const server = createTlsServer({ ...creds, SNICallback: sni }, (req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      s.requests.push({ path: req.url, headers: req.headers, servername: req.socket.servername,
        protocol: req.socket.getProtocol() });
      s.bodies.push(decodeProtobuf(req.url.endsWith('/v1/logs') ? 'logs' : 'traces', Buffer.concat(chunks)));
      res.writeHead(200).end();
    });
  });
  s.close = () => new Promise((r) => { server.close(() => r()); server.closeAllConnections(); });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => { s.port = server.address().port; r(s); }));
}

test('https: the system trust, the address or name checked, SNI for a name; the secret only over a verified channel', async () => {
  const env = { SSL_CERT_FILE: join(pki, 'ca.pem'), SSL_CERT_DIR: join(pki, 'none') };
  const good = await tlsServer('leaf');
  const rogue = await tlsServer('rogue');
  try {
    let out = await exportCase(['--case', 'deny_net', '--target', `https://127.0.0.1:${good.port}`,
      '--secret', 'Authorization=tls-secret'], env);
    assert.deepEqual(out.targets, [{ sent: 2, lost: 0, lastError: '' }]);
    assert.deepEqual(good.bodies.sort((a, b) => Object.keys(a)[0].localeCompare(Object.keys(b)[0])),
      [line('deny_net', 'logs'), line('deny_net', 'traces')]);
    assert.ok(good.requests.every((r) => r.headers.authorization === 'Bearer tls-secret'));
    assert.ok(good.requests.every((r) => r.servername === false), 'no SNI for an IP address');
    assert.ok(good.requests.every((r) => r.protocol === 'TLSv1.3' || r.protocol === 'TLSv1.2'));

    // the certificate names 127.0.0.1 and api.test, not localhost
    good.requests.length = 0;
    out = await exportCase(['--case', 'deny_net', '--route', 'logs',
      '--target', `https://localhost:${good.port}`, '--secret', 'Authorization=tls-secret'], env);
    assert.deepEqual(out.targets, [{ sent: 0, lost: 1, lastError: `https://localhost:${good.port}/v1/logs ` +
      'did not answer: TLS: the certificate was refused: hostname mismatch' }]);
    assert.deepEqual(good.requests, []);
    assert.deepEqual(good.sni, ['localhost']);

    // a CA not in the store
    out = await exportCase(['--case', 'deny_net', '--route', 'logs',
      '--target', `https://127.0.0.1:${rogue.port}`, '--secret', 'Authorization=tls-secret'], env);
    assert.deepEqual(out.targets, [{ sent: 0, lost: 1, lastError: `https://127.0.0.1:${rogue.port}/v1/logs ` +
      'did not answer: TLS: the certificate was refused: unable to get local issuer certificate' }]);
    assert.deepEqual(rogue.requests, []);

    // and without the test CA, the good one is refused too: the store is the only trust
    out = await exportCase(['--case', 'deny_net', '--route', 'logs',
      '--target', `https://127.0.0.1:${good.port}`], { SSL_CERT_FILE: join(pki, 'rogue-ca.pem'), SSL_CERT_DIR: join(pki, 'none') });
    assert.equal(out.targets[0].lost, 1);
    assert.match(out.targets[0].lastError, /certificate was refused/);
  } finally {
    await good.close();
    await rogue.close();
  }
});
