/* tcheck.c - load-time checks of temporal leaves (tcheck.h; the acceptance
 * rules and schema checks of docs/policy-reference.md §3.6).
 *
 * Divisions:
 *   1. the checker's context, diagnostics, name sets and scopes, leaf walk
 *   2. acceptance vocabulary: sigils, conjunct lists, free variables, RR(φ)
 *   3. dw_tcheck_accept: shapes, closedness, ordered conjunctions (demands)
 *   4. schema lookups: the rule's actions, context paths, events, types
 *   5. dw_tcheck_validate: entity types, context paths, event names,
 *      tp-dependence, types, windows
 *
 * The rules and their messages are Dogwood's (the reference's temporal
 * check.rs / validate.rs, restated).  Two choices of ours:
 *   - acceptance reports the first violation of a leaf, in the reference's
 *     order (shapes in tree order, then closedness, then demands): a leaf
 *     that breaks one rule usually breaks several, and the first is the cause;
 *     validation reports every finding, as `dogwood validate` does;
 *   - a finding is located at what it is about (the variable, binder,
 *     operator, predicate, field or term), not at the whole block.
 *
 * Recursion follows the nesting of the tree, which the parser bounds; the two
 * shapes it builds without bound, `&&` chains (a left spine) and `!` runs,
 * are walked as loops.  Scratch memory comes from an arena dropped after each
 * leaf (and after each nested chain of the demands walk).
 */
#include "tcheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "temporal.h"
#include "value.h"

/* --- 1. context, diagnostics, name sets, leaf walk ------------------------------ */

/* The type vocabulary of the temporal checks (the reference's "rich" types):
 * coarser than Cedar's, as Dogwood compares them. */
enum tc_tk {
	TK_NONE = 0,         /* unknown: checks involving it are skipped */
	TK_LONG,
	TK_STRING,
	TK_BOOL,
	TK_DECIMAL,
	TK_TIMEPOINT,        /* a tp variable: not a Long */
	TK_SET,
	TK_RECORD,
	TK_ENTITY,           /* ent = the qualified type; empty: some entity type */
};

enum tc_elem { TE_UNKNOWN = 0, TE_MIXED, TE_OF };

struct tc_ty {
	uint8_t kind;                /* enum tc_tk */
	uint8_t elem_state;          /* TK_SET: enum tc_elem */
	struct dw_str ent;
	const struct tc_ty *elem;    /* TK_SET with TE_OF */
};

/* A binder in scope: its name and, for the type pass, its type. */
struct tc_bind {
	struct dw_str name;
	struct tc_ty ty;
};

struct tc_stack {
	struct tc_bind *v;
	uint32_t n, cap;
};

/* A set of variable names: open addressing, slot.n == 0 is free. */
struct tc_set {
	struct dw_str *slot;
	uint32_t cap, n;             /* cap: 0 or a power of two */
};

/* A finding already reported for this leaf: validation says each once,
 * though the type pass runs once per action of the rule's scope and a macro
 * argument is one subtree under each of its uses. */
struct tc_seen {
	uint32_t off, end;
	const char *msg;
};

struct tc {
	const struct dw_policy_set *ps;
	struct dw_diags *diags;
	const struct dw_policy *pol;
	const struct dw_temporal *leaf;
	struct dw_arena scratch;
	int err;                     /* -ENOMEM once an allocation failed */
	uint32_t n_errors;           /* diagnostics this call added */
	bool opaque;                 /* the leaf holds unexpanded macro sigils */
	/* dw_tcheck_validate only */
	const struct dw_schema *s;
	const struct dw_evschema *es;
	bool scoped;                 /* the rule's action scope pins its actions */
	uint32_t n_targets;
	const struct dw_action **targets;
	const struct dw_action *act; /* the action the type pass assumes, or NULL */
	int (*prep)(struct tc *c);   /* per rule, before its first leaf */
	bool prepped;
	bool dedup;                  /* say each finding of a leaf once */
	struct tc_seen *seen;
	uint32_t n_seen, cap_seen;
};

static void *tc_alloc(struct tc *c, size_t size, size_t align)
{
	void *p = dw_arena_alloc(&c->scratch, size ? size : 1, align);

	if (p == NULL)
		c->err = -ENOMEM;
	return p;
}

#define TC_NEWN(c, T, n) ((T *)tc_alloc((c), sizeof(T) * (size_t)(n), _Alignof(T)))

__attribute__((format(printf, 2, 0)))
static char *tc_vfmt(struct tc *c, const char *fmt, va_list ap)
{
	va_list aq;
	int n;
	char *s;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0) {
		c->err = -ENOMEM;
		return NULL;
	}
	s = tc_alloc(c, (size_t)n + 1, 1);
	if (s != NULL)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

__attribute__((format(printf, 2, 3)))
static char *tc_fmt(struct tc *c, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = tc_vfmt(c, fmt, ap);
	va_end(ap);
	return s;
}

/* Add an error about [off, end) of the current leaf, marked with its rule.
 * A span outside the block (a node spliced from a macro body elsewhere)
 * falls back to the whole block.  0 or -ENOMEM. */
static int tc_emit(struct tc *c, uint32_t off, uint32_t end, const char *msg)
{
	const struct dw_temporal *t = c->leaf;
	int r;

	if (msg == NULL)
		return -ENOMEM;
	if (off > end || off < t->off || end > t->end) {
		off = t->off;
		end = t->end;
	}
	if (c->dedup) {
		for (uint32_t i = 0; i < c->n_seen; i++)
			if (c->seen[i].off == off && c->seen[i].end == end &&
			    strcmp(c->seen[i].msg, msg) == 0)
				return 0;
		if (c->n_seen == c->cap_seen) {
			uint32_t cap = c->cap_seen ? c->cap_seen * 2 : 8;
			struct tc_seen *v = TC_NEWN(c, struct tc_seen, cap);

			if (v == NULL)
				return -ENOMEM;
			if (c->n_seen)
				memcpy(v, c->seen, c->n_seen * sizeof *v);
			c->seen = v;
			c->cap_seen = cap;
		}
		c->seen[c->n_seen++] = (struct tc_seen){ off, end, msg };
	}
	r = dw_policy_set_diag(c->ps, c->diags, DW_SEV_ERROR, t->src_index, off, end, "%s", msg);
	if (r != 0)
		return c->err = r;
	dw_diags_set_policy(c->diags, c->pol->index);
	c->n_errors++;
	return 0;
}

/* A finding of validation: reported, and the walk goes on (0 or -ENOMEM). */
__attribute__((format(printf, 4, 5)))
static int tc_report(struct tc *c, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = tc_vfmt(c, fmt, ap);
	va_end(ap);
	return tc_emit(c, off, end, msg);
}

/* A violation of acceptance: reported, and the leaf is done (-EINVAL or -ENOMEM). */
__attribute__((format(printf, 4, 5)))
static int tc_fail(struct tc *c, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int r;

	va_start(ap, fmt);
	msg = tc_vfmt(c, fmt, ap);
	va_end(ap);
	r = tc_emit(c, off, end, msg);
	return r != 0 ? r : -EINVAL;
}

static uint64_t tc_hash(struct dw_str s)
{
	return dw_hash_str(s, 0x7463);
}

static bool tc_set_has(const struct tc_set *s, struct dw_str x)
{
	uint32_t mask, i;

	if (s == NULL || s->n == 0)
		return false;
	mask = s->cap - 1;
	for (i = (uint32_t)tc_hash(x) & mask; s->slot[i].n != 0; i = (i + 1) & mask)
		if (dw_str_eq(s->slot[i], x))
			return true;
	return false;
}

static void tc_set_put(struct tc_set *s, struct dw_str x)
{
	uint32_t mask = s->cap - 1, i;

	for (i = (uint32_t)tc_hash(x) & mask; s->slot[i].n != 0; i = (i + 1) & mask)
		if (dw_str_eq(s->slot[i], x))
			return;
	s->slot[i] = x;
	s->n++;
}

/* Make room for one more name at a load factor of at most 1/2. */
static int tc_set_grow(struct tc *c, struct tc_set *s, uint32_t want)
{
	struct tc_set g;
	uint32_t cap = s->cap ? s->cap : 8;

	while (want > cap / 2) {
		if (cap > UINT32_MAX / 4)
			return c->err = -ENOMEM;
		cap *= 2;
	}
	if (cap == s->cap)
		return 0;
	g.slot = dw_arena_zalloc(&c->scratch, cap * sizeof *g.slot, _Alignof(struct dw_str));
	if (g.slot == NULL)
		return c->err = -ENOMEM;
	g.cap = cap;
	g.n = 0;
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->slot[i].n != 0)
			tc_set_put(&g, s->slot[i]);
	*s = g;
	return 0;
}

static int tc_set_add(struct tc *c, struct tc_set *s, struct dw_str x)
{
	int r;

	if (x.n == 0 || tc_set_has(s, x))
		return 0;
	if ((r = tc_set_grow(c, s, s->n + 1)) != 0)
		return r;
	tc_set_put(s, x);
	return 0;
}

/* *dst = src without the names in drop[0, n_drop) (a binder shadowing them). */
static int tc_set_copy(struct tc *c, struct tc_set *dst, const struct tc_set *src,
		       const struct dw_str *drop, uint32_t n_drop)
{
	int r;

	memset(dst, 0, sizeof *dst);
	if (src->n != 0 && (r = tc_set_grow(c, dst, src->n)) != 0)
		return r;
	for (uint32_t i = 0; i < src->cap; i++) {
		bool dropped = false;

		if (src->slot[i].n == 0)
			continue;
		for (uint32_t k = 0; k < n_drop && !dropped; k++)
			dropped = dw_str_eq(src->slot[i], drop[k]);
		if (!dropped)
			tc_set_put(dst, src->slot[i]);
	}
	return 0;
}

static int tc_push(struct tc *c, struct tc_stack *st, struct dw_str name, struct tc_ty ty)
{
	if (st->n == st->cap) {
		uint32_t cap = st->cap ? st->cap * 2 : 16;
		struct tc_bind *v = TC_NEWN(c, struct tc_bind, cap);

		if (v == NULL)
			return -ENOMEM;
		if (st->n)
			memcpy(v, st->v, st->n * sizeof *v);
		st->v = v;
		st->cap = cap;
	}
	st->v[st->n++] = (struct tc_bind){ name, ty };
	return 0;
}

/* The innermost binder of name, or NULL. */
static const struct tc_bind *tc_lookup(const struct tc_stack *st, struct dw_str name)
{
	for (uint32_t i = st->n; i > 0; i--)
		if (dw_str_eq(st->v[i - 1].name, name))
			return &st->v[i - 1];
	return NULL;
}

typedef int (*tc_leaf_fn)(struct tc *c);

/* Run fn on every temporal leaf of e (prep first, once per rule).  A leaf's
 * own errors do not stop the walk (every leaf is checked); only -ENOMEM does. */
