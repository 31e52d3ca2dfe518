/* export.c - OTLP/HTTP targets from the supervisor's side (export.h; the
 * channel is exportctl.h).
 *
 * The supervisor keeps the account: which bodies each target has
 * outstanding (a FIFO of at most TM_EXPORT_QUEUE), and the records sent
 * and lost.  cairn-export answers each submit with one EXP_DONE; these are
 * read whenever the supervisor comes back (a submit, the stop), never
 * waited for except by the stop, so nothing here blocks on a collector. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "helper_path.h"
#include "exportctl.h"

#ifndef CAIRN_LIBEXECDIR
#define CAIRN_LIBEXECDIR "/usr/local/libexec/cairn"
#endif

#define EXPORT_NAME "cairn-export"

struct pending {
	uint64_t seq;
	uint32_t records;
	enum tm_route route;
};

static const char *const route_path[] = { "/v1/logs", "/v1/traces", "/v1/metrics" };

struct target {
	char *label, *url, *header, *secret;
	struct pending q[TM_EXPORT_QUEUE];
	size_t head, n;
	uint64_t sent, lost;
	char last_error[256];
};

struct tm_exporter {
	pthread_mutex_t mu;
	char path[PATH_MAX + 32];       /* cairn-export */
	size_t n;
	struct target t[TM_EXPORT_TARGETS_MAX];
	bool spawned, dead;
	pid_t pid;
	int pidfd, ctl;
	uint64_t seq;
	char dead_why[200];             /* why it is not running, for the targets */
};

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void free_targets(struct tm_exporter *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->t[i].label);
		free(x->t[i].url);
		free(x->t[i].header);
		wipe_free(x->t[i].secret);
	}
}

int tm_exporter_start(const struct tm_otlp_target *t, size_t n, struct tm_exporter **out,
		      char *err, size_t errlen)
{
	struct exp_url u;
	char why[400];

	if (n == 0 || n > TM_EXPORT_TARGETS_MAX)
		return fail(err, errlen, "telemetry: %zu OTLP targets; a box takes 1 to %d", n,
			    TM_EXPORT_TARGETS_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *label = t[i].label ? t[i].label : "an OTLP target";
		if (strlen(label) > EXP_LABEL_MAX)
			return fail(err, errlen, "telemetry: a target's label is over %d bytes",
				    EXP_LABEL_MAX);
		if (t[i].url == NULL || exp_url_parse(t[i].url, &u, why, sizeof(why)) != 0)
			return fail(err, errlen, "invalid `%s` target: %s", label,
				    t[i].url ? why : "it names no destination");
		if ((t[i].header == NULL) != (t[i].secret == NULL))
			return fail(err, errlen, "invalid `%s` target: a secret needs both its "
				    "header and its value", label);
		if (t[i].secret == NULL)
			continue;
		if (!exp_header_name_ok(t[i].header))
			return fail(err, errlen, "invalid `%s` target: secret.header \"%.100s\" is "
				    "not an HTTP header name", label, t[i].header);
		/* the value is never echoed: it is a secret */
		if (!exp_header_value_ok(t[i].secret))
			return fail(err, errlen, "invalid `%s` target: its secret is empty, over %d "
				    "bytes, or holds a control character or a line break, so it "
				    "cannot be sent as an HTTP header", label, EXP_SECRET_MAX);
		if (!u.tls && !exp_url_loopback(&u))
			return fail(err, errlen, "invalid `%s` target: telemetry configuration: "
				    "the otlp target carries a secret and its destination is "
				    "neither https nor loopback", label);
	}
	struct tm_exporter *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return fail(err, errlen, "telemetry: out of memory");
	pthread_mutex_init(&x->mu, NULL);
	x->pidfd = x->ctl = -1;
	if (cairn_helper_path(EXPORT_NAME, x->path, sizeof(x->path)) != 0) {
		fail(err, errlen, "telemetry: %s is not installed (%s); OTLP targets need it",
		     x->path, strerror(errno));
		pthread_mutex_destroy(&x->mu);
		free(x);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct target *g = &x->t[i];
		x->n = i + 1;
		g->label = strdup(t[i].label ? t[i].label : "");
		g->url = strdup(t[i].url);
		g->header = strdup(t[i].header ? t[i].header : "");
		g->secret = strdup(t[i].secret ? t[i].secret : "");
		if (!g->label || !g->url || !g->header || !g->secret) {
			free_targets(x);
			pthread_mutex_destroy(&x->mu);
			free(x);
			return fail(err, errlen, "telemetry: out of memory");
		}
	}
	*out = x;
	return 0;
}

/* ---- the process ------------------------------------------------------------------------ */

