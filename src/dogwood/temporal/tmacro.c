/* tmacro.c - expansion of `def temporal` macro calls (tmacro.h).
 *
 * Divisions:
 *   1. state, sizes, diagnostics, small helpers
 *   2. how a body uses its parameters (and the calls a body may not make)
 *   3. the tree walk: a rule's tree in place, a macro body by copy
 *   4. calls: callee, argument shapes, expansion
 *   5. entry points
 *
 * One walk serves both trees.  Over a rule's own tree (frame NULL) it
 * rewrites in place, replacing a child pointer where a call was expanded.
 * Over a macro body (frame set) it copies: a body is shared by every call of
 * its macro and is never written; each copied node takes the call site's span
 * and each parameter is replaced by its argument (AST substitution, so the
 * argument keeps its own precedence: `once(1h, A && B)` is
 * `formerly within 1h (A && B)`).  Macros cannot call macros, so a body holds
 * no call and an expansion is one level deep; calls nested in arguments are
 * expanded first, as arguments.
 *
 * Recursion follows nesting, which the parser bounds.  The left spine of an
 * `&&` chain and a run of `!` are not bounded (the parser builds them with
 * loops), so they are walked with an explicit stack. */
#include "tmacro.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temporal.h"

/* --- 1. state, sizes, diagnostics --------------------------------------------------- */

/* The size of an expanded tree: nodes (dw_tnode and dw_tterm; a shared
 * argument counted at each use, as every later walk will visit it) and
 * nesting (see DW_TMACRO_MAX_NEST). */
struct dw_tm_size {
	uint64_t nodes;
	uint32_t nest;
};

/* `$t` of a body and the name it gets in one expansion. */
struct dw_tm_fresh {
	struct dw_str from, to;
	struct dw_tm_fresh *next;
};

/* One expansion in progress: a macro, its call site and its arguments. */
struct dw_tm_frame {
	const struct dw_macro *m;
	struct dw_targ *args;          /* expanded; each in the shape its parameter's use asks */
	struct dw_tm_size *arg_size;
	uint32_t off, end;             /* the call site, in the rule's source */
	struct dw_tm_fresh *fresh;     /* made at first use */
};

/* The expansion of one rule. */
struct dw_tm {
	struct dw_policy_set *ps;
	struct dw_diags *diags;
	const struct dw_policy *pol;
	uint16_t src;                  /* source of the leaf being expanded */
	uint32_t n_calls;              /* calls expanded in that leaf */
	struct dw_tnode **spine;       /* `&&`/`!` spines being rebuilt (malloc) */
	size_t n_spine, cap_spine;
	const void **seen;             /* leaves done, open addressing (malloc) */
	size_t n_seen, cap_seen;
	int err;                       /* the first failure */
};

