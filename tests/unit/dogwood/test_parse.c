/* test_parse.c - the policy parser: precedence, desugaring, scopes, literals,
 * Dogwood additions, and every error path with its message and position. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policyset.h"
#include "test.h"
#include "value.h"
#include "temporal.h"
#include "tmacro.h"

/* S-expression of an expression, for compact assertions. */
static void sx(struct dw_buf *b, const struct dw_expr *e)
{
	static const char *const vars[] = { "principal", "action", "resource", "context" };

	switch (e->op) {
	case DW_E_LIT:
		dw_val_format(b, e->lit);
		return;
	case DW_E_VAR:
		dw_buf_printf(b, "%s", vars[e->var]);
		return;
	case DW_E_SLOT:
		dw_buf_printf(b, "?%s", e->var == DW_VAR_PRINCIPAL ? "principal" : "resource");
		return;
	case DW_E_NOT: dw_buf_printf(b, "(not "); sx(b, e->k.a); dw_buf_putc(b, ')'); return;
	case DW_E_NEG: dw_buf_printf(b, "(neg "); sx(b, e->k.a); dw_buf_putc(b, ')'); return;
	case DW_E_IF:
		dw_buf_printf(b, "(if ");
		sx(b, e->k.a); dw_buf_putc(b, ' ');
		sx(b, e->k.b); dw_buf_putc(b, ' ');
		sx(b, e->k.c); dw_buf_putc(b, ')');
		return;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN: {
		static const char *const ops[] = { [DW_E_AND] = "and", [DW_E_OR] = "or",
			[DW_E_EQ] = "eq", [DW_E_LT] = "lt", [DW_E_LE] = "le", [DW_E_ADD] = "add",
			[DW_E_SUB] = "sub", [DW_E_MUL] = "mul", [DW_E_IN] = "in" };
		dw_buf_printf(b, "(%s ", ops[e->op]);
		sx(b, e->k.a); dw_buf_putc(b, ' ');
		sx(b, e->k.b); dw_buf_putc(b, ')');
		return;
	}
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		dw_buf_printf(b, "(%s ", e->op == DW_E_HAS ? "has" : e->op == DW_E_ATTR ? "attr" : "is");
		sx(b, e->attr.e);
		dw_buf_printf(b, " %.*s)", (int)e->attr.name.n, e->attr.name.p);
		return;
	case DW_E_LIKE:
		dw_buf_printf(b, "(like ");
		sx(b, e->like.e);
		for (uint32_t i = 0; i < e->like.pat->n_pieces; i++)
			dw_buf_printf(b, "%s%.*s", i ? "*" : " ", (int)e->like.pat->piece[i].n,
				      e->like.pat->piece[i].p);
		dw_buf_putc(b, ')');
		return;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL:
		dw_buf_printf(b, "(%s", e->op == DW_E_SET ? "set" : e->op == DW_E_RECORD ? "rec" :
			      dw_fn_table[e->fn].name);
		for (uint32_t i = 0; i < e->n; i++) {
			dw_buf_putc(b, ' ');
			if (e->op == DW_E_RECORD)
				dw_buf_printf(b, "%.*s:", (int)e->list.keys[i].n, e->list.keys[i].p);
			sx(b, e->list.items[i]);
		}
		dw_buf_putc(b, ')');
		return;
	case DW_E_TEMPORAL:
		dw_buf_printf(b, "(temporal)");
		return;
	default:
		dw_buf_printf(b, "(?)");
	}
}

static struct dw_policy_set *parse(enum dw_dialect d, const char *src, struct dw_diags *diags)
{
	struct dw_policy_set *ps = dw_policy_set_new_temporal(d);

	dw_diags_init(diags);
	if (d == DW_DIALECT_DOGWOOD &&
	    dw_parse_macro_library(ps, "<lib>", dw_default_macros, strlen(dw_default_macros), diags) != 0)
		return ps;
	if (dw_parse_policies(ps, "t.cedar", src, strlen(src), diags) == 0)
		dw_policy_set_expand(ps, diags);
	return ps;
}

/* The folded condition of the single policy in `permit(principal, action,
 * resource) when { <expr> };`, as an S-expression. */
