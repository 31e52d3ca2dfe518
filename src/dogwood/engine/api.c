/* api.c - the public API (include/dogwood.h) over the engine's modules. */
#include "json_load.h"
#include "dogwood.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "authz.h"
#include "box_rules.h"
#include "denial.h"
#include "diag.h"
#include "engine.h"
#include "event.h"
#include "json_value.h"
#include "policyset.h"
#include "schema.h"
#include "store.h"
#include "tcheck.h"
#include "tplan.h"
#include "validate.h"
#include "temporal.h"
#include "tmacro.h"

/* ---- diagnostics ---- */

struct dw_diags *dw_diags_new(void)
{
	struct dw_diags *d = malloc(sizeof *d);

	if (d != NULL)
		dw_diags_init(d);
	return d;
}

void dw_diags_free(struct dw_diags *d)
{
	if (d == NULL)
		return;
	dw_diags_fini(d);
	free(d);
}

size_t dw_diags_count(const struct dw_diags *d)
{
	return d->n;
}

size_t dw_diags_errors(const struct dw_diags *d)
{
	return d->n_errors;
}

int dw_diags_get(const struct dw_diags *d, size_t i, struct dw_diagnostic *out)
{
	const struct dw_diag *g;

	if (i >= d->n)
		return -EINVAL;
	g = &d->v[i];
	out->severity = g->sev == DW_SEV_ERROR ? DW_DIAG_ERROR : DW_DIAG_WARNING;
	out->file = g->file;
	out->line = g->line;
	out->col = g->col;
	out->end_line = g->end_line;
	out->end_col = g->end_col;
	out->message = g->msg;
	out->line_text = g->line_text;
	out->rule = g->policy ? (long)g->policy - 1 : -1;
	return 0;
}

/* ---- engine ---- */

void dw_engine_free(struct dw_engine *eng)
{
	if (eng == NULL)
		return;
	dw_tplan_free(eng->plan);
	dw_evschema_free(eng->events);
	dw_authz_free(eng->authz);
	dw_store_free(eng->store);
	dw_policy_set_free(eng->ps);
	dw_schema_free(eng->schema);
	free(eng);
}

static int dw_load_schema(struct dw_engine *eng, const struct dw_engine_config *cfg,
			  struct dw_diags *diags)
{
	int r = 0;

	if (cfg->n_schemas == 0 && (cfg->flags & DW_NO_BOX_SCHEMA))
		return 0;
	eng->schema = dw_schema_new();
	if (eng->schema == NULL)
		return -ENOMEM;
	if (cfg->n_schemas == 0)
		r = dw_schema_add_box(eng->schema, diags);
	for (size_t i = 0; i < cfg->n_schemas && r == 0; i++) {
		const struct dw_input *in = &cfg->schemas[i];
		if (in->format == DW_FMT_JSON)
			r = dw_schema_add_json(eng->schema, in->file, in->text, in->len, diags);
		else
			r = dw_schema_add_cedar(eng->schema, in->file, in->text, in->len, diags);
	}
	if (r == 0)
		r = dw_schema_finish(eng->schema, diags);
	return r;
}

/* The event schema: the configured .dwschema or Box's default, derived against
 * the action schema (none without an action schema). */
static int dw_load_events(struct dw_engine *eng, const struct dw_engine_config *cfg,
			  struct dw_diags *diags)
{
	struct dw_evschema_src *src = NULL;
	int r;

	eng->max_window_s = DW_DEFAULT_MAX_WINDOW_S;
	if (cfg->event_schema != NULL)
		r = dw_evschema_parse(cfg->event_schema->file, cfg->event_schema->text,
				      cfg->event_schema->len, &src, diags);
	else
		r = dw_evschema_default(&src);
	if (r == 0 && eng->schema != NULL)
		r = dw_evschema_derive(src, eng->schema, &eng->events, diags);
	dw_evschema_src_free(src);
	if (r == 0 && eng->events != NULL)
		eng->max_window_s = eng->events->max_window_s;
	return r;
}

/* Box names the class of a load refusal before the engine's words
 * (docs/policy-reference.md §1): each error diagnostic from first on gets
 * prefix, or, for the information-provider refusal, alt (Box raises that one
 * itself, after Dogwood parsed the set). */
