/* test_plan.c - a box.toml [agent] table becomes a sandbox plan
 * (src/run/plan.c).
 *
 * Every fixture lives below one mkdtemp root ("@" in the templates below):
 * a home with credential stores, a project, scripts and links, the config
 * and policy in home/cfg/, and the box directory in boxes/demo.  The
 * operator's real home and environment take no part: `home` is passed
 * explicitly and the environment is checked to hold nothing of ours.
 * PLAN_SHOW=1 prints the sample disclosure. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boxconf.h"
#include "boxdir.h"
#include "plan.h"
#include "test.h"

static char root[PATH_MAX];

static void cleanup(void);

/* tmpl with every '@' replaced by the fixture root; a ring of buffers. */
static const char *sub(const char *tmpl)
{
	static char ring[24][8192];
	static unsigned k;
	char *b = ring[k++ % 24];
	size_t n = 0, rl = strlen(root);

	for (const char *s = tmpl; *s && n + rl + 1 < sizeof ring[0]; s++) {
		if (*s == '@') {
			memcpy(b + n, root, rl);
			n += rl;
		} else {
			b[n++] = *s;
		}
	}
	b[n] = '\0';
	return b;
}

static void mkd(const char *rel)
{
	if (mkdir(sub(rel), 0755) != 0 && errno != EEXIST) {
		perror(sub(rel));
		exit(2);
	}
}

static void mkf(const char *rel, const char *content, mode_t mode)
{
	int fd = open(sub(rel), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, mode);
	const char *c = sub(content);

	if (fd < 0 || write(fd, c, strlen(c)) != (ssize_t)strlen(c) || fchmod(fd, mode) != 0) {
		perror(sub(rel));
		exit(2);
	}
	close(fd);
}

static void mkl(const char *rel, const char *target)
{
	if (symlink(sub(target), sub(rel)) != 0) {
		perror(sub(rel));
		exit(2);
	}
}

