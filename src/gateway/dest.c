/* dest.c - destinations: host normalisation, address text for policy, the
 * default floor, the resolver with [gateway] hosts overrides, the pin.
 *
 * Divisions: helpers | hosts | address text | the floor | resolving | pin.
 *
 * Sources for the floor's lists (this comment is the record):
 *   169.254.169.254  AWS/GCP/Azure/OCI/OpenStack/DigitalOcean IMDS (and
 *                    inside 169.254/16 anyway; named so the reason is exact)
 *   169.254.170.2    AWS ECS task metadata / container credentials
 *   169.254.170.23   AWS EKS Pod Identity Agent (AWS EKS user guide,
 *   fd00:ec2::23     "Set up the Amazon EKS Pod Identity Agent")
 *   fd00:ec2::254    AWS IMDS over IPv6 (Nitro)
 *   fd20:ce::254     GCP metadata server over IPv6 (IPv6-only VMs)
 *   fd00:42::42      Scaleway metadata over IPv6 (v4 169.254.42.42 is link-local)
 *   100.100.100.200  Alibaba Cloud ECS metadata (outside link-local)
 *   192.0.0.192      Oracle Cloud (Classic) metadata, as listed by the SSRF
 *                    references (PayloadsAllTheThings "SSRF URL for Oracle
 *                    Cloud"); 192.0.0.0/24 is IETF protocol space (RFC 6890),
 *                    never a public upstream, so refusing it costs nothing.
 *   names            metadata.google.internal, metadata.goog (GCP);
 *                    metadata.azure.internal (Box's own metadata_hosts rule);
 *                    instance-data, instance-data.ec2.internal (AWS);
 *                    metadata.tencentyun.com (Tencent); metadata.platform-
 *                    equinix.com, metadata.packet.net (Equinix Metal: public
 *                    addresses, so only the name can be floored); bare
 *                    "metadata" (GCE's short name via the search list). */
#include "dest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------- */

