/* test_eval.c - evaluator semantics through the public API: each case is a
 * condition, evaluated as `permit(principal, action, resource) when { <c> };`
 * against a small entity store, and must come out true, false, or an
 * evaluation error (Cedar 4.x semantics, docs/formats.md §1). */
#include <stdio.h>
#include <string.h>

#include "dogwood.h"
#include "test.h"

static const char entities[] =
	"["
	"{\"uid\":{\"type\":\"User\",\"id\":\"alice\"},\"attrs\":{\"age\":30,\"name\":\"Alice\","
	"  \"tags\":[\"a\",\"b\"],\"addr\":{\"city\":\"Paris\",\"zip\":\"75001\"},"
	"  \"boss\":{\"__entity\":{\"type\":\"User\",\"id\":\"bob\"}},"
	"  \"ip\":{\"__extn\":{\"fn\":\"ip\",\"arg\":\"10.1.2.3\"}}},"
	"  \"parents\":[{\"type\":\"Group\",\"id\":\"eng\"}],\"tags\":{\"level\":3}},"
	"{\"uid\":{\"type\":\"User\",\"id\":\"bob\"},\"attrs\":{},\"parents\":[]},"
	"{\"uid\":{\"type\":\"Group\",\"id\":\"eng\"},\"attrs\":{},"
	"  \"parents\":[{\"type\":\"Group\",\"id\":\"all\"}]},"
	"{\"uid\":{\"type\":\"Group\",\"id\":\"all\"},\"attrs\":{},\"parents\":[]},"
	"{\"uid\":{\"type\":\"Action\",\"id\":\"view\"},\"attrs\":{},"
	"  \"parents\":[{\"type\":\"Action\",\"id\":\"read\"}]},"
	"{\"uid\":{\"type\":\"Action\",\"id\":\"read\"},\"attrs\":{},\"parents\":[]}"
	"]";

static struct dw_engine *load(const char *policy, struct dw_diags *diags)
{
	struct dw_input pin = { "t.cedar", policy, strlen(policy), DW_FMT_CEDAR };
	struct dw_input ein = { "e.json", entities, strlen(entities), DW_FMT_JSON };
	struct dw_engine_config cfg = { 0 };
	struct dw_engine *eng = NULL;

	cfg.policies = &pin;
	cfg.n_policies = 1;
	cfg.entities = &ein;
	cfg.n_entities = 1;
	cfg.flags = DW_NO_BOX_SCHEMA;
	if (dw_engine_new(&cfg, &eng, diags) != 0)
		return NULL;
	return eng;
}

/* 'T' true, 'F' false, 'E' evaluation error, 'P' parse error */
static char eval(const char *cond)
{
	char policy[4096];
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng;
	struct dw_request *req;
	struct dw_decision d;
	char r;

	snprintf(policy, sizeof policy, "permit(principal, action, resource) when { %s };", cond);
	eng = load(policy, diags);
	dw_diags_free(diags);
	if (eng == NULL)
		return 'P';
	req = dw_request_new();
	dw_request_set_principal(req, "User", "alice", 5);
	dw_request_set_action(req, "Action", "view", 4);
	dw_request_set_resource(req, "Doc", "d1", 2);
	{
		static const char ctx[] = "{\"n\": 5, \"s\": \"x\", \"r\": {\"a\": {\"b\": 1}}, "
					  "\"set\": [1, 2, 3]}";
		dw_request_set_context_json(req, eng, ctx, strlen(ctx), NULL, 0);
	}
	if (dw_authorize(eng, req, &d) != 0)
		r = '?';
	else if (d.n_errors)
		r = 'E';
	else
		r = d.cedar == DW_ALLOW ? 'T' : 'F';
	dw_decision_clear(&d);
	dw_request_free(req);
	dw_engine_free(eng);
	return r;
}

struct ecase {
	const char *cond;
	char want;
};

