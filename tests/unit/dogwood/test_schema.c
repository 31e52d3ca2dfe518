/* test_schema.c - Cedar schemas: both formats, resolution, errors, limits. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "test.h"
#include "value.h"
#include "box_rules.h"

/* ---- helpers ------------------------------------------------------------- */

enum fmt { HUMAN, JSON };

/* Add one fragment and finish.  Returns the finished schema or NULL (diags
 * say why). */
static struct dw_schema *load(enum fmt f, const char *src, struct dw_diags *d)
{
	struct dw_schema *s = dw_schema_new();
	int r;

	if (s == NULL)
		return NULL;
	r = f == HUMAN ? dw_schema_add_cedar(s, "t.cedarschema", src, strlen(src), d)
		       : dw_schema_add_json(s, "t.json", src, strlen(src), d);
	if (r == 0)
		r = dw_schema_finish(s, d);
	if (r != 0) {
		dw_schema_free(s);
		return NULL;
	}
	return s;
}

static const struct dw_diag *first_error(const struct dw_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].sev == DW_SEV_ERROR)
			return &d->v[i];
	return NULL;
}

/* The input must be refused with an error at line:col (a 0 is not checked)
 * whose message contains want. */
static void expect_error_at(int line_no, enum fmt f, const char *src, unsigned line,
			    unsigned col, const char *want)
{
	struct dw_diags d;
	struct dw_schema *s;
	const struct dw_diag *e;

	dw_diags_init(&d);
	s = load(f, src, &d);
	e = first_error(&d);
	if (s != NULL || e == NULL || (line && e->line != line) || (col && e->col != col) ||
	    strstr(e->msg, want) == NULL) {
		test_failed++;
		fprintf(stderr, "%s:%d: expected error %u:%u \"%s\" for:\n  %s\n  got: %s %u:%u \"%s\"\n",
			__FILE__, line_no, line, col, want, src, s ? "accepted" : "refused",
			e ? e->line : 0, e ? e->col : 0, e ? e->msg : "(no error)");
	} else {
		test_passed++;
	}
	dw_schema_free(s);
	dw_diags_fini(&d);
}

#define EXPECT_ERROR(f, src, line, col, want) expect_error_at(__LINE__, f, src, line, col, want)

static struct dw_schema *must_load(int line_no, enum fmt f, const char *src)
{
	struct dw_diags d;
	struct dw_schema *s;

	dw_diags_init(&d);
	s = load(f, src, &d);
	if (s == NULL || d.n_errors != 0) {
		const struct dw_diag *e = first_error(&d);

		test_failed++;
		fprintf(stderr, "%s:%d: schema refused: %u:%u %s\n  %s\n", __FILE__, line_no,
			e ? e->line : 0, e ? e->col : 0, e ? e->msg : "?", src);
	} else {
		test_passed++;
	}
	dw_diags_fini(&d);
	return s;
}

#define MUST_LOAD(f, src) must_load(__LINE__, f, src)

static char *fmt_type(const struct dw_type *t)
{
	static char out[8192];
	struct dw_buf b = { NULL, 0, 0 };

	out[0] = '\0';
	if (dw_type_format(&b, t) == 0 && b.p != NULL) {
		size_t n = b.n < sizeof out - 1 ? b.n : sizeof out - 1;

		memcpy(out, b.p, n);
		out[n] = '\0';
	}
	dw_buf_free(&b);
	return out;
}

static const struct dw_etype *etype(const struct dw_schema *s, const char *name)
{
	return dw_schema_find_etype(s, dw_str_c(name));
}

static const struct dw_action *action(const struct dw_schema *s, const char *type, const char *id)
{
	return dw_schema_find_action(s, dw_str_c(type), dw_str_c(id));
}

/* The type of attribute name in a record type, or NULL. */
static const struct dw_attr *attr(const struct dw_type *rec, const char *name)
{
	if (rec == NULL || rec->kind != DW_T_RECORD)
		return NULL;
	for (uint32_t i = 0; i < rec->rec.n; i++)
		if (dw_str_eq_c(rec->rec.v[i].name, name))
			return &rec->rec.v[i];
	return NULL;
}

/* A canonical dump of a finished schema, to compare two schemas. */
static void dump(const struct dw_schema *s, struct dw_buf *b)
{
	for (uint32_t i = 0; i < s->n_etypes; i++) {
		const struct dw_etype *e = s->etypes[i];

		dw_buf_printf(b, "entity %.*s in [", (int)e->name.n, e->name.p);
		for (uint32_t k = 0; k < e->n_member_of; k++)
			dw_buf_printf(b, "%s%.*s", k ? "," : "", (int)e->member_of[k]->name.n,
				      e->member_of[k]->name.p);
		dw_buf_printf(b, "] shape %s", fmt_type(e->shape));
		dw_buf_printf(b, " tags %s", e->tags ? fmt_type(e->tags) : "-");
		if (e->is_enum)
			for (uint32_t k = 0; k < e->n_enum; k++)
				dw_buf_printf(b, " \"%.*s\"", (int)e->enum_ids[k].n, e->enum_ids[k].p);
		dw_buf_putc(b, '\n');
	}
	for (uint32_t i = 0; i < s->n_actions; i++) {
		const struct dw_action *a = s->actions[i];

		dw_buf_printf(b, "action %.*s::\"%.*s\" in [", (int)a->type.n, a->type.p,
			      (int)a->id.n, a->id.p);
		for (uint32_t k = 0; k < a->n_parents; k++)
			dw_buf_printf(b, "%s%.*s", k ? "," : "", (int)a->parents[k]->id.n,
				      a->parents[k]->id.p);
		dw_buf_printf(b, "] applies %d p[", a->has_applies_to);
		for (uint32_t k = 0; k < a->n_principals; k++)
			dw_buf_printf(b, "%s%.*s", k ? "," : "", (int)a->principals[k]->name.n,
				      a->principals[k]->name.p);
		dw_buf_printf(b, "] r[");
		for (uint32_t k = 0; k < a->n_resources; k++)
			dw_buf_printf(b, "%s%.*s", k ? "," : "", (int)a->resources[k]->name.n,
				      a->resources[k]->name.p);
		dw_buf_printf(b, "] ctx %s\n", fmt_type(a->context));
	}
}

/* ---- the Box vocabulary ------------------------------------------------------------ */