static void dw_box_prefix(struct dw_diags *diags, size_t first, const char *prefix,
			  const char *alt)
{
	static const char providers[] = "information providers are not enabled in this build";

	for (size_t i = first; i < diags->n; i++) {
		struct dw_diag *g = &diags->v[i];
		const char *m;
		if (g->sev != DW_SEV_ERROR)
			continue;
		m = dw_arena_printf(&diags->arena, "%s%s",
				    alt && strcmp(g->msg, providers) == 0 ? alt : prefix, g->msg);
		if (m != NULL)
			g->msg = m;
	}
}

int dw_engine_new(const struct dw_engine_config *cfg, struct dw_engine **out,
		  struct dw_diags *diags)
{
	/* what Dogwood's parse phase refuses: syntax, macros, structure (§7) */
	static const char parse_prefix[] = "failed to parse policy source: dogwood parse: ";
	static const char provider_prefix[] = "failed to parse policy source: dogwood: ";
	bool box = cfg->flags & DW_BOX_RULES;
	size_t parse_first;
	struct dw_engine *eng = calloc(1, sizeof *eng);
	enum dw_dialect dialect = DW_DIALECT_CEDAR;
	int r;

	if (eng == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_policies; i++)
		if (cfg->policies[i].format == DW_FMT_DOGWOOD)
			dialect = DW_DIALECT_DOGWOOD;
	r = dw_load_schema(eng, cfg, diags);
	if (r != 0)
		goto fail;
	parse_first = diags->n;
	eng->ps = dw_policy_set_new_temporal(dialect);
	if (eng->ps == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	if (dialect == DW_DIALECT_DOGWOOD) {
		if (cfg->n_macros == 0)
			r = dw_parse_macro_library(eng->ps, "<default macros>", dw_default_macros,
						   strlen(dw_default_macros), diags);
		for (size_t i = 0; i < cfg->n_macros && r == 0; i++)
			r = dw_parse_macro_library(eng->ps, cfg->macros[i].file, cfg->macros[i].text,
						   cfg->macros[i].len, diags);
		if (r != 0)
			goto fail;
	}
	/* Parse every file even after one fails, so one run reports them all. */
	for (size_t i = 0; i < cfg->n_policies; i++) {
		const struct dw_input *in = &cfg->policies[i];
		int pr = dw_parse_policies(eng->ps, in->file, in->text, in->len, diags);
		if (pr == -ENOMEM) {
			r = pr;
			goto fail;
		}
		if (pr != 0)
			r = pr;
	}
	if (r == 0)
		r = dw_policy_set_expand(eng->ps, diags);
	if (r != 0) {
		/* a .cedar file keeps Cedar's own words (Box loads only Dogwood) */
		if (box && dialect == DW_DIALECT_DOGWOOD)
			dw_box_prefix(diags, parse_first, parse_prefix, provider_prefix);
		goto fail;
	}
	if ((r = dw_load_events(eng, cfg, diags)) != 0)
		goto fail;
	/* a temporal leaf that breaks an acceptance rule (docs/policy-reference.md
	 * §3.6) cannot be evaluated: refused whatever the flags */
	parse_first = diags->n;
	if (dialect == DW_DIALECT_DOGWOOD && (r = dw_tcheck_accept(eng->ps, diags)) != 0) {
		if (box)
			dw_box_prefix(diags, parse_first, parse_prefix, NULL);
		goto fail;
	}
	if ((cfg->flags & DW_BOX_RULES) && (r = dw_box_rules_check(eng->ps, eng->schema, cfg->home, diags)) != 0)
		goto fail;
	if ((cfg->flags & DW_VALIDATE) && eng->schema != NULL) {
		static const char schema_prefix[] = "policy fails schema validation: ";
		size_t first = diags->n;
		r = dw_validate(eng->ps, eng->schema, diags);
		if (box)
			dw_box_prefix(diags, first, schema_prefix, NULL);
		if (r == 0 && dialect == DW_DIALECT_DOGWOOD && eng->events != NULL) {
			first = diags->n;
			r = dw_tcheck_validate(eng->ps, eng->schema, eng->events, diags);
			if (box)
				dw_box_prefix(diags, first, schema_prefix, NULL);
		}
		if (r != 0)
			goto fail;
	}
	if ((r = dw_tplan_build(eng->ps, eng->events, &eng->plan)) != 0)
		goto fail;
	eng->store = dw_store_new();
	if (eng->store == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < cfg->n_entities && r == 0; i++)
		r = dw_store_add_json(eng->store, eng->schema, cfg->entities[i].file,
				      cfg->entities[i].text, cfg->entities[i].len, diags);
	if (r == 0)
		r = dw_store_finish(eng->store, eng->schema, diags);
	if (r == 0)
		r = dw_authz_new(eng->ps, eng->store, !(cfg->flags & DW_NO_INDEX), &eng->authz);
	if (r != 0)
		goto fail;
	*out = eng;
	return 0;
fail:
	dw_engine_free(eng);
	return r;
}

int dw_engine_validate(const struct dw_engine *eng, struct dw_diags *diags)
{
	if (eng->schema == NULL)
		return 0;
	return dw_validate(eng->ps, eng->schema, diags);
}

size_t dw_engine_rule_count(const struct dw_engine *eng)
{
	return eng->ps->n_policies;
}

int dw_engine_rule_info(const struct dw_engine *eng, size_t i, const char **engine_id,
			const char **annotation_id, bool *temporal)
{
	const struct dw_policy *pol;

	if (i >= eng->ps->n_policies)
		return -EINVAL;
	pol = eng->ps->policies[i];
	if (engine_id)
		*engine_id = pol->engine_id;
	if (annotation_id)
		*annotation_id = pol->id != pol->engine_id ? pol->id : NULL;
	if (temporal)
		*temporal = pol->has_temporal;
	return 0;
}

size_t dw_engine_leaf_count(const struct dw_engine *eng)
{
	return eng->plan ? eng->plan->n_leaves : 0;
}

int dw_engine_leaf_info(const struct dw_engine *eng, size_t i, size_t *rule, bool *incremental,
			const char **why, int64_t *span_s)
{
	const struct dw_tleaf *lf;

	if (eng->plan == NULL || i >= eng->plan->n_leaves)
		return -EINVAL;
	lf = &eng->plan->leaves[i];
	if (rule)
		*rule = lf->rule;
	if (incremental)
		*incremental = lf->incremental;
	if (why)
		*why = lf->why;
	if (span_s)
		*span_s = lf->span_s;
	return 0;
}

bool dw_engine_leaf_pending_blind(const struct dw_engine *eng, size_t i)
{
	return eng->plan != NULL && i < eng->plan->n_leaves && eng->plan->leaves[i].pending_blind;
}

/* Could a temporal condition match an event of action?  Every predicate
 * naming it, or naming an action not known here (a macro's parameter, an
 * unexpanded call), says yes. */
static bool term_watches(const struct dw_tterm *t, struct dw_str action);

static bool node_watches(const struct dw_tnode *n, struct dw_str action)
{
	if (n == NULL)
		return false;
	switch (n->kind) {
	case DW_TN_PRED:
		return n->pred == NULL || n->pred->param.n != 0 || n->pred->action.n == 0 ||
		       dw_str_eq(n->pred->action, action);
	case DW_TN_CALL:
	case DW_TN_PARAM:
		return true;
	case DW_TN_CMP:
		return term_watches(n->lhs, action) || term_watches(n->rhs, action);
	default:
		return node_watches(n->a, action) || node_watches(n->b, action);
	}
}

static bool term_watches(const struct dw_tterm *t, struct dw_str action)
{
	if (t == NULL)
		return false;
	switch (t->kind) {
	case DW_TT_AGG:
		return t->agg == NULL || node_watches(t->agg->where, action);
	case DW_TT_CALL:
		return true;
	case DW_TT_ARRAY:
		for (uint32_t i = 0; i < t->n_items; i++)
			if (term_watches(&t->items[i], action))
				return true;
		return false;
	default:
		return false;
	}
}

bool dw_engine_watches_action(const struct dw_engine *eng, const char *action)
{
	if (eng->plan == NULL)
		return false;
	struct dw_str a = dw_str_c(action);
	for (uint32_t i = 0; i < eng->plan->n_leaves; i++) {
		const struct dw_temporal *t = eng->plan->leaves[i].t;
		if (t == NULL || node_watches(t->cond, a) || term_watches(t->agg, a))
			return true;
	}
	return false;
}

/* ---- requests ---- */

static const struct dw_uid dw_unspecified[3] = {
	{ DW_STR_LIT("Box::Agent"), DW_STR_LIT("self"), 0 },
	{ DW_STR_LIT("Box::Action"), DW_STR_LIT(""), 0 },
	{ DW_STR_LIT("Box::Resource"), DW_STR_LIT("unused"), 0 },
};

struct dw_request *dw_request_new(void)
{
	struct dw_request *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	dw_arena_init(&r->arena);
	/* a first chunk, kept by dw_request_reset, so a reused request allocates
	 * nothing */
	if (dw_arena_alloc(&r->arena, 1, 1) == NULL) {
		free(r);
		return NULL;
	}
	r->base = dw_arena_mark(&r->arena);
	r->context = &dw_empty_rec;
	return r;
}

void dw_request_reset(struct dw_request *r)
{
	dw_arena_reset(&r->arena, r->base);
	r->var[0] = r->var[1] = r->var[2] = NULL;
	r->context = &dw_empty_rec;
	r->subject = r->note = NULL;
}

void dw_request_free(struct dw_request *r)
{
	if (r == NULL)
		return;
	dw_arena_fini(&r->arena);
	free(r);
}

static int dw_request_set(struct dw_request *r, int which, const char *type, const char *id,
			  size_t id_len)
{
	struct dw_uid *u = dw_uid_new(&r->arena, dw_str_c(type), dw_str_make(id, id_len));

	if (u == NULL)
		return -ENOMEM;
	r->var[which] = u;
	return 0;
}

int dw_request_set_principal(struct dw_request *r, const char *type, const char *id, size_t id_len)
{
	return dw_request_set(r, 0, type, id, id_len);
}

int dw_request_set_action(struct dw_request *r, const char *type, const char *id, size_t id_len)
{
	return dw_request_set(r, 1, type, id, id_len);
}

int dw_request_set_resource(struct dw_request *r, const char *type, const char *id, size_t id_len)
{
	return dw_request_set(r, 2, type, id, id_len);
}

static const struct dw_action *dw_request_action(const struct dw_request *r,
						 const struct dw_engine *eng)
{
	if (eng->schema == NULL || r->var[1] == NULL)
		return NULL;
	return dw_schema_find_action(eng->schema, r->var[1]->type, r->var[1]->id);
}

int dw_request_set_context_json(struct dw_request *r, const struct dw_engine *eng,
				const char *json, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = dw_json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	const struct dw_rec *rec = NULL;
	char msg[512];
	int rc;

	if (j == NULL) {
		if (errlen)
			snprintf(err, errlen, "context: line %d column %d: %s", je.line, je.column,
				 je.text);
		return -EINVAL;
	}
	rc = dw_json_context(&r->arena, eng->schema, dw_request_action(r, eng), j, &rec, msg,
			     sizeof msg);
	json_decref(j);
	if (rc != 0) {
		if (errlen)
			snprintf(err, errlen, "%s", msg);
		return rc;
	}
	r->context = rec;
	return 0;
}

static int input_str(struct dw_request *r, const char *s, size_t len, struct dw_str *out,
		     const char *name, char *err, size_t errlen)
{
	size_t bad;
	if (len > UINT32_MAX || !dw_utf8_valid(s, len, &bad)) {
		if (errlen)
			snprintf(err, errlen, "input.%s: not UTF-8", name);
		return -EINVAL;
	}
	char *c = dw_arena_strndup(&r->arena, s, len);
	if (c == NULL)
		return -ENOMEM;
	*out = (struct dw_str){ c, (uint32_t)len };
	return 0;
}

int dw_request_set_input(struct dw_request *r, const struct dw_input_attr *attrs, size_t n, char *err,
			 size_t errlen)
{
	if (n > 64) {
		if (errlen)
			snprintf(err, errlen, "input: %zu attributes", n);
		return -EINVAL;
	}
	struct dw_field f[64];
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct dw_input_attr *a = &attrs[i];
		struct dw_str s;
		if ((rc = input_str(r, a->name, strlen(a->name), &f[i].key, a->name, err,
				    errlen)) != 0)
			return rc;
		switch (a->kind) {
		case DW_ATTR_STRING:
			if ((rc = input_str(r, a->s, a->len, &s, a->name, err, errlen)) != 0)
				return rc;
			f[i].val = dw_val_string(s);
			break;
		case DW_ATTR_LONG:
			f[i].val = dw_val_long(a->i);
			break;
		case DW_ATTR_BOOL:
			f[i].val = dw_val_bool(a->b);
			break;
		case DW_ATTR_ENTITY: {
			struct dw_str t;
			if ((rc = input_str(r, a->type, strlen(a->type), &t, a->name, err,
					    errlen)) != 0 ||
			    (rc = input_str(r, a->s, a->len, &s, a->name, err, errlen)) != 0)
				return rc;
			const struct dw_uid *u = dw_uid_new(&r->arena, t, s);
			if (u == NULL)
				return -ENOMEM;
			f[i].val = dw_val_entity(u);
			break;
		}
		default:
			if (errlen)
				snprintf(err, errlen, "input.%s: unknown kind", a->name);
			return -EINVAL;
		}
	}
	/* in name order, the record needs no sorting (and no allocation) */
	uint32_t dup = UINT32_MAX;
	const struct dw_rec *in = dw_rec_build(&r->arena, f, (uint32_t)n, &dup);
	if (in == NULL && dup != UINT32_MAX) {
		if (errlen)
			snprintf(err, errlen, "input.%s: named twice", attrs[dup].name);
		return -EINVAL;
	}
	if (in == NULL)
		return -ENOMEM;
	struct dw_field top = { { "input", 5 }, { .kind = DW_V_RECORD, .rec = in } };
	const struct dw_rec *ctx = dw_rec_build(&r->arena, &top, 1, &dup);
	if (ctx == NULL)
		return -ENOMEM;
	r->context = ctx;
	return 0;
}

