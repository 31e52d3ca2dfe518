/* temporal_diff.c - differential tester of Dogwood's two temporal evaluators.
 *
 * Random cases (a fixed Cedar schema, 1-6 Dogwood rules, a trace of 5-60
 * events) are fed to two monitors of one engine: the reference interpreter
 * (DW_MON_REFERENCE, rescans the whole history at each decision) and the
 * incremental engine.  Every decision must agree exactly: Cedar verdict,
 * determining rules, evaluation errors (and the effective verdict and cause).
 *
 * A second engine, the probe, turns every temporal leaf of the case into its
 * own unconstrained `forbid`: its determining rules are then exactly the
 * leaves that hold, so each leaf is compared at every decision even where the
 * main rules would hide it (a forbid that already denies, a scope that does
 * not match), and the statistics can say how often leaves were true.
 *
 * On a disagreement the case is minimised (drop rules, drop events, replace
 * sub-conditions by their sub-conditions, drop predicate fields and event
 * fields, re-checking that some decision still disagrees) and printed in full.
 *
 * Divisions, in order:
 *   1. utilities: PRNG, arena, string buffer
 *   2. generated text as a tree (gnode): rendering, the minimiser's edits
 *   3. the case: schema, domains, windows
 *   4. the policy generator (temporal conditions, Cedar conditions, rules)
 *   5. the trace generator
 *   6. running a case: engine, monitors, comparison
 *   7. minimisation and reports
 *   8. the CLI
 *
 * Usage: temporal-diff [--seed N] [--decisions N] [--cases N] [-v] [--print-case]
 * The last line printed is `N passed, M failed` (decisions); exit 0 iff M = 0. */
#include "dogwood.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif

#define N_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_FAILURES 5

/* ---- 1. utilities ------------------------------------------------------------- */

/* The test dies on OOM: a half-run differential test proves nothing. */
static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "temporal-diff: out of memory\n");
		abort();
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL) {
		fprintf(stderr, "temporal-diff: out of memory\n");
		abort();
	}
	return q;
}

struct rng {
	uint64_t s;
};

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static uint32_t rnd(struct rng *r, uint32_t n)
{
	return (uint32_t)(((splitmix64(&r->s) >> 32) * (uint64_t)n) >> 32);
}

static bool chance(struct rng *r, uint32_t percent)
{
	return rnd(r, 100) < percent;
}

/* Index drawn with the given weights (n >= 1, some weight > 0). */
static size_t pick(struct rng *r, const unsigned *w, size_t n)
{
	unsigned total = 0, x;

	for (size_t i = 0; i < n; i++)
		total += w[i];
	x = rnd(r, total);
	for (size_t i = 0; i < n; i++) {
		if (x < w[i])
			return i;
		x -= w[i];
	}
	return n - 1;
}

/* One arena per case: gnodes and their strings share the case's lifetime. */
struct achunk {
	struct achunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct achunk *head;
};

