/* temporal.h - the AST of Dogwood's temporal sublanguage and its parser.
 *
 * A temporal block (`when temporal { … }`, inline `temporal { … }`, or the body
 * of a `def temporal` macro) is parsed into a dw_tnode tree (the language of
 * docs/policy-reference.md §3).  Nodes and strings live in the policy set's
 * arena; spans are byte offsets in the source the block came from.
 * Evaluation is elsewhere. */
#ifndef DW_TEMPORAL_H
#define DW_TEMPORAL_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "ast.h"
#include "diag.h"
#include "policyset.h"
#include "util.h"

enum dw_tnode_kind {
	DW_TN_AND = 1,       /* a && b */
	DW_TN_NOT,           /* !a */
	DW_TN_FORMERLY,      /* formerly within W a */
	DW_TN_PREVIOUS,      /* previous within W a */
	DW_TN_SINCE,         /* a since within W b   (a = left, b = anchor) */
	DW_TN_PRED,          /* Ns::"id"::kind{ f: t, … }{ … } */
	DW_TN_CMP,           /* term OP term */
	DW_TN_EXISTS,        /* exists (x: T). a */
	DW_TN_TP,            /* tp(x) */
	DW_TN_CALL,          /* macro call name(args) (before expansion) */
	DW_TN_PARAM,         /* ?p standing for a whole condition (macro body) */
};

enum dw_tcmp { DW_TC_EQ = 1, DW_TC_NE, DW_TC_LT, DW_TC_LE, DW_TC_GT, DW_TC_GE };

enum dw_tterm_kind {
	DW_TT_ENTITY = 1,    /* Ns::Type::"id": path + str */
	DW_TT_INT,           /* i */
	DW_TT_DECIMAL,       /* decimal("…"): str = the text */
	DW_TT_STR,           /* str (raw text between the quotes, as Dogwood keeps it) */
	DW_TT_BOOL,          /* b */
	DW_TT_CONTEXT,       /* context.a.b: path = "a.b" */
	DW_TT_SCOPE,         /* principal[.a.b] / resource[.a.b]: root + path */
	DW_TT_VAR,           /* x (bare identifier: a bound variable) */
	DW_TT_BINDER,        /* $x (macro fresh binder) */
	DW_TT_PARAM,         /* ?x (macro parameter) */
	DW_TT_WILDCARD,      /* * or _ */
	DW_TT_ARRAY,         /* [t, …] */
	DW_TT_AGG,           /* count/sum aggregate */
	DW_TT_CALL,          /* macro call in term position (aggregation macro) */
};

/* A window: `within 5m` (seconds; saturating) or `within ?w` (a parameter). */
struct dw_window {
	bool is_param;
	int64_t amount;      /* as written (may be 0 or negative) */
	char unit;           /* 's', 'm', 'h', 'd' */
	int64_t seconds;     /* amount * unit seconds, saturated to i64 */
	struct dw_str param; /* without '?' */
	uint32_t off, end;
};

struct dw_tnode;
struct dw_tterm;

/* A binder slot: a name, ?param or $binder. */
struct dw_tbinder {
	uint8_t sigil;       /* 0, '?', '$' */
	struct dw_str name;  /* without the sigil */
	struct dw_str type;  /* `(x: T)` type path; empty when untyped (tp, sum summand) */
	uint32_t off, end;
};

struct dw_tagg {
	bool is_sum;
	struct dw_tbinder summand;       /* sum only */
	uint32_t n_for;
	struct dw_tbinder *for_binders;
	struct dw_tnode *where;
};

struct dw_tcall {
	struct dw_str name;
	uint32_t n_args;
	struct dw_targ *args;
};

struct dw_tterm {
	uint8_t kind;                    /* enum dw_tterm_kind */
	uint8_t root;                    /* DW_TT_SCOPE: 'p' principal, 'r' resource */
	bool b;
	int64_t i;
	struct dw_str str;               /* ENTITY id, DECIMAL/STR text, VAR/BINDER/PARAM name */
	struct dw_str path;              /* ENTITY type; CONTEXT/SCOPE dotted path */
	uint32_t n_items;                /* ARRAY */
	struct dw_tterm *items;
	struct dw_tagg *agg;             /* AGG */
	struct dw_tcall *call;           /* CALL */
	uint32_t off, end;
};

/* A macro call argument: an interval literal (`1h`), a condition, or a term. */
enum dw_targ_kind { DW_TA_WINDOW = 1, DW_TA_COND, DW_TA_TERM };
struct dw_targ {
	uint8_t kind;
	struct dw_window window;
	struct dw_tnode *cond;
	struct dw_tterm *term;
	uint32_t off, end;
};

struct dw_tfield {
	struct dw_str path;              /* dotted field path, e.g. "input.path" */
	struct dw_tterm term;            /* `path: term` */
	bool like;                       /* `path like "pat"` (cairn extension): term.kind
					  * is DW_TT_STR and term.str the raw pattern text
					  * (`*` any run, `\*` a literal star) */
	const struct dw_pattern *pat;    /* like: the decoded pattern; NULL when an escape
					  * is invalid (tcheck refuses the policy) */
	uint32_t off, end;
};

struct dw_tpred {
	struct dw_str ns;                /* "Box::Action" (segments before the quoted id) */
	struct dw_str action;            /* the id between quotes (raw) */
	struct dw_str kind;              /* "request", "response", … */
	struct dw_str param;             /* base is ?s (refinement of a param), else empty */
	uint32_t n_fields;
	struct dw_tfield *fields;        /* in order; refinements appended */
};

struct dw_tnode {
	uint8_t kind;                    /* enum dw_tnode_kind */
	uint8_t cmp;                     /* CMP: enum dw_tcmp */
	uint32_t off, end;
	struct dw_tnode *a, *b;          /* AND, NOT(a), FORMERLY/PREVIOUS(a), SINCE(a, b), EXISTS(a) */
	struct dw_window window;         /* FORMERLY, PREVIOUS, SINCE */
	struct dw_tpred *pred;           /* PRED */
	struct dw_tterm *lhs, *rhs;      /* CMP */
	struct dw_tbinder binder;        /* EXISTS, TP */
	struct dw_tcall *call;           /* CALL */
	struct dw_str param;             /* PARAM */
};

/* Parse src[off, end) as a temporal block.  params (n_params names, without
 * '?') are the enclosing macro's parameters (macro bodies only; `?x` and `$x`
 * are errors elsewhere).  0 and *out in a, or -EINVAL with one diagnostic
 * (message like `unexpected token `X`, expected …`), or -ENOMEM. */
int dw_temporal_parse(struct dw_arena *a, const char *file, const char *src, size_t len,
		      uint32_t off, uint32_t end, uint16_t src_index, enum dw_temporal_mode mode,
		      const struct dw_str *params, uint32_t n_params, struct dw_temporal **out,
		      struct dw_diags *diags);

/* dw_policy_set_new, with dw_temporal_parse as the parser of the set's temporal
 * blocks: how every Dogwood set is made.  NULL on ENOMEM. */
struct dw_policy_set *dw_policy_set_new_temporal(enum dw_dialect dialect);

#endif
