/* test_toml.c - the strict TOML 1.0 reader (src/config/toml.c).
 *
 * Valid documents of every kind with their values and positions, then one
 * test per error class with its message and line:col.  Values follow the
 * TOML 1.0 specification's examples; the differential test against smol-toml
 * (tests/diff/toml-diff.mjs) covers random documents. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "toml.h"

/* ---- helpers --------------------------------------------------------------- */

static struct toml_doc *ok(const char *text)
{
	struct toml_error err;
	struct toml_doc *doc = NULL;
	int rc = toml_parse(text, strlen(text), &doc, &err);

	if (rc != 0)
		fprintf(stderr, "  unexpected error %u:%u: %s\n  in: %s\n", err.line, err.col, err.msg, text);
	CHECK_EQ_INT(rc, 0);
	return rc == 0 ? doc : NULL;
}

/* text[0, n) fails at line:col with a message starting with msg. */
static void bad_n(const char *text, size_t n, unsigned line, unsigned col, const char *msg)
{
	struct toml_error err;
	struct toml_doc *doc = NULL;
	int rc = toml_parse(text, n, &doc, &err);

	CHECK_EQ_INT(rc, -EINVAL);
	if (rc == 0) {
		fprintf(stderr, "  unexpectedly parsed: %.*s\n", (int)n, text);
		toml_free(doc);
		return;
	}
	if (err.line != line || err.col != col || strncmp(err.msg, msg, strlen(msg)) != 0)
		fprintf(stderr, "  %.*s\n  got  %u:%u: %s\n  want %u:%u: %s...\n", (int)n, text,
			err.line, err.col, err.msg, line, col, msg);
	CHECK_EQ_INT(err.line, line);
	CHECK_EQ_INT(err.col, col);
	CHECK(strncmp(err.msg, msg, strlen(msg)) == 0);
}

static void bad(const char *text, unsigned line, unsigned col, const char *msg)
{
	bad_n(text, strlen(text), line, col, msg);
}

/* The value at a dotted path of plain keys ("a.b.c"), or NULL. */
static const struct toml_value *at(const struct toml_doc *doc, const char *path)
{
	const struct toml_value *v = toml_root(doc);
	char key[64];

	while (v != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		v = toml_get(v, key);
		path += n + (path[n] == '.');
	}
	return v;
}

static void check_str(const struct toml_doc *doc, const char *path, const char *want)
{
	const struct toml_value *v = at(doc, path);

	CHECK(v != NULL && v->kind == TOML_STRING);
	if (v != NULL && v->kind == TOML_STRING) {
		CHECK_EQ_STR(v->s.p, want);
		CHECK_EQ_INT(v->s.n, strlen(want));
	}
}

static void check_int(const struct toml_doc *doc, const char *path, int64_t want)
{
	const struct toml_value *v = at(doc, path);

	CHECK(v != NULL && v->kind == TOML_INTEGER);
	if (v != NULL && v->kind == TOML_INTEGER)
		CHECK(v->i == want);
}

static void check_float(const struct toml_doc *doc, const char *path, double want)
{
	const struct toml_value *v = at(doc, path);

	CHECK(v != NULL && v->kind == TOML_FLOAT);
	if (v != NULL && v->kind == TOML_FLOAT) {
		if (v->f != want)
			fprintf(stderr, "  %s = %.17g, want %.17g\n", path, v->f, want);
		CHECK(v->f == want);
	}
}

static void check_json(const char *text, const char *want)
{
	struct toml_doc *doc = ok(text);
	char *json = doc ? toml_to_test_json(toml_root(doc)) : NULL;

	CHECK_EQ_STR(json, want);
	free(json);
	toml_free(doc);
}

/* ---- valid documents -------------------------------------------------------- */

