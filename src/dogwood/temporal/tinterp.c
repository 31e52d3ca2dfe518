/* tinterp.c - the temporal interpreter (docs/engine.md "Reference semantics").
 *
 * Every function mirrors a paragraph of that section; the paragraph is named
 * above it.  Positions are indices into the history array; `tp` values are the
 * entries' global timepoints.  Environments and rows are small arrays of
 * (name, value) bindings in the scratch arena; later bindings shadow earlier
 * ones.  Nothing here is clever on purpose: this is the oracle. */
#include "tinterp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dw_bind {
	struct dw_str name;
	struct dw_tval val;
};

/* An environment or a row: n bindings. */
struct dw_row {
	uint32_t n;
	const struct dw_bind *b;
};

struct dw_rows {
	uint32_t n, cap;
	struct dw_row *v;
};

/* ---- helpers ------------------------------------------------------------- */

int64_t dw_window_ns(int64_t w)
{
	int64_t r;

	if (__builtin_mul_overflow(w, DW_NS_PER_SEC, &r))
		return w < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

bool dw_in_window(int64_t ts_i, int64_t ts_j, int64_t w)
{
	int64_t d;

	if (__builtin_sub_overflow(ts_i, ts_j, &d))
		d = ts_i < ts_j ? INT64_MIN : INT64_MAX;
	return d >= 0 && d <= dw_window_ns(w);
}

static bool dw_oom(struct dw_tinterp *ti)
{
	ti->err = -ENOMEM;
	return false;
}

static const struct dw_tval *dw_env_get(const struct dw_row *env, struct dw_str name)
{
	for (uint32_t k = env->n; k-- > 0;)
		if (dw_str_eq(env->b[k].name, name))
			return &env->b[k].val;
	return NULL;
}

/* env ∪ row (row's bindings shadow). */
static bool dw_env_extend(struct dw_tinterp *ti, const struct dw_row *env, const struct dw_row *r,
			  struct dw_row *out)
{
	struct dw_bind *b;

	if (r->n == 0) {
		*out = *env;
		return true;
	}
	b = DW_NEWN(ti->scratch, struct dw_bind, env->n + r->n);
	if (b == NULL)
		return dw_oom(ti);
	if (env->n)
		memcpy(b, env->b, env->n * sizeof *b);
	memcpy(b + env->n, r->b, r->n * sizeof *b);
	out->n = env->n + r->n;
	out->b = b;
	return true;
}

/* env ∖ name */
static bool dw_env_without(struct dw_tinterp *ti, const struct dw_row *env, struct dw_str name,
			   struct dw_row *out)
{
	struct dw_bind *b = DW_NEWN(ti->scratch, struct dw_bind, env->n ? env->n : 1);
	uint32_t n = 0;

	if (b == NULL)
		return dw_oom(ti);
	for (uint32_t k = 0; k < env->n; k++)
		if (!dw_str_eq(env->b[k].name, name))
			b[n++] = env->b[k];
	out->n = n;
	out->b = b;
	return true;
}

static bool dw_rows_push(struct dw_tinterp *ti, struct dw_rows *rs, struct dw_row r)
{
	if (rs->n == rs->cap) {
		uint32_t cap = rs->cap ? rs->cap * 2 : 4;
		struct dw_row *v = DW_NEWN(ti->scratch, struct dw_row, cap);
		if (v == NULL)
			return dw_oom(ti);
		if (rs->n)
			memcpy(v, rs->v, rs->n * sizeof *v);
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = r;
	return true;
}

/* Rows as sets of bindings: same names, dom_eq values. */
static bool dw_row_eq(const struct dw_row *a, const struct dw_row *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t k = 0; k < a->n; k++) {
		const struct dw_tval *v = dw_env_get(b, a->b[k].name);
		if (v == NULL || !dw_tval_eq(v, &a->b[k].val))
			return false;
	}
	return true;
}

static bool dw_rows_has(const struct dw_rows *rs, const struct dw_row *r)
{
	for (uint32_t k = 0; k < rs->n; k++)
		if (dw_row_eq(&rs->v[k], r))
			return true;
	return false;
}

/* Add r unless an equal row is there (set semantics). */
static bool dw_rows_add(struct dw_tinterp *ti, struct dw_rows *rs, struct dw_row r)
{
	if (dw_rows_has(rs, &r))
		return true;
	return dw_rows_push(ti, rs, r);
}

static bool dw_row_one(struct dw_tinterp *ti, struct dw_str name, const struct dw_tval *v,
		       struct dw_row *out)
{
	struct dw_bind *b = DW_NEW(ti->scratch, struct dw_bind);

	if (b == NULL)
		return dw_oom(ti);
	b->name = name;
	b->val = *v;
	out->n = 1;
	out->b = b;
	return true;
}

/* ---- terms (set-up) ------------------------------------------------------ */

static const struct dw_event *dw_decision(const struct dw_tinterp *ti)
{
	return ti->h[ti->n - 1].ev;
}

static bool dw_scope_resolve(const struct dw_event *d, const struct dw_tterm *t,
			     struct dw_tval *out)
{
	bool p = t->root == 'p';
	bool has = p ? d->has_principal : d->has_resource;
	struct dw_str type = p ? d->principal_type : d->resource_type;
	struct dw_str id = p ? d->principal_id : d->resource_id;

	if (!has)
		return false;
	if (t->path.n == 0) {
		memset(out, 0, sizeof *out);
		out->kind = DW_TV_ENTITY;
		out->type = type;
		out->s = id;
		return true;
	}
	for (uint32_t k = 0; k < d->n_entities; k++) {
		const struct dw_event_entity *e = &d->entities[k];
		const struct dw_tval *v;
		if (!dw_str_eq(e->type, type) || !dw_str_eq(e->id, id))
			continue;
		if ((v = dw_tval_path(&e->attrs, t->path)) != NULL) {
			*out = *v;
			return true;
		}
		break;
	}
	if (dw_str_eq_c(t->path, "id")) {
		*out = dw_tv_string(id);
		return true;
	}
	if (dw_str_eq_c(t->path, "type")) {
		*out = dw_tv_string(type);
		return true;
	}
	return false;
}

bool dw_tterm_resolve_static(struct dw_arena *a, const struct dw_event *d,
			     const struct dw_tterm *t, struct dw_tval *out)
{
	const struct dw_tval *v;

	memset(out, 0, sizeof *out);
	switch (t->kind) {
	case DW_TT_ENTITY:
		out->kind = DW_TV_ENTITY;
		out->type = t->path;
		out->s = t->str;
		return true;
	case DW_TT_INT:
		*out = dw_tv_int(t->i);
		return true;
	case DW_TT_DECIMAL:
		*out = dw_tv_decimal(t->str);
		return true;
	case DW_TT_STR:
		*out = dw_tv_string(t->str);
		return true;
	case DW_TT_BOOL:
		out->kind = DW_TV_BOOL;
		out->b = t->b;
		return true;
	case DW_TT_CONTEXT:
		if ((v = dw_tval_path(&d->context, t->path)) == NULL)
			return false;
		*out = *v;
		return true;
	case DW_TT_SCOPE:
		return dw_scope_resolve(d, t, out);
	case DW_TT_ARRAY: {
		struct dw_tval *items = DW_NEWN(a, struct dw_tval, t->n_items ? t->n_items : 1);
		if (items == NULL)
			return false;
		for (uint32_t k = 0; k < t->n_items; k++)
			if (!dw_tterm_resolve_static(a, d, &t->items[k], &items[k]))
				return false;
		out->kind = DW_TV_ARRAY;
		out->n = t->n_items;
		out->items = items;
		return true;
	}
	default:
		return false;       /* variables, wildcards, aggregates, macro leftovers */
	}
}

/* resolve(env, t) without aggregates; arrays may hold variables. */
static bool dw_resolve(struct dw_tinterp *ti, const struct dw_row *env, const struct dw_tterm *t,
		       struct dw_tval *out)
{
	const struct dw_tval *v;

	if (t->kind == DW_TT_VAR) {
		if ((v = dw_env_get(env, t->str)) == NULL)
			return false;
		*out = *v;
		return true;
	}
	if (t->kind == DW_TT_ARRAY) {
		struct dw_tval *items = DW_NEWN(ti->scratch, struct dw_tval, t->n_items ? t->n_items : 1);
		if (items == NULL)
			return dw_oom(ti);
		for (uint32_t k = 0; k < t->n_items; k++)
			if (!dw_resolve(ti, env, &t->items[k], &items[k]))
				return false;
		memset(out, 0, sizeof *out);
		out->kind = DW_TV_ARRAY;
		out->n = t->n_items;
		out->items = items;
		return true;
	}
	return dw_tterm_resolve_static(ti->scratch, dw_decision(ti), t, out);
}

/* ---- predicate matching -------------------------------------------------- */

/* Does pred match entry j under env?  On success *row holds the new bindings. */
static bool dw_match(struct dw_tinterp *ti, size_t j, const struct dw_row *env,
		     const struct dw_tpred *p, struct dw_row *row)
{
	const struct dw_event *ev = ti->h[j].ev;
	struct dw_bind *nb = NULL;
	uint32_t nn = 0;

	ti->steps++;
	row->n = 0;
	row->b = NULL;
	if (!dw_str_eq(ev->ns, p->ns) || !dw_str_eq(ev->action, p->action) ||
	    !dw_str_eq(ev->kind, p->kind))
		return false;
	for (uint32_t k = 0; k < p->n_fields; k++) {
		const struct dw_tfield *f = &p->fields[k];
		const struct dw_tval *fv = dw_tval_path(&ev->logged, f->path);
		const struct dw_tval *bound;
		struct dw_tval want;

		if (fv == NULL)
			return false;
		if (f->like) {
			if (fv->kind != DW_TV_STRING || f->pat == NULL ||
			    !dw_pattern_match(f->pat, fv->s))
				return false;
			continue;
		}
		switch (f->term.kind) {
		case DW_TT_WILDCARD:
			continue;
		case DW_TT_VAR:
			bound = dw_env_get(env, f->term.str);
			for (uint32_t q = 0; bound == NULL && q < nn; q++)
				if (dw_str_eq(nb[q].name, f->term.str))
					bound = &nb[q].val;
			if (bound != NULL) {
				if (!dw_tval_eq(bound, fv))
					return false;
				continue;
			}
			if (nb == NULL && (nb = DW_NEWN(ti->scratch, struct dw_bind, p->n_fields)) == NULL)
				return dw_oom(ti);
			nb[nn].name = f->term.str;
			nb[nn++].val = *fv;
			continue;
		default:
			if (!dw_resolve(ti, env, &f->term, &want) || !dw_tval_eq(&want, fv))
				return false;
			continue;
		}
	}
	row->n = nn;
	row->b = nb;
	return true;
}

/* ---- comparisons and aggregates ------------------------------------------ */

static bool dw_holds(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		     const struct dw_tnode *n);
static bool dw_rows(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		    const struct dw_tnode *n, struct dw_rows *out);

/* Projection of a row onto the for-binders: NULL entries for missing columns. */
static bool dw_proj_eq(const struct dw_tval **a, const struct dw_tval **b, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		if ((a[k] == NULL) != (b[k] == NULL))
			return false;
		if (a[k] != NULL && !dw_tval_eq(a[k], b[k]))
			return false;
	}
	return true;
}

