/* policy_cmd.c - `cairn policy check` and `cairn policy authorize`. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "dogwood.h"
#include "render.h"

#define CLI_MAX_FILE ((size_t)64 << 20)

char *cli_read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0, got;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			if (cap > CLI_MAX_FILE + 65536) {
				free(buf);
				if (f != stdin)
					fclose(f);
				errno = EFBIG;
				return NULL;
			}
			nb = realloc(buf, cap + 1);
			if (nb == NULL) {
				free(buf);
				if (f != stdin)
					fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno ? errno : EIO;
		free(buf);
		if (f != stdin)
			fclose(f);
		errno = e;
		return NULL;
	}
	if (f != stdin)
		fclose(f);
	if (n > CLI_MAX_FILE) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

void inputs_free(struct inputs *in)
{
	for (size_t i = 0; i < in->n; i++)
		free((char *)in->v[i].text);
	in->n = 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int inputs_add(struct inputs *in, const char *path, enum dw_input_format fmt)
{
	size_t len;
	char *text;

	if (in->n == CLI_MAX_INPUTS) {
		fprintf(stderr, "cairn: error: too many input files (at most %d)\n", CLI_MAX_INPUTS);
		return -1;
	}
	text = cli_read_file(path, &len);
	if (text == NULL) {
		fprintf(stderr, "cairn: error: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	in->v[in->n].file = path;
	in->v[in->n].text = text;
	in->v[in->n].len = len;
	in->v[in->n].format = fmt;
	in->n++;
	return 0;
}

enum dw_input_format policy_format(const char *path)
{
	return ends_with(path, ".cedar") ? DW_FMT_CEDAR : DW_FMT_DOGWOOD;
}

enum dw_input_format schema_format(const char *path)
{
	return ends_with(path, ".json") ? DW_FMT_JSON : DW_FMT_CEDARSCHEMA;
}

int parse_format(const char *s, enum render_format *out)
{
	if (strcmp(s, "human") == 0)
		*out = RENDER_HUMAN;
	else if (strcmp(s, "json") == 0)
		*out = RENDER_JSON;
	else {
		fprintf(stderr, "cairn: error: --format must be `human` or `json`, not `%s`\n", s);
		return -1;
	}
	return 0;
}

void print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENSURE_ASCII);

	if (s != NULL) {
		puts(s);
		free(s);
	}
}

/* Which temporal leaves the incremental engine does not keep: they are
 * evaluated by a bounded scan of the in-window history at each decision. */
static void print_scanned_leaves(const struct dw_engine *eng)
{
	for (size_t i = 0; i < dw_engine_leaf_count(eng); i++) {
		const char *eid, *aid, *why;
		size_t rule;
		bool inc;
		if (dw_engine_leaf_info(eng, i, &rule, &inc, &why, NULL) != 0 || inc)
			continue;
		dw_engine_rule_info(eng, rule, &eid, &aid, NULL);
		printf("note: rule %zu (%s): a temporal condition is evaluated by a bounded scan of "
		       "the events inside its window at each decision, not incrementally: %s\n",
		       rule + 1, aid ? aid : eid, why ? why : "unsupported shape");
		if (dw_engine_leaf_pending_blind(eng, i))
			printf("note: rule %zu (%s): its count over responses does not see requests "
			       "still in flight, so racing requests can overrun it; write it as "
			       "`count for (t: Timepoint). where formerly within W (P && tp(t))` to make "
			       "it exact\n", rule + 1, aid ? aid : eid);
	}
}

static json_t *leaves_json(const struct dw_engine *eng)
{
	json_t *a = json_array();

	for (size_t i = 0; i < dw_engine_leaf_count(eng); i++) {
		const char *why;
		size_t rule;
		bool inc;
		int64_t span;
		if (dw_engine_leaf_info(eng, i, &rule, &inc, &why, &span) != 0)
			continue;
		json_array_append_new(a, json_pack("{s:I, s:b, s:s?, s:I}", "rule", (json_int_t)rule,
						   "incremental", inc, "scan_reason", inc ? NULL : why,
						   "span_seconds", (json_int_t)span));
	}
	return a;
}

