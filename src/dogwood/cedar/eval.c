/* eval.c - see eval.h.  One switch over the node kinds; each case follows the
 * Rust evaluator (cedar-policy-core/src/evaluator.rs): operands left to right,
 * both operands of a binary operator before the operator, except `&&`, `||`
 * and `if`, which short-circuit. */
#include "eval.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ext.h"

#define DW_EVAL_MAX_DEPTH 1000

static const char *dw_kind_name(uint8_t k)
{
	switch (k) {
	case DW_V_BOOL: return "bool";
	case DW_V_LONG: return "long";
	case DW_V_STRING: return "string";
	case DW_V_ENTITY: return "(entity of type `...`)";
	case DW_V_SET: return "set";
	case DW_V_RECORD: return "record";
	case DW_V_IP: return "ipaddr";
	case DW_V_DECIMAL: return "decimal";
	case DW_V_DATETIME: return "datetime";
	case DW_V_DURATION: return "duration";
	}
	return "value";
}

__attribute__((format(printf, 3, 4)))
static int dw_err(struct dw_eval_ctx *c, enum dw_err_kind k, const char *fmt, ...)
{
	va_list ap;

	c->err = k;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof c->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static int dw_type_err(struct dw_eval_ctx *c, const char *expected, struct dw_val got)
{
	if (got.kind == DW_V_ENTITY)
		return dw_err(c, DW_ERR_TYPE, "type error: expected %s, got (entity of type `%.*s`)",
			      expected, (int)got.uid->type.n, got.uid->type.p);
	return dw_err(c, DW_ERR_TYPE, "type error: expected %s, got %s", expected,
		      dw_kind_name(got.kind));
}

static int dw_nomem(struct dw_eval_ctx *c)
{
	return dw_err(c, DW_ERR_NOMEM, "out of memory");
}

static const char *dw_uid_text(struct dw_eval_ctx *c, const struct dw_uid *u)
{
	struct dw_buf b = { 0 };
	const char *s;

	if (dw_uid_format(&b, u) != 0) {
		dw_buf_free(&b);
		return "?";
	}
	s = dw_arena_strndup(c->scratch, b.p, b.n > 200 ? 200 : b.n);
	dw_buf_free(&b);
	return s ? s : "?";
}

bool dw_scope_matches(const struct dw_store *st, const struct dw_scope *sc, const struct dw_uid *u)
{
	switch (sc->kind) {
	case DW_SC_ANY:
		return true;
	case DW_SC_EQ:
		return dw_uid_eq(u, sc->uid);
	case DW_SC_IN:
		return dw_store_in(st, u, sc->uid);
	case DW_SC_IS:
		return dw_str_eq(u->type, sc->type);
	case DW_SC_IS_IN:
		return dw_str_eq(u->type, sc->type) && dw_store_in(st, u, sc->uid);
	case DW_SC_IN_LIST:
		for (uint32_t i = 0; i < sc->n_list; i++)
			if (dw_store_in(st, u, sc->list[i]))
				return true;
		return false;
	}
	return false;
}

static int dw_eval_in(struct dw_eval_ctx *c, struct dw_val a, struct dw_val b, struct dw_val *out)
{
	if (a.kind != DW_V_ENTITY)
		return dw_type_err(c, "(entity of type `any_entity_type`)", a);
	if (b.kind == DW_V_ENTITY) {
		*out = dw_val_bool(dw_store_in(c->store, a.uid, b.uid));
		return 0;
	}
	if (b.kind != DW_V_SET)
		return dw_type_err(c, "set or (entity of type `any_entity_type`)", b);
	/* every element must be an entity, even after a match is found */
	for (uint32_t i = 0; i < b.set->n; i++)
		if (b.set->v[i].kind != DW_V_ENTITY)
			return dw_type_err(c, "(entity of type `any_entity_type`)", b.set->v[i]);
	for (uint32_t i = 0; i < b.set->n; i++) {
		if (dw_store_in(c->store, a.uid, b.set->v[i].uid)) {
			*out = dw_val_bool(true);
			return 0;
		}
	}
	*out = dw_val_bool(false);
	return 0;
}

static int dw_eval_attr(struct dw_eval_ctx *c, struct dw_val v, struct dw_str name, bool has,
			struct dw_val *out)
{
	const struct dw_val *f;

	if (v.kind == DW_V_RECORD) {
		f = dw_rec_get(v.rec, name);
		if (has) {
			*out = dw_val_bool(f != NULL);
			return 0;
		}
		if (f == NULL)
			return dw_err(c, DW_ERR_RECORD_ATTR, "record does not have the attribute `%.*s`",
				      (int)(name.n > 100 ? 100 : name.n), name.p);
		*out = *f;
		return 0;
	}
	if (v.kind == DW_V_ENTITY) {
		const struct dw_entity *ent = dw_store_get(c->store, v.uid);
		if (ent == NULL) {
			if (has) {
				*out = dw_val_bool(false);
				return 0;
			}
			return dw_err(c, DW_ERR_ENTITY_DOES_NOT_EXIST, "entity `%s` does not exist",
				      dw_uid_text(c, v.uid));
		}
		f = dw_rec_get(ent->attrs, name);
		if (has) {
			*out = dw_val_bool(f != NULL);
			return 0;
		}
		if (f == NULL)
			return dw_err(c, DW_ERR_ENTITY_ATTR, "`%s` does not have the attribute `%.*s`",
				      dw_uid_text(c, v.uid), (int)(name.n > 100 ? 100 : name.n),
				      name.p);
		*out = *f;
		return 0;
	}
	return dw_type_err(c, "(entity of type `any_entity_type`) or record", v);
}

static int dw_eval_arith(struct dw_eval_ctx *c, uint8_t op, struct dw_val a, struct dw_val b,
			 struct dw_val *out)
{
	int64_t r;
	bool ovf;
	const char *verb;

	if (a.kind != DW_V_LONG)
		return dw_type_err(c, "long", a);
	if (b.kind != DW_V_LONG)
		return dw_type_err(c, "long", b);
	switch (op) {
	case DW_E_ADD:
		ovf = __builtin_add_overflow(a.i, b.i, &r);
		verb = "add";
		break;
	case DW_E_SUB:
		ovf = __builtin_sub_overflow(a.i, b.i, &r);
		verb = "subtract";
		break;
	default:
		ovf = __builtin_mul_overflow(a.i, b.i, &r);
		verb = "multiply";
		break;
	}
	if (ovf)
		return dw_err(c, DW_ERR_OVERFLOW, "integer overflow while attempting to %s the values "
			      "%" PRId64 " and %" PRId64, verb, a.i, b.i);
	*out = dw_val_long(r);
	return 0;
}

static int dw_eval_cmp(struct dw_eval_ctx *c, uint8_t op, struct dw_val a, struct dw_val b,
		       struct dw_val *out)
{
	bool ok = a.kind == b.kind &&
		  (a.kind == DW_V_LONG || a.kind == DW_V_DATETIME || a.kind == DW_V_DURATION);

	if (!ok) {
		if (a.kind != DW_V_LONG && a.kind != DW_V_DATETIME && a.kind != DW_V_DURATION)
			return dw_type_err(c, "long, datetime, or duration", a);
		return dw_err(c, DW_ERR_TYPE, "type error: cannot compare %s with %s",
			      dw_kind_name(a.kind), dw_kind_name(b.kind));
	}
	*out = dw_val_bool(op == DW_E_LT ? a.i < b.i : a.i <= b.i);
	return 0;
}

static int dw_want(struct dw_eval_ctx *c, struct dw_val v, uint8_t kind, const char *name)
{
	return v.kind == kind ? 0 : dw_type_err(c, name, v);
}

static int dw_eval_call(struct dw_eval_ctx *c, const struct dw_expr *e, struct dw_val *out)
{
	struct dw_val argv[4], *args = argv;
	const struct dw_fn_info *fi = &dw_fn_table[e->fn];
	uint32_t n = e->n;

	if (n > DW_N_ELEMENTS(argv)) {
		args = DW_NEWN(c->scratch, struct dw_val, n);
		if (args == NULL)
			return dw_nomem(c);
	}
	for (uint32_t i = 0; i < n; i++)
		if (dw_eval(c, e->list.items[i], &args[i]) != 0)
			return -1;
	if (n != fi->arity)
		return dw_err(c, DW_ERR_WRONG_ARGS, "wrong number of arguments provided to "
			      "extension function %s: expected %u, got %u", fi->name, fi->arity, n);
	switch ((enum dw_fn)e->fn) {
	case DW_FN_CONTAINS:
		if (dw_want(c, args[0], DW_V_SET, "set"))
			return -1;
		*out = dw_val_bool(dw_set_contains(args[0].set, args[1]));
		return 0;
	case DW_FN_CONTAINS_ALL:
	case DW_FN_CONTAINS_ANY: {
		bool all = e->fn == DW_FN_CONTAINS_ALL, r = all;
		if (dw_want(c, args[0], DW_V_SET, "set") || dw_want(c, args[1], DW_V_SET, "set"))
			return -1;
		for (uint32_t i = 0; i < args[1].set->n; i++) {
			bool in = dw_set_contains(args[0].set, args[1].set->v[i]);
			if (all && !in) {
				r = false;
				break;
			}
			if (!all && in) {
				r = true;
				break;
			}
		}
		*out = dw_val_bool(r);
		return 0;
	}
	case DW_FN_IS_EMPTY:
		if (dw_want(c, args[0], DW_V_SET, "set"))
			return -1;
		*out = dw_val_bool(args[0].set->n == 0);
		return 0;
	case DW_FN_GET_TAG:
	case DW_FN_HAS_TAG: {
		const struct dw_entity *ent;
		const struct dw_val *t;
		if (dw_want(c, args[0], DW_V_ENTITY, "(entity of type `any_entity_type`)") ||
		    dw_want(c, args[1], DW_V_STRING, "string"))
			return -1;
		ent = dw_store_get(c->store, args[0].uid);
		if (ent == NULL) {
			if (e->fn == DW_FN_HAS_TAG) {
				*out = dw_val_bool(false);
				return 0;
			}
			return dw_err(c, DW_ERR_ENTITY_DOES_NOT_EXIST, "entity `%s` does not exist",
				      dw_uid_text(c, args[0].uid));
		}
		t = dw_rec_get(ent->tags, args[1].s);
		if (e->fn == DW_FN_HAS_TAG) {
			*out = dw_val_bool(t != NULL);
			return 0;
		}
		if (t == NULL)
			return dw_err(c, DW_ERR_ENTITY_ATTR, "`%s` does not have the tag `%.*s`",
				      dw_uid_text(c, args[0].uid),
				      (int)(args[1].s.n > 100 ? 100 : args[1].s.n), args[1].s.p);
		*out = *t;
		return 0;
	}
	case DW_FN_IS_IPV4:
	case DW_FN_IS_IPV6:
	case DW_FN_IS_LOOPBACK:
	case DW_FN_IS_MULTICAST:
		if (dw_want(c, args[0], DW_V_IP, "ipaddr"))
			return -1;
		if (e->fn == DW_FN_IS_IPV4)
			*out = dw_val_bool(!args[0].ip->v6);
		else if (e->fn == DW_FN_IS_IPV6)
			*out = dw_val_bool(args[0].ip->v6);
		else if (e->fn == DW_FN_IS_LOOPBACK)
			*out = dw_val_bool(dw_ip_is_loopback(args[0].ip));
		else
			*out = dw_val_bool(dw_ip_is_multicast(args[0].ip));
		return 0;
	case DW_FN_IS_IN_RANGE:
		if (dw_want(c, args[0], DW_V_IP, "ipaddr") || dw_want(c, args[1], DW_V_IP, "ipaddr"))
			return -1;
		*out = dw_val_bool(dw_ip_in_range(args[0].ip, args[1].ip));
		return 0;
	case DW_FN_LESS_THAN:
	case DW_FN_LESS_THAN_OR_EQUAL:
	case DW_FN_GREATER_THAN:
	case DW_FN_GREATER_THAN_OR_EQUAL: {
		int64_t x, y;
		if (dw_want(c, args[0], DW_V_DECIMAL, "decimal") ||
		    dw_want(c, args[1], DW_V_DECIMAL, "decimal"))
			return -1;
		x = args[0].i;
		y = args[1].i;
		*out = dw_val_bool(e->fn == DW_FN_LESS_THAN ? x < y :
				   e->fn == DW_FN_LESS_THAN_OR_EQUAL ? x <= y :
				   e->fn == DW_FN_GREATER_THAN ? x > y : x >= y);
		return 0;
	}
	case DW_FN_TO_MILLISECONDS:
	case DW_FN_TO_SECONDS:
	case DW_FN_TO_MINUTES:
	case DW_FN_TO_HOURS:
	case DW_FN_TO_DAYS: {
		static const int64_t div[] = { 1, 1000, 60000, 3600000, 86400000 };
		if (dw_want(c, args[0], DW_V_DURATION, "duration"))
			return -1;
		*out = dw_val_long(args[0].i / div[e->fn - DW_FN_TO_MILLISECONDS]);
		return 0;
	}
	case DW_FN_IP:
	case DW_FN_DECIMAL:
	case DW_FN_DATETIME:
	case DW_FN_DURATION:
	case DW_FN_OFFSET:
	case DW_FN_DURATION_SINCE:
	case DW_FN_TO_DATE:
	case DW_FN_TO_TIME: {
		const char *why = NULL;
		int r = dw_ext_call(c->scratch, dw_str_c(fi->name), args, n, out, &why);
		if (r == -ENOMEM)
			return dw_nomem(c);
		if (r != 0)
			return dw_err(c, DW_ERR_EXTENSION, "error while evaluating `%s` extension "
				      "function: %s", fi->name, why ? why : "failed");
		return 0;
	}
	case DW_FN__COUNT:
		break;
	}
	return dw_err(c, DW_ERR_TYPE, "unknown function");
}

int dw_eval(struct dw_eval_ctx *c, const struct dw_expr *e, struct dw_val *out)
{
	struct dw_val a, b;
	int r = -1;

	if (DW_UNLIKELY(++c->depth > DW_EVAL_MAX_DEPTH)) {
		c->depth--;
		return dw_err(c, DW_ERR_RECURSION, "expression nesting exceeds the evaluator's limit");
	}
	switch (e->op) {
	case DW_E_LIT:
		*out = e->lit;
		r = 0;
		break;
	case DW_E_VAR:
		*out = c->var[e->var];
		r = 0;
		break;
	case DW_E_SLOT:
		r = dw_err(c, DW_ERR_UNLINKED_SLOT, "template slot `?%s` is not linked",
			   e->var == DW_VAR_PRINCIPAL ? "principal" : "resource");
		break;
	case DW_E_NOT:
		if (dw_eval(c, e->k.a, &a) != 0)
			break;
		if (a.kind != DW_V_BOOL) {
			dw_type_err(c, "bool", a);
			break;
		}
		*out = dw_val_bool(!a.b);
		r = 0;
		break;
	case DW_E_NEG:
		if (dw_eval(c, e->k.a, &a) != 0)
			break;
		if (a.kind != DW_V_LONG) {
			dw_type_err(c, "long", a);
			break;
		}
		if (a.i == INT64_MIN) {
			dw_err(c, DW_ERR_OVERFLOW, "integer overflow while attempting to negate the "
			       "value %" PRId64, a.i);
			break;
		}
		*out = dw_val_long(-a.i);
		r = 0;
		break;
	case DW_E_AND:
	case DW_E_OR:
		if (dw_eval(c, e->k.a, &a) != 0)
			break;
		if (a.kind != DW_V_BOOL) {
			dw_type_err(c, "bool", a);
			break;
		}
		if (a.b == (e->op == DW_E_OR)) {
			*out = a;      /* false && _ , true || _ */
			r = 0;
			break;
		}
		if (dw_eval(c, e->k.b, &b) != 0)
			break;
		if (b.kind != DW_V_BOOL) {
			dw_type_err(c, "bool", b);
			break;
		}
		*out = b;
		r = 0;
		break;
	case DW_E_IF:
		if (dw_eval(c, e->k.a, &a) != 0)
			break;
		if (a.kind != DW_V_BOOL) {
			dw_type_err(c, "bool", a);
			break;
		}
		r = dw_eval(c, a.b ? e->k.b : e->k.c, out);
		break;
	case DW_E_EQ:
		if (dw_eval(c, e->k.a, &a) != 0 || dw_eval(c, e->k.b, &b) != 0)
			break;
		*out = dw_val_bool(dw_val_eq(a, b));
		r = 0;
		break;
	case DW_E_LT:
	case DW_E_LE:
		if (dw_eval(c, e->k.a, &a) != 0 || dw_eval(c, e->k.b, &b) != 0)
			break;
		r = dw_eval_cmp(c, e->op, a, b, out);
		break;
	case DW_E_ADD:
	case DW_E_SUB:
	case DW_E_MUL:
		if (dw_eval(c, e->k.a, &a) != 0 || dw_eval(c, e->k.b, &b) != 0)
			break;
		r = dw_eval_arith(c, e->op, a, b, out);
		break;
	case DW_E_IN:
		if (dw_eval(c, e->k.a, &a) != 0 || dw_eval(c, e->k.b, &b) != 0)
			break;
		r = dw_eval_in(c, a, b, out);
		break;
	case DW_E_HAS:
	case DW_E_ATTR:
		if (dw_eval(c, e->attr.e, &a) != 0)
			break;
		r = dw_eval_attr(c, a, e->attr.name, e->op == DW_E_HAS, out);
		break;
	case DW_E_LIKE:
		if (dw_eval(c, e->like.e, &a) != 0)
			break;
		if (a.kind != DW_V_STRING) {
			dw_type_err(c, "string", a);
			break;
		}
		*out = dw_val_bool(dw_pattern_match(e->like.pat, a.s));
		r = 0;
		break;
	case DW_E_IS:
		if (dw_eval(c, e->attr.e, &a) != 0)
			break;
		if (a.kind != DW_V_ENTITY) {
			dw_type_err(c, "(entity of type `any_entity_type`)", a);
			break;
		}
		*out = dw_val_bool(dw_str_eq(a.uid->type, e->attr.name));
		r = 0;
		break;
	case DW_E_SET: {
		struct dw_val *v = DW_NEWN(c->scratch, struct dw_val, e->n ? e->n : 1);
		const struct dw_set *s;
		if (v == NULL) {
			dw_nomem(c);
			break;
		}
		uint32_t i;
		for (i = 0; i < e->n; i++)
			if (dw_eval(c, e->list.items[i], &v[i]) != 0)
				break;
		if (i < e->n)
			break;
		s = dw_set_build(c->scratch, v, e->n);
		if (s == NULL) {
			dw_nomem(c);
			break;
		}
		out->kind = DW_V_SET;
		out->set = s;
		r = 0;
		break;
	}
	case DW_E_RECORD: {
		struct dw_field *f = DW_NEWN(c->scratch, struct dw_field, e->n ? e->n : 1);
		const struct dw_rec *rec;
		uint32_t dup, i;
		if (f == NULL) {
			dw_nomem(c);
			break;
		}
		for (i = 0; i < e->n; i++) {
			f[i].key = e->list.keys[i];
			if (dw_eval(c, e->list.items[i], &f[i].val) != 0)
				break;
		}
		if (i < e->n)
			break;
		rec = dw_rec_build(c->scratch, f, e->n, &dup);
		if (rec == NULL) {
			dw_nomem(c);
			break;
		}
		out->kind = DW_V_RECORD;
		out->rec = rec;
		r = 0;
		break;
	}
	case DW_E_CALL:
		r = dw_eval_call(c, e, out);
		break;
	case DW_E_TEMPORAL:
	{
		bool tv;
		int tr;

		if (c->temporal == NULL || e->temporal == NULL) {
			dw_err(c, DW_ERR_TEMPORAL, "temporal evaluation: no event history is available "
			       "to a single request");
			break;
		}
		tr = c->temporal(c->temporal_arg, e->temporal, &tv, c->msg, sizeof c->msg);
		if (tr == -ENOMEM) {
			c->err = DW_ERR_NOMEM;
			break;
		}
		if (tr != 0) {
			c->err = DW_ERR_TEMPORAL;
			break;
		}
		*out = dw_val_bool(tv);
		r = 0;
		break;
	}
	default:
		dw_err(c, DW_ERR_TYPE, "internal: unexpanded macro or provider call");
		break;
	}
	c->depth--;
	return r;
}
