/* cause_dw.h - a decision record's cause for an engine decision, for the
 * enforcement points that ask libdogwood (the mediator, the broker, the
 * gateway's decider): docs/records.md "Causes". */
#ifndef CAIRN_TM_CAUSE_DW_H
#define CAIRN_TM_CAUSE_DW_H

#include <stdio.h>

#include "collector.h"
#include "dogwood.h"
#include "record.h"

#define TM_DW_RULES_MAX 16

static inline enum tm_cause tm_cause_of_dw(enum dw_cause c)
{
	switch (c) {
	case DW_CAUSE_PERMITTED: return TM_PERMITTED;
	case DW_CAUSE_FORBIDDEN: return TM_FORBIDDEN;
	case DW_CAUSE_NO_MATCH: return TM_NO_MATCH;
	case DW_CAUSE_INTERNAL_FAULT: break;
	}
	return TM_INTERNAL_FAULT;
}

/* td's verdict, cause, rule and reason for the engine's decision d; rc is
 * what dw_decide returned (non-zero: the request could not be decided, an
 * internal fault).  True when it is a permit. */
static inline bool tm_decision_of_dw(struct tm_decision *td, int rc, const struct dw_decision *d)
{
	bool allow = rc == 0 && d->verdict == DW_ALLOW;
	td->permit = allow;
	td->cause = allow ? TM_PERMITTED : rc != 0 ? TM_INTERNAL_FAULT : tm_cause_of_dw(d->cause);
	td->rule = "<default-deny>";
	if (!allow) {
		td->reason = tm_cause_reason(td->cause);
		if (td->cause == TM_INTERNAL_FAULT && d->n_reasons == 0)
			td->rule = "<internal-fault>";
	}
	return allow;
}

/* Emit td to tm (NULL: not recorded) with d's determining rules (d NULL:
 * none, a refusal of the enforcement point's own). */
static inline void tm_emit_dw(struct tm_collector *tm, struct tm_decision *td,
			      const struct dw_decision *d)
{
	struct tm_rule rules[TM_DW_RULES_MAX];
	if (tm == NULL)
		return;
	for (size_t i = 0; d != NULL && i < d->n_reasons && i < TM_DW_RULES_MAX; i++)
		rules[td->n_rules++] = (struct tm_rule){ d->reasons[i].id, d->reasons[i].description };
	td->rules = rules;
	tm_emit(tm, tm_record_decision(td));
}

/* The denial's text for the workload: the engine's, or Box's words for a
 * request that could not be evaluated. */
static inline void tm_dw_denial_text(const struct dw_decision *d, const char *resource,
				     char *out, size_t len)
{
	if (d->text != NULL)
		snprintf(out, len, "%s", d->text);
	else
		snprintf(out, len, "policy denied this operation on '%s' [internal-fault]: the "
			 "request could not be evaluated", resource);
}

#endif