static void test_box(void)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;
	const struct dw_etype *agent, *res, *op;
	const struct dw_action *a;
	const struct dw_attr *in, *out, *x;

	dw_diags_init(&d);
	CHECK_EQ_INT(dw_schema_add_box(s, &d), 0);
	CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
	CHECK_EQ_INT(d.n, 0);
	CHECK_EQ_INT(s->n_etypes, 8);
	CHECK_EQ_INT(s->n_actions, 10);

	agent = etype(s, "Box::Agent");
	res = etype(s, "Box::Resource");
	CHECK(agent != NULL && res != NULL);
	CHECK(etype(s, "Agent") == NULL);
	CHECK(agent && agent->shape->kind == DW_T_RECORD && agent->shape->rec.n == 0);
	CHECK(agent && agent->tags == NULL && !agent->is_enum && agent->n_member_of == 0);
	CHECK(agent && s->etypes[agent->index] == agent);

	op = etype(s, "Box::FsReadOperation");
	CHECK(op && op->is_enum && op->n_enum == 6);
	CHECK(op && dw_str_eq_c(op->enum_ids[0], "read_content") &&
	      dw_str_eq_c(op->enum_ids[5], "exec"));

	a = action(s, "Box::Action", "fs:read");
	CHECK(a != NULL);
	if (a != NULL) {
		CHECK(a->has_applies_to);
		CHECK(a->n_principals == 1 && a->principals[0] == agent);
		CHECK(a->n_resources == 1 && a->resources[0] == res);
		CHECK_EQ_INT(a->n_parents, 0);
		in = attr(a->context, "input");
		out = attr(a->context, "output");
		CHECK(in && in->required && out && !out->required);
		x = in ? attr(in->type, "operation") : NULL;
		CHECK(x && x->type->kind == DW_T_ENTITY && x->type->entity == op);
		CHECK_EQ_STR(fmt_type(a->context), "{ input: { operation: Box::FsReadOperation, "
			     "path: String }, output?: { result: Box::FsResponseResult } }");
		CHECK(s->actions[a->index] == a);
	}
	a = action(s, "Box::Action", "http:request");
	in = a ? attr(a->context, "input") : NULL;
	x = in ? attr(in->type, "intercepted") : NULL;
	CHECK(x && x->required && x->type->kind == DW_T_BOOL);
	a = action(s, "Box::Action", "shell:spawn");
	in = a ? attr(a->context, "input") : NULL;
	x = in ? attr(in->type, "credential_reads") : NULL;
	CHECK(x && !x->required && x->type->kind == DW_T_SET &&
	      x->type->elem->kind == DW_T_STRING);
	CHECK_EQ_STR(x ? fmt_type(x->type) : "", "Set<String>");
	a = action(s, "Box::Action", "net:connect");
	in = a ? attr(a->context, "input") : NULL;
	CHECK_EQ_STR(in ? fmt_type(in->type) : "", "{ host: String, ip?: String, port: Long }");
	CHECK(a && attr(a->context, "output") == NULL);

	CHECK(action(s, "Box::Action", "fs:other") != NULL);
	CHECK(action(s, "Action", "fs:read") == NULL);
	CHECK(action(s, "Box::Action", "fs:nope") == NULL);
	CHECK(dw_schema_is_action_type(s, DW_STR_LIT("Box::Action")));
	CHECK(!dw_schema_is_action_type(s, DW_STR_LIT("Action")));
	CHECK(!dw_schema_is_action_type(s, DW_STR_LIT("Box::Agent")));

	dw_diags_fini(&d);
	dw_schema_free(s);
}

/* dw_box_schema_text is generated from src/dogwood/engine/box-actions.cedarschema,
 * itself a copy of Box's published action schema, kept in
 * tests/data/box/box-actions.cedarschema: all three must agree. */
static void test_box_text_in_sync(void)
{
	static const char *const paths[] = {
		CAIRN_SOURCE_DIR "/src/dogwood/engine/box-actions.cedarschema",
		TEST_DATA_DIR "/box/box-actions.cedarschema",
	};

	for (size_t i = 0; i < DW_N_ELEMENTS(paths); i++) {
		size_t n = 0;
		char *txt = test_read_file(paths[i], &n);

		CHECK(txt != NULL);
		if (txt == NULL) {
			fprintf(stderr, "  cannot read %s\n", paths[i]);
			continue;
		}
		CHECK_EQ_INT(n, strlen(dw_box_schema_text));
		CHECK(strcmp(txt, dw_box_schema_text) == 0);
		free(txt);
	}
}

/* ---- conformance schemas ------------------------------------------------------------- */

static void test_testdata_schemas(void)
{
	char dir[512], path[1024];
	DIR *dp;
	struct dirent *de;
	int count = 0;

	snprintf(dir, sizeof dir, "%s/cedar", TEST_DATA_DIR);
	dp = opendir(dir);
	CHECK(dp != NULL);
	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		struct dw_schema *s;
		struct dw_diags d;
		size_t n;
		char *src;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/schema.cedarschema", dir, de->d_name);
		src = test_read_file(path, &n);
		if (src == NULL)
			continue;
		count++;
		dw_diags_init(&d);
		s = dw_schema_new();
		CHECK_EQ_INT(dw_schema_add_cedar(s, path, src, n, &d), 0);
		CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
		CHECK_EQ_INT(d.n_errors, 0);
		CHECK(s->n_actions >= 1 && s->n_etypes >= 1);
		if (strcmp(de->d_name, "decimal-1") == 0) {
			const struct dw_etype *photo = etype(s, "Photo");
			const struct dw_action *v = action(s, "Action", "view");
			const struct dw_attr *cs = v ? attr(v->context, "confidence_score") : NULL;

			CHECK(photo && photo->n_member_of == 2 &&
			      photo->member_of[0] == etype(s, "Account") &&
			      photo->member_of[1] == etype(s, "Album"));
			CHECK(cs && cs->type->kind == DW_T_EXT && cs->type->ext == DW_EXT_DECIMAL);
			CHECK_EQ_STR(fmt_type(etype(s, "Account")->shape),
				     "{ admins: Set<User>, owner: User, private: Bool }");
		}
		dw_schema_free(s);
		dw_diags_fini(&d);
		free(src);
	}
	closedir(dp);
	CHECK(count >= 13);
}

/* ---- grammar --------------------------------------------------------------------------- */

