/* test_tmacro.c - expansion of `def temporal` macro calls (tmacro.c).
 *
 * Each case parses a policy file with the default macro library, expands the
 * set, and prints the temporal leaves of every rule (source order, ` ; `
 * between them) as S-expressions, the notation of test_temporal_parse.c:
 * `(&& A B)`, `(! A)`, `(formerly 1h A)`, `(since 15m L R)`, `(exists x:Long
 * A)`, `(tp t)`, `(== L R)`, predicates as `Ns::"id"::kind{f: t, …}`,
 * aggregates as `(count [t:Timepoint] A)` / `(sum b [b:Long] A)`.  Anything
 * the expansion must remove prints as `LEFTOVER…`.  An error prints as
 * error `<the source text of its span>`: message */
#include "tmacro.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policyset.h"
#include "temporal.h"
#include "test.h"

/* --- printing trees ---------------------------------------------------------------- */

struct out {
	char buf[1 << 16];
	size_t n;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (o->n >= sizeof o->buf)
		return;
	va_start(ap, fmt);
	w = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		o->n += (size_t)w;
	if (o->n >= sizeof o->buf)
		o->n = sizeof o->buf - 1;
}

static void put_str(struct out *o, struct dw_str s)
{
	put(o, "%.*s", (int)s.n, s.p ? s.p : "");
}

static void print_cond(struct out *o, const struct dw_tnode *n);

static void print_window(struct out *o, const struct dw_window *w)
{
	if (w->is_param)
		put(o, "LEFTOVER?%.*s", (int)w->param.n, w->param.p);
	else
		put(o, "%lld%c", (long long)w->amount, w->unit);
}

static void print_binder(struct out *o, const struct dw_tbinder *b)
{
	if (b->sigil)
		put(o, "LEFTOVER%c", b->sigil);
	put_str(o, b->name);
	if (b->type.n) {
		put(o, ":");
		put_str(o, b->type);
	}
}

static void print_term(struct out *o, const struct dw_tterm *t)
{
	switch (t->kind) {
	case DW_TT_ENTITY:
		put_str(o, t->path);
		put(o, "::\"");
		put_str(o, t->str);
		put(o, "\"");
		break;
	case DW_TT_INT: put(o, "%lld", (long long)t->i); break;
	case DW_TT_DECIMAL: put(o, "decimal(\""); put_str(o, t->str); put(o, "\")"); break;
	case DW_TT_STR: put(o, "\""); put_str(o, t->str); put(o, "\""); break;
	case DW_TT_BOOL: put(o, t->b ? "true" : "false"); break;
	case DW_TT_CONTEXT: put(o, "context."); put_str(o, t->path); break;
	case DW_TT_SCOPE:
		put(o, t->root == 'p' ? "principal" : "resource");
		if (t->path.n) {
			put(o, ".");
			put_str(o, t->path);
		}
		break;
	case DW_TT_VAR: put_str(o, t->str); break;
	case DW_TT_WILDCARD: put(o, "*"); break;
	case DW_TT_ARRAY:
		put(o, "[");
		for (uint32_t k = 0; k < t->n_items; k++) {
			if (k)
				put(o, ", ");
			print_term(o, &t->items[k]);
		}
		put(o, "]");
		break;
	case DW_TT_AGG:
		put(o, "(%s ", t->agg->is_sum ? "sum" : "count");
		if (t->agg->is_sum) {
			print_binder(o, &t->agg->summand);
			put(o, " ");
		}
		put(o, "[");
		for (uint32_t k = 0; k < t->agg->n_for; k++) {
			if (k)
				put(o, ", ");
			print_binder(o, &t->agg->for_binders[k]);
		}
		put(o, "] ");
		print_cond(o, t->agg->where);
		put(o, ")");
		break;
	case DW_TT_BINDER: put(o, "LEFTOVER$"); put_str(o, t->str); break;
	case DW_TT_PARAM: put(o, "LEFTOVER?"); put_str(o, t->str); break;
	case DW_TT_CALL: put(o, "LEFTOVERCALL "); put_str(o, t->call->name); break;
	default: put(o, "<term %d>", t->kind); break;
	}
}

static const char *const cmp_names[] = { "?", "==", "!=", "<", "<=", ">", ">=" };

static void print_cond(struct out *o, const struct dw_tnode *n)
{
	switch (n->kind) {
	case DW_TN_AND:
		put(o, "(&& ");
		print_cond(o, n->a);
		put(o, " ");
		print_cond(o, n->b);
		put(o, ")");
		break;
	case DW_TN_NOT: put(o, "(! "); print_cond(o, n->a); put(o, ")"); break;
	case DW_TN_FORMERLY:
	case DW_TN_PREVIOUS:
		put(o, "(%s ", n->kind == DW_TN_FORMERLY ? "formerly" : "previous");
		print_window(o, &n->window);
		put(o, " ");
		print_cond(o, n->a);
		put(o, ")");
		break;
	case DW_TN_SINCE:
		put(o, "(since ");
		print_window(o, &n->window);
		put(o, " ");
		print_cond(o, n->a);
		put(o, " ");
		print_cond(o, n->b);
		put(o, ")");
		break;
	case DW_TN_PRED:
		if (n->pred->param.n) {
			put(o, "LEFTOVER?");
			put_str(o, n->pred->param);
		} else {
			put_str(o, n->pred->ns);
			put(o, "::\"");
			put_str(o, n->pred->action);
			put(o, "\"::");
			put_str(o, n->pred->kind);
		}
		put(o, "{");
		for (uint32_t k = 0; k < n->pred->n_fields; k++) {
			if (k)
				put(o, ", ");
			put_str(o, n->pred->fields[k].path);
			put(o, n->pred->fields[k].like ? " like " : ": ");
			print_term(o, &n->pred->fields[k].term);
		}
		put(o, "}");
		break;
	case DW_TN_CMP:
		put(o, "(%s ", n->cmp <= DW_TC_GE ? cmp_names[n->cmp] : "?");
		print_term(o, n->lhs);
		put(o, " ");
		print_term(o, n->rhs);
		put(o, ")");
		break;
	case DW_TN_EXISTS:
		put(o, "(exists ");
		print_binder(o, &n->binder);
		put(o, " ");
		print_cond(o, n->a);
		put(o, ")");
		break;
	case DW_TN_TP: put(o, "(tp "); print_binder(o, &n->binder); put(o, ")"); break;
	case DW_TN_CALL: put(o, "LEFTOVERCALL "); put_str(o, n->call->name); break;
	case DW_TN_PARAM: put(o, "LEFTOVER?"); put_str(o, n->param); break;
	default: put(o, "<node %d>", n->kind); break;
	}
}

