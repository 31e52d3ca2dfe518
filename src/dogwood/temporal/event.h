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
 * event (a trace's arena, a builder's arena, a history blob).
 *
 * An event read back from the history may carry an annotation: what was decided
 * about it, and the enforcement point's note (docs/formats.md §5).  It is
 * history only: no rule, Cedar request or incremental state ever reads it. */
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

/* The cause of a stored decision: enum dw_cause's values (dogwood.h), which
 * monitor.c asserts are these. */
enum dw_annot_cause {
	DW_AC_PERMITTED = 0,
	DW_AC_FORBIDDEN,
	DW_AC_NO_MATCH,
	DW_AC_INTERNAL_FAULT,
	DW_AC_COUNT
};
/* A note is at most this many bytes of UTF-8 (dw_request_set_note). */
#define DW_NOTE_MAX 1024u

/* Absent strings have n == 0: none that is present may be empty. */
struct dw_event_annot {
	bool has_decision;
	uint8_t cause;                     /* enum dw_annot_cause; the verdict is
					    * permit iff the cause is permitted */
	uint32_t n_ids;                    /* the determining rules' ids, in order */
	struct dw_str *ids;
	struct dw_str reason;              /* the denial text: denies only */
	struct dw_str description;         /* the governing rule's: permitted or
					    * forbidden, with at least one id */
	struct dw_str note;                /* the enforcement point's; with or
					    * without a decision */
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
	const struct dw_event_annot *annot; /* NULL: none (see the top of this file) */
};

#endif