static void test_keys_and_positions(void)
{
	struct toml_doc *doc = ok("# header comment\n"
				  "name = \"cairn\"  # trailing\n"
				  "\"quoted key\" = 1\n"
				  "'lit.key' = 2\n"
				  "  site . \"google.com\" . x = true\n"
				  "3.14 = 'pi'\n"
				  "\"\" = 'empty'\n"
				  "\"é\" = \"é\" # é\n");
	const struct toml_value *root = toml_root(doc), *v;

	if (doc == NULL)
		return;
	CHECK_EQ_INT(root->kind, TOML_TABLE);
	CHECK_EQ_INT(root->tab.n, 7);
	check_str(doc, "name", "cairn");
	CHECK_EQ_INT(root->tab.kv[0].line, 2);
	CHECK_EQ_INT(root->tab.kv[0].col, 1);
	CHECK_EQ_INT(root->tab.kv[0].value->line, 2);
	CHECK_EQ_INT(root->tab.kv[0].value->col, 8);
	check_int(doc, "quoted key", 1);
	CHECK_EQ_STR(root->tab.kv[2].key, "lit.key");
	v = toml_get(toml_get(toml_get(root, "site"), "google.com"), "x");
	CHECK(v != NULL && v->kind == TOML_BOOL && v->b);
	/* the key position is its last segment */
	CHECK_EQ_INT(toml_get(toml_get(root, "site"), "google.com")->tab.kv[0].col, 25);
	check_str(doc, "3.14", "pi");          /* "3.14" is keys 3 and 14; at() splits it too */
	CHECK(toml_get(root, "") != NULL);
	CHECK_EQ_INT(root->tab.kv[5].key_len, 0);
	CHECK_EQ_INT(root->tab.kv[6].key_len, 2);       /* é: two bytes, one column */
	CHECK_EQ_INT(root->tab.kv[6].value->col, 7);
	CHECK_EQ_INT(root->tab.kv[6].value->line, 8);
	CHECK(toml_get(root, "missing") == NULL);
	CHECK(toml_get(NULL, "x") == NULL);
	toml_free(doc);
	toml_free(NULL);
}

static void test_strings(void)
{
	struct toml_doc *doc = ok(
		"b = \"tab\\t nl\\n q\\\" bs\\\\ \\b\\f\\r \\u00e9 \\U0001F600\"\n"
		"l = 'C:\\Users\\<b>'\n"
		"m = \"\"\"\nRoses\nViolets\"\"\"\n"
		"c = \"\"\"\\\n   The quick \\\n\n   brown\"\"\"\n"
		"q = \"\"\"\"two\"\" quotes\"\"\"\"\"\n"
		"ml = '''\nfirst\n  'quoted' ''two'''''\n"
		"e = \"\"\n"
		"crlf = \"\"\"a\r\nb\"\"\"\r\n"
		"tab = \"a\tb\"\n"
		"nul = \"x\\u0000y\"\n");

	if (doc == NULL)
		return;
	check_str(doc, "b", "tab\t nl\n q\" bs\\ \b\f\r \xc3\xa9 \xf0\x9f\x98\x80");
	check_str(doc, "l", "C:\\Users\\<b>");
	check_str(doc, "m", "Roses\nViolets");
	check_str(doc, "c", "The quick brown");
	check_str(doc, "q", "\"two\"\" quotes\"\"");
	check_str(doc, "ml", "first\n  'quoted' ''two''");
	check_str(doc, "e", "");
	check_str(doc, "crlf", "a\nb");
	check_str(doc, "tab", "a\tb");
	CHECK_EQ_INT(at(doc, "nul")->s.n, 3);
	CHECK(memcmp(at(doc, "nul")->s.p, "x\0y", 4) == 0);
	toml_free(doc);
}

static void test_integers(void)
{
	struct toml_doc *doc = ok("a = +99\nb = 42\nc = 0\nd = -17\ne = 1_000\nf = 5_349_221\n"
				  "g = 1_2_3_4_5\nh = 0xDEADBEEF\ni = 0xdead_beef\nj = 0o01234567\n"
				  "k = 0o755\nl = 0b11010110\nm = 9223372036854775807\n"
				  "n = -9223372036854775808\no = +0\np = -0\nq = 0x7FFFFFFFFFFFFFFF\n"
				  "r = 0x000001\n");

	if (doc == NULL)
		return;
	check_int(doc, "a", 99);
	check_int(doc, "b", 42);
	check_int(doc, "c", 0);
	check_int(doc, "d", -17);
	check_int(doc, "e", 1000);
	check_int(doc, "f", 5349221);
	check_int(doc, "g", 12345);
	check_int(doc, "h", 0xDEADBEEF);
	check_int(doc, "i", 0xDEADBEEF);
	check_int(doc, "j", 01234567);
	check_int(doc, "k", 0755);
	check_int(doc, "l", 214);
	check_int(doc, "m", INT64_MAX);
	check_int(doc, "n", INT64_MIN);
	check_int(doc, "o", 0);
	check_int(doc, "p", 0);
	check_int(doc, "q", INT64_MAX);
	check_int(doc, "r", 1);
	toml_free(doc);
}

