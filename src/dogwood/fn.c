/* fn.c - the table of built-in methods and extension functions, and `like`. */
#include "ast.h"

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
