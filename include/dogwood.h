/* dogwood.h - the public API of libdogwood, cairn's policy engine.
 *
 * Dogwood is Cedar plus conditions over history.  This header covers loading
 * (schemas, event schemas, policies, entities), validation, deciding a single
 * request with Cedar 4.x semantics (dw_authorize: a temporal leaf is an
 * evaluation error there, as there is no history), and the stateful monitor
 * (dw_monitor: events, history, temporal conditions, decisions).
 *
 * Conventions, for every function below:
 * - Errors are values: functions return 0 on success or a negative errno
 *   (-EINVAL: bad input, described in the dw_diags or err buffer you pass;
 *   -ENOMEM: allocation failed).  On failure outputs are untouched and nothing
 *   was changed, unless stated otherwise.
 * - Pointers you pass are borrowed for the duration of the call; text is
 *   copied.  Objects returned through `**out` are owned by you and released
 *   with the matching _free function (which accepts NULL).
 * - Nothing here prints, exits, or touches the OS beyond malloc.
 * - A finished dw_engine is immutable: dw_authorize may be called from several
 *   threads at once with distinct requests and decisions.
 */
#ifndef DOGWOOD_H
#define DOGWOOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- diagnostics --------------------------------------------------------- */

struct dw_diags;

enum dw_diag_severity { DW_DIAG_ERROR = 0, DW_DIAG_WARNING = 1 };

/* One diagnostic.  Strings are borrowed from the list and live until it is
 * freed.  line/col are 1-based (0 when the problem has no position; col
 * counts characters); line_text is the source line, or NULL. */
struct dw_diagnostic {
	enum dw_diag_severity severity;
	const char *file;
	unsigned line, col, end_line, end_col;
	const char *message;
	const char *line_text;
	long rule;            /* index of the rule concerned, or -1 */
};

struct dw_diags *dw_diags_new(void);                    /* NULL on ENOMEM */
void dw_diags_free(struct dw_diags *d);
size_t dw_diags_count(const struct dw_diags *d);
size_t dw_diags_errors(const struct dw_diags *d);       /* errors only */
/* Fill *out with diagnostic i (0 <= i < count); -EINVAL if out of range. */
int dw_diags_get(const struct dw_diags *d, size_t i, struct dw_diagnostic *out);

/* ---- loading an engine --------------------------------------------------- */

enum dw_input_format {
	DW_FMT_CEDAR = 0,      /* policies: Cedar syntax (ids policy0, policy1, …) */
	DW_FMT_DOGWOOD,        /* policies: Dogwood syntax (ids policy_0, …)       */
	DW_FMT_CEDARSCHEMA,    /* schema: Cedar's human format                      */
	DW_FMT_JSON,           /* schema: Cedar's JSON format; entities: JSON       */
	DW_FMT_DWSCHEMA,       /* event schema: Dogwood's .dwschema                 */
};

/* A named text: file names diagnostics, text[0, len) is the content. */
struct dw_input {
	const char *file;
	const char *text;
	size_t len;
	enum dw_input_format format;
};

enum dw_engine_flags {
	DW_VALIDATE = 1 << 0,      /* strict validation against the schema */
	DW_BOX_RULES = 1 << 1,     /* Box's load rules (unknown action, inert literals, …) */
	DW_NO_BOX_SCHEMA = 1 << 2, /* with no schema given, use none instead of Box's */
	DW_NO_INDEX = 1 << 3,      /* evaluate every rule of the action (for tests: the
				    * index must never change an answer) */
};

struct dw_engine_config {
	const struct dw_input *schemas;    /* none: the compiled-in Box action schema */
	size_t n_schemas;
	const struct dw_input *policies;   /* all of one dialect (Cedar or Dogwood) */
	size_t n_policies;
	const struct dw_input *macros;     /* Dogwood macro libraries; none: the default */
	size_t n_macros;
	const struct dw_input *entities;   /* Cedar JSON entity files */
	size_t n_entities;
	const struct dw_input *event_schema;  /* .dwschema; NULL: the default (Box's) */
	unsigned flags;                    /* enum dw_engine_flags */
	const char *home;                  /* the operator's home, for DW_BOX_RULES'
					    * inert-literal check (NULL: skip it) */
};

struct dw_engine;

/* Parse, expand, validate (per flags) and index everything in cfg.  On any
 * error: -EINVAL, every problem found so far in diags (errors and warnings;
 * warnings alone do not fail), *out untouched.  On success diags may hold
 * warnings. */
