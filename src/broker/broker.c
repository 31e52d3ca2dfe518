/* broker.c - the broker: a shim's call decided as shell:spawn and run in a
 * leaf (broker.h; docs/tools.md).
 *
 *   1. the server     brk_start, the accept thread, brk_stop
 *   2. one call       the frame, the tool, the decision
 *   3. the leaf       launch, wait, terminal, signals, the outcome */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "cause_dw.h"
#include "collector.h"
#include "contain.h"
#include "dogwood.h"
#include "frame.h"
#include "gwctl.h"
#include "gwproc.h"
#include "mediate.h"
#include "note.h"
#include "plan.h"

#define COMMAND_MAX 8192

/* Box's statuses (docs/tools.md "The shim's protocol"). */
#define ST_BOX 125                      /* the box failed, not the tool */
#define ST_REFUSED 126
#define ST_NOT_FOUND 127

/* ==== 1. the server ================================================================ */

struct call;

struct brk {
	struct brk_config cfg;
	int listener;
	pthread_t accept_thread;
	bool accepting;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	size_t n_calls;                 /* running call threads */
	struct call *calls;             /* every running call, for brk_stop */
	unsigned long long next_leaf;
	_Atomic unsigned long long st_calls, st_spawned, st_refused, st_not_found,
		st_malformed;
};

struct call {
	struct brk *b;
	int fd;                         /* the shim's connection: brk_stop shuts it down */
	struct call *next;              /* b->calls */
	struct ct_proc *leaf;           /* while its leaf runs: brk_stop kills it */
};

static void *call_main(void *arg);

