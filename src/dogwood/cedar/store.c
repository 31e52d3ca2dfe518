/* store.c - the entity store (see store.h).
 *
 * Divisions, in order:
 *   1. the table: open addressing on the uid hash, linear probing
 *   2. loading a JSON entities file: one entity at a time, schema checks, then an
 *      all-or-nothing commit (a failed file leaves the store as it was)
 *   3. finishing: the schema's action entities, the transitive closure of parents
 *      (Kahn's algorithm, no recursion) and the cycle report
 *   4. lookups
 *
 * Everything an entity owns (uid, attribute and tag values, parent and ancestor
 * arrays) lives in the store's arena.  Only the two arrays that grow while
 * loading, the entity list and the hash table, are malloc'd: growing them inside
 * an arena would strand every old copy. */
#include "json_load.h"
#include "store.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_value.h"
#include "schema.h"

#define ST_EMPTY UINT32_MAX
/* Indices are uint32_t and the table keeps twice as many slots as entities. */
#define ST_MAX_ENTITIES (UINT32_MAX / 4)

struct st_slot {
	uint64_t hash;
	uint32_t idx;                 /* into ents; ST_EMPTY when free */
};

struct dw_store {
	struct dw_arena arena;
	struct dw_entity **ents;      /* insertion order */
	size_t n, cap;
	struct st_slot *slots;        /* mask + 1 slots, a power of two >= 2n */
	size_t mask;
	bool finished;
};

/* --- 1. the table ------------------------------------------------------------ */

struct dw_store *dw_store_new(void)
{
	struct dw_store *st = calloc(1, sizeof *st);

	if (st != NULL)
		dw_arena_init(&st->arena);
	return st;
}

void dw_store_free(struct dw_store *st)
{
	if (st == NULL)
		return;
	free(st->ents);
	free(st->slots);
	dw_arena_fini(&st->arena);
	free(st);
}

/* Total order for ancestor sets: hash first (cheap), then the bytes. */
static int st_uid_cmp(const struct dw_uid *a, const struct dw_uid *b)
{
	int c;

	if (a == b)
		return 0;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	c = dw_str_cmp(a->type, b->type);
	return c != 0 ? c : dw_str_cmp(a->id, b->id);
}

static int st_uid_qcmp(const void *x, const void *y)
{
	return st_uid_cmp(*(const struct dw_uid *const *)x, *(const struct dw_uid *const *)y);
}

static uint32_t st_find(const struct dw_store *st, const struct dw_uid *u)
{
	if (st->slots == NULL)
		return ST_EMPTY;
	for (size_t i = u->hash & st->mask;; i = (i + 1) & st->mask) {
		const struct st_slot *s = &st->slots[i];

		if (s->idx == ST_EMPTY)
			return ST_EMPTY;
		if (s->hash == u->hash && dw_uid_eq(&st->ents[s->idx]->uid, u))
			return s->idx;
	}
}

/* Insert ents[idx]; returns ST_EMPTY, or the index already holding that uid (the
 * table is then unchanged).  The caller reserved room. */
static uint32_t st_insert(struct dw_store *st, uint32_t idx)
{
	const struct dw_uid *u = &st->ents[idx]->uid;

	for (size_t i = u->hash & st->mask;; i = (i + 1) & st->mask) {
		struct st_slot *s = &st->slots[i];

		if (s->idx == ST_EMPTY) {
			s->hash = u->hash;
			s->idx = idx;
			return ST_EMPTY;
		}
		if (s->hash == u->hash && dw_uid_eq(&st->ents[s->idx]->uid, u))
			return s->idx;
	}
}

/* Refill the table with ents[0, n): after a rollback or a resize. */
static void st_rebuild(struct dw_store *st, size_t n)
{
	for (size_t i = 0; i <= st->mask; i++)
		st->slots[i].idx = ST_EMPTY;
	for (size_t i = 0; i < n; i++)
		(void)st_insert(st, (uint32_t)i);   /* ents[0, n) hold no duplicates */
}

