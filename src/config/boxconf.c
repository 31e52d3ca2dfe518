/* boxconf.c - box.toml into struct box_config (see boxconf.h).
 *
 * Divisions: arena and errors; value helpers; paths; limits; process specs;
 * secrets and destinations; egress, mcp, telemetry, containment, gateway;
 * the top level and the cross-table checks.
 *
 * Order of refusals, as Box's serde + validate() order gives them: keys in
 * document order (removed keys by name, unknown keys, types, per-value rules),
 * then a table's missing required keys, then the rules across tables. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boxconf.h"
#include "toml.h"

/* ---- arena and errors ---------------------------------------------------- */

struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct ld {
	const char *file;
	const char *home;
	char *dir;                          /* the config's directory; NULL: "." */
	struct box_config *cfg;
	struct box_config_error *err;
};

static void *a_alloc(struct ld *ld, size_t n)
{
	struct arena_blk **head = (struct arena_blk **)&ld->cfg->arena_;
	struct arena_blk *b = *head;
	size_t al = _Alignof(max_align_t), need;
	void *p;

	if (n == 0)
		n = 1;
	if (__builtin_add_overflow(n, al - 1, &need))
		return NULL;
	need &= ~(al - 1);
	if (b == NULL || b->cap - b->used < need) {
		size_t cap = need > 8192 ? need : 8192;

		b = calloc(1, sizeof *b + cap);
		if (b == NULL)
			return NULL;
		b->cap = cap;
		b->next = *head;
		*head = b;
	}
	p = (char *)b->data + b->used;
	b->used += need;
	return p;
}

