/* diag.h - diagnostics: located messages about a source text.
 *
 * Every parse or validation problem is one dw_diag: a severity, a byte span in a
 * named source, and a message.  Line and column are computed from the span when
 * the diagnostic is added, so a list outlives nothing but itself (it copies the
 * file name and message; it borrows the source text only while adding). */
#ifndef DW_DIAG_H
#define DW_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

enum dw_severity { DW_SEV_ERROR = 0, DW_SEV_WARNING = 1 };

struct dw_diag {
	enum dw_severity sev;
	const char *file;        /* copied; "" when the input had no name */
	uint32_t off, end;       /* byte span [off, end) in the source; end >= off */
	uint32_t line, col;      /* 1-based, of off; col counts characters (UTF-8) */
	uint32_t end_line, end_col;
	const char *msg;         /* copied */
	const char *line_text;   /* copy of the source line holding off (no newline) */
	uint32_t policy;         /* 1 + index of the rule concerned; 0 when none */
};

struct dw_diags {
	struct dw_diag *v;
	size_t n, cap;
	size_t n_errors;
	struct dw_arena arena;   /* owns file names, messages and line copies */
};

void dw_diags_init(struct dw_diags *d);
void dw_diags_fini(struct dw_diags *d);
/* Add a diagnostic about src[off, end) (src may be NULL: no position).  Returns 0,
 * or -ENOMEM (the list is unchanged). */
int dw_diags_add(struct dw_diags *d, enum dw_severity sev, const char *file,
		 const char *src, size_t srclen, size_t off, size_t end,
		 const char *fmt, ...) __attribute__((format(printf, 8, 9)));
int dw_diags_addv(struct dw_diags *d, enum dw_severity sev, const char *file,
		  const char *src, size_t srclen, size_t off, size_t end,
		  const char *fmt, va_list ap);
/* Mark the most recently added diagnostic as concerning rule index i. */
void dw_diags_set_policy(struct dw_diags *d, uint32_t i);
/* Append every diagnostic of src to dst (copies). */
int dw_diags_append(struct dw_diags *dst, const struct dw_diags *src);

#endif
