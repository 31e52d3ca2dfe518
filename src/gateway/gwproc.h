/* gwproc.h - the gateway process, from the supervisor's side
 * (docs/egress.md "Two processes"; the channel is gwctl.h).
 *
 * The gateway parses what the workload sends and speaks TLS on both sides;
 * it holds the run's CA key and the credentials' secrets, and none of the
 * engine or the history.  The supervisor holds those, links no TLS library,
 * and answers the gateway's every decision.  The process is started first
 * of all, so that its start (OpenSSL's, the CA's) runs beside the
 * supervisor's own; it is told the box when the box directory is open, and
 * it serves once its CA certificate is in trust/cert.pem.
 *
 * It runs in its own process group (a terminal's ^C is the supervisor's to
 * forward) and dies with the supervisor (PR_SET_PDEATHSIG).  Errors are
 * values with a message. */
#ifndef CAIRN_GW_GWPROC_H
#define CAIRN_GW_GWPROC_H

#include <stddef.h>
#include <stdint.h>

#include "dogwood.h"

struct gw_proc;

/* Start cairn-gateway: beside this executable (a build tree), else where it
 * was installed.  0 and *out, or -1 with err. */
int gw_proc_start(struct gw_proc **out, char *err, size_t errlen);

/* What the gateway is told about the box. */
struct gw_proc_box {
	const char *config_path;        /* box.toml, canonical */
	const char *config_text;        /* its text as the supervisor loaded it */
	size_t config_len;
	const char *home;               /* the operator's passwd home */
	int trust_dirfd;                /* <box_dir>/trust (borrowed) */
	const uint16_t *self_ports;     /* the listeners' ports */
	size_t n_self_ports;
};

/* Send the box, and wait for the gateway to make its routes: 0, and its
 * variables and start lines below; -1 with err (the gateway's own words: a
 * secret not set, a bad extra CA file) refuses the box. */
int gw_proc_setup(struct gw_proc *p, const struct gw_proc_box *box, char *err, size_t errlen);

/* The variables every sandbox gets from the gateway ("NAME=value"; NULL past
 * the end), and its start lines on the destination floor ("" for none). */
const char *gw_proc_env(const struct gw_proc *p, size_t i);
const char *gw_proc_floor_lines(const struct gw_proc *p);

/* Wait until trust/cert.pem holds the CA's certificate: before any workload
 * runs.  0, or -1 with err. */
int gw_proc_ready(struct gw_proc *p, char *err, size_t errlen);

/* Hand the gateway a sandbox's listening socket fd (closed here) for the
 * sandbox labelled label ("[agent]"), its credentials scoped to the process
 * table scope ("" or NULL: every route).  0, or -1 with err. */
int gw_proc_serve(struct gw_proc *p, int fd, const char *label, const char *scope, char *err,
		  size_t errlen);

/* Answer the gateway's decisions with mon and eng (which must outlive
 * gw_proc_stop).  0, or -1 with err. */
int gw_proc_decide(struct gw_proc *p, struct dw_monitor *mon, const struct dw_engine *eng,
		   char *err, size_t errlen);

/* Readable once the gateway process has ended (a pidfd): the box must not
 * go on without its only route out. */
int gw_proc_pidfd(const struct gw_proc *p);

/* Stop: close the control channel, so that the gateway ends its
 * connections (their last records still reach the history) and exits; wait
 * for it (killed after GW_PROC_STOP_MS), and stop answering.  0 when it
 * ended by itself with status 0, else -1 with how it ended in err. */
#define GW_PROC_STOP_MS 5000
int gw_proc_stop(struct gw_proc *p, char *err, size_t errlen);

/* Stop (quietly) if not stopped, and free.  NULL is a no-op. */
void gw_proc_free(struct gw_proc *p);

#endif