int dw_request_set_subject(struct dw_request *r, const char *text)
{
	if (text == NULL || *text == '\0') {
		r->subject = NULL;
		return 0;
	}
	r->subject = dw_arena_strdup(&r->arena, text);
	return r->subject ? 0 : -ENOMEM;
}

int dw_request_set_note(struct dw_request *r, const char *text)
{
	size_t n, bad;
	char *copy;

	if (text == NULL || *text == '\0') {
		r->note = NULL;
		return 0;
	}
	/* the history's codec refuses anything else (event_codec.c) */
	n = strnlen(text, DW_NOTE_MAX + 1);
	if (n > DW_NOTE_MAX || !dw_utf8_valid(text, n, &bad))
		return -EINVAL;
	if ((copy = dw_arena_strndup(&r->arena, text, n)) == NULL)
		return -ENOMEM;
	r->note = copy;
	return 0;
}

int dw_request_validate(const struct dw_request *r, const struct dw_engine *eng, char *err,
			size_t errlen)
{
	if (eng->schema == NULL)
		return 0;
	for (int i = 0; i < 3; i++) {
		if (r->var[i] == NULL) {
			if (errlen)
				snprintf(err, errlen, "request has no %s",
					 i == 0 ? "principal" : i == 1 ? "action" : "resource");
			return -EINVAL;
		}
	}
	return dw_request_check(eng->schema, r->var[0], r->var[1], r->var[2], r->context, err,
				errlen);
}

