/* authz.c - see authz.h.  Cedar's authorization algorithm (docs/formats.md §1):
 * every applicable rule is evaluated (errors are skipped and reported); any
 * satisfied forbid denies with those forbids as reasons; else any satisfied
 * permit allows with those permits; else deny with no reasons. */
#include "authz.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "eval.h"

/*
 * Second-level index.  Within one action's rules, a rule whose first evaluated
 * condition (the leftmost leaf of its && chain) is `context.a.b == "lit"` or
 * `context.a.b like "prefix*…"` can only hold when the request's value at that
 * path equals lit or starts with prefix.  Such rules are grouped by path; a
 * decision looks the request's value up and evaluates only the rules whose key
 * matches.  Skipping the others is exact: their first conjunct evaluates,
 * without error, to false, and `&&` stops there.  When the path does not
 * resolve (an evaluation error for those rules) or is not a string (`like`
 * errors), the group is evaluated in full so errors are reported as Cedar
 * reports them.
 */
struct dw_key {
	struct dw_str s;               /* NULL p: empty slot */
	uint64_t hash;
	uint32_t n;
	uint32_t *pol;
};

struct dw_keymap {
	struct dw_key *slot;
	uint32_t mask;
	uint32_t used;
};

/* What a condition before the key needs of the request to evaluate without
 * error: the path resolves, to a value of this kind. */
enum dw_need { DW_NEED_ANY = 1, DW_NEED_CONTAINER, DW_NEED_LONG, DW_NEED_BOOL };

struct dw_req {
	uint32_t depth;
	const struct dw_str *path;
	uint8_t need;                  /* enum dw_need */
};

struct dw_path_index {
	uint32_t depth;
	const struct dw_str *path;     /* attribute names below `context` */
	uint32_t n_reqs;
	struct dw_req *reqs;           /* the conditions before the key are error-free */
	bool key_guarded;              /* a `has` before the key tests the key's presence */
	struct dw_keymap eq;           /* value -> rules */
	struct dw_keymap prefix;       /* prefix -> rules (all prefix lengths) */
	uint32_t n_lens;
	uint32_t *lens;                /* distinct prefix lengths, ascending */
	uint32_t n_all, n_like;
	uint32_t *all;                 /* every rule of the group (fallback) */
	uint32_t *like;                /* the rules keyed by `like` (error on non-strings) */
};

struct dw_bucket {
	const struct dw_uid *action;   /* NULL: empty slot */
	uint32_t n, cap;
	uint32_t *pol;                 /* ascending policy indices (all rules) */
	uint32_t n_plain;
	uint32_t *plain;               /* rules always evaluated */
	uint32_t n_px;
	struct dw_path_index *px;
};

struct dw_authz {
	const struct dw_policy_set *ps;
	const struct dw_store *st;
	struct dw_bucket *tab;         /* open addressing by action uid hash */
	uint32_t mask;
	uint32_t n_any;
	uint32_t *any;                 /* rules whose action scope is unconstrained */
	struct dw_bucket any_bucket;   /* for actions no scope names */
};

static struct dw_bucket *dw_bucket_find(const struct dw_authz *az, const struct dw_uid *u)
{
	uint32_t i = (uint32_t)u->hash & az->mask;

	for (;;) {
		struct dw_bucket *b = &az->tab[i];
		if (b->action == NULL || dw_uid_eq(b->action, u))
			return b;
		i = (i + 1) & az->mask;
	}
}

static int dw_bucket_push(struct dw_bucket *b, uint32_t pol)
{
	if (b->n != 0 && b->pol[b->n - 1] == pol)
		return 0;              /* the same rule reached this action twice */
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 4;
		uint32_t *v = realloc(b->pol, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		b->pol = v;
		b->cap = cap;
	}
	b->pol[b->n++] = pol;
	return 0;
}

static void dw_keymap_free(struct dw_keymap *m)
{
	if (m->slot != NULL)
		for (uint32_t i = 0; i <= m->mask; i++)
			free(m->slot[i].pol);
	free(m->slot);
}