static int fail(struct gw_dest_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct gw_dest_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* The host as a message can show it: printable ASCII kept, the rest \xNN,
 * cut at ~80 bytes; a peer's bytes never reach a log raw. */
static const char *shown(const char *s, size_t len, char *buf, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (o >= 80) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static uint32_t v4_of(const uint8_t b[4])
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

const struct sockaddr *gw_dest_addr_sa(const struct gw_dest_addr *a, socklen_t *len)
{
	if (len != NULL)
		*len = a->u.sa.sa_family == AF_INET6 ? (socklen_t)sizeof a->u.in6
						     : (socklen_t)sizeof a->u.in;
	return &a->u.sa;
}

/* ---- hosts ------------------------------------------------------------------- */

static bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* v6 literal text (no brackets) into out; rejects zones with their own words. */
static int parse_v6(const char *text, const char *orig, size_t olen, struct gw_dest_host *out,
		    struct gw_dest_error *err)
{
	char show[128];
	size_t n = strlen(text);

	if (memchr(text, '%', n) != NULL)
		return fail(err, -EINVAL, "host '%s': IPv6 zone identifiers are not supported",
			    shown(orig, olen, show, sizeof show));
	if (n >= GW_DEST_TEXT_MAX ||
	    inet_pton(AF_INET6, text, &out->addr.u.in6.sin6_addr) != 1)
		return fail(err, -EINVAL, "host '%s' is not a valid IPv6 address",
			    shown(orig, olen, show, sizeof show));
	out->addr.u.in6.sin6_family = AF_INET6;
	out->kind = GW_DEST_IPV6;
	for (size_t i = 0; i < n; i++)
		out->name[i] = (char)((text[i] >= 'A' && text[i] <= 'Z') ? text[i] - 'A' + 'a' : text[i]);
	out->name[n] = '\0';
	return 0;
}

static int host_parse(const char *host, size_t len, struct gw_dest_host *out,
		      struct gw_dest_error *err)
{
	char buf[GW_DEST_HOST_MAX + 2];
	char show[128], bad[8];
	size_t n, label;
	int rc;

	if (host == NULL || len == 0)
		return fail(err, -EINVAL, "empty host");
	if (memchr(host, '\0', len) != NULL)
		return fail(err, -EINVAL, "host '%s' contains a NUL byte",
			    shown(host, len, show, sizeof show));
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)host[i] >= 0x80)
			return fail(err, -EINVAL, "host '%s' is not ASCII (internationalised "
				    "names are not supported: use the xn-- form)",
				    shown(host, len, show, sizeof show));
	/* 253 bytes and one trailing dot; a bracketed v6 literal is far shorter */
	if (len > GW_DEST_HOST_MAX + 1)
		return fail(err, -EINVAL, "host '%s' is longer than %d bytes",
			    shown(host, len, show, sizeof show), GW_DEST_HOST_MAX);
	memcpy(buf, host, len);
	buf[len] = '\0';

	if (buf[0] == '[') {
		if (len < 3 || buf[len - 1] != ']')
			return fail(err, -EINVAL, "host '%s' has unbalanced brackets",
				    shown(host, len, show, sizeof show));
		buf[len - 1] = '\0';
		if (strchr(buf + 1, ':') == NULL)
			return fail(err, -EINVAL, "host '%s': brackets hold only an IPv6 address",
				    shown(host, len, show, sizeof show));
		rc = parse_v6(buf + 1, host, len, out, err);
		goto literal;
	}
	if (memchr(buf, ':', len) != NULL) {
		rc = parse_v6(buf, host, len, out, err);
		goto literal;
	}

	n = len;
	if (buf[n - 1] == '.')
		buf[--n] = '\0';        /* one trailing dot: the root, same host */
	if (n == 0)
		return fail(err, -EINVAL, "host '%s' is empty", shown(host, len, show, sizeof show));
	if (n > GW_DEST_HOST_MAX)
		return fail(err, -EINVAL, "host '%s' is longer than %d bytes",
			    shown(host, len, show, sizeof show), GW_DEST_HOST_MAX);
	label = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '.' || c == '\0') {
			if (label == 0)
				return fail(err, -EINVAL, "host '%s' has an empty label",
					    shown(host, len, show, sizeof show));
			label = 0;
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			buf[i] = (char)(c - 'A' + 'a');
		else if (!name_char(c))
			return fail(err, -EINVAL, "host '%s' contains '%s', not allowed in a host name",
				    shown(host, len, show, sizeof show),
				    shown(buf + i, 1, bad, sizeof bad));
		if (++label > GW_DEST_LABEL_MAX)
			return fail(err, -EINVAL, "host '%s' has a label longer than %d bytes",
				    shown(host, len, show, sizeof show), GW_DEST_LABEL_MAX);
	}
	memcpy(out->name, buf, n + 1);

	/* What getaddrinfo would take as a number is a number here too: glibc
	 * tries inet_aton on every name before DNS, so "2130706433" or "0x7f.1"
	 * dials 127.0.0.1.  Treating them as names would let them past a floor
	 * that only looks at literals. */
	if (inet_pton(AF_INET, buf, &out->addr.u.in.sin_addr) == 1) {
		out->kind = GW_DEST_IPV4;
	} else if (inet_aton(buf, &out->addr.u.in.sin_addr) != 0) {
		out->kind = GW_DEST_IPV4;
		out->v4_shorthand = true;
	} else {
		out->kind = GW_DEST_NAME;
		return 0;
	}
	out->addr.u.in.sin_family = AF_INET;
	rc = 0;
literal:
	if (rc != 0)
		return rc;
	return gw_dest_ip_text(&out->addr.u.sa, out->ip, sizeof out->ip);
}

int gw_dest_host_parse(const char *host, size_t len, struct gw_dest_host *out,
		       struct gw_dest_error *err)
{
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = host_parse(host, len, out, err)) != 0)
		memset(out, 0, sizeof *out);
	return rc;
}

/* ---- address text -------------------------------------------------------------- */

enum embed {
	EMB_NONE, EMB_MAPPED, EMB_COMPAT, EMB_NAT64, EMB_6TO4, EMB_TEREDO,
};

/* The IPv4 address an IPv6 address carries, and how.  with_nat64: the floor
 * unwraps NAT64 too; Box's `ip` text does not (policy/src/address.rs). */
