/* toml_dump.c - the TOML reader's side of the differential test (toml-diff.mjs).
 *
 *   toml-dump [FILE]   one document from FILE or stdin: its toml-test JSON on
 *                      stdout and exit 0, or `line:col: message` on stderr
 *                      and exit 1 (2 for I/O or memory trouble).
 *   toml-dump --batch  NUL-separated documents on stdin; one JSON line per
 *                      document on stdout: {"ok":true,"value":...} or
 *                      {"ok":false,"line":L,"col":C,"error":"..."}.  A process
 *                      per case is too slow for thousands of cases. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

/* All of f into a malloc'd buffer (*n bytes, NUL added); NULL on error. */
static char *read_all(FILE *f, size_t *n)
{
	size_t cap = 65536, len = 0, got;
	char *b = malloc(cap), *q;

	while (b != NULL && (got = fread(b + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (cap - len - 1 == 0) {
			if (cap > SIZE_MAX / 2 || (q = realloc(b, cap * 2)) == NULL) {
				free(b);
				return NULL;
			}
			b = q;
			cap *= 2;
		}
	}
	if (b == NULL || ferror(f)) {
		free(b);
		return NULL;
	}
	b[len] = '\0';
	*n = len;
	return b;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7F)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* One result line for doc[0, n). 0, or -ENOMEM. */
static int batch_one(const char *doc, size_t n)
{
	struct toml_error err;
	struct toml_doc *d;
	char *json;
	int rc = toml_parse(doc, n, &d, &err);

	if (rc < 0) {
		printf("{\"ok\":false,\"line\":%u,\"col\":%u,\"error\":", err.line, err.col);
		json_string(err.msg);
		printf("}\n");
		return rc == -ENOMEM ? rc : 0;
	}
	json = toml_to_test_json(toml_root(d));
	toml_free(d);
	if (json == NULL)
		return -ENOMEM;
	printf("{\"ok\":true,\"value\":%s}\n", json);
	free(json);
	return 0;
}

static int batch(void)
{
	size_t n, off = 0, end;
	char *all = read_all(stdin, &n);

	if (all == NULL) {
		fprintf(stderr, "toml-dump: cannot read stdin\n");
		return 2;
	}
	/* the text after the last NUL is a document too, unless it is empty */
	while (off < n) {
		const char *z = memchr(all + off, '\0', n - off);

		end = z != NULL ? (size_t)(z - all) : n;
		if (batch_one(all + off, end - off) < 0) {
			fprintf(stderr, "toml-dump: out of memory\n");
			free(all);
			return 2;
		}
		off = end + 1;
	}
	free(all);
	return fflush(stdout) == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
	struct toml_error err;
	struct toml_doc *d;
	FILE *f = stdin;
	size_t n;
	char *text, *json;
	int rc;

	if (argc == 2 && strcmp(argv[1], "--batch") == 0)
		return batch();
	if (argc > 2) {
		fprintf(stderr, "usage: toml-dump [FILE | --batch]\n");
		return 2;
	}
	if (argc == 2 && (f = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "toml-dump: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	text = read_all(f, &n);
	if (f != stdin)
		fclose(f);
	if (text == NULL) {
		fprintf(stderr, "toml-dump: cannot read input\n");
		return 2;
	}
	rc = toml_parse(text, n, &d, &err);
	free(text);
	if (rc < 0) {
		fprintf(stderr, "%u:%u: %s\n", err.line, err.col, err.msg);
		return rc == -ENOMEM ? 2 : 1;
	}
	json = toml_to_test_json(toml_root(d));
	toml_free(d);
	if (json == NULL) {
		fprintf(stderr, "toml-dump: out of memory\n");
		return 2;
	}
	puts(json);
	free(json);
	return 0;
}
