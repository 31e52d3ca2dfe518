/* box_rules.c - see box_rules.h.  Messages are Box's, word for word (its
 * docs/user/policy.md "Troubleshooting load failures"), so a Box user reads
 * the same refusal from cairn. */
#include "box_rules.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dw_schema_add_box(struct dw_schema *s, struct dw_diags *diags)
{
	return dw_schema_add_cedar(s, "<box-actions.cedarschema>", dw_box_schema_text,
				   strlen(dw_box_schema_text), diags);
}

/* A rule with an @id is named by it, even a blank one (`rule @id("")`), as
 * Box names it; only a rule with none is named by effect and position. */
void dw_box_rule_name(const struct dw_policy *pol, char *buf, size_t len)
{
	if (pol->id != pol->engine_id)
		snprintf(buf, len, "rule @id(\"%s\") (rule %u)", pol->id, pol->index + 1);
	else
		snprintf(buf, len, "the %s rule with no @id (rule %u)",
			 pol->effect == DW_FORBID ? "forbid" : "permit", pol->index + 1);
}

/* "rule @id("x")" without the number, as the inert-literal texts write it. */
static void dw_rule_short(const struct dw_policy *pol, char *buf, size_t len)
{
	if (pol->id != pol->engine_id)
		snprintf(buf, len, "rule @id(\"%s\")", pol->id);
	else
		dw_box_rule_name(pol, buf, len);
}

static bool dw_is_action_uid(const struct dw_uid *u)
{
	return dw_str_eq_c(u->type, "Action") ||
	       (u->type.n > 8 && memcmp(u->type.p + u->type.n - 8, "::Action", 8) == 0);
}

static int dw_unknown_action(const struct dw_policy_set *ps, const struct dw_schema *schema,
			     const struct dw_policy *pol, const struct dw_uid *u, uint32_t off,
			     uint32_t end, struct dw_diags *diags)
{
	struct dw_buf b = { 0 };
	int r;

	if (schema == NULL || dw_schema_find_action(schema, u->type, u->id) != NULL)
		return 0;
	if (dw_uid_format(&b, u) != 0)
		return -ENOMEM;
	r = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, pol->src_index, off, end,
			       "policy references unknown action: for policy `%s`, unrecognized "
			       "action `%s`; for policy `%s`, unable to find an applicable action "
			       "given the policy scope constraints", pol->engine_id, b.p,
			       pol->engine_id);
	dw_buf_free(&b);
	if (r != 0)
		return r;
	dw_diags_set_policy(diags, pol->index);
	return -EINVAL;
}

/* --- inert literals ---------------------------------------------------------- */

struct dw_box_ctx {
	const struct dw_policy_set *ps;
	const struct dw_schema *schema;
	const char *home;
	struct dw_diags *diags;
	const struct dw_policy *pol;
	int err;
};

/* Is e `context.input.<field>`?  Returns the field or an empty string. */
static struct dw_str dw_input_field(const struct dw_expr *e)
{
	struct dw_str none = { "", 0 };

	if (e->op != DW_E_ATTR || e->attr.e->op != DW_E_ATTR)
		return none;
	if (!dw_str_eq_c(e->attr.e->attr.name, "input"))
		return none;
	if (e->attr.e->attr.e->op != DW_E_VAR || e->attr.e->attr.e->var != DW_VAR_CONTEXT)
		return none;
	return e->attr.name;
}