static enum embed embedded_v4(const uint8_t b[16], bool with_nat64, uint8_t v4[4])
{
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };

	if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
		memcpy(v4, b + 12, 4);
		return EMB_MAPPED;
	}
	/* ::a.b.c.d, but :: and ::1 are the unspecified and loopback addresses */
	if (all_zero(b, 12) && ((b[12] | b[13] | b[14]) != 0 || b[15] > 1)) {
		memcpy(v4, b + 12, 4);
		return EMB_COMPAT;
	}
	if (b[0] == 0x20 && b[1] == 0x02) {
		memcpy(v4, b + 2, 4);
		return EMB_6TO4;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		for (int i = 0; i < 4; i++)
			v4[i] = (uint8_t)~b[12 + i];  /* Teredo obfuscates the client */
		return EMB_TEREDO;
	}
	/* RFC 6052 well-known prefix /96, and RFC 8215's local-use 64:ff9b:1::/48
	 * read as a /96 (its usual deployment; other prefix lengths put the
	 * address elsewhere and are not unwrapped). */
	if (with_nat64 && (memcmp(b, nat64, 12) == 0 || memcmp(b, nat64_local, 6) == 0)) {
		memcpy(v4, b + 12, 4);
		return EMB_NAT64;
	}
	return EMB_NONE;
}

static int check_sa(const struct sockaddr *sa)
{
	if (sa == NULL || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	return 0;
}

int gw_dest_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a;
	int rc;

	if ((rc = check_sa(sa)) != 0)
		return rc;
	a = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
				     : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (len > 4096)
		len = 4096;     /* socklen_t is narrower than size_t; any text fits */
	if (inet_ntop(sa->sa_family, a, buf, (socklen_t)len) == NULL)
		return -ENOSPC;
	return 0;
}

int gw_dest_ip_text(const struct sockaddr *sa, char *buf, size_t len)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET };
	uint8_t e[4];
	int rc;

	if ((rc = check_sa(sa)) != 0)
		return rc;
	if (sa->sa_family == AF_INET6 &&
	    embedded_v4(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, false, e) != EMB_NONE) {
		memcpy(&v4.sin_addr, e, 4);
		sa = (const struct sockaddr *)&v4;
	}
	/* What is left of IPv6 here never meets glibc's dotted-tail cases
	 * (::/96 and ::ffff:0:0/96 were unwrapped above), so inet_ntop is the
	 * plain RFC 5952 text Box's Rust Display gives; the tests hold both. */
	return gw_dest_addr_text(sa, buf, len);
}

/* ---- the floor ----------------------------------------------------------------- */

enum v4class { V4_OK, V4_METADATA, V4_LOOPBACK, V4_UNSPEC, V4_LINKLOCAL, V4_N };

static enum v4class classify_v4(uint32_t a)
{
	static const uint32_t metadata[] = {
		0xa9fea9fe,     /* 169.254.169.254 */
		0xa9feaa02,     /* 169.254.170.2 */
		0xa9feaa17,     /* 169.254.170.23 */
		0x646464c8,     /* 100.100.100.200 */
		0xc00000c0,     /* 192.0.0.192 */
	};

	for (size_t i = 0; i < sizeof metadata / sizeof metadata[0]; i++)
		if (a == metadata[i])
			return V4_METADATA;
	if ((a >> 24) == 127)
		return V4_LOOPBACK;
	if ((a >> 24) == 0)
		return V4_UNSPEC;
	if ((a >> 16) == 0xa9fe)
		return V4_LINKLOCAL;
	return V4_OK;
}

/* reasons[class][embedding] */
#define GW_REASONS(what)                                                            \
	{ what, what " (IPv4-mapped)", what " (IPv4-compatible)", what " (NAT64)",  \
	  what " (6to4)", what " (Teredo)" }
static const char *const reasons[V4_N][6] = {
	[V4_OK] = { NULL, NULL, NULL, NULL, NULL, NULL },
	[V4_METADATA] = GW_REASONS("cloud metadata address"),
	[V4_LOOPBACK] = GW_REASONS("loopback address"),
	[V4_UNSPEC] = GW_REASONS("unspecified address"),
	[V4_LINKLOCAL] = GW_REASONS("link-local address"),
};
#undef GW_REASONS

