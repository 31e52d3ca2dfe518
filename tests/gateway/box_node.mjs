// Runs inside the box (clients.sh's "node" run): node's global fetch through
// the gateway.  Node that implements NODE_USE_ENV_PROXY (the box sets it)
// proxies fetch by itself; older Node (20 here) gets exactly what that flag
// does from undici's EnvHttpProxyAgent as the global dispatcher.
// Usage (in the box): node box_node.mjs PARAMS.json UNDICI_ENTRY
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const prm = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const P = prm.P, H = prm.H;
const A = `https://api.test:${P}`;
const AH = `api.test:${P}`;
let passed = 0, failed = 0;
const check = (cond, what, detail) => {
	if (cond) passed++;
	else { failed++; console.log(`FAIL: ${what}${detail === undefined ? '' : ': ' + String(detail).slice(0, 600)}`); }
};
const eq = (got, want, what) => check(JSON.stringify(got) === JSON.stringify(want), what,
	`got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
const gate = (res, tail) => `http:request gate: policy denied this operation on '${res}' ${tail}`;

const [maj, min] = process.versions.node.split('.').map(Number);
const native = maj >= 24 || (maj === 22 && min >= 21);
if (!native) {
	const { EnvHttpProxyAgent, setGlobalDispatcher } = await import(process.argv[3]);
	setGlobalDispatcher(new EnvHttpProxyAgent());
}
console.log(`node ${process.versions.node}: ${native ? 'native NODE_USE_ENV_PROXY' : 'undici EnvHttpProxyAgent'}`);
eq(process.env.NODE_USE_ENV_PROXY, '1', 'NODE_USE_ENV_PROXY=1 in the box');

async function run(name, fn) {
	try { await fn(); } catch (e) { check(false, `${name} threw`, `${e} ${e.cause ?? ''}`); }
}

await run('get', async () => {
	const r = await fetch(`${A}/echo/node/get?x=1`);
	eq(r.status, 200, 'node GET status');
	const d = await r.json();
	eq([d.method, d.path, d.query, d.headers.host, d.sni], ['GET', '/echo/node/get', 'x=1', AH, 'api.test'],
		'node GET echo');
});

await run('post', async () => {
	const body = JSON.stringify({ hello: 'node', n: [...Array(500).keys()] });
	const r = await fetch(`${A}/echo/node/post`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
	const d = await r.json();
	eq([r.status, d.body_len, d.body_sha256], [200, Buffer.byteLength(body),
		createHash('sha256').update(body).digest('hex')], 'node POST body upstream');
});

await run('denied', async () => {
	let r = await fetch(`${A}/echo/node/del`, { method: 'DELETE' });
	eq([r.status, r.headers.get('x-strands-box-egress'), await r.text()],
		[403, 'refused', gate(`${AH}/echo/node/del`, '[default-deny]: No permit policy matched this request.')],
		'node DELETE denied');
	r = await fetch(`${A}/admin/node`);
	eq([r.status, await r.text()], [403, gate(`${AH}/admin/node`, '[policy: no_admin]: The admin area is closed.')],
		'node forbid');
});

await run('connect-denied', async () => {
	let threw = false;
	try { await fetch(`https://blocked.test:${P}/echo/node`); } catch (e) { threw = true; }
	check(threw, 'node fetch to blocked.test (CONNECT refused) rejects');
});

await run('bearer', async () => {
	const tok = process.env.API_TOKEN ?? '';
	check(/^strands_box_[0-9a-f]{64}$/.test(tok), 'node sees a phantom API_TOKEN', tok);
	const r = await fetch(`${A}/bearer/echo/node`, { headers: { authorization: `Bearer ${tok}` } });
	const d = await r.json();
	eq([r.status, d.headers.authorization], [200, 'Bearer [REDACTED]'], 'node bearer: echoed secret scrubbed');
});

await run('stream', async () => {
	const r = await fetch(`${A}/big/node?bytes=${8 << 20}&chunked=1`);
	const h = createHash('sha256');
	let n = 0;
	for await (const chunk of r.body) { h.update(chunk); n += chunk.length; }
	eq([r.status, n, h.digest('hex')], [200, 8 << 20, r.headers.get('x-body-sha256')], 'node streamed 8 MiB');
});

await run('plain', async () => {
	const r = await fetch(`http://api.test:${H}/echo/node/plain`);
	const d = await r.json();
	eq([r.status, d.server, d.headers.host], [200, 'http', `api.test:${H}`], 'node plain http through the proxy');
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