static bool dw_aggregate(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
			 const struct dw_tagg *g, struct dw_tval *out)
{
	struct dw_row e = *env;
	struct dw_rows rs = { 0, 0, NULL };
	const struct dw_tval ***proj;
	uint32_t np = 0, sum_col = UINT32_MAX;
	__int128 sum = 0;

	for (uint32_t k = 0; k < g->n_for; k++) {
		if (!dw_env_without(ti, &e, g->for_binders[k].name, &e))
			return false;
		if (g->is_sum && dw_str_eq(g->for_binders[k].name, g->summand.name) &&
		    sum_col == UINT32_MAX)
			sum_col = k;
	}
	if (!dw_rows(ti, i, &e, g->where, &rs))
		return false;
	proj = DW_NEWN(ti->scratch, const struct dw_tval **, rs.n ? rs.n : 1);
	if (proj == NULL)
		return dw_oom(ti);
	for (uint32_t r = 0; r < rs.n; r++) {
		const struct dw_tval **p = DW_NEWN(ti->scratch, const struct dw_tval *,
						   g->n_for ? g->n_for : 1);
		bool dup = false;
		if (p == NULL)
			return dw_oom(ti);
		for (uint32_t k = 0; k < g->n_for; k++)
			p[k] = dw_env_get(&rs.v[r], g->for_binders[k].name);
		for (uint32_t q = 0; q < np && !dup; q++)
			dup = dw_proj_eq(proj[q], p, g->n_for);
		if (dup)
			continue;
		proj[np++] = p;
		if (g->is_sum) {
			const struct dw_tval *v = sum_col != UINT32_MAX ? p[sum_col]
								       : dw_env_get(&rs.v[r], g->summand.name);
			if (v != NULL && v->kind == DW_TV_INT)
				sum += v->i;
		}
	}
	if (g->is_sum) {
		if (sum > INT64_MAX)
			sum = INT64_MAX;
		if (sum < INT64_MIN)
			sum = INT64_MIN;
		*out = dw_tv_int((int64_t)sum);
	} else {
		*out = dw_tv_int(np);
	}
	return true;
}