static void test_floats(void)
{
	struct toml_doc *doc = ok("a = +1.0\nb = 3.1415\nc = -0.01\nd = 5e+22\ne = 1e06\nf = -2E-2\n"
				  "g = 6.626e-34\nh = 224_617.445_991_228\ni = inf\nj = +inf\nk = -inf\n"
				  "l = nan\nm = +nan\nn = -nan\no = -0.0\np = 0e0\nq = 1e1_0\n"
				  "r = 5e-324\n");

	if (doc == NULL)
		return;
	check_float(doc, "a", 1.0);
	check_float(doc, "b", 3.1415);
	check_float(doc, "c", -0.01);
	check_float(doc, "d", 5e22);
	check_float(doc, "e", 1e6);
	check_float(doc, "f", -2e-2);
	check_float(doc, "g", 6.626e-34);
	check_float(doc, "h", 224617.445991228);
	check_float(doc, "i", INFINITY);
	check_float(doc, "j", INFINITY);
	check_float(doc, "k", -INFINITY);
	CHECK(isnan(at(doc, "l")->f) && isnan(at(doc, "m")->f) && isnan(at(doc, "n")->f));
	CHECK(at(doc, "o")->f == 0.0 && signbit(at(doc, "o")->f));
	check_float(doc, "p", 0.0);
	check_float(doc, "q", 1e10);
	check_float(doc, "r", 5e-324);
	toml_free(doc);
}

static void test_bools_and_dates(void)
{
	struct toml_doc *doc = ok("t = true\nf = false\n"
				  "odt1 = 1979-05-27T07:32:00Z\n"
				  "odt2 = 1979-05-27T00:32:00-07:00\n"
				  "odt3 = 1979-05-27T00:32:00.999999+05:30\n"
				  "odt4 = 1979-05-27 07:32:00z\n"
				  "ldt = 1979-05-27t07:32:00.1234567891\n"
				  "ld = 2000-02-29\n"
				  "lt = 00:32:00.5\n"
				  "leap = 1990-12-31T23:59:60Z\n");
	const struct toml_value *v;

	if (doc == NULL)
		return;
	CHECK(at(doc, "t")->kind == TOML_BOOL && at(doc, "t")->b);
	CHECK(at(doc, "f")->kind == TOML_BOOL && !at(doc, "f")->b);
	v = at(doc, "odt1");
	CHECK_EQ_INT(v->kind, TOML_DATETIME);
	CHECK(v->dt.year == 1979 && v->dt.month == 5 && v->dt.day == 27 && v->dt.hour == 7 &&
	      v->dt.minute == 32 && v->dt.second == 0 && v->dt.has_offset && v->dt.offset_minutes == 0);
	CHECK_EQ_INT(at(doc, "odt2")->dt.offset_minutes, -420);
	CHECK_EQ_INT(at(doc, "odt3")->dt.offset_minutes, 330);
	CHECK_EQ_INT(at(doc, "odt3")->dt.nanosecond, 999999000);
	CHECK_EQ_INT(at(doc, "odt4")->kind, TOML_DATETIME);
	v = at(doc, "ldt");
	CHECK_EQ_INT(v->kind, TOML_LOCAL_DATETIME);
	CHECK(!v->dt.has_offset);
	CHECK_EQ_INT(v->dt.nanosecond, 123456789);     /* truncated, not rounded */
	CHECK_EQ_INT(at(doc, "ld")->kind, TOML_LOCAL_DATE);
	CHECK_EQ_INT(at(doc, "ld")->dt.day, 29);
	CHECK_EQ_INT(at(doc, "lt")->kind, TOML_LOCAL_TIME);
	CHECK_EQ_INT(at(doc, "lt")->dt.nanosecond, 500000000);
	CHECK_EQ_INT(at(doc, "leap")->dt.second, 60);
	toml_free(doc);
}

