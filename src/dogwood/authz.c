/* authz.c - see authz.h.  Cedar's authorization algorithm (spec/cedar.md §3):
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

struct dw_path_index {
	uint32_t depth;
	const struct dw_str *path;     /* attribute names below `context` */
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

/* If e is context.<n1>.<n2>…, fill path (reversed walk) and return its depth. */
static uint32_t dw_context_path(const struct dw_expr *e, const struct dw_str **names,
				struct dw_str *buf, uint32_t cap)
{
	uint32_t d = 0;

	while (e->op == DW_E_ATTR) {
		if (d == cap)
			return 0;
		buf[d++] = e->attr.name;
		e = e->attr.e;
	}
	if (e->op != DW_E_VAR || e->var != DW_VAR_CONTEXT || d == 0)
		return 0;
	for (uint32_t i = 0; i < d / 2; i++) {
		struct dw_str t = buf[i];
		buf[i] = buf[d - 1 - i];
		buf[d - 1 - i] = t;
	}
	*names = buf;
	return d;
}

enum dw_keykind { DW_KEY_NONE = 0, DW_KEY_EQ, DW_KEY_PREFIX };

/* Classify a rule's first evaluated condition. */
static enum dw_keykind dw_first_key(const struct dw_policy *pol, struct dw_str *path,
				    uint32_t *depth, struct dw_str *key, bool *is_like)
{
	const struct dw_expr *e = pol->cond;
	const struct dw_str *names;

	if (e == NULL)
		return DW_KEY_NONE;
	while (e->op == DW_E_AND)
		e = e->k.a;
	if (e->op == DW_E_EQ) {
		const struct dw_expr *a = e->k.a, *b = e->k.b;
		if (a->op == DW_E_LIT) {
			const struct dw_expr *t = a;
			a = b;
			b = t;
		}
		if (b->op != DW_E_LIT || b->lit.kind != DW_V_STRING)
			return DW_KEY_NONE;
		*depth = dw_context_path(a, &names, path, 8);
		if (*depth == 0)
			return DW_KEY_NONE;
		*key = b->lit.s;
		*is_like = false;
		return DW_KEY_EQ;
	}
	if (e->op == DW_E_LIKE) {
		const struct dw_pattern *pat = e->like.pat;
		*depth = dw_context_path(e->like.e, &names, path, 8);
		if (*depth == 0)
			return DW_KEY_NONE;
		*is_like = true;
		*key = pat->piece[0];
		if (pat->n_pieces == 1)
			return DW_KEY_EQ;
		return pat->piece[0].n ? DW_KEY_PREFIX : DW_KEY_NONE;
	}
	return DW_KEY_NONE;
}

static bool dw_path_eq(const struct dw_path_index *x, const struct dw_str *path, uint32_t depth)
{
	if (x->depth != depth)
		return false;
	for (uint32_t i = 0; i < depth; i++)
		if (!dw_str_eq(x->path[i], path[i]))
			return false;
	return true;
}

/* Split bucket b's rules into plain ones and path groups. */
static int dw_bucket_index(const struct dw_authz *az, struct dw_bucket *b)
{
	struct dw_arena *a = (struct dw_arena *)&az->ps->arena;
	int r = 0;

	for (uint32_t k = 0; k < b->n && r == 0; k++) {
		const struct dw_policy *pol = az->ps->policies[b->pol[k]];
		struct dw_str path[8], key;
		uint32_t depth = 0, g;
		bool like = false;
		enum dw_keykind kind = dw_first_key(pol, path, &depth, &key, &like);
		struct dw_path_index *x;

		if (kind == DW_KEY_NONE) {
			r = dw_push_u32(&b->plain, &b->n_plain, b->pol[k]);
			continue;
		}
		for (g = 0; g < b->n_px; g++)
			if (dw_path_eq(&b->px[g], path, depth))
				break;
		if (g == b->n_px) {
			struct dw_path_index *npx = realloc(b->px, (b->n_px + 1) * sizeof *npx);
			struct dw_str *p;
			if (npx == NULL)
				return -ENOMEM;
			b->px = npx;
			memset(&b->px[g], 0, sizeof b->px[g]);
			/* path names point into the policy set's AST: copy the array only */
			p = DW_NEWN(a, struct dw_str, depth);
			if (p == NULL)
				return -ENOMEM;
			memcpy(p, path, depth * sizeof *p);
			b->px[g].path = p;
			b->px[g].depth = depth;
			b->n_px++;
		}
		x = &b->px[g];
		r = dw_push_u32(&x->all, &x->n_all, b->pol[k]);
		if (r == 0 && like)
			r = dw_push_u32(&x->like, &x->n_like, b->pol[k]);
		if (r == 0 && kind == DW_KEY_EQ)
			r = dw_keymap_add(&x->eq, key, b->pol[k]);
		if (r == 0 && kind == DW_KEY_PREFIX) {
			uint32_t i;
			r = dw_keymap_add(&x->prefix, key, b->pol[k]);
			for (i = 0; r == 0 && i < x->n_lens && x->lens[i] < key.n; i++)
				;
			if (r == 0 && (i == x->n_lens || x->lens[i] != key.n)) {
				r = dw_push_u32(&x->lens, &x->n_lens, 0);
				if (r == 0) {
					memmove(x->lens + i + 1, x->lens + i,
						(x->n_lens - 1 - i) * sizeof *x->lens);
					x->lens[i] = key.n;
				}
			}
		}
	}
	return r;
}

