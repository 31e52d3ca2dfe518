/* filter.h - the workload's seccomp deny filter (docs/security.md "seccomp"). */
#ifndef CAIRN_CT_FILTER_H
#define CAIRN_CT_FILTER_H

#include <stddef.h>

#include <linux/filter.h>

/* Load the deny filter into the calling thread only (no TSYNC: the caller is
 * single-threaded); no_new_privs must be set, or it is refused.  Default
 * allow; what it refuses answers EPERM (clone3: ENOSYS, so libc falls back
 * to clone, whose flags it can see); foreign ABIs (i386 int 0x80, x32) are
 * refused whole with EPERM.  Returns 0, or -1 with err[0, errlen) naming the
 * failing call ("seccomp: <call>: <strerror>"); on -1 nothing was loaded.
 * It loads the program compiled at build time (ct_filter_bpf). */
int ct_filter_install(char *err, size_t errlen);

/* Build the filter with libseccomp and write it as BPF to fd (libseccomp's
 * seccomp_export_bpf).  For the build-time generator and the test that
 * checks the compiled-in program is current; filter_build.c, which links
 * libseccomp.  Returns 0, or -1 with err. */
int ct_filter_export(int fd, char *err, size_t errlen);

/* The compiled-in program (filter_bpf.c, generated at build time). */
extern const struct sock_filter ct_filter_bpf[];
extern const size_t ct_filter_bpf_len;

#endif
