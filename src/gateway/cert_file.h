/* cert_file.h - the CA certificate's file, <box_dir>/trust/cert.pem, that
 * every sandbox trusts (docs/egress.md "TLS").  Written by the supervisor,
 * which mints the CA (ca_mint.h), before any workload runs; no TLS library
 * here.
 *
 * Errors are values: 0 or a negative errno, and what failed and why in
 * err[0, errlen) (NUL-terminated; err may be NULL).  name is one path
 * component under dirfd. */
#ifndef CAIRN_GW_CERT_FILE_H
#define CAIRN_GW_CERT_FILE_H

#include <stddef.h>

#define GW_CERT_FILE_MAX (4u << 20)     /* read-back bound of the written PEM */

/* Unlink dirfd/name if it is a regular file (a stale cert.pem of an earlier
 * run).  0 when removed or absent; -ENOTSUP (nothing removed) when something
 * else is there (a symbolic link, a directory, a FIFO...). */
int gw_cert_file_remove_stale(int dirfd, const char *name, char *err, size_t errlen);

/* Create dirfd/name empty (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0400 whatever the
 * umask), so that a sandbox's view can bind it before it is filled; its
 * write-only fd (O_CLOEXEC), or <0 (-EEXIST: remove a stale file first). */
int gw_cert_file_create(int dirfd, const char *name, char *err, size_t errlen);

/* Write pem[0, len) into fd (from gw_cert_file_create for dirfd/name; taken
 * over and closed, whatever the outcome), then read dirfd/name back: a
 * regular file, mode 0400, ours, byte for byte what was written, passing
 * gw_cert_file_check.  0 or <0; on failure the file may hold part of the
 * PEM: the run must not start. */
int gw_cert_file_fill(int fd, int dirfd, const char *name, const char *pem, size_t len,
		      char *err, size_t errlen);

/* The read-back check alone: dirfd/name (not followed if a link) is a regular
 * file of at most GW_CERT_FILE_MAX bytes that holds "BEGIN CERTIFICATE" and no
 * "PRIVATE KEY".  0, or -EPERM (key material), -EINVAL (no certificate, not a
 * regular file), -EFBIG, or the open/read errno. */
int gw_cert_file_check(int dirfd, const char *name, char *err, size_t errlen);

#endif
