/* tstate.c - incremental evaluation of temporal leaves (see tstate.h).
 *
 * Compilation turns a leaf into a small tree of plan nodes: boolean structure
 * (and, not), conditions on the decision event alone (evaluated by the
 * interpreter over a one-event view), `previous` of such a condition, and
 * stateful atoms:
 *
 *   FORMERLY  formerly within W P{…}            P's match times, per key
 *   SINCE     !X{…} since within W Y{…}         Y's anchors, X's last violation
 *   AGG       count/sum for (…). where formerly within W (P{…} [&& tp(t)])
 *             occurrences (t among the for-binders) or distinct tuples
 *
 * used directly, under comparisons, or in the binding idiom
 * `exists (n: Long). (AGG == n && …n…)`.
 *
 * A predicate's arguments are split at compile time into what is checked when
 * an event arrives (field present, literals, `like`, wildcards) and what
 * correlates it with the decision (`context.*`, `principal…`): the field values
 * at the correlated arguments form the key under which the match is stored,
 * and a decision looks up the key made of its own values.  A correlated term
 * the decision cannot resolve matches nothing, exactly as the reference's
 * predicate matching says (docs/engine.md "Reference semantics").
 *
 * Per key, matches live in a window: entries sorted by timestamp with a cursor
 * at the first entry inside the last queried window, and running totals
 * (count, sum, distinct tuples with reference counts) over the entries past
 * the cursor.  Appends and queries whose bounds only move forward cost O(1)
 * amortised; anything else (an event older than the newest, a decision older
 * than the previous one) stays exact by binary search and a scan of the
 * window. */
#include "tstate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event_codec.h"
#include "tplan.h"

/* ---- compiled form ------------------------------------------------------------ */

enum dw_carg_how { CA_WILD = 1, CA_LIKE, CA_LIT, CA_CORR, CA_VAR };

/* At most this many correlated fields and variables per predicate: wider
 * predicates are left to the bounded scan. */
#define DW_MAX_KEY 16

struct dw_carg {
	struct dw_str path;
	uint8_t how;
	struct dw_tval lit;              /* CA_LIT */
	const struct dw_tterm *term;     /* CA_CORR (resolved against the decision) */
	struct dw_str pattern;           /* CA_LIKE: as written (the signature) */
	const struct dw_pattern *pat;    /* CA_LIKE: decoded */
	uint32_t slot;                   /* CA_VAR: variable slot */
};

struct dw_cpred {
	struct dw_str ns, action, kind;
	uint32_t n_args;
	struct dw_carg *args;
	uint32_t n_corr;                 /* key arity */
	uint32_t n_slots;                /* distinct variables */
	struct dw_str *slot_names;
};

enum dw_atom_kind { AT_FORMERLY = 1, AT_SINCE, AT_AGG };

struct dw_atom {
	uint32_t id;                     /* index into the monitor's state array */
	uint8_t kind;
	int64_t w;                       /* window, seconds */
	struct dw_cpred p;               /* FORMERLY: P; SINCE: the anchor Y; AGG: the body */
	struct dw_cpred x;               /* SINCE: the violation X */
	bool is_sum;
	bool occurrences;                /* AGG: tp(t) among the for-binders */
	uint32_t n_tuple;                /* AGG distinct mode: slots of the tuple */
	uint32_t *tuple;
	int32_t sum_slot;                /* AGG: summand slot, -1 */
	struct dw_atom *next;            /* all atoms of a plan */
};

enum dw_pk { PK_AND = 1, PK_NOT, PK_POINT, PK_PREVIOUS, PK_ATOM, PK_CMP, PK_EXISTS };

struct dw_opnd {
	const struct dw_tterm *term;     /* static term, or NULL */
	struct dw_atom *agg;             /* incremental aggregate, or NULL */
};

struct dw_tnode_plan {
	uint8_t kind;
	uint8_t cmp;                     /* PK_CMP */
	struct dw_tnode_plan *a, *b;
	const struct dw_tnode *node;     /* POINT, PREVIOUS (its operand), EXISTS (the rest) */
	int64_t w;                       /* PREVIOUS */
	struct dw_atom *atom;            /* ATOM, EXISTS (the aggregate) */
	struct dw_opnd l, r;             /* CMP */
	struct dw_str var;               /* EXISTS */
	struct dw_atom *atoms;           /* root only: every atom of the leaf */
};

struct dw_compiler {
	struct dw_arena *a;
	const char *why;
	bool key_local;
	bool needs_events;
	struct dw_atom *atoms;
	uint32_t n_atoms;
	int err;
};

static void *dw_cfail(struct dw_compiler *c, const char *why)
{
	if (c->why == NULL)
		c->why = why;
	return NULL;
}

/* Terms a decision resolves on its own (no variables, wildcards, aggregates). */
static bool dw_term_static(const struct dw_tterm *t, bool *literal)
{
	switch (t->kind) {
	case DW_TT_ENTITY: case DW_TT_INT: case DW_TT_DECIMAL: case DW_TT_STR: case DW_TT_BOOL:
		return true;
	case DW_TT_CONTEXT: case DW_TT_SCOPE:
		*literal = false;
		return true;
	case DW_TT_ARRAY:
		for (uint32_t i = 0; i < t->n_items; i++)
			if (!dw_term_static(&t->items[i], literal))
				return false;
		return true;
	default:
		return false;
	}
}

/* A condition on one event with no history, variables or aggregates, except
 * for the variable `allow` (the exists idiom's bound name). */
static bool dw_point(const struct dw_tnode *n, struct dw_str allow)
{
	bool lit;

	switch (n->kind) {
	case DW_TN_AND:
		return dw_point(n->a, allow) && dw_point(n->b, allow);
	case DW_TN_NOT:
		return dw_point(n->a, allow);
	case DW_TN_PRED:
		for (uint32_t i = 0; i < n->pred->n_fields; i++) {
			const struct dw_tterm *t = &n->pred->fields[i].term;
			if (n->pred->fields[i].like || t->kind == DW_TT_WILDCARD)
				continue;
			if (!dw_term_static(t, &lit))
				return false;
		}
		return true;
	case DW_TN_CMP:
		for (int s = 0; s < 2; s++) {
			const struct dw_tterm *t = s ? n->rhs : n->lhs;
			if (t->kind == DW_TT_VAR && allow.n && dw_str_eq(t->str, allow))
				continue;
			if (t->kind == DW_TT_WILDCARD)
				continue;
			if (!dw_term_static(t, &lit))
				return false;
		}
		return true;
	default:
		return false;
	}
}

static int dw_cpred_compile(struct dw_compiler *c, const struct dw_tpred *p, bool vars_ok,
			    struct dw_cpred *out)
{
	memset(out, 0, sizeof *out);
	out->ns = p->ns;
	out->action = p->action;
	out->kind = p->kind;
	out->n_args = p->n_fields;
	out->args = DW_NEWN(c->a, struct dw_carg, p->n_fields ? p->n_fields : 1);
	out->slot_names = DW_NEWN(c->a, struct dw_str, p->n_fields ? p->n_fields : 1);
	if (out->args == NULL || out->slot_names == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->n_fields; i++) {
		const struct dw_tfield *f = &p->fields[i];
		struct dw_carg *g = &out->args[i];
		bool literal = true;

		memset(g, 0, sizeof *g);
		g->path = f->path;
		if (f->like) {
			if (f->pat == NULL)
				return 1;   /* refused by tcheck; never evaluated */
			g->how = CA_LIKE;
			g->pattern = f->term.str;
			g->pat = f->pat;
		} else if (f->term.kind == DW_TT_WILDCARD) {
			g->how = CA_WILD;
		} else if (f->term.kind == DW_TT_VAR) {
			uint32_t s;
			if (!vars_ok)
				return 1;
			for (s = 0; s < out->n_slots; s++)
				if (dw_str_eq(out->slot_names[s], f->term.str))
					break;
			if (s == out->n_slots)
				out->slot_names[out->n_slots++] = f->term.str;
			g->how = CA_VAR;
			g->slot = s;
		} else if (dw_term_static(&f->term, &literal)) {
			if (literal) {
				g->how = CA_LIT;
				/* a literal resolves against nothing: no decision needed */
				if (!dw_tterm_resolve_static(c->a, NULL, &f->term, &g->lit))
					return -ENOMEM;
			} else {
				g->how = CA_CORR;
				g->term = &f->term;
				out->n_corr++;
			}
		} else {
			return 1;   /* aggregates in arguments, macro leftovers */
		}
	}
	/* keys and variables live in fixed arrays while an event is matched */
	if (out->n_corr > DW_MAX_KEY || out->n_slots > DW_MAX_KEY)
		return 1;
	return 0;
}

static struct dw_atom *dw_atom_new(struct dw_compiler *c, uint8_t kind, int64_t w)
{
	struct dw_atom *at = DW_NEW(c->a, struct dw_atom);

	if (at == NULL) {
		c->err = -ENOMEM;
		return NULL;
	}
	at->kind = kind;
	at->w = w;
	at->sum_slot = -1;
	at->id = c->n_atoms++;
	at->next = c->atoms;
	c->atoms = at;
	return at;
}

/* count/sum for (…). where formerly within W (P && tp(t)) | formerly within W P */
static struct dw_atom *dw_agg_compile(struct dw_compiler *c, const struct dw_tagg *g)
{
	const struct dw_tnode *body = g->where, *pred = NULL, *tp = NULL;
	struct dw_atom *at;
	int r;