static char *cond_of(const char *expr)
{
	static char out[4096];
	char src[4096];
	struct dw_diags diags;
	struct dw_policy_set *ps;
	struct dw_buf b = { 0 };

	snprintf(src, sizeof src, "permit(principal, action, resource) when { %s };", expr);
	ps = parse(DW_DIALECT_CEDAR, src, &diags);
	if (diags.n_errors != 0 || ps->n_policies != 1) {
		snprintf(out, sizeof out, "ERROR %s", diags.n ? diags.v[0].msg : "?");
	} else {
		sx(&b, ps->policies[0]->cond);
		snprintf(out, sizeof out, "%s", b.p);
	}
	dw_buf_free(&b);
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);
	return out;
}

/* Parse src and expect an error whose message contains msg at line:col. */
static void expect_error(enum dw_dialect d, const char *src, const char *msg, unsigned line,
			 unsigned col)
{
	struct dw_diags diags;
	struct dw_policy_set *ps = parse(d, src, &diags);

	CHECK(diags.n_errors >= 1);
	if (diags.n_errors >= 1) {
		if (strstr(diags.v[0].msg, msg) == NULL)
			fprintf(stderr, "  message was: %s\n  for: %s\n", diags.v[0].msg, src);
		CHECK(strstr(diags.v[0].msg, msg) != NULL);
		if (line != 0) {
			CHECK_EQ_INT(diags.v[0].line, line);
			CHECK_EQ_INT(diags.v[0].col, col);
		}
	}
	/* nothing of a failed source is kept; a failed expansion leaves the set unusable */
	CHECK(ps->n_policies == 0 || !ps->expanded);
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);
}

static void test_precedence(void)
{
	CHECK_EQ_STR(cond_of("true || false && true"), "(or true (and false true))");
	CHECK_EQ_STR(cond_of("1 + 2 * 3 == 7"), "(eq (add 1 (mul 2 3)) 7)");
	CHECK_EQ_STR(cond_of("1 - 2 - 3 < 0"), "(lt (sub (sub 1 2) 3) 0)");
	CHECK_EQ_STR(cond_of("!true == false"), "(eq (not true) false)");
	CHECK_EQ_STR(cond_of("if true then 1 else 2 == 2"), "(if true 1 (eq 2 2))");
	CHECK_EQ_STR(cond_of("(if true then 1 else 2) == 2"), "(eq (if true 1 2) 2)");
	CHECK_EQ_STR(cond_of("1 != 2"), "(not (eq 1 2))");
	CHECK_EQ_STR(cond_of("1 > 2"), "(not (le 1 2))");
	CHECK_EQ_STR(cond_of("1 >= 2"), "(not (lt 1 2))");
	CHECK_EQ_STR(cond_of("1 <= 2 && 2 < 3"), "(and (le 1 2) (lt 2 3))");
	CHECK_EQ_STR(cond_of("principal in Group::\"g\" || false"),
		     "(or (in principal Group::\"g\") false)");
	CHECK_EQ_STR(cond_of("!!!!true"), "(not (not (not (not true))))");
}

