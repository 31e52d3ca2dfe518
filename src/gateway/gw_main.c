/* gw_main.c - cairn-gateway: the egress gateway's process (gwctl.h;
 * docs/egress.md "Two processes").
 *
 * Started by `cairn run` only.  It hardens itself as the supervisor does (it
 * holds the CA key and the secrets), learns the box - its config, the CA the
 * supervisor minted, the phantoms and secrets it resolved - from the control
 * channel, serves the listeners it is handed, and asks the supervisor for
 * every decision.  When the control channel closes it ends
 * its connections and exits 0; anything unexpected on that channel exits 1. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "boxconf.h"
#include "gateway.h"
#include "gwctl.h"
#include "link.h"

#define FRAME_MAX (64u << 10)
#define CONFIG_MAX ((size_t)4 << 20)
#define MAX_ROUTES 1024

static unsigned char frame[FRAME_MAX];

static void die(const char *what)
{
	fprintf(stderr, "cairn-gateway: %s\n", what);
	_exit(1);
}

/* As the supervisor: no core, not dumpable (docs/security.md), no new
 * privileges, dead with the supervisor. */
static void harden(const char *parent)
{
	struct rlimit r = { 0, 0 };
	char *end;
	long want = strtol(parent ? parent : "", &end, 10);
	if (parent == NULL || *end != '\0' || want <= 1)
		die("this program is started by `cairn run`, not by hand");
	if (setrlimit(RLIMIT_CORE, &r) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0 ||
	    prctl(PR_GET_DUMPABLE) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		die("refusing to run: it cannot harden itself");
	if (getppid() != (pid_t)want)
		_exit(1);               /* the supervisor is gone already */
	/* only what the supervisor passed: the descriptors a caller of cairn
	 * left open are not ours to hold */
	syscall(SYS_close_range, (unsigned)(GW_CTL_CHAN_FD + GW_LINK_CHANNELS), ~0u, 0u);
	signal(SIGPIPE, SIG_IGN);
	/* a background group writing to the terminal: a warning, not a stop */
	signal(SIGTTOU, SIG_IGN);
}

static void reply(uint32_t op, int ok, const char *why)
{
	struct gw_wire w;
	gw_wire_init(&w, frame, sizeof(frame));
	gw_put_u32(&w, op);
	gw_put_u32(&w, ok ? 1 : 0);
	if (!ok)
		gw_put_str(&w, why);
	if (gw_frame_send(GW_CTL_FD, &w, NULL, 0) != 0)
		_exit(1);
}

static char *read_text(int fd, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > CONFIG_MAX)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (buf && n < (size_t)st.st_size) {
		ssize_t k = pread(fd, buf + n, (size_t)st.st_size - n, (off_t)n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (buf == NULL || n != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The agent receiver's stamp, kept for the gateway's life. */
static struct tm_relay_stamp stamp;
static struct tm_kv stamp_attrs[GW_CTL_MAX_ATTRS];

/* The box from CTL_SETUP: the config, parsed from the supervisor's own
 * copy of its text, its CA and its routes, and the agent receiver's stamp;
 * the gateway made on them.  Answers CTL_READY; exits on anything else. */
static struct gateway *setup(struct gw_decider *dec, struct box_config **cfg_out,
			     char **home_out)
{
	int fds[1];
	size_t nfds;
	long k = gw_frame_recv(GW_CTL_FD, frame, sizeof(frame), fds, 1, &nfds);
	if (k <= 0)
		_exit(k == 0 ? 0 : 1);  /* refused before the box was sent */
	struct gw_wire r;
	gw_wire_from(&r, frame, (size_t)k);
	char *path = NULL, *home = NULL;
	uint16_t ports[GW_CTL_MAX_PORTS];
	struct gw_ca_minted ca = { 0 };
	const unsigned char *b;
	size_t bn;
	uint32_t op = gw_get_u32(&r);
	gw_get_str(&r, 4096, &path);
	uint32_t np = gw_get_u32(&r);
	if (np > GW_CTL_MAX_PORTS)
		r.bad = true;
	for (uint32_t i = 0; i < np && !r.bad; i++) {
		uint32_t port = gw_get_u32(&r);
		if (port == 0 || port > 65535)
			r.bad = true;
		ports[i] = (uint16_t)port;
	}
	gw_get_str(&r, 4096, &home);
	gw_get_bytes(&r, sizeof(ca.key), &b, &bn);
	if (b != NULL)
		memcpy(ca.key, b, ca.key_len = bn);
	gw_get_bytes(&r, sizeof(ca.cert), &b, &bn);
	if (b != NULL)
		memcpy(ca.cert, b, ca.cert_len = bn);
	uint32_t nr = gw_get_u32(&r);
	if (nr > MAX_ROUTES)
		r.bad = true;
	char *phantoms[MAX_ROUTES] = { 0 }, *secrets[MAX_ROUTES] = { 0 };
	for (uint32_t i = 0; i < nr && !r.bad; i++) {
		gw_get_str(&r, 256, &phantoms[i]);
		gw_get_str(&r, 64u << 10, &secrets[i]);
	}
	char *box_id = NULL, *run_id = NULL;
	gw_get_str(&r, 256, &box_id);
	gw_get_str(&r, 256, &run_id);
	uint32_t na = gw_get_u32(&r);
	if (na > GW_CTL_MAX_ATTRS)
		r.bad = true;
	for (uint32_t i = 0; i < na && !r.bad; i++) {
		char *key = NULL, *val = NULL;
		gw_get_str(&r, 4096, &key);
		gw_get_str(&r, 4096, &val);
		stamp_attrs[i] = (struct tm_kv){ key, val };    /* kept: the gateway's life */
	}
	stamp = (struct tm_relay_stamp){ .box_id = box_id, .run_id = run_id, .n_operator = na,
					 .operator_attrs = stamp_attrs };
	if (op != CTL_SETUP || r.bad || r.n != 0 || nfds != 1)
		die("the control channel broke its protocol");
	explicit_bzero(frame, (size_t)k);       /* the key and the secrets */

	size_t len = 0;
	char *text = read_text(fds[0], &len);
	close(fds[0]);
	if (text == NULL)
		die("cannot read box.toml's text from the supervisor");
	struct box_config_error cerr;
	struct box_config *cfg = NULL;
	char err[2048];
	struct gateway *g = NULL;
	if (box_config_load(path, text, len, home, &cfg, &cerr) != 0) {
		/* the supervisor loaded these very bytes: not expected */
		snprintf(err, sizeof(err), "the gateway cannot parse %s: %s: %s", path, cerr.where,
			 cerr.msg);
	} else {
		struct gw_params gp = { .cfg = cfg, .dec = dec, .home = home, .trust_dirfd = -1,
					.self_ports = ports, .n_self_ports = np, .ca = &ca,
					.phantoms = (const char *const *)phantoms,
					.secrets = (const char *const *)secrets, .n_routes = nr,
					.stamp = &stamp };
		if (gw_new(&gp, &g, err, sizeof(err)) != 0)
			g = NULL;
		else if (gw_ready(g, err, sizeof(err)) != 0) {
			gw_free(g);
			g = NULL;
		}
	}
	gw_ca_minted_wipe(&ca);
	for (uint32_t i = 0; i < nr; i++) {
		free(phantoms[i]);
		if (secrets[i] != NULL)
			explicit_bzero(secrets[i], strlen(secrets[i]));
		free(secrets[i]);
	}
	free(text);
	free(path);
	reply(CTL_READY, g != NULL, err);
	if (g == NULL) {
		box_config_free(cfg);
		free(home);
		_exit(1);
	}
	*cfg_out = cfg;
	*home_out = home;
	return g;
}

/* The process table a listener's credentials are scoped to: "" every
 * route, else a [tool.*] by name. */
static int scope_of(const struct box_config *cfg, const char *name, const struct box_process **out)
{
	*out = NULL;
	if (name[0] == '\0')
		return 0;
	for (size_t i = 0; i < cfg->n_tools; i++) {
		if (strcmp(cfg->tools[i].label, name) == 0) {
			*out = &cfg->tools[i].proc;
			return 0;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	harden(argc == 2 ? argv[1] : NULL);
	/* OpenSSL's atexit clean-up would only delay the supervisor, which
	 * waits for this process; keys are wiped by gw_free. */
	if (OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) != 1)
		die("OpenSSL could not be initialised");
	/* A thread per connection; with glibc's default of 8 malloc arenas per
	 * core, memory a finished exchange freed stays in its thread's arena.
	 * Two arenas keep it shared (measured: about 15% less memory per idle
	 * connection). */
	mallopt(M_ARENA_MAX, 2);

	int chans[GW_LINK_CHANNELS];
	for (int i = 0; i < GW_LINK_CHANNELS; i++)
		chans[i] = GW_CTL_CHAN_FD + i;
	struct gw_link *link = NULL;
	if (gw_link_new(chans, GW_LINK_CHANNELS, &link) != 0)
		die("out of memory");
	struct gw_decider dec;
	gw_decider_link(&dec, link);
	struct box_config *cfg = NULL;
	char *home = NULL;
	struct gateway *g = setup(&dec, &cfg, &home);
	char err[1024];
	int rc;

	for (;;) {
		int fd;
		size_t nfds;
		long k = gw_frame_recv(GW_CTL_FD, frame, sizeof(frame), &fd, 1, &nfds);
		if (k == 0)
			break;                  /* the supervisor is done: stop */
		struct gw_wire r;
		char *label = NULL, *scope = NULL;
		gw_wire_from(&r, frame, k > 0 ? (size_t)k : 0);
		uint32_t op = gw_get_u32(&r);
		if (k > 0 && op == CTL_UNSERVE) {
			/* a leaf ended: its listener goes (no reply) */
			uint32_t id = gw_get_u32(&r);
			if (r.bad || r.n != 0 || nfds != 0 || id == 0)
				die("the control channel broke its protocol");
			gw_unserve(g, id);
			continue;
		}
		gw_get_str(&r, 96, &label);
		gw_get_str(&r, 256, &scope);
		uint32_t kind = gw_get_u32(&r);
		uint32_t id = gw_get_u32(&r);
		if (k < 0 || op != CTL_SERVE || r.bad || r.n != 0 || nfds != 1 ||
		    (kind != GW_SERVE_PROXY && kind != GW_SERVE_OTLP) ||
		    (id != 0 && kind != GW_SERVE_PROXY))
			die("the control channel broke its protocol");
		const struct box_process *sc;
		if (kind == GW_SERVE_OTLP) {
			rc = gw_serve_otlp(g, fd, label, err, sizeof(err));
		} else if (scope_of(cfg, scope, &sc) != 0) {
			close(fd);
			snprintf(err, sizeof(err), "%s: no [tool.%s] to scope its credentials to",
				 label, scope);
			rc = -1;
		} else {
			rc = gw_serve_as(g, fd, id, label, sc, err, sizeof(err));
		}
		reply(CTL_SERVED, rc == 0, err);
		free(label);
		free(scope);
	}
	/* Every connection ends here, its last records made over the link
	 * (the supervisor answers until this process has exited). */
	gw_free(g);
	gw_link_free(link);
	box_config_free(cfg);
	free(home);
	return 0;
}
