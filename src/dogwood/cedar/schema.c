/* schema.c - see schema.h.  The front ends live in schema_cedar.c (human
 * format) and schema_json.c (JSON format); both fill the raw model of
 * schema_int.h, which this file resolves.
 *
 * Divisions:
 *   1. hash tables and vectors
 *   2. build state, fragments, shared helpers for the front ends
 *   3. adding declarations (duplicates within and across fragments)
 *   4. finish: name resolution (Cedar's ConditionalName rules)
 *   5. finish: common types (topological order, inlining, depth)
 *   6. finish: entity types and actions, action hierarchy
 *   7. lookups, formatting, life cycle
 *
 * Resolution follows cedar-policy-core validator/schema.rs and raw_name.rs:
 * an unqualified name written in namespace NS means NS::name if that is
 * declared (in any fragment), else name in the empty namespace; at each step a
 * common type wins over an entity type.  The primitive and extension names
 * (Bool, Long, String, ipaddr, decimal, datetime, duration) are common types
 * of the `__cedar` namespace, aliased into the empty namespace unless the
 * schema declares that name there itself. */
#include "schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"
#include "value.h"

/* ---- 1. hash tables and vectors -------------------------------------- */

/* Open addressing, linear probing; keys are one or two counted strings
 * (an entity type name; an action's type and id).  val == NULL marks a free
 * slot, so values are never NULL. */
struct sc_hent {
	uint64_t h;
	struct dw_str k1, k2;
	void *val;
};

struct sc_htab {
	struct sc_hent *v;
	uint32_t cap, n;      /* cap is 0 or a power of two */
};

#define SC_HASH_SEED 0x5c4e3a2b1d0f9e87ULL

static uint64_t sc_hash2(struct dw_str k1, struct dw_str k2)
{
	uint64_t h = dw_hash_str(k1, SC_HASH_SEED);

	return dw_hash_str(k2, h ^ ((uint64_t)k1.n << 32));
}

static struct sc_hent *sc_htab_slot(const struct sc_htab *t, uint64_t h, struct dw_str k1,
				    struct dw_str k2)
{
	uint32_t mask = t->cap - 1;

	for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
		struct sc_hent *e = &t->v[i];

		if (e->val == NULL)
			return e;
		if (e->h == h && dw_str_eq(e->k1, k1) && dw_str_eq(e->k2, k2))
			return e;
	}
}

static void *sc_htab_get(const struct sc_htab *t, struct dw_str k1, struct dw_str k2)
{
	if (t->n == 0)
		return NULL;
	return sc_htab_slot(t, sc_hash2(k1, k2), k1, k2)->val;
}

static int sc_htab_grow(struct sc_htab *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 16;
	struct sc_htab nt = { NULL, cap, t->n };

	if (cap == 0 || cap > (UINT32_MAX / 2))
		return -ENOMEM;
	nt.v = calloc(cap, sizeof *nt.v);
	if (nt.v == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->v[i].val != NULL)
			*sc_htab_slot(&nt, t->v[i].h, t->v[i].k1, t->v[i].k2) = t->v[i];
	free(t->v);
	*t = nt;
	return 0;
}

/* Insert (k1, k2) -> val unless present.  Returns 0 (inserted), 1 (present:
 * *old set, table unchanged) or -ENOMEM (table unchanged).  Keys are not
 * copied: they must outlive the table. */
static int sc_htab_put(struct sc_htab *t, struct dw_str k1, struct dw_str k2, void *val,
		       void **old)
{
	uint64_t h = sc_hash2(k1, k2);
	struct sc_hent *e;

	if (t->n > 0) {
		e = sc_htab_slot(t, h, k1, k2);
		if (e->val != NULL) {
			if (old != NULL)
				*old = e->val;
			return 1;
		}
	}
	/* keep the load at most one half: probes stay short */
	if ((t->n + 1) * 2 > t->cap && sc_htab_grow(t) != 0)
		return -ENOMEM;
	e = sc_htab_slot(t, h, k1, k2);
	e->h = h;
	e->k1 = k1;
	e->k2 = k2;
	e->val = val;
	t->n++;
	return 0;
}

static void sc_htab_free(struct sc_htab *t)
{
	free(t->v);
	memset(t, 0, sizeof *t);
}

struct sc_vec {
	void **v;
	size_t n, cap;
};

static int sc_vec_push(struct sc_vec *v, void *p)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void **nv;

		if (cap > SIZE_MAX / sizeof *nv)
			return -ENOMEM;
		nv = realloc(v->v, cap * sizeof *nv);
		if (nv == NULL)
			return -ENOMEM;
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = p;
	return 0;
}

static void sc_vec_free(struct sc_vec *v)
{
	free(v->v);
	memset(v, 0, sizeof *v);
}

/* ---- 2. build state, fragments, helpers ------------------------------ */

struct dw_sc_build {
	struct dw_schema *s;
	struct dw_arena raw;
	struct sc_vec commons, entities, actions;   /* declaration order, dups included */
	struct sc_htab ctab, etab, atab;            /* first declaration of each name */
	struct sc_htab attab;                       /* action types ("NS::Action") */
	bool poisoned;
};

struct dw_schema_tables {
	struct dw_sc_build *build;          /* NULL once finished */
	struct sc_htab etypes;              /* name -> dw_etype */
	struct sc_htab actions;             /* (type, id) -> dw_action */
	struct sc_htab atypes;              /* action type -> some dw_action of it */
	const uint32_t **anc;               /* per action index: sorted ancestor indices */
	uint32_t *n_anc;
};

static void sc_build_free(struct dw_sc_build *b)
{
	if (b == NULL)
		return;
	sc_vec_free(&b->commons);
	sc_vec_free(&b->entities);
	sc_vec_free(&b->actions);
	sc_htab_free(&b->ctab);
	sc_htab_free(&b->etab);
	sc_htab_free(&b->atab);
	sc_htab_free(&b->attab);
	dw_arena_fini(&b->raw);
	free(b);
}

struct dw_sc_build *dw_sc_build_get(struct dw_schema *s)
{
	struct dw_sc_build *b;

	if (s->finished)
		return NULL;
	if (s->t->build != NULL)
		return s->t->build;
	b = calloc(1, sizeof *b);
	if (b == NULL)
		return NULL;
	b->s = s;
	dw_arena_init(&b->raw);
	s->t->build = b;
	return b;
}

struct dw_arena *dw_sc_raw(struct dw_sc_build *b)
{
	return &b->raw;
}

struct dw_arena *dw_sc_out(struct dw_sc_build *b)
{
	return &b->s->arena;
}

void dw_sc_poison(struct dw_sc_build *b)
{
	b->poisoned = true;
}

struct dw_sc_frag *dw_sc_frag_new(struct dw_sc_build *b, const char *file, const char *src,
				  size_t len, bool keep_src)
{
	struct dw_sc_frag *f = DW_NEW(&b->raw, struct dw_sc_frag);

	if (f == NULL)
		return NULL;
	f->file = dw_arena_strdup(&b->raw, file ? file : "");
	f->json = !keep_src;
	if (keep_src) {
		f->src = dw_arena_strndup(&b->raw, src, len);
		f->len = len;
	}
	if (f->file == NULL || (keep_src && f->src == NULL))
		return NULL;
	return f;
}