static void test_arrays_and_inline_tables(void)
{
	struct toml_doc *doc = ok("ints = [ 1, 2, 3, ]\n"
				  "mixed = [ 1, 'a', 1.5, [true], {x = 1} ]\n"
				  "multi = [ # comment\n  1,\n\n  2 # two\n  ,\n]\n"
				  "empty = []\n"
				  "nested = [[[]]]\n"
				  "point = { x = 1, y = 2 }\n"
				  "deep = { a.b = 1, a.c = { d = [1, {}] } }\n"
				  "blank = {}\n");
	const struct toml_value *v;

	if (doc == NULL)
		return;
	v = at(doc, "ints");
	CHECK(v->kind == TOML_ARRAY && v->arr.n == 3 && v->arr.v[2]->i == 3);
	CHECK_EQ_INT(v->arr.v[1]->col, 13);
	v = at(doc, "mixed");
	CHECK(v->arr.n == 5 && v->arr.v[1]->kind == TOML_STRING && v->arr.v[4]->kind == TOML_TABLE);
	CHECK_EQ_INT(at(doc, "multi")->arr.n, 2);
	CHECK_EQ_INT(at(doc, "multi")->arr.v[1]->line, 6);
	CHECK_EQ_INT(at(doc, "empty")->arr.n, 0);
	CHECK_EQ_INT(at(doc, "nested")->arr.v[0]->arr.v[0]->arr.n, 0);
	check_int(doc, "point.y", 2);
	check_int(doc, "deep.a.b", 1);
	CHECK_EQ_INT(at(doc, "deep.a.c.d")->arr.n, 2);
	CHECK_EQ_INT(at(doc, "blank")->tab.n, 0);
	toml_free(doc);
}

static void test_tables(void)
{
	struct toml_doc *doc = ok("top = 1\n"
				  "[a.b.c]\n"
				  "x = 1\n"
				  "[a]            # defines the implicit a\n"
				  "y = 2\n"
				  "[ a . b ]\n"
				  "z = 3\n"
				  "[fruit]\n"
				  "apple.color = 'red'\n"
				  "apple.taste.sweet = true\n"
				  "[fruit.apple.texture]  # a sub-table of a dotted table\n"
				  "smooth = true\n"
				  "[[products]]\n"
				  "name = 'Hammer'\n"
				  "[[products]]\n"
				  "[[products]]\n"
				  "name = 'Nail'\n"
				  "[products.dims]\n"
				  "w = 1\n"
				  "[[products.parts]]\n"
				  "p = 1\n"
				  "[\"quoted\".'lit']\n");
	const struct toml_value *v;

	if (doc == NULL)
		return;
	check_int(doc, "top", 1);
	check_int(doc, "a.b.c.x", 1);
	check_int(doc, "a.y", 2);
	check_int(doc, "a.b.z", 3);
	/* a table defined late takes its header's position */
	CHECK_EQ_INT(at(doc, "a")->line, 4);
	CHECK_EQ_INT(at(doc, "a.b")->line, 6);
	check_str(doc, "fruit.apple.color", "red");
	CHECK(at(doc, "fruit.apple.texture.smooth")->b);
	v = at(doc, "products");
	CHECK(v->kind == TOML_ARRAY && v->arr.n == 3);
	CHECK_EQ_INT(v->arr.v[1]->tab.n, 0);
	CHECK_EQ_INT(v->arr.v[2]->line, 16);
	CHECK_EQ_INT(toml_get(toml_get(v->arr.v[2], "dims"), "w")->i, 1);
	CHECK_EQ_INT(toml_get(v->arr.v[2], "parts")->arr.n, 1);
	CHECK(toml_get(toml_get(toml_root(doc), "quoted"), "lit") != NULL);
	toml_free(doc);

	/* CRLF line endings, no final newline, whitespace-only and empty documents */
	doc = ok("a = 1\r\n[t]\r\nb = 2");
	if (doc != NULL) {
		check_int(doc, "t.b", 2);
		toml_free(doc);
	}
	doc = ok("");
	CHECK(doc != NULL && toml_root(doc)->tab.n == 0);
	toml_free(doc);
	toml_free(ok(" \t\n# only a comment\n\n"));
}

