/* monitor.c - the stateful authorizer: history, temporal leaves, decisions.
 *
 * Per event, under one lock (docs/engine.md "Temporal conditions"):
 *   1. stamp it (unless the caller's time is taken: replay); an event of a
 *      history kind is appended to the history now;
 *   2. feed it to the incremental state;
 *   3. if its kind decides, run the rules (temporal leaves are computed on
 *      demand: only when the rule's scope matched and earlier conjuncts held),
 *      then append the event with the decision taken — still under the lock
 *      and before the caller sees the decision, so a decision never exists
 *      for an event the history lacks, and the history holds what was decided
 *      (docs/engine.md "Decisions in the history");
 *   4. drop what no window can reach any more.
 *
 * Retention.  A leaf evaluated at a decision with timestamp T looks back at
 * most its span (nested windows summed), and no later decision has a
 * timestamp below the floor F (live: timestamps only grow; replay: the
 * smallest timestamp still to come).  Events older than F - max span are dead;
 * they are dropped from the front only, so the retained history is always a
 * contiguous run of positions — which keeps `previous` and the ∀ of `since`
 * exact even when timestamps go backwards. */
#include "dogwood.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine.h"
#include "event.h"
#include "event_codec.h"
#include "json_value.h"
#include "log.h"
#include "tinterp.h"
#include "tplan.h"
#include "trace.h"
#include "tstate.h"
#include "value.h"

/* ---- traces ---------------------------------------------------------------- */

struct dw_trace {
	struct dw_arena arena;
	struct dw_event *ev;
	size_t n;
	int64_t *floor;            /* floor[i] = min ts of events i.. (replay retention) */
};

int dw_trace_load(const char *text, size_t len, struct dw_trace **out, char *err, size_t errlen)
{
	struct dw_trace *t = calloc(1, sizeof *t);
	int r;

	if (t == NULL)
		return -ENOMEM;
	dw_arena_init(&t->arena);
	r = dw_trace_parse(&t->arena, text, len, &t->ev, &t->n, err, errlen);
	if (r == 0) {
		t->floor = DW_NEWN(&t->arena, int64_t, t->n + 1);
		if (t->floor == NULL)
			r = -ENOMEM;
	}
	if (r != 0) {
		dw_trace_free(t);
		return r;
	}
	t->floor[t->n] = INT64_MAX;
	for (size_t i = t->n; i-- > 0;)
		t->floor[i] = t->ev[i].ts < t->floor[i + 1] ? t->ev[i].ts : t->floor[i + 1];
	*out = t;
	return 0;
}

void dw_trace_free(struct dw_trace *t)
{
	if (t == NULL)
		return;
	dw_arena_fini(&t->arena);
	free(t);
}

size_t dw_trace_len(const struct dw_trace *t)
{
	return t->n;
}

int64_t dw_trace_ts(const struct dw_trace *t, size_t i)
{
	return i < t->n ? t->ev[i].ts / DW_NS_PER_SEC : 0;
}

int64_t dw_trace_ts_ns(const struct dw_trace *t, size_t i)
{
	return i < t->n ? t->ev[i].ts : 0;
}

void dw_trace_ts_format(int64_t ns, char buf[32])
{
	_Static_assert(DW_TRACE_TS_MAX == 32, "dogwood.h promises 32 bytes");
	dw_trace_ts_text(ns, buf);
}

/* ---- the monitor ------------------------------------------------------------ */

struct dw_monitor {
	const struct dw_engine *eng;
	const struct dw_tplan *plan;
	unsigned flags;
	pthread_mutex_t lock;
	/* retained history: h[h_off .. h_off + h_n), positions consecutive */
	struct dw_hent *h;
	size_t h_off, h_n, h_cap;
	uint64_t next_pos;
	int64_t last_ts;
	struct dw_tstate *st;      /* NULL in reference mode */
	bool keep_events;          /* some leaf reads past events (scan, `previous`) */
	int64_t max_ts;            /* newest timestamp seen */
	bool disordered;           /* some event was older than one before it */
	struct dw_arena scratch;
	int64_t (*clock)(void *);
	void *clock_arg;
	/* live requests: permitted, outcome not recorded yet (by ticket) */
	uint64_t next_ticket;
	struct dw_pending *pend;
	size_t n_pend, cap_pend;
	uint64_t events;
	uint64_t logged;             /* events written by this monitor (not replayed) */
	bool replaying;            /* recovery: events come from the log */
	/* the durable history (NULL: in memory only) */
	struct hist_log *log;
	struct dw_buf enc;         /* encoding buffer, reused */
	bool broken;               /* an append failed: every later decision denies */
	uint64_t replayed;
	bool from_snapshot;
	/* compaction runs on its own thread: only its start and its finish (the
	 * records appended meanwhile) hold the lock */
	bool compacting;
	bool snapshotting;         /* a snapshot file is being written */
	pthread_mutex_t checkpointing;
	bool compactor_live;       /* started and not joined yet */
	pthread_t compactor;
	struct hist_compaction *comp;
	pthread_cond_t compacted;
};

struct dw_pending {
	uint64_t ticket;
	struct dw_event *req;      /* clone of the request event */
};

void dw_monitor_free(struct dw_monitor *m)
{
	if (m == NULL)
		return;
	if (m->compactor_live)
		pthread_join(m->compactor, NULL);
	/* Best effort: the log has it all.  A monitor that wrote nothing leaves
	 * the snapshot as it was (a run that decided nothing pays no fsync). */
	if (m->log != NULL && !m->broken && m->logged > 0)
		(void)dw_monitor_checkpoint(m);
	for (size_t i = 0; m->keep_events && i < m->h_n; i++)
		free((void *)m->h[m->h_off + i].ev);
	for (size_t i = 0; i < m->n_pend; i++)
		free(m->pend[i].req);
	free(m->pend);
	hist_close(m->log);
	dw_buf_free(&m->enc);
	free(m->h);
	dw_tstate_free(m->st);
	dw_arena_fini(&m->scratch);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->checkpointing);
	pthread_cond_destroy(&m->compacted);
	free(m);
}

static int dw_history_open(struct dw_monitor *m, const char *dir, char *err, size_t errlen);

int dw_monitor_new(const struct dw_engine *eng, const struct dw_monitor_config *cfg,
		   struct dw_monitor **out, char *err, size_t errlen)
{
	struct dw_monitor *m = calloc(1, sizeof *m);
	int r;

	if (m == NULL)
		return -ENOMEM;
	m->eng = eng;
	m->plan = eng->plan;
	m->flags = cfg ? cfg->flags : 0;
	m->last_ts = INT64_MIN;
	m->next_ticket = 1;
	if (cfg != NULL && cfg->clock != NULL) {
		m->clock = cfg->clock;
		m->clock_arg = cfg->clock_arg;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->checkpointing, NULL);
	pthread_cond_init(&m->compacted, NULL);
	dw_arena_init(&m->scratch);
	m->keep_events = (m->flags & DW_MON_REFERENCE) || (m->plan != NULL && m->plan->needs_events);
	if (!(m->flags & DW_MON_REFERENCE) && (r = dw_tstate_new(m->plan, &m->st)) != 0) {
		dw_monitor_free(m);
		return r;
	}
	if (cfg != NULL && cfg->history_dir != NULL &&
	    (r = dw_history_open(m, cfg->history_dir, err, errlen)) != 0) {
		dw_monitor_free(m);
		return r;
	}
	*out = m;
	return 0;
}

static bool dw_logging(const struct dw_monitor *m)
{
	return m->log != NULL && !m->replaying;
}

/* Append the event encoded in m->enc as the record of position pos (write(2)
 * now; fdatasync at the next dw_sync, group-committed).  A failure breaks the
 * monitor: what it holds may no longer be what the log holds. */
static int dw_log_encoded(struct dw_monitor *m, uint64_t pos)
{
	uint64_t seq;

	if (hist_append(m->log, HIST_EVENT, m->enc.p, m->enc.n, &seq) != 0) {
		m->broken = true;
		return -EIO;
	}
	if (seq != pos) {
		m->broken = true;   /* the log and the history disagree: never guess */
		return -EIO;
	}
	m->logged++;
	return 0;
}

/* Write ev (with an, a refusal's note, or NULL) to the durable history before
 * anything may act on it. */
static int dw_log_event(struct dw_monitor *m, const struct dw_event *ev,
			const struct dw_event_annot *an)
{
	int r;

	if (!dw_logging(m))
		return 0;
	if (m->broken)
		return -EIO;
	m->enc.n = 0;
	if ((r = dw_event_encode(&m->enc, ev)) == 0 && an != NULL)
		r = dw_event_encode_annot(&m->enc, 0, an);
	if (r != 0)
		return r == -ENOMEM ? r : -EINVAL;
	return dw_log_encoded(m, m->next_pos);
}

/* Keep ev in the retained history (memory only: the caller has logged it, or
 * logs it before the lock is released). */