/* An operand: aggregates are evaluated at i under env. */
static bool dw_operand(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		       const struct dw_tterm *t, struct dw_tval *out)
{
	if (t->kind == DW_TT_AGG)
		return dw_aggregate(ti, i, env, t->agg, out);
	return dw_resolve(ti, env, t, out);
}

static bool dw_compare(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		       const struct dw_tnode *n)
{
	struct dw_tval a, b;

	if (!dw_operand(ti, i, env, n->lhs, &a) || !dw_operand(ti, i, env, n->rhs, &b))
		return false;
	switch (n->cmp) {
	case DW_TC_EQ: return dw_tval_eq(&a, &b);
	case DW_TC_NE: return !dw_tval_eq(&a, &b);
	default: break;
	}
	if (a.kind != DW_TV_INT || b.kind != DW_TV_INT)
		return false;
	switch (n->cmp) {
	case DW_TC_LT: return a.i < b.i;
	case DW_TC_LE: return a.i <= b.i;
	case DW_TC_GT: return a.i > b.i;
	case DW_TC_GE: return a.i >= b.i;
	default: return false;
	}
}

/* ---- holds --------------------------------------------------------------- */

static bool dw_holds(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		     const struct dw_tnode *n)
{
	const struct dw_event *ei = ti->h[i].ev;
	struct dw_row r, e2;
	struct dw_rows rs;

	if (ti->err)
		return false;
	switch (n->kind) {
	case DW_TN_AND:
		if (n->a->kind == DW_TN_PRED) {
			if (!dw_match(ti, i, env, n->a->pred, &r))
				return false;
			if (!dw_env_extend(ti, env, &r, &e2))
				return false;
			return dw_holds(ti, i, &e2, n->b);
		}
		return dw_holds(ti, i, env, n->a) && dw_holds(ti, i, env, n->b);
	case DW_TN_NOT:
		return !dw_holds(ti, i, env, n->a) && ti->err == 0;
	case DW_TN_FORMERLY:
		for (size_t j = 0; j <= i; j++)
			if (dw_in_window(ei->ts, ti->h[j].ev->ts, n->window.seconds) &&
			    dw_holds(ti, j, env, n->a))
				return true;
		return false;
	case DW_TN_PREVIOUS:
		return i > 0 && dw_in_window(ei->ts, ti->h[i - 1].ev->ts, n->window.seconds) &&
		       dw_holds(ti, i - 1, env, n->a);
	case DW_TN_SINCE:
		for (size_t j = 0; j <= i; j++) {
			bool all = true;
			if (!dw_in_window(ei->ts, ti->h[j].ev->ts, n->window.seconds) ||
			    !dw_holds(ti, j, env, n->b))
				continue;
			for (size_t k = j + 1; k <= i && all; k++)
				all = dw_holds(ti, k, env, n->a);
			if (all)
				return true;
		}
		return false;
	case DW_TN_PRED:
		return dw_match(ti, i, env, n->pred, &r);
	case DW_TN_CMP:
		return dw_compare(ti, i, env, n);
	case DW_TN_TP: {
		const struct dw_tval *v = dw_env_get(env, n->binder.name);
		return v == NULL || (v->kind == DW_TV_INT && (uint64_t)v->i == ti->h[i].pos);
	}
	case DW_TN_EXISTS:
		rs.n = rs.cap = 0;
		rs.v = NULL;
		if (!dw_env_without(ti, env, n->binder.name, &e2))
			return false;
		return dw_rows(ti, i, &e2, n->a, &rs) && rs.n > 0;
	default:
		return false;       /* macro leftovers cannot reach a checked leaf */
	}
}