static void test_grammar(void)
{
	struct dw_schema *s;
	const struct dw_etype *a, *b;
	const struct dw_action *act;

	/* several names, optional `=`, tags, trailing commas, annotations,
	 * comments, keywords used as names */
	s = MUST_LOAD(HUMAN,
		"// leading comment\n"
		"@doc(\"top\") @flag\n"
		"entity C;\n"
		"entity A, B in [C] = {\n"
		"  @doc(\"an attr\") x: Long, // trailing\n"
		"  \"my attr\"?: Set<Set<String>>,\n"
		"} tags String;\n"
		"entity D in C { };\n"
		"entity entity, type, tags, namespace, appliesTo, Set;\n"
		"entity E { principal: Long, context: Bool, enum: String, };\n"
		"@x action \"r\\u{e9}ad\\x41\\t\" appliesTo {\n"
		"  principal: [A, B], resource: C, context: { ok: Bool },\n"
		"} attributes {};\n"
		"action write, \"w2\" in [\"r\\u{e9}adA\\t\"];\n"
		"action none;\n");
	if (s != NULL) {
		a = etype(s, "A");
		b = etype(s, "B");
		CHECK(a && b && a->n_member_of == 1 && a->member_of[0] == etype(s, "C"));
		CHECK(a && a->tags && a->tags->kind == DW_T_STRING);
		CHECK_EQ_STR(a ? fmt_type(a->shape) : "", "{ \"my attr\"?: Set<Set<String>>, x: Long }");
		CHECK_EQ_STR(b ? fmt_type(b->shape) : "", "{ \"my attr\"?: Set<Set<String>>, x: Long }");
		CHECK(etype(s, "D") && etype(s, "D")->shape->rec.n == 0);
		CHECK(etype(s, "entity") && etype(s, "tags") && etype(s, "Set"));
		CHECK_EQ_STR(fmt_type(etype(s, "E")->shape),
			     "{ context: Bool, enum: String, principal: Long }");
		act = action(s, "Action", "r\xc3\xa9" "adA\t");
		CHECK(act && act->n_principals == 2 && act->n_resources == 1);
		CHECK(action(s, "Action", "write") && action(s, "Action", "write")->n_parents == 1 &&
		      action(s, "Action", "write")->parents[0] == act);
		CHECK(action(s, "Action", "none") && !action(s, "Action", "none")->has_applies_to);
		CHECK_EQ_STR(fmt_type(action(s, "Action", "none")->context), "{}");
		CHECK(dw_schema_is_action_type(s, DW_STR_LIT("Action")));
	}
	dw_schema_free(s);

	/* enums, nested namespaces, `\0` and `\'` escapes, NUL in an id */
	s = MUST_LOAD(HUMAN,
		"namespace A::B {\n"
		"  entity Color enum [\"red\", \"gr\\u{e9}en\", \"a\\0b\", \"it\\'s\"];\n"
		"  entity Thing in [Color] = { c?: Color };\n"
		"  action go appliesTo { principal: Thing, resource: [Color], context: {} };\n"
		"}\n");
	if (s != NULL) {
		const struct dw_etype *c = etype(s, "A::B::Color");

		CHECK(c && c->is_enum && c->n_enum == 4);
		CHECK(c && c->enum_ids[2].n == 3 && memcmp(c->enum_ids[2].p, "a\0b", 3) == 0);
		CHECK(c && dw_str_eq_c(c->enum_ids[1], "gr\xc3\xa9" "en"));
		CHECK(c && dw_str_eq_c(c->enum_ids[3], "it's"));
		CHECK(action(s, "A::B::Action", "go") != NULL);
		CHECK(dw_schema_is_action_type(s, DW_STR_LIT("A::B::Action")));
		CHECK_EQ_STR(fmt_type(etype(s, "A::B::Thing")->shape), "{ c?: A::B::Color }");
	}
	dw_schema_free(s);

	/* Unicode whitespace and an empty schema */
	s = MUST_LOAD(HUMAN, "\xc2\xa0" "entity\xe2\x80\x83U;\xe3\x80\x80");
	CHECK(s && etype(s, "U") != NULL);
	dw_schema_free(s);
	s = MUST_LOAD(HUMAN, "  // nothing\n");
	CHECK(s && s->n_etypes == 0 && s->n_actions == 0);
	dw_schema_free(s);
}

/* ---- name resolution ---------------------------------------------------------------------- */

static void test_resolution(void)
{
	struct dw_schema *s;
	const struct dw_etype *x;
	const struct dw_action *a;

	/* a common type wins over an entity type of the same name */
	s = MUST_LOAD(HUMAN, "entity T; type T = Long; entity X = { t: T, s: Set<T> };");
	CHECK_EQ_STR(s ? fmt_type(etype(s, "X")->shape) : "", "{ s: Set<Long>, t: Long }");
	dw_schema_free(s);

	/* the current namespace first, then the empty one */
	s = MUST_LOAD(HUMAN, "entity Foo; namespace N { entity Bar = { f: Foo, g: Baz }; entity Baz; }");
	CHECK_EQ_STR(s ? fmt_type(etype(s, "N::Bar")->shape) : "", "{ f: Foo, g: N::Baz }");
	dw_schema_free(s);

	/* NS common type beats the empty namespace's entity of that name is
	 * impossible (RFC 70 shadowing); a qualified name is taken as is */
	s = MUST_LOAD(HUMAN,
		"namespace N { type Id = String; entity U = { id: Id, other: M::U }; }\n"
		"namespace M { entity U = { id: N::Id }; }\n");
	CHECK_EQ_STR(s ? fmt_type(etype(s, "N::U")->shape) : "", "{ id: String, other: M::U }");
	CHECK_EQ_STR(s ? fmt_type(etype(s, "M::U")->shape) : "", "{ id: String }");
	dw_schema_free(s);

	/* built-ins: Bool/Long/String and the extension types, aliased into the
	 * empty namespace unless declared there; `__cedar::` always works */
	s = MUST_LOAD(HUMAN,
		"namespace N { entity String; entity X = { a: String, b: __cedar::String, c: Bool }; }\n"
		"entity Long; entity Y = { a: Long, b: __cedar::Long };\n"
		"type ipaddr = String; entity Z = { a: ipaddr, b: __cedar::ipaddr, c: datetime,"
		" d: duration, e: decimal, f: __cedar::Bool };\n");
	if (s != NULL) {
		CHECK_EQ_STR(fmt_type(etype(s, "N::X")->shape), "{ a: N::String, b: String, c: Bool }");
		CHECK_EQ_STR(fmt_type(etype(s, "Y")->shape), "{ a: Long, b: Long }");
		x = etype(s, "Y");
		CHECK(x && attr(x->shape, "a")->type->kind == DW_T_ENTITY &&
		      attr(x->shape, "b")->type->kind == DW_T_LONG);
		CHECK_EQ_STR(fmt_type(etype(s, "Z")->shape), "{ a: String, b: ipaddr, c: datetime, "
			     "d: duration, e: decimal, f: Bool }");
	}
	dw_schema_free(s);

	/* `Boolean` is JSON spelling only */
	EXPECT_ERROR(HUMAN, "entity X = { b: Boolean };", 1, 17, "failed to resolve type: Boolean");

	/* action parents: same namespace first, then the empty namespace */
	s = MUST_LOAD(HUMAN,
		"action b; action top;\n"
		"namespace N { action a in [\"b\", Action::\"top\"]; action c in a; action d in N::Action::\"c\"; }\n"
		"namespace M { action x; action a in x; }\n");
	if (s != NULL) {
		const struct dw_action *na = action(s, "N::Action", "a");
		const struct dw_action *ma = action(s, "M::Action", "a");

		CHECK(na && na->n_parents == 2 && na->parents[0] == action(s, "Action", "b") &&
		      na->parents[1] == action(s, "Action", "top"));
		CHECK(ma && ma->n_parents == 1 && ma->parents[0] == action(s, "M::Action", "x"));
		a = action(s, "N::Action", "d");
		CHECK(dw_schema_action_in(s, a, action(s, "Action", "top")));
		CHECK(dw_schema_action_in(s, a, action(s, "N::Action", "c")));
		CHECK(dw_schema_action_in(s, a, a));
		CHECK(!dw_schema_action_in(s, action(s, "Action", "top"), a));
		CHECK(!dw_schema_action_in(s, ma, action(s, "Action", "b")));
		CHECK(dw_schema_action_in(s, ma, action(s, "M::Action", "x")));
	}
	dw_schema_free(s);

	/* context as a common type, possibly from another namespace */
	s = MUST_LOAD(HUMAN,
		"namespace C { type Ctx = { n: Long, tags?: Set<String> }; }\n"
		"entity U;\n"
		"action a appliesTo { principal: U, resource: U, context: C::Ctx };\n");
	CHECK_EQ_STR(s ? fmt_type(action(s, "Action", "a")->context) : "",
		     "{ n: Long, tags?: Set<String> }");
	dw_schema_free(s);

	/* common types used before their declaration, through chains */
	s = MUST_LOAD(HUMAN,
		"entity E = { a: A };\n"
		"type A = B; type B = { c: C, d: Set<C> }; type C = E;\n");
	CHECK_EQ_STR(s ? fmt_type(etype(s, "E")->shape) : "", "{ a: { c: E, d: Set<E> } }");
	dw_schema_free(s);

	/* duplicate parents and principals collapse, as in Cedar's sets */
	s = MUST_LOAD(HUMAN, "entity P; entity U in [P, P]; action g; "
		      "action a in [g, g] appliesTo { principal: [U, U], resource: [U, P, U] };");
	if (s != NULL) {
		CHECK_EQ_INT(etype(s, "U")->n_member_of, 1);
		a = action(s, "Action", "a");
		CHECK(a && a->n_parents == 1 && a->n_principals == 1 && a->n_resources == 2);
	}
	dw_schema_free(s);

	/* self-membership of entity types is allowed (only actions must be acyclic) */
	s = MUST_LOAD(HUMAN, "entity G in [G, H]; entity H in [G];");
	CHECK(s && etype(s, "G")->n_member_of == 2);
	dw_schema_free(s);
}