int dw_engine_new(const struct dw_engine_config *cfg, struct dw_engine **out,
		  struct dw_diags *diags);
void dw_engine_free(struct dw_engine *eng);

/* Strict validation of a loaded engine's policies against its schema (for an
 * engine loaded without DW_VALIDATE): 0, or -EINVAL with the problems in
 * diags; -ENOMEM.  An engine without a schema validates trivially. */
int dw_engine_validate(const struct dw_engine *eng, struct dw_diags *diags);

size_t dw_engine_rule_count(const struct dw_engine *eng);
/* Rule i's engine id ("policy0" / "policy_0"), its @id (or NULL), and whether
 * it has temporal conditions.  -EINVAL if i is out of range. */
int dw_engine_rule_info(const struct dw_engine *eng, size_t i, const char **engine_id,
			const char **annotation_id, bool *temporal);

/* Temporal leaves (numbered across the whole set).  For leaf i: its rule, whether
 * the incremental engine keeps it (else a bounded scan of the in-window history
 * evaluates it, and *why says what shape prevents it), and how far back it can
 * look (seconds, nested windows summed).  -EINVAL if i is out of range. */
size_t dw_engine_leaf_count(const struct dw_engine *eng);
int dw_engine_leaf_info(const struct dw_engine *eng, size_t i, size_t *rule, bool *incremental,
			const char **why, int64_t *span_s);
/* Could some temporal condition match an event of the Box action named
 * ("fs:read")?  Conservative: a predicate over a macro parameter counts.  An
 * enforcement point records what it would otherwise let pass unrecorded
 * (the mediator: reads under direct grants) only when this says so. */
bool dw_engine_watches_action(const struct dw_engine *eng, const char *action);
/* Does scanned leaf i count or sum `::response` events?  Such a cap does not see
 * requests still in flight (only incrementally kept aggregates count them). */
bool dw_engine_leaf_pending_blind(const struct dw_engine *eng, size_t i);

/* ---- requests ------------------------------------------------------------ */

struct dw_request;

struct dw_request *dw_request_new(void);                  /* NULL on ENOMEM */
void dw_request_free(struct dw_request *r);
/* Empty r for the next request, keeping its memory (a worker's request
 * reused per call allocates nothing once warm). */
void dw_request_reset(struct dw_request *r);
/* Principal, action, resource: entity type path and id (id may contain NUL). */
int dw_request_set_principal(struct dw_request *r, const char *type, const char *id, size_t id_len);
int dw_request_set_action(struct dw_request *r, const char *type, const char *id, size_t id_len);
int dw_request_set_resource(struct dw_request *r, const char *type, const char *id, size_t id_len);
/* The context as Cedar JSON (an object), parsed against the action's declared
 * context type when the engine has a schema: set the action first.  -EINVAL
 * with a message in err (errlen bytes, may be 0). */
int dw_request_set_context_json(struct dw_request *r, const struct dw_engine *eng,
				const char *json, size_t len, char *err, size_t errlen);
/* The context as typed values, without JSON text: `{input: {<attrs>}}`, for
 * an enforcement point on a hot path that knows its action's input type
 * (the mediator).  Strings and entity ids are copied and must be UTF-8;
 * names unique.  It is checked against the action's context type when the
 * request is decided, as every dw_decide request is.  0, -EINVAL (not UTF-8,
 * a duplicate name: err), -ENOMEM. */
enum dw_input_kind { DW_ATTR_STRING = 1, DW_ATTR_LONG, DW_ATTR_BOOL, DW_ATTR_ENTITY };
struct dw_input_attr {
	const char *name;
	enum dw_input_kind kind;
	const char *s;                /* STRING: the text; ENTITY: the id */
	size_t len;                   /* of s */
	const char *type;             /* ENTITY: "Box::FsReadOperation" */
	int64_t i;                    /* LONG */
	bool b;                       /* BOOL */
};
int dw_request_set_input(struct dw_request *r, const struct dw_input_attr *attrs, size_t n, char *err,
			 size_t errlen);
/* What the request is about, for the denial text ("~/proj/.env",
 * "api.example.com:443/v1"); NULL or "" leaves it out. */
