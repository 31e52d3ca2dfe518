/* cred_table.h - the credential route table's insides, shared by
 * cred_table.c (building it: phantoms, secrets, the sandbox's variables)
 * and cred.c (matching, scoping, injection).  Internal to src/gateway. */
#ifndef CAIRN_GW_CRED_TABLE_H
#define CAIRN_GW_CRED_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "cred.h"

struct route {
	const char *name;
	const struct box_dests *dests;
	const struct box_secret *sec;
	bool egress;                    /* an [egress.<name>] (scopable by name) */
	char phantom[GW_PHANTOM_MAX + 1];       /* "" for a signed route */
	char *secret;                   /* env:// value once set */
};

struct gw_cred_table {
	size_t n, cap;
	struct route *v;
};

static inline bool route_signed(const struct route *r)
{
	return r->sec->scheme == BOX_SECRET_AWS || r->sec->scheme == BOX_SECRET_CREDSD;
}

#endif
