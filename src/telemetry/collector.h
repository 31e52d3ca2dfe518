/* collector.h - the one place every enforcement point reports to
 * (docs/records.md): each decision and control-plane step becomes a record,
 * written off the decision's path to the box's targets and, as one line, to
 * the operator's terminal.
 *
 * A decision never waits for a target: tm_emit queues and returns.  A writer
 * thread takes whatever has queued, prints the live lines, encodes one
 * OTLP/JSON logs line and one spans line per file target, writes and syncs
 * them, and goes back for more, so a busy box writes in batches and an idle
 * one at once.  The history, not this, is what must be durable before an
 * answer leaves (docs/security.md); records that never reach a file are
 * counted and said (box_stopped, the stop line).  Thread-safe. */
#ifndef CAIRN_TM_COLLECTOR_H
#define CAIRN_TM_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "record.h"
#include "relay.h"

struct tm_collector;

/* What `cairn run --decisions` prints on the supervisor's stderr. */
enum tm_live { TM_LIVE_NONE, TM_LIVE_DENY, TM_LIVE_ALL };

/* One file target.  path: absolute; dirfd/name: opened relative to dirfd
 * instead (the default target inside private/). */
struct tm_file_target {
	const char *label;              /* "[telemetry.audit]", or NULL: the default */
	const char *path;
	int dirfd;                      /* -1: use path */
	unsigned include;               /* TM_SIG_* */
};

/* One OTLP/HTTP target (docs/records.md "OTLP targets"): sent by the
 * exporter process, best effort. */
struct tm_otlp_config {
	struct tm_otlp_target target;   /* label, URL, header and resolved secret */
	unsigned include;               /* TM_SIG_* */
};

struct tm_config {
	const char *box_id;             /* "box-<16 hex>": strands.box.name */
	const uint8_t *run_id;          /* 16 bytes, or NULL: a new one */
	size_t n_files;
	const struct tm_file_target *files;
	size_t n_otlp;
	const struct tm_otlp_config *otlp;
	enum tm_live live;
	int live_fd;                    /* where live lines go (the supervisor's stderr) */
	const char *resource_env;       /* OTEL_RESOURCE_ATTRIBUTES, or NULL */
};

/* Open every target (a file target's parent directories made 0700, the file
 * O_APPEND|O_NOFOLLOW|O_CLOEXEC, mode 0600; the default target also readable,
 * and staged and written direct where it can be: recfile.h) and start the
 * writer.  0 and *out,
 * or -errno with Box's words in err (the target and why). */
int tm_collector_open(const struct tm_config *cfg, struct tm_collector **out, char *err,
		      size_t errlen);

/* The run's id (32 lowercase hex) and the resource's attributes, for tests
 * and for `cairn records show`. */
const char *tm_collector_run_id(const struct tm_collector *c);

/* Queue r (the collector owns it from here; NULL is a lost record, counted). */
void tm_emit(struct tm_collector *c, struct tm_rec *r);

/* An agent payload the agent receiver re-stamped (relay.h; docs/records.md
 * "The agent receiver"), relayed as Box relays it: its JSON line to every
 * file target and its protobuf body to every OTLP target, traces only to
 * targets whose `include` names `trace`, logs and metrics to all.  The
 * caller fills kind, json (one line ending in '\n') and pb, and release,
 * which the collector calls once it is done with p (from the writer, or
 * here when p is dropped: the queue holds at most TM_RELAY_QUEUE payloads
 * and TM_RELAY_QUEUE_BYTES, past which a payload is lost, counted).  Never
 * waits for a target. */
#define TM_RELAY_QUEUE 256
#define TM_RELAY_QUEUE_BYTES ((size_t)256 << 20)
struct tm_payload {
	struct tm_payload *next;        /* the collector's */
	enum tm_relay_kind kind;
	const uint8_t *json, *pb;
	size_t json_len, pb_len;
	void (*release)(struct tm_payload *p);
};
void tm_relay_emit(struct tm_collector *c, struct tm_payload *p);

/* What relayed payloads are stamped with: this run's box and run ids and
 * the operator's OTEL_RESOURCE_ATTRIBUTES (borrowed from c). */
void tm_collector_stamp(const struct tm_collector *c, struct tm_relay_stamp *out);

/* A control record of this run: the first one is the root of the run's
 * trace, every later one its child. */
void tm_control(struct tm_collector *c, enum tm_control_op op, const char *subject,
		const char *reason, const char *detail);

/* A decision's trace: the workload's traceparent when valid (value may be
 * NULL), else a new trace; always a new span. */
void tm_trace_begin(struct tm_trace *t, const char *traceparent);

/* What the collector saw: records queued, written (per file target, the
 * fewest), and lost (never reached some target); agent payloads relayed
 * (queued) and lost the same way. */
struct tm_stats {
	uint64_t emitted, written, lost;
	uint64_t relayed, relay_lost;
};
void tm_collector_stats(struct tm_collector *c, struct tm_stats *out);

/* Let the writer finish: nothing more is queued from here, and it writes,
 * syncs and drains what was, while the caller closes the rest of the run
 * (the history); tm_collector_close waits for it.  NULL is a no-op. */
void tm_collector_finish(struct tm_collector *c);

/* Write and sync everything queued, drain the OTLP targets (at most 10 s;
 * a line on the live descriptor per target that lost records), stop the
 * writer, close the targets and free c.  0, or -EIO when a file target
 * could not take its records (err says which).  NULL is a no-op. */
int tm_collector_close(struct tm_collector *c, char *err, size_t errlen);

/* The same, with the final counts (OTLP losses included) in *st. */
int tm_collector_close_stats(struct tm_collector *c, struct tm_stats *st, char *err,
			     size_t errlen);

#endif
