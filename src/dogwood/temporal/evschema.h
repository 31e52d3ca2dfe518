/* evschema.h - event schemas (docs/formats.md §3).
 *
 * An event schema says, for every action of the action schema, which event
 * kinds exist, which of them decide, and which fields each kind's logged
 * record has (dotted leaf paths with Cedar types).  It comes from a `.dwschema`
 * file or, when none is given, from the default schema (for each action A:
 * `decision event <A>::request`, `event <A>::response`, `event <A>::error`
 * with exactly the fields of Box's tests/data/box/box-events.dwschema: inputs, outputs
 * on responses, callerPrincipal, callerResource, requestId).
 *
 * Building one is two steps: parse the text (or take the default), then derive
 * it against a finished action schema.  The result is read-only and belongs to
 * its own arena. */
#ifndef DW_EVSCHEMA_H
#define DW_EVSCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "schema.h"
#include "util.h"

/* The default cap on any `within` window when the schema sets none: 24h. */
#define DW_DEFAULT_MAX_WINDOW_S (24 * 3600)

/* What a pinned field is pinned to. */
enum dw_pin_root { DW_PIN_NONE = 0, DW_PIN_PRINCIPAL, DW_PIN_RESOURCE, DW_PIN_CONTEXT };

/* A leaf field of an event.  Its type is one of: a Cedar type from the action
 * schema (type != NULL), or an entity-type set from principalType(A) /
 * resourceType(A) (n_etypes > 0, type == NULL), or a type named in the
 * .dwschema (type points at a static Bool/Long/String/extension type or an
 * entity type owned by the event schema). */
struct dw_evfield {
	struct dw_str path;                 /* "input.path", "callerPrincipal", "a.b.c" */
	const struct dw_type *type;
	uint32_t n_etypes;                  /* 0 with type == NULL: principalType(A) or
					     * resourceType(A) of an action without
					     * appliesTo (matches nothing) */
	const struct dw_etype **etypes;     /* borrowed from the action schema */
	bool optional;                      /* may be absent (optional in the action schema) */
	uint8_t pin;                        /* enum dw_pin_root */
	struct dw_str pin_path;             /* PRINCIPAL/RESOURCE: attribute path ("" = the
					     * entity itself); CONTEXT: path under context */
};

/* One derived event: (action, kind). */
struct dw_evdecl {
	const struct dw_action *action;     /* in the action schema */
	struct dw_str ns;                   /* "Box::Action" (the action's entity type) */
	struct dw_str id;                   /* "fs:read" */
	struct dw_str kind;                 /* "request" */
	bool decision;
	uint32_t n_fields;
	const struct dw_evfield *fields;    /* sorted by path */
	uint32_t index;                     /* position in dw_evschema.decls */
	/* Every group path, sorted: spread groups ("input", also when the action
	 * has no such attribute), record fields ("meta", also when empty) and
	 * record-typed members of the action's records ("input.meta"). */
	uint32_t n_groups;
	const struct dw_str *groups;
};

struct dw_evschema_tables;

struct dw_evschema {
	struct dw_arena arena;
	int64_t max_window_s;               /* cap on any window, seconds */
	uint32_t n_decls;
	const struct dw_evdecl **decls;     /* action order, then declaration order */
	uint32_t n_kinds;
	const struct dw_str *kinds;         /* distinct kind names, declaration order */
	const bool *kind_decides;           /* per kind: is it a decision kind */
	/* Universal symmetric pins (docs/formats.md §3): fields pinned on every declared kind to
	 * their own request path; non-empty switches evaluation to key-local
	 * semantics keyed by these fields. */
	uint32_t n_key_fields;
	const struct dw_evfield *key_fields;  /* sorted by path; type as on decls[0] */
	struct dw_evschema_tables *t;       /* private lookup state */
};

/* A parsed .dwschema, not yet derived against an action schema. */
struct dw_evschema_src;

/* Parse a .dwschema text (file names it in diagnostics: file:line:col).  0 and
 * *out, or -EINVAL (diags), or -ENOMEM.  Free with dw_evschema_src_free. */
int dw_evschema_parse(const char *file, const char *text, size_t len,
		      struct dw_evschema_src **out, struct dw_diags *diags);
/* The default schema (never fails except -ENOMEM).  Its text is
 * dw_evschema_default_text (tests/data/box/box-events.dwschema). */
int dw_evschema_default(struct dw_evschema_src **out);
extern const char dw_evschema_default_text[];
void dw_evschema_src_free(struct dw_evschema_src *src);

/* Derive the events of every action of `actions` (finished).  0 and *out, or
 * -EINVAL with diagnostics (selector naming another binder, spreading a
 * non-record, duplicate groups/fields, pins without values, …), or -ENOMEM.
 * (The checks that need no action schema already ran in dw_evschema_parse;
 * derive reports unknown type names, a non-record `context.input`/`output`,
 * ambiguous dotted paths and oversized events.)  src is not kept: it may be
 * freed right after.  The result borrows `actions` (action, etypes, types):
 * free it before the action schema. */
int dw_evschema_derive(const struct dw_evschema_src *src, const struct dw_schema *actions,
		       struct dw_evschema **out, struct dw_diags *diags);
void dw_evschema_free(struct dw_evschema *es);

/* Lookups: NULL when absent.  ns is the action entity type ("Box::Action"). */
const struct dw_evdecl *dw_evschema_find(const struct dw_evschema *es, struct dw_str ns,
					 struct dw_str id, struct dw_str kind);
const struct dw_evfield *dw_evdecl_field(const struct dw_evdecl *d, struct dw_str path);
/* Is path a group (a proper prefix of some field's path, e.g. "input")? */
bool dw_evdecl_is_group(const struct dw_evdecl *d, struct dw_str path);
/* Is kind a decision kind (of any declaration)? */
bool dw_evschema_decides(const struct dw_evschema *es, struct dw_str kind);

#endif
