/* schema_json.c - Cedar's JSON schema format (docs/formats.md §1), read with
 * jansson into the raw model of schema_int.h.
 *
 * Field rules follow cedar-policy-core validator/json_schema.rs: unknown keys
 * are refused everywhere (serde deny_unknown_fields, and the hand-written type
 * visitor); `entityTypes` and `actions` are required in a namespace,
 * `principalTypes` and `resourceTypes` in `appliesTo`; `null` means "absent"
 * only for an action's `appliesTo`, `memberOf` and `attributes`.  Duplicate
 * keys are refused by the parser (JSON_REJECT_DUPLICATES).
 *
 * Diagnostics carry a JSON pointer to the offending value
 * ("/Box/entityTypes/Agent/shape"), since jansson keeps no positions. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_load.h"
#include "schema.h"
#include "schema_int.h"

struct sj {
	struct dw_sc_build *b;
	struct dw_sc_frag *frag;
	struct dw_diags *d;
	char *path;                 /* current JSON pointer, NUL-terminated */
	size_t plen, pcap;
	int err;                    /* 0, -EINVAL or -ENOMEM */
	struct dw_str ns;           /* namespace being read */
	struct dw_str action_type;  /* "Action" or "NS::Action", schema arena */
};

/* ---- path and diagnostics -------------------------------------------------- */

/* Append "/seg" (RFC 6901: ~ -> ~0, / -> ~1; control bytes shown as '?').
 * Returns the previous length for sj_pop, or SIZE_MAX on ENOMEM. */
static size_t sj_push(struct sj *p, const char *seg, size_t n)
{
	size_t old = p->plen, need = p->plen + 1 + 2 * n + 1;

	if (need > p->pcap) {
		size_t cap = p->pcap ? p->pcap : 128;
		char *np;

		while (cap < need)
			cap *= 2;
		np = realloc(p->path, cap);
		if (np == NULL) {
			p->err = -ENOMEM;
			return SIZE_MAX;
		}
		p->path = np;
		p->pcap = cap;
	}
	p->path[p->plen++] = '/';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)seg[i];

		if (c == '~' || c == '/') {
			p->path[p->plen++] = '~';
			p->path[p->plen++] = c == '~' ? '0' : '1';
		} else {
			p->path[p->plen++] = c < 0x20 ? '?' : (char)c;
		}
	}
	p->path[p->plen] = '\0';
	return old;
}

static size_t sj_push_index(struct sj *p, size_t i)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%zu", i);

	return sj_push(p, buf, (size_t)n);
}

static void sj_pop(struct sj *p, size_t old)
{
	if (old == SIZE_MAX || p->path == NULL)
		return;
	p->plen = old;
	p->path[old] = '\0';
}

/* A location naming the current path, copied into the build arena.  One is
 * kept per declaration and per reference, so a long pointer (huge keys, deep
 * nesting) keeps only its two ends: messages stay useful, memory linear. */
static struct dw_sc_loc sj_loc(struct sj *p)
{
	struct dw_sc_loc l = { p->frag, 0, 0, NULL };
	const char *path = p->path ? p->path : "";

	if (p->plen <= 400)
		l.path = dw_arena_strndup(dw_sc_raw(p->b), path, p->plen);
	else
		l.path = dw_arena_printf(dw_sc_raw(p->b), "%.150s/...%s", path,
					 path + p->plen - 200);
	if (l.path == NULL)
		p->err = -ENOMEM;
	return l;
}

static void sj_note(struct sj *p, int r)
{
	if (r == -ENOMEM)
		p->err = -ENOMEM;
	else if (r < 0 && p->err == 0)
		p->err = -EINVAL;
}

static void sj_err(struct sj *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sj_err(struct sj *p, const char *fmt, ...)
{
	struct dw_sc_loc l = { p->frag, 0, 0, p->path ? p->path : "" };
	char msg[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sj_note(p, dw_sc_error(p->d, &l, "%s", msg));
}

static const char *sj_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "map";
	case JSON_ARRAY: return "sequence";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "floating point";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "value";
}

/* ---- field checks ------------------------------------------------------------- */

/* Refuse any key of obj not in allowed (a NULL-terminated list). */
static bool sj_known_fields(struct sj *p, json_t *obj, const char *const *allowed)
{
	const char *key;
	size_t klen;
	json_t *v;
	bool ok = true;

	json_object_keylen_foreach(obj, key, klen, v) {
		bool found = false;
		char list[256];
		size_t o = 0;

		for (size_t i = 0; allowed[i] != NULL; i++)
			if (strlen(allowed[i]) == klen && memcmp(allowed[i], key, klen) == 0)
				found = true;
		if (found)
			continue;
		list[0] = '\0';
		for (size_t i = 0; allowed[i] != NULL && o < sizeof list; i++)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s`%s`",
					      i == 0 ? "" : ", ", allowed[i]);
		if (allowed[0] == NULL)
			sj_err(p, "unknown field `%.*s`, there are no fields",
			       (int)(klen > 100 ? 100 : klen), key);
		else
			sj_err(p, "unknown field `%.*s`, expected %s%s",
			       (int)(klen > 100 ? 100 : klen), key,
			       allowed[1] ? "one of " : "", list);
		ok = false;
	}
	return ok;
}