/* --- running the pipeline ---------------------------------------------------------------- */

#define FILE_NAME "p.dw"

static struct out g_out;
static uint32_t g_policy;          /* dw_diag.policy of the first error */
static int g_rc;

/* The temporal leaves under e, in source order. */
static size_t leaves(const struct dw_expr *e, const struct dw_temporal **v, size_t n, size_t cap)
{
	if (e == NULL)
		return n;
	if (e->op == DW_E_TEMPORAL) {
		if (n < cap)
			v[n] = e->temporal;
		return n + 1;
	}
	for (uint32_t i = 0; i < dw_expr_nchildren(e); i++)
		n = leaves(dw_expr_child(e, i), v, n, cap);
	return n;
}

/* Parse with the default library, expand, print.  *keep (when not NULL)
 * receives the set, which the caller frees. */
static const char *run_keep(const char *src, struct dw_policy_set **keep)
{
	struct dw_policy_set *ps = dw_policy_set_new_temporal(DW_DIALECT_DOGWOOD);
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	g_out.n = 0;
	g_out.buf[0] = '\0';
	g_policy = 0;
	r = dw_parse_macro_library(ps, "<default macros>", dw_default_macros,
				   strlen(dw_default_macros), &d);
	CHECK_EQ_INT(r, 0);
	if (r == 0)
		r = dw_parse_policies(ps, FILE_NAME, src, strlen(src), &d);
	if (r != 0) {
		put(&g_out, "parse error: %s", d.n ? d.v[0].msg : "?");
	} else if ((r = dw_policy_set_expand(ps, &d)) != 0) {
		const struct dw_diag *g = &d.v[0];

		CHECK_EQ_INT(d.n, 1);
		CHECK_EQ_STR(g->file, FILE_NAME);
		CHECK(g->end <= strlen(src));
		g_policy = g->policy;
		put(&g_out, "error `%.*s`: %s", (int)(g->end - g->off), src + g->off, g->msg);
	} else {
		CHECK_EQ_INT(d.n, 0);
		for (uint32_t i = 0; i < ps->n_policies; i++) {
			const struct dw_temporal *v[64];
			size_t n = leaves(ps->policies[i]->cond, v, 0, 64);

			for (size_t k = 0; k < n && k < 64; k++) {
				if (g_out.n)
					put(&g_out, " ; ");
				CHECK_EQ_INT(v[k]->src_index, ps->policies[i]->src_index);
				print_cond(&g_out, v[k]->cond);
			}
		}
		CHECK(strstr(g_out.buf, "LEFTOVER") == NULL);
	}
	g_rc = r;
	dw_diags_fini(&d);
	if (keep != NULL)
		*keep = ps;
	else
		dw_policy_set_free(ps);
	return g_out.buf;
}

static const char *run(const char *src)
{
	return run_keep(src, NULL);
}

/* Offset of the nth (from 0) occurrence of needle in s. */
static unsigned off_of(const char *s, const char *needle, int nth)
{
	const char *p = strstr(s, needle);

	while (p != NULL && nth-- > 0)
		p = strstr(p + 1, needle);
	CHECK(p != NULL);
	return p ? (unsigned)(p - s) : 0;
}

static char g_want[4096];

__attribute__((format(printf, 1, 2)))
static const char *want(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_want, sizeof g_want, fmt, ap);
	va_end(ap);
	return g_want;
}

#define RULE "permit (principal, action, resource) "
#define WHEN(body) RULE "when temporal { " body " };"
#define PA "Box::Action::\"a\"::request{}"
#define PB "Box::Action::\"b\"::response{}"
#define SA "Box::Action::\"a\"::request{}"
#define SB "Box::Action::\"b\"::response{}"

/* --- the default library ------------------------------------------------------------- */

static void test_count_within(void)
{
	const char *src = WHEN("count_within(1h, " PA ") >= 3");
	unsigned o = off_of(src, "count_within", 0);

	CHECK_EQ_STR(run(src), want("(>= (count [t$%u:Timepoint] (formerly 1h (&& " SA " (tp t$%u)))) 3)",
				    o, o));
	/* the operand on either side */
	src = WHEN("3 <= count_within(5m, " PA ")");
	o = off_of(src, "count_within", 0);
	CHECK_EQ_STR(run(src), want("(<= 3 (count [t$%u:Timepoint] (formerly 5m (&& " SA " (tp t$%u)))))",
				    o, o));
	/* a conjunction argument keeps its precedence inside `?s && tp($t)` */
	src = WHEN("count_within(1h, " PA " && !" PB ") > 0");
	o = off_of(src, "count_within", 0);
	CHECK_EQ_STR(run(src), want("(> (count [t$%u:Timepoint] (formerly 1h (&& (&& " SA " (! " SB
				    ")) (tp t$%u)))) 0)", o, o));
}

