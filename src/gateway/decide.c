/* decide.c - the gateway's requests to the engine: the local decider (decide.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cause_dw.h"
#include "collector.h"
#include "decide.h"
#include "note.h"

#define RULES_MAX 16            /* determining rules a record names */

/* Box's fixed principal and resource (docs/policy-reference.md §1): rules
 * write them bare. */
static int request_base(struct dw_request *r, const char *action)
{
	if (dw_request_set_principal(r, "Box::Agent", "self", 4) != 0 ||
	    dw_request_set_resource(r, "Box::Resource", "unused", 6) != 0 ||
	    dw_request_set_action(r, "Box::Action", action, strlen(action)) != 0)
		return -ENOMEM;
	return 0;
}

/* The rule a denial names (decide.h), from the engine's decision. */
static const char *decision_rule(const struct dw_decision *d)
{
	if (d->n_reasons > 0 && d->reasons[0].id != NULL)
		return d->reasons[0].id;
	return d->cause == DW_CAUSE_INTERNAL_FAULT ? "<internal-fault>" : "<default-deny>";
}

/* What a decision's record says beside the engine's answer. */
struct about {
	const char *action;             /* "net:connect" */
	const char *resource;           /* Box's resource text */
	const char *host;
	unsigned port;
	const char *method;             /* http:request only */
	const struct gw_corr *corr;
	bool record_permit;             /* false: net:connect before DNS (Box records
	                                   only its denial) */
	struct tm_trace trace;          /* the record's ids, drawn before the decision */
};

/* Draw the record's ids and hand them to the engine as the request's note,
 * so the history can rebuild the record with the same ids (note.h). */
static void about_begin(struct about *a, struct tm_collector *tm, struct dw_request *r)
{
	tm_trace_begin(&a->trace, a->corr ? a->corr->traceparent : NULL);
	if (tm == NULL)
		return;
	struct tm_note n = { .trace = a->trace, .deny_only = !a->record_permit };
	char text[TM_NOTE_MAX];
	snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(tm));
	if (a->corr != NULL && a->corr->request_id != NULL)
		snprintf(n.rid, sizeof(n.rid), "%s", a->corr->request_id);
	tm_note_format(&n, text);
	if (r != NULL)
		(void)dw_request_set_note(r, text);    /* a record without its rebuild */
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}


static void record_base(struct tm_decision *td, const struct about *a, int64_t at)
{
	*td = (struct tm_decision){ .time_ns = at, .action = a->action, .resource = a->resource,
				    .rule = "<default-deny>", .subject = TM_SUBJECT_DEST,
				    .address = a->host, .port = a->port, .method = a->method,
				    .request_id = a->corr ? a->corr->request_id : NULL };
	td->trace = a->trace;
}

/* The record of one engine decision. */
static void record_decision(struct tm_collector *tm, const struct about *a,
			    const struct dw_decision *d, bool allow, int64_t at)
{
	if (tm == NULL || (allow && !a->record_permit))
		return;
	struct tm_rule rules[RULES_MAX];
	struct tm_decision td;
	record_base(&td, a, at);
	td.permit = allow;
	td.cause = allow ? TM_PERMITTED : tm_cause_of_dw(d->cause);
	if (!allow)
		td.reason = tm_cause_reason(td.cause);
	for (size_t i = 0; i < d->n_reasons && i < RULES_MAX; i++)
		rules[td.n_rules++] = (struct tm_rule){ d->reasons[i].id, d->reasons[i].description };
	td.rules = rules;
	tm_emit(tm, tm_record_decision(&td));
}

/* Decide r; on a construction failure deny as an internal fault.  The
 * verdict keeps copies of what it needs: it outlives the decision. */
static int decide(struct gw_decider *dec, struct dw_request *r, int rc, const struct about *a,
		  struct gw_verdict *out)
{
	struct dw_decision d = { 0 };
	int64_t at = now_ns();
	memset(out, 0, sizeof(*out));
	if (rc == 0)
		rc = dw_decide(dec->mon, r, &d, &out->ticket);
	else
		d.verdict = DW_DENY, d.cause = DW_CAUSE_INTERNAL_FAULT;
	out->allow = rc == 0 && d.verdict == DW_ALLOW;
	out->cause = d.cause;
	record_decision(dec->records, a, &d, out->allow, at);
	if (!out->allow) {
		out->rule = strdup(decision_rule(&d));
		out->text = d.text ? strdup(d.text) : NULL;
		if (out->rule == NULL || (d.text && out->text == NULL)) {
			/* the denial stands; only its words are lost */
			free(out->text);
			out->text = NULL;
			rc = rc ? rc : -ENOMEM;
		}
	}
	dw_decision_clear(&d);
	dw_request_free(r);
	return rc;
}

