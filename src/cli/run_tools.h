/* run_tools.h - `cairn run`'s part for [tool.*] tables (docs/tools.md): the
 * shims in bin/, the broker's socket, each tool's leaf planned, the broker
 * started and stopped. */
#ifndef CAIRN_CLI_RUN_TOOLS_H
#define CAIRN_CLI_RUN_TOOLS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "boxconf.h"
#include "broker.h"
#include "mediate.h"
#include "plan.h"

struct boxdir;

struct run_tools {
	size_t n;                       /* cfg's [tool.*] tables */
	struct plan **plans;            /* each one's leaf */
	struct brk_tool *tools;
	const char **names;             /* the distinct shim names */
	size_t n_names;
	struct med_tool_program *progs; /* the distinct programs, for the mediator */
	size_t n_progs;
	char **strs;                    /* what progs and tools point at */
	size_t n_strs;
	dev_t shim_dev;                 /* the shim image (0: no tools) */
	ino_t shim_ino;
	int listener;                   /* run/box.sock, until the broker takes it */
	char sock[PATH_MAX + 16];       /* its path, for the agent's view ("" no tools) */
	struct brk *brk;
};

/* bin/ and run/box.sock for cfg's tools (nothing with none, and stale shims
 * removed).  0, or -1 with err. */
int run_tools_prepare(struct run_tools *t, const struct box_config *cfg, const struct boxdir *bd,
		      char *err, size_t errlen);

/* Plan each tool's leaf with ctx (agent_workspace set); the start lines
 * are each plan's disclosure.  0, or -1 with Box's refusal in err. */
int run_tools_plan(struct run_tools *t, const struct plan_ctx *ctx, char *err, size_t errlen);

/* Does some tool's leaf reach the network through the gateway? */
bool run_tools_need_gateway(const struct run_tools *t);

/* Serve the socket; c's tools and names are filled here. */
int run_tools_start(struct run_tools *t, struct brk_config *c, char *err, size_t errlen);

/* Stop the broker (every leaf killed, outcomes recorded); free.  Safe on
 * a zeroed or partly prepared t. */
void run_tools_stop(struct run_tools *t);
void run_tools_free(struct run_tools *t);

#endif