/* Cedar's two schema warnings (human format): not errors, but reported. */
static void test_warnings(void)
{
	struct dw_diags d;
	struct dw_schema *s;

	dw_diags_init(&d);
	s = load(HUMAN, "entity Long;\nentity T; type T = String;", &d);
	CHECK(s != NULL);
	CHECK_EQ_INT(d.n_errors, 0);
	CHECK_EQ_INT(d.n, 2);
	if (d.n == 2) {
		CHECK_EQ_INT(d.v[0].sev, DW_SEV_WARNING);
		CHECK_EQ_INT(d.v[0].line, 1);
		CHECK(strstr(d.v[0].msg, "shadows a builtin Cedar name") != NULL);
		CHECK_EQ_STR(d.v[1].msg, "The common type name T shadows an entity name");
		CHECK(d.v[1].line == 2 && d.v[1].col == 16);
	}
	dw_schema_free(s);
	dw_diags_fini(&d);
}

static void test_action_hierarchy(void)
{
	struct dw_schema *s;

	s = MUST_LOAD(HUMAN,
		"action all; action read in all; action write in all;\n"
		"action list in [read]; action edit in [read, write];\n"
		"action other;\n");
	if (s != NULL) {
		const struct dw_action *all = action(s, "Action", "all");
		const struct dw_action *read = action(s, "Action", "read");
		const struct dw_action *write = action(s, "Action", "write");
		const struct dw_action *list = action(s, "Action", "list");
		const struct dw_action *edit = action(s, "Action", "edit");
		const struct dw_action *other = action(s, "Action", "other");

		CHECK(dw_schema_action_in(s, list, all));
		CHECK(dw_schema_action_in(s, list, read));
		CHECK(!dw_schema_action_in(s, list, write));
		CHECK(dw_schema_action_in(s, edit, write) && dw_schema_action_in(s, edit, all));
		CHECK(!dw_schema_action_in(s, all, list));
		CHECK(!dw_schema_action_in(s, other, all));
		CHECK(dw_schema_action_in(s, other, other));
		CHECK(!dw_schema_action_in(s, NULL, all));
	}
	dw_schema_free(s);
}

/* ---- multiple fragments, JSON ------------------------------------------------------------------- */

static const char human_equiv[] =
	"namespace App {\n"
	"  type Meta = { owner: User, labels?: Set<String> };\n"
	"  entity Group;\n"
	"  entity User in [Group] = { name: String, age?: Long, meta: Meta, ip: ipaddr } tags Long;\n"
	"  entity Kind enum [\"a\", \"b\"];\n"
	"  action view, edit in [all] appliesTo { principal: [User], resource: [Group, Kind],"
	" context: { when: datetime, d?: decimal } };\n"
	"  action all;\n"
	"}\n"
	"entity Top in [App::Group];\n";

static const char json_equiv[] =
	"{\n"
	"  \"App\": {\n"
	"    \"annotations\": { \"doc\": \"x\" },\n"
	"    \"commonTypes\": {\n"
	"      \"Meta\": { \"type\": \"Record\", \"attributes\": {\n"
	"        \"owner\": { \"type\": \"Entity\", \"name\": \"User\" },\n"
	"        \"labels\": { \"type\": \"Set\", \"element\": { \"type\": \"String\" },"
	" \"required\": false } } }\n"
	"    },\n"
	"    \"entityTypes\": {\n"
	"      \"Group\": {},\n"
	"      \"User\": { \"memberOfTypes\": [\"Group\"], \"shape\": { \"type\": \"Record\","
	" \"attributes\": {\n"
	"        \"name\": { \"type\": \"String\" },\n"
	"        \"age\": { \"type\": \"Long\", \"required\": false },\n"
	"        \"meta\": { \"type\": \"Meta\" },\n"
	"        \"ip\": { \"type\": \"Extension\", \"name\": \"ipaddr\" } } },\n"
	"        \"tags\": { \"type\": \"EntityOrCommon\", \"name\": \"Long\" } },\n"
	"      \"Kind\": { \"enum\": [\"a\", \"b\"], \"annotations\": { \"if\": null } }\n"
	"    },\n"
	"    \"actions\": {\n"
	"      \"view\": { \"memberOf\": [{ \"id\": \"all\" }], \"appliesTo\": {"
	" \"principalTypes\": [\"User\"], \"resourceTypes\": [\"Group\", \"Kind\"],"
	" \"context\": { \"type\": \"Record\", \"attributes\": {"
	" \"when\": { \"type\": \"Extension\", \"name\": \"datetime\" },"
	" \"d\": { \"type\": \"Extension\", \"name\": \"decimal\", \"required\": false } } } } },\n"
	"      \"edit\": { \"memberOf\": [{ \"id\": \"all\", \"type\": \"App::Action\" }],"
	" \"appliesTo\": { \"principalTypes\": [\"User\"], \"resourceTypes\": [\"Group\", \"Kind\"],"
	" \"context\": { \"type\": \"Record\", \"attributes\": {"
	" \"when\": { \"type\": \"EntityOrCommon\", \"name\": \"datetime\" },"
	" \"d\": { \"type\": \"EntityOrCommon\", \"name\": \"__cedar::decimal\", \"required\": false } } } } },\n"
	"      \"all\": { \"memberOf\": null, \"appliesTo\": null }\n"
	"    }\n"
	"  },\n"
	"  \"\": { \"entityTypes\": { \"Top\": { \"memberOfTypes\": [\"App::Group\"] } }, \"actions\": {} }\n"
	"}\n";

