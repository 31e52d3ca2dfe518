/* landlock.h - Landlock for the workload: the rights of its view, nothing else. */
#ifndef CAIRN_CT_LANDLOCK_H
#define CAIRN_CT_LANDLOCK_H

#include <stddef.h>

#include "contain.h"

/* The highest Landlock ABI this kernel offers, or -errno (-ENOSYS, -EOPNOTSUPP
 * when Landlock is built but disabled). */
int ct_landlock_abi(void);

/* Restrict the calling thread (and what it later execs) to rules[0, n): every
 * filesystem right the ABI knows is handled, each rule allows its CT_* access
 * beneath its path, and from ABI 6 abstract unix sockets and signals are
 * scoped to the domain.  Network rights are not handled: the network
 * namespace is that boundary.  Paths are opened following symlinks; a rule on
 * a non-directory keeps only the rights a file can have (a CT_LIST rule on a
 * file then allows nothing).  no_new_privs must already be set (refused
 * otherwise), and abi must be >= 1 (a negative abi, ct_landlock_abi()'s
 * -errno, is reported as such).  A rule whose path does not exist in the view
 * is an error.  Returns 0, or -1 with err[0, errlen) naming the path or the
 * call that failed; on -1 the thread is not restricted. */
int ct_landlock_apply(int abi, const struct ct_rule *rules, size_t n, char *err, size_t errlen);

#endif