static char *a_strndup(struct ld *ld, const char *s, size_t n)
{
	char *p = a_alloc(ld, n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static char *a_strdup(struct ld *ld, const char *s)
{
	return a_strndup(ld, s, strlen(s));
}

__attribute__((format(printf, 4, 5)))
static int fail(struct ld *ld, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	ld->err->code = -EINVAL;
	ld->err->line = line;
	ld->err->col = col;
	if (line)
		snprintf(ld->err->where, sizeof ld->err->where, "%s:%u:%u", ld->file, line, col);
	else
		snprintf(ld->err->where, sizeof ld->err->where, "%s", ld->file);
	va_start(ap, fmt);
	vsnprintf(ld->err->msg, sizeof ld->err->msg, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int oom(struct ld *ld)
{
	fail(ld, 0, 0, "out of memory");
	ld->err->code = -ENOMEM;
	return -ENOMEM;
}

/* ---- value helpers --------------------------------------------------------- */

static bool key_is(const struct toml_kv *kv, const char *k)
{
	return kv->key_len == strlen(k) && memcmp(kv->key, k, kv->key_len) == 0;
}

/* serde's wording for what was found ("integer `1`"). */
static void found_str(const struct toml_value *v, char *buf, size_t n)
{
	switch (v->kind) {
	case TOML_STRING:
		snprintf(buf, n, "string \"%.60s\"", v->s.p);
		break;
	case TOML_INTEGER:
		snprintf(buf, n, "integer `%lld`", (long long)v->i);
		break;
	case TOML_FLOAT:
		snprintf(buf, n, "floating point `%g`", v->f);
		break;
	case TOML_BOOL:
		snprintf(buf, n, "boolean `%s`", v->b ? "true" : "false");
		break;
	case TOML_ARRAY:
		snprintf(buf, n, "sequence");
		break;
	case TOML_TABLE:
		snprintf(buf, n, "map");
		break;
	default:
		snprintf(buf, n, "datetime");
		break;
	}
}

static int bad_type(struct ld *ld, const struct toml_value *v, const char *want, const char *key)
{
	char found[96];

	found_str(v, found, sizeof found);
	return fail(ld, v->line, v->col, "invalid type: %s, expected %s for key `%s`", found, want,
		    key);
}

/* A string with no NUL inside (a NUL would cut every later use short). */
static int want_str(struct ld *ld, const struct toml_value *v, const char *key, const char **out)
{
	if (v->kind != TOML_STRING)
		return bad_type(ld, v, "a string", key);
	if (strlen(v->s.p) != v->s.n)
		return fail(ld, v->line, v->col, "`%s` holds a NUL character", key);
	*out = v->s.p;
	return 0;
}

static int want_bool(struct ld *ld, const struct toml_value *v, const char *key, bool *out)
{
	if (v->kind != TOML_BOOL)
		return bad_type(ld, v, "a boolean", key);
	*out = v->b;
	return 0;
}

static int want_table(struct ld *ld, const struct toml_value *v, const char *key)
{
	return v->kind == TOML_TABLE ? 0 : bad_type(ld, v, "a table", key);
}

/* A string array copied into the arena. */
static int want_strs(struct ld *ld, const struct toml_value *v, const char *key,
		     struct box_strs *out)
{
	if (v->kind != TOML_ARRAY)
		return bad_type(ld, v, "an array of strings", key);
	out->line = v->line, out->col = v->col;
	out->n = v->arr.n;
	out->v = a_alloc(ld, (v->arr.n ? v->arr.n : 1) * sizeof *out->v);
	if (out->v == NULL)
		return oom(ld);
	for (size_t i = 0; i < v->arr.n; i++) {
		const char *s;
		int rc = want_str(ld, v->arr.v[i], key, &s);

		if (rc)
			return rc;
		if ((out->v[i] = a_strdup(ld, s)) == NULL)    /* the doc is freed after load */
			return oom(ld);
	}
	return 0;
}

static int unknown_key(struct ld *ld, const struct toml_kv *kv, const char *const *known)
{
	char list[512];
	size_t off = 0;

	list[0] = '\0';
	for (size_t i = 0; known[i] != NULL && off < sizeof list; i++)
		off += (size_t)snprintf(list + off, sizeof list - off, "%s`%s`", i ? ", " : "",
					known[i]);
	if (known[0] == NULL)
		return fail(ld, kv->line, kv->col, "unknown field `%s`, there are no fields",
			    kv->key);
	if (known[1] == NULL)
		return fail(ld, kv->line, kv->col, "unknown field `%s`, expected %s", kv->key, list);
	return fail(ld, kv->line, kv->col, "unknown field `%s`, expected one of %s", kv->key, list);
}

static int missing(struct ld *ld, unsigned line, unsigned col, const char *key)
{
	return fail(ld, line, col, "missing field `%s`", key);
}

/* Keys Box removed, refused by name with their replacement (docs/config.md
 * "Removed keys").  The replacement texts are cairn's reading: Box names the
 * keys, not them. */
struct removed {
	const char *where;                  /* "top", "agent", "tool", "tool.fs", "mcp.fs", ... */
	const char *key;
	const char *replacement;
};

static const struct removed removed_keys[] = {
	{ "top", "filesystem", "`[agent.filesystem]`" },
	{ "top", "workspace", "`[agent] workspace`" },
	{ "top", "env", "`[agent.env]`" },
	{ "agent", "packs", "`[tool.<label>]` tables" },
	{ "agent", "code", "`[tool.<label>]` tables" },
	{ "agent", "default_command", "`[agent] command`" },
	{ "agent", "read", "`[agent.filesystem] read`" },
	{ "agent", "write", "`[agent.filesystem] write`" },
	{ "tool", "exec", "`command`" },
	{ "tool", "read", "`filesystem.read`" },
	{ "tool", "write", "`filesystem.write`" },
	{ "tool.fs", "metadata", "`read`" },
	{ "tool.fs", "exec", "`read`" },
	{ "mcp.fs", "metadata", "`read`" },
	{ "mcp.fs", "exec", "`read`" },
	{ "secret", "phantom", "`secret.inject`" },
	{ "telemetry", "signals", "`include`" },
};

static int check_removed(struct ld *ld, const char *where, const struct toml_kv *kv)
{
	for (size_t i = 0; i < sizeof removed_keys / sizeof removed_keys[0]; i++)
		if (strcmp(removed_keys[i].where, where) == 0 && key_is(kv, removed_keys[i].key))
			return fail(ld, kv->line, kv->col,
				    "%s carries `%s`, which this build does not read; write %s "
				    "instead. Edit the configuration, or select an empty `box_dir` "
				    "to rebuild a stored record",
				    ld->file, removed_keys[i].key, removed_keys[i].replacement);
	return 0;
}

/* One component of [A-Za-z0-9._-], not "." or ".." (box name, tool label). */
static bool nameable(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static const char *component_problem(const char *s, size_t n)
{
	if (n == 0)
		return "it is empty";
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return "it names a directory, not one component";
	for (size_t i = 0; i < n; i++)
		if (!nameable(s[i]))
			return "it carries a character other than letters, digits, '.', '_', or '-'";
	return NULL;
}

static bool env_name_valid(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* Names the box sets itself or that hook a loader (docs/config.md "env"). */
static bool env_name_reserved(const char *s)
{
	static const char *const exact[] = {
		"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
		"NODE_USE_ENV_PROXY", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
		"CODEX_CA_CERTIFICATE", "AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO",
		"PWD", "USER", "NODE_OPTIONS", "BASH_ENV", "ENV", "RUBYOPT", "PERL5LIB",
		"PERL5OPT", "GEM_PATH", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
	};
	static const char *const prefixes[] = { "OTEL_EXPORTER_OTLP_", "LD_", "DYLD_", "PYTHON" };

	for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
		if (strcmp(s, exact[i]) == 0)
			return true;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* ---- paths ----------------------------------------------------------------- */

enum path_form {
	PATH_ABSOLUTE = 1,                  /* only "/…" */
	PATH_TILDE = 2,                     /* "~" and "~/…" */
	PATH_RELATIVE = 4,                  /* joined to the config's directory */
};

/* Fill p from s (already checked a string); the caller has refused the forms
 * it does not take. */
static int resolve(struct ld *ld, const char *s, unsigned line, unsigned col, struct box_path *p)
{
	char *r;

	p->line = line, p->col = col;
	if ((p->authored = a_strdup(ld, s)) == NULL)
		return oom(ld);
	if (s[0] == '~' && (s[1] == '\0' || s[1] == '/')) {
		if (ld->home == NULL || ld->home[0] != '/')
			return fail(ld, line, col, "HOME is not set");
		size_t hl = strlen(ld->home);

		while (hl > 1 && ld->home[hl - 1] == '/')
			hl--;
		if (s[1] == '\0' || s[2] == '\0')
			r = a_strndup(ld, ld->home, hl);
		else if ((r = a_alloc(ld, hl + strlen(s + 1) + 1)) != NULL) {
			memcpy(r, ld->home, hl);
			strcpy(r + (hl == 1 ? 0 : hl), s + 1);
		}
	} else if (s[0] == '/' || ld->dir == NULL) {
		r = a_strdup(ld, s);
	} else if ((r = a_alloc(ld, strlen(ld->dir) + strlen(s) + 2)) != NULL) {
		sprintf(r, "%s%s%s", ld->dir, strcmp(ld->dir, "/") == 0 ? "" : "/", s);
	}
	if (r == NULL)
		return oom(ld);
	p->resolved = r;
	return 0;
}

static bool is_tilde(const char *s)
{
	return s[0] == '~' && (s[1] == '\0' || s[1] == '/');
}

static bool has_dotdot(const char *s)
{
	for (const char *c = s; (c = strstr(c, "..")) != NULL; c += 2)
		if ((c == s || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
			return true;
	return false;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* Is p equal to or below dir (string comparison, components whole)? */
static bool path_within(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(p, dir, n) != 0)
		return false;
	return p[n] == '\0' || p[n] == '/' || (n == 1 && dir[0] == '/');
}

/* ---- limits (cairn) ------------------------------------------------------ */

/* memory, tmp_size: a positive integer of bytes, or a string of digits with
 * an optional K, M, G or T suffix (binary multiples, either case). */
static int parse_size(struct ld *ld, const struct toml_value *v, const char *key, uint64_t *out)
{
	uint64_t n = 0, mul = 1;
	const char *s;

	if (v->kind == TOML_INTEGER) {
		if (v->i <= 0)
			return fail(ld, v->line, v->col, "`%s` must be a positive size, got %lld",
				    key, (long long)v->i);
		*out = (uint64_t)v->i;
		return 0;
	}
	if (v->kind != TOML_STRING)
		return bad_type(ld, v, "a size in bytes (an integer, or a string like \"512M\")",
				key);
	s = v->s.p;
	if (*s < '0' || *s > '9')
		goto bad;
	for (; *s >= '0' && *s <= '9'; s++)
		if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, (uint64_t)(*s - '0'), &n))
			goto bad;
	switch (*s) {
	case '\0': break;
	case 'k': case 'K': mul = 1ull << 10; s++; break;
	case 'm': case 'M': mul = 1ull << 20; s++; break;
	case 'g': case 'G': mul = 1ull << 30; s++; break;
	case 't': case 'T': mul = 1ull << 40; s++; break;
	default: goto bad;
	}
	if (*s != '\0' || (size_t)(s - v->s.p) != v->s.n || __builtin_mul_overflow(n, mul, &n) ||
	    n == 0 || n > INT64_MAX)
		goto bad;
	*out = n;
	return 0;
bad:
	return fail(ld, v->line, v->col,
		    "`%s` = \"%s\" is not a size; write a positive number of bytes, optionally "
		    "followed by K, M, G or T (\"512M\", \"2G\")", key, v->s.p);
}

/* cpu: a number of CPUs (1, 1.5) or a string percentage of one CPU ("150%");
 * at least 0.01 CPU, the smallest quota cgroup v2 cpu.max takes per period. */
static int parse_cpu(struct ld *ld, const struct toml_value *v, uint32_t *out)
{
	double cpus;

	if (v->kind == TOML_INTEGER)
		cpus = (double)v->i;
	else if (v->kind == TOML_FLOAT)
		cpus = v->f;
	else if (v->kind == TOML_STRING) {
		char *end;
		const char *s = v->s.p;

		if (*s < '0' || *s > '9')
			goto bad;
		cpus = strtod(s, &end) / 100.0;
		if (end == s || strcmp(end, "%") != 0)
			goto bad;
	} else {
		return bad_type(ld, v, "a number of CPUs (1.5) or a percentage (\"150%\")", "cpu");
	}
	if (!isfinite(cpus) || cpus < 0.01 || cpus > 4096.0)
		goto bad;
	*out = (uint32_t)(cpus * 1000.0 + 0.5);    /* no libm: round by hand */
	return 0;
bad:
	return fail(ld, v->line, v->col,
		    "`cpu` must be a number of CPUs from 0.01 to 4096 (1.5) or a percentage of one "
		    "CPU (\"150%%\")");
}

static int parse_limits(struct ld *ld, const struct toml_value *t, struct box_limits *lim)
{
	static const char *const known[] = { "pids", "memory", "cpu", "tmp_size", NULL };
	int rc;

	if ((rc = want_table(ld, t, "limits")) != 0)
		return rc;
	lim->present = true;
	lim->line = t->line, lim->col = t->col;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;

		if (key_is(kv, "pids")) {
			if (v->kind != TOML_INTEGER)
				return bad_type(ld, v, "a positive integer", "pids");
			if (v->i <= 0 || v->i > 4194304)
				return fail(ld, v->line, v->col,
					    "`pids` must be a positive integer no larger than "
					    "4194304, got %lld", (long long)v->i);
			lim->pids = (uint32_t)v->i;
		} else if (key_is(kv, "memory")) {
			rc = parse_size(ld, v, "memory", &lim->memory);
		} else if (key_is(kv, "tmp_size")) {
			rc = parse_size(ld, v, "tmp_size", &lim->tmp_size);
		} else if (key_is(kv, "cpu")) {
			rc = parse_cpu(ld, v, &lim->cpu_milli);
		} else {
			return unknown_key(ld, kv, known);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- process specs ----------------------------------------------------------- */

enum role { ROLE_AGENT, ROLE_TOOL, ROLE_MCP };

static const char *const fs_names[BOX_FS_NLISTS] = {
	"read", "write", "read_file", "write_file", "list", "metadata", "exec", "deny",
};

const char *box_fs_list_name(enum box_fs_list l)
{
	return (unsigned)l < BOX_FS_NLISTS ? fs_names[l] : NULL;
}

static int parse_fs_entry(struct ld *ld, const char *table, enum role role,
			  enum box_fs_list l, const struct toml_value *v, struct box_paths *list,
			  size_t idx)
{
	const char *s;
	int rc;

	if ((rc = want_str(ld, v, fs_names[l], &s)) != 0)
		return rc;
	if (s[0] != '/' && !is_tilde(s))
		return fail(ld, v->line, v->col,
			    "`%s` filesystem entry \"%s\" is refused: it must be absolute or begin "
			    "with `~/`", table, s);
	if (strpbrk(s, "*?[]{}") != NULL || has_control(s))
		return fail(ld, v->line, v->col,
			    "`%s` filesystem entry \"%s\" is refused: it must name one exact path, "
			    "with no pattern or control character", table, s);
	if (has_dotdot(s))
		return fail(ld, v->line, v->col,
			    "`%s` filesystem entry \"%s\" is refused: it carries a `..` component",
			    table, s);
	for (size_t j = 0; j < idx; j++)
		if (strcmp(list->v[j].authored, s) == 0)
			return fail(ld, v->line, v->col,
				    "`%s` filesystem entry \"%s\" is refused: it is duplicated in "
				    "`%s`", table, s, fs_names[l]);
	if ((rc = resolve(ld, s, v->line, v->col, &list->v[idx])) != 0)
		return rc;
	/* Landlock, like Box's namespace backend, has no right that lists a
	 * directory without reading it: refused in Box's words.  The agent's
	 * entries are refused when the run plans them (src/run/plan.c), after the
	 * checks Box makes first (the path exists, is no link, is a directory);
	 * a leaf's, here. */
	if (l == BOX_FS_LIST && role != ROLE_AGENT)
		return fail(ld, v->line, v->col,
			    "`%s` filesystem entry \"%s\" is refused: %s cannot be listed without "
			    "its contents on Linux: the namespace backend has no lowering for "
			    "`list`; grant `read` instead", table, s, list->v[idx].resolved);
	return 0;
}

static int parse_filesystem(struct ld *ld, const char *table, enum role role,
			    const struct toml_value *t, struct box_process *p)
{
	static const char *const known_agent[] = { "read", "write", "read_file", "write_file",
						   "list", "metadata", "exec", "deny", NULL };
	static const char *const known_leaf[] = { "read", "write", "read_file", "write_file",
						  "list", "deny", NULL };
	int rc;

	if ((rc = want_table(ld, t, "filesystem")) != 0)
		return rc;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;
		int l = -1;

		if (role != ROLE_AGENT &&
		    (rc = check_removed(ld, role == ROLE_TOOL ? "tool.fs" : "mcp.fs", kv)) != 0)
			return rc;
		for (int j = 0; j < BOX_FS_NLISTS; j++)
			if (key_is(kv, fs_names[j]))
				l = j;
		if (l < 0 || (role != ROLE_AGENT && (l == BOX_FS_METADATA || l == BOX_FS_EXEC)))
			return unknown_key(ld, kv, role == ROLE_AGENT ? known_agent : known_leaf);
		if (v->kind != TOML_ARRAY)
			return bad_type(ld, v, "an array of paths", fs_names[l]);
		p->fs[l].n = v->arr.n;
		p->fs[l].v = a_alloc(ld, (v->arr.n ? v->arr.n : 1) * sizeof *p->fs[l].v);
		if (p->fs[l].v == NULL)
			return oom(ld);
		for (size_t j = 0; j < v->arr.n; j++)
			if ((rc = parse_fs_entry(ld, table, role, (enum box_fs_list)l, v->arr.v[j],
						 &p->fs[l], j)) != 0)
				return rc;
	}
	return 0;
}

static int parse_env(struct ld *ld, const struct toml_value *t, struct box_env *env)
{
	int rc;

	if ((rc = want_table(ld, t, "env")) != 0)
		return rc;
	env->n = t->tab.n;
	env->v = a_alloc(ld, (t->tab.n ? t->tab.n : 1) * sizeof *env->v);
	if (env->v == NULL)
		return oom(ld);
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const char *val;
		char key[300];

		if (strlen(kv->key) != kv->key_len || !env_name_valid(kv->key))
			return fail(ld, kv->line, kv->col,
				    "`env` name \"%s\" is not an environment name; use letters, "
				    "digits and '_', not starting with a digit", kv->key);
		if (env_name_reserved(kv->key))
			return fail(ld, kv->line, kv->col,
				    "`env` name \"%s\" is set by the box itself, so a table cannot "
				    "claim it", kv->key);
		snprintf(key, sizeof key, "env.%s", kv->key);
		if ((rc = want_str(ld, kv->value, key, &val)) != 0)
			return rc;
		if ((strcmp(kv->key, "HOME") == 0 || strcmp(kv->key, "TMPDIR") == 0) &&
		    val[0] != '/')
			return fail(ld, kv->value->line, kv->value->col,
				    "`env.%s` must be an absolute path: \"%s\"", kv->key, val);
		env->v[i].name = a_strdup(ld, kv->key);
		env->v[i].value = a_strdup(ld, val);
		if (env->v[i].name == NULL || env->v[i].value == NULL)
			return oom(ld);
		env->v[i].line = kv->line, env->v[i].col = kv->col;
	}
	return 0;
}

static int parse_command(struct ld *ld, const struct toml_value *v, struct box_process *p)
{
	const char *prog;
	int rc;

	if ((rc = want_strs(ld, v, "command", &p->command)) != 0)
		return rc;
	if (p->command.n == 0 || p->command.v[0][0] == '\0')
		return fail(ld, v->line, v->col, "`command` must name a program as its first entry");
	prog = p->command.v[0];
	if (strstr(prog, "${") != NULL)
		return fail(ld, v->arr.v[0]->line, v->arr.v[0]->col,
			    "`command` element 0 \"%s\" carries `${`; only the fixed arguments after "
			    "the program expand a variable", prog);
	if (prog[0] != '/' && strchr(prog, '/') != NULL)
		return fail(ld, v->arr.v[0]->line, v->arr.v[0]->col,
			    "`command` element 0 \"%s\" is a relative path; write an absolute path, "
			    "or a bare name that `env.PATH` resolves", prog);
	return 0;
}

static int parse_network(struct ld *ld, const char *table, enum role role,
			 const struct toml_kv *nkv, struct box_process *p)
{
	static const char *const known[] = { "contain_egress", NULL };
	const struct toml_value *t = nkv->value;
	int rc;

	if (role == ROLE_AGENT)
		return fail(ld, nkv->line, nkv->col,
			    "`network` is refused on `%s`: the agent always reaches the network "
			    "through the egress gateway, so only a `[tool.<label>]` or stdio "
			    "`[mcp.<name>]` table may set `network.contain_egress`", table);
	if ((rc = want_table(ld, t, "network")) != 0)
		return rc;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];

		if (!key_is(kv, "contain_egress"))
			return unknown_key(ld, kv, known);
		if ((rc = want_bool(ld, kv->value, "contain_egress", &p->contain_egress)) != 0)
			return rc;
	}
	return 0;
}

/* skip: a key the caller reads itself (an MCP server's `type`). */
static int parse_process(struct ld *ld, const char *table, enum role role,
			 const struct toml_value *t, const char *skip, struct box_process *p)
{
	static const char *const known_agent[] = { "command", "workspace", "env", "filesystem",
						   "limits", NULL };
	static const char *const known_tool[] = { "command", "workspace", "env", "filesystem",
						  "network", "limits", "egress", NULL };
	static const char *const known_mcp[] = { "type", "command", "workspace", "env",
						 "filesystem", "network", NULL };
	const char *const *known = role == ROLE_AGENT ? known_agent :
				   role == ROLE_TOOL ? known_tool : known_mcp;
	bool have_command = false;
	int rc;

	if ((rc = want_table(ld, t, table)) != 0)
		return rc;
	p->present = true;
	p->line = t->line, p->col = t->col;
	p->contain_egress = true;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;

		if (skip != NULL && key_is(kv, skip))
			continue;
		if (role != ROLE_MCP &&
		    (rc = check_removed(ld, role == ROLE_AGENT ? "agent" : "tool", kv)) != 0)
			return rc;
		if (key_is(kv, "command")) {
			rc = parse_command(ld, v, p);
			have_command = true;
		} else if (key_is(kv, "workspace")) {
			const char *s;

			if ((rc = want_str(ld, v, "workspace", &s)) != 0)
				return rc;
			if (s[0] != '/')
				return fail(ld, v->line, v->col, "`workspace` must be absolute: %s", s);
			rc = resolve(ld, s, v->line, v->col, &p->workspace);
		} else if (key_is(kv, "env")) {
			rc = parse_env(ld, v, &p->env);
		} else if (key_is(kv, "filesystem")) {
			rc = parse_filesystem(ld, table, role, v, p);
		} else if (key_is(kv, "network")) {
			rc = parse_network(ld, table, role, kv, p);
		} else if (key_is(kv, "limits") && role != ROLE_MCP) {
			rc = parse_limits(ld, v, &p->limits);
		} else if (key_is(kv, "egress") && role == ROLE_TOOL) {
			p->has_egress_routes = true;
			rc = want_strs(ld, v, "egress", &p->egress_routes);
		} else {
			return unknown_key(ld, kv, known);
		}
		if (rc)
			return rc;
	}
	if (!have_command)
		return missing(ld, t->line, t->col, "command");
	return 0;
}

/* ---- secrets and destinations -------------------------------------------- */

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* env:// names a vault may never read (docs/config.md "Secrets"). */
static bool vault_denied(const char *n)
{
	static const char *const deny[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_SECURITY_TOKEN", "AWS_CREDENTIAL_EXPIRATION", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "LD_PRELOAD", "LD_LIBRARY_PATH", "HOME", "PATH",
	};

	for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++)
		if (strcmp(n, deny[i]) == 0)
			return true;
	return env_name_reserved(n);
}

struct secret_seen {
	const struct toml_kv *placement, *header, *prefix, *param, *inject, *phantom_prefix;
};

static int parse_secret(struct ld *ld, const char *table, const struct toml_value *t,
			struct box_secret *sec)
{
	static const char *const known[] = { "ref", "placement", "header", "prefix", "param",
					     "inject", "phantom_prefix", NULL };
	struct secret_seen seen = { 0 };
	const struct toml_kv *refkv = NULL;
	int rc;

	if ((rc = want_table(ld, t, "secret")) != 0)
		return rc;
	sec->present = true;
	sec->line = t->line, sec->col = t->col;
	sec->placement = BOX_PLACE_HEADER;
	sec->header = "Authorization";
	sec->inject = BOX_INJECT_PHANTOM;
	sec->phantom_prefix = "strands_box_";
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;
		const char *s;

		if ((rc = check_removed(ld, "secret", kv)) != 0)
			return rc;
		if (!key_is(kv, "ref") && !key_is(kv, "placement") && !key_is(kv, "header") &&
		    !key_is(kv, "prefix") && !key_is(kv, "param") && !key_is(kv, "inject") &&
		    !key_is(kv, "phantom_prefix"))
			return unknown_key(ld, kv, known);
		if ((rc = want_str(ld, v, kv->key, &s)) != 0)
			return rc;
		if (key_is(kv, "ref")) {
			refkv = kv;
			sec->ref = s;
		} else if (key_is(kv, "placement")) {
			seen.placement = kv;
			if (strcmp(s, "header") == 0)
				sec->placement = BOX_PLACE_HEADER;
			else if (strcmp(s, "basic_auth") == 0)
				sec->placement = BOX_PLACE_BASIC_AUTH;
			else if (strcmp(s, "query_param") == 0)
				sec->placement = BOX_PLACE_QUERY_PARAM;
			else
				return fail(ld, v->line, v->col,
					    "`%s` secret.placement \"%s\" is not one of: header, "
					    "basic_auth, query_param", table, s);
		} else if (key_is(kv, "header")) {
			seen.header = kv;
			for (const char *c = s; *c; c++)
				if (!tchar(*c))
					goto bad_header;
			if (s[0] == '\0') {
bad_header:
				return fail(ld, v->line, v->col,
					    "`%s` secret.header \"%s\" is not an HTTP header name",
					    table, s);
			}
			sec->header = s;
		} else if (key_is(kv, "prefix")) {
			seen.prefix = kv;
			if (has_control(s) || strpbrk(s, "{}") != NULL)
				return fail(ld, v->line, v->col,
					    "`%s` secret.prefix carries a control character or a "
					    "brace", table);
			sec->prefix = s;
		} else if (key_is(kv, "param")) {
			seen.param = kv;
			if (s[0] == '\0' || has_control(s))
				return fail(ld, v->line, v->col,
					    "`%s` secret.param must name a query parameter", table);
			sec->param = s;
		} else if (key_is(kv, "inject")) {
			seen.inject = kv;
			if (strcmp(s, "phantom") == 0)
				sec->inject = BOX_INJECT_PHANTOM;
			else if (strcmp(s, "always") == 0)
				sec->inject = BOX_INJECT_ALWAYS;
			else
				return fail(ld, v->line, v->col,
					    "`%s` secret.inject \"%s\" is not one of: phantom, always",
					    table, s);
		} else {
			size_t n = strlen(s);

			seen.phantom_prefix = kv;
			if (n == 0 || n > 64 || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
						     "qrstuvwxyz0123456789-_.~") != n)
				return fail(ld, v->line, v->col,
					    "`%s` secret.phantom_prefix \"%s\" must be 1 to 64 of "
					    "A-Z a-z 0-9 - _ . ~", table, s);
			sec->phantom_prefix = s;
		}
	}
	if (refkv == NULL)
		return missing(ld, t->line, t->col, "ref");
	{
		const struct toml_value *v = refkv->value;
		const char *r = sec->ref, *name;

		if (strncmp(r, "env://", 6) == 0)
			sec->scheme = BOX_SECRET_ENV, name = r + 6;
		else if (strncmp(r, "aws://", 6) == 0)
			sec->scheme = BOX_SECRET_AWS, name = r + 6;
		else if (strncmp(r, "credsd://", 9) == 0)
			sec->scheme = BOX_SECRET_CREDSD, name = r + 9;
		else
			return fail(ld, v->line, v->col,
				    "`%s` secret.ref \"%s\" is refused: write env://NAME, "
				    "aws://PROFILE or credsd://NAME; a literal secret, file://, op:// "
				    "and cmd:// are not read", table, r);
		if (name[0] == '\0' || has_control(name) || strchr(name, '/') != NULL)
			return fail(ld, v->line, v->col,
				    "`%s` secret.ref \"%s\" names nothing after its scheme", table, r);
		if (sec->scheme == BOX_SECRET_ENV && !env_name_valid(name))
			return fail(ld, v->line, v->col,
				    "`%s` secret.ref \"%s\" does not name an environment variable",
				    table, r);
		if (sec->scheme == BOX_SECRET_ENV && vault_denied(name))
			return fail(ld, v->line, v->col,
				    "`%s` secret.ref \"%s\" names a variable the box reserves or will "
				    "not read a secret from", table, r);
		sec->ref_name = name;
		sec->ref_line = v->line, sec->ref_col = v->col;
	}
	/* Keys a scheme does not take: an aws:// route signs rather than attaches;
	 * inject and the phantom exist only for env://. */
	{
		const struct toml_kv *bad = NULL;

		if (sec->scheme == BOX_SECRET_AWS)
			bad = seen.placement ? seen.placement : seen.header ? seen.header :
			      seen.prefix ? seen.prefix : seen.param ? seen.param :
			      seen.inject ? seen.inject : seen.phantom_prefix;
		else if (sec->scheme == BOX_SECRET_CREDSD)
			bad = seen.inject ? seen.inject : seen.phantom_prefix;
		if (bad != NULL)
			return fail(ld, bad->line, bad->col,
				    "`%s` secret.%s does not apply to a %s secret.ref", table,
				    bad->key, sec->scheme == BOX_SECRET_AWS ? "aws://" : "credsd://");
	}
	if (sec->placement == BOX_PLACE_QUERY_PARAM && sec->param == NULL)
		return fail(ld, t->line, t->col,
			    "`%s` secret.placement = \"query_param\" needs secret.param", table);
	if (sec->placement != BOX_PLACE_QUERY_PARAM && seen.param != NULL)
		return fail(ld, seen.param->line, seen.param->col,
			    "`%s` secret.param applies only to secret.placement = \"query_param\"",
			    table);
	if (sec->prefix == NULL)
		sec->prefix = strcasecmp(sec->header, "Authorization") == 0 &&
			      sec->placement == BOX_PLACE_HEADER ? "Bearer " : "";
	/* Strings came from the doc: copy them into the arena. */
	sec->ref = a_strdup(ld, sec->ref);
	sec->ref_name = sec->ref ? sec->ref + (sec->ref_name - refkv->value->s.p) : NULL;
	sec->header = a_strdup(ld, sec->header);
	sec->prefix = a_strdup(ld, sec->prefix);
	sec->phantom_prefix = a_strdup(ld, sec->phantom_prefix);
	if (sec->param)
		sec->param = a_strdup(ld, sec->param);
	if (!sec->ref || !sec->header || !sec->prefix || !sec->phantom_prefix ||
	    (seen.param && !sec->param))
		return oom(ld);
	return 0;
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_';
}

/* host[:port][/path]; "*.suffix" hosts; a match-all host refused. */
static int parse_dest(struct ld *ld, const char *table, const struct toml_value *v,
		      struct box_dest *d)
{
	const char *s, *host_end, *path;
	char *host;
	size_t hl;
	int rc;

	if ((rc = want_str(ld, v, "destinations", &s)) != 0)
		return rc;
	d->line = v->line, d->col = v->col;
	if ((d->text = a_strdup(ld, s)) == NULL)
		return oom(ld);
	if (strstr(s, "://") != NULL)
		return fail(ld, v->line, v->col,
			    "`%s` destination \"%s\" carries a scheme; write host[:port][/path]",
			    table, s);
	path = strchr(s, '/');
	host_end = path ? path : s + strlen(s);
	{
		const char *colon = memchr(s, ':', (size_t)(host_end - s));

		if (colon != NULL) {
			long port = 0;

			if (colon + 1 == host_end)
				goto bad_port;
			for (const char *c = colon + 1; c < host_end; c++) {
				if (*c < '0' || *c > '9' || port > 65535)
					goto bad_port;
				port = port * 10 + (*c - '0');
			}
			if (port < 1 || port > 65535) {
bad_port:
				return fail(ld, v->line, v->col,
					    "`%s` destination \"%s\" has a port outside 1 to 65535",
					    table, s);
			}
			d->port = (uint16_t)port;
			host_end = colon;
		}
	}
	hl = (size_t)(host_end - s);
	if ((host = a_strndup(ld, s, hl)) == NULL)
		return oom(ld);
	for (char *c = host; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	if (strcmp(host, "*") == 0 || strcmp(host, "*.") == 0)
		return fail(ld, v->line, v->col,
			    "`%s` destination \"%s\" matches every host; name the hosts this secret "
			    "belongs to", table, s);
	d->wildcard = strncmp(host, "*.", 2) == 0;
	if (hl == 0)
		goto bad_host;
	for (const char *c = host + (d->wildcard ? 2 : 0); *c; c++)
		if (!host_char(*c))
			goto bad_host;
	if (host[d->wildcard ? 2 : 0] == '.' || host[hl - 1] == '.' || strstr(host, "..")) {
bad_host:
		return fail(ld, v->line, v->col, "`%s` destination \"%s\" does not name a host",
			    table, s);
	}
	d->host = host;
	if (path != NULL && strcmp(path, "/") != 0) {
		if (has_control(path) || strpbrk(path, "?#") != NULL || has_dotdot(path))
			return fail(ld, v->line, v->col,
				    "`%s` destination \"%s\" has a path that is not canonical", table,
				    s);
		if ((d->path = a_strdup(ld, path)) == NULL)
			return oom(ld);
	}
	return 0;
}

/* Two hosts can match one name. */
static bool hosts_overlap(const struct box_dest *a, const struct box_dest *b)
{
	if (strcmp(a->host, b->host) == 0)
		return true;
	if (a->wildcard && !b->wildcard) {
		size_t sl = strlen(a->host + 1), bl = strlen(b->host);   /* ".suffix" */
		return bl > sl && strcmp(b->host + bl - sl, a->host + 1) == 0;
	}
	if (b->wildcard && !a->wildcard)
		return hosts_overlap(b, a);
	if (a->wildcard && b->wildcard) {
		size_t al = strlen(a->host), bl = strlen(b->host);
		const struct box_dest *lng = al >= bl ? a : b, *sht = al >= bl ? b : a;
		size_t sl = strlen(sht->host + 1), ll = strlen(lng->host);

		return strcmp(lng->host + ll - sl, sht->host + 1) == 0;
	}
	return false;
}

static bool ports_overlap(uint16_t a, uint16_t b)
{
	if (a == 0 || b == 0) {
		uint16_t p = a ? a : b;
		return p == 0 || p == 443 || p == 80;
	}
	return a == b;
}

/* Path prefixes by whole segment; a star pattern is judged conservatively
 * as overlapping anything under its fixed prefix. */
static bool paths_overlap(const char *a, const char *b)
{
	const char *sa, *sb;
	size_t la, lb, n;

	if (a == NULL || b == NULL)
		return true;
	sa = strchr(a, '*'), sb = strchr(b, '*');
	la = sa ? (size_t)(sa - a) : strlen(a);
	lb = sb ? (size_t)(sb - b) : strlen(b);
	n = la < lb ? la : lb;
	if (strncmp(a, b, n) != 0)
		return false;
	if (la == lb || sa || sb)
		return true;
	return (la < lb ? b[la] : a[lb]) == '/';
}

static bool dests_overlap(const struct box_dest *a, const struct box_dest *b)
{
	return hosts_overlap(a, b) && ports_overlap(a->port, b->port) &&
	       paths_overlap(a->path, b->path);
}

static int parse_dests(struct ld *ld, const char *table, const struct toml_value *v,
		       struct box_dests *out)
{
	int rc;

	if (v->kind != TOML_ARRAY)
		return bad_type(ld, v, "an array of destinations", "destinations");
	if (v->arr.n == 0)
		return fail(ld, v->line, v->col, "`%s` names no destination", table);
	out->n = v->arr.n;
	if ((out->v = a_alloc(ld, v->arr.n * sizeof *out->v)) == NULL)
		return oom(ld);
	for (size_t i = 0; i < v->arr.n; i++) {
		if ((rc = parse_dest(ld, table, v->arr.v[i], &out->v[i])) != 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (dests_overlap(&out->v[j], &out->v[i]))
				return fail(ld, out->v[i].line, out->v[i].col,
					    "`%s` destination \"%s\" overlaps \"%s\"; one request "
					    "would match two entries", table, out->v[i].text,
					    out->v[j].text);
	}
	return 0;
}

/* ---- egress, mcp, telemetry, containment, gateway ------------------------ */

static int parse_egress(struct ld *ld, const struct toml_kv *ekv, struct box_egress *e)
{
	static const char *const known[] = { "destinations", "protocol", "secret", NULL };
	const struct toml_value *t = ekv->value;
	char table[300];
	bool have_dest = false;
	int rc;

	snprintf(table, sizeof table, "[egress.%s]", ekv->key);
	if ((rc = want_table(ld, t, table)) != 0)
		return rc;
	if ((e->name = a_strdup(ld, ekv->key)) == NULL)
		return oom(ld);
	e->line = t->line, e->col = t->col;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const char *s;

		if (key_is(kv, "destinations")) {
			have_dest = true;
			rc = parse_dests(ld, table, kv->value, &e->destinations);
		} else if (key_is(kv, "protocol")) {
			if ((rc = want_str(ld, kv->value, "protocol", &s)) != 0)
				return rc;
			if (strcmp(s, "mcp") == 0)
				return fail(ld, kv->value->line, kv->value->col,
					    "`[egress.%s]` sets `protocol = \"mcp\"`, which is no "
					    "longer supported; declare a remote MCP server as "
					    "`[mcp.%s]` with `type = \"http\"`", ekv->key, ekv->key);
			if (strcmp(s, "http") != 0)
				return fail(ld, kv->value->line, kv->value->col,
					    "`%s` protocol \"%s\" is not supported; only \"http\" is",
					    table, s);
		} else if (key_is(kv, "secret")) {
			rc = parse_secret(ld, table, kv->value, &e->secret);
		} else {
			return unknown_key(ld, kv, known);
		}
		if (rc)
			return rc;
	}
	if (!have_dest)
		return missing(ld, t->line, t->col, "destinations");
	if (!e->secret.present)
		return fail(ld, t->line, t->col,
			    "an entry with no secret declares only a destination, which policy "
			    "already decides; give `%s` a `secret.ref`, or remove it", table);
	return 0;
}

static int parse_mcp(struct ld *ld, const struct toml_kv *mkv, struct box_mcp *m)
{
	static const char *const known_http[] = { "type", "destinations", "secret", NULL };
	const struct toml_value *t = mkv->value, *type;
	const char *s;
	char table[300];
	int rc;

	snprintf(table, sizeof table, "[mcp.%s]", mkv->key);
	if ((rc = want_table(ld, t, table)) != 0)
		return rc;
	if ((m->name = a_strdup(ld, mkv->key)) == NULL)
		return oom(ld);
	m->line = t->line, m->col = t->col;
	if ((type = toml_get(t, "type")) == NULL)
		return missing(ld, t->line, t->col, "type");
	if ((rc = want_str(ld, type, "type", &s)) != 0)
		return rc;
	if (strcmp(s, "stdio") == 0) {
		m->type = BOX_MCP_STDIO;
		return parse_process(ld, table, ROLE_MCP, t, "type", &m->proc);
	}
	if (strcmp(s, "http") != 0)
		return fail(ld, type->line, type->col,
			    "unknown variant `%s`, expected `stdio` or `http` for key `type`", s);
	m->type = BOX_MCP_HTTP;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];

		if (key_is(kv, "type"))
			continue;
		if (key_is(kv, "destinations"))
			rc = parse_dests(ld, table, kv->value, &m->destinations);
		else if (key_is(kv, "secret"))
			rc = parse_secret(ld, table, kv->value, &m->secret);
		else
			return unknown_key(ld, kv, known_http);
		if (rc)
			return rc;
	}
	if (m->destinations.n == 0)
		return missing(ld, t->line, t->col, "destinations");
	{
		const struct box_dest *d = &m->destinations.v[0];
		char url[400];

		if (d->port == 0 || d->port == 443)
			snprintf(url, sizeof url, "https://%s/mcp", d->host);
		else if (d->port == 80)
			snprintf(url, sizeof url, "http://%s/mcp", d->host);
		else
			snprintf(url, sizeof url, "http://%s:%u/mcp", d->host, d->port);
		if ((m->url = a_strdup(ld, url)) == NULL)
			return oom(ld);
	}
	return 0;
}

