/* trace.h - the Dogwood trace format (docs/formats.md §4).
 *
 * One event per non-blank line:
 *   @<ts> [scope(…)] [entities(…)] [request_context(…)] Ns::Action::"id"::kind(…)
 * Timestamps are seconds in the file, whole as Dogwood writes them or with up
 * to nine digits after a point (cairn's history keeps nanoseconds), and
 * nanoseconds in the result (one whose nanoseconds do not fit in an int64 is an
 * error: `timestamp `x` is out of range`).
 * Everything the events point to lives in the caller's arena. */
#ifndef DW_TRACE_H
#define DW_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "event.h"

/* Parse a whole trace.  0 with *events (n_events of them, in file order, in
 * a), or -EINVAL with a message in err of the form `line N: <reason>` (Dogwood's
 * wording: `timepoint must start with `@``, `bad timestamp `x``,
 * `event head `…` is missing a `::kind` segment`, `duplicate field `k``,
 * `record has a duplicate field `k``, …), or -ENOMEM.  Nothing is returned on
 * error. */
int dw_trace_parse(struct dw_arena *a, const char *text, size_t len, struct dw_event **events,
		   size_t *n_events, char *err, size_t errlen);

/* Parse one line (no newline), numbered line_no for messages (and ev->line).
 * 0, -EINVAL (err), -ENOMEM.  A blank line is -ENOENT.  On error nothing of
 * the line stays in a and *ev is untouched.  The line must be UTF-8. */
int dw_trace_parse_line(struct dw_arena *a, const char *line, size_t len, uint32_t line_no,
			struct dw_event *ev, char *err, size_t errlen);

/* A timestamp of ns nanoseconds as a trace writes it: whole seconds
 * (`36000`), or seconds and the fraction without its trailing zeros
 * (`36000.5`, `-0.25`). */
#define DW_TRACE_TS_MAX 32
void dw_trace_ts_text(int64_t ns, char buf[DW_TRACE_TS_MAX]);

/* Write ev as one trace line (its timestamp by dw_trace_ts_text) into b,
 * without a newline: the inverse of dw_trace_parse_line.  0, -ENOMEM, or
 * -EINVAL when ev cannot be
 * written so that it reads back equal: a string, id or key that is not UTF-8,
 * a namespace or entity type that is not Ident(::Ident)*, a kind that is
 * empty, has `(`, `)`, control characters or edge whitespace, a decimal whose
 * text does not read back as a decimal (`1`), nesting past 128 (entity
 * attributes count from one level down, as the parser reads them), one entity
 * named twice, a context or logged value that is not a record.  On error b is unchanged.  The context
 * is written only when has_context; ev->line is not written. */
struct dw_buf;
int dw_trace_format(struct dw_buf *b, const struct dw_event *ev);

#endif
