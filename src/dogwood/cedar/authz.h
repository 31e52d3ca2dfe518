/* authz.h - the authorizer: a policy set compiled against an entity store.
 *
 * Compiling indexes the rules by the actions their scope can match (exactly:
 * `action in G` is expanded to G and every entity of the store below G), so a
 * request evaluates only the rules that can apply to its action.  A compiled
 * authorizer is read-only; decisions may run concurrently, each with its own
 * scratch arena. */
#ifndef DW_AUTHZ_H
#define DW_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "eval.h"
#include "policyset.h"
#include "store.h"

struct dw_authz;

/* ps and st must outlive the authorizer and stay unchanged.  index_conditions
 * false keeps only the action index (every rule of the action is evaluated).
 * 0 or -ENOMEM. */
int dw_authz_new(const struct dw_policy_set *ps, const struct dw_store *st, bool index_conditions,
		 struct dw_authz **out);
void dw_authz_free(struct dw_authz *az);   /* NULL is a no-op */

struct dw_authz_error {
	uint32_t policy;            /* index into ps->policies */
	const char *msg;
};

struct dw_authz_result {
	bool allow;
	uint32_t n_reasons;
	uint32_t *reasons;          /* policy indices, ascending */
	uint32_t n_errors;
	struct dw_authz_error *errors;   /* ascending by policy */
	uint32_t n_evaluated;       /* rules whose scope was tested (for benchmarks) */
};

/* Decide one request.  Results are allocated in scratch.  temporal may be NULL
 * (a temporal leaf is then an evaluation error of its rule); gate may be NULL.
 * 0 or -ENOMEM. */
int dw_authz_decide(const struct dw_authz *az, const struct dw_uid *principal,
		    const struct dw_uid *action, const struct dw_uid *resource,
		    const struct dw_rec *context, dw_temporal_fn temporal, dw_rule_gate_fn gate,
		    void *temporal_arg, struct dw_arena *scratch, struct dw_authz_result *out);

#endif
