/* collector.c - the queue, the writer thread and the file targets
 * (collector.h; docs/records.md "Where records go").
 *
 * tm_emit appends to a list under one mutex and wakes the writer only when
 * the list was empty: a decision pays a lock and a pointer store.  The
 * writer swaps the whole list out, so whatever queued during its last write
 * and sync becomes the next batch: one line of logs and one of spans per
 * target per batch, synced once (Box syncs every line; a batch is the same
 * guarantee for the same lines, paid once). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "live.h"
#include "otlp.h"
#include "otlp_targets.h"
#include "recfile.h"
#include "resource.h"

#define QUEUE_MAX 65536                 /* records waiting; past it they are lost */
#define BATCH_MAX 4096                  /* a batch is written at once past this */
#define WINDOW_NS 5000000LL             /* a batch gathers for 5 ms after its first record */
#define SYNC_NS 1000000000LL            /* and the targets are synced at most every second */
#define LIVE_LINE 1024

struct file_target {
	char *label;                    /* for messages: "[telemetry.x]" or the path */
	char *path;
	unsigned include;
	struct tm_recfile rf;           /* the file, its stage and its counts */
};

struct tm_collector {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t writer;
	bool started, stopping;
	struct tm_rec *head, **tail;
	size_t queued;
	uint64_t emitted, dropped;      /* dropped: never queued (full, or no memory) */
	struct tm_payload *relay_head, **relay_tail;    /* agent payloads */
	size_t relay_queued, relay_bytes;
	uint64_t relayed, relay_dropped;
	char *box_id;

	struct tm_res res;
	char run_hex[33];
	uint8_t run_trace[16];          /* the control records' trace */
	uint8_t root_span[8];
	bool have_root;

	size_t n_files;
	struct file_target *files;
	struct tm_buf out;              /* the writer's lines */
	struct tm_otlp_set *otlp;       /* OTLP targets, or NULL */
	uint64_t otlp_lost;             /* at close */
	enum tm_live live;
	int live_fd;
};

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* ---- file targets ------------------------------------------------------------------- */

