/* calls.c - med-calls: every row of docs/mediator.md's table through raw
 * syscall(2), inside a mediated box (tests/mediate/run.sh): the answer
 * each call gets and its effect, in a decided tree whose paths the policy
 * permits (DIR), beneath a part of it every fs:* is forbidden
 * (DIR/locked), in the runtime scratch (/tmp), and for calls the box
 * refuses whatever the policy says.
 * Usage (in the box): med-calls DIR HOME
 * Prints "ok <row>" or "FAIL <row>: ..." per check. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

static const char *D, *L;       /* the permitted tree, its locked part */
static int fails;

static const char *p(const char *base, const char *rel)
{
	static char buf[8][4096];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
	return buf[i];
}

static void check(const char *row, long r, int e, int want)
{
	if (want == 0 ? r >= 0 : (r == -1 && e == want)) {
		printf("ok %s\n", row);
		return;
	}
	fails++;
	if (r >= 0)
		printf("FAIL %s: succeeded (%ld), want %s\n", row, r, strerrorname_np(want));
	else
		printf("FAIL %s: %s, want %s\n", row, strerrorname_np(e),
		       want ? strerrorname_np(want) : "success");
}

/* ROW(name, want, call): the call's result against want (0: success). */
#define ROW(name, want, call) do { errno = 0; long r_ = (long)(call); check(name, r_, errno, want); } while (0)

static void effect(const char *row, int ok)
{
	if (ok) {
		printf("ok %s\n", row);
	} else {
		fails++;
		printf("FAIL %s\n", row);
	}
}

