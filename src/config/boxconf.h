/* boxconf.h - the box.toml model: every key Box reads, its defaults and its
 * load-time refusals (docs/config.md), plus cairn's additions
 * ([agent.limits], [tool.<label>.limits], a tool's `egress` route list and the
 * [gateway] table).
 *
 * box_config_load checks only what the text says: keys, types, enumerations,
 * duplicates, reserved names, path forms, cross-table references.  What needs
 * the filesystem or the operator's environment (a grant exists, is not a
 * symlink, is canonical; box_dir's parent exists; an env:// variable is set;
 * the workspace is not the operator home) belongs to the run that opens the
 * box and is not checked here.
 *
 * Every string and array of a loaded model is owned by the box_config and
 * lives until box_config_free.  Every value remembers where it was written. */
#ifndef CAIRN_BOXCONF_H
#define CAIRN_BOXCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOX_NAME_MAX 32                 /* bytes: "one readable label" */

/* A path as written and as Box would open it: `~` and `~/…` against the home
 * given to box_config_load, a relative path (only where Box allows one:
 * `policy`, cairn's gateway.extra_ca_files) against the config's directory.
 * Nothing is canonicalised.  authored == NULL: the key was absent. */
struct box_path {
	const char *authored;
	const char *resolved;
	unsigned line, col;
};

struct box_paths {
	size_t n;
	struct box_path *v;
};

struct box_strs {
	size_t n;
	const char **v;
	unsigned line, col;                 /* of the array; 0 when absent */
};

/* The filesystem lists of a process spec, in Box's order.  METADATA and EXEC
 * are [agent] only; LIST is refused on Linux, so it is always empty. */
enum box_fs_list {
	BOX_FS_READ,
	BOX_FS_WRITE,
	BOX_FS_READ_FILE,
	BOX_FS_WRITE_FILE,
	BOX_FS_LIST,
	BOX_FS_METADATA,
	BOX_FS_EXEC,
	BOX_FS_DENY,
	BOX_FS_NLISTS
};

/* The list's key as written in box.toml ("read_file"). */
const char *box_fs_list_name(enum box_fs_list l);

struct box_env_var {
	const char *name, *value;
	unsigned line, col;
};

struct box_env {
	size_t n;
	struct box_env_var *v;              /* document order; names unique */
};

/* cairn: [agent.limits], [tool.<label>.limits].  0 means "not set". */
struct box_limits {
	bool present;
	unsigned line, col;
	uint32_t pids;                      /* positive integer, <= 4194304 */
	uint64_t memory;                    /* bytes */
	uint64_t tmp_size;                  /* bytes */
	uint32_t cpu_milli;                 /* thousandths of a CPU: 1.5 or "150%" -> 1500 */
};

/* [agent], [tool.<label>] and a stdio [mcp.<name>]. */
struct box_process {
	bool present;
	unsigned line, col;                 /* of the table */
	struct box_strs command;            /* n >= 1; [0] the program as written */
	struct box_path workspace;          /* absolute; authored NULL = Box's default */
	struct box_env env;
	struct box_paths fs[BOX_FS_NLISTS]; /* resolved: `~` expanded */
	bool contain_egress;                /* network.contain_egress, default true */
	struct box_limits limits;           /* agent and tools only */
	bool has_egress_routes;             /* cairn, tools only: `egress = [...]` */
	struct box_strs egress_routes;      /* each names an [egress.<name>] */
};

struct box_tool {
	const char *label;
	struct box_process proc;
};

enum box_secret_scheme { BOX_SECRET_ENV = 1, BOX_SECRET_AWS, BOX_SECRET_CREDSD };
enum box_placement { BOX_PLACE_HEADER = 1, BOX_PLACE_BASIC_AUTH, BOX_PLACE_QUERY_PARAM };
enum box_inject { BOX_INJECT_PHANTOM = 1, BOX_INJECT_ALWAYS };

/* secret.* of an [egress.<name>] or an http [mcp.<name>], defaults filled. */
struct box_secret {
	bool present;
	unsigned line, col;
	const char *ref;                    /* "env://GITHUB_TOKEN" as written */
	unsigned ref_line, ref_col;         /* of the ref's value */
	enum box_secret_scheme scheme;
	const char *ref_name;               /* GITHUB_TOKEN, the AWS profile, the credsd name */
	enum box_placement placement;       /* header */
	const char *header;                 /* "Authorization" */
	const char *prefix;                 /* "Bearer " on Authorization, else "" */
	const char *param;                  /* query_param only, else NULL */
	enum box_inject inject;             /* phantom */
	const char *phantom_prefix;         /* "strands_box_" */
};

/* One destination: host[:port][/path], `*.suffix` hosts. */
struct box_dest {
	const char *text;                   /* as written */
	const char *host;                   /* lower case; "*.example.com" for a wildcard */
	bool wildcard;
	uint16_t port;                      /* 0: the bare host, ports 443 and 80 */
	const char *path;                   /* NULL: every path; else a "/v1" prefix or a star-suffix pattern */
	unsigned line, col;
};

