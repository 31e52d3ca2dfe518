/* relay.h - the agent receiver's payloads, re-stamped as Box re-stamps them
 * (docs/records.md "The agent receiver"): an OTLP/HTTP body the agent POSTs
 * to /v1/traces, /v1/logs or /v1/metrics, decoded (OTLP/JSON or protobuf),
 * cleaned of what only the box may claim, stamped with the box's resource,
 * and encoded for every kind of target: one OTLP/JSON line for files and a
 * protobuf body for OTLP/HTTP collectors.
 *
 * Pure code over libc and jansson: no I/O, no clock, no globals.  Memory is
 * bounded by the input: the decoded tree takes at most 24 bytes per input
 * byte (+1 MiB; the worst case, empty messages of 2 bytes, needs 20), the
 * JSON line at most TM_RELAY_EXPANSION (+1 MiB; every default field is
 * written, as Box writes them, so an empty 2-byte span becomes ~330 bytes),
 * the protobuf about the input's size; a body that would need more is
 * refused with -E2BIG before it is allocated (plus jansson's own tree of a
 * JSON body).  For a 4 MiB body that is at most ~300 MiB, once: the listener
 * relays at most 4 MiB of bodies at a time.  Thread-safe (reentrant). */
#ifndef CAIRN_TM_RELAY_H
#define CAIRN_TM_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "otlp.h"
#include "tmbuf.h"

#define TM_RELAY_RESOURCES_MAX 1024     /* Box's RESOURCE_LIMIT: more is answered 413 */
#define TM_RELAY_DEPTH_MAX 64           /* nested messages (AnyValue arrays in arrays...) */
#define TM_RELAY_EXPANSION 48           /* bytes of JSON line per input byte (+1 MiB) */

enum tm_relay_kind { TM_RELAY_TRACES, TM_RELAY_LOGS, TM_RELAY_METRICS };

/* What relayed resources are stamped with: operator_attrs[0, n_operator) are
 * the operator's OTEL_RESOURCE_ATTRIBUTES (as tm_res_build parsed them),
 * then strands.box.source="agent", strands.box.name=box_id and
 * strands.box.run.id=run_id.  Borrowed for the call. */
struct tm_relay_stamp {
	const char *box_id, *run_id;
	size_t n_operator;
	const struct tm_kv *operator_attrs;
};

/* The re-stamped request: json is one OTLP/JSON line ending in '\n' (every
 * field written, as otlp_json.c and Box's serde write them), pb the
 * protobuf body of the same request; n_resources the top-level resource
 * entries in it.  Free with tm_relay_out_free. */
struct tm_relay_out {
	struct tm_buf json;
	struct tm_buf pb;
	size_t n_resources;
};

/* Decode body[0, len) as an Export{Trace,Logs,Metrics}ServiceRequest of kind
 * (OTLP/JSON when json, else protobuf) and re-stamp it as Box does:
 *   - every attribute whose key starts with "strands.box." is removed from
 *     resources, scopes, spans, span events and links, log records, metric
 *     metadata, the data points of every metric type, and exemplars
 *     (attributes nested inside an AnyValue are values, and are kept);
 *   - a scope named "strands-box.<x>" is renamed "agent-claimed:strands-box.<x>";
 *   - each top-level resource (a default one when absent) loses the keys the
 *     operator sets, then gets the operator's attributes, strands.box.source,
 *     strands.box.name and strands.box.run.id appended in that order.
 * Decoding follows the OTLP/JSON rules for receivers: lowerCamelCase keys or
 * the proto field names, ids as hex of either case, enums as numbers or
 * names, 64-bit integers as decimal strings or numbers, bytes as base64 (or
 * base64url), null as absent, unknown fields ignored.  Unknown protobuf
 * fields are skipped and so not re-encoded; a non-repeated field given twice
 * keeps the last (as the official JS types decode it).
 * Returns 0 and fills *out (which the caller frees), or, with *out empty:
 *   -EINVAL  the body is not such a request: err says where (the JSON path,
 *            or the protobuf message path and byte offset) and why
 *            (malformed JSON, a wrong type, bad hex or base64, an integer out
 *            of range, a bad varint, a length past the end, a known field with
 *            the wrong wire type, a string that is not UTF-8, nesting past
 *            TM_RELAY_DEPTH_MAX).  The listener answers 400.
 *   -E2BIG   more than TM_RELAY_RESOURCES_MAX resources, or a body whose
 *            re-encoding would pass the TM_RELAY_EXPANSION bound (413).
 *   -ENOMEM.
 * st and body are borrowed; err (errlen bytes, may be 0) is NUL-terminated. */
int tm_relay_restamp(enum tm_relay_kind kind, bool json, const void *body, size_t len,
		     const struct tm_relay_stamp *st, struct tm_relay_out *out, char *err,
		     size_t errlen);

void tm_relay_out_free(struct tm_relay_out *o);        /* zeroes *o; NULL is a no-op */

/* "traces", "logs", "metrics". */
const char *tm_relay_kind_name(enum tm_relay_kind k);

#endif
