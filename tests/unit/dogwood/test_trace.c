/* test_trace.c - the trace format (parse, errors, format round trips) and the
 * binary event codec. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>

#include "event_codec.h"
#include "test.h"
#include "trace.h"
#include "value.h"

#define S(lit) DW_STR_LIT(lit)

/* --- helpers --------------------------------------------------------------------- */

static bool str_eq(struct dw_str a, struct dw_str b)
{
	return dw_str_eq(a, b);
}

/* Two annotations (or none) alike, field by field. */
static bool annot_eq(const struct dw_event_annot *a, const struct dw_event_annot *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (a->has_decision != b->has_decision || a->cause != b->cause || a->n_ids != b->n_ids ||
	    !str_eq(a->reason, b->reason) || !str_eq(a->description, b->description) ||
	    !str_eq(a->note, b->note))
		return false;
	for (uint32_t i = 0; i < a->n_ids; i++)
		if (!str_eq(a->ids[i], b->ids[i]))
			return false;
	return true;
}

/* Every field of two events, entities in order, the annotation too. */
static bool ev_eq(const struct dw_event *a, const struct dw_event *b, bool with_line)
{
	if (!annot_eq(a->annot, b->annot))
		return false;
	if (a->ts != b->ts || !str_eq(a->ns, b->ns) || !str_eq(a->action, b->action) ||
	    !str_eq(a->kind, b->kind) || a->has_principal != b->has_principal ||
	    a->has_resource != b->has_resource || a->has_context != b->has_context ||
	    a->n_entities != b->n_entities)
		return false;
	if (with_line && a->line != b->line)
		return false;
	if (a->has_principal && (!str_eq(a->principal_type, b->principal_type) ||
				 !str_eq(a->principal_id, b->principal_id)))
		return false;
	if (a->has_resource && (!str_eq(a->resource_type, b->resource_type) ||
				!str_eq(a->resource_id, b->resource_id)))
		return false;
	if (!dw_tval_eq(&a->context, &b->context) || !dw_tval_eq(&a->logged, &b->logged))
		return false;
	for (uint32_t i = 0; i < a->n_entities; i++) {
		const struct dw_event_entity *x = &a->entities[i], *y = &b->entities[i];

		if (!str_eq(x->type, y->type) || !str_eq(x->id, y->id) ||
		    !dw_tval_eq(&x->attrs, &y->attrs) || x->n_parents != y->n_parents)
			return false;
		for (uint32_t k = 0; k < x->n_parents; k++)
			if (!str_eq(x->parent_types[k], y->parent_types[k]) ||
			    !str_eq(x->parent_ids[k], y->parent_ids[k]))
				return false;
	}
	return true;
}

static bool codec_round_trip(const struct dw_event *ev);

/* Parse one line; CHECKs success. */
static int parse1(struct dw_arena *a, const char *line, struct dw_event *ev)
{
	char err[512];
	int r = dw_trace_parse_line(a, line, strlen(line), 1, ev, err, sizeof err);

	if (r != 0)
		fprintf(stderr, "parse failed: %s\n  for: %s\n", err, line);
	return r;
}

/* Format ev, parse it back, compare. */
static bool round_trip(const struct dw_event *ev, struct dw_buf *out_text)
{
	struct dw_buf b = { 0 };
	struct dw_arena a;
	struct dw_event back;
	char err[512];
	bool ok = false;

	dw_arena_init(&a);
	if (dw_trace_format(&b, ev) == 0 &&
	    dw_trace_parse_line(&a, b.p, b.n, ev->line, &back, err, sizeof err) == 0)
		ok = ev_eq(ev, &back, true);
	if (!ok)
		fprintf(stderr, "round trip failed: %s\n", b.p ? b.p : "(format failed)");
	if (out_text != NULL && b.p != NULL)
		dw_buf_put(out_text, b.p, b.n);
	dw_buf_free(&b);
	dw_arena_fini(&a);
	return ok;
}

/* The value of `v` in `@0 N::Action::"a"::k(v: <text>)`. */
static bool value_of(struct dw_arena *a, const char *text, struct dw_tval *out)
{
	char line[2048];
	struct dw_event ev;
	const struct dw_tval *v;

	snprintf(line, sizeof line, "@0 N::Action::\"a\"::k(v: %s)", text);
	if (parse1(a, line, &ev) != 0)
		return false;
	v = dw_tval_field(&ev.logged, S("v"));
	if (v == NULL)
		return false;
	*out = *v;
	return true;
}

/* --- the Dogwood vectors (tests/data/dogwood/) --------------------------------------- */

static void test_vectors(void)
{
	char dir[1024];
	DIR *d;
	struct dirent *de;
	int files = 0;

	snprintf(dir, sizeof dir, "%s/dogwood", TEST_DATA_DIR);
	d = opendir(dir);
	CHECK(d != NULL);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[2048], err[512];
		struct dw_arena a;
		struct dw_event *evs = NULL;
		size_t n = 0, len, lines = 0;
		char *text;
		bool all_rt = true;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/trace.log", dir, de->d_name);
		text = test_read_file(path, &len);
		if (text == NULL)
			continue;
		files++;
		for (char *p = text, *e; p < text + len; p = e + 1) {
			e = memchr(p, '\n', (size_t)(text + len - p));
			if (e == NULL)
				e = text + len;
			for (char *q = p; q < e; q++)
				if (*q != ' ' && *q != '\t' && *q != '\r') {
					lines++;
					break;
				}
		}
		dw_arena_init(&a);
		int r = dw_trace_parse(&a, text, len, &evs, &n, err, sizeof err);
		if (r != 0)
			fprintf(stderr, "%s: %s\n", path, err);
		CHECK_EQ_INT(r, 0);
		CHECK_EQ_INT(n, lines);
		for (size_t i = 0; i < n; i++) {
			const struct dw_event *ev = &evs[i];

			/* what every vector event has */
			if (!ev->has_principal || !ev->has_resource || !ev->has_context ||
			    !dw_str_eq_c(ev->ns, "Box::Action") ||
			    dw_tval_field(&ev->logged, S("requestId")) == NULL ||
			    ev->ts % DW_NS_PER_SEC != 0 || ev->line == 0)
				all_rt = false;
			if (!round_trip(ev, NULL))
				all_rt = false;
		}
		CHECK(all_rt);
		dw_arena_fini(&a);
		free(text);
	}
	closedir(d);
	CHECK(files >= 8);
}

/* The first line of distinct_hosts_cap, field by field. */
static void test_vector_fields(void)
{
	char path[1024], err[512];
	struct dw_arena a;
	struct dw_event *evs;
	size_t n, len;
	char *text;
	const struct dw_tval *v;

	snprintf(path, sizeof path, "%s/dogwood/distinct_hosts_cap/trace.log", TEST_DATA_DIR);
	text = test_read_file(path, &len);
	CHECK(text != NULL);
	if (text == NULL)
		return;
	dw_arena_init(&a);
	CHECK_EQ_INT(dw_trace_parse(&a, text, len, &evs, &n, err, sizeof err), 0);
	CHECK(n >= 2);
	CHECK(evs[0].ts == 0 && evs[1].ts == 10 * DW_NS_PER_SEC);
	CHECK(evs[0].line == 1 && evs[1].line == 2);
	CHECK(dw_str_eq_c(evs[0].ns, "Box::Action"));
	CHECK(dw_str_eq_c(evs[0].action, "net:connect"));
	CHECK(dw_str_eq_c(evs[0].kind, "request"));
	CHECK(dw_str_eq_c(evs[0].principal_type, "Box::Agent"));
	CHECK(dw_str_eq_c(evs[0].principal_id, "self"));
	CHECK(dw_str_eq_c(evs[0].resource_type, "Box::Resource"));
	CHECK(dw_str_eq_c(evs[0].resource_id, "unused"));
	v = dw_tval_path(&evs[0].context, S("input.host"));
	CHECK(v != NULL && v->kind == DW_TV_STRING && dw_str_eq_c(v->s, "a.example"));
	v = dw_tval_path(&evs[0].logged, S("input.port"));
	CHECK(v != NULL && v->kind == DW_TV_INT && v->i == 443);
	v = dw_tval_field(&evs[0].logged, S("requestId"));
	CHECK(v != NULL && dw_str_eq_c(v->s, "r1"));
	CHECK(evs[0].n_entities == 0);
	/* the events own their text: the input may go */
	free(text);
	CHECK(dw_str_eq_c(evs[1].action, "net:connect"));
	dw_arena_fini(&a);
}

/* --- values ------------------------------------------------------------------------ */

