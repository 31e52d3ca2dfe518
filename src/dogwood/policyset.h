/* policyset.h - a parsed set of rules and macros from one or more sources.
 *
 * The set owns everything in its arena, including a copy of each source text
 * (diagnostics from later stages point into it).  Parsing appends; after the
 * last source, dw_policy_set_expand() expands macros and checks what needs the
 * whole set (unknown macros, duplicate definitions). */
#ifndef DW_POLICYSET_H
#define DW_POLICYSET_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "ast.h"
#include "diag.h"

enum dw_dialect {
	DW_DIALECT_CEDAR = 0,     /* .cedar: strict Cedar syntax, ids policy0, policy1, … */
	DW_DIALECT_DOGWOOD,       /* .dw: Dogwood (temporal, macros), ids policy_0, … */
};

struct dw_source {
	const char *file;
	const char *text;         /* NUL-terminated copy */
	size_t len;
	uint16_t index;
	bool is_library;          /* a macro library: its rules are ignored */
};

struct dw_policy_set {
	struct dw_arena arena;
	enum dw_dialect dialect;
	uint32_t n_policies, cap_policies;
	struct dw_policy **policies;
	uint32_t n_macros, cap_macros;
	struct dw_macro **macros;
	uint32_t n_sources, cap_sources;
	struct dw_source *sources;
	bool expanded;
};

struct dw_policy_set *dw_policy_set_new(enum dw_dialect dialect);   /* NULL on ENOMEM */
void dw_policy_set_free(struct dw_policy_set *ps);                   /* NULL is a no-op */

/* Parse src (copied) and append its rules and macro definitions.  Returns 0, or
 * -EINVAL with diagnostics (the set then holds none of this source's rules), or
 * -ENOMEM. */
int dw_parse_policies(struct dw_policy_set *ps, const char *file, const char *src, size_t len,
		      struct dw_diags *diags);
/* Add a macro library (Dogwood): its `def`s become library macros, overridden
 * by same-named definitions in policy sources; its rules are ignored. */
int dw_parse_macro_library(struct dw_policy_set *ps, const char *file, const char *src,
			   size_t len, struct dw_diags *diags);
/* The default Dogwood macro library text (count_within, sum_within, …). */
extern const char dw_default_macros[];

/* Expand macro calls everywhere, check definitions; 0 or -EINVAL (diags). */
int dw_policy_set_expand(struct dw_policy_set *ps, struct dw_diags *diags);

/* Diagnostic helper for later stages: add a diagnostic about a span of source i. */
int dw_policy_set_diag(const struct dw_policy_set *ps, struct dw_diags *diags,
		       enum dw_severity sev, uint16_t src_index, uint32_t off, uint32_t end,
		       const char *fmt, ...) __attribute__((format(printf, 7, 8)));

#endif