static void test_many_keys(void)
{
	/* enough keys to use the index; the duplicate is still found */
	char text[40000];
	size_t o = 0;
	int i;

	for (i = 0; i < 2000; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "k%d = %d\n", i, i);
	struct toml_doc *doc = ok(text);

	if (doc != NULL) {
		check_int(doc, "k1999", 1999);
		check_int(doc, "k7", 7);
		toml_free(doc);
	}
	snprintf(text + o, sizeof text - o, "k1234 = 0\n");
	bad(text, 2001, 1, "duplicate key `k1234` (first defined at 1235:1)");
}

static void test_nesting_limit(void)
{
	char text[600];
	size_t i, o = 0;

	o += (size_t)snprintf(text, sizeof text, "a = ");
	for (i = 0; i < 128; i++)
		text[o++] = '[';
	for (i = 0; i < 128; i++)
		text[o++] = ']';
	text[o] = '\0';
	toml_free(ok(text));

	o = (size_t)snprintf(text, sizeof text, "a = ");
	for (i = 0; i < 64; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "[{a=");
	for (i = 0; i < 65; i++)
		text[o++] = '[';
	text[o] = '\0';
	bad(text, 1, 5 + 64 * 4, "arrays and inline tables nested more than 128 deep");
}

static void test_json(void)
{
	check_json("s = \"a\\\"b\\u0001\"\ni = -3\nf = 0.5\nn = -nan\nb = true\n"
		   "d = 1979-05-27T07:32:00.5-07:00\nl = 1979-05-27 07:32:00\nday = 1979-05-27\n"
		   "t = 07:32:00.000001\narr = [1, [2]]\n[tab]\nz = -inf\n",
		   "{\"s\":{\"type\":\"string\",\"value\":\"a\\\"b\\u0001\"},"
		   "\"i\":{\"type\":\"integer\",\"value\":\"-3\"},"
		   "\"f\":{\"type\":\"float\",\"value\":\"0.5\"},"
		   "\"n\":{\"type\":\"float\",\"value\":\"nan\"},"
		   "\"b\":{\"type\":\"bool\",\"value\":\"true\"},"
		   "\"d\":{\"type\":\"datetime\",\"value\":\"1979-05-27T07:32:00.5-07:00\"},"
		   "\"l\":{\"type\":\"datetime-local\",\"value\":\"1979-05-27T07:32:00\"},"
		   "\"day\":{\"type\":\"date-local\",\"value\":\"1979-05-27\"},"
		   "\"t\":{\"type\":\"time-local\",\"value\":\"07:32:00.000001\"},"
		   "\"arr\":[{\"type\":\"integer\",\"value\":\"1\"},[{\"type\":\"integer\",\"value\":\"2\"}]],"
		   "\"tab\":{\"z\":{\"type\":\"float\",\"value\":\"-inf\"}}}");
	CHECK(toml_to_test_json(NULL) == NULL);
}

/* ---- errors, one class each ----------------------------------------------------- */

