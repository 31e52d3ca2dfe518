/* med_filter.c - med_filter.h. */
#include "filter.h"
#include "med_bpf.h"
#include "med_filter.h"

const struct sock_fprog *med_filter_prog(void)
{
	static struct sock_fprog p;
	p.len = (unsigned short)med_filter_bpf_len;
	p.filter = (struct sock_filter *)med_filter_bpf;
	return &p;
}

bool med_filter_refused(const struct seccomp_data *d)
{
	uint32_t r = med_bpf_run(ct_filter_observed_bpf, ct_filter_observed_bpf_len, d);
	return (r & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ALLOW;
}