char *dw_sc_keep(struct dw_sc_build *b, const char *p, size_t n)
{
	return dw_arena_strndup(&b->s->arena, p, n);
}

struct dw_str dw_sc_join(struct dw_arena *a, struct dw_str ns, struct dw_str base)
{
	struct dw_str r = { NULL, 0 };
	size_t n;
	char *p;

	if (ns.n == 0) {
		p = dw_arena_strndup(a, base.p, base.n);
		if (p != NULL)
			r = dw_str_make(p, base.n);
		return r;
	}
	n = (size_t)ns.n + 2 + base.n;
	if (n > UINT32_MAX)
		return r;
	p = dw_arena_alloc(a, n + 1, 1);
	if (p == NULL)
		return r;
	memcpy(p, ns.p, ns.n);
	memcpy(p + ns.n, "::", 2);
	if (base.n != 0)
		memcpy(p + ns.n + 2, base.p, base.n);
	p[n] = '\0';
	return dw_str_make(p, n);
}

static int sc_report(struct dw_diags *d, enum dw_severity sev, const struct dw_sc_loc *loc,
		     const char *fmt, va_list ap)
{
	const struct dw_sc_frag *f = loc ? loc->frag : NULL;
	int r;

	if (f != NULL && f->src != NULL) {
		r = dw_diags_addv(d, sev, f->file, f->src, f->len, loc->off, loc->end, fmt, ap);
	} else if (loc != NULL && loc->path != NULL) {
		const char *path = loc->path[0] ? loc->path : "(document)";
		size_t n = strlen(path);
		char msg[600];

		vsnprintf(msg, sizeof msg, fmt, ap);
		/* a pointer into deep nesting is long: keep both ends */
		if (n > 300)
			r = dw_diags_add(d, sev, f ? f->file : "", NULL, 0, 0, 0, "%.120s/.../%s: %s",
					 path, path + n - 160, msg);
		else
			r = dw_diags_add(d, sev, f ? f->file : "", NULL, 0, 0, 0, "%s: %s", path, msg);
	} else {
		r = dw_diags_addv(d, sev, f ? f->file : "", NULL, 0, 0, 0, fmt, ap);
	}
	return r < 0 ? r : 0;
}