static bool sj_object(struct sj *p, json_t *v, const char *what)
{
	if (json_is_object(v))
		return true;
	sj_err(p, "invalid type: %s, expected %s", sj_kind(v), what);
	return false;
}

static struct dw_str sj_string(json_t *v)
{
	return dw_str_make(json_string_value(v), json_string_length(v));
}

/* Cedar's `Name::from_normalized_str` (and InternalName's): IDENT {'::' IDENT}
 * with no spaces; reserved words refused, `__cedar` allowed only when
 * allow_cedar (references may name `__cedar::Long`). */
static bool sj_check_name(struct sj *p, struct dw_str s, const char *what, bool allow_cedar)
{
	uint32_t start = 0;

	if (s.n == 0) {
		sj_err(p, "invalid %s ``: expected an identifier", what);
		return false;
	}
	for (uint32_t i = 0; i <= s.n; i++) {
		if (i < s.n && s.p[i] != ':')
			continue;
		if (!dw_sc_is_ident(s.p + start, i - start) ||
		    (i < s.n && (i + 1 >= s.n || s.p[i + 1] != ':'))) {
			sj_err(p, "invalid %s `%.*s`: not a `::`-separated path of identifiers "
			       "without spaces", what, (int)(s.n > 200 ? 200 : s.n), s.p);
			return false;
		}
		if (dw_sc_is_reserved_ident(s.p + start, i - start)) {
			sj_err(p, "invalid %s `%.*s`: this identifier is reserved and cannot be "
			       "used: %.*s", what, (int)(s.n > 200 ? 200 : s.n), s.p,
			       (int)(i - start), s.p + start);
			return false;
		}
		if (!allow_cedar && i - start == 7 && memcmp(s.p + start, "__cedar", 7) == 0) {
			sj_err(p, "use of the reserved `__cedar` namespace");
			return false;
		}
		i++;            /* the second ':' */
		start = i + 1;
	}
	return true;
}

/* An annotations map: identifier keys (reserved words allowed), string or
 * null values.  Checked, then dropped. */
static void sj_annotations(struct sj *p, json_t *v)
{
	const char *key;
	size_t klen;
	json_t *a;

	if (!sj_object(p, v, "a map of annotations"))
		return;
	json_object_keylen_foreach(v, key, klen, a) {
		size_t old = sj_push(p, key, klen);

		if (!dw_sc_is_ident(key, klen))
			sj_err(p, "invalid annotation key: expected an identifier");
		else if (!json_is_string(a) && !json_is_null(a))
			sj_err(p, "invalid type: %s, expected a string or null", sj_kind(a));
		sj_pop(p, old);
	}
}

/* ---- types ------------------------------------------------------------------------ */

enum { SJ_IN_ATTR = 1, SJ_IN_COMMON = 2 };

static struct dw_sc_type *sj_new(struct sj *p, uint8_t kind)
{
	struct dw_sc_type *t = DW_NEW(dw_sc_raw(p->b), struct dw_sc_type);

	if (t == NULL)
		p->err = -ENOMEM;
	else
		t->kind = kind;
	return t;
}

static bool sj_ref(struct sj *p, struct dw_sc_name *n, json_t *v, uint8_t kind, const char *what)
{
	memset(n, 0, sizeof n[0]);
	if (!json_is_string(v)) {
		sj_err(p, "invalid type: %s, expected a string", sj_kind(v));
		return false;
	}
	n->text = sj_string(v);
	if (!sj_check_name(p, n->text, what, true))
		return false;
	n->text.p = dw_arena_strndup(dw_sc_raw(p->b), n->text.p, n->text.n);
	if (n->text.p == NULL) {
		p->err = -ENOMEM;
		return false;
	}
	n->ns = p->ns;
	n->kind = kind;
	n->loc = sj_loc(p);
	return p->err != -ENOMEM;
}

static struct dw_sc_type *sj_type(struct sj *p, json_t *v, unsigned level, unsigned ctx);

