/* gateway.c - the egress gateway of one run (gateway.h): set-up, the
 * listeners' accept threads, and the connection threads' bookkeeping. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ca.h"
#include "cred.h"
#include "gateway.h"
#include "otlp_listener.h"
#include "proxy.h"

#define CERT_NAME "cert.pem"
/* the run's own (proxy, agent receiver) and one per tool call running
 * (BRK_MAX_CALLS, docs/tools.md), with room */
#define MAX_LISTENERS 96
#define MAX_ENV 80
#define THREAD_STACK (256u << 10)

struct listener {
	struct gateway *g;
	int fd;
	pthread_t thread;
	bool started;
	struct gw_who who;
	unsigned char *scope;
	bool otlp;                      /* the agent receiver, not the proxy */
	char label[96];
	unsigned id;                    /* a leaf's (gw_serve_as), 0: served for the run */
	size_t refs;                    /* its accept thread and its connections */
	bool closing;                   /* gw_unserve: its accept thread ends */
};

/* Drop one reference to l (g->lock held); the last frees it.  A listener
 * still in g->ls keeps its accept thread's, so only one gw_unserve took
 * out frees here. */
static bool listener_unref(struct listener *l)
{
	return --l->refs == 0;
}

static void listener_free(struct listener *l)
{
	close(l->fd);
	free(l->scope);
	free(l);
}

struct gateway {
	struct gw_shared sh;
	_Atomic size_t buffered;
	_Atomic bool stop;
	char *aws_credentials, *aws_config;
	struct gw_cred_table *creds;
	uint16_t self_ports[MAX_LISTENERS];
	char *env[MAX_ENV];
	size_t n_env;
	struct listener *ls[MAX_LISTENERS];
	size_t n_ls;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	size_t n_conns;                 /* connection threads running */
	struct tm_relay_stamp stamp;    /* the agent receiver's (borrowed strings) */
	struct gw_otlp_stats otlp;
	/* The CA: made by maker's thread; gw_ready takes it, fills cert.pem
	 * and makes sh.server.  Until then nothing reads sh.ca or sh.server. */
	struct gw_ca_maker *maker;
	int trust_fd;                   /* a dup of <box_dir>/trust, closed by gw_ready */
	int cert_fd;                    /* trust/cert.pem, created empty, filled by gw_ready */
	bool ready_done;
	int ready_rc;
	char ready_err[600];
};

struct gw_ca_maker {
	pthread_t thread;
	bool joined;
	struct gw_ca *ca;               /* the thread's result, until taken */
	int rc;
	char err[512];
};

struct job {                            /* one connection being served */
	struct listener *l;
	int fd;
};

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (errlen)
		snprintf(err, errlen, fmt, a, b);
	return -1;
}

/* The CA, off the supervisor's start path: OpenSSL's own start
 * (configuration, providers, the DRBG) and the CA cost a couple of
 * milliseconds, which overlap the supervisor's other steps. */
static void *maker_main(void *arg)
{
	struct gw_ca_maker *m = arg;

	m->rc = gw_ca_new(&m->ca, m->err, sizeof(m->err));
	return NULL;
}

int gw_ca_maker_start(struct gw_ca_maker **out, char *err, size_t errlen)
{
	struct gw_ca_maker *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return fail(err, errlen, "the gateway's CA: out of memory%s%s", "", "");
	int rc = pthread_create(&m->thread, NULL, maker_main, m);
	if (rc != 0) {
		free(m);
		return fail(err, errlen, "the gateway's CA: cannot start a thread: %s%s",
			    strerror(rc), "");
	}
	*out = m;
	return 0;
}

static void maker_join(struct gw_ca_maker *m)
{
	if (!m->joined) {
		pthread_join(m->thread, NULL);
		m->joined = true;
	}
}

void gw_ca_maker_free(struct gw_ca_maker *m)
{
	if (m == NULL)
		return;
	maker_join(m);
	gw_ca_free(m->ca);
	free(m);
}

