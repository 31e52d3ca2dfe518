/* test_ext.c - Cedar extension types (src/dogwood/cedar/ext.c).
 *
 * Vectors come from the unit tests of cedar-policy-core
 * src/extensions/{ipaddr,decimal,datetime}.rs, plus edge cases of the rules
 * those files copy (Rust std::net address parsing, chrono calendar, i64
 * overflow).  Epoch values were computed independently (Python datetime). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ext.h"
#include "test.h"

/* ---- helpers --------------------------------------------------------------- */

static int ip_parse_c(const char *s, struct dw_ipaddr *a, const char **why)
{
	return dw_ip_parse(s, strlen(s), a, why);
}

/* ip(s) parses and displays as want. */
static void ip_ok(const char *s, const char *want)
{
	struct dw_ipaddr a;
	const char *why = NULL;
	char buf[64];
	int rc = ip_parse_c(s, &a, &why);

	if (rc != 0)
		fprintf(stderr, "  ip(\"%s\") failed: %s\n", s, why);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		size_t len = dw_ip_format(&a, buf, sizeof buf);

		CHECK_EQ_STR(buf, want);
		CHECK_EQ_INT(len, strlen(want));
	}
}

static void ip_bad_n(const char *s, size_t n)
{
	struct dw_ipaddr a;
	const char *why = NULL;
	int rc = dw_ip_parse(s, n, &a, &why);

	if (rc != -1)
		fprintf(stderr, "  ip(\"%.*s\") unexpectedly parsed\n", (int)n, s);
	CHECK_EQ_INT(rc, -1);
	CHECK(why != NULL && strncmp(why, "ip: ", 4) == 0);
}

static void ip_bad(const char *s)
{
	ip_bad_n(s, strlen(s));
}

static struct dw_ipaddr ip_of(const char *s)
{
	struct dw_ipaddr a;
	const char *why = NULL;

	memset(&a, 0, sizeof a);
	if (ip_parse_c(s, &a, &why) != 0) {
		fprintf(stderr, "  ip(\"%s\") failed: %s\n", s, why);
		CHECK(0);
	}
	return a;
}

static void dec_ok(const char *s, int64_t want)
{
	int64_t v = 0;
	const char *why = NULL;
	int rc = dw_decimal_parse(s, strlen(s), &v, &why);

	if (rc != 0 || v != want)
		fprintf(stderr, "  decimal(\"%s\"): rc %d (%s)\n", s, rc, why ? why : "");
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(v, want);
}

static void dec_bad_n(const char *s, size_t n)
{
	int64_t v = 12345;
	const char *why = NULL;
	int rc = dw_decimal_parse(s, n, &v, &why);

	if (rc != -1)
		fprintf(stderr, "  decimal(\"%.*s\") unexpectedly parsed\n", (int)n, s);
	CHECK_EQ_INT(rc, -1);
	CHECK_EQ_INT(v, 12345);                  /* untouched on failure */
	CHECK(why != NULL && strncmp(why, "decimal: ", 9) == 0);
}

static void dec_bad(const char *s)
{
	dec_bad_n(s, strlen(s));
}

static void dec_fmt(int64_t v, const char *want)
{
	char buf[64];
	size_t len = dw_decimal_format(v, buf, sizeof buf);
	int64_t back = 0;

	CHECK_EQ_STR(buf, want);
	CHECK_EQ_INT(len, strlen(want));
	CHECK_EQ_INT(dw_decimal_parse(buf, len, &back, NULL), 0);
	CHECK_EQ_INT(back, v);
}

static void dt_ok(const char *s, int64_t want)
{
	int64_t v = 0;
	const char *why = NULL;
	int rc = dw_datetime_parse(s, strlen(s), &v, &why);

	if (rc != 0 || v != want)
		fprintf(stderr, "  datetime(\"%s\"): rc %d (%s)\n", s, rc, why ? why : "");
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(v, want);
}

static void dt_bad_n(const char *s, size_t n)
{
	int64_t v = 777;
	const char *why = NULL;
	int rc = dw_datetime_parse(s, n, &v, &why);

	if (rc != -1)
		fprintf(stderr, "  datetime(\"%.*s\") unexpectedly parsed\n", (int)n, s);
	CHECK_EQ_INT(rc, -1);
	CHECK_EQ_INT(v, 777);
	CHECK(why != NULL && strncmp(why, "datetime: ", 10) == 0);
}

static void dt_bad(const char *s)
{
	dt_bad_n(s, strlen(s));
}

static int64_t dt(const char *s)
{
	int64_t v = 0;

	if (dw_datetime_parse(s, strlen(s), &v, NULL) != 0) {
		fprintf(stderr, "  datetime(\"%s\") failed\n", s);
		CHECK(0);
	}
	return v;
}

static void dt_fmt(int64_t ms, const char *want)
{
	char buf[64];
	size_t len = dw_datetime_format(ms, buf, sizeof buf);

	CHECK_EQ_STR(buf, want);
	CHECK_EQ_INT(len, strlen(want));
}

static void dur_ok(const char *s, int64_t want)
{
	int64_t v = 0;
	const char *why = NULL;
	int rc = dw_duration_parse(s, strlen(s), &v, &why);

	if (rc != 0 || v != want)
		fprintf(stderr, "  duration(\"%s\"): rc %d (%s)\n", s, rc, why ? why : "");
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(v, want);
}

static void dur_bad_n(const char *s, size_t n)
{
	int64_t v = 555;
	const char *why = NULL;
	int rc = dw_duration_parse(s, n, &v, &why);

	if (rc != -1)
		fprintf(stderr, "  duration(\"%.*s\") unexpectedly parsed\n", (int)n, s);
	CHECK_EQ_INT(rc, -1);
	CHECK_EQ_INT(v, 555);
	CHECK(why != NULL && strncmp(why, "duration: ", 10) == 0);
}

static void dur_bad(const char *s)
{
	dur_bad_n(s, strlen(s));
}

static int64_t dur(const char *s)
{
	int64_t v = 0;

	if (dw_duration_parse(s, strlen(s), &v, NULL) != 0) {
		fprintf(stderr, "  duration(\"%s\") failed\n", s);
		CHECK(0);
	}
	return v;
}

static void dur_fmt(int64_t ms, const char *want)
{
	char buf[64];
	size_t len = dw_duration_format(ms, buf, sizeof buf);
	int64_t back = 0;

	CHECK_EQ_STR(buf, want);
	CHECK_EQ_INT(len, strlen(want));
	CHECK_EQ_INT(dw_duration_parse(buf, len, &back, NULL), 0);
	CHECK_EQ_INT(back, ms);
}

#define DAY INT64_C(86400000)

/* ---- ipaddr ---------------------------------------------------------------- */

