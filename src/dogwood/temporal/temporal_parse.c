/* temporal_parse.c - the parser of Dogwood's temporal sublanguage (temporal.h).
 *
 * Divisions:
 *   1. parser state: tokens, pest-style failure tracking, memo tables, lists
 *   2. one-token rules (identifiers, literals, sigils, operators)
 *   3. binders, windows, predicates
 *   4. terms, aggregates, macro calls
 *   5. conditions
 *   6. checks after a successful parse (literal ranges, acceptance rules 5-6,
 *      sigils)
 *   7. syntax error messages and the entry point
 *
 * The grammar is Dogwood's (docs/policy-reference.md §3), which the reference
 * states as a pest PEG: alternatives are tried in order, the first that
 * matches wins, and once a choice has matched it is never revisited when a
 * later element of the enclosing sequence fails.  Each PEG rule is one
 * function here, named after the pest rule, that restores the position when
 * it fails.  The block is tokenized once with lex.h, so the position is an
 * index into a token array and backtracking is an assignment.
 *
 * Two additions keep it a faithful and bounded copy of the reference:
 *   - memoization (packrat) of condition, term, agg_expr and call by their
 *     start token.  PEG order makes `f(g(h(…)))` parse as a comparison operand
 *     before it parses as a call, so without it each nesting level of calls or
 *     aggregates doubles the work;
 *   - pest's failure tracking (ParserState::track): the furthest position a
 *     rule failed at, and which rules failed there.  The syntax error names
 *     those rules by the reference's friendly names, so it reads as Dogwood's
 *     does: ``unexpected token `X`, expected …``.
 * Recursion passes through condition or term at every level of nesting; both
 * count against DW_TP_MAX_DEPTH.  AND chains and `!` runs are loops.
 *
 * AST nodes go to the caller's arena; tokens, memo tables and lists under
 * construction go to a scratch arena dropped before returning.  On failure the
 * caller's arena is reset to where it was, so an error leaves nothing behind.
 */
#include "temporal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

#define DW_TP_MAX_DEPTH 200
#define DW_TP_SHOWN_MAX 64      /* bytes of the offending token quoted in a message */
#define DW_TP_ATT_MAX 1024      /* failure records kept at the furthest position */

/* --- 1. parser state ----------------------------------------------------------- */

/* The reference grammar's rules, for failure tracking (grammar.pest names). */
enum dw_tp_rule {
	DW_TPR_CONDITION_ENTRY,
	DW_TPR_MACRO_BODY_ENTRY,
	DW_TPR_CONDITION,
	DW_TPR_CONJ_OR_SINCE,
	DW_TPR_NEG_CONJUNCT,
	DW_TPR_BANG,
	DW_TPR_CONJUNCT,
	DW_TPR_SIGIL_COND,
	DW_TPR_REFINABLE,
	DW_TPR_FIELD_BLOCK,
	DW_TPR_PARENTHESIZED,
	DW_TPR_TEMPORAL_OP,
	DW_TPR_ONCE_OP,
	DW_TPR_PREVIOUS_OP,
	DW_TPR_ATOM,
	DW_TPR_EXISTS_OP,
	DW_TPR_TP_OP,
	DW_TPR_PREDICATE,
	DW_TPR_QUALIFIED_ACTION,
	DW_TPR_EVENT_KIND,
	DW_TPR_NAMED_ARG_LIST,
	DW_TPR_NAMED_ARG,
	DW_TPR_FIELD_PATH,
	DW_TPR_COMPARISON,
	DW_TPR_CMP_OP,
	DW_TPR_AGG_EXPR,
	DW_TPR_SUM_EXPR,
	DW_TPR_COUNT_EXPR,
	DW_TPR_FOR_BINDERS,
	DW_TPR_TYPED_BINDER,
	DW_TPR_TYPE_EXPR,
	DW_TPR_WITHIN,
	DW_TPR_WITHIN_PAYLOAD,
	DW_TPR_TIME_UNIT,
	DW_TPR_CALL,
	DW_TPR_CALL_ARG_LIST,
	DW_TPR_CALL_ARG,
	DW_TPR_INTERVAL_LIT,
	DW_TPR_TERM,
	DW_TPR_PAREN_AGG,
	DW_TPR_ENTITY,
	DW_TPR_DECIMAL_LIT,
	DW_TPR_ARRAY,
	DW_TPR_CONTEXT_FIELD,
	DW_TPR_SCOPE_FIELD,
	DW_TPR_SCOPE_ROOT,
	DW_TPR_WILDCARD,
	DW_TPR_IDENT,
	DW_TPR_INTEGER,
	DW_TPR_STRING,
	DW_TPR_KW_TRUE,
	DW_TPR_KW_FALSE,
	DW_TPR_PARAM_REF,
	DW_TPR_BINDER_REF,
	DW_TPR_BINDER_SLOT,
	DW_TPR_EOI,
	DW_TPR__COUNT
};

/* Friendly names, as the reference's temporal_rule_display() has them. */
static const char *const dw_tp_rule_names[DW_TPR__COUNT] = {
	[DW_TPR_CONDITION_ENTRY] = "temporal condition",
	[DW_TPR_MACRO_BODY_ENTRY] = "temporal macro body",
	[DW_TPR_CONDITION] = "temporal condition",
	[DW_TPR_CONJ_OR_SINCE] = "temporal condition",
	[DW_TPR_NEG_CONJUNCT] = "temporal condition",
	[DW_TPR_BANG] = "'!'",
	[DW_TPR_CONJUNCT] = "temporal condition",
	[DW_TPR_SIGIL_COND] = "macro parameter",
	[DW_TPR_REFINABLE] = "event predicate",
	[DW_TPR_FIELD_BLOCK] = "field injection block",
	[DW_TPR_PARENTHESIZED] = "'('",
	[DW_TPR_TEMPORAL_OP] = "'formerly' or 'previous'",
	[DW_TPR_ONCE_OP] = "'formerly'",
	[DW_TPR_PREVIOUS_OP] = "'previous'",
	[DW_TPR_ATOM] = "temporal condition",
	[DW_TPR_EXISTS_OP] = "'exists'",
	[DW_TPR_TP_OP] = "'tp'",
	[DW_TPR_PREDICATE] = "event predicate",
	[DW_TPR_QUALIFIED_ACTION] = "qualified action",
	[DW_TPR_EVENT_KIND] = "event kind",
	[DW_TPR_NAMED_ARG_LIST] = "field binding",
	[DW_TPR_NAMED_ARG] = "field binding",
	[DW_TPR_FIELD_PATH] = "field name",
	[DW_TPR_COMPARISON] = "comparison",
	[DW_TPR_CMP_OP] = "comparison operator",
	[DW_TPR_AGG_EXPR] = "aggregation",
	[DW_TPR_SUM_EXPR] = "'sum'",
	[DW_TPR_COUNT_EXPR] = "'count'",
	[DW_TPR_FOR_BINDERS] = "'for' clause",
	[DW_TPR_TYPED_BINDER] = "typed binder",
	[DW_TPR_TYPE_EXPR] = "type",
	[DW_TPR_WITHIN] = "'within' clause",
	[DW_TPR_WITHIN_PAYLOAD] = "window interval",
	[DW_TPR_TIME_UNIT] = "time unit ('s', 'm', 'h', or 'd')",
	[DW_TPR_CALL] = "macro call",
	[DW_TPR_CALL_ARG_LIST] = "argument list",
	[DW_TPR_CALL_ARG] = "argument",
	[DW_TPR_INTERVAL_LIT] = "interval literal",
	[DW_TPR_TERM] = "value",
	[DW_TPR_PAREN_AGG] = "'('",
	[DW_TPR_ENTITY] = "entity reference",
	[DW_TPR_DECIMAL_LIT] = "'decimal(...)'",
	[DW_TPR_ARRAY] = "'['",
	[DW_TPR_CONTEXT_FIELD] = "'context' field",
	[DW_TPR_SCOPE_FIELD] = "'principal' or 'resource'",
	[DW_TPR_SCOPE_ROOT] = "'principal' or 'resource'",
	[DW_TPR_WILDCARD] = "'*'",
	[DW_TPR_IDENT] = "identifier",
	[DW_TPR_INTEGER] = "integer",
	[DW_TPR_STRING] = "string literal",
	[DW_TPR_KW_TRUE] = "'true'",
	[DW_TPR_KW_FALSE] = "'false'",
	[DW_TPR_PARAM_REF] = "parameter reference",
	[DW_TPR_BINDER_REF] = "binder reference",
	[DW_TPR_BINDER_SLOT] = "binder",
	[DW_TPR_EOI] = "end of input",
};

/* One failure record: a rule, at an index of pest's attempt list.  The list is
 * kept with its duplicates counted but not stored (see dw_tp_memoize), so
 * indices are virtual: n_att counts every attempt, the records are the first
 * occurrences that a later truncation or a memo entry can observe. */
struct dw_tp_att {
	uint64_t at;
	uint8_t rule;
};

/* The result of one memoized rule at one start token, with what it did to the
 * failure tracking, so a second call has the same effect as the first: it
 * added n_added attempts at fail_pos, whose distinct rules are names[] (first
 * occurrences, at their offsets from the start of the addition). */
struct dw_tp_memo {
	void *res;               /* NULL: the rule failed */
	uint32_t end;            /* token index after the match */
	uint32_t fail_pos;       /* the furthest failure position after the call */
	uint64_t n_added;
	struct dw_tp_att *names; /* at = offset from the start of the addition */
	uint8_t n_names;
	bool done;
};

enum dw_tp_memo_kind { DW_TPM_COND, DW_TPM_TERM, DW_TPM_AGG, DW_TPM_CALL, DW_TPM__COUNT };