int dw_request_set_subject(struct dw_request *r, const char *text);
/* An opaque note from the enforcement point (the collector's record ids),
 * stored as is with the request's event when dw_decide logs it, and nowhere
 * else: no rule, Cedar request or incremental state sees it.  At most 1024
 * bytes of UTF-8; NULL or "" clears it.  0, -EINVAL (longer, or not UTF-8:
 * the note is unchanged), -ENOMEM. */
int dw_request_set_note(struct dw_request *r, const char *text);
/* Cedar request validation against the engine's schema (action declared,
 * principal/resource types allowed, context conforms); 0 or -EINVAL + err. */
int dw_request_validate(const struct dw_request *r, const struct dw_engine *eng, char *err,
			size_t errlen);

/* ---- decisions ----------------------------------------------------------- */

enum dw_verdict { DW_DENY = 0, DW_ALLOW = 1 };

/* The effective decision as enforcement points apply it (Box semantics):
 * any evaluation error denies the request as an internal fault, even if a
 * permit was satisfied. */
enum dw_cause {
	DW_CAUSE_PERMITTED = 0,
	DW_CAUSE_FORBIDDEN,
	DW_CAUSE_NO_MATCH,
	DW_CAUSE_INTERNAL_FAULT,
};

struct dw_rule_ref {
	size_t index;                 /* rule index */
	const char *engine_id;        /* "policy0" / "policy_0" */
	const char *id;               /* @id if present and not blank, else engine_id */
	const char *description;      /* @description or NULL */
};

struct dw_rule_error {
	size_t index;
	const char *engine_id;
	const char *message;
};

struct dw_decision {
	/* Cedar's answer: allow iff a permit holds and no forbid does; rules whose
	 * evaluation errored are skipped and listed in errors. */
	enum dw_verdict cedar;
	size_t n_reasons;
	const struct dw_rule_ref *reasons;    /* determining rules, by index */
	size_t n_errors;
	const struct dw_rule_error *errors;
	/* The effective decision. */
	enum dw_verdict verdict;
	enum dw_cause cause;
	const char *text;   /* "policy denied this operation on '…' [policy: id]: …" */
	void *priv_;        /* owned storage; release with dw_decision_clear */
};

/* Decide r.  0 and *out (release with dw_decision_clear), or -ENOMEM with
 * out->verdict = DW_DENY, cause internal fault.  Thread-safe. */
int dw_authorize(const struct dw_engine *eng, const struct dw_request *r, struct dw_decision *out);
void dw_decision_clear(struct dw_decision *d);

const char *dw_cause_name(enum dw_cause c);   /* "permitted", "forbidden", … */

/* ---- traces ---------------------------------------------------------------- */

/* A parsed trace in Dogwood's format (docs/formats.md §4).  A timestamp is
 * whole seconds, as Dogwood writes it, or seconds with up to nine digits after
 * a point (`@1764622800.123456789`), as `cairn history show` times convert to. */
struct dw_trace;

/* 0 and *out, or -EINVAL with `line N: <reason>` in err, or -ENOMEM. */
int dw_trace_load(const char *text, size_t len, struct dw_trace **out, char *err, size_t errlen);
void dw_trace_free(struct dw_trace *t);
size_t dw_trace_len(const struct dw_trace *t);
/* Event i's timestamp in seconds, truncated toward zero. */
int64_t dw_trace_ts(const struct dw_trace *t, size_t i);
/* Event i's timestamp in nanoseconds, as written. */
int64_t dw_trace_ts_ns(const struct dw_trace *t, size_t i);
/* A timestamp of ns nanoseconds as a trace writes it, into buf (32 bytes):
 * `36000`, or `36000.5` (the fraction without trailing zeros). */
void dw_trace_ts_format(int64_t ns, char buf[32]);

/* ---- the monitor: history and decisions ------------------------------------ */

/* A monitor is an engine plus its history: every event is appended, temporal
 * conditions read the history, and events of a decision kind are decided.
 * It may be called from several threads (one internal lock). */
struct dw_monitor;

enum dw_monitor_flags {
	DW_MON_REFERENCE = 1 << 0,    /* evaluate temporal leaves by rescanning the whole
				       * history (the oracle of the tests; slow) */
	DW_MON_CALLER_TIME = 1 << 1,  /* take event timestamps as given (replay) instead of
				       * stamping them with the monitor's clock */
	DW_MON_STRICT_CONTEXT = 1 << 2, /* check each trace event's request_context against
				       * its action's context type (every required
				       * attribute present, none undeclared) before
				       * deciding; without it the context is taken as
				       * given, as Dogwood's replay takes it.  Requests
				       * from dw_decide are always checked. */
};

