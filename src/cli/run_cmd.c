/* run_cmd.c - `cairn run --config box.toml [--] [ARGS...]`: the supervisor.
 *
 * In order (docs/security.md "Order of a run"): harden this process; start
 * the gateway process (it makes the CA meanwhile); read box.toml as an
 * authority source; load and validate the policy; open and lock the box
 * directory and its history; tell the gateway the box (its phantoms come
 * back); check what the host offers; plan the agent's sandbox and disclose
 * its grants; launch, wait for the CA's certificate, hand the gateway the
 * sandbox's listener and answer its decisions; then start the workload,
 * wait, forwarding signals, stop the gateway, and leave with the workload's
 * status.
 *
 * Exit: the workload's status, 128 + N when a signal N ended it, 1 for any
 * box error or refusal, 2 for a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "boxconf.h"
#include "boxdir.h"
#include "cli.h"
#include "collector.h"
#include "contain.h"
#include "dogwood.h"
#include "gwproc.h"
#include "observe.h"
#include "mediate.h"
#include "plan.h"
#include "run_tools.h"

#define RUN_BOX_ERROR 1
#define RUN_USAGE 2
#define PROXY_PORT 3128                 /* inside the box's own network namespace */
#define TELEMETRY_PORT 4318             /* the agent receiver: OTLP/HTTP's own port */
#define AUTHORITY_MAX ((off_t)4 << 20)
#define GW_ENV_MAX 80

static void run_usage(void)
{
	fputs("usage: cairn run --config FILE [--decisions deny|all|none] [--no-records] [--] [ARGS...]\n"
	      "  run the [agent] of box.toml in its sandbox; ARGS are appended to its command\n"
	      "  --decisions  which decisions to show on stderr as they happen (default: deny)\n"
	      "  --no-records  write no decision records (the history still keeps every\n"
	      "                decision; for measuring what records cost)\n",
	      stderr);
}

/* Hardening before anything else, each step read back (docs/security.md
 * "Order of a run", step 1). */
static int harden(void)
{
	struct rlimit r = { 0, 0 };
	if (setrlimit(RLIMIT_CORE, &r) < 0 || getrlimit(RLIMIT_CORE, &r) < 0 || r.rlim_cur != 0 ||
	    r.rlim_max != 0) {
		fprintf(stderr, "cairn: refusing to run: RLIMIT_CORE could not be set to 0\n");
		return -1;
	}
	if (prctl(PR_SET_DUMPABLE, 0) < 0 || prctl(PR_GET_DUMPABLE) != 0) {
		fprintf(stderr, "cairn: refusing to run: PR_SET_DUMPABLE 0 reported success but is "
				"not in effect; refusing to serve secrets from readable memory\n");
		return -1;
	}
	return 0;
}

/* Read an authority source (box.toml, the policy): canonical path, no link
 * at the end, a regular file with one name.  Box's texts on refusal. */
