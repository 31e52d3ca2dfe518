/* resource.h - the resource on every box line (docs/records.md "The
 * resource"): the operator's OTEL_RESOURCE_ATTRIBUTES, then service.name,
 * strands.box.name, strands.box.source and strands.box.run.id. */
#ifndef CAIRN_TM_RESOURCE_H
#define CAIRN_TM_RESOURCE_H

#include <stddef.h>

#include "otlp.h"

struct tm_res {
	struct tm_resource r;           /* points into the fields below */
	struct tm_kv *kv;
	size_t n_operator;              /* kv[0, n_operator): OTEL_RESOURCE_ATTRIBUTES */
	char *text;                     /* the decoded keys and values */
};

/* Build the resource of box box_id (source "box", or "agent" for relayed
 * payloads) for run run_hex, with the operator's attributes from env (NULL
 * or empty: none).  0, or -EINVAL with Box's reason in err (the variable is
 * too long, an entry has no `=` or an empty key, a reserved key, a key
 * twice, a bad percent escape or a value that is not UTF-8), or -ENOMEM. */
int tm_res_build(struct tm_res *out, const char *env, const char *box_id, const char *source,
		 const char *run_hex, char *err, size_t errlen);
void tm_res_free(struct tm_res *r);

#endif