static int send_frame(int fd, const struct exp_wire *w, int pass_fd, int flags)
{
	struct iovec iov = { .iov_base = w->p, .iov_len = w->n };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (pass_fd >= 0) {
		memset(&c, 0, sizeof(c));
		m.msg_control = c.buf;
		m.msg_controllen = sizeof(c.buf);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &pass_fd, sizeof(int));
	}
	ssize_t k;
	do
		k = sendmsg(fd, &m, MSG_NOSIGNAL | flags);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	return (size_t)k == w->n ? 0 : -EMSGSIZE;
}

/* How the process ended, for a message; reaps it. */
static void ended_how(struct tm_exporter *x, char *how, size_t len)
{
	siginfo_t si = { 0 };
	if (x->pid > 0 && waitid(P_PIDFD, (id_t)x->pidfd, &si, WEXITED | WNOHANG) == 0 &&
	    si.si_pid != 0) {
		x->pid = 0;
		if (si.si_code == CLD_EXITED)
			snprintf(how, len, "exited with status %d", si.si_status);
		else
			snprintf(how, len, "was killed by signal %d", si.si_status);
	} else {
		snprintf(how, len, "ended");
	}
}

/* Everything outstanding is lost, with why (on the targets it cost records:
 * the report's error explains the report's losses); the exporter is not
 * used again. */
static void lose_all(struct tm_exporter *x, const char *why)
{
	for (size_t i = 0; i < x->n; i++) {
		struct target *g = &x->t[i];
		if (g->n > 0)
			snprintf(g->last_error, sizeof(g->last_error), "%s", why);
		for (; g->n > 0; g->n--) {
			g->lost += g->q[g->head].records;
			g->head = (g->head + 1) % TM_EXPORT_QUEUE;
		}
	}
}

static void kill_exporter(struct tm_exporter *x)
{
	if (x->pid > 0) {
		syscall(SYS_pidfd_send_signal, x->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		waitid(P_PIDFD, (id_t)x->pidfd, &si, WEXITED);
		x->pid = 0;
	}
}

/* The exporter is no longer usable: say why to every target holding records,
 * kill it if it still runs. */
static void mark_dead(struct tm_exporter *x, const char *fmt, const char *arg)
{
	char why[200];
	if (x->dead)
		return;
	snprintf(why, sizeof(why), fmt, arg);
	snprintf(x->dead_why, sizeof(x->dead_why), "%s", why);
	x->dead = true;
	kill_exporter(x);
	lose_all(x, why);
	if (x->ctl >= 0) {
		close(x->ctl);
		x->ctl = -1;
	}
}

/* After the socket said the process went away: wait a little for it to be
 * reapable, to say how it ended. */
static void mark_ended(struct tm_exporter *x)
{
	char how[64], why[160];
	struct pollfd pf = { .fd = x->pidfd, .events = POLLIN };
	if (x->pid > 0)
		poll(&pf, 1, 1000);
	ended_how(x, how, sizeof(how));
	snprintf(why, sizeof(why), "the exporter process %s", how);
	mark_dead(x, "%s", why);
}

static int spawn(struct tm_exporter *x)
{
	int sv[2];
	char pid_arg[24];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* above 16: posix_spawn's dup2 onto 3 cannot meet a source not yet used */
	int theirs = fcntl(sv[1], F_DUPFD_CLOEXEC, 16);
	int e = theirs < 0 ? -errno : 0;
	close(sv[1]);
	if (e != 0) {
		close(sv[0]);
		return e;
	}
	/* Only the trust store's variables: no *_PROXY (Box sends with no
	 * proxy), no resolver or locale variables, and none of the
	 * supervisor's secrets. */
	char *envp[3];
	size_t ne = 0;
	char *cf = getenv("SSL_CERT_FILE"), *cd = getenv("SSL_CERT_DIR");
	char cfv[PATH_MAX + 16], cdv[PATH_MAX + 16];
	if (cf != NULL && snprintf(cfv, sizeof(cfv), "SSL_CERT_FILE=%s", cf) < (int)sizeof(cfv))
		envp[ne++] = cfv;
	if (cd != NULL && snprintf(cdv, sizeof(cdv), "SSL_CERT_DIR=%s", cd) < (int)sizeof(cdv))
		envp[ne++] = cdv;
	envp[ne] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, theirs, EXP_FD);
	/* its own group: the terminal's ^C is the supervisor's to forward, and
	 * the drain must outlive it */
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)getpid());
	char *argv[] = { EXPORT_NAME, pid_arg, NULL };
	e = -posix_spawn(&x->pid, x->path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(theirs);
	if (e == 0 && (x->pidfd = (int)syscall(SYS_pidfd_open, x->pid, 0)) < 0) {
		e = -errno;
		kill(x->pid, SIGKILL);
		waitpid(x->pid, NULL, 0);
	}
	if (e != 0) {
		x->pid = 0;
		close(sv[0]);
		return e;
	}
	x->ctl = sv[0];
	x->spawned = true;
	return 0;
}