static const struct ecase cases[] = {
	/* booleans and short-circuit */
	{ "true", 'T' }, { "false", 'F' }, { "!false", 'T' }, { "!1", 'E' },
	{ "false && 1", 'F' }, { "true && 1", 'E' }, { "true || 1", 'T' }, { "false || 1", 'E' },
	{ "1 && true", 'E' }, { "false && (1 + \"a\" == 2)", 'F' },
	{ "if true then true else 1", 'T' }, { "if false then 1 else false", 'F' },
	{ "if 1 then true else true", 'E' }, { "1", 'E' }, { "\"true\"", 'E' },
	/* arithmetic, overflow */
	{ "1 + 2 == 3", 'T' }, { "2 * -3 == -6", 'T' }, { "5 - 7 == -2", 'T' },
	{ "9223372036854775807 + 1 == 0", 'E' }, { "-9223372036854775808 - 1 == 0", 'E' },
	{ "9223372036854775807 * 2 == 0", 'E' }, { "-(-9223372036854775808) == 0", 'E' },
	{ "--9223372036854775808 == 0", 'E' }, { "-9223372036854775808 < 0", 'T' },
	{ "4611686018427387904 * 2 == 0", 'E' }, { "-4611686018427387904 * 2 == -9223372036854775808", 'T' },
	{ "1 + \"a\" == 2", 'E' }, { "-\"a\" == 1", 'E' },
	/* comparisons */
	{ "1 < 2", 'T' }, { "2 <= 2", 'T' }, { "3 > 2", 'T' }, { "2 >= 3", 'F' },
	{ "\"a\" < \"b\"", 'E' }, { "1 < \"b\"", 'E' }, { "decimal(\"1.0\") < decimal(\"2.0\")", 'E' },
	{ "datetime(\"2024-01-01\") < datetime(\"2024-01-02\")", 'T' },
	{ "duration(\"1h\") > duration(\"59m\")", 'T' },
	{ "duration(\"1h\") > datetime(\"2024-01-01\")", 'E' },
	/* equality never errors */
	{ "1 == \"1\"", 'F' }, { "[1, 2] == [2, 1, 1]", 'T' }, { "{a: 1, b: [2]} == {b: [2], a: 1}", 'T' },
	{ "{a: 1} == {a: 1, b: 2}", 'F' }, { "User::\"alice\" == User::\"alice\"", 'T' },
	{ "User::\"alice\" == Group::\"alice\"", 'F' }, { "principal == User::\"alice\"", 'T' },
	{ "decimal(\"1.0\") == decimal(\"1.00\")", 'T' }, { "ip(\"10.0.0.1\") == ip(\"10.0.0.1/32\")", 'T' },
	{ "ip(\"192.168.0.1/24\") == ip(\"192.168.0.8/24\")", 'F' }, { "ip(\"::1\") == ip(\"::1\")", 'T' },
	{ "decimal(\"1.0\") == 1", 'F' }, { "[ip(\"1.1.1.1\")] == [ip(\"1.1.1.1/32\")]", 'T' },
	/* in */
	{ "principal in Group::\"eng\"", 'T' }, { "principal in Group::\"all\"", 'T' },
	{ "principal in User::\"alice\"", 'T' }, { "principal in User::\"bob\"", 'F' },
	{ "principal in [Group::\"x\", Group::\"all\"]", 'T' }, { "principal in []", 'F' },
	{ "principal in [Group::\"all\", 1]", 'E' }, { "1 in Group::\"all\"", 'E' },
	{ "principal in 1", 'E' }, { "User::\"ghost\" in Group::\"all\"", 'F' },
	{ "User::\"ghost\" in User::\"ghost\"", 'T' }, { "action in Action::\"read\"", 'T' },
	{ "Group::\"eng\" in Group::\"eng\"", 'T' },
	/* has / attributes */
	{ "principal has age", 'T' }, { "principal has nope", 'F' }, { "principal.age == 30", 'T' },
	{ "principal.nope == 1", 'E' }, { "User::\"ghost\" has age", 'F' }, { "User::\"ghost\".age == 1", 'E' },
	{ "principal.addr.city == \"Paris\"", 'T' }, { "principal.addr has zip", 'T' },
	{ "principal.addr.nope == 1", 'E' }, { "principal has addr.city", 'T' },
	{ "principal has addr.nope", 'F' }, { "principal has nope.city", 'F' },
	{ "principal[\"age\"] == 30", 'T' }, { "context.n == 5", 'T' }, { "context has n", 'T' },
	{ "context has r.a.b", 'T' }, { "context.r.a.b == 1", 'T' }, { "1 has a", 'E' },
	{ "\"s\".length == 1", 'E' }, { "principal.boss == User::\"bob\"", 'T' },
	{ "principal.boss.nope == 1", 'E' }, { "principal.boss has nope", 'F' },
	{ "{a: 1}.a == 1", 'T' }, { "{a: 1} has b", 'F' },
	/* like */
	{ "\"ham\" like \"*h*a*m*\"", 'T' }, { "\"string*with*stars\" like \"string\\*with\\*stars\"", 'T' },
	{ "\"stringXwith\" like \"string\\*with\"", 'F' }, { "\"abc\" like \"a*c\"", 'T' },
	{ "\"abc\" like \"a*b\"", 'F' }, { "\"\" like \"*\"", 'T' }, { "\"\" like \"\"", 'T' },
	{ "\"aaa\" like \"*a*a*a*a\"", 'F' }, { "\"caf\xc3\xa9\" like \"caf*\"", 'T' },
	{ "1 like \"*\"", 'E' }, { "\"a*b\" like \"a*\\**\"", 'T' },
	/* is */
	{ "principal is User", 'T' }, { "principal is Group", 'F' },
	{ "principal is User in Group::\"all\"", 'T' }, { "principal is Group in Group::\"all\"", 'F' },
	{ "1 is User", 'E' },
	/* sets */
	{ "[1, 2].contains(2)", 'T' }, { "[1, 2].contains(\"2\")", 'F' }, { "1.contains(1)", 'E' },
	{ "context.n.contains(1)", 'E' }, { "[1, 2, 3].containsAll([1, 3])", 'T' },
	{ "[1].containsAll([1, 3])", 'F' }, { "[1].containsAny([3, 1])", 'T' }, { "[1].containsAny([])", 'F' },
	{ "[].containsAll([])", 'T' }, { "[1].containsAll(1)", 'E' }, { "[].isEmpty()", 'T' },
	{ "[1].isEmpty()", 'F' }, { "context.set.contains(3)", 'T' }, { "{a: 1}.isEmpty()", 'E' },
	{ "[[1, 2]].contains([2, 1])", 'T' }, { "[{a: 1}].contains({a: 1})", 'T' },
	/* tags */
	{ "principal.hasTag(\"level\")", 'T' }, { "principal.hasTag(\"x\")", 'F' },
	{ "principal.getTag(\"level\") == 3", 'T' }, { "principal.getTag(\"x\") == 3", 'E' },
	{ "User::\"ghost\".hasTag(\"level\")", 'F' }, { "User::\"ghost\".getTag(\"level\") == 1", 'E' },
	{ "principal.hasTag(1)", 'E' }, { "1.hasTag(\"a\")", 'E' },
	/* ip */
	{ "ip(\"127.0.0.1\").isLoopback()", 'T' }, { "ip(\"::1\").isLoopback()", 'T' },
	{ "ip(\"224.0.0.1\").isMulticast()", 'T' }, { "ip(\"10.0.0.1\").isIpv4()", 'T' },
	{ "ip(\"::ffff\").isIpv6()", 'T' }, { "ip(\"10.1.2.3\").isInRange(ip(\"10.0.0.0/8\"))", 'T' },
	{ "ip(\"10.0.0.0/8\").isInRange(ip(\"10.1.0.0/16\"))", 'F' },
	{ "ip(\"10.0.0.1\").isInRange(ip(\"::/0\"))", 'F' }, { "principal.ip.isInRange(ip(\"10.0.0.0/8\"))", 'T' },
	{ "ip(\"1.2.3\").isIpv4()", 'E' }, { "ip(\"01.2.3.4\").isIpv4()", 'E' },
	{ "ip(\"::ffff:1.2.3.4\").isIpv4()", 'E' }, { "ip(1).isIpv4()", 'E' },
	{ "ip(\"1.2.3.4\", \"x\").isIpv4()", 'E' }, { "1.isIpv4()", 'E' }, { "context.n.isIpv4()", 'E' },
	/* decimal */
	{ "decimal(\"1.23\").lessThan(decimal(\"1.24\"))", 'T' },
	{ "decimal(\"-1.5\").lessThanOrEqual(decimal(\"-1.5\"))", 'T' },
	{ "decimal(\"2.0\").greaterThan(decimal(\"1.9999\"))", 'T' },
	{ "decimal(\"1.0\").greaterThanOrEqual(decimal(\"1.00001\"))", 'E' },
	{ "decimal(\"1\").lessThan(decimal(\"2.0\"))", 'E' },
	{ "decimal(\"922337203685477.5807\").greaterThan(decimal(\"0.0\"))", 'T' },
	{ "decimal(\"922337203685477.5808\").greaterThan(decimal(\"0.0\"))", 'E' },
	{ "decimal(\"-0.5\").lessThan(decimal(\"0.0\"))", 'T' },
	{ "decimal(\"1.0\").lessThan(1)", 'E' },
	/* datetime, duration */
	{ "datetime(\"2024-02-29\").toDate() == datetime(\"2024-02-29\")", 'T' },
	{ "datetime(\"2023-02-29\") == datetime(\"2023-03-01\")", 'E' },
	{ "datetime(\"2024-01-01T10:00:00+0100\") == datetime(\"2024-01-01T09:00:00Z\")", 'T' },
	{ "datetime(\"2024-01-01T10:00:00.123Z\").toTime() == duration(\"10h123ms\")", 'T' },
	{ "datetime(\"1969-12-31T23:00:00Z\").toDate() == datetime(\"1969-12-31\")", 'T' },
	{ "datetime(\"2024-01-01\").offset(duration(\"1d\")) == datetime(\"2024-01-02\")", 'T' },
	{ "datetime(\"2024-01-02\").durationSince(datetime(\"2024-01-01\")) == duration(\"24h\")", 'T' },
	{ "datetime(\"2024-01-01 \") == datetime(\"2024-01-01\")", 'E' },
	{ "datetime(\"2024-01-01Z\") == datetime(\"2024-01-01\")", 'E' },
	{ "duration(\"4m70s\").toMinutes() == 5", 'T' }, { "duration(\"100ms\").toSeconds() == 0", 'T' },
	{ "duration(\"-1d\").toHours() == -24", 'T' }, { "duration(\"1d2h\").toMilliseconds() == 93600000", 'T' },
	{ "duration(\"2d\").toDays() == 2", 'T' }, { "duration(\"\") == duration(\"1s\")", 'E' },
	{ "duration(\"1s1m\") == duration(\"61s\")", 'E' }, { "duration(\"-\") == duration(\"0s\")", 'E' },
	{ "duration(\"9223372036854775807ms\") == duration(\"1ms\")", 'F' },
	{ "duration(\"9223372036854775808ms\") == duration(\"1ms\")", 'E' },
	{ "duration(\"106751991167d\") == duration(\"1ms\")", 'F' }, { "duration(\"106751991168d\") == duration(\"1ms\")", 'E' },
	{ "datetime(\"2024-01-01\").offset(duration(\"106751990000d\")) == datetime(\"2024-01-01\")", 'E' },
	{ "duration(\"1h\").toMinutes() == \"60\"", 'F' }, { "datetime(\"2024-01-01\").toDays() == 1", 'E' },
	/* records and sets built at run time, errors inside them */
	{ "{a: 1 + 9223372036854775807} == {}", 'E' }, { "[principal.nope] == []", 'E' },
	{ "{a: principal}.a.age == 30", 'T' },
	/* unknown context key, missing context record paths */
	{ "context.nope == 1", 'E' }, { "context has nope", 'F' },
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got = eval(cases[i].cond);
		if (got != cases[i].want)
			fprintf(stderr, "  case %zu: %s: want %c, got %c\n", i, cases[i].cond,
				cases[i].want, got);
		CHECK(got == cases[i].want);
	}
}