static void test_err_redefinition(void)
{
	bad("a = 1\nb = 2\na = 3\n", 3, 1, "duplicate key `a` (first defined at 1:1)");
	bad("[t]\nname = 1\n\"name\" = 2\n", 3, 1, "duplicate key `name` (first defined at 2:1)");
	bad("a.b = 1\na.b = 2\n", 2, 3, "duplicate key `a.b` (first defined at 1:3)");
	bad("x = {a = 1, a = 2}\n", 1, 13, "duplicate key `a` (first defined at 1:6)");
	bad("[a]\n[b]\n[a]\n", 3, 2, "table `a` is already defined (at 1:1)");
	bad("[a.b]\n[a . b]\n", 2, 6, "table `a.b` is already defined (at 1:1)");
	bad("a.b = 1\n[a]\n", 2, 2, "table `a` is already defined by dotted keys (at 1:1)");
	bad("[fruit]\napple.color = 'red'\n[fruit.apple]\n", 3, 8,
	    "table `fruit.apple` is already defined by dotted keys (at 2:1)");
	bad("a.b = 1\n[a.b]\n", 2, 4, "key `a.b` is already an integer (defined at 1:3), not a table");
	bad("a = 1\n[a.b]\n", 2, 2, "key `a` is already an integer (defined at 1:1), not a table");
	bad("a = 1\na.b = 2\n", 2, 1, "key `a` is already an integer (defined at 1:1), not a table");
	bad("[a.b]\n[a]\nb.c = 1\n", 3, 1,
	    "cannot add to table `b` with dotted keys: it was defined by the header at 1:1");
	bad("[a.b.c]\n[a]\nb.d = 1\n", 3, 1,
	    "cannot add to table `b` with dotted keys: it was created by the header at 1:4");
	bad("a = {b = 1}\n[a]\n", 2, 2, "cannot extend `a` with a header: inline tables are closed");
	bad("a = {b = 1}\n[a.c]\n", 2, 2, "cannot extend `a` with a header: inline tables are closed");
	bad("a = {b = 1}\na.c = 2\n", 2, 1, "cannot add keys to `a`: inline tables are closed");
	bad("a = {b = {}}\n[a.b.c]\n", 2, 2, "cannot extend `a` with a header");
	bad("x = {a = {b = 1}, a.c = 2}\n", 1, 19, "cannot add keys to `a`: inline tables are closed");
	bad("[[a]]\n[a]\n", 2, 2, "cannot define `a` as a table: it is already an array of tables");
	bad("[a]\n[[a]]\n", 2, 3, "cannot define `a` as an array of tables: it is already a table");
	bad("a = []\n[[a]]\n", 2, 3, "`a` is a static array (defined at 1:1), not an array of tables");
	bad("a = [{}]\n[a.b]\n", 2, 2, "`a` is a static array (defined at 1:1), not an array of tables");
	bad("[[a]]\nb.c = 1\n[a.b]\n", 3, 4, "table `a.b` is already defined by dotted keys");
	bad("[[a]]\n[a]\nb.c = 1\n", 2, 2, "cannot define `a` as a table");
	bad("[[a]]\nx = 1\n[[a]]\nx = 1\nx = 2\n", 5, 1, "duplicate key `x` (first defined at 4:1)");
}

static void test_err_numbers(void)
{
	bad("a = 01\n", 1, 5, "leading zero in an integer");
	bad("a = -012\n", 1, 6, "leading zero in an integer");
	bad("a = 00.5\n", 1, 5, "leading zero in a float");
	bad("a = 0_1\n", 1, 5, "leading zero in an integer");
	bad("a = 1__2\n", 1, 6, "`_` in an integer must be between two digits");
	bad("a = 1_\n", 1, 6, "`_` in an integer must be between two digits");
	bad("a = _1\n", 1, 5, "invalid value `_1`");
	bad("a = 1_.5\n", 1, 6, "`_` in a float must be between two digits");
	bad("a = 0x_1\n", 1, 7, "`_` in a hexadecimal integer must be between two digits");
	bad("a = +0x1\n", 1, 5, "a hexadecimal integer cannot have a sign");
	bad("a = 0x\n", 1, 7, "`0x` must be followed by digits");
	bad("a = 0o8\n", 1, 7, "invalid digit `8` in an octal integer");
	bad("a = 0b102\n", 1, 9, "invalid digit `2` in a binary integer");
	bad("a = 0X10\n", 1, 6, "invalid character `X` in an integer");
	bad("a = 9223372036854775808\n", 1, 5, "integer `9223372036854775808` does not fit in 64 bits");
	bad("a = -9223372036854775809\n", 1, 5, "integer `-9223372036854775809` does not fit");
	bad("a = 0x8000000000000000\n", 1, 5, "integer `0x8000000000000000` does not fit");
	bad("a = 1.\n", 1, 7, "`.` in a float must be followed by digits");
	bad("a = .5\n", 1, 5, "invalid value `.5`");
	bad("a = 1.e5\n", 1, 7, "`.` in a float must be followed by digits");
	bad("a = 1e\n", 1, 7, "exponent of a float must have digits");
	bad("a = 1e_5\n", 1, 7, "`_` in an exponent must be between two digits");
	bad("a = 1e400\n", 1, 5, "float `1e400` is out of range");
	bad("a = infinity\n", 1, 5, "invalid value `infinity`");
	bad("a = NaN\n", 1, 5, "invalid value `NaN`");
	bad("a = 1.5x\n", 1, 8, "invalid character `x` in a float");
	bad("a = 1,000\n", 1, 6, "expected a newline after a key/value pair, found `,`");
	bad("a = tru\n", 1, 5, "invalid value `tru`");
	bad("a = True\n", 1, 5, "invalid value `True`");
}

