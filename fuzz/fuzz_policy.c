/* fuzz_policy.c - libFuzzer target: the Cedar and Dogwood policy parsers, macro
 * expansion, Box's load rules, strict validation against the Box schema, and the
 * evaluator.
 *
 * Input: byte 0 selects the dialect (odd: Cedar, even: Dogwood; the seeds use
 * 'c' and 'd'), the rest is the policy text.  A Dogwood set gets the default
 * macro library first, as dw_engine_new does.  Whatever parses and expands is
 * checked with Box's load rules, validated against the compiled-in Box schema
 * and against a photo-sharing schema (problems are expected: only crashes,
 * leaks and sanitizer reports count), then compiled and asked six fixed
 * requests, so ill-typed rules reach the evaluator too.  Every request is
 * decided twice, with and without the authorizer's condition index, and the
 * two answers must be identical (allow, reasons, errors) or the target aborts.
 *
 * The schemas, the entity store and the requests are built once, on the
 * first call, and stay reachable from statics (not leaks).  Everything built
 * from the input is freed before returning.  Nothing is printed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "authz.h"
#include "box_rules.h"
#include "diag.h"
#include "json_value.h"
#include "policyset.h"
#include "schema.h"
#include "store.h"
#include "validate.h"
#include "temporal.h"
#include "tmacro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Entities the requests can reach: attributes of every kind, tags, a hierarchy. */
static const char fz_entities[] =
	"[\n"
	" {\"uid\": {\"type\": \"Box::Agent\", \"id\": \"self\"},\n"
	"  \"attrs\": {\"name\": \"agent\", \"level\": 3, \"trusted\": true,\n"
	"            \"roles\": [\"dev\", \"ops\"], \"home\": \"/home/user\",\n"
	"            \"owner\": {\"__entity\": {\"type\": \"User\", \"id\": \"alice\"}},\n"
	"            \"addr\": {\"__extn\": {\"fn\": \"ip\", \"arg\": \"10.0.0.1\"}},\n"
	"            \"score\": {\"__extn\": {\"fn\": \"decimal\", \"arg\": \"0.75\"}}},\n"
	"  \"parents\": [{\"type\": \"UserGroup\", \"id\": \"agents\"}],\n"
	"  \"tags\": {\"env\": \"prod\", \"n\": 7}},\n"
	" {\"uid\": {\"type\": \"Box::Resource\", \"id\": \"unused\"}, \"attrs\": {}, \"parents\": []},\n"
	" {\"uid\": {\"type\": \"User\", \"id\": \"alice\"},\n"
	"  \"attrs\": {\"age\": 30, \"department\": \"eng\", \"address\": {\"city\": \"Oslo\", \"zip\": \"0150\"},\n"
	"            \"joined\": {\"__extn\": {\"fn\": \"datetime\", \"arg\": \"2024-01-01T00:00:00Z\"}},\n"
	"            \"session\": {\"__extn\": {\"fn\": \"duration\", \"arg\": \"1h30m\"}}},\n"
	"  \"parents\": [{\"type\": \"UserGroup\", \"id\": \"jane_friends\"}],\n"
	"  \"tags\": {\"clearance\": \"secret\"}},\n"
	" {\"uid\": {\"type\": \"UserGroup\", \"id\": \"jane_friends\"}, \"attrs\": {},\n"
	"  \"parents\": [{\"type\": \"UserGroup\", \"id\": \"agents\"}]},\n"
	" {\"uid\": {\"type\": \"UserGroup\", \"id\": \"agents\"}, \"attrs\": {}, \"parents\": []},\n"
	" {\"uid\": {\"type\": \"Photo\", \"id\": \"VacationPhoto94.jpg\"},\n"
	"  \"attrs\": {\"private\": false, \"owner\": {\"__entity\": {\"type\": \"User\", \"id\": \"alice\"}}},\n"
	"  \"parents\": [{\"type\": \"Album\", \"id\": \"jane_vacation\"}]},\n"
	" {\"uid\": {\"type\": \"Album\", \"id\": \"jane_vacation\"}, \"attrs\": {},\n"
	"  \"parents\": [{\"type\": \"Account\", \"id\": \"jane\"}]},\n"
	" {\"uid\": {\"type\": \"Account\", \"id\": \"jane\"}, \"attrs\": {}, \"parents\": []}\n"
	"]\n";

/* A second schema for validation: the photo-sharing application of Cedar's
 * examples (testdata/cedar), widened to the attributes the entities above
 * carry, so the Cedar seeds and rules written against them type-check deeply
 * rather than stopping at "unrecognized entity type". */
