/* toml.c - a strict TOML 1.0 reader; the contract is in toml.h.
 *
 * Divisions, in order:
 *   arena          every node, key and string of a document, freed at once
 *   parser state   cursor with line/column, first-error reporting, UTF-8
 *   tables         key index, the table kinds that decide what may be redefined
 *   keys           bare, quoted and dotted keys; header and key/value resolution
 *   strings        the four string forms
 *   numbers, dates integers, floats, offset/local date-times, dates, times
 *   values         arrays, inline tables, dispatch
 *   document       the line loop, toml_parse/toml_free/toml_get
 *   test JSON      the toml-test encoding, for the differential test
 *
 * Redefinition rules hinge on how a table came to be (enum how): a header
 * defines a table once; a header path creates its prefixes implicitly, and
 * one later header may still define them; dotted keys create tables that only
 * further dotted keys of the same key/value block may extend (headers may add
 * sub-tables under them, never redefine them); inline tables are closed.
 * Static arrays (literals) and arrays of tables ([[x]]) differ the same way. */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

#define TOML_MAX_NEST  128   /* arrays + inline tables open at once */
#define TOML_MAX_DEPTH 512   /* whole tree, so recursive readers (test JSON) keep a small stack */
#define ARENA_BLOCK    (64 * 1024)

/* ---- arena ------------------------------------------------------------------ */

struct ablock {
	struct ablock *next;
	size_t cap, used;
	unsigned char data[];
};

struct arena {
	struct ablock *head;
};

/* n bytes aligned for any object, or NULL on ENOMEM; never freed alone. */
static void *arena_alloc(struct arena *a, size_t n)
{
	struct ablock *b = a->head;
	uintptr_t p, end;
	size_t cap;

	if (n > SIZE_MAX / 2)
		return NULL;
	n = (n + 15) & ~(size_t)15;
	if (b != NULL) {
		p = ((uintptr_t)(b->data + b->used) + 15) & ~(uintptr_t)15;
		end = (uintptr_t)(b->data + b->cap);
		if (p <= end && end - p >= n) {
			b->used = (size_t)(p - (uintptr_t)b->data) + n;
			return (void *)p;
		}
	}
	/* 16 spare bytes so the aligned start always fits */
	cap = n + 16 > ARENA_BLOCK ? n + 16 : ARENA_BLOCK;
	if ((b = malloc(sizeof *b + cap)) == NULL)
		return NULL;
	b->cap = cap;
	b->next = a->head;
	a->head = b;
	p = ((uintptr_t)b->data + 15) & ~(uintptr_t)15;
	b->used = (size_t)(p - (uintptr_t)b->data) + n;
	return (void *)p;
}

