/* log.h - the durable history of a box: an append-only, hash-chained log.
 *
 * One file, `<dir>/history.log`, of records in our own format; beside it an
 * optional snapshot file written atomically (`<dir>/snapshot`).  The log does
 * not know what an event is: a record is a type byte and an opaque payload.
 *
 * File layout (all integers little-endian):
 *
 *   header (64 bytes): magic "CAIRNHL1", u32 version (1), u32 header size (64),
 *     u64 base sequence number (seq of the first record in this file),
 *     32-byte chain seed (SHA-256 carried over from compacted records; zeros
 *     for a new log), u32 CRC32C of the preceding 56 bytes, 4 zero bytes.
 *   records, each:
 *     u32 payload length, u8 type, 3 zero bytes, u32 CRC32C,
 *     32-byte prev: the SHA-256 of the previous record's full bytes (header
 *       of the record + payload), or the chain seed for the first record,
 *     payload (length bytes), zero padding to a multiple of 8.
 *   The CRC32C covers the record from its type byte through the payload
 *   (length excluded: a torn length is caught by the CRC too, since a wrong
 *   length moves the covered bytes), skipping the CRC field itself: bytes
 *   [4, 8) and [12, 44 + length).  Padding is outside the CRC and the hash,
 *   so it must be zero.
 *   Sequence numbers start at 0; record i of a file has seq base + i.
 *
 * Durability: hist_append writes the record with write(2) before returning,
 * so a killed process loses nothing already appended; hist_sync makes every
 * record appended so far durable with one fdatasync shared by concurrent
 * callers (group commit).
 *
 * Recovery (hist_open): a torn tail (a last record cut short, or whose CRC
 * fails and which runs to end of file) is truncated away; any other damage —
 * a bad header, a CRC or chain mismatch with valid records after it, a type
 * or length that cannot be — refuses to open, naming the byte offset and the
 * reason, and changes nothing on disk.
 *   Precisely: let o be the first record that is not intact.  If fewer than
 *   44 bytes remain at o, they are a torn tail.  If o's header is impossible,
 *   or its length runs past end of file, or its CRC fails and it ends exactly
 *   at end of file, it is a torn tail only when no intact record (plausible
 *   header, inside the file, good CRC and padding) starts at any 8-aligned
 *   offset after o: a corrupted length in the middle of the log looks like a
 *   cut-short last record, and the records behind it tell the two apart.
 *   Everything else (a CRC failure with bytes after the record, bad padding,
 *   a chain mismatch, a header or a base seq that cannot be) is damage.  The
 *   price of failing closed: a torn record whose payload itself embeds an
 *   intact record at an 8-aligned file offset is refused, not truncated.
 *   After a power loss (not a process kill), records written but never
 *   synced can reach the disk out of order; what that leaves is damage too.
 *
 * Retention (hist_compact): records before a sequence number are dropped by
 * writing a new file (header carries base seq and chain seed = the hash of the
 * last dropped record, so the chain stays verifiable across compactions),
 * fsyncing it, and renaming it over the old one.
 *
 * Snapshot file layout (little-endian): magic "CAIRNSN1", u32 version (1),
 * u32 header size (72), u64 upto, 32-byte chain hash at upto (the prev a
 * record upto carries: the hash of record upto - 1, or the chain seed),
 * u64 blob length, u32 CRC32C of the preceding 64 bytes and the blob, 4 zero
 * bytes; then the blob.
 *
 * Files are created 0600 and every descriptor is O_CLOEXEC.  An open log
 * holds flock(LOCK_EX) on its directory (one writer per directory: a second
 * hist_open of it fails with -EBUSY); the temporary names history.log.tmp
 * and snapshot.tmp belong to that holder.
 *
 * Thread safety: hist_append, hist_compact and reads must be serialised by
 * the caller (the monitor's lock); hist_sync may be called from any thread
 * concurrently with them. */
