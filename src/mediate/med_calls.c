/* med_calls.c - the list of med_calls.h. */
#include "med_calls.h"

#define C(n) { SYS_##n, #n }
#define M(n) { MED_SYS_##n, #n }

const struct med_syscall med_calls[] = {
	/* opens */
	C(open), C(openat), C(creat),
	/* metadata reads */
	C(stat), C(lstat), C(newfstatat), C(statx), C(access), C(faccessat), C(faccessat2),
	C(readlink), C(readlinkat), C(statfs),
	C(getxattr), C(lgetxattr), C(listxattr), C(llistxattr), M(getxattrat), M(listxattrat),
	M(file_getattr),
	/* the namespace */
	C(mkdir), C(mkdirat), C(rmdir), C(unlink), C(unlinkat), C(rename), C(renameat),
	C(renameat2), C(link), C(linkat), C(symlink), C(symlinkat), C(mknod), C(mknodat),
	/* size and attributes */
	C(truncate), C(chmod), C(fchmodat), C(fchmodat2), C(chown), C(lchown), C(fchownat),
	C(utime), C(utimes), C(futimesat), C(utimensat), C(setxattr), C(lsetxattr),
	M(setxattrat), C(removexattr), C(lremovexattr), M(removexattrat), M(file_setattr),
	C(fchmod), C(fchown), C(fsetxattr), C(fremovexattr),
	/* launches, the working directory */
	C(execve), C(execveat), C(chdir),
	/* addresses a socket call reads from memory; watches */
	C(connect), C(bind), C(inotify_add_watch),
};

const size_t med_n_calls = sizeof(med_calls) / sizeof(med_calls[0]);

const char *med_call_name(int nr)
{
	for (size_t i = 0; i < med_n_calls; i++)
		if (med_calls[i].nr == nr)
			return med_calls[i].name;
	return NULL;
}