/* cairn policy check POLICY [--schema FILE]... [--format human|json] */
static int cmd_check(int argc, char **argv)
{
	struct inputs schemas = { .n = 0 }, policies = { .n = 0 }, events = { .n = 0 };
	enum render_format fmt = RENDER_HUMAN;
	struct dw_engine_config cfg;
	struct dw_engine *eng = NULL;
	struct dw_diags *diags = NULL;
	int rc = EXIT_USAGE, r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--schema") == 0 && i + 1 < argc) {
			i++;
			if (inputs_add(&schemas, argv[i], schema_format(argv[i])) != 0)
				goto out;
		} else if (strcmp(argv[i], "--event-schema") == 0 && i + 1 < argc) {
			i++;
			if (events.n != 0) {
				fprintf(stderr, "cairn: error: one --event-schema\n");
				goto out;
			}
			if (inputs_add(&events, argv[i], DW_FMT_DWSCHEMA) != 0)
				goto out;
		} else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
			if (parse_format(argv[++i], &fmt) != 0)
				goto out;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "cairn: error: unknown option `%s` for `policy check`\n", argv[i]);
			goto out;
		} else {
			if (policies.n != 0) {
				fprintf(stderr, "cairn: error: `policy check` takes one policy file\n");
				goto out;
			}
			if (inputs_add(&policies, argv[i], policy_format(argv[i])) != 0)
				goto out;
		}
	}
	if (policies.n == 0) {
		fprintf(stderr, "usage: cairn policy check POLICY [--schema FILE]... "
			"[--event-schema FILE] [--format human|json]\n");
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
	if (r == -ENOMEM) {
		fprintf(stderr, "cairn: error: out of memory\n");
		goto out;
	}
	rc = r == 0 ? EXIT_OK : EXIT_REJECTED;
	if (fmt == RENDER_JSON) {
		json_t *o = json_object();
		json_object_set_new(o, "valid", json_boolean(r == 0));
		json_object_set_new(o, "rules", json_integer(eng ? (json_int_t)dw_engine_rule_count(eng) : 0));
		json_object_set_new(o, "errors", render_diags_json(diags, DW_DIAG_ERROR));
		json_object_set_new(o, "warnings", render_diags_json(diags, DW_DIAG_WARNING));
		if (eng != NULL)
			json_object_set_new(o, "temporal_leaves", leaves_json(eng));
		print_json(o);
		json_decref(o);
	} else {
		size_t e = dw_diags_errors(diags), w = dw_diags_count(diags) - e;
		render_diags_human(stderr, diags);
		if (r == 0) {
			size_t n = dw_engine_rule_count(eng);
			printf("OK: %s: %zu rule%s valid", policies.v[0].file, n, n == 1 ? "" : "s");
			if (w)
				printf(" (%zu warning%s)", w, w == 1 ? "" : "s");
			printf(".\n");
			print_scanned_leaves(eng);
		} else {
			printf("FAILED: %s: %zu error%s, %zu warning%s.\n", policies.v[0].file, e,
			       e == 1 ? "" : "s", w, w == 1 ? "" : "s");
		}
	}
out:
	dw_engine_free(eng);
	dw_diags_free(diags);
	inputs_free(&schemas);
	inputs_free(&policies);
	inputs_free(&events);
	return rc;
}

/* A UID from JSON: {"type","id"}, {"__entity": {...}} or "Type::\"id\"". */
static int uid_from_json(json_t *j, char **type, char **id, size_t *id_len, const char *what)
{
	json_t *t, *i;

	if (json_is_object(j) && json_object_get(j, "__entity"))
		j = json_object_get(j, "__entity");
	if (json_is_object(j)) {
		t = json_object_get(j, "type");
		i = json_object_get(j, "id");
		if (!json_is_string(t) || !json_is_string(i))
			goto bad;
		*type = strdup(json_string_value(t));
		*id_len = json_string_length(i);
		*id = malloc(*id_len + 1);
		if (*type == NULL || *id == NULL)
			return -ENOMEM;
		memcpy(*id, json_string_value(i), *id_len + 1);
		return 0;
	}
	if (json_is_string(j)) {
		const char *s = json_string_value(j), *q = strstr(s, "::\"");
		size_t n = strlen(s);
		if (q == NULL || n < 2 || s[n - 1] != '"')
			goto bad;
		*type = strndup(s, (size_t)(q - s));
		/* the id between the quotes; escapes are not decoded here */
		*id = strndup(q + 3, (size_t)(s + n - 1 - (q + 3)));
		if (*type == NULL || *id == NULL)
			return -ENOMEM;
		*id_len = strlen(*id);
		return 0;
	}
bad:
	fprintf(stderr, "cairn: error: request: `%s` must be an entity UID ({\"type\": …, \"id\": …} "
		"or \"Type::\\\"id\\\"\")\n", what);
	return -EINVAL;
}

