/* test_evschema.c - event schemas (src/dogwood/temporal/evschema.c): the `.dwschema`
 * parser and its errors, the default schema against the Box actions,
 * derivation (spreads, nested records, entity-type sets, optionality, type
 * names), pins and universal symmetric pins, lookups.
 *
 * Expected shapes and messages follow docs/formats.md §3 and
 * the reference's own tests (dogwood-language/src/event_schema/{parse,derive,
 * relativize}.rs), restated here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evschema.h"
#include "schema.h"
#include "test.h"
#include "box_rules.h"

/* ---- helpers ---------------------------------------------------------------- */

static const struct dw_diag *first_error(const struct dw_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].sev == DW_SEV_ERROR)
			return &d->v[i];
	return NULL;
}

static void dump_diags(const struct dw_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "    %s:%u:%u: %s\n", d->v[i].file, d->v[i].line, d->v[i].col,
			d->v[i].msg);
}

/* A finished action schema from .cedarschema text; NULL (and a failed check)
 * when it does not load. */
static struct dw_schema *actions_from(const char *text)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = s == NULL ? -ENOMEM : dw_schema_add_cedar(s, "t.cedarschema", text, strlen(text), &d);
	if (r == 0)
		r = dw_schema_finish(s, &d);
	if (r != 0) {
		fprintf(stderr, "  action schema failed to load:\n");
		dump_diags(&d);
		CHECK(0);
		dw_schema_free(s);
		s = NULL;
	}
	dw_diags_fini(&d);
	return s;
}

static struct dw_schema *box_actions(void)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;

	dw_diags_init(&d);
	CHECK_EQ_INT(dw_schema_add_box(s, &d), 0);
	CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
	dw_diags_fini(&d);
	return s;
}

/* Parse and derive; NULL (and a failed check naming the caller's line) when
 * either step fails. */
static struct dw_evschema *derive_at(int line_no, const char *text, const struct dw_schema *s)
{
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es = NULL;
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = text ? dw_evschema_parse("t.dwschema", text, strlen(text), &src, &d)
		 : dw_evschema_default(&src);
	if (r == 0)
		r = dw_evschema_derive(src, s, &es, &d);
	if (r != 0 || d.n_errors != 0) {
		test_failed++;
		fprintf(stderr, "%s:%d: event schema refused (%d):\n", __FILE__, line_no, r);
		dump_diags(&d);
	} else {
		test_passed++;
	}
	dw_evschema_src_free(src);
	dw_diags_fini(&d);
	return es;
}

#define DERIVE(text, s) derive_at(__LINE__, (text), (s))

/* The text must be refused by the parser with an error at line:col (0: not
 * checked) whose message contains want; *out stays untouched. */
static void parse_error_at(int line_no, const char *text, size_t len, unsigned line, unsigned col,
			   const char *want)
{
	struct dw_evschema_src *sentinel = (struct dw_evschema_src *)&sentinel, *src = sentinel;
	struct dw_diags d;
	const struct dw_diag *e;
	int r;

	dw_diags_init(&d);
	r = dw_evschema_parse("bad.dwschema", text, len, &src, &d);
	e = first_error(&d);
	if (r != -EINVAL || src != sentinel || e == NULL || (line && e->line != line) ||
	    (col && e->col != col) || strstr(e->msg, want) == NULL ||
	    strcmp(e->file, "bad.dwschema") != 0) {
		test_failed++;
		fprintf(stderr, "%s:%d: expected parse error %u:%u \"%s\" for:\n%s\n  got %d:\n",
			__FILE__, line_no, line, col, want, text, r);
		dump_diags(&d);
	} else {
		test_passed++;
	}
	if (src != sentinel)
		dw_evschema_src_free(src);
	dw_diags_fini(&d);
}

#define PARSE_ERROR(text, line, col, want) \
	parse_error_at(__LINE__, (text), strlen(text), (line), (col), (want))

/* Parses, but derivation against s is refused with an error at line:col. */
static void derive_error_at(int line_no, const char *text, const struct dw_schema *s,
			    unsigned line, unsigned col, const char *want)
{
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *sentinel = (struct dw_evschema *)&sentinel, *es = sentinel;
	struct dw_diags d;
	const struct dw_diag *e;
	int r;

	dw_diags_init(&d);
	r = dw_evschema_parse("bad.dwschema", text, strlen(text), &src, &d);
	if (r != 0) {
		test_failed++;
		fprintf(stderr, "%s:%d: expected the text to parse (%d):\n", __FILE__, line_no, r);
		dump_diags(&d);
		dw_diags_fini(&d);
		return;
	}
	r = dw_evschema_derive(src, s, &es, &d);
	e = first_error(&d);
	if (r != -EINVAL || es != sentinel || e == NULL || (line && e->line != line) ||
	    (col && e->col != col) || strstr(e->msg, want) == NULL) {
		test_failed++;
		fprintf(stderr, "%s:%d: expected derive error %u:%u \"%s\", got %d:\n", __FILE__,
			line_no, line, col, want, r);
		dump_diags(&d);
	} else {
		test_passed++;
	}
	if (es != sentinel)
		dw_evschema_free(es);
	dw_evschema_src_free(src);
	dw_diags_fini(&d);
}

#define DERIVE_ERROR(text, s, line, col, want) \
	derive_error_at(__LINE__, (text), (s), (line), (col), (want))

static const struct dw_evdecl *find(const struct dw_evschema *es, const char *ns, const char *id,
				    const char *kind)
{
	return dw_evschema_find(es, dw_str_c(ns), dw_str_c(id), dw_str_c(kind));
}

static const struct dw_evfield *field(const struct dw_evdecl *d, const char *path)
{
	return dw_evdecl_field(d, dw_str_c(path));
}

static bool is_group(const struct dw_evdecl *d, const char *path)
{
	return dw_evdecl_is_group(d, dw_str_c(path));
}

static bool decides(const struct dw_evschema *es, const char *kind)
{
	return dw_evschema_decides(es, dw_str_c(kind));
}

/* f exists and is a leaf of primitive/Cedar type kind k. */
static bool has_type(const struct dw_evfield *f, enum dw_tkind k)
{
	return f != NULL && f->type != NULL && f->type->kind == k && f->n_etypes == 0;
}

/* f is an entity-typed leaf of type name. */
static bool is_entity(const struct dw_evfield *f, const char *name)
{
	return has_type(f, DW_T_ENTITY) && dw_str_eq_c(f->type->entity->name, name);
}

/* f is an entity-type set (principalType/resourceType) holding exactly names. */
static bool is_etype_set(const struct dw_evfield *f, const char *const *names, uint32_t n)
{
	if (f == NULL || f->type != NULL || f->n_etypes != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!dw_str_eq_c(f->etypes[i]->name, names[i]))
			return false;
	return true;
}

static bool str_is(struct dw_str s, const char *want)
{
	return dw_str_eq_c(s, want);
}

/* Every decl's fields and groups strictly ascending, each index right, and
 * every decl and field found under its own key (one check each). */
static void check_invariants(const struct dw_evschema *es)
{
	bool indexed = true, found = true, sorted = true, fields = true;

	for (uint32_t i = 0; i < es->n_decls; i++) {
		const struct dw_evdecl *d = es->decls[i];

		indexed &= d->index == i;
		found &= dw_evschema_find(es, d->ns, d->id, d->kind) == d;
		for (uint32_t k = 1; k < d->n_fields; k++)
			sorted &= dw_str_cmp(d->fields[k - 1].path, d->fields[k].path) < 0;
		for (uint32_t k = 1; k < d->n_groups; k++)
			sorted &= dw_str_cmp(d->groups[k - 1], d->groups[k]) < 0;
		for (uint32_t k = 0; k < d->n_fields; k++)
			fields &= dw_evdecl_field(d, d->fields[k].path) == &d->fields[k] &&
				  !dw_evdecl_is_group(d, d->fields[k].path);
		for (uint32_t k = 0; k < d->n_groups; k++)
			fields &= dw_evdecl_is_group(d, d->groups[k]) &&
				  dw_evdecl_field(d, d->groups[k]) == NULL;
	}
	CHECK(indexed);
	CHECK(found);
	CHECK(sorted);
	CHECK(fields);
}