int gw_ready(struct gateway *g, char *err, size_t errlen)
{
	char why[512];
	if (!g->ready_done && g->maker == NULL) {
		/* the supervisor's CA: only the workload-side context to make */
		g->ready_done = true;
		if (gw_server_new(g->sh.ca, &g->sh.server, why, sizeof(why)) != 0) {
			g->ready_rc = -1;
			snprintf(g->ready_err, sizeof(g->ready_err), "the gateway's CA: %s", why);
		}
	}
	if (!g->ready_done) {
		g->ready_done = true;
		struct gw_ca_maker *m = g->maker;
		maker_join(m);
		int fd = g->cert_fd;
		g->cert_fd = -1;        /* gw_ca_fill_cert_file closes it */
		if (m->rc != 0) {
			close(fd);
			snprintf(why, sizeof(why), "%s", m->err);
		} else {
			g->sh.ca = m->ca;
			m->ca = NULL;
		}
		/* The workload-side context itself waits for the first TLS
		 * connection (gw_server_ctx). */
		if (m->rc != 0 ||
		    gw_ca_fill_cert_file(g->sh.ca, fd, g->trust_fd, CERT_NAME, why, sizeof(why)) != 0 ||
		    gw_server_new(g->sh.ca, &g->sh.server, why, sizeof(why)) != 0) {
			g->ready_rc = -1;
			snprintf(g->ready_err, sizeof(g->ready_err), "the gateway's CA: %s", why);
		}
		gw_ca_maker_free(m);
		g->maker = NULL;
		close(g->trust_fd);
		g->trust_fd = -1;
	}
	if (g->ready_rc != 0)
		return fail(err, errlen, "%s%s", g->ready_err, "");
	return 0;
}

