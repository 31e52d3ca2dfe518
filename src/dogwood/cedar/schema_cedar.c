/* schema_cedar.c - the human schema format (`.cedarschema`): lexer and
 * recursive-descent parser into the raw model of schema_int.h.
 *
 * Grammar: Cedar's schema grammar (docs/formats.md §1), checked against
 * cedar-policy-core validator/cedar_schema/grammar.lalrpop and
 * to_json_schema.rs.  Keywords are contextual there (`entity`, `type`, `Set`,
 * `tags`, ... are also valid identifiers), so the lexer only knows
 * identifiers and the parser looks at their text.  Only types nest, at most
 * DW_SCHEMA_MAX_DEPTH deep, so the recursion here is bounded; every list is
 * a loop.
 *
 * A syntax error ends the fragment (Cedar's parser does not recover either);
 * other errors (reserved names, duplicates, empty principal lists, bad
 * escapes) are all reported and parsing goes on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "schema_int.h"

enum sc_tok {
	TK_EOF = 0,
	TK_ERR,         /* invalid token; p->lex_err says why */
	TK_IDENT,
	TK_NUMBER,      /* never valid in a schema, lexed to be named in errors */
	TK_STR,         /* raw, quotes included */
	TK_COMMA, TK_SEMI, TK_COLON, TK_COLON2,
	TK_LBRACE, TK_RBRACE, TK_LBRACKET, TK_RBRACKET,
	TK_LT, TK_GT, TK_EQ, TK_QUESTION, TK_AT, TK_LPAREN, TK_RPAREN,
};

struct sc_token {
	uint8_t kind;
	uint32_t off, end;
};

struct sc_parser {
	struct dw_sc_build *b;
	struct dw_sc_frag *frag;
	struct dw_diags *d;
	const char *src;
	uint32_t len, pos;
	const char *lex_err;
	struct sc_token la[3];          /* lookahead */
	unsigned nla;
	struct sc_token prev;           /* last consumed */
	int err;                        /* 0, -EINVAL or -ENOMEM */
	bool stop;                      /* syntax error or ENOMEM: give up */
	struct dw_str ns;               /* current namespace, "" at top level */
	struct dw_str action_type;      /* "Action" or "NS::Action" (schema arena) */
	/* namespace blocks of this fragment, for "duplicate namespace id" */
	struct sc_nsdecl {
		struct dw_str name;
		uint32_t off, end;
	} *nsv;
	uint32_t n_ns, cap_ns;
};

/* ---- growable arrays in an arena (old storage is left behind: at most
 * twice the final size, all of it dropped with the build arena) ---------- */

static void *sc_grow(struct dw_arena *a, void *v, uint32_t n, uint32_t *cap, size_t elsz,
		     size_t align)
{
	uint32_t ncap;
	void *nv;

	if (n < *cap)
		return v;
	if (*cap > UINT32_MAX / 2)
		return NULL;
	ncap = *cap ? *cap * 2 : 4;
	if ((size_t)ncap > SIZE_MAX / elsz)
		return NULL;
	nv = dw_arena_alloc(a, (size_t)ncap * elsz, align);
	if (nv == NULL)
		return NULL;
	if (n != 0 && v != NULL)
		memcpy(nv, v, (size_t)n * elsz);
	*cap = ncap;
	return nv;
}

#define SC_PUSH(a, vec, n, cap)                                                        \
	((vec) = sc_grow((a), (vec), (n), &(cap), sizeof *(vec), _Alignof(__typeof__(*(vec)))), \
	 (vec) == NULL ? NULL : &(vec)[(n)++])

/* ---- diagnostics ------------------------------------------------------- */

static struct dw_sc_loc sc_loc(const struct sc_parser *p, uint32_t off, uint32_t end)
{
	struct dw_sc_loc l = { p->frag, off, end, NULL };
	return l;
}

static void sc_note(struct sc_parser *p, int r)
{
	if (r == -ENOMEM) {
		p->err = -ENOMEM;
		p->stop = true;
	} else if (r < 0 && p->err == 0) {
		p->err = -EINVAL;
	}
}

#define sc_err(p, off, end, ...)                                                        \
	do {                                                                            \
		struct dw_sc_loc l_ = sc_loc((p), (off), (end));                        \
		sc_note((p), dw_sc_error((p)->d, &l_, __VA_ARGS__));                   \
	} while (0)

static void sc_oom(struct sc_parser *p)
{
	p->err = -ENOMEM;
	p->stop = true;
}

/* ---- lexer --------------------------------------------------------------- */

