/* records_cmd.c - `cairn records show BOX_DIR [--json] [--follow]`.
 *
 * Prints the box's decision records (docs/records.md "Reading records"):
 * each decision in the one-line form `cairn run --decisions` uses, each
 * control record as `cairn: control  <operation>  <subject>  [<outcome>]`,
 * oldest first; --json prints the file's lines as they are; --follow waits
 * for more, as `tail -f` does.  BOX_DIR may also be a records file.
 * Reading takes no lock and changes nothing.  Exit 0; 2 when a line is not
 * a records line (file:line says which); 1 on usage or I/O errors. */
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
#include "live.h"

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

/* One line of the file: a logs request is shown record by record, a spans
 * request (each decision's derived span) not at all.  0, or -1 when it is
 * not a records line. */
static int show_line(const char *line, size_t len, const char *file, size_t lineno)
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

static int show(const char *path, bool json, bool follow)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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
			else if (show_line(start, (size_t)(nl - start), path, lineno) != 0)
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
	int rc = show(path, json, follow);
	free(path);
	return rc;
}