static void *ar_alloc(struct arena *a, size_t n)
{
	struct achunk *c = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (c == NULL || c->cap - c->used < n) {
		size_t cap = n > 32768 ? n : 32768;
		c = xmalloc(sizeof *c + cap);
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static void ar_free(struct arena *a)
{
	while (a->head != NULL) {
		struct achunk *c = a->head;
		a->head = c->next;
		free(c);
	}
}

static char *ar_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *ar_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	s = ar_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->cap - b->n <= n) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap - b->n <= n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	if ((size_t)n < sizeof tmp) {
		sb_putn(b, tmp, (size_t)n);
		return;
	}
	{
		char *big = xmalloc((size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		sb_putn(b, big, (size_t)n);
		free(big);
	}
}

static void sb_reset(struct sbuf *b)
{
	b->n = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

static void sb_fini(struct sbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

/* ---- 2. generated text as a tree ------------------------------------------------- */

/* A gnode renders as text.  A template interleaves its pieces and kids
 * (piece0 kid0 piece1 … kidN-1 pieceN); a list joins its kids with sep between
 * open and close and may lose kids down to min.  cat says what may stand in
 * for a node when the minimiser simplifies: a condition by a condition it
 * contains, a Cedar expression by a Cedar expression it contains. */
enum gcat {
	CAT_NONE = 0,
	CAT_COND,        /* a self-delimited temporal condition */
	CAT_CEXPR,       /* a self-delimited Cedar expression */
	CAT_LEAF,        /* a temporal block's content (one kid: the condition) */
	CAT_RULE,
};

struct gnode {
	uint8_t cat;
	bool list;
	uint16_t min;
	const char *open, *sep, *close;     /* list */
	const char **piece;                 /* template: nk + 1 pieces */
	uint32_t nk;
	struct gnode **k;
};

/* Placeholder for a kid in a template text. */
#define KID "\x01"

static struct gnode *gn_new(struct arena *a, uint8_t cat)
{
	struct gnode *n = ar_alloc(a, sizeof *n);

	memset(n, 0, sizeof *n);
	n->cat = cat;
	return n;
}

/* A template: text holds one KID per kid, in order. */
static struct gnode *gn_tmpl(struct arena *a, uint8_t cat, const char *text, uint32_t nk, ...)
{
	struct gnode *n = gn_new(a, cat);
	const char *p = text;
	va_list ap;

	n->nk = nk;
	n->k = ar_alloc(a, (nk ? nk : 1) * sizeof *n->k);
	n->piece = ar_alloc(a, (nk + 1) * sizeof *n->piece);
	va_start(ap, nk);
	for (uint32_t i = 0; i < nk; i++) {
		const char *q = strchr(p, KID[0]);
		char *s;
		if (q == NULL) {
			fprintf(stderr, "temporal-diff: template `%s` lacks a kid\n", text);
			abort();
		}
		s = ar_alloc(a, (size_t)(q - p) + 1);
		memcpy(s, p, (size_t)(q - p));
		s[q - p] = '\0';
		n->piece[i] = s;
		n->k[i] = va_arg(ap, struct gnode *);
		p = q + 1;
	}
	va_end(ap);
	n->piece[nk] = p;
	return n;
}

static struct gnode *gn_text(struct arena *a, uint8_t cat, const char *text)
{
	return gn_tmpl(a, cat, text, 0);
}

static struct gnode *gn_list(struct arena *a, uint8_t cat, const char *open, const char *sep,
			     const char *close, uint16_t min)
{
	struct gnode *n = gn_new(a, cat);

	n->list = true;
	n->open = open;
	n->sep = sep;
	n->close = close;
	n->min = min;
	n->k = ar_alloc(a, 8 * sizeof *n->k);
	return n;
}

/* Lists hold at most 8 kids (ample for generated text). */
static void gn_add(struct gnode *l, struct gnode *kid)
{
	if (l->nk >= 8) {
		fprintf(stderr, "temporal-diff: list overflow\n");
		abort();
	}
	l->k[l->nk++] = kid;
}

static void gn_render(const struct gnode *n, struct sbuf *b)
{
	if (n->list) {
		sb_puts(b, n->open);
		for (uint32_t i = 0; i < n->nk; i++) {
			if (i)
				sb_puts(b, n->sep);
			gn_render(n->k[i], b);
		}
		sb_puts(b, n->close);
		return;
	}
	for (uint32_t i = 0; i < n->nk; i++) {
		sb_puts(b, n->piece[i]);
		gn_render(n->k[i], b);
	}
	sb_puts(b, n->piece[n->nk]);
}

/* Every node below n (n included), pre-order. */
static void gn_collect(struct gnode *n, struct gnode ***v, size_t *len, size_t *cap)
{
	if (*len == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*len)++] = n;
	for (uint32_t i = 0; i < n->nk; i++)
		gn_collect(n->k[i], v, len, cap);
}

/* ---- 3. the case ------------------------------------------------------------------- */

static const char schema_text[] =
	"namespace T {\n"
	"  entity U;\n"
	"  entity R;\n"
	"  action \"a\", \"b\", \"c\" appliesTo {\n"
	"    principal: U,\n"
	"    resource: R,\n"
	"    context: {\n"
	"      input: { k: String, n: Long, s: String, opt?: String },\n"
	"      output?: { status: Long }\n"
	"    }\n"
	"  };\n"
	"}\n";

/* Event schemas (docs/formats.md §3): index 0 is Box's default (none passed).  1 pins
 * the caller on every kind, a universal symmetric pin: key-local semantics
 * (docs/formats.md §3).  2 pins it on responses only: plain correlation. */
static const char *const evschema_text[] = {
	NULL,
	"decision event <A>::request {\n"
	"  ...inputs(A), pin callerPrincipal: principalType(A) = principal,\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n"
	"event <A>::response {\n"
	"  ...inputs(A), ...outputs(A), pin callerPrincipal: principalType(A) = principal,\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n"
	"event <A>::error {\n"
	"  ...inputs(A), pin callerPrincipal: principalType(A) = principal,\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n",
	"decision event <A>::request {\n"
	"  ...inputs(A), callerPrincipal: principalType(A),\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n"
	"event <A>::response {\n"
	"  ...inputs(A), ...outputs(A), pin callerPrincipal: principalType(A) = principal,\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n"
	"event <A>::error {\n"
	"  ...inputs(A), callerPrincipal: principalType(A),\n"
	"  callerResource: resourceType(A), requestId: String,\n"
	"}\n",
};

/* Tiny domains, so that values collide. */
static const char *const dom_k[] = { "a", "b", "c" };
static const char *const dom_s[] = { "x1", "x2", "y1", "xy" };
static const char *const dom_opt[] = { "a", "b" };
static const char *const dom_act[] = { "a", "b", "c" };
static const char *const dom_kind[] = { "request", "response", "error" };
static const char *const dom_pr[] = { "u", "v" };
static const char *const dom_rs[] = { "r", "q" };
#define N_N 4          /* n in 0..3 */
/* Some cases draw n from the extremes instead: sums clamp, totals cancel. */
static const int64_t dom_n_big[] = { 0, 1, -1, INT64_C(4611686018427387904), INT64_MAX, -INT64_MAX };
#define N_N_BIG 6
#define N_STATUS 3     /* status in 0..2 */
#define N_REQID 5      /* requestId r0..r4 */

enum { K_REQ = 0, K_RESP, K_ERR };

struct tin {
	uint8_t k, n, s, opt;
	bool has_opt, has_n;
	bool n_str;                    /* logged n written as a string (wrong type) */
};

struct tev {
	int64_t ts;
	uint8_t kind, act, pr, rs;
	bool scope, ctx;               /* envelopes */
	bool caller;                   /* logged callerPrincipal */
	uint8_t callerv;
	bool has_reqid;
	uint8_t reqid;
	bool has_output;
	uint8_t status;
	struct tin in;                 /* logged input */
	struct tin cin;                /* request_context input */
	bool dropped;
};

struct tcase {
	struct arena ar;
	struct gnode *rules;           /* list of CAT_RULE, joined by blank lines */
	struct tev *ev;
	size_t n_ev;
	uint64_t seed;
	size_t index;
	const char *events;            /* event schema text, NULL: the default */
	bool big;                      /* n from dom_n_big */
};

static void case_fini(struct tcase *c)
{
	ar_free(&c->ar);
	free(c->ev);
	c->ev = NULL;
	c->n_ev = 0;
}

/* ---- 4. the policy generator ----------------------------------------------------- */

enum vtype { VT_STR = 0, VT_LONG, VT_ENT, VT_TP };

static const char *const vtype_name[] = { "String", "Long", "T::U", "Timepoint" };

struct var {
	const char *name;
	uint8_t type;
};

/* Variables range-restricted at the current position (ρ of acceptance rule 3,
 * docs/policy-reference.md §3.6). */
struct vars {
	struct var v[12];
	int n;
};

static void vars_add(struct vars *u, const char *name, uint8_t type)
{
	if (u->n < (int)N_ELEMENTS(u->v)) {
		u->v[u->n].name = name;
		u->v[u->n].type = type;
		u->n++;
	}
}

/* A usable variable of the given type, or NULL. */
static const struct var *vars_pick(struct rng *r, const struct vars *u, uint8_t type)
{
	const struct var *c[12];
	int n = 0;

	for (int i = 0; i < u->n; i++)
		if (u->v[i].type == type)
			c[n++] = &u->v[i];
	return n ? c[rnd(r, (uint32_t)n)] : NULL;
}

struct gen {
	struct rng r;
	struct arena *a;
	int64_t base;                  /* the case's time scale (seconds) */
	int64_t wins[8];               /* window lengths the case draws from */
	size_t n_wins;
	int var_ctr;
	/* per-case knobs */
	unsigned p_corr;               /* % of predicate fields correlated with context */
	unsigned p_var;                /* % of fields using an in-scope variable */
	unsigned p_neg_window;         /* % of windows made negative */
	unsigned evschema;             /* index into evschema_text */
	bool big;                      /* n from dom_n_big */
};

static const char *new_var(struct gen *g, char prefix)
{
	return ar_printf(g->a, "%c%d", prefix, ++g->var_ctr);
}

/* A window in a unit that divides it: `120s` or `2m`. */
static const char *gen_window(struct gen *g)
{
	int64_t w = g->wins[rnd(&g->r, (uint32_t)g->n_wins)];
	const char *units[4];
	int64_t div[4];
	size_t n = 0, i;

	if (g->p_neg_window && chance(&g->r, g->p_neg_window))
		return ar_printf(g->a, "-%" PRId64 "s", w ? w : 1);
	units[n] = "s", div[n++] = 1;
	if (w % 60 == 0)
		units[n] = "m", div[n++] = 60;
	if (w % 3600 == 0)
		units[n] = "h", div[n++] = 3600;
	if (w % 86400 == 0)
		units[n] = "d", div[n++] = 86400;
	i = rnd(&g->r, (uint32_t)n);
	return ar_printf(g->a, "%" PRId64 "%s", w / div[i], units[i]);
}

/* A field of an event, its type, and the kinds that carry it. */
struct fdesc {
	const char *path;
	uint8_t type;
	bool resp_only;
};

static const struct fdesc fields[] = {
	{ "input.k", VT_STR, false },
	{ "input.n", VT_LONG, false },
	{ "input.s", VT_STR, false },
	{ "input.opt", VT_STR, false },
	{ "output.status", VT_LONG, true },
	{ "callerPrincipal", VT_ENT, false },
	{ "requestId", VT_STR, false },
};

enum { F_K = 0, F_N, F_S, F_OPT, F_STATUS, F_CALLER, F_REQID };

static const char *lit_for(struct gen *g, size_t f)
{
	struct rng *r = &g->r;

	switch (f) {
	case F_K:
		return ar_printf(g->a, "\"%s\"", chance(r, 5) ? "z" : dom_k[rnd(r, 3)]);
	case F_N:
		if (g->big)
			return ar_printf(g->a, "%" PRId64, dom_n_big[rnd(r, N_N_BIG)]);
		return ar_printf(g->a, "%u", chance(r, 5) ? 9 : rnd(r, N_N));
	case F_S:
		return ar_printf(g->a, "\"%s\"", dom_s[rnd(r, 4)]);
	case F_OPT:
		return ar_printf(g->a, "\"%s\"", dom_opt[rnd(r, 2)]);
	case F_STATUS:
		return ar_printf(g->a, "%u", rnd(r, N_STATUS));
	case F_CALLER:
		return ar_printf(g->a, "T::U::\"%s\"", dom_pr[chance(r, 80) ? 0 : 1]);
	default:
		return ar_printf(g->a, "\"r%u\"", rnd(r, N_REQID));
	}
}

/* A term correlating field f with the decision: context.* or principal. */
static const char *corr_for(struct gen *g, size_t f)
{
	static const char *const str[] = { "context.input.k", "context.input.s", "context.input.opt" };

	switch (fields[f].type) {
	case VT_STR:
		if (f == F_K && chance(&g->r, 70))
			return str[0];
		if (f == F_S && chance(&g->r, 70))
			return str[1];
		if (f == F_OPT && chance(&g->r, 60))
			return str[2];
		return str[rnd(&g->r, 3)];
	case VT_LONG:
		return "context.input.n";
	default:
		return "principal";
	}
}

static const char *like_pat(struct gen *g, size_t f)
{
	static const char *const s_pats[] = { "x*", "*1", "x*1", "*", "y*", "*y*", "x1", "x\\*" };
	static const char *const k_pats[] = { "a*", "*", "b", "*c", "" };

	if (f == F_S)
		return s_pats[rnd(&g->r, N_ELEMENTS(s_pats))];
	return k_pats[rnd(&g->r, N_ELEMENTS(k_pats))];
}

/* Fields usable on kind: status only on responses. */
static bool field_ok(size_t f, int kind)
{
	return !fields[f].resp_only || kind == K_RESP;
}

/* A predicate.  binds[0..nb) must each appear as the value of one field of
 * their type (range-restricting them); other fields draw literals, wildcards,
 * `like`, context correlation or variables of u. */
static struct gnode *gen_pred(struct gen *g, const struct vars *u, const struct var *binds, int nb,
			      int kind)
{
	struct rng *r = &g->r;
	static const unsigned act_w[] = { 60, 28, 12 };
	static const unsigned kind_w[] = { 50, 35, 15 };
	bool used[N_ELEMENTS(fields)] = { false };
	const char *text[N_ELEMENTS(fields) + 4];
	size_t nt = 0, extra;
	struct gnode *p, *l1, *l2;

	if (kind < 0)
		kind = (int)pick(r, kind_w, 3);
	{
		int n_long = 0;
		for (int b = 0; b < nb; b++)
			n_long += binds[b].type == VT_LONG;
		/* two Long binders need input.n and output.status; one may take either */
		if (n_long >= 2 || (n_long == 1 && chance(r, 25)))
			kind = K_RESP;
	}
	for (int b = 0; b < nb; b++) {
		size_t cands[N_ELEMENTS(fields)], nc = 0, f;
		for (size_t i = 0; i < N_ELEMENTS(fields); i++)
			if (fields[i].type == binds[b].type && !used[i] && field_ok(i, kind) &&
			    (i != F_REQID || chance(r, 30)))
				cands[nc++] = i;
		if (nc == 0) {
			for (size_t i = 0; i < N_ELEMENTS(fields); i++)
				if (fields[i].type == binds[b].type && field_ok(i, kind))
					cands[nc++] = i;
		}
		f = cands[rnd(r, (uint32_t)nc)];
		used[f] = true;
		text[nt++] = ar_printf(g->a, "%s: %s", fields[f].path, binds[b].name);
	}
	extra = rnd(r, 100) < 30 ? 0 : rnd(r, 100) < 60 ? 1 : rnd(r, 100) < 70 ? 2 : 3;
	for (size_t e = 0; e < extra; e++) {
		static const unsigned fw[] = { 40, 22, 18, 8, 20, 6, 3 };
		unsigned w[N_ELEMENTS(fields)];
		size_t f;
		const struct var *v;
		const char *val;
		bool any = false;

		for (size_t i = 0; i < N_ELEMENTS(fields); i++) {
			w[i] = used[i] || !field_ok(i, kind) ? 0 : fw[i];
			any |= w[i] > 0;
		}
		if (!any)
			break;
		f = pick(r, w, N_ELEMENTS(fields));
		used[f] = true;
		v = vars_pick(r, u, fields[f].type);
		if (v != NULL && chance(r, g->p_var)) {
			val = v->name;
		} else {
			unsigned x = rnd(r, 100);
			if (x < 12)
				val = chance(r, 50) ? "*" : "_";
			else if (x < 12 + g->p_corr)
				val = corr_for(g, f);
			else if (x < 24 + g->p_corr && fields[f].type == VT_STR && f != F_REQID)
				val = NULL;    /* like */
			else
				val = lit_for(g, f);
		}
		if (val == NULL)
			text[nt++] = ar_printf(g->a, "%s like \"%s\"", fields[f].path, like_pat(g, f));
		else
			text[nt++] = ar_printf(g->a, "%s: %s", fields[f].path, val);
	}
	/* shuffle: the binding field need not come first */
	for (size_t i = nt; i > 1; i--) {
		size_t j = rnd(r, (uint32_t)i);
		const char *t = text[i - 1];
		text[i - 1] = text[j];
		text[j] = t;
	}
	l1 = gn_list(g->a, CAT_NONE, "{", ", ", "}", 0);
	l2 = NULL;
	if (nt >= 2 && chance(r, 4)) {
		/* a refinement: P{a}{b} is P{a, b} */
		size_t cut = 1 + rnd(r, (uint32_t)nt - 1);
		l2 = gn_list(g->a, CAT_NONE, "{", ", ", "}", 0);
		for (size_t i = 0; i < nt; i++)
			gn_add(i < cut ? l1 : l2, gn_text(g->a, CAT_NONE, text[i]));
	} else {
		for (size_t i = 0; i < nt; i++)
			gn_add(l1, gn_text(g->a, CAT_NONE, text[i]));
	}
	{
		size_t act = pick(r, act_w, 3);
		const char *head = ar_printf(g->a, "T::Action::\"%s\"::%s" KID "%s", dom_act[act],
					     dom_kind[kind], l2 ? KID : "");
		p = l2 ? gn_tmpl(g->a, CAT_COND, head, 2, l1, l2) : gn_tmpl(g->a, CAT_COND, head, 1, l1);
	}
	return p;
}

static const char *const cmp_ops[] = { "==", "!=", "<", "<=", ">", ">=" };

/* A filter: a comparison reading variables of u (already range-restricted) or
 * the decision's context. */
static struct gnode *gen_filter(struct gen *g, const struct vars *u)
{
	struct rng *r = &g->r;
	const struct var *v = u->n && chance(r, 80) ? &u->v[rnd(r, (uint32_t)u->n)] : NULL;

	if (v == NULL || v->type == VT_TP) {
		switch (rnd(r, 4)) {
		case 0:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(context.input.n %s %u)",
								  cmp_ops[rnd(r, 6)], rnd(r, N_N)));
		case 1:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(context.input.k %s \"%s\")",
								  chance(r, 50) ? "==" : "!=",
								  dom_k[rnd(r, 3)]));
		case 2:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%u %s context.input.n)",
								  rnd(r, N_N), cmp_ops[rnd(r, 6)]));
		default:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(context.input.s %s \"%s\")",
								  chance(r, 50) ? "==" : "!=",
								  dom_s[rnd(r, 4)]));
		}
	}
	switch (v->type) {
	case VT_STR:
		switch (rnd(r, 4)) {
		case 0:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s != \"%s\")", v->name,
								  dom_k[rnd(r, 3)]));
		case 1:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s == context.input.k)", v->name));
		case 2:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(context.input.s != %s)", v->name));
		default:
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s == \"%s\")", v->name,
								  chance(r, 50) ? dom_k[rnd(r, 3)]
										: dom_s[rnd(r, 4)]));
		}
	case VT_LONG:
		if (chance(r, 70))
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s %s %u)", v->name,
								  cmp_ops[rnd(r, 6)], rnd(r, 4)));
		return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s %s context.input.n)", v->name,
							  cmp_ops[rnd(r, 6)]));
	default:
		if (chance(r, 50))
			return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s == principal)", v->name));
		return gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s != T::U::\"%s\")", v->name,
							  dom_pr[rnd(r, 2)]));
	}
}