static bool sc_ident_start(unsigned char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool sc_ident_char(unsigned char c)
{
	return sc_ident_start(c) || (c >= '0' && c <= '9');
}

/* Length of the Unicode White_Space character at s[i] (Rust regex `\s`), or 0. */
static unsigned sc_space(const unsigned char *s, uint32_t i, uint32_t n)
{
	unsigned char c = s[i];

	if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
		return 1;
	if (c == 0xC2 && i + 1 < n && (s[i + 1] == 0x85 || s[i + 1] == 0xA0))
		return 2;                                       /* NEL, NBSP */
	if (i + 2 >= n)
		return 0;
	if (c == 0xE1 && s[i + 1] == 0x9A && s[i + 2] == 0x80)
		return 3;                                       /* U+1680 */
	if (c == 0xE2 && s[i + 1] == 0x80 &&
	    (s[i + 2] <= 0x8A || s[i + 2] == 0xA8 || s[i + 2] == 0xA9 || s[i + 2] == 0xAF))
		return 3;                                       /* U+2000..200A, 2028/9, 202F */
	if (c == 0xE2 && s[i + 1] == 0x81 && s[i + 2] == 0x9F)
		return 3;                                       /* U+205F */
	if (c == 0xE3 && s[i + 1] == 0x80 && s[i + 2] == 0x80)
		return 3;                                       /* U+3000 */
	return 0;
}

static struct sc_token sc_lex(struct sc_parser *p)
{
	const unsigned char *s = (const unsigned char *)p->src;
	struct sc_token t;
	uint32_t n = p->len, i = p->pos;
	unsigned w;

	for (;;) {
		if (i < n && (w = sc_space(s, i, n)) != 0) {
			i += w;
		} else if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
			while (i < n && s[i] != '\n' && s[i] != '\r')
				i++;
		} else {
			break;
		}
	}
	t.off = i;
	if (i >= n) {
		t.kind = TK_EOF;
	} else if (sc_ident_start(s[i])) {
		while (i < n && sc_ident_char(s[i]))
			i++;
		t.kind = TK_IDENT;
	} else if (s[i] >= '0' && s[i] <= '9') {
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		t.kind = TK_NUMBER;
	} else if (s[i] == '"') {
		/* `"(\\.|[^"\\])*"`: `.` is any character but a newline */
		t.kind = TK_STR;
		for (i++;; i++) {
			if (i >= n || (s[i] == '\\' && (i + 1 >= n || s[i + 1] == '\n'))) {
				p->lex_err = "unterminated string literal";
				t.kind = TK_ERR;
				i = t.off + 1;
				break;
			}
			if (s[i] == '\\') {
				i++;
				continue;       /* escapes are checked when unescaping */
			}
			if (s[i] == '"') {
				i++;
				break;
			}
		}
	} else {
		unsigned char c = s[i++];

		switch (c) {
		case ',': t.kind = TK_COMMA; break;
		case ';': t.kind = TK_SEMI; break;
		case ':':
			if (i < n && s[i] == ':') {
				i++;
				t.kind = TK_COLON2;
			} else {
				t.kind = TK_COLON;
			}
			break;
		case '{': t.kind = TK_LBRACE; break;
		case '}': t.kind = TK_RBRACE; break;
		case '[': t.kind = TK_LBRACKET; break;
		case ']': t.kind = TK_RBRACKET; break;
		case '<': t.kind = TK_LT; break;
		case '>': t.kind = TK_GT; break;
		case '=': t.kind = TK_EQ; break;
		case '?': t.kind = TK_QUESTION; break;
		case '@': t.kind = TK_AT; break;
		case '(': t.kind = TK_LPAREN; break;
		case ')': t.kind = TK_RPAREN; break;
		default:
			while (i < n && (s[i] & 0xC0) == 0x80)
				i++;            /* the whole UTF-8 character */
			p->lex_err = "invalid token";
			t.kind = TK_ERR;
			break;
		}
	}
	t.end = i;
	p->pos = i;
	return t;
}

static const struct sc_token *sc_peek(struct sc_parser *p, unsigned k)
{
	while (p->nla <= k)
		p->la[p->nla++] = sc_lex(p);
	return &p->la[k];
}

static struct sc_token sc_next(struct sc_parser *p)
{
	struct sc_token t = *sc_peek(p, 0);

	p->la[0] = p->la[1];
	p->la[1] = p->la[2];
	p->nla--;
	p->prev = t;
	return t;
}

static struct dw_str sc_text(const struct sc_parser *p, const struct sc_token *t)
{
	return dw_str_make(p->src + t->off, t->end - t->off);
}

static bool sc_is_kw(const struct sc_parser *p, const struct sc_token *t, const char *kw)
{
	return t->kind == TK_IDENT && dw_str_eq_c(sc_text(p, t), kw);
}

static bool sc_at(struct sc_parser *p, unsigned kind)
{
	return sc_peek(p, 0)->kind == kind;
}

static bool sc_at_kw(struct sc_parser *p, const char *kw)
{
	return sc_is_kw(p, sc_peek(p, 0), kw);
}

/* A syntax error at the next token: the fragment is abandoned. */
static void sc_unexpected(struct sc_parser *p, const char *expected)
{
	const struct sc_token *t = sc_peek(p, 0);
	uint32_t n = t->end - t->off;

	if (p->stop)
		return;
	if (t->kind == TK_EOF)
		sc_err(p, t->off, t->end, "unexpected end of input; expected %s", expected);
	else if (t->kind == TK_ERR)
		sc_err(p, t->off, t->end, "%s", p->lex_err ? p->lex_err : "invalid token");
	else
		sc_err(p, t->off, t->end, "unexpected token `%.*s`%s; expected %s",
		       (int)(n > 60 ? 60 : n), p->src + t->off, n > 60 ? "..." : "", expected);
	p->stop = true;
	if (p->err == 0)
		p->err = -EINVAL;
}

static bool sc_expect(struct sc_parser *p, unsigned kind, const char *what)
{
	if (p->stop)
		return false;
	if (!sc_at(p, kind)) {
		sc_unexpected(p, what);
		return false;
	}
	sc_next(p);
	return true;
}

/* ---- strings --------------------------------------------------------------- */

