/* test_api.c - the public API end to end: loading with the Box schema, Box's
 * load refusals, requests and contexts, denial texts, concurrency. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "denial.h"
#include "dogwood.h"
#include "test.h"

static struct dw_engine *box_engine(const char *policy, struct dw_diags *diags)
{
	struct dw_input pin = { "policy.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg = { 0 };
	struct dw_engine *eng = NULL;

	cfg.policies = &pin;
	cfg.n_policies = 1;
	cfg.flags = DW_VALIDATE | DW_BOX_RULES;
	cfg.home = "/home/dev";
	if (dw_engine_new(&cfg, &eng, diags) != 0)
		return NULL;
	return eng;
}

static const char *first_message(const struct dw_diags *d)
{
	static char buf[2048];
	struct dw_diagnostic g;

	if (dw_diags_get(d, 0, &g) != 0)
		return "";
	snprintf(buf, sizeof buf, "%s", g.message);
	return buf;
}

static const char policy[] =
	"@id(\"read_project\")\n"
	"permit (principal, action == Box::Action::\"fs:read\", resource)\n"
	"when { context.input.path like \"~/proj/*\" };\n"
	"@id(\"no_secrets\")\n"
	"@description(\"Secrets stay on the host\")\n"
	"forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
	"when { context.input.path like \"*/.env\" };\n"
	"forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
	"when { context.input.path like \"*/.env\" && context.input.operation == "
	"Box::FsReadOperation::\"read_content\" };\n";

static int decide(struct dw_engine *eng, const char *action, const char *ctx, const char *subject,
		  struct dw_decision *d)
{
	struct dw_request *req = dw_request_new();
	char err[256] = "";
	int r;

	memset(d, 0, sizeof *d);

	dw_request_set_action(req, "Box::Action", action, strlen(action));
	r = dw_request_set_context_json(req, eng, ctx, strlen(ctx), err, sizeof err);
	if (r != 0) {
		fprintf(stderr, "  context: %s\n", err);
		dw_request_free(req);
		return r;
	}
	dw_request_set_subject(req, subject);
	r = dw_authorize(eng, req, d);
	dw_request_free(req);
	return r;
}

static void test_box_decisions(void)
{
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = box_engine(policy, diags);
	struct dw_decision d;

	CHECK(eng != NULL);
	if (eng == NULL) {
		fprintf(stderr, "  %s\n", first_message(diags));
		dw_diags_free(diags);
		return;
	}
	CHECK_EQ_INT(dw_engine_rule_count(eng), 3);
	CHECK_EQ_INT(decide(eng, "fs:read", "{\"input\": {\"path\": \"~/proj/a.c\", \"operation\": "
			    "{\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}", "~/proj/a.c", &d), 0);
	CHECK_EQ_INT(d.verdict, DW_ALLOW);
	CHECK_EQ_INT(d.cause, DW_CAUSE_PERMITTED);
	CHECK_EQ_STR(d.text, "policy permitted this operation on '~/proj/a.c'.");
	dw_decision_clear(&d);

	CHECK_EQ_INT(decide(eng, "fs:read", "{\"input\": {\"path\": \"~/proj/.env\", \"operation\": "
			    "{\"__entity\": {\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}}",
			    "~/proj/.env", &d), 0);
	CHECK_EQ_INT(d.verdict, DW_DENY);
	CHECK_EQ_INT(d.cause, DW_CAUSE_FORBIDDEN);
	CHECK_EQ_STR(d.text, "policy denied this operation on '~/proj/.env' [policy: no_secrets]: "
		     "Secrets stay on the host; [policy: policy_2].");
	dw_decision_clear(&d);

	CHECK_EQ_INT(decide(eng, "fs:read", "{\"input\": {\"path\": \"/etc/passwd\", \"operation\": "
			    "{\"type\": \"Box::FsReadOperation\", \"id\": \"read_metadata\"}}}", "/etc/passwd", &d), 0);
	CHECK_EQ_INT(d.cause, DW_CAUSE_NO_MATCH);
	CHECK_EQ_STR(d.text, "policy denied this operation on '/etc/passwd' [default-deny]: No permit "
		     "policy matched this request.");
	dw_decision_clear(&d);

	/* an action no rule names */
	CHECK_EQ_INT(decide(eng, "net:connect", "{\"input\": {\"host\": \"a\", \"port\": 1}}", "a:1", &d), 0);
	CHECK_EQ_INT(d.cause, DW_CAUSE_NO_MATCH);
	dw_decision_clear(&d);

	/* contexts are parsed against the action's schema */
	{
		struct dw_request *req = dw_request_new();
		char err[512] = "";
		dw_request_set_action(req, "Box::Action", "fs:read", 7);
		static const char c1[] = "{\"input\": {\"path\": 1, \"operation\": "
					 "{\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}";
		static const char c2[] = "{\"input\": {\"path\": \"x\", \"operation\": "
					 "{\"type\": \"Box::FsReadOperation\", \"id\": \"list\"}}}";
		CHECK(dw_request_set_context_json(req, eng, c1, strlen(c1), err, sizeof err) != 0);
		CHECK(strstr(err, "path") != NULL);
		/* as in Cedar, an undeclared enum id parses; request validation refuses it */
		CHECK(dw_request_set_context_json(req, eng, c2, strlen(c2), err, sizeof err) == 0);
		dw_request_set_principal(req, "Box::Agent", "self", 4);
		dw_request_set_resource(req, "Box::Resource", "unused", 6);
		CHECK(dw_request_validate(req, eng, err, sizeof err) != 0);
		CHECK(strstr(err, "list") != NULL);
		CHECK(dw_request_set_context_json(req, eng, "{\"input\": ", 10, err, sizeof err) != 0);
		CHECK(strstr(err, "line 1") != NULL);
		dw_request_free(req);
	}
	dw_engine_free(eng);
	dw_diags_free(diags);
}

