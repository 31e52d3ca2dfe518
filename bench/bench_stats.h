/* bench_stats.h - the clock and percentiles every benchmark here uses. */
#ifndef CAIRN_BENCH_STATS_H
#define CAIRN_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The p-quantile (p in [0, 1], nearest rank) of v[0, n), which it sorts; 0 when empty. */
static inline uint64_t bench_pct(uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, bench_cmp_u64);
	return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

#endif