static void test_values(void)
{
	struct dw_arena a;
	struct dw_tval v;

	dw_arena_init(&a);
	CHECK(value_of(&a, "null", &v) && v.kind == DW_TV_NULL);
	CHECK(value_of(&a, "true", &v) && v.kind == DW_TV_BOOL && v.b);
	CHECK(value_of(&a, "false", &v) && v.kind == DW_TV_BOOL && !v.b);
	CHECK(value_of(&a, "  42  ", &v) && v.kind == DW_TV_INT && v.i == 42);
	CHECK(value_of(&a, "-42", &v) && v.kind == DW_TV_INT && v.i == -42);
	CHECK(value_of(&a, "+7", &v) && v.kind == DW_TV_INT && v.i == 7);
	CHECK(value_of(&a, "007", &v) && v.kind == DW_TV_INT && v.i == 7);
	CHECK(value_of(&a, "9223372036854775807", &v) && v.kind == DW_TV_INT && v.i == INT64_MAX);
	CHECK(value_of(&a, "-9223372036854775808", &v) && v.kind == DW_TV_INT && v.i == INT64_MIN);
	/* out of the i64 range: a bare token, hence a String */
	CHECK(value_of(&a, "9223372036854775808", &v) && v.kind == DW_TV_STRING &&
	      dw_str_eq_c(v.s, "9223372036854775808"));
	CHECK(value_of(&a, "-9223372036854775809", &v) && v.kind == DW_TV_STRING);
	/* decimals: text kept, canonical when Cedar accepts it */
	CHECK(value_of(&a, "1.5", &v) && v.kind == DW_TV_DECIMAL && v.dec_ok && v.i == 15000 &&
	      dw_str_eq_c(v.s, "1.5"));
	CHECK(value_of(&a, "1.50", &v) && v.kind == DW_TV_DECIMAL && v.dec_ok && v.i == 15000 &&
	      dw_str_eq_c(v.s, "1.50"));
	CHECK(value_of(&a, "-0.25", &v) && v.kind == DW_TV_DECIMAL && v.dec_ok && v.i == -2500);
	CHECK(value_of(&a, "1.", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok);
	CHECK(value_of(&a, ".5", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok);
	CHECK(value_of(&a, "+1.5", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok);
	CHECK(value_of(&a, "1.5e3", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok &&
	      dw_str_eq_c(v.s, "1.5e3"));
	CHECK(value_of(&a, "1.5E-3", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok);
	CHECK(value_of(&a, "1.23456", &v) && v.kind == DW_TV_DECIMAL && !v.dec_ok);
	CHECK(value_of(&a, "1e5", &v) && v.kind == DW_TV_STRING);      /* no `.` */
	CHECK(value_of(&a, "1.5.6", &v) && v.kind == DW_TV_STRING);
	CHECK(value_of(&a, "1.5e", &v) && v.kind == DW_TV_STRING);
	CHECK(value_of(&a, ".", &v) && v.kind == DW_TV_STRING);
	CHECK(value_of(&a, "1.2.3.4", &v) && v.kind == DW_TV_STRING && dw_str_eq_c(v.s, "1.2.3.4"));
	/* bare tokens, `//` is data */
	CHECK(value_of(&a, "hello world", &v) && v.kind == DW_TV_STRING &&
	      dw_str_eq_c(v.s, "hello world"));
	CHECK(value_of(&a, "http://x.example/a", &v) && v.kind == DW_TV_STRING &&
	      dw_str_eq_c(v.s, "http://x.example/a"));
	CHECK(value_of(&a, "NULL", &v) && v.kind == DW_TV_STRING);
	CHECK(value_of(&a, "a\\nb", &v) && v.kind == DW_TV_STRING && dw_str_eq_c(v.s, "a\\nb"));
	/* strings */
	CHECK(value_of(&a, "\"x, y: z\"", &v) && v.kind == DW_TV_STRING &&
	      dw_str_eq_c(v.s, "x, y: z"));
	CHECK(value_of(&a, "\"\"", &v) && v.kind == DW_TV_STRING && v.s.n == 0);
	CHECK(value_of(&a, "\"42\"", &v) && v.kind == DW_TV_STRING && dw_str_eq_c(v.s, "42"));
	CHECK(value_of(&a, "\"null\"", &v) && v.kind == DW_TV_STRING);
	CHECK(value_of(&a, "\"(]{\"", &v) && v.kind == DW_TV_STRING && dw_str_eq_c(v.s, "(]{"));
	CHECK(value_of(&a, "\"a::\\\"b\\\"\"", &v) && v.kind == DW_TV_STRING &&
	      dw_str_eq_c(v.s, "a::\"b\""));
	/* entities */
	CHECK(value_of(&a, "Box::Agent::\"self\"", &v) && v.kind == DW_TV_ENTITY &&
	      dw_str_eq_c(v.type, "Box::Agent") && dw_str_eq_c(v.s, "self"));
	CHECK(value_of(&a, "T::\"\"", &v) && v.kind == DW_TV_ENTITY && v.s.n == 0);
	CHECK(value_of(&a, "A::B::\"x\\\"y\"", &v) && v.kind == DW_TV_ENTITY &&
	      dw_str_eq_c(v.type, "A::B") && dw_str_eq_c(v.s, "x\"y"));
	CHECK(value_of(&a, "A::\"x::\\\"y\"", &v) && v.kind == DW_TV_ENTITY &&
	      dw_str_eq_c(v.type, "A") && dw_str_eq_c(v.s, "x::\"y"));
	CHECK(value_of(&a, "A::\"x,y)\"", &v) && v.kind == DW_TV_ENTITY &&
	      dw_str_eq_c(v.s, "x,y)"));
	CHECK(value_of(&a, "A::\"x\"y\"", &v) && v.kind == DW_TV_STRING);   /* not one id */
	CHECK(value_of(&a, "A::x", &v) && v.kind == DW_TV_STRING);
	/* arrays and records */
	CHECK(value_of(&a, "[]", &v) && v.kind == DW_TV_ARRAY && v.n == 0);
	CHECK(value_of(&a, "[ , ]", &v) && v.kind == DW_TV_ARRAY && v.n == 0);
	CHECK(value_of(&a, "[1, \"a,b\", [2, 3], {k: null},]", &v) && v.kind == DW_TV_ARRAY &&
	      v.n == 4 && v.items[0].i == 1 && dw_str_eq_c(v.items[1].s, "a,b") &&
	      v.items[2].kind == DW_TV_ARRAY && v.items[2].n == 2 &&
	      v.items[3].kind == DW_TV_RECORD && v.items[3].n == 1);
	CHECK(value_of(&a, "[1,,2]", &v) && v.kind == DW_TV_ARRAY && v.n == 2);
	CHECK(value_of(&a, "{}", &v) && v.kind == DW_TV_RECORD && v.n == 0);
	CHECK(value_of(&a, "{b: 1, a: {c: [true]}}", &v) && v.kind == DW_TV_RECORD && v.n == 2 &&
	      dw_str_eq_c(v.fields[0].key, "a") && dw_tval_path(&v, S("a.c")) != NULL);
	CHECK(value_of(&a, "{\"a b\": 1, \"x\\\"y\": 2, \"\": 3, c d: 4}", &v) &&
	      v.kind == DW_TV_RECORD && v.n == 4 &&
	      dw_tval_field(&v, S("a b")) != NULL && dw_tval_field(&v, S("x\"y")) != NULL &&
	      dw_tval_field(&v, S("")) != NULL && dw_tval_field(&v, S("c d")) != NULL);
	CHECK(value_of(&a, "{\"a:b\": 1, \"c,d\": 2}", &v) && v.n == 2 &&
	      dw_tval_field(&v, S("a:b")) != NULL && dw_tval_field(&v, S("c,d")) != NULL);
	CHECK(value_of(&a, "{k: \"v: w\"}", &v) && dw_str_eq_c(dw_tval_field(&v, S("k"))->s, "v: w"));
	CHECK(value_of(&a, "{k: T::\"a:b\"}", &v) &&
	      dw_tval_field(&v, S("k"))->kind == DW_TV_ENTITY);
	dw_arena_fini(&a);
}

static void test_escapes(void)
{
	static const struct {
		const char *in;
		const char *out;
		size_t n;
	} cases[] = {
		{ "\"\\\"\"", "\"", 1 },
		{ "\"\\\\\"", "\\", 1 },
		{ "\"\\'\"", "'", 1 },
		{ "\"\\n\\t\\r\"", "\n\t\r", 3 },
		{ "\"a\\0b\"", "a\0b", 3 },
		{ "\"\\u{41}\"", "A", 1 },
		{ "\"\\u{0041}\"", "A", 1 },
		{ "\"\\u{e9}\"", "\xc3\xa9", 2 },
		{ "\"\\u{1F600}\"", "\xf0\x9f\x98\x80", 4 },
		{ "\"\\u{10FFFF}\"", "\xf4\x8f\xbf\xbf", 4 },
		{ "\"\\u{0}\"", "\0", 1 },
		{ "\"\\x41\"", "A", 1 },
		{ "\"\\x7f\"", "\x7f", 1 },
		{ "\"\\xff\"", "\xc3\xbf", 2 },           /* U+00FF, as the reference */
		{ "\"\\x7\"", "\x07", 1 },
		{ "\"\\x4g\"", "\x04g", 2 },
		/* kept verbatim */
		{ "\"\\q\"", "\\q", 2 },
		{ "\"\\*\"", "\\*", 2 },
		{ "\"\\x\"", "\\x", 2 },
		{ "\"\\xg\"", "\\xg", 3 },
		{ "\"\\u\"", "\\u", 2 },
		{ "\"\\u41\"", "\\u41", 4 },
		{ "\"\\u{}\"", "\\u{}", 4 },
		{ "\"\\u{zz}\"", "\\u{zz}", 6 },
		{ "\"\\u{D800}\"", "\\u{D800}", 8 },
		{ "\"\\u{110000}\"", "\\u{110000}", 10 },
		{ "\"\\u{FFFFFFFFFF}\"", "\\u{FFFFFFFFFF}", 14 },
		{ "\"\\u{41\"", "\\u{41", 5 },            /* unclosed */
		{ "\"caf\xc3\xa9\"", "caf\xc3\xa9", 5 },
	};
	struct dw_arena a;
	struct dw_tval v;

	dw_arena_init(&a);
	for (size_t i = 0; i < DW_N_ELEMENTS(cases); i++) {
		bool ok = value_of(&a, cases[i].in, &v) && v.kind == DW_TV_STRING &&
			  v.s.n == cases[i].n && memcmp(v.s.p, cases[i].out, cases[i].n) == 0;
		if (!ok)
			fprintf(stderr, "escape case %zu: %s\n", i, cases[i].in);
		CHECK(ok);
	}
	/* ids and action ids decode the same way */
	struct dw_event ev;
	CHECK_EQ_INT(parse1(&a, "@0 scope(principal: T::\"a\\u{29}b\") N::Action::\"x\\\"\\u{28}\"::k()",
			    &ev), 0);
	CHECK(dw_str_eq_c(ev.principal_id, "a)b"));
	CHECK(dw_str_eq_c(ev.action, "x\"("));
	dw_arena_fini(&a);
}

/* --- lines ---------------------------------------------------------------------- */

static void test_line_full(void)
{
	struct dw_arena a;
	struct dw_event ev;
	const struct dw_tval *v;
	const char *line =
		"  @-5\t scope(resource: Box::Resource::\"r\", principal: Box::Agent::\"p\")"
		" entities(Box::Group::\"root\": {}, Box::Agent::\"p\": {dept: \"eng\", lvl: 5} in "
		"[Box::Group::\"root\", Box::Group::\"eng\"], Box::Group::\"eng\": {} in[Box::Group::\"root\"])"
		" request_context(input: {path: \"/a(b)\", n: [1, 2.50]}, system: {now: 17})"
		" Box::Action::\"fs:read\"::response(input: {path: \"/a(b)\"}, output: {ok: true},"
		" \"quoted key\": 1.5, requestId: \"r1\")  ";

	dw_arena_init(&a);
	CHECK_EQ_INT(parse1(&a, line, &ev), 0);
	CHECK(ev.ts == -5 * DW_NS_PER_SEC);
	CHECK(ev.line == 1);
	CHECK(ev.has_principal && ev.has_resource);
	CHECK(dw_str_eq_c(ev.principal_type, "Box::Agent") && dw_str_eq_c(ev.principal_id, "p"));
	CHECK(dw_str_eq_c(ev.resource_type, "Box::Resource") && dw_str_eq_c(ev.resource_id, "r"));
	CHECK(ev.n_entities == 3);
	CHECK(dw_str_eq_c(ev.entities[0].type, "Box::Group") &&
	      dw_str_eq_c(ev.entities[0].id, "root") && ev.entities[0].attrs.kind == DW_TV_RECORD &&
	      ev.entities[0].attrs.n == 0 && ev.entities[0].n_parents == 0);
	CHECK(dw_str_eq_c(ev.entities[1].id, "p") && ev.entities[1].attrs.n == 2 &&
	      ev.entities[1].n_parents == 2 && dw_str_eq_c(ev.entities[1].parent_ids[0], "root") &&
	      dw_str_eq_c(ev.entities[1].parent_ids[1], "eng") &&
	      dw_str_eq_c(ev.entities[1].parent_types[1], "Box::Group"));
	v = dw_tval_field(&ev.entities[1].attrs, S("lvl"));
	CHECK(v != NULL && v->kind == DW_TV_INT && v->i == 5);
	CHECK(ev.entities[2].n_parents == 1);
	CHECK(ev.has_context && ev.context.n == 2);
	v = dw_tval_path(&ev.context, S("input.path"));
	CHECK(v != NULL && dw_str_eq_c(v->s, "/a(b)"));
	v = dw_tval_path(&ev.context, S("input.n"));
	CHECK(v != NULL && v->kind == DW_TV_ARRAY && v->n == 2 && v->items[1].dec_ok &&
	      v->items[1].i == 25000);
	v = dw_tval_path(&ev.context, S("system.now"));
	CHECK(v != NULL && v->i == 17);
	CHECK(dw_str_eq_c(ev.ns, "Box::Action") && dw_str_eq_c(ev.action, "fs:read") &&
	      dw_str_eq_c(ev.kind, "response"));
	CHECK(ev.logged.kind == DW_TV_RECORD && ev.logged.n == 4);
	v = dw_tval_field(&ev.logged, S("quoted key"));
	CHECK(v != NULL && v->kind == DW_TV_DECIMAL && v->dec_ok);
	v = dw_tval_path(&ev.logged, S("output.ok"));
	CHECK(v != NULL && v->kind == DW_TV_BOOL && v->b);
	CHECK(round_trip(&ev, NULL));

	/* the minimal line: no envelopes, empty group */
	CHECK_EQ_INT(parse1(&a, "@7 N::Action::\"a\"::k()", &ev), 0);
	CHECK(ev.ts == 7 * DW_NS_PER_SEC && !ev.has_principal && !ev.has_resource &&
	      !ev.has_context && ev.n_entities == 0 && ev.entities == NULL);
	CHECK(ev.context.kind == DW_TV_RECORD && ev.context.n == 0);
	CHECK(ev.logged.kind == DW_TV_RECORD && ev.logged.n == 0);
	CHECK(dw_str_eq_c(ev.ns, "N::Action"));
	CHECK(round_trip(&ev, NULL));
	/* only a principal; an empty request_context still counts as supplied */
	CHECK_EQ_INT(parse1(&a, "@7 scope(principal: A::\"p\") request_context() N::Action::\"a\"::k(x:1)",
			    &ev), 0);
	CHECK(ev.has_principal && !ev.has_resource && ev.has_context && ev.context.n == 0);
	CHECK(round_trip(&ev, NULL));
	/* kinds and ids are free text; whitespace around the head is fine */
	CHECK_EQ_INT(parse1(&a, "@1 A::B::Action::\"a b\" :: my-kind (x: 1)", &ev), 0);
	CHECK(dw_str_eq_c(ev.ns, "A::B::Action") && dw_str_eq_c(ev.action, "a b") &&
	      dw_str_eq_c(ev.kind, "my-kind"));
	CHECK(round_trip(&ev, NULL));
	/* the event group runs to the last `)` */
	CHECK_EQ_INT(parse1(&a, "@1 N::Action::\"a\"::k(x: \")\", y: (z))", &ev), 0);
	v = dw_tval_field(&ev.logged, S("y"));
	CHECK(v != NULL && v->kind == DW_TV_STRING && dw_str_eq_c(v->s, "(z)"));
	dw_arena_fini(&a);
}

static void test_timestamps(void)
{
	struct dw_arena a;
	struct dw_event ev;

	dw_arena_init(&a);
	CHECK_EQ_INT(parse1(&a, "@9223372036 N::Action::\"a\"::k()", &ev), 0);
	CHECK(ev.ts == 9223372036LL * DW_NS_PER_SEC);
	CHECK_EQ_INT(parse1(&a, "@-9223372036 N::Action::\"a\"::k()", &ev), 0);
	CHECK(ev.ts == -9223372036LL * DW_NS_PER_SEC);
	CHECK_EQ_INT(parse1(&a, "@+3 N::Action::\"a\"::k()", &ev), 0);
	CHECK(ev.ts == 3 * DW_NS_PER_SEC);
	CHECK_EQ_INT(parse1(&a, "@0 N::Action::\"a\"::k()", &ev), 0);
	CHECK(ev.ts == 0);
	dw_arena_fini(&a);
}

static void check_err(const char *line, const char *want)
{
	struct dw_arena a;
	struct dw_event ev;
	char err[512];
	struct dw_arena_mark m;
	int r;

	dw_arena_init(&a);
	(void)dw_arena_alloc(&a, 8, 8);        /* a first chunk, so the mark means something */
	m = dw_arena_mark(&a);
	memset(&ev, 0x5a, sizeof ev);
	r = dw_trace_parse_line(&a, line, strlen(line), 3, &ev, err, sizeof err);
	CHECK_EQ_INT(r, -EINVAL);
	if (r == -EINVAL)
		CHECK_EQ_STR(err, want);
	/* error implies nothing changed: not the arena, not *ev */
	CHECK(a.head == m.head && a.cur == m.cur);
	CHECK(((unsigned char *)&ev)[0] == 0x5a);
	dw_arena_fini(&a);
}

/* Seconds with up to nine digits after the point, as `cairn history show`
 * times convert to; Dogwood's whole seconds read as before. */
static void test_fractional_ts(void)
{
	static const struct { const char *ts; int64_t ns; } cases[] = {
		{ "0.000", 0 }, { "36000", 36000000000000LL }, { "1.5", 1500000000LL },
		{ "+1.5", 1500000000LL }, { "-0.25", -250000000LL }, { "-1.5", -1500000000LL },
		{ "1764622800.123456789", 1764622800123456789LL }, { "2.000000001", 2000000001LL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dw_arena a;
		struct dw_event ev;
		char line[128];

		dw_arena_init(&a);
		snprintf(line, sizeof line, "@%s N::Action::\"a\"::k()", cases[i].ts);
		CHECK_EQ_INT(parse1(&a, line, &ev), 0);
		CHECK(ev.ts == cases[i].ns);
		dw_arena_fini(&a);
	}
}

static void test_errors(void)
{
	check_err("5 N::Action::\"a\"::k()", "line 3: timepoint must start with `@`");
	check_err("@5", "line 3: expected whitespace after timestamp");
	check_err("@5N::Action::\"a\"::k()", "line 3: expected whitespace after timestamp");
	check_err("@x N::Action::\"a\"::k()", "line 3: bad timestamp `x`");
	check_err("@1. N::Action::\"a\"::k()", "line 3: bad timestamp `1.`: write whole seconds, "
		  "or up to nine digits after the point");
	check_err("@1.1234567890 N::Action::\"a\"::k()", "line 3: bad timestamp `1.1234567890`: "
		  "write whole seconds, or up to nine digits after the point");
	check_err("@1.5e3 N::Action::\"a\"::k()", "line 3: bad timestamp `1.5e3`");
	check_err("@.5 N::Action::\"a\"::k()", "line 3: bad timestamp `.5`");
	check_err("@9223372036.9 N::Action::\"a\"::k()",
		  "line 3: timestamp `9223372036.9` is out of range");
	check_err("@ 5 N::Action::\"a\"::k()", "line 3: bad timestamp ``");
	check_err("@99999999999999999999 N::Action::\"a\"::k()",
		  "line 3: bad timestamp `99999999999999999999`");
	check_err("@9223372037 N::Action::\"a\"::k()",
		  "line 3: timestamp `9223372037` is out of range");
	check_err("@-9223372037 N::Action::\"a\"::k()",
		  "line 3: timestamp `-9223372037` is out of range");
	check_err("@0 N::Action::\"a\"(x: 1)",
		  "line 3: event head `N::Action::\"a\"` is missing a `::kind` segment");
	check_err("@0 N::Action::\"a\":: (x: 1)",
		  "line 3: event head `N::Action::\"a\"::` is missing a `::kind` segment");
	check_err("@0 N::Action::\"a\"k(x: 1)",
		  "line 3: event head `N::Action::\"a\"k` is missing a `::kind` segment");
	check_err("@0 N::Action::a::k(x: 1)",
		  "line 3: event head `N::Action::a::k` is missing a quoted action id");
	check_err("@0 N::Action::\"a::k(x: 1)",
		  "line 3: event head `N::Action::\"a::k` has an unterminated action id");
	check_err("@0 N::Action::\"a\"::k", "line 3: event missing `(`");
	check_err("@0 N::Action::\"a\"::k(", "line 3: event missing `)`");
	check_err("@0 )N::Action::\"a\"::k(", "line 3: event group `(` and `)` are out of order");
	check_err("@0 N::Action::\"a\"::k(x: 1) extra",
		  "line 3: unexpected text `extra` after the event group");
	check_err("@0 N::Action::\"a\"::k(x: 1, x: 2)", "line 3: duplicate field `x`");
	check_err("@0 N::Action::\"a\"::k(x: 1, y: 3, \"x\": 2)", "line 3: duplicate field `x`");
	check_err("@0 request_context(a: 1, a: 1) N::Action::\"a\"::k()",
		  "line 3: duplicate field `a`");
	check_err("@0 scope(principal: A::\"x\", principal: A::\"y\") N::Action::\"a\"::k()",
		  "line 3: duplicate field `principal`");
	check_err("@0 N::Action::\"a\"::k(x: {a: 1, b: 2, a: 3})",
		  "line 3: record has a duplicate field `a`");
	check_err("@0 N::Action::\"a\"::k(x: [{a: 1, \"a\": 3}])",
		  "line 3: record has a duplicate field `a`");
	check_err("@0 N::Action::\"a\"::k(x)", "line 3: argument `x` missing `:`");
	check_err("@0 N::Action::\"a\"::k(x: {y})", "line 3: object field `y` missing `:`");
	check_err("@0 N::Action::\"a\"::k(x: )", "line 3: field `x` has no value");
	check_err("@0 N::Action::\"a\"::k(x: {y: })", "line 3: field `y` has no value");
	check_err("@0 N::Action::\"a\"::k(: 1)", "line 3: field `: 1` has an empty name");
	check_err("@0 N::Action::\"a\"::k(\"a\" b: 1)",
		  "line 3: malformed quoted field name in `\"a\" b: 1`");
	check_err("@0 N::Action::\"a\"::k(x: {\"a\"\"b\": 1})",
		  "line 3: malformed quoted field name in `\"a\"\"b\": 1`");
	check_err("@0 N::Action::\"a\"::k(\"x: 1)", "line 3: argument `\"x: 1` missing `:`");
	check_err("@0 N::Action::\"a\"::k(x: [1, 2)", "line 3: malformed array `[1, 2`");
	check_err("@0 N::Action::\"a\"::k(x: [1] [2])", "line 3: malformed array `[1] [2]`");
	check_err("@0 N::Action::\"a\"::k(x: {a: 1}})", "line 3: malformed record `{a: 1}}`");
	check_err("@0 N::Action::\"a\"::k(x: [1, 2}, y: 1)", "line 3: malformed array `[1, 2}`");
	check_err("@0 N::Action::\"a\"::k(x: \"ab\" \"cd\")",
		  "line 3: malformed string `\"ab\" \"cd\"`");
	check_err("@0 N::Action::\"a\"::k(x: \"ab\\\")", "line 3: malformed string `\"ab\\\"`");
	check_err("@0 N::Action::\"a\"::k(x: {\"a: 1})",
		  "line 3: malformed record `{\"a: 1}`");
	check_err("@0 scope(principal: A::\"x\" N::Action::\"a\"::k(", "line 3: scope missing `)`");
	check_err("@0 scope(principal: A::\"x\") N::Action::\"a\"::k(", "line 3: event missing `)`");
	check_err("@0 scope(principal: A::\"x\"", "line 3: scope missing `)`");
	check_err("@0 scope(principal: \"x\") N::Action::\"a\"::k()",
		  "line 3: scope `principal` is not an entity ref `Ns::Type::\"id\"`");
	check_err("@0 scope(resource: 5) N::Action::\"a\"::k()",
		  "line 3: scope `resource` is not an entity ref `Ns::Type::\"id\"`");
	check_err("@0 scope(context: A::\"x\") N::Action::\"a\"::k()",
		  "line 3: scope has an unknown field `context` (it takes principal and resource)");
	check_err("@0 request_context(a: [1) N::Action::\"a\"::k()",
		  "line 3: request_context missing `)`");
	check_err("@0 entities(A::\"x\": {} N::Action::\"a\"::k(",
		  "line 3: entities missing `)`");
	check_err("@0 entities(A::\"x\") N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\"` missing an attribute record `{ ... }`");
	check_err("@0 entities(A::\"x\" {}) N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\" {}` missing `:` before `{`");
	check_err("@0 entities(A::\"x\": {a: 1) N::Action::\"a\"::k()",
		  "line 3: entities missing `)`");
	check_err("@0 entities(A::\"x\": {a: 1]) N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\": {a: 1]` has an unterminated `{ ... }`");
	check_err("@0 entities(\"x\": {}) N::Action::\"a\"::k()",
		  "line 3: entities entry `\"x\"` is not an entity ref `Ns::Type::\"id\"`");
	check_err("@0 entities(: {}) N::Action::\"a\"::k()",
		  "line 3: entities entry `` is not an entity ref `Ns::Type::\"id\"`");
	check_err("@0 entities(A::\"x\": {} B::\"y\") N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\"` has trailing text after its record; expected "
		  "`in [ ... ]`, found `B::\"y\"`");
	check_err("@0 entities(A::\"x\": {} in B::\"y\") N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\"` parents must be a bracketed list `in [ ... ]`, "
		  "found `B::\"y\"`");
	check_err("@0 entities(A::\"x\": {} in [\"y\"]) N::Action::\"a\"::k()",
		  "line 3: entities entry `A::\"x\"` parent `\"y\"` is not an entity ref "
		  "`Ns::Type::\"id\"`");
	check_err("@0 entities(A::\"x\": {}, A::\"y\": {}, A::\"x\": {a: 1}) N::Action::\"a\"::k()",
		  "line 3: entities envelope has a duplicate uid `A::\"x\"`");
	check_err("@0 entities(A::\"x\": {a: 1, a: 2}) N::Action::\"a\"::k()",
		  "line 3: record has a duplicate field `a`");
	/* envelopes out of order are not envelopes: the head is then wrong */
	check_err("@0 request_context(a: 1) scope(principal: A::\"x\") N::Action::\"a\"::k()",
		  "line 3: event head `scope` is missing a quoted action id");
	/* bytes that are not UTF-8 */
	check_err("@0 N::Action::\"a\"::k(x: \"\xff\")",
		  "line 3: not valid UTF-8 (byte 26 of the line)");
	check_err("  @0 N::Action::\"\xc3\"::k()", "line 3: not valid UTF-8 (byte 18 of the line)");
}

/* 128 levels below a field's value are fine, one more is not. */
static void test_depth(void)
{
	struct dw_arena a;
	struct dw_event ev;
	char err[512];
	static char line[2048];

	dw_arena_init(&a);
	for (int k = 128; k <= 131; k++) {
		int n = snprintf(line, sizeof line, "@0 N::Action::\"a\"::k(v: ");
		/* k+1 nested arrays: the outermost is depth 0, the innermost depth k */
		for (int i = 0; i <= k; i++)
			line[n++] = '[';
		for (int i = 0; i <= k; i++)
			line[n++] = ']';
		line[n++] = ')';
		line[n] = '\0';
		int r = dw_trace_parse_line(&a, line, (size_t)n, 9, &ev, err, sizeof err);
		if (k == 128) {
			CHECK_EQ_INT(r, 0);
			CHECK(round_trip(&ev, NULL));
			CHECK(codec_round_trip(&ev));  /* what a trace holds, the codec holds */
		} else {
			CHECK_EQ_INT(r, -EINVAL);
			CHECK_EQ_STR(err, "line 9: logged value nested deeper than the limit of 128");
		}
	}
	/* the same through records */
	for (int k = 128; k <= 129; k++) {
		int n = snprintf(line, sizeof line, "@0 N::Action::\"a\"::k(v: ");
		for (int i = 0; i < k; i++)
			n += snprintf(line + n, sizeof line - (size_t)n, "{a: ");
		n += snprintf(line + n, sizeof line - (size_t)n, "1");
		for (int i = 0; i < k; i++)
			line[n++] = '}';
		line[n++] = ')';
		line[n] = '\0';
		int r = dw_trace_parse_line(&a, line, (size_t)n, 9, &ev, err, sizeof err);
		CHECK_EQ_INT(r, k == 128 ? 0 : -EINVAL);
	}
	/* a hostile line: deep, long, and cheap to refuse */
	size_t big = 1 << 20;
	char *p = malloc(big + 64);
	int n = snprintf(p, 64, "@0 N::Action::\"a\"::k(v: ");
	memset(p + n, '[', big);
	memcpy(p + n + big, ")", 2);
	CHECK_EQ_INT(dw_trace_parse_line(&a, p, strlen(p), 1, &ev, err, sizeof err), -EINVAL);
	free(p);
	dw_arena_fini(&a);
}

static void test_whole_trace(void)
{
	struct dw_arena a;
	struct dw_event *evs = NULL, ev;
	size_t n = 99;
	char err[512];
	const char *text =
		"\n"
		"@1 N::Action::\"a\"::request(x: 1)\r\n"
		"   \t\n"
		"\t@2 N::Action::\"b\"::response(x: \"// not a comment\")   \n"
		"@3 N::Action::\"c\"::error()";
	const struct dw_tval *v;

	dw_arena_init(&a);
	CHECK_EQ_INT(dw_trace_parse(&a, text, strlen(text), &evs, &n, err, sizeof err), 0);
	CHECK_EQ_INT(n, 3);
	CHECK(evs[0].line == 2 && evs[1].line == 4 && evs[2].line == 5);
	CHECK(dw_str_eq_c(evs[2].kind, "error") && evs[2].ts == 3 * DW_NS_PER_SEC);
	v = dw_tval_field(&evs[1].logged, S("x"));
	CHECK(v != NULL && dw_str_eq_c(v->s, "// not a comment"));

	/* empty and blank traces */
	CHECK_EQ_INT(dw_trace_parse(&a, "", 0, &evs, &n, err, sizeof err), 0);
	CHECK(n == 0);
	CHECK_EQ_INT(dw_trace_parse(&a, "\n \n\r\n", 5, &evs, &n, err, sizeof err), 0);
	CHECK(n == 0);

	/* a bad line: its number, nothing returned, nothing kept */
	const char *bad = "@1 N::Action::\"a\"::k()\n\n@2 N::Action::\"a\"::k(x: 1, x: 2)\n@3 N::Action::\"a\"::k()";
	struct dw_arena_mark m = dw_arena_mark(&a);
	evs = (struct dw_event *)&ev;
	n = 77;
	CHECK_EQ_INT(dw_trace_parse(&a, bad, strlen(bad), &evs, &n, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "line 3: duplicate field `x`");
	CHECK(evs == &ev && n == 77);
	CHECK(a.head == m.head && a.cur == m.cur);

	/* a blank line alone */
	CHECK_EQ_INT(dw_trace_parse_line(&a, "  \t ", 4, 1, &ev, err, sizeof err), -ENOENT);
	CHECK_EQ_INT(dw_trace_parse_line(&a, "", 0, 1, &ev, err, sizeof err), -ENOENT);
	/* no error buffer */
	CHECK_EQ_INT(dw_trace_parse_line(&a, "x", 1, 1, &ev, NULL, 0), -EINVAL);

	/* out of memory is reported as such */
	struct dw_arena lim;
	dw_arena_init(&lim);
	lim.limit = 1;
	CHECK_EQ_INT(dw_trace_parse(&lim, text, strlen(text), &evs, &n, err, sizeof err), -ENOMEM);
	CHECK_EQ_INT(dw_trace_parse_line(&lim, "@1 N::Action::\"a\"::k(x: 1)", 26, 4, &ev, err,
					 sizeof err), -ENOMEM);
	CHECK_EQ_STR(err, "line 4: out of memory");
	dw_arena_fini(&lim);
	dw_arena_fini(&a);
}

/* --- format ---------------------------------------------------------------------- */

static void test_format(void)
{
	struct dw_arena a;
	struct dw_event ev;
	struct dw_buf b = { 0 };

	dw_arena_init(&a);
	CHECK_EQ_INT(parse1(&a, "@12 scope(principal: Box::Agent::\"se\\u{29}lf\", resource: Box::R::\"r\") "
			    "entities(Box::Agent::\"se)lf\": {lvl: 5, \"a b\": [1, null]} in [Box::G::\"g\"]) "
			    "request_context(input: {path: \"/x\\n\"}) "
			    "Box::Action::\"fs\\u{28}read\"::request(input: {path: \"/x\\n\"}, d: 1.50, "
			    "e: T::\"q\\\"\", s: \"tab\\tnul\\0\\u{1}\", u: \"caf\xc3\xa9\", t: true)",
			    &ev), 0);
	CHECK_EQ_INT(dw_trace_format(&b, &ev), 0);
	CHECK_EQ_STR(b.p,
		     "@12 scope(principal: Box::Agent::\"se\\u{29}lf\", resource: Box::R::\"r\") "
		     "entities(Box::Agent::\"se)lf\": {\"a b\": [1, null], lvl: 5} in [Box::G::\"g\"]) "
		     "request_context(input: {path: \"/x\\n\"}) "
		     "Box::Action::\"fs\\u{28}read\"::request(d: 1.50, e: T::\"q\\\"\", "
		     "input: {path: \"/x\\n\"}, s: \"tab\\tnul\\0\\u{1}\", t: true, u: \"caf\xc3\xa9\")");
	CHECK(round_trip(&ev, NULL));

	/* a fraction of a second is written, without trailing zeros, and reads back */
	ev.ts = -1500000000LL;
	b.n = 0;
	CHECK_EQ_INT(dw_trace_format(&b, &ev), 0);
	CHECK(strncmp(b.p, "@-1.5 ", 6) == 0);
	CHECK(round_trip(&ev, NULL));
	ev.ts = -250000000LL;
	b.n = 0;
	CHECK_EQ_INT(dw_trace_format(&b, &ev), 0);
	CHECK(strncmp(b.p, "@-0.25 ", 7) == 0);
	CHECK(round_trip(&ev, NULL));
	ev.ts = 1999999999LL;
	b.n = 0;
	CHECK_EQ_INT(dw_trace_format(&b, &ev), 0);
	CHECK(strncmp(b.p, "@1.999999999 ", 13) == 0);
	CHECK(round_trip(&ev, NULL));

	/* what cannot be written is refused, and b keeps what it had */
	struct dw_event bad;
	struct dw_tfv f[1];
	struct dw_tval rec;
	b.n = 0;
	dw_buf_put(&b, "keep", 4);
	memset(&bad, 0, sizeof bad);
	bad.ns = S("N::Action");
	bad.action = S("a");
	bad.kind = S("k");
	bad.logged.kind = DW_TV_RECORD;
	CHECK_EQ_INT(dw_trace_format(&b, &bad), 0);
	CHECK_EQ_STR(b.p, "keep@0 N::Action::\"a\"::k()");
	b.n = 4;
	b.p[4] = '\0';
	struct {
		const char *what;
		struct dw_tval v;
	} vals[] = {
		{ "not UTF-8", dw_tv_string(S("\xff")) },
		{ "decimal text", dw_tv_decimal(S("1")) },
		{ "decimal text", dw_tv_decimal(S(" 1.5")) },
		{ "entity type", { .kind = DW_TV_ENTITY, .type = S("a b"), .s = S("x") } },
		{ "entity type", { .kind = DW_TV_ENTITY, .type = S(""), .s = S("x") } },
		{ "entity type", { .kind = DW_TV_ENTITY, .type = S("A::"), .s = S("x") } },
		{ "entity type", { .kind = DW_TV_ENTITY, .type = S("1A"), .s = S("x") } },
		{ "kind 0", { .kind = 0 } },
	};
	for (size_t i = 0; i < DW_N_ELEMENTS(vals); i++) {
		f[0].key = S("v");
		f[0].val = vals[i].v;
		CHECK_EQ_INT(dw_tval_record(&a, f, 1, &rec, NULL), 0);
		bad.logged = rec;
		CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
		CHECK_EQ_STR(b.p, "keep");
	}
	f[0].key = S("\xc3");
	f[0].val = dw_tv_int(1);
	CHECK_EQ_INT(dw_tval_record(&a, f, 1, &rec, NULL), 0);
	bad.logged = rec;
	CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
	bad.logged.n = 0;
	CHECK_EQ_INT(dw_trace_format(&b, &bad), 0);
	b.n = 4;
	const char *bad_kinds[] = { "", " k", "k ", "k(", "k)", "a\nb", "\xff" };
	for (size_t i = 0; i < DW_N_ELEMENTS(bad_kinds); i++) {
		bad.kind = dw_str_c(bad_kinds[i]);
		CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
	}
	bad.kind = S("k");
	const char *bad_ns[] = { "", "N::", "::N", "N: :A", "N::Act ion", "N(" };
	for (size_t i = 0; i < DW_N_ELEMENTS(bad_ns); i++) {
		bad.ns = dw_str_c(bad_ns[i]);
		CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
	}
	bad.ns = S("N::Action");
	bad.has_principal = true;
	bad.principal_type = S("T");
	bad.principal_id = S("\xc3\x28");
	CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
	bad.principal_id = S("ok");
	bad.action = S("\xe0");
	CHECK_EQ_INT(dw_trace_format(&b, &bad), -EINVAL);
	CHECK_EQ_STR(b.p, "keep");
	dw_buf_free(&b);
	dw_arena_fini(&a);
}

/* --- random events -------------------------------------------------------------- */

static uint64_t rng = 0x243f6a8885a308d3ULL;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Valid UTF-8 with the characters the format has to take care of. */
static struct dw_str rnd_text(struct dw_arena *a)
{
	static const char *atoms[] = { "a", "Z", "_", "0", " ", ",", ":", "::", "\"", "\\", "'",
				       "(", ")", "[", "]", "{", "}", "\n", "\t", "\r", "\0", "\x01",
				       "\x7f", "@", "//", "\xc3\xa9", "\xe2\x82\xac",
				       "\xf0\x9f\x98\x80", "\\u{41}", "null", "1.5", "-" };
	uint32_t n = rnd(7), len = 0;
	char *p = dw_arena_alloc(a, 64, 1);

	for (uint32_t i = 0; i < n; i++) {
		const char *t = atoms[rnd(DW_N_ELEMENTS(atoms))];
		size_t tl = t[0] == '\0' ? 1 : strlen(t);

		memcpy(p + len, t, tl);
		len += (uint32_t)tl;
	}
	return dw_str_make(p, len);
}

static struct dw_str rnd_path(void)
{
	static const char *paths[] = { "T", "Box::Agent", "A::B::C", "_x::y9" };
	return dw_str_c(paths[rnd(DW_N_ELEMENTS(paths))]);
}

static struct dw_tval rnd_record(struct dw_arena *a, int depth);

static struct dw_tval rnd_tval(struct dw_arena *a, int depth)
{
	static const char *decs[] = { "1.5", "1.50", "-0.0001", "01.5", "1.", ".5", "+2.5",
				      "1.5e3", "1.23456", "9e-3.5" };
	struct dw_tval v = { 0 };

	switch (rnd(depth > 3 ? 7 : 9)) {
	case 0: v.kind = DW_TV_NULL; return v;
	case 1: v.kind = DW_TV_BOOL; v.b = rnd(2); return v;
	case 2: {
		static const int64_t ints[] = { 0, 1, -1, 42, INT64_MAX, INT64_MIN, 1000000 };
		return dw_tv_int(ints[rnd(DW_N_ELEMENTS(ints))]);
	}
	case 3: {
		const char *d = decs[rnd(DW_N_ELEMENTS(decs) - 1)];   /* the last is not one */
		return dw_tv_decimal(dw_str_c(d));
	}
	case 4:
	case 5: return dw_tv_string(rnd_text(a));
	case 6:
		v.kind = DW_TV_ENTITY;
		v.type = rnd_path();
		v.s = rnd_text(a);
		return v;
	case 7: {
		uint32_t n = rnd(4);
		struct dw_tval *it = DW_NEWN(a, struct dw_tval, n ? n : 1);
		for (uint32_t i = 0; i < n; i++)
			it[i] = rnd_tval(a, depth + 1);
		v.kind = DW_TV_ARRAY;
		v.n = n;
		v.items = it;
		return v;
	}
	default:
		return rnd_record(a, depth + 1);
	}
}

static struct dw_tval rnd_record(struct dw_arena *a, int depth)
{
	struct dw_tfv f[6];
	uint32_t n = rnd(depth == 0 ? 6 : 4);
	struct dw_tval v;

	for (uint32_t i = 0; i < n; i++) {
		f[i].key = rnd(3) ? dw_str_c((const char *[]){ "input", "output", "requestId", "x",
							       "path", "n" }[rnd(6)])
				  : rnd_text(a);
		f[i].val = rnd_tval(a, depth);
	}
	while (dw_tval_record(a, f, n, &v, NULL) != 0)
		n--;                   /* a repeated key: drop fields until unique */
	return v;
}

static void rnd_event(struct dw_arena *a, struct dw_event *ev)
{
	static const char *kinds[] = { "request", "response", "error", "attempt", "x-y.z",
				       "k\xc3\xa9", "a b" };
	memset(ev, 0, sizeof *ev);
	ev->ts = ((int64_t)rnd(2000000) - 1000000) * DW_NS_PER_SEC;
	ev->ns = rnd(2) ? S("Box::Action") : S("N::Action");
	ev->action = rnd_text(a);
	ev->kind = dw_str_c(kinds[rnd(DW_N_ELEMENTS(kinds))]);
	ev->line = 1;
	if ((ev->has_principal = rnd(2))) {
		ev->principal_type = rnd_path();
		ev->principal_id = rnd_text(a);
	}
	if ((ev->has_resource = rnd(2))) {
		ev->resource_type = rnd_path();
		ev->resource_id = rnd_text(a);
	}
	ev->has_context = rnd(2);
	ev->context = ev->has_context ? rnd_record(a, 0) : (struct dw_tval){ .kind = DW_TV_RECORD };
	ev->logged = rnd_record(a, 0);
	ev->n_entities = rnd(3);
	ev->entities = DW_NEWN(a, struct dw_event_entity, ev->n_entities ? ev->n_entities : 1);
	for (uint32_t i = 0; i < ev->n_entities; i++) {
		struct dw_event_entity *e = &ev->entities[i];
		char *id = dw_arena_printf(a, "e%u", i);   /* unique uids */

		e->type = rnd_path();
		e->id = dw_str_c(id);
		e->attrs = rnd_record(a, 1);
		e->n_parents = rnd(3);
		e->parent_types = DW_NEWN(a, struct dw_str, 3);
		e->parent_ids = DW_NEWN(a, struct dw_str, 3);
		for (uint32_t k = 0; k < e->n_parents; k++) {
			e->parent_types[k] = rnd_path();
			e->parent_ids[k] = rnd_text(a);
		}
	}
}

static void test_random_round_trip(void)
{
	int ok = 0;
	const int rounds = 3000;

	for (int i = 0; i < rounds; i++) {
		struct dw_arena a;
		struct dw_event ev;

		dw_arena_init(&a);
		rnd_event(&a, &ev);
		if (round_trip(&ev, NULL))
			ok++;
		dw_arena_fini(&a);
	}
	CHECK_EQ_INT(ok, rounds);
}

/* A whole formatted trace parses back event for event. */
static void test_trace_round_trip(void)
{
	struct dw_arena a, b;
	struct dw_event evs[200], *back;
	struct dw_buf text = { 0 };
	size_t n;
	char err[512];
	bool all = true;

	dw_arena_init(&a);
	dw_arena_init(&b);
	for (int i = 0; i < 200; i++) {
		rnd_event(&a, &evs[i]);
		evs[i].line = (uint32_t)(2 * i + 1);      /* one blank line between events */
		CHECK_EQ_INT(dw_trace_format(&text, &evs[i]), 0);
		dw_buf_put(&text, "\n\n", 2);
	}
	CHECK_EQ_INT(dw_trace_parse(&b, text.p, text.n, &back, &n, err, sizeof err), 0);
	CHECK_EQ_INT(n, 200);
	for (size_t i = 0; i < n && i < 200; i++)
		if (!ev_eq(&evs[i], &back[i], true))
			all = false;
	CHECK(all);
	dw_buf_free(&text);
	dw_arena_fini(&a);
	dw_arena_fini(&b);
}


/* --- the binary codec ------------------------------------------------------------ */

/* encode, decode, compare (line included); the decoded event owns its bytes */
static bool codec_round_trip(const struct dw_event *ev)
{
	struct dw_buf b = { 0 };
	struct dw_arena a;
	struct dw_event back;
	char err[256];
	bool ok = false;

	dw_arena_init(&a);
	if (dw_event_encode(&b, ev) == 0 && b.n > 0 && (unsigned char)b.p[0] == 1 &&
	    dw_event_decode(&a, b.p, b.n, &back, err, sizeof err) == 0) {
		memset(b.p, 0xEE, b.n);        /* nothing may point into the encoding */
		ok = ev_eq(ev, &back, true);
	}
	dw_buf_free(&b);
	dw_arena_fini(&a);
	return ok;
}

static bool clone_round_trip(const struct dw_event *ev)
{
	struct dw_event *c = dw_event_clone(ev);
	bool ok = c != NULL && ev_eq(ev, c, true);

	free(c);
	return ok;
}

/* Every value kind, NUL bytes in strings, keys and ids, entities with parents. */
static void build_rich_event(struct dw_arena *a, struct dw_event *ev)
{
	struct dw_tval items[] = {
		{ .kind = DW_TV_NULL }, { .kind = DW_TV_BOOL, .b = true },
		{ .kind = DW_TV_BOOL, .b = false }, dw_tv_int(INT64_MIN), dw_tv_int(INT64_MAX),
		dw_tv_decimal(S("1.50")), dw_tv_decimal(S("1.5e3")),
		dw_tv_string(dw_str_make("nul\0inside", 10)), dw_tv_string(S("")),
		{ .kind = DW_TV_ENTITY, .type = S("Box::Agent"), .s = dw_str_make("i\0d", 3) },
		{ .kind = DW_TV_ARRAY, .n = 0 }, { .kind = DW_TV_RECORD, .n = 0 },
	};
	struct dw_tval *it = DW_NEWN(a, struct dw_tval, DW_N_ELEMENTS(items));
	struct dw_tfv f[4];
	struct dw_tval arr = { .kind = DW_TV_ARRAY, .n = DW_N_ELEMENTS(items) };

	memcpy(it, items, sizeof items);
	arr.items = it;
	f[0].key = S("all");
	f[0].val = arr;
	f[1].key = dw_str_make("k\0ey", 4);
	f[1].val = dw_tv_int(1);
	f[2].key = S("");
	f[2].val = dw_tv_string(S("empty key"));
	f[3].key = S("caf\xc3\xa9");
	f[3].val = dw_tv_decimal(S("-0.0001"));
	memset(ev, 0, sizeof *ev);
	CHECK_EQ_INT(dw_tval_record(a, f, 4, &ev->logged, NULL), 0);
	f[0].key = S("input");
	f[0].val = ev->logged;
	CHECK_EQ_INT(dw_tval_record(a, f, 1, &ev->context, NULL), 0);
	ev->has_context = true;
	ev->ts = -123456789;                 /* not whole seconds: the codec keeps ns */
	ev->line = 42;
	ev->ns = S("Box::Action");
	ev->action = dw_str_make("fs:\0read", 8);
	ev->kind = S("request");
	ev->has_principal = true;
	ev->principal_type = S("Box::Agent");
	ev->principal_id = dw_str_make("\0", 1);
	ev->has_resource = false;
	ev->n_entities = 2;
	ev->entities = DW_NEWN(a, struct dw_event_entity, 2);
	memset(ev->entities, 0, 2 * sizeof *ev->entities);
	ev->entities[0].type = S("Box::Group");
	ev->entities[0].id = S("g");
	ev->entities[0].attrs.kind = DW_TV_RECORD;
	ev->entities[1].type = S("Box::Agent");
	ev->entities[1].id = dw_str_make("\0", 1);
	ev->entities[1].attrs = ev->logged;
	ev->entities[1].n_parents = 2;
	ev->entities[1].parent_types = DW_NEWN(a, struct dw_str, 2);
	ev->entities[1].parent_ids = DW_NEWN(a, struct dw_str, 2);
	ev->entities[1].parent_types[0] = S("Box::Group");
	ev->entities[1].parent_ids[0] = S("g");
	ev->entities[1].parent_types[1] = S("Box::Group");
	ev->entities[1].parent_ids[1] = S("");
}

static void test_codec_round_trip(void)
{
	struct dw_arena a;
	struct dw_event ev;
	struct dw_buf b = { 0 };

	dw_arena_init(&a);
	build_rich_event(&a, &ev);
	CHECK(codec_round_trip(&ev));
	CHECK(clone_round_trip(&ev));

	/* decoded values are canonical and usable */
	struct dw_arena d;
	struct dw_event back;
	char err[256];
	const struct dw_tval *v;
	dw_arena_init(&d);
	CHECK_EQ_INT(dw_event_encode(&b, &ev), 0);
	CHECK_EQ_INT(dw_event_decode(&d, b.p, b.n, &back, err, sizeof err), 0);
	dw_arena_fini(&a);                   /* the original goes; the decoded stays */
	v = dw_tval_path(&back.context, S("input.all"));
	CHECK(v != NULL && v->kind == DW_TV_ARRAY && v->n == 12);
	CHECK(v->items[5].kind == DW_TV_DECIMAL && v->items[5].dec_ok && v->items[5].i == 15000);
	CHECK(v->items[6].kind == DW_TV_DECIMAL && !v->items[6].dec_ok);
	CHECK(v->items[7].s.n == 10 && memcmp(v->items[7].s.p, "nul\0inside", 10) == 0);
	CHECK(v->items[9].s.n == 3 && memcmp(v->items[9].s.p, "i\0d", 3) == 0);
	v = dw_tval_field(&back.logged, dw_str_make("k\0ey", 4));
	CHECK(v != NULL && v->i == 1);
	CHECK(back.ts == -123456789 && back.line == 42);
	CHECK(back.has_principal && !back.has_resource && back.principal_id.n == 1);
	CHECK(back.action.n == 8 && back.entities[1].n_parents == 2);
	CHECK(back.entities[1].parent_ids[1].n == 0);

	/* encodings concatenate: each is self-delimiting only with its length, so
	 * a second one after the first is trailing bytes */
	size_t one = b.n;
	CHECK_EQ_INT(dw_event_encode(&b, &back), 0);
	CHECK(b.n == 2 * one && memcmp(b.p, b.p + one, one) == 0);
	CHECK_EQ_INT(dw_event_decode(&d, b.p, b.n, &back, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "bytes after the event") != NULL);

	/* a zeroed event: zeroed records read as empty */
	struct dw_event z;
	memset(&z, 0, sizeof z);
	b.n = 0;
	CHECK_EQ_INT(dw_event_encode(&b, &z), 0);
	CHECK_EQ_INT(dw_event_decode(&d, b.p, b.n, &back, err, sizeof err), 0);
	CHECK(back.logged.kind == DW_TV_RECORD && back.logged.n == 0 &&
	      back.context.kind == DW_TV_RECORD && back.ns.n == 0 && back.n_entities == 0 &&
	      back.entities == NULL);
	struct dw_event *zc = dw_event_clone(&z);
	CHECK(zc != NULL && zc->logged.kind == DW_TV_RECORD && zc->ns.n == 0);
	free(zc);
	dw_buf_free(&b);
	dw_arena_fini(&d);
}

static void test_codec_vectors_and_random(void)
{
	char dir[1024];
	DIR *dd;
	struct dirent *de;
	int codec_ok = 0, clone_ok = 0, total = 0;

	snprintf(dir, sizeof dir, "%s/dogwood", TEST_DATA_DIR);
	dd = opendir(dir);
	while (dd != NULL && (de = readdir(dd)) != NULL) {
		char path[2048], err[256];
		struct dw_arena a;
		struct dw_event *evs;
		size_t n, len;
		char *text;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/trace.log", dir, de->d_name);
		if ((text = test_read_file(path, &len)) == NULL)
			continue;
		dw_arena_init(&a);
		if (dw_trace_parse(&a, text, len, &evs, &n, err, sizeof err) == 0) {
			for (size_t i = 0; i < n; i++) {
				total++;
				codec_ok += codec_round_trip(&evs[i]);
				clone_ok += clone_round_trip(&evs[i]);
			}
		}
		dw_arena_fini(&a);
		free(text);
	}
	if (dd != NULL)
		closedir(dd);
	CHECK(total >= 70);
	CHECK_EQ_INT(codec_ok, total);
	CHECK_EQ_INT(clone_ok, total);

	codec_ok = clone_ok = 0;
	for (int i = 0; i < 2000; i++) {
		struct dw_arena a;
		struct dw_event ev;

		dw_arena_init(&a);
		rnd_event(&a, &ev);
		ev.ts += (int64_t)rnd(1000000000);   /* the codec keeps sub-second ns */
		ev.line = rnd(100000);
		codec_ok += codec_round_trip(&ev);
		/* clone: compare after the source is gone */
		struct dw_event *c = dw_event_clone(&ev);
		struct dw_buf b1 = { 0 }, b2 = { 0 };
		dw_event_encode(&b1, &ev);
		dw_arena_fini(&a);
		if (c != NULL && dw_event_encode(&b2, c) == 0 && b1.n == b2.n &&
		    memcmp(b1.p, b2.p, b1.n) == 0)
			clone_ok++;
		free(c);
		dw_buf_free(&b1);
		dw_buf_free(&b2);
	}
	CHECK_EQ_INT(codec_ok, 2000);
	CHECK_EQ_INT(clone_ok, 2000);
}

/* --- hand-made encodings ---------------------------------------------------------- */

static void enc_u32(struct dw_buf *b, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		dw_buf_putc(b, (char)(v >> (8 * k)));
}

static void enc_str(struct dw_buf *b, const char *s, size_t n)
{
	enc_u32(b, (uint32_t)n);
	dw_buf_put(b, s, n);
}

/* version, ts 0, line 0, flags, ns/action/kind, an empty context; then the
 * logged value bytes the caller supplies; then the tail (entities). */
static void enc_head(struct dw_buf *b, uint8_t version, uint8_t flags)
{
	dw_buf_putc(b, (char)version);
	for (int k = 0; k < 12; k++)
		dw_buf_putc(b, 0);
	dw_buf_putc(b, (char)flags);
	enc_str(b, "N::Action", 9);
	enc_str(b, "a", 1);
	enc_str(b, "k", 1);
	dw_buf_putc(b, DW_TV_RECORD);
	enc_u32(b, 0);
}

static int dec(const struct dw_buf *b, char *err, size_t errlen)
{
	struct dw_arena a;
	struct dw_event ev;
	struct dw_arena_mark m;
	int r;

	dw_arena_init(&a);
	(void)dw_arena_alloc(&a, 8, 8);
	m = dw_arena_mark(&a);
	memset(&ev, 0x5a, sizeof ev);
	r = dw_event_decode(&a, b->p, b->n, &ev, err, errlen);
	if (r != 0) {
		/* refused: nothing kept, *ev untouched */
		CHECK(a.head == m.head && a.cur == m.cur);
		CHECK(((unsigned char *)&ev)[3] == 0x5a);
	}
	dw_arena_fini(&a);
	return r;
}

/* A logged value spelled in bytes, then zero entities. */
static void check_logged(const char *bytes, size_t n, int want, const char *why)
{
	struct dw_buf b = { 0 };
	char err[256];
	int r;

	enc_head(&b, 1, 0);
	dw_buf_put(&b, bytes, n);
	enc_u32(&b, 0);
	r = dec(&b, err, sizeof err);
	CHECK_EQ_INT(r, want);
	if (want != 0 && why != NULL && strstr(err, why) == NULL) {
		fprintf(stderr, "  err = %s\n  want ... %s ...\n", err, why);
		CHECK(0);
	}
	dw_buf_free(&b);
}

#define LOGGED(lit, want, why) check_logged(lit, sizeof(lit) - 1, want, why)

static void test_codec_strict(void)
{
	struct dw_buf b = { 0 };
	char err[256];

	/* a minimal valid one first */
	LOGGED("\x08\x00\x00\x00\x00", 0, NULL);
	/* one field of each kind */
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x01", 0, NULL);
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x02\x01", 0, NULL);
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x03" "\x01\x02\x03\x04\x05\x06\x07\x08",
	       0, NULL);
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x04\x03\x00\x00\x00" "1.5", 0, NULL);
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x05\x02\x00\x00\x00" "\x00\xff", 0,
	       NULL);                          /* strings are bytes; only keys must be UTF-8 */
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x06\x01\x00\x00\x00" "T"
	       "\x01\x00\x00\x00" "x", 0, NULL);
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x07\x02\x00\x00\x00" "\x01\x01", 0,
	       NULL);
	/* the refusals */
	LOGGED("\x07\x00\x00\x00\x00", -EINVAL, "the logged record is not a record");
	LOGGED("\x01", -EINVAL, "the logged record is not a record");
	LOGGED("\x09", -EINVAL, "the logged record is not a record");
	LOGGED("\x00", -EINVAL, "the logged record is not a record");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x00", -EINVAL, "unknown value tag 0");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x09", -EINVAL, "unknown value tag 9");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\xff", -EINVAL, "unknown value tag 255");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x02\x02", -EINVAL, "boolean byte 2");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "\xff" "\x01", -EINVAL,
	       "record key is not UTF-8");
	LOGGED("\x08\x01\x00\x00\x00" "\x02\x00\x00\x00" "\xed\xa0" "\x01", -EINVAL,
	       "record key is not UTF-8");
	LOGGED("\x08\x02\x00\x00\x00" "\x01\x00\x00\x00" "b" "\x01" "\x01\x00\x00\x00" "a" "\x01",
	       -EINVAL, "record key out of order or repeated");
	LOGGED("\x08\x02\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x01" "\x01\x00\x00\x00" "a" "\x01",
	       -EINVAL, "record key out of order or repeated");
	LOGGED("\x08\x02\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x01" "\x00\x00\x00\x00" "\x01",
	       -EINVAL, "record key out of order or repeated");
	LOGGED("\x08\xff\xff\xff\xff", -EINVAL, "truncated (4294967295 record fields)");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x07\xff\xff\xff\x7f", -EINVAL,
	       "truncated (2147483647 array items)");
	LOGGED("\x08\x01\x00\x00\x00" "\xff\xff\xff\xff" "a" "\x01", -EINVAL,
	       "truncated (a string of 4294967295 bytes)");
	LOGGED("\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a" "\x03\x01\x02", -EINVAL, "truncated");

	/* version, flags, trailing bytes, entities */
	enc_head(&b, 3, 0);
	dw_buf_put(&b, "\x08\x00\x00\x00\x00", 5);
	enc_u32(&b, 0);
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "event record, offset 0: unknown encoding version 3");
	/* version 2 is an event and its annotation: one without is a second
	 * spelling of version 1, refused */
	b.p[0] = 2;
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "version 2 without an annotation") != NULL);
	b.n = 0;
	enc_head(&b, 1, 0x08);
	dw_buf_put(&b, "\x08\x00\x00\x00\x00", 5);
	enc_u32(&b, 0);
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "event record, offset 13: unknown flags 0x08");
	b.n = 0;
	enc_head(&b, 1, 0);
	dw_buf_put(&b, "\x08\x00\x00\x00\x00", 5);
	enc_u32(&b, 0);
	CHECK_EQ_INT(dec(&b, err, sizeof err), 0);
	dw_buf_putc(&b, 0);
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "1 bytes after the event") != NULL);
	b.n -= 5;                              /* n_entities = 1 with no entity */
	enc_u32(&b, 1);
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "truncated (1 entities)") != NULL);
	b.n -= 4;                              /* one entity whose attrs are not a record */
	enc_u32(&b, 1);
	enc_str(&b, "T", 1);
	enc_str(&b, "x", 1);
	dw_buf_put(&b, "\x07\x00\x00\x00\x00", 5);
	enc_u32(&b, 0);
	CHECK_EQ_INT(dec(&b, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "an entity's attributes is not a record") != NULL);
	CHECK_EQ_INT(dec(&(struct dw_buf){ .p = NULL, .n = 0 }, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "event record, offset 0: truncated");

	/* nesting, counted as the trace parser does (a field's value is at depth
	 * 0): 129 arrays inside one another decode, 130 do not */
	for (int depth = 129; depth <= 130; depth++) {
		b.n = 0;
		enc_head(&b, 1, 0);
		dw_buf_put(&b, "\x08\x01\x00\x00\x00" "\x01\x00\x00\x00" "a", 10);
		for (int i = 1; i < depth; i++)
			dw_buf_put(&b, "\x07\x01\x00\x00\x00", 5);
		dw_buf_put(&b, "\x07\x00\x00\x00\x00", 5);
		enc_u32(&b, 0);
		CHECK_EQ_INT(dec(&b, err, sizeof err), depth == 129 ? 0 : -EINVAL);
		if (depth == 130)
			CHECK(strstr(err, "values nested deeper than 128") != NULL);
	}

	/* every proper prefix of a valid encoding is refused */
	struct dw_arena a;
	struct dw_event ev;
	bool all = true;
	dw_arena_init(&a);
	build_rich_event(&a, &ev);
	b.n = 0;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), 0);
	size_t full = b.n;
	for (size_t n = 0; n < full; n++) {
		b.n = n;
		if (dec(&b, err, sizeof err) != -EINVAL)
			all = false;
	}
	CHECK(all);
	b.n = full;
	CHECK_EQ_INT(dec(&b, err, sizeof err), 0);
	/* out of memory */
	struct dw_arena lim;
	dw_arena_init(&lim);
	lim.limit = 1;
	CHECK_EQ_INT(dw_event_decode(&lim, b.p, b.n, &ev, err, sizeof err), -ENOMEM);
	dw_arena_fini(&lim);
	dw_arena_fini(&a);
	dw_buf_free(&b);
}