/* Take c off b->calls, and count it ended. */
static void untrack(struct call *c)
{
	struct brk *b = c->b;
	pthread_mutex_lock(&b->lock);
	for (struct call **p = &b->calls; *p != NULL; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	b->n_calls--;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void *accept_main(void *arg)
{
	struct brk *b = arg;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (;;) {
		/* at most BRK_MAX_CALLS at once: the rest wait in the backlog */
		pthread_mutex_lock(&b->lock);
		while (!b->stopping && b->n_calls >= BRK_MAX_CALLS)
			pthread_cond_wait(&b->cond, &b->lock);
		bool stop = b->stopping;
		pthread_mutex_unlock(&b->lock);
		if (stop)
			break;
		int fd = accept4(b->listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			pthread_mutex_lock(&b->lock);
			stop = b->stopping;
			pthread_mutex_unlock(&b->lock);
			if (stop)
				break;          /* shut down (brk_stop) */
			/* anything else passes: out of descriptors, a peer gone
			 * before it was accepted, an LSM's refusal */
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			continue;
		}
		struct call *c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->b = b;
		c->fd = fd;
		pthread_mutex_lock(&b->lock);
		if (b->stopping) {
			pthread_mutex_unlock(&b->lock);
			close(fd);
			free(c);
			break;
		}
		b->n_calls++;
		c->next = b->calls;
		b->calls = c;
		pthread_mutex_unlock(&b->lock);
		pthread_t t;
		if (pthread_create(&t, &attr, call_main, c) != 0) {
			untrack(c);
			close(fd);
			free(c);
			usleep(10000);
		}
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

int brk_start(int listener, const struct brk_config *cfg, struct brk **out, char *err,
	      size_t errlen)
{
	struct brk *b = calloc(1, sizeof(*b));
	if (b == NULL) {
		close(listener);
		snprintf(err, errlen, "the broker: out of memory");
		return -1;
	}
	b->cfg = *cfg;
	b->listener = listener;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	int rc = pthread_create(&b->accept_thread, NULL, accept_main, b);
	if (rc != 0) {
		snprintf(err, errlen, "the broker: cannot start a thread: %s", strerror(rc));
		close(listener);
		free(b);
		return -1;
	}
	b->accepting = true;
	*out = b;
	return 0;
}

void brk_stop(struct brk *b)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	b->stopping = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	shutdown(b->listener, SHUT_RDWR);       /* wakes accept4 */
	if (b->accepting)
		pthread_join(b->accept_thread, NULL);
	/* every leaf still running is killed, its call records the outcome and
	 * ends; a call still reading its shim's frame stops reading */
	pthread_mutex_lock(&b->lock);
	for (struct call *c = b->calls; c != NULL; c = c->next) {
		if (c->leaf != NULL)
			ct_kill(c->leaf);
		shutdown(c->fd, SHUT_RD);
	}
	while (b->n_calls > 0)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	close(b->listener);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}

void brk_get_stats(struct brk *b, struct brk_stats *out)
{
	*out = (struct brk_stats){ .calls = b->st_calls, .spawned = b->st_spawned,
				   .refused = b->st_refused, .not_found = b->st_not_found,
				   .malformed = b->st_malformed };
}

/* ==== 2. one call ================================================================== */

/* Drop a last UTF-8 sequence that was cut short. */
static void utf8_trim(char *s)
{
	size_t n = strlen(s), k = n;
	while (k > 0 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
		k--;                            /* continuation bytes */
	if (k == 0)
		return;
	unsigned char lead = (unsigned char)s[k - 1];
	size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (n - (k - 1) < want)
		s[k - 1] = '\0';
}

static void answer(struct call *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A terminal frame: refused (fmt: the line the shim prints) or exit. */
static void answer(struct call *c, int status, const char *fmt, ...)
{
	char msg[COMMAND_MAX + 1024], err[160];
	struct brk_frame f = { .type = fmt ? BRK_REFUSED : BRK_EXIT, .status = status };
	if (fmt != NULL) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		/* cut short, never in a character: the frame carries UTF-8 only */
		if (n >= (int)sizeof(msg))
			utf8_trim(msg);
		f.message = msg;
	}
	(void)brk_send(c->fd, &f, NULL, 0, err, sizeof(err));
}

/* A descriptor a tool may take as its stdio: what a process can hold open
 * to read and write - a file, a pipe, a socket, a terminal or /dev/null -
 * and not a directory, an O_PATH handle or a block device. */
static const char *bad_stdio(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fstat(fd, &st) != 0)
		return "cannot be read";
	if (fl & O_PATH)
		return "is an O_PATH handle";
	if (S_ISDIR(st.st_mode))
		return "is a directory";
	if (S_ISBLK(st.st_mode))
		return "is a block device";
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) &&
	    !S_ISCHR(st.st_mode))
		return "is not a file, pipe, socket or terminal";
	return NULL;
}

/* `~`, `~/rest` under the operator's home, as Box spells paths. */
static const char *spell(const struct brk *b, const char *p, char *out, size_t len)
{
	const char *h = b->cfg.home;
	size_t hl = h ? strlen(h) : 0;
	if (hl > 1 && strncmp(p, h, hl) == 0 && (p[hl] == '\0' || p[hl] == '/'))
		snprintf(out, len, "~%s", p + hl);
	else
		snprintf(out, len, "%s", p);
	return out;
}

/* The table whose fixed arguments are the longest prefix of argv[1..]
 * among the tools named `name` (*named: there are some), or NULL. */
static const struct brk_tool *select_tool(const struct brk *b, const char *name,
					  char *const *argv, size_t argc, bool *named)
{
	const struct brk_tool *best = NULL;
	*named = false;
	for (size_t i = 0; i < b->cfg.n_tools; i++) {
		const struct brk_tool *t = &b->cfg.tools[i];
		if (strcmp(t->name, name) != 0)
			continue;
		*named = true;
		if (t->n_fixed > argc - 1)
			continue;
		bool match = true;
		for (size_t k = 0; match && k < t->n_fixed; k++)
			match = strcmp(t->fixed[k], argv[1 + k]) == 0;
		if (match && (best == NULL || t->n_fixed > best->n_fixed))
			best = t;
	}
	return best;
}

/* The first table named like the shim: its program is the call's. */
static const struct brk_tool *first_named(const struct brk *b, const char *name)
{
	for (size_t i = 0; i < b->cfg.n_tools; i++)
		if (strcmp(b->cfg.tools[i].name, name) == 0)
			return &b->cfg.tools[i];
	return NULL;
}

struct spawn_ask {
	char *const *argv;
	size_t argc;
	const char *program;            /* basename of program_path */
	const char *program_path;       /* canonical */
	const char *cwd;                /* spelled */
	const struct brk_tool *tool;    /* selected, or NULL: credential_reads left out */
};

static json_t *spawn_context(const struct brk *b, const struct spawn_ask *a,
			     const char *command)
{
	char pp[PATH_MAX + 2];
	json_t *in = json_pack("{s:s, s:s, s:s, s:I, s:s}", "command", command, "program",
			       a->program, "program_path",
			       spell(b, a->program_path, pp, sizeof(pp)), "arg_count",
			       (json_int_t)(a->argc - 1), "cwd", a->cwd);
	if (in == NULL)
		return NULL;
	if (a->argc > 1)
		json_object_set_new(in, "arg1", json_string(a->argv[1]));
	if (a->argc > 2)
		json_object_set_new(in, "arg2", json_string(a->argv[2]));
	if (a->tool != NULL && a->tool->n_cred > 0) {
		json_t *s = json_array();
		for (size_t i = 0; s != NULL && i < a->tool->n_cred; i++)
			json_array_append_new(s, json_string(a->tool->cred_reads[i]));
		json_object_set_new(in, "credential_reads", s);
	}
	return json_pack("{s:o}", "input", in);
}


/* Decide shell:spawn for a; the record emitted.  1 permit, 0 deny (the
 * denial's text in text), and *ticket for the outcome. */
static int decide_spawn(struct brk *b, const struct spawn_ask *a, char *text, size_t textlen,
			uint64_t *ticket)
{
	char command[COMMAND_MAX], err[256];
	med_command_text((const char *const *)a->argv, a->argc, command, sizeof(command));
	struct dw_request *r = dw_request_new();
	struct dw_decision d = { 0 };
	struct tm_decision td = { .subject = TM_SUBJECT_PROCESS, .program = a->program,
				  .n_args = a->argc - 1, .args = (const char *const *)a->argv + 1,
				  .cwd = a->cwd };
	int rc = r == NULL ? -ENOMEM : 0;
	*ticket = 0;
	json_t *ctx = rc == 0 ? spawn_context(b, a, command) : NULL;
	char *cj = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
	json_decref(ctx);
	if (rc == 0 && cj == NULL)
		rc = -EINVAL;   /* a word that is not UTF-8: refused as a fault */
	if (rc == 0 &&
	    (dw_request_set_principal(r, "Box::Agent", "self", 4) != 0 ||
	     dw_request_set_resource(r, "Box::Resource", "unused", 6) != 0 ||
	     dw_request_set_action(r, "Box::Action", "shell:spawn", 11) != 0 ||
	     dw_request_set_context_json(r, b->cfg.eng, cj, strlen(cj), err, sizeof(err)) != 0 ||
	     dw_request_set_subject(r, command) != 0))
		rc = -EINVAL;
	free(cj);
	tm_trace_begin(&td.trace, NULL);
	if (rc == 0 && b->cfg.tm != NULL) {
		struct tm_note n = { .trace = td.trace };
		char nt[TM_NOTE_MAX];
		snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(b->cfg.tm));
		tm_note_format(&n, nt);
		(void)dw_request_set_note(r, nt);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	td.time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (rc == 0)
		rc = dw_decide(b->cfg.mon, r, &d, ticket);
	else
		d.verdict = DW_DENY, d.cause = DW_CAUSE_INTERNAL_FAULT;
	td.action = "shell:spawn";
	td.resource = command;
	bool allow = tm_decision_of_dw(&td, rc, &d);
	tm_emit_dw(b->cfg.tm, &td, &d);
	if (!allow)
		tm_dw_denial_text(&d, command, text, textlen);
	dw_decision_clear(&d);
	dw_request_free(r);
	return allow;
}

/* The outcome of ticket, durable before the shim hears of it (docs/
 * tools.md "The history"): status, or ::error when < 0. */
static void record_outcome(struct brk *b, uint64_t ticket, int status)
{
	char err[160];
	const struct dw_input_attr out = { .name = "status", .kind = DW_ATTR_LONG, .i = status };
	if (ticket == 0)
		return;
	if (status >= 0)
		(void)dw_record_typed(b->cfg.mon, ticket, "response", &out, 1, err, sizeof(err));
	else
		(void)dw_record_typed(b->cfg.mon, ticket, "error", NULL, 0, err, sizeof(err));
	(void)dw_sync(b->cfg.mon);
}

/* ==== 3. the leaf ================================================================== */

/* The leaf's environment: the plan's, PWD the call's cwd. */
static const char **leaf_env(const struct ct_spec *s, const char *cwd, char **pwd)
{
	size_t n = 0;
	while (s->envp[n] != NULL)
		n++;
	const char **e = calloc(n + 2, sizeof(*e));
	if (e == NULL || asprintf(pwd, "PWD=%s", cwd) < 0) {
		free(e);
		*pwd = NULL;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(s->envp[i], "PWD=", 4) != 0)
			e[k++] = s->envp[i];
	e[k++] = *pwd;
	e[k] = NULL;
	return e;
}

static void tty_to(int fd, pid_t pgid)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	(void)tcsetpgrp(fd, pgid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

struct run {
	struct ct_spec spec;
	struct ct_proc proc;
	pid_t shim_pgid;                /* > 0: the shim's group owned the terminal */
	bool stopped;
	unsigned long long gw_id;       /* the leaf's listener, served by the gateway */
};

static void kill_leaf(struct run *r);

/* Wait for the leaf, forwarding the shim's signals; the shim gone kills it.
 * Returns its wait status, or -1 with err. */
static int wait_leaf(struct call *c, struct run *r, struct ct_error *err)
{
	bool conn_open = true, ctl_open = true;
	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = r->proc.pidfd, .events = POLLIN },
			{ .fd = ctl_open ? r->proc.ctl_fd : -1, .events = POLLIN },
			{ .fd = conn_open ? c->fd : -1, .events = POLLIN },
		};
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err->msg, sizeof(err->msg), "poll: %s", strerror(errno));
			kill_leaf(r);
			return -1;
		}
		if (pf[0].revents) {
			int st = 0;
			return ct_wait(&r->proc, 0, &st, err) == 0 ? st : -1;
		}
		if (pf[1].revents) {
			int sig = ct_event(&r->proc);
			if (sig < 0) {
				ctl_open = false;
			} else if (sig > 0) {
				/* job control: the tool stopped at the terminal, so
				 * its shim stops too, the terminal back to it; the
				 * shim's SIGCONT (fg) continues the tool */
				r->stopped = true;
				if (r->shim_pgid > 0) {
					tty_to(r->spec.tty_fd, r->shim_pgid);
					kill(-r->shim_pgid, SIGTSTP);
				}
			}
		}
		if (pf[2].revents) {
			struct brk_frame f;
			char why[200];
			int k = brk_recv(c->fd, 0, &f, NULL, why, sizeof(why));
			if (k == 1 && f.type == BRK_SIGNAL) {
				if (f.signal == SIGCONT && r->stopped) {
					r->stopped = false;
					ct_continue(&r->spec, &r->proc);
				} else {
					ct_signal(&r->proc, f.signal);
				}
			} else {
				/* the shim went away (or spoke out of turn): nobody
				 * waits for the tool any more */
				conn_open = false;
				ct_kill(&r->proc);
			}
			brk_frame_clear(&f);
		}
	}
}

