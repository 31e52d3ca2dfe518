/* test_log.c - the history log (src/history/log.c, crc32c.c).
 *
 * The tests read and damage files through the layout documented in log.h,
 * not through the implementation: a record is walked as u32 length, type,
 * CRC and prev, its size rounded up to 8.  Each test gets a fresh directory
 * under $TMPDIR (or /tmp) and removes it.
 *
 * The crash test forks writer children and SIGKILLs them at random moments;
 * CAIRN_HISTORY_KILL_CYCLES sets how many (default 50), CAIRN_HISTORY_SEED
 * the random seed (printed, so a failing run can be repeated as far as
 * timing allows).  The bench test prints appends/s for a few sync
 * intervals; it checks nothing about speed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "test.h"

/* ---- helpers --------------------------------------------------------------- */

#define HDR 64
#define REC_HDR 44

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *tdir_new(void)
{
	const char *base = getenv("TMPDIR");
	char buf[PATH_MAX];
	char *d;

	snprintf(buf, sizeof buf, "%s/cairn-hist-XXXXXX", base && *base ? base : "/tmp");
	if ((d = mkdtemp(buf)) == NULL) {
		perror("mkdtemp");
		abort();
	}
	return strdup(d);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void tdir_free(char *d)
{
	CHECK(nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
	free(d);
}

static const char *path_in(char buf[PATH_MAX], const char *dir, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return buf;
}

static uint8_t *file_get(const char *dir, const char *name, size_t *n)
{
	char p[PATH_MAX];

	return (uint8_t *)test_read_file(path_in(p, dir, name), n);
}

static void file_put(const char *dir, const char *name, const void *b, size_t n)
{
	char p[PATH_MAX];
	int fd = open(path_in(p, dir, name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK(write(fd, b, n) == (ssize_t)n);
	close(fd);
}

static bool file_is(const char *dir, const char *name, const void *b, size_t n)
{
	size_t m;
	uint8_t *cur = file_get(dir, name, &m);
	bool same = cur != NULL && m == n && memcmp(cur, b, n) == 0;

	free(cur);
	return same;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint64_t rsize(uint32_t len)
{
	return ((uint64_t)REC_HDR + len + 7) & ~(uint64_t)7;
}

/* Offsets of the records of a log image, from the documented layout. */
static size_t walk(const uint8_t *b, size_t n, uint64_t *offs, size_t max)
{
	size_t k = 0;

	for (uint64_t o = HDR; o + REC_HDR <= n && k < max; o += rsize(le32(b + o)))
		offs[k++] = o;
	return k;
}

/* A payload that tells its seq: 8 bytes of seq, then a pattern of it.  Most
 * are short; one in 64 is long, so kills land inside big writes too. */
static size_t gen_payload(uint64_t seq, uint8_t *buf)
{
	uint64_t r = mix(seq + 1);
	size_t n = r % 64 == 0 ? 16384 + (size_t)(r >> 8) % (256 << 10) : (size_t)(r >> 8) % 600;

	for (size_t i = 0; i < n; i++)
		buf[i] = i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq * 31 + i * 7);
	return n;
}

static uint8_t gen_type(uint64_t seq)
{
	return (uint8_t)(1 + seq % HIST_MAX_TYPE);
}

#define GEN_MAX (16384 + (256 << 10))

static int append_gen(struct hist_log *l, uint8_t *buf)
{
	uint64_t seq = hist_next_seq(l), got = UINT64_MAX;
	size_t n = gen_payload(seq, buf);
	int rc = hist_append(l, gen_type(seq), buf, n, &got);

	if (rc == 0 && got != seq)
		return -EPROTO;
	return rc;
}

struct gen_check {
	uint64_t next, bad, count;
	uint8_t *buf;
};

static int gen_check_fn(void *arg, uint64_t seq, uint8_t type, const void *p, size_t len)
{
	struct gen_check *g = arg;
	size_t n = gen_payload(seq, g->buf);

	if (seq != g->next || type != gen_type(seq) || len != n || memcmp(p, g->buf, n) != 0)
		g->bad++;
	g->next = seq + 1;
	g->count++;
	return 0;
}

/* Every record from `from` on is gen's, in order; the count of them or -1. */
static long long check_gen(struct hist_log *l, uint64_t from)
{
	struct gen_check g = { .next = from, .buf = malloc(GEN_MAX) };
	int rc = hist_iterate(l, from, gen_check_fn, &g);

	free(g.buf);
	if (rc != 0 || g.bad != 0 || g.next != hist_next_seq(l))
		return -1;
	return (long long)g.count;
}

/* A log of n gen records in a new directory, closed. */
static char *make_log(uint64_t n)
{
	char *d = tdir_new();
	uint8_t *buf = malloc(GEN_MAX);
	struct hist_log *l = NULL;

	CHECK_EQ_INT(hist_open(d, &l, NULL, NULL), 0);
	for (uint64_t i = 0; l != NULL && i < n; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	hist_close(l);
	free(buf);
	return d;
}

static void sha256(const void *p, size_t n, uint8_t out[32])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, n, p);
	sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

static const char *hex32(char out[65], const uint8_t h[32])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	return out;
}

static int fds_without_cloexec(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name), fl;

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		if ((fl = fcntl(fd, F_GETFD)) >= 0 && !(fl & FD_CLOEXEC))
			n++;
	}
	closedir(d);
	return n;
}

/* ---- CRC32C ------------------------------------------------------------------ */

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int i = 0; i < 8; i++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

static void test_crc32c(void)
{
	/* RFC 3720 B.4: the iSCSI read command PDU. */
	static const uint8_t pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t b[32];
	uint8_t *big;
	size_t bn = (1 << 20) + 13;
	bool same = true, chained = true;

	CHECK_EQ_INT(hist_crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_INT(hist_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_INT(hist_crc32c(0, "", 0), 0);
	CHECK_EQ_INT(hist_crc32c(0, NULL, 0), 0);
	memset(b, 0, sizeof b);
	CHECK_EQ_INT(hist_crc32c(0, b, 32), 0x8A9136AAu);
	CHECK_EQ_INT(hist_crc32c_sw(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, sizeof b);
	CHECK_EQ_INT(hist_crc32c(0, b, 32), 0x62A8AB43u);
	CHECK_EQ_INT(hist_crc32c_sw(0, b, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	CHECK_EQ_INT(hist_crc32c(0, b, 32), 0x46DD794Eu);
	CHECK_EQ_INT(hist_crc32c_sw(0, b, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	CHECK_EQ_INT(hist_crc32c(0, b, 32), 0x113FDB5Cu);
	CHECK_EQ_INT(hist_crc32c_sw(0, b, 32), 0x113FDB5Cu);
	CHECK_EQ_INT(hist_crc32c(0, pdu, 48), 0xD9963A56u);
	CHECK_EQ_INT(hist_crc32c_sw(0, pdu, 48), 0xD9963A56u);

	/* Both implementations against a bitwise reference, every alignment and
	 * the lengths around the 8-byte steps; chaining at every split. */
	big = malloc(bn + 8);
	for (size_t i = 0; i < bn + 8; i++)
		big[i] = (uint8_t)mix(i);
	for (size_t a = 0; a < 8; a++)
		for (size_t n = 0; n < 300; n++) {
			uint32_t want = crc_bitwise(big + a, n);

			if (hist_crc32c(0, big + a, n) != want || hist_crc32c_sw(0, big + a, n) != want)
				same = false;
		}
	for (size_t k = 0; k <= 100; k++)
		if (hist_crc32c(hist_crc32c(0, big, k), big + k, 100 - k) != crc_bitwise(big, 100) ||
		    hist_crc32c_sw(hist_crc32c_sw(0, big, k), big + k, 100 - k) != crc_bitwise(big, 100))
			chained = false;
	CHECK(same);
	CHECK(chained);
	CHECK_EQ_INT(hist_crc32c(0, big + 3, bn), hist_crc32c_sw(0, big + 3, bn));
	CHECK_EQ_INT(hist_crc32c(0, big + 3, bn), crc_bitwise(big + 3, bn));
	printf("crc32c: %s\n", hist_crc32c_hw() ? "SSE4.2 instruction (tables checked too)"
					       : "slicing-by-8 tables");
	free(big);
}

/* ---- open, append, iterate ------------------------------------------------ */

static int count_fn(void *arg, uint64_t seq, uint8_t type, const void *p, size_t len)
{
	(void)seq, (void)type, (void)p, (void)len;
	++*(int *)arg;
	return 0;
}

static void test_empty(void)
{
	struct hist_open_info info = { 1, 1, 1 };
	struct hist_log *l = NULL, *l2 = NULL;
	struct hist_error err;
	char *d = tdir_new();
	char p[PATH_MAX];
	struct stat st;
	uint64_t n = 99;
	int calls = 0, before = fds_without_cloexec();
	mode_t um = umask(0);   /* the 0600 must come from us, not the umask */

	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	umask(um);
	CHECK_EQ_INT(info.base_seq, 0);
	CHECK_EQ_INT(info.next_seq, 0);
	CHECK_EQ_INT(info.truncated, 0);
	CHECK(stat(path_in(p, d, "history.log"), &st) == 0);
	CHECK_EQ_INT(st.st_size, 64);
	CHECK_EQ_INT(st.st_mode & 07777, 0600);
	CHECK_EQ_INT(fds_without_cloexec(), before);
	CHECK_EQ_INT(hist_next_seq(l), 0);
	CHECK_EQ_INT(hist_base_seq(l), 0);
	CHECK_EQ_INT(hist_iterate(l, 0, count_fn, &calls), 0);
	CHECK_EQ_INT(calls, 0);
	CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
	CHECK_EQ_INT(hist_sync(l, 0), 0);
	CHECK_EQ_INT(hist_sync(l, 1), -EINVAL);

	/* One writer per directory. */
	CHECK_EQ_INT(hist_open(d, &l2, NULL, &err), -EBUSY);
	CHECK_EQ_INT(err.code, -EBUSY);
	CHECK(strstr(err.msg, "open elsewhere") != NULL);
	CHECK_EQ_INT(hist_verify(d, &n, &err), 0);
	CHECK_EQ_INT(n, 0);
	hist_close(l);
	hist_close(NULL);

	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.next_seq, 0);
	/* An empty log hashes nothing at open: the first append makes the log's
	 * first hash, and the chain it starts is the one the verifier and a
	 * reopen (which hash from the start) check. */
	uint64_t seq = 99;
	CHECK_EQ_INT(hist_append(l, 1, "first", 5, &seq), 0);
	CHECK_EQ_INT(seq, 0);
	CHECK_EQ_INT(hist_append(l, 1, "second", 6, &seq), 0);
	CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
	hist_close(l);
	CHECK_EQ_INT(hist_verify(d, &n, &err), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.next_seq, 2);
	CHECK_EQ_INT(hist_iterate(l, 0, count_fn, &calls), 0);
	CHECK_EQ_INT(calls, 2);
	hist_close(l);

	/* The directory must exist; nothing is created for it. */
	CHECK_EQ_INT(hist_open(path_in(p, d, "nope"), &l, NULL, &err), -ENOENT);
	CHECK_EQ_INT(err.code, -ENOENT);
	CHECK_EQ_INT(hist_verify(path_in(p, d, "nope"), &n, &err), -ENOENT);
	tdir_free(d);
}

struct collect {
	size_t n, cap;
	uint64_t *seq;
	uint8_t *type;
	uint8_t **p;
	size_t *len;
	int stop_at;            /* return 7 at this call (1-based), 0: never */
};

static int collect_fn(void *arg, uint64_t seq, uint8_t type, const void *p, size_t len)
{
	struct collect *c = arg;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->seq = realloc(c->seq, c->cap * sizeof *c->seq);
		c->type = realloc(c->type, c->cap);
		c->p = realloc(c->p, c->cap * sizeof *c->p);
		c->len = realloc(c->len, c->cap * sizeof *c->len);
	}
	c->seq[c->n] = seq;
	c->type[c->n] = type;
	c->p[c->n] = malloc(len + 1);
	memcpy(c->p[c->n], p, len);
	c->len[c->n] = len;
	c->n++;
	return c->stop_at != 0 && (size_t)c->stop_at == c->n ? 7 : 0;
}

static void collect_free(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->p[i]);
	free(c->seq), free(c->type), free(c->p), free(c->len);
	memset(c, 0, sizeof *c);
}

static void test_roundtrip(void)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 13, 100, 4096, HIST_MAX_PAYLOAD, 5, 0 };
	const size_t n = sizeof sizes / sizeof sizes[0];
	struct hist_open_info info;
	struct hist_log *l = NULL;
	struct collect c = { 0 };
	struct hist_error err;
	char *d = tdir_new();
	uint8_t *big = malloc(HIST_MAX_PAYLOAD + 16);     /* record i starts at big + i */
	uint8_t *file0, *buf = malloc(GEN_MAX);
	size_t n0, n1;
	uint64_t seq, cnt;
	bool ok = true;

	for (size_t i = 0; i < HIST_MAX_PAYLOAD + 16; i++)
		big[i] = (uint8_t)mix(i);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_INT(hist_append(l, (uint8_t)(1 + i % HIST_MAX_TYPE), big + i, sizes[i], &seq), 0);
		CHECK_EQ_INT(seq, i);
	}
	CHECK_EQ_INT(hist_next_seq(l), n);

	/* Refused appends write nothing and take no seq. */
	file0 = file_get(d, "history.log", &n0);
	CHECK_EQ_INT(hist_append(l, 0, "x", 1, &seq), -EINVAL);
	CHECK_EQ_INT(hist_append(l, HIST_MAX_TYPE + 1, "x", 1, &seq), -EINVAL);
	CHECK_EQ_INT(hist_append(l, 1, big, HIST_MAX_PAYLOAD + 1, &seq), -EINVAL);
	CHECK_EQ_INT(hist_append(l, 1, NULL, 3, &seq), -EINVAL);
	CHECK(file_is(d, "history.log", file0, n0));
	CHECK_EQ_INT(hist_next_seq(l), n);
	CHECK_EQ_INT(hist_append(l, 1, NULL, 0, NULL), 0);      /* NULL, 0 is an empty payload */
	free(file0);

	CHECK_EQ_INT(hist_iterate(l, 0, collect_fn, &c), 0);
	CHECK_EQ_INT(c.n, n + 1);
	for (size_t i = 0; i < n && i < c.n; i++)
		if (c.seq[i] != i || c.type[i] != 1 + i % HIST_MAX_TYPE || c.len[i] != sizes[i] ||
		    memcmp(c.p[i], big + i, sizes[i]) != 0)
			ok = false;
	CHECK(ok);
	collect_free(&c);

	/* From the middle, and stopping early. */
	CHECK_EQ_INT(hist_iterate(l, 4, collect_fn, &c), 0);
	CHECK_EQ_INT(c.n, n + 1 - 4);
	CHECK(c.n > 0 && c.seq[0] == 4 && c.len[0] == 13);
	collect_free(&c);
	c.stop_at = 2;
	CHECK_EQ_INT(hist_iterate(l, 0, collect_fn, &c), 7);
	CHECK_EQ_INT(c.n, 2);
	collect_free(&c);
	CHECK_EQ_INT(hist_iterate(l, n + 1, collect_fn, &c), 0);
	CHECK_EQ_INT(hist_iterate(l, 1000, collect_fn, &c), 0);
	CHECK_EQ_INT(c.n, 0);
	CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
	hist_close(l);

	/* Reopen: same records, numbering goes on. */
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.base_seq, 0);
	CHECK_EQ_INT(info.next_seq, n + 1);
	CHECK_EQ_INT(info.truncated, 0);
	CHECK_EQ_INT(hist_iterate(l, 0, collect_fn, &c), 0);
	CHECK_EQ_INT(c.n, n + 1);
	CHECK(c.n > 7 && c.len[7] == HIST_MAX_PAYLOAD && memcmp(c.p[7], big + 7, HIST_MAX_PAYLOAD) == 0);
	collect_free(&c);
	CHECK_EQ_INT(hist_append(l, 2, "after", 5, &seq), 0);
	CHECK_EQ_INT(seq, n + 1);

	/* Enough records to cross the sparse index: iterate from inside. */
	for (int i = 0; i < 1500; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	CHECK_EQ_INT(hist_iterate(l, 600, collect_fn, &c), 0);
	CHECK_EQ_INT(c.n, hist_next_seq(l) - 600);
	CHECK(c.n > 0 && c.seq[0] == 600 && c.seq[c.n - 1] == hist_next_seq(l) - 1);
	collect_free(&c);
	CHECK_EQ_INT(check_gen(l, n + 2), 1500);
	hist_close(l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, n + 2 + 1500);
	file0 = file_get(d, "history.log", &n1);
	CHECK(file0 != NULL && n1 % 8 == 0);
	free(file0);
	free(big);
	free(buf);
	tdir_free(d);
}

struct appender {
	struct hist_log *l;
	int seen, bad;
};

static int append_fn(void *arg, uint64_t seq, uint8_t type, const void *p, size_t len)
{
	struct appender *a = arg;

	(void)type, (void)p, (void)len;
	if (seq != (uint64_t)a->seen++ || hist_append(a->l, 2, "more", 4, NULL) != 0)
		a->bad++;
	return 0;
}

/* The callback appends as it goes: the walk stops where the log ended. */
static void test_iterate_append(void)
{
	struct appender a = { 0 };
	struct hist_error err;
	char *d = make_log(300);
	uint64_t cnt;

	CHECK_EQ_INT(hist_open(d, &a.l, NULL, &err), 0);
	CHECK_EQ_INT(hist_iterate(a.l, 0, append_fn, &a), 0);
	CHECK_EQ_INT(a.seen, 300);
	CHECK_EQ_INT(a.bad, 0);
	CHECK_EQ_INT(hist_next_seq(a.l), 600);
	hist_close(a.l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 600);
	tdir_free(d);
}

/* A write that stops part-way (here: the file size limit): the append fails,
 * every later one too, and reopening cuts what it left. */
static void test_write_failure(void)
{
	struct hist_open_info info;
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = make_log(5);
	char p[PATH_MAX];
	uint8_t pay[1000];
	struct rlimit old, lim;
	struct stat st;
	void (*oldsig)(int);

	memset(pay, 'w', sizeof pay);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK(stat(path_in(p, d, "history.log"), &st) == 0);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	oldsig = signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 500;
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	CHECK_EQ_INT(hist_append(l, 1, pay, sizeof pay, NULL), -EFBIG);
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	signal(SIGXFSZ, oldsig);
	CHECK(stat(p, &st) == 0 && (rlim_t)st.st_size == lim.rlim_cur);       /* a partial record */
	CHECK_EQ_INT(hist_append(l, 1, "x", 1, NULL), -EFBIG);          /* sticky */
	CHECK_EQ_INT(hist_next_seq(l), 5);
	CHECK_EQ_INT(check_gen(l, 0), 5);       /* what was written reads fine */
	hist_close(l);

	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.truncated, 500);
	CHECK_EQ_INT(info.next_seq, 5);
	CHECK_EQ_INT(hist_append(l, 1, pay, sizeof pay, NULL), 0);
	hist_close(l);
	tdir_free(d);
}

/* ---- recovery: torn tails and damage ------------------------------------- */

static void test_torn_tail(void)
{
	static const size_t sizes[] = { 30, 50, 200, 17, 100 };
	struct hist_open_info info;
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = tdir_new();
	uint8_t pay[256], *img, *tmp;
	uint64_t offs[8], last, cnt;
	size_t n;
	bool ok = true;

	for (size_t i = 0; i < sizeof pay; i++)
		pay[i] = (uint8_t)(i * 13 + 1);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	for (size_t i = 0; i < 5; i++)
		CHECK_EQ_INT(hist_append(l, 1, pay, sizes[i], NULL), 0);
	hist_close(l);
	img = file_get(d, "history.log", &n);
	CHECK_EQ_INT(walk(img, n, offs, 8), 5);
	last = offs[4];
	CHECK_EQ_INT(n, last + rsize(100));

	/* Every cut inside the last record: verify reports it, open drops it. */
	for (uint64_t cut = last; cut < n; cut++) {
		bool ok1;

		file_put(d, "history.log", img, cut);
		ok1 = hist_verify(d, &cnt, &err) == (cut == last ? 0 : -EUCLEAN) && cnt == 4 &&
		      file_is(d, "history.log", img, cut);
		if (cut > last)
			ok1 = ok1 && err.code == -EUCLEAN && err.offset == last && err.seq == 4 &&
			      strstr(err.msg, "torn tail") != NULL;
		ok1 = ok1 && hist_open(d, &l, &info, &err) == 0;
		if (ok1) {
			struct collect c = { 0 };

			ok1 = info.truncated == cut - last && info.next_seq == 4 &&
			      hist_iterate(l, 0, collect_fn, &c) == 0 && c.n == 4 &&
			      c.len[3] == 17 && memcmp(c.p[3], pay, 17) == 0 &&
			      file_is(d, "history.log", img, last);
			collect_free(&c);
			ok1 = ok1 && hist_append(l, 1, pay, 100, NULL) == 0;
			hist_close(l);
			/* The record appended again is byte for byte the one cut. */
			ok1 = ok1 && file_is(d, "history.log", img, n);
		}
		if (!ok1) {
			fprintf(stderr, "  torn tail at cut %llu: %s\n", (unsigned long long)cut, err.msg);
			ok = false;
		}
	}
	CHECK(ok);

	/* The last record whole but its CRC failing: torn, it runs to the end. */
	tmp = malloc(n + 4096);
	memcpy(tmp, img, n);
	tmp[last + 60] ^= 0x10;
	file_put(d, "history.log", tmp, n);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), -EUCLEAN);
	CHECK_EQ_INT(err.offset, last);
	CHECK(strstr(err.msg, "CRC mismatch") != NULL);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.truncated, rsize(100));
	CHECK_EQ_INT(info.next_seq, 4);
	hist_close(l);

	/* Zeros after the last record (a size that reached the disk before the
	 * data did) are a torn tail too. */
	memcpy(tmp, img, n);
	memset(tmp + n, 0, 4096);
	file_put(d, "history.log", tmp, n + 4096);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), -EUCLEAN);
	CHECK_EQ_INT(err.offset, n);
	CHECK_EQ_INT(err.seq, 5);
	CHECK(strstr(err.msg, "impossible type 0") != NULL);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.truncated, 4096);
	CHECK_EQ_INT(info.next_seq, 5);
	hist_close(l);
	CHECK(file_is(d, "history.log", img, n));

	/* A tail too short for a record header. */
	memcpy(tmp, img, n);
	memset(tmp + n, 0xAB, 20);
	file_put(d, "history.log", tmp, n + 20);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.truncated, 20);
	hist_close(l);

	/* A cut-short record whose bytes are full of record-like headers: the
	 * search for intact records behind it gives up, and the file is
	 * refused (quickly), not truncated. */
	{
		size_t tail = 2u << 20;
		uint8_t *t2 = malloc(n + tail);
		double t0 = now_s();

		memcpy(t2, img, n);
		memset(t2 + n, 0, tail);
		t2[n + 2] = 0x80;               /* length 8 MiB: runs past the end */
		t2[n + 4] = 1;
		for (size_t o = n + 48; o + 8 <= n + tail; o += 8) {
			t2[o + 2] = 0x01;       /* each word a header claiming 64 KiB */
			t2[o + 4] = 1;
		}
		file_put(d, "history.log", t2, n + tail);
		CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
		CHECK_EQ_INT(err.offset, n);
		CHECK(strstr(err.msg, "too many record-like bytes") != NULL);
		CHECK(now_s() - t0 < 5);
		CHECK(file_is(d, "history.log", t2, n + tail));
		free(t2);
	}

	/* The price of failing closed (log.h): a record whose payload holds an
	 * intact record at an 8-aligned file offset, cut after it, is refused. */
	{
		size_t m;
		uint8_t *inner, *img2;
		uint64_t o2[8];

		file_put(d, "history.log", img, n);
		CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
		inner = calloc(1, 4 + rsize(17) + 16);
		memcpy(inner + 4, img + offs[3], rsize(17));     /* payload starts 4 past 8 */
		CHECK_EQ_INT(hist_append(l, 1, inner, 4 + rsize(17) + 16, NULL), 0);
		hist_close(l);
		img2 = file_get(d, "history.log", &m);
		CHECK_EQ_INT(walk(img2, m, o2, 8), 6);
		file_put(d, "history.log", img2, m - 1);
		CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
		CHECK_EQ_INT(err.offset, o2[5]);
		CHECK(strstr(err.msg, "an intact record follows") != NULL);
		free(img2);
		free(inner);
	}

	free(tmp);
	free(img);
	tdir_free(d);
}