static const char *const signal_words[] = { "deny", "permit", "trace", "kernel", "logs",
					    "metrics" };

static int parse_telemetry(struct ld *ld, const struct toml_kv *tkv, struct box_telemetry *tm)
{
	static const char *const known[] = { "kind", "destination", "include", "secret", NULL };
	static const char *const known_secret[] = { "ref", "header", NULL };
	const struct toml_value *t = tkv->value, *dest = NULL;
	char table[300];
	const char *s;
	int rc;

	snprintf(table, sizeof table, "[telemetry.%s]", tkv->key);
	if ((rc = want_table(ld, t, table)) != 0)
		return rc;
	if ((tm->label = a_strdup(ld, tkv->key)) == NULL)
		return oom(ld);
	tm->line = t->line, tm->col = t->col;
	tm->include = BOX_SIG_ALL;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;

		if ((rc = check_removed(ld, "telemetry", kv)) != 0)
			return rc;
		if (key_is(kv, "kind")) {
			if ((rc = want_str(ld, v, "kind", &s)) != 0)
				return rc;
			if (strcmp(s, "file") == 0)
				tm->kind = BOX_TELEMETRY_FILE;
			else if (strcmp(s, "otlp") == 0)
				tm->kind = BOX_TELEMETRY_OTLP;
			else
				return fail(ld, v->line, v->col,
					    "unknown variant `%s`, expected `file` or `otlp` for key "
					    "`kind`", s);
		} else if (key_is(kv, "destination")) {
			if ((rc = want_str(ld, v, "destination", &s)) != 0)
				return rc;
			dest = v;
		} else if (key_is(kv, "include")) {
			if (v->kind != TOML_ARRAY)
				return bad_type(ld, v, "an array of signal names", "include");
			if (v->arr.n == 0)
				return fail(ld, v->line, v->col,
					    "the target names no signal, so nothing would reach it; "
					    "write one or more of: deny, permit, trace, logs, metrics, "
					    "kernel");
			tm->include = 0;
			for (size_t j = 0; j < v->arr.n; j++) {
				const struct toml_value *w = v->arr.v[j];
				unsigned bit = 0;

				if ((rc = want_str(ld, w, "include", &s)) != 0)
					return rc;
				for (size_t k = 0; k < 6; k++)
					if (strcmp(s, signal_words[k]) == 0)
						bit = 1u << k;
				if (bit == 0)
					return fail(ld, w->line, w->col,
						    "the target names \"%s\", which is no signal; "
						    "write one or more of: deny, permit, trace, logs, "
						    "metrics, kernel", s);
				if (tm->include & bit)
					return fail(ld, w->line, w->col,
						    "the target names %s twice", s);
				tm->include |= bit;
			}
		} else if (key_is(kv, "secret")) {
			if ((rc = want_table(ld, v, "secret")) != 0)
				return rc;
			tm->has_secret = true;
			tm->secret_header = "Authorization";
			for (size_t j = 0; j < v->tab.n; j++) {
				const struct toml_kv *sk = &v->tab.kv[j];

				if (!key_is(sk, "ref") && !key_is(sk, "header"))
					return unknown_key(ld, sk, known_secret);
				if ((rc = want_str(ld, sk->value, sk->key, &s)) != 0)
					return rc;
				if (key_is(sk, "ref")) {
					const char *n = strncmp(s, "env://", 6) == 0 ? s + 6 :
							strncmp(s, "secret://", 9) == 0 ? s + 9 : NULL;

					if (n == NULL || *n == '\0')
						return fail(ld, sk->value->line, sk->value->col,
							    "`%s` secret.ref \"%s\" is refused: write "
							    "env://NAME or secret://NAME", table, s);
					if ((tm->secret_ref = a_strdup(ld, s)) == NULL)
						return oom(ld);
				} else {
					for (const char *c = s; *c; c++)
						if (!tchar(*c))
							goto bad_header;
					if (*s == '\0') {
bad_header:
						return fail(ld, sk->value->line, sk->value->col,
							    "`%s` secret.header \"%s\" is not an "
							    "HTTP header name", table, s);
					}
					if ((tm->secret_header = a_strdup(ld, s)) == NULL)
						return oom(ld);
				}
			}
			if (tm->secret_ref == NULL)
				return missing(ld, v->line, v->col, "ref");
		} else {
			return unknown_key(ld, kv, known);
		}
	}
	if (tm->kind == 0)
		return missing(ld, t->line, t->col, "kind");
	if (dest == NULL)
		return missing(ld, t->line, t->col, "destination");
	s = dest->s.p;
	if (tm->kind == BOX_TELEMETRY_FILE) {
		if (s[0] != '/' && strncmp(s, "~/", 2) != 0)
			return fail(ld, dest->line, dest->col,
				    "a file destination must be absolute or begin with `~/`");
		if (has_dotdot(s))
			return fail(ld, dest->line, dest->col,
				    "the destination \"%s\" carries a `..` component", s);
		if (tm->has_secret)
			return fail(ld, t->line, t->col,
				    "`%s` is a file target, which sends nothing and takes no secret",
				    table);
		return resolve(ld, s, dest->line, dest->col, &tm->destination);
	}
	if ((strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) ||
	    strlen(s) <= 8 || has_control(s))
		return fail(ld, dest->line, dest->col,
			    "`%s` destination \"%s\" is not a collector URL; write http://host:port "
			    "or https://host", table, s);
	tm->destination.line = dest->line, tm->destination.col = dest->col;
	tm->destination.authored = tm->destination.resolved = a_strdup(ld, s);
	return tm->destination.authored ? 0 : oom(ld);
}

