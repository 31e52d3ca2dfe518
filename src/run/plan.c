/* plan.c - a process table of box.toml becomes a sandbox plan (plan.h).
 *
 * Divisions, in file order:
 *    1. storage       owned strings, growable arrays, text buffers
 *    2. refusals      fail_at (file:line:col prefix), entry_fail (fs-entry prefix)
 *    3. paths         lexical containment, the effective mount of a path
 *    4. mounts        bind, dir, mask, link, file (one mount per path, merged)
 *    5. floors        Box's floors and the run's own (box dir, config, policy)
 *    6. grants        the filesystem lists: checks, nesting, mounts, masks
 *    7. runtime       /usr, loader trees, /etc, synthesized /etc files, box dir
 *    8. program       command[0], link nodes of routes, shebang hops
 *    9. workspace     the initial cwd and its entry
 *   10. environment   docs/box-compat.md "The environment"
 *   11. disclosure    docs/box-compat.md "The grant disclosure"
 *   12. entry points  plan_agent, plan_free
 *
 * The plan is a snapshot: every path is examined once, here, and the
 * launcher builds exactly what the plan says.  Mounts are applied shallowest
 * first with ties in array order, so "which mount shows path p" is the
 * longest mount path at or above p, the later one on a tie (effective()). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "plan.h"

#define SHEBANG_MAX 512         /* bytes of a #! line Box reads */
#define SHEBANG_HOPS 8          /* interpreters followed from the command */
#define LINK_MAX_HOPS 40        /* symbolic links on one route (the kernel's limit) */
#define N_STORES 15