static struct gnode *gen_cond(struct gen *g, int d, const struct vars *u);

static struct gnode *and2(struct gen *g, struct gnode *a, struct gnode *b)
{
	struct gnode *l = gn_list(g->a, CAT_COND, "(", " && ", ")", 1);

	gn_add(l, a);
	gn_add(l, b);
	return l;
}

/* The operand of formerly/previous (an atom: a predicate or parenthesised). */
static struct gnode *gen_body(struct gen *g, int d, const struct vars *u)
{
	unsigned x = rnd(&g->r, 100);

	if (d <= 0 || x < 50)
		return gen_pred(g, u, NULL, 0, -1);
	if (x < 65)
		return and2(g, gen_pred(g, u, NULL, 0, -1), gen_filter(g, u));
	if (x < 88)
		return and2(g, gen_pred(g, u, NULL, 0, -1), gen_cond(g, d - 1, u));
	return gen_cond(g, d - 1, u);
}

/* `L since within W R`; bind (may be NULL) is range-restricted by the anchor. */
static struct gnode *gen_since(struct gen *g, int d, const struct vars *u, const struct var *bind)
{
	struct rng *r = &g->r;
	struct vars ul = *u;
	struct gnode *left, *right;
	const char *w = gen_window(g);

	if (bind != NULL)
		vars_add(&ul, bind->name, bind->type);
	if (d > 0 && chance(r, 20))
		right = and2(g, gen_pred(g, u, bind, bind ? 1 : 0, -1), gen_cond(g, d - 1, &ul));
	else
		right = gen_pred(g, u, bind, bind ? 1 : 0, -1);
	if (d > 0 && chance(r, 25))
		left = gen_cond(g, d - 1, &ul);
	else
		left = gen_pred(g, &ul, NULL, 0, -1);
	if (chance(r, 75))
		left = gn_tmpl(g->a, CAT_COND, "!" KID, 1, left);
	return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " since within %s " KID ")", w), 2,
		       left, right);
}

/* An aggregate, `(count … where …)` or `(sum …)`.  *is_sum for the bounds. */
static struct gnode *gen_agg(struct gen *g, int d, const struct vars *u, bool *is_sum)
{
	struct rng *r = &g->r;
	struct var fv[3] = { { NULL, 0 } };
	int nfv = 0;
	bool occ, sum;
	const char *t = NULL, *summand = NULL, *w = gen_window(g);
	struct gnode *pred, *body, *inner;
	struct vars ub = *u;
	struct sbuf head = { 0 };
	unsigned shape = rnd(r, 100);
	char *text;

	sum = chance(r, 35);
	occ = chance(r, 60);
	if (sum) {
		summand = new_var(g, 'b');
		fv[nfv].name = summand;
		fv[nfv++].type = VT_LONG;
	}
	if (!occ || chance(r, 25)) {
		/* distinct tuples (or extra columns of occurrences) */
		int extra = !sum || chance(r, 40) ? 1 + (chance(r, 20) ? 1 : 0) : 0;
		for (int i = 0; i < extra; i++) {
			uint8_t ty = chance(r, 70) ? VT_STR : chance(r, 50) ? VT_LONG : VT_ENT;
			fv[nfv].name = new_var(g, ty == VT_STR ? 'h' : ty == VT_LONG ? 'm' : 'e');
			fv[nfv++].type = ty;
		}
	}
	if (nfv == 0)
		occ = true;
	if (occ)
		t = new_var(g, 't');
	pred = gen_pred(g, u, fv, nfv, -1);
	for (int i = 0; i < nfv; i++)
		vars_add(&ub, fv[i].name, fv[i].type);
	/* the where body: incremental shapes mostly, then the others */
	if (occ) {
		struct gnode *tp = gn_text(g->a, CAT_COND, ar_printf(g->a, "tp(%s)", t));
		inner = chance(r, 80) ? and2(g, pred, tp) : and2(g, tp, pred);
		if (shape >= 80 && shape < 92 && d > 0)
			gn_add(inner, chance(r, 50) ? gen_filter(g, &ub) : gen_cond(g, d - 1, &ub));
	} else {
		inner = pred;
		if (shape >= 80 && shape < 92 && d > 0)
			inner = and2(g, pred, chance(r, 50) ? gen_filter(g, &ub) : gen_cond(g, d - 1, &ub));
	}
	if (shape < 92 || shape >= 97)
		body = gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(formerly within %s " KID ")", w), 1,
			       inner);
	else if (shape < 94)
		body = gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(previous within %s " KID ")", w), 1,
			       inner);
	else
		body = inner;           /* no past operator: the current point only */
	if (sum)
		sb_printf(&head, "(sum %s for ", summand);
	else
		sb_puts(&head, "(count for ");
	{
		/* the for list, in a random order */
		const char *names[4];
		uint8_t types[4];
		int n = 0;
		for (int i = 0; i < nfv; i++)
			names[n] = fv[i].name, types[n++] = fv[i].type;
		if (occ)
			names[n] = t, types[n++] = VT_TP;
		for (int i = n; i > 1; i--) {
			int j = (int)rnd(r, (uint32_t)i);
			const char *tn = names[i - 1];
			uint8_t tt = types[i - 1];
			names[i - 1] = names[j], types[i - 1] = types[j];
			names[j] = tn, types[j] = tt;
		}
		for (int i = 0; i < n; i++)
			sb_printf(&head, "%s(%s: %s)", i ? ", " : "", names[i], vtype_name[types[i]]);
	}
	sb_puts(&head, ". where " KID ")");
	text = ar_printf(g->a, "%s", head.p);
	sb_fini(&head);
	*is_sum = sum;
	return gn_tmpl(g->a, CAT_NONE, text, 1, body);
}

static unsigned agg_bound(struct gen *g, bool is_sum)
{
	return is_sum ? rnd(&g->r, 9) : rnd(&g->r, 5);
}

/* An aggregate compared: with a literal, another aggregate or the context. */
static struct gnode *gen_aggcmp(struct gen *g, int d, const struct vars *u)
{
	struct rng *r = &g->r;
	bool s1, s2;
	struct gnode *a1 = gen_agg(g, d, u, &s1);
	const char *op = cmp_ops[rnd(r, 6)];
	unsigned x = rnd(r, 100);

	if (x < 62)
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " %s %u)", op, agg_bound(g, s1)),
			       1, a1);
	if (x < 72)
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(%u %s " KID ")", agg_bound(g, s1), op),
			       1, a1);
	if (x < 88) {
		struct gnode *a2 = gen_agg(g, d > 0 ? d - 1 : 0, u, &s2);
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " %s " KID ")", op), 2, a1, a2);
	}
	return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " %s context.input.n)", op), 1, a1);
}

/* `exists (n: Long). ((AGG) == n && n OP K …)`: the binding idiom. */
static struct gnode *gen_exists_agg(struct gen *g, int d, const struct vars *u)
{
	struct rng *r = &g->r;
	const char *n = new_var(g, 'n');
	bool s;
	struct gnode *agg = gen_agg(g, d, u, &s);
	struct gnode *chain = gn_list(g->a, CAT_COND, "(", " && ", ")", 1);
	struct vars un = *u;
	int more = chance(r, 85) ? 1 : 2;

	gn_add(chain, chance(r, 80) ? gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " == %s)", n), 1, agg)
				     : gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(%s == " KID ")", n), 1, agg));
	vars_add(&un, n, VT_LONG);
	for (int i = 0; i < more; i++) {
		unsigned x = rnd(r, 100);
		if (x < 70)
			gn_add(chain, gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s %s %u)", n,
									 cmp_ops[rnd(r, 6)],
									 agg_bound(g, s))));
		else if (x < 85)
			gn_add(chain, gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s %s context.input.n)",
									 n, cmp_ops[rnd(r, 6)])));
		else
			gn_add(chain, gen_cond(g, d > 0 ? d - 1 : 0, &un));
	}
	return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(exists (%s: Long). " KID ")", n), 1, chain);
}