/* The attributes of a record type that has level types around it. */
static struct dw_sc_type *sj_record(struct sj *p, json_t *attrs, unsigned level)
{
	struct dw_sc_type *t = sj_new(p, DW_SC_RECORD);
	const char *key;
	size_t klen, i = 0, n;
	json_t *a;

	if (t == NULL || !sj_object(p, attrs, "a map of attributes"))
		return NULL;
	n = json_object_size(attrs);
	if (n > UINT32_MAX / 2) {
		sj_err(p, "too many attributes");
		return NULL;
	}
	t->rec.v = n ? DW_NEWN(dw_sc_raw(p->b), struct dw_sc_attr, n) : NULL;
	if (n && t->rec.v == NULL) {
		p->err = -ENOMEM;
		return NULL;
	}
	json_object_keylen_foreach(attrs, key, klen, a) {
		size_t old = sj_push(p, key, klen);
		struct dw_sc_attr *at = &t->rec.v[i++];
		json_t *req;

		if (old == SIZE_MAX)
			return NULL;
		memset(at, 0, sizeof *at);
		at->name.p = dw_sc_keep(p->b, key, klen);
		at->name.n = (uint32_t)klen;
		at->loc = sj_loc(p);
		if (at->name.p == NULL) {
			p->err = -ENOMEM;
			return NULL;
		}
		at->type = sj_type(p, a, level + 1, SJ_IN_ATTR);
		if (at->type == NULL) {
			sj_pop(p, old);
			return NULL;
		}
		at->required = true;
		req = json_object_get(a, "required");
		if (req != NULL) {
			if (json_is_boolean(req)) {
				at->required = json_is_true(req);
			} else {
				size_t o2 = sj_push(p, "required", 8);

				sj_err(p, "invalid type: %s, expected a boolean", sj_kind(req));
				sj_pop(p, o2);
			}
		}
		sj_pop(p, old);
	}
	t->rec.n = (uint32_t)i;
	sj_note(p, dw_sc_record_check(p->b, t, p->d));
	return t;
}

/* A type object.  ctx says which extra keys the surrounding structure adds:
 * `required` and `annotations` on a record attribute, `annotations` on a
 * common type.  level counts the Set/record types around v. */
static struct dw_sc_type *sj_type(struct sj *p, json_t *v, unsigned level, unsigned ctx)
{
	static const char *const fields[] = {
		"type", "element", "attributes", "additionalAttributes", "name", NULL,
	};
	json_t *ty, *elem, *attrs, *addl, *name, *ann;
	struct dw_sc_type *t = NULL;
	struct dw_str s;
	const char *key;
	size_t klen;
	json_t *f;
	bool ok = true;