/* Spawn, and hand it the targets.  0, or -1 with the exporter dead. */
static int bring_up(struct tm_exporter *x)
{
	uint8_t buf[EXP_FRAME_MAX];
	struct exp_wire w = { buf, 0, sizeof(buf), false };
	int e;
	if (x->spawned)
		return x->dead ? -1 : 0;
	if ((e = spawn(x)) != 0) {
		x->spawned = true;
		mark_dead(x, "the exporter process could not start: %s", strerror(-e));
		return -1;
	}
	exp_put_u32(&w, EXP_HELLO);
	exp_put_u32(&w, EXP_VERSION);
	exp_put_u32(&w, (uint32_t)x->n);
	e = send_frame(x->ctl, &w, -1, MSG_DONTWAIT);
	for (size_t i = 0; e == 0 && i < x->n; i++) {
		struct target *g = &x->t[i];
		w = (struct exp_wire){ buf, 0, sizeof(buf), false };
		exp_put_u32(&w, EXP_TARGET);
		exp_put_u32(&w, (uint32_t)i);
		exp_put_str(&w, g->label);
		exp_put_str(&w, g->url);
		exp_put_str(&w, g->header);
		exp_put_str(&w, g->secret);
		/* every frame fits: the limits were checked at start */
		e = w.bad ? -EMSGSIZE : send_frame(x->ctl, &w, -1, MSG_DONTWAIT);
		explicit_bzero(buf, sizeof(buf));
	}
	if (e != 0) {
		mark_dead(x, "the exporter process could not be given its targets: %s",
			  strerror(-e));
		return -1;
	}
	return 0;
}

/* One EXP_DONE: it must answer the oldest body its target has outstanding. */
static int on_done(struct tm_exporter *x, uint8_t *p, size_t n)
{
	struct exp_wire r = { p, n, n, false };
	char error[EXP_ERROR_MAX + 1];
	uint32_t op = exp_get_u32(&r), target = exp_get_u32(&r);
	uint64_t seq = exp_get_u64(&r);
	uint32_t ok = exp_get_u32(&r);
	exp_get_str(&r, error, EXP_ERROR_MAX);
	if (r.bad || r.n != 0 || op != EXP_DONE || target >= x->n || ok > 1 ||
	    (ok == 1) != (error[0] == '\0'))
		return -1;
	struct target *g = &x->t[target];
	if (g->n == 0 || g->q[g->head].seq != seq)
		return -1;
	if (ok) {
		g->sent += g->q[g->head].records;
	} else {
		g->lost += g->q[g->head].records;
		/* the peer's text, kept printable */
		for (char *c = error; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		snprintf(g->last_error, sizeof(g->last_error), "%s", error);
	}
	g->head = (g->head + 1) % TM_EXPORT_QUEUE;
	g->n--;
	return 0;
}

/* Read every EXP_DONE waiting (wait_ms: how long to wait for the first;
 * 0: none).  0, or -1 when the exporter is gone (marked dead). */
static int read_replies(struct tm_exporter *x, int wait_ms)
{
	uint8_t buf[EXP_FRAME_MAX];
	if (x->dead)
		return -1;
	for (;;) {
		struct pollfd pf = { .fd = x->ctl, .events = POLLIN };
		int k = poll(&pf, 1, wait_ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 0;
		wait_ms = 0;
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b,
				    .msg_controllen = sizeof(c.b) };
		ssize_t got = recvmsg(x->ctl, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got == 0 || (got < 0 && errno == ECONNRESET)) {
			mark_ended(x);
			return -1;
		}
		if (got < 0) {
			mark_dead(x, "the exporter's channel failed: %s", strerror(errno));
			return -1;
		}
		bool fds = m.msg_controllen > 0;
		if (fds) {
			/* never expected: close whatever came, then refuse */
			for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
				if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
					for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
						int fd;
						memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
						close(fd);
					}
		}
		if (fds || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
		    on_done(x, buf, (size_t)got) != 0) {
			mark_dead(x, "the exporter process broke its protocol%s", "");
			return -1;
		}
	}
}