static int dw_hist_keep(struct dw_monitor *m, const struct dw_event *ev)
{
	const struct dw_event *copy = ev;

	/* once the history or the state could not take an event, nothing more
	 * is decided: every later decision denies (fail closed) */
	if (m->broken)
		return -EIO;
	if (m->h_off + m->h_n == m->h_cap) {
		if (m->h_off >= m->h_n && m->h_off > 0) {
			/* slide the live run down: amortised O(1) per event */
			memmove(m->h, m->h + m->h_off, m->h_n * sizeof *m->h);
			m->h_off = 0;
		} else {
			size_t cap = m->h_cap ? m->h_cap * 2 : 64;
			struct dw_hent *v = realloc(m->h, cap * sizeof *v);
			if (v == NULL)
				return -ENOMEM;
			m->h = v;
			m->h_cap = cap;
		}
	}
	/* Without a leaf that reads past events only the timeline (position,
	 * time) is kept, and the event being decided is the caller's, borrowed
	 * for the call: nothing is copied. */
	if (m->keep_events) {
		if ((copy = dw_event_clone(ev)) == NULL)
			return -ENOMEM;
	} else if (m->h_n > 0) {
		m->h[m->h_off + m->h_n - 1].ev = NULL;
	}
	if (m->h_n + m->h_off > 0 || m->next_pos > 0) {
		if (copy->ts < m->max_ts)
			m->disordered = true;
		else
			m->max_ts = copy->ts;
	} else {
		m->max_ts = copy->ts;
	}
	m->h[m->h_off + m->h_n].pos = m->next_pos++;
	m->h[m->h_off + m->h_n].ts = copy->ts;
	m->h[m->h_off + m->h_n].ev = copy;
	m->h_n++;
	return 0;
}

/* Log ev, then keep it: a history event. */
static int dw_hist_push(struct dw_monitor *m, const struct dw_event *ev,
			const struct dw_event_annot *an)
{
	int r;

	if (m->broken)
		return -EIO;
	if ((r = dw_log_event(m, ev, an)) != 0)
		return r;
	return dw_hist_keep(m, ev);
}

/* The compactor: copies the kept records beside the running monitor, then
 * takes the lock to add what was appended meanwhile and switch files.  A
 * failure at any step keeps the old file, which is still the whole log. */
