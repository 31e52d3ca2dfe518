/* log.c - the history log (see log.h for the format and the contract).
 *
 * Divisions, in order:
 *   1. encoding, errors, small I/O helpers
 *   2. reading: a buffered window on the file, one record, and the scan that
 *      judges a file record by record (intact, torn tail, or damage)
 *   3. open, recovery, close
 *   4. append and group commit
 *   5. iterate, and positioning a scan at a seq
 *   6. replacing files: compaction and snapshots
 *   7. verify
 *
 * Every record is written with one pwritev at the end offset we keep (we are
 * the only writer: the directory is flocked), and the hash of the last record
 * stays in memory so an append never reads.  A sparse index (the offset of
 * every IDX_STRIDE-th record) lets iterate, compact and snapshots start near
 * a seq instead of at the top of the file. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define LOG_NAME "history.log"
#define LOG_TMP "history.log.tmp"
#define SNAP_NAME "snapshot"
#define SNAP_TMP "snapshot.tmp"

#define FMT_VERSION 1
#define HDR_SIZE 64             /* file header */
#define HDR_MAGIC "CAIRNHL1"
#define SNAP_HDR 72             /* snapshot header */
#define SNAP_MAGIC "CAIRNSN1"
#define HASH_LEN 32
#define REC_HDR 44              /* u32 len, u8 type, 3 zero, u32 crc, prev */
#define REC_MIN 48              /* an empty record, padded */
#define IDX_STRIDE 256
#define RD_CHUNK (256u << 10)
/* Deciding whether a bad record is a torn tail means looking for intact
 * records after it; crafted payloads could make that quadratic, so it gives
 * up (and refuses the file) past this many bytes checksummed, or eight times
 * the bytes in question if more. */
#define PROBE_BUDGET (64u << 20)

static inline uint64_t rec_size(uint32_t len)
{
	return ((uint64_t)REC_HDR + len + 7) & ~(uint64_t)7;
}

struct idx {                    /* offsets of records base, base + STRIDE, ... */
	uint64_t *v;
	size_t n, cap;
};

struct hist_log {
	int fd;                 /* history.log, read-write */
	int dirfd;              /* the directory: holds our flock, anchors renames */
	char *dir;              /* for messages */
	uint64_t base_seq, next_seq;
	uint64_t end;           /* file offset after the last record */
	uint8_t seed[HASH_LEN];
	uint8_t last[HASH_LEN]; /* hash of the last record; the seed when none */
	struct idx idx;
	int broken;             /* sticky: a write failed */

	/* Group commit.  mu guards the fields below and l->fd as hist_sync reads
	 * it; appends never take mu, they only publish written after their
	 * write(2) returns, so an fdatasync in flight never holds them up. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool syncing;           /* a leader is in fdatasync */
	uint64_t synced;        /* every seq below this is durable */
	int sync_err;           /* sticky: an fdatasync failed */
	_Atomic uint64_t written;       /* every seq below this is written */
};

/* --- 1. encoding, errors, small I/O helpers ------------------------------- */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static void err_clear(struct hist_error *err)
{
	if (err != NULL) {
		err->code = 0;
		err->offset = 0;
		err->seq = HIST_NO_SEQ;
		err->msg[0] = '\0';
	}
}