int dw_sc_error(struct dw_diags *d, const struct dw_sc_loc *loc, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sc_report(d, DW_SEV_ERROR, loc, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

int dw_sc_warning(struct dw_diags *d, const struct dw_sc_loc *loc, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sc_report(d, DW_SEV_WARNING, loc, fmt, ap);
	va_end(ap);
	return r;
}

bool dw_sc_is_ident(const char *p, size_t n)
{
	if (n == 0 || !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = p[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

static bool sc_in_list(const char *p, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && memcmp(list[i], p, n) == 0)
			return true;
	return false;
}

bool dw_sc_is_reserved_ident(const char *p, size_t n)
{
	static const char *const words[] = {
		"true", "false", "if", "then", "else", "in", "like", "has", "is",
	};

	return sc_in_list(p, n, words, DW_N_ELEMENTS(words));
}

bool dw_sc_is_reserved_type_name(const char *p, size_t n)
{
	static const char *const words[] = {
		"Bool", "Boolean", "Entity", "Extension", "Long", "Record", "Set", "String",
	};

	return sc_in_list(p, n, words, DW_N_ELEMENTS(words));
}

enum dw_ext_type dw_sc_ext_by_name(const char *p, size_t n)
{
	static const char *const names[] = { "ipaddr", "decimal", "datetime", "duration" };

	for (size_t i = 0; i < DW_N_ELEMENTS(names); i++)
		if (strlen(names[i]) == n && memcmp(names[i], p, n) == 0)
			return (enum dw_ext_type)(DW_EXT_IPADDR + i);
	return (enum dw_ext_type)0;
}

/* The built-in types.  Static and immutable: shared by every schema. */
static const struct dw_type sc_t_bool = { .kind = DW_T_BOOL };
static const struct dw_type sc_t_long = { .kind = DW_T_LONG };
static const struct dw_type sc_t_string = { .kind = DW_T_STRING };
static const struct dw_type sc_t_ipaddr = { .kind = DW_T_EXT, .ext = DW_EXT_IPADDR };
static const struct dw_type sc_t_decimal = { .kind = DW_T_EXT, .ext = DW_EXT_DECIMAL };
static const struct dw_type sc_t_datetime = { .kind = DW_T_EXT, .ext = DW_EXT_DATETIME };
static const struct dw_type sc_t_duration = { .kind = DW_T_EXT, .ext = DW_EXT_DURATION };
static const struct dw_type sc_t_empty_record = { .kind = DW_T_RECORD };

static const struct {
	const char *name;
	const struct dw_type *type;
} sc_builtins[] = {
	{ "Bool", &sc_t_bool },
	{ "Long", &sc_t_long },
	{ "String", &sc_t_string },
	{ "ipaddr", &sc_t_ipaddr },
	{ "decimal", &sc_t_decimal },
	{ "datetime", &sc_t_datetime },
	{ "duration", &sc_t_duration },
};

static int sc_builtin_index(const char *p, size_t n)
{
	for (size_t i = 0; i < DW_N_ELEMENTS(sc_builtins); i++)
		if (strlen(sc_builtins[i].name) == n && memcmp(sc_builtins[i].name, p, n) == 0)
			return (int)i;
	return -1;
}

static const struct dw_type *sc_ext_type(enum dw_ext_type e)
{
	switch (e) {
	case DW_EXT_IPADDR: return &sc_t_ipaddr;
	case DW_EXT_DECIMAL: return &sc_t_decimal;
	case DW_EXT_DATETIME: return &sc_t_datetime;
	case DW_EXT_DURATION: return &sc_t_duration;
	}
	return NULL;
}

static bool sc_is_qualified(struct dw_str s)
{
	for (uint32_t i = 0; i + 1 < s.n; i++)
		if (s.p[i] == ':' && s.p[i + 1] == ':')
			return true;
	return false;
}

/* Render `Type::"id"` as Cedar's EntityUID Display does (escape_debug of the
 * id), truncated to fit buf. */
static const char *sc_fmt_uid(char *buf, size_t cap, struct dw_str type, struct dw_str id)
{
	size_t o = 0;
	int n = snprintf(buf, cap, "%.*s::\"", (int)(type.n > 200 ? 200 : type.n), type.p);

	if (n < 0)
		return "";
	o = (size_t)n < cap ? (size_t)n : cap - 1;
	for (uint32_t i = 0; i < id.n && o + 12 < cap; i++) {
		unsigned char c = (unsigned char)id.p[i];

		switch (c) {
		case '"': o += (size_t)snprintf(buf + o, cap - o, "\\\""); break;
		case '\\': o += (size_t)snprintf(buf + o, cap - o, "\\\\"); break;
		case '\'': o += (size_t)snprintf(buf + o, cap - o, "\\'"); break;
		case '\n': o += (size_t)snprintf(buf + o, cap - o, "\\n"); break;
		case '\r': o += (size_t)snprintf(buf + o, cap - o, "\\r"); break;
		case '\t': o += (size_t)snprintf(buf + o, cap - o, "\\t"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				o += (size_t)snprintf(buf + o, cap - o, "\\u{%x}", c);
			else
				buf[o++] = (char)c;
		}
	}
	if (o + 2 < cap) {
		buf[o++] = '"';
		buf[o] = '\0';
	} else {
		buf[cap - 1] = '\0';
	}
	return buf;
}

/* ---- 3. adding declarations ------------------------------------------ */

static bool sc_is_human(const struct dw_sc_loc *loc)
{
	return loc->frag != NULL && !loc->frag->json;
}

/* Cedar warns when a human-format declaration takes a built-in's name (the
 * built-in then needs `__cedar::`). */
static int sc_warn_builtin_shadow(struct dw_diags *d, const struct dw_sc_loc *loc,
				  struct dw_str base)
{
	if (!sc_is_human(loc) || sc_builtin_index(base.p, base.n) < 0)
		return 0;
	return dw_sc_warning(d, loc, "The name `%.*s` shadows a builtin Cedar name. You'll have "
			     "to refer to the builtin as `__cedar::%.*s`.",
			     (int)base.n, base.p, (int)base.n, base.p);
}

int dw_sc_add_common(struct dw_sc_build *b, struct dw_sc_common *c, struct dw_diags *d)
{
	void *old = NULL;
	int r = sc_htab_put(&b->ctab, c->name, (struct dw_str){ NULL, 0 }, c, &old);

	if (r < 0)
		return r;
	if (sc_vec_push(&b->commons, c) != 0)
		return -ENOMEM;
	if (r == 1) {
		struct dw_sc_common *o = old;

		if (o->loc.frag == c->loc.frag) {
			c->dup = DW_SC_DUP_REPORTED;
			return dw_sc_error(d, &c->loc, "`%.*s` is declared twice", (int)c->base.n,
					   c->base.p);
		}
		c->dup = DW_SC_DUP_AT_FINISH;
		return 0;
	}
	if (sc_is_human(&c->loc)) {
		struct dw_sc_entity *e = sc_htab_get(&b->etab, c->name, (struct dw_str){ NULL, 0 });

		if (e != NULL && e->loc.frag == c->loc.frag &&
		    (r = dw_sc_warning(d, &c->loc, "The common type name %.*s shadows an entity name",
				       (int)c->base.n, c->base.p)) < 0)
			return r;
	}
	return sc_warn_builtin_shadow(d, &c->loc, c->base);
}

int dw_sc_add_entity(struct dw_sc_build *b, struct dw_sc_entity *e, struct dw_diags *d)
{
	void *old = NULL;
	int r = sc_htab_put(&b->etab, e->name, (struct dw_str){ NULL, 0 }, e, &old);

	if (r < 0)
		return r;
	if (sc_vec_push(&b->entities, e) != 0)
		return -ENOMEM;
	if (r == 1) {
		struct dw_sc_entity *o = old;

		if (o->loc.frag == e->loc.frag) {
			e->dup = DW_SC_DUP_REPORTED;
			return dw_sc_error(d, &e->loc, "`%.*s` is declared twice", (int)e->base.n,
					   e->base.p);
		}
		e->dup = DW_SC_DUP_AT_FINISH;
		return 0;
	}
	if (sc_is_human(&e->loc)) {
		struct dw_sc_common *c = sc_htab_get(&b->ctab, e->name, (struct dw_str){ NULL, 0 });

		if (c != NULL && c->loc.frag == e->loc.frag &&
		    (r = dw_sc_warning(d, &c->loc, "The common type name %.*s shadows an entity name",
				       (int)c->base.n, c->base.p)) < 0)
			return r;
	}
	return sc_warn_builtin_shadow(d, &e->loc, e->base);
}

int dw_sc_add_action(struct dw_sc_build *b, struct dw_sc_action *a, struct dw_diags *d)
{
	void *old = NULL;
	int r = sc_htab_put(&b->atab, a->type, a->id, a, &old);

	if (r < 0)
		return r;
	if (sc_vec_push(&b->actions, a) != 0 ||
	    sc_htab_put(&b->attab, a->type, (struct dw_str){ NULL, 0 }, a, NULL) < 0)
		return -ENOMEM;
	if (r == 1) {
		struct dw_sc_action *o = old;

		if (o->loc.frag == a->loc.frag) {
			a->dup = DW_SC_DUP_REPORTED;
			return dw_sc_error(d, &a->loc, "`%.*s` is declared twice", (int)a->id.n,
					   a->id.p);
		}
		a->dup = DW_SC_DUP_AT_FINISH;
	}
	return 0;
}

struct sc_attr_sort {
	struct dw_sc_attr a;
	uint32_t pos;
};

static int sc_attr_cmp(const void *x, const void *y)
{
	const struct sc_attr_sort *a = x, *b = y;
	int c = dw_str_cmp(a->a.name, b->a.name);

	if (c != 0)
		return c;
	return (a->pos > b->pos) - (a->pos < b->pos);
}

int dw_sc_record_check(struct dw_sc_build *b, struct dw_sc_type *rec, struct dw_diags *d)
{
	struct dw_arena_mark m;
	struct sc_attr_sort *tmp;
	uint32_t n = rec->rec.n;
	int r = 0;

	if (n < 2)
		return 0;
	m = dw_arena_mark(&b->raw);
	tmp = DW_NEWN(&b->raw, struct sc_attr_sort, n);
	if (tmp == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		tmp[i].a = rec->rec.v[i];
		tmp[i].pos = i;
	}
	qsort(tmp, n, sizeof *tmp, sc_attr_cmp);
	for (uint32_t i = 0; i < n; i++) {
		rec->rec.v[i] = tmp[i].a;
		/* Cedar keeps the last of two equal keys silently; a schema
		 * that says two things about one attribute is refused here. */
		if (i > 0 && dw_str_eq(tmp[i].a.name, tmp[i - 1].a.name) && r != -ENOMEM) {
			int e = dw_sc_error(d, &tmp[i].a.loc, "duplicate attribute `%.*s`",
					    (int)(tmp[i].a.name.n > 200 ? 200 : tmp[i].a.name.n),
					    tmp[i].a.name.p);
			r = e == -ENOMEM ? e : -EINVAL;
		}
	}
	dw_arena_reset(&b->raw, m);
	return r;
}

/* ---- 4. finish: name resolution -------------------------------------- */

struct sc_fin {
	struct dw_sc_build *b;
	struct dw_schema *s;
	struct dw_diags *d;
	int err;                    /* first -ENOMEM, else -EINVAL once anything failed */
	uint32_t stamp;             /* last mark value handed out (see sc_etype_list) */
	bool alias[DW_N_ELEMENTS(sc_builtins)];   /* empty-namespace alias present */
	struct sc_vec live_commons; /* non-duplicate declarations, in order */
	struct sc_vec live_entities;
	struct sc_vec live_actions;
};

static void sc_fail(struct sc_fin *f, int r)
{
	if (r == -ENOMEM)
		f->err = -ENOMEM;
	else if (r < 0 && f->err == 0)
		f->err = -EINVAL;
}

/* A full name as a built-in type, or NULL. */
static const struct dw_type *sc_lookup_builtin(struct sc_fin *f, struct dw_str name)
{
	static const char pfx[] = "__cedar::";
	int i;

	if (name.n > sizeof pfx - 1 && memcmp(name.p, pfx, sizeof pfx - 1) == 0) {
		i = sc_builtin_index(name.p + sizeof pfx - 1, name.n - (sizeof pfx - 1));
		return i < 0 ? NULL : sc_builtins[i].type;
	}
	i = sc_builtin_index(name.p, name.n);
	return i >= 0 && f->alias[i] ? sc_builtins[i].type : NULL;
}

static const struct dw_str sc_none = { NULL, 0 };

/* Try one fully qualified candidate; true when n got a target. */
static bool sc_try(struct sc_fin *f, struct dw_sc_name *n, struct dw_str cand)
{
	struct dw_sc_build *b = f->b;

	if (n->kind & DW_SC_REF_COMMON) {
		struct dw_sc_common *c = sc_htab_get(&b->ctab, cand, sc_none);
		const struct dw_type *t;

		if (c != NULL) {
			n->target = DW_SC_TO_COMMON;
			n->to.common = c;
			return true;
		}
		if ((t = sc_lookup_builtin(f, cand)) != NULL) {
			n->target = DW_SC_TO_BUILTIN;
			n->to.builtin = t;
			return true;
		}
	}
	if (n->kind & DW_SC_REF_ENTITY) {
		struct dw_sc_entity *e = sc_htab_get(&b->etab, cand, sc_none);

		if (e != NULL) {
			n->target = DW_SC_TO_ENTITY;
			n->to.entity = e;
			return true;
		}
	}
	return false;
}

static void sc_resolve_name(struct sc_fin *f, struct dw_sc_name *n)
{
	bool ok = false, action_type = false;

	if (n->target != DW_SC_UNRESOLVED)
		return;
	if (!sc_is_qualified(n->text) && n->ns.n != 0) {
		struct dw_arena_mark m = dw_arena_mark(&f->b->raw);
		struct dw_str full = dw_sc_join(&f->b->raw, n->ns, n->text);

		if (full.p == NULL) {
			sc_fail(f, -ENOMEM);
			return;
		}
		ok = sc_try(f, n, full);
		action_type = sc_htab_get(&f->b->attab, full, sc_none) != NULL;
		dw_arena_reset(&f->b->raw, m);
	}
	if (!ok)
		ok = sc_try(f, n, n->text);
	if (ok)
		return;
	/* Cedar also resolves a name to an action entity type ("Action",
	 * "NS::Action") and accepts it as an attribute or tag type.  dw_etype
	 * has no form for those, so such a schema is refused, plainly. */
	if ((n->kind & DW_SC_REF_ENTITY) &&
	    (action_type || sc_htab_get(&f->b->attab, n->text, sc_none) != NULL))
		sc_fail(f, dw_sc_error(f->d, &n->loc, "undeclared entity type: %.*s (an action "
				       "entity type, which cannot be used as a type here)",
				       (int)n->text.n, n->text.p));
	else
		sc_fail(f, dw_sc_error(f->d, &n->loc, "failed to resolve type: %.*s",
				       (int)n->text.n, n->text.p));
}

/* Raw trees are at most DW_SCHEMA_MAX_DEPTH deep (the front ends refuse
 * deeper input), which bounds this recursion and the others below. */
static void sc_resolve_type(struct sc_fin *f, struct dw_sc_type *t, unsigned depth)
{
	if (t == NULL || depth > DW_SCHEMA_MAX_DEPTH + 1)
		return;
	switch (t->kind) {
	case DW_SC_SET:
		sc_resolve_type(f, t->elem, depth + 1);
		break;
	case DW_SC_RECORD:
		for (uint32_t i = 0; i < t->rec.n; i++)
			sc_resolve_type(f, t->rec.v[i].type, depth + 1);
		break;
	case DW_SC_REF:
		sc_resolve_name(f, &t->ref);
		break;
	default:
		break;
	}
}

static void sc_resolve_aref(struct sc_fin *f, struct dw_sc_aref *p)
{
	struct dw_sc_build *b = f->b;
	struct dw_str ty = p->type.n ? p->type : DW_STR_LIT("Action");
	char uid[300];

	if (!sc_is_qualified(ty) && p->ns.n != 0) {
		struct dw_arena_mark m = dw_arena_mark(&b->raw);
		struct dw_str full = dw_sc_join(&b->raw, p->ns, ty);

		if (full.p == NULL) {
			sc_fail(f, -ENOMEM);
			return;
		}
		p->to = sc_htab_get(&b->atab, full, p->id);
		dw_arena_reset(&b->raw, m);
		if (p->to != NULL)
			return;
	}
	p->to = sc_htab_get(&b->atab, ty, p->id);
	if (p->to == NULL)
		sc_fail(f, dw_sc_error(f->d, &p->loc, "undeclared action: %s",
				       sc_fmt_uid(uid, sizeof uid, ty, p->id)));
}

static void sc_resolve_all(struct sc_fin *f)
{
	for (size_t i = 0; i < f->live_commons.n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		sc_resolve_type(f, c->def, 0);
	}
	for (size_t i = 0; i < f->live_entities.n; i++) {
		struct dw_sc_entity *e = f->live_entities.v[i];

		for (uint32_t j = 0; j < e->n_parents; j++)
			sc_resolve_name(f, &e->parents[j]);
		sc_resolve_type(f, e->shape, 0);
		sc_resolve_type(f, e->tags, 0);
	}
	for (size_t i = 0; i < f->live_actions.n; i++) {
		struct dw_sc_action *a = f->live_actions.v[i];

		for (uint32_t j = 0; j < a->n_parents; j++)
			sc_resolve_aref(f, &a->parents[j]);
		for (uint32_t j = 0; j < a->n_principals; j++)
			sc_resolve_name(f, &a->principals[j]);
		for (uint32_t j = 0; j < a->n_resources; j++)
			sc_resolve_name(f, &a->resources[j]);
		sc_resolve_type(f, a->context, 0);
	}
}

/* Cedar's RFC 70: nothing declared in a namespace may share its basename
 * with an entity or common type declared in the empty namespace, and no
 * NS::Action::"x" may exist beside Action::"x". */
static void sc_check_shadowing(struct sc_fin *f)
{
	struct dw_sc_build *b = f->b;
	char u1[300], u2[300];

	for (int pass = 0; pass < 2; pass++) {
		struct sc_vec *v = pass == 0 ? &f->live_entities : &f->live_commons;

		for (size_t i = 0; i < v->n; i++) {
			struct dw_str name, ns, base;
			const struct dw_sc_loc *loc;

			if (pass == 0) {
				struct dw_sc_entity *e = v->v[i];

				name = e->name;
				ns = e->ns;
				base = e->base;
				loc = &e->loc;
			} else {
				struct dw_sc_common *c = v->v[i];

				name = c->name;
				ns = c->ns;
				base = c->base;
				loc = &c->loc;
			}
			if (ns.n == 0)
				continue;
			if (sc_htab_get(&b->etab, base, sc_none) == NULL &&
			    sc_htab_get(&b->ctab, base, sc_none) == NULL)
				continue;
			sc_fail(f, dw_sc_error(f->d, loc, "definition of `%.*s` illegally shadows the "
					       "existing definition of `%.*s`", (int)name.n, name.p,
					       (int)base.n, base.p));
		}
	}
	for (size_t i = 0; i < f->live_actions.n; i++) {
		struct dw_sc_action *a = f->live_actions.v[i];

		if (a->ns.n == 0 || sc_htab_get(&b->atab, DW_STR_LIT("Action"), a->id) == NULL)
			continue;
		sc_fail(f, dw_sc_error(f->d, &a->loc, "definition of `%s` illegally shadows the "
				       "existing definition of `%s`",
				       sc_fmt_uid(u1, sizeof u1, a->type, a->id),
				       sc_fmt_uid(u2, sizeof u2, DW_STR_LIT("Action"), a->id)));
	}
}

/* ---- 5. finish: common types ----------------------------------------- */

/* Call fn for every reference in t that resolved to a user common type. */
static void sc_common_refs(struct dw_sc_type *t, unsigned depth,
			   void (*fn)(struct dw_sc_common *dep, void *ctx), void *ctx)
{
	if (t == NULL || depth > DW_SCHEMA_MAX_DEPTH + 1)
		return;
	switch (t->kind) {
	case DW_SC_SET:
		sc_common_refs(t->elem, depth + 1, fn, ctx);
		break;
	case DW_SC_RECORD:
		for (uint32_t i = 0; i < t->rec.n; i++)
			sc_common_refs(t->rec.v[i].type, depth + 1, fn, ctx);
		break;
	case DW_SC_REF:
		if (t->ref.target == DW_SC_TO_COMMON)
			fn(t->ref.to.common, ctx);
		break;
	default:
		break;
	}
}

/* Build the public type for t.  Every common type t refers to is already
 * built.  *depth gets the nesting depth with common types inlined.  NULL on
 * ENOMEM. */
static const struct dw_type *sc_build_type(struct sc_fin *f, const struct dw_sc_type *t,
					   uint32_t *depth, unsigned level)
{
	struct dw_arena *a = &f->s->arena;
	struct dw_type *nt;
	uint32_t d;

	*depth = 0;
	if (level > DW_SCHEMA_MAX_DEPTH + 1)
		return NULL;
	switch (t->kind) {
	case DW_SC_BOOL: return &sc_t_bool;
	case DW_SC_LONG: return &sc_t_long;
	case DW_SC_STRING: return &sc_t_string;
	case DW_SC_EXT: return sc_ext_type(t->ext);
	case DW_SC_REF:
		switch (t->ref.target) {
		case DW_SC_TO_COMMON:
			*depth = t->ref.to.common->depth;
			return t->ref.to.common->final;
		case DW_SC_TO_ENTITY:
			return t->ref.to.entity->as_type;
		case DW_SC_TO_BUILTIN:
			return t->ref.to.builtin;
		}
		return NULL;
	case DW_SC_SET:
		nt = DW_NEW(a, struct dw_type);
		if (nt == NULL)
			return NULL;
		nt->kind = DW_T_SET;
		nt->elem = sc_build_type(f, t->elem, &d, level + 1);
		if (nt->elem == NULL)
			return NULL;
		*depth = d + 1;
		return nt;
	case DW_SC_RECORD: {
		struct dw_attr *v;
		uint32_t max = 0;

		if (t->rec.n == 0) {
			*depth = 1;
			return &sc_t_empty_record;
		}
		nt = DW_NEW(a, struct dw_type);
		v = DW_NEWN(a, struct dw_attr, t->rec.n);
		if (nt == NULL || v == NULL)
			return NULL;
		for (uint32_t i = 0; i < t->rec.n; i++) {
			v[i].name = t->rec.v[i].name;
			v[i].required = t->rec.v[i].required;
			v[i].type = sc_build_type(f, t->rec.v[i].type, &d, level + 1);
			if (v[i].type == NULL)
				return NULL;
			if (d > max)
				max = d;
		}
		nt->kind = DW_T_RECORD;
		nt->rec.n = t->rec.n;
		nt->rec.v = v;
		*depth = max + 1;
		return nt;
	}
	}
	return NULL;
}

static void sc_count_wait(struct dw_sc_common *dep, void *ctx)
{
	struct dw_sc_common *user = ctx;

	user->n_wait++;
	dep->n_users++;
}

struct sc_users_fill {
	struct dw_sc_common **users;
	struct dw_sc_common *user;
};

static void sc_fill_user(struct dw_sc_common *dep, void *ctx)
{
	struct sc_users_fill *u = ctx;

	u->users[dep->users_off + dep->n_wait++] = u->user;   /* n_wait reused as cursor */
}

static void sc_first_unbuilt(struct dw_sc_common *dep, void *ctx)
{
	struct dw_sc_common **out = ctx;

	if (*out == NULL && dep->final == NULL)
		*out = dep;
}

static const char sc_depth_msg[] = "type nesting deeper than %d levels (common types inlined)";

/* Kahn's algorithm over "uses" edges; a common type is built once all the
 * common types it uses are.  What remains unbuilt depends on a cycle. */
static void sc_build_commons(struct sc_fin *f)
{
	struct dw_arena *raw = &f->b->raw;
	size_t n = f->live_commons.n, total = 0, head = 0, tail = 0;
	struct dw_sc_common **users, **queue;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		c->n_wait = c->n_users = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		sc_common_refs(c->def, 0, sc_count_wait, c);
	}
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		c->users_off = (uint32_t)total;
		total += c->n_users;
	}
	users = DW_NEWN(raw, struct dw_sc_common *, total ? total : 1);
	queue = DW_NEWN(raw, struct dw_sc_common *, n);
	if (users == NULL || queue == NULL) {
		sc_fail(f, -ENOMEM);
		return;
	}
	/* second pass fills the user lists, using n_wait of each dependency as
	 * its cursor; the real wait counts are recomputed just below */
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		c->n_wait = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct sc_users_fill u = { users, f->live_commons.v[i] };

		sc_common_refs(u.user->def, 0, sc_fill_user, &u);
	}
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		c->n_wait = 0;
	}
	for (size_t i = 0; i < total; i++)
		users[i]->n_wait++;
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		if (c->n_wait == 0)
			queue[tail++] = c;
	}
	while (head < tail) {
		struct dw_sc_common *c = queue[head++];
		uint32_t depth = 0;

		c->final = sc_build_type(f, c->def, &depth, 0);
		if (c->final == NULL) {
			sc_fail(f, -ENOMEM);
			return;
		}
		c->depth = depth;
		if (depth > DW_SCHEMA_MAX_DEPTH) {
			sc_fail(f, dw_sc_error(f->d, &c->loc, sc_depth_msg, DW_SCHEMA_MAX_DEPTH));
			/* keep going with a bounded depth so users report too */
		}
		for (uint32_t k = 0; k < c->n_users; k++) {
			struct dw_sc_common *u = users[c->users_off + k];

			if (--u->n_wait == 0)
				queue[tail++] = u;
		}
	}
	if (tail == n)
		return;
	/* Walk "uses an unbuilt type" edges from the first unbuilt common type
	 * until one repeats: that one lies on a cycle. */
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_common *c = f->live_commons.v[i];

		if (c->final != NULL)
			continue;
		for (size_t steps = 0; steps <= n; steps++) {
			struct dw_sc_common *next = NULL;

			if (c->n_users == UINT32_MAX)
				break;          /* visited: on the cycle */
			c->n_users = UINT32_MAX;
			sc_common_refs(c->def, 0, sc_first_unbuilt, &next);
			if (next == NULL)
				break;
			c = next;
		}
		sc_fail(f, dw_sc_error(f->d, &c->loc, "cycle in common type references containing "
				       "`%.*s`", (int)c->name.n, c->name.p));
		return;
	}
}

