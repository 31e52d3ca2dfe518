/* policy_engine.h - a Box-schema engine from one policy text, for the
 * gateway's unit tests (diagnostics printed when it will not load). */
#ifndef CAIRN_TEST_POLICY_ENGINE_H
#define CAIRN_TEST_POLICY_ENGINE_H

#include <stdio.h>
#include <string.h>

#include "dogwood.h"

/* The policy test_decide and test_link decide with: a permit per action, a
 * forbid on metadata addresses, a temporal cap of two GETs a minute. */
#define GW_TEST_POLICY \
	"@id(\"api\")\n" \
	"permit (principal, action == Box::Action::\"net:connect\", resource)\n" \
	"when { context.input.host == \"api.bound.test\" && context.input.port == 443 };\n" \
	"@id(\"get_only\")\n" \
	"permit (principal, action == Box::Action::\"http:request\", resource)\n" \
	"when { context.input.host == \"api.bound.test\" && context.input.method == \"GET\" };\n" \
	"@id(\"metadata_addresses\")\n" \
	"@description(\"No cloud metadata.\")\n" \
	"forbid (principal, action == Box::Action::\"net:connect\", resource)\n" \
	"when { context.input has ip && context.input.ip like \"169.254.*\" };\n" \
	"@id(\"three_gets\")\n" \
	"@description(\"At most two GETs a minute.\")\n" \
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n" \
	"when temporal { count_within(1m,\n" \
	"  Box::Action::\"http:request\"::response{ input.method: \"GET\" }) >= 2 };\n"

static inline struct dw_engine *policy_engine(const char *policy)
{
	struct dw_input in = { "gw.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg = { .policies = &in, .n_policies = 1,
					.flags = DW_VALIDATE | DW_BOX_RULES };
	struct dw_diags *d = dw_diags_new();
	struct dw_engine *eng = NULL;
	if (dw_engine_new(&cfg, &eng, d) != 0)
		for (size_t i = 0; i < dw_diags_count(d); i++) {
			struct dw_diagnostic g;
			dw_diags_get(d, i, &g);
			printf("policy: %u:%u: %s\n", g.line, g.col, g.message);
		}
	dw_diags_free(d);
	return eng;
}

#endif
