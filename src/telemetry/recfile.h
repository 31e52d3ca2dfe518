/* recfile.h - one records file: lines appended in order, counted, synced
 * (docs/records.md "Where records go").
 *
 * A file another process may append to as well (a declared
 * [telemetry.<label>] destination) is written as Box writes it: write(2)
 * on its O_APPEND descriptor, each batch's lines at once.
 *
 * The default target is the box's own: inside private/, of a box locked for
 * the run, so no one else writes it.  Its lines are staged and written with
 * O_DIRECT in aligned pieces of up to 2 MiB, at explicit offsets.  At a gateway's
 * pace a buffered write cost several times the CPU per byte of a 1 MiB
 * direct one (page-cache pages taken, dirtied, written back and let go),
 * on the two cores the gateway needs (docs/records.md "What records
 * cost").  The bytes of the last block past the alignment are written
 * buffered, so after every flush the file ends where its last line does, as
 * a buffered target's does, and a reader sees the same bytes either way.
 * Small flushes (under TM_RECFILE_DIRECT_MIN) are written buffered.
 * Staged lines are flushed once the stage holds TM_RECFILE_PIECE bytes,
 * when the caller says (tm_recfile_due: at most TM_RECFILE_LAG_NS after
 * the first staged line), before every sync, before lines that would not
 * fit, and after a put longer than the stage (the only one written in
 * pieces that end inside a line).
 *
 * Counting: a put's items are written once they are in the file, lost if
 * a write fails first (all the items staged at a failure are counted lost,
 * though some of their lines may have reached the file); the first failure
 * is kept and every later put is lost at once. */
#ifndef CAIRN_TM_RECFILE_H
#define CAIRN_TM_RECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TM_RECFILE_PIECE ((size_t)1 << 20)      /* staged this much, it is written */
#define TM_RECFILE_LAG_NS 100000000LL           /* a staged line waits at most 0.1 s */
/* A flush of less is written buffered: in a paced test here a 75 KB direct
 * write cost as much CPU per byte as a buffered one, 300 KB half, 1 MiB a
 * fifth, and a direct write waits for the device (an idle box's few lines,
 * the last ones at exit) (docs/records.md "Where records go"). */
#define TM_RECFILE_DIRECT_MIN ((size_t)256 << 10)

/* What a put carries, counted apart. */
enum tm_recfile_kind { TM_RF_RECORDS, TM_RF_PAYLOADS };

struct tm_recfile {
	int fd;
	bool staged_mode;               /* tm_recfile_direct succeeded */
	bool dio;                       /* O_DIRECT still usable (else buffered pwrite) */
	size_t align;                   /* direct I/O offset and length alignment */
	uint8_t *stage;                 /* aligned: the file's bytes from base */
	size_t staged, cap;
	size_t in_file;                 /* stage[0..in_file) is in the file already */
	off_t base;                     /* the file offset of stage[0]: a multiple of align */
	int64_t since;                  /* CLOCK_MONOTONIC ns of the first unflushed line */
	off_t dropped;                  /* buffered: cached pages before this let go */
	int error;                      /* the first write or sync error (errno), sticky */
	bool dirty;                     /* written since the last sync */
	uint64_t written[2], lost[2], held[2];  /* by kind; held: staged, not yet in the file */
};

/* A buffered target on fd (open, O_APPEND). */
void tm_recfile_init(struct tm_recfile *f, int fd);

/* Make f staged and direct: fd must be the only writer's and readable (the
 * block the file ends in is read back into the stage); its O_APPEND is
 * cleared.  0, or -errno with f left buffered on its O_APPEND descriptor:
 * the file system reports no direct I/O (tmpfs, NFS, FUSE, a kernel before
 * 6.1), or memory ran out.  Not for a target anyone else appends to. */
int tm_recfile_direct(struct tm_recfile *f);

/* Append n bytes of whole lines holding `count` items of kind.  0, or the
 * errno of the first failure (f->error). */
int tm_recfile_put(struct tm_recfile *f, const void *p, size_t n, enum tm_recfile_kind kind,
		   uint64_t count);

/* count items of kind lost before they reached f (no memory to encode
 * them): counted, and f carries on. */
void tm_recfile_lose(struct tm_recfile *f, enum tm_recfile_kind kind, uint64_t count);

/* When the staged lines are due (CLOCK_MONOTONIC ns), or INT64_MAX. */
int64_t tm_recfile_due(const struct tm_recfile *f);

/* Write whatever is staged.  0 or errno. */
int tm_recfile_flush(struct tm_recfile *f);

/* Flush, fdatasync if written since the last sync, and let the page cache
 * go of what is synced.  0 or errno. */
int tm_recfile_sync(struct tm_recfile *f);

/* write(2) all n bytes to fd, through EINTR and short writes: 0 or errno. */
int tm_write_all(int fd, const void *p, size_t n);

/* Close the descriptor and free the stage (nothing is flushed). */
void tm_recfile_close(struct tm_recfile *f);

#endif
