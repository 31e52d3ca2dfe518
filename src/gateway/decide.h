/* decide.h - the gateway's decisions, in Box's order and words
 * (docs/egress.md "Decisions, in Box's order", "Denials and other answers"):
 * net:connect before DNS (no ip)
 * and per resolved address (with ip), http:request per request, the
 * ::response / ::error that close each, and the 403 body the workload sees.
 *
 * Every decision goes through the monitor, so its ::request is history
 * before the rules run; the caller makes the events durable (gw_sync) before
 * an outcome reaches the workload. */
#ifndef CAIRN_GW_DECIDE_H
#define CAIRN_GW_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dogwood.h"
#include "relay.h"

/* One decision and its ticket (for the outcome), as plain data so that it
 * crosses the link unchanged. */
struct gw_verdict {
	bool allow;
	uint64_t ticket;
	enum dw_cause cause;
	char *rule;                     /* the rule a denial names (gw_verdict_rule) */
	char *text;                     /* Box's denial text; NULL when allowed */
};

/* What joins a decision's record to the workload's own telemetry
 * (docs/records.md "Trace context"): the connection's request id
 * (`egress-<pid>-<ns>-<seq>`) and the traceparent the workload sent on the
 * request the decision is about ("" or NULL: none; the supervisor checks
 * it).  Borrowed for the call. */
struct gw_corr {
	const char *request_id;
	const char *traceparent;
};

/* http:request's input as the workload sent it: path canonical (no query),
 * body_bytes as offered (-1: unknown, streamed without a length: recorded as
 * 0 on the request), intercepted = inside a TLS tunnel. */
struct gw_http_input {
	const char *host;
	unsigned port;
	const char *method, *path;
	int64_t body_bytes;
	bool intercepted;
	const struct gw_corr *corr;     /* NULL: none */
};

enum gw_outcome {
	GW_OUT_RESPONSE = 1,            /* ::response, output.status (status < 0: no output) */
	GW_OUT_DELIVERED,               /* ::response, status and the delivered body bytes */
	GW_OUT_ERROR,                   /* ::error */
	GW_OUT_RELEASE,                 /* no outcome event: dw_release */
};

/* Where decisions are made.  In the gateway process every one goes to the
 * supervisor over a link (link.h: gw_decider_link; the engine and the
 * history stay in the supervisor, docs/egress.md "Two processes"); at the
 * supervisor's end of the link, and in tests, the engine decides here
 * (gw_decider_local).  The calls below go through these. */
struct gw_link;
struct tm_collector;
struct gw_decider {
	int (*connect)(struct gw_decider *d, const char *host, unsigned port, const char *ip,
		       const struct gw_corr *corr, struct gw_verdict *out);
	int (*http)(struct gw_decider *d, const struct gw_http_input *h, struct gw_verdict *out);
	int (*outcome)(struct gw_decider *d, enum gw_outcome kind, uint64_t ticket, int status,
		       uint64_t body_bytes);
	/* of http:request when h->method is set, else of net:connect (ip) */
	int (*refuse)(struct gw_decider *d, const struct gw_http_input *h, const char *ip,
		      uint64_t ticket, const char *cause, const char *rule, const char *reason);
	int (*sync)(struct gw_decider *d);
	/* an agent payload the agent receiver re-stamped (o borrowed) */
	int (*relay)(struct gw_decider *d, enum tm_relay_kind kind, const struct tm_relay_out *o);
	struct dw_monitor *mon;         /* local */
	const struct dw_engine *eng;
	struct tm_collector *records;   /* local: every decision's record (NULL: none) */
	struct gw_link *link;           /* remote */
};

/* A decider on this process's engine and monitor (decide.c); records NULL
 * or the collector its decisions are recorded to (docs/records.md "What the
 * gateway records": net:connect denials before DNS, every per-address
 * net:connect and every http:request, and the gateway's own refusals). */
void gw_decider_local(struct gw_decider *d, struct dw_monitor *mon, const struct dw_engine *eng,
		      struct tm_collector *records);

/* net:connect on host:port; ip NULL on the decision before DNS, else the
 * resolved address as canonical text.  0, or -ENOMEM/-EINVAL/-EPIPE (then
 * the verdict denies as an internal fault). */
static inline int gw_decide_connect(struct gw_decider *d, const char *host, unsigned port,
				    const char *ip, struct gw_verdict *out)
{
	return d->connect(d, host, port, ip, NULL, out);
}

/* The same, with the connection's correlation. */
static inline int gw_decide_connect_corr(struct gw_decider *d, const char *host, unsigned port,
					 const char *ip, const struct gw_corr *corr,
					 struct gw_verdict *out)
{
	return d->connect(d, host, port, ip, corr, out);
}

