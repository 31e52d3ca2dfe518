/* ext.c - see ext.h.
 *
 * Every rule here is copied from Cedar 4.x (cedar-policy-core
 * src/extensions/{ipaddr,decimal,datetime}.rs) or, for addresses, from Rust's
 * std::net parser (core/src/net/parser.rs) and Display (core/src/net/ip_addr.rs);
 * comments name the rule where it is not obvious.  Inputs are counted byte
 * strings from policies and requests: nothing is read past n, and s may be NULL
 * when n == 0.  Parsers write *out only on success.
 *
 * Divisions: output helpers; ipaddr; decimal; datetime; duration; dw_ext_call. */
#include "ext.h"

#include <errno.h>
#include <string.h>

#define DAY_MS INT64_C(86400000)

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* Value of n (<= 4) ASCII digits already checked by all_digits. */
static unsigned digits_value(const char *s, size_t n)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

static inline int fail(const char **why, const char *msg)
{
	if (why != NULL)
		*why = msg;
	return -1;
}

/* ---- Output helpers ------------------------------------------------------ */

/* Text goes to p[0..cap-1) and is always NUL-terminated when cap > 0.  Once a
 * byte does not fit, no later byte does either, so a truncated result is a
 * clean prefix of the full text. */
struct out {
	char *p;
	size_t cap, n;
	bool full;
};

static void out_putc(struct out *o, char c)
{
	if (!o->full && o->n + 1 < o->cap)
		o->p[o->n++] = c;
	else
		o->full = true;
}

static void out_puts(struct out *o, const char *s)
{
	while (*s != '\0')
		out_putc(o, *s++);
}

/* Decimal, zero-padded to at least width digits. */
static void out_u64(struct out *o, uint64_t v, unsigned width)
{
	char tmp[24];
	unsigned k = 0;

	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (k < width && k < sizeof tmp)
		tmp[k++] = '0';
	while (k > 0)
		out_putc(o, tmp[--k]);
}

static void out_hex16(struct out *o, unsigned v)
{
	static const char hex[] = "0123456789abcdef";
	int shift = 12;

	while (shift > 0 && ((v >> shift) & 0xf) == 0)
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		out_putc(o, hex[(v >> shift) & 0xf]);
}

/* Returns the length written (not counting the NUL). */
static size_t out_end(struct out *o)
{
	if (o->cap > 0)
		o->p[o->n] = '\0';   /* n < cap: out_putc keeps room for it */
	return o->n;
}

static inline uint64_t magnitude(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;   /* INT64_MIN included */
}

/* ---- ipaddr --------------------------------------------------------------- */

/* ipaddr.rs IP_STR_REP_MAX_LEN: len("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/128"). */
#define IP_STR_MAX 43

static size_t count_byte(const char *s, size_t n, char c)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += s[i] == c;
	return k;
}

/* Rust read_ipv4_addr: exactly four decimal octets, each 1-3 digits, <= 255,
 * no leading zero unless the octet is "0" (octal is refused, RFC 6943 3.1.1).
 * The whole of s must be consumed. */