struct dw_monitor_config {
	unsigned flags;               /* enum dw_monitor_flags */
	const char *history_dir;      /* durable history here (the directory must exist);
				       * NULL: in memory only */
	/* The clock that stamps events, in nanoseconds since the epoch; NULL: the
	 * real-time clock.  Stamps never go backwards: a stamp is at least the
	 * previous one plus 1 ns. */
	int64_t (*clock)(void *arg);
	void *clock_arg;
};

/* 0 and *out, or -EINVAL/-EIO with a message in err (a damaged history names
 * the byte offset and the reason), or -ENOMEM.  eng must outlive the monitor. */
int dw_monitor_new(const struct dw_engine *eng, const struct dw_monitor_config *cfg,
		   struct dw_monitor **out, char *err, size_t errlen);
void dw_monitor_free(struct dw_monitor *m);

/* Decide r as a `::request` of its action (the live path of an enforcement
 * point).  The event — logged record {input: context.input, requestId,
 * callerPrincipal, callerResource}, the request's context — is stamped, the
 * rules run, and the event is appended to the history with the decision
 * returned in *out (verdict, cause, determining rule ids, the denial text, the
 * governing rule's description) and r's note, all before dw_decide returns:
 * no decision exists for an event the history lacks, a denied request is
 * history too, and the history alone can rebuild the decision records
 * (docs/engine.md "Decisions in the history").  *ticket names the request for
 * dw_record.  Beyond Box: until its outcome is recorded, a permitted request
 * counts as a pending `::response` of its action in every count/sum over
 * `::response`, so racing requests cannot overrun a cap.  0, or -ENOMEM/-EIO
 * (out then denies as an internal fault; nothing stays pending).  A failed
 * history write (-EIO) breaks the monitor: every later decision denies.
 * Thread-safe. */
int dw_decide(struct dw_monitor *m, const struct dw_request *r, struct dw_decision *out,
	      uint64_t *ticket);

/* Record the outcome of the request named by ticket: kind "response" (output:
 * a JSON object for `output`, or NULL) or "error" (output must be NULL).
 * Releases its pending count.  0, -ENOENT (unknown or already recorded ticket),
 * -EINVAL (bad kind or output: err), -ENOMEM, -EIO. */
int dw_record(struct dw_monitor *m, uint64_t ticket, const char *kind, const char *output_json,
	      size_t len, char *err, size_t errlen);

/* dw_record with the output given as typed attributes (an enforcement
 * point's hot path: no JSON built or parsed), e.g. {result: entity
 * Box::FsResponseResult::"completed"} or {status: 0}.  The strings are
 * copied.  Same returns; -EINVAL also for a name given twice. */
int dw_record_typed(struct dw_monitor *m, uint64_t ticket, const char *kind,
		    const struct dw_input_attr *output, size_t n, char *err, size_t errlen);

/* dw_record with some fields of the request's `input` replaced on the
 * outcome event: input_json is a JSON object whose every key is a field of
 * the request's input (Box: http:request::response carries the delivered
 * body_bytes where the ::request had the offered size).  -EINVAL (nothing
 * recorded, the request stays pending) for a bad object or an unknown key. */
int dw_record_input(struct dw_monitor *m, uint64_t ticket, const char *kind,
		    const char *output_json, size_t len, const char *input_json, size_t input_len,
		    char *err, size_t errlen);

/* Forget the permitted request named by ticket without an outcome: for a
 * request whose only event is its `::request` (Box records the gateway's
 * net:connect before DNS that way).  It stops counting as a pending
 * `::response`.  0 or -ENOENT (unknown or already recorded ticket). */
int dw_release(struct dw_monitor *m, uint64_t ticket);

/* Record an effect that had no decision (an access under a direct grant,
 * performed without asking): a `::response` or `::error` of r's action, so
 * history rules see it. */
int dw_observe(struct dw_monitor *m, const struct dw_request *r, const char *kind,
	       const char *output_json, size_t len, char *err, size_t errlen);
/* dw_observe with a typed output (output NULL and n 0 for none). */
int dw_observe_typed(struct dw_monitor *m, const struct dw_request *r, const char *kind,
		     const struct dw_input_attr *output, size_t n, char *err, size_t errlen);

