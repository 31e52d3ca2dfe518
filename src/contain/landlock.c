/* landlock.c - Landlock for the workload: the rights of its view, nothing else.
 *
 * The ruleset handles every filesystem right the running ABI knows, so a
 * right nobody granted is denied rather than left to the kernel's default of
 * "not handled, allowed".  Rules are a union of allows beneath a path; there
 * is no "deny X under allowed Y", so the caller carves out by not granting
 * the parent (docs/security.md "Landlock"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

/* Debian 12's linux-libc-dev (6.1) stops at ABI 2; the kernel's numbers are
 * ABI and never change. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)         /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)        /* ABI 5 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)                /* ABI 6 */
#endif

/* struct landlock_ruleset_attr as of ABI 6; the header's copy has only the
 * first field.  The kernel takes a prefix of it by size. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;    /* ABI 4 */
	uint64_t scoped;                /* ABI 6 */
};

#define LL_FS_ABI1                                                                      \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                   \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                   \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |               \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                   \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                   \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                 \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* The only rights landlock_add_rule accepts on a non-directory; anything
 * else there is EINVAL. */
#define LL_FS_FILE                                                                      \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                   \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                   \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* MAKE_CHAR and MAKE_BLOCK are never granted: a device node made inside
 * would be a way around the view's nodev. */
#define LL_WRITE                                                                        \
	(LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |      \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |                 \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                   \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM |                   \
	 LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE)

/* READ_DIR so a directory of programs can be listed (PATH lookup does not
 * need it, shells' completion does); it is masked off on a file rule. */
#define LL_EXEC (LANDLOCK_ACCESS_FS_EXECUTE | LL_READ)

#define LL_DEV                                                                          \
	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |                 \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

static int ll_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ll_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int ct_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return v < 0 ? -errno : (int)v;
}

/* Every filesystem right the given ABI knows: all of them are handled, so
 * none is allowed by omission. */
static uint64_t ll_fs_known(int abi)
{
	uint64_t fs = LL_FS_ABI1;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return fs;
}

static uint64_t ll_rights(unsigned access)
{
	uint64_t r = 0;

	if (access & CT_READ)
		r |= LL_READ;
	if (access & CT_LIST)
		r |= LANDLOCK_ACCESS_FS_READ_DIR;
	if (access & CT_WRITE)
		r |= LL_WRITE;
	if (access & CT_EXEC)
		r |= LL_EXEC;
	if (access & CT_DEV)
		r |= LL_DEV;
	return r;
}

/* Allow rule->access beneath rule->path.  The path is opened following
 * symlinks: the view's own links (/bin -> usr/bin) are legitimate, and the
 * rule then lands on what they name. */
static int ll_add_rule(int ruleset, uint64_t handled, const struct ct_rule *rule, char *err,
		       size_t errlen)
{
	struct landlock_path_beneath_attr pb = { 0 };
	struct stat st;
	int fd, saved;

	fd = open(rule->path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return ll_fail(err, errlen, "landlock: cannot open %s: %s", rule->path,
			       ct_strerror(errno));
	if (fstat(fd, &st) < 0) {
		saved = errno;
		close(fd);
		return ll_fail(err, errlen, "landlock: cannot stat %s: %s", rule->path,
			       ct_strerror(saved));
	}
	pb.parent_fd = fd;
	pb.allowed_access = ll_rights(rule->access) & handled;
	if (!S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FS_FILE;
	/* Nothing left to allow (CT_LIST on a file, say): the path exists, which
	 * is all the caller promised; an empty rule would be ENOMSG. */
	if (pb.allowed_access == 0) {
		close(fd);
		return 0;
	}
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		saved = errno;
		close(fd);
		return ll_fail(err, errlen, "landlock: landlock_add_rule %s: %s", rule->path,
			       ct_strerror(saved));
	}
	close(fd);
	return 0;
}

int ct_landlock_apply(int abi, const struct ct_rule *rules, size_t n, char *err, size_t errlen)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t attr_size;
	int ruleset, saved;

	/* abi is ct_landlock_abi()'s answer: -errno when the kernel has none. */
	if (abi < 0)
		return ll_fail(err, errlen, "landlock: not available: %s", ct_strerror(-abi));
	if (abi < 1)
		return ll_fail(err, errlen, "landlock: unsupported ABI %d", abi);
	/* Without no_new_privs restrict_self needs CAP_SYS_ADMIN, and a workload
	 * that could still gain privileges through exec is not one we confine. */
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return ll_fail(err, errlen, "landlock: no_new_privs is not set");

	attr.handled_access_fs = ll_fs_known(abi);
	/* Network rights stay unhandled: the workload's network namespace holds
	 * only `lo` and the supervisor's listeners, so the namespace is the
	 * boundary, and TCP port rules would add nothing but breakage. */
	attr_size = sizeof(attr.handled_access_fs);
	if (abi >= 6) {
		/* No abstract unix socket or signal may leave the domain: the host's
		 * D-Bus, X11 and the supervisor are out of reach (escape cases
		 * abstract-unix, kill-init). */
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}

	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return ll_fail(err, errlen, "landlock: landlock_create_ruleset: %s",
			       ct_strerror(errno));
	for (size_t i = 0; i < n; i++) {
		if (ll_add_rule(ruleset, attr.handled_access_fs, &rules[i], err, errlen) < 0) {
			close(ruleset);
			return -1;
		}
	}
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
		saved = errno;
		close(ruleset);
		return ll_fail(err, errlen, "landlock: landlock_restrict_self: %s",
			       ct_strerror(saved));
	}
	close(ruleset);
	return 0;
}