/* Room for `total` entities in the list and the table; the content is kept. */
static int st_reserve(struct dw_store *st, size_t total)
{
	size_t want = 16;

	if (total > ST_MAX_ENTITIES)
		return -E2BIG;
	if (total > st->cap) {
		size_t cap = st->cap ? st->cap : 64;
		struct dw_entity **v;
		while (cap < total)
			cap *= 2;
		v = realloc(st->ents, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		st->ents = v;
		st->cap = cap;
	}
	while (want < 2 * total)
		want *= 2;
	if (st->slots == NULL || want > st->mask + 1) {
		struct st_slot *s = malloc(want * sizeof *s);
		if (s == NULL)
			return -ENOMEM;
		free(st->slots);
		st->slots = s;
		st->mask = want - 1;
		st_rebuild(st, st->n);
	}
	return 0;
}

/* Cedar's EntityType::is_action: the last path component is `Action`. */
static bool st_is_action_type(struct dw_str t)
{
	return t.n >= 6 && memcmp(t.p + t.n - 6, "Action", 6) == 0 &&
	       (t.n == 6 || (t.n >= 8 && t.p[t.n - 7] == ':' && t.p[t.n - 8] == ':'));
}

/* --- 2. loading ---------------------------------------------------------------- */

struct ld {
	struct dw_store *st;
	const struct dw_schema *schema;     /* may be NULL */
	const char *file;
	struct dw_diags *diags;
	struct dw_buf where;                /* "entity User::\"alice\"" or "entities[3]" */
	uint64_t **allowed;                 /* per etype index: allowed ancestor types */
	char err[1024];
};

static int ld_diag(struct ld *l, const char *msg)
{
	int r = dw_diags_add(l->diags, DW_SEV_ERROR, l->file, NULL, 0, 0, 0, "%s", msg);

	return r == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* "<where>: <message>" as one diagnostic; -EINVAL. */
static int ld_fail(struct ld *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int ld_fail(struct ld *l, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(l->err, sizeof l->err, "%s: %s", l->where.p ? l->where.p : "entities", msg);
	return ld_diag(l, l->err);
}

/* A failure of dw_json_*: its message is complete, or the call ran out of memory. */
static int ld_json_fail(struct ld *l, int r)
{
	return r == -ENOMEM ? -ENOMEM : ld_diag(l, l->err);
}

/* Text of a uid for messages, in a small ring of buffers (two may be in use). */
struct ld_txt {
	struct dw_buf b[2];
	int next;
};

static const char *ld_uid(struct ld_txt *t, const struct dw_uid *u)
{
	struct dw_buf *b = &t->b[t->next];

	t->next ^= 1;
	b->n = 0;
	if (dw_uid_format(b, u) != 0)
		return "<out of memory>";
	return b->p;
}

static void ld_txt_free(struct ld_txt *t)
{
	dw_buf_free(&t->b[0]);
	dw_buf_free(&t->b[1]);
}

/* May an entity of type `child` have an ancestor of type `anc`?  Cedar checks
 * every parent against the transitive closure of memberOfTypes (its
 * allowed_parent_types is computed from the closed `descendants` relation), so
 * `User in [Group]; Group in [Org]` lets a User name an Org as a direct parent.
 * Rows are computed on first use: most schemas have few types, files many
 * entities of each. */
static int ld_allowed(struct ld *l, const struct dw_etype *child, const struct dw_etype *anc,
		      bool *ok)
{
	uint32_t n = l->schema->n_etypes, words = (n + 63) / 64;
	uint64_t *row;
	uint32_t *stack;
	size_t sp = 0;

	*ok = false;
	if (child->index >= n || anc->index >= n)
		return 0;   /* not this schema's types: refuse */
	if (l->allowed == NULL) {
		l->allowed = calloc(n, sizeof *l->allowed);
		if (l->allowed == NULL)
			return -ENOMEM;
	}
	row = l->allowed[child->index];
	if (row == NULL) {
		row = calloc(words ? words : 1, sizeof *row);
		stack = malloc(((size_t)n + 1) * sizeof *stack);
		if (row == NULL || stack == NULL) {
			free(row);
			free(stack);
			return -ENOMEM;
		}
		/* depth-first over memberOfTypes with an explicit stack; each type is
		 * pushed once when its bit is first set, the child once more at the
		 * start (`entity Group in [Group]` reaches itself): n + 1 slots */
		stack[sp++] = child->index;
		while (sp > 0) {
			const struct dw_etype *t = l->schema->etypes[stack[--sp]];
			for (uint32_t i = 0; i < t->n_member_of; i++) {
				uint32_t k = t->member_of[i]->index;
				if (k >= n || (row[k / 64] >> (k % 64) & 1))
					continue;
				row[k / 64] |= (uint64_t)1 << (k % 64);
				stack[sp++] = k;
			}
		}
		free(stack);
		l->allowed[child->index] = row;
	}
	*ok = (row[anc->index / 64] >> (anc->index % 64) & 1) != 0;
	return 0;
}

static void ld_fini(struct ld *l)
{
	if (l->allowed != NULL) {
		for (uint32_t i = 0; i < l->schema->n_etypes; i++)
			free(l->allowed[i]);
		free(l->allowed);
	}
	dw_buf_free(&l->where);
}

static bool st_enum_has(const struct dw_etype *et, struct dw_str id)
{
	for (uint32_t i = 0; i < et->n_enum; i++)
		if (dw_str_eq(et->enum_ids[i], id))
			return true;
	return false;
}

/* An action entity's parents agree with the schema when each is one of the
 * action's (transitive) groups and together with their own groups they reach all
 * of them: both the direct groups and the fully closed set are accepted, and
 * anything the schema does not say is refused (Cedar: "definition of action ..
 * does not match its schema declaration"). */
static bool st_action_parents_ok(const struct dw_schema *s, const struct dw_action *act,
				 const struct dw_uid *const *par, uint32_t n,
				 const struct dw_uid **bad, const struct dw_action **missing)
{
	*bad = NULL;
	*missing = NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct dw_action *g = dw_schema_find_action(s, par[i]->type, par[i]->id);
		if (g == NULL || g == act || !dw_schema_action_in(s, act, g)) {
			*bad = par[i];
			return false;
		}
	}
	for (uint32_t k = 0; k < act->n_parents; k++) {
		const struct dw_action *want = act->parents[k];
		bool found = false;
		for (uint32_t i = 0; i < n && !found; i++) {
			const struct dw_action *g = dw_schema_find_action(s, par[i]->type, par[i]->id);
			found = g == want || dw_schema_action_in(s, g, want);
		}
		if (!found) {
			*missing = want;
			return false;
		}
	}
	return true;
}

static int ld_action_mismatch(struct ld *l, const struct dw_uid *bad,
			      const struct dw_action *missing)
{
	struct ld_txt t = { 0 };
	int r;

	if (bad != NULL) {
		r = ld_fail(l, "definition of this action does not match its schema declaration: "
			    "%s is not one of its action groups", ld_uid(&t, bad));
	} else {
		struct dw_uid mu;
		dw_uid_init(&mu, missing->type, missing->id);
		r = ld_fail(l, "definition of this action does not match its schema declaration: "
			    "it is missing its action group %s", ld_uid(&t, &mu));
	}
	ld_txt_free(&t);
	return r;
}

/* The uid of an entity or parent: {"type","id"} or {"__entity": {..}}; Cedar's
 * entities format has no Type::"id" strings. */
static int ld_uid_json(struct ld *l, json_t *j, const char *where, const struct dw_uid **out)
{
	if (!json_is_object(j)) {
		snprintf(l->err, sizeof l->err, "%s: expected an entity reference "
			 "{\"type\": .., \"id\": ..}, got %s", where,
			 json_is_string(j) ? "a string" : "another JSON value");
		return ld_diag(l, l->err);
	}
	int r = dw_json_uid(&l->st->arena, j, where, out, l->err, sizeof l->err);
	return r ? ld_json_fail(l, r) : 0;
}

static const struct dw_attr *st_find_attr(const struct dw_type *rt, struct dw_str name)
{
	uint32_t lo = 0, hi = rt->rec.n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(rt->rec.v[mid].name, name);
		if (c == 0)
			return &rt->rec.v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* "attrs" or "tags": an object whose keys are names (never escapes), each value
 * parsed against shape's attribute type (attrs), or tag_type (tags), or plainly
 * when both are NULL.  label is "attribute" or "tag". */
static int ld_map(struct ld *l, json_t *obj, const struct dw_type *shape,
		  const struct dw_type *tag_type, const char *label, const struct dw_rec **out)
{
	size_t n = json_object_size(obj), k = 0, base = l->where.n;
	struct dw_field *f;
	const struct dw_rec *rec;
	const char *key;
	size_t klen;
	json_t *v;
	uint32_t dup;
	int r = 0;

	if (n > UINT32_MAX)
		return ld_fail(l, "more than 2^32 %ss", label);
	f = malloc((n ? n : 1) * sizeof *f);
	if (f == NULL)
		return -ENOMEM;
	if (shape != NULL) {
		/* undeclared first: a misspelt attribute explains the missing one */
		json_object_keylen_foreach(obj, key, klen, v) {
			if (st_find_attr(shape, dw_str_make(key, klen)) == NULL) {
				struct dw_buf q = { 0 };
				r = dw_buf_put_quoted(&q, dw_str_make(key, klen)) ? -ENOMEM
				    : ld_fail(l, "attribute %s: not declared in the schema", q.p);
				dw_buf_free(&q);
				break;
			}
		}
	}
	if (r == 0) {
		json_object_keylen_foreach(obj, key, klen, v) {
			const struct dw_type *t = tag_type;
			char *copy;

			if (shape != NULL)
				t = st_find_attr(shape, dw_str_make(key, klen))->type;
			/* where becomes "entity X: attribute \"k\"" for the value */
			if (dw_buf_printf(&l->where, ": %s ", label) != 0 ||
			    dw_buf_put_quoted(&l->where, dw_str_make(key, klen)) != 0) {
				r = -ENOMEM;
				break;
			}
			r = dw_json_value(&l->st->arena, l->schema, t, v, l->where.p, &f[k].val,
					  l->err, sizeof l->err);
			l->where.n = base;
			l->where.p[base] = '\0';
			if (r != 0) {
				r = ld_json_fail(l, r);
				break;
			}
			copy = dw_arena_strndup(&l->st->arena, key, klen);
			if (copy == NULL) {
				r = -ENOMEM;
				break;
			}
			f[k++].key = dw_str_make(copy, klen);
		}
	}
	for (uint32_t i = 0; r == 0 && shape != NULL && i < shape->rec.n; i++) {
		const struct dw_attr *ad = &shape->rec.v[i];
		struct dw_buf q = { 0 };

		if (!ad->required || json_object_getn(obj, ad->name.p ? ad->name.p : "", ad->name.n))
			continue;
		r = dw_buf_put_quoted(&q, ad->name) ? -ENOMEM
		    : ld_fail(l, "attribute %s: required attribute is missing", q.p);
		dw_buf_free(&q);
	}
	if (r == 0) {
		rec = dw_rec_build(&l->st->arena, f, (uint32_t)k, &dup);
		if (rec != NULL)
			*out = rec;
		else if (dup == UINT32_MAX)
			r = -ENOMEM;
		else
			r = ld_fail(l, "duplicate %s \"%.*s\"", label, (int)f[dup].key.n, f[dup].key.p);
	}
	free(f);
	return r;
}

/* Sort parents by the ancestor order and drop repeats: Cedar keeps them in a set. */
static uint32_t st_dedup_parents(const struct dw_uid **p, uint32_t n)
{
	uint32_t m = 0;

	if (n > 1)
		qsort(p, n, sizeof *p, st_uid_qcmp);
	for (uint32_t i = 0; i < n; i++)
		if (m == 0 || !dw_uid_eq(p[m - 1], p[i]))
			p[m++] = p[i];
	return m;
}

static int ld_parents(struct ld *l, json_t *arr, const struct dw_uid *self,
		      const struct dw_etype *et, const struct dw_action *act,
		      struct dw_entity *e)
{
	size_t n = json_array_size(arr);
	const struct dw_uid **p;
	struct ld_txt t = { 0 };
	char where[320];
	int r = 0;

	if (n > ST_MAX_ENTITIES)
		return ld_fail(l, "too many parents");
	p = DW_NEWN(&l->st->arena, const struct dw_uid *, n ? n : 1);
	if (p == NULL)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		bool ok = true;

		/* a long uid may cut this short: it only prefixes messages */
		snprintf(where, sizeof where, "%s: parents[%zu]", l->where.p, i);
		r = ld_uid_json(l, json_array_get(arr, i), where, &p[i]);
		if (r != 0)
			break;
		if (l->schema == NULL) {
			/* checked even without a schema (Cedar's ActionParentIsNotAction) */
			if (st_is_action_type(self->type) && !st_is_action_type(p[i]->type))
				r = ld_fail(l, "parent %s: the parents of an action must be actions",
					    ld_uid(&t, p[i]));
			continue;
		}
		if (et != NULL) {
			const struct dw_etype *pt = dw_schema_find_etype(l->schema, p[i]->type);
			if (pt != NULL)
				r = ld_allowed(l, et, pt, &ok);
			if (r == 0 && (pt == NULL || !ok))
				r = ld_fail(l, "parent %s: %.*s is not allowed to have an ancestor of "
					    "type %.*s according to the schema", ld_uid(&t, p[i]),
					    (int)et->name.n, et->name.p, (int)p[i]->type.n,
					    p[i]->type.p);
			if (r == 0 && pt->is_enum && !st_enum_has(pt, p[i]->id))
				r = ld_fail(l, "parent %s is of an enumerated entity type, but its id "
					    "is not declared as a valid eid", ld_uid(&t, p[i]));
		}
	}
	ld_txt_free(&t);
	if (r != 0)
		return r;
	e->n_parents = st_dedup_parents(p, (uint32_t)n);
	e->parents = p;
	if (act != NULL) {
		const struct dw_uid *bad;
		const struct dw_action *missing;
		if (!st_action_parents_ok(l->schema, act, e->parents, e->n_parents, &bad, &missing))
			return ld_action_mismatch(l, bad, missing);
	}
	return 0;
}

static bool ld_key_is(const char *k, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(k, want, n) == 0;
}

/* One element of the entities array. */
static int ld_entity(struct ld *l, json_t *jo, size_t i, struct dw_entity **out)
{
	const struct dw_etype *et = NULL;
	const struct dw_action *act = NULL;
	const struct dw_uid *uid;
	struct dw_entity *e;
	json_t *ju, *ja, *jp, *jt, *v;
	const char *key;
	size_t klen;
	char at[48];
	int r;

	l->where.n = 0;
	if (dw_buf_printf(&l->where, "entities[%zu]", i) != 0)
		return -ENOMEM;
	if (!json_is_object(jo))
		return ld_fail(l, "expected an entity object {\"uid\", \"attrs\", \"parents\"}");
	ju = json_object_get(jo, "uid");
	if (ju == NULL)
		return ld_fail(l, "missing \"uid\"");
	snprintf(at, sizeof at, "entities[%zu]: uid", i);
	r = ld_uid_json(l, ju, at, &uid);
	if (r != 0)
		return r;
	l->where.n = 0;
	if (dw_buf_put(&l->where, "entity ", 7) != 0 || dw_uid_format(&l->where, uid) != 0)
		return -ENOMEM;

	/* Cedar requires uid, attrs and parents and allows tags.  Other keys are
	 * refused: serde would drop them, and a misspelt "tags" must not vanish. */
	json_object_keylen_foreach(jo, key, klen, v) {
		if (!ld_key_is(key, klen, "uid") && !ld_key_is(key, klen, "attrs") &&
		    !ld_key_is(key, klen, "parents") && !ld_key_is(key, klen, "tags"))
			return ld_fail(l, "unexpected key \"%s\" (an entity has \"uid\", \"attrs\", "
				       "\"parents\" and optionally \"tags\")", key);
	}
	ja = json_object_get(jo, "attrs");
	jp = json_object_get(jo, "parents");
	jt = json_object_get(jo, "tags");
	if (ja == NULL)
		return ld_fail(l, "missing \"attrs\" (use {} for none)");
	if (jp == NULL)
		return ld_fail(l, "missing \"parents\" (use [] for none)");
	if (!json_is_object(ja))
		return ld_fail(l, "\"attrs\" must be an object");
	if (!json_is_array(jp))
		return ld_fail(l, "\"parents\" must be an array");
	if (jt != NULL && !json_is_object(jt))
		return ld_fail(l, "\"tags\" must be an object");

	if (l->schema != NULL) {
		if (st_is_action_type(uid->type)) {
			act = dw_schema_find_action(l->schema, uid->type, uid->id);
			if (act == NULL)
				return ld_fail(l, "action is not declared in the schema");
			/* Cedar 4 actions have neither attributes nor tags */
			if (json_object_size(ja) != 0 || (jt != NULL && json_object_size(jt) != 0))
				return ld_fail(l, "definition of this action does not match its "
					       "schema declaration: actions have no attributes or tags");
		} else {
			et = dw_schema_find_etype(l->schema, uid->type);
			if (et == NULL)
				return ld_fail(l, "entity type %.*s is not declared in the schema",
					       (int)uid->type.n, uid->type.p);
			if (et->is_enum && !st_enum_has(et, uid->id))
				return ld_fail(l, "this entity is of an enumerated entity type, but "
					       "its id is not declared as a valid eid");
			if (et->tags == NULL && jt != NULL && json_object_size(jt) != 0) {
				const char *k1 = json_object_iter_key(json_object_iter(jt));
				struct dw_buf q = { 0 };
				r = dw_buf_put_quoted(&q, dw_str_make(k1, json_object_iter_key_len(
								  json_object_iter(jt))))
					    ? -ENOMEM
					    : ld_fail(l, "tag %s: entity type %.*s has no tags "
						      "according to the schema", q.p, (int)et->name.n,
						      et->name.p);
				dw_buf_free(&q);
				return r;
			}
		}
	}

	e = DW_NEW(&l->st->arena, struct dw_entity);
	if (e == NULL)
		return -ENOMEM;
	e->uid = *uid;
	e->attrs = &dw_empty_rec;
	e->tags = &dw_empty_rec;
	r = ld_map(l, ja, et ? et->shape : NULL, NULL, "attribute", &e->attrs);
	if (r == 0 && jt != NULL)
		r = ld_map(l, jt, NULL, et ? et->tags : NULL, "tag", &e->tags);
	if (r == 0)
		r = ld_parents(l, jp, &e->uid, et, act, e);
	if (r != 0)
		return r;
	*out = e;
	return 0;
}

int dw_store_add_json(struct dw_store *st, const struct dw_schema *schema, const char *file,
		      const char *src, size_t len, struct dw_diags *diags)
{
	struct dw_arena_mark mark = dw_arena_mark(&st->arena);
	struct ld l = { .st = st, .schema = schema, .file = file, .diags = diags };
	struct dw_entity **batch = NULL;
	json_error_t jerr;
	json_t *root;
	size_t n = 0, old = st->n;
	int r = 0;

	if (st->finished)
		return ld_diag(&l, "entities cannot be added after dw_store_finish");
	if (len > UINT32_MAX)
		return ld_diag(&l, "entities file larger than 4 GiB");
	root = dw_json_loadb(src, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (root == NULL) {
		size_t off = jerr.position > 0 ? (size_t)jerr.position - 1 : 0;
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return -ENOMEM;
		r = dw_diags_add(diags, DW_SEV_ERROR, file, src, len, off, off + 1,
				 "invalid JSON (line %d, column %d): %s", jerr.line, jerr.column,
				 jerr.text);
		return r == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	if (!json_is_array(root)) {
		r = ld_diag(&l, "an entities file is a JSON array of entity objects");
		goto out;
	}
	n = json_array_size(root);
	if (n > ST_MAX_ENTITIES - old) {
		r = ld_diag(&l, "too many entities");
		goto out;
	}
	batch = malloc((n ? n : 1) * sizeof *batch);
	if (batch == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		r = ld_entity(&l, json_array_get(root, i), i, &batch[i]);
	if (r != 0)
		goto out;
	r = st_reserve(st, old + n);
	if (r != 0)
		goto out;
	/* commit; a duplicate (in the file or with an earlier one) undoes it all */
	for (size_t i = 0; i < n; i++) {
		st->ents[old + i] = batch[i];
		if (st_insert(st, (uint32_t)(old + i)) != ST_EMPTY) {
			struct ld_txt t = { 0 };
			snprintf(l.err, sizeof l.err, "duplicate entity entry %s",
				 ld_uid(&t, &batch[i]->uid));
			ld_txt_free(&t);
			st_rebuild(st, old);
			r = ld_diag(&l, l.err);
			goto out;
		}
	}
	st->n = old + n;
out:
	if (r != 0) {
		if (r == -E2BIG)
			r = ld_diag(&l, "too many entities");
		dw_arena_reset(&st->arena, mark);
	}
	free(batch);
	ld_fini(&l);
	json_decref(root);
	return r;
}

/* --- 3. finishing ---------------------------------------------------------------- */

/* Growable scratch list of uid pointers for the merges. */
struct st_list {
	const struct dw_uid **v;
	size_t n, cap;
};

static int st_list_reserve(struct st_list *l, size_t want)
{
	const struct dw_uid **v;
	size_t cap;

	if (want <= l->cap)
		return 0;
	cap = l->cap ? l->cap : 64;
	while (cap < want) {
		if (cap > SIZE_MAX / 2 / sizeof *v)
			return -ENOMEM;
		cap *= 2;
	}
	v = realloc(l->v, cap * sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	return 0;
}

/* out = a ∪ b, both sorted by st_uid_cmp, without repeats. */
static int st_merge(const struct dw_uid *const *a, size_t na, const struct dw_uid *const *b,
		    size_t nb, struct st_list *out)
{
	size_t i = 0, j = 0, k = 0;

	if (st_list_reserve(out, na + nb) != 0)
		return -ENOMEM;
	while (i < na && j < nb) {
		int c = st_uid_cmp(a[i], b[j]);
		if (c <= 0) {
			out->v[k++] = a[i++];
			j += c == 0;
		} else {
			out->v[k++] = b[j++];
		}
	}
	while (i < na)
		out->v[k++] = a[i++];
	while (j < nb)
		out->v[k++] = b[j++];
	out->n = k;
	return 0;
}

/* What finishing changed in entities that existed before, for a rollback. */
struct st_saved {
	struct dw_entity *e;
	const struct dw_uid **parents;
	uint32_t n_parents;
};

/* The transitive closure: anc[i]/nanc[i] for every entity, or a cycle report. */
#define DW_STORE_MAX_LINKS (32u << 20)

static int st_closure(struct dw_store *st, const char *file, struct dw_diags *diags,
		      const struct dw_uid ***anc, uint32_t *nanc)
{
	size_t n = st->n, edges = 0, head = 0, tail = 0, done_n = 0, links = 0;
	size_t *poff = NULL, *coff = NULL;
	uint32_t *pidx = NULL, *cidx = NULL, *pending = NULL, *queue = NULL;
	uint8_t *state = NULL;
	struct st_list acc = { 0 }, tmp = { 0 };
	int r = 0;

	for (size_t i = 0; i < n; i++)
		edges += st->ents[i]->n_parents;   /* each < 2^32, n < 2^30: no wrap */
	poff = calloc(n + 1, sizeof *poff);
	coff = calloc(n + 1, sizeof *coff);
	pidx = malloc((edges ? edges : 1) * sizeof *pidx);
	cidx = malloc((edges ? edges : 1) * sizeof *cidx);
	pending = calloc(n ? n : 1, sizeof *pending);
	queue = malloc((n ? n : 1) * sizeof *queue);
	state = calloc(n ? n : 1, 1);
	if (!poff || !coff || !pidx || !cidx || !pending || !queue || !state) {
		r = -ENOMEM;
		goto out;
	}
	/* parents as indices (ST_EMPTY: no such entity, a leaf of the closure) */
	for (size_t i = 0, k = 0; i < n; i++) {
		const struct dw_entity *e = st->ents[i];
		poff[i] = k;
		for (uint32_t j = 0; j < e->n_parents; j++, k++) {
			pidx[k] = st_find(st, e->parents[j]);
			if (pidx[k] != ST_EMPTY) {
				pending[i]++;
				coff[pidx[k] + 1]++;
			}
		}
	}
	poff[n] = edges;
	/* children lists, to release each child once its last parent is done */
	for (size_t i = 0; i < n; i++)
		coff[i + 1] += coff[i];
	{
		size_t *fill = malloc((n ? n : 1) * sizeof *fill);
		if (fill == NULL) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(fill, coff, n * sizeof *fill);
		for (size_t i = 0; i < n; i++)
			for (size_t k = poff[i]; k < poff[i + 1]; k++)
				if (pidx[k] != ST_EMPTY)
					cidx[fill[pidx[k]]++] = (uint32_t)i;
		free(fill);
	}
	for (size_t i = 0; i < n; i++)
		if (pending[i] == 0)
			queue[tail++] = (uint32_t)i;
	while (head < tail) {
		uint32_t i = queue[head++];
		const struct dw_entity *e = st->ents[i];
		const struct dw_uid **out;

		acc.n = 0;
		for (size_t k = poff[i]; k < poff[i + 1]; k++) {
			uint32_t p = pidx[k];
			const struct dw_uid *pu = p != ST_EMPTY ? &st->ents[p]->uid
							       : e->parents[k - poff[i]];
			struct st_list sw;

			/* acc ∪= anc(p) ∪ {p} */
			if (p != ST_EMPTY && nanc[p] != 0) {
				if (st_merge(acc.v, acc.n, anc[p], nanc[p], &tmp) != 0) {
					r = -ENOMEM;
					goto out;
				}
				sw = acc, acc = tmp, tmp = sw;
			}
			if (st_merge(acc.v, acc.n, &pu, 1, &tmp) != 0) {
				r = -ENOMEM;
				goto out;
			}
			sw = acc, acc = tmp, tmp = sw;
		}
		/* Ancestor sets cost the sum of their sizes (a chain of n entities
		 * needs n*n/2 links): bound it so hostile data cannot exhaust memory. */
		links += acc.n;
		if (acc.n > UINT32_MAX || links > DW_STORE_MAX_LINKS) {
			r = -E2BIG;
			goto out;
		}
		out = DW_NEWN(&st->arena, const struct dw_uid *, acc.n ? acc.n : 1);
		if (out == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if (acc.n != 0)
			memcpy(out, acc.v, acc.n * sizeof *out);
		anc[i] = out;
		nanc[i] = (uint32_t)acc.n;
		state[i] = 1;
		done_n++;
		for (size_t k = coff[i]; k < coff[i + 1]; k++)
			if (--pending[cidx[k]] == 0)
				queue[tail++] = cidx[k];
	}
	if (done_n < n) {
		/* Every entity left has a parent left (else it would have been done):
		 * follow such parents until one repeats; it lies on a cycle. */
		size_t i = 0;
		struct dw_buf b = { 0 };

		while (state[i] != 0)
			i++;
		while (state[i] != 2) {
			size_t next = i;
			state[i] = 2;
			for (size_t k = poff[i]; k < poff[i + 1]; k++) {
				if (pidx[k] != ST_EMPTY && state[pidx[k]] != 1) {
					next = pidx[k];
					break;
				}
			}
			i = next;
		}
		if (dw_uid_format(&b, &st->ents[i]->uid) != 0) {
			r = -ENOMEM;
		} else {
			r = dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0,
					 "entity hierarchy has a cycle containing %s (an entity "
					 "cannot be its own ancestor)", b.p);
			r = r == -ENOMEM ? -ENOMEM : -EINVAL;
		}
		dw_buf_free(&b);
	}
out:
	free(poff);
	free(coff);
	free(pidx);
	free(cidx);
	free(pending);
	free(queue);
	free(state);
	free(acc.v);
	free(tmp.v);
	return r;
}

static int fin_fail(struct dw_diags *diags, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fin_fail(struct dw_diags *diags, const char *file, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = dw_diags_addv(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0, fmt, ap);
	va_end(ap);
	return r == -ENOMEM ? -ENOMEM : -EINVAL;
}

/* Check the action entities a file brought against the schema (when the file
 * was loaded without one), then give every schema action an entity whose parents
 * are its groups.  Existing entities are changed only through `saved`. */
static int fin_actions(struct dw_store *st, const struct dw_schema *s, struct dw_diags *diags,
		       struct st_saved *saved, size_t *n_saved)
{
	struct ld_txt t = { 0 };
	size_t old = st->n;
	int r = 0;

	for (size_t i = 0; r == 0 && i < old; i++) {
		const struct dw_entity *e = st->ents[i];
		const struct dw_action *act;
		const struct dw_uid *bad;
		const struct dw_action *missing;

		if (!st_is_action_type(e->uid.type))
			continue;
		act = dw_schema_find_action(s, e->uid.type, e->uid.id);
		if (act == NULL)
			r = fin_fail(diags, NULL, "entity %s: action is not declared in the schema",
				     ld_uid(&t, &e->uid));
		else if (e->attrs->n != 0 || e->tags->n != 0 ||
			 !st_action_parents_ok(s, act, e->parents, e->n_parents, &bad, &missing))
			r = fin_fail(diags, NULL, "entity %s: definition of this action does not "
				     "match its schema declaration", ld_uid(&t, &e->uid));
	}
	ld_txt_free(&t);
	if (r != 0)
		return r;
	r = st_reserve(st, old + s->n_actions);
	if (r != 0)
		return r;
	/* one entity per action (new ones appended), then the parents by lookup */
	for (uint32_t a = 0; a < s->n_actions; a++) {
		const struct dw_action *act = s->actions[a];
		struct dw_uid key;
		struct dw_uid *u;
		struct dw_entity *e;

		dw_uid_init(&key, act->type, act->id);
		if (st_find(st, &key) != ST_EMPTY)
			continue;
		e = DW_NEW(&st->arena, struct dw_entity);
		u = dw_uid_new(&st->arena, act->type, act->id);
		if (e == NULL || u == NULL)
			return -ENOMEM;
		e->uid = *u;
		e->attrs = &dw_empty_rec;
		e->tags = &dw_empty_rec;
		st->ents[st->n] = e;
		(void)st_insert(st, (uint32_t)st->n);   /* not found above: no duplicate */
		st->n++;
	}
	for (uint32_t a = 0; a < s->n_actions; a++) {
		const struct dw_action *act = s->actions[a];
		struct dw_uid key;
		struct dw_entity *e;
		const struct dw_uid **p;
		uint32_t idx;

		dw_uid_init(&key, act->type, act->id);
		idx = st_find(st, &key);
		e = st->ents[idx];
		p = DW_NEWN(&st->arena, const struct dw_uid *, act->n_parents ? act->n_parents : 1);
		if (p == NULL)
			return -ENOMEM;
		for (uint32_t k = 0; k < act->n_parents; k++) {
			uint32_t g;
			dw_uid_init(&key, act->parents[k]->type, act->parents[k]->id);
			g = st_find(st, &key);
			if (g == ST_EMPTY)
				return fin_fail(diags, NULL, "schema action group is not an action");
			p[k] = &st->ents[g]->uid;
		}
		if (idx < old) {
			saved[*n_saved].e = e;
			saved[*n_saved].parents = e->parents;
			saved[*n_saved].n_parents = e->n_parents;
			(*n_saved)++;
		}
		e->parents = p;
		e->n_parents = st_dedup_parents(p, act->n_parents);
	}
	return 0;
}

int dw_store_finish(struct dw_store *st, const struct dw_schema *schema, struct dw_diags *diags)
{
	struct dw_arena_mark mark = dw_arena_mark(&st->arena);
	struct st_saved *saved = NULL;
	const struct dw_uid ***anc = NULL;
	uint32_t *nanc = NULL;
	size_t old = st->n, n_saved = 0;
	int r = 0;

	if (st->finished)
		return fin_fail(diags, NULL, "dw_store_finish called twice");
	if (schema != NULL) {
		saved = malloc((schema->n_actions ? schema->n_actions : 1) * sizeof *saved);
		if (saved == NULL)
			return -ENOMEM;
		r = fin_actions(st, schema, diags, saved, &n_saved);
		if (r != 0)
			goto out;
	}
	anc = calloc(st->n ? st->n : 1, sizeof *anc);
	nanc = calloc(st->n ? st->n : 1, sizeof *nanc);
	if (anc == NULL || nanc == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = st_closure(st, NULL, diags, anc, nanc);
	if (r != 0)
		goto out;
	/* commit: ancestors, and parents pointing at the stored entity's own uid so
	 * that equal uids are usually the same pointer */
	for (size_t i = 0; i < st->n; i++) {
		struct dw_entity *e = st->ents[i];
		for (uint32_t j = 0; j < e->n_parents; j++) {
			uint32_t p = st_find(st, e->parents[j]);
			if (p != ST_EMPTY)
				e->parents[j] = &st->ents[p]->uid;
		}
		e->ancestors = anc[i];
		e->n_ancestors = nanc[i];
	}
	st->finished = true;
out:
	if (r != 0) {
		if (r == -E2BIG)
			r = fin_fail(diags, NULL, "entity hierarchy too large: more than %u "
				     "ancestor links in all (a chain of n entities needs n*n/2)",
				     (unsigned)DW_STORE_MAX_LINKS);
		for (size_t i = 0; i < n_saved; i++) {
			saved[i].e->parents = saved[i].parents;
			saved[i].e->n_parents = saved[i].n_parents;
		}
		st->n = old;
		if (st->slots != NULL)
			st_rebuild(st, old);
		dw_arena_reset(&st->arena, mark);
	}
	free(saved);
	free(anc);
	free(nanc);
	return r;
}

/* --- 4. lookups ----------------------------------------------------------------- */

const struct dw_entity *dw_store_get(const struct dw_store *st, const struct dw_uid *uid)
{
	uint32_t i = st_find(st, uid);

	return i == ST_EMPTY ? NULL : st->ents[i];
}

bool dw_store_in(const struct dw_store *st, const struct dw_uid *a, const struct dw_uid *b)
{
	const struct dw_entity *e;
	uint32_t lo = 0, hi;

	if (dw_uid_eq(a, b))
		return true;
	e = dw_store_get(st, a);
	if (e == NULL)
		return false;
	hi = e->n_ancestors;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = st_uid_cmp(e->ancestors[mid], b);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

size_t dw_store_count(const struct dw_store *st)
{
	return st->n;
}

const struct dw_entity *dw_store_at(const struct dw_store *st, size_t i)
{
	return i < st->n ? st->ents[i] : NULL;
}
