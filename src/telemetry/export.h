/* export.h - OTLP/HTTP targets, from the supervisor's side (docs/records.md
 * "OTLP targets"; the channel is exportctl.h).
 *
 * An `[telemetry.<label>] kind = "otlp"` target is sent to by the exporter
 * process, cairn-export, which links OpenSSL so that the supervisor does not
 * (docs/egress.md "Two processes": the same pattern as cairn-gateway).  The
 * supervisor encodes each batch (tm_pb_logs, tm_pb_spans) and submits the
 * body; the exporter POSTs it, one request in flight per target, and says how
 * it went.  Best effort, as Box: a slow, refusing or dead collector loses
 * records, never slows the caller: submit never waits, and a target has at
 * most TM_EXPORT_QUEUE bodies outstanding (one in flight, the rest queued),
 * so a hung target costs its own records and no other target's.
 *
 * Thread-safe: submit may be called from the collector's writer while stop
 * waits on another thread. */
#ifndef CAIRN_TM_EXPORT_H
#define CAIRN_TM_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#define TM_EXPORT_TARGETS_MAX 16
#define TM_EXPORT_QUEUE 4               /* bodies outstanding per target */
#define TM_EXPORT_BODY_MAX ((size_t)8 << 20)   /* Box's 4 MiB agent payload, re-stamped */
#define TM_EXPORT_REQUEST_MS 4000       /* Box's REQUEST_DEADLINE */

/* One target.  url: the destination as box.toml names it (http:// or
 * https://, host, optional port and path; a trailing '/' is dropped before
 * the route).  header/secret: the secret's header and its resolved value,
 * or both NULL for none.  All borrowed for the call (the secret is copied
 * and wiped after it is handed over). */
struct tm_otlp_target {
	const char *label;              /* "[telemetry.collector]", for messages */
	const char *url;
	const char *header;             /* "Authorization": sent as "Bearer <secret>" */
	const char *secret;
};

struct tm_exporter;

/* Check every target (a URL the exporter can dial: http or https, a host, a
 * port in range, no userinfo, query or fragment; a secret that fits in a
 * header, and one over https or to a loopback host only, as Box requires)
 * and find cairn-export beside this executable, else in CAIRN_LIBEXECDIR.
 * The process starts at the first submit.  0 and *out, or -1 with err
 * naming the target and why. */
int tm_exporter_start(const struct tm_otlp_target *t, size_t n, struct tm_exporter **out,
		      char *err, size_t errlen);

enum tm_route { TM_ROUTE_LOGS, TM_ROUTE_TRACES, TM_ROUTE_METRICS };

/* Hand body[0, len) (1 .. TM_EXPORT_BODY_MAX bytes, copied), an export
 * request of n_records records, to be POSTed to target's route.  Never
 * waits: 0 when taken (the report counts its records sent or lost);
 * -EAGAIN when the target has TM_EXPORT_QUEUE bodies outstanding, -EPIPE
 * when the exporter is not running (it could not start, or it ended),
 * -EINVAL for a bad argument, -ENOMEM: then nothing was taken, and the
 * caller counts n_records lost (the report does not). */
int tm_exporter_submit(struct tm_exporter *x, size_t target, enum tm_route route,
		       const void *body, size_t len, uint32_t n_records);

/* Per target: records of taken bodies that a collector answered 2xx (sent)
 * and that it did not (lost: a failure, a refusal, a deadline, the drain's
 * end, the exporter's end), and the last failure's text ("" when none):
 * "<url> did not answer: <why>", "<url> answered 503 Service Unavailable". */
struct tm_export_report {
	uint64_t sent, lost;
	char last_error[256];
};

/* Drain: no more submits; wait at most timeout_ms for every taken body to be
 * answered, then stop the exporter (killed if it has not exited) and fill
 * rep[0, n) (n: at most the targets given to start; rep[i] is target i).
 * Then free x.  0, or -1 when some records were lost (rep says which).
 * NULL is a no-op returning 0. */
int tm_exporter_stop(struct tm_exporter *x, struct tm_export_report *rep, size_t n,
		     int timeout_ms);

#endif