/* ---- 6. finish: entity types and actions ----------------------------- */

static int sc_make_etypes(struct sc_fin *f)
{
	struct dw_schema *s = f->s;
	size_t n = f->live_entities.n;

	s->etypes = DW_NEWN(&s->arena, const struct dw_etype *, n ? n : 1);
	if (s->etypes == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_entity *e = f->live_entities.v[i];

		e->out = DW_NEW(&s->arena, struct dw_etype);
		e->as_type = DW_NEW(&s->arena, struct dw_type);
		if (e->out == NULL || e->as_type == NULL)
			return -ENOMEM;
		e->out->name = e->name;
		e->out->index = (uint32_t)i;
		e->out->shape = &sc_t_empty_record;
		e->as_type->kind = DW_T_ENTITY;
		e->as_type->entity = e->out;
		s->etypes[i] = e->out;
	}
	s->n_etypes = (uint32_t)n;
	return 0;
}

/* Resolved entity references, duplicates dropped (Cedar keeps them in sets).
 * mark[] is indexed by etype index and must hold no value equal to stamp. */
static int sc_etype_list(struct sc_fin *f, const struct dw_sc_name *names, uint32_t n,
			 uint32_t *mark, uint32_t stamp, const struct dw_etype ***out,
			 uint32_t *n_out)
{
	const struct dw_etype **v;
	uint32_t k = 0;

	*out = NULL;
	*n_out = 0;
	if (n == 0)
		return 0;
	v = DW_NEWN(&f->s->arena, const struct dw_etype *, n);
	if (v == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct dw_etype *et;

		if (names[i].target != DW_SC_TO_ENTITY)
			continue;
		et = names[i].to.entity->out;
		if (mark[et->index] == stamp)
			continue;
		mark[et->index] = stamp;
		v[k++] = et;
	}
	*out = v;
	*n_out = k;
	return 0;
}