static void test_codec_encode_refusals(void)
{
	struct dw_arena a;
	struct dw_event ev;
	struct dw_buf b = { 0 };
	struct dw_tfv f[2];
	struct dw_tval rec, v;

	dw_arena_init(&a);
	memset(&ev, 0, sizeof ev);
	ev.ns = S("N::Action");
	ev.logged.kind = DW_TV_RECORD;
	dw_buf_put(&b, "keep", 4);

	/* a record that is not canonical */
	f[0].key = S("b");
	f[0].val = dw_tv_int(1);
	f[1].key = S("a");
	f[1].val = dw_tv_int(2);
	rec = (struct dw_tval){ .kind = DW_TV_RECORD, .n = 2, .fields = f };
	ev.logged = rec;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	f[1].key = S("b");
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	/* a key that is not UTF-8 */
	f[0].key = S("\xff");
	ev.logged.n = 1;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	/* a logged value that is not a record; an unknown kind inside */
	ev.logged = dw_tv_int(1);
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	f[0].key = S("a");
	f[0].val = (struct dw_tval){ .kind = 99 };
	ev.logged = rec;
	ev.logged.n = 1;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	/* context and entity attributes too */
	ev.logged.kind = 0;
	ev.context = dw_tv_int(3);
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	ev.context.kind = 0;
	struct dw_event_entity e = { .type = S("T"), .id = S("x"), .attrs = dw_tv_int(1) };
	ev.n_entities = 1;
	ev.entities = &e;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	e.attrs.kind = DW_TV_RECORD;
	e.attrs.n = 0;
	/* nesting past the limit */
	v = (struct dw_tval){ .kind = DW_TV_ARRAY, .n = 0 };
	for (int i = 0; i < 129; i++) {
		struct dw_tval *box = DW_NEW(&a, struct dw_tval);
		*box = v;
		v = (struct dw_tval){ .kind = DW_TV_ARRAY, .n = 1, .items = box };
	}
	f[0].val = v;                          /* the outer array at depth 1 */
	ev.logged = rec;
	ev.logged.n = 1;
	CHECK_EQ_INT(dw_event_encode(&b, &ev), -EINVAL);
	CHECK(b.n == 4 && strcmp(b.p, "keep") == 0);
	f[0].val = *v.items;                   /* one level less: fine */
	CHECK_EQ_INT(dw_event_encode(&b, &ev), 0);
	CHECK(b.n > 4);
	struct dw_arena d;
	struct dw_event back;
	char err[256];
	dw_arena_init(&d);
	CHECK_EQ_INT(dw_event_decode(&d, b.p + 4, b.n - 4, &back, err, sizeof err), 0);
	CHECK(ev_eq(&ev, &back, true) == false);   /* ev.context is kind 0, back's a record */
	CHECK(back.context.kind == DW_TV_RECORD && dw_tval_eq(&back.logged, &ev.logged));
	dw_arena_fini(&d);
	dw_buf_free(&b);
	dw_arena_fini(&a);
}

