/* evschema.c - event schemas: the `.dwschema` parser, the default schema,
 * derivation against an action schema, lookups (see evschema.h and
 * docs/formats.md §3).
 *
 * Divisions:
 *   1. the default schema text
 *   2. the parsed form (dw_evschema_src)
 *   3. lexer
 *   4. parser: syntax, then the checks that need no action schema (binders,
 *      selector use, pins, duplicate names and groups, duplicate kinds)
 *   5. derivation: one dw_evdecl per (action, declaration)
 *   6. universal symmetric pins, the lookup table, dw_evschema_derive
 *   7. lookups
 *
 * Every check that does not depend on the action schema runs at parse time,
 * where it can point at the offending text; derivation keeps a copy of the
 * source so its own errors (unknown type names, ambiguous paths, oversized
 * records) are located too. */
#include "evschema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. the default schema ------------------------------------------------ */

/* Box's tests/data/box/box-events.dwschema, verbatim (test_evschema compares
 * the two). */
const char dw_evschema_default_text[] =
	"// Default event schema: for every action A, a decision event and two history events.\n"
	"decision event <A>::request {\n"
	"    ...inputs(A),\n"
	"    callerPrincipal: principalType(A),\n"
	"    callerResource:  resourceType(A),\n"
	"    requestId:       String,\n"
	"}\n"
	"event <A>::response {\n"
	"    ...inputs(A),\n"
	"    ...outputs(A),\n"
	"    callerPrincipal: principalType(A),\n"
	"    callerResource:  resourceType(A),\n"
	"    requestId:       String,\n"
	"}\n"
	"event <A>::error {\n"
	"    ...inputs(A),\n"
	"    callerPrincipal: principalType(A),\n"
	"    callerResource:  resourceType(A),\n"
	"    requestId:       String,\n"
	"}\n";

#define ES_DEFAULT_FILE "<default event schema>"

/* Deepest `{ … }` nesting a .dwschema may write: the parser recurses once per
 * level, and no real schema comes near. */
#define ES_MAX_NESTING 64

/* Most leaves plus groups one derived event may have.  The action schema's
 * types are trees after common types are inlined, but shared subtrees make a
 * DAG whose expansion can be exponential (`type T1 = { a: T0, b: T0 }` …):
 * the budget turns that into an error instead of exhausting memory. */
#define ES_MAX_EVENT_NODES 10000

/* ---- 2. the parsed form ----------------------------------------------------- */

enum es_sel { ES_SEL_INPUTS = 1, ES_SEL_OUTPUTS, ES_SEL_PRINCIPAL, ES_SEL_RESOURCE };
enum es_fkind { ES_F_SPREAD = 1, ES_F_NAMED };
enum es_ty { ES_TY_SEL = 1, ES_TY_RECORD, ES_TY_NAME };

struct es_field {
	struct es_field *next;
	uint8_t kind;              /* enum es_fkind */
	uint8_t sel;               /* SPREAD, or a NAMED field typed ES_TY_SEL */
	uint8_t ty;                /* NAMED: enum es_ty */
	uint8_t pin;               /* NAMED: enum dw_pin_root */
	struct dw_str name;        /* NAMED */
	struct dw_str tname;       /* ES_TY_NAME: normalized "A::B" */
	struct dw_str pin_path;    /* as in dw_evfield */
	struct es_field *members;  /* ES_TY_RECORD, in order */
	uint32_t off, end;         /* NAMED: the name; SPREAD: the whole spread */
	uint32_t toff, tend;       /* NAMED: the type */
};

struct es_decl {
	struct es_decl *next;
	bool decision;
	struct dw_str binder, kind;
	struct es_field *fields;
	uint32_t off, end;         /* the kind name */
};

struct dw_evschema_src {
	struct dw_arena arena;
	const char *file;          /* copies: derive reports against them */
	const char *text;
	size_t len;
	bool has_max_window;
	int64_t max_window_s;
	uint32_t n_decls;
	struct es_decl *decls;
};

static const char *es_sel_name(uint8_t sel)
{
	switch (sel) {
	case ES_SEL_INPUTS: return "inputs";
	case ES_SEL_OUTPUTS: return "outputs";
	case ES_SEL_PRINCIPAL: return "principalType";
	case ES_SEL_RESOURCE: return "resourceType";
	}
	return "?";
}

/* The group a spread mints. */
static const char *es_sel_group(uint8_t sel)
{
	return sel == ES_SEL_INPUTS ? "input" : "output";
}

static uint8_t es_sel_by_name(struct dw_str s)
{
	for (uint8_t k = ES_SEL_INPUTS; k <= ES_SEL_RESOURCE; k++)
		if (dw_str_eq_c(s, es_sel_name(k)))
			return k;
	return 0;
}

/* ---- 3. lexer ---------------------------------------------------------------- */

enum es_tok {
	ES_T_EOF = 0,
	ES_T_BAD,
	ES_T_IDENT,
	ES_T_INT,
	ES_T_ELLIPSIS,
	ES_T_COLON2,
	ES_T_COLON,
	ES_T_LPAREN,
	ES_T_RPAREN,
	ES_T_LBRACE,
	ES_T_RBRACE,
	ES_T_LT,
	ES_T_GT,
	ES_T_COMMA,
	ES_T_EQ,
	ES_T_DOT,
};

struct es_token {
	uint8_t kind;
	uint32_t off, end;
};

static bool es_ident_start(unsigned char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool es_ident_char(unsigned char c)
{
	return es_ident_start(c) || (c >= '0' && c <= '9');
}

/* The token at or after pos.  Whitespace is exactly the grammar's (space,
 * tab, CR, LF), not Unicode's: the reference grammar refuses anything else, so
 * a schema that loads here loads there. */
static struct es_token es_lex(const char *src, size_t len, size_t pos)
{
	const unsigned char *s = (const unsigned char *)src;
	struct es_token t;

	for (;;) {
		while (pos < len && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\r' ||
				     s[pos] == '\n'))
			pos++;
		if (pos + 1 < len && s[pos] == '/' && s[pos + 1] == '/') {
			while (pos < len && s[pos] != '\n' && s[pos] != '\r')
				pos++;
			continue;
		}
		break;
	}
	t.off = (uint32_t)pos;
	if (pos >= len) {
		t.kind = ES_T_EOF;
		t.end = t.off;
		return t;
	}
	if (es_ident_start(s[pos])) {
		while (pos < len && es_ident_char(s[pos]))
			pos++;
		t.kind = ES_T_IDENT;
	} else if (s[pos] >= '0' && s[pos] <= '9') {
		while (pos < len && s[pos] >= '0' && s[pos] <= '9')
			pos++;
		t.kind = ES_T_INT;
	} else if (s[pos] == '.' && pos + 2 < len && s[pos + 1] == '.' && s[pos + 2] == '.') {
		pos += 3;
		t.kind = ES_T_ELLIPSIS;
	} else if (s[pos] == ':' && pos + 1 < len && s[pos + 1] == ':') {
		pos += 2;
		t.kind = ES_T_COLON2;
	} else {
		switch (s[pos++]) {
		case ':': t.kind = ES_T_COLON; break;
		case '(': t.kind = ES_T_LPAREN; break;
		case ')': t.kind = ES_T_RPAREN; break;
		case '{': t.kind = ES_T_LBRACE; break;
		case '}': t.kind = ES_T_RBRACE; break;
		case '<': t.kind = ES_T_LT; break;
		case '>': t.kind = ES_T_GT; break;
		case ',': t.kind = ES_T_COMMA; break;
		case '=': t.kind = ES_T_EQ; break;
		case '.': t.kind = ES_T_DOT; break;
		default:
			/* the whole (possibly multi-byte) character, for the message */
			while (pos < len && (s[pos] & 0xC0) == 0x80)
				pos++;
			t.kind = ES_T_BAD;
			break;
		}
	}
	t.end = (uint32_t)pos;
	return t;
}

