// Writing a generated case as a Cedar integration-format test (docs/formats.md §1):
// <stem>.json names <stem>.cedar, <stem>.entities.json and <stem>.cedarschema by paths
// relative to the directory the runner is started in.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonText } from './print.mjs';
import { caseTexts, loadCase, authorize, validate } from './oracle.mjs';

export function writeCase(dir, stem, c, texts, answers, shouldValidate, names = null) {
  const n = names || { policies: `${stem}.cedar`, entities: `${stem}.entities.json`, schema: `${stem}.cedarschema`, test: `${stem}.json` };
  writeFileSync(join(dir, n.policies), texts.policies);
  writeFileSync(join(dir, n.schema), texts.schema);
  writeFileSync(join(dir, n.entities), jsonText(c.entities));
  const test = {
    policies: n.policies, entities: n.entities, schema: n.schema, shouldValidate,
    requests: c.requests.map((r, i) => {
      const a = answers[i];
      const o = { description: r.description, principal: r.principal, action: r.action, resource: r.resource, context: r.context };
      if (r.validateRequest !== undefined) o.validateRequest = r.validateRequest;
      return { ...o, decision: a.decision, reason: a.reason, errors: a.errors };
    }),
  };
  writeFileSync(join(dir, n.test), jsonText(test));
  return { name: n.test, nRequests: c.requests.length };
}

// Oracle answers for a complete case (all of whose requests must be accepted), or null
// if cedar-wasm rejects any part of it. Used by the minimiser for each candidate.
export function evaluateWhole(c) {
  const texts = caseTexts(c);
  if (loadCase(c, texts)) return null;
  const answers = [];
  for (const r of c.requests) {
    const a = authorize(c, r);
    if (a.rejected) return null;
    answers.push(a);
  }
  return { texts, answers, validation: validate(texts) };
}
