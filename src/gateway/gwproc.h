/* gwproc.h - the gateway process, from the supervisor's side
 * (docs/egress.md "Two processes"; the channel is gwctl.h).
 *
 * The gateway parses what the workload sends and speaks TLS on both sides;
 * it holds the run's CA key and the credentials' secrets, and none of the
 * engine or the history.  The supervisor holds those, links no TLS library,
 * and answers the gateway's every decision.  It mints the CA, writes its
 * certificate and resolves the secrets itself, so the sandbox needs nothing
 * from the gateway to start: the gateway process (a libssl and libcrypto to
 * load and relocate, OpenSSL's start - some milliseconds of CPU) starts
 * when the sandbox first connects to it, and a run that never does never
 * pays for it.
 *
 * It runs in its own process group (a terminal's ^C is the supervisor's to
 * forward) and dies with the supervisor (PR_SET_PDEATHSIG).  Errors are
 * values with a message. */
#ifndef CAIRN_GW_GWPROC_H
#define CAIRN_GW_GWPROC_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>

#include "boxconf.h"
#include "dogwood.h"
#include "gwctl.h"
#include "relay.h"

struct gw_proc;

/* The gateway of this run, not started yet; cairn-gateway is found now,
 * beside this executable (a build tree), else where it was installed.  0
 * and *out, or -1 with err. */
int gw_proc_new(struct gw_proc **out, char *err, size_t errlen);

/* The box, for the gateway. */
struct gw_proc_box {
	const char *config_path;        /* box.toml, canonical */
	const char *config_text;        /* its text as the supervisor loaded it */
	size_t config_len;
	const struct box_config *cfg;   /* that text, loaded */
	const char *home;               /* the operator's passwd home */
	int trust_dirfd;                /* <box_dir>/trust (borrowed) */
	const uint16_t *self_ports;     /* the listeners' ports */
	size_t n_self_ports;
	const struct tm_relay_stamp *stamp;     /* the agent receiver's; NULL: none */
};

/* Prepare the gateway for the box, without waiting for it: resolve the
 * credential routes here (their phantoms minted, env:// secrets read from
 * this process's environment), mint the run's CA and write its certificate
 * to trust/cert.pem, and keep the box, its CA and its routes for the
 * gateway (sent at once when it must start at once: gw_proc_ready).
 * 0, and the variables and start lines below; -1 with err (a secret not
 * set, a route the gateway cannot serve, cert.pem not writable) refuses
 * the box. */
int gw_proc_setup(struct gw_proc *p, const struct gw_proc_box *box, char *err, size_t errlen);

/* The variables every sandbox gets from the gateway ("NAME=value"; NULL past
 * the end), and its start lines on the destination floor ("" for none). */
const char *gw_proc_env(const struct gw_proc *p, size_t i);
const char *gw_proc_floor_lines(const struct gw_proc *p);

/* A sandbox's listening socket fd (taken over), for the sandbox labelled
 * label ("[agent]"): kind GW_SERVE_PROXY (gwctl.h), its credentials scoped
 * to the process table scope ("" or NULL: every route), or GW_SERVE_OTLP,
 * its agent receiver.  Kept here until the gateway starts.  0, or -1. */
int gw_proc_serve(struct gw_proc *p, int fd, const char *label, const char *scope, int kind,
		  char *err, size_t errlen);

/* Start the gateway now, rather than on the first connection: a box with
 * contained tools, whose leaves' listeners it must serve at once.  Call it
 * from the thread that lives as long as the run (the process dies with the
 * thread that spawned it, PR_SET_PDEATHSIG).  0, or -1 with err. */
int gw_proc_up(struct gw_proc *p, char *err, size_t errlen);

/* A leaf's listening socket fd (taken over), for the sandbox labelled
 * label ("[tool.git]"), its credentials scoped to the table scope ("git"),
 * served from now on (after gw_proc_up; docs/tools.md "The leaf's
 * network").  Thread-safe.  0 and *id for gw_proc_unserve_leaf,
 * or -1 with err. */
int gw_proc_serve_leaf(struct gw_proc *p, int fd, const char *label, const char *scope,
		       unsigned long long *id, char *err, size_t errlen);

/* The leaf ended: its listener goes.  Thread-safe; 0 is a no-op. */
void gw_proc_unserve_leaf(struct gw_proc *p, unsigned long long id);

/* The gateway's decisions are answered with mon and eng, and recorded to
 * records (NULL: not recorded); all three must outlive gw_proc_stop. */
struct tm_collector;
void gw_proc_decide(struct gw_proc *p, struct dw_monitor *mon, const struct dw_engine *eng,
		    struct tm_collector *records);

/* Before the workload starts.  A gateway that had to start at once (it
 * checks the [gateway] extra_ca_files) is waited for and given its
 * listeners: 0, or -1 with err refuses the box.  Otherwise 0: the gateway
 * starts on the sandbox's first connection. */
int gw_proc_ready(struct gw_proc *p, char *err, size_t errlen);

/* What the supervisor polls for the gateway while the workload runs, into
 * pf[0, max): the listeners (POLLIN) until the gateway starts, then its
 * pidfd.  The count. */
size_t gw_proc_pollfds(struct gw_proc *p, struct pollfd *pf, size_t max);

/* One of those fds is ready: a first connection starts the gateway (and
 * hands it the listeners); an ended gateway ends the box.  0, or -1 with
 * err: the box must stop. */
int gw_proc_event(struct gw_proc *p, char *err, size_t errlen);

/* Stop: close the control channel, so that the gateway ends its
 * connections (their last records still reach the history) and exits; wait
 * for it (killed after GW_PROC_STOP_MS), and stop answering.  0 when it
 * ended by itself with status 0, else -1 with how it ended in err. */
#define GW_PROC_STOP_MS 5000
int gw_proc_stop(struct gw_proc *p, char *err, size_t errlen);

/* Stop (quietly) if not stopped, and free.  NULL is a no-op. */
void gw_proc_free(struct gw_proc *p);

#endif