static bool ip_read_v4(const char *s, size_t n, uint8_t out[4])
{
	size_t i = 0;

	for (int g = 0; g < 4; g++) {
		unsigned v = 0, digits = 0;
		bool lead0;

		if (g > 0) {
			if (i >= n || s[i] != '.')
				return false;
			i++;
		}
		lead0 = i < n && s[i] == '0';
		while (i < n && is_digit(s[i])) {
			v = v * 10 + (unsigned)(s[i++] - '0');
			if (++digits > 3)
				return false;
		}
		if (digits == 0 || v > 255 || (lead0 && digits > 1))
			return false;
		out[g] = (uint8_t)v;
	}
	return i == n;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Rust read_groups: up to limit ':'-separated groups of 1-4 hex digits (leading
 * zeros allowed); a group that fails is not consumed, nor is its ':'.  Rust
 * also tries an embedded IPv4 tail here; we need not, because such a string
 * has >= 2 ':' and 3 '.' and dw_ip_parse has refused it already, and without
 * that branch a '.' can never be consumed, so both parsers reject the same
 * strings. */
static size_t ip_read_groups(const char *s, size_t n, size_t *pos, uint16_t *g, size_t limit)
{
	size_t i;

	for (i = 0; i < limit; i++) {
		size_t p = *pos;
		unsigned v = 0, digits = 0;

		if (i > 0) {
			if (p >= n || s[p] != ':')
				return i;
			p++;
		}
		while (p < n && hex_value(s[p]) >= 0) {
			v = v * 16 + (unsigned)hex_value(s[p++]);
			if (++digits > 4)
				return i;
		}
		if (digits == 0)
			return i;
		g[i] = (uint16_t)v;
		*pos = p;
	}
	return i;
}

/* Rust read_ipv6_addr: eight groups, or a head, "::" (one or more zero groups)
 * and a tail of at most 7 - head groups. */
static bool ip_read_v6(const char *s, size_t n, uint8_t out[16])
{
	uint16_t head[8] = { 0 }, tail[7] = { 0 };
	size_t pos = 0, nh, nt;

	nh = ip_read_groups(s, n, &pos, head, 8);
	if (nh < 8) {
		if (n - pos < 2 || s[pos] != ':' || s[pos + 1] != ':')
			return false;
		pos += 2;
		nt = ip_read_groups(s, n, &pos, tail, 7 - nh);
		memcpy(head + 8 - nt, tail, nt * sizeof tail[0]);
	}
	if (pos != n)
		return false;
	for (int i = 0; i < 8; i++) {
		out[2 * i] = (uint8_t)(head[i] >> 8);
		out[2 * i + 1] = (uint8_t)head[i];
	}
	return true;
}

/* ipaddr.rs parse_prefix: at most 2 (v4) or 3 (v6) characters, digits only, no
 * leading zero, not empty, at most max. */
static int ip_parse_prefix(const char *s, size_t n, unsigned max, size_t max_len,
			   uint8_t *out, const char **why)
{
	unsigned v;

	if (n > max_len)
		return fail(why, "ip: prefix length has too many characters");
	if (!all_digits(s, n))
		return fail(why, "ip: prefix length is not a decimal number");
	if (n > 1 && s[0] == '0')
		return fail(why, "ip: prefix length has a leading zero");
	if (n == 0)
		return fail(why, "ip: prefix length is empty");
	v = digits_value(s, n);
	if (v > max)
		return fail(why, "ip: prefix length is larger than the address");
	*out = (uint8_t)v;
	return 0;
}

int dw_ip_parse(const char *s, size_t n, struct dw_ipaddr *out, const char **why)
{
	struct dw_ipaddr a;
	const char *slash;
	size_t alen;

	if (n == 0)
		return fail(why, "ip: empty string");
	if (n > IP_STR_MAX)
		return fail(why, "ip: string is longer than 43 bytes");
	/* ipaddr.rs str_contains_colons_and_dots: refuse IPv4 embedded in IPv6
	 * ("::ffff:1.2.3.4"), counted over the whole string, prefix included. */
	if (count_byte(s, n, ':') >= 2 && count_byte(s, n, '.') >= 2)
		return fail(why, "ip: IPv4 embedded in IPv6 is not accepted");

	memset(&a, 0, sizeof a);
	slash = memchr(s, '/', n);          /* split_once('/'): the first one */
	alen = slash != NULL ? (size_t)(slash - s) : n;
	if (ip_read_v4(s, alen, a.addr))
		a.v6 = 0;
	else if (ip_read_v6(s, alen, a.addr))
		a.v6 = 1;
	else
		return fail(why, "ip: not an IPv4 or IPv6 address");

	if (slash == NULL)
		a.prefix = a.v6 ? 128 : 32;
	else if (ip_parse_prefix(slash + 1, n - alen - 1, a.v6 ? 128 : 32, a.v6 ? 3 : 2,
				 &a.prefix, why) != 0)
		return -1;
	*out = a;
	return 0;
}

static inline size_t ip_len(const struct dw_ipaddr *a)
{
	return a->v6 ? 16 : 4;
}

/* Rust is_loopback: 127.0.0.0/8 or exactly ::1; Cedar adds the prefix test so
 * that a range counts only if all of it is loopback. */
bool dw_ip_is_loopback(const struct dw_ipaddr *a)
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };

	if (!a->v6)
		return a->addr[0] == 127 && a->prefix >= 8;
	return memcmp(a->addr, v6_loopback, 16) == 0 && a->prefix >= 128;
}