static int parse_containment(struct ld *ld, const struct toml_value *t)
{
	static const char *const known[] = { "private_proc", "mediate", "mediate_sync", NULL };
	int rc;

	if ((rc = want_table(ld, t, "containment")) != 0)
		return rc;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];

		if (key_is(kv, "private_proc"))
			rc = want_bool(ld, kv->value, "private_proc", &ld->cfg->private_proc);
		else if (key_is(kv, "mediate")) {       /* cairn */
			bool on = false;
			rc = want_bool(ld, kv->value, "mediate", &on);
			ld->cfg->mediate = on ? BOX_MEDIATE_ON : BOX_MEDIATE_OFF;
		} else if (key_is(kv, "mediate_sync")) {        /* cairn */
			const char *v = NULL;
			rc = want_str(ld, kv->value, "mediate_sync", &v);
			if (rc == 0 && strcmp(v, "each") == 0)
				ld->cfg->mediate_sync_each = true;
			else if (rc == 0 && strcmp(v, "group") != 0)
				return fail(ld, kv->value->line, kv->value->col,
					    "unknown variant `%s`, expected `group` or `each` for key "
					    "`mediate_sync`", v);
		}
		else
			return unknown_key(ld, kv, known);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int parse_gateway(struct ld *ld, const struct toml_value *t)
{
	static const char *const known[] = { "hosts", "extra_ca_files", "destination_floor", NULL };
	struct box_gateway *g = &ld->cfg->gateway;
	int rc;

	if ((rc = want_table(ld, t, "gateway")) != 0)
		return rc;
	g->present = true;
	for (size_t i = 0; i < t->tab.n; i++) {
		const struct toml_kv *kv = &t->tab.kv[i];
		const struct toml_value *v = kv->value;

		if (key_is(kv, "destination_floor")) {
			if ((rc = want_bool(ld, v, "destination_floor", &g->destination_floor)) != 0)
				return rc;
		} else if (key_is(kv, "hosts")) {
			if ((rc = want_table(ld, v, "hosts")) != 0)
				return rc;
			g->n_hosts = v->tab.n;
			if ((g->hosts = a_alloc(ld, (v->tab.n ? v->tab.n : 1) * sizeof *g->hosts)) == NULL)
				return oom(ld);
			for (size_t j = 0; j < v->tab.n; j++) {
				const struct toml_kv *hk = &v->tab.kv[j];
				struct box_gateway_host *h = &g->hosts[j];
				unsigned char buf[16];
				const char *addr;
				char *name;
				bool ok = hk->key_len > 0 && strlen(hk->key) == hk->key_len;

				if ((name = a_strdup(ld, hk->key)) == NULL)
					return oom(ld);
				for (char *c = name; *c; c++) {
					if (*c >= 'A' && *c <= 'Z')
						*c = (char)(*c - 'A' + 'a');
					ok = ok && host_char(*c);
				}
				if (!ok || name[0] == '.' || name[strlen(name) - 1] == '.')
					return fail(ld, hk->line, hk->col,
						    "`[gateway] hosts` name \"%s\" is not a host name",
						    hk->key);
				for (size_t k = 0; k < j; k++)
					if (strcmp(g->hosts[k].name, name) == 0)
						return fail(ld, hk->line, hk->col,
							    "`[gateway] hosts` names \"%s\" twice "
							    "(host names are case-insensitive)", hk->key);
				if ((rc = want_str(ld, hk->value, hk->key, &addr)) != 0)
					return rc;
				if (inet_pton(AF_INET, addr, buf) != 1 &&
				    inet_pton(AF_INET6, addr, buf) != 1)
					return fail(ld, hk->value->line, hk->value->col,
						    "`[gateway] hosts.%s` = \"%s\" is not an IPv4 or "
						    "IPv6 address", hk->key, addr);
				h->name = name;
				if ((h->address = a_strdup(ld, addr)) == NULL)
					return oom(ld);
				h->line = hk->line, h->col = hk->col;
			}
		} else if (key_is(kv, "extra_ca_files")) {
			struct box_paths *ps = &g->extra_ca_files;

			if (v->kind != TOML_ARRAY)
				return bad_type(ld, v, "an array of paths", "extra_ca_files");
			ps->n = v->arr.n;
			if ((ps->v = a_alloc(ld, (v->arr.n ? v->arr.n : 1) * sizeof *ps->v)) == NULL)
				return oom(ld);
			for (size_t j = 0; j < v->arr.n; j++) {
				const struct toml_value *e = v->arr.v[j];
				const char *s;

				if ((rc = want_str(ld, e, "extra_ca_files", &s)) != 0)
					return rc;
				if (s[0] == '\0' || has_control(s))
					return fail(ld, e->line, e->col,
						    "`[gateway] extra_ca_files` entry \"%s\" is not a "
						    "path", s);
				if ((rc = resolve(ld, s, e->line, e->col, &ps->v[j])) != 0)
					return rc;
				for (size_t k = 0; k < j; k++)
					if (strcmp(ps->v[k].resolved, ps->v[j].resolved) == 0)
						return fail(ld, e->line, e->col,
							    "`[gateway] extra_ca_files` names %s twice",
							    ps->v[j].resolved);
			}
		} else {
			return unknown_key(ld, kv, known);
		}
	}
	return 0;
}