static int set_context(struct dw_request *r, const struct dw_engine *eng, json_t *input)
{
	json_t *ctx = json_pack("{s:o}", "input", input);
	char *text = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
	char err[256];
	int rc = text ? dw_request_set_context_json(r, eng, text, strlen(text), err, sizeof(err))
		      : -ENOMEM;
	free(text);
	json_decref(ctx);
	return rc;
}

/* The request for net:connect on host:port (ip NULL before DNS). */
static int connect_request(struct dw_request *r, const struct dw_engine *eng, const char *host,
			   unsigned port, const char *ip)
{
	char subject[512];
	int rc = request_base(r, "net:connect");
	if (rc == 0) {
		json_t *in = json_pack("{s:s, s:I}", "host", host, "port", (json_int_t)port);
		if (in && ip)
			json_object_set_new(in, "ip", json_string(ip));
		rc = in ? set_context(r, eng, in) : -ENOMEM;
	}
	if (rc == 0) {
		snprintf(subject, sizeof(subject), "%s:%u", host, port);
		rc = dw_request_set_subject(r, subject);
	}
	return rc;
}

static int http_request(struct dw_request *r, const struct dw_engine *eng,
			const struct gw_http_input *h)
{
	char subject[1200];
	int rc = request_base(r, "http:request");
	if (rc == 0) {
		json_t *in = json_pack("{s:s, s:I, s:s, s:s, s:I, s:b}", "host", h->host, "port",
				       (json_int_t)h->port, "method", h->method, "path", h->path,
				       "body_bytes", (json_int_t)(h->body_bytes < 0 ? 0 : h->body_bytes),
				       "intercepted", h->intercepted);
		rc = in ? set_context(r, eng, in) : -ENOMEM;
	}
	if (rc == 0) {
		/* Box's resource text: host:port/path */
		snprintf(subject, sizeof(subject), "%s:%u%s", h->host, h->port, h->path);
		rc = dw_request_set_subject(r, subject);
	}
	return rc;
}

static int local_connect(struct gw_decider *d, const char *host, unsigned port, const char *ip,
			 const struct gw_corr *corr, struct gw_verdict *out)
{
	char resource[512];
	snprintf(resource, sizeof(resource), "%s:%u", host, port);
	struct about a = { "net:connect", resource, host, port, NULL, corr, ip != NULL, .trace = { .has_parent = false } };
	struct dw_request *r = dw_request_new();
	int rc = r ? connect_request(r, d->eng, host, port, ip) : -ENOMEM;
	about_begin(&a, d->records, r);
	return decide(d, r, rc, &a, out);
}

static int local_http(struct gw_decider *d, const struct gw_http_input *h, struct gw_verdict *out)
{
	char resource[1200];
	snprintf(resource, sizeof(resource), "%s:%u%s", h->host, h->port, h->path);
	struct about a = { "http:request", resource, h->host, h->port, h->method, h->corr, true,
			   .trace = { .has_parent = false } };
	struct dw_request *r = dw_request_new();
	int rc = r ? http_request(r, d->eng, h) : -ENOMEM;
	about_begin(&a, d->records, r);
	return decide(d, r, rc, &a, out);
}

/* A refusal by the gateway's own checks is a decision of its own in Box's
 * records (cause enforcement); a policy denial's refusal is not: its
 * decision was recorded when it was made.  The record's ids go with the
 * refusal event into the history (note.h). */
static bool refusal_recorded(const struct gw_decider *d, const char *cause, const char *rule,
			     const char *reason)
{
	return d->records != NULL && cause != NULL && rule != NULL && reason != NULL &&
	       strcmp(cause, "enforcement") == 0;
}

