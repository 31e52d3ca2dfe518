import { genCase } from './gen.mjs';
import { caseTexts, loadCase, authorize, validate } from './oracle.mjs';
let tg=0, tl=0, ta=0, tv=0, n=0, ne=0;
const now = () => performance.now();
for (let i = 0; i < 300; i++) {
  let t = now(); const { c, more } = genCase(1, i); const reqs = Array.from({length: 14}, more); const texts = caseTexts(c); tg += now() - t;
  t = now(); const rej = loadCase(c, texts); tl += now() - t; if (rej) continue;
  ne += c.entities.length;
  t = now(); for (const r of reqs) { authorize(c, r); n++; } ta += now() - t;
  t = now(); validate(texts); tv += now() - t;
}
console.log({ tg, tl, ta, tv, n, perReq: ta / n, avgEntities: ne / 300 });