static const uint8_t metadata_v6[][16] = {
	{ 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 },  /* fd00:ec2::254 */
	{ 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x23 },               /* fd00:ec2::23 */
	{ 0xfd, 0x20, 0x00, 0xce, [15] = 0x54, [14] = 0x02 },  /* fd20:ce::254 */
	{ 0xfd, 0x00, 0x00, 0x42, [15] = 0x42 },               /* fd00:42::42 */
};

static const char *floor_v6(const uint8_t b[16])
{
	static const uint8_t one[16] = { [15] = 1 };
	uint8_t e[4];
	enum embed how;

	for (size_t i = 0; i < sizeof metadata_v6 / sizeof metadata_v6[0]; i++)
		if (memcmp(b, metadata_v6[i], 16) == 0)
			return "cloud metadata address";
	if (memcmp(b, one, 16) == 0)
		return "loopback address";
	if (all_zero(b, 16))
		return "unspecified address";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local address";
	if ((how = embedded_v4(b, true, e)) != EMB_NONE)
		return reasons[classify_v4(v4_of(e))][how];
	return NULL;
}

/* Where a connect(2) lands on this host: loopback or unspecified, directly
 * or IPv4-mapped (a dual-stack socket follows the mapping). */
static bool lands_here(const struct sockaddr *sa)
{
	enum v4class c;

	if (sa->sa_family == AF_INET) {
		c = classify_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	} else {
		const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		static const uint8_t one[16] = { [15] = 1 };
		uint8_t e[4];

		if (memcmp(b, one, 16) == 0 || all_zero(b, 16))
			return true;
		if (embedded_v4(b, false, e) != EMB_MAPPED)
			return false;
		c = classify_v4(v4_of(e));
	}
	return c == V4_LOOPBACK || c == V4_UNSPEC;
}

const char *gw_dest_floor_addr(const struct gw_dest_floor *floor, const struct sockaddr *sa)
{
	bool enabled = floor == NULL || floor->enabled;
	uint16_t port;

	if (check_sa(sa) != 0)
		return "not an IP address";
	port = ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
	/* A loop through the gateway is refused whatever the floor says: it
	 * is not a policy question, it is a proxy calling itself. */
	if (floor != NULL && port != 0 && lands_here(sa))
		for (size_t i = 0; i < floor->n_self_ports; i++)
			if (floor->self_ports[i] == port)
				return "the gateway's own port";
	if (!enabled)
		return NULL;
	if (sa->sa_family == AF_INET)
		return reasons[classify_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr))][0];
	return floor_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
}

/* Loopback proper - 127.0.0.0/8, ::1, or IPv4-mapped 127/8, which a
 * dual-stack socket dials as 127/8 - the class a [gateway] hosts entry may
 * open.  Not the unspecified address, though connect(2) lands it here too:
 * no local server is reached by that name, and the floor keeps it. */
static bool is_loopback(const struct sockaddr *sa)
{
	static const uint8_t one[16] = { [15] = 1 };
	const uint8_t *b;
	uint8_t e[4];

	if (sa->sa_family == AF_INET)
		return classify_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)) ==
		       V4_LOOPBACK;
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (memcmp(b, one, 16) == 0)
		return true;
	return embedded_v4(b, false, e) == EMB_MAPPED && classify_v4(v4_of(e)) == V4_LOOPBACK;
}

const char *gw_dest_floor_pinned(const struct gw_dest_floor *floor,
				 const struct gw_dest_pin_entry *e)
{
	const char *why = gw_dest_floor_addr(floor, &e->addr.u.sa);

	/* The self-port reason comes first in gw_dest_floor_addr, so a loop
	 * through the gateway is refused before this opt-in is looked at. */
	if (why != NULL && e->from_hosts && strcmp(why, "the gateway's own port") != 0 &&
	    is_loopback(&e->addr.u.sa))
		return NULL;
	return why;
}

/* Refused names: exact, or any subdomain when the entry has a dot. */
static const char *const metadata_names[] = {
	"metadata.google.internal", "metadata.goog", "metadata.azure.internal",
	"instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com",
	"metadata.platformequinix.com", "metadata.packet.net", "metadata",
};

static bool name_is_or_under(const char *name, const char *entry)
{
	size_t n = strlen(name), e = strlen(entry);

	if (n == e)
		return memcmp(name, entry, n) == 0;
	return strchr(entry, '.') != NULL && n > e && name[n - e - 1] == '.' &&
	       memcmp(name + n - e, entry, e) == 0;
}

