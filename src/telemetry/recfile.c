/* recfile.c - one records file, buffered or staged and direct (recfile.h;
 * docs/records.md "Where records go").
 *
 * Staged, the file's bytes from `base` (a multiple of the direct I/O
 * alignment) are in the stage; stage[0..in_file) is what the file already
 * holds of its last, partial block.  A flush writes the stage's whole
 * blocks with O_DIRECT (rewriting that partial block with the same bytes)
 * and the rest, less than a block, buffered; the kernel writes that cached
 * block back before the next direct write over it.  Every write is at an
 * offset we keep: nobody else writes this file (recfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recfile.h"

#define STAGE_CAP (2 * TM_RECFILE_PIECE)


static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void tm_recfile_init(struct tm_recfile *f, int fd)
{
	memset(f, 0, sizeof(*f));
	f->fd = fd;
}

/* Count whatever is held as lost, and keep e as the target's error. */
static int fail(struct tm_recfile *f, int e)
{
	if (f->error == 0)
		f->error = e;
	for (int k = 0; k < 2; k++) {
		f->lost[k] += f->held[k];
		f->held[k] = 0;
	}
	return f->error;
}

/* O_DIRECT on or off on f's descriptor (O_APPEND stays off). */
static int set_direct(struct tm_recfile *f, bool on)
{
	int fl = fcntl(f->fd, F_GETFL);
	if (fl < 0)
		return errno;
	fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	return fcntl(f->fd, F_SETFL, fl) == 0 ? 0 : errno;
}