static void fixture(void)
{
	char tmp[] = "/tmp/cairn-plan-XXXXXX";
	struct boxdir b;
	char err[512];

	if (root[0])
		return;
	if (mkdtemp(tmp) == NULL || realpath(tmp, root) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
	atexit(cleanup);
	mkd("@/home");
	mkd("@/home/.ssh");
	mkf("@/home/.ssh/config", "Host *\n", 0600);
	mkd("@/home/.aws");
	mkf("@/home/.netrc", "machine x\n", 0600);
	mkd("@/home/proj");
	mkd("@/home/proj/out");
	mkd("@/home/proj/docs");
	mkf("@/home/proj/.env", "SECRET=1\n", 0600);
	mkd("@/home/data");
	mkd("@/home/data/sub");
	mkf("@/home/data/f", "data\n", 0644);
	mkf("@/home/data/suid", "#!/bin/sh\n", 04755);
	mkl("@/home/data-link", "@/home/data");
	mkd("@/home/cfg");
	mkf("@/home/cfg/box.toml", "# the config\n", 0644);
	mkf("@/home/cfg/policy.dw", "// the policy\n", 0644);
	mkd("@/home/pol");
	mkf("@/home/pol/policy.dw", "// the policy\n", 0644);
	mkd("@/home/bin");
	mkd("@/home/tools");
	/* agent -> interp -> env mytool -> /bin/sh */
	mkf("@/home/bin/agent", "#!@/home/tools/interp\necho agent\n", 0755);
	mkf("@/home/tools/interp", "#! /usr/bin/env  mytool \r\n", 0755);
	mkf("@/home/bin/mytool", "#!/bin/sh\nexec \"$@\"\n", 0755);
	mkf("@/home/bin/plain", "#!/bin/sh\necho plain\n", 0755);
	mkf("@/home/tools/split", "#!/usr/bin/env -S PATH=@/home/tools:/usr/bin hop --x\n", 0755);
	mkf("@/home/tools/hop", "#!/bin/sh\n", 0755);
	mkd("@/home/.local");
	mkd("@/home/.local/bin");
	mkl("@/home/.local/bin/agent-link", "../../bin/plain");
	/* a chain of nine scripts: s0 -> s1 -> ... -> s8 -> /bin/sh */
	mkd("@/home/chain");
	for (int i = 0; i < 9; i++) {
		char rel[64], body[96];

		snprintf(rel, sizeof rel, "@/home/chain/s%d", i);
		if (i < 8)
			snprintf(body, sizeof body, "#!@/home/chain/s%d\n", i + 1);
		else
			snprintf(body, sizeof body, "#!/bin/sh\n");
		mkf(rel, body, 0755);
	}
	mkd("@/home/cfg/ws");
	mkd("@/agenthome");
	mkd("@/agenthome/.ssh");
	/* Box's Linux harness: the config and policy in <workspace>/.strands-box */
	mkd("@/ws");
	mkd("@/ws/.strands-box");
	mkd("@/ws/.strands-box/cache");
	mkf("@/ws/.strands-box/box.toml", "# the config\n", 0644);
	mkf("@/ws/.strands-box/policy.dw", "// the policy\n", 0644);
	mkd("@/top");
	mkd("@/top/a");
	mkd("@/top/a/b");
	mkf("@/top/a/b/box.toml", "# the config\n", 0644);
	mkf("@/top/a/b/policy.dw", "// the policy\n", 0644);
	mkd("@/boxes");
	if (boxdir_open(sub("@/boxes/demo"), "demo", &b, err, sizeof err) != 0) {
		fprintf(stderr, "boxdir_open: %s\n", err);
		exit(2);
	}
	boxdir_close(&b);
	/* What the test's own environment holds must not reach the plan. */
	setenv("LANG", "C.UTF-8", 1);
	setenv("TERM", "dumb", 1);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- running a plan ------------------------------------------------------ */

#define HEAD "name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"/bin/sh\"]\n" \
	     "workspace = \"@/home/proj\"\n[agent.filesystem]\n"       /* entries on line 7 */

struct run {
	struct box_config *cfg;
	struct plan *plan;
	int rc;
	char err[4096];
	const char *config;             /* NULL: home/cfg/box.toml */
	const char *policy;             /* NULL: home/cfg/policy.dw */
	const char *const *trailing;
	size_t n_trailing;
	const char *const *gateway_env;
};

static void run(const char *tmpl, struct run *r)
{
	struct box_config_error cerr;
	char cfgfile[PATH_MAX], polfile[PATH_MAX], home[PATH_MAX], cwd[PATH_MAX], text[8192];

	fixture();
	snprintf(text, sizeof text, "%s", sub(tmpl));
	snprintf(cfgfile, sizeof cfgfile, "%s", sub(r->config ? r->config : "@/home/cfg/box.toml"));
	snprintf(polfile, sizeof polfile, "%s", sub(r->policy ? r->policy : "@/home/cfg/policy.dw"));
	snprintf(home, sizeof home, "%s", sub("@/home"));
	snprintf(cwd, sizeof cwd, "%s", sub("@/home/proj/docs"));
	r->plan = NULL;
	r->err[0] = '\0';
	if (box_config_load(cfgfile, text, strlen(text), home, &r->cfg, &cerr) != 0) {
		fprintf(stderr, "  config refused: %s: %s\n", cerr.where, cerr.msg);
		r->cfg = NULL;
		r->rc = -2;
		return;
	}
	struct plan_ctx ctx = {
		.cfg = r->cfg, .config_path = cfgfile, .policy_path = polfile, .home = home,
		.operator_path = "/usr/bin:/bin", .run_cwd = cwd, .trailing = r->trailing,
		.n_trailing = r->n_trailing, .proxy_port = 8080, .gateway_env = r->gateway_env,
	};
	r->rc = plan_agent(&ctx, &r->plan, r->err, sizeof r->err);
}

static void done(struct run *r)
{
	plan_free(r->rc == 0 ? r->plan : NULL);
	box_config_free(r->cfg);
}

/* tmpl is refused with exactly want (both templates). */
static void refused(const char *tmpl, const char *want)
{
	struct run r = { 0 };
	const char *w;

	run(tmpl, &r);
	w = sub(want);
	CHECK_EQ_INT(r.rc, -1);
	if (strcmp(r.err, w) != 0)
		fprintf(stderr, "  got:  %s\n  want: %s\n", r.err, w);
	CHECK_EQ_STR(r.err, w);
	done(&r);
}

/* No mount of the plan lies strictly inside a mask: the mask's tmpfs has no
 * room for a mount point (the launcher then fails with ENOSPC). */
static bool nothing_inside_masks(const struct plan *p)
{
	for (size_t i = 0; p != NULL && i < p->spec.n_mounts; i++)
		for (size_t j = 0; j < p->spec.n_mounts; j++) {
			const char *m = p->spec.mounts[j].path, *q = p->spec.mounts[i].path;
			size_t n = strlen(m);

			if (p->spec.mounts[j].kind == CT_MASK && strncmp(q, m, n) == 0 &&
			    q[n] == '/') {
				fprintf(stderr, "  %s is mounted inside the mask %s\n", q, m);
				return false;
			}
		}
	return p != NULL;
}

static void accepted(const char *tmpl, struct run *r)
{
	run(tmpl, r);
	if (r->rc != 0)
		fprintf(stderr, "  refused: %s\n", r->err);
	CHECK_EQ_INT(r->rc, 0);
	CHECK(r->rc != 0 || nothing_inside_masks(r->plan));
}

static const struct ct_mount *find(const struct plan *p, const char *path)
{
	const struct ct_mount *m = NULL;
	const char *want = sub(path);

	for (size_t i = 0; p != NULL && i < p->spec.n_mounts; i++)
		if (strcmp(p->spec.mounts[i].path, want) == 0)
			m = &p->spec.mounts[i];
	return m;
}

/* Mount at path has this kind (and access, for a bind). */
/* The CT_FILE data or CT_SYMLINK target at path; "" when absent. */
static const char *content(const struct plan *p, const char *path)
{
	const struct ct_mount *m = find(p, path);

	return m == NULL ? "" : m->kind == CT_FILE ? m->data : m->target ? m->target : "";
}

static bool has(const struct plan *p, const char *path, enum ct_mount_kind kind, unsigned access)
{
	const struct ct_mount *m = find(p, path);

	if (m == NULL || m->kind != kind || (kind == CT_BIND && m->access != access)) {
		fprintf(stderr, "  mount %s: %s (kind %d access %u)\n", sub(path),
			m ? "differs" : "absent", m ? (int)m->kind : -1, m ? m->access : 0);
		return false;
	}
	return true;
}

static const char *env(const struct plan *p, const char *name)
{
	size_t n = strlen(name);

	if (p == NULL)
		return NULL;
	for (const char *const *e = p->spec.envp; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static bool line(const struct plan *p, const char *tmpl)
{
	const char *l = sub(tmpl);
	bool ok = p != NULL && p->disclosure != NULL && strstr(p->disclosure, l) != NULL;

	if (!ok)
		fprintf(stderr, "  disclosure lacks \"%s\":\n%s", l,
			p != NULL && p->disclosure != NULL ? p->disclosure : "(no plan)\n");
	return ok;
}

static bool lacks(const struct plan *p, const char *tmpl)
{
	return p != NULL && p->disclosure != NULL && strstr(p->disclosure, sub(tmpl)) == NULL;
}

/* ---- the sample ----------------------------------------------------------- */

#define SAMPLE                                                                        \
	"name = \"demo\"\n"                                                           \
	"box_dir = \"@/boxes/demo\"\n"                                                \
	"policy = \"policy.dw\"\n"                                                    \
	"\n"                                                                          \
	"[agent]\n"                                                                   \
	"command = [\"agent\", \"--flag\", \"${OTEL_EXPORTER_OTLP_ENDPOINT}\"]\n"     \
	"workspace = \"@/home/proj\"\n"                                                    \
	"env = { PATH = \"@/boxes/demo/bin/:@/home/bin:/usr/bin:/bin\", TERM = \"xterm\" }\n" \
	"\n"                                                                          \
	"[agent.filesystem]\n"                                                        \
	"read = [\"~\"]\n"                                                            \
	"write = [\"~/proj/out\"]\n"                                                  \
	"read_file = [\"~/.netrc\"]\n"                                                \
	"metadata = [\"~/proj/docs\"]\n"                                              \
	"exec = [\"~/bin/mytool\"]\n"                                                 \
	"deny = [\"~/proj/.env\"]\n"                                                  \
	"\n"                                                                          \
	"[agent.limits]\n"                                                            \
	"pids = 64\n"                                                                 \
	"memory = \"512M\"\n"                                                         \
	"cpu = 1.5\n"                                                                 \
	"tmp_size = \"256M\"\n"

static void test_sample(void)
{
	static const char *const trailing[] = { "x", "--y" };
	/* the gateway's phantoms come first, and the table's env overrides them */
	static const char *const gwenv[] = { "API_TOKEN=strands_box_00ff", "TERM=phantom", NULL };
	struct run r = { .trailing = trailing, .n_trailing = 2, .gateway_env = gwenv };
	const struct plan *p;
	const char *passwd;
	char want[512];
	size_t n;

	accepted(SAMPLE, &r);
	if ((p = r.plan) == NULL)
		goto out;
	if (getenv("PLAN_SHOW"))
		fputs(p->disclosure, stdout);

	CHECK_EQ_STR(p->program, sub("@/home/bin/agent"));
	CHECK_EQ_STR(p->label, "[agent]");
	for (n = 0; p->spec.argv[n]; n++)
		;
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_STR(p->spec.argv[0], sub("@/home/bin/agent"));
	CHECK_EQ_STR(p->spec.argv[1], "--flag");
	CHECK_EQ_STR(p->spec.argv[2], "${OTEL_EXPORTER_OTLP_ENDPOINT}");
	CHECK_EQ_STR(p->spec.argv[3], "x");
	CHECK_EQ_STR(p->spec.argv[4], "--y");

	/* The environment: exactly these names, nothing from ours. */
	CHECK_EQ_STR(env(p, "HOME"), sub("@/home"));
	CHECK(env(p, "SHELL") != NULL && env(p, "SHELL")[0] == '/');
	CHECK_EQ_STR(env(p, "PATH"), sub("@/boxes/demo/bin:@/home/bin:/usr/bin:/bin"));
	CHECK_EQ_STR(env(p, "USER"), "strands-box");
	CHECK_EQ_STR(env(p, "PWD"), sub("@/home/proj"));
	CHECK_EQ_STR(env(p, "TERM"), "xterm");
	CHECK_EQ_STR(env(p, "HTTP_PROXY"), "http://127.0.0.1:8080");
	CHECK_EQ_STR(env(p, "HTTPS_PROXY"), "http://127.0.0.1:8080");
	CHECK_EQ_STR(env(p, "http_proxy"), "http://127.0.0.1:8080");
	CHECK_EQ_STR(env(p, "https_proxy"), "http://127.0.0.1:8080");
	CHECK_EQ_STR(env(p, "NO_PROXY"), "127.0.0.1,localhost");
	CHECK_EQ_STR(env(p, "no_proxy"), "127.0.0.1,localhost");
	CHECK_EQ_STR(env(p, "NODE_USE_ENV_PROXY"), "1");
	CHECK(env(p, "LANG") == NULL);
	/* the gateway's CA, under each client library's variable */
	static const char *const ca_vars[] = { "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
					       "CODEX_CA_CERTIFICATE", "AWS_CA_BUNDLE",
					       "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO" };
	for (size_t i = 0; i < 6; i++)
		CHECK_EQ_STR(env(p, ca_vars[i]), sub("@/boxes/demo/trust/cert.pem"));
	CHECK_EQ_STR(env(p, "API_TOKEN"), "strands_box_00ff");
	for (n = 0; p->spec.envp[n]; n++)
		;
	CHECK_EQ_INT(n, 20);
	CHECK_EQ_STR(p->spec.envp[0], "API_TOKEN=strands_box_00ff");   /* phantoms first */
	CHECK_EQ_STR(p->spec.envp[2], sub("HOME=@/home"));

	/* The spec's other fields. */
	CHECK_EQ_STR(p->spec.cwd, sub("@/home/proj"));
	CHECK_EQ_STR(p->spec.hostname, "demo");
	CHECK_EQ_INT(p->spec.n_listen, 1);
	CHECK_EQ_INT(p->spec.listen_ports[0], 8080);
	CHECK(p->spec.stdio[0] == -1 && p->spec.stdio[1] == -1 && p->spec.stdio[2] == -1);
	CHECK_EQ_INT(p->spec.tty_fd, -1);
	CHECK(p->spec.private_proc);
	CHECK(!p->spec.share_net);
	CHECK_EQ_INT(p->spec.limits.pids, 64);
	CHECK_EQ_INT(p->spec.limits.memory, 512ull << 20);
	CHECK_EQ_INT(p->spec.limits.cpu_milli, 1500);
	CHECK_EQ_INT(p->spec.limits.tmp_size, 256ull << 20);

	/* Grants. */
	CHECK(has(p, "@/home", CT_BIND, CT_READ));
	CHECK(has(p, "@/home/proj/out", CT_BIND, CT_READ | CT_WRITE));
	CHECK(has(p, "@/home/.netrc", CT_BIND, CT_READ));
	CHECK(has(p, "@/home/bin/mytool", CT_BIND, CT_READ | CT_EXEC));
	CHECK(has(p, "@/home/proj/.env", CT_MASK, 0));
	/* metadata and the workspace under a read tree need no entry dir */
	CHECK(find(p, "@/home/proj/docs") == NULL);
	CHECK(find(p, "@/home/proj") == NULL);
	/* floors beneath the home grant */
	CHECK(has(p, "@/home/.ssh", CT_MASK, 0));
	CHECK(has(p, "@/home/.aws", CT_MASK, 0));
	CHECK(find(p, "@/home/.gnupg") == NULL);                 /* absent: nothing to hide */
	/* the directory holding the config and policy, subtracted from ~ */
	CHECK(has(p, "@/home/cfg", CT_MASK, 0));
	CHECK(find(p, "@/home/cfg/box.toml") == NULL);
	CHECK(find(p, "@/home/cfg/policy.dw") == NULL);
	/* the program and its interpreter chain */
	CHECK(has(p, "@/home/bin/agent", CT_BIND, CT_READ | CT_EXEC));
	CHECK(has(p, "@/home/tools/interp", CT_BIND, CT_READ | CT_EXEC));
	CHECK(find(p, "/usr/bin/env") == NULL);                  /* the runtime covers it */
	/* the runtime set */
	CHECK(has(p, "/usr", CT_BIND, CT_READ | CT_EXEC));
	struct stat st;
	if (lstat("/bin", &st) == 0 && S_ISLNK(st.st_mode)) {
		CHECK(has(p, "/bin", CT_SYMLINK, 0));
		CHECK_EQ_STR(content(p, "/bin"), "usr/bin");
	} else {
		CHECK(has(p, "/bin", CT_BIND, CT_READ | CT_EXEC));
	}
	/* small regular /etc files are copied into the view, directories bound */
	if (lstat("/etc/ld.so.cache", &st) == 0 && S_ISREG(st.st_mode)) {
		CHECK(has(p, "/etc/ld.so.cache", CT_FILE, 0));
		const struct ct_mount *m = find(p, "/etc/ld.so.cache");
		CHECK(m != NULL && m->len == (size_t)st.st_size);
	}
	if (lstat("/etc/alternatives", &st) == 0 && S_ISDIR(st.st_mode))
		CHECK(has(p, "/etc/alternatives", CT_BIND, CT_READ));
	if (lstat("/etc/os-release", &st) == 0 && S_ISLNK(st.st_mode))
		CHECK(has(p, "/etc/os-release", CT_SYMLINK, 0));
	CHECK(find(p, "/etc/shadow") == NULL);
	if (lstat("/etc/ssl/private", &st) == 0 && S_ISDIR(st.st_mode))
		CHECK(has(p, "/etc/ssl/private", CT_MASK, 0));
	CHECK(has(p, "/etc/passwd", CT_FILE, 0));
	passwd = content(p, "/etc/passwd");
	snprintf(want, sizeof want, ":x:%u:%u::%s:%s\n", (unsigned)getuid(), (unsigned)getgid(),
		 sub("@/home"), env(p, "SHELL") ? env(p, "SHELL") : "?");
	CHECK(strstr(passwd, want) != NULL);
	CHECK(strstr(passwd, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n") != NULL ||
	      getuid() == 65534);
	CHECK(find(p, "/etc/passwd") != NULL && find(p, "/etc/passwd")->len == strlen(passwd));
	CHECK(has(p, "/etc/group", CT_FILE, 0));
	CHECK(has(p, "/etc/hosts", CT_FILE, 0));
	CHECK_EQ_STR(content(p, "/etc/hosts"), "127.0.0.1 localhost\n::1 localhost\n");
	CHECK_EQ_STR(content(p, "/etc/hostname"), "demo\n");
	/* the box directory */
	CHECK(has(p, "@/boxes/demo", CT_DIR, 0));
	CHECK(has(p, "@/boxes/demo/bin", CT_BIND, CT_READ | CT_EXEC));
	CHECK(has(p, "@/boxes/demo/trust/cert.pem", CT_BIND, CT_READ));
	CHECK(find(p, "@/boxes/demo/trust/cert.pem") && find(p, "@/boxes/demo/trust/cert.pem")->optional);
	CHECK(find(p, "@/boxes/demo/bin") && !find(p, "@/boxes/demo/bin")->optional);

	/* The disclosure, whole where it does not depend on the host. */
	const char *head =
		"cairn: [agent] runs @/home/bin/agent with no policy decision over these paths:\n"
		"  read  @/home\n"
		"  write  @/home/proj/out  (readable too: a writable bind reads)\n"
		"  read_file  @/home/.netrc  (credential store)\n"
		"  metadata  @/home/proj/docs\n"
		"  exec  @/home/bin/mytool\n"
		"  deny  @/home/proj/.env\n"
		"cairn: [agent] runtime minimum, added by cairn:\n"
		"  exec  @/home/bin/agent  (command, implicit)\n"
		"  exec  @/home/tools/interp  (interpreter)\n"
		"  read+exec  /usr  (runtime)\n";
	const char *tail =
		"  file  /etc/{passwd,group,hosts,hostname,profile}  (written by cairn)\n"
		"  read+write  /tmp  (private tmpfs, 256 MiB)\n"
		"  enter  @/boxes/demo  (box directory: bin/ and trust/cert.pem only)\n"
		"  read+exec  @/boxes/demo/bin  (box shims)\n"
		"  read  @/boxes/demo/trust/cert.pem  (gateway CA)\n"
		"  masked  @/home/cfg  (holds this run's config and policy, subtracted from "
		"@/home)\n"
		"  masked  @/home/.aws  (credential store beneath a grant)\n"
		"  masked  @/home/.ssh  (credential store beneath a grant)\n"
		"cairn: [agent] HOME=@/home PATH=@/boxes/demo/bin:@/home/bin:/usr/bin:/bin\n"
		"cairn: [agent] limits: pids 64, memory 512 MiB, cpu 1.5, tmp 256 MiB\n"
		"cairn: warning: [agent] HOME @/home is not writable in the box (@/home is granted "
		"read-only), so a program that keeps its state there fails with \"Read-only file "
		"system\"; give the agent a home: a `write` grant on a directory and `env.HOME` set "
		"to it (docs/config.md, \"A home for the agent\")\n";
	const char *h = sub(head), *t = sub(tail);
	CHECK(strncmp(p->disclosure, h, strlen(h)) == 0);
	CHECK(strlen(p->disclosure) > strlen(t) &&
	      strcmp(p->disclosure + strlen(p->disclosure) - strlen(t), t) == 0);
	if (strncmp(p->disclosure, h, strlen(h)) != 0 || strstr(p->disclosure, t) == NULL)
		fprintf(stderr, "  disclosure:\n%s", p->disclosure);
out:
	done(&r);
}

/* ---- refusals ------------------------------------------------------------ */

#define CFG "@/home/cfg/box.toml"
#define ENTRY(e) CFG ":7:%s: `[agent]` filesystem entry \"" e "\" is refused: "

static void test_entry_refusals(void)
{
	refused(HEAD "read = [\"~/nope\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/nope\" is refused: @/home/nope is not "
		"there: No such file or directory (os error 2). A grant on a path that does not "
		"exist grants nothing and says so nowhere");
	refused(HEAD "read = [\"~/data-link\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data-link\" is refused: @/home/data-link "
		"is a symbolic link. A grant carries the identity the kernel checks, so a link "
		"renders a rule that matches nothing; name what it points at");
	refused(HEAD "read = [\"~/data-link/f\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data-link/f\" is refused: "
		"@/home/data-link/f is not the path the kernel checks, which is @/home/data/f. "
		"Name the canonical path");
	refused(HEAD "read = [\"~/data\", \"~/data/sub\"]\n",
		CFG ":7:19: `[agent]` filesystem entry \"~/data/sub\" is refused: @/home/data/sub "
		"lies inside @/home/data, granted by `read`. The union is the wider grant, so "
		"name only @/home/data");
	refused(HEAD "read = [\"~/data/sub\", \"~/data\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data/sub\" is refused: @/home/data/sub "
		"lies inside @/home/data, granted by `read`. The union is the wider grant, so "
		"name only @/home/data");
	/* read_file is the same operation as read */
	refused(HEAD "read = [\"~/data\"]\nread_file = [\"~/data/f\"]\n",
		"@/home/cfg/box.toml:8:14: `[agent]` filesystem entry \"~/data/f\" is refused: "
		"@/home/data/f lies inside @/home/data, granted by `read`. The union is the wider "
		"grant, so name only @/home/data");
	refused(HEAD "read = [\"~/data/f\"]\nread_file = [\"~/data/f\"]\n",
		"@/home/cfg/box.toml:8:14: `[agent]` filesystem entry \"~/data/f\" is refused: "
		"@/home/data/f is granted by both `read` and `read_file`; name it once");
	refused(HEAD "read_file = [\"~/data\"]\n",
		CFG ":7:14: `[agent]` filesystem entry \"~/data\" is refused: @/home/data is a "
		"directory, and `read_file` names one file; grant a directory with `read`");
	refused(HEAD "metadata = [\"~/data/f\"]\n",
		CFG ":7:13: `[agent]` filesystem entry \"~/data/f\" is refused: @/home/data/f is a "
		"file, and `metadata` names a directory");
	/* `list`: Box's words on Linux, after its checks of the path */
	refused(HEAD "list = [\"~/data\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data\" is refused: @/home/data cannot be "
		"listed without its contents on Linux: the namespace backend has no lowering for "
		"`list`; grant `read` instead");
	refused(HEAD "list = [\"~/data/f\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data/f\" is refused: @/home/data/f is a "
		"file, and `list` enumerates a directory tree");
	refused(HEAD "list = [\"~/nope\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/nope\" is refused: @/home/nope is not "
		"there: No such file or directory (os error 2). A grant on a path that does not "
		"exist grants nothing and says so nowhere");
	refused(HEAD "exec = [\"~/data/f\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data/f\" is refused: @/home/data/f is not "
		"an executable regular file");
	refused(HEAD "exec = [\"~/data/suid\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data/suid\" is refused: @/home/data/suid "
		"is setuid or setgid; no_new_privs would run it without its privileges, so grant a "
		"program that needs none");
	refused(HEAD "deny = [\"~/nope\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/nope\" is refused: @/home/nope does not "
		"exist yet, and a `deny` on Linux hides a path by mounting over it, so it cannot "
		"refuse a not-yet-existing path; create it first, or deny an existing directory "
		"above it");
	refused(HEAD "read = [\"~/data/sub\"]\ndeny = [\"~/data\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/data/sub\" is refused: @/home/data/sub is "
		"at or inside @/home/data, which no grant reaches. A `deny` subtracts beneath "
		"every grant, so this entry grants nothing; drop it, or narrow the `deny`");
	refused(HEAD "deny = [\"@/boxes\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"@/boxes\" is refused: @/boxes encloses this "
		"box's directory @/boxes/demo, through which the agent reaches its tools; deny "
		"what lies beside it");
}

static void test_floors(void)
{
	struct stat st;

	refused(HEAD "read = [\"/usr\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"/usr\" is refused: /usr is refused beneath "
		"every grant: it is a whole system tree; name the part of it the workload needs");
	refused(HEAD "read = [\"/\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"/\" is refused: / is refused beneath every "
		"grant: it is a whole system tree; name the part of it the workload needs");
	if (lstat("/etc/shadow", &st) == 0)
		refused(HEAD "read_file = [\"/etc/shadow\"]\n",
			CFG ":7:14: `[agent]` filesystem entry \"/etc/shadow\" is refused: "
			"/etc/shadow is refused beneath every grant: it reaches the password "
			"database /etc/shadow");
	if (lstat("/dev/full", &st) == 0)
		refused(HEAD "read_file = [\"/dev/full\"]\n",
			CFG ":7:14: `[agent]` filesystem entry \"/dev/full\" is refused: /dev/full "
			"is refused beneath every grant: it is a device other than /dev/null, "
			"/dev/zero, /dev/urandom and /dev/random");
	refused(HEAD "read = [\"/proc/1\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"/proc/1\" is refused: /proc/1 is refused "
		"beneath every grant: it lies in /proc, which the sandbox mounts fresh for its own "
		"processes");
	refused(HEAD "read = [\"@/boxes/demo\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"@/boxes/demo\" is refused: @/boxes/demo is "
		"refused beneath every grant: the grant would expose the Box's own directory");
	refused(HEAD "read = [\"@/boxes/demo/private\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"@/boxes/demo/private\" is refused: "
		"@/boxes/demo/private is refused beneath every grant: the grant would expose "
		"private Box state");
	refused(HEAD "read = [\"~/.ssh/config\"]\n",
		CFG ":7:9: `[agent]` filesystem entry \"~/.ssh/config\" is refused: "
		"@/home/.ssh/config is refused beneath every grant: it lies inside the credential "
		"store @/home/.ssh");
	refused(HEAD "read_file = [\"~/cfg/box.toml\"]\n",
		CFG ":7:14: `[agent]` filesystem entry \"~/cfg/box.toml\" is refused: "
		"@/home/cfg/box.toml is refused beneath every grant: it is the configuration this "
		"run loaded");
	refused(HEAD "write = [\"~/cfg\"]\n",
		CFG ":7:10: `[agent]` filesystem entry \"~/cfg\" is refused: `write` reaches this "
		"box's configuration file, @/home/cfg/box.toml. A process that can rewrite its own "
		"configuration is not bound by it; grant a narrower tree, or `deny` the file");
	{
		struct run r = { .policy = "@/home/pol/policy.dw" };

		run(HEAD "write = [\"~/pol\"]\n", &r);
		CHECK_EQ_STR(r.err, sub(CFG ":7:10: `[agent]` filesystem entry \"~/pol\" is "
					"refused: `write` reaches this box's policy file, "
					"@/home/pol/policy.dw. A process that can rewrite its own "
					"policy is not bound by it; grant a narrower tree, or "
					"`deny` the file"));
		done(&r);
	}
	/* Denying the files makes the writable tree acceptable. */
	{
		struct run r = { 0 };

		accepted(HEAD "write = [\"~/cfg\"]\ndeny = [\"~/cfg/box.toml\", \"~/cfg/policy.dw\"]\n",
			 &r);
		CHECK(has(r.plan, "@/home/cfg", CT_BIND, CT_READ | CT_WRITE));
		CHECK(has(r.plan, "@/home/cfg/box.toml", CT_MASK, 0));
		done(&r);
	}
	/* A credential store named exactly is announced, not masked. */
	{
		struct run r = { 0 };

		accepted(HEAD "read = [\"~/data\", \"~/.ssh\"]\n", &r);
		CHECK(has(r.plan, "@/home/.ssh", CT_BIND, CT_READ));
		CHECK(line(r.plan, "  read  @/home/.ssh  (credential store)\n"));
		CHECK(lacks(r.plan, "masked  @/home/.ssh"));
		done(&r);
	}
	/* ... also beneath a grant of the home, which masks the others. */
	{
		struct run r = { 0 };

		accepted(HEAD "read = [\"~\", \"~/.ssh\"]\n", &r);
		CHECK(has(r.plan, "@/home/.ssh", CT_BIND, CT_READ));
		CHECK(has(r.plan, "@/home/.aws", CT_MASK, 0));
		done(&r);
	}
	/* The declared HOME's stores are floors too. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/home/proj\"\nenv = { HOME = \"@/agenthome\" }\n"
			 "[agent.filesystem]\nread = [\"@/agenthome\"]\n", &r);
		CHECK(has(r.plan, "@/agenthome/.ssh", CT_MASK, 0));
		CHECK_EQ_STR(env(r.plan, "HOME"), sub("@/agenthome"));
		CHECK(strstr(content(r.plan, "/etc/passwd"), sub("::@/agenthome:/")) != NULL);
		done(&r);
	}
}


/* Box's own layout: box.toml and policy.dw in <workspace>/.strands-box, the
 * workspace writable.  The folder is subtracted from the grant (masked). */
#define HARNESS(extra)                                                                   \
	"name = \"demo\"\nbox_dir = \"@/boxes/demo\"\npolicy = \"policy.dw\"\n[agent]\n"  \
	"command = [\"/bin/sh\"]\nworkspace = \"@/ws\"\n[agent.filesystem]\n"            \
	"write = [\"@/ws\"]\n" extra

static void test_authority(void)
{
	{
		struct run r = { .config = "@/ws/.strands-box/box.toml",
				 .policy = "@/ws/.strands-box/policy.dw" };

		accepted(HARNESS(""), &r);
		CHECK(has(r.plan, "@/ws", CT_BIND, CT_READ | CT_WRITE));
		CHECK(has(r.plan, "@/ws/.strands-box", CT_MASK, 0));
		CHECK(find(r.plan, "@/ws/.strands-box/box.toml") == NULL);
		CHECK(find(r.plan, "@/ws/.strands-box/policy.dw") == NULL);
		CHECK(line(r.plan, "  masked  @/ws/.strands-box  (holds this run's config and "
			  "policy, subtracted from @/ws)\n"));
		CHECK(nothing_inside_masks(r.plan));
		done(&r);
	}
	/* The user's own fix, a `deny` of that folder: the masks of the files
	 * inside it are redundant and not made (they failed with ENOSPC). */
	{
		struct run r = { .config = "@/ws/.strands-box/box.toml",
				 .policy = "@/ws/.strands-box/policy.dw" };

		accepted(HARNESS("deny = [\"@/ws/.strands-box\"]\n"), &r);
		CHECK(has(r.plan, "@/ws/.strands-box", CT_MASK, 0));
		CHECK(find(r.plan, "@/ws/.strands-box/box.toml") == NULL);
		CHECK(find(r.plan, "@/ws/.strands-box/policy.dw") == NULL);
		CHECK(line(r.plan, "  deny  @/ws/.strands-box\n"));
		CHECK(lacks(r.plan, "subtracted from"));
		CHECK(nothing_inside_masks(r.plan));
		done(&r);
	}
	/* A `deny` inside the folder is covered by the folder's mask. */
	{
		struct run r = { .config = "@/ws/.strands-box/box.toml",
				 .policy = "@/ws/.strands-box/policy.dw" };

		accepted(HARNESS("deny = [\"@/ws/.strands-box/cache\"]\n"), &r);
		CHECK(has(r.plan, "@/ws/.strands-box", CT_MASK, 0));
		CHECK(find(r.plan, "@/ws/.strands-box/cache") == NULL);
		CHECK(nothing_inside_masks(r.plan));
		done(&r);
	}
	/* The policy elsewhere: each folder on its own. */
	{
		struct run r = { .config = "@/ws/.strands-box/box.toml" };

		accepted(HARNESS("read = [\"~\"]\n"), &r);
		CHECK(has(r.plan, "@/ws/.strands-box", CT_MASK, 0));
		CHECK(line(r.plan, "  masked  @/ws/.strands-box  (holds this run's configuration, "
			  "subtracted from @/ws)\n"));
		CHECK(has(r.plan, "@/home/cfg", CT_MASK, 0));
		CHECK(line(r.plan, "  masked  @/home/cfg  (holds this run's policy, subtracted "
			  "from @/home)\n"));
		CHECK(nothing_inside_masks(r.plan));
		done(&r);
	}
	/* A denied folder whose parent is no mount point: the parent is pinned,
	 * so it cannot be renamed away and a config of the workload's put in
	 * its place for the next run. */
	{
		struct run r = { .config = "@/top/a/b/box.toml", .policy = "@/top/a/b/policy.dw" };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/top\"\n[agent.filesystem]\n"
			 "write = [\"@/top\"]\ndeny = [\"@/top/a/b\"]\n", &r);
		CHECK(has(r.plan, "@/top/a/b", CT_MASK, 0));
		CHECK(has(r.plan, "@/top/a", CT_BIND, CT_READ | CT_WRITE));
		CHECK(line(r.plan, "  pinned  @/top/a  (holds a masked path; cannot be renamed)\n"));
		CHECK(nothing_inside_masks(r.plan));
		done(&r);
	}
	/* The folder holds the workspace: the files alone are masked... */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/home/cfg/ws\"\n[agent.filesystem]\n"
			 "read = [\"~\"]\n", &r);
		CHECK(find(r.plan, "@/home/cfg") == NULL);
		CHECK(has(r.plan, "@/home/cfg/box.toml", CT_MASK, 0));
		CHECK(has(r.plan, "@/home/cfg/policy.dw", CT_MASK, 0));
		CHECK(line(r.plan, "  masked  @/home/cfg/box.toml  (this run's config)\n"));
		done(&r);
	}
	/* ... and a `write` over them is refused unless a `deny` hides them. */
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"/bin/sh\"]\n"
		"workspace = \"@/home/cfg/ws\"\n[agent.filesystem]\nwrite = [\"~\"]\n",
		CFG ":7:10: `[agent]` filesystem entry \"~\" is refused: `write` reaches this box's "
		"configuration file, @/home/cfg/box.toml. A process that can rewrite its own "
		"configuration is not bound by it; grant a narrower tree, or `deny` the file");
	/* Whatever else would be mounted inside a mask is refused by name, not
	 * left to fail at start (ENOSPC): here the box directory in a store. */
	refused("name = \"demo\"\nbox_dir = \"@/home/.aws/box\"\n[agent]\ncommand = [\"/bin/sh\"]\n"
		"workspace = \"@/home/proj\"\n[agent.filesystem]\nread = [\"~\"]\n",
		"@/home/.aws/box (the box directory) lies inside @/home/.aws, which this run hides "
		"(a credential store); nothing can be shown there");
	/* A grant inside the folder keeps it shown too. */
	{
		struct run r = { .config = "@/ws/.strands-box/box.toml",
				 .policy = "@/ws/.strands-box/policy.dw" };

		run(HARNESS("read = [\"@/ws/.strands-box/cache\"]\n"), &r);
		CHECK_EQ_INT(r.rc, -1);
		CHECK_EQ_STR(r.err, sub("@/ws/.strands-box/box.toml:8:10: `[agent]` filesystem "
					"entry \"@/ws\" is refused: `write` reaches this box's "
					"configuration file, @/ws/.strands-box/box.toml. A process "
					"that can rewrite its own configuration is not bound by it; "
					"grant a narrower tree, or `deny` the file"));
		done(&r);
	}
}


/* Codex CLI runs every command as `$SHELL -lc` with the passwd entry's
 * shell: the operator's login shell when the view runs it, and a login
 * shell keeps the box's PATH (the view's /etc/profile). */
static void test_login(void)
{
	const struct passwd *pw = getpwuid(getuid());
	char want[PATH_MAX + 64], opshell[PATH_MAX] = "";
	struct stat st;

	if (pw != NULL && pw->pw_shell != NULL)
		snprintf(opshell, sizeof opshell, "%s", pw->pw_shell);
	{
		struct run r = { 0 };
		const char *sh, *prof;

		accepted(HEAD "read = [\"~/data\"]\n", &r);
		sh = env(r.plan, "SHELL");
		CHECK(sh != NULL);
		snprintf(want, sizeof want, ":%s\n", sh ? sh : "?");
		CHECK(strstr(content(r.plan, "/etc/passwd"), want) != NULL);
		CHECK(sh == NULL || strcmp(sh, "/bin/sh") != 0 || access("/bin/bash", X_OK) != 0);
		/* a usual login shell (/bin/bash, /usr/bin/zsh: the runtime shows /usr) */
		if (sh != NULL && (strncmp(opshell, "/bin/", 5) == 0 ||
				   strncmp(opshell, "/usr/", 5) == 0) && access(opshell, X_OK) == 0 &&
		    strstr(opshell, "nologin") == NULL && strcmp(opshell, "/bin/false") != 0)
			CHECK_EQ_STR(sh, opshell);
		if (lstat("/etc/profile", &st) == 0 && S_ISREG(st.st_mode)) {
			prof = content(r.plan, "/etc/profile");
			CHECK(has(r.plan, "/etc/profile", CT_FILE, 0));
			CHECK(strncmp(prof, "# cairn: a login shell in the box keeps the PATH it was "
				      "started with.\ncairn_login_path=${PATH-}\n", 89) == 0);
			CHECK(strstr(prof, "if [ -n \"$cairn_login_path\" ]; then "
				     "PATH=$cairn_login_path; export PATH; fi\n") != NULL);
			CHECK(lacks(r.plan, "profile,") && line(r.plan, ",hostname,profile}"));
		}
		done(&r);
	}
	/* A declared SHELL: the passwd entry agrees. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/home/proj\"\nenv = { SHELL = \"/bin/sh\" }\n",
			 &r);
		CHECK_EQ_STR(env(r.plan, "SHELL"), "/bin/sh");
		snprintf(want, sizeof want, ":%s:/bin/sh\n", sub("@/home"));
		CHECK(strstr(content(r.plan, "/etc/passwd"), want) != NULL);
		done(&r);
	}
}

/* HOME stays the operator's (Box's default); the start lines say when the
 * box cannot write it. */
static void test_home(void)
{
	static const char *const warn =
		"cairn: warning: [agent] HOME @/home is not writable in the box (%s), so a program "
		"that keeps its state there fails with \"Read-only file system\"; give the agent a "
		"home: a `write` grant on a directory and `env.HOME` set to it (docs/config.md, "
		"\"A home for the agent\")\n";
	char want[1024];
	{
		struct run r = { 0 };

		/* the fixture lives in /tmp, which the box replaces with its own */
		accepted(HEAD "read = [\"~/data\"]\n", &r);
		snprintf(want, sizeof want, warn, strncmp(root, "/tmp/", 5) == 0 ?
			 "it lies in the box's private /tmp, which starts empty" :
			 "no grant shows it");
		CHECK(line(r.plan, want));
		done(&r);
	}
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/home/proj\"\nenv = { HOME = \"@/home/proj\" }\n",
			 &r);
		CHECK(line(r.plan, "HOME @/home/proj is not writable in the box (only its entry is "
			  "shown)"));
		done(&r);
	}
	{
		struct run r = { 0 };

		accepted(HEAD "read = [\"~\"]\n", &r);
		CHECK(line(r.plan, "HOME @/home is not writable in the box (@/home is granted "
			  "read-only)"));
		done(&r);
	}
	/* The recipe of docs/config.md: a writable directory, and HOME set to it. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"/bin/sh\"]\nworkspace = \"@/home/proj\"\nenv = { HOME = \"@/agenthome\" }\n"
			 "[agent.filesystem]\nwrite = [\"@/agenthome\"]\n", &r);
		CHECK_EQ_STR(env(r.plan, "HOME"), sub("@/agenthome"));
		CHECK(lacks(r.plan, "is not writable in the box"));
		done(&r);
	}
}

static void test_program(void)
{
	/* bare name on env.PATH; a missing one */
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"nosuchprog\"]\n"
		"env = { PATH = \"@/home/bin\" }\n",
		CFG ":4:11: cannot resolve bare executable nosuchprog on the declared PATH");
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"@/home/data/f\"]\n",
		CFG ":4:11: executable is not an executable regular file: @/home/data/f");
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"@/home/chain/s0\"]\n",
		CFG ":4:11: @/home/chain/s0 runs through more than 8 interpreters");

	/* Under no grant at all: the file is bound, the workspace entered. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"plain\"]\nenv = { PATH = \"@/home/bin\" }\n", &r);
		if (r.plan != NULL) {
			CHECK_EQ_STR(r.plan->spec.argv[0], sub("@/home/bin/plain"));
			CHECK(r.plan->spec.argv[1] == NULL);
			CHECK(has(r.plan, "@/home/bin/plain", CT_BIND, CT_READ | CT_EXEC));
			/* the default workspace: the cwd of the run */
			CHECK_EQ_STR(r.plan->spec.cwd, sub("@/home/proj/docs"));
			CHECK(has(r.plan, "@/home/proj/docs", CT_DIR, 0));
			CHECK(line(r.plan, "  (no filesystem entry)\n"));
			CHECK(line(r.plan, "  enter  @/home/proj/docs  (workspace, entry only)\n"));
			CHECK(line(r.plan, "cairn: [agent] HOME=@/home PATH=@/boxes/demo/bin:"
				  "@/home/bin\n"));
			CHECK(strstr(r.plan->disclosure, "limits:") == NULL);
		}
		done(&r);
	}
	/* No env.PATH: the operator's PATH resolves it; the runtime covers it. */
	{
		struct run r = { 0 };
		char real[PATH_MAX];

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"sh\", \"-c\", \"true\"]\nworkspace = \"@/home/proj\"\n", &r);
		if (r.plan != NULL && realpath("/usr/bin/sh", real) != NULL) {
			CHECK_EQ_STR(r.plan->spec.argv[0], "/usr/bin/sh");
			CHECK_EQ_STR(r.plan->program, real);
			CHECK(lacks(r.plan, "(command, implicit)"));
			CHECK(find(r.plan, real) == NULL);
			CHECK(env(r.plan, "TERM") == NULL);     /* ours is not inherited */
			CHECK(line(r.plan, "cairn: [agent] HOME=@/home PATH=@/boxes/demo/bin:"
				  "/usr/local/bin:/usr/bin:/bin\n"));
		}
		done(&r);
	}
	/* A route through a link nothing shows becomes a link in the view. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"@/home/.local/bin/agent-link\"]\nworkspace = \"@/home/proj\"\n", &r);
		if (r.plan != NULL) {
			CHECK_EQ_STR(r.plan->program, sub("@/home/bin/plain"));
			CHECK_EQ_STR(r.plan->spec.argv[0], sub("@/home/.local/bin/agent-link"));
			CHECK(has(r.plan, "@/home/.local/bin/agent-link", CT_SYMLINK, 0));
			CHECK_EQ_STR(content(r.plan, "@/home/.local/bin/agent-link"),
				     "../../bin/plain");
			CHECK(line(r.plan, "  link  @/home/.local/bin/agent-link -> ../../bin/plain  "
				  "(route to the command)\n"));
			CHECK(has(r.plan, "@/home/proj", CT_DIR, 0));
		}
		done(&r);
	}
	/* env -S with a PATH= assignment */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"@/home/tools/split\"]\nworkspace = \"@/home/proj\"\n", &r);
		if (r.plan != NULL) {
			CHECK(has(r.plan, "@/home/tools/hop", CT_BIND, CT_READ | CT_EXEC));
			CHECK(line(r.plan, "  exec  @/home/tools/hop  (interpreter)\n"));
		}
		done(&r);
	}
	/* A program in an exec tree that is also writable is warned about. */
	{
		struct run r = { 0 };

		accepted("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = "
			 "[\"@/home/chain/s8\"]\nworkspace = \"@/home/proj\"\n[agent.filesystem]\n"
			 "write = [\"~/chain\"]\nexec = [\"~/chain\"]\n", &r);
		if (r.plan != NULL) {
			CHECK(has(r.plan, "@/home/chain", CT_BIND, CT_READ | CT_WRITE | CT_EXEC));
			CHECK(find(r.plan, "@/home/chain/s8") == NULL);
			CHECK(line(r.plan, "cairn: warning: [agent] command @/home/chain/s8 lies "
				  "inside the writable grant @/home/chain, so the process can "
				  "replace the program it runs\n"));
		}
		done(&r);
	}
}