/* `exists (v: T). (BINDER && …)`: a variable bound by a positive atom, then
 * used by predicates and filters to its right. */
static struct gnode *gen_exists_var(struct gen *g, int d, const struct vars *u)
{
	struct rng *r = &g->r;
	static const unsigned tw[] = { 55, 25, 12, 8 };
	uint8_t ty = (uint8_t)pick(r, tw, 4);
	struct var v;
	struct vars uv = *u;
	struct gnode *chain = gn_list(g->a, CAT_COND, "(", " && ", ")", 1), *b;
	int more = chance(r, 70) ? 1 : 2;
	unsigned x = rnd(r, 100);

	v.name = new_var(g, ty == VT_STR ? 'x' : ty == VT_LONG ? 'y' : ty == VT_ENT ? 'e' : 'p');
	v.type = ty;
	if (ty == VT_TP) {
		/* a timepoint shared by two atoms: the same event matched twice */
		struct gnode *tp = gn_text(g->a, CAT_COND, ar_printf(g->a, "tp(%s)", v.name));
		struct gnode *tp2 = gn_text(g->a, CAT_COND, ar_printf(g->a, "tp(%s)", v.name));
		gn_add(chain, gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(formerly within %s " KID ")",
								 gen_window(g)),
				      1, and2(g, gen_pred(g, u, NULL, 0, -1), tp)));
		gn_add(chain, gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(%s within %s " KID ")",
								 chance(r, 50) ? "formerly" : "previous",
								 gen_window(g)),
				      1, and2(g, gen_pred(g, u, NULL, 0, -1), tp2)));
		return gn_tmpl(g->a, CAT_COND,
			       ar_printf(g->a, "(exists (%s: Timepoint). " KID ")", v.name), 1, chain);
	}
	if (x < 38) {
		struct gnode *in = gen_pred(g, u, &v, 1, -1);
		vars_add(&uv, v.name, v.type);
		if (d > 0 && chance(r, 25))
			in = and2(g, in, chance(r, 50) ? gen_filter(g, &uv) : gen_cond(g, d - 1, &uv));
		b = gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(formerly within %s " KID ")", gen_window(g)),
			    1, in);
	} else if (x < 53) {
		b = gen_pred(g, u, &v, 1, -1);
	} else if (x < 63) {
		b = gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(previous within %s " KID ")", gen_window(g)),
			    1, gen_pred(g, u, &v, 1, -1));
	} else if (x < 78) {
		b = gen_since(g, d > 0 ? d - 1 : 0, u, &v);
	} else if (x < 88 || (x < 93 && ty != VT_LONG)) {
		const char *src = ty == VT_STR ? (chance(r, 60) ? "context.input.k" : "context.input.s")
			: ty == VT_LONG ? "context.input.n" : "principal";
		b = gn_text(g->a, CAT_COND, chance(r, 50) ? ar_printf(g->a, "(%s == %s)", v.name, src)
							  : ar_printf(g->a, "(%s == %s)", src, v.name));
	} else if (x < 93) {
		bool s;
		b = gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(" KID " == %s)", v.name), 1,
			    gen_agg(g, d > 0 ? d - 1 : 0, u, &s));
	} else {
		const char *lit = ty == VT_STR ? ar_printf(g->a, "\"%s\"", dom_k[rnd(r, 3)])
			: ty == VT_LONG ? ar_printf(g->a, "%u", rnd(r, N_N))
			: ar_printf(g->a, "T::U::\"%s\"", dom_pr[rnd(r, 2)]);
		b = gn_text(g->a, CAT_COND, ar_printf(g->a, "(%s == %s)", v.name, lit));
	}
	gn_add(chain, b);
	uv = *u;
	vars_add(&uv, v.name, v.type);
	for (int i = 0; i < more; i++) {
		unsigned y = rnd(r, 100);
		/* an equality binder holds no predicate: the body needs one (acceptance rule 7) */
		if (x >= 78 && i == more - 1 && y < 25)
			y = 25 + rnd(r, 75);
		struct vars only = { .n = 0 };
		vars_add(&only, v.name, v.type);
		if (y < 25) {
			gn_add(chain, gen_filter(g, &only));
		} else if (y < 45) {
			gn_add(chain, gn_tmpl(g->a, CAT_COND, "(!" KID ")", 1, gen_pred(g, &only, &v, 1, -1)));
		} else if (y < 75) {
			/* the variable in a past operator's predicate (a correlation) */
			struct gnode *p = gen_pred(g, u, &v, 1, -1);
			gn_add(chain, gn_tmpl(g->a, CAT_COND,
					      ar_printf(g->a, "(%s within %s " KID ")",
							chance(r, 80) ? "formerly" : "previous",
							gen_window(g)),
					      1, p));
		} else {
			gn_add(chain, gen_cond(g, d > 0 ? d - 1 : 0, &uv));
		}
	}
	return gn_tmpl(g->a, CAT_COND,
		       ar_printf(g->a, "(exists (%s: %s). " KID ")", v.name, vtype_name[ty]), 1, chain);
}

/* The default macros (docs/policy-reference.md §3.7). */
static struct gnode *gen_macro(struct gen *g, const struct vars *u)
{
	struct rng *r = &g->r;
	const char *w = gen_window(g), *op = cmp_ops[rnd(r, 6)];
	struct var v;

	switch (rnd(r, 4)) {
	case 0:
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(count_within(%s, " KID ") %s %u)", w, op,
							  rnd(r, 5)),
			       1, gen_pred(g, u, NULL, 0, -1));
	case 1:
		v.name = new_var(g, 'b');
		v.type = VT_LONG;
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(sum_within(%s, %s, " KID ") %s %u)",
							  v.name, w, op, rnd(r, 9)),
			       1, gen_pred(g, u, &v, 1, -1));
	case 2:
		v.name = new_var(g, 'h');
		v.type = VT_STR;        /* the macro declares (?k: String) */
		return gn_tmpl(g->a, CAT_COND,
			       ar_printf(g->a, "(count_distinct_within(%s, %s, " KID ") %s %u)", v.name, w,
					 op, rnd(r, 4)),
			       1, gen_pred(g, u, &v, 1, -1));
	default: {
		const char *n = new_var(g, 'n');
		return gn_tmpl(g->a, CAT_COND,
			       ar_printf(g->a, "(bind(%s, count_within(%s, " KID "), %s %s %u))", n, w,
					 n, op, rnd(r, 4)),
			       1, gen_pred(g, u, NULL, 0, -1));
	}
	}
}

/* A condition over variables of u (range-restricted already), self-delimited. */
static struct gnode *gen_cond(struct gen *g, int d, const struct vars *u)
{
	struct rng *r = &g->r;
	enum { C_POINT, C_FORMERLY, C_PREVIOUS, C_SINCE, C_NOT, C_AND, C_AGG, C_EXAGG, C_EXVAR,
	       C_MACRO, C_N };
	static const unsigned deep[C_N] = { 6, 22, 7, 13, 6, 5, 16, 8, 10, 8 };
	static const unsigned flat[C_N] = { 20, 48, 12, 20, 0, 0, 0, 0, 0, 0 };
	size_t c = pick(r, d > 0 ? deep : flat, C_N);

	switch (c) {
	case C_POINT:
		/* a filter reading only the context would be a conjunct of its own in
		 * a top-level chain (acceptance rule 7): only with variables, inside an exists */
		if (u->n > 0 && chance(r, 25))
			return and2(g, gen_pred(g, u, NULL, 0, K_REQ), gen_filter(g, u));
		return gen_pred(g, u, NULL, 0, chance(r, 80) ? K_REQ : -1);
	case C_FORMERLY:
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(formerly within %s " KID ")", gen_window(g)),
			       1, gen_body(g, d - 1, u));
	case C_PREVIOUS:
		return gn_tmpl(g->a, CAT_COND, ar_printf(g->a, "(previous within %s " KID ")", gen_window(g)),
			       1, gen_body(g, d - 1, u));
	case C_SINCE:
		return gen_since(g, d - 1, u, NULL);
	case C_NOT:
		return gn_tmpl(g->a, CAT_COND, "(!" KID ")", 1, gen_cond(g, d - 1, u));
	case C_AND:
		return and2(g, gen_cond(g, d - 1, u), gen_cond(g, d - 1, u));
	case C_AGG:
		return gen_aggcmp(g, d - 1, u);
	case C_EXAGG:
		return gen_exists_agg(g, d - 1, u);
	case C_EXVAR:
		return gen_exists_var(g, d - 1, u);
	default:
		return gen_macro(g, u);
	}
}

/* A leaf: the content of one temporal block. */
static struct gnode *gen_leaf(struct gen *g)
{
	static const struct vars none = { .n = 0 };
	static const unsigned dw[] = { 25, 40, 25, 10 };
	int d = (int)pick(&g->r, dw, 4);
	struct gnode *c;

	g->var_ctr = 0;
	c = gen_cond(g, d, &none);
	if (chance(&g->r, 20)) {
		struct gnode *l = gn_list(g->a, CAT_COND, "", " && ", "", 1);
		gn_add(l, c);
		gn_add(l, gen_cond(g, d > 0 ? d - 1 : 0, &none));
		c = l;
	}
	return gn_tmpl(g->a, CAT_LEAF, KID, 1, c);
}

/* A plain Cedar condition on the request (self-delimited). */
static struct gnode *gen_cedar(struct gen *g)
{
	struct rng *r = &g->r;

	switch (rnd(r, 10)) {
	case 0:
	case 1:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(context.input.k == \"%s\")", dom_k[rnd(r, 3)]));
	case 2:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(context.input.n %s %u)", cmp_ops[rnd(r, 6)],
							   rnd(r, N_N)));
	case 3:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(context.input.s like \"%s\")",
							   like_pat(g, F_S)));
	case 4:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(context.input has opt && context.input.opt == \"%s\")",
							   dom_opt[rnd(r, 2)]));
	case 5:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(principal == T::U::\"%s\")", dom_pr[rnd(r, 2)]));
	case 6:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(resource == T::R::\"%s\")", dom_rs[rnd(r, 2)]));
	case 7:
		if (chance(r, 30))      /* overflows for n >= 2: an evaluation error */
			return gn_text(g->a, CAT_CEXPR, "(context.input.n * 4611686018427387904 > 0)");
		/* fall through */
	case 8:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(!(context.input.k == \"%s\"))", dom_k[rnd(r, 3)]));
	default:
		return gn_text(g->a, CAT_CEXPR, ar_printf(g->a, "(action == T::Action::\"%s\")", dom_act[rnd(r, 3)]));
	}
}