static void test_ip_valid(void)
{
	/* ipaddr.rs ip_creation / ip_range_creation, and their Display */
	ip_ok("127.0.0.1", "127.0.0.1/32");
	ip_ok("::1", "::1/128");
	ip_ok("::ffff:ff00:1", "::ffff:255.0.0.1/128");   /* Rust shows v4-mapped dotted */
	ip_ok("ffee::11", "ffee::11/128");
	ip_ok("127.0.0.1/24", "127.0.0.1/24");
	ip_ok("ffee::/64", "ffee::/64");
	ip_ok("127.0.0.1/0", "127.0.0.1/0");
	ip_ok("127.0.0.1/8", "127.0.0.1/8");
	ip_ok("127.0.0.1/32", "127.0.0.1/32");
	ip_ok("ffee::/0", "ffee::/0");
	ip_ok("ffee::/128", "ffee::/128");
	ip_ok("1:2:3:4::", "1:2:3:4::/128");
	ip_ok("1:2:3:4::/48", "1:2:3:4::/48");

	/* IPv4 edges */
	ip_ok("0.0.0.0", "0.0.0.0/32");
	ip_ok("255.255.255.255", "255.255.255.255/32");
	ip_ok("0.0.0.0/0", "0.0.0.0/0");
	ip_ok("192.168.0.8/24", "192.168.0.8/24");           /* host bits kept */
	ip_ok("10.0.0.1/9", "10.0.0.1/9");

	/* IPv6 shapes Rust's parser accepts, and its Display (RFC 5952 style) */
	ip_ok("::", "::/128");
	ip_ok("::/0", "::/0");
	ip_ok("1::", "1::/128");
	ip_ok("0000:0000:0000:0000:0000:0000:0000:0001", "::1/128");
	ip_ok("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/128",   /* exactly 43 bytes */
	      "abcd:ef01:2345:6789:abcd:ef01:2345:6789/128");
	ip_ok("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8/128");
	ip_ok("1::2:3:4:5:6:7", "1:0:2:3:4:5:6:7/128");      /* :: for one group */
	ip_ok("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0/128");
	ip_ok("::1:2:3:4:5:6:7", "0:1:2:3:4:5:6:7/128");
	ip_ok("1:0:0:2:0:0:0:3", "1:0:0:2::3/128");           /* longest run */
	ip_ok("1:0:0:2:3:0:0:4", "1::2:3:0:0:4/128");         /* first of equal runs */
	ip_ok("0:0:1:0:0:0:0:0", "0:0:1::/128");
	ip_ok("fe80::1/10", "fe80::1/10");
	ip_ok("FF02::1", "ff02::1/128");
	ip_ok("0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1/128");
	ip_ok("::ffff:0:1", "::ffff:0.0.0.1/128");
	ip_ok("0:0:0:0:0:fffe:0:1", "::fffe:0:1/128");
	ip_ok("2001:db8::/32", "2001:db8::/32");
	ip_ok("0001:0002::0003", "1:2::3/128");                /* leading zeros in groups ok */

	struct dw_ipaddr a = ip_of("10.1.2.3/16");

	CHECK_EQ_INT(a.v6, 0);
	CHECK_EQ_INT(a.prefix, 16);
	CHECK(a.addr[0] == 10 && a.addr[1] == 1 && a.addr[2] == 2 && a.addr[3] == 3);
	a = ip_of("ffee::11");
	CHECK_EQ_INT(a.v6, 1);
	CHECK_EQ_INT(a.prefix, 128);
	CHECK(a.addr[0] == 0xff && a.addr[1] == 0xee && a.addr[14] == 0 && a.addr[15] == 0x11);
}

static void test_ip_invalid(void)
{
	/* ipaddr.rs */
	ip_bad("380.0.0.1");
	ip_bad("?");
	ip_bad("ab.ab.ab.ab");
	ip_bad("foo::1");
	ip_bad("::ffff:127.0.0.1");                /* IPv4 embedded in IPv6 */
	ip_bad("::127.0.0.1");
	ip_bad("127.0.0.1/8/24");
	ip_bad("fee::/64::1");
	ip_bad("172.0.0.1/64");
	ip_bad("ffee::/132");
	ip_bad("ffee::/+1");
	ip_bad("ffee::/01");
	ip_bad("ffee::/1234");
	ip_bad("10.0.0.0/33");

	/* IPv4: exactly four decimal octets, no leading zeros (no octal) */
	ip_bad("");
	ip_bad("01.2.3.4");
	ip_bad("1.2.3.04");
	ip_bad("1.2.3.00");
	ip_bad("1.2.3.0004");
	ip_bad("1.2.3.1000");
	ip_bad("256.0.0.0");
	ip_bad("1.2.3.256");
	ip_bad("1.2.3");
	ip_bad("1.2.3.4.5");
	ip_bad("1..2.3");
	ip_bad(".1.2.3.4");
	ip_bad("1.2.3.4.");
	ip_bad("1.2.3.-1");
	ip_bad("+1.2.3.4");
	ip_bad("0x1.2.3.4");
	ip_bad("1.2.3.4 ");
	ip_bad(" 1.2.3.4");
	ip_bad("1.2.3.4:80");
	ip_bad("1.2.3.4::");

	/* IPv6 */
	ip_bad(":");
	ip_bad(":::");
	ip_bad("1:2:3:4:5:6:7");
	ip_bad("1:2:3:4:5:6:7:8:9");
	ip_bad("1:2:3:4:5:6:7:8::");
	ip_bad("::1:2:3:4:5:6:7:8");
	ip_bad("1:2:3:4:5:6::7:8");                 /* :: must stand for >= 1 group */
	ip_bad("1::2::3");
	ip_bad(":1::2");
	ip_bad("1::2:");
	ip_bad("1:::2");
	ip_bad("12345::");
	ip_bad("::12345");
	ip_bad("00001::");
	ip_bad("g::1");
	ip_bad("[::1]");
	ip_bad("::1%eth0");
	ip_bad("::ffff:1.2.3");                     /* >= 2 ':' and >= 2 '.' */
	ip_bad("1:2:3:4:5:6:1.2.3.4");
	ip_bad("::1.2");

	/* prefix */
	ip_bad("1.2.3.4/");
	ip_bad("::1/");
	ip_bad("1.2.3.4/033");                      /* 3 chars for IPv4 */
	ip_bad("0.0.0.0/00");
	ip_bad("1.2.3.4/ 1");
	ip_bad("1.2.3.4/1 ");
	ip_bad("1.2.3.4/-1");
	ip_bad("::1/129");
	ip_bad("::1/0128");
	ip_bad("::1/1e2");
	ip_bad("/24");
	ip_bad("1.2.3.4/32/");

	/* length and bytes */
	ip_bad("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789/1280");   /* 44 bytes */
	ip_bad_n("1.2.3.4\0", 8);
	ip_bad_n("1.2\0.3.4", 8);
	ip_bad_n("::1\0", 4);
	ip_bad_n(NULL, 0);

	/* the embedded-IPv4 rule is checked first and says so */
	struct dw_ipaddr a;
	const char *why = NULL;

	CHECK_EQ_INT(ip_parse_c("::ffff:127.0.0.1", &a, &why), -1);
	CHECK(why != NULL && strstr(why, "embedded") != NULL);
	CHECK_EQ_INT(ip_parse_c("::ffff:1.2", &a, &why), -1);
	CHECK(why != NULL && strstr(why, "embedded") == NULL);
}

