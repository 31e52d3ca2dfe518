/* policyset.h - a parsed set of rules and macros from one or more sources.
 *
 * The set owns everything in its arena, including a copy of each source text
 * (diagnostics from later stages point into it).  Parsing appends; after the
 * last source, dw_policy_set_expand() (temporal/tmacro.h) expands macros and checks
 * what needs the whole set (unknown macros, duplicate definitions). */
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

/* Which body a temporal block is: a rule's `temporal { … }` or a `def temporal`. */
enum dw_temporal_mode {
	DW_TEMPORAL_CONDITION = 0,       /* `temporal { … }` in a rule */
	DW_TEMPORAL_MACRO_BODY,          /* `def temporal` body: aggregate or condition */
};

struct dw_temporal;

/* The parser of a temporal block's body.  The temporal language is the layer above
 * this one (docs/engine.md, "Layers"): the Cedar parser finds the block's braces and
 * hands its text to this function, which a Dogwood set carries
 * (dw_policy_set_new_temporal in temporal/temporal.h).  Contract as dw_temporal_parse. */
typedef int (*dw_temporal_parse_fn)(struct dw_arena *a, const char *file, const char *src,
				    size_t len, uint32_t off, uint32_t end, uint16_t src_index,
				    enum dw_temporal_mode mode, const struct dw_str *params,
				    uint32_t n_params, struct dw_temporal **out,
				    struct dw_diags *diags);

struct dw_policy_set {
	struct dw_arena arena;
	enum dw_dialect dialect;
	dw_temporal_parse_fn parse_temporal;   /* NULL: temporal blocks are refused */
	uint32_t n_policies, cap_policies;
	struct dw_policy **policies;
	uint32_t n_macros, cap_macros;
	struct dw_macro **macros;
	uint32_t n_sources, cap_sources;
	struct dw_source *sources;
	bool expanded;
};

/* A set without the temporal layer: Cedar, or Dogwood whose temporal blocks are
 * refused.  Dogwood sets come from dw_policy_set_new_temporal.  NULL on ENOMEM. */
struct dw_policy_set *dw_policy_set_new(enum dw_dialect dialect);
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
/* Diagnostic helper for later stages: add a diagnostic about a span of source i. */
int dw_policy_set_diag(const struct dw_policy_set *ps, struct dw_diags *diags,
		       enum dw_severity sev, uint16_t src_index, uint32_t off, uint32_t end,
		       const char *fmt, ...) __attribute__((format(printf, 7, 8)));

#endif
