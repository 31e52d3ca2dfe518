/* otlp_targets.h - the collector's OTLP/HTTP targets (docs/records.md "OTLP
 * targets"): records gathered as Box's batch processor gathers them (one
 * second, or 512 records), encoded in protobuf and handed to the exporter
 * process (export.h).  Used by the collector's writer thread only. */
#ifndef CAIRN_TM_OTLP_TARGETS_H
#define CAIRN_TM_OTLP_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "otlp.h"
#include "relay.h"

struct tm_otlp_set;

/* Check the targets and prepare the exporter (it starts at the first
 * export).  0 and *out (NULL when n is 0), or -1 with err. */
int tm_otlp_open(const struct tm_otlp_config *t, size_t n, struct tm_otlp_set **out, char *err,
		 size_t errlen);

/* Does some target take r? */
bool tm_otlp_wants(const struct tm_otlp_set *s, const struct tm_rec *r);

/* Take r (the set frees it once exported). */
void tm_otlp_add(struct tm_otlp_set *s, struct tm_rec *r);

/* When what is pending must go (CLOCK_MONOTONIC ns; INT64_MAX: nothing
 * pending), and whether it must go now (512 records). */
int64_t tm_otlp_due(const struct tm_otlp_set *s);
bool tm_otlp_full(const struct tm_otlp_set *s);

/* Encode what is pending per target and hand it to the exporter; a body it
 * does not take is counted lost. */
void tm_otlp_flush(struct tm_otlp_set *s, const struct tm_resource *res);

/* Hand an agent payload's protobuf body (relay.h) to every target that
 * takes its kind: traces where `include` names `trace`, logs and metrics
 * everywhere.  Counted as one record per target; what the exporter does
 * not take is lost. */
void tm_otlp_relay(struct tm_otlp_set *s, enum tm_relay_kind kind, const void *pb, size_t len);

/* Records lost so far (not taken by the exporter), over every target. */
uint64_t tm_otlp_lost(const struct tm_otlp_set *s);

/* Flush, drain (at most TM_OTLP_DRAIN_MS), and say on err_fd, one line per
 * target, what was lost.  Frees s.  Returns the records lost in all. */
#define TM_OTLP_DRAIN_MS 10000
uint64_t tm_otlp_close(struct tm_otlp_set *s, const struct tm_resource *res, int err_fd);

#endif
