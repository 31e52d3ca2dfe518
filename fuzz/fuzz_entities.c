/* fuzz_entities.c - libFuzzer target: the entity loader (Cedar's JSON entity
 * format, dw_store_add_json and dw_store_finish) and the JSON value decoder
 * under it.
 *
 * Input:
 *   - no NUL byte: the whole input is an entities file, loaded against a fixed
 *     schema (every attribute type, tags, enums, hierarchy, namespaces);
 *   - SCHEMA NUL ENTITIES: SCHEMA is a schema fragment (JSON format when its
 *     first non-blank byte is `{`, else the human format) and ENTITIES is loaded
 *     against it; an empty SCHEMA, or one that does not load, means no schema
 *     (the schema-less JSON forms only).
 * A loaded store is then read back: every entity is looked up by UID, `in` is
 * asked against its parents (which must hold), and attributes and tags are
 * rendered.  Everything is freed before returning; nothing is printed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "schema.h"
#include "store.h"
#include "value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fz_schema_text[] =
	"type Address = { street: String, city: String, zip?: String };\n"
	"entity Group in [Group];\n"
	"entity User in [Group] = {\n"
	"  name: String, age: Long, active: Bool, email?: String,\n"
	"  address: Address, roles: Set<String>, friends: Set<User>, manager?: User,\n"
	"  ip: ipaddr, score: decimal, created: datetime, ttl: duration,\n"
	"  nested: { a: { b: Set<Set<Long>> } }, \"quoted attr\": Long,\n"
	"} tags String;\n"
	"entity Color enum [\"red\", \"green\", \"blue\"];\n"
	"namespace Box {\n"
	"  entity Agent;\n"
	"  entity Resource = { owner: User, path: String, color?: Color } tags Set<Long>;\n"
	"  entity Op enum [\"read\", \"write\"];\n"
	"  action \"fs:read\", \"fs:write\" in [\"fs\"] appliesTo { principal: Agent, resource: Resource,\n"
	"    context: { op: Op } };\n"
	"  action \"fs\";\n"
	"}\n"
	"action view appliesTo { principal: [User, Group], resource: [Box::Resource] };\n"
	"action edit in [view];\n";

static struct {
	bool done;
	struct dw_schema *schema;
} fz;

static struct dw_schema *fz_schema(const char *file, const char *text, size_t len, bool json)
{
	struct dw_schema *s = dw_schema_new();
	struct dw_diags d;
	int r;

	if (s == NULL)
		return NULL;
	dw_diags_init(&d);
	r = json ? dw_schema_add_json(s, file, text, len, &d)
		 : dw_schema_add_cedar(s, file, text, len, &d);
	if (r == 0)
		r = dw_schema_finish(s, &d);
	if (r != 0) {
		if (!fz.done) {   /* the fixed schema must load: a bug, not a finding */
			for (size_t i = 0; i < d.n; i++)
				fprintf(stderr, "fuzz_entities: fixed schema: %u:%u: %s\n",
					d.v[i].line, d.v[i].col, d.v[i].msg);
			abort();
		}
		dw_schema_free(s);
		s = NULL;
	}
	dw_diags_fini(&d);
	return s;
}

static void fz_use_store(const struct dw_store *st)
{
	struct dw_buf b = { 0 };
	size_t n = dw_store_count(st);

	for (size_t i = 0; i < n; i++) {
		const struct dw_entity *e = dw_store_at(st, i);

		if (e == NULL || dw_store_get(st, &e->uid) != e || !dw_store_in(st, &e->uid, &e->uid))
			abort();
		for (uint32_t k = 0; k < e->n_parents; k++)
			if (!dw_store_in(st, &e->uid, e->parents[k]))
				abort();
		(void)dw_uid_format(&b, &e->uid);
		for (uint32_t k = 0; k < e->attrs->n; k++)
			(void)dw_val_format(&b, e->attrs->f[k].val);
		for (uint32_t k = 0; k < e->tags->n; k++)
			(void)dw_val_format(&b, e->tags->f[k].val);
		b.n = 0;
	}
	dw_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = size ? memchr(text, '\0', size) : NULL;
	struct dw_schema *own = NULL;
	const struct dw_schema *schema;
	const char *ents = text;
	size_t n_ents = size;
	struct dw_store *st;
	struct dw_diags d;

	if (!fz.done) {
		fz.schema = fz_schema("fixed.cedarschema", fz_schema_text,
				      sizeof fz_schema_text - 1, false);
		fz.done = true;
	}
	schema = fz.schema;
	if (nul != NULL) {
		size_t n_schema = (size_t)(nul - text), i = 0;

		while (i < n_schema && strchr(" \t\r\n", text[i]) != NULL)
			i++;
		own = n_schema == 0 ? NULL
				    : fz_schema("fuzz.cedarschema", text, n_schema,
						i < n_schema && text[i] == '{');
		schema = own;
		ents = nul + 1;
		n_ents = size - n_schema - 1;
	}

	st = dw_store_new();
	if (st != NULL) {
		dw_diags_init(&d);
		if (dw_store_add_json(st, schema, "fuzz.entities.json", ents, n_ents, &d) == 0 &&
		    dw_store_finish(st, schema, &d) == 0)
			fz_use_store(st);
		dw_diags_fini(&d);
		dw_store_free(st);
	}
	dw_schema_free(own);
	return 0;
}