	if (p->err == -ENOMEM)
		return NULL;
	if (!json_is_object(v)) {
		sj_err(p, "invalid type: %s, expected builtin type or reference to type defined "
		       "in commonTypes", sj_kind(v));
		return NULL;
	}
	/* unknown keys first, as serde reports them */
	json_object_keylen_foreach(v, key, klen, f) {
		bool known = false;

		for (size_t i = 0; fields[i] != NULL; i++)
			if (strlen(fields[i]) == klen && memcmp(fields[i], key, klen) == 0)
				known = true;
		if ((ctx & SJ_IN_ATTR) && klen == 8 && memcmp(key, "required", 8) == 0)
			known = true;
		if ((ctx & (SJ_IN_ATTR | SJ_IN_COMMON)) && klen == 11 &&
		    memcmp(key, "annotations", 11) == 0)
			known = true;
		if (!known) {
			sj_err(p, "unknown field `%.*s`, expected one of `type`, `element`, "
			       "`attributes`, `additionalAttributes`, `name`",
			       (int)(klen > 100 ? 100 : klen), key);
			return NULL;
		}
	}
	if ((ann = json_object_get(v, "annotations")) != NULL && (ctx & (SJ_IN_ATTR | SJ_IN_COMMON))) {
		size_t old = sj_push(p, "annotations", 11);

		sj_annotations(p, ann);
		sj_pop(p, old);
	}
	ty = json_object_get(v, "type");
	elem = json_object_get(v, "element");
	attrs = json_object_get(v, "attributes");
	addl = json_object_get(v, "additionalAttributes");
	name = json_object_get(v, "name");
	if (ty == NULL) {
		sj_err(p, "missing field `type`");
		return NULL;
	}
	if (!json_is_string(ty)) {
		size_t old = sj_push(p, "type", 4);

		sj_err(p, "invalid type: %s, expected a string", sj_kind(ty));
		sj_pop(p, old);
		return NULL;
	}
	s = sj_string(ty);
#define SJ_ONLY(cond, field)                                                            \
	do {                                                                            \
		if (ok && !(cond)) {                                                    \
			sj_err(p, "unknown field `%s`", (field));                       \
			ok = false;                                                     \
		}                                                                       \
	} while (0)
	if (dw_str_eq_c(s, "String") || dw_str_eq_c(s, "Long") || dw_str_eq_c(s, "Boolean")) {
		const char *extra = elem ? "element" : attrs ? "attributes"
				  : addl ? "additionalAttributes" : name ? "name" : NULL;

		if (extra != NULL) {
			sj_err(p, "unknown field `%s`, there are no fields", extra);
			return NULL;
		}
		return sj_new(p, s.p[0] == 'S' ? DW_SC_STRING : s.p[0] == 'L' ? DW_SC_LONG
							      : DW_SC_BOOL);
	}
	if (dw_str_eq_c(s, "Set")) {
		size_t old;

		SJ_ONLY(!attrs, "attributes");
		SJ_ONLY(!addl, "additionalAttributes");
		SJ_ONLY(!name, "name");
		if (!ok)
			return NULL;
		if (elem == NULL) {
			sj_err(p, "missing field `element`");
			return NULL;
		}
		if (level + 1 > DW_SCHEMA_MAX_DEPTH) {
			sj_err(p, "type nesting deeper than %d levels", DW_SCHEMA_MAX_DEPTH);
			return NULL;
		}
		if ((t = sj_new(p, DW_SC_SET)) == NULL)
			return NULL;
		old = sj_push(p, "element", 7);
		t->elem = sj_type(p, elem, level + 1, 0);
		sj_pop(p, old);
		return t->elem ? t : NULL;
	}
	if (dw_str_eq_c(s, "Record")) {
		size_t old;

		SJ_ONLY(!elem, "element");
		SJ_ONLY(!name, "name");
		if (!ok)
			return NULL;
		if (attrs == NULL) {
			sj_err(p, "missing field `attributes`");
			return NULL;
		}
		if (addl != NULL) {
			old = sj_push(p, "additionalAttributes", 20);
			if (!json_is_boolean(addl))
				sj_err(p, "invalid type: %s, expected a boolean", sj_kind(addl));
			else if (json_is_true(addl))
				sj_err(p, "unsupported feature used in schema: records and entities "
				       "with `additionalAttributes` are experimental");
			sj_pop(p, old);
		}
		if (level + 1 > DW_SCHEMA_MAX_DEPTH) {
			sj_err(p, "type nesting deeper than %d levels", DW_SCHEMA_MAX_DEPTH);
			return NULL;
		}
		old = sj_push(p, "attributes", 10);
		t = sj_record(p, attrs, level);
		sj_pop(p, old);
		return t;
	}
	if (dw_str_eq_c(s, "Entity") || dw_str_eq_c(s, "EntityOrCommon") ||
	    dw_str_eq_c(s, "Extension")) {
		size_t old;
		bool is_ext = s.p[1] == 'x';

		SJ_ONLY(!elem, "element");
		SJ_ONLY(!attrs, "attributes");
		SJ_ONLY(!addl, "additionalAttributes");
		if (!ok)
			return NULL;
		if (name == NULL) {
			sj_err(p, "missing field `name`");
			return NULL;
		}
		old = sj_push(p, "name", 4);
		if (is_ext) {
			struct dw_str e = json_is_string(name) ? sj_string(name) : DW_STR_LIT("");
			enum dw_ext_type x = dw_sc_ext_by_name(e.p, e.n);

			if (!json_is_string(name))
				sj_err(p, "invalid type: %s, expected a string", sj_kind(name));
			else if (x == 0)
				sj_err(p, "unknown extension type `%.*s`",
				       (int)(e.n > 100 ? 100 : e.n), e.p);
			else if ((t = sj_new(p, DW_SC_EXT)) != NULL)
				t->ext = x;
		} else if ((t = sj_new(p, DW_SC_REF)) != NULL &&
			   !sj_ref(p, &t->ref, name,
				   s.n == 6 ? DW_SC_REF_ENTITY : DW_SC_REF_ANY,
				   s.n == 6 ? "entity type" : "entity or common type")) {
			t = NULL;
		}
		sj_pop(p, old);
		return t;
	}
	/* any other "type" names a common type */
	if (elem || attrs || addl || name) {
		sj_err(p, "unknown field `%s`, there are no fields",
		       elem ? "element" : attrs ? "attributes" : addl ? "additionalAttributes"
								 : "name");
		return NULL;
	}
	{
		size_t old = sj_push(p, "type", 4);

		if ((t = sj_new(p, DW_SC_REF)) != NULL &&
		    !sj_ref(p, &t->ref, ty, DW_SC_REF_COMMON, "common type"))
			t = NULL;
		sj_pop(p, old);
	}
	return t;
#undef SJ_ONLY
}

