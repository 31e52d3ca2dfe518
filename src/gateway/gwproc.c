/* gwproc.c - the gateway process, from the supervisor's side (gwproc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ca_mint.h"
#include "cert_file.h"
#include "cred.h"
#include "dest.h"
#include "gwctl.h"
#include "gwproc.h"
#include "helper_path.h"
#include "link.h"

#ifndef CAIRN_LIBEXECDIR
#define CAIRN_LIBEXECDIR "/usr/local/libexec/cairn"
#endif

#define GATEWAY_NAME "cairn-gateway"
#define CERT_NAME "cert.pem"
#define MAX_ENV 80
#define MAX_LISTENERS 8
#define CTL_FRAME_MAX (64u << 10)
/* A reply waits at most this long: the gateway's start (OpenSSL's, the CA)
 * takes milliseconds, but a loaded machine may stretch it. */
#define REPLY_MS 60000

extern char **environ;

struct listener {
	int fd;                         /* ours until the gateway has it */
	int kind;                       /* GW_SERVE_* */
	char label[96];
	char scope[256];
};

struct gw_proc {
	char path[PATH_MAX + 32];       /* cairn-gateway */
	bool spawned;
	pid_t pid;
	int pidfd;
	int ctl;                        /* our end of the control channel; -1 once closed */
	int chan[GW_LINK_CHANNELS];     /* our ends of the decision channels, until answered */
	struct gw_decider dec;
	bool have_dec;
	struct gw_link_server *server;
	char *env[MAX_ENV + 1];
	size_t n_env;
	char *floor;
	unsigned char *setup;           /* CTL_SETUP, until sent (holds the key and secrets) */
	size_t setup_len;
	int text_fd;                    /* box.toml's text, sealed, until sent */
	bool eager;                     /* started at once: it has checks to make */
	struct listener ls[MAX_LISTENERS];
	size_t n_ls;
	/* The control channel, up, up_failed and ls: the supervisor's loop
	 * and the broker's calls (a leaf's listener) both reach them. */
	pthread_mutex_t lock;
	unsigned next_id;               /* a leaf listener's id */
	bool up, up_failed;
	char up_err[600];
	bool stopped;
	unsigned char *buf;             /* CTL_FRAME_MAX */
	/* The CA, minted on a thread from gw_proc_new on, beside the loading
	 * of the config and the policy; joined by gw_proc_setup. */
	pthread_t minter;
	bool minting;
	int mint_rc;
	char mint_err[256];
	struct gw_ca_minted ca;
};

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (errlen)
		snprintf(err, errlen, fmt, a, b);
	return -1;
}

/* A descriptor moved to 16 or above: posix_spawn's dup2 onto 3..7 then
 * never overwrites a source it has yet to use. */
static int high_fd(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 16);
	close(fd);
	return h;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

static void *mint_main(void *arg)
{
	struct gw_proc *p = arg;
	p->mint_rc = gw_ca_mint(&p->ca, time(NULL), p->mint_err, sizeof(p->mint_err));
	return NULL;
}

static void mint_join(struct gw_proc *p)
{
	if (p->minting) {
		pthread_join(p->minter, NULL);
		p->minting = false;
	}
}

int gw_proc_new(struct gw_proc **out, char *err, size_t errlen)
{
	struct gw_proc *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->buf = malloc(CTL_FRAME_MAX)) == NULL) {
		free(p);
		return fail(err, errlen, "the gateway: out of memory%s%s", "", "");
	}
	p->pidfd = p->ctl = p->text_fd = -1;
	for (size_t i = 0; i < GW_LINK_CHANNELS; i++)
		p->chan[i] = -1;
	pthread_mutex_init(&p->lock, NULL);
	if (cairn_helper_path(GATEWAY_NAME, p->path, sizeof(p->path)) != 0) {
		fail(err, errlen, "the gateway: %s is not installed (%s)", p->path, strerror(errno));
		gw_proc_free(p);
		return -1;
	}
	int rc = pthread_create(&p->minter, NULL, mint_main, p);
	if (rc != 0) {
		fail(err, errlen, "the gateway's CA: cannot start a thread: %s%s", strerror(rc), "");
		gw_proc_free(p);
		return -1;
	}
	p->minting = true;
	*out = p;
	return 0;
}