static uint64_t dw_tm_add(uint64_t a, uint64_t b)
{
	uint64_t s;

	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

static uint32_t dw_tm_deeper(uint32_t nest)
{
	return nest == UINT32_MAX ? nest : nest + 1;
}

static uint32_t dw_tm_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Record the first failure as a diagnostic about [off, end) of the leaf's
 * source, marked with the rule.  Later failures are consequences of it. */
__attribute__((format(printf, 4, 5)))
static void dw_tm_fail(struct dw_tm *x, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n, r;

	if (x->err != 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (msg = malloc((size_t)n + 1)) == NULL) {
		x->err = -ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r = dw_policy_set_diag(x->ps, x->diags, DW_SEV_ERROR, x->src, off, end, "%s", msg);
	free(msg);
	if (r != 0) {
		x->err = r;
		return;
	}
	dw_diags_set_policy(x->diags, x->pol->index);
	x->err = -EINVAL;
}

static void dw_tm_oom(struct dw_tm *x)
{
	if (x->err == 0)
		x->err = -ENOMEM;
}

/* A tree that the parser and this file never make (a sigil outside a body, a
 * call inside one): refuse it rather than leave it for the evaluator. */
static void dw_tm_internal(struct dw_tm *x, uint32_t off, uint32_t end, const char *what)
{
	dw_tm_fail(x, off, end, "internal error in macro expansion: %s", what);
}

/* Index of parameter name in m, or -1. */
static int dw_tm_param(const struct dw_macro *m, struct dw_str name)
{
	for (uint32_t i = 0; i < m->n_params; i++)
		if (dw_str_eq(m->params[i], name))
			return (int)i;
	return -1;
}

/* The argument standing for ?name in frame f; NULL (after a diagnostic) when
 * name is not a parameter, which the parser's sigil check excludes. */
static const struct dw_targ *dw_tm_arg(struct dw_tm *x, const struct dw_tm_frame *f,
				       struct dw_str name, const struct dw_tm_size **size)
{
	int i = dw_tm_param(f->m, name);

	if (i < 0) {
		dw_tm_internal(x, f->off, f->end, "a body names an undeclared parameter");
		return NULL;
	}
	if (size != NULL)
		*size = &f->arg_size[i];
	return &f->args[i];
}

/* `$t` -> `t$<call site offset>`: `$` cannot occur in a name a user writes,
 * and two call sites have two offsets, so neither an argument nor another
 * expansion can capture the binder. */
static bool dw_tm_fresh(struct dw_tm *x, struct dw_tm_frame *f, struct dw_str name,
			struct dw_str *out)
{
	struct dw_tm_fresh *e;
	char *s;

	for (e = f->fresh; e != NULL; e = e->next) {
		if (dw_str_eq(e->from, name)) {
			*out = e->to;
			return true;
		}
	}
	e = DW_NEW(&x->ps->arena, struct dw_tm_fresh);
	s = dw_arena_printf(&x->ps->arena, "%.*s$%u", (int)name.n, name.p, (unsigned)f->off);
	if (e == NULL || s == NULL) {
		dw_tm_oom(x);
		return false;
	}
	e->from = name;
	e->to = dw_str_c(s);
	e->next = f->fresh;
	f->fresh = e;
	*out = e->to;
	return true;
}

/* Leaves are shared: pol->cond folds the conditions' bodies, and a `def cedar`
 * macro shares its arguments.  1 if p was seen, 0 if not (now it is), or
 * -ENOMEM. */
static int dw_tm_seen(struct dw_tm *x, const void *p)
{
	size_t mask, i;

	if (2 * (x->n_seen + 1) > x->cap_seen) {
		size_t cap = x->cap_seen ? x->cap_seen * 2 : 64;
		const void **v;

		if (cap > SIZE_MAX / sizeof *v)
			return -ENOMEM;
		if ((v = calloc(cap, sizeof *v)) == NULL)
			return -ENOMEM;
		for (size_t k = 0; k < x->cap_seen; k++) {
			if (x->seen[k] == NULL)
				continue;
			i = (size_t)(((uintptr_t)x->seen[k] >> 4) * 0x9E3779B97F4A7C15ULL) & (cap - 1);
			while (v[i] != NULL)
				i = (i + 1) & (cap - 1);
			v[i] = x->seen[k];
		}
		free(x->seen);
		x->seen = v;
		x->cap_seen = cap;
	}
	mask = x->cap_seen - 1;
	i = (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL) & mask;
	for (; x->seen[i] != NULL; i = (i + 1) & mask)
		if (x->seen[i] == p)
			return 1;
	x->seen[i] = p;
	x->n_seen++;
	return 0;
}

static bool dw_tm_push(struct dw_tm *x, struct dw_tnode *n)
{
	if (x->n_spine == x->cap_spine) {
		size_t cap = x->cap_spine ? x->cap_spine * 2 : 64;
		struct dw_tnode **v;

		if (cap > SIZE_MAX / sizeof *v || (v = realloc(x->spine, cap * sizeof *v)) == NULL) {
			dw_tm_oom(x);
			return false;
		}
		x->spine = v;
		x->cap_spine = cap;
	}
	x->spine[x->n_spine++] = n;
	return true;
}

/* --- 2. how a body uses its parameters ----------------------------------------------- */

/* Each use asks the argument for a shape (docs/policy-reference.md §3.7: what a
 * parameter takes depends on where the body uses it). */
enum {
	DW_TM_USE_WINDOW = 1 << 0,     /* within ?w: an interval literal `1h` */
	DW_TM_USE_COND = 1 << 1,       /* ?s as a whole condition */
	DW_TM_USE_REFINE = 1 << 2,     /* ?s{f: …}: a single predicate, refined */
	DW_TM_USE_TERM = 1 << 3,       /* ?x as a comparison operand: any term */
	DW_TM_USE_NESTED = 1 << 4,     /* ?x as a field value or array item: no aggregate */
	DW_TM_USE_BINDER = 1 << 5,     /* exists (?n: T), for (?a: T), sum ?a, tp(?a) */
};

/* A walk over a body: the uses of each parameter (use may be NULL) and the
 * first call in source order (a body may not call a macro). */
struct dw_tm_scan {
	const struct dw_macro *m;
	uint8_t *use;
	const struct dw_tcall *call;
	uint32_t call_off, call_end;
};

static void dw_tm_mark(struct dw_tm_scan *s, struct dw_str name, uint8_t bit)
{
	int i = dw_tm_param(s->m, name);

	if (s->use != NULL && i >= 0)
		s->use[i] |= bit;
}

static void dw_tm_mark_binder(struct dw_tm_scan *s, const struct dw_tbinder *b)
{
	if (b->sigil == '?')
		dw_tm_mark(s, b->name, DW_TM_USE_BINDER);
}

static void dw_tm_mark_call(struct dw_tm_scan *s, const struct dw_tcall *c, uint32_t off,
			    uint32_t end)
{
	if (s->call == NULL || off < s->call_off) {
		s->call = c;
		s->call_off = off;
		s->call_end = end;
	}
}

static void dw_tm_scan_cond(struct dw_tm_scan *s, const struct dw_tnode *n);

static void dw_tm_scan_term(struct dw_tm_scan *s, const struct dw_tterm *t, uint8_t bit)
{
	switch (t->kind) {
	case DW_TT_PARAM:
		dw_tm_mark(s, t->str, bit);
		break;
	case DW_TT_CALL:
		dw_tm_mark_call(s, t->call, t->off, t->end);
		break;
	case DW_TT_ARRAY:
		for (uint32_t k = 0; k < t->n_items; k++)
			dw_tm_scan_term(s, &t->items[k], DW_TM_USE_NESTED);
		break;
	case DW_TT_AGG:
		if (t->agg->is_sum)
			dw_tm_mark_binder(s, &t->agg->summand);
		for (uint32_t k = 0; k < t->agg->n_for; k++)
			dw_tm_mark_binder(s, &t->agg->for_binders[k]);
		dw_tm_scan_cond(s, t->agg->where);
		break;
	default:
		break;
	}
}

static void dw_tm_scan_window(struct dw_tm_scan *s, const struct dw_window *w)
{
	if (w->is_param)
		dw_tm_mark(s, w->param, DW_TM_USE_WINDOW);
}

static void dw_tm_scan_cond(struct dw_tm_scan *s, const struct dw_tnode *n)
{
	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			dw_tm_scan_cond(s, n->b);       /* a conjunct: bounded nesting */
			n = n->a;                       /* the long left spine: a loop */
			continue;
		case DW_TN_NOT:
			n = n->a;
			continue;
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			dw_tm_scan_window(s, &n->window);
			n = n->a;
			continue;
		case DW_TN_SINCE:
			dw_tm_scan_window(s, &n->window);
			dw_tm_scan_cond(s, n->a);
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			dw_tm_mark_binder(s, &n->binder);
			n = n->a;
			continue;
		case DW_TN_TP:
			dw_tm_mark_binder(s, &n->binder);
			return;
		case DW_TN_CMP:
			dw_tm_scan_term(s, n->lhs, DW_TM_USE_TERM);
			dw_tm_scan_term(s, n->rhs, DW_TM_USE_TERM);
			return;
		case DW_TN_PRED:
			if (n->pred->param.n != 0)
				dw_tm_mark(s, n->pred->param, DW_TM_USE_REFINE);
			for (uint32_t k = 0; k < n->pred->n_fields; k++)
				dw_tm_scan_term(s, &n->pred->fields[k].term, DW_TM_USE_NESTED);
			return;
		case DW_TN_PARAM:
			dw_tm_mark(s, n->param, DW_TM_USE_COND);
			return;
		case DW_TN_CALL:
			dw_tm_mark_call(s, n->call, n->off, n->end);
			return;
		default:
			return;
		}
	}
}