static void test_ip_loopback_multicast(void)
{
	struct dw_ipaddr a;

	/* ipaddr.rs is_loopback_and_is_multicast */
	a = ip_of("127.0.0.2");
	CHECK(dw_ip_is_loopback(&a));
	a = ip_of("::1");
	CHECK(dw_ip_is_loopback(&a));
	a = ip_of("::2");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("127.255.200.200/0");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("228.228.228.0");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("224.0.0.0/3");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("224.0.0.0/5");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("ff00::/7");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("ff00::/9");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("127.0.0.1");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("127.0.0.1/1");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("ff00::2");
	CHECK(dw_ip_is_multicast(&a));

	/* prefix boundaries */
	a = ip_of("127.0.0.1/8");
	CHECK(dw_ip_is_loopback(&a));
	a = ip_of("127.0.0.1/7");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("::1/127");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("::ffff:7f00:1");                   /* mapped 127.0.0.1 is not loopback */
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("126.255.255.255");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("128.0.0.0");
	CHECK(!dw_ip_is_loopback(&a));
	a = ip_of("224.0.0.0/4");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("239.255.255.255");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("240.0.0.0");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("223.255.255.255");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("ff00::/8");
	CHECK(dw_ip_is_multicast(&a));
	a = ip_of("fe00::");
	CHECK(!dw_ip_is_multicast(&a));
	a = ip_of("::ffff:e000:1");                   /* mapped 224.0.0.1 */
	CHECK(!dw_ip_is_multicast(&a));
}

static void in_range(const char *x, const char *y, bool want)
{
	struct dw_ipaddr a = ip_of(x), b = ip_of(y);

	if (dw_ip_in_range(&a, &b) != want)
		fprintf(stderr, "  ip(\"%s\").isInRange(ip(\"%s\")) != %d\n", x, y, want);
	CHECK(dw_ip_in_range(&a, &b) == want);
}

static void test_ip_in_range(void)
{
	/* ipaddr.rs ip_is_in_range */
	in_range("192.168.0.1/24", "192.168.0.1/24", true);
	in_range("192.168.0.1", "192.168.0.1/28", true);
	in_range("192.168.0.10", "192.168.0.1/24", true);
	in_range("192.168.0.10", "192.168.0.1/28", true);
	in_range("192.168.0.75", "192.168.0.1/24", true);
	in_range("192.168.0.75", "192.168.0.1/28", false);
	in_range("192.168.0.1", "192.168.0.1", true);
	in_range("1:2:3:4::", "1:2:3:4::/48", true);
	in_range("1:2:3:4::", "1:2:3:4::/52", true);
	in_range("1:2:3:6::", "1:2:3:4::/48", true);
	in_range("1:2:3:6::", "1:2:3:4::/52", true);
	in_range("1:2:3:ffff::", "1:2:3:4::/48", true);
	in_range("1:2:3:ffff::", "1:2:3:4::/52", false);
	in_range("1:2:3:4::", "1:2:3:4::", true);
	in_range("192.168.0.1", "1:2:3:4::/48", false);

	/* ipaddr.rs more_ip_semantics */
	in_range("10.0.0.0", "10.0.0.0/24", true);
	in_range("10.0.0.0", "10.0.0.0/32", true);
	in_range("10.0.0.0", "10.0.0.1/24", true);
	in_range("10.0.0.0", "10.0.0.1/32", false);
	in_range("10.0.0.1", "10.0.0.0/24", true);
	in_range("10.0.0.1", "10.0.0.1/24", true);
	in_range("10.0.0.0/24", "10.0.0.0/32", false);
	in_range("10.0.0.0/32", "10.0.0.0/24", true);
	in_range("10.0.0.1/24", "10.0.0.0/24", true);
	in_range("10.0.0.1/24", "10.0.0.1/24", true);
	in_range("10.0.0.0/24", "10.0.0.1/24", true);
	in_range("10.0.0.0/24", "10.0.0.0/29", false);
	in_range("10.0.0.0/29", "10.0.0.0/24", true);
	in_range("10.0.0.0/24", "10.0.0.1/29", false);
	in_range("10.0.0.0/29", "10.0.0.1/24", true);
	in_range("10.0.0.1/24", "10.0.0.0/29", false);
	in_range("10.0.0.1/29", "10.0.0.0/24", true);
	in_range("10.0.0.0/32", "10.0.0.0/32", true);
	in_range("10.0.0.0/32", "10.0.0.0", true);

	/* whole spaces, odd prefixes, families */
	in_range("255.255.255.255", "0.0.0.0/0", true);
	in_range("0.0.0.0/0", "10.0.0.0/8", false);
	in_range("10.128.0.0/9", "10.0.0.0/8", true);
	in_range("10.0.0.0/8", "10.128.0.0/9", false);
	in_range("11.0.0.0", "10.0.0.0/7", true);
	in_range("12.0.0.0", "10.0.0.0/7", false);
	in_range("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::/0", true);
	in_range("::1", "::/127", true);
	in_range("::2", "::/127", false);
	in_range("::/0", "::/1", false);
	in_range("::1", "0.0.0.0/0", false);
	in_range("0.0.0.1", "::/0", false);
	in_range("::ffff:a00:1", "10.0.0.0/8", false);   /* mapped is IPv6 */
}