/* One `when`/`unless` clause holding a temporal leaf. */
static struct gnode *gen_temporal_clause(struct gen *g)
{
	struct rng *r = &g->r;
	struct gnode *leaf = gen_leaf(g);
	unsigned x = rnd(r, 100);
	struct gnode *t;

	if (x < 78)
		return gn_tmpl(g->a, CAT_NONE, "\n  when temporal { " KID " }", 1, leaf);
	if (x < 88)
		return gn_tmpl(g->a, CAT_NONE, "\n  unless temporal { " KID " }", 1, leaf);
	/* inline: the leaf is evaluated only when Cedar gets to it */
	t = gn_tmpl(g->a, CAT_CEXPR, "temporal { " KID " }", 1, leaf);
	switch (rnd(r, 4)) {
	case 0:
		return gn_tmpl(g->a, CAT_NONE, "\n  when { " KID " }", 1,
			       gn_tmpl(g->a, CAT_CEXPR, "(" KID " || " KID ")", 2, gen_cedar(g), t));
	case 1:
		return gn_tmpl(g->a, CAT_NONE, "\n  when { " KID " }", 1,
			       gn_tmpl(g->a, CAT_CEXPR, "(" KID " && " KID ")", 2, gen_cedar(g), t));
	case 2:
		return gn_tmpl(g->a, CAT_NONE, "\n  when { " KID " }", 1,
			       gn_tmpl(g->a, CAT_CEXPR, "(!" KID ")", 1, t));
	default:
		return gn_tmpl(g->a, CAT_NONE, "\n  unless { " KID " }", 1,
			       gn_tmpl(g->a, CAT_CEXPR, "(" KID " && " KID ")", 2, t, gen_cedar(g)));
	}
}

static struct gnode *gen_rule(struct gen *g, bool catch_all)
{
	struct rng *r = &g->r;
	struct gnode *clauses = gn_list(g->a, CAT_NONE, "", "", "", 0);
	const char *effect, *pscope = "principal", *ascope = "action", *rscope = "resource";
	unsigned x;

	if (catch_all) {
		gn_add(clauses, chance(r, 80) ? gn_text(g->a, CAT_NONE, "")
					      : gn_tmpl(g->a, CAT_NONE, "\n  unless { " KID " }", 1,
							gen_cedar(g)));
		return gn_tmpl(g->a, CAT_RULE, "permit (principal, action, resource)" KID ";", 1, clauses);
	}
	effect = chance(r, 50) ? "forbid" : "permit";
	x = rnd(r, 100);
	if (x < 40)
		ascope = "action == T::Action::\"a\"";
	else if (x < 55)
		ascope = ar_printf(g->a, "action == T::Action::\"%s\"", dom_act[1 + rnd(r, 2)]);
	else if (x < 70)
		ascope = "action in [T::Action::\"a\", T::Action::\"b\"]";
	if (chance(r, 8))
		pscope = ar_printf(g->a, "principal == T::U::\"%s\"", dom_pr[rnd(r, 2)]);
	if (chance(r, 8))
		rscope = ar_printf(g->a, "resource == T::R::\"%s\"", dom_rs[rnd(r, 2)]);
	if (chance(r, 10)) {
		gn_add(clauses, gn_tmpl(g->a, CAT_NONE, "\n  when { " KID " }", 1, gen_cedar(g)));
	} else {
		int nl = chance(r, 82) ? 1 : 2;
		bool cedar_first = chance(r, 12), cedar_last = chance(r, 12);
		if (cedar_first)
			gn_add(clauses, gn_tmpl(g->a, CAT_NONE, "\n  when { " KID " }", 1, gen_cedar(g)));
		for (int i = 0; i < nl; i++)
			gn_add(clauses, gen_temporal_clause(g));
		if (cedar_last)
			gn_add(clauses, gn_tmpl(g->a, CAT_NONE, "\n  unless { " KID " }", 1, gen_cedar(g)));
	}
	return gn_tmpl(g->a, CAT_RULE, ar_printf(g->a, "%s (%s, %s, %s)" KID ";", effect, pscope,
						 ascope, rscope),
		       1, clauses);
}

/* ---- 5. the trace generator ---------------------------------------------------- */

static uint8_t skewed(struct rng *r, uint8_t n)
{
	/* half the time the first value: collisions are the point */
	return chance(r, 45) ? 0 : (uint8_t)rnd(r, n);
}

static void gen_input(struct rng *r, bool big, struct tin *in)
{
	in->k = skewed(r, 3);
	in->n = skewed(r, big ? N_N_BIG : N_N);
	in->s = skewed(r, 4);
	in->has_opt = chance(r, 50);
	in->opt = (uint8_t)rnd(r, 2);
	in->has_n = true;
}

static int64_t gen_gap(struct gen *g)
{
	struct rng *r = &g->r;
	int64_t b = g->base, w;
	static const unsigned gw[] = { 30, 20, 8, 6, 10, 8, 6, 5, 7 };

	switch (pick(r, gw, N_ELEMENTS(gw))) {
	case 0:
		return 0;
	case 1:
		return b;
	case 2:
		return b + 1;
	case 3:
		return b > 1 ? b - 1 : 1;
	case 4:
		return b * (2 + rnd(r, 4));
	case 5:
		return 1 + rnd(r, (uint32_t)b);
	case 6:
		return 1;
	case 7:
		return 2 * g->wins[g->n_wins - 1] + 1 + rnd(r, 1000);   /* past every window */
	default:
		w = g->wins[rnd(r, (uint32_t)g->n_wins)];
		return w + (chance(r, 50) ? 0 : 1);
	}
}

static void gen_trace(struct gen *g, struct tcase *c)
{
	struct rng *r = &g->r;
	size_t n = 5 + rnd(r, 56);
	int64_t ts;
	/* out of order: the clock steps back, or single events arrive late
	 * (stamped in the past while the clock goes on) */
	unsigned mode = rnd(r, 100);
	bool back = mode < 12 || mode >= 94, late = mode >= 82;
	unsigned p_caller = g->evschema ? (chance(r, 70) ? 100 : 85)
					 : (unsigned[]){ 0, 50, 100 }[rnd(r, 3)];
	unsigned p_v = g->evschema ? 35 : 15;   /* principal v: another key */
	static const unsigned act_w[] = { 55, 30, 15 };
	static const unsigned kind_w[] = { 58, 28, 14 };
	uint8_t req_ctr = 0;

	switch (rnd(r, 5)) {
	case 0:
		ts = 0;
		break;
	case 1:
		ts = 1700000000;
		break;
	default:
		ts = 1000 + rnd(r, 1000);
		break;
	}
	c->ev = xmalloc(n * sizeof *c->ev);
	c->n_ev = n;
	for (size_t i = 0; i < n; i++) {
		struct tev *e = &c->ev[i];
		const struct tev *prev = i ? &c->ev[i - 1] : NULL;

		memset(e, 0, sizeof *e);
		if (i > 0) {
			if (back && chance(r, 15))
				ts -= chance(r, 70) ? gen_gap(g) : 1;
			else
				ts += gen_gap(g);
		}
		e->ts = ts;
		if (i > 0 && late && chance(r, 15)) {
			switch (rnd(r, 4)) {
			case 0:
				e->ts = c->ev[rnd(r, (uint32_t)i)].ts;     /* equal to an earlier one */
				break;
			case 1:
				e->ts = ts - gen_gap(g);
				break;
			default:
				e->ts = ts - 2 * g->wins[g->n_wins - 1] - (int64_t)rnd(r, 3);
				break;
			}
		}
		if (prev != NULL && prev->kind == K_REQ && chance(r, 45)) {
			/* the outcome of the request just made */
			int64_t keep = e->ts;
			*e = *prev;
			e->ts = keep;
			e->kind = chance(r, 75) ? K_RESP : K_ERR;
		} else {
			e->kind = (uint8_t)pick(r, kind_w, 3);
			e->act = (uint8_t)pick(r, act_w, 3);
			e->pr = chance(r, p_v) ? 1 : 0;
			e->rs = chance(r, 85) ? 0 : 1;
			gen_input(r, g->big, &e->in);
			e->cin = e->in;
			e->caller = chance(r, p_caller);
			e->callerv = chance(r, 90) ? e->pr : (uint8_t)(1 - e->pr);
			e->has_reqid = true;
			e->reqid = e->kind == K_REQ ? (uint8_t)(req_ctr++ % N_REQID) : (uint8_t)rnd(r, N_REQID);
		}
		e->scope = e->kind == K_REQ ? chance(r, 99) : chance(r, 80);
		e->ctx = e->kind == K_REQ ? chance(r, 99) : chance(r, 30);
		if (e->kind == K_REQ && chance(r, 5)) {
			/* the logged record and the context differ */
			e->in.k = (uint8_t)rnd(r, 3);
		}
		if (chance(r, 3))
			e->in.has_n = false;    /* a field absent: matches nothing, even `*` */
		e->in.n_str = chance(r, 2);     /* the trace is not typed: sum skips it */
		e->has_output = e->kind == K_RESP && chance(r, 92);
		e->status = skewed(r, N_STATUS);
	}
}

static void render_input(struct sbuf *b, const struct tin *in, bool big)
{
	int64_t n = big ? dom_n_big[in->n] : in->n;

	sb_printf(b, "{k: \"%s\"", dom_k[in->k]);
	if (in->has_n)
		sb_printf(b, in->n_str ? ", n: \"%" PRId64 "\"" : ", n: %" PRId64, n);
	sb_printf(b, ", s: \"%s\"", dom_s[in->s]);
	if (in->has_opt)
		sb_printf(b, ", opt: \"%s\"", dom_opt[in->opt]);
	sb_puts(b, "}");
}