static void sc_fill_etypes(struct sc_fin *f, uint32_t *mark)
{
	for (size_t i = 0; i < f->live_entities.n; i++) {
		struct dw_sc_entity *e = f->live_entities.v[i];
		struct dw_etype *et = e->out;
		uint32_t depth;
		int r;

		if (e->is_enum) {
			et->is_enum = true;
			et->n_enum = e->n_enum;
			et->enum_ids = e->enum_ids;
			continue;
		}
		if (e->shape != NULL) {
			et->shape = sc_build_type(f, e->shape, &depth, 0);
			if (et->shape == NULL) {
				sc_fail(f, -ENOMEM);
				return;
			}
			if (et->shape->kind != DW_T_RECORD) {
				sc_fail(f, dw_sc_error(f->d, &e->loc, "Shape for entity type %.*s is "
						       "declared with a type other than `Record`",
						       (int)e->name.n, e->name.p));
				et->shape = &sc_t_empty_record;
			} else if (depth > DW_SCHEMA_MAX_DEPTH) {
				sc_fail(f, dw_sc_error(f->d, &e->loc, sc_depth_msg,
						       DW_SCHEMA_MAX_DEPTH));
			}
		}
		if (e->tags != NULL) {
			et->tags = sc_build_type(f, e->tags, &depth, 0);
			if (et->tags == NULL) {
				sc_fail(f, -ENOMEM);
				return;
			}
			if (depth > DW_SCHEMA_MAX_DEPTH)
				sc_fail(f, dw_sc_error(f->d, &e->loc, sc_depth_msg,
						       DW_SCHEMA_MAX_DEPTH));
		}
		r = sc_etype_list(f, e->parents, e->n_parents, mark, ++f->stamp,
				  &et->member_of, &et->n_member_of);
		if (r < 0) {
			sc_fail(f, r);
			return;
		}
	}
}