int gw_new(const struct gw_params *p, struct gateway **out, char *err, size_t errlen)
{
	struct gateway *g = calloc(1, sizeof(*g));
	char why[512];
	if (g == NULL) {
		gw_ca_maker_free(p->ca_maker);
		return fail(err, errlen, "the gateway: out of memory%s%s", "", "");
	}
	g->trust_fd = g->cert_fd = -1;
	g->maker = p->ca_maker;         /* ours from here, also when gw_new fails */
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->sh.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->sh.stop_fd < 0) {
		fail(err, errlen, "the gateway: eventfd: %s%s", strerror(errno), "");
		gw_ca_maker_free(g->maker);
		free(g);
		return -1;
	}
	g->sh.cfg = p->cfg;
	g->sh.buffered = &g->buffered;
	g->sh.stopping = &g->stop;
	g->sh.dec = p->dec;
	if (p->stamp != NULL)
		g->stamp = *p->stamp;
	else
		g->stamp = (struct tm_relay_stamp){ .box_id = "", .run_id = "" };
	/* The operator's AWS files, found as the AWS CLI finds them: the two
	 * variables, else ~/.aws under $HOME (the passwd home without one). */
	const char *home = getenv("HOME");
	if (home == NULL || home[0] != '/')
		home = p->home;
	const char *cf = getenv("AWS_SHARED_CREDENTIALS_FILE"), *cc = getenv("AWS_CONFIG_FILE");
	if ((cf && cf[0] ? (g->aws_credentials = strdup(cf)) == NULL
			 : asprintf(&g->aws_credentials, "%s/.aws/credentials", home) < 0) ||
	    (cc && cc[0] ? (g->aws_config = strdup(cc)) == NULL
			 : asprintf(&g->aws_config, "%s/.aws/config", home) < 0)) {
		g->aws_credentials = g->aws_config = NULL;
		fail(err, errlen, "the gateway: out of memory%s%s", "", "");
		goto fail;
	}
	g->sh.aws_credentials = g->aws_credentials;
	g->sh.aws_config = g->aws_config;
	g->sh.warn_always = true;
	g->sh.floor.enabled = p->cfg->gateway.present ? p->cfg->gateway.destination_floor : true;
	size_t np = p->n_self_ports < MAX_LISTENERS ? p->n_self_ports : MAX_LISTENERS;
	memcpy(g->self_ports, p->self_ports, np * sizeof(uint16_t));
	g->sh.floor.self_ports = g->self_ports;
	g->sh.floor.n_self_ports = np;

	if (p->ca != NULL) {
		/* the supervisor's CA (cairn run): it wrote trust/cert.pem itself */
		gw_ca_maker_free(g->maker);
		g->maker = NULL;
		if (gw_ca_from_der(p->ca->key, p->ca->key_len, p->ca->cert, p->ca->cert_len,
				   &g->sh.ca, why, sizeof(why)) != 0) {
			fail(err, errlen, "%s%s", why, "");
			goto fail;
		}
	} else {
		/* The CA is being made on its own thread: the caller's, started
		 * as early as it could, or ours from now. */
		if (g->maker == NULL && gw_ca_maker_start(&g->maker, err, errlen) != 0)
			goto fail;
		/* cert.pem exists from here, empty, so the sandbox's view can
		 * bind it; gw_ready writes the CA into it before any workload runs. */
		g->trust_fd = fcntl(p->trust_dirfd, F_DUPFD_CLOEXEC, 3);
		if (g->trust_fd < 0) {
			fail(err, errlen, "the gateway's CA: dup of the trust directory: %s%s",
			     strerror(errno), "");
			goto fail;
		}
		if (gw_ca_remove_stale(g->trust_fd, CERT_NAME, why, sizeof(why)) != 0 ||
		    (g->cert_fd = gw_ca_create_cert_file(g->trust_fd, CERT_NAME, why,
							 sizeof(why))) < 0) {
			fail(err, errlen, "the gateway's CA: %s%s", why, "");
			goto fail;
		}
	}
	const struct box_paths *extra = &p->cfg->gateway.extra_ca_files;
	const char *files[64];
	size_t nf = 0;
	for (size_t i = 0; i < extra->n && nf < 64; i++)
		files[nf++] = extra->v[i].resolved;
	/* The extra CA files are read now (a bad one refuses the box); the
	 * system store waits for the first upstream TLS connection. */
	if (gw_upstream_new(files, nf, &g->sh.upstream, why, sizeof(why)) != 0) {
		fail(err, errlen, "the gateway's upstream trust: %s%s", why, "");
		goto fail;
	}
	if (gw_cred_table_new(&g->creds) != 0 ||
	    gw_cred_table_from_config(g->creds, p->cfg, why, sizeof(why)) != 0) {
		fail(err, errlen, "egress credentials: %s%s", why, "");
		goto fail;
	}
	/* The supervisor's phantoms and secrets (cairn run), else minted and
	 * read here (tests): one table either way. */
	size_t nr = gw_cred_table_count(g->creds);
	if ((p->phantoms || p->secrets) && p->n_routes != nr) {
		fail(err, errlen, "egress credentials: %s%s", "the supervisor's routes are not "
		     "this config's", "");
		goto fail;
	}
	for (size_t i = 0; i < nr; i++) {
		bool env = gw_cred_route_env_name(g->creds, i) != NULL;
		if (p->phantoms && env &&
		    gw_cred_table_set_phantom(g->creds, i, p->phantoms[i], why, sizeof(why)) != 0) {
			fail(err, errlen, "egress credentials: %s%s", why, "");
			goto fail;
		}
		if (p->secrets && env &&
		    gw_cred_table_set_secret(g->creds, i, p->secrets[i], why, sizeof(why)) != 0) {
			fail(err, errlen, "egress route %s: %s", gw_cred_route_name(g->creds, i), why);
			goto fail;
		}
	}
	if (!p->secrets && gw_cred_table_read_secrets(g->creds, err, errlen) != 0)
		goto fail;
	if (gw_cred_sandbox_env(g->creds, g->env, MAX_ENV, &g->n_env) != 0) {
		fail(err, errlen, "the gateway: out of memory%s%s", "", "");
		goto fail;
	}
	g->sh.creds = g->creds;
	*out = g;
	return 0;