/* ---- top level ------------------------------------------------------------- */

static int parse_name(struct ld *ld, const struct toml_kv *kv)
{
	const char *s, *why;
	int rc;

	if ((rc = want_str(ld, kv->value, "name", &s)) != 0)
		return rc;
	why = component_problem(s, strlen(s));
	if (why == NULL && strlen(s) > BOX_NAME_MAX)
		why = "it is longer than 32 bytes, the length of one readable label";
	if (why != NULL)
		return fail(ld, kv->value->line, kv->value->col,
			    "box name \"%s\" is invalid: %s; use one component of letters, digits, "
			    "'.', '_', or '-'", s, why);
	ld->cfg->name = a_strdup(ld, s);
	ld->cfg->name_line = kv->value->line, ld->cfg->name_col = kv->value->col;
	return ld->cfg->name ? 0 : oom(ld);
}

/* A table of named sub-tables: count, allocate, then parse each in order. */
static int parse_tables(struct ld *ld, const struct toml_kv *kv, size_t elem, size_t *n,
			void **arr)
{
	int rc;

	if ((rc = want_table(ld, kv->value, kv->key)) != 0)
		return rc;
	*n = kv->value->tab.n;
	*arr = a_alloc(ld, (*n ? *n : 1) * elem);
	return *arr ? 0 : oom(ld);
}