/* Rust is_multicast: 224.0.0.0/4, ff00::/8; same prefix rule. */
bool dw_ip_is_multicast(const struct dw_ipaddr *a)
{
	if (!a->v6)
		return a->addr[0] >= 224 && a->addr[0] <= 239 && a->prefix >= 4;
	return a->addr[0] == 0xff && a->prefix >= 8;
}

/* Network (addr & netmask) and broadcast (addr | hostmask) of a, big-endian. */
static void ip_range(const struct dw_ipaddr *a, uint8_t lo[16], uint8_t hi[16])
{
	unsigned bits = a->prefix;

	for (size_t i = 0; i < ip_len(a); i++) {
		uint8_t mask;

		if (bits >= 8) {
			mask = 0xff;
			bits -= 8;
		} else {
			mask = bits != 0 ? (uint8_t)(0xffu << (8 - bits)) : 0;
			bits = 0;
		}
		lo[i] = a->addr[i] & mask;
		hi[i] = (uint8_t)(a->addr[i] | (uint8_t)~mask);
	}
}

bool dw_ip_in_range(const struct dw_ipaddr *a, const struct dw_ipaddr *b)
{
	uint8_t alo[16], ahi[16], blo[16], bhi[16];
	size_t len = ip_len(a);

	if (a->v6 != b->v6)
		return false;
	ip_range(a, alo, ahi);
	ip_range(b, blo, bhi);
	/* big-endian bytes compare like the u32/u128 of ipaddr.rs is_in_range */
	return memcmp(blo, alo, len) <= 0 && memcmp(ahi, bhi, len) <= 0;
}

bool dw_ip_eq(const struct dw_ipaddr *a, const struct dw_ipaddr *b)
{
	return a->v6 == b->v6 && a->prefix == b->prefix &&
	       memcmp(a->addr, b->addr, ip_len(a)) == 0;
}

static void out_ipv4(struct out *o, const uint8_t *b)
{
	for (int i = 0; i < 4; i++) {
		if (i > 0)
			out_putc(o, '.');
		out_u64(o, b[i], 1);
	}
}

static void out_groups(struct out *o, const uint16_t *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			out_putc(o, ':');
		out_hex16(o, g[i]);
	}
}

/* IPAddr Display is "{addr}/{prefix}"; Rust's Ipv6Addr Display writes an
 * IPv4-mapped address as ::ffff:a.b.c.d, otherwise lowercase groups without
 * leading zeros and "::" for the first longest run of two or more zero groups. */
size_t dw_ip_format(const struct dw_ipaddr *a, char *buf, size_t cap)
{
	struct out o = { .p = buf, .cap = cap };
	uint16_t g[8];
	size_t best = 0, best_len = 0, cur = 0, cur_len = 0;

	if (!a->v6) {
		out_ipv4(&o, a->addr);
		goto prefix;
	}
	for (int i = 0; i < 8; i++)
		g[i] = (uint16_t)(a->addr[2 * i] << 8 | a->addr[2 * i + 1]);
	if (g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 0 && g[4] == 0 && g[5] == 0xffff) {
		out_puts(&o, "::ffff:");
		out_ipv4(&o, a->addr + 12);
		goto prefix;
	}
	for (size_t i = 0; i < 8; i++) {
		if (g[i] != 0) {
			cur_len = 0;
			continue;
		}
		if (cur_len++ == 0)
			cur = i;
		if (cur_len > best_len)
			best = cur, best_len = cur_len;
	}
	if (best_len > 1) {
		out_groups(&o, g, best);
		out_puts(&o, "::");
		out_groups(&o, g + best + best_len, 8 - best - best_len);
	} else {
		out_groups(&o, g, 8);
	}
prefix:
	out_putc(&o, '/');
	out_u64(&o, a->prefix, 1);
	return out_end(&o);
}