static void test_literals(void)
{
	CHECK_EQ_STR(cond_of("-5 == 0"), "(eq -5 0)");
	CHECK_EQ_STR(cond_of("--5 == 0"), "(eq (neg -5) 0)");
	CHECK_EQ_STR(cond_of("-9223372036854775808 == 0"), "(eq -9223372036854775808 0)");
	CHECK_EQ_STR(cond_of("--9223372036854775808 == 0"), "(eq (neg -9223372036854775808) 0)");
	CHECK_EQ_STR(cond_of("9223372036854775807 == 0"), "(eq 9223372036854775807 0)");
	CHECK(strncmp(cond_of("9223372036854775808 == 0"), "ERROR", 5) == 0);
	CHECK(strncmp(cond_of("-9223372036854775809 == 0"), "ERROR", 5) == 0);
	CHECK(strncmp(cond_of("99999999999999999999999 == 0"), "ERROR integer parse error", 25) == 0);
	CHECK_EQ_STR(cond_of("-(5) == 0"), "(eq (neg 5) 0)");
	CHECK_EQ_STR(cond_of("\"a\\n\\t\\\\\\\"\\'\\0\" == \"\""), "(eq \"a\\n\\t\\\\\\\"'\\0\" \"\")");
	CHECK_EQ_STR(cond_of("\"\\x41\\u{42}\\u{1F600}\" == \"\""), "(eq \"AB\xF0\x9F\x98\x80\" \"\")");
	CHECK(strstr(cond_of("\"\\x80\" == \"\""), "is not a valid escape") != NULL);
	CHECK(strstr(cond_of("\"\\u{D800}\" == \"\""), "is not a valid escape") != NULL);
	CHECK(strstr(cond_of("\"\\u{110000}\" == \"\""), "is not a valid escape") != NULL);
	CHECK(strstr(cond_of("\"\\u{}\" == \"\""), "is not a valid escape") != NULL);
	CHECK(strstr(cond_of("\"\\*\" == \"\""), "`\\*` is not a valid escape") != NULL);
	CHECK_EQ_STR(cond_of("\"x\" like \"a*b\\*c*\""), "(like \"x\" a*b*c*)");
	CHECK_EQ_STR(cond_of("\"x\" like \"\""), "(like \"x\" )");
	CHECK_EQ_STR(cond_of("[1, 2, 1,] == [2, 1]"), "(eq (set 1 2 1) (set 2 1))");
	CHECK_EQ_STR(cond_of("{a: 1, \"b c\": 2,} == {}"), "(eq (rec a:1 b c:2) (rec))");
	CHECK(strstr(cond_of("{a: 1, a: 2} == {}"), "duplicate key") != NULL);
	CHECK_EQ_STR(cond_of("NS::Sub::User::\"a\\\"b\" == principal"),
		     "(eq NS::Sub::User::\"a\\\"b\" principal)");
	CHECK(strstr(cond_of("User::{a: 1} == principal"), "invalid entity literal: User::{") != NULL);
	CHECK(strstr(cond_of("__cedar::X::\"a\" == principal"), "reserved") != NULL);
}

static void test_members(void)
{
	CHECK_EQ_STR(cond_of("principal.a.b == context[\"c d\"]"),
		     "(eq (attr (attr principal a) b) (attr context c d))");
	CHECK_EQ_STR(cond_of("principal has a"), "(has principal a)");
	CHECK_EQ_STR(cond_of("principal has \"a b\""), "(has principal a b)");
	CHECK_EQ_STR(cond_of("principal has a.b.c"),
		     "(and (and (has principal a) (has (attr principal a) b)) "
		     "(has (attr (attr principal a) b) c))");
	CHECK_EQ_STR(cond_of("principal is NS::User"), "(is principal NS::User)");
	CHECK_EQ_STR(cond_of("principal is User in Group::\"g\""),
		     "(and (is principal User) (in principal Group::\"g\"))");
	CHECK_EQ_STR(cond_of("[1].contains(1) && [1].containsAll([]) && [1].isEmpty()"),
		     "(and (and (contains (set 1) 1) (containsAll (set 1) (set))) (isEmpty (set 1)))");
	CHECK_EQ_STR(cond_of("ip(\"1.2.3.4\").isInRange(ip(\"1.0.0.0/8\"))"),
		     "(isInRange (ip \"1.2.3.4\") (ip \"1.0.0.0/8\"))");
	CHECK_EQ_STR(cond_of("principal.getTag(\"t\") == 1 && principal.hasTag(\"t\")"),
		     "(and (eq (getTag principal \"t\") 1) (hasTag principal \"t\"))");
	CHECK_EQ_STR(cond_of("decimal(\"1.0\").lessThan(decimal(\"2.0\"))"),
		     "(lessThan (decimal \"1.0\") (decimal \"2.0\"))");
	CHECK_EQ_STR(cond_of("datetime(\"2024-01-01\").offset(duration(\"1h\")).toDate() == "
			     "datetime(\"2024-01-01\")"),
		     "(eq (toDate (offset (datetime \"2024-01-01\") (duration \"1h\"))) "
		     "(datetime \"2024-01-01\"))");
	/* extension arity is checked at evaluation, built-in method arity at parse */
	CHECK_EQ_STR(cond_of("ip(\"1.2.3.4\", \"x\").isIpv4()"), "(isIpv4 (ip \"1.2.3.4\" \"x\"))");
	CHECK(strstr(cond_of("[1].contains()"), "call to `contains` requires exactly 1 argument, but got 0 arguments") != NULL);
	CHECK(strstr(cond_of("[1].isEmpty(1)"), "call to `isEmpty` requires exactly 0 arguments, but got 1 argument") != NULL);
	CHECK(strstr(cond_of("[1].frobnicate()"), "`frobnicate` is not a valid method") != NULL);
	CHECK(strstr(cond_of("contains([1], 1)"), "is a method, not a function") != NULL);
	CHECK(strstr(cond_of("principal.ip()"), "is a function, not a method") != NULL);
	CHECK(strstr(cond_of("foo(1)"), "`foo` is not a valid function") != NULL);
	CHECK(strstr(cond_of("principal.a(1)"), "is not a valid method") != NULL);
	CHECK(strstr(cond_of("principal[principal]"), "invalid string literal: principal") != NULL);
	CHECK(strstr(cond_of("(principal)(1)"), "unexpected call") != NULL);
	CHECK(strstr(cond_of("x == 1"), "invalid variable: x") != NULL);
	CHECK(strstr(cond_of("1 < 2 < 3"), "multiple relational operators") != NULL);
	CHECK(strstr(cond_of("1 == 2 in 3"), "multiple relational operators") != NULL);
	CHECK(strstr(cond_of("1 < 2 has a"), "multiple relational operators") != NULL);
	CHECK(strstr(cond_of("1 / 2"), "division is not supported") != NULL);
	CHECK(strstr(cond_of("1 % 2"), "remainder/modulo is not supported") != NULL);
	CHECK(strstr(cond_of("1 = 2"), "'=' is not a valid operator") != NULL);
	CHECK(strstr(cond_of("!!!!!true"), "too many occurrences of `!`") != NULL);
	CHECK(strstr(cond_of("-----1 == 1"), "too many occurrences of `-`") != NULL);
	CHECK(strstr(cond_of("\"x\" like principal"), "must be a pattern literal") != NULL);
	CHECK(strstr(cond_of("principal is \"User\""), "entity type name") != NULL);
	CHECK(strstr(cond_of("?principal == principal"), "found template slot ?principal in a `when` clause") != NULL);
	CHECK(strstr(cond_of("?other == principal"), "not a valid template slot") != NULL);
}

