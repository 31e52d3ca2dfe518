/* cause_dw.h - a decision record's cause for an engine decision, for the
 * enforcement points that ask libdogwood (the mediator, the broker, the
 * gateway's decider): docs/records.md "Causes". */
#ifndef CAIRN_TM_CAUSE_DW_H
#define CAIRN_TM_CAUSE_DW_H

#include "dogwood.h"
#include "record.h"

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

#endif
