/* otlp_targets.c - the collector's OTLP/HTTP targets (otlp_targets.h).
 *
 * Box's targets each have an SDK batch processor: a record waits at most a
 * second, a batch holds at most 512, and an export that fails is not retried.
 * Here one pending list serves every target (each takes the records its
 * `include` names when the batch is encoded), and the exporter process keeps
 * at most TM_EXPORT_QUEUE bodies per target, so a slow collector costs its own
 * records and never the decisions or another target. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "otlp_targets.h"

#define BATCH_RECORDS 512
#define DELAY_NS 1000000000LL

struct target {
	char *label;
	unsigned include;
	uint64_t lost;                  /* bodies the exporter did not take */
};

struct tm_otlp_set {
	struct tm_exporter *x;
	size_t n;
	struct target t[TM_EXPORT_TARGETS_MAX];
	struct tm_rec **pending;
	size_t n_pending, cap;
	int64_t due;
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int tm_otlp_open(const struct tm_otlp_config *cfg, size_t n, struct tm_otlp_set **out, char *err,
		 size_t errlen)
{
	*out = NULL;
	if (n == 0)
		return 0;
	if (n > TM_EXPORT_TARGETS_MAX) {
		snprintf(err, errlen, "at most %d OTLP targets", TM_EXPORT_TARGETS_MAX);
		return -1;
	}
	struct tm_otlp_set *s = calloc(1, sizeof(*s));
	struct tm_otlp_target t[TM_EXPORT_TARGETS_MAX];
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->n = n;
	s->due = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		t[i] = cfg[i].target;
		s->t[i].include = cfg[i].include;
		s->t[i].label = strdup(cfg[i].target.label ? cfg[i].target.label : cfg[i].target.url);
		if (s->t[i].label == NULL) {
			snprintf(err, errlen, "out of memory");
			tm_otlp_close(s, NULL, -1);
			return -1;
		}
	}
	if (tm_exporter_start(t, n, &s->x, err, errlen) != 0) {
		tm_otlp_close(s, NULL, -1);
		return -1;
	}
	*out = s;
	return 0;
}

bool tm_otlp_wants(const struct tm_otlp_set *s, const struct tm_rec *r)
{
	for (size_t i = 0; s != NULL && i < s->n; i++)
		if (r->signal & s->t[i].include)
			return true;
	return false;
}

void tm_otlp_add(struct tm_otlp_set *s, struct tm_rec *r)
{
	if (s->n_pending == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : BATCH_RECORDS;
		struct tm_rec **p = realloc(s->pending, cap * sizeof(*p));
		if (p == NULL) {
			for (size_t i = 0; i < s->n; i++)
				if (r->signal & s->t[i].include)
					s->t[i].lost++;
			free(r);
			return;
		}
		s->pending = p;
		s->cap = cap;
	}
	if (s->n_pending == 0)
		s->due = mono_ns() + DELAY_NS;
	s->pending[s->n_pending++] = r;
}

int64_t tm_otlp_due(const struct tm_otlp_set *s)
{
	return s != NULL && s->n_pending > 0 ? s->due : INT64_MAX;
}

bool tm_otlp_full(const struct tm_otlp_set *s)
{
	return s != NULL && s->n_pending >= BATCH_RECORDS;
}

/* Submit one body; what the exporter does not take is lost here. */
static void submit(struct tm_otlp_set *s, size_t i, enum tm_route route, struct tm_buf *b,
		   uint32_t n)
{
	if (n == 0 || b->n == 0)
		return;
	if (b->oom || tm_exporter_submit(s->x, i, route, b->p, b->n, n) != 0)
		s->t[i].lost += n;
}

void tm_otlp_flush(struct tm_otlp_set *s, const struct tm_resource *res)
{
	if (s == NULL || s->n_pending == 0)
		return;
	struct tm_rec **sel = malloc(s->n_pending * sizeof(*sel));
	for (size_t i = 0; i < s->n; i++) {
		size_t k = 0, spans = 0;
		for (size_t j = 0; sel != NULL && j < s->n_pending; j++)
			if (s->pending[j]->signal & s->t[i].include) {
				sel[k++] = s->pending[j];
				spans += s->pending[j]->span;
			}
		if (sel == NULL) {
			s->t[i].lost += s->n_pending;
			continue;
		}
		struct tm_buf logs = { 0 }, traces = { 0 };
		if (k > 0) {
			tm_pb_logs(&logs, res, sel, k);
			tm_pb_spans(&traces, res, sel, k);
		}
		/* counted as the exporter counts them: log records and spans */
		submit(s, i, TM_ROUTE_LOGS, &logs, (uint32_t)k);
		submit(s, i, TM_ROUTE_TRACES, &traces, (uint32_t)spans);
		tm_buf_free(&logs);
		tm_buf_free(&traces);
	}
	free(sel);
	for (size_t j = 0; j < s->n_pending; j++)
		free(s->pending[j]);
	s->n_pending = 0;
	s->due = INT64_MAX;
}

void tm_otlp_relay(struct tm_otlp_set *s, enum tm_relay_kind kind, const void *pb, size_t len)
{
	static const enum tm_route route[] = { [TM_RELAY_TRACES] = TM_ROUTE_TRACES,
					       [TM_RELAY_LOGS] = TM_ROUTE_LOGS,
					       [TM_RELAY_METRICS] = TM_ROUTE_METRICS };
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		if (kind == TM_RELAY_TRACES && !(s->t[i].include & TM_SIG_TRACE))
			continue;
		/* an empty request (no resources) encodes as no bytes: nothing to send */
		if (len > 0 && tm_exporter_submit(s->x, i, route[kind], pb, len, 1) != 0)
			s->t[i].lost++;
	}
}

uint64_t tm_otlp_lost(const struct tm_otlp_set *s)
{
	uint64_t n = 0;
	for (size_t i = 0; s != NULL && i < s->n; i++)
		n += s->t[i].lost;
	return n;
}

uint64_t tm_otlp_close(struct tm_otlp_set *s, const struct tm_resource *res, int err_fd)
{
	if (s == NULL)
		return 0;
	if (res != NULL)
		tm_otlp_flush(s, res);
	struct tm_export_report rep[TM_EXPORT_TARGETS_MAX];
	memset(rep, 0, sizeof(rep));
	if (s->x != NULL)
		tm_exporter_stop(s->x, rep, s->n, TM_OTLP_DRAIN_MS);
	uint64_t lost = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t l = s->t[i].lost + rep[i].lost;
		lost += l;
		if (l > 0 && err_fd >= 0) {
			char line[512];
			int k = snprintf(line, sizeof(line), "cairn: warning: %s: %llu records and spans "
					 "lost (%llu sent)%s%s\n", s->t[i].label, (unsigned long long)l,
					 (unsigned long long)rep[i].sent,
					 rep[i].last_error[0] ? ": " : "", rep[i].last_error);
			if (k > 0 && write(err_fd, line, (size_t)k < sizeof(line) ? (size_t)k
					   : sizeof(line) - 1) < 0) {
				/* the operator's terminal is gone: nothing more to say */
			}
		}
		free(s->t[i].label);
	}
	for (size_t j = 0; j < s->n_pending; j++)
		free(s->pending[j]);
	free(s->pending);
	free(s);
	return lost;
}
