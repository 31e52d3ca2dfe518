/* json_load.c - see json_load.h. */
#include "json_load.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In text[off, end) (a string token without its quotes): rewrite `\u0000`
 * escapes; report whether U+FFFF appears, escaped or raw. */
static void dw_rewrite_key(char *text, size_t off, size_t end, bool *rewrote, bool *has_ffff)
{
	for (size_t i = off; i < end; i++) {
		if ((unsigned char)text[i] == 0xEF && i + 2 < end && (unsigned char)text[i + 1] == 0xBF &&
		    (unsigned char)text[i + 2] == 0xBF)
			*has_ffff = true;
		if (text[i] != '\\' || i + 1 >= end)
			continue;
		if (text[i + 1] == 'u' && i + 5 < end) {
			if (memcmp(text + i + 2, "0000", 4) == 0) {
				memcpy(text + i + 2, "ffff", 4);
				*rewrote = true;
			} else if (strncasecmp(text + i + 2, "ffff", 4) == 0) {
				*has_ffff = true;
			}
			i += 5;
		} else {
			i++;    /* skip the escaped character */
		}
	}
}

/* Rename keys holding U+FFFF (EF BF BF) back to U+0000, depth first. */
static int dw_restore_keys(json_t *j, int depth)
{
	if (depth > 10000)
		return -1;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++)
			if (dw_restore_keys(json_array_get(j, i), depth + 1) != 0)
				return -1;
		return 0;
	}
	if (!json_is_object(j))
		return 0;
	/* collect first: the object must not change while it is iterated */
	size_t n = json_object_size(j), k = 0;
	struct rename { char *from; size_t flen; char *to; size_t tlen; } *rn = NULL;
	const char *key;
	size_t klen;
	json_t *v;
	int r = 0;

	json_object_keylen_foreach(j, key, klen, v) {
		if (dw_restore_keys(v, depth + 1) != 0)
			return -1;
		if (memmem(key, klen, "\xEF\xBF\xBF", 3) == NULL)
			continue;
		if (rn == NULL && (rn = calloc(n, sizeof *rn)) == NULL)
			return -1;
		rn[k].from = malloc(klen + 1);
		rn[k].to = malloc(klen + 1);
		if (rn[k].from == NULL || rn[k].to == NULL) {
			k++;
			r = -1;
			break;
		}
		memcpy(rn[k].from, key, klen);
		rn[k].flen = klen;
		for (size_t i = 0, o = 0; i < klen; ) {
			if (i + 2 < klen && memcmp(key + i, "\xEF\xBF\xBF", 3) == 0) {
				rn[k].to[o++] = '\0';
				i += 3;
			} else {
				rn[k].to[o++] = key[i++];
			}
			rn[k].tlen = o;
		}
		k++;
	}
	for (size_t i = 0; i < k && r == 0; i++) {
		json_t *val = json_object_getn(j, rn[i].from, rn[i].flen);
		if (val == NULL || json_object_setn_new_nocheck(j, rn[i].to, rn[i].tlen,
								json_incref(val)) != 0 ||
		    json_object_deln(j, rn[i].from, rn[i].flen) != 0)
			r = -1;
	}
	for (size_t i = 0; i < k; i++) {
		free(rn[i].from);
		free(rn[i].to);
	}
	free(rn);
	return r;
}

json_t *dw_json_loadb(const char *src, size_t len, size_t flags, json_error_t *err)
{
	bool rewrote = false, has_ffff = false;
	char *text;
	json_t *j;

	if (len < 6 || memmem(src, len, "\\u0000", 6) == NULL)
		return json_loadb(src, len, flags, err);
	text = malloc(len);
	if (text == NULL)
		return json_loadb(src, len, flags, err);
	memcpy(text, src, len);
	/* find string tokens; a string followed by `:` is a key */
	for (size_t i = 0; i < len; i++) {
		if (text[i] != '"')
			continue;
		size_t start = ++i;
		while (i < len && text[i] != '"')
			i += text[i] == '\\' ? 2 : 1;
		if (i >= len)
			break;
		size_t after = i + 1;
		while (after < len && (text[after] == ' ' || text[after] == '\t' ||
				       text[after] == '\n' || text[after] == '\r'))
			after++;
		if (after < len && text[after] == ':')
			dw_rewrite_key(text, start, i, &rewrote, &has_ffff);
	}
	if (!rewrote) {
		free(text);
		return json_loadb(src, len, flags, err);
	}
	if (has_ffff) {
		free(text);
		if (err != NULL) {
			memset(err, 0, sizeof *err);
			snprintf(err->text, sizeof err->text, "object keys holding both U+0000 and "
				 "U+FFFF are not supported");
			err->line = 1;
			err->column = 1;
		}
		return NULL;
	}
	j = json_loadb(text, len, flags, err);
	free(text);
	if (j != NULL && dw_restore_keys(j, 0) != 0) {
		json_decref(j);
		if (err != NULL) {
			memset(err, 0, sizeof *err);
			snprintf(err->text, sizeof err->text, "out of memory or nesting too deep");
		}
		return NULL;
	}
	return j;
}
