/* macro.c - macro expansion and whole-set checks of macro definitions
 * (docs/policy-reference.md §3.7).  `def cedar` calls are expanded here;
 * `def temporal` calls inside temporal leaves by tmacro.c, after the Cedar
 * expansion of the same rule (a `def cedar` argument may hold a leaf). */
#include <errno.h>
#include <string.h>

#include "policyset.h"
#include "temporal.h"
#include "tmacro.h"

struct dw_expander {
	struct dw_policy_set *ps;
	struct dw_diags *diags;
	int err;
};

const struct dw_macro *dw_macro_find(const struct dw_policy_set *ps, struct dw_str name)
{
	const struct dw_macro *lib = NULL;

	for (uint32_t i = 0; i < ps->n_macros; i++) {
		const struct dw_macro *m = ps->macros[i];
		if (!dw_str_eq(m->name, name))
			continue;
		if (!m->from_library)
			return m;       /* a file's definition overrides the library's */
		lib = m;
	}
	return lib;
}

static struct dw_expr *dw_expand(struct dw_expander *x, struct dw_expr *e);

/* Copy body with every ?param replaced by its argument (already expanded).
 * Arguments are shared, not copied: the AST is immutable after expansion. */
static struct dw_expr *dw_subst(struct dw_expander *x, const struct dw_macro *m,
				const struct dw_expr *b, struct dw_expr **args)
{
	struct dw_expr *c;

	if (b->op == DW_E_PARAM) {
		for (uint32_t i = 0; i < m->n_params; i++)
			if (dw_str_eq(m->params[i], b->list.name))
				return args[i];
		x->err = -EINVAL;   /* unreachable: the parser checked parameter names */
		return NULL;
	}
	c = DW_NEW(&x->ps->arena, struct dw_expr);
	if (c == NULL) {
		x->err = -ENOMEM;
		return NULL;
	}
	*c = *b;
	c->depth = 0;           /* re-measured after expansion */
	switch (b->op) {
	case DW_E_NOT: case DW_E_NEG:
		if ((c->k.a = dw_subst(x, m, b->k.a, args)) == NULL)
			return NULL;
		break;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		if ((c->k.a = dw_subst(x, m, b->k.a, args)) == NULL ||
		    (c->k.b = dw_subst(x, m, b->k.b, args)) == NULL)
			return NULL;
		break;
	case DW_E_IF:
		if ((c->k.a = dw_subst(x, m, b->k.a, args)) == NULL ||
		    (c->k.b = dw_subst(x, m, b->k.b, args)) == NULL ||
		    (c->k.c = dw_subst(x, m, b->k.c, args)) == NULL)
			return NULL;
		break;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		if ((c->attr.e = dw_subst(x, m, b->attr.e, args)) == NULL)
			return NULL;
		break;
	case DW_E_LIKE:
		if ((c->like.e = dw_subst(x, m, b->like.e, args)) == NULL)
			return NULL;
		break;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL:
		c->list.items = DW_NEWN(&x->ps->arena, struct dw_expr *, b->n ? b->n : 1);
		if (c->list.items == NULL) {
			x->err = -ENOMEM;
			return NULL;
		}
		for (uint32_t i = 0; i < b->n; i++)
			if ((c->list.items[i] = dw_subst(x, m, b->list.items[i], args)) == NULL)
				return NULL;
		break;
	default:
		break;
	}
	return c;
}

static struct dw_expr *dw_expand_call(struct dw_expander *x, struct dw_expr *e)
{
	const struct dw_macro *m = dw_macro_find(x->ps, e->list.name);
	struct dw_expr **args;

	if (m == NULL) {
		dw_policy_set_diag(x->ps, x->diags, DW_SEV_ERROR, e->src_index, e->off, e->end,
				   "unknown function or macro `%.*s` (not a Cedar built-in and not a "
				   "declared macro)", (int)e->list.name.n, e->list.name.p);
		x->err = -EINVAL;
		return NULL;
	}
	if (m->kind != DW_MACRO_CEDAR) {
		dw_policy_set_diag(x->ps, x->diags, DW_SEV_ERROR, e->src_index, e->off, e->end,
				   "macro `%.*s` is a temporal macro and cannot be called in a cedar "
				   "expression position", (int)m->name.n, m->name.p);
		x->err = -EINVAL;
		return NULL;
	}
	if (e->n != m->n_params) {
		dw_policy_set_diag(x->ps, x->diags, DW_SEV_ERROR, e->src_index, e->off, e->end,
				   "macro `%.*s` expects %u argument(s), got %u", (int)m->name.n,
				   m->name.p, m->n_params, e->n);
		x->err = -EINVAL;
		return NULL;
	}
	args = e->list.items;
	for (uint32_t i = 0; i < e->n; i++)
		if ((args[i] = dw_expand(x, args[i])) == NULL)
			return NULL;
	return dw_subst(x, m, m->body, args);
}

static struct dw_expr *dw_expand_node(struct dw_expander *x, struct dw_expr *e);