static void render_event(struct sbuf *b, const struct tev *e, bool big)
{
	struct tin cin = e->cin;

	sb_printf(b, "@%" PRId64 " ", e->ts);
	if (e->scope)
		sb_printf(b, "scope(principal: T::U::\"%s\", resource: T::R::\"%s\") ", dom_pr[e->pr],
			  dom_rs[e->rs]);
	if (e->ctx) {
		cin.has_n = true;        /* the Cedar context must conform to the schema */
		cin.n_str = false;
		sb_puts(b, "request_context(input: ");
		render_input(b, &cin, big);
		sb_puts(b, ") ");
	}
	sb_printf(b, "T::Action::\"%s\"::%s(input: ", dom_act[e->act], dom_kind[e->kind]);
	render_input(b, &e->in, big);
	if (e->has_output)
		sb_printf(b, ", output: {status: %u}", e->status);
	if (e->has_reqid)
		sb_printf(b, ", requestId: \"r%u\"", e->reqid);
	if (e->caller)
		sb_printf(b, ", callerPrincipal: T::U::\"%s\"", dom_pr[e->callerv]);
	sb_puts(b, ")\n");
}

static void render_trace(struct sbuf *b, const struct tcase *c)
{
	for (size_t i = 0; i < c->n_ev; i++)
		if (!c->ev[i].dropped)
			render_event(b, &c->ev[i], c->big);
}

static void render_policy(struct sbuf *b, const struct tcase *c)
{
	gn_render(c->rules, b);
	sb_puts(b, "\n");
}

static void gen_case(struct tcase *c, uint64_t seed, size_t index)
{
	struct gen g;
	static const int64_t bases[] = { 1, 2, 10, 60, 300, 3600 };
	static const unsigned base_w[] = { 20, 15, 20, 20, 10, 15 };
	size_t n_rules, catch_pos;
	bool catch_all;

	memset(c, 0, sizeof *c);
	c->seed = seed;
	c->index = index;
	memset(&g, 0, sizeof g);
	g.r.s = seed;
	g.a = &c->ar;
	g.base = bases[pick(&g.r, base_w, N_ELEMENTS(base_w))];
	g.wins[g.n_wins++] = 0;
	g.wins[g.n_wins++] = g.base;
	g.wins[g.n_wins++] = g.base;
	g.wins[g.n_wins++] = 2 * g.base;
	g.wins[g.n_wins++] = 3 * g.base;
	g.wins[g.n_wins++] = 5 * g.base;
	if (chance(&g.r, 30))
		g.wins[g.n_wins++] = g.base + 1;
	if (chance(&g.r, 15))
		g.wins[g.n_wins++] = 86400;    /* the default cap, exactly */
	/* keep the largest window last (gen_gap's long gaps read it) */
	for (size_t i = 1; i < g.n_wins; i++)
		if (g.wins[i] < g.wins[i - 1]) {
			int64_t t = g.wins[i];
			size_t j = i;
			while (j > 0 && g.wins[j - 1] > t) {
				g.wins[j] = g.wins[j - 1];
				j--;
			}
			g.wins[j] = t;
		}
	g.p_corr = (unsigned[]){ 10, 25, 40 }[rnd(&g.r, 3)];
	g.p_var = (unsigned[]){ 30, 50, 70 }[rnd(&g.r, 3)];
	g.p_neg_window = chance(&g.r, 3) ? 5 : 0;
	g.big = c->big = chance(&g.r, 6);
	{
		unsigned x = rnd(&g.r, 100);
		g.evschema = x < 80 ? 0 : x < 93 ? 1 : 2;
		c->events = evschema_text[g.evschema];
	}

	c->rules = gn_list(&c->ar, CAT_NONE, "", "\n\n", "", 0);
	n_rules = 1 + rnd(&g.r, 6);
	catch_all = chance(&g.r, 70);
	catch_pos = rnd(&g.r, (uint32_t)n_rules);
	for (size_t i = 0; i < n_rules; i++)
		gn_add(c->rules, gen_rule(&g, catch_all && i == catch_pos));
	gen_trace(&g, c);
}

/* ---- 6. running a case --------------------------------------------------------- */

struct stats {
	uint64_t cases, rejected, probe_rejected, trace_errors;
	uint64_t decisions, passed, failed;
	uint64_t allow, deny, with_errors;
	uint64_t leaf_evals, leaf_true, dec_with_leaves, dec_leaf_true, dec_leaf_false;
	uint64_t probe_failed;
	size_t shown_rejections;
};

struct opts {
	uint64_t seed;
	uint64_t decisions;
	uint64_t cases;
	bool verbose;
	bool print_case;
};

/* What one run of a policy text over a trace text gave. */
struct outcome {
	bool rejected;                 /* the engine refused the policies */
	bool trace_error;
	struct sbuf diag;              /* why, when refused */
	size_t n_dec;
	size_t n_bad;                  /* decisions that disagree */
	size_t first_bad;              /* its decision ordinal */
	/* per decision (when asked for): the oracle's number of reasons and
	 * whether the verdicts disagree */
	size_t *n_reasons;
	bool *bad;
	uint8_t *verdict;
	size_t n_errors;               /* decisions with evaluation errors */
	size_t cap;
};

static void outcome_fini(struct outcome *o)
{
	sb_fini(&o->diag);
	free(o->n_reasons);
	free(o->bad);
	free(o->verdict);
	memset(o, 0, sizeof *o);
}

/* --self-test: pretend the incremental engine is wrong whenever two permits
 * determine an ALLOW, to exercise detection, minimisation and the report. */
static bool self_test;

static bool decision_eq(const struct dw_decision *a, const struct dw_decision *b)
{
	if (self_test && a->cedar == DW_ALLOW && a->n_reasons >= 2)
		return false;
	if (a->cedar != b->cedar || a->verdict != b->verdict || a->cause != b->cause ||
	    a->n_reasons != b->n_reasons || a->n_errors != b->n_errors)
		return false;
	for (size_t i = 0; i < a->n_reasons; i++)
		if (a->reasons[i].index != b->reasons[i].index)
			return false;
	for (size_t i = 0; i < a->n_errors; i++)
		if (a->errors[i].index != b->errors[i].index ||
		    strcmp(a->errors[i].message ? a->errors[i].message : "",
			   b->errors[i].message ? b->errors[i].message : "") != 0)
			return false;
	return true;
}

/* `ALLOW  [rules: 0, 2]` and one `    error: …` line per error, as replay prints. */
static void render_decision(struct sbuf *b, int rc, const struct dw_decision *d)
{
	if (rc != 0)
		sb_printf(b, "(feed returned %d) ", rc);
	sb_puts(b, d->cedar == DW_ALLOW ? "ALLOW" : "DENY");
	if (d->n_reasons) {
		sb_puts(b, "  [rules: ");
		for (size_t i = 0; i < d->n_reasons; i++)
			sb_printf(b, "%s%zu", i ? ", " : "", d->reasons[i].index);
		sb_puts(b, "]");
	}
	sb_printf(b, "  (effective: %s, %s)", d->verdict == DW_ALLOW ? "allow" : "deny",
		  dw_cause_name(d->cause));
	for (size_t i = 0; i < d->n_errors; i++)
		sb_printf(b, "\n        error: rule %zu: %s", d->errors[i].index,
			  d->errors[i].message ? d->errors[i].message : "(null)");
}

static void outcome_grow(struct outcome *o)
{
	if (o->n_dec < o->cap)
		return;
	o->cap = o->cap ? o->cap * 2 : 64;
	o->n_reasons = xrealloc(o->n_reasons, o->cap * sizeof *o->n_reasons);
	o->bad = xrealloc(o->bad, o->cap * sizeof *o->bad);
	o->verdict = xrealloc(o->verdict, o->cap * sizeof *o->verdict);
}

/* Load policy over the schema, feed every event of trace to an oracle and an
 * incremental monitor, compare each decision.  report: print every decision
 * of both, marking those that differ. */
static int run_text(const char *policy, const char *events, const char *trace, struct outcome *o,
		    struct sbuf *report)
{
	struct dw_input events_in = { "events.dwschema", events, events ? strlen(events) : 0,
				      DW_FMT_DWSCHEMA };
	struct dw_input schema_in = { "schema.cedarschema", schema_text, strlen(schema_text),
				      DW_FMT_CEDARSCHEMA };
	struct dw_input policy_in = { "policy.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg;
	struct dw_engine *eng = NULL;
	struct dw_diags *diags = dw_diags_new();
	struct dw_trace *t = NULL;
	struct dw_monitor *mo = NULL, *mi = NULL;
	struct dw_monitor_config cref = { .flags = DW_MON_CALLER_TIME | DW_MON_REFERENCE };
	struct dw_monitor_config cinc = { .flags = DW_MON_CALLER_TIME };
	char err[512];
	int r;