static const char fz_photo_schema[] =
	"type Ctx = { authenticated: Bool, confidence_score?: decimal, source_ip?: ipaddr,\n"
	"             photo?: { filesize_mb: Long, filetype: String }, n?: Long,\n"
	"             tags?: Set<String>, r?: { k: String } };\n"
	"entity Account in [AccountGroup] = { admins: Set<User>, owner: User, private: Bool };\n"
	"entity AccountGroup = { owner: User };\n"
	"entity Administrator;\n"
	"entity UserGroup in [UserGroup];\n"
	"entity Album, Photo, Video in [Account, Album] = { account?: Account, admins?: Set<User>,\n"
	"                                                  private: Bool, owner?: User };\n"
	"entity User in [UserGroup] = { department: String, jobLevel?: Long, age?: Long,\n"
	"  address?: { city: String, zip?: String }, joined?: datetime, session?: duration } tags String;\n"
	"action addPhoto, listPhotos appliesTo { principal: [User], resource: [Album], context: Ctx };\n"
	"action comment, delete, edit, view appliesTo { principal: [User, Administrator],\n"
	"                                               resource: [Photo, Video], context: Ctx };\n"
	"action listAlbums appliesTo { principal: [User], resource: [Account], context: Ctx };\n"
	"action all;\n"
	"action admin in [all] appliesTo { principal: Administrator, resource: [Account, Album] };\n";

struct fz_request {
	const char *ptype, *pid, *atype, *aid, *rtype, *rid;
	bool box;             /* context parsed against the Box action's context type */
	const char *context;  /* JSON */
};

static const struct fz_request fz_requests[] = {
	{ "Box::Agent", "self", "Box::Action", "http:request", "Box::Resource", "unused", true,
	  "{\"input\": {\"host\": \"api.example.com\", \"port\": 443, \"method\": \"POST\","
	  " \"path\": \"/v1/upload\", \"body_bytes\": 1048576, \"intercepted\": true},"
	  " \"output\": {\"status\": 200}}" },
	{ "Box::Agent", "self", "Box::Action", "fs:read", "Box::Resource", "unused", true,
	  "{\"input\": {\"path\": \"~/proj/.env\","
	  " \"operation\": {\"type\": \"Box::FsReadOperation\", \"id\": \"read_content\"}}}" },
	{ "Box::Agent", "self", "Box::Action", "shell:spawn", "Box::Resource", "unused", true,
	  "{\"input\": {\"command\": \"git push origin main\", \"program\": \"git\","
	  " \"program_path\": \"/usr/bin/git\", \"credential_reads\": [\"~/.ssh/id_ed25519\"],"
	  " \"arg1\": \"push\", \"arg2\": \"origin\", \"arg_count\": 3, \"cwd\": \"/home/user/proj\"},"
	  " \"output\": {\"status\": 0}}" },
	/* optional fields absent: `has` guards and missing-attribute errors */
	{ "Box::Agent", "self", "Box::Action", "http:request", "Box::Resource", "unused", true,
	  "{\"input\": {\"host\": \"uploads.example.com\", \"port\": 80, \"method\": \"GET\","
	  " \"path\": \"\", \"body_bytes\": 0, \"intercepted\": false}}" },
	{ "Box::Agent", "self", "Box::Action", "shell:exec", "Box::Resource", "unused", true,
	  "{\"input\": {\"command\": \"npm test\", \"program\": \"npm\", \"arg_count\": 1,"
	  " \"cwd\": \"~/proj\"}}" },
	{ "User", "alice", "Action", "view", "Photo", "VacationPhoto94.jpg", false,
	  "{\"authenticated\": true,"
	  " \"confidence_score\": {\"__extn\": {\"fn\": \"decimal\", \"arg\": \"0.9\"}},"
	  " \"source_ip\": {\"__extn\": {\"fn\": \"ip\", \"arg\": \"192.168.1.7\"}},"
	  " \"n\": 9223372036854775807, \"tags\": [\"a\", \"b\"], \"r\": {\"k\": \"v\"}}" },
};

#define FZ_N_REQUESTS (sizeof fz_requests / sizeof fz_requests[0])

struct fz_ready {
	const struct dw_uid *p, *a, *r;
	const struct dw_rec *context;
};

static struct {
	bool done;
	struct dw_schema *schema;          /* Box's, compiled in */
	struct dw_schema *photo;           /* fz_photo_schema */
	struct dw_store *store;
	struct dw_arena arena;             /* request UIDs and contexts */
	struct fz_ready req[FZ_N_REQUESTS];
} fz;

/* Setup failure is a bug in the engine (or this file), not a finding about an
 * input: say why and stop, rather than fuzz with half a setup. */
static void fz_die(const char *what, const struct dw_diags *d)
{
	fprintf(stderr, "fuzz_policy: setup failed: %s\n", what);
	for (size_t i = 0; d != NULL && i < d->n; i++)
		fprintf(stderr, "  %s:%u:%u: %s\n", d->v[i].file, d->v[i].line, d->v[i].col,
			d->v[i].msg);
	abort();
}

