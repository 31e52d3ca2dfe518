/* cedar_run.c - run Cedar integration tests (cedar-integration-tests' JSON
 * format, docs/formats.md §1) against libdogwood.
 *
 *   cedar-run [-q] TEST.json...      (-q: count validation disagreements silently)
 *
 * Paths inside a test are relative to the working directory, as in Cedar's
 * own harness.  For every request: decision, the set of reason policy ids and
 * the set of erroring policy ids must equal the expected ones.  One line per
 * failing request; validation agreement (`shouldValidate`) is counted apart.
 * Ends with `N passed, N failed` (requests); exit 1 if any failed. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dogwood.h"
#include "json_load.h"   /* NUL in object keys, as Cedar allows */

static unsigned long passed, failed, val_agree, val_disagree;
static bool quiet;

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static void first_error(const struct dw_diags *d, char *buf, size_t len)
{
	struct dw_diagnostic g;

	snprintf(buf, len, "(no message)");
	for (size_t i = 0; i < dw_diags_count(d); i++) {
		dw_diags_get(d, i, &g);
		if (g.severity == DW_DIAG_ERROR) {
			snprintf(buf, len, "%s:%u:%u: %s", g.file, g.line, g.col, g.message);
			return;
		}
	}
}

/* Fail every request of a test that could not be loaded. */
static void fail_all(const char *test, json_t *requests, const char *why)
{
	size_t n = json_is_array(requests) ? json_array_size(requests) : 1;

	for (size_t i = 0; i < n; i++) {
		printf("FAIL %s [%zu]: %s\n", test, i, why);
		failed++;
	}
}

static int set_uid(struct dw_request *req, int which, json_t *j)
{
	json_t *t, *id;

	if (json_is_object(j) && json_object_get(j, "__entity") != NULL)
		j = json_object_get(j, "__entity");
	t = json_object_get(j, "type");
	id = json_object_get(j, "id");
	if (!json_is_string(t) || !json_is_string(id))
		return -EINVAL;
	switch (which) {
	case 0:
		return dw_request_set_principal(req, json_string_value(t), json_string_value(id),
						json_string_length(id));
	case 1:
		return dw_request_set_action(req, json_string_value(t), json_string_value(id),
					     json_string_length(id));
	default:
		return dw_request_set_resource(req, json_string_value(t), json_string_value(id),
					       json_string_length(id));
	}
}

/* Compare a JSON array of ids with a list of ids, as sets. */
static bool same_ids(json_t *want, const char *const *got, size_t n)
{
	size_t w = json_is_array(want) ? json_array_size(want) : 0;

	if (want != NULL && !json_is_array(want))
		return false;
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t k = 0; k < w && !found; k++)
			found = strcmp(json_string_value(json_array_get(want, k)) ?
				       json_string_value(json_array_get(want, k)) : "", got[i]) == 0;
		if (!found)
			return false;
	}
	for (size_t k = 0; k < w; k++) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = json_string_value(json_array_get(want, k)) &&
				strcmp(json_string_value(json_array_get(want, k)), got[i]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static void print_ids(const char *const *ids, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "", ids[i]);
	printf("]");
}

static void run_request(const char *test, size_t idx, json_t *rq, const struct dw_engine *eng)
{
	const char *desc = json_string_value(json_object_get(rq, "description"));
	const char *want_dec = json_string_value(json_object_get(rq, "decision"));
	json_t *ctx = json_object_get(rq, "context"), *vr = json_object_get(rq, "validateRequest");
	struct dw_request *req = dw_request_new();
	struct dw_decision dec;
	const char *reasons[256], *errors[256];
	size_t nr = 0, ne = 0;
	char err[512];
	bool ok = true;

	memset(&dec, 0, sizeof dec);
	if (desc == NULL)
		desc = "";
	if (req == NULL || set_uid(req, 0, json_object_get(rq, "principal")) != 0 ||
	    set_uid(req, 1, json_object_get(rq, "action")) != 0 ||
	    set_uid(req, 2, json_object_get(rq, "resource")) != 0) {
		printf("FAIL %s [%zu] %s: malformed principal/action/resource\n", test, idx, desc);
		failed++;
		goto out;
	}
	if (ctx != NULL) {
		char *s = json_dumps(ctx, JSON_ENCODE_ANY | JSON_COMPACT);
		int r = s ? dw_request_set_context_json(req, eng, s, strlen(s), err, sizeof err) : -ENOMEM;
		free(s);
		if (r != 0) {
			printf("FAIL %s [%zu] %s: context rejected: %s\n", test, idx, desc, err);
			failed++;
			goto out;
		}
	}
	if ((vr == NULL || json_is_true(vr)) && dw_request_validate(req, eng, err, sizeof err) != 0) {
		printf("FAIL %s [%zu] %s: request validation failed: %s\n", test, idx, desc, err);
		failed++;
		goto out;
	}
	if (dw_authorize(eng, req, &dec) != 0) {
		printf("FAIL %s [%zu] %s: out of memory\n", test, idx, desc);
		failed++;
		goto out;
	}
	for (size_t i = 0; i < dec.n_reasons && nr < 256; i++)
		reasons[nr++] = dec.reasons[i].engine_id;
	for (size_t i = 0; i < dec.n_errors && ne < 256; i++)
		errors[ne++] = dec.errors[i].engine_id;
	if (want_dec == NULL || strcmp(want_dec, dec.cedar == DW_ALLOW ? "allow" : "deny") != 0)
		ok = false;
	if (!same_ids(json_object_get(rq, "reason"), reasons, nr) ||
	    !same_ids(json_object_get(rq, "errors"), errors, ne))
		ok = false;
	if (ok) {
		passed++;
		goto out;
	}
	failed++;
	{
		char *wr = json_dumps(json_object_get(rq, "reason"), JSON_ENCODE_ANY | JSON_COMPACT);
		char *we = json_dumps(json_object_get(rq, "errors"), JSON_ENCODE_ANY | JSON_COMPACT);
		printf("FAIL %s [%zu] %s: expected %s reasons %s errors %s; got %s reasons ", test,
		       idx, desc, want_dec ? want_dec : "?", wr ? wr : "[]", we ? we : "[]",
		       dec.cedar == DW_ALLOW ? "allow" : "deny");
		free(wr);
		free(we);
	}
	print_ids(reasons, nr);
	printf(" errors ");
	print_ids(errors, ne);
	for (size_t i = 0; i < dec.n_errors; i++)
		printf(" {%s: %s}", dec.errors[i].engine_id, dec.errors[i].message);
	printf("\n");
out:
	dw_decision_clear(&dec);
	dw_request_free(req);
}

