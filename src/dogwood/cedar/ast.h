/* ast.h - the policy AST: rules, scopes, conditions, Cedar expressions,
 * temporal blocks and macro definitions.
 *
 * Produced by the parser (parse.h), rewritten by macro expansion (macro.h),
 * read by the validator and the evaluator.  All nodes and strings belong to the
 * policy set's arena.  Spans are byte offsets into the source the node came
 * from (src_index names it: a policy set may hold several sources). */
#ifndef DW_AST_H
#define DW_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"
#include "value.h"

enum dw_op {
	DW_E_LIT = 1,      /* lit */
	DW_E_VAR,          /* var */
	DW_E_SLOT,         /* template slot (var = principal or resource) */
	DW_E_NOT,          /* a */
	DW_E_NEG,          /* a */
	DW_E_AND,          /* a && b */
	DW_E_OR,           /* a || b */
	DW_E_IF,           /* if a then b else c */
	DW_E_EQ,           /* a == b */
	DW_E_LT,           /* a < b */
	DW_E_LE,           /* a <= b */
	DW_E_ADD,
	DW_E_SUB,
	DW_E_MUL,
	DW_E_IN,           /* a in b */
	DW_E_HAS,          /* a has name */
	DW_E_ATTR,         /* a.name */
	DW_E_LIKE,         /* a like pat */
	DW_E_IS,           /* a is type */
	DW_E_SET,          /* [items] */
	DW_E_RECORD,       /* {keys: items} */
	DW_E_CALL,         /* fn(items) / items[0].fn(items[1..]) */
	DW_E_TEMPORAL,     /* temporal { … } leaf: a Bool from history */
	DW_E_MACRO,        /* call of a `def cedar` macro (before expansion) */
	DW_E_PARAM,        /* ?name inside a macro body */
	DW_E_PROVIDER,     /* Ns::Fn(…) information provider (refused at load) */
};

enum dw_var { DW_VAR_PRINCIPAL = 0, DW_VAR_ACTION, DW_VAR_RESOURCE, DW_VAR_CONTEXT };

/* Built-in methods and extension functions.  Order matters: see fn.c. */
enum dw_fn {
	DW_FN_IP = 1,
	DW_FN_DECIMAL,
	DW_FN_DATETIME,
	DW_FN_DURATION,
	DW_FN_CONTAINS,
	DW_FN_CONTAINS_ALL,
	DW_FN_CONTAINS_ANY,
	DW_FN_IS_EMPTY,
	DW_FN_GET_TAG,
	DW_FN_HAS_TAG,
	DW_FN_IS_IPV4,
	DW_FN_IS_IPV6,
	DW_FN_IS_LOOPBACK,
	DW_FN_IS_MULTICAST,
	DW_FN_IS_IN_RANGE,
	DW_FN_LESS_THAN,
	DW_FN_LESS_THAN_OR_EQUAL,
	DW_FN_GREATER_THAN,
	DW_FN_GREATER_THAN_OR_EQUAL,
	DW_FN_OFFSET,
	DW_FN_DURATION_SINCE,
	DW_FN_TO_DATE,
	DW_FN_TO_TIME,
	DW_FN_TO_MILLISECONDS,
	DW_FN_TO_SECONDS,
	DW_FN_TO_MINUTES,
	DW_FN_TO_HOURS,
	DW_FN_TO_DAYS,
	DW_FN__COUNT
};

struct dw_fn_info {
	const char *name;
	bool method;        /* called as receiver.name(...) */
	bool builtin;       /* Cedar built-in: arity is checked by the parser */
	uint8_t arity;      /* including the receiver for methods */
};
extern const struct dw_fn_info dw_fn_table[DW_FN__COUNT];
/* Look a name up among functions (method=false) or methods; 0 when unknown. */
enum dw_fn dw_fn_lookup(struct dw_str name, bool method);

/* A `like` pattern: literal pieces separated by wildcards.  n_pieces is the
 * number of stars + 1; with one piece the pattern is an exact string. */
struct dw_pattern {
	uint32_t n_pieces;
	struct dw_str piece[];
};
bool dw_pattern_match(const struct dw_pattern *p, struct dw_str s);
/* A pattern from the raw text of a literal (between the quotes: Cedar's string
 * escapes plus `\*`, a literal star), in a.  0; -EINVAL with the bad escape's
 * span in raw; -ENOMEM.  (parse.c: the same decoder as Cedar `like`.) */
struct dw_arena;
int dw_pattern_from_raw(struct dw_arena *a, const char *raw, uint32_t n,
			const struct dw_pattern **out, uint32_t *bad_off, uint32_t *bad_end);

/* A temporal block: the AST's leaf for a Bool that comes from history, either a
 * condition or (macro bodies only) an aggregate.  Its body is a tree of the temporal
 * language (temporal/temporal.h, the layer above); this layer only carries the
 * block and numbers the leaves. */