/* Authorization: forbid overrides, reasons, errors reported while others decide. */
static void test_authorize(void)
{
	const char *policies =
		"permit(principal, action, resource);\n"                                   /* 0 */
		"permit(principal in Group::\"eng\", action == Action::\"view\", resource);\n" /* 1 */
		"forbid(principal, action, resource) when { context.n > 10 };\n"           /* 2 */
		"forbid(principal, action, resource) when { context.nope };\n"             /* 3: errors */
		"forbid(principal == User::\"bob\", action, resource);\n"                 /* 4 */
		"permit(principal, action in [Action::\"read\"], resource is Doc);\n"       /* 5 */
		"permit(principal is Group, action, resource);\n";                        /* 6 */
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = load(policies, diags);
	struct dw_request *req = dw_request_new();
	struct dw_decision d;

	CHECK(eng != NULL);
	if (eng == NULL) {
		dw_diags_free(diags);
		dw_request_free(req);
		return;
	}
	dw_request_set_principal(req, "User", "alice", 5);
	dw_request_set_action(req, "Action", "view", 4);
	dw_request_set_resource(req, "Doc", "d", 1);
	dw_request_set_context_json(req, eng, "{\"n\": 5}", 8, NULL, 0);
	CHECK_EQ_INT(dw_authorize(eng, req, &d), 0);
	CHECK_EQ_INT(d.cedar, DW_ALLOW);
	CHECK_EQ_INT(d.n_reasons, 3);
	if (d.n_reasons == 3) {
		CHECK_EQ_STR(d.reasons[0].engine_id, "policy0");
		CHECK_EQ_STR(d.reasons[1].engine_id, "policy1");
		CHECK_EQ_STR(d.reasons[2].engine_id, "policy5");
	}
	CHECK_EQ_INT(d.n_errors, 1);
	if (d.n_errors == 1)
		CHECK_EQ_STR(d.errors[0].engine_id, "policy3");
	/* Box: an evaluation error denies as an internal fault */
	CHECK_EQ_INT(d.verdict, DW_DENY);
	CHECK_EQ_INT(d.cause, DW_CAUSE_INTERNAL_FAULT);
	dw_decision_clear(&d);

	dw_request_set_context_json(req, eng, "{\"n\": 50}", 9, NULL, 0);
	CHECK_EQ_INT(dw_authorize(eng, req, &d), 0);
	CHECK_EQ_INT(d.cedar, DW_DENY);
	CHECK_EQ_INT(d.n_reasons, 1);
	if (d.n_reasons == 1)
		CHECK_EQ_STR(d.reasons[0].engine_id, "policy2");
	dw_decision_clear(&d);

	/* an action outside every index: only unconstrained rules apply */
	dw_request_set_action(req, "Action", "other", 5);
	dw_request_set_context_json(req, eng, "{\"n\": 5}", 8, NULL, 0);
	CHECK_EQ_INT(dw_authorize(eng, req, &d), 0);
	CHECK_EQ_INT(d.n_reasons, 1);
	if (d.n_reasons == 1)
		CHECK_EQ_STR(d.reasons[0].engine_id, "policy0");
	dw_decision_clear(&d);

	dw_request_set_principal(req, "User", "bob", 3);
	dw_request_set_action(req, "Action", "read", 4);
	CHECK_EQ_INT(dw_authorize(eng, req, &d), 0);
	CHECK_EQ_INT(d.cedar, DW_DENY);
	CHECK_EQ_INT(d.n_reasons, 1);
	if (d.n_reasons == 1)
		CHECK_EQ_STR(d.reasons[0].engine_id, "policy4");
	dw_decision_clear(&d);

	dw_request_free(req);
	dw_engine_free(eng);
	dw_diags_free(diags);
}

