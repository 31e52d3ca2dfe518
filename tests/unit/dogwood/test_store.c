/* test_store.c - the entity store and Cedar's JSON value encoding
 * (src/dogwood/cedar/store.c, src/dogwood/cedar/json_value.c). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "json_value.h"
#include "schema.h"
#include "store.h"

/* the Cedar conformance cases (tests/data/cedar/README.md) */
#define TESTDATA TEST_DATA_DIR "/cedar"

/* --- helpers ------------------------------------------------------------------ */

static struct dw_schema *schema_text(const char *text)
{
	struct dw_diags d;
	struct dw_schema *s = dw_schema_new();
	int r;

	dw_diags_init(&d);
	r = dw_schema_add_cedar(s, "test.cedarschema", text, strlen(text), &d);
	if (r == 0)
		r = dw_schema_finish(s, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "schema: %u:%u: %s\n", d.v[i].line, d.v[i].col, d.v[i].msg);
	dw_diags_fini(&d);
	CHECK_EQ_INT(r, 0);
	if (r != 0) {
		dw_schema_free(s);
		return NULL;
	}
	return s;
}

static int load(struct dw_store *st, const struct dw_schema *s, const char *json,
		struct dw_diags *d)
{
	return dw_store_add_json(st, s, "e.json", json, strlen(json), d);
}

static const char *msg0(const struct dw_diags *d)
{
	return d->n ? d->v[0].msg : "(no diagnostic)";
}

/* Load json into a fresh store (finished unless it fails); returns the first
 * message, or "" when all went well.  Static buffer: one result at a time. */
static const char *load_msg(const struct dw_schema *s, const char *json)
{
	static char buf[1024];
	struct dw_diags d;
	struct dw_store *st = dw_store_new();
	int r;

	dw_diags_init(&d);
	r = load(st, s, json, &d);
	if (r == 0)
		r = dw_store_finish(st, s, &d);
	snprintf(buf, sizeof buf, "%s", r == 0 ? "" : msg0(&d));
	if (r != 0 && r != -EINVAL)
		snprintf(buf, sizeof buf, "unexpected rc %d", r);
	if (r == 0 && d.n != 0)
		snprintf(buf, sizeof buf, "diagnostic without error: %s", msg0(&d));
	dw_diags_fini(&d);
	dw_store_free(st);
	return buf;
}

static struct dw_uid uid_of(const char *type, const char *id)
{
	struct dw_uid u;

	dw_uid_init(&u, dw_str_c(type), dw_str_c(id));
	return u;
}

static bool in(const struct dw_store *st, const char *ta, const char *ia, const char *tb,
	       const char *ib)
{
	struct dw_uid a = uid_of(ta, ia), b = uid_of(tb, ib);

	return dw_store_in(st, &a, &b);
}

/* Parse one JSON text as a value (expected type may be NULL); returns rc and
 * leaves the message in err. */
static int val_of(struct dw_arena *a, const struct dw_type *t, const char *text,
		  struct dw_val *out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	int r;

	if (j == NULL) {
		snprintf(err, errlen, "test JSON: %s", je.text);
		return -999;
	}
	r = dw_json_value(a, NULL, t, j, "v", out, err, errlen);
	json_decref(j);
	return r;
}

/* The Cedar rendering of a parsed value, or the error message. */
static const char *show(const struct dw_type *t, const char *text)
{
	static char buf[1024];
	struct dw_arena a;
	struct dw_val v;
	char err[512];
	struct dw_buf b = { 0 };

	dw_arena_init(&a);
	if (val_of(&a, t, text, &v, err, sizeof err) != 0) {
		snprintf(buf, sizeof buf, "ERR %s", err);
	} else {
		dw_val_format(&b, v);
		snprintf(buf, sizeof buf, "%s", b.p ? b.p : "");
	}
	dw_buf_free(&b);
	dw_arena_fini(&a);
	return buf;
}

/* Hand-built resolved types (schema.h), for values checked without a schema. */
static const struct dw_type t_bool = { .kind = DW_T_BOOL };
static const struct dw_type t_long = { .kind = DW_T_LONG };
static const struct dw_type t_string = { .kind = DW_T_STRING };
static const struct dw_type t_ip = { .kind = DW_T_EXT, .ext = DW_EXT_IPADDR };
static const struct dw_type t_decimal = { .kind = DW_T_EXT, .ext = DW_EXT_DECIMAL };
static const struct dw_type t_datetime = { .kind = DW_T_EXT, .ext = DW_EXT_DATETIME };
static const struct dw_type t_empty_rec = { .kind = DW_T_RECORD };
static const struct dw_etype et_user = { .name = DW_STR_LIT("User"), .shape = &t_empty_rec };
static const struct dw_type t_user = { .kind = DW_T_ENTITY, .entity = &et_user };
static const struct dw_str color_ids[] = { DW_STR_LIT("green"), DW_STR_LIT("red") };
static const struct dw_etype et_color = {
	.name = DW_STR_LIT("Color"), .shape = &t_empty_rec,
	.is_enum = true, .n_enum = 2, .enum_ids = color_ids,
};
static const struct dw_type t_color = { .kind = DW_T_ENTITY, .entity = &et_color };
static const struct dw_type t_set_user = { .kind = DW_T_SET, .elem = &t_user };
static const struct dw_attr addr_attrs[] = {   /* sorted by name */
	{ DW_STR_LIT("street"), &t_string, true },
	{ DW_STR_LIT("zip"), &t_long, false },
};
static const struct dw_type t_addr = { .kind = DW_T_RECORD, .rec = { 2, addr_attrs } };
static const struct dw_attr person_attrs[] = {
	{ DW_STR_LIT("addr"), &t_addr, true },
	{ DW_STR_LIT("friends"), &t_set_user, false },
	{ DW_STR_LIT("ip"), &t_ip, false },
};
static const struct dw_type t_person = { .kind = DW_T_RECORD, .rec = { 3, person_attrs } };

/* --- plain values (no schema) ------------------------------------------------- */

static void test_plain_values(void)
{
	CHECK_EQ_STR(show(NULL, "true"), "true");
	CHECK_EQ_STR(show(NULL, "-9223372036854775808"), "-9223372036854775808");
	CHECK_EQ_STR(show(NULL, "\"a\\u0000b\""), "\"a\\0b\"");
	CHECK_EQ_STR(show(NULL, "[3, 1, 3, \"x\", true]"), "[true, 1, 3, \"x\"]");
	CHECK_EQ_STR(show(NULL, "{\"b\": 1, \"a\": {\"c\": []}}"), "{\"a\": {\"c\": []}, \"b\": 1}");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"A::B\", \"id\": \"x\"}}"),
		     "A::B::\"x\"");
	/* without a schema a bare {"type","id"} is just a record */
	CHECK_EQ_STR(show(NULL, "{\"type\": \"User\", \"id\": \"x\"}"),
		     "{\"id\": \"x\", \"type\": \"User\"}");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"ip\", \"arg\": \"10.0.0.1\"}}"),
		     "ip(\"10.0.0.1/32\")");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"decimal\", \"arg\": \"1.5\"}}"),
		     "decimal(\"1.5000\")");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"offset\", \"args\": ["
				"{\"__extn\": {\"fn\": \"datetime\", \"arg\": \"1970-01-01\"}},"
				"{\"__extn\": {\"fn\": \"duration\", \"arg\": \"1500ms\"}}]}}"),
		     "datetime(\"1970-01-01T00:00:01.500Z\")");
	/* a string stays a string without a schema */
	CHECK_EQ_STR(show(NULL, "\"10.0.0.1\""), "\"10.0.0.1\"");
}

static void test_plain_errors(void)
{
	CHECK_EQ_STR(show(NULL, "null"), "ERR v: null is not a Cedar value");
	CHECK_EQ_STR(show(NULL, "[1, {\"a\": null}]"), "ERR v[1].\"a\": null is not a Cedar value");
	CHECK_EQ_STR(show(NULL, "1.5"),
		     "ERR v: 1.5 is not a Cedar value: numbers must be 64-bit integers");
	CHECK_EQ_STR(show(NULL, "{\"__expr\": \"1 + 1\"}"),
		     "ERR v: the __expr escape is no longer supported");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"User\", \"id\": \"x\"}, \"y\": 1}"),
		     "ERR v: an object with \"__entity\" must have no other keys");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"User\"}}"),
		     "ERR v: entity reference without \"id\"");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"User\", \"id\": 5}}"),
		     "ERR v: \"id\" of an entity reference must be a string, got Long");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"User\", \"id\": \"x\", \"z\": 1}}"),
		     "ERR v: unexpected key \"z\" in an entity reference (it has \"type\" and \"id\")");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"nope\", \"arg\": \"1\"}}"),
		     "ERR v: unknown extension function \"nope\"");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"ip\"}}"),
		     "ERR v: extension call needs exactly one of \"arg\" and \"args\"");
	CHECK_EQ_STR(show(NULL, "{\"__extn\": {\"fn\": \"ip\", \"arg\": \"1\", \"args\": []}}"),
		     "ERR v: extension call needs exactly one of \"arg\" and \"args\"");
	CHECK(strncmp(show(NULL, "{\"__extn\": {\"fn\": \"decimal\", \"arg\": \"1.23456\"}}"),
		      "ERR v: extension function decimal failed: ", 42) == 0);
	CHECK(strncmp(show(NULL, "{\"__extn\": {\"fn\": \"ip\", \"arg\": 5}}"),
		      "ERR v: extension function ip failed: ", 37) == 0);
}