/* ---- 4. parser -------------------------------------------------------------- */

struct es_parser {
	struct dw_evschema_src *src;
	const char *s;             /* == src->text */
	size_t len;
	struct es_token tok;
	uint32_t prev_end;         /* end of the last consumed token */
	struct dw_diags *diags;
	bool failed;               /* a diagnostic was added; keep parsing */
	int depth;                 /* `{ … }` nesting of field lists */
};

static struct dw_str es_tok_str(const struct es_parser *p, struct es_token t)
{
	return dw_str_make(p->s + t.off, t.end - t.off);
}

static void es_next(struct es_parser *p)
{
	p->prev_end = p->tok.end;
	p->tok = es_lex(p->s, p->len, p->tok.end);
}

/* The k-th token after the current one (k >= 1), without consuming. */
static struct es_token es_peek(const struct es_parser *p, int k)
{
	struct es_token t = p->tok;

	while (k-- > 0 && t.kind != ES_T_EOF)
		t = es_lex(p->s, p->len, t.end);
	return t;
}

static bool es_is_word(const struct es_parser *p, struct es_token t, const char *w)
{
	return t.kind == ES_T_IDENT && dw_str_eq_c(es_tok_str(p, t), w);
}

static int es_verror(struct es_parser *p, uint32_t off, uint32_t end, const char *fmt,
		     va_list ap)
{
	p->failed = true;
	return dw_diags_addv(p->diags, DW_SEV_ERROR, p->src->file, p->s, p->len, off, end, fmt, ap);
}

/* A syntax error: the parse stops here (what follows would only be noise).
 * Returns -EINVAL, or -ENOMEM. */
