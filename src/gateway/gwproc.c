/* gwproc.c - the gateway process, from the supervisor's side (gwproc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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

#include "gwctl.h"
#include "gwproc.h"
#include "link.h"

#ifndef CAIRN_LIBEXECDIR
#define CAIRN_LIBEXECDIR "/usr/local/libexec/cairn"
#endif

#define GATEWAY_NAME "cairn-gateway"
#define MAX_ENV 80
#define CTL_FRAME_MAX (64u << 10)
/* A reply waits at most this long: the gateway's start (OpenSSL's, the CA)
 * takes milliseconds, but a loaded machine may stretch it. */
#define REPLY_MS 60000

extern char **environ;

struct gw_proc {
	pid_t pid;
	int pidfd;
	int ctl;                        /* our end of the control channel; -1 once closed */
	int chan[GW_LINK_CHANNELS];     /* our ends of the decision channels, until answered */
	struct gw_decider dec;
	struct gw_link_server *server;
	char *env[MAX_ENV + 1];
	size_t n_env;
	char *floor;
	bool ready_done;
	int ready_rc;
	char ready_err[600];
	bool stopped;
	unsigned char *buf;             /* CTL_FRAME_MAX */
};

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	if (errlen)
		snprintf(err, errlen, fmt, a, b);
	return -1;
}

/* cairn-gateway beside this executable, else the installed one. */
static int find_gateway(char *path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(path, len, "%s/" GATEWAY_NAME, self) < len &&
			    access(path, X_OK) == 0)
				return 0;
		}
	}
	if ((size_t)snprintf(path, len, "%s/" GATEWAY_NAME, CAIRN_LIBEXECDIR) >= len)
		return -1;
	return access(path, X_OK);
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

int gw_proc_start(struct gw_proc **out, char *err, size_t errlen)
{
	char path[PATH_MAX + 32], pid_arg[24];
	if (find_gateway(path, sizeof(path)) != 0)
		return fail(err, errlen, "the gateway: %s is not installed (%s)", path,
			    strerror(errno));
	struct gw_proc *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->buf = malloc(CTL_FRAME_MAX)) == NULL) {
		free(p);
		return fail(err, errlen, "the gateway: out of memory%s%s", "", "");
	}
	p->pidfd = p->ctl = -1;
	int theirs[1 + GW_LINK_CHANNELS];
	for (size_t i = 0; i < GW_LINK_CHANNELS; i++)
		p->chan[i] = -1;
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
		rc = -posix_spawn(&p->pid, path, &fa, &at, argv, environ);
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
		fail(err, errlen, "the gateway: cannot start %s: %s", path, strerror(-rc));
		p->pid = 0;
		p->stopped = true;
		gw_proc_free(p);
		return -1;
	}
	*out = p;
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
static int ok_or_error(struct gw_wire *r, bool more, char *err, size_t errlen)
{
	uint32_t ok = gw_get_u32(r);
	if (!r->bad && ok == 1 && (more || r->n == 0))
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

int gw_proc_setup(struct gw_proc *p, const struct gw_proc_box *box, char *err, size_t errlen)
{
	struct gw_wire w, r;
	int text_fd = sealed_copy(box->config_text, box->config_len);
	if (text_fd < 0)
		return fail(err, errlen, "the gateway: cannot pass box.toml: %s%s", strerror(errno),
			    "");
	gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
	gw_put_u32(&w, CTL_SETUP);
	gw_put_str(&w, box->config_path);
	size_t np = box->n_self_ports < GW_CTL_MAX_PORTS ? box->n_self_ports : GW_CTL_MAX_PORTS;
	gw_put_u32(&w, (uint32_t)np);
	for (size_t i = 0; i < np; i++)
		gw_put_u32(&w, box->self_ports[i]);
	gw_put_str(&w, box->home);
	const int fds[2] = { text_fd, box->trust_dirfd };
	int rc = gw_frame_send(p->ctl, &w, fds, 2);
	close(text_fd);
	if (rc != 0)
		return fail(err, errlen, "the gateway: cannot send it the box: %s%s", strerror(-rc),
			    "");
	if (wait_frame(p, CTL_ENV, &r, err, errlen) != 0 || ok_or_error(&r, true, err, errlen) != 0)
		return -1;
	uint32_t n = gw_get_u32(&r);
	if (r.bad || n > MAX_ENV)
		return fail(err, errlen, "the gateway process broke the control protocol%s%s", "",
			    "");
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		gw_get_str(&r, 8192, &p->env[p->n_env]);
		if (p->env[p->n_env] != NULL)
			p->n_env++;
	}
	gw_get_str(&r, 16384, &p->floor);
	/* a variable is NAME=value with a name */
	for (size_t i = 0; !r.bad && i < p->n_env; i++) {
		const char *eq = strchr(p->env[i], '=');
		if (eq == NULL || eq == p->env[i])
			r.bad = true;
	}
	if (r.bad || r.n != 0)
		return fail(err, errlen, "the gateway process broke the control protocol%s%s", "",
			    "");
	return 0;
}

