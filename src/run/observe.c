/* observe.c - the observer thread (observe.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kernel_limit.h"
#include "observe.h"
#include "refusal.h"

#define ARGV_MAX 80                     /* argv words read: the record keeps 64 */

struct run_observer {
	int fd, stop_fd;
	pthread_t thread;
	struct tm_kernel_limit *limit;
	struct ct_refusal ref;          /* big: not on the thread's stack */
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(struct run_observer *o)
{
	const struct ct_refusal *f = &o->ref;
	const char *argv[ARGV_MAX];
	/* argv[0] is the program's own spelling; the record names the executable */
	size_t n = ct_refusal_argv(f, argv, ARGV_MAX);
	const struct tm_kernel_refusal k = {
		.time_ns = clock_ns(CLOCK_REALTIME), .syscall = f->syscall, .arguments = f->args,
		.pid = (int)f->pid, .program = f->exe, .n_args = n > 0 ? n - 1 : 0,
		.args = argv + 1, .cwd = f->cwd,
	};
	tm_kernel_refused(o->limit, &k, clock_ns(CLOCK_MONOTONIC));
}

static void *observe_main(void *arg)
{
	struct run_observer *o = arg;
	for (;;) {
		int64_t due = tm_kernel_due(o->limit), now = clock_ns(CLOCK_MONOTONIC);
		int timeout = due == INT64_MAX ? -1
			: due <= now ? 0 : (int)((due - now) / 1000000 + 1);
		int r = ct_refusal_next(o->fd, o->stop_fd, timeout, &o->ref);
		if (r == 1)
			record(o);
		tm_kernel_tick(o->limit, clock_ns(CLOCK_MONOTONIC));
		uint64_t v;
		if (r < 0 || read(o->stop_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			break;          /* the workload's every process has ended, or the stop */
	}
	return NULL;
}

int run_observer_start(int listener, struct tm_collector *tm, struct run_observer **out,
		       char *err, size_t errlen)
{
	struct run_observer *o = calloc(1, sizeof(*o));
	if (o == NULL || (o->limit = tm_kernel_limit_new(tm)) == NULL) {
		free(o);
		close(listener);
		snprintf(err, errlen, "kernel refusals: out of memory");
		return -1;
	}
	o->fd = listener;
	o->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* the thread takes no signal: the supervisor reads its own from a signalfd */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = o->stop_fd < 0 ? errno : pthread_create(&o->thread, NULL, observe_main, o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "kernel refusals: cannot start the observer: %s", strerror(rc));
		if (o->stop_fd >= 0)
			close(o->stop_fd);
		close(listener);
		tm_kernel_limit_free(o->limit);
		free(o);
		return -1;
	}
	*out = o;
	return 0;
}

void run_observer_stop(struct run_observer *o)
{
	if (o == NULL)
		return;
	uint64_t one = 1;
	if (write(o->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		abort();        /* a stop that cannot be signalled must not hang */
	pthread_join(o->thread, NULL);
	tm_kernel_limit_free(o->limit);         /* the open windows' counts, recorded */
	close(o->fd);
	close(o->stop_fd);
	free(o);
}