	if (body == NULL || body->kind != DW_TN_FORMERLY)
		return dw_cfail(c, "an aggregate whose body is not `formerly within W (P && tp(t))`");
	body = body->a;
	if (body->kind == DW_TN_PRED) {
		pred = body;
	} else if (body->kind == DW_TN_AND) {
		if (body->a->kind == DW_TN_PRED && body->b->kind == DW_TN_TP)
			pred = body->a, tp = body->b;
		else if (body->b->kind == DW_TN_PRED && body->a->kind == DW_TN_TP)
			pred = body->b, tp = body->a;
	}
	if (pred == NULL)
		return dw_cfail(c, "an aggregate body other than one predicate and `tp`");
	if ((at = dw_atom_new(c, AT_AGG, g->where->window.seconds)) == NULL)
		return NULL;
	at->is_sum = g->is_sum;
	r = dw_cpred_compile(c, pred->pred, true, &at->p);
	if (r < 0) {
		c->err = r;
		return NULL;
	}
	if (r > 0)
		return dw_cfail(c, "a predicate argument the engine cannot key");
	if (tp != NULL) {
		for (uint32_t s = 0; s < at->p.n_slots; s++)
			if (dw_str_eq(at->p.slot_names[s], tp->binder.name))
				return dw_cfail(c, "`tp` of a variable also bound by a field");
	}
	at->tuple = DW_NEWN(c->a, uint32_t, g->n_for ? g->n_for : 1);
	if (at->tuple == NULL) {
		c->err = -ENOMEM;
		return NULL;
	}
	/* every for-binder is the tp variable or a field variable of P */
	for (uint32_t k = 0; k < g->n_for; k++) {
		struct dw_str name = g->for_binders[k].name;
		uint32_t s;
		if (tp != NULL && dw_str_eq(name, tp->binder.name)) {
			at->occurrences = true;
			continue;
		}
		for (s = 0; s < at->p.n_slots; s++)
			if (dw_str_eq(at->p.slot_names[s], name))
				break;
		if (s == at->p.n_slots)
			return dw_cfail(c, "a `for` binder the body does not bind");
		at->tuple[at->n_tuple++] = s;
	}
	/* every variable of P is projected (else it would be an outer binding) */
	for (uint32_t s = 0; s < at->p.n_slots; s++) {
		bool in = false;
		for (uint32_t k = 0; k < at->n_tuple; k++)
			in |= at->tuple[k] == s;
		if (!in)
			return dw_cfail(c, "a body variable bound outside the aggregate");
	}
	if (g->is_sum) {
		for (uint32_t s = 0; s < at->p.n_slots; s++)
			if (dw_str_eq(at->p.slot_names[s], g->summand.name))
				at->sum_slot = (int32_t)s;
		if (at->sum_slot < 0)
			return dw_cfail(c, "a summand not bound by the body's predicate");
	}
	return at;
}

static bool dw_opnd_compile(struct dw_compiler *c, const struct dw_tterm *t, struct dw_opnd *o)
{
	bool lit;

	o->term = NULL;
	o->agg = NULL;
	if (t->kind == DW_TT_AGG) {
		o->agg = dw_agg_compile(c, t->agg);
		return o->agg != NULL;
	}
	if (dw_term_static(t, &lit)) {
		o->term = t;
		return true;
	}
	return dw_cfail(c, "a comparison on a variable outside `exists`") != NULL;
}

static bool dw_has_agg(const struct dw_tnode *n)
{
	return n->kind == DW_TN_CMP && (n->lhs->kind == DW_TT_AGG || n->rhs->kind == DW_TT_AGG);
}

static struct dw_tnode_plan *dw_compile_node(struct dw_compiler *c, const struct dw_tnode *n)
{
	struct dw_tnode_plan *p;
	static const struct dw_str none = { NULL, 0 };
	int r;

	if (c->err)
		return NULL;
	p = DW_NEW(c->a, struct dw_tnode_plan);
	if (p == NULL) {
		c->err = -ENOMEM;
		return NULL;
	}
	if (!dw_has_agg(n) && dw_point(n, none)) {
		p->kind = PK_POINT;
		p->node = n;
		return p;
	}
	switch (n->kind) {
	case DW_TN_AND:
		p->kind = PK_AND;
		if ((p->a = dw_compile_node(c, n->a)) == NULL || (p->b = dw_compile_node(c, n->b)) == NULL)
			return NULL;
		return p;
	case DW_TN_NOT:
		p->kind = PK_NOT;
		return (p->a = dw_compile_node(c, n->a)) ? p : NULL;
	case DW_TN_PREVIOUS:
		if (c->key_local)
			return dw_cfail(c, "`previous` under key-local pins");
		if (!dw_point(n->a, none))
			return dw_cfail(c, "`previous` of a condition with history");
		p->kind = PK_PREVIOUS;
		p->node = n->a;
		p->w = n->window.seconds;
		c->needs_events = true;
		return p;
	case DW_TN_FORMERLY:
		if (n->a->kind != DW_TN_PRED)
			return dw_cfail(c, "`formerly` of something other than one predicate");
		p->kind = PK_ATOM;
		if ((p->atom = dw_atom_new(c, AT_FORMERLY, n->window.seconds)) == NULL)
			return NULL;
		r = dw_cpred_compile(c, n->a->pred, false, &p->atom->p);
		if (r < 0)
			c->err = r;
		if (r != 0)
			return dw_cfail(c, "a predicate argument the engine cannot key");
		return p;
	case DW_TN_SINCE:
		if (c->key_local)
			return dw_cfail(c, "`since` under key-local pins");
		if (n->a->kind != DW_TN_NOT || n->a->a->kind != DW_TN_PRED || n->b->kind != DW_TN_PRED)
			return dw_cfail(c, "`since` other than `!X since within W Y` on predicates");
		p->kind = PK_ATOM;
		if ((p->atom = dw_atom_new(c, AT_SINCE, n->window.seconds)) == NULL)
			return NULL;
		r = dw_cpred_compile(c, n->b->pred, false, &p->atom->p);
		if (r == 0)
			r = dw_cpred_compile(c, n->a->a->pred, false, &p->atom->x);
		if (r < 0)
			c->err = r;
		if (r != 0)
			return dw_cfail(c, "a predicate argument the engine cannot key");
		return p;
	case DW_TN_CMP:
		p->kind = PK_CMP;
		p->cmp = n->cmp;
		if (!dw_opnd_compile(c, n->lhs, &p->l) || !dw_opnd_compile(c, n->rhs, &p->r))
			return NULL;
		return p;
	case DW_TN_EXISTS: {
		/* exists (x). (AGG == x && rest(x)): flatten the && chain */
		const struct dw_tnode *chain[64], *first;
		const struct dw_tnode *q = n->a;
		size_t k = 0;
		struct dw_tnode *rest = NULL;
		const struct dw_tterm *agg, *var;

		while (q->kind == DW_TN_AND && k < DW_N_ELEMENTS(chain) - 1) {
			chain[k++] = q->b;
			q = q->a;
		}
		first = q;
		if (first->kind != DW_TN_CMP || first->cmp != DW_TC_EQ)
			return dw_cfail(c, "`exists` other than `(AGG == x && …)`");
		agg = first->lhs->kind == DW_TT_AGG ? first->lhs : first->rhs;
		var = agg == first->lhs ? first->rhs : first->lhs;
		if (agg->kind != DW_TT_AGG || var->kind != DW_TT_VAR ||
		    !dw_str_eq(var->str, n->binder.name))
			return dw_cfail(c, "`exists` other than `(AGG == x && …)`");
		/* the rest, in source order, as one && chain of point conditions */
		for (size_t i = k; i-- > 0;) {
			if (!dw_point(chain[i], n->binder.name))
				return dw_cfail(c, "`exists` whose conditions read history");
			if (rest == NULL) {
				rest = (struct dw_tnode *)chain[i];
			} else {
				struct dw_tnode *and = DW_NEW(c->a, struct dw_tnode);
				if (and == NULL) {
					c->err = -ENOMEM;
					return NULL;
				}
				and->kind = DW_TN_AND;
				and->a = rest;
				and->b = (struct dw_tnode *)chain[i];
				rest = and;
			}
		}
		p->kind = PK_EXISTS;
		p->var = n->binder.name;
		p->node = rest;
		if ((p->atom = dw_agg_compile(c, agg->agg)) == NULL)
			return NULL;
		return p;
	}
	default:
		return dw_cfail(c, "a shape the incremental engine does not keep");
	}
}

int dw_tstate_compile(struct dw_arena *a, const struct dw_tnode *cond, bool key_local,
		      struct dw_tnode_plan **out, const char **why, bool *needs_events)
{
	struct dw_compiler c;
	struct dw_tnode_plan *p;

	memset(&c, 0, sizeof c);
	c.a = a;
	c.key_local = key_local;
	p = dw_compile_node(&c, cond);
	if (c.err)
		return c.err;
	*needs_events = c.needs_events;
	if (p == NULL) {
		*out = NULL;
		*why = c.why ? c.why : "a shape the incremental engine does not keep";
		return 0;
	}
	p->atoms = c.atoms;
	*out = p;
	*why = NULL;
	return 0;
}

/* ---- keys and maps ---------------------------------------------------------- */

/* A tuple of values, deep-copied into one block. */
struct dw_key {
	uint64_t hash;
	uint32_t n;
	struct dw_tval v[];
};

static uint64_t dw_vals_hash(const struct dw_tval *v, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = dw_tval_hash(&v[i], h);
	return h;
}

static bool dw_vals_eq(const struct dw_tval *a, const struct dw_tval *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!dw_tval_eq(&a[i], &b[i]))
			return false;
	return true;
}

static struct dw_key *dw_key_new(const struct dw_tval *v, uint32_t n, uint64_t hash)
{
	size_t size = sizeof(struct dw_key) + n * sizeof(struct dw_tval);
	struct dw_key *k;
	char *buf;

	size = (size + 7) & ~(size_t)7;
	for (uint32_t i = 0; i < n; i++)
		size += dw_tval_deep_size(&v[i]);
	k = malloc(size);
	if (k == NULL)
		return NULL;
	k->hash = hash;
	k->n = n;
	buf = (char *)k + ((sizeof(struct dw_key) + n * sizeof(struct dw_tval) + 7) & ~(size_t)7);
	for (uint32_t i = 0; i < n; i++)
		dw_tval_deep_copy(&v[i], &k->v[i], &buf);
	return k;
}

/* Open addressing with linear probing and backward-shift deletion. */
struct dw_kslot {
	struct dw_key *k;
	void *v;
};

struct dw_kmap {
	struct dw_kslot *s;
	uint32_t cap, n;          /* cap: a power of two, or 0 */
};

static struct dw_kslot *dw_kmap_find(const struct dw_kmap *m, const struct dw_tval *v, uint32_t n,
				     uint64_t h)
{
	if (m->n == 0)
		return NULL;
	for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct dw_kslot *s = &m->s[i];
		if (s->k == NULL)
			return NULL;
		if (s->k->hash == h && s->k->n == n && dw_vals_eq(s->k->v, v, n))
			return s;
	}
}

static int dw_kmap_grow(struct dw_kmap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 8;
	struct dw_kslot *s = calloc(cap, sizeof *s);

	if (s == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;
		if (m->s[i].k == NULL)
			continue;
		for (j = (uint32_t)m->s[i].k->hash & (cap - 1); s[j].k != NULL; j = (j + 1) & (cap - 1))
			;
		s[j] = m->s[i];
	}
	free(m->s);
	m->s = s;
	m->cap = cap;
	return 0;
}