static void test_json_equivalent(void)
{
	struct dw_schema *h = MUST_LOAD(HUMAN, human_equiv);
	struct dw_schema *j = MUST_LOAD(JSON, json_equiv);
	struct dw_buf bh = { NULL, 0, 0 }, bj = { NULL, 0, 0 };

	if (h != NULL && j != NULL) {
		dump(h, &bh);
		dump(j, &bj);
		dw_buf_putc(&bh, '\0');
		dw_buf_putc(&bj, '\0');
		CHECK_EQ_STR(bj.p, bh.p);
		CHECK(strstr(bh.p, "entity App::User in [App::Group] shape { age?: Long, ip: ipaddr, "
			     "meta: { labels?: Set<String>, owner: App::User }, name: String } tags Long")
		      != NULL);
		CHECK(dw_schema_action_in(j, action(j, "App::Action", "edit"),
					  action(j, "App::Action", "all")));
	}
	dw_buf_free(&bh);
	dw_buf_free(&bj);
	dw_schema_free(h);
	dw_schema_free(j);
}

static void test_fragments(void)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;
	const char *h = "namespace Core { entity User; action read; }\n";
	const char *j = "{ \"Tools\": { \"entityTypes\": { \"Doc\": { \"memberOfTypes\": [\"Core::User\"] } },"
			" \"actions\": { \"fetch\": { \"memberOf\": [{ \"id\": \"read\", \"type\": \"Core::Action\" }],"
			" \"appliesTo\": { \"principalTypes\": [\"Core::User\"], \"resourceTypes\": [\"Doc\"],"
			" \"context\": { \"type\": \"Core::Ctx\" } } } } } }";
	const char *h2 = "namespace Core { type Ctx = { n: Long }; }\n";

	dw_diags_init(&d);
	CHECK_EQ_INT(dw_schema_add_box(s, &d), 0);
	CHECK_EQ_INT(dw_schema_add_cedar(s, "core.cedarschema", h, strlen(h), &d), 0);
	CHECK_EQ_INT(dw_schema_add_json(s, "tools.json", j, strlen(j), &d), 0);
	CHECK_EQ_INT(dw_schema_add_cedar(s, "ctx.cedarschema", h2, strlen(h2), &d), 0);
	CHECK(dw_schema_find_etype(s, DW_STR_LIT("Core::User")) == NULL);   /* not finished */
	CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
	CHECK_EQ_INT(d.n_errors, 0);
	if (s->finished) {
		const struct dw_action *f = action(s, "Tools::Action", "fetch");

		CHECK(f && f->n_parents == 1 && f->parents[0] == action(s, "Core::Action", "read"));
		CHECK(f && f->principals[0] == etype(s, "Core::User"));
		CHECK_EQ_STR(f ? fmt_type(f->context) : "", "{ n: Long }");
		CHECK(etype(s, "Tools::Doc")->member_of[0] == etype(s, "Core::User"));
		CHECK(action(s, "Box::Action", "mcp:call") != NULL);
		CHECK_EQ_INT(s->n_actions, 12);
		/* finishing twice is harmless; adding afterwards is refused */
		CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
		CHECK_EQ_INT(dw_schema_add_cedar(s, "late", "entity Z;", 9, &d), -EINVAL);
	}
	dw_diags_fini(&d);
	dw_schema_free(s);

	/* the same name in two fragments: reported by finish */
	s = dw_schema_new();
	dw_diags_init(&d);
	{
		const char *a = "namespace N { entity A; action x; }";
		const char *b = "{\"N\": {\"entityTypes\": {\"A\": {}}, \"actions\": {\"x\": {}}}}";

		CHECK_EQ_INT(dw_schema_add_cedar(s, "a", a, strlen(a), &d), 0);
		CHECK_EQ_INT(dw_schema_add_json(s, "b.json", b, strlen(b), &d), 0);
	}
	CHECK_EQ_INT(dw_schema_finish(s, &d), -EINVAL);
	CHECK(d.n_errors == 2 && strcmp(d.v[0].msg, "/N/entityTypes/A: duplicate entity type `N::A`") == 0);
	CHECK(d.n_errors == 2 && strcmp(d.v[1].msg, "/N/actions/x: duplicate action `N::Action::\"x\"`") == 0);
	CHECK_EQ_STR(d.v[0].file, "b.json");
	dw_diags_fini(&d);
	dw_schema_free(s);

	/* a failed fragment poisons the schema */
	s = dw_schema_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(dw_schema_add_cedar(s, "bad", "entity", 6, &d), -EINVAL);
	CHECK_EQ_INT(dw_schema_add_cedar(s, "good", "entity A;", 9, &d), 0);
	CHECK_EQ_INT(dw_schema_finish(s, &d), -EINVAL);
	CHECK(s->n_etypes == 0 && dw_schema_find_etype(s, DW_STR_LIT("A")) == NULL);
	dw_diags_fini(&d);
	dw_schema_free(s);
	dw_schema_free(NULL);
}

/* ---- errors with positions ------------------------------------------------------------------------- */

/* Cedar keeps an enumerated type's ids as listed: a repeat and the empty id
 * load (cedar-wasm 4.13 validates `entity A enum ["", ""];` in both formats). */
static void test_enum_repeats(void)
{
	static const char *const human[] = {
		"entity A enum [\"\", \"\"];",
		"entity A enum [\"p\", \"q\", \"p\"];",
	};
	static const char *const json[] = {
		"{\"\": {\"entityTypes\": {\"A\": {\"enum\": [\"\", \"\"]}}, \"actions\": {}}}",
		"{\"\": {\"entityTypes\": {\"A\": {\"enum\": [\"p\", \"q\", \"p\"]}}, \"actions\": {}}}",
	};

	for (int k = 0; k < 2; k++) {
		struct dw_schema *h = MUST_LOAD(HUMAN, human[k]), *j = MUST_LOAD(JSON, json[k]);
		const struct dw_etype *eh = h ? etype(h, "A") : NULL, *ej = j ? etype(j, "A") : NULL;

		CHECK(eh && eh->is_enum && eh->n_enum == (k == 0 ? 2u : 3u));
		CHECK(ej && ej->is_enum && ej->n_enum == (k == 0 ? 2u : 3u));
		if (k == 0)
			CHECK(eh && ej && eh->enum_ids[0].n == 0 && ej->enum_ids[1].n == 0);
		dw_schema_free(h);
		dw_schema_free(j);
	}
}