static void test_ip_eq(void)
{
	struct dw_ipaddr a, b;

	/* ipaddr.rs ip_equality, more_ip_semantics */
	a = ip_of("127.0.0.1"), b = ip_of("127.0.0.1");
	CHECK(dw_ip_eq(&a, &b));
	a = ip_of("192.168.0.1"), b = ip_of("8.8.8.8");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("127.0.0.1"), b = ip_of("::1");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("127.0.0.1"), b = ip_of("192.168.0.1/24");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("192.168.0.1/24"), b = ip_of("8.8.8.8/8");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("10.0.0.0/32"), b = ip_of("10.0.0.0");
	CHECK(dw_ip_eq(&a, &b));
	a = ip_of("10.0.0.0/24"), b = ip_of("10.0.0.0");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("10.0.0.0/24"), b = ip_of("10.0.0.1/24");     /* host bits matter */
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("10.0.0.1/24"), b = ip_of("10.0.0.1/29");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("192.168.0.1/24"), b = ip_of("192.168.0.8/24");
	CHECK(!dw_ip_eq(&a, &b));
	a = ip_of("::1"), b = ip_of("0:0:0:0:0:0:0:1/128");
	CHECK(dw_ip_eq(&a, &b));
	a = ip_of("FFEE::11"), b = ip_of("ffee::11");
	CHECK(dw_ip_eq(&a, &b));
	a = ip_of("::ffff:a00:1"), b = ip_of("10.0.0.1");
	CHECK(!dw_ip_eq(&a, &b));
}

static void test_ip_format_truncation(void)
{
	struct dw_ipaddr a = ip_of("10.0.0.1/24");
	char buf[6];

	memset(buf, 'x', sizeof buf);
	CHECK_EQ_INT(dw_ip_format(&a, buf, sizeof buf), 5);
	CHECK_EQ_STR(buf, "10.0.");
	CHECK_EQ_INT(dw_ip_format(&a, buf, 1), 0);
	CHECK_EQ_STR(buf, "");
	CHECK_EQ_INT(dw_ip_format(&a, NULL, 0), 0);
}

/* ---- decimal --------------------------------------------------------------- */

static void test_decimal_valid(void)
{
	/* decimal.rs decimal_creation / decimal_equality */
	dec_ok("1.0", 10000);
	dec_ok("-1.0", -10000);
	dec_ok("123.456", 1234560);
	dec_ok("0.1234", 1234);
	dec_ok("-0.0123", -123);                    /* sign of the string (cedar #1964) */
	dec_ok("55.1", 551000);
	dec_ok("-922337203685477.5808", INT64_MIN);
	dec_ok("00.000", 0);
	dec_ok("123.0", 1230000);
	dec_ok("123.0000", 1230000);
	dec_ok("0123.0", 1230000);
	dec_ok("1.23", 12300);
	dec_ok("0.0", 0);
	dec_ok("-0.0", 0);

	/* edges */
	dec_ok("922337203685477.5807", INT64_MAX);
	dec_ok("-0.5", -5000);
	dec_ok("-0.0001", -1);
	dec_ok("0.0001", 1);
	dec_ok("1.0012", 10012);
	dec_ok("-1.24", -12400);
	dec_ok("000000000000000000000000001.5", 15000);
	dec_ok("-000000000000000000000000000.5", -5000);
	dec_ok("922337203685477.0", INT64_C(9223372036854770000));
	dec_ok("-922337203685477.0", -INT64_C(9223372036854770000));
}

static void test_decimal_invalid(void)
{
	/* decimal.rs: malformed */
	dec_bad("1234");
	dec_bad("1.0.");
	dec_bad("1.");
	dec_bad(".1");
	dec_bad("1.a");
	dec_bad("-.");
	/* overflow */
	dec_bad("1000000000000000.0");
	dec_bad("922337203685477.5808");
	dec_bad("-922337203685477.5809");
	dec_bad("-922337203685478.0");
	/* too many digits after the point, even zeros */
	dec_bad("0.12345");
	dec_bad("0.00000");

	dec_bad("");
	dec_bad("-");
	dec_bad(".");
	dec_bad("+1.0");
	dec_bad("--1.0");
	dec_bad(" 1.0");
	dec_bad("1.0 ");
	dec_bad("1,0");
	dec_bad("1e3");
	dec_bad("1.0e1");
	dec_bad("-1");
	dec_bad("1.-1");
	dec_bad("9223372036854775807.0");
	dec_bad("9223372036854775808.0");
	dec_bad("-9223372036854775808.0");
	dec_bad("99999999999999999999999.0");
	dec_bad_n("1.0\0", 4);
	dec_bad_n(NULL, 0);
}

static void test_decimal_format(void)
{
	/* decimal.rs decimal_display round trips, in our 4-digit style */
	dec_fmt(1230000, "123.0000");
	dec_fmt(12300, "1.2300");
	dec_fmt(1234560, "123.4560");
	dec_fmt(-1234560, "-123.4560");
	dec_fmt(0, "0.0000");
	dec_fmt(10012, "1.0012");
	dec_fmt(-5000, "-0.5000");
	dec_fmt(-1, "-0.0001");
	dec_fmt(INT64_MIN, "-922337203685477.5808");
	dec_fmt(INT64_MAX, "922337203685477.5807");

	char buf[4];

	CHECK_EQ_INT(dw_decimal_format(12300, buf, sizeof buf), 3);
	CHECK_EQ_STR(buf, "1.2");
}

/* ---- datetime -------------------------------------------------------------- */

static void test_datetime_valid(void)
{
	/* datetime.rs test_parse_pos */
	dt_ok("2024-10-15", 1728950400000);
	dt_ok("2024-10-15T11:38:02Z", 1728992282000);
	dt_ok("2024-10-15T11:38:02.101Z", 1728992282101);
	dt_ok("2024-10-15T11:38:02.101+1134", 1728950642101);
	dt_ok("2024-10-15T11:38:02.101-1134", 1729033922101);
	dt_ok("2024-10-15T11:38:02+1134", 1728950642000);
	dt_ok("2024-10-15T11:38:02-1134", 1729033922000);
	dt_ok("2024-10-15T23:59:00+2359", 1728950400000);
	dt_ok("2024-10-15T00:00:00-2359", 1729036740000);
	/* datetime.rs test_interpretation_datetime */
	dt_ok("2024-10-28", 1730073600000);
	dt_ok("2024-10-28T01:22:33.456Z", 1730078553456);
	dt_ok("2024-10-28T10:12:13.456-0700", 1730135533456);
	CHECK_EQ_INT(dt("2024-10-28T10:12:13.456-0700"), dt("2024-10-28T17:12:13.456Z"));

	/* calendar edges */
	dt_ok("1970-01-01", 0);
	dt_ok("1970-01-01T00:00:00Z", 0);
	dt_ok("1970-01-01T00:00:00+0000", 0);
	dt_ok("1970-01-01T00:00:00-0000", 0);
	dt_ok("1970-01-01T00:00:00.000Z", 0);
	dt_ok("1969-12-31T23:59:59.999Z", -1);
	dt_ok("1900-01-01", -2208988800000);
	dt_ok("2024-02-29", 1709164800000);          /* leap: divisible by 4 */
	dt_ok("2000-02-29", 951782400000);           /* leap: divisible by 400 */
	dt_ok("1600-02-29", -11670998400000);
	dt_ok("0000-01-01", -62167219200000);        /* year 0 */
	dt_ok("0000-02-29", -62162121600000);        /* year 0 is a leap year */
	dt_ok("0001-01-01", -62135596800000);
	dt_ok("9999-12-31T23:59:59.999Z", 253402300799999);
	dt_ok("0000-01-01T00:00:00+2359", -62167305540000);
	dt_ok("9999-12-31T23:59:59.999-2359", 253402387139999);
	dt_ok("2024-10-24", 1729728000000);
}