/* http:request for one request. */
static inline int gw_decide_http(struct gw_decider *d, const struct gw_http_input *h,
				 struct gw_verdict *out)
{
	return d->http(d, h, out);
}

/* Outcomes: http:request::response with output.status (status < 0: no reply,
 * no output) ; ::error when nothing was delivered; net:connect::response when
 * connected (no output), ::error when the connect definitely failed. */
static inline int gw_record_response(struct gw_decider *d, const struct gw_verdict *v,
				     int status)
{
	return d->outcome(d, GW_OUT_RESPONSE, v->ticket, status, 0);
}

static inline int gw_record_error(struct gw_decider *d, const struct gw_verdict *v)
{
	return d->outcome(d, GW_OUT_ERROR, v->ticket, 0, 0);
}

/* http:request::response once the reply was delivered: output.status, and
 * the response's input.body_bytes the bytes delivered (Box: the offer on
 * ::request, the delivered size on ::response).  Where that record cannot
 * be made, the plain ::response with the status is. */
static inline int gw_record_delivered(struct gw_decider *d, const struct gw_verdict *v,
				      int status, uint64_t body_bytes)
{
	return d->outcome(d, GW_OUT_DELIVERED, v->ticket, status, body_bytes);
}

/* A permitted request that has no outcome event (net:connect before DNS):
 * dw_release. */
static inline int gw_release(struct gw_decider *d, const struct gw_verdict *v)
{
	return d->outcome(d, GW_OUT_RELEASE, v->ticket, 0, 0);
}

/* Make every event so far durable (dw_sync) before an answer leaves. */
static inline int gw_sync(struct gw_decider *d)
{
	return d->sync(d);
}

/* Relay an agent payload the agent receiver re-stamped (docs/records.md
 * "The agent receiver") to the box's targets: queued by the collector,
 * never waited for.  0, or -errno when it could not be handed over (Box
 * answers the agent 200 either way). */
static inline int gw_relay(struct gw_decider *d, enum tm_relay_kind kind,
			   const struct tm_relay_out *o)
{
	return d->relay(d, kind, o);
}

/* The verdict's storage (verdict.c, as the three below). */
void gw_verdict_clear(struct gw_verdict *v);

/* Its cause as a refusal names it: dw_cause_name's words ("forbidden", ...),
 * known here without the engine. */
const char *gw_verdict_cause(const struct gw_verdict *v);

/* ---- refusals (docs/egress.md "Refusals in the history") ----------------------
 *
 * Every 403 the workload gets is recorded with its cause, before the answer
 * leaves: an `<action>::refusal` event (dw_refuse) with cause, rule, reason
 * (the body the workload saw) and output.status 403.  A policy denial
 * follows its ::request (cause and rule from the verdict: gw_verdict_rule);
 * a refusal by the gateway's own checks has cause "enforcement" and rule
 * "enforcement:egress" (the credential leg, the tunnel binding, a response
 * that cannot be scrubbed) or "enforcement:destination-floor".  ticket: the
 * decision it follows (same requestId), or 0 before any decision.
 * 0 or -errno (the refusal still stands; only its record failed). */

#define GW_GATE_EGRESS "enforcement:egress"
#define GW_GATE_FLOOR  "enforcement:destination-floor"

/* The rule a denial names: the first determining @id, else "<default-deny>"
 * (no permit matched) or "<internal-fault>" (the request could not be
 * evaluated, or the verdict never arrived).  Borrowed from v. */
const char *gw_verdict_rule(const struct gw_verdict *v);

static inline int gw_refuse_connect(struct gw_decider *d, const char *host, unsigned port,
				    const char *ip, uint64_t ticket, const char *cause,
				    const char *rule, const char *reason)
{
	const struct gw_http_input h = { .host = host, .port = port };
	return d->refuse(d, &h, ip, ticket, cause, rule, reason);
}

static inline int gw_refuse_connect_corr(struct gw_decider *d, const char *host, unsigned port,
					 const char *ip, const struct gw_corr *corr,
					 uint64_t ticket, const char *cause, const char *rule,
					 const char *reason)
{
	const struct gw_http_input h = { .host = host, .port = port, .corr = corr };
	return d->refuse(d, &h, ip, ticket, cause, rule, reason);
}

static inline int gw_refuse_http(struct gw_decider *d, const struct gw_http_input *h,
				 uint64_t ticket, const char *cause, const char *rule,
				 const char *reason)
{
	return d->refuse(d, h, NULL, ticket, cause, rule, reason);
}

/* Box's 403 body for a refused request: "http:request gate: <text>" (or the
 * text alone for net:connect), at most 8192 bytes, control characters
 * escaped.  Writes into buf[0, len) NUL-terminated; returns the length. */
size_t gw_denial_body(const struct gw_verdict *v, bool http, char *buf, size_t len);

#endif