static void test_workspace(void)
{
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"/bin/sh\"]\n"
		"workspace = \"@/home\"\n",
		CFG ":5:13: `workspace` @/home is the operator's home directory, where every "
		"credential store lives; name a project directory inside it");
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n[agent]\ncommand = [\"/bin/sh\"]\n"
		"workspace = \"@/home/data/f\"\n",
		CFG ":5:13: `workspace` @/home/data/f is not a directory");
	refused("name = \"demo\"\nbox_dir = \"@/home/proj/box\"\n[agent]\ncommand = [\"/bin/sh\"]\n"
		"workspace = \"@/home/proj\"\n",
		CFG ":2:11: `box_dir` @/home/proj/box is equal to or below the agent's workspace "
		"@/home/proj");
	/* read and write of one tree (a macOS habit) are one writable bind */
	{
		struct run r = { 0 };

		accepted(HEAD "read = [\"~/proj\"]\nwrite = [\"~/proj\"]\n", &r);
		CHECK(has(r.plan, "@/home/proj", CT_BIND, CT_READ | CT_WRITE));
		CHECK(lacks(r.plan, "enter  @/home/proj"));
		done(&r);
	}
}

static void test_context(void)
{
	refused("name = \"demo\"\nbox_dir = \"@/boxes/demo\"\n",
		"no workload to run: the configuration has no `[agent]` table, and a trailing "
		"argv appends to `[agent] command` rather than replacing it");
	/* A config outside any grant and no policy: nothing to mask. */
	{
		struct run r = { .policy = "@/home/pol/policy.dw" };

		accepted(HEAD "read = [\"~/data\"]\n", &r);
		CHECK(lacks(r.plan, "masked  @/home"));
		CHECK(has(r.plan, "@/home/data", CT_BIND, CT_READ));
		CHECK(has(r.plan, "@/home/proj", CT_DIR, 0));
		done(&r);
	}
	/* The plan owns everything it points at: the config may go first. */
	{
		struct run r = { 0 };

		accepted(HEAD "read = [\"~/data\"]\n", &r);
		box_config_free(r.cfg);
		r.cfg = NULL;
		if (r.plan != NULL) {
			CHECK_EQ_STR(r.plan->spec.argv[0], "/usr/bin/sh");
			CHECK_EQ_STR(r.plan->spec.hostname, "demo");
			CHECK_EQ_STR(r.plan->spec.cwd, sub("@/home/proj"));
		}
		done(&r);
	}
}

