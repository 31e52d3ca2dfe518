/* replay_cmd.c - `cairn policy replay`: decide every event of a trace.
 *
 *   cairn policy replay POLICY --trace T [--schema S]... [--event-schema E]
 *                      [--format human|json] [--engine incremental|reference]
 *                      [--history DIR] [--text] [--strict-context]
 *
 * Output as Dogwood's `replay` (docs/policy-reference.md §7): one line per
 * decision event, `@<ts> (time point <k>): ALLOW|DENY`, then `  [rules: i, j]`
 * when rules determined it, then `    error: <msg>` per evaluation error; k
 * counts decision events.  The verdict is the Cedar answer (an errored rule is
 * skipped), as Dogwood prints it.  --history appends the trace to (and first
 * replays) a durable history in DIR, as a box would; --text adds Box's denial
 * text under each DENY.  A request_context is taken as given, as Dogwood's
 * replay takes it (a rule reading a missing attribute errors);
 * --strict-context checks it against the action's context type first, as a
 * box checks the contexts it builds.  Exit 0 whatever the verdicts; 2 when the
 * policy, schema or trace is rejected; 1 on usage or I/O errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "dogwood.h"
#include "render.h"

static bool show_text;

/* `@<ts>` as the trace wrote it: whole seconds, or with its fraction. */
static void print_human(int64_t ts_ns, size_t k, const struct dw_decision *d)
{
	char ts[32];

	dw_trace_ts_format(ts_ns, ts);
	printf("@%s (time point %zu): %s", ts, k, d->cedar == DW_ALLOW ? "ALLOW" : "DENY");
	if (d->n_reasons != 0) {
		printf("  [rules: ");
		for (size_t i = 0; i < d->n_reasons; i++)
			printf("%s%zu", i ? ", " : "", d->reasons[i].index);
		printf("]");
	}
	printf("\n");
	for (size_t i = 0; i < d->n_errors; i++)
		printf("    error: %s\n", d->errors[i].message);
	if (show_text && d->verdict == DW_DENY && d->text != NULL)
		printf("    %s\n", d->text);
}

/* timestamp: whole seconds (truncated toward zero), as Dogwood prints it;
 * timestamp_ns: exact, for a trace written with fractions. */
static json_t *verdict_json(int64_t ts_ns, size_t k, const struct dw_decision *d)
{
	json_t *o = json_object(), *rules = json_array(), *errs = json_array();

	for (size_t i = 0; i < d->n_reasons; i++)
		json_array_append_new(rules, json_integer((json_int_t)d->reasons[i].index));
	for (size_t i = 0; i < d->n_errors; i++)
		json_array_append_new(errs, json_string(d->errors[i].message));
	json_object_set_new(o, "index", json_integer((json_int_t)k));
	json_object_set_new(o, "timestamp", json_integer(ts_ns / 1000000000));
	json_object_set_new(o, "timestamp_ns", json_integer(ts_ns));
	json_object_set_new(o, "verdict", json_string(d->cedar == DW_ALLOW ? "allow" : "deny"));
	/* what an enforcement point applies: an evaluation error denies (Box) */
	json_object_set_new(o, "effective", json_string(d->verdict == DW_ALLOW ? "allow" : "deny"));
	json_object_set_new(o, "cause", json_string(dw_cause_name(d->cause)));
	if (d->verdict == DW_DENY && d->text != NULL)
		json_object_set_new(o, "text", json_string(d->text));
	json_object_set_new(o, "determining_rules", rules);
	json_object_set_new(o, "errors", errs);
	return o;
}

