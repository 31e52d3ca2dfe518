/* schema.h - Cedar schemas: entity types, actions, types.
 *
 * A schema is built from one or more fragments (Cedar's human format and its
 * JSON format may be mixed), then finished: every type reference is resolved
 * (common types inlined, `__cedar::` built-ins, namespace lookup rules of
 * Cedar's schema grammar; docs/formats.md §1), so consumers only ever see
 * resolved dw_type trees.
 * All memory belongs to the schema's arena. */
#ifndef DW_SCHEMA_H
#define DW_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "util.h"

enum dw_tkind {
	DW_T_BOOL = 1,
	DW_T_LONG,
	DW_T_STRING,
	DW_T_SET,
	DW_T_RECORD,
	DW_T_ENTITY,
	DW_T_EXT,
};

enum dw_ext_type { DW_EXT_IPADDR = 1, DW_EXT_DECIMAL, DW_EXT_DATETIME, DW_EXT_DURATION };

struct dw_type;
struct dw_etype;

struct dw_attr {
	struct dw_str name;
	const struct dw_type *type;
	bool required;
};

struct dw_type {
	enum dw_tkind kind;
	union {
		const struct dw_type *elem;                    /* SET */
		struct {
			uint32_t n;
			const struct dw_attr *v;               /* sorted by name, unique */
		} rec;                                         /* RECORD */
		const struct dw_etype *entity;                 /* ENTITY */
		enum dw_ext_type ext;                          /* EXT */
	};
};

struct dw_etype {
	struct dw_str name;                 /* fully qualified, e.g. "Box::Agent" */
	const struct dw_type *shape;        /* always a RECORD (empty when omitted) */
	const struct dw_type *tags;         /* NULL: this type has no tags */
	uint32_t n_member_of;
	const struct dw_etype **member_of;  /* allowed parent types */
	bool is_enum;
	uint32_t n_enum;
	const struct dw_str *enum_ids;      /* declared ids, in order */
	uint32_t index;                     /* position in dw_schema.etypes */
};

struct dw_action {
	struct dw_str type;                 /* "Action" or "NS::Action" */
	struct dw_str id;
	uint32_t n_parents;
	const struct dw_action **parents;   /* direct action groups (declared actions) */
	bool has_applies_to;                /* false: applies to no request */
	uint32_t n_principals;
	const struct dw_etype **principals;
	uint32_t n_resources;
	const struct dw_etype **resources;
	const struct dw_type *context;      /* a RECORD (empty when omitted) */
	uint32_t index;                     /* position in dw_schema.actions */
};

struct dw_schema_tables;

struct dw_schema {
	struct dw_arena arena;
	uint32_t n_etypes;
	const struct dw_etype **etypes;     /* declaration order */
	uint32_t n_actions;
	const struct dw_action **actions;   /* declaration order */
	struct dw_schema_tables *t;         /* private lookup state */
	bool finished;
};

/* Empty, unfinished schema; NULL on ENOMEM.  Free with dw_schema_free. */
struct dw_schema *dw_schema_new(void);
void dw_schema_free(struct dw_schema *s);           /* NULL is a no-op */

/* Add one fragment.  Errors go to diags (with file:line:col for the human
 * format; with the JSON path for the JSON format) and the call returns -EINVAL;
 * a schema that received a failed fragment must not be finished.  -ENOMEM on
 * allocation failure.  file names the input in diagnostics. */
int dw_schema_add_cedar(struct dw_schema *s, const char *file, const char *src, size_t len,
			struct dw_diags *diags);
int dw_schema_add_json(struct dw_schema *s, const char *file, const char *src, size_t len,
		       struct dw_diags *diags);
/* Resolve references across all fragments and check the whole (duplicates,
 * undefined types, common-type cycles, action-group cycles, shadowing).
 * 0 or -EINVAL (diags filled).  After success the schema is read-only and safe
 * to share between threads. */
int dw_schema_finish(struct dw_schema *s, struct dw_diags *diags);

/* Lookups on a finished schema; NULL when absent. */
const struct dw_etype *dw_schema_find_etype(const struct dw_schema *s, struct dw_str name);
const struct dw_action *dw_schema_find_action(const struct dw_schema *s, struct dw_str type,
					      struct dw_str id);
/* True when `a in g` holds through the action hierarchy (reflexive). */
bool dw_schema_action_in(const struct dw_schema *s, const struct dw_action *a,
			 const struct dw_action *g);
/* True when name is an action entity type declared by the schema ("Action",
 * "NS::Action" for a namespace with at least one action). */
bool dw_schema_is_action_type(const struct dw_schema *s, struct dw_str name);

/* Render a type for messages ("Set<String>", "{ a: Long, b?: String }"). */
struct dw_buf;
int dw_type_format(struct dw_buf *b, const struct dw_type *t);

#endif