static int tc_walk_expr(struct tc *c, const struct dw_expr *e, tc_leaf_fn fn)
{
	struct dw_arena_mark m;
	uint32_t nc;
	int r;

	if (e == NULL)
		return 0;
	if (e->op == DW_E_TEMPORAL) {
		if (e->temporal == NULL || e->temporal->cond == NULL)
			return 0;
		if (c->prep != NULL && !c->prepped) {
			if ((r = c->prep(c)) != 0)
				return r;
			c->prepped = true;
		}
		c->leaf = e->temporal;
		c->seen = NULL;
		c->n_seen = c->cap_seen = 0;
		m = dw_arena_mark(&c->scratch);
		r = fn(c);
		dw_arena_reset(&c->scratch, m);
		if (c->err != 0)
			return c->err;
		return r == -ENOMEM ? r : 0;
	}
	nc = dw_expr_nchildren(e);
	for (uint32_t i = 0; i < nc; i++)
		if ((r = tc_walk_expr(c, dw_expr_child(e, i), fn)) != 0)
			return r;
	return 0;
}

/* The leaves of a rule are in its condition bodies (pol->cond folds the same
 * nodes, so it is not walked again).  Every rule is walked, whatever its
 * has_temporal says: a leaf missed here would be a leaf never checked. */
static int tc_run(struct tc *c, tc_leaf_fn fn)
{
	int r = 0;

	dw_arena_init(&c->scratch);
	for (uint32_t i = 0; i < c->ps->n_policies && r == 0; i++) {
		const struct dw_policy *pol = c->ps->policies[i];
		struct dw_arena_mark m = dw_arena_mark(&c->scratch);

		c->pol = pol;
		c->prepped = false;
		for (uint32_t k = 0; k < pol->n_conds && r == 0; k++)
			r = tc_walk_expr(c, pol->conds[k].body, fn);
		dw_arena_reset(&c->scratch, m);
	}
	dw_arena_fini(&c->scratch);
	if (r == 0 && c->err != 0)
		r = c->err;
	if (r != 0)
		return r;
	return c->n_errors != 0 ? -EINVAL : 0;
}

/* --- 2. acceptance vocabulary ---------------------------------------------------- */

static bool tc_node_sigil(const struct dw_tnode *n);

/* Does the term still hold a macro sigil or call (expansion not done)? */
static bool tc_term_sigil(const struct dw_tterm *t)
{
	switch (t->kind) {
	case DW_TT_PARAM:
	case DW_TT_BINDER:
	case DW_TT_CALL:
		return true;
	case DW_TT_ARRAY:
		for (uint32_t k = 0; k < t->n_items; k++)
			if (tc_term_sigil(&t->items[k]))
				return true;
		return false;
	case DW_TT_AGG:
		if (t->agg->is_sum && t->agg->summand.sigil != 0)
			return true;
		for (uint32_t k = 0; k < t->agg->n_for; k++)
			if (t->agg->for_binders[k].sigil != 0)
				return true;
		return tc_node_sigil(t->agg->where);
	default:
		return false;
	}
}

/* Does the condition still hold a macro sigil or call?  The acceptance checks punt
 * on such a subtree: its atoms exist only after expansion. */
static bool tc_node_sigil(const struct dw_tnode *n)
{
	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			if (tc_node_sigil(n->b))
				return true;
			n = n->a;
			continue;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			if (tc_node_sigil(n->a))
				return true;
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil != 0)
				return true;
			n = n->a;
			continue;
		case DW_TN_TP:
			return n->binder.sigil != 0;
		case DW_TN_CMP:
			return tc_term_sigil(n->lhs) || tc_term_sigil(n->rhs);
		case DW_TN_PRED:
			if (n->pred->param.n != 0)
				return true;
			for (uint32_t k = 0; k < n->pred->n_fields; k++)
				if (tc_term_sigil(&n->pred->fields[k].term))
					return true;
			return false;
		default:
			return true;         /* DW_TN_CALL, DW_TN_PARAM */
		}
	}
	return false;
}

/* Is n opaque to the acceptance checks?  Expansion leaves no sigil behind, so a leaf
 * without any is not searched again at every chain and binder. */
static bool tc_opaque(const struct tc *c, const struct dw_tnode *n)
{
	return c->opaque && tc_node_sigil(n);
}

static uint32_t tc_count_conj(const struct dw_tnode *n)
{
	uint32_t k = 0;

	for (; n->kind == DW_TN_AND; n = n->a)
		k += n->b->kind == DW_TN_AND ? tc_count_conj(n->b) : 1;
	return k + 1;
}

static uint32_t tc_fill_conj(const struct dw_tnode *n, const struct dw_tnode **v, uint32_t end)
{
	for (; n->kind == DW_TN_AND; n = n->a) {
		if (n->b->kind == DW_TN_AND)
			end = tc_fill_conj(n->b, v, end);
		else
			v[--end] = n->b;
	}
	v[--end] = n;
	return end;
}

/* The conjuncts of an `&&` chain in source order, parenthesised sub-chains
 * flattened (`a && (b && c)` is the chain a, b, c, as in the reference).  A
 * node that is not an `&&` is a chain of one.  NULL on ENOMEM. */
static const struct dw_tnode **tc_conjuncts(struct tc *c, const struct dw_tnode *n, uint32_t *k)
{
	uint32_t m = tc_count_conj(n);
	const struct dw_tnode **v = TC_NEWN(c, const struct dw_tnode *, m);

	if (v == NULL)
		return NULL;
	tc_fill_conj(n, v, m);
	*k = m;
	return v;
}

/* The variable a binding equality binds: `x == t` (either side) where the
 * other side is a value, i.e. not a variable and not a wildcard (`x == *`
 * binds nothing: a wildcard has no value). */
static bool tc_eq_binds(const struct dw_tnode *n, struct dw_str *name)
{
	bool lv, rv;

	if (n->kind != DW_TN_CMP || n->cmp != DW_TC_EQ)
		return false;
	lv = n->lhs->kind == DW_TT_VAR;
	rv = n->rhs->kind == DW_TT_VAR;
	if (lv && !rv && n->rhs->kind != DW_TT_WILDCARD) {
		*name = n->lhs->str;
		return true;
	}
	if (rv && !lv && n->lhs->kind != DW_TT_WILDCARD) {
		*name = n->rhs->str;
		return true;
	}
	return false;
}

/* x ∈ RR(n): range-restricted by a positive atom.  Predicate fields, tp(x)
 * and binding equalities restrict; bodies of formerly/previous and the anchor
 * of since pass restriction up, as do nested exists (minus their binder);
 * nothing under a negation does, at any depth. */
static bool tc_rr_has(const struct dw_tnode *n, struct dw_str x)
{
	struct dw_str b;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			if (tc_rr_has(n->b, x))
				return true;
			n = n->a;
			continue;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil == 0 && dw_str_eq(n->binder.name, x))
				return false;        /* the body's x is another variable */
			n = n->a;
			continue;
		case DW_TN_PRED:
			for (uint32_t k = 0; k < n->pred->n_fields; k++) {
				const struct dw_tfield *f = &n->pred->fields[k];
				if (!f->like && f->term.kind == DW_TT_VAR &&
				    dw_str_eq(f->term.str, x))
					return true;
			}
			return false;
		case DW_TN_TP:
			return n->binder.sigil == 0 && dw_str_eq(n->binder.name, x);
		case DW_TN_CMP:
			return tc_eq_binds(n, &b) && dw_str_eq(b, x);
		default:
			return false;        /* DW_TN_NOT and unexpanded nodes */
		}
	}
	return false;
}

/* RR(n) into out, less the names bound inside n (mask holds the binders of
 * the nested exists being walked). */
static int tc_rr_collect(struct tc *c, const struct dw_tnode *n, struct tc_set *out,
			 struct tc_stack *mask)
{
	struct dw_str b;
	int r;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			if ((r = tc_rr_collect(c, n->b, out, mask)) != 0)
				return r;
			n = n->a;
			continue;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil != 0)
				return tc_rr_collect(c, n->a, out, mask);
			if ((r = tc_push(c, mask, n->binder.name, (struct tc_ty){ 0 })) != 0)
				return r;
			r = tc_rr_collect(c, n->a, out, mask);
			mask->n--;
			return r;
		case DW_TN_PRED:
			for (uint32_t k = 0; k < n->pred->n_fields; k++) {
				const struct dw_tfield *f = &n->pred->fields[k];
				if (!f->like && f->term.kind == DW_TT_VAR &&
				    tc_lookup(mask, f->term.str) == NULL &&
				    (r = tc_set_add(c, out, f->term.str)) != 0)
					return r;
			}
			return 0;
		case DW_TN_TP:
			if (n->binder.sigil == 0 && tc_lookup(mask, n->binder.name) == NULL)
				return tc_set_add(c, out, n->binder.name);
			return 0;
		case DW_TN_CMP:
			if (tc_eq_binds(n, &b) && tc_lookup(mask, b) == NULL)
				return tc_set_add(c, out, b);
			return 0;
		default:
			return 0;
		}
	}
	return 0;
}

static bool tc_term_occurs(const struct dw_tterm *t, struct dw_str x);

/* Does x occur free in n (a variable term or a tp binder)? */
static bool tc_occurs(const struct dw_tnode *n, struct dw_str x)
{
	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
		case DW_TN_SINCE:
			if (tc_occurs(n->b, x))
				return true;
			n = n->a;
			continue;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil == 0 && dw_str_eq(n->binder.name, x))
				return false;
			n = n->a;
			continue;
		case DW_TN_TP:
			return n->binder.sigil == 0 && dw_str_eq(n->binder.name, x);
		case DW_TN_CMP:
			return tc_term_occurs(n->lhs, x) || tc_term_occurs(n->rhs, x);
		case DW_TN_PRED:
			for (uint32_t k = 0; k < n->pred->n_fields; k++)
				if (!n->pred->fields[k].like &&
				    tc_term_occurs(&n->pred->fields[k].term, x))
					return true;
			return false;
		default:
			return false;
		}
	}
	return false;
}

static bool tc_term_occurs(const struct dw_tterm *t, struct dw_str x)
{
	switch (t->kind) {
	case DW_TT_VAR:
		return dw_str_eq(t->str, x);
	case DW_TT_ARRAY:
		for (uint32_t k = 0; k < t->n_items; k++)
			if (tc_term_occurs(&t->items[k], x))
				return true;
		return false;
	case DW_TT_AGG:
		for (uint32_t k = 0; k < t->agg->n_for; k++)
			if (t->agg->for_binders[k].sigil == 0 &&
			    dw_str_eq(t->agg->for_binders[k].name, x))
				return false;
		return tc_occurs(t->agg->where, x);
	default:
		return false;
	}
}

/* The first variable occurrence (source order) that is neither bound by a
 * binder on mask (binders inside the walked subtree are pushed while their
 * scope is walked) nor in one of the sets: the free variables of acceptance rule 1,
 * of an aggregate body (rule 4), or the unmet demands of rule 3. */
