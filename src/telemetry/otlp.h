/* otlp.h - records as OTLP export requests (docs/records.md "Encoding"):
 * OTLP/JSON lines for files, as Box writes them (camelCase, every field,
 * lowercase hex ids, 64-bit integers as decimal strings), and protobuf for
 * OTLP/HTTP targets.  One call encodes one export request of a batch: the
 * box's one resource, the records grouped by scope in the order the scopes
 * first appear. */
#ifndef CAIRN_TM_OTLP_H
#define CAIRN_TM_OTLP_H

#include <stddef.h>

#include "record.h"
#include "tmbuf.h"

struct tm_kv {
	const char *key, *value;
};

/* The box's resource: string attributes in order. */
struct tm_resource {
	size_t n;
	const struct tm_kv *kv;
};

/* An ExportLogsServiceRequest of v[0, n) as one JSON line ending in '\n'.
 * Every record is a log record. */
void tm_json_logs(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		  size_t n);

/* An ExportTraceServiceRequest of the records of v[0, n) that have a span,
 * as one JSON line; nothing when none has. */
void tm_json_spans(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		   size_t n);

/* Both lines of a batch, as tm_json_logs then tm_json_spans write them,
 * each record's attributes encoded once (the collector's form). */
void tm_json_batch(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		   size_t n);

/* The same requests in protobuf, for OTLP/HTTP (application/x-protobuf):
 * an ExportLogsServiceRequest of v[0, n), and an ExportTraceServiceRequest
 * of the records that have a span (nothing when none has), appended to b.
 * Their content is the JSON lines' (same grouping, attributes and ids); a
 * field at its proto3 default is left out, as Box's encoder leaves it. */
void tm_pb_logs(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		size_t n);
void tm_pb_spans(struct tm_buf *b, const struct tm_resource *res, struct tm_rec *const *v,
		 size_t n);

/* A JSON string literal of s (quotes included): escapes as serde_json does
 * ('"', '\\', control characters; \u00XX except \b \f \n \r \t). */
void tm_json_str(struct tm_buf *b, const char *s);

#endif
