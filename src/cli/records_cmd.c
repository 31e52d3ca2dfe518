/* records_cmd.c - `cairn records show BOX_DIR [--json] [--follow]`.
 *
 * Prints the box's decision records (docs/records.md "Reading records"):
 * each decision in the one-line form `cairn run --decisions` uses, each
 * control record as `cairn: control  <operation>  <subject>  [<outcome>]`,
 * oldest first; --json prints the file's lines as they are; --follow waits
 * for more, as `tail -f` does.  BOX_DIR may also be a records file.
 * Then the decisions the file lacks (a supervisor killed before its writer
 * ran, a file removed) are rebuilt from the box's history, where each
 * decision was stored with its record's ids (docs/records.md "Rebuilt from
 * the history"), and shown after the file's, marked so.  Reading takes no
 * lock and changes nothing.  Exit 0; 2 when a line is not a records line
 * (file:line says which) or the history is damaged; 1 on usage or I/O
 * errors. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dogwood.h"
#include "live.h"
#include "note.h"
#include "otlp.h"
#include "resource.h"

#define LINE_MAX_ (64u << 20)           /* one export request */
#define FOLLOW_MS 200

static void records_usage(FILE *f)
{
	fputs("usage: cairn records show BOX_DIR [--json] [--follow]\n"
	      "  print the box's decision records (BOX_DIR/private/telemetry/records.jsonl,\n"
	      "  or a records file): one line per decision, --json for the raw lines,\n"
	      "  --follow to wait for more\n", f);
}

static const char *attr_str(json_t *attrs, const char *key)
{
	size_t i;
	json_t *a;
	json_array_foreach(attrs, i, a) {
		const char *k = json_string_value(json_object_get(a, "key"));
		if (k != NULL && strcmp(k, key) == 0)
			return json_string_value(json_object_get(json_object_get(a, "value"),
								 "stringValue"));
	}
	return NULL;
}

/* The span ids of the decision records the file holds, to know which the
 * history must rebuild. */
struct seen {
	uint64_t *ids;
	size_t n, cap;
};

static void seen_add(struct seen *s, const char *hex)
{
	uint64_t v = 0;
	if (hex == NULL || strlen(hex) != 16)
		return;
	for (int i = 0; i < 16; i++) {
		char c = hex[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return;
		v = v << 4 | (uint64_t)d;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint64_t *p = realloc(s->ids, cap * sizeof(*p));
		if (p == NULL)
			return;         /* a record then shows twice, never goes missing */
		s->ids = p;
		s->cap = cap;
	}
	s->ids[s->n++] = v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool seen_has(const struct seen *s, const uint8_t id[8])
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | id[i];
	return s->n > 0 && bsearch(&v, s->ids, s->n, sizeof(v), cmp_u64) != NULL;
}

/* One line of the file: a logs request is shown record by record, a spans
 * request (each decision's derived span) not at all.  0, or -1 when it is
 * not a records line. */
static int show_line(const char *line, size_t len, const char *file, size_t lineno, bool print,
		     struct seen *seen)
{
	json_error_t je;
	json_t *j = json_loadb(line, len, 0, &je);
	json_t *rl = j ? json_object_get(j, "resourceLogs") : NULL;
	if (j == NULL || !json_is_object(j) ||
	    (rl == NULL && json_object_get(j, "resourceSpans") == NULL &&
	     json_object_get(j, "resourceMetrics") == NULL)) {
		fprintf(stderr, "cairn: error: %s:%zu: not a records line%s%s\n", file, lineno,
			j ? "" : ": ", j ? "" : je.text);
		json_decref(j);
		return -1;
	}
	size_t i, k, m;
	json_t *r, *sl, *lr;
	json_array_foreach(rl, i, r) json_array_foreach(json_object_get(r, "scopeLogs"), k, sl) {
		const char *scope = json_string_value(json_object_get(json_object_get(sl, "scope"),
								      "name"));
		bool policy = scope && strcmp(scope, "strands-box.policy") == 0;
		bool control = scope && strcmp(scope, "strands-box.control") == 0;
		if (!policy && !control)
			continue;       /* relayed agent logs: --json shows them */
		json_array_foreach(json_object_get(sl, "logRecords"), m, lr) {
			json_t *attrs = json_object_get(lr, "attributes");
			char out[8192];
			if (policy)
				seen_add(seen, json_string_value(json_object_get(lr, "spanId")));
			if (!print)
				continue;
			if (policy)
				tm_live_format(out, sizeof(out),
					       attr_str(attrs, "strands.box.policy.verdict"),
					       attr_str(attrs, "strands.box.policy.action"),
					       attr_str(attrs, "strands.box.policy.resource"),
					       attr_str(attrs, "strands.box.policy.rule"));
			else
				tm_live_format(out, sizeof(out), "control",
					       attr_str(attrs, "strands.box.control.operation"),
					       attr_str(attrs, "strands.box.control.subject"),
					       attr_str(attrs, "strands.box.control.outcome"));
			fputs(out, stdout);
		}
	}
	json_decref(j);
	return 0;
}

static char *records_path(const char *arg)
{
	struct stat st;
	char *p = NULL;
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode))
		return strdup(arg);
	if (asprintf(&p, "%s/private/telemetry/records.jsonl", arg) < 0)
		return NULL;
	return p;
}

