/* med_server.c - the listener and its workers (mediate.h).
 *
 * One thread at a time waits in SECCOMP_IOCTL_NOTIF_RECV on the one
 * listener (the receiver's token, med_int.h); spares join it while it is
 * stuck on one call, so a slow decision or a stalled read of one process's
 * memory holds only that process's call.  The listener is set to wake its
 * receiver on the caller's CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 6.6):
 * measured here, a let-through round trip took 49 us without it and 4.9 us
 * with it (docs/mediator.md "One listener").  Each worker has its own umask
 * (0: emulated creates apply the caller's) and cwd (CLONE_FS unshared). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dogwood.h"
#include "med_calls.h"
#include "med_filter.h"
#include "kernel_limit.h"
#include "med_int.h"
#include "refusal.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define WORKERS_DEFAULT 4
#define RECEIVERS 2             /* taking turns with the token (med_int.h) */
#define WORKERS_MAX 32

/* ---- answers ------------------------------------------------------------------ */

bool med_valid(struct med_call *c)
{
	return ioctl(c->m->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &c->n->id) == 0;
}

void med_continue(struct med_call *c)
{
	c->r->val = 0;
	c->r->error = 0;
	c->r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	c->answered = true;
	atomic_fetch_add(&c->m->st_continued, 1);
}

void med_answer(struct med_call *c, int64_t val)
{
	c->r->val = val;
	c->r->error = 0;
	c->r->flags = 0;
	c->answered = true;
	atomic_fetch_add(&c->m->st_emulated, 1);
}

void med_fail(struct med_call *c, int err)
{
	c->r->val = 0;
	c->r->error = -(err < 0 ? -err : err);
	c->r->flags = 0;
	c->answered = true;
}

static void hand_on(struct med_call *c)
{
	if (c->token == NULL || !*c->token)
		return;
	atomic_store(&c->m->busy_since, 0);
	*c->token = false;
	pthread_mutex_unlock(&c->m->recv_lock);
}

int med_send_fd(struct med_call *c, int fd, bool cloexec)
{
	hand_on(c);
	struct seccomp_notif_addfd a = {
		.id = c->n->id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = (uint32_t)fd,
		.newfd = 0, .newfd_flags = cloexec ? O_CLOEXEC : 0,
	};
	int rc = ioctl(c->m->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	if (rc < 0)
		return -errno;
	/* answered by the kernel with the new descriptor */
	c->answered = true;
	c->r->id = 0;
	atomic_fetch_add(&c->m->st_emulated, 1);
	return 0;
}

int med_pidfd(struct med_call *c)
{
	return (int)syscall(SYS_pidfd_open, c->pid, O_EXCL /* PIDFD_THREAD */);
}

int med_base(struct med_call *c, int dirfd, char out[PATH_MAX])
{
	char p[64];
	if (dirfd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)c->pid);
	else if (dirfd < 0)
		return -EBADF;
	else
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)c->pid, dirfd);
	ssize_t n = readlink(p, out, PATH_MAX);
	if (n < 0)
		return dirfd == AT_FDCWD ? -ENOENT : -EBADF;
	if ((size_t)n >= PATH_MAX)
		return -ENAMETOOLONG;
	out[n] = '\0';
	if (out[0] != '/')
		return -ENOTDIR;        /* a pipe, a socket, an anonymous inode */
	static const char deleted[] = " (deleted)";
	size_t dl = sizeof(deleted) - 1;
	if ((size_t)n > dl && memcmp(out + n - dl, deleted, dl) == 0)
		return -ENOENT;
	if (dirfd != AT_FDCWD) {
		struct stat st;
		if (stat(p, &st) != 0)
			return -EBADF;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return 0;
}

/* ---- one notification ----------------------------------------------------------- */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define ARGV_MAX 80                     /* argv words read: the record keeps 64 */

