/* boxdir.c - the box directory (docs/box-compat.md "The box directory").
 *
 * Two locks, as Box has them.  flock on the directory fd itself guards the
 * short setup below (children made, run lock taken) and is released before
 * boxdir_open returns, so a second opener waits only for that setup ("another
 * cairn operation is in progress").  flock on private/.lock is the run lock,
 * held until boxdir_close: a second run of the box is refused ("already
 * running").  Both are per open file description, so even a second open in
 * the same process conflicts. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "boxdir.h"

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The children of box_dir, each 0700 and owned by the effective uid.  An
 * existing one must be a real directory: a link planted there would move
 * the broker socket or the private state somewhere else. */
static int open_child(const struct boxdir *b, const char *name, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdirat(b->fd, name, 0700) != 0 && errno != EEXIST)
		return fail(err, errlen, "cannot create %s/%s: %s", b->path, name, strerror(errno));
	fd = openat(b->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (fstatat(b->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return fail(err, errlen, "unsafe box directory %s: %s/ is a symbolic link",
				    b->path, name);
		if (e == ENOTDIR || e == ELOOP)
			return fail(err, errlen, "unsafe box directory %s: %s/ is not a directory",
				    b->path, name);
		return fail(err, errlen, "cannot open %s/%s: %s", b->path, name, strerror(e));
	}
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
		close(fd);
		return fail(err, errlen, "unsafe box directory %s: %s/ is not owned by the current "
			    "user", b->path, name);
	}
	return fd;
}

/* The box's id, `box-` and 16 lowercase hex digits (8 random bytes), as
 * Box settles it on first use: private/box-id, made once (O_EXCL) under the
 * run lock and read on every later run, so every record of every run names
 * the same box (docs/records.md "The resource"). */
static int settle_id(struct boxdir *b, char *err, size_t errlen)
{
	static const char digits[] = "0123456789abcdef";
	char text[32];
	int fd = openat(b->private_fd, "box-id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, text, sizeof(text));
		close(fd);
		bool ok = n == BOXDIR_ID_LEN + 1 && memcmp(text, "box-", 4) == 0 &&
			  text[BOXDIR_ID_LEN] == '\n';
		for (size_t i = 4; ok && i < BOXDIR_ID_LEN; i++)
			ok = strchr(digits, text[i]) != NULL && text[i] != '\0';
		if (!ok)
			return fail(err, errlen, "unsafe box directory %s: private/box-id is not a "
				    "box id (box- and 16 lowercase hex digits)", b->path);
		memcpy(b->id, text, BOXDIR_ID_LEN);
		b->id[BOXDIR_ID_LEN] = '\0';
		return 0;
	}
	if (errno != ENOENT)
		return fail(err, errlen, "cannot read %s/private/box-id: %s", b->path,
			    strerror(errno));
	uint8_t raw[8];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return fail(err, errlen, "cannot draw the box's id: %s", strerror(errno));
	memcpy(text, "box-", 4);
	for (size_t i = 0; i < sizeof(raw); i++) {
		text[4 + 2 * i] = digits[raw[i] >> 4];
		text[5 + 2 * i] = digits[raw[i] & 15];
	}
	text[BOXDIR_ID_LEN] = '\n';
	fd = openat(b->private_fd, "box-id", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0 || write(fd, text, BOXDIR_ID_LEN + 1) != BOXDIR_ID_LEN + 1 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return fail(err, errlen, "cannot write %s/private/box-id: %s", b->path, strerror(e));
	}
	close(fd);
	memcpy(b->id, text, BOXDIR_ID_LEN);
	b->id[BOXDIR_ID_LEN] = '\0';
	return 0;
}