/* What open must say about a byte flipped at rel in a record of len bytes at
 * off, the file being n bytes. */
static const char *damage_reason(const uint8_t *img, size_t n, uint64_t off, size_t rel)
{
	uint32_t len = le32(img + off);

	if (rel < 4) {
		if (len > HIST_MAX_PAYLOAD)
			return "impossible length";
		if (rsize(len) > n - off)
			return "runs past the end of the file";
		return "CRC mismatch";
	}
	if (rel == 4)
		return img[off + 4] == 0 || img[off + 4] > HIST_MAX_TYPE ? "impossible type"
									 : "CRC mismatch";
	if (rel < 8)
		return "nonzero reserved bytes";
	if (rel < REC_HDR + (size_t)len)
		return "CRC mismatch";
	return "nonzero padding";
}

static void test_damage(void)
{
	static const size_t sizes[] = { 40, 13, 77, 25, 60 };
	static const uint8_t masks[] = { 0x01, 0x80, 0xFF };
	struct hist_log *l = NULL;
	struct hist_error err, verr;
	char *d = tdir_new();
	uint8_t pay[128], *img, *bad;
	uint64_t offs[8], cnt;
	size_t n, tried = 0;
	bool ok = true;

	for (size_t i = 0; i < sizeof pay; i++)
		pay[i] = (uint8_t)(i * 5 + 3);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	for (size_t i = 0; i < 5; i++)
		CHECK_EQ_INT(hist_append(l, (uint8_t)(i + 1), pay, sizes[i], NULL), 0);
	hist_close(l);
	img = file_get(d, "history.log", &n);
	CHECK_EQ_INT(walk(img, n, offs, 8), 5);
	bad = malloc(n);

	/* Every byte of every record but the last (whose damage is a torn tail),
	 * three ways: open and verify refuse at that record, nothing changes. */
	for (size_t r = 0; r < 4; r++)
		for (uint64_t i = offs[r]; i < offs[r + 1]; i++)
			for (size_t m = 0; m < sizeof masks; m++) {
				const char *want;
				int rc, vrc;

				memcpy(bad, img, n);
				bad[i] ^= masks[m];
				want = damage_reason(bad, n, offs[r], (size_t)(i - offs[r]));
				file_put(d, "history.log", bad, n);
				l = NULL;
				rc = hist_open(d, &l, NULL, &err);
				vrc = hist_verify(d, &cnt, &verr);
				tried++;
				if (rc != -EBADMSG || l != NULL || err.code != -EBADMSG ||
				    err.offset != offs[r] || err.seq != r || strstr(err.msg, want) == NULL ||
				    vrc != -EBADMSG || verr.offset != offs[r] || verr.seq != r || cnt != r ||
				    !file_is(d, "history.log", bad, n)) {
					fprintf(stderr, "  record %zu byte %llu ^%02x: rc %d, offset %llu, "
						"want \"%s\": %s\n", r, (unsigned long long)(i - offs[r]),
						masks[m], rc, (unsigned long long)err.offset, want, err.msg);
					ok = false;
				}
				hist_close(l);
			}
	CHECK(ok);
	CHECK(tried > 900);

	/* A length damaged so the record seems to run past the end: the
	 * records behind it say it is not a torn tail. */
	memcpy(bad, img, n);
	bad[offs[3] + 1] ^= 0x10;
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK(strstr(err.msg, "runs past the end") != NULL);
	CHECK(strstr(err.msg, "an intact record follows") != NULL);

	/* A record spliced out, records swapped: CRCs good, chain broken. */
	memcpy(bad, img, offs[2]);
	memcpy(bad + offs[2], img + offs[3], n - offs[3]);
	file_put(d, "history.log", bad, offs[2] + (n - offs[3]));
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK_EQ_INT(err.offset, offs[2]);
	CHECK_EQ_INT(err.seq, 2);
	CHECK(strstr(err.msg, "chain mismatch") != NULL);
	memcpy(bad, img, offs[1]);
	memcpy(bad + offs[1], img + offs[2], offs[3] - offs[2]);
	memcpy(bad + offs[1] + (offs[3] - offs[2]), img + offs[1], offs[2] - offs[1]);
	memcpy(bad + offs[3], img + offs[3], n - offs[3]);
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK_EQ_INT(err.offset, offs[1]);
	CHECK(strstr(err.msg, "chain mismatch") != NULL);

	/* Damage in the middle with a torn record after it is still damage:
	 * only the last record may be cut, and this one was whole. */
	memcpy(bad, img, n);
	bad[offs[2] + 50] ^= 1;
	file_put(d, "history.log", bad, offs[4] + 20);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK_EQ_INT(err.offset, offs[2]);
	CHECK(strstr(err.msg, "CRC mismatch") != NULL);
	CHECK(file_is(d, "history.log", bad, offs[4] + 20));

	/* Sanity: the undamaged image still opens. */
	file_put(d, "history.log", img, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	hist_close(l);
	free(bad);
	free(img);
	tdir_free(d);
}

/* Put a header with these fields and a good CRC on img. */
static void forge_header(uint8_t *img, uint64_t base, const uint8_t seed[32])
{
	for (int i = 0; i < 8; i++)
		img[16 + i] = (uint8_t)(base >> (8 * i));
	memcpy(img + 24, seed, 32);
	uint32_t crc = hist_crc32c(0, img, 56);
	for (int i = 0; i < 4; i++)
		img[56 + i] = (uint8_t)(crc >> (8 * i));
}

static void test_header(void)
{
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = make_log(3);
	char p[PATH_MAX];
	uint8_t *img, *bad, seed[32];
	uint64_t cnt;
	size_t n;
	bool ok = true;

	img = file_get(d, "history.log", &n);
	bad = malloc(n);
	for (size_t i = 0; i < HDR; i++) {
		memcpy(bad, img, n);
		bad[i] ^= 0x04;
		file_put(d, "history.log", bad, n);
		l = NULL;
		if (hist_open(d, &l, NULL, &err) != -EBADMSG || l != NULL || err.offset != 0 ||
		    err.seq != HIST_NO_SEQ || hist_verify(d, &cnt, &err) != -EBADMSG ||
		    !file_is(d, "history.log", bad, n)) {
			fprintf(stderr, "  header byte %zu: %s\n", i, err.msg);
			ok = false;
		}
		hist_close(l);
	}
	CHECK(ok);

	/* Too short to hold a header, down to empty: nothing to recover from. */
	for (size_t k = 0; k < HDR; k += 21) {
		file_put(d, "history.log", img, k);
		CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
		CHECK(strstr(err.msg, "shorter than the 64-byte header") != NULL);
		CHECK(file_is(d, "history.log", img, k));
	}

	/* Fields that cannot go together, under a good CRC. */
	memcpy(bad, img, n);
	memset(seed, 0, sizeof seed);
	forge_header(bad, 7, seed);
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK(strstr(err.msg, "all-zero chain seed") != NULL);
	seed[5] = 1;
	forge_header(bad, 0, seed);
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK(strstr(err.msg, "nonzero chain seed") != NULL);
	/* A plausible seed that is not the one the first record chains to. */
	forge_header(bad, 9, seed);
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -EBADMSG);
	CHECK_EQ_INT(err.offset, 64);
	CHECK_EQ_INT(err.seq, 9);
	CHECK(strstr(err.msg, "chain mismatch: prev is not the chain seed") != NULL);

	/* A symlink is not followed. */
	unlink(path_in(p, d, "history.log"));
	file_put(d, "real", img, n);
	CHECK(symlink("real", p) == 0);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), -ELOOP);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), -ELOOP);
	free(bad);
	free(img);
	tdir_free(d);
}

