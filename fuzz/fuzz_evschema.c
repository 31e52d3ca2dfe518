/* fuzz_evschema.c - libFuzzer target: the event-schema (.dwschema) parser
 * (dw_evschema_parse) and derivation against action schemas
 * (dw_evschema_derive).
 *
 * The whole input is one .dwschema text.  When it parses, it is derived
 * against the compiled-in Box action schema and against four small action
 * schemas built to reach derivation's other paths: one with actions in and
 * outside a namespace, an action without appliesTo, nested and optional
 * records, sets, extension types, attribute names holding `.`, a space or
 * nothing, and entity types the .dwschema can name (bare, qualified,
 * `__cedar::`); one whose `context.input` is not a record; one where a dotted
 * attribute name collides with a nested path; and one with no actions.  The
 * parsed source is freed before the derived schema is used (evschema.h: src
 * is not kept), so a dangling pointer into it is an ASan report.
 *
 * A derived schema is checked against the promises of evschema.h: one
 * declaration per (action, kind) in action order, then declaration order,
 * each found by dw_evschema_find; fields and groups strictly sorted, found by
 * their lookups, no path both; a field typed either by a type or by an
 * entity-type set; decision kinds as declared; key fields pinned identically
 * on every declaration.  A broken promise aborts.  An error return without an
 * error diagnostic aborts too (-EINVAL promises diagnostics).
 *
 * The action schemas and the default event schema's derivation are built
 * once, on the first call, and stay reachable from statics (not leaks).
 * Everything built from the input is freed before returning.  Nothing is
 * printed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "evschema.h"
#include "schema.h"
#include "value.h"
#include "box_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Actions in a namespace and outside one, as Drupe in test_evschema.c, plus
 * what derivation handles specially: no appliesTo (empty entity-type sets),
 * optional and required outputs, records nested in records and in sets,
 * empty records, every extension type, and attribute names that are not
 * identifiers.  Entity types named like built-ins (`Edge::Long`) test that a
 * bare name in the action's namespace wins over the built-in, and that
 * `__cedar::Long` does not. */
static const char fz_edge_schema[] =
	"namespace Edge {\n"
	"  entity User = { id: String, dept: String };\n"
	"  entity Robot in [User];\n"
	"  entity Gate;\n"
	"  entity Long;\n"
	"  entity Mode enum [\"on\", \"off\"];\n"
	"  type Meta = { region: String, level: Long, deep: { deeper: { deepest: Bool } } };\n"
	"  type In = { user: String, meta: Meta, extra?: Meta, rows: Set<{ user: String }>,\n"
	"              empty: {}, ip: ipaddr, amount: decimal, at: datetime, dur: duration,\n"
	"              who: User, mode: Mode, tags: Set<String>,\n"
	"              \"a.b\": String, \"c d\": Long, \"\": Bool, \"x\": { \"y.z\": String } };\n"
	"  action \"Login\" appliesTo { principal: [User, Robot], resource: [Gate],\n"
	"                             context: { input: In, output?: { ok: Bool, meta: Meta } } };\n"
	"  action \"Both\" appliesTo { principal: User, resource: Gate,\n"
	"                            context: { input: { x: String }, output: { x: Bool } } };\n"
	"  action \"NoCtx\" appliesTo { principal: Robot, resource: [Gate, User] };\n"
	"  action \"OptIn\" appliesTo { principal: User, resource: Gate,\n"
	"                             context: { input?: { n?: Long, r: { s?: String } } } };\n"
	"  action \"Group\";\n"
	"  action \"Child\" in [\"Group\"] appliesTo { principal: User, resource: Gate,\n"
	"                                         context: { other: String } };\n"
	"}\n"
	"entity Root;\n"
	"entity String;\n"
	"action \"top\" appliesTo { principal: Root, resource: [Root, Edge::Gate],\n"
	"                         context: { input: { n: Long, s: String }, output: { m: Long } } };\n"
	"action \"bare\";\n";

/* context.input is not a record: `...inputs(A)` must be refused. */
static const char fz_bad_input_schema[] =
	"entity U;\n"
	"action \"a\" appliesTo { principal: U, resource: U, context: { input: String } };\n";