static void fz_init(void)
{
	struct dw_diags d;
	char err[512];

	dw_diags_init(&d);
	dw_arena_init(&fz.arena);
	fz.schema = dw_schema_new();
	if (fz.schema == NULL || dw_schema_add_box(fz.schema, &d) != 0 ||
	    dw_schema_finish(fz.schema, &d) != 0)
		fz_die("Box schema", &d);
	fz.photo = dw_schema_new();
	if (fz.photo == NULL ||
	    dw_schema_add_cedar(fz.photo, "photo.cedarschema", fz_photo_schema,
				sizeof fz_photo_schema - 1, &d) != 0 ||
	    dw_schema_finish(fz.photo, &d) != 0)
		fz_die("photo schema", &d);
	/* Entities are loaded without the schema so they may carry attributes the
	 * Box schema does not declare; finishing adds Box's action entities. */
	fz.store = dw_store_new();
	if (fz.store == NULL ||
	    dw_store_add_json(fz.store, NULL, "fuzz-entities.json", fz_entities,
			      sizeof fz_entities - 1, &d) != 0 ||
	    dw_store_finish(fz.store, fz.schema, &d) != 0)
		fz_die("entity store", &d);
	for (size_t i = 0; i < FZ_N_REQUESTS; i++) {
		const struct fz_request *q = &fz_requests[i];
		struct fz_ready *r = &fz.req[i];
		const struct dw_action *act = NULL;
		json_error_t je;
		json_t *j;
		int rc;

		r->p = dw_uid_new(&fz.arena, dw_str_c(q->ptype), dw_str_c(q->pid));
		r->a = dw_uid_new(&fz.arena, dw_str_c(q->atype), dw_str_c(q->aid));
		r->r = dw_uid_new(&fz.arena, dw_str_c(q->rtype), dw_str_c(q->rid));
		if (r->p == NULL || r->a == NULL || r->r == NULL)
			fz_die("request uids", NULL);
		if (q->box && (act = dw_schema_find_action(fz.schema, r->a->type, r->a->id)) == NULL)
			fz_die(q->aid, NULL);
		j = json_loads(q->context, JSON_REJECT_DUPLICATES, &je);
		if (j == NULL)
			fz_die(je.text, NULL);
		rc = dw_json_context(&fz.arena, q->box ? fz.schema : NULL, act, j, &r->context, err,
				     sizeof err);
		json_decref(j);
		if (rc != 0)
			fz_die(err, NULL);
	}
	dw_diags_fini(&d);
	fz.done = true;
}

/* The condition index is an optimisation: an authorizer built with it must
 * decide exactly as one built without it (authz.h).  A difference aborts, so
 * libFuzzer keeps the policy text as a crash. */
static void fz_same_decision(const struct dw_authz_result *a, const struct dw_authz_result *b)
{
	if (a->allow != b->allow || a->n_reasons != b->n_reasons || a->n_errors != b->n_errors)
		abort();
	for (uint32_t i = 0; i < a->n_reasons; i++)
		if (a->reasons[i] != b->reasons[i])
			abort();
	for (uint32_t i = 0; i < a->n_errors; i++)
		if (a->errors[i].policy != b->errors[i].policy ||
		    strcmp(a->errors[i].msg, b->errors[i].msg) != 0)
			abort();
}

/* Compile the set against the fixed store, with and without the condition
 * index, and decide every fixed request with both. */
static void fz_authorize(const struct dw_policy_set *ps)
{
	struct dw_authz *indexed = NULL, *plain = NULL;
	struct dw_arena scratch;

	if (dw_authz_new(ps, fz.store, true, &indexed) != 0 ||
	    dw_authz_new(ps, fz.store, false, &plain) != 0) {
		dw_authz_free(indexed);
		return;
	}
	dw_arena_init(&scratch);
	for (size_t i = 0; i < FZ_N_REQUESTS; i++) {
		struct dw_authz_result ri, rp;
		const struct fz_ready *r = &fz.req[i];

		if (dw_authz_decide(indexed, r->p, r->a, r->r, r->context, NULL, NULL, NULL, &scratch, &ri) == 0 &&
		    dw_authz_decide(plain, r->p, r->a, r->r, r->context, NULL, NULL, NULL, &scratch, &rp) == 0)
			fz_same_decision(&ri, &rp);
		dw_arena_fini(&scratch);   /* leaves the arena reusable */
	}
	dw_authz_free(plain);
	dw_authz_free(indexed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum dw_dialect dialect;
	struct dw_policy_set *ps;
	struct dw_diags d;

	if (!fz.done)
		fz_init();
	if (size < 1)
		return 0;
	dialect = (data[0] & 1) ? DW_DIALECT_CEDAR : DW_DIALECT_DOGWOOD;
	ps = dw_policy_set_new_temporal(dialect);
	if (ps == NULL)
		return 0;
	dw_diags_init(&d);
	if (dialect == DW_DIALECT_DOGWOOD &&
	    dw_parse_macro_library(ps, "<default macros>", dw_default_macros,
				   strlen(dw_default_macros), &d) != 0)
		abort();   /* the built-in library must always load */
	if (dw_parse_policies(ps, dialect == DW_DIALECT_CEDAR ? "fuzz.cedar" : "fuzz.dw",
			      (const char *)data + 1, size - 1, &d) == 0 &&
	    dw_policy_set_expand(ps, &d) == 0) {
		/* Results are ignored on purpose: rejections are expected; the checks
		 * run for what they do with hostile trees. */
		(void)dw_box_rules_check(ps, fz.schema, "/home/user", &d);
		(void)dw_validate(ps, fz.schema, &d);
		(void)dw_validate(ps, fz.photo, &d);
		fz_authorize(ps);
	}
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	return 0;
}