/* --- annotations (version 2) ------------------------------------------------------ */

/* The minimal event of enc_head with an empty logged record and no entities,
 * as version 2, then the annotation bytes the caller supplies. */
static void enc_annotated(struct dw_buf *b, const char *annot, size_t n)
{
	b->n = 0;
	enc_head(b, 2, 0);
	dw_buf_put(b, "\x08\x00\x00\x00\x00", 5);
	enc_u32(b, 0);
	dw_buf_put(b, annot, n);
}

static void check_annot(const char *bytes, size_t n, int want, const char *why)
{
	struct dw_buf b = { 0 };
	char err[256];

	enc_annotated(&b, bytes, n);
	CHECK_EQ_INT(dec(&b, err, sizeof err), want);
	if (want != 0 && strstr(err, why) == NULL) {
		fprintf(stderr, "  err = %s\n  want ... %s ...\n", err, why);
		CHECK(0);
	}
	dw_buf_free(&b);
}

#define ANNOT(lit, want, why) check_annot(lit, sizeof(lit) - 1, want, why)

/* The decoder's refusals, byte by byte (event_codec.c: parts, cause, ids,
 * then reason, description, note, each only with its bit). */
static void test_codec_annot_strict(void)
{
	char big[1100];
	struct dw_buf b = { 0 };

	/* accepted: a permit with one id, a forbid with reason and description,
	 * a no-match with a reason, an internal fault naming a rule, a note alone */
	ANNOT("\x01" "\x00" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "p", 0, NULL);
	ANNOT("\x07" "\x01" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "f" "\x01\x00\x00\x00" "r"
	      "\x01\x00\x00\x00" "d", 0, NULL);
	ANNOT("\x03" "\x02" "\x00\x00\x00\x00" "\x01\x00\x00\x00" "r", 0, NULL);
	ANNOT("\x0b" "\x03" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "e" "\x01\x00\x00\x00" "r"
	      "\x02\x00\x00\x00" "n1", 0, NULL);
	ANNOT("\x08" "\x02\x00\x00\x00" "n1", 0, NULL);
	/* the parts byte */
	ANNOT("\x00", -EINVAL, "annotation: parts 0x00");
	ANNOT("\x10", -EINVAL, "annotation: parts 0x10");
	ANNOT("\x81" "\x00" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "p", -EINVAL, "parts 0x81");
	ANNOT("\x0a" "\x01\x00\x00\x00" "r" "\x01\x00\x00\x00" "n", -EINVAL, "parts 0x0a");
	ANNOT("\x0c" "\x01\x00\x00\x00" "d" "\x01\x00\x00\x00" "n", -EINVAL, "parts 0x0c");
	/* the decision */
	ANNOT("\x01" "\x04" "\x00\x00\x00\x00", -EINVAL, "annotation: unknown cause");
	ANNOT("\x01" "\xff" "\x00\x00\x00\x00", -EINVAL, "annotation: unknown cause");
	ANNOT("\x01" "\x00" "\x00\x00\x00\x00", -EINVAL, "a permit or forbid with no determining");
	ANNOT("\x01" "\x01" "\x00\x00\x00\x00", -EINVAL, "a permit or forbid with no determining");
	ANNOT("\x01" "\x02" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "x", -EINVAL,
	      "determining rules on a no-match");
	ANNOT("\x03" "\x00" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "p" "\x01\x00\x00\x00" "r",
	      -EINVAL, "a denial reason on a permit");
	ANNOT("\x05" "\x03" "\x01\x00\x00\x00" "\x01\x00\x00\x00" "e" "\x01\x00\x00\x00" "d",
	      -EINVAL, "a description without a permitting or forbidding rule");
	ANNOT("\x05" "\x02" "\x00\x00\x00\x00" "\x01\x00\x00\x00" "d", -EINVAL,
	      "a description without a permitting or forbidding rule");
	/* present strings are never empty */
	ANNOT("\x01" "\x00" "\x01\x00\x00\x00" "\x00\x00\x00\x00" "z", -EINVAL,
	      "annotation: an empty rule id");
	ANNOT("\x03" "\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x00", -EINVAL,
	      "annotation: an empty reason");
	ANNOT("\x08" "\x00\x00\x00\x00", -EINVAL, "annotation: an empty note");
	/* counts and lengths against what is left */
	ANNOT("\x01" "\x00" "\xff\xff\xff\xff", -EINVAL, "truncated (4294967295 rule ids)");
	ANNOT("\x08" "\x05\x00\x00\x00" "n1", -EINVAL, "truncated (a string of 5 bytes)");
	ANNOT("\x01" "\x00", -EINVAL, "truncated");
	/* bytes after the annotation */
	ANNOT("\x08" "\x02\x00\x00\x00" "n1" "\x00", -EINVAL, "1 bytes after the event");
	/* the note: UTF-8, at most 1024 bytes */
	ANNOT("\x08" "\x02\x00\x00\x00" "\xc3\x28", -EINVAL, "a note that is not UTF-8");
	ANNOT("\x08" "\x03\x00\x00\x00" "\xed\xa0\x80", -EINVAL, "a note that is not UTF-8");
	ANNOT("\x08" "\x02\x00\x00\x00" "\xc3\xa9", 0, NULL);
	for (size_t n = 1024; n <= 1025; n++) {
		memset(big, 'n', sizeof big);
		big[0] = 0x08;
		big[1] = (char)(n & 0xff), big[2] = (char)(n >> 8), big[3] = 0, big[4] = 0;
		check_annot(big, 5 + n, n == 1024 ? 0 : -EINVAL, "a note longer than 1024 bytes");
	}
	/* every proper prefix of an annotated encoding is refused, and so is the
	 * same record with any one byte of its annotation dropped */
	{
		static const char full[] = "\x0f" "\x01" "\x02\x00\x00\x00" "\x02\x00\x00\x00" "f1"
					   "\x02\x00\x00\x00" "f2" "\x03\x00\x00\x00" "rea"
					   "\x03\x00\x00\x00" "des" "\x04\x00\x00\x00" "note";
		char err[256];
		size_t head;
		bool all = true;

		enc_annotated(&b, full, sizeof full - 1);
		CHECK_EQ_INT(dec(&b, err, sizeof err), 0);
		head = b.n - (sizeof full - 1);
		for (size_t n = 0; n < b.n; n++) {
			struct dw_buf cut = { .p = b.p, .n = n };
			if (dec(&cut, err, sizeof err) != -EINVAL)
				all = false;
		}
		for (size_t k = 0; k < sizeof full - 1; k++) {
			struct dw_buf drop = { 0 };
			dw_buf_put(&drop, b.p, head + k);
			dw_buf_put(&drop, full + k + 1, sizeof full - 2 - k);
			if (dec(&drop, err, sizeof err) != -EINVAL)
				all = false;
			dw_buf_free(&drop);
		}
		CHECK(all);
	}
	dw_buf_free(&b);
}