static void test_scopes(void)
{
	struct dw_diags diags;
	struct dw_policy_set *ps;
	const struct dw_policy *p;

	ps = parse(DW_DIALECT_CEDAR,
		   "@id(\"a\") @description(\"d\") @flag\n"
		   "permit(principal is NS::User in NS::Group::\"g\", action in [Action::\"a\", "
		   "NS::Action::\"b\",], resource == Doc::\"x\",) when { true } unless { false };\n"
		   "forbid(principal == ?principal, action == Action::\"x\", resource in ?resource);\n"
		   "permit(principal, action, resource is Doc);",
		   &diags);
	CHECK_EQ_INT(diags.n_errors, 0);
	CHECK_EQ_INT(ps->n_policies, 3);
	if (ps->n_policies == 3) {
		p = ps->policies[0];
		CHECK_EQ_STR(p->engine_id, "policy0");
		CHECK_EQ_STR(p->id, "a");
		CHECK_EQ_STR(p->description, "d");
		CHECK_EQ_INT(p->n_annotations, 3);
		CHECK_EQ_INT(p->principal.kind, DW_SC_IS_IN);
		CHECK(dw_str_eq_c(p->principal.type, "NS::User"));
		CHECK(dw_str_eq_c(p->principal.uid->id, "g"));
		CHECK_EQ_INT(p->action.kind, DW_SC_IN_LIST);
		CHECK_EQ_INT(p->action.n_list, 2);
		CHECK_EQ_INT(p->resource.kind, DW_SC_EQ);
		CHECK_EQ_INT(p->n_conds, 2);
		CHECK(!p->is_template);
		p = ps->policies[1];
		CHECK_EQ_STR(p->engine_id, "policy1");
		CHECK_EQ_STR(p->id, "policy1");
		CHECK(p->is_template);
		CHECK(p->principal.slot && p->resource.slot);
		CHECK(p->cond == NULL);
		p = ps->policies[2];
		CHECK_EQ_INT(p->resource.kind, DW_SC_IS);
	}
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);

	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource) when {};",
		     "`when` condition clause cannot be empty", 1, 37);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource)", "expected", 1, 36);
	expect_error(DW_DIALECT_CEDAR, "allow(principal, action, resource);", "invalid policy effect", 1, 1);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource) if { true };",
		     "invalid policy condition", 1, 37);
	expect_error(DW_DIALECT_CEDAR, "permit(action, principal, resource);", "expected `principal`", 1, 8);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action);", "missing the `resource`", 0, 0);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource, context);",
		     "extra element in the scope", 1, 37);
	expect_error(DW_DIALECT_CEDAR, "permit(principal : User, action, resource);",
		     "type constraints using `:` are not supported", 1, 8);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action is Action, resource);",
		     "`is` cannot appear in the action scope", 1, 19);
	expect_error(DW_DIALECT_CEDAR, "permit(principal is User == User::\"a\", action, resource);",
		     "`is` cannot be used together with `==`", 1, 8);
	expect_error(DW_DIALECT_CEDAR, "permit(principal = User::\"a\", action, resource);",
		     "did you mean `==`", 1, 18);
	expect_error(DW_DIALECT_CEDAR, "permit(principal < User::\"a\", action, resource);",
		     "scope only allows `==` or `in`", 1, 18);
	expect_error(DW_DIALECT_CEDAR, "permit(principal == ?resource, action, resource);",
		     "expected principal slot", 1, 21);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action == User::\"a\", resource);",
		     "type `Action`", 1, 29);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action in [Action::\"a\", 1], resource);",
		     "action reference", 1, 43);
	expect_error(DW_DIALECT_CEDAR, "permit(principal == 1, action, resource);",
		     "expected an entity reference", 1, 21);
	expect_error(DW_DIALECT_CEDAR, "@id(\"a\") @id(\"b\") permit(principal, action, resource);",
		     "duplicate annotation", 1, 10);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource); @id(\"x\")",
		     "annotations must be followed by a policy", 0, 0);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource) when { \"abc };",
		     "unterminated string", 1, 44);
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource) when { # };",
		     "invalid token", 1, 44);
	/* a later error leaves nothing of the source, even parsed rules */
	expect_error(DW_DIALECT_CEDAR, "permit(principal, action, resource);\n"
		     "permit(principal, action, resource) when { 1 + };", "expected", 2, 48);
}

