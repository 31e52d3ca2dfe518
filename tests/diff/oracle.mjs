// The oracle: Cedar's own implementation (@cedar-policy/cedar-wasm) computes the expected
// answers for generated cases, and decides which generated inputs are admissible at all.
//
// cedar-wasm facts this relies on (checked against 4.13.0):
// - A policy set given as text gets ids policy0, policy1, ... by position — the same
//   naming the integration tests and our runner use. Annotations such as @id do not rename.
// - isAuthorized/statefulIsAuthorized answer {type:"failure", errors} when the *inputs* are
//   unusable (schema/policy parse error, entity file not conforming, request not valid for
//   the schema, context not matching) and {type:"success", response:{decision,
//   diagnostics:{reason:[ids], errors:[{policyId, error}]}}} otherwise; evaluation errors are
//   only in diagnostics.errors. Reason/error lists come in no particular order.
// - Entities and context cross the JS/wasm boundary as JS values: integers beyond ±2^53 are
//   rejected or silently altered, BigInt throws. Hence data Longs stay within ±2^53.
// - statefulIsAuthorized reuses a schema and policy set preparsed under a name (we reuse
//   the same two names, overwriting), but re-parses the entities on every call.

import { createRequire } from 'node:module';
import { schemaText, policySetText } from './print.mjs';

// Loaded through require so that a crashed instance can be replaced by a fresh one.
const require = createRequire(import.meta.url);
const cedarPath = require.resolve('@cedar-policy/cedar-wasm/nodejs');
let cedar = require(cedarPath);

export const cedarVersion = () => cedar.getCedarVersion();

const firstError = (r) => (r.errors && r.errors.length ? r.errors.map((e) => e.message).join('; ') : 'unknown failure');

export function caseTexts(c) {
  return { schema: schemaText(c.schema), policies: policySetText(c.policies) };
}

// Loads the schema and policies of a case into cedar-wasm. Returns null if usable, else
// {stage, message}. After success, authorize() may be called for this case's requests.
// cedar-wasm itself can overflow its stack on some deep inputs (a RangeError thrown
// out of wasm, not an answer): such a case is not a test of our engine, so it is treated
// like an input cedar-wasm rejects and regenerated. The instance is left corrupt (the next
// call traps with "memory access out of bounds"), so a fresh one is loaded; its preparsed
// schema and policies are gone, which fails the rest of this case's calls cleanly.
function guarded(f) {
  try {
    return f();
  } catch (e) {
    if (!(e instanceof RangeError) && !(e instanceof WebAssembly.RuntimeError)) throw e;
    delete require.cache[cedarPath];
    cedar = require(cedarPath);
    return { type: 'failure', errors: [{ message: `cedar-wasm crashed: ${e.message}` }] };
  }
}

export function loadCase(c, texts = caseTexts(c)) {
  let r = guarded(() => cedar.preparseSchema('s', texts.schema));
  if (r.type !== 'success') return { stage: 'schema', message: firstError(r) };
  r = guarded(() => cedar.preparsePolicySet('p', { staticPolicies: texts.policies }));
  if (r.type !== 'success') return { stage: 'policies', message: firstError(r) };
  // The entities are not checked here: every authorization call parses them anyway (a bad
  // entity file shows up as every request being rejected), and a separate check would
  // parse the schema once more, which costs as much as two authorizations.
  return null;
}

// Expected answer for one request of the case last loaded with loadCase():
// {decision, reason:[ids sorted], errors:[ids sorted], errorMessages} or {rejected: message}.
export function authorize(c, req) {
  const r = guarded(() => cedar.statefulIsAuthorized({
    principal: req.principal, action: req.action, resource: req.resource, context: req.context,
    preparsedSchemaName: 's', preparsedPolicySetId: 'p', entities: c.entities,
    validateRequest: req.validateRequest !== false,
  }));
  if (r.type !== 'success') return { rejected: firstError(r) };
  const d = r.response.diagnostics;
  return {
    decision: r.response.decision,
    reason: [...new Set(d.reason)].sort(),
    errors: [...new Set(d.errors.map((e) => e.policyId))].sort(),
    errorMessages: d.errors.map((e) => `${e.policyId}: ${e.error.message}`),
  };
}

// Strict validation of the whole policy set: shouldValidate, plus the messages.
export function validate(texts) {
  const r = guarded(() => cedar.validate({ schema: texts.schema, policies: { staticPolicies: texts.policies }, validationSettings: { mode: 'strict' } }));
  if (r.type !== 'success') {
    const m = firstError(r);
    return { ok: false, crashed: m.startsWith('cedar-wasm crashed'), messages: [m] };
  }
  return { ok: r.validationErrors.length === 0, messages: r.validationErrors.map((e) => e.error.message) };
}