const char *gw_dest_floor_name(const struct gw_dest_floor *floor, const char *host)
{
	struct gw_dest_host h;
	size_t n;

	if (host == NULL || gw_dest_host_parse(host, strlen(host), &h, NULL) != 0)
		return "invalid host";
	if (floor != NULL && !floor->enabled)
		return NULL;
	if (h.kind != GW_DEST_NAME)
		return gw_dest_floor_addr(floor, &h.addr.u.sa);
	/* RFC 6761 §6.3: localhost and its subdomains are loopback by definition */
	n = strlen(h.name);
	if (strcmp(h.name, "localhost") == 0 ||
	    (n > 10 && strcmp(h.name + n - 10, ".localhost") == 0))
		return "loopback name";
	for (size_t i = 0; i < sizeof metadata_names / sizeof metadata_names[0]; i++)
		if (name_is_or_under(h.name, metadata_names[i]))
			return "cloud metadata name";
	return NULL;
}

bool gw_dest_is_private(const struct sockaddr *sa)
{
	uint32_t a;
	uint8_t e[4];

	if (check_sa(sa) != 0)
		return false;
	if (sa->sa_family == AF_INET) {
		a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
	} else {
		const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		if ((b[0] & 0xfe) == 0xfc)
			return true;
		if (embedded_v4(b, true, e) == EMB_NONE)
			return false;
		a = v4_of(e);
	}
	return (a >> 24) == 10 || (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8;
}

/* ---- resolving ------------------------------------------------------------------ */

/* The test seam: tests point this at a fake to script EAI_* results, order,
 * duplicates and overflow without DNS.  Written only before threads start. */
int (*gw_dest_getaddrinfo_)(const char *, const char *, const struct addrinfo *,
			    struct addrinfo **) = getaddrinfo;
void (*gw_dest_freeaddrinfo_)(struct addrinfo *) = freeaddrinfo;

static bool same_addr(const struct gw_dest_addr *a, const struct gw_dest_addr *b)
{
	if (a->u.sa.sa_family != b->u.sa.sa_family)
		return false;
	if (a->u.sa.sa_family == AF_INET)
		return a->u.in.sin_addr.s_addr == b->u.in.sin_addr.s_addr;
	return memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr, 16) == 0 &&
	       a->u.in6.sin6_scope_id == b->u.in6.sin6_scope_id;
}

/* Append a (port set) unless present or full.  Returns true when kept. */
static bool add_addr(struct gw_dest_addr *out, size_t max, size_t *n, const struct gw_dest_addr *a,
		     uint16_t port)
{
	struct gw_dest_addr c = *a;

	if (c.u.sa.sa_family == AF_INET)
		c.u.in.sin_port = htons(port);
	else
		c.u.in6.sin6_port = htons(port);
	for (size_t i = 0; i < *n; i++)
		if (same_addr(&out[i], &c))
			return false;
	if (*n >= max)
		return false;
	out[(*n)++] = c;
	return true;
}

static int literal_addr(const char *text, struct gw_dest_addr *a)
{
	memset(a, 0, sizeof *a);
	if (inet_pton(AF_INET, text, &a->u.in.sin_addr) == 1) {
		a->u.in.sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, &a->u.in6.sin6_addr) == 1) {
		a->u.in6.sin6_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/* The override's name normalised as a host is (the config already lower-
 * cases it and refuses a trailing dot; this keeps the match exact anyway). */
static bool override_matches(const char *name, const char *host)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n > 0 && name[n - 1] == '.')
		n--;
	return n > 0 && n == strlen(host) && strncasecmp(name, host, n) == 0;
}

