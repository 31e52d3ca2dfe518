/* filter.h - the workload's seccomp deny filter (docs/security.md "seccomp"). */
#ifndef CAIRN_CT_FILTER_H
#define CAIRN_CT_FILTER_H

#include <stdbool.h>
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

/* The same filter, observed (docs/records.md "Kernel refusals"): every call
 * it refuses with EPERM becomes a notification instead, for the supervisor
 * to answer EPERM and record; installed with SECCOMP_FILTER_FLAG_NEW_LISTENER.
 * Returns the listener (close-on-exec), or -errno when the kernel would not
 * install it (no user notification, or a listener already in this thread's
 * chain: EBUSY); then nothing was loaded, and the caller installs the plain
 * filter instead. */
int ct_filter_install_observed(void);

/* Build the filter with libseccomp and write it as BPF to fd (libseccomp's
 * seccomp_export_bpf), plain or observed.  For the build-time generator and
 * the test that checks the compiled-in programs are current;
 * filter_build.c, which links libseccomp.  Returns 0, or -1 with err. */
int ct_filter_export(int fd, bool observed, char *err, size_t errlen);

/* The deny filter (observed or plain) with every call of notify[0, n_notify)
 * handed to a listener whatever its arguments: the mediator's program
 * (src/mediate/).  A call the deny filter refuses with EPERM arrives as a
 * notification too when observed; the supervisor runs ct_filter_observed_bpf
 * on it to tell a refusal from a mediated call.  Calls refused with another
 * errno (clone3, openat2: ENOSYS) stay refused in the kernel, an error
 * outranking a notification.  For build-time generators. */
int ct_filter_export_with(int fd, bool observed, const int *notify, size_t n_notify, char *err,
			  size_t errlen);

/* The compiled-in programs (filter_bpf.c, generated at build time). */
extern const struct sock_filter ct_filter_bpf[];
extern const size_t ct_filter_bpf_len;
extern const struct sock_filter ct_filter_observed_bpf[];
extern const size_t ct_filter_observed_bpf_len;

#endif