struct tc_scan {
	struct tc_stack mask;
	const struct tc_set *in1, *in2;  /* names that count as bound; may be NULL */
	bool found;
	struct dw_str name;
	uint32_t off, end;
};

static void tc_scan_var(struct tc_scan *sc, struct dw_str name, uint32_t off, uint32_t end)
{
	if (sc->found || tc_lookup(&sc->mask, name) != NULL || tc_set_has(sc->in1, name) ||
	    tc_set_has(sc->in2, name))
		return;
	sc->found = true;
	sc->name = name;
	sc->off = off;
	sc->end = end;
}

static int tc_scan_node(struct tc *c, const struct dw_tnode *n, struct tc_scan *sc);

static int tc_scan_term(struct tc *c, const struct dw_tterm *t, struct tc_scan *sc)
{
	uint32_t depth;
	int r;

	switch (t->kind) {
	case DW_TT_VAR:
		tc_scan_var(sc, t->str, t->off, t->end);
		return 0;
	case DW_TT_ARRAY:
		for (uint32_t k = 0; k < t->n_items && !sc->found; k++)
			if ((r = tc_scan_term(c, &t->items[k], sc)) != 0)
				return r;
		return 0;
	case DW_TT_AGG:
		depth = sc->mask.n;
		for (uint32_t k = 0; k < t->agg->n_for; k++)
			if (t->agg->for_binders[k].sigil == 0 &&
			    (r = tc_push(c, &sc->mask, t->agg->for_binders[k].name,
					 (struct tc_ty){ 0 })) != 0)
				return r;
		r = tc_scan_node(c, t->agg->where, sc);
		sc->mask.n = depth;
		return r;
	default:
		return 0;
	}
}

static int tc_scan_node(struct tc *c, const struct dw_tnode *n, struct tc_scan *sc)
{
	const struct dw_tnode **v;
	uint32_t k;
	int r;

	while (n != NULL && !sc->found) {
		switch (n->kind) {
		case DW_TN_AND:
			if ((v = tc_conjuncts(c, n, &k)) == NULL)
				return -ENOMEM;
			for (uint32_t i = 0; i < k && !sc->found; i++)
				if ((r = tc_scan_node(c, v[i], sc)) != 0)
					return r;
			return 0;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			if ((r = tc_scan_node(c, n->a, sc)) != 0)
				return r;
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil != 0) {
				n = n->a;
				continue;
			}
			if ((r = tc_push(c, &sc->mask, n->binder.name, (struct tc_ty){ 0 })) != 0)
				return r;
			r = tc_scan_node(c, n->a, sc);
			sc->mask.n--;
			return r;
		case DW_TN_TP:
			if (n->binder.sigil == 0)
				tc_scan_var(sc, n->binder.name, n->binder.off, n->binder.end);
			return 0;
		case DW_TN_CMP:
			if ((r = tc_scan_term(c, n->lhs, sc)) != 0)
				return r;
			return tc_scan_term(c, n->rhs, sc);
		case DW_TN_PRED:
			for (uint32_t i = 0; i < n->pred->n_fields && !sc->found; i++)
				if (!n->pred->fields[i].like &&
				    (r = tc_scan_term(c, &n->pred->fields[i].term, sc)) != 0)
					return r;
			return 0;
		default:
			return 0;
		}
	}
	return 0;
}

/* --- 3. dw_tcheck_accept ------------------------------------------------------- */

static const char *const tc_reserved[] = { "principal", "action", "resource", "context" };

/* Acceptance rule 6: Cedar's request variables cannot name a binder. */
static int tc_check_reserved(struct tc *c, const struct dw_tbinder *b)
{
	if (b->sigil != 0)
		return 0;
	for (size_t k = 0; k < DW_N_ELEMENTS(tc_reserved); k++)
		if (dw_str_eq_c(b->name, tc_reserved[k]))
			return tc_fail(c, b->off, b->end, "`%.*s` is a reserved word and cannot "
				       "be used as a binder name; `principal`, `action`, "
				       "`resource`, and `context` are the Cedar request variables "
				       "— rename the `exists` / `for` / `tp` variable",
				       (int)b->name.n, b->name.p);
	return 0;
}

/* Acceptance rule 5: an aggregate is only ever the immediate operand of a comparison. */
static int tc_check_nested(struct tc *c, const struct dw_tterm *t)
{
	int r;

	if (t->kind == DW_TT_AGG || t->kind == DW_TT_CALL)
		return tc_fail(c, t->off, t->end, "an aggregate (`sum`/`count`) may appear only "
			       "as the immediate operand of a comparison, not as a "
			       "predicate-argument value or nested in another term");
	if (t->kind == DW_TT_ARRAY)
		for (uint32_t k = 0; k < t->n_items; k++)
			if ((r = tc_check_nested(c, &t->items[k])) != 0)
				return r;
	return 0;
}

/* A `like` pattern (cairn extension) is a Cedar pattern literal: the string
 * escapes plus `\*`, a literal star.  The parser keeps the raw text (and the
 * decoded pattern when it is valid), so a bad escape is reported here, with
 * Cedar's decoder and in Cedar's words. */
static int tc_check_pattern(struct tc *c, const struct dw_tterm *t)
{
	const struct dw_pattern *pat;
	uint32_t base = t->off + 1, bo, be;   /* the text starts after the quote */
	struct dw_arena_mark m = dw_arena_mark(&c->scratch);
	int r = dw_pattern_from_raw(&c->scratch, t->str.p, t->str.n, &pat, &bo, &be);

	dw_arena_reset(&c->scratch, m);
	if (r == -ENOMEM) {
		c->err = -ENOMEM;
		return -ENOMEM;
	}
	if (r != 0)
		return tc_fail(c, base + bo, base + be, "the input `%.*s` is not a valid escape",
			       (int)(be - bo), t->str.p + bo);
	return 0;
}

static const char *tc_for_list(struct tc *c, const struct dw_tagg *g)
{
	struct dw_buf b = { NULL, 0, 0 };
	const char *s;
	int r = 0;

	for (uint32_t k = 0; k < g->n_for && r == 0; k++)
		r = dw_buf_printf(&b, "%s%.*s", k ? ", " : "", (int)g->for_binders[k].name.n,
				  g->for_binders[k].name.p);
	s = r == 0 ? dw_arena_strndup(&c->scratch, b.p ? b.p : "", b.n) : NULL;
	dw_buf_free(&b);
	if (s == NULL)
		c->err = -ENOMEM;
	return s;
}

static int tc_shape_node(struct tc *c, const struct dw_tnode *n, struct tc_stack *bound);

/* Acceptance rule 4, for one aggregate operand; bound holds the enclosing binders. */
static int tc_shape_agg(struct tc *c, const struct dw_tagg *g, struct tc_stack *bound)
{
	struct tc_scan sc;
	const char *list;
	uint32_t depth = bound->n;
	bool in_for = false, opaque;
	int r;

	if (g->is_sum && g->summand.sigil != 0)
		return 0;
	for (uint32_t k = 0; k < g->n_for; k++)
		if (g->for_binders[k].sigil != 0)
			return 0;        /* its names exist only after expansion */
	for (uint32_t k = 0; k < g->n_for; k++)
		if ((r = tc_check_reserved(c, &g->for_binders[k])) != 0)
			return r;
	if ((list = tc_for_list(c, g)) == NULL)
		return -ENOMEM;
	if (g->is_sum) {
		for (uint32_t k = 0; k < g->n_for && !in_for; k++)
			in_for = dw_str_eq(g->for_binders[k].name, g->summand.name);
		if (!in_for)
			return tc_fail(c, g->summand.off, g->summand.end, "aggregation sums "
				       "`%.*s`, which is not one of its `for` binders (%s); the "
				       "summed variable must appear in the `for` list (the sum is "
				       "computed over the `for` columns)", (int)g->summand.name.n,
				       g->summand.name.p, list);
	}
	memset(&sc, 0, sizeof sc);
	sc.mask = *bound;
	for (uint32_t k = 0; k < g->n_for; k++)
		if ((r = tc_push(c, &sc.mask, g->for_binders[k].name, (struct tc_ty){ 0 })) != 0)
			return r;
	if ((r = tc_scan_node(c, g->where, &sc)) != 0)
		return r;
	if (sc.found)
		return tc_fail(c, sc.off, sc.end, "variable `%.*s` is used in the aggregation "
			       "body but is bound by neither the `for` list (%s) nor an enclosing "
			       "binder; add it to the `for` list", (int)sc.name.n, sc.name.p, list);
	opaque = tc_opaque(c, g->where);
	for (uint32_t k = 0; k < g->n_for && !opaque; k++) {
		const struct dw_tbinder *b = &g->for_binders[k];

		if (!tc_occurs(g->where, b->name))
			return tc_fail(c, b->off, b->end, "`for`-variable `%.*s` does not occur "
				       "in the aggregation body (%s); a group-by variable must be "
				       "used in the `where` body, otherwise the grouping ranges "
				       "over an unbounded domain", (int)b->name.n, b->name.p, list);
	}
	for (uint32_t k = 0; k < g->n_for && !opaque; k++) {
		const struct dw_tbinder *b = &g->for_binders[k];

		if (!tc_rr_has(g->where, b->name))
			return tc_fail(c, b->off, b->end, "aggregation `for`-variable `%.*s` is "
				       "not range-restricted by any positive atom in the `where` "
				       "body; bind it with a predicate field (`P{ f: %.*s }`), a "
				       "`tp(%.*s)`, or an equality (`(count …) == %.*s`) — an "
				       "occurrence under a negation or in the left operand of a "
				       "`since` does not restrict",
				       (int)b->name.n, b->name.p, (int)b->name.n, b->name.p,
				       (int)b->name.n, b->name.p, (int)b->name.n, b->name.p);
	}
	for (uint32_t k = 0; k < g->n_for; k++)
		if ((r = tc_push(c, bound, g->for_binders[k].name, (struct tc_ty){ 0 })) != 0)
			return r;
	r = tc_shape_node(c, g->where, bound);
	bound->n = depth;
	return r;
}

static int tc_shape_operand(struct tc *c, const struct dw_tterm *t, struct tc_stack *bound)
{
	if (t->kind == DW_TT_AGG)
		return tc_shape_agg(c, t->agg, bound);
	if (t->kind == DW_TT_CALL)
		return 0;            /* an aggregation macro call, not expanded */
	return tc_check_nested(c, t);
}

/* Acceptance rules 2, 4, 5, 6 and `like` patterns, in tree order; bound holds the
 * binders in scope (exists binders and enclosing `for` lists). */
