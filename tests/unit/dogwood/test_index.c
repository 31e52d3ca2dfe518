/* test_index.c - the authorizer's condition index must never change an answer.
 * Random rule sets in the shapes the index looks at (string keys, `like`
 * prefixes, `has` guards, number and Bool tests before the key, conditions it
 * cannot use) are decided with and without the index over random contexts —
 * missing fields, wrong kinds, non-records — and every decision, reason set
 * and error set must be equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dogwood.h"
#include "test.h"

static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

static const char *const conjuncts[] = {
	"context.input.host == \"h0\"", "context.input.host == \"h1\"", "\"h2\" == context.input.host",
	"context.input.path like \"~/p0/*\"", "context.input.path like \"~/p1/*\"",
	"context.input.path like \"~/p1/a\"", "context.input.path like \"*x\"",
	"context.input.path like \"~/p*/b*\"", "context.input has arg1", "context.input has path",
	"context.input.arg1 == \"push\"", "context.input.arg1 == \"pull\"", "context has input",
	"context.input.port == 443", "context.input.port < 1000", "500 <= context.input.port",
	"context.input.flag", "!context.input.flag", "context.input.n.m == \"z\"",
	"context.input.n has m", "context.other == 1", "true", "false",
	"context.input.port + 1 > 2", "context.input.host like \"*\"", "context.input.host == 7",
	"context.input.n == {m: \"z\"}",
};

static const char *const ctx_parts[][5] = {
	{ "", "\"host\": \"h0\"", "\"host\": \"h1\"", "\"host\": 3", "\"host\": \"h2\"" },
	{ "", "\"path\": \"~/p0/a\"", "\"path\": \"~/p1/a\"", "\"path\": true", "\"path\": \"~/p1/bx\"" },
	{ "", "\"arg1\": \"push\"", "\"arg1\": \"pull\"", "\"arg1\": 1", "" },
	{ "", "\"port\": 443", "\"port\": 80", "\"port\": \"443\"", "\"port\": 9223372036854775807" },
	{ "", "\"flag\": true", "\"flag\": false", "\"flag\": 0", "" },
	{ "", "\"n\": {\"m\": \"z\"}", "\"n\": {\"m\": 1}", "\"n\": \"z\"", "\"n\": {}" },
};

static void make_policies(char *buf, size_t cap)
{
	static const char *const actions[] = { "action == Action::\"a\"", "action == Action::\"b\"",
					       "action in [Action::\"a\", Action::\"b\"]", "action" };
	size_t o = 0;
	unsigned n = 5 + rnd(40);

	for (unsigned i = 0; i < n; i++) {
		unsigned k = 1 + rnd(4);
		o += (size_t)snprintf(buf + o, cap - o, "%s(principal, %s, resource) when { ",
				      rnd(4) ? "permit" : "forbid", actions[rnd(4)]);
		for (unsigned j = 0; j < k; j++)
			o += (size_t)snprintf(buf + o, cap - o, "%s%s", j ? " && " : "",
					      conjuncts[rnd(sizeof conjuncts / sizeof *conjuncts)]);
		o += (size_t)snprintf(buf + o, cap - o, " }");
		if (rnd(5) == 0)
			o += (size_t)snprintf(buf + o, cap - o, " unless { %s }",
					      conjuncts[rnd(sizeof conjuncts / sizeof *conjuncts)]);
		o += (size_t)snprintf(buf + o, cap - o, ";\n");
	}
}

static void make_context(char *buf, size_t cap)
{
	size_t o = 0;
	unsigned shape = rnd(10);

	if (shape == 0) {
		snprintf(buf, cap, "{}");
		return;
	}
	if (shape == 1) {
		snprintf(buf, cap, "{\"input\": \"not a record\", \"other\": 1}");
		return;
	}
	o += (size_t)snprintf(buf + o, cap - o, "{\"other\": %d, \"input\": {", (int)rnd(2));
	bool first = true, typed = rnd(2);   /* half the contexts are well-typed */
	for (size_t i = 0; i < sizeof ctx_parts / sizeof *ctx_parts; i++) {
		const char *part = ctx_parts[i][typed ? 1 + rnd(2) : rnd(5)];
		if (*part == '\0')
			continue;
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", first ? "" : ", ", part);
		first = false;
	}
	snprintf(buf + o, cap - o, "}}");
}