static void test_datetime_invalid(void)
{
	/* datetime.rs test_parse_neg */
	dt_bad("");
	dt_bad("a");
	dt_bad("-");
	dt_bad("-1");
	dt_bad("11-12-13");
	dt_bad("1111-1x-20");
	dt_bad("2024-10-15Z");
	dt_bad("2024-10-15T11:38:02ZZ");
	dt_bad("0000-0a-01");
	dt_bad("10000-01-01");
	dt_bad("10000-01-01T00:00:00Z");
	dt_bad("2024-00-01");
	dt_bad("2024-01-00");
	dt_bad("2024-02-30");
	dt_bad("2025-02-29");
	dt_bad("2024-20-01");
	dt_bad("2024-01-32");
	dt_bad("2024-01-99");
	dt_bad("2024-04-31");
	dt_bad("2024-01-01T");
	dt_bad("2024-01-01Ta");
	dt_bad("2024-01-01T01:");
	dt_bad("2024-01-01T01:02");
	dt_bad("2024-01-01T01:02:0b");
	dt_bad("2024-01-01T01::02:03");
	dt_bad("2024-01-01T01::02::03");
	dt_bad("2024-01-01T31:02:03Z");
	dt_bad("2024-01-01T01:60:03Z");
	dt_bad("2016-12-31T23:59:60Z");              /* no leap seconds */
	dt_bad("2016-12-31T23:59:61Z");
	dt_bad("2024-01-01T00:00:00");
	dt_bad("2024-01-01T00:00:00T");
	dt_bad("2024-01-01T00:00:00ZZ");
	dt_bad("2024-01-01T00:00:00x001Z");
	dt_bad("2024-01-01T00:00:00.001ZZ");
	dt_bad("2024-01-01T00:00:00\xe2\x9e\x95" "0000");   /* U+2795 heavy plus */
	dt_bad("2024-01-01T00:00:00\xe2\x9e\x96" "0000");   /* U+2796 heavy minus */
	dt_bad("2024-01-01T00:00:00.0001Z");
	dt_bad("2024-01-01T00:00:00.001\xe2\x9e\x96" "0000");
	dt_bad("2024-01-01T00:00:00.001\xe2\x9e\x95" "0000");
	dt_bad("2024-01-01T00:00:00.001+00000");
	dt_bad("2024-01-01T00:00:00.001-00000");
	dt_bad("2016-12-31T00:00:00+1160");
	dt_bad("2016-12-31T00:00:00+1199");
	dt_bad("2016-12-31T00:00:00+2400");
	dt_bad("22024-30-28T10:12:13.456-0700");

	/* more shapes */
	dt_bad("1900-02-29");                         /* not leap: divisible by 100 */
	dt_bad("2100-02-29");
	dt_bad("2024-06-31");
	dt_bad("2024-01-01T24:00:00Z");
	dt_bad("2024-01-01 00:00:00Z");
	dt_bad("2024-01-01t00:00:00Z");
	dt_bad("2024-01-01T00:00:00z");
	dt_bad("2024-01-01T00:00:00.1Z");
	dt_bad("2024-01-01T00:00:00.12Z");
	dt_bad("2024-01-01T00:00:00.Z");
	dt_bad("2024-01-01T00:00:00.000");
	dt_bad("2024-01-01T00:00:00+01:00");
	dt_bad("2024-01-01T00:00:00+01");
	dt_bad("2024-01-01T00:00:00+010");
	dt_bad("2024-01-01T00:00:00+0a00");
	dt_bad("2024-01-01T00:00:00Z+0100");
	dt_bad("2024-01-01T00:00:00.000Z.000");
	dt_bad("2024-01-01T00:00Z");
	dt_bad("2024-01-01T0:00:00Z");
	dt_bad("2024-01-01 ");
	dt_bad(" 2024-01-01");
	dt_bad("2024-01-01T00:00:00Z ");
	dt_bad("+2024-01-01");
	dt_bad("2024-1-01");
	dt_bad("2024/01/01");
	dt_bad("20240101");
	dt_bad("2024-01-01T00:00:00.000+2400");
	dt_bad("2024-01-01T00:00:00-0060");
	dt_bad_n("2024-01-01\0", 11);
	dt_bad_n("2024-01-01T00:00:00Z\0", 21);
	dt_bad_n(NULL, 0);

	/* Rust checks every pattern before any value: a bad tail is reported
	 * even when the date is also bad. */
	int64_t v;
	const char *why = NULL;

	CHECK_EQ_INT(dw_datetime_parse("2024-02-30T00:00:00", 19, &v, &why), -1);
	CHECK(why != NULL && strstr(why, "must end with") != NULL);
	CHECK_EQ_INT(dw_datetime_parse("2024-02-30T25:00:00+2500", 24, &v, &why), -1);
	CHECK(why != NULL && strstr(why, "calendar date") != NULL);
	CHECK_EQ_INT(dw_datetime_parse("2024-02-28T25:00:00+2500", 24, &v, &why), -1);
	CHECK(why != NULL && strstr(why, "hour") != NULL);
}