/* mkdir -p of path's parent, each made 0700. */
static int make_parents(const char *path)
{
	char tmp[4096];
	size_t len = strlen(path);
	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int open_file(const struct tm_file_target *t, struct file_target *f, char *err,
		     size_t errlen)
{
	const int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
	int fd = -1;
	tm_recfile_init(&f->rf, -1);
	f->include = t->include;
	f->path = strdup(t->path);
	f->label = strdup(t->label ? t->label : t->path);
	if (f->path == NULL || f->label == NULL)
		return fail(err, errlen, "out of memory");
	if (t->dirfd >= 0) {
		/* the default target: private/telemetry/records.jsonl, relative to
		 * the box directory's retained descriptor */
		if (mkdirat(t->dirfd, "telemetry", 0700) != 0 && errno != EEXIST)
			return fail(err, errlen, "%s could not be created to hold the records: %s",
				    t->path, strerror(errno));
		int dfd = openat(t->dirfd, "telemetry", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				 O_CLOEXEC);
		if (dfd >= 0) {
			/* readable: the staged writer reads back the block the
			 * file ends in (recfile.h) */
			fd = openat(dfd, "records.jsonl", (flags & ~O_WRONLY) | O_RDWR, 0600);
			int e = errno;
			close(dfd);
			errno = e;
		}
	} else {
		int r = make_parents(t->path);
		if (r != 0)
			return fail(err, errlen, "%s could not be created to hold the records: %s",
				    t->path, strerror(-r));
		fd = open(t->path, flags, 0600);
	}
	if (fd < 0)
		return fail(err, errlen, "%s could not be opened: %s", t->path, strerror(errno));
	tm_recfile_init(&f->rf, fd);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return fail(err, errlen, "%s could not be opened: it is not a regular file",
			    t->path);
	/* The default target is the box's alone (private/, the box locked for
	 * the run): staged and direct where the file system can.  Anything
	 * else stays O_APPEND, as another process may append to it too. */
	if (t->dirfd >= 0)
		(void)tm_recfile_direct(&f->rf);
	return 0;
}

/* ---- the writer ---------------------------------------------------------------------- */

static void write_live(struct tm_collector *c, struct tm_rec *const *v, size_t n)
{
	struct tm_buf b = { 0 };
	for (size_t i = 0; i < n; i++) {
		const struct tm_rec *r = v[i];
		if (r->scope != TM_SCOPE_POLICY)
			continue;
		if (c->live == TM_LIVE_DENY && r->signal != TM_SIG_DENY)
			continue;
		char line[LIVE_LINE];
		size_t k = tm_live_format(line, sizeof(line), r->text, r->action, r->resource,
					  r->rule);
		tm_buf_put(&b, line, k);
	}
	/* unbuffered: the operator reads it as it happens; a closed or full
	 * terminal costs the line, never the record */
	if (b.n > 0 && !b.oom)
		(void)tm_write_all(c->live_fd, b.p, b.n);
	tm_buf_free(&b);
}

static void write_batch(struct tm_collector *c, struct tm_rec **v, size_t n)
{
	int64_t seen = now_ns();
	for (size_t i = 0; i < n; i++)
		if (v[i]->observed_ns == 0)
			v[i]->observed_ns = seen;
	if (c->live != TM_LIVE_NONE)
		write_live(c, v, n);
	struct tm_rec **sel = malloc(n * sizeof(*sel));
	for (size_t t = 0; t < c->n_files; t++) {
		struct file_target *f = &c->files[t];
		size_t k = 0;
		if (sel == NULL) {
			tm_recfile_lose(&f->rf, TM_RF_RECORDS, n);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i]->signal & f->include)
				sel[k++] = v[i];
		if (k == 0)
			continue;
		if (f->rf.error != 0) {
			tm_recfile_lose(&f->rf, TM_RF_RECORDS, k);
			continue;
		}
		/* the line buffer is kept from batch to batch: a fresh one
		 * would fault its pages in every time */
		struct tm_buf *b = &c->out;
		b->n = 0;
		b->oom = false;
		tm_json_batch(b, &c->res.r, sel, k);
		if (b->oom)
			tm_recfile_lose(&f->rf, TM_RF_RECORDS, k);
		else
			(void)tm_recfile_put(&f->rf, b->p, b->n, TM_RF_RECORDS, k);
		if (b->cap > (8u << 20)) {
			tm_buf_free(b);         /* a burst's buffer is not kept */
		}
	}
	free(sel);
}

/* Agent payloads, each its own line as Box writes them; traces only where
 * `include` names `trace`. */