/* Cedar allows U+0000 in attribute names; jansson's parser does not, so
 * dw_json_loadb maps them through U+FFFF.  Keys, values and ids all keep it. */
static void test_nul_keys(void)
{
	static const char ents[] = "[{\"uid\": {\"type\": \"U\", \"id\": \"a\\u0000\"}, "
		"\"attrs\": {\"k\\u0000\": 1, \"k\": 2, \"r\": {\"\\u0000\": \"\\u0000\"}}, \"parents\": []}]";
	static const char pol[] =
		"permit(principal, action, resource) when { principal[\"k\\0\"] == 1 && principal.k == 2 "
		"&& principal.r[\"\\0\"] == \"\\0\" && context[\"c\\0\"] == 3 };";
	struct dw_input pin = { "t.cedar", pol, strlen(pol), DW_FMT_CEDAR };
	struct dw_input ein = { "e.json", ents, strlen(ents), DW_FMT_JSON };
	struct dw_engine_config cfg = { 0 };
	struct dw_diags *d = dw_diags_new();
	struct dw_engine *eng = NULL;
	struct dw_request *req = dw_request_new();
	struct dw_decision dec;
	static const char ctx[] = "{\"c\\u0000\": 3, \"c\": 4}";
	static const char bad[] = "{\"\\u0000\": 1, \"\\uffff\": 2}";
	char err[256];

	cfg.policies = &pin;
	cfg.n_policies = 1;
	cfg.entities = &ein;
	cfg.n_entities = 1;
	cfg.flags = DW_NO_BOX_SCHEMA;
	CHECK_EQ_INT(dw_engine_new(&cfg, &eng, d), 0);
	if (eng == NULL) {
		dw_diags_free(d);
		dw_request_free(req);
		return;
	}
	dw_request_set_principal(req, "U", "a", 2);    /* "a\0" */
	dw_request_set_action(req, "Action", "x", 1);
	dw_request_set_resource(req, "R", "r", 1);
	CHECK_EQ_INT(dw_request_set_context_json(req, eng, ctx, strlen(ctx), err, sizeof err), 0);
	CHECK_EQ_INT(dw_authorize(eng, req, &dec), 0);
	CHECK_EQ_INT(dec.cedar, DW_ALLOW);
	dw_decision_clear(&dec);
	/* U+FFFF and U+0000 keys together would be ambiguous: refused */
	CHECK(dw_request_set_context_json(req, eng, bad, strlen(bad), err, sizeof err) != 0);
	dw_request_free(req);
	dw_engine_free(eng);
	dw_diags_free(d);
}

static const struct test_case tests[] = {
	{ "nul_keys", test_nul_keys },
	{ "cases", test_cases },
	{ "authorize", test_authorize },
};

TEST_MAIN(tests)