/* The chain is on disk, so whichever library hashes it must give the same
 * bytes: each prev is the SHA-256 of the record before, header through
 * payload.  The digests below were computed outside cairn, by Python (the
 * records built from log.h's layout, CRC32C bit by bit, hashed with
 * hashlib.sha256) and checked with sha256sum; record 1 spans three SHA-256
 * blocks, so the hash is fed across block boundaries. */
static void test_known_chain(void)
{
	static const char h0[] = "2e11453b9a1ae7fb49cdb25c04bb207b31c7a13206f3623cdca9b421d49573b5";
	static const char h1[] = "76d64ba489c8e1535759171895547102140bd79f9b3c59918b40c0a8f6a9c1f5";
	static const uint8_t zero[32];
	struct hist_snap_point pt;
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = tdir_new(), hx[65];
	uint8_t payload[100], *img;
	uint64_t cnt = 0;
	size_t n = 0;

	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)('a' + i % 26);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_append(l, 1, "first", 5, NULL), 0);
	CHECK_EQ_INT(hist_append(l, 2, payload, sizeof payload, NULL), 0);
	hist_close(l);
	img = file_get(d, "history.log", &n);
	CHECK_EQ_INT(n, HDR + rsize(5) + rsize(100));
	if (img != NULL && n == HDR + rsize(5) + rsize(100)) {
		uint64_t r1 = HDR + rsize(5);
		CHECK(memcmp(img + HDR + 12, zero, 32) == 0);   /* a new log's seed */
		CHECK_EQ_STR(hex32(hx, img + r1 + 12), h0);     /* appended with the hash in memory */
	}
	free(img);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 2);
	/* Reopened, the chain's end is hashed from the file. */
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_snapshot_point(l, 2, &pt), 0);
	CHECK_EQ_STR(hex32(hx, pt.chain), h1);
	hist_close(l);
	tdir_free(d);
}