static void test_type_names(void)
{
	static const char *const bad[] = {
		"User ", " User", "A :: B", "A::", "::A", "A:::B", "1A", "A-B", "",
		"if", "Ns::in", "__cedar", "__cedar::Long", "A::__cedar::B", "A::\"x\"",
	};
	char text[128], err[256];
	struct dw_arena a;
	struct dw_val v;

	dw_arena_init(&a);
	for (size_t i = 0; i < DW_N_ELEMENTS(bad); i++) {
		snprintf(text, sizeof text, "{\"__entity\": {\"type\": \"%s\", \"id\": \"x\"}}",
			 strcmp(bad[i], "A::\"x\"") == 0 ? "A::\\\"x\\\"" : bad[i]);
		CHECK_EQ_INT(val_of(&a, NULL, text, &v, err, sizeof err), -EINVAL);
		CHECK(strstr(err, "invalid entity type") != NULL);
	}
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"A b\", \"id\": \"x\"}}"),
		     "ERR v: invalid entity type \"A b\": expected identifiers separated by \"::\" "
		     "(no spaces)");
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"__cedar::X\", \"id\": \"x\"}}"),
		     "ERR v: invalid entity type \"__cedar::X\": \"__cedar\" is reserved");
	/* keywords that are not reserved identifiers are fine */
	CHECK_EQ_STR(show(NULL, "{\"__entity\": {\"type\": \"principal::Action_1::_x\", "
				"\"id\": \"\"}}"),
		     "principal::Action_1::_x::\"\"");
	dw_arena_fini(&a);
}

/* --- UIDs ----------------------------------------------------------------------- */

static const char *uid_show(const char *text)
{
	static char buf[512];
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	struct dw_arena a;
	const struct dw_uid *u;
	struct dw_buf b = { 0 };
	char err[256];

	dw_arena_init(&a);
	if (j == NULL)
		snprintf(buf, sizeof buf, "test JSON: %s", je.text);
	else if (dw_json_uid(&a, j, "principal", &u, err, sizeof err) != 0)
		snprintf(buf, sizeof buf, "ERR %s", err);
	else if (dw_uid_format(&b, u) == 0)
		snprintf(buf, sizeof buf, "%s|%u", b.p, (unsigned)u->id.n);
	json_decref(j);
	dw_buf_free(&b);
	dw_arena_fini(&a);
	return buf;
}

static void test_uid_forms(void)
{
	CHECK_EQ_STR(uid_show("{\"type\": \"User\", \"id\": \"alice\"}"), "User::\"alice\"|5");
	CHECK_EQ_STR(uid_show("{\"__entity\": {\"type\": \"NS::User\", \"id\": \"a\"}}"),
		     "NS::User::\"a\"|1");
	CHECK_EQ_STR(uid_show("{\"type\": \"a\", \"id\": \"\\u0000\\u0000\\u0000\"}"),
		     "a::\"\\0\\0\\0\"|3");
	/* Cedar syntax strings, as in the CLI's request files */
	CHECK_EQ_STR(uid_show("\"User::\\\"alice\\\"\""), "User::\"alice\"|5");
	CHECK_EQ_STR(uid_show("\"Box::Action::\\\"fs:read\\\"\""), "Box::Action::\"fs:read\"|7");
	CHECK_EQ_STR(uid_show("\"A::\\\"q\\\\\\\"x\\\\n\\\\u{e9}\\\\x41\\\\0\\\"\""),
		     "A::\"q\\\"x\\n\xc3\xa9" "A\\0\"|8");
	CHECK_EQ_STR(uid_show("\"A::\\\"\\\"\""), "A::\"\"|0");
	CHECK_EQ_STR(uid_show("\"User::alice\""),
		     "ERR principal: expected an entity UID such as User::\"alice\"");
	CHECK_EQ_STR(uid_show("\"User::\\\"a\\\" \""),
		     "ERR principal: entity id must be one string literal ending the text");
	CHECK_EQ_STR(uid_show("\"User::\\\"a\""),
		     "ERR principal: entity id must be one string literal ending the text");
	CHECK_EQ_STR(uid_show("\"User::\\\"\\\\q\\\"\""),
		     "ERR principal: invalid escape \\q in entity id");
	CHECK_EQ_STR(uid_show("\"User::\\\"\\\\x80\\\"\""),
		     "ERR principal: invalid \\x escape (two hex digits, at most 7F)");
	CHECK_EQ_STR(uid_show("\"User::\\\"\\\\u{d800}\\\"\""),
		     "ERR principal: invalid \\u escape (not a Unicode scalar value)");
	CHECK_EQ_STR(uid_show("\"User ::\\\"a\\\"\""),
		     "ERR principal: invalid entity type \"User \": expected identifiers "
		     "separated by \"::\" (no spaces)");
	CHECK_EQ_STR(uid_show("5"),
		     "ERR principal: expected an entity UID ({\"type\": .., \"id\": ..}), got Long");
	CHECK_EQ_STR(uid_show("{\"id\": \"x\"}"), "ERR principal: entity reference without \"type\"");
}

/* --- schema-guided values (hand-built types) ---------------------------------- */

static void test_typed_values(void)
{
	/* implicit and explicit entity forms */
	CHECK_EQ_STR(show(&t_user, "{\"type\": \"User\", \"id\": \"bob\"}"), "User::\"bob\"");
	CHECK_EQ_STR(show(&t_user, "{\"__entity\": {\"type\": \"User\", \"id\": \"bob\"}}"),
		     "User::\"bob\"");
	CHECK_EQ_STR(show(&t_user, "{\"type\": \"Admin\", \"id\": \"bob\"}"),
		     "ERR v: expected entity of type User, got entity of type Admin");
	CHECK_EQ_STR(show(&t_user, "\"User::\\\"bob\\\"\""),
		     "ERR v: expected entity of type User, got String");
	CHECK_EQ_STR(show(&t_color, "{\"type\": \"Color\", \"id\": \"red\"}"), "Color::\"red\"");
	CHECK_EQ_STR(show(&t_color, "{\"type\": \"Color\", \"id\": \"blue\"}"),
		     "ERR v: entity Color::\"blue\" is of an enumerated entity type, but \"blue\" "
		     "is not declared as a valid eid");
	/* implicit and explicit extension forms */
	CHECK_EQ_STR(show(&t_ip, "\"192.168.0.1/24\""), "ip(\"192.168.0.1/24\")");
	CHECK_EQ_STR(show(&t_ip, "{\"fn\": \"ip\", \"arg\": \"::1\"}"), "ip(\"::1/128\")");
	CHECK_EQ_STR(show(&t_ip, "{\"__extn\": {\"fn\": \"ip\", \"arg\": \"::1\"}}"),
		     "ip(\"::1/128\")");
	CHECK_EQ_STR(show(&t_decimal, "\"0.6\""), "decimal(\"0.6000\")");
	CHECK_EQ_STR(show(&t_datetime, "\"2024-01-01\""),
		     "datetime(\"2024-01-01T00:00:00.000Z\")");
	CHECK_EQ_STR(show(&t_decimal, "{\"__extn\": {\"fn\": \"ip\", \"arg\": \"::1\"}}"),
		     "ERR v: expected decimal, got ipaddr");
	CHECK_EQ_STR(show(&t_ip, "5"), "ERR v: expected ipaddr, got Long");
	CHECK(strncmp(show(&t_ip, "\"1.2.3\""), "ERR v: invalid ipaddr: ip(\"1.2.3\"): ", 36) == 0);
	/* the bad text is quoted as a Cedar literal */
	CHECK(strncmp(show(&t_ip, "\"1.2\\\"3\\n\""), "ERR v: invalid ipaddr: ip(\"1.2\\\"3\\n\"): ",
		      39) == 0);
	/* scalars */
	CHECK_EQ_STR(show(&t_long, "\"5\""), "ERR v: expected Long, got String");
	CHECK_EQ_STR(show(&t_bool, "{\"__entity\": {\"type\": \"A\", \"id\": \"\"}}"),
		     "ERR v: expected Bool, got entity of type A");
	CHECK_EQ_STR(show(&t_string, "[]"), "ERR v: expected String, got Set");
	/* sets and records, with the JSON path of the problem */
	CHECK_EQ_STR(show(&t_set_user, "[{\"type\": \"User\", \"id\": \"a\"}, "
				      "{\"__entity\": {\"type\": \"User\", \"id\": \"b\"}}]"),
		     "[User::\"a\", User::\"b\"]");
	CHECK_EQ_STR(show(&t_set_user, "[]"), "[]");
	CHECK_EQ_STR(show(&t_set_user, "[{\"type\": \"User\", \"id\": \"a\"}, 3]"),
		     "ERR v[1]: expected entity of type User, got Long");
	CHECK_EQ_STR(show(&t_set_user, "{\"type\": \"User\", \"id\": \"a\"}"),
		     "ERR v: expected Set<User>, got Record");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"street\": \"Main\", \"zip\": 12345}, "
				    "\"ip\": \"10.1.2.3\", \"friends\": [{\"type\": \"User\", "
				    "\"id\": \"x\"}]}"),
		     "{\"addr\": {\"street\": \"Main\", \"zip\": 12345}, \"friends\": [User::\"x\"], "
		     "\"ip\": ip(\"10.1.2.3/32\")}");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"street\": \"Main\"}}"),
		     "{\"addr\": {\"street\": \"Main\"}}");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"street\": \"Main\", \"zip\": \"x\"}}"),
		     "ERR v.\"addr\".\"zip\": expected Long, got String");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"zip\": 1}}"),
		     "ERR v.\"addr\".\"street\": required attribute is missing");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"street\": \"s\", \"zipp\": 1}}"),
		     "ERR v.\"addr\".\"zipp\": not declared in the schema");
	CHECK_EQ_STR(show(&t_person, "{}"), "ERR v.\"addr\": required attribute is missing");
	CHECK_EQ_STR(show(&t_person, "{\"addr\": {\"street\": \"s\"}, \"friends\": "
				    "[{\"type\": \"User\", \"id\": \"x\"}, {\"type\": \"Usr\", "
				    "\"id\": \"y\"}]}"),
		     "ERR v.\"friends\"[1]: expected entity of type User, got entity of type Usr");
	/* a record-typed object is a map: escape keys are just undeclared names */
	CHECK_EQ_STR(show(&t_addr, "{\"__entity\": {\"type\": \"A\", \"id\": \"b\"}}"),
		     "ERR v.\"__entity\": not declared in the schema");
	CHECK_EQ_STR(show(&t_addr, "5"), "ERR v: expected { street: String, zip?: Long }, got Long");
}

