/* tplan.c - number, pin and classify the temporal leaves of a policy set. */
#include "tplan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tstate.h"
#include "value.h"

#include <nettle/sha2.h>

struct dw_planner {
	struct dw_policy_set *ps;
	const struct dw_evschema *es;
	struct dw_tplan *p;
	uint32_t cap;
	int err;
};

static int64_t dw_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return INT64_MAX;
	return r;
}

static int64_t dw_span_node(const struct dw_tnode *n);

static int64_t dw_span_term(const struct dw_tterm *t)
{
	if (t == NULL || t->kind != DW_TT_AGG || t->agg == NULL || t->agg->where == NULL)
		return 0;
	return dw_span_node(t->agg->where);
}

/* How far back (seconds) evaluating n at a point can look. */
static int64_t dw_span_node(const struct dw_tnode *n)
{
	int64_t a, b, w;

	if (n == NULL)
		return 0;
	switch (n->kind) {
	case DW_TN_AND:
		a = dw_span_node(n->a);
		b = dw_span_node(n->b);
		return a > b ? a : b;
	case DW_TN_NOT:
	case DW_TN_EXISTS:
		return dw_span_node(n->a);
	case DW_TN_FORMERLY:
	case DW_TN_PREVIOUS:
	case DW_TN_SINCE:
		w = n->window.seconds > 0 ? n->window.seconds : 0;
		a = dw_span_node(n->a);
		b = n->kind == DW_TN_SINCE ? dw_span_node(n->b) : 0;
		return dw_sat_add(w, a > b ? a : b);
	case DW_TN_CMP:
		a = dw_span_term(n->lhs);
		b = dw_span_term(n->rhs);
		return a > b ? a : b;
	default:
		return 0;
	}
}

/* Append the pins of the predicate's event (docs/formats.md §3): unconditionally, so an
 * author's wildcard or fresh variable cannot weaken them. */
static int dw_pin_pred(struct dw_planner *pl, struct dw_tpred *pr)
{
	const struct dw_evdecl *d;
	uint32_t n_pins = 0, k = 0;
	struct dw_tfield *f;

	if (pl->es == NULL)
		return 0;
	d = dw_evschema_find(pl->es, pr->ns, pr->action, pr->kind);
	if (d == NULL)
		return 0;
	for (uint32_t i = 0; i < d->n_fields; i++)
		n_pins += d->fields[i].pin != DW_PIN_NONE;
	if (n_pins == 0)
		return 0;
	f = DW_NEWN(&pl->ps->arena, struct dw_tfield, pr->n_fields + n_pins);
	if (f == NULL)
		return -ENOMEM;
	if (pr->n_fields)
		memcpy(f, pr->fields, pr->n_fields * sizeof *f);
	for (uint32_t i = 0; i < d->n_fields; i++) {
		const struct dw_evfield *ef = &d->fields[i];
		struct dw_tfield *nf;
		if (ef->pin == DW_PIN_NONE)
			continue;
		nf = &f[pr->n_fields + k++];
		memset(nf, 0, sizeof *nf);
		nf->path = ef->path;
		if (ef->pin == DW_PIN_CONTEXT) {
			nf->term.kind = DW_TT_CONTEXT;
			nf->term.path = ef->pin_path;
		} else {
			nf->term.kind = DW_TT_SCOPE;
			nf->term.root = ef->pin == DW_PIN_PRINCIPAL ? 'p' : 'r';
			nf->term.path = ef->pin_path;
		}
	}
	pr->fields = f;
	pr->n_fields += n_pins;
	return 0;
}

static int dw_pin_node(struct dw_planner *pl, struct dw_tnode *n);

static int dw_pin_term(struct dw_planner *pl, struct dw_tterm *t)
{
	if (t != NULL && t->kind == DW_TT_AGG && t->agg != NULL && t->agg->where != NULL)
		return dw_pin_node(pl, t->agg->where);
	return 0;
}

