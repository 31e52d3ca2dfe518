/* schema_int.h - the raw schema model shared by the two front ends and the
 * resolver.  Private to src/dogwood/schema*.c.
 *
 * A front end (schema_cedar.c for `.cedarschema`, schema_json.c for JSON)
 * turns one fragment into raw declarations: names as written, types with
 * unresolved references.  schema.c keeps them, checks names across
 * fragments, and at dw_schema_finish resolves every reference, inlines common
 * types and builds the public dw_etype / dw_action / dw_type structures.
 *
 * Two arenas: strings that survive into the finished schema (declared names,
 * action ids, enum ids, attribute names) go to the schema's own arena via
 * dw_sc_keep(); everything else (references, locations, source copies) goes
 * to the build arena, dropped when finish returns. */
#ifndef DW_SCHEMA_INT_H
#define DW_SCHEMA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema.h"

/* Deepest nesting of Set<> and records, in one declaration and after common
 * types are inlined: consumers may then recurse over a dw_type safely. */
#define DW_SCHEMA_MAX_DEPTH 128

/* One added fragment.  src is a copy (human format only), kept so that
 * diagnostics found at finish can still name line and column. */
struct dw_sc_frag {
	const char *file;
	const char *src;
	size_t len;
	bool json;
};

/* Where something was written: a byte span (human format) or a JSON pointer
 * such as "/Box/entityTypes/Agent/shape" (JSON format). */
struct dw_sc_loc {
	const struct dw_sc_frag *frag;
	uint32_t off, end;
	const char *path;
};

enum dw_sc_tkind {
	DW_SC_BOOL = 1,
	DW_SC_LONG,
	DW_SC_STRING,
	DW_SC_SET,
	DW_SC_RECORD,
	DW_SC_REF,        /* a name: common type, entity type or built-in */
	DW_SC_EXT,
};

/* What a name may resolve to (Cedar's ReferenceType). */
enum dw_sc_refkind {
	DW_SC_REF_COMMON = 1,
	DW_SC_REF_ENTITY = 2,
	DW_SC_REF_ANY = 3,
};

enum dw_sc_target { DW_SC_UNRESOLVED = 0, DW_SC_TO_COMMON, DW_SC_TO_ENTITY, DW_SC_TO_BUILTIN };

struct dw_sc_common;
struct dw_sc_entity;
struct dw_sc_action;

/* A declaration whose name was already taken: not kept in the lookup tables. */
enum dw_sc_dup { DW_SC_DUP_NO = 0, DW_SC_DUP_REPORTED, DW_SC_DUP_AT_FINISH };

struct dw_sc_name {
	struct dw_str text;       /* normalized path as written: "A::B" */
	struct dw_str ns;         /* namespace it was written in; "" = empty */
	uint8_t kind;             /* enum dw_sc_refkind */
	uint8_t target;           /* enum dw_sc_target, set by finish */
	union {
		struct dw_sc_common *common;
		struct dw_sc_entity *entity;
		const struct dw_type *builtin;
	} to;
	struct dw_sc_loc loc;
};

struct dw_sc_type;

struct dw_sc_attr {
	struct dw_str name;       /* in the schema arena */
	struct dw_sc_type *type;
	bool required;
	struct dw_sc_loc loc;
};

struct dw_sc_type {
	uint8_t kind;             /* enum dw_sc_tkind */
	union {
		struct dw_sc_type *elem;                          /* SET */
		struct {
			uint32_t n;
			struct dw_sc_attr *v;  /* sorted by name, unique (dw_sc_record_check) */
		} rec;                                            /* RECORD */
		struct dw_sc_name ref;                            /* REF */
		enum dw_ext_type ext;                             /* EXT */
	};
};

/* `type T = ...;` / commonTypes.T */
struct dw_sc_common {
	struct dw_str name;       /* fully qualified */
	struct dw_str ns, base;
	struct dw_sc_type *def;
	struct dw_sc_loc loc;     /* of the declared name */
	/* resolver state */
	const struct dw_type *final;
	uint32_t depth;
	uint32_t n_wait;          /* common types this one still waits for */
	uint32_t users_off, n_users;
	uint8_t dup;              /* enum dw_sc_dup */
};