static void kernel_record(struct med *m, const struct ct_refusal *f)
{
	const char *argv[ARGV_MAX];
	/* argv[0] is the program's own spelling; the record names the executable */
	size_t n = ct_refusal_argv(f, argv, ARGV_MAX);
	const struct tm_kernel_refusal k = {
		.time_ns = clock_ns(CLOCK_REALTIME), .syscall = f->syscall, .arguments = f->args,
		.pid = (int)f->pid, .program = f->exe, .n_args = n > 0 ? n - 1 : 0,
		.args = argv + 1, .cwd = f->cwd,
	};
	pthread_mutex_lock(&m->klimit_lock);
	tm_kernel_refused(m->klimit, &k, clock_ns(CLOCK_MONOTONIC));
	pthread_mutex_unlock(&m->klimit_lock);
}

int64_t med_kernel_due(struct med *m)
{
	if (m->klimit == NULL)
		return INT64_MAX;
	pthread_mutex_lock(&m->klimit_lock);
	int64_t due = tm_kernel_due(m->klimit);
	pthread_mutex_unlock(&m->klimit_lock);
	return due;
}

void med_kernel_tick(struct med *m)
{
	if (m->klimit == NULL)
		return;
	pthread_mutex_lock(&m->klimit_lock);
	tm_kernel_tick(m->klimit, clock_ns(CLOCK_MONOTONIC));
	pthread_mutex_unlock(&m->klimit_lock);
}

static bool is_exec(int nr)
{
	return nr == SYS_execve || nr == SYS_execveat;
}

static void serve(struct med *m, struct med_call *c)
{
	const struct seccomp_data *d = &c->n->data;
	atomic_fetch_add(&m->st_notifications, 1);
	if (med_filter_refused(d)) {
		/* the deny filter's refusal, folded into this listener: answered
		 * as the plain filter would, and recorded (docs/records.md "Kernel
		 * refusals") */
		atomic_fetch_add(&m->st_kernel, 1);
		if (m->klimit != NULL && ct_refusal_describe(m->listener, c->n, c->ref))
			kernel_record(m, c->ref);
		med_fail(c, EPERM);
		return;
	}
	if (!med_exec_check(c))
		return;
	if (is_exec(d->nr))
		med_exec_call(c);
	else
		med_fs_call(c);
	if (!c->answered)
		med_fail(c, ENOSYS);
}

static void noop(int sig)
{
	(void)sig;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct worker {
	struct med *m;
	bool standby;
	pthread_t thread;
};

static void *worker(void *arg)
{
	struct worker *wk = arg;
	struct med *m = wk->m;
	prctl(PR_SET_NAME, wk->standby ? "cairn-med-spare" : "cairn-mediate", 0, 0, 0);
	/* our own cwd and umask: emulated creates take the caller's */
	if (unshare(CLONE_FS) == 0)
		umask(0);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);

	struct seccomp_notif *n = calloc(1, m->notif_size);
	struct seccomp_notif_resp *r = calloc(1, m->resp_size);
	struct dw_request *req = dw_request_new();
	struct ct_refusal *ref = malloc(sizeof(*ref));
	bool token = false;
	if (n == NULL || r == NULL || req == NULL || ref == NULL)
		goto out;
	while (!atomic_load(&m->stopping)) {
		if (!wk->standby && !token) {
			pthread_mutex_lock(&m->recv_lock);
			token = true;
			continue;       /* the stop may have come meanwhile */
		}
		if (wk->standby) {
			/* join the receiver only while it is stuck on one call */
			struct timespec nap = { 0, MED_STANDBY_NS };
			nanosleep(&nap, NULL);
			uint64_t since = atomic_load(&m->busy_since);
			if (since == 0 || mono_ns() - since < MED_STANDBY_NS)
				continue;
		}
		memset(n, 0, m->notif_size);
		if (ioctl(m->listener, SECCOMP_IOCTL_NOTIF_RECV, n) != 0) {
			if (errno == EINTR)
				continue;
			if (errno != ENOENT)
				break;
			/* ENOENT: a call withdrawn (its process killed), or no process
			 * left under the filter, after which every RECV returns at
			 * once: a worker that went on would spin and starve the
			 * supervisor until the stop */
			struct pollfd pf = { .fd = m->listener, .events = POLLIN };
			if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLHUP))
				break;
			continue;
		}
		if (token)
			atomic_store(&m->busy_since, mono_ns());
		memset(r, 0, m->resp_size);
		r->id = n->id;
		struct med_call c = { .m = m, .n = n, .r = r, .pid = (pid_t)n->pid, .req = req,
				      .ref = ref, .token = wk->standby ? NULL : &token };
		serve(m, &c);
		if (c.r->id != 0)
			(void)ioctl(m->listener, SECCOMP_IOCTL_NOTIF_SEND, r);
		if (token)
			atomic_store(&m->busy_since, 0);
	}
	if (token)
		pthread_mutex_unlock(&m->recv_lock);