/* Add rule pol to the bucket of action u and of every entity below u. */
static int dw_index_under(struct dw_authz *az, const struct dw_uid *u, uint32_t pol,
			  bool with_descendants)
{
	struct dw_bucket *b = dw_bucket_find(az, u);
	int r;

	b->action = u;
	if ((r = dw_bucket_push(b, pol)) != 0)
		return r;
	if (!with_descendants)
		return 0;
	for (size_t i = 0, n = dw_store_count(az->st); i < n; i++) {
		const struct dw_entity *e = dw_store_at(az->st, i);
		if (e->n_ancestors == 0 || dw_uid_eq(&e->uid, u) || !dw_store_in(az->st, &e->uid, u))
			continue;
		b = dw_bucket_find(az, &e->uid);
		b->action = &e->uid;
		if ((r = dw_bucket_push(b, pol)) != 0)
			return r;
	}
	return 0;
}

int dw_authz_new(const struct dw_policy_set *ps, const struct dw_store *st, struct dw_authz **out)
{
	struct dw_authz *az = calloc(1, sizeof *az);
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
	for (uint32_t i = 0; i < ps->n_policies && r == 0; i++) {
		const struct dw_policy *pol = ps->policies[i];
		const struct dw_scope *sc = &pol->action;
		if (pol->is_template)
			continue;              /* unlinked templates are never evaluated */
		switch (sc->kind) {
		case DW_SC_EQ:
			r = dw_index_under(az, sc->uid, i, false);
			break;
		case DW_SC_IN:
			r = dw_index_under(az, sc->uid, i, true);
			break;
		case DW_SC_IN_LIST:
			for (uint32_t k = 0; k < sc->n_list && r == 0; k++)
				r = dw_index_under(az, sc->list[k], i, true);
			break;
		default:
			az->any[az->n_any++] = i;
			break;
		}
	}
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
			r = dw_bucket_index(az, &az->tab[s2]);
	if (r == 0 && az->n_any != 0) {
		az->any_bucket.pol = malloc(az->n_any * sizeof(uint32_t));
		if (az->any_bucket.pol == NULL)
			r = -ENOMEM;
		else {
			memcpy(az->any_bucket.pol, az->any, az->n_any * sizeof(uint32_t));
			az->any_bucket.n = az->any_bucket.cap = az->n_any;
			r = dw_bucket_index(az, &az->any_bucket);
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
static const struct dw_val *dw_resolve(const struct dw_rec *ctx, const struct dw_path_index *x)
{
	const struct dw_val *v = NULL;

	for (uint32_t i = 0; i < x->depth; i++) {
		if (ctx == NULL)
			return NULL;
		v = dw_rec_get(ctx, x->path[i]);
		if (v == NULL)
			return NULL;
		ctx = v->kind == DW_V_RECORD ? v->rec : NULL;
	}
	return v;
}

static void dw_take(uint32_t *cand, uint32_t *n, const uint32_t *v, uint32_t k)
{
	if (k == 0)
		return;             /* v may be NULL then */
	memcpy(cand + *n, v, k * sizeof *v);
	*n += k;
}

/* The rules of b that can hold for this context, ascending. */
static uint32_t dw_candidates(const struct dw_bucket *b, const struct dw_rec *ctx, uint32_t *cand)
{
	uint32_t n = 0;
	bool sorted = true;

	dw_take(cand, &n, b->plain, b->n_plain);
	for (uint32_t g = 0; g < b->n_px; g++) {
		const struct dw_path_index *x = &b->px[g];
		const struct dw_val *v = dw_resolve(ctx, x);
		const struct dw_key *k;

		sorted = false;
		if (v == NULL) {
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
		    const struct dw_rec *context, struct dw_arena *scratch,
		    struct dw_authz_result *out)
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
	n = dw_candidates(b, context ? context : &dw_empty_rec, list);
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

	for (uint32_t k = 0; k < n; k++) {
		const struct dw_policy *pol = az->ps->policies[list[k]];
		struct dw_val v;

		out->n_evaluated++;
		if (!dw_scope_matches(az->st, &pol->principal, principal) ||
		    !dw_scope_matches(az->st, &pol->resource, resource))
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
