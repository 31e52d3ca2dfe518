/* otlp_listener.h - the agent receiver's HTTP side, in the gateway process
 * (docs/records.md "The agent receiver"): one accepted connection on the
 * loopback OTLP/HTTP port the agent's OTEL_EXPORTER_OTLP_ENDPOINT names,
 * served as Box's receiver serves it.
 *
 *   POST /v1/traces | /v1/logs | /v1/metrics      any other path: 404, another method: 405
 *   content-type application/json (case-insensitive, parameters allowed): OTLP/JSON;
 *     anything else, or none: protobuf
 *   Content-Length or chunked bodies of at most GW_OTLP_BODY_MAX (413), the whole
 *   request within the request deadline (408), keep-alive and pipelining
 *
 * Every answer is `content-type: application/json` with the body `{}`.  In
 * Box's order, once the body is read: the body's bytes are taken from the
 * listener's relay budget (GW_OTLP_BODY_MAX between every payload being
 * relayed at once: where Box has one slot, so that concurrent small
 * payloads are not lost), or the payload is dropped and answered 200
 * (counted dropped_busy, not decoded); then tm_relay_restamp (400 when the
 * body is not a request of the route's kind, 413 past 1024 resources); then
 * relay(), whose result is ignored as Box ignores it, then 200. */
#ifndef CAIRN_GW_OTLP_LISTENER_H
#define CAIRN_GW_OTLP_LISTENER_H

#include <stdint.h>

#include "relay.h"

#define GW_OTLP_BODY_MAX (4u << 20)     /* Box's DefaultBodyLimit */
#define GW_OTLP_REQUEST_MS 5000         /* Box's TimeoutLayer: one whole request */
#define GW_OTLP_IDLE_MS 60000           /* a kept-alive connection with no request is closed */

/* One per listener, shared by every connection it serves (all fields are
 * read and written atomically; zero-initialise it).  The counters are what
 * Box's `dropped` counts and more: accepted (relayed and answered 200),
 * dropped_busy (answered 200 when the budget could not hold it), refused
 * (every answer other than 200, and requests cut off by the deadline). */
struct gw_otlp_stats {
	uint64_t accepted, dropped_busy, refused;
	size_t relay_bytes;     /* the budget taken: bodies being relayed now */
	int request_ms;         /* the request deadline; 0: GW_OTLP_REQUEST_MS (tests shorten it) */
};

typedef int (*gw_otlp_relay_fn)(void *arg, enum tm_relay_kind k, const struct tm_relay_out *o);

/* Serve the connection fd (made non-blocking here) until the peer closes,
 * asks to close, sends a request that cannot be answered on the same
 * connection, stays idle GW_OTLP_IDLE_MS, or stop_fd (-1: none) becomes
 * readable; then close fd.  relay runs on this thread with the re-stamped
 * payload (borrowed for the call), and may run on several connections'
 * threads at once; st is borrowed for
 * the call; stats must outlive it. */
void gw_otlp_serve(int fd, int stop_fd, const struct tm_relay_stamp *st, gw_otlp_relay_fn relay,
		   void *arg, struct gw_otlp_stats *stats);

#endif