/* ---- declarations ------------------------------------------------------------------ */

static void sj_common_types(struct sj *p, json_t *obj)
{
	const char *key;
	size_t klen;
	json_t *v;

	if (!sj_object(p, obj, "a map of common types"))
		return;
	json_object_keylen_foreach(obj, key, klen, v) {
		size_t old = sj_push(p, key, klen);
		struct dw_sc_common *c;
		struct dw_sc_type *def;
		struct dw_str base = dw_str_make(key, klen);

		if (old == SIZE_MAX)
			return;
		if (!dw_sc_is_ident(key, klen) || dw_sc_is_reserved_ident(key, klen)) {
			sj_err(p, "invalid common type name `%.*s`: expected an unreserved identifier",
			       (int)(klen > 100 ? 100 : klen), key);
		} else if (dw_str_eq_c(base, "__cedar")) {
			sj_err(p, "use of the reserved `__cedar` namespace");
		} else if (dw_sc_is_reserved_type_name(key, klen)) {
			sj_err(p, "this is reserved and cannot be the basename of a common-type "
			       "declaration: %.*s", (int)klen, key);
		} else if ((def = sj_type(p, v, 0, SJ_IN_COMMON)) != NULL) {
			c = DW_NEW(dw_sc_raw(p->b), struct dw_sc_common);
			if (c == NULL) {
				p->err = -ENOMEM;
				return;
			}
			c->name = dw_sc_join(dw_sc_out(p->b), p->ns, base);
			if (c->name.p == NULL) {
				p->err = -ENOMEM;
				return;
			}
			c->ns = p->ns;
			c->base = dw_str_make(c->name.p + c->name.n - klen, klen);
			c->def = def;
			c->loc = sj_loc(p);
			sj_note(p, dw_sc_add_common(p->b, c, p->d));
		}
		sj_pop(p, old);
		if (p->err == -ENOMEM)
			return;
	}
}

static bool sj_name_list(struct sj *p, json_t *arr, uint8_t kind, const char *what,
			 struct dw_sc_name **out, uint32_t *n_out)
{
	size_t n, i;
	json_t *v;

	*out = NULL;
	*n_out = 0;
	if (!json_is_array(arr)) {
		sj_err(p, "invalid type: %s, expected a sequence", sj_kind(arr));
		return false;
	}
	n = json_array_size(arr);
	if (n > UINT32_MAX / 2) {
		sj_err(p, "list too long");
		return false;
	}
	if (n == 0)
		return true;
	*out = DW_NEWN(dw_sc_raw(p->b), struct dw_sc_name, n);
	if (*out == NULL) {
		p->err = -ENOMEM;
		return false;
	}
	json_array_foreach(arr, i, v) {
		size_t old = sj_push_index(p, i);
		bool ok = sj_ref(p, &(*out)[i], v, kind, what);

		sj_pop(p, old);
		if (!ok)
			return false;
	}
	*n_out = (uint32_t)n;
	return true;
}

