/* med_decide.c - the mediator's requests to the engine, the history and
 * the records, and the denial line a refused process reads
 * (docs/mediator.md "The history", "What a refused process is told").
 *
 * Requests are typed (dw_request_set_input): no JSON text is built or
 * parsed per call.  A worker's request is reset and reused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cause_dw.h"
#include "collector.h"
#include "dogwood.h"
#include "med_int.h"
#include "note.h"

#define COMMAND_MAX 8192

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}


static const char *op_type(const char *action)
{
	if (strcmp(action, "fs:read") == 0)
		return "Box::FsReadOperation";
	if (strcmp(action, "fs:write") == 0)
		return "Box::FsWriteOperation";
	if (strcmp(action, "fs:delete") == 0)
		return "Box::FsDeleteOperation";
	if (strcmp(action, "fs:move") == 0)
		return "Box::FsMoveOperation";
	return "Box::FsOtherOperation";
}

static int request_base(struct dw_request *r, const char *action)
{
	dw_request_reset(r);
	if (dw_request_set_principal(r, "Box::Agent", "self", 4) != 0 ||
	    dw_request_set_resource(r, "Box::Resource", "unused", 6) != 0 ||
	    dw_request_set_action(r, "Box::Action", action, strlen(action)) != 0)
		return -ENOMEM;
	return 0;
}

/* The record's ids, handed to the engine as the request's note so the
 * history can rebuild the record (note.h). */
static void note_begin(struct med_call *c, struct tm_trace *t)
{
	tm_trace_begin(t, NULL);
	if (c->m->tm == NULL)
		return;
	struct tm_note n = { .trace = *t };
	char text[TM_NOTE_MAX];
	snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(c->m->tm));
	tm_note_format(&n, text);
	(void)dw_request_set_note(c->req, text);
}

static int fs_request(struct med_call *c, const struct med_fs_ask *a, const char *spelled)
{
	char err[160];
	int rc = request_base(c->req, a->action);
	struct dw_input_attr in[2] = {
		{ .name = "operation", .kind = DW_ATTR_ENTITY, .type = op_type(a->action),
		  .s = a->op, .len = strlen(a->op) },
		{ .name = "path", .kind = DW_ATTR_STRING, .s = spelled, .len = strlen(spelled) },
	};
	if (rc == 0)
		rc = dw_request_set_input(c->req, in, 2, err, sizeof(err));
	if (rc == 0)
		rc = dw_request_set_subject(c->req, spelled);
	return rc;
}

static void record(struct med_call *c, struct tm_decision *td, const struct dw_decision *d)
{
	tm_emit_dw(c->m->tm, td, d);
}

/* Decide the request built in c->req; the record and the line told. */
static int decide(struct med_call *c, int rc, const char *action, const char *resource,
		  struct tm_decision *td, bool quiet, uint64_t *ticket)
{
	struct dw_decision d = { 0 };
	*ticket = 0;
	med_execs_sweep(c->m);
	td->time_ns = now_ns();
	if (rc == 0)
		rc = dw_decide(c->m->mon, c->req, &d, ticket);
	else
		d.verdict = DW_DENY, d.cause = DW_CAUSE_INTERNAL_FAULT;
	atomic_fetch_add(&c->m->st_decided, 1);
	td->action = action;
	td->resource = resource;
	bool allow = tm_decision_of_dw(td, rc, &d);
	record(c, td, &d);
	if (!allow) {
		atomic_fetch_add(&c->m->st_denied, 1);
		char text[1200];
		tm_dw_denial_text(&d, resource, text, sizeof(text));
		if (!quiet)
			med_tell(c, resource, text);
	}
	dw_decision_clear(&d);
	return allow;
}

int med_fs_decide(struct med_call *c, const struct med_fs_ask *a, uint64_t *ticket)
{
	char spelled[PATH_MAX + 2];
	med_view_spell(&c->m->view, a->path, spelled, sizeof(spelled));
	int rc = fs_request(c, a, spelled);
	struct tm_decision td = { .subject = TM_SUBJECT_FILE, .path = spelled };
	note_begin(c, &td.trace);
	return decide(c, rc, a->action, spelled, &td, a->quiet, ticket);
}

/* The outcome of ticket: a response with output[0, n), or ::error (output
 * NULL).  Typed: no JSON per call. */
static void done(struct med *m, uint64_t ticket, const struct dw_input_attr *output, size_t n)
{
	char err[160];
	if (ticket == 0)
		return;
	if (output != NULL)
		(void)dw_record_typed(m->mon, ticket, "response", output, n, err, sizeof(err));
	else
		(void)dw_record_typed(m->mon, ticket, "error", NULL, 0, err, sizeof(err));
}

/* {result: Box::FsResponseResult::"<result>"} */
static struct dw_input_attr fs_result(const char *result)
{
	return (struct dw_input_attr){ .name = "result", .kind = DW_ATTR_ENTITY, .s = result,
				       .len = strlen(result), .type = "Box::FsResponseResult" };
}