static void expect_refusal(const char *pol, const char *msg)
{
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = box_engine(pol, diags);
	bool found = false;

	CHECK(eng == NULL);
	for (size_t i = 0; i < dw_diags_count(diags); i++) {
		struct dw_diagnostic g;
		dw_diags_get(diags, i, &g);
		if (strstr(g.message, msg) != NULL)
			found = true;
	}
	if (!found)
		fprintf(stderr, "  want: %s\n  got:  %s\n", msg, first_message(diags));
	CHECK(found);
	dw_engine_free(eng);
	dw_diags_free(diags);
}

static void test_box_refusals(void)
{
	expect_refusal("permit (principal, action == Box::Action::\"fs:raed\", resource);",
		       "policy references unknown action: for policy `policy_0`, unrecognized action "
		       "`Box::Action::\"fs:raed\"`; for policy `policy_0`, unable to find an applicable "
		       "action given the policy scope constraints");
	expect_refusal("permit (principal, action == Box::Action::\"fs:read\", resource)\n"
		       "when { context.input.paht like \"~/project/*\" };", "`input.paht`");
	expect_refusal("forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		       "when { context.input.program == \"rm\" && context.input.arg1 == \"-rf\" };",
		       "optional attribute `input.arg1`");
	expect_refusal("forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
		       "when { context.input.operation == Box::FsReadOperation::\"list\" };",
		       "Box::FsReadOperation::\"list\"");
	expect_refusal("@id(\"other_only\")\npermit (principal, action == Box::Action::\"fs:other\", resource);",
		       "policy names only a reserved action: rule @id(\"other_only\") (rule 1) names only "
		       "the reserved action \"fs:other\"; no operation raises it, so the rule cannot match; "
		       "name fs:read, fs:write, fs:delete, or fs:move, alone or beside fs:other");
	expect_refusal("permit (principal, action in [Box::Action::\"fs:other\"], resource);",
		       "the permit rule with no @id (rule 1) names only the reserved action");
	expect_refusal("@id(\"a\") permit (principal, action == Box::Action::\"fs:read\", resource);\n"
		       "@id(\"b\") permit (principal, action == Box::Action::\"fs:read\", resource);\n"
		       "@id(\"a\") forbid (principal, action == Box::Action::\"fs:read\", resource);",
		       "policy gives one @id to more than one rule: @id(\"a\") is on rules 1, 3; a denial "
		       "and a telemetry record name a rule by its @id, so give each rule its own @id");
	expect_refusal("@id(\"project_read\")\npermit (principal, action == Box::Action::\"fs:read\", resource)\n"
		       "when { context.input.path like \"/home/dev/project/*\" };",
		       "policy compares an inert literal: rule @id(\"project_read\") compares "
		       "context.input.path with the pattern \"/home/dev/project/*\", and a path under the "
		       "operator home is spelled ~/…; write \"~/project/*\"");
	expect_refusal("@id(\"project_read\")\npermit (principal, action == Box::Action::\"fs:read\", resource)\n"
		       "when { context.input.path like \"~/project/\" };",
		       "policy compares an inert literal: rule @id(\"project_read\") compares "
		       "context.input.path with the pattern \"~/project/\", and a directory is spelled "
		       "without a trailing slash; write \"~/project\"");
	expect_refusal("permit (principal, action == Box::Action::\"fs:read\", resource)\n"
		       "when { context.input.path == \"/home/dev\" };",
		       "and a path under the operator home is spelled ~/…; write \"~\"");
	expect_refusal("permit (principal, action == Box::Action::\"shell:exec\", resource) "
		       "when { Scanner::classify(context.input.command) == \"safe\" };",
		       "information providers are not enabled in this build");
}

static void test_denial_text(void)
{
	struct dw_buf b = { 0 };
	struct dw_rule_ref r[2] = { { 0, "policy_0", "policy_0", NULL },
				    { 3, "policy_3", "no_rm", "Do not \x1b[31mremove\\ ." } };
	char big[6000];

	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_FORBIDDEN, "a'b\"c\n\\", r, 2), 0);
	CHECK_EQ_STR(b.p, "policy denied this operation on 'a\\'b\\\"c\\n\\\\' [policy: policy_0]; "
		     "[policy: no_rm]: Do not \\u{1b}[31mremove\\\\ .");
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_FORBIDDEN, "", r, 1), 0);
	CHECK_EQ_STR(b.p, "policy denied this operation [policy: policy_0].");
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_FORBIDDEN, "x", NULL, 0), 0);
	CHECK_EQ_STR(b.p, "policy denied this operation on 'x' [policy: default-deny].");
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_INTERNAL_FAULT, "x", NULL, 0), 0);
	CHECK_EQ_STR(b.p, "policy denied this operation on 'x' because the request could not be evaluated.");
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_PERMITTED, NULL, NULL, 0), 0);
	CHECK_EQ_STR(b.p, "policy permitted this operation.");
	/* a description ending in punctuation gets no extra period */
	r[1].description = "Stop!";
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_FORBIDDEN, "x", r + 1, 1), 0);
	CHECK_EQ_STR(b.p, "policy denied this operation on 'x' [policy: no_rm]: Stop!");
	/* the subject is cut at 1024 escaped bytes, the text at 4096 */
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_NO_MATCH, big, NULL, 0), 0);
	CHECK(strstr(b.p, "'aaaa") != NULL);
	CHECK(strstr(b.p, "a...' [default-deny]") != NULL);
	CHECK(b.n == strlen("policy denied this operation on '") + 1024 + 4 +
		       strlen(" [default-deny]: No permit policy matched this request."));
	r[1].description = big;
	CHECK_EQ_INT(dw_denial_format(&b, DW_CAUSE_FORBIDDEN, "x", r + 1, 1), 0);
	CHECK_EQ_INT(b.n, 4096);
	CHECK(strcmp(b.p + b.n - 3, "...") == 0);
	dw_buf_free(&b);
}