struct dw_sc_entity {
	struct dw_str name;       /* fully qualified, in the schema arena */
	struct dw_str ns, base;
	struct dw_sc_loc loc;
	bool is_enum;
	uint32_t n_enum;
	struct dw_str *enum_ids;  /* schema arena */
	uint32_t n_parents;
	struct dw_sc_name *parents;
	struct dw_sc_type *shape; /* NULL: no attributes */
	struct dw_sc_type *tags;  /* NULL: no tags */
	uint8_t dup;              /* enum dw_sc_dup */
	/* resolver state */
	struct dw_etype *out;
	struct dw_type *as_type;  /* the ENTITY type naming it */
};

/* A parent action reference: `"x"`, `NS::Action::"x"`, {"id", "type"}. */
struct dw_sc_aref {
	struct dw_str type;       /* as written; empty: none (means `Action`) */
	struct dw_str id;
	struct dw_str ns;
	struct dw_sc_loc loc;
	struct dw_sc_action *to;  /* set by finish */
};

struct dw_sc_action {
	struct dw_str type;       /* "Action" or "NS::Action", schema arena */
	struct dw_str id;         /* schema arena */
	struct dw_str ns;
	struct dw_sc_loc loc;
	uint32_t n_parents;
	struct dw_sc_aref *parents;
	bool has_applies_to;
	uint32_t n_principals, n_resources;
	struct dw_sc_name *principals, *resources;
	struct dw_sc_type *context;   /* NULL: the empty record */
	uint8_t dup;                  /* enum dw_sc_dup */
	/* resolver state */
	struct dw_action *out;
};

struct dw_sc_build;

/* The build state of s, created on first use; NULL on ENOMEM or when s is
 * already finished. */
struct dw_sc_build *dw_sc_build_get(struct dw_schema *s);
struct dw_arena *dw_sc_raw(struct dw_sc_build *b);      /* build arena */
struct dw_arena *dw_sc_out(struct dw_sc_build *b);      /* the schema's arena */
/* Mark the schema as having received a failed fragment: finish refuses it. */
void dw_sc_poison(struct dw_sc_build *b);

/* Register a fragment; copies file and (when keep_src) the source text.  NULL
 * on ENOMEM. */
struct dw_sc_frag *dw_sc_frag_new(struct dw_sc_build *b, const char *file, const char *src,
				  size_t len, bool keep_src);

/* Copy n bytes into the schema arena (NUL added); NULL on ENOMEM. */
char *dw_sc_keep(struct dw_sc_build *b, const char *p, size_t n);
/* "ns::base" (or base when ns is empty) in the given arena; .p NULL on ENOMEM. */
struct dw_str dw_sc_join(struct dw_arena *a, struct dw_str ns, struct dw_str base);

/* Add declarations (the structures are kept, not copied).  A second
 * declaration of the same name in the same fragment is reported at once
 * ("`A` is declared twice") and returns -EINVAL; one in another fragment is
 * reported by finish.  -ENOMEM on allocation failure. */
int dw_sc_add_common(struct dw_sc_build *b, struct dw_sc_common *c, struct dw_diags *d);
int dw_sc_add_entity(struct dw_sc_build *b, struct dw_sc_entity *e, struct dw_diags *d);
int dw_sc_add_action(struct dw_sc_build *b, struct dw_sc_action *a, struct dw_diags *d);

/* Sort a record's attributes by name and refuse duplicates (reported at the
 * later one).  0, -EINVAL or -ENOMEM. */
int dw_sc_record_check(struct dw_sc_build *b, struct dw_sc_type *rec, struct dw_diags *d);

/* Report an error at loc.  Returns -EINVAL, or -ENOMEM if the diagnostic
 * could not be recorded. */
int dw_sc_error(struct dw_diags *d, const struct dw_sc_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int dw_sc_warning(struct dw_diags *d, const struct dw_sc_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Identifier rules shared by both formats. */
bool dw_sc_is_ident(const char *p, size_t n);          /* [_a-zA-Z][_a-zA-Z0-9]* */
bool dw_sc_is_reserved_ident(const char *p, size_t n); /* true, false, if, ... */
/* Common-type basenames Cedar refuses: Bool, Boolean, Entity, Extension, Long,
 * Record, Set, String. */
bool dw_sc_is_reserved_type_name(const char *p, size_t n);
/* Extension type by name ("ipaddr", ...); 0 when unknown. */
enum dw_ext_type dw_sc_ext_by_name(const char *p, size_t n);

#endif