/* ---- compaction, snapshots, verify ---------------------------------------- */

static void test_compact(void)
{
	struct hist_open_info info;
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = make_log(1000);
	char p[PATH_MAX];
	uint8_t *img, *buf = malloc(GEN_MAX), h299[32];
	uint64_t offs[1100], cnt;
	struct stat st;
	size_t n;
	mode_t um;

	/* The seed after compaction must be the hash of record 299's bytes. */
	img = file_get(d, "history.log", &n);
	CHECK_EQ_INT(walk(img, n, offs, 1100), 1000);
	sha256(img + offs[299], REC_HDR + le32(img + offs[299]), h299);
	free(img);

	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	/* A stale temporary (a crashed compaction) must not decide anything. */
	file_put(d, "history.log.tmp", "junk", 4);
	chmod(path_in(p, d, "history.log.tmp"), 0644);
	um = umask(0);
	CHECK_EQ_INT(hist_compact(l, 300), 0);
	umask(um);
	CHECK(stat(path_in(p, d, "history.log"), &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK(access(path_in(p, d, "history.log.tmp"), F_OK) != 0);
	CHECK_EQ_INT(hist_base_seq(l), 300);
	CHECK_EQ_INT(hist_next_seq(l), 1000);
	img = file_get(d, "history.log", &n);
	CHECK(img != NULL && le64(img + 16) == 300 && memcmp(img + 24, h299, 32) == 0);
	free(img);
	CHECK_EQ_INT(check_gen(l, 300), 700);
	CHECK_EQ_INT(check_gen(l, 555), 445);
	CHECK_EQ_INT(check_gen(l, 556), 444);   /* from a checkpoint of the new index */
	CHECK_EQ_INT(hist_iterate(l, 299, gen_check_fn, NULL), -ENOENT);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 700);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
	hist_close(l);

	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.base_seq, 300);
	CHECK_EQ_INT(info.next_seq, 1010);
	CHECK_EQ_INT(hist_compact(l, 5), 0);                    /* below base: nothing */
	CHECK_EQ_INT(hist_compact(l, 300), 0);
	CHECK_EQ_INT(hist_compact(l, 1011), -EINVAL);
	CHECK_EQ_INT(hist_compact(l, 700), 0);
	CHECK_EQ_INT(check_gen(l, 700), 310);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 310);
	/* Everything: an empty file whose seed is the last record's hash. */
	CHECK_EQ_INT(hist_compact(l, 1010), 0);
	CHECK_EQ_INT(hist_base_seq(l), 1010);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 0);
	CHECK_EQ_INT(append_gen(l, buf), 0);
	hist_close(l);
	CHECK_EQ_INT(hist_open(d, &l, &info, &err), 0);
	CHECK_EQ_INT(info.base_seq, 1010);
	CHECK_EQ_INT(info.next_seq, 1011);
	CHECK_EQ_INT(check_gen(l, 1010), 1);
	for (int i = 0; i < 600; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	CHECK_EQ_INT(hist_compact(l, 1011 + 256), 0);   /* exactly on an old checkpoint */
	CHECK_EQ_INT(check_gen(l, 1011 + 256), 600 - 256);
	hist_close(l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 600 - 256);
	free(buf);
	tdir_free(d);
}

