/* test_recfile.c - one records file, staged and direct or buffered
 * (recfile.h): the bytes in the file are the lines put, in order, whatever
 * the sizes and wherever the flushes fall; after every flush the file ends
 * where its last line does; a file that already ends mid-block is carried
 * on byte for byte; a file system without direct I/O leaves the target
 * buffered on O_APPEND; a failing write counts what it held as lost. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recfile.h"
#include "test.h"

static char dir[256];
static const char *base_dir = "/tmp";   /* where the tests' directories go */
static size_t dio_align;                /* 0: no direct I/O found */

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/rf-test-XXXXXX", base_dir);
	CHECK(mkdtemp(dir) != NULL);
}

/* The expected content, grown as lines are put. */
struct want {
	char *p;
	size_t n, cap;
};

static void want_add(struct want *w, const char *s, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->p = realloc(w->p, w->cap);
	}
	memcpy(w->p + w->n, s, n);
	w->n += n;
}

/* The file's bytes are exactly w's: read back after the page cache is let
 * go of what it holds clean, so that what is compared is mostly what the
 * file system has, not what was last copied in. */
static int same(const char *path, const struct want *w)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	size_t len;
	char *text = test_read_file(path, &len);
	int ok = text != NULL && len == w->n && memcmp(text, w->p, len) == 0;
	if (!ok)
		fprintf(stderr, "  %s: %zu bytes, want %zu\n", path, text ? len : 0, w->n);
	free(text);
	return ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A line of n bytes (n >= 2), its last '\n', the rest from seed. */
static char *line(size_t n, unsigned seed)
{
	char *s = malloc(n);
	for (size_t i = 0; i + 1 < n; i++)
		s[i] = (char)('a' + (seed + i * 7) % 26);
	s[n - 1] = '\n';
	return s;
}

static int open_target(const char *path)
{
	return open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
}

static bool direct_ok(const char *path)
{
	struct tm_recfile f;
	tm_recfile_init(&f, open_target(path));
	int r = tm_recfile_direct(&f);
	tm_recfile_close(&f);
	unlink(path);
	return r == 0;
}

/* The first of /tmp, /var/tmp and the working directory (the build tree)
 * whose file system has direct I/O, and its alignment. */
static void find_dio_dir(void)
{
	static const char *const cands[] = { "/tmp", "/var/tmp", "." };
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/rf-probe-%d", cands[i], (int)getpid());
		struct tm_recfile f;
		int fd = open_target(path);
		if (fd < 0)
			continue;
		tm_recfile_init(&f, fd);
		int r = tm_recfile_direct(&f);
		size_t align = f.align;
		tm_recfile_close(&f);
		unlink(path);
		if (r == 0) {
			base_dir = cands[i];
			dio_align = align;
			return;
		}
	}
}

enum mode { BUFFERED, STAGED_DIRECT, STAGED_BUFFERED };

/* Lines of every size from 2 bytes to past the stage, flushed at random
 * points and when due; the file is compared after every flush, and after
 * the put longer than the stage.  STAGED_BUFFERED: staged, with direct I/O
 * turned off under it (what a file system that turns it down mid-run
 * leaves). */