/* `input."a.b"` and `input.a.b` would be one dotted path: refused. */
static const char fz_dotted_schema[] =
	"entity U;\n"
	"action \"ok\" appliesTo { principal: U, resource: U, context: { input: { n: Long } } };\n"
	"action \"a\" appliesTo { principal: U, resource: U,\n"
	"                        context: { input: { \"a.b\": String, a: { b: Long } } } };\n";

/* No actions at all: every schema derives to nothing. */
static const char fz_no_action_schema[] = "entity U;\n";

static const struct {
	const char *name, *text;
	size_t len;
} fz_cedar_schemas[] = {
	{ "edge.cedarschema", fz_edge_schema, sizeof fz_edge_schema - 1 },
	{ "bad-input.cedarschema", fz_bad_input_schema, sizeof fz_bad_input_schema - 1 },
	{ "dotted.cedarschema", fz_dotted_schema, sizeof fz_dotted_schema - 1 },
	{ "no-action.cedarschema", fz_no_action_schema, sizeof fz_no_action_schema - 1 },
};

#define FZ_N_CEDAR (sizeof fz_cedar_schemas / sizeof fz_cedar_schemas[0])
#define FZ_N_SCHEMAS (1 + FZ_N_CEDAR)

static struct {
	bool done;
	struct dw_schema *actions[FZ_N_SCHEMAS];   /* [0]: Box's, compiled in */
} fz;

/* Setup failure is a bug in the engine (or this file), not a finding about an
 * input: say why and stop, rather than fuzz with half a setup. */
static void fz_die(const char *what, const struct dw_diags *d)
{
	fprintf(stderr, "fuzz_evschema: setup failed: %s\n", what);
	for (size_t i = 0; d != NULL && i < d->n; i++)
		fprintf(stderr, "  %s:%u:%u: %s\n", d->v[i].file, d->v[i].line, d->v[i].col,
			d->v[i].msg);
	abort();
}

static void fz_check(const struct dw_evschema *es, const struct dw_schema *actions);

static void fz_init(void)
{
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es = NULL;
	struct dw_diags d;

	dw_diags_init(&d);
	fz.actions[0] = dw_schema_new();
	if (fz.actions[0] == NULL || dw_schema_add_box(fz.actions[0], &d) != 0 ||
	    dw_schema_finish(fz.actions[0], &d) != 0)
		fz_die("Box schema", &d);
	for (size_t i = 0; i < FZ_N_CEDAR; i++) {
		struct dw_schema *s = dw_schema_new();

		if (s == NULL ||
		    dw_schema_add_cedar(s, fz_cedar_schemas[i].name, fz_cedar_schemas[i].text,
					fz_cedar_schemas[i].len, &d) != 0 ||
		    dw_schema_finish(s, &d) != 0)
			fz_die(fz_cedar_schemas[i].name, &d);
		fz.actions[1 + i] = s;
	}
	/* The default event schema must derive against Box and pass the same
	 * checks as any input (a seed holds its text too). */
	if (dw_evschema_default(&src) != 0 || dw_evschema_derive(src, fz.actions[0], &es, &d) != 0)
		fz_die("default event schema", &d);
	dw_evschema_src_free(src);
	fz_check(es, fz.actions[0]);
	dw_evschema_free(es);
	dw_diags_fini(&d);
	fz.done = true;
}

static bool fz_str_in(const struct dw_str *v, uint32_t n, struct dw_str s)
{
	for (uint32_t i = 0; i < n; i++)
		if (dw_str_eq(v[i], s))
			return true;
	return false;
}

/* One field of a derived declaration. */
static void fz_check_field(const struct dw_evdecl *d, const struct dw_evfield *f,
			   struct dw_buf *b)
{
	if (dw_evdecl_field(d, f->path) != f || dw_evdecl_is_group(d, f->path))
		abort();
	/* typed by a type, or by an entity-type set (possibly empty), not both */
	if (f->type != NULL && (f->n_etypes != 0 || f->etypes != NULL))
		abort();
	if (f->type == NULL && f->n_etypes != 0 && f->etypes == NULL)
		abort();
	for (uint32_t k = 0; k < f->n_etypes; k++)
		if (f->etypes[k] == NULL || f->etypes[k]->name.n == 0)
			abort();
	if (f->pin > DW_PIN_CONTEXT || (f->pin == DW_PIN_NONE && f->pin_path.n != 0) ||
	    (f->pin == DW_PIN_CONTEXT && f->pin_path.n == 0))
		abort();
	if (f->type != NULL) {
		(void)dw_type_format(b, f->type);
		b->n = 0;
	}
}