struct dw_tnode;
struct dw_tterm;
struct dw_temporal {
	struct dw_tnode *cond;           /* NULL when the block is an aggregate */
	struct dw_tterm *agg;            /* aggregation macro body */
	uint32_t off, end;               /* span of the text between the braces */
	uint16_t src_index;
	uint32_t leaf_index;             /* ordinal of the leaf within its rule */
	uint32_t gindex;                 /* ordinal in the whole set (tplan.c) */
};

struct dw_expr {
	uint8_t op;          /* enum dw_op */
	uint8_t var;         /* DW_E_VAR / DW_E_SLOT: enum dw_var */
	uint16_t fn;         /* DW_E_CALL: enum dw_fn */
	uint32_t n;          /* items in SET / RECORD / CALL / MACRO / PROVIDER */
	uint32_t off, end;   /* source span */
	uint16_t src_index;  /* which source of the policy set */
	uint16_t depth;      /* height of the tree below (1 for a leaf); 0: not measured */
	uint32_t size;       /* nodes in the tree below, shared subtrees counted each time */
	union {
		struct dw_val lit;
		struct {
			struct dw_expr *a, *b, *c;
		} k;
		struct {
			struct dw_expr *e;
			struct dw_str name;           /* HAS / ATTR attribute; IS type */
		} attr;
		struct {
			struct dw_expr *e;
			const struct dw_pattern *pat;
		} like;
		struct {
			struct dw_expr **items;
			struct dw_str *keys;          /* RECORD only */
			struct dw_str name;           /* MACRO / PROVIDER / PARAM name */
		} list;
		struct dw_temporal *temporal;         /* TEMPORAL */
	};
};

enum dw_effect { DW_PERMIT = 0, DW_FORBID = 1 };

enum dw_scope_kind {
	DW_SC_ANY = 0,
	DW_SC_EQ,          /* == uid */
	DW_SC_IN,          /* in uid */
	DW_SC_IS,          /* is type */
	DW_SC_IS_IN,       /* is type in uid */
	DW_SC_IN_LIST,     /* action in [uids] */
};

struct dw_scope {
	uint8_t kind;        /* enum dw_scope_kind */
	bool slot;           /* uid is a template slot (principal/resource only) */
	struct dw_str type;  /* IS / IS_IN */
	const struct dw_uid *uid;
	uint32_t n_list;
	const struct dw_uid **list;
	uint32_t off, end;   /* span of the scope element (0,0 when absent) */
};

enum dw_cond_kind { DW_COND_CEDAR = 0, DW_COND_GUARDRAILS, DW_COND_TEMPORAL };

struct dw_cond {
	bool unless;
	uint8_t kind;                 /* enum dw_cond_kind */
	struct dw_expr *body;         /* CEDAR / GUARDRAILS; TEMPORAL: a DW_E_TEMPORAL node */
	uint32_t off, end;
};

struct dw_annotation {
	struct dw_str key;
	struct dw_str value;          /* "" when written without a value */
	uint32_t off, end;
};

struct dw_policy {
	uint32_t index;               /* position among rules, from 0 */
	const char *engine_id;        /* "policy0" (Cedar) or "policy_0" (Dogwood) */
	const char *id;               /* @id when present, else engine_id */
	const char *description;      /* @description or NULL */
	uint8_t effect;               /* enum dw_effect */
	bool is_template;             /* has a slot: never evaluated */
	bool has_temporal;
	struct dw_scope principal, action, resource;
	uint32_t n_annotations;
	struct dw_annotation *annotations;
	uint32_t n_conds;
	struct dw_cond *conds;
	struct dw_expr *cond;         /* conditions folded with && (NULL: true) */
	uint32_t off, end;
	uint16_t src_index;
};

enum dw_macro_kind { DW_MACRO_CEDAR = 0, DW_MACRO_TEMPORAL };

struct dw_macro {
	struct dw_str name;
	uint8_t kind;                 /* enum dw_macro_kind */
	bool is_aggregate;            /* temporal macro whose body is an aggregate */
	bool from_library;
	uint32_t n_params;
	struct dw_str *params;        /* without the '?' */
	struct dw_expr *body;         /* DW_MACRO_CEDAR */
	struct dw_temporal *tbody;    /* DW_MACRO_TEMPORAL */
	uint32_t off, end;            /* span of the whole def */
	uint32_t body_off, body_end;  /* span of the raw body */
	uint16_t src_index;
};

/* Limits on one condition after macro expansion: every walk over the AST
 * (evaluation, validation, lints) may then recurse without a stack guard of
 * its own, and a macro cannot make a rule exponentially large. */
#define DW_EXPR_MAX_DEPTH 400
#define DW_EXPR_MAX_SIZE 200000

/* Child i (0 <= i < dw_expr_nchildren(e)) of e, for generic walks. */
uint32_t dw_expr_nchildren(const struct dw_expr *e);
struct dw_expr *dw_expr_child(const struct dw_expr *e, uint32_t i);

/* Measure e's depth and size without recursion (memoised in the nodes, so a
 * DAG of shared subtrees costs its node count).  0, 1 when deeper than
 * max_depth, 2 when larger than max_size, -ENOMEM. */
int dw_expr_measure(struct dw_expr *e, uint32_t max_depth, uint32_t max_size);

#endif
