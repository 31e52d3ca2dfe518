/* test_validate.c - Cedar's strict validator (src/dogwood/cedar/validate.c).
 *
 * The table below is (schema, policy, Cedar's errors, warnings).  Its cases
 * are ported from Cedar's own typechecker tests (cedar-policy-core
 * src/validator/typecheck/test/{optional_attributes,expr,tags,extensions}.rs,
 * validator/rbac.rs) and from exploratory runs; the expected outcome of every
 * case, messages included, was produced by Cedar itself (@cedar-policy/cedar-wasm
 * 4.13 `validate`, strict mode) and is checked exactly: same validity, same set
 * of error messages, and the impossible-policy / no-applicable-action warnings.
 * Further tests: the Cedar conformance cases (shouldValidate), Dogwood policies
 * against the Box schema (the refusals Box documents), locations, one report
 * per policy, templates, temporal leaves, macros and deep nesting. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "policyset.h"
#include "schema.h"
#include "validate.h"
#include "temporal.h"
#include "tmacro.h"
#include "box_rules.h"

/* the Cedar conformance cases (tests/data/cedar/README.md) */
#define TESTDATA TEST_DATA_DIR "/cedar"

struct vcase {
	int schema;               /* enum schema_id */
	const char *policy;       /* one Cedar policy: its id is policy0 */
	const char *errors;       /* Cedar's error messages, sorted, '\n'-separated; NULL: valid */
	bool impossible;          /* "policy is impossible" warning */
	bool no_action;           /* "unable to find an applicable action" warning */
};

static const char schema_opt[] =
	"entity User { name?: String, age?: Long };\n"
	"action view_photo appliesTo { principal: [User], resource: [User] };\n";

static const char schema_photo[] =
	"entity UserGroup;\n"
	"entity User in [UserGroup] { name: String, age: Long, dept?: String, manager?: User, "
	"friends: Set<User> };\n"
	"entity Album in [Album] { owner: User, public: Bool };\n"
	"entity Photo in [Album] { owner: User, size: Long, meta: { taken?: datetime, place?: "
	"String, tags: Set<String> } };\n"
	"action viewPhoto, editPhoto appliesTo { principal: [User], resource: [Photo], context: {"
	" ip: ipaddr, authenticated: Bool, n?: Long } };\n"
	"action listAlbums appliesTo { principal: [User, UserGroup], resource: [Album] };\n"
	"action admin;\n"
	"action deletePhoto in [admin] appliesTo { principal: User, resource: Photo };\n"
	"action noApplies in [admin];\n";

static const char schema_app[] =
	"namespace App {\n"
	"  type Addr = { street: String, zip?: Long };\n"
	"  entity Group in [Group] { name: String, tags?: Set<String> };\n"
	"  entity User in [Group] { name: String, age?: Long, addr: Addr, addr2?: Addr, mgr?: "
	"User, friends: Set<User>, ip?: ipaddr, score: decimal, born?: datetime, wait: duration, "
	"flags: Set<Long> } tags Long;\n"
	"  entity Doc in [Folder] { owner: User, public: Bool, meta?: { level: Long, note?: "
	"String } } tags String;\n"
	"  entity Folder in [Folder] { owner?: User };\n"
	"  entity Kind enum [\"a\", \"b\"];\n"
	"  action read, write appliesTo { principal: [User], resource: [Doc, Folder], context: { "
	"ip: ipaddr, now: datetime, n?: Long, kind: Kind, rec: { x: Long, y?: String } } };\n"
	"  action admin;\n"
	"  action del in [admin] appliesTo { principal: User, resource: Doc };\n"
	"  action list in [admin, read] appliesTo { principal: [User, Group], resource: Folder, "
	"context: {} };\n"
	"}\n";

static const char schema_tags[] =
	"entity User { n: Long } tags String;\n"
	"entity Doc tags Long;\n"
	"entity Plain;\n"
	"entity Mixed tags { a: Long };\n"
	"action view appliesTo { principal: [User], resource: [Doc, Plain, Mixed], context: { k: "
	"String } };\n";

static const char schema_ext[] =
	"entity User { ip: ipaddr, score: decimal, born: datetime, wait: duration, maybe?: "
	"decimal };\n"
	"action go appliesTo { principal: [User], resource: [User], context: { now: datetime, d: "
	"duration, s: String } };\n";

static const char schema_enum[] =
	"entity Color enum [\"red\", \"green\", \"blue\"];\n"
	"entity Task { color: Color, tags: Set<Color> };\n"
	"action paint appliesTo { principal: [Task], resource: [Task], context: { c: Color } };\n";

static const char schema_none[] =
	"entity User;\n"
	"action a;\n";

enum schema_id { S_OPT, S_PHOTO, S_APP, S_TAGS, S_EXT, S_ENUM, S_NONE, S__COUNT };

static const char *const schema_text[S__COUNT] = {
	schema_opt,
	schema_photo,
	schema_app,
	schema_tags,
	schema_ext,
	schema_enum,
	schema_none,
};