/* Decode the string literal t with Rust's escapes (what Cedar uses): \n \r
 * \t \\ \0 \" \', \xHH up to 7F, \u{1-6 hex digits, `_` allowed after the
 * first} naming a scalar value; a bare carriage return is refused as rustc
 * does.  The result goes to a (NUL added).  On a bad escape every problem is
 * reported and .p is NULL. */
static struct dw_str sc_unescape(struct sc_parser *p, const struct sc_token *t,
				 struct dw_arena *a)
{
	const unsigned char *s = (const unsigned char *)p->src + t->off + 1;
	uint32_t n = t->end - t->off - 2, o = 0, base = t->off + 1;
	struct dw_str r = { NULL, 0 };
	bool bad = false;
	char *out = dw_arena_alloc(a, (size_t)n + 1, 1);   /* decoding never grows */

	if (out == NULL) {
		sc_oom(p);
		return r;
	}
	for (uint32_t i = 0; i < n;) {
		uint32_t start = i, cp = 0;

		if (s[i] == '\r') {
			sc_err(p, base + i, base + i + 1, "bare carriage return in string literal");
			bad = true;
			i++;
			continue;
		}
		if (s[i] != '\\') {
			out[o++] = (char)s[i++];
			continue;
		}
		i++;    /* the lexer guarantees a character follows */
		switch (s[i++]) {
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case '\\': out[o++] = '\\'; continue;
		case '0': out[o++] = '\0'; continue;
		case '"': out[o++] = '"'; continue;
		case '\'': out[o++] = '\''; continue;
		case 'x': {
			int h1 = i < n ? dw_hex_digit(s[i]) : -1;
			int h2 = i + 1 < n ? dw_hex_digit(s[i + 1]) : -1;

			if (h1 < 0 || h2 < 0 || h1 > 7) {
				i += (h1 >= 0) + (h1 >= 0 && h2 >= 0);
				break;
			}
			i += 2;
			out[o++] = (char)(h1 * 16 + h2);
			continue;
		}
		case 'u': {
			unsigned digits = 0;
			bool ok = i < n && s[i] == '{';

			if (ok)
				i++;
			while (ok && i < n && s[i] != '}') {
				int h = dw_hex_digit(s[i]);

				if (s[i] == '_' && digits > 0) {
					i++;
					continue;
				}
				if (h < 0 || ++digits > 6) {
					ok = false;
					break;
				}
				cp = cp * 16 + (uint32_t)h;
				i++;
			}
			if (!ok || i >= n || digits == 0 || cp > 0x10FFFF ||
			    (cp >= 0xD800 && cp <= 0xDFFF)) {
				while (i < n && s[i] != '}' && s[i] != '"' && s[i] != '\\')
					i++;
				if (i < n && s[i] == '}')
					i++;
				break;
			}
			i++;    /* '}' */
			o += (uint32_t)dw_utf8_put(out + o, cp);
			continue;
		}
		default:
			/* the whole UTF-8 character after the backslash */
			while (i < n && (s[i] & 0xC0) == 0x80)
				i++;
			break;
		}
		sc_err(p, base + start, base + i, "invalid escape `%.*s` in string literal",
		       (int)(i - start), (const char *)s + start);
		bad = true;
	}
	if (bad)
		return r;
	out[o] = '\0';
	return dw_str_make(out, o);
}

/* ---- names ------------------------------------------------------------------ */

/* An identifier that is not reserved (Cedar's `Ident`).  Reports and goes on
 * when it is reserved; false (after a syntax error) when there is none. */
static bool sc_ident(struct sc_parser *p, struct sc_token *out, const char *expected)
{
	const struct sc_token *t;
	struct dw_str s;

	if (p->stop)
		return false;
	t = sc_peek(p, 0);
	if (t->kind != TK_IDENT) {
		sc_unexpected(p, expected);
		return false;
	}
	*out = sc_next(p);
	s = sc_text(p, out);
	if (dw_sc_is_reserved_ident(s.p, s.n))
		sc_err(p, out->off, out->end, "`%.*s` is a reserved identifier", (int)s.n, s.p);
	return true;
}

static bool sc_has_cedar_component(struct dw_str path)
{
	static const char kw[] = "__cedar";
	uint32_t start = 0;

	for (uint32_t i = 0; i <= path.n; i++) {
		if (i == path.n || path.p[i] == ':') {
			if (i - start == sizeof kw - 1 && memcmp(path.p + start, kw, i - start) == 0)
				return true;
			if (i < path.n)
				i++;    /* the second ':' */
			start = i + 1;
		}
	}
	return false;
}

/* Path ::= IDENT {'::' IDENT}.  Stops before a `::` not followed by an
 * identifier.  The text is normalized ("A::B", no spaces or comments). */