void med_fs_done(struct med_call *c, uint64_t ticket, const char *result)
{
	struct dw_input_attr out = result ? fs_result(result) : (struct dw_input_attr){ 0 };
	done(c->m, ticket, result ? &out : NULL, 1);
}

void med_fs_observe(struct med_call *c, const struct med_fs_ask *a, const char *result)
{
	char spelled[PATH_MAX + 2], err[160];
	med_view_spell(&c->m->view, a->path, spelled, sizeof(spelled));
	if (fs_request(c, a, spelled) != 0)
		return;
	if (result != NULL) {
		struct dw_input_attr out = fs_result(result);
		(void)dw_observe_typed(c->m->mon, c->req, "response", &out, 1, err, sizeof(err));
	} else {
		(void)dw_observe_typed(c->m->mon, c->req, "error", NULL, 0, err, sizeof(err));
	}
}

void med_fs_floor(struct med_call *c, const struct med_fs_ask *a, const char *why)
{
	char spelled[PATH_MAX + 2], reason[PATH_MAX + 400], err[160], note[TM_NOTE_MAX] = "";
	med_view_spell(&c->m->view, a->path, spelled, sizeof(spelled));
	snprintf(reason, sizeof(reason), "%s: %s", spelled, why);
	atomic_fetch_add(&c->m->st_floor, 1);
	struct tm_decision td = { .subject = TM_SUBJECT_FILE, .path = spelled,
				  .time_ns = now_ns(), .action = a->action, .resource = spelled,
				  .cause = TM_ENFORCEMENT, .rule = "enforcement:reach-floor",
				  .reason = reason };
	tm_trace_begin(&td.trace, NULL);
	if (c->m->tm != NULL) {
		struct tm_note n = { .trace = td.trace };
		snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(c->m->tm));
		tm_note_format(&n, note);
	}
	const struct dw_refusal rf = { "enforcement", "enforcement:reach-floor", reason, NULL,
				       c->m->tm ? note : NULL };
	if (fs_request(c, a, spelled) == 0)
		(void)dw_refuse(c->m->mon, c->req, 0, &rf, err, sizeof(err));
	record(c, &td, NULL);
	if (!a->quiet) {
		char text[PATH_MAX * 2 + 400];
		snprintf(text, sizeof(text), "refused this operation on '%s': %s", spelled, why);
		med_tell(c, spelled, text);
	}
}

/* ---- launches ------------------------------------------------------------------ */

/* A word as a POSIX shell reads it back: bare when it needs no quoting,
 * else single-quoted ('\'' for a quote). */
static size_t quote_word(char *o, size_t room, const char *w)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789_@%+=:,./-";
	size_t n = 0, wl = strlen(w);
	bool bare = wl > 0 && strspn(w, safe) == wl;
#define PUT(ch) do { if (n + 1 < room) o[n] = (ch); n++; } while (0)
	if (bare) {
		for (size_t i = 0; i < wl; i++)
			PUT(w[i]);
	} else {
		PUT('\'');
		for (size_t i = 0; i < wl; i++) {
			if (w[i] == '\'') {
				PUT('\''); PUT('\\'); PUT('\''); PUT('\'');
			} else {
				PUT(w[i]);
			}
		}
		PUT('\'');
	}
#undef PUT
	return n;
}

size_t med_command_text(const char *const *argv, size_t argc, char *out, size_t len)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < argc && n + 1 < len; i++) {
		if (i > 0)
			out[n++] = ' ';
		size_t k = quote_word(out + n, len - n, argv[i]);
		if (n + k >= len) {
			n = len - 1;
			break;
		}
		n += k;
	}
	out[n < len ? n : len - 1] = '\0';
	return n < len ? n : len - 1;
}

/* The shell:exec request for a in c->req: command and cwd spelled. */
static int exec_request(struct med_call *c, const struct med_exec_ask *a, const char *command,
			const char *cwd)
{
	char err[160];
	struct dw_input_attr in[6];
	size_t n = 0;
	if (a->argc > 1)
		in[n++] = (struct dw_input_attr){ .name = "arg1", .kind = DW_ATTR_STRING,
					    .s = a->argv[1], .len = strlen(a->argv[1]) };
	if (a->argc > 2)
		in[n++] = (struct dw_input_attr){ .name = "arg2", .kind = DW_ATTR_STRING,
					    .s = a->argv[2], .len = strlen(a->argv[2]) };
	in[n++] = (struct dw_input_attr){ .name = "arg_count", .kind = DW_ATTR_LONG,
				    .i = a->argc > 0 ? (int64_t)a->argc - 1 : 0 };
	in[n++] = (struct dw_input_attr){ .name = "command", .kind = DW_ATTR_STRING, .s = command,
				    .len = strlen(command) };
	in[n++] = (struct dw_input_attr){ .name = "cwd", .kind = DW_ATTR_STRING, .s = cwd,
				    .len = strlen(cwd) };
	in[n++] = (struct dw_input_attr){ .name = "program", .kind = DW_ATTR_STRING, .s = a->program,
				    .len = strlen(a->program) };
	int rc = request_base(c->req, "shell:exec");
	if (rc == 0)
		rc = dw_request_set_input(c->req, in, n, err, sizeof(err));
	if (rc == 0)
		rc = dw_request_set_subject(c->req, command);
	return rc;
}