/* ---- rows ---------------------------------------------------------------- */

/* Join r and s when they agree on shared columns. */
static bool dw_join(struct dw_tinterp *ti, const struct dw_row *r, const struct dw_row *s,
		    bool *agree, struct dw_row *out)
{
	struct dw_bind *b;
	uint32_t n = 0;

	*agree = true;
	b = DW_NEWN(ti->scratch, struct dw_bind, r->n + s->n ? r->n + s->n : 1);
	if (b == NULL)
		return dw_oom(ti);
	for (uint32_t k = 0; k < r->n; k++)
		b[n++] = r->b[k];
	for (uint32_t k = 0; k < s->n; k++) {
		const struct dw_tval *v = dw_env_get(r, s->b[k].name);
		if (v != NULL) {
			if (!dw_tval_eq(v, &s->b[k].val)) {
				*agree = false;
				return true;
			}
			continue;
		}
		b[n++] = s->b[k];
	}
	out->n = n;
	out->b = b;
	return true;
}

static bool dw_is_unbound_var(const struct dw_row *env, const struct dw_tterm *t)
{
	return t->kind == DW_TT_VAR && dw_env_get(env, t->str) == NULL;
}

static bool dw_rows(struct dw_tinterp *ti, size_t i, const struct dw_row *env,
		    const struct dw_tnode *n, struct dw_rows *out)
{
	const struct dw_event *ei = ti->h[i].ev;
	struct dw_row r, e2;
	struct dw_rows a = { 0, 0, NULL };

	if (ti->err)
		return false;
	switch (n->kind) {
	case DW_TN_PRED:
		if (dw_match(ti, i, env, n->pred, &r))
			return dw_rows_add(ti, out, r);
		return ti->err == 0;
	case DW_TN_AND:
		if (!dw_rows(ti, i, env, n->a, &a))
			return false;
		for (uint32_t k = 0; k < a.n; k++) {
			struct dw_rows b = { 0, 0, NULL };
			if (!dw_env_extend(ti, env, &a.v[k], &e2) || !dw_rows(ti, i, &e2, n->b, &b))
				return false;
			for (uint32_t q = 0; q < b.n; q++) {
				bool agree;
				struct dw_row j;
				if (!dw_join(ti, &a.v[k], &b.v[q], &agree, &j))
					return false;
				if (agree && !dw_rows_add(ti, out, j))
					return false;
			}
		}
		return true;
	case DW_TN_FORMERLY:
		for (size_t j = 0; j <= i; j++) {
			if (!dw_in_window(ei->ts, ti->h[j].ev->ts, n->window.seconds))
				continue;
			a.n = 0;
			if (!dw_rows(ti, j, env, n->a, &a))
				return false;
			for (uint32_t k = 0; k < a.n; k++)
				if (!dw_rows_add(ti, out, a.v[k]))
					return false;
		}
		return true;
	case DW_TN_PREVIOUS:
		if (i == 0 || !dw_in_window(ei->ts, ti->h[i - 1].ev->ts, n->window.seconds))
			return true;
		return dw_rows(ti, i - 1, env, n->a, out);
	case DW_TN_SINCE:
		for (size_t j = 0; j <= i; j++) {
			if (!dw_in_window(ei->ts, ti->h[j].ev->ts, n->window.seconds))
				continue;
			a.n = 0;
			if (!dw_rows(ti, j, env, n->b, &a))
				return false;
			for (uint32_t k = 0; k < a.n; k++) {
				bool all = true;
				if (!dw_env_extend(ti, env, &a.v[k], &e2))
					return false;
				for (size_t q = j + 1; q <= i && all; q++)
					all = dw_holds(ti, q, &e2, n->a);
				if (ti->err)
					return false;
				if (all && !dw_rows_add(ti, out, a.v[k]))
					return false;
			}
		}
		return true;
	case DW_TN_TP: {
		const struct dw_tval *v = dw_env_get(env, n->binder.name);
		struct dw_tval tpv = dw_tv_int((int64_t)ti->h[i].pos);
		if (v != NULL && !dw_tval_eq(v, &tpv))
			return true;
		if (!dw_row_one(ti, n->binder.name, &tpv, &r))
			return false;
		return dw_rows_add(ti, out, r);
	}
	case DW_TN_EXISTS:
		if (!dw_env_without(ti, env, n->binder.name, &e2) || !dw_rows(ti, i, &e2, n->a, &a))
			return false;
		for (uint32_t k = 0; k < a.n; k++) {
			struct dw_row p;
			if (!dw_env_without(ti, &a.v[k], n->binder.name, &p) || !dw_rows_add(ti, out, p))
				return false;
		}
		return true;
	case DW_TN_CMP:
		if (n->cmp == DW_TC_EQ) {
			const struct dw_tterm *var = NULL, *other = NULL;
			struct dw_tval v;
			if (dw_is_unbound_var(env, n->lhs) && !dw_is_unbound_var(env, n->rhs))
				var = n->lhs, other = n->rhs;
			else if (dw_is_unbound_var(env, n->rhs) && !dw_is_unbound_var(env, n->lhs))
				var = n->rhs, other = n->lhs;
			if (var != NULL && other->kind != DW_TT_WILDCARD) {
				if (!dw_operand(ti, i, env, other, &v))
					return ti->err == 0;   /* does not resolve: no row */
				if (!dw_row_one(ti, var->str, &v, &r))
					return false;
				return dw_rows_add(ti, out, r);
			}
		}
		__attribute__((fallthrough));   /* otherwise a filter */
	default:
		if (dw_holds(ti, i, env, n)) {
			r.n = 0;
			r.b = NULL;
			return dw_rows_add(ti, out, r);
		}
		return ti->err == 0;
	}
}

