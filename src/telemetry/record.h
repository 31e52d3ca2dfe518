/* record.h - one decision record or control record, in Box's words
 * (docs/records.md "The records"): what an enforcement point hands the
 * collector, and the owned, encoded-ready form the collector queues.
 *
 * A record is built once, on the decision's thread: every string is copied
 * and bounded (4 KiB on a character boundary, `… (truncated)`), the
 * attributes are put in Box's order, and the result is one malloc'd block the
 * writer encodes and frees.  Nothing here does I/O. */
#ifndef CAIRN_TM_RECORD_H
#define CAIRN_TM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_ATTR_MAX 4096                /* bytes of one string attribute */
#define TM_ARGS_MAX 64                  /* process.command_args after the program */
#define TM_REQUEST_ID_MAX 256

/* Why a decision came out as it did: Box's six causes.  A permit comes only
 * from TM_PERMITTED or TM_ENFORCEMENT. */
enum tm_cause {
	TM_PERMITTED,
	TM_FORBIDDEN,
	TM_NO_MATCH,
	TM_POLICY_PENDING,
	TM_INTERNAL_FAULT,
	TM_ENFORCEMENT,
};
const char *tm_cause_name(enum tm_cause c);     /* "permitted", ... */
/* Box's reason for a policy denial of cause c, which names its class, not
 * the engine's text (the workload is told that): docs/records.md "What the
 * gateway records". */
const char *tm_cause_reason(enum tm_cause c);

/* The trace a record joins: the workload's W3C parent when it sent a valid
 * one, otherwise a new random trace.  span is always new. */
struct tm_trace {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_id[8];
	bool has_parent;
	uint8_t parent_flags;           /* the parent's trace-flags byte */
};

/* A traceparent header's value (version 00, or a later version read as 00
 * requires): 0 and the parent in *t (trace id and parent id set, has_parent),
 * or -EINVAL when it is not one: then the caller keeps a random trace. */
int tm_traceparent_parse(const char *value, size_t len, struct tm_trace *t);

/* Box's request ids: kept only when 1..256 bytes of [A-Za-z0-9-_.:/]. */
bool tm_request_id_ok(const char *id);

enum tm_subject_kind { TM_SUBJECT_NONE, TM_SUBJECT_FILE, TM_SUBJECT_DEST, TM_SUBJECT_PROCESS };

struct tm_rule {
	const char *id;                 /* @id, or the engine's id */
	const char *description;        /* @description, or NULL */
};

/* One effective decision, borrowed for the call to tm_record_decision. */
struct tm_decision {
	int64_t time_ns;                /* when it was decided */
	const char *ns;                 /* the action's namespace: "Box" (NULL: "Box"), or an
	                                   MCP server's */
	const char *action;             /* the vocabulary term: "net:connect" */
	const char *resource;           /* Box's resource text: "api.test:443" */
	bool permit;
	enum tm_cause cause;
	const char *reason;             /* a deny's reason; ignored on a permit */
	const char *rule;               /* the rule named when no authored rule governs:
	                                   "<default-deny>", "<policy-pending>",
	                                   "enforcement:<gate>" */
	size_t n_rules;                 /* the determining rules, governing first */
	const struct tm_rule *rules;
	enum tm_subject_kind subject;   /* NONE: fs:* actions of Box get file.path */
	const char *path;               /* FILE */
	const char *address;            /* DEST */
	unsigned port;
	const char *method;             /* DEST, http: the request's method */
	const char *program;            /* PROCESS */
	size_t n_args;                  /* its arguments after the program */
	const char *const *args;
	const bool *literal;            /* per argument: literal in the command, kept as
	                                   written; NULL: every one was expanded */
	const char *cwd;
	const char *request_id;         /* strands.box.request.id, or NULL */
	const char *jsonrpc_id;         /* jsonrpc.request.id, or NULL */
	struct tm_trace trace;
};

/* Box's control-plane operations. */
enum tm_control_op {
	TM_BOX_STARTED,
	TM_POLICY_INSTALLED,
	TM_POLICY_REFUSED,
	TM_SCHEMA_INSTALLED,
	TM_DISCOVERY_COMPLETE,
	TM_BOX_STOPPED,
	TM_REFUSALS_UNOBSERVED,
};
const char *tm_control_name(enum tm_control_op op);

/* ---- the queued form -------------------------------------------------------- */

enum tm_scope { TM_SCOPE_POLICY, TM_SCOPE_CONTROL, TM_SCOPE_CONTAINMENT };
const char *tm_scope_name(enum tm_scope s);     /* "strands-box.policy", ... */