/* hist_sync on another thread while the log is compacted under it. */
struct syncer {
	struct hist_log *l;
	int stop;               /* __atomic */
	int bad;
	unsigned long n;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		if (hist_sync(s->l, UINT64_MAX) != 0)
			s->bad++;
		s->n++;
	}
	return NULL;
}

static void test_compact_while_syncing(void)
{
	struct syncer s = { 0 };
	struct hist_error err;
	char *d = tdir_new();
	uint8_t *buf = malloc(GEN_MAX);
	pthread_t t;
	uint64_t cnt;

	CHECK_EQ_INT(hist_open(d, &s.l, NULL, &err), 0);
	CHECK(pthread_create(&t, NULL, syncer_main, &s) == 0);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 100; i++)
			CHECK_EQ_INT(append_gen(s.l, buf), 0);
		CHECK_EQ_INT(hist_compact(s.l, hist_next_seq(s.l) - 50), 0);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(check_gen(s.l, hist_base_seq(s.l)), 50);
	hist_close(s.l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 50);
	free(buf);
	tdir_free(d);
}

static void test_snapshot(void)
{
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = tdir_new(), *d2;
	char p[PATH_MAX];
	uint8_t *buf = malloc(GEN_MAX), *snap, *bad, *log5 = NULL;
	void *blob = NULL;
	size_t len = 99, sn, n5 = 0;
	uint64_t upto = 99;
	struct stat st;
	bool ok = true;
	mode_t um;

	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -ENOENT);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ_INT(append_gen(l, buf), 0);
		if (i == 4) {
			CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
			log5 = file_get(d, "history.log", &n5);
		}
	}
	um = umask(0);
	CHECK_EQ_INT(hist_snapshot_write(l, 50, "state@50", 8), 0);
	umask(um);
	CHECK(stat(path_in(p, d, "snapshot"), &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), 0);
	CHECK(len == 8 && upto == 50 && blob != NULL && memcmp(blob, "state@50", 8) == 0);
	free(blob);
	blob = NULL;

	/* Out of range, and too big. */
	CHECK_EQ_INT(hist_snapshot_write(l, 101, "x", 1), -EINVAL);
	CHECK_EQ_INT(hist_snapshot_write(l, 5, NULL, 1), -EINVAL);
	CHECK_EQ_INT(hist_snapshot_write(l, 5, buf, (size_t)HIST_MAX_SNAPSHOT + 1), -EINVAL);

	/* The usual pair: snapshot, then compact to it; the seed is the hash. */
	CHECK_EQ_INT(hist_compact(l, 50), 0);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), 0);
	CHECK(upto == 50 && len == 8);
	free(blob);
	CHECK_EQ_INT(hist_snapshot_write(l, 49, "x", 1), -EINVAL);
	CHECK_EQ_INT(hist_snapshot_write(l, 100, NULL, 0), 0);  /* at next_seq, empty */
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), 0);
	CHECK(upto == 100 && len == 0 && blob != NULL);
	free(blob);
	CHECK_EQ_INT(hist_snapshot_write(l, 77, "mid", 3), 0);  /* hash read from the file */
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), 0);
	CHECK(upto == 77 && len == 3);
	free(blob);

	/* Damage anywhere: refused, never used. */
	snap = file_get(d, "snapshot", &sn);
	CHECK_EQ_INT(sn, 72 + 3);
	bad = malloc(sn + 1);
	for (size_t i = 0; i < sn; i++) {
		memcpy(bad, snap, sn);
		bad[i] ^= 0x20;
		file_put(d, "snapshot", bad, sn);
		blob = NULL;
		if (hist_snapshot_load(l, &blob, &len, &upto, &err) != -EINVAL || blob != NULL ||
		    err.code != -EINVAL || strstr(err.msg, "snapshot") == NULL) {
			fprintf(stderr, "  snapshot byte %zu: %s\n", i, err.msg);
			ok = false;
		}
	}
	CHECK(ok);
	file_put(d, "snapshot", snap, sn - 1);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);
	memcpy(bad, snap, sn);
	bad[sn] = 0;
	file_put(d, "snapshot", bad, sn + 1);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);
	file_put(d, "snapshot", snap, 40);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);

	/* Older than the log's base: the records after it are gone. */
	file_put(d, "snapshot", snap, sn);
	CHECK_EQ_INT(hist_compact(l, 80), 0);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);
	CHECK(strstr(err.msg, "the records between are gone") != NULL);
	hist_close(l);

	/* A snapshot of another log with as many records: the chain differs. */
	d2 = tdir_new();
	CHECK_EQ_INT(hist_open(d2, &l, NULL, &err), 0);
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(hist_append(l, 3, "other", 5, NULL), 0);
	file_put(d2, "snapshot", snap, sn);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);
	CHECK(strstr(err.msg, "chain hash at seq 77 differs") != NULL);
	hist_close(l);

	/* A log that lost records the snapshot covers. */
	file_put(d2, "history.log", log5, n5);
	CHECK_EQ_INT(hist_open(d2, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_next_seq(l), 5);
	CHECK_EQ_INT(hist_snapshot_load(l, &blob, &len, &upto, &err), -EINVAL);
	CHECK(strstr(err.msg, "the log ends at 5") != NULL);
	hist_close(l);

	free(log5);
	free(bad);
	free(snap);
	free(buf);
	tdir_free(d2);
	tdir_free(d);
}