__attribute__((format(printf, 4, 5)))
static int es_error(struct es_parser *p, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = es_verror(p, off, end, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

/* A semantic error (binder, selector use, pin, duplicate name): the text
 * still parses, so the parse goes on and one run reports them all.
 * Returns 0, or -ENOMEM. */
__attribute__((format(printf, 4, 5)))
static int es_note(struct es_parser *p, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = es_verror(p, off, end, fmt, ap);
	va_end(ap);
	return r;
}

/* A syntax error at the current token: "expected …, found `x`". */
static int es_expected(struct es_parser *p, const char *what)
{
	struct es_token t = p->tok;

	if (t.kind == ES_T_EOF)
		return es_error(p, t.off, t.end, "expected %s, found end of input", what);
	if (t.kind == ES_T_BAD && ((unsigned char)p->s[t.off] < 0x20 || p->s[t.off] == 0x7F))
		return es_error(p, t.off, t.end, "unexpected control character U+%04X; expected %s",
				(unsigned char)p->s[t.off], what);
	if (t.kind == ES_T_BAD)
		return es_error(p, t.off, t.end, "unexpected character `%.*s`; expected %s",
				(int)(t.end - t.off), p->s + t.off, what);
	return es_error(p, t.off, t.end, "expected %s, found `%.*s`", what,
			(int)(t.end - t.off), p->s + t.off);
}

static int es_expect(struct es_parser *p, uint8_t kind, const char *what)
{
	if (p->tok.kind != kind)
		return es_expected(p, what);
	es_next(p);
	return 0;
}

/* `max_window = <digits><unit>` (the keyword is the current token). */
static int es_parse_max_window(struct es_parser *p)
{
	static const struct { char unit; int64_t secs; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	struct es_token num, unit;
	int64_t amount = 0, mult = 0;
	int r;

	es_next(p);
	if ((r = es_expect(p, ES_T_EQ, "`=` after `max_window`")) != 0)
		return r;
	if (p->tok.kind != ES_T_INT)
		return es_expected(p, "an interval after `max_window =`, such as `24h`");
	num = p->tok;
	es_next(p);
	unit = p->tok;
	for (size_t i = 0; i < DW_N_ELEMENTS(units); i++)
		if (unit.kind == ES_T_IDENT && unit.end - unit.off == 1 &&
		    p->s[unit.off] == units[i].unit)
			mult = units[i].secs;
	/* `24 event …`: the word after the number is not meant as a unit */
	if (unit.kind != ES_T_IDENT || (mult == 0 && unit.off != num.end))
		return es_error(p, num.off, num.end,
				"max_window `%.*s` has no time unit; write it like `24h` "
				"(units: s, m, h, d)", (int)(num.end - num.off), p->s + num.off);
	if (mult == 0)
		return es_error(p, unit.off, unit.end,
				"unknown time unit `%.*s` in max_window; expected `s`, `m`, `h` "
				"or `d`", (int)(unit.end - unit.off), p->s + unit.off);
	es_next(p);
	for (uint32_t i = num.off; i < num.end; i++) {
		if (__builtin_mul_overflow(amount, 10, &amount) ||
		    __builtin_add_overflow(amount, p->s[i] - '0', &amount)) {
			amount = -1;
			break;
		}
	}
	if (amount < 0 || __builtin_mul_overflow(amount, mult, &amount))
		return es_note(p, num.off, unit.end, "max_window amount `%.*s` is out of range",
			       (int)(unit.end - num.off), p->s + num.off);
	if (amount == 0)
		return es_note(p, num.off, unit.end,
			       "max_window must be greater than zero; a zero window would forbid "
			       "every temporal `within` clause. Omit `max_window` to use the "
			       "default cap, or set a positive interval like `max_window = 24h`");
	p->src->has_max_window = true;
	p->src->max_window_s = amount;
	return 0;
}

/* `ident { sep ident }` joined with sep into the arena ("A::B", "a.b").
 * first is the current token (an identifier). */
static int es_parse_path(struct es_parser *p, uint8_t sep_tok, const char *sep,
			 const char *what, struct dw_str *out)
{
	size_t seplen = strlen(sep), n = 0, cap = 64;
	char *buf = malloc(cap), *tmp;
	int r = 0;

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		struct dw_str w = es_tok_str(p, p->tok);

		if (n + w.n + seplen + 1 > cap) {
			while (n + w.n + seplen + 1 > cap)
				cap *= 2;
			if ((tmp = realloc(buf, cap)) == NULL) {
				r = -ENOMEM;
				goto out;
			}
			buf = tmp;
		}
		memcpy(buf + n, w.p, w.n);
		n += w.n;
		es_next(p);
		if (p->tok.kind != sep_tok)
			break;
		es_next(p);
		if (p->tok.kind != ES_T_IDENT) {
			r = es_expected(p, what);
			goto out;
		}
		memcpy(buf + n, sep, seplen);
		n += seplen;
	}
	if (n > UINT32_MAX || (out->p = dw_arena_strndup(&p->src->arena, buf, n)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	out->n = (uint32_t)n;
out:
	free(buf);
	return r;
}

/* `( binder )` after a selector; checks the binder. ctx names the position
 * for the message ("spread", "field type"). */
static int es_parse_sel_arg(struct es_parser *p, const struct es_decl *d, const char *ctx)
{
	struct es_token b;
	int r;

	if ((r = es_expect(p, ES_T_LPAREN, "`(` after the selector")) != 0)
		return r;
	if (p->tok.kind != ES_T_IDENT)
		return es_expected(p, "the action binder inside the selector's `( )`");
	b = p->tok;
	if (!dw_str_eq(es_tok_str(p, b), d->binder) &&
	    (r = es_note(p, b.off, b.end,
			 "in %s: selector argument `%.*s` does not name the declared action "
			 "binder `%.*s` (write `%.*s`)", ctx, (int)(b.end - b.off), p->s + b.off,
			 (int)d->binder.n, d->binder.p, (int)d->binder.n, d->binder.p)) != 0)
		return r;
	es_next(p);
	return es_expect(p, ES_T_RPAREN, "`)` after the selector argument");
}

/* `= principal|resource {.ident}` or `= context .ident {.ident}`; the `=` is
 * the current token. */
static int es_parse_pin_ref(struct es_parser *p, struct es_field *f)
{
	struct dw_str root;
	int r;

	es_next(p);
	if (p->tok.kind != ES_T_IDENT)
		return es_expected(p, "`principal`, `resource` or `context.<path>` after `=`");
	root = es_tok_str(p, p->tok);
	if (dw_str_eq_c(root, "principal") || dw_str_eq_c(root, "resource")) {
		f->pin = dw_str_eq_c(root, "principal") ? DW_PIN_PRINCIPAL : DW_PIN_RESOURCE;
		es_next(p);
		if (p->tok.kind != ES_T_DOT) {
			f->pin_path = dw_str_make("", 0);
			return 0;
		}
	} else if (dw_str_eq_c(root, "context")) {
		f->pin = DW_PIN_CONTEXT;
		es_next(p);
		if (p->tok.kind != ES_T_DOT)
			return es_expected(p, "`.` and a field path after `context` "
					   "(a pin names `context.<path>`)");
	} else {
		return es_expected(p, "`principal`, `resource` or `context.<path>` after `=`");
	}
	es_next(p);          /* the `.` */
	if (p->tok.kind != ES_T_IDENT)
		return es_expected(p, "an attribute name after `.`");
	if ((r = es_parse_path(p, ES_T_DOT, ".", "an attribute name after `.`", &f->pin_path)) != 0)
		return r;
	return 0;
}

static int es_parse_fields(struct es_parser *p, const struct es_decl *d, struct dw_str prefix,
			   struct es_field **out);

/* The type after `name:`. */
static int es_parse_type(struct es_parser *p, const struct es_decl *d, struct es_field *f,
			 struct dw_str path)
{
	struct es_token t = p->tok;
	uint8_t sel;
	int r;

	f->toff = t.off;
	if (t.kind == ES_T_LBRACE) {
		f->ty = ES_TY_RECORD;
		es_next(p);
		if (p->depth >= ES_MAX_NESTING)
			return es_error(p, t.off, t.end, "records nest deeper than %d levels",
					ES_MAX_NESTING);
		p->depth++;
		r = es_parse_fields(p, d, path, &f->members);
		p->depth--;
		if (r != 0)
			return r;
	} else if (t.kind == ES_T_IDENT && (sel = es_sel_by_name(es_tok_str(p, t))) != 0 &&
		   es_peek(p, 1).kind == ES_T_LPAREN) {
		f->ty = ES_TY_SEL;
		f->sel = sel;
		es_next(p);
		if ((r = es_parse_sel_arg(p, d, "field type")) != 0)
			return r;
		if ((sel == ES_SEL_INPUTS || sel == ES_SEL_OUTPUTS) &&
		    (r = es_note(p, t.off, p->prev_end,
				 "selector `%s` cannot be used as a field type (it yields a field "
				 "record, not a type); spread it with `...` instead",
				 es_sel_name(sel))) != 0)
			return r;
	} else if (t.kind == ES_T_IDENT) {
		f->ty = ES_TY_NAME;
		if ((r = es_parse_path(p, ES_T_COLON2, "::", "a type name after `::`",
				       &f->tname)) != 0)
			return r;
	} else {
		return es_expected(p, "a type (`String`, `Long`, `Bool`, an entity type, "
				   "`principalType(A)`, `resourceType(A)` or a record `{ … }`)");
	}
	f->tend = p->prev_end;
	return 0;
}

/* Check a new field against the ones already at its level: names and spread
 * groups are unique per level (docs/formats.md §3). */
static int es_check_level(struct es_parser *p, const struct es_decl *d, struct dw_str prefix,
			  const struct es_field *first, const struct es_field *f)
{
	const char *sel = es_sel_name(f->sel);
	struct dw_str name;
	char *at, *full;

	if (f->kind == ES_F_SPREAD && (f->sel == ES_SEL_PRINCIPAL || f->sel == ES_SEL_RESOURCE))
		return 0;               /* already refused; mints no group */
	name = f->kind == ES_F_SPREAD ? dw_str_c(es_sel_group(f->sel)) : f->name;
	/* for the messages: where (`<A>::kind`) and the dotted name */
	at = dw_arena_printf(&p->src->arena, "<%.*s>::%.*s", (int)d->binder.n, d->binder.p,
			     (int)d->kind.n, d->kind.p);
	full = dw_arena_printf(&p->src->arena, "%.*s%s%.*s", (int)prefix.n, prefix.p,
			       prefix.n ? "." : "", (int)name.n, name.p);
	if (at == NULL || full == NULL)
		return -ENOMEM;
	for (const struct es_field *g = first; g != NULL && g != f; g = g->next) {
		bool g_spread = g->kind == ES_F_SPREAD;

		if (g_spread && (g->sel == ES_SEL_PRINCIPAL || g->sel == ES_SEL_RESOURCE))
			continue;
		if (f->kind == ES_F_SPREAD && g_spread && g->sel == f->sel)
			return es_note(p, f->off, f->end,
				       "`...%s(%.*s)` appears twice in `%s`; the same spread may "
				       "appear only once per level (it would mint the `%s` group "
				       "twice)", sel, (int)d->binder.n, d->binder.p, at, full);
		if (f->kind == ES_F_SPREAD && !g_spread && dw_str_eq(g->name, name))
			return es_note(p, f->off, f->end,
				       "the `%s` field group produced by `...%s(%.*s)` (on `%s`) "
				       "collides with another field named `%.*s`; a spread group "
				       "and a named field may not share a name", full, sel,
				       (int)d->binder.n, d->binder.p, at, (int)name.n, name.p);
		if (f->kind == ES_F_NAMED && g_spread && dw_str_eq_c(name, es_sel_group(g->sel)))
			return es_note(p, f->off, f->end,
				       "event-schema field `%s` (injected on `%s`) collides with "
				       "the `%.*s` field group produced by a spread; a named "
				       "field may not shadow a spread group", full, at,
				       (int)name.n, name.p);
		if (f->kind == ES_F_NAMED && !g_spread && dw_str_eq(g->name, name))
			return es_note(p, f->off, f->end,
				       "event-schema field `%s` is defined more than once on `%s`; "
				       "field names must be unique at each level", full, at);
	}
	return 0;
}

/* `...sel(A)` (the current token is the `...`). */
static int es_parse_spread(struct es_parser *p, const struct es_decl *d, struct es_field *f)
{
	struct es_token t;
	int r;

	f->kind = ES_F_SPREAD;
	f->off = p->tok.off;
	es_next(p);
	t = p->tok;
	if (t.kind != ES_T_IDENT || (f->sel = es_sel_by_name(es_tok_str(p, t))) == 0) {
		if (t.kind == ES_T_IDENT)
			return es_error(p, t.off, t.end,
					"unknown selector `%.*s`; expected `inputs`, `outputs`, "
					"`principalType` or `resourceType`", (int)(t.end - t.off),
					p->s + t.off);
		return es_expected(p, "a selector after `...` (`inputs` or `outputs`)");
	}
	es_next(p);
	if ((r = es_parse_sel_arg(p, d, "spread")) != 0)
		return r;
	f->end = p->prev_end;
	if (f->sel == ES_SEL_PRINCIPAL || f->sel == ES_SEL_RESOURCE)
		return es_note(p, f->off, f->end,
			       "selector `%s` cannot be spread (it yields entity types, not a "
			       "field record); use it as a field type instead",
			       es_sel_name(f->sel));
	return 0;
}

/* `[pin] name: type [= ref]` (the current token is an identifier). */
static int es_parse_named(struct es_parser *p, const struct es_decl *d, struct dw_str prefix,
			  struct es_field *f)
{
	struct dw_str path;
	bool marked = false;
	int r;

	f->kind = ES_F_NAMED;
	/* `pin` is the prefix only when `ident :` follows, so a field may be
	 * named `pin` (`pin: String`, `pin pin: T = …`). */
	if (es_is_word(p, p->tok, "pin") && es_peek(p, 1).kind == ES_T_IDENT &&
	    es_peek(p, 2).kind == ES_T_COLON) {
		marked = true;
		es_next(p);
	}
	f->name = es_tok_str(p, p->tok);
	f->off = p->tok.off;
	f->end = p->tok.end;
	es_next(p);
	if (p->tok.kind != ES_T_COLON)
		return es_expected(p, "`:` and a type after the field name");
	es_next(p);
	if (prefix.n) {
		char *s = dw_arena_printf(&p->src->arena, "%.*s.%.*s", (int)prefix.n, prefix.p,
					  (int)f->name.n, f->name.p);
		if (s == NULL)
			return -ENOMEM;
		path = dw_str_c(s);
	} else {
		path = f->name;
	}
	if ((r = es_parse_type(p, d, f, path)) != 0)
		return r;
	if (p->tok.kind == ES_T_EQ && (r = es_parse_pin_ref(p, f)) != 0)
		return r;

	if (marked && f->pin == DW_PIN_NONE)
		return es_note(p, f->off, f->end,
			       "pinned field `%.*s` is missing its pin value; write `pin %.*s: "
			       "<type> = context.<...>`", (int)path.n, path.p,
			       (int)f->name.n, f->name.p);
	if (!marked && f->pin != DW_PIN_NONE)
		return es_note(p, f->off, f->end,
			       "field `%.*s` has a `= context.<...>` value but is not marked "
			       "`pin`; write `pin %.*s: <type> = …`", (int)path.n, path.p,
			       (int)f->name.n, f->name.p);
	if (f->pin != DW_PIN_NONE && f->ty == ES_TY_RECORD)
		return es_note(p, f->off, f->end,
			       "field `%.*s` is a record group and cannot be pinned; pin a leaf "
			       "field inside it instead", (int)path.n, path.p);
	return 0;
}

/* Fields up to and including the closing `}` (the `{` is consumed).
 * prefix is the dotted path of the enclosing record ("" at the top). */
static int es_parse_fields(struct es_parser *p, const struct es_decl *d, struct dw_str prefix,
			   struct es_field **out)
{
	struct es_field *first = NULL, **tail = &first, *f;
	int r;

	for (;;) {
		if (p->tok.kind == ES_T_RBRACE) {
			es_next(p);
			break;
		}
		if ((f = DW_NEW(&p->src->arena, struct es_field)) == NULL)
			return -ENOMEM;
		if (p->tok.kind == ES_T_ELLIPSIS)
			r = es_parse_spread(p, d, f);
		else if (p->tok.kind == ES_T_IDENT)
			r = es_parse_named(p, d, prefix, f);
		else
			return es_expected(p, "a field (`name: Type` or `...inputs(A)`) or `}`");
		if (r != 0)
			return r;
		*tail = f;
		tail = &f->next;
		if ((r = es_check_level(p, d, prefix, first, f)) != 0)
			return r;
		if (p->tok.kind == ES_T_COMMA) {
			es_next(p);
		} else if (p->tok.kind != ES_T_RBRACE) {
			return es_expected(p, "`,` or `}` after the field");
		}
	}
	*out = first;
	return 0;
}

/* `[decision] event <A>::kind { fields }` (the current token is `decision`
 * or `event`). */
static int es_parse_decl(struct es_parser *p, struct es_decl **tail)
{
	struct es_decl *d = DW_NEW(&p->src->arena, struct es_decl);
	int r;

	if (d == NULL)
		return -ENOMEM;
	if (es_is_word(p, p->tok, "decision")) {
		d->decision = true;
		es_next(p);
		if (!es_is_word(p, p->tok, "event"))
			return es_expected(p, "`event` after `decision`");
	}
	es_next(p);
	if ((r = es_expect(p, ES_T_LT, "`<` and the action binder after `event` "
				       "(as in `event <A>::request { … }`)")) != 0)
		return r;
	if (p->tok.kind != ES_T_IDENT)
		return es_expected(p, "the action binder name after `<`");
	d->binder = es_tok_str(p, p->tok);
	es_next(p);
	if ((r = es_expect(p, ES_T_GT, "`>` after the action binder")) != 0 ||
	    (r = es_expect(p, ES_T_COLON2, "`::` and the event kind after the binder")) != 0)
		return r;
	if (p->tok.kind != ES_T_IDENT)
		return es_expected(p, "the event kind name after `::`");
	d->kind = es_tok_str(p, p->tok);
	d->off = p->tok.off;
	d->end = p->tok.end;
	es_next(p);
	if ((r = es_expect(p, ES_T_LBRACE, "`{` after the event kind (the body is mandatory; "
					   "write `{}` for an event without fields)")) != 0)
		return r;
	if ((r = es_parse_fields(p, d, dw_str_make("", 0), &d->fields)) != 0)
		return r;

	for (const struct es_decl *o = p->src->decls; o != NULL; o = o->next) {
		uint32_t line = 1, col = 1;

		if (!dw_str_eq(o->kind, d->kind))
			continue;
		for (uint32_t i = 0; i < o->off; i++) {
			if (p->s[i] == '\n')
				line++, col = 1;
			else if (((unsigned char)p->s[i] & 0xC0) != 0x80)
				col++;
		}
		if ((r = es_note(p, d->off, d->end,
				 "event kind `%.*s` is declared more than once (first at line %u, "
				 "column %u); each kind has exactly one declaration",
				 (int)d->kind.n, d->kind.p, line, col)) != 0)
			return r;
		break;
	}
	*tail = d;
	p->src->n_decls++;
	return 0;
}

/* The whole text, from p->tok.end (0, or past a byte-order mark). */
static int es_parse(struct es_parser *p)
{
	struct es_decl **tail = &p->src->decls;
	int r;

	p->tok = es_lex(p->s, p->len, p->tok.end);
	if (es_is_word(p, p->tok, "max_window") && (r = es_parse_max_window(p)) != 0)
		return r;
	while (p->tok.kind != ES_T_EOF) {
		if (es_is_word(p, p->tok, "max_window"))
			return es_error(p, p->tok.off, p->tok.end,
					p->src->decls == NULL
					? "`max_window` is set more than once; set it once, at the "
					"top of the file"
					: "`max_window` must come first, before every event "
					"declaration");
		if (!es_is_word(p, p->tok, "event") && !es_is_word(p, p->tok, "decision"))
			return es_expected(p, "an event declaration (`event <A>::kind { … }` or "
					   "`decision event <A>::kind { … }`)");
		if ((r = es_parse_decl(p, tail)) != 0)
			return r;
		tail = &(*tail)->next;
	}
	/* An explicitly supplied schema without events has no decision kind:
	 * nothing could ever be authorized.  Omitting it means the default. */
	if (p->src->n_decls == 0 && !p->failed)
		return es_error(p, 0, 0,
				"the event schema declares no events, so no event could ever be "
				"decided; declare at least one `decision event <A>::kind { … }`, "
				"or omit the event schema to use the default");
	return p->failed ? -EINVAL : 0;
}

void dw_evschema_src_free(struct dw_evschema_src *src)
{
	if (src == NULL)
		return;
	dw_arena_fini(&src->arena);
	free(src);
}

int dw_evschema_parse(const char *file, const char *text, size_t len,
		      struct dw_evschema_src **out, struct dw_diags *diags)
{
	struct dw_evschema_src *src;
	struct es_parser p;
	size_t bad;
	char *copy;
	int r;

	if (file == NULL)
		file = "";
	if (text == NULL && len != 0)
		return -EINVAL;
	if (len >= UINT32_MAX) {
		r = dw_diags_add(diags, DW_SEV_ERROR, file, NULL, 0, 0, 0,
				 "event schema is too large (%zu bytes)", len);
		return r < 0 ? r : -EINVAL;
	}
	if (len > 0 && !dw_utf8_valid(text, len, &bad)) {
		r = dw_diags_add(diags, DW_SEV_ERROR, file, text, len, bad, bad + 1,
				 "event schema is not valid UTF-8 (byte 0x%02x at offset %zu)",
				 (unsigned char)text[bad], bad);
		return r < 0 ? r : -EINVAL;
	}
	if ((src = calloc(1, sizeof *src)) == NULL)
		return -ENOMEM;
	dw_arena_init(&src->arena);
	copy = dw_arena_strndup(&src->arena, len ? text : "", len);
	src->file = dw_arena_strdup(&src->arena, file);
	if (copy == NULL || src->file == NULL) {
		dw_evschema_src_free(src);
		return -ENOMEM;
	}
	src->text = copy;
	src->len = len;
	memset(&p, 0, sizeof p);
	p.src = src;
	p.s = copy;
	p.len = len;
	p.diags = diags;
	/* A byte-order mark is skipped, not removed: columns stay counted from
	 * the file's first byte. */
	if (len >= 3 && memcmp(copy, "\xEF\xBB\xBF", 3) == 0)
		p.tok.end = 3;
	r = es_parse(&p);
	if (r != 0) {
		dw_evschema_src_free(src);
		return r;
	}
	*out = src;
	return 0;
}

int dw_evschema_default(struct dw_evschema_src **out)
{
	struct dw_diags d;
	int r;

	dw_diags_init(&d);
	r = dw_evschema_parse(ES_DEFAULT_FILE, dw_evschema_default_text,
			      sizeof dw_evschema_default_text - 1, out, &d);
	dw_diags_fini(&d);
	/* the text is fixed and covered by the unit tests: only ENOMEM remains */
	return r == 0 ? 0 : -ENOMEM;
}

/* ---- 5. derivation ------------------------------------------------------------ */

static const struct dw_type es_t_bool = { .kind = DW_T_BOOL };
static const struct dw_type es_t_long = { .kind = DW_T_LONG };
static const struct dw_type es_t_string = { .kind = DW_T_STRING };
static const struct dw_type es_t_ipaddr = { .kind = DW_T_EXT, .ext = DW_EXT_IPADDR };
static const struct dw_type es_t_decimal = { .kind = DW_T_EXT, .ext = DW_EXT_DECIMAL };
static const struct dw_type es_t_datetime = { .kind = DW_T_EXT, .ext = DW_EXT_DATETIME };
static const struct dw_type es_t_duration = { .kind = DW_T_EXT, .ext = DW_EXT_DURATION };

static const struct {
	const char *name;
	const struct dw_type *type;
} es_builtins[] = {
	{ "Bool", &es_t_bool },
	{ "Long", &es_t_long },
	{ "String", &es_t_string },
	{ "ipaddr", &es_t_ipaddr },
	{ "decimal", &es_t_decimal },
	{ "datetime", &es_t_datetime },
	{ "duration", &es_t_duration },
};

/* A growable path buffer: "input.meta" while descending. */
struct es_path {
	char *p;
	size_t n, cap;
};

struct es_derive {
	const struct dw_evschema_src *src;
	const struct dw_schema *s;
	struct dw_evschema *es;
	struct dw_diags *diags;
	const struct dw_action *a;
	const char *aname;               /* `Box::Action::"fs:read"`, for messages */
	const struct es_decl *d;
	struct dw_str action_ns;         /* "Box" for Box::Action; "" for Action */
	struct es_path path;
	struct es_path scratch;          /* qualified type names */
	struct dw_evfield *leaves;       /* scratch for the event being built */
	size_t n_leaves, cap_leaves;
	struct dw_str *groups;
	size_t n_groups, cap_groups;
	size_t nodes;                    /* leaves + groups so far (budget) */
	const struct dw_type **etype_as_type;   /* by dw_etype.index, lazily */
};

__attribute__((format(printf, 4, 5)))
static int es_derive_error(struct es_derive *dv, uint32_t off, uint32_t end, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = dw_diags_addv(dv->diags, DW_SEV_ERROR, dv->src->file, dv->src->text, dv->src->len,
			  off, end, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

static int es_buf_put(struct es_path *b, const char *p, size_t n)
{
	size_t need, cap;
	char *q;

	if (__builtin_add_overflow(b->n, n, &need) || need > UINT32_MAX)
		return -ENOMEM;
	if (need > b->cap) {
		for (cap = b->cap ? b->cap : 128; cap < need; cap *= 2)
			;
		if ((q = realloc(b->p, cap)) == NULL)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n = need;
	return 0;
}

/* Append ".name" (or "name" at the top); *old is the length to pop back to. */
static int es_path_push(struct es_path *pa, struct dw_str name, size_t *old)
{
	int r;

	*old = pa->n;
	if (pa->n && (r = es_buf_put(pa, ".", 1)) != 0)
		return r;
	return es_buf_put(pa, name.p, name.n);
}

static int es_count_node(struct es_derive *dv, uint32_t off, uint32_t end)
{
	if (++dv->nodes <= ES_MAX_EVENT_NODES)
		return 0;
	return es_derive_error(dv, off, end,
			       "event `%s::%.*s` would have more than %d fields and groups; the "
			       "action schema likely has a type whose nesting fans out "
			       "exponentially", dv->aname, (int)dv->d->kind.n, dv->d->kind.p,
			       ES_MAX_EVENT_NODES);
}

static struct dw_str es_path_keep(struct es_derive *dv)
{
	char *s = dw_arena_strndup(&dv->es->arena, dv->path.p ? dv->path.p : "", dv->path.n);

	return s ? dw_str_make(s, dv->path.n) : dw_str_make(NULL, 0);
}

static int es_add_group(struct es_derive *dv, uint32_t off, uint32_t end)
{
	struct dw_str *v;
	int r;

	if ((r = es_count_node(dv, off, end)) != 0)
		return r;
	if (dv->n_groups == dv->cap_groups) {
		size_t cap = dv->cap_groups ? dv->cap_groups * 2 : 16;

		if ((v = realloc(dv->groups, cap * sizeof *v)) == NULL)
			return -ENOMEM;
		dv->groups = v;
		dv->cap_groups = cap;
	}
	v = &dv->groups[dv->n_groups];
	*v = es_path_keep(dv);
	if (v->p == NULL)
		return -ENOMEM;
	dv->n_groups++;
	return 0;
}

/* A leaf at the current path; its type is filled in by the caller. */
static int es_add_leaf(struct es_derive *dv, uint32_t off, uint32_t end, struct dw_evfield **out)
{
	struct dw_evfield *f;
	int r;

	if ((r = es_count_node(dv, off, end)) != 0)
		return r;
	if (dv->n_leaves == dv->cap_leaves) {
		size_t cap = dv->cap_leaves ? dv->cap_leaves * 2 : 16;

		if ((f = realloc(dv->leaves, cap * sizeof *f)) == NULL)
			return -ENOMEM;
		dv->leaves = f;
		dv->cap_leaves = cap;
	}
	f = &dv->leaves[dv->n_leaves];
	memset(f, 0, sizeof *f);
	f->path = es_path_keep(dv);
	if (f->path.p == NULL)
		return -ENOMEM;
	f->pin_path = dw_str_make("", 0);
	dv->n_leaves++;
	*out = f;
	return 0;
}

/* The members of a record from the action schema, under the current path:
 * records become groups, everything else (Set, entity, extension, …) a leaf.
 * A member is optional when it or any record above it is.  off/end locate
 * the spread that brought them in. */
static int es_splice(struct es_derive *dv, const struct dw_type *rec, bool optional,
		     uint32_t off, uint32_t end)
{
	for (uint32_t i = 0; i < rec->rec.n; i++) {
		const struct dw_attr *at = &rec->rec.v[i];
		bool opt = optional || !at->required;
		struct dw_evfield *f;
		size_t old;
		int r;

		if ((r = es_path_push(&dv->path, at->name, &old)) != 0)
			return r;
		if (at->type->kind == DW_T_RECORD) {
			/* dw_schema_finish bounds the depth of every type, so this
			 * recursion is bounded too; the node budget bounds the width. */
			if ((r = es_add_group(dv, off, end)) != 0 ||
			    (r = es_splice(dv, at->type, opt, off, end)) != 0)
				return r;
		} else {
			if ((r = es_add_leaf(dv, off, end, &f)) != 0)
				return r;
			f->type = at->type;
			f->optional = opt;
		}
		dv->path.n = old;
	}
	return 0;
}

static const struct dw_attr *es_record_attr(const struct dw_type *rec, const char *name)
{
	struct dw_str key = dw_str_c(name);
	uint32_t lo = 0, hi = rec->rec.n;

	while (lo < hi) {               /* attributes are sorted by name */
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(rec->rec.v[mid].name, key);

		if (c == 0)
			return &rec->rec.v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* `...inputs(A)` / `...outputs(A)`: the group `input` / `output`, filled from
 * `context.input` / `context.output`.  The group exists even when the action
 * has no such attribute (the spread then adds no leaf), so which names a
 * level holds never depends on the action. */
static int es_derive_spread(struct es_derive *dv, const struct es_field *f)
{
	const char *attr = f->sel == ES_SEL_INPUTS ? "input" : "output";
	const struct dw_attr *at = NULL;
	size_t old;
	int r;

	if ((r = es_path_push(&dv->path, dw_str_c(es_sel_group(f->sel)), &old)) != 0 ||
	    (r = es_add_group(dv, f->off, f->end)) != 0)
		return r;
	if (dv->a->context != NULL && dv->a->context->kind == DW_T_RECORD)
		at = es_record_attr(dv->a->context, attr);
	if (at != NULL) {
		if (at->type->kind != DW_T_RECORD)
			return es_derive_error(dv, f->off, f->end,
					       "`...%s(%.*s)` on action `%s`: `context.%s` is not "
					       "a record, so it has no fields to spread",
					       es_sel_name(f->sel), (int)dv->d->binder.n,
					       dv->d->binder.p, dv->aname, attr);
		if ((r = es_splice(dv, at->type, !at->required, f->off, f->end)) != 0)
			return r;
	}
	dv->path.n = old;
	return 0;
}

static const struct dw_type *es_entity_type(struct es_derive *dv, const struct dw_etype *e)
{
	struct dw_type *t;

	if (dv->etype_as_type[e->index] != NULL)
		return dv->etype_as_type[e->index];
	if ((t = DW_NEW(&dv->es->arena, struct dw_type)) == NULL)
		return NULL;
	t->kind = DW_T_ENTITY;
	t->entity = e;
	dv->etype_as_type[e->index] = t;
	return t;
}

/* A type name of the .dwschema.  Cedar's order: an entity type (a bare name
 * in the action's namespace first, then as written) before a built-in;
 * `__cedar::X` always means the built-in. *t is NULL when nothing matches. */
static int es_resolve_name(struct es_derive *dv, struct dw_str name, const struct dw_type **t)
{
	static const char pfx[] = "__cedar::";
	const struct dw_etype *e = NULL;
	struct dw_str base = name;
	bool qualified = false;

	*t = NULL;
	for (uint32_t i = 0; i + 1 < name.n; i++)
		if (name.p[i] == ':' && name.p[i + 1] == ':')
			qualified = true;
	if (name.n > sizeof pfx - 1 && memcmp(name.p, pfx, sizeof pfx - 1) == 0) {
		base = dw_str_make(name.p + sizeof pfx - 1, name.n - (sizeof pfx - 1));
		qualified = false;
	} else {
		if (!qualified && dv->action_ns.n) {
			struct es_path *b = &dv->scratch;
			int r;

			b->n = 0;
			if ((r = es_buf_put(b, dv->action_ns.p, dv->action_ns.n)) != 0 ||
			    (r = es_buf_put(b, "::", 2)) != 0 ||
			    (r = es_buf_put(b, name.p, name.n)) != 0)
				return r;
			e = dw_schema_find_etype(dv->s, dw_str_make(b->p, b->n));
		}
		if (e == NULL)
			e = dw_schema_find_etype(dv->s, name);
		if (e != NULL)
			return (*t = es_entity_type(dv, e)) == NULL ? -ENOMEM : 0;
		if (qualified)
			return 0;
	}
	for (size_t i = 0; i < DW_N_ELEMENTS(es_builtins); i++)
		if (dw_str_eq_c(base, es_builtins[i].name))
			*t = es_builtins[i].type;
	return 0;
}

static int es_derive_fields(struct es_derive *dv, const struct es_field *fields);

static int es_derive_named(struct es_derive *dv, const struct es_field *f)
{
	struct dw_evfield *leaf;
	const struct dw_type *t = NULL;
	size_t old;
	int r;

	if ((r = es_path_push(&dv->path, f->name, &old)) != 0)
		return r;
	if (f->ty == ES_TY_RECORD) {
		if ((r = es_add_group(dv, f->off, f->end)) != 0 ||
		    (r = es_derive_fields(dv, f->members)) != 0)
			return r;
		dv->path.n = old;
		return 0;
	}
	if (f->ty == ES_TY_NAME) {
		if ((r = es_resolve_name(dv, f->tname, &t)) != 0)
			return r;
		if (t == NULL)
			return es_derive_error(dv, f->toff, f->tend,
					       "unknown type `%.*s` for field `%.*s` of "
					       "`<%.*s>::%.*s` (action `%s`): not Bool, Long, "
					       "String, an extension type or an entity type of "
					       "the action schema", (int)f->tname.n, f->tname.p,
					       (int)dv->path.n, dv->path.p, (int)dv->d->binder.n,
					       dv->d->binder.p, (int)dv->d->kind.n, dv->d->kind.p,
					       dv->aname);
	}
	if ((r = es_add_leaf(dv, f->off, f->end, &leaf)) != 0)
		return r;
	if (f->ty == ES_TY_NAME) {
		leaf->type = t;
	} else if (f->sel == ES_SEL_PRINCIPAL) {
		/* the whole appliesTo set, kept whole; empty for an action
		 * without appliesTo (it applies to no request) */
		leaf->n_etypes = dv->a->n_principals;
		leaf->etypes = dv->a->principals;
	} else {
		leaf->n_etypes = dv->a->n_resources;
		leaf->etypes = dv->a->resources;
	}
	leaf->pin = f->pin;
	if (f->pin != DW_PIN_NONE) {
		char *s = dw_arena_strndup(&dv->es->arena, f->pin_path.p ? f->pin_path.p : "",
					   f->pin_path.n);

		if (s == NULL)
			return -ENOMEM;
		leaf->pin_path = dw_str_make(s, f->pin_path.n);
	}
	dv->path.n = old;
	return 0;
}

static int es_derive_fields(struct es_derive *dv, const struct es_field *fields)
{
	int r;

	for (const struct es_field *f = fields; f != NULL; f = f->next) {
		r = f->kind == ES_F_SPREAD ? es_derive_spread(dv, f) : es_derive_named(dv, f);
		if (r != 0)
			return r;
	}
	return 0;
}

static int es_cmp_field(const void *a, const void *b)
{
	const struct dw_evfield *x = a, *y = b;

	return dw_str_cmp(x->path, y->path);
}

static int es_cmp_str(const void *a, const void *b)
{
	return dw_str_cmp(*(const struct dw_str *)a, *(const struct dw_str *)b);
}

static bool es_str_in(const struct dw_str *v, size_t n, struct dw_str key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(v[mid], key);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* One (action, declaration) event. */
static int es_derive_one(struct es_derive *dv, struct dw_evdecl **out)
{
	struct dw_evdecl *e;
	struct dw_evfield *fields;
	struct dw_str *groups, dup = { NULL, 0 };
	int r;

	dv->n_leaves = dv->n_groups = dv->nodes = 0;
	dv->path.n = 0;
	if ((r = es_derive_fields(dv, dv->d->fields)) != 0)
		return r;
	if (dv->n_leaves)
		qsort(dv->leaves, dv->n_leaves, sizeof *dv->leaves, es_cmp_field);
	if (dv->n_groups)
		qsort(dv->groups, dv->n_groups, sizeof *dv->groups, es_cmp_str);
	/* The .dwschema's names are unique per level, but Cedar attribute names
	 * may hold a `.`: `"a.b"` next to `a: { b }` would give two fields one
	 * dotted path, and a predicate could not say which it means. */
	for (size_t i = 1; i < dv->n_leaves && dup.p == NULL; i++)
		if (dw_str_eq(dv->leaves[i - 1].path, dv->leaves[i].path))
			dup = dv->leaves[i].path;
	for (size_t i = 1; i < dv->n_groups && dup.p == NULL; i++)
		if (dw_str_eq(dv->groups[i - 1], dv->groups[i]))
			dup = dv->groups[i];
	for (size_t i = 0; i < dv->n_leaves && dup.p == NULL; i++)
		if (es_str_in(dv->groups, dv->n_groups, dv->leaves[i].path))
			dup = dv->leaves[i].path;
	if (dup.p != NULL)
		return es_derive_error(dv, dv->d->off, dv->d->end,
				       "event `%s::%.*s` has two fields or groups at path `%.*s` "
				       "(an attribute name of the action schema contains `.`); "
				       "field paths must be unique", dv->aname, (int)dv->d->kind.n,
				       dv->d->kind.p, (int)dup.n, dup.p);

	e = DW_NEW(&dv->es->arena, struct dw_evdecl);
	fields = DW_NEWN(&dv->es->arena, struct dw_evfield, dv->n_leaves ? dv->n_leaves : 1);
	groups = DW_NEWN(&dv->es->arena, struct dw_str, dv->n_groups ? dv->n_groups : 1);
	if (e == NULL || fields == NULL || groups == NULL)
		return -ENOMEM;
	if (dv->n_leaves)
		memcpy(fields, dv->leaves, dv->n_leaves * sizeof *fields);
	if (dv->n_groups)
		memcpy(groups, dv->groups, dv->n_groups * sizeof *groups);
	e->action = dv->a;
	e->ns = dv->a->type;
	e->id = dv->a->id;
	e->decision = dv->d->decision;
	e->n_fields = (uint32_t)dv->n_leaves;
	e->fields = fields;
	e->n_groups = (uint32_t)dv->n_groups;
	e->groups = groups;
	*out = e;
	return 0;
}

/* ---- 6. universal symmetric pins, the lookup table, dw_evschema_derive --------- */

struct dw_evschema_tables {
	uint32_t mask;
	uint32_t *slots;                 /* 1 + index into decls; 0 = empty */
};

static uint64_t es_key_hash(struct dw_str ns, struct dw_str id, struct dw_str kind)
{
	return dw_hash_str(kind, dw_hash_str(id, dw_hash_str(ns, 0x65767363ULL)));
}

static int es_build_table(struct dw_evschema *es)
{
	struct dw_evschema_tables *t = DW_NEW(&es->arena, struct dw_evschema_tables);
	uint32_t size = 8;

	if (t == NULL)
		return -ENOMEM;
	while (size < 2u * es->n_decls) {
		if (size > UINT32_MAX / 4)
			return -ENOMEM;
		size *= 2;
	}
	if ((t->slots = dw_arena_zalloc(&es->arena, size * sizeof *t->slots,
					_Alignof(uint32_t))) == NULL)
		return -ENOMEM;
	t->mask = size - 1;
	for (uint32_t i = 0; i < es->n_decls; i++) {
		const struct dw_evdecl *d = es->decls[i];
		uint32_t h = (uint32_t)es_key_hash(d->ns, d->id, d->kind) & t->mask;

		while (t->slots[h] != 0)
			h = (h + 1) & t->mask;
		t->slots[h] = i + 1;
	}
	es->t = t;
	return 0;
}

/* Is the pin of f its own request path (docs/formats.md §3)?  `= context.<its path>`, or
 * the reserved scope aliases callerPrincipal = principal and
 * callerResource = resource (`= context.principal` is a context field named
 * principal, not the scope entity). */
static bool es_pin_symmetric(const struct dw_evfield *f)
{
	switch (f->pin) {
	case DW_PIN_CONTEXT:
		return dw_str_eq(f->pin_path, f->path);
	case DW_PIN_PRINCIPAL:
		return f->pin_path.n == 0 && dw_str_eq_c(f->path, "callerPrincipal");
	case DW_PIN_RESOURCE:
		return f->pin_path.n == 0 && dw_str_eq_c(f->path, "callerResource");
	}
	return false;
}

/* The pins declared identically on every derived event and symmetric. */
static int es_key_fields(struct dw_evschema *es)
{
	const struct dw_evdecl *d0;
	struct dw_evfield *v;
	uint32_t n = 0;

	if (es->n_decls == 0)
		return 0;       /* nothing is universally pinned over no events */
	d0 = es->decls[0];
	if ((v = DW_NEWN(&es->arena, struct dw_evfield, d0->n_fields ? d0->n_fields : 1)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < d0->n_fields; i++) {
		const struct dw_evfield *f = &d0->fields[i];
		bool all = es_pin_symmetric(f);

		for (uint32_t k = 1; k < es->n_decls && all; k++) {
			const struct dw_evfield *g = dw_evdecl_field(es->decls[k], f->path);

			all = g != NULL && g->pin == f->pin && dw_str_eq(g->pin_path, f->pin_path);
		}
		if (all)
			v[n++] = *f;
	}
	es->n_key_fields = n;
	es->key_fields = v;
	return 0;
}

void dw_evschema_free(struct dw_evschema *es)
{
	if (es == NULL)
		return;
	dw_arena_fini(&es->arena);
	free(es);
}

int dw_evschema_derive(const struct dw_evschema_src *src, const struct dw_schema *actions,
		       struct dw_evschema **out, struct dw_diags *diags)
{
	struct es_derive dv;
	struct dw_evschema *es;
	const struct dw_evdecl **decls;
	struct dw_str *kinds;
	bool *decides;
	size_t n_decls;
	uint32_t k;
	int r;

	if (src == NULL || actions == NULL)
		return -EINVAL;
	if (!actions->finished) {
		r = dw_diags_add(diags, DW_SEV_ERROR, src->file, NULL, 0, 0, 0,
				 "event schema: the action schema is not finished");
		return r < 0 ? r : -EINVAL;
	}
	if (__builtin_mul_overflow((size_t)actions->n_actions, (size_t)src->n_decls, &n_decls) ||
	    n_decls > UINT32_MAX / 4)
		return -ENOMEM;
	if ((es = calloc(1, sizeof *es)) == NULL)
		return -ENOMEM;
	dw_arena_init(&es->arena);
	memset(&dv, 0, sizeof dv);
	dv.src = src;
	dv.s = actions;
	dv.es = es;
	dv.diags = diags;
	r = -ENOMEM;
	if ((dv.etype_as_type = calloc(actions->n_etypes ? actions->n_etypes : 1,
				       sizeof *dv.etype_as_type)) == NULL)
		goto out;

	es->max_window_s = src->has_max_window ? src->max_window_s : DW_DEFAULT_MAX_WINDOW_S;
	kinds = DW_NEWN(&es->arena, struct dw_str, src->n_decls ? src->n_decls : 1);
	decides = DW_NEWN(&es->arena, bool, src->n_decls ? src->n_decls : 1);
	decls = DW_NEWN(&es->arena, const struct dw_evdecl *, n_decls ? n_decls : 1);
	if (kinds == NULL || decides == NULL || decls == NULL)
		goto out;
	k = 0;
	for (const struct es_decl *d = src->decls; d != NULL; d = d->next, k++) {
		char *s = dw_arena_strndup(&es->arena, d->kind.p, d->kind.n);

		if (s == NULL)
			goto out;
		kinds[k] = dw_str_make(s, d->kind.n);
		decides[k] = d->decision;
	}
	es->n_kinds = src->n_decls;
	es->kinds = kinds;
	es->kind_decides = decides;

	for (uint32_t i = 0; i < actions->n_actions; i++) {
		const struct dw_action *a = actions->actions[i];
		struct dw_str ns = a->type;

		/* "Box::Action" -> "Box"; "Action" -> "" */
		ns.n = ns.n >= 8 ? ns.n - 8 : 0;
		dv.a = a;
		dv.action_ns = ns;
		dv.aname = dw_arena_printf(&es->arena, "%.*s::\"%.*s\"", (int)a->type.n, a->type.p,
					   (int)a->id.n, a->id.p);
		if (dv.aname == NULL) {
			r = -ENOMEM;
			goto out;
		}
		k = 0;
		for (const struct es_decl *d = src->decls; d != NULL; d = d->next, k++) {
			struct dw_evdecl *e = NULL;

			dv.d = d;
			if ((r = es_derive_one(&dv, &e)) != 0)
				goto out;
			e->kind = kinds[k];
			e->index = es->n_decls;
			decls[es->n_decls++] = e;
		}
	}
	es->decls = decls;
	if ((r = es_build_table(es)) != 0 || (r = es_key_fields(es)) != 0)
		goto out;
	r = 0;
out:
	free(dv.etype_as_type);
	free(dv.leaves);
	free(dv.groups);
	free(dv.path.p);
	free(dv.scratch.p);
	if (r != 0) {
		dw_evschema_free(es);
		return r;
	}
	*out = es;
	return 0;
}

/* ---- 7. lookups ---------------------------------------------------------------- */

const struct dw_evdecl *dw_evschema_find(const struct dw_evschema *es, struct dw_str ns,
					 struct dw_str id, struct dw_str kind)
{
	const struct dw_evschema_tables *t;
	uint32_t h;

	if (es == NULL || (t = es->t) == NULL)
		return NULL;
	for (h = (uint32_t)es_key_hash(ns, id, kind) & t->mask; t->slots[h] != 0;
	     h = (h + 1) & t->mask) {
		const struct dw_evdecl *d = es->decls[t->slots[h] - 1];

		if (dw_str_eq(d->kind, kind) && dw_str_eq(d->id, id) && dw_str_eq(d->ns, ns))
			return d;
	}
	return NULL;
}

const struct dw_evfield *dw_evdecl_field(const struct dw_evdecl *d, struct dw_str path)
{
	uint32_t lo = 0, hi;

	if (d == NULL)
		return NULL;
	for (hi = d->n_fields; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = dw_str_cmp(d->fields[mid].path, path);

		if (c == 0)
			return &d->fields[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool dw_evdecl_is_group(const struct dw_evdecl *d, struct dw_str path)
{
	return d != NULL && es_str_in(d->groups, d->n_groups, path);
}

bool dw_evschema_decides(const struct dw_evschema *es, struct dw_str kind)
{
	if (es == NULL)
		return false;
	for (uint32_t i = 0; i < es->n_kinds; i++)
		if (dw_str_eq(es->kinds[i], kind))
			return es->kind_decides[i];
	return false;
}
