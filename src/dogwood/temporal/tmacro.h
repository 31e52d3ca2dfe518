/* tmacro.h - expansion of `def temporal` macro calls (docs/policy-reference.md §3.7).
 *
 * dw_policy_set_expand() (macro.c) calls these after `def cedar` expansion.
 * Afterwards no temporal tree of a rule holds a DW_TN_CALL, DW_TN_PARAM,
 * DW_TT_CALL, DW_TT_PARAM or DW_TT_BINDER, a binder with a sigil, a window
 * with is_param, or a predicate with pred->param set: later stages (checks,
 * evaluation) may assume the post-expansion AST of temporal.h.
 *
 * What an expansion looks like:
 *   - every node copied from a macro body carries the call site's span, in
 *     the rule's source (dw_temporal.src_index), so diagnostics about it point
 *     at the call in the policy file, library macros included;
 *   - arguments keep their own spans; a window from an argument keeps the span
 *     of the `1h` written at the call site, a binder from an argument the span
 *     of the identifier;
 *   - `$t` becomes the variable `t$<byte offset of the call site>`: one name
 *     per call site, never one a user can write;
 *   - an argument is expanded once and then shared by each of its uses (the
 *     trees are immutable after expansion, as for `def cedar`): a node may
 *     have several parents.  The limits count a shared node at each use. */
#ifndef DW_TMACRO_H
#define DW_TMACRO_H

#include <stdint.h>

#include "ast.h"
#include "diag.h"
#include "policyset.h"

/* Temporal nodes (dw_tnode and dw_tterm, shared ones counted at each use) of
 * one rule after expansion: a few macros nested in arguments could otherwise
 * double a rule at each level. */
#define DW_TMACRO_MAX_NODES 200000
/* Nesting of one temporal tree after expansion, not counting the left spine
 * of an `&&` chain nor a run of `!` (walks loop over those; the parser builds
 * them without bound).  Whatever the parser accepts (200 levels of
 * parentheses) stays under it; calls nested in arguments multiply it. */
#define DW_TMACRO_MAX_NEST 1000

/* The macro a call of name reaches: a policy file's definition overrides the
 * library's.  NULL when none.  (macro.c) */
const struct dw_macro *dw_macro_find(const struct dw_policy_set *ps, struct dw_str name);

/* Check one definition as a whole set needs it: a `def temporal` body may not
 * call a macro (macros cannot call macros; message `in `def temporal` body:
 * call of `f`: macro-in-macro is not supported`, at the call, in the macro's
 * source).  0 for any other macro.  0, -EINVAL with one diagnostic, -ENOMEM. */
int dw_tmacro_check_def(const struct dw_policy_set *ps, const struct dw_macro *m,
			struct dw_diags *diags);

/* Expand every temporal macro call in the temporal leaves of pol (reached from
 * pol->cond and each pol->conds[i].body; a leaf reached twice is expanded
 * once), in place: each leaf's cond is replaced.  Call it after the rule's
 * `def cedar` expansion (whose arguments may hold leaves) and after
 * dw_tmacro_check_def() accepted every macro of ps (a body holding a call
 * would otherwise be refused here as an internal error).  New nodes and names
 * come from ps->arena.  0, or -EINVAL with one diagnostic at the offending
 * call or argument (in the leaf's source), marked with pol->index
 * (dw_diags_set_policy), or -ENOMEM.  After a failure the leaves may be partly
 * expanded: the set must not be used. */
int dw_tmacro_expand_policy(struct dw_policy_set *ps, struct dw_policy *pol,
			    struct dw_diags *diags);

/* The default Dogwood macro library text (count_within, sum_within, …). */
extern const char dw_default_macros[];

/* Expand macro calls everywhere (macro.c), check definitions; 0 or -EINVAL (diags). */
int dw_policy_set_expand(struct dw_policy_set *ps, struct dw_diags *diags);

#endif