/* Expand in place; returns the (possibly new) node or NULL on error.  Every
 * node on the way is marked unmeasured: its subtree may have changed. */
static struct dw_expr *dw_expand(struct dw_expander *x, struct dw_expr *e)
{
	struct dw_expr *r = dw_expand_node(x, e);

	if (r != NULL)
		r->depth = 0;
	return r;
}

static struct dw_expr *dw_expand_node(struct dw_expander *x, struct dw_expr *e)
{
	switch (e->op) {
	case DW_E_MACRO:
		return dw_expand_call(x, e);
	case DW_E_PROVIDER:
		dw_policy_set_diag(x->ps, x->diags, DW_SEV_ERROR, e->src_index, e->off, e->end,
				   "information providers are not enabled in this build");
		x->err = -EINVAL;
		return NULL;
	case DW_E_NOT: case DW_E_NEG:
		return (e->k.a = dw_expand(x, e->k.a)) ? e : NULL;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		if ((e->k.a = dw_expand(x, e->k.a)) == NULL || (e->k.b = dw_expand(x, e->k.b)) == NULL)
			return NULL;
		return e;
	case DW_E_IF:
		if ((e->k.a = dw_expand(x, e->k.a)) == NULL || (e->k.b = dw_expand(x, e->k.b)) == NULL ||
		    (e->k.c = dw_expand(x, e->k.c)) == NULL)
			return NULL;
		return e;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		return (e->attr.e = dw_expand(x, e->attr.e)) ? e : NULL;
	case DW_E_LIKE:
		return (e->like.e = dw_expand(x, e->like.e)) ? e : NULL;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL:
		for (uint32_t i = 0; i < e->n; i++)
			if ((e->list.items[i] = dw_expand(x, e->list.items[i])) == NULL)
				return NULL;
		return e;
	default:
		return e;
	}
}

int dw_policy_set_expand(struct dw_policy_set *ps, struct dw_diags *diags)
{
	struct dw_expander x = { ps, diags, 0 };

	if (ps->expanded)
		return 0;
	/* two definitions of one name in one source */
	for (uint32_t i = 0; i < ps->n_macros; i++) {
		for (uint32_t j = 0; j < i; j++) {
			const struct dw_macro *a = ps->macros[j], *b = ps->macros[i];
			if (a->src_index == b->src_index && dw_str_eq(a->name, b->name)) {
				dw_policy_set_diag(ps, diags, DW_SEV_ERROR, b->src_index, b->off, b->end,
						   "duplicate macro definition `%.*s`", (int)b->name.n,
						   b->name.p);
				return -EINVAL;
			}
		}
	}
	/* no `def temporal` body calls a macro, so an expansion is one level deep */
	for (uint32_t i = 0; i < ps->n_macros; i++) {
		int r = dw_tmacro_check_def(ps, ps->macros[i], diags);
		if (r != 0)
			return r;
	}
	for (uint32_t i = 0; i < ps->n_policies; i++) {
		struct dw_policy *pol = ps->policies[i];
		int m;
		if (pol->cond != NULL && (pol->cond = dw_expand(&x, pol->cond)) == NULL)
			return x.err ? x.err : -EINVAL;
		if (pol->cond != NULL &&
		    (m = dw_expr_measure(pol->cond, DW_EXPR_MAX_DEPTH, DW_EXPR_MAX_SIZE)) != 0) {
			if (m < 0)
				return m;
			dw_policy_set_diag(ps, diags, DW_SEV_ERROR, pol->src_index, pol->off, pol->end,
					   m == 1 ? "after macro expansion, the condition nests deeper "
						    "than %d levels" : "after macro expansion, the condition "
						    "is too large (more than %d nodes)",
					   m == 1 ? DW_EXPR_MAX_DEPTH : DW_EXPR_MAX_SIZE);
			dw_diags_set_policy(diags, pol->index);
			return -EINVAL;
		}
		for (uint32_t c = 0; c < pol->n_conds; c++)
			if (pol->conds[c].body != NULL &&
			    (pol->conds[c].body = dw_expand(&x, pol->conds[c].body)) == NULL)
				return x.err ? x.err : -EINVAL;
		/* last: a `def cedar` argument may have carried a temporal leaf */
		if ((m = dw_tmacro_expand_policy(ps, pol, diags)) != 0)
			return m;
	}
	ps->expanded = true;
	return 0;
}

const char dw_default_macros[] =
	"def temporal count_within(?w, ?s) { count for ($t: Timepoint). where (formerly within ?w "
	"(?s && tp($t))) };\n"
	"def temporal sum_within(?a, ?w, ?body) { sum ?a for (?a: Long), ($t: Timepoint). where "
	"(formerly within ?w (?body && tp($t))) };\n"
	"def temporal count_distinct_within(?k, ?w, ?s) { count for (?k: String). where (formerly "
	"within ?w ?s) };\n"
	"def temporal bind(?n, ?A, ?B) { exists (?n: Long). (?A == ?n && ?B) };\n";
