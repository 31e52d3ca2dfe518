/* tval.h - values of Dogwood's temporal domain (docs/engine.md "Reference semantics").
 *
 * Event records (the `logged` record predicates match, the request context
 * `context.*` terms read) hold these, not Cedar values: the temporal domain
 * has null, ordered arrays and decimals kept as text, and its equality
 * (dom_eq) is not Cedar's `==`.
 *
 * A dw_tval is immutable once built; everything it points to belongs to some
 * arena or to the event blob that holds it.  Records are canonical: fields
 * sorted by key bytes, keys unique.  Decimals are canonicalised when their
 * text is a valid Cedar decimal (`dec_ok`, value in i as value * 10^4), so
 * dom_eq and the hash compare numbers ("1.5" equals "1.50"); any other
 * spelling equals only the identical text. */
#ifndef DW_TVAL_H
#define DW_TVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "util.h"

enum dw_tv_kind {
	DW_TV_NULL = 1,
	DW_TV_BOOL,
	DW_TV_INT,
	DW_TV_DECIMAL,      /* s = the text; dec_ok: i = value * 10^4 */
	DW_TV_STRING,       /* s */
	DW_TV_ENTITY,       /* type = "Ns::Type", s = id */
	DW_TV_ARRAY,        /* n items, in order */
	DW_TV_RECORD,       /* n fields, sorted by key, unique */
};

struct dw_tfv;

struct dw_tval {
	uint8_t kind;                  /* enum dw_tv_kind */
	bool b;                        /* BOOL */
	bool dec_ok;                   /* DECIMAL: the text is a valid Cedar decimal */
	uint32_t n;                    /* ARRAY / RECORD */
	int64_t i;                     /* INT; DECIMAL when dec_ok */
	struct dw_str s;               /* STRING, DECIMAL text, ENTITY id */
	struct dw_str type;            /* ENTITY type path */
	union {
		const struct dw_tval *items;   /* ARRAY */
		const struct dw_tfv *fields;   /* RECORD */
	};
};

struct dw_tfv {
	struct dw_str key;
	struct dw_tval val;
};

static inline struct dw_tval dw_tv_int(int64_t i)
{
	struct dw_tval v = { .kind = DW_TV_INT, .i = i };
	return v;
}

static inline struct dw_tval dw_tv_string(struct dw_str s)
{
	struct dw_tval v = { .kind = DW_TV_STRING, .s = s };
	return v;
}

/* A decimal from its text (canonicalised when Cedar accepts the spelling). */
struct dw_tval dw_tv_decimal(struct dw_str text);

/* dom_eq: structural; no coercion across kinds; decimals numerically when both
 * are valid, else by text. */
bool dw_tval_eq(const struct dw_tval *a, const struct dw_tval *b);
/* A hash consistent with dw_tval_eq. */
uint64_t dw_tval_hash(const struct dw_tval *v, uint64_t seed);

/* Field lookup in a record (binary search); NULL when v is not a record or the
 * key is absent. */
const struct dw_tval *dw_tval_field(const struct dw_tval *rec, struct dw_str key);
/* Dotted-path lookup ("input.path"), descending nested records; NULL when any
 * step is missing or not a record. */
const struct dw_tval *dw_tval_path(const struct dw_tval *rec, struct dw_str dotted);

/* Build a canonical record from n fields (reordered in place, then copied into
 * a).  0, -EEXIST with *dup = the index (caller's order before sorting is
 * lost: *dup names the key) of a repeated key, or -ENOMEM. */
int dw_tval_record(struct dw_arena *a, struct dw_tfv *f, uint32_t n, struct dw_tval *out,
		   struct dw_str *dup);

/* Deep copy into a: 0 or -ENOMEM. */
int dw_tval_copy(struct dw_arena *a, const struct dw_tval *v, struct dw_tval *out);
/* Bytes a deep copy needs (for single-block event copies), and the copy into
 * a caller buffer of at least that size (aligned to 8).  The size excludes
 * *out itself, is a multiple of 8 and is 0 for scalars; *buf advances by
 * exactly that much.  Copied strings keep a NUL after their bytes; empty ones
 * point to a static "". */
size_t dw_tval_deep_size(const struct dw_tval *v);
void dw_tval_deep_copy(const struct dw_tval *v, struct dw_tval *out, char **buf);

/* Render for messages and `cairn history show`: JSON, with entities as
 * {"__entity":{"type":…,"id":…}}, decimals as {"__extn":{"fn":"decimal",
 * "arg":…}} (the text as written), null as null.  Compact (no spaces);
 * control characters and NUL are \u-escaped; bytes that are not UTF-8 come
 * out as \ufffd.  0, -ENOMEM, or -EINVAL for a value of unknown kind. */
struct dw_buf;
int dw_tval_to_json(struct dw_buf *b, const struct dw_tval *v);

/* Convert Cedar-style JSON (the format above; plain numbers are integers,
 * other numbers are refused; of the extension forms only decimal) into a tval
 * in a.  0, or -EINVAL with a message in err (naming the path, `at .a[2]: …`),
 * or -ENOMEM; on failure nothing stays in a.  Values nested more than 128
 * levels below j are refused. */
struct json_t;
int dw_tval_from_json(struct dw_arena *a, const struct json_t *j, struct dw_tval *out,
		      char *err, size_t errlen);

#endif