static void dw_bucket_fini(struct dw_bucket *b)
{
	free(b->pol);
	free(b->plain);
	for (uint32_t i = 0; i < b->n_px; i++) {
		dw_keymap_free(&b->px[i].eq);
		dw_keymap_free(&b->px[i].prefix);
		/* path and reqs live in the policy set's arena */
		free(b->px[i].lens);
		free(b->px[i].all);
		free(b->px[i].like);
	}
	free(b->px);
}

void dw_authz_free(struct dw_authz *az)
{
	if (az == NULL)
		return;
	if (az->tab != NULL)
		for (uint32_t i = 0; i <= az->mask; i++)
			dw_bucket_fini(&az->tab[i]);
	dw_bucket_fini(&az->any_bucket);
	free(az->tab);
	free(az->any);
	free(az);
}

/* --- the second-level index ----------------------------------------------- */

static struct dw_key *dw_keymap_find(const struct dw_keymap *m, struct dw_str s, uint64_t h)
{
	uint32_t i = (uint32_t)h & m->mask;

	for (;;) {
		struct dw_key *k = &m->slot[i];
		if (k->s.p == NULL || (k->hash == h && dw_str_eq(k->s, s)))
			return k;
		i = (i + 1) & m->mask;
	}
}

static const struct dw_key *dw_keymap_get(const struct dw_keymap *m, struct dw_str s)
{
	const struct dw_key *k;

	if (m->used == 0)
		return NULL;
	k = dw_keymap_find(m, s, dw_hash_str(s, 0));
	return k->s.p != NULL ? k : NULL;
}