/* The body in a sealed memfd (exportctl.h: why not inline). */
static int body_fd(const void *body, size_t len)
{
	int fd = memfd_create("otlp-body", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < len) {
		ssize_t k = write(fd, (const uint8_t *)body + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		off += (size_t)k;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int tm_exporter_submit(struct tm_exporter *x, size_t target, enum tm_route route,
		       const void *body, size_t len, uint32_t n_records)
{
	uint8_t buf[64];
	struct exp_wire w = { buf, 0, sizeof(buf), false };
	int rc = 0;

	if (x == NULL || body == NULL || len == 0 || len > TM_EXPORT_BODY_MAX ||
	    n_records == 0 || (unsigned)route > TM_ROUTE_METRICS)
		return -EINVAL;
	pthread_mutex_lock(&x->mu);
	if (target >= x->n) {
		rc = -EINVAL;
		goto out;
	}
	if (bring_up(x) != 0 || read_replies(x, 0) != 0) {
		rc = -EPIPE;
		goto out;
	}
	struct target *g = &x->t[target];
	if (g->n == TM_EXPORT_QUEUE) {
		rc = -EAGAIN;
		goto out;
	}
	int fd = body_fd(body, len);
	if (fd < 0) {
		rc = fd == -ENOMEM ? -ENOMEM : -EAGAIN;
		goto out;
	}
	uint64_t seq = x->seq + 1;
	exp_put_u32(&w, EXP_SUBMIT);
	exp_put_u32(&w, (uint32_t)target);
	exp_put_u32(&w, (uint32_t)route);
	exp_put_u32(&w, n_records);
	exp_put_u64(&w, seq);
	exp_put_u32(&w, (uint32_t)len);
	int e = send_frame(x->ctl, &w, fd, MSG_DONTWAIT);
	close(fd);
	if (e == -EAGAIN || e == -ENOBUFS) {
		rc = -EAGAIN;           /* the channel is full: the process is stuck */
	} else if (e == -EPIPE || e == -ECONNRESET) {
		mark_ended(x);
		rc = -EPIPE;
	} else if (e != 0) {
		mark_dead(x, "the exporter's channel failed: %s", strerror(-e));
		rc = -EPIPE;
	} else {
		x->seq = seq;
		g->q[(g->head + g->n) % TM_EXPORT_QUEUE] = (struct pending){ seq, n_records,
									     route };
		g->n++;
	}
out:
	pthread_mutex_unlock(&x->mu);
	return rc;
}

static size_t outstanding(const struct tm_exporter *x)
{
	size_t k = 0;
	for (size_t i = 0; i < x->n; i++)
		k += x->t[i].n;
	return k;
}

int tm_exporter_stop(struct tm_exporter *x, struct tm_export_report *rep, size_t n,
		     int timeout_ms)
{
	int rc = 0;
	if (x == NULL)
		return 0;
	pthread_mutex_lock(&x->mu);
	long long until = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	if (x->spawned && !x->dead) {
		/* no more submits: it finishes what it holds and exits */
		shutdown(x->ctl, SHUT_WR);
		while (outstanding(x) > 0) {
			long long left = until - now_ms();
			if (left <= 0 || read_replies(x, (int)left) != 0)
				break;
		}
		if (!x->dead && outstanding(x) > 0) {
			for (size_t i = 0; i < x->n; i++) {
				struct target *g = &x->t[i];
				if (g->n == 0)
					continue;
				/* the oldest in flight: the one the drain gave up on */
				size_t ul = strlen(g->url);
				while (ul > 0 && g->url[ul - 1] == '/')
					ul--;
				snprintf(g->last_error, sizeof(g->last_error), "%.*s%s did not "
					 "answer before the drain ended (%d ms)",
					 (int)(ul < 160 ? ul : 160), g->url,
					 route_path[g->q[g->head].route], timeout_ms);
				for (; g->n > 0; g->n--) {
					g->lost += g->q[g->head].records;
					g->head = (g->head + 1) % TM_EXPORT_QUEUE;
				}
			}
		}
		/* everything answered (or given up on): it exits by itself, at
		 * once; what is still running after the deadline is killed */
		if (x->pid > 0) {
			struct pollfd pf = { .fd = x->pidfd, .events = POLLIN };
			long long left = until - now_ms();
			int k;
			do
				k = poll(&pf, 1, left > 0 ? (int)left : 0);
			while (k < 0 && errno == EINTR);
			kill_exporter(x);
		}
	}
	for (size_t i = 0; i < n && i < x->n; i++) {
		rep[i].sent = x->t[i].sent;
		rep[i].lost = x->t[i].lost;
		snprintf(rep[i].last_error, sizeof(rep[i].last_error), "%s", x->t[i].last_error);
	}
	for (size_t i = 0; i < x->n; i++)
		if (x->t[i].lost > 0)
			rc = -1;
	if (x->ctl >= 0)
		close(x->ctl);
	if (x->pidfd >= 0)
		close(x->pidfd);
	free_targets(x);
	pthread_mutex_unlock(&x->mu);
	pthread_mutex_destroy(&x->mu);
	free(x);
	return rc;
}