static bool sc_path(struct sc_parser *p, struct dw_str *text, uint32_t *off, uint32_t *end,
		    const char *expected)
{
	struct sc_token t;
	struct dw_str s;
	char *buf;
	uint32_t n, cap;

	if (!sc_ident(p, &t, expected))
		return false;
	*off = t.off;
	s = sc_text(p, &t);
	if (sc_peek(p, 0)->kind != TK_COLON2 || sc_peek(p, 1)->kind != TK_IDENT) {
		*text = s;      /* a span of the source copy: lives as long as the build */
		*end = t.end;
		return true;
	}
	cap = s.n + 32;
	buf = dw_arena_alloc(dw_sc_raw(p->b), cap, 1);
	if (buf == NULL) {
		sc_oom(p);
		return false;
	}
	memcpy(buf, s.p, s.n);
	n = s.n;
	while (sc_peek(p, 0)->kind == TK_COLON2 && sc_peek(p, 1)->kind == TK_IDENT) {
		sc_next(p);
		if (!sc_ident(p, &t, "identifier"))
			return false;
		s = sc_text(p, &t);
		if ((uint64_t)n + 2 + s.n + 1 > cap) {
			uint64_t ncap = ((uint64_t)n + 2 + s.n + 1) * 2;
			char *nb;

			if (ncap > UINT32_MAX || (nb = dw_arena_alloc(dw_sc_raw(p->b), ncap, 1)) == NULL) {
				sc_oom(p);
				return false;
			}
			memcpy(nb, buf, n);
			buf = nb;
			cap = (uint32_t)ncap;
		}
		memcpy(buf + n, "::", 2);
		memcpy(buf + n + 2, s.p, s.n);
		n += 2 + s.n;
	}
	buf[n] = '\0';
	*text = dw_str_make(buf, n);
	*end = t.end;
	return true;
}

/* Name ::= IDENT | STR, decoded into the schema arena (ids, attribute names). */
static bool sc_name(struct sc_parser *p, struct dw_str *out, uint32_t *off, uint32_t *end,
		    const char *expected)
{
	const struct sc_token *t;

	if (p->stop)
		return false;
	t = sc_peek(p, 0);
	*off = t->off;
	*end = t->end;
	if (t->kind == TK_STR) {
		struct sc_token s = sc_next(p);

		*out = sc_unescape(p, &s, dw_sc_out(p->b));
		if (out->p == NULL)
			*out = DW_STR_LIT("");   /* reported; keep parsing */
		return !p->stop;
	}
	if (t->kind == TK_IDENT) {
		struct sc_token id;
		struct dw_str s;

		if (!sc_ident(p, &id, expected))
			return false;
		s = sc_text(p, &id);
		out->p = dw_sc_keep(p->b, s.p, s.n);
		out->n = s.n;
		if (out->p == NULL) {
			sc_oom(p);
			return false;
		}
		return true;
	}
	sc_unexpected(p, expected);
	return false;
}

/* ---- annotations (parsed, checked, dropped) -------------------------------- */

struct sc_annot {
	struct dw_str key;
	uint32_t off, end;
};

static int sc_annot_cmp(const void *x, const void *y)
{
	const struct sc_annot *a = x, *b = y;
	int c = dw_str_cmp(a->key, b->key);

	return c ? c : (a->off > b->off) - (a->off < b->off);
}

/* Annotation ::= '@' ANYIDENT ['(' STR ')'] — any identifier is a key, reserved
 * words included; a key may appear once per declaration. */
static void sc_annotations(struct sc_parser *p)
{
	struct dw_arena *raw = dw_sc_raw(p->b);
	struct dw_arena_mark m = dw_arena_mark(raw);
	struct sc_annot *v = NULL, *slot;
	uint32_t n = 0, cap = 0;

	while (!p->stop && sc_at(p, TK_AT)) {
		struct sc_token k;

		sc_next(p);
		if (!sc_at(p, TK_IDENT)) {
			sc_unexpected(p, "identifier");
			break;
		}
		k = sc_next(p);
		if (sc_at(p, TK_LPAREN)) {
			struct sc_token s;

			sc_next(p);
			if (!sc_at(p, TK_STR)) {
				sc_unexpected(p, "string literal");
				break;
			}
			s = sc_next(p);
			(void)sc_unescape(p, &s, raw);   /* value unused; escapes still checked */
			if (!sc_expect(p, TK_RPAREN, "`)`"))
				break;
		}
		slot = SC_PUSH(raw, v, n, cap);
		if (slot == NULL) {
			sc_oom(p);
			break;
		}
		slot->key = sc_text(p, &k);
		slot->off = k.off;
		slot->end = k.end;
	}
	if (n > 1 && !p->stop) {
		qsort(v, n, sizeof *v, sc_annot_cmp);
		for (uint32_t i = 1; i < n; i++)
			if (dw_str_eq(v[i].key, v[i - 1].key))
				sc_err(p, v[i].off, v[i].end, "duplicate annotations: `%.*s`",
				       (int)v[i].key.n, v[i].key.p);
	}
	dw_arena_reset(raw, m);
}

/* ---- types -------------------------------------------------------------------- */

static struct dw_sc_type *sc_type(struct sc_parser *p, unsigned level);

static struct dw_sc_type *sc_new_type(struct sc_parser *p, uint8_t kind)
{
	struct dw_sc_type *t = DW_NEW(dw_sc_raw(p->b), struct dw_sc_type);

	if (t == NULL)
		sc_oom(p);
	else
		t->kind = kind;
	return t;
}

/* A record type body starting at `{`; level counts the types around it. */
static struct dw_sc_type *sc_record(struct sc_parser *p, unsigned level)
{
	struct dw_arena *raw = dw_sc_raw(p->b);
	struct dw_sc_type *t;
	uint32_t cap = 0;