static int parse_root(struct ld *ld, const struct toml_value *root)
{
	static const char *const known[] = { "name", "box_dir", "policy", "agent", "tool",
					     "egress", "mcp", "telemetry", "containment",
					     "gateway", NULL };
	struct box_config *cfg = ld->cfg;
	bool have_box_dir = false;
	int rc = 0;

	for (size_t i = 0; i < root->tab.n; i++) {
		const struct toml_kv *kv = &root->tab.kv[i];
		const struct toml_value *v = kv->value;
		const char *s;

		if ((rc = check_removed(ld, "top", kv)) != 0)
			return rc;
		if (key_is(kv, "name")) {
			rc = parse_name(ld, kv);
		} else if (key_is(kv, "box_dir")) {
			if ((rc = want_str(ld, v, "box_dir", &s)) != 0)
				return rc;
			if (s[0] != '/')
				return fail(ld, v->line, v->col, "`box_dir` must be absolute: %s", s);
			have_box_dir = true;
			rc = resolve(ld, s, v->line, v->col, &cfg->box_dir);
		} else if (key_is(kv, "policy")) {
			if ((rc = want_str(ld, v, "policy", &s)) != 0)
				return rc;
			if (s[0] == '\0')
				return fail(ld, v->line, v->col, "`policy` names no file");
			rc = resolve(ld, s, v->line, v->col, &cfg->policy);
		} else if (key_is(kv, "agent")) {
			rc = parse_process(ld, "[agent]", ROLE_AGENT, v, NULL, &cfg->agent);
		} else if (key_is(kv, "tool")) {
			if ((rc = parse_tables(ld, kv, sizeof *cfg->tools, &cfg->n_tools,
					       (void **)&cfg->tools)) != 0)
				return rc;
			for (size_t j = 0; j < v->tab.n && rc == 0; j++) {
				const struct toml_kv *tk = &v->tab.kv[j];
				char table[300];

				if (component_problem(tk->key, tk->key_len) != NULL)
					return fail(ld, tk->line, tk->col,
						    "[tool.%s]: the label must be one component of "
						    "letters, digits, '.', '_', or '-'", tk->key);
				snprintf(table, sizeof table, "[tool.%s]", tk->key);
				if ((cfg->tools[j].label = a_strdup(ld, tk->key)) == NULL)
					return oom(ld);
				rc = parse_process(ld, table, ROLE_TOOL, tk->value, NULL,
						   &cfg->tools[j].proc);
			}
		} else if (key_is(kv, "egress")) {
			if ((rc = parse_tables(ld, kv, sizeof *cfg->egress, &cfg->n_egress,
					       (void **)&cfg->egress)) != 0)
				return rc;
			for (size_t j = 0; j < v->tab.n && rc == 0; j++)
				rc = parse_egress(ld, &v->tab.kv[j], &cfg->egress[j]);
		} else if (key_is(kv, "mcp")) {
			if ((rc = parse_tables(ld, kv, sizeof *cfg->mcp, &cfg->n_mcp,
					       (void **)&cfg->mcp)) != 0)
				return rc;
			for (size_t j = 0; j < v->tab.n && rc == 0; j++)
				rc = parse_mcp(ld, &v->tab.kv[j], &cfg->mcp[j]);
		} else if (key_is(kv, "telemetry")) {
			if ((rc = parse_tables(ld, kv, sizeof *cfg->telemetry, &cfg->n_telemetry,
					       (void **)&cfg->telemetry)) != 0)
				return rc;
			for (size_t j = 0; j < v->tab.n && rc == 0; j++)
				rc = parse_telemetry(ld, &v->tab.kv[j], &cfg->telemetry[j]);
		} else if (key_is(kv, "containment")) {
			rc = parse_containment(ld, v);
		} else if (key_is(kv, "gateway")) {
			rc = parse_gateway(ld, v);
		} else {
			return unknown_key(ld, kv, known);
		}
		if (rc)
			return rc;
	}
	if (cfg->name == NULL)
		return missing(ld, 0, 0, "name");
	if (!have_box_dir)
		return missing(ld, 0, 0, "box_dir");
	return 0;
}

