/* gateway.h - the egress gateway of one run: the only route out of every
 * sandbox (issue 5; docs/egress.md).
 *
 * It runs in the gateway process (gw_main.c; the supervisor's side is
 * gwproc.h), made on what the supervisor sends: the config, the CA it
 * minted and the phantoms and secrets it resolved (gw_params' ca,
 * phantoms, secrets); it serves each listening socket a sandbox passed
 * out.  Tests make it in-process, the CA on a thread (gw_ca_maker) and the
 * phantoms and secrets here.
 * Each listener gets an accept thread, each connection a thread of its own
 * (proxy.c), at most GW_MAX_CONNS at once (accept waits beyond).
 *
 * Errors are values with a message; nothing here prints except the
 * per-request warning Box gives for inject = "always" and a failed AWS
 * profile read, both on stderr. */
#ifndef CAIRN_GW_GATEWAY_H
#define CAIRN_GW_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "boxconf.h"
#include "ca_mint.h"
#include "decide.h"

#define GW_MAX_CONNS 256                /* Box's max_connections */

/* A CA made with OpenSSL on a thread of its own (gw_ca_new), for a gateway
 * given none (tests).  0 and *out, or
 * -1 with err.  gw_ca_maker_free waits for the thread and frees what it
 * made; NULL is a no-op. */
struct gw_ca_maker;
int gw_ca_maker_start(struct gw_ca_maker **out, char *err, size_t errlen);
void gw_ca_maker_free(struct gw_ca_maker *m);

struct gw_params {
	const struct box_config *cfg;   /* borrowed for the gateway's life */
	struct gw_decider *dec;         /* every decision and record: the supervisor's,
	                                   over the link, or local in tests (decide.h) */
	const char *home;               /* the operator's passwd home: aws:// profiles are read
	                                   from $AWS_SHARED_CREDENTIALS_FILE / $AWS_CONFIG_FILE,
	                                   else $HOME/.aws, else this home's .aws */
	int trust_dirfd;                /* <box_dir>/trust: cert.pem is written here
	                                   (borrowed for gw_new, which keeps a dup) */
	const uint16_t *self_ports;     /* the listeners' ports: never dialled on loopback */
	size_t n_self_ports;
	struct gw_ca_maker *ca_maker;   /* taken over by gw_new, also when it fails;
	                                   NULL: gw_new starts one */
	/* From the supervisor (cairn run): the CA it minted and wrote to
	 * trust/cert.pem itself (then trust_dirfd and ca_maker are unused),
	 * and per route of the config (n_routes, in gw_cred_table_from_config's
	 * order) the phantom it minted and the secret it resolved (entries of
	 * signed routes unused).  NULL: made here - the CA on ca_maker's
	 * thread, the phantoms minted, the secrets read from the environment. */
	const struct gw_ca_minted *ca;
	const char *const *phantoms;
	const char *const *secrets;
	size_t n_routes;
	/* What the agent receiver stamps relayed payloads with (relay.h;
	 * borrowed for the gateway's life).  NULL: empty ids, no operator
	 * attributes. */
	const struct tm_relay_stamp *stamp;
};

struct gateway;

/* Make the gateway: the credential routes of [egress.*] with their
 * phantoms (env:// secrets are read from this process's environment now),
 * the upstream trust ([gateway] extra_ca_files read now, the system store
 * when the first upstream TLS connection needs it), and trust/cert.pem,
 * replacing a stale one.  cert.pem is created empty, so the sandbox's
 * view may bind it while p->ca_maker (or a maker of gw_new's own) is still
 * making the CA; gw_ready writes the certificate.  The workload-side TLS
 * context waits for the first intercepted connection.  0 and *out, or -1
 * with the reason in err. */
int gw_new(const struct gw_params *p, struct gateway **out, char *err, size_t errlen);

/* Wait for the CA and write its certificate: on 0, trust/cert.pem is
 * complete (read back and checked) and connections can be served.  Call
 * it before any workload runs, from the thread that made the gateway; -1
 * with err (the CA could not be made or written) refuses the box.
 * gw_serve calls it too; later calls return the same answer. */
int gw_ready(struct gateway *g, char *err, size_t errlen);

/* The variables every sandbox gets from the gateway, as "NAME=value": one
 * phantom per env:// route, and Box's placeholder AWS keys when an aws://
 * route exists.  Borrowed; NULL past the end. */
const char *gw_env(const struct gateway *g, size_t i);

/* Serve listening socket fd (taken over) for the sandbox labelled label
 * ("[agent]"); scope_of names its process table for per-tool credential
 * scoping (NULL: every route).  Waits for gw_ready first.  0, or -1 with
 * err. */
int gw_serve(struct gateway *g, int fd, const char *label, const struct box_process *scope_of,
	     char *err, size_t errlen);

/* gw_serve for a leaf's listener, id (> 0) naming it for gw_unserve. */
int gw_serve_as(struct gateway *g, int fd, unsigned id, const char *label,
		const struct box_process *scope_of, char *err, size_t errlen);

/* Stop serving listener id: its accept thread ends now, its connections
 * when their sandbox's processes are gone (the listener is freed with the
 * last).  An unknown id is a no-op. */
void gw_unserve(struct gateway *g, unsigned id);

/* Serve listening socket fd (taken over) as the agent receiver of the
 * sandbox labelled label (docs/records.md "The agent receiver";
 * otlp_listener.h): what the agent POSTs there is re-stamped and relayed to
 * the box's targets through the decider (gw_relay).  0, or -1 with err. */
int gw_serve_otlp(struct gateway *g, int fd, const char *label, char *err, size_t errlen);

/* The agent receiver's counters, over every listener (otlp_listener.h). */
struct gw_otlp_stats;
const struct gw_otlp_stats *gw_otlp_stats(const struct gateway *g);

/* Stop: close the listeners, cancel every connection's waits, wait for
 * every thread to end, and free everything (the CA key is wiped with it).
 * Only then may the caller free the config, engine and monitor the threads
 * used.  NULL is a no-op. */
void gw_free(struct gateway *g);

#endif