/* A refusal an enforcement point gave the workload: by the policy (cause
 * "forbidden", "no_match" or "internal_fault", rule the determining @id or
 * "<default-deny>"), or by a check of the point's own that runs whatever the
 * policy says (cause "enforcement", rule "enforcement:<gate>").  Box's words
 * for its decision records (docs/egress.md "Refusals in the history"). */
struct dw_refusal {
	const char *cause;
	const char *rule;
	const char *reason;           /* the text the workload saw */
	const char *output_json;      /* NULL, or a JSON object: the event's `output`
				       * (the gateway's {"status":403}) */
	const char *note;             /* NULL, or an opaque note stored with the
				       * event, as dw_request_set_note's */
};

/* Record a refusal of r as its action's `refusal` event: logged {input:
 * context.input, output, cause, rule, reason, requestId, callerPrincipal,
 * callerResource}.  History only: Box's event schema declares no `refusal`
 * kind, so no rule can name it and no decision changes (a policy denial
 * stays its ::request, as in Box); it is the record of what the workload
 * was told, and why.  ticket: the decision this refusal follows (the two
 * share a requestId), or 0 for a refusal before any decision.  0, -EINVAL
 * (missing cause, rule or reason; bad output or note: err), -ENOMEM, -EIO. */
int dw_refuse(struct dw_monitor *m, const struct dw_request *r, uint64_t ticket,
	      const struct dw_refusal *rf, char *err, size_t errlen);

/* Make every event appended so far durable (group commit: concurrent callers
 * share one fdatasync).  Enforcement points call it before an outcome reaches
 * the workload.  0 or -EIO.  A monitor without a history_dir returns 0. */
int dw_sync(struct dw_monitor *m);

/* Write a snapshot of the incremental state beside the durable history, so
 * the next open loads it and replays only what came after, instead of the
 * whole retained history.  A snapshot is used only by a monitor whose
 * temporal rules are the same (a changed policy replays: its rules see the
 * history that exists).  dw_monitor_free writes one too.  0 (also without a
 * history, or in reference mode), -ENOMEM, -EIO. */
int dw_monitor_checkpoint(struct dw_monitor *m);

/* Statistics, for tests and benchmarks. */
struct dw_monitor_stats {
	uint64_t events;              /* ingested since open (including replayed) */
	uint64_t retained;            /* events kept in memory */
	uint64_t state_bytes;         /* incremental state */
	uint64_t pending;             /* permitted requests without an outcome */
	uint64_t replayed;            /* events replayed from the history at open */
	bool from_snapshot;           /* open loaded a snapshot */
};
void dw_monitor_stats(struct dw_monitor *m, struct dw_monitor_stats *out);

/* ---- inspecting a durable history ------------------------------------------ */

/* One event of a history, for display: strings valid during the callback. */
struct dw_history_event {
	uint64_t seq;                 /* position in the history */
	int64_t ts;                   /* nanoseconds since the epoch */
	const char *ns;               /* "Box::Action" */
	const char *action;           /* "fs:read" */
	const char *kind;             /* "request", "response", "error" */
	const char *json;             /* the whole event as one JSON object (one line),
				       * with its stored decision and note
				       * (docs/formats.md §5) */
};
typedef int (*dw_history_fn)(void *arg, const struct dw_history_event *ev);

/* Read the history in dir without disturbing a monitor that has it open:
 * every record is checked (CRC, hash chain) before fn sees it.  0 at the end,
 * fn's non-zero value if it stopped, -EBADMSG on damage (err: offset and
 * reason), -EUCLEAN after a torn tail (all records before it were shown). */
int dw_history_read(const char *dir, dw_history_fn fn, void *arg, char *err, size_t errlen);
/* Check every record's CRC and the whole chain.  0 with *n_records, or
 * -EBADMSG/-EUCLEAN with err naming the first bad record (seq, byte offset). */
int dw_history_verify(const char *dir, uint64_t *n_records, char *err, size_t errlen);

/* Ingest event i of t.  When its kind decides, *decided is true and *out holds
 * the decision (release with dw_decision_clear); history-only events only
 * append.  The event's request_context is taken as given unless the monitor
 * has DW_MON_STRICT_CONTEXT; a rule reading an attribute it lacks errors.
 * 0 or -ENOMEM / -EIO (then the event was not recorded; a decision
 * event's *out denies as an internal fault). */
int dw_monitor_feed_trace(struct dw_monitor *m, const struct dw_trace *t, size_t i,
			  bool *decided, struct dw_decision *out);

#ifdef __cplusplus
}
#endif

#endif