/* Which targets take a record (the `include` words of [telemetry.<label>]). */
enum tm_signal {
	TM_SIG_DENY = 1u << 0,
	TM_SIG_PERMIT = 1u << 1,
	TM_SIG_TRACE = 1u << 2,         /* control records, and the agent's spans */
	TM_SIG_KERNEL = 1u << 3,
};

enum tm_value_kind { TM_STR, TM_INT, TM_STRS };

struct tm_attr {
	const char *key;                /* static, and a name that needs no JSON escape
	                                   (the encoder copies it as it is) */
	enum tm_value_kind kind;
	const char *s;                  /* TM_STR */
	int64_t i;                      /* TM_INT */
	size_t n;                       /* TM_STRS */
	const char *const *v;
};

struct tm_rec {
	struct tm_rec *next;            /* the collector's queue */
	enum tm_scope scope;
	unsigned signal;                /* one TM_SIG_* */
	int64_t time_ns;
	int64_t observed_ns;            /* set when the collector takes it */
	int severity;                   /* 13 deny, 9 permit, 10 control, 14 kernel */
	const char *text;               /* severityText: "deny", "permit", "ok", "refused" */
	const char *event_name;         /* NULL: none (control records) */
	struct tm_trace trace;
	uint32_t flags;                 /* the log record's: 1 | parent's sampled bit */
	bool span;                      /* a derived span follows in the traces line */
	uint32_t span_flags;
	const char *span_name;          /* "policy net:connect" */
	const char *status;             /* the span's error message, or NULL (status null) */
	const char *action;             /* for the live line: the term, the resource, */
	const char *resource;           /* the verdict and the rule (decisions only) */
	const char *rule;
	size_t n_attrs;                 /* Box's order, without the parent key (the log
	                                   encoder adds strands.box.trace.parent_span_id) */
	struct tm_attr attrs[];
};

/* The record of d, one block (free()), or NULL on ENOMEM. */
struct tm_rec *tm_record_decision(const struct tm_decision *d);

/* A control record: refused when reason is non-NULL; subject and detail may
 * be NULL.  t: the run's trace (one per run), this record's new span, and
 * for every record after the run's first, that first one's span as parent. */
struct tm_rec *tm_record_control(enum tm_control_op op, const char *subject, const char *reason,
				 const char *detail, int64_t time_ns, const struct tm_trace *t);

/* A kernel refusal (docs/records.md "Kernel refusals"): a call the
 * sandbox's seccomp filter refused with EPERM, as the supervisor observed
 * it.  Borrowed for the call to tm_record_kernel. */
struct tm_kernel_refusal {
	int64_t time_ns;
	const char *syscall;            /* "socket" */
	const char *arguments;          /* what the refusing rule read; "" or NULL: none */
	int64_t suppressed;             /* repeats of the same refusal not recorded */
	int pid;
	const char *program;            /* /proc/<pid>/exe; "" or NULL: unknown */
	size_t n_args;                  /* argv after argv[0], each reported as
	                                   tm_reportable_arg says */
	const char *const *args;
	const char *cwd;                /* "" or NULL: unknown */
};

/* Its record, log only (scope strands-box.containment, event
 * strands.box.containment.refusal, severity 14, text "refused", a new
 * trace), attributes in Box's order; one block (free()), or NULL. */
struct tm_rec *tm_record_kernel(const struct tm_kernel_refusal *k);

/* Set the integer attribute key of r (TM_INT) to v: for a refusal's record
 * kept to say its repeats later.  0, or -ENOENT. */
int tm_record_set_int(struct tm_rec *r, const char *key, int64_t v);

/* Fill n bytes of buf with random bits for trace and span ids (never all
 * zero: W3C makes an all-zero id invalid). */
void tm_random_id(uint8_t *buf, size_t n);

/* s bounded to TM_ATTR_MAX bytes as Box cuts it: at a character boundary,
 * `… (truncated)` after.  Writes into out (TM_ATTR_MAX + 1 bytes) and
 * returns it, or returns s itself when it fits. */
const char *tm_bounded(const char *s, char out[TM_ATTR_MAX + 1]);

/* One expanded argument as a record may carry it: a plain flag (`-x`,
 * `--name` of up to 32 [a-z-], starting with a letter) as written,
 * `--name=<redacted>` for a flag with a value, else `<redacted>`. */
const char *tm_reportable_arg(const char *arg, char out[TM_ATTR_MAX + 1]);

#endif
