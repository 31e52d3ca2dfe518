/* store.h - the entity store: entities, their attributes, tags and ancestors.
 *
 * Loaded once (from Cedar's JSON entity format, optionally checked against a
 * schema, which also contributes its action entities and groups), then
 * read-only: lookups are lock-free and the store may be shared by threads.
 * `in` is answered from ancestor sets computed at load (transitive closure;
 * cycles are refused), so it never walks the hierarchy at decision time. */
#ifndef DW_STORE_H
#define DW_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "value.h"

struct dw_schema;

struct dw_entity {
	struct dw_uid uid;
	const struct dw_rec *attrs;         /* never NULL */
	const struct dw_rec *tags;          /* never NULL (empty when none) */
	uint32_t n_parents;
	const struct dw_uid **parents;      /* direct parents */
	uint32_t n_ancestors;
	const struct dw_uid **ancestors;    /* transitive, sorted by hash then bytes */
};

struct dw_store;

/* Empty store; NULL on ENOMEM. */
struct dw_store *dw_store_new(void);
void dw_store_free(struct dw_store *st);             /* NULL is a no-op */

/* Parse a JSON array of entities (Cedar's format, docs/formats.md §1) and add
 * them.  With a schema (may be NULL) values are parsed schema-based (implicit
 * entity and extension forms) and checked for conformance.  On error returns
 * -EINVAL with a diagnostic naming the entity and attribute, and the store is
 * unchanged.  May be called several times before dw_store_finish. */
int dw_store_add_json(struct dw_store *st, const struct dw_schema *schema, const char *file,
		      const char *src, size_t len, struct dw_diags *diags);
/* Add the schema's action entities (with their groups as parents), compute the
 * transitive closure, refuse cycles.  0 or -EINVAL (diags).  Required once
 * before lookups; afterwards the store is read-only. */
int dw_store_finish(struct dw_store *st, const struct dw_schema *schema, struct dw_diags *diags);

/* NULL when the entity does not exist. */
const struct dw_entity *dw_store_get(const struct dw_store *st, const struct dw_uid *uid);
/* Cedar `a in b` for entities: a == b, or b is an ancestor of a. */
bool dw_store_in(const struct dw_store *st, const struct dw_uid *a, const struct dw_uid *b);
size_t dw_store_count(const struct dw_store *st);
/* The i-th entity (0 <= i < count), in insertion order. */
const struct dw_entity *dw_store_at(const struct dw_store *st, size_t i);

#endif