struct dw_tp {
	struct dw_arena *a;          /* the AST's arena */
	struct dw_arena scratch;     /* tokens, memo, tracking, lists being built */
	struct dw_diags *diags;
	const char *file;
	const char *src;             /* the whole source (len bytes); the block is [off, end) */
	size_t len;
	uint32_t off, end;
	enum dw_temporal_mode mode;
	const struct dw_str *params;
	uint32_t n_params;

	struct dw_token *tok;        /* tok[n_tok - 1] is DW_T_EOF */
	uint32_t n_tok;
	uint32_t i;                  /* the current token */
	int depth;
	int fatal;                   /* 0, -ENOMEM, or -EINVAL (nesting): stop everything */
	uint32_t fatal_tok;

	/* pest's failure tracking: the furthest token a rule failed at, how many
	 * rule failures pest would have listed there (n_att), and the records */
	uint32_t att_pos;
	uint64_t n_att;
	struct dw_tp_att *att;       /* DW_TP_ATT_MAX of them, allocated with the tokens */
	uint32_t n_rec;

	struct dw_tp_memo *memo[DW_TPM__COUNT];
};

static bool dw_tp_oom(struct dw_tp *p)
{
	if (p->fatal == 0)
		p->fatal = -ENOMEM;
	return false;
}

static const struct dw_token *dw_tp_cur(const struct dw_tp *p)
{
	return &p->tok[p->i];
}

static struct dw_str dw_tp_text(const struct dw_tp *p, uint32_t k)
{
	return dw_str_make(p->src + p->tok[k].off, p->tok[k].end - p->tok[k].off);
}

static bool dw_tp_is(const struct dw_tp *p, enum dw_tok kind)
{
	return p->tok[p->i].kind == kind;
}

static bool dw_tp_is_word(const struct dw_tp *p, const char *word)
{
	return dw_tp_is(p, DW_T_IDENT) && dw_str_eq_c(dw_tp_text(p, p->i), word);
}

/* Literals of the grammar ("(", "::", "since", …) are not rules: pest does not
 * track their failures, and neither do these. */
static bool dw_tp_eat(struct dw_tp *p, enum dw_tok kind)
{
	if (!dw_tp_is(p, kind))
		return false;
	p->i++;
	return true;
}

static bool dw_tp_eat_word(struct dw_tp *p, const char *word)
{
	if (!dw_tp_is_word(p, word))
		return false;
	p->i++;
	return true;
}

/* Span helpers: the bytes of tokens [start, p->i). */
static uint32_t dw_tp_off(const struct dw_tp *p, uint32_t start)
{
	return p->tok[start].off;
}

static uint32_t dw_tp_end(const struct dw_tp *p)
{
	return p->i > 0 ? p->tok[p->i - 1].end : p->tok[0].off;
}

/* The text of tokens [from, to) without what lies between them: `Box :: Action`
 * is stored as "Box::Action".  A view into the source when the tokens touch. */
static struct dw_str dw_tp_join(struct dw_tp *p, uint32_t from, uint32_t to)
{
	size_t n = 0;
	bool touching = true;
	char *s;

	if (from >= to)
		return dw_str_make(NULL, 0);
	for (uint32_t k = from; k < to; k++) {
		n += p->tok[k].end - p->tok[k].off;
		if (k + 1 < to && p->tok[k].end != p->tok[k + 1].off)
			touching = false;
	}
	if (touching)
		return dw_str_make(p->src + p->tok[from].off, n);
	s = dw_arena_alloc(p->a, n, 1);
	if (s == NULL) {
		dw_tp_oom(p);
		return dw_str_make(NULL, 0);
	}
	n = 0;
	for (uint32_t k = from; k < to; k++) {
		memcpy(s + n, p->src + p->tok[k].off, p->tok[k].end - p->tok[k].off);
		n += p->tok[k].end - p->tok[k].off;
	}
	return dw_str_make(s, n);
}

/* -- failure tracking (pest's ParserState::track) -- */

struct dw_tp_track {
	uint32_t pos;     /* the rule's start token */
	uint64_t prev;    /* attempts recorded at pos when it started */
};

static uint64_t dw_tp_attempts_at(const struct dw_tp *p, uint32_t pos)
{
	return p->att_pos == pos ? p->n_att : 0;
}

static struct dw_tp_track dw_tp_begin(const struct dw_tp *p)
{
	struct dw_tp_track t = { p->i, dw_tp_attempts_at(p, p->i) };
	return t;
}

/* Counts saturate: only pathological inputs (where the reference parser would
 * run for ages) come near, and then only the message's precision suffers. */
static uint64_t dw_tp_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX / 2 - b ? UINT64_MAX / 2 : a + b;
}

/* Record `rule` as attempt number n_att + at. */
static void dw_tp_record(struct dw_tp *p, uint8_t rule, uint64_t at)
{
	if (p->n_rec < DW_TP_ATT_MAX) {
		p->att[p->n_rec].at = at;
		p->att[p->n_rec].rule = rule;
		p->n_rec++;
	}
}

/* Drop the attempts from index k on. */
static void dw_tp_truncate(struct dw_tp *p, uint64_t k)
{
	while (p->n_rec > 0 && p->att[p->n_rec - 1].at >= k)
		p->n_rec--;
	p->n_att = k;
}

/* The rule that began at t failed.  Like pest: a rule that failed further on
 * records nothing here; one that failed where it began replaces what its
 * children recorded there with itself, unless they recorded exactly one
 * attempt (more precise than the rule's own name). */
static void dw_tp_failed(struct dw_tp *p, struct dw_tp_track t, enum dw_tp_rule rule)
{
	uint64_t cur = dw_tp_attempts_at(p, t.pos);

	if (p->fatal != 0)
		return;
	if (cur > t.prev && cur - t.prev == 1)
		return;
	if (t.pos == p->att_pos) {
		dw_tp_truncate(p, t.prev);
	} else if (t.pos > p->att_pos) {
		p->att_pos = t.pos;
		dw_tp_truncate(p, 0);
	} else {
		return;
	}
	dw_tp_record(p, (uint8_t)rule, p->n_att);
	p->n_att = dw_tp_sat_add(p->n_att, 1);
}

/* -- memoization -- */

static void *dw_tp_replay(struct dw_tp *p, const struct dw_tp_memo *m)
{
	if (m->n_added != 0) {
		if (m->fail_pos > p->att_pos) {
			p->att_pos = m->fail_pos;
			dw_tp_truncate(p, 0);
		}
		if (m->fail_pos == p->att_pos) {
			for (uint8_t k = 0; k < m->n_names; k++)
				dw_tp_record(p, m->names[k].rule, dw_tp_sat_add(p->n_att, m->names[k].at));
			p->n_att = dw_tp_sat_add(p->n_att, m->n_added);
		}
	}
	if (m->res != NULL)
		p->i = m->end;
	return m->res;
}

/* Record the outcome of a rule that started with the tracking at (att0, n0).
 * The furthest failure position only grows, and a rule only truncates what
 * it added itself, so the call's effect is the tail of the list from n0 (all
 * of it when the position moved).  Only the first occurrence of each rule in
 * that tail is kept: truncations and memo entries start at rule boundaries,
 * never inside a call's tail, so nothing can observe the later ones — and
 * keeping them would let replays of replays grow the list exponentially. */
static void *dw_tp_memoize(struct dw_tp *p, struct dw_tp_memo *m, uint32_t att0, uint64_t n0,
			   void *res)
{
	uint64_t base;
	uint32_t first;
	bool seen[DW_TPR__COUNT] = { false };
	struct dw_tp_att names[DW_TPR__COUNT];
	uint8_t n = 0;

	if (p->fatal != 0)
		return NULL;
	base = p->att_pos == att0 ? (n0 < p->n_att ? n0 : p->n_att) : 0;
	for (first = p->n_rec; first > 0 && p->att[first - 1].at >= base; first--)
		;
	for (uint32_t k = first; k < p->n_rec; k++) {
		if (seen[p->att[k].rule])
			continue;
		seen[p->att[k].rule] = true;
		names[n].rule = p->att[k].rule;
		names[n].at = p->att[k].at - base;
		n++;
	}
	m->names = NULL;
	if (n != 0) {
		m->names = DW_NEWN(&p->scratch, struct dw_tp_att, n);
		if (m->names == NULL) {
			dw_tp_oom(p);
			return NULL;
		}
		memcpy(m->names, names, n * sizeof names[0]);
	}
	m->n_names = n;
	m->n_added = p->n_att - base;
	m->res = res;
	m->end = p->i;
	m->fail_pos = p->att_pos;
	m->done = true;
	return res;
}

static bool dw_tp_enter(struct dw_tp *p)
{
	if (p->depth >= DW_TP_MAX_DEPTH) {
		if (p->fatal == 0) {
			p->fatal = -EINVAL;
			p->fatal_tok = p->i;
		}
		return false;
	}
	p->depth++;
	return true;
}

/* -- lists being built: grown in scratch, copied to the AST arena when done -- */

struct dw_tp_vec {
	char *data;
	size_t n, cap;
	size_t size;
};

#define DW_TP_VEC(T) { NULL, 0, 0, sizeof(T) }

static bool dw_tp_vec_push(struct dw_tp *p, struct dw_tp_vec *v, const void *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4;
		char *d = dw_arena_alloc(&p->scratch, cap * v->size, 16);

		if (d == NULL)
			return dw_tp_oom(p);
		if (v->n != 0)
			memcpy(d, v->data, v->n * v->size);
		v->data = d;
		v->cap = cap;
	}
	memcpy(v->data + v->n * v->size, item, v->size);
	v->n++;
	return true;
}

/* Copy the list into the AST arena; NULL for an empty list (or ENOMEM, which
 * sets p->fatal). */