int dw_tinterp_leaf(struct dw_tinterp *ti, const struct dw_tnode *leaf, bool *out)
{
	struct dw_row env = { 0, NULL };
	bool v;

	ti->err = 0;
	if (ti->n == 0) {
		*out = false;
		return 0;
	}
	v = dw_holds(ti, ti->n - 1, &env, leaf);
	if (ti->err)
		return ti->err;
	*out = v;
	return 0;
}

int dw_tinterp_holds_at(struct dw_tinterp *ti, size_t j, const struct dw_tnode *n,
			const struct dw_str *names, const struct dw_tval *vals, uint32_t n_vars,
			bool *out)
{
	struct dw_row env = { 0, NULL };
	struct dw_bind *b = NULL;
	bool v;

	ti->err = 0;
	if (j >= ti->n) {
		*out = false;
		return 0;
	}
	if (n_vars != 0) {
		if ((b = DW_NEWN(ti->scratch, struct dw_bind, n_vars)) == NULL)
			return -ENOMEM;
		for (uint32_t k = 0; k < n_vars; k++) {
			b[k].name = names[k];
			b[k].val = vals[k];
		}
		env.n = n_vars;
		env.b = b;
	}
	v = dw_holds(ti, j, &env, n);
	if (ti->err)
		return ti->err;
	*out = v;
	return 0;
}