static void test_depth_limit(void)
{
	char *deep = malloc(4096), *p;
	struct dw_arena a;
	struct dw_val v;
	char err[256];

	dw_arena_init(&a);
	/* 128 nested arrays parse, 129 do not */
	p = deep;
	for (int i = 0; i < 128; i++)
		*p++ = '[';
	for (int i = 0; i < 128; i++)
		*p++ = ']';
	*p = '\0';
	CHECK_EQ_INT(val_of(&a, NULL, deep, &v, err, sizeof err), 0);
	p = deep;
	for (int i = 0; i < 129; i++)
		*p++ = '[';
	for (int i = 0; i < 129; i++)
		*p++ = ']';
	*p = '\0';
	CHECK_EQ_INT(val_of(&a, NULL, deep, &v, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "value nested deeper than 128 levels") != NULL);
	/* objects too, and the limit holds inside an entities file */
	p = deep;
	p += sprintf(p, "[{\"uid\": {\"type\": \"A\", \"id\": \"a\"}, \"parents\": [], \"attrs\": {\"x\": ");
	for (int i = 0; i < 200; i++)
		p += sprintf(p, "{\"k\": ");
	p += sprintf(p, "1");
	for (int i = 0; i < 200; i++)
		*p++ = '}';
	sprintf(p, "}}]");
	CHECK(strstr(load_msg(NULL, deep), "value nested deeper than 128 levels") != NULL);
	dw_arena_fini(&a);
	free(deep);
}

/* Out of memory is -ENOMEM with a message, never a crash or a leak (ASan). */
static void test_out_of_memory(void)
{
	struct dw_arena a;
	struct dw_val v;
	char err[256];
	char *big = malloc(40000);

	memset(big, 'x', 39998);
	big[0] = big[39997] = '"';
	big[39998] = '\0';
	dw_arena_init(&a);
	a.limit = 1;
	CHECK_EQ_INT(val_of(&a, NULL, "\"abc\"", &v, err, sizeof err), -ENOMEM);
	CHECK_EQ_STR(err, "out of memory");
	CHECK_EQ_INT(val_of(&a, &t_set_user, "[{\"type\": \"User\", \"id\": \"a\"}]", &v, err,
			    sizeof err), -ENOMEM);
	dw_arena_fini(&a);
	dw_arena_init(&a);
	a.limit = 20000;   /* the first chunk fits, a 40 kB string does not */
	CHECK_EQ_INT(val_of(&a, NULL, "{\"a\": [1, 2]}", &v, err, sizeof err), 0);
	CHECK_EQ_INT(val_of(&a, NULL, big, &v, err, sizeof err), -ENOMEM);
	dw_arena_fini(&a);
	free(big);
}

/* --- output --------------------------------------------------------------------- */

static void test_value_to_json(void)
{
	static const char *const texts[] = {
		"{\"a\": [1, \"x\", true, {\"__entity\": {\"type\": \"A::B\", \"id\": \"i\\u0000d\"}}], "
		"\"b\": {\"__extn\": {\"fn\": \"ip\", \"arg\": \"10.0.0.0/8\"}}, "
		"\"c\": {\"__extn\": {\"fn\": \"decimal\", \"arg\": \"-1.25\"}}, "
		"\"d\": {\"__extn\": {\"fn\": \"datetime\", \"arg\": \"2024-02-29T12:00:00Z\"}}, "
		"\"e\": {\"__extn\": {\"fn\": \"duration\", \"arg\": \"-1d2h3m4s5ms\"}}, "
		"\"f\": {}, \"g\": []}",
	};
	struct dw_arena a;
	char err[256];

	dw_arena_init(&a);
	for (size_t i = 0; i < DW_N_ELEMENTS(texts); i++) {
		struct dw_val v, w;
		json_t *j;
		char *dump;

		CHECK_EQ_INT(val_of(&a, NULL, texts[i], &v, err, sizeof err), 0);
		j = dw_value_to_json(v);
		CHECK(j != NULL);
		if (j == NULL)
			continue;
		dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		CHECK(dump != NULL && strstr(dump, "\"__entity\":{\"id\":\"i\\u0000d\",\"type\":\"A::B\"}"));
		CHECK(dump != NULL && strstr(dump, "{\"__extn\":{\"arg\":\"10.0.0.0/8\",\"fn\":\"ip\"}}"));
		CHECK(dump != NULL && strstr(dump, "{\"__extn\":{\"arg\":\"-1.2500\",\"fn\":\"decimal\"}}"));
		/* reading the output back gives the same value */
		CHECK_EQ_INT(dw_json_value(&a, NULL, NULL, j, "again", &w, err, sizeof err), 0);
		CHECK(dw_val_eq(v, w));
		free(dump);
		json_decref(j);
	}
	dw_arena_fini(&a);
}

/* --- the store without a schema ---------------------------------------------------- */

static const char plain_entities[] =
	"[\n"
	" {\"uid\": {\"type\": \"User\", \"id\": \"alice\"},\n"
	"  \"attrs\": {\"age\": 30, \"boss\": {\"__entity\": {\"type\": \"User\", \"id\": \"bob\"}},\n"
	"            \"home\": {\"type\": \"City\", \"id\": \"x\"}},\n"
	"  \"parents\": [{\"type\": \"Group\", \"id\": \"devs\"}, {\"__entity\": {\"type\": \"Group\", \"id\": \"all\"}},\n"
	"              {\"type\": \"Group\", \"id\": \"devs\"}],\n"
	"  \"tags\": {\"team\": \"core\"}},\n"
	" {\"uid\": {\"__entity\": {\"type\": \"Group\", \"id\": \"devs\"}}, \"attrs\": {},\n"
	"  \"parents\": [{\"type\": \"Group\", \"id\": \"eng\"}]},\n"
	" {\"uid\": {\"type\": \"Group\", \"id\": \"eng\"}, \"attrs\": {}, \"parents\": []},\n"
	" {\"uid\": {\"type\": \"Action\", \"id\": \"read\"}, \"attrs\": {},\n"
	"  \"parents\": [{\"type\": \"Action\", \"id\": \"all\"}]}\n"
	"]\n";

