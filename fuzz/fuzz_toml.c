/* fuzz_toml.c - libFuzzer target: the strict TOML 1.0 reader (src/config/toml.h).
 *
 * The whole input is one document.  toml_parse must keep the promises of
 * toml.h, which this target checks:
 *
 *   - On failure, -EINVAL with a non-empty message and a position inside the
 *     document (line >= 1, col >= 1, at most one past the last character of
 *     that line: "found end of input" or "found a newline" point there), or
 *     -ENOMEM with no position (0:0, "out of memory").  Nothing else, and
 *     *out untouched (an error changes nothing).  A second parse
 *     fails the same way (same code, position and message).
 *   - On success, every value and every key has a position inside the
 *     document, at a character where it can start (toml.h: "where the value
 *     (or the table header) starts", a key's "last segment"): a quote for a
 *     string, `[` for an array, a sign, digit or `i`/`n` for a number, ...
 *     Strings and keys are NUL-terminated at their length; every key of a
 *     table (without a NUL in it) is found again by toml_get.
 *   - toml_to_test_json succeeds; jansson reads its output back as JSON
 *     with the same shape (objects with the same keys, arrays of the same
 *     length, scalars as {"type", "value"} with the value's type, strings
 *     byte for byte); a second parse of the same bytes gives identical JSON.
 *
 * A broken promise aborts, so libFuzzer keeps the input as a crash; leaks are
 * ASan's to report.  Everything is freed before returning; nothing is printed. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* --- positions: line L is text[start[L - 1], end of line), columns count
 * UTF-8 lead bytes (every byte that is not 10xxxxxx), as toml.c does --- */

struct fz_doc {
	const uint8_t *p;
	size_t n;
	size_t *start;      /* start[i]: offset of line i + 1 */
	size_t lines;
};

static bool fz_lines(struct fz_doc *d, const uint8_t *p, size_t n)
{
	size_t i, k = 0, lines = 1;

	for (i = 0; i < n; i++)
		lines += p[i] == '\n';
	d->p = p;
	d->n = n;
	d->lines = lines;
	if ((d->start = malloc(lines * sizeof *d->start)) == NULL)
		return false;
	d->start[k++] = 0;
	for (i = 0; i < n; i++)
		if (p[i] == '\n')
			d->start[k++] = i + 1;
	return true;
}

/* Offset of the character at line:col, or of the end of the line when col is
 * one past its last character (only if past_end).  false when outside. */
static bool fz_offset(const struct fz_doc *d, unsigned line, unsigned col, bool past_end,
		      size_t *off)
{
	size_t i, end;
	unsigned c = 0;

	if (line < 1 || col < 1 || line > d->lines)
		return false;
	i = d->start[line - 1];
	end = line < d->lines ? d->start[line] - 1 : d->n;
	for (; i < end; i++) {
		if ((d->p[i] & 0xC0) == 0x80)
			continue;
		if (++c == col) {
			*off = i;
			return true;
		}
	}
	if (past_end && col == c + 1) {
		*off = end;
		return true;
	}
	return false;
}

static bool fz_is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static bool fz_key_start(int c)
{
	return fz_is_bare(c) || c == '"' || c == '\'';
}

/* Can a value of this kind start with c? */
static bool fz_value_start(enum toml_kind k, int c)
{
	switch (k) {
	case TOML_STRING:
		return c == '"' || c == '\'';
	case TOML_INTEGER:
		return (c >= '0' && c <= '9') || c == '+' || c == '-';
	case TOML_FLOAT:
		return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'i' || c == 'n';
	case TOML_BOOL:
		return c == 't' || c == 'f';
	case TOML_DATETIME:
	case TOML_LOCAL_DATETIME:
	case TOML_LOCAL_DATE:
	case TOML_LOCAL_TIME:
		return c >= '0' && c <= '9';
	case TOML_ARRAY:
		return c == '[';     /* a literal, or the first [[header]] */
	case TOML_TABLE:
		/* inline, a header, or a key segment (dotted keys, header prefixes) */
		return c == '{' || c == '[' || fz_key_start(c);
	}
	return false;
}

/* --- the tree ---------------------------------------------------------------- */

static void fz_check_tree(const struct fz_doc *d, const struct toml_value *v, bool *nul_key);

/* The keys of table t and their values; *nul_key is set when a key holds a NUL. */
static void fz_check_table(const struct fz_doc *d, const struct toml_value *t, bool *nul_key)
{
	size_t off;

	if (t->tab.n > 0 && t->tab.kv == NULL)
		abort();
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];

		if (kv->key == NULL || kv->key[kv->key_len] != '\0' || kv->value == NULL ||
		    !fz_offset(d, kv->line, kv->col, false, &off) || !fz_key_start(d->p[off]))
			abort();
		if (strlen(kv->key) != kv->key_len)
			*nul_key = true;
		else if (toml_get(t, kv->key) != kv->value)
			abort();
		fz_check_tree(d, kv->value, nul_key);
	}
}