static void test_sum_within(void)
{
	const char *src = WHEN("sum_within(b, 1h, Box::Action::\"up\"::response{ input.n: b }) > 1000");
	unsigned o = off_of(src, "sum_within", 0);

	CHECK_EQ_STR(run(src), want("(> (sum b [b:Long, t$%u:Timepoint] (formerly 1h (&& "
				    "Box::Action::\"up\"::response{input.n: b} (tp t$%u)))) 1000)", o, o));
}

static void test_count_distinct_within(void)
{
	CHECK_EQ_STR(run(WHEN("count_distinct_within(h, 1h, Box::Action::\"c\"::request{ input.host: h }) "
			      ">= 4")),
		     "(>= (count [h:String] (formerly 1h Box::Action::\"c\"::request{input.host: h})) 4)");
}

static void test_bind(void)
{
	/* an aggregation-macro call as an argument: parsed as a condition (a bare
	 * call), read as a term because `?A` is a comparison operand */
	const char *src = WHEN("bind(n, sum_within(b, 1h, Box::Action::\"up\"::response{ input.n: b }), "
			       "n >= 1000)");
	unsigned o = off_of(src, "sum_within", 0);

	CHECK_EQ_STR(run(src), want("(exists n:Long (&& (== (sum b [b:Long, t$%u:Timepoint] (formerly 1h "
				    "(&& Box::Action::\"up\"::response{input.n: b} (tp t$%u)))) n) "
				    "(>= n 1000)))", o, o));
	/* a plain aggregate as ?A, a compound condition as ?B */
	CHECK_EQ_STR(run(WHEN("bind(k, (count for (h: String). where formerly within 1h "
			      "Box::Action::\"c\"::request{ input.host: h }), k >= 2 && k < 10)")),
		     "(exists k:Long (&& (== (count [h:String] (formerly 1h Box::Action::\"c\"::request{"
		     "input.host: h})) k) (&& (>= k 2) (< k 10))))");
}

/* The vector that shows the library in use. */
static void test_vector_macros(void)
{
	size_t len;
	char *src = test_read_file(TEST_DATA_DIR "/dogwood/macros/policy.dw", &len);
	unsigned o;

	CHECK(src != NULL);
	if (src == NULL)
		return;
	o = off_of(src, "count_within(1h", 0);
	CHECK_EQ_STR(run(src), want("(formerly 1h Box::Action::\"http:request\"::response{input.host: "
				    "\"auth.example.com\", input.path: \"/login\", output.status: 200}) ; "
				    "(>= (count [t$%u:Timepoint] (formerly 1h (&& "
				    "Box::Action::\"http:request\"::response{input.host: \"auth.example.com\", "
				    "output.status: 200} (tp t$%u)))) 3)", o, o));
	free(src);
}

/* --- user macros ------------------------------------------------------------------- */

#define ONCE "def temporal once(?w, ?s) { formerly within ?w ?s };\n"

static void test_condition_macros(void)
{
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, " PA ")")), "(formerly 1h " SA ")");
	/* AST substitution: the argument's precedence survives */
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, " PA " && " PB ")")), "(formerly 1h (&& " SA " " SB "))");
	CHECK_EQ_STR(run("def temporal never(?s) { !?s };\n" WHEN("never(" PA " && " PB ")")),
		     "(! (&& " SA " " SB "))");
	CHECK_EQ_STR(run("def temporal after(?w, ?a, ?b) { ?a since within ?w ?b };\n"
			 WHEN("after(15m, !" PA ", " PB ")")),
		     "(since 15m (! " SA ") " SB ")");
	/* a call in a conjunction, under `!`, inside exists and formerly */
	CHECK_EQ_STR(run(ONCE WHEN(PB " && !once(2d, " PA ")")),
		     "(&& " SB " (! (formerly 2d " SA ")))");
	CHECK_EQ_STR(run(ONCE WHEN("formerly within 1h (" PB " && once(10s, " PA "))")),
		     "(formerly 1h (&& " SB " (formerly 10s " SA ")))");
	/* no parameters */
	CHECK_EQ_STR(run("def temporal recent() { formerly within 5m " PA " };\n" WHEN("recent()")),
		     "(formerly 5m " SA ")");
	/* calls nested in arguments are expanded first */
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, once(5m, " PA "))")), "(formerly 1h (formerly 5m " SA "))");
	/* a parameter used twice: the one expanded argument at both places */
	CHECK_EQ_STR(run("def temporal twice(?s) { ?s && formerly within 1m ?s };\n"
			 ONCE WHEN("twice(once(1h, " PA "))")),
		     "(&& (formerly 1h " SA ") (formerly 1m (formerly 1h " SA ")))");
	/* several leaves, `unless`, and inline leaves inside Cedar */
	CHECK_EQ_STR(run(ONCE RULE "when { context.x == 1 && temporal { once(1h, " PA ") } } "
			 "unless temporal { once(2h, " PB ") };"),
		     "(formerly 1h " SA ") ; (formerly 2h " SB ")");
	/* a leaf shared by a `def cedar` macro's two uses of its argument is
	 * expanded once */
	CHECK_EQ_STR(run(ONCE "def cedar both(?a) { ?a && ?a };\n"
			 RULE "when { both(temporal { once(1h, " PA ") }) };"),
		     "(formerly 1h " SA ") ; (formerly 1h " SA ")");
	/* one rule per policy; macros after the rules that use them */
	CHECK_EQ_STR(run(WHEN("once(1h, " PA ")") "\n" WHEN("once(1d, " PB ")") "\n" ONCE),
		     "(formerly 1h " SA ") ; (formerly 1d " SB ")");
}