static int tc_shape_node(struct tc *c, const struct dw_tnode *n, struct tc_stack *bound)
{
	const struct dw_tnode **v;
	uint32_t k, depth;
	int r;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			if ((v = tc_conjuncts(c, n, &k)) == NULL)
				return -ENOMEM;
			for (uint32_t i = 0; i < k; i++)
				if ((r = tc_shape_node(c, v[i], bound)) != 0)
					return r;
			return 0;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			if ((r = tc_shape_node(c, n->a, bound)) != 0)
				return r;
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil != 0) {
				n = n->a;
				continue;
			}
			if ((r = tc_check_reserved(c, &n->binder)) != 0)
				return r;
			if (!tc_opaque(c, n->a) && !tc_rr_has(n->a, n->binder.name))
				return tc_fail(c, n->binder.off, n->binder.end, "existential "
					       "variable `%.*s` is not range-restricted by any "
					       "positive atom in the `exists` body; bind it with "
					       "a predicate field (`P{ f: %.*s }`), a `tp(%.*s)`, "
					       "or an equality (`(count …) == %.*s`)",
					       (int)n->binder.name.n, n->binder.name.p,
					       (int)n->binder.name.n, n->binder.name.p,
					       (int)n->binder.name.n, n->binder.name.p,
					       (int)n->binder.name.n, n->binder.name.p);
			depth = bound->n;
			if ((r = tc_push(c, bound, n->binder.name, (struct tc_ty){ 0 })) != 0)
				return r;
			r = tc_shape_node(c, n->a, bound);
			bound->n = depth;
			return r;
		case DW_TN_TP:
			return tc_check_reserved(c, &n->binder);
		case DW_TN_CMP:
			if ((r = tc_shape_operand(c, n->lhs, bound)) != 0)
				return r;
			return tc_shape_operand(c, n->rhs, bound);
		case DW_TN_PRED:
			for (uint32_t i = 0; i < n->pred->n_fields; i++) {
				const struct dw_tfield *f = &n->pred->fields[i];

				if (f->like)
					r = tc_check_pattern(c, &f->term);
				else
					r = tc_check_nested(c, &f->term);
				if (r != 0)
					return r;
			}
			return 0;
		default:
			return 0;            /* unexpanded macro call or parameter */
		}
	}
	return 0;
}

static int tc_chain(struct tc *c, const struct dw_tnode *n, const struct tc_set *seed);

/* The unmet demand of a filter: the first variable of n not in rho. */
static int tc_unmet(struct tc *c, const struct dw_tnode *n, const struct dw_tterm *t,
		    const struct tc_set *rho, const struct tc_set *also, struct tc_scan *sc)
{
	memset(sc, 0, sizeof *sc);
	sc->in1 = rho;
	sc->in2 = also;
	return n != NULL ? tc_scan_node(c, n, sc) : tc_scan_term(c, t, sc);
}

static int tc_filter(struct tc *c, const struct dw_tnode *n, const struct tc_scan *sc)
{
	if (!sc->found)
		return 0;
	return tc_fail(c, n->off, n->end, "variable `%.*s` is used in a filter (a comparison or "
		       "negation) that is not range-restricted by a preceding conjunct; place a "
		       "conjunct that binds `%.*s` (a predicate, `tp`, or a binding equality) "
		       "before it", (int)sc->name.n, sc->name.p, (int)sc->name.n, sc->name.p);
}

/* Acceptance rule 3 for one conjunct: what it reads must be bound by the conjuncts
 * before it (rho).  Non-chain wrappers pass the environment through. */
static int tc_demands(struct tc *c, const struct dw_tnode *n, const struct tc_set *rho)
{
	struct tc_scan sc;
	struct tc_set anchor;
	struct tc_stack mask = { NULL, 0, 0 };
	struct dw_str x;
	int r;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_CMP:
			if (tc_eq_binds(n, &x)) {
				const struct dw_tterm *val = n->rhs;

				if (n->lhs->kind != DW_TT_VAR || !dw_str_eq(n->lhs->str, x))
					val = n->lhs;   /* the value side */

				if ((r = tc_unmet(c, NULL, val, rho, NULL, &sc)) != 0)
					return r;
				if (sc.found)
					return tc_fail(c, n->off, n->end, "the equality binding "
						       "`%.*s` reads `%.*s` inside its aggregate "
						       "operand (`%.*s` is used in the "
						       "aggregation body but not bound by its "
						       "`for` list), and `%.*s` is not "
						       "range-restricted by a preceding conjunct; "
						       "place the conjunct that binds `%.*s` "
						       "before the equality, widening the "
						       "`exists` scope if needed",
						       (int)x.n, x.p, (int)sc.name.n, sc.name.p,
						       (int)sc.name.n, sc.name.p,
						       (int)sc.name.n, sc.name.p,
						       (int)sc.name.n, sc.name.p);
				return 0;
			}
			/* an ordering, `!=` or a non-binding `==`: a pure filter */
			if ((r = tc_unmet(c, NULL, n->lhs, rho, NULL, &sc)) != 0)
				return r;
			if (!sc.found && (r = tc_unmet(c, NULL, n->rhs, rho, NULL, &sc)) != 0)
				return r;
			return tc_filter(c, n, &sc);
		case DW_TN_NOT:
			if ((r = tc_unmet(c, n->a, NULL, rho, NULL, &sc)) != 0)
				return r;
			return tc_filter(c, n, &sc);
		case DW_TN_SINCE:
			/* the left is checked per step under the anchor's bindings; it
			 * binds nothing itself */
			memset(&anchor, 0, sizeof anchor);
			if ((r = tc_rr_collect(c, n->b, &anchor, &mask)) != 0 ||
			    (r = tc_unmet(c, n->a, NULL, rho, &anchor, &sc)) != 0)
				return r;
			if (sc.found)
				return tc_fail(c, n->off, n->end, "variable `%.*s` is used in the "
					       "left operand of a `since` but is restricted "
					       "neither by the `since` anchor (its right operand) "
					       "nor by a preceding conjunct; the left of a "
					       "`since` is a per-step condition and cannot bind "
					       "`%.*s` — restrict it in the anchor or in a "
					       "conjunct before the `since`",
					       (int)sc.name.n, sc.name.p,
					       (int)sc.name.n, sc.name.p);
			return 0;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			if (n->a->kind == DW_TN_AND)
				return 0;    /* its chain is checked, seeded, by descent */
			n = n->a;
			continue;
		case DW_TN_EXISTS:
			if (n->a->kind == DW_TN_AND)
				return 0;
			if (n->binder.sigil == 0) {
				/* a fresh set: rho may be the one made for an outer exists */
				struct tc_set *seed = TC_NEWN(c, struct tc_set, 1);

				if (seed == NULL ||
				    (r = tc_set_copy(c, seed, rho, &n->binder.name, 1)) != 0)
					return -ENOMEM;
				rho = seed;
			}
			n = n->a;
			continue;
		default:
			return 0;
		}
	}
	return 0;
}

/* Descend into the chains nested in one conjunct, each seeded with the
 * bindings at its position (less a shadowing binder's names): the evaluator
 * threads bindings of preceding conjuncts into nested structure. */
static int tc_descend(struct tc *c, const struct dw_tnode *n, const struct tc_set *rho)
{
	struct tc_set seed;
	struct tc_stack mask = { NULL, 0, 0 };
	int r;

	while (n != NULL && n->kind == DW_TN_NOT)
		n = n->a;
	if (n == NULL)
		return 0;
	switch (n->kind) {
	case DW_TN_AND:
		return tc_chain(c, n, rho);
	case DW_TN_FORMERLY:
	case DW_TN_PREVIOUS:
		return tc_chain(c, n->a, rho);
	case DW_TN_SINCE:
		if ((r = tc_set_copy(c, &seed, rho, NULL, 0)) != 0 ||
		    (r = tc_rr_collect(c, n->b, &seed, &mask)) != 0 ||
		    (r = tc_chain(c, n->a, &seed)) != 0)
			return r;
		return tc_chain(c, n->b, rho);
	case DW_TN_EXISTS:
		if (n->binder.sigil != 0)
			return tc_chain(c, n->a, rho);
		if ((r = tc_set_copy(c, &seed, rho, &n->binder.name, 1)) != 0)
			return r;
		return tc_chain(c, n->a, &seed);
	case DW_TN_CMP:
		for (int side = 0; side < 2; side++) {
			const struct dw_tterm *t = side == 0 ? n->lhs : n->rhs;
			struct dw_str *drop;
			uint32_t nd = 0;

			if (t->kind != DW_TT_AGG)
				continue;
			/* a `for` binder is a fresh variable in the body */
			if ((drop = TC_NEWN(c, struct dw_str, t->agg->n_for)) == NULL)
				return -ENOMEM;
			for (uint32_t k = 0; k < t->agg->n_for; k++)
				if (t->agg->for_binders[k].sigil == 0)
					drop[nd++] = t->agg->for_binders[k].name;
			if ((r = tc_set_copy(c, &seed, rho, drop, nd)) != 0 ||
			    (r = tc_chain(c, t->agg->where, &seed)) != 0)
				return r;
		}
		return 0;
	default:
		return 0;
	}
}

/* Walk one chain left to right with the accumulator rho: each conjunct's
 * demands must be met by rho, then rho ∪= RR(conjunct). */
