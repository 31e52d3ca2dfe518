/* test_dest.c - destinations (src/gateway/dest.c): hosts as the policy reads
 * them, `ip` text, the default floor with its edges and IPv6 embeddings, the
 * resolver with [gateway] hosts overrides, the pin.
 *
 * No network is assumed: the resolver's getaddrinfo is swapped through the
 * seam in dest.c for scripted answers; the only real lookups are "localhost"
 * (/etc/hosts) and one name that must not exist. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>

#include "dest.h"
#include "test.h"

/* the seam in dest.c */
extern int (*gw_dest_getaddrinfo_)(const char *, const char *, const struct addrinfo *,
				   struct addrinfo **);
extern void (*gw_dest_freeaddrinfo_)(struct addrinfo *);

/* ---- helpers --------------------------------------------------------------- */

/* text -> sockaddr (port), through inet_pton only: the test's own parser. */
static struct gw_dest_addr A(const char *text, uint16_t port)
{
	struct gw_dest_addr a;

	memset(&a, 0, sizeof a);
	if (inet_pton(AF_INET, text, &a.u.in.sin_addr) == 1) {
		a.u.in.sin_family = AF_INET;
		a.u.in.sin_port = htons(port);
	} else if (inet_pton(AF_INET6, text, &a.u.in6.sin6_addr) == 1) {
		a.u.in6.sin6_family = AF_INET6;
		a.u.in6.sin6_port = htons(port);
	} else {
		fprintf(stderr, "test bug: '%s' is not an address\n", text);
		abort();
	}
	return a;
}

static const struct gw_dest_floor FLOOR = { .enabled = true };

/* The floor's reason for an address (NULL: allowed). */
static const char *fa(const char *text)
{
	struct gw_dest_addr a = A(text, 443);

	return gw_dest_floor_addr(&FLOOR, &a.u.sa);
}

static const char *fn(const char *host)
{
	return gw_dest_floor_name(&FLOOR, host);
}

/* Box's `ip` text for an address literal; "" on error. */
static const char *ip(const char *text)
{
	static char ring[8][GW_DEST_TEXT_MAX];
	static unsigned k;
	char *b = ring[k++ % 8];
	struct gw_dest_addr a = A(text, 0);

	if (gw_dest_ip_text(&a.u.sa, b, GW_DEST_TEXT_MAX) != 0)
		b[0] = '\0';
	return b;
}

static const char *plain(const char *text)
{
	static char b[GW_DEST_TEXT_MAX];
	struct gw_dest_addr a = A(text, 0);

	if (gw_dest_addr_text(&a.u.sa, b, sizeof b) != 0)
		b[0] = '\0';
	return b;
}

static int parse(const char *s, struct gw_dest_host *h, struct gw_dest_error *e)
{
	return gw_dest_host_parse(s, strlen(s), h, e);
}