/* ---- decimal ------------------------------------------------------------- */

/* decimal.rs: regex ^(-?\d+)\.(\d+)$; the signed integer part must fit i64 and
 * then i64 after * 10^4; at most 4 fraction digits; the fraction is added with
 * the sign of the string (so "-0.5" is -0.5: cedar PR #1964, which fixed the
 * older `if l >= 0` test that read "-0.5" as +0.5). */
int dw_decimal_parse(const char *s, size_t n, int64_t *out, const char **why)
{
	size_t i = 0, int_start, dot, frac_len;
	bool neg = false;
	int64_t l = 0, r = 0;

	if (n > 0 && s[0] == '-')
		neg = true, i = 1;
	int_start = i;
	while (i < n && is_digit(s[i]))
		i++;
	if (i == int_start || i == n || s[i] != '.')
		return fail(why, "decimal: not of the form -?D+.D+");
	dot = i++;
	while (i < n && is_digit(s[i]))
		i++;
	if (i != n || i == dot + 1)
		return fail(why, "decimal: not of the form -?D+.D+");

	/* Accumulate toward the sign so that an integer part of exactly
	 * -9223372036854775808 parses as Rust's i64::from_str does (and then
	 * overflows on the scaling, as in Rust). */
	for (size_t j = int_start; j < dot; j++) {
		int64_t d = s[j] - '0';

		if (__builtin_mul_overflow(l, 10, &l) ||
		    (neg ? __builtin_sub_overflow(l, d, &l) : __builtin_add_overflow(l, d, &l)))
			return fail(why, "decimal: overflow");
	}
	if (__builtin_mul_overflow(l, 10000, &l))
		return fail(why, "decimal: overflow");
	frac_len = n - dot - 1;
	if (frac_len > 4)
		return fail(why, "decimal: more than 4 digits after the point");
	r = (int64_t)digits_value(s + dot + 1, frac_len);
	for (size_t k = frac_len; k < 4; k++)
		r *= 10;
	if (neg ? __builtin_sub_overflow(l, r, &l) : __builtin_add_overflow(l, r, &l))
		return fail(why, "decimal: overflow");
	*out = l;
	return 0;
}

/* Always four fraction digits ("1.2300", "-0.5000"), which parses back to the
 * same value.  (Rust's Decimal Display prints "{v / 10^4}.{|v % 10^4|}", which
 * drops the fraction's leading zeros and the sign of -1 < v < 0.) */
size_t dw_decimal_format(int64_t v, char *buf, size_t cap)
{
	struct out o = { .p = buf, .cap = cap };
	uint64_t m = magnitude(v);

	if (v < 0)
		out_putc(&o, '-');
	out_u64(&o, m / 10000, 1);
	out_putc(&o, '.');
	out_u64(&o, m % 10000, 4);
	return out_end(&o);
}

/* ---- datetime ------------------------------------------------------------ */

static bool is_leap(int64_t y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/* chrono NaiveDate::from_ymd_opt for years 0..9999 (proleptic Gregorian;
 * year 0 is a leap year). */
static bool date_valid(int64_t y, unsigned m, unsigned d)
{
	static const uint8_t dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m < 1 || m > 12 || d < 1)
		return false;
	return d <= dim[m - 1] + (unsigned)(m == 2 && is_leap(y));
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil); exact for any year that fits. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, doe;
	unsigned yoe, doy;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = (int64_t)yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* datetime.rs parse_datetime, in its order: DATE_PATTERN
 * ^([0-9]{4})-([0-9]{2})-([0-9]{2}); if that is all, the date; else
 * HMS_PATTERN ^T([0-9]{2}):([0-9]{2}):([0-9]{2}) and MS_AND_OFFSET_PATTERN
 * ^(\.([0-9]{3}))?(Z|((\+|-)([0-9]{2})([0-9]{2})))$; then the calendar date,
 * the time (ss < 60: no leap second) and the offset (hh < 24, mm < 60).
 * The result is local time minus the offset.  Years 0000-9999 and offsets
 * under a day keep |ms| below 2.6e14, so nothing here can overflow. */
