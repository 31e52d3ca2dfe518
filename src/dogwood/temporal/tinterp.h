/* tinterp.h - the temporal interpreter: docs/engine.md "Reference semantics", literally.
 *
 * It evaluates one temporal leaf at a decision point by walking the history:
 * `holds` and `rows` exactly as that section states them, with its
 * aggregates.  It is the oracle of the tests (over the whole
 * history) and the fallback of the incremental engine for shapes it does not
 * maintain (over the retained suffix of the history, which holds every event
 * any window can reach: see monitor.c).  Small and obviously correct beats
 * fast here.
 *
 * The history is an array of entries in trace order; entry k has its global
 * timepoint (tp values are global positions, also under key-local
 * semantics, where the array holds only the decision's key).  The decision
 * is the last entry. */
#ifndef DW_TINTERP_H
#define DW_TINTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "event.h"
#include "temporal.h"

struct dw_hent {
	uint64_t pos;                  /* global timepoint */
	int64_t ts;                    /* the event's timestamp (kept when the event is not) */
	const struct dw_event *ev;     /* NULL when no leaf reads past events */
};

struct dw_tinterp {
	const struct dw_hent *h;       /* h[0 .. n-1]; the decision is h[n-1] */
	size_t n;
	struct dw_arena *scratch;      /* rows and temporaries; the caller resets it */
	uint64_t steps;                /* work done (for benchmarks and tests) */
	int err;                       /* -ENOMEM once an allocation failed */
};

/* Does leaf hold at the last entry?  0 and *out, or -ENOMEM. */
int dw_tinterp_leaf(struct dw_tinterp *ti, const struct dw_tnode *leaf, bool *out);

/* Does n hold at entry j (decision still the last entry), with the variables
 * names[k] bound to vals[k]?  0 and *out, or -ENOMEM. */
int dw_tinterp_holds_at(struct dw_tinterp *ti, size_t j, const struct dw_tnode *n,
			const struct dw_str *names, const struct dw_tval *vals, uint32_t n_vars,
			bool *out);

/* Helpers shared with the incremental engine. */

/* Window test inW(i, j, W): 0 <= ts_i - ts_j <= W (saturating), W in seconds. */
bool dw_in_window(int64_t ts_i, int64_t ts_j, int64_t w_seconds);
/* W seconds as nanoseconds, saturating. */
int64_t dw_window_ns(int64_t w_seconds);

/* Resolve a term that needs no bindings (literals, arrays of them, context.*,
 * principal/resource fields) against the decision event.  false when it does
 * not resolve (a missing context field, a variable, a wildcard, an
 * aggregate). */
bool dw_tterm_resolve_static(struct dw_arena *a, const struct dw_event *decision,
			     const struct dw_tterm *t, struct dw_tval *out);

#endif