static void test_term_params(void)
{
	const char *src;
	unsigned o;

	/* a term parameter as a comparison operand */
	src = "def temporal at_least(?k, ?s) { (count for ($t: Timepoint). where (formerly within 1h "
	      "(?s && tp($t)))) >= ?k };\n" WHEN("at_least(3, " PA ")");
	o = off_of(src, "at_least(3", 0);
	CHECK_EQ_STR(run(src), want("(>= (count [t$%u:Timepoint] (formerly 1h (&& " SA " (tp t$%u)))) 3)",
				    o, o));
	/* as a field value and an array item */
	CHECK_EQ_STR(run("def temporal to(?h) { Box::Action::\"a\"::request{ input.host: ?h, tags: [?h, "
			 "\"x\"] } };\n" WHEN("to(\"h1\") && formerly within 1h to(context.input.host)")),
		     "(&& Box::Action::\"a\"::request{input.host: \"h1\", tags: [\"h1\", \"x\"]} "
		     "(formerly 1h Box::Action::\"a\"::request{input.host: context.input.host, "
		     "tags: [context.input.host, \"x\"]}))");
	/* an aggregation macro of the file, with a window parameter */
	src = "def temporal hits(?w, ?s) { count for ($t: Timepoint). where (previous within ?w (?s && "
	      "tp($t))) };\n" WHEN("hits(1m, " PA ") < hits(1h, " PB ")");
	CHECK_EQ_STR(run(src), want("(< (count [t$%u:Timepoint] (previous 1m (&& " SA " (tp t$%u)))) "
				    "(count [t$%u:Timepoint] (previous 1h (&& " SB " (tp t$%u)))))",
				    off_of(src, "hits(1m", 0), off_of(src, "hits(1m", 0),
				    off_of(src, "hits(1h", 0), off_of(src, "hits(1h", 0)));
}

static void test_binder_params(void)
{
	/* tp(?x) and exists (?n: T): the argument names the variable */
	CHECK_EQ_STR(run("def temporal mark(?x, ?s) { ?s && tp(?x) };\n"
			 WHEN("(count for (u: Timepoint). where formerly within 1h mark(u, " PA ")) >= 2")),
		     "(>= (count [u:Timepoint] (formerly 1h (&& " SA " (tp u)))) 2)");
	CHECK_EQ_STR(run("def temporal some(?n, ?s) { exists (?n: Long). ?s };\n"
			 WHEN("some(m, Box::Action::\"c\"::request{ n: m })")),
		     "(exists m:Long Box::Action::\"c\"::request{n: m})");
}

static void test_unused_params(void)
{
	CHECK_EQ_STR(run("def temporal second(?x, ?s) { ?s };\n"
			 WHEN("second(count_within(1h, " PA "), " PB ")")), SB);
	CHECK_EQ_STR(run("def temporal second(?x, ?s) { ?s };\n" ONCE
			 WHEN("second(once(1h, " PA "), " PB ") && second(1h, " PA ")")),
		     "(&& " SB " " SA ")");
	/* arguments are expanded first: an unused one must expand too */
	CHECK_EQ_STR(run("def temporal second(?x, ?s) { ?s };\n" WHEN("second(nope(1), " PB ")")),
		     "error `nope(1)`: unknown macro `nope` (no declared `def temporal`)");
}

/* --- refinement ------------------------------------------------------------------- */

#define POSTS "def temporal posts(?s) { ?s{ input.method: \"POST\" } };\n"

static void test_refinement(void)
{
	CHECK_EQ_STR(run(POSTS WHEN("posts(Box::Action::\"a\"::request{ input.host: \"h\" })")),
		     "Box::Action::\"a\"::request{input.host: \"h\", input.method: \"POST\"}");
	CHECK_EQ_STR(run(POSTS WHEN("posts(" PA ")")), "Box::Action::\"a\"::request{input.method: \"POST\"}");
	/* refinements stack, and an argument that was refined already */
	CHECK_EQ_STR(run("def temporal r2(?s, ?v) { ?s{ a: 1 }{ b: ?v } };\n"
			 WHEN("r2(Box::Action::\"a\"::request{ z: 0 }{ y: 9 }, \"v\")")),
		     "Box::Action::\"a\"::request{z: 0, y: 9, a: 1, b: \"v\"}");
	/* the base is a call that expands to one predicate */
	CHECK_EQ_STR(run(POSTS "def temporal to(?h) { Box::Action::\"a\"::request{ input.host: ?h } };\n"
			 WHEN("posts(to(\"x\"))")),
		     "Box::Action::\"a\"::request{input.host: \"x\", input.method: \"POST\"}");
	/* `like` fields are carried */
	CHECK_EQ_STR(run(POSTS WHEN("posts(Box::Action::\"a\"::request{ input.path like \"/x/*\" })")),
		     "Box::Action::\"a\"::request{input.path like \"/x/*\", input.method: \"POST\"}");
	/* the base must be a single predicate */
	CHECK_EQ_STR(run(POSTS WHEN("posts(" PA " && " PB ")")),
		     "error `" PA " && " PB "`: parameter `?s` is refined in the body of `posts` "
		     "(`?s{…}`), so the call-site argument must be a single event predicate such as "
		     "`Ns::Action::\"id\"::request{…}`");
	CHECK_EQ_STR(run(POSTS ONCE WHEN("posts(once(1h, " PA "))")),
		     "error `once(1h, " PA ")`: parameter `?s` is refined in the body of `posts` "
		     "(`?s{…}`), so the call-site argument must be a single event predicate such as "
		     "`Ns::Action::\"id\"::request{…}`");
}