/* ==== 1. storage ======================================================== */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3)))
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t need, cap;
	char *p;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || __builtin_add_overflow(b->len, (size_t)n + 1, &need)) {
		b->oom = true;
		return;
	}
	if (need > b->cap) {
		for (cap = b->cap ? b->cap : 256; cap < need; cap *= 2)
			;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = p, b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Everything the plan points at; plan_free releases it. */
struct plan_priv {
	char **strs;                    /* every string the plan owns */
	size_t n_strs, cap_strs;
	struct ct_mount *mounts;
	const char **why;               /* per mount: what put it there (refusal texts) */
	size_t n_mounts, cap_mounts, cap_why;
	const char **argv;
	size_t n_argv, cap_argv;
	const char **envp;
	size_t n_env, cap_env;
	uint16_t ports[2];
	struct med_area_spec *areas;
	size_t n_areas, cap_areas;
	const char **cred;              /* credential stores the lists name, `~/…` */
	size_t n_cred, cap_cred;
};

/* Room for n + 1 elements (the +1 keeps argv and envp NULL-terminated). */
static int grow(void *arrp, size_t *cap, size_t n, size_t elem)
{
	void **arr = arrp, *p;
	size_t c;

	if (n + 1 < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	if (c > SIZE_MAX / elem || (p = realloc(*arr, c * elem)) == NULL)
		return -1;
	*arr = p, *cap = c;
	return 0;
}

enum disclosure_part { D_GRANTS, D_EXEC, D_ENTER, D_RUNTIME, D_BOX, D_MASKS, D_WARN, D_N };

struct store {
	const char *path;               /* canonical where it exists */
	bool exists;
};

/* One planning: the context, the plan being filled and what every step needs. */
struct pl {
	const struct plan_ctx *ctx;
	const struct box_config *cfg;
	const struct box_process *proc;
	struct plan *plan;
	struct plan_priv *pv;
	char *err;
	size_t errlen;
	struct sbuf d[D_N];
	char home[PATH_MAX];            /* the operator's home, canonical where it exists */
	char home2[PATH_MAX];           /* the declared env.HOME when it differs; "" */
	const char *agent_home;         /* HOME inside */
	char boxdir[PATH_MAX];          /* canonical */
	char boxlex[PATH_MAX];          /* as the config resolves it */
	char bin[PATH_MAX + 8];         /* <boxdir>/bin */
	char ws[PATH_MAX];              /* the workspace, canonical */
	struct store stores[2 * N_STORES];
	size_t n_stores;
	const char *profile;            /* the host's /etc/profile, NULL: not a regular file */
	const char *shell;              /* the login shell: passwd entry and SHELL */
	const char *path_env;           /* PATH inside */
	const char *path_tail;          /* PATH inside without bin/: what lookups use */
	char decided[3][PATH_MAX];      /* mediated: the decided roots bound in ("" unused) */
	bool leaf;                      /* a [tool.*] table: a leaf of its own (docs/tools.md) */
	bool native;                    /* leaf with network.contain_egress = false */
};

static char *keep(struct pl *pl, char *s)
{
	struct plan_priv *pv = pl->pv;

	if (s == NULL || grow(&pv->strs, &pv->cap_strs, pv->n_strs, sizeof *pv->strs) != 0) {
		free(s);
		return NULL;
	}
	return pv->strs[pv->n_strs++] = s;
}

static char *dupk(struct pl *pl, const char *s)
{
	return keep(pl, strdup(s));
}

__attribute__((format(printf, 2, 3)))
static char *fmtk(struct pl *pl, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : keep(pl, s);
}

/* ==== 2. refusals ======================================================= */

__attribute__((format(printf, 4, 5)))
static int fail_at(struct pl *pl, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;
	size_t off = 0;
	int n;

	if (pl->err == NULL || pl->errlen == 0)
		return -1;
	pl->err[0] = '\0';
	if (line) {
		n = snprintf(pl->err, pl->errlen, "%s:%u:%u: ",
			     pl->cfg->file ? pl->cfg->file : "box.toml", line, col);
		if (n > 0)
			off = (size_t)n < pl->errlen ? (size_t)n : pl->errlen - 1;
	}
	va_start(ap, fmt);
	vsnprintf(pl->err + off, pl->errlen - off, fmt, ap);
	va_end(ap);
	return -1;
}

static int nomem(struct pl *pl)
{
	return fail_at(pl, 0, 0, "out of memory");
}

/* "`[agent]` filesystem entry "<authored>" is refused: <reason>" at the entry. */
__attribute__((format(printf, 3, 4)))
static int entry_fail(struct pl *pl, const struct box_path *e, const char *fmt, ...)
{
	char reason[3 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	return fail_at(pl, e->line, e->col, "`%s` filesystem entry \"%s\" is refused: %s",
		       pl->plan->label, e->authored, reason);
}

#define cmd_fail(pl, ...) fail_at((pl), (pl)->proc->command.line, (pl)->proc->command.col, __VA_ARGS__)

/* ==== 3. paths ========================================================== */

/* p is dir or below it, whole components (both canonical). */
static bool within(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return p[0] == '/';
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static bool inside(const char *p, const char *dir)
{
	return within(p, dir) && strcmp(p, dir) != 0;
}

/* realpath, or the path itself (slashes trimmed) when it does not exist. */
static void canon_or_self(const char *p, char out[PATH_MAX])
{
	size_t n;

	if (realpath(p, out) != NULL)
		return;
	snprintf(out, PATH_MAX, "%s", p);
	for (n = strlen(out); n > 1 && out[n - 1] == '/'; n--)
		out[n - 1] = '\0';
}

/* The mount that shows p: index, or -1 when p is in none (absent inside). */
static ssize_t shown_by(const struct plan_priv *pv, const char *p)
{
	ssize_t best = -1;
	size_t bl = 0;

	for (size_t i = 0; i < pv->n_mounts; i++) {
		size_t l = strlen(pv->mounts[i].path);

		if (pv->mounts[i].kind != CT_SYMLINK && within(p, pv->mounts[i].path) &&
		    (best < 0 || l >= bl))
			best = (ssize_t)i, bl = l;
	}
	return best;
}

static ssize_t effective(const struct pl *pl, const char *p)
{
	return shown_by(pl->pv, p);
}

static ssize_t mount_at(const struct pl *pl, const char *p)
{
	for (size_t i = pl->pv->n_mounts; i-- > 0;)
		if (strcmp(pl->pv->mounts[i].path, p) == 0)
			return (ssize_t)i;
	return -1;
}

/* ==== 4. mounts ========================================================= */

static int mount_push(struct pl *pl, enum ct_mount_kind kind, const char *path, const char *why,
		      struct ct_mount **out)
{
	struct plan_priv *pv = pl->pv;
	char *p = dupk(pl, path);

	if (p == NULL || grow(&pv->mounts, &pv->cap_mounts, pv->n_mounts, sizeof *pv->mounts) ||
	    grow(&pv->why, &pv->cap_why, pv->n_mounts, sizeof *pv->why))
		return nomem(pl);
	*out = &pv->mounts[pv->n_mounts];
	memset(*out, 0, sizeof **out);
	(*out)->kind = kind;
	(*out)->path = p;
	pv->why[pv->n_mounts++] = why;
	return 0;
}

/* A bind at a path already bound widens that bind (read and write of one
 * tree, as a Box config names them for macOS, are one writable bind). */
static int add_bind(struct pl *pl, const char *path, unsigned access, bool optional,
		    const char *why)
{
	ssize_t i = mount_at(pl, path);
	struct ct_mount *m;

	if (i >= 0 && (pl->pv->mounts[i].kind == CT_BIND || pl->pv->mounts[i].kind == CT_DIR)) {
		m = &pl->pv->mounts[i];
		m->access = (m->kind == CT_BIND ? m->access : 0) | access;
		m->optional = m->kind == CT_BIND ? m->optional && optional : optional;
		m->kind = CT_BIND;
		return 0;
	}
	if (mount_push(pl, CT_BIND, path, why, &m) != 0)
		return -1;
	m->access = access;
	m->optional = optional;
	return 0;
}

static int add_dir(struct pl *pl, const char *path, const char *why)
{
	struct ct_mount *m;

	return mount_at(pl, path) >= 0 ? 0 : mount_push(pl, CT_DIR, path, why, &m);
}

/* A mask hides everything beneath it (mode 000, read-only, empty), so a mask
 * at or inside another one hides nothing more; worse, its mount point would
 * need an inode in the outer mask's tmpfs, which has room for none.  Such a
 * mask is not made, and the masks a new one covers are dropped. */
static int add_mask(struct pl *pl, const char *path, const char *why)
{
	struct plan_priv *pv = pl->pv;
	ssize_t e = effective(pl, path);
	struct ct_mount *m;
	size_t k = 0;

	if (e >= 0 && pv->mounts[e].kind == CT_MASK)
		return 0;
	for (size_t i = 0; i < pv->n_mounts; i++) {
		if (pv->mounts[i].kind == CT_MASK && inside(pv->mounts[i].path, path))
			continue;
		pv->mounts[k] = pv->mounts[i];
		pv->why[k++] = pv->why[i];
	}
	pv->n_mounts = k;
	return mount_push(pl, CT_MASK, path, why, &m);
}

/* The mask that hides p, or NULL when p shows (or is absent). */
static const struct ct_mount *mask_over(const struct pl *pl, const char *p)
{
	ssize_t e = effective(pl, p);

	return e >= 0 && pl->pv->mounts[e].kind == CT_MASK ? &pl->pv->mounts[e] : NULL;
}

static int add_link(struct pl *pl, const char *path, const char *target, const char *why)
{
	struct ct_mount *m;

	if (mount_push(pl, CT_SYMLINK, path, why, &m) != 0)
		return -1;
	if ((m->target = dupk(pl, target)) == NULL)
		return nomem(pl);
	return 0;
}

static int add_file(struct pl *pl, const char *path, char *data)
{
	struct ct_mount *m;

	if (data == NULL || mount_push(pl, CT_FILE, path, "runtime", &m) != 0)
		return nomem(pl);
	m->data = data;
	m->len = strlen(data);
	return 0;
}

/* A small regular file's bytes, kept by the plan; NULL when p is not one.
 * The runtime's /etc files are copied into the view rather than bound:
 * a copy costs less than a mount at every start, and they are read-only
 * configuration the workload only reads. */
#define RUNTIME_COPY_MAX (256u << 10)
static char *slurp_small(struct pl *pl, const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > RUNTIME_COPY_MAX ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL)
		goto out;
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (n != (size_t)st.st_size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
	*len = n;
	buf = keep(pl, buf);
out:
	close(fd);
	return buf;
}

/* readlink into a NUL-terminated buffer; -1 when p is no link or too long. */
static int read_link(const char *p, char out[PATH_MAX])
{
	ssize_t n = readlink(p, out, PATH_MAX);

	if (n < 0 || n >= PATH_MAX)
		return -1;
	out[n] = '\0';
	return 0;
}

/* ==== 5. floors ========================================================= */

static const char *const system_trees[] = {
	"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
	"/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/local", "/usr/sbin",
	"/usr/share", "/var",
};

static const struct {
	const char *path, *what;
} overlap_floors[] = {
	{ "/etc/shadow", "the password database" },
	{ "/etc/gshadow", "the password database" },
	{ "/etc/sudoers", "the privilege configuration" },
	{ "/etc/sudoers.d", "the privilege configuration" },
};

/* Box's list, then cairn's additions (tokens that tools keep in the home). */
static const char *const store_names[N_STORES] = {
	".aws", ".ssh", ".gnupg", ".netrc", ".docker", ".kube", ".config/gcloud",
	".config/google-chrome", ".mozilla",
	".config/gh", ".git-credentials", ".npmrc", ".cargo/credentials.toml",
	".cargo/credentials", ".pypirc",
};

static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random" };


/* p, a credential store a list names, in the plan's credential_reads once,
 * spelled `~/…` under the operator's home. */
static int add_cred_read(struct pl *pl, const char *p)
{
	struct plan_priv *pv = pl->pv;
	size_t hl = strlen(pl->home);
	char *sp = hl > 1 && strncmp(p, pl->home, hl) == 0 && (p[hl] == '/' || p[hl] == '\0')
		   ? fmtk(pl, "~%s", p + hl) : fmtk(pl, "%s", p);

	if (sp == NULL)
		return nomem(pl);
	for (size_t i = 0; i < pv->n_cred; i++)
		if (strcmp(pv->cred[i], sp) == 0)
			return 0;
	if (grow(&pv->cred, &pv->cap_cred, pv->n_cred, sizeof *pv->cred) != 0)
		return nomem(pl);
	pv->cred[pv->n_cred++] = sp;
	pl->plan->cred_reads = pv->cred;
	pl->plan->n_cred_reads = pv->n_cred;
	return 0;
}

static bool is_store(const struct pl *pl, const char *p)
{
	for (size_t i = 0; i < pl->n_stores; i++)
		if (strcmp(p, pl->stores[i].path) == 0)
			return true;
	return false;
}

/* Why no grant may name the canonical path p (st: its lstat), or NULL.  A
 * credential store named exactly passes: it is announced instead. */
static const char *floor_reason(const struct pl *pl, const char *p, const struct stat *st,
				char *buf, size_t n)
{
	const char *cfgp = pl->ctx->config_path, *polp = pl->ctx->policy_path;
	bool dev = false;
	size_t i;

	for (i = 0; i < sizeof system_trees / sizeof system_trees[0]; i++)
		if (strcmp(p, system_trees[i]) == 0)
			return "it is a whole system tree; name the part of it the workload needs";
	for (i = 0; i < sizeof overlap_floors / sizeof overlap_floors[0]; i++)
		if (within(p, overlap_floors[i].path) || within(overlap_floors[i].path, p)) {
			snprintf(buf, n, "it reaches %s %s", overlap_floors[i].what,
				 overlap_floors[i].path);
			return buf;
		}
	/* The view mounts a fresh /proc: a bind of the host's /proc/<pid> over it
	 * would hand the workload host processes (and their root/ links). */
	if (inside(p, "/proc"))
		return "it lies in /proc, which the sandbox mounts fresh for its own processes";
	for (i = 0; i < sizeof devices / sizeof devices[0]; i++)
		dev |= strcmp(p, devices[i]) == 0;
	if (!dev && (inside(p, "/dev") || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)))
		return "it is a device other than /dev/null, /dev/zero, /dev/urandom and /dev/random";
	snprintf(buf, n, "%s/private", pl->boxdir);
	if (within(p, buf))
		return "the grant would expose private Box state";
	if (within(p, pl->boxdir) || within(p, pl->boxlex))
		return "the grant would expose the Box's own directory";
	if (cfgp != NULL && strcmp(p, cfgp) == 0)
		return "it is the configuration this run loaded";
	if (polp != NULL && strcmp(p, polp) == 0)
		return "it is the policy this run loaded";
	for (i = 0; i < pl->n_stores; i++)
		if (inside(p, pl->stores[i].path)) {
			snprintf(buf, n, "it lies inside the credential store %s", pl->stores[i].path);
			return buf;
		}
	return NULL;
}

/* ==== 6. grants ========================================================= */

static const unsigned list_access[BOX_FS_NLISTS] = {
	[BOX_FS_READ] = CT_READ,
	[BOX_FS_WRITE] = CT_READ | CT_WRITE,
	[BOX_FS_READ_FILE] = CT_READ,
	[BOX_FS_WRITE_FILE] = CT_READ | CT_WRITE,
	[BOX_FS_EXEC] = CT_READ | CT_EXEC,
};

/* The operation a list grants: nesting within one operation is refused. */
static int list_op(int l)
{
	switch (l) {
	case BOX_FS_READ: case BOX_FS_READ_FILE: return 0;
	case BOX_FS_WRITE: case BOX_FS_WRITE_FILE: return 1;
	default: return l;
	}
}

#define FS(pl, l) (&(pl)->proc->fs[(l)])
#define LNAME(l) box_fs_list_name((enum box_fs_list)(l))

/* Exists, is no link, is canonical, has the type its list takes. */
static int check_entry(struct pl *pl, int l, const struct box_path *e, struct stat *st)
{
	const char *p = e->resolved;
	char real[PATH_MAX];

	if (lstat(p, st) != 0) {
		int er = errno;

		/* Box on Linux: the namespace backend hides a path by mounting over
		 * it, so it cannot refuse one that does not exist yet. */
		if (er == ENOENT && l == BOX_FS_DENY)
			return entry_fail(pl, e, "%s does not exist yet, and a `deny` on Linux "
					  "hides a path by mounting over it, so it cannot refuse a "
					  "not-yet-existing path; create it first, or deny an "
					  "existing directory above it", p);
		if (er == ENOENT)
			return entry_fail(pl, e, "%s is not there: No such file or directory (os "
					  "error 2). A grant on a path that does not exist grants "
					  "nothing and says so nowhere", p);
		return entry_fail(pl, e, "%s cannot be examined: %s (os error %d)", p,
				  strerror(er), er);
	}
	if (S_ISLNK(st->st_mode))
		return entry_fail(pl, e, "%s is a symbolic link. A grant carries the identity the "
				  "kernel checks, so a link renders a rule that matches nothing; "
				  "name what it points at", p);
	if (realpath(p, real) == NULL)
		return entry_fail(pl, e, "%s cannot be resolved: %s (os error %d)", p,
				  strerror(errno), errno);
	if (strcmp(real, p) != 0)
		return entry_fail(pl, e, "%s is not the path the kernel checks, which is %s. Name "
				  "the canonical path", p, real);
	if ((l == BOX_FS_READ_FILE || l == BOX_FS_WRITE_FILE) && S_ISDIR(st->st_mode))
		return entry_fail(pl, e, "%s is a directory, and `%s` names one file; grant a "
				  "directory with `%s`", p, LNAME(l),
				  l == BOX_FS_READ_FILE ? "read" : "write");
	if ((l == BOX_FS_READ_FILE || l == BOX_FS_WRITE_FILE) && !S_ISREG(st->st_mode) &&
	    !S_ISCHR(st->st_mode))
		return entry_fail(pl, e, "%s is not a regular file", p);
	if (l == BOX_FS_METADATA && !S_ISDIR(st->st_mode))
		return entry_fail(pl, e, "%s is a file, and `metadata` names a directory", p);
	/* Box's words: Landlock, like Box's namespace backend, has no right that
	 * lists a directory without reading what it holds */
	if (l == BOX_FS_LIST && !S_ISDIR(st->st_mode))
		return entry_fail(pl, e, "%s is a file, and `list` enumerates a directory tree", p);
	if (l == BOX_FS_LIST)
		return entry_fail(pl, e, "%s cannot be listed without its contents on Linux: the "
				  "namespace backend has no lowering for `list`; grant `read` "
				  "instead", p);
	if (l == BOX_FS_EXEC && !S_ISDIR(st->st_mode) &&
	    !(S_ISREG(st->st_mode) && (st->st_mode & 0111)))
		return entry_fail(pl, e, "%s is not an executable regular file", p);
	if (l == BOX_FS_EXEC && S_ISREG(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))
		return entry_fail(pl, e, "%s is setuid or setgid; no_new_privs would run it "
				  "without its privileges, so grant a program that needs none", p);
	return 0;
}

/* Floors, the write floor of the run's config and policy, nesting. */
static int judge_entry(struct pl *pl, int l, size_t j, const struct stat *st)
{
	const struct box_path *b = &FS(pl, l)->v[j];
	const char *p = b->resolved, *why;
	char buf[PATH_MAX + 128];

	if (l == BOX_FS_DENY) {
		/* A mode-000 mask above box_dir would cut the agent off from bin/. */
		if (within(pl->boxdir, p))
			return entry_fail(pl, b, "%s encloses this box's directory %s, through which "
					  "the agent reaches its tools; deny what lies beside it",
					  p, pl->boxdir);
		return 0;
	}
	if ((why = floor_reason(pl, p, st, buf, sizeof buf)) != NULL)
		return entry_fail(pl, b, "%s is refused beneath every grant: %s", p, why);
	/* A credential store named exactly punches through the grant above it
	 * (and a tool's shell:spawn says it reads one: credential_reads). */
	if (is_store(pl, p))
		return add_cred_read(pl, p);
	for (int k = 0; k <= l; k++) {
		if (list_op(k) != list_op(l))
			continue;
		for (size_t i = 0; i < (k == l ? j : FS(pl, k)->n); i++) {
			const struct box_path *a = &FS(pl, k)->v[i];

			if (is_store(pl, a->resolved))
				continue;
			if (strcmp(a->resolved, p) == 0)
				return entry_fail(pl, b, "%s is granted by both `%s` and `%s`; name "
						  "it once", p, LNAME(k), LNAME(l));
			if (inside(p, a->resolved))
				return entry_fail(pl, b, "%s lies inside %s, granted by `%s`. The "
						  "union is the wider grant, so name only %s", p,
						  a->resolved, LNAME(k), a->resolved);
			if (inside(a->resolved, p))
				return entry_fail(pl, a, "%s lies inside %s, granted by `%s`. The "
						  "union is the wider grant, so name only %s",
						  a->resolved, p, LNAME(l), p);
		}
	}
	return 0;
}

/* Some grant that shows contents (read, write, exec), or a decided root
 * of a mediated box, lies strictly above p. */
static bool under_tree(const struct pl *pl, const char *p)
{
	static const int trees[] = { BOX_FS_READ, BOX_FS_WRITE, BOX_FS_EXEC };

	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < FS(pl, trees[t])->n; i++)
			if (inside(p, FS(pl, trees[t])->v[i].resolved))
				return true;
	for (size_t d = 0; d < 3; d++)
		if (pl->decided[d][0] && inside(p, pl->decided[d]))
			return true;
	return false;
}

/* p is at or beneath a grant that shows contents. */
static bool in_tree_grant(const struct pl *pl, const char *p)
{
	static const int trees[] = { BOX_FS_READ, BOX_FS_WRITE, BOX_FS_EXEC };

	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < FS(pl, trees[t])->n; i++)
			if (within(p, FS(pl, trees[t])->v[i].resolved))
				return true;
	return false;
}

/* ==== 5b. decided roots (mediated) ===================================== */

/* The operator's home, the agent's and the workspace, where no grant shows
 * them, are in the view of a mediated box with no right of the kernel's:
 * every operation there is the mediator's to decide (docs/mediator.md "The
 * view").  Bound writable (the supervisor performs what is permitted
 * through the view), never executable. */
static int plan_decided(struct pl *pl)
{
	char ws[PATH_MAX];
	const char *cand[3];
	size_t n = 0;

	if (!pl->ctx->mediated || pl->leaf)
		return 0;
	canon_or_self(pl->proc->workspace.authored ? pl->proc->workspace.resolved :
		      pl->ctx->run_cwd ? pl->ctx->run_cwd : "", ws);
	cand[0] = pl->home;
	cand[1] = pl->home2[0] ? pl->home2 : NULL;
	cand[2] = ws;
	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		const char *p = cand[i];
		bool skip = p == NULL || p[0] != '/' || strcmp(p, "/") == 0 || in_tree_grant(pl, p) ||
			    lstat(p, &st) != 0 || !S_ISDIR(st.st_mode);
		for (size_t j = 0; !skip && j < 3; j++)
			skip = j != i && cand[j] != NULL && inside(p, cand[j]) &&
			       !(j > i && strcmp(cand[j], p) == 0);
		for (size_t j = 0; !skip && j < n; j++)
			skip = strcmp(pl->decided[j], p) == 0;
		if (skip)
			continue;
		snprintf(pl->decided[n], sizeof pl->decided[n], "%s", p);
		if (add_bind(pl, p, CT_READ | CT_WRITE | CT_DECIDED, false, "decided") != 0)
			return -1;
		sb_add(&pl->d[D_GRANTS], "  decided  %s  (mediated: each operation asked of the "
		       "policy)\n", p);
		n++;
	}
	return 0;
}