static int dw_pin_node(struct dw_planner *pl, struct dw_tnode *n)
{
	int r = 0;

	if (n == NULL)
		return 0;
	switch (n->kind) {
	case DW_TN_PRED:
		return dw_pin_pred(pl, n->pred);
	case DW_TN_CMP:
		if ((r = dw_pin_term(pl, n->lhs)) == 0)
			r = dw_pin_term(pl, n->rhs);
		return r;
	default:
		if ((r = dw_pin_node(pl, n->a)) == 0 && n->kind == DW_TN_AND)
			r = dw_pin_node(pl, n->b);
		else if (r == 0 && n->kind == DW_TN_SINCE)
			r = dw_pin_node(pl, n->b);
		return r;
	}
}

/* Is there a count/sum over `::response` events anywhere in n? */
static bool dw_counts_responses(const struct dw_tnode *n, bool in_agg)
{
	if (n == NULL)
		return false;
	switch (n->kind) {
	case DW_TN_PRED:
		return in_agg && dw_str_eq_c(n->pred->kind, "response");
	case DW_TN_CMP:
		return (n->lhs->kind == DW_TT_AGG && n->lhs->agg &&
			dw_counts_responses(n->lhs->agg->where, true)) ||
		       (n->rhs->kind == DW_TT_AGG && n->rhs->agg &&
			dw_counts_responses(n->rhs->agg->where, true));
	default:
		return dw_counts_responses(n->a, in_agg) || dw_counts_responses(n->b, in_agg);
	}
}

/* Does n look back in time (a past operator or an aggregate anywhere in it)? */
static bool dw_looks_back(const struct dw_tnode *n)
{
	if (n == NULL)
		return false;
	switch (n->kind) {
	case DW_TN_FORMERLY: case DW_TN_PREVIOUS: case DW_TN_SINCE:
		return true;
	case DW_TN_CMP:
		return n->lhs->kind == DW_TT_AGG || n->rhs->kind == DW_TT_AGG;
	case DW_TN_AND:
		return dw_looks_back(n->a) || dw_looks_back(n->b);
	case DW_TN_NOT: case DW_TN_EXISTS:
		return dw_looks_back(n->a);
	default:
		return false;
	}
}

/* Is there a `since` whose left side looks back, anywhere in n? */
static bool dw_since_left_looks_back(const struct dw_tnode *n)
{
	if (n == NULL)
		return false;
	switch (n->kind) {
	case DW_TN_SINCE:
		return dw_looks_back(n->a) || dw_since_left_looks_back(n->b);
	case DW_TN_CMP:
		return (n->lhs->kind == DW_TT_AGG && n->lhs->agg &&
			dw_since_left_looks_back(n->lhs->agg->where)) ||
		       (n->rhs->kind == DW_TT_AGG && n->rhs->agg &&
			dw_since_left_looks_back(n->rhs->agg->where));
	case DW_TN_AND:
		return dw_since_left_looks_back(n->a) || dw_since_left_looks_back(n->b);
	case DW_TN_NOT: case DW_TN_EXISTS: case DW_TN_FORMERLY: case DW_TN_PREVIOUS:
		return dw_since_left_looks_back(n->a);
	default:
		return false;
	}
}

static int dw_plan_leaf(struct dw_planner *pl, struct dw_temporal *t, uint32_t rule)
{
	struct dw_tleaf *lf;
	int r;

	if (t->gindex != UINT32_MAX)
		return 0;           /* shared by a `def cedar` expansion: one leaf */
	if (pl->p->n_leaves == pl->cap) {
		uint32_t cap = pl->cap ? pl->cap * 2 : 16;
		struct dw_tleaf *v = DW_NEWN(&pl->p->arena, struct dw_tleaf, cap);
		if (v == NULL)
			return -ENOMEM;
		if (pl->p->n_leaves)
			memcpy(v, pl->p->leaves, pl->p->n_leaves * sizeof *v);
		pl->p->leaves = v;
		pl->cap = cap;
	}
	t->gindex = pl->p->n_leaves;
	lf = &pl->p->leaves[pl->p->n_leaves++];
	memset(lf, 0, sizeof *lf);
	lf->t = t;
	lf->rule = rule;
	if (t->cond == NULL)
		return 0;
	if ((r = dw_pin_node(pl, t->cond)) != 0)
		return r;
	lf->span_s = dw_span_node(t->cond);
	if (lf->span_s > pl->p->span_max_s)
		pl->p->span_max_s = lf->span_s;
	r = dw_tstate_compile(&pl->p->arena, t->cond, pl->p->n_keys != 0, &lf->inc, &lf->why,
			      &lf->needs_events);
	if (r != 0)
		return r;
	lf->incremental = lf->inc != NULL;
	if (!lf->incremental)
		lf->needs_events = true;
	if (lf->needs_events)
		pl->p->needs_events = true;
	if (!lf->incremental && dw_since_left_looks_back(t->cond))
		pl->p->since_left_looks_back = true;
	if (!lf->incremental && dw_counts_responses(t->cond, false))
		lf->pending_blind = true;
	return 0;
}