static void dw_tm_scan_body(struct dw_tm_scan *s)
{
	const struct dw_temporal *b = s->m->tbody;

	if (b->cond != NULL)
		dw_tm_scan_cond(s, b->cond);
	else
		dw_tm_scan_term(s, b->agg, DW_TM_USE_TERM);
}

/* --- 3. the tree walk --------------------------------------------------------------- */

static struct dw_tnode *dw_tm_cond(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tnode *n,
				   struct dw_tm_size *sz);
static bool dw_tm_term(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tterm *dst,
		       const struct dw_tterm *src, struct dw_tm_size *sz);
static struct dw_tnode *dw_tm_call_cond(struct dw_tm *x, struct dw_tnode *n,
					struct dw_tm_size *sz);
static bool dw_tm_call_term(struct dw_tm *x, struct dw_tterm *dst, const struct dw_tterm *src,
			    struct dw_tm_size *sz);

/* The node that receives n's expansion: n itself in a rule's tree, else a copy
 * with the call site's span. */
static struct dw_tnode *dw_tm_own(struct dw_tm *x, const struct dw_tm_frame *f,
				  struct dw_tnode *n)
{
	struct dw_tnode *c;

	if (f == NULL)
		return n;
	if ((c = DW_NEW(&x->ps->arena, struct dw_tnode)) == NULL) {
		dw_tm_oom(x);
		return NULL;
	}
	*c = *n;
	c->off = f->off;
	c->end = f->end;
	return c;
}

/* w belongs to the node being built.  `within ?w` takes the argument's window,
 * with its span (the `1h` at the call site). */
static bool dw_tm_window(struct dw_tm *x, const struct dw_tm_frame *f, struct dw_window *w)
{
	const struct dw_targ *a;

	if (f == NULL) {
		if (w->is_param)
			dw_tm_internal(x, w->off, w->end, "a window parameter outside a macro body");
		return !w->is_param;
	}
	if (!w->is_param) {
		w->off = f->off;
		w->end = f->end;
		return true;
	}
	if ((a = dw_tm_arg(x, f, w->param, NULL)) == NULL)
		return false;
	*w = a->window;
	return true;
}

/* b belongs to the node being built.  `?a` takes the argument's identifier
 * (and span), `$t` its fresh name; the type stays the body's. */
static bool dw_tm_binder(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tbinder *b)
{
	const struct dw_targ *a;

	if (f == NULL) {
		if (b->sigil != 0)
			dw_tm_internal(x, b->off, b->end, "a binder sigil outside a macro body");
		return b->sigil == 0;
	}
	switch (b->sigil) {
	case '?':
		if ((a = dw_tm_arg(x, f, b->name, NULL)) == NULL)
			return false;
		b->name = a->term->str;        /* checked: a bare identifier */
		b->off = a->off;
		b->end = a->end;
		break;
	case '$':
		if (!dw_tm_fresh(x, f, b->name, &b->name))
			return false;
		/* fall through */
	default:
		b->off = f->off;
		b->end = f->end;
		break;
	}
	b->sigil = 0;
	return true;
}

static bool dw_tm_items(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tterm *t,
			struct dw_tm_size *sz)
{
	struct dw_tterm *items = t->items;
	struct dw_tm_size is;

