/* value.h - Cedar run-time values.
 *
 * A dw_val is 24 bytes, passed by value.  Everything it points to is immutable
 * and owned by some arena (a policy set for literals, an entity store for entity
 * data, the request's scratch arena for computed values), so copying a dw_val
 * never copies or frees anything.
 *
 * Sets and records are canonical: a set's elements are sorted by dw_val_cmp with
 * duplicates removed, a record's fields are sorted by key bytes with unique keys.
 * Equality is therefore a linear walk and containment a binary search. */
#ifndef DW_VALUE_H
#define DW_VALUE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "util.h"

enum dw_vkind {
	DW_V_BOOL = 1,
	DW_V_LONG,
	DW_V_STRING,
	DW_V_ENTITY,
	DW_V_SET,
	DW_V_RECORD,
	DW_V_IP,
	DW_V_DECIMAL,      /* i = value * 10^4 */
	DW_V_DATETIME,     /* i = milliseconds since the Unix epoch */
	DW_V_DURATION,     /* i = milliseconds */
};

/* An entity UID: type is the full `::` path ("Box::Action"), id arbitrary bytes.
 * hash covers both and is computed once by dw_uid_init. */
struct dw_uid {
	struct dw_str type;
	struct dw_str id;
	uint64_t hash;
};

struct dw_ipaddr {
	uint8_t v6;        /* 0: IPv4 in addr[0..3]; 1: IPv6 */
	uint8_t prefix;    /* 0..32 or 0..128 */
	uint8_t addr[16];  /* host bits kept, not masked */
};

struct dw_val {
	uint8_t kind;      /* enum dw_vkind */
	union {
		bool b;
		int64_t i;                    /* LONG, DECIMAL, DATETIME, DURATION */
		struct dw_str s;              /* STRING */
		const struct dw_uid *uid;     /* ENTITY */
		const struct dw_set *set;     /* SET */
		const struct dw_rec *rec;     /* RECORD */
		const struct dw_ipaddr *ip;   /* IP */
	};
};

struct dw_set {
	uint32_t n;
	struct dw_val v[];                    /* canonical order, no duplicates */
};

struct dw_field {
	struct dw_str key;
	struct dw_val val;
};

struct dw_rec {
	uint32_t n;
	struct dw_field f[];                  /* sorted by key, unique */
};

extern const struct dw_set dw_empty_set;
extern const struct dw_rec dw_empty_rec;

static inline struct dw_val dw_val_bool(bool b)
{
	struct dw_val v = { .kind = DW_V_BOOL, .b = b };
	return v;
}

static inline struct dw_val dw_val_long(int64_t i)
{
	struct dw_val v = { .kind = DW_V_LONG, .i = i };
	return v;
}

static inline struct dw_val dw_val_string(struct dw_str s)
{
	struct dw_val v = { .kind = DW_V_STRING, .s = s };
	return v;
}

static inline struct dw_val dw_val_entity(const struct dw_uid *u)
{
	struct dw_val v = { .kind = DW_V_ENTITY, .uid = u };
	return v;
}

void dw_uid_init(struct dw_uid *u, struct dw_str type, struct dw_str id);
/* A new UID in a (type and id copied); NULL on ENOMEM. */
struct dw_uid *dw_uid_new(struct dw_arena *a, struct dw_str type, struct dw_str id);

static inline bool dw_uid_eq(const struct dw_uid *a, const struct dw_uid *b)
{
	return a == b || (a->hash == b->hash && dw_str_eq(a->id, b->id) &&
			  dw_str_eq(a->type, b->type));
}

/* Cedar equality (==): never fails; different kinds are unequal. */
bool dw_val_eq(struct dw_val a, struct dw_val b);
/* A total order used only for canonical sets (kind first, then contents); it is
 * not Cedar's `<`. */
int dw_val_cmp(struct dw_val a, struct dw_val b);

/* Build a canonical set from n values (sorted and deduplicated in place in v,
 * which is then copied into a).  NULL on ENOMEM. */
const struct dw_set *dw_set_build(struct dw_arena *a, struct dw_val *v, uint32_t n);
/* Build a canonical record; returns NULL and sets *dup to the index of a
 * duplicated key (caller's order) when one is found, or *dup = UINT32_MAX on
 * ENOMEM.  f is reordered. */
const struct dw_rec *dw_rec_build(struct dw_arena *a, struct dw_field *f, uint32_t n,
				  uint32_t *dup);
/* Field lookup by key (binary search); NULL if absent. */
const struct dw_val *dw_rec_get(const struct dw_rec *r, struct dw_str key);
bool dw_set_contains(const struct dw_set *s, struct dw_val v);

/* Append a Cedar-syntax rendering of v to a growable buffer (for messages, the
 * CLI and tests).  Returns 0 or -ENOMEM. */
struct dw_buf {
	char *p;
	size_t n, cap;
};
/* Make room for n more bytes and a NUL (out of line: the rare path). */
int dw_buf_grow(struct dw_buf *b, size_t n);
static inline int dw_buf_put(struct dw_buf *b, const char *s, size_t n)
{
	if (DW_UNLIKELY(b->n + n + 1 > b->cap || b->n + n < b->n) && dw_buf_grow(b, n) != 0)
		return -ENOMEM;
	if (n != 0)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}
int dw_buf_putc(struct dw_buf *b, char c);
int dw_buf_printf(struct dw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dw_buf_free(struct dw_buf *b);
/* Cedar string literal quoting (escapes as Cedar's Display does). */
int dw_buf_put_quoted(struct dw_buf *b, struct dw_str s);
int dw_val_format(struct dw_buf *b, struct dw_val v);
int dw_uid_format(struct dw_buf *b, const struct dw_uid *u);

#endif