static int tc_chain(struct tc *c, const struct dw_tnode *n, const struct tc_set *seed)
{
	struct dw_arena_mark m = dw_arena_mark(&c->scratch);
	struct tc_stack mask = { NULL, 0, 0 };
	const struct dw_tnode **v;
	struct tc_set rho;
	uint32_t k;
	int r = 0;

	if ((v = tc_conjuncts(c, n, &k)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < k; i++)
		if (tc_opaque(c, v[i]))
			goto out;        /* opaque until expanded */
	if ((r = tc_set_copy(c, &rho, seed, NULL, 0)) != 0)
		goto out;
	for (uint32_t i = 0; i < k && r == 0; i++) {
		if ((r = tc_demands(c, v[i], &rho)) != 0 || (r = tc_descend(c, v[i], &rho)) != 0)
			break;
		mask.n = 0;
		r = tc_rr_collect(c, v[i], &rho, &mask);
	}
out:
	dw_arena_reset(&c->scratch, m);
	return r;
}

static int tc_accept_leaf(struct tc *c)
{
	const struct dw_tnode *root = c->leaf->cond;
	struct tc_stack bound = { NULL, 0, 0 };
	struct tc_set empty = { NULL, 0, 0 };
	struct tc_scan sc;
	int r;

	c->opaque = tc_node_sigil(root);
	if ((r = tc_shape_node(c, root, &bound)) != 0)
		return r;
	memset(&sc, 0, sizeof sc);
	if ((r = tc_scan_node(c, root, &sc)) != 0)
		return r;
	if (sc.found)
		return tc_fail(c, sc.off, sc.end, "variable `%.*s` is free in this temporal "
			       "condition (bound by no `exists` binder or aggregation `for` "
			       "list); a temporal condition must be closed — wrap it as `exists "
			       "(%.*s: <type>). (…)`, or use `*` to match any value",
			       (int)sc.name.n, sc.name.p,
			       (int)sc.name.n, sc.name.p);
	return tc_chain(c, root, &empty);
}

int dw_tcheck_accept(const struct dw_policy_set *ps, struct dw_diags *diags)
{
	struct tc c;

	memset(&c, 0, sizeof c);
	c.ps = ps;
	c.diags = diags;
	return tc_run(&c, tc_accept_leaf);
}

/* --- 4. schema lookups ------------------------------------------------------------ */

/* Does the rule's action scope admit action a? */
static bool tc_scope_admits(const struct dw_schema *s, const struct dw_scope *sc,
			    const struct dw_action *a)
{
	const struct dw_action *g;

	switch (sc->kind) {
	case DW_SC_EQ:
		return sc->uid != NULL && dw_str_eq(a->type, sc->uid->type) &&
		       dw_str_eq(a->id, sc->uid->id);
	case DW_SC_IN:
		g = sc->uid != NULL ? dw_schema_find_action(s, sc->uid->type, sc->uid->id) : NULL;
		return g != NULL && dw_schema_action_in(s, a, g);
	case DW_SC_IN_LIST:
		for (uint32_t k = 0; k < sc->n_list; k++) {
			g = dw_schema_find_action(s, sc->list[k]->type, sc->list[k]->id);
			if (g != NULL && dw_schema_action_in(s, a, g))
				return true;
		}
		return false;
	default:
		return true;
	}
}

/* The actions the rule's scope pins (`== A`, `in G`, `in [A, G]`: every
 * action below, that applies to some request).  An unconstrained scope pins
 * none: its `context.*` typing is left to Cedar's validator. */
static int tc_prep_rule(struct tc *c)
{
	const struct dw_scope *sc = &c->pol->action;

	c->scoped = sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN || sc->kind == DW_SC_IN_LIST;
	c->n_targets = 0;
	c->targets = NULL;
	if (!c->scoped)
		return 0;
	c->targets = TC_NEWN(c, const struct dw_action *, c->s->n_actions);
	if (c->targets == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->s->n_actions; i++) {
		const struct dw_action *a = c->s->actions[i];

		if (a->has_applies_to && tc_scope_admits(c->s, sc, a))
			c->targets[c->n_targets++] = a;
	}
	return 0;
}

static const struct dw_attr *tc_attr(const struct dw_type *rec, struct dw_str name)
{
	if (rec == NULL || rec->kind != DW_T_RECORD)
		return NULL;
	for (uint32_t k = 0; k < rec->rec.n; k++)
		if (dw_str_eq(rec->rec.v[k].name, name))
			return &rec->rec.v[k];
	return NULL;
}

enum tc_res { TR_OK = 0, TR_HEAD, TR_NESTED, TR_NONREC };

/* Resolve a dotted path in a record type.  On failure *seg is the segment
 * that did not resolve. */
static enum tc_res tc_resolve(const struct dw_type *rec, struct dw_str path,
			      const struct dw_type **out, struct dw_str *seg)
{
	const struct dw_type *cur = rec;
	uint32_t i = 0;
	bool head = true;

	while (i <= path.n) {
		uint32_t j = i;
		const struct dw_attr *at;

		while (j < path.n && path.p[j] != '.')
			j++;
		*seg = dw_str_make(path.p + i, j - i);
		if (cur == NULL || cur->kind != DW_T_RECORD)
			return head ? TR_HEAD : TR_NONREC;
		if ((at = tc_attr(cur, *seg)) == NULL)
			return head ? TR_HEAD : TR_NESTED;
		cur = at->type;
		head = false;
		i = j + 1;
	}
	*out = cur;
	return TR_OK;
}

/* How Dogwood names an action in messages: `Ns::id` (the namespace without
 * its `Action` segment), or the bare id. */
static const char *tc_action_ref(struct tc *c, const struct dw_action *a)
{
	struct dw_str ty = a->type;
	uint32_t k = sizeof "::Action" - 1;

	if (ty.n > k && memcmp(ty.p + ty.n - k, "::Action", k) == 0)
		return tc_fmt(c, "%.*s::%.*s", (int)(ty.n - k), ty.p, (int)a->id.n, a->id.p);
	return tc_fmt(c, "%.*s", (int)a->id.n, a->id.p);
}

static const struct dw_evdecl *tc_find_event(const struct dw_evschema *es,
					     const struct dw_tpred *p)
{
	return dw_evschema_find(es, p->ns, p->action, p->kind);
}

static bool tc_is_action_type(const struct tc *c, struct dw_str ty)
{
	uint32_t k = sizeof "Action" - 1;

	if (dw_schema_is_action_type(c->s, ty))
		return true;
	/* `Ns::Action` is reserved by Cedar: never a declared entity type */
	return ty.n >= k && memcmp(ty.p + ty.n - k, "Action", k) == 0 &&
	       (ty.n == k || (ty.n > k + 1 && ty.p[ty.n - k - 1] == ':'));
}

static const char *tc_known_types(struct tc *c)
{
	struct dw_buf b = { NULL, 0, 0 };
	const char *s;
	int r = 0;

	if (c->s->n_etypes == 0)
		return "the schema declares no entity types";
	r = dw_buf_printf(&b, "known entity types: ");
	for (uint32_t k = 0; k < c->s->n_etypes && r == 0; k++)
		r = dw_buf_printf(&b, "%s%.*s", k ? ", " : "", (int)c->s->etypes[k]->name.n,
				  c->s->etypes[k]->name.p);
	s = r == 0 ? dw_arena_strndup(&c->scratch, b.p, b.n) : NULL;
	dw_buf_free(&b);
	if (s == NULL)
		c->err = -ENOMEM;
	return s;
}

static struct tc_ty tc_entity_ty(struct dw_str name)
{
	struct tc_ty t = { .kind = TK_ENTITY };

	t.ent = name;
	return t;
}

static struct tc_ty tc_ty_of(struct tc *c, const struct dw_type *t)
{
	struct tc_ty r = { 0 };
	struct tc_ty *e;

	if (t == NULL)
		return r;
	switch (t->kind) {
	case DW_T_BOOL:
		r.kind = TK_BOOL;
		break;
	case DW_T_LONG:
		r.kind = TK_LONG;
		break;
	case DW_T_STRING:
		r.kind = TK_STRING;
		break;
	case DW_T_SET:
		r.kind = TK_SET;
		if (t->elem == NULL)
			break;
		if ((e = TC_NEWN(c, struct tc_ty, 1)) == NULL)
			return (struct tc_ty){ 0 };
		*e = tc_ty_of(c, t->elem);
		if (e->kind == TK_NONE)
			break;
		r.elem_state = TE_OF;
		r.elem = e;
		break;
	case DW_T_RECORD:
		r.kind = TK_RECORD;
		break;
	case DW_T_ENTITY:
		return tc_entity_ty(t->entity->name);
	case DW_T_EXT:
		/* decimal compares as decimal; the others are text in a trace */
		r.kind = t->ext == DW_EXT_DECIMAL ? TK_DECIMAL : TK_STRING;
		break;
	}
	return r;
}

static struct tc_ty tc_field_ty(struct tc *c, const struct dw_evfield *f)
{
	if (f->type != NULL)
		return tc_ty_of(c, f->type);
	if (f->n_etypes == 1)
		return tc_entity_ty(f->etypes[0]->name);
	if (f->n_etypes > 1)
		return tc_entity_ty(dw_str_make(NULL, 0));
	return (struct tc_ty){ 0 };
}

/* A binder's annotation as a type: TK_NONE when it names nothing known. */
static struct tc_ty tc_annot(struct tc *c, struct dw_str ty)
{
	struct tc_ty r = { 0 };

	if (dw_str_eq_c(ty, "Timepoint"))
		r.kind = TK_TIMEPOINT;
	else if (dw_str_eq_c(ty, "Long"))
		r.kind = TK_LONG;
	else if (dw_str_eq_c(ty, "String"))
		r.kind = TK_STRING;
	else if (dw_str_eq_c(ty, "Bool") || dw_str_eq_c(ty, "Boolean"))
		r.kind = TK_BOOL;
	else if (dw_str_eq_c(ty, "decimal") || dw_str_eq_c(ty, "Decimal"))
		r.kind = TK_DECIMAL;
	else if (ty.n != 0 && dw_schema_find_etype(c->s, ty) != NULL)
		r = tc_entity_ty(ty);
	return r;
}

static bool tc_ty_eq(const struct tc_ty *a, const struct tc_ty *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == TK_ENTITY)
		return dw_str_eq(a->ent, b->ent);
	if (a->kind == TK_SET) {
		if (a->elem_state != b->elem_state)
			return false;
		return a->elem_state != TE_OF || tc_ty_eq(a->elem, b->elem);
	}
	return true;
}

/* May a value of type got fill a field declared want?  Entity types must be
 * the same (no hierarchy is modelled), unless one side is some entity. */
static bool tc_accepts(const struct tc_ty *want, const struct tc_ty *got)
{
	if (tc_ty_eq(want, got))
		return true;
	if (want->kind == TK_ENTITY && got->kind == TK_ENTITY)
		return want->ent.n == 0 || got->ent.n == 0 || dw_str_eq(want->ent, got->ent);
	if (want->kind == TK_SET && got->kind == TK_SET) {
		if (want->elem_state == TE_UNKNOWN || got->elem_state == TE_UNKNOWN)
			return true;
		if (want->elem_state == TE_MIXED || got->elem_state == TE_MIXED)
			return false;
		return tc_accepts(want->elem, got->elem);
	}
	return false;
}

/* May `a == b` ever hold?  Any two entities may be compared. */
static bool tc_compatible(const struct tc_ty *a, const struct tc_ty *b)
{
	if (tc_ty_eq(a, b))
		return true;
	if (a->kind == TK_ENTITY && b->kind == TK_ENTITY)
		return true;
	if (a->kind == TK_SET && b->kind == TK_SET) {
		if (a->elem_state == TE_UNKNOWN || b->elem_state == TE_UNKNOWN)
			return true;
		if (a->elem_state == TE_MIXED || b->elem_state == TE_MIXED)
			return false;
		return tc_compatible(a->elem, b->elem);
	}
	return false;
}

/* The names Dogwood's messages use for types (`int`, `string`, …); an entity
 * type is shown qualified, so two namespaces' `Mode` are told apart. */
static int tc_ty_put(struct dw_buf *b, const struct tc_ty *t)
{
	static const char *const names[] = {
		[TK_NONE] = "unknown", [TK_LONG] = "int", [TK_STRING] = "string",
		[TK_BOOL] = "boolean", [TK_DECIMAL] = "decimal", [TK_TIMEPOINT] = "timepoint",
		[TK_RECORD] = "object",
	};
	int r;

	switch (t->kind) {
	case TK_SET:
		if (t->elem_state == TE_UNKNOWN)
			return dw_buf_printf(b, "array");
		if (t->elem_state == TE_MIXED)
			return dw_buf_printf(b, "mixed-type array");
		if ((r = dw_buf_printf(b, "array<")) != 0 || (r = tc_ty_put(b, t->elem)) != 0)
			return r;
		return dw_buf_putc(b, '>');
	case TK_ENTITY:
		if (t->ent.n == 0)
			return dw_buf_printf(b, "entity");
		return dw_buf_put(b, t->ent.p, t->ent.n);
	default:
		return dw_buf_printf(b, "%s", names[t->kind]);
	}
}