static void test_verify(void)
{
	struct hist_log *l = NULL;
	struct hist_error err;
	char *d = make_log(10);
	uint8_t *img, *bad;
	uint64_t offs[16], cnt = 99;
	size_t n;

	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 10);
	CHECK_EQ_INT(err.code, 0);
	img = file_get(d, "history.log", &n);
	CHECK_EQ_INT(walk(img, n, offs, 16), 10);
	bad = malloc(n);

	/* Two bad records: the first is named. */
	memcpy(bad, img, n);
	bad[offs[6] + 20] ^= 1;
	bad[offs[3] + 20] ^= 1;
	file_put(d, "history.log", bad, n);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), -EBADMSG);
	CHECK_EQ_INT(err.seq, 3);
	CHECK_EQ_INT(err.offset, offs[3]);
	CHECK_EQ_INT(cnt, 3);
	{
		char want[64];

		snprintf(want, sizeof want, "offset %llu: record 3: CRC mismatch",
			 (unsigned long long)offs[3]);
		CHECK(strstr(err.msg, want) != NULL);
	}
	CHECK(file_is(d, "history.log", bad, n));

	/* Torn: reported as such, and left alone. */
	file_put(d, "history.log", img, n - 3);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), -EUCLEAN);
	CHECK_EQ_INT(err.seq, 9);
	CHECK_EQ_INT(err.offset, offs[9]);
	CHECK_EQ_INT(cnt, 9);
	CHECK(file_is(d, "history.log", img, n - 3));

	/* Verify needs no lock: it runs beside an open log. */
	file_put(d, "history.log", img, n);
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 10);
	hist_close(l);
	free(bad);
	free(img);
	tdir_free(d);
}

/* ---- group commit ------------------------------------------------------------ */

#define GC_THREADS 8
#define GC_PER_THREAD 3000

struct gc_shared {
	struct hist_log *l;
	pthread_mutex_t lock;   /* the caller's lock: appends are serialised */
	int bad;
};

struct gc_thread {
	struct gc_shared *sh;
	int id;
};