/* An env table that sets the variable an env:// route gives its phantom
 * under would replace the phantom (the table's env comes after the phantoms,
 * later wins), and the gateway then refuses every request of that route as
 * one without its placeholder.  Refused, naming both.  A tool with an
 * `egress` list receives only the phantoms of the routes it names. */
static int check_phantom_env(struct ld *ld, const char *table, const struct box_process *p)
{
	const struct box_config *cfg = ld->cfg;

	for (size_t i = 0; i < p->env.n; i++) {
		const struct box_env_var *v = &p->env.v[i];

		for (size_t r = 0; r < cfg->n_egress + cfg->n_mcp; r++) {
			bool eg = r < cfg->n_egress;
			const struct box_secret *sec = eg ? &cfg->egress[r].secret :
							    &cfg->mcp[r - cfg->n_egress].secret;
			const char *name = eg ? cfg->egress[r].name : cfg->mcp[r - cfg->n_egress].name;
			bool scoped = p->has_egress_routes;

			if (!sec->present || sec->scheme != BOX_SECRET_ENV ||
			    strcmp(sec->ref_name, v->name) != 0)
				continue;
			for (size_t k = 0; scoped && eg && k < p->egress_routes.n; k++)
				scoped = strcmp(p->egress_routes.v[k], name) != 0;
			if (scoped)
				continue;       /* that phantom never reaches this process */
			return fail(ld, v->line, v->col,
				    "`[%s.env]` sets %s, the variable that carries the phantom of "
				    "`[%s.%s]` (secret.ref \"%s\" at %u:%u): the table's value would "
				    "replace the phantom, and the gateway refuses every request of "
				    "that route without it (403 blocked by egress control); remove "
				    "%s from `[%s.env]`, because the box sets it", table, v->name,
				    eg ? "egress" : "mcp", name, sec->ref, sec->ref_line,
				    sec->ref_col, v->name, table);
		}
	}
	return 0;
}

