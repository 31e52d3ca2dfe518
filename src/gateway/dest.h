/* dest.h - where the gateway may connect: the host as the policy reads it,
 * the address as the policy reads it, cairn's default destination floor,
 * and the resolver with the [gateway] hosts overrides.
 *
 * Order (docs/egress.md "Decisions, in Box's order"): parse the host
 * (gw_dest_host_parse) -> gw_dest_floor_name and net:connect without `ip` ->
 * resolve once into a pin (gw_dest_pin_resolve) -> per pinned address in
 * order: gw_dest_floor_addr and net:connect with `ip` = entry->ip -> dial
 * exactly that address.  Nothing here re-resolves: the address decided is
 * the address dialled.
 *
 * The floor is cairn's, beyond Box (issue 5 §4; Box leaves metadata to
 * policy): it refuses what no workload needs and policy authors forget.
 * Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are deliberately
 * NOT in it - local registries and LAN services are ordinary upstreams, so
 * policy decides; gw_dest_is_private tells logs and context which they are.
 * `[gateway] destination_floor = false` turns the floor off (floor.enabled).
 * A `[gateway] hosts` entry mapping a name to a loopback address opens that
 * one name instead, with the floor on (gw_dest_floor_pinned; docs/egress.md
 * "The destination floor").
 *
 * Everything here is pure except gw_dest_resolve / gw_dest_pin_resolve
 * (getaddrinfo).  All functions are thread-safe; every pointer argument is
 * borrowed, nothing is retained. */
#ifndef CAIRN_GW_DEST_H
#define CAIRN_GW_DEST_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "boxconf.h"            /* struct box_gateway_host: the [gateway] hosts table */

#define GW_DEST_HOST_MAX   253  /* a DNS name without its trailing dot (RFC 1035) */
#define GW_DEST_LABEL_MAX  63
#define GW_DEST_MAX_ADDRS  16   /* at most this many addresses pinned per connection */
#define GW_DEST_TEXT_MAX   INET6_ADDRSTRLEN     /* 46: any text below, with its NUL */

struct gw_dest_error {
	int code;               /* negative errno, see each function */
	char msg[320];          /* what failed and why, with the host */
};

/* One IPv4 or IPv6 socket address (port in network order inside, as usual). */
struct gw_dest_addr {
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} u;
};

/* The address and its length, for connect(2). */
const struct sockaddr *gw_dest_addr_sa(const struct gw_dest_addr *a, socklen_t *len);

/* ---- hosts ----------------------------------------------------------------- */

enum gw_dest_host_kind {
	GW_DEST_NAME = 1,       /* a DNS name: resolve it */
	GW_DEST_IPV4,           /* an IPv4 literal: no DNS */
	GW_DEST_IPV6,           /* an IPv6 literal (brackets stripped): no DNS */
};

struct gw_dest_host {
	enum gw_dest_host_kind kind;
	/* An IPv4 literal in one of the forms inet_aton(3) - and so getaddrinfo -
	 * accepts beyond the dotted quad: "127.1", "0x7f.1", "0177.0.0.1",
	 * "2130706433".  It is the address it denotes (floored, never sent to
	 * DNS); the gateway may refuse such spellings outright. */
	bool v4_shorthand;
	/* The policy's net:connect `host` (Box: lower case, trailing dot
	 * stripped, brackets stripped).  A literal keeps its spelling here, as
	 * the workload wrote it; its canonical text is `ip`. */
	char name[GW_DEST_HOST_MAX + 1];
	struct gw_dest_addr addr;       /* literals: the address, port 0 */
	char ip[GW_DEST_TEXT_MAX];      /* literals: gw_dest_ip_text(addr); else "" */
};

/* Parse and normalise host[0, len) (a CONNECT or URL authority without its
 * port).  Accepts "[v6]" and a bare v6 literal; a name of 1..253 bytes after
 * one trailing dot is stripped, labels of 1..63 bytes of [a-z0-9_-]
 * (upper case folded; '_' as Box allows it).  Refuses, -EINVAL with the
 * reason in *err: empty, NUL bytes, non-ASCII (IDNA is not supported: send
 * the xn-- A-label), other characters, empty labels ("a..b", ".a"), over
 * long, a v6 zone ("fe80::1%eth0"), brackets around anything but v6.
 * On failure *out is zeroed. */