static int sc_make_actions(struct sc_fin *f)
{
	struct dw_schema *s = f->s;
	size_t n = f->live_actions.n;

	s->actions = DW_NEWN(&s->arena, const struct dw_action *, n ? n : 1);
	if (s->actions == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct dw_sc_action *a = f->live_actions.v[i];

		a->out = DW_NEW(&s->arena, struct dw_action);
		if (a->out == NULL)
			return -ENOMEM;
		a->out->type = a->type;
		a->out->id = a->id;
		a->out->index = (uint32_t)i;
		a->out->context = &sc_t_empty_record;
		s->actions[i] = a->out;
	}
	s->n_actions = (uint32_t)n;
	return 0;
}

static void sc_fill_actions(struct sc_fin *f, uint32_t *emark, uint32_t *amark)
{
	char uid[300];

	for (size_t i = 0; i < f->live_actions.n; i++) {
		struct dw_sc_action *a = f->live_actions.v[i];
		struct dw_action *out = a->out;
		const struct dw_action **pv = NULL;
		uint32_t k = 0, depth;
		int r;

		if (a->n_parents != 0) {
			pv = DW_NEWN(&f->s->arena, const struct dw_action *, a->n_parents);
			if (pv == NULL) {
				sc_fail(f, -ENOMEM);
				return;
			}
			for (uint32_t j = 0; j < a->n_parents; j++) {
				struct dw_action *p = a->parents[j].to->out;

				if (amark[p->index] == (uint32_t)i + 1)
					continue;
				amark[p->index] = (uint32_t)i + 1;
				pv[k++] = p;
			}
		}
		out->parents = pv;
		out->n_parents = k;
		out->has_applies_to = a->has_applies_to;
		r = sc_etype_list(f, a->principals, a->n_principals, emark, ++f->stamp,
				  &out->principals, &out->n_principals);
		if (r == 0)
			r = sc_etype_list(f, a->resources, a->n_resources, emark, ++f->stamp,
					  &out->resources, &out->n_resources);
		if (r < 0) {
			sc_fail(f, r);
			return;
		}
		if (a->context == NULL)
			continue;
		out->context = sc_build_type(f, a->context, &depth, 0);
		if (out->context == NULL) {
			sc_fail(f, -ENOMEM);
			return;
		}
		if (out->context->kind != DW_T_RECORD) {
			sc_fail(f, dw_sc_error(f->d, &a->loc, "Context for action %s is declared with "
					       "a type other than `Record`",
					       sc_fmt_uid(uid, sizeof uid, a->type, a->id)));
			out->context = &sc_t_empty_record;
		} else if (depth > DW_SCHEMA_MAX_DEPTH) {
			sc_fail(f, dw_sc_error(f->d, &a->loc, sc_depth_msg, DW_SCHEMA_MAX_DEPTH));
		}
	}
}