/* A leaf on the host's network (network.contain_egress = false) is a
 * declared downgrade, recorded per launch as Box records it: egress:native
 * (no gateway, no net:connect or http:request decision, no credential). */
static void record_native(struct brk *b, const struct brk_tool *t, const struct brk_frame *f,
			  const char *cwd)
{
	char command[COMMAND_MAX], spelled[PATH_MAX + 2];
	if (b->cfg.tm == NULL)
		return;
	med_command_text((const char *const *)f->argv, f->argc, command, sizeof(command));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm_decision td = {
		.time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, .action = "egress:native",
		.resource = command, .permit = true, .cause = TM_PERMITTED,
		.rule = "egress:native", .subject = TM_SUBJECT_PROCESS,
		.program = strrchr(t->plan->program, '/') + 1, .n_args = f->argc - 1,
		.args = (const char *const *)f->argv + 1,
		.cwd = spell(b, cwd, spelled, sizeof(spelled)),
	};
	tm_trace_begin(&td.trace, NULL);
	tm_emit(b->cfg.tm, tm_record_decision(&td));
}

/* c's leaf, for brk_stop to kill (NULL: it ended). */
static void track(struct call *c, struct ct_proc *leaf)
{
	struct brk *b = c->b;
	pthread_mutex_lock(&b->lock);
	c->leaf = leaf;
	if (leaf != NULL && b->stopping)
		ct_kill(leaf);
	pthread_mutex_unlock(&b->lock);
}

