/* validate.c - Cedar's strict validator (validate.h).
 *
 * A port of cedar-policy-core's validator (validator/typecheck.rs, types.rs,
 * rbac.rs, schema.rs) as cedar-wasm 4.13 behaves; where Rust versions differ,
 * what cedar-wasm 4.13 answers decides, and the Lean model
 * (cedar-spec Validation/Typechecker.lean) settles what the Rust leaves implicit
 * (action entities: no attributes, no tags, typed by their entity type).
 *
 * Divisions (keep them in this order):
 *   1. validator types and the validation context
 *   2. conversion from schema types, display of types
 *   3. subtyping and least upper bounds
 *   4. capabilities (what `has` / `hasTag` guards make safe to read) and
 *      expression shapes
 *   5. diagnostics: Cedar's escaping and message shapes, one report per policy,
 *      the spans Cedar gives member chains
 *   6. the single-environment type checker
 *   7. checks made once per policy: entity types, enum ids, action ids,
 *      action application
 *   8. request environments, the impossible-policy warning, dw_validate
 *
 * Two facts shape it.  A policy is valid when no error was reported: a
 * sub-expression may fail without a message of its own (an unknown entity
 * literal, reported by division 7), which, as with Rust's TypecheckAnswer, only
 * changes the types and capabilities around it.  And an error is reported once
 * per policy however many request environments find it (Rust collects errors in
 * a HashSet); errors that name the environment (`in context for Action::"a"`)
 * are distinct per environment, as in Rust. */
#include "validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"

/* Nesting accepted in one expression (the parser bounds it at a few hundred
 * levels, macro expansion can add as much again) and in one type. */
#define VD_MAX_EXPR_DEPTH 1024
#define VD_MAX_TYPE_DEPTH 2048
/* Steps of type comparison per request environment.  Schema types are DAGs
 * (common types are shared), so a comparison of two distinct but equal DAGs
 * can cost exponential time; Rust would have run out of memory inlining such
 * a schema. */
#define VD_TYPE_BUDGET 20000000u

/* ---- 1. validator types and the validation context ------------------------ */

/* The order of the kinds is the derived order of Cedar 4.13's `Type` (Bool
 * before its singletons, entities before sets and records), which sorts the
 * types an "incompatible types" message names. */
enum vd_kind {
	VD_NEVER = 0,
	VD_BOOL,
	VD_TRUE,
	VD_FALSE,
	VD_LONG,
	VD_STRING,
	VD_ANY_ENTITY,
	VD_ENTITY,
	VD_SET,
	VD_RECORD,
	VD_EXT,
};

struct vd_attr;

struct vd_type {
	uint8_t kind;          /* enum vd_kind */
	bool open;             /* RECORD: may hold attributes it does not list */
	uint32_t n;            /* RECORD: number of attributes */
	union {
		const struct vd_type *elem;   /* SET; NULL: any set (an expectation only) */
		const struct vd_attr *attrs;  /* RECORD: sorted by name, unique */
		struct {
			struct dw_str name;
			/* NULL for an action entity type: no attributes, no tags */
			const struct dw_etype *et;
		} ent;
		enum dw_ext_type ext;
	};
};

struct vd_attr {
	struct dw_str name;
	const struct vd_type *type;
	bool required;
};

static const struct vd_type vd_t_never = { .kind = VD_NEVER };
static const struct vd_type vd_t_true = { .kind = VD_TRUE };
static const struct vd_type vd_t_false = { .kind = VD_FALSE };
static const struct vd_type vd_t_bool = { .kind = VD_BOOL };
static const struct vd_type vd_t_long = { .kind = VD_LONG };
static const struct vd_type vd_t_string = { .kind = VD_STRING };
static const struct vd_type vd_t_any_entity = { .kind = VD_ANY_ENTITY };
static const struct vd_type vd_t_any_record = { .kind = VD_RECORD, .open = true };
static const struct vd_type vd_t_empty_record = { .kind = VD_RECORD };
static const struct vd_type vd_t_any_set = { .kind = VD_SET, .elem = NULL };
static const struct vd_type vd_t_set_any_entity = { .kind = VD_SET, .elem = &vd_t_any_entity };
static const struct vd_type vd_t_ext[] = {
	[DW_EXT_IPADDR] = { .kind = VD_EXT, .ext = DW_EXT_IPADDR },
	[DW_EXT_DECIMAL] = { .kind = VD_EXT, .ext = DW_EXT_DECIMAL },
	[DW_EXT_DATETIME] = { .kind = VD_EXT, .ext = DW_EXT_DATETIME },
	[DW_EXT_DURATION] = { .kind = VD_EXT, .ext = DW_EXT_DURATION },
};

static const char *vd_ext_name(enum dw_ext_type e)
{
	switch (e) {
	case DW_EXT_IPADDR: return "ipaddr";
	case DW_EXT_DECIMAL: return "decimal";
	case DW_EXT_DATETIME: return "datetime";
	case DW_EXT_DURATION: return "duration";
	}
	return "?";
}

static bool vd_is_bool(const struct vd_type *t)
{
	return t->kind == VD_TRUE || t->kind == VD_FALSE || t->kind == VD_BOOL;
}

/* Cedar's EntityType::is_action: the last path component is `Action`. */
static bool vd_is_action_type(struct dw_str name)
{
	return dw_str_eq_c(name, "Action") ||
	       (name.n > 8 && memcmp(name.p + name.n - 8, "::Action", 8) == 0);
}

