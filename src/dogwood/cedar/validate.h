/* validate.h - Cedar's strict validator (type checking policies against a
 * schema; docs/formats.md §1), applied to Cedar and Dogwood policy sets.
 *
 * Every policy is checked in every request environment its scope allows
 * (principal type, action, resource type triples from the actions' appliesTo).
 * Temporal leaves are Booleans.  Errors and warnings go to diags, each marked
 * with its rule (dw_diags_set_policy) and located at the offending expression.
 * Returns 0 when there is no error, -EINVAL when there is one, -ENOMEM. */
#ifndef DW_VALIDATE_H
#define DW_VALIDATE_H

#include "diag.h"
#include "policyset.h"
#include "schema.h"

int dw_validate(const struct dw_policy_set *ps, const struct dw_schema *schema,
		struct dw_diags *diags);

#endif