static void *dw_tp_vec_take(struct dw_tp *p, const struct dw_tp_vec *v, size_t align)
{
	void *d;

	if (v->n == 0)
		return NULL;
	d = dw_arena_alloc(p->a, v->n * v->size, align);
	if (d == NULL) {
		dw_tp_oom(p);
		return NULL;
	}
	memcpy(d, v->data, v->n * v->size);
	return d;
}

static struct dw_tnode *dw_tp_node(struct dw_tp *p, enum dw_tnode_kind kind, uint32_t start)
{
	struct dw_tnode *n = DW_NEW(p->a, struct dw_tnode);

	if (n == NULL) {
		dw_tp_oom(p);
		return NULL;
	}
	n->kind = (uint8_t)kind;
	n->off = dw_tp_off(p, start);
	n->end = dw_tp_end(p);
	return n;
}

static struct dw_tterm *dw_tp_term(struct dw_tp *p, enum dw_tterm_kind kind, uint32_t start)
{
	struct dw_tterm *t = DW_NEW(p->a, struct dw_tterm);

	if (t == NULL) {
		dw_tp_oom(p);
		return NULL;
	}
	t->kind = (uint8_t)kind;
	t->off = dw_tp_off(p, start);
	t->end = dw_tp_end(p);
	return t;
}

/* --- 2. one-token rules ----------------------------------------------------------- */

/* A rule matching the current token (or not); pest tracks its failure. */
static bool dw_tp_leaf(struct dw_tp *p, enum dw_tp_rule rule, bool match)
{
	struct dw_tp_track t = dw_tp_begin(p);

	if (match) {
		p->i++;
		return true;
	}
	dw_tp_failed(p, t, rule);
	return false;
}

static bool dw_tp_ident(struct dw_tp *p, struct dw_str *out)
{
	bool m = dw_tp_is(p, DW_T_IDENT);

	if (m)
		*out = dw_tp_text(p, p->i);
	return dw_tp_leaf(p, DW_TPR_IDENT, m);
}

/* Decimal digits of token k as an i64 (negated when neg); false when out of
 * range (then *out is 0; dw_tp_check_ints() reports it after the parse). */
static bool dw_tp_int_value(const struct dw_tp *p, uint32_t k, bool neg, int64_t *out)
{
	uint64_t v = 0;

	*out = 0;
	for (uint32_t j = p->tok[k].off; j < p->tok[k].end; j++) {
		unsigned d = (unsigned)(p->src[j] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return false;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)v;
	}
	return true;
}

/* integer = @{ "-"? ~ ASCII_DIGIT+ }: the lexer splits `-5` in two, so a `-`
 * counts only when the digits touch it. */
static bool dw_tp_integer(struct dw_tp *p, int64_t *out)
{
	const struct dw_token *t = dw_tp_cur(p);
	bool neg = t->kind == DW_T_MINUS && t[1].kind == DW_T_INT && t->end == t[1].off;
	bool m = neg || t->kind == DW_T_INT;

	if (m)
		dw_tp_int_value(p, p->i + (neg ? 1 : 0), neg, out);
	if (!dw_tp_leaf(p, DW_TPR_INTEGER, m))
		return false;
	if (neg)
		p->i++;
	return true;
}

/* The raw text between the quotes: the reference does not decode escapes in
 * temporal strings (docs/policy-reference.md §5, "Temporal string literals"). */
static bool dw_tp_string(struct dw_tp *p, struct dw_str *raw)
{
	bool m = dw_tp_is(p, DW_T_STR);

	if (m) {
		const struct dw_token *t = dw_tp_cur(p);
		*raw = dw_str_make(p->src + t->off + 1, t->end - t->off - 2);
	}
	return dw_tp_leaf(p, DW_TPR_STRING, m);
}

static bool dw_tp_keyword(struct dw_tp *p, enum dw_tp_rule rule, const char *word)
{
	return dw_tp_leaf(p, rule, dw_tp_is_word(p, word));
}

static bool dw_tp_sigil(struct dw_tp *p, enum dw_tp_rule rule, enum dw_tok kind,
			struct dw_str *name)
{
	bool m = dw_tp_is(p, kind);

	if (m) {
		struct dw_str s = dw_tp_text(p, p->i);
		*name = dw_str_make(s.p + 1, s.n - 1);
	}
	return dw_tp_leaf(p, rule, m);
}

static bool dw_tp_param_ref(struct dw_tp *p, struct dw_str *name)
{
	return dw_tp_sigil(p, DW_TPR_PARAM_REF, DW_T_QIDENT, name);
}

static bool dw_tp_binder_ref(struct dw_tp *p, struct dw_str *name)
{
	return dw_tp_sigil(p, DW_TPR_BINDER_REF, DW_T_DIDENT, name);
}

/* scope_root: `principal`/`resource` as a whole word (so `principalId` is a
 * variable: with our tokenizer it is one identifier anyway). */
static bool dw_tp_scope_root(struct dw_tp *p, uint8_t *root)
{
	bool pr = dw_tp_is_word(p, "principal"), rs = dw_tp_is_word(p, "resource");

	if (pr || rs)
		*root = pr ? 'p' : 'r';
	return dw_tp_leaf(p, DW_TPR_SCOPE_ROOT, pr || rs);
}

static bool dw_tp_time_unit(struct dw_tp *p, char *unit)
{
	struct dw_str s = dw_tp_text(p, p->i);
	bool m = dw_tp_is(p, DW_T_IDENT) && s.n == 1 && strchr("smhd", s.p[0]) != NULL;

	if (m)
		*unit = s.p[0];
	return dw_tp_leaf(p, DW_TPR_TIME_UNIT, m);
}

static bool dw_tp_cmp_op(struct dw_tp *p, uint8_t *op)
{
	uint8_t c = 0;

	switch (dw_tp_cur(p)->kind) {
	case DW_T_LE: c = DW_TC_LE; break;
	case DW_T_GE: c = DW_TC_GE; break;
	case DW_T_NE: c = DW_TC_NE; break;
	case DW_T_EQ2: c = DW_TC_EQ; break;
	case DW_T_LT: c = DW_TC_LT; break;
	case DW_T_GT: c = DW_TC_GT; break;
	default: break;
	}
	if (c != 0)
		*op = c;
	return dw_tp_leaf(p, DW_TPR_CMP_OP, c != 0);
}

/* --- 3. binders, windows, predicates ---------------------------------------------- */

/* binder_slot = { param_ref | binder_ref | ident } */
static bool dw_tp_binder_slot(struct dw_tp *p, struct dw_tbinder *b)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t k = p->i;
	struct dw_str s;

	memset(b, 0, sizeof *b);
	if (dw_tp_param_ref(p, &s)) {
		b->sigil = '?';
	} else if (dw_tp_binder_ref(p, &s)) {
		b->sigil = '$';
	} else if (!dw_tp_ident(p, &s)) {
		dw_tp_failed(p, t, DW_TPR_BINDER_SLOT);
		return false;
	}
	b->name = s;
	b->off = p->tok[k].off;
	b->end = p->tok[k].end;
	return true;
}

/* type_expr = { ident ~ ("::" ~ ident)* } */
static bool dw_tp_type_expr(struct dw_tp *p, struct dw_str *path)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_str s;

	if (!dw_tp_ident(p, &s)) {
		dw_tp_failed(p, t, DW_TPR_TYPE_EXPR);
		return false;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COLON2) && dw_tp_ident(p, &s))
			continue;
		p->i = save;
		break;
	}
	*path = dw_tp_join(p, start, p->i);
	return true;
}

/* typed_binder = { "(" ~ binder_slot ~ ":" ~ type_expr ~ ")" } */
static bool dw_tp_typed_binder(struct dw_tp *p, struct dw_tbinder *b)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_str type;

	if (dw_tp_eat(p, DW_T_LPAREN) && dw_tp_binder_slot(p, b) && dw_tp_eat(p, DW_T_COLON) &&
	    dw_tp_type_expr(p, &type) && dw_tp_eat(p, DW_T_RPAREN)) {
		b->type = type;
		return true;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_TYPED_BINDER);
	return false;
}

/* for_binders = { "for" ~ typed_binder ~ ("," ~ typed_binder)* ~ "." } */
static bool dw_tp_for_binders(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_tbinder b;

	if (!dw_tp_eat_word(p, "for") || !dw_tp_typed_binder(p, &b) || !dw_tp_vec_push(p, v, &b))
		goto fail;
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COMMA) && dw_tp_typed_binder(p, &b)) {
			if (!dw_tp_vec_push(p, v, &b))
				goto fail;
			continue;
		}
		p->i = save;
		break;
	}
	if (dw_tp_eat(p, DW_T_DOT))
		return true;
fail:
	p->i = start;
	v->n = 0;
	dw_tp_failed(p, t, DW_TPR_FOR_BINDERS);
	return false;
}

static void dw_tp_window_set(struct dw_window *w, int64_t amount, char unit)
{
	int64_t mult = unit == 'd' ? 86400 : unit == 'h' ? 3600 : unit == 'm' ? 60 : 1;

	w->is_param = false;
	w->amount = amount;
	w->unit = unit;
	if (__builtin_mul_overflow(amount, mult, &w->seconds))
		w->seconds = amount < 0 ? INT64_MIN : INT64_MAX;
}

/* within_payload = { param_ref | (integer ~ time_unit) } */
static bool dw_tp_within_payload(struct dw_tp *p, struct dw_window *w)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	int64_t amount;
	char unit;

	if (dw_tp_param_ref(p, &w->param)) {
		w->is_param = true;
		return true;
	}
	if (dw_tp_integer(p, &amount) && dw_tp_time_unit(p, &unit)) {
		dw_tp_window_set(w, amount, unit);
		return true;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_WITHIN_PAYLOAD);
	return false;
}

