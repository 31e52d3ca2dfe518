/* med_calls.h - the system calls the mediator sees (docs/mediator.md "What
 * each call gets"), x86_64 numbers.  Newer than Debian 12's headers are
 * spelled here. */
#ifndef CAIRN_MED_CALLS_H
#define CAIRN_MED_CALLS_H

#include <stddef.h>
#include <sys/syscall.h>

#ifndef SYS_faccessat2
#define SYS_faccessat2 439
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#define MED_SYS_setxattrat 463
#define MED_SYS_getxattrat 464
#define MED_SYS_listxattrat 465
#define MED_SYS_removexattrat 466
#define MED_SYS_file_getattr 468
#define MED_SYS_file_setattr 469

struct med_syscall {
	int nr;
	const char *name;
};

/* Every call the filter hands to the mediator, for the generator and the
 * tests. */
extern const struct med_syscall med_calls[];
extern const size_t med_n_calls;

/* The name of a call med_calls lists ("openat"), or NULL. */
const char *med_call_name(int nr);

#endif