fail:
	gw_free(g);
	return -1;
}

const char *gw_env(const struct gateway *g, size_t i)
{
	return i < g->n_env ? g->env[i] : NULL;
}

static int relay_out(void *arg, enum tm_relay_kind k, const struct tm_relay_out *o)
{
	struct gateway *g = arg;
	return gw_relay(g->sh.dec, k, o);
}

static void *conn_main(void *arg)
{
	struct job *j = arg;
	struct listener *l = j->l;
	struct gateway *g = l->g;
	if (l->otlp)
		gw_otlp_serve(j->fd, g->sh.stop_fd, &g->stamp, relay_out, g, &g->otlp);
	else
		gw_proxy_serve(&g->sh, &l->who, j->fd);
	free(j);
	pthread_mutex_lock(&g->lock);
	g->n_conns--;
	bool last = listener_unref(l);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (last)
		listener_free(l);       /* unserved, and its last connection is done */
	return NULL;
}

static void *accept_main(void *arg)
{
	struct listener *l = arg;
	struct gateway *g = l->g;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	for (;;) {
		pthread_mutex_lock(&g->lock);
		while (!g->stopping && !l->closing && g->n_conns >= GW_MAX_CONNS)
			pthread_cond_wait(&g->cond, &g->lock);
		bool stop = g->stopping || l->closing;
		pthread_mutex_unlock(&g->lock);
		if (stop)
			break;
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				if (errno != EINTR && errno != ECONNABORTED)
					usleep(10000);  /* out of descriptors: let some close */
				continue;
			}
			break;                  /* shut down (gw_free) */
		}
		/* answers go out as they are written: without this a head and
		 * its body in two writes wait for the client's delayed ACK */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct job *j = calloc(1, sizeof(*j));
		if (j == NULL) {
			close(fd);
			continue;
		}
		j->l = l;
		j->fd = fd;
		pthread_mutex_lock(&g->lock);
		if (g->stopping) {
			pthread_mutex_unlock(&g->lock);
			close(fd);
			free(j);
			break;
		}
		g->n_conns++;
		l->refs++;
		pthread_t t;
		int rc = pthread_create(&t, &attr, conn_main, j);
		if (rc != 0) {
			g->n_conns--;
			l->refs--;
		}
		pthread_mutex_unlock(&g->lock);
		if (rc != 0) {
			close(fd);
			free(j);
			usleep(10000);
		}
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

static int serve(struct gateway *g, int fd, unsigned id, const char *label,
		 const struct box_process *scope_of, bool otlp, char *err, size_t errlen)
{
	char why[512];
	/* No connection before the CA exists. */
	if (gw_ready(g, err, errlen) != 0) {
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&g->lock);
	size_t n_ls = g->n_ls;
	pthread_mutex_unlock(&g->lock);
	if (n_ls >= MAX_LISTENERS) {
		close(fd);
		return fail(err, errlen, "the gateway serves at most 96 listeners%s%s", "", "");
	}
	struct listener *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		close(fd);
		return fail(err, errlen, "the gateway: out of memory%s%s", "", "");
	}
	l->g = g;
	l->fd = fd;
	l->otlp = otlp;
	l->id = id;
	l->refs = 1;
	snprintf(l->label, sizeof(l->label), "%s", label);
	if (scope_of != NULL ? gw_cred_scope_new(g->creds, scope_of, &l->scope, why, sizeof(why))
			       : !otlp ? gw_cred_scope_agent(g->creds, g->sh.cfg, &l->scope, why,
							     sizeof(why))
				       : 0) {
		close(fd);
		free(l);
		return fail(err, errlen, "%s: %s", label, why);
	}
	l->who.label = l->label;
	l->who.scope = l->scope;
	pthread_mutex_lock(&g->lock);
	int rc = pthread_create(&l->thread, NULL, accept_main, l);
	if (rc == 0) {
		l->started = true;
		g->ls[g->n_ls++] = l;
	}
	pthread_mutex_unlock(&g->lock);
	if (rc != 0) {
		listener_free(l);
		errno = rc;
		return fail(err, errlen, "the gateway: cannot start a thread: %s%s", strerror(rc),
			    "");
	}
	return 0;
}