	if (level + 1 > DW_SCHEMA_MAX_DEPTH) {
		const struct sc_token *tk = sc_peek(p, 0);

		sc_err(p, tk->off, tk->end, "type nesting deeper than %d levels",
		       DW_SCHEMA_MAX_DEPTH);
		p->stop = true;
		return NULL;
	}
	if (!sc_expect(p, TK_LBRACE, "`{`") || (t = sc_new_type(p, DW_SC_RECORD)) == NULL)
		return NULL;
	while (!p->stop && !sc_at(p, TK_RBRACE)) {
		struct dw_sc_attr *a;
		uint32_t off, end;

		sc_annotations(p);
		a = SC_PUSH(raw, t->rec.v, t->rec.n, cap);
		if (a == NULL) {
			sc_oom(p);
			return NULL;
		}
		memset(a, 0, sizeof *a);
		a->required = true;
		if (!sc_name(p, &a->name, &off, &end, "attribute name"))
			return NULL;
		a->loc = sc_loc(p, off, end);
		if (sc_at(p, TK_QUESTION)) {
			sc_next(p);
			a->required = false;
		}
		if (!sc_expect(p, TK_COLON, "`:`") || (a->type = sc_type(p, level + 1)) == NULL)
			return NULL;
		if (!sc_at(p, TK_COMMA))
			break;
		sc_next(p);
	}
	if (!sc_expect(p, TK_RBRACE, "`,` or `}`"))
		return NULL;
	sc_note(p, dw_sc_record_check(p->b, t, p->d));
	return p->stop ? NULL : t;
}

static bool sc_ref(struct sc_parser *p, struct dw_sc_name *n, uint8_t kind, const char *expected)
{
	uint32_t off, end;

	memset(n, 0, sizeof *n);
	if (!sc_path(p, &n->text, &off, &end, expected))
		return false;
	n->ns = p->ns;
	n->kind = kind;
	n->loc = sc_loc(p, off, end);
	return true;
}

/* Type ::= Path | 'Set' '<' Type '>' | RecType */
static struct dw_sc_type *sc_type(struct sc_parser *p, unsigned level)
{
	const struct sc_token *t;
	struct dw_sc_type *ty;

	if (p->stop)
		return NULL;
	t = sc_peek(p, 0);
	if (t->kind == TK_LBRACE)
		return sc_record(p, level);
	if (sc_is_kw(p, t, "Set") && sc_peek(p, 1)->kind == TK_LT) {
		if (level + 1 > DW_SCHEMA_MAX_DEPTH) {
			sc_err(p, t->off, t->end, "type nesting deeper than %d levels",
			       DW_SCHEMA_MAX_DEPTH);
			p->stop = true;
			return NULL;
		}
		sc_next(p);
		sc_next(p);
		if ((ty = sc_new_type(p, DW_SC_SET)) == NULL ||
		    (ty->elem = sc_type(p, level + 1)) == NULL || !sc_expect(p, TK_GT, "`>`"))
			return NULL;
		return ty;
	}
	if (t->kind != TK_IDENT) {
		sc_unexpected(p, "a type");
		return NULL;
	}
	if ((ty = sc_new_type(p, DW_SC_REF)) == NULL ||
	    !sc_ref(p, &ty->ref, DW_SC_REF_ANY, "a type"))
		return NULL;
	return ty;
}

/* EntOrTyps ::= Path | '[' [Path {',' Path}] ']' */
static bool sc_ent_types(struct sc_parser *p, struct dw_sc_name **v, uint32_t *n)
{
	struct dw_arena *raw = dw_sc_raw(p->b);
	uint32_t cap = 0;
	struct dw_sc_name *slot;

	*v = NULL;
	*n = 0;
	if (!sc_at(p, TK_LBRACKET)) {
		if ((slot = SC_PUSH(raw, *v, *n, cap)) == NULL) {
			sc_oom(p);
			return false;
		}
		return sc_ref(p, slot, DW_SC_REF_ENTITY, "an entity type or `[`");
	}
	sc_next(p);
	if (sc_at(p, TK_RBRACKET)) {
		sc_next(p);
		return true;
	}
	for (;;) {
		if ((slot = SC_PUSH(raw, *v, *n, cap)) == NULL) {
			sc_oom(p);
			return false;
		}
		if (!sc_ref(p, slot, DW_SC_REF_ENTITY, "an entity type"))
			return false;
		if (!sc_at(p, TK_COMMA))
			break;
		sc_next(p);
	}
	return sc_expect(p, TK_RBRACKET, "`,` or `]`");
}

/* ---- declarations --------------------------------------------------------------- */

struct sc_declname {
	struct dw_str base;
	uint32_t off, end;
};

/* Checks shared by entity and common type names. */
static void sc_check_decl_name(struct sc_parser *p, const struct sc_declname *n)
{
	if (dw_str_eq_c(n->base, "__cedar"))
		sc_err(p, n->off, n->end, "use of the reserved `__cedar` namespace");
}

/* Entity ::= 'entity' Idents ['in' EntOrTyps] [['='] RecType] ['tags' Type] ';'
 *          | 'entity' Idents 'enum' '[' STR {',' STR} ']' ';' */