struct box_dests {
	size_t n;
	struct box_dest *v;
};

struct box_egress {
	const char *name;
	unsigned line, col;
	struct box_dests destinations;
	struct box_secret secret;           /* always present once loaded */
};

enum box_mcp_type { BOX_MCP_STDIO = 1, BOX_MCP_HTTP };

struct box_mcp {
	const char *name;
	unsigned line, col;
	enum box_mcp_type type;
	struct box_process proc;            /* stdio */
	struct box_dests destinations;      /* http */
	struct box_secret secret;           /* http, optional */
	const char *url;                    /* http: the derived endpoint, https://host/mcp */
};

enum box_telemetry_kind { BOX_TELEMETRY_FILE = 1, BOX_TELEMETRY_OTLP };

enum box_signal {
	BOX_SIG_DENY = 1u << 0,
	BOX_SIG_PERMIT = 1u << 1,
	BOX_SIG_TRACE = 1u << 2,
	BOX_SIG_KERNEL = 1u << 3,
	BOX_SIG_LOGS = 1u << 4,
	BOX_SIG_METRICS = 1u << 5,
	BOX_SIG_ALL = (1u << 6) - 1,
};

struct box_telemetry {
	const char *label;
	unsigned line, col;
	enum box_telemetry_kind kind;
	struct box_path destination;        /* file: resolved path; otlp: the URL, both fields */
	unsigned include;                   /* BOX_SIG_* mask; absent = BOX_SIG_ALL */
	bool has_secret;
	const char *secret_ref;             /* env://NAME or secret://NAME */
	const char *secret_header;          /* "Authorization" */
};

/* cairn: [gateway] (issue 5). */
struct box_gateway_host {
	const char *name;                   /* lower case */
	const char *address;                /* an IPv4 or IPv6 literal */
	unsigned line, col;
};

struct box_gateway {
	bool present;
	size_t n_hosts;
	struct box_gateway_host *hosts;
	struct box_paths extra_ca_files;    /* absolute, `~/` or relative to the config */
	bool destination_floor;             /* default true; false opts out of the
	                                       loopback/link-local/metadata floor */
};

/* [containment] mediate: unset means on with a policy, off without one. */
enum box_mediate { BOX_MEDIATE_DEFAULT = 0, BOX_MEDIATE_ON, BOX_MEDIATE_OFF };

struct box_config {
	const char *file;                   /* as given to box_config_load */
	const char *name;
	unsigned name_line, name_col;
	struct box_path box_dir;            /* absolute, authored spelling kept */
	struct box_path policy;             /* authored NULL: no policy, deny all */
	struct box_process agent;           /* present false: no [agent] */
	size_t n_tools;
	struct box_tool *tools;
	size_t n_egress;
	struct box_egress *egress;
	size_t n_mcp;
	struct box_mcp *mcp;
	size_t n_telemetry;                 /* 0: the default file target */
	struct box_telemetry *telemetry;
	bool private_proc;                  /* [containment], default true */
	enum box_mediate mediate;           /* cairn: [containment] mediate (docs/mediator.md) */
	bool mediate_sync_each;             /* cairn: mediate_sync = "each" (default "group") */
	struct box_gateway gateway;
	void *arena_;                       /* private */
};

struct box_config_error {
	int code;                           /* -EINVAL (refused), -ENOMEM */
	unsigned line, col;                 /* 0 when the refusal has no position */
	char where[320];                    /* "box.toml:12:5" or "box.toml" */
	char msg[768];                      /* Box's text where Box has one */
};

/* Parse and validate box.toml text[0, len).  file names the config in
 * messages and its directory anchors a relative `policy`; pass the path the
 * run opened (absolute, so resolved paths are absolute).  home anchors `~`
 * (the operator's passwd home); NULL refuses any `~` path with "HOME is not
 * set".  Returns 0 and *out (free with box_config_free), or -EINVAL / -ENOMEM
 * with *err filled at the first refusal and *out untouched. */
int box_config_load(const char *file, const char *text, size_t len, const char *home,
		    struct box_config **out, struct box_config_error *err);

void box_config_free(struct box_config *cfg);   /* NULL is a no-op */

/* Box's refusal when there is nothing to run: 0 when cfg has an [agent],
 * else -EINVAL with "no workload to run: …" in *err. */
int box_config_check_workload(const struct box_config *cfg, struct box_config_error *err);

/* Lookups; NULL when absent.  Borrowed from cfg. */
const struct box_tool *box_config_tool(const struct box_config *cfg, const char *label);
const struct box_egress *box_config_egress(const struct box_config *cfg, const char *name);
const struct box_mcp *box_config_mcp(const struct box_config *cfg, const char *name);
const char *box_env_get(const struct box_env *env, const char *name);

#endif
