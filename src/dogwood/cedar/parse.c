/* parse.c - the policy parser: Cedar (.cedar) and Dogwood (.dw) rule files.
 *
 * Divisions:
 *   1. parser state, tokens, errors
 *   2. string literals and `like` patterns (Rust escape rules)
 *   3. expressions (precedence climbing by hand, one function per level)
 *   4. scopes, annotations, conditions, rules
 *   5. `def` macros and raw blocks
 *   6. the policy set
 *
 * The grammar follows Cedar's grammar.lalrpop and its post-parse checks
 * (cst_to_ast.rs), with Dogwood's additions (docs/policy-reference.md §1, §3).
 * Recursion is bounded by DW_PARSE_MAX_DEPTH, so hostile nesting gets a
 * diagnostic, not a stack overflow. */
#include "policyset.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

#define DW_PARSE_MAX_DEPTH 200

/* --- 1. parser state ----------------------------------------------------------- */

struct dw_parser {
	struct dw_policy_set *ps;
	struct dw_arena *a;
	struct dw_diags *diags;
	const char *file;
	const char *src;
	size_t len;
	uint16_t src_index;
	struct dw_lexer lx;
	struct dw_token tok;        /* current token */
	struct dw_token prev;       /* last consumed token */
	int depth;
	bool failed;
	bool dogwood;
	bool in_macro;              /* parsing a `def` body: ?params allowed */
	bool in_scope;              /* parsing a scope operand: slots allowed */
	const char *clause;         /* "when" / "unless" while parsing a condition */
	const struct dw_macro *macro;
};

static void dw_advance(struct dw_parser *p)
{
	p->prev = p->tok;
	p->tok = dw_lex_next(&p->lx);
}

static struct dw_str dw_tok_str(const struct dw_parser *p, struct dw_token t)
{
	return dw_str_make(p->src + t.off, t.end - t.off);
}

static bool dw_tok_is(const struct dw_parser *p, const char *word)
{
	return p->tok.kind == DW_T_IDENT && dw_str_eq_c(dw_tok_str(p, p->tok), word);
}

__attribute__((format(printf, 4, 5)))
static void *dw_fail_at(struct dw_parser *p, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return NULL;    /* report the first error only: later ones are noise */
	p->failed = true;
	va_start(ap, fmt);
	dw_diags_addv(p->diags, DW_SEV_ERROR, p->file, p->src, p->len, off, end, fmt, ap);
	va_end(ap);
	return NULL;
}

static void *dw_unexpected(struct dw_parser *p, const char *expected)
{
	struct dw_token t = p->tok;

	if (t.kind == DW_T_ERROR)
		return dw_fail_at(p, t.off, t.end, "%s: `%.*s`", p->lx.err,
				  (int)(t.end - t.off), p->src + t.off);
	if (t.kind == DW_T_EOF)
		return dw_fail_at(p, t.off, t.end, "unexpected end of input, expected %s", expected);
	return dw_fail_at(p, t.off, t.end, "unexpected token `%.*s`, expected %s",
			  (int)(t.end - t.off > 40 ? 40 : t.end - t.off), p->src + t.off, expected);
}

static bool dw_expect(struct dw_parser *p, enum dw_tok k, const char *expected)
{
	if (p->tok.kind != k) {
		dw_unexpected(p, expected);
		return false;
	}
	dw_advance(p);
	return true;
}

static struct dw_expr *dw_node(struct dw_parser *p, enum dw_op op, uint32_t off, uint32_t end)
{
	struct dw_expr *e = DW_NEW(p->a, struct dw_expr);

	if (e == NULL)
		return dw_fail_at(p, off, end, "out of memory");
	e->op = (uint8_t)op;
	e->off = off;
	e->end = end;
	e->src_index = p->src_index;
	return e;
}

static struct dw_expr *dw_node2(struct dw_parser *p, enum dw_op op, struct dw_expr *a,
				struct dw_expr *b)
{
	struct dw_expr *e = dw_node(p, op, a->off, b ? b->end : a->end);

	if (e != NULL) {
		e->k.a = a;
		e->k.b = b;
	}
	return e;
}

static bool dw_enter(struct dw_parser *p)
{
	if (++p->depth > DW_PARSE_MAX_DEPTH) {
		dw_fail_at(p, p->tok.off, p->tok.end,
			   "expression nesting exceeds the limit of %d levels", DW_PARSE_MAX_DEPTH);
		return false;
	}
	return true;
}

/* Reserved words of Cedar: not usable as variables, names or record keys. */
static bool dw_is_reserved(struct dw_str s)
{
	static const char *const words[] = { "true", "false", "if", "then", "else", "in",
					     "like", "has", "is", "__cedar" };
	for (size_t i = 0; i < DW_N_ELEMENTS(words); i++)
		if (dw_str_eq_c(s, words[i]))
			return true;
	return false;
}

/* --- 2. string literals ---------------------------------------------------------- */

/*
 * Decode the body of a string token (quotes excluded) by Rust's escape rules.
 * With pattern != NULL, `\*` is a literal star and a bare `*` splits pieces:
 * the output is written piece by piece and the piece boundaries are recorded.
 * Returns the decoded length, or -1 with the bad escape's span in s.
 */
