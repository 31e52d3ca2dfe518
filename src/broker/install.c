/* install.c - what the broker needs in the box directory (broker.h;
 * docs/tools.md "The box directory"): the shim image with a hard link per
 * tool name in bin/, and the socket in run/.
 *
 * Every operation is relative to the box directory's descriptor, the
 * names single components, links never followed (O_NOFOLLOW, AT_*). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <dirent.h>

#include "broker.h"
#include "helper_path.h"

#define SHIM_NAME "cairn-shim"
#define IMAGE ".shim-image"
#define IMAGE_TMP ".shim-image.new"
#define IMAGE_MAX (16u << 20)

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The whole of a regular file of at most IMAGE_MAX bytes. */
static char *slurp(int fd, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > IMAGE_MAX)
		return NULL;
	char *b = malloc((size_t)st.st_size);
	size_t got = 0;
	while (b != NULL && got < (size_t)st.st_size) {
		ssize_t r = pread(fd, b + got, (size_t)st.st_size - got, (off_t)got);
		if (r <= 0) {
			free(b);
			return NULL;
		}
		got += (size_t)r;
	}
	*len = got;
	return b;
}

/* bin/.shim-image is a copy of the installed shim, mode 0555 (bound
 * read-only: the agent runs it, nothing changes it), written beside and
 * renamed over only when it differs, so a run never changes a running
 * shim's file in place; "differs" is Box's stamp, the size and the source's
 * modification time, which the copy carries.  Not 0111: the kernel makes a
 * process of an unreadable executable undumpable to every namespace but the
 * first, and an unprivileged mediator could then not read the shim's
 * calls. */
static int put_image(int bin, char *err, size_t errlen)
{
	char src[PATH_MAX + 32];
	struct stat sst, st;
	if (cairn_helper_path(SHIM_NAME, src, sizeof(src)) != 0)
		return fail(err, errlen, "%s is not installed (%s)", src, strerror(errno));
	int sfd = open(src, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *want = sfd >= 0 && fstat(sfd, &sst) == 0 ? slurp(sfd, &len) : NULL;
	if (sfd >= 0)
		close(sfd);
	if (want == NULL)
		return fail(err, errlen, "cannot read the shim %s: %s", src,
			    errno ? strerror(errno) : "not a regular file");
	bool same = fstatat(bin, IMAGE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_mode & 07777) == 0555 && (size_t)st.st_size == len &&
		    st.st_mtim.tv_sec == sst.st_mtim.tv_sec &&
		    st.st_mtim.tv_nsec == sst.st_mtim.tv_nsec;
	int rc = 0;
	if (!same) {
		unlinkat(bin, IMAGE_TMP, 0);
		int fd = openat(bin, IMAGE_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0700);
		size_t off = 0;
		while (fd >= 0 && off < len) {
			ssize_t w = write(fd, want + off, len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		const struct timespec times[2] = { sst.st_atim, sst.st_mtim };
		if (fd < 0 || off != len || fchmod(fd, 0555) != 0 || futimens(fd, times) != 0 ||
		    fsync(fd) != 0 || renameat(bin, IMAGE_TMP, bin, IMAGE) != 0)
			rc = fail(err, errlen, "cannot write the shim image in bin/: %s",
				  strerror(errno));
		if (fd >= 0)
			close(fd);
		if (rc != 0)
			unlinkat(bin, IMAGE_TMP, 0);
	}
	free(want);
	return rc;
}

static bool wanted(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

int brk_install_shims(int box_fd, const char *const *names, size_t n, dev_t *dev, ino_t *ino,
		      char *err, size_t errlen)
{
	int bin = openat(box_fd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat img;
	int rc = -1;
	*dev = 0;
	*ino = 0;
	if (bin < 0)
		return fail(err, errlen, "cannot open bin/ in the box directory: %s",
			    strerror(errno));
	for (size_t i = 0; i < n; i++)
		if (names[i][0] == '\0' || names[i][0] == '.' || strchr(names[i], '/') != NULL) {
			fail(err, errlen, "a tool's shim cannot be named \"%s\"", names[i]);
			goto out;
		}
	if (n > 0 && put_image(bin, err, errlen) != 0)
		goto out;
	if (n > 0 && fstatat(bin, IMAGE, &img, AT_SYMLINK_NOFOLLOW) != 0) {
		fail(err, errlen, "cannot read the shim image: %s", strerror(errno));
		goto out;
	}
	/* Stale names go: a shim left from an earlier config would reach a
	 * broker that knows no such tool (127, but on PATH all the same). */
	int dfd = dup(bin);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		fail(err, errlen, "cannot list bin/: %s", strerror(errno));
		goto out;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    (n > 0 && strcmp(e->d_name, IMAGE) == 0) || wanted(e->d_name, names, n))
			continue;
		(void)unlinkat(bin, e->d_name, 0);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (fstatat(bin, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == img.st_dev && st.st_ino == img.st_ino)
			continue;
		(void)unlinkat(bin, names[i], 0);
		if (linkat(bin, IMAGE, bin, names[i], 0) != 0) {
			fail(err, errlen, "cannot link the shim bin/%s: %s", names[i],
			     strerror(errno));
			goto out;
		}
	}
	if (n > 0) {
		*dev = img.st_dev;
		*ino = img.st_ino;
	}
	rc = 0;
out:
	close(bin);
	return rc;
}

int brk_listen(int box_fd, const char *box_path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* the shim connects by its full path: Box's limit, with room */
	if (strlen(box_path) + sizeof("/run/box.sock") > 104)
		return fail(err, errlen, "unsafe box directory %s: its broker socket path exceeds "
			    "the platform limit", box_path);
	int run = openat(box_fd, "run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (run < 0)
		return fail(err, errlen, "cannot open run/ in the box directory: %s",
			    strerror(errno));
	(void)unlinkat(run, "box.sock", 0);     /* a stale one of an earlier run */
	/* bound through the directory's descriptor, never the path looked up again */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/box.sock", run);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = -1;
	if (fd < 0) {
		fail(err, errlen, "socket: %s", strerror(errno));
		goto out;
	}
	/* run/ is 0700 in a 0700 box directory: the mode only narrows it */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    fchmodat(run, "box.sock", 0600, 0) != 0 || listen(fd, 128) != 0) {
		fail(err, errlen, "cannot listen on %s/run/box.sock: %s", box_path,
		     strerror(errno));
		goto out;
	}
	rc = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	close(run);
	return rc;
}