static void test_datetime_to_date_time(void)
{
	/* datetime.rs test_to_date / test_to_time */
	const int64_t days[] = { dt("2024-10-24"), dt("2024-10-23"), 0, dt("1900-01-01") };
	int64_t max_off = dur("23h59m59s999ms"), min_off = dur("-23h59m59s999ms"), out;

	CHECK_EQ_INT(dt("2024-10-24") - 0, dur("20020d"));
	for (size_t i = 0; i < sizeof days / sizeof days[0]; i++) {
		int64_t d = days[i];

		out = 1;
		CHECK_EQ_INT(dw_datetime_to_date(d, &out), 0);
		CHECK_EQ_INT(out, d);
		CHECK_EQ_INT(dw_datetime_to_date(d + max_off, &out), 0);
		CHECK_EQ_INT(out, d);
		CHECK_EQ_INT(dw_datetime_to_date(d + min_off, &out), 0);
		CHECK_EQ_INT(out, d - DAY);
		CHECK_EQ_INT(dw_datetime_to_time(d + max_off), max_off);
		CHECK_EQ_INT(dw_datetime_to_time(d + min_off), 1);
		CHECK_EQ_INT(dw_datetime_to_time(d), 0);
	}

	/* datetime.rs test_interpretation_datetime */
	CHECK_EQ_INT(dw_datetime_to_date(dt("2024-10-28T10:12:13.456+0700"), &out), 0);
	CHECK_EQ_INT(out, dt("2024-10-28"));
	CHECK_EQ_INT(dw_datetime_to_date(dt("2024-10-28T10:12:13.456-0700"), &out), 0);
	CHECK_EQ_INT(out, dt("2024-10-28"));
	CHECK_EQ_INT(dw_datetime_to_time(dt("2024-10-28T10:12:13.456+0700")), dur("3h12m13s456ms"));
	CHECK_EQ_INT(dw_datetime_to_time(dt("2024-10-28T10:12:13.456-0700")), dur("17h12m13s456ms"));

	/* negative epochs floor, Euclidean remainder */
	CHECK_EQ_INT(dw_datetime_to_date(-1, &out), 0);
	CHECK_EQ_INT(out, -DAY);
	CHECK_EQ_INT(dw_datetime_to_time(-1), DAY - 1);
	CHECK_EQ_INT(dw_datetime_to_date(-DAY, &out), 0);
	CHECK_EQ_INT(out, -DAY);
	CHECK_EQ_INT(dw_datetime_to_time(-DAY), 0);
	CHECK_EQ_INT(dw_datetime_to_date(-DAY - 1, &out), 0);
	CHECK_EQ_INT(out, -2 * DAY);
	CHECK_EQ_INT(dw_datetime_to_date(DAY - 1, &out), 0);
	CHECK_EQ_INT(out, 0);

	/* overflow at the bottom of i64 (test_to_date: i64::MIN has no date) */
	out = 42;
	CHECK_EQ_INT(dw_datetime_to_date(INT64_MIN, &out), -1);
	CHECK_EQ_INT(out, 42);
	CHECK_EQ_INT(dw_datetime_to_date(INT64_C(-9223372036828800001), &out), -1);
	CHECK_EQ_INT(dw_datetime_to_date(INT64_C(-9223372036828800000), &out), 0);
	CHECK_EQ_INT(out, INT64_C(-9223372036828800000));
	CHECK_EQ_INT(dw_datetime_to_date(INT64_MAX, &out), 0);
	CHECK_EQ_INT(out, INT64_C(9223372036828800000));
	CHECK_EQ_INT(dw_datetime_to_time(INT64_MAX), 25975807);
	CHECK_EQ_INT(dw_datetime_to_time(INT64_MIN), 60424192);
}

static void test_datetime_format(void)
{
	static const char *const rt[] = {
		"1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z",
		"2024-02-29T12:34:56.789Z", "0000-01-01T00:00:00.000Z",
		"0000-02-29T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
		"1900-03-01T00:00:00.001Z", "2000-02-29T23:59:59.000Z",
	};
	char buf[64];

	dt_fmt(0, "1970-01-01T00:00:00.000Z");
	dt_fmt(-1, "1969-12-31T23:59:59.999Z");
	dt_fmt(1730078553456, "2024-10-28T01:22:33.456Z");
	dt_fmt(dt("2024-10-28T10:12:13.456-0700"), "2024-10-28T17:12:13.456Z");
	dt_fmt(-62167219200000, "0000-01-01T00:00:00.000Z");
	dt_fmt(-62167219200001, "-0001-12-31T23:59:59.999Z");
	dt_fmt(253402300800000, "+10000-01-01T00:00:00.000Z");
	/* the ends of i64 (same as java.time's Instant.ofEpochMilli) */
	dt_fmt(INT64_MAX, "+292278994-08-17T07:12:55.807Z");
	dt_fmt(INT64_MIN, "-292275055-05-16T16:47:04.192Z");

	for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
		int64_t v = dt(rt[i]);

		dw_datetime_format(v, buf, sizeof buf);
		CHECK_EQ_STR(buf, rt[i]);
	}
	/* every day of a leap year and around the epoch formats and parses back */
	for (int64_t d = -800; d < 800; d++) {
		int64_t v = d * DAY + 12345, back = 0;
		size_t len = dw_datetime_format(v, buf, sizeof buf);

		if (dw_datetime_parse(buf, len, &back, NULL) != 0 || back != v) {
			fprintf(stderr, "  round trip of %" PRId64 " via %s\n", v, buf);
			CHECK(0);
		}
	}
	CHECK(1);
}

/* ---- duration -------------------------------------------------------------- */

static void test_duration_valid(void)
{
	/* datetime.rs parse_duration_pos, test_interpretation_duration */
	dur_ok("1h", 3600 * 1000);
	dur_ok("-10h", -3600 * 10 * 1000);
	dur_ok("5d3ms", INT64_C(3600) * 24 * 5 * 1000 + 3);
	dur_ok("-3h5m", -3600 * 3 * 1000 - 300 * 1000);
	dur_ok("106751991167d7h12m55s807ms", INT64_MAX);
	dur_ok("-106751991167d7h12m55s808ms", INT64_MIN);
	dur_ok("1d2h3m4s50ms", 93784050);
	dur_ok("-1d2h3m4s50ms", -93784050);
	dur_ok("10d23h59m58s999ms", ((((INT64_C(10) * 24 + 23) * 60 + 59) * 60 + 58) * 1000 + 999));
	dur_ok("-10d23h59m58s999ms", -((((INT64_C(10) * 24 + 23) * 60 + 59) * 60 + 58) * 1000 + 999));
	dur_ok("20020d", 20020 * DAY);
	CHECK_EQ_INT(dur("-3d"), dur("-72h"));

	/* more */
	dur_ok("0ms", 0);
	dur_ok("-0ms", 0);
	dur_ok("0d", 0);
	dur_ok("1ms", 1);
	dur_ok("1s", 1000);
	dur_ok("1m", 60000);
	dur_ok("1d", DAY);
	dur_ok("1m1ms", 60001);
	dur_ok("1d1ms", DAY + 1);
	dur_ok("4m70s", 310000);                   /* no per-unit range */
	dur_ok("25h", 25 * 3600000);
	dur_ok("00001m", 60000);
	dur_ok("9223372036854775807ms", INT64_MAX);
	dur_ok("-9223372036854775808ms", INT64_MIN);
	dur_ok("-0d0h0m0s9223372036854775808ms", INT64_MIN);
	dur_ok("106751991167d", 106751991167 * DAY);
	dur_ok("-1s9223372036854774808ms", INT64_MIN);
}