static void test_errors_human(void)
{
	/* lexing and syntax */
	EXPECT_ERROR(HUMAN, "entity A", 1, 9, "unexpected end of input");
	EXPECT_ERROR(HUMAN, "entity A;\nentity B = C;", 2, 12, "unexpected token `C`; expected `{`");
	EXPECT_ERROR(HUMAN, "entity A = { a: Long }\n", 2, 1, "unexpected end of input");
	EXPECT_ERROR(HUMAN, "entity A; $", 1, 11, "invalid token");
	EXPECT_ERROR(HUMAN, "action \"abc;", 1, 8, "unterminated string literal");
	EXPECT_ERROR(HUMAN, "entity 1A;", 1, 8, "unexpected token `1`");
	EXPECT_ERROR(HUMAN, "entity A enum [];", 1, 16, "expected string literal");
	EXPECT_ERROR(HUMAN, "entity A enum [\"a\",];", 1, 20, "expected string literal");
	EXPECT_ERROR(HUMAN, "action a in [];", 1, 14, "expected an action name");
	EXPECT_ERROR(HUMAN, "entity X; action a appliesTo { principal: [X,], resource: X };", 1, 46,
		     "unexpected token `]`");
	EXPECT_ERROR(HUMAN, "entity X; action a appliesTo {};", 1, 31, "expected `principal`");
	EXPECT_ERROR(HUMAN, "namespace A { namespace B { } }", 1, 15, "unexpected token `namespace`");
	EXPECT_ERROR(HUMAN, "entity A = { a: Long, , };", 1, 23, "expected attribute name");
	EXPECT_ERROR(HUMAN, "entity A; action a in A::B;", 1, 27, "expected `::`");
	EXPECT_ERROR(HUMAN, "entity \xff;", 1, 8, "not valid UTF-8");
	EXPECT_ERROR(HUMAN, "action \"a\\\nb\";", 1, 8, "unterminated string literal");

	/* escapes */
	EXPECT_ERROR(HUMAN, "action \"x\\q\";", 1, 10, "invalid escape `\\q`");
	EXPECT_ERROR(HUMAN, "action \"\\x80\";", 1, 9, "invalid escape `\\x80`");
	EXPECT_ERROR(HUMAN, "action \"\\u{D800}\";", 1, 9, "invalid escape");
	EXPECT_ERROR(HUMAN, "action \"\\u{110000}\";", 1, 9, "invalid escape");
	EXPECT_ERROR(HUMAN, "action \"\\u{1234567}\";", 1, 9, "invalid escape");
	EXPECT_ERROR(HUMAN, "action \"\\u{}\";", 1, 9, "invalid escape");
	EXPECT_ERROR(HUMAN, "action \"a\rb\";", 1, 10, "bare carriage return");
	EXPECT_ERROR(HUMAN, "@a(\"\\z\") entity A;", 1, 5, "invalid escape");

	/* names */
	EXPECT_ERROR(HUMAN, "entity if;", 1, 8, "`if` is a reserved identifier");
	EXPECT_ERROR(HUMAN, "entity X = { in: Long };", 1, 14, "`in` is a reserved identifier");
	EXPECT_ERROR(HUMAN, "action is;", 1, 8, "`is` is a reserved identifier");
	EXPECT_ERROR(HUMAN, "entity X = { a: has::B };", 1, 17, "`has` is a reserved identifier");
	EXPECT_ERROR(HUMAN, "entity __cedar;", 1, 8, "use of the reserved `__cedar` namespace");
	EXPECT_ERROR(HUMAN, "namespace A::__cedar::B { }", 1, 11, "reserved `__cedar`");
	EXPECT_ERROR(HUMAN, "type Long = String;", 1, 6,
		     "this uses a reserved schema keyword: `Long`");
	EXPECT_ERROR(HUMAN, "type Record = String;", 1, 6, "reserved schema keyword");
	EXPECT_ERROR(HUMAN, "namespace N {\n  entity Action;\n}", 2, 10,
		     "entity type `Action` declared in `entityTypes` list");

	/* duplicates */
	EXPECT_ERROR(HUMAN, "entity A;\nentity B, A;", 2, 11, "`A` is declared twice");
	EXPECT_ERROR(HUMAN, "type T = Long; type T = String;", 1, 21, "`T` is declared twice");
	EXPECT_ERROR(HUMAN, "action \"a\"; action a;", 1, 20, "`a` is declared twice");
	EXPECT_ERROR(HUMAN, "namespace A { }\nnamespace A { }", 2, 11, "duplicate namespace id: `A`");
	EXPECT_ERROR(HUMAN, "@a @b @a entity X;", 1, 8, "duplicate annotations: `a`");
	EXPECT_ERROR(HUMAN, "entity X = { a: Long, \"a\": String };", 1, 23,
		     "duplicate attribute `a`");

	/* appliesTo */
	EXPECT_ERROR(HUMAN, "entity X;\naction view appliesTo { principal: [], resource: X };", 2, 25,
		     "for action `view`, `principal` is `[]`, which is invalid");
	EXPECT_ERROR(HUMAN, "entity X; action a, b appliesTo { resource: [] , principal: X};", 1, 35,
		     "for action `a`, `resource` is `[]`");
	EXPECT_ERROR(HUMAN, "entity X; action v appliesTo { principal: X };", 1, 18,
		     "missing `resource` declaration for `v`");
	EXPECT_ERROR(HUMAN, "entity X; action v appliesTo { resource: X, context: {} };", 1, 18,
		     "missing `principal` declaration for `v`");
	EXPECT_ERROR(HUMAN, "entity X; action v appliesTo { principal: X, principal: X, resource: X };",
		     1, 46, "duplicate `principal` declaration in action `v`");
	EXPECT_ERROR(HUMAN, "entity X; action v appliesTo { principal: X, resource: X, context: {},"
		     " context: {} };", 1, 72, "duplicate context declaration in action `v`");

	/* resolution, found by finish */
	EXPECT_ERROR(HUMAN, "entity A = { a: Foo };", 1, 17, "failed to resolve type: Foo");
	EXPECT_ERROR(HUMAN, "entity A;\n\nentity B in [A, Nope];", 3, 17, "failed to resolve type: Nope");
	EXPECT_ERROR(HUMAN, "type T = Long; entity B in [T];", 1, 29, "failed to resolve type: T");
	EXPECT_ERROR(HUMAN, "entity X; action a appliesTo { principal: X, resource: X, context: X };",
		     1, 68, "failed to resolve type: X");
	EXPECT_ERROR(HUMAN, "namespace N { entity A = { b: M::B }; }", 1, 31,
		     "failed to resolve type: M::B");
	EXPECT_ERROR(HUMAN, "entity A = { b: __cedar::Boolean };", 1, 17, "failed to resolve type");
	EXPECT_ERROR(HUMAN, "action a in \"nope\";", 1, 13, "undeclared action: Action::\"nope\"");
	EXPECT_ERROR(HUMAN, "namespace N { action b; } action a in M::Action::\"b\";", 1, 39,
		     "undeclared action: M::Action::\"b\"");
	EXPECT_ERROR(HUMAN, "type A = B;\ntype B = { c: Set<A> };", 1, 6,
		     "cycle in common type references containing `A`");
	EXPECT_ERROR(HUMAN, "type A = A;", 1, 6, "cycle in common type references containing `A`");
	EXPECT_ERROR(HUMAN, "action a in b;\naction b in c;\naction c in a;", 1, 8,
		     "cycle in action hierarchy containing `Action::\"a\"`");
	EXPECT_ERROR(HUMAN, "action a in a;", 1, 8, "cycle in action hierarchy");
	EXPECT_ERROR(HUMAN, "type C = Long; entity X;\naction a appliesTo { context: C, principal: X,"
		     " resource: X };", 2, 8,
		     "Context for action Action::\"a\" is declared with a type other than `Record`");
	EXPECT_ERROR(HUMAN, "namespace N { entity Foo; }\nentity Foo;", 1, 22,
		     "definition of `N::Foo` illegally shadows the existing definition of `Foo`");
	EXPECT_ERROR(HUMAN, "action a; entity X in [Action];", 1, 24, "undeclared entity type: Action");
	EXPECT_ERROR(HUMAN, "namespace N { action a; entity X = { a: Action }; }", 1, 41,
		     "undeclared entity type: Action");
	EXPECT_ERROR(HUMAN, "namespace N { action a; } action a;", 1, 22,
		     "definition of `N::Action::\"a\"` illegally shadows the existing definition of "
		     "`Action::\"a\"`");
}

