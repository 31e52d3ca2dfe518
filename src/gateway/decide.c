/* decide.c - the gateway's requests to the engine: the local decider (decide.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decide.h"

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

/* Decide r; on a construction failure deny as an internal fault.  The
 * verdict keeps copies of what it needs: it outlives the decision. */
static int decide(struct dw_monitor *m, struct dw_request *r, int rc, struct gw_verdict *out)
{
	struct dw_decision d = { 0 };
	memset(out, 0, sizeof(*out));
	if (rc == 0)
		rc = dw_decide(m, r, &d, &out->ticket);
	else
		d.verdict = DW_DENY, d.cause = DW_CAUSE_INTERNAL_FAULT;
	out->allow = rc == 0 && d.verdict == DW_ALLOW;
	out->cause = d.cause;
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
			 struct gw_verdict *out)
{
	struct dw_request *r = dw_request_new();
	int rc = r ? connect_request(r, d->eng, host, port, ip) : -ENOMEM;
	return decide(d->mon, r, rc, out);
}

static int local_http(struct gw_decider *d, const struct gw_http_input *h, struct gw_verdict *out)
{
	struct dw_request *r = dw_request_new();
	int rc = r ? http_request(r, d->eng, h) : -ENOMEM;
	return decide(d->mon, r, rc, out);
}

static int local_refuse(struct gw_decider *d, const struct gw_http_input *h, const char *ip,
			uint64_t ticket, const char *cause, const char *rule, const char *reason)
{
	char err[256];
	const struct dw_refusal rf = { cause, rule, reason, "{\"status\":403}", NULL };
	struct dw_request *r = dw_request_new();
	int rc = r == NULL ? -ENOMEM
		: h->method != NULL ? http_request(r, d->eng, h)
		: connect_request(r, d->eng, h->host, h->port, ip);
	if (rc == 0)
		rc = dw_refuse(d->mon, r, ticket, &rf, err, sizeof(err));
	dw_request_free(r);
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

void gw_decider_local(struct gw_decider *d, struct dw_monitor *mon, const struct dw_engine *eng)
{
	*d = (struct gw_decider){ .connect = local_connect, .http = local_http,
				  .outcome = local_outcome, .refuse = local_refuse,
				  .sync = local_sync, .mon = mon, .eng = eng };
}