/* Insert k (not present) with value v; the map owns k. */
static int dw_kmap_put(struct dw_kmap *m, struct dw_key *k, void *v)
{
	uint32_t i;

	if ((m->n + 1) * 4 > m->cap * 3 && dw_kmap_grow(m) != 0)
		return -ENOMEM;
	for (i = (uint32_t)k->hash & (m->cap - 1); m->s[i].k != NULL; i = (i + 1) & (m->cap - 1))
		;
	m->s[i].k = k;
	m->s[i].v = v;
	m->n++;
	return 0;
}

/* Remove the slot s (frees its key, not its value). */
static void dw_kmap_del(struct dw_kmap *m, struct dw_kslot *s)
{
	uint32_t i = (uint32_t)(s - m->s), j = i;

	free(s->k);
	for (;;) {
		uint32_t home;
		m->s[i].k = NULL;
		m->s[i].v = NULL;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (m->s[j].k == NULL) {
				m->n--;
				return;
			}
			home = (uint32_t)m->s[j].k->hash & (m->cap - 1);
			/* can the entry at j move back to i?  only if its home is not in (i, j] */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		m->s[i] = m->s[j];
		i = j;
	}
}

static void dw_kmap_free(struct dw_kmap *m, void (*free_v)(void *))
{
	for (uint32_t i = 0; i < m->cap; i++) {
		if (m->s[i].k == NULL)
			continue;
		free(m->s[i].k);
		if (free_v)
			free_v(m->s[i].v);
	}
	free(m->s);
	memset(m, 0, sizeof *m);
}

/* ---- windows ------------------------------------------------------------------ */

/* A distinct tuple of a window: references from entries, and how many of them
 * are past the cursor. */
struct dw_tref {
	struct dw_key *key;              /* owned by the window's refs map */
	uint32_t total, inwin;           /* references: all, and entries past the cursor */
	uint32_t pend;                   /* of total: pending responses */
	bool v_int;
	int64_t v;
};

struct dw_went {
	int64_t ts;
	int64_t v;                       /* summand (occurrence mode) */
	bool v_int;
	struct dw_tref *tuple;           /* distinct mode */
};

/* Header of every keyed object (windows, anchor lists, violations): the key it
 * is filed under, and how many expiry-queue entries still point at it (it is
 * freed when it is both out of its map and unreferenced). */
struct dw_kobj {
	struct dw_key *key;              /* owned by the map while filed */
	uint32_t fifo_refs;
	bool dead;                       /* removed from its map */
};

struct dw_win {
	struct dw_kobj h;
	struct dw_went *e;
	uint32_t off, n, cap;            /* e[off .. off+n), sorted by ts */
	uint32_t cur;                    /* relative: first entry with ts >= last_lo */
	int64_t last_lo;
	uint32_t fifo_refs;              /* references from the atom's expiry queue */
	__int128 sum;                    /* occurrences past the cursor */
	struct dw_kmap refs;             /* distinct: tuple -> struct dw_tref */
	uint32_t ndistinct;
	__int128 dsum;
	/* pending responses (requests permitted, outcome not recorded): not in
	 * time order and never expired; every query counts them until resolved */
	struct dw_wpend {
		uint64_t ticket;
		int64_t v;
		bool v_int;
		struct dw_tref *tuple;
	} *pend;
	uint32_t n_pend, cap_pend;
};

static struct dw_went *dw_win_at(const struct dw_win *w, uint32_t i)
{
	return &w->e[w->off + i];
}

static void dw_win_enter(struct dw_win *w, struct dw_went *e)
{
	if (e->v_int)
		w->sum += e->v;
	if (e->tuple != NULL && e->tuple->inwin++ == 0) {
		w->ndistinct++;
		if (e->tuple->v_int)
			w->dsum += e->tuple->v;
	}
}

static void dw_win_leave(struct dw_win *w, struct dw_went *e)
{
	if (e->v_int)
		w->sum -= e->v;
	if (e->tuple != NULL && --e->tuple->inwin == 0) {
		w->ndistinct--;
		if (e->tuple->v_int)
			w->dsum -= e->tuple->v;
	}
}