static const struct vd_attr *vd_find_attr(const struct vd_type *rec, struct dw_str name)
{
	uint32_t lo = 0, hi = rec->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(rec->attrs[mid].name, name);

		if (c == 0)
			return &rec->attrs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct vd_memo {
	const void *key;
	const struct vd_type *val;
};

/* The type each node had in the current environment: the attribute-access
 * messages walk a chain like `context.a.b` and name what the chain reached. */
struct vd_node_type {
	const struct dw_expr *key;
	const struct vd_type *type;
	uint32_t gen;
};

/* Cedar gives every access of a member chain `a.b.c(..)` the span of the
 * whole chain; our parser ends each node at its own name. */
struct vd_loc {
	const struct dw_expr *key;
	uint32_t end;
};

struct vd_seen {
	uint64_t hash;
	uint32_t off, end;
	const char *msg;      /* in the policy arena */
};

struct vd_ctx {
	const struct dw_policy_set *ps;
	const struct dw_schema *s;
	struct dw_diags *diags;
	int err;                          /* -ENOMEM once anything ran out */

	struct dw_arena arena;            /* types converted from the schema; the whole call */
	struct dw_arena pol_arena;        /* the current policy: synthetic nodes, messages */
	struct dw_arena scratch;          /* the current environment */
	struct dw_arena_mark scratch_mark;

	struct vd_memo *memo;             /* schema type -> validator type */
	size_t memo_cap, memo_n;
	const struct vd_type **etype_t;   /* per etype index: its entity type */
	const struct vd_type **shape_t;   /* per etype index: its attributes (a record) */
	const struct vd_type **tags_t;    /* per etype index: its tag type, NULL when none */
	uint32_t *mark;                   /* per etype index: memberOf search */
	uint32_t stamp;

	/* the policy being checked */
	const struct dw_policy *pol;
	bool errors;                      /* this policy has an error */
	struct vd_seen *seen;
	size_t seen_cap, seen_n;
	struct vd_node_type *nt;
	size_t nt_cap;
	uint32_t gen;
	struct vd_loc *locs;              /* member chains: where each node ends */
	size_t locs_cap;
	unsigned depth;
	size_t budget;
	bool budget_reported;

	/* the request environment */
	const struct dw_action *act;
	struct dw_uid act_uid;
	const struct vd_type *principal_t, *resource_t, *action_t, *context_t;
	const struct vd_type *pslot_t, *rslot_t;   /* template slots; NULL: any entity */
};

static void vd_nomem(struct vd_ctx *v)
{
	v->err = -ENOMEM;
}

/* ---- 2. conversion from schema types, display ------------------------------ */

static uint64_t vd_ptr_hash(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static const struct vd_type *vd_memo_get(const struct vd_ctx *v, const void *key)
{
	if (v->memo_cap == 0)
		return NULL;
	for (size_t i = vd_ptr_hash(key) & (v->memo_cap - 1);; i = (i + 1) & (v->memo_cap - 1)) {
		if (v->memo[i].key == NULL)
			return NULL;
		if (v->memo[i].key == key)
			return v->memo[i].val;
	}
}

static void vd_memo_put(struct vd_ctx *v, const void *key, const struct vd_type *val)
{
	if ((v->memo_n + 1) * 2 > v->memo_cap) {
		size_t cap = v->memo_cap ? v->memo_cap * 2 : 256;
		struct vd_memo *nm = calloc(cap, sizeof *nm);

		if (nm == NULL) {
			vd_nomem(v);
			return;
		}
		for (size_t i = 0; i < v->memo_cap; i++) {
			size_t j;

			if (v->memo[i].key == NULL)
				continue;
			for (j = vd_ptr_hash(v->memo[i].key) & (cap - 1); nm[j].key != NULL;
			     j = (j + 1) & (cap - 1))
				;
			nm[j] = v->memo[i];
		}
		free(v->memo);
		v->memo = nm;
		v->memo_cap = cap;
	}
	size_t i = vd_ptr_hash(key) & (v->memo_cap - 1);

	while (v->memo[i].key != NULL)
		i = (i + 1) & (v->memo_cap - 1);
	v->memo[i].key = key;
	v->memo[i].val = val;
	v->memo_n++;
}

static const struct vd_type *vd_entity_type(struct vd_ctx *v, const struct dw_etype *et)
{
	struct vd_type *t;

	if (v->etype_t[et->index] != NULL)
		return v->etype_t[et->index];
	t = DW_NEW(&v->arena, struct vd_type);
	if (t == NULL) {
		vd_nomem(v);
		return &vd_t_any_entity;
	}
	t->kind = VD_ENTITY;
	t->ent.name = et->name;
	t->ent.et = et;
	v->etype_t[et->index] = t;
	return t;
}

/* The validator type of a resolved schema type.  Memoized by node, so the
 * result is a DAG of the same size as the schema's. */
static const struct vd_type *vd_from_schema(struct vd_ctx *v, const struct dw_type *st)
{
	const struct vd_type *m;
	struct vd_type *t;

	switch (st->kind) {
	case DW_T_BOOL: return &vd_t_bool;
	case DW_T_LONG: return &vd_t_long;
	case DW_T_STRING: return &vd_t_string;
	case DW_T_EXT: return &vd_t_ext[st->ext];
	case DW_T_ENTITY: return vd_entity_type(v, st->entity);
	case DW_T_SET:
	case DW_T_RECORD:
		break;
	}
	if ((m = vd_memo_get(v, st)) != NULL)
		return m;
	t = DW_NEW(&v->arena, struct vd_type);
	if (t == NULL) {
		vd_nomem(v);
		return &vd_t_never;
	}
	if (st->kind == DW_T_SET) {
		t->kind = VD_SET;
		t->elem = vd_from_schema(v, st->elem);
	} else {
		struct vd_attr *a = DW_NEWN(&v->arena, struct vd_attr, st->rec.n ? st->rec.n : 1);

		if (a == NULL) {
			vd_nomem(v);
			return &vd_t_never;
		}
		for (uint32_t i = 0; i < st->rec.n; i++) {
			a[i].name = st->rec.v[i].name;
			a[i].required = st->rec.v[i].required;
			a[i].type = vd_from_schema(v, st->rec.v[i].type);
		}
		t->kind = VD_RECORD;
		t->n = st->rec.n;
		t->attrs = a;
	}
	vd_memo_put(v, st, t);
	return t;
}

/* The attributes of an entity type, as a record; an action type has none. */
static const struct vd_type *vd_entity_attrs(struct vd_ctx *v, const struct vd_type *ent)
{
	const struct dw_etype *et = ent->ent.et;

	if (et == NULL || et->shape == NULL)
		return &vd_t_empty_record;
	if (v->shape_t[et->index] == NULL)
		v->shape_t[et->index] = vd_from_schema(v, et->shape);
	return v->shape_t[et->index];
}

static const struct vd_type *vd_entity_tags(struct vd_ctx *v, const struct dw_etype *et)
{
	if (et == NULL || et->tags == NULL)
		return NULL;
	if (v->tags_t[et->index] == NULL)
		v->tags_t[et->index] = vd_from_schema(v, et->tags);
	return v->tags_t[et->index];
}

/* Display as Rust's `impl Display for Type` does. */
static int vd_type_fmt(struct dw_buf *b, const struct vd_type *t, unsigned depth)
{
	int r = 0;

	if (depth > VD_MAX_TYPE_DEPTH || b->n > 4096)
		return dw_buf_put(b, "...", 3);
	switch (t->kind) {
	case VD_NEVER: return dw_buf_printf(b, "__cedar::internal::Never");
	case VD_TRUE: return dw_buf_printf(b, "__cedar::internal::True");
	case VD_FALSE: return dw_buf_printf(b, "__cedar::internal::False");
	case VD_BOOL: return dw_buf_printf(b, "Bool");
	case VD_LONG: return dw_buf_printf(b, "Long");
	case VD_STRING: return dw_buf_printf(b, "String");
	case VD_ANY_ENTITY: return dw_buf_printf(b, "__cedar::internal::AnyEntity");
	case VD_ENTITY: return dw_buf_put(b, t->ent.name.p, t->ent.name.n);
	case VD_EXT: return dw_buf_printf(b, "%s", vd_ext_name(t->ext));
	case VD_SET:
		if (t->elem == NULL)
			return dw_buf_printf(b, "Set<__cedar::internal::Any>");
		if ((r = dw_buf_put(b, "Set<", 4)) < 0 || (r = vd_type_fmt(b, t->elem, depth + 1)) < 0)
			return r;
		return dw_buf_putc(b, '>');
	case VD_RECORD:
		if (t->open && (r = dw_buf_printf(b, "__cedar::internal::OpenRecord")) < 0)
			return r;
		if ((r = dw_buf_putc(b, '{')) < 0)
			return r;
		for (uint32_t i = 0; i < t->n; i++) {
			const struct vd_attr *a = &t->attrs[i];

			/* raw, as Cedar prints it, but for NUL, which would end the message */
			for (uint32_t k = 0; r == 0 && k < a->name.n; k++)
				r = a->name.p[k] ? dw_buf_putc(b, a->name.p[k]) : dw_buf_put(b, "\\0", 2);
			if (r < 0 || (!a->required && (r = dw_buf_putc(b, '?')) < 0) ||
			    (r = dw_buf_put(b, ": ", 2)) < 0 ||
			    (r = vd_type_fmt(b, a->type, depth + 1)) < 0 || (r = dw_buf_putc(b, ',')) < 0)
				return r;
		}
		return dw_buf_putc(b, '}');
	}
	return dw_buf_putc(b, '?');
}

/* Rust's derived order on `Type`: sorts the types an error lists.  *steps
 * bounds the walk (a DAG compared as a tree can be exponential): past it, types
 * compare equal, which only affects the order of a message. */
static int vd_type_cmp(const struct vd_type *a, const struct vd_type *b, unsigned depth,
		       size_t *steps)
{
	int c;

	if (a == b || depth > VD_MAX_TYPE_DEPTH || *steps == 0)
		return 0;
	--*steps;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	switch (a->kind) {
	case VD_SET:
		if (a->elem == NULL || b->elem == NULL)
			return (a->elem != NULL) - (b->elem != NULL);
		return vd_type_cmp(a->elem, b->elem, depth + 1, steps);
	case VD_RECORD:
		for (uint32_t i = 0; i < a->n && i < b->n; i++) {
			if ((c = dw_str_cmp(a->attrs[i].name, b->attrs[i].name)) != 0 ||
			    (c = vd_type_cmp(a->attrs[i].type, b->attrs[i].type, depth + 1, steps)) != 0)
				return c;
			if (a->attrs[i].required != b->attrs[i].required)
				return a->attrs[i].required ? 1 : -1;
		}
		if (a->n != b->n)
			return a->n < b->n ? -1 : 1;
		return (a->open > b->open) - (a->open < b->open);
	case VD_ENTITY:
		return dw_str_cmp(a->ent.name, b->ent.name);
	case VD_EXT:
		return strcmp(vd_ext_name(a->ext), vd_ext_name(b->ext));
	default:
		return 0;
	}
}

/* ---- 3. subtyping and least upper bounds --------------------------------- */

/* Spend one step of the environment's comparison budget; false once it is gone. */
static bool vd_step(struct vd_ctx *v)
{
	if (v->budget == 0)
		return false;
	v->budget--;
	return true;
}

/* Same set of attribute names, in the same (sorted) order. */
static bool vd_same_keys(const struct vd_type *a, const struct vd_type *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (!dw_str_eq(a->attrs[i].name, b->attrs[i].name))
			return false;
	return true;
}

static bool vd_sub(struct vd_ctx *v, const struct vd_type *a, const struct vd_type *b,
		   bool strict, unsigned depth);

/* Every attribute of b is in a, with a compatible qualifier and a subtype. */
static bool vd_attrs_sub(struct vd_ctx *v, const struct vd_type *a, const struct vd_type *b,
			 bool strict, unsigned depth)
{
	for (uint32_t i = 0; i < b->n; i++) {
		const struct vd_attr *bt = &b->attrs[i], *at = vd_find_attr(a, bt->name);

		if (at == NULL)
			return false;
		if (strict ? at->required != bt->required : (!at->required && bt->required))
			return false;
		if (!vd_sub(v, at->type, bt->type, strict, depth + 1))
			return false;
	}
	return true;
}

/* Type::is_subtype.  strict is ValidationMode::Strict; the expectations of the
 * type checker (an operand must be an entity, a record, a set) use permissive
 * subtyping, as in Rust's expect_one_of_types. */
static bool vd_sub(struct vd_ctx *v, const struct vd_type *a, const struct vd_type *b,
		   bool strict, unsigned depth)
{
	if (a == b)
		return true;
	if (depth > VD_MAX_TYPE_DEPTH || !vd_step(v))
		return false;
	if (a->kind == VD_NEVER)
		return true;
	switch (b->kind) {
	case VD_BOOL:
		return vd_is_bool(a);
	case VD_TRUE:
	case VD_FALSE:
	case VD_LONG:
	case VD_STRING:
	case VD_ANY_ENTITY:
		if (b->kind == VD_ANY_ENTITY && a->kind == VD_ENTITY)
			return !strict;
		return a->kind == b->kind;
	case VD_SET:
		if (a->kind != VD_SET)
			return false;
		if (b->elem == NULL)
			return true;
		if (a->elem == NULL)
			return false;
		return vd_sub(v, a->elem, b->elem, strict, depth + 1);
	case VD_RECORD:
		if (a->kind != VD_RECORD || (a->open && !b->open))
			return false;
		/* width subtyping only when b is open and the mode permissive */
		if (b->open && !strict && vd_attrs_sub(v, a, b, strict, depth))
			return true;
		return vd_same_keys(a, b) && vd_attrs_sub(v, a, b, strict, depth);
	case VD_ENTITY:
		return a->kind == VD_ENTITY && dw_str_eq(a->ent.name, b->ent.name);
	case VD_EXT:
		return a->kind == VD_EXT && a->ext == b->ext;
	case VD_NEVER:
		return false;
	}
	return false;
}

/* Why two types have no least upper bound (Rust's LubHelp). */
enum vd_hint {
	VD_HINT_NONE = 0,
	VD_HINT_QUALIFIER,
	VD_HINT_WIDTH,
	VD_HINT_ENTITY,
	VD_HINT_ENTITY_RECORD,
};

/* Type::least_upper_bound in strict mode: the result, or NULL with *hint. */
static const struct vd_type *vd_lub(struct vd_ctx *v, const struct vd_type *a,
				    const struct vd_type *b, enum vd_hint *hint, unsigned depth)
{
	*hint = VD_HINT_NONE;
	if (vd_sub(v, a, b, true, depth))
		return b;
	if (vd_sub(v, b, a, true, depth))
		return a;
	if (depth > VD_MAX_TYPE_DEPTH || !vd_step(v))
		return NULL;
	if ((a->kind == VD_TRUE || a->kind == VD_FALSE) && (b->kind == VD_TRUE || b->kind == VD_FALSE))
		return &vd_t_bool;
	if (a->kind == VD_SET && b->kind == VD_SET) {
		const struct vd_type *e;
		struct vd_type *t;

		if (a->elem == NULL || b->elem == NULL)
			return &vd_t_any_set;
		if ((e = vd_lub(v, a->elem, b->elem, hint, depth + 1)) == NULL)
			return NULL;
		if ((t = DW_NEW(&v->scratch, struct vd_type)) == NULL) {
			vd_nomem(v);
			return NULL;
		}
		t->kind = VD_SET;
		t->elem = e;
		return t;
	}
	if (a->kind == VD_RECORD && b->kind == VD_RECORD) {
		struct vd_type *t;
		struct vd_attr *at;

		if (!vd_same_keys(a, b)) {
			*hint = VD_HINT_WIDTH;
			return NULL;
		}
		t = DW_NEW(&v->scratch, struct vd_type);
		at = DW_NEWN(&v->scratch, struct vd_attr, a->n ? a->n : 1);
		if (t == NULL || at == NULL) {
			vd_nomem(v);
			return NULL;
		}
		for (uint32_t i = 0; i < a->n; i++) {
			at[i].name = a->attrs[i].name;
			at[i].type = vd_lub(v, a->attrs[i].type, b->attrs[i].type, hint, depth + 1);
			if (at[i].type == NULL)
				return NULL;
			if (a->attrs[i].required != b->attrs[i].required) {
				*hint = VD_HINT_QUALIFIER;
				return NULL;
			}
			at[i].required = a->attrs[i].required;
		}
		t->kind = VD_RECORD;
		t->open = a->open || b->open;
		t->n = a->n;
		t->attrs = at;
		return t;
	}
	bool ae = a->kind == VD_ENTITY || a->kind == VD_ANY_ENTITY;
	bool be = b->kind == VD_ENTITY || b->kind == VD_ANY_ENTITY;

	if (ae && be)
		*hint = VD_HINT_ENTITY;
	else if ((ae && b->kind == VD_RECORD) || (be && a->kind == VD_RECORD))
		*hint = VD_HINT_ENTITY_RECORD;
	return NULL;
}

/* Are the types surely disjoint?  Only entity types are decided (by name);
 * anything else is conservatively "maybe not" (Type::are_types_disjoint). */
static bool vd_disjoint(const struct vd_type *a, const struct vd_type *b)
{
	return a->kind == VD_ENTITY && b->kind == VD_ENTITY && !dw_str_eq(a->ent.name, b->ent.name);
}

/* Type::lookup_attribute_type: NULL when the attribute is not known. */
static const struct vd_attr *vd_lookup_attr(struct vd_ctx *v, const struct vd_type *t,
					    struct dw_str name)
{
	if (t->kind == VD_RECORD)
		return vd_find_attr(t, name);
	if (t->kind == VD_ENTITY) {
		return vd_find_attr(vd_entity_attrs(v, t), name);
	}
	return NULL;
}

/* Type::may_have_attr. */
static bool vd_may_have_attr(struct vd_ctx *v, const struct vd_type *t, struct dw_str name)
{
	switch (t->kind) {
	case VD_NEVER:
	case VD_ANY_ENTITY:
		return true;
	case VD_RECORD:
		return t->open || vd_find_attr(t, name) != NULL;
	case VD_ENTITY:
		return vd_lookup_attr(v, t, name) != NULL;
	default:
		return false;
	}
}

/* ---- 4. capabilities and expression shapes ------------------------------- */

/* Two expressions of the same shape (spans ignored): Rust's ExprShapeOnly. */
static bool vd_shape_eq(const struct dw_expr *a, const struct dw_expr *b, unsigned depth)
{
	if (a == b)
		return true;
	if (a == NULL || b == NULL || a->op != b->op || depth > VD_MAX_EXPR_DEPTH)
		return false;
	switch (a->op) {
	case DW_E_LIT:
		return a->lit.kind == b->lit.kind && dw_val_eq(a->lit, b->lit);
	case DW_E_VAR:
	case DW_E_SLOT:
		return a->var == b->var;
	case DW_E_NOT:
	case DW_E_NEG:
		return vd_shape_eq(a->k.a, b->k.a, depth + 1);
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		return vd_shape_eq(a->k.a, b->k.a, depth + 1) && vd_shape_eq(a->k.b, b->k.b, depth + 1);
	case DW_E_IF:
		return vd_shape_eq(a->k.a, b->k.a, depth + 1) && vd_shape_eq(a->k.b, b->k.b, depth + 1) &&
		       vd_shape_eq(a->k.c, b->k.c, depth + 1);
	case DW_E_HAS:
	case DW_E_ATTR:
	case DW_E_IS:
		return dw_str_eq(a->attr.name, b->attr.name) &&
		       vd_shape_eq(a->attr.e, b->attr.e, depth + 1);
	case DW_E_LIKE:
		if (a->like.pat->n_pieces != b->like.pat->n_pieces)
			return false;
		for (uint32_t i = 0; i < a->like.pat->n_pieces; i++)
			if (!dw_str_eq(a->like.pat->piece[i], b->like.pat->piece[i]))
				return false;
		return vd_shape_eq(a->like.e, b->like.e, depth + 1);
	case DW_E_SET:
	case DW_E_CALL:
		if (a->n != b->n || a->fn != b->fn)
			return false;
		for (uint32_t i = 0; i < a->n; i++)
			if (!vd_shape_eq(a->list.items[i], b->list.items[i], depth + 1))
				return false;
		return true;
	case DW_E_RECORD:
		/* a record literal is a map: compare by key */
		if (a->n != b->n)
			return false;
		for (uint32_t i = 0; i < a->n; i++) {
			uint32_t j;

			for (j = 0; j < b->n; j++)
				if (dw_str_eq(a->list.keys[i], b->list.keys[j]))
					break;
			if (j == b->n ||
			    !vd_shape_eq(a->list.items[i], b->list.items[j], depth + 1))
				return false;
		}
		return true;
	default:
		return false;   /* temporal leaves and the rest: only the same node */
	}
}

/* (expression, attribute) or (expression, tag expression): known present when
 * the expression that produced the capability is true. */
struct vd_cap {
	const struct dw_expr *on;
	const struct dw_expr *tag;   /* NULL: an attribute capability */
	struct dw_str attr;
};

/* A capability set; NULL is the empty set.  Sets are small and short-lived
 * (scratch arena); union does not deduplicate, which is harmless for lookup. */
struct vd_caps {
	uint32_t n;
	const struct vd_cap *v[];
};

static const struct vd_caps *vd_caps_one(struct vd_ctx *v, const struct dw_expr *on,
					 const struct dw_expr *tag, struct dw_str attr)
{
	struct vd_cap *c = DW_NEW(&v->scratch, struct vd_cap);
	struct vd_caps *s = dw_arena_alloc(&v->scratch, sizeof *s + sizeof s->v[0],
					   _Alignof(struct vd_caps));

	if (c == NULL || s == NULL) {
		vd_nomem(v);
		return NULL;
	}
	c->on = on;
	c->tag = tag;
	c->attr = attr;
	s->n = 1;
	s->v[0] = c;
	return s;
}

static const struct vd_caps *vd_caps_union(struct vd_ctx *v, const struct vd_caps *a,
					   const struct vd_caps *b)
{
	struct vd_caps *s;

	if (a == NULL || a->n == 0)
		return b;
	if (b == NULL || b->n == 0 || a == b)
		return a;
	s = dw_arena_alloc(&v->scratch, sizeof *s + sizeof s->v[0] * ((size_t)a->n + b->n),
			   _Alignof(struct vd_caps));
	if (s == NULL) {
		vd_nomem(v);
		return a;
	}
	memcpy(s->v, a->v, sizeof s->v[0] * a->n);
	memcpy(s->v + a->n, b->v, sizeof s->v[0] * b->n);
	s->n = a->n + b->n;
	return s;
}

static bool vd_cap_eq(const struct vd_cap *x, const struct vd_cap *y)
{
	if (x == y)
		return true;
	if ((x->tag == NULL) != (y->tag == NULL))
		return false;
	if (x->tag == NULL && !dw_str_eq(x->attr, y->attr))
		return false;
	if (x->tag != NULL && !vd_shape_eq(x->tag, y->tag, 0))
		return false;
	return vd_shape_eq(x->on, y->on, 0);
}

static bool vd_caps_has(const struct vd_caps *s, const struct vd_cap *c)
{
	for (uint32_t i = 0; s != NULL && i < s->n; i++)
		if (vd_cap_eq(s->v[i], c))
			return true;
	return false;
}

static const struct vd_caps *vd_caps_intersect(struct vd_ctx *v, const struct vd_caps *a,
					       const struct vd_caps *b)
{
	struct vd_caps *s;

	if (a == NULL || b == NULL || a->n == 0 || b->n == 0)
		return NULL;
	s = dw_arena_alloc(&v->scratch, sizeof *s + sizeof s->v[0] * a->n, _Alignof(struct vd_caps));
	if (s == NULL) {
		vd_nomem(v);
		return NULL;
	}
	s->n = 0;
	for (uint32_t i = 0; i < a->n; i++)
		if (vd_caps_has(b, a->v[i]))
			s->v[s->n++] = a->v[i];
	return s;
}

static bool vd_has_attr_cap(const struct vd_caps *s, const struct dw_expr *on, struct dw_str attr)
{
	struct vd_cap c = { on, NULL, attr };

	return vd_caps_has(s, &c);
}

static bool vd_has_tag_cap(const struct vd_caps *s, const struct dw_expr *on,
			   const struct dw_expr *tag)
{
	struct vd_cap c = { on, tag, { NULL, 0 } };

	return vd_caps_has(s, &c);
}

/* ---- 5. diagnostics: escaping, message shapes, locations ------------------- */

/* One UTF-8 scalar at s[*i] (an invalid byte comes back as itself). */
static uint32_t vd_utf8_next(struct dw_str s, uint32_t *i)
{
	const unsigned char *u = (const unsigned char *)s.p;
	uint32_t c = u[*i], len = 0;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if ((c & 0xE0) == 0xC0)
		len = 2, c &= 0x1F;
	else if ((c & 0xF0) == 0xE0)
		len = 3, c &= 0x0F;
	else if ((c & 0xF8) == 0xF0)
		len = 4, c &= 0x07;
	if (len == 0 || *i + len > s.n)
		return u[(*i)++];
	for (uint32_t k = 1; k < len; k++) {
		if ((u[*i + k] & 0xC0) != 0x80)
			return u[(*i)++];
		c = (c << 6) | (u[*i + k] & 0x3F);
	}
	*i += len;
	return c;
}

/* Characters Rust's char::is_printable refuses, as far as Cedar text meets
 * them: controls, format characters, private use, non-characters. */
static bool vd_unprintable(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0xad || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) || c == 0xfeff ||
	       (c >= 0xfff0 && c <= 0xfffb) || c == 0xfffe || c == 0xffff ||
	       (c >= 0xe000 && c <= 0xf8ff) || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ||
	       (c >= 0xf0000);
}

/* Rust's str::escape_debug, which Cedar uses for ids and strings in
 * messages: quotes and backslashes escaped, unprintable characters (and a
 * combining mark that starts the string) as \u{..}. */
static int vd_put_escaped(struct dw_buf *b, struct dw_str s)
{
	int r = 0;

	for (uint32_t i = 0; r == 0 && i < s.n;) {
		uint32_t start = i, c = vd_utf8_next(s, &i);

		switch (c) {
		case 0: r = dw_buf_put(b, "\\0", 2); break;
		case '\t': r = dw_buf_put(b, "\\t", 2); break;
		case '\r': r = dw_buf_put(b, "\\r", 2); break;
		case '\n': r = dw_buf_put(b, "\\n", 2); break;
		case '\\': r = dw_buf_put(b, "\\\\", 2); break;
		case '"': r = dw_buf_put(b, "\\\"", 2); break;
		case '\'': r = dw_buf_put(b, "\\'", 2); break;
		default:
			if (vd_unprintable(c) || (start == 0 && c >= 0x300 && c <= 0x36f))
				r = dw_buf_printf(b, "\\u{%x}", (unsigned)c);
			else
				r = dw_buf_put(b, s.p + start, i - start);
		}
	}
	return r;
}

/* `Type::"id"` as Cedar displays an entity uid. */
static int vd_put_uid(struct dw_buf *b, const struct dw_uid *u)
{
	int r;

	if ((r = dw_buf_put(b, u->type.p, u->type.n)) < 0 || (r = dw_buf_put(b, "::\"", 3)) < 0 ||
	    (r = vd_put_escaped(b, u->id)) < 0)
		return r;
	return dw_buf_putc(b, '"');
}

/* A name Cedar writes as `.name` rather than `["name"]`. */
static bool vd_is_ident(struct dw_str s)
{
	static const char *const reserved[] = { "true", "false", "if", "then", "else", "in",
						"like", "has", "is", "__cedar" };

	if (s.n == 0 || !((s.p[0] >= 'a' && s.p[0] <= 'z') || (s.p[0] >= 'A' && s.p[0] <= 'Z') ||
			  s.p[0] == '_'))
		return false;
	for (uint32_t i = 1; i < s.n; i++) {
		char c = s.p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	for (size_t i = 0; i < DW_N_ELEMENTS(reserved); i++)
		if (dw_str_eq_c(s, reserved[i]))
			return false;
	return true;
}

/* One step of an attribute path: `.name`, `name` first, or `["name"]`. */
static int vd_put_access(struct dw_buf *b, struct dw_str name, bool first)
{
	int r;

	if (vd_is_ident(name)) {
		if (!first && (r = dw_buf_putc(b, '.')) < 0)
			return r;
		return dw_buf_put(b, name.p, name.n);
	}
	if ((r = dw_buf_put(b, "[\"", 2)) < 0 || (r = vd_put_escaped(b, name)) < 0)
		return r;
	return dw_buf_put(b, "\"]", 2);
}

static uint64_t vd_msg_hash(const char *m, uint32_t off, uint32_t end)
{
	uint64_t h = dw_hash_bytes(m, strlen(m), off);

	return dw_hash_bytes(&end, sizeof end, h);
}

/* Record (off, end, msg) for the current policy; false when already seen. */
static bool vd_seen_add(struct vd_ctx *v, const char *msg, uint32_t off, uint32_t end)
{
	uint64_t h = vd_msg_hash(msg, off, end);
	size_t i;

	if ((v->seen_n + 1) * 2 > v->seen_cap) {
		size_t cap = v->seen_cap ? v->seen_cap * 2 : 64;
		struct vd_seen *ns = calloc(cap, sizeof *ns);

		if (ns == NULL) {
			vd_nomem(v);
			return false;
		}
		for (size_t k = 0; k < v->seen_cap; k++) {
			if (v->seen[k].msg == NULL)
				continue;
			for (i = v->seen[k].hash & (cap - 1); ns[i].msg != NULL; i = (i + 1) & (cap - 1))
				;
			ns[i] = v->seen[k];
		}
		free(v->seen);
		v->seen = ns;
		v->seen_cap = cap;
	}
	for (i = h & (v->seen_cap - 1); v->seen[i].msg != NULL; i = (i + 1) & (v->seen_cap - 1)) {
		if (v->seen[i].hash == h && v->seen[i].off == off && v->seen[i].end == end &&
		    strcmp(v->seen[i].msg, msg) == 0)
			return false;
	}
	v->seen[i].msg = dw_arena_strdup(&v->pol_arena, msg);
	if (v->seen[i].msg == NULL) {
		vd_nomem(v);
		return false;
	}
	v->seen[i].hash = h;
	v->seen[i].off = off;
	v->seen[i].end = end;
	v->seen_n++;
	return true;
}

/* Report msg about src[off, end) of the current policy, once per policy. */
static void vd_report(struct vd_ctx *v, enum dw_severity sev, uint16_t src, uint32_t off,
		      uint32_t end, const char *msg)
{
	if (v->err != 0 || !vd_seen_add(v, msg, off, end))
		return;
	if (dw_policy_set_diag(v->ps, v->diags, sev, src, off, end, "%s", msg) != 0) {
		vd_nomem(v);
		return;
	}
	dw_diags_set_policy(v->diags, v->pol->index);
	if (sev == DW_SEV_ERROR)
		v->errors = true;
}

static uint32_t vd_ext_has(const struct dw_expr *e);

/* Nodes of a member chain: accesses and calls (in Cedar's grammar a function
 * call `ip(..)` is a name followed by a call access, so it belongs to the
 * chain it heads). */
static bool vd_is_member(const struct dw_expr *e)
{
	return e->op == DW_E_ATTR || e->op == DW_E_CALL;
}

static bool vd_is_method(const struct dw_expr *e)
{
	return e->op == DW_E_CALL && e->fn > 0 && e->fn < DW_FN__COUNT && dw_fn_table[e->fn].method;
}

static const struct dw_expr *vd_receiver(const struct dw_expr *e)
{
	if (e->op == DW_E_ATTR)
		return e->attr.e;
	return vd_is_method(e) && e->n > 0 ? e->list.items[0] : NULL;
}

/* Record the chain ends of the member chains in e (end: the enclosing chain's,
 * 0 outside one). */
static void vd_loc_mark(struct vd_ctx *v, const struct dw_expr *e, uint32_t end, unsigned depth)
{
	if (e == NULL || depth > VD_MAX_EXPR_DEPTH || v->locs_cap == 0)
		return;
	if (vd_is_member(e)) {
		if (end == 0)
			end = e->end;
		if (end != e->end) {
			size_t i = vd_ptr_hash(e) & (v->locs_cap - 1), probe = 0;

			while (v->locs[i].key != NULL && v->locs[i].key != e && ++probe < v->locs_cap)
				i = (i + 1) & (v->locs_cap - 1);
			if (probe < v->locs_cap) {
				v->locs[i].key = e;
				v->locs[i].end = end;
			}
		}
		vd_loc_mark(v, vd_receiver(e), end, depth + 1);
		if (e->op == DW_E_CALL)
			for (uint32_t i = vd_is_method(e) ? 1 : 0; i < e->n; i++)
				vd_loc_mark(v, e->list.items[i], 0, depth + 1);
		return;
	}
	switch (e->op) {
	case DW_E_NOT: case DW_E_NEG:
		vd_loc_mark(v, e->k.a, 0, depth + 1);
		return;
	case DW_E_AND:
		if (vd_ext_has(e) >= 2) {
			/* `x has a.b`: the parser's `x.a` nodes are not written */
			const struct dw_expr *h = e;

			while (h->op == DW_E_AND)
				h = h->k.a;
			vd_loc_mark(v, h->attr.e, 0, depth + 1);
			return;
		}
		/* fall through */
	case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		vd_loc_mark(v, e->k.a, 0, depth + 1);
		vd_loc_mark(v, e->k.b, 0, depth + 1);
		return;
	case DW_E_IF:
		vd_loc_mark(v, e->k.a, 0, depth + 1);
		vd_loc_mark(v, e->k.b, 0, depth + 1);
		vd_loc_mark(v, e->k.c, 0, depth + 1);
		return;
	case DW_E_HAS: case DW_E_IS:
		vd_loc_mark(v, e->attr.e, 0, depth + 1);
		return;
	case DW_E_LIKE:
		vd_loc_mark(v, e->like.e, 0, depth + 1);
		return;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		for (uint32_t i = 0; i < e->n; i++)
			vd_loc_mark(v, e->list.items[i], 0, depth + 1);
		return;
	default:
		return;
	}
}

static uint32_t vd_end(const struct vd_ctx *v, const struct dw_expr *e)
{
	size_t i;

	if (v->locs_cap == 0 || !vd_is_member(e))
		return e->end;
	i = vd_ptr_hash(e) & (v->locs_cap - 1);
	for (size_t probe = 0; probe < v->locs_cap && v->locs[i].key != NULL;
	     probe++, i = (i + 1) & (v->locs_cap - 1))
		if (v->locs[i].key == e)
			return v->locs[i].end;
	return e->end;
}

/* The message of an error at e: `for policy `<id>`, ` + fmt (most Cedar
 * validation errors start so). */
__attribute__((format(printf, 4, 5)))
static void vd_error_at(struct vd_ctx *v, const struct dw_expr *e, bool prefix, const char *fmt,
			...)
{
	struct dw_buf b = { 0 };
	va_list ap;
	char *body;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (body = malloc((size_t)n + 1)) == NULL) {
		vd_nomem(v);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(body, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if ((prefix && dw_buf_printf(&b, "for policy `%s`, ", v->pol->engine_id) < 0) ||
	    dw_buf_put(&b, body, (size_t)n) < 0 || dw_buf_putc(&b, '\0') < 0)
		vd_nomem(v);
	else
		vd_report(v, DW_SEV_ERROR, e->src_index, e->off, vd_end(v, e), b.p);
	free(body);
	dw_buf_free(&b);
}

/* A type rendered into a malloc'd string (freed by the caller); NULL on ENOMEM. */
static char *vd_type_str(struct vd_ctx *v, const struct vd_type *t)
{
	struct dw_buf b = { 0 };

	if (vd_type_fmt(&b, t, 0) < 0 || dw_buf_putc(&b, '\0') < 0) {
		dw_buf_free(&b);
		vd_nomem(v);
		return NULL;
	}
	return b.p;
}

/* "unexpected type: expected A, or B but saw C" (Rust's UnexpectedType). */
static void vd_unexpected(struct vd_ctx *v, const struct dw_expr *e,
			  const struct vd_type *const *want, size_t n_want, const struct vd_type *got)
{
	struct dw_buf b = { 0 };
	char *gs = vd_type_str(v, got);
	int r = gs == NULL ? -ENOMEM : 0;

	for (size_t i = 0; r == 0 && i < n_want; i++) {
		if (i > 0)
			r = dw_buf_put(&b, ", or ", 5);
		if (r == 0)
			r = vd_type_fmt(&b, want[i], 0);
	}
	if (r == 0)
		r = dw_buf_putc(&b, '\0');
	if (r < 0)
		vd_nomem(v);
	else
		vd_error_at(v, e, true, "unexpected type: expected %s but saw %s", b.p, gs);
	free(gs);
	dw_buf_free(&b);
}

/* "the types A and B are not compatible": the distinct types, sorted, joined
 * as Rust's join_with_conjunction does ("A and B", "A, B, and C"). */
static void vd_incompatible(struct vd_ctx *v, const struct dw_expr *e,
			    const struct vd_type **types, size_t n)
{
	struct dw_buf b = { 0 };
	size_t k = 0, steps = 1000000;
	int r = 0;

	/* insertion sort with deduplication: n is the size of one set literal */
	for (size_t i = 0; i < n; i++) {
		size_t j = k;
		const struct vd_type *t = types[i];
		bool dup = false;

		for (size_t m = 0; m < k && !dup; m++)
			if (vd_type_cmp(types[m], t, 0, &steps) == 0)
				dup = true;
		if (dup)
			continue;
		while (j > 0 && vd_type_cmp(types[j - 1], t, 0, &steps) > 0) {
			types[j] = types[j - 1];
			j--;
		}
		types[j] = t;
		k++;
	}
	r = dw_buf_printf(&b, "the types ");
	for (size_t i = 0; r == 0 && i < k; i++) {
		if (i > 0 && k > 2)
			r = dw_buf_put(&b, ", ", 2);
		if (r == 0 && i > 0 && i == k - 1)
			r = dw_buf_printf(&b, "%sand ", k > 2 ? "" : " ");
		if (r == 0)
			r = vd_type_fmt(&b, types[i], 0);
	}
	if (r == 0)
		r = dw_buf_printf(&b, " are not compatible");
	if (r == 0)
		r = dw_buf_putc(&b, '\0');
	if (r < 0)
		vd_nomem(v);
	else
		vd_error_at(v, e, false, "%s", b.p);
	dw_buf_free(&b);
}

static void vd_incompatible2(struct vd_ctx *v, const struct dw_expr *e, const struct vd_type *a,
			     const struct vd_type *b)
{
	const struct vd_type *types[2] = { a, b };

	vd_incompatible(v, e, types, 2);
}

/* The type e had in this environment (see struct vd_node_type). */
static void vd_nt_put(struct vd_ctx *v, const struct dw_expr *e, const struct vd_type *t)
{
	size_t i;

	if (v->nt_cap == 0)
		return;
	i = vd_ptr_hash(e) & (v->nt_cap - 1);
	for (size_t probe = 0; probe < v->nt_cap; probe++, i = (i + 1) & (v->nt_cap - 1)) {
		struct vd_node_type *s = &v->nt[i];

		if (s->key == e || s->key == NULL || s->gen != v->gen) {
			s->key = e;
			s->type = t;
			s->gen = v->gen;
			return;
		}
	}
}

static const struct vd_type *vd_nt_get(const struct vd_ctx *v, const struct dw_expr *e)
{
	if (v->nt_cap == 0)
		return NULL;
	size_t i = vd_ptr_hash(e) & (v->nt_cap - 1);

	for (size_t probe = 0; probe < v->nt_cap; probe++, i = (i + 1) & (v->nt_cap - 1)) {
		const struct vd_node_type *s = &v->nt[i];

		if (s->key == NULL || s->gen != v->gen)
			return NULL;
		if (s->key == e)
			return s->type;
	}
	return NULL;
}

/* Rust's AttributeAccess display for `recv.attr`: "`a.b` on entity type `T`",
 * "`a.b` in context for Action::\"x\"" or "`a.b`". */
static int vd_attr_access(struct vd_ctx *v, struct dw_buf *b, const struct dw_expr *recv,
			  const struct vd_type *recv_t, struct dw_str attr)
{
	struct dw_str path[64];
	size_t n = 0, more = 0;
	const struct dw_expr *cur = recv;
	const struct vd_type *cur_t = recv_t;
	int kind = 0, r;   /* 0 other, 1 entity, 2 context */

	path[n++] = attr;
	for (unsigned guard = 0; guard < VD_MAX_EXPR_DEPTH; guard++) {
		if (cur_t != NULL && cur_t->kind == VD_ENTITY) {
			kind = 1;
			break;
		}
		if (cur->op == DW_E_VAR && cur->var == DW_VAR_CONTEXT) {
			kind = 2;
			break;
		}
		if (cur->op != DW_E_ATTR)
			break;
		if (n < DW_N_ELEMENTS(path))
			path[n++] = cur->attr.name;
		else
			more++;
		cur = cur->attr.e;
		cur_t = vd_nt_get(v, cur);
	}
	if ((r = dw_buf_putc(b, '`')) < 0)
		return r;
	if (more && (r = dw_buf_put(b, "...", 3)) < 0)
		return r;
	for (size_t i = n; i-- > 0;)
		if ((r = vd_put_access(b, path[i], i == n - 1 && !more)) < 0)
			return r;
	if ((r = dw_buf_putc(b, '`')) < 0)
		return r;
	if (kind == 1)
		return dw_buf_printf(b, " on entity type `%.*s`", (int)cur_t->ent.name.n,
				     cur_t->ent.name.p);
	if (kind == 2) {
		if ((r = dw_buf_printf(b, " in context for ")) < 0)
			return r;
		return vd_put_uid(b, &v->act_uid);
	}
	return 0;
}

/* The error for e = recv.attr: the attribute is not declared, or (optional)
 * it is optional and no `has` guards this access. */
static void vd_attr_error(struct vd_ctx *v, const struct dw_expr *e, const struct dw_expr *recv,
			  const struct vd_type *recv_t, struct dw_str attr, bool optional)
{
	struct dw_buf b = { 0 };

	if (vd_attr_access(v, &b, recv, recv_t, attr) < 0 || dw_buf_putc(&b, '\0') < 0)
		vd_nomem(v);
	else if (optional)
		vd_error_at(v, e, true, "unable to guarantee safety of access to optional attribute %s",
			    b.p);
	else
		vd_error_at(v, e, true, "attribute %s not found", b.p);
	dw_buf_free(&b);
}

/* ---- 6. the single-environment type checker ------------------------------ */

/* Rust's TypecheckAnswer: a type (NULL when none could be given), success, and
 * the capabilities the expression grants when true (always empty on failure). */
struct vd_ans {
	const struct vd_type *t;
	bool ok;
	const struct vd_caps *caps;
};

static struct vd_ans vd_ans(const struct vd_type *t, bool ok, const struct vd_caps *caps)
{
	struct vd_ans a = { t, ok, ok ? caps : NULL };

	return a;
}

static struct vd_ans vd_tc(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e);

/* expect_one_of_types: typecheck e and require a (permissive) subtype of one of
 * want; a mismatch is reported at e and leaves no type. */
static struct vd_ans vd_expect(struct vd_ctx *v, const struct vd_caps *prior,
			       const struct dw_expr *e, const struct vd_type *const *want,
			       size_t n_want)
{
	struct vd_ans a = vd_tc(v, prior, e);

	if (a.t == NULL)
		return vd_ans(NULL, false, NULL);
	for (size_t i = 0; i < n_want; i++)
		if (vd_sub(v, a.t, want[i], false, 0))
			return a;
	vd_unexpected(v, e, want, n_want, a.t);
	return vd_ans(NULL, false, NULL);
}

static struct vd_ans vd_expect1(struct vd_ctx *v, const struct vd_caps *prior,
				const struct dw_expr *e, const struct vd_type *want)
{
	return vd_expect(v, prior, e, &want, 1);
}

static const struct vd_type *const vd_entity_or_record[2] = { &vd_t_any_entity,
							      &vd_t_any_record };

/* The uid an expression stands for when it is an entity literal or the action
 * variable (replace_action_var_with_euid); NULL otherwise. */
static const struct dw_uid *vd_lit_uid(const struct vd_ctx *v, const struct dw_expr *e)
{
	if (e->op == DW_E_LIT && e->lit.kind == DW_V_ENTITY)
		return e->lit.uid;
	if (e->op == DW_E_VAR && e->var == DW_VAR_ACTION)
		return &v->act_uid;
	return NULL;
}

/* The literal e is to Cedar, if any: a literal, the action variable (its uid
 * in this environment), or `&&` / `||` of two Boolean literals, which Cedar's
 * expression builder folds into one when it parses (so `(true || true) == 1`
 * compares two literals, while `(false && context.b) == 1` does not). */
static bool vd_lit_val(const struct vd_ctx *v, const struct dw_expr *e, struct dw_val *out,
		       unsigned depth)
{
	struct dw_val a, b;

	if (e->op == DW_E_LIT) {
		*out = e->lit;
		return true;
	}
	if (e->op == DW_E_VAR && e->var == DW_VAR_ACTION && v != NULL) {
		*out = dw_val_entity(&v->act_uid);
		return true;
	}
	if ((e->op == DW_E_AND || e->op == DW_E_OR) && depth < VD_MAX_EXPR_DEPTH &&
	    vd_lit_val(NULL, e->k.a, &a, depth + 1) && a.kind == DW_V_BOOL &&
	    vd_lit_val(NULL, e->k.b, &b, depth + 1) && b.kind == DW_V_BOOL) {
		*out = dw_val_bool(e->op == DW_E_AND ? a.b && b.b : a.b || b.b);
		return true;
	}
	return false;
}

/* Is e a literal to Cedar (the action variable is not)? */
static bool vd_is_lit(const struct dw_expr *e)
{
	struct dw_val x;

	return vd_lit_val(NULL, e, &x, 0);
}

static struct vd_ans vd_tc_lit(struct vd_ctx *v, const struct dw_expr *e)
{
	switch (e->lit.kind) {
	case DW_V_BOOL:
		return vd_ans(e->lit.b ? &vd_t_true : &vd_t_false, true, NULL);
	case DW_V_LONG:
		return vd_ans(&vd_t_long, true, NULL);
	case DW_V_STRING:
		return vd_ans(&vd_t_string, true, NULL);
	case DW_V_ENTITY: {
		const struct dw_uid *u = e->lit.uid;
		const struct dw_etype *et;
		struct vd_type *t;

		/* unknown types and actions fail here without a message: division 7
		 * reports them once per policy */
		if (vd_is_action_type(u->type)) {
			if (dw_schema_find_action(v->s, u->type, u->id) == NULL)
				return vd_ans(NULL, false, NULL);
			if ((t = DW_NEW(&v->scratch, struct vd_type)) == NULL) {
				vd_nomem(v);
				return vd_ans(NULL, false, NULL);
			}
			t->kind = VD_ENTITY;
			t->ent.name = u->type;
			return vd_ans(t, true, NULL);
		}
		if ((et = dw_schema_find_etype(v->s, u->type)) == NULL)
			return vd_ans(NULL, false, NULL);
		return vd_ans(vd_entity_type(v, et), true, NULL);
	}
	default:
		return vd_ans(NULL, false, NULL);
	}
}

static struct vd_ans vd_tc_if(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans c = vd_expect1(v, prior, e->k.a, &vd_t_bool), th, el;
	const struct vd_caps *then_prior = vd_caps_union(v, prior, c.caps);

	if (c.t != NULL && c.t->kind == VD_TRUE) {
		th = vd_tc(v, then_prior, e->k.b);
		return vd_ans(th.t, c.ok && th.ok, vd_caps_union(v, th.caps, c.caps));
	}
	if (c.t != NULL && c.t->kind == VD_FALSE) {
		el = vd_tc(v, prior, e->k.c);
		return vd_ans(el.t, c.ok && el.ok, el.caps);
	}
	th = vd_tc(v, then_prior, e->k.b);
	el = vd_tc(v, prior, e->k.c);
	if (th.t == NULL || el.t == NULL)
		return vd_ans(NULL, false, NULL);

	enum vd_hint hint;
	const struct vd_type *lub = vd_lub(v, th.t, el.t, &hint, 0);

	if (lub == NULL) {
		vd_incompatible2(v, e, th.t, el.t);
		return vd_ans(NULL, false, NULL);
	}
	return vd_ans(lub, c.ok && th.ok && el.ok,
		      vd_caps_intersect(v, el.caps, vd_caps_union(v, th.caps, c.caps)));
}

static struct vd_ans vd_tc_and(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans l = vd_expect1(v, prior, e->k.a, &vd_t_bool), r;

	/* false && _ : the right operand is never evaluated, nor checked */
	if (l.t != NULL && l.t->kind == VD_FALSE)
		return vd_ans(l.t, l.ok, NULL);
	r = vd_expect1(v, vd_caps_union(v, prior, l.caps), e->k.b, &vd_t_bool);
	if (l.t == NULL || r.t == NULL)
		return vd_ans(&vd_t_bool, false, NULL);
	if (r.t->kind == VD_FALSE)
		return vd_ans(&vd_t_false, l.ok && r.ok, NULL);
	if (r.t->kind == VD_TRUE)
		return vd_ans(l.t, l.ok && r.ok, vd_caps_union(v, l.caps, r.caps));
	if (l.t->kind == VD_TRUE)
		/* Rust keeps only the right operand's capabilities here (its
		 * `capability_right.union(&capability_right)`) */
		return vd_ans(r.t, l.ok && r.ok, r.caps);
	return vd_ans(&vd_t_bool, l.ok && r.ok, vd_caps_union(v, l.caps, r.caps));
}

static struct vd_ans vd_tc_or(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans l = vd_expect1(v, prior, e->k.a, &vd_t_bool), r;

	if (l.t != NULL && l.t->kind == VD_TRUE)
		return vd_ans(l.t, l.ok, l.caps);
	/* the right operand may run with the left one false: no capability from it */
	r = vd_expect1(v, prior, e->k.b, &vd_t_bool);
	if (l.t == NULL || r.t == NULL)
		return vd_ans(&vd_t_bool, false, NULL);
	if (r.t->kind == VD_TRUE)
		return vd_ans(&vd_t_true, l.ok && r.ok, r.caps);
	if (r.t->kind == VD_FALSE)
		return vd_ans(l.t, l.ok && r.ok, l.caps);
	if (l.t->kind == VD_FALSE)
		return vd_ans(r.t, l.ok && r.ok, r.caps);
	return vd_ans(&vd_t_bool, l.ok && r.ok, vd_caps_intersect(v, r.caps, l.caps));
}

/* enforce_strict_equality: operands of ==, contains, containsAll/Any must have
 * a least upper bound unless the result is already a singleton. */
static struct vd_ans vd_strict_eq(struct vd_ctx *v, const struct dw_expr *e,
				  const struct vd_type *result, const struct vd_type *a,
				  const struct vd_type *b, bool ok)
{
	enum vd_hint hint;

	if (result->kind == VD_TRUE || result->kind == VD_FALSE)
		return vd_ans(result, ok, NULL);
	if (a != NULL && b != NULL && vd_lub(v, a, b, &hint, 0) == NULL) {
		vd_incompatible2(v, e, a, b);
		return vd_ans(result, false, NULL);
	}
	return vd_ans(result, ok, NULL);
}

static struct vd_ans vd_tc_eq(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans l = vd_tc(v, prior, e->k.a), r = vd_tc(v, prior, e->k.b);
	const struct vd_type *t = &vd_t_bool;
	struct dw_val lv, rv;

	if (l.t != NULL && r.t != NULL && vd_disjoint(l.t, r.t))
		t = &vd_t_false;
	else if (vd_lit_val(v, e->k.a, &lv, 0) && vd_lit_val(v, e->k.b, &rv, 0))
		t = lv.kind == rv.kind && dw_val_eq(lv, rv) ? &vd_t_true : &vd_t_false;
	return vd_strict_eq(v, e, t, l.t, r.t, l.ok && r.ok);
}

static bool vd_is_comparable(const struct vd_type *t)
{
	return t->kind == VD_LONG ||
	       (t->kind == VD_EXT && (t->ext == DW_EXT_DATETIME || t->ext == DW_EXT_DURATION));
}

static struct vd_ans vd_tc_cmp(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	static const struct vd_type *const all[3] = { &vd_t_ext[DW_EXT_DATETIME],
						      &vd_t_ext[DW_EXT_DURATION], &vd_t_long };
	struct vd_ans l = vd_tc(v, prior, e->k.a), r = vd_tc(v, prior, e->k.b);
	const struct vd_type *a = l.t, *b = r.t;
	bool ok = l.ok && r.ok;

	if (a == NULL || b == NULL)
		return vd_ans(&vd_t_bool, false, NULL);
	if (a->kind == VD_NEVER || b->kind == VD_NEVER) {
		const struct vd_type *o = a->kind == VD_NEVER ? b : a;
		const struct dw_expr *oe = a->kind == VD_NEVER ? e->k.b : e->k.a;

		if (o->kind == VD_NEVER)
			return vd_ans(&vd_t_bool, false, NULL);
		if (vd_is_comparable(o))
			return vd_ans(&vd_t_bool, ok, NULL);
		vd_unexpected(v, oe, all, 3, o);
		return vd_ans(&vd_t_bool, false, NULL);
	}
	if (vd_is_comparable(a) && vd_sub(v, a, b, true, 0) && vd_sub(v, b, a, true, 0))
		return vd_ans(&vd_t_bool, ok, NULL);
	if (a->kind == VD_LONG)
		vd_unexpected(v, e->k.b, &a, 1, b);
	else if (b->kind == VD_LONG)
		vd_unexpected(v, e->k.a, &b, 1, a);
	else if (vd_is_comparable(a))
		vd_unexpected(v, e->k.b, &a, 1, b);
	else if (vd_is_comparable(b))
		vd_unexpected(v, e->k.a, &b, 1, a);
	else {
		vd_unexpected(v, e->k.a, all, 3, a);
		vd_unexpected(v, e->k.b, all, 3, b);
	}
	return vd_ans(&vd_t_bool, false, NULL);
}

/* May an entity of type l be a member (transitively) of one of type r?  Over
 * memberOfTypes, or for action types over the action hierarchy
 * (any_entity_type_decedent_of / check_action_in_entity_type). */
static bool vd_can_be_in(struct vd_ctx *v, const struct vd_type *l, const struct vd_type *r)
{
	if (dw_str_eq(l->ent.name, r->ent.name))
		return true;
	if (l->ent.et != NULL && r->ent.et != NULL) {
		/* depth-first over member_of from l, marking visited types */
		const struct dw_etype *stack[64];
		const struct dw_etype **st = stack;
		size_t n = 0, cap = DW_N_ELEMENTS(stack);
		bool found = false;

		if (++v->stamp == 0) {
			memset(v->mark, 0, sizeof *v->mark * (v->s->n_etypes ? v->s->n_etypes : 1));
			v->stamp = 1;
		}
		st[n++] = l->ent.et;
		v->mark[l->ent.et->index] = v->stamp;
		while (n > 0 && !found) {
			const struct dw_etype *cur = st[--n];

			for (uint32_t i = 0; i < cur->n_member_of; i++) {
				const struct dw_etype *p = cur->member_of[i];

				if (p == r->ent.et) {
					found = true;
					break;
				}
				if (v->mark[p->index] == v->stamp)
					continue;
				v->mark[p->index] = v->stamp;
				if (n == cap) {
					const struct dw_etype **ns;

					cap *= 2;
					ns = malloc(cap * sizeof *ns);
					if (ns == NULL) {
						vd_nomem(v);
						found = true;   /* "maybe": the safe answer */
						break;
					}
					memcpy(ns, st, n * sizeof *ns);
					if (st != stack)
						free(st);
					st = ns;
				}
				st[n++] = p;
			}
		}
		if (st != stack)
			free(st);
		return found;
	}
	if (l->ent.et == NULL && vd_is_action_type(l->ent.name)) {
		/* an action of type l below an action of type r */
		for (uint32_t i = 0; i < v->s->n_actions; i++) {
			const struct dw_action *g = v->s->actions[i];

			if (!dw_str_eq(g->type, r->ent.name))
				continue;
			for (uint32_t j = 0; j < v->s->n_actions; j++) {
				const struct dw_action *d = v->s->actions[j];

				if (d != g && dw_str_eq(d->type, l->ent.name) &&
				    dw_schema_action_in(v->s, d, g))
					return true;
			}
		}
	}
	return false;
}

static struct vd_ans vd_tc_in(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	static const struct vd_type *const rhs_want[2] = { &vd_t_set_any_entity, &vd_t_any_entity };
	struct vd_ans l = vd_expect1(v, prior, e->k.a, &vd_t_any_entity);
	struct vd_ans r = vd_expect(v, prior, e->k.b, rhs_want, 2);
	const struct dw_uid *lu;

	if (!l.ok || !r.ok)
		return vd_ans(&vd_t_bool, false, NULL);
	lu = vd_lit_uid(v, e->k.a);
	if (lu != NULL && vd_is_action_type(lu->type)) {
		/* an action literal (or `action`) in literals: decided by the action
		 * hierarchy, when the right side is all literals */
		const struct dw_expr *const *items = (const struct dw_expr *const *)&e->k.b;
		uint32_t n = 1;
		bool all_lits = true, any_action = false, known = true, in = false;

		if (vd_lit_uid(v, e->k.b) == NULL && e->k.b->op == DW_E_SET) {
			items = (const struct dw_expr *const *)e->k.b->list.items;
			n = e->k.b->n;
		}
		for (uint32_t i = 0; i < n; i++)
			if (vd_lit_uid(v, items[i]) == NULL)
				all_lits = false;
		if (all_lits) {
			const struct dw_action *la = dw_schema_find_action(v->s, lu->type, lu->id);

			for (uint32_t i = 0; i < n; i++) {
				const struct dw_uid *u = vd_lit_uid(v, items[i]);
				const struct dw_action *g;

				if (!vd_is_action_type(u->type))
					continue;
				any_action = true;
				g = dw_schema_find_action(v->s, u->type, u->id);
				if (g == NULL)
					known = false;
				else if (la != NULL && dw_schema_action_in(v->s, la, g))
					in = true;
			}
			if (!any_action)
				return vd_ans(&vd_t_false, true, NULL);
			if (!known)   /* reported by division 7 */
				return vd_ans(&vd_t_bool, false, NULL);
			return vd_ans(in ? &vd_t_true : &vd_t_false, true, NULL);
		}
	}
	if (l.t->kind == VD_ENTITY) {
		const struct vd_type *rt = r.t;

		if (rt->kind == VD_SET)
			rt = rt->elem;
		if (rt != NULL && rt->kind == VD_ENTITY && !vd_can_be_in(v, l.t, rt))
			return vd_ans(&vd_t_false, true, NULL);
	}
	return vd_ans(&vd_t_bool, true, NULL);
}

static struct vd_ans vd_tc_has(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a = vd_expect(v, prior, e->attr.e, vd_entity_or_record, 2);
	const struct vd_attr *at;
	bool cap;

	if (a.t == NULL)
		return vd_ans(&vd_t_bool, false, NULL);
	at = vd_lookup_attr(v, a.t, e->attr.name);
	if (at == NULL)
		return vd_ans(vd_may_have_attr(v, a.t, e->attr.name) ? &vd_t_bool : &vd_t_false, a.ok,
			      NULL);
	cap = vd_has_attr_cap(prior, e->attr.e, e->attr.name);
	/* a required attribute of an entity is not known present: the entity
	 * may be missing from the store, where `has` is false */
	return vd_ans((at->required && a.t->kind == VD_RECORD) || cap ? &vd_t_true : &vd_t_bool, a.ok,
		      vd_caps_one(v, e->attr.e, NULL, e->attr.name));
}

/* Longest `x has a.b.c` chain typed as one expression. */
#define VD_MAX_EXT_HAS 64

/* The parser expands `x has a.b.c` into `x has a && x.a has b && x.a.b has c`
 * (left-nested), sharing the node of x and making each `x.a` span exactly
 * its `x has a`.  Cedar 4.13 types the chain as one expression
 * (HasAttrExt): x is checked once and the chain's own capabilities survive a
 * failure in x.  Returns the number of `has` nodes of e (>= 2), or 0 when e
 * is no such chain (a hand-written conjunction has no shared nodes). */
static uint32_t vd_ext_has(const struct dw_expr *e)
{
	uint32_t n = 0;

	/* from the last `has` back to the first: each step's `x.a` is the
	 * previous step's receiver and attribute, with the previous span */
	while (e->op == DW_E_AND) {
		const struct dw_expr *h = e->k.b, *a = h->attr.e, *prev = e->k.a;

		if (n + 2 > VD_MAX_EXT_HAS || h->op != DW_E_HAS)
			return 0;
		if (prev->op == DW_E_AND)
			prev = prev->k.b;
		if (prev->op != DW_E_HAS || a->op != DW_E_ATTR || a->attr.e != prev->attr.e ||
		    !dw_str_eq(a->attr.name, prev->attr.name) || a->off != prev->off ||
		    a->end != prev->end)
			return 0;
		n++;
		e = e->k.a;
	}
	if (e->op != DW_E_HAS || n == 0)
		return 0;
	return n + 1;
}

/* The `has` nodes of chain e (vd_ext_has(e) == n), first to last. */
static void vd_ext_has_nodes(const struct dw_expr *e, const struct dw_expr **hs, uint32_t n)
{
	for (uint32_t i = n; i-- > 1;) {
		hs[i] = e->k.b;
		e = e->k.a;
	}
	hs[0] = e;
}

/* typecheck.rs, ExprKind::HasAttrExt with type_of_has_attr_for_ext and
 * type_of_get_attr_for_ext; at is the whole chain (e). */
static struct vd_ans vd_tc_has_ext(struct vd_ctx *v, const struct vd_caps *prior,
				   const struct dw_expr *e)
{
	const struct dw_expr *hs[VD_MAX_EXT_HAS];
	const struct vd_type *step_t[VD_MAX_EXT_HAS];
	const struct vd_caps *step_c[VD_MAX_EXT_HAS];
	uint32_t n = vd_ext_has(e), k = 0;
	const struct dw_expr *cur_e;
	const struct vd_type *cur_t, *rt;
	const struct vd_caps *cur_cap = prior, *rc;
	struct vd_ans a;

	vd_ext_has_nodes(e, hs, n);
	cur_e = hs[0]->attr.e;
	a = vd_expect(v, prior, cur_e, vd_entity_or_record, 2);
	cur_t = a.t;
	if (cur_t == NULL)
		return vd_ans(&vd_t_bool, false, NULL);
	for (uint32_t i = 0; i < n; i++) {
		struct dw_str attr = hs[i]->attr.name;
		const struct dw_expr *at = i == 0 ? cur_e : e;
		const struct vd_attr *found;
		bool known;

		if (cur_t->kind == VD_RECORD) {
			known = true;
		} else if (cur_t->kind == VD_ENTITY || cur_t->kind == VD_ANY_ENTITY) {
			known = false;
		} else {
			vd_unexpected(v, at, vd_entity_or_record, 2, cur_t);
			return vd_ans(&vd_t_bool, false, NULL);
		}
		found = vd_lookup_attr(v, cur_t, attr);
		step_c[k] = NULL;
		if (found != NULL) {
			if (vd_has_attr_cap(cur_cap, cur_e, attr) || (found->required && known)) {
				step_t[k] = &vd_t_true;
			} else {
				step_t[k] = &vd_t_bool;
				step_c[k] = vd_caps_one(v, cur_e, NULL, attr);
			}
		} else {
			step_t[k] = vd_may_have_attr(v, cur_t, attr) ? &vd_t_bool : &vd_t_false;
		}
		k++;
		if (i + 1 == n || step_t[k - 1]->kind == VD_FALSE)
			break;
		/* the access between this `has` and the next, with this one's capability */
		cur_cap = vd_caps_union(v, cur_cap, step_c[k - 1]);
		if (found == NULL || (!found->required && !vd_has_attr_cap(cur_cap, cur_e, attr))) {
			vd_attr_error(v, at, cur_e, cur_t, attr, found != NULL);
			return vd_ans(&vd_t_bool, false, NULL);
		}
		cur_t = found->type;
		cur_e = hs[i + 1]->attr.e;
		vd_nt_put(v, cur_e, cur_t);
	}
	/* combined right to left as typeOfAnd does: a false suffix clears all */
	rt = step_t[k - 1];
	rc = step_c[k - 1];
	for (uint32_t j = k - 1; j-- > 0;) {
		if (rt->kind == VD_FALSE) {
			rc = NULL;
		} else {
			if (rt->kind == VD_TRUE)
				rt = step_t[j];
			rc = vd_caps_union(v, step_c[j], rc);
		}
	}
	return vd_ans(rt, a.ok, rc);
}

static struct vd_ans vd_tc_attr(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a = vd_expect(v, prior, e->attr.e, vd_entity_or_record, 2);
	const struct vd_attr *at;

	if (a.t == NULL)
		return vd_ans(NULL, false, NULL);
	at = vd_lookup_attr(v, a.t, e->attr.name);
	if (at == NULL) {
		vd_attr_error(v, e, e->attr.e, a.t, e->attr.name, false);
		return vd_ans(NULL, false, NULL);
	}
	if (!at->required && !vd_has_attr_cap(prior, e->attr.e, e->attr.name)) {
		vd_attr_error(v, e, e->attr.e, a.t, e->attr.name, true);
		return vd_ans(at->type, false, NULL);
	}
	return vd_ans(at->type, a.ok, NULL);
}

static struct vd_ans vd_tc_is(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a = vd_expect1(v, prior, e->attr.e, &vd_t_any_entity);

	if (a.t != NULL && a.t->kind == VD_ENTITY)
		return vd_ans(dw_str_eq(a.t->ent.name, e->attr.name) ? &vd_t_true : &vd_t_false, a.ok,
			      NULL);
	if (a.t != NULL && a.t->kind == VD_ANY_ENTITY)
		return vd_ans(&vd_t_bool, a.ok, NULL);
	return vd_ans(&vd_t_bool, false, NULL);
}

static struct vd_ans vd_tc_set(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	const struct vd_type **types;
	const struct vd_type *lub = &vd_t_never;
	struct vd_type *t;
	bool ok = true, typed = true;

	types = DW_NEWN(&v->scratch, const struct vd_type *, e->n ? e->n : 1);
	if (types == NULL) {
		vd_nomem(v);
		return vd_ans(NULL, false, NULL);
	}
	for (uint32_t i = 0; i < e->n; i++) {
		struct vd_ans a = vd_tc(v, prior, e->list.items[i]);

		types[i] = a.t;
		ok = ok && a.ok;
		typed = typed && a.t != NULL;
	}
	if (typed) {
		for (uint32_t i = 0; i < e->n && lub != NULL; i++) {
			enum vd_hint hint;

			lub = vd_lub(v, lub, types[i], &hint, 0);
		}
		if (lub == NULL)
			vd_incompatible(v, e, types, e->n);
	}
	if (e->n == 0) {
		vd_error_at(v, e, true, "empty set literals are forbidden in policies");
		return vd_ans(NULL, false, NULL);
	}
	if (!typed || lub == NULL)
		return vd_ans(NULL, false, NULL);
	if ((t = DW_NEW(&v->scratch, struct vd_type)) == NULL) {
		vd_nomem(v);
		return vd_ans(NULL, false, NULL);
	}
	t->kind = VD_SET;
	t->elem = lub;
	return vd_ans(t, ok, NULL);
}

static int vd_attr_cmp(const void *x, const void *y)
{
	const struct vd_attr *a = x, *b = y;

	return dw_str_cmp(a->name, b->name);
}

static struct vd_ans vd_tc_record(struct vd_ctx *v, const struct vd_caps *prior,
				  const struct dw_expr *e)
{
	struct vd_attr *at = DW_NEWN(&v->scratch, struct vd_attr, e->n ? e->n : 1);
	struct vd_type *t = DW_NEW(&v->scratch, struct vd_type);
	bool ok = true, typed = true;

	if (at == NULL || t == NULL) {
		vd_nomem(v);
		return vd_ans(NULL, false, NULL);
	}
	for (uint32_t i = 0; i < e->n; i++) {
		struct vd_ans a = vd_tc(v, prior, e->list.items[i]);

		at[i].name = e->list.keys[i];
		at[i].type = a.t;
		at[i].required = true;
		ok = ok && a.ok;
		typed = typed && a.t != NULL;
	}
	if (!typed)
		return vd_ans(NULL, false, NULL);
	qsort(at, e->n, sizeof *at, vd_attr_cmp);
	t->kind = VD_RECORD;
	t->n = e->n;
	t->attrs = at;
	return vd_ans(t, ok, NULL);
}

/* Tag type of an entity type: NULL when it declares no tags (actions never do). */
static const struct vd_type *vd_tag_type(struct vd_ctx *v, const struct vd_type *ent)
{
	if (ent->kind != VD_ENTITY)
		return NULL;
	return vd_entity_tags(v, ent->ent.et);
}

/* The tag types any entity may have (receiver of type AnyEntity). */
static bool vd_any_tags(struct vd_ctx *v)
{
	for (uint32_t i = 0; i < v->s->n_etypes; i++)
		if (v->s->etypes[i]->tags != NULL)
			return true;
	return false;
}

/* An expression as Cedar displays it, for the simple forms a tag key takes
 * (literals, variables, attribute chains); anything else as written. */
static int vd_put_expr(const struct vd_ctx *v, struct dw_buf *b, const struct dw_expr *e,
		       unsigned depth)
{
	static const char *const vars[] = { "principal", "action", "resource", "context" };
	const struct dw_expr *r = e;
	int rc;

	while (r->op == DW_E_ATTR && depth++ < VD_MAX_EXPR_DEPTH)
		r = r->attr.e;
	if (r->op == DW_E_VAR && r->var < DW_N_ELEMENTS(vars)) {
		if (e != r) {
			if ((rc = vd_put_expr(v, b, e->attr.e, depth)) < 0)
				return rc;
			return vd_put_access(b, e->attr.name, false);
		}
		return dw_buf_printf(b, "%s", vars[r->var]);
	}
	if (e->op == DW_E_LIT) {
		switch (e->lit.kind) {
		case DW_V_BOOL: return dw_buf_printf(b, "%s", e->lit.b ? "true" : "false");
		case DW_V_LONG: return dw_buf_printf(b, "%lld", (long long)e->lit.i);
		case DW_V_STRING:
			if ((rc = dw_buf_putc(b, '"')) < 0 || (rc = vd_put_escaped(b, e->lit.s)) < 0)
				return rc;
			return dw_buf_putc(b, '"');
		case DW_V_ENTITY: return vd_put_uid(b, e->lit.uid);
		default: break;
		}
	}
	if (e->src_index < v->ps->n_sources && e->end <= v->ps->sources[e->src_index].len)
		return dw_buf_put(b, v->ps->sources[e->src_index].text + e->off, e->end - e->off);
	return dw_buf_put(b, "?", 1);
}

/* "unable to guarantee safety of access to tag `k`[ on entity type `T`]" */
static void vd_tag_error(struct vd_ctx *v, const struct dw_expr *e, const struct dw_expr *k,
			 const struct vd_type *t)
{
	struct dw_buf b = { 0 };

	if (vd_put_expr(v, &b, k, 0) < 0 || dw_buf_putc(&b, '\0') < 0)
		vd_nomem(v);
	else if (t->kind == VD_ENTITY)
		vd_error_at(v, e, true, "unable to guarantee safety of access to tag `%s` on entity "
			    "type `%.*s`", b.p, (int)t->ent.name.n, t->ent.name.p);
	else
		vd_error_at(v, e, true, "unable to guarantee safety of access to tag `%s`", b.p);
	dw_buf_free(&b);
}

static struct vd_ans vd_tc_tag(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e,
			       bool get)
{
	const struct dw_expr *x = e->list.items[0], *k = e->list.items[1];
	struct vd_ans a = vd_expect1(v, prior, x, &vd_t_any_entity);
	struct vd_ans b = vd_expect1(v, prior, k, &vd_t_string);
	bool ok = a.ok && b.ok;
	const struct vd_type *tags;

	if (a.t == NULL || a.t->kind == VD_NEVER)
		return vd_ans(NULL, false, NULL);
	if (a.t->kind == VD_ANY_ENTITY) {
		/* every entity type's tag type counts; Rust takes their lub */
		const struct vd_type *lub = &vd_t_never;
		bool any = vd_any_tags(v);

		if (!get)
			return vd_ans(!any ? &vd_t_false : vd_has_tag_cap(prior, x, k) ? &vd_t_true
										    : &vd_t_bool,
				      ok, vd_caps_one(v, x, k, (struct dw_str){ NULL, 0 }));
		if (!vd_has_tag_cap(prior, x, k)) {
			vd_tag_error(v, e, k, a.t);
			return vd_ans(NULL, false, NULL);
		}
		for (uint32_t i = 0; i < v->s->n_etypes && lub != NULL; i++) {
			const struct vd_type *tt = vd_entity_tags(v, v->s->etypes[i]);
			enum vd_hint hint;

			if (tt != NULL)
				lub = vd_lub(v, lub, tt, &hint, 0);
		}
		if (!any) {
			vd_error_at(v, e, true, "`.getTag()` is not allowed on entities of this type "
				    "because no `tags` were declared on the entity type in the schema");
			return vd_ans(NULL, false, NULL);
		}
		if (lub == NULL) {
			vd_error_at(v, e, false, "the types of the tags are not compatible");
			return vd_ans(NULL, false, NULL);
		}
		return vd_ans(lub, ok, NULL);
	}
	tags = vd_tag_type(v, a.t);
	if (!get)
		return vd_ans(tags == NULL ? &vd_t_false
			      : vd_has_tag_cap(prior, x, k) ? &vd_t_true : &vd_t_bool,
			      ok, vd_caps_one(v, x, k, (struct dw_str){ NULL, 0 }));
	if (!vd_has_tag_cap(prior, x, k)) {
		vd_tag_error(v, e, k, a.t);
		return vd_ans(NULL, false, NULL);
	}
	if (tags == NULL) {
		vd_error_at(v, e, true, "`.getTag()` is not allowed on entities of type `%.*s` because "
			    "no `tags` were declared on the entity type in the schema",
			    (int)a.t->ent.name.n, a.t->ent.name.p);
		return vd_ans(NULL, false, NULL);
	}
	return vd_ans(tags, ok, NULL);
}

/* Extension functions: argument types, result, and whether the arguments are
 * checked (the constructors: a string literal that parses). */
enum vd_arg { VA_STR = 1, VA_IP, VA_DEC, VA_DT, VA_DUR };

struct vd_ext_sig {
	uint8_t n;
	uint8_t arg[2];
	uint8_t ret;          /* enum vd_arg, or 0 for Bool, 9 for Long */
	const char *what;     /* constructors: "IP address", "a decimal value", ... */
};

#define VR_BOOL 0
#define VR_LONG 9

static const struct vd_ext_sig vd_ext_sigs[DW_FN__COUNT] = {
	[DW_FN_IP] = { 1, { VA_STR }, VA_IP, "IP address" },
	[DW_FN_DECIMAL] = { 1, { VA_STR }, VA_DEC, "a decimal value" },
	[DW_FN_DATETIME] = { 1, { VA_STR }, VA_DT, "a datetime value" },
	[DW_FN_DURATION] = { 1, { VA_STR }, VA_DUR, "a duration value" },
	[DW_FN_IS_IPV4] = { 1, { VA_IP }, VR_BOOL, NULL },
	[DW_FN_IS_IPV6] = { 1, { VA_IP }, VR_BOOL, NULL },
	[DW_FN_IS_LOOPBACK] = { 1, { VA_IP }, VR_BOOL, NULL },
	[DW_FN_IS_MULTICAST] = { 1, { VA_IP }, VR_BOOL, NULL },
	[DW_FN_IS_IN_RANGE] = { 2, { VA_IP, VA_IP }, VR_BOOL, NULL },
	[DW_FN_LESS_THAN] = { 2, { VA_DEC, VA_DEC }, VR_BOOL, NULL },
	[DW_FN_LESS_THAN_OR_EQUAL] = { 2, { VA_DEC, VA_DEC }, VR_BOOL, NULL },
	[DW_FN_GREATER_THAN] = { 2, { VA_DEC, VA_DEC }, VR_BOOL, NULL },
	[DW_FN_GREATER_THAN_OR_EQUAL] = { 2, { VA_DEC, VA_DEC }, VR_BOOL, NULL },
	[DW_FN_OFFSET] = { 2, { VA_DT, VA_DUR }, VA_DT, NULL },
	[DW_FN_DURATION_SINCE] = { 2, { VA_DT, VA_DT }, VA_DUR, NULL },
	[DW_FN_TO_DATE] = { 1, { VA_DT }, VA_DT, NULL },
	[DW_FN_TO_TIME] = { 1, { VA_DT }, VA_DUR, NULL },
	[DW_FN_TO_MILLISECONDS] = { 1, { VA_DUR }, VR_LONG, NULL },
	[DW_FN_TO_SECONDS] = { 1, { VA_DUR }, VR_LONG, NULL },
	[DW_FN_TO_MINUTES] = { 1, { VA_DUR }, VR_LONG, NULL },
	[DW_FN_TO_HOURS] = { 1, { VA_DUR }, VR_LONG, NULL },
	[DW_FN_TO_DAYS] = { 1, { VA_DUR }, VR_LONG, NULL },
};

static const struct vd_type *vd_sig_type(uint8_t k)
{
	switch (k) {
	case VA_STR: return &vd_t_string;
	case VA_IP: return &vd_t_ext[DW_EXT_IPADDR];
	case VA_DEC: return &vd_t_ext[DW_EXT_DECIMAL];
	case VA_DT: return &vd_t_ext[DW_EXT_DATETIME];
	case VA_DUR: return &vd_t_ext[DW_EXT_DURATION];
	case VR_LONG: return &vd_t_long;
	default: return &vd_t_bool;
	}
}

/* Does the constructor accept the string? */
static bool vd_ext_parses(enum dw_fn fn, struct dw_str s)
{
	const char *why;
	struct dw_ipaddr ip;
	int64_t i;

	switch (fn) {
	case DW_FN_IP: return dw_ip_parse(s.p, s.n, &ip, &why) == 0;
	case DW_FN_DECIMAL: return dw_decimal_parse(s.p, s.n, &i, &why) == 0;
	case DW_FN_DATETIME: return dw_datetime_parse(s.p, s.n, &i, &why) == 0;
	case DW_FN_DURATION: return dw_duration_parse(s.p, s.n, &i, &why) == 0;
	default: return true;
	}
}

static struct vd_ans vd_tc_ext(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	const struct vd_ext_sig *sig = &vd_ext_sigs[e->fn];
	const struct vd_type *ret = vd_sig_type(sig->ret);
	bool failed = false, ok = true;

	if (e->n != sig->n) {
		vd_error_at(v, e, true, "wrong number of arguments in extension function application. "
			    "Expected %u, got %u", (unsigned)sig->n, (unsigned)e->n);
		failed = true;
	}
	if (sig->what != NULL) {
		bool all_lits = true;

		if (e->n == 1 && e->list.items[0]->op == DW_E_LIT &&
		    e->list.items[0]->lit.kind == DW_V_STRING &&
		    !vd_ext_parses(e->fn, e->list.items[0]->lit.s)) {
			struct dw_buf q = { 0 };

			if (dw_buf_putc(&q, '"') < 0 || vd_put_escaped(&q, e->list.items[0]->lit.s) < 0 ||
			    dw_buf_put(&q, "\"", 2) < 0)
				vd_nomem(v);
			else
				vd_error_at(v, e, true, "error during extension function argument "
					    "validation: failed to parse as %s: `%s`", sig->what, q.p);
			dw_buf_free(&q);
			failed = true;
		}
		for (uint32_t i = 0; i < e->n; i++)
			if (!vd_is_lit(e->list.items[i]))
				all_lits = false;
		if (!all_lits) {
			vd_error_at(v, e, true, "extension constructors may not be called with "
				    "non-literal expressions");
			failed = true;
		}
	}
	if (failed) {
		for (uint32_t i = 0; i < e->n; i++)
			vd_tc(v, prior, e->list.items[i]);
		return vd_ans(ret, false, NULL);
	}
	for (uint32_t i = 0; i < e->n; i++) {
		struct vd_ans a = vd_expect1(v, prior, e->list.items[i], vd_sig_type(sig->arg[i]));

		ok = ok && a.ok;
	}
	return vd_ans(ret, ok, NULL);
}

static struct vd_ans vd_tc_call(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a, b;

	switch (e->fn) {
	case DW_FN_CONTAINS:
		a = vd_expect1(v, prior, e->list.items[0], &vd_t_any_set);
		b = vd_tc(v, prior, e->list.items[1]);
		return vd_strict_eq(v, e, &vd_t_bool,
				    a.t != NULL && a.t->kind == VD_SET ? a.t->elem : NULL, b.t,
				    a.ok && b.ok);
	case DW_FN_CONTAINS_ALL:
	case DW_FN_CONTAINS_ANY:
		a = vd_expect1(v, prior, e->list.items[0], &vd_t_any_set);
		b = vd_expect1(v, prior, e->list.items[1], &vd_t_any_set);
		return vd_strict_eq(v, e, &vd_t_bool, a.t, b.t, a.ok && b.ok);
	case DW_FN_IS_EMPTY:
		a = vd_expect1(v, prior, e->list.items[0], &vd_t_any_set);
		return vd_ans(&vd_t_bool, a.ok, NULL);
	case DW_FN_GET_TAG:
	case DW_FN_HAS_TAG:
		if (e->n != 2)
			break;
		return vd_tc_tag(v, prior, e, e->fn == DW_FN_GET_TAG);
	default:
		if (e->fn > 0 && e->fn < DW_FN__COUNT && vd_ext_sigs[e->fn].n != 0)
			return vd_tc_ext(v, prior, e);
		break;
	}
	vd_error_at(v, e, true, "internal: call of an unknown function");
	return vd_ans(NULL, false, NULL);
}

static struct vd_ans vd_tc_var(struct vd_ctx *v, const struct dw_expr *e)
{
	switch (e->var) {
	case DW_VAR_PRINCIPAL: return vd_ans(v->principal_t, true, NULL);
	case DW_VAR_ACTION: return vd_ans(v->action_t, true, NULL);
	case DW_VAR_RESOURCE: return vd_ans(v->resource_t, true, NULL);
	default: return vd_ans(v->context_t, true, NULL);
	}
}

static struct vd_ans vd_tc_node(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a, b;

	switch (e->op) {
	case DW_E_LIT:
		return vd_tc_lit(v, e);
	case DW_E_VAR:
		return vd_tc_var(v, e);
	case DW_E_SLOT: {
		const struct vd_type *t = e->var == DW_VAR_PRINCIPAL ? v->pslot_t : v->rslot_t;

		return vd_ans(t != NULL ? t : &vd_t_any_entity, true, NULL);
	}
	case DW_E_NOT:
		a = vd_expect1(v, prior, e->k.a, &vd_t_bool);
		if (a.t == NULL)
			return vd_ans(&vd_t_bool, false, NULL);
		return vd_ans(a.t->kind == VD_TRUE ? &vd_t_false
			      : a.t->kind == VD_FALSE ? &vd_t_true : &vd_t_bool, a.ok, NULL);
	case DW_E_NEG:
		a = vd_expect1(v, prior, e->k.a, &vd_t_long);
		return vd_ans(&vd_t_long, a.ok, NULL);
	case DW_E_AND:
		if (vd_ext_has(e) >= 2)
			return vd_tc_has_ext(v, prior, e);
		return vd_tc_and(v, prior, e);
	case DW_E_OR:
		return vd_tc_or(v, prior, e);
	case DW_E_IF:
		return vd_tc_if(v, prior, e);
	case DW_E_EQ:
		return vd_tc_eq(v, prior, e);
	case DW_E_LT:
	case DW_E_LE:
		return vd_tc_cmp(v, prior, e);
	case DW_E_ADD:
	case DW_E_SUB:
	case DW_E_MUL:
		a = vd_expect1(v, prior, e->k.a, &vd_t_long);
		b = vd_expect1(v, prior, e->k.b, &vd_t_long);
		return vd_ans(&vd_t_long, a.ok && b.ok, NULL);
	case DW_E_IN:
		return vd_tc_in(v, prior, e);
	case DW_E_HAS:
		return vd_tc_has(v, prior, e);
	case DW_E_ATTR:
		return vd_tc_attr(v, prior, e);
	case DW_E_LIKE:
		a = vd_expect1(v, prior, e->like.e, &vd_t_string);
		return vd_ans(&vd_t_bool, a.ok, NULL);
	case DW_E_IS:
		return vd_tc_is(v, prior, e);
	case DW_E_SET:
		return vd_tc_set(v, prior, e);
	case DW_E_RECORD:
		return vd_tc_record(v, prior, e);
	case DW_E_CALL:
		return vd_tc_call(v, prior, e);
	case DW_E_TEMPORAL:
		/* a Boolean from history; its own checks belong to temporal.h */
		return vd_ans(&vd_t_bool, true, NULL);
	case DW_E_PROVIDER:
		vd_error_at(v, e, true, "information provider calls cannot be validated: information "
			    "providers are not enabled in this build");
		return vd_ans(NULL, false, NULL);
	default:
		vd_error_at(v, e, true, "internal: unexpanded macro in a validated policy");
		return vd_ans(NULL, false, NULL);
	}
}

static struct vd_ans vd_tc(struct vd_ctx *v, const struct vd_caps *prior, const struct dw_expr *e)
{
	struct vd_ans a;

	if (v->err != 0)
		return vd_ans(NULL, false, NULL);
	if (v->depth >= VD_MAX_EXPR_DEPTH) {
		vd_error_at(v, e, true, "expression is nested too deeply to be validated");
		return vd_ans(NULL, false, NULL);
	}
	v->depth++;
	a = vd_tc_node(v, prior, e);
	v->depth--;
	if (v->budget == 0 && !v->budget_reported) {
		v->budget_reported = true;
		vd_error_at(v, e, true, "the types in this policy are too large to be compared");
	}
	if (a.t != NULL)
		vd_nt_put(v, e, a.t);
	return a;
}

/* ---- 7. checks made once per policy --------------------------------------- */

/* The expression a scope element stands for, built once per policy in the
 * policy arena (Cedar's principal_constraint_expr and friends); spans are
 * the scope element's. */
static struct dw_expr *vd_node(struct vd_ctx *v, enum dw_op op, const struct dw_scope *sc)
{
	struct dw_expr *e = DW_NEW(&v->pol_arena, struct dw_expr);

	if (e == NULL) {
		vd_nomem(v);
		return NULL;
	}
	e->op = (uint8_t)op;
	e->off = sc->off;
	e->end = sc->end;
	e->src_index = v->pol->src_index;
	return e;
}

static struct dw_expr *vd_node2(struct vd_ctx *v, enum dw_op op, const struct dw_scope *sc,
				struct dw_expr *a, struct dw_expr *b)
{
	struct dw_expr *e = vd_node(v, op, sc);

	if (e == NULL || a == NULL || b == NULL)
		return NULL;
	e->k.a = a;
	e->k.b = b;
	return e;
}

static struct dw_expr *vd_true_node(struct vd_ctx *v, const struct dw_scope *sc)
{
	struct dw_expr *e = vd_node(v, DW_E_LIT, sc);

	if (e != NULL)
		e->lit = dw_val_bool(true);
	return e;
}

static struct dw_expr *vd_uid_node(struct vd_ctx *v, const struct dw_scope *sc,
				   const struct dw_uid *u)
{
	struct dw_expr *e = vd_node(v, DW_E_LIT, sc);

	if (e != NULL)
		e->lit = dw_val_entity(u);
	return e;
}

static struct dw_expr *vd_scope_expr(struct vd_ctx *v, const struct dw_scope *sc, enum dw_var var)
{
	struct dw_expr *x = vd_node(v, DW_E_VAR, sc), *rhs, *is;

	if (x == NULL)
		return NULL;
	x->var = (uint8_t)var;
	if (sc->kind == DW_SC_ANY)
		return vd_true_node(v, sc);
	if (sc->kind == DW_SC_IN_LIST || (var == DW_VAR_ACTION && sc->kind == DW_SC_IN)) {
		/* action in [E..]; Cedar stores `action in E` as a one-element list */
		uint32_t n = sc->kind == DW_SC_IN ? 1 : sc->n_list;

		rhs = vd_node(v, DW_E_SET, sc);
		if (rhs == NULL)
			return NULL;
		rhs->n = n;
		rhs->list.items = DW_NEWN(&v->pol_arena, struct dw_expr *, n ? n : 1);
		if (rhs->list.items == NULL) {
			vd_nomem(v);
			return NULL;
		}
		for (uint32_t i = 0; i < n; i++)
			if ((rhs->list.items[i] = vd_uid_node(v, sc, n == 1 && sc->kind == DW_SC_IN
								     ? sc->uid : sc->list[i])) == NULL)
				return NULL;
		return vd_node2(v, DW_E_IN, sc, x, rhs);
	}
	if (sc->kind == DW_SC_IS || sc->kind == DW_SC_IS_IN) {
		is = vd_node(v, DW_E_IS, sc);
		if (is == NULL)
			return NULL;
		is->attr.e = x;
		is->attr.name = sc->type;
		if (sc->kind == DW_SC_IS)
			return is;
	} else {
		is = NULL;
	}
	if (sc->slot) {
		rhs = vd_node(v, DW_E_SLOT, sc);
		if (rhs != NULL)
			rhs->var = (uint8_t)var;
	} else {
		rhs = vd_uid_node(v, sc, sc->uid);
	}
	if (rhs == NULL)
		return NULL;
	rhs = vd_node2(v, sc->kind == DW_SC_EQ ? DW_E_EQ : DW_E_IN, sc, x, rhs);
	return is == NULL ? rhs : vd_node2(v, DW_E_AND, sc, is, rhs);
}

/* The conditions as Cedar joins them: c1 && (c2 && (.. && cn)).  The parser
 * folds pol->cond the other way, ((c1 && c2) && ..) && cn, which types
 * differently when a condition fails and a later one is false; its left spine
 * gives the n conditions back (each `unless` already negated). */
static struct dw_expr *vd_conditions(struct vd_ctx *v, const struct dw_scope *whole)
{
	const struct dw_policy *pol = v->pol;
	struct dw_expr **c, *cur = pol->cond, *r;
	uint32_t n = pol->n_conds;

	if (cur == NULL)
		return vd_true_node(v, whole);
	if (n < 2)
		return cur;
	if ((c = DW_NEWN(&v->pol_arena, struct dw_expr *, n)) == NULL) {
		vd_nomem(v);
		return NULL;
	}
	for (uint32_t i = n - 1; i > 0; i--) {
		if (cur->op != DW_E_AND)
			return pol->cond;   /* not the parser's fold: keep it whole */
		c[i] = cur->k.b;
		cur = cur->k.a;
	}
	c[0] = cur;
	r = c[n - 1];
	for (uint32_t i = n - 1; i-- > 0 && r != NULL;) {
		struct dw_scope span = { .off = c[i]->off, .end = r->end };

		r = vd_node2(v, DW_E_AND, &span, c[i], r);
	}
	return r;
}

/* Cedar's Template::condition(): ((P && A) && R) && C. */
static struct dw_expr *vd_policy_expr(struct vd_ctx *v)
{
	const struct dw_policy *pol = v->pol;
	struct dw_scope whole = { .off = pol->off, .end = pol->end };
	struct dw_expr *p = vd_scope_expr(v, &pol->principal, DW_VAR_PRINCIPAL);
	struct dw_expr *a = vd_scope_expr(v, &pol->action, DW_VAR_ACTION);
	struct dw_expr *r = vd_scope_expr(v, &pol->resource, DW_VAR_RESOURCE);
	struct dw_expr *c = vd_conditions(v, &whole);

	return vd_node2(v, DW_E_AND, &whole,
			vd_node2(v, DW_E_AND, &whole, vd_node2(v, DW_E_AND, &whole, p, a), r), c);
}

static bool vd_type_known(const struct vd_ctx *v, struct dw_str name)
{
	return vd_is_action_type(name) || dw_schema_find_etype(v->s, name) != NULL;
}

/* A uid or type name found in the policy, with where it was written. */
typedef void (*vd_uid_fn)(struct vd_ctx *v, const struct dw_uid *u, const struct dw_expr *at);
typedef void (*vd_type_fn)(struct vd_ctx *v, struct dw_str type, const struct dw_expr *at);

/* Every entity literal (and, with tf, every `is` type) of e, in order. */
static void vd_walk(struct vd_ctx *v, const struct dw_expr *e, vd_uid_fn uf, vd_type_fn tf,
		    unsigned depth)
{
	if (e == NULL || depth > VD_MAX_EXPR_DEPTH || v->err != 0)
		return;
	switch (e->op) {
	case DW_E_LIT:
		if (e->lit.kind == DW_V_ENTITY)
			uf(v, e->lit.uid, e);
		return;
	case DW_E_NOT: case DW_E_NEG:
		vd_walk(v, e->k.a, uf, tf, depth + 1);
		return;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		vd_walk(v, e->k.a, uf, tf, depth + 1);
		vd_walk(v, e->k.b, uf, tf, depth + 1);
		return;
	case DW_E_IF:
		vd_walk(v, e->k.a, uf, tf, depth + 1);
		vd_walk(v, e->k.b, uf, tf, depth + 1);
		vd_walk(v, e->k.c, uf, tf, depth + 1);
		return;
	case DW_E_IS:
		if (tf != NULL)
			tf(v, e->attr.name, e);
		vd_walk(v, e->attr.e, uf, tf, depth + 1);
		return;
	case DW_E_HAS: case DW_E_ATTR:
		vd_walk(v, e->attr.e, uf, tf, depth + 1);
		return;
	case DW_E_LIKE:
		vd_walk(v, e->like.e, uf, tf, depth + 1);
		return;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		for (uint32_t i = 0; i < e->n; i++)
			vd_walk(v, e->list.items[i], uf, tf, depth + 1);
		return;
	default:
		return;
	}
}

/* Is s written at src[off, off + s.n)? */
static bool vd_text_at(const struct vd_ctx *v, uint16_t src, uint32_t off, struct dw_str s)
{
	const struct dw_source *so;

	if (src >= v->ps->n_sources)
		return false;
	so = &v->ps->sources[src];
	return (size_t)off + s.n <= so->len && memcmp(so->text + off, s.p, s.n) == 0;
}

static void vd_check_type_name(struct vd_ctx *v, struct dw_str type, const struct dw_expr *at)
{
	struct dw_expr name = *at;

	if (vd_type_known(v, type))
		return;
	/* Cedar points at the type's path: the start of an entity literal, the
	 * end of an `is` */
	if (at->op == DW_E_LIT && vd_text_at(v, at->src_index, at->off, type)) {
		name.end = at->off + type.n;
	} else if (at->op == DW_E_IS && at->end >= type.n &&
		   vd_text_at(v, at->src_index, at->end - type.n, type)) {
		name.off = at->end - type.n;
	}
	name.op = 0;
	vd_error_at(v, &name, true, "unrecognized entity type `%.*s`", (int)type.n, type.p);
}

static void vd_check_uid_type(struct vd_ctx *v, const struct dw_uid *u, const struct dw_expr *at)
{
	vd_check_type_name(v, u->type, at);
}

static void vd_check_uid_enum(struct vd_ctx *v, const struct dw_uid *u, const struct dw_expr *at)
{
	const struct dw_etype *et;
	struct dw_buf ub = { 0 }, ib = { 0 };

	if (vd_is_action_type(u->type) || (et = dw_schema_find_etype(v->s, u->type)) == NULL ||
	    !et->is_enum)
		return;
	for (uint32_t i = 0; i < et->n_enum; i++)
		if (dw_str_eq(et->enum_ids[i], u->id))
			return;
	if (vd_put_uid(&ub, u) < 0 || dw_buf_putc(&ub, '\0') < 0 || dw_buf_putc(&ib, '"') < 0 ||
	    vd_put_escaped(&ib, u->id) < 0 || dw_buf_put(&ib, "\"", 2) < 0)
		vd_nomem(v);
	else
		vd_error_at(v, at, false, "for policy `%s`: entity `%s` is of an enumerated entity "
			    "type, but `%s` is not declared as a valid eid", v->pol->engine_id, ub.p,
			    ib.p);
	dw_buf_free(&ub);
	dw_buf_free(&ib);
}

static void vd_check_uid_action(struct vd_ctx *v, const struct dw_uid *u, const struct dw_expr *at)
{
	struct dw_buf b = { 0 };

	if (!vd_is_action_type(u->type) || dw_schema_find_action(v->s, u->type, u->id) != NULL)
		return;
	if (vd_put_uid(&b, u) < 0 || dw_buf_putc(&b, '\0') < 0)
		vd_nomem(v);
	else
		vd_error_at(v, at, true, "unrecognized action `%s`", b.p);
	dw_buf_free(&b);
}

/* Find s in src[from, to); UINT32_MAX when absent. */
static uint32_t vd_find_text(const struct vd_ctx *v, uint16_t src, uint32_t from, uint32_t to,
			     struct dw_str s)
{
	if (s.n == 0)
		return UINT32_MAX;
	for (uint32_t i = from; i < to && to - i >= s.n; i++)
		if (vd_text_at(v, src, i, s))
			return i;
	return UINT32_MAX;
}

/* The span of uid u written in src[*from, to): Cedar points at the literal,
 * the scope keeps only the element's span.  Moves *from past it; leaves at
 * alone when the text is not found (a path written with spaces). */
static void vd_uid_span(const struct vd_ctx *v, uint16_t src, uint32_t *from, uint32_t to,
			const struct dw_uid *u, struct dw_expr *at)
{
	const struct dw_source *so;
	uint32_t pos = vd_find_text(v, src, *from, to, u->type), i;

	if (pos == UINT32_MAX)
		return;
	so = &v->ps->sources[src];
	i = pos + u->type.n;
	if (i + 3 > to || memcmp(so->text + i, "::\"", 3) != 0)
		return;
	for (i += 3; i < to && so->text[i] != '"'; i++)
		if (so->text[i] == '\\')
			i++;
	if (i >= to)
		return;
	at->off = pos;
	at->end = i + 1;
	at->op = DW_E_LIT;
	*from = i + 1;
}

/* Scope uids and types, at their text when it can be found in the scope
 * element, else at the element (pseudo nodes carry the spans). */
static void vd_scope_uids(struct vd_ctx *v, const struct dw_scope *sc, vd_uid_fn uf, vd_type_fn tf)
{
	uint16_t src = v->pol->src_index;
	struct dw_expr at = { .off = sc->off, .end = sc->end, .src_index = src };
	uint32_t from = sc->off;

	if (src >= v->ps->n_sources)
		return;
	if (sc->kind == DW_SC_IS || sc->kind == DW_SC_IS_IN) {
		struct dw_expr t = at;
		uint32_t pos = vd_find_text(v, src, sc->off + 1, sc->end, sc->type);

		if (pos != UINT32_MAX) {
			t.off = pos;
			t.end = pos + sc->type.n;
			from = t.end;
		}
		if (tf != NULL)
			tf(v, sc->type, &t);
	}
	if (!sc->slot && sc->uid != NULL &&
	    (sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN || sc->kind == DW_SC_IS_IN)) {
		struct dw_expr u = at;

		vd_uid_span(v, src, &from, sc->end, sc->uid, &u);
		uf(v, sc->uid, &u);
	}
	if (sc->kind == DW_SC_IN_LIST) {
		for (uint32_t i = 0; i < sc->n_list; i++) {
			struct dw_expr u = at;

			vd_uid_span(v, src, &from, sc->end, sc->list[i], &u);
			uf(v, sc->list[i], &u);
		}
	}
}

static void vd_policy_uids(struct vd_ctx *v, vd_uid_fn uf, vd_type_fn tf)
{
	vd_scope_uids(v, &v->pol->principal, uf, tf);
	vd_scope_uids(v, &v->pol->action, uf, tf);
	vd_scope_uids(v, &v->pol->resource, uf, tf);
	vd_walk(v, v->pol->cond, uf, tf, 0);
}

/* Is et (a schema entity type) among the types the scope element admits?
 * (rbac.rs get_entity_types_satisfying_constraint) */
static bool vd_scope_admits(struct vd_ctx *v, const struct dw_scope *sc, const struct dw_etype *et)
{
	struct vd_type lt = { .kind = VD_ENTITY, .ent = { et->name, et } };
	struct vd_type rt = { .kind = VD_ENTITY };

	switch (sc->kind) {
	case DW_SC_ANY:
		return true;
	case DW_SC_EQ:
		return sc->slot || dw_str_eq(sc->uid->type, et->name);
	case DW_SC_IN:
		if (sc->slot)
			return true;
		rt.ent.name = sc->uid->type;
		rt.ent.et = dw_schema_find_etype(v->s, sc->uid->type);
		return dw_str_eq(sc->uid->type, et->name) || (rt.ent.et != NULL && vd_can_be_in(v, &lt, &rt));
	case DW_SC_IS:
		return dw_str_eq(sc->type, et->name);
	case DW_SC_IS_IN:
		if (!dw_str_eq(sc->type, et->name))
			return false;
		if (sc->slot)
			return true;
		rt.ent.name = sc->uid->type;
		rt.ent.et = dw_schema_find_etype(v->s, sc->uid->type);
		return dw_str_eq(sc->uid->type, et->name) || (rt.ent.et != NULL && vd_can_be_in(v, &lt, &rt));
	default:
		return false;
	}
}

/* Does the action scope admit action a? (get_actions_satisfying_constraint) */
static bool vd_action_admitted(struct vd_ctx *v, const struct dw_scope *sc, const struct dw_action *a)
{
	const struct dw_action *g;

	switch (sc->kind) {
	case DW_SC_ANY:
		return true;
	case DW_SC_EQ:
		return dw_schema_find_action(v->s, sc->uid->type, sc->uid->id) == a;
	case DW_SC_IN:
		g = dw_schema_find_action(v->s, sc->uid->type, sc->uid->id);
		return g != NULL && dw_schema_action_in(v->s, a, g);
	case DW_SC_IN_LIST: {
		bool in = false;

		/* one unknown action in the list and Cedar admits none */
		for (uint32_t i = 0; i < sc->n_list; i++) {
			g = dw_schema_find_action(v->s, sc->list[i]->type, sc->list[i]->id);
			if (g == NULL)
				return false;
			if (dw_schema_action_in(v->s, a, g))
				in = true;
		}
		return in;
	}
	default:
		return false;
	}
}

/* validate_action_application: some action the scope admits must apply to a
 * principal type and a resource type the scope admits.  A warning since
 * Cedar 4.x (the policy is then also impossible). */
static void vd_check_application(struct vd_ctx *v)
{
	const struct dw_policy *pol = v->pol;
	struct dw_expr at = { .off = pol->off, .end = pol->end, .src_index = pol->src_index };

	for (uint32_t i = 0; i < v->s->n_actions; i++) {
		const struct dw_action *a = v->s->actions[i];
		bool p = false, r = false;

		if (!vd_action_admitted(v, &pol->action, a))
			continue;
		for (uint32_t j = 0; j < a->n_principals && !p; j++)
			p = vd_scope_admits(v, &pol->principal, a->principals[j]);
		for (uint32_t j = 0; j < a->n_resources && !r; j++)
			r = vd_scope_admits(v, &pol->resource, a->resources[j]);
		if (p && r)
			return;
	}
	struct dw_buf b = { 0 };

	if (dw_buf_printf(&b, "for policy `%s`, unable to find an applicable action given the "
			  "policy scope constraints", pol->engine_id) < 0 || dw_buf_putc(&b, '\0') < 0)
		vd_nomem(v);
	else
		vd_report(v, DW_SEV_WARNING, at.src_index, at.off, at.end, b.p);
	dw_buf_free(&b);
}

/* ---- 8. request environments and dw_validate ------------------------------- */

/* Slot types a template may be linked with, given its scope (possible_slot_links). */
static size_t vd_slot_links(struct vd_ctx *v, const struct dw_scope *sc,
			    const struct dw_etype *var, const struct dw_etype **out)
{
	size_t n = 0;

	if (!sc->slot) {
		out[n++] = NULL;
		return n;
	}
	if (sc->kind == DW_SC_EQ) {
		out[n++] = var;
		return n;
	}
	for (uint32_t i = 0; i < v->s->n_etypes; i++) {
		const struct dw_etype *et = v->s->etypes[i];
		struct vd_type lt = { .kind = VD_ENTITY, .ent = { var->name, var } };
		struct vd_type rt = { .kind = VD_ENTITY, .ent = { et->name, et } };

		if (sc->kind == DW_SC_IN || sc->kind == DW_SC_IS_IN) {
			if (et != var && vd_can_be_in(v, &lt, &rt))
				out[n++] = et;
		} else {
			out[n++] = et;
		}
	}
	if (sc->kind == DW_SC_IN || sc->kind == DW_SC_IS_IN)
		out[n++] = var;
	return n;
}

/* Type-check the policy in one environment; true when its type is False. */
static bool vd_check_env(struct vd_ctx *v, const struct dw_expr *root)
{
	struct vd_ans a;

	if (++v->gen == 0) {
		memset(v->nt, 0, v->nt_cap * sizeof *v->nt);
		v->gen = 1;
	}
	v->depth = 0;
	v->budget = VD_TYPE_BUDGET;
	a = vd_expect1(v, NULL, root, &vd_t_bool);
	dw_arena_reset(&v->scratch, v->scratch_mark);
	return a.t != NULL && a.t->kind == VD_FALSE;
}

static size_t vd_count_nodes(const struct dw_expr *e, unsigned depth)
{
	size_t n = 1;

	if (e == NULL || depth > VD_MAX_EXPR_DEPTH)
		return 0;
	switch (e->op) {
	case DW_E_NOT: case DW_E_NEG:
		return n + vd_count_nodes(e->k.a, depth + 1);
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		return n + vd_count_nodes(e->k.a, depth + 1) + vd_count_nodes(e->k.b, depth + 1);
	case DW_E_IF:
		return n + vd_count_nodes(e->k.a, depth + 1) + vd_count_nodes(e->k.b, depth + 1) +
		       vd_count_nodes(e->k.c, depth + 1);
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		return n + vd_count_nodes(e->attr.e, depth + 1);
	case DW_E_LIKE:
		return n + vd_count_nodes(e->like.e, depth + 1);
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		for (uint32_t i = 0; i < e->n; i++)
			n += vd_count_nodes(e->list.items[i], depth + 1);
		return n;
	default:
		return n;
	}
}

static void vd_set_env(struct vd_ctx *v, const struct dw_action *a, const struct dw_etype *p,
		       const struct dw_etype *r, struct vd_type *action_t)
{
	v->act = a;
	dw_uid_init(&v->act_uid, a->type, a->id);
	v->principal_t = vd_entity_type(v, p);
	v->resource_t = vd_entity_type(v, r);
	action_t->kind = VD_ENTITY;
	action_t->ent.name = a->type;
	action_t->ent.et = NULL;
	v->action_t = action_t;
	v->context_t = a->context != NULL ? vd_from_schema(v, a->context) : &vd_t_empty_record;
}

static void vd_policy(struct vd_ctx *v, const struct dw_policy *pol)
{
	struct dw_arena_mark pm = dw_arena_mark(&v->pol_arena);
	const struct dw_expr *root;
	const struct dw_etype **plinks = NULL, **rlinks = NULL;
	struct vd_type action_t;
	bool all_false = true;
	size_t nodes;

	v->pol = pol;
	v->errors = false;
	v->seen_n = 0;
	if (v->seen_cap)
		memset(v->seen, 0, v->seen_cap * sizeof *v->seen);
	v->budget_reported = false;

	/* checks of names: Validator::validate_entity_types, validate_enum_entity,
	 * validate_action_ids, in Rust's order */
	vd_policy_uids(v, vd_check_uid_type, vd_check_type_name);
	vd_policy_uids(v, vd_check_uid_enum, NULL);
	vd_policy_uids(v, vd_check_uid_action, NULL);

	root = vd_policy_expr(v);
	if (root == NULL)
		goto out;
	nodes = vd_count_nodes(root, 0);
	if (nodes * 2 > v->nt_cap) {
		size_t cap = 64;

		while (cap < nodes * 2)
			cap *= 2;
		free(v->nt);
		v->nt = calloc(cap, sizeof *v->nt);
		v->nt_cap = v->nt ? cap : 0;
		v->gen = 0;
		if (v->nt == NULL) {
			vd_nomem(v);
			goto out;
		}
	}
	free(v->locs);
	v->locs_cap = 0;
	if ((v->locs = calloc(v->nt_cap, sizeof *v->locs)) == NULL) {
		vd_nomem(v);
		goto out;
	}
	v->locs_cap = v->nt_cap;
	vd_loc_mark(v, root, 0, 0);
	plinks = calloc((size_t)v->s->n_etypes + 1, sizeof *plinks);
	rlinks = calloc((size_t)v->s->n_etypes + 1, sizeof *rlinks);
	if (plinks == NULL || rlinks == NULL) {
		vd_nomem(v);
		goto out;
	}
	/* every (principal, action, resource) of every action's appliesTo; the
	 * scope is part of the condition, so a mismatch types as False there */
	for (uint32_t i = 0; i < v->s->n_actions && v->err == 0; i++) {
		const struct dw_action *a = v->s->actions[i];

		if (!a->has_applies_to)
			continue;
		for (uint32_t pi = 0; pi < a->n_principals && v->err == 0; pi++) {
			for (uint32_t ri = 0; ri < a->n_resources && v->err == 0; ri++) {
				const struct dw_etype *p = a->principals[pi], *r = a->resources[ri];
				size_t np = vd_slot_links(v, &pol->principal, p, plinks);
				size_t nr = vd_slot_links(v, &pol->resource, r, rlinks);

				vd_set_env(v, a, p, r, &action_t);
				for (size_t x = 0; x < np; x++) {
					for (size_t y = 0; y < nr; y++) {
						v->pslot_t = plinks[x] ? vd_entity_type(v, plinks[x]) : NULL;
						v->rslot_t = rlinks[y] ? vd_entity_type(v, rlinks[y]) : NULL;
						if (!vd_check_env(v, root))
							all_false = false;
					}
				}
			}
		}
	}
	if (v->err != 0)
		goto out;
	vd_check_application(v);
	if (all_false) {
		struct dw_buf b = { 0 };

		if (dw_buf_printf(&b, "for policy `%s`, policy is impossible: the policy expression "
				  "evaluates to false for all valid requests", pol->engine_id) < 0 ||
		    dw_buf_putc(&b, '\0') < 0)
			vd_nomem(v);
		else
			vd_report(v, DW_SEV_WARNING, pol->src_index, pol->off, pol->end, b.p);
		dw_buf_free(&b);
	}
out:
	free(plinks);
	free(rlinks);
	dw_arena_reset(&v->pol_arena, pm);
}

int dw_validate(const struct dw_policy_set *ps, const struct dw_schema *schema,
		struct dw_diags *diags)
{
	struct vd_ctx v;
	size_t ne;
	bool errors = false;

	if (ps == NULL || schema == NULL || !schema->finished) {
		if (dw_diags_add(diags, DW_SEV_ERROR, "", NULL, 0, 0, 0, "validate: %s",
				 schema == NULL || !schema->finished ? "the schema is not finished"
								     : "no policy set") != 0)
			return -ENOMEM;
		return -EINVAL;
	}
	memset(&v, 0, sizeof v);
	v.ps = ps;
	v.s = schema;
	v.diags = diags;
	dw_arena_init(&v.arena);
	dw_arena_init(&v.pol_arena);
	dw_arena_init(&v.scratch);
	v.scratch_mark = dw_arena_mark(&v.scratch);
	ne = schema->n_etypes ? schema->n_etypes : 1;
	v.etype_t = calloc(ne, sizeof *v.etype_t);
	v.shape_t = calloc(ne, sizeof *v.shape_t);
	v.tags_t = calloc(ne, sizeof *v.tags_t);
	v.mark = calloc(ne, sizeof *v.mark);
	if (v.etype_t == NULL || v.shape_t == NULL || v.tags_t == NULL || v.mark == NULL)
		v.err = -ENOMEM;
	for (uint32_t i = 0; i < ps->n_policies && v.err == 0; i++) {
		vd_policy(&v, ps->policies[i]);
		errors = errors || v.errors;
	}
	free(v.etype_t);
	free(v.shape_t);
	free(v.tags_t);
	free(v.mark);
	free(v.memo);
	free(v.seen);
	free(v.nt);
	free(v.locs);
	dw_arena_fini(&v.arena);
	dw_arena_fini(&v.pol_arena);
	dw_arena_fini(&v.scratch);
	if (v.err != 0)
		return v.err;
	return errors ? -EINVAL : 0;
}
