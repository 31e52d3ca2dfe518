/* fuzz_trace.c - libFuzzer target: the Dogwood trace parser (dw_trace_parse),
 * its inverse (dw_trace_format) and the event codec on what it parses.
 *
 * The whole input is one trace.  On failure the parser must return -EINVAL
 * with a `line N: …` message (or -ENOMEM) and leave nothing in the arena
 * (trace.h: "Nothing is returned on error").  Every event it returns goes
 * through three round trips, each of which must give back an equal event
 * (byte-equal strings, dw_tval_eq on records, equal flags and scalars):
 *
 *   1. dw_trace_format, then dw_trace_parse_line.  Formatting may refuse
 *      (-EINVAL) only for the reasons trace.h lists, which fz_formattable
 *      restates; it must refuse then, and leave the buffer unchanged.  The
 *      re-parsed event must also format to the very same line.
 *   2. dw_event_encode, then dw_event_decode.  event_codec.h: whatever a
 *      trace line holds encodes, so encoding must succeed; the decoded event
 *      must re-encode to the same bytes.
 *   3. dw_event_clone, compared field by field, then freed.
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

/* 2: encode (must succeed), decode, compare, re-encode to the same bytes. */
static void fz_codec_round_trip(struct dw_arena *a, const struct dw_event *ev)
{
	struct dw_buf b = { 0 }, b2 = { 0 };
	struct dw_arena_mark m = dw_arena_mark(a);
	struct dw_event de;
	char err[256];
	int r;

	r = dw_event_encode(&b, ev);
	if (r == -ENOMEM)
		goto out;
	if (r != 0)
		abort();
	r = dw_event_decode(a, b.p, b.n, &de, err, sizeof err);
	if (r == -ENOMEM)
		goto out;
	if (r != 0 || !fz_event_eq(ev, &de, FZ_EQ_LINE))
		abort();
	r = dw_event_encode(&b2, &de);
	if (r == -ENOMEM)
		goto out;
	if (r != 0 || b2.n != b.n || memcmp(b2.p, b.p, b.n) != 0)
		abort();
out:
	dw_arena_reset(a, m);
	dw_buf_free(&b2);
	dw_buf_free(&b);
}

/* 3: a single-block copy equals the event. */
static void fz_clone(const struct dw_event *ev)
{
	struct dw_event *c = dw_event_clone(ev);

	if (c == NULL)
		return;
	if (!fz_event_eq(ev, c, FZ_EQ_LINE))
		abort();
	free(c);
}

static bool fz_mark_eq(struct dw_arena_mark x, struct dw_arena_mark y)
{
	return x.head == y.head && x.cur == y.cur && x.end == y.end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_arena a;
	struct dw_arena_mark m;
	struct dw_event *evs = NULL;
	size_t n = 0;
	char err[512];
	int r;

	dw_arena_init(&a);
	/* something in the arena first, so "nothing stays" is a real check */
	if (dw_arena_strdup(&a, "before") == NULL)
		goto out;
	m = dw_arena_mark(&a);
	r = dw_trace_parse(&a, (const char *)data, size, &evs, &n, err, sizeof err);
	if (r != 0) {
		if (r != -ENOMEM &&
		    (r != -EINVAL || strncmp(err, "line ", 5) != 0 || !fz_mark_eq(m, dw_arena_mark(&a))))
			abort();
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dw_event *ev = &evs[i];

		/* seconds (with up to nine digits after a point) in the file,
		 * nanoseconds in the event: the format round trip checks the value */
		if (ev->line == 0 || (i > 0 && ev->line <= evs[i - 1].line))
			abort();
		fz_format_round_trip(&a, ev);
		fz_codec_round_trip(&a, ev);
		fz_clone(ev);
	}
out:
	dw_arena_fini(&a);
	return 0;
}