/* Start cairn-gateway with its channels (gwctl.h). */
static int spawn(struct gw_proc *p, char *err, size_t errlen)
{
	char pid_arg[24];
	int theirs[1 + GW_LINK_CHANNELS];
	for (size_t i = 0; i <= GW_LINK_CHANNELS; i++)
		theirs[i] = -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i <= GW_LINK_CHANNELS; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
			rc = -errno;
			break;
		}
		if (i == 0)
			p->ctl = sv[0];
		else
			p->chan[i - 1] = sv[0];
		if ((theirs[i] = high_fd(sv[1])) < 0)
			rc = -errno;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	if (rc == 0) {
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		for (int i = 0; i <= GW_LINK_CHANNELS; i++)
			posix_spawn_file_actions_adddup2(&fa, theirs[i], GW_CTL_FD + i);
		/* its own group: the terminal's signals are the supervisor's to
		 * forward, and the gateway must outlive the workload's ^C */
		posix_spawnattr_setpgroup(&at, 0);
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
		snprintf(pid_arg, sizeof(pid_arg), "%d", (int)getpid());
		char *argv[] = { GATEWAY_NAME, pid_arg, NULL };
		rc = -posix_spawn(&p->pid, p->path, &fa, &at, argv, environ);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close_all(theirs, 1 + GW_LINK_CHANNELS);
	if (rc == 0 && (p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0)) < 0) {
		rc = -errno;
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	if (rc != 0) {
		p->pid = 0;
		return fail(err, errlen, "the gateway: cannot start %s: %s", p->path, strerror(-rc));
	}
	p->spawned = true;
	return 0;
}

/* Spawn the gateway and send it the box. */
static int start(struct gw_proc *p, char *err, size_t errlen)
{
	if (p->spawned)
		return 0;
	if (p->setup == NULL)
		return fail(err, errlen, "the gateway: started before the box was set up%s%s", "",
			    "");
	if (spawn(p, err, errlen) != 0)
		return -1;
	struct gw_wire w = { .p = p->setup, .n = p->setup_len, .cap = p->setup_len };
	int e = gw_frame_send(p->ctl, &w, &p->text_fd, 1);
	explicit_bzero(p->setup, p->setup_len);
	free(p->setup);
	p->setup = NULL;
	close(p->text_fd);
	p->text_fd = -1;
	if (e != 0)
		return fail(err, errlen, "the gateway: cannot send it the box: %s%s", strerror(-e), "");
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How the gateway ended, for a message: "exited with status N", "was
 * killed by signal N". */
static void ended_how(struct gw_proc *p, char *how, size_t len)
{
	siginfo_t si = { 0 };
	if (p->pid > 0 && waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED) == 0) {
		p->pid = 0;
		if (si.si_code == CLD_EXITED)
			snprintf(how, len, "exited with status %d", si.si_status);
		else
			snprintf(how, len, "was killed by signal %d", si.si_status);
	} else {
		snprintf(how, len, "ended");
	}
}

/* Wait for the next control frame, which must be op: its body in r.  0, or
 * -1 with err (the gateway ended, a malformed or unexpected frame, no reply
 * in time). */