#ifndef CAIRN_HIST_LOG_H
#define CAIRN_HIST_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Record types.  0 is never valid. */
enum hist_type {
	HIST_EVENT = 1,        /* one event (payload: the engine's event encoding) */
	HIST_POLICY = 2,       /* a policy change (payload: the engine's encoding) */
	HIST_MAX_TYPE = 15,    /* types above this are damage */
};

#define HIST_MAX_PAYLOAD (16u << 20)   /* 16 MiB: a longer length is damage */
#define HIST_MAX_SNAPSHOT (1u << 30)   /* 1 GiB: a longer snapshot is refused */
#define HIST_NO_SEQ UINT64_MAX         /* hist_error.seq when no record is meant */

struct hist_log;

/* Why an open failed: a message naming the file, the byte offset and the
 * reason ("/box/history.log: offset 4096: record 17: CRC mismatch; an intact
 * record follows at offset 4160"). */
struct hist_error {
	int code;              /* negative errno */
	uint64_t offset;       /* byte offset of the damage, or 0 */
	uint64_t seq;          /* seq of the bad record, or HIST_NO_SEQ */
	char msg[512];
};

struct hist_open_info {
	uint64_t base_seq;     /* seq of the first record kept */
	uint64_t next_seq;     /* seq the next append gets */
	uint64_t truncated;    /* bytes of torn tail removed (0 if none) */
};

/* Open (creating dir/history.log 0600 when absent; dir must exist) and
 * recover.  0 and *out, or a negative errno with *err filled: -EBADMSG for
 * damage (nothing on disk changed), -EBUSY when another open log holds the
 * directory.  info and err may be NULL.  The records read are not assumed
 * durable: the first hist_sync fdatasyncs. */
int hist_open(const char *dir, struct hist_log **out, struct hist_open_info *info,
	      struct hist_error *err);
void hist_close(struct hist_log *l);

/* Append one record; write(2) completes before return.  0 and *seq (seq may
 * be NULL); -EINVAL for type 0 or above HIST_MAX_TYPE, or len above
 * HIST_MAX_PAYLOAD, with nothing written; or -EIO/-ENOSPC/... from the write
 * (then the log refuses every later append: a failed write may have left a
 * partial record, which only recovery may judge). */
int hist_append(struct hist_log *l, uint8_t type, const void *payload, size_t len,
		uint64_t *seq);
/* Make every record with seq < upto durable (upto = UINT64_MAX: everything
 * appended so far; upto beyond that is -EINVAL).  Concurrent callers share
 * one fdatasync (leader and followers), and appends never wait for it: they
 * take no lock of ours, only publish how far they wrote.  A failed
 * fdatasync is sticky: the kernel may have dropped the dirty pages, so this
 * and every later call that needs a new fdatasync returns its error until
 * the log is reopened. */
int hist_sync(struct hist_log *l, uint64_t upto);

/* Iterate records with seq >= from in order.  fn returns 0 to go on, non-zero
 * to stop (returned).  The payload pointer is valid during the call only.
 * Records are re-checked as read (CRC, chain): -EBADMSG if one went bad since
 * the open; -ENOENT when from < hist_base_seq (those records were compacted
 * away).  fn may append; records appended during the walk are not visited. */
typedef int (*hist_fn)(void *arg, uint64_t seq, uint8_t type, const void *payload,
		       size_t len);
int hist_iterate(struct hist_log *l, uint64_t from, hist_fn fn, void *arg);

/* Drop every record with seq < keep_from (atomic rewrite as above; the
 * records kept are re-checked first).  keep_from <= base is a no-op, above
 * hist_next_seq -EINVAL.  0 or a negative errno (the old file is untouched on
 * failure; should the directory fsync after the rename fail, the log goes on
 * with the new file but hist_sync reports the error from then on). */
int hist_compact(struct hist_log *l, uint64_t keep_from);