/* ---- decisions ---- */

struct dw_decision_priv {
	struct dw_arena arena;
	struct dw_buf text;
};

const char *dw_cause_name(enum dw_cause c)
{
	switch (c) {
	case DW_CAUSE_PERMITTED: return "permitted";
	case DW_CAUSE_FORBIDDEN: return "forbidden";
	case DW_CAUSE_NO_MATCH: return "no_match";
	case DW_CAUSE_INTERNAL_FAULT: return "internal_fault";
	}
	return "internal_fault";
}

void dw_decision_clear(struct dw_decision *d)
{
	struct dw_decision_priv *p = d->priv_;

	if (p != NULL) {
		dw_arena_fini(&p->arena);
		dw_buf_free(&p->text);
		free(p);
	}
	memset(d, 0, sizeof *d);
	d->cause = DW_CAUSE_INTERNAL_FAULT;
}

int dw_engine_decide(const struct dw_engine *eng, const struct dw_uid *const var[3],
		     const struct dw_rec *context, const char *subject, dw_temporal_fn fn,
		     dw_rule_gate_fn gate, void *fn_arg, struct dw_decision *out)
{
	struct dw_decision_priv *p;
	struct dw_authz_result res;
	struct dw_rule_ref *refs;
	struct dw_rule_error *errs;
	int rc;

	memset(out, 0, sizeof *out);
	out->verdict = out->cedar = DW_DENY;
	out->cause = DW_CAUSE_INTERNAL_FAULT;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return -ENOMEM;
	dw_arena_init(&p->arena);
	out->priv_ = p;
	rc = dw_authz_decide(eng->authz, var[0], var[1], var[2], context, fn, gate, fn_arg,
			     &p->arena, &res);
	if (rc != 0)
		return rc;
	refs = DW_NEWN(&p->arena, struct dw_rule_ref, res.n_reasons ? res.n_reasons : 1);
	errs = DW_NEWN(&p->arena, struct dw_rule_error, res.n_errors ? res.n_errors : 1);
	if (refs == NULL || errs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < res.n_reasons; i++) {
		const struct dw_policy *pol = eng->ps->policies[res.reasons[i]];
		refs[i].index = res.reasons[i];
		refs[i].engine_id = pol->engine_id;
		refs[i].id = pol->id;
		refs[i].description = pol->description;
	}
	for (uint32_t i = 0; i < res.n_errors; i++) {
		errs[i].index = res.errors[i].policy;
		errs[i].engine_id = eng->ps->policies[res.errors[i].policy]->engine_id;
		errs[i].message = res.errors[i].msg;
	}
	out->cedar = res.allow ? DW_ALLOW : DW_DENY;
	out->n_reasons = res.n_reasons;
	out->reasons = refs;
	out->n_errors = res.n_errors;
	out->errors = errs;
	if (res.n_errors != 0)
		out->cause = DW_CAUSE_INTERNAL_FAULT;   /* an evaluation error denies */
	else if (res.allow)
		out->cause = DW_CAUSE_PERMITTED;
	else if (res.n_reasons != 0)
		out->cause = DW_CAUSE_FORBIDDEN;
	else
		out->cause = DW_CAUSE_NO_MATCH;
	out->verdict = out->cause == DW_CAUSE_PERMITTED ? DW_ALLOW : DW_DENY;
	rc = dw_denial_format(&p->text, out->cause, subject, refs,
			      out->cause == DW_CAUSE_FORBIDDEN ? res.n_reasons : 0);
	if (rc != 0) {
		out->verdict = DW_DENY;
		out->cause = DW_CAUSE_INTERNAL_FAULT;
		return rc;
	}
	out->text = p->text.p;
	return 0;
}