/* A body is shared by every call: expansion copies it, never writes it. */
static void test_bodies_unchanged(void)
{
	struct dw_policy_set *ps = NULL;
	const char *src = POSTS ONCE WHEN("posts(" PA ") && count_within(1h, posts(" PB ")) >= 1 && "
					  "once(1h, " PA ")");
	const char *names[] = { "posts", "once", "count_within" };
	const char *bodies[] = {
		"LEFTOVER?s{input.method: \"POST\"}",
		"(formerly LEFTOVER?w LEFTOVER?s)",
		"(count [LEFTOVER$t:Timepoint] (formerly LEFTOVER?w (&& LEFTOVER?s (tp LEFTOVER$t))))",
	};

	run_keep(src, &ps);
	CHECK_EQ_INT(g_rc, 0);
	for (size_t k = 0; k < DW_N_ELEMENTS(names); k++) {
		const struct dw_macro *m = dw_macro_find(ps, dw_str_c(names[k]));
		struct out o = { .n = 0 };

		CHECK(m != NULL);
		if (m == NULL)
			continue;
		if (m->tbody->cond)
			print_cond(&o, m->tbody->cond);
		else
			print_term(&o, m->tbody->agg);
		CHECK_EQ_STR(o.buf, bodies[k]);
	}
	dw_policy_set_free(ps);
}

/* --- hygiene ---------------------------------------------------------------------- */

static void test_hygiene(void)
{
	const char *src = WHEN("count_within(1h, " PA ") >= 3 && count_within(1h, " PB ") >= 1");
	unsigned o1 = off_of(src, "count_within", 0), o2 = off_of(src, "count_within", 1);
	char n1[32], n2[32];

	CHECK(o1 != o2);
	CHECK_EQ_STR(run(src), want("(&& (>= (count [t$%u:Timepoint] (formerly 1h (&& " SA " (tp t$%u)))) 3) "
				    "(>= (count [t$%u:Timepoint] (formerly 1h (&& " SB " (tp t$%u)))) 1))",
				    o1, o1, o2, o2));
	snprintf(n1, sizeof n1, "t$%u", o1);
	snprintf(n2, sizeof n2, "t$%u", o2);
	CHECK(strstr(g_out.buf, n1) != NULL && strstr(g_out.buf, n2) != NULL);

	/* two binders of one body: each its own name, one per call site */
	src = "def temporal pairs(?s) { count for ($t: Timepoint), ($u: Timepoint). where (formerly "
	      "within 1h (?s && tp($t) && tp($u))) };\n" WHEN("pairs(" PA ") > 0");
	o1 = off_of(src, "pairs(Box", 0);
	CHECK_EQ_STR(run(src), want("(> (count [t$%u:Timepoint, u$%u:Timepoint] (formerly 1h (&& (&& " SA
				    " (tp t$%u)) (tp u$%u)))) 0)", o1, o1, o1, o1));

	/* an argument's own `t` is not captured by the body's `$t` */
	src = WHEN("exists (t: Long). (count_within(1h, Box::Action::\"a\"::request{ n: t }) == t)");
	o1 = off_of(src, "count_within", 0);
	CHECK_EQ_STR(run(src), want("(exists t:Long (== (count [t$%u:Timepoint] (formerly 1h (&& "
				    "Box::Action::\"a\"::request{n: t} (tp t$%u)))) t))", o1, o1));

	/* nested call sites: the inner call's binder differs from the outer's */
	src = "def temporal hits(?s) { count for ($t: Timepoint). where (formerly within 1h (?s && "
	      "tp($t))) };\n" WHEN("bind(n, hits(" PA "), n >= hits(" PB "))");
	o1 = off_of(src, "hits(" PA, 0);
	o2 = off_of(src, "hits(" PB, 0);
	CHECK_EQ_STR(run(src), want("(exists n:Long (&& (== (count [t$%u:Timepoint] (formerly 1h (&& " SA
				    " (tp t$%u)))) n) (>= n (count [t$%u:Timepoint] (formerly 1h (&& " SB
				    " (tp t$%u)))))))", o1, o1, o2, o2));
}

/* --- override --------------------------------------------------------------------- */

static void test_override(void)
{
	const char *src = "def temporal count_within(?w, ?s) { count for ($u: Timepoint). where (previous "
			  "within ?w (?s && tp($u))) };\n" WHEN("count_within(1h, " PA ") >= 3");
	unsigned o = off_of(src, "count_within(1h", 0);

	CHECK_EQ_STR(run(src), want("(>= (count [u$%u:Timepoint] (previous 1h (&& " SA " (tp u$%u)))) 3)",
				    o, o));
	/* a file def may change the kind: count_within becomes a condition */
	CHECK_EQ_STR(run("def temporal count_within(?w, ?s) { formerly within ?w ?s };\n"
			 WHEN("count_within(1h, " PA ")")), "(formerly 1h " SA ")");
	CHECK_EQ_STR(run("def temporal count_within(?w, ?s) { formerly within ?w ?s };\n"
			 WHEN("count_within(1h, " PA ") >= 3")),
		     "error `count_within(1h, " PA ")`: macro `count_within` is a condition macro: it "
		     "yields a temporal condition, not a number, so it cannot be a comparison operand; "
		     "call it where a condition is expected");
	/* two defs of one name in the file are still refused */
	CHECK_EQ_STR(run(ONCE ONCE WHEN("once(1h, " PA ")")),
		     "error `" "def temporal once(?w, ?s) { formerly within ?w ?s };" "`: duplicate macro "
		     "definition `once`");
}

/* --- spans ------------------------------------------------------------------------ */

/* Every node copied from the library's body carries the call site's span;
 * the argument keeps its own; the window the span of `1h`. */