out:
	free(n);
	free(r);
	free(ref);
	dw_request_free(req);
	return NULL;
}

/* ---- the committer --------------------------------------------------------------- */

static void *committer(void *arg)
{
	struct med *m = arg;
	prctl(PR_SET_NAME, "cairn-commit", 0, 0, 0);
	pthread_mutex_lock(&m->commit_lock);
	for (;;) {
		while (!m->commit_dirty && !m->commit_stop)
			pthread_cond_wait(&m->commit_cond, &m->commit_lock);
		if (!m->commit_dirty && m->commit_stop)
			break;
		pthread_mutex_unlock(&m->commit_lock);
		/* a moment for the writes behind this one: one fdatasync for them all */
		struct timespec lag = { 0, MED_COMMIT_LAG_NS / 2 };
		nanosleep(&lag, NULL);
		pthread_mutex_lock(&m->commit_lock);
		m->commit_dirty = false;
		pthread_mutex_unlock(&m->commit_lock);
		(void)dw_sync(m->mon);
		pthread_mutex_lock(&m->commit_lock);
	}
	pthread_mutex_unlock(&m->commit_lock);
	(void)dw_sync(m->mon);
	return NULL;
}

/* ---- start and stop ------------------------------------------------------------- */

int med_start(int listener, const struct med_config *cfg, struct med **out, char *err,
	      size_t errlen)
{
	struct seccomp_notif_sizes sz;
	struct med *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		close(listener);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->listener = listener;
	m->stop_fd = -1;
	m->mon = cfg->mon;
	m->eng = cfg->eng;
	m->tm = cfg->tm;
	m->workload = cfg->workload_pid;
	m->shim_dev = cfg->shim_dev;
	m->shim_ino = cfg->shim_ino;
	m->tools = cfg->tool_programs;
	m->n_tools = cfg->n_tool_programs;
	m->observe_grant_reads = cfg->observe_grant_reads;
	pthread_mutex_init(&m->said_lock, NULL);
	pthread_mutex_init(&m->klimit_lock, NULL);
	pthread_mutex_init(&m->recv_lock, NULL);
	pthread_mutex_init(&m->commit_lock, NULL);
	pthread_cond_init(&m->commit_cond, NULL);
	m->sync_each = cfg->sync_each;
	if (cfg->tm != NULL && (m->klimit = tm_kernel_limit_new(cfg->tm)) == NULL) {
		close(listener);
		free(m);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0) {
		snprintf(err, errlen, "seccomp(SECCOMP_GET_NOTIF_SIZES): %s", strerror(errno));
		goto fail;
	}
	/* the kernel's structures may be larger than our headers' */
	m->notif_size = sz.seccomp_notif > sizeof(struct seccomp_notif) ? sz.seccomp_notif
									 : sizeof(struct seccomp_notif);
	m->resp_size = sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
			       ? sz.seccomp_notif_resp : sizeof(struct seccomp_notif_resp);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
		  0) != 0) {
		/* before 6.6: correct, ten times slower per call */
	}
	if (med_view_open(&m->view, cfg, err, errlen) != 0)
		goto fail_view;
	if (med_execs_new(m, err, errlen) != 0)
		goto fail_execs;
	if (!m->sync_each) {
		int e = pthread_create(&m->committer, NULL, committer, m);
		if (e != 0) {
			snprintf(err, errlen, "cannot start the mediator's committer: %s", strerror(e));
			goto fail_workers;
		}
		m->have_committer = true;
	}
	struct sigaction sa = { .sa_handler = noop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);          /* no SA_RESTART: it ends a RECV */
	m->n_workers = cfg->workers ? cfg->workers : WORKERS_DEFAULT;
	if (m->n_workers > WORKERS_MAX)
		m->n_workers = WORKERS_MAX;
	m->workers = calloc(m->n_workers, sizeof(*m->workers));
	if (m->workers == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail_workers;
	}
	for (unsigned i = 0; i < m->n_workers; i++) {
		m->workers[i] = (struct worker){ .m = m, .standby = i >= RECEIVERS };
		int e = pthread_create(&m->workers[i].thread, NULL, worker, &m->workers[i]);
		if (e != 0) {
			snprintf(err, errlen, "cannot start a mediator thread: %s", strerror(e));
			m->n_workers = i;
			med_stop(m);
			return -1;
		}
	}
	*out = m;
	return 0;
