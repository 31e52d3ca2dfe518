/* event.h - one event of the history (docs/formats.md §2).
 *
 * An event is what an enforcement point (or a trace line) reports: an action,
 * a kind (`request` decides; `response`, `error` are history under the
 * default event schema), a timestamp, the `logged` record temporal predicates
 * match, and the request context that Cedar and `context.*` terms read.  The
 * two records are separate on purpose: a field needed by both is supplied in
 * both.
 *
 * Timestamps are nanoseconds inside the engine; traces are in seconds and are
 * scaled on input.  All strings and values are borrowed from whoever built the
 * event (a trace's arena, a builder's arena, a history blob). */
#ifndef DW_EVENT_H
#define DW_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "tval.h"
#include "util.h"

#define DW_NS_PER_SEC 1000000000LL

/* An entity supplied with the event (trace `entities(…)` envelope). */
struct dw_event_entity {
	struct dw_str type, id;
	struct dw_tval attrs;              /* a RECORD */
	uint32_t n_parents;
	struct dw_str *parent_types, *parent_ids;
};

struct dw_event {
	int64_t ts;                        /* nanoseconds */
	struct dw_str ns;                  /* action namespace incl. `Action`: "Box::Action" */
	struct dw_str action;              /* the action id: "fs:read" */
	struct dw_str kind;                /* "request", "response", "error", … */
	bool has_principal, has_resource;
	struct dw_str principal_type, principal_id;
	struct dw_str resource_type, resource_id;
	bool has_context;                  /* a request context was supplied */
	struct dw_tval context;            /* RECORD (empty when absent) */
	struct dw_tval logged;             /* RECORD */
	uint32_t n_entities;
	struct dw_event_entity *entities;
	uint32_t line;                     /* trace line (diagnostics), 0 otherwise */
};

#endif