/* Kill the leaf and reap its reaper (an error after its launch). */
static void kill_leaf(struct run *r)
{
	struct ct_error e;
	int st;
	ct_kill(&r->proc);
	(void)ct_wait(&r->proc, -1, &st, &e);
}

/* Process group pgid is the agent's: its leader lives in the agent's pid
 * namespace.  (Not the shim's SO_PEERCRED: the mediator connects for it.) */
static bool agent_group(struct brk *b, pid_t pgid)
{
	char p[64];
	struct stat st, ns;
	/* The agent's namespace, read from its workload once that has exec'd:
	 * before, it is not dumpable, and its ns/ links are closed to an
	 * unprivileged supervisor. */
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)b->cfg.agent_pid);
	if (b->cfg.agent_pid <= 0 || stat(p, &ns) != 0)
		return false;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pgid);
	return stat(p, &st) == 0 && st.st_dev == ns.st_dev && st.st_ino == ns.st_ino;
}

/* Start the leaf of tool t for frame f in cwd; wait; its wait status, or
 * -1 with the reason in err (nothing left running). */
static int run_leaf(struct call *c, const struct brk_tool *t, struct brk_frame *f,
		    const char *cwd, struct ct_error *err)
{
	struct brk *b = c->b;
	struct run r = { .spec = t->plan->spec };
	char cg[160], *pwd = NULL;
	const char **argv = calloc(f->argc + 1, sizeof(*argv));
	const char **envp = leaf_env(&t->plan->spec, cwd, &pwd);
	int status = -1;

	if (argv == NULL || envp == NULL) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		goto out;
	}
	argv[0] = t->plan->spec.argv[0];        /* the program the run judged */
	for (size_t i = 1; i < f->argc; i++)
		argv[i] = f->argv[i];
	r.spec.argv = argv;
	r.spec.envp = envp;
	r.spec.cwd = cwd;
	for (int i = 0; i < 3; i++)
		r.spec.stdio[i] = f->fds[i];
	/* The terminal, when the shim's group is its foreground: the tool
	 * reads it and gets its ^C, then hands it back.  Only from a group of
	 * the agent's: a shim cannot take the terminal from the operator's
	 * shell when the box runs in the background. */
	pid_t pg = f->foreground && isatty(f->fds[0]) ? tcgetpgrp(f->fds[0]) : -1;
	if (pg > 0 && agent_group(b, pg)) {
		r.spec.tty_fd = f->fds[0];
		r.spec.tty_owner = pg;
		r.shim_pgid = pg;
	}
	pthread_mutex_lock(&b->lock);
	unsigned long long n = ++b->next_leaf;
	pthread_mutex_unlock(&b->lock);
	snprintf(cg, sizeof(cg), "%s-t%llu", b->cfg.cgroup_prefix, n);
	r.spec.cgroup_name = cg;
	r.spec.limits_mode = b->cfg.host->limits_mode;
	if (ct_launch(&r.spec, b->cfg.host, &r.proc, err) < 0)
		goto out;
	track(c, &r.proc);
	/* its own listener, its own credential scope (docs/tools.md) */
	char why[700];
	for (size_t k = 0; k < r.proc.n_listen; k++) {
		int lfd = r.proc.listen_fds[k];
		r.proc.listen_fds[k] = -1;
		if (b->cfg.gw == NULL)
			close(lfd);
		if (b->cfg.gw == NULL ||
		    gw_proc_serve_leaf(b->cfg.gw, lfd, t->plan->label, t->label, &r.gw_id, why,
				       sizeof(why)) != 0) {
			snprintf(err->msg, sizeof(err->msg), "the gateway cannot serve the tool: %s",
				 b->cfg.gw ? why : "no gateway");
			kill_leaf(&r);
			goto done;
		}
	}
	atomic_fetch_add(&b->st_spawned, 1);
	if (r.spec.share_net)
		record_native(b, t, f, cwd);
	if (ct_start(&r.spec, &r.proc, err) < 0) {
		kill_leaf(&r);
		goto done;
	}
	status = wait_leaf(c, &r, err);