static void test_spans(void)
{
	struct dw_policy_set *ps = NULL;
	const char *src = WHEN("count_within(1h, " PA ") >= 3");
	uint32_t co = off_of(src, "count_within", 0), ce = off_of(src, ") >= 3", 0) + 1;
	uint32_t po = off_of(src, "Box::", 0), wo = off_of(src, "1h", 0);
	const struct dw_temporal *v[4];
	const struct dw_tnode *cmp, *fm, *and;
	const struct dw_tagg *g;

	run_keep(src, &ps);
	CHECK_EQ_INT(g_rc, 0);
	CHECK_EQ_INT(leaves(ps->policies[0]->cond, v, 0, 4), 1);
	CHECK_EQ_INT(v[0]->src_index, 1);             /* the policy file, not the library (0) */
	cmp = v[0]->cond;
	CHECK_EQ_INT(cmp->kind, DW_TN_CMP);
	CHECK_EQ_INT(cmp->off, co);                   /* the rule's own node */
	CHECK_EQ_INT(cmp->lhs->kind, DW_TT_AGG);
	CHECK_EQ_INT(cmp->lhs->off, co);
	CHECK_EQ_INT(cmp->lhs->end, ce);
	g = cmp->lhs->agg;
	CHECK_EQ_INT(g->for_binders[0].off, co);
	CHECK_EQ_INT(g->for_binders[0].end, ce);
	fm = g->where;
	CHECK_EQ_INT(fm->kind, DW_TN_FORMERLY);
	CHECK_EQ_INT(fm->off, co);
	CHECK_EQ_INT(fm->end, ce);
	CHECK_EQ_INT(fm->window.off, wo);
	CHECK_EQ_INT(fm->window.end, wo + 2);
	CHECK_EQ_INT(fm->window.seconds, 3600);
	and = fm->a;
	CHECK_EQ_INT(and->kind, DW_TN_AND);
	CHECK_EQ_INT(and->off, co);
	CHECK_EQ_INT(and->a->kind, DW_TN_PRED);
	CHECK_EQ_INT(and->a->off, po);                /* the argument */
	CHECK_EQ_INT(and->a->end, po + strlen(PA));
	CHECK_EQ_INT(and->b->kind, DW_TN_TP);
	CHECK_EQ_INT(and->b->off, co);
	CHECK_EQ_INT(and->b->binder.off, co);
	dw_policy_set_free(ps);

	/* a binder from an argument keeps the identifier's span */
	src = WHEN("sum_within(bytes, 1h, Box::Action::\"a\"::request{ n: bytes }) > 1");
	run_keep(src, &ps);
	CHECK_EQ_INT(g_rc, 0);
	CHECK_EQ_INT(leaves(ps->policies[0]->cond, v, 0, 4), 1);
	g = v[0]->cond->lhs->agg;
	CHECK_EQ_INT(g->summand.off, off_of(src, "bytes", 0));
	CHECK_EQ_INT(g->summand.end, off_of(src, "bytes", 0) + 5);
	CHECK_EQ_INT(g->for_binders[0].off, off_of(src, "bytes", 0));
	CHECK(dw_str_eq_c(g->for_binders[0].type, "Long"));
	dw_policy_set_free(ps);

	/* a diagnostic about a library macro's call: the policy file, the rule */
	run(WHEN(PA) "\n" WHEN("sum_within(1, 1h, " PA ") > 1"));
	CHECK_EQ_INT(g_policy, 2);
}

/* --- errors ------------------------------------------------------------------------ */

#define AT_LEAST "def temporal at_least(?k, ?s) { (count for ($t: Timepoint). where (formerly within " \
	"1h (?s && tp($t)))) >= ?k };\n"
#define TO "def temporal to(?h) { Box::Action::\"a\"::request{ input.host: ?h } };\n"

