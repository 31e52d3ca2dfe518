/* test_tcheck.c - load-time checks of temporal leaves (src/dogwood/temporal/tcheck.c).
 *
 * Policies are parsed with the default macro library and expanded, as the
 * engine does, then checked: dw_tcheck_accept (the acceptance rules, no schema)
 * and dw_tcheck_validate (the schema checks, against the Box action schema and Box's default
 * event schema).  Every rejection is asserted by its exact message and its
 * line:col, which the tests name by the text the diagnostic must point at.
 * Most acceptance cases restate the reference's own tests (temporal check.rs) in the
 * Box vocabulary. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "evschema.h"
#include "policyset.h"
#include "schema.h"
#include "tcheck.h"
#include "temporal.h"
#include "tmacro.h"
#include "tplan.h"
#include "box_rules.h"

/* Predicates of the Box vocabulary, as C string pieces. */
#define CONNECT "Box::Action::\"net:connect\"::request"
#define CONNECTED "Box::Action::\"net:connect\"::response"
#define HTTP "Box::Action::\"http:request\"::request"
#define HTTPR "Box::Action::\"http:request\"::response"
#define READ "Box::Action::\"fs:read\"::request"

/* A rule around a leaf: the leaf starts on line 2, column 3. */
#define RULE_HEAD                                                                   \
	"permit (principal, action == Box::Action::\"http:request\", resource)\nwhen " \
	"temporal {\n  "
#define RULE_TAIL "\n};\n"

/* Dogwood's sentence after a window over the cap, which Box shows whole. */
#define WINDOW_FIX(cap) " set by the event schema's `max_window`; shorten this window to at " \
	"most `" cap "`, or raise `max_window` in the event schema"

/* --- harness ----------------------------------------------------------------------- */

static struct dw_schema *box_schema;
static struct dw_evschema *box_events;

static void print_diags(const struct dw_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "    %s:%u:%u: %s\n", d->v[i].file, d->v[i].line, d->v[i].col,
			d->v[i].msg);
}

static const struct dw_schema *schema(void)
{
	struct dw_diags d;

	if (box_schema != NULL)
		return box_schema;
	dw_diags_init(&d);
	box_schema = dw_schema_new();
	if (box_schema == NULL || dw_schema_add_box(box_schema, &d) != 0 ||
	    dw_schema_finish(box_schema, &d) != 0) {
		fprintf(stderr, "  the Box schema does not load\n");
		print_diags(&d);
		abort();
	}
	dw_diags_fini(&d);
	return box_schema;
}

/* An event schema derived against the Box action schema: the default one when
 * text is NULL. */
static struct dw_evschema *events_of(const char *text)
{
	struct dw_evschema_src *src = NULL;
	struct dw_evschema *es = NULL;
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = text == NULL ? dw_evschema_default(&src)
			 : dw_evschema_parse("events.dwschema", text, strlen(text), &src, &d);
	if (r == 0)
		r = dw_evschema_derive(src, schema(), &es, &d);
	dw_evschema_src_free(src);
	if (r != 0) {
		fprintf(stderr, "  event schema does not derive (%d)\n", r);
		print_diags(&d);
		abort();
	}
	dw_diags_fini(&d);
	return es;
}

static const struct dw_evschema *events(void)
{
	if (box_events == NULL)
		box_events = events_of(NULL);
	return box_events;
}

/* Parse and expand src as the engine does; NULL when it does not load, with
 * the diagnostics in *keep (or printed when keep is NULL). */
static struct dw_policy_set *load_into(const char *src, struct dw_diags *keep)
{
	struct dw_policy_set *ps = dw_policy_set_new_temporal(DW_DIALECT_DOGWOOD);
	struct dw_diags d;
	int r;

	if (keep != NULL) {
		r = ps == NULL ? -ENOMEM
			       : dw_parse_macro_library(ps, "<default macros>", dw_default_macros,
							strlen(dw_default_macros), keep);
		if (r == 0)
			r = dw_parse_policies(ps, "policy.dw", src, strlen(src), keep);
		if (r == 0)
			r = dw_policy_set_expand(ps, keep);
		if (r != 0) {
			dw_policy_set_free(ps);
			ps = NULL;
		}
		return ps;
	}
	dw_diags_init(&d);
	r = ps == NULL ? -ENOMEM
		       : dw_parse_macro_library(ps, "<default macros>", dw_default_macros,
						strlen(dw_default_macros), &d);
	if (r == 0)
		r = dw_parse_policies(ps, "policy.dw", src, strlen(src), &d);
	if (r == 0)
		r = dw_policy_set_expand(ps, &d);
	if (r != 0) {
		fprintf(stderr, "  does not load (%d):\n%s\n", r, src);
		print_diags(&d);
		dw_policy_set_free(ps);
		ps = NULL;
	}
	dw_diags_fini(&d);
	return ps;
}

static struct dw_policy_set *load(const char *src)
{
	return load_into(src, NULL);
}

enum pass { ACCEPT, VALIDATE };

/* Run one pass over src; rc of the pass (or 1 when src does not load). */
static int run(enum pass pass, const char *src, const struct dw_evschema *es,
	       struct dw_diags *d)
{
	struct dw_policy_set *ps = load(src);
	int r;

	if (ps == NULL)
		return 1;
	r = pass == ACCEPT ? dw_tcheck_accept(ps, d) : dw_tcheck_validate(ps, schema(), es, d);
	dw_policy_set_free(ps);
	return r;
}

/* Line and column (1-based, ASCII text) of the n-th (from 1) occurrence of
 * needle in src. */