const char *gw_proc_env(const struct gw_proc *p, size_t i)
{
	return i < p->n_env ? p->env[i] : NULL;
}

const char *gw_proc_floor_lines(const struct gw_proc *p)
{
	return p->floor ? p->floor : "";
}

int gw_proc_ready(struct gw_proc *p, char *err, size_t errlen)
{
	struct gw_wire r;
	if (!p->ready_done) {
		p->ready_done = true;
		p->ready_rc = wait_frame(p, CTL_READY, &r, p->ready_err, sizeof(p->ready_err));
		if (p->ready_rc == 0)
			p->ready_rc = ok_or_error(&r, false, p->ready_err, sizeof(p->ready_err));
	}
	if (p->ready_rc != 0)
		return fail(err, errlen, "%s%s", p->ready_err, "");
	return 0;
}

int gw_proc_serve(struct gw_proc *p, int fd, const char *label, const char *scope, char *err,
		  size_t errlen)
{
	struct gw_wire w, r;
	gw_wire_init(&w, p->buf, CTL_FRAME_MAX);
	gw_put_u32(&w, CTL_SERVE);
	gw_put_str(&w, label);
	gw_put_str(&w, scope ? scope : "");
	int rc = gw_frame_send(p->ctl, &w, &fd, 1);
	close(fd);
	if (rc != 0)
		return fail(err, errlen, "the gateway: cannot hand it %s's listener: %s", label,
			    strerror(-rc));
	if (wait_frame(p, CTL_SERVED, &r, err, errlen) != 0)
		return -1;
	return ok_or_error(&r, false, err, errlen);
}

int gw_proc_decide(struct gw_proc *p, struct dw_monitor *mon, const struct dw_engine *eng,
		   char *err, size_t errlen)
{
	gw_decider_local(&p->dec, mon, eng);
	int rc = gw_link_server_start(&p->dec, p->chan, GW_LINK_CHANNELS, &p->server);
	for (size_t i = 0; i < GW_LINK_CHANNELS; i++)
		p->chan[i] = -1;        /* the server's, whatever it returned */
	if (rc != 0)
		return fail(err, errlen, "the gateway's decisions: cannot start a thread: %s%s",
			    strerror(-rc), "");
	return 0;
}

int gw_proc_pidfd(const struct gw_proc *p)
{
	return p->pidfd;
}

int gw_proc_stop(struct gw_proc *p, char *err, size_t errlen)
{
	int rc = 0;
	char how[64];
	if (p->stopped)
		return 0;
	p->stopped = true;
	if (p->ctl >= 0) {
		close(p->ctl);
		p->ctl = -1;
	}
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
	return rc;
}

void gw_proc_free(struct gw_proc *p)
{
	char err[128];
	if (p == NULL)
		return;
	gw_proc_stop(p, err, sizeof(err));
	if (p->pidfd >= 0)
		close(p->pidfd);
	for (size_t i = 0; i < p->n_env; i++) {
		explicit_bzero(p->env[i], strlen(p->env[i]));
		free(p->env[i]);
	}
	free(p->floor);
	free(p->buf);
	free(p);
}