__attribute__((format(printf, 5, 6)))
static int fail(struct hist_error *err, int code, uint64_t off, uint64_t seq, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		err->code = code;
		err->offset = off;
		err->seq = seq;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* "dir/history.log: offset N: record S: why" */
static int fail_at(struct hist_error *err, int code, const char *dir, uint64_t off, uint64_t seq,
		   const char *why)
{
	if (seq == HIST_NO_SEQ)
		return fail(err, code, off, seq, "%s/" LOG_NAME ": offset %llu: %s", dir,
			    (unsigned long long)off, why);
	return fail(err, code, off, seq, "%s/" LOG_NAME ": offset %llu: record %llu: %s", dir,
		    (unsigned long long)off, (unsigned long long)seq, why);
}

/* "dir/name: what: strerror" for a failed system call. */
static int fail_sys(struct hist_error *err, int code, const char *dir, const char *name,
		    const char *what)
{
	return fail(err, code, 0, HIST_NO_SEQ, "%s/%s: %s: %s", dir, name, what, strerror(-code));
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;

	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;    /* shorter than fstat said: not ours to judge */
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Write all of iov at off, resuming after short writes.  iov is consumed. */
static int pwritev_full(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	for (;;) {
		ssize_t w;

		while (cnt > 0 && iov->iov_len == 0)
			iov++, cnt--;
		if (cnt == 0)
			return 0;
		w = pwritev(fd, iov, cnt, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		for (; cnt > 0 && (size_t)w >= iov->iov_len; iov++, cnt--)
			w -= (ssize_t)iov->iov_len;
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

static int pwrite_full(int fd, const void *p, size_t n, uint64_t off)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };

	return pwritev_full(fd, &iov, 1, off);
}

static int sync_data(int fd)
{
	while (fdatasync(fd) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int sync_all(int fd)
{
	while (fsync(fd) != 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* SHA-256 of a record's bytes: its 44-byte header, then the payload.
 * Nettle's, not OpenSSL's: the context lives on the stack and needs no set-up,
 * so hashing cannot fail, every caller (the compaction's copy thread too) has
 * its own, and a supervisor that opens a history loads no libcrypto
 * (docs/security.md "Order of a run").  Nettle picks its SHA-NI code at run
 * time where the CPU has it. */
static void rec_hash(const uint8_t *hdr, const void *payload, size_t len, uint8_t out[HASH_LEN])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, REC_HDR, hdr);
	if (len > 0)            /* an empty record's payload may be NULL */
		sha256_update(&c, len, payload);
	sha256_digest(&c, HASH_LEN, out);
}

static void hdr_encode(uint8_t b[HDR_SIZE], uint64_t base, const uint8_t seed[HASH_LEN])
{
	memset(b, 0, HDR_SIZE);
	memcpy(b, HDR_MAGIC, 8);
	put_le32(b + 8, FMT_VERSION);
	put_le32(b + 12, HDR_SIZE);
	put_le64(b + 16, base);
	memcpy(b + 24, seed, HASH_LEN);
	put_le32(b + 56, hist_crc32c(0, b, 56));
}

/* NULL and *base, seed; or why the header cannot be. */
static const char *hdr_decode(const uint8_t b[HDR_SIZE], uint64_t *base, uint8_t seed[HASH_LEN])
{
	if (memcmp(b, HDR_MAGIC, 8) != 0)
		return "bad magic: not a cairn history log";
	/* The CRC before the fields: a flipped version is damage, not news. */
	if (get_le32(b + 56) != hist_crc32c(0, b, 56))
		return "header CRC mismatch";
	if (get_le32(b + 8) != FMT_VERSION)
		return "unsupported format version";
	if (get_le32(b + 12) != HDR_SIZE)
		return "bad header size";
	if (!all_zero(b + 60, 4))
		return "nonzero reserved header bytes";
	*base = get_le64(b + 16);
	memcpy(seed, b + 24, HASH_LEN);
	/* A new log starts at 0 with a zero seed; compaction moves both, and a
	 * SHA-256 of zeros is not a thing we will meet. */
	if (*base == 0 && !all_zero(seed, HASH_LEN))
		return "base seq 0 with a nonzero chain seed";
	if (*base != 0 && all_zero(seed, HASH_LEN))
		return "nonzero base seq with an all-zero chain seed";
	return NULL;
}

/* --- 2. reading -------------------------------------------------------------- */

/* A window of the file read with pread, so a scan of small records makes one
 * system call per RD_CHUNK rather than two per record. */
struct rd {
	int fd;
	uint64_t size;          /* where the file ends, as far as we read it */
	uint8_t *buf;
	size_t cap;
	uint64_t at;            /* buf holds [at, at + len) */
	size_t len;
};

static void rd_free(struct rd *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = r->len = 0;
}

/* Point *p at bytes [off, off + n) of the file; the caller has checked that
 * they lie inside r->size.  Valid until the next rd_get. */
static int rd_get(struct rd *r, uint64_t off, size_t n, const uint8_t **p)
{
	size_t want;
	int rc;

	if (off >= r->at && off - r->at + n <= r->len) {
		*p = r->buf + (off - r->at);
		return 0;
	}
	want = n > RD_CHUNK ? n : RD_CHUNK;
	if (want > r->size - off)
		want = (size_t)(r->size - off);
	if (want > r->cap) {
		size_t cap = n > RD_CHUNK ? n : RD_CHUNK;
		uint8_t *b = malloc(cap);

		if (b == NULL)
			return -ENOMEM;
		free(r->buf);
		r->buf = b;
		r->cap = cap;
	}
	r->len = 0;
	if ((rc = pread_full(r->fd, r->buf, want, off)) < 0)
		return rc;
	r->at = off;
	r->len = want;
	*p = r->buf;
	return 0;
}

enum rec_state {
	REC_OK,
	REC_SHORT_HDR,          /* fewer than REC_HDR bytes left */
	REC_BAD_HDR,            /* a type, reserved bytes or length that cannot be */
	REC_SHORT,              /* its length runs past the end of the file */
	REC_BAD_CRC,
	REC_BAD_PAD,            /* CRC good, padding not zero */
};

struct rec {
	uint64_t off, size;     /* size: with padding */
	uint32_t len;
	uint8_t type;
	const uint8_t *p;       /* all size bytes, when the state is OK or BAD_PAD */
};

/* Read the record at off and judge it alone (not its place in the chain).
 * why, when not NULL, gets a sentence for any state but REC_OK. */
static int rec_read(struct rd *r, uint64_t off, struct rec *rec, enum rec_state *st, char *why,
		    size_t why_len)
{
	uint64_t rem = r->size - off;
	const uint8_t *h;
	uint32_t crc;
	int rc;

	memset(rec, 0, sizeof *rec);
	rec->off = off;
	if (rem < REC_HDR) {
		if (why != NULL)
			snprintf(why, why_len, "%llu bytes, less than a record header",
				 (unsigned long long)rem);
		*st = REC_SHORT_HDR;
		return 0;
	}
	if ((rc = rd_get(r, off, REC_HDR, &h)) < 0)
		return rc;
	rec->len = get_le32(h);
	rec->type = h[4];
	*st = REC_BAD_HDR;
	if (rec->type == 0 || rec->type > HIST_MAX_TYPE) {
		if (why != NULL)
			snprintf(why, why_len, "impossible type %u", rec->type);
		return 0;
	}
	if (h[5] != 0 || h[6] != 0 || h[7] != 0) {
		if (why != NULL)
			snprintf(why, why_len, "nonzero reserved bytes in the record header");
		return 0;
	}
	if (rec->len > HIST_MAX_PAYLOAD) {
		if (why != NULL)
			snprintf(why, why_len, "impossible length %u", rec->len);
		return 0;
	}
	rec->size = rec_size(rec->len);
	if (rec->size > rem) {
		if (why != NULL)
			snprintf(why, why_len, "length %u runs past the end of the file", rec->len);
		*st = REC_SHORT;
		return 0;
	}
	if ((rc = rd_get(r, off, (size_t)rec->size, &rec->p)) < 0)
		return rc;
	crc = hist_crc32c(0, rec->p + 4, 4);
	crc = hist_crc32c(crc, rec->p + 12, HASH_LEN + rec->len);
	if (crc != get_le32(rec->p + 8)) {
		if (why != NULL)
			snprintf(why, why_len, "CRC mismatch");
		*st = REC_BAD_CRC;
		return 0;
	}
	if (!all_zero(rec->p + REC_HDR + rec->len, rec->size - REC_HDR - rec->len)) {
		if (why != NULL)
			snprintf(why, why_len, "nonzero padding");
		*st = REC_BAD_PAD;
		return 0;
	}
	*st = REC_OK;
	return 0;
}

/* Does an intact record (its CRC good) start at an 8-aligned offset in
 * (off, end of file)?  1 and *at, 0, 2 when it gave up (PROBE_BUDGET), or
 * -errno.  This is what tells a cut-short last record from a middle record
 * whose length was damaged. */
static int probe_after(struct rd *r, uint64_t off, uint64_t *at)
{
	uint64_t budget = r->size - off, spent = 0, p;

	budget = budget <= PROBE_BUDGET / 8 ? PROBE_BUDGET
	       : budget > UINT64_MAX / 8 ? UINT64_MAX : budget * 8;
	for (p = off + 8; p < r->size && r->size - p >= REC_MIN; p += 8) {
		enum rec_state st;
		struct rec rec;
		const uint8_t *h;
		uint32_t len;
		int rc;

		if ((rc = rd_get(r, p, REC_HDR, &h)) < 0)
			return rc;
		len = get_le32(h);
		if (h[4] == 0 || h[4] > HIST_MAX_TYPE || h[5] != 0 || h[6] != 0 || h[7] != 0 ||
		    len > HIST_MAX_PAYLOAD || rec_size(len) > r->size - p)
			continue;
		spent += rec_size(len);
		if (spent > budget)
			return 2;
		if ((rc = rec_read(r, p, &rec, &st, NULL, 0)) < 0)
			return rc;
		if (st == REC_OK || st == REC_BAD_PAD) {
			*at = p;
			return 1;
		}
	}
	return 0;
}

/* A scan walks a file from a record boundary, checking each record and its
 * link to the one before. */
struct scan {
	struct rd rd;
	uint64_t off, seq;      /* the next record */
	uint8_t prev[HASH_LEN]; /* the prev it must carry */
	char why[200];          /* after -EBADMSG or -EUCLEAN: what is wrong at off */
};

/* 1 and *rec: the next record, intact and chained (s moves past it).  0: the
 * end.  -EBADMSG: damage at s->off.  -EUCLEAN: a torn tail from s->off on.
 * Other negatives: I/O or memory. */
static int scan_next(struct scan *s, struct rec *rec)
{
	enum rec_state st;
	uint64_t at = 0;
	size_t n;
	int rc;

	if (s->off == s->rd.size)
		return 0;
	if (s->seq == UINT64_MAX) {
		snprintf(s->why, sizeof s->why, "sequence numbers exhausted");
		return -EBADMSG;
	}
	if ((rc = rec_read(&s->rd, s->off, rec, &st, s->why, sizeof s->why)) < 0)
		return rc;
	switch (st) {
	case REC_OK:
		if (memcmp(rec->p + 12, s->prev, HASH_LEN) != 0) {
			snprintf(s->why, sizeof s->why, "chain mismatch: prev is not %s",
				 rec->off == HDR_SIZE ? "the chain seed of the header"
						      : "the hash of the record before");
			return -EBADMSG;
		}
		rec_hash(rec->p, rec->p + REC_HDR, rec->len, s->prev);
		s->off += rec->size;
		s->seq++;
		return 1;
	case REC_SHORT_HDR:
		return -EUCLEAN;        /* no record fits after it */
	case REC_BAD_PAD:
		return -EBADMSG;        /* a write never leaves this */
	case REC_BAD_CRC:
		if (s->off + rec->size != s->rd.size)
			return -EBADMSG;
		break;
	case REC_BAD_HDR:
	case REC_SHORT:
		break;
	}
	if ((rc = probe_after(&s->rd, s->off, &at)) < 0)
		return rc;
	if (rc == 0)
		return -EUCLEAN;
	n = strlen(s->why);
	if (rc == 1)
		snprintf(s->why + n, sizeof s->why - n, "; an intact record follows at offset %llu",
			 (unsigned long long)at);
	else
		snprintf(s->why + n, sizeof s->why - n,
			 "; too many record-like bytes follow to call it a torn tail");
	return -EBADMSG;
}

static int idx_reserve(struct idx *x)
{
	uint64_t *v;
	size_t cap;

	if (x->n < x->cap)
		return 0;
	cap = x->cap ? x->cap * 2 : 64;
	if (cap > SIZE_MAX / sizeof *v || (v = realloc(x->v, cap * sizeof *v)) == NULL)
		return -ENOMEM;
	x->v = v;
	x->cap = cap;
	return 0;
}

/* Check the header of the log open as fd and every record after it.  On 0,
 * s stands after the last intact record (off, seq, prev), *base and seed come
 * from the header, idx (when not NULL) holds the checkpoints, and *torn says
 * whether a torn tail follows (err then describes it, code -EUCLEAN).  Damage
 * is -EBADMSG with err filled. */
static int log_check(int fd, const char *dir, struct scan *s, uint64_t *base,
		     uint8_t seed[HASH_LEN], struct idx *idx, bool *torn, struct hist_error *err)
{
	uint8_t b[HDR_SIZE];
	struct stat st;
	struct rec rec;
	const char *why;
	int rc;

	*torn = false;
	if (fstat(fd, &st) != 0)
		return fail_sys(err, -errno, dir, LOG_NAME, "fstat");
	if (!S_ISREG(st.st_mode))
		return fail_at(err, -EBADMSG, dir, 0, HIST_NO_SEQ, "not a regular file");
	if (st.st_size < HDR_SIZE) {
		snprintf(s->why, sizeof s->why, "%lld bytes, shorter than the %d-byte header",
			 (long long)st.st_size, HDR_SIZE);
		return fail_at(err, -EBADMSG, dir, 0, HIST_NO_SEQ, s->why);
	}
	if ((rc = pread_full(fd, b, HDR_SIZE, 0)) < 0)
		return fail_sys(err, rc, dir, LOG_NAME, "read");
	if ((why = hdr_decode(b, base, seed)) != NULL)
		return fail_at(err, -EBADMSG, dir, 0, HIST_NO_SEQ, why);

	s->rd.fd = fd;
	s->rd.size = (uint64_t)st.st_size;
	s->off = HDR_SIZE;
	s->seq = *base;
	memcpy(s->prev, seed, HASH_LEN);
	for (;;) {
		if (idx != NULL && (s->seq - *base) % IDX_STRIDE == 0 &&
		    (rc = idx_reserve(idx)) < 0)
			return fail_sys(err, rc, dir, LOG_NAME, "index");
		rc = scan_next(s, &rec);
		if (rc == 1) {
			if (idx != NULL && (s->seq - 1 - *base) % IDX_STRIDE == 0)
				idx->v[idx->n++] = rec.off;
			continue;
		}
		if (rc == 0)
			return 0;
		if (rc == -EUCLEAN) {
			char msg[sizeof s->why + 16];

			snprintf(msg, sizeof msg, "torn tail: %s", s->why);
			fail_at(err, rc, dir, s->off, s->seq, msg);
			*torn = true;
			return 0;
		}
		if (rc == -EBADMSG)
			return fail_at(err, rc, dir, s->off, s->seq, s->why);
		return fail_sys(err, rc, dir, LOG_NAME, "reading records");
	}
}

/* --- 3. open, recovery, close ---------------------------------------------- */

/* A fresh dir/name for a replacement file: created (never reused, so its
 * mode is ours and no hard link shares it), read-write.  An fd or -errno. */
static int tmp_create(int dirfd, const char *name)
{
	int fd;

	if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

/* Make the replacement durable and give it its name.  On failure the
 * temporary is removed and name is as it was.  The caller still has to
 * fsync the directory to make the rename itself durable. */
static int tmp_commit(int dirfd, int fd, const char *tmp, const char *name)
{
	int rc = sync_all(fd);

	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) != 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);        /* litter at worst; the next tmp_create clears it */
	return rc;
}

/* A new, empty history.log; the fd, or -errno. */
static int log_create(int dirfd)
{
	static const uint8_t zero[HASH_LEN];
	uint8_t b[HDR_SIZE];
	int fd, rc;

	if ((fd = tmp_create(dirfd, LOG_TMP)) < 0)
		return fd;
	hdr_encode(b, 0, zero);
	if ((rc = pwrite_full(fd, b, HDR_SIZE, 0)) < 0 ||
	    (rc = tmp_commit(dirfd, fd, LOG_TMP, LOG_NAME)) < 0 || (rc = sync_all(dirfd)) < 0) {
		close(fd);
		unlinkat(dirfd, LOG_TMP, 0);
		return rc;
	}
	return fd;
}

void hist_close(struct hist_log *l)
{
	if (l == NULL)
		return;
	/* Nothing to do about a failing close(): durability was hist_sync's
	 * business, and retrying close after EINTR could close someone else's fd. */
	if (l->fd >= 0)
		close(l->fd);
	if (l->dirfd >= 0)
		close(l->dirfd);        /* drops the flock */
	free(l->idx.v);
	free(l->dir);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static struct hist_log *log_new(const char *dir)
{
	struct hist_log *l = calloc(1, sizeof *l);

	if (l == NULL)
		return NULL;
	if (pthread_mutex_init(&l->mu, NULL) != 0) {
		free(l);
		return NULL;
	}
	if (pthread_cond_init(&l->cv, NULL) != 0) {
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	l->fd = l->dirfd = -1;
	if ((l->dir = strdup(dir)) == NULL) {
		hist_close(l);
		return NULL;
	}
	return l;
}

int hist_open(const char *dir, struct hist_log **out, struct hist_open_info *info,
	      struct hist_error *err)
{
	struct scan s = { 0 };
	struct hist_log *l;
	bool torn = false;
	int rc;

	err_clear(err);
	if ((l = log_new(dir)) == NULL)
		return fail(err, -ENOMEM, 0, HIST_NO_SEQ, "%s: out of memory", dir);
	if ((l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = fail(err, -errno, 0, HIST_NO_SEQ, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (flock(l->dirfd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		rc = fail(err, rc, 0, HIST_NO_SEQ, "%s: flock: %s%s", dir, strerror(errno),
			  rc == -EBUSY ? " (the log is open elsewhere)" : "");
		goto out;
	}
	l->fd = openat(l->dirfd, LOG_NAME, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (l->fd < 0 && errno == ENOENT)
		l->fd = log_create(l->dirfd);
	else if (l->fd < 0)
		l->fd = -errno;
	if (l->fd < 0) {
		rc = fail(err, l->fd, 0, HIST_NO_SEQ, "%s/" LOG_NAME ": %s", dir, strerror(-l->fd));
		goto out;
	}

	rc = log_check(l->fd, dir, &s, &l->base_seq, l->seed, &l->idx, &torn, err);
	if (rc < 0)
		goto out;
	if (torn) {
		/* Durable before anything is appended after it, so a crash cannot
		 * bring the torn bytes back between new records. */
		if (ftruncate(l->fd, (off_t)s.off) != 0 || (rc = sync_data(l->fd)) < 0) {
			rc = rc < 0 ? rc : -errno;
			rc = fail_sys(err, rc, dir, LOG_NAME, "truncating the torn tail");
			goto out;
		}
		err_clear(err);
	}
	l->next_seq = s.seq;
	l->end = s.off;
	memcpy(l->last, s.prev, HASH_LEN);
	l->synced = l->base_seq;        /* what we read may sit in the page cache only */
	atomic_store(&l->written, l->next_seq);
	/* Temporaries of a crashed compaction or snapshot; ours under the flock. */
	unlinkat(l->dirfd, LOG_TMP, 0);
	unlinkat(l->dirfd, SNAP_TMP, 0);
	if (info != NULL) {
		info->base_seq = l->base_seq;
		info->next_seq = l->next_seq;
		info->truncated = torn ? s.rd.size - s.off : 0;
	}
	*out = l;
	l = NULL;
	rc = 0;
out:
	rd_free(&s.rd);
	hist_close(l);
	return rc;
}

uint64_t hist_next_seq(const struct hist_log *l)
{
	return l->next_seq;
}

uint64_t hist_base_seq(const struct hist_log *l)
{
	return l->base_seq;
}

/* --- 4. append and group commit ------------------------------------------- */

int hist_append(struct hist_log *l, uint8_t type, const void *payload, size_t len, uint64_t *seq)
{
	static const uint8_t pad[8];
	uint8_t hdr[REC_HDR], hash[HASH_LEN];
	struct iovec iov[3];
	uint64_t size;
	uint32_t crc;
	bool checkpoint;
	int rc;

	if (l->broken)
		return l->broken;
	if (type == 0 || type > HIST_MAX_TYPE || len > HIST_MAX_PAYLOAD ||
	    (payload == NULL && len > 0))
		return -EINVAL;
	if (l->next_seq == UINT64_MAX)
		return -EOVERFLOW;
	size = rec_size((uint32_t)len);
	if (l->end > (uint64_t)INT64_MAX - size)
		return -EFBIG;
	/* Everything that can fail without touching the file comes first. */
	checkpoint = (l->next_seq - l->base_seq) % IDX_STRIDE == 0;
	if (checkpoint && (rc = idx_reserve(&l->idx)) < 0)
		return rc;

	put_le32(hdr, (uint32_t)len);
	hdr[4] = type;
	hdr[5] = hdr[6] = hdr[7] = 0;
	memcpy(hdr + 12, l->last, HASH_LEN);
	crc = hist_crc32c(0, hdr + 4, 4);
	crc = hist_crc32c(crc, hdr + 12, HASH_LEN);
	crc = hist_crc32c(crc, payload, len);
	put_le32(hdr + 8, crc);
	rec_hash(hdr, payload, len, hash);

	iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = REC_HDR };
	iov[1] = (struct iovec){ .iov_base = (void *)payload, .iov_len = len };
	iov[2] = (struct iovec){ .iov_base = (void *)pad, .iov_len = size - REC_HDR - len };
	if ((rc = pwritev_full(l->fd, iov, 3, l->end)) < 0) {
		l->broken = rc;
		return rc;
	}
	if (checkpoint)
		l->idx.v[l->idx.n++] = l->end;
	l->end += size;
	memcpy(l->last, hash, HASH_LEN);
	if (seq != NULL)
		*seq = l->next_seq;
	l->next_seq++;
	/* After the write: a leader that reads this knows its fdatasync starts
	 * after our bytes reached the file. */
	atomic_store_explicit(&l->written, l->next_seq, memory_order_release);
	return 0;
}

int hist_sync(struct hist_log *l, uint64_t upto)
{
	uint64_t written = atomic_load_explicit(&l->written, memory_order_acquire), covered;
	int fd, rc;

	if (upto == UINT64_MAX)
		upto = written;
	else if (upto > written)
		return -EINVAL;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		if (l->synced >= upto) {
			rc = 0;
			goto out;
		}
		if (l->sync_err) {
			rc = l->sync_err;
			goto out;
		}
		if (!l->syncing)
			break;
		/* A sync is in flight; it may cover us, or we lead the next. */
		pthread_cond_wait(&l->cv, &l->mu);
	}
	l->syncing = true;
	fd = l->fd;
	covered = atomic_load_explicit(&l->written, memory_order_acquire);
	pthread_mutex_unlock(&l->mu);

	rc = sync_data(fd);

	pthread_mutex_lock(&l->mu);
	l->syncing = false;
	if (rc == 0 && covered > l->synced)
		l->synced = covered;
	else if (rc < 0)
		l->sync_err = rc;       /* the kernel may have dropped the pages: no retry */
	pthread_cond_broadcast(&l->cv);
out:
	pthread_mutex_unlock(&l->mu);
	return rc;
}

/* --- 5. iterate, and positioning a scan at a seq -------------------------- */

/* Set s at record seq (base_seq <= seq < next_seq) with s->prev the value
 * that record must carry, checked (CRC and chain) from the checkpoint before
 * it; the chain starts from the seed, or from the CRC-checked prev of that
 * checkpoint.  The caller frees s->rd. */
static int scan_seek(struct hist_log *l, struct scan *s, uint64_t seq)
{
	size_t k = (size_t)((seq - l->base_seq) / IDX_STRIDE);
	enum rec_state st;
	struct rec rec;
	int rc;

	memset(s, 0, sizeof *s);
	s->rd.fd = l->fd;
	s->rd.size = l->end;
	s->off = l->idx.v[k];
	s->seq = l->base_seq + (uint64_t)k * IDX_STRIDE;
	if (k == 0) {
		memcpy(s->prev, l->seed, HASH_LEN);
	} else {
		if ((rc = rec_read(&s->rd, s->off, &rec, &st, s->why, sizeof s->why)) < 0)
			return rc;
		if (st != REC_OK)
			return -EBADMSG;
		memcpy(s->prev, rec.p + 12, HASH_LEN);
	}
	while (s->seq < seq) {
		rc = scan_next(s, &rec);
		if (rc != 1)
			return rc == 0 || rc == -EUCLEAN ? -EBADMSG : rc;
	}
	return 0;
}

/* The chain value in front of record seq (base_seq <= seq <= next_seq). */
static int chain_at(struct hist_log *l, uint64_t seq, uint8_t out[HASH_LEN])
{
	struct scan s;
	int rc;

	if (seq == l->next_seq) {
		memcpy(out, l->last, HASH_LEN);
		return 0;
	}
	rc = scan_seek(l, &s, seq);
	if (rc == 0)
		memcpy(out, s.prev, HASH_LEN);
	rd_free(&s.rd);
	return rc;
}

int hist_iterate(struct hist_log *l, uint64_t from, hist_fn fn, void *arg)
{
	uint8_t last[HASH_LEN];
	struct scan s;
	struct rec rec;
	int rc;

	if (from < l->base_seq)
		return -ENOENT;
	if (from >= l->next_seq)
		return 0;
	/* fn may append: we stop where the log ended when we started. */
	memcpy(last, l->last, HASH_LEN);
	if ((rc = scan_seek(l, &s, from)) < 0)
		goto out;
	while ((rc = scan_next(&s, &rec)) == 1)
		if ((rc = fn(arg, s.seq - 1, rec.type, rec.p + REC_HDR, rec.len)) != 0)
			goto out;
	if (rc == 0 && memcmp(s.prev, last, HASH_LEN) != 0)
		rc = -EBADMSG;          /* the last record is not the one we wrote */
	else if (rc == -EUCLEAN)
		rc = -EBADMSG;          /* nothing below end is torn: it went bad */
out:
	rd_free(&s.rd);
	return rc;
}

/* --- 6. replacing files: compaction and snapshots -------------------------- */

/* Compaction in three phases, so the long part runs beside appends:
 *   start  (serialised with appends): note what to keep and where the log
 *          ends now; the bytes before that end never change again;
 *   copy   (concurrently with appends and syncs, not with other calls on
 *          this compaction): check those records (CRC, chain) with a hash
 *          context of its own, copy them into history.log.tmp, fsync it;
 *   finish (serialised with appends): check and copy what was appended since
 *          start - usually little - fsync, rename, switch.
 * hist_compact is the three in a row. */
struct hist_compaction {
	struct hist_log *l;
	uint64_t keep_from, keep_off;   /* first kept record and its offset */
	uint64_t end0;                  /* the log's end at start */
	uint8_t seed[HASH_LEN];         /* the chain value in front of keep_from */
	struct scan s;                  /* checked up to here */
	struct idx idx;                 /* checkpoints of the new file */
	int fd;                         /* history.log.tmp */
	bool copied;
};


static int copy_range(int from, uint64_t off, int to, uint64_t to_off, uint64_t n)
{
	size_t cap = n < (1u << 20) ? (size_t)n : (1u << 20);
	uint8_t *buf;
	int rc = 0;

	if (n == 0)
		return 0;
	if ((buf = malloc(cap)) == NULL)
		return -ENOMEM;
	while (n > 0 && rc == 0) {
		size_t k = n < cap ? (size_t)n : cap;

		if ((rc = pread_full(from, buf, k, off)) == 0)
			rc = pwrite_full(to, buf, k, to_off);
		off += k, to_off += k, n -= k;
	}
	free(buf);
	return rc;
}

void hist_compact_abort(struct hist_compaction *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0) {
		close(c->fd);
		unlinkat(c->l->dirfd, LOG_TMP, 0);
	}
	rd_free(&c->s.rd);
	free(c->idx.v);
	free(c);
}

int hist_compact_start(struct hist_log *l, uint64_t keep_from, struct hist_compaction **out)
{
	struct hist_compaction *c;
	struct scan s;
	int rc;

	*out = NULL;
	if (keep_from > l->next_seq)
		return -EINVAL;
	if (keep_from <= l->base_seq)
		return 0;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return -ENOMEM;
	c->l = l;
	c->fd = -1;
	c->keep_from = keep_from;
	c->end0 = l->end;
	if (keep_from == l->next_seq) {
		c->keep_off = l->end;
		memcpy(c->seed, l->last, HASH_LEN);
	} else {
		/* a checkpoint's offset and the chain value in front of keep_from */
		rc = scan_seek(l, &s, keep_from);
		if (rc == 0) {
			c->keep_off = s.off;
			memcpy(c->seed, s.prev, HASH_LEN);
		}
		rd_free(&s.rd);
		if (rc < 0) {
			free(c);
			return rc;
		}
	}
	c->s.rd.fd = l->fd;
	c->s.rd.size = c->end0;
	c->s.off = c->keep_off;
	c->s.seq = keep_from;
	memcpy(c->s.prev, c->seed, HASH_LEN);
	*out = c;
	return 0;
}

/* Check the records from c->s up to end (offset) and note checkpoints. */
static int compact_check(struct hist_compaction *c, uint64_t end)
{
	struct rec rec;
	int rc;

	c->s.rd.size = end;
	for (;;) {
		if ((c->s.seq - c->keep_from) % IDX_STRIDE == 0 && (rc = idx_reserve(&c->idx)) < 0)
			return rc;
		if ((rc = scan_next(&c->s, &rec)) != 1)
			break;
		if ((c->s.seq - 1 - c->keep_from) % IDX_STRIDE == 0)
			c->idx.v[c->idx.n++] = rec.off - c->keep_off + HDR_SIZE;
	}
	/* a record gone bad since the open must not be laundered into a new file */
	return rc == 0 ? 0 : rc == -EUCLEAN ? -EBADMSG : rc;
}

int hist_compact_copy(struct hist_compaction *c)
{
	uint8_t hdr[HDR_SIZE];
	int rc;

	if ((rc = compact_check(c, c->end0)) < 0)
		return rc;
	if ((c->fd = tmp_create(c->l->dirfd, LOG_TMP)) < 0) {
		rc = c->fd;
		c->fd = -1;
		return rc;
	}
	hdr_encode(hdr, c->keep_from, c->seed);
	if ((rc = pwrite_full(c->fd, hdr, HDR_SIZE, 0)) < 0 ||
	    (rc = copy_range(c->l->fd, c->keep_off, c->fd, HDR_SIZE, c->end0 - c->keep_off)) < 0 ||
	    (rc = sync_all(c->fd)) < 0)
		return rc;
	c->copied = true;
	return 0;
}

int hist_compact_finish(struct hist_compaction *c)
{
	struct hist_log *l = c->l;
	uint64_t new_end;
	int old, rc;

	if (!c->copied) {
		hist_compact_abort(c);
		return -EINVAL;
	}
	/* what was appended since start: check it, and the chain must end where
	 * the log says it does */
	if ((rc = compact_check(c, l->end)) < 0)
		goto fail;
	if (memcmp(c->s.prev, l->last, HASH_LEN) != 0) {
		rc = -EBADMSG;
		goto fail;
	}
	new_end = HDR_SIZE + (l->end - c->keep_off);
	if ((rc = copy_range(l->fd, c->end0, c->fd, HDR_SIZE + (c->end0 - c->keep_off),
			     l->end - c->end0)) < 0 ||
	    (rc = tmp_commit(l->dirfd, c->fd, LOG_TMP, LOG_NAME)) < 0)
		goto fail;

	/* The new file has the name now; whatever fails next, it is the log. */
	pthread_mutex_lock(&l->mu);
	while (l->syncing)      /* a leader may be in fdatasync on the old fd */
		pthread_cond_wait(&l->cv, &l->mu);
	old = l->fd;
	l->fd = c->fd;
	pthread_mutex_unlock(&l->mu);
	close(old);
	c->fd = -1;
	l->base_seq = c->keep_from;
	memcpy(l->seed, c->seed, HASH_LEN);
	l->end = new_end;
	free(l->idx.v);
	l->idx = c->idx;
	c->idx.v = NULL;

	rc = sync_all(l->dirfd);
	pthread_mutex_lock(&l->mu);
	if (rc == 0 && l->synced < l->next_seq)
		l->synced = l->next_seq;        /* all of it sits in the fsynced file */
	else if (rc < 0)
		l->sync_err = rc;       /* the rename may not survive a crash */
	pthread_mutex_unlock(&l->mu);
	hist_compact_abort(c);  /* frees what is left (fd already taken) */
	return rc;
fail:
	hist_compact_abort(c);
	return rc;
}

int hist_compact(struct hist_log *l, uint64_t keep_from)
{
	struct hist_compaction *c;
	int rc = hist_compact_start(l, keep_from, &c);

	if (rc < 0 || c == NULL)
		return rc;
	if ((rc = hist_compact_copy(c)) < 0) {
		hist_compact_abort(c);
		return rc;
	}
	return hist_compact_finish(c);
}

int hist_snapshot_point(struct hist_log *l, uint64_t upto, struct hist_snap_point *p)
{
	if (upto < l->base_seq || upto > l->next_seq)
		return -EINVAL;
	p->upto = upto;
	return chain_at(l, upto, p->chain);
}

int hist_snapshot_write_at(struct hist_log *l, const struct hist_snap_point *p, const void *blob,
			   size_t len)
{
	uint8_t h[SNAP_HDR];
	struct iovec iov[2];
	uint32_t crc;
	int fd, rc;

	if ((blob == NULL && len > 0) || len > HIST_MAX_SNAPSHOT)
		return -EINVAL;
	/* Never ahead of the log on disk: a crash must not leave a snapshot of
	 * records that recovery no longer has. */
	if ((rc = hist_sync(l, p->upto)) < 0)
		return rc;
	memset(h, 0, sizeof h);
	memcpy(h, SNAP_MAGIC, 8);
	put_le32(h + 8, FMT_VERSION);
	put_le32(h + 12, SNAP_HDR);
	put_le64(h + 16, p->upto);
	memcpy(h + 24, p->chain, HASH_LEN);
	put_le64(h + 56, len);
	crc = hist_crc32c(0, h, 64);
	put_le32(h + 64, hist_crc32c(crc, blob, len));

	if ((fd = tmp_create(l->dirfd, SNAP_TMP)) < 0)
		return fd;
	iov[0] = (struct iovec){ .iov_base = h, .iov_len = SNAP_HDR };
	iov[1] = (struct iovec){ .iov_base = (void *)blob, .iov_len = len };
	if ((rc = pwritev_full(fd, iov, 2, 0)) < 0 ||
	    (rc = tmp_commit(l->dirfd, fd, SNAP_TMP, SNAP_NAME)) < 0)
		unlinkat(l->dirfd, SNAP_TMP, 0);
	else
		rc = sync_all(l->dirfd);
	close(fd);
	return rc;
}

int hist_snapshot_write(struct hist_log *l, uint64_t upto, const void *blob, size_t len)
{
	struct hist_snap_point p;
	int rc;

	if ((blob == NULL && len > 0) || len > HIST_MAX_SNAPSHOT)
		return -EINVAL;
	if ((rc = hist_snapshot_point(l, upto, &p)) < 0)
		return rc;
	return hist_snapshot_write_at(l, &p, blob, len);
}

static int snap_fail(struct hist_error *err, const struct hist_log *l, uint64_t off,
		     const char *why)
{
	return fail(err, -EINVAL, off, HIST_NO_SEQ, "%s/" SNAP_NAME ": %s", l->dir, why);
}

int hist_snapshot_load(struct hist_log *l, void **blob, size_t *len, uint64_t *upto,
		       struct hist_error *err)
{
	uint8_t h[SNAP_HDR], hash[HASH_LEN];
	char why[160];
	struct stat st;
	uint64_t n, u;
	uint8_t *buf = NULL;
	int fd, rc;

	err_clear(err);
	if ((fd = openat(l->dirfd, SNAP_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return fail(err, -errno, 0, HIST_NO_SEQ, "%s/" SNAP_NAME ": %s", l->dir,
			    errno == ENOENT ? "no snapshot" : strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = fail_sys(err, -errno, l->dir, SNAP_NAME, "fstat");
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < SNAP_HDR) {
		rc = snap_fail(err, l, 0, "not a snapshot: shorter than its header");
		goto out;
	}
	if ((rc = pread_full(fd, h, SNAP_HDR, 0)) < 0) {
		rc = fail_sys(err, rc, l->dir, SNAP_NAME, "read");
		goto out;
	}
	if (memcmp(h, SNAP_MAGIC, 8) != 0) {
		rc = snap_fail(err, l, 0, "bad magic: not a cairn snapshot");
		goto out;
	}
	/* The length decides the allocation, so it is checked against the
	 * file before the CRC can vouch for it. */
	n = get_le64(h + 56);
	if (n > HIST_MAX_SNAPSHOT || n != (uint64_t)st.st_size - SNAP_HDR) {
		snprintf(why, sizeof why, "blob length %llu does not match the file (%lld bytes)",
			 (unsigned long long)n, (long long)st.st_size);
		rc = snap_fail(err, l, 56, why);
		goto out;
	}
	if ((buf = malloc(n > 0 ? (size_t)n : 1)) == NULL) {
		rc = fail(err, -ENOMEM, 0, HIST_NO_SEQ, "%s/" SNAP_NAME ": out of memory", l->dir);
		goto out;
	}
	if ((rc = pread_full(fd, buf, (size_t)n, SNAP_HDR)) < 0) {
		rc = fail_sys(err, rc, l->dir, SNAP_NAME, "read");
		goto out;
	}
	if (get_le32(h + 64) != hist_crc32c(hist_crc32c(0, h, 64), buf, (size_t)n)) {
		rc = snap_fail(err, l, 64, "CRC mismatch");
		goto out;
	}
	if (get_le32(h + 8) != FMT_VERSION || get_le32(h + 12) != SNAP_HDR ||
	    !all_zero(h + 68, 4)) {
		rc = snap_fail(err, l, 8, "unsupported version or header layout");
		goto out;
	}

	u = get_le64(h + 16);
	if (u > l->next_seq) {
		snprintf(why, sizeof why, "covers records below seq %llu, but the log ends at %llu",
			 (unsigned long long)u, (unsigned long long)l->next_seq);
		rc = snap_fail(err, l, 16, why);
		goto out;
	}
	if (u < l->base_seq) {
		snprintf(why, sizeof why, "covers records below seq %llu, but the log starts at "
			 "%llu: the records between are gone", (unsigned long long)u,
			 (unsigned long long)l->base_seq);
		rc = snap_fail(err, l, 16, why);
		goto out;
	}
	if ((rc = chain_at(l, u, hash)) < 0) {
		rc = fail_sys(err, rc, l->dir, LOG_NAME, "reading the chain at the snapshot's seq");
		goto out;
	}
	if (memcmp(hash, h + 24, HASH_LEN) != 0) {
		snprintf(why, sizeof why, "chain hash at seq %llu differs from the log's",
			 (unsigned long long)u);
		rc = snap_fail(err, l, 24, why);
		goto out;
	}
	*blob = buf;
	*len = (size_t)n;
	*upto = u;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

/* --- 7. verify ----------------------------------------------------------- */

int hist_verify(const char *dir, uint64_t *n_records, struct hist_error *err)
{
	uint8_t seed[HASH_LEN];
	struct scan s = { 0 };
	uint64_t base = 0;
	bool torn = false;
	int dfd, fd = -1, rc;

	err_clear(err);
	if (n_records != NULL)
		*n_records = 0;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail(err, -errno, 0, HIST_NO_SEQ, "%s: %s", dir, strerror(errno));
	fd = openat(dfd, LOG_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	rc = fd < 0 ? -errno : 0;
	close(dfd);
	if (rc < 0)
		return fail(err, rc, 0, HIST_NO_SEQ, "%s/" LOG_NAME ": %s", dir, strerror(-rc));
	rc = log_check(fd, dir, &s, &base, seed, NULL, &torn, err);
	if (rc == 0 && torn)
		rc = -EUCLEAN;
	if (n_records != NULL && s.seq >= base)
		*n_records = s.seq - base;
	rd_free(&s.rd);
	close(fd);
	return rc;
}

/* Read-only iteration for inspection (`cairn history show`): no lock, no
 * recovery, nothing written.  Every record is checked (CRC and chain) before
 * fn sees it; a torn tail ends the walk quietly (-EUCLEAN is returned only if
 * fn never stopped it); damage is -EBADMSG with err naming it. */
int hist_read(const char *dir, hist_fn fn, void *arg, struct hist_error *err)
{
	uint8_t b[HDR_SIZE], seed[HASH_LEN];
	struct scan s = { 0 };
	struct stat st;
	struct rec rec;
	uint64_t base = 0;
	const char *why;
	int dfd, fd, rc;

	err_clear(err);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail(err, -errno, 0, HIST_NO_SEQ, "%s: %s", dir, strerror(errno));
	fd = openat(dfd, LOG_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	rc = fd < 0 ? -errno : 0;
	close(dfd);
	if (rc < 0)
		return fail(err, rc, 0, HIST_NO_SEQ, "%s/" LOG_NAME ": %s", dir, strerror(-rc));
	if (fstat(fd, &st) != 0) {
		rc = fail_sys(err, -errno, dir, LOG_NAME, "fstat");
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < HDR_SIZE) {
		rc = fail_at(err, -EBADMSG, dir, 0, HIST_NO_SEQ, "not a history log");
		goto out;
	}
	if ((rc = pread_full(fd, b, HDR_SIZE, 0)) < 0) {
		rc = fail_sys(err, rc, dir, LOG_NAME, "read");
		goto out;
	}
	if ((why = hdr_decode(b, &base, seed)) != NULL) {
		rc = fail_at(err, -EBADMSG, dir, 0, HIST_NO_SEQ, why);
		goto out;
	}
	s.rd.fd = fd;
	s.rd.size = (uint64_t)st.st_size;
	s.off = HDR_SIZE;
	s.seq = base;
	memcpy(s.prev, seed, HASH_LEN);
	for (;;) {
		rc = scan_next(&s, &rec);
		if (rc == 1) {
			if ((rc = fn(arg, s.seq - 1, rec.type, rec.p + REC_HDR, rec.len)) != 0)
				break;
			continue;
		}
		if (rc == -EBADMSG)
			rc = fail_at(err, rc, dir, s.off, s.seq, s.why);
		else if (rc == -EUCLEAN)
			fail_at(err, rc, dir, s.off, s.seq, s.why);
		else if (rc < 0)
			rc = fail_sys(err, rc, dir, LOG_NAME, "reading records");
		break;
	}
out:
	rd_free(&s.rd);
	if (fd >= 0)
		close(fd);
	return rc;
}