static int dw_keymap_add(struct dw_keymap *m, struct dw_str s, uint32_t pol)
{
	uint64_t h = dw_hash_str(s, 0);
	struct dw_key *k;
	uint32_t *v;

	if (m->slot == NULL || (m->used + 1) * 2 > m->mask + 1) {
		uint32_t cap = m->slot ? (m->mask + 1) * 2 : 16;
		struct dw_keymap n = { calloc(cap, sizeof(struct dw_key)), cap - 1, m->used };
		if (n.slot == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; m->slot != NULL && i <= m->mask; i++)
			if (m->slot[i].s.p != NULL)
				*dw_keymap_find(&n, m->slot[i].s, m->slot[i].hash) = m->slot[i];
		free(m->slot);
		*m = n;
	}
	k = dw_keymap_find(m, s, h);
	if (k->s.p == NULL) {
		k->s = s.p ? s : dw_str_make("", 0);
		k->hash = h;
		m->used++;
	}
	v = realloc(k->pol, (k->n + 1) * sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	v[k->n++] = pol;
	k->pol = v;
	return 0;
}

static int dw_push_u32(uint32_t **v, uint32_t *n, uint32_t x)
{
	uint32_t *nv = realloc(*v, (*n + 1) * sizeof *nv);

	if (nv == NULL)
		return -ENOMEM;
	nv[(*n)++] = x;
	*v = nv;
	return 0;
}

/* If e is context.<n1>.<n2>… (depth >= 0), fill path and return true. */
static bool dw_context_path(const struct dw_expr *e, struct dw_str *buf, uint32_t cap,
			    uint32_t *depth)
{
	uint32_t d = 0;

	while (e->op == DW_E_ATTR) {
		if (d == cap)
			return false;
		buf[d++] = e->attr.name;
		e = e->attr.e;
	}
	if (e->op != DW_E_VAR || e->var != DW_VAR_CONTEXT)
		return false;
	for (uint32_t i = 0; i < d / 2; i++) {
		struct dw_str t = buf[i];
		buf[i] = buf[d - 1 - i];
		buf[d - 1 - i] = t;
	}
	*depth = d;
	return true;
}

#define DW_MAX_PATH 8
#define DW_MAX_REQS 8

enum dw_keykind { DW_KEY_NONE = 0, DW_KEY_EQ, DW_KEY_PREFIX };

struct dw_rule_key {
	enum dw_keykind kind;
	bool like, guarded;
	uint32_t depth;
	struct dw_str path[DW_MAX_PATH];
	struct dw_str key;
	uint32_t n_reqs;
	struct dw_req reqs[DW_MAX_REQS];
	struct dw_str req_paths[DW_MAX_REQS][DW_MAX_PATH];
	/* `has` guards seen before the key: guarded path = req path + name */
	uint32_t n_has;
	uint32_t has_req[DW_MAX_REQS];
	struct dw_str has_name[DW_MAX_REQS];
};

static bool dw_is_lit_long(const struct dw_expr *e)
{
	return e->op == DW_E_LIT && e->lit.kind == DW_V_LONG;
}

static bool dw_add_req(struct dw_rule_key *k, const struct dw_expr *path_expr, uint8_t need)
{
	struct dw_req *r;
	uint32_t i = k->n_reqs;

	if (i == DW_MAX_REQS)
		return false;
	r = &k->reqs[i];
	if (!dw_context_path(path_expr, k->req_paths[i], DW_MAX_PATH, &r->depth))
		return false;
	r->path = k->req_paths[i];
	r->need = need;
	k->n_reqs++;
	return true;
}

/* A condition that cannot fail once its request paths resolve to the right
 * kinds: record those requirements and say yes. */
static bool dw_pure(struct dw_rule_key *k, const struct dw_expr *e)
{
	switch (e->op) {
	case DW_E_LIT:
		return e->lit.kind == DW_V_BOOL;
	case DW_E_NOT:
		return dw_pure(k, e->k.a);
	case DW_E_HAS:
		if (k->n_has == DW_MAX_REQS || !dw_add_req(k, e->attr.e, DW_NEED_CONTAINER))
			return false;
		k->has_req[k->n_has] = k->n_reqs - 1;
		k->has_name[k->n_has++] = e->attr.name;
		return true;
	case DW_E_EQ:
		if (e->k.b->op == DW_E_LIT && dw_add_req(k, e->k.a, DW_NEED_ANY))
			return true;
		return e->k.a->op == DW_E_LIT && dw_add_req(k, e->k.b, DW_NEED_ANY);
	case DW_E_LT:
	case DW_E_LE:
		if (dw_is_lit_long(e->k.b) && dw_add_req(k, e->k.a, DW_NEED_LONG))
			return true;
		return dw_is_lit_long(e->k.a) && dw_add_req(k, e->k.b, DW_NEED_LONG);
	case DW_E_ATTR:
		return dw_add_req(k, e, DW_NEED_BOOL);
	default:
		return false;
	}
}

/* Is e a keyable condition?  Fill k's key. */
static bool dw_keyable(struct dw_rule_key *k, const struct dw_expr *e)
{
	if (e->op == DW_E_EQ) {
		const struct dw_expr *a = e->k.a, *b = e->k.b;
		if (a->op == DW_E_LIT) {
			const struct dw_expr *t = a;
			a = b;
			b = t;
		}
		if (b->op != DW_E_LIT || b->lit.kind != DW_V_STRING ||
		    !dw_context_path(a, k->path, DW_MAX_PATH, &k->depth) || k->depth == 0)
			return false;
		k->key = b->lit.s;
		k->like = false;
		k->kind = DW_KEY_EQ;
		return true;
	}
	if (e->op == DW_E_LIKE) {
		const struct dw_pattern *pat = e->like.pat;
		if (!dw_context_path(e->like.e, k->path, DW_MAX_PATH, &k->depth) || k->depth == 0)
			return false;
		if (pat->n_pieces > 1 && pat->piece[0].n == 0)
			return false;
		k->like = true;
		k->key = pat->piece[0];
		k->kind = pat->n_pieces == 1 ? DW_KEY_EQ : DW_KEY_PREFIX;
		return true;
	}
	return false;
}

static bool dw_paths_eq(const struct dw_str *a, uint32_t na, const struct dw_str *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (!dw_str_eq(a[i], b[i]))
			return false;
	return true;
}

/*
 * Find a rule's key: walking its && chain left to right (the order Cedar
 * evaluates it), the first keyable condition, provided every condition before
 * it is pure.  When the key is false those earlier conditions are then either
 * false or true, never an error, so the rule is false without error.
 */
static void dw_rule_key(const struct dw_policy *pol, struct dw_rule_key *k)
{
	const struct dw_expr *stack[DW_EXPR_MAX_DEPTH + 1];
	uint32_t n = 0;

	memset(k, 0, sizeof *k);
	if (pol->cond == NULL)
		return;
	stack[n++] = pol->cond;
	while (n != 0) {
		const struct dw_expr *e = stack[--n];
		if (e->op == DW_E_AND) {
			if (n + 2 > DW_N_ELEMENTS(stack))
				return;
			stack[n++] = e->k.b;     /* right after left */
			stack[n++] = e->k.a;
			continue;
		}
		if (dw_keyable(k, e)) {
			for (uint32_t i = 0; i < k->n_has; i++) {
				const struct dw_req *r = &k->reqs[k->has_req[i]];
				if (r->depth + 1 == k->depth &&
				    dw_paths_eq(r->path, r->depth, k->path, r->depth) &&
				    dw_str_eq(k->has_name[i], k->path[r->depth]))
					k->guarded = true;
			}
			return;
		}
		if (!dw_pure(k, e))
			break;
	}
	k->kind = DW_KEY_NONE;
}

static bool dw_group_matches(const struct dw_path_index *x, const struct dw_rule_key *k)
{
	if (!dw_paths_eq(x->path, x->depth, k->path, k->depth) || x->key_guarded != k->guarded ||
	    x->n_reqs != k->n_reqs)
		return false;
	for (uint32_t i = 0; i < k->n_reqs; i++)
		if (x->reqs[i].need != k->reqs[i].need ||
		    !dw_paths_eq(x->reqs[i].path, x->reqs[i].depth, k->reqs[i].path, k->reqs[i].depth))
			return false;
	return true;
}

static struct dw_str *dw_copy_path(struct dw_arena *a, const struct dw_str *p, uint32_t n)
{
	struct dw_str *c = DW_NEWN(a, struct dw_str, n ? n : 1);

	if (c != NULL && n != 0)
		memcpy(c, p, n * sizeof *p);
	return c;
}

/* Split bucket b's rules into plain ones and key groups. */
static int dw_bucket_index(const struct dw_authz *az, struct dw_bucket *b, bool conditions)
{
	struct dw_arena *a = (struct dw_arena *)&az->ps->arena;
	struct dw_rule_key *k = malloc(sizeof *k);
	int r = 0;

	if (k == NULL)
		return -ENOMEM;
	for (uint32_t idx = 0; idx < b->n && r == 0; idx++) {
		const struct dw_policy *pol = az->ps->policies[b->pol[idx]];
		struct dw_path_index *x;
		uint32_t g;

		dw_rule_key(pol, k);
		if (!conditions || k->kind == DW_KEY_NONE) {
			r = dw_push_u32(&b->plain, &b->n_plain, b->pol[idx]);
			continue;
		}
		for (g = 0; g < b->n_px; g++)
			if (dw_group_matches(&b->px[g], k))
				break;
		if (g == b->n_px) {
			struct dw_path_index *npx = realloc(b->px, (b->n_px + 1) * sizeof *npx);
			if (npx == NULL) {
				r = -ENOMEM;
				break;
			}
			b->px = npx;
			x = &b->px[g];
			memset(x, 0, sizeof *x);
			b->n_px++;
			/* names point into the policy set's AST: copy the arrays only */
			x->path = dw_copy_path(a, k->path, k->depth);
			x->depth = k->depth;
			x->key_guarded = k->guarded;
			x->n_reqs = k->n_reqs;
			x->reqs = DW_NEWN(a, struct dw_req, k->n_reqs ? k->n_reqs : 1);
			if (x->path == NULL || x->reqs == NULL) {
				r = -ENOMEM;
				break;
			}
			for (uint32_t i = 0; i < k->n_reqs; i++) {
				x->reqs[i] = k->reqs[i];
				x->reqs[i].path = dw_copy_path(a, k->reqs[i].path, k->reqs[i].depth);
				if (x->reqs[i].path == NULL)
					r = -ENOMEM;
			}
			if (r != 0)
				break;
		}
		x = &b->px[g];
		r = dw_push_u32(&x->all, &x->n_all, b->pol[idx]);
		if (r == 0 && k->like)
			r = dw_push_u32(&x->like, &x->n_like, b->pol[idx]);
		if (r == 0 && k->kind == DW_KEY_EQ)
			r = dw_keymap_add(&x->eq, k->key, b->pol[idx]);
		if (r == 0 && k->kind == DW_KEY_PREFIX) {
			uint32_t i;
			r = dw_keymap_add(&x->prefix, k->key, b->pol[idx]);
			for (i = 0; r == 0 && i < x->n_lens && x->lens[i] < k->key.n; i++)
				;
			if (r == 0 && (i == x->n_lens || x->lens[i] != k->key.n)) {
				r = dw_push_u32(&x->lens, &x->n_lens, 0);
				if (r == 0) {
					memmove(x->lens + i + 1, x->lens + i,
						(x->n_lens - 1 - i) * sizeof *x->lens);
					x->lens[i] = k->key.n;
				}
			}
		}
	}
	free(k);
	return r;
}

/* Add rule pol to the bucket of action u and of every entity below u. */
/* Entities below each group named by an `action in` scope, found with one pass
 * over the store's ancestor sets (not one pass per rule). */
struct dw_desc {
	const struct dw_uid *group;    /* NULL: empty slot */
	uint32_t n, cap;
	uint32_t *ents;                /* store indices of the entities below group */
};

struct dw_desc_map {
	struct dw_desc *slot;
	uint32_t mask;
};

static struct dw_desc *dw_desc_find(const struct dw_desc_map *m, const struct dw_uid *u)
{
	uint32_t i = (uint32_t)u->hash & m->mask;

	for (;;) {
		struct dw_desc *d = &m->slot[i];
		if (d->group == NULL || dw_uid_eq(d->group, u))
			return d;
		i = (i + 1) & m->mask;
	}
}

static void dw_desc_free(struct dw_desc_map *m)
{
	if (m->slot != NULL)
		for (uint32_t i = 0; i <= m->mask; i++)
			free(m->slot[i].ents);
	free(m->slot);
	m->slot = NULL;
}

static int dw_desc_build(const struct dw_policy_set *ps, const struct dw_store *st,
			 struct dw_desc_map *m)
{
	size_t groups = 0, slots = 16;

	for (uint32_t i = 0; i < ps->n_policies; i++) {
		const struct dw_scope *sc = &ps->policies[i]->action;
		groups += sc->kind == DW_SC_IN ? 1 : sc->kind == DW_SC_IN_LIST ? sc->n_list : 0;
	}
	while (slots < groups * 2)
		slots *= 2;
	m->slot = calloc(slots, sizeof *m->slot);
	if (m->slot == NULL)
		return -ENOMEM;
	m->mask = (uint32_t)(slots - 1);
	for (uint32_t i = 0; i < ps->n_policies; i++) {
		const struct dw_scope *sc = &ps->policies[i]->action;
		if (sc->kind == DW_SC_IN)
			dw_desc_find(m, sc->uid)->group = sc->uid;
		for (uint32_t k = 0; sc->kind == DW_SC_IN_LIST && k < sc->n_list; k++)
			dw_desc_find(m, sc->list[k])->group = sc->list[k];
	}
	if (groups == 0)
		return 0;
	for (size_t e = 0, n = dw_store_count(st); e < n; e++) {
		const struct dw_entity *ent = dw_store_at(st, e);
		for (uint32_t a = 0; a < ent->n_ancestors; a++) {
			struct dw_desc *d = dw_desc_find(m, ent->ancestors[a]);
			if (d->group == NULL)
				continue;
			if (d->n == d->cap) {
				uint32_t cap = d->cap ? d->cap * 2 : 4;
				uint32_t *v = realloc(d->ents, cap * sizeof *v);
				if (v == NULL)
					return -ENOMEM;
				d->ents = v;
				d->cap = cap;
			}
			d->ents[d->n++] = (uint32_t)e;
		}
	}
	return 0;
}

/* Add rule pol to the bucket of action u and, for `in`, of every entity below u. */
static int dw_index_under(struct dw_authz *az, const struct dw_desc_map *m,
			  const struct dw_uid *u, uint32_t pol, bool with_descendants)
{
	struct dw_bucket *b = dw_bucket_find(az, u);
	const struct dw_desc *d;
	int r;

	b->action = u;
	if ((r = dw_bucket_push(b, pol)) != 0)
		return r;
	if (!with_descendants || (d = dw_desc_find(m, u))->group == NULL)
		return 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct dw_entity *e = dw_store_at(az->st, d->ents[i]);
		b = dw_bucket_find(az, &e->uid);
		b->action = &e->uid;
		if ((r = dw_bucket_push(b, pol)) != 0)
			return r;
	}
	return 0;
}