/* An annotation as the monitor writes one: each kind round-trips through
 * encode, decode and clone, and dw_event_encode_annot on a version-1
 * encoding gives the same bytes as encoding the annotated event whole. */
static void test_codec_annot_round_trip(void)
{
	struct dw_str ids[3] = { S("allow_http"), S("three_uploads"), S("policy_2") };
	const struct dw_event_annot kinds[] = {
		{ .has_decision = true, .cause = DW_AC_PERMITTED, .n_ids = 1, .ids = ids,
		  .description = S("Uploads are fine."), .note = S("{\"record\":\"00f1\"}") },
		{ .has_decision = true, .cause = DW_AC_FORBIDDEN, .n_ids = 2, .ids = ids + 1,
		  .reason = S("policy denied this operation on 'a' [policy: three_uploads]."),
		  .description = S("At most three.") },
		{ .has_decision = true, .cause = DW_AC_NO_MATCH,
		  .reason = S("policy denied this operation [default-deny]: No permit policy matched "
			      "this request.") },
		{ .has_decision = true, .cause = DW_AC_INTERNAL_FAULT, .n_ids = 3, .ids = ids,
		  .reason = S("policy denied this operation because the request could not be "
			      "evaluated."), .note = S("caf\xc3\xa9") },
		{ .has_decision = true, .cause = DW_AC_INTERNAL_FAULT },
		{ .note = S("n") },
	};
	struct dw_arena a, d;
	struct dw_event ev, back;
	struct dw_buf whole = { 0 }, split = { 0 };
	char err[256];

	dw_arena_init(&a);
	build_rich_event(&a, &ev);
	for (size_t k = 0; k < DW_N_ELEMENTS(kinds); k++) {
		struct dw_event *c;

		ev.annot = &kinds[k];
		whole.n = split.n = 0;
		CHECK_EQ_INT(dw_event_encode(&whole, &ev), 0);
		CHECK_EQ_INT((unsigned char)whole.p[0], 2);
		dw_arena_init(&d);
		CHECK_EQ_INT(dw_event_decode(&d, whole.p, whole.n, &back, err, sizeof err), 0);
		CHECK(back.annot != NULL && ev_eq(&ev, &back, true));
		c = dw_event_clone(&back);
		dw_arena_fini(&d);             /* the clone owns all it points to */
		CHECK(c != NULL && ev_eq(&ev, c, true));
		free(c);
		/* the monitor's way: the event first, its annotation after */
		ev.annot = NULL;
		dw_buf_put(&split, "xy", 2);
		CHECK_EQ_INT(dw_event_encode(&split, &ev), 0);
		CHECK_EQ_INT((unsigned char)split.p[2], 1);
		CHECK_EQ_INT(dw_event_encode_annot(&split, 2, &kinds[k]), 0);
		CHECK(split.n == whole.n + 2 && memcmp(split.p + 2, whole.p, whole.n) == 0);
		/* only onto a version-1 event */
		CHECK_EQ_INT(dw_event_encode_annot(&split, 2, &kinds[k]), -EINVAL);
		CHECK_EQ_INT(dw_event_encode_annot(&split, split.n, &kinds[k]), -EINVAL);
	}
	/* the encoder refuses what the decoder would, leaving the buffer as it was */
	{
		struct dw_str empty_id[1] = { S("") };
		char note[1026];
		const struct dw_event_annot bad[] = {
			{ .note = S("") },
			{ .reason = S("r"), .note = S("n") },
			{ .has_decision = true, .cause = DW_AC_COUNT },
			{ .has_decision = true, .cause = DW_AC_PERMITTED },
			{ .has_decision = true, .cause = DW_AC_PERMITTED, .n_ids = 1, .ids = ids,
			  .reason = S("r") },
			{ .has_decision = true, .cause = DW_AC_NO_MATCH, .n_ids = 1, .ids = ids },
			{ .has_decision = true, .cause = DW_AC_NO_MATCH, .description = S("d") },
			{ .has_decision = true, .cause = DW_AC_FORBIDDEN, .n_ids = 1, .ids = empty_id },
			{ .has_decision = true, .cause = DW_AC_INTERNAL_FAULT, .note = S("\xff") },
			{ .note = { note, 1025 } },
		};
		memset(note, 'x', sizeof note);
		for (size_t k = 0; k < DW_N_ELEMENTS(bad); k++) {
			whole.n = 0;
			dw_buf_put(&whole, "keep", 4);
			ev.annot = &bad[k];
			CHECK_EQ_INT(dw_event_encode(&whole, &ev), -EINVAL);
			CHECK(whole.n == 4 && strcmp(whole.p, "keep") == 0);
			ev.annot = NULL;
			CHECK_EQ_INT(dw_event_encode(&whole, &ev), 0);
			size_t n = whole.n;
			CHECK_EQ_INT(dw_event_encode_annot(&whole, 4, &bad[k]), -EINVAL);
			CHECK(whole.n == n && (unsigned char)whole.p[4] == 1);
		}
	}
	dw_buf_free(&whole);
	dw_buf_free(&split);
	dw_arena_fini(&a);
}

