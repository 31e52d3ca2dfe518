/* decide.h - the gateway's decisions, in Box's order and words
 * (docs/egress.md "Decisions, in Box's order", "Denials and other answers"):
 * net:connect before DNS (no ip)
 * and per resolved address (with ip), http:request per request, the
 * ::response / ::error that close each, and the 403 body the workload sees.
 *
 * Every decision goes through the monitor, so its ::request is history
 * before the rules run; the caller makes the events durable (dw_sync) before
 * an outcome reaches the workload. */
#ifndef CAIRN_GW_DECIDE_H
#define CAIRN_GW_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dogwood.h"

/* One decision and its ticket (for the outcome). */
struct gw_verdict {
	bool allow;
	uint64_t ticket;
	struct dw_decision d;           /* d.text: Box's denial text; release with gw_verdict_clear */
};

/* net:connect on host:port; ip NULL on the decision before DNS, else the
 * resolved address as canonical text.  0, or -ENOMEM/-EINVAL (then the
 * verdict denies as an internal fault). */
int gw_decide_connect(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		      unsigned port, const char *ip, struct gw_verdict *out);

/* http:request for one request as the workload sent it: path canonical
 * (no query), body_bytes as offered (-1: unknown, streamed without a
 * length: recorded as 0 on the request), intercepted = inside a TLS tunnel. */
int gw_decide_http(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		   unsigned port, const char *method, const char *path, int64_t body_bytes,
		   bool intercepted, struct gw_verdict *out);

/* Outcomes: http:request::response with output.status (status < 0: no reply,
 * no output) ; ::error when nothing was delivered; net:connect::response when
 * connected (no output), ::error when the connect definitely failed. */
int gw_record_response(struct dw_monitor *m, const struct gw_verdict *v, int status);
int gw_record_error(struct dw_monitor *m, const struct gw_verdict *v);

/* http:request::response once the reply was delivered: output.status, and
 * the response's input.body_bytes the bytes delivered (Box: the offer on
 * ::request, the delivered size on ::response). */
int gw_record_delivered(struct dw_monitor *m, const struct gw_verdict *v, int status,
			uint64_t body_bytes);

void gw_verdict_clear(struct gw_verdict *v);

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

/* http:request's input, as gw_decide_http takes it. */
struct gw_http_input {
	const char *host;
	unsigned port;
	const char *method, *path;
	int64_t body_bytes;
	bool intercepted;
};

/* The rule a denial names: the first determining @id, else "<default-deny>"
 * (no permit matched) or "<internal-fault>" (the request could not be
 * evaluated).  Borrowed from v. */
const char *gw_verdict_rule(const struct gw_verdict *v);

int gw_refuse_connect(struct dw_monitor *m, const struct dw_engine *eng, const char *host,
		      unsigned port, const char *ip, uint64_t ticket, const char *cause,
		      const char *rule, const char *reason);
int gw_refuse_http(struct dw_monitor *m, const struct dw_engine *eng,
		   const struct gw_http_input *h, uint64_t ticket, const char *cause,
		   const char *rule, const char *reason);

/* Box's 403 body for a refused request: "http:request gate: <text>" (or the
 * text alone for net:connect), at most 8192 bytes, control characters
 * escaped.  Writes into buf[0, len) NUL-terminated; returns the length. */
size_t gw_denial_body(const struct gw_verdict *v, bool http, char *buf, size_t len);

#endif