static void arena_free(struct arena *a)
{
	struct ablock *b, *next;

	for (b = a->head; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}

/* A NUL-terminated copy of s[0, n) in the arena. */
static char *arena_strdup(struct arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);

	if (d != NULL) {
		if (n > 0)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* ---- nodes ------------------------------------------------------------------ */

enum how {
	HOW_VALUE = 0,      /* scalar */
	HOW_ROOT,
	HOW_IMPLICIT,       /* table named as a prefix of a header: one header may still define it */
	HOW_HEADER,         /* table defined by [header] or as an element of [[header]] */
	HOW_DOTTED,         /* table created by a dotted key */
	HOW_INLINE,         /* { ... }: closed */
	HOW_STATIC,         /* [ ... ] array literal: closed */
	HOW_TABLES,         /* array of tables, grown by [[header]] */
};

/* The public value first, so a toml_value * of ours is a struct node *. */
struct node {
	struct toml_value v;
	size_t cap;         /* slots in v.arr.v or v.tab.kv */
	uint32_t *idx;      /* open-addressing index of v.tab.kv (i + 1), once a table grows */
	size_t icap;
	unsigned depth;
	enum how how;
};

#define INDEX_MIN 8     /* below this many keys a linear scan is cheaper than hashing */

struct toml_doc {
	struct arena arena;
	struct node *root;
};

/* ---- parser state ----------------------------------------------------------- */

struct mark {
	unsigned line, col;
};

struct parser {
	const unsigned char *s;
	size_t n, pos;
	unsigned line, col;         /* of s[pos]; col counts UTF-8 lead bytes */
	struct arena *arena;
	struct node *root, *cur;    /* cur: the table key/values go to */
	unsigned nest;
	struct toml_error *err;
	int rc;                     /* first error; later ones are not reported */
	char *buf;                  /* scratch for a string being decoded */
	size_t blen, bcap;
	locale_t cloc;              /* strtod must not see the caller's LC_NUMERIC */
};

static struct mark here(const struct parser *p)
{
	return (struct mark){ p->line, p->col };
}

static int peek(const struct parser *p)
{
	return p->pos < p->n ? p->s[p->pos] : -1;
}

static int peek_at(const struct parser *p, size_t k)
{
	return p->n - p->pos > k ? p->s[p->pos + k] : -1;
}

static void adv(struct parser *p)
{
	unsigned char c = p->s[p->pos++];

	if (c == '\n') {
		p->line++;
		p->col = 1;
	} else if ((c & 0xC0) != 0x80) {
		p->col++;
	}
}

static void adv_n(struct parser *p, size_t n)
{
	while (n-- > 0)
		adv(p);
}

__attribute__((format(printf, 3, 4)))
static int fail_at(struct parser *p, struct mark m, const char *fmt, ...)
{
	va_list ap;

	if (p->rc != 0)
		return p->rc;
	p->rc = -EINVAL;
	p->err->line = m.line;
	p->err->col = m.col;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
	va_end(ap);
	return p->rc;
}

static int fail_nomem(struct parser *p)
{
	if (p->rc != 0)
		return p->rc;
	p->rc = -ENOMEM;
	p->err->line = p->err->col = 0;
	snprintf(p->err->msg, sizeof p->err->msg, "out of memory");
	return p->rc;
}

/* Length of the valid UTF-8 sequence at s[0, n) and its code point, or 0 if
 * it is not one (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len, i;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
	    (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/* A short description of the character at the cursor, for "found X". */
static const char *describe(struct parser *p, char *buf, size_t size)
{
	int c = peek(p);
	uint32_t cp;

	if (c < 0)
		return "end of input";
	if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n'))
		return "a newline";
	if (c >= 0x21 && c < 0x7F)
		snprintf(buf, size, "`%c`", c);
	else if (c == ' ')
		return "a space";
	else if (c < 0x80)
		snprintf(buf, size, "control character U+%04X", (unsigned)c);
	else if (utf8_decode(p->s + p->pos, p->n - p->pos, &cp) == 0)
		return "invalid UTF-8";
	else
		snprintf(buf, size, "`%.*s` (U+%04X)",
			 (int)utf8_decode(p->s + p->pos, p->n - p->pos, &cp),
			 (const char *)p->s + p->pos, (unsigned)cp);
	return buf;
}

static int fail_found(struct parser *p, const char *expected)
{
	char b[48];

	return fail_at(p, here(p), "expected %s, found %s", expected, describe(p, b, sizeof b));
}

/* Advance over one character of a comment or string body after checking it:
 * TOML allows tab but no other control character, and only valid UTF-8. */
static int eat_text_char(struct parser *p, const char *where)
{
	int c = peek(p);
	uint32_t cp;
	size_t len;

	if (c == '\r' && peek_at(p, 1) != '\n')
		return fail_at(p, here(p), "bare carriage return in %s (only CRLF or LF end a line)",
			       where);
	if ((c < 0x20 && c != '\t') || c == 0x7F)
		return fail_at(p, here(p), "control character U+%04X in %s", (unsigned)c, where);
	if (c < 0x80) {
		adv(p);
		return 0;
	}
	if ((len = utf8_decode(p->s + p->pos, p->n - p->pos, &cp)) == 0)
		return fail_at(p, here(p), "invalid UTF-8 in %s", where);
	adv_n(p, len);
	return 0;
}

static bool at_newline(const struct parser *p)
{
	int c = peek(p);

	return c == '\n' || (c == '\r' && peek_at(p, 1) == '\n');
}

static void eat_newline(struct parser *p)
{
	if (peek(p) == '\r')
		adv(p);
	adv(p);
}

static void skip_ws(struct parser *p)
{
	int c;

	while ((c = peek(p)) == ' ' || c == '\t')
		adv(p);
}

/* At '#': the comment up to (not including) its newline. */
static int skip_comment(struct parser *p)
{
	int rc;

	adv(p);
	while (p->pos < p->n && !at_newline(p))
		if ((rc = eat_text_char(p, "a comment")) < 0)
			return rc;
	return 0;
}

/* Whitespace, comments and newlines, as allowed between array elements. */
static int skip_ws_nl(struct parser *p)
{
	int rc;

	for (;;) {
		skip_ws(p);
		if (peek(p) == '#') {
			if ((rc = skip_comment(p)) < 0)
				return rc;
		} else if (at_newline(p)) {
			eat_newline(p);
		} else if (peek(p) == '\r') {
			return fail_at(p, here(p), "bare carriage return (only CRLF or LF end a line)");
		} else {
			return 0;
		}
	}
}

/* Scratch buffer for decoded strings. */
static int buf_put(struct parser *p, const void *s, size_t n)
{
	size_t need, cap;
	char *b;

	if (n == 0)
		return 0;       /* an empty run: the buffer may not exist yet (NULL + 0) */
	if (__builtin_add_overflow(p->blen, n, &need))
		return fail_nomem(p);
	if (need > p->bcap) {
		for (cap = p->bcap ? p->bcap : 256; cap < need; cap *= 2)
			if (cap > SIZE_MAX / 2)
				return fail_nomem(p);
		if ((b = realloc(p->buf, cap)) == NULL)
			return fail_nomem(p);
		p->buf = b;
		p->bcap = cap;
	}
	memcpy(p->buf + p->blen, s, n);
	p->blen = need;
	return 0;
}

/* ---- tables ----------------------------------------------------------------- */

static const char *kind_name(enum toml_kind k)
{
	switch (k) {
	case TOML_STRING: return "a string";
	case TOML_INTEGER: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	case TOML_DATETIME: return "an offset date-time";
	case TOML_LOCAL_DATETIME: return "a local date-time";
	case TOML_LOCAL_DATE: return "a local date";
	case TOML_LOCAL_TIME: return "a local time";
	case TOML_ARRAY: return "an array";
	case TOML_TABLE: return "a table";
	}
	return "a value";
}

static int node_new(struct parser *p, enum toml_kind kind, enum how how, unsigned depth,
		    struct mark at, struct node **out)
{
	struct node *n;

	if (depth > TOML_MAX_DEPTH)
		return fail_at(p, at, "nesting deeper than %d levels", TOML_MAX_DEPTH);
	if ((n = arena_alloc(p->arena, sizeof *n)) == NULL)
		return fail_nomem(p);
	memset(n, 0, sizeof *n);
	n->v.kind = kind;
	n->v.line = at.line;
	n->v.col = at.col;
	n->how = how;
	n->depth = depth;
	*out = n;
	return 0;
}

static uint32_t key_hash(const char *k, size_t n)
{
	uint32_t h = 2166136261u;       /* FNV-1a */

	while (n-- > 0)
		h = (h ^ (unsigned char)*k++) * 16777619u;
	return h;
}

static int index_rebuild(struct parser *p, struct node *t)
{
	size_t cap = 16, i, j;
	uint32_t *idx;

	while (cap < t->cap * 2)
		cap *= 2;
	if ((idx = arena_alloc(p->arena, cap * sizeof *idx)) == NULL)
		return fail_nomem(p);
	memset(idx, 0, cap * sizeof *idx);
	for (i = 0; i < t->v.tab.n; i++) {
		const struct toml_kv *kv = &t->v.tab.kv[i];

		for (j = key_hash(kv->key, kv->key_len) & (cap - 1); idx[j] != 0; j = (j + 1) & (cap - 1))
			;
		idx[j] = (uint32_t)(i + 1);
	}
	t->idx = idx;
	t->icap = cap;
	return 0;
}

static struct toml_kv *tab_find(const struct node *t, const char *k, size_t kn)
{
	size_t i, j;

	if (t->idx == NULL) {
		for (i = 0; i < t->v.tab.n; i++) {
			struct toml_kv *kv = &t->v.tab.kv[i];

			if (kv->key_len == kn && memcmp(kv->key, k, kn) == 0)
				return kv;
		}
		return NULL;
	}
	for (j = key_hash(k, kn) & (t->icap - 1); t->idx[j] != 0; j = (j + 1) & (t->icap - 1)) {
		struct toml_kv *kv = &t->v.tab.kv[t->idx[j] - 1];

		if (kv->key_len == kn && memcmp(kv->key, k, kn) == 0)
			return kv;
	}
	return NULL;
}

/* Append key -> v to t; the caller has checked the key is new. */
static int tab_add(struct parser *p, struct node *t, const char *k, size_t kn, struct mark at,
		   struct node *v)
{
	struct toml_kv *kv;
	size_t cap, j;

	if (t->v.tab.n == t->cap) {
		cap = t->cap ? t->cap * 2 : 4;
		if (cap > UINT32_MAX / 2 || (kv = arena_alloc(p->arena, cap * sizeof *kv)) == NULL)
			return fail_nomem(p);
		if (t->v.tab.n > 0)
			memcpy(kv, t->v.tab.kv, t->v.tab.n * sizeof *kv);
		t->v.tab.kv = kv;       /* the old slots stay in the arena until toml_free */
		t->cap = cap;
		t->idx = NULL;
	}
	kv = &t->v.tab.kv[t->v.tab.n++];
	kv->key = k;
	kv->key_len = kn;
	kv->line = at.line;
	kv->col = at.col;
	kv->value = &v->v;
	if (t->idx == NULL) {
		if (t->v.tab.n >= INDEX_MIN)
			return index_rebuild(p, t);
		return 0;
	}
	for (j = key_hash(k, kn) & (t->icap - 1); t->idx[j] != 0; j = (j + 1) & (t->icap - 1))
		;
	t->idx[j] = (uint32_t)t->v.tab.n;
	return 0;
}

static int arr_push(struct parser *p, struct node *a, struct node *v)
{
	struct toml_value **e;
	size_t cap;

	if (a->v.arr.n == a->cap) {
		cap = a->cap ? a->cap * 2 : 4;
		if (cap > SIZE_MAX / 2 / sizeof *e || (e = arena_alloc(p->arena, cap * sizeof *e)) == NULL)
			return fail_nomem(p);
		if (a->v.arr.n > 0)
			memcpy(e, a->v.arr.v, a->v.arr.n * sizeof *e);
		a->v.arr.v = e;
		a->cap = cap;
	}
	a->v.arr.v[a->v.arr.n++] = &v->v;
	return 0;
}

/* ---- keys ------------------------------------------------------------------- */

struct seg {
	const char *s;      /* arena copy, NUL-terminated */
	size_t n;
	struct mark at;
};

struct key {
	struct seg *seg;
	size_t n, cap;
	struct mark at;     /* first segment */
};

static bool is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* segs[0, n) as written, joined by dots, for messages: bare segments as they
 * are, others quoted with escapes; cut with "..." to fit. */
static const char *key_name(const struct seg *segs, size_t n, char *buf, size_t size)
{
	size_t o = 0, i, j;
	char t[16];

	buf[0] = '\0';
	for (i = 0; i < n && o + 8 < size; i++) {
		const struct seg *g = &segs[i];
		bool bare = g->n > 0;

		for (j = 0; j < g->n; j++)
			bare = bare && is_bare((unsigned char)g->s[j]);
		if (i > 0)
			buf[o++] = '.';
		if (!bare)
			buf[o++] = '"';
		for (j = 0; j < g->n && o + 8 < size; j++) {
			unsigned char c = (unsigned char)g->s[j];

			if (c < 0x20 || c == 0x7F) {
				snprintf(t, sizeof t, "\\u%04X", c);
			} else if (c == '"' || c == '\\') {
				t[0] = '\\', t[1] = (char)c, t[2] = '\0';
			} else {
				t[0] = (char)c, t[1] = '\0';
			}
			if (o + strlen(t) + 5 >= size)
				break;
			memcpy(buf + o, t, strlen(t));
			o += strlen(t);
		}
		if (j < g->n) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (!bare)
			buf[o++] = '"';
	}
	if (i < n && o + 4 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

enum str_use { STR_VALUE, STR_KEY };
static int parse_string(struct parser *p, enum str_use use, const char **s, size_t *n);

/* A simple or dotted key, up to (not including) what follows its last segment. */
static int parse_key(struct parser *p, struct key *k)
{
	struct seg *g;
	size_t start, cap;
	int c, rc;

	k->n = 0;
	k->at = here(p);
	for (;;) {
		if (k->n == k->cap) {
			cap = k->cap ? k->cap * 2 : 8;
			if (cap > TOML_MAX_DEPTH * 2)
				return fail_at(p, here(p), "key with more than %d parts", TOML_MAX_DEPTH);
			if ((g = arena_alloc(p->arena, cap * sizeof *g)) == NULL)
				return fail_nomem(p);
			if (k->n > 0)
				memcpy(g, k->seg, k->n * sizeof *g);
			k->seg = g;
			k->cap = cap;
		}
		g = &k->seg[k->n];
		g->at = here(p);
		c = peek(p);
		if (is_bare(c)) {
			start = p->pos;
			while (is_bare(peek(p)))
				adv(p);
			g->n = p->pos - start;
			if ((g->s = arena_strdup(p->arena, (const char *)p->s + start, g->n)) == NULL)
				return fail_nomem(p);
		} else if (c == '"' || c == '\'') {
			if ((rc = parse_string(p, STR_KEY, &g->s, &g->n)) < 0)
				return rc;
		} else {
			return fail_found(p, k->n == 0 ? "a key" : "a key after `.`");
		}
		k->n++;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		adv(p);
		skip_ws(p);
	}
}

/* Resolve a dotted key of a key/value in table t: walk (creating) the tables
 * of its prefix and check its last part is new.  *out: the table to add to. */
static int resolve_kv(struct parser *p, struct node *t, const struct key *k, struct node **out)
{
	char name[128];
	struct toml_kv *kv;
	struct node *c;
	size_t i;
	int rc;

	for (i = 0; i + 1 < k->n; i++) {
		const struct seg *g = &k->seg[i];

		if ((kv = tab_find(t, g->s, g->n)) == NULL) {
			if ((rc = node_new(p, TOML_TABLE, HOW_DOTTED, t->depth + 1, g->at, &c)) < 0 ||
			    (rc = tab_add(p, t, g->s, g->n, g->at, c)) < 0)
				return rc;
			t = c;
			continue;
		}
		c = (struct node *)kv->value;
		if (c->v.kind == TOML_TABLE && c->how == HOW_DOTTED) {
			t = c;
			continue;
		}
		key_name(k->seg, i + 1, name, sizeof name);
		if (c->v.kind == TOML_TABLE && c->how == HOW_INLINE)
			return fail_at(p, g->at, "cannot add keys to `%s`: inline tables are closed "
				       "(defined at %u:%u)", name, kv->line, kv->col);
		if (c->v.kind == TOML_TABLE)
			return fail_at(p, g->at, "cannot add to table `%s` with dotted keys: it was "
				       "%s by the header at %u:%u", name,
				       c->how == HOW_IMPLICIT ? "created" : "defined", c->v.line, c->v.col);
		if (c->how == HOW_TABLES)
			return fail_at(p, g->at, "cannot add to `%s` with dotted keys: it is an array "
				       "of tables (defined at %u:%u)", name, c->v.line, c->v.col);
		return fail_at(p, g->at, "key `%s` is already %s (defined at %u:%u), not a table",
			       name, kind_name(c->v.kind), kv->line, kv->col);
	}
	if ((kv = tab_find(t, k->seg[i].s, k->seg[i].n)) != NULL)
		return fail_at(p, k->seg[i].at, "duplicate key `%s` (first defined at %u:%u)",
			       key_name(k->seg, k->n, name, sizeof name), kv->line, kv->col);
	*out = t;
	return 0;
}

/* Make k the current table, for [k] (tables == false) or [[k]]. */
static int open_header(struct parser *p, const struct key *k, bool tables, struct mark at)
{
	struct node *t = p->root, *c, *e;
	struct toml_kv *kv;
	char name[128];
	size_t i;
	int rc;

	for (i = 0; i < k->n; i++) {
		const struct seg *g = &k->seg[i];
		bool last = i + 1 == k->n;

		if ((kv = tab_find(t, g->s, g->n)) == NULL) {
			if (last && tables) {
				if ((rc = node_new(p, TOML_ARRAY, HOW_TABLES, t->depth + 1, at, &c)) < 0 ||
				    (rc = node_new(p, TOML_TABLE, HOW_HEADER, t->depth + 2, at, &e)) < 0 ||
				    (rc = arr_push(p, c, e)) < 0 ||
				    (rc = tab_add(p, t, g->s, g->n, g->at, c)) < 0)
					return rc;
				t = e;
				break;
			}
			if ((rc = node_new(p, TOML_TABLE, last ? HOW_HEADER : HOW_IMPLICIT,
					   t->depth + 1, last ? at : g->at, &c)) < 0 ||
			    (rc = tab_add(p, t, g->s, g->n, g->at, c)) < 0)
				return rc;
			t = c;
			continue;
		}
		c = (struct node *)kv->value;
		key_name(k->seg, i + 1, name, sizeof name);
		if (c->v.kind == TOML_TABLE && c->how == HOW_INLINE)
			return fail_at(p, g->at, "cannot extend `%s` with a header: inline tables are "
				       "closed (defined at %u:%u)", name, kv->line, kv->col);
		if (c->v.kind == TOML_ARRAY && c->how == HOW_STATIC)
			return fail_at(p, g->at, "`%s` is a static array (defined at %u:%u), not an "
				       "array of tables", name, kv->line, kv->col);
		if (c->v.kind != TOML_TABLE && c->v.kind != TOML_ARRAY)
			return fail_at(p, g->at, "key `%s` is already %s (defined at %u:%u), not a table",
				       name, kind_name(c->v.kind), kv->line, kv->col);
		if (!last) {
			/* a prefix may pass through any open table, or the last [[element]] */
			t = c->v.kind == TOML_TABLE ? c : (struct node *)c->v.arr.v[c->v.arr.n - 1];
			continue;
		}
		if (tables) {
			if (c->how != HOW_TABLES)
				return fail_at(p, g->at, "cannot define `%s` as an array of tables: it is "
					       "already a table (defined at %u:%u)", name, c->v.line, c->v.col);
			if ((rc = node_new(p, TOML_TABLE, HOW_HEADER, c->depth + 1, at, &e)) < 0 ||
			    (rc = arr_push(p, c, e)) < 0)
				return rc;
			t = e;
		} else {
			if (c->how == HOW_TABLES)
				return fail_at(p, g->at, "cannot define `%s` as a table: it is already an "
					       "array of tables (defined at %u:%u)", name, c->v.line, c->v.col);
			if (c->how == HOW_DOTTED)
				return fail_at(p, g->at, "table `%s` is already defined by dotted keys "
					       "(at %u:%u)", name, kv->line, kv->col);
			if (c->how != HOW_IMPLICIT)
				return fail_at(p, g->at, "table `%s` is already defined (at %u:%u)",
					       name, c->v.line, c->v.col);
			c->how = HOW_HEADER;
			c->v.line = at.line;
			c->v.col = at.col;
			t = c;
		}
	}
	p->cur = t;
	return 0;
}

/* ---- strings ---------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int put_utf8(struct parser *p, uint32_t c)
{
	unsigned char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (unsigned char)c, n = 1;
	} else if (c < 0x800) {
		b[0] = (unsigned char)(0xC0 | c >> 6), b[1] = (unsigned char)(0x80 | (c & 0x3F)), n = 2;
	} else if (c < 0x10000) {
		b[0] = (unsigned char)(0xE0 | c >> 12), b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
		b[2] = (unsigned char)(0x80 | (c & 0x3F)), n = 3;
	} else {
		b[0] = (unsigned char)(0xF0 | c >> 18), b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
		b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (unsigned char)(0x80 | (c & 0x3F));
		n = 4;
	}
	return buf_put(p, b, n);
}

/* At '\\' in a basic string: decode one escape into the buffer. */
static int parse_escape(struct parser *p, bool multi, const char *what)
{
	struct mark at = here(p);
	uint32_t cp = 0;
	size_t i, nd;
	char b[48];
	int c, h;

	adv(p);
	c = peek(p);
	switch (c) {
	case 'b': adv(p); return buf_put(p, "\b", 1);
	case 't': adv(p); return buf_put(p, "\t", 1);
	case 'n': adv(p); return buf_put(p, "\n", 1);
	case 'f': adv(p); return buf_put(p, "\f", 1);
	case 'r': adv(p); return buf_put(p, "\r", 1);
	case '"': adv(p); return buf_put(p, "\"", 1);
	case '\\': adv(p); return buf_put(p, "\\", 1);
	case 'u':
	case 'U':
		nd = c == 'u' ? 4 : 8;
		for (i = 1; i <= nd; i++) {
			if ((h = hexval(peek_at(p, i))) < 0)
				return fail_at(p, at, "invalid escape in %s: `\\%c` needs %zu hex digits",
					       what, c, nd);
			cp = cp << 4 | (uint32_t)h;
		}
		if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return fail_at(p, at, "invalid escape `\\%c%.*s` in %s: not a Unicode scalar value",
				       c, (int)nd, (const char *)p->s + p->pos + 1, what);
		adv_n(p, nd + 1);
		return put_utf8(p, cp);
	}
	if (multi && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
		/* line-ending backslash: only whitespace may follow it on its line, and
		 * it eats every space and newline up to the next other character */
		skip_ws(p);
		if (!at_newline(p))
			return fail_at(p, at, "invalid escape `\\ ` in %s: only whitespace may follow "
				       "a line-ending backslash", what);
		for (;;) {
			skip_ws(p);
			if (at_newline(p))
				eat_newline(p);
			else if (peek(p) == '\r')
				return fail_at(p, here(p), "bare carriage return in %s", what);
			else
				return 0;
		}
	}
	if (c < 0)
		return fail_at(p, here(p), "end of input in %s", what);
	if (c >= 0x21 && c < 0x7F)
		return fail_at(p, at, "invalid escape `\\%c` in %s", c, what);
	return fail_at(p, at, "invalid escape in %s: `\\` followed by %s", what, describe(p, b, sizeof b));
}

/* At a quote: any of the four string forms (only the single-line ones when
 * use is STR_KEY).  *s is a NUL-terminated arena copy of the decoded text. */
static int parse_string(struct parser *p, enum str_use use, const char **s, size_t *n)
{
	struct mark open = here(p);
	int q = peek(p);
	bool literal = q == '\'';
	bool multi = peek_at(p, 1) == q && peek_at(p, 2) == q;
	const char *what = literal ? (multi ? "a multi-line literal string" : "a literal string")
				   : (multi ? "a multi-line basic string" : "a basic string");
	size_t start, run;
	int c, rc;

	if (multi && use == STR_KEY)
		return fail_at(p, open, "a multi-line string cannot be a key");
	p->blen = 0;
	adv_n(p, multi ? 3 : 1);
	if (multi && at_newline(p))
		eat_newline(p);         /* a newline right after the opening quotes is trimmed */
	for (;;) {
		c = peek(p);
		if (c < 0)
			return fail_at(p, here(p), "end of input in %s (opened at %u:%u)",
				       what, open.line, open.col);
		if (c == q) {
			if (!multi) {
				adv(p);
				break;
			}
			for (run = 0; peek_at(p, run) == q; run++)
				;
			if (run < 3) {
				if ((rc = buf_put(p, (const char *)p->s + p->pos, run)) < 0)
					return rc;
				adv_n(p, run);
				continue;
			}
			if (run > 5) {
				adv_n(p, 5);
				return fail_at(p, here(p), "too many quotes at the end of %s: at most two "
					       "may come before the closing three", what);
			}
			if ((rc = buf_put(p, (const char *)p->s + p->pos, run - 3)) < 0)
				return rc;
			adv_n(p, run);
			break;
		}
		if (c == '\\' && !literal) {
			if ((rc = parse_escape(p, multi, what)) < 0)
				return rc;
			continue;
		}
		if (at_newline(p)) {
			if (!multi)
				return fail_at(p, here(p), "newline in %s (opened at %u:%u)",
					       what, open.line, open.col);
			eat_newline(p);
			if ((rc = buf_put(p, "\n", 1)) < 0)
				return rc;
			continue;
		}
		start = p->pos;
		if ((rc = eat_text_char(p, what)) < 0 ||
		    (rc = buf_put(p, (const char *)p->s + start, p->pos - start)) < 0)
			return rc;
	}
	if ((*s = arena_strdup(p->arena, p->buf ? p->buf : "", p->blen)) == NULL)
		return fail_nomem(p);
	*n = p->blen;
	return 0;
}

/* ---- numbers and dates ------------------------------------------------------ */

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_token(int c)
{
	return is_bare(c) || c == '+' || c == '.';
}

/* Position of t[off] in a token that started at at (tokens are ASCII). */
static struct mark tok_at(struct mark at, size_t off)
{
	return (struct mark){ at.line, at.col + (unsigned)off };
}

/* Digits of base b from t[*i], with single underscores between digits; *i
 * moves past them.  Returns how many digits, or an error. */
static int digit_run(struct parser *p, struct mark at, const char *t, size_t n, size_t *i,
		     int base, const char *what)
{
	size_t j = *i;
	int count = 0;

	for (; j < n; j++) {
		int c = (unsigned char)t[j], d = hexval(c);

		if (c == '_') {
			if (count == 0 || t[j - 1] == '_' || j + 1 >= n || hexval(t[j + 1]) < 0 ||
			    hexval(t[j + 1]) >= base)
				return fail_at(p, tok_at(at, j), "`_` in %s must be between two digits",
					       what);
			continue;
		}
		if (d < 0 || (base <= 10 && !is_digit(c)))
			break;
		if (d >= base) {
			if (base == 10)
				break;
			return fail_at(p, tok_at(at, j), "invalid digit `%c` in %s", c, what);
		}
		count++;
	}
	*i = j;
	return count;
}

/* From the token t[0, n) at the cursor: an integer or a float. */
static int parse_number(struct parser *p, const char *t, size_t n, struct node *v)
{
	struct mark at = here(p);
	size_t i = 0, j, int_start;
	bool neg = false, is_float = false;
	uint64_t u = 0, lim;
	const char *what;
	char *clean, *end;
	int base = 10, r;

	for (j = 0; j < n; j++)
		if (t[j] == '.' || ((t[j] == 'e' || t[j] == 'E') && !(n > 2 && t[0] == '0' && t[1] == 'x')))
			is_float = true;
	what = is_float ? "a float" : "an integer";
	if (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-';
		i = 1;
	}
	if (n - i == 3 && (memcmp(t + i, "inf", 3) == 0 || memcmp(t + i, "nan", 3) == 0)) {
		v->v.kind = TOML_FLOAT;
		v->v.f = t[i] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
		return 0;
	}
	if (i == n || !is_digit(t[i]))
		return fail_at(p, tok_at(at, i), "invalid value `%.*s`", (int)(n > 40 ? 40 : n), t);
	if (t[i] == '0' && i + 1 < n && (t[i + 1] == 'x' || t[i + 1] == 'o' || t[i + 1] == 'b')) {
		base = t[i + 1] == 'x' ? 16 : t[i + 1] == 'o' ? 8 : 2;
		what = base == 16 ? "a hexadecimal integer" : base == 8 ? "an octal integer"
								 : "a binary integer";
		if (i > 0)
			return fail_at(p, at, "%s cannot have a sign", what);
		i += 2;
		j = i;
		if ((r = digit_run(p, at, t, n, &i, base, what)) < 0)
			return r;
		if (r == 0)
			return fail_at(p, tok_at(at, i), "`0%c` must be followed by digits", t[1]);
		if (i != n)
			return fail_at(p, tok_at(at, i), "invalid character `%c` in %s", t[i], what);
		for (; j < n; j++) {
			if (t[j] == '_')
				continue;
			if (u > (uint64_t)INT64_MAX / (uint64_t)base ||
			    u * (uint64_t)base + (uint64_t)hexval(t[j]) > (uint64_t)INT64_MAX)
				return fail_at(p, at, "integer `%.*s` does not fit in 64 bits",
					       (int)(n > 80 ? 80 : n), t);
			u = u * (uint64_t)base + (uint64_t)hexval(t[j]);
		}
		v->v.kind = TOML_INTEGER;
		v->v.i = (int64_t)u;
		return 0;
	}
	int_start = i;
	if (t[i] == '0' && i + 1 < n && (is_digit(t[i + 1]) || t[i + 1] == '_'))
		return fail_at(p, tok_at(at, i), "leading zero in %s", what);
	if ((r = digit_run(p, at, t, n, &i, 10, what)) < 0)
		return r;
	if (!is_float) {
		if (i != n)
			return fail_at(p, tok_at(at, i), "invalid character `%c` in %s", t[i], what);
		lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		for (j = int_start; j < n; j++) {
			if (t[j] == '_')
				continue;
			if (u > lim / 10 || u * 10 + (uint64_t)(t[j] - '0') > lim)
				return fail_at(p, at, "integer `%.*s` does not fit in 64 bits",
					       (int)(n > 80 ? 80 : n), t);
			u = u * 10 + (uint64_t)(t[j] - '0');
		}
		v->v.kind = TOML_INTEGER;
		v->v.i = neg ? (int64_t)(0 - u) : (int64_t)u;
		return 0;
	}
	if (i < n && t[i] == '.') {
		i++;
		if ((r = digit_run(p, at, t, n, &i, 10, what)) < 0)
			return r;
		if (r == 0)
			return fail_at(p, tok_at(at, i), "`.` in a float must be followed by digits");
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if ((r = digit_run(p, at, t, n, &i, 10, "an exponent")) < 0)
			return r;
		if (r == 0)
			return fail_at(p, tok_at(at, i), "exponent of a float must have digits");
	}
	if (i != n)
		return fail_at(p, tok_at(at, i), "invalid character `%c` in %s", t[i], what);
	if ((clean = arena_alloc(p->arena, n + 1)) == NULL)
		return fail_nomem(p);
	for (i = j = 0; i < n; i++)
		if (t[i] != '_')
			clean[j++] = t[i];
	clean[j] = '\0';
	if (p->cloc == (locale_t)0 && (p->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)) == 0)
		return fail_nomem(p);
	errno = 0;
	v->v.f = strtod_l(clean, &end, p->cloc);
	if (*end != '\0')
		return fail_at(p, at, "invalid float `%.*s`", (int)(n > 80 ? 80 : n), t);
	/* TOML floats are binary64: rounding is expected, turning a finite number
	 * into infinity is not (an underflow to zero or a subnormal is rounding) */
	if (isinf(v->v.f))
		return fail_at(p, at, "float `%.*s` is out of range", (int)(n > 80 ? 80 : n), t);
	v->v.kind = TOML_FLOAT;
	return 0;
}

/* w decimal digits at t[off]: their value, or -1. */
static int fixed(const char *t, size_t n, size_t off, size_t w)
{
	int v = 0;

	if (off + w > n)
		return -1;
	for (size_t i = 0; i < w; i++) {
		if (!is_digit(t[off + i]))
			return -1;
		v = v * 10 + (t[off + i] - '0');
	}
	return v;
}

static int days_in_month(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/* HH:MM:SS[.frac] at t[*i]. */
static int parse_time(struct parser *p, struct mark at, const char *t, size_t n, size_t *i,
		      struct toml_datetime *dt)
{
	size_t o = *i, k;
	uint32_t ns = 0, scale = 100000000;

	if ((dt->hour = fixed(t, n, o, 2)) < 0 || o + 2 >= n || t[o + 2] != ':' ||
	    (dt->minute = fixed(t, n, o + 3, 2)) < 0)
		return fail_at(p, tok_at(at, o), "invalid time: expected HH:MM:SS");
	if (o + 5 >= n || t[o + 5] != ':' || (dt->second = fixed(t, n, o + 6, 2)) < 0)
		return fail_at(p, tok_at(at, o + 5), "invalid time: seconds are required (HH:MM:SS)");
	if (dt->hour > 23)
		return fail_at(p, tok_at(at, o), "hour %02d out of range (00-23)", dt->hour);
	if (dt->minute > 59)
		return fail_at(p, tok_at(at, o + 3), "minute %02d out of range (00-59)", dt->minute);
	if (dt->second > 60)
		return fail_at(p, tok_at(at, o + 6), "second %02d out of range (00-60)", dt->second);
	o += 8;
	if (o < n && t[o] == '.') {
		for (k = o + 1; k < n && is_digit(t[k]); k++) {
			ns += (uint32_t)(t[k] - '0') * scale;   /* past 9 digits: truncated */
			scale /= 10;
		}
		if (k == o + 1)
			return fail_at(p, tok_at(at, o + 1), "fractional seconds need at least one digit");
		o = k;
	}
	dt->nanosecond = ns;
	*i = o;
	return 0;
}

/* A date, time or date-time at the cursor (the caller saw its shape). */
static int parse_datetime(struct parser *p, struct node *v)
{
	struct mark at = here(p);
	const char *t = (const char *)p->s + p->pos;
	size_t n = p->n - p->pos, i = 0;
	struct toml_datetime *dt = &v->v.dt;
	int rc, oh, om;

	memset(dt, 0, sizeof *dt);
	if (n >= 3 && is_digit(t[0]) && is_digit(t[1]) && t[2] == ':') {
		if ((rc = parse_time(p, at, t, n, &i, dt)) < 0)
			return rc;
		v->v.kind = TOML_LOCAL_TIME;
		adv_n(p, i);
		return 0;
	}
	if ((dt->year = fixed(t, n, 0, 4)) < 0 || t[4] != '-' || (dt->month = fixed(t, n, 5, 2)) < 0 ||
	    n < 8 || t[7] != '-' || (dt->day = fixed(t, n, 8, 2)) < 0)
		return fail_at(p, at, "invalid date: expected YYYY-MM-DD");
	if (dt->month < 1 || dt->month > 12)
		return fail_at(p, tok_at(at, 5), "month %02d out of range (01-12)", dt->month);
	if (dt->day < 1 || dt->day > days_in_month(dt->year, dt->month))
		return fail_at(p, tok_at(at, 8), "day %02d out of range: %04d-%02d has %d days",
			       dt->day, dt->year, dt->month, days_in_month(dt->year, dt->month));
	i = 10;
	/* a space separates date and time only when a time follows it */
	if (i < n && (t[i] == 'T' || t[i] == 't' || (t[i] == ' ' && i + 1 < n && is_digit(t[i + 1])))) {
		i++;
		if ((rc = parse_time(p, at, t, n, &i, dt)) < 0)
			return rc;
		v->v.kind = TOML_LOCAL_DATETIME;
		if (i < n && (t[i] == 'Z' || t[i] == 'z')) {
			dt->has_offset = true;
			i++;
		} else if (i < n && (t[i] == '+' || t[i] == '-')) {
			if ((oh = fixed(t, n, i + 1, 2)) < 0 || i + 3 >= n || t[i + 3] != ':' ||
			    (om = fixed(t, n, i + 4, 2)) < 0)
				return fail_at(p, tok_at(at, i), "invalid time offset: expected +HH:MM or -HH:MM");
			if (oh > 23 || om > 59)
				return fail_at(p, tok_at(at, i), "time offset %.6s out of range", t + i);
			dt->has_offset = true;
			dt->offset_minutes = (t[i] == '-' ? -1 : 1) * (oh * 60 + om);
			i += 6;
		}
		if (dt->has_offset)
			v->v.kind = TOML_DATETIME;
	} else {
		v->v.kind = TOML_LOCAL_DATE;
	}
	adv_n(p, i);
	return 0;
}

/* ---- values ----------------------------------------------------------------- */

static int parse_value(struct parser *p, unsigned depth, struct node **out);
static int parse_keyval(struct parser *p, struct node *t);

static int nest_enter(struct parser *p)
{
	if (p->nest >= TOML_MAX_NEST)
		return fail_at(p, here(p), "arrays and inline tables nested more than %d deep",
			       TOML_MAX_NEST);
	p->nest++;
	return 0;
}

static int parse_array(struct parser *p, struct node *a)
{
	struct mark open = here(p);
	struct node *e;
	char b[48];
	int rc;

	if ((rc = nest_enter(p)) < 0)
		return rc;
	adv(p);
	for (;;) {
		if ((rc = skip_ws_nl(p)) < 0)
			return rc;
		if (peek(p) == ']')
			break;
		if ((rc = parse_value(p, a->depth + 1, &e)) < 0 || (rc = arr_push(p, a, e)) < 0 ||
		    (rc = skip_ws_nl(p)) < 0)
			return rc;
		if (peek(p) == ',') {
			adv(p);
			continue;
		}
		if (peek(p) == ']')
			break;
		if (peek(p) < 0)
			return fail_at(p, here(p), "unterminated array (opened at %u:%u)",
				       open.line, open.col);
		return fail_at(p, here(p), "expected `,` or `]` after an array element, found %s",
			       describe(p, b, sizeof b));
	}
	adv(p);
	p->nest--;
	return 0;
}

static int parse_inline_table(struct parser *p, struct node *t)
{
	struct mark open = here(p);
	char b[48];
	int rc;

	if ((rc = nest_enter(p)) < 0)
		return rc;
	adv(p);
	skip_ws(p);
	if (peek(p) != '}') {
		for (;;) {
			if (at_newline(p))
				return fail_at(p, here(p), "newline in an inline table (opened at %u:%u)",
					       open.line, open.col);
			if ((rc = parse_keyval(p, t)) < 0)
				return rc;
			skip_ws(p);
			if (peek(p) == '}')
				break;
			if (peek(p) == ',') {
				adv(p);
				skip_ws(p);
				if (peek(p) == '}')
					return fail_at(p, here(p), "trailing comma in an inline table "
						       "(opened at %u:%u)", open.line, open.col);
				continue;
			}
			if (at_newline(p))
				return fail_at(p, here(p), "newline in an inline table (opened at %u:%u)",
					       open.line, open.col);
			if (peek(p) < 0)
				return fail_at(p, here(p), "unterminated inline table (opened at %u:%u)",
					       open.line, open.col);
			return fail_at(p, here(p), "expected `,` or `}` in an inline table, found %s",
				       describe(p, b, sizeof b));
		}
	}
	adv(p);
	p->nest--;
	t->how = HOW_INLINE;
	return 0;
}

static int parse_value(struct parser *p, unsigned depth, struct node **out)
{
	struct mark at = here(p);
	const char *t = (const char *)p->s + p->pos;
	size_t n = 0, rest = p->n - p->pos;
	struct node *v;
	int c = peek(p), rc;

	if ((rc = node_new(p, TOML_STRING, HOW_VALUE, depth, at, &v)) < 0)
		return rc;
	*out = v;
	if (c == '"' || c == '\'')
		return parse_string(p, STR_VALUE, &v->v.s.p, &v->v.s.n);
	if (c == '[') {
		v->v.kind = TOML_ARRAY;
		v->how = HOW_STATIC;
		return parse_array(p, v);
	}
	if (c == '{') {
		v->v.kind = TOML_TABLE;
		return parse_inline_table(p, v);
	}
	while (n < rest && is_token((unsigned char)t[n]))
		n++;
	if (n == 0)
		return fail_found(p, "a value");
	if ((n == 4 && memcmp(t, "true", 4) == 0) || (n == 5 && memcmp(t, "false", 5) == 0)) {
		v->v.kind = TOML_BOOL;
		v->v.b = n == 4;
		adv_n(p, n);
		return 0;
	}
	if ((rest >= 5 && is_digit(t[0]) && is_digit(t[1]) && is_digit(t[2]) && is_digit(t[3]) &&
	     t[4] == '-') ||
	    (rest >= 3 && is_digit(t[0]) && is_digit(t[1]) && t[2] == ':'))
		return parse_datetime(p, v);
	if ((rc = parse_number(p, t, n, v)) < 0)
		return rc;
	adv_n(p, n);
	return 0;
}

/* key = value into table t (a header's table, or an inline table). */
static int parse_keyval(struct parser *p, struct node *t)
{
	struct key k = { 0 };
	struct node *dst = NULL, *v;
	char b[48], name[128];
	int rc;

	if ((rc = parse_key(p, &k)) < 0)
		return rc;
	if (peek(p) != '=') {
		key_name(k.seg, k.n, name, sizeof name);
		return fail_at(p, here(p), "expected `=` after key `%s`, found %s", name,
			       describe(p, b, sizeof b));
	}
	adv(p);
	skip_ws(p);
	/* before the value: a duplicate key is the earlier error */
	if ((rc = resolve_kv(p, t, &k, &dst)) < 0)
		return rc;
	if (peek(p) < 0 || at_newline(p) || peek(p) == '#')
		return fail_at(p, here(p), "missing value for key `%s`",
			       key_name(k.seg, k.n, name, sizeof name));
	if ((rc = parse_value(p, dst->depth + 1, &v)) < 0)
		return rc;
	return tab_add(p, dst, k.seg[k.n - 1].s, k.seg[k.n - 1].n, k.seg[k.n - 1].at, v);
}

/* ---- document --------------------------------------------------------------- */

static int parse_header(struct parser *p)
{
	struct mark at = here(p);
	bool tables = peek_at(p, 1) == '[';
	struct key k = { 0 };
	char b[48];
	int rc;

	adv_n(p, tables ? 2 : 1);
	skip_ws(p);
	if ((rc = parse_key(p, &k)) < 0)
		return rc;
	if (peek(p) != ']' || (tables && peek_at(p, 1) != ']'))
		return fail_at(p, here(p), "expected `%s` to close the %s header, found %s",
			       tables ? "]]" : "]", tables ? "array-of-tables" : "table",
			       describe(p, b, sizeof b));
	adv_n(p, tables ? 2 : 1);
	return open_header(p, &k, tables, at);
}

/* After a key/value or header: only whitespace and a comment until the line ends. */
static int end_line(struct parser *p, const char *after)
{
	char b[48];
	int rc;

	skip_ws(p);
	if (peek(p) == '#' && (rc = skip_comment(p)) < 0)
		return rc;
	if (peek(p) < 0)
		return 0;
	if (at_newline(p)) {
		eat_newline(p);
		return 0;
	}
	if (peek(p) == '\r')
		return fail_at(p, here(p), "bare carriage return (only CRLF or LF end a line)");
	return fail_at(p, here(p), "expected a newline after %s, found %s", after,
		       describe(p, b, sizeof b));
}

static int parse_document(struct parser *p)
{
	int rc, c;

	for (;;) {
		skip_ws(p);
		c = peek(p);
		if (c < 0)
			return 0;
		if (c == '#' || c == '\n' || c == '\r')
			rc = end_line(p, "a comment");
		else if (c == '[')
			rc = (rc = parse_header(p)) < 0 ? rc : end_line(p, "a table header");
		else
			rc = (rc = parse_keyval(p, p->cur)) < 0 ? rc : end_line(p, "a key/value pair");
		if (rc < 0)
			return rc;
	}
}

int toml_parse(const char *text, size_t len, struct toml_doc **out, struct toml_error *err)
{
	struct toml_error scratch;
	struct toml_doc *doc;
	struct parser p;
	int rc;

	if (err == NULL)
		err = &scratch;
	memset(err, 0, sizeof *err);
	if ((doc = calloc(1, sizeof *doc)) == NULL) {
		snprintf(err->msg, sizeof err->msg, "out of memory");
		return -ENOMEM;
	}
	memset(&p, 0, sizeof p);
	p.s = (const unsigned char *)text;
	p.n = text != NULL ? len : 0;
	p.line = p.col = 1;
	p.arena = &doc->arena;
	p.err = err;
	rc = node_new(&p, TOML_TABLE, HOW_ROOT, 0, here(&p), &doc->root);
	if (rc == 0) {
		p.root = p.cur = doc->root;
		rc = parse_document(&p);
	}
	free(p.buf);
	if (p.cloc != (locale_t)0)
		freelocale(p.cloc);
	if (rc < 0) {
		toml_free(doc);
		return rc;
	}
	*out = doc;
	return 0;
}

void toml_free(struct toml_doc *doc)
{
	if (doc == NULL)
		return;
	arena_free(&doc->arena);
	free(doc);
}

const struct toml_value *toml_root(const struct toml_doc *doc)
{
	return doc != NULL ? &doc->root->v : NULL;
}

const struct toml_value *toml_get(const struct toml_value *table, const char *key)
{
	const struct toml_kv *kv;

	if (table == NULL || table->kind != TOML_TABLE || key == NULL)
		return NULL;
	kv = tab_find((const struct node *)table, key, strlen(key));
	return kv != NULL ? kv->value : NULL;
}

/* ---- test JSON -------------------------------------------------------------- */

struct jbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void jput(struct jbuf *b, const char *s, size_t n)
{
	size_t need, cap;
	char *q;

	if (b->oom)
		return;
	if (__builtin_add_overflow(b->n, n + 1, &need)) {
		b->oom = true;
		return;
	}
	if (need > b->cap) {
		for (cap = b->cap ? b->cap : 256; cap < need; cap *= 2)
			;
		if ((q = realloc(b->p, cap)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void jputs(struct jbuf *b, const char *s)
{
	jput(b, s, strlen(s));
}

static void jstr(struct jbuf *b, const char *s, size_t n)
{
	char t[8];

	jput(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			t[0] = '\\', t[1] = (char)c;
			jput(b, t, 2);
		} else if (c < 0x20 || c == 0x7F) {
			snprintf(t, sizeof t, "\\u%04x", c);
			jput(b, t, 6);
		} else {
			jput(b, (const char *)&c, 1);
		}
	}
	jput(b, "\"", 1);
}

static void jdatetime(struct jbuf *b, const struct toml_value *v)
{
	const struct toml_datetime *d = &v->dt;
	char t[64];
	int o = 0, k;

	if (v->kind != TOML_LOCAL_TIME)
		o += snprintf(t + o, sizeof t - (size_t)o, "%04d-%02d-%02d", d->year, d->month, d->day);
	if (v->kind == TOML_LOCAL_DATETIME || v->kind == TOML_DATETIME)
		t[o++] = 'T';
	if (v->kind != TOML_LOCAL_DATE) {
		o += snprintf(t + o, sizeof t - (size_t)o, "%02d:%02d:%02d", d->hour, d->minute, d->second);
		if (d->nanosecond != 0) {
			o += snprintf(t + o, sizeof t - (size_t)o, ".%09u", (unsigned)d->nanosecond);
			for (k = 0; k < 8 && t[o - 1] == '0'; k++)
				o--;
		}
	}
	if (v->kind == TOML_DATETIME) {
		if (d->offset_minutes == 0)
			t[o++] = 'Z';
		else
			o += snprintf(t + o, sizeof t - (size_t)o, "%c%02d:%02d",
				      d->offset_minutes < 0 ? '-' : '+', abs(d->offset_minutes) / 60,
				      abs(d->offset_minutes) % 60);
	}
	t[o] = '\0';
	jstr(b, t, (size_t)o);
}

static const char *test_type(enum toml_kind k)
{
	switch (k) {
	case TOML_STRING: return "string";
	case TOML_INTEGER: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "bool";
	case TOML_DATETIME: return "datetime";
	case TOML_LOCAL_DATETIME: return "datetime-local";
	case TOML_LOCAL_DATE: return "date-local";
	case TOML_LOCAL_TIME: return "time-local";
	default: return "?";
	}
}

static void jvalue(struct jbuf *b, const struct toml_value *v)
{
	char t[64];
	size_t i;

	switch (v->kind) {
	case TOML_TABLE:
		jput(b, "{", 1);
		for (i = 0; i < v->tab.n; i++) {
			if (i > 0)
				jput(b, ",", 1);
			jstr(b, v->tab.kv[i].key, v->tab.kv[i].key_len);
			jput(b, ":", 1);
			jvalue(b, v->tab.kv[i].value);
		}
		jput(b, "}", 1);
		return;
	case TOML_ARRAY:
		jput(b, "[", 1);
		for (i = 0; i < v->arr.n; i++) {
			if (i > 0)
				jput(b, ",", 1);
			jvalue(b, v->arr.v[i]);
		}
		jput(b, "]", 1);
		return;
	default:
		break;
	}
	jputs(b, "{\"type\":\"");
	jputs(b, test_type(v->kind));
	jputs(b, "\",\"value\":");
	switch (v->kind) {
	case TOML_STRING:
		jstr(b, v->s.p, v->s.n);
		break;
	case TOML_INTEGER:
		snprintf(t, sizeof t, "\"%" PRId64 "\"", v->i);
		jputs(b, t);
		break;
	case TOML_FLOAT:
		if (isnan(v->f))
			snprintf(t, sizeof t, "\"nan\"");
		else if (isinf(v->f))
			snprintf(t, sizeof t, "\"%sinf\"", v->f < 0 ? "-" : "");
		else
			snprintf(t, sizeof t, "\"%.17g\"", v->f);   /* round-trips every binary64 */
		jputs(b, t);
		break;
	case TOML_BOOL:
		jputs(b, v->b ? "\"true\"" : "\"false\"");
		break;
	default:
		jdatetime(b, v);
		break;
	}
	jput(b, "}", 1);
}

char *toml_to_test_json(const struct toml_value *v)
{
	struct jbuf b = { 0 };

	if (v == NULL)
		return NULL;
	jvalue(&b, v);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