static void test_duration_invalid(void)
{
	/* datetime.rs parse_duration_neg */
	static const char *const bad[] = {
		"", "a", "-", "-1", "\342\236\2261ms", "11dd", "00000mm", "-d", "-h", "-1hh",
		"-h2d", "-ms",
		/* incorrect ordering */
		"1ms1s", "1ms1m", "1ms1h", "0ms1d", "1s1m", "1s1h", "0s0d", "0m0h", "0m0d", "1h1d",
		"1ms1m1d",
		/* i64 range */
		"106751991167d7h12m55s808ms", "-106751991167d7h12m55s809ms",
		"1dd2h3m4s50ms",
		/* more */
		"1d1d", "1m1m", "1ms1ms", "1s1s", "1h1h", "1d ", " 1d", "+1d", "--1d", "1D", "1H",
		"1.5h", "1d-2h", "d", "ms", "1", "1d2", "1x", "1mss", "1msm", "1 d",
		"9223372036854775808ms", "-9223372036854775809ms", "18446744073709551615ms",
		"18446744073709551616ms", "99999999999999999999999999d", "106751991168d",
		"-106751991168d", "153722867280912931m", "2562047788015216h",
		"106751991167d7h12m55s807ms1ms",
	};
	int64_t v;
	const char *why = NULL;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		dur_bad(bad[i]);
	dur_bad_n("1ms\0", 4);
	dur_bad_n("1\0ms", 4);
	dur_bad_n(NULL, 0);

	/* the pattern is checked before the numbers */
	CHECK_EQ_INT(dw_duration_parse("99999999999999999999d1x", 23, &v, &why), -1);
	CHECK(why != NULL && strstr(why, "expected digits") != NULL);
	CHECK_EQ_INT(dw_duration_parse("99999999999999999999d", 21, &v, &why), -1);
	CHECK(why != NULL && strstr(why, "64-bit") != NULL);
}

static void test_duration_format(void)
{
	dur_fmt(93784050, "1d2h3m4s50ms");
	dur_fmt(-93784050, "-1d2h3m4s50ms");
	dur_fmt(0, "0ms");
	dur_fmt(1, "1ms");
	dur_fmt(1000, "1s");
	dur_fmt(25 * 3600000, "1d1h");
	dur_fmt(DAY + 1, "1d1ms");
	dur_fmt(-60000, "-1m");
	dur_fmt(INT64_MAX, "106751991167d7h12m55s807ms");
	dur_fmt(INT64_MIN, "-106751991167d7h12m55s808ms");
}

/* ---- dw_ext_call ----------------------------------------------------------- */

static struct dw_val sval(const char *s)
{
	return dw_val_string(dw_str_c(s));
}

static struct dw_val ival(enum dw_vkind k, int64_t i)
{
	struct dw_val v = { .kind = (uint8_t)k, .i = i };

	return v;
}

static int call(struct dw_arena *a, const char *fn, const struct dw_val *args, size_t n,
		struct dw_val *out, const char **why)
{
	return dw_ext_call(a, dw_str_c(fn), args, n, out, why);
}