static void test_dogwood(void)
{
	struct dw_diags diags;
	struct dw_policy_set *ps;

	ps = parse(DW_DIALECT_DOGWOOD,
		   "// comment\n"
		   "def cedar is_prog(?i, ?p) { ?i.program == ?p };\n"
		   "permit(resource, principal) when guardrails { is_prog(context.input, \"git\") };\n"
		   "forbid(action == Box::Action::\"fs:read\", principal)\n"
		   "  when temporal { formerly within 1h Box::Action::\"fs:read\"::request{ input.path: _ } }\n"
		   "  unless { temporal { previous within 5m Box::Action::\"fs:read\"::request{} } };\n",
		   &diags);
	CHECK_EQ_INT(diags.n_errors, 0);
	if (diags.n_errors)
		fprintf(stderr, "  %s\n", diags.v[0].msg);
	CHECK_EQ_INT(ps->n_policies, 2);
	if (ps->n_policies == 2) {
		struct dw_buf b = { 0 };
		CHECK_EQ_STR(ps->policies[0]->engine_id, "policy_0");
		sx(&b, ps->policies[0]->cond);
		CHECK_EQ_STR(b.p, "(eq (attr (attr context input) program) \"git\")");
		dw_buf_free(&b);
		CHECK(ps->policies[1]->has_temporal);
		CHECK_EQ_INT(ps->policies[1]->conds[0].kind, DW_COND_TEMPORAL);
		CHECK_EQ_INT(ps->policies[1]->action.kind, DW_SC_EQ);
	}
	CHECK(ps->n_macros >= 5);   /* the four library macros and is_prog */
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);

	expect_error(DW_DIALECT_DOGWOOD, "permit(principal, principal);", "duplicate `principal` in scope", 1, 19);
	expect_error(DW_DIALECT_DOGWOOD, "permit(subject);", "unexpected scope variable `subject`", 1, 8);
	expect_error(DW_DIALECT_DOGWOOD, "allow(principal);", "policy effect must be `permit` or `forbid`, found `allow`", 1, 1);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) if { true };",
		     "condition keyword must be `when` or `unless`, found `if`", 1, 19);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when { Ns::Fn(1) };",
		     "information providers are not enabled in this build", 1, 26);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when { nope(1) };",
		     "unknown function or macro `nope`", 1, 26);
	expect_error(DW_DIALECT_DOGWOOD, "def cedar m(?a) { ?a };\npermit(principal) when { m(1, 2) };",
		     "macro `m` expects 1 argument(s), got 2", 2, 26);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when { count_within(1, 2) };",
		     "is a temporal macro and cannot be called in a cedar expression position", 1, 26);
	expect_error(DW_DIALECT_DOGWOOD, "def cedar m(?a) { ?b };", "`?b` does not name a declared parameter", 1, 19);
	expect_error(DW_DIALECT_DOGWOOD, "def cedar count(?a) { ?a };", "macro name `count` is reserved", 1, 11);
	expect_error(DW_DIALECT_DOGWOOD, "def cedar m(?a) { ?a };\ndef cedar m(?a) { ?a };",
		     "duplicate macro definition `m`", 2, 1);
	expect_error(DW_DIALECT_DOGWOOD, "def cedar m(?a) { n(?a) };", "macro-in-macro is not supported", 1, 19);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when { ?x };", "stray macro parameter reference `?x`", 1, 26);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when temporal { formerly within 1h };", "", 0, 0);
	expect_error(DW_DIALECT_DOGWOOD, "permit(principal) when temporal { formerly within 1h X::\"a\"::request{} ",
		     "unclosed `{`", 1, 33);

	/* a file's def overrides the library's of the same name */
	ps = parse(DW_DIALECT_DOGWOOD, "def cedar bind(?a) { ?a == 1 };\npermit(principal) when { bind(1) };",
		   &diags);
	CHECK_EQ_INT(diags.n_errors, 0);
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);
}