int dw_authz_new(const struct dw_policy_set *ps, const struct dw_store *st, bool index_conditions,
		 struct dw_authz **out)
{
	struct dw_authz *az = calloc(1, sizeof *az);
	struct dw_desc_map desc = { NULL, 0 };
	size_t slots = 16, need;
	int r = 0;

	if (az == NULL)
		return -ENOMEM;
	az->ps = ps;
	az->st = st;
	/* Upper bound on distinct actions: every scope uid plus every entity. */
	need = dw_store_count(st);
	for (uint32_t i = 0; i < ps->n_policies; i++) {
		const struct dw_scope *sc = &ps->policies[i]->action;
		need += sc->kind == DW_SC_IN_LIST ? sc->n_list : 1;
	}
	while (slots < need * 2)
		slots *= 2;
	az->tab = calloc(slots, sizeof *az->tab);
	az->any = malloc((ps->n_policies ? ps->n_policies : 1) * sizeof *az->any);
	if (az->tab == NULL || az->any == NULL) {
		dw_authz_free(az);
		return -ENOMEM;
	}
	az->mask = (uint32_t)(slots - 1);
	r = dw_desc_build(ps, st, &desc);
	for (uint32_t i = 0; i < ps->n_policies && r == 0; i++) {
		const struct dw_policy *pol = ps->policies[i];
		const struct dw_scope *sc = &pol->action;
		if (pol->is_template)
			continue;              /* unlinked templates are never evaluated */
		switch (sc->kind) {
		case DW_SC_EQ:
			r = dw_index_under(az, &desc, sc->uid, i, false);
			break;
		case DW_SC_IN:
			r = dw_index_under(az, &desc, sc->uid, i, true);
			break;
		case DW_SC_IN_LIST:
			for (uint32_t k = 0; k < sc->n_list && r == 0; k++)
				r = dw_index_under(az, &desc, sc->list[k], i, true);
			break;
		default:
			az->any[az->n_any++] = i;
			break;
		}
	}
	dw_desc_free(&desc);
	/* Rules reached through several list elements were pushed out of order:
	 * sort and deduplicate each bucket, then merge in the unconstrained rules. */
	for (uint32_t s = 0; s <= az->mask && r == 0; s++) {
		struct dw_bucket *b = &az->tab[s];
		uint32_t *m, n = 0, i = 0, j = 0;
		if (b->action == NULL)
			continue;
		m = malloc(((size_t)b->n + az->n_any) * sizeof *m);
		if (m == NULL) {
			r = -ENOMEM;
			break;
		}
		for (uint32_t x = 1; x < b->n; x++) {       /* insertion sort: nearly sorted */
			uint32_t v = b->pol[x], y = x;
			while (y > 0 && b->pol[y - 1] > v) {
				b->pol[y] = b->pol[y - 1];
				y--;
			}
			b->pol[y] = v;
		}
		while (i < b->n || j < az->n_any) {
			uint32_t v = (j >= az->n_any || (i < b->n && b->pol[i] < az->any[j]))
					     ? b->pol[i++] : az->any[j++];
			if (n == 0 || m[n - 1] != v)
				m[n++] = v;
		}
		free(b->pol);
		b->pol = m;
		b->n = b->cap = n;
	}
	for (uint32_t s2 = 0; s2 <= az->mask && r == 0; s2++)
		if (az->tab[s2].action != NULL)
			r = dw_bucket_index(az, &az->tab[s2], index_conditions);
	if (r == 0 && az->n_any != 0) {
		az->any_bucket.pol = malloc(az->n_any * sizeof(uint32_t));
		if (az->any_bucket.pol == NULL)
			r = -ENOMEM;
		else {
			memcpy(az->any_bucket.pol, az->any, az->n_any * sizeof(uint32_t));
			az->any_bucket.n = az->any_bucket.cap = az->n_any;
			r = dw_bucket_index(az, &az->any_bucket, index_conditions);
		}
	}
	if (r != 0) {
		dw_authz_free(az);
		return r;
	}
	*out = az;
	return 0;
}