static void dw_diag(struct dw_box_ctx *x, enum dw_severity sev, const struct dw_expr *at,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void dw_diag(struct dw_box_ctx *x, enum dw_severity sev, const struct dw_expr *at,
		    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (dw_policy_set_diag(x->ps, x->diags, sev, at->src_index, at->off, at->end, "%s", msg) != 0) {
		x->err = -ENOMEM;
		return;
	}
	dw_diags_set_policy(x->diags, x->pol->index);
	if (sev == DW_SEV_ERROR && x->err == 0)
		x->err = -EINVAL;
}

/* A path literal (pattern text with `*` kept) compared with context.input.path. */
static void dw_check_path_literal(struct dw_box_ctx *x, const struct dw_expr *at,
				  const char *text, bool pattern)
{
	char rule[200], fix[1100];
	size_t n = strlen(text), hl = x->home ? strlen(x->home) : 0;
	const char *what = pattern ? "the pattern " : "";

	dw_rule_short(x->pol, rule, sizeof rule);
	while (hl > 1 && x->home[hl - 1] == '/')
		hl--;
	if (hl > 1 && n >= hl && memcmp(text, x->home, hl) == 0 && (n == hl || text[hl] == '/')) {
		snprintf(fix, sizeof fix, "~%s", text + hl);
		dw_diag(x, DW_SEV_ERROR, at, "policy compares an inert literal: %s compares "
			"context.input.path with %s\"%s\", and a path under the operator home is "
			"spelled ~/…; write \"%s\"", rule, what, text, fix);
		return;
	}
	if (n > 1 && text[n - 1] == '/') {
		size_t k = n;
		while (k > 1 && text[k - 1] == '/')
			k--;
		snprintf(fix, sizeof fix, "%.*s", (int)k, text);
		dw_diag(x, DW_SEV_ERROR, at, "policy compares an inert literal: %s compares "
			"context.input.path with %s\"%s\", and a directory is spelled without a trailing "
			"slash; write \"%s\"", rule, what, text, fix);
		return;
	}
	if (pattern && hl > 1) {
		const char *star = strchr(text, '*');
		const char *h = star ? strstr(star, x->home) : NULL;
		while (h != NULL && !(h[hl] == '/' || h[hl] == '\0'))
			h = strstr(h + 1, x->home);
		if (h != NULL)
			dw_diag(x, DW_SEV_WARNING, at, "%s compares context.input.path with the pattern "
				"\"%s\", which names the operator home after a wildcard; a path under "
				"the operator home is spelled ~/…, so the pattern may match nothing",
				rule, text);
	}
}

/* The pattern as written (stars unescaped, literal stars as \*). */
static char *dw_pattern_text(const struct dw_pattern *p)
{
	size_t len = 1;
	char *s, *o;

	for (uint32_t i = 0; i < p->n_pieces; i++) {
		len += 1;
		for (uint32_t k = 0; k < p->piece[i].n; k++)
			len += p->piece[i].p[k] == '*' ? 2 : 1;
	}
	s = o = malloc(len);
	if (s == NULL)
		return NULL;
	for (uint32_t i = 0; i < p->n_pieces; i++) {
		if (i != 0)
			*o++ = '*';
		for (uint32_t k = 0; k < p->piece[i].n; k++) {
			if (p->piece[i].p[k] == '*')
				*o++ = '\\';
			*o++ = p->piece[i].p[k];
		}
	}
	*o = '\0';
	return s;
}

static void dw_walk(struct dw_box_ctx *x, const struct dw_expr *e)
{
	if (e == NULL || x->err == -ENOMEM)
		return;
	switch (e->op) {
	case DW_E_LIT:
		if (e->lit.kind == DW_V_ENTITY && dw_is_action_uid(e->lit.uid)) {
			int r = dw_unknown_action(x->ps, x->schema, x->pol, e->lit.uid, e->off, e->end,
						  x->diags);
			if (r != 0 && x->err == 0)
				x->err = r;
		}
		return;
	case DW_E_EQ: {
		const struct dw_expr *a = e->k.a, *b = e->k.b;
		if (dw_input_field(b).n != 0) {
			const struct dw_expr *t = a;
			a = b;
			b = t;
		}
		struct dw_str f = dw_input_field(a);
		if (f.n != 0 && b->op == DW_E_LIT && b->lit.kind == DW_V_STRING &&
		    memchr(b->lit.s.p, '\0', b->lit.s.n) == NULL) {
			char *text = strndup(b->lit.s.p, b->lit.s.n);
			if (text == NULL) {
				x->err = -ENOMEM;
				return;
			}
			if (dw_str_eq_c(f, "path")) {
				dw_check_path_literal(x, b, text, false);
			} else if (dw_str_eq_c(f, "program") && strchr(text, '/') != NULL) {
				char rule[200];
				dw_rule_short(x->pol, rule, sizeof rule);
				dw_diag(x, DW_SEV_WARNING, b, "%s compares context.input.program with "
					"\"%s\", which matches only a first word spelled that way; compare "
					"context.input.program_path to match the resolved binary", rule,
					text);
			}
			free(text);
		}
		dw_walk(x, e->k.a);
		dw_walk(x, e->k.b);
		return;
	}
	case DW_E_LIKE:
		if (dw_str_eq_c(dw_input_field(e->like.e), "path")) {
			char *text = dw_pattern_text(e->like.pat);
			if (text == NULL) {
				x->err = -ENOMEM;
				return;
			}
			dw_check_path_literal(x, e, text, true);
			free(text);
		}
		dw_walk(x, e->like.e);
		return;
	case DW_E_NOT: case DW_E_NEG:
		dw_walk(x, e->k.a);
		return;
	case DW_E_AND: case DW_E_OR: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		dw_walk(x, e->k.a);
		dw_walk(x, e->k.b);
		return;
	case DW_E_IF:
		dw_walk(x, e->k.a);
		dw_walk(x, e->k.b);
		dw_walk(x, e->k.c);
		return;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		dw_walk(x, e->attr.e);
		return;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL:
		for (uint32_t i = 0; i < e->n; i++)
			dw_walk(x, e->list.items[i]);
		return;
	default:
		return;
	}
}

/* --- a cap written as a permit ---------------------------------------------
 *
 * Box's rule, clause for clause (docs/policy-reference.md §5): a permit with a
 * temporal clause (the budget) is judged against every other permit whose
 * scope covers it.  The other covers the budget when its principal is
 * unconstrained or constrained exactly as the budget's, its actions include
 * every action of the budget's (an unconstrained action scope includes all;
 * actions form no groups, so names are compared), and its resource scope is
 * not provably disjoint (two different `==` resources are).  Beside a covering
 * permit with no condition and a covering resource scope (unconstrained, or
 * written exactly as the budget's), the budget is refused; beside one whose
 * resource coverage is undecided, or one with a plain condition, it is
 * warned; a temporal other is not judged.  `when { true }` and
 * `unless { false }` are no condition, as Box reads a bare rule. */

enum dw_cap_cond { DW_CAP_NONE, DW_CAP_PLAIN, DW_CAP_TEMPORAL };
enum dw_cap_cover { DW_CAP_COVERS, DW_CAP_DISJOINT, DW_CAP_UNDECIDED };

static bool dw_is_bool_lit(const struct dw_expr *e, bool v)
{
	return e != NULL && e->op == DW_E_LIT && e->lit.kind == DW_V_BOOL && e->lit.b == v;
}

static enum dw_cap_cond dw_cap_condition(const struct dw_policy *p)
{
	if (p->has_temporal)
		return DW_CAP_TEMPORAL;
	for (uint32_t i = 0; i < p->n_conds; i++)
		if (!dw_is_bool_lit(p->conds[i].body, !p->conds[i].unless))
			return DW_CAP_PLAIN;
	return DW_CAP_NONE;
}

/* The same constraint, written the same way (Cedar's constraint equality). */
static bool dw_scope_same(const struct dw_scope *a, const struct dw_scope *b)
{
	if (a->kind != b->kind || a->slot != b->slot)
		return false;
	switch (a->kind) {
	case DW_SC_ANY:
		return true;
	case DW_SC_IS:
		return dw_str_eq(a->type, b->type);
	case DW_SC_IS_IN:
		return dw_str_eq(a->type, b->type) && (a->slot || dw_uid_eq(a->uid, b->uid));
	case DW_SC_IN_LIST:
		if (a->n_list != b->n_list)
			return false;
		for (uint32_t i = 0; i < a->n_list; i++)
			if (!dw_uid_eq(a->list[i], b->list[i]))
				return false;
		return true;
	default:            /* EQ, IN */
		return a->slot || dw_uid_eq(a->uid, b->uid);
	}
}

/* Does action scope sc name u?  (`in X` names X: Cedar keeps `action in X`
 * as a one-element list.) */
static bool dw_scope_names(const struct dw_scope *sc, const struct dw_uid *u)
{
	if (sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN)
		return dw_uid_eq(sc->uid, u);
	for (uint32_t i = 0; sc->kind == DW_SC_IN_LIST && i < sc->n_list; i++)
		if (dw_uid_eq(sc->list[i], u))
			return true;
	return false;
}

/* Every action the budget names is one the other names. */
static bool dw_actions_cover(const struct dw_scope *other, const struct dw_scope *budget)
{
	if (other->kind == DW_SC_ANY)
		return true;
	if (budget->kind == DW_SC_ANY)
		return false;
	if (budget->kind == DW_SC_IN_LIST) {
		for (uint32_t i = 0; i < budget->n_list; i++)
			if (!dw_scope_names(other, budget->list[i]))
				return false;
		return true;
	}
	return dw_scope_names(other, budget->uid);
}

static enum dw_cap_cover dw_resource_cover(const struct dw_scope *other,
					   const struct dw_scope *budget)
{
	if (other->kind == DW_SC_ANY)
		return DW_CAP_COVERS;
	if (other->kind == DW_SC_EQ && budget->kind == DW_SC_EQ && !other->slot && !budget->slot)
		return dw_uid_eq(other->uid, budget->uid) ? DW_CAP_COVERS : DW_CAP_DISJOINT;
	return dw_scope_same(other, budget) ? DW_CAP_COVERS : DW_CAP_UNDECIDED;
}

enum dw_cap_finding { DW_CAP_NOTHING, DW_CAP_REFUSED, DW_CAP_WARNED };

/* What other earns beside the budget (Box's `finding`). */
static enum dw_cap_finding dw_cap_judge(const struct dw_policy *budget,
					const struct dw_policy *other)
{
	enum dw_cap_cond oc;
	enum dw_cap_cover cov;

	if (other == budget || other->effect != DW_PERMIT)
		return DW_CAP_NOTHING;
	oc = dw_cap_condition(other);
	if (oc == DW_CAP_TEMPORAL ||
	    (other->principal.kind != DW_SC_ANY &&
	     !dw_scope_same(&other->principal, &budget->principal)) ||
	    !dw_actions_cover(&other->action, &budget->action))
		return DW_CAP_NOTHING;
	cov = dw_resource_cover(&other->resource, &budget->resource);
	if (cov == DW_CAP_DISJOINT)
		return DW_CAP_NOTHING;
	return oc == DW_CAP_NONE && cov == DW_CAP_COVERS ? DW_CAP_REFUSED : DW_CAP_WARNED;
}

/* Every finding, in Box's order (budgets by position, then the others by
 * position): any refusal, and they are joined by `; ` into one error at the
 * first refused budget (Box then reports no warning); else one warning per
 * finding. */
static int dw_check_caps(const struct dw_policy_set *ps, struct dw_diags *diags, int *err)
{
	struct dw_buf refused = { 0 };
	const struct dw_policy *first = NULL;
	char cap[200], other[200];
	int r = 0;

	for (int want = DW_CAP_REFUSED; want <= DW_CAP_WARNED && first == NULL && r == 0; want++)
		for (uint32_t i = 0; i < ps->n_policies && r == 0; i++) {
			const struct dw_policy *p = ps->policies[i];
			if (p->effect != DW_PERMIT || dw_cap_condition(p) != DW_CAP_TEMPORAL)
				continue;
			for (uint32_t j = 0; j < ps->n_policies && r == 0; j++) {
				const struct dw_policy *q = ps->policies[j];
				if (dw_cap_judge(p, q) != (enum dw_cap_finding)want)
					continue;
				dw_box_rule_name(p, cap, sizeof cap);
				dw_box_rule_name(q, other, sizeof other);
				if (want == DW_CAP_REFUSED) {
					first = first ? first : p;
					r = dw_buf_printf(&refused, "%s%s carries a temporal clause "
							  "beside %s, which permits the same action "
							  "with no condition; a permit cannot narrow "
							  "another permit, so write the cap as a "
							  "forbid", refused.n ? "; " : "", cap, other);
					continue;
				}
				r = dw_policy_set_diag(ps, diags, DW_SEV_WARNING, p->src_index, p->off,
						       p->end, "%s carries a temporal clause beside %s, "
						       "which also permits that action; the budget is "
						       "inert for every request the other rule admits, "
						       "so write a cap as a forbid", cap, other);
				if (r == 0)
					dw_diags_set_policy(diags, p->index);
			}
		}
	if (r == 0 && first != NULL) {
		r = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, first->src_index, first->off,
				       first->end, "policy writes a cap as a permit: %s", refused.p);
		if (r == 0) {
			dw_diags_set_policy(diags, first->index);
			if (*err == 0)
				*err = -EINVAL;
		}
	}
	dw_buf_free(&refused);
	return r != 0 ? -ENOMEM : 0;
}