int dw_datetime_parse(const char *s, size_t n, int64_t *ms, const char **why)
{
	static const char bad_tail[] =
		"datetime: time must end with Z, .SSSZ, (+|-)hhmm or .SSS(+|-)hhmm";
	int64_t y, local, off_s;
	unsigned mo, d, h, mi, sec, milli = 0, oh = 0, om = 0;
	bool off_neg = false;
	size_t p;

	if (n < 10 || !all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) ||
	    s[7] != '-' || !all_digits(s + 8, 2))
		return fail(why, "datetime: does not start with YYYY-MM-DD");
	y = digits_value(s, 4);
	mo = digits_value(s + 5, 2);
	d = digits_value(s + 8, 2);
	if (n == 10) {
		if (!date_valid(y, mo, d))
			return fail(why, "datetime: invalid calendar date");
		*ms = days_from_civil(y, mo, d) * DAY_MS;
		return 0;
	}

	if (n < 19 || s[10] != 'T' || !all_digits(s + 11, 2) || s[13] != ':' ||
	    !all_digits(s + 14, 2) || s[16] != ':' || !all_digits(s + 17, 2))
		return fail(why, "datetime: date not followed by Thh:mm:ss");
	h = digits_value(s + 11, 2);
	mi = digits_value(s + 14, 2);
	sec = digits_value(s + 17, 2);

	p = 19;
	if (p < n && s[p] == '.') {
		if (n - p < 4 || !all_digits(s + p + 1, 3))
			return fail(why, bad_tail);
		milli = digits_value(s + p + 1, 3);
		p += 4;
	}
	if (n - p == 5 && (s[p] == '+' || s[p] == '-') && all_digits(s + p + 1, 4)) {
		off_neg = s[p] == '-';
		oh = digits_value(s + p + 1, 2);
		om = digits_value(s + p + 3, 2);
	} else if (n - p != 1 || s[p] != 'Z') {
		return fail(why, bad_tail);
	}

	if (!date_valid(y, mo, d))
		return fail(why, "datetime: invalid calendar date");
	if (h > 23 || mi > 59 || sec > 59)
		return fail(why, "datetime: invalid hour, minute or second");
	if (oh >= 24 || om >= 60)
		return fail(why, "datetime: offset hours must be < 24 and minutes < 60");

	off_s = (int64_t)(oh * 3600 + om * 60);
	local = days_from_civil(y, mo, d) * DAY_MS +
		(int64_t)((h * 60 + mi) * 60 + sec) * 1000 + milli;
	*ms = off_neg ? local + off_s * 1000 : local - off_s * 1000;
	return 0;
}

/* datetime.rs to_date: floor to a multiple of a day; (ms / day - 1) * day is
 * checked, so the most negative instants have no date. */
int dw_datetime_to_date(int64_t ms, int64_t *out)
{
	int64_t q = ms / DAY_MS, r;

	if (ms % DAY_MS < 0)
		q -= 1;
	if (__builtin_mul_overflow(q, DAY_MS, &r))
		return -1;
	*out = r;
	return 0;
}

/* datetime.rs to_time: the Euclidean remainder, 0 <= t < one day. */
int64_t dw_datetime_to_time(int64_t ms)
{
	int64_t r = ms % DAY_MS;

	return r < 0 ? r + DAY_MS : r;
}

/* ISO 8601 in UTC with milliseconds.  Cedar itself shows a datetime as
 * datetime("1970-01-01").offset(duration("…")); this is for people.  Years
 * outside 0000-9999 (reachable through offset) are written as chrono does:
 * with a sign and at least four digits ("+10000", "-0001"). */
