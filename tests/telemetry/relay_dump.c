/* relay-dump - tm_relay_restamp (src/telemetry/relay.h) from the command line,
 * for tests/telemetry/relay.test.mjs:
 *
 *   relay-dump traces|logs|metrics json|pb OUT.jsonl OUT.pb [KEY=VALUE...] < body
 *
 * Reads an OTLP/HTTP body on stdin, re-stamps it for box "box-0123456789abcdef",
 * run "0123456789abcdef0123456789abcdef" with the operator's attributes KEY=VALUE,
 * and writes the OTLP/JSON line and the protobuf body.  Exit 0; 1 with
 * "EINVAL: <reason>" or "E2BIG: <reason>" on stderr when refused; 2 on misuse. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

static int write_file(const char *path, const struct tm_buf *b)
{
	FILE *f = fopen(path, "wb");
	if (f == NULL || (b->n && fwrite(b->p, 1, b->n, f) != b->n) || fclose(f) != 0) {
		fprintf(stderr, "relay-dump: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: relay-dump traces|logs|metrics json|pb OUT.jsonl OUT.pb [K=V...]\n");
		return 2;
	}
	enum tm_relay_kind kind;
	if (strcmp(argv[1], "traces") == 0)
		kind = TM_RELAY_TRACES;
	else if (strcmp(argv[1], "logs") == 0)
		kind = TM_RELAY_LOGS;
	else if (strcmp(argv[1], "metrics") == 0)
		kind = TM_RELAY_METRICS;
	else
		return 2;
	bool json = strcmp(argv[2], "json") == 0;

	size_t n = 0, cap = 1 << 16;
	char *body = malloc(cap);
	for (size_t r; body != NULL && (r = fread(body + n, 1, cap - n, stdin)) > 0;) {
		n += r;
		if (n == cap)
			body = realloc(body, cap *= 2);
	}
	if (body == NULL)
		return 2;

	size_t n_op = (size_t)argc - 5;
	struct tm_kv *op = calloc(n_op + 1, sizeof(*op));
	for (size_t i = 0; i < n_op; i++) {
		char *eq = strchr(argv[5 + i], '=');
		if (eq == NULL)
			return 2;
		*eq = '\0';
		op[i] = (struct tm_kv){ argv[5 + i], eq + 1 };
	}
	struct tm_relay_stamp st = { "box-0123456789abcdef", "0123456789abcdef0123456789abcdef",
				     n_op, op };
	struct tm_relay_out out;
	char err[512];
	int rc = tm_relay_restamp(kind, json, body, n, &st, &out, err, sizeof(err));
	free(body);
	free(op);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", rc == -EINVAL ? "EINVAL" : rc == -E2BIG ? "E2BIG" : "ENOMEM",
			err);
		return 1;
	}
	int w = write_file(argv[3], &out.json) | write_file(argv[4], &out.pb);
	tm_relay_out_free(&out);
	return w ? 2 : 0;
}