static const char *tc_ty_str(struct tc *c, const struct tc_ty *t)
{
	struct dw_buf b = { NULL, 0, 0 };
	const char *s = NULL;

	if (tc_ty_put(&b, t) == 0)
		s = dw_arena_strndup(&c->scratch, b.p ? b.p : "", b.n);
	dw_buf_free(&b);
	if (s == NULL)
		c->err = -ENOMEM;
	return s;
}

/* --- 5. dw_tcheck_validate --------------------------------------------------------- */

/* A pre-order walk over every node, term and typed binder of a leaf (inside
 * negations and aggregate bodies too), in source order. */
struct tc_visit {
	int (*node)(struct tc *c, const struct dw_tnode *n);
	int (*term)(struct tc *c, const struct dw_tterm *t);
	int (*binder)(struct tc *c, const struct dw_tbinder *b);
};

static int tc_visit_node(struct tc *c, const struct dw_tnode *n, const struct tc_visit *v);

static int tc_visit_binder(struct tc *c, const struct dw_tbinder *b, const struct tc_visit *v)
{
	return v->binder != NULL && b->sigil == 0 && b->type.n != 0 ? v->binder(c, b) : 0;
}

static int tc_visit_term(struct tc *c, const struct dw_tterm *t, const struct tc_visit *v)
{
	int r;

	if (v->term != NULL && (r = v->term(c, t)) != 0)
		return r;
	if (t->kind == DW_TT_ARRAY) {
		for (uint32_t k = 0; k < t->n_items; k++)
			if ((r = tc_visit_term(c, &t->items[k], v)) != 0)
				return r;
	} else if (t->kind == DW_TT_AGG) {
		for (uint32_t k = 0; k < t->agg->n_for; k++)
			if ((r = tc_visit_binder(c, &t->agg->for_binders[k], v)) != 0)
				return r;
		return tc_visit_node(c, t->agg->where, v);
	}
	return 0;
}

static int tc_visit_node(struct tc *c, const struct dw_tnode *n, const struct tc_visit *v)
{
	const struct dw_tnode **cv;
	uint32_t k;
	int r;

	while (n != NULL) {
		if (n->kind == DW_TN_AND) {
			if ((cv = tc_conjuncts(c, n, &k)) == NULL)
				return -ENOMEM;
			for (uint32_t i = 0; i < k; i++)
				if ((r = tc_visit_node(c, cv[i], v)) != 0)
					return r;
			return 0;
		}
		if (v->node != NULL && (r = v->node(c, n)) != 0)
			return r;
		switch (n->kind) {
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			if ((r = tc_visit_node(c, n->a, v)) != 0)
				return r;
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if ((r = tc_visit_binder(c, &n->binder, v)) != 0)
				return r;
			n = n->a;
			continue;
		case DW_TN_CMP:
			if ((r = tc_visit_term(c, n->lhs, v)) != 0)
				return r;
			return tc_visit_term(c, n->rhs, v);
		case DW_TN_PRED:
			for (uint32_t i = 0; i < n->pred->n_fields; i++)
				if ((r = tc_visit_term(c, &n->pred->fields[i].term, v)) != 0)
					return r;
			return 0;
		default:
			return 0;
		}
	}
	return 0;
}

/* 1. Entity literals name declared entity types (action references are
 * skipped; an enum type admits only its ids), and so do binder types. */
static int tc_v_entity(struct tc *c, const struct dw_tterm *t)
{
	const struct dw_etype *et;
	struct dw_buf b = { NULL, 0, 0 };
	const char *known, *ids;
	int r = 0;

	if (t->kind != DW_TT_ENTITY || tc_is_action_type(c, t->path))
		return 0;
	if ((et = dw_schema_find_etype(c->s, t->path)) == NULL) {
		if ((known = tc_known_types(c)) == NULL)
			return -ENOMEM;
		return tc_report(c, t->off, t->end, "unknown entity type `%.*s`; %s",
				 (int)t->path.n, t->path.p, known);
	}
	if (!et->is_enum)
		return 0;
	for (uint32_t k = 0; k < et->n_enum; k++)
		if (dw_str_eq(et->enum_ids[k], t->str))
			return 0;
	for (uint32_t k = 0; k < et->n_enum && r == 0; k++)
		r = dw_buf_printf(&b, "%s\"%.*s\"", k ? ", " : "", (int)et->enum_ids[k].n,
				  et->enum_ids[k].p);
	ids = r == 0 ? dw_arena_strndup(&c->scratch, b.p ? b.p : "", b.n) : NULL;
	dw_buf_free(&b);
	if (ids == NULL)
		return c->err = -ENOMEM;
	return tc_report(c, t->off, t->end, "`%.*s` is an enum entity type; `\"%.*s\"` is not one "
			 "of its permitted ids (%s)", (int)t->path.n, t->path.p, (int)t->str.n,
			 t->str.p, et->n_enum ? ids : "(none)");
}

static int tc_v_binder_type(struct tc *c, const struct dw_tbinder *b)
{
	const char *known;

	if (tc_annot(c, b->type).kind != TK_NONE)
		return 0;
	if ((known = tc_known_types(c)) == NULL)
		return -ENOMEM;
	return tc_report(c, b->off, b->end, "binder `%.*s` is declared with unknown type `%.*s`; "
			 "a binder type is `Timepoint`, `Long`, `String`, `Bool`, `decimal` or a "
			 "declared entity type (%s)", (int)b->name.n, b->name.p, (int)b->type.n,
			 b->type.p, known);
}

/* 2. `context.<path>` resolves in the context of every action the rule's
 * scope pins; reported once, for the first action it fails on. */
static int tc_v_context(struct tc *c, const struct dw_tterm *t)
{
	const struct dw_type *ty;
	struct dw_str seg;
	const char *ref;

	if (t->kind != DW_TT_CONTEXT)
		return 0;
	for (uint32_t i = 0; i < c->n_targets; i++) {
		const struct dw_action *a = c->targets[i];
		enum tc_res res = tc_resolve(a->context, t->path, &ty, &seg);

		if (res == TR_OK)
			continue;
		if ((ref = tc_action_ref(c, a)) == NULL)
			return -ENOMEM;
		if (res == TR_HEAD)
			return tc_report(c, t->off, t->end, "action `%s` has no context field "
					 "`%.*s` for `context.%.*s`",
					 ref, (int)seg.n, seg.p, (int)t->path.n,
					 t->path.p);
		if (res == TR_NESTED)
			return tc_report(c, t->off, t->end, "record has no field `%.*s` in "
					 "`context.%.*s` path (action `%s`)", (int)seg.n, seg.p,
					 (int)t->path.n, t->path.p, ref);
		return tc_report(c, t->off, t->end, "`%.*s` accesses a field of a non-record type "
				 "in `context.%.*s` (action `%s`)",
				 (int)seg.n, seg.p, (int)t->path.n,
				 t->path.p, ref);
	}
	return 0;
}

/* 3. A predicate names a derived event, and mentions only its leaf fields. */
static int tc_v_names(struct tc *c, const struct dw_tnode *n)
{
	const struct dw_tpred *p;
	const struct dw_evdecl *d;

	if (n->kind != DW_TN_PRED || n->pred->param.n != 0)
		return 0;
	p = n->pred;
	if ((d = tc_find_event(c->es, p)) == NULL)
		return tc_report(c, n->off, n->end, "predicate `%.*s::\"%.*s\"::%.*s` does not "
				 "name a declared event (no event kind `%.*s` derived for action "
				 "`%.*s`)", (int)p->ns.n, p->ns.p, (int)p->action.n, p->action.p,
				 (int)p->kind.n, p->kind.p, (int)p->kind.n, p->kind.p,
				 (int)p->action.n, p->action.p);
	for (uint32_t k = 0; k < p->n_fields; k++) {
		const struct dw_tfield *f = &p->fields[k];
		struct dw_buf b = { NULL, 0, 0 };
		const char *list;
		int r = 0;

		if (dw_evdecl_field(d, f->path) != NULL)
			continue;
		if (dw_evdecl_is_group(d, f->path))
			return tc_report(c, f->off, f->end, "predicate `%.*s::\"%.*s\"::%.*s` "
					 "mentions `%.*s`, which is a field group, not a field; "
					 "address a field inside it (e.g. `%.*s.<field>`)",
					 (int)p->ns.n, p->ns.p, (int)p->action.n, p->action.p,
					 (int)p->kind.n, p->kind.p, (int)f->path.n, f->path.p,
					 (int)f->path.n, f->path.p);
		for (uint32_t i = 0; i < d->n_fields && r == 0; i++)
			r = dw_buf_printf(&b, "%s%.*s", i ? ", " : "", (int)d->fields[i].path.n,
					  d->fields[i].path.p);
		list = r == 0 ? dw_arena_strndup(&c->scratch, b.p ? b.p : "", b.n) : NULL;
		dw_buf_free(&b);
		if (list == NULL)
			return c->err = -ENOMEM;
		return tc_report(c, f->off, f->end, "predicate `%.*s::\"%.*s\"::%.*s` mentions "
				 "field `%.*s`, which is not declared on that event (declared "
				 "fields: %s)", (int)p->ns.n, p->ns.p, (int)p->action.n,
				 p->action.p, (int)p->kind.n, p->kind.p, (int)f->path.n, f->path.p,
				 list);
	}
	return 0;
}

/* 4. tp-dependence (acceptance rule 7).  env holds the variables that vary with the
 * timepoint: predicate arguments bound rule-wide (not under a negation, not
 * only in an aggregate's domain), exists binders in scope, a sum's summand. */
static int tc_tp_env(struct tc *c, const struct dw_tnode *n, struct tc_set *env)
{
	int r;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
		case DW_TN_SINCE:
			if ((r = tc_tp_env(c, n->b, env)) != 0)
				return r;
			n = n->a;
			continue;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
		case DW_TN_EXISTS:
			n = n->a;
			continue;
		case DW_TN_PRED:
			for (uint32_t k = 0; k < n->pred->n_fields; k++) {
				const struct dw_tfield *f = &n->pred->fields[k];
				if (!f->like && f->term.kind == DW_TT_VAR &&
				    (r = tc_set_add(c, env, f->term.str)) != 0)
					return r;
			}
			return 0;
		default:
			return 0;    /* negations and comparisons bind nothing rule-wide */
		}
	}
	return 0;
}

/* The variables that vary with the timepoint: those bound rule-wide, and
 * the exists binders and sum summands in scope. */
struct tc_tpenv {
	struct tc_set wide;
	struct tc_stack scope;
};