static void run_lines(enum mode mode, size_t prefix)
{
	bool direct = mode != BUFFERED;
	setup();
	char path[4300];
	snprintf(path, sizeof(path), "%s/records.jsonl", dir);
	struct want w = { 0 };
	if (prefix > 0) {
		/* a file an earlier run left mid-block */
		char *s = line(prefix, 3);
		int fd = open_target(path);
		CHECK(write(fd, s, prefix) == (ssize_t)prefix);
		close(fd);
		want_add(&w, s, prefix);
		free(s);
	}
	struct tm_recfile f;
	tm_recfile_init(&f, open_target(path));
	CHECK(f.fd >= 0);
	if (direct) {
		CHECK_EQ_INT(tm_recfile_direct(&f), 0);
		CHECK(f.staged_mode && f.dio && f.align > 0 && f.base % (off_t)f.align == 0);
		CHECK(!(fcntl(f.fd, F_GETFL) & O_APPEND));
		CHECK(fcntl(f.fd, F_GETFL) & O_DIRECT);
	}
	if (mode == STAGED_BUFFERED) {
		CHECK(fcntl(f.fd, F_SETFL, fcntl(f.fd, F_GETFL) & ~O_DIRECT) == 0);
		f.dio = false;
	}
	uint64_t lines = 0, flushes = 0;
	for (int i = 0; i < 600; i++) {
		size_t n;
		uint64_t r = next();
		if (i == 300)
			n = 9u << 19;   /* longer than the stage, its last piece under PIECE */
		else if (r % 20 == 0)
			n = 2 + next() % 100000;        /* a burst's line */
		else
			n = 2 + next() % 6000;
		char *s = line(n, (unsigned)i);
		CHECK_EQ_INT(tm_recfile_put(&f, s, n, TM_RF_RECORDS, 3), 0);
		want_add(&w, s, n);
		free(s);
		lines++;
		if (n > f.cap && direct) {
			/* written in pieces, the last ending inside it: flushed to its end */
			CHECK(same(path, &w));
			CHECK_EQ_INT(f.held[TM_RF_RECORDS], 0);
		}
		if (next() % 15 == 0) {
			CHECK_EQ_INT(tm_recfile_flush(&f), 0);
			flushes++;
			CHECK(same(path, &w));
			CHECK_EQ_INT(tm_recfile_due(&f), INT64_MAX);
			CHECK_EQ_INT(f.held[TM_RF_RECORDS], 0);
		}
	}
	if (direct) {
		/* what is staged is due within the lag, and not in the file yet */
		char *s = line(100, 1);
		CHECK_EQ_INT(tm_recfile_put(&f, s, 100, TM_RF_PAYLOADS, 1), 0);
		want_add(&w, s, 100);
		free(s);
		int64_t due = tm_recfile_due(&f);
		CHECK(due != INT64_MAX && due == f.since + TM_RECFILE_LAG_NS);
		CHECK_EQ_INT(f.held[TM_RF_PAYLOADS], 1);
		struct stat st;
		CHECK(fstat(f.fd, &st) == 0 && (size_t)st.st_size < w.n);
	}
	CHECK_EQ_INT(tm_recfile_sync(&f), 0);
	CHECK(same(path, &w));
	/* direct I/O was used throughout, not fallen back from */
	CHECK(f.dio == (mode == STAGED_DIRECT));
	CHECK_EQ_INT(f.written[TM_RF_RECORDS], 3 * lines);
	CHECK_EQ_INT(f.lost[TM_RF_RECORDS], 0);
	CHECK_EQ_INT(f.written[TM_RF_PAYLOADS], direct ? 1 : 0);
	CHECK_EQ_INT(f.error, 0);
	tm_recfile_close(&f);
	(void)flushes;

	/* a second run carries on where the first ended */
	tm_recfile_init(&f, open_target(path));
	if (direct)
		CHECK_EQ_INT(tm_recfile_direct(&f), 0);
	if (direct)
		CHECK(f.dio);
	char *s = line(777, 9);
	CHECK_EQ_INT(tm_recfile_put(&f, s, 777, TM_RF_RECORDS, 1), 0);
	want_add(&w, s, 777);
	free(s);
	CHECK_EQ_INT(tm_recfile_sync(&f), 0);
	tm_recfile_close(&f);
	CHECK(same(path, &w));
	free(w.p);
}

static void test_direct(void)
{
	if (dio_align == 0) {
		/* the suite runs where /tmp has direct I/O (ext4 on CI's machines) */
		printf("SKIP: no directory here (/tmp, /var/tmp, the build tree) has direct I/O; "
		       "the staged tests did not run\n");
		return;
	}
	run_lines(STAGED_DIRECT, 0);
	run_lines(STAGED_DIRECT, 1000);                 /* mid-block */
	run_lines(STAGED_DIRECT, dio_align);            /* on a block's edge */
	run_lines(STAGED_DIRECT, dio_align - 1);
	run_lines(STAGED_DIRECT, 70000);
	run_lines(STAGED_BUFFERED, 0);
	run_lines(STAGED_BUFFERED, 1000);
}

static void test_buffered(void)
{
	run_lines(BUFFERED, 0);
	run_lines(BUFFERED, 1234);
}

/* A put past PIECE bytes flushes by itself, and the file ends where a
 * line does. */