/* Visit every DW_E_TEMPORAL node of e (twice for pass 0: reset numbering). */
static int dw_plan_expr(struct dw_planner *pl, struct dw_expr *e, uint32_t rule, int pass)
{
	int r;

	if (e == NULL)
		return 0;
	if (e->op == DW_E_TEMPORAL && e->temporal != NULL) {
		if (pass == 0) {
			e->temporal->gindex = UINT32_MAX;
			return 0;
		}
		return dw_plan_leaf(pl, e->temporal, rule);
	}
	for (uint32_t i = 0; i < dw_expr_nchildren(e); i++)
		if ((r = dw_plan_expr(pl, dw_expr_child(e, i), rule, pass)) != 0)
			return r;
	return 0;
}

int dw_tplan_build(struct dw_policy_set *ps, const struct dw_evschema *es, struct dw_tplan **out)
{
	struct dw_planner pl = { ps, es, NULL, 0, 0 };
	struct dw_tplan *p = calloc(1, sizeof *p);
	int r = 0;

	if (p == NULL)
		return -ENOMEM;
	dw_arena_init(&p->arena);
	pl.p = p;
	if (es != NULL) {
		p->n_keys = es->n_key_fields;
		p->keys = es->key_fields;
	}
	for (int pass = 0; pass < 2 && r == 0; pass++)
		for (uint32_t i = 0; i < ps->n_policies && r == 0; i++) {
			struct dw_policy *pol = ps->policies[i];
			for (uint32_t c = 0; c < pol->n_conds && r == 0; c++)
				r = dw_plan_expr(&pl, pol->conds[c].body, i, pass);
		}
	if (r == 0) {
		p->n_rules = ps->n_policies;
		p->gate_leaf = DW_NEWN(&p->arena, uint32_t, ps->n_policies ? ps->n_policies : 1);
		if (p->gate_leaf == NULL)
			r = -ENOMEM;
	}
	for (uint32_t i = 0; r == 0 && i < ps->n_policies; i++) {
		const struct dw_policy *pol = ps->policies[i];
		const struct dw_cond *c0 = pol->n_conds ? &pol->conds[0] : NULL;
		p->gate_leaf[i] = UINT32_MAX;
		/* the folded condition evaluates conds[0] first: when it is a
		 * temporal leaf that is false, nothing after it runs */
		if (c0 != NULL && c0->kind == DW_COND_TEMPORAL && !c0->unless && c0->body != NULL &&
		    c0->body->op == DW_E_TEMPORAL && c0->body->temporal != NULL &&
		    c0->body->temporal->gindex < p->n_leaves)
			p->gate_leaf[i] = c0->body->temporal->gindex;
	}
	if (r != 0) {
		dw_tplan_free(p);
		return r;
	}
	*out = p;
	return 0;
}

void dw_tplan_free(struct dw_tplan *p)
{
	if (p == NULL)
		return;
	dw_arena_fini(&p->arena);
	free(p);
}

/* ---- fingerprint ------------------------------------------------------------------ */

static int dw_fp_str(struct dw_buf *b, struct dw_str s)
{
	uint32_t n = s.n;
	int r = dw_buf_put(b, (const char *)&n, sizeof n);

	return r ? r : dw_buf_put(b, s.p ? s.p : "", s.n);
}