static void test_errors(void)
{
	/* arity */
	CHECK_EQ_STR(run(WHEN("count_within(1h) >= 1")),
		     "error `count_within(1h)`: macro `count_within` expects 2 argument(s), got 1");
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, " PA ", " PB ")")),
		     "error `once(1h, " PA ", " PB ")`: macro `once` expects 2 argument(s), got 3");
	CHECK_EQ_INT(g_policy, 1);
	/* kind */
	CHECK_EQ_STR(run("def cedar big(?x) { ?x > 10 };\n" WHEN("big(5)")),
		     "error `big(5)`: macro `big` is a cedar macro and cannot be called in a temporal "
		     "condition position");
	CHECK_EQ_STR(run("def cedar big(?x) { ?x > 10 };\n" WHEN("big(5) == 1")),
		     "error `big(5)`: macro `big` is a cedar macro and cannot be called in a temporal "
		     "condition position");
	CHECK_EQ_STR(run(WHEN(PB " && count_within(1h, " PA ")")),
		     "error `count_within(1h, " PA ")`: macro `count_within` is an aggregation macro (its "
		     "body is a `count` or `sum`): it yields a number, not a condition, so it can only be "
		     "a comparison operand, e.g. `count_within(…) >= 3`");
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, " PA ") >= 1")),
		     "error `once(1h, " PA ")`: macro `once` is a condition macro: it yields a temporal "
		     "condition, not a number, so it cannot be a comparison operand; call it where a "
		     "condition is expected");
	/* a condition macro where bind wants a value */
	CHECK_EQ_STR(run(ONCE WHEN("bind(n, once(1h, " PA "), n > 1)")),
		     "error `once(1h, " PA ")`: macro `once` is a condition macro: it yields a temporal "
		     "condition, not a number, so it cannot be a comparison operand; call it where a "
		     "condition is expected");
	/* unknown, in either position, and the `def cedar` side is untouched */
	CHECK_EQ_STR(run(WHEN("nope(1h)")), "error `nope(1h)`: unknown macro `nope` (no declared "
		     "`def temporal`)");
	CHECK_EQ_STR(run(WHEN("nope(1h) > 2")), "error `nope(1h)`: unknown macro `nope` (no declared "
		     "`def temporal`)");
	CHECK_EQ_STR(run(ONCE RULE "when { once(1) };"),
		     "error `once(1)`: macro `once` is a temporal macro and cannot be called in a cedar "
		     "expression position");
	/* macro-in-macro, wherever the call is in the body */
	CHECK_EQ_STR(run(ONCE "def temporal twice(?s) { " PB " && once(1h, ?s) };\n" WHEN(PA)),
		     "error `once(1h, ?s)`: in `def temporal` body: call of `once`: macro-in-macro is "
		     "not supported");
	CHECK_EQ_INT(g_policy, 0);
	CHECK_EQ_STR(run("def temporal many(?s) { 3 <= count_within(1h, ?s) };\n" WHEN(PA)),
		     "error `count_within(1h, ?s)`: in `def temporal` body: call of `count_within`: "
		     "macro-in-macro is not supported");
	CHECK_EQ_STR(run("def temporal cw(?w, ?s) { count_within(?w, ?s) };\n" WHEN(PA)),
		     "error `count_within(?w, ?s)`: in `def temporal` body: call of `count_within`: "
		     "macro-in-macro is not supported");
	/* binder position */
	CHECK_EQ_STR(run(WHEN("sum_within(1, 1h, " PA ") > 3")),
		     "error `1`: parameter `?a` is used in a binder position, so the call-site argument "
		     "must be a single identifier");
	CHECK_EQ_STR(run(WHEN("count_distinct_within(principal.name, 1h, " PA ") > 3")),
		     "error `principal.name`: parameter `?k` is used in a binder position, so the "
		     "call-site argument must be a single identifier");
	CHECK_EQ_STR(run(WHEN("count_distinct_within(_, 1h, " PA ") > 3")),
		     "error `_`: parameter `?k` is used in a binder position, so the call-site argument "
		     "must be a single identifier");
	CHECK_EQ_STR(run(WHEN("bind(" PA ", count_within(1h, " PA "), " PB ")")),
		     "error `" PA "`: parameter `?n` is used in a binder position, so the call-site "
		     "argument must be a single identifier");
	CHECK_EQ_STR(run(WHEN("count_distinct_within(context, 1h, " PA ") > 3")),
		     "error `context`: `context` is a reserved word and cannot be used as a binder name; "
		     "`principal`, `action`, `resource`, and `context` are the Cedar request variables — "
		     "rename the `exists` / `for` / `tp` variable");
	/* window position */
	CHECK_EQ_STR(run(ONCE WHEN("once(" PB ", " PA ")")),
		     "error `" PB "`: parameter `?w` is used as a window (`within ?w`), so the call-site "
		     "argument must be an interval literal such as `1h` (without `within`), not a "
		     "condition");
	CHECK_EQ_STR(run(ONCE WHEN("once(60, " PA ")")),
		     "error `60`: parameter `?w` is used as a window (`within ?w`), so the call-site "
		     "argument must be an interval literal such as `1h` (without `within`), not a value");
	/* condition position */
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, 5)")),
		     "error `5`: parameter `?s` stands for a temporal condition, so the call-site argument "
		     "must be a condition, not a value");
	CHECK_EQ_STR(run(ONCE WHEN("once(1h, 2h)")),
		     "error `2h`: parameter `?s` stands for a temporal condition, so the call-site "
		     "argument must be a condition, not an interval literal");
	CHECK_EQ_STR(run(WHEN("count_within(1h, context.x) > 1")),
		     "error `context.x`: parameter `?s` stands for a temporal condition, so the call-site "
		     "argument must be a condition, not a value");
	/* term position */
	CHECK_EQ_STR(run(AT_LEAST WHEN("at_least(" PB ", " PA ")")),
		     "error `" PB "`: parameter `?k` stands for a value, so the call-site argument must be "
		     "a term (a literal, a variable, a `context`/`principal`/`resource` field or an "
		     "aggregate), not a condition");
	CHECK_EQ_STR(run(AT_LEAST WHEN("at_least(3m, " PA ")")),
		     "error `3m`: parameter `?k` stands for a value, so the call-site argument must be a "
		     "term (a literal, a variable, a `context`/`principal`/`resource` field or an "
		     "aggregate), not an interval literal");
	/* an aggregate where the body puts a field value */
	CHECK_EQ_STR(run(TO WHEN("to(count_within(1h, " PA "))")),
		     "error `count_within(1h, " PA ")`: an aggregate (`sum`/`count`) may appear only as the "
		     "immediate operand of a comparison, not as a predicate-argument value or nested in "
		     "another term");
	/* the first of two errors, in source order */
	CHECK_EQ_STR(run(WHEN("nope(1) && count_within(1h) > 1")),
		     "error `nope(1)`: unknown macro `nope` (no declared `def temporal`)");
	/* the second rule's error is marked with its index */
	CHECK_EQ_STR(run(WHEN(PA) "\n" ONCE WHEN("once(1h)")),
		     "error `once(1h)`: macro `once` expects 2 argument(s), got 1");
	CHECK_EQ_INT(g_policy, 2);
}

/* --- limits ----------------------------------------------------------------------- */

static char *nest_calls(const char *defs, const char *open, size_t n, const char *mid,
			const char *close, const char *tail)
{
	size_t lo = strlen(open), lc = strlen(close), ld = strlen(defs), lm = strlen(mid);
	size_t lr = strlen(RULE "when temporal { "), lt = strlen(tail);
	char *s = malloc(ld + lr + n * (lo + lc) + lm + lt + 1), *p = s;

	if (s == NULL)
		return NULL;
	memcpy(p, defs, ld), p += ld;
	memcpy(p, RULE "when temporal { ", lr), p += lr;
	for (size_t k = 0; k < n; k++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, mid, lm), p += lm;
	for (size_t k = 0; k < n; k++, p += lc)
		memcpy(p, close, lc);
	memcpy(p, tail, lt), p += lt;
	*p = '\0';
	return s;
}

#define DBL "def temporal dbl(?s) { ?s && ?s };\n"