/* within = { "within" ~ within_payload }; the span covers the keyword. */
static bool dw_tp_within(struct dw_tp *p, struct dw_window *w)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;

	memset(w, 0, sizeof *w);
	if (dw_tp_eat_word(p, "within") && dw_tp_within_payload(p, w)) {
		w->off = dw_tp_off(p, start);
		w->end = dw_tp_end(p);
		return true;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_WITHIN);
	return false;
}

/* interval_lit = { integer ~ time_unit }: a window argument of a macro call. */
static bool dw_tp_interval_lit(struct dw_tp *p, struct dw_window *w)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	int64_t amount;
	char unit;

	memset(w, 0, sizeof *w);
	if (dw_tp_integer(p, &amount) && dw_tp_time_unit(p, &unit)) {
		dw_tp_window_set(w, amount, unit);
		w->off = dw_tp_off(p, start);
		w->end = dw_tp_end(p);
		return true;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_INTERVAL_LIT);
	return false;
}

static struct dw_tterm *dw_tp_rule_term(struct dw_tp *p);
static struct dw_tnode *dw_tp_condition(struct dw_tp *p);

/* field_path = { ident ~ ("." ~ ident)* } */
static bool dw_tp_field_path(struct dw_tp *p, struct dw_str *path)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_str s;

	if (!dw_tp_ident(p, &s)) {
		dw_tp_failed(p, t, DW_TPR_FIELD_PATH);
		return false;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_DOT) && dw_tp_ident(p, &s))
			continue;
		p->i = save;
		break;
	}
	*path = dw_tp_join(p, start, p->i);
	return true;
}

/* named_arg = { field_path ~ (":" ~ term | "like" ~ string) }.  The `like`
 * form is a cairn extension (path prefixes: `input.path like "~/data/…"`). */
static bool dw_tp_named_arg(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, pat;
	struct dw_tfield f;
	struct dw_tterm *term;

	memset(&f, 0, sizeof f);
	if (dw_tp_field_path(p, &f.path)) {
		if (dw_tp_eat(p, DW_T_COLON) && (term = dw_tp_rule_term(p)) != NULL) {
			f.term = *term;
			f.off = dw_tp_off(p, start);
			f.end = dw_tp_end(p);
			return dw_tp_vec_push(p, v, &f);
		}
		if (p->fatal == 0 && dw_tp_eat_word(p, "like")) {
			pat = p->i;
			if (dw_tp_string(p, &f.term.str)) {
				uint32_t bo, be;
				/* decoded once, here; a bad escape leaves pat NULL and
				 * is refused, with its position, by tcheck */
				if (dw_pattern_from_raw(p->a, f.term.str.p, f.term.str.n, &f.pat, &bo,
							&be) == -ENOMEM) {
					dw_tp_oom(p);
					return false;
				}
				f.like = true;
				f.term.kind = DW_TT_STR;
				f.term.off = dw_tp_off(p, pat);
				f.term.end = dw_tp_end(p);
				f.off = dw_tp_off(p, start);
				f.end = dw_tp_end(p);
				return dw_tp_vec_push(p, v, &f);
			}
		}
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_NAMED_ARG);
	return false;
}

/* named_arg_list = { named_arg ~ ("," ~ named_arg)* }: no trailing comma (the
 * `,` is left unconsumed and the enclosing `}` fails on it). */
static bool dw_tp_named_arg_list(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	size_t n0 = v->n;
	uint32_t save;

	if (!dw_tp_named_arg(p, v)) {
		v->n = n0;
		dw_tp_failed(p, t, DW_TPR_NAMED_ARG_LIST);
		return false;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COMMA) && dw_tp_named_arg(p, v))
			continue;
		p->i = save;
		break;
	}
	return true;
}

/* field_block = { "{" ~ named_arg_list? ~ "}" }: a refinement. */
static bool dw_tp_field_block(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	size_t n0 = v->n;

	if (dw_tp_eat(p, DW_T_LBRACE)) {
		dw_tp_named_arg_list(p, v);
		if (dw_tp_eat(p, DW_T_RBRACE))
			return true;
	}
	p->i = start;
	v->n = n0;
	dw_tp_failed(p, t, DW_TPR_FIELD_BLOCK);
	return false;
}

/* qualified_action = { ident ~ ("::" ~ ident)* ~ "::" ~ string } */
static bool dw_tp_qualified_action(struct dw_tp *p, struct dw_tpred *pr)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save, ns_end;
	struct dw_str s;

	if (!dw_tp_ident(p, &s))
		goto fail;
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COLON2) && dw_tp_ident(p, &s))
			continue;
		p->i = save;
		break;
	}
	ns_end = p->i;
	if (dw_tp_eat(p, DW_T_COLON2) && dw_tp_string(p, &pr->action)) {
		pr->ns = dw_tp_join(p, start, ns_end);
		return true;
	}
fail:
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_QUALIFIED_ACTION);
	return false;
}

/* event_kind = { ident } */
static bool dw_tp_event_kind(struct dw_tp *p, struct dw_str *kind)
{
	struct dw_tp_track t = dw_tp_begin(p);

	if (dw_tp_ident(p, kind))
		return true;
	dw_tp_failed(p, t, DW_TPR_EVENT_KIND);
	return false;
}

/* predicate = { qualified_action ~ "::" ~ event_kind ~ "{" ~ named_arg_list? ~ "}" } */
static bool dw_tp_predicate(struct dw_tp *p, struct dw_tpred *pr, struct dw_tp_vec *fields)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;

	if (dw_tp_qualified_action(p, pr) && dw_tp_eat(p, DW_T_COLON2) &&
	    dw_tp_event_kind(p, &pr->kind) && dw_tp_eat(p, DW_T_LBRACE)) {
		dw_tp_named_arg_list(p, fields);
		if (dw_tp_eat(p, DW_T_RBRACE))
			return true;
	}
	p->i = start;
	fields->n = 0;
	dw_tp_failed(p, t, DW_TPR_PREDICATE);
	return false;
}

/* sigil_cond = { param_ref }: a macro parameter standing for a condition. */
static bool dw_tp_sigil_cond(struct dw_tp *p, struct dw_str *name)
{
	struct dw_tp_track t = dw_tp_begin(p);

	if (dw_tp_param_ref(p, name))
		return true;
	dw_tp_failed(p, t, DW_TPR_SIGIL_COND);
	return false;
}

/* refinable = { (predicate | sigil_cond) ~ field_block* }.  Refinements are
 * appended to the predicate's fields (`P{a:1}{b:2}` ≡ `P{a:1, b:2}`); a bare
 * `?s` (or `?s{}`) is a PARAM node, `?s{…}` a PRED with param set. */
static struct dw_tnode *dw_tp_refinable(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tp_vec fields = DW_TP_VEC(struct dw_tfield);
	struct dw_tpred pr;
	struct dw_str param = { NULL, 0 };
	bool is_param = false;
	struct dw_tnode *n;

	memset(&pr, 0, sizeof pr);
	if (!dw_tp_predicate(p, &pr, &fields)) {
		memset(&pr, 0, sizeof pr);
		if (!dw_tp_sigil_cond(p, &param)) {
			dw_tp_failed(p, t, DW_TPR_REFINABLE);
			return NULL;
		}
		is_param = true;
	}
	while (dw_tp_field_block(p, &fields))
		;
	if (p->fatal != 0)
		return NULL;
	if (is_param && fields.n == 0) {
		n = dw_tp_node(p, DW_TN_PARAM, start);
		if (n != NULL)
			n->param = param;
		return n;
	}
	n = dw_tp_node(p, DW_TN_PRED, start);
	if (n == NULL)
		return NULL;
	n->pred = DW_NEW(p->a, struct dw_tpred);
	if (n->pred == NULL) {
		dw_tp_oom(p);
		return NULL;
	}
	*n->pred = pr;
	n->pred->param = param;
	n->pred->n_fields = (uint32_t)fields.n;
	n->pred->fields = dw_tp_vec_take(p, &fields, _Alignof(struct dw_tfield));
	return p->fatal != 0 ? NULL : n;
}

/* --- 4. terms, aggregates, macro calls ---------------------------------------------- */

/* call_arg = { interval_lit | condition | term }: `1h` first, so a window
 * argument is never read as a term. */
static bool dw_tp_call_arg(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_targ arg;

	memset(&arg, 0, sizeof arg);
	if (dw_tp_interval_lit(p, &arg.window))
		arg.kind = DW_TA_WINDOW;
	else if ((arg.cond = dw_tp_condition(p)) != NULL)
		arg.kind = DW_TA_COND;
	else if ((arg.term = dw_tp_rule_term(p)) != NULL)
		arg.kind = DW_TA_TERM;
	else {
		dw_tp_failed(p, t, DW_TPR_CALL_ARG);
		return false;
	}
	arg.off = dw_tp_off(p, start);
	arg.end = dw_tp_end(p);
	return dw_tp_vec_push(p, v, &arg);
}

/* call_arg_list = { call_arg ~ ("," ~ call_arg)* } */
static bool dw_tp_call_arg_list(struct dw_tp *p, struct dw_tp_vec *v)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t save;

	if (!dw_tp_call_arg(p, v)) {
		v->n = 0;
		dw_tp_failed(p, t, DW_TPR_CALL_ARG_LIST);
		return false;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COMMA) && dw_tp_call_arg(p, v))
			continue;
		p->i = save;
		break;
	}
	return true;
}