/* Damaged encodings: decoding never crashes and either refuses or yields an
 * event that encodes again (a valid event). */
static struct dw_str fuzz_ids[2] = { DW_STR_LIT("a"), DW_STR_LIT("bc") };
static const struct dw_event_annot fuzz_annots[] = {
	{ .has_decision = true, .cause = DW_AC_PERMITTED, .n_ids = 2, .ids = fuzz_ids,
	  .description = DW_STR_LIT("desc"), .note = DW_STR_LIT("note") },
	{ .has_decision = true, .cause = DW_AC_FORBIDDEN, .n_ids = 1, .ids = fuzz_ids,
	  .reason = DW_STR_LIT("denied") },
	{ .has_decision = true, .cause = DW_AC_NO_MATCH, .reason = DW_STR_LIT("no") },
	{ .note = DW_STR_LIT("only a note") },
};

static void test_codec_fuzz(void)
{
	int refused = 0, accepted = 0, valid = 0;

	for (int i = 0; i < 3000; i++) {
		struct dw_arena a, d;
		struct dw_event ev, back;
		struct dw_buf b = { 0 }, again = { 0 };
		char err[256];
		int r;

		dw_arena_init(&a);
		dw_arena_init(&d);
		if (i % 10 == 0)
			build_rich_event(&a, &ev);
		else
			rnd_event(&a, &ev);
		if (i % 3 == 0)                /* a third carry an annotation (version 2) */
			ev.annot = &fuzz_annots[(unsigned)i / 3 % DW_N_ELEMENTS(fuzz_annots)];
		dw_event_encode(&b, &ev);
		switch (rnd(4)) {
		case 0:                        /* flip bits */
			for (uint32_t k = 0, n = 1 + rnd(3); k < n; k++)
				b.p[rnd((uint32_t)b.n)] ^= (char)(1u << rnd(8));
			break;
		case 1:                        /* overwrite a byte */
			b.p[rnd((uint32_t)b.n)] = (char)rnd(256);
			break;
		case 2:                        /* truncate */
			b.n = rnd((uint32_t)b.n);
			break;
		default:                       /* a stray byte somewhere */
			dw_buf_putc(&b, 0);
			{
				uint32_t at = rnd((uint32_t)b.n);
				memmove(b.p + at + 1, b.p + at, b.n - at - 1);
				b.p[at] = (char)rnd(256);
			}
			break;
		}
		r = dw_event_decode(&d, b.p, b.n, &back, err, sizeof err);
		if (r == -EINVAL && err[0] != '\0') {
			refused++;
		} else if (r == 0) {
			accepted++;
			if (dw_event_encode(&again, &back) == 0 && again.n == b.n &&
			    memcmp(again.p, b.p, b.n) == 0)
				valid++;
		}
		dw_buf_free(&b);
		dw_buf_free(&again);
		dw_arena_fini(&a);
		dw_arena_fini(&d);
	}
	CHECK_EQ_INT(refused + accepted, 3000);
	CHECK(refused > 1000);
	/* what decodes re-encodes to the very same bytes: nothing was reinterpreted */
	CHECK_EQ_INT(valid, accepted);
}

static const struct test_case tests[] = {
	{ "vectors", test_vectors },
	{ "vector_fields", test_vector_fields },
	{ "values", test_values },
	{ "escapes", test_escapes },
	{ "line_full", test_line_full },
	{ "timestamps", test_timestamps },
	{ "fractional_ts", test_fractional_ts },
	{ "errors", test_errors },
	{ "depth", test_depth },
	{ "whole_trace", test_whole_trace },
	{ "format", test_format },
	{ "random_round_trip", test_random_round_trip },
	{ "trace_round_trip", test_trace_round_trip },
	{ "codec_round_trip", test_codec_round_trip },
	{ "codec_vectors_and_random", test_codec_vectors_and_random },
	{ "codec_strict", test_codec_strict },
	{ "codec_encode_refusals", test_codec_encode_refusals },
	{ "codec_annot_strict", test_codec_annot_strict },
	{ "codec_annot_round_trip", test_codec_annot_round_trip },
	{ "codec_fuzz", test_codec_fuzz },
};

TEST_MAIN(tests)
