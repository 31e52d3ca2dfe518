/* med_filter.h - the mediator's seccomp program: the deny filter, observed,
 * with every call of med_calls.h handed to the supervisor's listener
 * (docs/mediator.md "One listener").  Installed by the launcher in the
 * workload as its last filter (ct_spec.notify_prog, with
 * ct_spec.notify_has_deny), in place of the deny filter. */
#ifndef CAIRN_MED_FILTER_H
#define CAIRN_MED_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

extern const struct sock_filter med_filter_bpf[];
extern const size_t med_filter_bpf_len;

/* The program for ct_spec.notify_prog (static storage). */
const struct sock_fprog *med_filter_prog(void);

/* A notification the deny filter's rules refused (to be answered EPERM and
 * recorded as a kernel refusal), rather than a call to mediate. */
bool med_filter_refused(const struct seccomp_data *d);

#endif