int cmd_replay(int argc, char **argv)
{
	struct inputs schemas = { .n = 0 }, policies = { .n = 0 }, events = { .n = 0 };
	struct inputs trace = { .n = 0 };
	enum render_format fmt = RENDER_HUMAN;
	struct dw_monitor_config mcfg = { .flags = DW_MON_CALLER_TIME };
	struct dw_engine_config cfg;
	struct dw_engine *eng = NULL;
	struct dw_monitor *mon = NULL;
	struct dw_trace *tr = NULL;
	struct dw_diags *diags = NULL;
	json_t *verdicts = NULL;
	char err[512];
	size_t k = 0;
	int rc = EXIT_USAGE, r;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (o[0] != '-' || o[1] == '\0') {
			if (policies.n != 0) {
				fprintf(stderr, "cairn: error: `policy replay` takes one policy file\n");
				goto out;
			}
			if (inputs_add(&policies, o, policy_format(o)) != 0)
				goto out;
			continue;
		}
		if (strcmp(o, "--text") == 0) {
			show_text = true;
			continue;
		}
		if (strcmp(o, "--strict-context") == 0) {
			mcfg.flags |= DW_MON_STRICT_CONTEXT;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "cairn: error: `%s` needs a value\n", o);
			goto out;
		}
		const char *v = argv[++i];
		if (strcmp(o, "--trace") == 0)
			r = trace.n ? (fprintf(stderr, "cairn: error: one --trace\n"), -1)
				    : inputs_add(&trace, v, DW_FMT_DOGWOOD);
		else if (strcmp(o, "--schema") == 0 || strcmp(o, "--policy-schema") == 0)
			r = inputs_add(&schemas, v, schema_format(v));
		else if (strcmp(o, "--event-schema") == 0)
			r = events.n ? (fprintf(stderr, "cairn: error: one --event-schema\n"), -1)
				     : inputs_add(&events, v, DW_FMT_DWSCHEMA);
		else if (strcmp(o, "--format") == 0)
			r = parse_format(v, &fmt);
		else if (strcmp(o, "--history") == 0) {
			mcfg.history_dir = v;
			r = 0;
		}
		else if (strcmp(o, "--engine") == 0) {
			r = 0;
			if (strcmp(v, "reference") == 0)
				mcfg.flags |= DW_MON_REFERENCE;
			else if (strcmp(v, "incremental") != 0) {
				fprintf(stderr, "cairn: error: --engine must be `incremental` or "
					"`reference`, not `%s`\n", v);
				r = -1;
			}
		} else {
			fprintf(stderr, "cairn: error: unknown option `%s` for `policy replay`\n", o);
			r = -1;
		}
		if (r != 0)
			goto out;
	}
	if (policies.n == 0 || trace.n == 0) {
		fprintf(stderr, "usage: cairn policy replay POLICY --trace FILE [--schema FILE]... "
			"[--event-schema FILE] [--format human|json] [--engine incremental|reference] "
			"[--history DIR] [--text] [--strict-context]\n");
		goto out;
	}
	diags = dw_diags_new();
	if (diags == NULL)
		goto out;
	memset(&cfg, 0, sizeof cfg);
	cfg.schemas = schemas.v;
	cfg.n_schemas = schemas.n;
	cfg.policies = policies.v;
	cfg.n_policies = policies.n;
	cfg.event_schema = events.n ? &events.v[0] : NULL;
	cfg.flags = DW_VALIDATE | (schemas.n == 0 ? DW_BOX_RULES : 0);
	cfg.home = getenv("HOME");
	r = dw_engine_new(&cfg, &eng, diags);
	if (r != 0) {
		render_diags_human(stderr, diags);
		rc = r == -ENOMEM ? EXIT_USAGE : EXIT_REJECTED;
		goto out;
	}
	r = dw_trace_load(trace.v[0].text, trace.v[0].len, &tr, err, sizeof err);
	if (r != 0) {
		fprintf(stderr, "cairn: error: %s: %s\n", trace.v[0].file,
			r == -ENOMEM ? "out of memory" : err);
		rc = r == -ENOMEM ? EXIT_USAGE : EXIT_REJECTED;
		goto out;
	}
	r = dw_monitor_new(eng, &mcfg, &mon, err, sizeof err);
	if (r != 0) {
		fprintf(stderr, "cairn: error: %s\n", r == -ENOMEM ? "out of memory" : err);
		goto out;
	}
	if (fmt == RENDER_JSON && (verdicts = json_array()) == NULL)
		goto out;
	for (size_t i = 0; i < dw_trace_len(tr); i++) {
		struct dw_decision d;
		bool decided;

		memset(&d, 0, sizeof d);
		r = dw_monitor_feed_trace(mon, tr, i, &decided, &d);
		if (r != 0) {
			dw_decision_clear(&d);
			fprintf(stderr, "cairn: error: event %zu: %s\n", i, strerror(-r));
			goto out;
		}
		if (decided && mcfg.history_dir != NULL && dw_sync(mon) != 0) {
			dw_decision_clear(&d);
			fprintf(stderr, "cairn: error: the history could not be made durable\n");
			goto out;
		}
		if (decided) {
			if (fmt == RENDER_JSON)
				json_array_append_new(verdicts, verdict_json(dw_trace_ts_ns(tr, i), k, &d));
			else
				print_human(dw_trace_ts_ns(tr, i), k, &d);
			k++;
		}
		dw_decision_clear(&d);
	}
	if (fmt == RENDER_JSON) {
		json_t *o = json_object();
		json_object_set(o, "verdicts", verdicts);
		print_json(o);
		json_decref(o);
	}
	rc = EXIT_OK;
out:
	json_decref(verdicts);
	dw_monitor_free(mon);
	dw_trace_free(tr);
	dw_engine_free(eng);
	dw_diags_free(diags);
	inputs_free(&schemas);
	inputs_free(&policies);
	inputs_free(&events);
	inputs_free(&trace);
	return rc;
}
