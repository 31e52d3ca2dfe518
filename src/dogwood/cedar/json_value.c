/* json_value.c - Cedar's JSON value encoding (see json_value.h).
 *
 * Divisions, in order:
 *   1. error and path plumbing (every message starts with where the value sits)
 *   2. entity type names and UIDs ({"type","id"}, __entity, Type::"id")
 *   3. plain values: Cedar's explicit encoding, no schema information
 *   4. schema-guided values: implicit entity/extension forms plus type checks
 *   5. type checks of values already built (request contexts) and dw_request_check
 *   6. output: dw_value_to_json
 *
 * Cedar's parser (cedar-policy-core entities/json/value.rs) reads a JSON value as
 * an untagged serde enum and checks it against the schema afterwards; this file
 * does both in one walk so an error can name the JSON path (`"addr"."zip"`,
 * `"admins"[2]`) where it was found. */
#include "json_value.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "schema.h"

/* Values nested deeper than this are refused.  The parser recurses once per
 * level; no real entity or context comes near it, and it keeps a hostile file
 * from turning jansson's 2048 levels into 2048 C frames per level of ours. */
#define DW_JSON_MAX_DEPTH 128

/* dw_value_to_json recurses per level too; values built by the evaluator can nest
 * a little deeper than parsed ones (an expression wraps a parsed value), never
 * near this. */
#define DW_JSON_OUT_MAX_DEPTH 1024

_Static_assert(sizeof(json_int_t) == sizeof(int64_t), "jansson must use 64-bit integers");

/* --- 1. errors and paths --------------------------------------------------- */

struct jv {
	struct dw_arena *a;
	struct dw_buf path;   /* where, then one segment per level entered */
	bool in_attr;         /* the path already names an attribute */
	bool enum_unchecked;  /* contexts: enum ids are request validation's business */
	bool as_given;        /* records: an undeclared key, or a value not of its declared
			       * type, is read untyped, a missing required one is no error
			       * (Dogwood's replay) */
	char *err;
	size_t errlen;
};

struct jv_mark {
	size_t n;
	bool in_attr;
};

static void jv_init(struct jv *c, struct dw_arena *a, const char *where, bool in_attr,
		    char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->a = a;
	c->in_attr = in_attr;
	c->err = err;
	c->errlen = errlen;
	if (errlen != 0)
		err[0] = '\0';
	/* a failed copy leaves the path empty: messages lose their prefix, nothing else */
	if (where != NULL)
		(void)dw_buf_put(&c->path, where, strlen(where));
}

static void jv_fini(struct jv *c)
{
	dw_buf_free(&c->path);
}

static int jv_oom(struct jv *c)
{
	if (c->errlen != 0)
		snprintf(c->err, c->errlen, "out of memory");
	return -ENOMEM;
}

static int jv_fail(struct jv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int jv_fail(struct jv *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->errlen == 0)
		return -EINVAL;
	if (c->path.n == 0)
		snprintf(c->err, c->errlen, "%s", msg);
	else if (c->path.n <= 200)
		snprintf(c->err, c->errlen, "%s: %s", c->path.p, msg);
	else   /* a deep path would crowd out the message: keep its two ends */
		snprintf(c->err, c->errlen, "%.100s...%s: %s", c->path.p,
			 c->path.p + c->path.n - 80, msg);
	return -EINVAL;
}

static struct jv_mark jv_mark(const struct jv *c)
{
	struct jv_mark m = { c->path.n, c->in_attr };
	return m;
}

static void jv_pop(struct jv *c, struct jv_mark m)
{
	c->path.n = m.n;
	if (c->path.p != NULL)
		c->path.p[m.n] = '\0';
	c->in_attr = m.in_attr;
}

/* Enter a record field: `: attribute "k"` at the top, `."k"` below. */
static int jv_push_key(struct jv *c, struct dw_str key)
{
	int r;

	if (c->in_attr)
		r = dw_buf_putc(&c->path, '.');
	else
		r = dw_buf_put(&c->path, c->path.n ? ": attribute " : "attribute ",
			       c->path.n ? 12 : 10);
	if (r == 0)
		r = dw_buf_put_quoted(&c->path, key);
	c->in_attr = true;
	return r ? jv_oom(c) : 0;
}

static int jv_push_index(struct jv *c, size_t i)
{
	return dw_buf_printf(&c->path, "[%zu]", i) ? jv_oom(c) : 0;
}