static void sj_entity_type(struct sj *p, const char *key, size_t klen, json_t *v)
{
	static const char *const fields[] = {
		"memberOfTypes", "shape", "tags", "enum", "annotations", NULL,
	};
	struct dw_sc_entity *e;
	json_t *mot, *shape, *tags, *en, *ann;
	struct dw_str base = dw_str_make(key, klen);

	if (!dw_sc_is_ident(key, klen)) {
		sj_err(p, "invalid id `%.*s`: expected an identifier", (int)(klen > 100 ? 100 : klen),
		       key);
		return;
	}
	if (dw_sc_is_reserved_ident(key, klen)) {
		sj_err(p, "invalid id `%.*s`: this identifier is reserved and cannot be used: %.*s",
		       (int)klen, key, (int)klen, key);
		return;
	}
	if (dw_str_eq_c(base, "__cedar")) {
		sj_err(p, "use of the reserved `__cedar` namespace");
		return;
	}
	if (dw_str_eq_c(base, "Action")) {
		sj_err(p, "entity type `Action` declared in `entityTypes` list");
		return;
	}
	if (!sj_object(p, v, "an entity type") || !sj_known_fields(p, v, fields))
		return;
	e = DW_NEW(dw_sc_raw(p->b), struct dw_sc_entity);
	if (e == NULL) {
		p->err = -ENOMEM;
		return;
	}
	e->name = dw_sc_join(dw_sc_out(p->b), p->ns, base);
	if (e->name.p == NULL) {
		p->err = -ENOMEM;
		return;
	}
	e->ns = p->ns;
	e->base = dw_str_make(e->name.p + e->name.n - klen, klen);
	e->loc = sj_loc(p);
	mot = json_object_get(v, "memberOfTypes");
	shape = json_object_get(v, "shape");
	tags = json_object_get(v, "tags");
	en = json_object_get(v, "enum");
	if ((ann = json_object_get(v, "annotations")) != NULL) {
		size_t old = sj_push(p, "annotations", 11);

		sj_annotations(p, ann);
		sj_pop(p, old);
	}
	if (en != NULL) {
		size_t old, i, n;
		json_t *id;

		if (mot || shape || tags) {
			sj_err(p, "unexpected field: %s%s%s%s%s", mot ? "memberOfTypes" : "",
			       mot && (shape || tags) ? ", " : "", shape ? "shape" : "",
			       shape && tags ? ", " : "", tags ? "tags" : "");
			return;
		}
		old = sj_push(p, "enum", 4);
		n = json_is_array(en) ? json_array_size(en) : 0;
		if (!json_is_array(en)) {
			sj_err(p, "invalid type: %s, expected a sequence of strings", sj_kind(en));
		} else if (n == 0) {
			sj_err(p, "the vector provided was empty, NonEmpty needs at least one element");
		} else if (n > UINT32_MAX / 2) {
			sj_err(p, "list too long");
		} else if ((e->enum_ids = dw_arena_zalloc(dw_sc_out(p->b), n * sizeof *e->enum_ids,
							  _Alignof(struct dw_str))) == NULL) {
			p->err = -ENOMEM;
		} else {
			e->is_enum = true;
			json_array_foreach(en, i, id) {
				size_t o2 = sj_push_index(p, i);

				if (!json_is_string(id)) {
					sj_err(p, "invalid type: %s, expected a string", sj_kind(id));
				} else {
					struct dw_str s = sj_string(id);

					e->enum_ids[i].p = dw_sc_keep(p->b, s.p, s.n);
					e->enum_ids[i].n = s.n;
					if (e->enum_ids[i].p == NULL)
						p->err = -ENOMEM;
				}
				sj_pop(p, o2);
			}
			/* repeats and the empty id kept, as Cedar keeps them */
			e->n_enum = (uint32_t)n;
		}
		sj_pop(p, old);
		if (p->err != 0)
			return;
	} else {
		size_t old;

		if (mot != NULL) {
			old = sj_push(p, "memberOfTypes", 13);
			if (!sj_name_list(p, mot, DW_SC_REF_ENTITY, "entity type", &e->parents,
					  &e->n_parents)) {
				sj_pop(p, old);
				return;
			}
			sj_pop(p, old);
		}
		if (shape != NULL) {
			old = sj_push(p, "shape", 5);
			e->shape = sj_type(p, shape, 0, 0);
			sj_pop(p, old);
			if (e->shape == NULL)
				return;
		}
		if (tags != NULL) {
			old = sj_push(p, "tags", 4);
			e->tags = sj_type(p, tags, 0, 0);
			sj_pop(p, old);
			if (e->tags == NULL)
				return;
		}
	}
	sj_note(p, dw_sc_add_entity(p->b, e, p->d));
}

static void sj_entity_types(struct sj *p, json_t *obj)
{
	const char *key;
	size_t klen;
	json_t *v;

	if (!sj_object(p, obj, "a map of entity types"))
		return;
	json_object_keylen_foreach(obj, key, klen, v) {
		size_t old = sj_push(p, key, klen);

		if (old == SIZE_MAX)
			return;
		sj_entity_type(p, key, klen, v);
		sj_pop(p, old);
		if (p->err == -ENOMEM)
			return;
	}
}

