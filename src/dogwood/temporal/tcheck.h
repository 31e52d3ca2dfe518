/* tcheck.h - load-time checks of temporal leaves: Dogwood's acceptance rules
 * and schema checks (docs/policy-reference.md §3.6, which numbers the rules).
 *
 * Two passes over every temporal leaf of an expanded policy set (the leaves
 * of each rule's condition bodies, inline `temporal { … }` included):
 *
 * - dw_tcheck_accept: the acceptance rules (1-6) that need no schema —
 *   closed leaves, exists safety, ordered conjunctions (demands), aggregate
 *   rules, aggregate position, reserved binder names — and that a `like`
 *   pattern (cairn extension) is a valid Cedar pattern literal (`the input
 *   `\q` is not a valid escape`).  A leaf that fails one cannot be evaluated,
 *   so these refuse the policy set whatever the flags.  One diagnostic per
 *   failing leaf: its first violation, in the reference's order (binders,
 *   aggregates and positions in tree order, then closedness, then demands).
 *
 * - dw_tcheck_validate: the temporal conditions against the action schema
 *   and the event schema, in Dogwood's order per leaf: entity types declared
 *   (entity literals, enum ids, and binder types: `binder `x` is declared with
 *   unknown type `T`; …`), `context.<path>` resolves on every action the
 *   leaf's rule scope pins (unconstrained scope: left to Cedar), event names
 *   and field paths (leaves, not groups; no `output.*` on a kind without
 *   outputs), tp-dependence (rule 7), types (predicate arguments against
 *   declared field types, ordering on Long, `==` compatibility, tp(x) needs
 *   Timepoint, summands are Long, `like` only on String fields: ``like`
 *   applies only to String fields, but `f` of `a` is `T``), and every window
 *   at most the event schema's max_window (message `temporal window
 *   `48h` exceeds the maximum allowed window `24h` set by the event schema's
 *   `max_window`; shorten this window to at most `24h`, or raise `max_window`
 *   in the event schema`, Dogwood's sentence, the cap in its largest
 *   whole unit, one day as `24h`).  Every finding is reported, each once.
 *   Types are named as Dogwood names them (`int`, `string`, `boolean`,
 *   `decimal`, `timepoint`, `array<…>`), entity types qualified.
 *
 * Every diagnostic is an error located at the offending variable, binder,
 * operator, predicate, field or term (file:line:col through the policy set's
 * sources), with the rule index set (dw_diags_set_policy).  Messages are
 * Dogwood's, as its reference implementation words them.
 *
 * Both run after macro expansion; a leaf part that still holds a macro call
 * or sigil is skipped, not judged.  ps, actions and events are borrowed and
 * not changed. */
#ifndef DW_TCHECK_H
#define DW_TCHECK_H

#include "diag.h"
#include "evschema.h"
#include "policyset.h"
#include "schema.h"

/* 0, or -EINVAL with one or more diagnostics, or -ENOMEM (the diagnostics
 * added so far stay).  dw_tcheck_validate also returns -EINVAL, with no
 * diagnostic, when actions or events is NULL. */
int dw_tcheck_accept(const struct dw_policy_set *ps, struct dw_diags *diags);
int dw_tcheck_validate(const struct dw_policy_set *ps, const struct dw_schema *actions,
		       const struct dw_evschema *events, struct dw_diags *diags);

#endif