static void write_relayed(struct tm_collector *c, struct tm_payload *list)
{
	while (list != NULL) {
		struct tm_payload *p = list;
		list = p->next;
		for (size_t t = 0; t < c->n_files; t++) {
			struct file_target *f = &c->files[t];
			if (p->kind == TM_RELAY_TRACES && !(f->include & TM_SIG_TRACE))
				continue;
			(void)tm_recfile_put(&f->rf, p->json, p->json_len, TM_RF_PAYLOADS, 1);
		}
		tm_otlp_relay(c->otlp, p->kind, p->pb, p->pb_len);
		p->release(p);
	}
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec at_ns(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
}

/* Sync every target written since the last sync. */
static void sync_targets(struct tm_collector *c)
{
	for (size_t t = 0; t < c->n_files; t++)
		(void)tm_recfile_sync(&c->files[t].rf);
}

/* When the first of the targets' staged lines are due (recfile.h). */
static int64_t staged_due(const struct tm_collector *c)
{
	int64_t due = INT64_MAX;
	for (size_t t = 0; t < c->n_files; t++) {
		int64_t d = tm_recfile_due(&c->files[t].rf);
		if (d < due)
			due = d;
	}
	return due;
}

/* Write the staged lines that are due by now. */
static void flush_due(struct tm_collector *c, int64_t now)
{
	for (size_t t = 0; t < c->n_files; t++)
		if (tm_recfile_due(&c->files[t].rf) <= now)
			(void)tm_recfile_flush(&c->files[t].rf);
}

/* After a write: sync the targets if a second has passed since the last
 * sync, else write out the staged lines that are due. */
static void after_write(struct tm_collector *c, int64_t *synced, bool *dirty)
{
	int64_t now = mono_ns();
	*dirty = true;
	if (now - *synced >= SYNC_NS) {
		sync_targets(c);
		*synced = mono_ns();
		*dirty = false;
	} else {
		flush_due(c, now);
	}
}

/* The writer.  A batch gathers for WINDOW_NS after its first record (or
 * until BATCH_MAX, or the stop): at a gateway's pace every decision would
 * otherwise find the writer idle and cost a line, a resource and a sync of
 * its own.  The targets are synced at most every SYNC_NS, and at the end;
 * the history, not this file, is what must be durable first
 * (docs/records.md "Batching"). */
static void *writer_main(void *arg)
{
	struct tm_collector *c = arg;
	/* by name in top -H and /proc/<pid>/task/<tid>/comm (one prctl: naming it
	 * from the opener goes through /proc) */
	(void)prctl(PR_SET_NAME, "cairn-records");
	int64_t synced = mono_ns();
	bool dirty = false;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->head == NULL && c->relay_head == NULL && !c->stopping) {
			int64_t when = tm_otlp_due(c->otlp), staged = staged_due(c);
			if (dirty && synced + SYNC_NS < when)
				when = synced + SYNC_NS;
			if (staged < when)
				when = staged;
			if (when == INT64_MAX) {
				pthread_cond_wait(&c->cv, &c->mu);
				continue;
			}
			struct timespec due = at_ns(when);
			if (pthread_cond_timedwait(&c->cv, &c->mu, &due) == ETIMEDOUT &&
			    c->head == NULL && c->relay_head == NULL) {
				pthread_mutex_unlock(&c->mu);
				int64_t now = mono_ns();
				if (dirty && now >= synced + SYNC_NS) {
					sync_targets(c);
					synced = now;
					dirty = false;
				}
				flush_due(c, now);
				if (now >= tm_otlp_due(c->otlp))
					tm_otlp_flush(c->otlp, &c->res.r);
				pthread_mutex_lock(&c->mu);
			}
		}
		if (c->head == NULL && c->relay_head == NULL)
			break;                  /* stopping, and everything written */
		if (c->relay_head != NULL) {
			/* payloads go at once: the agent's exporter batched them already */
			struct tm_payload *relayed = c->relay_head;
			c->relay_head = NULL;
			c->relay_tail = &c->relay_head;
			c->relay_queued = 0;
			c->relay_bytes = 0;
			pthread_mutex_unlock(&c->mu);
			write_relayed(c, relayed);
			/* a steady stream of payloads never lets the wait time out */
			after_write(c, &synced, &dirty);
			pthread_mutex_lock(&c->mu);
			if (c->head == NULL)
				continue;
		}
		struct timespec until = at_ns(mono_ns() + WINDOW_NS);
		while (!c->stopping && c->queued < BATCH_MAX &&
		       pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
			;
		struct tm_rec *list = c->head;
		size_t n = c->queued;
		c->head = NULL;
		c->tail = &c->head;
		c->queued = 0;
		pthread_mutex_unlock(&c->mu);

		struct tm_rec **v = malloc(n * sizeof(*v));
		size_t k = 0;
		for (struct tm_rec *r = list; r != NULL; r = r->next)
			if (v != NULL && k < n)
				v[k++] = r;
		if (v != NULL)
			write_batch(c, v, k);
		else
			for (size_t t = 0; t < c->n_files; t++)
				tm_recfile_lose(&c->files[t].rf, TM_RF_RECORDS, n);
		while (list != NULL) {
			struct tm_rec *next = list->next;
			if (v != NULL && tm_otlp_wants(c->otlp, list))
				tm_otlp_add(c->otlp, list);
			else
				free(list);
			list = next;
		}
		free(v);
		if (tm_otlp_full(c->otlp))
			tm_otlp_flush(c->otlp, &c->res.r);
		after_write(c, &synced, &dirty);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	sync_targets(c);
	c->otlp_lost = tm_otlp_close(c->otlp, &c->res.r, c->live_fd);
	c->otlp = NULL;
	return NULL;
}

/* ---- the interface ---------------------------------------------------------------------- */

void tm_emit(struct tm_collector *c, struct tm_rec *r)
{
	if (c == NULL) {
		free(r);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->emitted++;
	if (r == NULL || c->queued >= QUEUE_MAX || c->stopping) {
		c->dropped++;
		pthread_mutex_unlock(&c->mu);
		free(r);
		return;
	}
	bool wake = c->head == NULL;
	r->next = NULL;
	r->observed_ns = now_ns();
	*c->tail = r;
	c->tail = &r->next;
	c->queued++;
	if (wake || c->queued == BATCH_MAX)
		pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void tm_relay_emit(struct tm_collector *c, struct tm_payload *p)
{
	if (c == NULL) {
		p->release(p);
		return;
	}
	size_t bytes = p->json_len + p->pb_len;
	pthread_mutex_lock(&c->mu);
	c->relayed++;
	/* one payload always fits: Box's 4 MiB body, however it re-encodes */
	if (c->stopping || c->relay_queued >= TM_RELAY_QUEUE ||
	    (c->relay_queued > 0 && bytes > TM_RELAY_QUEUE_BYTES - c->relay_bytes)) {
		c->relay_dropped++;
		pthread_mutex_unlock(&c->mu);
		p->release(p);
		return;
	}
	bool wake = c->head == NULL && c->relay_head == NULL;
	p->next = NULL;
	*c->relay_tail = p;
	c->relay_tail = &p->next;
	c->relay_queued++;
	c->relay_bytes += bytes < TM_RELAY_QUEUE_BYTES ? bytes : TM_RELAY_QUEUE_BYTES;
	if (wake)
		pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void tm_collector_stamp(const struct tm_collector *c, struct tm_relay_stamp *out)
{
	*out = (struct tm_relay_stamp){ .box_id = c->box_id, .run_id = c->run_hex,
					.n_operator = c->res.n_operator,
					.operator_attrs = c->res.kv };
}

void tm_trace_begin(struct tm_trace *t, const char *traceparent)
{
	memset(t, 0, sizeof(*t));
	if (traceparent == NULL || tm_traceparent_parse(traceparent, strlen(traceparent), t) != 0) {
		memset(t, 0, sizeof(*t));
		tm_random_id(t->trace_id, sizeof(t->trace_id));
	}
	tm_random_id(t->span_id, sizeof(t->span_id));
}

void tm_control(struct tm_collector *c, enum tm_control_op op, const char *subject,
		const char *reason, const char *detail)
{
	if (c == NULL)
		return;
	struct tm_trace t = { 0 };
	pthread_mutex_lock(&c->mu);
	memcpy(t.trace_id, c->run_trace, sizeof(t.trace_id));
	tm_random_id(t.span_id, sizeof(t.span_id));
	if (c->have_root) {
		memcpy(t.parent_id, c->root_span, sizeof(t.parent_id));
		t.has_parent = true;
	} else {
		memcpy(c->root_span, t.span_id, sizeof(c->root_span));
		c->have_root = true;
	}
	pthread_mutex_unlock(&c->mu);
	tm_emit(c, tm_record_control(op, subject, reason, detail, now_ns(), &t));
}

const char *tm_collector_run_id(const struct tm_collector *c)
{
	return c->run_hex;
}

int tm_collector_open(const struct tm_config *cfg, struct tm_collector **out, char *err,
		      size_t errlen)
{
	struct tm_collector *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return fail(err, errlen, "out of memory"), -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->tail = &c->head;
	c->relay_tail = &c->relay_head;
	c->live = cfg->live;
	c->live_fd = cfg->live_fd;
	uint8_t run[16];
	if (cfg->run_id != NULL)
		memcpy(run, cfg->run_id, sizeof(run));
	else
		tm_random_id(run, sizeof(run));
	hex(run, sizeof(run), c->run_hex);
	tm_random_id(c->run_trace, sizeof(c->run_trace));
	char why[512];
	int r = tm_res_build(&c->res, cfg->resource_env, cfg->box_id, "box", c->run_hex, why,
			     sizeof(why));
	if (r != 0) {
		fail(err, errlen, "telemetry configuration: %s", r == -ENOMEM ? "out of memory" : why);
		goto bad;
	}
	if ((c->box_id = strdup(cfg->box_id ? cfg->box_id : "")) == NULL) {
		fail(err, errlen, "out of memory");
		r = -ENOMEM;
		goto bad;
	}
	c->files = calloc(cfg->n_files ? cfg->n_files : 1, sizeof(*c->files));
	if (c->files == NULL) {
		fail(err, errlen, "out of memory");
		r = -ENOMEM;
		goto bad;
	}
	for (size_t i = 0; i < cfg->n_files; i++) {
		c->n_files = i + 1;
		if (open_file(&cfg->files[i], &c->files[i], err, errlen) != 0) {
			r = -EIO;
			goto bad;
		}
	}
	if (tm_otlp_open(cfg->otlp, cfg->n_otlp, &c->otlp, err, errlen) != 0) {
		r = -EINVAL;
		goto bad;
	}
	/* the writer takes no signal: the supervisor reads its own from a
	 * signalfd, and a signal delivered to this thread would kill it */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&c->writer, NULL, writer_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		fail(err, errlen, "the records writer could not start: %s", strerror(-r));
		goto bad;
	}
	c->started = true;
	*out = c;
	return 0;
bad:
	tm_collector_close(c, NULL, 0);
	return r ? r : -EINVAL;
}

void tm_collector_stats(struct tm_collector *c, struct tm_stats *out)
{
	pthread_mutex_lock(&c->mu);
	out->emitted = c->emitted;
	uint64_t written = UINT64_MAX, lost = 0, relay_lost = 0;
	for (size_t i = 0; i < c->n_files; i++) {
		const struct tm_recfile *f = &c->files[i].rf;
		if (f->written[TM_RF_RECORDS] < written)
			written = f->written[TM_RF_RECORDS];
		if (f->lost[TM_RF_RECORDS] > lost)
			lost = f->lost[TM_RF_RECORDS];
		if (f->lost[TM_RF_PAYLOADS] > relay_lost)
			relay_lost = f->lost[TM_RF_PAYLOADS];
	}
	out->written = c->n_files ? written : 0;
	out->lost = lost + c->dropped + c->otlp_lost;
	out->relayed = c->relayed;
	out->relay_lost = relay_lost + c->relay_dropped;
	pthread_mutex_unlock(&c->mu);
}

void tm_collector_finish(struct tm_collector *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

int tm_collector_close_stats(struct tm_collector *c, struct tm_stats *st, char *err,
			     size_t errlen)
{
	memset(st, 0, sizeof(*st));
	if (c == NULL)
		return 0;
	if (c->started) {
		tm_collector_finish(c);
		pthread_join(c->writer, NULL);
		c->started = false;
	}
	tm_collector_stats(c, st);
	return tm_collector_close(c, err, errlen);
}

int tm_collector_close(struct tm_collector *c, char *err, size_t errlen)
{
	int rc = 0;
	if (c == NULL)
		return 0;
	if (c->started) {
		tm_collector_finish(c);
		pthread_join(c->writer, NULL);
	}
	for (size_t i = 0; i < c->n_files; i++) {
		struct file_target *f = &c->files[i];
		/* the writer synced what it wrote, last thing */
		if (f->rf.error != 0 && rc == 0) {
			rc = -EIO;
			if (err != NULL)
				fail(err, errlen, "records to %s: %s; %llu records lost", f->label,
				     strerror(f->rf.error),
				     (unsigned long long)f->rf.lost[TM_RF_RECORDS]);
		}
		tm_recfile_close(&f->rf);
		free(f->path);
		free(f->label);
	}
	while (c->head != NULL) {
		struct tm_rec *next = c->head->next;
		free(c->head);
		c->head = next;
	}
	while (c->relay_head != NULL) {
		struct tm_payload *next = c->relay_head->next;
		c->relay_head->release(c->relay_head);
		c->relay_head = next;
	}
	free(c->box_id);
	free(c->files);
	tm_otlp_close(c->otlp, NULL, -1);       /* a start that failed */
	tm_buf_free(&c->out);
	tm_res_free(&c->res);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
	return rc;
}
