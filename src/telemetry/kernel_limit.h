/* kernel_limit.h - Box's rate limit on kernel refusal records (docs/records.md
 * "Kernel refusals"): the first refusal of each (program, system call,
 * arguments) is recorded at once; its repeats in the next 10 s are counted,
 * and when the window closes one record of the last of them says how many
 * (strands.box.containment.suppressed); the next refusal after that is
 * recorded at once again.  At most TM_KERNEL_KEYS such keys are kept; past
 * them refusals are counted per system call alone, and refusals_unobserved
 * says so once.  Every count reaches a record: the windows still open are
 * closed by tm_kernel_limit_free.
 *
 * Used by one thread (the supervisor's observer); records go to the
 * collector, which is thread-safe.  Times are CLOCK_MONOTONIC ns, passed in
 * so tests can drive the windows. */
#ifndef CAIRN_TM_KERNEL_LIMIT_H
#define CAIRN_TM_KERNEL_LIMIT_H

#include <stdint.h>

#include "collector.h"
#include "record.h"

#define TM_KERNEL_KEYS 256
#define TM_KERNEL_WINDOW_NS (10 * 1000000000LL)

struct tm_kernel_limit;

/* A limiter recording to c (NULL: counts only).  NULL on ENOMEM. */
struct tm_kernel_limit *tm_kernel_limit_new(struct tm_collector *c);

/* One refusal (k->suppressed is ignored), at monotonic time now. */
void tm_kernel_refused(struct tm_kernel_limit *l, const struct tm_kernel_refusal *k, int64_t now);

/* When the next open window closes (INT64_MAX: none), and closing every
 * window due by now. */
int64_t tm_kernel_due(const struct tm_kernel_limit *l);
void tm_kernel_tick(struct tm_kernel_limit *l, int64_t now);

/* What it saw: refusals in all, and records made of them. */
struct tm_kernel_stats {
	uint64_t refused, recorded;
};
void tm_kernel_stats(const struct tm_kernel_limit *l, struct tm_kernel_stats *out);

/* Close every open window (their records made) and free.  NULL is a no-op. */
void tm_kernel_limit_free(struct tm_kernel_limit *l);

#endif