int gw_dest_host_parse(const char *host, size_t len, struct gw_dest_host *out,
		       struct gw_dest_error *err);

/* ---- address text ---------------------------------------------------------- */

/* `ip` as Box's policy reads it (docs/egress.md "Decisions, in Box's order";
 * Box's policy/src/address.rs):
 * IPv4 dotted quad; an IPv6 address that carries an IPv4 address -
 * IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d (not :: or ::1),
 * 6to4 2002:AABB:CCDD::/48, Teredo 2001:0::/32 (last 32 bits inverted) -
 * is that IPv4 dotted quad, so a rule on "169.254.*" sees every spelling;
 * any other IPv6 is RFC 5952 text (lower case, longest zero run of two or
 * more groups compressed, the first on a tie).  NAT64 64:ff9b::/96 stays
 * IPv6 text, as in Box (the floor unwraps it).  Writes buf[0, len) NUL-
 * terminated; 0, -EAFNOSUPPORT (not AF_INET/AF_INET6) or -ENOSPC. */
int gw_dest_ip_text(const struct sockaddr *sa, char *buf, size_t len);

/* The plain address text for logs: inet_ntop(3), RFC 5952 on glibc, with
 * IPv4-mapped shown as ::ffff:a.b.c.d (nothing unwrapped).  Same results. */
int gw_dest_addr_text(const struct sockaddr *sa, char *buf, size_t len);

/* ---- the default floor ----------------------------------------------------- */

/* A NULL floor argument below means enabled with no self ports (fail closed). */
struct gw_dest_floor {
	bool enabled;                   /* [gateway] destination_floor (default true) */
	const uint16_t *self_ports;     /* the gateway's own listener ports (host order) */
	size_t n_self_ports;
};

/* Before DNS, on a host as given to gw_dest_host_parse (parsed again here).
 * NULL: allowed.  Else a static reason: "loopback name" (localhost and
 * *.localhost, RFC 6761 §6.3), "cloud metadata name" (the list in dest.c:
 * metadata.google.internal, metadata.goog, metadata.azure.internal,
 * instance-data[.ec2.internal], metadata.tencentyun.com,
 * metadata.platformequinix.com, metadata.packet.net, their subdomains, and
 * bare "metadata"), a literal's gw_dest_floor_addr reason (so "2130706433"
 * is a "loopback address" before any lookup), or "invalid host" (fail
 * closed).  Disabled floor: NULL for every valid host. */
const char *gw_dest_floor_name(const struct gw_dest_floor *floor, const char *host);

/* Per resolved address, before the socket.  NULL: allowed.  Else a static
 * reason, first match:
 *   "not an IP address"            family other than AF_INET/AF_INET6 (always)
 *   "the gateway's own port"       loopback or unspecified address and a
 *                                  self port: a proxy loop (always, even with
 *                                  the floor disabled)
 *   "cloud metadata address"       169.254.169.254, 169.254.170.2,
 *                                  169.254.170.23, 100.100.100.200,
 *                                  192.0.0.192, fd00:ec2::254, fd00:ec2::23,
 *                                  fd20:ce::254, fd00:42::42
 *   "loopback address"             127.0.0.0/8, ::1
 *   "unspecified address"          0.0.0.0/8, ::
 *   "link-local address"           169.254.0.0/16, fe80::/10
 * and for an IPv6 address embedding a refused IPv4 address the same class
 * with the form, e.g. "cloud metadata address (IPv4-mapped)": IPv4-mapped
 * ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96 and the /96 form
 * of 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001:0::/32 (client address).
 * Floor disabled: only the first two lines apply. */
const char *gw_dest_floor_addr(const struct gw_dest_floor *floor, const struct sockaddr *sa);

/* RFC 1918 10/8, 172.16/12, 192.168/16 and RFC 4193 fc00::/7, also when
 * embedded in IPv6 as above.  Not a floor: for context and logs. */
bool gw_dest_is_private(const struct sockaddr *sa);

