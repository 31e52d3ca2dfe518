/* fuzz_schema_cedar.c - libFuzzer target: the human-format (.cedarschema) schema parser
 * (dw_schema_add_cedar) and dw_schema_finish.
 *
 * The whole input is one schema fragment.  When it finishes, the resolved
 * schema is used the way the engine uses one: every entity type and action is
 * looked up by name (the lookup must return the declared object, and an action
 * must be `in` itself), every type is rendered, action groups are queried, and
 * an empty entity store is finished against it (which adds the action entities
 * and refuses group cycles).  A broken promise of schema.h aborts, so libFuzzer
 * records it as a crash.  Everything is freed before returning; nothing is
 * printed. */
#include <stdint.h>
#include <stdlib.h>

#include "diag.h"
#include "schema.h"
#include "store.h"
#include "value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Pairs of actions queried with dw_schema_action_in: bounded so a schema with
 * thousands of actions stays fast. */
#define FZ_MAX_GROUP_QUERIES 64

static void fz_use_schema(const struct dw_schema *s)
{
	struct dw_buf b = { 0 };
	struct dw_store *st;
	struct dw_diags d;

	for (uint32_t i = 0; i < s->n_etypes; i++) {
		const struct dw_etype *e = s->etypes[i];

		if (dw_schema_find_etype(s, e->name) != e)
			abort();
		(void)dw_type_format(&b, e->shape);
		if (e->tags != NULL)
			(void)dw_type_format(&b, e->tags);
		b.n = 0;
	}
	for (uint32_t i = 0; i < s->n_actions; i++) {
		const struct dw_action *a = s->actions[i];

		if (dw_schema_find_action(s, a->type, a->id) != a ||
		    !dw_schema_action_in(s, a, a) || !dw_schema_is_action_type(s, a->type))
			abort();
		(void)dw_type_format(&b, a->context);
		b.n = 0;
		for (uint32_t k = 0; k < a->n_parents; k++)
			if (!dw_schema_action_in(s, a, a->parents[k]))
				abort();
		for (uint32_t k = 0; k < s->n_actions && k < FZ_MAX_GROUP_QUERIES; k++)
			(void)dw_schema_action_in(s, a, s->actions[k]);
	}
	dw_buf_free(&b);

	st = dw_store_new();
	if (st == NULL)
		return;
	dw_diags_init(&d);
	(void)dw_store_finish(st, s, &d);
	dw_diags_fini(&d);
	dw_store_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;

	if (s == NULL)
		return 0;
	dw_diags_init(&d);
	if (dw_schema_add_cedar(s, "fuzz.cedarschema", (const char *)data, size, &d) == 0 &&
	    dw_schema_finish(s, &d) == 0)
		fz_use_schema(s);
	dw_diags_fini(&d);
	dw_schema_free(s);
	return 0;
}
