/* run_tools.c - the tools of a run (run_tools.h; docs/tools.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boxdir.h"
#include "run_tools.h"

static const char *base_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static char *keep(struct run_tools *t, char *s)
{
	char **n = s ? realloc(t->strs, (t->n_strs + 1) * sizeof(*n)) : NULL;
	if (n == NULL) {
		free(s);
		return NULL;
	}
	t->strs = n;
	t->strs[t->n_strs++] = s;
	return s;
}

int run_tools_prepare(struct run_tools *t, const struct box_config *cfg, const struct boxdir *bd,
		      char *err, size_t errlen)
{
	t->listener = -1;
	t->n = cfg->n_tools;
	t->names = calloc(t->n + 1, sizeof(*t->names));
	if (t->names == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* one shim per program name: tables that share it are told apart by
	 * their fixed arguments */
	for (size_t i = 0; i < t->n; i++) {
		const char *name = base_of(cfg->tools[i].proc.command.v[0]);
		bool seen = false;
		for (size_t k = 0; k < t->n_names && !seen; k++)
			seen = strcmp(t->names[k], name) == 0;
		if (!seen)
			t->names[t->n_names++] = name;
	}
	if (brk_install_shims(bd->fd, t->names, t->n_names, &t->shim_dev, &t->shim_ino, err,
			      errlen) != 0)
		return -1;
	if (t->n == 0)
		return 0;
	if ((t->listener = brk_listen(bd->fd, bd->path, err, errlen)) < 0)
		return -1;
	snprintf(t->sock, sizeof(t->sock), "%s/run/box.sock", bd->path);
	return 0;
}

int run_tools_plan(struct run_tools *t, const struct plan_ctx *ctx, char *err, size_t errlen)
{
	const struct box_config *cfg = ctx->cfg;
	if (t->n == 0)
		return 0;
	t->plans = calloc(t->n, sizeof(*t->plans));
	t->tools = calloc(t->n, sizeof(*t->tools));
	t->progs = calloc(t->n, sizeof(*t->progs));
	if (t->plans == NULL || t->tools == NULL || t->progs == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct box_tool *bt = &cfg->tools[i];
		if (plan_tool(ctx, bt, &t->plans[i], err, errlen) != 0)
			return -1;
		const struct plan *p = t->plans[i];
		struct brk_tool *x = &t->tools[i];
		x->label = bt->label;
		x->name = base_of(bt->proc.command.v[0]);
		x->plan = p;
		x->fixed = p->spec.argv + 1;
		x->n_fixed = bt->proc.command.n - 1;
		x->cred_reads = p->cred_reads;
		x->n_cred = p->n_cred_reads;
		/* a name is one program: its shim cannot call two */
		for (size_t k = 0; k < i; k++)
			if (strcmp(t->tools[k].name, x->name) == 0 &&
			    strcmp(t->plans[k]->program, p->program) != 0) {
				snprintf(err, errlen, "%s:%u:%u: [tool.%s] runs %s and [tool.%s] "
					 "runs %s: both are called %s, and one shim cannot call "
					 "two programs; name one by another program", cfg->file,
					 bt->proc.line, bt->proc.col, bt->label, p->program,
					 t->tools[k].label, t->plans[k]->program, x->name);
				return -1;
			}
		bool seen = false;
		for (size_t k = 0; k < t->n_progs && !seen; k++)
			seen = t->progs[k].dev == p->program_st.st_dev &&
			       t->progs[k].ino == p->program_st.st_ino;
		if (seen)
			continue;
		char *shim = NULL;
		if (asprintf(&shim, "%.*s/bin/%s", (int)(strlen(t->sock) - strlen("/run/box.sock")),
			     t->sock, x->name) < 0 || keep(t, shim) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		t->progs[t->n_progs++] = (struct med_tool_program){
			.dev = p->program_st.st_dev, .ino = p->program_st.st_ino,
			.path = p->program, .shim = shim };
	}
	return 0;
}

bool run_tools_need_gateway(const struct run_tools *t)
{
	for (size_t i = 0; t->plans != NULL && i < t->n; i++)
		if (t->plans[i]->spec.n_listen > 0)
			return true;
	return false;
}

int run_tools_start(struct run_tools *t, struct brk_config *c, char *err, size_t errlen)
{
	if (t->n == 0)
		return 0;
	c->tools = t->tools;
	c->n_tools = t->n;
	int fd = t->listener;
	t->listener = -1;
	return brk_start(fd, c, &t->brk, err, errlen);
}

void run_tools_stop(struct run_tools *t)
{
	brk_stop(t->brk);
	t->brk = NULL;
}

void run_tools_free(struct run_tools *t)
{
	run_tools_stop(t);
	if (t->listener >= 0)
		close(t->listener);
	for (size_t i = 0; t->plans != NULL && i < t->n; i++)
		plan_free(t->plans[i]);
	for (size_t i = 0; i < t->n_strs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->plans);
	free(t->tools);
	free(t->progs);
	free(t->names);
	memset(t, 0, sizeof(*t));
	t->listener = -1;
}