static bool sj_member_of(struct sj *p, json_t *arr, struct dw_sc_action *a)
{
	static const char *const fields[] = { "id", "type", NULL };
	size_t n, i;
	json_t *v;

	if (!json_is_array(arr)) {
		sj_err(p, "invalid type: %s, expected a sequence", sj_kind(arr));
		return false;
	}
	n = json_array_size(arr);
	if (n > UINT32_MAX / 2) {
		sj_err(p, "list too long");
		return false;
	}
	a->parents = n ? DW_NEWN(dw_sc_raw(p->b), struct dw_sc_aref, n) : NULL;
	if (n && a->parents == NULL) {
		p->err = -ENOMEM;
		return false;
	}
	json_array_foreach(arr, i, v) {
		size_t old = sj_push_index(p, i);
		struct dw_sc_aref *r = &a->parents[i];
		json_t *id, *ty;
		bool ok = false;

		memset(r, 0, sizeof *r);
		r->ns = p->ns;
		if (sj_object(p, v, "an action reference") && sj_known_fields(p, v, fields)) {
			id = json_object_get(v, "id");
			ty = json_object_get(v, "type");
			if (id == NULL) {
				sj_err(p, "missing field `id`");
			} else if (!json_is_string(id)) {
				sj_err(p, "invalid type: %s, expected a string", sj_kind(id));
			} else if (ty != NULL && !json_is_null(ty) && !json_is_string(ty)) {
				sj_err(p, "invalid type: %s, expected a string", sj_kind(ty));
			} else if (ty == NULL || json_is_null(ty) ||
				   sj_check_name(p, sj_string(ty), "action type", true)) {
				struct dw_str s = sj_string(id);

				r->id.p = dw_arena_strndup(dw_sc_raw(p->b), s.p, s.n);
				r->id.n = s.n;
				if (ty != NULL && json_is_string(ty)) {
					s = sj_string(ty);
					r->type.p = dw_arena_strndup(dw_sc_raw(p->b), s.p, s.n);
					r->type.n = s.n;
				}
				r->loc = sj_loc(p);
				ok = r->id.p != NULL && (r->type.n == 0 || r->type.p != NULL);
				if (!ok)
					p->err = -ENOMEM;
			}
		}
		sj_pop(p, old);
		if (!ok)
			return false;
	}
	a->n_parents = (uint32_t)n;
	return true;
}

static bool sj_applies_to(struct sj *p, json_t *v, struct dw_sc_action *a)
{
	static const char *const fields[] = {
		"resourceTypes", "principalTypes", "context", NULL,
	};
	json_t *pt, *rt, *ctx;
	size_t old;
	bool ok;

	if (!sj_object(p, v, "an appliesTo map") || !sj_known_fields(p, v, fields))
		return false;
	rt = json_object_get(v, "resourceTypes");
	pt = json_object_get(v, "principalTypes");
	ctx = json_object_get(v, "context");
	if (rt == NULL || pt == NULL) {
		sj_err(p, "missing field `%s`", rt == NULL ? "resourceTypes" : "principalTypes");
		return false;
	}
	a->has_applies_to = true;
	old = sj_push(p, "principalTypes", 14);
	ok = sj_name_list(p, pt, DW_SC_REF_ENTITY, "entity type", &a->principals,
			  &a->n_principals);
	sj_pop(p, old);
	if (!ok)
		return false;
	old = sj_push(p, "resourceTypes", 13);
	ok = sj_name_list(p, rt, DW_SC_REF_ENTITY, "entity type", &a->resources,
			  &a->n_resources);
	sj_pop(p, old);
	if (!ok)
		return false;
	if (ctx != NULL) {
		old = sj_push(p, "context", 7);
		a->context = sj_type(p, ctx, 0, 0);
		sj_pop(p, old);
		if (a->context == NULL)
			return false;
	}
	return true;
}

static void sj_actions(struct sj *p, json_t *obj)
{
	static const char *const fields[] = {
		"attributes", "appliesTo", "memberOf", "annotations", NULL,
	};
	const char *key;
	size_t klen;
	json_t *v;

	if (!sj_object(p, obj, "a map of actions"))
		return;
	json_object_keylen_foreach(obj, key, klen, v) {
		size_t old = sj_push(p, key, klen);
		struct dw_sc_action *a;
		json_t *attrs, *at, *mo, *ann;
		bool ok = true;

		if (old == SIZE_MAX)
			return;
		if (!sj_object(p, v, "an action") || !sj_known_fields(p, v, fields)) {
			sj_pop(p, old);
			continue;
		}
		a = DW_NEW(dw_sc_raw(p->b), struct dw_sc_action);
		if (a == NULL) {
			p->err = -ENOMEM;
			return;
		}
		a->type = p->action_type;
		a->id.p = dw_sc_keep(p->b, key, klen);
		a->id.n = (uint32_t)klen;
		a->ns = p->ns;
		a->loc = sj_loc(p);
		if (a->id.p == NULL) {
			p->err = -ENOMEM;
			return;
		}
		attrs = json_object_get(v, "attributes");
		at = json_object_get(v, "appliesTo");
		mo = json_object_get(v, "memberOf");
		ann = json_object_get(v, "annotations");
		if (attrs != NULL && !json_is_null(attrs)) {
			sj_err(p, "unsupported feature used in schema: action declared with "
			       "attributes: [%.*s]", (int)(klen > 100 ? 100 : klen), key);
			ok = false;
		}
		if (ann != NULL) {
			size_t o2 = sj_push(p, "annotations", 11);

			sj_annotations(p, ann);
			sj_pop(p, o2);
		}
		if (ok && at != NULL && !json_is_null(at)) {
			size_t o2 = sj_push(p, "appliesTo", 9);

			ok = sj_applies_to(p, at, a);
			sj_pop(p, o2);
		}
		if (ok && mo != NULL && !json_is_null(mo)) {
			size_t o2 = sj_push(p, "memberOf", 8);

			ok = sj_member_of(p, mo, a);
			sj_pop(p, o2);
		}
		if (ok)
			sj_note(p, dw_sc_add_action(p->b, a, p->d));
		sj_pop(p, old);
		if (p->err == -ENOMEM)
			return;
	}
}