static void run_test(const char *test)
{
	size_t len, plen = 0, elen = 0, slen = 0;
	char *text = read_file(test, &len), *ptext = NULL, *etext = NULL, *stext = NULL;
	json_error_t je;
	json_t *t = NULL, *requests;
	const char *ppath, *epath, *spath, *pfmt, *sfmt;
	struct dw_engine_config cfg;
	struct dw_input pin, ein, sin;
	struct dw_engine *eng = NULL;
	struct dw_diags *diags = dw_diags_new(), *vdiags = dw_diags_new();
	char msg[1024];

	if (text == NULL || diags == NULL || vdiags == NULL) {
		printf("FAIL %s: cannot read: %s\n", test, strerror(errno));
		failed++;
		goto out;
	}
	t = dw_json_loadb(text, len, JSON_ALLOW_NUL, &je);
	if (t == NULL) {
		printf("FAIL %s: %d:%d: %s\n", test, je.line, je.column, je.text);
		failed++;
		goto out;
	}
	requests = json_object_get(t, "requests");
	ppath = json_string_value(json_object_get(t, "policies"));
	epath = json_string_value(json_object_get(t, "entities"));
	spath = json_string_value(json_object_get(t, "schema"));
	pfmt = json_string_value(json_object_get(t, "policyFormat"));
	sfmt = json_string_value(json_object_get(t, "schemaFormat"));
	if (ppath == NULL || epath == NULL || spath == NULL) {
		fail_all(test, requests, "test names no policies, entities or schema file");
		goto out;
	}
	if (pfmt != NULL && strcmp(pfmt, "cedar") != 0) {
		fail_all(test, requests, "policyFormat other than cedar is not supported");
		goto out;
	}
	ptext = read_file(ppath, &plen);
	etext = read_file(epath, &elen);
	stext = read_file(spath, &slen);
	if (ptext == NULL || etext == NULL || stext == NULL) {
		snprintf(msg, sizeof msg, "cannot read %s", ptext == NULL ? ppath :
			 etext == NULL ? epath : spath);
		fail_all(test, requests, msg);
		goto out;
	}
	pin = (struct dw_input){ ppath, ptext, plen, DW_FMT_CEDAR };
	ein = (struct dw_input){ epath, etext, elen, DW_FMT_JSON };
	sin = (struct dw_input){ spath, stext, slen,
				 sfmt && strcmp(sfmt, "json") == 0 ? DW_FMT_JSON : DW_FMT_CEDARSCHEMA };
	memset(&cfg, 0, sizeof cfg);
	cfg.schemas = &sin;
	cfg.n_schemas = 1;
	cfg.policies = &pin;
	cfg.n_policies = 1;
	cfg.entities = &ein;
	cfg.n_entities = 1;
	if (dw_engine_new(&cfg, &eng, diags) != 0) {
		first_error(diags, msg, sizeof msg);
		fail_all(test, requests, msg);
		goto out;
	}
	{
		json_t *sv = json_object_get(t, "shouldValidate");
		bool valid = dw_engine_validate(eng, vdiags) == 0;
		if (json_is_boolean(sv)) {
			if (valid == json_is_true(sv)) {
				val_agree++;
			} else {
				val_disagree++;
				first_error(vdiags, msg, sizeof msg);
				if (!quiet)
					printf("VALIDATION-DISAGREE %s: expected shouldValidate=%s, got %s: %s\n",
				       test, json_is_true(sv) ? "true" : "false", valid ? "true" : "false",
				       valid ? "(validated)" : msg);
			}
		}
	}
	for (size_t i = 0; i < json_array_size(requests); i++)
		run_request(test, i, json_array_get(requests, i), eng);
out:
	dw_engine_free(eng);
	dw_diags_free(diags);
	dw_diags_free(vdiags);
	json_decref(t);
	free(text);
	free(ptext);
	free(etext);
	free(stext);
}

int main(int argc, char **argv)
{
	int first = 1;

	if (argc > 1 && strcmp(argv[1], "-q") == 0) {
		quiet = true;
		first = 2;
	}
	if (first >= argc) {
		fprintf(stderr, "usage: cedar-run [-q] TEST.json...\n");
		return 2;
	}
	for (int i = first; i < argc; i++)
		run_test(argv[i]);
	printf("validation: %lu agree, %lu disagree\n", val_agree, val_disagree);
	printf("%lu passed, %lu failed\n", passed, failed);
	return failed ? 1 : 0;
}