static void *dw_compactor(void *arg)
{
	struct dw_monitor *m = arg;
	int r = hist_compact_copy(m->comp);

	pthread_mutex_lock(&m->lock);
	if (r == 0)
		(void)hist_compact_finish(m->comp);
	else
		hist_compact_abort(m->comp);
	m->comp = NULL;
	m->compacting = false;
	pthread_cond_broadcast(&m->compacted);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* Under the lock. */
static void dw_compact_start(struct dw_monitor *m, uint64_t keep_from)
{
	struct hist_compaction *c = NULL;

	if (m->compactor_live) {
		/* the last one has finished (compacting is false): reap it */
		pthread_join(m->compactor, NULL);
		m->compactor_live = false;
	}
	if (hist_compact_start(m->log, keep_from, &c) != 0 || c == NULL)
		return;
	m->comp = c;
	m->compacting = true;
	if (pthread_create(&m->compactor, NULL, dw_compactor, m) != 0) {
		hist_compact_abort(c);
		m->comp = NULL;
		m->compacting = false;
		return;
	}
	m->compactor_live = true;
}

/* Drop events no window can reach: ts < floor - span, from the front only. */
static void dw_hist_expire(struct dw_monitor *m, int64_t floor)
{
	int64_t span = dw_window_ns(m->plan ? m->plan->span_max_s : 0), thr;

	if (m->flags & DW_MON_REFERENCE)
		return;             /* the oracle keeps everything */
	if (__builtin_sub_overflow(floor, span, &thr))
		thr = INT64_MIN;
	/* A `since` checks its left side at every position between its anchor
	 * and the decision.  With timestamps that only grow, those positions lie
	 * inside the anchor's window and the span bounds what the left side reads;
	 * once an event arrived older than one before it, a position may look back
	 * from its own, earlier time.  Then the scanned history is kept whole:
	 * only caller-supplied timestamps (replay) can be out of order. */
	bool keep_all = m->disordered && m->plan != NULL && m->plan->since_left_looks_back;

	/* keep the newest event: it is the decision being made */
	while (!keep_all && m->h_n > 1 && m->h[m->h_off].ts < thr) {
		if (m->keep_events)
			free((void *)m->h[m->h_off].ev);
		m->h_off++;
		m->h_n--;
	}
	if (m->st != NULL)
		dw_tstate_expire(m->st, thr, m->h_n ? m->h[m->h_off].pos : m->next_pos);
	/* retention on disk: drop what memory dropped, in large steps (a rewrite
	 * costs what is kept, so wait until the dead prefix outweighs it) */
	if (m->log != NULL && !m->replaying && !m->compacting && !m->snapshotting && m->h_n != 0) {
		uint64_t lo = m->h[m->h_off].pos, base = hist_base_seq(m->log);
		if (lo > base && lo - base >= 65536 && lo - base >= m->h_n)
			dw_compact_start(m, lo);
	}
}

/* ---- deciding ---------------------------------------------------------------- */

struct dw_leaf_call {
	struct dw_monitor *m;
	const struct dw_hent *view;     /* full retained history, decision last */
	size_t n;
	const struct dw_hent *keyed;    /* key-local view (built on first use) */
	size_t n_keyed;
	int err;
};

/* Does ev agree with the decision d on every key field (docs/formats.md §3,
 * "universal symmetric pin")? */
static bool dw_key_agrees(const struct dw_tplan *p, const struct dw_event *d,
			  const struct dw_event *ev, struct dw_arena *a)
{
	for (uint32_t k = 0; k < p->n_keys; k++) {
		const struct dw_evfield *f = &p->keys[k];
		struct dw_tterm ref;
		struct dw_tval want;
		const struct dw_tval *have = dw_tval_path(&ev->logged, f->path);
		bool resolved;

		memset(&ref, 0, sizeof ref);
		if (f->pin == DW_PIN_CONTEXT) {
			ref.kind = DW_TT_CONTEXT;
		} else {
			ref.kind = DW_TT_SCOPE;
			ref.root = f->pin == DW_PIN_PRINCIPAL ? 'p' : 'r';
		}
		ref.path = f->pin_path;
		resolved = dw_tterm_resolve_static(a, d, &ref, &want);
		if (resolved != (have != NULL))
			return false;
		if (resolved && !dw_tval_eq(&want, have))
			return false;
	}
	return true;
}

static int dw_keyed_view(struct dw_leaf_call *c)
{
	struct dw_hent *v;
	const struct dw_event *d = c->view[c->n - 1].ev;
	size_t n = 0;

	v = DW_NEWN(&c->m->scratch, struct dw_hent, c->n);
	if (v == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		if (i == c->n - 1 || dw_key_agrees(c->m->plan, d, c->view[i].ev, &c->m->scratch))
			v[n++] = c->view[i];
	c->keyed = v;
	c->n_keyed = n;
	return 0;
}

static int dw_leaf_value(void *arg, const struct dw_temporal *t, bool *out, char *msg,
			 size_t msglen)
{
	struct dw_leaf_call *c = arg;
	struct dw_monitor *m = c->m;
	const struct dw_tleaf *lf;
	struct dw_tinterp ti;
	int r;

	if (m->plan == NULL || t->gindex >= m->plan->n_leaves || t->cond == NULL) {
		snprintf(msg, msglen, "temporal evaluation: the leaf was not compiled");
		return -1;
	}
	lf = &m->plan->leaves[t->gindex];
	if (m->st != NULL && lf->incremental)
		return dw_tstate_leaf(m->st, t->gindex, c->view, c->n, &m->scratch, out);
	memset(&ti, 0, sizeof ti);
	ti.scratch = &m->scratch;
	ti.h = c->view;
	ti.n = c->n;
	if (m->plan->n_keys != 0) {
		if (c->keyed == NULL && (r = dw_keyed_view(c)) != 0)
			return r;
		ti.h = c->keyed;
		ti.n = c->n_keyed;
	}
	return dw_tinterp_leaf(&ti, t->cond, out);
}

/* Skip a rule whose first conjunct is an incremental leaf with no state. */
static bool dw_rule_gate(void *arg, uint32_t policy)
{
	struct dw_leaf_call *c = arg;
	const struct dw_tplan *p = c->m->plan;

	if (p == NULL || policy >= p->n_rules || p->gate_leaf[policy] == UINT32_MAX)
		return true;
	return !dw_tstate_leaf_dead(c->m->st, p->gate_leaf[policy]);
}

/* The request context as Cedar sees it: the event's context record, with
 * nulls as "" (Cedar has no null; docs/formats.md §2). */
static json_t *dw_tval_to_jansson(const struct dw_tval *v, int depth)
{
	json_t *j, *x;
	char buf[32];

	if (depth > 128)
		return NULL;
	switch (v->kind) {
	case DW_TV_NULL:
		return json_stringn("", 0);
	case DW_TV_BOOL:
		return json_boolean(v->b);
	case DW_TV_INT:
		return json_integer(v->i);
	case DW_TV_DECIMAL:
		return json_stringn(v->s.p ? v->s.p : "", v->s.n);
	case DW_TV_STRING:
		return json_stringn(v->s.p ? v->s.p : "", v->s.n);
	case DW_TV_ENTITY:
		j = json_object();
		x = json_object();
		if (j == NULL || x == NULL ||
		    json_object_set_new(x, "type", json_stringn(v->type.p ? v->type.p : "", v->type.n)) ||
		    json_object_set_new(x, "id", json_stringn(v->s.p ? v->s.p : "", v->s.n)) ||
		    json_object_set_new(j, "__entity", x)) {
			json_decref(j);
			return NULL;
		}
		return j;
	case DW_TV_ARRAY:
		if ((j = json_array()) == NULL)
			return NULL;
		for (uint32_t i = 0; i < v->n; i++)
			if (json_array_append_new(j, dw_tval_to_jansson(&v->items[i], depth + 1))) {
				json_decref(j);
				return NULL;
			}
		return j;
	case DW_TV_RECORD:
		if ((j = json_object()) == NULL)
			return NULL;
		for (uint32_t i = 0; i < v->n; i++) {
			const struct dw_tfv *f = &v->fields[i];
			if (json_object_setn_new(j, f->key.p ? f->key.p : "", f->key.n,
						 dw_tval_to_jansson(&f->val, depth + 1))) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	}
	(void)buf;
	return NULL;
}

/* What a trace event is about, for the denial text when no enforcement point
 * named it: the path, the command, or host:port and path, as Box words them. */
static const char *dw_event_subject(struct dw_arena *a, const struct dw_event *ev)
{
	const struct dw_tval *in = dw_tval_field(&ev->context, DW_STR_LIT("input")), *v, *port, *path;

	if (in == NULL)
		return NULL;
	if ((v = dw_tval_field(in, DW_STR_LIT("path"))) != NULL && v->kind == DW_TV_STRING &&
	    dw_tval_field(in, DW_STR_LIT("host")) == NULL)
		return dw_arena_strndup(a, v->s.p, v->s.n);
	if ((v = dw_tval_field(in, DW_STR_LIT("command"))) != NULL && v->kind == DW_TV_STRING)
		return dw_arena_strndup(a, v->s.p, v->s.n);
	if ((v = dw_tval_field(in, DW_STR_LIT("server"))) != NULL && v->kind == DW_TV_STRING) {
		/* mcp:call: the server, and the tool or method */
		const struct dw_tval *t = dw_tval_field(in, DW_STR_LIT("tool"));
		if (t == NULL || t->kind != DW_TV_STRING)
			t = dw_tval_field(in, DW_STR_LIT("method"));
		if (t != NULL && t->kind == DW_TV_STRING)
			return dw_arena_printf(a, "%.*s/%.*s", (int)v->s.n, v->s.p, (int)t->s.n, t->s.p);
		return dw_arena_strndup(a, v->s.p, v->s.n);
	}
	if ((v = dw_tval_field(in, DW_STR_LIT("host"))) != NULL && v->kind == DW_TV_STRING) {
		port = dw_tval_field(in, DW_STR_LIT("port"));
		path = dw_tval_field(in, DW_STR_LIT("path"));
		return dw_arena_printf(a, "%.*s%s%lld%.*s", (int)v->s.n, v->s.p,
				       port && port->kind == DW_TV_INT ? ":" : "",
				       port && port->kind == DW_TV_INT ? (long long)port->i : 0LL,
				       path && path->kind == DW_TV_STRING ? (int)path->s.n : 0,
				       path && path->kind == DW_TV_STRING ? path->s.p : "");
	}
	return NULL;
}

static bool dw_decides(const struct dw_engine *eng, const struct dw_event *ev)
{
	if (eng->events != NULL)
		return dw_evschema_decides(eng->events, ev->kind);
	return dw_str_eq_c(ev->kind, "request");
}

/* Decide the newest event of the history (under the lock).  A context the
 * monitor was handed in a trace is taken as given (as_given), as Dogwood's
 * replay takes it, unless DW_MON_STRICT_CONTEXT; one an enforcement point built
 * is checked against the action's context type. */
static int dw_decide_last(struct dw_monitor *m, const char *subject, bool as_given,
			  struct dw_decision *out)
{
	const struct dw_engine *eng = m->eng;
	const struct dw_event *ev = m->h[m->h_off + m->h_n - 1].ev;
	struct dw_leaf_call call;
	struct dw_arena_mark mark = dw_arena_mark(&m->scratch);
	const struct dw_action *act = NULL;
	const struct dw_rec *ctx = NULL;
	struct dw_uid u[3];
	const struct dw_uid *var[3] = { &u[0], &u[1], &u[2] };
	char msg[512];
	json_t *j;
	int r;

	if (!ev->has_principal)
		return dw_decision_fail(out, subject, "decision event has no principal in scope");
	if (!ev->has_resource)
		return dw_decision_fail(out, subject, "decision event has no resource in scope");
	dw_uid_init(&u[0], ev->principal_type, ev->principal_id);
	dw_uid_init(&u[1], ev->ns, ev->action);
	dw_uid_init(&u[2], ev->resource_type, ev->resource_id);
	if (eng->schema != NULL)
		act = dw_schema_find_action(eng->schema, ev->ns, ev->action);
	j = dw_tval_to_jansson(&ev->context, 0);
	if (j == NULL)
		return -ENOMEM;
	r = as_given ? dw_json_context_as_given(&m->scratch, act, j, &ctx, msg, sizeof msg)
		     : dw_json_context(&m->scratch, eng->schema, act, j, &ctx, msg, sizeof msg);
	json_decref(j);
	if (r == -ENOMEM)
		return r;
	if (r != 0) {
		dw_arena_reset(&m->scratch, mark);
		return dw_decision_fail(out, subject, msg);
	}
	if (subject == NULL)
		subject = dw_event_subject(&m->scratch, ev);
	memset(&call, 0, sizeof call);
	call.m = m;
	call.view = m->h + m->h_off;
	call.n = m->h_n;
	r = dw_engine_decide(eng, var, ctx, subject, dw_leaf_value, m->st ? dw_rule_gate : NULL,
			     &call, out);
	dw_arena_reset(&m->scratch, mark);
	return r;
}

_Static_assert(DW_CAUSE_PERMITTED == (int)DW_AC_PERMITTED &&
	       DW_CAUSE_FORBIDDEN == (int)DW_AC_FORBIDDEN &&
	       DW_CAUSE_NO_MATCH == (int)DW_AC_NO_MATCH &&
	       DW_CAUSE_INTERNAL_FAULT == (int)DW_AC_INTERNAL_FAULT &&
	       DW_CAUSE_INTERNAL_FAULT + 1 == (int)DW_AC_COUNT,
	       "the history stores enum dw_cause as enum dw_annot_cause");

/* Why a decision failed, as the denial the caller receives says it. */
static const char *dw_fail_text(int rc)
{
	return rc == -EINVAL ? "the request has no action"
	       : rc == -EIO ? "the monitor can record no more events (a history write or an "
			      "update of its state failed)"
	       : "the monitor ran out of memory";
}

/* Append the annotation of d (and note) to the event encoded in m->enc, and
 * write the record of position pos. */
static int dw_log_decision(struct dw_monitor *m, uint64_t pos, const struct dw_decision *d,
			   const char *note)
{
	struct dw_arena_mark mark = dw_arena_mark(&m->scratch);
	struct dw_event_annot an;
	struct dw_str ids_small[8], *ids = ids_small;
	int r;

	memset(&an, 0, sizeof an);
	an.has_decision = true;
	an.cause = (uint8_t)d->cause;
	an.n_ids = d->reasons != NULL ? (uint32_t)d->n_reasons : 0;
	if (an.n_ids > DW_N_ELEMENTS(ids_small) &&
	    (ids = DW_NEWN(&m->scratch, struct dw_str, an.n_ids)) == NULL) {
		m->broken = true;   /* the event is kept and cannot be logged */
		return -EIO;
	}
	for (uint32_t i = 0; i < an.n_ids; i++) {
		const struct dw_rule_ref *ref = &d->reasons[i];
		ids[i] = dw_str_c(ref->id != NULL && ref->id[0] != '\0' ? ref->id : ref->engine_id);
	}
	an.ids = ids;
	if (d->verdict == DW_DENY && d->text != NULL)
		an.reason = dw_str_c(d->text);
	if ((d->cause == DW_CAUSE_PERMITTED || d->cause == DW_CAUSE_FORBIDDEN) && an.n_ids != 0 &&
	    d->reasons[0].description != NULL)
		an.description = dw_str_c(d->reasons[0].description);
	if (note != NULL)
		an.note = dw_str_c(note);
	r = dw_event_encode_annot(&m->enc, 0, &an);
	dw_arena_reset(&m->scratch, mark);
	if (r != 0) {
		m->broken = true;   /* the event is kept and cannot be logged */
		return -EIO;
	}
	return dw_log_encoded(m, pos);
}

static int dw_pend_add(struct dw_monitor *m, uint64_t ticket, const struct dw_event *req);
static void dw_pend_drop(struct dw_monitor *m, uint64_t ticket);

/* Keep, observe and decide ev (its kind decides), then log it with the
 * decision the caller receives (under the lock).  The event is encoded first,
 * so one the codec refuses changes nothing.  ticket != 0: a permit becomes
 * pending under it (the live path).  floor: no later event has a smaller
 * timestamp.  On an error after the event was kept, *out is the internal-fault
 * denial the history holds (or, when the history could not take it, the one
 * that says so); before, *out is untouched. */
static int dw_decide_event(struct dw_monitor *m, const struct dw_event *ev, const char *subject,
			   bool as_given, const char *note, uint64_t ticket, int64_t floor,
			   struct dw_decision *out)
{
	uint64_t pos = m->next_pos;
	bool pending = false;
	int r;

	if (m->broken)
		return -EIO;
	if (dw_logging(m)) {
		m->enc.n = 0;
		if ((r = dw_event_encode(&m->enc, ev)) != 0)
			return r == -ENOMEM ? r : -EINVAL;
	}
	if ((r = dw_hist_keep(m, ev)) != 0)
		return r;
	m->events++;
	{
		const struct dw_hent *last = &m->h[m->h_off + m->h_n - 1];

		if (m->st != NULL && (r = dw_tstate_observe(m->st, last->pos, last->ev)) != 0)
			m->broken = true;   /* state no longer matches the history */
		if (r == 0)
			r = dw_decide_last(m, subject, as_given, out);
		if (r == 0 && ticket != 0 && out->verdict == DW_ALLOW) {
			if (m->st != NULL)
				r = dw_tstate_pending_add(m->st, ticket, last->ev);
			if (r == 0 && (r = dw_pend_add(m, ticket, last->ev)) != 0 && m->st != NULL)
				dw_tstate_pending_del(m->st, ticket);   /* no phantom in flight */
			pending = r == 0;
		}
	}
	if (r != 0 && !m->broken) {
		/* the event is kept: the history gets it with the denial the caller
		 * receives, so memory and log still agree */
		dw_decision_clear(out);
		(void)dw_decision_fail(out, subject, dw_fail_text(r));
	}
	if (dw_logging(m) && !m->broken) {
		int lr = dw_log_decision(m, pos, out, note);

		if (lr != 0) {
			/* not in the history, so not decided: nothing stays in flight */
			if (pending) {
				if (m->st != NULL)
					dw_tstate_pending_del(m->st, ticket);
				dw_pend_drop(m, ticket);
			}
			dw_decision_clear(out);
			(void)dw_decision_fail(out, subject, dw_fail_text(lr));
			r = lr;
		}
	}
	dw_hist_expire(m, floor);
	return r;
}

/* Append ev and decide it when its kind decides.  floor: no later event has a
 * smaller timestamp. */
static int dw_ingest(struct dw_monitor *m, const struct dw_event *ev, int64_t floor,
		     bool *decided, struct dw_decision *out)
{
	int r;

	*decided = false;
	if (dw_decides(m->eng, ev)) {
		*decided = true;
		return dw_decide_event(m, ev, NULL, !(m->flags & DW_MON_STRICT_CONTEXT), NULL, 0,
				       floor, out);
	}
	if ((r = dw_hist_push(m, ev, NULL)) != 0)
		return r;
	m->events++;
	if (m->st != NULL &&
	    (r = dw_tstate_observe(m->st, m->h[m->h_off + m->h_n - 1].pos,
				   m->h[m->h_off + m->h_n - 1].ev)) != 0)
		return r;
	dw_hist_expire(m, floor);
	return r;
}

int dw_monitor_feed_trace(struct dw_monitor *m, const struct dw_trace *t, size_t i,
			  bool *decided, struct dw_decision *out)
{
	int r;

	*decided = false;
	if (i >= t->n)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	r = dw_ingest(m, &t->ev[i], t->floor[i + 1],
		      decided, out);
	pthread_mutex_unlock(&m->lock);
	if (r != 0 && *decided && out->priv_ == NULL)
		dw_decision_fail(out, NULL, dw_fail_text(r));
	return r;
}

/* ---- the live path: decide, record, observe ------------------------------------ */

static int64_t dw_realtime(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * DW_NS_PER_SEC + t.tv_nsec;
}

/* ts = max(now, last + 1): strictly increasing stamps, whatever the clock does. */
static int64_t dw_stamp(struct dw_monitor *m)
{
	int64_t now = m->clock ? m->clock(m->clock_arg) : dw_realtime();

	if (m->last_ts != INT64_MIN && now <= m->last_ts)
		now = m->last_ts == INT64_MAX ? INT64_MAX : m->last_ts + 1;
	m->last_ts = now;
	return now;
}

/* A Cedar value as a temporal-domain value (sets become arrays in canonical
 * order; extension values their text). */
static int dw_val_to_tval(struct dw_arena *a, struct dw_val v, struct dw_tval *out, int depth)
{
	struct dw_buf b = { NULL, 0, 0 };

	memset(out, 0, sizeof *out);
	if (depth > 128)
		return -EINVAL;
	switch (v.kind) {
	case DW_V_BOOL:
		out->kind = DW_TV_BOOL;
		out->b = v.b;
		return 0;
	case DW_V_LONG:
		*out = dw_tv_int(v.i);
		return 0;
	case DW_V_STRING:
		*out = dw_tv_string(v.s);
		return 0;
	case DW_V_ENTITY:
		out->kind = DW_TV_ENTITY;
		out->type = v.uid->type;
		out->s = v.uid->id;
		return 0;
	case DW_V_SET: {
		struct dw_tval *items = DW_NEWN(a, struct dw_tval, v.set->n ? v.set->n : 1);
		if (items == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < v.set->n; i++) {
			int r = dw_val_to_tval(a, v.set->v[i], &items[i], depth + 1);
			if (r != 0)
				return r;
		}
		out->kind = DW_TV_ARRAY;
		out->n = v.set->n;
		out->items = items;
		return 0;
	}
	case DW_V_RECORD: {
		struct dw_tfv *f = DW_NEWN(a, struct dw_tfv, v.rec->n ? v.rec->n : 1);
		struct dw_str dup;
		if (f == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < v.rec->n; i++) {
			int r;
			f[i].key = v.rec->f[i].key;
			if ((r = dw_val_to_tval(a, v.rec->f[i].val, &f[i].val, depth + 1)) != 0)
				return r;
		}
		return dw_tval_record(a, f, v.rec->n, out, &dup) == -ENOMEM ? -ENOMEM : 0;
	}
	default: {
		/* decimal, ip, datetime, duration: their Cedar text */
		char *txt;
		int r = dw_val_format(&b, v);
		if (r != 0) {
			dw_buf_free(&b);
			return r;
		}
		txt = dw_arena_strndup(a, b.p, b.n);
		dw_buf_free(&b);
		if (txt == NULL)
			return -ENOMEM;
		*out = dw_tv_string(dw_str_c(txt));
		return 0;
	}
	}
}

/* The event an enforcement point's request stands for (default event schema:
 * logged = inputs, requestId, callerPrincipal, callerResource [, output]). */
static int dw_event_from_request(struct dw_arena *a, const struct dw_request *r, const char *kind,
				 uint64_t ticket, const struct dw_tval *output,
				 const struct dw_tfv *extra, uint32_t n_extra, struct dw_event *ev)
{
	struct dw_tfv f[5 + 3];
	uint32_t n = 0;
	struct dw_val ctx = { .kind = DW_V_RECORD, .rec = r->context };
	const struct dw_val *input = dw_rec_get(r->context, DW_STR_LIT("input"));
	struct dw_str dup;
	char *rid;
	int rc;

	memset(ev, 0, sizeof *ev);
	if (r->var[1] == NULL)
		return -EINVAL;
	ev->ns = r->var[1]->type;
	ev->action = r->var[1]->id;
	ev->kind = dw_str_c(kind);
	ev->has_principal = ev->has_resource = true;
	ev->principal_type = r->var[0] ? r->var[0]->type : DW_STR_LIT("Box::Agent");
	ev->principal_id = r->var[0] ? r->var[0]->id : DW_STR_LIT("self");
	ev->resource_type = r->var[2] ? r->var[2]->type : DW_STR_LIT("Box::Resource");
	ev->resource_id = r->var[2] ? r->var[2]->id : DW_STR_LIT("unused");
	ev->has_context = true;
	if ((rc = dw_val_to_tval(a, ctx, &ev->context, 0)) != 0)
		return rc;
	if (input != NULL) {
		f[n].key = DW_STR_LIT("input");
		if ((rc = dw_val_to_tval(a, *input, &f[n++].val, 0)) != 0)
			return rc;
	}
	if (output != NULL) {
		f[n].key = DW_STR_LIT("output");
		f[n++].val = *output;
	}
	for (uint32_t i = 0; i < n_extra && i < 3; i++)
		f[n++] = extra[i];
	{
		/* the ticket in decimal: on every decision, so no printf */
		char tmp[24];
		size_t n = 0;
		uint64_t v = ticket;
		do
			tmp[sizeof tmp - ++n] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		if ((rid = dw_arena_strndup(a, tmp + sizeof tmp - n, n)) == NULL)
			return -ENOMEM;
	}
	f[n].key = DW_STR_LIT("requestId");
	f[n++].val = dw_tv_string(dw_str_c(rid));
	f[n].key = DW_STR_LIT("callerPrincipal");
	memset(&f[n].val, 0, sizeof f[n].val);
	f[n].val.kind = DW_TV_ENTITY;
	f[n].val.type = ev->principal_type;
	f[n++].val.s = ev->principal_id;
	f[n].key = DW_STR_LIT("callerResource");
	memset(&f[n].val, 0, sizeof f[n].val);
	f[n].val.kind = DW_TV_ENTITY;
	f[n].val.type = ev->resource_type;
	f[n++].val.s = ev->resource_id;
	return dw_tval_record(a, f, n, &ev->logged, &dup) == -ENOMEM ? -ENOMEM : 0;
}

static ssize_t dw_pend_find(const struct dw_monitor *m, uint64_t ticket)
{
	size_t lo = 0, hi = m->n_pend;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->pend[mid].ticket < ticket)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n_pend && m->pend[lo].ticket == ticket ? (ssize_t)lo : -1;
}

static int dw_pend_add(struct dw_monitor *m, uint64_t ticket, const struct dw_event *req)
{
	struct dw_event *copy;

	if (m->n_pend == m->cap_pend) {
		size_t cap = m->cap_pend ? m->cap_pend * 2 : 16;
		struct dw_pending *v = realloc(m->pend, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		m->pend = v;
		m->cap_pend = cap;
	}
	if ((copy = dw_event_clone(req)) == NULL)
		return -ENOMEM;
	/* tickets are taken outside the lock, so they may arrive slightly out of
	 * order: insert in place (almost always at the end) */
	{
		size_t k = m->n_pend;
		while (k > 0 && m->pend[k - 1].ticket > ticket)
			k--;
		memmove(&m->pend[k + 1], &m->pend[k], (m->n_pend - k) * sizeof *m->pend);
		m->pend[k].ticket = ticket;
		m->pend[k].req = copy;
		m->n_pend++;
	}
	return 0;
}

/* Forget the pending request of ticket, if there is one. */
static void dw_pend_drop(struct dw_monitor *m, uint64_t ticket)
{
	ssize_t k = dw_pend_find(m, ticket);

	if (k < 0)
		return;
	free(m->pend[k].req);
	memmove(&m->pend[k], &m->pend[k + 1], (m->n_pend - (size_t)k - 1) * sizeof *m->pend);
	m->n_pend--;
}

int dw_decide(struct dw_monitor *m, const struct dw_request *r, struct dw_decision *out,
	      uint64_t *ticket)
{
	struct dw_arena a;
	struct dw_event ev;
	uint64_t t;
	int rc;

	memset(out, 0, sizeof *out);
	dw_arena_init(&a);
	/* the event is built outside the lock: the critical section is the
	 * state update, the rules and the append */
	t = __atomic_fetch_add(&m->next_ticket, 1, __ATOMIC_RELAXED);
	rc = dw_event_from_request(&a, r, "request", t, NULL, NULL, 0, &ev);
	pthread_mutex_lock(&m->lock);
	if (rc == 0) {
		ev.ts = dw_stamp(m);
		rc = dw_decide_event(m, &ev, r->subject, false, r->note, t, ev.ts, out);
	}
	pthread_mutex_unlock(&m->lock);
	dw_arena_fini(&a);
	if (ticket != NULL)
		*ticket = t;
	if (rc != 0) {
		dw_decision_clear(out);
		dw_decision_fail(out, r->subject, dw_fail_text(rc));
	}
	return rc;
}

/* Parse an `output` JSON object into a. */
static int dw_output_json(struct dw_arena *a, const char *json, size_t len, struct dw_tval *out,
			  char *err, size_t errlen)
{
	json_error_t je;
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	int r;

	if (j == NULL) {
		if (errlen)
			snprintf(err, errlen, "output: line %d column %d: %s", je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		if (errlen)
			snprintf(err, errlen, "output: must be a JSON object");
		return -EINVAL;
	}
	r = dw_tval_from_json(a, j, out, err, errlen);
	json_decref(j);
	return r;
}

/* An `output` record from typed attributes (no JSON on the hot path of an
 * enforcement point): the strings stay the caller's, the event's copy is
 * taken when it is ingested. */
static int dw_output_attrs(struct dw_arena *a, const struct dw_input_attr *at, size_t n,
			   struct dw_tval *out, char *err, size_t errlen)
{
	struct dw_tfv *f = DW_NEWN(a, struct dw_tfv, n ? n : 1);
	struct dw_str dup;

	if (f == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct dw_tval v = { 0 };
		f[i].key = dw_str_c(at[i].name);
		switch (at[i].kind) {
		case DW_ATTR_STRING:
			v = dw_tv_string((struct dw_str){ at[i].s, (uint32_t)at[i].len });
			break;
		case DW_ATTR_LONG:
			v = dw_tv_int(at[i].i);
			break;
		case DW_ATTR_BOOL:
			v.kind = DW_TV_BOOL;
			v.b = at[i].b;
			break;
		case DW_ATTR_ENTITY:
			v.kind = DW_TV_ENTITY;
			v.type = dw_str_c(at[i].type);
			v.s = (struct dw_str){ at[i].s, (uint32_t)at[i].len };
			break;
		default:
			if (errlen)
				snprintf(err, errlen, "output.%s: unknown kind", at[i].name);
			return -EINVAL;
		}
		f[i].val = v;
	}
	int rc = dw_tval_record(a, f, (uint32_t)n, out, &dup);
	if (rc == -EEXIST && errlen)
		snprintf(err, errlen, "output.%.*s: named twice", (int)dup.n, dup.p);
	return rc == -EEXIST ? -EINVAL : rc;
}

/* An outcome's `output`, from JSON or typed attributes, into a: *outp is out,
 * or NULL when neither is given. */
static int dw_output(struct dw_arena *a, const char *json, size_t len,
		     const struct dw_input_attr *at, size_t n, struct dw_tval *out,
		     struct dw_tval **outp, char *err, size_t errlen)
{
	*outp = NULL;
	if (json == NULL && at == NULL)
		return 0;
	int rc = json != NULL ? dw_output_json(a, json, len, out, err, errlen)
			      : dw_output_attrs(a, at, n, out, err, errlen);
	if (rc == 0)
		*outp = out;
	return rc;
}

static int dw_check_kind(const char *kind, bool has_output, char *err, size_t errlen)
{
	if (kind != NULL && strcmp(kind, "response") == 0)
		return 0;
	if (kind != NULL && strcmp(kind, "error") == 0 && !has_output)
		return 0;
	if (errlen)
		snprintf(err, errlen, kind != NULL && strcmp(kind, "error") == 0
			 ? "an `error` outcome carries no output"
			 : "the outcome kind must be `response` or `error`");
	return -EINVAL;
}

/* Append a history event (no decision), with an (a refusal's note) or NULL. */
static int dw_ingest_history(struct dw_monitor *m, struct dw_event *ev,
			     const struct dw_event_annot *an)
{
	int rc;

	ev->ts = dw_stamp(m);
	if ((rc = dw_hist_push(m, ev, an)) != 0)
		return rc;
	m->events++;
	if (m->st != NULL) {
		const struct dw_hent *last = &m->h[m->h_off + m->h_n - 1];
		if ((rc = dw_tstate_observe(m->st, last->pos, last->ev)) != 0)
			m->broken = true;   /* state no longer matches the history */
	}
	dw_hist_expire(m, ev->ts);
	return rc;
}

/* rec (a RECORD) with the fields of patch (a RECORD) replacing those of the
 * same name, into a.  Every patch field must exist in rec. */
static int dw_patch_record(struct dw_arena *a, const struct dw_tval *rec,
			   const struct dw_tval *patch, struct dw_tval *out, char *err, size_t errlen)
{
	struct dw_tfv *f;
	struct dw_str dup;

	if (rec->kind != DW_TV_RECORD || rec->n == 0)
		goto missing;
	f = DW_NEWN(a, struct dw_tfv, rec->n);
	if (f == NULL)
		return -ENOMEM;
	memcpy(f, rec->fields, rec->n * sizeof *f);
	for (uint32_t j = 0; j < patch->n; j++) {
		uint32_t i = 0;
		while (i < rec->n && !dw_str_eq(f[i].key, patch->fields[j].key))
			i++;
		if (i == rec->n)
			goto missing;
		f[i].val = patch->fields[j].val;
	}
	return dw_tval_record(a, f, rec->n, out, &dup) == -ENOMEM ? -ENOMEM : 0;
missing:
	if (errlen)
		snprintf(err, errlen, "input: a replaced field is not in the request's input");
	return -EINVAL;
}

/* The outcome of ticket, its input optionally patched (Box's http:request
 * ::response carries the delivered body_bytes). */
static int dw_record_impl(struct dw_monitor *m, uint64_t ticket, const char *kind,
			  const char *output_json, size_t len, const struct dw_input_attr *oat,
			  size_t n_oat, const char *input_json, size_t input_len, char *err,
			  size_t errlen)
{
	struct dw_arena a;
	struct dw_tval output, *outp = NULL, patch, *patchp = NULL;
	struct dw_event ev;
	ssize_t k;
	int rc;

	if ((rc = dw_check_kind(kind, output_json != NULL || oat != NULL, err, errlen)) != 0)
		return rc;
	dw_arena_init(&a);
	if ((rc = dw_output(&a, output_json, len, oat, n_oat, &output, &outp, err, errlen)) != 0) {
		dw_arena_fini(&a);
		return rc;
	}
	if (input_json != NULL) {
		if ((rc = dw_output_json(&a, input_json, input_len, &patch, err, errlen)) != 0) {
			dw_arena_fini(&a);
			return rc;
		}
		patchp = &patch;
	}
	pthread_mutex_lock(&m->lock);
	k = dw_pend_find(m, ticket);
	if (k < 0) {
		rc = -ENOENT;
		if (errlen)
			snprintf(err, errlen, "no permitted request is waiting for ticket %" PRIu64,
				 ticket);
	} else {
		struct dw_event *req = m->pend[k].req;
		struct dw_tfv f[8];
		uint32_t n = 0;
		struct dw_str dup;

		ev = *req;
		ev.kind = dw_str_c(kind);
		/* the response's logged record: the request's, plus the output */
		for (uint32_t i = 0; i < req->logged.n && n < DW_N_ELEMENTS(f) - 1; i++)
			if (!dw_str_eq_c(req->logged.fields[i].key, "output")) {
				f[n] = req->logged.fields[i];
				if (patchp != NULL && dw_str_eq_c(f[n].key, "input") && rc == 0)
					rc = dw_patch_record(&a, &req->logged.fields[i].val, patchp,
							     &f[n].val, err, errlen);
				n++;
			}
		if (outp != NULL) {
			f[n].key = DW_STR_LIT("output");
			f[n++].val = *outp;
		}
		/* the context's input follows the logged one */
		if (rc == 0 && patchp != NULL && ev.has_context && ev.context.kind == DW_TV_RECORD) {
			struct dw_tfv *cf = DW_NEWN(&a, struct dw_tfv, ev.context.n + 1);
			if (cf == NULL) {
				rc = -ENOMEM;
			} else {
				memcpy(cf, ev.context.fields, ev.context.n * sizeof *cf);
				for (uint32_t i = 0; i < ev.context.n && rc == 0; i++)
					if (dw_str_eq_c(cf[i].key, "input"))
						rc = dw_patch_record(&a, &ev.context.fields[i].val, patchp,
								     &cf[i].val, err, errlen);
				if (rc == 0)
					rc = dw_tval_record(&a, cf, ev.context.n, &ev.context, &dup) ==
					     -ENOMEM ? -ENOMEM : 0;
			}
		}
		if (rc == 0)
			rc = dw_tval_record(&a, f, n, &ev.logged, &dup) == -ENOMEM ? -ENOMEM : 0;
		if (rc == -EINVAL) {
			/* a bad patch changes nothing: the request stays pending */
			pthread_mutex_unlock(&m->lock);
			dw_arena_fini(&a);
			return rc;
		}
		if (m->st != NULL)
			dw_tstate_pending_del(m->st, ticket);
		if (rc == 0)
			rc = dw_ingest_history(m, &ev, NULL);
		free(req);
		memmove(&m->pend[k], &m->pend[k + 1], (m->n_pend - (size_t)k - 1) * sizeof *m->pend);
		m->n_pend--;
	}
	pthread_mutex_unlock(&m->lock);
	dw_arena_fini(&a);
	return rc;
}

int dw_record(struct dw_monitor *m, uint64_t ticket, const char *kind, const char *output_json,
	      size_t len, char *err, size_t errlen)
{
	return dw_record_impl(m, ticket, kind, output_json, len, NULL, 0, NULL, 0, err, errlen);
}

int dw_record_typed(struct dw_monitor *m, uint64_t ticket, const char *kind,
		    const struct dw_input_attr *output, size_t n, char *err, size_t errlen)
{
	return dw_record_impl(m, ticket, kind, NULL, 0, output, n, NULL, 0, err, errlen);
}

int dw_record_input(struct dw_monitor *m, uint64_t ticket, const char *kind,
		    const char *output_json, size_t len, const char *input_json, size_t input_len,
		    char *err, size_t errlen)
{
	return dw_record_impl(m, ticket, kind, output_json, len, NULL, 0, input_json, input_len,
			      err, errlen);
}

int dw_release(struct dw_monitor *m, uint64_t ticket)
{
	ssize_t k;
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	k = dw_pend_find(m, ticket);
	if (k < 0) {
		rc = -ENOENT;
	} else {
		if (m->st != NULL)
			dw_tstate_pending_del(m->st, ticket);
		dw_pend_drop(m, ticket);
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static int dw_observe_impl(struct dw_monitor *m, const struct dw_request *r, const char *kind,
			   const char *output_json, size_t len, const struct dw_input_attr *oat,
			   size_t n_oat, char *err, size_t errlen)
{
	struct dw_arena a;
	struct dw_tval output, *outp = NULL;
	struct dw_event ev;
	int rc;

	if ((rc = dw_check_kind(kind, output_json != NULL || oat != NULL, err, errlen)) != 0)
		return rc;
	dw_arena_init(&a);
	if ((rc = dw_output(&a, output_json, len, oat, n_oat, &output, &outp, err, errlen)) != 0) {
		dw_arena_fini(&a);
		return rc;
	}
	pthread_mutex_lock(&m->lock);
	rc = dw_event_from_request(&a, r, kind, __atomic_fetch_add(&m->next_ticket, 1, __ATOMIC_RELAXED),
				   outp, NULL, 0, &ev);
	if (rc == 0)
		rc = dw_ingest_history(m, &ev, NULL);
	pthread_mutex_unlock(&m->lock);
	dw_arena_fini(&a);
	if (rc == -EINVAL && errlen)
		snprintf(err, errlen, "the request has no action");
	return rc;
}

int dw_observe(struct dw_monitor *m, const struct dw_request *r, const char *kind,
	       const char *output_json, size_t len, char *err, size_t errlen)
{
	return dw_observe_impl(m, r, kind, output_json, len, NULL, 0, err, errlen);
}

int dw_observe_typed(struct dw_monitor *m, const struct dw_request *r, const char *kind,
		     const struct dw_input_attr *output, size_t n, char *err, size_t errlen)
{
	return dw_observe_impl(m, r, kind, NULL, 0, output, n, err, errlen);
}

int dw_refuse(struct dw_monitor *m, const struct dw_request *r, uint64_t ticket,
	      const struct dw_refusal *rf, char *err, size_t errlen)
{
	struct dw_arena a;
	struct dw_tval output, *outp = NULL;
	struct dw_tfv why[3];
	struct dw_event ev;
	struct dw_event_annot an, *anp = NULL;
	int rc;

	if (rf == NULL || rf->cause == NULL || rf->cause[0] == '\0' || rf->rule == NULL ||
	    rf->rule[0] == '\0' || rf->reason == NULL) {
		if (errlen)
			snprintf(err, errlen, "a refusal names its cause, rule and reason");
		return -EINVAL;
	}
	memset(&an, 0, sizeof an);
	if (rf->note != NULL && rf->note[0] != '\0') {
		size_t bad, n = strnlen(rf->note, DW_NOTE_MAX + 1);

		/* the codec's rule for a note (event_codec.c), said before anything is done */
		if (n > DW_NOTE_MAX) {
			if (errlen)
				snprintf(err, errlen, "note: longer than %u bytes", DW_NOTE_MAX);
			return -EINVAL;
		}
		if (!dw_utf8_valid(rf->note, n, &bad)) {
			if (errlen)
				snprintf(err, errlen, "note: not UTF-8 (byte %zu)", bad);
			return -EINVAL;
		}
		an.note = dw_str_make(rf->note, (uint32_t)n);
		anp = &an;
	}
	dw_arena_init(&a);
	if (rf->output_json != NULL) {
		if ((rc = dw_output_json(&a, rf->output_json, strlen(rf->output_json), &output, err,
					 errlen)) != 0) {
			dw_arena_fini(&a);
			return rc;
		}
		outp = &output;
	}
	/* Box's decision-record words (cause, rule, reason), beside input */
	why[0].key = DW_STR_LIT("cause");
	why[0].val = dw_tv_string(dw_str_c(rf->cause));
	why[1].key = DW_STR_LIT("rule");
	why[1].val = dw_tv_string(dw_str_c(rf->rule));
	why[2].key = DW_STR_LIT("reason");
	why[2].val = dw_tv_string(dw_str_c(rf->reason));
	pthread_mutex_lock(&m->lock);
	/* a refusal after a decision shares its requestId; one before any
	 * decision takes a ticket of its own, as an observed effect does */
	if (ticket == 0)
		ticket = __atomic_fetch_add(&m->next_ticket, 1, __ATOMIC_RELAXED);
	rc = dw_event_from_request(&a, r, "refusal", ticket, outp, why, 3, &ev);
	if (rc == 0)
		rc = dw_ingest_history(m, &ev, anp);
	pthread_mutex_unlock(&m->lock);
	dw_arena_fini(&a);
	if (rc == -EINVAL && errlen)
		snprintf(err, errlen, "the request has no action");
	return rc;
}

int dw_sync(struct dw_monitor *m)
{
	if (m->log == NULL)
		return 0;
	return hist_sync(m->log, UINT64_MAX) == 0 ? 0 : -EIO;
}

void dw_monitor_stats(struct dw_monitor *m, struct dw_monitor_stats *out)
{
	pthread_mutex_lock(&m->lock);
	out->events = m->events;
	out->retained = m->h_n;
	out->state_bytes = m->st ? dw_tstate_bytes(m->st) : 0;
	out->pending = m->n_pend;
	out->replayed = m->replayed;
	out->from_snapshot = m->from_snapshot;
	pthread_mutex_unlock(&m->lock);
}

/* ---- recovery -------------------------------------------------------------------- */

struct dw_replay {
	struct dw_monitor *m;
	struct dw_arena a;
	char err[256];
	uint64_t bad_seq;
};

static int dw_replay_record(void *arg, uint64_t seq, uint8_t type, const void *p, size_t n)
{
	struct dw_replay *rp = arg;
	struct dw_monitor *m = rp->m;
	struct dw_arena_mark mark = dw_arena_mark(&rp->a);
	struct dw_event ev;
	int r;

	if (type != HIST_EVENT) {
		/* positions are sequence numbers: a record of another kind would
		 * shift every later event, and none is ever written */
		snprintf(rp->err, sizeof rp->err, "unexpected record type %u", type);
		rp->bad_seq = seq;
		return -EBADMSG;
	}
	if (seq != m->next_pos) {
		snprintf(rp->err, sizeof rp->err, "record %" PRIu64 " follows position %" PRIu64,
			 seq, m->next_pos);
		rp->bad_seq = seq;
		return -EBADMSG;
	}
	r = dw_event_decode(&rp->a, p, n, &ev, rp->err, sizeof rp->err);
	if (r != 0) {
		rp->bad_seq = seq;
		return r;
	}
	/* what was decided is history only: replay decides nothing from it */
	ev.annot = NULL;
	if ((r = dw_hist_push(m, &ev, NULL)) == 0) {
		const struct dw_hent *last = &m->h[m->h_off + m->h_n - 1];
		m->events++;
		m->replayed++;
		if (m->st != NULL)
			r = dw_tstate_observe(m->st, last->pos, last->ev);
		if (m->last_ts == INT64_MIN || ev.ts > m->last_ts)
			m->last_ts = ev.ts;
		/* stamps only grow, so the newest stamp is the floor of what follows */
		dw_hist_expire(m, m->last_ts);
	}
	dw_arena_reset(&rp->a, mark);
	return r;
}

/* ---- snapshots -------------------------------------------------------------------

 * Layout: "DWSNAP1" NUL, the plan's fingerprint (32 bytes), u64 next position,
 * i64 last stamp, i64 newest time, u8 disordered, u64 events, u64 first
 * retained position, u64 retained count, that many i64 times (the timeline),
 * then the incremental state (dw_tstate_save).  Retained events themselves
 * (needed only by scanned leaves and `previous`) are read back from the log,
 * which always keeps what memory keeps. */

#define DW_SNAP_MAGIC "DWSNAP1"

static int dw_put64(struct dw_buf *b, uint64_t v)
{
	unsigned char o[8];

	for (int k = 0; k < 8; k++)
		o[k] = (unsigned char)(v >> (8 * k));
	return dw_buf_put(b, (const char *)o, 8);
}

static uint64_t dw_get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int k = 0; k < 8; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

int dw_monitor_checkpoint(struct dw_monitor *m)
{
	struct dw_buf b = { NULL, 0, 0 };
	struct hist_snap_point at;
	unsigned char fp[32];
	int r;

	if (m->log == NULL || m->st == NULL)
		return 0;
	/* one checkpoint at a time; the state is copied under the monitor's lock
	 * and written after it is released, so decisions do not wait on the disk */
	pthread_mutex_lock(&m->checkpointing);
	pthread_mutex_lock(&m->lock);
	/* a snapshot names a position in the log: not while its file is replaced */
	while (m->compacting)
		pthread_cond_wait(&m->compacted, &m->lock);
	/* a broken monitor's state may hold what the log lacks: the log is the
	 * truth, and the next open rebuilds from it */
	r = m->broken ? -EIO : dw_tplan_fingerprint(m->plan, fp);
	if (r == 0 && (r = dw_buf_put(&b, DW_SNAP_MAGIC, 8)) == 0 &&
	    (r = dw_buf_put(&b, (const char *)fp, 32)) == 0 &&
	    (r = dw_put64(&b, m->next_pos)) == 0 && (r = dw_put64(&b, (uint64_t)m->last_ts)) == 0 &&
	    (r = dw_put64(&b, (uint64_t)m->max_ts)) == 0 &&
	    (r = dw_buf_putc(&b, (char)m->disordered)) == 0 &&
	    (r = dw_put64(&b, m->events)) == 0 &&
	    (r = dw_put64(&b, m->h_n ? m->h[m->h_off].pos : m->next_pos)) == 0 &&
	    (r = dw_put64(&b, m->h_n)) == 0) {
		for (size_t i = 0; r == 0 && i < m->h_n; i++)
			r = dw_put64(&b, (uint64_t)m->h[m->h_off + i].ts);
	}
	if (r == 0)
		r = dw_tstate_save(m->st, &b);
	if (r == 0 && hist_snapshot_point(m->log, m->next_pos, &at) != 0)
		r = -EIO;
	/* no compaction may start until the snapshot is written */
	if (r == 0)
		m->snapshotting = true;
	pthread_mutex_unlock(&m->lock);
	if (r == 0) {
		if (hist_snapshot_write_at(m->log, &at, b.p, b.n) != 0)
			r = -EIO;
		pthread_mutex_lock(&m->lock);
		m->snapshotting = false;
		pthread_mutex_unlock(&m->lock);
	}
	pthread_mutex_unlock(&m->checkpointing);
	dw_buf_free(&b);
	return r;
}

/* Put the retained events (positions [lo, upto)) back from the log. */
struct dw_refill {
	struct dw_monitor *m;
	uint64_t upto;
	size_t i;
	struct dw_arena a;
	int err;
};

static int dw_refill_record(void *arg, uint64_t seq, uint8_t type, const void *p, size_t n)
{
	struct dw_refill *rf = arg;
	struct dw_event ev;
	char err[128];

	if (seq >= rf->upto)
		return 1;               /* done: the tail is replayed, not refilled */
	if (type != HIST_EVENT || rf->i >= rf->m->h_n || rf->m->h[rf->m->h_off + rf->i].pos != seq)
		return -EBADMSG;
	if (dw_event_decode(&rf->a, p, n, &ev, err, sizeof err) != 0)
		return -EBADMSG;
	ev.annot = NULL;        /* retained events keep no annotation (see replay) */
	if ((rf->m->h[rf->m->h_off + rf->i].ev = dw_event_clone(&ev)) == NULL)
		return -ENOMEM;
	rf->i++;
	dw_arena_reset(&rf->a, (struct dw_arena_mark){ 0 });
	return 0;
}

/* Load the snapshot if it is there, intact and made by the same plan; else
 * leave the monitor empty for a full replay (the log holds everything the
 * state was built from).  Only allocation failures are errors. */
static int dw_snapshot_load(struct dw_monitor *m, struct dw_replay *rp)
{
	void *blob = NULL;
	size_t len = 0, n_tl;
	uint64_t upto = 0, lo, next_pos;
	unsigned char fp[32];
	const unsigned char *p;
	struct hist_error he;
	struct dw_tstate *fresh = NULL;
	int r;

	(void)rp;
	if (m->st == NULL)
		return 0;
	r = hist_snapshot_load(m->log, &blob, &len, &upto, &he);
	if (r != 0)
		return r == -ENOMEM ? r : 0;
	p = blob;
	if ((r = dw_tplan_fingerprint(m->plan, fp)) != 0)
		goto out;
	if (len < 8 + 32 + 8 * 6 + 1 || memcmp(p, DW_SNAP_MAGIC, 8) != 0 || memcmp(p + 8, fp, 32) != 0)
		goto out;               /* another plan's state: replay instead */
	p += 40;
	next_pos = dw_get64(p);
	lo = dw_get64(p + 33);
	n_tl = (size_t)dw_get64(p + 41);
	if (next_pos != upto || lo > next_pos || n_tl != next_pos - lo ||
	    n_tl > (len - 40 - 49) / 8 || lo < hist_base_seq(m->log))
		goto out;
	if ((r = dw_tstate_new(m->plan, &fresh)) != 0)
		goto out;
	if (dw_tstate_load(fresh, p + 49 + 8 * n_tl, len - 40 - 49 - 8 * n_tl, &m->scratch) != 0) {
		dw_arena_reset(&m->scratch, (struct dw_arena_mark){ 0 });
		goto out;
	}
	dw_arena_reset(&m->scratch, (struct dw_arena_mark){ 0 });
	/* the timeline */
	if (n_tl > m->h_cap) {
		struct dw_hent *v = realloc(m->h, n_tl * sizeof *v);
		if (v == NULL) {
			r = -ENOMEM;
			goto out;
		}
		m->h = v;
		m->h_cap = n_tl;
	}
	for (size_t i = 0; i < n_tl; i++) {
		m->h[i].pos = lo + i;
		m->h[i].ts = (int64_t)dw_get64(p + 49 + 8 * i);
		m->h[i].ev = NULL;
	}
	m->h_off = 0;
	m->h_n = n_tl;
	if (m->keep_events && n_tl > 0) {
		struct dw_refill rf = { m, upto, 0, { 0 }, 0 };
		dw_arena_init(&rf.a);
		r = hist_iterate(m->log, lo, dw_refill_record, &rf);
		dw_arena_fini(&rf.a);
		if (r == 1)
			r = 0;
		if (r != 0 || rf.i != n_tl) {
			for (size_t i = 0; i < n_tl; i++) {
				free((void *)m->h[i].ev);
				m->h[i].ev = NULL;
			}
			m->h_n = 0;
			r = r == -ENOMEM ? r : 0;
			goto out;       /* the log lacks them: replay instead */
		}
	}
	dw_tstate_free(m->st);
	m->st = fresh;
	fresh = NULL;
	m->next_pos = next_pos;
	m->last_ts = (int64_t)dw_get64(p + 8);
	m->max_ts = (int64_t)dw_get64(p + 16);
	m->disordered = p[24] != 0;
	m->events = dw_get64(p + 25);
	m->from_snapshot = true;
out:
	dw_tstate_free(fresh);
	free(blob);
	return r;
}

/* Open the durable history and rebuild the state from it: the rebuilt monitor
 * decides exactly as one that never stopped. */
static int dw_history_open(struct dw_monitor *m, const char *dir, char *err, size_t errlen)
{
	struct hist_open_info info;
	struct hist_error he;
	struct dw_replay rp;
	int r;

	memset(&he, 0, sizeof he);
	r = hist_open(dir, &m->log, &info, &he);
	if (r != 0) {
		if (errlen)
			snprintf(err, errlen, "history %s: %s", dir, he.msg[0] ? he.msg : strerror(-r));
		return r == -ENOMEM ? r : -EIO;
	}
	m->next_pos = info.base_seq;
	memset(&rp, 0, sizeof rp);
	rp.m = m;
	dw_arena_init(&rp.a);
	m->replaying = true;
	r = dw_snapshot_load(m, &rp);
	if (r == 0)
		r = hist_iterate(m->log, m->next_pos, dw_replay_record, &rp);
	m->replaying = false;
	dw_arena_fini(&rp.a);
	/* requestIds must not repeat across restarts: every ticket ever issued
	 * named at least one event, so none reached the next position */
	m->next_ticket = m->next_pos + 1;
	if (r != 0) {
		if (errlen)
			snprintf(err, errlen, "history %s: record %" PRIu64 ": %s", dir, rp.bad_seq,
				 rp.err[0] ? rp.err : strerror(r < 0 ? -r : r));
		return r == -ENOMEM ? r : -EIO;
	}
	return 0;
}

/* ---- inspecting a history ---------------------------------------------------------- */

struct dw_show {
	dw_history_fn fn;
	void *arg;
	struct dw_arena a;
	struct dw_buf b;
	int err;
	char msg[256];
	uint64_t bad_seq;
};

static int dw_json_str(struct dw_buf *b, struct dw_str s)
{
	struct dw_tval v = dw_tv_string(s);

	return dw_tval_to_json(b, &v);
}

/* The stored decision as `,"decision":{…}` (its note inside), or a note alone
 * as `,"note":"…"` (docs/formats.md §5). */
static int dw_show_annot(struct dw_buf *b, const struct dw_event_annot *an)
{
	int r;

	if (!an->has_decision) {
		r = dw_buf_put(b, ",\"note\":", 8);
		return r ? r : dw_json_str(b, an->note);
	}
	r = dw_buf_printf(b, ",\"decision\":{\"verdict\":\"%s\",\"cause\":\"%s\",\"ids\":[",
			  an->cause == DW_AC_PERMITTED ? "permit" : "deny",
			  dw_cause_name((enum dw_cause)an->cause));
	for (uint32_t i = 0; r == 0 && i < an->n_ids; i++) {
		if (i > 0)
			r = dw_buf_putc(b, ',');
		if (r == 0)
			r = dw_json_str(b, an->ids[i]);
	}
	if (r == 0)
		r = dw_buf_putc(b, ']');
	if (r == 0 && an->reason.n != 0 && (r = dw_buf_put(b, ",\"reason\":", 10)) == 0)
		r = dw_json_str(b, an->reason);
	if (r == 0 && an->description.n != 0 && (r = dw_buf_put(b, ",\"description\":", 15)) == 0)
		r = dw_json_str(b, an->description);
	if (r == 0 && an->note.n != 0 && (r = dw_buf_put(b, ",\"note\":", 8)) == 0)
		r = dw_json_str(b, an->note);
	return r ? r : dw_buf_putc(b, '}');
}

static int dw_show_record(void *arg, uint64_t seq, uint8_t type, const void *p, size_t n)
{
	struct dw_show *sh = arg;
	struct dw_arena_mark mark = dw_arena_mark(&sh->a);
	struct dw_history_event he;
	struct dw_event ev;
	char *ns, *act, *kind;
	int r;

	if (type != HIST_EVENT)
		return 0;
	if ((r = dw_event_decode(&sh->a, p, n, &ev, sh->msg, sizeof sh->msg)) != 0) {
		sh->bad_seq = seq;
		sh->err = r;
		return r;
	}
	sh->b.n = 0;
	{
		/* nanoseconds since the epoch, and the same instant as RFC 3339 UTC */
		time_t secs = (time_t)(ev.ts / DW_NS_PER_SEC - (ev.ts % DW_NS_PER_SEC < 0));
		long ns = (long)(ev.ts - (int64_t)secs * DW_NS_PER_SEC);
		struct tm tm;
		char when[64] = "";
		if (gmtime_r(&secs, &tm) != NULL)
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		r = dw_buf_printf(&sh->b, "{\"seq\":%" PRIu64 ",\"ts\":%" PRId64
				  ",\"time\":\"%s.%09ldZ\",\"action\":", seq, ev.ts, when, ns);
	}
	if (r == 0) {
		/* the Cedar UID of the action, as policies write it */
		struct dw_buf u = { NULL, 0, 0 };
		if ((r = dw_buf_put(&u, ev.ns.p, ev.ns.n)) == 0 && (r = dw_buf_put(&u, "::", 2)) == 0)
			r = dw_buf_put_quoted(&u, ev.action);
		if (r == 0)
			r = dw_json_str(&sh->b, dw_str_make(u.p, u.n));
		dw_buf_free(&u);
	}
	if (r == 0 && (r = dw_buf_put(&sh->b, ",\"kind\":", 8)) == 0)
		r = dw_json_str(&sh->b, ev.kind);
	if (r == 0 && ev.has_principal && (r = dw_buf_put(&sh->b, ",\"principal\":", 13)) == 0) {
		struct dw_tval e = { .kind = DW_TV_ENTITY, .type = ev.principal_type, .s = ev.principal_id };
		r = dw_tval_to_json(&sh->b, &e);
	}
	if (r == 0 && ev.has_resource && (r = dw_buf_put(&sh->b, ",\"resource\":", 12)) == 0) {
		struct dw_tval e = { .kind = DW_TV_ENTITY, .type = ev.resource_type, .s = ev.resource_id };
		r = dw_tval_to_json(&sh->b, &e);
	}
	if (r == 0 && (r = dw_buf_put(&sh->b, ",\"logged\":", 10)) == 0)
		r = dw_tval_to_json(&sh->b, &ev.logged);
	if (r == 0 && ev.has_context && (r = dw_buf_put(&sh->b, ",\"context\":", 11)) == 0)
		r = dw_tval_to_json(&sh->b, &ev.context);
	if (r == 0 && ev.annot != NULL)
		r = dw_show_annot(&sh->b, ev.annot);
	if (r == 0)
		r = dw_buf_put(&sh->b, "}", 2);    /* with the NUL */
	ns = dw_arena_strndup(&sh->a, ev.ns.p, ev.ns.n);
	act = dw_arena_strndup(&sh->a, ev.action.p, ev.action.n);
	kind = dw_arena_strndup(&sh->a, ev.kind.p, ev.kind.n);
	if (r == 0 && (ns == NULL || act == NULL || kind == NULL))
		r = -ENOMEM;
	if (r != 0) {
		sh->err = r;
		dw_arena_reset(&sh->a, mark);
		return r;
	}
	he.seq = seq;
	he.ts = ev.ts;
	he.ns = ns;
	he.action = act;
	he.kind = kind;
	he.json = sh->b.p;
	r = sh->fn(sh->arg, &he);
	dw_arena_reset(&sh->a, mark);
	return r;
}

int dw_history_read(const char *dir, dw_history_fn fn, void *arg, char *err, size_t errlen)
{
	struct dw_show sh;
	struct hist_error he;
	int r;

	memset(&sh, 0, sizeof sh);
	sh.fn = fn;
	sh.arg = arg;
	dw_arena_init(&sh.a);
	r = hist_read(dir, dw_show_record, &sh, &he);
	if (sh.err != 0) {
		if (errlen)
			snprintf(err, errlen, "%s: record %" PRIu64 ": %s", dir, sh.bad_seq,
				 sh.err == -ENOMEM ? "out of memory" : sh.msg);
		r = sh.err == -ENOMEM ? -ENOMEM : -EBADMSG;
	} else if (r < 0 && errlen) {
		snprintf(err, errlen, "%s", he.msg);
	}
	dw_arena_fini(&sh.a);
	dw_buf_free(&sh.b);
	return r;
}

int dw_history_verify(const char *dir, uint64_t *n_records, char *err, size_t errlen)
{
	struct hist_error he;
	int r = hist_verify(dir, n_records, &he);

	if (r != 0 && errlen)
		snprintf(err, errlen, "%s", he.msg);
	return r;
}
