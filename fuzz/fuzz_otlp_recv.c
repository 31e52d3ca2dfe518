/* fuzz_otlp_recv.c - libFuzzer target: the agent receiver's re-stamping
 * (src/telemetry/relay.h), what the agent can put before the box's targets.
 *
 * Input: byte 0 picks the route and the content type: (byte 0 % 3) traces,
 * logs, metrics; (byte 0 & 4) OTLP/JSON, else protobuf.  The rest is the body.
 *
 * The promises of relay.h this target checks (a broken one aborts):
 *   - the result is 0, -EINVAL, -E2BIG or -ENOMEM; a refusal leaves the
 *     output empty and says where and why (a non-empty message starting at
 *     the path, "$" or "protobuf $");
 *   - the JSON line is one line ending in '\n' that jansson reads back as an
 *     object with the route's one key, and at most 1024 resources;
 *   - re-stamping is idempotent, so the outputs are fixed points: the
 *     protobuf body, re-stamped, gives the same JSON line and the same
 *     protobuf bytes; the JSON line, re-stamped, gives the same JSON line
 *     (and, for a JSON input, the same protobuf bytes: a protobuf input's NaN
 *     payloads do not survive JSON, whose only NaN is "NaN");
 *   - each resource ends with strands.box.source="agent", strands.box.name
 *     and strands.box.run.id, and no scope name starts with "strands-box.".
 * Everything is freed before returning; nothing is printed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relay.h"

static const struct tm_kv OPERATOR[] = { { "team", "ops" } };
static const struct tm_relay_stamp STAMP = {
	"box-0123456789abcdef", "0123456789abcdef0123456789abcdef", 1, OPERATOR,
};

static bool same(const struct tm_buf *a, const struct tm_buf *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

static void check_refusal(int rc, const struct tm_relay_out *o, const char *err)
{
	if (rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM)
		abort();
	if (o->json.p != NULL || o->pb.p != NULL || o->n_resources != 0)
		abort();
	if (err[0] != '$' && strncmp(err, "protobuf $", 10) != 0)
		abort();
}

static const char *const KEYS[] = { "resourceSpans", "resourceLogs", "resourceMetrics" };
static const char *const SCOPES[] = { "scopeSpans", "scopeLogs", "scopeMetrics" };

/* The JSON line's shape: the route's key, the stamps last on every resource,
 * no scope left claiming strands-box. */
static void check_line(enum tm_relay_kind k, const struct tm_relay_out *o)
{
	if (o->json.n == 0 || o->json.p[o->json.n - 1] != '\n' ||
	    memchr(o->json.p, '\n', o->json.n - 1) != NULL)
		abort();
	json_error_t je;
	json_t *doc = json_loadb((const char *)o->json.p, o->json.n - 1,
				 JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (doc == NULL || !json_is_object(doc) || json_object_size(doc) != 1)
		abort();
	json_t *rs = json_object_get(doc, KEYS[k]);
	if (!json_is_array(rs) || json_array_size(rs) != o->n_resources ||
	    o->n_resources > TM_RELAY_RESOURCES_MAX)
		abort();
	size_t i;
	json_t *r;
	json_array_foreach(rs, i, r) {
		json_t *attrs = json_object_get(json_object_get(r, "resource"), "attributes");
		size_t n = json_array_size(attrs);
		static const char *const tail[3] = { "strands.box.source", "strands.box.name",
						     "strands.box.run.id" };
		if (n < 3)
			abort();
		for (size_t j = 0; j < 3; j++) {
			json_t *kv = json_array_get(attrs, n - 3 + j);
			if (strcmp(json_string_value(json_object_get(kv, "key")), tail[j]) != 0)
				abort();
		}
		if (strcmp(json_string_value(json_object_get(json_object_get(
				   json_array_get(attrs, n - 3), "value"), "stringValue")), "agent") != 0)
			abort();
		size_t si;
		json_t *s;
		json_array_foreach(json_object_get(r, SCOPES[k]), si, s) {
			const char *name = json_string_value(json_object_get(json_object_get(s, "scope"), "name"));
			if (name != NULL && strncmp(name, "strands-box.", 12) == 0)
				abort();
		}
	}
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum tm_relay_kind k = (enum tm_relay_kind)(data[0] % 3);
	bool json = data[0] & 4;
	struct tm_relay_out o, o2, o3;
	char err[256];

	int rc = tm_relay_restamp(k, json, data + 1, size - 1, &STAMP, &o, err, sizeof(err));
	if (rc < 0) {
		check_refusal(rc, &o, err);
		return 0;
	}
	check_line(k, &o);

	rc = tm_relay_restamp(k, false, o.pb.p, o.pb.n, &STAMP, &o2, err, sizeof(err));
	if (rc == 0) {
		if (!same(&o2.json, &o.json) || !same(&o2.pb, &o.pb) || o2.n_resources != o.n_resources)
			abort();
	} else if (!(rc == -E2BIG && o.pb.n < size - 1)) {
		abort();        /* only a smaller body (unknown fields dropped) has a tighter bound */
	}
	tm_relay_out_free(&o2);

	rc = tm_relay_restamp(k, true, o.json.p, o.json.n, &STAMP, &o3, err, sizeof(err));
	if (rc != 0 || !same(&o3.json, &o.json) || (json && !same(&o3.pb, &o.pb)))
		abort();
	tm_relay_out_free(&o3);
	tm_relay_out_free(&o);
	return 0;
}