int gw_serve(struct gateway *g, int fd, const char *label, const struct box_process *scope_of,
	     char *err, size_t errlen)
{
	return serve(g, fd, 0, label, scope_of, false, err, errlen);
}

int gw_serve_as(struct gateway *g, int fd, unsigned id, const char *label,
		const struct box_process *scope_of, char *err, size_t errlen)
{
	return serve(g, fd, id, label, scope_of, false, err, errlen);
}

void gw_unserve(struct gateway *g, unsigned id)
{
	struct listener *l = NULL;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; id != 0 && i < g->n_ls; i++)
		if (g->ls[i]->id == id) {
			l = g->ls[i];
			g->ls[i] = g->ls[--g->n_ls];
			l->closing = true;
			/* an accept thread waiting for a connection slot wakes too */
			pthread_cond_broadcast(&g->cond);
			break;
		}
	pthread_mutex_unlock(&g->lock);
	if (l == NULL)
		return;
	shutdown(l->fd, SHUT_RDWR);     /* wakes accept4 */
	if (l->started)
		pthread_join(l->thread, NULL);
	pthread_mutex_lock(&g->lock);
	bool last = listener_unref(l);
	pthread_mutex_unlock(&g->lock);
	if (last)
		listener_free(l);       /* else its last connection frees it */
}

int gw_serve_otlp(struct gateway *g, int fd, const char *label, char *err, size_t errlen)
{
	return serve(g, fd, 0, label, NULL, true, err, errlen);
}

const struct gw_otlp_stats *gw_otlp_stats(const struct gateway *g)
{
	return &g->otlp;
}

void gw_free(struct gateway *g)
{
	if (g == NULL)
		return;
	gw_ca_maker_free(g->maker);     /* never made ready: its thread ends here */
	if (g->cert_fd >= 0)
		close(g->cert_fd);
	if (g->trust_fd >= 0)
		close(g->trust_fd);
	/* Stop: every wait of every connection thread ends (the stop eventfd
	 * is in each of its polls), and the accept threads wake. */
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	atomic_store(&g->stop, true);
	uint64_t one = 1;
	if (write(g->sh.stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		abort();        /* a stop that cannot be signalled must not hang or free */
	for (size_t i = 0; i < g->n_ls; i++) {
		shutdown(g->ls[i]->fd, SHUT_RDWR);      /* wakes accept4 */
		if (g->ls[i]->started)
			pthread_join(g->ls[i]->thread, NULL);
	}
	/* The connection threads use the listeners, the monitor and the
	 * config: nothing is freed, here or by the caller, until the last one
	 * has ended.  Their waits are cancelled; what remains is bounded work
	 * (a history sync, a resolver call). */
	pthread_mutex_lock(&g->lock);
	while (g->n_conns > 0)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < g->n_ls; i++)
		listener_free(g->ls[i]);
	for (size_t i = 0; i < g->n_env; i++) {
		if (g->env[i])
			OPENSSL_cleanse(g->env[i], strlen(g->env[i]));
		free(g->env[i]);
	}
	gw_server_free(g->sh.server);
	gw_upstream_free(g->sh.upstream);
	gw_ca_free(g->sh.ca);
	gw_cred_table_free(g->creds);
	free(g->aws_credentials);
	free(g->aws_config);
	close(g->sh.stop_fd);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}