	o->n_dec = o->n_bad = o->n_errors = 0;
	o->rejected = o->trace_error = false;
	sb_reset(&o->diag);
	if (diags == NULL)
		abort();
	memset(&cfg, 0, sizeof cfg);
	cfg.schemas = &schema_in;
	cfg.n_schemas = 1;
	cfg.policies = &policy_in;
	cfg.n_policies = 1;
	cfg.flags = DW_VALIDATE;
	cfg.event_schema = events ? &events_in : NULL;
	r = dw_engine_new(&cfg, &eng, diags);
	if (r != 0) {
		o->rejected = true;
		for (size_t i = 0; i < dw_diags_count(diags); i++) {
			struct dw_diagnostic dg;
			if (dw_diags_get(diags, i, &dg) != 0 || dg.severity != DW_DIAG_ERROR)
				continue;
			sb_printf(&o->diag, "  %s:%u:%u: %s\n", dg.file ? dg.file : "?", dg.line, dg.col,
				  dg.message ? dg.message : "?");
		}
		if (r != -EINVAL)
			sb_printf(&o->diag, "  dw_engine_new returned %d\n", r);
		dw_diags_free(diags);
		return 0;
	}
	dw_diags_free(diags);
	r = dw_trace_load(trace, strlen(trace), &t, err, sizeof err);
	if (r != 0) {
		o->trace_error = true;
		sb_printf(&o->diag, "  dw_trace_load: %d: %s\n", r, err);
		dw_engine_free(eng);
		return 0;
	}
	if ((r = dw_monitor_new(eng, &cref, &mo, err, sizeof err)) != 0 ||
	    (r = dw_monitor_new(eng, &cinc, &mi, err, sizeof err)) != 0) {
		fprintf(stderr, "temporal-diff: dw_monitor_new: %d: %s\n", r, err);
		dw_monitor_free(mo);
		dw_trace_free(t);
		dw_engine_free(eng);
		return r;
	}
	for (size_t i = 0; i < dw_trace_len(t); i++) {
		struct dw_decision dor, din;
		bool dec_o = false, dec_i = false, same;
		int ro, ri;

		memset(&dor, 0, sizeof dor);
		memset(&din, 0, sizeof din);
		ro = dw_monitor_feed_trace(mo, t, i, &dec_o, &dor);
		ri = dw_monitor_feed_trace(mi, t, i, &dec_i, &din);
		if (!dec_o && !dec_i && ro == ri)
			continue;
		same = dec_o == dec_i && ro == ri && (!dec_o || decision_eq(&dor, &din));
		outcome_grow(o);
		o->bad[o->n_dec] = !same;
		o->n_reasons[o->n_dec] = dec_o ? dor.n_reasons : 0;
		o->verdict[o->n_dec] = dec_o && dor.cedar == DW_ALLOW;
		if (dec_o && dor.n_errors)
			o->n_errors++;
		if (!same && o->n_bad++ == 0)
			o->first_bad = o->n_dec;
		if (report != NULL) {
			sb_printf(report, "%s @%" PRId64 " (time point %zu, decision %zu):\n",
				  same ? "   " : ">>>", dw_trace_ts(t, i), i, o->n_dec);
			sb_puts(report, "      oracle:      ");
			if (dec_o)
				render_decision(report, ro, &dor);
			else
				sb_printf(report, "(no decision, rc %d)", ro);
			sb_puts(report, "\n      incremental: ");
			if (dec_i)
				render_decision(report, ri, &din);
			else
				sb_printf(report, "(no decision, rc %d)", ri);
			sb_puts(report, "\n");
		}
		o->n_dec++;
		if (dec_o)
			dw_decision_clear(&dor);
		if (dec_i)
			dw_decision_clear(&din);
	}
	dw_monitor_free(mo);
	dw_monitor_free(mi);
	dw_trace_free(t);
	dw_engine_free(eng);
	return 0;
}

/* The probe: one unconstrained forbid per temporal leaf of c. */
static struct gnode *probe_rules(struct tcase *c, size_t *n_leaves)
{
	struct gnode **v = NULL, *l = gn_list(&c->ar, CAT_NONE, "", "\n\n", "", 0);
	size_t n = 0, cap = 0, k = 0;