static bool granted_exactly(const struct pl *pl, const char *p)
{
	for (int l = 0; l < BOX_FS_DENY; l++)
		for (size_t i = 0; i < FS(pl, l)->n; i++)
			if (strcmp(p, FS(pl, l)->v[i].resolved) == 0)
				return true;
	return false;
}

/* Bind each directory between the writable tree that shows p and p itself
 * onto itself.  A mount point cannot be renamed (EBUSY), so the workload
 * cannot move p's mask away together with a parent and leave the next run
 * to plan by a path that then names what the workload put there: a config
 * it wrote, a box directory it made, a credential store moved aside. */
static int pin_ancestors(struct pl *pl, const char *p)
{
	char a[PATH_MAX];

	snprintf(a, sizeof a, "%s", p);
	for (;;) {
		char *slash = strrchr(a, '/');
		ssize_t e;

		if (slash == NULL || slash == a)
			return 0;
		*slash = '\0';
		if ((e = effective(pl, a)) < 0 || pl->pv->mounts[e].kind != CT_BIND ||
		    strcmp(pl->pv->mounts[e].path, a) == 0)
			return 0;       /* not shown, or the tree's own root (a mount point) */
		unsigned access = pl->pv->mounts[e].access;
		if (!(access & CT_WRITE))
			return 0;       /* nothing beneath a read-only tree can be renamed */
		if (add_bind(pl, a, access, false, "pinned") != 0)
			return -1;
		sb_add(&pl->d[D_MASKS], "  pinned  %s  (holds a masked path; cannot be renamed)\n",
		       a);
	}
}

/* Something the box needs lies at or inside dir: the workspace, the box
 * directory, a filesystem entry other than a `deny` (a mask there would hide
 * it, or need a mount point inside the mask). */
static bool holds_needed(const struct pl *pl, const char *dir, const char *ws)
{
	if (within(ws, dir) || within(pl->boxdir, dir) || within(pl->boxlex, dir))
		return true;
	for (int l = 0; l < BOX_FS_DENY; l++)
		for (size_t i = 0; i < FS(pl, l)->n; i++)
			if (within(FS(pl, l)->v[i].resolved, dir))
				return true;
	return false;
}

/* The loaded config and policy beneath a tree grant (docs/config.md, "The
 * loaded config and policy").  Box subtracts the directory holding them from
 * a directory grant that encloses it: its Linux harness keeps box.toml and
 * policy.dw in <workspace>/.strands-box and grants the workspace.  cairn
 * masks that directory; it is a mount point, so the workload can neither
 * rename nor replace it (EBUSY), and the mask is read-only with mode 000.
 * Where the directory holds something the box needs, the files alone are
 * masked, and a `write` that reaches them is refused unless a `deny` already
 * hides them.  Whatever hides a file, the directories between the writable
 * tree and the mask are pinned: a next run reads the config by path. */
static int plan_authority(struct pl *pl)
{
	const char *files[2] = { pl->ctx->config_path, pl->ctx->policy_path };
	static const char *const fwhat[2] = { "configuration", "policy" };
	static const char *const fwhy[2] = { "this run's config", "this run's policy" };
	char dirs[2][PATH_MAX], ws[PATH_MAX];
	bool subtract[2] = { false, false };
	const struct ct_mount *m;

	canon_or_self(pl->proc->workspace.authored ? pl->proc->workspace.resolved :
		      pl->ctx->run_cwd ? pl->ctx->run_cwd : "", ws);
	for (int f = 0; f < 2; f++) {
		char *slash;

		if (files[f] == NULL || mask_over(pl, files[f]) != NULL)
			continue;
		snprintf(dirs[f], sizeof dirs[f], "%s", files[f]);
		slash = strrchr(dirs[f], '/');
		slash[slash == dirs[f]] = '\0';
		subtract[f] = under_tree(pl, dirs[f]) && !holds_needed(pl, dirs[f], ws);
	}
	/* One mask when one directory holds both (or encloses the other's). */
	if (subtract[0] && subtract[1] && within(dirs[1], dirs[0]))
		subtract[1] = false;
	else if (subtract[0] && subtract[1] && within(dirs[0], dirs[1]))
		subtract[0] = false;
	for (int f = 0; f < 2; f++) {
		ssize_t e;

		if (!subtract[f])
			continue;
		e = effective(pl, dirs[f]);
		sb_add(&pl->d[D_MASKS], "  masked  %s  (holds this run's %s, subtracted from %s)\n",
		       dirs[f], files[!f] != NULL && within(files[!f], dirs[f]) ?
		       "config and policy" : fwhat[f], pl->pv->mounts[e].path);
		if (add_mask(pl, dirs[f], fwhy[f]) != 0 || pin_ancestors(pl, dirs[f]) != 0)
			return -1;
	}
	for (int f = 0; f < 2; f++) {
		if (files[f] == NULL)
			continue;
		if ((m = mask_over(pl, files[f])) != NULL) {
			if (pin_ancestors(pl, m->path) != 0)
				return -1;
			continue;
		}
		for (size_t j = 0; j < FS(pl, BOX_FS_WRITE)->n; j++) {
			const struct box_path *b = &FS(pl, BOX_FS_WRITE)->v[j];

			if (within(files[f], b->resolved))
				return entry_fail(pl, b, "`write` reaches this box's %s file, %s. A "
						  "process that can rewrite its own %s is not bound "
						  "by it; grant a narrower tree, or `deny` the file",
						  fwhat[f], files[f], fwhat[f]);
		}
		if (!under_tree(pl, files[f]))
			continue;
		if (add_mask(pl, files[f], fwhy[f]) != 0)
			return -1;
		sb_add(&pl->d[D_MASKS], "  masked  %s  (%s)\n", files[f], fwhy[f]);
		if (pin_ancestors(pl, files[f]) != 0)
			return -1;
	}
	return 0;
}