static void test_size_limit(void)
{
	char *s;
	const char *got;
	clock_t t0 = clock();

	/* 2^16 copies: 131071 nodes, shared, fine */
	s = nest_calls(DBL, "dbl(", 16, PA, ")", " };");
	got = run(s);
	CHECK(strncmp(got, "(&& (&& (&& ", 12) == 0);
	CHECK_EQ_INT(g_rc, 0);
	free(s);
	/* 2^18: over the limit, refused at the call that crossed it */
	s = nest_calls(DBL, "dbl(", 18, PA, ")", " };");
	got = run(s);
	CHECK(strstr(got, "after macro expansion, the temporal condition is too large (more than "
		      "200000 nodes)") != NULL);
	CHECK(strncmp(got, "error `dbl(dbl(" PA "))`", 9) == 0);  /* an inner call, not the first */
	CHECK(strncmp(got, "error `dbl(dbl(dbl(", 19) != 0 || strlen(got) < 200000);
	CHECK_EQ_INT(g_policy, 1);
	free(s);
	/* 2^60 would be exponential work: refused at once */
	s = nest_calls(DBL, "dbl(", 60, PA, ")", " };");
	got = run(s);
	CHECK(strstr(got, "too large") != NULL);
	free(s);
	/* two leaves of one rule, each under the limit, over it together */
	s = nest_calls(DBL, "dbl(", 16, PA, ")", " } when temporal { " PB " && "
		       "dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(dbl(" PB
		       ")))))))))))))))) };");
	got = run(s);
	CHECK(strstr(got, "after macro expansion, the temporal conditions of this rule are too large "
		      "(more than 200000 nodes)") != NULL);
	free(s);
	CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 10.0);
}

static void test_nest_limit(void)
{
	/* 20 levels per expansion */
	char deep[1024], *s;
	const char *got;
	size_t n = 0;

	n += (size_t)snprintf(deep + n, sizeof deep - n, "def temporal deep(?s) { ");
	for (int k = 0; k < 20; k++)
		n += (size_t)snprintf(deep + n, sizeof deep - n, "formerly within 1h (");
	n += (size_t)snprintf(deep + n, sizeof deep - n, "?s");
	for (int k = 0; k < 20; k++)
		n += (size_t)snprintf(deep + n, sizeof deep - n, ")");
	snprintf(deep + n, sizeof deep - n, " };\n");
	/* 60 nested calls: 1200 levels, deeper than the limit */
	s = nest_calls(deep, "deep(", 60, PA, ")", " };");
	got = run(s);
	if (strstr(got, "nests deeper") == NULL)
		fprintf(stderr, "  got: %.300s\n", got);
	CHECK(strstr(got, "after macro expansion, the temporal condition nests deeper than 1000 "
		      "levels") != NULL);
	CHECK_EQ_INT(g_policy, 1);
	free(s);
	/* 45 nested calls: 900 levels, fine */
	s = nest_calls(deep, "deep(", 45, PA, ")", " };");
	got = run(s);
	CHECK_EQ_INT(g_rc, 0);
	CHECK(strncmp(got, "(formerly 1h (formerly 1h", 25) == 0);
	free(s);
	/* long `&&` chains and `!` runs are not nesting (and need no deep stack) */
	{
		size_t n = 20000, k;
		char *chain = malloc(n * (strlen(PA) + 32) + 256), *p = chain;

		CHECK(chain != NULL);
		if (chain == NULL)
			return;
		p += sprintf(p, "%s", ONCE RULE "when temporal { ");
		for (k = 0; k < n; k++)
			p += sprintf(p, "%sonce(1h, !!!!" PA ")", k ? " && " : "");
		sprintf(p, " };");
		got = run(chain);
		CHECK_EQ_INT(g_rc, 0);
		CHECK(strncmp(got, "(&& (&& (&& ", 12) == 0);
		free(chain);
	}
}

/* --- every vector ------------------------------------------------------------------ */

static void test_vector_policies(void)
{
	const char *root = TEST_DATA_DIR "/dogwood";
	DIR *dir = opendir(root);
	struct dirent *e;
	size_t n_dirs = 0;

	CHECK(dir != NULL);
	if (dir == NULL)
		return;
	while ((e = readdir(dir)) != NULL) {
		char path[4096];
		size_t len = 0;
		char *src;
		const char *got;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/policy.dw", root, e->d_name);
		if ((src = test_read_file(path, &len)) == NULL)
			continue;
		n_dirs++;
		got = run(src);
		if (g_rc != 0)
			fprintf(stderr, "  %s: %s\n", path, got);
		CHECK_EQ_INT(g_rc, 0);
		CHECK(strstr(got, "LEFTOVER") == NULL);
		free(src);
	}
	closedir(dir);
	CHECK(n_dirs >= 8);
}

/* Expansion runs once per set. */
static void test_expand_twice(void)
{
	struct dw_policy_set *ps = NULL;
	struct dw_diags d;

	run_keep(ONCE WHEN("once(1h, " PA ")"), &ps);
	CHECK_EQ_INT(g_rc, 0);
	dw_diags_init(&d);
	CHECK_EQ_INT(dw_policy_set_expand(ps, &d), 0);
	CHECK_EQ_INT(d.n, 0);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
}

static const struct test_case tests[] = {
	{ "count_within", test_count_within },
	{ "sum_within", test_sum_within },
	{ "count_distinct_within", test_count_distinct_within },
	{ "bind", test_bind },
	{ "vector_macros", test_vector_macros },
	{ "condition_macros", test_condition_macros },
	{ "term_params", test_term_params },
	{ "binder_params", test_binder_params },
	{ "unused_params", test_unused_params },
	{ "refinement", test_refinement },
	{ "bodies_unchanged", test_bodies_unchanged },
	{ "hygiene", test_hygiene },
	{ "override", test_override },
	{ "spans", test_spans },
	{ "errors", test_errors },
	{ "size_limit", test_size_limit },
	{ "nest_limit", test_nest_limit },
	{ "vector_policies", test_vector_policies },
	{ "expand_twice", test_expand_twice },
};

TEST_MAIN(tests)