done:
	if (r.shim_pgid > 0 && tcgetpgrp(r.spec.tty_fd) != r.shim_pgid)
		tty_to(r.spec.tty_fd, r.shim_pgid);
	if (r.gw_id != 0)
		gw_proc_unserve_leaf(b->cfg.gw, r.gw_id);
	track(c, NULL);
	ct_release(&r.proc);
out:
	free(argv);
	free(envp);
	free(pwd);
	return status;
}

static void handle(struct call *c)
{
	struct brk *b = c->b;
	struct brk_frame f;
	char why[512];
	int ver;

	int k = brk_recv(c->fd, BRK_FRAME_MS, &f, &ver, why, sizeof(why));
	if (k == 0)
		return;                         /* connected and left */
	atomic_fetch_add(&b->st_calls, 1);
	if (k == BRK_E_VERSION) {
		answer(c, ST_BOX, "cairn: %s", why);
		return;
	}
	if (k < 0 || f.type != BRK_SPAWN) {
		/* a bad frame ends this connection and nothing else */
		atomic_fetch_add(&b->st_malformed, 1);
		if (k == 1)
			snprintf(why, sizeof(why), "the first frame must be a spawn");
		answer(c, ST_BOX, "cairn: the shim's call is malformed: %s", why);
		brk_frame_clear(&f);
		return;
	}
	for (int i = 0; i < 3; i++) {
		const char *bad = bad_stdio(f.fds[i]);
		if (bad != NULL) {
			atomic_fetch_add(&b->st_malformed, 1);
			answer(c, ST_BOX, "cairn: %s: descriptor %d %s; a tool takes a file, "
			       "pipe, socket or terminal", f.argv[0], i, bad);
			brk_frame_clear(&f);
			return;
		}
	}
	const char *name = f.argv[0];
	const struct brk_tool *any = first_named(b, name);
	if (any == NULL || strchr(name, '/') != NULL) {
		atomic_fetch_add(&b->st_not_found, 1);
		answer(c, ST_NOT_FOUND, "cairn: %s: command not found (no tool of this box has "
		       "that name)", name);
		brk_frame_clear(&f);
		return;
	}
	const char *program = any->plan->program;
	const char *base = strrchr(program, '/') + 1;
	/* the identity the run judged, or nothing runs */
	struct stat st;
	if (stat(program, &st) != 0 || st.st_dev != any->plan->program_st.st_dev ||
	    st.st_ino != any->plan->program_st.st_ino) {
		atomic_fetch_add(&b->st_refused, 1);
		answer(c, ST_REFUSED, "cairn: %s: %s changed since the run judged it. A spawn acts "
		       "on the identity the run approved, so it is refused", name, program);
		brk_frame_clear(&f);
		return;
	}
	bool named;
	const struct brk_tool *t = select_tool(b, name, f.argv, f.argc, &named);
	/* the call's cwd where the leaf shows it, else the table's workspace */
	const char *cwd = t != NULL && plan_shows(t->plan, f.cwd) ? f.cwd
			  : t != NULL ? t->plan->spec.cwd : f.cwd;
	char spelled[PATH_MAX + 2], text[COMMAND_MAX + 512];
	const struct spawn_ask a = { .argv = f.argv, .argc = f.argc, .program = base,
				     .program_path = program,
				     .cwd = spell(b, f.cwd, spelled, sizeof(spelled)), .tool = t };
	uint64_t ticket;
	if (!decide_spawn(b, &a, text, sizeof(text), &ticket)) {
		atomic_fetch_add(&b->st_refused, 1);
		record_outcome(b, ticket, -1);
		answer(c, ST_REFUSED, "cairn: %s", text);
		brk_frame_clear(&f);
		return;
	}
	if (t == NULL) {
		/* configuration only narrows a permit (docs/tools.md "The decision") */
		atomic_fetch_add(&b->st_refused, 1);
		record_outcome(b, ticket, -1);
		answer(c, ST_REFUSED, "cairn: %s: no tool runs %s: no `[tool.<name>] command` "
		       "matches this program and its leading arguments", name, program);
		brk_frame_clear(&f);
		return;
	}
	struct ct_error cterr = { .msg = "" };
	int status = run_leaf(c, t, &f, cwd, &cterr);
	if (status < 0) {
		record_outcome(b, ticket, -1);
		answer(c, ST_BOX, "cairn: %s: the tool %s could not run: %s", name, t->plan->label,
		       cterr.msg[0] ? cterr.msg : "the sandbox failed");
	} else {
		int code = ct_exit_code(status);
		record_outcome(b, ticket, code);
		answer(c, code, NULL);
	}
	brk_frame_clear(&f);
}

static void *call_main(void *arg)
{
	struct call *c = arg;
	handle(c);
	untrack(c);
	close(c->fd);
	free(c);
	return NULL;
}