static void mkfile(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		close(fd);
	}
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: med-calls DIR HOME\n");
		return 2;
	}
	D = argv[1];
	char locked[4096];
	snprintf(locked, sizeof(locked), "%s/locked", D);
	L = locked;
	struct stat st;
	struct statx sx;
	struct statfs sf;
	char buf[4096];
	/* the fixture, made through the mediator (it is a decided tree) */
	ROW("mkdir (permitted)", 0, syscall(SYS_mkdir, p(D, "m1"), 0755));
	effect("mkdir reached the host", exists(p(D, "m1")));
	ROW("mkdir (forbidden)", EACCES, syscall(SYS_mkdir, p(L, "m1"), 0755));
	mkfile(p(D, "f"), "data\n");
	effect("open O_CREAT (permitted) wrote the file", exists(p(D, "f")));
	ROW("open O_CREAT (forbidden)", EACCES, syscall(SYS_open, p(L, "new"), O_WRONLY | O_CREAT, 0644));

	/* ---- opens ---- */
	ROW("open O_RDONLY", 0, syscall(SYS_open, p(D, "f"), O_RDONLY));
	ROW("open O_RDONLY (forbidden)", EACCES, syscall(SYS_open, p(L, "secret"), O_RDONLY));
	ROW("openat AT_FDCWD", 0, syscall(SYS_openat, AT_FDCWD, p(D, "f"), O_RDONLY));
	int dfd = (int)syscall(SYS_openat, AT_FDCWD, D, O_RDONLY | O_DIRECTORY);
	ROW("openat of a decided directory", 0, dfd);
	ROW("openat relative to a decided dirfd", 0, syscall(SYS_openat, dfd, "f", O_RDONLY));
	ROW("openat relative to a dirfd (forbidden)", EACCES,
	    syscall(SYS_openat, dfd, "locked/secret", O_RDONLY));
	ROW("creat (permitted)", 0, syscall(SYS_creat, p(D, "c"), 0600));
	effect("creat applied the umask and mode", stat(p(D, "c"), &st) == 0 &&
	       (st.st_mode & 0777) == (0600 & ~022));
	ROW("creat (forbidden)", EACCES, syscall(SYS_creat, p(L, "c"), 0600));
	ROW("open O_PATH (permitted)", 0, syscall(SYS_open, p(D, "f"), O_PATH));
	ROW("open O_PATH (forbidden)", EACCES, syscall(SYS_open, p(L, "secret"), O_PATH));
	ROW("open O_RDWR (forbidden read)", EACCES, syscall(SYS_open, p(L, "secret"), O_RDWR));
	ROW("open O_TMPFILE (permitted)", 0, syscall(SYS_open, D, O_TMPFILE | O_RDWR, 0600));
	struct open_how how = { .flags = O_RDONLY };
	ROW("openat2 (falls back to openat)", ENOSYS, syscall(SYS_openat2, AT_FDCWD, p(D, "f"), &how,
							      sizeof(how)));
	ROW("open of a missing file", ENOENT, syscall(SYS_open, p(D, "missing"), O_RDONLY));
	ROW("open /proc/self/fd/N of a decided file for writing", EACCES,
	    syscall(SYS_open, (snprintf(buf, sizeof(buf), "/proc/self/fd/%d",
					(int)syscall(SYS_open, p(D, "f"), O_RDONLY)), buf), O_WRONLY));

	/* ---- metadata ---- */
	ROW("stat", 0, syscall(SYS_stat, p(D, "f"), &st));
	effect("stat returned the file's size", st.st_size == 5);
	ROW("stat (forbidden)", EACCES, syscall(SYS_stat, p(L, "secret"), &st));
	ROW("lstat", 0, syscall(SYS_lstat, p(D, "f"), &st));
	ROW("newfstatat", 0, syscall(SYS_newfstatat, AT_FDCWD, p(D, "f"), &st, 0));
	ROW("newfstatat (forbidden)", EACCES, syscall(SYS_newfstatat, AT_FDCWD, p(L, "secret"), &st, 0));
	ROW("newfstatat AT_EMPTY_PATH on a held fd", 0, syscall(SYS_newfstatat, dfd, "", &st, AT_EMPTY_PATH));
	effect("fstat of a decided dirfd is a directory", S_ISDIR(st.st_mode));
	ROW("statx", 0, syscall(SYS_statx, AT_FDCWD, p(D, "f"), 0, STATX_BASIC_STATS, &sx));
	effect("statx returned the file's size", sx.stx_size == 5);
	ROW("statx (forbidden)", EACCES, syscall(SYS_statx, AT_FDCWD, p(L, "secret"), 0, STATX_BASIC_STATS, &sx));
	ROW("access", 0, syscall(SYS_access, p(D, "f"), R_OK));
	ROW("access (forbidden)", EACCES, syscall(SYS_access, p(L, "secret"), F_OK));
	ROW("faccessat", 0, syscall(SYS_faccessat, AT_FDCWD, p(D, "f"), R_OK));
	ROW("faccessat2", 0, syscall(SYS_faccessat2, AT_FDCWD, p(D, "f"), R_OK, AT_EACCESS));
	ROW("statfs", 0, syscall(SYS_statfs, p(D, "f"), &sf));
	ROW("statfs (forbidden)", EACCES, syscall(SYS_statfs, p(L, "secret"), &sf));
	ROW("symlink (permitted)", 0, syscall(SYS_symlink, "f", p(D, "ln")));
	effect("symlink reached the host", exists(p(D, "ln")));
	ROW("symlink (forbidden)", EACCES, syscall(SYS_symlink, "f", p(L, "ln")));
	memset(buf, 0, sizeof(buf));
	ROW("readlink", 0, syscall(SYS_readlink, p(D, "ln"), buf, sizeof(buf)));
	effect("readlink read the target", strcmp(buf, "f") == 0);
	ROW("readlinkat", 0, syscall(SYS_readlinkat, AT_FDCWD, p(D, "ln"), buf, sizeof(buf)));
	ROW("readlink of a file that is no link", EINVAL, syscall(SYS_readlink, p(D, "f"), buf, sizeof(buf)));
	ROW("stat through a link follows it", 0, syscall(SYS_stat, p(D, "ln"), &st));
	effect("... to the file", st.st_size == 5);
	ROW("getxattr of a missing attribute", ENODATA, syscall(SYS_getxattr, p(D, "f"), "user.none", buf, sizeof(buf)));
	ROW("lgetxattr (forbidden)", EACCES, syscall(SYS_lgetxattr, p(L, "secret"), "user.none", buf, sizeof(buf)));
	ROW("listxattr", 0, syscall(SYS_listxattr, p(D, "f"), buf, sizeof(buf)));
	ROW("llistxattr (forbidden)", EACCES, syscall(SYS_llistxattr, p(L, "secret"), buf, sizeof(buf)));

	/* ---- the namespace ---- */
	ROW("mkdirat", 0, syscall(SYS_mkdirat, dfd, "m2", 0755));
	ROW("rmdir", 0, syscall(SYS_rmdir, p(D, "m2")));
	effect("rmdir reached the host", !exists(p(D, "m2")));
	ROW("rmdir (forbidden)", EACCES, syscall(SYS_rmdir, p(L, "d")));
	mkfile(p(D, "u"), "u");
	ROW("unlink", 0, syscall(SYS_unlink, p(D, "u")));
	effect("unlink reached the host", !exists(p(D, "u")));
	ROW("unlink (forbidden)", EACCES, syscall(SYS_unlink, p(L, "secret")));
	mkfile(p(D, "u"), "u");
	ROW("unlinkat relative to a dirfd", 0, syscall(SYS_unlinkat, dfd, "u", 0));
	ROW("unlink of a missing file", ENOENT, syscall(SYS_unlink, p(D, "u")));
	mkfile(p(D, "r1"), "r");
	ROW("rename", 0, syscall(SYS_rename, p(D, "r1"), p(D, "r2")));
	effect("rename reached the host", exists(p(D, "r2")) && !exists(p(D, "r1")));
	ROW("renameat", 0, syscall(SYS_renameat, dfd, "r2", dfd, "r3"));
	ROW("renameat2 RENAME_NOREPLACE onto a file", EEXIST,
	    syscall(SYS_renameat2, AT_FDCWD, p(D, "r3"), AT_FDCWD, p(D, "f"), RENAME_NOREPLACE));
	ROW("renameat2 RENAME_EXCHANGE", 0,
	    syscall(SYS_renameat2, AT_FDCWD, p(D, "r3"), AT_FDCWD, p(D, "c"), RENAME_EXCHANGE));
	ROW("rename into the forbidden part", EACCES, syscall(SYS_rename, p(D, "r3"), p(L, "r3")));
	ROW("rename out of the forbidden part", EACCES, syscall(SYS_rename, p(L, "secret"), p(D, "stolen")));
	ROW("link (permitted)", 0, syscall(SYS_link, p(D, "f"), p(D, "hard")));
	ROW("link of a forbidden file", EACCES, syscall(SYS_link, p(L, "secret"), p(D, "hard2")));
	ROW("linkat", 0, syscall(SYS_linkat, dfd, "f", dfd, "hard3", 0));
	ROW("symlinkat", 0, syscall(SYS_symlinkat, "f", dfd, "ln2"));
	ROW("mknod a FIFO", 0, syscall(SYS_mknod, p(D, "fifo"), S_IFIFO | 0600, 0));
	effect("the FIFO is on the host", lstat(p(D, "fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
	ROW("mknodat a FIFO (forbidden)", EACCES, syscall(SYS_mknodat, AT_FDCWD, p(L, "fifo"), S_IFIFO | 0600, 0));
	ROW("mknod a character device", EACCES, syscall(SYS_mknod, p(D, "null"), S_IFCHR | 0600, makedev(1, 3)));

	/* ---- contents and attributes ---- */
	ROW("truncate", 0, syscall(SYS_truncate, p(D, "hard"), 2));
	effect("truncate reached the host", stat(p(D, "f"), &st) == 0 && st.st_size == 2);
	ROW("truncate (forbidden)", EACCES, syscall(SYS_truncate, p(L, "secret"), 0));
	ROW("chmod", 0, syscall(SYS_chmod, p(D, "f"), 0640));
	effect("chmod reached the host", stat(p(D, "f"), &st) == 0 && (st.st_mode & 0777) == 0640);
	ROW("chmod (forbidden)", EACCES, syscall(SYS_chmod, p(L, "secret"), 0777));
	ROW("chmod setuid (the deny filter)", EPERM, syscall(SYS_chmod, p(D, "f"), 04755));
	ROW("fchmodat", 0, syscall(SYS_fchmodat, dfd, "f", 0644));
	ROW("fchmodat2", 0, syscall(SYS_fchmodat2, dfd, "f", 0644, 0));
	ROW("chown to its own owner (set_permissions)", 0, syscall(SYS_chown, p(D, "f"), getuid(), getgid()));
	ROW("chown to another owner (fs:other)", EACCES, syscall(SYS_chown, p(D, "f"), 65534, 65534));
	ROW("lchown to -1 (set_permissions)", 0, syscall(SYS_lchown, p(D, "f"), -1, -1));
	ROW("fchownat to another group (fs:other)", EACCES,
	    syscall(SYS_fchownat, AT_FDCWD, p(D, "f"), getuid(), 65534, 0));
	struct utimbuf ub = { 1000000000, 1000000000 };
	ROW("utime", 0, syscall(SYS_utime, p(D, "f"), &ub));
	effect("utime reached the host", stat(p(D, "f"), &st) == 0 && st.st_mtime == 1000000000);
	struct timeval tv[2] = { { 1100000000, 0 }, { 1100000000, 0 } };
	ROW("utimes", 0, syscall(SYS_utimes, p(D, "f"), tv));
	ROW("futimesat", 0, syscall(SYS_futimesat, dfd, "f", tv));
	ROW("utimensat", 0, syscall(SYS_utimensat, AT_FDCWD, p(D, "f"), NULL, 0));
	ROW("utimensat (forbidden)", EACCES, syscall(SYS_utimensat, AT_FDCWD, p(L, "secret"), NULL, 0));
	ROW("setxattr user.* (write_content)", 0, syscall(SYS_setxattr, p(D, "f"), "user.k", "v", 1, 0));
	ROW("lsetxattr trusted.* (fs:other)", EACCES, syscall(SYS_lsetxattr, p(D, "f"), "trusted.k", "v", 1, 0));
	ROW("setxattr user.* (forbidden)", EACCES, syscall(SYS_setxattr, p(L, "secret"), "user.k", "v", 1, 0));
	ROW("removexattr user.*", 0, syscall(SYS_removexattr, p(D, "f"), "user.k"));
	ROW("lremovexattr security.* (fs:other)", EACCES, syscall(SYS_lremovexattr, p(D, "f"), "security.k"));
	int ffd = (int)syscall(SYS_open, p(D, "f"), O_RDONLY);
	ROW("fchmod of a held decided file", 0, syscall(SYS_fchmod, ffd, 0600));
	effect("fchmod reached the host", stat(p(D, "f"), &st) == 0 && (st.st_mode & 0777) == 0600);
	ROW("fchown of a held decided file to its owner", 0, syscall(SYS_fchown, ffd, getuid(), getgid()));
	ROW("fchown of a held decided file to another (fs:other)", EACCES, syscall(SYS_fchown, ffd, 65534, -1));
	ROW("fsetxattr of a held decided file (fs:other)", EACCES, syscall(SYS_fsetxattr, ffd, "trusted.k", "v", 1, 0));
	ROW("fremovexattr of a held decided file (fs:other)", EACCES, syscall(SYS_fremovexattr, ffd, "trusted.k"));
	ROW("futimens of a held decided file", 0, syscall(SYS_utimensat, ffd, NULL, NULL, 0));
	/* the runtime scratch: the kernel's, whatever the policy */
	mkfile("/tmp/t", "t");
	ROW("chown in /tmp", 0, syscall(SYS_chown, "/tmp/t", getuid(), getgid()));
	ROW("setxattr in /tmp", 0, syscall(SYS_setxattr, "/tmp/t", "user.k", "v", 1, 0));
	memset(buf, 0, sizeof(buf));
	ROW("getxattr in /tmp", 0, syscall(SYS_getxattr, "/tmp/t", "user.k", buf, sizeof(buf)));
	effect("getxattr read the value", strcmp(buf, "v") == 0);
	ROW("rename in /tmp", 0, syscall(SYS_rename, "/tmp/t", "/tmp/t2"));
	ROW("unlink in /tmp", 0, syscall(SYS_unlink, "/tmp/t2"));
	ROW("stat of a runtime file", 0, syscall(SYS_stat, "/usr/bin/true", &st));
	ROW("readlink /proc/self/exe", 0, syscall(SYS_readlink, "/proc/self/exe", buf, sizeof(buf)));
	ROW("readlink /proc/1/exe (the reaper)", EACCES, syscall(SYS_readlink, "/proc/1/exe", buf, sizeof(buf)));
	ROW("chmod of a runtime file", EROFS, syscall(SYS_chmod, "/usr/bin/true", 0777));

	/* ---- launches, the cwd ---- */
	pid_t c = fork();
	if (c == 0) {
		char *a[] = { "true", NULL };
		syscall(SYS_execve, "/usr/bin/true", a, (char *[]){ NULL });
		_exit(99);
	}
	int ws_ = 0;
	waitpid(c, &ws_, 0);
	effect("execve of a permitted program", WIFEXITED(ws_) && WEXITSTATUS(ws_) == 0);
	c = fork();
	if (c == 0) {
		char *a[] = { "true", NULL };
		int fd = (int)syscall(SYS_open, "/usr/bin/true", O_PATH | O_CLOEXEC);
		syscall(SYS_execveat, fd, "", a, (char *[]){ NULL }, AT_EMPTY_PATH);
		_exit(99);
	}
	waitpid(c, &ws_, 0);
	effect("execveat of a descriptor", WIFEXITED(ws_) && WEXITSTATUS(ws_) == 0);
	ROW("execve of a missing program", ENOENT,
	    syscall(SYS_execve, p(D, "no-such-program"), (char *[]){ "x", NULL }, (char *[]){ NULL }));
	ROW("execve of a program no rule permits", EACCES,
	    syscall(SYS_execve, "/usr/bin/id", (char *[]){ "id", NULL }, (char *[]){ NULL }));
	ROW("chdir into a decided directory", 0, syscall(SYS_chdir, p(D, "m1")));
	ROW("chdir (forbidden)", EACCES, syscall(SYS_chdir, p(L, "d")));
	ROW("relative open from the decided cwd", EACCES, syscall(SYS_open, "../locked/secret", O_RDONLY));
	ROW("relative mkdir from the decided cwd", 0, syscall(SYS_mkdir, "sub", 0755));
	effect("... reached the host", exists(p(D, "m1/sub")));
	ROW("fchdir back", 0, syscall(SYS_fchdir, dfd));

	/* ---- sockets, watches ---- */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	snprintf(un.sun_path, sizeof(un.sun_path), "/tmp/med.sock");
	ROW("bind in /tmp", 0, syscall(SYS_bind, s, &un, sizeof(un)));
	ROW("listen", 0, listen(s, 4));
	int s2 = socket(AF_UNIX, SOCK_STREAM, 0);
	ROW("connect to a socket in /tmp", 0, syscall(SYS_connect, s2, &un, sizeof(un)));
	int s3 = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/sock", L);
	ROW("bind in the forbidden part", EACCES, syscall(SYS_bind, s3, &un, sizeof(un)));
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/sock", D);
	ROW("bind in the decided tree", 0, syscall(SYS_bind, s3, &un, sizeof(un)));
	int s4 = socket(AF_UNIX, SOCK_STREAM, 0);
	ROW("connect to a socket in a decided tree (fs:other)", EACCES, syscall(SYS_connect, s4, &un, sizeof(un)));
	int in = inotify_init1(IN_CLOEXEC);
	ROW("inotify_add_watch on a decided directory", 0, syscall(SYS_inotify_add_watch, in, D, IN_CREATE));
	ROW("inotify_add_watch (forbidden)", EACCES, syscall(SYS_inotify_add_watch, in, p(L, "d"), IN_CREATE));

	/* ---- refused whatever the policy says ---- */
	ROW("getxattrat (struct arguments)", ENOSYS, syscall(464, AT_FDCWD, p(D, "f"), 0, "user.k", NULL, 0));
	ROW("name_to_handle_at", EPERM, syscall(SYS_name_to_handle_at, AT_FDCWD, p(D, "f"), buf, buf + 8, 0));
	ROW("open_by_handle_at", EPERM, syscall(SYS_open_by_handle_at, dfd, buf, O_RDONLY));
	ROW("chroot", EPERM, syscall(SYS_chroot, D));
	ROW("uselib", EPERM, syscall(SYS_uselib, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	ROW("io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 1, buf));
	ROW("a second notification listener", EPERM, syscall(SYS_seccomp, 1 /* SET_MODE_FILTER */,
							     8 /* NEW_LISTENER */, buf));
	return fails ? 1 : 0;
}