static void test_deep_nesting(void)
{
	size_t n = 100000;
	char *src = malloc(n * 2 + 100);
	struct dw_diags diags;
	struct dw_policy_set *ps;
	char *p = src;

	p += sprintf(p, "permit(principal, action, resource) when { ");
	memset(p, '(', n);
	p += n;
	p += sprintf(p, "true");
	memset(p, ')', n);
	p += n;
	sprintf(p, " };");
	ps = parse(DW_DIALECT_CEDAR, src, &diags);
	CHECK_EQ_INT(diags.n_errors, 1);
	CHECK(diags.n && strstr(diags.v[0].msg, "nesting") != NULL);
	dw_diags_fini(&diags);
	dw_policy_set_free(ps);
	free(src);
}

/* The Cedar core parses a temporal block only through the parser its set carries
 * (docs/engine.md, "Layers"); a Dogwood set made without one refuses the block, so a
 * rule never loads with its history condition dropped. */
static void test_temporal_needs_its_layer(void)
{
	static const char rule[] = "permit(principal, action, resource) when { temporal { "
				   "formerly within 5m Box::Action::\"fs:read\"::request"
				   "{ input.path like \"*/.env\" } } };";
	static const char def[] = "def temporal t(?w) { formerly within ?w "
				  "Box::Action::\"fs:read\"::request{ input.path like \"*/.env\" } };";
	const char *srcs[] = { rule, def };

	for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
		struct dw_diags diags;
		struct dw_policy_set *ps = dw_policy_set_new(DW_DIALECT_DOGWOOD);

		dw_diags_init(&diags);
		CHECK_EQ_INT(dw_parse_policies(ps, "t.dw", srcs[i], strlen(srcs[i]), &diags), -EINVAL);
		CHECK_EQ_INT(ps->n_policies, 0);
		CHECK(diags.n == 1 && strstr(diags.v[0].msg, "dw_policy_set_new_temporal") != NULL);
		dw_diags_fini(&diags);
		dw_policy_set_free(ps);

		ps = dw_policy_set_new_temporal(DW_DIALECT_DOGWOOD);
		dw_diags_init(&diags);
		CHECK_EQ_INT(dw_parse_policies(ps, "t.dw", srcs[i], strlen(srcs[i]), &diags), 0);
		dw_diags_fini(&diags);
		dw_policy_set_free(ps);
	}
}

static const struct test_case tests[] = {
	{ "precedence", test_precedence },
	{ "literals", test_literals },
	{ "members", test_members },
	{ "scopes", test_scopes },
	{ "dogwood", test_dogwood },
	{ "deep_nesting", test_deep_nesting },
	{ "temporal_needs_its_layer", test_temporal_needs_its_layer },
};

TEST_MAIN(tests)
