/* proxy.h - one client connection of the egress gateway, served on its own
 * thread from accept to close (internal to src/gateway: gateway.c owns the
 * listeners and the threads, proxy.c the protocol).
 *
 * The order of everything on a connection is Box's (docs/egress.md
 * "Decisions, in Box's order"), with cairn's additions: many
 * requests per connection (keep-alive, pipelining handled in order), bodies
 * streamed both ways through fixed buffers, WebSocket upgrades, the
 * destination floor, and addresses pinned per connection. */
#ifndef CAIRN_GW_PROXY_H
#define CAIRN_GW_PROXY_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "boxconf.h"
#include "ca.h"
#include "cred.h"
#include "decide.h"
#include "dest.h"
#include "dogwood.h"

/* Timeouts (ms).  A head must arrive whole within GW_HEAD_MS of its first
 * byte (slowloris); an idle keep-alive connection is closed after
 * GW_IDLE_MS; any other wait for a peer is bounded by GW_IO_MS (Box's
 * upstream deadline is 300 s per exchange). */
#define GW_HEAD_MS     30000
#define GW_IDLE_MS     120000
#define GW_IO_MS       300000
#define GW_DIAL_MS     30000
#define GW_TLS_MS      30000
#define GW_TUNNEL_MS   3600000          /* an idle WebSocket */
#define GW_LINGER_MS   1000
#define GW_SIGN_MAX    (16u << 20)      /* a body buffered to be signed (Box's limit) */
#define GW_PEEK_MAX    (1u << 20)       /* a chunked body read ahead to measure it */
#define GW_BUFFERED_MAX (64u << 20)     /* all bodies read ahead, across connections */

/* What every connection shares, read-only while the gateway runs (the
 * decider and the CA have their own locks). */
struct gw_shared {
	const struct box_config *cfg;
	struct gw_decider *dec;         /* every decision and record (decide.h) */
	struct gw_ca *ca;
	struct gw_server *server;       /* toward the workload, made on first use */
	struct gw_upstream *upstream;   /* upstream trust, loaded on first use */
	const struct gw_cred_table *creds;
	struct gw_dest_floor floor;
	const char *aws_credentials;    /* the operator's AWS files (aws:// profiles) */
	const char *aws_config;
	bool warn_always;               /* print inject = "always" warnings */
	int stop_fd;                    /* an eventfd, readable once the gateway stops */
	_Atomic size_t *buffered;       /* bytes of bodies read ahead, all connections */
	_Atomic bool *stopping;         /* set before stop_fd is signalled */
};

/* Who a listener serves: its label and its credential scope. */
struct gw_who {
	const char *label;              /* "[agent]", "[tool.x]" */
	const unsigned char *scope;     /* gw_cred_scope_new; NULL: every route */
};

/* Serve the accepted connection fd to its end, then close it. */
void gw_proxy_serve(const struct gw_shared *sh, const struct gw_who *who, int fd);

#endif
