/* relay.c - re-stamping the agent's OTLP payloads (relay.h; docs/records.md
 * "The agent receiver").
 *
 * Divisions:
 *   1. the schema: every OTLP message of traces, logs and metrics with its
 *      fields (number, JSON name, proto name, type, flags), in the proto's
 *      declaration order, which is also the order Box's serde writes;
 *   2. the decoded tree, in one arena bounded by the input's size;
 *   3. the protobuf decoder, 4. the OTLP/JSON decoder (over jansson),
 *   5. the re-stamping, 6. the OTLP/JSON encoder, 7. the protobuf encoder,
 *   8. tm_relay_restamp.
 * All four codecs read the table of 1; none knows a message by name, so a
 * field added to the table is read and written both ways at once. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relay.h"

/* ---- 1. the schema ---------------------------------------------------------- */

enum ty {
	T_STR, T_BYTES, T_HEX,  /* T_HEX: bytes written as hex in JSON (trace and span ids) */
	T_BOOL, T_ENUM, T_INT32, T_UINT32, T_SINT32, T_FIXED32,
	T_INT64, T_UINT64, T_FIXED64, T_SFIXED64, T_DOUBLE, T_MSG,
};

enum {
	F_REP = 1,              /* repeated (numeric ones packed, as proto3 writes them) */
	F_OPT = 2,              /* proto3 `optional`: presence is kept, 0 is written */
	F_ONEOF = 4,            /* a member of the message's one oneof */
	F_STRIP = 8,            /* a list of KeyValue where Box strips strands.box.* */
	F_SCOPE = 16,           /* the scope name Box renames agent-claimed:... */
};

enum msg {
	M_ANY, M_ARRAY, M_KVLIST, M_KV, M_SCOPE, M_ENTITY, M_RESOURCE,
	M_TRACE_REQ, M_RSPANS, M_SSPANS, M_SPAN, M_EVENT, M_LINK, M_STATUS,
	M_LOGS_REQ, M_RLOGS, M_SLOGS, M_LOG,
	M_METRICS_REQ, M_RMETRICS, M_SMETRICS, M_METRIC, M_GAUGE, M_SUM, M_HIST, M_EHIST,
	M_SUMMARY, M_NDP, M_HDP, M_EHDP, M_BUCKETS, M_SDP, M_VAQ, M_EXEMPLAR,
	M_COUNT,
};

enum en { E_NONE, E_SPAN_KIND, E_STATUS, E_SEVERITY, E_TEMPORALITY };

struct fdef {
	uint32_t num;
	uint8_t ty, flags;
	uint8_t sub;            /* T_MSG: the message; T_ENUM: the enum */
	const char *json, *proto;
};

struct mdef {
	const char *name;
	const struct fdef *f;
	size_t n;
};

#define FD(num, ty, flags, sub, json, proto) { num, ty, flags, sub, json, proto }
#define KVS(num, json, proto, flags) FD(num, T_MSG, F_REP | (flags), M_KV, json, proto)