static struct dw_engine *load(const char *text, unsigned flags)
{
	struct dw_input in = { "r.cedar", text, strlen(text), DW_FMT_CEDAR };
	struct dw_engine_config cfg = { 0 };
	struct dw_diags *d = dw_diags_new();
	struct dw_engine *eng = NULL;

	cfg.policies = &in;
	cfg.n_policies = 1;
	cfg.flags = DW_NO_BOX_SCHEMA | flags;
	if (dw_engine_new(&cfg, &eng, d) != 0) {
		struct dw_diagnostic g;
		dw_diags_get(d, 0, &g);
		fprintf(stderr, "  load failed: %s\n", g.message);
	}
	dw_diags_free(d);
	return eng;
}

static bool same(const struct dw_decision *a, const struct dw_decision *b)
{
	if (a->cedar != b->cedar || a->n_reasons != b->n_reasons || a->n_errors != b->n_errors)
		return false;
	for (size_t i = 0; i < a->n_reasons; i++)
		if (a->reasons[i].index != b->reasons[i].index)
			return false;
	for (size_t i = 0; i < a->n_errors; i++)
		if (a->errors[i].index != b->errors[i].index)
			return false;
	return true;
}

static void test_index_agrees(void)
{
	static char policies[16384], ctx[1024];
	unsigned long decisions = 0, mismatches = 0, allowed = 0, errored = 0;

	for (int set = 0; set < 300; set++) {
		struct dw_engine *fast, *slow;
		make_policies(policies, sizeof policies);
		fast = load(policies, 0);
		slow = load(policies, DW_NO_INDEX);
		CHECK(fast != NULL && slow != NULL);
		if (fast == NULL || slow == NULL) {
			dw_engine_free(fast);
			dw_engine_free(slow);
			continue;
		}
		for (int q = 0; q < 60; q++) {
			struct dw_request *req = dw_request_new();
			struct dw_decision a, b;
			static const char *const acts[] = { "a", "b", "c" };
			const char *act = acts[rnd(3)];
			make_context(ctx, sizeof ctx);
			dw_request_set_principal(req, "User", "u", 1);
			dw_request_set_action(req, "Action", act, strlen(act));
			dw_request_set_resource(req, "Doc", "d", 1);
			if (dw_request_set_context_json(req, fast, ctx, strlen(ctx), NULL, 0) != 0) {
				CHECK(!"context rejected");
				dw_request_free(req);
				continue;
			}
			dw_authorize(fast, req, &a);
			dw_authorize(slow, req, &b);
			decisions++;
			allowed += a.cedar == DW_ALLOW;
			errored += a.n_errors != 0;
			if (!same(&a, &b)) {
				if (mismatches++ < 5)
					fprintf(stderr, "  mismatch for context %s on action %s:\n%s\n", ctx,
						act, policies);
			}
			dw_decision_clear(&a);
			dw_decision_clear(&b);
			dw_request_free(req);
		}
		dw_engine_free(fast);
		dw_engine_free(slow);
	}
	CHECK_EQ_INT(mismatches, 0);
	/* the generator must reach every outcome, or the test proves little */
	CHECK(allowed > decisions / 20);
	CHECK(errored > decisions / 20);
	CHECK(decisions - allowed > decisions / 20);
	fprintf(stderr, "  %lu decisions, %lu allowed, %lu with errors\n", decisions, allowed, errored);
}

static const struct test_case tests[] = {
	{ "index_agrees", test_index_agrees },
};

TEST_MAIN(tests)