static int resolve_gai(const struct gw_dest_host *h, uint16_t port, struct gw_dest_addr *out,
		       size_t max, size_t *n, struct gw_dest_error *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_protocol = IPPROTO_TCP };
	struct addrinfo *res = NULL;
	int rc;

	/* No AI_ADDRCONFIG: the supervisor's own interfaces say nothing about
	 * what the upstream offers, and with only loopback up it would drop
	 * every answer.  Numeric forms never get here (host_parse took them). */
	rc = gw_dest_getaddrinfo_(h->name, NULL, &hints, &res);
	switch (rc) {
	case 0:
		break;
	case EAI_NONAME:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
#endif
		return fail(err, -ENOENT, "no address for host '%s'", h->name);
	case EAI_AGAIN:
		return fail(err, -EAGAIN, "no address for host '%s': temporary failure in name "
			    "resolution", h->name);
	case EAI_MEMORY:
		return fail(err, -ENOMEM, "resolving '%s': out of memory", h->name);
	case EAI_SYSTEM: {
		int e = errno > 0 ? errno : EIO;

		errno = e;      /* %m: strerror without its static buffer */
		return fail(err, -e, "resolving '%s': %m", h->name);
	}
	default:
		return fail(err, -EIO, "resolving '%s': %s", h->name, gai_strerror(rc));
	}
	for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		struct gw_dest_addr a;

		memset(&a, 0, sizeof a);
		if (ai->ai_addr == NULL)
			continue;
		if (ai->ai_family == AF_INET && ai->ai_addr->sa_family == AF_INET &&
		    ai->ai_addrlen >= sizeof a.u.in)
			memcpy(&a.u.in, ai->ai_addr, sizeof a.u.in);
		else if (ai->ai_family == AF_INET6 && ai->ai_addr->sa_family == AF_INET6 &&
			 ai->ai_addrlen >= sizeof a.u.in6)
			memcpy(&a.u.in6, ai->ai_addr, sizeof a.u.in6);
		else
			continue;       /* not an address we dial */
		add_addr(out, max, n, &a, port);
	}
	gw_dest_freeaddrinfo_(res);
	if (*n == 0)
		return fail(err, -ENOENT, "no address for host '%s'", h->name);
	return 0;
}

int gw_dest_resolve(const char *host, uint16_t port, const struct box_gateway_host *overrides,
		    size_t n_overrides, struct gw_dest_addr *out, size_t max, size_t *n,
		    struct gw_dest_error *err)
{
	struct gw_dest_host h;
	int rc;

	*n = 0;
	if (max > GW_DEST_MAX_ADDRS)
		max = GW_DEST_MAX_ADDRS;
	if (max == 0 || out == NULL)
		return fail(err, -EINVAL, "resolving: no room for an address");
	if (host == NULL)
		return fail(err, -EINVAL, "empty host");
	if ((rc = gw_dest_host_parse(host, strlen(host), &h, err)) != 0)
		return rc;

	for (size_t i = 0; i < n_overrides; i++) {
		struct gw_dest_addr a;

		if (!override_matches(overrides[i].name, h.name))
			continue;
		if (overrides[i].address == NULL || literal_addr(overrides[i].address, &a) != 0) {
			*n = 0;
			return fail(err, -EINVAL, "`[gateway] hosts.%s` is not an IPv4 or IPv6 "
				    "address", overrides[i].name);
		}
		add_addr(out, max, n, &a, port);
	}
	if (*n > 0)
		return 0;
	if (h.kind != GW_DEST_NAME) {
		add_addr(out, max, n, &h.addr, port);
		return 0;
	}
	if ((rc = resolve_gai(&h, port, out, max, n, err)) != 0)
		*n = 0;
	return rc;
}

/* ---- the pin ---------------------------------------------------------------------- */

int gw_dest_pin_resolve(struct gw_dest_pin *pin, const char *host, uint16_t port,
			const struct box_gateway_host *overrides, size_t n_overrides,
			struct gw_dest_error *err)
{
	struct gw_dest_addr a[GW_DEST_MAX_ADDRS];
	struct gw_dest_host h;
	size_t n = 0;
	int rc;