	if (f != NULL && t->n_items != 0) {
		items = DW_NEWN(&x->ps->arena, struct dw_tterm, t->n_items);
		if (items == NULL) {
			dw_tm_oom(x);
			return false;
		}
	}
	for (uint32_t k = 0; k < t->n_items; k++) {
		if (!dw_tm_term(x, f, &items[k], &t->items[k], &is))
			return false;
		sz->nodes = dw_tm_add(sz->nodes, is.nodes);
		sz->nest = dw_tm_max(sz->nest, is.nest);
	}
	t->items = items;
	return true;
}

static struct dw_tagg *dw_tm_agg(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tagg *g,
				 struct dw_tm_size *sz)
{
	struct dw_tagg *c = g;

	if (f != NULL) {
		c = DW_NEW(&x->ps->arena, struct dw_tagg);
		if (c == NULL) {
			dw_tm_oom(x);
			return NULL;
		}
		*c = *g;
		if (g->n_for != 0) {
			c->for_binders = DW_NEWN(&x->ps->arena, struct dw_tbinder, g->n_for);
			if (c->for_binders == NULL) {
				dw_tm_oom(x);
				return NULL;
			}
			memcpy(c->for_binders, g->for_binders, g->n_for * sizeof *g->for_binders);
		}
	}
	if (c->is_sum && !dw_tm_binder(x, f, &c->summand))
		return NULL;
	for (uint32_t k = 0; k < c->n_for; k++)
		if (!dw_tm_binder(x, f, &c->for_binders[k]))
			return NULL;
	if ((c->where = dw_tm_cond(x, f, g->where, sz)) == NULL)
		return NULL;
	return c;
}

/* A term written into dst (dst may be src: in place).  A parameter becomes a
 * copy of its argument's term, which was expanded already. */
static bool dw_tm_term(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tterm *dst,
		       const struct dw_tterm *src, struct dw_tm_size *sz)
{
	struct dw_tterm t = *src;
	struct dw_tm_size s = { 0, 0 };
	const struct dw_tm_size *as;
	const struct dw_targ *a;

	switch (t.kind) {
	case DW_TT_PARAM:
		if (f == NULL) {
			dw_tm_internal(x, t.off, t.end, "a parameter outside a macro body");
			return false;
		}
		if ((a = dw_tm_arg(x, f, t.str, &as)) == NULL)
			return false;
		*dst = *a->term;
		*sz = *as;
		return true;
	case DW_TT_CALL:
		if (f != NULL) {
			dw_tm_internal(x, f->off, f->end, "a macro call inside a macro body");
			return false;
		}
		return dw_tm_call_term(x, dst, src, sz);
	case DW_TT_BINDER:
		if (f == NULL) {
			dw_tm_internal(x, t.off, t.end, "a fresh binder outside a macro body");
			return false;
		}
		if (!dw_tm_fresh(x, f, t.str, &t.str))
			return false;
		t.kind = DW_TT_VAR;
		break;
	case DW_TT_ARRAY:
		if (!dw_tm_items(x, f, &t, &s))
			return false;
		break;
	case DW_TT_AGG:
		if ((t.agg = dw_tm_agg(x, f, src->agg, &s)) == NULL)
			return false;
		break;
	default:
		break;
	}
	if (f != NULL) {
		t.off = f->off;
		t.end = f->end;
	}
	*dst = t;
	sz->nodes = dw_tm_add(s.nodes, 1);
	sz->nest = dw_tm_deeper(s.nest);
	return true;
}

/* A comparison operand: a new term in a copy, the same one in place. */
static struct dw_tterm *dw_tm_term_ptr(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tterm *t,
				       struct dw_tm_size *sz)
{
	struct dw_tterm *dst = t;

	if (f != NULL && (dst = DW_NEW(&x->ps->arena, struct dw_tterm)) == NULL) {
		dw_tm_oom(x);
		return NULL;
	}
	return dw_tm_term(x, f, dst, t, sz) ? dst : NULL;
}

/* A predicate.  `?s{f: 1}` in a body: the argument (checked to be one
 * predicate) with the refinement's fields appended, as `P{a}{b}` = `P{a, b}`.
 * sz: the sizes of the field terms. */
static struct dw_tpred *dw_tm_pred(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tpred *p,
				   uint32_t off, uint32_t end, struct dw_tm_size *sz)
{
	const struct dw_tpred *base = NULL;
	const struct dw_tm_size *bs;
	const struct dw_targ *a;
	struct dw_tpred *c = p;
	struct dw_tfield *fl = p->fields;
	struct dw_tm_size fs;
	uint32_t n0 = 0, n;

	if (f == NULL && p->param.n != 0) {
		dw_tm_internal(x, off, end, "a refined parameter outside a macro body");
		return NULL;
	}
	if (f != NULL) {
		if (p->param.n != 0) {
			if ((a = dw_tm_arg(x, f, p->param, &bs)) == NULL)
				return NULL;
			base = a->cond->pred;
			n0 = base->n_fields;
			/* the base predicate's node is not copied, its fields are */
			sz->nodes = bs->nodes - 1;
			sz->nest = bs->nest - 1;
		}
		if (__builtin_add_overflow(n0, p->n_fields, &n)) {
			dw_tm_fail(x, off, end, "a refined predicate has too many fields");
			return NULL;
		}
		c = DW_NEW(&x->ps->arena, struct dw_tpred);
		fl = DW_NEWN(&x->ps->arena, struct dw_tfield, n ? n : 1);
		if (c == NULL || fl == NULL) {
			dw_tm_oom(x);
			return NULL;
		}
		*c = base != NULL ? *base : *p;
		c->param = dw_str_make(NULL, 0);
		if (n0 != 0)
			memcpy(fl, base->fields, n0 * sizeof *fl);
		for (uint32_t k = 0; k < p->n_fields; k++) {
			fl[n0 + k] = p->fields[k];
			fl[n0 + k].off = f->off;
			fl[n0 + k].end = f->end;
		}
		c->fields = fl;
		c->n_fields = n;
	}
	for (uint32_t k = n0; k < c->n_fields; k++) {
		if (!dw_tm_term(x, f, &fl[k].term, &p->fields[k - n0].term, &fs))
			return NULL;
		sz->nodes = dw_tm_add(sz->nodes, fs.nodes);
		sz->nest = dw_tm_max(sz->nest, fs.nest);
	}
	return c;
}

