/* plan.h - how a process table of box.toml becomes a sandbox: the mounts
 * and Landlock rules of its view (runtime set, grants, floors, masks), its
 * environment, its limits, and the grant disclosure printed at start in Box's
 * format (docs/box-compat.md "The environment", "The grant disclosure").
 *
 * Everything that needs the filesystem is judged here, once, before the box
 * starts: a grant exists, is not a symbolic link, is canonical, is the right
 * type, is not refused by a floor.  Refusals use Box's texts (docs/config.md
 * "Checked at run time, not at load"). */
#ifndef CAIRN_PLAN_H
#define CAIRN_PLAN_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "boxconf.h"
#include "contain.h"
#include "mediate.h"

struct plan_ctx {
	const struct box_config *cfg;
	const char *config_path;        /* the loaded box.toml, canonical */
	const char *policy_path;        /* the loaded policy, canonical; NULL: none */
	const char *home;               /* the operator's passwd home (never $HOME) */
	const char *operator_path;      /* the operator's $PATH; NULL: unset */
	const char *run_cwd;            /* cwd of `cairn run`, canonical */
	const char *const *trailing;    /* argv after `--`, appended to command */
	size_t n_trailing;
	uint16_t proxy_port;            /* the gateway listener inside the netns */
	uint16_t telemetry_port;        /* the agent receiver's, beside it (0: none) */
	const char *const *gateway_env; /* "NAME=value" from the gateway (phantoms),
	                                   first in the environment; NULL-terminated or NULL */
	bool mediated;                  /* plan the mediator's trees too (docs/mediator.md) */
	const char *broker_socket;      /* the agent's view binds it (connect only); NULL: none */
	const char *agent_workspace;    /* canonical: a tool's default workspace (plan_tool) */
};

struct plan {
	struct ct_spec spec;            /* argv, envp, cwd, mounts, rules, limits; owned by the plan */
	const char *program;            /* canonical path of command[0] */
	struct stat program_st;         /* its identity when planned (a leaf's is checked again
	                                   at each spawn) */
	const char *label;              /* "[agent]" or "[tool.<label>]" */
	const char *const *cred_reads;  /* the credential stores its lists name exactly,
	                                   `~/…` under the operator's home (shell:spawn's
	                                   credential_reads) */
	size_t n_cred_reads;
	char *disclosure;               /* the stderr lines, each ending in '\n' */
	/* ctx->mediated: how the mediator classes each tree of the view (the
	 * runtime set, the grants, the decided roots, the floors); owned by the
	 * plan.  spec.mediated is set. */
	const struct med_area_spec *areas;
	size_t n_areas;
	void *priv_;
};

/* Plan the [agent] table.  Returns 0 and *out (free with plan_free), or -1
 * with Box's refusal in err[0, errlen) (prefixed by its file:line:col where
 * the config gives one) and *out untouched.  The plan owns every string and
 * array its spec points at: ctx and its config may be freed first.  The
 * spec's limits_mode, cgroup_name and notify_prog are left to the caller.
 * Reads the filesystem and the passwd/group databases (not thread-safe). */
int plan_agent(const struct plan_ctx *ctx, struct plan **out, char *err, size_t errlen);

/* Plan a [tool.<label>] table's leaf (docs/tools.md "The leaf"): its six
 * lists, the runtime set, the box directory showing only the gateway CA (no
 * shims, no socket), the config and policy subtracted, no mediation, its
 * limits, one gateway listener (or the host's network with
 * network.contain_egress = false).  spec.argv holds the program and the
 * table's fixed arguments; the broker replaces argv, the cwd and the
 * stdio per call.  As plan_agent otherwise. */
int plan_tool(const struct plan_ctx *ctx, const struct box_tool *tool, struct plan **out,
	      char *err, size_t errlen);

/* Does p's view show directory dir: inside a bind, or one of the view's own
 * empty directories itself (a call's cwd the leaf can start in)? */
bool plan_shows(const struct plan *p, const char *dir);

void plan_free(struct plan *p);         /* NULL is a no-op */

#endif
