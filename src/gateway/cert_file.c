/* cert_file.c - the CA certificate's file in trust/ (cert_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cert_file.h"
#include "gwerr.h"

static bool one_component(const char *name)
{
	return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int gw_cert_file_remove_stale(int dirfd, const char *name, char *err, size_t errlen)
{
	struct stat st;

	if (!one_component(name))
		return gw_fail(err, errlen, -EINVAL, "gateway CA: bad file name \"%s\"",
			    name ? name : "(null)");
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		return gw_fail(err, errlen, -errno, "gateway CA: stat %s: %s", name, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return gw_fail(err, errlen, -ENOTSUP,
			    "gateway CA: %s is not a regular file; refusing to remove it", name);
	/* Were it swapped for a link since, unlinkat removes the link, not its target. */
	if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
		return gw_fail(err, errlen, -errno, "gateway CA: unlink %s: %s", name, strerror(errno));
	return 0;
}

/* Read dirfd/name (not a link, regular, <= GW_CERT_FILE_MAX) into *buf
 * (malloc'd, NUL-terminated; caller frees), with its stat in *st. */
static int read_back(int dirfd, const char *name, char **buf, size_t *len, struct stat *st,
		     char *err, size_t errlen)
{
	char *b = NULL;
	size_t n = 0;
	ssize_t r;
	int fd, rc = 0;

	/* O_NONBLOCK: a FIFO planted there must not hang the gateway's start. */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return gw_fail(err, errlen, -EINVAL, "gateway CA: %s is a symbolic link", name);
		return gw_fail(err, errlen, -errno, "gateway CA: open %s: %s", name, strerror(errno));
	}
	if (fstat(fd, st) != 0) {
		rc = gw_fail(err, errlen, -errno, "gateway CA: fstat %s: %s", name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		rc = gw_fail(err, errlen, -EINVAL, "gateway CA: %s is not a regular file", name);
		goto out;
	}
	if (st->st_size < 0 || (uint64_t)st->st_size > GW_CERT_FILE_MAX) {
		rc = gw_fail(err, errlen, -EFBIG, "gateway CA: %s is larger than %u bytes", name,
			  GW_CERT_FILE_MAX);
		goto out;
	}
	/* One byte past the bound, so a file that grew after fstat is caught. */
	if ((b = malloc(GW_CERT_FILE_MAX + 2)) == NULL) {
		rc = gw_fail(err, errlen, -ENOMEM, "gateway CA: out of memory");
		goto out;
	}
	while (n <= GW_CERT_FILE_MAX) {
		r = read(fd, b + n, GW_CERT_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = gw_fail(err, errlen, -errno, "gateway CA: read %s: %s", name,
				  strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > GW_CERT_FILE_MAX) {
		rc = gw_fail(err, errlen, -EFBIG, "gateway CA: %s is larger than %u bytes", name,
			  GW_CERT_FILE_MAX);
		goto out;
	}
	b[n] = '\0';
	*buf = b, *len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return rc;
}

static int check_pem(const char *name, const char *b, size_t n, char *err, size_t errlen)
{
	if (memmem(b, n, "PRIVATE KEY", 11) != NULL)
		return gw_fail(err, errlen, -EPERM,
			    "gateway CA: %s holds key material (\"PRIVATE KEY\"); refusing to start",
			    name);
	if (memmem(b, n, "BEGIN CERTIFICATE", 17) == NULL)
		return gw_fail(err, errlen, -EINVAL, "gateway CA: %s holds no certificate", name);
	return 0;
}

int gw_cert_file_check(int dirfd, const char *name, char *err, size_t errlen)
{
	struct stat st;
	char *b = NULL;
	size_t n = 0;
	int rc;

	if (!one_component(name))
		return gw_fail(err, errlen, -EINVAL, "gateway CA: bad file name \"%s\"",
			    name ? name : "(null)");
	if ((rc = read_back(dirfd, name, &b, &n, &st, err, errlen)) == 0)
		rc = check_pem(name, b, n, err, errlen);
	free(b);
	return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w, n -= (size_t)w;
	}
	return 0;
}

int gw_cert_file_create(int dirfd, const char *name, char *err, size_t errlen)
{
	int fd;

	if (!one_component(name))
		return gw_fail(err, errlen, -EINVAL, "gateway CA: bad file name \"%s\"",
			    name ? name : "(null)");
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0) {
		if (errno == EEXIST)
			return gw_fail(err, errlen, -EEXIST,
				    "gateway CA: %s already exists; remove the stale file first", name);
		return gw_fail(err, errlen, -errno, "gateway CA: create %s: %s", name, strerror(errno));
	}
	/* The umask may only take bits away, but say the mode outright. */
	if (fchmod(fd, 0400) != 0) {
		int rc = gw_fail(err, errlen, -errno, "gateway CA: fchmod %s: %s", name,
			      strerror(errno));

		close(fd);
		return rc;
	}
	return fd;
}

int gw_cert_file_fill(int fd, int dirfd, const char *name, const char *pem, size_t pemlen,
		      char *err, size_t errlen)
{
	char *back = NULL;
	size_t backlen = 0;
	struct stat st;
	int rc;

	if (!one_component(name)) {
		rc = gw_fail(err, errlen, -EINVAL, "gateway CA: bad file name \"%s\"",
			  name ? name : "(null)");
		goto out;
	}
	if ((rc = write_all(fd, pem, pemlen)) != 0) {
		rc = gw_fail(err, errlen, rc, "gateway CA: write %s: %s", name, strerror(-rc));
		goto out;
	}
	rc = close(fd);
	fd = -1;
	if (rc != 0) {
		rc = gw_fail(err, errlen, -errno, "gateway CA: close %s: %s", name, strerror(errno));
		goto out;
	}
	if ((rc = read_back(dirfd, name, &back, &backlen, &st, err, errlen)) != 0 ||
	    (rc = check_pem(name, back, backlen, err, errlen)) != 0)
		goto out;
	if ((st.st_mode & 07777) != 0400 || st.st_uid != geteuid()) {
		rc = gw_fail(err, errlen, -EPERM, "gateway CA: %s has mode %04o owner %u, not 0400 %u",
			  name, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			  (unsigned)geteuid());
		goto out;
	}
	if (backlen != pemlen || memcmp(back, pem, backlen) != 0) {
		rc = gw_fail(err, errlen, -EIO, "gateway CA: %s does not read back as written", name);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(back);
	return rc;
}