/* A node that is neither `&&` nor `!` (dw_tm_cond walks those). */
static struct dw_tnode *dw_tm_node(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tnode *n,
				   struct dw_tm_size *sz)
{
	struct dw_tm_size a = { 0, 0 }, b = { 0, 0 };
	const struct dw_tm_size *as;
	const struct dw_targ *arg;
	struct dw_tnode *c;

	switch (n->kind) {
	case DW_TN_PARAM:
		if (f == NULL) {
			dw_tm_internal(x, n->off, n->end, "a parameter outside a macro body");
			return NULL;
		}
		if ((arg = dw_tm_arg(x, f, n->param, &as)) == NULL)
			return NULL;
		*sz = *as;
		return arg->cond;          /* shared: expanded already, never written again */
	case DW_TN_CALL:
		if (f != NULL) {
			dw_tm_internal(x, f->off, f->end, "a macro call inside a macro body");
			return NULL;
		}
		return dw_tm_call_cond(x, n, sz);
	default:
		break;
	}
	if ((c = dw_tm_own(x, f, n)) == NULL)
		return NULL;
	switch (n->kind) {
	case DW_TN_FORMERLY:
	case DW_TN_PREVIOUS:
		if (!dw_tm_window(x, f, &c->window) || (c->a = dw_tm_cond(x, f, n->a, &a)) == NULL)
			return NULL;
		break;
	case DW_TN_SINCE:
		if (!dw_tm_window(x, f, &c->window) || (c->a = dw_tm_cond(x, f, n->a, &a)) == NULL ||
		    (c->b = dw_tm_cond(x, f, n->b, &b)) == NULL)
			return NULL;
		break;
	case DW_TN_EXISTS:
		if (!dw_tm_binder(x, f, &c->binder) || (c->a = dw_tm_cond(x, f, n->a, &a)) == NULL)
			return NULL;
		break;
	case DW_TN_TP:
		if (!dw_tm_binder(x, f, &c->binder))
			return NULL;
		break;
	case DW_TN_CMP:
		if ((c->lhs = dw_tm_term_ptr(x, f, n->lhs, &a)) == NULL ||
		    (c->rhs = dw_tm_term_ptr(x, f, n->rhs, &b)) == NULL)
			return NULL;
		break;
	case DW_TN_PRED:
		if ((c->pred = dw_tm_pred(x, f, n->pred, c->off, c->end, &a)) == NULL)
			return NULL;
		break;
	default:
		dw_tm_internal(x, n->off, n->end, "an unknown temporal node");
		return NULL;
	}
	sz->nodes = dw_tm_add(dw_tm_add(a.nodes, b.nodes), 1);
	sz->nest = dw_tm_deeper(dw_tm_max(a.nest, b.nest));
	return c;
}

/* A condition: its `&&`/`!` spine down to the first other node, that node,
 * then the spine rebuilt bottom-up (so conjuncts are met in source order). */
static struct dw_tnode *dw_tm_cond(struct dw_tm *x, struct dw_tm_frame *f, struct dw_tnode *n,
				   struct dw_tm_size *sz)
{
	size_t base = x->n_spine;
	struct dw_tnode *acc = NULL;

	for (; n->kind == DW_TN_AND || n->kind == DW_TN_NOT; n = n->a)
		if (!dw_tm_push(x, n))
			goto out;
	acc = dw_tm_node(x, f, n, sz);
	while (acc != NULL && x->n_spine > base) {
		struct dw_tnode *s = x->spine[--x->n_spine], *c;
		struct dw_tm_size bs;

		if ((c = dw_tm_own(x, f, s)) == NULL) {
			acc = NULL;
			break;
		}
		if (s->kind == DW_TN_AND) {
			/* a conjunct: bounded nesting; it pushes above base and pops back */
			if ((c->b = dw_tm_cond(x, f, s->b, &bs)) == NULL) {
				acc = NULL;
				break;
			}
			sz->nodes = dw_tm_add(sz->nodes, bs.nodes);
			sz->nest = dw_tm_max(sz->nest, dw_tm_deeper(bs.nest));
		}
		sz->nodes = dw_tm_add(sz->nodes, 1);
		c->a = acc;
		acc = c;
	}
out:
	x->n_spine = base;
	return acc;
}