static void test_errors_json(void)
{
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {}}}", 0, 0, "/: missing field `actions`");
	EXPECT_ERROR(JSON, "{\"X\": 1}", 0, 0, "/X: invalid type: integer, expected a namespace");
	EXPECT_ERROR(JSON, "{\"N\": {\"entityTypes\": {\"A\": {\"foo\": 1}}, \"actions\": {}}}", 0, 0,
		     "/N/entityTypes/A: unknown field `foo`, expected one of `memberOfTypes`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {\"x\": {\"type\": \"Set\", \"element\": {\"type\": \"Long\","
		     " \"required\": false}}}}}}, \"actions\": {}}}", 0, 0,
		     "//entityTypes/A/shape/attributes/x/element: unknown field `required`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {\"x\": {\"type\": \"Entity\"}}}}}, \"actions\": {}}}", 0, 0,
		     "missing field `name`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": {\"type\": \"Long\"}}},"
		     " \"actions\": {}}}", 0, 0,
		     "Shape for entity type A is declared with a type other than `Record`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": null}}, \"actions\": {}}}", 0, 0,
		     "invalid type: null");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"enum\": []}}, \"actions\": {}}}", 0, 0,
		     "at least one element");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"enum\": [\"x\"], \"tags\": {\"type\": \"Long\"}}},"
		     " \"actions\": {}}}", 0, 0, "unexpected field: tags");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {\"x\": {\"type\": \"Extension\", \"name\": \"ip\"}}}}},"
		     " \"actions\": {}}}", 0, 0, "unknown extension type `ip`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {}, \"additionalAttributes\": true}}}, \"actions\": {}}}", 0, 0,
		     "additionalAttributes");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {}, \"actions\": {\"a\": {\"attributes\": {}}}}}",
		     0, 0, "action declared with attributes: [a]");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"X\": {}}, \"actions\": {\"a\": {\"appliesTo\":"
		     " {\"resourceTypes\": [\"X\"]}}}}}", 0, 0, "missing field `principalTypes`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {}, \"actions\": {\"a\": {\"memberOf\":"
		     " [{\"id\": \"b\", \"kind\": 1}]}}}}", 0, 0,
		     "/actions/a/memberOf/0: unknown field `kind`, expected one of `id`, `type`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {}, \"actions\": {\"a\": {\"memberOf\":"
		     " [{\"id\": \"b\", \"type\": \"X\"}]}}}}", 0, 0, "undeclared action: X::\"b\"");
	EXPECT_ERROR(JSON, "{\"\": {\"annotations\": {\"a\": \"b\"}, \"entityTypes\": {}, \"actions\": {}}}",
		     0, 0, "annotations are not allowed on the empty namespace");
	EXPECT_ERROR(JSON, "{\"N \": {\"entityTypes\": {}, \"actions\": {}}}", 0, 0,
		     "invalid namespace `N `");
	EXPECT_ERROR(JSON, "{\"A::__cedar\": {\"entityTypes\": {}, \"actions\": {}}}", 0, 0,
		     "reserved `__cedar`");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"if\": {}}, \"actions\": {}}}", 0, 0,
		     "invalid id `if`: this identifier is reserved");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"Action\": {}}, \"actions\": {}}}", 0, 0,
		     "entity type `Action` declared");
	EXPECT_ERROR(JSON, "{\"\": {\"commonTypes\": {\"Set\": {\"type\": \"Long\"}}, \"entityTypes\": {},"
		     " \"actions\": {}}}", 0, 0, "cannot be the basename of a common-type declaration: Set");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"X\": {\"memberOfTypes\": [\"Y\"]}}, \"actions\": {}}}",
		     0, 0, "//entityTypes/X/memberOfTypes/0: failed to resolve type: Y");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"X\": {}}, \"actions\": {\"a\": {\"appliesTo\":"
		     " {\"principalTypes\": [\"X\"], \"resourceTypes\": [\"X\"], \"context\": {\"type\": \"X\"}}}}}}",
		     0, 0, "failed to resolve type: X");
	EXPECT_ERROR(JSON, "{\"\": {\"commonTypes\": {\"A\": {\"type\": \"B\"}, \"B\": {\"type\": \"Set\","
		     " \"element\": {\"type\": \"A\"}}}, \"entityTypes\": {}, \"actions\": {}}}", 0, 0,
		     "cycle in common type references");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"X\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {\"a/b~\": {\"type\": \"Nope\"}}}}}, \"actions\": {}}}", 0, 0,
		     "//entityTypes/X/shape/attributes/a~1b~0/type: failed to resolve type: Nope");
	/* parser errors carry a position */
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {},\n \"actions\": {}, \"actions\": {}}}", 2, 0,
		     "duplicate object key");
	EXPECT_ERROR(JSON, "{\"\": {\n  \"entityTypes\": {} \"actions\": {}}}", 2, 0, "invalid JSON");
	EXPECT_ERROR(JSON, "[]", 0, 0, "(document): invalid type: sequence, expected a map of "
		     "namespaces");
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {\"A\": {\"enum\": [\"a\", 1, \"a\"]}},"
		     " \"actions\": {}}}", 0, 0, "//entityTypes/A/enum/1: invalid type: integer");
	/* serde would read a struct from a positional array; nobody writes that */
	EXPECT_ERROR(JSON, "{\"\": {\"entityTypes\": {}, \"actions\": {\"a\": []}}}", 0, 0,
		     "invalid type: sequence, expected an action");
	/* Cedar takes the action entity type as an attribute type; refused here */
	EXPECT_ERROR(JSON, "{\"N\": {\"entityTypes\": {\"X\": {\"shape\": {\"type\": \"Record\","
		     " \"attributes\": {\"a\": {\"type\": \"Entity\", \"name\": \"Action\"}}}}},"
		     " \"actions\": {\"go\": {}}}}", 0, 0, "undeclared entity type: Action (an action");
}

/* ---- limits ----------------------------------------------------------------------------------------- */

static char *repeat(const char *pre, const char *unit, size_t n, const char *mid, const char *close,
		    const char *post)
{
	size_t len = strlen(pre) + n * (strlen(unit) + strlen(close)) + strlen(mid) + strlen(post) + 1;
	char *s = malloc(len), *p = s;

	if (s == NULL)
		return NULL;
	p += sprintf(p, "%s", pre);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", unit);
	p += sprintf(p, "%s", mid);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", close);
	sprintf(p, "%s", post);
	return s;
}