static int local_refuse(struct gw_decider *d, const struct gw_http_input *h, const char *ip,
			uint64_t ticket, const char *cause, const char *rule, const char *reason)
{
	char err[256], resource[1200], note[TM_NOTE_MAX] = "";
	bool rec = refusal_recorded(d, cause, rule, reason);
	if (h->method != NULL)
		snprintf(resource, sizeof(resource), "%s:%u%s", h->host, h->port, h->path);
	else
		snprintf(resource, sizeof(resource), "%s:%u", h->host, h->port);
	struct about a = { h->method ? "http:request" : "net:connect", resource, h->host,
			   h->port, h->method, h->corr, true, .trace = { .has_parent = false } };
	if (rec) {
		struct tm_note n = { 0 };
		about_begin(&a, d->records, NULL);
		n.trace = a.trace;
		snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(d->records));
		if (h->corr != NULL && h->corr->request_id != NULL)
			snprintf(n.rid, sizeof(n.rid), "%s", h->corr->request_id);
		tm_note_format(&n, note);
	}
	const struct dw_refusal rf = { cause, rule, reason, "{\"status\":403}",
				       rec ? note : NULL };
	struct dw_request *r = dw_request_new();
	int rc = r == NULL ? -ENOMEM
		: h->method != NULL ? http_request(r, d->eng, h)
		: connect_request(r, d->eng, h->host, h->port, ip);
	if (rc == 0)
		rc = dw_refuse(d->mon, r, ticket, &rf, err, sizeof(err));
	dw_request_free(r);
	if (rec) {
		struct tm_decision td;
		record_base(&td, &a, now_ns());
		td.cause = TM_ENFORCEMENT;
		td.rule = rule;
		td.reason = reason;
		tm_emit(d->records, tm_record_decision(&td));
	}
	return rc;
}

static int local_outcome(struct gw_decider *d, enum gw_outcome kind, uint64_t ticket, int status,
			 uint64_t body_bytes)
{
	char out[64], in[64], err[128];
	int n = snprintf(out, sizeof(out), "{\"status\":%d}", status);
	switch (kind) {
	case GW_OUT_DELIVERED: {
		int k = snprintf(in, sizeof(in), "{\"body_bytes\":%" PRIu64 "}", body_bytes);
		if (dw_record_input(d->mon, ticket, "response", out, (size_t)n, in, (size_t)k, err,
				    sizeof(err)) == 0)
			return 0;
		/* a patch the monitor refuses must not leave the permit pending */
		return dw_record(d->mon, ticket, "response", out, (size_t)n, err, sizeof(err));
	}
	case GW_OUT_RESPONSE:
		if (status < 0)
			return dw_record(d->mon, ticket, "response", NULL, 0, err, sizeof(err));
		return dw_record(d->mon, ticket, "response", out, (size_t)n, err, sizeof(err));
	case GW_OUT_ERROR:
		return dw_record(d->mon, ticket, "error", NULL, 0, err, sizeof(err));
	case GW_OUT_RELEASE:
		return dw_release(d->mon, ticket);
	}
	return -EINVAL;
}

static int local_sync(struct gw_decider *d)
{
	return dw_sync(d->mon);
}

static void heap_release(struct tm_payload *p)
{
	free(p);
}

/* In-process (tests): a copy for the collector's queue.  The supervisor's
 * end of the link hands over the gateway's pages instead (link.c). */
static int local_relay(struct gw_decider *d, enum tm_relay_kind kind, const struct tm_relay_out *o)
{
	if (d->records == NULL)
		return 0;
	struct tm_payload *p = malloc(sizeof(*p) + o->json.n + o->pb.n);
	if (p == NULL)
		return -ENOMEM;
	uint8_t *b = (uint8_t *)(p + 1);
	if (o->json.n > 0)
		memcpy(b, o->json.p, o->json.n);
	if (o->pb.n > 0)
		memcpy(b + o->json.n, o->pb.p, o->pb.n);
	*p = (struct tm_payload){ .kind = kind, .json = b, .json_len = o->json.n,
				  .pb = b + o->json.n, .pb_len = o->pb.n,
				  .release = heap_release };
	tm_relay_emit(d->records, p);
	return 0;
}

void gw_decider_local(struct gw_decider *d, struct dw_monitor *mon, const struct dw_engine *eng,
		      struct tm_collector *records)
{
	*d = (struct gw_decider){ .connect = local_connect, .http = local_http,
				  .outcome = local_outcome, .refuse = local_refuse,
				  .sync = local_sync, .relay = local_relay, .mon = mon, .eng = eng,
				  .records = records };
}