static int plan_grants(struct pl *pl)
{
	static const int order[] = { BOX_FS_READ, BOX_FS_WRITE, BOX_FS_READ_FILE,
				     BOX_FS_WRITE_FILE, BOX_FS_LIST, BOX_FS_METADATA, BOX_FS_EXEC,
				     BOX_FS_DENY };
	struct stat st;
	int l;

	for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
		for (size_t j = 0; j < FS(pl, l = order[o])->n; j++)
			if (check_entry(pl, l, &FS(pl, l)->v[j], &st) != 0 ||
			    judge_entry(pl, l, j, &st) != 0)
				return -1;
	/* A grant wholly inside a deny grants nothing. */
	for (l = 0; l < BOX_FS_DENY; l++)
		for (size_t j = 0; j < FS(pl, l)->n; j++)
			for (size_t k = 0; k < FS(pl, BOX_FS_DENY)->n; k++) {
				const char *g = FS(pl, l)->v[j].resolved;
				const char *d = FS(pl, BOX_FS_DENY)->v[k].resolved;

				if (within(g, d))
					return entry_fail(pl, &FS(pl, l)->v[j], "%s is at or inside "
							  "%s, which no grant reaches. A `deny` "
							  "subtracts beneath every grant, so this "
							  "entry grants nothing; drop it, or narrow "
							  "the `deny`", g, d);
			}
	for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
		for (size_t j = 0; j < FS(pl, l = order[o])->n; j++) {
			const char *p = FS(pl, l)->v[j].resolved;
			const char *note = "";

			if (lstat(p, &st) != 0)
				return entry_fail(pl, &FS(pl, l)->v[j], "%s changed while cairn "
						  "judged it: %s", p, strerror(errno));
			if (l == BOX_FS_WRITE || l == BOX_FS_WRITE_FILE)
				note = "  (readable too: a writable bind reads)";
			else if (is_store(pl, p) && l != BOX_FS_DENY)
				note = "  (credential store)";
			sb_add(&pl->d[D_GRANTS], "  %s  %s%s\n", LNAME(l), p, note);
			if (l == BOX_FS_DENY) {
				if (add_mask(pl, p, "a `deny` entry") != 0)
					return -1;
			} else if (l != BOX_FS_METADATA &&
				   add_bind(pl, p, list_access[l] | (S_ISCHR(st.st_mode) ? CT_DEV : 0),
					    false, LNAME(l)) != 0) {
				return -1;
			}
		}
	/* An empty entry dir under a tree that shows the contents would hide them. */
	for (size_t j = 0; j < FS(pl, BOX_FS_METADATA)->n; j++) {
		const char *p = FS(pl, BOX_FS_METADATA)->v[j].resolved;
		ssize_t e = effective(pl, p);

		if ((e < 0 || pl->pv->mounts[e].kind != CT_BIND) && add_dir(pl, p, "metadata") != 0)
			return -1;
	}
	if (plan_authority(pl) != 0)
		return -1;
	/* What a tree encloses but no process may see. */
	for (size_t i = 0; i < pl->n_stores; i++) {
		const char *s = pl->stores[i].path;
		ssize_t e;

		if (!pl->stores[i].exists || !under_tree(pl, s) || granted_exactly(pl, s))
			continue;
		if ((e = effective(pl, s)) >= 0 && pl->pv->mounts[e].kind == CT_MASK)
			continue;
		if (add_mask(pl, s, "a credential store") != 0)
			return -1;
		sb_add(&pl->d[D_MASKS], "  masked  %s  (credential store beneath a grant)\n", s);
		if (pin_ancestors(pl, s) != 0)
			return -1;
	}
	return 0;
}

/* ==== 7. runtime ======================================================== */

static int plan_runtime(struct pl *pl)
{
	static const char *const roots[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64",
					     "/libx32" };
	static const char *const etc[] = {
		"ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "host.conf", "ssl",
		"ca-certificates", "alternatives", "mime.types", "protocols", "services",
		"bash.bashrc", "profile", "inputrc", "gai.conf", "os-release",
	};
	struct sbuf *d = &pl->d[D_RUNTIME];
	char p[PATH_MAX], tgt[PATH_MAX];
	const struct passwd *pw;
	const struct group *gr;
	struct stat st;
	const char *sep = "";
	uint64_t tmp;

	if (add_bind(pl, "/usr", CT_READ | CT_EXEC, false, "runtime") != 0)
		return -1;
	sb_add(d, "  read+exec  /usr  (runtime)\n");
	/* Merged /usr (Debian 12: /bin -> usr/bin) keeps its links, so both
	 * spellings of a program resolve inside as outside. */
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		if (lstat(roots[i], &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode) && read_link(roots[i], tgt) == 0) {
			if (add_link(pl, roots[i], tgt, "runtime") != 0)
				return -1;
			sb_add(d, "  link  %s -> %s  (runtime)\n", roots[i], tgt);
		} else if (S_ISDIR(st.st_mode)) {
			if (add_bind(pl, roots[i], CT_READ | CT_EXEC, true, "runtime") != 0)
				return -1;
			sb_add(d, "  read+exec  %s  (runtime)\n", roots[i]);
		}
	}
	sb_add(d, "  read  /etc/{");
	for (size_t i = 0; i < sizeof etc / sizeof etc[0]; i++) {
		snprintf(p, sizeof p, "/etc/%s", etc[i]);
		if (lstat(p, &st) != 0)
			continue;
		char *copy;
		size_t clen;
		if (strcmp(etc[i], "profile") == 0 && S_ISREG(st.st_mode) &&
		    (pl->profile = slurp_small(pl, p, &clen)) != NULL)
			continue;       /* plan_login writes it */
		if (S_ISLNK(st.st_mode) && read_link(p, tgt) == 0) {
			if (add_link(pl, p, tgt, "runtime") != 0)
				return -1;
		} else if (S_ISREG(st.st_mode) && (copy = slurp_small(pl, p, &clen)) != NULL) {
			struct ct_mount *m;
			if (mount_push(pl, CT_FILE, p, "runtime", &m) != 0)
				return nomem(pl);
			m->data = copy;
			m->len = clen;
		} else if (add_bind(pl, p, CT_READ, true, "runtime") != 0) {
			return -1;
		}
		sb_add(d, "%s%s", sep, etc[i]);
		sep = ",";
	}
	sb_add(d, "}  (runtime)\n");
	/* /etc/ssl/private holds the host's TLS keys, readable to a root operator. */
	if (lstat("/etc/ssl", &st) == 0 && S_ISDIR(st.st_mode) &&
	    lstat("/etc/ssl/private", &st) == 0 && S_ISDIR(st.st_mode)) {
		if (add_mask(pl, "/etc/ssl/private", "the host's TLS keys") != 0)
			return -1;
		sb_add(d, "  masked  /etc/ssl/private  (the host's TLS keys)\n");
	}

	/* The operator's own ids: the launcher maps the uid to itself.  Its
	 * passwd entry waits for the whole view (plan_login). */
	uid_t uid = getuid();
	gid_t gid = getgid();
	pw = getpwuid(uid);
	const char *user = pw != NULL ? pw->pw_name : "operator";
	gr = getgrgid(gid);
	if (add_file(pl, "/etc/group",
		     fmtk(pl, "%s:x:%u:\n%s", gr != NULL ? gr->gr_name : user, (unsigned)gid,
			  gid == 65534 ? "" : "nogroup:x:65534:\n")) != 0)
		return -1;
	/* A leaf with native egress resolves names as the host does. */
	if (pl->native ? add_bind(pl, "/etc/hosts", CT_READ, true, "runtime") != 0 ||
			 add_bind(pl, "/etc/resolv.conf", CT_READ, true, "runtime") != 0
		       : add_file(pl, "/etc/hosts", fmtk(pl, "127.0.0.1 localhost\n::1 localhost\n")) != 0)
		return -1;
	if (add_file(pl, "/etc/hostname", fmtk(pl, "%s\n", pl->cfg->name)) != 0)
		return -1;
	sb_add(d, "  file  /etc/{passwd,group,%shostname%s}  (written by cairn)\n",
	       pl->native ? "" : "hosts,", pl->profile != NULL ? ",profile" : "");
	if (pl->native)
		sb_add(d, "  read  /etc/{hosts,resolv.conf}  (native egress: the host's resolver)\n");
	tmp = pl->proc->limits.tmp_size ? pl->proc->limits.tmp_size : CT_TMP_DEFAULT;
	sb_add(d, "  read+write  /tmp  (private tmpfs, %llu MiB)\n",
	       (unsigned long long)((tmp + (1u << 20) - 1) >> 20));
	return 0;
}

/* box_dir shows the agent only bin/ (the shims), the broker's socket and
 * the gateway CA; an empty read-only directory hides the rest, also beneath
 * a grant enclosing it.  A leaf sees the CA alone: no shim, no socket, so a
 * tool cannot call the broker (docs/tools.md "The leaf").  The socket is
 * bound onto a read-only directory of the view's own: it can be connected
 * to, not replaced. */
static int plan_boxdir(struct pl *pl)
{
	char cert[PATH_MAX + 32], run[PATH_MAX + 8];
	const char *sock = pl->leaf ? NULL : pl->ctx->broker_socket;

	snprintf(cert, sizeof cert, "%s/trust/cert.pem", pl->boxdir);
	snprintf(run, sizeof run, "%s/run", pl->boxdir);
	if (pin_ancestors(pl, pl->boxdir) != 0 ||
	    add_dir(pl, pl->boxdir, "the box directory") != 0 ||
	    (!pl->leaf && add_bind(pl, pl->bin, CT_READ | CT_EXEC, false, "the box's shims") != 0) ||
	    (!pl->native && add_bind(pl, cert, CT_READ, true, "the gateway CA") != 0) ||
	    (sock != NULL && (add_dir(pl, run, "the broker's directory") != 0 ||
			      add_bind(pl, sock, CT_READ, false, "the broker's socket") != 0)))
		return -1;
	sb_add(&pl->d[D_BOX], "  enter  %s  (box directory: %s only)\n", pl->boxdir,
	       pl->leaf ? (pl->native ? "nothing" : "trust/cert.pem")
			: sock ? "bin/, run/box.sock and trust/cert.pem"
			       : "bin/ and trust/cert.pem");
	if (!pl->leaf)
		sb_add(&pl->d[D_BOX], "  read+exec  %s  (box shims)\n", pl->bin);
	if (sock != NULL)
		sb_add(&pl->d[D_BOX], "  connect  %s  (the broker: tools run through it)\n", sock);
	if (!pl->native)
		sb_add(&pl->d[D_BOX], "  read  %s  (gateway CA)\n", cert);
	return 0;
}

/* ==== 8. program ======================================================== */

/* entry names the box's bin/ in one of its spellings. */
static bool is_bin(const struct pl *pl, const char *entry, size_t n)
{
	char e[PATH_MAX], real[PATH_MAX];
	size_t bl = strlen(pl->boxlex);

	if (n == 0 || n >= sizeof e)
		return false;
	memcpy(e, entry, n);
	e[n] = '\0';
	while (n > 1 && e[n - 1] == '/')
		e[--n] = '\0';
	if (strcmp(e, pl->bin) == 0 ||
	    (strncmp(e, pl->boxlex, bl) == 0 && strcmp(e + bl, "/bin") == 0))
		return true;
	return realpath(e, real) != NULL && strcmp(real, pl->bin) == 0;
}

/* The first executable regular file `name` on path (absolute entries only,
 * bin/ skipped), in out. */