/* Resolve context.<path> in the request; NULL when it does not resolve. */
static const struct dw_val *dw_resolve(const struct dw_val *ctx, const struct dw_str *path,
				       uint32_t depth)
{
	const struct dw_val *v = ctx;

	for (uint32_t i = 0; i < depth; i++) {
		if (v->kind != DW_V_RECORD)
			return NULL;
		v = dw_rec_get(v->rec, path[i]);
		if (v == NULL)
			return NULL;
	}
	return v;
}

static bool dw_need_ok(const struct dw_val *v, uint8_t need)
{
	switch (need) {
	case DW_NEED_CONTAINER:
		return v->kind == DW_V_RECORD || v->kind == DW_V_ENTITY;
	case DW_NEED_LONG:
		return v->kind == DW_V_LONG;
	case DW_NEED_BOOL:
		return v->kind == DW_V_BOOL;
	default:
		return true;
	}
}

static void dw_take(uint32_t *cand, uint32_t *n, const uint32_t *v, uint32_t k)
{
	if (k == 0)
		return;             /* v may be NULL then */
	memcpy(cand + *n, v, k * sizeof *v);
	*n += k;
}

/* The rules of b that can hold for this context, ascending. */
static uint32_t dw_candidates(const struct dw_bucket *b, const struct dw_val *ctx, uint32_t *cand)
{
	uint32_t n = 0;
	bool sorted = true;

	dw_take(cand, &n, b->plain, b->n_plain);
	for (uint32_t g = 0; g < b->n_px; g++) {
		const struct dw_path_index *x = &b->px[g];
		const struct dw_val *v;
		const struct dw_key *k;
		bool clean = true;

		sorted = false;
		for (uint32_t i = 0; i < x->n_reqs && clean; i++) {
			v = dw_resolve(ctx, x->reqs[i].path, x->reqs[i].depth);
			clean = v != NULL && dw_need_ok(v, x->reqs[i].need);
		}
		if (!clean) {
			dw_take(cand, &n, x->all, x->n_all);       /* they may error */
			continue;
		}
		v = dw_resolve(ctx, x->path, x->depth);
		if (v == NULL) {
			/* `has` found the key absent from its record: every rule is false */
			const struct dw_val *parent = dw_resolve(ctx, x->path, x->depth - 1);
			if (x->key_guarded && parent != NULL && parent->kind == DW_V_RECORD)
				continue;
			dw_take(cand, &n, x->all, x->n_all);       /* they will error */
			continue;
		}
		if (v->kind != DW_V_STRING) {
			dw_take(cand, &n, x->like, x->n_like);     /* `like` on a non-string errors */
			continue;
		}
		if ((k = dw_keymap_get(&x->eq, v->s)) != NULL)
			dw_take(cand, &n, k->pol, k->n);
		for (uint32_t i = 0; i < x->n_lens && x->lens[i] <= v->s.n; i++)
			if ((k = dw_keymap_get(&x->prefix, dw_str_make(v->s.p, x->lens[i]))) != NULL)
				dw_take(cand, &n, k->pol, k->n);
	}
	if (!sorted) {
		/* reasons and errors are reported in rule order */
		for (uint32_t i = 1; i < n; i++) {
			uint32_t v = cand[i], j = i;
			while (j > 0 && cand[j - 1] > v) {
				cand[j] = cand[j - 1];
				j--;
			}
			cand[j] = v;
		}
	}
	return n;
}