/* The same in three phases, so that the long part does not hold up appends:
 * start and finish must be serialised with appends like hist_compact (start
 * is quick; finish copies only what was appended since start); copy may run
 * on another thread concurrently with hist_append and hist_sync, but with no
 * other call on the log that reads or replaces its file (iterate, snapshot,
 * another compaction).  start sets *c = NULL when there is nothing to drop.
 * A failure at any phase leaves the old file as the log; abort drops a
 * compaction that will not be finished. */
struct hist_compaction;
int hist_compact_start(struct hist_log *l, uint64_t keep_from, struct hist_compaction **c);
int hist_compact_copy(struct hist_compaction *c);
int hist_compact_finish(struct hist_compaction *c);      /* frees c */
void hist_compact_abort(struct hist_compaction *c);

uint64_t hist_next_seq(const struct hist_log *l);
uint64_t hist_base_seq(const struct hist_log *l);

/* Snapshots: an opaque blob covering records with seq < upto, written to
 * dir/snapshot.tmp, fsynced, renamed to dir/snapshot (CRC-checked, records
 * upto and the chain hash at upto).  Writing first makes records < upto
 * durable (hist_sync), so a snapshot is never ahead of the log on disk;
 * upto outside [hist_base_seq, hist_next_seq] or len above HIST_MAX_SNAPSHOT
 * is -EINVAL.  Loading returns -ENOENT when there is none and -EINVAL (err)
 * when it is damaged or does not match the log: upto beyond hist_next_seq,
 * upto below hist_base_seq (the records from upto on are gone), or a chain
 * hash that differs from the log's.  On 0, *blob is malloc'd (never NULL,
 * even for len 0) and the caller frees it. */
int hist_snapshot_write(struct hist_log *l, uint64_t upto, const void *blob, size_t len);
/* The same in two steps, so the writing need not hold up appends: point
 * (serialised with appends; quick when upto is next_seq) notes the position
 * and the chain value there; write_at may then run on any thread beside
 * appends and syncs, but not beside another snapshot write or a compaction
 * finish. */
struct hist_snap_point {
	uint64_t upto;
	uint8_t chain[32];
};
int hist_snapshot_point(struct hist_log *l, uint64_t upto, struct hist_snap_point *p);
int hist_snapshot_write_at(struct hist_log *l, const struct hist_snap_point *p, const void *blob,
			   size_t len);
int hist_snapshot_load(struct hist_log *l, void **blob, size_t *len, uint64_t *upto,
		       struct hist_error *err);

/* Check a log without opening it for writing: every CRC, the whole chain, the
 * header.  0 with *n_records, or a negative errno with err naming the first
 * bad record (its seq and byte offset): -EBADMSG for damage, -EUCLEAN for a
 * torn tail (which hist_open would truncate; it is reported, not fixed).  On
 * either, *n_records counts the intact records before it.  Takes no lock: on
 * a log being appended to, a record half-written is reported as torn. */
int hist_verify(const char *dir, uint64_t *n_records, struct hist_error *err);

/* Read-only iteration over the intact records of dir's log, for inspection:
 * no lock is taken and nothing is changed, so it works beside a running box.
 * Each record is CRC- and chain-checked before fn sees it.  0 at the end of
 * the log, fn's non-zero value if it stopped, -EUCLEAN after a torn tail (the
 * records before it were all delivered), -EBADMSG on damage (err says where). */
int hist_read(const char *dir, hist_fn fn, void *arg, struct hist_error *err);

/* CRC32C (Castagnoli), as used by the format; exposed for tests.  Start
 * with crc = 0; hist_crc32c(hist_crc32c(0, a), b) is the CRC of a then b.
 * Uses the SSE4.2 instruction when hist_crc32c_hw() says the CPU has it;
 * hist_crc32c_sw is the table code, which must give the same results. */
uint32_t hist_crc32c(uint32_t crc, const void *p, size_t n);
uint32_t hist_crc32c_sw(uint32_t crc, const void *p, size_t n);
bool hist_crc32c_hw(void);

#endif