/* --- 4. calls ---------------------------------------------------------------------- */

/* The macro a call reaches, checked for kind and arity.  want_agg: the call
 * stands where a value (a comparison operand) is expected. */
static const struct dw_macro *dw_tm_callee(struct dw_tm *x, const struct dw_tcall *call,
					   uint32_t off, uint32_t end, bool want_agg)
{
	const struct dw_macro *m = dw_macro_find(x->ps, call->name);
	int nn = (int)call->name.n;
	const char *np = call->name.p;

	if (m == NULL) {
		dw_tm_fail(x, off, end, "unknown macro `%.*s` (no declared `def temporal`)", nn, np);
		return NULL;
	}
	if (m->kind != DW_MACRO_TEMPORAL) {
		dw_tm_fail(x, off, end, "macro `%.*s` is a cedar macro and cannot be called in a "
			   "temporal condition position", nn, np);
		return NULL;
	}
	if (m->tbody == NULL) {
		dw_tm_internal(x, off, end, "a temporal macro without a body");
		return NULL;
	}
	if (m->is_aggregate && !want_agg) {
		dw_tm_fail(x, off, end, "macro `%.*s` is an aggregation macro (its body is a `count` "
			   "or `sum`): it yields a number, not a condition, so it can only be a "
			   "comparison operand, e.g. `%.*s(…) >= 3`", nn, np, nn, np);
		return NULL;
	}
	if (!m->is_aggregate && want_agg) {
		dw_tm_fail(x, off, end, "macro `%.*s` is a condition macro: it yields a temporal "
			   "condition, not a number, so it cannot be a comparison operand; call it "
			   "where a condition is expected", nn, np);
		return NULL;
	}
	if (call->n_args != m->n_params) {
		dw_tm_fail(x, off, end, "macro `%.*s` expects %u argument(s), got %u", nn, np,
			   m->n_params, call->n_args);
		return NULL;
	}
	return m;
}

/* The parser reads a bare call argument `f(…)` as a condition (it tries
 * condition before term); the parameter's use decides whether it is a
 * condition-macro call or an aggregation-macro call. */
static bool dw_tm_as_term(struct dw_tm *x, struct dw_targ *a)
{
	struct dw_tterm *t = DW_NEW(&x->ps->arena, struct dw_tterm);

	if (t == NULL) {
		dw_tm_oom(x);
		return false;
	}
	t->kind = DW_TT_CALL;
	t->call = a->cond->call;
	t->off = a->cond->off;
	t->end = a->cond->end;
	a->kind = DW_TA_TERM;
	a->term = t;
	a->cond = NULL;
	return true;
}

static bool dw_tm_as_cond(struct dw_tm *x, struct dw_targ *a)
{
	struct dw_tnode *n = DW_NEW(&x->ps->arena, struct dw_tnode);

	if (n == NULL) {
		dw_tm_oom(x);
		return false;
	}
	n->kind = DW_TN_CALL;
	n->call = a->term->call;
	n->off = a->term->off;
	n->end = a->term->end;
	a->kind = DW_TA_COND;
	a->cond = n;
	a->term = NULL;
	return true;
}

static bool dw_tm_is_reserved(struct dw_str name)
{
	static const char *const reserved[] = { "principal", "action", "resource", "context" };

	for (size_t k = 0; k < DW_N_ELEMENTS(reserved); k++)
		if (dw_str_eq_c(name, reserved[k]))
			return true;
	return false;
}

static const char *dw_tm_shape(const struct dw_targ *a)
{
	return a->kind == DW_TA_WINDOW ? "an interval literal"
	       : a->kind == DW_TA_COND ? "a condition" : "a value";
}

/* Before expansion: does argument a fit every use of parameter i? */
static bool dw_tm_arg_shape(struct dw_tm *x, const struct dw_macro *m, uint32_t i, uint8_t use,
			    struct dw_targ *a)
{
	struct dw_str p = m->params[i];
	bool call_cond = a->kind == DW_TA_COND && a->cond->kind == DW_TN_CALL;
	bool call_term = a->kind == DW_TA_TERM && a->term->kind == DW_TT_CALL;
	const struct dw_macro *callee;

