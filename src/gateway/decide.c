/* decide.c - the gateway's requests to the engine (decide.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decide.h"

#define DENIAL_MAX 8192

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

/* Decide r; on a construction failure deny as an internal fault. */
static int decide(struct dw_monitor *m, struct dw_request *r, int rc, struct gw_verdict *out)
{
	memset(out, 0, sizeof(*out));
	if (rc == 0)
		rc = dw_decide(m, r, &out->d, &out->ticket);
	else
		out->d.verdict = DW_DENY, out->d.cause = DW_CAUSE_INTERNAL_FAULT;
	out->allow = rc == 0 && out->d.verdict == DW_ALLOW;
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

int gw_decide_connect(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		      unsigned port, const char *ip, struct gw_verdict *out)
{
	struct dw_request *r = dw_request_new();
	int rc = r ? connect_request(r, eng, host, port, ip) : -ENOMEM;
	return decide(m, r, rc, out);
}

int gw_decide_http(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		   unsigned port, const char *method, const char *path, int64_t body_bytes,
		   bool intercepted, struct gw_verdict *out)
{
	struct gw_http_input h = { host, port, method, path, body_bytes, intercepted };
	struct dw_request *r = dw_request_new();
	int rc = r ? http_request(r, eng, &h) : -ENOMEM;
	return decide(m, r, rc, out);
}

/* ---- refusals ---------------------------------------------------------------- */

const char *gw_verdict_rule(const struct gw_verdict *v)
{
	if (v->d.n_reasons > 0 && v->d.reasons[0].id != NULL)
		return v->d.reasons[0].id;
	return v->d.cause == DW_CAUSE_INTERNAL_FAULT ? "<internal-fault>" : "<default-deny>";
}

static int refuse(struct dw_monitor *m, struct dw_request *r, int rc, uint64_t ticket,
		  const char *cause, const char *rule, const char *reason)
{
	char err[256];
	const struct dw_refusal rf = { cause, rule, reason, "{\"status\":403}" };
	if (rc == 0)
		rc = dw_refuse(m, r, ticket, &rf, err, sizeof(err));
	dw_request_free(r);
	return rc;
}

int gw_refuse_connect(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		      unsigned port, const char *ip, uint64_t ticket, const char *cause,
		      const char *rule, const char *reason)
{
	struct dw_request *r = dw_request_new();
	int rc = r ? connect_request(r, eng, host, port, ip) : -ENOMEM;
	return refuse(m, r, rc, ticket, cause, rule, reason);
}

int gw_refuse_http(struct dw_monitor *m, const struct dw_engine *eng,
		   const struct gw_http_input *h, uint64_t ticket, const char *cause,
		   const char *rule, const char *reason)
{
	struct dw_request *r = dw_request_new();
	int rc = r ? http_request(r, eng, h) : -ENOMEM;
	return refuse(m, r, rc, ticket, cause, rule, reason);
}

int gw_record_response(struct dw_monitor *m, const struct gw_verdict *v, int status)
{
	char out[64], err[128];
	if (status < 0)
		return dw_record(m, v->ticket, "response", NULL, 0, err, sizeof(err));
	int n = snprintf(out, sizeof(out), "{\"status\":%d}", status);
	return dw_record(m, v->ticket, "response", out, (size_t)n, err, sizeof(err));
}

int gw_record_delivered(struct dw_monitor *m, const struct gw_verdict *v, int status,
			uint64_t body_bytes)
{
	char out[64], in[64], err[128];
	int n = snprintf(out, sizeof(out), "{\"status\":%d}", status);
	int k = snprintf(in, sizeof(in), "{\"body_bytes\":%" PRIu64 "}", body_bytes);
	return dw_record_input(m, v->ticket, "response", out, (size_t)n, in, (size_t)k, err,
			       sizeof(err));
}

int gw_record_error(struct dw_monitor *m, const struct gw_verdict *v)
{
	char err[128];
	return dw_record(m, v->ticket, "error", NULL, 0, err, sizeof(err));
}

void gw_verdict_clear(struct gw_verdict *v)
{
	dw_decision_clear(&v->d);
}

size_t gw_denial_body(const struct gw_verdict *v, bool http, char *buf, size_t len)
{
	const char *text = v->d.text ? v->d.text : "policy denied this operation";
	size_t n = 0, max = len ? len - 1 : 0;
	if (max > DENIAL_MAX)
		max = DENIAL_MAX;
	const char *prefix = http ? "http:request gate: " : "";
	for (const char *p = prefix; *p && n < max; p++)
		buf[n++] = *p;
	/* The engine's text is already escaped (Box's debug quoting); only
	 * refuse raw control characters a header-less body could still carry. */
	for (const unsigned char *p = (const unsigned char *)text; *p && n < max; p++)
		buf[n++] = (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p;
	if (len)
		buf[n] = '\0';
	return n;
}