static long dw_unescape_core(const char *s, uint32_t off, uint32_t end, char *out,
			     uint32_t *cuts, uint32_t *n_cuts, uint32_t *bad_off, uint32_t *bad_end)
{
	size_t o = 0;

	for (uint32_t i = off; i < end;) {
		char c = s[i];

		if (c == '*' && cuts != NULL) {
			cuts[(*n_cuts)++] = (uint32_t)o;
			i++;
			continue;
		}
		if (c != '\\') {
			out[o++] = c;
			i++;
			continue;
		}
		if (i + 1 >= end)
			goto bad;
		c = s[i + 1];
		switch (c) {
		case 'n': out[o++] = '\n'; i += 2; continue;
		case 'r': out[o++] = '\r'; i += 2; continue;
		case 't': out[o++] = '\t'; i += 2; continue;
		case '\\': out[o++] = '\\'; i += 2; continue;
		case '0': out[o++] = '\0'; i += 2; continue;
		case '"': out[o++] = '"'; i += 2; continue;
		case '\'': out[o++] = '\''; i += 2; continue;
		case '*':
			if (cuts == NULL)
				goto bad;
			out[o++] = '*';
			i += 2;
			continue;
		case 'x': {
			int h, l;
			if (i + 3 >= end)
				goto bad;
			h = dw_hex_digit(s[i + 2]);
			l = dw_hex_digit(s[i + 3]);
			if (h < 0 || l < 0 || h > 7) {
				*bad_off = i;
				*bad_end = i + 4;
				return -1;
			}
			out[o++] = (char)(h * 16 + l);
			i += 4;
			continue;
		}
		case 'u': {
			uint32_t v = 0, j = i + 2, nd = 0;
			if (j >= end || s[j] != '{')
				goto bad;
			j++;
			while (j < end && s[j] != '}') {
				int h = dw_hex_digit(s[j]);
				if (h < 0 || nd >= 6)
					goto bad_u;
				v = v * 16 + (uint32_t)h;
				nd++;
				j++;
			}
			if (j >= end || nd == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
				goto bad_u;
			o += dw_utf8_put(out + o, v);
			i = j + 1;
			continue;
		bad_u:
			while (j < end && s[j] != '}')
				j++;
			j = j < end ? j + 1 : end;
			*bad_off = i;
			*bad_end = j;
			return -1;
		}
		default:
			goto bad;
		}
	bad: {
		/* name the escape by its whole character, which may be multi-byte */
		uint32_t e = i + 1 < end ? i + 2 : end;
		while (e < end && ((unsigned char)s[e] & 0xC0) == 0x80)
			e++;
		*bad_off = i;
		*bad_end = e;
		return -1;
	}
	}
	return (long)o;
}


/* The same on the parser's source, reporting a bad escape in Cedar's words. */
static long dw_unescape(struct dw_parser *p, uint32_t off, uint32_t end, char *out,
			uint32_t *cuts, uint32_t *n_cuts)
{
	uint32_t bo = 0, be = 0;
	long n = dw_unescape_core(p->src, off, end, out, cuts, n_cuts, &bo, &be);

	if (n < 0)
		dw_fail_at(p, bo, be, "the input `%.*s` is not a valid escape", (int)(be - bo),
			   p->src + bo);
	return n;
}

int dw_pattern_from_raw(struct dw_arena *a, const char *raw, uint32_t n,
			const struct dw_pattern **out, uint32_t *bad_off, uint32_t *bad_end)
{
	uint32_t n_cuts = 0, *cuts;
	struct dw_pattern *pat;
	char *buf;
	long len;

	*bad_off = *bad_end = 0;
	buf = dw_arena_alloc(a, (size_t)n + 1, 1);
	cuts = malloc(((size_t)n + 1) * sizeof *cuts);
	if (buf == NULL || cuts == NULL) {
		free(cuts);
		return -ENOMEM;
	}
	len = dw_unescape_core(raw, 0, n, buf, cuts, &n_cuts, bad_off, bad_end);
	if (len < 0) {
		free(cuts);
		return -EINVAL;
	}
	pat = dw_arena_alloc(a, sizeof *pat + (n_cuts + 1) * sizeof(struct dw_str),
			     _Alignof(struct dw_pattern));
	if (pat == NULL) {
		free(cuts);
		return -ENOMEM;
	}
	pat->n_pieces = n_cuts + 1;
	for (uint32_t i = 0, from = 0; i <= n_cuts; i++) {
		uint32_t to = i < n_cuts ? cuts[i] : (uint32_t)len;
		pat->piece[i] = dw_str_make(buf + from, to - from);
		from = to;
	}
	free(cuts);
	*out = pat;
	return 0;
}

/* The current token must be a string; decode it into an arena string. */
static bool dw_parse_string(struct dw_parser *p, struct dw_str *out)
{
	struct dw_token t = p->tok;
	char *buf;
	long n;

	if (t.kind != DW_T_STR) {
		dw_unexpected(p, "string literal");
		return false;
	}
	buf = dw_arena_alloc(p->a, t.end - t.off + 1, 1);
	if (buf == NULL) {
		dw_fail_at(p, t.off, t.end, "out of memory");
		return false;
	}
	n = dw_unescape(p, t.off + 1, t.end - 1, buf, NULL, NULL);
	if (n < 0)
		return false;
	buf[n] = '\0';
	*out = dw_str_make(buf, (size_t)n);
	dw_advance(p);
	return true;
}

static const struct dw_pattern *dw_parse_pattern(struct dw_parser *p)
{
	struct dw_token t = p->tok;
	uint32_t n_cuts = 0, *cuts;
	struct dw_pattern *pat;
	char *buf;
	long n;

	if (t.kind != DW_T_STR)
		return dw_fail_at(p, t.off, t.end,
				  "right hand side of a `like` expression must be a pattern literal, "
				  "but got `%.*s`", (int)(t.end - t.off > 40 ? 40 : t.end - t.off),
				  p->src + t.off);
	buf = dw_arena_alloc(p->a, t.end - t.off + 1, 1);
	cuts = malloc((t.end - t.off + 1) * sizeof *cuts);
	if (buf == NULL || cuts == NULL) {
		free(cuts);
		return dw_fail_at(p, t.off, t.end, "out of memory");
	}
	n = dw_unescape(p, t.off + 1, t.end - 1, buf, cuts, &n_cuts);
	if (n < 0) {
		free(cuts);
		return NULL;
	}
	pat = dw_arena_alloc(p->a, sizeof *pat + (n_cuts + 1) * sizeof(struct dw_str),
			     _Alignof(struct dw_pattern));
	if (pat == NULL) {
		free(cuts);
		return dw_fail_at(p, t.off, t.end, "out of memory");
	}
	pat->n_pieces = n_cuts + 1;
	for (uint32_t i = 0, from = 0; i <= n_cuts; i++) {
		uint32_t to = i < n_cuts ? cuts[i] : (uint32_t)n;
		pat->piece[i] = dw_str_make(buf + from, to - from);
		from = to;
	}
	free(cuts);
	dw_advance(p);
	return pat;
}

/* --- 3. expressions --------------------------------------------------------------- */

static struct dw_expr *dw_parse_expr(struct dw_parser *p);
static struct dw_expr *dw_parse_add(struct dw_parser *p);
static struct dw_expr *dw_parse_temporal_block(struct dw_parser *p, uint32_t off);

/* Name := Ident {'::' Ident}; stops before `::` + string (an entity reference). */
static bool dw_parse_path(struct dw_parser *p, struct dw_str *out, uint32_t *n_segs)
{
	uint32_t off = p->tok.off, end;

	if (p->tok.kind != DW_T_IDENT) {
		dw_unexpected(p, "identifier");
		return false;
	}
	end = p->tok.end;
	*n_segs = 1;
	dw_advance(p);
	while (p->tok.kind == DW_T_COLON2) {
		struct dw_lexer save = p->lx;
		struct dw_token t = dw_lex_next(&p->lx);
		p->lx = save;
		if (t.kind != DW_T_IDENT)
			break;            /* `::` belongs to the caller (entity reference) */
		dw_advance(p);        /* consume `::`: p->tok is now the identifier */
		end = p->tok.end;
		(*n_segs)++;
		dw_advance(p);
	}
	*out = dw_str_make(p->src + off, end - off);
	return true;
}

/* A path must not use `__cedar`, and its segments must not be reserved where
 * Cedar forbids it. */
static bool dw_check_path(struct dw_parser *p, struct dw_str path, uint32_t off)
{
	const char *s = path.p, *e = path.p + path.n;

	while (s < e) {
		const char *c = s;
		while (c < e && *c != ':')
			c++;
		struct dw_str seg = dw_str_make(s, (size_t)(c - s));
		if (dw_str_eq_c(seg, "__cedar")) {
			dw_fail_at(p, off, off + path.n, "The name `__cedar` is reserved");
			return false;
		}
		s = c;
		while (s < e && *s == ':')
			s++;
	}
	return true;
}

static struct dw_expr *dw_make_uid_lit(struct dw_parser *p, struct dw_str type, struct dw_str id,
				       uint32_t off, uint32_t end)
{
	struct dw_expr *e = dw_node(p, DW_E_LIT, off, end);
	struct dw_uid *u;

	if (e == NULL)
		return NULL;
	u = DW_NEW(p->a, struct dw_uid);
	if (u == NULL)
		return dw_fail_at(p, off, end, "out of memory");
	dw_uid_init(u, type, id);
	e->lit = dw_val_entity(u);
	return e;
}

static struct dw_expr **dw_parse_args(struct dw_parser *p, enum dw_tok close, uint32_t *n,
				      const char *what)
{
	struct dw_expr **v = NULL, **nv;
	uint32_t cap = 0;

	*n = 0;
	while (p->tok.kind != close) {
		struct dw_expr *e = dw_parse_expr(p);
		if (e == NULL)
			goto fail;
		if (*n == cap) {
			cap = cap ? cap * 2 : 4;
			nv = realloc(v, cap * sizeof *v);
			if (nv == NULL) {
				dw_fail_at(p, e->off, e->end, "out of memory");
				goto fail;
			}
			v = nv;
		}
		v[(*n)++] = e;
		if (p->tok.kind == DW_T_COMMA)
			dw_advance(p);
		else if (p->tok.kind != close) {
			dw_unexpected(p, what);
			goto fail;
		}
	}
	dw_advance(p);
	nv = DW_NEWN(p->a, struct dw_expr *, *n ? *n : 1);
	if (nv == NULL) {
		dw_fail_at(p, p->prev.off, p->prev.end, "out of memory");
		goto fail;
	}
	if (*n)
		memcpy(nv, v, *n * sizeof *v);
	free(v);
	return nv;
fail:
	free(v);
	return NULL;
}

static struct dw_expr *dw_parse_record(struct dw_parser *p, uint32_t off)
{
	struct dw_expr *e, **items = NULL;
	struct dw_str *keys = NULL;
	uint32_t n = 0, cap = 0;

	/* `{` consumed */
	while (p->tok.kind != DW_T_RBRACE) {
		struct dw_str key;
		uint32_t koff = p->tok.off, kend = p->tok.end;
		struct dw_expr *v;

		if (p->tok.kind == DW_T_STR) {
			if (!dw_parse_string(p, &key))
				goto fail;
		} else if (p->tok.kind == DW_T_IDENT) {
			key = dw_tok_str(p, p->tok);
			if (dw_is_reserved(key) && !dw_str_eq_c(key, "if")) {
				dw_fail_at(p, koff, kend, "this identifier is reserved and cannot be used: %.*s",
					   (int)key.n, key.p);
				goto fail;
			}
			dw_advance(p);
		} else {
			dw_fail_at(p, koff, kend, "record literal has invalid attributes: expected an "
				   "identifier or a string literal as the attribute name");
			goto fail;
		}
		if (!dw_expect(p, DW_T_COLON, "`:`"))
			goto fail;
		v = dw_parse_expr(p);
		if (v == NULL)
			goto fail;
		for (uint32_t i = 0; i < n; i++) {
			if (dw_str_eq(keys[i], key)) {
				dw_fail_at(p, koff, kend, "duplicate key `%.*s` in record literal",
					   (int)key.n, key.p);
				goto fail;
			}
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			struct dw_expr **ni = realloc(items, cap * sizeof *ni);
			if (ni != NULL)
				items = ni;
			struct dw_str *nk = realloc(keys, cap * sizeof *nk);
			if (nk != NULL)
				keys = nk;
			if (ni == NULL || nk == NULL) {
				dw_fail_at(p, koff, kend, "out of memory");
				goto fail;
			}
		}
		items[n] = v;
		keys[n] = key;
		n++;
		if (p->tok.kind == DW_T_COMMA)
			dw_advance(p);
		else if (p->tok.kind != DW_T_RBRACE) {
			dw_unexpected(p, "`,` or `}`");
			goto fail;
		}
	}
	dw_advance(p);
	e = dw_node(p, DW_E_RECORD, off, p->prev.end);
	if (e == NULL)
		goto fail;
	e->n = n;
	e->list.items = DW_NEWN(p->a, struct dw_expr *, n ? n : 1);
	e->list.keys = DW_NEWN(p->a, struct dw_str, n ? n : 1);
	if (e->list.items == NULL || e->list.keys == NULL) {
		dw_fail_at(p, off, p->prev.end, "out of memory");
		goto fail;
	}
	if (n) {
		memcpy(e->list.items, items, n * sizeof *items);
		memcpy(e->list.keys, keys, n * sizeof *keys);
	}
	free(items);
	free(keys);
	return e;
fail:
	free(items);
	free(keys);
	return NULL;
}

static struct dw_expr *dw_parse_call(struct dw_parser *p, struct dw_str name, uint32_t n_segs,
				     uint32_t off, uint32_t name_end)
{
	struct dw_expr *e, **args;
	uint32_t n;
	enum dw_fn fn = 0;

	/* `(` is current */
	if (n_segs == 1)
		fn = dw_fn_lookup(name, false);
	if (fn == 0 && !p->dogwood) {
		if (n_segs == 1 && dw_fn_lookup(name, true) != 0)
			return dw_fail_at(p, off, name_end, "`%.*s` is a method, not a function; "
					  "use it as `expr.%.*s(..)`", (int)name.n, name.p,
					  (int)name.n, name.p);
		return dw_fail_at(p, off, name_end, "`%.*s` is not a valid function", (int)name.n,
				  name.p);
	}
	if (fn == 0 && n_segs == 1 && dw_fn_lookup(name, true) != 0)
		return dw_fail_at(p, off, name_end, "`%.*s` is a method, not a function; "
				  "use it as `expr.%.*s(..)`", (int)name.n, name.p, (int)name.n,
				  name.p);
	dw_advance(p);
	args = dw_parse_args(p, DW_T_RPAREN, &n, "`,` or `)`");
	if (args == NULL)
		return NULL;
	if (fn != 0) {
		e = dw_node(p, DW_E_CALL, off, p->prev.end);
		if (e == NULL)
			return NULL;
		e->fn = (uint16_t)fn;
	} else if (n_segs == 1) {
		if (p->in_macro)
			return dw_fail_at(p, off, p->prev.end,
					  "in `def cedar` body: call of `%.*s`: macro-in-macro is not "
					  "supported", (int)name.n, name.p);
		e = dw_node(p, DW_E_MACRO, off, p->prev.end);
		if (e == NULL)
			return NULL;
	} else {
		e = dw_node(p, DW_E_PROVIDER, off, p->prev.end);
		if (e == NULL)
			return NULL;
	}
	e->n = n;
	e->list.items = args;
	e->list.name = name;
	return e;
}

static struct dw_expr *dw_parse_primary(struct dw_parser *p)
{
	struct dw_token t = p->tok;
	struct dw_expr *e;

	switch (t.kind) {
	case DW_T_INT: {
		uint64_t v = 0;
		for (uint32_t i = t.off; i < t.end; i++) {
			unsigned d = (unsigned)(p->src[i] - '0');
			if (v > (UINT64_MAX - d) / 10)
				return dw_fail_at(p, t.off, t.end, "integer parse error: number too "
						  "large to fit in target type");
			v = v * 10 + d;
		}
		e = dw_node(p, DW_E_LIT, t.off, t.end);
		if (e == NULL)
			return NULL;
		/* Kept as u64 in .i until dw_parse_unary decides the sign. */
		e->lit.kind = DW_V_LONG;
		e->lit.i = (int64_t)v;
		e->var = 1;             /* marks "bare unsigned literal" for the unary fold */
		dw_advance(p);
		return e;
	}
	case DW_T_STR: {
		struct dw_str s;
		if (!dw_parse_string(p, &s))
			return NULL;
		e = dw_node(p, DW_E_LIT, t.off, t.end);
		if (e != NULL)
			e->lit = dw_val_string(s);
		return e;
	}
	case DW_T_QIDENT: {
		struct dw_str name = dw_str_make(p->src + t.off + 1, t.end - t.off - 1);
		dw_advance(p);
		if (p->in_macro) {
			bool known = false;
			for (uint32_t i = 0; p->macro && i < p->macro->n_params; i++)
				if (dw_str_eq(p->macro->params[i], name))
					known = true;
			if (!known)
				return dw_fail_at(p, t.off, t.end, "in `def cedar` body: `?%.*s` does "
						  "not name a declared parameter", (int)name.n, name.p);
			e = dw_node(p, DW_E_PARAM, t.off, t.end);
			if (e != NULL)
				e->list.name = name;
			return e;
		}
		if (dw_str_eq_c(name, "principal") || dw_str_eq_c(name, "resource")) {
			if (!p->in_scope)
				return dw_fail_at(p, t.off, t.end, "found template slot ?%.*s in a `%s` "
						  "clause", (int)name.n, name.p,
						  p->clause ? p->clause : "when");
			e = dw_node(p, DW_E_SLOT, t.off, t.end);
			if (e != NULL)
				e->var = dw_str_eq_c(name, "principal") ? DW_VAR_PRINCIPAL
									 : DW_VAR_RESOURCE;
			return e;
		}
		if (p->dogwood)
			return dw_fail_at(p, t.off, t.end, "stray macro parameter reference `?%.*s` "
					  "outside a macro body", (int)name.n, name.p);
		return dw_fail_at(p, t.off, t.end, "`?%.*s` is not a valid template slot",
				  (int)name.n, name.p);
	}
	case DW_T_DIDENT:
		return dw_fail_at(p, t.off, t.end, "stray macro binder `%.*s` outside a macro body",
				  (int)(t.end - t.off), p->src + t.off);
	case DW_T_LPAREN:
		dw_advance(p);
		e = dw_parse_expr(p);
		if (e == NULL || !dw_expect(p, DW_T_RPAREN, "`)`"))
			return NULL;
		return e;
	case DW_T_LBRACKET: {
		uint32_t n;
		struct dw_expr **items;
		dw_advance(p);
		items = dw_parse_args(p, DW_T_RBRACKET, &n, "`,` or `]`");
		if (items == NULL)
			return NULL;
		e = dw_node(p, DW_E_SET, t.off, p->prev.end);
		if (e == NULL)
			return NULL;
		e->n = n;
		e->list.items = items;
		return e;
	}
	case DW_T_LBRACE:
		dw_advance(p);
		return dw_parse_record(p, t.off);
	case DW_T_IDENT:
		break;
	default:
		return dw_unexpected(p, "an expression");
	}

	/* identifiers: literals, variables, entity references, calls, temporal blocks */
	struct dw_str w = dw_tok_str(p, t);
	struct dw_str path;
	uint32_t n_segs;

	if (dw_str_eq_c(w, "true") || dw_str_eq_c(w, "false")) {
		e = dw_node(p, DW_E_LIT, t.off, t.end);
		if (e != NULL)
			e->lit = dw_val_bool(w.p[0] == 't');
		dw_advance(p);
		return e;
	}
	if (p->dogwood && dw_str_eq_c(w, "temporal")) {
		struct dw_lexer save = p->lx;
		struct dw_token nt = dw_lex_next(&p->lx);
		p->lx = save;
		if (nt.kind == DW_T_LBRACE) {
			if (p->in_macro)
				return dw_fail_at(p, t.off, t.end, "`temporal { … }` is not allowed "
						  "inside a `def cedar` body");
			return dw_parse_temporal_block(p, t.off);
		}
	}
	if (!dw_parse_path(p, &path, &n_segs))
		return NULL;
	if (p->tok.kind == DW_T_COLON2) {
		/* entity reference Path::"id" */
		struct dw_str id;
		dw_advance(p);
		if (p->tok.kind == DW_T_LBRACE && !p->dogwood)
			return dw_fail_at(p, t.off, p->tok.end, "invalid entity literal: %.*s::{…}",
					  (int)path.n, path.p);
		if (p->tok.kind == DW_T_LBRACE)
			return dw_fail_at(p, t.off, p->tok.end,
					  "entity initializer syntax `Type::{ … }` is not supported");
		if (!dw_parse_string(p, &id))
			return NULL;
		if (!dw_check_path(p, path, t.off))
			return NULL;
		return dw_make_uid_lit(p, path, id, t.off, p->prev.end);
	}
	if (p->tok.kind == DW_T_LPAREN)
		return dw_parse_call(p, path, n_segs, t.off, t.end);
	if (n_segs == 1) {
		static const char *const vars[] = { "principal", "action", "resource", "context" };
		for (int i = 0; i < 4; i++) {
			if (dw_str_eq_c(path, vars[i])) {
				e = dw_node(p, DW_E_VAR, t.off, t.end);
				if (e != NULL)
					e->var = (uint8_t)i;
				return e;
			}
		}
	}
	if (!p->dogwood)
		return dw_fail_at(p, t.off, t.off + path.n, "invalid variable: %.*s", (int)path.n,
				  path.p);
	return dw_fail_at(p, t.off, t.off + path.n, "`%.*s` is not a valid variable; the valid "
			  "variables are `principal`, `action`, `resource`, and `context`",
			  (int)path.n, path.p);
}

static struct dw_expr *dw_parse_member(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_primary(p);

	while (e != NULL) {
		if (p->tok.kind == DW_T_DOT) {
			struct dw_token name;
			struct dw_str s;
			dw_advance(p);
			name = p->tok;
			if (name.kind != DW_T_IDENT)
				return dw_unexpected(p, "an attribute or method name");
			s = dw_tok_str(p, name);
			dw_advance(p);
			if (p->tok.kind == DW_T_LPAREN) {
				enum dw_fn fn = dw_fn_lookup(s, true);
				struct dw_expr *c, **args, **all;
				uint32_t n;
				if (fn == 0) {
					if (dw_fn_lookup(s, false) != 0)
						return dw_fail_at(p, name.off, name.end,
							"`%.*s` is a function, not a method; use it as "
							"`%.*s(..)`", (int)s.n, s.p, (int)s.n, s.p);
					if (!p->dogwood)
						return dw_fail_at(p, name.off, name.end,
								  "`%.*s` is not a valid method",
								  (int)s.n, s.p);
					return dw_fail_at(p, name.off, name.end, "unknown method `%.*s`",
							  (int)s.n, s.p);
				}
				dw_advance(p);
				args = dw_parse_args(p, DW_T_RPAREN, &n, "`,` or `)`");
				if (args == NULL)
					return NULL;
				if (dw_fn_table[fn].builtin && n + 1 != dw_fn_table[fn].arity && !p->dogwood) {
					unsigned want = dw_fn_table[fn].arity - 1u;
					return dw_fail_at(p, name.off, p->prev.end, "call to `%.*s` requires "
							  "exactly %u argument%s, but got %u argument%s",
							  (int)s.n, s.p, want, want == 1 ? "" : "s", n,
							  n == 1 ? "" : "s");
				}
				if (dw_fn_table[fn].builtin && n + 1 != dw_fn_table[fn].arity) {
					if (dw_fn_table[fn].arity == 1)
						return dw_fail_at(p, name.off, p->prev.end,
							"`%.*s` takes no arguments, but was called with %u",
							(int)s.n, s.p, n);
					return dw_fail_at(p, name.off, p->prev.end,
						"`%.*s` takes exactly one argument, but was called with %u",
						(int)s.n, s.p, n);
				}
				all = DW_NEWN(p->a, struct dw_expr *, n + 1);
				c = dw_node(p, DW_E_CALL, e->off, p->prev.end);
				if (all == NULL || c == NULL)
					return dw_fail_at(p, e->off, p->prev.end, "out of memory");
				all[0] = e;
				if (n)
					memcpy(all + 1, args, n * sizeof *args);
				c->fn = (uint16_t)fn;
				c->n = n + 1;
				c->list.items = all;
				e = c;
			} else {
				struct dw_expr *a = dw_node(p, DW_E_ATTR, e->off, name.end);
				if (a == NULL)
					return NULL;
				a->attr.e = e;
				a->attr.name = s;
				e = a;
			}
		} else if (p->tok.kind == DW_T_LBRACKET) {
			struct dw_str key;
			struct dw_expr *a;
			dw_advance(p);
			if (p->tok.kind != DW_T_STR && !p->dogwood)
				return dw_fail_at(p, p->tok.off, p->tok.end, "invalid string literal: %.*s",
						  (int)(p->tok.end - p->tok.off), p->src + p->tok.off);
			if (p->tok.kind != DW_T_STR)
				return dw_fail_at(p, p->tok.off, p->tok.end, "index access requires a "
						  "string-literal key, e.g. `record[\"field\"]`");
			if (!dw_parse_string(p, &key))
				return NULL;
			if (!dw_expect(p, DW_T_RBRACKET, "`]`"))
				return NULL;
			a = dw_node(p, DW_E_ATTR, e->off, p->prev.end);
			if (a == NULL)
				return NULL;
			a->attr.e = e;
			a->attr.name = key;
			e = a;
		} else if (p->tok.kind == DW_T_LPAREN) {
			return dw_fail_at(p, e->off, p->tok.end, "unexpected call: only extension "
					  "functions and methods can be called");
		} else {
			break;
		}
	}
	return e;
}

static struct dw_expr *dw_parse_unary(struct dw_parser *p)
{
	uint32_t off = p->tok.off;
	enum dw_tok op = p->tok.kind;
	int count = 0;
	struct dw_expr *e;

	if (op == DW_T_BANG || op == DW_T_MINUS) {
		while (p->tok.kind == op) {
			count++;
			dw_advance(p);
		}
	}
	if (count > 4)
		return dw_fail_at(p, off, p->tok.off, "too many occurrences of `%s`",
				  op == DW_T_BANG ? "!" : "-");
	e = dw_parse_member(p);
	if (e == NULL)
		return NULL;
	if (e->op == DW_E_LIT && e->lit.kind == DW_V_LONG && e->var == 1) {
		uint64_t v = (uint64_t)e->lit.i;
		e->var = 0;
		if (op == DW_T_MINUS && count > 0) {
			/* `-N` is a literal: this is how i64::MIN is written */
			if (v > (uint64_t)INT64_MAX + 1)
				return dw_fail_at(p, off, e->end, "integer literal `-%" PRIu64 "` is "
						  "too large", v);
			e->lit.i = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
			e->off = off;
			count--;     /* remaining dashes wrap the literal below */
		} else if (v > (uint64_t)INT64_MAX) {
			return dw_fail_at(p, e->off, e->end, "integer literal `%" PRIu64 "` is too "
					  "large", v);
		}
	}
	while (count-- > 0) {
		struct dw_expr *u = dw_node(p, op == DW_T_BANG ? DW_E_NOT : DW_E_NEG, off, e->end);
		if (u == NULL)
			return NULL;
		u->k.a = e;
		e = u;
	}
	return e;
}

static struct dw_expr *dw_parse_mult(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_unary(p);

	while (e != NULL) {
		enum dw_tok k = p->tok.kind;
		struct dw_token t = p->tok;
		struct dw_expr *r;
		if (k != DW_T_STAR && k != DW_T_SLASH && k != DW_T_PERCENT)
			break;
		dw_advance(p);
		r = dw_parse_unary(p);
		if (r == NULL)
			return NULL;
		if (k == DW_T_SLASH)
			return dw_fail_at(p, t.off, t.end, "division is not supported");
		if (k == DW_T_PERCENT)
			return dw_fail_at(p, t.off, t.end, "remainder/modulo is not supported");
		e = dw_node2(p, DW_E_MUL, e, r);
	}
	return e;
}

static struct dw_expr *dw_parse_add(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_mult(p);

	while (e != NULL && (p->tok.kind == DW_T_PLUS || p->tok.kind == DW_T_MINUS)) {
		enum dw_op op = p->tok.kind == DW_T_PLUS ? DW_E_ADD : DW_E_SUB;
		struct dw_expr *r;
		dw_advance(p);
		r = dw_parse_mult(p);
		if (r == NULL)
			return NULL;
		e = dw_node2(p, op, e, r);
	}
	return e;
}

static bool dw_is_relop(enum dw_tok k)
{
	return k == DW_T_EQ2 || k == DW_T_NE || k == DW_T_LT || k == DW_T_LE || k == DW_T_GT ||
	       k == DW_T_GE || k == DW_T_EQ;
}

static struct dw_expr *dw_make_not(struct dw_parser *p, struct dw_expr *a)
{
	struct dw_expr *n = dw_node(p, DW_E_NOT, a->off, a->end);

	if (n != NULL)
		n->k.a = a;
	return n;
}

static struct dw_expr *dw_parse_has(struct dw_parser *p, struct dw_expr *target)
{
	struct dw_expr *e = NULL;
	struct dw_expr *base = target;

	/* `has` consumed.  RHS: a string, or an identifier chain a.b.c (extended
	 * has: `e has a.b` = `e has a && e.a has b`). */
	if (p->tok.kind == DW_T_STR) {
		struct dw_str s;
		if (!dw_parse_string(p, &s))
			return NULL;
		e = dw_node(p, DW_E_HAS, target->off, p->prev.end);
		if (e != NULL) {
			e->attr.e = target;
			e->attr.name = s;
		}
		return e;
	}
	if (p->tok.kind != DW_T_IDENT)
		return dw_fail_at(p, p->tok.off, p->tok.end, "invalid RHS of a `has` operation: "
				  "expected an attribute name or a string literal");
	for (;;) {
		struct dw_str name = dw_tok_str(p, p->tok);
		struct dw_expr *h = dw_node(p, DW_E_HAS, target->off, p->tok.end);
		if (h == NULL)
			return NULL;
		h->attr.e = base;
		h->attr.name = name;
		e = e == NULL ? h : dw_node2(p, DW_E_AND, e, h);
		if (e == NULL)
			return NULL;
		e->end = p->tok.end;
		dw_advance(p);
		if (p->tok.kind != DW_T_DOT)
			break;
		dw_advance(p);
		if (p->tok.kind != DW_T_IDENT)
			return dw_fail_at(p, p->tok.off, p->tok.end, "invalid RHS of a `has` "
					  "operation: expected an attribute name");
		struct dw_expr *a = dw_node(p, DW_E_ATTR, target->off, h->end);
		if (a == NULL)
			return NULL;
		a->attr.e = base;
		a->attr.name = name;
		base = a;
	}
	if (p->tok.kind == DW_T_LPAREN || p->tok.kind == DW_T_LBRACKET)
		return dw_fail_at(p, p->tok.off, p->tok.end, "invalid RHS of a `has` operation");
	return e;
}

static struct dw_expr *dw_parse_relation(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_add(p), *r;
	int n_ops = 0;

	if (e == NULL)
		return NULL;
	if (dw_tok_is(p, "has")) {
		dw_advance(p);
		return dw_parse_has(p, e);
	}
	if (dw_tok_is(p, "like")) {
		const struct dw_pattern *pat;
		struct dw_expr *l;
		dw_advance(p);
		pat = dw_parse_pattern(p);
		if (pat == NULL)
			return NULL;
		l = dw_node(p, DW_E_LIKE, e->off, p->prev.end);
		if (l == NULL)
			return NULL;
		l->like.e = e;
		l->like.pat = pat;
		return l;
	}
	if (dw_tok_is(p, "is")) {
		struct dw_str type;
		uint32_t n_segs, toff;
		struct dw_expr *is;
		dw_advance(p);
		toff = p->tok.off;
		if (p->tok.kind != DW_T_IDENT || dw_is_reserved(dw_tok_str(p, p->tok)))
			return dw_fail_at(p, p->tok.off, p->tok.end, "right hand side of an `is` "
					  "expression must be an entity type name");
		if (!dw_parse_path(p, &type, &n_segs) || !dw_check_path(p, type, toff))
			return NULL;
		if (p->tok.kind == DW_T_COLON2 || p->tok.kind == DW_T_LPAREN ||
		    p->tok.kind == DW_T_DOT || p->tok.kind == DW_T_LBRACKET)
			return dw_fail_at(p, toff, p->tok.end, "right hand side of an `is` "
					  "expression must be an entity type name");
		is = dw_node(p, DW_E_IS, e->off, p->prev.end);
		if (is == NULL)
			return NULL;
		is->attr.e = e;
		is->attr.name = type;
		if (dw_tok_is(p, "in")) {
			struct dw_expr *in;
			dw_advance(p);
			r = dw_parse_add(p);
			if (r == NULL)
				return NULL;
			in = dw_node2(p, DW_E_IN, e, r);
			if (in == NULL)
				return NULL;
			is = dw_node2(p, DW_E_AND, is, in);
		}
		return is;
	}
	while (dw_is_relop(p->tok.kind) || dw_tok_is(p, "in")) {
		struct dw_token t = p->tok;
		enum dw_tok k = t.kind;
		bool in = k == DW_T_IDENT;
		if (++n_ops > 1)
			return dw_fail_at(p, e->off, t.end, "multiple relational operators (>, ==, in, "
					  "etc.) must be used with parentheses to make ordering explicit");
		if (k == DW_T_EQ)
			return dw_fail_at(p, t.off, t.end, "'=' is not a valid operator in Cedar");
		dw_advance(p);
		r = dw_parse_add(p);
		if (r == NULL)
			return NULL;
		if (in)
			e = dw_node2(p, DW_E_IN, e, r);
		else if (k == DW_T_EQ2)
			e = dw_node2(p, DW_E_EQ, e, r);
		else if (k == DW_T_NE)
			e = (e = dw_node2(p, DW_E_EQ, e, r)) ? dw_make_not(p, e) : NULL;
		else if (k == DW_T_LT)
			e = dw_node2(p, DW_E_LT, e, r);
		else if (k == DW_T_LE)
			e = dw_node2(p, DW_E_LE, e, r);
		else if (k == DW_T_GT)   /* a > b  =  !(a <= b) */
			e = (e = dw_node2(p, DW_E_LE, e, r)) ? dw_make_not(p, e) : NULL;
		else                     /* a >= b =  !(a < b) */
			e = (e = dw_node2(p, DW_E_LT, e, r)) ? dw_make_not(p, e) : NULL;
		if (e == NULL)
			return NULL;
		if (dw_tok_is(p, "has") || dw_tok_is(p, "like") || dw_tok_is(p, "is"))
			return dw_fail_at(p, e->off, p->tok.end, "multiple relational operators (>, "
					  "==, in, etc.) must be used with parentheses to make "
					  "ordering explicit");
	}
	return e;
}

static struct dw_expr *dw_parse_and(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_relation(p);

	while (e != NULL && p->tok.kind == DW_T_AND2) {
		struct dw_expr *r;
		dw_advance(p);
		r = dw_parse_relation(p);
		if (r == NULL)
			return NULL;
		e = dw_node2(p, DW_E_AND, e, r);
	}
	return e;
}

static struct dw_expr *dw_parse_or(struct dw_parser *p)
{
	struct dw_expr *e = dw_parse_and(p);

	while (e != NULL && p->tok.kind == DW_T_OR2) {
		struct dw_expr *r;
		dw_advance(p);
		r = dw_parse_and(p);
		if (r == NULL)
			return NULL;
		e = dw_node2(p, DW_E_OR, e, r);
	}
	return e;
}

static struct dw_expr *dw_parse_expr(struct dw_parser *p)
{
	struct dw_expr *e;

	if (!dw_enter(p))
		return NULL;
	if (dw_tok_is(p, "if")) {
		uint32_t off = p->tok.off;
		struct dw_expr *c, *t, *f;
		dw_advance(p);
		c = dw_parse_expr(p);
		if (c == NULL)
			goto out;
		if (!dw_tok_is(p, "then")) {
			dw_unexpected(p, "`then`");
			goto out;
		}
		dw_advance(p);
		t = dw_parse_expr(p);
		if (t == NULL)
			goto out;
		if (!dw_tok_is(p, "else")) {
			dw_unexpected(p, "`else`");
			goto out;
		}
		dw_advance(p);
		f = dw_parse_expr(p);
		if (f == NULL)
			goto out;
		e = dw_node(p, DW_E_IF, off, f->end);
		if (e != NULL) {
			e->k.a = c;
			e->k.b = t;
			e->k.c = f;
		}
		p->depth--;
		return e;
	}
	e = dw_parse_or(p);
	p->depth--;
	return e;
out:
	p->depth--;
	return NULL;
}

/* Bound the tree below e (see DW_EXPR_MAX_DEPTH): long operator chains such as
 * `1 + 1 + … + 1` or `a.b.c.…` are parsed by loops, not recursion, so their
 * height is checked here, before anything walks them recursively. */
static bool dw_check_size(struct dw_parser *p, struct dw_expr *e)
{
	int r = dw_expr_measure(e, DW_EXPR_MAX_DEPTH, DW_EXPR_MAX_SIZE);

	if (r == 0)
		return true;
	if (r == 1)
		dw_fail_at(p, e->off, e->end, "expression nesting exceeds the limit of %d levels",
			   DW_EXPR_MAX_DEPTH);
	else if (r == 2)
		dw_fail_at(p, e->off, e->end, "expression is too large (more than %d nodes)",
			   DW_EXPR_MAX_SIZE);
	else
		dw_fail_at(p, e->off, e->end, "out of memory");
	return false;
}

/* --- 5. raw blocks ------------------------------------------------------------------ */

/* With p->tok = `{`, find the matching `}` in the raw text (strings and
 * comments honoured).  Sets *body_off and *body_end to the text between the braces
 * and leaves the lexer after the `}`. */
static bool dw_raw_block(struct dw_parser *p, uint32_t *body_off, uint32_t *body_end)
{
	const char *s = p->src;
	size_t i = p->tok.end;
	int depth = 1;

	*body_off = (uint32_t)i;
	while (i < p->len) {
		char c = s[i];
		if (c == '"') {
			i++;
			while (i < p->len && s[i] != '"') {
				if (s[i] == '\\' && i + 1 < p->len)
					i++;
				i++;
			}
			i++;
			continue;
		}
		if (c == '/' && i + 1 < p->len && s[i + 1] == '/') {
			while (i < p->len && s[i] != '\n')
				i++;
			continue;
		}
		if (c == '{')
			depth++;
		else if (c == '}' && --depth == 0) {
			*body_end = (uint32_t)i;
			dw_lex_init(&p->lx, p->src, p->len, i + 1);
			p->prev.kind = DW_T_RBRACE;
			p->prev.off = (uint32_t)i;
			p->prev.end = (uint32_t)i + 1;
			p->tok = dw_lex_next(&p->lx);
			return true;
		}
		i++;
	}
	dw_fail_at(p, p->tok.off, p->tok.end, "unclosed `{`: no matching `}` before the end of "
		   "the input");
	return false;
}

/* A set made without the temporal layer cannot parse a temporal body: refuse the
 * block rather than skip it (a rule missing its condition would permit more). */
static bool dw_have_temporal(struct dw_parser *p, uint32_t off)
{
	if (p->ps->parse_temporal != NULL)
		return true;
	dw_fail_at(p, off, p->tok.end, "temporal blocks need a policy set made with "
		   "dw_policy_set_new_temporal");
	return false;
}

static struct dw_expr *dw_parse_temporal_block(struct dw_parser *p, uint32_t off)
{
	uint32_t bo, be;
	struct dw_temporal *t = NULL;
	struct dw_expr *e;
	int r;

	dw_advance(p);                 /* `temporal` */
	if (p->tok.kind != DW_T_LBRACE)
		return dw_unexpected(p, "`{`");
	if (!dw_raw_block(p, &bo, &be))
		return NULL;
	if (!dw_have_temporal(p, off))
		return NULL;
	r = p->ps->parse_temporal(p->a, p->file, p->src, p->len, bo, be, p->src_index,
				  DW_TEMPORAL_CONDITION, NULL, 0, &t, p->diags);
	if (r != 0) {
		p->failed = true;
		return NULL;
	}
	e = dw_node(p, DW_E_TEMPORAL, off, p->prev.end);
	if (e != NULL)
		e->temporal = t;
	return e;
}

/* --- 4. scopes, annotations, conditions, rules -------------------------------------- */

static const char *const dw_scope_names[3] = { "principal", "action", "resource" };

/* Check that e is an entity reference (or, for principal/resource, a slot) and
 * store it in sc->uid. */
static bool dw_scope_operand(struct dw_parser *p, int var, struct dw_expr *e, struct dw_scope *sc)
{
	if (e->op == DW_E_SLOT && var != 1) {
		if ((var == 0 && e->var != DW_VAR_PRINCIPAL) ||
		    (var == 2 && e->var != DW_VAR_RESOURCE)) {
			dw_fail_at(p, e->off, e->end, "expected %s slot `?%s`", dw_scope_names[var],
				   dw_scope_names[var]);
			return false;
		}
		sc->slot = true;
		return true;
	}
	if (e->op == DW_E_LIT && e->lit.kind == DW_V_ENTITY) {
		sc->uid = e->lit.uid;
		if (var == 1) {
			struct dw_str t = sc->uid->type;
			if (!(dw_str_eq_c(t, "Action") ||
			      (t.n > 8 && memcmp(t.p + t.n - 8, "::Action", 8) == 0))) {
				struct dw_buf b = { 0 };
				dw_uid_format(&b, sc->uid);
				dw_fail_at(p, e->off, e->end, "expected an entity uid with type `Action` "
					   "but got `%s`", b.p ? b.p : "?");
				dw_buf_free(&b);
				return false;
			}
		}
		return true;
	}
	if (var == 1)
		dw_fail_at(p, e->off, e->end, "action scope expects an action reference "
			   "(`Ns::Action::\"id\"`)");
	else
		dw_fail_at(p, e->off, e->end, "expected an entity reference (`Ns::Type::\"id\"`) or "
			   "a template slot (`?%s`)", dw_scope_names[var]);
	return false;
}

static bool dw_parse_scope_elem(struct dw_parser *p, struct dw_policy *pol, bool seen[3],
				int position)
{
	struct dw_token vt = p->tok;
	struct dw_str name;
	struct dw_scope *sc;
	int var = -1;

	if (vt.kind != DW_T_IDENT) {
		dw_unexpected(p, "`principal`, `action`, or `resource`");
		return false;
	}
	name = dw_tok_str(p, vt);
	for (int i = 0; i < 3; i++)
		if (dw_str_eq_c(name, dw_scope_names[i]))
			var = i;
	if (position >= 3) {
		dw_fail_at(p, vt.off, vt.end, p->dogwood ? "this policy has an extra element in the "
			   "scope: `%.*s`" : "this policy has an extra element in the scope: %.*s",
			   (int)name.n, name.p);
		return false;
	}
	if (var < 0) {
		if (p->dogwood)
			dw_fail_at(p, vt.off, vt.end, "unexpected scope variable `%.*s`; expected "
				   "`principal`, `action`, or `resource`", (int)name.n, name.p);
		else
			dw_fail_at(p, vt.off, vt.end, "expected `%s`, found `%.*s`",
				   dw_scope_names[position], (int)name.n, name.p);
		return false;
	}
	if (!p->dogwood && var != position) {
		dw_fail_at(p, vt.off, vt.end, "expected `%s`, found `%.*s`", dw_scope_names[position],
			   (int)name.n, name.p);
		return false;
	}
	if (seen[var]) {
		dw_fail_at(p, vt.off, vt.end, "duplicate `%s` in scope", dw_scope_names[var]);
		return false;
	}
	seen[var] = true;
	sc = var == 0 ? &pol->principal : var == 1 ? &pol->action : &pol->resource;
	sc->off = vt.off;
	sc->end = vt.end;
	dw_advance(p);
	if (p->tok.kind == DW_T_COLON) {
		if (p->dogwood)
			dw_fail_at(p, vt.off, p->tok.end, "the `%s : Type` scope form is not supported; "
				   "use `%s is Type`", dw_scope_names[var], dw_scope_names[var]);
		else
			dw_fail_at(p, vt.off, p->tok.end, "type constraints using `:` are not supported");
		return false;
	}
	if (dw_tok_is(p, "is")) {
		uint32_t n_segs, toff;
		if (var == 1) {
			dw_fail_at(p, vt.off, p->tok.end, p->dogwood ? "`action is Type` is not valid in "
				   "the action scope" : "`is` cannot appear in the action scope");
			return false;
		}
		dw_advance(p);
		toff = p->tok.off;
		if (p->tok.kind != DW_T_IDENT) {
			dw_fail_at(p, p->tok.off, p->tok.end, "right hand side of an `is` expression "
				   "must be an entity type name");
			return false;
		}
		if (!dw_parse_path(p, &sc->type, &n_segs) || !dw_check_path(p, sc->type, toff))
			return false;
		if (p->tok.kind == DW_T_COLON2 || p->tok.kind == DW_T_LPAREN) {
			dw_fail_at(p, toff, p->tok.end, "right hand side of an `is` expression must "
				   "be an entity type name");
			return false;
		}
		sc->kind = DW_SC_IS;
		sc->end = p->prev.end;
	}
	if (dw_is_relop(p->tok.kind) || dw_tok_is(p, "in")) {
		struct dw_token op = p->tok;
		bool in = op.kind == DW_T_IDENT;
		struct dw_expr *rhs;

		if (op.kind == DW_T_EQ) {
			dw_fail_at(p, op.off, op.end, "`=` is not a valid operator in this scope; did "
				   "you mean `==`?");
			return false;
		}
		if (!in && op.kind != DW_T_EQ2) {
			dw_fail_at(p, op.off, op.end, "scope only allows `==` or `in`, found `%.*s`",
				   (int)(op.end - op.off), p->src + op.off);
			return false;
		}
		if (sc->kind == DW_SC_IS && !in) {
			dw_fail_at(p, vt.off, op.end, p->dogwood ? "`is Type == …` is not valid; only "
				   "`is Type in …` is allowed" : "`is` cannot be used together with `==`");
			return false;
		}
		dw_advance(p);
		p->in_scope = true;
		rhs = dw_parse_expr(p);
		p->in_scope = false;
		if (rhs == NULL)
			return false;
		sc->end = rhs->end;
		if (var == 1 && in && rhs->op == DW_E_SET) {
			sc->kind = DW_SC_IN_LIST;
			sc->n_list = rhs->n;
			sc->list = DW_NEWN(p->a, const struct dw_uid *, rhs->n ? rhs->n : 1);
			if (sc->list == NULL) {
				dw_fail_at(p, rhs->off, rhs->end, "out of memory");
				return false;
			}
			for (uint32_t i = 0; i < rhs->n; i++) {
				struct dw_scope tmp = { 0 };
				struct dw_expr *it = rhs->list.items[i];
				if (it->op == DW_E_SLOT || !dw_scope_operand(p, 1, it, &tmp)) {
					if (!p->failed)
						dw_fail_at(p, it->off, it->end, "action scope expects an "
							   "action reference (`Ns::Action::\"id\"`)");
					return false;
				}
				sc->list[i] = tmp.uid;
			}
			return true;
		}
		if (!dw_scope_operand(p, var, rhs, sc))
			return false;
		if (sc->kind == DW_SC_IS)
			sc->kind = DW_SC_IS_IN;
		else
			sc->kind = in ? DW_SC_IN : DW_SC_EQ;
		if (sc->slot)
			pol->is_template = true;
	}
	return true;
}

static bool dw_parse_annotation(struct dw_parser *p, struct dw_annotation *an)
{
	an->off = p->tok.off;
	dw_advance(p);                 /* `@` */
	if (p->tok.kind != DW_T_IDENT) {
		dw_unexpected(p, "an annotation name");
		return false;
	}
	an->key = dw_tok_str(p, p->tok);
	an->end = p->tok.end;
	dw_advance(p);
	an->value = dw_str_make("", 0);
	if (p->tok.kind == DW_T_LPAREN) {
		dw_advance(p);
		if (!dw_parse_string(p, &an->value))
			return false;
		if (!dw_expect(p, DW_T_RPAREN, "`)`"))
			return false;
		an->end = p->prev.end;
	}
	return true;
}

static struct dw_expr *dw_fold_and(struct dw_parser *p, struct dw_expr *a, struct dw_expr *b)
{
	if (a == NULL)
		return b;
	return dw_node2(p, DW_E_AND, a, b);
}

static bool dw_parse_condition(struct dw_parser *p, struct dw_cond *c, struct dw_policy *pol)
{
	struct dw_token kw = p->tok;
	struct dw_str w;

	if (kw.kind != DW_T_IDENT) {
		/* Box's wording for a rule that neither ends nor continues */
		if (kw.kind == DW_T_EOF && !p->dogwood)
			dw_fail_at(p, kw.off, kw.end, "unexpected end of input");
		else if (kw.kind == DW_T_EOF)
			dw_fail_at(p, kw.off, kw.end, "unexpected end of input; expected `;` to end the "
				   "policy, or `when`/`unless` to add a condition");
		else if (kw.kind == DW_T_ERROR)
			dw_unexpected(p, "`;`");
		else
			dw_fail_at(p, kw.off, kw.end, "unexpected token `%.*s`; expected `;` to end the "
				   "policy, or `when`/`unless` to add a condition",
				   (int)(kw.end - kw.off > 40 ? 40 : kw.end - kw.off), p->src + kw.off);
		return false;
	}
	w = dw_tok_str(p, kw);
	if (!dw_str_eq_c(w, "when") && !dw_str_eq_c(w, "unless")) {
		if (p->dogwood)
			dw_fail_at(p, kw.off, kw.end, "condition keyword must be `when` or `unless`, "
				   "found `%.*s`", (int)w.n, w.p);
		else
			dw_fail_at(p, kw.off, kw.end, "invalid policy condition: %.*s", (int)w.n, w.p);
		return false;
	}
	c->unless = w.p[0] == 'u';
	c->off = kw.off;
	p->clause = c->unless ? "unless" : "when";
	dw_advance(p);
	if (p->dogwood && dw_tok_is(p, "temporal")) {
		struct dw_expr *e = dw_parse_temporal_block(p, p->tok.off);
		if (e == NULL)
			return false;
		c->kind = DW_COND_TEMPORAL;
		c->body = e;
		c->end = e->end;
		pol->has_temporal = true;
		return true;
	}
	if (p->dogwood && dw_tok_is(p, "guardrails")) {
		c->kind = DW_COND_GUARDRAILS;
		dw_advance(p);
	}
	if (!dw_expect(p, DW_T_LBRACE, "`{`"))
		return false;
	if (p->tok.kind == DW_T_RBRACE) {
		dw_fail_at(p, kw.off, p->tok.end, "`%.*s` condition clause cannot be empty", (int)w.n,
			   w.p);
		return false;
	}
	c->body = dw_parse_expr(p);
	if (c->body == NULL || !dw_check_size(p, c->body) || !dw_expect(p, DW_T_RBRACE, "`}`"))
		return false;
	c->end = p->prev.end;
	return true;
}

/* Does e (a condition) contain a temporal leaf?  Used for has_temporal. */
static bool dw_expr_has_temporal(const struct dw_expr *e)
{
	if (e == NULL)
		return false;
	switch (e->op) {
	case DW_E_TEMPORAL:
		return true;
	case DW_E_NOT: case DW_E_NEG:
		return dw_expr_has_temporal(e->k.a);
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		return dw_expr_has_temporal(e->k.a) || dw_expr_has_temporal(e->k.b);
	case DW_E_IF:
		return dw_expr_has_temporal(e->k.a) || dw_expr_has_temporal(e->k.b) ||
		       dw_expr_has_temporal(e->k.c);
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		return dw_expr_has_temporal(e->attr.e);
	case DW_E_LIKE:
		return dw_expr_has_temporal(e->like.e);
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		for (uint32_t i = 0; i < e->n; i++)
			if (dw_expr_has_temporal(e->list.items[i]))
				return true;
		return false;
	}
	return false;
}

/* Number the temporal leaves of a rule in source order (the evaluator reads
 * their values by this ordinal). */
static void dw_number_leaves(struct dw_expr *e, uint32_t *next)
{
	if (e == NULL)
		return;
	switch (e->op) {
	case DW_E_TEMPORAL:
		if (e->temporal != NULL)
			e->temporal->leaf_index = (*next)++;
		return;
	case DW_E_NOT: case DW_E_NEG:
		dw_number_leaves(e->k.a, next);
		return;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		dw_number_leaves(e->k.a, next);
		dw_number_leaves(e->k.b, next);
		return;
	case DW_E_IF:
		dw_number_leaves(e->k.a, next);
		dw_number_leaves(e->k.b, next);
		dw_number_leaves(e->k.c, next);
		return;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		dw_number_leaves(e->attr.e, next);
		return;
	case DW_E_LIKE:
		dw_number_leaves(e->like.e, next);
		return;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		for (uint32_t i = 0; i < e->n; i++)
			dw_number_leaves(e->list.items[i], next);
		return;
	}
}

static int dw_push_policy(struct dw_policy_set *ps, struct dw_policy *pol)
{
	if (ps->n_policies == ps->cap_policies) {
		uint32_t cap = ps->cap_policies ? ps->cap_policies * 2 : 16;
		struct dw_policy **v = realloc(ps->policies, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		ps->policies = v;
		ps->cap_policies = cap;
	}
	ps->policies[ps->n_policies++] = pol;
	return 0;
}

static struct dw_policy *dw_parse_policy(struct dw_parser *p, struct dw_annotation *ann,
					 uint32_t n_ann, uint32_t off)
{
	struct dw_policy *pol = DW_NEW(p->a, struct dw_policy);
	struct dw_token eff = p->tok;
	struct dw_str w = dw_tok_str(p, eff);
	bool seen[3] = { false, false, false };
	struct dw_cond *conds = NULL;
	uint32_t n_conds = 0, cap = 0;
	int position = 0;

	if (pol == NULL)
		return dw_fail_at(p, eff.off, eff.end, "out of memory");
	pol->off = off;
	pol->src_index = p->src_index;
	if (dw_str_eq_c(w, "permit"))
		pol->effect = DW_PERMIT;
	else if (dw_str_eq_c(w, "forbid"))
		pol->effect = DW_FORBID;
	else if (p->dogwood)
		return dw_fail_at(p, eff.off, eff.end, "policy effect must be `permit` or `forbid`, "
				  "found `%.*s`", (int)w.n, w.p);
	else
		return dw_fail_at(p, eff.off, eff.end, "invalid policy effect: %.*s", (int)w.n, w.p);
	dw_advance(p);
	if (!dw_expect(p, DW_T_LPAREN, "`(`"))
		return NULL;
	while (p->tok.kind != DW_T_RPAREN) {
		if (!dw_parse_scope_elem(p, pol, seen, position++))
			return NULL;
		if (p->tok.kind == DW_T_COMMA)
			dw_advance(p);
		else if (p->tok.kind != DW_T_RPAREN)
			return dw_unexpected(p, "`,` or `)`");
	}
	if (!p->dogwood && position < 3) {
		return dw_fail_at(p, eff.off, p->tok.end, "this policy is missing the `%s` variable "
				  "in the scope", dw_scope_names[position]);
	}
	dw_advance(p);
	while (p->tok.kind != DW_T_SEMI) {
		if (n_conds == cap) {
			cap = cap ? cap * 2 : 4;
			struct dw_cond *nc = realloc(conds, cap * sizeof *nc);
			if (nc == NULL) {
				free(conds);
				return dw_fail_at(p, p->tok.off, p->tok.end, "out of memory");
			}
			conds = nc;
		}
		memset(&conds[n_conds], 0, sizeof conds[n_conds]);
		if (!dw_parse_condition(p, &conds[n_conds], pol)) {
			free(conds);
			return NULL;
		}
		n_conds++;
	}
	pol->end = p->tok.end;
	dw_advance(p);
	pol->n_conds = n_conds;
	pol->conds = DW_NEWN(p->a, struct dw_cond, n_conds ? n_conds : 1);
	if (pol->conds == NULL) {
		free(conds);
		return dw_fail_at(p, eff.off, eff.end, "out of memory");
	}
	if (n_conds)
		memcpy(pol->conds, conds, n_conds * sizeof *conds);
	free(conds);
	for (uint32_t i = 0; i < n_conds; i++) {
		struct dw_expr *c = pol->conds[i].body;
		if (pol->conds[i].unless && (c = dw_make_not(p, c)) == NULL)
			return NULL;
		if (dw_expr_has_temporal(c))
			pol->has_temporal = true;
		pol->cond = dw_fold_and(p, pol->cond, c);
		if (pol->cond == NULL)
			return NULL;
	}
	if (pol->cond != NULL && !dw_check_size(p, pol->cond))
		return NULL;
	{
		uint32_t next = 0;
		for (uint32_t i = 0; i < n_conds; i++)
			dw_number_leaves(pol->conds[i].body, &next);
	}
	pol->n_annotations = n_ann;
	pol->annotations = ann;
	for (uint32_t i = 0; i < n_ann; i++) {
		char *v = dw_arena_strndup(p->a, ann[i].value.p, ann[i].value.n);
		if (v == NULL)
			return dw_fail_at(p, eff.off, eff.end, "out of memory");
		if (dw_str_eq_c(ann[i].key, "id"))
			pol->id = v;
		else if (dw_str_eq_c(ann[i].key, "description"))
			pol->description = v;
	}
	return pol;
}

/* def cedar NAME(?a, ?b) { expr };   def temporal NAME(?a) { body }; */
static struct dw_macro *dw_parse_def(struct dw_parser *p, bool library)
{
	struct dw_macro *m = DW_NEW(p->a, struct dw_macro);
	uint32_t off = p->tok.off;
	struct dw_str kind;
	struct dw_str *params = NULL;
	uint32_t n = 0, cap = 0;

	if (m == NULL)
		return dw_fail_at(p, off, p->tok.end, "out of memory");
	m->off = off;
	m->src_index = p->src_index;
	m->from_library = library;
	dw_advance(p);                 /* `def` */
	kind = dw_tok_str(p, p->tok);
	if (p->tok.kind != DW_T_IDENT || (!dw_str_eq_c(kind, "cedar") && !dw_str_eq_c(kind, "temporal")))
		return dw_unexpected(p, "`cedar` or `temporal`");
	m->kind = kind.p[0] == 'c' ? DW_MACRO_CEDAR : DW_MACRO_TEMPORAL;
	dw_advance(p);
	if (p->tok.kind != DW_T_IDENT)
		return dw_unexpected(p, "a macro name");
	m->name = dw_tok_str(p, p->tok);
	{
		static const char *const reserved[] = { "decimal", "datetime", "duration", "ip", "let",
			"in", "where", "for", "sum", "count", "tp", "formerly", "previous", "since",
			"true", "false" };
		for (size_t i = 0; i < DW_N_ELEMENTS(reserved); i++)
			if (dw_str_eq_c(m->name, reserved[i]))
				return dw_fail_at(p, p->tok.off, p->tok.end, "macro name `%s` is reserved "
						  "(built-in or keyword); pick a different name",
						  reserved[i]);
	}
	dw_advance(p);
	if (!dw_expect(p, DW_T_LPAREN, "`(`"))
		return NULL;
	while (p->tok.kind != DW_T_RPAREN) {
		struct dw_str pn;
		if (p->tok.kind != DW_T_QIDENT) {
			free(params);
			return dw_unexpected(p, "a parameter `?name`");
		}
		pn = dw_str_make(p->src + p->tok.off + 1, p->tok.end - p->tok.off - 1);
		for (uint32_t i = 0; i < n; i++) {
			if (dw_str_eq(params[i], pn)) {
				free(params);
				return dw_fail_at(p, p->tok.off, p->tok.end, "duplicate parameter `?%.*s` "
						  "in macro `%.*s`", (int)pn.n, pn.p, (int)m->name.n,
						  m->name.p);
			}
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			struct dw_str *np = realloc(params, cap * sizeof *np);
			if (np == NULL) {
				free(params);
				return dw_fail_at(p, off, p->tok.end, "out of memory");
			}
			params = np;
		}
		params[n++] = pn;
		dw_advance(p);
		if (p->tok.kind == DW_T_COMMA)
			dw_advance(p);
		else if (p->tok.kind != DW_T_RPAREN) {
			free(params);
			return dw_unexpected(p, "`,` or `)`");
		}
	}
	dw_advance(p);
	m->n_params = n;
	m->params = DW_NEWN(p->a, struct dw_str, n ? n : 1);
	if (m->params == NULL) {
		free(params);
		return dw_fail_at(p, off, p->tok.end, "out of memory");
	}
	if (n)
		memcpy(m->params, params, n * sizeof *params);
	free(params);
	if (p->tok.kind != DW_T_LBRACE)
		return dw_unexpected(p, "`{`");
	if (m->kind == DW_MACRO_CEDAR) {
		dw_advance(p);
		m->body_off = p->tok.off;
		p->in_macro = true;
		p->macro = m;
		m->body = dw_parse_expr(p);
		p->in_macro = false;
		p->macro = NULL;
		if (m->body == NULL || !dw_check_size(p, m->body))
			return NULL;
		m->body_end = p->tok.off;
		if (!dw_expect(p, DW_T_RBRACE, "`}`"))
			return NULL;
	} else {
		uint32_t bo, be;
		if (!dw_raw_block(p, &bo, &be))
			return NULL;
		m->body_off = bo;
		m->body_end = be;
		if (!dw_have_temporal(p, m->off))
			return NULL;
		if (p->ps->parse_temporal(p->a, p->file, p->src, p->len, bo, be, p->src_index,
					  DW_TEMPORAL_MACRO_BODY, m->params, m->n_params,
					  &m->tbody, p->diags) != 0) {
			p->failed = true;
			return NULL;
		}
		m->is_aggregate = m->tbody->agg != NULL;
	}
	if (!dw_expect(p, DW_T_SEMI, "`;`"))
		return NULL;
	m->end = p->prev.end;
	return m;
}

/* --- 6. the policy set -------------------------------------------------------------- */

struct dw_policy_set *dw_policy_set_new(enum dw_dialect dialect)
{
	struct dw_policy_set *ps = calloc(1, sizeof *ps);

	if (ps == NULL)
		return NULL;
	dw_arena_init(&ps->arena);
	ps->dialect = dialect;
	return ps;
}

void dw_policy_set_free(struct dw_policy_set *ps)
{
	if (ps == NULL)
		return;
	free(ps->policies);
	free(ps->macros);
	free(ps->sources);
	dw_arena_fini(&ps->arena);
	free(ps);
}

static int dw_push_macro(struct dw_policy_set *ps, struct dw_macro *m)
{
	if (ps->n_macros == ps->cap_macros) {
		uint32_t cap = ps->cap_macros ? ps->cap_macros * 2 : 8;
		struct dw_macro **v = realloc(ps->macros, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		ps->macros = v;
		ps->cap_macros = cap;
	}
	ps->macros[ps->n_macros++] = m;
	return 0;
}

static int dw_parse_source(struct dw_policy_set *ps, const char *file, const char *src,
			   size_t len, bool library, struct dw_diags *diags)
{
	struct dw_parser p;
	struct dw_source *srcs;
	uint32_t first_policy = ps->n_policies, first_macro = ps->n_macros;
	struct dw_annotation *ann = NULL;
	uint32_t n_ann = 0, cap_ann = 0;
	char *copy;
	int r = 0;

	if (len > UINT32_MAX - 2) {
		dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0, "policy source is too large");
		return -EINVAL;
	}
	{
		size_t bad;
		if (!dw_utf8_valid(src, len, &bad)) {
			dw_diags_add(diags, DW_SEV_ERROR, file, src, len, bad, bad + 1,
				     "policy source is not valid UTF-8 (byte 0x%02x at offset %zu)",
				     (unsigned char)src[bad], bad);
			return -EINVAL;
		}
	}
	if (ps->n_sources == ps->cap_sources) {
		uint32_t cap = ps->cap_sources ? ps->cap_sources * 2 : 4;
		if (cap > UINT16_MAX)
			return -ENOMEM;
		srcs = realloc(ps->sources, cap * sizeof *srcs);
		if (srcs == NULL)
			return -ENOMEM;
		ps->sources = srcs;
		ps->cap_sources = cap;
	}
	copy = dw_arena_strndup(&ps->arena, src, len);
	if (copy == NULL)
		return -ENOMEM;
	memset(&p, 0, sizeof p);
	p.ps = ps;
	p.a = &ps->arena;
	p.diags = diags;
	p.file = dw_arena_strdup(&ps->arena, file ? file : "");
	if (p.file == NULL)
		return -ENOMEM;
	p.src = copy;
	p.len = len;
	p.src_index = (uint16_t)ps->n_sources;
	p.dogwood = ps->dialect == DW_DIALECT_DOGWOOD;
	dw_lex_init(&p.lx, copy, len, 0);
	p.tok = dw_lex_next(&p.lx);

	while (p.tok.kind != DW_T_EOF && !p.failed) {
		if (p.tok.kind == DW_T_AT) {
			if (n_ann == cap_ann) {
				cap_ann = cap_ann ? cap_ann * 2 : 4;
				struct dw_annotation *na = realloc(ann, cap_ann * sizeof *na);
				if (na == NULL) {
					r = -ENOMEM;
					break;
				}
				ann = na;
			}
			if (!dw_parse_annotation(&p, &ann[n_ann]))
				break;
			for (uint32_t i = 0; i < n_ann; i++) {
				if (dw_str_eq(ann[i].key, ann[n_ann].key)) {
					dw_fail_at(&p, ann[n_ann].off, ann[n_ann].end, "duplicate "
						   "annotation: @%.*s", (int)ann[i].key.n, ann[i].key.p);
					break;
				}
			}
			n_ann++;
			continue;
		}
		if (p.dogwood && dw_tok_is(&p, "def")) {
			struct dw_macro *m;
			if (n_ann != 0) {
				dw_fail_at(&p, ann[0].off, p.tok.end, "annotations are not allowed on a "
					   "macro definition");
				break;
			}
			m = dw_parse_def(&p, library);
			if (m == NULL)
				break;
			if ((r = dw_push_macro(ps, m)) != 0)
				break;
			continue;
		}
		if (p.tok.kind != DW_T_IDENT) {
			dw_unexpected(&p, p.dogwood ? "`permit`, `forbid`, `def`, or `@`"
						    : "`permit`, `forbid`, or `@`");
			break;
		}
		{
			struct dw_annotation *pa = NULL;
			struct dw_policy *pol;
			uint32_t off = n_ann ? ann[0].off : p.tok.off;
			if (n_ann) {
				pa = DW_NEWN(&ps->arena, struct dw_annotation, n_ann);
				if (pa == NULL) {
					r = -ENOMEM;
					break;
				}
				memcpy(pa, ann, n_ann * sizeof *ann);
			}
			pol = dw_parse_policy(&p, pa, n_ann, off);
			n_ann = 0;
			if (pol == NULL)
				break;
			if (library)
				continue;   /* a library's rules are ignored */
			pol->index = ps->n_policies;
			pol->engine_id = dw_arena_printf(&ps->arena, p.dogwood ? "policy_%u" : "policy%u",
							 pol->index);
			if (pol->engine_id == NULL) {
				r = -ENOMEM;
				break;
			}
			if (pol->id == NULL)
				pol->id = pol->engine_id;
			if ((r = dw_push_policy(ps, pol)) != 0)
				break;
		}
	}
	if (r == 0 && !p.failed && n_ann != 0)
		dw_fail_at(&p, ann[0].off, ann[n_ann - 1].end, "annotations must be followed by a "
			   "policy");
	free(ann);
	if (r == 0 && p.failed)
		r = -EINVAL;
	if (r != 0) {
		/* nothing of this source stays (its arena memory is simply unused) */
		ps->n_policies = first_policy;
		ps->n_macros = first_macro;
		return r;
	}
	ps->sources[ps->n_sources].file = p.file;
	ps->sources[ps->n_sources].text = copy;
	ps->sources[ps->n_sources].len = len;
	ps->sources[ps->n_sources].index = (uint16_t)ps->n_sources;
	ps->sources[ps->n_sources].is_library = library;
	ps->n_sources++;
	return 0;
}

int dw_parse_policies(struct dw_policy_set *ps, const char *file, const char *src, size_t len,
		      struct dw_diags *diags)
{
	return dw_parse_source(ps, file, src, len, false, diags);
}

int dw_parse_macro_library(struct dw_policy_set *ps, const char *file, const char *src,
			   size_t len, struct dw_diags *diags)
{
	return dw_parse_source(ps, file, src, len, true, diags);
}

int dw_policy_set_diag(const struct dw_policy_set *ps, struct dw_diags *diags,
		       enum dw_severity sev, uint16_t src_index, uint32_t off, uint32_t end,
		       const char *fmt, ...)
{
	va_list ap;
	int r;
	const struct dw_source *s = src_index < ps->n_sources ? &ps->sources[src_index] : NULL;

	va_start(ap, fmt);
	r = dw_diags_addv(diags, sev, s ? s->file : "", s ? s->text : NULL, s ? s->len : 0, off,
			  end, fmt, ap);
	va_end(ap);
	return r;
}