/* ---- the default schema against the Box actions -------------------------------- */

static void test_default_text_is_the_spec(void)
{
	char path[4096];
	size_t n = 0;
	char *spec;

	snprintf(path, sizeof path, "%s/box/box-events.dwschema", TEST_DATA_DIR);
	spec = test_read_file(path, &n);
	CHECK(spec != NULL);
	if (spec == NULL) {
		fprintf(stderr, "  cannot read %s\n", path);
		return;
	}
	CHECK_EQ_INT(n, strlen(dw_evschema_default_text));
	CHECK(strcmp(spec, dw_evschema_default_text) == 0);
	free(spec);
}

static void test_default_box(void)
{
	static const char *const agent[] = { "Box::Agent" }, *const res[] = { "Box::Resource" };
	struct dw_schema *s = box_actions();
	struct dw_evschema *es = DERIVE(NULL, s);
	const struct dw_evdecl *d;
	const struct dw_evfield *f;

	if (es == NULL) {
		dw_schema_free(s);
		return;
	}
	check_invariants(es);
	CHECK_EQ_INT(es->n_decls, s->n_actions * 3);
	CHECK_EQ_INT(es->max_window_s, 24 * 3600);
	CHECK_EQ_INT(es->max_window_s, DW_DEFAULT_MAX_WINDOW_S);
	CHECK_EQ_INT(es->n_key_fields, 0);
	CHECK_EQ_INT(es->n_kinds, 3);
	CHECK(str_is(es->kinds[0], "request") && es->kind_decides[0]);
	CHECK(str_is(es->kinds[1], "response") && !es->kind_decides[1]);
	CHECK(str_is(es->kinds[2], "error") && !es->kind_decides[2]);
	CHECK(decides(es, "request"));
	CHECK(!decides(es, "response"));
	CHECK(!decides(es, "error"));
	CHECK(!decides(es, "attempt"));
	CHECK(!decides(es, ""));

	/* action order, then declaration order */
	CHECK(str_is(es->decls[0]->id, "fs:read") && str_is(es->decls[0]->kind, "request"));
	CHECK(str_is(es->decls[1]->id, "fs:read") && str_is(es->decls[1]->kind, "response"));
	CHECK(str_is(es->decls[2]->id, "fs:read") && str_is(es->decls[2]->kind, "error"));
	CHECK(str_is(es->decls[3]->id, "fs:write") && str_is(es->decls[3]->kind, "request"));

	d = find(es, "Box::Action", "fs:read", "request");
	CHECK(d != NULL);
	if (d != NULL) {
		CHECK(d == es->decls[0]);
		CHECK(str_is(d->ns, "Box::Action"));
		CHECK(str_is(d->id, "fs:read"));
		CHECK(str_is(d->kind, "request"));
		CHECK(d->decision);
		CHECK(d->action == s->actions[0]);
		CHECK_EQ_INT(d->n_fields, 5);
		CHECK(has_type(field(d, "input.path"), DW_T_STRING));
		CHECK(!field(d, "input.path")->optional);
		CHECK(is_entity(field(d, "input.operation"), "Box::FsReadOperation"));
		CHECK(is_etype_set(field(d, "callerPrincipal"), agent, 1));
		CHECK(is_etype_set(field(d, "callerResource"), res, 1));
		CHECK(has_type(field(d, "requestId"), DW_T_STRING));
		CHECK(field(d, "sessionId") == NULL);      /* not in Box's default */
		CHECK(field(d, "output.result") == NULL);  /* no outputs on request */
		CHECK(field(d, "input") == NULL);          /* a group, not a field */
		CHECK(field(d, "path") == NULL);
		CHECK(is_group(d, "input"));
		CHECK(!is_group(d, "output"));
		CHECK(!is_group(d, "input.path"));
		CHECK(!is_group(d, "requestId"));
		CHECK(!is_group(d, ""));
		CHECK(str_is(d->fields[0].path, "callerPrincipal"));
		CHECK(field(d, "requestId")->pin == DW_PIN_NONE);
	}

	d = find(es, "Box::Action", "fs:read", "response");
	CHECK(d != NULL && !d->decision);
	if (d != NULL) {
		CHECK_EQ_INT(d->n_fields, 6);
		f = field(d, "output.result");
		/* `output?` in the action schema: present on the event, optional */
		CHECK(is_entity(f, "Box::FsResponseResult"));
		CHECK(f != NULL && f->optional);
		CHECK(!field(d, "input.operation")->optional);
		CHECK(is_group(d, "output"));
	}
	d = find(es, "Box::Action", "fs:read", "error");
	CHECK(d != NULL && !d->decision);
	CHECK(d != NULL && field(d, "output.result") == NULL && d->n_fields == 5);

	d = find(es, "Box::Action", "shell:spawn", "request");
	CHECK(d != NULL);
	if (d != NULL) {
		CHECK(has_type(field(d, "input.arg1"), DW_T_STRING));
		CHECK(field(d, "input.arg1")->optional);
		CHECK(field(d, "input.arg2")->optional);
		CHECK(!field(d, "input.command")->optional);
		CHECK(has_type(field(d, "input.arg_count"), DW_T_LONG));
		f = field(d, "input.credential_reads");
		CHECK(has_type(f, DW_T_SET) && f->optional && f->type->elem->kind == DW_T_STRING);
		CHECK_EQ_INT(d->n_fields, 8 + 3);
	}
	d = find(es, "Box::Action", "shell:spawn", "response");
	CHECK(d != NULL && has_type(field(d, "output.status"), DW_T_LONG));

	/* net:connect has no `output`: the spread adds the group but no field */
	d = find(es, "Box::Action", "net:connect", "response");
	CHECK(d != NULL);
	if (d != NULL) {
		CHECK(field(d, "output.status") == NULL);
		CHECK(is_group(d, "output"));
		CHECK(field(d, "input.ip") != NULL && field(d, "input.ip")->optional);
		CHECK_EQ_INT(d->n_fields, 3 + 3);
	}
	d = find(es, "Box::Action", "http:request", "request");
	CHECK(d != NULL && has_type(field(d, "input.intercepted"), DW_T_BOOL));

	CHECK(find(es, "Box::Action", "fs:read", "attempt") == NULL);
	CHECK(find(es, "Box::Action", "fs:nope", "request") == NULL);
	CHECK(find(es, "Action", "fs:read", "request") == NULL);
	CHECK(find(es, "Box::Action", "fs:read", "Request") == NULL);
	CHECK(find(es, "", "", "") == NULL);
	CHECK(dw_evdecl_field(NULL, dw_str_c("x")) == NULL);
	CHECK(!dw_evdecl_is_group(NULL, dw_str_c("x")));
	CHECK(dw_evschema_find(NULL, dw_str_c("a"), dw_str_c("b"), dw_str_c("c")) == NULL);
	CHECK(!dw_evschema_decides(NULL, dw_str_c("request")));

	dw_evschema_free(es);
	dw_schema_free(s);
}