int dw_decision_fail(struct dw_decision *out, const char *subject, const char *msg)
{
	struct dw_decision_priv *p;
	struct dw_rule_error *e;

	memset(out, 0, sizeof *out);
	out->verdict = out->cedar = DW_DENY;
	out->cause = DW_CAUSE_INTERNAL_FAULT;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return -ENOMEM;
	dw_arena_init(&p->arena);
	out->priv_ = p;
	e = DW_NEW(&p->arena, struct dw_rule_error);
	if (e == NULL || (e->message = dw_arena_strdup(&p->arena, msg)) == NULL)
		return -ENOMEM;
	e->index = SIZE_MAX;
	e->engine_id = "";
	out->n_errors = 1;
	out->errors = e;
	if (dw_denial_format(&p->text, out->cause, subject, NULL, 0) != 0)
		return -ENOMEM;
	out->text = p->text.p;
	return 0;
}

int dw_authorize(const struct dw_engine *eng, const struct dw_request *r, struct dw_decision *out)
{
	const struct dw_uid *var[3];
	struct dw_uid fixed[3];

	for (int i = 0; i < 3; i++) {
		var[i] = r->var[i];
		if (var[i] == NULL) {
			/* Box fixes principal and resource: an unset one is Box's */
			dw_uid_init(&fixed[i], dw_unspecified[i].type, dw_unspecified[i].id);
			var[i] = &fixed[i];
		}
	}
	return dw_engine_decide(eng, var, r->context, r->subject, NULL, NULL, NULL, out);
}