/* call = { ident ~ "(" ~ call_arg_list? ~ ")" }: a macro call (memoized). */
static struct dw_tcall *dw_tp_call_body(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tp_vec args = DW_TP_VEC(struct dw_targ);
	struct dw_str name;
	struct dw_tcall *c;

	if (dw_tp_ident(p, &name) && dw_tp_eat(p, DW_T_LPAREN)) {
		dw_tp_call_arg_list(p, &args);
		if (dw_tp_eat(p, DW_T_RPAREN)) {
			c = DW_NEW(p->a, struct dw_tcall);
			if (c == NULL) {
				dw_tp_oom(p);
				return NULL;
			}
			c->name = name;
			c->n_args = (uint32_t)args.n;
			c->args = dw_tp_vec_take(p, &args, _Alignof(struct dw_targ));
			return p->fatal != 0 ? NULL : c;
		}
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_CALL);
	return NULL;
}

static struct dw_tcall *dw_tp_call(struct dw_tp *p)
{
	struct dw_tp_memo *m = &p->memo[DW_TPM_CALL][p->i];
	uint32_t att0 = p->att_pos;
	uint64_t n0 = p->n_att;

	if (p->fatal != 0)
		return NULL;
	if (m->done)
		return dw_tp_replay(p, m);
	return dw_tp_memoize(p, m, att0, n0, dw_tp_call_body(p));
}

/* sum_expr = { "sum" ~ binder_slot ~ for_binders ~ "where" ~ condition }
 * count_expr = { "count" ~ for_binders ~ "where" ~ condition }
 * The `where` body is a whole condition: greedy to the right. */
static struct dw_tagg *dw_tp_agg(struct dw_tp *p, bool is_sum)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tp_vec binders = DW_TP_VEC(struct dw_tbinder);
	struct dw_tbinder summand;
	struct dw_tnode *where;
	struct dw_tagg *g;

	memset(&summand, 0, sizeof summand);
	if (dw_tp_eat_word(p, is_sum ? "sum" : "count") &&
	    (!is_sum || dw_tp_binder_slot(p, &summand)) && dw_tp_for_binders(p, &binders) &&
	    dw_tp_eat_word(p, "where") && (where = dw_tp_condition(p)) != NULL) {
		g = DW_NEW(p->a, struct dw_tagg);
		if (g == NULL) {
			dw_tp_oom(p);
			return NULL;
		}
		g->is_sum = is_sum;
		g->summand = summand;
		g->n_for = (uint32_t)binders.n;
		g->for_binders = dw_tp_vec_take(p, &binders, _Alignof(struct dw_tbinder));
		g->where = where;
		return p->fatal != 0 ? NULL : g;
	}
	p->i = start;
	dw_tp_failed(p, t, is_sum ? DW_TPR_SUM_EXPR : DW_TPR_COUNT_EXPR);
	return NULL;
}

/* agg_expr = { sum_expr | count_expr | call } (memoized): an AGG or CALL term. */
static struct dw_tterm *dw_tp_agg_expr_body(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tagg *g;
	struct dw_tcall *c;
	struct dw_tterm *term;

	if ((g = dw_tp_agg(p, true)) != NULL || (g = dw_tp_agg(p, false)) != NULL) {
		term = dw_tp_term(p, DW_TT_AGG, start);
		if (term != NULL)
			term->agg = g;
		return term;
	}
	if ((c = dw_tp_call(p)) != NULL) {
		term = dw_tp_term(p, DW_TT_CALL, start);
		if (term != NULL)
			term->call = c;
		return term;
	}
	dw_tp_failed(p, t, DW_TPR_AGG_EXPR);
	return NULL;
}

static struct dw_tterm *dw_tp_agg_expr(struct dw_tp *p)
{
	struct dw_tp_memo *m = &p->memo[DW_TPM_AGG][p->i];
	uint32_t att0 = p->att_pos;
	uint64_t n0 = p->n_att;

	if (p->fatal != 0)
		return NULL;
	if (m->done)
		return dw_tp_replay(p, m);
	return dw_tp_memoize(p, m, att0, n0, dw_tp_agg_expr_body(p));
}

/* entity = { ident ~ ("::" ~ ident)* ~ "::" ~ string } */
static struct dw_tterm *dw_tp_entity(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save, type_end;
	struct dw_str s, id;
	struct dw_tterm *term;

	if (!dw_tp_ident(p, &s))
		goto fail;
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_COLON2) && dw_tp_ident(p, &s))
			continue;
		p->i = save;
		break;
	}
	type_end = p->i;
	if (dw_tp_eat(p, DW_T_COLON2) && dw_tp_string(p, &id)) {
		term = dw_tp_term(p, DW_TT_ENTITY, start);
		if (term != NULL) {
			term->path = dw_tp_join(p, start, type_end);
			term->str = id;
		}
		return p->fatal != 0 ? NULL : term;
	}
fail:
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_ENTITY);
	return NULL;
}

/* decimal_lit = { "decimal" ~ "(" ~ string ~ ")" }: the text is kept as is. */
static struct dw_tterm *dw_tp_decimal_lit(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_str s;
	struct dw_tterm *term;

	if (dw_tp_eat_word(p, "decimal") && dw_tp_eat(p, DW_T_LPAREN) && dw_tp_string(p, &s) &&
	    dw_tp_eat(p, DW_T_RPAREN)) {
		term = dw_tp_term(p, DW_TT_DECIMAL, start);
		if (term != NULL)
			term->str = s;
		return term;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_DECIMAL_LIT);
	return NULL;
}

/* paren_agg = { "(" ~ agg_expr ~ ")" }: the parentheses fence the greedy `where`
 * off a following `== n`; the aggregate's own term (and span) is returned. */
static struct dw_tterm *dw_tp_paren_agg(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tterm *term;

	if (dw_tp_eat(p, DW_T_LPAREN) && (term = dw_tp_agg_expr(p)) != NULL &&
	    dw_tp_eat(p, DW_T_RPAREN))
		return term;
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_PAREN_AGG);
	return NULL;
}

/* array = { "[" ~ (term ~ ("," ~ term)*)? ~ "]" } */
static struct dw_tterm *dw_tp_array(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_tp_vec items = DW_TP_VEC(struct dw_tterm);
	struct dw_tterm *item, *term;

	if (!dw_tp_eat(p, DW_T_LBRACKET))
		goto fail;
	if ((item = dw_tp_rule_term(p)) != NULL) {
		if (!dw_tp_vec_push(p, &items, item))
			goto fail;
		for (;;) {
			save = p->i;
			if (dw_tp_eat(p, DW_T_COMMA) && (item = dw_tp_rule_term(p)) != NULL) {
				if (!dw_tp_vec_push(p, &items, item))
					goto fail;
				continue;
			}
			p->i = save;
			break;
		}
	}
	if (p->fatal == 0 && dw_tp_eat(p, DW_T_RBRACKET)) {
		term = dw_tp_term(p, DW_TT_ARRAY, start);
		if (term == NULL)
			return NULL;
		term->n_items = (uint32_t)items.n;
		term->items = dw_tp_vec_take(p, &items, _Alignof(struct dw_tterm));
		return p->fatal != 0 ? NULL : term;
	}
fail:
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_ARRAY);
	return NULL;
}

/* context_field = { "context" ~ ("." ~ ident)+ } */
static struct dw_tterm *dw_tp_context_field(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save, n = 0;
	struct dw_str s;
	struct dw_tterm *term;

	if (dw_tp_eat_word(p, "context")) {
		for (;;) {
			save = p->i;
			if (dw_tp_eat(p, DW_T_DOT) && dw_tp_ident(p, &s)) {
				n++;
				continue;
			}
			p->i = save;
			break;
		}
		if (n > 0) {
			term = dw_tp_term(p, DW_TT_CONTEXT, start);
			if (term != NULL)
				term->path = dw_tp_join(p, start + 2, p->i);
			return p->fatal != 0 ? NULL : term;
		}
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_CONTEXT_FIELD);
	return NULL;
}

/* scope_field = { scope_root ~ ("." ~ ident)* } */
static struct dw_tterm *dw_tp_scope_field(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	uint8_t root;
	struct dw_str s;
	struct dw_tterm *term;

	if (!dw_tp_scope_root(p, &root)) {
		dw_tp_failed(p, t, DW_TPR_SCOPE_FIELD);
		return NULL;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_DOT) && dw_tp_ident(p, &s))
			continue;
		p->i = save;
		break;
	}
	term = dw_tp_term(p, DW_TT_SCOPE, start);
	if (term != NULL) {
		term->root = root;
		term->path = dw_tp_join(p, start + 2, p->i);
	}
	return p->fatal != 0 ? NULL : term;
}

/* term = { entity | decimal_lit | paren_agg | agg_expr | integer | string
 *        | kw_true | kw_false | array | context_field | scope_field | wildcard
 *        | param_ref | binder_ref | ident }
 * The order is the reference's: `decimal("1")` before a call named decimal,
 * `count …` before an identifier `count`, `_` an identifier read as wildcard. */
static struct dw_tterm *dw_tp_term_body(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tterm *term;
	struct dw_str s;
	int64_t v;
	enum dw_tterm_kind kind;

	if ((term = dw_tp_entity(p)) != NULL || (term = dw_tp_decimal_lit(p)) != NULL ||
	    (term = dw_tp_paren_agg(p)) != NULL || (term = dw_tp_agg_expr(p)) != NULL)
		return term;
	if (p->fatal != 0)
		return NULL;
	if (dw_tp_integer(p, &v)) {
		if ((term = dw_tp_term(p, DW_TT_INT, start)) != NULL)
			term->i = v;
		return term;
	}
	if (dw_tp_string(p, &s)) {
		if ((term = dw_tp_term(p, DW_TT_STR, start)) != NULL)
			term->str = s;
		return term;
	}
	if (dw_tp_keyword(p, DW_TPR_KW_TRUE, "true") || dw_tp_keyword(p, DW_TPR_KW_FALSE, "false")) {
		if ((term = dw_tp_term(p, DW_TT_BOOL, start)) != NULL)
			term->b = p->src[p->tok[start].off] == 't';
		return term;
	}
	if ((term = dw_tp_array(p)) != NULL || (term = dw_tp_context_field(p)) != NULL ||
	    (term = dw_tp_scope_field(p)) != NULL)
		return term;
	if (p->fatal != 0)
		return NULL;
	if (dw_tp_leaf(p, DW_TPR_WILDCARD, dw_tp_is(p, DW_T_STAR)))
		return dw_tp_term(p, DW_TT_WILDCARD, start);
	if (dw_tp_param_ref(p, &s))
		kind = DW_TT_PARAM;
	else if (dw_tp_binder_ref(p, &s))
		kind = DW_TT_BINDER;
	else if (dw_tp_ident(p, &s))
		kind = dw_str_eq_c(s, "_") ? DW_TT_WILDCARD : DW_TT_VAR;
	else {
		dw_tp_failed(p, t, DW_TPR_TERM);
		return NULL;
	}
	if ((term = dw_tp_term(p, kind, start)) != NULL && kind != DW_TT_WILDCARD)
		term->str = s;
	return term;
}