static void sc_entity(struct sc_parser *p)
{
	struct dw_arena *raw = dw_sc_raw(p->b);
	struct sc_declname *names = NULL, *nm;
	uint32_t n_names = 0, cap = 0, n_parents = 0, n_enum = 0, cap_enum = 0;
	struct dw_sc_name *parents = NULL;
	struct dw_sc_type *shape = NULL, *tags = NULL;
	struct dw_str *ids = NULL;
	bool is_enum = false;

	sc_next(p);     /* entity */
	for (;;) {
		struct sc_token t;

		if (!sc_ident(p, &t, "an entity type name"))
			return;
		if ((nm = SC_PUSH(raw, names, n_names, cap)) == NULL) {
			sc_oom(p);
			return;
		}
		nm->base = sc_text(p, &t);
		nm->off = t.off;
		nm->end = t.end;
		if (!sc_at(p, TK_COMMA))
			break;
		sc_next(p);
	}
	if (sc_at_kw(p, "enum")) {
		is_enum = true;
		sc_next(p);
		if (!sc_expect(p, TK_LBRACKET, "`[`"))
			return;
		for (;;) {
			struct sc_token s;
			struct dw_str *id;

			if (!sc_at(p, TK_STR)) {
				sc_unexpected(p, "string literal");
				return;
			}
			s = sc_next(p);
			id = SC_PUSH(dw_sc_out(p->b), ids, n_enum, cap_enum);
			if (id == NULL) {
				sc_oom(p);
				return;
			}
			*id = sc_unescape(p, &s, dw_sc_out(p->b));
			if (id->p == NULL)
				*id = DW_STR_LIT("");
			if (!sc_at(p, TK_COMMA))
				break;
			sc_next(p);
		}
		/* A repeated id, and the empty id, are Cedar's to keep: its
		 * validator accepts `enum ["", ""]`. */
		if (!sc_expect(p, TK_RBRACKET, "`,` or `]`"))
			return;
	} else {
		if (sc_at_kw(p, "in")) {
			sc_next(p);
			if (!sc_ent_types(p, &parents, &n_parents))
				return;
		}
		if (sc_at(p, TK_EQ)) {
			sc_next(p);
			if ((shape = sc_record(p, 0)) == NULL)
				return;
		} else if (sc_at(p, TK_LBRACE)) {
			if ((shape = sc_record(p, 0)) == NULL)
				return;
		}
		if (sc_at_kw(p, "tags")) {
			sc_next(p);
			if ((tags = sc_type(p, 0)) == NULL)
				return;
		}
	}
	if (!sc_expect(p, TK_SEMI, is_enum ? "`;`" : "`in`, `=`, `{`, `tags` or `;`"))
		return;
	for (uint32_t i = 0; i < n_names; i++) {
		struct dw_sc_entity *e = DW_NEW(raw, struct dw_sc_entity);

		if (e == NULL) {
			sc_oom(p);
			return;
		}
		sc_check_decl_name(p, &names[i]);
		if (dw_str_eq_c(names[i].base, "Action"))
			sc_err(p, names[i].off, names[i].end,
			       "entity type `Action` declared in `entityTypes` list");
		e->name = dw_sc_join(dw_sc_out(p->b), p->ns, names[i].base);
		if (e->name.p == NULL) {
			sc_oom(p);
			return;
		}
		e->ns = p->ns;
		e->base = dw_str_make(e->name.p + e->name.n - names[i].base.n, names[i].base.n);
		e->loc = sc_loc(p, names[i].off, names[i].end);
		e->is_enum = is_enum;
		e->n_enum = n_enum;
		e->enum_ids = ids;
		e->n_parents = n_parents;
		e->parents = parents;
		e->shape = shape;
		e->tags = tags;
		sc_note(p, dw_sc_add_entity(p->b, e, p->d));
	}
}

/* Ref ::= Path '::' STR | Name */
static bool sc_aref(struct sc_parser *p, struct dw_sc_aref *r)
{
	const struct sc_token *t = sc_peek(p, 0);
	uint32_t off = t->off, end;

	memset(r, 0, sizeof *r);
	r->ns = p->ns;
	if (t->kind != TK_STR && t->kind != TK_IDENT) {
		sc_unexpected(p, "an action name");
		return false;
	}
	if (t->kind == TK_STR || sc_peek(p, 1)->kind != TK_COLON2) {
		if (!sc_name(p, &r->id, &off, &end, "an action name"))
			return false;
		r->loc = sc_loc(p, off, end);
		return true;
	}
	if (!sc_path(p, &r->type, &off, &end, "an action name"))
		return false;
	if (!sc_expect(p, TK_COLON2, "`::`"))
		return false;
	if (!sc_at(p, TK_STR)) {
		sc_unexpected(p, "string literal");
		return false;
	}
	{
		struct sc_token s = sc_next(p);

		r->id = sc_unescape(p, &s, dw_sc_raw(p->b));
		if (r->id.p == NULL)
			r->id = DW_STR_LIT("");
		r->loc = sc_loc(p, off, s.end);
	}
	return !p->stop;
}

struct sc_actname {
	struct dw_str id;
	uint32_t off, end;
};

/* AppDecls ::= ('principal' | 'resource') ':' EntOrTyps [',' | ',' AppDecls]
 *            | 'context' ':' (Path | RecType) [',' | ',' AppDecls] */