static char *read_authority(const char *kind, const char *path, char **canon, size_t *len)
{
	char *real = realpath(path, NULL);
	if (!real) {
		fprintf(stderr, "cairn: error: cannot read %s file %s: %s\n", kind, path,
			strerror(errno));
		return NULL;
	}
	int fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "cairn: error: cannot read %s file %s: %s\n", kind, real,
			strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "cairn: error: %s source %s is not a regular file\n", kind, real);
		goto fail;
	}
	if (st.st_nlink != 1) {
		fprintf(stderr, "cairn: error: %s source %s has more than one filesystem name\n",
			kind, real);
		goto fail;
	}
	if (st.st_size > AUTHORITY_MAX) {
		fprintf(stderr, "cairn: error: %s source %s is larger than 4 MiB\n", kind, real);
		goto fail;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (buf && n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (!buf || n != (size_t)st.st_size) {
		fprintf(stderr, "cairn: error: %s source %s changed identity while cairn prepared "
				"the run\n", kind, real);
		free(buf);
		goto fail;
	}
	buf[n] = '\0';
	close(fd);
	*canon = real;
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(real);
	return NULL;
}

/* Load and validate the policy as the box will (Box's action schema and its
 * load refusals); any error refuses the box with Box's message. */
static int check_policy(const char *path, const char *text, size_t len, const char *home,
			struct dw_engine **keep, char *why, size_t whylen)
{
	struct dw_input in = { .file = path, .text = text, .len = len,
			       .format = policy_format(path) };
	struct dw_engine_config cfg = { .policies = &in, .n_policies = 1,
					.flags = DW_VALIDATE | DW_BOX_RULES, .home = home };
	struct dw_diags *diags = dw_diags_new();
	struct dw_engine *eng = NULL;
	if (!diags) {
		fprintf(stderr, "cairn: error: out of memory\n");
		return -1;
	}
	int r = dw_engine_new(&cfg, &eng, diags);
	if (r != 0) {
		struct dw_diagnostic d = { 0 };
		for (size_t i = 0; i < dw_diags_count(diags); i++) {
			dw_diags_get(diags, i, &d);
			if (d.severity == DW_DIAG_ERROR)
				break;
		}
		/* Box's line, word for word (the refusal right after `will not
		 * load: `); where it is follows, with every other diagnostic */
		fprintf(stderr, "cairn: error: policy file %s will not load: %s\n", path,
			d.message ? d.message : strerror(-r));
		snprintf(why, whylen, "policy file %s will not load: %s", path,
			 d.message ? d.message : strerror(-r));
		render_diags_human(stderr, diags);
	} else {
		/* Warnings (an uncertain rule) are shown, and the box runs. */
		render_diags_human(stderr, diags);
	}
	if (r == 0 && keep)
		*keep = eng;
	else
		dw_engine_free(eng);
	dw_diags_free(diags);
	return r == 0 ? 0 : -1;
}

/* The box's durable history, private/history (0700): every decision of this
 * run and of the runs before it. */
static int open_history(const struct boxdir *bd, const struct dw_engine *eng,
			struct dw_monitor **out)
{
	char dir[PATH_MAX + 32], err[512];
	if (mkdirat(bd->private_fd, "history", 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "cairn: error: cannot create %s/private/history: %s\n", bd->path,
			strerror(errno));
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/private/history", bd->path);
	struct dw_monitor_config mc = { .history_dir = dir };
	int r = dw_monitor_new(eng, &mc, out, err, sizeof(err));
	if (r != 0) {
		fprintf(stderr, "cairn: error: the box's history %s will not open: %s\n", dir, err);
		return -1;
	}
	return 0;
}

/* A box without a policy decides too: an engine with no rules denies every
 * request (Box's default-deny), and the decisions stay in memory. */
static int no_policy(const char *home, struct dw_engine **eng, struct dw_monitor **mon)
{
	struct dw_engine_config cfg = { .flags = DW_VALIDATE | DW_BOX_RULES, .home = home };
	struct dw_monitor_config mc = { 0 };
	char err[512];
	struct dw_diags *diags = dw_diags_new();
	int r = diags ? dw_engine_new(&cfg, eng, diags) : -ENOMEM;
	dw_diags_free(diags);
	if (r == 0 && dw_monitor_new(*eng, &mc, mon, err, sizeof(err)) != 0)
		r = -1;
	if (r != 0)
		fprintf(stderr, "cairn: error: cannot start the decision engine\n");
	return r == 0 ? 0 : -1;
}

/* The box's records (docs/records.md "Where records go"): the declared file
 * targets, or the default private/telemetry/records.jsonl; the run's first
 * control record.  0, or -1 with the refusal printed. */
static int open_records(const struct box_config *cfg, const struct boxdir *bd,
			enum tm_live live, bool files_on, struct tm_collector **out)
{
	struct tm_file_target files[16];
	struct tm_otlp_config otlp[16];
	char labels[32][96], deflt[PATH_MAX + 48];
	size_t n = 0, n_otlp = 0;
	for (size_t i = 0; i < cfg->n_telemetry && n + n_otlp < 16; i++) {
		const struct box_telemetry *t = &cfg->telemetry[i];
		unsigned inc = 0;
		inc |= t->include & BOX_SIG_DENY ? TM_SIG_DENY : 0;
		inc |= t->include & BOX_SIG_PERMIT ? TM_SIG_PERMIT : 0;
		inc |= t->include & BOX_SIG_TRACE ? TM_SIG_TRACE : 0;
		inc |= t->include & BOX_SIG_KERNEL ? TM_SIG_KERNEL : 0;
		char *label = labels[n + n_otlp];
		snprintf(label, sizeof(labels[0]), "[telemetry.%s]", t->label);
		if (t->kind == BOX_TELEMETRY_FILE) {
			files[n++] = (struct tm_file_target){ label, t->destination.resolved, -1, inc };
			continue;
		}
		/* the secret from the operator's environment, as Box resolves
		 * both env:// and secret:// (never echoed) */
		const char *secret = NULL;
		if (t->has_secret) {
			const char *ref = t->secret_ref, *name = strstr(ref, "://");
			secret = name ? getenv(name + 3) : NULL;
			if (secret == NULL || secret[0] == '\0') {
				fprintf(stderr, "cairn: error: %s secret.ref %s: the variable is not set "
						"in cairn's environment\n", label, ref);
				return -1;
			}
		}
		otlp[n_otlp++] = (struct tm_otlp_config){
			{ label, t->destination.resolved, t->has_secret ? t->secret_header : NULL,
			  secret }, inc };
	}
	if (!files_on)
		n = 0;          /* --no-records: the live lines only */
	else if (cfg->n_telemetry == 0) {
		snprintf(deflt, sizeof(deflt), "%s/private/telemetry/records.jsonl", bd->path);
		files[n++] = (struct tm_file_target){ NULL, deflt, bd->private_fd,
						      TM_SIG_DENY | TM_SIG_PERMIT | TM_SIG_TRACE |
						      TM_SIG_KERNEL };
	}
	if (!files_on)
		n_otlp = 0;
	const struct tm_config tc = { .box_id = bd->id, .n_files = n, .files = files,
				      .n_otlp = n_otlp, .otlp = otlp,
				      .live = live, .live_fd = STDERR_FILENO,
				      .resource_env = getenv("OTEL_RESOURCE_ATTRIBUTES") };
	char err[700];
	if (tm_collector_open(&tc, out, err, sizeof(err)) != 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		return -1;
	}
	for (size_t i = 0; i < n_otlp; i++)
		fprintf(stderr, "cairn: %s records to %s (OTLP/HTTP, best effort: a slow or dead "
				"collector loses records, never a decision; the stop says how many)\n",
			otlp[i].target.label, otlp[i].target.url);
	tm_control(*out, TM_BOX_STARTED, cfg->name, NULL, NULL);
	return 0;
}

/* The mediator's start-up probe (mediate.h), run on a thread of its own
 * beside the steps before the launch. */
struct probe_job {
	pthread_t thread;
	bool started, joined;
	int rc;
	char err[768];
};

static void *probe_main(void *arg)
{
	struct probe_job *j = arg;
	j->rc = med_probe(j->err, sizeof(j->err));
	return NULL;
}

static void probe_start(struct probe_job *j)
{
	j->started = pthread_create(&j->thread, NULL, probe_main, j) == 0;
	if (!j->started)
		j->rc = med_probe(j->err, sizeof(j->err));      /* no thread: in line */
}

/* Its result: 0, or -1 with j->err.  Idempotent. */
static int probe_join(struct probe_job *j)
{
	if (j->started && !j->joined) {
		pthread_join(j->thread, NULL);
		j->joined = true;
	}
	return j->rc;
}

/* The policy's subject in control records, as Box names it: the file's
 * name, or "<no authored policy>". */
static const char *policy_subject(const char *path)
{
	if (path == NULL)
		return "<no authored policy>";
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* box_stopped, with what was lost so far; the writer then finishes while
 * the history closes (close_records_wait). */
static void close_records(struct tm_collector *tm, const char *name, const char *failure)
{
	if (tm == NULL)
		return;
	struct tm_stats st;
	char detail[128] = "";
	tm_collector_stats(tm, &st);
	if (st.lost > 0)
		snprintf(detail, sizeof(detail), "%llu records lost", (unsigned long long)st.lost);
	if (st.relay_lost > 0) {
		size_t n = strlen(detail);
		snprintf(detail + n, sizeof(detail) - n, "%s%llu agent payloads lost",
			 n ? ", " : "", (unsigned long long)st.relay_lost);
	}
	tm_control(tm, TM_BOX_STOPPED, name, failure, detail[0] ? detail : NULL);
	tm_collector_finish(tm);
}

/* Everything written and synced; what was lost said. */
static void close_records_wait(struct tm_collector *tm)
{
	if (tm == NULL)
		return;
	struct tm_stats st;
	char err[700];
	int r = tm_collector_close_stats(tm, &st, err, sizeof(err));
	if (r != 0)
		fprintf(stderr, "cairn: warning: %s\n", err);
	else if (st.lost > 0)
		fprintf(stderr, "cairn: warning: %llu decision records were lost (the history "
			"keeps every decision: cairn records show rebuilds them)\n",
			(unsigned long long)st.lost);
	if (r == 0 && st.relay_lost > 0)
		fprintf(stderr, "cairn: warning: %llu of the agent's %llu telemetry payloads did "
			"not reach every records file (best effort, as in Box)\n",
			(unsigned long long)st.relay_lost, (unsigned long long)st.relayed);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for the workload, forwarding signals.  SIGINT and SIGQUIT go to its
 * group; SIGTERM and SIGHUP stop it: SIGTERM, one second, then SIGKILL. */
/* The workload stopped (Ctrl-Z, or a terminal read in the background): take
 * the terminal back, stop as its job, and when the shell continues us, give
 * the terminal back and continue the workload (sudo's pattern). */
static void stop_with(const struct ct_spec *spec, struct ct_proc *p, int sig)
{
	if (spec->tty_fd >= 0 && tcgetpgrp(spec->tty_fd) == p->workload_pid) {
		sigset_t set, old;
		sigemptyset(&set);
		sigaddset(&set, SIGTTOU);
		sigprocmask(SIG_BLOCK, &set, &old);
		tcsetpgrp(spec->tty_fd, getpgrp());
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	/* Stop as the workload did; a job of an orphaned group is not stopped by
	 * SIGTSTP (nobody could continue it), and then we go straight on. */
	raise(sig == SIGSTOP ? SIGSTOP : SIGTSTP);
	ct_continue(spec, p);
}

static int supervise(const struct ct_spec *spec, struct ct_proc *p, int sfd,
		     struct gw_proc *gw, int *status, struct ct_error *err)
{
	long long kill_at = -1;
	bool ctl_open = true;
	for (;;) {
		struct pollfd pf[3 + 8];
		size_t n = 0;
		pf[n++] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		/* after the reaper hangs up, only its pidfd matters (no busy loop) */
		pf[n++] = (struct pollfd){ .fd = ctl_open ? p->ctl_fd : -1, .events = POLLIN };
		/* the gateway: its first connection starts it, its end ends us */
		size_t n_gw = gw_proc_pollfds(gw, pf + n, 8);
		n += n_gw;
		int timeout = -1;
		if (kill_at >= 0) {
			long long left = kill_at - now_ms();
			timeout = left < 0 ? 0 : (int)left;
		}
		int r = poll(pf, n, timeout);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r == 0 && kill_at >= 0) {
			ct_kill(p);
			kill_at = -1;
			continue;
		}
		if (r <= 0)
			continue;
		if (pf[0].revents)
			return ct_wait(p, 0, status, err);
		for (size_t k = 3; k < 3 + n_gw; k++) {
			if (!pf[k].revents)
				continue;
			/* the only route out cannot serve: the box ends, not degraded */
			char why[700];
			if (gw_proc_event(gw, why, sizeof(why)) != 0) {
				snprintf(err->msg, sizeof(err->msg), "%s", why);
				return -1;
			}
			break;
		}
		if (pf[2].revents) {
			int sig = ct_event(p);
			if (sig > 0)
				stop_with(spec, p, sig);
			else if (sig < 0)
				ctl_open = false;
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				int sig = (int)si.ssi_signo;
				if (sig == SIGTERM || sig == SIGHUP) {
					ct_signal(p, SIGTERM);
					if (kill_at < 0)
						kill_at = now_ms() + 1000;
				} else {
					ct_signal(p, sig);
				}
			}
		}
	}
}

int cmd_run(int argc, char **argv)
{
	const char *config = NULL;
	enum tm_live live = TM_LIVE_DENY;
	bool records = true;
	int i = 1;
	for (; i < argc; i++) {
		const char *dv = strcmp(argv[i], "--decisions") == 0 ? (i + 1 < argc ? argv[++i] : "")
				 : strncmp(argv[i], "--decisions=", 12) == 0 ? argv[i] + 12 : NULL;
		if (dv != NULL) {
			if (strcmp(dv, "deny") == 0) {
				live = TM_LIVE_DENY;
			} else if (strcmp(dv, "all") == 0) {
				live = TM_LIVE_ALL;
			} else if (strcmp(dv, "none") == 0) {
				live = TM_LIVE_NONE;
			} else {
				fprintf(stderr, "cairn: error: invalid value '%s' for '--decisions "
						"<WHICH>': write deny, all or none\n", dv);
				run_usage();
				return RUN_USAGE;
			}
		} else if (strcmp(argv[i], "--no-records") == 0) {
			records = false;
		} else if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "cairn: error: a value is required for '--config <FILE>'\n");
				run_usage();
				return RUN_USAGE;
			}
			config = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			config = argv[i] + 9;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			run_usage();
			return 0;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (config == NULL && argv[i][0] == '-') {
			fprintf(stderr, "cairn: error: unexpected argument '%s' found\n", argv[i]);
			run_usage();
			return RUN_USAGE;
		} else {
			break;          /* the workload's own arguments, hyphens and all */
		}
	}
	if (!config) {
		fprintf(stderr, "cairn: error: the following required arguments were not provided: "
				"--config <FILE>\n");
		run_usage();
		return RUN_USAGE;
	}
	const char *const *trailing = (const char *const *)argv + i;
	size_t n_trailing = (size_t)(argc - i);

	if (harden() < 0)
		return RUN_BOX_ERROR;

	/* The gateway process starts on the sandbox's first connection
	 * (gwproc.h); what the sandbox needs of it is made here. */
	struct gw_proc *gw = NULL;
	char err[1024];
	if (gw_proc_new(&gw, err, sizeof(err)) != 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		return RUN_BOX_ERROR;
	}

	int rc = RUN_BOX_ERROR;
	char *cfg_path = NULL, *cfg_text = NULL, *pol_path = NULL, *pol_text = NULL;
	struct box_config *cfg = NULL;
	struct plan *plan = NULL;
	struct dw_engine *eng = NULL;
	struct dw_monitor *mon = NULL;
	struct boxdir bd = { .fd = -1, .private_fd = -1, .lock_fd = -1 };
	bool have_bd = false;
	struct tm_collector *tm = NULL;
	const char *failure = "the box did not start";
	bool mediated = false;
	struct probe_job probe = { .rc = -1 };
	struct run_tools tools = { .listener = -1 };
	char why[700];
	size_t len, cfg_len;

	struct passwd *pw = getpwuid(getuid());
	if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/') {
		fprintf(stderr, "cairn: error: HOME is not set\n");
		gw_proc_free(gw);
		return RUN_BOX_ERROR;
	}
	char *home = strdup(pw->pw_dir);
	if (!home) {
		gw_proc_free(gw);
		return RUN_BOX_ERROR;
	}

	if (!(cfg_text = read_authority("configuration", config, &cfg_path, &cfg_len)))
		goto out;
	struct box_config_error cerr;
	if (box_config_load(cfg_path, cfg_text, cfg_len, home, &cfg, &cerr) != 0) {
		fprintf(stderr, "cairn: error: cannot parse config file %s: %s: %s\n", cfg_path,
			cerr.where, cerr.msg);
		goto out;
	}
	if (box_config_check_workload(cfg, &cerr) != 0) {
		fprintf(stderr, "cairn: error: %s\n", cerr.msg);
		goto out;
	}
	/* The mediator decides the agent's files and launches: on by default
	 * with a policy (docs/mediator.md).  Its probe refuses a host that
	 * would leave it blind. */
	mediated = cfg->mediate == BOX_MEDIATE_ON ||
		   (cfg->mediate == BOX_MEDIATE_DEFAULT && cfg->policy.authored != NULL);
	if (boxdir_open(cfg->box_dir.resolved, cfg->name, &bd, err, sizeof(err)) < 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		goto out;
	}
	have_bd = true;
	/* The records open with the box (box_started), before the policy is
	 * installed, so a policy that will not load is a record too (Box's
	 * order: docs/records.md "Control records"). */
	if ((records || live != TM_LIVE_NONE) && open_records(cfg, &bd, live, records, &tm) < 0)
		goto out;
	if (cfg->policy.authored) {
		snprintf(why, sizeof(why), "the policy file cannot be read");
		if (!(pol_text = read_authority("policy", cfg->policy.resolved, &pol_path, &len)) ||
		    check_policy(pol_path, pol_text, len, home, &eng, why, sizeof(why)) < 0) {
			tm_control(tm, TM_POLICY_REFUSED, policy_subject(cfg->policy.resolved), why,
				   NULL);
			failure = why;
			goto out;
		}
	}
	tm_control(tm, TM_POLICY_INSTALLED, policy_subject(pol_path), NULL, NULL);
	/* With a policy, its history opens now (recovered, or the box refuses).
	 * Without one every request is denied; the enforcement points that ask
	 * (the gateway, the mediator) open an engine when they start. */
	if (eng && open_history(&bd, eng, &mon) < 0)
		goto out;
	if (!eng && no_policy(home, &eng, &mon) < 0)
		goto out;

	/* The gateway is told the box before the plan: its phantoms go into
	 * the environment, and its CA certificate into trust/ for the sandbox
	 * to trust (the file now, its contents before the workload starts). */
	int trust_fd = openat(bd.fd, "trust", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (trust_fd < 0) {
		fprintf(stderr, "cairn: error: cannot open %s/trust: %s\n", bd.path, strerror(errno));
		goto out;
	}
	static const uint16_t self_ports[] = { PROXY_PORT, TELEMETRY_PORT };
	struct tm_relay_stamp stamp = { .box_id = "", .run_id = "" };
	if (tm != NULL)
		tm_collector_stamp(tm, &stamp);
	const struct gw_proc_box gbox = { .config_path = cfg_path, .config_text = cfg_text,
					  .config_len = cfg_len, .cfg = cfg, .home = home,
					  .trust_dirfd = trust_fd, .self_ports = self_ports,
					  .n_self_ports = 2, .stamp = &stamp };
	int gr = gw_proc_setup(gw, &gbox, err, sizeof(err));
	close(trust_fd);
	if (gr != 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		goto out;
	}
	const char *gw_vars[GW_ENV_MAX + 1];
	size_t n_vars = 0;
	for (const char *e; n_vars < GW_ENV_MAX && (e = gw_proc_env(gw, n_vars)) != NULL; n_vars++)
		gw_vars[n_vars] = e;
	gw_vars[n_vars] = NULL;

	struct ct_host host;
	struct ct_error cterr;
	struct ct_limits want = { .pids = cfg->agent.limits.pids,
				  .memory = cfg->agent.limits.memory,
				  .cpu_milli = cfg->agent.limits.cpu_milli };
	/* the mechanism must hold the tools' limits too: one for every sandbox */
	for (size_t k = 0; k < cfg->n_tools; k++) {
		const struct box_limits *tl = &cfg->tools[k].proc.limits;
		want.pids = want.pids ? want.pids : tl->pids;
		want.memory = want.memory ? want.memory : tl->memory;
		want.cpu_milli = want.cpu_milli ? want.cpu_milli : tl->cpu_milli;
	}
	if (ct_preflight(&host, &want, &cterr) < 0) {
		fprintf(stderr, "cairn: %s\n", cterr.msg);
		goto out;
	}

	char *cwd = getcwd(NULL, 0);
	char *run_cwd = cwd ? realpath(cwd, NULL) : NULL;
	free(cwd);
	if (!run_cwd) {
		fprintf(stderr, "cairn: error: cannot read the current directory: %s\n",
			strerror(errno));
		goto out;
	}
	/* The tools' shims and the broker's socket, which the agent's view
	 * binds (docs/tools.md). */
	if (run_tools_prepare(&tools, cfg, &bd, err, sizeof(err)) != 0) {
		free(run_cwd);
		fprintf(stderr, "cairn: error: %s\n", err);
		goto out;
	}
	struct plan_ctx pctx = { .cfg = cfg, .config_path = cfg_path, .policy_path = pol_path,
				 .home = home, .operator_path = getenv("PATH"),
				 .run_cwd = run_cwd, .trailing = trailing,
				 .n_trailing = n_trailing, .proxy_port = PROXY_PORT,
				 .telemetry_port = TELEMETRY_PORT,
				 .gateway_env = gw_vars, .mediated = mediated,
				 .broker_socket = tools.sock[0] ? tools.sock : NULL };
	int pr = plan_agent(&pctx, &plan, err, sizeof(err));
	/* each tool's leaf; a tool starts where the agent works by default */
	if (pr == 0) {
		pctx.agent_workspace = plan->spec.cwd;
		pr = run_tools_plan(&tools, &pctx, err, sizeof(err));
	}
	free(run_cwd);
	if (pr < 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		goto out;
	}

	/* The plan judged box_dir by path; it must still be the directory we locked. */
	if (boxdir_verify(&bd, err, sizeof(err)) < 0) {
		fprintf(stderr, "cairn: error: %s\n", err);
		goto out;
	}
	fprintf(stderr, "cairn: box %s %s · config %s\n", cfg->name,
		bd.created ? "created" : "opened", cfg_path);
	fprintf(stderr, "cairn: starting workload\n");
	for (size_t k = 0; k < tools.n; k++)        /* Box's order: the tools, then the agent */
		fputs(tools.plans[k]->disclosure, stderr);
	fputs(plan->disclosure, stderr);
	fputs(gw_proc_floor_lines(gw), stderr);
	bool limited = plan->spec.limits.pids || plan->spec.limits.memory ||
		       plan->spec.limits.cpu_milli;
	if (limited)
		fprintf(stderr, "cairn: [agent] limits enforced by %s\n", host.limits_text);
	for (size_t k = 0; k < tools.n; k++) {
		const struct ct_limits *tl = &tools.plans[k]->spec.limits;
		if (tl->pids || tl->memory || tl->cpu_milli)
			fprintf(stderr, "cairn: %s limits enforced by %s\n", tools.plans[k]->label,
				host.limits_text);
	}
	if (mediated)
		fprintf(stderr, "cairn: mediation on: the agent's file operations and launches are "
			"decided by %s\n", pol_path ? pol_path : "no policy (every one denied)");
	else if (cfg->mediate == BOX_MEDIATE_OFF)
		fprintf(stderr, "cairn: mediation off ([containment] mediate = false): files and "
			"launches are left to the grants\n");
	fflush(stderr);

	/* Signals arrive on a descriptor from here; the workload gets them
	 * unblocked (the reaper resets its mask). */
	sigset_t sigs, old;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	/* SIGPIPE blocked, not forwarded: a write to a closed stderr or socket
	 * fails with EPIPE instead of killing the supervisor mid-run.  The
	 * workload starts with an empty mask. */
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, NULL);
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "cairn: error: signalfd: %s\n", strerror(errno));
		goto out;
	}

	char cgname[96];
	snprintf(cgname, sizeof(cgname), "cairn-%s-%d", cfg->name, (int)getpid());
	struct ct_spec spec = plan->spec;
	spec.cgroup_name = cgname;
	/* With records, the deny filter's refusals are observed and recorded
	 * (docs/records.md "Kernel refusals"); without, the plain filter. */
	spec.observe_refusals = tm != NULL && !mediated;
	if (mediated) {
		/* one listener: the deny filter's refusals come to the mediator */
		spec.notify_prog = med_filter_prog();
		spec.notify_has_deny = true;
	}
	spec.tty_fd = isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
	/* The terminal's settings as we found them, restored after the run: a
	 * workload may leave it raw or without echo. */
	struct termios tio;
	bool have_tio = spec.tty_fd >= 0 && tcgetattr(spec.tty_fd, &tio) == 0;
	struct ct_proc proc;
	/* the probe runs beside the launch, which mostly waits for the
	 * sandbox's mounts; it is joined before the workload starts */
	if (mediated)
		probe_start(&probe);
	if (ct_launch(&spec, &host, &proc, &cterr) < 0) {
		fprintf(stderr, "cairn: error: %s\n", cterr.msg);
		close(sfd);
		goto out;
	}
	/* The gateway serves the sandbox's listeners, the proxy's and the
	 * agent receiver's (taken over here, passed on when the gateway
	 * starts); ct_release closes those it did not take.  Its decisions are
	 * answered here, and the payloads it relays recorded. */
	bool served = true;
	for (size_t k = 0; served && k < proc.n_listen; k++) {
		int lfd = proc.listen_fds[k];
		proc.listen_fds[k] = -1;
		int kind = spec.listen_ports[k] == TELEMETRY_PORT ? GW_SERVE_OTLP : GW_SERVE_PROXY;
		if (gw_proc_serve(gw, lfd, "[agent]", NULL, kind, err, sizeof(err)) != 0) {
			snprintf(cterr.msg, sizeof(cterr.msg), "%.700s", err);
			served = false;
		}
	}
	gw_proc_decide(gw, mon, eng, tm);
	struct med *med = NULL;
	if (served && mediated) {
		int lfd = proc.notify_fd;
		proc.notify_fd = -1;
		const struct med_config mc = {
			.areas = plan->areas, .n_areas = plan->n_areas, .home = home,
			.config_path = cfg_path, .policy_path = pol_path,
			.workload_pid = proc.workload_pid, .view_fd = proc.view_fd,
			.mon = mon, .eng = eng, .tm = tm, .sync_each = cfg->mediate_sync_each,
			/* a history rule over fs:read sees reads under grants
			 * too (docs/mediator.md "The history") */
			.observe_grant_reads = eng != NULL && dw_engine_watches_action(eng, "fs:read"),
			.shim_dev = tools.shim_dev, .shim_ino = tools.shim_ino,
			.tool_programs = tools.progs, .n_tool_programs = tools.n_progs,
		};
		if (lfd < 0 || med_start(lfd, &mc, &med, err, sizeof(err)) != 0) {
			snprintf(cterr.msg, sizeof(cterr.msg), "the mediator did not start: %.600s",
				 lfd < 0 ? "no listener" : err);
			served = false;
		}
	}
	struct run_observer *obs = NULL;
	if (served && spec.observe_refusals && proc.refusals_fd >= 0) {
		int lfd = proc.refusals_fd;
		proc.refusals_fd = -1;
		if (run_observer_start(lfd, tm, &obs, err, sizeof(err)) != 0) {
			snprintf(cterr.msg, sizeof(cterr.msg), "%.700s", err);
			served = false;
		}
	} else if (served && spec.observe_refusals) {
		tm_control(tm, TM_REFUSALS_UNOBSERVED, "[agent]", strerror(proc.refusals_errno),
			   "the kernel would not install the observed seccomp filter: its "
			   "refusals are made, not recorded");
	}
	/* the broker: tools run as the agent calls them */
	struct brk_config bc = { .home = home, .mon = mon, .eng = eng, .tm = tm, .host = &host,
				 .cgroup_prefix = cgname, .gw = gw, .agent_pid = proc.workload_pid };
	if (served && run_tools_start(&tools, &bc, err, sizeof(err)) != 0) {
		snprintf(cterr.msg, sizeof(cterr.msg), "the broker did not start: %.700s", err);
		served = false;
	}
	if (served && gw_proc_ready(gw, err, sizeof(err)) != 0) {
		snprintf(cterr.msg, sizeof(cterr.msg), "%.700s", err);
		served = false;
	}
	/* a contained tool's listener is served the moment its leaf starts */
	if (served && run_tools_need_gateway(&tools) && gw_proc_up(gw, err, sizeof(err)) != 0) {
		snprintf(cterr.msg, sizeof(cterr.msg), "%.700s", err);
		served = false;
	}
	/* The probe ran beside the launch (it costs about as long as the
	 * sandbox's mounts, on the other CPU); nothing of the workload has run
	 * yet, so a failure still refuses the box before it starts. */
	if (served && mediated && probe_join(&probe) != 0) {
		snprintf(cterr.msg, sizeof(cterr.msg), "%.760s", probe.err);
		served = false;
	}
	int status = 0;
	if (!served || ct_start(&spec, &proc, &cterr) < 0 ||
	    supervise(&spec, &proc, sfd, gw, &status, &cterr) < 0) {
		if (!cterr.msg[0])
			snprintf(cterr.msg, sizeof(cterr.msg), "%s", strerror(errno));
		fprintf(stderr, "cairn: error: %s\n", cterr.msg);
		failure = cterr.msg;
		ct_kill(&proc);
	} else {
		rc = ct_exit_code(status);
		failure = NULL;
	}
	if (spec.tty_fd >= 0 && tcgetpgrp(spec.tty_fd) != getpgrp()) {
		sigset_t ttou;
		sigemptyset(&ttou);
		sigaddset(&ttou, SIGTTOU);
		sigprocmask(SIG_BLOCK, &ttou, NULL);
		tcsetpgrp(spec.tty_fd, getpgrp());
	}
	if (have_tio)
		tcsetattr(spec.tty_fd, TCSADRAIN, &tio);
	run_tools_stop(&tools);         /* every leaf's outcome recorded */
	run_observer_stop(obs);         /* its last counts recorded before box_stopped */
	med_stop(med);                  /* the launches' last statuses recorded */
	ct_release(&proc);
	close(sfd);
out:
	probe_join(&probe);             /* a refusal before the launch waits for it */
	run_tools_free(&tools);
	plan_free(plan);
	/* The gateway ends its connections, their records made, before the
	 * history closes; one that did not end cleanly fails the run. */
	if (gw != NULL && gw_proc_stop(gw, err, sizeof(err)) != 0 && rc != RUN_BOX_ERROR) {
		fprintf(stderr, "cairn: error: %s\n", err);
		rc = RUN_BOX_ERROR;
	}
	gw_proc_free(gw);
	/* every decision is in; box_stopped last */
	close_records(tm, cfg ? cfg->name : NULL, rc == RUN_BOX_ERROR ? failure : NULL);
	dw_monitor_free(mon);           /* syncs and writes a snapshot */
	close_records_wait(tm);
	dw_engine_free(eng);
	if (have_bd)
		boxdir_close(&bd);
	box_config_free(cfg);
	free(cfg_text);
	free(cfg_path);
	free(pol_text);
	free(pol_path);
	free(home);
	return rc;
}