int med_exec_decide(struct med_call *c, const struct med_exec_ask *a, uint64_t *ticket)
{
	char command[COMMAND_MAX], cwd[PATH_MAX + 2];
	med_command_text(a->argv, a->argc, command, sizeof(command));
	med_view_spell(&c->m->view, a->cwd, cwd, sizeof(cwd));
	int rc = exec_request(c, a, command, cwd);
	struct tm_decision td = { .subject = TM_SUBJECT_PROCESS, .program = a->program,
				  .n_args = a->argc > 0 ? a->argc - 1 : 0,
				  .args = a->argc > 0 ? a->argv + 1 : NULL, .cwd = cwd };
	note_begin(c, &td.trace);
	atomic_fetch_add(&c->m->st_execs, 1);
	return decide(c, rc, "shell:exec", command, &td, false, ticket);
}

void med_exec_floor(struct med_call *c, const struct med_exec_ask *a, const char *rule,
		    const char *why)
{
	char command[COMMAND_MAX], cwd[PATH_MAX + 2], err[160], note[TM_NOTE_MAX] = "";
	med_command_text(a->argv, a->argc, command, sizeof(command));
	med_view_spell(&c->m->view, a->cwd, cwd, sizeof(cwd));
	atomic_fetch_add(&c->m->st_floor, 1);
	struct tm_decision td = { .subject = TM_SUBJECT_PROCESS, .program = a->program,
				  .n_args = a->argc > 0 ? a->argc - 1 : 0,
				  .args = a->argc > 0 ? a->argv + 1 : NULL, .cwd = cwd,
				  .time_ns = now_ns(), .action = "shell:exec", .resource = command,
				  .cause = TM_ENFORCEMENT, .rule = rule, .reason = why };
	tm_trace_begin(&td.trace, NULL);
	if (c->m->tm != NULL) {
		struct tm_note n = { .trace = td.trace };
		snprintf(n.run, sizeof(n.run), "%s", tm_collector_run_id(c->m->tm));
		tm_note_format(&n, note);
	}
	const struct dw_refusal rf = { "enforcement", rule, why, NULL, c->m->tm ? note : NULL };
	if (exec_request(c, a, command, cwd) == 0)
		(void)dw_refuse(c->m->mon, c->req, 0, &rf, err, sizeof(err));
	record(c, &td, NULL);
	char text[COMMAND_MAX + 600];
	snprintf(text, sizeof(text), "refused this operation on '%s': %s", command, why);
	med_tell(c, command, text);
}

void med_exec_done(struct med *m, uint64_t ticket, int status)
{
	const struct dw_input_attr out = { .name = "status", .kind = DW_ATTR_LONG, .i = status };
	done(m, ticket, status < 0 ? NULL : &out, 1);
}

int med_sync(struct med_call *c)
{
	struct med *m = c->m;
	if (m->sync_each)
		return dw_sync(m->mon);
	/* the event is written (a killed supervisor loses nothing); the
	 * committer makes it durable within MED_COMMIT_LAG_NS */
	pthread_mutex_lock(&m->commit_lock);
	if (!m->commit_dirty) {
		m->commit_dirty = true;
		pthread_cond_signal(&m->commit_cond);
	}
	pthread_mutex_unlock(&m->commit_lock);
	return 0;
}

/* ---- the line a refused process reads --------------------------------------------- */

static uint64_t said_hash(pid_t pid, const char *resource)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)pid;
	for (const char *p = resource; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h | 1;
}

void med_tell(struct med_call *c, const char *resource, const char *text)
{
	struct med *m = c->m;
	uint64_t h = said_hash(c->pid, resource);
	pthread_mutex_lock(&m->said_lock);
	bool seen = false;
	for (size_t i = 0; i < MED_SAID && !seen; i++)
		seen = m->said[i] == h;
	if (!seen) {
		memmove(m->said + 1, m->said, (MED_SAID - 1) * sizeof(m->said[0]));
		m->said[0] = h;
	}
	pthread_mutex_unlock(&m->said_lock);
	if (seen)
		return;
	/* the process's own stderr, the open file itself (its offset, its
	 * O_APPEND), not a reopen by path */
	int pfd = med_pidfd(c);
	if (pfd < 0)
		return;
	int fd = (int)syscall(SYS_pidfd_getfd, pfd, 2, 0);
	close(pfd);
	if (fd < 0)
		return;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY) {
		char line[1400];
		int n = snprintf(line, sizeof(line), "cairn: %s\n", text);
		/* never block on a full pipe the process does not read: a line
		 * below PIPE_BUF fits whole once POLLOUT says a page is free */
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		if (n > 0 && poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT)) {
			ssize_t w = write(fd, line, (size_t)n < sizeof(line) ? (size_t)n
							       : sizeof(line) - 1);
			(void)w;
		}
	}
	close(fd);
}