static void test_err_strings(void)
{
	bad("a = \"\\q\"\n", 1, 6, "invalid escape `\\q` in a basic string");
	bad("a = \"\"\"\\q\"\"\"\n", 1, 8, "invalid escape `\\q` in a multi-line basic string");
	bad("a = \"\\e\"\n", 1, 6, "invalid escape `\\e` in a basic string");
	bad("a = \"\\x41\"\n", 1, 6, "invalid escape `\\x` in a basic string");
	bad("a = \"x\\ \"\n", 1, 7, "invalid escape in a basic string: `\\` followed by a space");
	bad("a = \"\"\"x\\ y\"\"\"\n", 1, 9, "invalid escape `\\ ` in a multi-line basic string");
	bad("a = \"\\u12\"\n", 1, 6, "invalid escape in a basic string: `\\u` needs 4 hex digits");
	bad("a = \"\\uD800\"\n", 1, 6, "invalid escape `\\uD800` in a basic string: not a Unicode scalar value");
	bad("a = \"\\U00110000\"\n", 1, 6, "invalid escape `\\U00110000` in a basic string: not a Unicode");
	bad("a = \"abc\n", 1, 9, "newline in a basic string (opened at 1:5)");
	bad("a = 'abc\n", 1, 9, "newline in a literal string (opened at 1:5)");
	bad("a = \"abc", 1, 9, "end of input in a basic string (opened at 1:5)");
	bad("a = '''abc\n\n", 3, 1, "end of input in a multi-line literal string (opened at 1:5)");
	bad("a = \"\"\"x\"\"\"\"\"\"\n", 1, 14, "too many quotes at the end of a multi-line basic string");
	bad("\"\"\"k\"\"\" = 1\n", 1, 1, "a multi-line string cannot be a key");
	bad("a = \"x\" \"y\"\n", 1, 9, "expected a newline after a key/value pair, found `\"`");
}

static void test_err_characters(void)
{
	bad("a = \"x\x01\"\n", 1, 7, "control character U+0001 in a basic string");
	bad("a = 'x\x7f'\n", 1, 7, "control character U+007F in a literal string");
	bad("a = \"\"\"\x08\"\"\"\n", 1, 8, "control character U+0008 in a multi-line basic string");
	bad("# bell \x07\n", 1, 8, "control character U+0007 in a comment");
	bad_n("# nul \0\n", 8, 1, 7, "control character U+0000 in a comment");
	bad("a = 'é\xff'\n", 1, 7, "invalid UTF-8 in a literal string");
	bad("# é \xc0\x80\n", 1, 5, "invalid UTF-8 in a comment");
	bad("a = \"\xed\xa0\x80\"\n", 1, 6, "invalid UTF-8 in a basic string");   /* a surrogate */
	bad("\xff = 1\n", 1, 1, "expected a key, found invalid UTF-8");
	bad("é = 1\n", 1, 1, "expected a key, found `é` (U+00E9)");
	bad("a = 1\r", 1, 6, "bare carriage return");
	bad("a = 1\rb = 2\n", 1, 6, "bare carriage return");
	bad("# c\r\n# d\r", 2, 4, "bare carriage return in a comment");
	bad("a = \"\"\"x\ry\"\"\"\n", 1, 9, "bare carriage return in a multi-line basic string");
	bad("\xef\xbb\xbf" "a = 1\n", 1, 1, "expected a key, found `\xef\xbb\xbf` (U+FEFF)");
}

