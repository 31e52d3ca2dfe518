/* eval.h - the Cedar expression evaluator (Cedar 4.x semantics, docs/formats.md §1).
 *
 * Evaluation reads the AST, the request and the entity store and allocates
 * computed values (sets, records, ip addresses, error text) in the scratch
 * arena.  It never fails except through an evaluation error (type error,
 * overflow, missing entity or attribute, extension failure), which is a value
 * of the call: -1 with c->err filled. */
#ifndef DW_EVAL_H
#define DW_EVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "ast.h"
#include "store.h"
#include "value.h"

enum dw_err_kind {
	DW_ERR_NONE = 0,
	DW_ERR_ENTITY_DOES_NOT_EXIST,
	DW_ERR_ENTITY_ATTR,           /* entity lacks the attribute or tag */
	DW_ERR_RECORD_ATTR,
	DW_ERR_TYPE,
	DW_ERR_WRONG_ARGS,
	DW_ERR_OVERFLOW,
	DW_ERR_UNLINKED_SLOT,
	DW_ERR_EXTENSION,
	DW_ERR_RECURSION,
	DW_ERR_TEMPORAL,              /* a temporal leaf could not be evaluated */
	DW_ERR_NOMEM,
};

struct dw_temporal;

/* How a temporal leaf gets its value: called when evaluation reaches it (so a
 * leaf is computed only when its rule's scope matched and the conjuncts before
 * it held).  0 and *out; -1 with msg filled: an evaluation error of the rule;
 * -ENOMEM. */
typedef int (*dw_temporal_fn)(void *arg, const struct dw_temporal *leaf, bool *out, char *msg,
			      size_t msglen);

/* Before a rule is evaluated: can it hold at all?  false skips the rule exactly
 * as if its condition were false; only sound when the condition's first
 * conjunct is known false (nothing after it would have been evaluated). */
typedef bool (*dw_rule_gate_fn)(void *arg, uint32_t policy);

struct dw_eval_ctx {
	const struct dw_store *store;
	struct dw_val var[4];         /* principal, action, resource, context */
	struct dw_arena *scratch;
	/* Temporal leaves; NULL: no history (a leaf is an evaluation error). */
	dw_temporal_fn temporal;
	void *temporal_arg;
	int depth;
	enum dw_err_kind err;
	char msg[256];
};

/* Evaluate e; 0 and *out, or -1 with c->err/c->msg set. */
int dw_eval(struct dw_eval_ctx *c, const struct dw_expr *e, struct dw_val *out);

/* Scope test of one policy (never errors: the request's principal, action and
 * resource are entity UIDs). */
bool dw_scope_matches(const struct dw_store *st, const struct dw_scope *sc, const struct dw_uid *u);

#endif