int boxdir_open(const char *path, const char *name, struct boxdir *out, char *err, size_t errlen)
{
	static const char *const keep_closed[] = { "bin", "run", "trust" };
	struct boxdir b = { .fd = -1, .private_fd = -1, .lock_fd = -1 };
	char parent[PATH_MAX];
	struct stat st, lst;
	mode_t old_umask = 0;
	size_t n;
	char *slash;
	int fd;

	n = path != NULL ? strlen(path) : 0;
	if (n == 0 || path[0] != '/')
		return fail(err, errlen, "`box_dir` must be absolute: %s", path ? path : "");
	if (n >= sizeof b.path)
		return fail(err, errlen, "`box_dir` %s is longer than PATH_MAX", path);
	/* A trailing slash would make O_NOFOLLOW and lstat follow a final link. */
	memcpy(b.path, path, n + 1);
	while (n > 1 && b.path[n - 1] == '/')
		b.path[--n] = '\0';
	if (n == 1)
		return fail(err, errlen, "unsafe box directory /: it is the root directory");
	/* The broker socket run/box.sock must fit sun_path with its NUL. */
	if (n + strlen("/run/box.sock") >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return fail(err, errlen, "unsafe box directory %s: its broker socket path exceeds "
			    "the platform limit", b.path);

	memcpy(parent, b.path, n + 1);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
		return fail(err, errlen, "the box directory's parent does not exist; create it, "
			    "because Box creates no directory above the one `box_dir` names");

	/* A umask wider than 077 must not leave what we make unusable (mode 0000
	 * cannot even be opened); umask is per process, hence the contract of
	 * calling this before any thread starts. */
	old_umask = umask(077);
	if (mkdir(b.path, 0700) == 0)
		b.created = true;
	else if (errno != EEXIST) {
		fail(err, errlen, "cannot create box directory %s: %s", b.path, strerror(errno));
		goto bad;
	}

	b.fd = open(b.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b.fd < 0) {
		int e = errno;

		if (lstat(b.path, &lst) == 0 && S_ISLNK(lst.st_mode))
			fail(err, errlen, "unsafe box directory %s: it is a symbolic link", b.path);
		else if (e == ENOTDIR)
			fail(err, errlen, "unsafe box directory %s: it is not a directory", b.path);
		else
			fail(err, errlen, "cannot open box directory %s: %s", b.path, strerror(e));
		goto bad;
	}
	if (fstat(b.fd, &st) != 0) {
		fail(err, errlen, "cannot examine box directory %s: %s", b.path, strerror(errno));
		goto bad;
	}
	if (st.st_uid != geteuid()) {
		fail(err, errlen, "unsafe box directory %s: it is not owned by the current user",
		     b.path);
		goto bad;
	}
	if ((st.st_mode & 07777) != 0700) {
		fail(err, errlen, "unsafe box directory %s: its mode is not 0700", b.path);
		goto bad;
	}
	/* The path must still name what we opened. */
	if (lstat(b.path, &lst) != 0 || lst.st_dev != st.st_dev || lst.st_ino != st.st_ino) {
		fail(err, errlen, "unsafe box directory %s: its identity changed while cairn "
		     "opened it", b.path);
		goto bad;
	}
	b.dev = st.st_dev;
	b.ino = st.st_ino;

	if (flock(b.fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			fail(err, errlen, "another cairn operation is in progress for this box; "
			     "retry shortly");
		else
			fail(err, errlen, "cannot lock box directory %s: %s", b.path,
			     strerror(errno));
		goto bad;
	}
	for (size_t i = 0; i < sizeof keep_closed / sizeof keep_closed[0]; i++) {
		if ((fd = open_child(&b, keep_closed[i], err, errlen)) < 0)
			goto bad;
		close(fd);
	}
	if ((b.private_fd = open_child(&b, "private", err, errlen)) < 0)
		goto bad;
	b.lock_fd = openat(b.private_fd, ".lock", O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (b.lock_fd < 0) {
		fail(err, errlen, "cannot open the run lock %s/private/.lock: %s", b.path,
		     strerror(errno));
		goto bad;
	}
	if (fstat(b.lock_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fail(err, errlen, "unsafe box directory %s: private/.lock is not a regular file",
		     b.path);
		goto bad;
	}
	if (flock(b.lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			fail(err, errlen, "box %s is already running, and one run owns a box at a "
			     "time; wait for that run to exit, or start a configuration with a "
			     "different `box_dir`", name ? name : "");
		else
			fail(err, errlen, "cannot lock %s/private/.lock: %s", b.path,
			     strerror(errno));
		goto bad;
	}
	if (settle_id(&b, err, errlen) != 0)
		goto bad;
	/* Setup is done; the run lock alone holds the box from here. */
	if (flock(b.fd, LOCK_UN) != 0) {
		fail(err, errlen, "cannot unlock box directory %s: %s", b.path, strerror(errno));
		goto bad;
	}
	umask(old_umask);
	*out = b;
	return 0;
bad:
	umask(old_umask);
	boxdir_close(&b);
	return -1;
}

int boxdir_verify(const struct boxdir *b, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(b->path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_dev != b->dev ||
	    st.st_ino != b->ino)
		return fail(err, errlen, "unsafe box directory %s: its identity changed after "
			    "cairn validated it", b->path);
	return 0;
}

void boxdir_close(struct boxdir *b)
{
	if (b == NULL)
		return;
	close_fd(&b->lock_fd);
	close_fd(&b->private_fd);
	close_fd(&b->fd);
}