	l->k = ar_alloc(&c->ar, 64 * sizeof *l->k);
	gn_collect(c->rules, &v, &n, &cap);
	for (size_t i = 0; i < n; i++) {
		if (v[i]->cat != CAT_LEAF || k == 64)
			continue;
		l->k[l->nk++] = gn_tmpl(&c->ar, CAT_RULE,
					"forbid (principal, action, resource)\n  when temporal { " KID " };",
					1, v[i]->k[0]);
		k++;
	}
	free(v);
	*n_leaves = k;
	return l;
}

/* ---- 7. minimisation and reports ------------------------------------------------ */

struct checker {
	struct sbuf pol, tr;
	struct outcome o;
	size_t runs;
};

/* Does c still show a disagreement? */
static bool still_fails(struct checker *k, struct tcase *c)
{
	sb_reset(&k->pol);
	sb_reset(&k->tr);
	render_policy(&k->pol, c);
	render_trace(&k->tr, c);
	k->runs++;
	if (run_text(k->pol.p, c->events, k->tr.p, &k->o, NULL) != 0)
		return false;
	return !k->o.rejected && !k->o.trace_error && k->o.n_bad > 0;
}

#define MIN_BUDGET 4000

/* Greedy: drop rules, drop events, simplify conditions and fields, simplify
 * events; repeat until nothing more goes. */
static void minimise(struct checker *k, struct tcase *c)
{
	bool changed = true;

	while (changed && k->runs < MIN_BUDGET) {
		changed = false;
		/* rules */
		for (size_t i = c->rules->nk; i-- > 0 && c->rules->nk > 1;) {
			struct gnode *saved = c->rules->k[i];
			memmove(&c->rules->k[i], &c->rules->k[i + 1],
				(c->rules->nk - i - 1) * sizeof *c->rules->k);
			c->rules->nk--;
			if (still_fails(k, c)) {
				changed = true;
				continue;
			}
			memmove(&c->rules->k[i + 1], &c->rules->k[i],
				(c->rules->nk - i) * sizeof *c->rules->k);
			c->rules->k[i] = saved;
			c->rules->nk++;
		}
		/* events: halves first, then one at a time */
		for (size_t chunk = c->n_ev / 2; chunk >= 1 && k->runs < MIN_BUDGET; chunk /= 2) {
			for (size_t s = 0; s < c->n_ev && k->runs < MIN_BUDGET; s += chunk) {
				size_t flipped = 0, lim = s + chunk < c->n_ev ? s + chunk : c->n_ev;
				bool *mine = xmalloc(lim - s);
				for (size_t i = s; i < lim; i++) {
					mine[i - s] = !c->ev[i].dropped;
					flipped += mine[i - s];
					c->ev[i].dropped = true;
				}
				if (flipped > 0 && still_fails(k, c))
					changed = true;
				else    /* undo exactly what this step dropped */
					for (size_t i = s; i < lim; i++)
						if (mine[i - s])
							c->ev[i].dropped = false;
				free(mine);
			}
			if (chunk == 1)
				break;
		}
		/* conditions: a node by one of the same kind it contains; list items */
		{
			struct gnode **v = NULL;
			size_t n = 0, cap = 0;
			gn_collect(c->rules, &v, &n, &cap);
			for (size_t i = 0; i < n && k->runs < MIN_BUDGET; i++) {
				struct gnode *nd = v[i], saved = *v[i];
				struct gnode **sub = NULL;
				size_t ns = 0, scap = 0;
				bool done = false;

				if (nd->list && nd != c->rules) {
					for (size_t j = nd->nk; j-- > 0 && nd->nk > nd->min;) {
						struct gnode *kid = nd->k[j];
						memmove(&nd->k[j], &nd->k[j + 1], (nd->nk - j - 1) * sizeof *nd->k);
						nd->nk--;
						if (still_fails(k, c)) {
							changed = done = true;
							continue;
						}
						memmove(&nd->k[j + 1], &nd->k[j], (nd->nk - j) * sizeof *nd->k);
						nd->k[j] = kid;
						nd->nk++;
					}
				}
				if (done)
					break;      /* the node list is stale now */
				if (nd->cat != CAT_COND && nd->cat != CAT_CEXPR)
					continue;
				for (uint32_t j = 0; j < nd->nk; j++)
					gn_collect(nd->k[j], &sub, &ns, &scap);
				for (size_t j = 0; j < ns && k->runs < MIN_BUDGET; j++) {
					if (sub[j]->cat != nd->cat)
						continue;
					*nd = *sub[j];
					if (still_fails(k, c)) {
						changed = done = true;
						break;
					}
					*nd = saved;
				}
				free(sub);
				if (done)
					break;
			}
			free(v);
		}
		/* timestamps: the smallest becomes 0 (only differences matter, unless
		 * the disagreement needs negative or huge values) */
		{
			int64_t lo = INT64_MAX;
			for (size_t i = 0; i < c->n_ev; i++)
				if (!c->ev[i].dropped && c->ev[i].ts < lo)
					lo = c->ev[i].ts;
			if (lo != INT64_MAX && lo != 0 && k->runs < MIN_BUDGET) {
				for (size_t i = 0; i < c->n_ev; i++)
					c->ev[i].ts -= lo;
				if (still_fails(k, c))
					changed = true;
				else
					for (size_t i = 0; i < c->n_ev; i++)
						c->ev[i].ts += lo;
			}
		}
		/* events: fewer fields */
		for (size_t i = 0; i < c->n_ev && k->runs < MIN_BUDGET; i++) {
			struct tev *e = &c->ev[i], saved = *e;
			for (int step = 0; step < 5; step++) {
				bool applies = false;
				switch (step) {
				case 0:
					applies = e->caller;
					e->caller = false;
					break;
				case 1:
					applies = e->in.has_opt || e->cin.has_opt;
					e->in.has_opt = e->cin.has_opt = false;
					break;
				case 2:
					applies = e->has_reqid;
					e->has_reqid = false;
					break;
				case 3:
					applies = e->kind != K_REQ && (e->ctx || e->scope);
					if (applies)
						e->ctx = e->scope = false;
					break;
				default:
					applies = memcmp(&e->in, &e->cin, sizeof e->in) != 0;
					e->in = e->cin;
					break;
				}
				if (!applies)
					continue;
				if (still_fails(k, c)) {
					changed = true;
					saved = *e;
				} else {
					*e = saved;
				}
			}
		}
	}
}

static void print_case(FILE *f, struct tcase *c, const char *title)
{
	struct sbuf p = { 0 }, t = { 0 };

	render_policy(&p, c);
	render_trace(&t, c);
	fprintf(f, "--- %s: schema.cedarschema\n%s", title, schema_text);
	if (c->events != NULL)
		fprintf(f, "--- %s: events.dwschema\n%s", title, c->events);
	else
		fprintf(f, "--- %s: events.dwschema: none (the default)\n", title);
	fprintf(f, "--- %s: policy.dw\n%s--- %s: trace.log\n%s", title, p.p, title, t.p);
	sb_fini(&p);
	sb_fini(&t);
}

/* Report a disagreement: minimise, then print the case and both decisions. */
static void report_failure(struct tcase *c, bool probe_only, uint64_t nfail)
{
	struct checker k;
	struct sbuf rep = { 0 };
	size_t rules0 = c->rules->nk, ev0 = c->n_ev;
	size_t live = 0;

	memset(&k, 0, sizeof k);
	if (probe_only) {
		/* the main rules hid it: the probe is the reproducer */
		size_t nl;
		c->rules = probe_rules(c, &nl);
	}
	printf("\n=== disagreement #%" PRIu64 ": case %zu (seed %#" PRIx64 ")%s\n", nfail, c->index,
	       c->seed, probe_only ? ", seen by the probe (one forbid per temporal leaf)" : "");
	if (!still_fails(&k, c)) {
		printf("(the disagreement did not reproduce: flaky?)\n");
		print_case(stdout, c, "original");
	} else {
		minimise(&k, c);
		for (size_t i = 0; i < c->n_ev; i++)
			live += !c->ev[i].dropped;
		printf("minimised in %zu runs: %zu of %zu rules, %zu of %zu events\n", k.runs,
		       (size_t)c->rules->nk, rules0, live, ev0);
		print_case(stdout, c, "minimised");
		sb_reset(&k.pol);
		sb_reset(&k.tr);
		render_policy(&k.pol, c);
		render_trace(&k.tr, c);
		run_text(k.pol.p, c->events, k.tr.p, &k.o, &rep);
		printf("--- decisions (>>> marks a disagreement)\n%s", rep.p ? rep.p : "");
	}
	fflush(stdout);
	sb_fini(&rep);
	sb_fini(&k.pol);
	sb_fini(&k.tr);
	outcome_fini(&k.o);
}

/* ---- crash reports ---------------------------------------------------------- */

/* The case being run, rendered, for a crash report (written with write(2)). */
static struct sbuf crash_text;

static void crash_dump(void)
{
	static const char head[] = "\ntemporal-diff: crashed while running this case:\n";
	ssize_t w;

	w = write(2, head, sizeof head - 1);
	if (crash_text.p != NULL)
		w = write(2, crash_text.p, crash_text.n);
	(void)w;
}

#ifndef __SANITIZE_ADDRESS__
static void crash_signal(int sig)
{
	crash_dump();
	signal(sig, SIG_DFL);
	raise(sig);
}
#endif

static void crash_arm(void)
{
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_set_death_callback(crash_dump);
#else
	signal(SIGSEGV, crash_signal);
	signal(SIGBUS, crash_signal);
	signal(SIGFPE, crash_signal);
	signal(SIGABRT, crash_signal);
#endif
}

/* ---- 8. the CLI ---------------------------------------------------------------- */

static void run_case(struct tcase *c, const struct opts *op, struct stats *st, uint64_t *nfail)
{
	struct sbuf pol = { 0 }, tr = { 0 }, ppol = { 0 };
	struct outcome mo, po;
	struct gnode *probe;
	size_t n_leaves = 0;
	bool probe_ok;

	memset(&mo, 0, sizeof mo);
	memset(&po, 0, sizeof po);
	render_policy(&pol, c);
	render_trace(&tr, c);
	probe = probe_rules(c, &n_leaves);
	gn_render(probe, &ppol);
	sb_reset(&crash_text);
	sb_printf(&crash_text, "--- case %zu (seed %#" PRIx64 ")\n--- events.dwschema\n%s\n"
		  "--- policy.dw\n%s\n--- trace.log\n%s", c->index, c->seed,
		  c->events ? c->events : "(default)\n", pol.p, tr.p);
	if (op->print_case) {
		printf("\n=== case %zu (seed %#" PRIx64 ")\n", c->index, c->seed);
		print_case(stdout, c, "case");
	}
	st->cases++;
	if (run_text(pol.p, c->events, tr.p, &mo, NULL) != 0)
		abort();
	if (mo.rejected || mo.trace_error) {
		if (mo.rejected)
			st->rejected++;
		else
			st->trace_errors++;
		if (op->verbose && st->shown_rejections < 8) {
			st->shown_rejections++;
			printf("\n--- %s (case %zu):\n%s%s\n%s",
			       mo.rejected ? "rejected policy" : "trace refused", c->index, mo.diag.p,
			       mo.rejected ? pol.p : "", mo.rejected ? "" : tr.p);
		}
		goto out;
	}
	probe_ok = false;
	if (n_leaves > 0) {
		if (run_text(ppol.p, c->events, tr.p, &po, NULL) != 0)
			abort();
		if (po.rejected || po.trace_error || po.n_dec != mo.n_dec) {
			st->probe_rejected++;
			if (op->verbose && st->shown_rejections < 8) {
				st->shown_rejections++;
				printf("\n--- rejected probe (case %zu):\n%s%s\n", c->index, po.diag.p,
				       ppol.p);
			}
		} else {
			probe_ok = true;
		}
	}
	if (op->print_case) {
		struct sbuf rep = { 0 };
		struct outcome tmp;
		memset(&tmp, 0, sizeof tmp);
		run_text(pol.p, c->events, tr.p, &tmp, &rep);
		printf("--- decisions\n%s", rep.p ? rep.p : "");
		sb_fini(&rep);
		outcome_fini(&tmp);
	}
	for (size_t i = 0; i < mo.n_dec; i++) {
		bool bad = mo.bad[i] || (probe_ok && po.bad[i]);
		st->decisions++;
		if (bad)
			st->failed++;
		else
			st->passed++;
		if (mo.verdict[i])
			st->allow++;
		else
			st->deny++;
		if (probe_ok) {
			size_t nt = po.n_reasons[i];
			st->dec_with_leaves++;
			st->leaf_evals += n_leaves;
			st->leaf_true += nt;
			st->dec_leaf_true += nt > 0;
			st->dec_leaf_false += nt < n_leaves;
			st->probe_failed += po.bad[i] && !mo.bad[i];
		}
	}
	st->with_errors += mo.n_errors;
	if (mo.n_bad > 0 || (probe_ok && po.n_bad > 0)) {
		++*nfail;
		report_failure(c, mo.n_bad == 0, *nfail);
	}
out:
	sb_fini(&pol);
	sb_fini(&tr);
	sb_fini(&ppol);
	outcome_fini(&mo);
	outcome_fini(&po);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct sbuf b = { 0 };
	char buf[4096];
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "temporal-diff: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	sb_putn(&b, "", 0);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sb_putn(&b, buf, n);
	fclose(f);
	return b.p;
}

/* --replay POLICY TRACE: one case from files, every decision of both. */
static int replay_files(const char *policy_path, const char *trace_path, const char *events_path)
{
	char *pol = read_file(policy_path), *tr = read_file(trace_path);
	char *ev = events_path ? read_file(events_path) : NULL;
	struct outcome o;
	struct sbuf rep = { 0 };
	int status = 2;

	memset(&o, 0, sizeof o);
	if (pol != NULL && tr != NULL && run_text(pol, ev, tr, &o, &rep) == 0) {
		if (o.rejected || o.trace_error) {
			printf("%s:\n%s", o.rejected ? "policy rejected" : "trace refused", o.diag.p);
		} else {
			printf("%s", rep.p ? rep.p : "");
			printf("%zu passed, %zu failed\n", o.n_dec - o.n_bad, o.n_bad);
			status = o.n_bad ? 1 : 0;
		}
	}
	free(pol);
	free(tr);
	free(ev);
	sb_fini(&rep);
	outcome_fini(&o);
	return status;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static int usage(void)
{
	fprintf(stderr, "usage: temporal-diff [--seed N] [--decisions N] [--cases N] [-v] [--print-case]\n"
			"       temporal-diff --replay POLICY.dw TRACE.log [EVENTS.dwschema]\n"
			"         (one case from files, over the generator's Cedar schema)\n");
	return 2;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	struct opts op = { 1, 50000, UINT64_MAX, false, false };
	struct stats st;
	bool have_dec = false, have_cases = false;
	uint64_t nfail = 0;
	struct timespec t0, t1;
	double secs, next_progress = 10.0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			op.verbose = true;
		} else if (strcmp(a, "--print-case") == 0) {
			op.print_case = true;
		} else if (strcmp(a, "--self-test") == 0) {
			self_test = true;
		} else if (strcmp(a, "--replay") == 0 && i + 2 < argc) {
			return replay_files(argv[i + 1], argv[i + 2], i + 3 < argc ? argv[i + 3] : NULL);
		} else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
			if (!parse_u64(argv[++i], &op.seed))
				return usage();
		} else if (strcmp(a, "--decisions") == 0 && i + 1 < argc) {
			if (!parse_u64(argv[++i], &op.decisions))
				return usage();
			have_dec = true;
		} else if (strcmp(a, "--cases") == 0 && i + 1 < argc) {
			if (!parse_u64(argv[++i], &op.cases))
				return usage();
			have_cases = true;
		} else {
			return usage();
		}
	}
	if (have_cases && !have_dec)
		op.decisions = UINT64_MAX;
	memset(&st, 0, sizeof st);
	crash_arm();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; st.decisions < op.decisions && i < op.cases && nfail < MAX_FAILURES; i++) {
		struct tcase c;
		uint64_t s = op.seed * 0x100000001b3ULL + i;

		gen_case(&c, splitmix64(&s), (size_t)i);
		run_case(&c, &op, &st, &nfail);
		case_fini(&c);
		/* progress, rarely: at most every 10 s (long conformance runs) */
		if ((i & 255) == 255) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
			if (secs >= next_progress) {
				fprintf(stderr, "temporal-diff: %.0f s: %" PRIu64 " decisions, %" PRIu64
					" cases, %" PRIu64 " failed\n", secs, st.decisions, st.cases,
					st.failed);
				next_progress = secs + 10.0;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	sb_fini(&crash_text);
	printf("\nseed %" PRIu64 ", %.1f s\n", op.seed, secs);
	printf("cases: %" PRIu64 " (rejected policies: %" PRIu64 " = %.2f%%, rejected probes: %" PRIu64
	       ", refused traces: %" PRIu64 ")\n", st.cases, st.rejected, pct(st.rejected, st.cases),
	       st.probe_rejected, st.trace_errors);
	printf("decisions: %" PRIu64 " (ALLOW %" PRIu64 " = %.1f%%, DENY %" PRIu64 " = %.1f%%, "
	       "with evaluation errors %" PRIu64 ")\n", st.decisions, st.allow,
	       pct(st.allow, st.decisions), st.deny, pct(st.deny, st.decisions), st.with_errors);
	printf("temporal leaves (probe, %" PRIu64 " decisions): %" PRIu64 " evaluations, %.1f%% true; "
	       "decisions with a leaf true %.1f%%, with a leaf false %.1f%%\n", st.dec_with_leaves,
	       st.leaf_evals, pct(st.leaf_true, st.leaf_evals), pct(st.dec_leaf_true, st.dec_with_leaves),
	       pct(st.dec_leaf_false, st.dec_with_leaves));
	if (st.probe_failed)
		printf("decisions failed only in the probe: %" PRIu64 "\n", st.probe_failed);
	printf("%" PRIu64 " passed, %" PRIu64 " failed\n", st.passed, st.failed);
	return st.failed == 0 && nfail == 0 ? 0 : 1;
}
