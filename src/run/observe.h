/* observe.h - the kernel refusals of one sandbox, observed (docs/records.md
 * "Kernel refusals"): a supervisor thread answers the observed deny filter's
 * listener (src/contain/refusal.h) and records each refusal, rate-limited
 * as Box does (src/telemetry/kernel_limit.h). */
#ifndef CAIRN_RUN_OBSERVE_H
#define CAIRN_RUN_OBSERVE_H

#include <stddef.h>

#include "collector.h"

struct run_observer;

/* Answer listener (taken over) on a thread of its own, recording to tm
 * (borrowed until run_observer_stop).  0 and *out, or -1 with err; the
 * listener is closed either way on failure, and the sandbox's refused calls
 * then fail with ENOSYS instead of EPERM. */
int run_observer_start(int listener, struct tm_collector *tm, struct run_observer **out,
		       char *err, size_t errlen);

/* Stop answering (once the workload has ended), record what the open
 * windows counted, close the listener, free.  NULL is a no-op. */
void run_observer_stop(struct run_observer *o);

#endif