static void test_store_plain(void)
{
	struct dw_store *st = dw_store_new();
	struct dw_diags d;
	const struct dw_entity *e;
	struct dw_uid u;
	const struct dw_val *v;
	struct dw_buf b = { 0 };

	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, plain_entities, &d), 0);
	CHECK_EQ_INT(d.n, 0);
	CHECK_EQ_INT(dw_store_count(st), 4);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), 0);
	CHECK_EQ_INT(dw_store_count(st), 4);

	u = uid_of("User", "alice");
	e = dw_store_get(st, &u);
	CHECK(e != NULL);
	if (e != NULL) {
		CHECK(dw_store_at(st, 0) == e);
		CHECK_EQ_INT(e->attrs->n, 3);
		CHECK_EQ_INT(e->n_parents, 2);        /* the repeated parent counted once */
		CHECK_EQ_INT(e->n_ancestors, 3);      /* devs, all, eng */
		v = dw_rec_get(e->attrs, DW_STR_LIT("age"));
		CHECK(v != NULL && v->kind == DW_V_LONG && v->i == 30);
		v = dw_rec_get(e->attrs, DW_STR_LIT("boss"));
		CHECK(v != NULL && v->kind == DW_V_ENTITY && dw_str_eq_c(v->uid->id, "bob"));
		v = dw_rec_get(e->attrs, DW_STR_LIT("home"));   /* a record, not an entity */
		CHECK(v != NULL && v->kind == DW_V_RECORD);
		v = dw_rec_get(e->tags, DW_STR_LIT("team"));
		CHECK(v != NULL && v->kind == DW_V_STRING && dw_str_eq_c(v->s, "core"));
		dw_val_format(&b, (struct dw_val){ .kind = DW_V_RECORD, .rec = e->attrs });
		CHECK_EQ_STR(b.p, "{\"age\": 30, \"boss\": User::\"bob\", \"home\": {\"id\": \"x\", "
				  "\"type\": \"City\"}}");
		/* ancestors sorted by (hash, bytes) */
		for (uint32_t i = 1; i < e->n_ancestors; i++)
			CHECK(e->ancestors[i - 1]->hash <= e->ancestors[i]->hash);
	}
	u = uid_of("Group", "eng");
	e = dw_store_get(st, &u);
	CHECK(e != NULL && e->n_ancestors == 0 && e->tags->n == 0);
	u = uid_of("Group", "nobody");
	CHECK(dw_store_get(st, &u) == NULL);

	CHECK(in(st, "User", "alice", "User", "alice"));
	CHECK(in(st, "User", "alice", "Group", "devs"));
	CHECK(in(st, "User", "alice", "Group", "eng"));
	CHECK(in(st, "User", "alice", "Group", "all"));   /* a parent with no entity */
	CHECK(!in(st, "User", "alice", "User", "bob"));
	CHECK(!in(st, "Group", "devs", "User", "alice"));
	CHECK(in(st, "Group", "devs", "Group", "eng"));
	CHECK(!in(st, "Group", "all", "Group", "eng"));   /* no entity: only itself */
	CHECK(in(st, "Group", "all", "Group", "all"));
	CHECK(in(st, "Action", "read", "Action", "all"));
	/* type and id are both compared */
	CHECK(!in(st, "User", "alice", "Grou", "pdevs"));
	CHECK(!in(st, "User", "alice", "Group", "Devs"));

	/* the store is read-only now */
	CHECK_EQ_INT(load(st, NULL, "[]", &d), -EINVAL);
	CHECK_EQ_STR(msg0(&d), "entities cannot be added after dw_store_finish");
	dw_buf_free(&b);
	dw_diags_fini(&d);
	dw_store_free(st);
	dw_store_free(NULL);
}

static void test_store_several_files(void)
{
	struct dw_store *st = dw_store_new();
	struct dw_diags d;

	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": [{\"type\": \"B\", \"id\": \"1\"}]}]", &d), 0);
	CHECK_EQ_INT(load(st, NULL, "[{\"uid\": {\"type\": \"B\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": [{\"type\": \"C\", \"id\": \"1\"}]}]", &d), 0);
	/* a duplicate across files: refused, the store keeps what it had */
	CHECK_EQ_INT(load(st, NULL, "[{\"uid\": {\"type\": \"C\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": []}, {\"uid\": {\"type\": \"A\", \"id\": \"1\"}, "
				    "\"attrs\": {}, \"parents\": []}]", &d), -EINVAL);
	CHECK_EQ_STR(msg0(&d), "duplicate entity entry A::\"1\"");
	CHECK_EQ_STR(d.v[0].file, "e.json");
	CHECK_EQ_INT(dw_store_count(st), 2);
	{
		struct dw_uid c = uid_of("C", "1");
		CHECK(dw_store_get(st, &c) == NULL);
	}
	/* a bad file changes nothing either */
	CHECK_EQ_INT(load(st, NULL, "[{\"uid\": {\"type\": \"D\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": []}, 5]", &d), -EINVAL);
	CHECK_EQ_INT(dw_store_count(st), 2);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), 0);
	CHECK(in(st, "A", "1", "C", "1"));
	CHECK(in(st, "A", "1", "B", "1"));
	CHECK(!in(st, "B", "1", "A", "1"));
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), -EINVAL);
	dw_diags_fini(&d);
	dw_store_free(st);
}

static void test_store_format_errors(void)
{
	const char *m;

	CHECK_EQ_STR(load_msg(NULL, "{}"), "an entities file is a JSON array of entity objects");
	CHECK_EQ_STR(load_msg(NULL, "[3]"),
		     "entities[0]: expected an entity object {\"uid\", \"attrs\", \"parents\"}");
	CHECK_EQ_STR(load_msg(NULL, "[{\"attrs\": {}, \"parents\": []}]"), "entities[0]: missing \"uid\"");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"parents\": []}]"),
		     "entity A::\"1\": missing \"attrs\" (use {} for none)");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}}]"),
		     "entity A::\"1\": missing \"parents\" (use [] for none)");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": [], \"tag\": {}}]"),
		     "entity A::\"1\": unexpected key \"tag\" (an entity has \"uid\", \"attrs\", "
		     "\"parents\" and optionally \"tags\")");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": [], "
				    "\"parents\": []}]"),
		     "entity A::\"1\": \"attrs\" must be an object");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": {}}]"),
		     "entity A::\"1\": \"parents\" must be an array");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": \"A::\\\"1\\\"\", \"attrs\": {}, \"parents\": []}]"),
		     "entities[0]: uid: expected an entity reference {\"type\": .., \"id\": ..}, "
		     "got a string");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A B\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": []}]"),
		     "entities[0]: uid: invalid entity type \"A B\": expected identifiers separated "
		     "by \"::\" (no spaces)");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": [{\"type\": \"B\"}]}]"),
		     "entity A::\"1\": parents[0]: entity reference without \"id\"");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, "
				    "\"attrs\": {\"x\": [1, null]}, \"parents\": []}]"),
		     "entity A::\"1\": attribute \"x\"[1]: null is not a Cedar value");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, "
				    "\"attrs\": {}, \"parents\": [], \"tags\": {\"t\": 0.5}}]"),
		     "entity A::\"1\": tag \"t\": 0.5 is not a Cedar value: numbers must be "
		     "64-bit integers");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
				    "\"parents\": []}, {\"uid\": {\"__entity\": {\"type\": \"A\", "
				    "\"id\": \"1\"}}, \"attrs\": {}, \"parents\": []}]"),
		     "duplicate entity entry A::\"1\"");
	/* without a schema an action's parents must still be actions (as in Cedar) */
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"NS::Action\", \"id\": \"r\"}, "
				    "\"attrs\": {}, \"parents\": [{\"type\": \"Group\", \"id\": \"g\"}]}]"),
		     "entity NS::Action::\"r\": parent Group::\"g\": the parents of an action must "
		     "be actions");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\": {\"type\": \"NSAction\", \"id\": \"r\"}, "
				    "\"attrs\": {}, \"parents\": [{\"type\": \"Group\", \"id\": \"g\"}]}]"),
		     "");
	m = load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": {}, "
			   "\"parents\": [], \"attrs\": {}}]");
	CHECK(strncmp(m, "invalid JSON (line 1, column ", 29) == 0 && strstr(m, "duplicate object key"));
	CHECK(strstr(load_msg(NULL, "[{\"uid\": {\"type\": \"A\", \"id\": \"1\"}, \"attrs\": "
				    "{\"n\": 9223372036854775808}, \"parents\": []}]"),
		     "too big integer") != NULL);
}

