/* fuzz_event_codec.c - libFuzzer target: the binary event codec
 * (dw_event_decode), and the trace format on what it decodes.
 *
 * The whole input is one encoded event (event_codec.h).  On failure the
 * decoder must return -EINVAL with an `event record, offset N: …` message (or
 * -ENOMEM), leave nothing in the arena and leave *ev untouched.  A decoded
 * event must:
 *
 *   - re-encode to exactly the input bytes.  The encoding has one spelling
 *     per event: the decoder refuses unknown flags, tags and versions,
 *     boolean bytes other than 0 and 1, unsorted or repeated record keys and
 *     trailing bytes, and it keeps every string's bytes and every decimal's
 *     text (the canonical value is recomputed, never stored), so nothing it
 *     accepts can be re-written differently;
 *   - clone (dw_event_clone) to an equal event that encodes to the same bytes;
 *   - survive dw_trace_format: where trace.h's list of refusals (restated in
 *     fz_formattable) does not apply, formatting must succeed, the line must
 *     parse back to an equal event (timestamp truncated to whole seconds,
 *     ev->line not written) and format to the same line again.  The codec
 *     builds events no trace line can hold (any bytes in ns, kind and ids,
 *     sub-second timestamps), so this reaches the formatter's escaping.
 *
 * A failed promise aborts, so libFuzzer keeps the input as a crash.  The
 * arena and buffers are per input and freed before returning; nothing is
 * printed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "event.h"
#include "event_codec.h"
#include "trace.h"
#include "tval.h"
#include "value.h"

#include "fuzz_event_util.h"
}

/* The event as its trace line can say it: whole seconds. */
static void fz_format_round_trip_ts(struct dw_arena *a, const struct dw_event *ev)
{
	struct dw_event t = *ev;

	t.ts = ev->ts / DW_NS_PER_SEC * DW_NS_PER_SEC;
	fz_format_round_trip(a, &t);
}

static bool fz_mark_eq(struct dw_arena_mark x, struct dw_arena_mark y)
{
	return x.head == y.head && x.cur == y.cur && x.end == y.end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_arena a;
	struct dw_arena_mark m;
	struct dw_event ev, untouched;
	struct dw_event *c;
	struct dw_buf b = { 0 };
	char err[512];
	int r;

	dw_arena_init(&a);
	/* something in the arena first, so "nothing stays" is a real check */
	if (dw_arena_strdup(&a, "before") == NULL)
		goto out;
	m = dw_arena_mark(&a);
	memset(&ev, 0xa5, sizeof ev);
	memcpy(&untouched, &ev, sizeof ev);
	r = dw_event_decode(&a, data, size, &ev, err, sizeof err);
	if (r != 0) {
		if (r != -ENOMEM &&
		    (r != -EINVAL || strncmp(err, "event record, offset ", 21) != 0 ||
		     !fz_mark_eq(m, dw_arena_mark(&a)) || memcmp(&ev, &untouched, sizeof ev) != 0))
			abort();
		goto out;
	}
	/* one spelling per event (see the top of this file) */
	r = dw_event_encode(&b, &ev);
	if (r == -ENOMEM)
		goto out;
	if (r != 0 || b.n != size || memcmp(b.p, data, size) != 0)
		abort();
	if ((c = dw_event_clone(&ev)) != NULL) {
		b.n = 0;
		r = dw_event_encode(&b, c);
		if (!fz_event_eq(&ev, c, FZ_EQ_LINE) ||
		    (r != 0 && r != -ENOMEM) || (r == 0 && (b.n != size || memcmp(b.p, data, size) != 0)))
			abort();
		free(c);
	}
	fz_format_round_trip_ts(&a, &ev);
out:
	dw_buf_free(&b);
	dw_arena_fini(&a);
	return 0;
}
