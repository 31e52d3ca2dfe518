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

void dw_box_rule_name(const struct dw_policy *pol, char *buf, size_t len)
{
	if (pol->id != pol->engine_id && pol->id[0] != '\0')
		snprintf(buf, len, "rule @id(\"%s\") (rule %u)", pol->id, pol->index + 1);
	else
		snprintf(buf, len, "the %s rule with no @id (rule %u)",
			 pol->effect == DW_FORBID ? "forbid" : "permit", pol->index + 1);
}

/* "rule @id("x")" without the number, as the inert-literal texts write it. */
static void dw_rule_short(const struct dw_policy *pol, char *buf, size_t len)
{
	if (pol->id != pol->engine_id && pol->id[0] != '\0')
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

/* Can two action scopes name a common action?  Box's actions form no groups,
 * so names are compared directly; an unconstrained scope names every action. */
static bool dw_scope_has(const struct dw_scope *sc, const struct dw_uid *u)
{
	if (sc->kind == DW_SC_EQ || sc->kind == DW_SC_IN)
		return dw_uid_eq(sc->uid, u);
	for (uint32_t i = 0; sc->kind == DW_SC_IN_LIST && i < sc->n_list; i++)
		if (dw_uid_eq(sc->list[i], u))
			return true;
	return false;
}

static bool dw_scopes_overlap(const struct dw_scope *a, const struct dw_scope *b)
{
	if (a->kind == DW_SC_ANY || b->kind == DW_SC_ANY)
		return true;
	if (a->kind == DW_SC_IN_LIST) {
		for (uint32_t i = 0; i < a->n_list; i++)
			if (dw_scope_has(b, a->list[i]))
				return true;
		return false;
	}
	return dw_scope_has(b, a->uid);
}

/*
 * A cap written as a permit: a permit with a temporal clause beside another
 * permit of the same action.  Permits only widen, so the clause cannot narrow
 * what the other rule admits: refused when the other has no condition,
 * warned when it has one.
 */
static int dw_check_caps(const struct dw_policy_set *ps, struct dw_diags *diags, int *err)
{
	char cap[200], other[200];

	for (uint32_t i = 0; i < ps->n_policies; i++) {
		const struct dw_policy *p = ps->policies[i];
		if (p->effect != DW_PERMIT || !p->has_temporal)
			continue;
		for (uint32_t j = 0; j < ps->n_policies; j++) {
			const struct dw_policy *q = ps->policies[j];
			bool bare;
			if (j == i || q->effect != DW_PERMIT || q->has_temporal ||
			    !dw_scopes_overlap(&p->action, &q->action))
				continue;
			bare = q->n_conds == 0;
			dw_box_rule_name(p, cap, sizeof cap);
			dw_box_rule_name(q, other, sizeof other);
			if (bare && dw_policy_set_diag(ps, diags, DW_SEV_ERROR, p->src_index, p->off,
						       p->end, "policy writes a cap as a permit: %s "
						       "carries a temporal clause beside %s, which "
						       "permits the same action with no condition; a "
						       "permit cannot narrow another permit, so write the "
						       "cap as a forbid", cap, other) != 0)
				return -ENOMEM;
			if (!bare && dw_policy_set_diag(ps, diags, DW_SEV_WARNING, p->src_index, p->off,
							p->end, "%s carries a temporal clause beside %s, "
							"which also permits that action; the budget is "
							"inert for every request the other rule admits, so "
							"write a cap as a forbid", cap, other) != 0)
				return -ENOMEM;
			dw_diags_set_policy(diags, p->index);
			if (bare && *err == 0)
				*err = -EINVAL;
			break;      /* one finding per capped rule */
		}
	}
	return 0;
}

static bool dw_is_fs_other(const struct dw_uid *u)
{
	return dw_str_eq_c(u->type, "Box::Action") && dw_str_eq_c(u->id, "fs:other");
}

int dw_box_rules_check(const struct dw_policy_set *ps, const struct dw_schema *schema,
		       const char *home, struct dw_diags *diags)
{
	struct dw_box_ctx x = { ps, schema, home, diags, NULL, 0 };
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
		if (r == -ENOMEM)
			return r;
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
		if (only_other) {
			dw_box_rule_name(pol, rule, sizeof rule);
			if (dw_policy_set_diag(ps, diags, DW_SEV_ERROR, pol->src_index, sc->off, sc->end,
					       "policy names only a reserved action: %s names only the "
					       "reserved action \"fs:other\"; no operation raises it, so "
					       "the rule cannot match; name fs:read, fs:write, fs:delete, or "
					       "fs:move, alone or beside fs:other", rule) != 0)
				return -ENOMEM;
			dw_diags_set_policy(diags, pol->index);
			if (x.err == 0)
				x.err = -EINVAL;
		}
		dw_walk(&x, pol->cond);
		/* one @id on two rules: reported once, at the first rule carrying it */
		if (pol->id != pol->engine_id && pol->id[0] != '\0') {
			bool first = true;
			for (uint32_t j = 0; j < i && first; j++)
				if (ps->policies[j]->id != ps->policies[j]->engine_id &&
				    strcmp(ps->policies[j]->id, pol->id) == 0)
					first = false;
			struct dw_buf list = { 0 };
			uint32_t count = 0;
			for (uint32_t j = i; first && j < ps->n_policies; j++) {
				const struct dw_policy *q = ps->policies[j];
				if (q->id != q->engine_id && strcmp(q->id, pol->id) == 0) {
					if (dw_buf_printf(&list, "%s%u", count ? ", " : "", j + 1) != 0) {
						dw_buf_free(&list);
						return -ENOMEM;
					}
					count++;
				}
			}
			if (count > 1) {
				int rr = dw_policy_set_diag(ps, diags, DW_SEV_ERROR, pol->src_index,
							    pol->off, pol->end, "policy gives one @id to "
							    "more than one rule: @id(\"%s\") is on rules %s; "
							    "a denial and a telemetry record name a rule by "
							    "its @id, so give each rule its own @id",
							    pol->id, list.p);
				dw_buf_free(&list);
				if (rr != 0)
					return -ENOMEM;
				dw_diags_set_policy(diags, pol->index);
				if (x.err == 0)
					x.err = -EINVAL;
			}
			dw_buf_free(&list);
		}
	}
	if (x.err != -ENOMEM && dw_check_caps(ps, diags, &x.err) != 0)
		return -ENOMEM;
	return x.err;
}