	if (use & DW_TM_USE_BINDER) {
		if (a->kind != DW_TA_TERM || a->term->kind != DW_TT_VAR) {
			dw_tm_fail(x, a->off, a->end, "parameter `?%.*s` is used in a binder position, "
				   "so the call-site argument must be a single identifier", (int)p.n,
				   p.p);
			return false;
		}
		if (dw_tm_is_reserved(a->term->str)) {
			/* the parser's message (acceptance rule 6): it could not see this name */
			dw_tm_fail(x, a->off, a->end, "`%.*s` is a reserved word and cannot be used as "
				   "a binder name; `principal`, `action`, `resource`, and `context` are "
				   "the Cedar request variables — rename the `exists` / `for` / `tp` "
				   "variable", (int)a->term->str.n, a->term->str.p);
			return false;
		}
	}
	if ((use & DW_TM_USE_WINDOW) && a->kind != DW_TA_WINDOW) {
		dw_tm_fail(x, a->off, a->end, "parameter `?%.*s` is used as a window (`within ?%.*s`), "
			   "so the call-site argument must be an interval literal such as `1h` "
			   "(without `within`), not %s", (int)p.n, p.p, (int)p.n, p.p, dw_tm_shape(a));
		return false;
	}
	if (use & (DW_TM_USE_COND | DW_TM_USE_REFINE)) {
		if (call_term && !dw_tm_as_cond(x, a))
			return false;
		if (a->kind != DW_TA_COND) {
			dw_tm_fail(x, a->off, a->end, "parameter `?%.*s` stands for a temporal "
				   "condition, so the call-site argument must be a condition, not %s",
				   (int)p.n, p.p, dw_tm_shape(a));
			return false;
		}
	}
	if (use & (DW_TM_USE_TERM | DW_TM_USE_NESTED)) {
		if (call_cond && !dw_tm_as_term(x, a))
			return false;
		if (a->kind != DW_TA_TERM) {
			dw_tm_fail(x, a->off, a->end, "parameter `?%.*s` stands for a value, so the "
				   "call-site argument must be a term (a literal, a variable, a "
				   "`context`/`principal`/`resource` field or an aggregate), not %s",
				   (int)p.n, p.p, dw_tm_shape(a));
			return false;
		}
	}
	if (use == 0 && (call_cond || call_term)) {
		/* unused, yet expanded (arguments are expanded first): as what its callee is */
		callee = dw_macro_find(x->ps, call_cond ? a->cond->call->name : a->term->call->name);
		if (callee != NULL && callee->kind == DW_MACRO_TEMPORAL && callee->is_aggregate) {
			if (call_cond && !dw_tm_as_term(x, a))
				return false;
		} else if (call_term && !dw_tm_as_cond(x, a)) {
			return false;
		}
	}
	return true;
}

/* After expansion: what only the expanded argument shows. */
static bool dw_tm_arg_check(struct dw_tm *x, const struct dw_macro *m, uint32_t i, uint8_t use,
			    const struct dw_targ *a)
{
	struct dw_str p = m->params[i];

	if ((use & DW_TM_USE_REFINE) &&
	    (a->cond->kind != DW_TN_PRED || a->cond->pred->param.n != 0)) {
		dw_tm_fail(x, a->off, a->end, "parameter `?%.*s` is refined in the body of `%.*s` "
			   "(`?%.*s{…}`), so the call-site argument must be a single event predicate "
			   "such as `Ns::Action::\"id\"::request{…}`", (int)p.n, p.p, (int)m->name.n,
			   m->name.p, (int)p.n, p.p);
		return false;
	}
	if ((use & DW_TM_USE_NESTED) && (a->term->kind == DW_TT_AGG || a->term->kind == DW_TT_CALL)) {
		/* the parser's message (acceptance rule 5): the argument lands in a
		 * field or an array */
		dw_tm_fail(x, a->off, a->end, "an aggregate (`sum`/`count`) may appear only as the "
			   "immediate operand of a comparison, not as a predicate-argument value or "
			   "nested in another term");
		return false;
	}
	return true;
}

static bool dw_tm_arg_expand(struct dw_tm *x, struct dw_targ *a, struct dw_tm_size *sz)
{
	sz->nodes = 0;
	sz->nest = 0;
	switch (a->kind) {
	case DW_TA_COND:
		return (a->cond = dw_tm_cond(x, NULL, a->cond, sz)) != NULL;
	case DW_TA_TERM:
		return (a->term = dw_tm_term_ptr(x, NULL, a->term, sz)) != NULL;
	default:
		return true;
	}
}

/* Check a call's arguments against the body's uses, expand them, and make
 * the frame in which the body is copied. */
static bool dw_tm_frame_init(struct dw_tm *x, const struct dw_macro *m, const struct dw_tcall *call,
			     uint32_t off, uint32_t end, struct dw_tm_frame *fr)
{
	uint32_t n = m->n_params;
	struct dw_tm_scan s = { m, NULL, NULL, 0, 0 };

	memset(fr, 0, sizeof *fr);
	fr->m = m;
	fr->off = off;
	fr->end = end;
	/* arena, not malloc: the frame is short-lived but small, and the
	 * arguments it points to outlive it anyway */
	fr->args = DW_NEWN(&x->ps->arena, struct dw_targ, n ? n : 1);
	fr->arg_size = DW_NEWN(&x->ps->arena, struct dw_tm_size, n ? n : 1);
	s.use = dw_arena_zalloc(&x->ps->arena, n ? n : 1, 1);
	if (fr->args == NULL || fr->arg_size == NULL || s.use == NULL) {
		dw_tm_oom(x);
		return false;
	}
	if (n != 0)
		memcpy(fr->args, call->args, n * sizeof *fr->args);
	dw_tm_scan_body(&s);
	for (uint32_t i = 0; i < n; i++)
		if (!dw_tm_arg_shape(x, m, i, s.use[i], &fr->args[i]))
			return false;
	for (uint32_t i = 0; i < n; i++)
		if (!dw_tm_arg_expand(x, &fr->args[i], &fr->arg_size[i]))
			return false;
	for (uint32_t i = 0; i < n; i++)
		if (!dw_tm_arg_check(x, m, i, s.use[i], &fr->args[i]))
			return false;
	return true;
}

/* An expansion's result within the limits (tmacro.h), checked at each call so
 * the diagnostic names the call that crossed them. */
