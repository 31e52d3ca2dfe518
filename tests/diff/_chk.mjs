import * as c from '@cedar-policy/cedar-wasm/nodejs';
import { EXT, EXT_CTOR } from './pools.mjs';
for (const [name, {good, bad}] of Object.entries(EXT)) {
  for (const [lst, want] of [[good, true], [bad, false]]) for (const s of lst) {
    const r = c.isAuthorized({principal:{type:'U',id:'a'}, action:{type:'Action',id:'x'}, resource:{type:'U',id:'a'}, context:{}, policies:{staticPolicies:`permit(principal,action,resource) when { ${EXT_CTOR[name]}(${JSON.stringify(s)}) == ${EXT_CTOR[name]}(${JSON.stringify(s)}) };`}, entities:[]});
    const ok = r.type === 'success' && r.response.decision === 'allow';
    if (ok !== want) console.log(name, JSON.stringify(s), 'expected', want, 'got', ok, r.type === 'success' ? JSON.stringify(r.response.diagnostics.errors.map(e=>e.error.message)) : r.errors[0].message);
  }
}
