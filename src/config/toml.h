/* toml.h - a strict TOML 1.0 reader (Debian 12 ships no C TOML library).
 *
 * The whole document is parsed into a tree owned by one struct toml_doc; every
 * value and every key remembers where it was written (1-based line and column,
 * columns in characters) so that a configuration layer can refuse an unknown
 * key or a bad value with file:line:col.  Anything TOML 1.0 does not allow is
 * an error: the parser stops at the first one and reports its position and a
 * message naming what is wrong.  Nothing is ever guessed or silently fixed. */
#ifndef CAIRN_TOML_H
#define CAIRN_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum toml_kind {
	TOML_STRING = 1,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME,         /* offset date-time: 1979-05-27T07:32:00Z */
	TOML_LOCAL_DATETIME,   /* 1979-05-27T07:32:00 */
	TOML_LOCAL_DATE,       /* 1979-05-27 */
	TOML_LOCAL_TIME,       /* 07:32:00 */
	TOML_ARRAY,
	TOML_TABLE,
};

struct toml_datetime {
	int year, month, day;          /* date kinds */
	int hour, minute, second;      /* time kinds */
	uint32_t nanosecond;           /* fractional seconds, truncated to ns */
	bool has_offset;
	int offset_minutes;            /* TOML_DATETIME; Z is 0 */
};

struct toml_value;

struct toml_kv {
	const char *key;               /* NUL-terminated; may hold NUL only via escapes: use key_len */
	size_t key_len;
	unsigned line, col;            /* where the key was written (its last segment) */
	struct toml_value *value;
};

struct toml_value {
	enum toml_kind kind;
	unsigned line, col;            /* where the value (or the table header) starts */
	union {
		struct { const char *p; size_t n; } s;          /* STRING (UTF-8, NUL-terminated copy) */
		int64_t i;                                      /* INTEGER */
		double f;                                       /* FLOAT (inf, nan included) */
		bool b;                                         /* BOOL */
		struct toml_datetime dt;                        /* date/time kinds */
		struct { size_t n; struct toml_value **v; } arr;  /* ARRAY */
		struct { size_t n; struct toml_kv *kv; } tab;     /* TABLE, in document order */
	};
};

struct toml_doc;

struct toml_error {
	unsigned line, col;            /* 1-based; 0 when there is no position */
	char msg[256];
};

/* Parse text[0, len) (file names the input in messages).  0 and *out, or
 * -EINVAL with err filled, or -ENOMEM.  Free with toml_free. */
int toml_parse(const char *text, size_t len, struct toml_doc **out, struct toml_error *err);
void toml_free(struct toml_doc *doc);

/* The root table. */
const struct toml_value *toml_root(const struct toml_doc *doc);
/* A key of a table, or NULL. */
const struct toml_value *toml_get(const struct toml_value *table, const char *key);

/* The toml-test JSON encoding of v ({"type": "integer", "value": "42"} for
 * scalars, arrays and objects as such) into a malloc'd NUL-terminated string;
 * NULL on ENOMEM.  For differential tests. */
char *toml_to_test_json(const struct toml_value *v);

#endif