static int pwrite_all(int fd, const uint8_t *p, size_t n, off_t off)
{
	while (n > 0) {
		ssize_t k = pwrite(fd, p, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

/* Buffered: the descriptor's O_DIRECT is off for the write and back after. */
static int write_buffered(struct tm_recfile *f, const uint8_t *p, size_t n, off_t off)
{
	int e = f->dio ? set_direct(f, false) : 0;
	if (e == 0)
		e = pwrite_all(f->fd, p, n, off);
	if (f->dio && set_direct(f, true) != 0)
		f->dio = false;         /* the rest goes buffered */
	return e;
}

/* n bytes (a multiple of align) from the stage's start at base: direct, or
 * buffered where the file system turns direct I/O down after all, or a
 * direct write stops short of a block. */
static int write_blocks(struct tm_recfile *f, size_t n)
{
	size_t done = 0;
	while (f->dio && done < n) {
		ssize_t k = pwrite(f->fd, f->stage + done, n - done, f->base + (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EINVAL) {
			if (done > 0)
				break;  /* a continuation the device will not take: buffered */
			/* refused before anything was written: buffered from here on */
			int e = set_direct(f, false);
			if (e != 0)
				return e;
			f->dio = false;
			break;
		}
		if (k <= 0)
			return k < 0 ? errno : EIO;
		done += (size_t)k;
		if (done % f->align != 0 && done < n)
			break;          /* short, mid-block: the rest buffered */
	}
	if (done < n)
		return write_buffered(f, f->stage + done, n - done, f->base + (off_t)done);
	return 0;
}

/* The stage's whole blocks into the file; what is left (less than a block,
 * none of it in the file yet) moves to the stage's start. */
static int write_whole(struct tm_recfile *f)
{
	size_t whole = f->staged - f->staged % f->align;
	if (whole == 0)
		return 0;
	int e = write_blocks(f, whole);
	if (e != 0)
		return e;
	memmove(f->stage, f->stage + whole, f->staged - whole);
	f->base += (off_t)whole;
	f->staged -= whole;
	f->in_file = 0;                 /* in_file < align <= whole */
	return 0;
}

int tm_recfile_direct(struct tm_recfile *f)
{
#ifndef STATX_DIOALIGN
	(void)f;
	return -EOPNOTSUPP;             /* built against headers before Linux 6.1 */
#else
	struct statx sx;
	if (statx(f->fd, "", AT_EMPTY_PATH, STATX_SIZE | STATX_DIOALIGN, &sx) != 0)
		return -errno;
	if (!(sx.stx_mask & STATX_DIOALIGN) || sx.stx_dio_offset_align == 0 ||
	    sx.stx_dio_mem_align == 0)
		return -EOPNOTSUPP;     /* tmpfs, or a kernel before 6.1 */
	size_t align = sx.stx_dio_offset_align;
	size_t mem = sx.stx_dio_mem_align > 4096 ? sx.stx_dio_mem_align : 4096;
	if ((align & (align - 1)) != 0 || (mem & (mem - 1)) != 0 || align > STAGE_CAP / 4)
		return -EOPNOTSUPP;
	void *stage;
	if (posix_memalign(&stage, mem, STAGE_CAP) != 0)
		return -ENOMEM;
	off_t size = (off_t)sx.stx_size;
	off_t base = size - size % (off_t)align;
	size_t part = (size_t)(size - base);
	for (size_t got = 0; got < part;) {
		ssize_t k = pread(f->fd, (uint8_t *)stage + got, part - got, base + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;
			free(stage);
			return -e;
		}
		got += (size_t)k;
	}
	int fl = fcntl(f->fd, F_GETFL);
	if (fl < 0 || fcntl(f->fd, F_SETFL, (fl & ~O_APPEND) | O_DIRECT) != 0) {
		int e = fl < 0 ? errno : EOPNOTSUPP;
		free(stage);
		return -e;
	}
	f->stage = stage;
	f->cap = STAGE_CAP;
	f->align = align;
	f->base = base;
	f->staged = f->in_file = part;
	f->staged_mode = f->dio = true;
	return 0;
#endif
}

int tm_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int tm_recfile_put(struct tm_recfile *f, const void *p, size_t n, enum tm_recfile_kind kind,
		   uint64_t count)
{
	const uint8_t *s = p;
	if (f->error != 0) {
		f->lost[kind] += count;
		return f->error;
	}
	f->dirty = true;
	if (!f->staged_mode) {
		int e = tm_write_all(f->fd, s, n);
		if (e != 0) {
			f->lost[kind] += count;
			return fail(f, e);
		}
		f->written[kind] += count;
		return 0;
	}
	/* What is staged goes out first if these lines do not fit after it, so that
	 * only a put longer than the stage ever has a direct write end inside a line,
	 * and that put is flushed to its end before it returns. */
	if (n > f->cap - f->staged) {
		int e = tm_recfile_flush(f);
		if (e != 0) {
			f->lost[kind] += count;
			return e;
		}
	}
	if (f->staged == f->in_file)
		f->since = mono_ns();
	bool torn = false;
	while (n > 0) {
		if (f->staged == f->cap) {
			int e = write_whole(f);         /* mid-line: flushed below */
			if (e != 0) {
				f->lost[kind] += count;
				return fail(f, e);
			}
			torn = true;
		}
		size_t k = f->cap - f->staged < n ? f->cap - f->staged : n;
		memcpy(f->stage + f->staged, s, k);
		f->staged += k;
		s += k;
		n -= k;
	}
	f->held[kind] += count;
	return torn || f->staged >= TM_RECFILE_PIECE ? tm_recfile_flush(f) : 0;
}

void tm_recfile_lose(struct tm_recfile *f, enum tm_recfile_kind kind, uint64_t count)
{
	f->lost[kind] += count;
}

int64_t tm_recfile_due(const struct tm_recfile *f)
{
	if (!f->staged_mode || f->error != 0 || f->staged == f->in_file)
		return INT64_MAX;
	return f->since + TM_RECFILE_LAG_NS;
}

int tm_recfile_flush(struct tm_recfile *f)
{
	if (f->error != 0)
		return f->error;
	if (!f->staged_mode || f->staged == f->in_file) {
		for (int k = 0; k < 2; k++) {   /* a put of no bytes */
			f->written[k] += f->held[k];
			f->held[k] = 0;
		}
		return 0;
	}
	int e = 0;
	if (f->staged - f->in_file >= TM_RECFILE_DIRECT_MIN) {
		e = write_whole(f);
	} else {
		/* A few lines (an idle box's, the last ones at exit): a direct write
		 * would wait for the device here, and costs no less than a buffered
		 * one at this size.  Written buffered; the stage keeps only the
		 * block they end in. */
		e = write_buffered(f, f->stage + f->in_file, f->staged - f->in_file,
				   f->base + (off_t)f->in_file);
		if (e == 0) {
			size_t whole = f->staged - f->staged % f->align;
			memmove(f->stage, f->stage + whole, f->staged - whole);
			f->base += (off_t)whole;
			f->staged -= whole;
			f->in_file = f->staged;
		}
	}
	if (e == 0 && f->staged > f->in_file) {
		e = write_buffered(f, f->stage + f->in_file, f->staged - f->in_file,
				   f->base + (off_t)f->in_file);
		if (e == 0)
			f->in_file = f->staged;
	}
	if (e != 0)
		return fail(f, e);
	for (int k = 0; k < 2; k++) {
		f->written[k] += f->held[k];
		f->held[k] = 0;
	}
	return 0;
}

/* Buffered: let the page cache go of what is synced, to the last whole
 * page (the partial one is kept: the next append would read it back).  The
 * records are written once and read rarely, some 15 MB a second at a
 * gateway's pace: kept cached, they took fresh pages all run, and on a
 * virtual machine a page the guest has never touched (or has handed back)
 * costs the host a fault to provide; let go, the next batches' writes reuse
 * them (docs/records.md "Where records go").  Staged, what direct writes
 * wrote is not cached; what small flushes wrote buffered is let go the same
 * way. */
static void drop_synced(struct tm_recfile *f)
{
	/* buffered: O_APPEND's position is the end, after our writes; staged:
	 * everything before the stage is in the file */
	off_t end = f->staged_mode ? f->base : lseek(f->fd, 0, SEEK_CUR);
	long page = sysconf(_SC_PAGESIZE);
	if (end < 0 || page <= 0)
		return;
	off_t whole = end - end % page;
	if (whole > f->dropped &&
	    posix_fadvise(f->fd, f->dropped, whole - f->dropped, POSIX_FADV_DONTNEED) == 0)
		f->dropped = whole;
}

int tm_recfile_sync(struct tm_recfile *f)
{
	int e = tm_recfile_flush(f);
	if (e != 0 || !f->dirty)
		return e;
	f->dirty = false;
	if (fdatasync(f->fd) != 0)
		return fail(f, errno);
	drop_synced(f);         /* staged: what small flushes wrote buffered */
	return 0;
}

void tm_recfile_close(struct tm_recfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->stage);
	f->stage = NULL;
}