static void test_store_json_syntax_position(void)
{
	struct dw_store *st = dw_store_new();
	struct dw_diags d;
	const char *src = "[\n  {\"uid\": {\"type\": \"A\", \"id\": \"1\"},\n   \"attrs\": {},, \"parents\": []}\n]";

	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, src, &d), -EINVAL);
	CHECK_EQ_INT(d.n, 1);
	if (d.n == 1) {
		CHECK_EQ_INT(d.v[0].line, 3);
		CHECK_EQ_INT(d.v[0].col, 16);
		CHECK(strncmp(d.v[0].msg, "invalid JSON (line 3, column 16): ", 34) == 0);
		CHECK_EQ_STR(d.v[0].line_text, "   \"attrs\": {},, \"parents\": []}");
	}
	dw_diags_fini(&d);
	dw_store_free(st);
}

/* --- hierarchy: chains, DAGs, cycles ------------------------------------------------ */

static char *chain_json(size_t n, bool close_cycle)
{
	size_t cap = n * 96 + 64, k = 0;
	char *s = malloc(cap);

	if (s == NULL)
		return NULL;
	k += (size_t)sprintf(s + k, "[");
	for (size_t i = 0; i < n; i++) {
		k += (size_t)sprintf(s + k, "%s{\"uid\":{\"type\":\"N\",\"id\":\"%zu\"},\"attrs\":{},"
					    "\"parents\":[", i ? "," : "", i);
		if (i + 1 < n)
			k += (size_t)sprintf(s + k, "{\"type\":\"N\",\"id\":\"%zu\"}", i + 1);
		else if (close_cycle)
			k += (size_t)sprintf(s + k, "{\"type\":\"N\",\"id\":\"0\"}");
		k += (size_t)sprintf(s + k, "]}");
	}
	sprintf(s + k, "]");
	return s;
}

static void test_deep_chain(void)
{
	/* 5,000 levels: the closure is iterative, no recursion depth */
	enum { N = 5000 };
	char *json = chain_json(N, false);
	struct dw_store *st = dw_store_new();
	struct dw_diags d;
	char a[16], b[16];
	bool ok = true;

	dw_diags_init(&d);
	CHECK(json != NULL);
	CHECK_EQ_INT(load(st, NULL, json, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), 0);
	for (size_t i = 0; i < N; i += 997) {
		for (size_t j = 0; j < N; j += 1009) {
			snprintf(a, sizeof a, "%zu", i);
			snprintf(b, sizeof b, "%zu", j);
			ok &= in(st, "N", a, "N", b) == (j >= i);
		}
	}
	CHECK(ok);
	CHECK(in(st, "N", "0", "N", "4999"));
	CHECK(!in(st, "N", "4999", "N", "0"));
	{
		struct dw_uid u = uid_of("N", "0");
		const struct dw_entity *e = dw_store_get(st, &u);
		CHECK(e != NULL && e->n_ancestors == N - 1);
	}
	dw_diags_fini(&d);
	dw_store_free(st);
	free(json);

	/* 10,000 levels would need 50M ancestor links: refused, store unchanged */
	json = chain_json(10000, false);
	st = dw_store_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, json, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), -EINVAL);
	CHECK(d.n >= 1 && strstr(d.v[d.n - 1].msg, "entity hierarchy too large") != NULL);
	dw_diags_fini(&d);
	dw_store_free(st);
	free(json);
}

static void test_dag(void)
{
	/*      top
	 *     /    \
	 *   left  right      (right's other parent, "far", has no entity)
	 *     \    /
	 *      leaf
	 */
	static const char json[] =
		"[{\"uid\":{\"type\":\"G\",\"id\":\"leaf\"},\"attrs\":{},\"parents\":["
		"{\"type\":\"G\",\"id\":\"left\"},{\"type\":\"G\",\"id\":\"right\"}]},"
		"{\"uid\":{\"type\":\"G\",\"id\":\"left\"},\"attrs\":{},\"parents\":["
		"{\"type\":\"G\",\"id\":\"top\"}]},"
		"{\"uid\":{\"type\":\"G\",\"id\":\"right\"},\"attrs\":{},\"parents\":["
		"{\"type\":\"G\",\"id\":\"top\"},{\"type\":\"H\",\"id\":\"far\"}]},"
		"{\"uid\":{\"type\":\"G\",\"id\":\"top\"},\"attrs\":{},\"parents\":[]}]";
	struct dw_store *st = dw_store_new();
	struct dw_diags d;
	struct dw_uid u = uid_of("G", "leaf");
	const struct dw_entity *e;

	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, json, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), 0);
	e = dw_store_get(st, &u);
	CHECK(e != NULL && e->n_ancestors == 4);   /* left, right, top once, far */
	CHECK(in(st, "G", "leaf", "G", "top"));
	CHECK(in(st, "G", "leaf", "H", "far"));
	CHECK(in(st, "G", "right", "H", "far"));
	CHECK(!in(st, "G", "left", "H", "far"));
	CHECK(!in(st, "G", "top", "G", "leaf"));
	CHECK(!in(st, "G", "left", "G", "right"));
	/* parents point at the stored entity's own uid */
	if (e != NULL) {
		for (uint32_t i = 0; i < e->n_parents; i++)
			CHECK(dw_store_get(st, e->parents[i]) != NULL &&
			      &dw_store_get(st, e->parents[i])->uid == e->parents[i]);
	}
	dw_diags_fini(&d);
	dw_store_free(st);
}

/* A wide store: many entities under a few groups, lookups stay exact. */
static void test_wide_store(void)
{
	enum { N = 100000 };
	size_t cap = (size_t)N * 120 + 64, k = 0;
	char *s = malloc(cap);
	struct dw_store *st = dw_store_new();
	struct dw_diags d;
	bool ok = true;
	char id[16], g[16];

	dw_diags_init(&d);
	k += (size_t)sprintf(s + k, "[");
	for (size_t i = 0; i < N; i++)
		k += (size_t)sprintf(s + k, "%s{\"uid\":{\"type\":\"U\",\"id\":\"%zu\"},\"attrs\":"
					    "{\"n\":%zu},\"parents\":[{\"type\":\"Grp\",\"id\":\"%zu\"}]}",
				     i ? "," : "", i, i, i % 7);
	sprintf(s + k, "]");
	CHECK_EQ_INT(load(st, NULL, s, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), 0);
	CHECK_EQ_INT(dw_store_count(st), N);
	for (size_t i = 0; i < N; i += 101) {
		struct dw_uid u;
		const struct dw_entity *e;

		snprintf(id, sizeof id, "%zu", i);
		snprintf(g, sizeof g, "%zu", i % 7);
		u = uid_of("U", id);
		e = dw_store_get(st, &u);
		ok &= e != NULL && e->attrs->n == 1 && e->attrs->f[0].val.i == (int64_t)i;
		ok &= in(st, "U", id, "Grp", g);
		snprintf(g, sizeof g, "%zu", (i + 1) % 7);
		ok &= !in(st, "U", id, "Grp", g);
		ok &= dw_store_at(st, i) == e;
	}
	CHECK(ok);
	dw_diags_fini(&d);
	dw_store_free(st);
	free(s);
}

static void test_cycles(void)
{
	char *json;
	const char *m;
	struct dw_store *st;
	struct dw_diags d;

	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\":{\"type\":\"A\",\"id\":\"1\"},\"attrs\":{},\"parents\":"
				    "[{\"type\":\"A\",\"id\":\"1\"}]}]"),
		     "entity hierarchy has a cycle containing A::\"1\" (an entity cannot be its "
		     "own ancestor)");
	CHECK_EQ_STR(load_msg(NULL, "[{\"uid\":{\"type\":\"A\",\"id\":\"1\"},\"attrs\":{},\"parents\":"
				    "[{\"type\":\"A\",\"id\":\"2\"}]},"
				    "{\"uid\":{\"type\":\"A\",\"id\":\"2\"},\"attrs\":{},\"parents\":"
				    "[{\"type\":\"A\",\"id\":\"1\"}]}]"),
		     "entity hierarchy has a cycle containing A::\"1\" (an entity cannot be its "
		     "own ancestor)");
	/* a tail leading into a cycle: the entity named is on the cycle, not the tail */
	m = load_msg(NULL, "[{\"uid\":{\"type\":\"T\",\"id\":\"tail\"},\"attrs\":{},\"parents\":"
			   "[{\"type\":\"C\",\"id\":\"x\"}]},"
			   "{\"uid\":{\"type\":\"C\",\"id\":\"x\"},\"attrs\":{},\"parents\":"
			   "[{\"type\":\"C\",\"id\":\"y\"}, {\"type\":\"Ok\",\"id\":\"1\"}]},"
			   "{\"uid\":{\"type\":\"C\",\"id\":\"y\"},\"attrs\":{},\"parents\":"
			   "[{\"type\":\"C\",\"id\":\"x\"}]},"
			   "{\"uid\":{\"type\":\"Ok\",\"id\":\"1\"},\"attrs\":{},\"parents\":[]}]");
	CHECK(strstr(m, "cycle containing C::\"") != NULL);
	/* a 10,000-entity cycle is found without recursion; the store stays unfinished */
	json = chain_json(10000, true);
	st = dw_store_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, json, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, NULL, &d), -EINVAL);
	CHECK(strstr(msg0(&d), "cycle containing N::\"") != NULL);
	CHECK_EQ_INT(dw_store_count(st), 10000);
	dw_diags_fini(&d);
	dw_store_free(st);
	free(json);
}