static const struct fdef f_any[] = {
	FD(1, T_STR, F_ONEOF, 0, "stringValue", "string_value"),
	FD(2, T_BOOL, F_ONEOF, 0, "boolValue", "bool_value"),
	FD(3, T_INT64, F_ONEOF, 0, "intValue", "int_value"),
	FD(4, T_DOUBLE, F_ONEOF, 0, "doubleValue", "double_value"),
	FD(5, T_MSG, F_ONEOF, M_ARRAY, "arrayValue", "array_value"),
	FD(6, T_MSG, F_ONEOF, M_KVLIST, "kvlistValue", "kvlist_value"),
	FD(7, T_BYTES, F_ONEOF, 0, "bytesValue", "bytes_value"),
};
static const struct fdef f_array[] = { FD(1, T_MSG, F_REP, M_ANY, "values", "values") };
static const struct fdef f_kvlist[] = { KVS(1, "values", "values", 0) };
static const struct fdef f_kv[] = {
	FD(1, T_STR, 0, 0, "key", "key"),
	FD(2, T_MSG, 0, M_ANY, "value", "value"),
};
static const struct fdef f_scope[] = {
	FD(1, T_STR, F_SCOPE, 0, "name", "name"),
	FD(2, T_STR, 0, 0, "version", "version"),
	KVS(3, "attributes", "attributes", F_STRIP),
	FD(4, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
};
static const struct fdef f_entity[] = {
	FD(1, T_STR, 0, 0, "schemaUrl", "schema_url"),
	FD(2, T_STR, 0, 0, "type", "type"),
	FD(3, T_STR, F_REP, 0, "idKeys", "id_keys"),
	FD(4, T_STR, F_REP, 0, "descriptionKeys", "description_keys"),
};
static const struct fdef f_resource[] = {
	KVS(1, "attributes", "attributes", F_STRIP),
	FD(2, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
	FD(3, T_MSG, F_REP, M_ENTITY, "entityRefs", "entity_refs"),
};

static const struct fdef f_trace_req[] = {
	FD(1, T_MSG, F_REP, M_RSPANS, "resourceSpans", "resource_spans"),
};
static const struct fdef f_rspans[] = {
	FD(1, T_MSG, 0, M_RESOURCE, "resource", "resource"),
	FD(2, T_MSG, F_REP, M_SSPANS, "scopeSpans", "scope_spans"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_sspans[] = {
	FD(1, T_MSG, 0, M_SCOPE, "scope", "scope"),
	FD(2, T_MSG, F_REP, M_SPAN, "spans", "spans"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_span[] = {
	FD(1, T_HEX, 0, 0, "traceId", "trace_id"),
	FD(2, T_HEX, 0, 0, "spanId", "span_id"),
	FD(3, T_STR, 0, 0, "traceState", "trace_state"),
	FD(4, T_HEX, 0, 0, "parentSpanId", "parent_span_id"),
	FD(16, T_FIXED32, 0, 0, "flags", "flags"),
	FD(5, T_STR, 0, 0, "name", "name"),
	FD(6, T_ENUM, 0, E_SPAN_KIND, "kind", "kind"),
	FD(7, T_FIXED64, 0, 0, "startTimeUnixNano", "start_time_unix_nano"),
	FD(8, T_FIXED64, 0, 0, "endTimeUnixNano", "end_time_unix_nano"),
	KVS(9, "attributes", "attributes", F_STRIP),
	FD(10, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
	FD(11, T_MSG, F_REP, M_EVENT, "events", "events"),
	FD(12, T_UINT32, 0, 0, "droppedEventsCount", "dropped_events_count"),
	FD(13, T_MSG, F_REP, M_LINK, "links", "links"),
	FD(14, T_UINT32, 0, 0, "droppedLinksCount", "dropped_links_count"),
	FD(15, T_MSG, 0, M_STATUS, "status", "status"),
};
static const struct fdef f_event[] = {
	FD(1, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(2, T_STR, 0, 0, "name", "name"),
	KVS(3, "attributes", "attributes", F_STRIP),
	FD(4, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
};
static const struct fdef f_link[] = {
	FD(1, T_HEX, 0, 0, "traceId", "trace_id"),
	FD(2, T_HEX, 0, 0, "spanId", "span_id"),
	FD(3, T_STR, 0, 0, "traceState", "trace_state"),
	KVS(4, "attributes", "attributes", F_STRIP),
	FD(5, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
	FD(6, T_FIXED32, 0, 0, "flags", "flags"),
};
static const struct fdef f_status[] = {
	FD(2, T_STR, 0, 0, "message", "message"),
	FD(3, T_ENUM, 0, E_STATUS, "code", "code"),
};

static const struct fdef f_logs_req[] = {
	FD(1, T_MSG, F_REP, M_RLOGS, "resourceLogs", "resource_logs"),
};
static const struct fdef f_rlogs[] = {
	FD(1, T_MSG, 0, M_RESOURCE, "resource", "resource"),
	FD(2, T_MSG, F_REP, M_SLOGS, "scopeLogs", "scope_logs"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_slogs[] = {
	FD(1, T_MSG, 0, M_SCOPE, "scope", "scope"),
	FD(2, T_MSG, F_REP, M_LOG, "logRecords", "log_records"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_log[] = {
	FD(1, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(11, T_FIXED64, 0, 0, "observedTimeUnixNano", "observed_time_unix_nano"),
	FD(2, T_ENUM, 0, E_SEVERITY, "severityNumber", "severity_number"),
	FD(3, T_STR, 0, 0, "severityText", "severity_text"),
	FD(5, T_MSG, 0, M_ANY, "body", "body"),
	KVS(6, "attributes", "attributes", F_STRIP),
	FD(7, T_UINT32, 0, 0, "droppedAttributesCount", "dropped_attributes_count"),
	FD(8, T_FIXED32, 0, 0, "flags", "flags"),
	FD(9, T_HEX, 0, 0, "traceId", "trace_id"),
	FD(10, T_HEX, 0, 0, "spanId", "span_id"),
	FD(12, T_STR, 0, 0, "eventName", "event_name"),
};

static const struct fdef f_metrics_req[] = {
	FD(1, T_MSG, F_REP, M_RMETRICS, "resourceMetrics", "resource_metrics"),
};
static const struct fdef f_rmetrics[] = {
	FD(1, T_MSG, 0, M_RESOURCE, "resource", "resource"),
	FD(2, T_MSG, F_REP, M_SMETRICS, "scopeMetrics", "scope_metrics"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_smetrics[] = {
	FD(1, T_MSG, 0, M_SCOPE, "scope", "scope"),
	FD(2, T_MSG, F_REP, M_METRIC, "metrics", "metrics"),
	FD(3, T_STR, 0, 0, "schemaUrl", "schema_url"),
};
static const struct fdef f_metric[] = {
	FD(1, T_STR, 0, 0, "name", "name"),
	FD(2, T_STR, 0, 0, "description", "description"),
	FD(3, T_STR, 0, 0, "unit", "unit"),
	FD(5, T_MSG, F_ONEOF, M_GAUGE, "gauge", "gauge"),
	FD(7, T_MSG, F_ONEOF, M_SUM, "sum", "sum"),
	FD(9, T_MSG, F_ONEOF, M_HIST, "histogram", "histogram"),
	FD(10, T_MSG, F_ONEOF, M_EHIST, "exponentialHistogram", "exponential_histogram"),
	FD(11, T_MSG, F_ONEOF, M_SUMMARY, "summary", "summary"),
	KVS(12, "metadata", "metadata", F_STRIP),
};
static const struct fdef f_gauge[] = { FD(1, T_MSG, F_REP, M_NDP, "dataPoints", "data_points") };
static const struct fdef f_sum[] = {
	FD(1, T_MSG, F_REP, M_NDP, "dataPoints", "data_points"),
	FD(2, T_ENUM, 0, E_TEMPORALITY, "aggregationTemporality", "aggregation_temporality"),
	FD(3, T_BOOL, 0, 0, "isMonotonic", "is_monotonic"),
};
static const struct fdef f_hist[] = {
	FD(1, T_MSG, F_REP, M_HDP, "dataPoints", "data_points"),
	FD(2, T_ENUM, 0, E_TEMPORALITY, "aggregationTemporality", "aggregation_temporality"),
};
static const struct fdef f_ehist[] = {
	FD(1, T_MSG, F_REP, M_EHDP, "dataPoints", "data_points"),
	FD(2, T_ENUM, 0, E_TEMPORALITY, "aggregationTemporality", "aggregation_temporality"),
};
static const struct fdef f_summary[] = { FD(1, T_MSG, F_REP, M_SDP, "dataPoints", "data_points") };
static const struct fdef f_ndp[] = {
	KVS(7, "attributes", "attributes", F_STRIP),
	FD(2, T_FIXED64, 0, 0, "startTimeUnixNano", "start_time_unix_nano"),
	FD(3, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(4, T_DOUBLE, F_ONEOF, 0, "asDouble", "as_double"),
	FD(6, T_SFIXED64, F_ONEOF, 0, "asInt", "as_int"),
	FD(5, T_MSG, F_REP, M_EXEMPLAR, "exemplars", "exemplars"),
	FD(8, T_UINT32, 0, 0, "flags", "flags"),
};
static const struct fdef f_hdp[] = {
	KVS(9, "attributes", "attributes", F_STRIP),
	FD(2, T_FIXED64, 0, 0, "startTimeUnixNano", "start_time_unix_nano"),
	FD(3, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(4, T_FIXED64, 0, 0, "count", "count"),
	FD(5, T_DOUBLE, F_OPT, 0, "sum", "sum"),
	FD(6, T_FIXED64, F_REP, 0, "bucketCounts", "bucket_counts"),
	FD(7, T_DOUBLE, F_REP, 0, "explicitBounds", "explicit_bounds"),
	FD(8, T_MSG, F_REP, M_EXEMPLAR, "exemplars", "exemplars"),
	FD(10, T_UINT32, 0, 0, "flags", "flags"),
	FD(11, T_DOUBLE, F_OPT, 0, "min", "min"),
	FD(12, T_DOUBLE, F_OPT, 0, "max", "max"),
};
static const struct fdef f_ehdp[] = {
	KVS(1, "attributes", "attributes", F_STRIP),
	FD(2, T_FIXED64, 0, 0, "startTimeUnixNano", "start_time_unix_nano"),
	FD(3, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(4, T_FIXED64, 0, 0, "count", "count"),
	FD(5, T_DOUBLE, F_OPT, 0, "sum", "sum"),
	FD(6, T_SINT32, 0, 0, "scale", "scale"),
	FD(7, T_FIXED64, 0, 0, "zeroCount", "zero_count"),
	FD(8, T_MSG, 0, M_BUCKETS, "positive", "positive"),
	FD(9, T_MSG, 0, M_BUCKETS, "negative", "negative"),
	FD(10, T_UINT32, 0, 0, "flags", "flags"),
	FD(11, T_MSG, F_REP, M_EXEMPLAR, "exemplars", "exemplars"),
	FD(12, T_DOUBLE, F_OPT, 0, "min", "min"),
	FD(13, T_DOUBLE, F_OPT, 0, "max", "max"),
	FD(14, T_DOUBLE, 0, 0, "zeroThreshold", "zero_threshold"),
};
static const struct fdef f_buckets[] = {
	FD(1, T_SINT32, 0, 0, "offset", "offset"),
	FD(2, T_UINT64, F_REP, 0, "bucketCounts", "bucket_counts"),
};
static const struct fdef f_sdp[] = {
	KVS(7, "attributes", "attributes", F_STRIP),
	FD(2, T_FIXED64, 0, 0, "startTimeUnixNano", "start_time_unix_nano"),
	FD(3, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(4, T_FIXED64, 0, 0, "count", "count"),
	FD(5, T_DOUBLE, 0, 0, "sum", "sum"),
	FD(6, T_MSG, F_REP, M_VAQ, "quantileValues", "quantile_values"),
	FD(8, T_UINT32, 0, 0, "flags", "flags"),
};
static const struct fdef f_vaq[] = {
	FD(1, T_DOUBLE, 0, 0, "quantile", "quantile"),
	FD(2, T_DOUBLE, 0, 0, "value", "value"),
};
static const struct fdef f_exemplar[] = {
	KVS(7, "filteredAttributes", "filtered_attributes", F_STRIP),
	FD(2, T_FIXED64, 0, 0, "timeUnixNano", "time_unix_nano"),
	FD(3, T_DOUBLE, F_ONEOF, 0, "asDouble", "as_double"),
	FD(6, T_SFIXED64, F_ONEOF, 0, "asInt", "as_int"),
	FD(4, T_HEX, 0, 0, "spanId", "span_id"),
	FD(5, T_HEX, 0, 0, "traceId", "trace_id"),
};

#define MD(name, f) { name, f, sizeof(f) / sizeof((f)[0]) }
static const struct mdef mdefs[M_COUNT] = {
	[M_ANY] = MD("AnyValue", f_any),
	[M_ARRAY] = MD("ArrayValue", f_array),
	[M_KVLIST] = MD("KeyValueList", f_kvlist),
	[M_KV] = MD("KeyValue", f_kv),
	[M_SCOPE] = MD("InstrumentationScope", f_scope),
	[M_ENTITY] = MD("EntityRef", f_entity),
	[M_RESOURCE] = MD("Resource", f_resource),
	[M_TRACE_REQ] = MD("ExportTraceServiceRequest", f_trace_req),
	[M_RSPANS] = MD("ResourceSpans", f_rspans),
	[M_SSPANS] = MD("ScopeSpans", f_sspans),
	[M_SPAN] = MD("Span", f_span),
	[M_EVENT] = MD("Span.Event", f_event),
	[M_LINK] = MD("Span.Link", f_link),
	[M_STATUS] = MD("Status", f_status),
	[M_LOGS_REQ] = MD("ExportLogsServiceRequest", f_logs_req),
	[M_RLOGS] = MD("ResourceLogs", f_rlogs),
	[M_SLOGS] = MD("ScopeLogs", f_slogs),
	[M_LOG] = MD("LogRecord", f_log),
	[M_METRICS_REQ] = MD("ExportMetricsServiceRequest", f_metrics_req),
	[M_RMETRICS] = MD("ResourceMetrics", f_rmetrics),
	[M_SMETRICS] = MD("ScopeMetrics", f_smetrics),
	[M_METRIC] = MD("Metric", f_metric),
	[M_GAUGE] = MD("Gauge", f_gauge),
	[M_SUM] = MD("Sum", f_sum),
	[M_HIST] = MD("Histogram", f_hist),
	[M_EHIST] = MD("ExponentialHistogram", f_ehist),
	[M_SUMMARY] = MD("Summary", f_summary),
	[M_NDP] = MD("NumberDataPoint", f_ndp),
	[M_HDP] = MD("HistogramDataPoint", f_hdp),
	[M_EHDP] = MD("ExponentialHistogramDataPoint", f_ehdp),
	[M_BUCKETS] = MD("ExponentialHistogramDataPoint.Buckets", f_buckets),
	[M_SDP] = MD("SummaryDataPoint", f_sdp),
	[M_VAQ] = MD("SummaryDataPoint.ValueAtQuantile", f_vaq),
	[M_EXEMPLAR] = MD("Exemplar", f_exemplar),
};

/* Enum names a receiver must accept in OTLP/JSON (it writes numbers). */
static const char *const e_span_kind[] = {
	"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT",
	"SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER",
};
static const char *const e_status[] = { "STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR" };
static const char *const e_severity[] = {
	"SEVERITY_NUMBER_UNSPECIFIED",
	"SEVERITY_NUMBER_TRACE", "SEVERITY_NUMBER_TRACE2", "SEVERITY_NUMBER_TRACE3", "SEVERITY_NUMBER_TRACE4",
	"SEVERITY_NUMBER_DEBUG", "SEVERITY_NUMBER_DEBUG2", "SEVERITY_NUMBER_DEBUG3", "SEVERITY_NUMBER_DEBUG4",
	"SEVERITY_NUMBER_INFO", "SEVERITY_NUMBER_INFO2", "SEVERITY_NUMBER_INFO3", "SEVERITY_NUMBER_INFO4",
	"SEVERITY_NUMBER_WARN", "SEVERITY_NUMBER_WARN2", "SEVERITY_NUMBER_WARN3", "SEVERITY_NUMBER_WARN4",
	"SEVERITY_NUMBER_ERROR", "SEVERITY_NUMBER_ERROR2", "SEVERITY_NUMBER_ERROR3", "SEVERITY_NUMBER_ERROR4",
	"SEVERITY_NUMBER_FATAL", "SEVERITY_NUMBER_FATAL2", "SEVERITY_NUMBER_FATAL3", "SEVERITY_NUMBER_FATAL4",
};
static const char *const e_temporality[] = {
	"AGGREGATION_TEMPORALITY_UNSPECIFIED", "AGGREGATION_TEMPORALITY_DELTA",
	"AGGREGATION_TEMPORALITY_CUMULATIVE",
};
static const struct { const char *const *v; size_t n; } enums[] = {
	[E_NONE] = { NULL, 0 },
	[E_SPAN_KIND] = { e_span_kind, 6 },
	[E_STATUS] = { e_status, 3 },
	[E_SEVERITY] = { e_severity, 25 },
	[E_TEMPORALITY] = { e_temporality, 3 },
};

static const enum msg request_msg[] = {
	[TM_RELAY_TRACES] = M_TRACE_REQ, [TM_RELAY_LOGS] = M_LOGS_REQ, [TM_RELAY_METRICS] = M_METRICS_REQ,
};

const char *tm_relay_kind_name(enum tm_relay_kind k)
{
	switch (k) {
	case TM_RELAY_TRACES: return "traces";
	case TM_RELAY_LOGS: return "logs";
	case TM_RELAY_METRICS: return "metrics";
	}
	return "?";
}

static int wire_type(enum ty t)
{
	switch (t) {
	case T_STR: case T_BYTES: case T_HEX: case T_MSG: return 2;
	case T_FIXED64: case T_SFIXED64: case T_DOUBLE: return 1;
	case T_FIXED32: return 5;
	default: return 0;
	}
}

static bool is_numeric(enum ty t)
{
	return wire_type(t) != 2;
}

/* ---- 2. the decoded tree ----------------------------------------------------- */

/* One field value.  Entries of a node are sorted by field (table order),
 * repeated values keep their order, and a non-repeated field (or the oneof)
 * keeps only its last value, so each encoder walks a node once. */
struct node;
struct ent {
	uint16_t fi;            /* index into the message's fields */
	uint16_t del;           /* removed by the re-stamping */
	uint32_t n;             /* T_STR, T_BYTES, T_HEX: length */
	union {
		uint64_t u;     /* integers (signed ones sign-extended), bool */
		double d;
		const uint8_t *p;
		struct node *m;
	} v;
};

struct node {
	struct ent *e;
	uint32_t n;
	uint8_t mi;
	size_t pbsize;          /* the protobuf encoding's length, set by pb_size */
};

struct ablk {
	struct ablk *next;
	size_t used, cap;
	max_align_t data[];
};

struct pathel {
	const char *name;
	size_t idx;
	bool has_idx;
};

struct ctx {
	struct ablk *blk;
	size_t alloced, limit;  /* arena bytes, and the bound from the input size */
	char *err;
	size_t errlen;
	bool json;
	const uint8_t *base;    /* protobuf: offsets in errors are from here */
	struct pathel path[TM_RELAY_DEPTH_MAX + 4];
	int depth;
	const struct tm_relay_stamp *st;
};

static int fail(struct ctx *c, int rc, const uint8_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct ctx *c, int rc, const uint8_t *at, const char *fmt, ...)
{
	if (c->errlen == 0)
		return rc;
	char buf[512];
	size_t k = 0;
	k += (size_t)snprintf(buf, sizeof(buf), "%s$", c->json ? "" : "protobuf ");
	/* a deep path keeps its tail: where the fault is, not how it got there */
	int from = 0;
	for (size_t tail = 0; from < c->depth; from++) {
		tail = 0;
		for (int i = from; i < c->depth; i++)
			tail += strlen(c->path[i].name) + 24;
		if (tail < 320)
			break;
	}
	if (from > 0)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "...");
	for (int i = from; i < c->depth && k < sizeof(buf); i++) {
		const struct pathel *p = &c->path[i];
		if (p->has_idx)
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, ".%s[%zu]", p->name, p->idx);
		else
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, ".%s", p->name);
	}
	if (at != NULL && k < sizeof(buf))
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, " (byte %zu)", (size_t)(at - c->base));
	if (k >= sizeof(buf))
		k = sizeof(buf) - 1;
	va_list ap;
	va_start(ap, fmt);
	char why[384];
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%.*s: %s", (int)k, buf, why);
	return rc;
}

static void *arena_alloc(struct ctx *c, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (size == 0)
		size = 16;
	struct ablk *b = c->blk;
	if (b == NULL || b->cap - b->used < size) {
		size_t cap = size > 65536 ? size : 65536;
		if (c->alloced + cap > c->limit)
			return NULL;
		b = malloc(sizeof(*b) + cap);
		if (b == NULL)
			return NULL;
		b->next = c->blk;
		b->used = 0;
		b->cap = cap;
		c->blk = b;
		c->alloced += cap;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	return p;
}

static void arena_free(struct ctx *c)
{
	while (c->blk != NULL) {
		struct ablk *n = c->blk->next;
		free(c->blk);
		c->blk = n;
	}
}

/* An arena failure: past the bound is the input's doing (-E2BIG), else ENOMEM. */
static int oom(struct ctx *c, size_t want)
{
	if (c->alloced + (want > 65536 ? want : 65536) > c->limit)
		return fail(c, -E2BIG, NULL, "the payload expands past %zu bytes when decoded",
			    c->limit);
	return fail(c, -ENOMEM, NULL, "out of memory");
}

static int push(struct ctx *c, const char *name, size_t idx, bool has_idx)
{
	if (c->depth >= TM_RELAY_DEPTH_MAX)
		return fail(c, -EINVAL, NULL, "nested deeper than %d messages", TM_RELAY_DEPTH_MAX);
	c->path[c->depth++] = (struct pathel){ name, idx, has_idx };
	return 0;
}

/* Sort n entries by field, keeping order within a field (a counting sort:
 * a message has at most 16 fields), then drop every value of a non-repeated
 * field but its last, and every oneof member but the last one set. */
static int node_finish(struct ctx *c, struct node *nd)
{
	const struct mdef *md = &mdefs[nd->mi];
	size_t count[17] = { 0 };
	for (uint32_t i = 0; i < nd->n; i++)
		count[nd->e[i].fi + 1]++;
	bool sorted = true;
	for (uint32_t i = 1; i < nd->n; i++)
		sorted &= nd->e[i - 1].fi <= nd->e[i].fi;
	/* the last oneof member set, by its position in input order */
	long last_oneof = -1;
	for (uint32_t i = 0; i < nd->n; i++)
		if (md->f[nd->e[i].fi].flags & F_ONEOF)
			last_oneof = i;
	if (last_oneof >= 0) {
		for (uint32_t i = 0; i < nd->n; i++)
			if ((md->f[nd->e[i].fi].flags & F_ONEOF) && i != (uint32_t)last_oneof)
				nd->e[i].del = 1;
	}
	if (!sorted) {
		for (size_t f = 1; f <= md->n; f++)
			count[f] += count[f - 1];
		struct ent *out = arena_alloc(c, sizeof(*out) * nd->n);
		if (out == NULL)
			return oom(c, sizeof(*out) * nd->n);
		for (uint32_t i = 0; i < nd->n; i++)
			out[count[nd->e[i].fi]++] = nd->e[i];
		nd->e = out;
	}
	for (uint32_t i = 0; i + 1 < nd->n; i++) {
		const struct fdef *f = &md->f[nd->e[i].fi];
		if (!(f->flags & F_REP) && nd->e[i + 1].fi == nd->e[i].fi)
			nd->e[i].del = 1;
	}
	return 0;
}

/* ---- 3. the protobuf decoder --------------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
};

static int rd_varint(struct ctx *c, struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	const uint8_t *at = r->p;
	for (int i = 0; i < 10; i++) {
		if (r->p == r->end)
			return fail(c, -EINVAL, at, "a varint runs past the end of its message");
		uint8_t b = *r->p++;
		if (i == 9 && b > 1)
			return fail(c, -EINVAL, at, "a varint longer than 64 bits");
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return fail(c, -EINVAL, at, "a varint longer than 10 bytes");
}

static int rd_fixed(struct ctx *c, struct rd *r, size_t k, uint64_t *v)
{
	if ((size_t)(r->end - r->p) < k)
		return fail(c, -EINVAL, r->p, "a %zu-byte value runs past the end of its message", k);
	uint64_t x = 0;
	for (size_t i = 0; i < k; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += k;
	*v = x;
	return 0;
}

static int rd_len(struct ctx *c, struct rd *r, const uint8_t **p, size_t *n)
{
	uint64_t len;
	const uint8_t *at = r->p;
	int rc = rd_varint(c, r, &len);
	if (rc < 0)
		return rc;
	if (len > (uint64_t)(r->end - r->p))
		return fail(c, -EINVAL, at, "a length of %" PRIu64 " runs past the end of its message (%zu bytes left)",
			    len, (size_t)(r->end - r->p));
	*p = r->p;
	*n = (size_t)len;
	r->p += len;
	return 0;
}

static int skip_value(struct ctx *c, struct rd *r, int wt, uint32_t num, int groups);

static int rd_tag(struct ctx *c, struct rd *r, uint32_t *num, int *wt)
{
	uint64_t tag;
	const uint8_t *at = r->p;
	int rc = rd_varint(c, r, &tag);
	if (rc < 0)
		return rc;
	if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
		return fail(c, -EINVAL, at, "field number %" PRIu64 " is not a valid one", tag >> 3);
	*num = (uint32_t)(tag >> 3);
	*wt = (int)(tag & 7);
	if (*wt > 5)
		return fail(c, -EINVAL, at, "wire type %d does not exist", *wt);
	return 0;
}

/* Skip an unknown field's value; a (deprecated) group to its end tag. */
static int skip_value(struct ctx *c, struct rd *r, int wt, uint32_t num, int groups)
{
	uint64_t v;
	const uint8_t *p;
	size_t n;
	switch (wt) {
	case 0: return rd_varint(c, r, &v);
	case 1: return rd_fixed(c, r, 8, &v);
	case 5: return rd_fixed(c, r, 4, &v);
	case 2: return rd_len(c, r, &p, &n);
	case 3:
		if (groups + c->depth >= TM_RELAY_DEPTH_MAX)
			return fail(c, -EINVAL, r->p, "groups nested deeper than %d", TM_RELAY_DEPTH_MAX);
		for (;;) {
			uint32_t inum;
			int iwt;
			if (r->p == r->end)
				return fail(c, -EINVAL, r->p, "group %" PRIu32 " has no end", num);
			int rc = rd_tag(c, r, &inum, &iwt);
			if (rc < 0)
				return rc;
			if (iwt == 4) {
				if (inum != num)
					return fail(c, -EINVAL, r->p, "group %" PRIu32 " ended by %" PRIu32, num, inum);
				return 0;
			}
			rc = skip_value(c, r, iwt, inum, groups + 1);
			if (rc < 0)
				return rc;
		}
	default:
		return fail(c, -EINVAL, r->p, "an end-group tag with no group open");
	}
}

static const struct fdef *find_num(const struct mdef *md, uint32_t num, uint16_t *fi)
{
	for (size_t i = 0; i < md->n; i++)
		if (md->f[i].num == num) {
			*fi = (uint16_t)i;
			return &md->f[i];
		}
	return NULL;
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t b = s[i];
		if (b < 0x80) {
			i++;
			continue;
		}
		size_t k;
		uint32_t cp, min;
		if ((b & 0xe0) == 0xc0) { k = 1; cp = b & 0x1f; min = 0x80; }
		else if ((b & 0xf0) == 0xe0) { k = 2; cp = b & 0x0f; min = 0x800; }
		else if ((b & 0xf8) == 0xf0) { k = 3; cp = b & 0x07; min = 0x10000; }
		else return false;
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static uint64_t scalar_from_wire(enum ty t, uint64_t raw)
{
	switch (t) {
	case T_BOOL: return raw != 0;
	case T_ENUM: case T_INT32: return (uint64_t)(int64_t)(int32_t)(uint32_t)raw;
	case T_UINT32: case T_FIXED32: return (uint32_t)raw;
	case T_SINT32: {
		uint32_t z = (uint32_t)raw;
		return (uint64_t)(int64_t)(int32_t)((z >> 1) ^ (~(z & 1) + 1));
	}
	default: return raw;    /* 64-bit kinds, and a double's bits */
	}
}

static int pb_message(struct ctx *c, enum msg mi, const uint8_t *p, size_t len, struct node **out);

static int pb_scalar(struct ctx *c, struct rd *r, const struct fdef *f, int wt, struct ent *e)
{
	uint64_t raw;
	int rc = wt == 0 ? rd_varint(c, r, &raw) : rd_fixed(c, r, wt == 1 ? 8 : 4, &raw);
	if (rc < 0)
		return rc;
	e->v.u = scalar_from_wire(f->ty, raw);
	return 0;
}

/* Decode the fields of one message in two passes: the first checks the
 * framing and counts the values, so the entries are one exact allocation;
 * the second fills them and descends. */
static int pb_message(struct ctx *c, enum msg mi, const uint8_t *p, size_t len, struct node **out)
{
	const struct mdef *md = &mdefs[mi];
	size_t count = 0;
	int rc;
	struct rd r = { p, p + len };

	while (r.p < r.end) {
		uint32_t num;
		int wt;
		uint16_t fi;
		const uint8_t *at = r.p;
		if ((rc = rd_tag(c, &r, &num, &wt)) < 0)
			return rc;
		const struct fdef *f = find_num(md, num, &fi);
		if (f == NULL) {
			if (wt == 4)
				return fail(c, -EINVAL, at, "an end-group tag with no group open");
			if ((rc = skip_value(c, &r, wt, num, 0)) < 0)
				return rc;
			continue;
		}
		int want = wire_type(f->ty);
		if ((f->flags & F_REP) && is_numeric(f->ty) && wt == 2) {
			const uint8_t *q;
			size_t n;
			if ((rc = rd_len(c, &r, &q, &n)) < 0)
				return rc;
			if (want == 0) {
				for (size_t i = 0; i < n; i++)
					count += !(q[i] & 0x80);
				if (n > 0 && (q[n - 1] & 0x80))
					return fail(c, -EINVAL, q + n - 1, "%s: a packed varint runs past the end", f->json);
			} else {
				size_t w = want == 1 ? 8 : 4;
				if (n % w)
					return fail(c, -EINVAL, at, "%s: packed %zu-byte values in %zu bytes", f->json, w, n);
				count += n / w;
			}
			continue;
		}
		if (wt != want)
			return fail(c, -EINVAL, at, "field %" PRIu32 " (%s) has wire type %d, where %s needs %d",
				    num, f->json, wt, md->name, want);
		if ((rc = skip_value(c, &r, wt, num, 0)) < 0)
			return rc;
		count++;
	}

	if (count > UINT32_MAX)
		return fail(c, -E2BIG, p, "too many fields in one message");
	struct node *nd = arena_alloc(c, sizeof(*nd));
	struct ent *e = count ? arena_alloc(c, sizeof(*e) * count) : NULL;
	if (nd == NULL || (count && e == NULL))
		return oom(c, sizeof(*e) * count);
	*nd = (struct node){ .e = e, .n = (uint32_t)count, .mi = (uint8_t)mi };

	size_t k = 0;
	size_t idx[16] = { 0 };         /* per field: values seen, for the error path */
	r = (struct rd){ p, p + len };
	while (r.p < r.end) {
		uint32_t num;
		int wt;
		uint16_t fi;
		rc = rd_tag(c, &r, &num, &wt);
		const struct fdef *f = find_num(md, num, &fi);
		if (f == NULL) {
			skip_value(c, &r, wt, num, 0);     /* checked in the first pass */
			continue;
		}
		if ((f->flags & F_REP) && is_numeric(f->ty) && wt == 2) {
			const uint8_t *q;
			size_t n;
			rd_len(c, &r, &q, &n);
			struct rd pr = { q, q + n };
			int ewt = wire_type(f->ty);
			while (pr.p < pr.end) {
				e[k] = (struct ent){ .fi = fi };
				if ((rc = pb_scalar(c, &pr, f, ewt, &e[k])) < 0)
					return rc;
				k++;
			}
			continue;
		}
		struct ent *x = &e[k++];
		*x = (struct ent){ .fi = fi };
		if (f->ty == T_MSG || f->ty == T_STR || f->ty == T_BYTES || f->ty == T_HEX) {
			const uint8_t *q;
			size_t n;
			rd_len(c, &r, &q, &n);
			if (n > UINT32_MAX)
				return fail(c, -E2BIG, q, "%s: a value of %zu bytes", f->json, n);
			if (f->ty == T_MSG) {
				if ((rc = push(c, f->json, idx[fi], f->flags & F_REP)) < 0)
					return rc;
				rc = pb_message(c, (enum msg)f->sub, q, n, &x->v.m);
				if (rc < 0)
					return rc;
				c->depth--;
			} else {
				if (f->ty == T_STR && !utf8_ok(q, n)) {
					push(c, f->json, idx[fi], f->flags & F_REP);
					return fail(c, -EINVAL, q, "a string that is not UTF-8");
				}
				x->v.p = q;
				x->n = (uint32_t)n;
			}
		} else if ((rc = pb_scalar(c, &r, f, wt, x)) < 0) {
			return rc;
		}
		idx[fi]++;
	}
	*out = nd;
	return node_finish(c, nd);
}

/* ---- 4. the OTLP/JSON decoder ------------------------------------------------------ */

static const struct fdef *find_key(const struct mdef *md, const char *key, uint16_t *fi)
{
	for (size_t i = 0; i < md->n; i++)
		if (strcmp(md->f[i].json, key) == 0 || strcmp(md->f[i].proto, key) == 0) {
			*fi = (uint16_t)i;
			return &md->f[i];
		}
	return NULL;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9') return ch - '0';
	if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
	return -1;
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z') return ch - 'A';
	if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9') return ch - '0' + 52;
	if (ch == '+' || ch == '-') return 62;
	if (ch == '/' || ch == '_') return 63;
	return -1;
}

/* Base64, standard or URL-safe, padded or not (the proto3 JSON mapping
 * accepts either); NULL from arena failure is reported by the caller. */
static int b64_decode(struct ctx *c, const char *s, size_t n, struct ent *e)
{
	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return fail(c, -EINVAL, NULL, "not base64 (%zu digits)", n);
	uint8_t *out = arena_alloc(c, n * 3 / 4 + 1);
	if (out == NULL)
		return oom(c, n);
	size_t k = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)s[i]);
		if (v < 0)
			return fail(c, -EINVAL, NULL, "not base64: %s at %zu",
				    s[i] == '=' ? "'=' before the end" : "a character outside the alphabet", i);
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (uint8_t)(acc >> bits);
		}
	}
	e->v.p = out;
	e->n = (uint32_t)k;
	return 0;
}

static int hex_decode(struct ctx *c, const char *s, size_t n, struct ent *e)
{
	if (n % 2)
		return fail(c, -EINVAL, NULL, "an id must be an even number of hex digits, got %zu", n);
	uint8_t *out = arena_alloc(c, n / 2 + 1);
	if (out == NULL)
		return oom(c, n);
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
		if (hi < 0 || lo < 0)
			return fail(c, -EINVAL, NULL, "an id must be hex digits, got a '%c' at %zu",
				    hi < 0 ? s[i] : s[i + 1], hi < 0 ? i : i + 1);
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	e->v.p = out;
	e->n = (uint32_t)(n / 2);
	return 0;
}

/* A decimal integer string: optional '-' (when allowed), digits, no sign
 * '+', no spaces.  0 with *neg and *mag, or -1. */
static int dec_parse(const char *s, bool allow_neg, bool *neg, uint64_t *mag)
{
	*neg = false;
	if (*s == '-' && allow_neg) {
		*neg = true;
		s++;
	}
	if (*s == '\0')
		return -1;
	uint64_t x = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*mag = x;
	return 0;
}

/* An integer field from a JSON number or decimal string, in [min, max]
 * (signed kinds) or [0, umax] (unsigned ones). */
static int json_int(struct ctx *c, json_t *v, const struct fdef *f, struct ent *e)
{
	bool sign = f->ty == T_ENUM || f->ty == T_INT32 || f->ty == T_SINT32 || f->ty == T_INT64 ||
		    f->ty == T_SFIXED64;
	bool wide = f->ty == T_INT64 || f->ty == T_SFIXED64 || f->ty == T_UINT64 || f->ty == T_FIXED64;
	bool neg = false;
	uint64_t mag = 0;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		neg = x < 0;
		mag = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
	} else if (json_is_real(v)) {
		double d = json_real_value(v), a = d < 0 ? -d : d;
		/* every double from 2^53 up is whole; below, the cast shows a fraction */
		bool whole = a >= 9007199254740992.0 || (double)(int64_t)a == a;
		if (!whole || a >= 18446744073709551616.0)
			return fail(c, -EINVAL, NULL, "%s must be an integer, got %g", f->json, d);
		neg = d < 0;
		mag = (uint64_t)a;
	} else if (json_is_string(v)) {
		/* a NUL would end the C string early: "1\u00002" is not 1 */
		if (strlen(json_string_value(v)) != json_string_length(v))
			return fail(c, -EINVAL, NULL, "%s: a NUL inside a number", f->json);
		if (f->ty == T_ENUM && enums[f->sub].v != NULL) {
			for (size_t i = 0; i < enums[f->sub].n; i++)
				if (strcmp(json_string_value(v), enums[f->sub].v[i]) == 0) {
					e->v.u = i;
					return 0;
				}
		}
		if (dec_parse(json_string_value(v), true, &neg, &mag) < 0)
			return fail(c, -EINVAL, NULL, "%s must be %s, got \"%.40s\"", f->json,
				    f->ty == T_ENUM ? "an enum number or name" : "a decimal integer",
				    json_string_value(v));
	} else {
		return fail(c, -EINVAL, NULL, "%s must be an integer (a number or a decimal string)", f->json);
	}
	if (neg && mag == 0)
		neg = false;
	if (neg && !sign)
		return fail(c, -EINVAL, NULL, "%s is unsigned, got a negative value", f->json);
	uint64_t lim = wide ? (sign ? (uint64_t)INT64_MAX : UINT64_MAX) : (sign ? INT32_MAX : UINT32_MAX);
	if (mag > lim + (neg ? 1 : 0))
		return fail(c, -EINVAL, NULL, "%s: %s%" PRIu64 " is out of range", f->json, neg ? "-" : "", mag);
	e->v.u = neg ? (uint64_t)0 - mag : mag;
	return 0;
}

static int json_double(struct ctx *c, json_t *v, const struct fdef *f, struct ent *e)
{
	if (json_is_number(v)) {
		e->v.d = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
		const char *s = json_string_value(v);
		if (strcmp(s, "NaN") == 0) { e->v.d = NAN; return 0; }
		if (strcmp(s, "Infinity") == 0) { e->v.d = INFINITY; return 0; }
		if (strcmp(s, "-Infinity") == 0) { e->v.d = -INFINITY; return 0; }
		char *end;
		errno = 0;
		double d = strtod(s, &end);
		bool numeric = *s != '\0' && *end == '\0' && (*s == '-' || (*s >= '0' && *s <= '9')) &&
			       isfinite(d);
		if (numeric) {
			e->v.d = d;
			return 0;
		}
	}
	return fail(c, -EINVAL, NULL, "%s must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")", f->json);
}

static int json_message(struct ctx *c, enum msg mi, json_t *obj, struct node **out);

static int json_value(struct ctx *c, const struct fdef *f, json_t *v, struct ent *e)
{
	switch ((enum ty)f->ty) {
	case T_MSG:
		if (!json_is_object(v))
			return fail(c, -EINVAL, NULL, "%s must be an object (%s)", f->json, mdefs[f->sub].name);
		return json_message(c, (enum msg)f->sub, v, &e->v.m);
	case T_STR:
	case T_BYTES:
	case T_HEX:
		if (!json_is_string(v))
			return fail(c, -EINVAL, NULL, "%s must be a string", f->json);
		if (json_string_length(v) > UINT32_MAX)
			return fail(c, -E2BIG, NULL, "%s is too long", f->json);
		if (f->ty == T_BYTES)
			return b64_decode(c, json_string_value(v), json_string_length(v), e);
		if (f->ty == T_HEX)
			return hex_decode(c, json_string_value(v), json_string_length(v), e);
		e->v.p = (const uint8_t *)json_string_value(v);
		e->n = (uint32_t)json_string_length(v);
		return 0;
	case T_BOOL:
		if (!json_is_boolean(v))
			return fail(c, -EINVAL, NULL, "%s must be true or false", f->json);
		e->v.u = json_is_true(v);
		return 0;
	case T_DOUBLE:
		return json_double(c, v, f, e);
	default:
		return json_int(c, v, f, e);
	}
}

static int json_message(struct ctx *c, enum msg mi, json_t *obj, struct node **out)
{
	const struct mdef *md = &mdefs[mi];
	const char *key;
	json_t *v;
	size_t count = 0;
	uint32_t seen = 0;
	const char *oneof = NULL;
	uint16_t fi;

	json_object_foreach(obj, key, v) {
		const struct fdef *f = find_key(md, key, &fi);
		if (f == NULL || json_is_null(v))
			continue;       /* unknown fields are ignored; null is absent */
		if (seen & (1u << fi))
			return fail(c, -EINVAL, NULL, "%s given twice (as %s and %s)", f->json, f->json,
				    f->proto);
		seen |= 1u << fi;
		if (f->flags & F_ONEOF) {
			if (oneof != NULL)
				return fail(c, -EINVAL, NULL, "%s and %s are of one oneof: set one", oneof,
					    f->json);
			oneof = f->json;
		}
		if (f->flags & F_REP) {
			if (!json_is_array(v))
				return fail(c, -EINVAL, NULL, "%s must be an array", f->json);
			count += json_array_size(v);
		} else {
			count++;
		}
	}
	if (count > UINT32_MAX)
		return fail(c, -E2BIG, NULL, "too many values in one object");
	struct node *nd = arena_alloc(c, sizeof(*nd));
	struct ent *e = count ? arena_alloc(c, sizeof(*e) * count) : NULL;
	if (nd == NULL || (count && e == NULL))
		return oom(c, sizeof(*e) * count);
	*nd = (struct node){ .e = e, .n = (uint32_t)count, .mi = (uint8_t)mi };

	size_t k = 0;
	int rc;
	json_object_foreach(obj, key, v) {
		const struct fdef *f = find_key(md, key, &fi);
		if (f == NULL || json_is_null(v))
			continue;
		if (f->flags & F_REP) {
			size_t i;
			json_t *x;
			json_array_foreach(v, i, x) {
				if ((rc = push(c, f->json, i, true)) < 0)
					return rc;
				e[k] = (struct ent){ .fi = fi };
				if (json_is_null(x))
					return fail(c, -EINVAL, NULL, "null inside a list");
				if ((rc = json_value(c, f, x, &e[k++])) < 0)
					return rc;
				c->depth--;
			}
		} else {
			if ((rc = push(c, f->json, 0, false)) < 0)
				return rc;
			e[k] = (struct ent){ .fi = fi };
			/* json_value names the field itself: the path ends at the object */
			if (f->ty != T_MSG)
				c->depth--;
			if ((rc = json_value(c, f, v, &e[k++])) < 0)
				return rc;
			if (f->ty == T_MSG)
				c->depth--;
		}
	}
	*out = nd;
	return node_finish(c, nd);
}

/* jansson's parser recurses once per bracket, up to 2048 deep: more than a
 * gateway thread's stack holds.  Refuse deep nesting before it parses. */
static int json_depth_ok(struct ctx *c, const uint8_t *p, size_t n)
{
	int depth = 0;
	bool str = false;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = p[i];
		if (str) {
			if (b == '\\')
				i++;
			else if (b == '"')
				str = false;
		} else if (b == '"') {
			str = true;
		} else if (b == '{' || b == '[') {
			if (++depth > 2 * TM_RELAY_DEPTH_MAX + 2)
				return fail(c, -EINVAL, NULL, "nested deeper than %d arrays and objects (at byte %zu)",
					    2 * TM_RELAY_DEPTH_MAX + 2, i);
		} else if (b == '}' || b == ']') {
			depth--;
		}
	}
	return 0;
}

/* ---- 5. the re-stamping ------------------------------------------------------------ */

static const char RESERVED[] = "strands.box.";
static const char CLAIMED_SCOPE[] = "strands-box.";
static const char CLAIMED[] = "agent-claimed:";

static bool has_prefix(const struct ent *e, const char *pre)
{
	size_t k = strlen(pre);
	return e->n >= k && memcmp(e->v.p, pre, k) == 0;
}

/* The key of a KeyValue node (a borrowed view; empty when unset). */
static const struct ent *kv_key(const struct node *kv)
{
	static const struct ent none = { 0 };
	for (uint32_t i = 0; i < kv->n; i++)
		if (kv->e[i].fi == 0 && !kv->e[i].del)
			return &kv->e[i];
	return &none;
}

static int restamp_node(struct ctx *c, struct node *nd)
{
	const struct mdef *md = &mdefs[nd->mi];
	for (uint32_t i = 0; i < nd->n; i++) {
		struct ent *e = &nd->e[i];
		const struct fdef *f = &md->f[e->fi];
		if (e->del)
			continue;
		if ((f->flags & F_STRIP) && has_prefix(kv_key(e->v.m), RESERVED)) {
			e->del = 1;
			continue;
		}
		if ((f->flags & F_SCOPE) && has_prefix(e, CLAIMED_SCOPE)) {
			size_t k = sizeof(CLAIMED) - 1;
			uint8_t *s = arena_alloc(c, k + e->n);
			if (s == NULL)
				return oom(c, k + e->n);
			memcpy(s, CLAIMED, k);
			memcpy(s + k, e->v.p, e->n);
			e->v.p = s;
			e->n += (uint32_t)k;
		}
		/* AnyValue trees hold values, not attributes Box strips: stop there */
		if (f->ty == T_MSG && f->sub != M_ANY) {
			int rc = restamp_node(c, e->v.m);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static struct node *str_kv(struct ctx *c, const char *key, const char *value)
{
	struct node *kv = arena_alloc(c, sizeof(*kv)), *any = arena_alloc(c, sizeof(*any));
	struct ent *ke = arena_alloc(c, 2 * sizeof(*ke)), *ve = arena_alloc(c, sizeof(*ve));
	if (kv == NULL || any == NULL || ke == NULL || ve == NULL)
		return NULL;
	ve[0] = (struct ent){ .fi = 0, .n = (uint32_t)strlen(value), .v.p = (const uint8_t *)value };
	*any = (struct node){ .e = ve, .n = 1, .mi = M_ANY };
	ke[0] = (struct ent){ .fi = 0, .n = (uint32_t)strlen(key), .v.p = (const uint8_t *)key };
	ke[1] = (struct ent){ .fi = 1, .v.m = any };
	*kv = (struct node){ .e = ke, .n = 2, .mi = M_KV };
	return kv;
}

static bool operator_key(const struct tm_relay_stamp *st, const struct ent *k)
{
	for (size_t i = 0; i < st->n_operator; i++) {
		const char *ok = st->operator_attrs[i].key;
		if (strlen(ok) == k->n && memcmp(ok, k->v.p, k->n) == 0)
			return true;
	}
	return false;
}

/* One top-level Resource{Spans,Logs,Metrics}: its resource (made when
 * absent) without the operator's keys, then the stamps appended after the
 * attributes it keeps (Box's strip_and_stamp_resource). */
static int stamp_resource(struct ctx *c, struct node *top)
{
	const struct tm_relay_stamp *st = c->st;
	struct node *res = NULL;
	for (uint32_t i = 0; i < top->n; i++)
		if (top->e[i].fi == 0 && !top->e[i].del)
			res = top->e[i].v.m;    /* field 0 of every Resource* is resource */
	if (res == NULL) {
		struct ent *e = arena_alloc(c, sizeof(*e) * (top->n + 1));
		res = arena_alloc(c, sizeof(*res));
		if (e == NULL || res == NULL)
			return oom(c, sizeof(*e) * (top->n + 1));
		*res = (struct node){ .mi = M_RESOURCE };
		e[0] = (struct ent){ .fi = 0, .v.m = res };
		if (top->n > 0)         /* an empty Resource*: e is NULL */
			memcpy(e + 1, top->e, sizeof(*e) * top->n);
		top->e = e;
		top->n++;
	}
	size_t extra = st->n_operator + 3;
	struct ent *e = arena_alloc(c, sizeof(*e) * (res->n + extra));
	if (e == NULL)
		return oom(c, sizeof(*e) * (res->n + extra));
	size_t k = 0;
	uint32_t i = 0;
	for (; i < res->n && res->e[i].fi == 0; i++) {
		if (!res->e[i].del && operator_key(st, kv_key(res->e[i].v.m)))
			continue;
		e[k++] = res->e[i];
	}
	const char *keys[3] = { "strands.box.source", "strands.box.name", "strands.box.run.id" };
	const char *vals[3] = { "agent", st->box_id, st->run_id };
	for (size_t j = 0; j < extra; j++) {
		struct node *kv = j < st->n_operator ? str_kv(c, st->operator_attrs[j].key,
							      st->operator_attrs[j].value)
						     : str_kv(c, keys[j - st->n_operator],
							      vals[j - st->n_operator]);
		if (kv == NULL)
			return oom(c, 256);
		e[k++] = (struct ent){ .fi = 0, .v.m = kv };
	}
	for (; i < res->n; i++)
		e[k++] = res->e[i];
	res->e = e;
	res->n = (uint32_t)k;
	return 0;
}

/* ---- 6. the OTLP/JSON encoder ---------------------------------------------------- */

/* A JSON string of n bytes (valid UTF-8), escaped as tm_json_str does. */
static void put_str(struct tm_buf *b, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	tm_buf_putc(b, '"');
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = s[i];
		const char *esc = NULL;
		switch (ch) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (ch >= 0x20)
				continue;
		}
		tm_buf_put(b, s + run, i - run);
		if (esc != NULL) {
			tm_buf_puts(b, esc);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15] };
			tm_buf_put(b, u, sizeof(u));
		}
		run = i + 1;
	}
	tm_buf_put(b, s + run, n - run);
	tm_buf_putc(b, '"');
}

static void put_hexstr(struct tm_buf *b, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	tm_buf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		tm_buf_putc(b, hex[p[i] >> 4]);
		tm_buf_putc(b, hex[p[i] & 15]);
	}
	tm_buf_putc(b, '"');
}

static void put_b64(struct tm_buf *b, const uint8_t *p, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	tm_buf_putc(b, '"');
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char q[4] = { al[v >> 18], al[(v >> 12) & 63], i + 1 < n ? al[(v >> 6) & 63] : '=',
			      i + 2 < n ? al[v & 63] : '=' };
		tm_buf_put(b, q, 4);
	}
	tm_buf_putc(b, '"');
}

/* The shortest %g form that reads back as the same double. */
static void put_double(struct tm_buf *b, double d)
{
	if (isnan(d)) {
		tm_buf_puts(b, "\"NaN\"");
		return;
	}
	if (isinf(d)) {
		tm_buf_puts(b, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	char tmp[32];
	if (d == 0 && signbit(d)) {
		tm_buf_puts(b, "-0.0");     /* "-0" would read back as the integer 0 */
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	tm_buf_puts(b, tmp);
}

static void put_scalar(struct tm_buf *b, enum ty t, const struct ent *e)
{
	char tmp[32];
	static const uint8_t empty[1];
	switch (t) {
	case T_STR: put_str(b, e ? e->v.p : empty, e ? e->n : 0); return;
	case T_BYTES: put_b64(b, e ? e->v.p : empty, e ? e->n : 0); return;
	case T_HEX: put_hexstr(b, e ? e->v.p : empty, e ? e->n : 0); return;
	case T_BOOL: tm_buf_puts(b, e && e->v.u ? "true" : "false"); return;
	case T_DOUBLE: put_double(b, e ? e->v.d : 0.0); return;
	case T_ENUM: case T_INT32: case T_SINT32:
		snprintf(tmp, sizeof(tmp), "%" PRId64, e ? (int64_t)e->v.u : 0);
		break;
	case T_UINT32: case T_FIXED32:
		snprintf(tmp, sizeof(tmp), "%" PRIu64, e ? e->v.u : 0);
		break;
	case T_INT64: case T_SFIXED64:
		snprintf(tmp, sizeof(tmp), "\"%" PRId64 "\"", e ? (int64_t)e->v.u : 0);
		break;
	default:        /* T_UINT64, T_FIXED64 */
		snprintf(tmp, sizeof(tmp), "\"%" PRIu64 "\"", e ? e->v.u : 0);
		break;
	}
	tm_buf_puts(b, tmp);
}

/* Every field in table order: defaults written (Box's serde writes them), an
 * absent message as null, an absent oneof member or optional left out. */
static void json_node(struct tm_buf *b, const struct node *nd, size_t limit)
{
	const struct mdef *md = &mdefs[nd->mi];
	bool first = true;
	uint32_t i = 0;
	if (b->n > limit) {
		b->oom = true;          /* the caller tells -E2BIG from ENOMEM by b->n */
		return;
	}
	tm_buf_putc(b, '{');
	for (size_t fi = 0; fi < md->n; fi++) {
		const struct fdef *f = &md->f[fi];
		uint32_t lo = i;
		while (i < nd->n && nd->e[i].fi == fi)
			i++;
		const struct ent *last = NULL;
		for (uint32_t j = lo; j < i; j++)
			if (!nd->e[j].del)
				last = &nd->e[j];
		if (!(f->flags & F_REP) && last == NULL && (f->flags & (F_ONEOF | F_OPT)))
			continue;
		if (!first)
			tm_buf_putc(b, ',');
		first = false;
		tm_buf_putc(b, '"');
		tm_buf_puts(b, f->json);
		tm_buf_puts(b, "\":");
		if (f->flags & F_REP) {
			tm_buf_putc(b, '[');
			bool f1 = true;
			for (uint32_t j = lo; j < i; j++) {
				if (nd->e[j].del)
					continue;
				if (!f1)
					tm_buf_putc(b, ',');
				f1 = false;
				if (f->ty == T_MSG)
					json_node(b, nd->e[j].v.m, limit);
				else
					put_scalar(b, (enum ty)f->ty, &nd->e[j]);
			}
			tm_buf_putc(b, ']');
		} else if (f->ty == T_MSG) {
			if (last != NULL)
				json_node(b, last->v.m, limit);
			else
				tm_buf_puts(b, "null");
		} else {
			put_scalar(b, (enum ty)f->ty, last);
		}
	}
	tm_buf_putc(b, '}');
}

/* ---- 7. the protobuf encoder ------------------------------------------------------ */

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(struct tm_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	tm_buf_put(b, tmp, n);
}

static uint64_t wire_value(enum ty t, uint64_t u)
{
	if (t == T_SINT32) {
		int32_t x = (int32_t)(int64_t)u;
		return (uint32_t)(((uint32_t)x << 1) ^ (uint32_t)(x >> 31));
	}
	return u;
}

static size_t scalar_len(enum ty t, const struct ent *e)
{
	switch (wire_type(t)) {
	case 1: return 8;
	case 5: return 4;
	case 0: return varint_len(wire_value(t, e->v.u));
	default: return varint_len(e->n) + e->n;
	}
}

/* Is a non-repeated, implicit-presence value the default proto3 leaves out? */
static bool is_default(enum ty t, const struct ent *e)
{
	if (wire_type(t) == 2)
		return e->n == 0;
	return e->v.u == 0;     /* a double's bits: -0.0 is written, as it differs */
}

/* The packed payload of field fi's values [lo, hi). */
static size_t packed_len(enum ty t, const struct node *nd, uint32_t lo, uint32_t hi)
{
	size_t n = 0;
	for (uint32_t j = lo; j < hi; j++)
		if (!nd->e[j].del)
			n += scalar_len(t, &nd->e[j]);
	return n;
}

static size_t pb_size(struct node *nd)
{
	const struct mdef *md = &mdefs[nd->mi];
	size_t total = 0;
	uint32_t i = 0;
	for (size_t fi = 0; fi < md->n; fi++) {
		const struct fdef *f = &md->f[fi];
		size_t tag = varint_len((uint64_t)f->num << 3);
		uint32_t lo = i;
		while (i < nd->n && nd->e[i].fi == fi)
			i++;
		if ((f->flags & F_REP) && is_numeric(f->ty)) {
			size_t n = packed_len((enum ty)f->ty, nd, lo, i);
			if (n > 0)
				total += tag + varint_len(n) + n;
			continue;
		}
		for (uint32_t j = lo; j < i; j++) {
			const struct ent *e = &nd->e[j];
			if (e->del)
				continue;
			if (f->ty == T_MSG) {
				size_t n = pb_size(e->v.m);
				total += tag + varint_len(n) + n;
			} else if ((f->flags & (F_REP | F_ONEOF | F_OPT)) || !is_default((enum ty)f->ty, e)) {
				total += tag + scalar_len((enum ty)f->ty, e);
			}
		}
	}
	nd->pbsize = total;
	return total;
}

static void put_wire(struct tm_buf *b, enum ty t, const struct ent *e)
{
	uint8_t tmp[8];
	switch (wire_type(t)) {
	case 0:
		put_varint(b, wire_value(t, e->v.u));
		return;
	case 1:
	case 5: {
		size_t k = wire_type(t) == 1 ? 8 : 4;
		for (size_t i = 0; i < k; i++)
			tmp[i] = (uint8_t)(e->v.u >> (8 * i));
		tm_buf_put(b, tmp, k);
		return;
	}
	default:
		put_varint(b, e->n);
		tm_buf_put(b, e->v.p, e->n);
	}
}

static void pb_node(struct tm_buf *b, const struct node *nd)
{
	const struct mdef *md = &mdefs[nd->mi];
	uint32_t i = 0;
	for (size_t fi = 0; fi < md->n; fi++) {
		const struct fdef *f = &md->f[fi];
		uint32_t lo = i;
		while (i < nd->n && nd->e[i].fi == fi)
			i++;
		if ((f->flags & F_REP) && is_numeric(f->ty)) {
			size_t n = packed_len((enum ty)f->ty, nd, lo, i);
			if (n == 0)
				continue;
			put_varint(b, (uint64_t)f->num << 3 | 2);
			put_varint(b, n);
			for (uint32_t j = lo; j < i; j++)
				if (!nd->e[j].del)
					put_wire(b, (enum ty)f->ty, &nd->e[j]);
			continue;
		}
		for (uint32_t j = lo; j < i; j++) {
			const struct ent *e = &nd->e[j];
			if (e->del)
				continue;
			if (f->ty == T_MSG) {
				put_varint(b, (uint64_t)f->num << 3 | 2);
				put_varint(b, e->v.m->pbsize);
				pb_node(b, e->v.m);
			} else if ((f->flags & (F_REP | F_ONEOF | F_OPT)) || !is_default((enum ty)f->ty, e)) {
				put_varint(b, (uint64_t)f->num << 3 | (uint64_t)wire_type((enum ty)f->ty));
				put_wire(b, (enum ty)f->ty, e);
			}
		}
	}
}

/* ---- 8. the entry point -------------------------------------------------------------- */

void tm_relay_out_free(struct tm_relay_out *o)
{
	if (o == NULL)
		return;
	tm_buf_free(&o->json);
	tm_buf_free(&o->pb);
	*o = (struct tm_relay_out){ 0 };
}

int tm_relay_restamp(enum tm_relay_kind kind, bool json, const void *body, size_t len,
		     const struct tm_relay_stamp *st, struct tm_relay_out *out, char *err,
		     size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen, .json = json, .base = body, .st = st };
	struct node *root = NULL;
	json_t *doc = NULL;
	int rc;

	*out = (struct tm_relay_out){ 0 };
	if (errlen > 0)
		err[0] = '\0';
	if ((unsigned)kind > TM_RELAY_METRICS || (body == NULL && len > 0) || st == NULL)
		return fail(&c, -EINVAL, NULL, "bad arguments");
	/* The tree costs at most 20 bytes per input byte (an entry and a node
	 * per 2-byte empty message); the rest is headroom for the stamps. */
	c.limit = 24 * len + ((size_t)1 << 20);
	enum msg mi = request_msg[kind];

	if (json) {
		json_error_t je;
		if ((rc = json_depth_ok(&c, body, len)) < 0)
			goto out;
		doc = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (doc == NULL) {
			rc = fail(&c, -EINVAL, NULL, "not JSON: %s at line %d column %d", je.text, je.line,
				  je.column);
			goto out;
		}
		if (!json_is_object(doc)) {
			rc = fail(&c, -EINVAL, NULL, "an %s object expected", mdefs[mi].name);
			goto out;
		}
		rc = json_message(&c, mi, doc, &root);
	} else {
		rc = pb_message(&c, mi, body, len, &root);
	}
	if (rc < 0)
		goto out;

	c.depth = 0;
	size_t n = 0;
	for (uint32_t i = 0; i < root->n; i++)
		n += !root->e[i].del;
	if (n > TM_RELAY_RESOURCES_MAX) {
		rc = fail(&c, -E2BIG, NULL, "%zu resources, where at most %d are relayed", n,
			  TM_RELAY_RESOURCES_MAX);
		goto out;
	}
	if ((rc = restamp_node(&c, root)) < 0)
		goto out;
	for (uint32_t i = 0; i < root->n; i++)
		if (!root->e[i].del && (rc = stamp_resource(&c, root->e[i].v.m)) < 0)
			goto out;

	size_t jlimit = (size_t)TM_RELAY_EXPANSION * len + ((size_t)1 << 20);
	json_node(&out->json, root, jlimit);
	tm_buf_putc(&out->json, '\n');
	if (out->json.oom) {
		rc = out->json.n > jlimit
			? fail(&c, -E2BIG, NULL, "the OTLP/JSON line would pass %zu bytes", jlimit)
			: fail(&c, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	size_t pbn = pb_size(root);
	if (tm_buf_room(&out->pb, pbn ? pbn : 1) == NULL) {
		rc = fail(&c, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	pb_node(&out->pb, root);
	out->n_resources = n;
	rc = 0;
out:
	if (rc < 0)
		tm_relay_out_free(out);
	arena_free(&c);
	json_decref(doc);
	return rc;
}