static bool where(const char *src, const char *needle, int nth, uint32_t *line, uint32_t *col)
{
	const char *p = src;

	for (int k = 0; k < nth; k++) {
		p = strstr(k == 0 ? p : p + 1, needle);
		if (p == NULL)
			return false;
	}
	*line = 1;
	*col = 1;
	for (const char *q = src; q < p; q++) {
		if (*q == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
	return true;
}

/* The pass accepts src with no diagnostic. */
static void ok_src(enum pass pass, const char *src, const struct dw_evschema *es)
{
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = run(pass, src, es, &d);
	if (r != 0 || d.n != 0) {
		fprintf(stderr, "  %s refused (%d):\n%s\n", pass == ACCEPT ? "accept" : "validate",
			r, src);
		print_diags(&d);
	}
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_INT(d.n, 0);
	dw_diags_fini(&d);
}

/* The pass refuses src with n diagnostics, one of which is msg at the nth
 * occurrence of needle, marked with rule index `rule`. */
static void err_src(enum pass pass, const char *src, const struct dw_evschema *es, size_t n,
		    const char *msg, const char *needle, int nth, uint32_t rule)
{
	struct dw_diags d;
	uint32_t line = 0, col = 0;
	bool found = false;
	int r;

	dw_diags_init(&d);
	r = run(pass, src, es, &d);
	CHECK(where(src, needle, nth, &line, &col));
	for (size_t i = 0; i < d.n && !found; i++) {
		const struct dw_diag *g = &d.v[i];
		found = strcmp(g->msg, msg) == 0 && g->line == line && g->col == col &&
			g->policy == rule + 1 && g->sev == DW_SEV_ERROR &&
			strcmp(g->file, "policy.dw") == 0;
	}
	if (r != -EINVAL || d.n != n || !found) {
		fprintf(stderr, "  %s: want rc -EINVAL, %zu diagnostic(s), `%s` at %u:%u, got "
				"%d:\n%s\n",
			pass == ACCEPT ? "accept" : "validate", n, msg, line, col, r, src);
		print_diags(&d);
	}
	CHECK_EQ_INT(r, -EINVAL);
	CHECK_EQ_INT(d.n, n);
	CHECK(found);
	dw_diags_fini(&d);
}

static char *leaf_rule(const char *leaf)
{
	size_t n = strlen(RULE_HEAD) + strlen(leaf) + strlen(RULE_TAIL) + 1;
	char *s = malloc(n);

	if (s == NULL)
		abort();
	snprintf(s, n, "%s%s%s", RULE_HEAD, leaf, RULE_TAIL);
	return s;
}

/* A leaf both passes accept. */
static void ok(const char *leaf)
{
	char *src = leaf_rule(leaf);

	ok_src(ACCEPT, src, NULL);
	ok_src(VALIDATE, src, events());
	free(src);
}

static void accept_ok(const char *leaf)
{
	char *src = leaf_rule(leaf);

	ok_src(ACCEPT, src, NULL);
	free(src);
}

/* Acceptance refuses the leaf with msg at the nth needle. */
static void acc_err_n(const char *leaf, const char *msg, const char *needle, int nth)
{
	char *src = leaf_rule(leaf);

	err_src(ACCEPT, src, NULL, 1, msg, needle, nth, 0);
	free(src);
}

static void acc_err(const char *leaf, const char *msg, const char *needle)
{
	acc_err_n(leaf, msg, needle, 1);
}

/* Validation (default events) finds msg at the nth needle, among n findings. */
static void val_err_n(const char *leaf, size_t n, const char *msg, const char *needle, int nth)
{
	char *src = leaf_rule(leaf);

	err_src(VALIDATE, src, events(), n, msg, needle, nth, 0);
	free(src);
}

static void val_err(const char *leaf, const char *msg, const char *needle)
{
	val_err_n(leaf, 1, msg, needle, 1);
}

/* --- acceptance messages -------------------------------------------------------------- */

#define MSG_FREE(x)                                                                            \
	"variable `" x "` is free in this temporal condition (bound by no `exists` binder or "    \
	"aggregation `for` list); a temporal condition must be closed — wrap it as `exists (" x \
	": <type>). (…)`, or use `*` to match any value"
#define MSG_EXISTS_RR(x)                                                                       \
	"existential variable `" x "` is not range-restricted by any positive atom in the "       \
	"`exists` body; bind it with a predicate field (`P{ f: " x " }`), a `tp(" x ")`, or an "  \
	"equality (`(count …) == " x "`)"
#define MSG_FILTER(x)                                                                          \
	"variable `" x "` is used in a filter (a comparison or negation) that is not "            \
	"range-restricted by a preceding conjunct; place a conjunct that binds `" x "` (a "       \
	"predicate, `tp`, or a binding equality) before it"
#define MSG_EQ_READS(n, u)                                                                     \
	"the equality binding `" n "` reads `" u "` inside its aggregate operand (`" u "` is "    \
	"used in the aggregation body but not bound by its `for` list), and `" u "` is not "      \
	"range-restricted by a preceding conjunct; place the conjunct that binds `" u "` before " \
	"the equality, widening the `exists` scope if needed"
#define MSG_SINCE_LEFT(u)                                                                      \
	"variable `" u "` is used in the left operand of a `since` but is restricted neither by " \
	"the `since` anchor (its right operand) nor by a preceding conjunct; the left of a "      \
	"`since` is a per-step condition and cannot bind `" u "` — restrict it in the anchor or " \
	"in a conjunct before the `since`"
#define MSG_SUMMAND(v, list)                                                                   \
	"aggregation sums `" v "`, which is not one of its `for` binders (" list "); the summed " \
	"variable must appear in the `for` list (the sum is computed over the `for` columns)"
#define MSG_AGG_FREE(u, list)                                                                  \
	"variable `" u "` is used in the aggregation body but is bound by neither the `for` list " \
	"(" list ") nor an enclosing binder; add it to the `for` list"
#define MSG_FOR_UNUSED(g, list)                                                                \
	"`for`-variable `" g "` does not occur in the aggregation body (" list "); a group-by "   \
	"variable must be used in the `where` body, otherwise the grouping ranges over an "       \
	"unbounded domain"
#define MSG_FOR_RR(g)                                                                          \
	"aggregation `for`-variable `" g "` is not range-restricted by any positive atom in the " \
	"`where` body; bind it with a predicate field (`P{ f: " g " }`), a `tp(" g ")`, or an "   \
	"equality (`(count …) == " g "`) — an occurrence under a negation or in the left "        \
	"operand of a `since` does not restrict"
#define MSG_AGG_POS                                                                            \
	"an aggregate (`sum`/`count`) may appear only as the immediate operand of a comparison, " \
	"not as a predicate-argument value or nested in another term"
#define MSG_RESERVED(x)                                                                        \
	"`" x "` is a reserved word and cannot be used as a binder name; `principal`, `action`, " \
	"`resource`, and `context` are the Cedar request variables — rename the `exists` / "      \
	"`for` / `tp` variable"

/* --- acceptance summary: every accepted shape passes both checks ----------------------- */

static void test_accepted_shapes(void)
{
	/* P{…} */
	ok(CONNECT "{ input.host: \"a.example\", input.port: 443 }");
	ok(HTTP "{}");
	/* formerly W A, previous W A */
	ok("formerly within 1h " CONNECTED "{ input.host: context.input.host }");
	ok("previous within 10s " CONNECTED "{ input.host: context.input.host }");
	/* A && !B */
	ok("formerly within 1h " CONNECTED "{ input.host: \"a\" } && !formerly within 10m "
	   CONNECTED "{ input.host: \"b\" }");
	/* !X since W Y */
	ok("!" HTTP "{ input.method: \"DELETE\" } since within 15m " HTTPR
	   "{ output.status: 200 }");
	ok("!( (!" HTTP "{ input.method: \"GET\" }) since within 15m " HTTPR "{ output.status: 0 } "
									     ")");
	/* exists (n: Long). ((AGG) == n && n OP k) */
	ok("exists (n: Long). ((count for (t: Timepoint). where formerly within 1h (" HTTP "{} && "
	   "tp(t))) == n && n >= 3)");
	ok("exists (n: Long). ((sum b for (b: Long), (t: Timepoint). where formerly within 1h ("
	   HTTPR "{ input.body_bytes: b } && tp(t))) == n && n > 1000)");
	/* AGG OP AGG */
	ok("(count for (t: Timepoint). where formerly within 1h (" HTTP "{ input.method: \"POST\" "
	   "} && tp(t))) > (count for (t: Timepoint). where formerly within 1h (" HTTP "{ "
	   "input.method: \"GET\" } && tp(t)))");
	/* AGG OP k, distinct values, the stdlib macros */
	ok("(count for (h: String). where formerly within 1h " CONNECT "{ input.host: h }) >= 4");
	ok("count_within(1h, " HTTP "{ input.host: \"a\" }) >= 3");
	ok("sum_within(b, 1h, " HTTPR "{ input.body_bytes: b }) > 10");
	ok("count_distinct_within(h, 1h, " CONNECT "{ input.host: h }) < 5");
	ok("bind(n, count_within(10m, " HTTP "{}), n > 2)");
	/* `like` on a String field, with a literal star */
	ok(READ "{ input.path like \"~/data/\\*/*\" }");
	/* scope and context terms, entities and enums */
	ok(READ "{ input.operation: Box::FsReadOperation::\"read_content\", callerPrincipal: "
	   "principal, callerResource: Box::Resource::\"unused\" }");
	ok("formerly within 1d " CONNECT "{ input.host: context.input.host } && formerly within "
					 "24h "
	   HTTP "{ input.port: context.input.port }");
}

/* --- acceptance rules (docs/policy-reference.md §3.6) -------------------------------------- */

static void test_exists_safety(void)
{
	accept_ok("exists (x: String). " CONNECT "{ input.host: x }");
	accept_ok("exists (t: Timepoint). tp(t)");
	accept_ok("exists (x: Long). (x == 5)");
	accept_ok("!exists (x: String). " CONNECT "{ input.host: x }");
	accept_ok("exists (x: String). formerly within 1h " CONNECT "{ input.host: x }");
	acc_err("exists (x: Long). (0 < x && x < 2)", MSG_EXISTS_RR("x"), "x: ");
	acc_err("exists (x: String). !" CONNECT "{ input.host: x }", MSG_EXISTS_RR("x"), "x: ");
	acc_err("exists (x: String). !(!(formerly within 1h " CONNECT "{ input.host: x }))",
		MSG_EXISTS_RR("x"), "x: ");
	accept_ok("exists (x: String). (formerly within 1h " CONNECT "{ input.host: x } && !(!("
		  "formerly within 1h " CONNECT "{ input.host: x })))");
	/* a wildcard is no value: `x == *` binds nothing */
	acc_err("exists (x: String). (x == *)", MSG_EXISTS_RR("x"), "x: ");
	acc_err("exists (a: Long). (a == * && a > 100)", MSG_EXISTS_RR("a"), "a: ");
}

static void test_nested_exists(void)
{
	accept_ok("exists (v: String). exists (g: String). " CONNECT "{ input.host: v, input.ip: g "
								     "}");
	acc_err("exists (v: String). exists (g: String). " CONNECT "{ input.ip: g }",
		MSG_EXISTS_RR("v"), "v: ");
	accept_ok("exists (v: String). exists (g: String). formerly within 1h " CONNECT "{ "
		  "input.host: v, input.ip: g }");
	accept_ok("exists (v: String). exists (g: String). (" HTTP "{} since within 1h " CONNECT
		  "{ input.host: v, input.ip: g })");
	acc_err("exists (v: String). exists (g: String). (" CONNECT "{ input.host: v } since "
		"within 1h " HTTP "{ input.host: g })", MSG_EXISTS_RR("v"), "v: ");
	accept_ok("exists (v: String). exists (g: String). exists (h: String). " HTTP "{ "
		  "input.host: v, input.method: g, input.path: h }");
	acc_err("exists (v: String). exists (v: String). " CONNECT "{ input.host: v }",
		MSG_EXISTS_RR("v"), "v: ");
	accept_ok("exists (v: String). (" CONNECT "{ input.host: v } && exists (v: String). " HTTP
		  "{ input.host: v })");
	acc_err_n("exists (v: String). (" CONNECT "{ input.host: v } && exists (v: String). " HTTP
		  "{})", MSG_EXISTS_RR("v"), "v: ", 2);
	accept_ok("exists (v: String). exists (g: String). (" CONNECT "{ input.host: v } && " HTTP
		  "{ input.host: g })");
	acc_err("exists (v: String). exists (g: String). (" HTTP "{ input.host: g } && !" CONNECT
		"{ input.host: v })", MSG_EXISTS_RR("v"), "v: ");
}

static void test_closed(void)
{
	acc_err("formerly within 1h " HTTP "{ input.body_bytes: a } && a > 100", MSG_FREE("a"),
		"a }");
	acc_err("formerly within 1h " CONNECT "{ input.host: u } && !(formerly within 1h " HTTP
		"{ input.host: u })", MSG_FREE("u"), "u }");
	acc_err("formerly within 1h " CONNECT "{ input.host: u }", MSG_FREE("u"), "u }");
	acc_err("formerly within 1h (" CONNECT "{} && tp(t))", MSG_FREE("t"), "t)");
	acc_err("count_within(1h, " HTTP "{}) == nn", MSG_FREE("nn"), "nn");
	/* the first free variable in source order */
	acc_err(HTTP "{ input.host: b, input.path: a }", MSG_FREE("b"), "b,");
	accept_ok("formerly within 1h " CONNECT "{ input.host: context.input.host } && !" CONNECT
		  "{ input.host: context.input.host }");
	accept_ok("formerly within 1h " CONNECT "{ input.host: * }");
	accept_ok(CONNECT "{ input.host: _ }");
	/* refinements are predicate fields */
	acc_err("formerly within 1h " HTTP "{ input.host: context.input.host }{ input.path: x }",
		MSG_FREE("x"), "x }");
	accept_ok("exists (x: String). formerly within 1h " HTTP "{ input.host: context.input.host "
		  "}{ input.path: x }");
}

static void test_demands(void)
{
	accept_ok("exists (a: Long). (formerly within 1h " HTTP "{ input.body_bytes: a } && a > "
								"100)");
	acc_err("exists (a: Long). (a > 100 && formerly within 1h " HTTP "{ input.body_bytes: a })",
		MSG_FILTER("a"), "a > 100");
	accept_ok("exists (a: Long). (formerly within 1h " HTTP "{ input.body_bytes: a } && a > "
		  "100 && formerly within 1h " CONNECT "{})");
	accept_ok("exists (u: String). (formerly within 1h " CONNECT "{ input.host: u } && "
		  "!formerly within 1h " HTTP "{ input.host: u })");
	acc_err("exists (u: String). (!formerly within 1h " HTTP "{ input.host: u } && formerly "
		"within 1h " CONNECT "{ input.host: u })", MSG_FILTER("u"), "!formerly");
	accept_ok("exists (n: Long). ((count for (t: Timepoint). where (formerly within 1h ("
		  CONNECT "{} && tp(t)))) == n && n > 0)");
	/* `!=` is a filter */
	acc_err("exists (a: Long). (a != 5 && formerly within 1h " HTTP "{ input.body_bytes: a })",
		MSG_FILTER("a"), "a != 5");
	accept_ok("exists (a: Long). (formerly within 1h " HTTP "{ input.body_bytes: a } && "
		  "a != 5)");
	/* parenthesised sub-chains are part of the chain */
	accept_ok("exists (a: Long). (formerly within 1h " HTTP "{ input.body_bytes: a } && (a > "
		  "100 && formerly within 1h " CONNECT "{}))");
	acc_err("exists (a: Long). ((a > 100 && formerly within 1h " HTTP "{ input.body_bytes: a "
		"}) && formerly within 1h " CONNECT "{})", MSG_FILTER("a"), "a > 100");
}

static void test_demands_binding(void)
{
	const char *agg_u = "(count for (t: Timepoint). where (formerly within 1h (" CONNECT
			    "{ input.host: u } && tp(t))))";
	char leaf[2048];

	snprintf(leaf, sizeof leaf, "exists (u: String). exists (n: Long). (%s == n && n >= 2 && "
		 "formerly within 1h " CONNECT "{ input.host: u })", agg_u);
	acc_err(leaf, MSG_EQ_READS("n", "u"), "(count");
	snprintf(leaf, sizeof leaf, "exists (u: String). exists (n: Long). (formerly within 1h "
		 CONNECT "{ input.host: u } && %s == n && n >= 2)", agg_u);
	accept_ok(leaf);
	/* seeded from the enclosing chain */
	snprintf(leaf, sizeof leaf, "exists (u: String). (formerly within 1h " CONNECT "{ "
		 "input.host: u } && exists (n: Long). (%s == n && n >= 2))", agg_u);
	accept_ok(leaf);
	snprintf(leaf, sizeof leaf, "exists (u: String). (exists (n: Long). (%s == n && n >= 2) "
		 "&& formerly within 1h " CONNECT "{ input.host: u })", agg_u);
	acc_err(leaf, MSG_EQ_READS("n", "u"), "(count");
	/* a shadowing binder cuts what the enclosing chain restricted */
	acc_err("exists (u: String). (formerly within 1h " CONNECT "{ input.host: u } && exists "
		"(u: String). exists (n: Long). ((count for (t: Timepoint). where (formerly "
		"within 1h ("
		HTTP "{ input.host: u } && tp(t)))) == n && n >= 1 && formerly within 1h " HTTP
		"{ input.host: u }))", MSG_EQ_READS("n", "u"), "(count");
	/* self-reference: nothing precedes the equality */
	acc_err("exists (u: Long). ((count for (t: Timepoint). where (formerly within 1h (" HTTP
		"{ input.body_bytes: u } && tp(t)))) == u)", MSG_EQ_READS("u", "u"), "(count");
	accept_ok("exists (u: Long). (formerly within 1h " HTTP "{ input.body_bytes: u } && (count "
		  "for (t: Timepoint). where (formerly within 1h (" HTTP "{ input.body_bytes: u } "
		  "&& tp(t)))) == u)");
	/* a `for` binder is fresh: it does not inherit the enclosing restriction */
	acc_err("exists (u: Long). (formerly within 1h " HTTP "{ input.body_bytes: u } && (count "
		"for (u: Long), (t: Timepoint). where (u > 100 && formerly within 1h (" HTTP "{ "
		"input.body_bytes: u } && tp(t)))) >= 1)", MSG_FILTER("u"), "u > 100");
	acc_err("exists (u: Long). (formerly within 1h " HTTP "{ input.body_bytes: u } && (count "
		"for (w: Long), (t: Timepoint). where (w > 100 && formerly within 1h (" HTTP "{ "
		"input.body_bytes: w } && tp(t)))) >= 1)", MSG_FILTER("w"), "w > 100");
	accept_ok("exists (u: Long). (formerly within 1h " HTTP "{ input.body_bytes: u } && (count "
		  "for (t: Timepoint). where (u > 100 && formerly within 1h (" CONNECT
		  "{} && tp(t)))) >= 1)");
}

static void test_demands_since(void)
{
	acc_err("exists (u: String). ((" HTTP "{ input.host: u } since within 1h " CONNECT "{}) && "
		"formerly within 1h " CONNECTED "{ input.host: u })", MSG_SINCE_LEFT("u"), HTTP);
	accept_ok("exists (u: String). (formerly within 1h " CONNECTED "{ input.host: u } && (" HTTP
		  "{ input.host: u } since within 1h " CONNECT "{}))");
	accept_ok("exists (u: String). (" HTTP "{ input.host: u } since within 1h " CONNECT "{ "
		  "input.host: u })");
	/* through a formerly */
	acc_err("exists (u: String). (formerly within 1h (" HTTP "{ input.host: u } since within "
								 "1h "
		CONNECT "{}) && formerly within 1h " CONNECTED "{ input.host: u })",
		MSG_SINCE_LEFT("u"), HTTP);
}

static void test_aggregates(void)
{
	acc_err("exists (n: Long). ((count for (x: String), (t: Timepoint). where (" CONNECT "{} "
		"&& tp(t))) == n && n >= 1)", MSG_FOR_UNUSED("x", "x, t"), "x: ");
	accept_ok("exists (n: Long). ((count for (x: String), (t: Timepoint). where (" CONNECT "{ "
		  "input.host: x } && tp(t))) == n && n >= 1)");
	accept_ok("exists (s: Long). ((sum a for (a: Long), (t: Timepoint). where (" HTTP "{ "
		  "input.body_bytes: a } && tp(t))) == s && s >= 1)");
	accept_ok("0 < count for (t: Timepoint). where (" CONNECT "{} && tp(t))");
	/* summand outside the `for` list */
	acc_err("(sum a for (t: Timepoint). where formerly within 1h (" HTTP "{ input.body_bytes: "
		"a } && tp(t))) > 5", MSG_SUMMAND("a", "t"), "a for");
	/* body variable bound nowhere */
	acc_err("(count for (t: Timepoint). where formerly within 1h (" HTTP "{ input.host: u } && "
		"tp(t))) > 5", MSG_AGG_FREE("u", "t"), "u }");
	/* for-variables must be range-restricted */
	acc_err("exists (nn: Long). ((count for (x: String). where (!(formerly within 1h " CONNECT
		"{ input.host: x }))) == nn && nn >= 1)", MSG_FOR_RR("x"), "x: ");
	acc_err("exists (nn: Long). ((sum a for (a: Long). where (!(formerly within 1h " HTTP "{ "
		"input.body_bytes: a }))) == nn && nn == 0)", MSG_FOR_RR("a"), "a: ");
	acc_err("exists (nn: Long). ((count for (w: String). where (" HTTP "{ input.host: w } "
		"since within 1h " CONNECT "{})) == nn && nn >= 1)", MSG_FOR_RR("w"), "w: ");
	accept_ok("exists (nn: Long). ((count for (w: String). where (" HTTP "{} since within 1h "
		  CONNECT "{ input.host: w })) == nn && nn >= 1)");
	accept_ok("exists (n: Long). ((count for (q: String). where (formerly within 1h " HTTP "{ "
		  "input.host: q } && !exists (r: Timepoint). formerly within 1h (" CONNECT "{ "
		  "input.host: q } && tp(r)))) == n && n >= 2)");
	/* correlated with an enclosing binder */
	accept_ok("exists (u: String). (formerly within 1h " CONNECT "{ input.host: u } && (count "
		  "for (t: Timepoint). where (formerly within 1h (" HTTP "{ input.host: u } && "
		  "tp(t)))) >= 2)");
}

/* The first leaf of the first rule of ps. */
static struct dw_tnode *first_leaf(struct dw_policy_set *ps)
{
	return ps->policies[0]->conds[0].body->temporal->cond;
}

/* Shapes the parser and macro expansion already refuse (acceptance rules 5 and 6)
 * cannot be written: they are made here by editing a loaded tree, as a later
 * rewrite could, and the checker must still refuse them. */
static void mut_err(const char *leaf, void (*edit)(struct dw_tnode *root), const char *msg,
		    const char *needle, int nth, uint32_t shift)
{
	char *src = leaf_rule(leaf);
	struct dw_policy_set *ps = load(src);
	struct dw_diags d;
	uint32_t line = 0, col = 0;
	int r;

	dw_diags_init(&d);
	CHECK(ps != NULL);
	if (ps == NULL) {
		free(src);
		return;
	}
	edit(first_leaf(ps));
	r = dw_tcheck_accept(ps, &d);
	CHECK(where(src, needle, nth, &line, &col));
	CHECK_EQ_INT(r, -EINVAL);
	CHECK_EQ_INT(d.n, 1);
	if (d.n == 1) {
		CHECK_EQ_STR(d.v[0].msg, msg);
		CHECK_EQ_INT(d.v[0].line, line);
		CHECK_EQ_INT(d.v[0].col, col + shift);
		CHECK_EQ_INT(d.v[0].policy, 1);
	} else {
		print_diags(&d);
	}
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	free(src);
}

/* `P{ input.port: 1 } && AGG > 0`: the aggregate moves into the field. */
static void edit_agg_into_field(struct dw_tnode *root)
{
	root->a->pred->fields[0].term = *root->b->lhs;
}

/* `P{} && [1] == [2] && AGG > 0`: the aggregate moves into the array. */
static void edit_agg_into_array(struct dw_tnode *root)
{
	root->a->b->lhs->items[0] = *root->b->lhs;
}

/* `exists (ctx: String). P{ input.host: ctx }`: renamed `context`. */
static void edit_exists_context(struct dw_tnode *root)
{
	root->binder.name = dw_str_c("context");
	root->a->pred->fields[0].term.str = dw_str_c("context");
}

/* `exists (t: Timepoint). (tp(t) && P{} && tp(t))`: the last renamed. */
static void edit_tp_principal(struct dw_tnode *root)
{
	root->a->b->binder.name = dw_str_c("principal");
}

/* `(count for (g: String). where P{ input.host: g }) > 0`: renamed `action`. */
static void edit_for_action(struct dw_tnode *root)
{
	root->lhs->agg->for_binders[0].name = dw_str_c("action");
	root->lhs->agg->where->pred->fields[0].term.str = dw_str_c("action");
}

static void test_shapes_after_rewrite(void)
{
	struct dw_diags d;
	char src[2048];

	mut_err(HTTP "{ input.port: 1 } && (count for (t: Timepoint). where tp(t)) > 0",
		edit_agg_into_field, MSG_AGG_POS, "count for", 1, 0);
	mut_err(HTTP "{} && [1] == [2] && (count for (t: Timepoint). where tp(t)) > 0",
		edit_agg_into_array, MSG_AGG_POS, "count for", 1, 0);
	mut_err("exists (ctx: String). " CONNECT "{ input.host: ctx }", edit_exists_context,
		MSG_RESERVED("context"), "ctx: ", 1, 0);
	mut_err("exists (t: Timepoint). (tp(t) && " HTTP "{} && tp(t))", edit_tp_principal,
		MSG_RESERVED("principal"), "tp(t)", 2, 3);
	mut_err("(count for (g: String). where " CONNECT "{ input.host: g }) > 0", edit_for_action,
		MSG_RESERVED("action"), "g: ", 1, 0);
	/* the macro expander refuses them first, with the same words */
	snprintf(src, sizeof src, "def temporal any_host(?x) { exists (?x: String). " CONNECT "{ "
		 "input.host: ?x } };\n" RULE_HEAD "any_host(context)" RULE_TAIL);
	dw_diags_init(&d);
	CHECK(load_into(src, &d) == NULL);
	CHECK_EQ_INT(d.n, 1);
	if (d.n == 1)
		CHECK_EQ_STR(d.v[0].msg, MSG_RESERVED("context"));
	dw_diags_fini(&d);
	/* fresh binders are per call site and closed */
	snprintf(src, sizeof src, "def temporal twice(?w, ?s) { (count for ($t: Timepoint). where "
		 "(formerly within ?w (?s && tp($t)))) >= 2 };\n" RULE_HEAD "twice(1h, " HTTP
		 "{}) && twice(10m, " CONNECT "{})" RULE_TAIL);
	ok_src(ACCEPT, src, NULL);
	ok_src(VALIDATE, src, events());
	/* an argument used twice is one subtree: its finding is said once, at
	 * the argument */
	snprintf(src, sizeof src, "def temporal again(?s) { ?s && formerly within 1h ?s };\n"
		 RULE_HEAD "again(" HTTP "{ input.hots: \"a\" })" RULE_TAIL);
	err_src(VALIDATE, src, events(), 1, "predicate `" HTTP "` mentions field `input.hots`, "
		"which is not declared on that event (declared fields: callerPrincipal, "
		"callerResource, input.body_bytes, input.host, input.intercepted, input.method, "
		"input.path, input.port, requestId)", "input.hots", 1, 0);
	/* a node made from a macro body points at the call */
	snprintf(src, sizeof src, "def temporal seen(?s) { formerly within 2d ?s };\n" RULE_HEAD
		 HTTP "{} && seen(" CONNECT "{})" RULE_TAIL);
	err_src(VALIDATE, src, events(), 1, "temporal window `2d` exceeds the maximum allowed "
		"window `24h`" WINDOW_FIX("24h"), "seen(", 2, 0);
}

static void test_like_patterns(void)
{
	accept_ok(READ "{ input.path like \"~/x/*\" }");
	accept_ok(READ "{ input.path like \"a\\*b\\n\\t\\r\\\\\\\"\\'\\0\" }");
	accept_ok(READ "{ input.path like \"\\u{1F600}\\x41\" }");
	acc_err(READ "{ input.path like \"a\\qb\" }", "the input `\\q` is not a valid escape",
		"\\q");
	acc_err(READ "{ input.path like \"\\x80\" }", "the input `\\x80` is not a valid escape",
		"\\x80");
	acc_err(READ "{ input.path like \"\\u{D800}\" }", "the input `\\u{D800}` is not a valid "
		"escape",
		"\\u{");
	acc_err(READ "{ input.path like \"\\u{}\" }", "the input `\\u{}` is not a valid escape",
		"\\u{");
	acc_err(READ "{ input.path like \"x\\é\" }", "the input `\\é` is not a valid escape",
		"\\é");
}

/* One finding per leaf, every leaf checked, inline leaves found, the rule
 * index set; nothing for a Cedar-only set. */
static void test_accept_leaves(void)
{
	const char *src =
		"permit (principal, action, resource);\nforbid (principal, action == "
		"Box::Action::\"http:request\", resource)\nwhen { context.input.port == 443 && "
		"temporal { " CONNECT "{ input.host: a } } };\n"
		"forbid (principal, action, resource)\nunless temporal { exists (x: Long). (0 < "
		"x) }\nwhen temporal { " CONNECT "{ input.host: b, input.ip: c } };\n";
	struct dw_diags d;
	uint32_t line, col;
	int r;

	dw_diags_init(&d);
	r = run(ACCEPT, src, NULL, &d);
	CHECK_EQ_INT(r, -EINVAL);
	CHECK_EQ_INT(d.n, 3);
	if (d.n == 3) {
		CHECK_EQ_STR(d.v[0].msg, MSG_FREE("a"));
		CHECK_EQ_INT(d.v[0].policy, 2);
		CHECK(where(src, "a }", 1, &line, &col));
		CHECK_EQ_INT(d.v[0].line, line);
		CHECK_EQ_INT(d.v[0].col, col);
		CHECK_EQ_STR(d.v[1].msg, MSG_EXISTS_RR("x"));
		CHECK_EQ_INT(d.v[1].policy, 3);
		CHECK_EQ_STR(d.v[2].msg, MSG_FREE("b"));
		CHECK_EQ_INT(d.v[2].policy, 3);
	}
	dw_diags_fini(&d);
	ok_src(ACCEPT, "permit (principal, action, resource) when { context.x == 1 };", NULL);
}

/* --- schema checks, validation ------------------------------------------------------------ */

static void test_entity_types(void)
{
	val_err(HTTP "{ callerPrincipal: Box::Agnet::\"self\" }", "unknown entity type "
		"`Box::Agnet`; known entity types: Box::Agent, Box::Resource, "
		"Box::FsReadOperation, Box::FsWriteOperation, Box::FsDeleteOperation, "
		"Box::FsMoveOperation, Box::FsOtherOperation, Box::FsResponseResult", "Box::Agnet");
	val_err(READ "{ input.operation: Box::FsReadOperation::\"bogus\" }",
		"`Box::FsReadOperation` is an enum entity type; `\"bogus\"` is not one of its "
		"permitted ids (\"read_content\", \"read_metadata\", \"enumerate\", "
		"\"read_link\", \"change_dir\", \"exec\")", "Box::FsReadOperation");
	ok(READ "{ input.operation: Box::FsReadOperation::\"exec\" }");
	/* action references are no entity types to declare */
	val_err(HTTP "{} && Box::Action::\"fs:read\" == Box::Action::\"fs:read\"",
		"this `when`/`unless` conjunct does not vary with the current timepoint; it "
		"monitors nothing", "Box::Action::\"fs:read\" ==");
	/* binder types */
	val_err("exists (x: Strng). " CONNECT "{ input.host: x }", "binder `x` is declared with "
		"unknown type `Strng`; a binder type is `Timepoint`, `Long`, `String`, `Bool`, "
		"`decimal` or a declared entity type (known entity types: Box::Agent, "
		"Box::Resource, Box::FsReadOperation, Box::FsWriteOperation, "
		"Box::FsDeleteOperation, Box::FsMoveOperation, Box::FsOtherOperation, "
		"Box::FsResponseResult)", "x: ");
	ok("exists (a: Box::Agent). " CONNECT "{ callerPrincipal: a }");
	/* an unknown binder type: the variable takes the type of its field */
	val_err_n("exists (x: Strng). (" CONNECT "{ input.host: x } && x > 3)", 2, "comparison "
		  "requires numeric operands on both sides, got `string` and `int`", "x > 3", 1);
}

static void test_context_paths(void)
{
	const char *head = "permit (principal, action == Box::Action::\"net:connect\", "
			   "resource)\nwhen temporal { formerly within 1h " CONNECTED
			   "{ input.host: ";
	const char *head2 = "permit (principal, action in [Box::Action::\"net:connect\", "
			    "Box::Action::\"http:request\"], resource)\nwhen temporal { formerly "
			    "within 1h " HTTPR "{ input.path: ";
	char src[1024];

	snprintf(src, sizeof src, "%scontext.input.hots } };", head);
	err_src(VALIDATE, src, events(), 1, "record has no field `hots` in `context.input.hots` "
		"path (action `Box::net:connect`)", "context.", 1, 0);
	snprintf(src, sizeof src, "%scontext.nope } };", head);
	err_src(VALIDATE, src, events(), 1, "action `Box::net:connect` has no context field "
		"`nope` for `context.nope`", "context.", 1, 0);
	snprintf(src, sizeof src, "%scontext.input.host.x } };", head);
	err_src(VALIDATE, src, events(), 1, "`x` accesses a field of a non-record type in "
		"`context.input.host.x` (action `Box::net:connect`)", "context.", 1, 0);
	snprintf(src, sizeof src, "%scontext.input.host } };", head);
	ok_src(VALIDATE, src, events());
	/* every pinned action: net:connect has no input.path */
	snprintf(src, sizeof src, "%scontext.input.path } };", head2);
	err_src(VALIDATE, src, events(), 1, "record has no field `path` in `context.input.path` "
		"path (action `Box::net:connect`)", "context.", 1, 0);
	/* an action group pins the actions below it */
	ok_src(VALIDATE, "permit (principal, action in Box::Action::\"fs:read\", resource)\nwhen "
	       "temporal { " READ "{ input.path: context.input.path } };", events());
	/* an unconstrained scope is Cedar's to type */
	ok_src(VALIDATE, "permit (principal, action, resource)\nwhen temporal { " READ "{ "
	       "input.path: context.input.hots } };", events());
}

static void test_event_names(void)
{
	val_err("formerly within 1h Box::Action::\"net:conect\"::request{}",
		"predicate `Box::Action::\"net:conect\"::request` does not name a declared event "
		"(no event kind `request` derived for action `net:conect`)",
		"Box::Action::\"net:conect\"");
	val_err(HTTP "{} && formerly within 1h Box::Action::\"net:connect\"::reqeust{}",
		"predicate `Box::Action::\"net:connect\"::reqeust` does not name a declared event "
		"(no event kind `reqeust` derived for action `net:connect`)",
		"Box::Action::\"net:connect\"");
	val_err("exists (x: String). " CONNECT "{ input: x }", "predicate `" CONNECT "` mentions "
		"`input`, which is a field group, not a field; address a field inside it (e.g. "
		"`input.<field>`)", "input: x");
	val_err(CONNECT "{ input.hots: \"a\" }", "predicate `" CONNECT "` mentions field "
		"`input.hots`, which is not declared on that event (declared fields: "
		"callerPrincipal, callerResource, input.host, input.ip, input.port, requestId)",
		"input.hots");
	/* outputs only on responses */
	val_err(HTTP "{ output.status: 200 }", "predicate `" HTTP "` mentions field "
		"`output.status`, which is not declared on that event (declared fields: "
		"callerPrincipal, callerResource, input.body_bytes, input.host, "
		"input.intercepted, input.method, input.path, input.port, requestId)",
		"output.status");
	ok(HTTPR "{ output.status: 200 }");
	/* inside aggregates and negations too */
	val_err("!formerly within 1h " HTTP "{ input.bad: \"x\" }", "predicate `" HTTP "` mentions "
		"field `input.bad`, which is not declared on that event (declared fields: "
		"callerPrincipal, callerResource, input.body_bytes, input.host, "
		"input.intercepted, input.method, input.path, input.port, requestId)", "input.bad");
}

static void test_tp_dependence(void)
{
	val_err("formerly within 1h " HTTP "{} && context.input.host == \"a\"",
		"this `when`/`unless` conjunct does not vary with the current timepoint; it "
		"monitors nothing", "context.input.host ==");
	val_err("formerly within 1h (context.input.host == \"a\")", "this temporal operator's body "
		"does not vary with the current timepoint; it monitors nothing",
		"context.input.host");
	val_err("!(context.input.port == 1) since within 1h " HTTP "{}", "the left side of `since` "
		"does not vary with the current timepoint; it monitors nothing", "!(context");
	val_err(HTTP "{} since within 1h (context.input.port == 1)", "the right side of `since` "
		"does not vary with the current timepoint; it monitors nothing",
		"context.input.port");
	val_err("(count for (x: String). where (x == context.input.host)) > 0", "the `where` body "
		"of the aggregation does not vary with the current timepoint; it monitors nothing",
		"x == context");
	/* (validation runs on any leaf: this one also breaks acceptance rule 2) */
	val_err("exists (x: String). (context.input.host == \"a\")", "the body of the `exists` "
		"does not vary with the current timepoint; it monitors nothing",
		"context.input.host");
	/* an aggregate varies; so does a variable bound rule-wide */
	ok("count_within(1h, " HTTP "{}) > 0 && exists (x: String). (" HTTP "{ input.host: x } && "
	   "x != \"a\")");
}

static void test_types(void)
{
	val_err(CONNECT "{ input.port: \"80\" }", "argument `input.port` of `net:connect` expects "
		"`int` but got `string`", "input.port");
	val_err(READ "{ input.operation: \"read_content\" }", "argument `input.operation` of "
		"`fs:read` expects `Box::FsReadOperation` but got `string`", "input.operation");
	val_err(READ "{ input.operation: Box::FsWriteOperation::\"symlink\" }", "argument "
		"`input.operation` of `fs:read` expects `Box::FsReadOperation` but got "
		"`Box::FsWriteOperation`", "input.operation");
	val_err(HTTP "{ input.intercepted: 1 }", "argument `input.intercepted` of `http:request` "
		"expects `boolean` but got `int`", "input.intercepted");
	val_err(CONNECT "{ callerResource: principal }", "argument `callerResource` of "
		"`net:connect` expects `Box::Resource` but got `Box::Agent`", "callerResource");
	/* binder types are authoritative */
	val_err("exists (x: Long). " CONNECT "{ input.host: x }", "argument `input.host` of "
		"`net:connect` expects `string` but got `int`", "input.host");
	val_err("exists (x: String). (" CONNECT "{ input.host: x } && x > 3)", "comparison "
		"requires numeric operands on both sides, got `string` and `int`", "x > 3");
	val_err("exists (x: String). (" CONNECT "{ input.host: x } && x == 3)", "equality requires "
		"both sides to have the same type, got `string` and `int`", "x == 3");
	val_err("exists (x: String). (" CONNECT "{ input.host: x } && x != decimal(\"1.0\"))",
		"equality requires both sides to have the same type, got `string` and `decimal`",
		"x !=");
	/* two entities may be compared */
	ok("exists (a: Box::Agent). (" CONNECT "{ callerPrincipal: a } && a != "
					       "Box::Resource::\"x\")");
	val_err("exists (x: Long). (" HTTP "{ input.port: x } && tp(x))", "`tp(x)` binds `x` to "
		"the current timepoint, but `x` is declared `int`; a `tp` variable must be "
		"declared `Timepoint`", "tp(x)");
	val_err("exists (t: Timepoint). (" HTTP "{ input.port: t } && tp(t))", "argument "
		"`input.port` of `http:request` expects `int` but got `timepoint`", "input.port");
	/* summands are Long */
	val_err("(sum h for (h: String), (t: Timepoint). where formerly within 1h (" CONNECT "{ "
		"input.host: h } && tp(t))) > 0", "cannot sum `h`: sum requires a `Long` summand, "
		"but `h` is `String`.", "h for");
	val_err("(sum t for (t: Timepoint). where formerly within 1h (" CONNECT "{} && tp(t))) > 0",
		"cannot sum `t`: sum requires a `Long` summand, but `t` is `Timepoint`. "
		"Timepoints are ordinal positions, not quantities — use a Timepoint in the `for "
		"(…)` binders to keep per-timepoint rows, not as the value being summed.", "t for");
	val_err("(sum d for (d: decimal), (t: Timepoint). where formerly within 1h (" HTTP "{} && "
		"tp(t) && d == decimal(\"1.5\"))) > 0", "cannot sum `d`: sum requires a `Long` "
		"summand, but `d` is `Decimal`. Dogwood arithmetic operates only on `Long` values, "
		"not decimals.", "d for");
	/* `like` on String fields only */
	val_err(CONNECT "{ input.port like \"44*\" }", "`like` applies only to String fields, but "
		"`input.port` of `net:connect` is `int`", "input.port");
	/* sets */
	ok("Box::Action::\"shell:spawn\"::request{ input.credential_reads: [\"a\", \"b\"] }");
	val_err("Box::Action::\"shell:spawn\"::request{ input.credential_reads: [1] }", "argument "
		"`input.credential_reads` of `shell:spawn` expects `array<string>` but got "
		"`array<int>`", "input.credential_reads");
	val_err("Box::Action::\"shell:spawn\"::request{ input.credential_reads: [1, \"a\"] }",
		"argument `input.credential_reads` of `shell:spawn` expects `array<string>` but "
		"got `mixed-type array`", "input.credential_reads");
}

/* `context.*` is typed on every action the scope pins; a finding is said once. */
static void test_types_per_action(void)
{
	const char *src = "permit (principal, action in [Box::Action::\"fs:read\", "
			  "Box::Action::\"fs:write\", Box::Action::\"fs:delete\"], "
			  "resource)\nwhen temporal { formerly within 1h " READ
			  "{ input.operation: context.input.operation } };";
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = run(VALIDATE, src, events(), &d);
	CHECK_EQ_INT(r, -EINVAL);
	CHECK_EQ_INT(d.n, 2);
	if (d.n == 2) {
		CHECK_EQ_STR(d.v[0].msg, "argument `input.operation` of `fs:read` expects "
			     "`Box::FsReadOperation` but got `Box::FsWriteOperation`");
		CHECK_EQ_STR(d.v[1].msg, "argument `input.operation` of `fs:read` expects "
			     "`Box::FsReadOperation` but got `Box::FsDeleteOperation`");
	}
	dw_diags_fini(&d);
	/* the same comparison under one action: one finding, not one per action */
	src = "permit (principal, action in [Box::Action::\"net:connect\", "
	      "Box::Action::\"http:request\"], resource)\nwhen temporal { exists (x: Long). ("
	      CONNECT "{ input.port: x } && x == context.input.host) };";
	err_src(VALIDATE, src, events(), 1, "equality requires both sides to have the same type, "
		"got `int` and `string`", "x == context", 1, 0);
}

static void test_windows(void)
{
	struct dw_evschema *week, *odd;

	val_err("formerly within 48h " HTTP "{}", "temporal window `48h` exceeds the maximum "
		"allowed window `24h`" WINDOW_FIX("24h"), "formerly");
	val_err("previous within 2d " HTTP "{}", "temporal window `2d` exceeds the maximum allowed "
		"window `24h`" WINDOW_FIX("24h"), "previous");
	val_err("!" HTTP "{} since within 86401s " CONNECT "{}", "temporal window `86401s` exceeds "
		"the maximum allowed window `24h`" WINDOW_FIX("24h"), "within");
	val_err("(count for (t: Timepoint). where formerly within 1441m (" HTTP "{} && tp(t))) > 1",
		"temporal window `1441m` exceeds the maximum allowed window `24h`" WINDOW_FIX("24h"),
		"formerly");
	val_err("count_within(25h, " HTTP "{}) > 1", "temporal window `25h` exceeds the maximum "
		"allowed window `24h`" WINDOW_FIX("24h"), "25h");
	ok("formerly within 24h " HTTP "{} && formerly within 1d " CONNECT "{} && formerly within "
	   "1440m " CONNECT "{} && formerly within 86400s " CONNECT "{}");
	/* every window is reported */
	val_err_n("formerly within 7d " HTTP "{} && formerly within 30h " CONNECT "{}", 2,
		  "temporal window `30h` exceeds the maximum allowed window `24h`" WINDOW_FIX("24h"),
		  "formerly", 2);
	/* a raised cap, printed in its largest unit */
	week = events_of("max_window = 7d\ndecision event <A>::request { ...inputs(A) }\n");
	ok_src(VALIDATE, RULE_HEAD "formerly within 168h " HTTP "{}" RULE_TAIL, week);
	err_src(VALIDATE, RULE_HEAD "formerly within 8d " HTTP "{}" RULE_TAIL, week, 1,
		"temporal window `8d` exceeds the maximum allowed window `7d`" WINDOW_FIX("7d"),
		"formerly", 1, 0);
	odd = events_of("max_window = 90m\ndecision event <A>::request { ...inputs(A) }\n");
	err_src(VALIDATE, RULE_HEAD "formerly within 2h " HTTP "{}" RULE_TAIL, odd, 1,
		"temporal window `2h` exceeds the maximum allowed window `90m`" WINDOW_FIX("90m"),
		"formerly", 1, 0);
	dw_evschema_free(week);
	dw_evschema_free(odd);
}

/* A custom event schema: its kinds and fields, not the default's. */
static void test_custom_events(void)
{
	struct dw_evschema *es = events_of(
		"decision event <A>::attempt { ...inputs(A), who: principalType(A), meta: { "
		"session: { id: String } } }\nevent <A>::outcome { ...inputs(A), ...outputs(A), "
		"ok: Bool }\n");

	ok_src(VALIDATE, RULE_HEAD "formerly within 1h Box::Action::\"http:request\"::outcome{ "
	       "output.status: 200, ok: true }" RULE_TAIL, es);
	err_src(VALIDATE, RULE_HEAD "Box::Action::\"http:request\"::attempt{ meta.session: \"x\" }"
		RULE_TAIL, es, 1, "predicate `Box::Action::\"http:request\"::attempt` mentions "
		"`meta.session`, which is a field group, not a field; address a field inside it "
		"(e.g. `meta.session.<field>`)", "meta.session", 1, 0);
	err_src(VALIDATE, RULE_HEAD HTTP "{}" RULE_TAIL, es, 1, "predicate `" HTTP "` does not "
		"name a declared event (no event kind `request` derived for action `http:request`)",
		HTTP, 1,
		0);
	ok_src(VALIDATE, RULE_HEAD "Box::Action::\"http:request\"::attempt{ meta.session.id: "
	       "\"s\", who: principal }" RULE_TAIL, es);
	err_src(VALIDATE, RULE_HEAD "Box::Action::\"http:request\"::outcome{ ok: \"yes\" }"
		RULE_TAIL, es, 1, "argument `ok` of `http:request` expects `boolean` but got "
		"`string`", "ok:", 1, 0);
	dw_evschema_free(es);
}

/* --- the Dogwood vectors (tests/data/dogwood/) --------------------------------------------- */

static void test_testdata(void)
{
	const char *dir = TEST_DATA_DIR "/dogwood";
	DIR *dp = opendir(dir);
	struct dirent *de;
	int seen = 0;

	CHECK(dp != NULL);
	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		char path[1024];
		size_t n;
		char *text;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/policy.dw", dir, de->d_name);
		if ((text = test_read_file(path, &n)) == NULL)
			continue;
		ok_src(ACCEPT, text, NULL);
		ok_src(VALIDATE, text, events());
		free(text);
		seen++;
	}
	closedir(dp);
	CHECK(seen >= 8);
}

/* --- robustness ---------------------------------------------------------------------------- */

/* Long `&&` chains and `!` runs are walked as loops. */
static void test_long_chains(void)
{
	size_t n = 20000, cap = n * 64 + 1024, k = 0;
	char *leaf = malloc(cap), *src;

	if (leaf == NULL)
		abort();
	k += (size_t)snprintf(leaf + k, cap - k, "exists (x: String). (" CONNECT
			      "{ input.host: x }");
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(leaf + k, cap - k, " && x != \"h%zu\"", i);
	k += (size_t)snprintf(leaf + k, cap - k, " && ");
	for (size_t i = 0; i < n; i++)
		leaf[k++] = '!';
	k += (size_t)snprintf(leaf + k, cap - k, HTTP "{ input.host: x })");
	src = leaf_rule(leaf);
	ok_src(ACCEPT, src, NULL);
	ok_src(VALIDATE, src, events());
	free(src);
	free(leaf);
}

/* The checks skip what expansion has not done, and do not crash on it. */
static void test_unexpanded(void)
{
	const char *src = RULE_HEAD "count_within(1h, " HTTP "{ input.host: \"a\" }) > 1 && "
			  "exists (n: Long). (count_within(1h, " HTTP "{}) == n && n > 2)"
			  RULE_TAIL;
	struct dw_policy_set *ps = dw_policy_set_new_temporal(DW_DIALECT_DOGWOOD);
	struct dw_diags d;

	dw_diags_init(&d);
	CHECK(ps != NULL);
	CHECK_EQ_INT(dw_parse_macro_library(ps, "<default macros>", dw_default_macros,
					    strlen(dw_default_macros), &d), 0);
	CHECK_EQ_INT(dw_parse_policies(ps, "policy.dw", src, strlen(src), &d), 0);
	CHECK_EQ_INT(dw_tcheck_accept(ps, &d), 0);
	CHECK_EQ_INT(dw_tcheck_validate(ps, schema(), events(), &d), 0);
	CHECK_EQ_INT(d.n, 0);
	print_diags(&d);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
}

/* The plan's fingerprint, as the engine builds it after the checks; its hex in out. */
static const char *fingerprint(const char *src, char out[65])
{
	struct dw_policy_set *ps = load(src);
	struct dw_tplan *plan = NULL;
	unsigned char fp[32];
	struct dw_diags d;

	out[0] = 0;
	dw_diags_init(&d);
	if (ps != NULL && dw_tcheck_accept(ps, &d) == 0 &&
	    dw_tcheck_validate(ps, schema(), events(), &d) == 0 &&
	    dw_tplan_build(ps, events(), &plan) == 0 && dw_tplan_fingerprint(plan, fp) == 0)
		for (int i = 0; i < 32; i++)
			snprintf(out + 2 * i, 3, "%02x", fp[i]);
	print_diags(&d);
	dw_diags_fini(&d);
	dw_tplan_free(plan);
	dw_policy_set_free(ps);
	return out;
}

/* A snapshot of the incremental state is loaded only into a plan with the same
 * fingerprint, and snapshots outlive the build that wrote them: the digest
 * must stay the same bytes whichever library computes it.  A plan with no
 * leaf hashes only its tag, so its fingerprint is SHA-256("cairn-tplan-1") as
 * sha256sum computes it; the keyed cap's is the value the OpenSSL build
 * (before Nettle) gave for it. */
static void test_plan_fingerprint(void)
{
	char hx[65], again[65];
	const char *keyed = "@id(\"cap\")\nforbid (principal, action == Box::Action::\"http:request\", "
			    "resource)\nwhen temporal { count_within(10m, " HTTPR "{ input.host: "
			    "context.input.host }) >= 3 };\n";

	CHECK_EQ_STR(fingerprint("permit (principal, action, resource);", hx),
		     "5dabd0ab3a24d1ac160f3354015e3ae5bb81a92ab9c449a5ae5770dcdaf66da4");
	CHECK_EQ_STR(fingerprint(keyed, hx),
		     "c41c6258221a94190f3636c71accba8109237bbc79896bee6aa2e5928317c424");
	CHECK_EQ_STR(fingerprint(keyed, again), hx);
}

static void test_cleanup(void)
{
	dw_evschema_free(box_events);
	dw_schema_free(box_schema);
	box_events = NULL;
	box_schema = NULL;
}

static const struct test_case tests[] = {
	{ "accepted_shapes", test_accepted_shapes },
	{ "exists_safety", test_exists_safety },
	{ "nested_exists", test_nested_exists },
	{ "closed", test_closed },
	{ "demands", test_demands },
	{ "demands_binding", test_demands_binding },
	{ "demands_since", test_demands_since },
	{ "aggregates", test_aggregates },
	{ "shapes_after_rewrite", test_shapes_after_rewrite },
	{ "like_patterns", test_like_patterns },
	{ "accept_leaves", test_accept_leaves },
	{ "entity_types", test_entity_types },
	{ "context_paths", test_context_paths },
	{ "event_names", test_event_names },
	{ "tp_dependence", test_tp_dependence },
	{ "types", test_types },
	{ "types_per_action", test_types_per_action },
	{ "windows", test_windows },
	{ "custom_events", test_custom_events },
	{ "testdata", test_testdata },
	{ "long_chains", test_long_chains },
	{ "unexpanded", test_unexpanded },
	{ "plan_fingerprint", test_plan_fingerprint },
	{ "cleanup", test_cleanup },
};

TEST_MAIN(tests)