/* --- the store with a schema --------------------------------------------------------- */

static const char *const testdata_dirs[] = {
	"corpus-gettag-missing", "corpus-overflow-add", "corpus-overflow-mul", "decimal-1",
	"decimal-2", "example-2c", "example-4d", "example-5b", "ip-2", "ip-3", "multi-2",
	"multi-4", "multi-5",
};

/* Every request of test.json parses (schema-based context) and passes request
 * validation: the suite's requests are all valid ones. */
static void check_requests(const struct dw_schema *s, const struct dw_store *st, const char *dir)
{
	char path[512], err[512];
	json_error_t je;
	json_t *t, *reqs, *rq;
	size_t i;
	struct dw_arena a;

	snprintf(path, sizeof path, TESTDATA "/%s/test.json", dir);
	t = json_load_file(path, JSON_ALLOW_NUL, &je);
	CHECK(t != NULL);
	if (t == NULL)
		return;
	dw_arena_init(&a);
	reqs = json_object_get(t, "requests");
	json_array_foreach(reqs, i, rq) {
		const struct dw_uid *p = NULL, *ac = NULL, *r = NULL;
		const struct dw_rec *ctx = NULL;
		const struct dw_action *act;
		int rc;

		rc = dw_json_uid(&a, json_object_get(rq, "principal"), "principal", &p, err, sizeof err);
		if (rc == 0)
			rc = dw_json_uid(&a, json_object_get(rq, "action"), "action", &ac, err, sizeof err);
		if (rc == 0)
			rc = dw_json_uid(&a, json_object_get(rq, "resource"), "resource", &r, err,
					 sizeof err);
		CHECK_EQ_INT(rc, 0);
		if (rc != 0)
			continue;
		act = dw_schema_find_action(s, ac->type, ac->id);
		CHECK(act != NULL);
		rc = dw_json_context(&a, s, act, json_object_get(rq, "context"), &ctx, err, sizeof err);
		if (rc != 0)
			fprintf(stderr, "%s request %zu: %s\n", dir, i, err);
		CHECK_EQ_INT(rc, 0);
		if (rc != 0)
			continue;
		rc = dw_request_check(s, p, ac, r, ctx, err, sizeof err);
		if (rc != 0)
			fprintf(stderr, "%s request %zu: %s\n", dir, i, err);
		CHECK_EQ_INT(rc, 0);
		/* the action entity is in the store, from the schema */
		CHECK(dw_store_get(st, ac) != NULL);
	}
	dw_arena_fini(&a);
	json_decref(t);
}

static void test_testdata(void)
{
	for (size_t k = 0; k < DW_N_ELEMENTS(testdata_dirs); k++) {
		char path[512];
		char *src;
		size_t n;
		struct dw_diags d;
		struct dw_schema *s = dw_schema_new();
		struct dw_store *st = dw_store_new();
		int r;

		dw_diags_init(&d);
		snprintf(path, sizeof path, TESTDATA "/%s/schema.cedarschema", testdata_dirs[k]);
		src = test_read_file(path, &n);
		CHECK(src != NULL);
		r = dw_schema_add_cedar(s, path, src ? src : "", n, &d);
		if (r == 0)
			r = dw_schema_finish(s, &d);
		CHECK_EQ_INT(r, 0);
		free(src);
		snprintf(path, sizeof path, TESTDATA "/%s/entities.json", testdata_dirs[k]);
		src = test_read_file(path, &n);
		CHECK(src != NULL);
		if (r == 0)
			r = dw_store_add_json(st, s, path, src ? src : "", n, &d);
		if (r == 0)
			r = dw_store_finish(st, s, &d);
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "%s: %s\n", testdata_dirs[k], d.v[i].msg);
		CHECK_EQ_INT(r, 0);
		free(src);
		if (r == 0) {
			/* every schema action is an entity with its groups as parents */
			for (uint32_t i = 0; i < s->n_actions; i++) {
				struct dw_uid u;
				const struct dw_entity *e;
				dw_uid_init(&u, s->actions[i]->type, s->actions[i]->id);
				e = dw_store_get(st, &u);
				CHECK(e != NULL && e->n_parents == s->actions[i]->n_parents &&
				      e->attrs->n == 0);
			}
			check_requests(s, st, testdata_dirs[k]);
		}
		dw_diags_fini(&d);
		dw_store_free(st);
		dw_schema_free(s);
	}
}

/* decimal-1's data uses the implicit entity form; sandbox_b's hierarchy works. */
static void test_testdata_values(void)
{
	char path[512];
	char *src, *ssrc;
	size_t n, sn;
	struct dw_diags d;
	struct dw_schema *s = dw_schema_new();
	struct dw_store *st = dw_store_new();
	struct dw_uid u = uid_of("Photo", "prototype_v0.jpg");
	const struct dw_entity *e;
	const struct dw_val *v;

	dw_diags_init(&d);
	snprintf(path, sizeof path, TESTDATA "/decimal-1/schema.cedarschema");
	ssrc = test_read_file(path, &sn);
	snprintf(path, sizeof path, TESTDATA "/decimal-1/entities.json");
	src = test_read_file(path, &n);
	CHECK(ssrc != NULL && src != NULL);
	CHECK_EQ_INT(dw_schema_add_cedar(s, "schema", ssrc ? ssrc : "", sn, &d), 0);
	CHECK_EQ_INT(dw_schema_finish(s, &d), 0);
	CHECK_EQ_INT(dw_store_add_json(st, s, path, src ? src : "", n, &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, s, &d), 0);
	e = dw_store_get(st, &u);
	CHECK(e != NULL);
	if (e != NULL) {
		v = dw_rec_get(e->attrs, DW_STR_LIT("account"));
		CHECK(v != NULL && v->kind == DW_V_ENTITY && dw_str_eq_c(v->uid->type, "Account"));
		v = dw_rec_get(e->attrs, DW_STR_LIT("admins"));
		CHECK(v != NULL && v->kind == DW_V_SET && v->set->n == 0);
	}
	CHECK(in(st, "User", "alice", "UserGroup", "AVTeam"));
	CHECK(in(st, "Action", "view", "Action", "view"));
	/* without the schema the same file reads the implicit form as a record */
	{
		struct dw_store *st2 = dw_store_new();
		CHECK_EQ_INT(dw_store_add_json(st2, NULL, path, src ? src : "", n, &d), 0);
		e = dw_store_get(st2, &u);
		v = e ? dw_rec_get(e->attrs, DW_STR_LIT("account")) : NULL;
		CHECK(v != NULL && v->kind == DW_V_RECORD);
		dw_store_free(st2);
	}
	free(src);
	free(ssrc);
	dw_diags_fini(&d);
	dw_store_free(st);
	dw_schema_free(s);
}

static const char conformance_schema[] =
	"entity Org;\n"
	"entity Group in [Org];\n"
	"entity User in [Group] = {\n"
	"  age: Long,\n"
	"  name?: String,\n"
	"  addr?: { street: String, zip?: Long },\n"
	"  friends?: Set<User>,\n"
	"  ip?: ipaddr,\n"
	"  when?: datetime,\n"
	"  color?: Color,\n"
	"};\n"
	"entity Color enum [\"red\", \"green\"];\n"
	"entity Doc tags String;\n"
	"entity Bag tags Set<Long>;\n"
	"entity Team in [Team, Org];\n"
	"entity Ping in [Pong]; entity Pong in [Ping];\n"
	"action read, write in [rw] appliesTo { principal: [User], resource: [Doc],\n"
	"  context: { authenticated: Bool, level?: Long, src?: ipaddr } };\n"
	"action rw in [all];\n"
	"action all;\n"
	"namespace Box { entity Agent; action run appliesTo { principal: Agent, resource: Agent }; }\n";

#define ENT(uid, attrs, parents) \
	"[{\"uid\": " uid ", \"attrs\": " attrs ", \"parents\": " parents "}]"
#define USER "{\"type\": \"User\", \"id\": \"alice\"}"