/* First index with ts >= t (lower) or > t (upper). */
static uint32_t dw_win_bound(const struct dw_win *w, int64_t t, bool upper)
{
	uint32_t lo = 0, hi = w->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int64_t x = dw_win_at(w, mid)->ts;
		if (x < t || (upper && x == t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int dw_win_insert(struct dw_win *w, const struct dw_went *ne)
{
	uint32_t idx;

	if (w->off + w->n == w->cap) {
		if (w->off > w->n) {
			memmove(w->e, w->e + w->off, w->n * sizeof *w->e);
			w->off = 0;
		} else {
			uint32_t cap = w->cap ? w->cap * 2 : 4;
			struct dw_went *e = realloc(w->e, cap * sizeof *e);
			if (e == NULL)
				return -ENOMEM;
			w->e = e;
			w->cap = cap;
		}
	}
	if (w->n == 0 || ne->ts >= dw_win_at(w, w->n - 1)->ts)
		idx = w->n;
	else
		idx = dw_win_bound(w, ne->ts, true);
	if (idx < w->n)
		memmove(dw_win_at(w, idx + 1), dw_win_at(w, idx), (w->n - idx) * sizeof *w->e);
	*dw_win_at(w, idx) = *ne;
	w->n++;
	if (ne->ts < w->last_lo)
		w->cur++;                /* lands before the cursor (idx <= cur) */
	else
		dw_win_enter(w, dw_win_at(w, idx));
	return 0;
}

static void dw_tref_release(struct dw_win *w, struct dw_tref *t)
{
	struct dw_kslot *s;

	if (t == NULL || --t->total != 0)
		return;
	s = dw_kmap_find(&w->refs, t->key->v, t->key->n, t->key->hash);
	if (s != NULL)
		dw_kmap_del(&w->refs, s);
	free(t);
}

/* Drop entries older than thr from the front. */
static void dw_win_expire(struct dw_win *w, int64_t thr)
{
	while (w->n > 0 && w->e[w->off].ts < thr) {
		struct dw_went *e = &w->e[w->off];
		if (w->cur > 0)
			w->cur--;
		else
			dw_win_leave(w, e);
		dw_tref_release(w, e->tuple);
		w->off++;
		w->n--;
	}
	if (w->n == 0)
		w->off = 0;
}

/* Move the cursor to lo (lo >= last_lo). */
static void dw_win_advance(struct dw_win *w, int64_t lo)
{
	while (w->cur < w->n && dw_win_at(w, w->cur)->ts < lo) {
		dw_win_leave(w, dw_win_at(w, w->cur));
		w->cur++;
	}
	w->last_lo = lo;
}

/* Is there an entry with lo <= ts <= hi? */
static bool dw_win_any(const struct dw_win *w, int64_t lo, int64_t hi)
{
	uint32_t i;

	if (w->n == 0 || lo > hi)
		return false;
	if (dw_win_at(w, w->n - 1)->ts <= hi)
		return dw_win_at(w, w->n - 1)->ts >= lo;
	i = dw_win_bound(w, lo, false);
	return i < w->n && dw_win_at(w, i)->ts <= hi;
}

struct dw_aggval {
	uint64_t count, distinct;
	__int128 sum, dsum;
};

/* Pending responses count in every query (they are not in time order and
 * never expire): occurrences, sums, and tuples not already counted. */
static void dw_win_add_pending(const struct dw_win *w, struct dw_aggval *out,
			       bool (*counted)(const struct dw_tref *t, void *arg), void *arg)
{
	for (uint32_t k = 0; k < w->n_pend; k++) {
		const struct dw_wpend *p = &w->pend[k];
		bool seen = false;

		out->count++;
		if (p->v_int)
			out->sum += p->v;
		if (p->tuple == NULL)
			continue;
		for (uint32_t j = 0; j < k && !seen; j++)
			seen = w->pend[j].tuple == p->tuple;
		if (seen || counted(p->tuple, arg))
			continue;
		out->distinct++;
		if (p->tuple->v_int)
			out->dsum += p->tuple->v;
	}
}

static bool dw_counted_inwin(const struct dw_tref *t, void *arg)
{
	(void)arg;
	return t->inwin > 0;
}

struct dw_seen {
	const struct dw_tref **v;
	uint32_t cap;
};

static bool dw_counted_seen(const struct dw_tref *t, void *arg)
{
	const struct dw_seen *sn = arg;

	if (sn->v == NULL)
		return false;
	for (uint32_t h = (uint32_t)((uintptr_t)t >> 4) & (sn->cap - 1);; h = (h + 1) & (sn->cap - 1)) {
		if (sn->v[h] == t)
			return true;
		if (sn->v[h] == NULL)
			return false;
	}
}

/* Totals over lo <= ts <= hi: O(1) amortised when bounds move forward. */
static int dw_win_query(struct dw_win *w, int64_t lo, int64_t hi, struct dw_arena *scratch,
			struct dw_aggval *out)
{
	struct dw_seen sn = { NULL, 0 };
	uint32_t a, b;

	memset(out, 0, sizeof *out);
	if (w->n == 0 || lo > hi) {
		dw_win_add_pending(w, out, dw_counted_seen, &sn);
		return 0;
	}
	if (lo >= w->last_lo && dw_win_at(w, w->n - 1)->ts <= hi) {
		dw_win_advance(w, lo);
		out->count = w->n - w->cur;
		out->sum = w->sum;
		out->distinct = w->ndistinct;
		out->dsum = w->dsum;
		dw_win_add_pending(w, out, dw_counted_inwin, NULL);
		return 0;
	}
	/* irregular: scan the range */
	a = dw_win_bound(w, lo, false);
	b = dw_win_bound(w, hi, true);
	out->count = b > a ? b - a : 0;
	for (uint32_t i = a; i < b; i++) {
		const struct dw_went *e = dw_win_at(w, i);
		if (e->v_int)
			out->sum += e->v;
		if (e->tuple == NULL)
			continue;
		if (sn.v == NULL) {
			for (sn.cap = 16; sn.cap < 2 * (b - a); sn.cap *= 2)
				;
			sn.v = dw_arena_zalloc(scratch, sn.cap * sizeof *sn.v, _Alignof(void *));
			if (sn.v == NULL)
				return -ENOMEM;
		}
		for (uint32_t h = (uint32_t)((uintptr_t)e->tuple >> 4) & (sn.cap - 1);;
		     h = (h + 1) & (sn.cap - 1)) {
			if (sn.v[h] == e->tuple)
				break;
			if (sn.v[h] == NULL) {
				sn.v[h] = e->tuple;
				out->distinct++;
				if (e->tuple->v_int)
					out->dsum += e->tuple->v;
				break;
			}
		}
	}
	dw_win_add_pending(w, out, dw_counted_seen, &sn);
	return 0;
}

static void dw_win_free(void *p)
{
	struct dw_win *w = p;

	if (w == NULL)
		return;
	/* every tuple is in the refs map, whoever references it */
	for (uint32_t i = 0; i < w->refs.cap; i++)
		if (w->refs.s[i].k != NULL)
			free(w->refs.s[i].v);
	dw_kmap_free(&w->refs, NULL);
	free(w->pend);
	free(w->e);
	free(w);
}

/* ---- since: anchors and violations --------------------------------------------- */

struct dw_anchor {
	uint64_t pos;
	int64_t ts;
};

struct dw_anchors {
	struct dw_kobj h;
	struct dw_anchor *e;
	uint32_t off, n, cap;            /* in position order */
	bool monotone;                   /* timestamps never decreased */
};

struct dw_viol {
	struct dw_kobj h;
	uint64_t pos;                    /* latest violation */
};

static void dw_anchors_free(void *p)
{
	struct dw_anchors *a = p;

	if (a != NULL) {
		free(a->e);
		free(a);
	}
}

/* ---- the state of a monitor ------------------------------------------------------ */

/* Expiry queue: objects in arrival order with the time and position of the
 * entry they received. */
struct dw_qent {
	int64_t ts;
	uint64_t pos;
	struct dw_kobj *obj;
};

struct dw_queue {
	struct dw_qent *e;
	size_t off, n, cap;
};

struct dw_astate {
	const struct dw_atom *at;
	struct dw_kmap keys;             /* key -> dw_win (FORMERLY, AGG) or dw_anchors (SINCE) */
	struct dw_queue q;               /* expiry of keys' entries */
	struct dw_kmap viol;             /* SINCE: X key -> dw_viol */
	struct dw_queue vq;
	int64_t global_viol;             /* SINCE with an uncorrelated X: latest position, -1 */
};

enum { ROLE_P = 0, ROLE_X = 1 };

struct dw_route {
	uint32_t n, cap;
	struct { uint32_t st; uint8_t role; } *v;
};

struct dw_tstate {
	const struct dw_tplan *plan;
	uint32_t n_states;
	struct dw_astate *st;
	uint32_t *leaf_base;             /* first atom of each leaf (in slot_of) */
	uint32_t *slot_of;               /* atom -> state: identical atoms share one */
	struct dw_kmap routes;           /* (ns, action, kind) -> dw_route */
	struct dw_kmap pending;          /* ticket -> struct dw_pend */
	uint32_t *active;                /* states with queued entries (expiry visits only these) */
	uint32_t n_active;
	bool *is_active;
	size_t bytes;
};

static void dw_activate(struct dw_tstate *s, struct dw_astate *a)
{
	uint32_t i = (uint32_t)(a - s->st);

	if (!s->is_active[i]) {
		s->is_active[i] = true;
		s->active[s->n_active++] = i;
	}
}

static int dw_queue_push(struct dw_queue *q, int64_t ts, uint64_t pos, struct dw_kobj *obj)
{
	if (q->off + q->n == q->cap) {
		if (q->off > q->n) {
			memmove(q->e, q->e + q->off, q->n * sizeof *q->e);
			q->off = 0;
		} else {
			size_t cap = q->cap ? q->cap * 2 : 16;
			struct dw_qent *e = realloc(q->e, cap * sizeof *e);
			if (e == NULL)
				return -ENOMEM;
			q->e = e;
			q->cap = cap;
		}
	}
	q->e[q->off + q->n].ts = ts;
	q->e[q->off + q->n].pos = pos;
	q->e[q->off + q->n].obj = obj;
	q->n++;
	obj->fifo_refs++;
	return 0;
}

static void dw_route_free(void *p)
{
	struct dw_route *r = p;

	if (r != NULL) {
		free(r->v);
		free(r);
	}
}

static int dw_route_add(struct dw_tstate *s, const struct dw_cpred *p, uint32_t st, uint8_t role)
{
	struct dw_tval k[3] = { dw_tv_string(p->ns), dw_tv_string(p->action), dw_tv_string(p->kind) };
	uint64_t h = dw_vals_hash(k, 3);
	struct dw_kslot *slot = dw_kmap_find(&s->routes, k, 3, h);
	struct dw_route *r;

	if (slot != NULL) {
		r = slot->v;
	} else {
		struct dw_key *key = dw_key_new(k, 3, h);
		r = calloc(1, sizeof *r);
		if (key == NULL || r == NULL || dw_kmap_put(&s->routes, key, r) != 0) {
			free(key);
			free(r);
			return -ENOMEM;
		}
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 4;
		void *v = realloc(r->v, cap * sizeof *r->v);
		if (v == NULL)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n].st = st;
	r->v[r->n].role = role;
	r->n++;
	return 0;
}

/* What makes two atoms the same state: everything observation and expiry
 * read (not what a decision compares the result with).  State is a function of
 * the history alone, so rules that differ only in a threshold or in their
 * other conditions share one window. */
static int dw_sig_term(struct dw_buf *b, const struct dw_tterm *t)
{
	int r;

	if ((r = dw_buf_putc(b, (char)t->kind)) || (r = dw_buf_putc(b, (char)t->root)) ||
	    (r = dw_buf_putc(b, (char)t->b)) || (r = dw_buf_put(b, (const char *)&t->i, 8)) ||
	    (r = dw_buf_put(b, (const char *)&t->str.n, 4)) || (r = dw_buf_put(b, t->str.p, t->str.n)) ||
	    (r = dw_buf_put(b, (const char *)&t->path.n, 4)) || (r = dw_buf_put(b, t->path.p, t->path.n)))
		return r;
	for (uint32_t i = 0; i < t->n_items; i++)
		if ((r = dw_sig_term(b, &t->items[i])) != 0)
			return r;
	return dw_buf_putc(b, ';');
}

static int dw_sig_pred(struct dw_buf *b, const struct dw_cpred *p)
{
	struct dw_str parts[3] = { p->ns, p->action, p->kind };
	int r = 0;

	for (int i = 0; r == 0 && i < 3; i++)
		if ((r = dw_buf_put(b, (const char *)&parts[i].n, 4)) == 0)
			r = dw_buf_put(b, parts[i].p, parts[i].n);
	for (uint32_t i = 0; r == 0 && i < p->n_args; i++) {
		const struct dw_carg *g = &p->args[i];
		if ((r = dw_buf_putc(b, (char)g->how)) || (r = dw_buf_put(b, (const char *)&g->path.n, 4)) ||
		    (r = dw_buf_put(b, g->path.p, g->path.n)))
			break;
		switch (g->how) {
		case CA_LIT: r = dw_tval_encode(b, &g->lit); break;
		case CA_LIKE:
			if ((r = dw_buf_put(b, (const char *)&g->pattern.n, 4)) == 0)
				r = dw_buf_put(b, g->pattern.p, g->pattern.n);
			break;
		case CA_CORR: r = dw_sig_term(b, g->term); break;
		case CA_VAR: r = dw_buf_put(b, (const char *)&g->slot, 4); break;
		default: break;
		}
	}
	return r;
}

static int dw_atom_sig(struct dw_buf *b, const struct dw_atom *at)
{
	int r;

	b->n = 0;
	if ((r = dw_buf_putc(b, (char)at->kind)) || (r = dw_buf_put(b, (const char *)&at->w, 8)) ||
	    (r = dw_buf_putc(b, (char)at->is_sum)) || (r = dw_buf_putc(b, (char)at->occurrences)) ||
	    (r = dw_buf_put(b, (const char *)&at->sum_slot, 4)) ||
	    (r = dw_buf_put(b, (const char *)&at->n_tuple, 4)) ||
	    (r = dw_buf_put(b, (const char *)at->tuple, at->n_tuple * 4)) || (r = dw_sig_pred(b, &at->p)))
		return r;
	if (at->kind == AT_SINCE && ((r = dw_buf_putc(b, 'x')) || (r = dw_sig_pred(b, &at->x))))
		return r;
	return 0;
}

int dw_tstate_new(const struct dw_tplan *plan, struct dw_tstate **out)
{
	struct dw_tstate *s = calloc(1, sizeof *s);
	struct dw_kmap sigs = { NULL, 0, 0 };
	struct dw_buf b = { NULL, 0, 0 };
	uint32_t n = 0, n_states = 0;

	if (s == NULL)
		return -ENOMEM;
	s->plan = plan;
	s->leaf_base = calloc(plan->n_leaves ? plan->n_leaves : 1, sizeof *s->leaf_base);
	if (s->leaf_base == NULL)
		goto enomem;
	for (uint32_t i = 0; i < plan->n_leaves; i++) {
		s->leaf_base[i] = n;
		if (plan->leaves[i].inc != NULL)
			for (const struct dw_atom *at = plan->leaves[i].inc->atoms; at; at = at->next)
				n++;
	}
	s->slot_of = calloc(n ? n : 1, sizeof *s->slot_of);
	s->st = calloc(n ? n : 1, sizeof *s->st);
	s->active = calloc(n ? n : 1, sizeof *s->active);
	s->is_active = calloc(n ? n : 1, sizeof *s->is_active);
	if (s->slot_of == NULL || s->st == NULL || s->active == NULL || s->is_active == NULL)
		goto enomem;
	for (uint32_t i = 0; i < plan->n_leaves; i++) {
		if (plan->leaves[i].inc == NULL)
			continue;
		for (const struct dw_atom *at = plan->leaves[i].inc->atoms; at; at = at->next) {
			struct dw_tval sig;
			struct dw_kslot *slot;
			uint32_t k;
			if (dw_atom_sig(&b, at) != 0)
				goto enomem;
			sig = dw_tv_string(dw_str_make(b.p, b.n));
			slot = dw_kmap_find(&sigs, &sig, 1, dw_vals_hash(&sig, 1));
			if (slot != NULL) {
				s->slot_of[s->leaf_base[i] + at->id] = (uint32_t)(uintptr_t)slot->v;
				continue;
			}
			k = n_states++;
			{
				struct dw_key *key = dw_key_new(&sig, 1, dw_vals_hash(&sig, 1));
				if (key == NULL || dw_kmap_put(&sigs, key, (void *)(uintptr_t)k) != 0) {
					free(key);
					goto enomem;
				}
			}
			s->slot_of[s->leaf_base[i] + at->id] = k;
			s->st[k].at = at;
			s->st[k].global_viol = -1;
			if (dw_route_add(s, &at->p, k, ROLE_P) != 0)
				goto enomem;
			if (at->kind == AT_SINCE && dw_route_add(s, &at->x, k, ROLE_X) != 0)
				goto enomem;
		}
	}
	s->n_states = n_states;
	dw_kmap_free(&sigs, NULL);
	dw_buf_free(&b);
	*out = s;
	return 0;
enomem:
	dw_kmap_free(&sigs, NULL);
	dw_buf_free(&b);
	s->n_states = n_states;
	dw_tstate_free(s);
	return -ENOMEM;
}

static void dw_kobj_put(struct dw_kobj *o, void (*free_fn)(void *))
{
	if (o->dead && o->fifo_refs == 0)
		free_fn(o);
}

static void dw_astate_fini(struct dw_astate *a)
{
	void (*free_fn)(void *) = a->at && a->at->kind == AT_SINCE ? dw_anchors_free : dw_win_free;

	/* objects still filed are freed with their map; dead ones by their queue */
	for (size_t i = 0; i < a->q.n; i++) {
		struct dw_kobj *o = a->q.e[a->q.off + i].obj;
		o->fifo_refs--;
		dw_kobj_put(o, free_fn);
	}
	for (size_t i = 0; i < a->vq.n; i++) {
		struct dw_kobj *o = a->vq.e[a->vq.off + i].obj;
		o->fifo_refs--;
		dw_kobj_put(o, free);
	}
	for (uint32_t i = 0; i < a->keys.cap; i++)
		if (a->keys.s[i].k != NULL)
			((struct dw_kobj *)a->keys.s[i].v)->fifo_refs = 0;
	for (uint32_t i = 0; i < a->viol.cap; i++)
		if (a->viol.s[i].k != NULL)
			((struct dw_kobj *)a->viol.s[i].v)->fifo_refs = 0;
	dw_kmap_free(&a->keys, free_fn);
	dw_kmap_free(&a->viol, free);
	free(a->q.e);
	free(a->vq.e);
}

void dw_tstate_free(struct dw_tstate *s)
{
	if (s == NULL)
		return;
	/* pending entries hold references into windows: release them first */
	for (uint32_t i = 0; i < s->pending.cap;) {
		/* a deletion shifts later slots back into i: look at i again */
		if (s->pending.s[i].k != NULL)
			dw_tstate_pending_del(s, (uint64_t)s->pending.s[i].k->v[0].i);
		else
			i++;
	}
	dw_kmap_free(&s->pending, NULL);
	for (uint32_t i = 0; s->st != NULL && i < s->n_states; i++)
		dw_astate_fini(&s->st[i]);
	dw_kmap_free(&s->routes, dw_route_free);
	free(s->st);
	free(s->slot_of);
	free(s->active);
	free(s->is_active);
	free(s->leaf_base);
	free(s);
}

/* Remove a keyed object from its map (it lives on while queued). */
static void dw_kobj_unfile(struct dw_kmap *m, struct dw_kobj *o, void (*free_fn)(void *))
{
	struct dw_kslot *slot = dw_kmap_find(m, o->key->v, o->key->n, o->key->hash);

	if (slot != NULL && slot->v == o)
		dw_kmap_del(m, slot);    /* frees the key */
	o->key = NULL;
	o->dead = true;
	dw_kobj_put(o, free_fn);
}

/* Find or create the object filed under vals. */
static struct dw_kobj *dw_kobj_get(struct dw_kmap *m, const struct dw_tval *vals, uint32_t n,
				   size_t size, bool *created)
{
	uint64_t h = dw_vals_hash(vals, n);
	struct dw_kslot *slot = dw_kmap_find(m, vals, n, h);
	struct dw_kobj *o;
	struct dw_key *key;

	*created = false;
	if (slot != NULL)
		return slot->v;
	*created = true;
	o = calloc(1, size);
	key = dw_key_new(vals, n, h);
	if (o == NULL || key == NULL || dw_kmap_put(m, key, o) != 0) {
		free(o);
		free(key);
		return NULL;
	}
	o->key = key;
	return o;
}

/* ---- observing events ------------------------------------------------------------- */

struct dw_pmatch {
	struct dw_tval key[DW_MAX_KEY];
	struct dw_tval slot[DW_MAX_KEY];
	bool bound[DW_MAX_KEY];
};

/* The static part of predicate matching on an arriving event; fills key and
 * variable slots.
 * pending: ev is a request standing for its future response, whose `output.*`
 * fields are not known yet: literals, wildcards and patterns on them are taken
 * to match, and keys or variables on them cannot be known (no match). */
static bool dw_pmatch(const struct dw_cpred *p, const struct dw_event *ev, bool pending,
		      struct dw_pmatch *m)
{
	uint32_t nk = 0;

	if (p->n_corr > DW_N_ELEMENTS(m->key) || p->n_slots > DW_N_ELEMENTS(m->slot))
		return false;
	memset(m->bound, 0, sizeof m->bound);
	for (uint32_t i = 0; i < p->n_args; i++) {
		const struct dw_carg *g = &p->args[i];
		const struct dw_tval *fv = dw_tval_path(&ev->logged, g->path);

		if (fv == NULL) {
			bool output = g->path.n > 7 && memcmp(g->path.p, "output.", 7) == 0;
			if (pending && output &&
			    (g->how == CA_WILD || g->how == CA_LIKE || g->how == CA_LIT))
				continue;
			return false;
		}
		switch (g->how) {
		case CA_WILD:
			break;
		case CA_LIKE:
			if (fv->kind != DW_TV_STRING || !dw_pattern_match(g->pat, fv->s))
				return false;
			break;
		case CA_LIT:
			if (!dw_tval_eq(&g->lit, fv))
				return false;
			break;
		case CA_CORR:
			m->key[nk++] = *fv;
			break;
		case CA_VAR:
			if (m->bound[g->slot]) {
				if (!dw_tval_eq(&m->slot[g->slot], fv))
					return false;
			} else {
				m->slot[g->slot] = *fv;
				m->bound[g->slot] = true;
			}
			break;
		}
	}
	return true;
}

/* The window filed under the match's key (created empty). */
static struct dw_win *dw_win_for(struct dw_astate *a, const struct dw_pmatch *m)
{
	bool created;
	struct dw_win *w = (struct dw_win *)dw_kobj_get(&a->keys, m->key, a->at->p.n_corr,
							sizeof *w, &created);

	if (w != NULL && created)
		w->last_lo = INT64_MIN;
	return w;
}

/* The summand and the tuple a match contributes (the tuple interned in w). */
static int dw_win_contrib(const struct dw_atom *at, struct dw_win *w, const struct dw_pmatch *m,
			  int64_t *v, bool *v_int, struct dw_tref **tuple)
{
	*v = 0;
	*v_int = false;
	*tuple = NULL;
	if (at->kind == AT_AGG && at->occurrences && at->sum_slot >= 0) {
		const struct dw_tval *x = &m->slot[at->sum_slot];
		*v_int = x->kind == DW_TV_INT;
		*v = *v_int ? x->i : 0;
	}
	if (at->kind == AT_AGG && !at->occurrences) {
		struct dw_tval tup[DW_MAX_KEY];
		uint64_t h;
		struct dw_kslot *slot;
		struct dw_tref *t;

		for (uint32_t k = 0; k < at->n_tuple; k++)
			tup[k] = m->slot[at->tuple[k]];
		h = dw_vals_hash(tup, at->n_tuple);
		slot = dw_kmap_find(&w->refs, tup, at->n_tuple, h);
		if (slot != NULL) {
			t = slot->v;
		} else {
			struct dw_key *key = dw_key_new(tup, at->n_tuple, h);
			t = calloc(1, sizeof *t);
			if (key == NULL || t == NULL || dw_kmap_put(&w->refs, key, t) != 0) {
				free(key);
				free(t);
				return -ENOMEM;
			}
			t->key = key;
			if (at->sum_slot >= 0) {
				for (uint32_t k = 0; k < at->n_tuple; k++)
					if ((int32_t)at->tuple[k] == at->sum_slot) {
						t->v_int = tup[k].kind == DW_TV_INT;
						t->v = t->v_int ? tup[k].i : 0;
					}
			}
		}
		t->total++;
		*tuple = t;
	}
	return 0;
}

static int dw_observe_win(struct dw_tstate *s, struct dw_astate *a, uint64_t pos,
			  const struct dw_event *ev, const struct dw_pmatch *m)
{
	struct dw_win *w = dw_win_for(a, m);
	struct dw_went e;

	if (w == NULL)
		return -ENOMEM;
	memset(&e, 0, sizeof e);
	e.ts = ev->ts;
	if (dw_win_contrib(a->at, w, m, &e.v, &e.v_int, &e.tuple) != 0)
		return -ENOMEM;
	if (dw_win_insert(w, &e) != 0) {
		dw_tref_release(w, e.tuple);
		return -ENOMEM;
	}
	s->bytes += sizeof e + sizeof(struct dw_qent);
	return dw_queue_push(&a->q, ev->ts, pos, &w->h);
}

static int dw_observe_since(struct dw_tstate *s, struct dw_astate *a, uint8_t role, uint64_t pos,
			    const struct dw_event *ev, const struct dw_pmatch *m)
{
	const struct dw_atom *at = a->at;

	if (role == ROLE_X) {
		struct dw_viol *v;
		bool created;
		if (at->x.n_corr == 0) {
			a->global_viol = (int64_t)pos;
			return 0;
		}
		v = (struct dw_viol *)dw_kobj_get(&a->viol, m->key, at->x.n_corr, sizeof *v, &created);
		if (v == NULL)
			return -ENOMEM;
		v->pos = pos;
		s->bytes += sizeof(struct dw_qent);
		return dw_queue_push(&a->vq, ev->ts, pos, &v->h);
	} else {
		bool created;
		struct dw_anchors *an = (struct dw_anchors *)dw_kobj_get(&a->keys, m->key, at->p.n_corr,
									 sizeof *an, &created);
		if (an == NULL)
			return -ENOMEM;
		if (an->off + an->n == an->cap) {
			if (an->off > an->n) {
				memmove(an->e, an->e + an->off, an->n * sizeof *an->e);
				an->off = 0;
			} else {
				uint32_t cap = an->cap ? an->cap * 2 : 4;
				struct dw_anchor *e = realloc(an->e, cap * sizeof *e);
				if (e == NULL)
					return -ENOMEM;
				an->e = e;
				an->cap = cap;
			}
		}
		if (an->n == 0)
			an->monotone = true;
		else if (ev->ts < an->e[an->off + an->n - 1].ts)
			an->monotone = false;
		an->e[an->off + an->n].pos = pos;
		an->e[an->off + an->n].ts = ev->ts;
		an->n++;
		s->bytes += sizeof(struct dw_anchor) + sizeof(struct dw_qent);
		return dw_queue_push(&a->q, ev->ts, pos, &an->h);
	}
}

int dw_tstate_observe(struct dw_tstate *s, uint64_t pos, const struct dw_event *ev)
{
	struct dw_tval k[3] = { dw_tv_string(ev->ns), dw_tv_string(ev->action), dw_tv_string(ev->kind) };
	struct dw_kslot *slot = dw_kmap_find(&s->routes, k, 3, dw_vals_hash(k, 3));
	const struct dw_route *r;
	struct dw_pmatch m;
	int rc;

	if (slot == NULL)
		return 0;        /* no atom can match this (action, kind) */
	r = slot->v;
	for (uint32_t i = 0; i < r->n; i++) {
		struct dw_astate *a = &s->st[r->v[i].st];
		const struct dw_cpred *p = r->v[i].role == ROLE_X ? &a->at->x : &a->at->p;
		if (!dw_pmatch(p, ev, false, &m))
			continue;
		if (a->at->kind == AT_SINCE)
			rc = dw_observe_since(s, a, r->v[i].role, pos, ev, &m);
		else
			rc = dw_observe_win(s, a, pos, ev, &m);
		if (rc != 0)
			return rc;
		dw_activate(s, a);
	}
	return 0;
}

/* ---- expiry ------------------------------------------------------------------------- */

void dw_tstate_expire(struct dw_tstate *s, int64_t thr, uint64_t lo)
{
	for (uint32_t ai = 0; ai < s->n_active;) {
		uint32_t i = s->active[ai];
		struct dw_astate *a = &s->st[i];
		bool since = a->at->kind == AT_SINCE;

		while (a->q.n > 0) {
			struct dw_qent *q = &a->q.e[a->q.off];
			struct dw_kobj *o = q->obj;
			if (since ? q->pos >= lo : q->ts >= thr)
				break;
			o->fifo_refs--;
			s->bytes -= sizeof *q;
			if (!o->dead) {
				if (since) {
					struct dw_anchors *an = (struct dw_anchors *)o;
					while (an->n > 0 && an->e[an->off].pos < lo) {
						an->off++;
						an->n--;
						s->bytes -= sizeof(struct dw_anchor);
					}
					if (an->n == 0)
						dw_kobj_unfile(&a->keys, o, dw_anchors_free);
				} else {
					struct dw_win *w = (struct dw_win *)o;
					uint32_t before = w->n;
					dw_win_expire(w, thr);
					s->bytes -= (before - w->n) * sizeof(struct dw_went);
					if (w->n == 0)
						dw_kobj_unfile(&a->keys, o, dw_win_free);
				}
			} else {
				dw_kobj_put(o, since ? dw_anchors_free : dw_win_free);
			}
			a->q.off++;
			a->q.n--;
		}
		if (a->q.n == 0)
			a->q.off = 0;
		while (a->vq.n > 0 && a->vq.e[a->vq.off].pos < lo) {
			struct dw_viol *v = (struct dw_viol *)a->vq.e[a->vq.off].obj;
			v->h.fifo_refs--;
			s->bytes -= sizeof(struct dw_qent);
			if (!v->h.dead && v->pos < lo)
				dw_kobj_unfile(&a->viol, &v->h, free);
			else
				dw_kobj_put(&v->h, free);
			a->vq.off++;
			a->vq.n--;
		}
		if (a->vq.n == 0)
			a->vq.off = 0;
		if (a->global_viol >= 0 && (uint64_t)a->global_viol < lo)
			a->global_viol = -1;
		if (a->q.n == 0 && a->vq.n == 0 && a->global_viol < 0) {
			s->is_active[i] = false;
			s->active[ai] = s->active[--s->n_active];
			continue;
		}
		ai++;
	}
}

/* ---- decisions -------------------------------------------------------------------- */

struct dw_qctx {
	struct dw_tstate *s;
	uint32_t base;                   /* the leaf's first state */
	const struct dw_hent *view;      /* retained history, decision last */
	size_t n;
	const struct dw_event *d;        /* the decision */
	struct dw_arena *scratch;
	int err;
};

/* The key a decision looks up: its own values of the correlated terms.  false
 * when one does not resolve (then the predicate matches nothing). */
static bool dw_decision_key(struct dw_qctx *q, const struct dw_cpred *p, struct dw_tval *key)
{
	uint32_t k = 0;

	if (p->n_corr > DW_MAX_KEY)
		return false;       /* never compiled so (dw_cpred_compile) */
	for (uint32_t i = 0; i < p->n_args; i++)
		if (p->args[i].how == CA_CORR &&
		    !dw_tterm_resolve_static(q->scratch, q->d, p->args[i].term, &key[k++]))
			return false;
	return true;
}

/* [lo, hi]: the timestamps inside `within w` of the decision; false if none. */
static bool dw_bounds(const struct dw_event *d, int64_t w, int64_t *lo, int64_t *hi)
{
	int64_t wn = dw_window_ns(w);

	if (wn < 0)
		return false;
	if (__builtin_sub_overflow(d->ts, wn, lo))
		*lo = INT64_MIN;
	*hi = d->ts;
	return true;
}

static struct dw_kobj *dw_lookup(struct dw_kmap *m, const struct dw_tval *key, uint32_t n)
{
	struct dw_kslot *slot;

	if (m->n == 0)
		return NULL;
	slot = dw_kmap_find(m, key, n, dw_vals_hash(key, n));
	return slot ? slot->v : NULL;
}

/* The queries take the leaf's own atom: a state may be shared by atoms that
 * observe alike but build their decision keys from different terms. */
static bool dw_q_formerly(struct dw_qctx *q, const struct dw_atom *at, struct dw_astate *a)
{
	struct dw_tval key[DW_MAX_KEY];
	int64_t lo, hi;
	struct dw_win *w;

	if (a->keys.n == 0 || !dw_decision_key(q, &at->p, key) ||
	    !dw_bounds(q->d, at->w, &lo, &hi))
		return false;
	w = (struct dw_win *)dw_lookup(&a->keys, key, at->p.n_corr);
	return w != NULL && dw_win_any(w, lo, hi);
}

static bool dw_q_since(struct dw_qctx *q, const struct dw_atom *at, struct dw_astate *a)
{
	struct dw_tval key[DW_MAX_KEY];
	int64_t lo, hi, lv = -1;
	const struct dw_anchors *an;

	if (a->keys.n == 0 || !dw_decision_key(q, &at->p, key) ||
	    !dw_bounds(q->d, at->w, &lo, &hi))
		return false;
	an = (const struct dw_anchors *)dw_lookup(&a->keys, key, at->p.n_corr);
	if (an == NULL)
		return false;
	/* the latest violation this decision sees: X under the decision's values */
	if (at->x.n_corr == 0) {
		lv = a->global_viol;
	} else if (dw_decision_key(q, &at->x, key)) {
		const struct dw_viol *v = (const struct dw_viol *)dw_lookup(&a->viol, key,
									     at->x.n_corr);
		if (v != NULL)
			lv = (int64_t)v->pos;
	}
	/* an anchor j holds iff no violation in (j, i]: every violation <= j */
	for (uint32_t k = an->n; k-- > 0;) {
		const struct dw_anchor *e = &an->e[an->off + k];
		if ((int64_t)e->pos < lv)
			break;
		if (e->ts >= lo && e->ts <= hi)
			return true;
		if (an->monotone && e->ts < lo)
			break;
	}
	return false;
}

/* An aggregate's value at the decision (count, or sum clamped to i64). */
static int dw_q_agg(struct dw_qctx *q, const struct dw_atom *at, struct dw_astate *a, int64_t *out)
{
	struct dw_tval key[DW_MAX_KEY];
	struct dw_aggval v;
	int64_t lo, hi;
	struct dw_win *w = NULL;
	__int128 x;
	int r;

	*out = 0;
	if (a->keys.n == 0 || !dw_decision_key(q, &at->p, key) ||
	    !dw_bounds(q->d, at->w, &lo, &hi))
		return 0;
	w = (struct dw_win *)dw_lookup(&a->keys, key, at->p.n_corr);
	if (w == NULL)
		return 0;
	if ((r = dw_win_query(w, lo, hi, q->scratch, &v)) != 0)
		return r;
	if (!at->is_sum) {
		*out = (int64_t)(at->occurrences ? v.count : v.distinct);
		return 0;
	}
	x = at->occurrences ? v.sum : v.dsum;
	*out = x > INT64_MAX ? INT64_MAX : x < INT64_MIN ? INT64_MIN : (int64_t)x;
	return 0;
}

static struct dw_astate *dw_q_state(struct dw_qctx *q, const struct dw_atom *at)
{
	return &q->s->st[q->s->slot_of[q->base + at->id]];
}

static bool dw_q_holds(struct dw_qctx *q, const struct dw_tnode *n, size_t j, struct dw_str var,
		       const struct dw_tval *val)
{
	struct dw_tinterp ti;
	bool out = false;
	int r;

	memset(&ti, 0, sizeof ti);
	ti.h = q->view;
	ti.n = q->n;
	ti.scratch = q->scratch;
	r = dw_tinterp_holds_at(&ti, j, n, &var, val, val ? 1 : 0, &out);
	if (r != 0)
		q->err = r;
	return out;
}

static bool dw_q_opnd(struct dw_qctx *q, const struct dw_opnd *o, struct dw_tval *out)
{
	int64_t v;
	int r;

	if (o->agg != NULL) {
		if ((r = dw_q_agg(q, o->agg, dw_q_state(q, o->agg), &v)) != 0) {
			q->err = r;
			return false;
		}
		*out = dw_tv_int(v);
		return true;
	}
	return dw_tterm_resolve_static(q->scratch, q->d, o->term, out);
}

static bool dw_q_eval(struct dw_qctx *q, const struct dw_tnode_plan *p)
{
	static const struct dw_str none = { NULL, 0 };
	struct dw_tval a, b;

	if (q->err)
		return false;
	switch (p->kind) {
	case PK_AND:
		return dw_q_eval(q, p->a) && dw_q_eval(q, p->b);
	case PK_NOT:
		return !dw_q_eval(q, p->a);
	case PK_POINT:
		return dw_q_holds(q, p->node, q->n - 1, none, NULL);
	case PK_PREVIOUS:
		/* the previous position is retained whenever it can be in the window */
		if (q->n < 2 || q->view[q->n - 2].pos + 1 != q->view[q->n - 1].pos ||
		    q->view[q->n - 2].ev == NULL ||
		    !dw_in_window(q->d->ts, q->view[q->n - 2].ts, p->w))
			return false;
		return dw_q_holds(q, p->node, q->n - 2, none, NULL);
	case PK_ATOM: {
		struct dw_astate *st = dw_q_state(q, p->atom);
		return p->atom->kind == AT_SINCE ? dw_q_since(q, p->atom, st)
						 : dw_q_formerly(q, p->atom, st);
	}
	case PK_CMP:
		if (!dw_q_opnd(q, &p->l, &a) || !dw_q_opnd(q, &p->r, &b))
			return false;
		switch (p->cmp) {
		case DW_TC_EQ: return dw_tval_eq(&a, &b);
		case DW_TC_NE: return !dw_tval_eq(&a, &b);
		default: break;
		}
		if (a.kind != DW_TV_INT || b.kind != DW_TV_INT)
			return false;
		switch (p->cmp) {
		case DW_TC_LT: return a.i < b.i;
		case DW_TC_LE: return a.i <= b.i;
		case DW_TC_GT: return a.i > b.i;
		case DW_TC_GE: return a.i >= b.i;
		default: return false;
		}
	case PK_EXISTS: {
		int64_t v;
		int r = dw_q_agg(q, p->atom, dw_q_state(q, p->atom), &v);
		if (r != 0) {
			q->err = r;
			return false;
		}
		a = dw_tv_int(v);
		return p->node == NULL || dw_q_holds(q, p->node, q->n - 1, p->var, &a);
	}
	default:
		return false;
	}
}

int dw_tstate_leaf(struct dw_tstate *s, uint32_t gindex, const struct dw_hent *view, size_t n,
		   struct dw_arena *scratch, bool *out)
{
	const struct dw_tleaf *lf;
	struct dw_qctx q;
	bool v;

	if (gindex >= s->plan->n_leaves || (lf = &s->plan->leaves[gindex])->inc == NULL || n == 0)
		return -EINVAL;
	memset(&q, 0, sizeof q);
	q.s = s;
	q.base = s->leaf_base[gindex];
	q.view = view;
	q.n = n;
	q.d = view[n - 1].ev;
	q.scratch = scratch;
	v = dw_q_eval(&q, lf->inc);
	if (q.err)
		return q.err;
	*out = v;
	return 0;
}

size_t dw_tstate_bytes(const struct dw_tstate *s)
{
	return s->bytes;
}

/* ---- pending responses -------------------------------------------------------------- */

struct dw_pend {
	uint32_t n;
	struct { uint32_t st; struct dw_win *w; } v[];
};


static void dw_pend_drop(struct dw_tstate *s, struct dw_pend *pd, uint64_t ticket)
{
	for (uint32_t i = 0; i < pd->n; i++) {
		struct dw_win *w = pd->v[i].w;
		for (uint32_t k = 0; k < w->n_pend; k++) {
			struct dw_wpend *x = &w->pend[k];
			if (x->ticket != ticket)
				continue;
			if (x->tuple != NULL) {
				x->tuple->pend--;
				dw_tref_release(w, x->tuple);
			}
			w->pend[k] = w->pend[--w->n_pend];
			break;
		}
		w->h.fifo_refs--;
		if (!w->h.dead && w->n == 0 && w->n_pend == 0)
			dw_kobj_unfile(&s->st[pd->v[i].st].keys, &w->h, dw_win_free);
		else
			dw_kobj_put(&w->h, dw_win_free);
	}
	free(pd);
}

int dw_tstate_pending_add(struct dw_tstate *s, uint64_t ticket, const struct dw_event *req)
{
	struct dw_tval k[3] = { dw_tv_string(req->ns), dw_tv_string(req->action),
				dw_tv_string(DW_STR_LIT("response")) };
	struct dw_kslot *slot = dw_kmap_find(&s->routes, k, 3, dw_vals_hash(k, 3));
	const struct dw_route *r;
	struct dw_pend *pd;
	struct dw_tval tk = dw_tv_int((int64_t)ticket);
	struct dw_key *key;
	struct dw_pmatch m;

	if (slot == NULL)
		return 0;
	r = slot->v;
	pd = calloc(1, sizeof *pd + r->n * sizeof pd->v[0]);
	if (pd == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n; i++) {
		struct dw_astate *a = &s->st[r->v[i].st];
		struct dw_wpend p;
		struct dw_win *w;
		if (a->at->kind != AT_AGG || !dw_pmatch(&a->at->p, req, true, &m))
			continue;
		if ((w = dw_win_for(a, &m)) == NULL)
			goto enomem;
		memset(&p, 0, sizeof p);
		p.ticket = ticket;
		if (w->n_pend == w->cap_pend) {
			uint32_t cap = w->cap_pend ? w->cap_pend * 2 : 4;
			struct dw_wpend *v = realloc(w->pend, cap * sizeof *v);
			if (v == NULL)
				goto enomem;
			w->pend = v;
			w->cap_pend = cap;
		}
		if (dw_win_contrib(a->at, w, &m, &p.v, &p.v_int, &p.tuple) != 0)
			goto enomem;
		if (p.tuple != NULL)
			p.tuple->pend++;
		w->pend[w->n_pend++] = p;
		/* the entry keeps the window alive until the outcome arrives */
		w->h.fifo_refs++;
		pd->v[pd->n].st = r->v[i].st;
		pd->v[pd->n++].w = w;
	}
	if (pd->n == 0) {
		free(pd);
		return 0;
	}
	key = dw_key_new(&tk, 1, dw_vals_hash(&tk, 1));
	if (key == NULL || dw_kmap_put(&s->pending, key, pd) != 0) {
		free(key);
		goto enomem;
	}
	return 0;
enomem:
	dw_pend_drop(s, pd, ticket);    /* nothing half-added stays behind */
	return -ENOMEM;
}

void dw_tstate_pending_del(struct dw_tstate *s, uint64_t ticket)
{
	struct dw_tval tk = dw_tv_int((int64_t)ticket);
	struct dw_kslot *slot = dw_kmap_find(&s->pending, &tk, 1, dw_vals_hash(&tk, 1));
	struct dw_pend *pd;

	if (slot == NULL)
		return;
	pd = slot->v;
	dw_kmap_del(&s->pending, slot);
	dw_pend_drop(s, pd, ticket);
}

/* ---- snapshots ------------------------------------------------------------------------ */

/* Layout (little-endian): u32 number of atom states, then per state: u8 kind,
 * i64 global violation, u32 keys, per key: u32 arity + values, then
 *   FORMERLY/AGG: i64 last_lo, u32 tuples (u32 arity + values, u8 v_int, i64 v),
 *                 u32 entries (i64 ts, u8 v_int, i64 v, u32 tuple+1 or 0)
 *   SINCE:        u8 monotone, u32 anchors (u64 pos, i64 ts)
 * then (SINCE) u32 violations (u32 arity + values, u64 pos).
 * Pending responses are not saved: their requests die with the process.
 * Expiry queues are rebuilt in time (or position) order on load. */

static int dw_put_u8(struct dw_buf *b, uint8_t v)
{
	return dw_buf_put(b, (const char *)&v, 1);
}

static int dw_put_u32(struct dw_buf *b, uint32_t v)
{
	unsigned char o[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };
	return dw_buf_put(b, (const char *)o, 4);
}

static int dw_put_u64(struct dw_buf *b, uint64_t v)
{
	unsigned char o[8];

	for (int k = 0; k < 8; k++)
		o[k] = (unsigned char)(v >> (8 * k));
	return dw_buf_put(b, (const char *)o, 8);
}

static int dw_put_key(struct dw_buf *b, const struct dw_key *k)
{
	int r = dw_put_u32(b, k->n);

	for (uint32_t i = 0; r == 0 && i < k->n; i++)
		r = dw_tval_encode(b, &k->v[i]);
	return r;
}

static int dw_save_win(struct dw_buf *b, const struct dw_win *w)
{
	struct dw_tref **refs = NULL;
	uint32_t n_refs = 0;
	int r;

	/* the tuples entries use (pending responses are not saved: their
	 * requests die with the process) */
	if (w->refs.n != 0 && (refs = calloc(w->refs.n, sizeof *refs)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->refs.cap; i++) {
		const struct dw_tref *t = w->refs.s[i].v;
		if (w->refs.s[i].k != NULL && t->total > t->pend)
			refs[n_refs++] = w->refs.s[i].v;
	}
	r = dw_put_u64(b, (uint64_t)w->last_lo);
	if (r == 0)
		r = dw_put_u32(b, n_refs);
	for (uint32_t i = 0; r == 0 && i < n_refs; i++) {
		if ((r = dw_put_key(b, refs[i]->key)) == 0 && (r = dw_put_u8(b, refs[i]->v_int)) == 0)
			r = dw_put_u64(b, (uint64_t)refs[i]->v);
	}
	if (r == 0)
		r = dw_put_u32(b, w->n);
	for (uint32_t i = 0; r == 0 && i < w->n; i++) {
		const struct dw_went *e = dw_win_at(w, i);
		uint32_t t = 0;
		for (uint32_t k = 0; e->tuple != NULL && k < n_refs; k++)
			if (refs[k] == e->tuple)
				t = k + 1;
		if ((r = dw_put_u64(b, (uint64_t)e->ts)) == 0 && (r = dw_put_u8(b, e->v_int)) == 0 &&
		    (r = dw_put_u64(b, (uint64_t)e->v)) == 0)
			r = dw_put_u32(b, t);
	}
	free(refs);
	return r;
}

int dw_tstate_save(const struct dw_tstate *s, struct dw_buf *b)
{
	int r = dw_put_u32(b, s->n_states);

	for (uint32_t i = 0; r == 0 && i < s->n_states; i++) {
		const struct dw_astate *a = &s->st[i];
		uint8_t kind = a->at->kind;

		uint32_t n_keys = 0;

		/* windows holding only pending responses are not history */
		for (uint32_t k = 0; k < a->keys.cap; k++)
			if (a->keys.s[k].k != NULL &&
			    (kind == AT_SINCE || ((const struct dw_win *)a->keys.s[k].v)->n > 0))
				n_keys++;
		if ((r = dw_put_u8(b, kind)) != 0 || (r = dw_put_u64(b, (uint64_t)a->global_viol)) != 0 ||
		    (r = dw_put_u32(b, n_keys)) != 0)
			break;
		for (uint32_t k = 0; r == 0 && k < a->keys.cap; k++) {
			const struct dw_kslot *sl = &a->keys.s[k];
			if (sl->k == NULL ||
			    (kind != AT_SINCE && ((const struct dw_win *)sl->v)->n == 0))
				continue;
			if ((r = dw_put_key(b, sl->k)) != 0)
				break;
			if (kind == AT_SINCE) {
				const struct dw_anchors *an = sl->v;
				r = dw_put_u8(b, an->monotone);
				if (r == 0)
					r = dw_put_u32(b, an->n);
				for (uint32_t q = 0; r == 0 && q < an->n; q++)
					if ((r = dw_put_u64(b, an->e[an->off + q].pos)) == 0)
						r = dw_put_u64(b, (uint64_t)an->e[an->off + q].ts);
			} else {
				r = dw_save_win(b, sl->v);
			}
		}
		if (r == 0 && kind == AT_SINCE) {
			r = dw_put_u32(b, a->viol.n);
			for (uint32_t k = 0; r == 0 && k < a->viol.cap; k++) {
				const struct dw_kslot *sl = &a->viol.s[k];
				if (sl->k == NULL)
					continue;
				if ((r = dw_put_key(b, sl->k)) == 0)
					r = dw_put_u64(b, ((const struct dw_viol *)sl->v)->pos);
			}
		}
	}
	return r;
}

/* Reading: a cursor that refuses to run past the end. */
struct dw_rd {
	const unsigned char *p;
	size_t n, off;
	struct dw_arena *a;
	int err;
};

static uint64_t dw_get_u(struct dw_rd *r, int bytes)
{
	uint64_t v = 0;

	if (r->err || r->n - r->off < (size_t)bytes) {
		r->err = -EINVAL;
		return 0;
	}
	for (int k = 0; k < bytes; k++)
		v |= (uint64_t)r->p[r->off + (size_t)k] << (8 * k);
	r->off += (size_t)bytes;
	return v;
}

/* A key's values (at most 16, as in observation) into vals. */
static uint32_t dw_get_key(struct dw_rd *r, struct dw_tval *vals)
{
	uint32_t n = (uint32_t)dw_get_u(r, 4);
	char err[64];

	if (n > 16) {
		r->err = -EINVAL;
		return 0;
	}
	for (uint32_t i = 0; !r->err && i < n; i++)
		if (dw_tval_decode(r->a, r->p, r->n, &r->off, &vals[i], err, sizeof err) != 0)
			r->err = -EINVAL;
	return n;
}

static int dw_qent_cmp_ts(const void *x, const void *y)
{
	const struct dw_qent *a = x, *b = y;

	return (a->ts > b->ts) - (a->ts < b->ts);
}

static int dw_qent_cmp_pos(const void *x, const void *y)
{
	const struct dw_qent *a = x, *b = y;

	return (a->pos > b->pos) - (a->pos < b->pos);
}

static int dw_load_win(struct dw_tstate *s, struct dw_astate *a, struct dw_rd *r, struct dw_win *w)
{
	struct dw_tref **refs = NULL;
	uint32_t n_refs, n;
	struct dw_tval vals[DW_MAX_KEY + 1];
	int rc = 0;

	w->last_lo = (int64_t)dw_get_u(r, 8);
	n_refs = (uint32_t)dw_get_u(r, 4);
	if (r->err || n_refs > r->n)
		return -EINVAL;
	if (n_refs && (refs = calloc(n_refs, sizeof *refs)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; !r->err && i < n_refs; i++) {
		uint32_t k = dw_get_key(r, vals);
		uint64_t h = dw_vals_hash(vals, k);
		struct dw_key *key;
		struct dw_tref *t;
		if (r->err || dw_kmap_find(&w->refs, vals, k, h) != NULL) {
			r->err = -EINVAL;
			break;
		}
		key = dw_key_new(vals, k, h);
		t = calloc(1, sizeof *t);
		if (key == NULL || t == NULL || dw_kmap_put(&w->refs, key, t) != 0) {
			free(key);
			free(t);
			rc = -ENOMEM;
			break;
		}
		t->key = key;
		t->v_int = dw_get_u(r, 1) != 0;
		t->v = (int64_t)dw_get_u(r, 8);
		refs[i] = t;
	}
	n = rc == 0 ? (uint32_t)dw_get_u(r, 4) : 0;
	for (uint32_t i = 0; rc == 0 && !r->err && i < n; i++) {
		struct dw_went e;
		uint32_t t;
		memset(&e, 0, sizeof e);
		e.ts = (int64_t)dw_get_u(r, 8);
		e.v_int = dw_get_u(r, 1) != 0;
		e.v = (int64_t)dw_get_u(r, 8);
		t = (uint32_t)dw_get_u(r, 4);
		if (r->err || t > n_refs || (w->n > 0 && e.ts < dw_win_at(w, w->n - 1)->ts)) {
			r->err = -EINVAL;
			break;
		}
		if (t != 0) {
			e.tuple = refs[t - 1];
			e.tuple->total++;
		}
		if ((rc = dw_win_insert(w, &e)) == 0)
			rc = dw_queue_push(&a->q, e.ts, 0, &w->h);
		s->bytes += sizeof e + sizeof(struct dw_qent);
	}
	/* a tuple no entry uses would never be released */
	for (uint32_t i = 0; rc == 0 && !r->err && i < n_refs; i++)
		if (refs[i]->total == 0)
			r->err = -EINVAL;
	free(refs);
	return rc ? rc : r->err;
}

int dw_tstate_load(struct dw_tstate *s, const void *p, size_t n, struct dw_arena *scratch)
{
	struct dw_rd r = { p, n, 0, scratch, 0 };
	struct dw_tval vals[DW_MAX_KEY + 1];
	int rc = 0;

	if ((uint32_t)dw_get_u(&r, 4) != s->n_states || r.err)
		return -EINVAL;
	for (uint32_t i = 0; rc == 0 && !r.err && i < s->n_states; i++) {
		struct dw_astate *a = &s->st[i];
		uint32_t n_keys;

		if (dw_get_u(&r, 1) != a->at->kind) {
			r.err = -EINVAL;
			break;
		}
		a->global_viol = (int64_t)dw_get_u(&r, 8);
		n_keys = (uint32_t)dw_get_u(&r, 4);
		for (uint32_t k = 0; rc == 0 && !r.err && k < n_keys; k++) {
			uint32_t arity = dw_get_key(&r, vals);
			bool created;
			struct dw_kobj *o;
			if (r.err || arity != a->at->p.n_corr) {
				r.err = -EINVAL;
				break;
			}
			o = dw_kobj_get(&a->keys, vals, arity, a->at->kind == AT_SINCE ?
					sizeof(struct dw_anchors) : sizeof(struct dw_win), &created);
			if (o == NULL) {
				rc = -ENOMEM;
				break;
			}
			if (!created) {
				r.err = -EINVAL;   /* a key twice */
				break;
			}
			if (a->at->kind == AT_SINCE) {
				struct dw_anchors *an = (struct dw_anchors *)o;
				uint32_t cnt;
				an->monotone = dw_get_u(&r, 1) != 0;
				cnt = (uint32_t)dw_get_u(&r, 4);
				if (r.err || cnt > r.n) {
					r.err = -EINVAL;
					break;
				}
				if (cnt && (an->e = calloc(cnt, sizeof *an->e)) == NULL) {
					rc = -ENOMEM;
					break;
				}
				an->cap = cnt;
				for (uint32_t q = 0; !r.err && q < cnt; q++) {
					an->e[q].pos = dw_get_u(&r, 8);
					an->e[q].ts = (int64_t)dw_get_u(&r, 8);
					if (q > 0 && an->e[q].pos <= an->e[q - 1].pos)
						r.err = -EINVAL;
					else if ((rc = dw_queue_push(&a->q, an->e[q].ts, an->e[q].pos, o)) != 0)
						break;
					an->n++;
				}
				s->bytes += cnt * (sizeof(struct dw_anchor) + sizeof(struct dw_qent));
			} else {
				struct dw_win *w = (struct dw_win *)o;
				w->last_lo = INT64_MIN;
				rc = dw_load_win(s, a, &r, w);
			}
		}
		if (rc == 0 && !r.err && a->at->kind == AT_SINCE) {
			uint32_t nv = (uint32_t)dw_get_u(&r, 4);
			for (uint32_t k = 0; rc == 0 && !r.err && k < nv; k++) {
				uint32_t arity = dw_get_key(&r, vals);
				bool created;
				struct dw_viol *v;
				if (r.err || arity != a->at->x.n_corr) {
					r.err = -EINVAL;
					break;
				}
				v = (struct dw_viol *)dw_kobj_get(&a->viol, vals, arity, sizeof *v, &created);
				if (v == NULL) {
					rc = -ENOMEM;
					break;
				}
				if (!created) {
					r.err = -EINVAL;
					break;
				}
				v->pos = dw_get_u(&r, 8);
				rc = dw_queue_push(&a->vq, 0, v->pos, &v->h);
			}
		}
		/* expiry pops in time (windows) or position (since) order */
		if (a->q.n > 1)
			qsort(a->q.e + a->q.off, a->q.n, sizeof *a->q.e,
			      a->at->kind == AT_SINCE ? dw_qent_cmp_pos : dw_qent_cmp_ts);
		if (a->vq.n > 1)
			qsort(a->vq.e + a->vq.off, a->vq.n, sizeof *a->vq.e, dw_qent_cmp_pos);
		if (a->q.n || a->vq.n || a->global_viol >= 0)
			dw_activate(s, a);
	}
	if (rc == 0 && !r.err && r.off != r.n)
		r.err = -EINVAL;       /* trailing bytes */
	return rc ? rc : r.err;
}

bool dw_tstate_leaf_dead(const struct dw_tstate *s, uint32_t gindex)
{
	const struct dw_tnode_plan *p;
	const struct dw_astate *a;

	if (gindex >= s->plan->n_leaves || (p = s->plan->leaves[gindex].inc) == NULL ||
	    p->kind != PK_ATOM)
		return false;
	a = &s->st[s->slot_of[s->leaf_base[gindex] + p->atom->id]];
	/* formerly and since need an entry under some key */
	return a->keys.n == 0;
}