static bool dw_is_fs_other(const struct dw_uid *u)
{
	return dw_str_eq_c(u->type, "Box::Action") && dw_str_eq_c(u->id, "fs:other");
}

/* --- one @id on two rules --------------------------------------------------- */

/* Is the UTF-8 character at s[*i] white space as Rust's char::is_whitespace
 * has it?  Advances *i past it when it is. */
static bool dw_skip_space(const char *s, size_t n, size_t *i)
{
	static const uint32_t wide[] = { 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f,
					 0x3000 };
	unsigned char c = (unsigned char)s[*i];
	uint32_t cp;
	size_t len;

	if (c == ' ' || (c >= '\t' && c <= '\r')) {
		(*i)++;
		return true;
	}
	if (c < 0xc0)
		return false;
	len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (*i + len > n)
		return false;
	cp = c & (0x7f >> len);
	for (size_t k = 1; k < len; k++)
		cp = cp << 6 | ((unsigned char)s[*i + k] & 0x3f);
	bool ws = cp >= 0x2000 && cp <= 0x200a;
	for (size_t k = 0; !ws && k < sizeof wide / sizeof wide[0]; k++)
		ws = cp == wide[k];
	if (ws)
		*i += len;
	return ws;
}

/* Box counts an @id that is not blank once trimmed. */
static bool dw_id_counts(const struct dw_policy *p)
{
	size_t n, i = 0;

	if (p->id == p->engine_id)
		return false;
	n = strlen(p->id);
	while (i < n)
		if (!dw_skip_space(p->id, n, &i))
			return true;
	return false;
}

