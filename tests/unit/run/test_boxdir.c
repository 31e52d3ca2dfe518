/* test_boxdir.c - the box directory (src/run/boxdir.c).
 *
 * Every fixture lives in one mkdtemp directory removed at the end; refusals
 * are checked with Box's exact text. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boxdir.h"
#include "test.h"

static char root[PATH_MAX];

static void cleanup(void);

/* The fixture root, made on first use and removed at exit. */
static const char *at(const char *rel)
{
	static char buf[4][PATH_MAX + 64];
	static unsigned k;
	char *b = buf[k++ % 4];

	if (root[0] == '\0') {
		snprintf(root, sizeof root, "/tmp/cairn-boxdir-XXXXXX");
		if (mkdtemp(root) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(cleanup);
	}
	snprintf(b, PATH_MAX + 64, "%s/%s", root, rel);
	return b;
}

static unsigned mode_of(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xffffffffu;
}

static bool is_dir(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* boxdir_open must refuse path with exactly want. */
static void refused(const char *path, const char *want)
{
	struct boxdir b;
	char err[512] = "";

	CHECK_EQ_INT(boxdir_open(path, "demo", &b, err, sizeof err), -1);
	CHECK_EQ_STR(err, want);
}

static void test_create(void)
{
	struct boxdir b;
	char err[512] = "", p[PATH_MAX];

	snprintf(p, sizeof p, "%s", at("box"));
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	if (err[0])
		fprintf(stderr, "  %s\n", err);
	CHECK(b.created);
	CHECK_EQ_INT(mode_of(p), 0700);
	CHECK_EQ_STR(b.path, p);
	CHECK(b.fd >= 0 && b.private_fd >= 0 && b.lock_fd >= 0);
	static const char *const kids[] = { "box/bin", "box/run", "box/trust", "box/private" };
	for (size_t i = 0; i < 4; i++) {
		CHECK(is_dir(at(kids[i])));
		CHECK_EQ_INT(mode_of(at(kids[i])), 0700);
	}
	CHECK_EQ_INT(mode_of(at("box/private/.lock")), 0600);
	CHECK_EQ_INT(boxdir_verify(&b, err, sizeof err), 0);

	/* A second run of the same box, even from this process, is refused. */
	refused(p, "box demo is already running, and one run owns a box at a time; wait for "
		"that run to exit, or start a configuration with a different `box_dir`");

	/* The directory lock is free again once boxdir_open returned. */
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
	if (fd >= 0)
		close(fd);

	boxdir_close(&b);
	CHECK_EQ_INT(b.fd, -1);
	CHECK_EQ_INT(b.lock_fd, -1);

	/* After close the box opens again; nothing is created this time. */
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	CHECK(!b.created);
	boxdir_close(&b);

	/* Trailing slashes are dropped before any lookup. */
	char slashed[PATH_MAX + 8];
	snprintf(slashed, sizeof slashed, "%s//", p);
	CHECK_EQ_INT(boxdir_open(slashed, "demo", &b, err, sizeof err), 0);
	CHECK_EQ_STR(b.path, p);
	boxdir_close(&b);
	boxdir_close(NULL);
}

static void test_directory_lock(void)
{
	struct boxdir b;
	char err[512] = "";
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof p, "%s", at("locked"));
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	boxdir_close(&b);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Another opener between its checks and its run lock holds this. */
	CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
	refused(p, "another cairn operation is in progress for this box; retry shortly");
	if (fd >= 0)
		close(fd);
}

static void test_refusals(void)
{
	char want[PATH_MAX + 128];

	CHECK_EQ_INT(mkdir(at("wide"), 0755), 0);
	CHECK_EQ_INT(chmod(at("wide"), 0755), 0);
	snprintf(want, sizeof want, "unsafe box directory %s: its mode is not 0700", at("wide"));
	refused(at("wide"), want);

	CHECK_EQ_INT(mkdir(at("sticky"), 0700), 0);
	CHECK_EQ_INT(chmod(at("sticky"), 01700), 0);
	snprintf(want, sizeof want, "unsafe box directory %s: its mode is not 0700",
		 at("sticky"));
	refused(at("sticky"), want);

	CHECK_EQ_INT(mkdir(at("target"), 0700), 0);
	CHECK_EQ_INT(symlink(at("target"), at("link")), 0);
	snprintf(want, sizeof want, "unsafe box directory %s: it is a symbolic link", at("link"));
	refused(at("link"), want);

	refused(at("absent/box"), "the box directory's parent does not exist; create it, because "
		"Box creates no directory above the one `box_dir` names");
	CHECK(!is_dir(at("absent")));

	int fd = open(at("plain"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(want, sizeof want, "unsafe box directory %s: it is not a directory",
		 at("plain"));
	refused(at("plain"), want);

	refused("relative/box", "`box_dir` must be absolute: relative/box");

	/* A file planted where bin/ belongs, a link where run/ belongs. */
	CHECK_EQ_INT(mkdir(at("planted"), 0700), 0);
	fd = open(at("planted/bin"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(want, sizeof want, "unsafe box directory %s: bin/ is not a directory",
		 at("planted"));
	refused(at("planted"), want);
	CHECK_EQ_INT(unlink(at("planted/bin")), 0);
	CHECK_EQ_INT(symlink("/tmp", at("planted/run")), 0);
	snprintf(want, sizeof want, "unsafe box directory %s: run/ is a symbolic link",
		 at("planted"));
	refused(at("planted"), want);

	/* sun_path holds 107 bytes and a NUL: "<box_dir>/run/box.sock". */
	char longp[PATH_MAX];
	int n = snprintf(longp, sizeof longp, "%s/", root);
	while (n < 96)
		longp[n++] = 'x';
	longp[n] = '\0';
	snprintf(want, sizeof want, "unsafe box directory %s: its broker socket path exceeds the "
		 "platform limit", longp);
	refused(longp, want);

	/* Ownership is testable only where we may give a directory away. */
	if (geteuid() == 0) {
		CHECK_EQ_INT(mkdir(at("theirs"), 0700), 0);
		CHECK_EQ_INT(chown(at("theirs"), 65534, 65534), 0);
		snprintf(want, sizeof want, "unsafe box directory %s: it is not owned by the "
			 "current user", at("theirs"));
		refused(at("theirs"), want);
	}
}

static void test_umask(void)
{
	struct boxdir b;
	char err[512] = "";
	mode_t old = umask(0777);

	CHECK_EQ_INT(boxdir_open(at("masked"), "demo", &b, err, sizeof err), 0);
	umask(old);
	CHECK_EQ_INT(mode_of(at("masked")), 0700);
	boxdir_close(&b);
}

static void test_verify(void)
{
	struct boxdir b;
	char err[512] = "", want[PATH_MAX + 128], p[PATH_MAX];

	snprintf(p, sizeof p, "%s", at("moved"));
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	CHECK_EQ_INT(boxdir_verify(&b, err, sizeof err), 0);
	CHECK_EQ_INT(rename(p, at("moved-away")), 0);
	CHECK_EQ_INT(mkdir(p, 0700), 0);
	snprintf(want, sizeof want, "unsafe box directory %s: its identity changed after cairn "
		 "validated it", p);
	CHECK_EQ_INT(boxdir_verify(&b, err, sizeof err), -1);
	CHECK_EQ_STR(err, want);
	boxdir_close(&b);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The box's id: made once, the same on every later run; a damaged one
 * refuses the box. */
static void test_box_id(void)
{
	struct boxdir b;
	char err[512], first[BOXDIR_ID_LEN + 1];
	const char *p = at("idbox");

	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	CHECK_EQ_INT(strlen(b.id), BOXDIR_ID_LEN);
	CHECK(strncmp(b.id, "box-", 4) == 0 && strspn(b.id + 4, "0123456789abcdef") == 16);
	memcpy(first, b.id, sizeof first);
	boxdir_close(&b);
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), 0);
	CHECK_EQ_STR(b.id, first);
	boxdir_close(&b);
	CHECK_EQ_INT(mode_of(at("idbox/private/box-id")), 0600);
	FILE *f = fopen(at("idbox/private/box-id"), "w");
	fputs("box-NOTHEX00000000\n", f);
	fclose(f);
	CHECK_EQ_INT(boxdir_open(p, "demo", &b, err, sizeof err), -1);
	CHECK(strstr(err, "private/box-id is not a box id") != NULL);
}

static const struct test_case tests[] = {
	{ "box_id", test_box_id },
	{ "create", test_create },
	{ "directory_lock", test_directory_lock },
	{ "refusals", test_refusals },
	{ "umask", test_umask },
	{ "verify", test_verify },
};

TEST_MAIN(tests)