static void test_schema_conformance(void)
{
	struct dw_schema *s = schema_text(conformance_schema);

	if (s == NULL)
		return;
	/* accepted: implicit forms, optional attributes absent, transitive parent type */
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 3, \"ip\": \"10.0.0.1\", \"when\": "
				     "\"2024-01-01\", \"friends\": [{\"type\": \"User\", \"id\": \"b\"}],"
				     " \"addr\": {\"street\": \"s\"}, \"color\": {\"type\": \"Color\", "
				     "\"id\": \"red\"}}",
				     "[{\"type\": \"Group\", \"id\": \"g\"}, {\"type\": \"Org\", \"id\": "
				     "\"o\"}]")),
		     "");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": \"3\"}", "[]")),
		     "entity User::\"alice\": attribute \"age\": expected Long, got String");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{}", "[]")),
		     "entity User::\"alice\": attribute \"age\": required attribute is missing");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1, \"agee\": 2}", "[]")),
		     "entity User::\"alice\": attribute \"agee\": not declared in the schema");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1, \"addr\": {\"street\": \"s\", \"zip\": "
				     "\"z\"}}", "[]")),
		     "entity User::\"alice\": attribute \"addr\".\"zip\": expected Long, got String");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1, \"addr\": {}}", "[]")),
		     "entity User::\"alice\": attribute \"addr\".\"street\": required attribute is "
		     "missing");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1, \"friends\": [{\"type\": \"Group\", "
				     "\"id\": \"g\"}]}", "[]")),
		     "entity User::\"alice\": attribute \"friends\"[0]: expected entity of type "
		     "User, got entity of type Group");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1, \"color\": {\"type\": \"Color\", \"id\": "
				     "\"blue\"}}", "[]")),
		     "entity User::\"alice\": attribute \"color\": entity Color::\"blue\" is of an "
		     "enumerated entity type, but \"blue\" is not declared as a valid eid");
	CHECK(strncmp(load_msg(s, ENT(USER, "{\"age\": 1, \"ip\": \"10.0.0.300\"}", "[]")),
		      "entity User::\"alice\": attribute \"ip\": invalid ipaddr: ip(\"10.0.0.300\"): ",
		      71) == 0);
	/* entity types and parents */
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Usr\", \"id\": \"x\"}", "{}", "[]")),
		     "entity Usr::\"x\": entity type Usr is not declared in the schema");
	CHECK_EQ_STR(load_msg(s, ENT(USER, "{\"age\": 1}", "[{\"type\": \"User\", \"id\": \"b\"}]")),
		     "entity User::\"alice\": parent User::\"b\": User is not allowed to have an "
		     "ancestor of type User according to the schema");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Org\", \"id\": \"o\"}", "{}",
				     "[{\"type\": \"Group\", \"id\": \"g\"}]")),
		     "entity Org::\"o\": parent Group::\"g\": Org is not allowed to have an ancestor "
		     "of type Group according to the schema");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Group\", \"id\": \"g\"}", "{}",
				     "[{\"type\": \"Nope\", \"id\": \"n\"}]")),
		     "entity Group::\"g\": parent Nope::\"n\": Group is not allowed to have an "
		     "ancestor of type Nope according to the schema");
	/* types that are members of themselves, directly or in a loop */
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Team\", \"id\": \"a\"}, \"attrs\": {}, "
				 "\"parents\": [{\"type\": \"Team\", \"id\": \"b\"}]}, "
				 "{\"uid\": {\"type\": \"Team\", \"id\": \"b\"}, \"attrs\": {}, "
				 "\"parents\": [{\"type\": \"Org\", \"id\": \"o\"}]}]"), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Ping\", \"id\": \"a\"}", "{}",
				     "[{\"type\": \"Ping\", \"id\": \"b\"}, "
				     "{\"type\": \"Pong\", \"id\": \"c\"}]")), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Ping\", \"id\": \"a\"}", "{}",
				     "[{\"type\": \"Team\", \"id\": \"b\"}]")),
		     "entity Ping::\"a\": parent Team::\"b\": Ping is not allowed to have an ancestor "
		     "of type Team according to the schema");
	/* enumerated entities */
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Color\", \"id\": \"red\"}", "{}", "[]")), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Color\", \"id\": \"pink\"}", "{}", "[]")),
		     "entity Color::\"pink\": this entity is of an enumerated entity type, but its "
		     "id is not declared as a valid eid");
	/* tags */
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Doc\", \"id\": \"d\"}, \"attrs\": {}, "
				 "\"parents\": [], \"tags\": {\"a\": \"x\", \"b\": \"y\"}}]"), "");
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Doc\", \"id\": \"d\"}, \"attrs\": {}, "
				 "\"parents\": [], \"tags\": {\"a\": 1}}]"),
		     "entity Doc::\"d\": tag \"a\": expected String, got Long");
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Bag\", \"id\": \"b\"}, \"attrs\": {}, "
				 "\"parents\": [], \"tags\": {\"a\": [1, 2], \"b\": [1, \"x\"]}}]"),
		     "entity Bag::\"b\": tag \"b\"[1]: expected Long, got String");
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Org\", \"id\": \"o\"}, \"attrs\": {}, "
				 "\"parents\": [], \"tags\": {\"a\": \"x\"}}]"),
		     "entity Org::\"o\": tag \"a\": entity type Org has no tags according to the "
		     "schema");
	CHECK_EQ_STR(load_msg(s, "[{\"uid\": {\"type\": \"Org\", \"id\": \"o\"}, \"attrs\": {}, "
				 "\"parents\": [], \"tags\": {}}]"), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Org\", \"id\": \"o\"}", "{\"a\": 1}", "[]")),
		     "entity Org::\"o\": attribute \"a\": not declared in the schema");
	dw_schema_free(s);
}

static void test_schema_actions(void)
{
	struct dw_schema *s = schema_text(conformance_schema);
	struct dw_store *st;
	struct dw_diags d;
	const struct dw_entity *e;
	struct dw_uid u;

	if (s == NULL)
		return;
	/* action entities in the data must agree with the schema's hierarchy */
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"read\"}", "{}",
				     "[{\"type\": \"Action\", \"id\": \"rw\"}]")), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"read\"}", "{}",
				     "[{\"type\": \"Action\", \"id\": \"rw\"}, {\"type\": \"Action\", "
				     "\"id\": \"all\"}]")), "");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"read\"}", "{}", "[]")),
		     "entity Action::\"read\": definition of this action does not match its schema "
		     "declaration: it is missing its action group Action::\"rw\"");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"read\"}", "{}",
				     "[{\"type\": \"Action\", \"id\": \"all\"}]")),
		     "entity Action::\"read\": definition of this action does not match its schema "
		     "declaration: it is missing its action group Action::\"rw\"");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"rw\"}", "{}",
				     "[{\"type\": \"Action\", \"id\": \"all\"}, {\"type\": \"Action\", "
				     "\"id\": \"read\"}]")),
		     "entity Action::\"rw\": definition of this action does not match its schema "
		     "declaration: Action::\"read\" is not one of its action groups");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"all\"}", "{\"x\": 1}", "[]")),
		     "entity Action::\"all\": definition of this action does not match its schema "
		     "declaration: actions have no attributes or tags");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Action\", \"id\": \"fly\"}", "{}", "[]")),
		     "entity Action::\"fly\": action is not declared in the schema");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Box::Action\", \"id\": \"read\"}", "{}", "[]")),
		     "entity Box::Action::\"read\": action is not declared in the schema");
	CHECK_EQ_STR(load_msg(s, ENT("{\"type\": \"Box::Action\", \"id\": \"run\"}", "{}", "[]")), "");

	/* finish adds every schema action with its groups; data actions are replaced */
	st = dw_store_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, s, ENT("{\"type\": \"Action\", \"id\": \"read\"}", "{}",
				     "[{\"type\": \"Action\", \"id\": \"rw\"}, {\"type\": \"Action\", "
				     "\"id\": \"all\"}]"), &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, s, &d), 0);
	CHECK_EQ_INT(dw_store_count(st), 5);   /* read, write, rw, all, Box::Action::run */
	CHECK(in(st, "Action", "read", "Action", "all"));
	CHECK(in(st, "Action", "write", "Action", "rw"));
	CHECK(in(st, "Action", "write", "Action", "all"));
	CHECK(!in(st, "Action", "rw", "Action", "read"));
	CHECK(in(st, "Box::Action", "run", "Box::Action", "run"));
	u = uid_of("Action", "read");
	e = dw_store_get(st, &u);
	CHECK(e != NULL && e->n_parents == 1 && e->n_ancestors == 2);
	u = uid_of("Action", "all");
	e = dw_store_get(st, &u);
	CHECK(e != NULL && e->n_parents == 0 && e->attrs->n == 0);
	dw_diags_fini(&d);
	dw_store_free(st);

	/* a file loaded without the schema is checked against it at finish */
	st = dw_store_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(load(st, NULL, ENT("{\"type\": \"Action\", \"id\": \"fly\"}", "{}", "[]"), &d), 0);
	CHECK_EQ_INT(dw_store_finish(st, s, &d), -EINVAL);
	CHECK_EQ_STR(msg0(&d), "entity Action::\"fly\": action is not declared in the schema");
	CHECK_EQ_INT(dw_store_count(st), 1);   /* rolled back: no schema actions added */
	dw_diags_fini(&d);
	dw_store_free(st);

	/* a store finished with the schema but empty data holds just the actions */
	st = dw_store_new();
	dw_diags_init(&d);
	CHECK_EQ_INT(dw_store_finish(st, s, &d), 0);
	CHECK_EQ_INT(dw_store_count(st), 5);
	dw_diags_fini(&d);
	dw_store_free(st);
	dw_schema_free(s);
}

