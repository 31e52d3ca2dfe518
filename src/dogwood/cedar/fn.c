/* fn.c - the table of built-in methods and extension functions, and `like`. */
#include "ast.h"

#include <errno.h>
#include <stdlib.h>

const struct dw_fn_info dw_fn_table[DW_FN__COUNT] = {
	[DW_FN_IP] = { "ip", false, false, 1 },
	[DW_FN_DECIMAL] = { "decimal", false, false, 1 },
	[DW_FN_DATETIME] = { "datetime", false, false, 1 },
	[DW_FN_DURATION] = { "duration", false, false, 1 },
	[DW_FN_CONTAINS] = { "contains", true, true, 2 },
	[DW_FN_CONTAINS_ALL] = { "containsAll", true, true, 2 },
	[DW_FN_CONTAINS_ANY] = { "containsAny", true, true, 2 },
	[DW_FN_IS_EMPTY] = { "isEmpty", true, true, 1 },
	[DW_FN_GET_TAG] = { "getTag", true, true, 2 },
	[DW_FN_HAS_TAG] = { "hasTag", true, true, 2 },
	[DW_FN_IS_IPV4] = { "isIpv4", true, false, 1 },
	[DW_FN_IS_IPV6] = { "isIpv6", true, false, 1 },
	[DW_FN_IS_LOOPBACK] = { "isLoopback", true, false, 1 },
	[DW_FN_IS_MULTICAST] = { "isMulticast", true, false, 1 },
	[DW_FN_IS_IN_RANGE] = { "isInRange", true, false, 2 },
	[DW_FN_LESS_THAN] = { "lessThan", true, false, 2 },
	[DW_FN_LESS_THAN_OR_EQUAL] = { "lessThanOrEqual", true, false, 2 },
	[DW_FN_GREATER_THAN] = { "greaterThan", true, false, 2 },
	[DW_FN_GREATER_THAN_OR_EQUAL] = { "greaterThanOrEqual", true, false, 2 },
	[DW_FN_OFFSET] = { "offset", true, false, 2 },
	[DW_FN_DURATION_SINCE] = { "durationSince", true, false, 2 },
	[DW_FN_TO_DATE] = { "toDate", true, false, 1 },
	[DW_FN_TO_TIME] = { "toTime", true, false, 1 },
	[DW_FN_TO_MILLISECONDS] = { "toMilliseconds", true, false, 1 },
	[DW_FN_TO_SECONDS] = { "toSeconds", true, false, 1 },
	[DW_FN_TO_MINUTES] = { "toMinutes", true, false, 1 },
	[DW_FN_TO_HOURS] = { "toHours", true, false, 1 },
	[DW_FN_TO_DAYS] = { "toDays", true, false, 1 },
};

enum dw_fn dw_fn_lookup(struct dw_str name, bool method)
{
	for (int i = 1; i < DW_FN__COUNT; i++)
		if (dw_fn_table[i].method == method && dw_str_eq_c(name, dw_fn_table[i].name))
			return (enum dw_fn)i;
	return 0;
}

static const char *dw_memmem(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn == 0)
		return h;
	if (hn < nn)
		return NULL;
	for (size_t i = 0; i + nn <= hn; i++)
		if (h[i] == n[0] && memcmp(h + i, n, nn) == 0)
			return h + i;
	return NULL;
}

/* Glob match with `*` = any sequence.  Matching the first piece as a prefix,
 * the last as a suffix and each middle piece at its leftmost position is
 * exact for this pattern language (no `?`, no classes), in linear time per
 * piece.  Byte matching equals Cedar's scalar-value matching on valid UTF-8. */
bool dw_pattern_match(const struct dw_pattern *p, struct dw_str s)
{
	const char *cur = s.p, *end = s.p + s.n;
	struct dw_str first = p->piece[0], last;

	if (p->n_pieces == 1)
		return dw_str_eq(first, s);
	last = p->piece[p->n_pieces - 1];
	if ((size_t)first.n + last.n > s.n)
		return false;
	if (first.n && memcmp(s.p, first.p, first.n) != 0)
		return false;
	if (last.n && memcmp(end - last.n, last.p, last.n) != 0)
		return false;
	cur += first.n;
	end -= last.n;
	for (uint32_t i = 1; i + 1 < p->n_pieces; i++) {
		const char *at = dw_memmem(cur, (size_t)(end - cur), p->piece[i].p, p->piece[i].n);
		if (at == NULL)
			return false;
		cur = at + p->piece[i].n;
	}
	return true;
}

uint32_t dw_expr_nchildren(const struct dw_expr *e)
{
	switch (e->op) {
	case DW_E_NOT: case DW_E_NEG:
		return 1;
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN:
		return 2;
	case DW_E_IF:
		return 3;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS: case DW_E_LIKE:
		return 1;
	case DW_E_SET: case DW_E_RECORD: case DW_E_CALL: case DW_E_MACRO: case DW_E_PROVIDER:
		return e->n;
	default:
		return 0;
	}
}

struct dw_expr *dw_expr_child(const struct dw_expr *e, uint32_t i)
{
	switch (e->op) {
	case DW_E_NOT: case DW_E_NEG:
	case DW_E_AND: case DW_E_OR: case DW_E_EQ: case DW_E_LT: case DW_E_LE:
	case DW_E_ADD: case DW_E_SUB: case DW_E_MUL: case DW_E_IN: case DW_E_IF:
		return i == 0 ? e->k.a : i == 1 ? e->k.b : e->k.c;
	case DW_E_HAS: case DW_E_ATTR: case DW_E_IS:
		return e->attr.e;
	case DW_E_LIKE:
		return e->like.e;
	default:
		return e->list.items[i];
	}
}

int dw_expr_measure(struct dw_expr *root, uint32_t max_depth, uint32_t max_size)
{
	struct frame {
		struct dw_expr *e;
		uint32_t next;
	} *st = NULL, *ns;
	size_t n = 0, cap = 0;
	int r = 0;

	if (root->depth != 0)
		goto check;
	cap = 64;
	st = malloc(cap * sizeof *st);
	if (st == NULL)
		return -ENOMEM;
	st[n++] = (struct frame){ root, 0 };
	while (n != 0) {
		struct frame *f = &st[n - 1];
		uint32_t nc = dw_expr_nchildren(f->e);

		if (f->next < nc) {
			struct dw_expr *c = dw_expr_child(f->e, f->next++);
			if (c->depth != 0)
				continue;          /* measured already (shared subtree) */
			if (n > max_depth) {
				r = 1;
				goto out;
			}
			if (n == cap) {
				cap *= 2;
				ns = realloc(st, cap * sizeof *st);
				if (ns == NULL) {
					r = -ENOMEM;
					goto out;
				}
				st = ns;
			}
			st[n++] = (struct frame){ c, 0 };
			continue;
		}
		/* all children measured: fold them in */
		uint32_t depth = 0;
		uint64_t size = 1;
		for (uint32_t i = 0; i < nc; i++) {
			const struct dw_expr *c = dw_expr_child(f->e, i);
			if (c->depth > depth)
				depth = c->depth;
			size += c->size;
		}
		f->e->depth = (uint16_t)(depth + 1 > UINT16_MAX ? UINT16_MAX : depth + 1);
		f->e->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
		n--;
	}
check:
	if (root->depth > max_depth)
		r = 1;
	else if (root->size > max_size)
		r = 2;
out:
	free(st);
	return r;
}
