/* engine.h - the loaded engine and requests, shared by api.c and monitor.c.
 * Private to libdogwood. */
#ifndef DW_ENGINE_H
#define DW_ENGINE_H

#include "dogwood.h"

#include "authz.h"
#include "eval.h"
#include "evschema.h"
#include "policyset.h"
#include "schema.h"
#include "store.h"

struct dw_tplan;

struct dw_engine {
	struct dw_schema *schema;         /* NULL: no schema */
	struct dw_policy_set *ps;
	struct dw_store *store;
	struct dw_authz *authz;
	struct dw_evschema *events;       /* NULL without a schema */
	struct dw_tplan *plan;            /* compiled temporal leaves (tplan.h) */
	int64_t max_window_s;             /* cap on windows (event schema's max_window) */
};

struct dw_request {
	struct dw_arena arena;
	const struct dw_uid *var[3];      /* principal, action, resource */
	const struct dw_rec *context;
	const char *subject;
	const char *note;                 /* history only (dw_request_set_note) */
	struct dw_arena_mark base;        /* the empty request, for dw_request_reset */
};

/* Decide (principal, action, resource, context) with temporal leaves from fn
 * (and rules skipped when gate says they cannot hold), filling out as
 * dw_authorize does.  0 or -ENOMEM (out then denies). */
int dw_engine_decide(const struct dw_engine *eng, const struct dw_uid *const var[3],
		     const struct dw_rec *context, const char *subject, dw_temporal_fn fn,
		     dw_rule_gate_fn gate, void *fn_arg, struct dw_decision *out);

/* A decision that never reached the rules: Deny as an internal fault with one
 * error (index SIZE_MAX, engine id "") saying why.  0 or -ENOMEM. */
int dw_decision_fail(struct dw_decision *out, const char *subject, const char *msg);

#endif
