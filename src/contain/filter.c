/* filter.c - load the deny filter compiled at build time (filter_build.c,
 * gen_filter.c) into the calling thread. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain.h"
#include "filter.h"

int ct_filter_install(char *err, size_t errlen)
{
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		if (err && errlen > 0)
			snprintf(err, errlen, "seccomp: no_new_privs is not set");
		return -1;
	}
	struct sock_fprog prog = { .len = (unsigned short)ct_filter_bpf_len,
				   .filter = (struct sock_filter *)ct_filter_bpf };
	if (ct_filter_bpf_len == 0 || ct_filter_bpf_len > BPF_MAXINSNS ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		if (err && errlen > 0)
			snprintf(err, errlen, "seccomp: seccomp(SET_MODE_FILTER): %s",
				 ct_filter_bpf_len ? ct_strerror(errno) : "empty program");
		return -1;
	}
	return 0;
}

int ct_filter_install_observed(void)
{
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return -EPERM;
	struct sock_fprog prog = { .len = (unsigned short)ct_filter_observed_bpf_len,
				   .filter = (struct sock_filter *)ct_filter_observed_bpf };
	if (ct_filter_observed_bpf_len == 0 || ct_filter_observed_bpf_len > BPF_MAXINSNS)
		return -EINVAL;
	/* the listener is close-on-exec: the workload never holds it */
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	return fd < 0 ? -errno : (int)fd;
}