static int request_from_json(struct dw_request *req, const struct dw_engine *eng, const char *path,
			     const char *text, size_t len)
{
	static const char *const names[3] = { "principal", "action", "resource" };
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *ctx;
	char err[512];
	int r = -EINVAL;

	if (j == NULL || !json_is_object(j)) {
		fprintf(stderr, "cairn: error: %s:%d:%d: %s\n", path, j ? 1 : je.line,
			j ? 1 : je.column, j ? "a request must be a JSON object" : je.text);
		json_decref(j);
		return -EINVAL;
	}
	for (int k = 0; k < 3; k++) {
		json_t *v = json_object_get(j, names[k]);
		char *type = NULL, *id = NULL;
		size_t id_len = 0;
		if (v == NULL) {
			if (k == 1) {
				fprintf(stderr, "cairn: error: %s: the request has no `action`\n", path);
				goto out;
			}
			continue;   /* Box fixes principal and resource */
		}
		r = uid_from_json(v, &type, &id, &id_len, names[k]);
		if (r == 0)
			r = k == 0 ? dw_request_set_principal(req, type, id, id_len) :
			    k == 1 ? dw_request_set_action(req, type, id, id_len) :
				     dw_request_set_resource(req, type, id, id_len);
		free(type);
		free(id);
		if (r != 0)
			goto out;
	}
	ctx = json_object_get(j, "context");
	if (ctx != NULL) {
		char *s = json_dumps(ctx, JSON_ENCODE_ANY | JSON_COMPACT);
		if (s == NULL) {
			r = -ENOMEM;
			goto out;
		}
		r = dw_request_set_context_json(req, eng, s, strlen(s), err, sizeof err);
		free(s);
		if (r != 0) {
			fprintf(stderr, "cairn: error: %s: %s\n", path, err);
			goto out;
		}
	}
	json_t *subj = json_object_get(j, "subject");
	if (json_is_string(subj) && (r = dw_request_set_subject(req, json_string_value(subj))) != 0)
		goto out;
	r = 0;
out:
	json_decref(j);
	return r;
}