size_t dw_datetime_format(int64_t ms, char *buf, size_t cap)
{
	struct out o = { .p = buf, .cap = cap };
	int64_t t = dw_datetime_to_time(ms), days, y;
	unsigned m, d;

	/* floor(ms / day), without forming ms - t, which can overflow */
	days = ms / DAY_MS - (ms % DAY_MS < 0);
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)
		out_putc(&o, y < 0 ? '-' : '+');
	out_u64(&o, magnitude(y), 4);
	out_putc(&o, '-');
	out_u64(&o, m, 2);
	out_putc(&o, '-');
	out_u64(&o, d, 2);
	out_putc(&o, 'T');
	out_u64(&o, (uint64_t)(t / 3600000), 2);
	out_putc(&o, ':');
	out_u64(&o, (uint64_t)(t / 60000 % 60), 2);
	out_putc(&o, ':');
	out_u64(&o, (uint64_t)(t / 1000 % 60), 2);
	out_putc(&o, '.');
	out_u64(&o, (uint64_t)(t % 1000), 3);
	out_putc(&o, 'Z');
	return out_end(&o);
}

/* ---- duration ------------------------------------------------------------ */

static const uint64_t unit_ms[5] = { 86400000, 3600000, 60000, 1000, 1 };
static const char *const unit_name[5] = { "d", "h", "m", "s", "ms" };

/* datetime.rs parse_duration: "" and "-" refused; regex
 * ^-?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$; each
 * number a u64; a leading '-' negates every term; checked i64 arithmetic.
 * Rust adds the terms one by one, all of one sign, so an intermediate overflow
 * happens exactly when the exact total is out of range: we sum magnitudes in
 * u64 and range-check once (-2^63 allowed).  A pattern error wins over an
 * overflow, as the regex is matched before any number is read. */