static bool tc_term_tpdep(const struct dw_tterm *t, const struct tc_tpenv *env)
{
	switch (t->kind) {
	case DW_TT_VAR:
		return tc_set_has(&env->wide, t->str) || tc_lookup(&env->scope, t->str) != NULL;
	case DW_TT_ARRAY:
		for (uint32_t k = 0; k < t->n_items; k++)
			if (tc_term_tpdep(&t->items[k], env))
				return true;
		return false;
	case DW_TT_AGG:
	case DW_TT_CALL:
		return true;         /* computed over the trace up to the timepoint */
	case DW_TT_PARAM:
	case DW_TT_BINDER:
		return true;         /* not expanded: not judged */
	default:
		return false;        /* literals, context and scope: fixed per request */
	}
}

static int tc_tpdep(struct tc *c, const struct dw_tnode *n, struct tc_tpenv *env, bool *dep);

static int tc_degenerate(struct tc *c, const struct dw_tnode *n, struct tc_tpenv *env,
			 const char *what)
{
	bool dep = false;
	int r;

	if ((r = tc_tpdep(c, n, env, &dep)) != 0 || dep)
		return r;
	return tc_report(c, n->off, n->end, "%s does not vary with the current timepoint; it "
			 "monitors nothing", what);
}

static int tc_tpdep_agg(struct tc *c, const struct dw_tagg *g, struct tc_tpenv *env)
{
	uint32_t depth = env->scope.n;
	int r;

	if (g->is_sum && g->summand.sigil == 0 &&
	    (r = tc_push(c, &env->scope, g->summand.name, (struct tc_ty){ 0 })) != 0)
		return r;
	r = tc_degenerate(c, g->where, env, "the `where` body of the aggregation");
	env->scope.n = depth;
	return r;
}

/* *dep: does n vary with the timepoint?  Degenerate monitoring scopes inside
 * n are reported on the way. */
static int tc_tpdep(struct tc *c, const struct dw_tnode *n, struct tc_tpenv *env, bool *dep)
{
	const struct dw_tnode **v;
	uint32_t k, depth;
	bool any, d;
	int r;

	while (n != NULL && n->kind == DW_TN_NOT)
		n = n->a;            /* `!a` varies iff a does */
	*dep = true;
	if (n == NULL)
		return 0;
	switch (n->kind) {
	case DW_TN_AND:
		if ((v = tc_conjuncts(c, n, &k)) == NULL)
			return -ENOMEM;
		any = false;
		for (uint32_t i = 0; i < k; i++) {
			if ((r = tc_tpdep(c, v[i], env, &d)) != 0)
				return r;
			any = any || d;
		}
		*dep = any;
		return 0;
	case DW_TN_CMP:
		for (int side = 0; side < 2; side++) {
			const struct dw_tterm *t = side == 0 ? n->lhs : n->rhs;
			if (t->kind == DW_TT_AGG && (r = tc_tpdep_agg(c, t->agg, env)) != 0)
				return r;
		}
		*dep = tc_term_tpdep(n->lhs, env) || tc_term_tpdep(n->rhs, env);
		return 0;
	case DW_TN_FORMERLY:
	case DW_TN_PREVIOUS:
		return tc_degenerate(c, n->a, env, "this temporal operator's body");
	case DW_TN_SINCE:
		if ((r = tc_degenerate(c, n->a, env, "the left side of `since`")) != 0)
			return r;
		return tc_degenerate(c, n->b, env, "the right side of `since`");
	case DW_TN_EXISTS:
		depth = env->scope.n;
		if (n->binder.sigil == 0 &&
		    (r = tc_push(c, &env->scope, n->binder.name, (struct tc_ty){ 0 })) != 0)
			return r;
		r = tc_degenerate(c, n->a, env, "the body of the `exists`");
		env->scope.n = depth;
		return r;
	default:
		return 0;            /* predicates, tp, unexpanded calls */
	}
}

static int tc_v_tpdep(struct tc *c)
{
	const struct dw_tnode **v;
	struct tc_tpenv env;
	uint32_t k;
	bool dep;
	int r;

	memset(&env, 0, sizeof env);
	if ((r = tc_tp_env(c, c->leaf->cond, &env.wide)) != 0)
		return r;
	if ((v = tc_conjuncts(c, c->leaf->cond, &k)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < k; i++) {
		if ((r = tc_tpdep(c, v[i], &env, &dep)) != 0)
			return r;
		if (!dep && (r = tc_report(c, v[i]->off, v[i]->end, "this `when`/`unless` "
					   "conjunct does not vary with the current timepoint; it "
					   "monitors nothing")) != 0)
			return r;
	}
	return 0;
}

/* 5. Types.  Variables have their binders' declared types; a binder whose
 * type names nothing known (reported in step 1) takes the type of the first
 * predicate field that binds it. */
static struct tc_ty tc_term_ty(struct tc *c, const struct dw_tterm *t, const struct tc_stack *env);

static struct tc_ty tc_scope_ty(struct tc *c, uint8_t root)
{
	const struct dw_scope *sc = root == 'p' ? &c->pol->principal : &c->pol->resource;
	const struct dw_action *a = c->act;
	uint32_t n;

	if (sc->kind == DW_SC_IS || sc->kind == DW_SC_IS_IN)
		return tc_entity_ty(sc->type);
	if (sc->kind == DW_SC_EQ && !sc->slot && sc->uid != NULL)
		return tc_entity_ty(sc->uid->type);
	n = a == NULL ? 0 : root == 'p' ? a->n_principals : a->n_resources;
	if (n == 1)
		return tc_entity_ty((root == 'p' ? a->principals : a->resources)[0]->name);
	return tc_entity_ty(dw_str_make(NULL, 0));
}

static struct tc_ty tc_array_ty(struct tc *c, const struct dw_tterm *t, const struct tc_stack *env)
{
	struct tc_ty r = { .kind = TK_SET }, first = { 0 }, e;
	struct tc_ty *elem;

	if (t->n_items == 0)
		return r;
	for (uint32_t k = 0; k < t->n_items; k++) {
		e = tc_term_ty(c, &t->items[k], env);
		if (e.kind == TK_NONE)
			return (struct tc_ty){ 0 };    /* not known: not checked */
		if (k == 0)
			first = e;
		else if (!tc_ty_eq(&first, &e))
			r.elem_state = TE_MIXED;
	}
	if (r.elem_state == TE_MIXED)
		return r;
	if ((elem = TC_NEWN(c, struct tc_ty, 1)) == NULL)
		return (struct tc_ty){ 0 };
	*elem = first;
	r.elem_state = TE_OF;
	r.elem = elem;
	return r;
}

static struct tc_ty tc_term_ty(struct tc *c, const struct dw_tterm *t, const struct tc_stack *env)
{
	const struct tc_bind *b;
	const struct dw_type *ty;
	struct dw_str seg;
	struct tc_ty r = { 0 };

	switch (t->kind) {
	case DW_TT_INT:
	case DW_TT_AGG:
		r.kind = TK_LONG;
		return r;
	case DW_TT_DECIMAL:
		r.kind = TK_DECIMAL;
		return r;
	case DW_TT_STR:
		r.kind = TK_STRING;
		return r;
	case DW_TT_BOOL:
		r.kind = TK_BOOL;
		return r;
	case DW_TT_ENTITY:
		/* an undeclared type is step 1's finding, not a mismatch too */
		if (!tc_is_action_type(c, t->path) && dw_schema_find_etype(c->s, t->path) == NULL)
			return r;
		return tc_entity_ty(t->path);
	case DW_TT_CONTEXT:
		if (c->act != NULL && tc_resolve(c->act->context, t->path, &ty, &seg) == TR_OK)
			return tc_ty_of(c, ty);
		return r;
	case DW_TT_SCOPE:
		return t->path.n == 0 ? tc_scope_ty(c, t->root) : r;   /* tails: unchecked */
	case DW_TT_VAR:
		return (b = tc_lookup(env, t->str)) != NULL ? b->ty : r;
	case DW_TT_ARRAY:
		return tc_array_ty(c, t, env);
	default:
		return r;            /* wildcards, unexpanded sigils */
	}
}

/* The type of the first predicate field binding x in n (positive positions). */
static struct tc_ty tc_bound_by_field(struct tc *c, const struct dw_tnode *n, struct dw_str x)
{
	const struct dw_evdecl *d;
	const struct dw_evfield *f;
	struct tc_ty t;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
		case DW_TN_SINCE:
			/* the right side recursively, the left spine as a loop */
			if ((t = tc_bound_by_field(c, n->b, x)).kind != TK_NONE)
				return t;
			n = n->a;
			continue;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil == 0 && dw_str_eq(n->binder.name, x))
				return (struct tc_ty){ 0 };
			n = n->a;
			continue;
		case DW_TN_PRED:
			if (n->pred->param.n != 0 || (d = tc_find_event(c->es, n->pred)) == NULL)
				return (struct tc_ty){ 0 };
			for (uint32_t k = 0; k < n->pred->n_fields; k++) {
				const struct dw_tfield *fl = &n->pred->fields[k];
				if (!fl->like && fl->term.kind == DW_TT_VAR &&
				    dw_str_eq(fl->term.str, x) &&
				    (f = dw_evdecl_field(d, fl->path)) != NULL)
					return tc_field_ty(c, f);
			}
			return (struct tc_ty){ 0 };
		default:
			return (struct tc_ty){ 0 };
		}
	}
	return (struct tc_ty){ 0 };
}

static int tc_bind_push(struct tc *c, struct tc_stack *env, const struct dw_tbinder *b,
			const struct dw_tnode *scope)
{
	struct tc_ty t = tc_annot(c, b->type);

	if (t.kind == TK_NONE)
		t = tc_bound_by_field(c, scope, b->name);
	return tc_push(c, env, b->name, t);
}

static int tc_types_node(struct tc *c, const struct dw_tnode *n, struct tc_stack *env);