	memset(pin, 0, sizeof *pin);
	if (host == NULL)
		return fail(err, -EINVAL, "empty host");
	if ((rc = gw_dest_host_parse(host, strlen(host), &h, err)) != 0)
		return rc;
	if ((rc = gw_dest_resolve(h.name, port, overrides, n_overrides, a, GW_DEST_MAX_ADDRS, &n,
				  err)) != 0)
		return rc;
	/* gw_dest_resolve took the hosts entry's addresses alone when one
	 * matched; a literal host is never opened by one (the name floor has
	 * already judged it by its address, and so does the pin). */
	bool from_hosts = false;
	for (size_t i = 0; i < n_overrides && h.kind == GW_DEST_NAME; i++)
		from_hosts = from_hosts || override_matches(overrides[i].name, h.name);
	for (size_t i = 0; i < n; i++) {
		pin->e[i].addr = a[i];
		pin->e[i].from_hosts = from_hosts;
		if ((rc = gw_dest_ip_text(&a[i].u.sa, pin->e[i].ip, sizeof pin->e[i].ip)) != 0) {
			memset(pin, 0, sizeof *pin);
			return fail(err, rc, "host '%s': an address has no text", h.name);
		}
	}
	memcpy(pin->host, h.name, sizeof pin->host);
	pin->port = port;
	pin->n = n;
	return 0;
}

const struct gw_dest_pin_entry *gw_dest_pin_get(const struct gw_dest_pin *pin, size_t i)
{
	return pin != NULL && i < pin->n && i < GW_DEST_MAX_ADDRS ? &pin->e[i] : NULL;
}

bool gw_dest_pin_contains(const struct gw_dest_pin *pin, const struct sockaddr *sa)
{
	struct gw_dest_addr a;

	if (pin == NULL || check_sa(sa) != 0)
		return false;
	memset(&a, 0, sizeof a);
	if (sa->sa_family == AF_INET)
		memcpy(&a.u.in, sa, sizeof a.u.in);
	else
		memcpy(&a.u.in6, sa, sizeof a.u.in6);
	for (size_t i = 0; i < pin->n && i < GW_DEST_MAX_ADDRS; i++) {
		const struct gw_dest_addr *p = &pin->e[i].addr;
		bool port_ok = sa->sa_family == AF_INET ? p->u.in.sin_port == a.u.in.sin_port
							: p->u.in6.sin6_port == a.u.in6.sin6_port;

		if (port_ok && same_addr(p, &a))
			return true;
	}
	return false;
}

/* ---- the start lines ------------------------------------------------------------- */

size_t gw_dest_floor_describe(const struct gw_dest_floor *floor,
			      const struct box_gateway_host *hosts, size_t n_hosts, char *buf,
			      size_t len)
{
	size_t o = 0, opened = 0;
	char self[64] = "";

#define PUT(...) (o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, \
					__VA_ARGS__))
	if (len > 0)
		buf[0] = '\0';
	if (floor != NULL && !floor->enabled)
		return PUT("cairn: gateway: destination floor off ([gateway] destination_floor = "
			   "false): loopback, link-local and cloud metadata destinations are left "
			   "to the policy\n");
	for (size_t i = 0; floor != NULL && i < floor->n_self_ports; i++)
		snprintf(self + strlen(self), sizeof self - strlen(self), "%s%u", i ? ", " : "",
			 (unsigned)floor->self_ports[i]);
	/* pass 0: the names opened, on one line; pass 1: the entries refused */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n_hosts; i++) {
			struct gw_dest_pin_entry e = { .from_hosts = false };
			struct gw_dest_host h;
			const char *why;

			if (literal_addr(hosts[i].address, &e.addr) != 0 ||
			    gw_dest_host_parse(hosts[i].name, strlen(hosts[i].name), &h, NULL) != 0)
				continue;       /* the config refuses these */
			e.from_hosts = h.kind == GW_DEST_NAME;  /* as gw_dest_pin_resolve sets it */
			if ((why = gw_dest_floor_name(floor, hosts[i].name)) == NULL)
				why = gw_dest_floor_pinned(floor, &e);
			if (pass == 1 && why != NULL)
				PUT("cairn: gateway: [gateway] hosts.%s = %s stays refused by the "
				    "destination floor (%s)\n", hosts[i].name, hosts[i].address, why);
			else if (pass == 0 && why == NULL && is_loopback(&e.addr.u.sa))
				PUT("%s%s (%s)", opened++ ? ", " : "cairn: gateway: loopback opened by "
				    "[gateway] hosts, the destination floor on: ", hosts[i].name,
				    hosts[i].address);
		}
		if (pass == 0 && opened > 0 && self[0] != '\0')
			PUT("; any port but the gateway's own (%s)\n", self);
		else if (pass == 0 && opened > 0)
			PUT("\n");
	}
#undef PUT
	return o;
}
