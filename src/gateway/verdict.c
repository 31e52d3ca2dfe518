/* verdict.c - a verdict's storage, its cause and rule, and Box's 403 body
 * (decide.h): what the gateway process needs of a decision, without the
 * engine. */
#include <stdlib.h>
#include <string.h>

#include "decide.h"

#define DENIAL_MAX 8192

void gw_verdict_clear(struct gw_verdict *v)
{
	free(v->rule);
	free(v->text);
	v->rule = v->text = NULL;
}

/* dw_cause_name's words; tests/unit/gateway/test_decide.c holds the two to
 * each other. */
const char *gw_verdict_cause(const struct gw_verdict *v)
{
	switch (v->cause) {
	case DW_CAUSE_PERMITTED: return "permitted";
	case DW_CAUSE_FORBIDDEN: return "forbidden";
	case DW_CAUSE_NO_MATCH: return "no_match";
	case DW_CAUSE_INTERNAL_FAULT: break;
	}
	return "internal_fault";
}

const char *gw_verdict_rule(const struct gw_verdict *v)
{
	if (v->rule != NULL && v->rule[0] != '\0')
		return v->rule;
	return v->cause == DW_CAUSE_INTERNAL_FAULT ? "<internal-fault>" : "<default-deny>";
}

size_t gw_denial_body(const struct gw_verdict *v, bool http, char *buf, size_t len)
{
	const char *text = v->text ? v->text : "policy denied this operation";
	size_t n = 0, max = len ? len - 1 : 0;
	if (max > DENIAL_MAX)
		max = DENIAL_MAX;
	const char *prefix = http ? "http:request gate: " : "";
	for (const char *p = prefix; *p && n < max; p++)
		buf[n++] = *p;
	/* The engine's text is already escaped (Box's debug quoting); only
	 * refuse raw control characters a header-less body could still carry. */
	for (const unsigned char *p = (const unsigned char *)text; *p && n < max; p++)
		buf[n++] = (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p;
	if (len)
		buf[n] = '\0';
	return n;
}