fail_workers:
	med_execs_free(m);
fail_execs:
	med_view_close(&m->view);
fail_view:
fail:
	close(listener);
	tm_kernel_limit_free(m->klimit);
	pthread_mutex_destroy(&m->said_lock);
	pthread_mutex_destroy(&m->klimit_lock);
	free(m);
	return -1;
}

void med_stop(struct med *m)
{
	if (m == NULL)
		return;
	atomic_store(&m->stopping, true);
	/* a worker waits in RECV, a spare in its nap: a signal ends the wait.
	 * One that was between its check of the flag and the call has not seen
	 * it: signalled again each millisecond until it has ended. */
	for (unsigned i = 0; i < m->n_workers; i++)
		pthread_kill(m->workers[i].thread, SIGUSR2);
	for (unsigned i = 0; i < m->n_workers; i++) {
		for (;;) {
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 1000000;
			if (dl.tv_nsec >= 1000000000) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000;
			}
			if (pthread_timedjoin_np(m->workers[i].thread, NULL, &dl) == 0)
				break;
			pthread_kill(m->workers[i].thread, SIGUSR2);
		}
	}
	free(m->workers);
	med_execs_free(m);
	if (m->have_committer) {
		/* the last writes made durable before the history closes */
		pthread_mutex_lock(&m->commit_lock);
		m->commit_stop = true;
		pthread_cond_signal(&m->commit_cond);
		pthread_mutex_unlock(&m->commit_lock);
		pthread_join(m->committer, NULL);
	}
	tm_kernel_limit_free(m->klimit);        /* the open windows' counts, recorded */
	close(m->listener);
	med_view_close(&m->view);
	pthread_mutex_destroy(&m->said_lock);
	pthread_mutex_destroy(&m->klimit_lock);
	pthread_mutex_destroy(&m->recv_lock);
	pthread_mutex_destroy(&m->commit_lock);
	pthread_cond_destroy(&m->commit_cond);
	free(m);
}

void med_get_stats(struct med *m, struct med_stats *out)
{
	*out = (struct med_stats){
		.notifications = atomic_load(&m->st_notifications),
		.continued = atomic_load(&m->st_continued),
		.emulated = atomic_load(&m->st_emulated),
		.decided = atomic_load(&m->st_decided),
		.denied = atomic_load(&m->st_denied),
		.refused_floor = atomic_load(&m->st_floor),
		.kernel_refusals = atomic_load(&m->st_kernel),
		.execs = atomic_load(&m->st_execs),
	};
}