#define CHECK_NULL(x)                                                                    \
	do {                                                                             \
		const char *r_ = (x);                                                    \
		if (r_ == NULL)                                                          \
			test_passed++;                                                   \
		else {                                                                   \
			test_failed++;                                                   \
			fprintf(stderr, "%s:%d: expected NULL: %s = \"%s\"\n", __FILE__,  \
				__LINE__, #x, r_);                                       \
		}                                                                        \
	} while (0)

/* ---- hosts --------------------------------------------------------------------- */

static void test_host_names(void)
{
	struct gw_dest_host h;
	struct gw_dest_error e;

	CHECK_EQ_INT(parse("Api.Example.COM", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_NAME);
	CHECK_EQ_STR(h.name, "api.example.com");
	CHECK_EQ_STR(h.ip, "");

	CHECK_EQ_INT(parse("METADATA.GOOGLE.INTERNAL.", &h, &e), 0);
	CHECK_EQ_STR(h.name, "metadata.google.internal");

	CHECK_EQ_INT(parse("_dmarc.example-1.org", &h, &e), 0);   /* '_' as Box allows */
	CHECK_EQ_STR(h.name, "_dmarc.example-1.org");

	/* the policy's host is lower-case and dot-stripped once */
	CHECK_EQ_INT(parse("a.b.", &h, &e), 0);
	CHECK_EQ_STR(h.name, "a.b");
	CHECK_EQ_INT(parse("a.b..", &h, &e), -EINVAL);
	CHECK(strstr(e.msg, "empty label") != NULL);
	CHECK_EQ_INT(parse(".a", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("a..b", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse(".", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("", &h, &e), -EINVAL);
	CHECK_EQ_STR(e.msg, "empty host");
	CHECK_EQ_INT(h.kind, 0);                /* zeroed on failure */

	/* characters */
	CHECK_EQ_INT(parse("exa mple.com", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("a/b", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("a%2eb", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("user@host", &h, &e), -EINVAL);
	CHECK_EQ_INT(gw_dest_host_parse("a\0b", 3, &h, &e), -EINVAL);
	CHECK(strstr(e.msg, "NUL") != NULL);
	CHECK_EQ_INT(parse("b\xc3\xbc" "cher.de", &h, &e), -EINVAL);   /* bücher.de */
	CHECK(strstr(e.msg, "not ASCII") != NULL && strstr(e.msg, "xn--") != NULL);
	CHECK(strstr(e.msg, "\\xc3\\xbc") != NULL);     /* shown escaped */
	CHECK_EQ_INT(parse("xn--bcher-kva.de", &h, &e), 0);

	/* lengths: labels 63, names 253 (+ one dot) */
	{
		char l63[64], l64[65], n253[300], n254[300];

		memset(l63, 'a', 63), l63[63] = '\0';
		memset(l64, 'a', 64), l64[64] = '\0';
		CHECK_EQ_INT(parse(l63, &h, &e), 0);
		CHECK_EQ_INT(parse(l64, &h, &e), -EINVAL);
		CHECK(strstr(e.msg, "label longer than 63") != NULL);
		/* 4 x 63 + 1 = 253: a.b.c.d of 63 each with one short label */
		snprintf(n253, sizeof n253, "%s.%s.%s.%.61s", l63, l63, l63, l63);
		CHECK_EQ_INT(strlen(n253), 253);
		CHECK_EQ_INT(parse(n253, &h, &e), 0);
		memcpy(n254, n253, 253), n254[253] = '.', n254[254] = '\0';
		CHECK_EQ_INT(parse(n254, &h, &e), 0);               /* with the root dot */
		CHECK_EQ_INT(strlen(h.name), 253);
		snprintf(n254, sizeof n254, "%s.%s.%s.%.62s", l63, l63, l63, l63);
		CHECK_EQ_INT(parse(n254, &h, &e), -EINVAL);
		CHECK(strstr(e.msg, "longer than 253") != NULL);
	}
}

static void test_host_literals(void)
{
	struct gw_dest_host h;
	struct gw_dest_error e;

	CHECK_EQ_INT(parse("192.0.2.7", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_IPV4);
	CHECK(!h.v4_shorthand);
	CHECK_EQ_STR(h.ip, "192.0.2.7");
	CHECK_EQ_INT(parse("127.0.0.1.", &h, &e), 0);        /* Box strips the dot */
	CHECK_EQ_STR(h.name, "127.0.0.1");

	CHECK_EQ_INT(parse("[2001:DB8::1]", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_IPV6);
	CHECK_EQ_STR(h.name, "2001:db8::1");
	CHECK_EQ_STR(h.ip, "2001:db8::1");
	CHECK_EQ_INT(parse("2001:db8:0:0:1:0:0:1", &h, &e), 0); /* bare v6 */
	CHECK_EQ_STR(h.name, "2001:db8:0:0:1:0:0:1");           /* the spelling, as sent */
	CHECK_EQ_STR(h.ip, "2001:db8::1:0:0:1");                /* the canonical text */
	CHECK_EQ_INT(parse("[::ffff:169.254.169.254]", &h, &e), 0);
	CHECK_EQ_STR(h.ip, "169.254.169.254");

	CHECK_EQ_INT(parse("[fe80::1%eth0]", &h, &e), -EINVAL);
	CHECK(strstr(e.msg, "zone") != NULL);
	CHECK_EQ_INT(parse("[127.0.0.1]", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("[::1", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("[]", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("::g", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("1:2:3:4:5:6:7:8:9", &h, &e), -EINVAL);
	CHECK_EQ_INT(parse("host:443", &h, &e), -EINVAL);     /* a port is not a host */

	/* inet_aton's shorthands are literals: getaddrinfo dials them as such */
	static const struct { const char *in, *ip; } sh[] = {
		{ "2130706433", "127.0.0.1" },
		{ "127.1", "127.0.0.1" },
		{ "0x7f.1", "127.0.0.1" },
		{ "0X7F.0.0.1", "127.0.0.1" },
		{ "0177.0.0.1", "127.0.0.1" },
		{ "0xa9fea9fe", "169.254.169.254" },
		{ "169.254.43518", "169.254.169.254" },
		{ "1.2.3", "1.2.0.3" },
	};
	for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
		CHECK_EQ_INT(parse(sh[i].in, &h, &e), 0);
		CHECK_EQ_INT(h.kind, GW_DEST_IPV4);
		CHECK(h.v4_shorthand);
		CHECK_EQ_STR(h.ip, sh[i].ip);
	}
	CHECK_EQ_STR(h.name, "1.2.3");          /* the host keeps the spelling */
	/* beyond inet_aton: a name (DNS decides) */
	CHECK_EQ_INT(parse("1.2.3.4.5", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_NAME);
	CHECK_EQ_INT(parse("0x7f.example", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_NAME);
	CHECK_EQ_INT(parse("256.1.1.1", &h, &e), 0);
	CHECK_EQ_INT(h.kind, GW_DEST_NAME);
}

/* ---- address text -------------------------------------------------------------- */

static void test_ip_text(void)
{
	char small[8];
	struct gw_dest_addr a = A("2001:db8::1", 0);
	struct sockaddr_un_like { sa_family_t f; char p[20]; } un = { AF_UNIX, "x" };

	/* IPv4 */
	CHECK_EQ_STR(ip("192.0.2.1"), "192.0.2.1");
	CHECK_EQ_STR(ip("0.0.0.0"), "0.0.0.0");
	/* RFC 5952: lower case, longest run (>= 2 groups) compressed, first on a tie */
	CHECK_EQ_STR(ip("2001:DB8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
	CHECK_EQ_STR(ip("2001:0db8:0000:0000:0000:0000:0002:0001"), "2001:db8::2:1");
	CHECK_EQ_STR(ip("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");   /* one 0: kept */
	CHECK_EQ_STR(ip("2001:db8:0:0:1:0:0:0"), "2001:db8:0:0:1::");       /* longer wins */
	CHECK_EQ_STR(ip("FD00:00EC:0000:0000:0000:0000:0000:0254"), "fd00:ec::254");
	CHECK_EQ_STR(ip("fd00:ec2:0::254"), "fd00:ec2::254");
	CHECK_EQ_STR(ip("FE80::1"), "fe80::1");
	CHECK_EQ_STR(ip("1::"), "1::");
	/* Box unwraps every IPv6 that carries an IPv4 (policy/src/address.rs) */
	CHECK_EQ_STR(ip("::ffff:169.254.169.254"), "169.254.169.254");
	CHECK_EQ_STR(ip("::ffff:a9fe:a9fe"), "169.254.169.254");
	CHECK_EQ_STR(ip("::169.254.169.254"), "169.254.169.254");
	CHECK_EQ_STR(ip("2002:a9fe:a9fe::"), "169.254.169.254");
	CHECK_EQ_STR(ip("2002:a9fe:a9fe::1"), "169.254.169.254");
	CHECK_EQ_STR(ip("2001:0:0:0:0:0:5601:5601"), "169.254.169.254");    /* Teredo */
	CHECK_EQ_STR(ip("::ffff:0.0.0.0"), "0.0.0.0");
	CHECK_EQ_STR(ip("::0.0.0.2"), "0.0.0.2");
	/* ... except the unspecified and loopback addresses, and NAT64 (as Box) */
	CHECK_EQ_STR(ip("::"), "::");
	CHECK_EQ_STR(ip("::1"), "::1");
	CHECK_EQ_STR(ip("64:ff9b::a9fe:a9fe"), "64:ff9b::a9fe:a9fe");
	CHECK_EQ_STR(ip("2001:db8::a9fe:a9fe"), "2001:db8::a9fe:a9fe");

	/* the plain text keeps the IPv6 form: inet_ntop's RFC 5952 on glibc */
	CHECK_EQ_STR(plain("::ffff:169.254.169.254"), "::ffff:169.254.169.254");
	CHECK_EQ_STR(plain("2001:DB8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
	CHECK_EQ_STR(plain("2002:a9fe:a9fe::1"), "2002:a9fe:a9fe::1");
	CHECK_EQ_STR(plain("10.1.2.3"), "10.1.2.3");

	CHECK_EQ_INT(gw_dest_ip_text(&a.u.sa, small, sizeof small), -ENOSPC);
	CHECK_EQ_INT(gw_dest_ip_text((const struct sockaddr *)&un, small, sizeof small),
		     -EAFNOSUPPORT);
	CHECK_EQ_INT(gw_dest_ip_text(NULL, small, sizeof small), -EAFNOSUPPORT);
}

/* ---- the floor ------------------------------------------------------------------ */

static void test_floor_v4(void)
{
	/* loopback 127/8, with both edges */
	CHECK_EQ_STR(fa("127.0.0.1"), "loopback address");
	CHECK_EQ_STR(fa("127.0.0.0"), "loopback address");
	CHECK_EQ_STR(fa("127.255.255.255"), "loopback address");
	CHECK_NULL(fa("126.255.255.255"));
	CHECK_NULL(fa("128.0.0.0"));
	/* unspecified 0/8 */
	CHECK_EQ_STR(fa("0.0.0.0"), "unspecified address");
	CHECK_EQ_STR(fa("0.255.255.255"), "unspecified address");
	CHECK_NULL(fa("1.0.0.0"));
	/* link-local 169.254/16 */
	CHECK_EQ_STR(fa("169.254.0.0"), "link-local address");
	CHECK_EQ_STR(fa("169.254.0.1"), "link-local address");
	CHECK_EQ_STR(fa("169.254.255.255"), "link-local address");
	CHECK_NULL(fa("169.253.255.255"));
	CHECK_NULL(fa("169.255.0.0"));
	/* metadata */
	CHECK_EQ_STR(fa("169.254.169.254"), "cloud metadata address");
	CHECK_EQ_STR(fa("169.254.170.2"), "cloud metadata address");
	CHECK_EQ_STR(fa("169.254.170.23"), "cloud metadata address");
	CHECK_EQ_STR(fa("100.100.100.200"), "cloud metadata address");
	CHECK_EQ_STR(fa("192.0.0.192"), "cloud metadata address");
	CHECK_NULL(fa("100.100.100.201"));
	CHECK_NULL(fa("192.0.0.193"));
	/* private is not the floor's business */
	CHECK_NULL(fa("10.0.0.1"));
	CHECK_NULL(fa("172.16.0.1"));
	CHECK_NULL(fa("192.168.1.1"));
	CHECK_NULL(fa("8.8.8.8"));
}

static void test_floor_v6(void)
{
	CHECK_EQ_STR(fa("::1"), "loopback address");
	CHECK_EQ_STR(fa("::"), "unspecified address");
	CHECK_EQ_STR(fa("::1:0"), "unspecified address (IPv4-compatible)"); /* ::0.0.1.0 */
	CHECK_NULL(fa("::1:0:0:0"));                    /* outside ::/96: ordinary */
	/* fe80::/10 with edges */
	CHECK_EQ_STR(fa("fe80::1"), "link-local address");
	CHECK_EQ_STR(fa("fe80::"), "link-local address");
	CHECK_EQ_STR(fa("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "link-local address");
	CHECK_EQ_STR(fa("febf::1"), "link-local address");
	CHECK_NULL(fa("fec0::1"));                      /* deprecated site-local: allowed */
	CHECK_NULL(fa("fe7f:ffff::1"));
	/* metadata */
	CHECK_EQ_STR(fa("fd00:ec2::254"), "cloud metadata address");
	CHECK_EQ_STR(fa("FD00:0EC2:0:0:0:0:0:254"), "cloud metadata address");
	CHECK_EQ_STR(fa("fd00:ec2::23"), "cloud metadata address");
	CHECK_EQ_STR(fa("fd20:ce::254"), "cloud metadata address");
	CHECK_EQ_STR(fa("fd00:42::42"), "cloud metadata address");
	CHECK_NULL(fa("fd00:ec2::253"));                /* the Route 53 resolver: ULA, policy's */
	CHECK_NULL(fa("fd00::1"));
	CHECK_NULL(fa("2001:db8::1"));

	/* IPv4 inside IPv6: refused when the IPv4 is */
	CHECK_EQ_STR(fa("::ffff:169.254.169.254"), "cloud metadata address (IPv4-mapped)");
	CHECK_EQ_STR(fa("::ffff:127.0.0.1"), "loopback address (IPv4-mapped)");
	CHECK_EQ_STR(fa("::ffff:0.0.0.0"), "unspecified address (IPv4-mapped)");
	CHECK_EQ_STR(fa("::ffff:169.254.1.1"), "link-local address (IPv4-mapped)");
	CHECK_NULL(fa("::ffff:8.8.8.8"));
	CHECK_EQ_STR(fa("::127.0.0.1"), "loopback address (IPv4-compatible)");
	CHECK_EQ_STR(fa("::169.254.169.254"), "cloud metadata address (IPv4-compatible)");
	CHECK_NULL(fa("::8.8.8.8"));
	CHECK_EQ_STR(fa("64:ff9b::a9fe:a9fe"), "cloud metadata address (NAT64)");
	CHECK_EQ_STR(fa("64:ff9b::7f00:1"), "loopback address (NAT64)");
	CHECK_EQ_STR(fa("64:ff9b::100.100.100.200"), "cloud metadata address (NAT64)");
	CHECK_EQ_STR(fa("64:ff9b:1::a9fe:a9fe"), "cloud metadata address (NAT64)");
	CHECK_NULL(fa("64:ff9b::808:808"));
	CHECK_NULL(fa("64:ff9a::7f00:1"));
	CHECK_EQ_STR(fa("2002:a9fe:a9fe::1"), "cloud metadata address (6to4)");
	CHECK_EQ_STR(fa("2002:7f00:1::"), "loopback address (6to4)");
	CHECK_EQ_STR(fa("2002:a9fe:1::"), "link-local address (6to4)");
	CHECK_NULL(fa("2002:808:808::1"));
	CHECK_EQ_STR(fa("2001:0:0:0:0:0:5601:5601"), "cloud metadata address (Teredo)");
	CHECK_EQ_STR(fa("2001::80ff:fffe"), "loopback address (Teredo)");
	CHECK_NULL(fa("2001:0:4136:e378:8000:63bf:3fff:fdd2"));   /* RFC 4380 example */
	CHECK_NULL(fa("2001:1::7f00:1"));                         /* not Teredo */
}

static void test_floor_ports_and_optout(void)
{
	static const uint16_t self[] = { 3128, 3129 };
	struct gw_dest_floor on = { .enabled = true, .self_ports = self, .n_self_ports = 2 };
	struct gw_dest_floor off = { .enabled = false, .self_ports = self, .n_self_ports = 2 };
	struct gw_dest_addr lo = A("127.0.0.1", 3129), lo6 = A("::1", 3128),
			    lo_other = A("127.0.0.1", 8080), any = A("0.0.0.0", 3128),
			    mapped = A("::ffff:127.0.0.2", 3128), pub = A("192.0.2.1", 3128),
			    md = A("169.254.169.254", 80);
	struct sockaddr_un_like { sa_family_t f; char p[20]; } un = { AF_UNIX, "x" };

	CHECK_EQ_STR(gw_dest_floor_addr(&on, &lo.u.sa), "the gateway's own port");
	CHECK_EQ_STR(gw_dest_floor_addr(&off, &lo.u.sa), "the gateway's own port");
	CHECK_EQ_STR(gw_dest_floor_addr(&off, &lo6.u.sa), "the gateway's own port");
	CHECK_EQ_STR(gw_dest_floor_addr(&off, &any.u.sa), "the gateway's own port");
	CHECK_EQ_STR(gw_dest_floor_addr(&off, &mapped.u.sa), "the gateway's own port");
	CHECK_NULL(gw_dest_floor_addr(&off, &pub.u.sa));        /* not here: an upstream */
	CHECK_NULL(gw_dest_floor_addr(&off, &lo_other.u.sa));   /* opted out */
	CHECK_EQ_STR(gw_dest_floor_addr(&on, &lo_other.u.sa), "loopback address");
	CHECK_NULL(gw_dest_floor_addr(&off, &md.u.sa));
	CHECK_EQ_STR(gw_dest_floor_addr(&on, (const struct sockaddr *)&un), "not an IP address");
	CHECK_EQ_STR(gw_dest_floor_addr(&off, (const struct sockaddr *)&un), "not an IP address");
	CHECK_EQ_STR(gw_dest_floor_addr(NULL, &md.u.sa), "cloud metadata address"); /* NULL: on */

	CHECK_NULL(gw_dest_floor_name(&off, "metadata.google.internal"));
	CHECK_NULL(gw_dest_floor_name(&off, "127.0.0.1"));
	CHECK_EQ_STR(gw_dest_floor_name(&off, "bad host"), "invalid host");
	CHECK_EQ_STR(gw_dest_floor_name(NULL, "localhost"), "loopback name");
}

static void test_floor_names(void)
{
	CHECK_EQ_STR(fn("metadata.google.internal"), "cloud metadata name");
	CHECK_EQ_STR(fn("METADATA.GOOGLE.INTERNAL."), "cloud metadata name");
	CHECK_EQ_STR(fn("computeMetadata.metadata.google.internal"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata.goog"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata.azure.internal"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata"), "cloud metadata name");
	CHECK_EQ_STR(fn("Metadata."), "cloud metadata name");
	CHECK_EQ_STR(fn("instance-data"), "cloud metadata name");
	CHECK_EQ_STR(fn("instance-data.ec2.internal"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata.tencentyun.com"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata.platformequinix.com"), "cloud metadata name");
	CHECK_EQ_STR(fn("metadata.packet.net"), "cloud metadata name");
	CHECK_NULL(fn("metadata.example.com"));         /* bare "metadata" is exact only */
	CHECK_NULL(fn("notmetadata.google.internal"));
	CHECK_NULL(fn("metadata.google.internal.evil.example"));
	CHECK_NULL(fn("google.internal"));
	CHECK_EQ_STR(fn("localhost"), "loopback name");
	CHECK_EQ_STR(fn("LocalHost."), "loopback name");
	CHECK_EQ_STR(fn("app.localhost"), "loopback name");
	CHECK_NULL(fn("localhost.example.com"));
	CHECK_NULL(fn("mylocalhost"));
	CHECK_NULL(fn("api.github.com"));
	CHECK_NULL(fn("registry.lan"));
	/* literals are floored before any lookup, whatever their spelling */
	CHECK_EQ_STR(fn("2130706433"), "loopback address");
	CHECK_EQ_STR(fn("127.1"), "loopback address");
	CHECK_EQ_STR(fn("0x7f.1"), "loopback address");
	CHECK_EQ_STR(fn("0177.0.0.1"), "loopback address");
	CHECK_EQ_STR(fn("0xa9fea9fe"), "cloud metadata address");
	CHECK_EQ_STR(fn("169.254.169.254."), "cloud metadata address");
	CHECK_EQ_STR(fn("[::ffff:169.254.169.254]"), "cloud metadata address (IPv4-mapped)");
	CHECK_EQ_STR(fn("[fe80::1]"), "link-local address");
	CHECK_EQ_STR(fn("0"), "unspecified address");
	CHECK_NULL(fn("192.0.2.1"));
	CHECK_NULL(fn("[2001:db8::1]"));
	CHECK_EQ_STR(fn(""), "invalid host");
	CHECK_EQ_STR(fn(NULL), "invalid host");
	CHECK_EQ_STR(fn("b\xc3\xbc" "cher.de"), "invalid host");
}

static void test_private(void)
{
	static const struct { const char *a; bool priv; } t[] = {
		{ "10.0.0.0", true }, { "10.255.255.255", true }, { "9.255.255.255", false },
		{ "11.0.0.0", false }, { "172.16.0.0", true }, { "172.31.255.255", true },
		{ "172.15.255.255", false }, { "172.32.0.0", false }, { "192.168.0.1", true },
		{ "192.169.0.1", false }, { "fc00::1", true }, { "fdff::1", true },
		{ "fe00::1", false }, { "fbff::1", false }, { "::ffff:10.1.2.3", true },
		{ "2002:c0a8:101::1", true }, { "100.64.0.1", false }, { "127.0.0.1", false },
	};

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct gw_dest_addr a = A(t[i].a, 0);

		if (gw_dest_is_private(&a.u.sa) == t[i].priv)
			test_passed++;
		else {
			test_failed++;
			fprintf(stderr, "gw_dest_is_private(%s) != %d\n", t[i].a, t[i].priv);
		}
	}
	CHECK(!gw_dest_is_private(NULL));
}

/* ---- resolving ---------------------------------------------------------------------- */

/* Scripted getaddrinfo: answers from `script`, records the name asked. */
static struct {
	int rc;
	int sys_errno;
	const char *addrs[24];
	unsigned calls;
	char asked[256];
} script;

static int fake_gai(const char *node, const char *service, const struct addrinfo *hints,
		    struct addrinfo **res)
{
	struct addrinfo *head = NULL, **tail = &head;

	script.calls++;
	snprintf(script.asked, sizeof script.asked, "%s", node);
	if (service != NULL || hints->ai_family != AF_UNSPEC || hints->ai_socktype != SOCK_STREAM ||
	    (hints->ai_flags & AI_ADDRCONFIG))
		return EAI_BADFLAGS;    /* the test's way to catch the wrong hints */
	if (script.rc != 0) {
		errno = script.sys_errno;
		return script.rc;
	}
	for (size_t i = 0; i < 24 && script.addrs[i] != NULL; i++) {
		struct addrinfo *ai = calloc(1, sizeof *ai);
		struct gw_dest_addr *a = calloc(1, sizeof *a);

		*a = A(script.addrs[i], 0);
		ai->ai_family = a->u.sa.sa_family;
		ai->ai_socktype = SOCK_STREAM;
		ai->ai_addrlen = a->u.sa.sa_family == AF_INET ? sizeof a->u.in : sizeof a->u.in6;
		ai->ai_addr = &a->u.sa;
		*tail = ai;
		tail = &ai->ai_next;
	}
	*res = head;
	return 0;
}

static void fake_free(struct addrinfo *ai)
{
	while (ai != NULL) {
		struct addrinfo *next = ai->ai_next;

		free(ai->ai_addr);
		free(ai);
		ai = next;
	}
}

static void use_script(int rc, ...)
{
	va_list ap;
	const char *s;
	size_t i = 0;

	memset(&script, 0, sizeof script);
	script.rc = rc;
	va_start(ap, rc);
	while ((s = va_arg(ap, const char *)) != NULL && i < 24)
		script.addrs[i++] = s;
	va_end(ap);
	gw_dest_getaddrinfo_ = fake_gai;
	gw_dest_freeaddrinfo_ = fake_free;
}

static void use_real(void)
{
	gw_dest_getaddrinfo_ = getaddrinfo;
	gw_dest_freeaddrinfo_ = freeaddrinfo;
}

static const char *text_of(const struct gw_dest_addr *a)
{
	static char b[GW_DEST_TEXT_MAX];

	if (gw_dest_addr_text(&a->u.sa, b, sizeof b) != 0)
		b[0] = '\0';
	return b;
}

static unsigned port_of(const struct gw_dest_addr *a)
{
	return ntohs(a->u.sa.sa_family == AF_INET ? a->u.in.sin_port : a->u.in6.sin6_port);
}

static void test_resolve_scripted(void)
{
	struct gw_dest_addr out[GW_DEST_MAX_ADDRS + 4];
	struct gw_dest_error e;
	size_t n = 99;

	/* order kept, duplicates dropped, port set */
	use_script(0, "2001:db8::2", "192.0.2.1", "2001:db8::2", "192.0.2.1", "192.0.2.9", NULL);
	CHECK_EQ_INT(gw_dest_resolve("API.Example.com.", 8443, NULL, 0, out, 16, &n, &e), 0);
	CHECK_EQ_STR(script.asked, "api.example.com");          /* the normalised name */
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_STR(text_of(&out[0]), "2001:db8::2");
	CHECK_EQ_STR(text_of(&out[1]), "192.0.2.1");
	CHECK_EQ_STR(text_of(&out[2]), "192.0.2.9");
	CHECK_EQ_INT(port_of(&out[0]), 8443);
	CHECK_EQ_INT(port_of(&out[2]), 8443);

	/* at most 16, and at most max */
	use_script(0, "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6",
		   "192.0.2.7", "192.0.2.8", "192.0.2.9", "192.0.2.10", "192.0.2.11", "192.0.2.12",
		   "192.0.2.13", "192.0.2.14", "192.0.2.15", "192.0.2.16", "192.0.2.17", "192.0.2.18",
		   NULL);
	CHECK_EQ_INT(gw_dest_resolve("many.example", 443, NULL, 0, out, GW_DEST_MAX_ADDRS + 4, &n,
				     &e), 0);
	CHECK_EQ_INT(n, 16);
	CHECK_EQ_STR(text_of(&out[15]), "192.0.2.16");
	CHECK_EQ_INT(gw_dest_resolve("many.example", 443, NULL, 0, out, 2, &n, &e), 0);
	CHECK_EQ_INT(n, 2);

	/* errors */
	use_script(EAI_NONAME, NULL);
	CHECK_EQ_INT(gw_dest_resolve("nope.example", 443, NULL, 0, out, 16, &n, &e), -ENOENT);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_STR(e.msg, "no address for host 'nope.example'");
	CHECK_EQ_INT(e.code, -ENOENT);
	use_script(EAI_NODATA, NULL);
	CHECK_EQ_INT(gw_dest_resolve("nope.example", 443, NULL, 0, out, 16, &n, &e), -ENOENT);
	use_script(0, NULL);                    /* success with no answers */
	CHECK_EQ_INT(gw_dest_resolve("empty.example", 443, NULL, 0, out, 16, &n, &e), -ENOENT);
	CHECK(strstr(e.msg, "no address for host") != NULL);
	use_script(EAI_AGAIN, NULL);
	CHECK_EQ_INT(gw_dest_resolve("slow.example", 443, NULL, 0, out, 16, &n, &e), -EAGAIN);
	CHECK(strstr(e.msg, "temporary") != NULL);
	use_script(EAI_FAIL, NULL);
	CHECK_EQ_INT(gw_dest_resolve("broken.example", 443, NULL, 0, out, 16, &n, &e), -EIO);
	CHECK(strstr(e.msg, "broken.example") != NULL);
	use_script(EAI_MEMORY, NULL);
	CHECK_EQ_INT(gw_dest_resolve("big.example", 443, NULL, 0, out, 16, &n, &e), -ENOMEM);
	use_script(EAI_SYSTEM, NULL);
	script.sys_errno = ECONNREFUSED;
	CHECK_EQ_INT(gw_dest_resolve("sys.example", 443, NULL, 0, out, 16, &n, &e), -ECONNREFUSED);
	CHECK_EQ_STR(e.msg, "resolving 'sys.example': Connection refused");

	/* literals never reach the resolver */
	use_script(EAI_FAIL, NULL);
	CHECK_EQ_INT(gw_dest_resolve("2130706433", 80, NULL, 0, out, 16, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_STR(text_of(&out[0]), "127.0.0.1");
	CHECK_EQ_INT(port_of(&out[0]), 80);
	CHECK_EQ_INT(gw_dest_resolve("[2001:DB8::7]", 443, NULL, 0, out, 16, &n, &e), 0);
	CHECK_EQ_STR(text_of(&out[0]), "2001:db8::7");
	CHECK_EQ_INT(script.calls, 0);

	/* invalid input */
	CHECK_EQ_INT(gw_dest_resolve("bad host", 443, NULL, 0, out, 16, &n, &e), -EINVAL);
	CHECK_EQ_INT(gw_dest_resolve(NULL, 443, NULL, 0, out, 16, &n, &e), -EINVAL);
	CHECK_EQ_INT(gw_dest_resolve("a.example", 443, NULL, 0, out, 0, &n, &e), -EINVAL);
	CHECK_EQ_INT(script.calls, 0);
	use_real();
}

static void test_resolve_overrides(void)
{
	struct box_gateway_host hosts[] = {
		{ .name = "registry.local", .address = "127.0.0.1" },
		{ .name = "git.internal", .address = "2001:db8::17" },
		{ .name = "broken.internal", .address = "not-an-address" },
	};
	struct gw_dest_addr out[GW_DEST_MAX_ADDRS];
	struct gw_dest_error e;
	size_t n;

	use_script(EAI_FAIL, NULL);             /* an override never asks DNS */
	CHECK_EQ_INT(gw_dest_resolve("Registry.Local.", 5000, hosts, 3, out, 16, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_STR(text_of(&out[0]), "127.0.0.1");
	CHECK_EQ_INT(port_of(&out[0]), 5000);
	CHECK_EQ_INT(gw_dest_resolve("git.internal", 443, hosts, 3, out, 16, &n, &e), 0);
	CHECK_EQ_STR(text_of(&out[0]), "2001:db8::17");
	CHECK_EQ_INT(script.calls, 0);
	CHECK_EQ_INT(gw_dest_resolve("broken.internal", 443, hosts, 3, out, 16, &n, &e), -EINVAL);
	CHECK_EQ_INT(n, 0);
	CHECK(strstr(e.msg, "broken.internal") != NULL);
	/* no override: DNS as usual */
	use_script(0, "192.0.2.44", NULL);
	CHECK_EQ_INT(gw_dest_resolve("other.internal", 443, hosts, 3, out, 16, &n, &e), 0);
	CHECK_EQ_INT(script.calls, 1);
	CHECK_EQ_STR(text_of(&out[0]), "192.0.2.44");
	/* a subdomain is not the overridden name */
	CHECK_EQ_INT(gw_dest_resolve("x.registry.local", 443, hosts, 3, out, 16, &n, &e), 0);
	CHECK_EQ_STR(text_of(&out[0]), "192.0.2.44");
	/* the floor still applies to what an override names */
	CHECK_EQ_INT(gw_dest_resolve("registry.local", 5000, hosts, 1, out, 16, &n, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_addr(&FLOOR, &out[0].u.sa), "loopback address");
	use_real();
}

static void test_resolve_real(void)
{
	struct gw_dest_addr out[GW_DEST_MAX_ADDRS];
	struct gw_dest_error e;
	size_t n;
	int rc;

	/* localhost comes from /etc/hosts: ::1 and/or 127.0.0.1, all floored */
	CHECK_EQ_INT(gw_dest_resolve("localhost", 8080, NULL, 0, out, 16, &n, &e), 0);
	CHECK(n >= 1);
	for (size_t i = 0; i < n; i++) {
		const char *r = gw_dest_floor_addr(&FLOOR, &out[i].u.sa);

		CHECK(r != NULL && strcmp(r, "loopback address") == 0);
		CHECK_EQ_INT(port_of(&out[i]), 8080);
	}
	/* a name that cannot exist: "no address" - or, with no DNS server
	 * reachable at all, a temporary failure; never success */
	rc = gw_dest_resolve("no-such-host.invalid", 443, NULL, 0, out, 16, &n, &e);
	CHECK(rc == -ENOENT || rc == -EAGAIN);
	CHECK_EQ_INT(n, 0);
	if (rc == -ENOENT)
		CHECK_EQ_STR(e.msg, "no address for host 'no-such-host.invalid'");
}

static void test_pin(void)
{
	struct box_gateway_host hosts[] = { { .name = "meta.test", .address = "::ffff:a9fe:a9fe" } };
	struct gw_dest_pin pin;
	struct gw_dest_error e;
	const struct gw_dest_pin_entry *en;
	struct gw_dest_addr other = A("192.0.2.99", 443), wrong_port = A("192.0.2.1", 444),
			    right = A("192.0.2.1", 443);
	size_t i;

	use_script(0, "2002:a9fe:a9fe::1", "192.0.2.1", "2001:db8::1:0:0:1", NULL);
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "Svc.Example.", 443, NULL, 0, &e), 0);
	CHECK_EQ_STR(pin.host, "svc.example");
	CHECK_EQ_INT(pin.port, 443);
	CHECK_EQ_INT(pin.n, 3);
	for (i = 0; (en = gw_dest_pin_get(&pin, i)) != NULL; i++)
		CHECK_EQ_INT(port_of(&en->addr), 443);
	CHECK_EQ_INT(i, 3);
	CHECK_EQ_STR(gw_dest_pin_get(&pin, 0)->ip, "169.254.169.254");   /* Box's ip */
	CHECK_EQ_STR(gw_dest_floor_addr(&FLOOR, &gw_dest_pin_get(&pin, 0)->addr.u.sa),
		     "cloud metadata address (6to4)");
	CHECK_EQ_STR(gw_dest_pin_get(&pin, 1)->ip, "192.0.2.1");
	CHECK_EQ_STR(gw_dest_pin_get(&pin, 2)->ip, "2001:db8::1:0:0:1");
	CHECK(gw_dest_pin_get(&pin, 3) == NULL);
	CHECK(gw_dest_pin_get(NULL, 0) == NULL);
	{
		socklen_t len;
		const struct sockaddr *sa = gw_dest_addr_sa(&gw_dest_pin_get(&pin, 1)->addr, &len);

		CHECK_EQ_INT(len, sizeof(struct sockaddr_in));
		CHECK(gw_dest_pin_contains(&pin, sa));
		sa = gw_dest_addr_sa(&gw_dest_pin_get(&pin, 2)->addr, &len);
		CHECK_EQ_INT(len, sizeof(struct sockaddr_in6));
	}
	CHECK(gw_dest_pin_contains(&pin, &right.u.sa));
	CHECK(!gw_dest_pin_contains(&pin, &other.u.sa));
	CHECK(!gw_dest_pin_contains(&pin, &wrong_port.u.sa));
	CHECK(!gw_dest_pin_contains(NULL, &right.u.sa));

	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "meta.test", 80, hosts, 1, &e), 0);
	CHECK_EQ_INT(pin.n, 1);
	CHECK_EQ_STR(pin.e[0].ip, "169.254.169.254");

	/* failure leaves an empty pin */
	use_script(EAI_NONAME, NULL);
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "gone.example", 443, NULL, 0, &e), -ENOENT);
	CHECK_EQ_INT(pin.n, 0);
	CHECK(gw_dest_pin_get(&pin, 0) == NULL);
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "bad..host", 443, NULL, 0, &e), -EINVAL);
	CHECK_EQ_INT(pin.n, 0);
	use_real();
}

/* A [gateway] hosts entry mapping a name to loopback opens that name, with
 * the floor on; nothing else does (docs/egress.md "The destination floor"). */
static void test_hosts_loopback(void)
{
	static const uint16_t self[] = { 3128 };
	struct gw_dest_floor on = { .enabled = true, .self_ports = self, .n_self_ports = 1 };
	struct box_gateway_host hosts[] = {
		{ .name = "model.local", .address = "127.0.0.1" },
		{ .name = "v6.local", .address = "::1" },
		{ .name = "mapped.local", .address = "::ffff:127.0.0.9" },
		{ .name = "meta.local", .address = "169.254.169.254" },
		{ .name = "ll.local", .address = "169.254.10.1" },
		{ .name = "any.local", .address = "0.0.0.0" },
		{ .name = "127.0.0.2", .address = "127.0.0.1" },  /* a literal as a name */
		{ .name = "localhost", .address = "127.0.0.1" },
	};
	struct gw_dest_pin pin;
	struct gw_dest_error e;
	char text[1024];

	use_script(0, "127.0.0.1", NULL);       /* what DNS says for any other name */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "Model.Local.", 8080, hosts, 8, &e), 0);
	CHECK(pin.n == 1 && pin.e[0].from_hosts);
	CHECK_NULL(gw_dest_floor_pinned(&on, &pin.e[0]));
	CHECK_NULL(gw_dest_floor_pinned(NULL, &pin.e[0]));      /* NULL floor: on, no self port */
	/* any port the request names but the gateway's own */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "model.local", 3128, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "the gateway's own port");
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "v6.local", 11434, hosts, 8, &e), 0);
	CHECK_NULL(gw_dest_floor_pinned(&on, &pin.e[0]));
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "mapped.local", 11434, hosts, 8, &e), 0);
	CHECK_NULL(gw_dest_floor_pinned(&on, &pin.e[0]));
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "mapped.local", 3128, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "the gateway's own port");
	/* other classes stay floored, hosts entry or not */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "meta.local", 80, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "cloud metadata address");
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "ll.local", 80, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "link-local address");
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "any.local", 80, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "unspecified address");
	/* a name DNS resolves to loopback is not opened */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "rebind.example", 8080, hosts, 8, &e), 0);
	CHECK(pin.n == 1 && !pin.e[0].from_hosts);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "loopback address");
	/* nor a subdomain of an opened name */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "x.model.local", 8080, hosts, 8, &e), 0);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "loopback address");
	/* nor a literal, even one a hosts entry names: it is what it denotes */
	CHECK_EQ_INT(gw_dest_pin_resolve(&pin, "127.0.0.2", 8080, hosts, 8, &e), 0);
	CHECK(!pin.e[0].from_hosts);
	CHECK_EQ_STR(gw_dest_floor_pinned(&on, &pin.e[0]), "loopback address");
	CHECK_EQ_STR(gw_dest_floor_name(&on, "127.0.0.2"), "loopback address");
	/* localhost is refused by its name before any entry is read */
	CHECK_EQ_STR(gw_dest_floor_name(&on, "localhost"), "loopback name");
	CHECK_EQ_INT(script.calls, 2);          /* rebind.example and x.model.local only */
	use_real();

	/* the start lines say what is opened, and what stays refused */
	gw_dest_floor_describe(&on, hosts, 8, text, sizeof text);
	CHECK_EQ_STR(text,
		     "cairn: gateway: loopback opened by [gateway] hosts, the destination floor "
		     "on: model.local (127.0.0.1), v6.local (::1), mapped.local (::ffff:127.0.0.9); "
		     "any port but the gateway's own (3128)\n"
		     "cairn: gateway: [gateway] hosts.meta.local = 169.254.169.254 stays refused by "
		     "the destination floor (cloud metadata address)\n"
		     "cairn: gateway: [gateway] hosts.ll.local = 169.254.10.1 stays refused by the "
		     "destination floor (link-local address)\n"
		     "cairn: gateway: [gateway] hosts.any.local = 0.0.0.0 stays refused by the "
		     "destination floor (unspecified address)\n"
		     "cairn: gateway: [gateway] hosts.127.0.0.2 = 127.0.0.1 stays refused by the "
		     "destination floor (loopback address)\n"
		     "cairn: gateway: [gateway] hosts.localhost = 127.0.0.1 stays refused by the "
		     "destination floor (loopback name)\n");
	/* a short buffer: cut, NUL-terminated, the whole length returned */
	CHECK(gw_dest_floor_describe(&on, hosts, 1, text, 10) > 10 && strlen(text) == 9);
	struct gw_dest_floor off = { .enabled = false };
	gw_dest_floor_describe(&off, hosts, 8, text, sizeof text);
	CHECK_EQ_STR(text, "cairn: gateway: destination floor off ([gateway] destination_floor = "
		     "false): loopback, link-local and cloud metadata destinations are left to "
		     "the policy\n");
	CHECK_EQ_INT(gw_dest_floor_describe(&on, hosts + 4, 0, text, sizeof text), 0);
	CHECK_EQ_STR(text, "");
	/* a private address is an ordinary upstream: nothing to say */
	struct box_gateway_host lan[] = { { .name = "reg.lan", .address = "10.0.0.7" } };
	CHECK_EQ_INT(gw_dest_floor_describe(&on, lan, 1, text, sizeof text), 0);
}

static const struct test_case tests[] = {
	{ "host_names", test_host_names },
	{ "host_literals", test_host_literals },
	{ "ip_text", test_ip_text },
	{ "floor_v4", test_floor_v4 },
	{ "floor_v6", test_floor_v6 },
	{ "floor_ports_and_optout", test_floor_ports_and_optout },
	{ "floor_names", test_floor_names },
	{ "private", test_private },
	{ "resolve_scripted", test_resolve_scripted },
	{ "resolve_overrides", test_resolve_overrides },
	{ "resolve_real", test_resolve_real },
	{ "pin", test_pin },
	{ "hosts_loopback", test_hosts_loopback },
};

TEST_MAIN(tests)