static void test_ext_call_constructors(void)
{
	struct dw_arena a;
	struct dw_val args[2], out;
	const char *why;
	char buf[64];

	dw_arena_init(&a);

	args[0] = sval("10.0.0.1/24");
	CHECK_EQ_INT(call(&a, "ip", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_IP);
	CHECK(out.ip != NULL && out.ip->v6 == 0 && out.ip->prefix == 24);
	dw_ip_format(out.ip, buf, sizeof buf);
	CHECK_EQ_STR(buf, "10.0.0.1/24");
	CHECK(a.total > 0);                          /* allocated in the arena */

	args[0] = sval("::1");
	CHECK_EQ_INT(call(&a, "ip", args, 1, &out, &why), 0);
	CHECK(out.kind == DW_V_IP && dw_ip_is_loopback(out.ip));

	args[0] = sval("1.23");
	CHECK_EQ_INT(call(&a, "decimal", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DECIMAL);
	CHECK_EQ_INT(out.i, 12300);

	args[0] = sval("2024-10-28T01:22:33.456Z");
	CHECK_EQ_INT(call(&a, "datetime", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DATETIME);
	CHECK_EQ_INT(out.i, 1730078553456);

	args[0] = sval("-1d2h3m4s50ms");
	CHECK_EQ_INT(call(&a, "duration", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DURATION);
	CHECK_EQ_INT(out.i, -93784050);

	/* a bad string: -1, a reason, *out untouched */
	static const char *const ctor[] = { "ip", "decimal", "datetime", "duration" };

	for (size_t i = 0; i < 4; i++) {
		out = ival(DW_V_LONG, 99);
		why = NULL;
		args[0] = sval("nonsense");
		CHECK_EQ_INT(call(&a, ctor[i], args, 1, &out, &why), -1);
		CHECK(why != NULL && strncmp(why, ctor[i], strlen(ctor[i])) == 0);
		CHECK(out.kind == DW_V_LONG && out.i == 99);

		/* wrong type, wrong count */
		args[0] = ival(DW_V_LONG, 1);
		why = NULL;
		CHECK_EQ_INT(call(&a, ctor[i], args, 1, &out, &why), -1);
		CHECK(why != NULL);
		args[0] = sval("1.0");
		args[1] = sval("1.0");
		why = NULL;
		CHECK_EQ_INT(call(&a, ctor[i], args, 2, &out, &why), -1);
		CHECK(why != NULL);
		why = NULL;
		CHECK_EQ_INT(call(&a, ctor[i], NULL, 0, &out, &why), -1);
		CHECK(why != NULL);
		CHECK(out.kind == DW_V_LONG && out.i == 99);
	}

	/* a string value may hold NUL and need not be terminated */
	args[0] = dw_val_string(dw_str_make("1.2.3.4xyz", 7));
	CHECK_EQ_INT(call(&a, "ip", args, 1, &out, &why), 0);
	dw_ip_format(out.ip, buf, sizeof buf);
	CHECK_EQ_STR(buf, "1.2.3.4/32");
	args[0] = dw_val_string(dw_str_make("1.0\0", 4));
	CHECK_EQ_INT(call(&a, "decimal", args, 1, &out, &why), -1);
	args[0] = dw_val_string(dw_str_make(NULL, 0));
	CHECK_EQ_INT(call(&a, "duration", args, 1, &out, &why), -1);

	dw_arena_fini(&a);
}

static void test_ext_call_methods(void)
{
	struct dw_arena a;
	struct dw_val args[2], out;
	const char *why;

	dw_arena_init(&a);

	/* offset: datetime.rs test_interpretation_datetime */
	args[0] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456-0700"));
	args[1] = ival(DW_V_DURATION, dur("-7h"));
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DATETIME);
	CHECK_EQ_INT(out.i, dt("2024-10-28T10:12:13.456Z"));
	args[0] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456+0700"));
	args[1] = ival(DW_V_DURATION, dur("7h"));
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, dt("2024-10-28T10:12:13.456Z"));
	/* datetime.rs test_offset: the ends of i64 */
	args[0] = ival(DW_V_DATETIME, INT64_MAX);
	args[1] = ival(DW_V_DURATION, 1);
	out = ival(DW_V_LONG, 7);
	why = NULL;
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), -1);
	CHECK(why != NULL && out.kind == DW_V_LONG);
	args[1] = ival(DW_V_DURATION, -1);
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, INT64_MAX - 1);
	args[0] = ival(DW_V_DATETIME, INT64_MIN);
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), -1);
	args[1] = ival(DW_V_DURATION, 1);
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, INT64_MIN + 1);
	args[0] = ival(DW_V_DATETIME, 0);
	args[1] = ival(DW_V_DURATION, dur("1d"));
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, dt("1970-01-02"));
	args[1] = ival(DW_V_DURATION, dur("-1d"));
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, dt("1969-12-31"));
	/* offset needs (datetime, duration) */
	args[1] = sval("7h");
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), -1);
	args[1] = ival(DW_V_DATETIME, 0);
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), -1);
	args[0] = ival(DW_V_DURATION, 0);
	args[1] = ival(DW_V_DURATION, 0);
	CHECK_EQ_INT(call(&a, "offset", args, 2, &out, &why), -1);
	CHECK_EQ_INT(call(&a, "offset", args, 1, &out, &why), -1);

	/* durationSince */
	args[0] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456+0700"));
	args[1] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456Z"));
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DURATION);
	CHECK_EQ_INT(out.i, dur("-7h"));
	args[0] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456-0700"));
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, dur("7h"));
	args[0] = ival(DW_V_DATETIME, dt("2024-10-24"));
	args[1] = ival(DW_V_DATETIME, 0);
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), 0);
	CHECK_EQ_INT(out.i, dur("20020d"));
	args[1] = ival(DW_V_DATETIME, INT64_MIN);    /* test_duration_since */
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), -1);
	args[1] = ival(DW_V_DURATION, 0);
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), -1);
	args[1] = sval("7h");
	CHECK_EQ_INT(call(&a, "durationSince", args, 2, &out, &why), -1);

	/* toDate / toTime */
	args[0] = ival(DW_V_DATETIME, dt("2024-10-28T10:12:13.456+0700"));
	CHECK_EQ_INT(call(&a, "toDate", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DATETIME);
	CHECK_EQ_INT(out.i, dt("2024-10-28"));
	CHECK_EQ_INT(call(&a, "toTime", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.kind, DW_V_DURATION);
	CHECK_EQ_INT(out.i, dur("3h12m13s456ms"));
	args[0] = ival(DW_V_DATETIME, -1);
	CHECK_EQ_INT(call(&a, "toDate", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.i, -DAY);
	CHECK_EQ_INT(call(&a, "toTime", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.i, DAY - 1);
	args[0] = ival(DW_V_DATETIME, INT64_MIN);
	CHECK_EQ_INT(call(&a, "toDate", args, 1, &out, &why), -1);
	CHECK_EQ_INT(call(&a, "toTime", args, 1, &out, &why), 0);
	CHECK_EQ_INT(out.i, 60424192);
	args[1] = ival(DW_V_LONG, 1);                /* toDate(1): WrongNumArguments */
	CHECK_EQ_INT(call(&a, "toDate", args, 2, &out, &why), -1);
	CHECK_EQ_INT(call(&a, "toTime", args, 2, &out, &why), -1);
	args[0] = ival(DW_V_DURATION, 0);
	CHECK_EQ_INT(call(&a, "toDate", args, 1, &out, &why), -1);
	args[0] = sval("2024-10-28");
	CHECK_EQ_INT(call(&a, "toTime", args, 1, &out, &why), -1);

	/* unknown names: -2, even with fitting arguments */
	args[0] = sval("1.2.3.4");
	CHECK_EQ_INT(call(&a, "isIpv4", args, 1, &out, &why), -2);
	CHECK_EQ_INT(call(&a, "IP", args, 1, &out, &why), -2);
	CHECK_EQ_INT(call(&a, "ipaddr", args, 1, &out, &why), -2);
	CHECK_EQ_INT(call(&a, "lessThan", args, 1, &out, &why), -2);
	CHECK_EQ_INT(call(&a, "toMilliseconds", args, 1, &out, &why), -2);
	CHECK_EQ_INT(call(&a, "", args, 1, &out, &why), -2);
	CHECK_EQ_INT(dw_ext_call(&a, dw_str_make("ip\0", 3), args, 1, &out, &why), -2);
	CHECK_EQ_INT(dw_ext_call(&a, dw_str_make("ipx", 2), args, 1, &out, &why), 0);
	CHECK_EQ_INT(dw_ext_call(&a, dw_str_make(NULL, 0), args, 1, &out, &why), -2);

	dw_arena_fini(&a);
}

static void test_ext_call_enomem(void)
{
	struct dw_arena a;
	struct dw_val arg = sval("10.0.0.1"), out = ival(DW_V_LONG, 5);
	const char *why = NULL;

	dw_arena_init(&a);
	a.limit = 1;                                 /* every allocation fails */
	CHECK_EQ_INT(call(&a, "ip", &arg, 1, &out, &why), -ENOMEM);
	CHECK(out.kind == DW_V_LONG && out.i == 5);
	/* values that need no storage still work */
	arg = sval("1.5");
	CHECK_EQ_INT(call(&a, "decimal", &arg, 1, &out, &why), 0);
	CHECK_EQ_INT(out.i, 15000);
	dw_arena_fini(&a);
}

static const struct test_case tests[] = {
	{ "ip_valid", test_ip_valid },
	{ "ip_invalid", test_ip_invalid },
	{ "ip_loopback_multicast", test_ip_loopback_multicast },
	{ "ip_in_range", test_ip_in_range },
	{ "ip_eq", test_ip_eq },
	{ "ip_format_truncation", test_ip_format_truncation },
	{ "decimal_valid", test_decimal_valid },
	{ "decimal_invalid", test_decimal_invalid },
	{ "decimal_format", test_decimal_format },
	{ "datetime_valid", test_datetime_valid },
	{ "datetime_invalid", test_datetime_invalid },
	{ "datetime_to_date_time", test_datetime_to_date_time },
	{ "datetime_format", test_datetime_format },
	{ "duration_valid", test_duration_valid },
	{ "duration_invalid", test_duration_invalid },
	{ "duration_format", test_duration_format },
	{ "ext_call_constructors", test_ext_call_constructors },
	{ "ext_call_methods", test_ext_call_methods },
	{ "ext_call_enomem", test_ext_call_enomem },
};

TEST_MAIN(tests)