/* Ancestor sets make `in` a binary search, but a deep chain of action
 * groups costs quadratic memory: past this many links the schema is refused
 * (a chain of ~2,900 nested groups; real schemas have a handful). */
#define SC_MAX_ANCESTOR_LINKS (1u << 22)

static int sc_u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/* Refuse cycles in the action hierarchy (iterative depth-first search over
 * parent edges) and store each action's ancestors, sorted, so that
 * dw_schema_action_in is a binary search. */
static void sc_action_hierarchy(struct sc_fin *f, uint32_t *mark)
{
	struct dw_schema *s = f->s;
	struct dw_arena *raw = &f->b->raw;
	uint32_t n = s->n_actions, k = 0, sp;
	uint64_t links = 0;
	uint8_t *color;
	uint32_t *order, *stack, *next, *tmp;
	char uid[300];

	if (n == 0)
		return;
	color = dw_arena_zalloc(raw, n, 1);
	order = DW_NEWN(raw, uint32_t, n);
	stack = DW_NEWN(raw, uint32_t, n);
	next = DW_NEWN(raw, uint32_t, n);
	tmp = DW_NEWN(raw, uint32_t, n);
	s->t->anc = DW_NEWN(&s->arena, const uint32_t *, n);
	s->t->n_anc = DW_NEWN(&s->arena, uint32_t, n);
	if (!color || !order || !stack || !next || !tmp || !s->t->anc || !s->t->n_anc) {
		sc_fail(f, -ENOMEM);
		return;
	}
	for (uint32_t root = 0; root < n; root++) {
		if (color[root] != 0)
			continue;
		sp = 0;
		stack[sp++] = root;
		color[root] = 1;
		next[root] = 0;
		while (sp > 0) {
			uint32_t v = stack[sp - 1];
			const struct dw_action *a = s->actions[v];

			if (next[v] < a->n_parents) {
				uint32_t p = a->parents[next[v]++]->index;

				if (color[p] == 1) {
					const struct dw_action *c = s->actions[p];
					struct dw_sc_action *src = f->live_actions.v[p];

					sc_fail(f, dw_sc_error(f->d, &src->loc, "cycle in action hierarchy "
							       "containing `%s`",
							       sc_fmt_uid(uid, sizeof uid, c->type, c->id)));
					return;
				}
				if (color[p] == 0) {
					color[p] = 1;
					next[p] = 0;
					stack[sp++] = p;
				}
				continue;
			}
			color[v] = 2;
			order[k++] = v;     /* post-order: every parent comes first */
			sp--;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		mark[i] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = order[i], m = 0, stamp = i + 1;
		const struct dw_action *a = s->actions[v];
		uint32_t *anc;

		for (uint32_t j = 0; j < a->n_parents; j++) {
			uint32_t p = a->parents[j]->index;

			if (mark[p] != stamp) {
				mark[p] = stamp;
				tmp[m++] = p;
			}
			for (uint32_t q = 0; q < s->t->n_anc[p]; q++) {
				uint32_t g = s->t->anc[p][q];

				if (mark[g] != stamp) {
					mark[g] = stamp;
					tmp[m++] = g;
				}
			}
		}
		links += m;
		if (links > SC_MAX_ANCESTOR_LINKS) {
			struct dw_sc_action *src = f->live_actions.v[v];

			sc_fail(f, dw_sc_error(f->d, &src->loc, "action hierarchy too large: more than "
					       "%u ancestor links", SC_MAX_ANCESTOR_LINKS));
			return;
		}
		qsort(tmp, m, sizeof *tmp, sc_u32_cmp);
		anc = m ? DW_NEWN(&s->arena, uint32_t, m) : NULL;
		if (m && anc == NULL) {
			sc_fail(f, -ENOMEM);
			return;
		}
		if (m)
			memcpy(anc, tmp, m * sizeof *tmp);
		s->t->anc[v] = anc;
		s->t->n_anc[v] = m;
	}
}

static int sc_final_tables(struct dw_schema *s)
{
	struct dw_schema_tables *t = s->t;

	for (uint32_t i = 0; i < s->n_etypes; i++)
		if (sc_htab_put(&t->etypes, s->etypes[i]->name, sc_none, (void *)s->etypes[i],
				NULL) < 0)
			return -ENOMEM;
	for (uint32_t i = 0; i < s->n_actions; i++) {
		const struct dw_action *a = s->actions[i];

		if (sc_htab_put(&t->actions, a->type, a->id, (void *)a, NULL) < 0 ||
		    sc_htab_put(&t->atypes, a->type, sc_none, (void *)a, NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int sc_live(struct sc_vec *out, const struct sc_vec *in, size_t dup_off)
{
	for (size_t i = 0; i < in->n; i++) {
		const uint8_t *dup = (const uint8_t *)in->v[i] + dup_off;

		if (*dup == DW_SC_DUP_NO && sc_vec_push(out, in->v[i]) != 0)
			return -ENOMEM;
	}
	return 0;
}

static void sc_report_dups(struct sc_fin *f)
{
	char uid[300];

	for (size_t i = 0; i < f->b->entities.n; i++) {
		struct dw_sc_entity *e = f->b->entities.v[i];

		if (e->dup == DW_SC_DUP_AT_FINISH)
			sc_fail(f, dw_sc_error(f->d, &e->loc, "duplicate entity type `%.*s`",
					       (int)e->name.n, e->name.p));
	}
	for (size_t i = 0; i < f->b->commons.n; i++) {
		struct dw_sc_common *c = f->b->commons.v[i];

		if (c->dup == DW_SC_DUP_AT_FINISH)
			sc_fail(f, dw_sc_error(f->d, &c->loc, "duplicate common type `%.*s`",
					       (int)c->name.n, c->name.p));
	}
	for (size_t i = 0; i < f->b->actions.n; i++) {
		struct dw_sc_action *a = f->b->actions.v[i];

		if (a->dup == DW_SC_DUP_AT_FINISH)
			sc_fail(f, dw_sc_error(f->d, &a->loc, "duplicate action `%s`",
					       sc_fmt_uid(uid, sizeof uid, a->type, a->id)));
	}
}

int dw_schema_finish(struct dw_schema *s, struct dw_diags *d)
{
	struct sc_fin f;
	uint32_t *emark = NULL, *amark = NULL;
	size_t nmark;

	if (s->finished)
		return 0;
	memset(&f, 0, sizeof f);
	f.s = s;
	f.d = d;
	f.b = dw_sc_build_get(s);
	if (f.b == NULL)
		return -ENOMEM;
	if (f.b->poisoned) {
		int r = dw_diags_add(d, DW_SEV_ERROR, "", NULL, 0, 0, 0, "schema: a fragment or an "
				     "earlier finish failed, so the schema cannot be finished");
		return r < 0 ? r : -EINVAL;
	}
	if (sc_live(&f.live_commons, &f.b->commons, offsetof(struct dw_sc_common, dup)) < 0 ||
	    sc_live(&f.live_entities, &f.b->entities, offsetof(struct dw_sc_entity, dup)) < 0 ||
	    sc_live(&f.live_actions, &f.b->actions, offsetof(struct dw_sc_action, dup)) < 0) {
		f.err = -ENOMEM;
		goto out;
	}
	sc_report_dups(&f);
	for (size_t i = 0; i < DW_N_ELEMENTS(sc_builtins); i++) {
		struct dw_str nm = dw_str_c(sc_builtins[i].name);

		f.alias[i] = sc_htab_get(&f.b->etab, nm, sc_none) == NULL &&
			     sc_htab_get(&f.b->ctab, nm, sc_none) == NULL;
	}
	sc_check_shadowing(&f);
	sc_resolve_all(&f);
	if (f.err != 0)
		goto out;
	nmark = f.live_entities.n > f.live_actions.n ? f.live_entities.n : f.live_actions.n;
	emark = calloc(nmark ? nmark : 1, sizeof *emark);
	amark = calloc(nmark ? nmark : 1, sizeof *amark);
	if (emark == NULL || amark == NULL || sc_make_etypes(&f) < 0 || sc_make_actions(&f) < 0) {
		f.err = -ENOMEM;
		goto out;
	}
	sc_build_commons(&f);
	if (f.err != 0)
		goto out;
	sc_fill_etypes(&f, emark);
	sc_fill_actions(&f, emark, amark);
	if (f.err != 0)
		goto out;
	sc_action_hierarchy(&f, amark);
	if (f.err == 0 && sc_final_tables(s) < 0)
		f.err = -ENOMEM;
out:
	free(emark);
	free(amark);
	sc_vec_free(&f.live_commons);
	sc_vec_free(&f.live_entities);
	sc_vec_free(&f.live_actions);
	if (f.err != 0) {
		/* the half-built structures stay in the arena until dw_schema_free */
		f.b->poisoned = true;
		s->n_etypes = 0;
		s->n_actions = 0;
		return f.err;
	}
	sc_build_free(f.b);
	s->t->build = NULL;
	s->finished = true;
	return 0;
}

/* ---- 7. lookups, formatting, life cycle ------------------------------ */

const struct dw_etype *dw_schema_find_etype(const struct dw_schema *s, struct dw_str name)
{
	if (s == NULL || !s->finished)
		return NULL;
	return sc_htab_get(&s->t->etypes, name, sc_none);
}

const struct dw_action *dw_schema_find_action(const struct dw_schema *s, struct dw_str type,
					      struct dw_str id)
{
	if (s == NULL || !s->finished)
		return NULL;
	return sc_htab_get(&s->t->actions, type, id);
}

bool dw_schema_action_in(const struct dw_schema *s, const struct dw_action *a,
			 const struct dw_action *g)
{
	const uint32_t *v;
	uint32_t lo = 0, hi;

	if (a == NULL || g == NULL)
		return false;
	if (a == g)
		return true;
	if (s == NULL || !s->finished || a->index >= s->n_actions || s->actions[a->index] != a)
		return false;
	v = s->t->anc[a->index];
	hi = s->t->n_anc[a->index];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid] == g->index)
			return s->actions[g->index] == g;
		if (v[mid] < g->index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool dw_schema_is_action_type(const struct dw_schema *s, struct dw_str name)
{
	if (s == NULL || !s->finished)
		return false;
	return sc_htab_get(&s->t->atypes, name, sc_none) != NULL;
}

/* Types are DAGs (common types are shared, not copied), so a printed type can
 * be exponentially larger than the schema: stop at a budget. */
#define SC_FORMAT_BUDGET 4096

static bool sc_attr_name_is_bare(struct dw_str n)
{
	return dw_sc_is_ident(n.p, n.n) && !dw_sc_is_reserved_ident(n.p, n.n);
}

static int sc_format(struct dw_buf *b, const struct dw_type *t, size_t start, unsigned depth)
{
	int r = 0;

	if (b->n - start > SC_FORMAT_BUDGET || depth > DW_SCHEMA_MAX_DEPTH + 1)
		return dw_buf_put(b, "...", 3);
	switch (t->kind) {
	case DW_T_BOOL: return dw_buf_put(b, "Bool", 4);
	case DW_T_LONG: return dw_buf_put(b, "Long", 4);
	case DW_T_STRING: return dw_buf_put(b, "String", 6);
	case DW_T_ENTITY: return dw_buf_put(b, t->entity->name.p, t->entity->name.n);
	case DW_T_EXT:
		switch (t->ext) {
		case DW_EXT_IPADDR: return dw_buf_put(b, "ipaddr", 6);
		case DW_EXT_DECIMAL: return dw_buf_put(b, "decimal", 7);
		case DW_EXT_DATETIME: return dw_buf_put(b, "datetime", 8);
		case DW_EXT_DURATION: return dw_buf_put(b, "duration", 8);
		}
		return dw_buf_put(b, "?", 1);
	case DW_T_SET:
		if ((r = dw_buf_put(b, "Set<", 4)) < 0 ||
		    (r = sc_format(b, t->elem, start, depth + 1)) < 0)
			return r;
		return dw_buf_putc(b, '>');
	case DW_T_RECORD:
		if (t->rec.n == 0)
			return dw_buf_put(b, "{}", 2);
		if ((r = dw_buf_put(b, "{ ", 2)) < 0)
			return r;
		for (uint32_t i = 0; i < t->rec.n; i++) {
			const struct dw_attr *a = &t->rec.v[i];

			if (i > 0 && (r = dw_buf_put(b, ", ", 2)) < 0)
				return r;
			if (b->n - start > SC_FORMAT_BUDGET)
				return dw_buf_put(b, "... }", 5);
			r = sc_attr_name_is_bare(a->name) ? dw_buf_put(b, a->name.p, a->name.n)
							  : dw_buf_put_quoted(b, a->name);
			if (r < 0 || (r = dw_buf_put(b, a->required ? ": " : "?: ",
						     a->required ? 2 : 3)) < 0 ||
			    (r = sc_format(b, a->type, start, depth + 1)) < 0)
				return r;
		}
		return dw_buf_put(b, " }", 2);
	}
	return dw_buf_put(b, "?", 1);
}

int dw_type_format(struct dw_buf *b, const struct dw_type *t)
{
	if (t == NULL)
		return dw_buf_put(b, "(none)", 6);
	return sc_format(b, t, b->n, 0);
}

struct dw_schema *dw_schema_new(void)
{
	struct dw_schema *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	s->t = calloc(1, sizeof *s->t);
	if (s->t == NULL) {
		free(s);
		return NULL;
	}
	dw_arena_init(&s->arena);
	return s;
}

void dw_schema_free(struct dw_schema *s)
{
	if (s == NULL)
		return;
	sc_build_free(s->t->build);
	sc_htab_free(&s->t->etypes);
	sc_htab_free(&s->t->actions);
	sc_htab_free(&s->t->atypes);
	free(s->t);
	dw_arena_fini(&s->arena);
	free(s);
}