static const struct vcase cases[] = {
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && principal.name =="
	  " \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { resource has name && resource.name == "
	  "\"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { resource has name && principal has age "
	  "&& resource.name == \"foo\" && principal.age == 1};",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name && principal has "
	  "age) && principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name && true) && "
	  "principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (true && principal has name) && "
	  "principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name) && (principal.name"
	  " == \"foo\" && principal.name == \"foo\") };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has age || (false && "
	  "principal.name == \"foo\") };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name || principal has "
	  "name) && principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (false || principal has name) && "
	  "principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name || false) && "
	  "principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name) && (principal.name"
	  " == \"foo\" || principal.name == \"foo\") };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if principal has name then "
	  "principal.name == \"foo\" else false };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && (if principal has"
	  " age then principal.name == \"foo\" else false) };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && (if principal has"
	  " age then false else principal.name == \"foo\") };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && (if true then "
	  "principal.name == \"foo\" else principal.age == 1)};",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && (if false then "
	  "principal.age == 1 else principal.name == \"foo\")};",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if if (principal has age) then "
	  "(principal has name) else (principal has name) then principal.name == \"foo\" else"
	  " false };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if if (principal has name) then "
	  "(principal has age) else (principal has name) then principal.name == \"foo\" else "
	  "false };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (if (principal has name) then "
	  "(principal has age) else (principal has name && principal has age)) && "
	  "principal.name == \"hi\" && principal.age == 2 };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name && (if principal has"
	  " name then principal.name == \"foo\" else principal.age == 3) };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if principal has name then false else "
	  "principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name || principal.name =="
	  " \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal.name == \"foo\" || principal "
	  "has name };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (principal has name || principal has "
	  "age) && principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal.name == \"foo\" && principal "
	  "has name };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if principal has name then "
	  "principal[\"name\"] == \"foo\" else principal.name == \"bar\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if if (principal has age) then "
	  "(principal has age) else (principal has name) then principal.name == \"foo\" else "
	  "false };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { resource has name && principal.name == "
	  "\"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { !(principal has name) && principal.name"
	  " == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { true && principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [principal has name].contains(principal"
	  " has name) && principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [principal has "
	  "name].containsAll([principal has name]) && principal.name == \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { \"foo\" like \"bar\" && principal.name "
	  "== \"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {name: true}.name && principal.name == "
	  "\"foo\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name } when { "
	  "principal.name == \"foo\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) unless { !(principal has name) } when { "
	  "principal.name == \"a\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`name` on entity type `User`",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 && true };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (1 > 0) && 2 };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (1 > false) && true };",
	  "for policy `policy0`, unexpected type: expected Long but saw "
	  "__cedar::internal::False",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { true || 1 };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 || true };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { false && 1 };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (3 == 4) && 1 };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [true, 1].isEmpty() };",
	  "the types __cedar::internal::True and Long are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [].isEmpty() };",
	  "for policy `policy0`, empty set literals are forbidden in policies",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {a: 1} has a.b };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {a: {b: true}} has a.b };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {a: {}} has a.missing };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if 1 then true else false };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if principal has age then 1 else \"a\" "
	  "};",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (if principal has age then 1 else "
	  "\"a\") == 1 };",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { if true then 1 else \"a\" };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 == \"a\" };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (true || true) == 1 };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { (1 == 1) == 1 };",
	  "the types __cedar::internal::True and Long are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal == resource };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { -\"a\" == 1 };",
	  "for policy `policy0`, unexpected type: expected Long but saw String",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 + \"a\" > 2 };",
	  "for policy `policy0`, unexpected type: expected Long but saw String",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { \"a\" < \"b\" };",
	  "for policy `policy0`, unexpected type: expected datetime, or duration, or Long but"
	  " saw String",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 like \"a\" };",
	  "for policy `policy0`, unexpected type: expected String but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { \"abc\" like \"a*\" };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 in principal };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity but "
	  "saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal in 1 };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::AnyEntity>,"
	  " or __cedar::internal::AnyEntity but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal in [1] };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::AnyEntity>,"
	  " or __cedar::internal::AnyEntity but saw Set<Long>",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 is User };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity but "
	  "saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal is User };",
	  NULL,
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal has name.x };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw String",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { 1 has a };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [1].contains(\"a\") };",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [1].containsAny([true]) };",
	  "the types Set<__cedar::internal::True> and Set<Long> are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [1].containsAll(1) };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::Any> but "
	  "saw Long",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { \"a\".isEmpty() };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::Any> but "
	  "saw String",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {a: 1} == {a: true} };",
	  "the types {a: __cedar::internal::True,} and {a: Long,} are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { {a: 1} == {a: 2, b: 3} };",
	  "the types {a: Long,} and {a: Long,b: Long,} are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { [[1], [\"a\"]].isEmpty() };",
	  "the types Set<Long> and Set<String> are not compatible",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { principal.nope };",
	  "for policy `policy0`, attribute `nope` on entity type `User` not found",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { action.nope };",
	  "for policy `policy0`, attribute `nope` on entity type `Action` not found",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { action has nope };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { action is User };",
	  NULL,
	  true, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { context.nope };",
	  "for policy `policy0`, attribute `nope` in context for Action::\"view_photo\" not "
	  "found",
	  false, false },
	{ S_OPT,
	  "permit(principal, action, resource) when { context == {} };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource);",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal == User::\"a\", action == Action::\"viewPhoto\", resource == "
	  "Photo::\"p\");",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal == Usr::\"a\", action, resource);",
	  "for policy `policy0`, unrecognized entity type `Usr`",
	  false, true },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"vewPhoto\", resource);",
	  "for policy `policy0`, unrecognized action `Action::\"vewPhoto\"`",
	  true, true },
	{ S_PHOTO,
	  "permit(principal, action in [Action::\"viewPhoto\", Action::\"nope\"], resource);",
	  "for policy `policy0`, unrecognized action `Action::\"nope\"`",
	  false, true },
	{ S_PHOTO,
	  "permit(principal, action in [], resource);",
	  "for policy `policy0`, empty set literals are forbidden in policies",
	  false, true },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"noApplies\", resource);",
	  NULL,
	  true, true },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"admin\", resource);",
	  NULL,
	  true, true },
	{ S_PHOTO,
	  "permit(principal, action in Action::\"admin\", resource);",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action in Action::\"admin\", resource is Album);",
	  NULL,
	  true, true },
	{ S_PHOTO,
	  "permit(principal == UserGroup::\"g\", action == Action::\"viewPhoto\", resource);",
	  NULL,
	  true, true },
	{ S_PHOTO,
	  "permit(principal in UserGroup::\"g\", action == Action::\"viewPhoto\", resource);",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal is UserGroup in UserGroup::\"g\", action, resource);",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal is User in UserGroup::\"g\", action, resource in Album::\"a\");",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource is User);",
	  NULL,
	  true, true },
	{ S_PHOTO,
	  "permit(principal is Nope, action, resource);",
	  "for policy `policy0`, unrecognized entity type `Nope`",
	  true, true },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { resource is Nope::Thing };",
	  "for policy `policy0`, unrecognized entity type `Nope::Thing`",
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { Nope::\"x\" == principal };",
	  "for policy `policy0`, unrecognized entity type `Nope`",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { action in Action::\"admin\" && "
	  "context.ip.isLoopback() };",
	  "for policy `policy0`, attribute `ip` in context for Action::\"deletePhoto\" not "
	  "found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { action == Action::\"deletePhoto\" && "
	  "context.authenticated };",
	  "for policy `policy0`, attribute `authenticated` in context for "
	  "Action::\"deletePhoto\" not found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { action == Action::\"viewPhoto\" && "
	  "context.authenticated };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { Action::\"deletePhoto\" in "
	  "Action::\"admin\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { Action::\"viewPhoto\" in "
	  "Action::\"admin\" };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { Action::\"viewPhoto\" in "
	  "[Action::\"admin\", Action::\"viewPhoto\"] };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { Action::\"viewPhoto\" in User::\"u\" };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { action in principal };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { principal in resource };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource in "
	  "principal };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource in "
	  "Album::\"a\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource in "
	  "UserGroup::\"a\" };",
	  NULL,
	  true, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { principal in "
	  "principal.friends };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource.owner"
	  " == principal };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { "
	  "resource.owner.manager.name == \"x\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`manager` on entity type `User`",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource.owner"
	  " has manager && resource.owner.manager.name == \"x\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource.owner"
	  " has manager.dept && resource.owner.manager.dept == \"x\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { "
	  "resource.meta.place == \"x\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`meta.place` on entity type `Photo`",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { resource.meta "
	  "has place && resource.meta.place like \"x*\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { "
	  "resource.meta.tags.contains(\"x\") && resource.meta.tags.containsAny([\"a\", "
	  "\"b\"]) };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { "
	  "resource.meta.tags.contains(1) };",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { context.n > 1 "
	  "};",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for Action::\"viewPhoto\"",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { context has n "
	  "&& context.n > 1 };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { context.paht "
	  "};",
	  "for policy `policy0`, attribute `paht` in context for Action::\"viewPhoto\" not "
	  "found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { context.authenticated };",
	  "for policy `policy0`, attribute `authenticated` in context for "
	  "Action::\"deletePhoto\" not found\nfor policy `policy0`, attribute `authenticated`"
	  " in context for Action::\"listAlbums\" not found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"listAlbums\", resource) when { "
	  "principal.name == \"a\" };",
	  "for policy `policy0`, attribute `name` on entity type `UserGroup` not found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"listAlbums\", resource) when { principal has"
	  " name && principal.name == \"a\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal is User, action == Action::\"listAlbums\", resource) when { "
	  "principal.name == \"a\" };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { principal.size"
	  " > 1 };",
	  "for policy `policy0`, attribute `size` on entity type `User` not found",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action == Action::\"viewPhoto\", resource) when { principal.age "
	  "> resource.size && resource.size * 2 - 1 <= 10 };",
	  NULL,
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { [principal, resource].isEmpty() };",
	  "the types Album and User are not compatible\nthe types Album and UserGroup are not"
	  " compatible\nthe types Photo and User are not compatible",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { [User::\"a\", "
	  "User::\"b\"].contains(principal) };",
	  "the types User and UserGroup are not compatible",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { [User::\"a\", "
	  "UserGroup::\"b\"].isEmpty() };",
	  "the types User and UserGroup are not compatible",
	  false, false },
	{ S_PHOTO,
	  "permit(principal, action, resource) when { [Action::\"viewPhoto\", "
	  "Action::\"editPhoto\"].contains(action) };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.getTag(\"a\") == \"b\" };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"a\"` on "
	  "entity type `User`",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(\"a\") && "
	  "principal.getTag(\"a\") == \"b\" };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(context.k) && "
	  "principal.getTag(context.k) == \"b\" };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(\"a\") && "
	  "principal.getTag(\"b\") == \"b\" };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"b\"` on "
	  "entity type `User`",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(\"a\") && "
	  "principal.getTag(\"a\") == 1 };",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource is Doc) when { resource.hasTag(\"a\") && "
	  "resource.getTag(\"a\") > 1 };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource is Plain) when { resource.hasTag(\"a\") };",
	  NULL,
	  true, false },
	{ S_TAGS,
	  "permit(principal, action, resource is Plain) when { resource.getTag(\"a\") };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"a\"` on "
	  "entity type `Plain`",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource is Mixed) when { resource.hasTag(\"x\") && "
	  "resource.getTag(\"x\").a == 1 };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { resource.hasTag(\"x\") };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(1) };",
	  "for policy `policy0`, unexpected type: expected String but saw Long",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.n.hasTag(\"a\") };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity but "
	  "saw Long",
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { action.hasTag(\"a\") };",
	  NULL,
	  true, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { if principal.hasTag(\"a\") then "
	  "principal.getTag(\"a\") == \"\" else false };",
	  NULL,
	  false, false },
	{ S_TAGS,
	  "permit(principal, action, resource) when { principal.hasTag(\"a\") || "
	  "principal.getTag(\"a\") == \"\" };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"a\"` on "
	  "entity type `User`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { "
	  "principal.ip.isInRange(ip(\"10.0.0.0/8\")) };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { ip(\"10.0.0.0/33\").isIpv4() };",
	  "for policy `policy0`, error during extension function argument validation: failed "
	  "to parse as IP address: `\"10.0.0.0/33\"`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { ip(context.s).isIpv4() };",
	  "for policy `policy0`, extension constructors may not be called with non-literal "
	  "expressions",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { ip(1).isIpv4() };",
	  "for policy `policy0`, unexpected type: expected String but saw Long",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.ip.isIpv4(1) };",
	  "for policy `policy0`, wrong number of arguments in extension function application."
	  " Expected 1, got 2",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.ip.isInRange() };",
	  "for policy `policy0`, wrong number of arguments in extension function application."
	  " Expected 2, got 1",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { "
	  "principal.score.lessThan(decimal(\"1.5\")) };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.score.lessThan(1) };",
	  "for policy `policy0`, unexpected type: expected decimal but saw Long",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.score < decimal(\"1.5\") };",
	  "for policy `policy0`, unexpected type: expected datetime, or duration, or Long but"
	  " saw decimal",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { decimal(\"1.23456\") == principal.score"
	  " };",
	  "for policy `policy0`, error during extension function argument validation: failed "
	  "to parse as a decimal value: `\"1.23456\"`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { "
	  "principal.maybe.greaterThan(principal.score) };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`maybe` on entity type `User`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal has maybe && "
	  "principal.maybe.greaterThan(principal.score) };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now > "
	  "datetime(\"2024-01-01T00:00:00Z\") };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now > datetime(\"2024-13-01\") "
	  "};",
	  "for policy `policy0`, error during extension function argument validation: failed "
	  "to parse as a datetime value: `\"2024-13-01\"`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now.offset(duration(\"1h\")) > "
	  "principal.born };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { "
	  "context.now.durationSince(principal.born) < principal.wait };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now.toDate() == "
	  "principal.born.toDate() };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now.toTime().toHours() < 12 };",
	  NULL,
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.wait.toDays() < "
	  "principal.wait };",
	  "for policy `policy0`, unexpected type: expected Long but saw duration",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.d < duration(\"1x\") };",
	  "for policy `policy0`, error during extension function argument validation: failed "
	  "to parse as a duration value: `\"1x\"`",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.d < context.now };",
	  "for policy `policy0`, unexpected type: expected duration but saw datetime",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { principal.ip < principal.ip };",
	  "for policy `policy0`, unexpected type: expected datetime, or duration, or Long but"
	  " saw ipaddr",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { context.now.offset(context.now) == "
	  "context.now };",
	  "for policy `policy0`, unexpected type: expected duration but saw datetime",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { ip(\"1.2.3.4\") == decimal(\"1.0\") };",
	  "the types decimal and ipaddr are not compatible",
	  false, false },
	{ S_EXT,
	  "permit(principal, action, resource) when { [ip(\"1.2.3.4\"), "
	  "ip(\"::1\")].contains(principal.ip) };",
	  NULL,
	  false, false },
	{ S_ENUM,
	  "permit(principal, action, resource) when { context.c == Color::\"red\" };",
	  NULL,
	  false, false },
	{ S_ENUM,
	  "permit(principal, action, resource) when { context.c == Color::\"purple\" };",
	  "for policy `policy0`: entity `Color::\"purple\"` is of an enumerated entity type, "
	  "but `\"purple\"` is not declared as a valid eid",
	  false, false },
	{ S_ENUM,
	  "permit(principal, action, resource) when { "
	  "principal.tags.contains(Color::\"blue\") && principal.color != Color::\"green\" };",
	  NULL,
	  false, false },
	{ S_ENUM,
	  "permit(principal in Color::\"red\", action, resource);",
	  NULL,
	  true, true },
	{ S_ENUM,
	  "permit(principal == Color::\"red\", action, resource);",
	  NULL,
	  true, true },
	{ S_ENUM,
	  "permit(principal, action, resource) when { context.c in Color::\"red\" };",
	  NULL,
	  false, false },
	{ S_NONE,
	  "permit(principal, action, resource);",
	  NULL,
	  true, true },
	{ S_NONE,
	  "permit(principal, action == Action::\"a\", resource) when { principal.x };",
	  NULL,
	  true, true },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context.n > 1 "
	  "};",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context has n "
	  "&& context.n > 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context has n "
	  "|| context.n > 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { !(context has "
	  "n) || context.n > 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { if context has"
	  " n then context.n > 1 else false };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { if !(context "
	  "has n) then false else context.n > 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context.rec.y "
	  "== \"a\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`rec.y` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context.rec "
	  "has y && context.rec.y == \"a\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action == App::Action::\"read\", resource) when { context has "
	  "rec.y && context.rec.y == \"a\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal.addr.zip == 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr.zip` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal.addr has zip && "
	  "principal.addr.zip == 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has addr2.zip &&"
	  " principal.addr2.zip == 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has addr2 && "
	  "principal.addr2.zip == 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr2.zip` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal.mgr.mgr.name == "
	  "\"a\" };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`mgr` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has mgr && "
	  "principal.mgr has mgr && principal.mgr.mgr.name == \"a\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal in resource };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource is App::Doc) when { resource in "
	  "App::Folder::\"f\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource is App::Doc) when { resource in "
	  "App::Group::\"g\" };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.friends.contains(principal) "
	  "};",
	  "for policy `policy0`, attribute `friends` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.friends.contains(resource) };",
	  "for policy `policy0`, attribute `friends` on entity type `App::Group` not "
	  "found\nthe types App::Doc and App::User are not compatible\nthe types App::Folder "
	  "and App::User are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { "
	  "principal.friends.containsAny([principal]) };",
	  "for policy `policy0`, attribute `friends` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.flags.containsAll([1, 2]) };",
	  "for policy `policy0`, attribute `flags` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.flags.containsAll([\"a\"]) };",
	  "for policy `policy0`, attribute `flags` on entity type `App::Group` not found\nthe"
	  " types Set<Long> and Set<String> are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.flags.isEmpty() };",
	  "for policy `policy0`, attribute `flags` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.name.isEmpty() };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::Any> but "
	  "saw String",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.name like \"a*\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.flags like \"a*\" };",
	  "for policy `policy0`, attribute `flags` on entity type `App::Group` not found\nfor"
	  " policy `policy0`, unexpected type: expected String but saw Set<Long>",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { "
	  "principal.score.lessThan(decimal(\"1.0\")) };",
	  "for policy `policy0`, attribute `score` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.score < decimal(\"1.0\") };",
	  "for policy `policy0`, attribute `score` on entity type `App::Group` not found\nfor"
	  " policy `policy0`, unexpected type: expected datetime, or duration, or Long but "
	  "saw decimal",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.wait < duration(\"1h\") };",
	  "for policy `policy0`, attribute `wait` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.wait < "
	  "datetime(\"2020-01-01\") };",
	  "for policy `policy0`, attribute `wait` on entity type `App::Group` not found\nfor "
	  "policy `policy0`, unexpected type: expected duration but saw datetime",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.now < datetime(\"2020-01-01\") "
	  "};",
	  "for policy `policy0`, attribute `now` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `now` in context for App::Action::\"list\" "
	  "not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.now.offset(principal.wait) > "
	  "context.now };",
	  "for policy `policy0`, attribute `now` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `now` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, attribute `wait` on entity type `App::Group` not "
	  "found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.now.toDate().toTime().toHours()"
	  " > 1 };",
	  "for policy `policy0`, attribute `now` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `now` in context for App::Action::\"list\" "
	  "not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { "
	  "context.ip.isInRange(ip(\"10.0.0.0/8\")) };",
	  "for policy `policy0`, attribute `ip` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `ip` in context for App::Action::\"list\" "
	  "not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.ip.isInRange(principal.ip) };",
	  "for policy `policy0`, attribute `ip` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `ip` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, attribute `ip` on entity type `App::Group` not "
	  "found\nfor policy `policy0`, unable to guarantee safety of access to optional "
	  "attribute `ip` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal has ip && "
	  "context.ip.isInRange(principal.ip) };",
	  "for policy `policy0`, attribute `ip` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `ip` in context for App::Action::\"list\" "
	  "not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.ip.isLoopback(1) };",
	  "for policy `policy0`, attribute `ip` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `ip` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, wrong number of arguments in extension function "
	  "application. Expected 1, got 2",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { decimal(\"1.00000\") == "
	  "decimal(\"1.0\") };",
	  "for policy `policy0`, error during extension function argument validation: failed "
	  "to parse as a decimal value: `\"1.00000\"`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { datetime(\"2020-13-01\") == context.now"
	  " };",
	  "for policy `policy0`, attribute `now` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `now` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, error during extension function argument "
	  "validation: failed to parse as a datetime value: `\"2020-13-01\"`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { duration(\"1x\") == principal.wait };",
	  "for policy `policy0`, attribute `wait` on entity type `App::Group` not found\nfor "
	  "policy `policy0`, error during extension function argument validation: failed to "
	  "parse as a duration value: `\"1x\"`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { ip(principal.name).isIpv4() };",
	  "for policy `policy0`, extension constructors may not be called with non-literal "
	  "expressions",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { ip(1).isIpv4() };",
	  "for policy `policy0`, unexpected type: expected String but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.getTag(\"k\") > 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"k\"` on "
	  "entity type `App::Group`\nfor policy `policy0`, unable to guarantee safety of "
	  "access to tag `\"k\"` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.hasTag(\"k\") && "
	  "principal.getTag(\"k\") > 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.hasTag(principal.name) && "
	  "principal.getTag(principal.name) > 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource is App::Doc) when { resource.hasTag(\"k\") && "
	  "resource.getTag(\"k\") like \"x\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource is App::Folder) when { resource.hasTag(\"k\") "
	  "&& resource.getTag(\"k\") like \"x\" };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource is App::Folder) when { resource.getTag(\"k\") "
	  "like \"x\" };",
	  "for policy `policy0`, unable to guarantee safety of access to tag `\"k\"` on "
	  "entity type `App::Folder`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { resource.hasTag(\"k\") };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.kind == App::Kind::\"a\" };",
	  "for policy `policy0`, attribute `kind` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `kind` in context for App::Action::\"list\""
	  " not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.kind == App::Kind::\"c\" };",
	  "for policy `policy0`, attribute `kind` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `kind` in context for App::Action::\"list\""
	  " not found\nfor policy `policy0`: entity `App::Kind::\"c\"` is of an enumerated "
	  "entity type, but `\"c\"` is not declared as a valid eid",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { [App::Kind::\"a\", "
	  "App::Kind::\"z\"].contains(context.kind) };",
	  "for policy `policy0`, attribute `kind` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `kind` in context for App::Action::\"list\""
	  " not found\nfor policy `policy0`: entity `App::Kind::\"z\"` is of an enumerated "
	  "entity type, but `\"z\"` is not declared as a valid eid",
	  false, false },
	{ S_APP,
	  "permit(principal, action in [App::Action::\"read\", App::Action::\"del\"], "
	  "resource) when { context.kind == App::Kind::\"a\" };",
	  "for policy `policy0`, attribute `kind` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `kind` in context for App::Action::\"list\""
	  " not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action in App::Action::\"admin\", resource) when { "
	  "resource.owner == principal };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`owner` on entity type `App::Folder`",
	  false, false },
	{ S_APP,
	  "permit(principal, action in App::Action::\"admin\", resource is App::Doc) when { "
	  "resource.owner == principal };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { action in App::Action::\"admin\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { action == App::Action::\"del\" && "
	  "context.n == 1 };",
	  "for policy `policy0`, attribute `n` in context for App::Action::\"del\" not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { action == App::Action::\"read\" && "
	  "context.n == 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`n` in context for App::Action::\"read\"",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { action in [App::Action::\"admin\", "
	  "App::Action::\"read\"] && context has n };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { App::Action::\"del\" in "
	  "App::Action::\"admin\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { App::Action::\"read\" in "
	  "App::Action::\"admin\" };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { App::Action::\"read\" in "
	  "App::User::\"u\" };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal == App::User::\"a\" || "
	  "principal == App::Group::\"g\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal == resource };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal != resource };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { if principal is App::User then "
	  "principal.name == \"x\" else false };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal is App::User && "
	  "principal.name == \"x\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.name == \"x\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { {a: 1, b: \"x\"} == {b: \"y\", a: 2} };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { {a: 1} == {a: 1, b: 2} };",
	  "the types {a: Long,} and {a: Long,b: Long,} are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { [1, 2] == [3] };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { [[1], [2, 3]].contains([4]) };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { [1, true].isEmpty() };",
	  "the types __cedar::internal::True and Long are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { [true, false].contains(true) };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1 + \"a\" == 2 };",
	  "for policy `policy0`, unexpected type: expected Long but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { -principal.name == 1 };",
	  "for policy `policy0`, unexpected type: expected Long but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { -(1) == 1 && 2 * 3 - 4 < 5 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr == {street: \"a\"} };",
	  "for policy `policy0`, attribute `addr` on entity type `App::Group` not found\nthe "
	  "types {street: String,} and {street: String,zip?: Long,} are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr == {street: \"a\", zip: "
	  "1} };",
	  "for policy `policy0`, attribute `addr` on entity type `App::Group` not found\nthe "
	  "types {street: String,zip?: Long,} and {street: String,zip: Long,} are not "
	  "compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr2 == principal.addr };",
	  "for policy `policy0`, attribute `addr2` on entity type `App::Group` not found\nfor"
	  " policy `policy0`, attribute `addr` on entity type `App::Group` not found\nfor "
	  "policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr2` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal has addr2 && principal.addr2 "
	  "== principal.addr };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.rec == {x: 1} };",
	  "for policy `policy0`, attribute `rec` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `rec` in context for App::Action::\"list\" "
	  "not found\nthe types {x: Long,} and {x: Long,y?: String,} are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context == {} };",
	  "the types {} and {ip: ipaddr,kind: App::Kind,n?: Long,now: datetime,rec: {x: "
	  "Long,y?: String,},} are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { context.foo.bar == 1 };",
	  "for policy `policy0`, attribute `foo` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `foo` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, attribute `foo` in context for "
	  "App::Action::\"read\" not found\nfor policy `policy0`, attribute `foo` in context "
	  "for App::Action::\"write\" not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr.foo == 1 };",
	  "for policy `policy0`, attribute `addr.foo` on entity type `App::User` not "
	  "found\nfor policy `policy0`, attribute `addr` on entity type `App::Group` not "
	  "found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr.street.foo == 1 };",
	  "for policy `policy0`, attribute `addr` on entity type `App::Group` not found\nfor "
	  "policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1.foo == 1 };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal has foo };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.addr has foo };",
	  "for policy `policy0`, attribute `addr` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1 has foo };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { \"a\" has foo };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1 in principal };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity but "
	  "saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal in 1 };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::AnyEntity>,"
	  " or __cedar::internal::AnyEntity but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal in [1] };",
	  "for policy `policy0`, unexpected type: expected Set<__cedar::internal::AnyEntity>,"
	  " or __cedar::internal::AnyEntity but saw Set<Long>",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal in [principal, resource] };",
	  "the types App::Doc and App::User are not compatible\nthe types App::Folder and "
	  "App::Group are not compatible\nthe types App::Folder and App::User are not "
	  "compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal in principal.friends };",
	  "for policy `policy0`, attribute `friends` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1 is App::User };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity but "
	  "saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { false && 1 };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { true || 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { (1 == 2) && 1 };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal, action, resource) when { if true then 1 else \"a\" };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { if false then 1 else true };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { if principal.name == \"a\" then 1 else "
	  "\"a\" };",
	  "the types Long and String are not compatible",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { if 1 then true else false };",
	  "for policy `policy0`, unexpected type: expected Bool but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) unless { principal.name == \"a\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal.name == \"a\" } unless { "
	  "context.n == 1 };",
	  "for policy `policy0`, attribute `n` in context for App::Action::\"del\" not "
	  "found\nfor policy `policy0`, attribute `n` in context for App::Action::\"list\" "
	  "not found\nfor policy `policy0`, unable to guarantee safety of access to optional "
	  "attribute `n` in context for App::Action::\"read\"\nfor policy `policy0`, unable "
	  "to guarantee safety of access to optional attribute `n` in context for "
	  "App::Action::\"write\"",
	  false, false },
	{ S_APP,
	  "forbid(principal, action, resource) when { "
	  "principal.friends.contains(App::User::\"x\") };",
	  "for policy `policy0`, attribute `friends` on entity type `App::Group` not found",
	  false, false },
	{ S_APP,
	  "permit(principal == App::User::\"a\", action, resource == App::Doc::\"d\");",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal == App::Group::\"a\", action == App::Action::\"read\", resource);",
	  NULL,
	  true, true },
	{ S_APP,
	  "permit(principal in App::Group::\"a\", action == App::Action::\"list\", resource);",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::Group in App::Group::\"a\", action, resource);",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::Doc, action, resource);",
	  NULL,
	  true, true },
	{ S_APP,
	  "permit(principal, action, resource in App::Doc::\"x\");",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has addr2.zip.x "
	  "};",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has "
	  "mgr.mgr.addr2.zip && principal.mgr.mgr.addr2.zip == 1 };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has "
	  "mgr.mgr.addr2.zip && principal.mgr.mgr.addr.zip == 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr.zip` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal.mgr has "
	  "addr2.zip };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`mgr` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal.mgr has "
	  "addr2.zip && principal.mgr.addr2.zip == 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr2.zip` on entity type `App::User`\nfor policy `policy0`, unable to guarantee "
	  "safety of access to optional attribute `addr2` on entity type `App::User`\nfor "
	  "policy `policy0`, unable to guarantee safety of access to optional attribute `mgr`"
	  " on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has nope.zip };",
	  NULL,
	  true, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has name.zip };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { principal has "
	  "addr.street.x };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw String",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { context has rec.x.y };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { context has rec.y && "
	  "context.rec.y like \"\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { context has rec.x && "
	  "context has rec.x };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { (context has rec.x) == "
	  "true };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { !(principal has addr2.zip)"
	  " || principal.addr2.zip > 1 };",
	  "for policy `policy0`, unable to guarantee safety of access to optional attribute "
	  "`addr2.zip` on entity type `App::User`\nfor policy `policy0`, unable to guarantee "
	  "safety of access to optional attribute `addr2` on entity type `App::User`",
	  false, false },
	{ S_APP,
	  "permit(principal is App::User, action, resource) when { if principal has addr2.zip"
	  " then principal.addr2.zip > 1 else false };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal has addr2.zip };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { resource has owner.mgr && "
	  "resource.owner.mgr.name == \"\" };",
	  NULL,
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { 1 has a.b };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Long",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { principal has friends.x };",
	  "for policy `policy0`, unexpected type: expected __cedar::internal::AnyEntity, or "
	  "__cedar::internal::OpenRecord{} but saw Set<App::User>",
	  false, false },
	{ S_APP,
	  "permit(principal, action, resource) when { resource has meta.note && "
	  "resource.meta.note == \"\" };",
	  NULL,
	  false, false },
};

/* --- helpers -------------------------------------------------------------------- */

/* A finished schema from Cedar schema text (NULL: the Box vocabulary). */
static struct dw_schema *schema_of(const char *text)
{
	struct dw_diags d;
	struct dw_schema *s = dw_schema_new();
	int r;

	dw_diags_init(&d);
	if (s == NULL)
		return NULL;
	r = text == NULL ? dw_schema_add_box(s, &d)
			 : dw_schema_add_cedar(s, "test.cedarschema", text, strlen(text), &d);
	if (r == 0)
		r = dw_schema_finish(s, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "schema: %u:%u: %s\n", d.v[i].line, d.v[i].col, d.v[i].msg);
	dw_diags_fini(&d);
	CHECK_EQ_INT(r, 0);
	if (r != 0) {
		dw_schema_free(s);
		return NULL;
	}
	return s;
}

/* Parse, expand and validate policies; the set stays in *ps (free it). */
static int validate_text(const struct dw_schema *s, enum dw_dialect dialect, const char *text,
			 struct dw_policy_set **ps, struct dw_diags *d)
{
	int r;

	dw_diags_init(d);
	*ps = dw_policy_set_new_temporal(dialect);
	if (*ps == NULL)
		return -ENOMEM;
	r = dw_parse_policies(*ps, "test", text, strlen(text), d);
	if (r == 0)
		r = dw_policy_set_expand(*ps, d);
	if (r != 0) {
		for (size_t i = 0; i < d->n; i++)
			fprintf(stderr, "parse: %s\n", d->v[i].msg);
		return -EBADMSG;   /* never dw_validate's answer */
	}
	return dw_validate(*ps, s, d);
}

static size_t count_sev(const struct dw_diags *d, enum dw_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->v[i].sev == sev;
	return n;
}

/* Distinct messages of severity sev (Cedar's answer is a set of errors; one
 * message may be found at two places). */
static size_t count_distinct(const struct dw_diags *d, enum dw_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++) {
		bool seen = false;

		if (d->v[i].sev != sev)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = d->v[j].sev == sev && strcmp(d->v[j].msg, d->v[i].msg) == 0;
		n += !seen;
	}
	return n;
}

/* The diagnostic of severity sev whose message is exactly msg, or NULL. */
static const struct dw_diag *find_msg(const struct dw_diags *d, enum dw_severity sev,
				      const char *msg)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].sev == sev && strcmp(d->v[i].msg, msg) == 0)
			return &d->v[i];
	return NULL;
}

/* Some diagnostic of severity sev containing sub. */
static const struct dw_diag *find_sub(const struct dw_diags *d, enum dw_severity sev,
				      const char *sub)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].sev == sev && strstr(d->v[i].msg, sub) != NULL)
			return &d->v[i];
	return NULL;
}

static void dump(const char *what, const struct dw_diags *d)
{
	fprintf(stderr, "  %s\n", what);
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "    %s [%u,%u] policy %u: %s\n",
			d->v[i].sev == DW_SEV_ERROR ? "error" : "warning", d->v[i].off, d->v[i].end,
			d->v[i].policy, d->v[i].msg);
}

/* The text src[d->off, d->end) of a diagnostic. */
static bool span_is(const char *src, const struct dw_diag *g, const char *want)
{
	size_t n = strlen(want);

	return g != NULL && g->end - g->off == n && memcmp(src + g->off, want, n) == 0;
}

/* --- the table ----------------------------------------------------------------- */

/* Same validity, the same set of error messages as Cedar, and its warnings. */
static void check_case(const struct vcase *c, const struct dw_schema *s, size_t k)
{
	struct dw_policy_set *ps;
	struct dw_diags d;
	int r = validate_text(s, DW_DIALECT_CEDAR, c->policy, &ps, &d);
	size_t want = 0, failed = test_failed;

	CHECK_EQ_INT(r, c->errors == NULL ? 0 : -EINVAL);
	if (c->errors != NULL) {
		const char *p = c->errors;

		while (*p != '\0') {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			char msg[1024];

			snprintf(msg, sizeof msg, "%.*s", (int)n, p);
			want++;
			if (find_msg(&d, DW_SEV_ERROR, msg) == NULL) {
				fprintf(stderr, "  missing error: %s\n", msg);
				CHECK(false);
			}
			p += n + (nl != NULL);
		}
	}
	CHECK_EQ_INT(count_distinct(&d, DW_SEV_ERROR), want);
	CHECK((find_sub(&d, DW_SEV_WARNING, "policy is impossible") != NULL) == c->impossible);
	CHECK((find_sub(&d, DW_SEV_WARNING, "unable to find an applicable action") != NULL) ==
	      c->no_action);
	for (size_t i = 0; i < d.n; i++)
		CHECK_EQ_INT(d.v[i].policy, 1);   /* rule index 0, marked on every diagnostic */
	if (test_failed != failed) {
		fprintf(stderr, "  case %zu: %s\n", k, c->policy);
		dump("diagnostics", &d);
	}
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
}

static void test_table(void)
{
	struct dw_schema *s[S__COUNT];

	for (int i = 0; i < S__COUNT; i++)
		s[i] = schema_of(schema_text[i]);
	for (size_t k = 0; k < DW_N_ELEMENTS(cases); k++)
		if (s[cases[k].schema] != NULL)
			check_case(&cases[k], s[cases[k].schema], k);
	for (int i = 0; i < S__COUNT; i++)
		dw_schema_free(s[i]);
}

/* --- the Cedar conformance cases -------------------------------------------- */

static const char *const testdata_dirs[] = {
	"corpus-gettag-missing", "corpus-overflow-add", "corpus-overflow-mul", "decimal-1",
	"decimal-2", "example-2c", "example-4d", "example-5b", "ip-2", "ip-3", "multi-2",
	"multi-4", "multi-5",
};

/* Validation agrees with each test's shouldValidate (all true but
 * corpus-gettag-missing, whose getTag is not guarded). */
static void test_testdata(void)
{
	for (size_t k = 0; k < DW_N_ELEMENTS(testdata_dirs); k++) {
		char path[512];
		char *schema_src, *pol, *test;
		size_t n;
		struct dw_schema *s;
		struct dw_policy_set *ps = NULL;
		struct dw_diags d;
		int r;
		bool should;

		snprintf(path, sizeof path, TESTDATA "/%s/schema.cedarschema", testdata_dirs[k]);
		schema_src = test_read_file(path, &n);
		snprintf(path, sizeof path, TESTDATA "/%s/policies.cedar", testdata_dirs[k]);
		pol = test_read_file(path, &n);
		snprintf(path, sizeof path, TESTDATA "/%s/test.json", testdata_dirs[k]);
		test = test_read_file(path, &n);
		CHECK(schema_src != NULL && pol != NULL && test != NULL);
		if (schema_src == NULL || pol == NULL || test == NULL) {
			free(schema_src);
			free(pol);
			free(test);
			continue;
		}
		should = strstr(test, "\"shouldValidate\": true") != NULL;
		CHECK(should || strstr(test, "\"shouldValidate\": false") != NULL);
		s = schema_of(schema_src);
		if (s != NULL) {
			r = validate_text(s, DW_DIALECT_CEDAR, pol, &ps, &d);
			CHECK_EQ_INT(r, should ? 0 : -EINVAL);
			if (r != (should ? 0 : -EINVAL))
				dump(testdata_dirs[k], &d);
			dw_diags_fini(&d);
			dw_policy_set_free(ps);
		}
		dw_schema_free(s);
		free(schema_src);
		free(pol);
		free(test);
	}
}

/* --- Dogwood policies against the Box vocabulary -------------------------------- */

/* The load refusals Box documents are Cedar's messages (docs/policy-reference.md §1). */
static void test_box_refusals(void)
{
	static const char src[] =
		"permit (principal, action == Box::Action::\"fs:raed\", resource);\n"
		"permit (principal, action == Box::Action::\"fs:read\", resource)\n"
		"when { context.input.paht like \"~/project/*\" };\n"
		"forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
		"when { context.input.operation == Box::FsReadOperation::\"list\" };\n"
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when { context.input.program == \"rm\" && context.input.arg1 == \"-rf\" };\n"
		"forbid (principal, action == Box::Action::\"fs:read\", resource)\n"
		"when { context.input.operation == Box::FsWriteOperation::\"write_content\" };\n"
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when { context.input has arg1 && context.input.arg1 == \"-rf\" };\n";
	struct dw_schema *s = schema_of(NULL);
	struct dw_policy_set *ps;
	struct dw_diags d;
	const struct dw_diag *g;

	if (s == NULL)
		return;
	CHECK_EQ_INT(validate_text(s, DW_DIALECT_DOGWOOD, src, &ps, &d), -EINVAL);
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy_0`, unrecognized action "
		     "`Box::Action::\"fs:raed\"`");
	CHECK(g != NULL && g->policy == 1 && span_is(src, g, "Box::Action::\"fs:raed\""));
	g = find_msg(&d, DW_SEV_WARNING, "for policy `policy_0`, unable to find an applicable "
		     "action given the policy scope constraints");
	CHECK(g != NULL && g->policy == 1);
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy_1`, attribute `input.paht` in context "
		     "for Box::Action::\"fs:read\" not found");
	CHECK(g != NULL && g->policy == 2 && span_is(src, g, "context.input.paht"));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy_2`: entity "
		     "`Box::FsReadOperation::\"list\"` is of an enumerated entity type, but "
		     "`\"list\"` is not declared as a valid eid");
	CHECK(g != NULL && g->policy == 3 && span_is(src, g, "Box::FsReadOperation::\"list\""));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy_3`, unable to guarantee safety of "
		     "access to optional attribute `input.arg1` in context for "
		     "Box::Action::\"shell:exec\"");
	CHECK(g != NULL && g->policy == 4 && span_is(src, g, "context.input.arg1"));
	/* a value of another action's enum never matches: inert, a warning only */
	g = find_sub(&d, DW_SEV_WARNING, "for policy `policy_4`, policy is impossible");
	CHECK(g != NULL && g->policy == 5);
	for (size_t i = 0; i < d.n; i++)
		CHECK(d.v[i].policy != 6);   /* the guarded read is fine */
	CHECK_EQ_INT(count_sev(&d, DW_SEV_ERROR), 4);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(s);
}

/* Temporal leaves are Booleans; a Dogwood macro is checked once expanded. */
static void test_dogwood(void)
{
	static const char ok[] =
		"def cedar is_rm(?p) { ?p == \"rm\" };\n"
		"forbid (principal, action == Box::Action::\"fs:write\", resource)\n"
		"when temporal {\n"
		"  formerly within 60s ( Box::Action::\"fs:write\"::response{ input.path: _ } )\n"
		"};\n"
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when { is_rm(context.input.program) && temporal { formerly within 60s "
		"( Box::Action::\"fs:write\"::response{ input.path: _ } ) } };\n";
	static const char bad[] =
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when { temporal { formerly within 60s ( Box::Action::\"fs:write\"::response"
		"{ input.path: _ } ) } == 1 };\n"
		"forbid (principal, action == Box::Action::\"shell:exec\", resource)\n"
		"when { context.input.arg_count + 1 > 2 && context.input.programm == \"x\" };\n";
	struct dw_schema *s = schema_of(NULL);
	struct dw_policy_set *ps;
	struct dw_diags d;
	int r;

	if (s == NULL)
		return;
	r = validate_text(s, DW_DIALECT_DOGWOOD, ok, &ps, &d);
	CHECK_EQ_INT(r, 0);
	if (r != 0)
		dump("dogwood ok", &d);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);

	r = validate_text(s, DW_DIALECT_DOGWOOD, bad, &ps, &d);
	CHECK_EQ_INT(r, -EINVAL);
	CHECK(find_msg(&d, DW_SEV_ERROR, "the types Bool and Long are not compatible") != NULL);
	CHECK(find_msg(&d, DW_SEV_ERROR, "for policy `policy_1`, attribute `input.programm` in "
		       "context for Box::Action::\"shell:exec\" not found") != NULL);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(s);
}

/* --- locations, one report per policy, several policies ---------------------- */

static const char loc_schema[] =
	"entity G;\n"
	"entity U in [G] { rec: { x?: Long }, mgr?: U, n: Long };\n"
	"entity V in [G] { n: Long };\n"
	"action a, b appliesTo { principal: [U, V], resource: [U], context: { c?: Long } };\n";

static void test_locations(void)
{
	static const char src[] =
		"permit(principal is U, action, resource) when { principal.rec.x == 1 };\n"
		"permit(principal is U, action, resource) when { principal.mgr.n == 1 };\n"
		"permit(principal == Nope::\"x\", action, resource);\n"
		"permit(principal, action, resource) when { principal is Nope::T };\n"
		"permit(principal, action in [Action::\"a\", Action::\"zz\"], resource);\n"
		"permit(principal, action, resource) when { context.c > 0 };\n"
		"permit(principal, action, resource) when { ip(\"1.2.3\").isIpv4() };\n";
	struct dw_schema *s = schema_of(loc_schema);
	struct dw_policy_set *ps;
	struct dw_diags d;
	const struct dw_diag *g;

	if (s == NULL)
		return;
	CHECK_EQ_INT(validate_text(s, DW_DIALECT_CEDAR, src, &ps, &d), -EINVAL);
	/* every access of a chain is located at the whole chain, as in Cedar */
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy0`, unable to guarantee safety of "
		     "access to optional attribute `rec.x` on entity type `U`");
	CHECK(span_is(src, g, "principal.rec.x"));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy1`, unable to guarantee safety of "
		     "access to optional attribute `mgr` on entity type `U`");
	CHECK(span_is(src, g, "principal.mgr.n"));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy2`, unrecognized entity type `Nope`");
	CHECK(span_is(src, g, "Nope"));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy3`, unrecognized entity type `Nope::T`");
	CHECK(span_is(src, g, "Nope::T"));
	g = find_msg(&d, DW_SEV_ERROR, "for policy `policy4`, unrecognized action "
		     "`Action::\"zz\"`");
	CHECK(span_is(src, g, "Action::\"zz\""));
	CHECK(g != NULL && g->line == 5);
	/* found in four environments (two actions, two principal types), reported
	 * once per action: the message names the action */
	{
		size_t n = 0;

		for (size_t i = 0; i < d.n; i++)
			n += strstr(d.v[i].msg, "optional attribute `c` in context for Action::\"a\"") !=
			     NULL;
		CHECK_EQ_INT(n, 1);
		g = find_sub(&d, DW_SEV_ERROR, "optional attribute `c` in context for Action::\"b\"");
		CHECK(span_is(src, g, "context.c"));
	}
	g = find_sub(&d, DW_SEV_ERROR, "failed to parse as IP address: `\"1.2.3\"`");
	CHECK(span_is(src, g, "ip(\"1.2.3\").isIpv4()"));
	for (size_t i = 0; i < d.n; i++)
		CHECK(d.v[i].policy >= 1 && d.v[i].policy <= 7);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(s);
}

/* --- templates, nesting, shapes of input ------------------------------------ */

static void test_templates(void)
{
	static const char src[] =
		"permit(principal == ?principal, action, resource) when { principal.n > 0 };\n"
		"permit(principal in ?principal, action, resource in ?resource) when { resource.rec has x };\n"
		"permit(principal is V in ?principal, action == Action::\"a\", resource) "
		"when { principal.rec.x == 1 };\n";
	struct dw_schema *s = schema_of(loc_schema);
	struct dw_policy_set *ps;
	struct dw_diags d;

	if (s == NULL)
		return;
	/* V has no `rec` (Cedar 4.13 answers the same for these templates) */
	CHECK_EQ_INT(validate_text(s, DW_DIALECT_CEDAR, src, &ps, &d), -EINVAL);
	CHECK(find_msg(&d, DW_SEV_ERROR, "for policy `policy2`, attribute `rec` on entity type "
		       "`V` not found") != NULL);
	CHECK_EQ_INT(count_sev(&d, DW_SEV_ERROR), 1);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(s);
}

/* Deep and long expressions: bounded recursion, no crash, Cedar's answers. */
static void test_deep(void)
{
	struct dw_schema *s = schema_of(loc_schema);
	struct dw_policy_set *ps;
	struct dw_diags d;
	size_t cap = 1 << 18, n = 0;
	char *src = malloc(cap);
	int r;

	if (s == NULL || src == NULL) {
		dw_schema_free(s);
		free(src);
		return;
	}
	/* nested `if`s as deep as the parser takes them, each guard used inside */
	n += (size_t)snprintf(src + n, cap - n, "permit(principal is U, action, resource) when { ");
	for (int i = 0; i < 60; i++)
		n += (size_t)snprintf(src + n, cap - n, "(if principal has mgr then ");
	n += (size_t)snprintf(src + n, cap - n, "principal.mgr.n > 0");
	for (int i = 0; i < 60; i++)
		n += (size_t)snprintf(src + n, cap - n, " else false)");
	n += (size_t)snprintf(src + n, cap - n, " };\n");
	r = validate_text(s, DW_DIALECT_CEDAR, src, &ps, &d);
	CHECK_EQ_INT(r, 0);
	if (r != 0)
		dump("deep if", &d);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);

	/* 300 conjuncts, each a guarded access: capabilities pile up */
	n = 0;
	n += (size_t)snprintf(src + n, cap - n, "permit(principal is U, action, resource) when { "
			      "true");
	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(src + n, cap - n, " && (principal has mgr && "
				      "principal.mgr.n > %d)", i);
	n += (size_t)snprintf(src + n, cap - n, " && principal.mgr.n > 0 };\n");
	r = validate_text(s, DW_DIALECT_CEDAR, src, &ps, &d);
	CHECK_EQ_INT(r, 0);
	if (r != 0)
		dump("long and", &d);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);

	/* a long extended `has` chain on a record, and a long literal set */
	n = 0;
	n += (size_t)snprintf(src + n, cap - n, "permit(principal, action, resource) when { "
			      "{a: {a: {a: 1}}} has a.a.a && [");
	for (int i = 0; i < 3000; i++)
		n += (size_t)snprintf(src + n, cap - n, "%s%d", i ? ", " : "", i);
	n += (size_t)snprintf(src + n, cap - n, ", \"x\"].isEmpty() };\n");
	r = validate_text(s, DW_DIALECT_CEDAR, src, &ps, &d);
	CHECK_EQ_INT(r, -EINVAL);
	CHECK(find_msg(&d, DW_SEV_ERROR, "the types Long and String are not compatible") != NULL);
	CHECK_EQ_INT(count_sev(&d, DW_SEV_ERROR), 1);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	free(src);
	dw_schema_free(s);
}

/* A schema in JSON form types the same; a schema that is not finished is refused. */
static void test_json_schema(void)
{
	static const char json[] =
		"{\"\": {\"entityTypes\": {\"User\": {\"shape\": {\"type\": \"Record\", \"attributes\": "
		"{\"age\": {\"type\": \"Long\", \"required\": false}}}}}, \"actions\": {\"view\": "
		"{\"appliesTo\": {\"principalTypes\": [\"User\"], \"resourceTypes\": [\"User\"]}}}}}";
	struct dw_diags d;
	struct dw_schema *s = dw_schema_new(), *unfinished = dw_schema_new();
	struct dw_policy_set *ps;
	int r;

	dw_diags_init(&d);
	r = dw_schema_add_json(s, "s.json", json, strlen(json), &d);
	if (r == 0)
		r = dw_schema_finish(s, &d);
	CHECK_EQ_INT(r, 0);
	dw_diags_fini(&d);
	if (r == 0) {
		CHECK_EQ_INT(validate_text(s, DW_DIALECT_CEDAR, "permit(principal, action, resource) "
					   "when { principal.age > 1 };", &ps, &d), -EINVAL);
		CHECK(find_msg(&d, DW_SEV_ERROR, "for policy `policy0`, unable to guarantee safety "
			       "of access to optional attribute `age` on entity type `User`") != NULL);
		dw_diags_fini(&d);
		dw_policy_set_free(ps);
		CHECK_EQ_INT(validate_text(s, DW_DIALECT_CEDAR, "permit(principal, action, resource) "
					   "when { principal has age && principal.age > 1 };", &ps,
					   &d), 0);
		CHECK_EQ_INT(d.n, 0);
		dw_diags_fini(&d);
		dw_policy_set_free(ps);
	}
	CHECK_EQ_INT(validate_text(unfinished, DW_DIALECT_CEDAR, "permit(principal, action, "
				   "resource);", &ps, &d), -EINVAL);
	CHECK(find_msg(&d, DW_SEV_ERROR, "validate: the schema is not finished") != NULL);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(unfinished);
	dw_schema_free(s);
}

/* An enumerated type may repeat an id and hold the empty one (Cedar accepts
 * both); a policy naming that id validates. */
static void test_enum_repeats(void)
{
	struct dw_schema *s = schema_of("entity A enum [\"\", \"\"];\n"
					"action a appliesTo { principal: A, resource: A };\n");
	struct dw_policy_set *ps = NULL;
	struct dw_diags d;

	if (s == NULL)
		return;
	CHECK_EQ_INT(validate_text(s, DW_DIALECT_CEDAR, "permit(principal == A::\"\", "
				   "action == Action::\"a\", resource);", &ps, &d), 0);
	if (d.n != 0)
		dump("enum_repeats", &d);
	CHECK_EQ_INT(d.n, 0);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	CHECK(validate_text(s, DW_DIALECT_CEDAR, "permit(principal == A::\"x\", "
			    "action == Action::\"a\", resource);", &ps, &d) == -EINVAL);
	CHECK(find_sub(&d, DW_SEV_ERROR, "is not declared as a valid eid") != NULL);
	dw_diags_fini(&d);
	dw_policy_set_free(ps);
	dw_schema_free(s);
}

static const struct test_case tests[] = {
	{ "table", test_table },
	{ "testdata", test_testdata },
	{ "box_refusals", test_box_refusals },
	{ "dogwood", test_dogwood },
	{ "locations", test_locations },
	{ "templates", test_templates },
	{ "deep", test_deep },
	{ "json_schema", test_json_schema },
	{ "enum_repeats", test_enum_repeats },
};

TEST_MAIN(tests)