/* What a JSON value is, in Cedar's words, for "got ..." before it was parsed. */
static const char *jv_json_kind(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "Record";
	case JSON_ARRAY:
		return "Set";
	case JSON_STRING:
		return "String";
	case JSON_INTEGER:
		return "Long";
	case JSON_REAL:
		return "a number with a fraction or exponent";
	case JSON_TRUE:
	case JSON_FALSE:
		return "Bool";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

static const char *jv_ext_name(enum dw_ext_type e)
{
	switch (e) {
	case DW_EXT_IPADDR:
		return "ipaddr";
	case DW_EXT_DECIMAL:
		return "decimal";
	case DW_EXT_DATETIME:
		return "datetime";
	case DW_EXT_DURATION:
		return "duration";
	}
	return "?";
}

/* The single-argument constructor Cedar applies to a bare value of type e. */
static const char *jv_ext_ctor(enum dw_ext_type e)
{
	switch (e) {
	case DW_EXT_IPADDR:
		return "ip";
	case DW_EXT_DECIMAL:
		return "decimal";
	case DW_EXT_DATETIME:
		return "datetime";
	case DW_EXT_DURATION:
		return "duration";
	}
	return "?";
}

static enum dw_vkind jv_ext_vkind(enum dw_ext_type e)
{
	switch (e) {
	case DW_EXT_IPADDR:
		return DW_V_IP;
	case DW_EXT_DECIMAL:
		return DW_V_DECIMAL;
	case DW_EXT_DATETIME:
		return DW_V_DATETIME;
	case DW_EXT_DURATION:
		return DW_V_DURATION;
	}
	return 0;
}

/* "got ..." for a built value: its type, and for entities the entity type. */
static void jv_describe(struct dw_val v, char *buf, size_t n)
{
	const char *k = "?";

	switch ((enum dw_vkind)v.kind) {
	case DW_V_BOOL:
		k = "Bool";
		break;
	case DW_V_LONG:
		k = "Long";
		break;
	case DW_V_STRING:
		k = "String";
		break;
	case DW_V_SET:
		k = "Set";
		break;
	case DW_V_RECORD:
		k = "Record";
		break;
	case DW_V_IP:
		k = "ipaddr";
		break;
	case DW_V_DECIMAL:
		k = "decimal";
		break;
	case DW_V_DATETIME:
		k = "datetime";
		break;
	case DW_V_DURATION:
		k = "duration";
		break;
	case DW_V_ENTITY:
		snprintf(buf, n, "entity of type %.*s", (int)v.uid->type.n, v.uid->type.p);
		return;
	}
	snprintf(buf, n, "%s", k);
}

/* "expected <type>, got <what>" */
static int jv_mismatch(struct jv *c, const struct dw_type *t, const char *got)
{
	struct dw_buf b = { 0 };
	int r;

	if (t->kind == DW_T_ENTITY)
		r = dw_buf_printf(&b, "entity of type %.*s", (int)t->entity->name.n,
				  t->entity->name.p);
	else
		r = dw_type_format(&b, t);
	if (r != 0) {
		dw_buf_free(&b);
		return jv_oom(c);
	}
	r = jv_fail(c, "expected %s, got %s", b.p ? b.p : "?", got);
	dw_buf_free(&b);
	return r;
}

static int jv_mismatch_val(struct jv *c, const struct dw_type *t, struct dw_val v)
{
	char got[160];

	jv_describe(v, got, sizeof got);
	return jv_mismatch(c, t, got);
}

/* --- 2. names and UIDs --------------------------------------------------------- */

static bool jv_ident_start(char ch)
{
	return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool jv_ident_char(char ch)
{
	return jv_ident_start(ch) || (ch >= '0' && ch <= '9');
}

/* A normalized Cedar name: IDENT {"::" IDENT}, no whitespace or comments, no
 * reserved word (Cedar's Name::from_normalized_str).  NULL or the reason. */
static const char *jv_name_problem(const char *s, size_t n)
{
	static const char *const reserved[] = {
		"true", "false", "if", "then", "else", "in", "like", "has", "is", "__cedar",
	};
	size_t i = 0;

	if (n == 0)
		return "an entity type cannot be empty";
	for (;;) {
		size_t start = i;

		if (i >= n || !jv_ident_start(s[i]))
			return "expected identifiers separated by \"::\" (no spaces)";
		while (i < n && jv_ident_char(s[i]))
			i++;
		for (size_t k = 0; k < DW_N_ELEMENTS(reserved); k++)
			if (strlen(reserved[k]) == i - start &&
			    memcmp(reserved[k], s + start, i - start) == 0)
				return strcmp(reserved[k], "__cedar") == 0
					       ? "\"__cedar\" is reserved"
					       : "a reserved word cannot be part of an entity type";
		if (i == n)
			return NULL;
		if (n - i < 2 || s[i] != ':' || s[i + 1] != ':')
			return "expected identifiers separated by \"::\" (no spaces)";
		i += 2;
	}
}

static int jv_check_name(struct jv *c, const char *s, size_t n)
{
	const char *why = jv_name_problem(s, n);
	struct dw_buf b = { 0 };
	int r;

	if (why == NULL)
		return 0;
	if (dw_buf_put_quoted(&b, dw_str_make(s, n > 200 ? 200 : n)) != 0) {
		dw_buf_free(&b);
		return jv_oom(c);
	}
	r = jv_fail(c, "invalid entity type %s: %s", b.p, why);
	dw_buf_free(&b);
	return r;
}

static int jv_string(struct jv *c, const json_t *j, struct dw_str *out)
{
	size_t n = json_string_length(j);
	char *p;

	if (n > UINT32_MAX)
		return jv_fail(c, "string longer than 4 GiB");
	p = dw_arena_strndup(c->a, json_string_value(j), n);
	if (p == NULL)
		return jv_oom(c);
	*out = dw_str_make(p, n);
	return 0;
}

/* Exactly {"type": T, "id": I} (Cedar's TypeAndId). */
static int jv_type_and_id(struct jv *c, json_t *j, const struct dw_uid **out)
{
	json_t *jt, *ji;
	const char *key;
	size_t klen;
	json_t *v;
	size_t tn, in;
	struct dw_uid *u;

	if (!json_is_object(j))
		return jv_fail(c, "expected an entity reference {\"type\": .., \"id\": ..}, got %s",
			       jv_json_kind(j));
	json_object_keylen_foreach(j, key, klen, v) {
		if (!(klen == 4 && memcmp(key, "type", 4) == 0) &&
		    !(klen == 2 && memcmp(key, "id", 2) == 0))
			return jv_fail(c, "unexpected key \"%s\" in an entity reference "
				       "(it has \"type\" and \"id\")", key);
	}
	jt = json_object_get(j, "type");
	ji = json_object_get(j, "id");
	if (jt == NULL)
		return jv_fail(c, "entity reference without \"type\"");
	if (ji == NULL)
		return jv_fail(c, "entity reference without \"id\"");
	if (!json_is_string(jt))
		return jv_fail(c, "\"type\" of an entity reference must be a string, got %s",
			       jv_json_kind(jt));
	if (!json_is_string(ji))
		return jv_fail(c, "\"id\" of an entity reference must be a string, got %s",
			       jv_json_kind(ji));
	tn = json_string_length(jt);
	in = json_string_length(ji);
	if (tn > UINT32_MAX || in > UINT32_MAX)
		return jv_fail(c, "entity reference longer than 4 GiB");
	if (jv_check_name(c, json_string_value(jt), tn) != 0)
		return -EINVAL;
	u = dw_uid_new(c->a, dw_str_make(json_string_value(jt), tn),
		       dw_str_make(json_string_value(ji), in));
	if (u == NULL)
		return jv_oom(c);
	*out = u;
	return 0;
}

/* The one key of an escape object ({"__entity": ..}, {"__extn": ..}); extra keys
 * are refused (serde would silently drop them). */
static int jv_escape_body(struct jv *c, json_t *j, const char *key, json_t **body)
{
	if (json_object_size(j) != 1)
		return jv_fail(c, "an object with \"%s\" must have no other keys", key);
	*body = json_object_get(j, key);
	return 0;
}

/* Cedar string literal body s[0,n) (after the opening quote, through the closing
 * one) with Rust's escapes; the closing quote must be the last byte.  The decoded
 * text is never longer than the source (\u{..} of up to 4 UTF-8 bytes takes at
 * least 5 source bytes). */
static int jv_unquote(struct jv *c, const char *s, size_t n, struct dw_str *out)
{
	char *o = dw_arena_alloc(c->a, n + 1, 1);
	size_t k = 0, i = 0;

	if (o == NULL)
		return jv_oom(c);
	while (i < n && s[i] != '"') {
		if (s[i] != '\\') {
			o[k++] = s[i++];
			continue;
		}
		if (++i >= n)
			break;
		switch (s[i++]) {
		case 'n': o[k++] = '\n'; break;
		case 'r': o[k++] = '\r'; break;
		case 't': o[k++] = '\t'; break;
		case '\\': o[k++] = '\\'; break;
		case '0': o[k++] = '\0'; break;
		case '"': o[k++] = '"'; break;
		case '\'': o[k++] = '\''; break;
		case 'x': {
			int h1 = i + 1 < n ? dw_hex_digit(s[i]) : -1, h2 = i + 1 < n ? dw_hex_digit(s[i + 1]) : -1;
			if (h1 < 0 || h2 < 0 || h1 > 7)
				return jv_fail(c, "invalid \\x escape (two hex digits, at most 7F)");
			o[k++] = (char)(h1 * 16 + h2);
			i += 2;
			break;
		}
		case 'u': {
			uint32_t cp = 0;
			size_t digits = 0;
			if (i >= n || s[i] != '{')
				return jv_fail(c, "invalid \\u escape (expected \\u{...})");
			for (i++; i < n && s[i] != '}'; i++, digits++) {
				int h = dw_hex_digit(s[i]);
				if (h < 0 || digits >= 6)
					return jv_fail(c, "invalid \\u escape (1 to 6 hex digits)");
				cp = cp * 16 + (uint32_t)h;
			}
			if (i >= n || digits == 0)
				return jv_fail(c, "invalid \\u escape (1 to 6 hex digits)");
			i++;
			if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
				return jv_fail(c, "invalid \\u escape (not a Unicode scalar value)");
			k += dw_utf8_put(o + k, cp);
			break;
		}
		default:
			return jv_fail(c, "invalid escape \\%c in entity id", s[i - 1]);
		}
	}
	if (i >= n || i + 1 != n)
		return jv_fail(c, "entity id must be one string literal ending the text");
	o[k] = '\0';
	*out = dw_str_make(o, k);
	return 0;
}

/* Type::"id" as Cedar prints a UID (no spaces or comments). */
static int jv_uid_text(struct jv *c, const char *s, size_t n, const struct dw_uid **out)
{
	const char *q = NULL;
	struct dw_str id;
	struct dw_uid *u;

	for (size_t i = 0; i + 2 < n; i++) {
		if (s[i] == ':' && s[i + 1] == ':' && s[i + 2] == '"') {
			q = s + i;
			break;
		}
	}
	if (q == NULL)
		return jv_fail(c, "expected an entity UID such as User::\"alice\"");
	if (jv_check_name(c, s, (size_t)(q - s)) != 0)
		return -EINVAL;
	if (jv_unquote(c, q + 3, n - (size_t)(q + 3 - s), &id) != 0)
		return -EINVAL;
	u = DW_NEW(c->a, struct dw_uid);
	if (u == NULL)
		return jv_oom(c);
	char *t = dw_arena_strndup(c->a, s, (size_t)(q - s));
	if (t == NULL)
		return jv_oom(c);
	dw_uid_init(u, dw_str_make(t, (size_t)(q - s)), id);
	*out = u;
	return 0;
}

int dw_json_uid(struct dw_arena *a, json_t *j, const char *where, const struct dw_uid **out,
		char *err, size_t errlen)
{
	struct jv c;
	json_t *body = NULL;
	int r;

	jv_init(&c, a, where, true, err, errlen);
	if (json_is_string(j)) {
		size_t n = json_string_length(j);
		r = n > UINT32_MAX ? jv_fail(&c, "entity UID longer than 4 GiB")
				   : jv_uid_text(&c, json_string_value(j), n, out);
	} else if (json_is_object(j) && json_object_get(j, "__entity") != NULL) {
		r = jv_escape_body(&c, j, "__entity", &body);
		if (r == 0)
			r = jv_type_and_id(&c, body, out);
	} else if (json_is_object(j)) {
		r = jv_type_and_id(&c, j, out);
	} else {
		r = jv_fail(&c, "expected an entity UID ({\"type\": .., \"id\": ..}), got %s",
			    jv_json_kind(j));
	}
	jv_fini(&c);
	return r;
}

/* --- 3. plain values --------------------------------------------------------- */

static int jv_plain(struct jv *c, json_t *j, struct dw_val *out, int depth);
static int jv_typed(struct jv *c, const struct dw_type *t, json_t *j, struct dw_val *out,
		    int depth);

/* {"fn": F, "arg": X} or {"fn": F, "args": [X, ..]} → F(X, ..). */
#define DW_JSON_MAX_EXT_ARGS 8

static int jv_fn_and_arg(struct jv *c, json_t *j, struct dw_val *out, int depth)
{
	struct dw_val args[DW_JSON_MAX_EXT_ARGS];
	json_t *jfn, *jarg, *jargs, *v;
	const char *key, *why = NULL;
	size_t klen, n = 0;
	int r;

	if (!json_is_object(j))
		return jv_fail(c, "expected an extension call {\"fn\": .., \"arg\": ..}, got %s",
			       jv_json_kind(j));
	json_object_keylen_foreach(j, key, klen, v) {
		if (!(klen == 2 && memcmp(key, "fn", 2) == 0) &&
		    !(klen == 3 && memcmp(key, "arg", 3) == 0) &&
		    !(klen == 4 && memcmp(key, "args", 4) == 0))
			return jv_fail(c, "unexpected key \"%s\" in an extension call "
				       "(it has \"fn\" and \"arg\" or \"args\")", key);
	}
	jfn = json_object_get(j, "fn");
	jarg = json_object_get(j, "arg");
	jargs = json_object_get(j, "args");
	if (jfn == NULL || !json_is_string(jfn))
		return jv_fail(c, "extension call needs \"fn\", a string");
	if ((jarg == NULL) == (jargs == NULL))
		return jv_fail(c, "extension call needs exactly one of \"arg\" and \"args\"");
	if (jargs != NULL && !json_is_array(jargs))
		return jv_fail(c, "\"args\" of an extension call must be an array, got %s",
			       jv_json_kind(jargs));
	if (jarg != NULL) {
		r = jv_plain(c, jarg, &args[0], depth + 1);
		n = 1;
	} else {
		if (json_array_size(jargs) > DW_JSON_MAX_EXT_ARGS)
			return jv_fail(c, "extension call with more than %d arguments",
				       DW_JSON_MAX_EXT_ARGS);
		r = 0;
		for (n = 0; r == 0 && n < json_array_size(jargs); n++)
			r = jv_plain(c, json_array_get(jargs, n), &args[n], depth + 1);
	}
	if (r != 0)
		return r;
	if (json_string_length(jfn) > 64)
		return jv_fail(c, "unknown extension function");
	r = dw_ext_call(c->a, dw_str_make(json_string_value(jfn), json_string_length(jfn)), args,
			n, out, &why);
	if (r == -2)
		return jv_fail(c, "unknown extension function \"%s\"", json_string_value(jfn));
	if (r == -ENOMEM)
		return jv_oom(c);
	if (r != 0)
		return jv_fail(c, "extension function %s failed: %s", json_string_value(jfn),
			       why ? why : "invalid argument");
	return 0;
}

static int jv_set(struct jv *c, const struct dw_type *elem, json_t *j, struct dw_val *out,
		  int depth)
{
	size_t n = json_array_size(j);
	struct dw_val *v;
	const struct dw_set *s;
	int r = 0;

	if (n > UINT32_MAX)
		return jv_fail(c, "set with more than 2^32 elements");
	v = malloc((n ? n : 1) * sizeof *v);
	if (v == NULL)
		return jv_oom(c);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct jv_mark m = jv_mark(c);

		r = jv_push_index(c, i);
		if (r == 0)
			r = elem ? jv_typed(c, elem, json_array_get(j, i), &v[i], depth + 1)
				 : jv_plain(c, json_array_get(j, i), &v[i], depth + 1);
		if (r == 0)
			jv_pop(c, m);
	}
	if (r == 0) {
		s = dw_set_build(c->a, v, (uint32_t)n);
		if (s == NULL)
			r = jv_oom(c);
		else
			*out = (struct dw_val){ .kind = DW_V_SET, .set = s };
	}
	free(v);
	return r;
}

static const struct dw_attr *jv_find_attr(const struct dw_type *rt, struct dw_str name)
{
	uint32_t lo = 0, hi = rt->rec.n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int cmp = dw_str_cmp(rt->rec.v[mid].name, name);
		if (cmp == 0)
			return &rt->rec.v[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A JSON object as a record.  With rt (a RECORD type) every key must be declared
 * and every required attribute present (unless c->as_given: then a declared key
 * is typed when its value reads as its type, anything else is read untyped, and
 * a missing one stays missing);
 * keys are never escapes here (Cedar reads a record-typed object as a map). */
static int jv_record(struct jv *c, const struct dw_type *rt, json_t *j, struct dw_val *out,
		     int depth)
{
	size_t n = json_object_size(j), k = 0;
	struct dw_field *f;
	const struct dw_rec *rec;
	const char *key;
	size_t klen;
	json_t *v;
	uint32_t dup;
	int r = 0;

	if (n > UINT32_MAX)
		return jv_fail(c, "record with more than 2^32 attributes");
	f = malloc((n ? n : 1) * sizeof *f);
	if (f == NULL)
		return jv_oom(c);
	/* Undeclared keys first: a misspelt attribute explains the missing one. */
	json_object_keylen_foreach(j, key, klen, v) {
		if (klen > UINT32_MAX) {
			r = jv_fail(c, "attribute name longer than 4 GiB");
			break;
		}
		if (rt != NULL && !c->as_given && jv_find_attr(rt, dw_str_make(key, klen)) == NULL) {
			r = jv_push_key(c, dw_str_make(key, klen));
			if (r == 0)
				r = jv_fail(c, "not declared in the schema");
			break;
		}
	}
	if (r == 0) {
		json_object_keylen_foreach(j, key, klen, v) {
			struct dw_str name = dw_str_make(key, klen);
			struct jv_mark m = jv_mark(c);
			/* every key was found declared above, unless c->as_given */
			const struct dw_attr *ad = rt ? jv_find_attr(rt, name) : NULL;
			const struct dw_type *at = ad ? ad->type : NULL;
			char *copy;

			r = jv_push_key(c, name);
			if (r == 0)
				r = at ? jv_typed(c, at, v, &f[k].val, depth + 1)
				       : jv_plain(c, v, &f[k].val, depth + 1);
			/* as given: a value that is not of its declared type is kept as
			 * written, and a rule comparing it gets Cedar's answer for that */
			if (r == -EINVAL && at != NULL && c->as_given) {
				jv_pop(c, m);
				r = jv_push_key(c, name);
				if (r == 0)
					r = jv_plain(c, v, &f[k].val, depth + 1);
			}
			if (r != 0)
				break;
			jv_pop(c, m);
			copy = dw_arena_strndup(c->a, key, klen);
			if (copy == NULL) {
				r = jv_oom(c);
				break;
			}
			f[k++].key = dw_str_make(copy, klen);
		}
	}
	for (uint32_t i = 0; r == 0 && rt != NULL && !c->as_given && i < rt->rec.n; i++) {
		const struct dw_attr *ad = &rt->rec.v[i];

		if (!ad->required || json_object_getn(j, ad->name.p ? ad->name.p : "", ad->name.n))
			continue;
		r = jv_push_key(c, ad->name);
		if (r == 0)
			r = jv_fail(c, "required attribute is missing");
	}
	if (r == 0) {
		rec = dw_rec_build(c->a, f, (uint32_t)k, &dup);
		if (rec != NULL)
			*out = (struct dw_val){ .kind = DW_V_RECORD, .rec = rec };
		else if (dup == UINT32_MAX)
			r = jv_oom(c);
		else
			r = jv_fail(c, "duplicate attribute \"%.*s\"", (int)f[dup].key.n,
				    f[dup].key.p);
	}
	free(f);
	return r;
}

/* Cedar's explicit encoding (CedarValueJson). */
static int jv_plain(struct jv *c, json_t *j, struct dw_val *out, int depth)
{
	json_t *body = NULL;
	const struct dw_uid *u = NULL;
	struct dw_str s = { 0 };
	int r;

	if (depth > DW_JSON_MAX_DEPTH)
		return jv_fail(c, "value nested deeper than %d levels", DW_JSON_MAX_DEPTH);
	switch (json_typeof(j)) {
	case JSON_TRUE:
		*out = dw_val_bool(true);
		return 0;
	case JSON_FALSE:
		*out = dw_val_bool(false);
		return 0;
	case JSON_INTEGER:
		*out = dw_val_long((int64_t)json_integer_value(j));
		return 0;
	case JSON_REAL:
		return jv_fail(c, "%g is not a Cedar value: numbers must be 64-bit integers",
			       json_real_value(j));
	case JSON_NULL:
		return jv_fail(c, "null is not a Cedar value");
	case JSON_STRING:
		r = jv_string(c, j, &s);
		if (r == 0)
			*out = dw_val_string(s);
		return r;
	case JSON_ARRAY:
		return jv_set(c, NULL, j, out, depth);
	case JSON_OBJECT:
		if (json_object_get(j, "__entity") != NULL) {
			r = jv_escape_body(c, j, "__entity", &body);
			if (r == 0)
				r = jv_type_and_id(c, body, &u);
			if (r == 0)
				*out = dw_val_entity(u);
			return r;
		}
		if (json_object_get(j, "__extn") != NULL) {
			r = jv_escape_body(c, j, "__extn", &body);
			return r ? r : jv_fn_and_arg(c, body, out, depth + 1);
		}
		if (json_object_get(j, "__expr") != NULL)
			return jv_fail(c, "the __expr escape is no longer supported");
		return jv_record(c, NULL, j, out, depth);
	}
	return jv_fail(c, "unexpected JSON value");
}

/* --- 4. schema-guided values ------------------------------------------------- */

static bool jv_enum_has(const struct dw_etype *et, struct dw_str id)
{
	for (uint32_t i = 0; i < et->n_enum; i++)
		if (dw_str_eq(et->enum_ids[i], id))
			return true;
	return false;
}

static int jv_enum_fail(struct jv *c, const struct dw_uid *u)
{
	struct dw_buf b = { 0 }, q = { 0 };
	int r;

	if (dw_uid_format(&b, u) != 0 || dw_buf_put_quoted(&q, u->id) != 0)
		r = jv_oom(c);
	else
		r = jv_fail(c, "entity %s is of an enumerated entity type, but %s is not "
			    "declared as a valid eid", b.p, q.p);
	dw_buf_free(&b);
	dw_buf_free(&q);
	return r;
}

static int jv_check_entity(struct jv *c, const struct dw_type *t, const struct dw_uid *u)
{
	if (!dw_str_eq(u->type, t->entity->name))
		return jv_mismatch_val(c, t, dw_val_entity(u));
	if (t->entity->is_enum && !c->enum_unchecked && !jv_enum_has(t->entity, u->id))
		return jv_enum_fail(c, u);
	return 0;
}

/* A bare JSON value that is not the expected kind: parse it plainly so its own
 * errors come first (as in Cedar), then report the mismatch. */
static int jv_plain_mismatch(struct jv *c, const struct dw_type *t, json_t *j, int depth)
{
	struct dw_val v;
	int r = jv_plain(c, j, &v, depth);

	return r ? r : jv_mismatch_val(c, t, v);
}

static int jv_typed(struct jv *c, const struct dw_type *t, json_t *j, struct dw_val *out,
		    int depth)
{
	const struct dw_uid *u = NULL;
	json_t *body = NULL;
	const char *why = NULL;
	struct dw_val arg;
	int r;

	if (depth > DW_JSON_MAX_DEPTH)
		return jv_fail(c, "value nested deeper than %d levels", DW_JSON_MAX_DEPTH);
	if (t == NULL)
		return jv_plain(c, j, out, depth);
	switch (t->kind) {
	case DW_T_BOOL:
	case DW_T_LONG:
	case DW_T_STRING: {
		enum dw_vkind want = t->kind == DW_T_BOOL ? DW_V_BOOL
				     : t->kind == DW_T_LONG ? DW_V_LONG : DW_V_STRING;
		r = jv_plain(c, j, out, depth);
		if (r == 0 && out->kind != want)
			r = jv_mismatch_val(c, t, *out);
		return r;
	}
	case DW_T_SET:
		if (!json_is_array(j))
			return jv_plain_mismatch(c, t, j, depth);
		return jv_set(c, t->elem, j, out, depth);
	case DW_T_RECORD:
		if (!json_is_object(j))
			return jv_plain_mismatch(c, t, j, depth);
		return jv_record(c, t, j, out, depth);
	case DW_T_ENTITY:
		/* __entity, or the bare {"type","id"} Cedar accepts where an entity is due */
		if (json_is_object(j) && json_object_get(j, "__entity") != NULL) {
			r = jv_escape_body(c, j, "__entity", &body);
			if (r == 0)
				r = jv_type_and_id(c, body, &u);
		} else if (json_is_object(j) && (json_object_get(j, "type") != NULL ||
						 json_object_get(j, "id") != NULL)) {
			r = jv_type_and_id(c, j, &u);
		} else {
			return jv_plain_mismatch(c, t, j, depth);
		}
		if (r == 0)
			r = jv_check_entity(c, t, u);
		if (r == 0)
			*out = dw_val_entity(u);
		return r;
	case DW_T_EXT:
		/* __extn, a bare {"fn","arg"}, or any value handed to the type's constructor */
		if (json_is_object(j) && json_object_get(j, "__extn") != NULL) {
			r = jv_escape_body(c, j, "__extn", &body);
			if (r == 0)
				r = jv_fn_and_arg(c, body, out, depth + 1);
		} else if (json_is_object(j) && json_object_get(j, "fn") != NULL) {
			r = jv_fn_and_arg(c, j, out, depth + 1);
		} else {
			const char *ctor = jv_ext_ctor(t->ext);
			r = jv_plain(c, j, &arg, depth + 1);
			if (r != 0)
				return r;
			r = dw_ext_call(c->a, dw_str_c(ctor), &arg, 1, out, &why);
			if (r == -ENOMEM)
				return jv_oom(c);
			if (r != 0) {
				char got[160];
				struct dw_buf q = { 0 };

				jv_describe(arg, got, sizeof got);
				if (arg.kind != DW_V_STRING)
					return jv_fail(c, "expected %s, got %s", jv_ext_name(t->ext),
						       got);
				/* the text as a Cedar literal: quotes and control bytes escaped */
				arg.s.n = arg.s.n > 64 ? 64 : arg.s.n;
				if (dw_buf_put_quoted(&q, arg.s) != 0) {
					dw_buf_free(&q);
					return jv_oom(c);
				}
				r = jv_fail(c, "invalid %s: %s(%s): %s", jv_ext_name(t->ext), ctor, q.p,
					    why ? why : "malformed");
				dw_buf_free(&q);
				return r;
			}
		}
		if (r == 0 && out->kind != jv_ext_vkind(t->ext))
			r = jv_mismatch_val(c, t, *out);
		return r;
	}
	return jv_fail(c, "unknown schema type");
}

int dw_json_value(struct dw_arena *a, const struct dw_schema *schema,
		  const struct dw_type *expected, json_t *j, const char *where,
		  struct dw_val *out, char *err, size_t errlen)
{
	struct jv c;
	int r;

	(void)schema;   /* types are resolved: enum ids and entity names live in them */
	jv_init(&c, a, where, true, err, errlen);
	r = jv_typed(&c, expected, j, out, 1);
	jv_fini(&c);
	return r;
}

static int jv_context(struct dw_arena *a, const struct dw_action *action, json_t *j,
		      bool as_given, const struct dw_rec **out, char *err, size_t errlen)
{
	struct jv c;
	struct dw_val v;
	json_t *empty = NULL;
	int r;

	jv_init(&c, a, "context", false, err, errlen);
	c.as_given = as_given;
	/* Cedar parses a context by its types only; an undeclared enum id is found by
	 * request validation (dw_request_check), as when validateRequest is set */
	c.enum_unchecked = true;
	if (j == NULL || json_is_null(j)) {
		empty = json_object();
		if (empty == NULL) {
			r = jv_oom(&c);
			jv_fini(&c);
			return r;
		}
		j = empty;
	}
	if (!json_is_object(j))
		r = jv_fail(&c, "expected a JSON object, got %s", jv_json_kind(j));
	else
		r = jv_record(&c, action ? action->context : NULL, j, &v, 1);
	if (r == 0)
		*out = v.rec;
	json_decref(empty);
	jv_fini(&c);
	return r;
}

int dw_json_context(struct dw_arena *a, const struct dw_schema *schema,
		    const struct dw_action *action, json_t *j, const struct dw_rec **out,
		    char *err, size_t errlen)
{
	(void)schema;
	return jv_context(a, action, j, false, out, err, errlen);
}

int dw_json_context_as_given(struct dw_arena *a, const struct dw_action *action, json_t *j,
			     const struct dw_rec **out, char *err, size_t errlen)
{
	return jv_context(a, action, j, true, out, err, errlen);
}

/* --- 5. checks of built values ---------------------------------------------- */

static int cv_check(struct jv *c, const struct dw_type *t, struct dw_val v, int depth)
{
	int r = 0;

	if (t == NULL)
		return 0;
	if (depth > DW_JSON_MAX_DEPTH)
		return jv_fail(c, "value nested deeper than %d levels", DW_JSON_MAX_DEPTH);
	switch (t->kind) {
	case DW_T_BOOL:
		return v.kind == DW_V_BOOL ? 0 : jv_mismatch_val(c, t, v);
	case DW_T_LONG:
		return v.kind == DW_V_LONG ? 0 : jv_mismatch_val(c, t, v);
	case DW_T_STRING:
		return v.kind == DW_V_STRING ? 0 : jv_mismatch_val(c, t, v);
	case DW_T_EXT:
		return v.kind == jv_ext_vkind(t->ext) ? 0 : jv_mismatch_val(c, t, v);
	case DW_T_ENTITY:
		return v.kind == DW_V_ENTITY ? jv_check_entity(c, t, v.uid)
					     : jv_mismatch_val(c, t, v);
	case DW_T_SET:
		if (v.kind != DW_V_SET)
			return jv_mismatch_val(c, t, v);
		for (uint32_t i = 0; r == 0 && i < v.set->n; i++) {
			struct jv_mark m = jv_mark(c);
			/* a canonical set has no JSON index: name the element by its value */
			if (dw_buf_putc(&c->path, '[') != 0 ||
			    dw_val_format(&c->path, v.set->v[i]) != 0 ||
			    dw_buf_putc(&c->path, ']') != 0)
				r = jv_oom(c);
			else
				r = cv_check(c, t->elem, v.set->v[i], depth + 1);
			if (r == 0)
				jv_pop(c, m);
		}
		return r;
	case DW_T_RECORD:
		if (v.kind != DW_V_RECORD)
			return jv_mismatch_val(c, t, v);
		for (uint32_t i = 0; r == 0 && i < v.rec->n; i++) {
			struct jv_mark m = jv_mark(c);
			const struct dw_attr *ad = jv_find_attr(t, v.rec->f[i].key);

			r = jv_push_key(c, v.rec->f[i].key);
			if (r == 0)
				r = ad ? cv_check(c, ad->type, v.rec->f[i].val, depth + 1)
				       : jv_fail(c, "not declared in the schema");
			if (r == 0)
				jv_pop(c, m);
		}
		for (uint32_t i = 0; r == 0 && i < t->rec.n; i++) {
			if (!t->rec.v[i].required || dw_rec_get(v.rec, t->rec.v[i].name) != NULL)
				continue;
			r = jv_push_key(c, t->rec.v[i].name);
			if (r == 0)
				r = jv_fail(c, "required attribute is missing");
		}
		return r;
	}
	return jv_fail(c, "unknown schema type");
}

static int rq_uid_text(struct dw_buf *b, const struct dw_uid *u)
{
	b->n = 0;
	return dw_uid_format(b, u);
}

/* principal/resource: declared type, declared enum id, allowed by appliesTo. */
static int rq_check_member(struct jv *c, const struct dw_schema *schema, const char *role,
			   const struct dw_uid *u, const struct dw_action *act,
			   const struct dw_etype *const *allowed, uint32_t n_allowed,
			   struct dw_buf *ub, struct dw_buf *ab)
{
	const struct dw_etype *et = dw_schema_find_etype(schema, u->type);

	if (et == NULL)
		return jv_fail(c, "%s type %.*s is not declared in the schema", role,
			       (int)u->type.n, u->type.p);
	if (et->is_enum && !jv_enum_has(et, u->id)) {
		if (rq_uid_text(ub, u) != 0)
			return jv_oom(c);
		return jv_fail(c, "%s %s is of an enumerated entity type, but its id is not "
			       "declared as a valid eid", role, ub->p);
	}
	if (act == NULL)
		return 0;
	for (uint32_t i = 0; i < n_allowed; i++)
		if (allowed[i] == et || dw_str_eq(allowed[i]->name, et->name))
			return 0;
	return jv_fail(c, "%s type %.*s is not valid for %s", role, (int)u->type.n, u->type.p,
		       ab->p);
}

int dw_request_check(const struct dw_schema *schema, const struct dw_uid *principal,
		     const struct dw_uid *action, const struct dw_uid *resource,
		     const struct dw_rec *context, char *err, size_t errlen)
{
	struct dw_buf ub = { 0 }, ab = { 0 };
	const struct dw_action *act;
	struct jv c;
	int r;

	if (schema == NULL) {
		if (errlen != 0)
			err[0] = '\0';
		return 0;
	}
	jv_init(&c, NULL, NULL, false, err, errlen);
	if (dw_uid_format(&ab, action) != 0) {
		r = jv_oom(&c);
		goto out;
	}
	/* Cedar's order: principal and resource types, then the action. */
	r = rq_check_member(&c, schema, "principal", principal, NULL, NULL, 0, &ub, &ab);
	if (r == 0)
		r = rq_check_member(&c, schema, "resource", resource, NULL, NULL, 0, &ub, &ab);
	if (r != 0)
		goto out;
	act = dw_schema_find_action(schema, action->type, action->id);
	if (act == NULL) {
		r = jv_fail(&c, "request's action %s is not declared in the schema", ab.p);
		goto out;
	}
	r = rq_check_member(&c, schema, "principal", principal, act, act->principals,
			    act->n_principals, &ub, &ab);
	if (r == 0)
		r = rq_check_member(&c, schema, "resource", resource, act, act->resources,
				    act->n_resources, &ub, &ab);
	if (r != 0)
		goto out;
	if (dw_buf_printf(&c.path, "context is not valid for %s", ab.p) != 0) {
		r = jv_oom(&c);
		goto out;
	}
	{
		struct dw_val cv = { .kind = DW_V_RECORD, .rec = context ? context : &dw_empty_rec };
		r = cv_check(&c, act->context, cv, 1);
	}
out:
	dw_buf_free(&ub);
	dw_buf_free(&ab);
	jv_fini(&c);
	return r;
}

/* --- 6. output ---------------------------------------------------------------- */

static json_t *vj_extn(const char *fn, const char *arg)
{
	json_t *call = json_pack("{s:s, s:s}", "fn", fn, "arg", arg);

	return call ? json_pack("{s:o}", "__extn", call) : NULL;
}

static json_t *vj_value(struct dw_val v, int depth)
{
	char tmp[96];
	json_t *o = NULL;

	if (depth > DW_JSON_OUT_MAX_DEPTH)
		return NULL;
	switch ((enum dw_vkind)v.kind) {
	case DW_V_BOOL:
		return json_boolean(v.b);
	case DW_V_LONG:
		return json_integer((json_int_t)v.i);
	case DW_V_STRING:
		return json_stringn(v.s.p ? v.s.p : "", v.s.n);
	case DW_V_ENTITY: {
		json_t *t = json_stringn(v.uid->type.p ? v.uid->type.p : "", v.uid->type.n);
		json_t *id = json_stringn(v.uid->id.p ? v.uid->id.p : "", v.uid->id.n);
		if (t == NULL || id == NULL) {
			json_decref(t);
			json_decref(id);
			return NULL;
		}
		return json_pack("{s:{s:o, s:o}}", "__entity", "type", t, "id", id);
	}
	case DW_V_SET:
		o = json_array();
		for (uint32_t i = 0; o != NULL && i < v.set->n; i++) {
			if (json_array_append_new(o, vj_value(v.set->v[i], depth + 1)) != 0) {
				json_decref(o);
				o = NULL;
			}
		}
		return o;
	case DW_V_RECORD:
		/* A key such as "__entity" reads back as an escape; Cedar refuses to
		 * serialize such records, we write them as they are. */
		o = json_object();
		for (uint32_t i = 0; o != NULL && i < v.rec->n; i++) {
			const struct dw_field *f = &v.rec->f[i];
			if (json_object_setn_new(o, f->key.p ? f->key.p : "", f->key.n,
						 vj_value(f->val, depth + 1)) != 0) {
				json_decref(o);
				o = NULL;
			}
		}
		return o;
	case DW_V_IP:
		dw_ip_format(v.ip, tmp, sizeof tmp);
		return vj_extn("ip", tmp);
	case DW_V_DECIMAL:
		dw_decimal_format(v.i, tmp, sizeof tmp);
		return vj_extn("decimal", tmp);
	case DW_V_DATETIME:
		dw_datetime_format(v.i, tmp, sizeof tmp);
		return vj_extn("datetime", tmp);
	case DW_V_DURATION:
		dw_duration_format(v.i, tmp, sizeof tmp);
		return vj_extn("duration", tmp);
	}
	return NULL;
}

json_t *dw_value_to_json(struct dw_val v)
{
	return vj_value(v, 1);
}