static bool path_search(const struct pl *pl, const char *path, const char *name,
			char out[PATH_MAX])
{
	struct stat st;

	for (const char *s = path, *c;; s = c + 1) {
		size_t n;

		c = strchrnul(s, ':');
		n = (size_t)(c - s);
		while (n > 1 && s[n - 1] == '/')
			n--;
		if (n > 0 && s[0] == '/' && !is_bin(pl, s, n) &&
		    snprintf(out, PATH_MAX, "%.*s/%s", n == 1 ? 0 : (int)n, s, name) < PATH_MAX &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return true;
		if (*c == '\0')
			break;
	}
	return false;
}

/* Walk route as the kernel resolves it (iteratively, so a link inside a
 * link's target is met too), calling at_link(pl, node, target, arg) at every
 * symbolic link on the way.  Returns 0 once walked or at the first component
 * that does not exist, -ENAMETOOLONG, -ELOOP, or at_link's nonzero result. */
static int walk_links(struct pl *pl, const char *route,
		      int (*at_link)(struct pl *, const char *, const char *, void *), void *arg)
{
	char cur[PATH_MAX] = "", next[PATH_MAX], tgt[PATH_MAX], rest[2 * PATH_MAX], tmp[2 * PATH_MAX];
	struct stat st;
	int hops = 0, rc;

	if (snprintf(rest, sizeof rest, "%s", route) >= (int)sizeof rest)
		return -ENAMETOOLONG;
	for (char *r = rest; *r;) {
		char *c = r + strspn(r, "/");
		size_t n = strcspn(c, "/");

		r = c + n;
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *slash = strrchr(cur, '/');

			if (slash != NULL)
				*slash = '\0';
			continue;
		}
		if (snprintf(next, sizeof next, "%s/%.*s", cur, (int)n, c) >= (int)sizeof next)
			return -ENAMETOOLONG;
		if (lstat(next, &st) != 0)
			return 0;
		if (!S_ISLNK(st.st_mode)) {
			memcpy(cur, next, sizeof cur);
			continue;
		}
		if (++hops > LINK_MAX_HOPS || read_link(next, tgt) != 0)
			return -ELOOP;
		if ((rc = at_link(pl, next, tgt, arg)) != 0)
			return rc;
		if (snprintf(tmp, sizeof tmp, "%s/%s", tgt, r) >= (int)sizeof tmp)
			return -ENAMETOOLONG;
		memcpy(rest, tmp, sizeof rest);
		r = rest;
		if (tgt[0] == '/')
			cur[0] = '\0';
	}
	return 0;
}

/* The view shows the link node with the host's target: a link the plan
 * makes there, or one inside a bind (a bind carries the host's links). */
static bool link_shown(const struct pl *pl, const char *node, const char *tgt)
{
	ssize_t e = effective(pl, node), at = mount_at(pl, node);

	return (at >= 0 && pl->pv->mounts[at].kind == CT_SYMLINK &&
		strcmp(pl->pv->mounts[at].target, tgt) == 0) ||
	       (e >= 0 && pl->pv->mounts[e].kind == CT_BIND);
}

struct expose {
	const char *route, *what;
};

static int expose_link(struct pl *pl, const char *node, const char *tgt, void *arg)
{
	const struct expose *x = arg;
	ssize_t e = effective(pl, node);

	if (e >= 0 && pl->pv->mounts[e].kind == CT_MASK)
		return cmd_fail(pl, "the route %s passes through %s, which this run hides (%s)",
				x->route, pl->pv->mounts[e].path, pl->pv->why[e]);
	if (link_shown(pl, node, tgt) ||
	    (mount_at(pl, node) >= 0 && pl->pv->mounts[mount_at(pl, node)].kind == CT_SYMLINK))
		return 0;
	if (add_link(pl, node, tgt, x->what) != 0)
		return -1;
	sb_add(&pl->d[D_EXEC], "  link  %s -> %s  (route to the %s)\n", node, tgt, x->what);
	return 0;
}

/* Make the spelled route resolve inside as on the host: every symbolic link
 * it traverses that no mount already shows becomes a CT_SYMLINK with the
 * host's target (Box: "every traversed link node").  An absent component
 * is left for the exec itself to report. */
static int expose_route(struct pl *pl, const char *route, const char *what)
{
	struct expose x = { route, what };
	int rc = walk_links(pl, route, expose_link, &x);

	if (rc == -ENAMETOOLONG)
		return cmd_fail(pl, "the route %s is too long", route);
	if (rc == -ELOOP)
		return cmd_fail(pl, "the route %s does not resolve: too many levels of symbolic "
				"links", route);
	return rc;
}

static int unshown_link(struct pl *pl, const char *node, const char *tgt, void *arg)
{
	(void)arg;
	return link_shown(pl, node, tgt) ? 0 : 1;
}

/* route, spelled as a program names it, runs inside as on the host: it
 * resolves to an executable regular file in an exec-capable bind, and every
 * link on the way is shown.  Plans nothing. */