/* ---- tools (docs/tools.md "The leaf") -------------------------------------- */

#define TOOLS HEAD "read = [\"~/data\"]\n" \
	"[tool.git]\ncommand = [\"git\", \"-c\", \"x=y\"]\negress = [\"forge\"]\n" \
	"[tool.git.env]\nHOME = \"@/agenthome\"\n" \
	"[tool.git.filesystem]\nwrite = [\"~/proj\"]\nread_file = [\"~/.netrc\"]\n" \
	"[tool.net]\ncommand = [\"/bin/true\"]\nnetwork = { contain_egress = false }\n" \
	"[tool.net.filesystem]\nread = [\"~/data\"]\n" \
	"[egress.forge]\ndestinations = [\"git.test\"]\nsecret = { ref = \"env://FORGE\" }\n"

static void test_tools(void)
{
	struct run r = { 0 };
	char sock[PATH_MAX];
	struct plan *git = NULL, *net = NULL;
	char err[4096];
	/* the gateway's phantoms: FORGE carries [egress.forge], which only
	 * [tool.git] lists; AWS_ACCESS_KEY_ID no env:// route carries */
	static const char *const phantoms[] = { "FORGE=phantom-forge", "AWS_ACCESS_KEY_ID=ph-aws",
						NULL };

	fixture();
	snprintf(sock, sizeof sock, "%s", sub("@/boxes/demo/run/box.sock"));
	mkf("@/boxes/demo/run/box.sock", "", 0600);     /* where the broker binds it */
	run(TOOLS, &r);
	CHECK_EQ_INT(r.rc, 0);
	if (r.rc != 0) {
		fprintf(stderr, "  refused: %s\n", r.err);
		done(&r);
		return;
	}
	char cfgfile[PATH_MAX], polfile[PATH_MAX], home[PATH_MAX], cwd[PATH_MAX];
	snprintf(cfgfile, sizeof cfgfile, "%s", sub("@/home/cfg/box.toml"));
	snprintf(polfile, sizeof polfile, "%s", sub("@/home/cfg/policy.dw"));
	snprintf(home, sizeof home, "%s", sub("@/home"));
	snprintf(cwd, sizeof cwd, "%s", sub("@/home/proj/docs"));
	struct plan_ctx ctx = {
		.cfg = r.cfg, .config_path = cfgfile, .policy_path = polfile, .home = home,
		.operator_path = "/usr/bin:/bin", .run_cwd = cwd, .proxy_port = 8080,
		.telemetry_port = 4318, .broker_socket = sock, .agent_workspace = r.plan->spec.cwd,
		.gateway_env = phantoms,
	};
	struct plan *agent = NULL;
	CHECK_EQ_INT(plan_agent(&ctx, &agent, err, sizeof err), 0);
	/* the agent: shims, and the socket bound read-only onto a directory of its own */
	CHECK(has(agent, "@/boxes/demo/bin", CT_BIND, CT_READ | CT_EXEC));
	CHECK(has(agent, "@/boxes/demo/run", CT_DIR, 0));
	CHECK(has(agent, "@/boxes/demo/run/box.sock", CT_BIND, CT_READ));
	CHECK(line(agent, "  connect  @/boxes/demo/run/box.sock  (the broker: tools run through it)"));
	CHECK(env(agent, "PATH") != NULL && strncmp(env(agent, "PATH"), sub("@/boxes/demo/bin:"),
						   strlen(sub("@/boxes/demo/bin:"))) == 0);
	/* a route a tool lists is the tool's alone: its phantom too */
	CHECK(env(agent, "FORGE") == NULL);
	CHECK(env(agent, "AWS_ACCESS_KEY_ID") != NULL);

	CHECK_EQ_INT(plan_tool(&ctx, &r.cfg->tools[0], &git, err, sizeof err), 0);
	if (git != NULL) {
		CHECK_EQ_STR(git->label, "[tool.git]");
		CHECK_EQ_STR(git->program, "/usr/bin/git");
		/* its argv: the program and the fixed arguments (the call's replace them) */
		CHECK_EQ_STR(git->spec.argv[1], "-c");
		CHECK_EQ_STR(git->spec.argv[2], "x=y");
		CHECK(git->spec.argv[3] == NULL);
		/* its grants, no shims, no socket, the CA only; no mediation */
		CHECK(has(git, "@/home/proj", CT_BIND, CT_READ | CT_WRITE));
		CHECK(find(git, "@/boxes/demo/bin") == NULL);
		CHECK(find(git, "@/boxes/demo/run/box.sock") == NULL);
		CHECK(find(git, "@/boxes/demo/run") == NULL);
		CHECK(has(git, "@/boxes/demo/trust/cert.pem", CT_BIND, CT_READ));
		CHECK(find(git, "@/home/data") == NULL);        /* the agent's grant, not git's */
		CHECK(!git->spec.mediated && git->n_areas == 0);
		/* one listener, the gateway's; no agent receiver */
		CHECK_EQ_INT(git->spec.n_listen, 1);
		CHECK(!git->spec.share_net);
		CHECK(env(git, "HTTPS_PROXY") != NULL && env(git, "SSL_CERT_FILE") != NULL);
		CHECK(env(git, "OTEL_EXPORTER_OTLP_ENDPOINT") == NULL);
		CHECK_EQ_STR(env(git, "HOME"), sub("@/agenthome"));
		CHECK(env(git, "FORGE") != NULL && strcmp(env(git, "FORGE"), "phantom-forge") == 0);
		CHECK_EQ_STR(env(git, "PATH"), "/usr/local/bin:/usr/bin:/bin");
		/* the call's cwd: shown where its grant is, else the table's workspace */
		CHECK(plan_shows(git, sub("@/home/proj/docs")));
		CHECK(!plan_shows(git, sub("@/home/data")));
		CHECK(plan_shows(git, sub("@/home/proj")));
		CHECK_EQ_STR(git->spec.cwd, sub("@/home/proj"));       /* the agent's workspace */
		/* a credential store named exactly: its spawns say they read it */
		CHECK_EQ_INT(git->n_cred_reads, 1);
		if (git->n_cred_reads == 1)
			CHECK_EQ_STR(git->cred_reads[0], "~/.netrc");
		CHECK(line(git, "cairn: [tool.git] runs /usr/bin/git with no policy decision"));
	}
	CHECK_EQ_INT(plan_tool(&ctx, &r.cfg->tools[1], &net, err, sizeof err), 0);
	if (net != NULL) {
		/* native egress: the host's network and resolver, no gateway to name */
		CHECK(net->spec.share_net);
		CHECK_EQ_INT(net->spec.n_listen, 0);
		CHECK(env(net, "HTTPS_PROXY") == NULL && env(net, "SSL_CERT_FILE") == NULL);
		CHECK(find(net, "@/boxes/demo/trust/cert.pem") == NULL);
		CHECK(find(net, "/etc/resolv.conf") == NULL ||
		      has(net, "/etc/resolv.conf", CT_BIND, CT_READ));
		CHECK(line(net, "cairn: [tool.net] native egress: connects to the network directly"));
		CHECK_EQ_INT(net->n_cred_reads, 0);
		/* a tool with no egress list gets every route, as in Box */
		CHECK(env(net, "FORGE") != NULL);
	}
	plan_free(git);
	plan_free(net);
	plan_free(agent);
	unlink(sub("@/boxes/demo/run/box.sock"));
	done(&r);
}

static const struct test_case tests[] = {
	{ "sample", test_sample },
	{ "entry_refusals", test_entry_refusals },
	{ "floors", test_floors },
	{ "authority", test_authority },
	{ "login", test_login },
	{ "home", test_home },
	{ "program", test_program },
	{ "workspace", test_workspace },
	{ "context", test_context },
	{ "tools", test_tools },
};

TEST_MAIN(tests)
