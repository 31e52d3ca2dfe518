/* tstate.h - incremental evaluation of temporal leaves.
 *
 * A leaf the compiler recognises is kept as state that every event updates
 * and a decision only reads: the last match times of `formerly` keyed by the
 * values its predicate is correlated on, sliding-window counts and sums,
 * distinct counts with per-value reference counts, "the latest anchor with no
 * violation after it" for `!X since Y`, the previous event for `previous`.
 * Events reach only the atoms whose (action, kind) they can match.  Anything
 * else is left to the bounded scan (tinterp.h); dw_tstate_compile says why.
 *
 * Time: every structure is exact for any timestamp order (out-of-order and
 * equal timestamps included) and O(1) amortised per event and per decision
 * when timestamps do not decrease, which is how the monitor stamps them.
 * Memory: entries older than the retention threshold the monitor passes in
 * are dropped; nothing else grows. */
#ifndef DW_TSTATE_H
#define DW_TSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "event.h"
#include "temporal.h"
#include "tinterp.h"

struct dw_tnode_plan;
struct dw_tplan;

/* Compile leaf cond.  *out = NULL (with *why) when the shape is not kept
 * incrementally.  key_local: the schema's universal pins are in force.
 * *needs_events: the compiled form reads retained events (`previous`).
 * 0 or -ENOMEM. */
int dw_tstate_compile(struct dw_arena *a, const struct dw_tnode *cond, bool key_local,
		      struct dw_tnode_plan **out, const char **why, bool *needs_events);

struct dw_tstate;

int dw_tstate_new(const struct dw_tplan *plan, struct dw_tstate **out);
void dw_tstate_free(struct dw_tstate *s);

/* Feed one event (already appended to the history at global position pos). */
int dw_tstate_observe(struct dw_tstate *s, uint64_t pos, const struct dw_event *ev);
/* Drop what no window can reach: entries with ts < thr, and positions < lo. */
void dw_tstate_expire(struct dw_tstate *s, int64_t thr, uint64_t lo);
/* Value of an incremental leaf at the decision (the last observed event).
 * view: the retained history (for `previous`).  0 or -ENOMEM. */
int dw_tstate_leaf(struct dw_tstate *s, uint32_t gindex, const struct dw_hent *view, size_t n,
		   struct dw_arena *scratch, bool *out);

/* Beyond Box: a permitted request whose outcome is not recorded yet counts as
 * a `::response` of its action (at the request's time) in every count/sum over
 * `::response`, until dw_tstate_pending_del.  Arguments on `output.*` fields,
 * unknown until the outcome, are taken to match. */
int dw_tstate_pending_add(struct dw_tstate *s, uint64_t ticket, const struct dw_event *req);
void dw_tstate_pending_del(struct dw_tstate *s, uint64_t ticket);

/* Is an incremental leaf certainly false now, whatever the decision (its atom
 * holds no entries at all)?  Cheap: for skipping rules before evaluating them. */
bool dw_tstate_leaf_dead(const struct dw_tstate *s, uint32_t gindex);

/* Snapshots: the state as bytes (appended to b), and back into a fresh
 * state of the same plan (the caller checks the plan's fingerprint first).
 * Loading refuses anything inconsistent (-EINVAL); on failure s must be freed. */
struct dw_buf;
int dw_tstate_save(const struct dw_tstate *s, struct dw_buf *b);
int dw_tstate_load(struct dw_tstate *s, const void *p, size_t n, struct dw_arena *scratch);

/* Bytes held (for tests and benchmarks). */
size_t dw_tstate_bytes(const struct dw_tstate *s);

#endif
