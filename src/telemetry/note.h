/* note.h - a decision's record ids, as the history keeps them (docs/records.md
 * "Rebuilt from the history").
 *
 * An enforcement point hands the engine a note with each request
 * (dw_request_set_note); dw_decide stores it with the event and the decision,
 * so a record the records file lacks (a supervisor killed before its writer
 * ran) can be rebuilt from the history with the ids it had:
 *
 *   cairn1 run=<32 hex> trace=<32 hex> span=<16 hex> [parent=<16 hex>/<2 hex>]
 *          [rid=<request id>] [deny-only]
 *
 * deny-only: the point records only a denial (net:connect before DNS). */
#ifndef CAIRN_TM_NOTE_H
#define CAIRN_TM_NOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "record.h"

#define TM_NOTE_MAX 512

struct tm_note {
	char run[33];
	struct tm_trace trace;
	char rid[TM_REQUEST_ID_MAX + 1];        /* "" when none */
	bool deny_only;
};

/* The note of n into buf (TM_NOTE_MAX bytes); its length. */
size_t tm_note_format(const struct tm_note *n, char buf[TM_NOTE_MAX]);

/* Parse a note; 0, or -EINVAL when it is not one of ours (another point's,
 * or damaged: then nothing is rebuilt from it). */
int tm_note_parse(const char *text, struct tm_note *out);

#endif
