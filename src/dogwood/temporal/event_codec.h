/* event_codec.h - the binary encoding of an event, as stored in the history.
 *
 * Self-delimiting, little-endian, versioned (first byte 1, or 2 for an event
 * followed by its annotation, event.h); strings as u32 length + bytes; values
 * tagged (null, bool, int, decimal text, string, entity type+id, array,
 * record).  Decoding is strict: a truncated buffer, an unknown tag, trailing
 * bytes, invalid UTF-8 in a key, a record with a repeated or unsorted key,
 * nesting past DW_CODEC_MAX_DEPTH, or an annotation that is empty,
 * inconsistent or malformed (event_codec.c) are errors — a damaged record is
 * never silently reinterpreted. */
#ifndef DW_EVENT_CODEC_H
#define DW_EVENT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "event.h"

#define DW_CODEC_MAX_DEPTH 128

struct dw_buf;

/* Append the encoding of ev to b.  0, -ENOMEM, or -EINVAL when ev holds
 * something decoding would refuse (a context, logged record or entity attrs
 * that is not a record, a zeroed one counting as empty; a record whose keys
 * are not strictly increasing or not UTF-8; an unknown value kind; nesting
 * past DW_CODEC_MAX_DEPTH, counted as the trace parser does: a field of the
 * event's records is at depth 0).  On error b is unchanged. */
int dw_event_encode(struct dw_buf *b, const struct dw_event *ev);
/* Give the event encoded at b->p[start, b->n) without an annotation (version
 * 1: dw_event_encode of an event whose annot is NULL) the annotation an,
 * making it version 2: the monitor encodes the event before deciding it and
 * adds the decision after.  0, -ENOMEM, or -EINVAL (no version-1 event at
 * start; an annotation decoding would refuse); on error b is unchanged. */
int dw_event_encode_annot(struct dw_buf *b, size_t start, const struct dw_event_annot *an);
/* Decode p[0, n) into *ev; strings and values are allocated in a (nothing
 * points into p afterwards), the annotation too (ev->annot, NULL for a
 * version-1 record).  0, -EINVAL (err: why), -ENOMEM; on error nothing stays
 * in a and *ev is untouched.  Decimals are re-canonicalised from their text. */
int dw_event_decode(struct dw_arena *a, const void *p, size_t n, struct dw_event *ev,
		    char *err, size_t errlen);

/* One value in the same encoding (snapshots of the incremental state): append
 * to b (0, -ENOMEM, -EINVAL), or decode at p[*off, n) advancing *off. */
int dw_tval_encode(struct dw_buf *b, const struct dw_tval *v);
int dw_tval_decode(struct dw_arena *a, const void *p, size_t n, size_t *off, struct dw_tval *out,
		   char *err, size_t errlen);

/* The same event as one malloc'd block (the struct first, everything it
 * points to after it, the annotation included): free() releases it.  NULL on
 * ENOMEM.  Strings keep a NUL after their bytes; principal/resource strings
 * are copied only when has_principal/has_resource; a zeroed record becomes an
 * empty one. */
struct dw_event *dw_event_clone(const struct dw_event *ev);

#endif
