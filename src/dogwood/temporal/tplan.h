/* tplan.h - the compiled temporal leaves of a policy set.
 *
 * Built once per engine, after macro expansion and the load-time checks: every
 * temporal leaf gets a global number, predicates naming pinned events get
 * their pins appended (docs/formats.md §3), and each leaf is classified — kept by the
 * incremental engine (tstate.h) or, for shapes it does not maintain,
 * evaluated by a bounded scan of the retained history (tinterp.h).  `span` is
 * how far back in time a leaf can look (its nested windows summed): the
 * history keeps exactly what the largest span can reach. */
#ifndef DW_TPLAN_H
#define DW_TPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "evschema.h"
#include "policyset.h"
#include "temporal.h"

struct dw_tnode_plan;   /* tstate.c's compiled form */

struct dw_tleaf {
	const struct dw_temporal *t;
	uint32_t rule;                   /* rule index */
	int64_t span_s;                  /* seconds, saturating; < 0 never happens (0 floor) */
	bool incremental;                /* false: bounded scan */
	bool needs_events;               /* reads retained events (scan or `previous`) */
	const char *why;                 /* scan: why it is not incremental */
	bool pending_blind;              /* scan with a count/sum over `::response`:
					  * requests in flight do not count toward it */
	struct dw_tnode_plan *inc;       /* incremental form (tstate.c) */
};

struct dw_tplan {
	struct dw_arena arena;
	uint32_t n_leaves;
	struct dw_tleaf *leaves;         /* by gindex */
	int64_t span_max_s;
	bool needs_events;               /* some leaf reads retained events */
	/* a scanned leaf checks a `since` left side that itself looks back in
	 * time: that side is evaluated at every position between the anchor and
	 * the decision, whatever their timestamps, so once timestamps have gone
	 * backwards the span no longer bounds what it reads (see monitor.c) */
	bool since_left_looks_back;
	/* per rule: the leaf that is its first conjunct (`when temporal` first),
	 * or UINT32_MAX; when that leaf is known false the rule is skipped */
	uint32_t n_rules;
	uint32_t *gate_leaf;
	/* key-local semantics (universal symmetric pins): events are partitioned
	 * by these logged fields, compared with the decision's request paths */
	uint32_t n_keys;
	const struct dw_evfield *keys;
};

/* SHA-256 of everything the incremental state depends on: every leaf's
 * expanded tree (windows, predicates with their pins, binders, aggregates),
 * its rule, and the key-local fields.  A snapshot is only loaded into a plan
 * with the same fingerprint (same arity is not enough).  0 or -ENOMEM. */
int dw_tplan_fingerprint(const struct dw_tplan *p, unsigned char out[32]);

/* es may be NULL (no schema: no pins, default max window).  0 or -ENOMEM. */
int dw_tplan_build(struct dw_policy_set *ps, const struct dw_evschema *es, struct dw_tplan **out);
void dw_tplan_free(struct dw_tplan *p);

#endif