int dw_authz_decide(const struct dw_authz *az, const struct dw_uid *principal,
		    const struct dw_uid *action, const struct dw_uid *resource,
		    const struct dw_rec *context, dw_temporal_fn temporal, dw_rule_gate_fn gate,
		    void *temporal_arg, struct dw_arena *scratch, struct dw_authz_result *out)
{
	const struct dw_bucket *b = dw_bucket_find(az, action);
	uint32_t n_forbid = 0, n_permit = 0, n;
	uint32_t *forbids, *permits, *list;
	struct dw_eval_ctx c;

	if (b->action == NULL)
		b = &az->any_bucket;
	memset(out, 0, sizeof *out);
	list = DW_NEWN(scratch, uint32_t, b->n ? b->n : 1);
	if (list == NULL)
		return -ENOMEM;
	{
		struct dw_val cv = { .kind = DW_V_RECORD, .rec = context ? context : &dw_empty_rec };
		n = dw_candidates(b, &cv, list);
	}
	forbids = DW_NEWN(scratch, uint32_t, n ? n : 1);
	permits = DW_NEWN(scratch, uint32_t, n ? n : 1);
	if (forbids == NULL || permits == NULL)
		return -ENOMEM;
	memset(&c, 0, sizeof c);
	c.store = az->st;
	c.scratch = scratch;
	c.var[DW_VAR_PRINCIPAL] = dw_val_entity(principal);
	c.var[DW_VAR_ACTION] = dw_val_entity(action);
	c.var[DW_VAR_RESOURCE] = dw_val_entity(resource);
	c.var[DW_VAR_CONTEXT].kind = DW_V_RECORD;
	c.var[DW_VAR_CONTEXT].rec = context ? context : &dw_empty_rec;
	c.temporal = temporal;
	c.temporal_arg = temporal_arg;

	for (uint32_t k = 0; k < n; k++) {
		const struct dw_policy *pol = az->ps->policies[list[k]];
		struct dw_val v;

		out->n_evaluated++;
		if (!dw_scope_matches(az->st, &pol->principal, principal) ||
		    !dw_scope_matches(az->st, &pol->resource, resource))
			continue;
		if (gate != NULL && !gate(temporal_arg, list[k]))
			continue;
		if (pol->cond == NULL) {
			v = dw_val_bool(true);
		} else {
			struct dw_arena_mark m = dw_arena_mark(scratch);
			int er;

			c.depth = 0;
			er = dw_eval(&c, pol->cond, &v);
			/* values computed for this rule are dead now (v is a Bool or an error) */
			dw_arena_reset(scratch, m);
			if (er == 0 && v.kind != DW_V_BOOL) {
				c.err = DW_ERR_TYPE;
				snprintf(c.msg, sizeof c.msg, "type error: the policy condition "
					 "evaluated to a non-boolean value");
			}
			if (c.err != DW_ERR_NONE) {
				struct dw_authz_error *ne;
				if (c.err == DW_ERR_NOMEM)
					return -ENOMEM;
				ne = DW_NEWN(scratch, struct dw_authz_error, out->n_errors + 1);
				if (ne == NULL)
					return -ENOMEM;
				if (out->n_errors)
					memcpy(ne, out->errors, out->n_errors * sizeof *ne);
				ne[out->n_errors].policy = list[k];
				ne[out->n_errors].msg = dw_arena_strdup(scratch, c.msg);
				out->errors = ne;
				out->n_errors++;
				c.err = DW_ERR_NONE;
				continue;
			}
		}
		if (!v.b)
			continue;
		if (pol->effect == DW_FORBID)
			forbids[n_forbid++] = list[k];
		else
			permits[n_permit++] = list[k];
	}
	if (n_forbid != 0) {
		out->allow = false;
		out->reasons = forbids;
		out->n_reasons = n_forbid;
	} else if (n_permit != 0) {
		out->allow = true;
		out->reasons = permits;
		out->n_reasons = n_permit;
	} else {
		out->allow = false;
		out->reasons = forbids;
		out->n_reasons = 0;
	}
	return 0;
}
