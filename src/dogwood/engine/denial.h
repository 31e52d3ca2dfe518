/* denial.h - the decision text as Box words it (crates/policy/src/decision/
 * message.rs in Box; docs/policy-reference.md §1 "Decision"):
 *   policy denied this operation on '<subject>' [policy: <id>]: <description>.
 *   policy denied this operation on '<subject>' [default-deny]: No permit policy matched this request.
 *   policy denied this operation on '<subject>' because the request could not be evaluated.
 *   policy permitted this operation on '<subject>'.
 * At most 4096 bytes (a cut text ends in "..."); the subject at most 1024
 * bytes of escaped text, quoted with Rust's debug escaping; ids and
 * descriptions with control and bidi characters escaped. */
#ifndef DW_DENIAL_H
#define DW_DENIAL_H

#include <stddef.h>

#include "dogwood.h"
#include "value.h"

/* Write the text into out (replacing its content).  rules are the
 * determining rules (used for DW_CAUSE_FORBIDDEN).  0 or -ENOMEM. */
int dw_denial_format(struct dw_buf *out, enum dw_cause cause, const char *subject,
		     const struct dw_rule_ref *rules, size_t n_rules);

#endif