static struct dw_tterm *dw_tp_rule_term(struct dw_tp *p)
{
	struct dw_tp_memo *m = &p->memo[DW_TPM_TERM][p->i];
	uint32_t att0 = p->att_pos;
	uint64_t n0 = p->n_att;
	struct dw_tterm *t;

	if (p->fatal != 0)
		return NULL;
	if (m->done)
		return dw_tp_replay(p, m);
	if (!dw_tp_enter(p))
		return NULL;
	t = dw_tp_term_body(p);
	p->depth--;
	return dw_tp_memoize(p, m, att0, n0, t);
}

/* --- 5. conditions ------------------------------------------------------------------ */

/* comparison = { term ~ cmp_op ~ term } */
static struct dw_tnode *dw_tp_comparison(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tterm *lhs, *rhs;
	uint8_t op;
	struct dw_tnode *n;

	if ((lhs = dw_tp_rule_term(p)) != NULL && dw_tp_cmp_op(p, &op) &&
	    (rhs = dw_tp_rule_term(p)) != NULL) {
		n = dw_tp_node(p, DW_TN_CMP, start);
		if (n != NULL) {
			n->cmp = op;
			n->lhs = lhs;
			n->rhs = rhs;
		}
		return n;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_COMPARISON);
	return NULL;
}

static struct dw_tnode *dw_tp_call_node(struct dw_tp *p)
{
	uint32_t start = p->i;
	struct dw_tcall *c = dw_tp_call(p);
	struct dw_tnode *n;

	if (c == NULL)
		return NULL;
	n = dw_tp_node(p, DW_TN_CALL, start);
	if (n != NULL)
		n->call = c;
	return n;
}

/* tp_op = { "tp" ~ "(" ~ binder_slot ~ ")" }: `tp` alone is an identifier. */
static struct dw_tnode *dw_tp_tp_op(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tbinder b;
	struct dw_tnode *n;

	if (dw_tp_eat_word(p, "tp") && dw_tp_eat(p, DW_T_LPAREN) && dw_tp_binder_slot(p, &b) &&
	    dw_tp_eat(p, DW_T_RPAREN)) {
		n = dw_tp_node(p, DW_TN_TP, start);
		if (n != NULL)
			n->binder = b;
		return n;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_TP_OP);
	return NULL;
}

/* atom = { "(" ~ condition ~ ")" | tp_op | call | refinable | comparison }:
 * the right of since, formerly and previous (a conjunction needs parentheses). */
static struct dw_tnode *dw_tp_atom(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tnode *n;

	if (dw_tp_eat(p, DW_T_LPAREN)) {
		if ((n = dw_tp_condition(p)) != NULL && dw_tp_eat(p, DW_T_RPAREN))
			return n;
		p->i = start;
	}
	if ((n = dw_tp_tp_op(p)) != NULL || (n = dw_tp_call_node(p)) != NULL ||
	    (n = dw_tp_refinable(p)) != NULL || (n = dw_tp_comparison(p)) != NULL)
		return n;
	dw_tp_failed(p, t, DW_TPR_ATOM);
	return NULL;
}

/* once_op = { "formerly" ~ within ~ atom }, previous_op = { "previous" ~ … } */
static struct dw_tnode *dw_tp_past_op(struct dw_tp *p, bool previous)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_window w;
	struct dw_tnode *body, *n;

	if (dw_tp_eat_word(p, previous ? "previous" : "formerly") && dw_tp_within(p, &w) &&
	    (body = dw_tp_atom(p)) != NULL) {
		n = dw_tp_node(p, previous ? DW_TN_PREVIOUS : DW_TN_FORMERLY, start);
		if (n != NULL) {
			n->window = w;
			n->a = body;
		}
		return n;
	}
	p->i = start;
	dw_tp_failed(p, t, previous ? DW_TPR_PREVIOUS_OP : DW_TPR_ONCE_OP);
	return NULL;
}

/* temporal_op = { once_op | previous_op } */
static struct dw_tnode *dw_tp_temporal_op(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	struct dw_tnode *n;

	if ((n = dw_tp_past_op(p, false)) != NULL || (n = dw_tp_past_op(p, true)) != NULL)
		return n;
	dw_tp_failed(p, t, DW_TPR_TEMPORAL_OP);
	return NULL;
}

/* exists_op = { "exists" ~ typed_binder ~ "." ~ condition }: the body is greedy. */
static struct dw_tnode *dw_tp_exists_op(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tbinder b;
	struct dw_tnode *body, *n;

	if (dw_tp_eat_word(p, "exists") && dw_tp_typed_binder(p, &b) && dw_tp_eat(p, DW_T_DOT) &&
	    (body = dw_tp_condition(p)) != NULL) {
		n = dw_tp_node(p, DW_TN_EXISTS, start);
		if (n != NULL) {
			n->binder = b;
			n->a = body;
		}
		return n;
	}
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_EXISTS_OP);
	return NULL;
}

/* parenthesized = { "(" ~ condition ~ ")" }: the inner condition itself. */
static struct dw_tnode *dw_tp_parenthesized(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i;
	struct dw_tnode *n;

	if (dw_tp_eat(p, DW_T_LPAREN) && (n = dw_tp_condition(p)) != NULL &&
	    dw_tp_eat(p, DW_T_RPAREN))
		return n;
	p->i = start;
	dw_tp_failed(p, t, DW_TPR_PARENTHESIZED);
	return NULL;
}

/* conjunct = { comparison | parenthesized | temporal_op | exists_op | tp_op
 *            | call | refinable }
 * comparison first, so `(count …) == n` is a comparison, not a parenthesized
 * condition followed by a stray `== n`. */
static struct dw_tnode *dw_tp_conjunct(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	struct dw_tnode *n;

	if ((n = dw_tp_comparison(p)) != NULL || (n = dw_tp_parenthesized(p)) != NULL ||
	    (n = dw_tp_temporal_op(p)) != NULL || (n = dw_tp_exists_op(p)) != NULL ||
	    (n = dw_tp_tp_op(p)) != NULL || (n = dw_tp_call_node(p)) != NULL ||
	    (n = dw_tp_refinable(p)) != NULL)
		return n;
	dw_tp_failed(p, t, DW_TPR_CONJUNCT);
	return NULL;
}

/* neg_conjunct = { bang* ~ conjunct }: each `!` wraps a NOT (tightest). */
static struct dw_tnode *dw_tp_neg_conjunct(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, bangs = 0;
	struct dw_tnode *n, *not;

	while (dw_tp_leaf(p, DW_TPR_BANG, dw_tp_is(p, DW_T_BANG)))
		bangs++;
	if ((n = dw_tp_conjunct(p)) == NULL) {
		p->i = start;
		dw_tp_failed(p, t, DW_TPR_NEG_CONJUNCT);
		return NULL;
	}
	/* the `!`s are tokens start .. start + bangs - 1; the innermost is last */
	while (bangs > 0) {
		bangs--;
		not = dw_tp_node(p, DW_TN_NOT, start + bangs);
		if (not == NULL)
			return NULL;
		not->a = n;
		n = not;
	}
	return n;
}

/* conjunct_or_since = { neg_conjunct ~ ("since" ~ within ~ atom)? } */
static struct dw_tnode *dw_tp_conj_or_since(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_tnode *left, *right, *n;
	struct dw_window w;

	if ((left = dw_tp_neg_conjunct(p)) == NULL) {
		dw_tp_failed(p, t, DW_TPR_CONJ_OR_SINCE);
		return NULL;
	}
	save = p->i;
	if (dw_tp_eat_word(p, "since") && dw_tp_within(p, &w) && (right = dw_tp_atom(p)) != NULL) {
		n = dw_tp_node(p, DW_TN_SINCE, start);
		if (n != NULL) {
			n->window = w;
			n->a = left;
			n->b = right;
		}
		return n;
	}
	p->i = save;
	return p->fatal != 0 ? NULL : left;
}

/* condition = { conjunct_or_since ~ ("&&" ~ conjunct_or_since)* } (memoized):
 * a left-associative AND, built by a loop. */
static struct dw_tnode *dw_tp_condition_body(struct dw_tp *p)
{
	struct dw_tp_track t = dw_tp_begin(p);
	uint32_t start = p->i, save;
	struct dw_tnode *acc, *right, *n;

	if ((acc = dw_tp_conj_or_since(p)) == NULL) {
		dw_tp_failed(p, t, DW_TPR_CONDITION);
		return NULL;
	}
	for (;;) {
		save = p->i;
		if (dw_tp_eat(p, DW_T_AND2) && (right = dw_tp_conj_or_since(p)) != NULL) {
			n = dw_tp_node(p, DW_TN_AND, start);
			if (n == NULL)
				return NULL;
			n->a = acc;
			n->b = right;
			acc = n;
			continue;
		}
		p->i = save;
		break;
	}
	return p->fatal != 0 ? NULL : acc;
}