static int dw_rule_id_cmp(const void *x, const void *y)
{
	const struct dw_policy *a = *(const struct dw_policy *const *)x;
	const struct dw_policy *b = *(const struct dw_policy *const *)y;
	int c = strcmp(a->id, b->id);

	return c != 0 ? c : (a->index > b->index) - (a->index < b->index);
}

/* Every @id on more than one rule, in one message as Box writes it: the ids
 * in byte order, each with the rules (from 1) that carry it, `@id("a") is on
 * rules 1, 3; @id("b") is on rules 2, 4; a denial …`; at the first of them. */
static int dw_check_shared_ids(const struct dw_policy_set *ps, struct dw_diags *diags, int *err)
{
	const struct dw_policy **v, *at = NULL;
	struct dw_buf msg = { 0 };
	size_t n = 0;
	int r = 0;

	if (ps->n_policies < 2)
		return 0;
	v = malloc(ps->n_policies * sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < ps->n_policies; i++)
		if (dw_id_counts(ps->policies[i]))
			v[n++] = ps->policies[i];
	qsort(v, n, sizeof *v, dw_rule_id_cmp);
	for (size_t i = 0; i < n && r == 0;) {
		size_t j = i + 1;
		while (j < n && strcmp(v[j]->id, v[i]->id) == 0)
			j++;
		if (j - i > 1) {
			r = dw_buf_printf(&msg, "%s@id(\"%s\") is on rules ", msg.n ? "; " : "",
					  v[i]->id);
			for (size_t k = i; k < j && r == 0; k++) {
				r = dw_buf_printf(&msg, "%s%u", k > i ? ", " : "", v[k]->index + 1);
				if (at == NULL || v[k]->index < at->index)
					at = v[k];
			}
		}
		i = j;
	}
	if (r == 0 && at != NULL) {
		r = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, at->src_index, at->off, at->end,
				       "policy gives one @id to more than one rule: %s; a denial and "
				       "a telemetry record name a rule by its @id, so give each rule "
				       "its own @id", msg.p);
		if (r == 0) {
			dw_diags_set_policy(diags, at->index);
			if (*err == 0)
				*err = -EINVAL;
		}
	}
	dw_buf_free(&msg);
	free(v);
	return r != 0 ? -ENOMEM : 0;
}