static void test_piece(void)
{
	if (dio_align == 0)
		return;                 /* said by test_direct */
	setup();
	char path[4300];
	snprintf(path, sizeof(path), "%s/records.jsonl", dir);
	struct tm_recfile f;
	tm_recfile_init(&f, open_target(path));
	CHECK_EQ_INT(tm_recfile_direct(&f), 0);
	char *s = line(2500, 5);
	size_t total = 0;
	while (total < TM_RECFILE_PIECE + 2500) {
		CHECK_EQ_INT(tm_recfile_put(&f, s, 2500, TM_RF_RECORDS, 1), 0);
		total += 2500;
	}
	free(s);
	struct stat st;
	CHECK(fstat(f.fd, &st) == 0 && st.st_size > 0 && st.st_size % 2500 == 0);
	CHECK(f.written[TM_RF_RECORDS] == (uint64_t)st.st_size / 2500);
	CHECK_EQ_INT(tm_recfile_sync(&f), 0);
	CHECK(fstat(f.fd, &st) == 0 && (size_t)st.st_size == total);
	tm_recfile_close(&f);
}

/* tmpfs has no direct I/O: the target stays buffered on O_APPEND. */
static void test_no_direct(void)
{
	char path[] = "/dev/shm/rf-test-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return;                 /* no /dev/shm */
	close(fd);
	if (direct_ok(path))
		return;                 /* a tmpfs with direct I/O */
	fd = open_target(path);
	CHECK(write(fd, "x\n", 2) == 2);
	struct tm_recfile f;
	tm_recfile_init(&f, fd);
	CHECK_EQ_INT(tm_recfile_direct(&f), -EOPNOTSUPP);
	CHECK(!f.staged_mode && f.stage == NULL);
	CHECK(fcntl(f.fd, F_GETFL) & O_APPEND);
	CHECK_EQ_INT(tm_recfile_put(&f, "y\n", 2, TM_RF_RECORDS, 1), 0);
	CHECK_EQ_INT(tm_recfile_sync(&f), 0);
	tm_recfile_close(&f);
	size_t len;
	char *text = test_read_file(path, &len);
	CHECK(text != NULL && len == 4 && memcmp(text, "x\ny\n", 4) == 0);
	free(text);
	unlink(path);
}

static void run_failure(bool direct);

/* A write that fails keeps its error: what was held is lost, and every
 * later put too; nothing is counted twice.  Buffered and staged. */
static void test_failure(void)
{
	for (int d = 0; d < 2; d++)
		run_failure(d == 1);
}

static void run_failure(bool direct)
{
	if (direct && dio_align == 0)
		return;
	setup();
	char path[4300];
	snprintf(path, sizeof(path), "%s/records.jsonl", dir);
	struct tm_recfile f;
	tm_recfile_init(&f, open_target(path));
	if (direct)
		CHECK_EQ_INT(tm_recfile_direct(&f), 0);
	CHECK_EQ_INT(tm_recfile_put(&f, "{}\n", 3, TM_RF_RECORDS, 1), 0);
	CHECK_EQ_INT(tm_recfile_flush(&f), 0);
	/* the descriptor turns read-only under the target */
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(ro >= 0 && dup2(ro, f.fd) == f.fd);
	close(ro);
	/* lines enough for a direct write: staged, the flush's direct write fails */
	size_t n = TM_RECFILE_DIRECT_MIN + 3000;
	char *s = line(n, 2);
	int e = tm_recfile_put(&f, s, n, TM_RF_RECORDS, 5);
	free(s);
	if (direct) {
		CHECK_EQ_INT(e, 0);             /* staged */
		CHECK(f.staged >= TM_RECFILE_DIRECT_MIN);
		CHECK_EQ_INT(tm_recfile_flush(&f), EBADF);
	} else {
		CHECK_EQ_INT(e, EBADF);
	}
	CHECK_EQ_INT(f.error, EBADF);
	CHECK_EQ_INT(tm_recfile_put(&f, "{}\n", 3, TM_RF_RECORDS, 2), EBADF);
	CHECK_EQ_INT(tm_recfile_sync(&f), EBADF);
	CHECK_EQ_INT(f.written[TM_RF_RECORDS], 1);
	CHECK_EQ_INT(f.lost[TM_RF_RECORDS], 7);
	CHECK_EQ_INT(f.held[TM_RF_RECORDS], 0);
	tm_recfile_lose(&f, TM_RF_PAYLOADS, 4);
	CHECK_EQ_INT(f.lost[TM_RF_PAYLOADS], 4);
	tm_recfile_close(&f);
}

static const struct test_case tests[] = {
	{ "find_dio_dir", find_dio_dir },       /* first: every other test uses it */
	{ "direct", test_direct },
	{ "buffered", test_buffered },
	{ "piece", test_piece },
	{ "no_direct", test_no_direct },
	{ "failure", test_failure },
};

TEST_MAIN(tests)