/* ---- resolving -------------------------------------------------------------- */

/* Resolve host (as given to gw_dest_host_parse) for port, once:
 *  1. [gateway] hosts overrides (names compared after normalisation): the
 *     override's literal, no DNS;
 *  2. a literal (including the inet_aton shorthands): itself, no DNS;
 *  3. getaddrinfo(AF_UNSPEC, SOCK_STREAM, no AI_ADDRCONFIG), in the
 *     resolver's order, duplicates dropped, at most min(max, 16) kept.
 * Each out[i] carries port.  0 and *n >= 1; or *n = 0 and
 *   -EINVAL  invalid host or override address (message says which)
 *   -ENOENT  "no address for host 'x'" (EAI_NONAME, EAI_NODATA, empty)
 *   -EAGAIN  temporary resolver failure (EAI_AGAIN)
 *   -EIO     resolver failure (EAI_FAIL and the rest, gai_strerror text)
 *   -ENOMEM
 * The floor is not applied here: the caller floors each address. */
int gw_dest_resolve(const char *host, uint16_t port, const struct box_gateway_host *overrides,
		    size_t n_overrides, struct gw_dest_addr *out, size_t max, size_t *n,
		    struct gw_dest_error *err);

/* ---- the pin: the addresses of one connection -------------------------------- */

struct gw_dest_pin_entry {
	struct gw_dest_addr addr;       /* with the port: dial exactly this */
	char ip[GW_DEST_TEXT_MAX];      /* gw_dest_ip_text(addr): net:connect's `ip` */
	bool from_hosts;                /* a [gateway] hosts entry for a name gave it */
};

struct gw_dest_pin {
	char host[GW_DEST_HOST_MAX + 1];        /* normalised, as decided before DNS */
	uint16_t port;
	size_t n;
	struct gw_dest_pin_entry e[GW_DEST_MAX_ADDRS];
};

/* gw_dest_resolve into *pin (host, port and every entry's ip filled; each
 * entry's from_hosts set when a [gateway] hosts entry named the host - a
 * name, never a literal, since a literal is floored by what it denotes).
 * On error the same codes, and *pin is empty (n = 0). */
int gw_dest_pin_resolve(struct gw_dest_pin *pin, const char *host, uint16_t port,
			const struct box_gateway_host *overrides, size_t n_overrides,
			struct gw_dest_error *err);

/* Iteration in the pinned (resolver's) order: entry i, or NULL past the end.
 *   for (size_t i = 0; (e = gw_dest_pin_get(&pin, i)) != NULL; i++) ... */
const struct gw_dest_pin_entry *gw_dest_pin_get(const struct gw_dest_pin *pin, size_t i);

/* Whether sa (address and port) is one of the pinned entries: a last check
 * before connect(2) that nothing dials an address that was not decided. */
bool gw_dest_pin_contains(const struct gw_dest_pin *pin, const struct sockaddr *sa);

/* The floor on a pinned address: gw_dest_floor_addr, except that a
 * loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) that a
 * [gateway] hosts entry gave (e->from_hosts) passes with the floor on: the
 * entry is the operator's opt-in for that name, on whatever port the request
 * names.  The gateway's own port stays refused, and so does every other
 * class - a hosts entry to a metadata, link-local or unspecified address is
 * still floored.  The entry is fixed for the run, so no DNS answer can
 * rebind a name into loopback.  Same reasons as gw_dest_floor_addr. */
const char *gw_dest_floor_pinned(const struct gw_dest_floor *floor,
				 const struct gw_dest_pin_entry *e);

/* The start lines for the floor (each "cairn: gateway: ...\n"), into
 * buf[0, len) NUL-terminated: the floor turned off, or the names a
 * [gateway] hosts entry opens on loopback (and the port that stays refused),
 * and each hosts entry the floor still refuses, with why.  Empty when the
 * floor is on and no entry is worth a word.  Returns the length the whole
 * text needs (like snprintf). */
size_t gw_dest_floor_describe(const struct gw_dest_floor *floor,
			      const struct box_gateway_host *hosts, size_t n_hosts, char *buf,
			      size_t len);

#endif