static void *gc_main(void *arg)
{
	struct gc_thread *t = arg;
	struct gc_shared *sh = t->sh;
	/* Threads sync every record, every 16 or every 64, some with an exact
	 * bound and some with "everything so far". */
	int every = t->id % 3 == 0 ? 1 : t->id % 3 == 1 ? 16 : 64;

	for (int i = 0; i < GC_PER_THREAD; i++) {
		char p[32];
		uint64_t seq;
		int n = snprintf(p, sizeof p, "t%d:%d", t->id, i), rc;

		pthread_mutex_lock(&sh->lock);
		rc = hist_append(sh->l, HIST_EVENT, p, (size_t)n, &seq);
		pthread_mutex_unlock(&sh->lock);
		if (rc == 0 && (i + 1) % every == 0)
			rc = hist_sync(sh->l, t->id & 1 ? seq + 1 : UINT64_MAX);
		if (rc != 0)
			__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

struct gc_seen {
	int next[GC_THREADS];
	int bad;
};

static int gc_check_fn(void *arg, uint64_t seq, uint8_t type, const void *p, size_t len)
{
	struct gc_seen *s = arg;
	char buf[32];
	int t, i;

	(void)seq;
	if (type != HIST_EVENT || len >= sizeof buf) {
		s->bad++;
		return 0;
	}
	memcpy(buf, p, len);
	buf[len] = '\0';
	if (sscanf(buf, "t%d:%d", &t, &i) != 2 || t < 0 || t >= GC_THREADS || i != s->next[t])
		s->bad++;
	else
		s->next[t]++;
	return 0;
}

static void test_group_commit(void)
{
	struct gc_shared sh = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct gc_thread th[GC_THREADS];
	pthread_t tid[GC_THREADS];
	struct gc_seen seen = { { 0 }, 0 };
	struct hist_open_info info;
	struct hist_error err;
	char *d = tdir_new();
	uint64_t cnt;
	bool all = true;

	CHECK_EQ_INT(hist_open(d, &sh.l, NULL, &err), 0);
	for (int i = 0; i < GC_THREADS; i++) {
		th[i] = (struct gc_thread){ &sh, i };
		CHECK(pthread_create(&tid[i], NULL, gc_main, &th[i]) == 0);
	}
	for (int i = 0; i < GC_THREADS; i++)
		pthread_join(tid[i], NULL);
	CHECK_EQ_INT(sh.bad, 0);
	CHECK_EQ_INT(hist_next_seq(sh.l), GC_THREADS * GC_PER_THREAD);
	CHECK_EQ_INT(hist_iterate(sh.l, 0, gc_check_fn, &seen), 0);
	CHECK_EQ_INT(seen.bad, 0);
	for (int i = 0; i < GC_THREADS; i++)
		all = all && seen.next[i] == GC_PER_THREAD;
	CHECK(all);
	hist_close(sh.l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, GC_THREADS * GC_PER_THREAD);
	CHECK_EQ_INT(hist_open(d, &sh.l, &info, &err), 0);
	CHECK_EQ_INT(info.next_seq, GC_THREADS * GC_PER_THREAD);
	hist_close(sh.l);
	tdir_free(d);
}

/* ---- crash: SIGKILL a writer at random moments ----------------------------- */

/* The child: append gen records forever, reporting each seq once
 * hist_append has returned; sync every 64; now and then snapshot and
 * compact to the snapshot, as the supervisor would. */
static void crash_writer(const char *dir, int wfd, uint64_t seed)
{
	struct hist_log *l;
	struct hist_error err;
	uint8_t *buf = malloc(GEN_MAX);
	char blob[32];

	rng_state = seed | 1;
	if (buf == NULL || hist_open(dir, &l, NULL, &err) != 0) {
		dprintf(2, "  writer: open: %s\n", err.msg);
		_exit(3);
	}
	for (;;) {
		uint64_t seq = hist_next_seq(l);
		int rc = append_gen(l, buf);

		if (rc != 0) {
			dprintf(2, "  writer: append %llu: %d\n", (unsigned long long)seq, rc);
			_exit(4);
		}
		if (write(wfd, &seq, sizeof seq) != (ssize_t)sizeof seq)
			_exit(5);
		if (seq % 64 == 63 && hist_sync(l, UINT64_MAX) != 0)
			_exit(6);
		if (hist_next_seq(l) - hist_base_seq(l) > 1500 && rng() % 256 == 0) {
			uint64_t upto = hist_next_seq(l) - 500;
			int n = snprintf(blob, sizeof blob, "snap@%llu", (unsigned long long)upto);

			if (hist_snapshot_write(l, upto, blob, (size_t)n) != 0 ||
			    hist_compact(l, upto) != 0)
				_exit(7);
		}
	}
}

struct reports {
	int fd;
	bool any, eof;
	uint64_t max, total;
};

/* Take in the child's reports until deadline (or, with until_first, the
 * first one), or EOF. */
static void reports_read(struct reports *r, double deadline, bool until_first)
{
	while (!r->eof && !(until_first && r->any)) {
		double left = deadline - now_s();
		struct timespec ts = { 0, 0 };
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		uint64_t v[512];
		ssize_t n;

		if (left <= 0 && deadline > 0)
			break;
		if (left > 0) {
			ts.tv_sec = (time_t)left;
			ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		}
		if (ppoll(&pfd, 1, deadline > 0 ? &ts : NULL, NULL) <= 0)
			continue;
		if ((n = read(r->fd, v, sizeof v)) <= 0) {
			r->eof = n == 0 || errno != EINTR;
			continue;
		}
		/* 8-byte writes to a pipe arrive whole. */
		for (ssize_t i = 0; i < n / 8; i++, r->any = true)
			r->max = v[i] > r->max ? v[i] : r->max;
		r->total += (uint64_t)(n / 8);
	}
}

static void test_crash(void)
{
	const char *env = getenv("CAIRN_HISTORY_KILL_CYCLES");
	const char *senv = getenv("CAIRN_HISTORY_SEED");
	long cycles = env != NULL ? strtol(env, NULL, 10) : 50;
	uint64_t seed = senv != NULL ? strtoull(senv, NULL, 10)
				     : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	char *d = tdir_new();
	uint8_t *buf = malloc(GEN_MAX);
	long torn = 0, fails = 0, snaps = 0;
	uint64_t reported_total = 0;
	double t0 = now_s();

	printf("crash: %ld kill cycles, CAIRN_HISTORY_SEED=%llu\n", cycles, (unsigned long long)seed);
	fflush(stdout);
	rng_state = seed | 1;
	for (long cyc = 0; cyc < cycles; cyc++) {
		struct hist_open_info info;
		struct hist_log *l = NULL;
		struct hist_error err;
		struct reports rep = { 0 };
		uint64_t max_rep, cnt, seq;
		bool any, ok = true;
		int p[2], status;
		pid_t pid;

		if (pipe2(p, O_CLOEXEC) != 0) {
			CHECK(0);
			break;
		}
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			crash_writer(d, p[1], rng());
			_exit(1);
		}
		close(p[1]);
		/* Kill at a random moment: mostly while it appends, one time in
		 * eight while it may still be recovering the last cycle's log. */
		rep.fd = p[0];
		if (rng() % 8 == 0) {
			reports_read(&rep, now_s() + (double)(rng() % 3000) / 1e6, false);
		} else {
			reports_read(&rep, now_s() + 10, true);
			reports_read(&rep, now_s() + (double)(rng() % 8000) / 1e6, false);
		}
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			fprintf(stderr, "  cycle %ld: writer ended on its own (status %#x)\n", cyc, status);
			ok = false;
		}
		reports_read(&rep, 0, false);
		reported_total += rep.total;
		max_rep = rep.max;
		any = rep.any;
		close(p[0]);

		/* Every reported record is there (the log is contiguous from base
		 * and goes past the highest report), with its payload. */
		if (hist_open(d, &l, &info, &err) != 0) {
			fprintf(stderr, "  cycle %ld: open: %s\n", cyc, err.msg);
			ok = false;
		} else {
			void *blob;
			size_t blen;
			uint64_t upto;
			int rc;

			torn += info.truncated > 0;
			if (any && max_rep >= info.next_seq) {
				fprintf(stderr, "  cycle %ld: reported %llu, log ends at %llu\n", cyc,
					(unsigned long long)max_rep, (unsigned long long)info.next_seq);
				ok = false;
			}
			if (check_gen(l, info.base_seq) != (long long)(info.next_seq - info.base_seq)) {
				fprintf(stderr, "  cycle %ld: records do not match their seqs\n", cyc);
				ok = false;
			}
			if (hist_verify(d, &cnt, &err) != 0 || cnt != info.next_seq - info.base_seq) {
				fprintf(stderr, "  cycle %ld: verify: %s\n", cyc, err.msg);
				ok = false;
			}
			rc = hist_snapshot_load(l, &blob, &blen, &upto, &err);
			if (rc == 0) {
				char want[32];
				int n = snprintf(want, sizeof want, "snap@%llu", (unsigned long long)upto);

				if (blen != (size_t)n || memcmp(blob, want, blen) != 0)
					ok = false;
				free(blob);
				snaps++;
			} else if (rc != -ENOENT) {
				fprintf(stderr, "  cycle %ld: snapshot: %s\n", cyc, err.msg);
				ok = false;
			}
			seq = hist_next_seq(l);
			if (append_gen(l, buf) != 0 || hist_sync(l, UINT64_MAX) != 0 ||
			    hist_next_seq(l) != seq + 1)
				ok = false;
			hist_close(l);
		}
		if (!ok && ++fails >= 3)
			break;
		CHECK(ok);
	}
	printf("crash: %ld cycles in %.1f s, %llu appends reported, %ld torn tails truncated, "
	       "%ld snapshots checked\n", cycles, now_s() - t0, (unsigned long long)reported_total,
	       torn, snaps);
	free(buf);
	tdir_free(d);
}