/* Rules across tables, after every table read cleanly. */
static int check_cross(struct ld *ld)
{
	struct box_config *cfg = ld->cfg;
	char table[300];
	int rc;

	if (cfg->agent.present && (rc = check_phantom_env(ld, "agent", &cfg->agent)) != 0)
		return rc;
	for (size_t i = 0; i < cfg->n_tools; i++) {
		snprintf(table, sizeof table, "tool.%s", cfg->tools[i].label);
		if ((rc = check_phantom_env(ld, table, &cfg->tools[i].proc)) != 0)
			return rc;
	}
	for (size_t i = 0; i < cfg->n_mcp; i++) {
		snprintf(table, sizeof table, "mcp.%s", cfg->mcp[i].name);
		if (cfg->mcp[i].type == BOX_MCP_STDIO &&
		    (rc = check_phantom_env(ld, table, &cfg->mcp[i].proc)) != 0)
			return rc;
	}

	/* A tool's route list names declared routes (cairn, issue 5 §6). */
	for (size_t i = 0; i < cfg->n_tools; i++) {
		const struct box_process *p = &cfg->tools[i].proc;

		for (size_t j = 0; j < p->egress_routes.n; j++) {
			const char *r = p->egress_routes.v[j];

			if (box_config_egress(cfg, r) == NULL)
				return fail(ld, p->egress_routes.line, p->egress_routes.col,
					    "`[tool.%s]` egress names \"%s\", which no `[egress.%s]` "
					    "declares", cfg->tools[i].label, r, r);
			for (size_t k = 0; k < j; k++)
				if (strcmp(p->egress_routes.v[k], r) == 0)
					return fail(ld, p->egress_routes.line,
						    p->egress_routes.col,
						    "`[tool.%s]` egress names \"%s\" twice",
						    cfg->tools[i].label, r);
		}
	}
	/* Routes may not overlap, across [egress.*] and http [mcp.*] alike. */
	{
		size_t n = cfg->n_egress + cfg->n_mcp;

		for (size_t a = 0; a < n; a++) {
			const struct box_dests *da = a < cfg->n_egress ? &cfg->egress[a].destinations :
						     &cfg->mcp[a - cfg->n_egress].destinations;
			const char *na = a < cfg->n_egress ? cfg->egress[a].name :
					 cfg->mcp[a - cfg->n_egress].name;

			for (size_t b = a + 1; b < n; b++) {
				const struct box_dests *db = b < cfg->n_egress ?
					&cfg->egress[b].destinations :
					&cfg->mcp[b - cfg->n_egress].destinations;
				const char *nb = b < cfg->n_egress ? cfg->egress[b].name :
						 cfg->mcp[b - cfg->n_egress].name;

				for (size_t i = 0; i < db->n; i++)
					for (size_t j = 0; j < da->n; j++)
						if (dests_overlap(&da->v[j], &db->v[i]))
							return fail(ld, db->v[i].line, db->v[i].col,
								    "destination \"%s\" of `%s` "
								    "overlaps \"%s\" of `%s`; one "
								    "request would match two entries",
								    db->v[i].text, nb, da->v[j].text,
								    na);
			}
		}
	}
	/* A file target inside box_dir only under private/ (docs/config.md
	 * "[telemetry.<label>]"). */
	for (size_t i = 0; i < cfg->n_telemetry; i++) {
		const struct box_telemetry *tm = &cfg->telemetry[i];
		char priv[4200];

		if (tm->kind != BOX_TELEMETRY_FILE)
			continue;
		snprintf(priv, sizeof priv, "%s/private", cfg->box_dir.resolved);
		if (path_within(tm->destination.resolved, cfg->box_dir.resolved) &&
		    !(path_within(tm->destination.resolved, priv) &&
		      strlen(tm->destination.resolved) > strlen(priv)))
			return fail(ld, tm->destination.line, tm->destination.col,
				    "\"%s\" is inside the box directory %s but outside its private "
				    "tree, where a process could truncate it; write it below %s/",
				    tm->destination.authored, cfg->box_dir.authored, priv);
	}
	return 0;
}

int box_config_load(const char *file, const char *text, size_t len, const char *home,
		    struct box_config **out, struct box_config_error *err)
{
	struct toml_doc *doc = NULL;
	struct toml_error terr;
	struct box_config *cfg;
	struct ld ld = { .file = file ? file : "box.toml", .home = home, .err = err };
	const char *slash;
	int rc;

	memset(err, 0, sizeof *err);
	if ((cfg = calloc(1, sizeof *cfg)) == NULL) {
		ld.cfg = NULL;
		snprintf(err->msg, sizeof err->msg, "out of memory");
		err->code = -ENOMEM;
		return -ENOMEM;
	}
	ld.cfg = cfg;
	cfg->private_proc = true;
	cfg->gateway.destination_floor = true;
	if ((cfg->file = a_strdup(&ld, ld.file)) == NULL) {
		rc = oom(&ld);
		goto out;
	}
	slash = strrchr(ld.file, '/');
	if (slash != NULL &&
	    (ld.dir = strndup(ld.file, slash == ld.file ? 1 : (size_t)(slash - ld.file))) == NULL) {
		rc = oom(&ld);
		goto out;
	}
	rc = toml_parse(text, len, &doc, &terr);
	if (rc == -ENOMEM) {
		rc = oom(&ld);
		goto out;
	}
	if (rc != 0) {
		/* The caller frames every load error as Box does ("cannot parse config
		 * file <p>: <e>"), a TOML one too: the message is the reader's alone. */
		rc = fail(&ld, terr.line, terr.col, "%s", terr.msg);
		goto out;
	}
	if ((rc = parse_root(&ld, toml_root(doc))) != 0 || (rc = check_cross(&ld)) != 0)
		goto out;
	*out = cfg;
	cfg = NULL;
out:
	toml_free(doc);
	free(ld.dir);
	box_config_free(cfg);
	return rc;
}

void box_config_free(struct box_config *cfg)
{
	struct arena_blk *b, *next;

	if (cfg == NULL)
		return;
	for (b = cfg->arena_; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	free(cfg);
}

int box_config_check_workload(const struct box_config *cfg, struct box_config_error *err)
{
	if (cfg->agent.present)
		return 0;
	memset(err, 0, sizeof *err);
	err->code = -EINVAL;
	snprintf(err->where, sizeof err->where, "%s", cfg->file);
	snprintf(err->msg, sizeof err->msg,
		 "no workload to run: the configuration has no `[agent]` table, and a trailing "
		 "argv appends to `[agent] command` rather than replacing it");
	return -EINVAL;
}

const struct box_tool *box_config_tool(const struct box_config *cfg, const char *label)
{
	for (size_t i = 0; i < cfg->n_tools; i++)
		if (strcmp(cfg->tools[i].label, label) == 0)
			return &cfg->tools[i];
	return NULL;
}

const struct box_egress *box_config_egress(const struct box_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_egress; i++)
		if (strcmp(cfg->egress[i].name, name) == 0)
			return &cfg->egress[i];
	return NULL;
}

const struct box_mcp *box_config_mcp(const struct box_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_mcp; i++)
		if (strcmp(cfg->mcp[i].name, name) == 0)
			return &cfg->mcp[i];
	return NULL;
}

const char *box_env_get(const struct box_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (strcmp(env->v[i].name, name) == 0)
			return env->v[i].value;
	return NULL;
}