int dw_box_rules_check(const struct dw_policy_set *ps, const struct dw_schema *schema,
		       const char *home, struct dw_diags *diags)
{
	struct dw_box_ctx x = { ps, schema, home, diags, NULL, 0 };
	const struct dw_policy *first_reserved = NULL;
	struct dw_buf reserved = { 0 };
	char rule[200];

	for (uint32_t i = 0; i < ps->n_policies && x.err != -ENOMEM; i++) {
		const struct dw_policy *pol = ps->policies[i];
		const struct dw_scope *sc = &pol->action;
		int r = 0;

		x.pol = pol;
		/* actions named in the scope must exist */
		if (sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN)
			r = dw_unknown_action(ps, schema, pol, sc->uid, sc->off, sc->end, diags);
		for (uint32_t k = 0; sc->kind == DW_SC_IN_LIST && k < sc->n_list && r != -ENOMEM; k++) {
			int rk = dw_unknown_action(ps, schema, pol, sc->list[k], sc->off, sc->end, diags);
			if (rk != 0)
				r = rk;
		}
		if (r == -ENOMEM) {
			dw_buf_free(&reserved);
			return r;
		}
		if (r != 0 && x.err == 0)
			x.err = r;
		/* a scope naming only fs:other */
		bool only_other = (sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN) && dw_is_fs_other(sc->uid);
		if (sc->kind == DW_SC_IN_LIST && sc->n_list > 0) {
			only_other = true;
			for (uint32_t k = 0; k < sc->n_list; k++)
				if (!dw_is_fs_other(sc->list[k]))
					only_other = false;
		}
		/* every such rule in one refusal, as Box words it */
		if (only_other) {
			dw_box_rule_name(pol, rule, sizeof rule);
			if (dw_buf_printf(&reserved, "%s%s names only the reserved action "
					  "\"fs:other\"", reserved.n ? "; " : "", rule) != 0) {
				dw_buf_free(&reserved);
				return -ENOMEM;
			}
			if (first_reserved == NULL)
				first_reserved = pol;
		}
		dw_walk(&x, pol->cond);
	}
	if (first_reserved != NULL && x.err != -ENOMEM) {
		const struct dw_scope *sc = &first_reserved->action;
		int r = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, first_reserved->src_index,
					   sc->off, sc->end, "policy names only a reserved action: %s; "
					   "no operation raises it, so the rule cannot match; name "
					   "fs:read, fs:write, fs:delete, or fs:move, alone or beside "
					   "fs:other", reserved.p);
		if (r != 0) {
			dw_buf_free(&reserved);
			return -ENOMEM;
		}
		dw_diags_set_policy(diags, first_reserved->index);
		if (x.err == 0)
			x.err = -EINVAL;
	}
	dw_buf_free(&reserved);
	if (x.err != -ENOMEM && dw_check_shared_ids(ps, diags, &x.err) != 0)
		return -ENOMEM;
	if (x.err != -ENOMEM && dw_check_caps(ps, diags, &x.err) != 0)
		return -ENOMEM;
	return x.err;
}