static struct dw_tnode *dw_tp_condition(struct dw_tp *p)
{
	struct dw_tp_memo *m = &p->memo[DW_TPM_COND][p->i];
	uint32_t att0 = p->att_pos;
	uint64_t n0 = p->n_att;
	struct dw_tnode *n;

	if (p->fatal != 0)
		return NULL;
	if (m->done)
		return dw_tp_replay(p, m);
	if (!dw_tp_enter(p))
		return NULL;
	n = dw_tp_condition_body(p);
	p->depth--;
	return dw_tp_memoize(p, m, att0, n0, n);
}

/* --- 6. checks after a successful parse ---------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int dw_tp_error(struct dw_tp *p, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = dw_diags_addv(p->diags, DW_SEV_ERROR, p->file, p->src, p->len, off, end, fmt, ap);
	va_end(ap);
	return r != 0 ? r : -EINVAL;
}

/* How much of the n bytes at s a message quotes: at most DW_TP_SHOWN_MAX,
 * cut on a UTF-8 character boundary. */
static int dw_tp_shown(const char *s, uint32_t n)
{
	if (n <= DW_TP_SHOWN_MAX)
		return (int)n;
	n = DW_TP_SHOWN_MAX;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return (int)n;
}

/* An integer literal beyond i64.  The reference silently reads it as 0; a
 * window or bound that is not what was written must not load. */
static int dw_tp_check_ints(struct dw_tp *p)
{
	for (uint32_t k = 0; k < p->n_tok; k++) {
		const struct dw_token *t = &p->tok[k];
		bool neg;
		int64_t v;
		uint32_t off;

		if (t->kind != DW_T_INT)
			continue;
		/* in a parsed block every `-` is the sign of the integer it touches */
		neg = k > 0 && t[-1].kind == DW_T_MINUS && t[-1].end == t->off;
		if (dw_tp_int_value(p, k, neg, &v))
			continue;
		off = neg ? t[-1].off : t->off;
		return dw_tp_error(p, off, t->end, "integer literal `%.*s%s` is out of range",
				   dw_tp_shown(p->src + off, t->end - off), p->src + off,
				   t->end - off > DW_TP_SHOWN_MAX ? "…" : "");
	}
	return 0;
}

/* Acceptance rules 5 and 6.  The whole tree is walked and the first violation in
 * source order is kept, so AND chains and `!` runs can be walked as loops
 * (recursion only follows nesting, which the parser bounded). */
enum dw_tp_viol_kind { DW_TPV_NONE, DW_TPV_AGG_POSITION, DW_TPV_RESERVED_BINDER };

struct dw_tp_viol {
	enum dw_tp_viol_kind kind;
	uint32_t off, end;
	struct dw_str name;
};

static void dw_tp_viol_note(struct dw_tp_viol *v, enum dw_tp_viol_kind kind, uint32_t off,
			    uint32_t end, struct dw_str name)
{
	if (v->kind != DW_TPV_NONE && v->off <= off)
		return;
	v->kind = kind;
	v->off = off;
	v->end = end;
	v->name = name;
}

/* Cedar's request variables cannot name an exists/for/tp binder: a term of
 * that name always reads the request, never the binding.  A sigil slot has no
 * name yet; macro expansion checks what replaces it. */
static void dw_tp_check_binder(const struct dw_tbinder *b, struct dw_tp_viol *v)
{
	static const char *const reserved[] = { "principal", "action", "resource", "context" };

	if (b->sigil != 0)
		return;
	for (size_t k = 0; k < DW_N_ELEMENTS(reserved); k++)
		if (dw_str_eq_c(b->name, reserved[k]))
			dw_tp_viol_note(v, DW_TPV_RESERVED_BINDER, b->off, b->end, b->name);
}

static void dw_tp_check_cond(const struct dw_tnode *n, struct dw_tp_viol *v);

/* A term that is not a comparison operand holds no aggregate at any depth.
 * A term-position call is an aggregation macro call: the same rule. */
static void dw_tp_check_nested(const struct dw_tterm *t, struct dw_tp_viol *v)
{
	if (t->kind == DW_TT_AGG || t->kind == DW_TT_CALL) {
		dw_tp_viol_note(v, DW_TPV_AGG_POSITION, t->off, t->end, dw_str_make(NULL, 0));
		return;
	}
	if (t->kind == DW_TT_ARRAY)
		for (uint32_t k = 0; k < t->n_items; k++)
			dw_tp_check_nested(&t->items[k], v);
}

static void dw_tp_check_agg(const struct dw_tagg *g, struct dw_tp_viol *v)
{
	for (uint32_t k = 0; k < g->n_for; k++)
		dw_tp_check_binder(&g->for_binders[k], v);
	dw_tp_check_cond(g->where, v);
}

/* A comparison operand may itself be an aggregate (or aggregation macro call). */
static void dw_tp_check_operand(const struct dw_tterm *t, struct dw_tp_viol *v)
{
	if (t->kind == DW_TT_AGG)
		dw_tp_check_agg(t->agg, v);
	else if (t->kind != DW_TT_CALL)
		dw_tp_check_nested(t, v);
}

/* Macro call arguments: a condition argument is checked as a condition; a term
 * argument may be an aggregate (it may fill a comparison operand), but not one
 * buried in an array.  Expansion re-checks what the arguments become. */
static void dw_tp_check_call(const struct dw_tcall *c, struct dw_tp_viol *v)
{
	for (uint32_t k = 0; k < c->n_args; k++) {
		const struct dw_targ *arg = &c->args[k];

		if (arg->kind == DW_TA_COND)
			dw_tp_check_cond(arg->cond, v);
		else if (arg->kind == DW_TA_TERM)
			dw_tp_check_operand(arg->term, v);
	}
}

static void dw_tp_check_cond(const struct dw_tnode *n, struct dw_tp_viol *v)
{
	while (n != NULL) {
		switch (n->kind) {
		case DW_TN_AND:
			dw_tp_check_cond(n->b, v);      /* a conjunct: bounded nesting */
			n = n->a;                       /* the long left spine: a loop */
			continue;
		case DW_TN_NOT:
		case DW_TN_FORMERLY:
		case DW_TN_PREVIOUS:
			n = n->a;
			continue;
		case DW_TN_SINCE:
			dw_tp_check_cond(n->a, v);
			n = n->b;
			continue;
		case DW_TN_EXISTS:
			dw_tp_check_binder(&n->binder, v);
			n = n->a;
			continue;
		case DW_TN_TP:
			dw_tp_check_binder(&n->binder, v);
			return;
		case DW_TN_CMP:
			dw_tp_check_operand(n->lhs, v);
			dw_tp_check_operand(n->rhs, v);
			return;
		case DW_TN_PRED:
			for (uint32_t k = 0; k < n->pred->n_fields; k++)
				dw_tp_check_nested(&n->pred->fields[k].term, v);
			return;
		case DW_TN_CALL:
			dw_tp_check_call(n->call, v);
			return;
		default:
			return;
		}
	}
}

static int dw_tp_check_shapes(struct dw_tp *p, const struct dw_tnode *cond,
			      const struct dw_tterm *agg)
{
	struct dw_tp_viol v = { DW_TPV_NONE, 0, 0, { NULL, 0 } };

	if (cond != NULL)
		dw_tp_check_cond(cond, &v);
	else if (agg->kind == DW_TT_AGG)
		dw_tp_check_agg(agg->agg, &v);
	else
		dw_tp_check_call(agg->call, &v);
	switch (v.kind) {
	case DW_TPV_AGG_POSITION:
		return dw_tp_error(p, v.off, v.end, "an aggregate (`sum`/`count`) may appear only as "
				   "the immediate operand of a comparison, not as a predicate-argument "
				   "value or nested in another term");
	case DW_TPV_RESERVED_BINDER:
		return dw_tp_error(p, v.off, v.end, "`%.*s` is a reserved word and cannot be used as a "
				   "binder name; `principal`, `action`, `resource`, and `context` are "
				   "the Cedar request variables — rename the `exists` / `for` / `tp` "
				   "variable", (int)v.name.n, v.name.p);
	case DW_TPV_NONE:
		break;
	}
	return 0;
}

/* `?x` and `$x`: only in macro bodies, and `?x` only for a declared parameter.
 * A parsed block consumed every token, so every sigil token is a use. */
static int dw_tp_check_sigils(struct dw_tp *p)
{
	for (uint32_t k = 0; k < p->n_tok; k++) {
		const struct dw_token *t = &p->tok[k];
		struct dw_str s, name;
		bool known = false;

		if (t->kind != DW_T_QIDENT && t->kind != DW_T_DIDENT)
			continue;
		s = dw_tp_text(p, k);
		name = dw_str_make(s.p + 1, s.n - 1);
		if (p->mode != DW_TEMPORAL_MACRO_BODY)
			return dw_tp_error(p, t->off, t->end, "stray macro parameter reference `%.*s` "
					   "outside a macro body", (int)s.n, s.p);
		if (t->kind == DW_T_DIDENT)
			continue;    /* a fresh binder: renamed at each expansion */
		for (uint32_t j = 0; j < p->n_params && !known; j++)
			known = dw_str_eq(p->params[j], name);
		if (!known)
			return dw_tp_error(p, t->off, t->end, "in `def temporal` body: `%.*s` does not "
					   "name a declared parameter", (int)s.n, s.p);
	}
	return 0;
}

/* --- 7. syntax errors and the entry point ------------------------------------------- */

static bool dw_tp_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool dw_tp_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool dw_tp_is_word_char(char c)
{
	return dw_tp_is_alpha(c) || dw_tp_is_digit(c) || c == '_';
}