struct worker {
	struct dw_engine *eng;
	int ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 2000; i++) {
		struct dw_decision d;
		bool env = i % 2;
		if (decide(w->eng, "fs:read", env ? "{\"input\": {\"path\": \"~/proj/.env\", \"operation\": "
			   "{\"__entity\": {\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}}" :
			   "{\"input\": {\"path\": \"~/proj/x\", \"operation\": "
			   "{\"__entity\": {\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}}", "s", &d) == 0 &&
		    d.verdict == (env ? DW_DENY : DW_ALLOW) && d.n_reasons == (env ? 2u : 1u))
			w->ok++;
		dw_decision_clear(&d);
	}
	return NULL;
}

static void test_concurrent(void)
{
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = box_engine(policy, diags);
	pthread_t t[4];
	struct worker w[4];

	CHECK(eng != NULL);
	if (eng == NULL) {
		dw_diags_free(diags);
		return;
	}
	for (int i = 0; i < 4; i++) {
		w[i].eng = eng;
		w[i].ok = 0;
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_INT(w[i].ok, 2000);
	}
	dw_engine_free(eng);
	dw_diags_free(diags);
}

static const struct test_case tests[] = {
	{ "box_decisions", test_box_decisions },
	{ "box_refusals", test_box_refusals },
	{ "denial_text", test_denial_text },
	{ "concurrent", test_concurrent },
};

TEST_MAIN(tests)