/* --- contexts and request checks --------------------------------------------------- */

static int ctx_of(struct dw_arena *a, const struct dw_schema *s, const struct dw_action *act,
		  const char *text, const struct dw_rec **out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = text ? json_loads(text, JSON_DECODE_ANY, &je) : NULL;
	int r = dw_json_context(a, s, act, j, out, err, errlen);

	json_decref(j);
	return r;
}

static void test_context(void)
{
	struct dw_schema *s = schema_text(conformance_schema);
	const struct dw_action *read;
	const struct dw_rec *ctx;
	struct dw_arena a;
	char err[512];

	if (s == NULL)
		return;
	dw_arena_init(&a);
	read = dw_schema_find_action(s, DW_STR_LIT("Action"), DW_STR_LIT("read"));
	CHECK(read != NULL);
	CHECK_EQ_INT(ctx_of(&a, s, read, "{\"authenticated\": true, \"src\": \"10.0.0.1\"}", &ctx,
			    err, sizeof err), 0);
	CHECK(ctx != NULL && ctx->n == 2 && ctx->f[1].val.kind == DW_V_IP);
	CHECK_EQ_INT(ctx_of(&a, s, read, "{\"authenticated\": 1}", &ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context: attribute \"authenticated\": expected Bool, got Long");
	CHECK_EQ_INT(ctx_of(&a, s, read, "{}", &ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context: attribute \"authenticated\": required attribute is missing");
	CHECK_EQ_INT(ctx_of(&a, s, read, NULL, &ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context: attribute \"authenticated\": required attribute is missing");
	CHECK_EQ_INT(ctx_of(&a, s, read, "{\"authenticated\": true, \"x\": 1}", &ctx, err,
			    sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context: attribute \"x\": not declared in the schema");
	CHECK_EQ_INT(ctx_of(&a, s, read, "[]", &ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context: expected a JSON object, got Set");
	/* without an action: plain values, null is {} */
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "null", &ctx, err, sizeof err), 0);
	CHECK(ctx != NULL && ctx->n == 0);
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"src\": \"10.0.0.1\", \"n\": {\"m\": [1]}}", &ctx,
			    err, sizeof err), 0);
	CHECK(ctx != NULL && ctx->n == 2 && ctx->f[1].val.kind == DW_V_STRING);
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"n\": {\"m\": [null]}}", &ctx, err, sizeof err),
		     -EINVAL);
	CHECK_EQ_STR(err, "context: attribute \"n\".\"m\"[0]: null is not a Cedar value");
	dw_arena_fini(&a);
	dw_schema_free(s);
}

static void test_request_check(void)
{
	struct dw_schema *s = schema_text(conformance_schema);
	struct dw_arena a;
	const struct dw_rec *ctx, *bad_ctx, *empty = &dw_empty_rec;
	struct dw_uid alice = uid_of("User", "alice"), doc = uid_of("Doc", "d");
	struct dw_uid read = uid_of("Action", "read"), rw = uid_of("Action", "rw");
	struct dw_uid fly = uid_of("Action", "fly"), grp = uid_of("Group", "g");
	struct dw_uid nope = uid_of("Nope", "x"), pink = uid_of("Color", "pink");
	struct dw_uid run = uid_of("Box::Action", "run"), agent = uid_of("Box::Agent", "a");
	char err[512];

	if (s == NULL)
		return;
	dw_arena_init(&a);
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"authenticated\": true, \"level\": 3}", &ctx, err,
			    sizeof err), 0);
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"authenticated\": true, \"level\": \"3\"}", &bad_ctx,
			    err, sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &doc, ctx, err, sizeof err), 0);
	CHECK_EQ_STR(err, "");
	CHECK_EQ_INT(dw_request_check(s, &agent, &run, &agent, NULL, err, sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(NULL, &nope, &fly, &nope, NULL, err, sizeof err), 0);

	CHECK_EQ_INT(dw_request_check(s, &alice, &fly, &doc, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "request's action Action::\"fly\" is not declared in the schema");
	CHECK_EQ_INT(dw_request_check(s, &nope, &read, &doc, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "principal type Nope is not declared in the schema");
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &nope, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "resource type Nope is not declared in the schema");
	CHECK_EQ_INT(dw_request_check(s, &grp, &read, &doc, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "principal type Group is not valid for Action::\"read\"");
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &alice, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "resource type User is not valid for Action::\"read\"");
	/* an action without appliesTo applies to no request */
	CHECK_EQ_INT(dw_request_check(s, &alice, &rw, &doc, empty, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "principal type User is not valid for Action::\"rw\"");
	CHECK_EQ_INT(dw_request_check(s, &pink, &read, &doc, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "principal Color::\"pink\" is of an enumerated entity type, but its id "
			  "is not declared as a valid eid");
	/* the context conforms to the action's context type */
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &doc, bad_ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"read\": attribute \"level\": "
			  "expected Long, got String");
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &doc, empty, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"read\": attribute \"authenticated\": "
			  "required attribute is missing");
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"authenticated\": true, \"extra\": 1}", &bad_ctx,
			    err, sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &doc, bad_ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"read\": attribute \"extra\": not "
			  "declared in the schema");
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"authenticated\": true, \"src\": \"1.2.3.4\"}",
			    &bad_ctx, err, sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(s, &alice, &read, &doc, bad_ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"read\": attribute \"src\": expected "
			  "ipaddr, got String");
	dw_arena_fini(&a);
	dw_schema_free(s);
}

/* Built values are checked element by element, named by their value. */
static void test_request_context_sets(void)
{
	struct dw_schema *s = schema_text(
		"entity U; action a appliesTo { principal: U, resource: U, context: "
		"{ ids: Set<U>, who?: { name: String } } };");
	struct dw_arena a;
	const struct dw_rec *ctx;
	struct dw_uid u = uid_of("U", "1"), act = uid_of("Action", "a");
	char err[512];

	if (s == NULL)
		return;
	dw_arena_init(&a);
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"ids\": [{\"__entity\": {\"type\": \"U\", \"id\": "
					    "\"1\"}}, {\"__entity\": {\"type\": \"V\", \"id\": \"2\"}}]}",
			    &ctx, err, sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(s, &u, &act, &u, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"a\": attribute \"ids\"[V::\"2\"]: "
			  "expected entity of type U, got entity of type V");
	CHECK_EQ_INT(ctx_of(&a, NULL, NULL, "{\"ids\": [], \"who\": {\"name\": 1}}", &ctx, err,
			    sizeof err), 0);
	CHECK_EQ_INT(dw_request_check(s, &u, &act, &u, ctx, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "context is not valid for Action::\"a\": attribute \"who\".\"name\": "
			  "expected String, got Long");
	dw_arena_fini(&a);
	dw_schema_free(s);
}

static const struct test_case tests[] = {
	{ "plain_values", test_plain_values },
	{ "plain_errors", test_plain_errors },
	{ "type_names", test_type_names },
	{ "uid_forms", test_uid_forms },
	{ "typed_values", test_typed_values },
	{ "depth_limit", test_depth_limit },
	{ "out_of_memory", test_out_of_memory },
	{ "value_to_json", test_value_to_json },
	{ "store_plain", test_store_plain },
	{ "store_several_files", test_store_several_files },
	{ "store_format_errors", test_store_format_errors },
	{ "store_json_syntax_position", test_store_json_syntax_position },
	{ "deep_chain", test_deep_chain },
	{ "dag", test_dag },
	{ "wide_store", test_wide_store },
	{ "cycles", test_cycles },
	{ "testdata", test_testdata },
	{ "testdata_values", test_testdata_values },
	{ "schema_conformance", test_schema_conformance },
	{ "schema_actions", test_schema_actions },
	{ "context", test_context },
	{ "request_check", test_request_check },
	{ "request_context_sets", test_request_context_sets },
};

TEST_MAIN(tests)
