/* med_bpf.h - run a seccomp program in the supervisor, as the kernel would on
 * one call.  The mediator's filter folds the deny filter's refusals and the
 * mediated calls into one listener (a thread's filters may hold only one);
 * running the observed deny program on a notification's data tells which it
 * is (docs/mediator.md "One listener"). */
#ifndef CAIRN_MED_BPF_H
#define CAIRN_MED_BPF_H

#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

/* The program's return value (SECCOMP_RET_* | data) for data.  A program
 * that reads outside seccomp_data, divides by zero, jumps out of range or
 * uses an instruction seccomp refuses returns SECCOMP_RET_KILL_PROCESS:
 * the kernel would never have loaded it. */
uint32_t med_bpf_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *data);

#endif