static int show(const char *path, bool json, bool follow, struct seen *seen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !follow)
		return EXIT_OK;         /* no file: the history has every record */
	if (fd < 0) {
		fprintf(stderr, "cairn: error: cannot read %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	size_t cap = 1 << 16, n = 0, lineno = 0;
	char *buf = malloc(cap);
	int rc = EXIT_OK;
	for (;;) {
		if (buf == NULL) {
			fprintf(stderr, "cairn: error: out of memory\n");
			rc = EXIT_USAGE;
			break;
		}
		if (n == cap) {
			if (cap >= LINE_MAX_) {
				fprintf(stderr, "cairn: error: %s:%zu: a line longer than 64 MiB\n",
					path, lineno + 1);
				rc = EXIT_REJECTED;
				break;
			}
			char *b = realloc(buf, cap * 2);
			if (b == NULL) {
				free(buf);
				buf = NULL;
				continue;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fprintf(stderr, "cairn: error: cannot read %s: %s\n", path, strerror(errno));
			rc = EXIT_USAGE;
			break;
		}
		if (k == 0) {
			if (!follow)
				break;
			fflush(stdout);
			poll(NULL, 0, FOLLOW_MS);
			continue;
		}
		n += (size_t)k;
		/* every complete line; a partial last one waits for its end */
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n', n - (size_t)(start - buf))) != NULL) {
			lineno++;
			if (json)
				fwrite(start, 1, (size_t)(nl - start) + 1, stdout);
			if (show_line(start, (size_t)(nl - start), path, lineno, !json, seen) != 0)
				rc = EXIT_REJECTED;
			start = nl + 1;
		}
		n -= (size_t)(start - buf);
		memmove(buf, start, n);
		if (rc == EXIT_REJECTED)
			break;
	}
	if (rc == EXIT_OK && n > 0 && !follow) {
		/* a last line without its newline: a write cut short */
		fprintf(stderr, "cairn: warning: %s:%zu: the last line is incomplete (a write was "
			"cut short); it is not shown\n", path, lineno + 1);
	}
	free(buf);
	close(fd);
	fflush(stdout);
	return rc;
}

/* ---- rebuilt from the history ---------------------------------------------- */

struct rebuild {
	const struct seen *seen;
	const char *box_id;
	bool json;
	uint64_t rebuilt;
	int error;
};

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static enum tm_cause cause_of(const char *c)
{
	return strcmp(c, "permitted") == 0 ? TM_PERMITTED : strcmp(c, "forbidden") == 0 ? TM_FORBIDDEN
	       : strcmp(c, "no_match") == 0 ? TM_NO_MATCH : strcmp(c, "enforcement") == 0
	       ? TM_ENFORCEMENT : TM_INTERNAL_FAULT;
}

/* Split a command the mediator joined (bare words, or single-quoted with
 * '\'' for a quote) into words in buf: their number. */
static size_t split_command(const char *c, char *buf, size_t len, const char **v, size_t max)
{
	size_t n = 0, o = 0;
	while (*c && n < max && o + 1 < len) {
		while (*c == ' ')
			c++;
		if (!*c)
			break;
		v[n++] = buf + o;
		while (*c && *c != ' ' && o + 1 < len) {
			if (*c == '\'') {
				for (c++; *c && *c != '\'' && o + 1 < len; c++)
					buf[o++] = *c;
				if (*c == '\'')
					c++;
			} else if (*c == '\\' && c[1]) {
				buf[o++] = c[1];
				c += 2;
			} else {
				buf[o++] = *c++;
			}
		}
		buf[o++] = '\0';
	}
	return n;
}

/* One stored decision (a request's decision, or a gateway refusal) whose
 * record the file lacks: the record, as the gateway made it, with its ids. */
static int rebuild_one(void *arg, const struct dw_history_event *ev)
{
	struct rebuild *rb = arg;
	bool request = strcmp(ev->kind, "request") == 0, refusal = strcmp(ev->kind, "refusal") == 0;
	if (!request && !refusal)
		return 0;
	bool fs = strncmp(ev->action, "fs:", 3) == 0, exec = strcmp(ev->action, "shell:exec") == 0;
	if (strcmp(ev->action, "net:connect") != 0 && strcmp(ev->action, "http:request") != 0 &&
	    !fs && !exec)
		return 0;               /* the gateway's and the mediator's */
	json_t *j = json_loads(ev->json, 0, NULL);
	json_t *dec = json_object_get(j, "decision"), *logged = json_object_get(j, "logged");
	json_t *in = json_object_get(logged, "input");
	const char *note = request ? jstr(dec, "note") : jstr(j, "note");
	struct tm_note n;
	if (j == NULL || note == NULL || tm_note_parse(note, &n) != 0 ||
	    seen_has(rb->seen, n.trace.span_id)) {
		json_decref(j);
		return 0;
	}
	bool http = strcmp(ev->action, "http:request") == 0;
	const char *verdict = request ? jstr(dec, "verdict") : "deny";
	const char *cause = request ? jstr(dec, "cause") : jstr(logged, "cause");
	const char *host = jstr(in, "host"), *path = jstr(in, "path");
	const char *command = jstr(in, "command");
	json_int_t port = json_integer_value(json_object_get(in, "port"));
	if (verdict == NULL || cause == NULL || (!fs && !exec && host == NULL) ||
	    ((http || fs) && path == NULL) || (exec && command == NULL) ||
	    (request && strcmp(verdict, "permit") == 0 && n.deny_only) ||
	    (refusal && strcmp(cause, "enforcement") != 0)) {
		json_decref(j);
		return 0;               /* no record was made of it */
	}
	char resource[8192];
	if (fs)
		snprintf(resource, sizeof(resource), "%s", path);
	else if (exec)
		snprintf(resource, sizeof(resource), "%s", command);
	else if (http)
		snprintf(resource, sizeof(resource), "%s:%lld%s", host, (long long)port, path);
	else
		snprintf(resource, sizeof(resource), "%s:%lld", host, (long long)port);
	/* a launch's arguments, read back from its command (the mediator
	 * quotes each word as a POSIX shell reads it) */
	char words[8192];
	const char *args[256];
	size_t n_args = exec ? split_command(command, words, sizeof(words), args, 256) : 0;
	struct tm_rule rules[16];
	size_t nr = 0, i;
	json_t *id;
	json_array_foreach(json_object_get(dec, "ids"), i, id)
		if (nr < 16 && json_is_string(id)) {
			rules[nr] = (struct tm_rule){ json_string_value(id),
						      nr == 0 ? jstr(dec, "description") : NULL };
			nr++;
		}
	bool permit = strcmp(verdict, "permit") == 0;
	struct tm_decision d = {
		.time_ns = ev->ts, .action = ev->action, .resource = resource, .permit = permit,
		.cause = cause_of(cause),
		.reason = permit ? NULL : refusal ? jstr(logged, "reason") : tm_cause_reason(cause_of(cause)),
		.rule = refusal ? jstr(logged, "rule") : "<default-deny>",
		.n_rules = nr, .rules = rules, .subject = TM_SUBJECT_DEST, .address = host,
		.port = (unsigned)port, .method = http ? jstr(in, "method") : NULL,
		.request_id = n.rid[0] ? n.rid : NULL, .trace = n.trace,
	};
	if (fs) {
		d.subject = TM_SUBJECT_FILE;
		d.path = path;
		d.address = NULL;
		d.port = 0;
	} else if (exec) {
		d.subject = TM_SUBJECT_PROCESS;
		d.address = NULL;
		d.port = 0;
		d.program = jstr(in, "program");
		d.n_args = n_args > 0 ? n_args - 1 : 0;
		d.args = n_args > 0 ? args + 1 : NULL;
		d.cwd = jstr(in, "cwd");
	}
	struct tm_rec *r = tm_record_decision(&d);
	struct tm_res res;
	char why[256];
	if (r == NULL || tm_res_build(&res, NULL, rb->box_id, "box", n.run, why, sizeof(why)) != 0) {
		free(r);
		json_decref(j);
		rb->error = -ENOMEM;
		return 1;
	}
	r->observed_ns = ev->ts;
	if (rb->json) {
		struct tm_buf b = { 0 };
		struct tm_rec *v[1] = { r };
		tm_json_batch(&b, &res.r, v, 1);
		fwrite(b.p, 1, b.n, stdout);
		tm_buf_free(&b);
	} else {
		char out[8192];
		size_t k = tm_live_format(out, sizeof(out), r->text, r->action, r->resource, r->rule);
		out[k - 1] = '\0';
		printf("%s  (rebuilt from the history)\n", out);
	}
	rb->rebuilt++;
	tm_res_free(&res);
	free(r);
	json_decref(j);
	return 0;
}

static int rebuild(const char *box, const struct seen *seen, bool json)
{
	char hdir[4096], idpath[4096], id[32] = "box-unknown";
	struct stat st;
	snprintf(hdir, sizeof(hdir), "%s/private/history", box);
	snprintf(idpath, sizeof(idpath), "%s/private/box-id", box);
	if (stat(hdir, &st) != 0 || !S_ISDIR(st.st_mode))
		return EXIT_OK;         /* a records file alone, or a box that never decided */
	FILE *f = fopen(idpath, "r");
	if (f != NULL) {
		if (fgets(id, sizeof(id), f) != NULL)
			id[strcspn(id, "\n")] = '\0';
		fclose(f);
	}
	struct rebuild rb = { .seen = seen, .box_id = id, .json = json };
	char err[512];
	fflush(stdout);
	int r = dw_history_read(hdir, rebuild_one, &rb, err, sizeof(err));
	fflush(stdout);
	if (rb.rebuilt > 0)
		fprintf(stderr, "cairn: %llu decision records were not in the records file; rebuilt "
			"from the history\n", (unsigned long long)rb.rebuilt);
	if (rb.error != 0) {
		fprintf(stderr, "cairn: error: out of memory\n");
		return EXIT_USAGE;
	}
	if (r == -EBADMSG) {
		fprintf(stderr, "cairn: error: the box's history is damaged: %s\n", err);
		return EXIT_REJECTED;
	}
	if (r == -EUCLEAN)
		fprintf(stderr, "cairn: warning: the box's history ends in a torn record: %s\n", err);
	return EXIT_OK;
}

int cmd_records(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		records_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(argv[1], "show") != 0) {
		fprintf(stderr, "cairn: error: unknown records command `%s`\n", argv[1]);
		records_usage(stderr);
		return EXIT_USAGE;
	}
	const char *box = NULL;
	bool json = false, follow = false;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--follow") == 0 || strcmp(argv[i], "-f") == 0)
			follow = true;
		else if (argv[i][0] == '-' || box != NULL) {
			fprintf(stderr, "cairn: error: unexpected argument '%s'\n", argv[i]);
			records_usage(stderr);
			return EXIT_USAGE;
		} else
			box = argv[i];
	}
	if (box == NULL) {
		records_usage(stderr);
		return EXIT_USAGE;
	}
	char *path = records_path(box);
	if (path == NULL)
		return EXIT_USAGE;
	struct seen seen = { 0 };
	int rc = show(path, json, follow, &seen);
	struct stat st;
	/* a box directory (not a records file named alone) has a history */
	if (rc == EXIT_OK && !follow && stat(box, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (seen.n > 0)
			qsort(seen.ids, seen.n, sizeof(*seen.ids), cmp_u64);
		rc = rebuild(box, &seen, json);
	}
	free(seen.ids);
	free(path);
	return rc;
}
