/* gwctl.h - the control channel between the supervisor and the gateway
 * process (docs/egress.md "Two processes"): how the process is started and
 * what the two say before, and while, it serves.
 *
 * The supervisor starts cairn-gateway with:
 *   fd 3                       the control channel (AF_UNIX SOCK_SEQPACKET)
 *   fds 4 .. 4+GW_LINK_CHANNELS-1  the decision channels (link.h)
 *   argv[1]                    the supervisor's pid (the process dies with it)
 * and the supervisor's environment (env:// secrets, AWS profiles, HOME).
 * Frames are link.h's (bytes: a u32 length and that many bytes).  The
 * supervisor minted the CA, wrote trust/cert.pem and resolved the secrets
 * itself (ca_mint.h, cred.h), so it sends CTL_SETUP and builds the sandbox
 * without waiting; it reads CTL_READY just before the workload starts.  In
 * order:
 *
 *   supervisor -> CTL_SETUP   str config path, u32 n, u32 port x n (the
 *                             listeners' ports, never dialled on loopback),
 *                             str home, bytes CA key (ECPrivateKey DER),
 *                             bytes CA certificate (DER), u32 n, then per
 *                             credential route: str phantom, str secret ("":
 *                             a signed route), then the agent receiver's
 *                             stamp (relay.h): str box id, str run id,
 *                             u32 n, then per operator attribute: str key,
 *                             str value; SCM_RIGHTS: a sealed memfd
 *                             holding box.toml's text exactly as the
 *                             supervisor loaded it
 *   gateway    -> CTL_READY   u32 ok (1/0), str error when 0: the routes and
 *                             the CA are set up, connections can be served
 *   supervisor -> CTL_SERVE   str label, str scope (a [tool.*] name, "" for
 *                             every route), u32 kind (GW_SERVE_*), u32 id
 *                             (a leaf's listener, > 0, proxy only; 0: one
 *                             served for the whole run);
 *                             SCM_RIGHTS: the listening socket
 *   gateway    -> CTL_SERVED  u32 ok, str error
 *   ...
 *   supervisor -> CTL_UNSERVE u32 id: the leaf ended, its listener goes (no
 *                             reply; docs/tools.md "The leaf's network")
 *   ...
 *   supervisor closes fd 3: the gateway stops its connections and exits 0.
 *
 * A frame out of order or malformed ends the channel: the gateway exits 1,
 * and the supervisor refuses (or ends) the box. */
#ifndef CAIRN_GW_GWCTL_H
#define CAIRN_GW_GWCTL_H

#define GW_CTL_FD 3
#define GW_CTL_CHAN_FD 4
#define GW_CTL_MAX_PORTS 64
#define GW_CTL_MAX_ATTRS 1024           /* operator resource attributes in the stamp */

enum gw_serve_kind {
	GW_SERVE_PROXY = 0,             /* the egress proxy (proxy.c) */
	GW_SERVE_OTLP = 1,              /* the agent receiver (otlp_listener.h) */
};

enum gw_ctl_op {
	CTL_SETUP = 0x100,
	CTL_READY = 0x102,
	CTL_SERVE,
	CTL_SERVED,
	CTL_UNSERVE,
};

#endif