/* The derived schema copies what it needs: the parsed text may go first. */
static void test_src_freed_before_use(void)
{
	struct dw_schema *s = box_actions();
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es = NULL;
	struct dw_diags d;
	char *text = strdup("decision event <A>::attempt { ...inputs(A), pin s: String = "
			    "context.s }\nevent <A>::outcome { pin s: String = context.s }");

	dw_diags_init(&d);
	CHECK_EQ_INT(dw_evschema_parse("x.dwschema", text, strlen(text), &src, &d), 0);
	memset(text, 'z', strlen(text));   /* the source is copied at parse */
	free(text);
	CHECK_EQ_INT(dw_evschema_derive(src, s, &es, &d), 0);
	dw_evschema_src_free(src);
	if (es != NULL) {
		const struct dw_evdecl *e = find(es, "Box::Action", "fs:write", "attempt");

		CHECK(e != NULL && str_is(e->kind, "attempt"));
		CHECK(e != NULL && str_is(field(e, "s")->pin_path, "s"));
		CHECK(decides(es, "attempt"));
		CHECK_EQ_INT(es->n_key_fields, 1);
		check_invariants(es);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
	dw_diags_fini(&d);
	dw_evschema_free(NULL);
	dw_evschema_src_free(NULL);
}

/* ---- custom schemas ----------------------------------------------------------- */

#define DRUPE_NS \
	"namespace Drupe {\n" \
	"  entity OAuthUser = { id: String, dept: String };\n" \
	"  entity IamEntity = { id: String };\n" \
	"  entity Gateway;\n" \
	"  type Meta = { region: String, level: Long };\n" \
	"  type LoginInput = { server: String, user: String };\n" \
	"  type LoginOutput = { result: Bool };\n" \
	"  type ReadInput = { user: String, document: String, meta: Meta, extra?: Meta,\n" \
	"                     rows: Set<{ user: String }>, empty: {}, ip: ipaddr };\n" \
	"  action \"Login\" appliesTo { principal: [OAuthUser, IamEntity], resource: [Gateway],\n" \
	"                             context: { input: LoginInput, output?: LoginOutput } };\n" \
	"  action \"Read\" appliesTo { principal: [OAuthUser], resource: [Gateway],\n" \
	"                            context: { input: ReadInput } };\n" \
	"  action \"Dup\" appliesTo { principal: OAuthUser, resource: Gateway,\n" \
	"                           context: { input: { x: String }, output: { x: Bool } } };\n" \
	"  action \"Ping\" appliesTo { principal: OAuthUser, resource: Gateway };\n" \
	"  action \"Group\";\n" \
	"}\n" \
	"entity Root;\n"

/* Drupe plus an action outside any namespace */
static const char drupe_schema[] = DRUPE_NS
	"action \"top\" appliesTo { principal: Root, resource: Root,\n"
	"                         context: { input: { n: Long } } };\n";

static void test_attempt_outcome(void)
{
	static const char text[] =
		"// case 1110: author-defined kinds, a renamed principal field\n"
		"decision event <A>::attempt {\n"
		"    ...inputs(A),\n"
		"    actor: principalType(A),\n"
		"}\n"
		"event <A>::outcome {\n"
		"    ...inputs(A),\n"
		"    ...outputs(A),\n"
		"    actor: principalType(A),\n"
		"}\n";
	static const char *const two[] = { "Drupe::OAuthUser", "Drupe::IamEntity" };
	struct dw_schema *s = actions_from(drupe_schema);
	struct dw_evschema *es = s ? DERIVE(text, s) : NULL;
	const struct dw_evdecl *d;

	if (es == NULL) {
		dw_schema_free(s);
		return;
	}
	check_invariants(es);
	CHECK_EQ_INT(es->n_decls, s->n_actions * 2);
	CHECK_EQ_INT(es->n_kinds, 2);
	CHECK(decides(es, "attempt"));
	CHECK(!decides(es, "outcome"));
	CHECK(!decides(es, "request"));
	CHECK(find(es, "Drupe::Action", "Login", "request") == NULL);

	d = find(es, "Drupe::Action", "Login", "attempt");
	CHECK(d != NULL && d->decision);
	if (d != NULL) {
		/* the whole appliesTo set, in declaration order, kept whole */
		const struct dw_evfield *f = field(d, "actor");
		bool a = is_etype_set(f, two, 2);
		bool b = f != NULL && f->n_etypes == 2 && f->type == NULL &&
			 dw_str_eq_c(f->etypes[1]->name, two[0]) &&
			 dw_str_eq_c(f->etypes[0]->name, two[1]);

		CHECK(a || b);
		CHECK(has_type(field(d, "input.user"), DW_T_STRING));
		CHECK(field(d, "callerPrincipal") == NULL);
		CHECK_EQ_INT(d->n_fields, 3);
	}
	d = find(es, "Drupe::Action", "Login", "outcome");
	CHECK(d != NULL && !d->decision && has_type(field(d, "output.result"), DW_T_BOOL));

	/* input and output may hold the same name: two distinct leaves */
	d = find(es, "Drupe::Action", "Dup", "outcome");
	CHECK(d != NULL && has_type(field(d, "input.x"), DW_T_STRING));
	CHECK(d != NULL && has_type(field(d, "output.x"), DW_T_BOOL));
	CHECK(d != NULL && !field(d, "output.x")->optional);

	/* no context: the spreads mint empty groups */
	d = find(es, "Drupe::Action", "Ping", "outcome");
	CHECK(d != NULL && d->n_fields == 1 && is_group(d, "input") && is_group(d, "output"));

	/* an action group without appliesTo still has events; its type sets are empty */
	d = find(es, "Drupe::Action", "Group", "attempt");
	CHECK(d != NULL);
	if (d != NULL) {
		const struct dw_evfield *f = field(d, "actor");

		CHECK(f != NULL && f->type == NULL && f->n_etypes == 0);
		CHECK_EQ_INT(d->n_fields, 1);
	}
	/* an action outside any namespace */
	d = find(es, "Action", "top", "attempt");
	CHECK(d != NULL && has_type(field(d, "input.n"), DW_T_LONG));

	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_nested_input_records(void)
{
	struct dw_schema *s = actions_from(drupe_schema);
	struct dw_evschema *es = s ? DERIVE(NULL, s) : NULL;
	const struct dw_evdecl *d;

	if (es == NULL) {
		dw_schema_free(s);
		return;
	}
	d = find(es, "Drupe::Action", "Read", "request");
	CHECK(d != NULL);
	if (d != NULL) {
		/* record-typed members nest; their leaves have dotted paths */
		CHECK(is_group(d, "input.meta"));
		CHECK(field(d, "input.meta") == NULL);
		CHECK(has_type(field(d, "input.meta.region"), DW_T_STRING));
		CHECK(has_type(field(d, "input.meta.level"), DW_T_LONG));
		CHECK(!field(d, "input.meta.level")->optional);
		/* below an optional record every leaf is optional */
		CHECK(is_group(d, "input.extra"));
		CHECK(field(d, "input.extra.region") != NULL &&
		      field(d, "input.extra.region")->optional);
		/* a Set is a leaf, even of records */
		CHECK(has_type(field(d, "input.rows"), DW_T_SET));
		CHECK(field(d, "input.rows.user") == NULL && !is_group(d, "input.rows"));
		/* an empty record is a group without leaves */
		CHECK(is_group(d, "input.empty") && field(d, "input.empty") == NULL);
		CHECK(has_type(field(d, "input.ip"), DW_T_EXT) &&
		      field(d, "input.ip")->type->ext == DW_EXT_IPADDR);
		CHECK_EQ_INT(d->n_fields, 2 + 2 + 2 + 1 + 1 + 3);
		CHECK_EQ_INT(d->n_groups, 4);
	}
	check_invariants(es);
	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_named_records_and_types(void)
{
	static const char text[] =
		"decision event <A>::request {\n"
		"    ...inputs(A),\n"
		"    __drupe: { session: { id: String, region: String } },\n"
		"    a: { b: { c: Long } },\n"
		"    meta: { },\n"
		"    wrap: { ...inputs(A), ...outputs(A), note: String },\n"
		"    who: Drupe::OAuthUser,\n"
		"    bare: Gateway,\n"
		"    root: Root,\n"
		"    l: __cedar::Long,\n"
		"    when: datetime,\n"
		"    ok: Bool,\n"
		"    requestId: String,\n"
		"}\n";
	struct dw_schema *s = actions_from(DRUPE_NS);
	struct dw_evschema *es = s ? DERIVE(text, s) : NULL;
	const struct dw_evdecl *d;

	if (es == NULL) {
		dw_schema_free(s);
		return;
	}
	check_invariants(es);
	d = find(es, "Drupe::Action", "Login", "request");
	CHECK(d != NULL);
	if (d != NULL) {
		CHECK(has_type(field(d, "__drupe.session.id"), DW_T_STRING));
		CHECK(has_type(field(d, "__drupe.session.region"), DW_T_STRING));
		CHECK(is_group(d, "__drupe") && is_group(d, "__drupe.session"));
		CHECK(field(d, "__drupe.session") == NULL);
		CHECK(has_type(field(d, "a.b.c"), DW_T_LONG));
		CHECK(is_group(d, "a") && is_group(d, "a.b") && !is_group(d, "a.b.c"));
		CHECK(is_group(d, "meta") && !is_group(d, "met"));
		/* a spread inside a record mints its own group */
		CHECK(has_type(field(d, "wrap.input.user"), DW_T_STRING));
		CHECK(has_type(field(d, "wrap.output.result"), DW_T_BOOL));
		CHECK(field(d, "wrap.output.result")->optional);
		CHECK(field(d, "wrap.user") == NULL && is_group(d, "wrap.input"));
		CHECK(has_type(field(d, "wrap.note"), DW_T_STRING));
		CHECK(is_entity(field(d, "who"), "Drupe::OAuthUser"));
		/* a bare name resolves in the action's namespace first */
		CHECK(is_entity(field(d, "bare"), "Drupe::Gateway"));
		CHECK(is_entity(field(d, "root"), "Root"));
		CHECK(has_type(field(d, "l"), DW_T_LONG));
		CHECK(has_type(field(d, "when"), DW_T_EXT) &&
		      field(d, "when")->type->ext == DW_EXT_DATETIME);
		CHECK(has_type(field(d, "ok"), DW_T_BOOL));
		CHECK(!field(d, "ok")->optional);
		/* one dw_type per entity type, shared by the fields naming it */
		CHECK(field(d, "who")->type == field(find(es, "Drupe::Action", "Read", "request"),
						     "who")->type);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_max_window(void)
{
	static const struct {
		const char *text;
		int64_t secs;
	} cases[] = {
		{ "max_window = 2d\ndecision event <A>::r {}", 2 * 86400 },
		{ "max_window = 30s event <A>::r {}", 30 },
		{ "max_window = 90m\nevent <A>::r {}", 90 * 60 },
		{ "max_window=12h event<A>::r{}", 12 * 3600 },
		{ "max_window = 24 h\nevent <A>::r {}", 24 * 3600 },
		{ "// c\nmax_window = 1s // c\nevent <A>::r {}", 1 },
		{ "max_window = 106751991167300d event <A>::r {}", 106751991167300LL * 86400 },
		{ "max_window = 9223372036854775807s event <A>::r {}", INT64_MAX },
		{ "event <A>::r {}", DW_DEFAULT_MAX_WINDOW_S },
	};
	struct dw_schema *s = box_actions();

	for (size_t i = 0; i < DW_N_ELEMENTS(cases); i++) {
		struct dw_evschema *es = DERIVE(cases[i].text, s);

		CHECK(es != NULL && es->max_window_s == cases[i].secs);
		dw_evschema_free(es);
	}
	dw_schema_free(s);
}

static void test_contextual_keywords(void)
{
	static const char text[] =
		"max_window = 1h\n"
		"decision event <event>::decision { ...inputs(event), event: String, decision: Long,"
		" max_window: Bool, pin: String, inputs: Long, context: String, principal: Long }\n"
		"event <pin>::event { pin pin: String = context.pin, x: principalType(pin) }\n"
		"event <B>::max_window {}\n";
	struct dw_schema *s = box_actions();
	struct dw_evschema *es = DERIVE(text, s);
	const struct dw_evdecl *d;

	if (es != NULL) {
		CHECK(decides(es, "decision"));
		CHECK(!decides(es, "event"));
		d = find(es, "Box::Action", "fs:read", "decision");
		CHECK(d != NULL && has_type(field(d, "event"), DW_T_STRING));
		CHECK(d != NULL && has_type(field(d, "pin"), DW_T_STRING));
		CHECK(d != NULL && field(d, "pin")->pin == DW_PIN_NONE);
		CHECK(d != NULL && has_type(field(d, "inputs"), DW_T_LONG));
		CHECK(d != NULL && has_type(field(d, "max_window"), DW_T_BOOL));
		d = find(es, "Box::Action", "fs:read", "event");
		CHECK(d != NULL && field(d, "pin") != NULL && field(d, "pin")->pin == DW_PIN_CONTEXT);
		CHECK(d != NULL && str_is(field(d, "pin")->pin_path, "pin"));
		CHECK(find(es, "Box::Action", "fs:read", "max_window") != NULL);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_layout_freedom(void)
{
	/* comments anywhere, no trailing comma, a trailing comma, blank bodies,
	 * CRLF line ends, a byte-order mark */
	static const char text[] =
		"\xEF\xBB\xBF// BOM first\r\n"
		"decision // here\r\n event < A > :: request // and here\r\n"
		"{ ... inputs ( A ) , requestId : String // last\r\n }\r\n"
		"event<A>::ping{}event<A>::pong{requestId:String,}\r\n";
	struct dw_schema *s = box_actions();
	struct dw_evschema *es = DERIVE(text, s);
	const struct dw_evdecl *d;

	if (es != NULL) {
		CHECK_EQ_INT(es->n_kinds, 3);
		d = find(es, "Box::Action", "mcp:call", "request");
		CHECK(d != NULL && d->n_fields == 6);
		d = find(es, "Box::Action", "mcp:call", "ping");
		CHECK(d != NULL && d->n_fields == 0 && d->n_groups == 0);
		d = find(es, "Box::Action", "mcp:call", "pong");
		CHECK(d != NULL && d->n_fields == 1);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

/* Many actions: every (action, kind) found through the hash table. */
static void test_many_actions(void)
{
	size_t cap = 64 * 1024, n = 0;
	char *text = malloc(cap);
	struct dw_schema *s;
	struct dw_evschema *es;
	int found = 0;

	n += (size_t)snprintf(text + n, cap - n, "namespace N { entity U; ");
	for (int i = 0; i < 500; i++)
		n += (size_t)snprintf(text + n, cap - n,
				      "action \"a%d\" appliesTo { principal: U, resource: U, "
				      "context: { input: { v%d: Long } } };", i, i);
	snprintf(text + n, cap - n, "}");
	s = actions_from(text);
	free(text);
	if (s == NULL)
		return;
	es = DERIVE(NULL, s);
	if (es != NULL) {
		char id[16], path[24];

		CHECK_EQ_INT(es->n_decls, 1500);
		for (int i = 0; i < 500; i++) {
			const struct dw_evdecl *d;

			snprintf(id, sizeof id, "a%d", i);
			snprintf(path, sizeof path, "input.v%d", i);
			d = find(es, "N::Action", id, "error");
			found += d != NULL && str_is(d->id, id) && field(d, path) != NULL;
		}
		CHECK_EQ_INT(found, 500);
		CHECK(find(es, "N::Action", "a500", "request") == NULL);
		check_invariants(es);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

/* ---- pins ----------------------------------------------------------------------- */

static void test_pins(void)
{
	static const char text[] =
		"decision event <A>::request {\n"
		"    ...inputs(A),\n"
		"    pin callerPrincipal: principalType(A) = principal,\n"
		"    pin callerResource: resourceType(A) = resource,\n"
		"    pin dept: String = principal.dept,\n"
		"    pin srv: String = context.input.server,\n"
		"    pin s: String = context.s,\n"
		"    __drupe: { pin session_id: String = context.__drupe.session_id },\n"
		"    requestId: String,\n"
		"}\n"
		"event <A>::response {\n"
		"    ...inputs(A), ...outputs(A),\n"
		"    pin callerPrincipal: principalType(A) = principal,\n"
		"    callerResource: resourceType(A),\n"
		"    pin s: String = context.s,\n"
		"    __drupe: { pin session_id: String = context.__drupe.session_id },\n"
		"    pin dept: String = principal . dept,\n"
		"}\n";
	struct dw_schema *s = actions_from(drupe_schema);
	struct dw_evschema *es = s ? DERIVE(text, s) : NULL;
	const struct dw_evdecl *d;
	const struct dw_evfield *f;

	if (es == NULL) {
		dw_schema_free(s);
		return;
	}
	check_invariants(es);
	d = find(es, "Drupe::Action", "Login", "request");
	CHECK(d != NULL);
	if (d != NULL) {
		f = field(d, "callerPrincipal");
		CHECK(f != NULL && f->pin == DW_PIN_PRINCIPAL && f->pin_path.n == 0);
		f = field(d, "callerResource");
		CHECK(f != NULL && f->pin == DW_PIN_RESOURCE && f->pin_path.n == 0);
		f = field(d, "dept");
		CHECK(f != NULL && f->pin == DW_PIN_PRINCIPAL && str_is(f->pin_path, "dept"));
		f = field(d, "srv");
		CHECK(f != NULL && f->pin == DW_PIN_CONTEXT && str_is(f->pin_path, "input.server"));
		f = field(d, "__drupe.session_id");
		CHECK(f != NULL && f->pin == DW_PIN_CONTEXT &&
		      str_is(f->pin_path, "__drupe.session_id"));
		CHECK(field(d, "requestId")->pin == DW_PIN_NONE);
		CHECK(field(d, "input.user")->pin == DW_PIN_NONE);
	}
	/* universal (every kind) and symmetric (own path / scope alias):
	 * callerPrincipal, s, __drupe.session_id.  Not: callerResource (only on
	 * request), dept (a principal attribute, not the alias), srv (only on
	 * request, and not its own path). */
	CHECK_EQ_INT(es->n_key_fields, 3);
	if (es->n_key_fields == 3) {
		CHECK(str_is(es->key_fields[0].path, "__drupe.session_id"));
		CHECK(str_is(es->key_fields[1].path, "callerPrincipal"));
		CHECK(es->key_fields[1].pin == DW_PIN_PRINCIPAL);
		CHECK(str_is(es->key_fields[2].path, "s"));
		CHECK(str_is(es->key_fields[2].pin_path, "s"));
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_pins_not_universal(void)
{
	static const struct {
		const char *text;
		uint32_t n_keys;
	} cases[] = {
		/* 1117: the top-level principal pin on every kind */
		{ "decision event <A>::request { pin callerPrincipal: principalType(A) = principal }\n"
		  "event <A>::response { pin callerPrincipal: principalType(A) = principal }", 1 },
		/* only on some kinds */
		{ "decision event <A>::request { pin callerPrincipal: principalType(A) = principal }\n"
		  "event <A>::response { callerPrincipal: principalType(A) }", 0 },
		/* a different root on one kind */
		{ "decision event <A>::request { pin s: String = context.s }\n"
		  "event <A>::response { pin s: String = context.t }", 0 },
		/* not the field's own path */
		{ "decision event <A>::request { pin s: String = context.t }\n"
		  "event <A>::response { pin s: String = context.t }", 0 },
		/* context.principal is a context field, not the scope alias */
		{ "decision event <A>::request { pin callerPrincipal: String = context.principal }", 0 },
		/* the alias pairs only: actor = principal is a correlation */
		{ "decision event <A>::request { pin actor: principalType(A) = principal }", 0 },
		{ "decision event <A>::request { pin callerPrincipal: principalType(A) = resource }",
		  0 },
		{ "decision event <A>::request { pin callerPrincipal: principalType(A) = principal.id }",
		  0 },
		{ "decision event <A>::request { pin callerResource: resourceType(A) = resource }", 1 },
		/* a nested field named like the alias is not the alias */
		{ "decision event <A>::request { m: { pin callerPrincipal: String = principal } }", 0 },
		{ "decision event <A>::request { m: { pin x: String = context.m.x } }", 1 },
		{ "decision event <A>::request { requestId: String }", 0 },
	};
	struct dw_schema *s = box_actions();

	for (size_t i = 0; i < DW_N_ELEMENTS(cases); i++) {
		struct dw_evschema *es = DERIVE(cases[i].text, s);

		if (es != NULL && es->n_key_fields != cases[i].n_keys)
			fprintf(stderr, "  case %zu: %u key fields\n", i, es->n_key_fields);
		CHECK(es != NULL && es->n_key_fields == cases[i].n_keys);
		dw_evschema_free(es);
	}
	dw_schema_free(s);
}

/* An action schema without actions: no events, hence no universal pin, but
 * the kinds are still known. */
static void test_no_actions(void)
{
	struct dw_schema *s = actions_from("entity U;");
	struct dw_evschema *es = s ? DERIVE("decision event <A>::request { pin s: String = "
					    "context.s }", s) : NULL;

	if (es != NULL) {
		CHECK_EQ_INT(es->n_decls, 0);
		CHECK_EQ_INT(es->n_key_fields, 0);
		CHECK(decides(es, "request"));
		CHECK(find(es, "Action", "x", "request") == NULL);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

/* ---- test data files ------------------------------------------------------------------ */

static void test_data_files(void)
{
	static const char *const names[] = { "attempt_outcome.dwschema", "session_pin.dwschema" };
	struct dw_schema *s = box_actions();

	for (size_t i = 0; i < DW_N_ELEMENTS(names); i++) {
		char path[4096];
		size_t n;
		char *text;
		struct dw_evschema *es;

		snprintf(path, sizeof path, "%s/evschema/%s", TEST_DATA_DIR, names[i]);
		text = test_read_file(path, &n);
		CHECK(text != NULL);
		if (text == NULL)
			continue;
		es = DERIVE(text, s);
		if (es != NULL && i == 0) {
			const struct dw_evdecl *d = find(es, "Box::Action", "fs:read", "outcome");

			CHECK_EQ_INT(es->max_window_s, 7 * 86400);
			CHECK(decides(es, "attempt") && !decides(es, "outcome"));
			CHECK(d != NULL && field(d, "output.result") != NULL);
			CHECK(d != NULL && field(d, "input.path") != NULL);
			CHECK(d != NULL && field(d, "actor") != NULL);
		}
		if (es != NULL && i == 1) {
			CHECK_EQ_INT(es->n_key_fields, 2);
			CHECK(es->n_key_fields == 2 && str_is(es->key_fields[0].path, "callerPrincipal"));
			CHECK(es->n_key_fields == 2 && str_is(es->key_fields[1].path, "sessionId"));
		}
		dw_evschema_free(es);
		free(text);
	}
	dw_schema_free(s);
}

/* ---- parse errors ----------------------------------------------------------------- */

static void test_errors_spec_messages(void)
{
	/* binders */
	PARSE_ERROR("event <A>::r { ...inputs(B) }", 1, 26,
		    "in spread: selector argument `B` does not name the declared action binder `A`"
		    " (write `A`)");
	PARSE_ERROR("event <A>::r { p: principalType(B) }", 1, 33,
		    "in field type: selector argument `B` does not name the declared action "
		    "binder `A`");
	PARSE_ERROR("event <A>::r {\n  meta: {\n    ...inputs(B)\n  }\n}", 3, 15,
		    "selector argument `B` does not name the declared action binder `A`");
	/* selectors used the wrong way */
	PARSE_ERROR("event <A>::r { ...principalType(A) }", 1, 16,
		    "selector `principalType` cannot be spread (it yields entity types, not a field "
		    "record); use it as a field type instead");
	PARSE_ERROR("event <A>::r {\n  x: String,\n  ...resourceType(A),\n}", 3, 3,
		    "`resourceType` cannot be spread");
	PARSE_ERROR("event <A>::r { i: inputs(A) }", 1, 19,
		    "selector `inputs` cannot be used as a field type (it yields a field record, "
		    "not a type); spread it with `...` instead");
	PARSE_ERROR("event <A>::r { o: outputs(A) }", 1, 19, "selector `outputs` cannot be used");
	/* pins */
	PARSE_ERROR("event <A>::r { pin foo: String }", 1, 20,
		    "pinned field `foo` is missing its pin value; write `pin foo: <type> = "
		    "context.<...>`");
	PARSE_ERROR("event <A>::r { foo: String = context.foo }", 1, 16,
		    "field `foo` has a `= context.<...>` value but is not marked `pin`");
	PARSE_ERROR("event <A>::r { a: String, m: { foo: String = principal } }", 1, 32,
		    "field `m.foo` has a `= context.<...>` value but is not marked `pin`");
	PARSE_ERROR("event <A>::r { pin meta: { x: String } = context.meta }", 1, 20,
		    "field `meta` is a record group and cannot be pinned; pin a leaf field inside "
		    "it instead");
	/* max_window */
	PARSE_ERROR("max_window = 0h\nevent <A>::r {}", 1, 14, "max_window must be greater than zero");
	PARSE_ERROR("max_window = 000d\nevent <A>::r {}", 1, 14, "must be greater than zero");
	PARSE_ERROR("max_window = 9223372036854775808s event <A>::r {}", 1, 14,
		    "max_window amount `9223372036854775808s` is out of range");
	PARSE_ERROR("max_window = 106751991167301d event <A>::r {}", 1, 14, "is out of range");
	/* no events: no decision kind */
	PARSE_ERROR("", 1, 1, "declares no events");
	PARSE_ERROR("  // only a comment\n\n", 1, 1, "declares no events");
	PARSE_ERROR("max_window = 2h\n", 1, 1, "declares no events");
	PARSE_ERROR("\xEF\xBB\xBF", 1, 1, "declares no events");
}

static void test_errors_names(void)
{
	PARSE_ERROR("event <A>::r { a: String, b: Long, a: Bool }", 1, 36,
		    "event-schema field `a` is defined more than once on `<A>::r`; field names "
		    "must be unique at each level");
	PARSE_ERROR("event <A>::r { m: { x: String, x: String } }", 1, 32,
		    "event-schema field `m.x` is defined more than once");
	PARSE_ERROR("event <A>::r { ...inputs(A), input: String }", 1, 30,
		    "event-schema field `input` (injected on `<A>::r`) collides with the `input` "
		    "field group produced by a spread; a named field may not shadow a spread group");
	PARSE_ERROR("event <A>::r { output: { x: Long }, ...outputs(A) }", 1, 37,
		    "the `output` field group produced by `...outputs(A)` (on `<A>::r`) collides "
		    "with another field named `output`");
	PARSE_ERROR("event <A>::r { ...inputs(A), ...outputs(A), ...inputs(A) }", 1, 45,
		    "`...inputs(A)` appears twice in `<A>::r`");
	PARSE_ERROR("event <A>::r { m: { ...outputs(A), ...outputs(A) } }", 1, 36,
		    "(it would mint the `m.output` group twice)");
	PARSE_ERROR("\n  event <A>::x {}\nevent <A>::y {}\n  event <A>::x {}", 4, 14,
		    "event kind `x` is declared more than once (first at line 2, column 14)");
	PARSE_ERROR("decision event <A>::request {}\nevent <B>::response {}\n"
		    "event <C>::request { x: Long }", 3, 12,
		    "event kind `request` is declared more than once (first at line 1, column 21)");
}

/* The same name at different levels and the same spread at different
 * levels are fine. */
static void test_names_per_level(void)
{
	struct dw_schema *s = box_actions();
	struct dw_evschema *es = DERIVE("event <A>::r { m: { m: { x: String } }, n: { m: Long }, "
					"...inputs(A), w: { ...inputs(A), input2: Long } }", s);
	const struct dw_evdecl *d = es ? find(es, "Box::Action", "fs:read", "r") : NULL;

	CHECK(d != NULL && field(d, "m.m.x") != NULL && field(d, "n.m") != NULL);
	CHECK(d != NULL && field(d, "input.path") != NULL && field(d, "w.input.path") != NULL);
	dw_evschema_free(es);
	dw_schema_free(s);
}

/* Semantic errors do not stop the parse: all of them are reported. */
static void test_errors_collected(void)
{
	static const char text[] =
		"event <A>::r {\n"
		"  ...inputs(B),\n"
		"  pin x: String,\n"
		"  y: Long = context.y,\n"
		"  ...principalType(A),\n"
		"}\n"
		"max_window = 1h\n";
	static const char text2[] =
		"event <A>::r { ...principalType(A), principal: Long, ...resourceType(A), "
		"principal: Bool }";
	struct dw_evschema_src *src = NULL;
	struct dw_diags d;

	dw_diags_init(&d);
	CHECK_EQ_INT(dw_evschema_parse("m.dwschema", text, strlen(text), &src, &d), -EINVAL);
	CHECK(src == NULL);
	CHECK_EQ_INT(d.n_errors, 5);
	if (d.n == 5) {
		CHECK(d.v[0].line == 2 && d.v[0].col == 13 && strstr(d.v[0].msg, "`B`"));
		CHECK(d.v[1].line == 3 && d.v[1].col == 7 && strstr(d.v[1].msg, "missing its pin"));
		CHECK(d.v[2].line == 4 && d.v[2].col == 3 && strstr(d.v[2].msg, "not marked"));
		CHECK(d.v[3].line == 5 && d.v[3].col == 3 && strstr(d.v[3].msg, "cannot be spread"));
		/* the span covers the whole spread */
		CHECK(d.v[3].end_line == 5 && d.v[3].end_col == 22);
		CHECK(d.v[4].line == 7 && d.v[4].col == 1 && strstr(d.v[4].msg, "must come first"));
		CHECK_EQ_STR(d.v[0].file, "m.dwschema");
		CHECK_EQ_STR(d.v[2].line_text, "  y: Long = context.y,");
	} else {
		dump_diags(&d);
	}
	dw_diags_fini(&d);

	/* refused spreads mint no group, and the names around them are still
	 * checked */
	dw_diags_init(&d);
	CHECK_EQ_INT(dw_evschema_parse("m.dwschema", text2, strlen(text2), &src, &d), -EINVAL);
	CHECK_EQ_INT(d.n_errors, 3);
	if (d.n == 3) {
		CHECK(d.v[0].col == 16 && strstr(d.v[0].msg, "`principalType` cannot be spread"));
		CHECK(d.v[1].col == 54 && strstr(d.v[1].msg, "`resourceType` cannot be spread"));
		CHECK(d.v[2].col == 74 && strstr(d.v[2].msg, "`principal` is defined more than once"));
	}
	dw_diags_fini(&d);
}

static void test_errors_syntax(void)
{
	PARSE_ERROR("event A::r { }", 1, 7, "expected `<` and the action binder after `event`");
	PARSE_ERROR("event <A>::r", 1, 13, "expected `{` after the event kind (the body is mandatory");
	PARSE_ERROR("event <A>::r;", 1, 13, "unexpected character `;`; expected `{`");
	PARSE_ERROR("event <>::r {}", 1, 8, "expected the action binder name after `<`");
	PARSE_ERROR("event <A::r {}", 1, 9, "expected `>` after the action binder");
	PARSE_ERROR("event <A>:r {}", 1, 10, "expected `::` and the event kind after the binder");
	PARSE_ERROR("event <A>::: r {}", 1, 12, "expected the event kind name after `::`");
	PARSE_ERROR("event <A>::r {} event", 1, 22, "expected `<` and the action binder after "
		    "`event` (as in `event <A>::request { … }`), found end of input");
	PARSE_ERROR("decision <A>::r {}", 1, 10, "expected `event` after `decision`");
	PARSE_ERROR("decision decision event <A>::r {}", 1, 10, "expected `event` after `decision`");
	PARSE_ERROR("events <A>::r {}", 1, 1, "expected an event declaration");
	PARSE_ERROR("event <A>::r {}\nfoo", 2, 1, "expected an event declaration");
	PARSE_ERROR("event <A>::r { ...tags(A) }", 1, 19,
		    "unknown selector `tags`; expected `inputs`, `outputs`, `principalType` or "
		    "`resourceType`");
	PARSE_ERROR("event <A>::r { ...inputsX(A) }", 1, 19, "unknown selector `inputsX`");
	PARSE_ERROR("event <A>::r { ...(A) }", 1, 19, "expected a selector after `...`");
	PARSE_ERROR("event <A>::r { ..inputs(A) }", 1, 16, "expected a field");
	PARSE_ERROR("event <A>::r { . ..inputs(A) }", 1, 16, "expected a field");
	PARSE_ERROR("event <A>::r { ...inputs A }", 1, 26, "expected `(` after the selector");
	PARSE_ERROR("event <A>::r { ...inputs() }", 1, 26, "expected the action binder inside");
	PARSE_ERROR("event <A>::r { ...inputs(A }", 1, 28, "expected `)` after the selector argument");
	PARSE_ERROR("event <A>::r { a String }", 1, 18, "expected `:` and a type after the field name");
	PARSE_ERROR("event <A>::r { a: }", 1, 19, "expected a type (`String`, `Long`, `Bool`");
	PARSE_ERROR("event <A>::r { a: 5 }", 1, 19, "found `5`");
	PARSE_ERROR("event <A>::r { a: Box:: }", 1, 25, "expected a type name after `::`");
	PARSE_ERROR("event <A>::r { a: Set<String> }", 1, 22, "expected `,` or `}` after the field");
	PARSE_ERROR("event <A>::r { a: String b: Long }", 1, 26, "expected `,` or `}`");
	PARSE_ERROR("event <A>::r { , }", 1, 16, "expected a field (`name: Type` or `...inputs(A)`) "
		    "or `}`");
	PARSE_ERROR("event <A>::r { a: String,, }", 1, 26, "expected a field");
	PARSE_ERROR("event <A>::r { a: String", 1, 25, "expected `,` or `}` after the field, found "
		    "end of input");
	PARSE_ERROR("event <A>::r { a: { b: String }", 1, 32, "found end of input");
	PARSE_ERROR("event <A>::r { pin a: String = }", 1, 32,
		    "expected `principal`, `resource` or `context.<path>` after `=`");
	PARSE_ERROR("event <A>::r { pin a: String = foo.bar }", 1, 32,
		    "expected `principal`, `resource` or `context.<path>`");
	PARSE_ERROR("event <A>::r { pin a: String = context }", 1, 40,
		    "expected `.` and a field path after `context`");
	PARSE_ERROR("event <A>::r { pin a: String = principal. }", 1, 43,
		    "expected an attribute name after `.`");
	PARSE_ERROR("event <A>::r { pin a: String = context.x.5 }", 1, 42,
		    "expected an attribute name after `.`");
	PARSE_ERROR("event <A>::r { pin a: String = principals }", 1, 32, "found `principals`");
	PARSE_ERROR("event <A>::r { pin a: String == context.a }", 1, 31,
		    "expected `principal`, `resource` or `context.<path>` after `=`, found `=`");
	PARSE_ERROR("event <A>::r { pin x }", 1, 20, "expected `:` and a type after the field name");
	PARSE_ERROR("event <A>::r { a: String } @", 1, 28, "unexpected character `@`");
	PARSE_ERROR("event <A>::r { a: Stri\xC3\xA9 }", 1, 23, "unexpected character `\xC3\xA9`");
	PARSE_ERROR("event <A>::r { a: String }\n\t\xE2\x80\x83", 2, 2,
		    "unexpected character `\xE2\x80\x83`");
	PARSE_ERROR("event <A>::r {\va: String }", 1, 15, "unexpected control character U+000B");
	PARSE_ERROR("event <A>::r { \"a\": String }", 1, 16, "unexpected character `\"`");
	PARSE_ERROR("event <A>::r { a: String } /* c */", 1, 28, "unexpected character `/`");
	/* max_window */
	PARSE_ERROR("max_window 2h event <A>::r {}", 1, 12, "expected `=` after `max_window`");
	PARSE_ERROR("max_window = h event <A>::r {}", 1, 14, "expected an interval after "
		    "`max_window =`, such as `24h`");
	PARSE_ERROR("max_window = 24\nevent <A>::r {}", 1, 14,
		    "max_window `24` has no time unit; write it like `24h` (units: s, m, h, d)");
	PARSE_ERROR("max_window = 2w\nevent <A>::r {}", 1, 15,
		    "unknown time unit `w` in max_window; expected `s`, `m`, `h` or `d`");
	PARSE_ERROR("max_window = 2hours\nevent <A>::r {}", 1, 15, "unknown time unit `hours`");
	PARSE_ERROR("max_window = -2h\nevent <A>::r {}", 1, 14, "expected an interval");
	PARSE_ERROR("max_window = 2.5h\nevent <A>::r {}", 1, 14, "max_window `2` has no time unit");
	PARSE_ERROR("event <A>::r {}\nmax_window = 24h", 2, 1,
		    "`max_window` must come first, before every event declaration");
	PARSE_ERROR("max_window = 1h\nmax_window = 2h\nevent <A>::r {}", 2, 1,
		    "`max_window` is set more than once; set it once, at the top of the file");
}

/* Names and paths longer than any buffer's first size. */
static void test_long_names(void)
{
	struct dw_schema *s = box_actions();
	char text[2048], name[301], path[2048];
	struct dw_evschema *es;
	size_t n = 0;

	memset(name, 'n', 300);
	name[300] = '\0';
	n += (size_t)snprintf(text + n, sizeof text - n, "decision event <A>::request { %s: { ",
			      name);
	n += (size_t)snprintf(text + n, sizeof text - n, "pin %s: String = context.%s.%s.%s, ",
			      name, name, name, name);
	snprintf(text + n, sizeof text - n, "t: Box::Agent } }");
	es = DERIVE(text, s);
	if (es != NULL) {
		const struct dw_evdecl *d = es->decls[0];

		snprintf(path, sizeof path, "%s.%s", name, name);
		CHECK(field(d, path) != NULL);
		CHECK(field(d, path) != NULL && field(d, path)->pin_path.n == 3 * 300 + 2);
		snprintf(path, sizeof path, "%s.t", name);
		CHECK(is_entity(field(d, path), "Box::Agent"));
		CHECK_EQ_INT(es->n_key_fields, 0);
	}
	dw_evschema_free(es);
	dw_schema_free(s);
}

static void test_errors_input(void)
{
	static const char bad_utf8[] = "event <A>::r { } // caf\xC3";
	static const char nul[] = "event <A>::r { }\0 event <A>::s {}";
	char *deep;
	size_t n = 0;

	parse_error_at(__LINE__, bad_utf8, sizeof bad_utf8 - 1, 1, 0,
		       "event schema is not valid UTF-8 (byte 0xc3 at offset 23)");
	parse_error_at(__LINE__, nul, sizeof nul - 1, 1, 17,
		       "unexpected control character U+0000; expected an event declaration");

	/* records nested past the limit: an error, not a deep recursion */
	deep = malloc(4096);
	n += (size_t)snprintf(deep + n, 4096 - n, "event <A>::r { ");
	for (int i = 0; i < 70; i++)
		n += (size_t)snprintf(deep + n, 4096 - n, "a: { ");
	parse_error_at(__LINE__, deep, n, 1, 0, "records nest deeper than 64 levels");
	free(deep);

	/* no file name: positions without one */
	{
		struct dw_evschema_src *src = NULL;
		struct dw_diags d;

		dw_diags_init(&d);
		CHECK_EQ_INT(dw_evschema_parse(NULL, "event", 5, &src, &d), -EINVAL);
		CHECK(d.n == 1 && strcmp(d.v[0].file, "") == 0 && d.v[0].col == 6);
		CHECK_EQ_INT(dw_evschema_parse("x", NULL, 3, &src, &d), -EINVAL);
		CHECK(src == NULL);
		dw_diags_fini(&d);
	}
}

/* ---- derive errors ----------------------------------------------------------------- */

static void test_errors_derive(void)
{
	struct dw_schema *s = actions_from(drupe_schema);
	struct dw_schema *bad_in = actions_from(
		"entity U; action \"a\" appliesTo { principal: U, resource: U, "
		"context: { input: String } };");
	struct dw_schema *dotted = actions_from(
		"entity U; action \"a\" appliesTo { principal: U, resource: U, "
		"context: { input: { \"a.b\": String, a: { b: Long } } } };");
	struct dw_schema *dotted_ok = actions_from(
		"entity U; action \"a\" appliesTo { principal: U, resource: U, "
		"context: { input: { \"a.b\": String, \"c d\": Long, \"\": Bool } } };");
	struct dw_schema *dotted_groups = actions_from(
		"entity U; action \"a\" appliesTo { principal: U, resource: U, "
		"context: { input: { \"a.b\": { x: Long }, a: { b: { y: Long } } } } };");
	struct dw_schema *dotted_leaf = actions_from(
		"entity U; action \"a\" appliesTo { principal: U, resource: U, "
		"context: { input: { \"a.b\": Long, a: { b: { y: Long } } } } };");
	struct dw_schema *unfinished = dw_schema_new();
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es = NULL;
	struct dw_diags d;
	char *diamond;
	size_t n = 0;

	if (s == NULL || bad_in == NULL || dotted == NULL || dotted_ok == NULL ||
	    dotted_groups == NULL || dotted_leaf == NULL)
		goto out;
	DERIVE_ERROR("event <A>::request { ...inputs(A) }", dotted_groups, 1, 12,
		     "two fields or groups at path `input.a.b`");
	DERIVE_ERROR("event <A>::request { ...inputs(A) }", dotted_leaf, 1, 12,
		     "two fields or groups at path `input.a.b`");
	DERIVE_ERROR("event <A>::r {\n  who: Drupe::Nope,\n}", s, 2, 8,
		     "unknown type `Drupe::Nope` for field `who` of `<A>::r` (action "
		     "`Drupe::Action::\"Login\"`): not Bool, Long, String, an extension type or an "
		     "entity type of the action schema");
	DERIVE_ERROR("event <A>::r { m: { who: Foo } }", s, 1, 26, "unknown type `Foo` for field `m.who`");
	/* a bare name found only in the action's namespace fails for `top` */
	DERIVE_ERROR("event <A>::r { g: Gateway }", s, 1, 19,
		     "(action `Action::\"top\"`)");
	DERIVE_ERROR("event <A>::r { g: __cedar::Gateway }", s, 1, 19, "unknown type");
	DERIVE_ERROR("event <A>::r { g: Set }", s, 1, 19, "unknown type `Set`");
	DERIVE_ERROR("event <A>::r { g: Drupe::Action }", s, 1, 19, "unknown type");
	DERIVE_ERROR("event <A>::r { g: Drupe::Meta }", s, 1, 19, "unknown type");
	DERIVE_ERROR("event <A>::r {\n  ...inputs(A) }", bad_in, 2, 3,
		     "`...inputs(A)` on action `Action::\"a\"`: `context.input` is not a record, so "
		     "it has no fields to spread");
	DERIVE_ERROR("event <A>::request { ...inputs(A) }", dotted, 1, 12,
		     "event `Action::\"a\"::request` has two fields or groups at path `input.a.b`");
	{
		struct dw_evschema *ok = DERIVE("event <A>::request { ...inputs(A) }", dotted_ok);
		const struct dw_evdecl *e = ok ? find(ok, "Action", "a", "request") : NULL;

		CHECK(e != NULL && field(e, "input.a.b") != NULL && field(e, "input.c d") != NULL);
		CHECK(e != NULL && field(e, "input.") != NULL);
		dw_evschema_free(ok);
	}

	/* a type whose inlined tree doubles per level: refused by the budget */
	diamond = malloc(8192);
	n += (size_t)snprintf(diamond + n, 8192 - n, "entity U; type T0 = { v: String };\n");
	for (int k = 1; k <= 40; k++)
		n += (size_t)snprintf(diamond + n, 8192 - n, "type T%d = { a: T%d, b: T%d };\n", k,
				      k - 1, k - 1);
	snprintf(diamond + n, 8192 - n, "action \"r\" appliesTo { principal: U, resource: U, "
					"context: { input: T40 } };");
	{
		struct dw_schema *big = actions_from(diamond);

		if (big != NULL)
			DERIVE_ERROR("event <A>::request {\n  ...inputs(A) }", big, 2, 3,
				     "would have more than 10000 fields and groups");
		dw_schema_free(big);
	}
	free(diamond);

	/* an unfinished action schema */
	dw_diags_init(&d);
	CHECK_EQ_INT(dw_evschema_default(&src), 0);
	CHECK_EQ_INT(dw_evschema_derive(src, unfinished, &es, &d), -EINVAL);
	CHECK(es == NULL && d.n_errors == 1 && strstr(d.v[0].msg, "not finished"));
	CHECK_EQ_INT(dw_evschema_derive(NULL, s, &es, &d), -EINVAL);
	CHECK(es == NULL);
	dw_evschema_src_free(src);
	dw_diags_fini(&d);
out:
	dw_schema_free(unfinished);
	dw_schema_free(s);
	dw_schema_free(bad_in);
	dw_schema_free(dotted);
	dw_schema_free(dotted_ok);
	dw_schema_free(dotted_groups);
	dw_schema_free(dotted_leaf);
}

static const struct test_case tests[] = {
	{ "default_text_is_the_spec", test_default_text_is_the_spec },
	{ "default_box", test_default_box },
	{ "src_freed_before_use", test_src_freed_before_use },
	{ "attempt_outcome", test_attempt_outcome },
	{ "nested_input_records", test_nested_input_records },
	{ "named_records_and_types", test_named_records_and_types },
	{ "max_window", test_max_window },
	{ "contextual_keywords", test_contextual_keywords },
	{ "layout_freedom", test_layout_freedom },
	{ "many_actions", test_many_actions },
	{ "pins", test_pins },
	{ "pins_not_universal", test_pins_not_universal },
	{ "no_actions", test_no_actions },
	{ "data_files", test_data_files },
	{ "errors_spec_messages", test_errors_spec_messages },
	{ "errors_names", test_errors_names },
	{ "names_per_level", test_names_per_level },
	{ "errors_collected", test_errors_collected },
	{ "errors_syntax", test_errors_syntax },
	{ "long_names", test_long_names },
	{ "errors_input", test_errors_input },
	{ "errors_derive", test_errors_derive },
};

TEST_MAIN(tests)