static void fz_check_tree(const struct fz_doc *d, const struct toml_value *v, bool *nul_key)
{
	size_t off, i;

	if (!fz_offset(d, v->line, v->col, false, &off) || !fz_value_start(v->kind, d->p[off]))
		abort();
	switch (v->kind) {
	case TOML_STRING:
		if (v->s.p == NULL || v->s.p[v->s.n] != '\0')
			abort();
		break;
	case TOML_ARRAY:
		if (v->arr.n > 0 && v->arr.v == NULL)
			abort();
		for (i = 0; i < v->arr.n; i++)
			fz_check_tree(d, v->arr.v[i], nul_key);
		break;
	case TOML_TABLE:
		fz_check_table(d, v, nul_key);
		break;
	default:
		break;
	}
}

/* --- the test JSON, read back ------------------------------------------------- */

static const char *fz_test_type(enum toml_kind k)
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
	default: return NULL;
	}
}

static bool fz_json_str(const json_t *j, const char *p, size_t n)
{
	return json_is_string(j) && json_string_length(j) == n &&
	       memcmp(json_string_value(j), p, n) == 0;
}

/* Does j encode v?  Keys hold no NUL here (the caller checked). */
static bool fz_json_eq(const json_t *j, const struct toml_value *v)
{
	const char *type;
	const json_t *val;
	size_t i;

	switch (v->kind) {
	case TOML_TABLE:
		if (!json_is_object(j) || json_object_size(j) != v->tab.n)
			return false;
		for (i = 0; i < v->tab.n; i++) {
			const json_t *m = json_object_getn(j, v->tab.kv[i].key, v->tab.kv[i].key_len);

			if (m == NULL || !fz_json_eq(m, v->tab.kv[i].value))
				return false;
		}
		return true;
	case TOML_ARRAY:
		if (!json_is_array(j) || json_array_size(j) != v->arr.n)
			return false;
		for (i = 0; i < v->arr.n; i++)
			if (!fz_json_eq(json_array_get(j, i), v->arr.v[i]))
				return false;
		return true;
	default:
		break;
	}
	type = fz_test_type(v->kind);
	val = json_object_get(j, "value");
	if (type == NULL || !json_is_object(j) || json_object_size(j) != 2 ||
	    !fz_json_str(json_object_get(j, "type"), type, strlen(type)) || !json_is_string(val))
		return false;
	if (v->kind == TOML_STRING)
		return fz_json_str(val, v->s.p, v->s.n);
	if (v->kind == TOML_BOOL)
		return strcmp(json_string_value(val), v->b ? "true" : "false") == 0;
	return json_string_length(val) > 0;
}

/* --- the target ---------------------------------------------------------------- */

static bool fz_err_eq(const struct toml_error *a, const struct toml_error *b)
{
	return a->line == b->line && a->col == b->col && strcmp(a->msg, b->msg) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_doc d = { 0 };
	struct toml_doc *doc = NULL, *doc2 = NULL;
	struct toml_error err, err2;
	const struct toml_value *root;
	char *json = NULL, *json2 = NULL;
	bool nul_key = false;
	size_t off;
	int r, r2;

	if (!fz_lines(&d, data, size))
		return 0;
	doc = (struct toml_doc *)&d;   /* any address toml_parse cannot have made */
	r = toml_parse((const char *)data, size, &doc, &err);
	if (r != 0) {
		if (doc != (struct toml_doc *)&d)
			abort();
		doc = NULL;
		if (memchr(err.msg, '\0', sizeof err.msg) == NULL || err.msg[0] == '\0')
			abort();
		if (r == -EINVAL) {
			if (!fz_offset(&d, err.line, err.col, true, &off))
				abort();
		} else if (r != -ENOMEM || err.line != 0 || err.col != 0) {
			abort();
		}
		r2 = toml_parse((const char *)data, size, &doc2, &err2);
		if (r2 == -ENOMEM || r == -ENOMEM)
			goto out;
		if (r2 != r || !fz_err_eq(&err, &err2))
			abort();
		goto out;
	}
	root = toml_root(doc);
	if (root == NULL || root->kind != TOML_TABLE || root->line != 1 || root->col != 1)
		abort();
	fz_check_table(&d, root, &nul_key);   /* at 1:1 even when the document is empty */
	if ((json = toml_to_test_json(root)) == NULL)
		abort();
	if (!nul_key) {
		/* jansson refuses NUL in object keys; other documents must read back */
		json_error_t je;
		json_t *j = json_loads(json, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);

		if (j == NULL || !fz_json_eq(j, root))
			abort();
		json_decref(j);
	}
	r2 = toml_parse((const char *)data, size, &doc2, &err2);
	if (r2 == -ENOMEM)
		goto out;
	if (r2 != 0 || (json2 = toml_to_test_json(toml_root(doc2))) == NULL ||
	    strcmp(json, json2) != 0)
		abort();
out:
	free(json2);
	free(json);
	toml_free(doc2);
	toml_free(doc);
	free(d.start);
	return 0;
}