static bool runs_in_view(struct pl *pl, const char *route)
{
	char real[PATH_MAX];
	struct stat st;
	ssize_t e;

	if (route == NULL || route[0] != '/' || realpath(route, real) == NULL ||
	    stat(real, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		return false;
	e = effective(pl, real);
	return e >= 0 && pl->pv->mounts[e].kind == CT_BIND && (pl->pv->mounts[e].access & CT_EXEC) &&
	       walk_links(pl, route, unshown_link, NULL) == 0;
}

/* route must be an executable regular file the view can run: when no
 * exec-capable mount shows it, bind the file itself (read+exec). */
static int exec_file(struct pl *pl, const char *route, const char *what, char real[PATH_MAX])
{
	char buf[PATH_MAX + 128];
	const char *why;
	struct stat st;
	ssize_t e;

	if (stat(route, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111) ||
	    realpath(route, real) == NULL)
		return cmd_fail(pl, "executable is not an executable regular file: %s", route);
	if ((why = floor_reason(pl, real, &st, buf, sizeof buf)) != NULL)
		return cmd_fail(pl, "%s is refused beneath every grant: %s", real, why);
	e = effective(pl, real);
	if (e >= 0 && pl->pv->mounts[e].kind == CT_MASK)
		return cmd_fail(pl, "%s lies inside %s, which this run hides (%s)", real,
				pl->pv->mounts[e].path, pl->pv->why[e]);
	if (e >= 0 && pl->pv->mounts[e].kind == CT_BIND && (pl->pv->mounts[e].access & CT_EXEC)) {
		if (pl->pv->mounts[e].access & CT_WRITE)
			sb_add(&pl->d[D_WARN], "cairn: warning: %s %s %s lies inside the writable "
			       "grant %s, so the process can replace the program it runs\n",
			       pl->plan->label, what, real, pl->pv->mounts[e].path);
	} else {
		if (add_bind(pl, real, CT_READ | CT_EXEC, false, what) != 0)
			return -1;
		sb_add(&pl->d[D_EXEC], "  exec  %s  (%s)\n", real,
		       strcmp(what, "command") == 0 ? "command, implicit" : what);
	}
	return expose_route(pl, route, what);
}

/* The #! line of path: interp and the rest (trimmed).  1: a script; 0: not. */
static int read_shebang(const char *path, char interp[SHEBANG_MAX + 1], char args[SHEBANG_MAX + 1])
{
	char buf[SHEBANG_MAX + 1], *s, *nl;
	ssize_t n;
	size_t k;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return 0;       /* unreadable: no interpreter could read it either */
	n = read(fd, buf, SHEBANG_MAX);
	close(fd);
	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	buf[n] = '\0';
	if ((nl = memchr(buf, '\n', (size_t)n)) != NULL)
		*nl = '\0';
	s = buf + 2 + strspn(buf + 2, " \t");
	k = strcspn(s, " \t");
	memcpy(interp, s, k);
	interp[k] = '\0';
	s += k;
	s += strspn(s, " \t");
	snprintf(args, SHEBANG_MAX + 1, "%s", s);
	for (k = strlen(args); k > 0 && strchr(" \t\r", args[k - 1]) != NULL; k--)
		args[k - 1] = '\0';
	return interp[0] != '\0';
}

/* The program env(1) runs for `#!/usr/bin/env ARGS`, honouring -S (split),
 * the options that take a value, and a PATH= assignment (*pathv). */
static const char *env_program(char *args, const char **pathv)
{
	char *save = NULL, *w;
	bool opts = true;

	for (w = strtok_r(args, " \t", &save); w != NULL; w = strtok_r(NULL, " \t", &save)) {
		if (opts && strcmp(w, "--") == 0) {
			opts = false;
			continue;
		}
		if (opts && w[0] == '-' && w[1] != '\0') {
			if (w[1] == 'S' && w[2] != '\0')
				w += 2;         /* -Sprog: the split string starts here */
			else {
				if ((strcmp(w, "-u") == 0 || strcmp(w, "-C") == 0 ||
				     strcmp(w, "-P") == 0) && strtok_r(NULL, " \t", &save) == NULL)
					return NULL;
				continue;
			}
		}
		if (strchr(w, '=') != NULL) {
			if (strncmp(w, "PATH=", 5) == 0)
				*pathv = w + 5;
			continue;
		}
		return w;
	}
	return NULL;
}

static int plan_program(struct pl *pl)
{
	const char *c0 = pl->proc->command.v[0];
	char route[PATH_MAX], real[PATH_MAX], dir[PATH_MAX], argv0[2 * PATH_MAX];
	char interp[SHEBANG_MAX + 1], args[SHEBANG_MAX + 1], script[PATH_MAX];
	const char *base, *path;
	int hops = 0;

	if (c0[0] == '/') {
		snprintf(route, sizeof route, "%s", c0);
	} else {
		path = box_env_get(&pl->proc->env, "PATH");
		if (path == NULL)
			path = pl->ctx->operator_path ? pl->ctx->operator_path : "/usr/bin:/bin";
		if (!path_search(pl, path, c0, route))
			return cmd_fail(pl, "cannot resolve bare executable %s on the declared PATH",
					c0);
	}
	/* Exec'd through the authored route with its directory canonical. */
	snprintf(dir, sizeof dir, "%s", route);
	base = strrchr(route, '/') + 1;
	dir[base - route - 1] = '\0';
	if (realpath(dir[0] ? dir : "/", real) == NULL)
		return cmd_fail(pl, "executable is not an executable regular file: %s", route);
	snprintf(argv0, sizeof argv0, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
	if (strlen(argv0) >= PATH_MAX)
		return cmd_fail(pl, "the route %s is too long", route);
	if (exec_file(pl, argv0, "command", real) != 0)
		return -1;
	if ((pl->plan->program = dupk(pl, real)) == NULL ||
	    grow(&pl->pv->argv, &pl->pv->cap_argv, 0, sizeof *pl->pv->argv) ||
	    (pl->pv->argv[pl->pv->n_argv++] = dupk(pl, argv0)) == NULL)
		return nomem(pl);

	snprintf(script, sizeof script, "%s", real);
	while (read_shebang(script, interp, args) == 1) {
		if (++hops > SHEBANG_HOPS)
			return cmd_fail(pl, "%s runs through more than %d interpreters",
					pl->plan->program, SHEBANG_HOPS);
		if (interp[0] != '/')
			return cmd_fail(pl, "%s names the interpreter %s, which is not an absolute "
					"path", script, interp);
		if (exec_file(pl, interp, "interpreter", real) != 0)
			return -1;
		base = strrchr(interp, '/') + 1;
		if (strcmp(base, "env") == 0) {
			const char *pathv = pl->path_tail, *prog = env_program(args, &pathv);

			if (prog != NULL) {
				if (++hops > SHEBANG_HOPS)
					return cmd_fail(pl, "%s runs through more than %d "
							"interpreters", pl->plan->program,
							SHEBANG_HOPS);
				if (prog[0] == '/')
					snprintf(route, sizeof route, "%s", prog);
				else if (strchr(prog, '/') != NULL ||
					 !path_search(pl, pathv, prog, route))
					return cmd_fail(pl, "cannot resolve bare executable %s on the "
							"declared PATH", prog);
				if (exec_file(pl, route, "interpreter", real) != 0)
					return -1;
			}
		}
		snprintf(script, sizeof script, "%s", real);
	}
	return 0;
}

/* ==== 9. workspace ====================================================== */

static int plan_workspace(struct pl *pl)
{
	const struct box_path *w = &pl->proc->workspace;
	/* a tool's default: the agent's workspace (the call's cwd, where the
	 * leaf shows it, is chosen per call: plan_shows) */
	const char *p = w->authored ? w->resolved
			: pl->leaf ? pl->ctx->agent_workspace : pl->ctx->run_cwd;
	unsigned line = w->authored ? w->line : 0, col = w->authored ? w->col : 0;
	struct stat st;
	ssize_t e;

	if (p == NULL || p[0] != '/')
		return fail_at(pl, line, col, "`workspace` must be absolute: %s", p ? p : "");
	if (stat(p, &st) != 0)
		return fail_at(pl, line, col, "`workspace` %s is not there: %s (os error %d)", p,
			       strerror(errno), errno);
	if (!S_ISDIR(st.st_mode) || realpath(p, pl->ws) == NULL)
		return fail_at(pl, line, col, "`workspace` %s is not a directory", p);
	if (strcmp(pl->ws, pl->home) == 0)
		return fail_at(pl, line, col, "`workspace` %s is the operator's home directory, "
			       "where every credential store lives; name a project directory "
			       "inside it", pl->ws);
	if (within(pl->boxdir, pl->ws))
		return fail_at(pl, pl->cfg->box_dir.line, pl->cfg->box_dir.col,
			       "`box_dir` %s is equal to or below the agent's workspace %s",
			       pl->cfg->box_dir.authored, pl->ws);
	if (within(pl->ws, pl->boxdir))
		return fail_at(pl, line, col, "`workspace` %s is inside `box_dir` %s", pl->ws,
			       pl->cfg->box_dir.authored);
	e = effective(pl, pl->ws);
	if (e >= 0 && pl->pv->mounts[e].kind == CT_MASK)
		return fail_at(pl, line, col, "`workspace` %s lies inside %s, which this run hides "
			       "(%s)", pl->ws, pl->pv->mounts[e].path, pl->pv->why[e]);
	if (e >= 0 && (pl->pv->mounts[e].kind == CT_BIND ||
		       strcmp(pl->pv->mounts[e].path, pl->ws) == 0))
		return 0;
	if (add_dir(pl, pl->ws, "the workspace") != 0)
		return -1;
	sb_add(&pl->d[D_ENTER], "  enter  %s  (workspace, entry only)\n", pl->ws);
	return 0;
}

/* ==== 10. environment =================================================== */

static int env_set(struct pl *pl, const char *name, const char *value)
{
	struct plan_priv *pv = pl->pv;
	size_t nl = strlen(name);
	char *kv = fmtk(pl, "%s=%s", name, value);

	if (kv == NULL)
		return nomem(pl);
	for (size_t i = 0; i < pv->n_env; i++)
		if (strncmp(pv->envp[i], name, nl) == 0 && pv->envp[i][nl] == '=') {
			pv->envp[i] = kv;
			return 0;
		}
	if (grow(&pv->envp, &pv->cap_env, pv->n_env, sizeof *pv->envp) != 0)
		return nomem(pl);
	pv->envp[pv->n_env++] = kv;
	pv->envp[pv->n_env] = NULL;
	return 0;
}

/* PATH inside: bin/ first, then the declared PATH (or the default) with
 * every spelling of bin/ removed. */
static int plan_path(struct pl *pl)
{
	const char *decl = box_env_get(&pl->proc->env, "PATH");
	struct sbuf t = { 0 };
	const char *sep = "";

	if (decl == NULL)
		decl = "/usr/local/bin:/usr/bin:/bin";
	for (const char *s = decl, *c;; s = c + 1) {
		c = strchrnul(s, ':');
		if (!is_bin(pl, s, (size_t)(c - s))) {
			sb_add(&t, "%s%.*s", sep, (int)(c - s), s);
			sep = ":";
		}
		if (*c == '\0')
			break;
	}
	pl->path_tail = keep(pl, t.oom ? NULL : t.p ? t.p : strdup(""));
	if (t.oom)
		free(t.p);
	if (pl->path_tail == NULL)
		return nomem(pl);
	/* a leaf has no shims: its PATH is the declared one without bin/ */
	if (pl->leaf)
		pl->path_env = dupk(pl, pl->path_tail);
	else
		pl->path_env = pl->path_tail[0] ? fmtk(pl, "%s:%s", pl->bin, pl->path_tail)
						: dupk(pl, pl->bin);
	return pl->path_env == NULL ? nomem(pl) : 0;
}

/* The login shell: the declared env.SHELL (an absolute path a passwd line
 * can hold); else the operator's own when it is a login shell (/etc/shells)
 * that runs in the view; else /bin/bash when it does; else /bin/sh.  Codex
 * CLI runs every command as `$SHELL -lc` from the passwd entry, so this is
 * what it gets. */
static const char *login_shell(struct pl *pl, const struct passwd *pw)
{
	const char *declared = box_env_get(&pl->proc->env, "SHELL");
	bool listed = false;

	if (declared != NULL && declared[0] == '/' && strpbrk(declared, ":\n") == NULL)
		return declared;
	if (pw != NULL && pw->pw_shell != NULL && pw->pw_shell[0] == '/') {
		setusershell();
		for (const char *sh; !listed && (sh = getusershell()) != NULL;)
			listed = strcmp(sh, pw->pw_shell) == 0;
		endusershell();
		if (listed && runs_in_view(pl, pw->pw_shell))
			return pw->pw_shell;
	}
	return runs_in_view(pl, "/bin/bash") ? "/bin/bash" : "/bin/sh";
}

/* The text of the view's /etc/profile: the host's between two lines of
 * cairn's.  Debian's resets PATH for every login shell (bash -l, sh -l),
 * which drops the box's bin/ and whatever the agent put before it; a login
 * shell in the box keeps the PATH it was started with (docs/config.md). */
static char *wrap_profile(struct pl *pl)
{
	size_t n = strlen(pl->profile);

	return fmtk(pl, "# cairn: a login shell in the box keeps the PATH it was started with.\n"
		    "cairn_login_path=${PATH-}\n"
		    "%s%s"
		    "# cairn: the PATH this login shell was started with, back.\n"
		    "if [ -n \"$cairn_login_path\" ]; then PATH=$cairn_login_path; export PATH; fi\n"
		    "unset cairn_login_path\n",
		    pl->profile, n > 0 && pl->profile[n - 1] != '\n' ? "\n" : "");
}


/* The agent receiver's variables, as Box sets them. */
static const struct {
	const char *name, *ref;         /* ref: the ${...} a fixed argument may hold */
} otel_vars[] = {
	{ "OTEL_EXPORTER_OTLP_ENDPOINT", "${OTEL_EXPORTER_OTLP_ENDPOINT}" },
	{ "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}" },
	{ "OTEL_EXPORTER_OTLP_PROTOCOL", "${OTEL_EXPORTER_OTLP_PROTOCOL}" },
};

static const char *otel_value(struct pl *pl, size_t i)
{
	unsigned port = pl->ctx->telemetry_port;
	switch (i) {
	case 0:
		return fmtk(pl, "http://127.0.0.1:%u", port);
	case 1:
		return fmtk(pl, "http://127.0.0.1:%u/v1/traces", port);
	default:
		return "http/protobuf";
	}
}

/* a with every ${OTEL_EXPORTER_OTLP_*} of otel_vars replaced by its value
 * (kept as written when the box has no receiver); NULL: out of memory. */
static char *expand_otel(struct pl *pl, const char *a)
{
	if (strstr(a, "${OTEL_EXPORTER_OTLP_") == NULL || pl->ctx->telemetry_port == 0)
		return dupk(pl, a);
	const char *val[3];
	for (size_t i = 0; i < 3; i++)
		if ((val[i] = otel_value(pl, i)) == NULL)
			return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	while (*a) {
		size_t i, n = 0;
		for (i = 0; i < 3; i++)
			if (strncmp(a, otel_vars[i].ref, n = strlen(otel_vars[i].ref)) == 0)
				break;
		if (i < 3)
			fputs(val[i], f);
		else
			fputc(*a, f);
		a += i < 3 ? n : 1;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return keep(pl, buf);
}

/* /etc/passwd with the login shell, and /etc/profile (after every mount is
 * planned: the shell must run in the view). */
static int plan_login(struct pl *pl)
{
	uid_t uid = getuid();
	const struct passwd *pw = getpwuid(uid);
	const char *user = pw != NULL ? pw->pw_name : "operator";

	/* the passwd entry's strings are libc's: copy the shell before the next lookup */
	if ((pl->shell = dupk(pl, login_shell(pl, pw))) == NULL)
		return nomem(pl);
	if (add_file(pl, "/etc/passwd",
		     fmtk(pl, "%s:x:%u:%u::%s:%s\n%s", user,
			  (unsigned)uid, (unsigned)getgid(), pl->agent_home, pl->shell,
			  uid == 65534 ? "" :
			  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")) != 0)
		return -1;
	if (pl->profile != NULL && add_file(pl, "/etc/profile", wrap_profile(pl)) != 0)
		return -1;
	return 0;
}

/* Does proc list route name in its `egress`? */
static bool lists_route(const struct box_process *proc, const char *name)
{
	for (size_t k = 0; proc->has_egress_routes && k < proc->egress_routes.n; k++)
		if (strcmp(proc->egress_routes.v[k], name) == 0)
			return true;
	return false;
}

/* The gateway's variable NAME (a phantom) reaches this sandbox: unless
 * every [egress.*] route it carries is out of the sandbox's credential
 * scope (docs/egress.md "Per-tool scoping"): a tool with an `egress` list
 * gets its routes' only, the agent none of a route some tool lists.  A
 * name no env:// route carries (Box's AWS placeholders, an http [mcp.*]'s)
 * reaches every sandbox. */
static bool phantom_in_scope(const struct pl *pl, const char *name, size_t nl)
{
	const struct box_config *cfg = pl->cfg;
	bool carried = false;

	/* an http [mcp.*]'s secret is every sandbox's */
	for (size_t i = 0; i < cfg->n_mcp; i++) {
		const struct box_secret *sec = &cfg->mcp[i].secret;
		if (cfg->mcp[i].type == BOX_MCP_HTTP && sec->present &&
		    sec->scheme == BOX_SECRET_ENV && sec->ref_name != NULL &&
		    strlen(sec->ref_name) == nl && strncmp(sec->ref_name, name, nl) == 0)
			return true;
	}
	for (size_t i = 0; i < cfg->n_egress; i++) {
		const struct box_secret *sec = &cfg->egress[i].secret;
		bool tools = false;

		if (sec->scheme != BOX_SECRET_ENV || sec->ref_name == NULL ||
		    strlen(sec->ref_name) != nl || strncmp(sec->ref_name, name, nl) != 0)
			continue;
		carried = true;
		if (pl->leaf) {
			if (!pl->proc->has_egress_routes || lists_route(pl->proc, cfg->egress[i].name))
				return true;
			continue;
		}
		for (size_t t = 0; t < cfg->n_tools && !tools; t++)
			tools = lists_route(&cfg->tools[t].proc, cfg->egress[i].name);
		if (!tools)
			return true;
	}
	return !carried;
}

static int plan_env(struct pl *pl)
{
	static const char *const proxies[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					       "https_proxy" };
	char proxy[64];

	static const char *const ca_vars[] = { "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
					       "CODEX_CA_CERTIFICATE", "AWS_CA_BUNDLE",
					       "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO" };
	char *cert;

	/* Order, later wins (docs/box-compat.md): the gateway's phantoms, HOME, the table's
	 * env, then Core's names. */
	for (const char *const *e = pl->ctx->gateway_env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (eq != NULL && !phantom_in_scope(pl, *e, (size_t)(eq - *e)))
			continue;
		char *name = eq ? strndup(*e, (size_t)(eq - *e)) : NULL;
		int r = name ? env_set(pl, name, eq + 1) : nomem(pl);
		free(name);
		if (r != 0)
			return -1;
	}
	if (env_set(pl, "HOME", pl->agent_home) != 0 || env_set(pl, "SHELL", pl->shell) != 0)
		return -1;
	for (size_t i = 0; i < pl->proc->env.n; i++)
		if (env_set(pl, pl->proc->env.v[i].name, pl->proc->env.v[i].value) != 0)
			return -1;
	snprintf(proxy, sizeof proxy, "http://127.0.0.1:%u", (unsigned)pl->ctx->proxy_port);
	/* native egress: the host's network and trust store, no gateway to name */
	for (size_t i = 0; i < 5 && !pl->native; i++)
		if (env_set(pl, i == 4 ? "NODE_USE_ENV_PROXY" : proxies[i],
			    i == 4 ? "1" : proxy) != 0)
			return -1;
	/* The agent receiver (docs/records.md "The agent receiver"): what an
	 * OpenTelemetry SDK in the box exports reaches the box's targets. */
	for (size_t i = 0; i < 3 && pl->ctx->telemetry_port && !pl->leaf; i++)
		if (env_set(pl, otel_vars[i].name, otel_value(pl, i)) != 0)
			return -1;
	/* The gateway's CA, for every client library's own variable. */
	if ((cert = fmtk(pl, "%s/trust/cert.pem", pl->boxdir)) == NULL)
		return nomem(pl);
	for (size_t i = 0; i < sizeof(ca_vars) / sizeof(ca_vars[0]) && !pl->native; i++)
		if (env_set(pl, ca_vars[i], cert) != 0)
			return -1;
	if (env_set(pl, "NO_PROXY", "127.0.0.1,localhost") != 0 ||
	    env_set(pl, "no_proxy", "127.0.0.1,localhost") != 0 ||
	    env_set(pl, "PWD", pl->ws) != 0 ||
	    env_set(pl, "USER", "strands-box") != 0 ||     /* Box's value, for compatibility */
	    env_set(pl, "PATH", pl->path_env) != 0)
		return -1;
	return 0;
}

/* HOME defaults to the operator's home, as in Box, and the sandbox cannot
 * write it unless a grant says so: Codex CLI then dies at start with
 * "Read-only file system".  Box's default stays; the start lines say so,
 * with the fix. */
static int plan_home(struct pl *pl)
{
	char h[PATH_MAX];
	const char *why;
	ssize_t e;

	canon_or_self(pl->agent_home, h);
	e = effective(pl, h);
	if (strcmp(h, "/tmp") == 0)
		return 0;       /* the private tmpfs */
	if (e < 0 && within(h, "/tmp"))
		why = "it lies in the box's private /tmp, which starts empty";
	else if (e < 0)
		why = "no grant shows it";
	else if (pl->pv->mounts[e].kind == CT_MASK)
		why = fmtk(pl, "it lies in %s, which this run hides", pl->pv->mounts[e].path);
	else if (pl->pv->mounts[e].kind != CT_BIND)
		why = "only its entry is shown";
	else if (!(pl->pv->mounts[e].access & CT_WRITE))
		why = fmtk(pl, "%s is granted read-only", pl->pv->mounts[e].path);
	else
		return 0;
	if (why == NULL)
		return nomem(pl);
	sb_add(&pl->d[D_WARN], "cairn: warning: %s HOME %s is not writable in the box (%s), so a "
	       "program that keeps its state there fails with \"Read-only file system\"; give "
	       "%s a home: a `write` grant on a directory and `env.HOME` set to it "
	       "(docs/config.md, \"A home for the agent\")\n", pl->plan->label, pl->agent_home,
	       why, pl->leaf ? "the tool" : "the agent");
	return 0;
}

/* ==== 11. disclosure ==================================================== */

static void add_mib(struct sbuf *b, uint64_t bytes)
{
	if (bytes % (1u << 20) == 0)
		sb_add(b, "%llu MiB", (unsigned long long)(bytes >> 20));
	else
		sb_add(b, "%.1f MiB", (double)bytes / (1u << 20));
}

static int plan_disclose(struct pl *pl)
{
	const struct box_limits *lim = &pl->proc->limits;
	const char *label = pl->plan->label;
	struct sbuf o = { 0 };
	const char *sep = "";

	sb_add(&o, "cairn: %s runs %s with no policy decision over these paths:\n", label,
	       pl->plan->program);
	if (pl->d[D_GRANTS].len == 0)
		sb_add(&o, "  (no filesystem entry)\n");
	else
		sb_add(&o, "%s", pl->d[D_GRANTS].p);
	sb_add(&o, "cairn: %s runtime minimum, added by cairn:\n", label);
	for (int i = D_EXEC; i <= D_MASKS; i++)
		if (pl->d[i].len)
			sb_add(&o, "%s", pl->d[i].p);
	sb_add(&o, "cairn: %s HOME=%s PATH=%s\n", label, pl->agent_home, pl->path_env);
	if (lim->pids || lim->memory || lim->cpu_milli || lim->tmp_size) {
		sb_add(&o, "cairn: %s limits: ", label);
		if (lim->pids)
			sb_add(&o, "pids %u", lim->pids), sep = ", ";
		if (lim->memory) {
			sb_add(&o, "%smemory ", sep), sep = ", ";
			add_mib(&o, lim->memory);
		}
		if (lim->cpu_milli) {
			char frac[8];
			size_t k;

			snprintf(frac, sizeof frac, ".%03u", lim->cpu_milli % 1000);
			for (k = strlen(frac); k > 0 && (frac[k - 1] == '0' || frac[k - 1] == '.'); k--)
				frac[k - 1] = '\0';
			sb_add(&o, "%scpu %u%s", sep, lim->cpu_milli / 1000, frac), sep = ", ";
		}
		if (lim->tmp_size) {
			sb_add(&o, "%stmp ", sep);
			add_mib(&o, lim->tmp_size);
		}
		sb_add(&o, "\n");
	}
	if (pl->native)
		sb_add(&o, "cairn: %s native egress: connects to the network directly (host "
		       "network namespace), with no egress gateway, no net:connect or http:request "
		       "decision, and no credential injection\n", label);
	if (pl->d[D_WARN].len)
		sb_add(&o, "%s", pl->d[D_WARN].p);
	for (int i = 0; i < D_N; i++)
		o.oom |= pl->d[i].oom;
	if (o.oom) {
		free(o.p);
		return nomem(pl);
	}
	pl->plan->disclosure = o.p;
	return 0;
}

/* ==== 12. entry points ================================================== */

/* Nothing is mounted inside a mask: the mask's tmpfs has no room for a
 * mount point, and its mode 000 would keep the workload from reaching one
 * anyway.  The steps above never plan one; should a layout slip past them,
 * the box is refused here by name rather than at start by ENOSPC. */
static int check_masks(struct pl *pl)
{
	const struct plan_priv *pv = pl->pv;

	for (size_t i = 0; i < pv->n_mounts; i++)
		for (size_t j = 0; j < pv->n_mounts; j++)
			if (pv->mounts[j].kind == CT_MASK &&
			    inside(pv->mounts[i].path, pv->mounts[j].path))
				return fail_at(pl, 0, 0, "%s (%s) lies inside %s, which this run "
					       "hides (%s); nothing can be shown there",
					       pv->mounts[i].path, pv->why[i], pv->mounts[j].path,
					       pv->why[j]);
	return 0;
}

/* Homes, box_dir, bin/, the credential stores of both homes. */
static int plan_setup(struct pl *pl)
{
	const char *declared = box_env_get(&pl->proc->env, "HOME");
	const char *homes[2] = { pl->home, pl->home2 };
	char lex[PATH_MAX + 32];
	struct stat st;

	if (pl->ctx->home == NULL || pl->ctx->home[0] != '/')
		return fail_at(pl, 0, 0, "HOME is not set");
	canon_or_self(pl->ctx->home, pl->home);
	pl->agent_home = declared ? declared : pl->ctx->home;
	if (declared != NULL) {
		canon_or_self(declared, pl->home2);
		if (strcmp(pl->home2, pl->home) == 0)
			pl->home2[0] = '\0';
	}
	snprintf(pl->boxlex, sizeof pl->boxlex, "%s", pl->cfg->box_dir.resolved);
	for (size_t n = strlen(pl->boxlex); n > 1 && pl->boxlex[n - 1] == '/'; n--)
		pl->boxlex[n - 1] = '\0';
	canon_or_self(pl->boxlex, pl->boxdir);
	snprintf(pl->bin, sizeof pl->bin, "%s/bin", pl->boxdir);
	for (int h = 0; h < 2; h++) {
		if (homes[h][0] == '\0')
			continue;
		for (size_t i = 0; i < N_STORES; i++) {
			struct store *s = &pl->stores[pl->n_stores++];
			char real[PATH_MAX];

			snprintf(lex, sizeof lex, "%s/%s", strcmp(homes[h], "/") ? homes[h] : "",
				 store_names[i]);
			s->exists = lstat(lex, &st) == 0;
			if (s->exists && realpath(lex, real) != NULL)
				s->path = dupk(pl, real);
			else
				s->path = dupk(pl, lex);
			if (s->path == NULL)
				return nomem(pl);
		}
	}
	/* Box's run-start refusals that need the filesystem (docs/config.md "Checked
	 * at run time, not at load"). */
	if (declared != NULL && (within(pl->home2[0] ? pl->home2 : pl->home, pl->boxdir) ||
				 within(pl->boxdir, pl->home2[0] ? pl->home2 : pl->home))) {
		const struct box_env_var *v = NULL;

		for (size_t i = 0; i < pl->proc->env.n; i++)
			if (strcmp(pl->proc->env.v[i].name, "HOME") == 0)
				v = &pl->proc->env.v[i];
		return fail_at(pl, v ? v->line : 0, v ? v->col : 0, "`env.HOME` %s is inside or "
			       "encloses `box_dir` %s", declared, pl->cfg->box_dir.authored);
	}
	if (pl->ctx->config_path && within(pl->ctx->config_path, pl->boxdir))
		return fail_at(pl, 0, 0, "configuration source %s is inside `box_dir` %s",
			       pl->ctx->config_path, pl->cfg->box_dir.authored);
	if (pl->ctx->policy_path && within(pl->ctx->policy_path, pl->boxdir))
		return fail_at(pl, 0, 0, "policy source %s is inside `box_dir` %s",
			       pl->ctx->policy_path, pl->cfg->box_dir.authored);
	return 0;
}

/* ==== 11. the mediator's trees ========================================== */

static bool list_grant(const char *why)
{
	static const char *const names[] = { "read", "write", "read_file", "write_file", "exec" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(why, names[i]) == 0)
			return true;
	return false;
}

static ssize_t area_at(const struct pl *pl, const char *p)
{
	for (size_t i = 0; i < pl->pv->n_areas; i++)
		if (strcmp(pl->pv->areas[i].path, p) == 0)
			return (ssize_t)i;
	return -1;
}

static int add_area(struct pl *pl, const char *path, enum med_class cls, unsigned access,
		    const char *why)
{
	struct plan_priv *pv = pl->pv;
	ssize_t i = area_at(pl, path);

	if (i >= 0) {
		/* a floor stays a floor; otherwise the first word stands */
		if (cls == MED_FLOOR) {
			pv->areas[i].cls = cls;
			pv->areas[i].why = why;
		}
		return 0;
	}
	char *p = dupk(pl, path);
	if (p == NULL || grow(&pv->areas, &pv->cap_areas, pv->n_areas, sizeof *pv->areas))
		return nomem(pl);
	pv->areas[pv->n_areas++] = (struct med_area_spec){ p, cls, access, why };
	return 0;
}

static int plan_mediation(struct pl *pl)
{
	static const char STATE[] = "resolves into trusted Box state, which no policy may open";
	struct plan_priv *pv = pl->pv;

	if (add_area(pl, "/proc", MED_KERNEL, 0, NULL) != 0 ||
	    add_area(pl, "/dev", MED_KERNEL, 0, NULL) != 0 ||
	    add_area(pl, "/tmp", MED_SCRATCH, 0, NULL) != 0 ||
	    add_area(pl, "/etc", MED_RUNTIME, 0, NULL) != 0)
		return -1;
	for (size_t i = 0; i < pv->n_mounts; i++) {
		const struct ct_mount *m = &pv->mounts[i];
		const char *why = pv->why[i];
		int rc = 0;

		switch (m->kind) {
		case CT_BIND:
			if (strcmp(why, "pinned") == 0)
				break;  /* its grant's tree, bound onto itself */
			if (m->access & CT_DECIDED)
				rc = add_area(pl, m->path, MED_DECIDED, 0, NULL);
			else if (list_grant(why))
				rc = add_area(pl, m->path, MED_GRANT, m->access, NULL);
			else
				rc = add_area(pl, m->path, MED_RUNTIME, 0, NULL);
			break;
		case CT_MASK:
			rc = add_area(pl, m->path, MED_FLOOR, 0,
				      fmtk(pl, "it is hidden from this box (%s)", why));
			break;
		case CT_FILE:
		case CT_SYMLINK:
			rc = add_area(pl, m->path, MED_RUNTIME, 0, NULL);
			break;
		case CT_DIR:
			/* an empty directory of the view's own (the box directory shows
			 * only bin/ and the CA inside): nothing of the host's to hide,
			 * not even in a decided tree */
			rc = add_area(pl, m->path, MED_ROOT, 0, NULL);
			break;
		}
		if (rc != 0)
			return -1;
	}
	/* What no permit reaches in the decided roots (bound in by
	 * plan_decided): credential stores, the box's and Box's own state. */
	for (size_t i = 0; i < pl->n_stores; i++)
		if (pl->stores[i].exists &&
		    add_area(pl, pl->stores[i].path, MED_FLOOR, 0, fmtk(pl, "it lies inside the "
				"credential store %s", pl->stores[i].path)) != 0)
			return -1;
	const char *homes[2] = { pl->home, pl->home2 };
	for (int h = 0; h < 2; h++) {
		static const char *const state[] = { ".strands-box", ".local/state/strands-box" };
		for (size_t k = 0; homes[h][0] == '/' && k < 2; k++) {
			char p[PATH_MAX + 32];
			snprintf(p, sizeof p, "%s/%s", strcmp(homes[h], "/") ? homes[h] : "",
				 state[k]);
			if (add_area(pl, p, MED_FLOOR, 0, STATE) != 0)
				return -1;
		}
	}
	pl->plan->areas = pv->areas;
	pl->plan->n_areas = pv->n_areas;
	pl->plan->spec.mediated = true;
	return 0;
}

static int plan_argv(struct pl *pl)
{
	struct plan_priv *pv = pl->pv;
	const struct box_strs *c = &pl->proc->command;

	/* Fixed args may name the agent receiver, as Box's do:
	 * ${OTEL_EXPORTER_OTLP_ENDPOINT}, ..._TRACES_ENDPOINT and ..._PROTOCOL
	 * expand, nothing else does; the trailing argv never expands. */
	for (size_t i = 1; i < c->n + pl->ctx->n_trailing; i++) {
		const char *a = i < c->n ? c->v[i] : pl->ctx->trailing[i - c->n];

		if (grow(&pv->argv, &pv->cap_argv, pv->n_argv, sizeof *pv->argv) != 0 ||
		    (pv->argv[pv->n_argv++] = i < c->n ? expand_otel(pl, a) : dupk(pl, a)) == NULL)
			return nomem(pl);
	}
	pv->argv[pv->n_argv] = NULL;
	return 0;
}

/* Plan proc (the [agent] table, or a [tool.*] one when leaf) labelled label. */
static int plan_process(const struct plan_ctx *ctx, const struct box_process *proc, bool leaf,
			const char *label, struct plan **out, char *err, size_t errlen)
{
	struct pl *pl;
	struct plan *plan;
	struct ct_spec *s;
	int rc = -1;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	pl = calloc(1, sizeof *pl);
	plan = calloc(1, sizeof *plan);
	if (pl == NULL || plan == NULL || (plan->priv_ = calloc(1, sizeof(struct plan_priv))) == NULL) {
		free(pl);
		free(plan);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "out of memory");
		return -1;
	}
	*pl = (struct pl){ .ctx = ctx, .cfg = ctx->cfg, .proc = proc, .plan = plan,
			   .pv = plan->priv_, .err = err, .errlen = errlen, .leaf = leaf,
			   .native = leaf && !proc->contain_egress };
	plan->label = dupk(pl, label);
	if (plan->label == NULL) {
		nomem(pl);
		goto out;
	}
	if (!pl->proc->present || pl->proc->command.n == 0) {
		fail_at(pl, 0, 0, "no workload to run: the configuration has no `[agent]` table, "
			"and a trailing argv appends to `[agent] command` rather than replacing it");
		goto out;
	}
	if (plan_setup(pl) != 0 || plan_path(pl) != 0 || plan_runtime(pl) != 0 ||
	    plan_decided(pl) != 0 || plan_grants(pl) != 0 || plan_boxdir(pl) != 0 || plan_program(pl) != 0 ||
	    plan_argv(pl) != 0 || plan_workspace(pl) != 0 || plan_login(pl) != 0 ||
	    plan_env(pl) != 0 || plan_home(pl) != 0 || check_masks(pl) != 0 ||
	    plan_disclose(pl) != 0)
		goto out;
	s = &plan->spec;
	s->argv = pl->pv->argv;
	s->envp = pl->pv->envp;
	s->cwd = pl->ws[0] ? dupk(pl, pl->ws) : NULL;
	s->hostname = dupk(pl, ctx->cfg->name);
	s->mounts = pl->pv->mounts;
	s->n_mounts = pl->pv->n_mounts;
	s->limits = (struct ct_limits){ .pids = pl->proc->limits.pids,
					.memory = pl->proc->limits.memory,
					.cpu_milli = pl->proc->limits.cpu_milli,
					.tmp_size = pl->proc->limits.tmp_size };
	s->stdio[0] = s->stdio[1] = s->stdio[2] = -1;
	s->tty_fd = -1;
	s->private_proc = ctx->cfg->private_proc;
	/* A leaf with native egress joins the host's network; any other
	 * sandbox has only `lo` and the gateway's listener on it (the agent's
	 * receiver beside it). */
	s->share_net = pl->native;
	pl->pv->ports[0] = ctx->proxy_port;
	pl->pv->ports[1] = ctx->telemetry_port;
	s->listen_ports = pl->pv->ports;
	s->n_listen = pl->native ? 0 : !leaf && ctx->telemetry_port ? 2 : 1;
	if (s->cwd == NULL || s->hostname == NULL) {
		nomem(pl);
		goto out;
	}
	if (ctx->mediated && !leaf && plan_mediation(pl) != 0)
		goto out;
	if (stat(plan->program, &plan->program_st) != 0) {
		fail_at(pl, 0, 0, "executable is not an executable regular file: %s",
			plan->program);
		goto out;
	}
	*out = plan;
	plan = NULL;
	rc = 0;
out:
	for (int i = 0; i < D_N; i++)
		free(pl->d[i].p);
	free(pl);
	plan_free(plan);
	return rc;
}

int plan_agent(const struct plan_ctx *ctx, struct plan **out, char *err, size_t errlen)
{
	return plan_process(ctx, &ctx->cfg->agent, false, "[agent]", out, err, errlen);
}

int plan_tool(const struct plan_ctx *ctx, const struct box_tool *tool, struct plan **out,
	      char *err, size_t errlen)
{
	char label[160];
	struct plan_ctx c = *ctx;

	snprintf(label, sizeof label, "[tool.%s]", tool->label);
	c.n_trailing = 0;               /* `run`'s trailing argv is the agent's */
	c.telemetry_port = 0;           /* the agent receiver is the agent's */
	return plan_process(&c, &tool->proc, true, label, out, err, errlen);
}

bool plan_shows(const struct plan *p, const char *dir)
{
	const struct plan_priv *pv = p->priv_;
	ssize_t best = shown_by(pv, dir);

	return best >= 0 && (pv->mounts[best].kind == CT_BIND ||
			     (pv->mounts[best].kind == CT_DIR &&
			      strcmp(pv->mounts[best].path, dir) == 0));
}

void plan_free(struct plan *p)
{
	struct plan_priv *pv;

	if (p == NULL)
		return;
	if ((pv = p->priv_) != NULL) {
		for (size_t i = 0; i < pv->n_strs; i++)
			free(pv->strs[i]);
		free(pv->strs);
		free(pv->mounts);
		free(pv->why);
		free(pv->argv);
		free(pv->envp);
		free(pv->areas);
		free(pv->cred);
		free(pv);
	}
	free(p->disclosure);
	free(p);
}