static bool dw_tm_bounded(struct dw_tm *x, const struct dw_tm_size *sz, uint32_t off,
			  uint32_t end)
{
	if (sz->nodes > DW_TMACRO_MAX_NODES) {
		dw_tm_fail(x, off, end, "after macro expansion, the temporal condition is too large "
			   "(more than %d nodes)", DW_TMACRO_MAX_NODES);
		return false;
	}
	if (sz->nest > DW_TMACRO_MAX_NEST) {
		dw_tm_fail(x, off, end, "after macro expansion, the temporal condition nests deeper "
			   "than %d levels", DW_TMACRO_MAX_NEST);
		return false;
	}
	return true;
}

static struct dw_tnode *dw_tm_call_cond(struct dw_tm *x, struct dw_tnode *n, struct dw_tm_size *sz)
{
	const struct dw_macro *m = dw_tm_callee(x, n->call, n->off, n->end, false);
	struct dw_tm_frame fr;
	struct dw_tnode *r;

	if (m == NULL || !dw_tm_frame_init(x, m, n->call, n->off, n->end, &fr))
		return NULL;
	r = dw_tm_cond(x, &fr, m->tbody->cond, sz);
	if (r == NULL || !dw_tm_bounded(x, sz, n->off, n->end))
		return NULL;
	x->n_calls++;
	return r;
}

/* dst may be src: everything is read from src before dst is written. */
static bool dw_tm_call_term(struct dw_tm *x, struct dw_tterm *dst, const struct dw_tterm *src,
			    struct dw_tm_size *sz)
{
	const struct dw_macro *m = dw_tm_callee(x, src->call, src->off, src->end, true);
	uint32_t off = src->off, end = src->end;
	struct dw_tm_frame fr;

	if (m == NULL || !dw_tm_frame_init(x, m, src->call, off, end, &fr))
		return false;
	if (!dw_tm_term(x, &fr, dst, m->tbody->agg, sz) || !dw_tm_bounded(x, sz, off, end))
		return false;
	x->n_calls++;
	return true;
}

/* --- 5. entry points ---------------------------------------------------------------- */

int dw_tmacro_check_def(const struct dw_policy_set *ps, const struct dw_macro *m,
			struct dw_diags *diags)
{
	struct dw_tm_scan s = { m, NULL, NULL, 0, 0 };
	int r;

	if (m->kind != DW_MACRO_TEMPORAL || m->tbody == NULL)
		return 0;
	dw_tm_scan_body(&s);
	if (s.call == NULL)
		return 0;
	/* the words of the `def cedar` check in the parser */
	r = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, m->src_index, s.call_off, s.call_end,
			       "in `def temporal` body: call of `%.*s`: macro-in-macro is not "
			       "supported", (int)s.call->name.n, s.call->name.p);
	return r != 0 ? r : -EINVAL;
}

static int dw_tm_leaf(struct dw_tm *x, struct dw_temporal *t, uint64_t *rule_nodes)
{
	struct dw_tm_size sz = { 0, 0 };
	struct dw_tnode *r;
	int seen;

	if (t == NULL || t->cond == NULL)
		return 0;
	if ((seen = dw_tm_seen(x, t)) != 0)
		return seen < 0 ? seen : 0;
	x->src = t->src_index;
	x->n_calls = 0;
	if ((r = dw_tm_cond(x, NULL, t->cond, &sz)) == NULL)
		return x->err != 0 ? x->err : -EINVAL;
	t->cond = r;
	*rule_nodes = dw_tm_add(*rule_nodes, sz.nodes);
	/* a rule without calls is as the parser bounded it */
	if (x->n_calls == 0)
		return 0;
	if (*rule_nodes > DW_TMACRO_MAX_NODES)
		dw_tm_fail(x, t->off, t->end, "after macro expansion, the temporal conditions of "
			   "this rule are too large (more than %d nodes)", DW_TMACRO_MAX_NODES);
	else
		dw_tm_bounded(x, &sz, t->off, t->end);
	return x->err;
}

/* Recursion over the Cedar tree is bounded: dw_policy_set_expand measured it
 * (DW_EXPR_MAX_DEPTH) before calling us. */
static int dw_tm_expr(struct dw_tm *x, struct dw_expr *e, uint64_t *rule_nodes)
{
	uint32_t n;
	int r;

	if (e == NULL)
		return 0;
	if (e->op == DW_E_TEMPORAL)
		return dw_tm_leaf(x, e->temporal, rule_nodes);
	n = dw_expr_nchildren(e);
	for (uint32_t i = 0; i < n; i++)
		if ((r = dw_tm_expr(x, dw_expr_child(e, i), rule_nodes)) != 0)
			return r;
	return 0;
}

int dw_tmacro_expand_policy(struct dw_policy_set *ps, struct dw_policy *pol,
			    struct dw_diags *diags)
{
	struct dw_tm x;
	uint64_t nodes = 0;
	int r;

	memset(&x, 0, sizeof x);
	x.ps = ps;
	x.diags = diags;
	x.pol = pol;
	x.src = pol->src_index;
	r = dw_tm_expr(&x, pol->cond, &nodes);
	/* pol->cond folds the bodies; these walks meet the same leaves and skip them */
	for (uint32_t c = 0; c < pol->n_conds && r == 0; c++)
		r = dw_tm_expr(&x, pol->conds[c].body, &nodes);
	free(x.spine);
	free(x.seen);
	return r;
}