/* ---- bench: appends/s ----------------------------------------------------------- */

static double bench_one(const char *dir, long n, long every, size_t len)
{
	struct hist_log *l = NULL;
	struct hist_error err;
	uint8_t pay[4096];
	double t;

	memset(pay, 'e', sizeof pay);
	if (hist_open(dir, &l, NULL, &err) != 0) {
		CHECK(0);
		return 0;
	}
	t = now_s();
	for (long i = 0; i < n; i++) {
		if (hist_append(l, HIST_EVENT, pay, len, NULL) != 0 ||
		    (every > 0 && (i + 1) % every == 0 && hist_sync(l, UINT64_MAX) != 0)) {
			CHECK(0);
			break;
		}
	}
	if (hist_sync(l, UINT64_MAX) != 0)
		CHECK(0);
	t = now_s() - t;
	hist_close(l);
	return (double)n / t;
}

struct bench_mt {
	struct hist_log *l;
	pthread_mutex_t *lock;
	long n;
};

static void *bench_mt_main(void *arg)
{
	struct bench_mt *b = arg;
	uint8_t pay[128];

	memset(pay, 'm', sizeof pay);
	for (long i = 0; i < b->n; i++) {
		uint64_t seq;

		pthread_mutex_lock(b->lock);
		if (hist_append(b->l, HIST_EVENT, pay, sizeof pay, &seq) != 0)
			abort();
		pthread_mutex_unlock(b->lock);
		if (hist_sync(b->l, seq + 1) != 0)
			abort();
	}
	return NULL;
}

static void test_bench(void)
{
	static const long every[] = { 1, 64, 1024, 0 };
	static const long count[] = { 2000, 200000, 300000, 300000 };
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct bench_mt b[8];
	pthread_t t[8];
	struct hist_error err;
	char *d;
	double s;

	for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) {
		d = tdir_new();
		s = bench_one(d, count[i], every[i], 128);
		if (every[i] > 0)
			printf("bench: 128-byte records, fdatasync every %ld: %.0f appends/s\n", every[i], s);
		else
			printf("bench: 128-byte records, no fdatasync: %.0f appends/s\n", s);
		tdir_free(d);
	}
	/* Eight threads, each waiting for its own record to be durable: group
	 * commit lets them share fdatasyncs. */
	d = tdir_new();
	CHECK_EQ_INT(hist_open(d, &b[0].l, NULL, &err), 0);
	s = now_s();
	for (int i = 0; i < 8; i++) {
		b[i] = (struct bench_mt){ b[0].l, &lock, 2000 };
		pthread_create(&t[i], NULL, bench_mt_main, &b[i]);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	s = now_s() - s;
	CHECK_EQ_INT(hist_next_seq(b[0].l), 16000);
	printf("bench: 8 threads, each syncing its every record: %.0f appends/s\n", 16000 / s);
	hist_close(b[0].l);
	tdir_free(d);
}

/* The three-phase compaction: appends between start and copy, during copy
 * (another thread) and before finish all survive, in one chain, and the
 * new file reopens. */
struct phase_appender {
	struct hist_log *l;
	int n, rc;
};

static void *append_some(void *arg)
{
	struct phase_appender *ap = arg;
	uint8_t *buf = malloc(GEN_MAX);

	for (int i = 0; i < ap->n && ap->rc == 0; i++)
		ap->rc = append_gen(ap->l, buf);
	free(buf);
	return NULL;
}

static void test_compact_phases(void)
{
	char *d = make_log(3000);
	struct hist_log *l = NULL;
	struct hist_compaction *c = NULL;
	struct hist_error err;
	uint8_t *buf = malloc(GEN_MAX);
	struct phase_appender ap;
	pthread_t th;
	uint64_t cnt;

	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(hist_compact_start(l, 2000, &c), 0);
	CHECK(c != NULL);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	/* the copy runs beside an appender (the caller's lock is not held) */
	ap = (struct phase_appender){ l, 2000, 0 };
	pthread_create(&th, NULL, append_some, &ap);
	CHECK_EQ_INT(hist_compact_copy(c), 0);
	pthread_join(th, NULL);
	CHECK_EQ_INT(ap.rc, 0);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(append_gen(l, buf), 0);
	CHECK_EQ_INT(hist_compact_finish(c), 0);
	CHECK_EQ_INT(hist_base_seq(l), 2000);
	CHECK_EQ_INT(hist_next_seq(l), 5010);
	CHECK_EQ_INT(check_gen(l, 2000), 3010);
	CHECK_EQ_INT(hist_sync(l, UINT64_MAX), 0);
	CHECK_EQ_INT(append_gen(l, buf), 0);
	hist_close(l);
	CHECK_EQ_INT(hist_verify(d, &cnt, &err), 0);
	CHECK_EQ_INT(cnt, 3011);
	l = NULL;
	CHECK_EQ_INT(hist_open(d, &l, NULL, &err), 0);
	CHECK_EQ_INT(check_gen(l, 2000), 3011);
	/* nothing to drop: no compaction; an abandoned one leaves the log as it was */
	CHECK_EQ_INT(hist_compact_start(l, 1000, &c), 0);
	CHECK(c == NULL);
	CHECK_EQ_INT(hist_compact_start(l, 4000, &c), 0);
	CHECK(c != NULL);
	hist_compact_abort(c);
	CHECK_EQ_INT(hist_base_seq(l), 2000);
	CHECK_EQ_INT(check_gen(l, 2000), 3011);
	hist_close(l);
	free(buf);
	tdir_free(d);
}

static const struct test_case tests[] = {
	{ "compact_phases", test_compact_phases },
	{ "crc32c", test_crc32c },
	{ "empty", test_empty },
	{ "roundtrip", test_roundtrip },
	{ "iterate_append", test_iterate_append },
	{ "write_failure", test_write_failure },
	{ "torn_tail", test_torn_tail },
	{ "damage", test_damage },
	{ "header", test_header },
	{ "known_chain", test_known_chain },
	{ "compact", test_compact },
	{ "compact_while_syncing", test_compact_while_syncing },
	{ "snapshot", test_snapshot },
	{ "verify", test_verify },
	{ "group_commit", test_group_commit },
	{ "crash", test_crash },
	{ "bench", test_bench },
};

TEST_MAIN(tests)
