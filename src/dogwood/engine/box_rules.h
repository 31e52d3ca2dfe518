/* box_rules.h - the load rules Box adds on top of Cedar validation
 * (docs/policy-reference.md §1 "Loading", §5): an unknown action, @ids
 * shared by rules (all of them in one refusal), rules naming only the reserved
 * `fs:other` (one refusal), inert literals (an absolute home path or a
 * trailing slash compared with a path), and a temporal permit beside a permit
 * whose scope covers it with no condition (one refusal; warned beside a
 * conditioned or resource-narrowed one) refuse the policy.  Diagnostics carry
 * Box's wording and rule numbers. */
#ifndef DW_BOX_RULES_H
#define DW_BOX_RULES_H

#include "diag.h"
#include "policyset.h"
#include "schema.h"

/* The Box action vocabulary, compiled into the binary (schema_box.c, generated from
 * box-actions.cedarschema beside it): add it to s as a fragment. */
int dw_schema_add_box(struct dw_schema *s, struct dw_diags *diags);
extern const char dw_box_schema_text[];

/* 0, or -EINVAL with diagnostics (each marked with its rule). */
int dw_box_rules_check(const struct dw_policy_set *ps, const struct dw_schema *schema,
		       const char *home, struct dw_diags *diags);

/* "the permit rule with no @id (rule 1)" / "rule `x` (rule 3)": how Box names a
 * rule in messages; written into buf. */
void dw_box_rule_name(const struct dw_policy *pol, char *buf, size_t len);

#endif
