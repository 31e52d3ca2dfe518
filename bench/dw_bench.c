/* dw_bench.c - `make bench`'s driver for libdogwood (see bench/README.md).
 *
 * Loads a Cedar policy file against the built-in Box schema (DW_FMT_CEDAR, no schemas,
 * DW_VALIDATE), reads a requests file, builds every dw_request up front, warms up, then
 * times dw_authorize over several passes and prints one JSON object on stdout:
 *
 *   {"rules": N, "requests": M, "load_ms": …, "build_us_p50": …, "passes": K,
 *    "p50_us": …, "p99_us": …, "mean_us": …, "throughput": decisions per CPU second,
 *    "throughput_wall": decisions per wall-clock second,
 *    "decisions": "ADDA…", "causes": "PFNE…", "reasons": [[policy index, …], …],
 *    "n_errors": …, "unstable": …}
 *
 * Requests file: a JSON array of {"action": "fs:read", "context": {…}} (principal
 * Box::Agent::"self" and resource Box::Resource::"unused" for all), or objects that also give
 * "principal"/"resource" as {"type", "id"}.
 *
 * decisions[i] is Cedar's answer (dw_decision.cedar: 'A' allow, 'D' deny) for request i,
 * causes[i] the effective cause (P permitted, F forbidden, N no match, E internal fault),
 * reasons[i] the determining rules - what run.mjs compares against cedar-wasm.
 *
 * Latency: each dw_authorize is timed alone with clock_gettime(CLOCK_MONOTONIC);
 * dw_decision_clear is outside the timed region.  Throughput: a separate pass over all
 * requests with no per-call timing, dw_authorize + dw_decision_clear each, over the
 * process's CPU time (CLOCK_PROCESS_CPUTIME_ID; also over wall time).  Latency and
 * throughput passes alternate; p50/p99/throughput are the medians over passes.
 *
 * Usage: dw-bench --policies FILE --requests FILE [--min-passes N] [--max-passes N]
 *                 [--min-ms MS] [--load-reps N] [--no-validate] [--no-reasons] [--per-request]
 *
 * --per-request adds "request_us": each request's median latency over the passes (µs).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "dogwood.h"

struct opts {
	const char *policies, *requests;
	int min_passes, max_passes, load_reps;
	double min_ms;
	bool validate, reasons, per_request;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this (single-threaded) process: time spent descheduled on a busy machine
 * does not count, which makes throughput comparable across noisy runs */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "dw-bench: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		die("cannot open %s", path);
	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			if (buf == NULL)
				die("out of memory reading %s", path);
		}
		size_t k = fread(buf + n, 1, cap - n - 1, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f))
		die("cannot read %s", path);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of sorted v[0, n) */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static double median_d(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	if (n == 0)
		return 0;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct dw_engine *load(const struct opts *o, const char *text, size_t len, double *ms)
{
	struct dw_input pol = { o->policies, text, len, DW_FMT_CEDAR };
	struct dw_engine_config cfg = { 0 };
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = NULL;
	uint64_t t0, t1;
	int r;

	if (diags == NULL)
		die("%s", "out of memory");
	cfg.policies = &pol;
	cfg.n_policies = 1;
	cfg.flags = o->validate ? DW_VALIDATE : 0;
	t0 = now_ns();
	r = dw_engine_new(&cfg, &eng, diags);
	t1 = now_ns();
	if (r != 0) {
		size_t n = dw_diags_count(diags);
		fprintf(stderr, "dw-bench: loading %s failed (%d): %zu diagnostics\n", o->policies, r, n);
		for (size_t i = 0; i < n && i < 20; i++) {
			struct dw_diagnostic d;
			dw_diags_get(diags, i, &d);
			fprintf(stderr, "  %s:%u:%u: %s: %s\n", d.file ? d.file : "?", d.line, d.col,
				d.severity == DW_DIAG_ERROR ? "error" : "warning", d.message);
			if (d.line_text)
				fprintf(stderr, "    %s\n", d.line_text);
		}
		exit(3);
	}
	dw_diags_free(diags);
	*ms = (double)(t1 - t0) / 1e6;
	return eng;
}

static void set_uid(struct dw_request *r, int which, json_t *v, const char *dtype, const char *did)
{
	const char *type = dtype, *id = did;
	size_t id_len = strlen(did);
	int rc;

	if (json_is_object(v)) {
		json_t *e = json_object_get(v, "__entity");
		if (e != NULL)
			v = e;
		type = json_string_value(json_object_get(v, "type"));
		id = json_string_value(json_object_get(v, "id"));
		if (type == NULL || id == NULL)
			die("%s", "request: entity without type/id");
		id_len = json_string_length(json_object_get(v, "id"));
	}
	rc = which == 0 ? dw_request_set_principal(r, type, id, id_len)
	   : which == 1 ? dw_request_set_action(r, type, id, id_len)
			: dw_request_set_resource(r, type, id, id_len);
	if (rc != 0)
		die("%s", "request: setting principal/action/resource failed");
}

/* Build request i from its JSON; ctx is the context already serialised. */
static struct dw_request *build(const struct dw_engine *eng, json_t *q, const char *ctx, size_t i)
{
	struct dw_request *r = dw_request_new();
	json_t *a = json_object_get(q, "action");
	char err[512];
	int rc;

	if (r == NULL)
		die("%s", "out of memory");
	set_uid(r, 0, json_object_get(q, "principal"), "Box::Agent", "self");
	if (json_is_string(a)) {
		if (dw_request_set_action(r, "Box::Action", json_string_value(a), json_string_length(a)) != 0)
			die("%s", "out of memory");
	} else {
		set_uid(r, 1, a, "Box::Action", "");
	}
	set_uid(r, 2, json_object_get(q, "resource"), "Box::Resource", "unused");
	rc = dw_request_set_context_json(r, eng, ctx, strlen(ctx), err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "dw-bench: request %zu: context rejected: %s\n  %s\n", i, err, ctx);
		exit(3);
	}
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: dw-bench --policies FILE --requests FILE [--min-passes N] "
			"[--max-passes N] [--min-ms MS] [--load-reps N] [--no-validate] "
			"[--no-reasons] [--per-request]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { NULL, NULL, 5, 200, 3, 1500.0, true, true, false };
	size_t plen, qlen, n;
	char *ptext, *qtext;
	json_t *qs, *out, *reasons;
	json_error_t je;
	struct dw_engine *eng = NULL;
	struct dw_request **reqs;
	char **ctx;
	uint64_t *samples, *all = NULL;
	double *load_ms, *p50s, *p99s, *means, *tputs, *wtputs, *build_us;
	char *decisions, *causes;
	size_t n_errors = 0, unstable = 0;
	int passes = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--policies") && v) o.policies = v, i++;
		else if (!strcmp(a, "--requests") && v) o.requests = v, i++;
		else if (!strcmp(a, "--min-passes") && v) o.min_passes = atoi(v), i++;
		else if (!strcmp(a, "--max-passes") && v) o.max_passes = atoi(v), i++;
		else if (!strcmp(a, "--min-ms") && v) o.min_ms = atof(v), i++;
		else if (!strcmp(a, "--load-reps") && v) o.load_reps = atoi(v), i++;
		else if (!strcmp(a, "--no-validate")) o.validate = false;
		else if (!strcmp(a, "--no-reasons")) o.reasons = false;
		else if (!strcmp(a, "--per-request")) o.per_request = true;
		else usage();
	}
	if (o.policies == NULL || o.requests == NULL || o.min_passes < 1 || o.load_reps < 1)
		usage();
	if (o.max_passes < o.min_passes)
		o.max_passes = o.min_passes;

	/* ---- load: o.load_reps times, keep the last engine ---- */
	ptext = read_file(o.policies, &plen);
	load_ms = calloc((size_t)o.load_reps, sizeof *load_ms);
	for (int k = 0; k < o.load_reps; k++) {
		dw_engine_free(eng);
		eng = load(&o, ptext, plen, &load_ms[k]);
	}

	/* ---- requests ---- */
	qtext = read_file(o.requests, &qlen);
	qs = json_loadb(qtext, qlen, 0, &je);
	if (qs == NULL || !json_is_array(qs)) {
		fprintf(stderr, "dw-bench: %s: line %d: %s\n", o.requests, je.line, je.text);
		return 2;
	}
	free(qtext);
	n = json_array_size(qs);
	if (n == 0)
		die("%s: no requests", o.requests);
	reqs = calloc(n, sizeof *reqs);
	ctx = calloc(n, sizeof *ctx);
	samples = calloc(n, sizeof *samples);
	build_us = calloc(n, sizeof *build_us);
	decisions = calloc(n + 1, 1);
	causes = calloc(n + 1, 1);
	p50s = calloc((size_t)o.max_passes, sizeof *p50s);
	p99s = calloc((size_t)o.max_passes, sizeof *p99s);
	means = calloc((size_t)o.max_passes, sizeof *means);
	tputs = calloc((size_t)o.max_passes, sizeof *tputs);
	wtputs = calloc((size_t)o.max_passes, sizeof *wtputs);
	if (o.per_request)
		all = calloc(n * (size_t)o.max_passes, sizeof *all);
	if ((o.per_request && !all) || !reqs || !ctx || !samples || !build_us || !decisions || !causes || !p50s || !p99s ||
	    !means || !tputs || !wtputs)
		die("%s", "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_object_get(json_array_get(qs, i), "context");
		ctx[i] = c ? json_dumps(c, JSON_COMPACT) : strdup("{}");
		if (ctx[i] == NULL)
			die("%s", "out of memory");
	}
	/* Request construction cost (not part of the decision timing): build each request
	 * three times, keep the median per request and the last objects. */
	for (size_t i = 0; i < n; i++) {
		double t[3];
		for (int k = 0; k < 3; k++) {
			uint64_t t0 = now_ns();
			struct dw_request *r = build(eng, json_array_get(qs, i), ctx[i], i);
			t[k] = (double)(now_ns() - t0) / 1e3;
			dw_request_free(reqs[i]);
			reqs[i] = r;
		}
		build_us[i] = median_d(t, 3);
	}

	/* ---- reference pass: decisions and reasons ---- */
	reasons = json_array();
	for (size_t i = 0; i < n; i++) {
		struct dw_decision d;
		json_t *ri = json_array();
		if (dw_authorize(eng, reqs[i], &d) != 0)
			die("%s", "dw_authorize failed (ENOMEM)");
		decisions[i] = d.cedar == DW_ALLOW ? 'A' : 'D';
		causes[i] = "PFNE"[d.cause];
		n_errors += d.n_errors;
		for (size_t k = 0; k < d.n_reasons; k++)
			json_array_append_new(ri, json_integer((json_int_t)d.reasons[k].index));
		json_array_append_new(reasons, ri);
		dw_decision_clear(&d);
	}

	/* ---- warm-up: at least one pass and 100 ms ---- */
	{
		uint64_t t0 = now_ns();
		do {
			for (size_t i = 0; i < n; i++) {
				struct dw_decision d;
				dw_authorize(eng, reqs[i], &d);
				dw_decision_clear(&d);
			}
		} while (now_ns() - t0 < 100000000u);
	}

	/* ---- timed passes: latency pass, then throughput pass ---- */
	{
		uint64_t start = now_ns();
		while (passes < o.max_passes &&
		       (passes < o.min_passes || (double)(now_ns() - start) / 1e6 < o.min_ms)) {
			uint64_t sum = 0, t0, t1, c0, c1;
			for (size_t i = 0; i < n; i++) {
				struct dw_decision d;
				t0 = now_ns();
				dw_authorize(eng, reqs[i], &d);
				t1 = now_ns();
				samples[i] = t1 - t0;
				if (all)
					all[(size_t)passes * n + i] = t1 - t0;
				sum += t1 - t0;
				if ((d.cedar == DW_ALLOW ? 'A' : 'D') != decisions[i])
					unstable++;
				dw_decision_clear(&d);
			}
			qsort(samples, n, sizeof *samples, cmp_u64);
			p50s[passes] = (double)pct(samples, n, 0.50) / 1e3;
			p99s[passes] = (double)pct(samples, n, 0.99) / 1e3;
			means[passes] = (double)sum / (double)n / 1e3;
			t0 = now_ns();
			c0 = cpu_ns();
			for (size_t i = 0; i < n; i++) {
				struct dw_decision d;
				dw_authorize(eng, reqs[i], &d);
				dw_decision_clear(&d);
			}
			c1 = cpu_ns();
			t1 = now_ns();
			tputs[passes] = (double)n / ((double)(c1 - c0 ? c1 - c0 : 1) / 1e9);
			wtputs[passes] = (double)n / ((double)(t1 - t0) / 1e9);
			passes++;
		}
	}

	out = json_object();
	json_object_set_new(out, "rules", json_integer((json_int_t)dw_engine_rule_count(eng)));
	json_object_set_new(out, "requests", json_integer((json_int_t)n));
	json_object_set_new(out, "validate", json_boolean(o.validate));
	{
		json_t *all = json_array();
		for (int k = 0; k < o.load_reps; k++)
			json_array_append_new(all, json_real(load_ms[k]));
		json_object_set_new(out, "load_ms_all", all);
	}
	json_object_set_new(out, "load_ms", json_real(median_d(load_ms, (size_t)o.load_reps)));
	json_object_set_new(out, "build_us_p50", json_real(median_d(build_us, n)));
	json_object_set_new(out, "passes", json_integer(passes));
	json_object_set_new(out, "p50_us", json_real(median_d(p50s, (size_t)passes)));
	json_object_set_new(out, "p99_us", json_real(median_d(p99s, (size_t)passes)));
	json_object_set_new(out, "mean_us", json_real(median_d(means, (size_t)passes)));
	json_object_set_new(out, "throughput", json_real(median_d(tputs, (size_t)passes)));
	json_object_set_new(out, "throughput_wall", json_real(median_d(wtputs, (size_t)passes)));
	json_object_set_new(out, "n_errors", json_integer((json_int_t)n_errors));
	json_object_set_new(out, "unstable", json_integer((json_int_t)unstable));
	json_object_set_new(out, "decisions", json_string(decisions));
	json_object_set_new(out, "causes", json_string(causes));
	if (all) {
		/* per request: the median of its latencies over the passes, in µs */
		json_t *pr = json_array();
		double *v = calloc((size_t)passes, sizeof *v);
		if (v == NULL)
			die("%s", "out of memory");
		for (size_t i = 0; i < n; i++) {
			for (int k = 0; k < passes; k++)
				v[k] = (double)all[(size_t)k * n + i] / 1e3;
			json_array_append_new(pr, json_real(median_d(v, (size_t)passes)));
		}
		free(v);
		json_object_set_new(out, "request_us", pr);
	}
	if (o.reasons)
		json_object_set_new(out, "reasons", reasons);
	else
		json_decref(reasons);
	if (json_dumpf(out, stdout, JSON_COMPACT) != 0)
		return 2;
	fputc('\n', stdout);

	json_decref(out);
	for (size_t i = 0; i < n; i++) {
		dw_request_free(reqs[i]);
		free(ctx[i]);
	}
	json_decref(qs);
	dw_engine_free(eng);
	free(reqs), free(ctx), free(samples), free(build_us), free(decisions), free(causes);
	free(all), free(p50s), free(p99s), free(means), free(tputs), free(wtputs), free(load_ms), free(ptext);
	return 0;
}