static void test_err_structure(void)
{
	bad("a = 1 b = 2\n", 1, 7, "expected a newline after a key/value pair, found `b`");
	bad("[t] a = 1\n", 1, 5, "expected a newline after a table header, found `a`");
	bad("a =\n", 1, 4, "missing value for key `a`");
	bad("a = # no\n", 1, 5, "missing value for key `a`");
	bad("a\n", 1, 2, "expected `=` after key `a`, found a newline");
	bad("a b = 1\n", 1, 3, "expected `=` after key `a`, found `b`");
	bad("= 1\n", 1, 1, "expected a key, found `=`");
	bad("a. = 1\n", 1, 4, "expected a key after `.`, found `=`");
	bad("a..b = 1\n", 1, 3, "expected a key after `.`, found `.`");
	bad("[]\n", 1, 2, "expected a key, found `]`");
	bad("[a\n", 1, 3, "expected `]` to close the table header, found a newline");
	bad("[[a]\n", 1, 4, "expected `]]` to close the array-of-tables header, found `]`");
	bad("[a]]\n", 1, 4, "expected a newline after a table header, found `]`");
	bad("[ [a]]\n", 1, 3, "expected a key, found `[`");
	bad("a = [1 2]\n", 1, 8, "expected `,` or `]` after an array element, found `2`");
	bad("a = [1,,2]\n", 1, 8, "expected a value, found `,`");
	bad("a = [\n1,\n", 3, 1, "expected a value, found end of input");
	bad("a = [1\n", 2, 1, "unterminated array (opened at 1:5)");
	bad("a = {b = 1,}\n", 1, 12, "trailing comma in an inline table (opened at 1:5)");
	bad("a = {\nb = 1}\n", 1, 6, "newline in an inline table (opened at 1:5)");
	bad("a = {b = 1\n}\n", 1, 11, "newline in an inline table (opened at 1:5)");
	bad("a = {b = 1 c = 2}\n", 1, 12, "expected `,` or `}` in an inline table, found `c`");
	bad("a = {b = 1", 1, 11, "unterminated inline table (opened at 1:5)");
	bad("a = {b = 1 # c\n}\n", 1, 12, "expected `,` or `}` in an inline table, found `#`");
}

static void test_err_dates(void)
{
	bad("a = 2023-02-29\n", 1, 13, "day 29 out of range: 2023-02 has 28 days");
	bad("a = 1900-02-29\n", 1, 13, "day 29 out of range: 1900-02 has 28 days");
	bad("a = 2024-04-31\n", 1, 13, "day 31 out of range: 2024-04 has 30 days");
	bad("a = 2024-01-00\n", 1, 13, "day 00 out of range");
	bad("a = 2024-13-01\n", 1, 10, "month 13 out of range (01-12)");
	bad("a = 2024-00-01\n", 1, 10, "month 00 out of range (01-12)");
	bad("a = 2024-1-01\n", 1, 5, "invalid date: expected YYYY-MM-DD");
	bad("a = 24:00:00\n", 1, 5, "hour 24 out of range (00-23)");
	bad("a = 12:60:00\n", 1, 8, "minute 60 out of range (00-59)");
	bad("a = 12:00:61\n", 1, 11, "second 61 out of range (00-60)");
	bad("a = 12:00\n", 1, 10, "invalid time: seconds are required (HH:MM:SS)");
	bad("a = 2024-01-01T12:00Z\n", 1, 21, "invalid time: seconds are required (HH:MM:SS)");
	bad("a = 2024-01-01T12:00:00.Z\n", 1, 25, "fractional seconds need at least one digit");
	bad("a = 2024-01-01T12:00:00+24:00\n", 1, 24, "time offset +24:00 out of range");
	bad("a = 2024-01-01T12:00:00+1:00\n", 1, 24, "invalid time offset: expected +HH:MM or -HH:MM");
	bad("a = 12:00:00Z\n", 1, 13, "expected a newline after a key/value pair, found `Z`");
	bad("a = 2024-01-01X12:00:00\n", 1, 15, "expected a newline after a key/value pair, found `X`");
}

static const struct test_case tests[] = {
	{ "keys_and_positions", test_keys_and_positions },
	{ "strings", test_strings },
	{ "integers", test_integers },
	{ "floats", test_floats },
	{ "bools_and_dates", test_bools_and_dates },
	{ "arrays_and_inline_tables", test_arrays_and_inline_tables },
	{ "tables", test_tables },
	{ "many_keys", test_many_keys },
	{ "nesting_limit", test_nesting_limit },
	{ "json", test_json },
	{ "err_redefinition", test_err_redefinition },
	{ "err_numbers", test_err_numbers },
	{ "err_strings", test_err_strings },
	{ "err_characters", test_err_characters },
	{ "err_structure", test_err_structure },
	{ "err_dates", test_err_dates },
};

TEST_MAIN(tests)