static uint32_t dw_tp_utf8_len(unsigned char c)
{
	if (c >= 0xF0 && c < 0xF8)
		return 4;
	if (c >= 0xE0)
		return c < 0xF0 ? 3 : 1;
	if (c >= 0xC0)
		return 2;
	return 1;
}

/* The length of what the reference quotes as the unexpected token at `at`
 * (extract_temporal_token): a word, a sigil, a number with its sign, a string
 * up to the next quote, a two-character operator, or one character.  0 at the
 * end of the block. */
static uint32_t dw_tp_token_len(const struct dw_tp *p, uint32_t at)
{
	const char *s = p->src + at;
	uint32_t n = p->end - at, k, last = 0;
	char c;

	if (n == 0)
		return 0;
	c = s[0];
	if (dw_tp_is_alpha(c) || c == '_' || c == '?' || c == '$') {
		for (k = 1; k < n && dw_tp_is_word_char(s[k]); k++)
			;
		return k;
	}
	if (dw_tp_is_digit(c) || (c == '-' && n > 1 && dw_tp_is_digit(s[1]))) {
		for (k = 1; k < n && dw_tp_is_digit(s[k]); k++)
			;
		return k;
	}
	if (c == '"') {
		for (k = 1; k < n; k++)
			if (s[k] == '"')
				return k + 1;
		/* unclosed: through the character that starts at or before byte 20 */
		for (k = 0; k < n && k <= 20; k += dw_tp_utf8_len((unsigned char)s[k]))
			last = k;
		k = last + dw_tp_utf8_len((unsigned char)s[last]);
		return k < n ? k : n;
	}
	if (n >= 2) {
		static const char *const ops[] = { "::", "==", "!=", "<=", ">=", "&&" };
		for (size_t j = 0; j < DW_N_ELEMENTS(ops); j++)
			if (s[0] == ops[j][0] && s[1] == ops[j][1])
				return 2;
	}
	k = dw_tp_utf8_len((unsigned char)c);
	return k < n ? k : n;
}

/* Is `at` right after a standalone word `let` (only whitespace between)? */
static bool dw_tp_after_let(const struct dw_tp *p, uint32_t at, uint32_t *let_off)
{
	uint32_t e = at;

	while (e > p->off && strchr(" \t\n\r\v\f", p->src[e - 1]) != NULL)
		e--;
	if (e - p->off < 3 || memcmp(p->src + e - 3, "let", 3) != 0)
		return false;
	if (e - 3 > p->off && dw_tp_is_word_char(p->src[e - 4]))
		return false;
	*let_off = e - 3;
	return true;
}

static int dw_tp_strcmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The reference's message for a parse failure (format_temporal_pest_error):
 * the token at the furthest failure, and the rules that failed there when
 * there are at most three distinct names (more is noise). */
static int dw_tp_syntax_error(struct dw_tp *p)
{
	uint32_t at = p->tok[p->att_pos].off, n, let_off;
	const char *names[DW_TPR__COUNT];
	char expected[512];
	size_t k = 0, used = 0;

	if (dw_tp_after_let(p, at, &let_off))
		return dw_tp_error(p, let_off, let_off + 3, "`let` is not recognized; to bind an "
				   "aggregation result, use `exists (var: Type). ((count/sum …) == "
				   "var && …)`");
	for (uint32_t j = 0; j < p->n_rec; j++) {
		const char *name = dw_tp_rule_names[p->att[j].rule];
		bool seen = false;

		for (size_t q = 0; q < k && !seen; q++)
			seen = strcmp(names[q], name) == 0;
		if (!seen)
			names[k++] = name;
	}
	qsort(names, k, sizeof names[0], dw_tp_strcmp);
	expected[0] = '\0';
	for (size_t q = 0; k <= 3 && q < k; q++)
		used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s",
					 q == 0 ? ", expected " : ", ", names[q]);
	n = dw_tp_token_len(p, at);
	if (n == 0)
		return dw_tp_error(p, at, at, "unexpected end of input%s", expected);
	return dw_tp_error(p, at, at + n, "unexpected token `%.*s%s`%s", dw_tp_shown(p->src + at, n),
			   p->src + at, n > DW_TP_SHOWN_MAX ? "…" : "", expected);
}

static int dw_tp_tokenize(struct dw_tp *p)
{
	struct dw_lexer lx;
	size_t n = 0, cap = 64;
	struct dw_token *v = DW_NEWN(&p->scratch, struct dw_token, cap), *w;

	if (v == NULL)
		return -ENOMEM;
	/* the lexer's length is the block's end: no token runs past the brace */
	dw_lex_init(&lx, p->src, p->end, p->off);
	for (;;) {
		struct dw_token t = dw_lex_next(&lx);

		if (n == cap) {
			if (cap > SIZE_MAX / 2 / sizeof *v)
				return -ENOMEM;
			w = DW_NEWN(&p->scratch, struct dw_token, cap * 2);
			if (w == NULL)
				return -ENOMEM;
			memcpy(w, v, n * sizeof *v);
			v = w;
			cap *= 2;
		}
		v[n++] = t;
		if (t.kind == DW_T_EOF)
			break;
	}
	if (n > UINT32_MAX || n > SIZE_MAX / sizeof(struct dw_tp_memo))
		return -ENOMEM;
	p->tok = v;
	p->n_tok = (uint32_t)n;
	p->att = DW_NEWN(&p->scratch, struct dw_tp_att, DW_TP_ATT_MAX);
	if (p->att == NULL)
		return -ENOMEM;
	for (int m = 0; m < DW_TPM__COUNT; m++) {
		p->memo[m] = dw_arena_zalloc(&p->scratch, n * sizeof(struct dw_tp_memo),
					     _Alignof(struct dw_tp_memo));
		if (p->memo[m] == NULL)
			return -ENOMEM;
	}
	return 0;
}

static int dw_tp_fatal(struct dw_tp *p)
{
	const struct dw_token *t = &p->tok[p->fatal_tok];

	if (p->fatal == -ENOMEM)
		return -ENOMEM;
	return dw_tp_error(p, t->off, t->end, "temporal condition nesting exceeds the limit of %d "
			   "levels", DW_TP_MAX_DEPTH);
}

/* temporal_condition = condition EOI; temporal_macro_body = (agg_expr | condition) EOI. */
static int dw_tp_parse_block(struct dw_tp *p, uint16_t src_index, struct dw_temporal **out)
{
	struct dw_tp_track t = dw_tp_begin(p);
	struct dw_tnode *cond = NULL;
	struct dw_tterm *agg = NULL;
	struct dw_temporal *res;
	bool ok;
	int r;

	if (p->mode == DW_TEMPORAL_MACRO_BODY) {
		/* PEG: once agg_expr has matched the choice is made, so a body that
		 * starts with a call and goes on (`f(x) && …`) fails, as in the
		 * reference */
		agg = dw_tp_agg_expr(p);
		if (agg == NULL)
			cond = dw_tp_condition(p);
	} else {
		cond = dw_tp_condition(p);
	}
	ok = agg != NULL || cond != NULL;
	if (ok && !dw_tp_is(p, DW_T_EOF)) {
		dw_tp_leaf(p, DW_TPR_EOI, false);     /* records the failure */
		ok = false;
	}
	if (p->fatal != 0)
		return dw_tp_fatal(p);
	if (!ok) {
		p->i = 0;
		dw_tp_failed(p, t, p->mode == DW_TEMPORAL_MACRO_BODY ? DW_TPR_MACRO_BODY_ENTRY
								     : DW_TPR_CONDITION_ENTRY);
		if (p->fatal != 0)
			return dw_tp_fatal(p);
		return dw_tp_syntax_error(p);
	}
	if ((r = dw_tp_check_ints(p)) != 0 || (r = dw_tp_check_shapes(p, cond, agg)) != 0 ||
	    (r = dw_tp_check_sigils(p)) != 0)
		return r;
	res = DW_NEW(p->a, struct dw_temporal);
	if (res == NULL)
		return -ENOMEM;
	res->cond = cond;
	res->agg = cond != NULL ? NULL : agg;
	res->off = p->off;
	res->end = p->end;
	res->src_index = src_index;
	res->leaf_index = 0;
	*out = res;
	return 0;
}

int dw_temporal_parse(struct dw_arena *a, const char *file, const char *src, size_t len,
		      uint32_t off, uint32_t end, uint16_t src_index, enum dw_temporal_mode mode,
		      const struct dw_str *params, uint32_t n_params, struct dw_temporal **out,
		      struct dw_diags *diags)
{
	struct dw_arena_mark mark = dw_arena_mark(a);
	struct dw_temporal *res = NULL;
	struct dw_tp p;
	int r;

	if (src == NULL || off > end || end > len) {
		r = dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0, "temporal block [%" PRIu32
				 ", %" PRIu32 ") lies outside its source of %zu bytes", off, end, len);
		return r != 0 ? r : -EINVAL;
	}
	memset(&p, 0, sizeof p);
	p.a = a;
	p.diags = diags;
	p.file = file;
	p.src = src;
	p.len = len;
	p.off = off;
	p.end = end;
	p.mode = mode;
	p.params = params;
	p.n_params = params != NULL ? n_params : 0;
	dw_arena_init(&p.scratch);

	r = dw_tp_tokenize(&p);
	if (r == 0)
		r = dw_tp_parse_block(&p, src_index, &res);
	dw_arena_fini(&p.scratch);
	if (r != 0) {
		dw_arena_reset(a, mark);     /* an error leaves the arena as it was */
		return r;
	}
	*out = res;
	return 0;
}

struct dw_policy_set *dw_policy_set_new_temporal(enum dw_dialect dialect)
{
	struct dw_policy_set *ps = dw_policy_set_new(dialect);

	if (ps != NULL)
		ps->parse_temporal = dw_temporal_parse;
	return ps;
}