static int tc_types_agg(struct tc *c, const struct dw_tagg *g, struct tc_stack *env)
{
	uint32_t depth = env->n;
	int r = 0;

	for (uint32_t k = 0; k < g->n_for && r == 0; k++)
		if (g->for_binders[k].sigil == 0)
			r = tc_bind_push(c, env, &g->for_binders[k], g->where);
	if (r == 0 && g->is_sum && g->summand.sigil == 0) {
		const struct tc_bind *b = tc_lookup(env, g->summand.name);
		const struct dw_tbinder *decl = NULL;
		struct dw_str s = g->summand.name;

		for (uint32_t k = 0; k < g->n_for; k++)
			if (dw_str_eq(g->for_binders[k].name, s))
				decl = &g->for_binders[k];
		if (b == NULL || b->ty.kind == TK_NONE || b->ty.kind == TK_LONG || decl == NULL)
			;            /* summand not in the `for` list: acceptance says so */
		else if (b->ty.kind == TK_TIMEPOINT)
			r = tc_report(c, g->summand.off, g->summand.end, "cannot sum `%.*s`: sum "
				      "requires a `Long` summand, but `%.*s` is `Timepoint`. "
				      "Timepoints are ordinal positions, not quantities — use a "
				      "Timepoint in the `for (…)` binders to keep per-timepoint "
				      "rows, not as the value being summed.",
				      (int)s.n, s.p, (int)s.n, s.p);
		else if (b->ty.kind == TK_DECIMAL)
			r = tc_report(c, g->summand.off, g->summand.end, "cannot sum `%.*s`: sum "
				      "requires a `Long` summand, but `%.*s` is `Decimal`. "
				      "Dogwood arithmetic operates only on `Long` values, not "
				      "decimals.",
				      (int)s.n, s.p, (int)s.n, s.p);
		else
			r = tc_report(c, g->summand.off, g->summand.end, "cannot sum `%.*s`: sum "
				      "requires a `Long` summand, but `%.*s` is `%.*s`.",
				      (int)s.n, s.p,
				      (int)s.n, s.p, (int)decl->type.n, decl->type.p);
	}
	if (r == 0)
		r = tc_types_node(c, g->where, env);
	env->n = depth;
	return r;
}

static int tc_types_pred(struct tc *c, const struct dw_tnode *n, const struct tc_stack *env)
{
	const struct dw_tpred *p = n->pred;
	const struct dw_evdecl *d;
	const struct dw_evfield *f;
	const char *ws, *gs;
	struct tc_ty want, got;
	int r;

	if (p->param.n != 0 || (d = tc_find_event(c->es, p)) == NULL)
		return 0;            /* reported by the names step */
	for (uint32_t k = 0; k < p->n_fields; k++) {
		const struct dw_tfield *fl = &p->fields[k];

		if ((f = dw_evdecl_field(d, fl->path)) == NULL)
			continue;
		want = tc_field_ty(c, f);
		if (fl->like) {
			/* `like` matches text: only a Cedar String field holds it */
			if (f->type != NULL && f->type->kind == DW_T_STRING)
				continue;
			if ((ws = tc_ty_str(c, &want)) == NULL)
				return -ENOMEM;
			if ((r = tc_report(c, fl->off, fl->end, "`like` applies only to String "
					   "fields, but `%.*s` of `%.*s` is `%s`",
					   (int)fl->path.n, fl->path.p,
					   (int)p->action.n, p->action.p, ws)) != 0)
				return r;
			continue;
		}
		got = tc_term_ty(c, &fl->term, env);
		if (c->err != 0)
			return c->err;
		if (want.kind == TK_NONE || got.kind == TK_NONE || tc_accepts(&want, &got))
			continue;
		if ((ws = tc_ty_str(c, &want)) == NULL || (gs = tc_ty_str(c, &got)) == NULL)
			return -ENOMEM;
		if ((r = tc_report(c, fl->off, fl->end, "argument `%.*s` of `%.*s` expects `%s` "
				   "but got `%s`", (int)fl->path.n, fl->path.p, (int)p->action.n,
				   p->action.p, ws, gs)) != 0)
			return r;
	}
	return 0;
}

static int tc_types_cmp(struct tc *c, const struct dw_tnode *n, struct tc_stack *env)
{
	struct tc_ty l = tc_term_ty(c, n->lhs, env), rt = tc_term_ty(c, n->rhs, env);
	bool ordering = n->cmp != DW_TC_EQ && n->cmp != DW_TC_NE;
	const char *ls, *rs;
	int r = 0;

	if (c->err != 0)
		return c->err;
	if (l.kind != TK_NONE && rt.kind != TK_NONE &&
	    (ordering ? l.kind != TK_LONG || rt.kind != TK_LONG : !tc_compatible(&l, &rt))) {
		if ((ls = tc_ty_str(c, &l)) == NULL || (rs = tc_ty_str(c, &rt)) == NULL)
			return -ENOMEM;
		if (ordering)
			r = tc_report(c, n->off, n->end, "comparison requires numeric operands on "
				      "both sides, got `%s` and `%s`", ls, rs);
		else
			r = tc_report(c, n->off, n->end, "equality requires both sides to have "
				      "the same type, got `%s` and `%s`", ls, rs);
		if (r != 0)
			return r;
	}
	for (int side = 0; side < 2; side++) {
		const struct dw_tterm *t = side == 0 ? n->lhs : n->rhs;
		if (t->kind == DW_TT_AGG && (r = tc_types_agg(c, t->agg, env)) != 0)
			return r;
	}
	return 0;
}

static int tc_types_node(struct tc *c, const struct dw_tnode *n, struct tc_stack *env)
{
	const struct dw_tnode **v;
	const struct tc_bind *b;
	const char *ts;
	uint32_t k, depth;
	int r;

	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			if ((v = tc_conjuncts(c, n, &k)) == NULL)
				return -ENOMEM;
			for (uint32_t i = 0; i < k; i++)
				if ((r = tc_types_node(c, v[i], env)) != 0)
					return r;
			return 0;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			if ((r = tc_types_node(c, n->a, env)) != 0)
				return r;
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			if (n->binder.sigil != 0) {
				n = n->a;
				continue;
			}
			depth = env->n;
			if ((r = tc_bind_push(c, env, &n->binder, n->a)) != 0)
				return r;
			r = tc_types_node(c, n->a, env);
			env->n = depth;
			return r;
		case DW_TN_TP:
			/* tp(x) binds x to a timepoint: any other declaration makes
			 * every use of x against data a comparison that never holds */
			if (n->binder.sigil != 0 || (b = tc_lookup(env, n->binder.name)) == NULL ||
			    b->ty.kind == TK_NONE || b->ty.kind == TK_TIMEPOINT)
				return 0;
			if ((ts = tc_ty_str(c, &b->ty)) == NULL)
				return -ENOMEM;
			return tc_report(c, n->off, n->end, "`tp(%.*s)` binds `%.*s` to the "
					 "current timepoint, but `%.*s` is declared `%s`; a `tp` "
					 "variable must be declared `Timepoint`",
					 (int)n->binder.name.n, n->binder.name.p,
					 (int)n->binder.name.n, n->binder.name.p,
					 (int)n->binder.name.n, n->binder.name.p, ts);
		case DW_TN_CMP:
			return tc_types_cmp(c, n, env);
		case DW_TN_PRED:
			return tc_types_pred(c, n, env);
		default:
			return 0;
		}
	}
	return 0;
}

/* The type pass runs once per action the rule pins (a `context.*` term may
 * have a different type on each); findings are said once (c->dedup). */
static int tc_v_types(struct tc *c)
{
	struct tc_stack env = { NULL, 0, 0 };
	uint32_t n = c->scoped && c->n_targets > 0 ? c->n_targets : 1;
	int r = 0;

	for (uint32_t i = 0; i < n && r == 0; i++) {
		c->act = c->scoped && c->n_targets > 0 ? c->targets[i] : NULL;
		env.n = 0;
		r = tc_types_node(c, c->leaf->cond, &env);
	}
	c->act = NULL;
	return r;
}

/* 6. Every window is at most the event schema's cap (docs/formats.md §3). */
static void tc_cap_str(int64_t s, char *buf, size_t n)
{
	/* the cap as Box prints it: the default day is `24h`, a whole number of
	 * days beyond that `Nd`, else the largest unit that divides it */
	if (s % 86400 == 0 && s / 86400 >= 2)
		snprintf(buf, n, "%" PRId64 "d", s / 86400);
	else if (s % 3600 == 0)
		snprintf(buf, n, "%" PRId64 "h", s / 3600);
	else if (s % 60 == 0)
		snprintf(buf, n, "%" PRId64 "m", s / 60);
	else
		snprintf(buf, n, "%" PRId64 "s", s);
}

/* Does the leaf's source hold word at off? */
static bool tc_text_at(const struct tc *c, uint32_t off, const char *word)
{
	const struct dw_source *src = c->leaf->src_index < c->ps->n_sources
				      ? &c->ps->sources[c->leaf->src_index] : NULL;
	size_t n = strlen(word);

	return src != NULL && off <= src->len && src->len - off >= n &&
	       memcmp(src->text + off, word, n) == 0;
}

static int tc_v_window(struct tc *c, const struct dw_tnode *n)
{
	const struct dw_window *w = &n->window;
	int64_t cap = c->es->max_window_s > 0 ? c->es->max_window_s : DW_DEFAULT_MAX_WINDOW_S;
	uint32_t off = w->off;
	char cs[32];

	if ((n->kind != DW_TN_FORMERLY && n->kind != DW_TN_PREVIOUS && n->kind != DW_TN_SINCE) ||
	    w->is_param || w->seconds <= cap)
		return 0;
	tc_cap_str(cap, cs, sizeof cs);
	/* At the operator when it is written there (`formerly within 48h`); a
	 * node expanded from a macro spans the call, while a window passed as an
	 * argument keeps its own span (`25h`): point at that.  `since` is found
	 * by its window. */
	if (n->kind != DW_TN_SINCE && n->off <= w->off &&
	    tc_text_at(c, n->off, n->kind == DW_TN_FORMERLY ? "formerly" : "previous"))
		off = n->off;
	else if (w->off > w->end)
		off = n->off;
	/* Dogwood's whole sentence, which Box shows under its own prefix */
	return tc_report(c, off, w->end, "temporal window `%" PRId64 "%c` exceeds the maximum "
			 "allowed window `%s` set by the event schema's `max_window`; shorten "
			 "this window to at most `%s`, or raise `max_window` in the event schema",
			 w->amount, w->unit, cs, cs);
}

static int tc_validate_leaf(struct tc *c)
{
	static const struct tc_visit entity = { NULL, tc_v_entity, tc_v_binder_type };
	static const struct tc_visit context = { NULL, tc_v_context, NULL };
	static const struct tc_visit names = { tc_v_names, NULL, NULL };
	static const struct tc_visit windows = { tc_v_window, NULL, NULL };
	const struct dw_tnode *root = c->leaf->cond;
	int r;

	if ((r = tc_visit_node(c, root, &entity)) != 0)
		return r;
	if (c->scoped && (r = tc_visit_node(c, root, &context)) != 0)
		return r;
	if ((r = tc_visit_node(c, root, &names)) != 0 || (r = tc_v_tpdep(c)) != 0 ||
	    (r = tc_v_types(c)) != 0)
		return r;
	return tc_visit_node(c, root, &windows);
}

int dw_tcheck_validate(const struct dw_policy_set *ps, const struct dw_schema *actions,
		       const struct dw_evschema *events, struct dw_diags *diags)
{
	struct tc c;

	if (actions == NULL || events == NULL)
		return -EINVAL;
	memset(&c, 0, sizeof c);
	c.ps = ps;
	c.diags = diags;
	c.s = actions;
	c.es = events;
	c.prep = tc_prep_rule;
	/* expansion shares an argument between its uses: its findings would
	 * otherwise repeat at the same place */
	c.dedup = true;
	return tc_run(&c, tc_validate_leaf);
}
