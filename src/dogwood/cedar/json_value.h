/* json_value.h - Cedar values, UIDs and contexts from JSON (jansson trees).
 *
 * Cedar's JSON value encoding (docs/formats.md §1): bool, integer (i64), string,
 * array (set), object (record), `{"__entity": {"type","id"}}`, `{"__extn":
 * {"fn", "arg"}}` or `{"__extn": {"fn", "args": [..]}}`.  With an expected type
 * (from a schema) the implicit forms are accepted too: an entity-typed value as
 * a bare `{"type","id"}`, an extension-typed value as a bare string or
 * `{"fn","arg"}`; and the value is checked against the type (required and
 * undeclared attributes, element types, enum ids).
 *
 * All functions allocate only in the given arena; on error they return -EINVAL
 * and write one message (naming `where`, e.g. "entity User::\"alice\", attribute
 * `age`") into err, and allocated memory stays in the arena (drop it with a
 * mark/reset if needed).  -ENOMEM on allocation failure. */
#ifndef DW_JSON_VALUE_H
#define DW_JSON_VALUE_H

#include <jansson.h>
#include <stddef.h>

#include "arena.h"
#include "value.h"

struct dw_schema;
struct dw_type;
struct dw_action;

/* expected may be NULL (no schema information). */
int dw_json_value(struct dw_arena *a, const struct dw_schema *schema,
		  const struct dw_type *expected, json_t *j, const char *where,
		  struct dw_val *out, char *err, size_t errlen);

/* An entity UID: `{"type","id"}`, `{"__entity": {"type","id"}}`, or a string
 * in Cedar syntax `Type::"id"` (as the Cedar CLI's request files use). */
int dw_json_uid(struct dw_arena *a, json_t *j, const char *where, const struct dw_uid **out,
		char *err, size_t errlen);

/* A request context: a JSON object (NULL or json null means {}), parsed against
 * the action's declared context type when action != NULL. */
int dw_json_context(struct dw_arena *a, const struct dw_schema *schema,
		    const struct dw_action *action, json_t *j, const struct dw_rec **out,
		    char *err, size_t errlen);

/* The same, but the context is taken as given, as Dogwood's replay takes a
 * trace's request_context: a declared attribute is read as its declared type
 * when it reads as one (a decimal's text as a decimal), anything else as
 * written, and a required one may be missing (a rule that reads it then
 * errors, as Cedar says). */
int dw_json_context_as_given(struct dw_arena *a, const struct dw_action *action, json_t *j,
			     const struct dw_rec **out, char *err, size_t errlen);

/* Cedar request validation against a schema: the action is declared, principal
 * and resource types are in its appliesTo lists (enum ids declared), and the
 * context conforms to the action's context type.  0 or -EINVAL with err. */
int dw_request_check(const struct dw_schema *schema, const struct dw_uid *principal,
		     const struct dw_uid *action, const struct dw_uid *resource,
		     const struct dw_rec *context, char *err, size_t errlen);

/* Value → JSON (Cedar's explicit encoding: __entity, __extn); NULL on ENOMEM. */
json_t *dw_value_to_json(struct dw_val v);

#endif