static bool sc_applies_to(struct sc_parser *p, struct dw_sc_action *proto,
			  const struct sc_actname *first)
{
	bool seen[3] = { false, false, false };   /* principal, resource, context */
	int nm = (int)(first->id.n > 100 ? 100 : first->id.n);

	for (;;) {
		const struct sc_token *t = sc_peek(p, 0);
		uint32_t off = t->off;
		int which = sc_is_kw(p, t, "principal") ? 0 : sc_is_kw(p, t, "resource") ? 1
			  : sc_is_kw(p, t, "context") ? 2 : -1;

		if (which < 0) {
			sc_unexpected(p, "`principal`, `resource` or `context`");
			return false;
		}
		sc_next(p);
		if (!sc_expect(p, TK_COLON, "`:`"))
			return false;
		if (which < 2) {
			struct dw_sc_name *v;
			uint32_t n;
			const char *kind = which == 0 ? "principal" : "resource";

			if (!sc_ent_types(p, &v, &n))
				return false;
			if (seen[which])
				sc_err(p, off, p->prev.end, "duplicate `%s` declaration in action `%.*s`",
				       kind, nm, first->id.p);
			else if (n == 0)
				sc_err(p, off, p->prev.end, "for action `%.*s`, `%s` is `[]`, which "
				       "is invalid", nm, first->id.p, kind);
			if (which == 0 && !seen[0]) {
				proto->principals = v;
				proto->n_principals = n;
			} else if (which == 1 && !seen[1]) {
				proto->resources = v;
				proto->n_resources = n;
			}
		} else {
			struct dw_sc_type *ctx;

			if (sc_at(p, TK_LBRACE)) {
				ctx = sc_record(p, 0);
			} else if ((ctx = sc_new_type(p, DW_SC_REF)) != NULL &&
				   !sc_ref(p, &ctx->ref, DW_SC_REF_COMMON, "`{` or a common type")) {
				ctx = NULL;
			}
			if (ctx == NULL)
				return false;
			if (seen[2])
				sc_err(p, off, p->prev.end, "duplicate context declaration in action "
				       "`%.*s`", nm, first->id.p);
			else
				proto->context = ctx;
		}
		seen[which] = true;
		if (!sc_at(p, TK_COMMA))
			break;
		sc_next(p);
		if (sc_at(p, TK_RBRACE))
			break;
	}
	for (int k = 0; k < 2; k++)
		if (!seen[k])
			sc_err(p, first->off, first->end, "missing `%s` declaration for `%.*s`",
			       k == 0 ? "principal" : "resource", nm, first->id.p);
	return !p->stop;
}

/* Action ::= 'action' Names ['in' RefOrRefs] ['appliesTo' '{' AppDecls '}']
 *            ['attributes' '{' '}'] ';' */
static void sc_action(struct sc_parser *p)
{
	struct dw_arena *raw = dw_sc_raw(p->b);
	struct sc_actname *names = NULL, *nm;
	uint32_t n_names = 0, cap = 0, cap_par = 0;
	struct dw_sc_action proto;

	memset(&proto, 0, sizeof proto);
	sc_next(p);     /* action */
	for (;;) {
		if ((nm = SC_PUSH(raw, names, n_names, cap)) == NULL) {
			sc_oom(p);
			return;
		}
		if (!sc_name(p, &nm->id, &nm->off, &nm->end, "an action name"))
			return;
		if (!sc_at(p, TK_COMMA))
			break;
		sc_next(p);
	}
	if (sc_at_kw(p, "in")) {
		struct dw_sc_aref *r;

		sc_next(p);
		if (sc_at(p, TK_LBRACKET)) {
			sc_next(p);
			for (;;) {
				r = SC_PUSH(raw, proto.parents, proto.n_parents, cap_par);
				if (r == NULL) {
					sc_oom(p);
					return;
				}
				if (!sc_aref(p, r))
					return;
				if (!sc_at(p, TK_COMMA))
					break;
				sc_next(p);
			}
			if (!sc_expect(p, TK_RBRACKET, "`,` or `]`"))
				return;
		} else {
			r = SC_PUSH(raw, proto.parents, proto.n_parents, cap_par);
			if (r == NULL) {
				sc_oom(p);
				return;
			}
			if (!sc_aref(p, r))
				return;
		}
	}
	if (sc_at_kw(p, "appliesTo")) {
		sc_next(p);
		proto.has_applies_to = true;
		if (!sc_expect(p, TK_LBRACE, "`{`") || !sc_applies_to(p, &proto, &names[0]) ||
		    !sc_expect(p, TK_RBRACE, "`}`"))
			return;
	}
	if (sc_at_kw(p, "attributes")) {
		/* accepted by Cedar's grammar only in this empty form, and ignored */
		sc_next(p);
		if (!sc_expect(p, TK_LBRACE, "`{`") || !sc_expect(p, TK_RBRACE, "`}`"))
			return;
	}
	if (!sc_expect(p, TK_SEMI, "`in`, `appliesTo` or `;`"))
		return;
	for (uint32_t i = 0; i < n_names; i++) {
		struct dw_sc_action *a = DW_NEW(raw, struct dw_sc_action);

		if (a == NULL) {
			sc_oom(p);
			return;
		}
		*a = proto;
		a->type = p->action_type;
		a->id = names[i].id;
		a->ns = p->ns;
		a->loc = sc_loc(p, names[i].off, names[i].end);
		sc_note(p, dw_sc_add_action(p->b, a, p->d));
	}
}