static void fz_check_decl(const struct dw_evschema *es, const struct dw_schema *actions,
			  uint32_t i, struct dw_buf *b)
{
	const struct dw_evdecl *d = es->decls[i];
	uint32_t k = i % es->n_kinds;

	/* action order, then declaration order */
	if (d == NULL || d->index != i || d->action != actions->actions[i / es->n_kinds] ||
	    !dw_str_eq(d->ns, d->action->type) || !dw_str_eq(d->id, d->action->id) ||
	    !dw_str_eq(d->kind, es->kinds[k]) || d->decision != es->kind_decides[k])
		abort();
	if (dw_evschema_find(es, d->ns, d->id, d->kind) != d)
		abort();
	for (uint32_t j = 0; j < d->n_fields; j++) {
		if (j > 0 && dw_str_cmp(d->fields[j - 1].path, d->fields[j].path) >= 0)
			abort();
		fz_check_field(d, &d->fields[j], b);
	}
	for (uint32_t j = 0; j < d->n_groups; j++) {
		if (j > 0 && dw_str_cmp(d->groups[j - 1], d->groups[j]) >= 0)
			abort();
		if (!dw_evdecl_is_group(d, d->groups[j]) || dw_evdecl_field(d, d->groups[j]) != NULL)
			abort();
	}
}

/* The promises of evschema.h about a derived schema. */
static void fz_check(const struct dw_evschema *es, const struct dw_schema *actions)
{
	struct dw_buf b = { 0 };

	if (es->max_window_s <= 0 ||
	    (size_t)es->n_decls != (size_t)actions->n_actions * es->n_kinds)
		abort();
	for (uint32_t k = 0; k < es->n_kinds; k++) {
		/* kinds are distinct, so each decides as declared */
		if (fz_str_in(es->kinds, k, es->kinds[k]) ||
		    dw_evschema_decides(es, es->kinds[k]) != es->kind_decides[k])
			abort();
	}
	for (uint32_t i = 0; i < es->n_decls; i++)
		fz_check_decl(es, actions, i, &b);
	for (uint32_t j = 0; j < es->n_key_fields; j++) {
		const struct dw_evfield *f = &es->key_fields[j];

		if (f->pin == DW_PIN_NONE ||
		    (j > 0 && dw_str_cmp(es->key_fields[j - 1].path, f->path) >= 0))
			abort();
		for (uint32_t i = 0; i < es->n_decls; i++) {
			const struct dw_evfield *g = dw_evdecl_field(es->decls[i], f->path);

			if (g == NULL || g->pin != f->pin || !dw_str_eq(g->pin_path, f->pin_path))
				abort();
		}
	}
	/* lookups of what is not there */
	if (dw_evschema_find(es, dw_str_c("No::Action"), dw_str_c("x"), dw_str_c("request")) != NULL ||
	    dw_evschema_decides(es, dw_str_c("")))
		abort();
	dw_buf_free(&b);
}

/* -EINVAL promises an error diagnostic (more than the n_before there were);
 * nothing else but -ENOMEM may come back. */
static void fz_check_failure(int r, const struct dw_diags *d, size_t n_before)
{
	if (r == -ENOMEM)
		return;
	if (r != -EINVAL || d->n_errors <= n_before)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es[FZ_N_SCHEMAS] = { NULL };
	struct dw_diags d;
	int r;

	if (!fz.done)
		fz_init();
	dw_diags_init(&d);
	r = dw_evschema_parse("fuzz.dwschema", (const char *)data, size, &src, &d);
	if (r != 0) {
		fz_check_failure(r, &d, 0);
		dw_diags_fini(&d);
		return 0;
	}
	for (size_t i = 0; i < FZ_N_SCHEMAS; i++) {
		size_t n_before = d.n_errors;

		r = dw_evschema_derive(src, fz.actions[i], &es[i], &d);
		if (r != 0) {
			fz_check_failure(r, &d, n_before);
			es[i] = NULL;
		}
	}
	dw_evschema_src_free(src);   /* derived schemas must not point into it */
	for (size_t i = 0; i < FZ_N_SCHEMAS; i++) {
		if (es[i] != NULL)
			fz_check(es[i], fz.actions[i]);
		dw_evschema_free(es[i]);
	}
	dw_diags_fini(&d);
	return 0;
}