/* cairn policy authorize --policies P [--entities E] [--schema S]... --request R */
static int cmd_authorize(int argc, char **argv)
{
	struct inputs schemas = { .n = 0 }, policies = { .n = 0 }, entities = { .n = 0 };
	struct inputs request = { .n = 0 };
	enum render_format fmt = RENDER_HUMAN;
	struct dw_engine_config cfg;
	struct dw_engine *eng = NULL;
	struct dw_diags *diags = NULL;
	struct dw_request *req = NULL;
	struct dw_decision dec;
	int rc = EXIT_USAGE, r;

	memset(&dec, 0, sizeof dec);
	/* every option takes a value: walk them in pairs */
	for (int i = 1; i < argc; i += 2) {
		const char *o = argv[i];
		if (i + 1 >= argc) {
			fprintf(stderr, "cairn: error: `%s` needs a value\n", o);
			goto out;
		}
		const char *v = argv[i + 1];
		if (strcmp(o, "--schema") == 0)
			r = inputs_add(&schemas, v, schema_format(v));
		else if (strcmp(o, "--policies") == 0)
			r = inputs_add(&policies, v, policy_format(v));
		else if (strcmp(o, "--entities") == 0)
			r = inputs_add(&entities, v, DW_FMT_JSON);
		else if (strcmp(o, "--request") == 0)
			r = inputs_add(&request, v, DW_FMT_JSON);
		else if (strcmp(o, "--format") == 0)
			r = parse_format(v, &fmt);
		else {
			fprintf(stderr, "cairn: error: unknown option `%s` for `policy authorize`\n", o);
			r = -1;
		}
		if (r != 0)
			goto out;
	}
	if (policies.n == 0 || request.n != 1) {
		fprintf(stderr, "usage: cairn policy authorize --policies FILE [--entities FILE] "
			"[--schema FILE]... --request FILE [--format human|json]\n");
		goto out;
	}
	diags = dw_diags_new();
	req = dw_request_new();
	if (diags == NULL || req == NULL)
		goto out;
	memset(&cfg, 0, sizeof cfg);
	cfg.schemas = schemas.v;
	cfg.n_schemas = schemas.n;
	cfg.policies = policies.v;
	cfg.n_policies = policies.n;
	cfg.entities = entities.v;
	cfg.n_entities = entities.n;
	cfg.flags = DW_VALIDATE | (schemas.n == 0 ? DW_BOX_RULES : 0);
	cfg.home = getenv("HOME");
	r = dw_engine_new(&cfg, &eng, diags);
	if (r != 0) {
		render_diags_human(stderr, diags);
		rc = r == -ENOMEM ? EXIT_USAGE : EXIT_REJECTED;
		goto out;
	}
	render_diags_human(stderr, diags);     /* warnings */
	if (request_from_json(req, eng, request.v[0].file, request.v[0].text, request.v[0].len) != 0) {
		rc = EXIT_REJECTED;
		goto out;
	}
	/* decided as the first event of a fresh history: temporal conditions see
	 * no past, rather than failing to evaluate */
	{
		struct dw_monitor *mon = NULL;
		char merr[256];
		uint64_t ticket;
		r = dw_monitor_new(eng, NULL, &mon, merr, sizeof merr);
		if (r == 0)
			r = dw_decide(mon, req, &dec, &ticket);
		dw_monitor_free(mon);
	}
	if (r != 0) {
		fprintf(stderr, "cairn: error: %s\n", r == -ENOMEM ? "out of memory" : strerror(-r));
		goto out;
	}
	if (fmt == RENDER_JSON) {
		json_t *o = json_object(), *reasons = json_array(), *errs = json_array();
		for (size_t i = 0; i < dec.n_reasons; i++)
			json_array_append_new(reasons, json_pack("{s:s, s:s}", "policy",
				dec.reasons[i].engine_id, "id", dec.reasons[i].id));
		for (size_t i = 0; i < dec.n_errors; i++)
			json_array_append_new(errs, json_pack("{s:s, s:s}", "policy",
				dec.errors[i].engine_id, "message", dec.errors[i].message));
		json_object_set_new(o, "decision", json_string(dec.verdict == DW_ALLOW ? "allow" : "deny"));
		json_object_set_new(o, "cause", json_string(dw_cause_name(dec.cause)));
		json_object_set_new(o, "cedar_decision", json_string(dec.cedar == DW_ALLOW ? "allow" : "deny"));
		json_object_set_new(o, "reasons", reasons);
		json_object_set_new(o, "errors", errs);
		json_object_set_new(o, "text", json_string(dec.text));
		print_json(o);
		json_decref(o);
	} else {
		printf("decision: %s\n", dec.verdict == DW_ALLOW ? "ALLOW" : "DENY");
		printf("cause: %s\n", dw_cause_name(dec.cause));
		printf("reasons:");
		for (size_t i = 0; i < dec.n_reasons; i++) {
			if (strcmp(dec.reasons[i].id, dec.reasons[i].engine_id) != 0)
				printf(" %s (@id %s)", dec.reasons[i].engine_id, dec.reasons[i].id);
			else
				printf(" %s", dec.reasons[i].engine_id);
		}
		printf(dec.n_reasons ? "\n" : " none\n");
		printf("errors:%s\n", dec.n_errors ? "" : " none");
		for (size_t i = 0; i < dec.n_errors; i++)
			printf("  %s: %s\n", dec.errors[i].engine_id, dec.errors[i].message);
		printf("text: %s\n", dec.text);
	}
	rc = EXIT_OK;
out:
	dw_decision_clear(&dec);
	dw_request_free(req);
	dw_engine_free(eng);
	dw_diags_free(diags);
	inputs_free(&schemas);
	inputs_free(&policies);
	inputs_free(&entities);
	inputs_free(&request);
	return rc;
}

int cmd_policy(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "authorize") == 0)
		return cmd_authorize(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "replay") == 0)
		return cmd_replay(argc - 1, argv + 1);
	fprintf(stderr, "usage: cairn policy check|authorize|replay ...\n");
	return EXIT_USAGE;
}
