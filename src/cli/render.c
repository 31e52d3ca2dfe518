/* render.c - see render.h. */
#include "render.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Display width of a UTF-8 run, counting characters (tabs as one column: the
 * source line is printed with tabs expanded to one space). */
static void print_caret_line(FILE *f, int gutter, unsigned col, unsigned width)
{
	fprintf(f, "%*s | ", gutter, "");
	for (unsigned i = 1; i < col; i++)
		fputc(' ', f);
	if (width == 0)
		width = 1;
	for (unsigned i = 0; i < width; i++)
		fputc('^', f);
	fputc('\n', f);
}

static unsigned count_chars(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

void render_diags_human(FILE *f, const struct dw_diags *d)
{
	for (size_t i = 0; i < dw_diags_count(d); i++) {
		struct dw_diagnostic g;
		dw_diags_get(d, i, &g);
		fprintf(f, "%s: %s\n", g.severity == DW_DIAG_ERROR ? "error" : "warning", g.message);
		if (g.line == 0) {
			if (g.file && *g.file)
				fprintf(f, "  --> %s\n", g.file);
			continue;
		}
		fprintf(f, "  --> %s:%u:%u\n", g.file, g.line, g.col);
		if (g.line_text != NULL) {
			unsigned width, len = count_chars(g.line_text);
			char num[16];
			int gutter = snprintf(num, sizeof num, "%u", g.line);
			fprintf(f, "%*s |\n", gutter, "");
			fprintf(f, "%s | ", num);
			for (const char *p = g.line_text; *p; p++)
				fputc(*p == '\t' ? ' ' : *p, f);
			fputc('\n', f);
			if (g.end_line == g.line && g.end_col > g.col)
				width = g.end_col - g.col;
			else
				width = g.col <= len ? len - g.col + 1 : 1;
			print_caret_line(f, gutter, g.col, width);
		}
	}
}

/* A JSON string of s with invalid UTF-8 bytes replaced by U+FFFD (policy
 * text may hold any bytes; jansson accepts only valid UTF-8). */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	char *buf, *o;

	if (j != NULL || s == NULL)
		return j;
	buf = o = malloc(strlen(s) * 3 + 1);
	if (buf == NULL)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t len = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 :
			     (*p & 0xF8) == 0xF0 ? 4 : 0;
		size_t k = 1;
		while (len > 1 && k < len && (p[k] & 0xC0) == 0x80)
			k++;
		if (len == 0 || k != len) {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			p++;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	*o = '\0';
	j = json_string(buf);      /* still NULL for overlong forms: give up on the text */
	free(buf);
	return j ? j : json_string("(message is not valid UTF-8)");
}

json_t *render_diags_json(const struct dw_diags *d, int severity)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < dw_diags_count(d); i++) {
		struct dw_diagnostic g;
		json_t *o;
		dw_diags_get(d, i, &g);
		if (severity >= 0 && (int)g.severity != severity)
			continue;
		o = json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:I}",
			      "severity", g.severity == DW_DIAG_ERROR ? "error" : "warning",
			      "message", json_text(g.message), "file", json_text(g.file ? g.file : ""),
			      "line", (json_int_t)g.line, "column", (json_int_t)g.col,
			      "end_line", (json_int_t)g.end_line, "end_column", (json_int_t)g.end_col);
		if (o == NULL)
			continue;
		if (g.line_text)
			json_object_set_new(o, "source_line", json_text(g.line_text));
		if (g.rule >= 0)
			json_object_set_new(o, "rule", json_integer(g.rule));
		json_array_append_new(arr, o);
	}
	return arr;
}