/* TypeDecl ::= 'type' TYPENAME '=' Type ';' */
static void sc_typedecl(struct sc_parser *p)
{
	struct sc_token t;
	struct sc_declname nm;
	struct dw_sc_common *c;
	struct dw_sc_type *def;

	sc_next(p);     /* type */
	if (!sc_ident(p, &t, "a type name"))
		return;
	nm.base = sc_text(p, &t);
	nm.off = t.off;
	nm.end = t.end;
	if (!sc_expect(p, TK_EQ, "`=`") || (def = sc_type(p, 0)) == NULL ||
	    !sc_expect(p, TK_SEMI, "`;`"))
		return;
	if (dw_sc_is_reserved_type_name(nm.base.p, nm.base.n))
		sc_err(p, nm.off, nm.end, "this uses a reserved schema keyword: `%.*s`",
		       (int)nm.base.n, nm.base.p);
	sc_check_decl_name(p, &nm);
	c = DW_NEW(dw_sc_raw(p->b), struct dw_sc_common);
	if (c == NULL) {
		sc_oom(p);
		return;
	}
	c->name = dw_sc_join(dw_sc_out(p->b), p->ns, nm.base);
	if (c->name.p == NULL) {
		sc_oom(p);
		return;
	}
	c->ns = p->ns;
	c->base = dw_str_make(c->name.p + c->name.n - nm.base.n, nm.base.n);
	c->def = def;
	c->loc = sc_loc(p, nm.off, nm.end);
	sc_note(p, dw_sc_add_common(p->b, c, p->d));
}

static void sc_decl(struct sc_parser *p, bool top)
{
	const struct sc_token *t = sc_peek(p, 0);

	if (sc_is_kw(p, t, "entity"))
		sc_entity(p);
	else if (sc_is_kw(p, t, "action"))
		sc_action(p);
	else if (sc_is_kw(p, t, "type"))
		sc_typedecl(p);
	else
		sc_unexpected(p, top ? "`namespace`, `entity`, `action` or `type`"
				     : "`entity`, `action`, `type` or `}`");
}

static void sc_namespace(struct sc_parser *p)
{
	struct sc_nsdecl *slot;
	struct dw_str name;
	uint32_t off, end;

	sc_next(p);     /* namespace */
	if (!sc_path(p, &name, &off, &end, "a namespace name"))
		return;
	if (sc_has_cedar_component(name))
		sc_err(p, off, end, "use of the reserved `__cedar` namespace");
	if ((slot = SC_PUSH(dw_sc_raw(p->b), p->nsv, p->n_ns, p->cap_ns)) == NULL) {
		sc_oom(p);
		return;
	}
	slot->name = name;
	slot->off = off;
	slot->end = end;
	if (!sc_expect(p, TK_LBRACE, "`{`"))
		return;
	p->ns = name;
	p->action_type = dw_sc_join(dw_sc_out(p->b), name, DW_STR_LIT("Action"));
	if (p->action_type.p == NULL) {
		sc_oom(p);
		return;
	}
	while (!p->stop && !sc_at(p, TK_RBRACE) && !sc_at(p, TK_EOF)) {
		sc_annotations(p);
		if (!p->stop)
			sc_decl(p, false);
	}
	sc_expect(p, TK_RBRACE, "`entity`, `action`, `type` or `}`");
	p->ns = DW_STR_LIT("");
	p->action_type = DW_STR_LIT("Action");
}

static int sc_ns_cmp(const void *x, const void *y)
{
	const struct sc_nsdecl *a = x, *b = y;
	int c = dw_str_cmp(a->name, b->name);

	return c ? c : (a->off > b->off) - (a->off < b->off);
}

/* Offset of the first byte that is not valid UTF-8, or n. */
static size_t sc_utf8_check(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			k = 1;
		else if (c >= 0xE0 && c <= 0xEF)
			k = 2;
		else if (c >= 0xF0 && c <= 0xF4)
			k = 3;
		else
			return i;
		cp = c & (0x3Fu >> k);
		if (n - i <= k)
			return i;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + j] & 0x3F);
		}
		if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
		    (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
			return i;
		i += k + 1;
	}
	return n;
}

int dw_schema_add_cedar(struct dw_schema *s, const char *file, const char *src, size_t len,
			struct dw_diags *diags)
{
	struct sc_parser p;
	size_t bad;

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
	if (len >= UINT32_MAX) {
		int r = dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0,
				     "schema text of %zu bytes is too large", len);

		dw_sc_poison(p.b);
		return r < 0 ? r : -EINVAL;
	}
	p.frag = dw_sc_frag_new(p.b, file, src, len, true);
	if (p.frag == NULL) {
		dw_sc_poison(p.b);
		return -ENOMEM;
	}
	/* parse the kept copy: names may point into it until finish */
	p.src = p.frag->src;
	p.len = (uint32_t)len;
	p.ns = DW_STR_LIT("");
	p.action_type = DW_STR_LIT("Action");
	bad = sc_utf8_check((const unsigned char *)p.src, len);
	if (bad < len) {
		sc_err(&p, (uint32_t)bad, (uint32_t)bad + 1, "schema text is not valid UTF-8");
		p.stop = true;
	}
	while (!p.stop && !sc_at(&p, TK_EOF)) {
		sc_annotations(&p);
		if (p.stop)
			break;
		if (sc_at_kw(&p, "namespace"))
			sc_namespace(&p);
		else
			sc_decl(&p, true);
	}
	if (!p.stop && p.n_ns > 1) {
		qsort(p.nsv, p.n_ns, sizeof *p.nsv, sc_ns_cmp);
		for (uint32_t i = 1; i < p.n_ns; i++)
			if (dw_str_eq(p.nsv[i].name, p.nsv[i - 1].name))
				sc_err(&p, p.nsv[i].off, p.nsv[i].end, "duplicate namespace id: `%.*s`",
				       (int)p.nsv[i].name.n, p.nsv[i].name.p);
	}
	if (p.err != 0)
		dw_sc_poison(p.b);
	return p.err;
}