static int wait_frame(struct gw_proc *p, uint32_t op, struct gw_wire *r, char *err,
		      size_t errlen)
{
	long long until = now_ms() + REPLY_MS;
	char how[64];
	for (;;) {
		struct pollfd pf[2] = { { .fd = p->ctl, .events = POLLIN },
					{ .fd = p->pidfd, .events = POLLIN } };
		long long left = until - now_ms();
		int n = poll(pf, 2, left < 0 ? 0 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return fail(err, errlen, "the gateway process did not answer in %s%s",
				    "60 s", "");
		if (n < 0)
			return fail(err, errlen, "the gateway: poll: %s%s", strerror(errno), "");
		if (pf[0].revents & POLLIN) {
			size_t nfds;
			int fds[1];
			long k = gw_frame_recv(p->ctl, p->buf, CTL_FRAME_MAX, fds, 0, &nfds);
			if (k > 0) {
				gw_wire_from(r, p->buf, (size_t)k);
				if (gw_get_u32(r) == op && !r->bad)
					return 0;
				return fail(err, errlen, "the gateway process broke the control "
					    "protocol%s%s", "", "");
			}
			if (k < 0 && k != -ECONNRESET)
				return fail(err, errlen, "the gateway process broke the control "
					    "protocol: %s%s", strerror((int)-k), "");
		}
		if (pf[1].revents || (pf[0].revents & (POLLHUP | POLLERR))) {
			/* it ended: wait for it, to say how */
			poll(&pf[1], 1, 1000);
			ended_how(p, how, sizeof(how));
			return fail(err, errlen, "the gateway process %s%s", how, "");
		}
	}
}

/* A reply that is u32 ok, then str error when not: 0, or -1 with err. */
static int ok_or_error(struct gw_wire *r, char *err, size_t errlen)
{
	uint32_t ok = gw_get_u32(r);
	if (!r->bad && ok == 1 && r->n == 0)
		return 0;
	char *why = NULL;
	if (!r->bad && ok == 0)
		gw_get_str(r, 4096, &why);
	if (why == NULL || r->bad || r->n != 0)
		fail(err, errlen, "the gateway process broke the control protocol%s%s", "", "");
	else
		fail(err, errlen, "%s%s", why, "");
	free(why);
	return -1;
}

static int sealed_copy(const char *text, size_t len)
{
	int fd = memfd_create("box.toml", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t n = 0;
	while (fd >= 0 && n < len) {
		ssize_t k = write(fd, text + n, len - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			close(fd);
			return -1;
		}
		n += (size_t)k;
	}
	if (fd >= 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW |
					     F_SEAL_WRITE) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* trust/cert.pem: a stale one removed, the new one written and read back
 * (cert_file.h). */
static int write_cert(int dirfd, const struct gw_ca_minted *ca, char *err, size_t errlen)
{
	char why[512];
	int fd;
	if (gw_cert_file_remove_stale(dirfd, CERT_NAME, why, sizeof(why)) != 0 ||
	    (fd = gw_cert_file_create(dirfd, CERT_NAME, why, sizeof(why))) < 0 ||
	    gw_cert_file_fill(fd, dirfd, CERT_NAME, ca->pem, ca->pem_len, why, sizeof(why)) != 0)
		return fail(err, errlen, "the gateway's CA: %s%s", why, "");
	return 0;
}

/* The start lines on the destination floor, as the gateway will apply it. */
static int floor_lines(struct gw_proc *p, const struct gw_proc_box *box)
{
	const struct box_gateway *c = &box->cfg->gateway;
	const struct gw_dest_floor floor = {
		.enabled = c->present ? c->destination_floor : true,
		.self_ports = box->self_ports, .n_self_ports = box->n_self_ports };
	char one[1];
	size_t need = gw_dest_floor_describe(&floor, c->hosts, c->n_hosts, one, sizeof(one));
	if ((p->floor = malloc(need + 1)) == NULL)
		return -1;
	gw_dest_floor_describe(&floor, c->hosts, c->n_hosts, p->floor, need + 1);
	return 0;
}

int gw_proc_setup(struct gw_proc *p, const struct gw_proc_box *box, char *err, size_t errlen)
{
	struct gw_cred_table *t = NULL;
	struct gw_ca_minted *ca = &p->ca;
	struct gw_wire w;
	char why[512];
	int rc = -1;

	mint_join(p);
	/* the routes: their phantoms, their secrets, the sandbox's variables */
	if (gw_cred_table_new(&t) != 0 ||
	    gw_cred_table_from_config(t, box->cfg, why, sizeof(why)) != 0) {
		fail(err, errlen, "egress credentials: %s%s", t ? why : "out of memory", "");
		goto out;
	}
	if (gw_cred_table_read_secrets(t, err, errlen) != 0)
		goto out;
	if (gw_cred_sandbox_env(t, p->env, MAX_ENV, &p->n_env) != 0 || floor_lines(p, box) != 0) {
		fail(err, errlen, "the gateway: out of memory%s%s", "", "");
		goto out;
	}
	/* the CA, and its certificate where every sandbox finds it */
	if (p->mint_rc != 0) {
		fail(err, errlen, "%s%s", p->mint_err, "");
		goto out;
	}
	if (write_cert(box->trust_dirfd, ca, err, errlen) != 0)
		goto out;

	size_t nr = gw_cred_table_count(t);
	gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
	gw_put_u32(&w, CTL_SETUP);
	gw_put_str(&w, box->config_path);
	size_t np = box->n_self_ports < GW_CTL_MAX_PORTS ? box->n_self_ports : GW_CTL_MAX_PORTS;
	gw_put_u32(&w, (uint32_t)np);
	for (size_t i = 0; i < np; i++)
		gw_put_u32(&w, box->self_ports[i]);
	gw_put_str(&w, box->home);
	gw_put_bytes(&w, ca->key, ca->key_len);
	gw_put_bytes(&w, ca->cert, ca->cert_len);
	gw_put_u32(&w, (uint32_t)nr);
	for (size_t i = 0; i < nr; i++) {
		gw_put_str(&w, gw_cred_route_phantom(t, i));
		gw_put_str(&w, gw_cred_route_secret_value(t, i));
	}
	const struct tm_relay_stamp *st = box->stamp;
	size_t na = st && st->n_operator < GW_CTL_MAX_ATTRS ? st->n_operator : 0;
	gw_put_str(&w, st ? st->box_id : "");
	gw_put_str(&w, st ? st->run_id : "");
	gw_put_u32(&w, (uint32_t)na);
	for (size_t i = 0; i < na; i++) {
		gw_put_str(&w, st->operator_attrs[i].key);
		gw_put_str(&w, st->operator_attrs[i].value);
	}
	if (w.bad) {
		fail(err, errlen, "the gateway: the box's routes do not fit in one frame%s%s", "", "");
		goto out;
	}
	if ((p->text_fd = sealed_copy(box->config_text, box->config_len)) < 0) {
		fail(err, errlen, "the gateway: cannot pass box.toml: %s%s", strerror(errno), "");
		goto out;
	}
	/* Kept until the gateway starts: on the sandbox's first connection,
	 * or now when only the gateway can check something the config names
	 * (extra CA files: a bad one refuses the box before the workload). */
	if ((p->setup = malloc(w.n)) == NULL) {
		fail(err, errlen, "the gateway: out of memory%s%s", "", "");
		goto out;
	}
	memcpy(p->setup, p->buf, w.n);
	p->setup_len = w.n;
	p->eager = box->cfg->gateway.extra_ca_files.n > 0;
	if (p->eager && start(p, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	if (p->buf != NULL)
		explicit_bzero(p->buf, CTL_FRAME_MAX);  /* the key and the secrets */
	gw_ca_minted_wipe(ca);
	gw_cred_table_free(t);                  /* wipes its secrets */
	return rc;
}

const char *gw_proc_env(const struct gw_proc *p, size_t i)
{
	return i < p->n_env ? p->env[i] : NULL;
}

const char *gw_proc_floor_lines(const struct gw_proc *p)
{
	return p->floor ? p->floor : "";
}

/* The gateway started, set up (CTL_READY), its decisions answered, and
 * every listener handed to it: 0, or -1 with err (remembered: later calls
 * give the same answer). */
static int bring_up(struct gw_proc *p, char *err, size_t errlen)
{
	struct gw_wire r;
	if (p->up)
		return 0;
	if (p->up_failed)
		return fail(err, errlen, "%s%s", p->up_err, "");
	char *why = p->up_err;
	size_t wl = sizeof(p->up_err);
	int rc = start(p, why, wl);
	if (rc == 0 && (rc = wait_frame(p, CTL_READY, &r, why, wl)) == 0)
		rc = ok_or_error(&r, why, wl);
	if (rc == 0 && !p->have_dec)
		rc = fail(why, wl, "the gateway: no decider%s%s", "", "");
	if (rc == 0) {
		int e = gw_link_server_start(&p->dec, p->chan, GW_LINK_CHANNELS, &p->server);
		for (size_t i = 0; i < GW_LINK_CHANNELS; i++)
			p->chan[i] = -1;        /* the server's, whatever it returned */
		if (e != 0)
			rc = fail(why, wl, "the gateway's decisions: cannot start a thread: %s%s",
				  strerror(-e), "");
	}
	for (size_t i = 0; rc == 0 && i < p->n_ls; i++) {
		struct listener *l = &p->ls[i];
		struct gw_wire w;
		gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
		gw_put_u32(&w, CTL_SERVE);
		gw_put_str(&w, l->label);
		gw_put_str(&w, l->scope);
		gw_put_u32(&w, (uint32_t)l->kind);
		gw_put_u32(&w, 0);              /* served for the whole run */
		int e = gw_frame_send(p->ctl, &w, &l->fd, 1);
		close(l->fd);
		l->fd = -1;
		if (e != 0)
			rc = fail(why, wl, "the gateway: cannot hand it %s's listener: %s", l->label,
				  strerror(-e));
		else if ((rc = wait_frame(p, CTL_SERVED, &r, why, wl)) == 0)
			rc = ok_or_error(&r, why, wl);
	}
	if (rc != 0) {
		p->up_failed = true;
		return fail(err, errlen, "%s%s", p->up_err, "");
	}
	p->n_ls = 0;
	p->up = true;
	return 0;
}

int gw_proc_serve(struct gw_proc *p, int fd, const char *label, const char *scope, int kind,
		  char *err, size_t errlen)
{
	pthread_mutex_lock(&p->lock);
	if (p->up || p->n_ls == MAX_LISTENERS) {
		pthread_mutex_unlock(&p->lock);
		close(fd);
		return fail(err, errlen, "the gateway cannot take %s's listener now%s", label, "");
	}
	struct listener *l = &p->ls[p->n_ls++];
	l->fd = fd;
	l->kind = kind;
	snprintf(l->label, sizeof(l->label), "%s", label);
	snprintf(l->scope, sizeof(l->scope), "%s", scope ? scope : "");
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int gw_proc_serve_leaf(struct gw_proc *p, int fd, const char *label, const char *scope,
		       unsigned long long *id, char *err, size_t errlen)
{
	struct gw_wire w, r;
	int rc;

	*id = 0;
	pthread_mutex_lock(&p->lock);
	/* gw_proc_up started it: not here, since the process dies with the
	 * thread that spawns it (PR_SET_PDEATHSIG), and a call's ends first */
	if ((rc = p->stopped ? fail(err, errlen, "the box is stopping%s%s", "", "")
		  : p->up_failed ? fail(err, errlen, "%s%s", p->up_err, "")
		  : !p->up ? fail(err, errlen, "the gateway is not running%s%s", "", "")
			   : 0) != 0) {
		pthread_mutex_unlock(&p->lock);
		close(fd);
		return rc;
	}
	unsigned n = ++p->next_id;
	gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
	gw_put_u32(&w, CTL_SERVE);
	gw_put_str(&w, label);
	gw_put_str(&w, scope ? scope : "");
	gw_put_u32(&w, GW_SERVE_PROXY);
	gw_put_u32(&w, n);
	int e = gw_frame_send(p->ctl, &w, &fd, 1);
	close(fd);
	if (e != 0)
		rc = fail(err, errlen, "the gateway: cannot hand it %s's listener: %s", label,
			  strerror(-e));
	else if ((rc = wait_frame(p, CTL_SERVED, &r, err, errlen)) == 0)
		rc = ok_or_error(&r, err, errlen);
	else {
		/* no answer in time: a late one would read as the next request's,
		 * so the channel serves nothing more (later tools fail at once) */
		p->up_failed = true;
		snprintf(p->up_err, sizeof(p->up_err), "%s", err);
	}
	pthread_mutex_unlock(&p->lock);
	if (rc == 0)
		*id = n;
	return rc;
}

void gw_proc_unserve_leaf(struct gw_proc *p, unsigned long long id)
{
	struct gw_wire w;
	pthread_mutex_lock(&p->lock);
	if (id != 0 && p->up && p->ctl >= 0) {
		gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
		gw_put_u32(&w, CTL_UNSERVE);
		gw_put_u32(&w, (uint32_t)id);
		(void)gw_frame_send(p->ctl, &w, NULL, 0);
	}
	pthread_mutex_unlock(&p->lock);
}

void gw_proc_decide(struct gw_proc *p, struct dw_monitor *mon, const struct dw_engine *eng,
		    struct tm_collector *records)
{
	gw_decider_local(&p->dec, mon, eng, records);
	p->have_dec = true;
}

int gw_proc_ready(struct gw_proc *p, char *err, size_t errlen)
{
	pthread_mutex_lock(&p->lock);
	int rc = p->eager ? bring_up(p, err, errlen) : 0;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int gw_proc_up(struct gw_proc *p, char *err, size_t errlen)
{
	pthread_mutex_lock(&p->lock);
	int rc = bring_up(p, err, errlen);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

size_t gw_proc_pollfds(struct gw_proc *p, struct pollfd *pf, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&p->lock);
	if (p->up_failed || p->stopped) {
		n = 0;
	} else if (p->up) {
		if (max > 0)
			pf[n++] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
	} else {
		for (size_t i = 0; i < p->n_ls && n < max; i++)
			pf[n++] = (struct pollfd){ .fd = p->ls[i].fd, .events = POLLIN };
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

int gw_proc_event(struct gw_proc *p, char *err, size_t errlen)
{
	pthread_mutex_lock(&p->lock);
	bool up = p->up;
	int rc = up ? 0 : bring_up(p, err, errlen);     /* the sandbox's first connection */
	pthread_mutex_unlock(&p->lock);
	if (!up)
		return rc;
	char how[64];
	ended_how(p, how, sizeof(how));
	return fail(err, errlen, "the gateway process %s while the workload ran; stopping the "
		    "box%s", how, "");
}

int gw_proc_stop(struct gw_proc *p, char *err, size_t errlen)
{
	int rc = 0;
	char how[64];
	pthread_mutex_lock(&p->lock);
	bool was = p->stopped;
	p->stopped = true;
	if (!was && p->ctl >= 0) {
		close(p->ctl);
		p->ctl = -1;
	}
	pthread_mutex_unlock(&p->lock);
	if (was)
		return 0;
	if (p->pid > 0) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
		long long until = now_ms() + GW_PROC_STOP_MS;
		int n;
		do {
			long long left = until - now_ms();
			n = poll(&pf, 1, left < 0 ? 0 : (int)left);
		} while (n < 0 && errno == EINTR);
		if (n == 0) {
			syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
			rc = fail(err, errlen, "the gateway process did not stop in %s and was "
				  "killed%s", "5 s", "");
		}
		ended_how(p, how, sizeof(how));
		if (rc == 0 && strcmp(how, "exited with status 0") != 0)
			rc = fail(err, errlen, "the gateway process %s%s", how, "");
	}
	/* every channel is closed now on the gateway's side: the threads end */
	gw_link_server_stop(p->server);
	p->server = NULL;
	close_all(p->chan, GW_LINK_CHANNELS);
	for (size_t i = 0; i < p->n_ls; i++)
		close(p->ls[i].fd);
	p->n_ls = 0;
	return rc;
}

void gw_proc_free(struct gw_proc *p)
{
	char err[128];
	if (p == NULL)
		return;
	mint_join(p);
	gw_ca_minted_wipe(&p->ca);
	gw_proc_stop(p, err, sizeof(err));
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->text_fd >= 0)
		close(p->text_fd);
	if (p->setup != NULL) {
		explicit_bzero(p->setup, p->setup_len);
		free(p->setup);
	}
	for (size_t i = 0; i < p->n_env; i++) {
		explicit_bzero(p->env[i], strlen(p->env[i]));
		free(p->env[i]);
	}
	free(p->floor);
	free(p->buf);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