static void sj_namespace(struct sj *p, const char *key, size_t klen, json_t *v)
{
	static const char *const fields[] = {
		"commonTypes", "entityTypes", "actions", "annotations", NULL,
	};
	json_t *ct, *et, *ac, *ann;

	if (klen != 0 && !sj_check_name(p, dw_str_make(key, klen), "namespace", false))
		return;
	if (!sj_object(p, v, "a namespace definition") || !sj_known_fields(p, v, fields))
		return;
	ct = json_object_get(v, "commonTypes");
	et = json_object_get(v, "entityTypes");
	ac = json_object_get(v, "actions");
	ann = json_object_get(v, "annotations");
	if (et == NULL || ac == NULL) {
		sj_err(p, "missing field `%s`", et == NULL ? "entityTypes" : "actions");
		return;
	}
	if (ann != NULL) {
		size_t old = sj_push(p, "annotations", 11);

		if (klen == 0 && json_is_object(ann) && json_object_size(ann) != 0)
			sj_err(p, "annotations are not allowed on the empty namespace");
		else
			sj_annotations(p, ann);
		sj_pop(p, old);
	}
	p->ns = klen ? dw_str_make(dw_arena_strndup(dw_sc_raw(p->b), key, klen), klen)
		     : DW_STR_LIT("");
	p->action_type = dw_sc_join(dw_sc_out(p->b), p->ns, DW_STR_LIT("Action"));
	if (p->ns.p == NULL || p->action_type.p == NULL) {
		p->err = -ENOMEM;
		return;
	}
	if (ct != NULL) {
		size_t old = sj_push(p, "commonTypes", 11);

		sj_common_types(p, ct);
		sj_pop(p, old);
	}
	if (p->err != -ENOMEM) {
		size_t old = sj_push(p, "entityTypes", 11);

		sj_entity_types(p, et);
		sj_pop(p, old);
	}
	if (p->err != -ENOMEM) {
		size_t old = sj_push(p, "actions", 7);

		sj_actions(p, ac);
		sj_pop(p, old);
	}
}

int dw_schema_add_json(struct dw_schema *s, const char *file, const char *src, size_t len,
		       struct dw_diags *diags)
{
	struct sj p;
	json_error_t jerr;
	json_t *root;
	const char *key;
	size_t klen;
	json_t *v;

	memset(&p, 0, sizeof p);
	if (s->finished) {
		int r = dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0,
				     "schema: fragment added after the schema was finished");

		return r < 0 ? r : -EINVAL;
	}
	p.b = dw_sc_build_get(s);
	if (p.b == NULL)
		return -ENOMEM;
	p.d = diags;
	p.frag = dw_sc_frag_new(p.b, file, NULL, 0, false);
	if (p.frag == NULL) {
		dw_sc_poison(p.b);
		return -ENOMEM;
	}
	root = dw_json_loadb(src, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (root == NULL) {
		size_t off = jerr.position > 0 ? (size_t)jerr.position : 0;
		int r;

		if (off > len)
			off = len;
		r = dw_diags_add(diags, DW_SEV_ERROR, p.frag->file, src, len, off > 0 ? off - 1 : 0,
				 off, "invalid JSON: %s", jerr.text);
		dw_sc_poison(p.b);
		return r < 0 ? r : -EINVAL;
	}
	if (!json_is_object(root)) {
		sj_err(&p, "invalid type: %s, expected a map of namespaces", sj_kind(root));
	} else {
		json_object_keylen_foreach(root, key, klen, v) {
			size_t old = sj_push(&p, key, klen);

			if (old == SIZE_MAX)
				break;
			sj_namespace(&p, key, klen, v);
			sj_pop(&p, old);
			if (p.err == -ENOMEM)
				break;
		}
	}
	json_decref(root);
	free(p.path);
	if (p.err != 0)
		dw_sc_poison(p.b);
	return p.err;
}