static int dw_fp_i64(struct dw_buf *b, int64_t v)
{
	return dw_buf_put(b, (const char *)&v, sizeof v);
}

static int dw_fp_node(struct dw_buf *b, const struct dw_tnode *n);

static int dw_fp_term(struct dw_buf *b, const struct dw_tterm *t)
{
	int r;

	if (t == NULL)
		return dw_buf_putc(b, 0);
	if ((r = dw_buf_putc(b, (char)t->kind)) || (r = dw_buf_putc(b, (char)t->root)) ||
	    (r = dw_buf_putc(b, (char)t->b)) || (r = dw_fp_i64(b, t->i)) ||
	    (r = dw_fp_str(b, t->str)) || (r = dw_fp_str(b, t->path)) ||
	    (r = dw_fp_i64(b, t->n_items)))
		return r;
	for (uint32_t i = 0; i < t->n_items; i++)
		if ((r = dw_fp_term(b, &t->items[i])) != 0)
			return r;
	if (t->kind == DW_TT_AGG && t->agg != NULL) {
		const struct dw_tagg *g = t->agg;
		if ((r = dw_buf_putc(b, (char)g->is_sum)) || (r = dw_fp_str(b, g->summand.name)) ||
		    (r = dw_fp_i64(b, g->n_for)))
			return r;
		for (uint32_t i = 0; i < g->n_for; i++)
			if ((r = dw_fp_str(b, g->for_binders[i].name)) != 0)
				return r;
		return dw_fp_node(b, g->where);
	}
	return 0;
}

static int dw_fp_node(struct dw_buf *b, const struct dw_tnode *n)
{
	int r;

	if (n == NULL)
		return dw_buf_putc(b, 0);
	if ((r = dw_buf_putc(b, (char)n->kind)) || (r = dw_buf_putc(b, (char)n->cmp)) ||
	    (r = dw_fp_i64(b, n->window.seconds)) || (r = dw_fp_str(b, n->binder.name)))
		return r;
	if (n->kind == DW_TN_PRED && n->pred != NULL) {
		const struct dw_tpred *p = n->pred;
		if ((r = dw_fp_str(b, p->ns)) || (r = dw_fp_str(b, p->action)) ||
		    (r = dw_fp_str(b, p->kind)) || (r = dw_fp_i64(b, p->n_fields)))
			return r;
		for (uint32_t i = 0; i < p->n_fields; i++)
			if ((r = dw_fp_str(b, p->fields[i].path)) ||
			    (r = dw_buf_putc(b, (char)p->fields[i].like)) ||
			    (r = dw_fp_term(b, &p->fields[i].term)))
				return r;
	}
	if (n->kind == DW_TN_CMP)
		return (r = dw_fp_term(b, n->lhs)) ? r : dw_fp_term(b, n->rhs);
	return (r = dw_fp_node(b, n->a)) ? r : dw_fp_node(b, n->b);
}

int dw_tplan_fingerprint(const struct dw_tplan *p, unsigned char out[32])
{
	struct dw_buf b = { NULL, 0, 0 };
	struct sha256_ctx c;
	int r = dw_buf_put(&b, "cairn-tplan-1", 13);

	for (uint32_t i = 0; r == 0 && i < p->n_leaves; i++) {
		const struct dw_tleaf *lf = &p->leaves[i];
		if ((r = dw_fp_i64(&b, lf->rule)) == 0 && (r = dw_buf_putc(&b, (char)lf->incremental)) == 0)
			r = dw_fp_node(&b, lf->t->cond);
	}
	for (uint32_t k = 0; r == 0 && k < p->n_keys; k++)
		if ((r = dw_fp_str(&b, p->keys[k].path)) == 0 && (r = dw_buf_putc(&b, (char)p->keys[k].pin)) == 0)
			r = dw_fp_str(&b, p->keys[k].pin_path);
	if (r == 0) {
		sha256_init(&c);
		sha256_update(&c, b.n, (const uint8_t *)b.p);
		sha256_digest(&c, SHA256_DIGEST_SIZE, out);
	}
	dw_buf_free(&b);
	return r;
}