static void test_limits(void)
{
	struct dw_schema *s;
	struct dw_diags d;
	char *src;

	/* nesting: 128 levels pass, 129 are refused (both formats) */
	src = repeat("type T = ", "Set<", 128, "Long", ">", ";");
	s = MUST_LOAD(HUMAN, src);
	dw_schema_free(s);
	free(src);
	src = repeat("type T = ", "Set<", 129, "Long", ">", ";");
	EXPECT_ERROR(HUMAN, src, 1, 10 + 128 * 4, "type nesting deeper than 128 levels");
	free(src);
	src = repeat("entity E = ", "{ a: ", 129, "Long", " }", ";");
	EXPECT_ERROR(HUMAN, src, 0, 0, "type nesting deeper than 128 levels");
	free(src);
	src = repeat("{\"\": {\"commonTypes\": {\"T\": ", "{\"type\": \"Set\", \"element\": ", 128,
		     "{\"type\": \"Long\"}", "}", "}, \"entityTypes\": {}, \"actions\": {}}}");
	s = MUST_LOAD(JSON, src);
	dw_schema_free(s);
	free(src);
	src = repeat("{\"\": {\"entityTypes\": {\"E\": {\"shape\": ",
		     "{\"type\": \"Record\", \"attributes\": {\"a\": ", 128, "{\"type\": \"Long\"}",
		     "}}", "}}, \"actions\": {}}}");
	s = MUST_LOAD(JSON, src);
	dw_schema_free(s);
	free(src);
	src = repeat("entity E = ", "{ a: ", 128, "Long", " }", ";");
	s = MUST_LOAD(HUMAN, src);
	dw_schema_free(s);
	free(src);
	src = repeat("{\"\": {\"commonTypes\": {\"T\": ", "{\"type\": \"Set\", \"element\": ", 129,
		     "{\"type\": \"Long\"}", "}", "}, \"entityTypes\": {}, \"actions\": {}}}");
	EXPECT_ERROR(JSON, src, 0, 0, "type nesting deeper than 128 levels");
	free(src);
	/* ... and after inlining common types */
	{
		char *p;
		size_t cap = 200 * 40;

		src = malloc(cap);
		p = src;
		p += sprintf(p, "type T0 = Long;\n");
		for (int i = 1; i <= 130; i++)
			p += sprintf(p, "type T%d = Set<T%d>;\n", i, i - 1);
		EXPECT_ERROR(HUMAN, src, 130, 6, "type nesting deeper than 128 levels");
		free(src);
	}

	/* a long chain of aliases and a wide, shallow schema are fine */
	{
		size_t n = 20000, cap = n * 64 + 64;
		char *p;

		src = malloc(cap);
		p = src;
		p += sprintf(p, "entity E = { a: T%zu };\ntype T0 = { x: Long };\n", n - 1);
		for (size_t i = 1; i < n; i++)
			p += sprintf(p, "type T%zu = T%zu; entity U%zu in [E] = { t: T%zu };\n", i,
				     i - 1, i, i);
		s = MUST_LOAD(HUMAN, src);
		CHECK(s && s->n_etypes == n);
		CHECK(s && etype(s, "U12345") && etype(s, "U12345")->member_of[0] == etype(s, "E"));
		CHECK_EQ_STR(s ? fmt_type(etype(s, "E")->shape) : "", "{ a: { x: Long } }");
		dw_schema_free(s);
		free(src);
	}

	/* action hierarchy: a deep chain answers `in` by binary search; an
	 * absurdly deep one is refused instead of eating memory */
	{
		size_t n = 1500, cap = n * 48 + 64;
		char *p;

		src = malloc(cap);
		p = src;
		p += sprintf(p, "action a0;\n");
		for (size_t i = 1; i < n; i++)
			p += sprintf(p, "action a%zu in a%zu;\n", i, i - 1);
		s = MUST_LOAD(HUMAN, src);
		if (s != NULL) {
			const struct dw_action *last = action(s, "Action", "a1499");

			CHECK(dw_schema_action_in(s, last, action(s, "Action", "a0")));
			CHECK(dw_schema_action_in(s, last, action(s, "Action", "a777")));
			CHECK(!dw_schema_action_in(s, action(s, "Action", "a777"), last));
		}
		dw_schema_free(s);
		free(src);
		n = 3000;
		src = malloc(n * 48 + 64);
		p = src;
		p += sprintf(p, "action a0;\n");
		for (size_t i = 1; i < n; i++)
			p += sprintf(p, "action a%zu in a%zu;\n", i, i - 1);
		EXPECT_ERROR(HUMAN, src, 0, 0, "action hierarchy too large");
		free(src);
	}

	/* formatting a type that is a DAG of shared common types stays bounded */
	{
		char *p;

		src = malloc(64 * 64);
		p = src;
		p += sprintf(p, "type T0 = Long;\n");
		for (int i = 1; i <= 60; i++)
			p += sprintf(p, "type T%d = { a: T%d, b: T%d };\n", i, i - 1, i - 1);
		p += sprintf(p, "entity E = { t: T60 };\n");
		s = MUST_LOAD(HUMAN, src);
		if (s != NULL) {
			struct dw_buf b = { NULL, 0, 0 };

			CHECK_EQ_INT(dw_type_format(&b, etype(s, "E")->shape), 0);
			CHECK(b.n > 1000 && b.n < 8192);
			dw_buf_free(&b);
		}
		dw_schema_free(s);
		free(src);
	}

	/* large input that is not a schema at all */
	src = malloc(1 << 20);
	memset(src, '{', (1 << 20) - 1);
	src[(1 << 20) - 1] = '\0';
	dw_diags_init(&d);
	s = load(HUMAN, src, &d);
	CHECK(s == NULL && d.n_errors == 1);
	dw_diags_fini(&d);
	s = load(JSON, src, &d);
	CHECK(s == NULL && d.n_errors >= 1);
	dw_diags_fini(&d);
	free(src);
}

static void test_format(void)
{
	struct dw_schema *s = MUST_LOAD(HUMAN,
		"entity E = { \"a b\": Long, \"\": String, if_: Bool, \"if\"?: Set<E>, \"q\\\"\": {} };");

	CHECK_EQ_STR(s ? fmt_type(etype(s, "E")->shape) : "",
		     "{ \"\": String, \"a b\": Long, \"if\"?: Set<E>, if_: Bool, \"q\\\"\": {} }");
	CHECK_EQ_STR(fmt_type(NULL), "(none)");
	dw_schema_free(s);
}

static const struct test_case tests[] = {
	{ "box", test_box },
	{ "box_text_in_sync", test_box_text_in_sync },
	{ "testdata_schemas", test_testdata_schemas },
	{ "grammar", test_grammar },
	{ "resolution", test_resolution },
	{ "warnings", test_warnings },
	{ "action_hierarchy", test_action_hierarchy },
	{ "json_equivalent", test_json_equivalent },
	{ "fragments", test_fragments },
	{ "enum_repeats", test_enum_repeats },
	{ "errors_human", test_errors_human },
	{ "errors_json", test_errors_json },
	{ "limits", test_limits },
	{ "format", test_format },
};

TEST_MAIN(tests)