int dw_duration_parse(const char *s, size_t n, int64_t *ms, const char **why)
{
	size_t i = 0;
	bool neg = false, overflow = false;
	int next_unit = 0;
	uint64_t total = 0;

	if (n > 0 && s[0] == '-')
		neg = true, i = 1;
	if (i == n)
		return fail(why, "duration: no quantity-unit pair");
	while (i < n) {
		size_t start = i;
		uint64_t v = 0, t;
		bool big = false;
		int unit;

		for (; i < n && is_digit(s[i]); i++)
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
				big = true;
		if (i == start || i == n)
			return fail(why, "duration: expected digits followed by d, h, m, s or ms");
		switch (s[i]) {
		case 'd': unit = 0; break;
		case 'h': unit = 1; break;
		case 'm': unit = i + 1 < n && s[i + 1] == 's' ? 4 : 2; break;
		case 's': unit = 3; break;
		default:
			return fail(why, "duration: expected digits followed by d, h, m, s or ms");
		}
		i += unit == 4 ? 2 : 1;
		if (unit < next_unit)
			return fail(why, "duration: units must appear once each, in the order d h m s ms");
		next_unit = unit + 1;
		if (big || __builtin_mul_overflow(v, unit_ms[unit], &t) ||
		    __builtin_add_overflow(total, t, &total))
			overflow = true;
	}
	if (overflow || total > (uint64_t)INT64_MAX + neg)
		return fail(why, "duration: does not fit a signed 64-bit count of milliseconds");
	*ms = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

/* "1d2h3m4s5ms": non-zero units only, "0ms" for zero, "-" before a negative
 * value.  (Rust's Duration Display is "{ms}ms"; both parse back to the same
 * value.) */
size_t dw_duration_format(int64_t ms, char *buf, size_t cap)
{
	struct out o = { .p = buf, .cap = cap };
	uint64_t m = magnitude(ms);

	if (ms < 0)
		out_putc(&o, '-');
	if (m == 0)
		out_puts(&o, "0ms");
	for (int u = 0; u < 5; u++) {
		uint64_t q = m / unit_ms[u];

		m %= unit_ms[u];
		if (q == 0)
			continue;
		out_u64(&o, q, 1);
		out_puts(&o, unit_name[u]);
	}
	return out_end(&o);
}

/* ---- dw_ext_call --------------------------------------------------------- */

enum ext_fn_id {
	EXT_IP,
	EXT_DECIMAL,
	EXT_DATETIME,
	EXT_DURATION,
	EXT_OFFSET,
	EXT_DURATION_SINCE,
	EXT_TO_DATE,
	EXT_TO_TIME,
};

static const struct ext_fn {
	const char *name;
	enum ext_fn_id id;
	uint8_t nargs;
	uint8_t kind[2];       /* enum dw_vkind of each argument */
	const char *why_args;  /* wrong count or type */
} ext_fns[] = {
	{ "ip", EXT_IP, 1, { DW_V_STRING, 0 }, "ip: expects one String" },
	{ "decimal", EXT_DECIMAL, 1, { DW_V_STRING, 0 }, "decimal: expects one String" },
	{ "datetime", EXT_DATETIME, 1, { DW_V_STRING, 0 }, "datetime: expects one String" },
	{ "duration", EXT_DURATION, 1, { DW_V_STRING, 0 }, "duration: expects one String" },
	{ "offset", EXT_OFFSET, 2, { DW_V_DATETIME, DW_V_DURATION },
	  "offset: expects a datetime and a duration" },
	{ "durationSince", EXT_DURATION_SINCE, 2, { DW_V_DATETIME, DW_V_DATETIME },
	  "durationSince: expects two datetimes" },
	{ "toDate", EXT_TO_DATE, 1, { DW_V_DATETIME, 0 }, "toDate: expects one datetime" },
	{ "toTime", EXT_TO_TIME, 1, { DW_V_DATETIME, 0 }, "toTime: expects one datetime" },
};

int dw_ext_call(struct dw_arena *a, struct dw_str fn, const struct dw_val *args, size_t n,
		struct dw_val *out, const char **why)
{
	const struct ext_fn *f = NULL;
	struct dw_ipaddr ip, *ipp;
	struct dw_val v = { 0 };
	int64_t x;

	for (size_t i = 0; i < DW_N_ELEMENTS(ext_fns); i++)
		if (dw_str_eq_c(fn, ext_fns[i].name))
			f = &ext_fns[i];
	if (f == NULL)
		return -2;
	if (n != f->nargs)
		return fail(why, f->why_args);
	for (size_t i = 0; i < n; i++)
		if (args[i].kind != f->kind[i])
			return fail(why, f->why_args);

	switch (f->id) {
	case EXT_IP:
		if (dw_ip_parse(args[0].s.p, args[0].s.n, &ip, why) != 0)
			return -1;
		ipp = DW_NEW(a, struct dw_ipaddr);
		if (ipp == NULL)
			return -ENOMEM;
		*ipp = ip;
		v.kind = DW_V_IP;
		v.ip = ipp;
		break;
	case EXT_DECIMAL:
		if (dw_decimal_parse(args[0].s.p, args[0].s.n, &x, why) != 0)
			return -1;
		v.kind = DW_V_DECIMAL;
		v.i = x;
		break;
	case EXT_DATETIME:
		if (dw_datetime_parse(args[0].s.p, args[0].s.n, &x, why) != 0)
			return -1;
		v.kind = DW_V_DATETIME;
		v.i = x;
		break;
	case EXT_DURATION:
		if (dw_duration_parse(args[0].s.p, args[0].s.n, &x, why) != 0)
			return -1;
		v.kind = DW_V_DURATION;
		v.i = x;
		break;
	case EXT_OFFSET:
		if (__builtin_add_overflow(args[0].i, args[1].i, &x))
			return fail(why, "offset: result does not fit a datetime");
		v.kind = DW_V_DATETIME;
		v.i = x;
		break;
	case EXT_DURATION_SINCE:
		if (__builtin_sub_overflow(args[0].i, args[1].i, &x))
			return fail(why, "durationSince: result does not fit a duration");
		v.kind = DW_V_DURATION;
		v.i = x;
		break;
	case EXT_TO_DATE:
		if (dw_datetime_to_date(args[0].i, &x) != 0)
			return fail(why, "toDate: result does not fit a datetime");
		v.kind = DW_V_DATETIME;
		v.i = x;
		break;
	case EXT_TO_TIME:
		v.kind = DW_V_DURATION;
		v.i = dw_datetime_to_time(args[0].i);
		break;
	}
	*out = v;
	return 0;
}
