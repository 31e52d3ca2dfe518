/* ext.h - Cedar's extension types: ipaddr, decimal, datetime, duration.
 *
 * Pure functions over plain C values, byte-exact with Cedar 4.x (its extension
 * types; docs/formats.md §1).  Parsers take a counted string (not
 * NUL-terminated; may contain NUL) and return 0, or -1 with *why set to a
 * static message naming the reason (the value behind *out is then
 * unspecified).  Nothing here allocates. */
#ifndef DW_EXT_H
#define DW_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "value.h"   /* struct dw_ipaddr */

/* ip("…"): IPv4 dotted quad or IPv6 (with `::`), optional /prefix; whole string
 * at most 43 bytes; no IPv4-embedded IPv6; no leading zeros; host bits kept. */
int dw_ip_parse(const char *s, size_t n, struct dw_ipaddr *out, const char **why);
bool dw_ip_is_loopback(const struct dw_ipaddr *a);
bool dw_ip_is_multicast(const struct dw_ipaddr *a);
/* a.isInRange(b): same family and a's network range within b's. */
bool dw_ip_in_range(const struct dw_ipaddr *a, const struct dw_ipaddr *b);
bool dw_ip_eq(const struct dw_ipaddr *a, const struct dw_ipaddr *b);
/* Text as Cedar displays it ("10.0.0.1/32", "::1/128"); returns length written
 * (buffer of at least 64 bytes). */
size_t dw_ip_format(const struct dw_ipaddr *a, char *buf, size_t cap);

/* decimal("…"): -?D+.D{1,4}, value*10^4 in i64. */
int dw_decimal_parse(const char *s, size_t n, int64_t *out, const char **why);
size_t dw_decimal_format(int64_t v, char *buf, size_t cap);   /* "1.2300" style */

/* datetime("…"): the five accepted shapes; *ms since epoch (UTC). */
int dw_datetime_parse(const char *s, size_t n, int64_t *ms, const char **why);
/* toDate / toTime; 0 or -1 on overflow. */
int dw_datetime_to_date(int64_t ms, int64_t *out);
int64_t dw_datetime_to_time(int64_t ms);
size_t dw_datetime_format(int64_t ms, char *buf, size_t cap); /* "2024-01-01T00:00:00.000Z" */

/* duration("…"): -?(Nd)?(Nh)?(Nm)?(Ns)?(Nms)?, at least one unit; *ms. */
int dw_duration_parse(const char *s, size_t n, int64_t *ms, const char **why);
size_t dw_duration_format(int64_t ms, char *buf, size_t cap);   /* "1d2h3m4s5ms", "0ms" */

/* Call an extension function by its Cedar name on already-evaluated arguments:
 * the constructors ip, decimal, datetime, duration (one String), and offset,
 * durationSince, toDate, toTime (used by the JSON `__extn` forms).  Results
 * needing storage (ipaddr) are allocated in a.  Returns 0; -1 with *why for a
 * failed extension call (bad string, overflow, wrong argument type or count);
 * -2 when fn is not one of these names; -ENOMEM. */
int dw_ext_call(struct dw_arena *a, struct dw_str fn, const struct dw_val *args, size_t n,
		struct dw_val *out, const char **why);

#endif
