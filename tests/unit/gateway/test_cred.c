/* test_cred.c - the gateway's credentials (src/gateway/cred.c): header
 * lists, phantoms, route matching, the five injection kinds, per-sandbox
 * scoping, AWS profiles and response scrubbing; and the route table the
 * supervisor builds (src/gateway/cred_table.c): phantoms handed over,
 * secrets read from the environment, the sandbox's variables.
 *
 * Routes come from a real box.toml text through box_config_load, except
 * where a case needs destinations box.toml refuses (overlaps): those are
 * built by hand.  AWS profile files live under a mkdtemp root; the
 * operator's real home takes no part. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "boxconf.h"
#include "cred.h"
#include "sigv4.h"
#include "test.h"

#define CONFIG \
	"name = \"b\"\nbox_dir = \"/var/lib/b\"\n" \
	"[egress.github]\n" \
	"destinations = [\"api.github.com\", \"uploads.github.com/*/upload\"]\n" \
	"secret.ref = \"env://GITHUB_TOKEN\"\n" \
	"[egress.anthropic]\n" \
	"destinations = [\"api.anthropic.com/v1\"]\n" \
	"secret.ref = \"env://ANTHROPIC_API_KEY\"\n" \
	"secret.header = \"x-api-key\"\n" \
	"secret.phantom_prefix = \"sk-ant-\"\n" \
	"[egress.basic]\n" \
	"destinations = [\"*.basic.example:8443\"]\n" \
	"secret.ref = \"env://BASIC_PAIR\"\n" \
	"secret.placement = \"basic_auth\"\n" \
	"[egress.maps]\n" \
	"destinations = [\"maps.example.com/api/\"]\n" \
	"secret.ref = \"env://MAPS_KEY\"\n" \
	"secret.placement = \"query_param\"\n" \
	"secret.param = \"api_key\"\n" \
	"[egress.always]\n" \
	"destinations = [\"always.example.com\"]\n" \
	"secret.ref = \"env://ALWAYS_TOKEN\"\n" \
	"secret.inject = \"always\"\n" \
	"[egress.aws]\n" \
	"destinations = [\"*.amazonaws.com\"]\n" \
	"secret.ref = \"aws://dev\"\n" \
	"[agent]\ncommand = [\"agent\"]\n" \
	"[tool.gh]\ncommand = [\"gh\"]\negress = [\"github\"]\n" \
	"[tool.free]\ncommand = [\"free\"]\n"

enum { R_GITHUB, R_ANTHROPIC, R_BASIC, R_MAPS, R_ALWAYS, R_AWS };

#define GH_SECRET "ghp_REALSECRETVALUE0123456789"
#define ANT_SECRET "sk-ant-api03-REAL"
#define BASIC_SECRET "alice:s3cr3t pass"
#define MAPS_SECRET "maps key/with+stuff"
#define ALWAYS_SECRET "always-real"

static struct box_config *cfg;
static struct gw_cred_table *tab;

static void setup(void)
{
	struct box_config_error e;
	char err[256];
	static const char *const secrets[] = { GH_SECRET, ANT_SECRET, BASIC_SECRET, MAPS_SECRET,
					       ALWAYS_SECRET };

	if (box_config_load("/cfg/box.toml", CONFIG, strlen(CONFIG), "/home/op", &cfg, &e) != 0) {
		fprintf(stderr, "config: %s: %s\n", e.where, e.msg);
		exit(2);
	}
	if (gw_cred_table_new(&tab) != 0 || gw_cred_table_from_config(tab, cfg, err, sizeof err) != 0) {
		fprintf(stderr, "table: %s\n", err);
		exit(2);
	}
	for (size_t i = 0; i < 5; i++)
		if (gw_cred_table_set_secret(tab, i, secrets[i], err, sizeof err) != 0) {
			fprintf(stderr, "secret: %s\n", err);
			exit(2);
		}
}

static const char *ph_of(const struct gw_cred_table *t, size_t route)
{
	const char *p = gw_cred_route_phantom(t, route);

	return p ? p : "(none)";
}

static const char *ph(size_t route)
{
	return gw_cred_route_phantom(tab, route);
}

static void hadd(struct gw_hdrs *h, const char *n, const char *v)
{
	CHECK_EQ_INT(gw_hdrs_add(h, n, strlen(n), v, strlen(v)), 0);
}

/* ---- header lists ---------------------------------------------------------- */

static void test_hdrs(void)
{
	struct gw_hdrs h, c;

	gw_hdrs_init(&h);
	hadd(&h, "Host", "a");
	hadd(&h, "X-A", "1");
	hadd(&h, "x-a", "2");
	hadd(&h, "Other", "o");
	CHECK_EQ_STR(gw_hdrs_get(&h, "x-A"), "1");
	CHECK_EQ_INT(gw_hdrs_find(&h, "X-A", 2), 2);
	CHECK(gw_hdrs_get(&h, "missing") == NULL);
	CHECK_EQ_INT(gw_hdrs_add(&h, "Bad", 3, "a\r\nInjected: 1", 14), -EINVAL);
	CHECK_EQ_INT(gw_hdrs_add(&h, "Ba:d", 4, "v", 1), -EINVAL);
	CHECK_EQ_INT(gw_hdrs_add(&h, "", 0, "v", 1), -EINVAL);
	CHECK_EQ_INT(h.n, 4);
	/* set: the first keeps its place, the second goes. */
	CHECK_EQ_INT(gw_hdrs_set(&h, "x-a", "new"), 0);
	CHECK_EQ_INT(h.n, 3);
	CHECK_EQ_STR(h.v[1].name, "X-A");
	CHECK_EQ_STR(h.v[1].value, "new");
	CHECK_EQ_STR(h.v[2].name, "Other");
	CHECK_EQ_INT(gw_hdrs_set(&h, "Added", "z"), 0);
	CHECK_EQ_STR(h.v[3].value, "z");
	CHECK_EQ_INT(gw_hdrs_copy(&c, &h), 0);
	CHECK_EQ_INT(gw_hdrs_remove(&h, "x-a"), 1);
	CHECK_EQ_INT(gw_hdrs_remove(&h, "x-a"), 0);
	CHECK_EQ_INT(c.n, 4);
	CHECK_EQ_STR(gw_hdrs_get(&c, "X-a"), "new");
	gw_hdrs_clear(&h);
	gw_hdrs_clear(&c);
	CHECK_EQ_INT(h.n, 0);
}

/* ---- phantoms ---------------------------------------------------------------- */

static bool phantom_shape(const char *p, const char *prefix)
{
	size_t pl = strlen(prefix);

	if (p == NULL || strncmp(p, prefix, pl) != 0 || strlen(p) != pl + 64)
		return false;
	for (const char *c = p + pl; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

static void test_phantoms(void)
{
	char a[GW_PHANTOM_MAX + 1], b[GW_PHANTOM_MAX + 1], small[20];

	CHECK_EQ_INT(gw_cred_phantom_new("strands_box_", a, sizeof a), 0);
	CHECK_EQ_INT(gw_cred_phantom_new("strands_box_", b, sizeof b), 0);
	CHECK(phantom_shape(a, "strands_box_"));
	CHECK(strcmp(a, b) != 0);
	CHECK_EQ_INT(gw_cred_phantom_new("bad prefix", a, sizeof a), -EINVAL);
	CHECK_EQ_INT(gw_cred_phantom_new("", a, sizeof a), -EINVAL);
	CHECK_EQ_INT(gw_cred_phantom_new("p", small, sizeof small), -ENOSPC);

	/* One per env:// route, unique, with the route's prefix; none for aws. */
	CHECK_EQ_INT(gw_cred_table_count(tab), 6);
	CHECK(phantom_shape(ph(R_GITHUB), "strands_box_"));
	CHECK(phantom_shape(ph(R_ANTHROPIC), "sk-ant-"));
	for (size_t i = 0; i < 5; i++)
		for (size_t j = i + 1; j < 5; j++)
			CHECK(strcmp(ph(i), ph(j)) != 0);
	CHECK(ph(R_AWS) == NULL);
	CHECK_EQ_STR(gw_cred_route_env_name(tab, R_GITHUB), "GITHUB_TOKEN");
	CHECK(gw_cred_route_env_name(tab, R_AWS) == NULL);
	CHECK_EQ_STR(gw_cred_route_name(tab, R_MAPS), "maps");

	/* Box's secret rules. */
	CHECK_EQ_INT(gw_cred_table_set_secret(tab, R_GITHUB, "", NULL, 0), -EINVAL);
	CHECK_EQ_INT(gw_cred_table_set_secret(tab, R_GITHUB, "   ", NULL, 0), -EINVAL);
	CHECK_EQ_INT(gw_cred_table_set_secret(tab, R_GITHUB, "a\nb", NULL, 0), -EINVAL);
	CHECK_EQ_INT(gw_cred_table_set_secret(tab, R_AWS, "x", NULL, 0), -EINVAL);
}

/* ---- the route table as the supervisor builds it (cred_table.c) ------------- */

/* Two routes that share a phantom prefix, one with its own, a signed route
 * and an http MCP server with a secret: route i is the i-th table below. */
#define TABLE_CONFIG \
	"name = \"t\"\nbox_dir = \"/var/lib/t\"\n" \
	"[egress.one]\n" \
	"destinations = [\"one.example.com\"]\n" \
	"secret.ref = \"env://CAIRN_TEST_ONE\"\n" \
	"secret.phantom_prefix = \"same_\"\n" \
	"[egress.two]\n" \
	"destinations = [\"two.example.com\"]\n" \
	"secret.ref = \"env://CAIRN_TEST_TWO\"\n" \
	"secret.phantom_prefix = \"same_\"\n" \
	"[egress.three]\n" \
	"destinations = [\"three.example.com\"]\n" \
	"secret.ref = \"env://CAIRN_TEST_THREE\"\n" \
	"secret.header = \"x-api-key\"\n" \
	"secret.phantom_prefix = \"sk-x-\"\n" \
	"[egress.cloud]\n" \
	"destinations = [\"*.amazonaws.com\"]\n" \
	"secret.ref = \"aws://dev\"\n" \
	"[mcp.docs]\ntype = \"http\"\ndestinations = [\"mcp.example.com\"]\n" \
	"secret.ref = \"env://CAIRN_TEST_MCP\"\n" \
	"[agent]\ncommand = [\"agent\"]\n"

enum { T_ONE, T_TWO, T_THREE, T_CLOUD, T_DOCS, T_N };

static const char *const table_vars[] = { "CAIRN_TEST_ONE", "CAIRN_TEST_TWO", "CAIRN_TEST_THREE",
					  "CAIRN_TEST_MCP" };

/* A table built from text as the supervisor builds it, or NULL. */
static struct gw_cred_table *load_table(const char *text, struct box_config **c)
{
	struct box_config_error e;
	struct gw_cred_table *t = NULL;
	char err[256];

	*c = NULL;
	if (box_config_load("/cfg/box.toml", text, strlen(text), "/home/op", c, &e) != 0) {
		fprintf(stderr, "config: %s: %s\n", e.where, e.msg);
		return NULL;
	}
	if (gw_cred_table_new(&t) != 0 || gw_cred_table_from_config(t, *c, err, sizeof err) != 0) {
		fprintf(stderr, "table: %s\n", err);
		gw_cred_table_free(t);
		return NULL;
	}
	return t;
}

/* set_phantom refuses phantom for route i with its message, and leaves the
 * route's phantom as it was. */
static void phantom_refused(struct gw_cred_table *t, size_t i, const char *phantom,
			    const char *what)
{
	const char *before = gw_cred_route_phantom(t, i);
	char was[GW_PHANTOM_MAX + 1] = "", err[256] = "", want[128];
	int rc;

	if (before != NULL)
		snprintf(was, sizeof was, "%s", before);
	rc = gw_cred_table_set_phantom(t, i, phantom, err, sizeof err);
	if (rc != -EINVAL)
		fprintf(stderr, "set_phantom accepted %s (rc %d)\n", what, rc);
	CHECK_EQ_INT(rc, -EINVAL);
	if (i < gw_cred_table_count(t) && gw_cred_route_phantom(t, i) != NULL) {
		snprintf(want, sizeof want, "credential route %s: not a phantom of its own",
			 gw_cred_route_name(t, i));
		CHECK_EQ_STR(err, want);
		CHECK_EQ_STR(gw_cred_route_phantom(t, i), was);
	} else {
		CHECK(err[0] != '\0');
		CHECK(gw_cred_route_phantom(t, i) == NULL);
	}
}

static void test_table_set_phantom(void)
{
	struct box_config *c;
	struct gw_cred_table *t = load_table(TABLE_CONFIG, &c);
	char fresh[GW_PHANTOM_MAX + 1], p[GW_PHANTOM_MAX + 8], other[GW_PHANTOM_MAX + 1];
	char err[256];
	size_t pl = strlen("same_");

	CHECK(t != NULL);
	if (t == NULL)
		goto out;
	CHECK_EQ_INT(gw_cred_table_count(t), T_N);

	/* A fresh phantom with the route's prefix: taken, and what the route has now. */
	CHECK_EQ_INT(gw_cred_phantom_new("same_", fresh, sizeof fresh), 0);
	CHECK(strcmp(fresh, ph_of(t, T_ONE)) != 0);
	CHECK_EQ_INT(gw_cred_table_set_phantom(t, T_ONE, fresh, err, sizeof err), 0);
	CHECK_EQ_STR(gw_cred_route_phantom(t, T_ONE), fresh);
	CHECK_EQ_INT(gw_cred_table_set_phantom(t, T_ONE, fresh, err, sizeof err), 0);  /* its own */
	CHECK_EQ_INT(gw_cred_phantom_new("strands_box_", p, sizeof p), 0);    /* the default */
	CHECK_EQ_INT(gw_cred_table_set_phantom(t, T_DOCS, p, err, sizeof err), 0);
	CHECK_EQ_STR(gw_cred_route_phantom(t, T_DOCS), p);

	/* the wrong prefix: another route's, a case change, none */
	CHECK_EQ_INT(gw_cred_phantom_new("sk-x-", p, sizeof p), 0);
	phantom_refused(t, T_ONE, p, "another route's prefix");
	snprintf(p, sizeof p, "SAME_%s", fresh + pl);
	phantom_refused(t, T_ONE, p, "the prefix in upper case");
	phantom_refused(t, T_ONE, fresh + pl, "the hex without its prefix");
	snprintf(p, sizeof p, "same%s", fresh + pl);
	phantom_refused(t, T_ONE, p, "a prefix one short");

	/* the wrong length */
	snprintf(p, sizeof p, "%.*s", (int)strlen(fresh) - 1, fresh);
	phantom_refused(t, T_ONE, p, "63 hex digits");
	snprintf(p, sizeof p, "%s0", fresh);
	phantom_refused(t, T_ONE, p, "65 hex digits");
	phantom_refused(t, T_ONE, "same_", "the prefix alone");
	phantom_refused(t, T_ONE, "", "the empty string");
	phantom_refused(t, T_ONE, NULL, "NULL");

	/* upper-case hex, a non-hex character */
	snprintf(p, sizeof p, "%s", fresh);
	p[pl] = 'A';
	phantom_refused(t, T_ONE, p, "an upper-case hex digit");
	for (const char *bad = "gG -\n\x7f"; *bad; bad++) {
		snprintf(p, sizeof p, "%s", fresh);
		p[strlen(p) - 1] = *bad;
		phantom_refused(t, T_ONE, p, "a non-hex character");
	}

	/* another route's phantom, of the same shape: each is bound to one route */
	snprintf(other, sizeof other, "%s", ph_of(t, T_TWO));
	phantom_refused(t, T_ONE, other, "route two's phantom");
	phantom_refused(t, T_TWO, fresh, "route one's phantom");

	/* a signed route takes none; nor a route that does not exist */
	CHECK_EQ_INT(gw_cred_phantom_new("same_", p, sizeof p), 0);
	phantom_refused(t, T_CLOUD, p, "a phantom for the aws:// route");
	phantom_refused(t, T_CLOUD, "", "an empty phantom for the aws:// route");
	phantom_refused(t, T_N, p, "a route past the end");

	/* what the sandbox gets follows the phantom set */
	{
		char *env[8];
		size_t n = 0;
		char want[GW_PHANTOM_MAX + 32];

		CHECK_EQ_INT(gw_cred_sandbox_env(t, env, 8, &n), 0);
		snprintf(want, sizeof want, "CAIRN_TEST_ONE=%s", fresh);
		CHECK(n > 0 && strcmp(env[0], want) == 0);
		for (size_t i = 0; i < n; i++)
			free(env[i]);
	}
out:
	gw_cred_table_free(t);
	box_config_free(c);
}

static void unset_table_vars(void)
{
	for (size_t i = 0; i < sizeof table_vars / sizeof table_vars[0]; i++)
		unsetenv(table_vars[i]);
}

/* read_secrets refuses with exactly want, and the secret in value (if any)
 * is not in the message. */
static void secrets_refused(struct gw_cred_table *t, const char *want, const char *value)
{
	char err[512] = "";

	CHECK_EQ_INT(gw_cred_table_read_secrets(t, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, want);
	if (value != NULL && *value != '\0')
		CHECK(strstr(err, value) == NULL);
}

static void test_table_read_secrets(void)
{
	struct box_config *c, *c2 = NULL;
	struct gw_cred_table *t = load_table(TABLE_CONFIG, &c), *t2 = NULL;
	char err[512];

	CHECK(t != NULL);
	if (t == NULL)
		goto out;
	unset_table_vars();
	secrets_refused(t, "egress route one: the environment variable CAIRN_TEST_ONE that holds "
			"its secret is not set", NULL);
	setenv("CAIRN_TEST_ONE", "one-secret", 1);
	setenv("CAIRN_TEST_TWO", "two-secret", 1);
	setenv("CAIRN_TEST_THREE", "three-secret", 1);
	secrets_refused(t, "egress route docs: the environment variable CAIRN_TEST_MCP that holds "
			"its secret is not set", NULL);

	/* Box's rules on the value, through gw_cred_table_set_secret */
	static const struct {
		const char *value, *why;
	} bad[] = {
		{ "ab\x01secret", "holds a control character" },
		{ "tab\tsecret", "holds a control character" },
		{ "new\nline", "holds a control character" },
		{ "del\x7fsecret", "holds a control character" },
		{ "", "is empty" },
		{ "   ", "is blank" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char want[256];

		setenv("CAIRN_TEST_TWO", bad[i].value, 1);
		setenv("CAIRN_TEST_MCP", "mcp-secret", 1);
		snprintf(want, sizeof want, "egress route two: the secret of route two %s",
			 bad[i].why);
		secrets_refused(t, want, bad[i].value);
	}

	/* all set: each env:// route holds its variable's value; the signed one none */
	setenv("CAIRN_TEST_TWO", "two secret with spaces", 1);
	CHECK_EQ_INT(gw_cred_table_read_secrets(t, err, sizeof err), 0);
	CHECK_EQ_STR(gw_cred_route_secret_value(t, T_ONE), "one-secret");
	CHECK_EQ_STR(gw_cred_route_secret_value(t, T_TWO), "two secret with spaces");
	CHECK_EQ_STR(gw_cred_route_secret_value(t, T_THREE), "three-secret");
	CHECK_EQ_STR(gw_cred_route_secret_value(t, T_DOCS), "mcp-secret");
	CHECK(gw_cred_route_secret_value(t, T_CLOUD) == NULL);

	/* credsd:// needs a daemon this build does not talk to */
	t2 = load_table("name = \"t\"\nbox_dir = \"/var/lib/t\"\n"
			"[egress.vault]\ndestinations = [\"vault.example.com\"]\n"
			"secret.ref = \"credsd://github\"\n"
			"[agent]\ncommand = [\"agent\"]\n", &c2);
	CHECK(t2 != NULL);
	if (t2 != NULL) {
		secrets_refused(t2, "egress route vault: credsd:// needs the credentials daemon, "
				"which this build does not talk to; use env:// or aws://", NULL);
		CHECK(gw_cred_route_phantom(t2, 0) == NULL);
	}
out:
	unset_table_vars();
	gw_cred_table_free(t);
	gw_cred_table_free(t2);
	box_config_free(c);
	box_config_free(c2);
}

static void env_free(char **env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(env[i]);
}

static void test_sandbox_env(void)
{
	struct box_config *c, *c2 = NULL;
	struct gw_cred_table *t = load_table(TABLE_CONFIG, &c), *t2 = NULL;
	char *env[16], want[16][GW_PHANTOM_MAX + 64];
	size_t n = 0, k = 0;
	static const size_t env_routes[] = { T_ONE, T_TWO, T_THREE, T_DOCS };

	CHECK(t != NULL);
	if (t == NULL)
		goto out;
	/* one NAME=phantom per env:// route, in route order, then Box's two
	 * placeholder keys for the aws:// route */
	for (size_t i = 0; i < 4; i++)
		snprintf(want[k++], sizeof want[0], "%s=%s", table_vars[i],
			 ph_of(t, env_routes[i]));
	snprintf(want[k++], sizeof want[0], "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE");
	snprintf(want[k++], sizeof want[0],
		 "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	CHECK_EQ_INT(gw_cred_sandbox_env(t, env, 16, &n), 0);
	CHECK_EQ_INT(n, k);
	for (size_t i = 0; i < n && i < k; i++)
		CHECK_EQ_STR(env[i], want[i]);
	env_free(env, n);
	CHECK_EQ_INT(gw_cred_sandbox_env(t, env, k, &n), 0);   /* exactly enough room */
	CHECK_EQ_INT(n, k);
	env_free(env, n);

	/* too small: -ENOSPC, and *n says what there is to free */
	for (size_t max = 0; max < k; max++) {
		n = 99;
		CHECK_EQ_INT(gw_cred_sandbox_env(t, env, max, &n), -ENOSPC);
		CHECK_EQ_INT(n, max < 4 ? max : 4);
		for (size_t i = 0; i < n && i < 4; i++)
			CHECK_EQ_STR(env[i], want[i]);
		env_free(env, n <= max ? n : 0);
	}

	/* the test's own table (five env:// routes and an aws:// one) */
	CHECK_EQ_INT(gw_cred_sandbox_env(tab, env, 16, &n), 0);
	CHECK_EQ_INT(n, 7);
	if (n == 7) {
		char g[GW_PHANTOM_MAX + 32];

		snprintf(g, sizeof g, "GITHUB_TOKEN=%s", ph(R_GITHUB));
		CHECK_EQ_STR(env[0], g);
		snprintf(g, sizeof g, "ANTHROPIC_API_KEY=%s", ph(R_ANTHROPIC));
		CHECK_EQ_STR(env[1], g);
		CHECK_EQ_STR(env[5], "AWS_ACCESS_KEY_ID=" GW_AWS_FAKE_KEY_ID);
		CHECK_EQ_STR(env[6], "AWS_SECRET_ACCESS_KEY=" GW_AWS_FAKE_SECRET);
	}
	env_free(env, n);

	/* no aws:// route: no placeholder keys (credsd:// gets none either) */
	t2 = load_table("name = \"t\"\nbox_dir = \"/var/lib/t\"\n"
			"[egress.one]\ndestinations = [\"one.example.com\"]\n"
			"secret.ref = \"env://CAIRN_TEST_ONE\"\n"
			"[egress.vault]\ndestinations = [\"vault.example.com\"]\n"
			"secret.ref = \"credsd://github\"\n"
			"[agent]\ncommand = [\"agent\"]\n", &c2);
	CHECK(t2 != NULL);
	if (t2 != NULL) {
		char g[GW_PHANTOM_MAX + 32];

		CHECK_EQ_INT(gw_cred_sandbox_env(t2, env, 16, &n), 0);
		CHECK_EQ_INT(n, 1);
		snprintf(g, sizeof g, "CAIRN_TEST_ONE=%s", ph_of(t2, 0));
		if (n >= 1)
			CHECK_EQ_STR(env[0], g);
		env_free(env, n);
		CHECK_EQ_INT(gw_cred_sandbox_env(t2, env, 0, &n), -ENOSPC);
		CHECK_EQ_INT(n, 0);
	}
	gw_cred_table_free(t2);
	box_config_free(c2);

	/* Two routes reading one variable: a sandbox variable holds one value,
	 * so one phantom would hide the other and every request of that route
	 * would meet "blocked by egress control".  A box that loads gives each
	 * name one value (or the load refuses the pair). */
	t2 = load_table("name = \"t\"\nbox_dir = \"/var/lib/t\"\n"
			"[egress.a]\ndestinations = [\"a.example.com\"]\n"
			"secret.ref = \"env://CAIRN_TEST_ONE\"\n"
			"[egress.b]\ndestinations = [\"b.example.com\"]\n"
			"secret.ref = \"env://CAIRN_TEST_ONE\"\n"
			"[agent]\ncommand = [\"agent\"]\n", &c2);
	if (t2 != NULL) {
		size_t twice = 0;

		CHECK_EQ_INT(gw_cred_sandbox_env(t2, env, 16, &n), 0);
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				twice += strncmp(env[i], env[j], strcspn(env[i], "=") + 1) == 0;
		if (twice != 0)
			fprintf(stderr, "two routes on env://CAIRN_TEST_ONE load, and the sandbox "
				"gets CAIRN_TEST_ONE twice, with two phantoms\n");
		CHECK_EQ_INT(twice, 0);
		env_free(env, n);
		/* they share one phantom, and each route takes it to its own host */
		CHECK(ph_of(t2, 0)[0] && strcmp(ph_of(t2, 0), ph_of(t2, 1)) == 0);
		CHECK_EQ_INT(gw_cred_table_set_secret(t2, 0, "tok-1", NULL, 0), 0);
		CHECK_EQ_INT(gw_cred_table_set_secret(t2, 1, "tok-1", NULL, 0), 0);
		for (int k = 0; k < 2; k++) {
			const char *host = k ? "b.example.com" : "a.example.com";
			char auth[GW_PHANTOM_MAX + 16], e2[512] = "";
			struct gw_hdrs h;
			struct gw_cred_result res;
			gw_hdrs_init(&h);
			memset(&res, 0, sizeof res);
			snprintf(auth, sizeof auth, "Bearer %s", ph_of(t2, 0));
			gw_hdrs_add(&h, "Host", 4, host, strlen(host));
			gw_hdrs_add(&h, "Authorization", 13, auth, strlen(auth));
			struct gw_cred_req rq = { .host = host, .port = 443, .tls = true,
						  .method = "GET", .path = "/", .hdrs = &h };
			int rc = gw_cred_apply(t2, &rq, &res, e2, sizeof e2);
			if (rc != 0)
				fprintf(stderr, "shared phantom, %s: %s\n", host, e2);
			CHECK_EQ_INT(rc, 0);
			CHECK_EQ_STR(gw_hdrs_get(&h, "Authorization"), "Bearer tok-1");
			gw_cred_result_clear(&res);
			gw_hdrs_clear(&h);
		}
	}
	gw_cred_table_free(t2);
	box_config_free(c2);
	/* ...and must agree on the phantom's prefix, else the box is refused */
	CHECK(load_table("name = \"t\"\nbox_dir = \"/var/lib/t\"\n"
			 "[egress.a]\ndestinations = [\"a.example.com\"]\n"
			 "secret.ref = \"env://CAIRN_TEST_ONE\"\n"
			 "[egress.b]\ndestinations = [\"b.example.com\"]\n"
			 "secret.ref = \"env://CAIRN_TEST_ONE\"\nsecret.phantom_prefix = \"other_\"\n"
			 "[agent]\ncommand = [\"agent\"]\n", &c2) == NULL);
	t2 = NULL;
out:
	gw_cred_table_free(t);
	gw_cred_table_free(t2);
	box_config_free(c);
	box_config_free(c2);
}

/* ---- matching ------------------------------------------------------------------ */

static void test_matching(void)
{
	/* bare host: 443 and 80, case-insensitive, one trailing dot */
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.github.com", 443, "/user"), R_GITHUB);
	CHECK_EQ_INT(gw_cred_route_for(tab, "API.GitHub.com.", 80, "/"), R_GITHUB);
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.github.com", 8443, "/user"), -1);
	CHECK_EQ_INT(gw_cred_route_for(tab, "github.com", 443, "/"), -1);
	/* star-suffix path */
	CHECK_EQ_INT(gw_cred_route_for(tab, "uploads.github.com", 443, "/repos/o/r/upload"), R_GITHUB);
	CHECK_EQ_INT(gw_cred_route_for(tab, "uploads.github.com", 443, "/repos/o/r/uploads"), -1);
	/* prefix by whole segment */
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.anthropic.com", 443, "/v1"), R_ANTHROPIC);
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.anthropic.com", 443, "/v1/messages"), R_ANTHROPIC);
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.anthropic.com", 443, "/v10/messages"), -1);
	CHECK_EQ_INT(gw_cred_route_for(tab, "api.anthropic.com", 443, "/v2/messages"), -1);
	/* a "/api/" prefix already sits on a boundary */
	CHECK_EQ_INT(gw_cred_route_for(tab, "maps.example.com", 443, "/api/geocode"), R_MAPS);
	CHECK_EQ_INT(gw_cred_route_for(tab, "maps.example.com", 443, "/apis"), -1);
	/* *.x: strict subdomains, exact port */
	CHECK_EQ_INT(gw_cred_route_for(tab, "a.basic.example", 8443, "/"), R_BASIC);
	CHECK_EQ_INT(gw_cred_route_for(tab, "a.b.basic.example", 8443, "/"), R_BASIC);
	CHECK_EQ_INT(gw_cred_route_for(tab, "basic.example", 8443, "/"), -1);
	CHECK_EQ_INT(gw_cred_route_for(tab, "evilbasic.example", 8443, "/"), -1);
	CHECK_EQ_INT(gw_cred_route_for(tab, "a.basic.example", 443, "/"), -1);
	CHECK_EQ_INT(gw_cred_route_for(tab, "bedrock-runtime.us-west-2.amazonaws.com", 443, "/m"),
		     R_AWS);
	CHECK(gw_cred_route_matches(tab, R_GITHUB, "api.github.com", 80, "/x"));
	CHECK(!gw_cred_route_matches(tab, R_GITHUB, "api.github.com", 81, "/x"));
}

/* Overlapping destinations box.toml would refuse: specificity, and signed wins. */
static void test_specificity(void)
{
	struct box_dest d_wild = { .text = "*.example.com", .host = "*.example.com", .wildcard = true };
	struct box_dest d_exact = { .text = "api.example.com", .host = "api.example.com" };
	struct box_dest d_port = { .text = "api.example.com:443", .host = "api.example.com",
				   .port = 443 };
	struct box_dest d_path = { .text = "api.example.com/v1", .host = "api.example.com",
				   .path = "/v1" };
	struct box_dests wild = { 1, &d_wild }, exact = { 1, &d_exact }, port = { 1, &d_port },
			 path = { 1, &d_path };
	struct box_secret env = { .present = true, .ref = "env://X", .scheme = BOX_SECRET_ENV,
				  .ref_name = "X", .placement = BOX_PLACE_HEADER,
				  .header = "Authorization", .prefix = "Bearer ",
				  .inject = BOX_INJECT_PHANTOM, .phantom_prefix = "p_" };
	struct box_secret aws = { .present = true, .ref = "aws://x", .scheme = BOX_SECRET_AWS,
				  .ref_name = "x" };
	struct gw_cred_table *t;

	CHECK_EQ_INT(gw_cred_table_new(&t), 0);
	CHECK_EQ_INT(gw_cred_table_add(t, "wild", &wild, &env, NULL, 0), 0);
	CHECK_EQ_INT(gw_cred_table_add(t, "exact", &exact, &env, NULL, 0), 1);
	CHECK_EQ_INT(gw_cred_route_for(t, "api.example.com", 443, "/"), 1);
	CHECK_EQ_INT(gw_cred_route_for(t, "www.example.com", 443, "/"), 0);
	CHECK_EQ_INT(gw_cred_table_add(t, "port", &port, &env, NULL, 0), 2);
	CHECK_EQ_INT(gw_cred_route_for(t, "api.example.com", 443, "/"), 2);
	CHECK_EQ_INT(gw_cred_route_for(t, "api.example.com", 80, "/"), 1);
	CHECK_EQ_INT(gw_cred_table_add(t, "path", &path, &env, NULL, 0), 3);
	CHECK_EQ_INT(gw_cred_route_for(t, "api.example.com", 80, "/v1/x"), 3);
	/* A signed route wins over a more specific opaque one. */
	CHECK_EQ_INT(gw_cred_table_add(t, "aws", &wild, &aws, NULL, 0), 4);
	CHECK_EQ_INT(gw_cred_route_for(t, "api.example.com", 443, "/v1/x"), 4);
	gw_cred_table_free(t);
}

/* ---- injection ------------------------------------------------------------------- */

struct rq {
	struct gw_hdrs h;
	struct gw_cred_req req;
	struct gw_cred_result res;
	char err[512];
};

static void rq_init(struct rq *r, const char *host, unsigned port, const char *path,
		    const char *query)
{
	memset(r, 0, sizeof *r);
	gw_hdrs_init(&r->h);
	hadd(&r->h, "Host", host);
	r->req = (struct gw_cred_req){
		.host = host, .port = port, .tls = true, .method = "GET", .path = path,
		.query = query, .hdrs = &r->h, .now = 1440938160,
	};
}

static int rq_apply(struct rq *r)
{
	return gw_cred_apply(tab, &r->req, &r->res, r->err, sizeof r->err);
}

static void rq_done(struct rq *r)
{
	gw_cred_result_clear(&r->res);
	gw_hdrs_clear(&r->h);
}

static const char *bearer(size_t route)
{
	static char b[256];

	snprintf(b, sizeof b, "Bearer %s", ph(route));
	return b;
}

static void test_bearer(void)
{
	struct rq r;

	rq_init(&r, "api.github.com", 443, "/user", NULL);
	hadd(&r.h, "Authorization", bearer(R_GITHUB));
	hadd(&r.h, "Accept-Encoding", "gzip, br");
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_INT(r.res.route, R_GITHUB);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "Bearer " GH_SECRET);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "accept-encoding"), "identity");
	CHECK_EQ_INT(gw_hdrs_find(&r.h, "accept-encoding",
				  (size_t)gw_hdrs_find(&r.h, "accept-encoding", 0) + 1), -1);
	CHECK(r.res.scrub && !r.res.advisory && !r.res.signed_aws && r.res.query == NULL);
	rq_done(&r);

	/* the scheme is case-insensitive */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	{
		char v[256];

		snprintf(v, sizeof v, "bearer  %s ", ph(R_GITHUB));
		hadd(&r.h, "authorization", v);
	}
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "Authorization"), "Bearer " GH_SECRET);
	rq_done(&r);

	/* missing: refused, headers untouched */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	hadd(&r.h, "Accept-Encoding", "gzip");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "no placeholder") != NULL);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "accept-encoding"), "gzip");
	CHECK(gw_hdrs_get(&r.h, "authorization") == NULL);
	rq_done(&r);

	/* wrong value */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	hadd(&r.h, "Authorization", "Bearer strands_box_0000");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "Bearer strands_box_0000");
	rq_done(&r);

	/* another route's phantom */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	hadd(&r.h, "Authorization", bearer(R_ALWAYS));
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "other than its placeholder") != NULL);
	rq_done(&r);

	/* the right phantom, but in the query instead of the slot */
	{
		char q[200];

		snprintf(q, sizeof q, "access_token=%s", ph(R_GITHUB));
		rq_init(&r, "api.github.com", 443, "/user", q);
		CHECK_EQ_INT(rq_apply(&r), -EACCES);
		rq_done(&r);
	}

	/* the phantom twice, once with a different value */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	hadd(&r.h, "Authorization", bearer(R_GITHUB));
	hadd(&r.h, "Authorization", "Bearer other");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* plain HTTP: refused, whatever it carries */
	rq_init(&r, "api.github.com", 80, "/user", NULL);
	r.req.tls = false;
	hadd(&r.h, "Authorization", bearer(R_GITHUB));
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "TLS only") != NULL);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), bearer(R_GITHUB));
	rq_done(&r);
}

static void test_custom_header(void)
{
	struct rq r;

	rq_init(&r, "api.anthropic.com", 443, "/v1/messages", NULL);
	hadd(&r.h, "x-api-key", ph(R_ANTHROPIC));
	hadd(&r.h, "Authorization", "Bearer untouched");
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "X-Api-Key"), ANT_SECRET);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "Bearer untouched");
	rq_done(&r);

	/* routes match the canonical path: a dot segment cannot carry the
	 * secret out from under the route's prefix, an escaped letter can't
	 * dodge it */
	rq_init(&r, "api.anthropic.com", 443, "/v1/../admin", NULL);
	hadd(&r.h, "x-api-key", ph(R_ANTHROPIC));
	CHECK_EQ_INT(rq_apply(&r), 1);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-api-key"), ph(R_ANTHROPIC));
	rq_done(&r);
	rq_init(&r, "api.anthropic.com", 443, "/x/../%761/./messages", NULL);
	hadd(&r.h, "x-api-key", ph(R_ANTHROPIC));
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-api-key"), ANT_SECRET);
	rq_done(&r);
	rq_init(&r, "api.anthropic.com", 443, "/v1%2Fmessages", NULL);
	hadd(&r.h, "x-api-key", ph(R_ANTHROPIC));
	CHECK_EQ_INT(rq_apply(&r), 1);          /* %2F is not a segment boundary */
	rq_done(&r);

	/* the phantom in Authorization, not in x-api-key: refused */
	rq_init(&r, "api.anthropic.com", 443, "/v1/messages", NULL);
	{
		char v[200];

		snprintf(v, sizeof v, "Bearer %s", ph(R_ANTHROPIC));
		hadd(&r.h, "Authorization", v);
	}
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
}

static char *b64(const char *s)
{
	static char out[256];

	if (strlen(s) > 180)
		return "";
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)strlen(s));
	return out;
}

static void test_basic(void)
{
	struct rq r;
	char v[600], pair[300], want[600];

	snprintf(pair, sizeof pair, "anyuser:%s", ph(R_BASIC));
	snprintf(v, sizeof v, "Basic %s", b64(pair));
	snprintf(want, sizeof want, "Basic %s", b64(BASIC_SECRET));

	rq_init(&r, "git.basic.example", 8443, "/repo.git/info/refs", "service=git-upload-pack");
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), want);
	CHECK(r.res.query == NULL);
	rq_done(&r);

	/* an empty user half is fine: only the password half is checked */
	snprintf(pair, sizeof pair, ":%s", ph(R_BASIC));
	snprintf(v, sizeof v, "basic %s", b64(pair));
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), 0);
	rq_done(&r);

	/* the phantom in the user half, a wrong password half */
	snprintf(pair, sizeof pair, "%s:password", ph(R_BASIC));
	snprintf(v, sizeof v, "Basic %s", b64(pair));
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), v);
	rq_done(&r);

	/* the password half with a trailing byte */
	snprintf(pair, sizeof pair, "u:%sx", ph(R_BASIC));
	snprintf(v, sizeof v, "Basic %s", b64(pair));
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* not base64, not Basic, no colon */
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	hadd(&r.h, "Authorization", "Basic !!!notbase64");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	snprintf(v, sizeof v, "Bearer %s", ph(R_BASIC));
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
	rq_init(&r, "git.basic.example", 8443, "/", NULL);
	snprintf(v, sizeof v, "Basic %s", b64(ph(R_BASIC)));
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
}

static void test_query_param(void)
{
	struct rq r;
	char q[600];
	const char *enc_secret = "api_key=maps%20key%2Fwith%2Bstuff";
	char want[300];

	/* every occurrence stripped (keys decoded), the secret appended */
	snprintf(q, sizeof q, "a=1&api_key=%s&b=x+y&api%%5Fkey=%s", ph(R_MAPS), ph(R_MAPS));
	rq_init(&r, "maps.example.com", 443, "/api/geocode", q);
	CHECK_EQ_INT(rq_apply(&r), 0);
	snprintf(want, sizeof want, "a=1&b=x+y&%s", enc_secret);
	CHECK_EQ_STR(r.res.query, want);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "accept-encoding"), "identity");
	rq_done(&r);

	/* the only parameter */
	snprintf(q, sizeof q, "api_key=%s", ph(R_MAPS));
	rq_init(&r, "maps.example.com", 443, "/api/x", q);
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(r.res.query, enc_secret);
	rq_done(&r);

	/* missing */
	rq_init(&r, "maps.example.com", 443, "/api/x", "a=1");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(r.res.query == NULL);
	rq_done(&r);
	rq_init(&r, "maps.example.com", 443, "/api/x", NULL);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* a second occurrence with another value */
	snprintf(q, sizeof q, "api_key=%s&api+key=zzz&api_key=zzz", ph(R_MAPS));
	rq_init(&r, "maps.example.com", 443, "/api/x", q);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* another route's phantom in the parameter */
	snprintf(q, sizeof q, "api_key=%s", ph(R_GITHUB));
	rq_init(&r, "maps.example.com", 443, "/api/x", q);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* the phantom in a header instead */
	rq_init(&r, "maps.example.com", 443, "/api/x", "q=1");
	hadd(&r.h, "api_key", ph(R_MAPS));
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
}

static void test_always_and_unbound(void)
{
	struct rq r;

	/* inject = "always": attached with nothing to swap, noted */
	rq_init(&r, "always.example.com", 443, "/", NULL);
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "Bearer " ALWAYS_SECRET);
	CHECK(r.res.advisory);
	rq_done(&r);
	rq_init(&r, "always.example.com", 443, "/", NULL);
	hadd(&r.h, "Authorization", bearer(R_ALWAYS));
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK(!r.res.advisory);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "Bearer " ALWAYS_SECRET);
	rq_done(&r);

	/* no route: forwarded unchanged, a phantom included */
	rq_init(&r, "example.org", 443, "/", NULL);
	hadd(&r.h, "Authorization", bearer(R_GITHUB));
	CHECK_EQ_INT(rq_apply(&r), 1);
	CHECK_EQ_INT(r.res.route, -1);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), bearer(R_GITHUB));
	CHECK(gw_hdrs_get(&r.h, "accept-encoding") == NULL);
	rq_done(&r);
}

static void test_scoping(void)
{
	const struct box_tool *gh = box_config_tool(cfg, "gh"), *free_tool = box_config_tool(cfg, "free");
	unsigned char *scope = NULL, *none = (unsigned char *)1;
	struct box_process fake = { .has_egress_routes = true };
	const char *unknown[] = { "nosuch" };
	struct rq r;
	char v[600];

	CHECK(gh != NULL && free_tool != NULL);
	CHECK_EQ_INT(gw_cred_scope_new(tab, &free_tool->proc, &none, NULL, 0), 0);
	CHECK(none == NULL);
	CHECK_EQ_INT(gw_cred_scope_new(tab, &gh->proc, &scope, NULL, 0), 0);
	CHECK(scope != NULL && scope[R_GITHUB] && !scope[R_ANTHROPIC] && !scope[R_AWS]);
	fake.egress_routes.n = 1, fake.egress_routes.v = unknown;
	CHECK_EQ_INT(gw_cred_scope_new(tab, &fake, &none, NULL, 0), -EINVAL);

	/* its own route works */
	rq_init(&r, "api.github.com", 443, "/user", NULL);
	r.req.scope = scope;
	hadd(&r.h, "Authorization", bearer(R_GITHUB));
	CHECK_EQ_INT(rq_apply(&r), 0);
	rq_done(&r);

	/* another route's phantom, at that route's host: refused */
	rq_init(&r, "api.anthropic.com", 443, "/v1/messages", NULL);
	r.req.scope = scope;
	hadd(&r.h, "x-api-key", ph(R_ANTHROPIC));
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "anthropic") != NULL);
	rq_done(&r);

	/* ... at an unbound host, in the query, percent-encoded in the path,
	 * base64'd in a Basic header */
	snprintf(v, sizeof v, "k=%s", ph(R_ANTHROPIC));
	rq_init(&r, "example.org", 443, "/", v);
	r.req.scope = scope;
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
	snprintf(v, sizeof v, "/x/%%%02X%s", (unsigned char)ph(R_MAPS)[0], ph(R_MAPS) + 1);
	rq_init(&r, "example.org", 443, v, NULL);
	r.req.scope = scope;
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
	{
		char pair[300];

		snprintf(pair, sizeof pair, "u:%s", ph(R_BASIC));
		snprintf(v, sizeof v, "Basic %s", b64(pair));
	}
	rq_init(&r, "api.github.com", 443, "/", NULL);
	r.req.scope = scope;
	hadd(&r.h, "Authorization", v);
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);

	/* a route outside the scope, no phantom: no credential, unchanged */
	rq_init(&r, "always.example.com", 443, "/", NULL);
	r.req.scope = scope;
	CHECK_EQ_INT(rq_apply(&r), 1);
	CHECK(gw_hdrs_get(&r.h, "authorization") == NULL);
	rq_done(&r);

	/* the same phantom from an unscoped process is fine at an unbound host */
	snprintf(v, sizeof v, "k=%s", ph(R_ANTHROPIC));
	rq_init(&r, "example.org", 443, "/", v);
	CHECK_EQ_INT(rq_apply(&r), 1);
	rq_done(&r);
	free(scope);
}

/* ---- AWS signing ------------------------------------------------------------------ */

static void hexs(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void hmac(const void *k, size_t kl, const char *m, unsigned char out[32])
{
	unsigned int ol = 0;

	HMAC(EVP_sha256(), k, (int)kl, (const unsigned char *)m, strlen(m), out, &ol);
}

/* The SigV4 signature of creq, straight from the AWS steps with OpenSSL. */
static void independent_sig(const char *secret, const char *date, const char *region,
			    const char *service, const char *creq, char out[65])
{
	char seed[128], d8[9], sts[512], h[65];
	unsigned char k[32], dg[32];
	unsigned int dl = 0;

	snprintf(seed, sizeof seed, "AWS4%s", secret);
	memcpy(d8, date, 8);
	d8[8] = '\0';
	EVP_Digest(creq, strlen(creq), dg, &dl, EVP_sha256(), NULL);
	hexs(dg, 32, h);
	snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", date, d8, region,
		 service, h);
	hmac(seed, strlen(seed), d8, k);
	hmac(k, 32, region, k);
	hmac(k, 32, service, k);
	hmac(k, 32, "aws4_request", k);
	hmac(k, 32, sts, dg);
	hexs(dg, 32, out);
}

static void test_aws(void)
{
	struct rq r;
	char body_hash[65], sig[65], creq[1024], want[512];
	const char *body = "{\"messages\":[]}";

	/* bedrock: placeholder signing stripped, re-signed with profile keys */
	rq_init(&r, "bedrock-runtime.us-west-2.amazonaws.com", 443, "/model/m%3A0/invoke", NULL);
	r.req.method = "POST";
	hadd(&r.h, "Content-Type", "application/json");
	hadd(&r.h, "Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/x");
	hadd(&r.h, "X-Amz-Date", "20000101T000000Z");
	hadd(&r.h, "x-amz-security-token", "fake");
	hadd(&r.h, "X-Amz-Content-Sha256", "fake");
	hadd(&r.h, "User-Agent", "boto3");
	gw_sigv4_payload_hash(body, strlen(body), body_hash);
	r.req.key_id = "AKIDREAL";
	r.req.secret_key = "realsecret/key";
	r.req.session_token = "realtoken";
	r.req.payload_hash = body_hash;
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK(r.res.signed_aws && !r.res.scrub);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-amz-date"), "20150830T123600Z");
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-amz-security-token"), "realtoken");
	CHECK(gw_hdrs_get(&r.h, "x-amz-content-sha256") == NULL);       /* s3 only */
	CHECK_EQ_INT(gw_hdrs_find(&r.h, "x-amz-date", (size_t)gw_hdrs_find(&r.h, "x-amz-date", 0) + 1),
		     -1);
	/* the signature, computed independently from the expected request */
	snprintf(creq, sizeof creq,
		 "POST\n/model/m%%253A0/invoke\n\naccept-encoding:identity\n"
		 "content-type:application/json\nhost:bedrock-runtime.us-west-2.amazonaws.com\n"
		 "x-amz-date:20150830T123600Z\nx-amz-security-token:realtoken\n\n"
		 "accept-encoding;content-type;host;x-amz-date;x-amz-security-token\n%s",
		 body_hash);
	independent_sig("realsecret/key", "20150830T123600Z", "us-west-2", "bedrock", creq, sig);
	snprintf(want, sizeof want,
		 "AWS4-HMAC-SHA256 Credential=AKIDREAL/20150830/us-west-2/bedrock/aws4_request, "
		 "SignedHeaders=accept-encoding;content-type;host;x-amz-date;x-amz-security-token, "
		 "Signature=%s", sig);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), want);
	rq_done(&r);

	/* a non-s3 service needs the body hash */
	rq_init(&r, "bedrock-runtime.us-west-2.amazonaws.com", 443, "/model/m/invoke", NULL);
	r.req.key_id = "AKIDREAL", r.req.secret_key = "s";
	hadd(&r.h, "Authorization", "AWS4-HMAC-SHA256 x");
	CHECK_EQ_INT(rq_apply(&r), -EINVAL);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "authorization"), "AWS4-HMAC-SHA256 x");
	rq_done(&r);

	/* s3 streams: UNSIGNED-PAYLOAD, in the header too; presign params dropped */
	rq_init(&r, "bucket.s3.us-east-1.amazonaws.com", 443, "/key.txt",
		"X-Amz-Signature=abc&versionId=3&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2Fx");
	r.req.key_id = "AKIDREAL", r.req.secret_key = "s";
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
	CHECK_EQ_STR(r.res.query, "versionId=3");
	CHECK(gw_hdrs_get(&r.h, "x-amz-security-token") == NULL);
	CHECK(strstr(gw_hdrs_get(&r.h, "authorization"),
		     "/us-east-1/s3/aws4_request, SignedHeaders=accept-encoding;host;"
		     "x-amz-content-sha256;x-amz-date, Signature=") != NULL);
	rq_done(&r);

	/* unsigned aws-chunked keeps its marker; signed aws-chunked is refused */
	rq_init(&r, "bucket.s3.us-east-1.amazonaws.com", 443, "/k", NULL);
	r.req.key_id = "AKIDREAL", r.req.secret_key = "s";
	hadd(&r.h, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	CHECK_EQ_INT(rq_apply(&r), 0);
	CHECK_EQ_STR(gw_hdrs_get(&r.h, "x-amz-content-sha256"), "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	rq_done(&r);
	rq_init(&r, "bucket.s3.us-east-1.amazonaws.com", 443, "/k", NULL);
	r.req.key_id = "AKIDREAL", r.req.secret_key = "s";
	hadd(&r.h, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "chunk") != NULL);
	rq_done(&r);

	/* a host under the route whose scope cannot be derived */
	rq_init(&r, "a.b.c.amazonaws.com", 443, "/", NULL);
	r.req.key_id = "AKIDREAL", r.req.secret_key = "s", r.req.payload_hash = body_hash;
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	CHECK(strstr(r.err, "guessed scope") != NULL);
	rq_done(&r);

	/* plaintext */
	rq_init(&r, "s3.amazonaws.com", 80, "/b/k", NULL);
	r.req.tls = false, r.req.key_id = "AKIDREAL", r.req.secret_key = "s";
	CHECK_EQ_INT(rq_apply(&r), -EACCES);
	rq_done(&r);
}

/* ---- AWS profiles --------------------------------------------------------------------- */

static char root[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void write_file(const char *rel, const char *text)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

#define SENTINEL ((char *)"untouched")

static int profile(const char *name, char **k, char **s, char **t, char *err, size_t errlen)
{
	*k = *s = *t = SENTINEL;
	return gw_cred_aws_profile(root, name, k, s, t, err, errlen);
}

static void test_aws_profile(void)
{
	char *k, *s, *t, err[512], other[PATH_MAX + 16];
	int rc;

	snprintf(root, sizeof root, "/tmp/cairn-cred-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	snprintf(other, sizeof other, "%s/.aws", root);
	CHECK_EQ_INT(mkdir(other, 0700), 0);
	write_file(".aws/credentials",
		   "# operator keys\n"
		   "[default]\r\n"
		   "aws_access_key_id = AKIDDEFAULT\r\n"
		   "aws_secret_access_key = default/secret+key\r\n"
		   "\n"
		   "[dev]\n"
		   "aws_access_key_id=AKIDDEV\n"
		   "  aws_secret_access_key   =   dev/Secret  \n"
		   "aws_session_token = devtoken==\n"
		   "; comment\n"
		   "[nosecret]\n"
		   "aws_access_key_id = AKIDNOSECRET\n"
		   "[role]\n"
		   "aws_access_key_id = AKIDBASE\n"
		   "aws_secret_access_key = base\n"
		   "[badkey]\n"
		   "aws_access_key_id = AKID WITH SPACE\n"
		   "aws_secret_access_key = x\n");
	write_file(".aws/config",
		   "[default]\nregion = us-east-1\n"
		   "[profile dev]\nregion = us-west-2\naws_access_key_id = AKIDFROMCONFIG\n"
		   "[profile proc]\ncredential_process = /bin/sh -c 'cat ~/.ssh/id_ed25519'\n"
		   "[profile role]\nrole_arn = arn:aws:iam::123:role/r\nsource_profile = role\n"
		   "[profile cfgonly]\naws_access_key_id = AKIDCFG\naws_secret_access_key = cfgsecret\n"
		   "[profile nested]\naws_access_key_id = AKIDNEST\naws_secret_access_key = nest\n"
		   "s3 =\n  aws_session_token = nested-not-mine\n  max_concurrent_requests = 4\n"
		   "[profile  spaced ]\naws_access_key_id = AKIDSPACED\naws_secret_access_key = sp\n"
		   "[profile regiononly]\nregion = eu-west-1\n"
		   "[sso-session corp]\nsso_start_url = https://x\n"
		   "[profile sso]\nsso_session = corp\n");

	/* static keys and a token; credentials win over config */
	CHECK_EQ_INT(profile("dev", &k, &s, &t, err, sizeof err), 0);
	CHECK_EQ_STR(k, "AKIDDEV");
	CHECK_EQ_STR(s, "dev/Secret");
	CHECK_EQ_STR(t, "devtoken==");
	gw_cred_wipe_free(k), gw_cred_wipe_free(s), gw_cred_wipe_free(t);

	/* CRLF, no token */
	CHECK_EQ_INT(profile("default", &k, &s, &t, err, sizeof err), 0);
	CHECK_EQ_STR(k, "AKIDDEFAULT");
	CHECK_EQ_STR(s, "default/secret+key");
	CHECK(t == NULL);
	gw_cred_wipe_free(k), gw_cred_wipe_free(s);

	/* config alone; a nested sub-section's setting is not the profile's */
	CHECK_EQ_INT(profile("cfgonly", &k, &s, &t, err, sizeof err), 0);
	CHECK_EQ_STR(k, "AKIDCFG");
	gw_cred_wipe_free(k), gw_cred_wipe_free(s), gw_cred_wipe_free(t);
	CHECK_EQ_INT(profile("nested", &k, &s, &t, err, sizeof err), 0);
	CHECK(t == NULL);
	gw_cred_wipe_free(k), gw_cred_wipe_free(s);
	CHECK_EQ_INT(profile("spaced", &k, &s, &t, err, sizeof err), 0);
	CHECK_EQ_STR(k, "AKIDSPACED");
	gw_cred_wipe_free(k), gw_cred_wipe_free(s);

	/* credential_process: refused by name, outputs untouched */
	rc = profile("proc", &k, &s, &t, err, sizeof err);
	CHECK_EQ_INT(rc, -EACCES);
	CHECK(strstr(err, "credential_process") != NULL);
	CHECK(k == SENTINEL && s == SENTINEL && t == SENTINEL);

	/* role and SSO shapes: refused before the base keys are used */
	CHECK_EQ_INT(profile("role", &k, &s, &t, err, sizeof err), -EACCES);
	CHECK(strstr(err, "role_arn") != NULL || strstr(err, "source_profile") != NULL);
	CHECK(k == SENTINEL);
	CHECK_EQ_INT(profile("sso", &k, &s, &t, err, sizeof err), -EACCES);
	CHECK(strstr(err, "sso_session") != NULL);

	/* missing keys */
	CHECK_EQ_INT(profile("nosecret", &k, &s, &t, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "but not aws_secret_access_key") != NULL);
	CHECK_EQ_INT(profile("regiononly", &k, &s, &t, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "no static keys") != NULL);
	CHECK_EQ_INT(profile("badkey", &k, &s, &t, err, sizeof err), -EINVAL);
	CHECK(k == SENTINEL);

	/* absent profile; absent files */
	CHECK_EQ_INT(profile("nosuch", &k, &s, &t, err, sizeof err), -ENOENT);
	CHECK(strstr(err, "not declared") != NULL);
	snprintf(other, sizeof other, "%s/elsewhere", root);
	k = SENTINEL;
	CHECK_EQ_INT(gw_cred_aws_profile(other, "dev", &k, &s, &t, err, sizeof err), -ENOENT);
	CHECK(k == SENTINEL);
	CHECK_EQ_INT(profile("bad]name", &k, &s, &t, err, sizeof err), -EINVAL);
	CHECK_EQ_INT(gw_cred_aws_profile(NULL, "dev", &k, &s, &t, err, sizeof err), -EINVAL);

	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- scrubbing ------------------------------------------------------------------------ */

struct sink {
	char b[4096];
	size_t n;
};

static int collect(void *ctx, const void *p, size_t n)
{
	struct sink *c = ctx;

	if (c->n + n >= sizeof c->b)
		return -ENOSPC;
	memcpy(c->b + c->n, p, n);
	c->n += n;
	c->b[c->n] = '\0';
	return 0;
}

/* Counts what passes and any "ab" that survives, across emits. */
struct counter {
	size_t bytes, ab;
	char last;
};

static int count_emit(void *ctx, const void *p, size_t n)
{
	struct counter *c = ctx;
	const char *b = p;

	for (size_t i = 0; i < n; i++) {
		c->ab += c->last == 'a' && b[i] == 'b';
		c->last = b[i];
	}
	c->bytes += n;
	return 0;
}

static void test_scrub_splits(void)
{
	static const char *const needles[] = { "s3cr3t-T0K3N" };
	/* two occurrences, a near miss, one at the very end */
	const char *in = "x=s3cr3t-T0K3N;y=s3cr3t-T0K3;z=\"s3cr3t-T0K3N\"s3cr3t-T0K3N";
	const char *want = "x=[REDACTED];y=s3cr3t-T0K3;z=\"[REDACTED]\"[REDACTED]";
	size_t n = strlen(in);
	struct gw_scrub *s;
	unsigned bad2 = 0, bad3 = 0;

	CHECK_EQ_INT(gw_scrub_new(needles, 1, &s), 0);
	/* every split point: two chunks */
	for (size_t k = 0; k <= n; k++) {
		struct sink o = { .n = 0 };

		CHECK_EQ_INT(gw_scrub_feed(s, in, k, collect, &o), 0);
		CHECK_EQ_INT(gw_scrub_feed(s, in + k, n - k, collect, &o), 0);
		CHECK_EQ_INT(gw_scrub_finish(s, collect, &o), 0);
		CHECK_EQ_STR(o.b, want);
		bad2 += strcmp(o.b, want) != 0;
	}
	/* every pair of split points: three chunks */
	for (size_t a = 0; a <= n; a++)
		for (size_t b = a; b <= n; b++) {
			struct sink o = { .n = 0 };

			gw_scrub_feed(s, in, a, collect, &o);
			gw_scrub_feed(s, in + a, b - a, collect, &o);
			gw_scrub_feed(s, in + b, n - b, collect, &o);
			gw_scrub_finish(s, collect, &o);
			bad3 += strcmp(o.b, want) != 0;
		}
	CHECK_EQ_INT(bad2, 0);
	CHECK_EQ_INT(bad3, 0);
	/* one byte at a time */
	{
		struct sink o = { .n = 0 };

		for (size_t i = 0; i < n; i++)
			gw_scrub_feed(s, in + i, 1, collect, &o);
		gw_scrub_finish(s, collect, &o);
		CHECK_EQ_STR(o.b, want);
	}
	/* a prefix of the secret at the end of the stream is released as is */
	{
		struct sink o = { .n = 0 };

		gw_scrub_feed(s, "tail s3cr3t-T0", 14, collect, &o);
		CHECK(o.n < 14);                /* held back: it could still become a secret */
		gw_scrub_finish(s, collect, &o);
		CHECK_EQ_STR(o.b, "tail s3cr3t-T0");
	}
	gw_scrub_free(s);
}

static void test_scrub_more(void)
{
	static const char *const overlap[] = { "aab", "aaab" };
	static const char *const one[] = { "ab" };
	struct gw_scrub *s;
	struct sink o = { .n = 0 };
	struct gw_hdrs h;
	char *big;
	size_t bn = 300000, found = 0;

	/* overlapping needles: the longest at the leftmost position */
	CHECK_EQ_INT(gw_scrub_new(overlap, 2, &s), 0);
	gw_scrub_feed(s, "aaaab aab", 9, collect, &o);
	gw_scrub_finish(s, collect, &o);
	CHECK_EQ_STR(o.b, "a[REDACTED] [REDACTED]");
	CHECK_EQ_INT(gw_scrub_count(s), 2);
	gw_scrub_free(s);

	/* a long stream in uneven chunks: bounded window, every copy found */
	CHECK_EQ_INT(gw_scrub_new(one, 1, &s), 0);
	big = malloc(bn);
	CHECK(big != NULL);
	if (big == NULL)
		return;
	for (size_t i = 0; i < bn; i++)
		big[i] = i % 9973 == 0 ? 'a' : (i % 9973 == 1 ? 'b' : 'x');
	for (size_t i = 0; i + 1 < bn; i++)
		found += big[i] == 'a' && big[i + 1] == 'b';
	{
		struct counter c = { 0 };
		size_t pos = 0, step = 1;
		int rc = 0;

		while (pos < bn) {
			size_t k = step < bn - pos ? step : bn - pos;

			rc |= gw_scrub_feed(s, big + pos, k, count_emit, &c);
			pos += k;
			step = step * 3 % 8191 + 1;
		}
		rc |= gw_scrub_finish(s, count_emit, &c);
		CHECK_EQ_INT(rc, 0);
		CHECK(found > 20);
		CHECK_EQ_INT(gw_scrub_count(s), found);
		CHECK_EQ_INT(c.ab, 0);
		CHECK_EQ_INT(c.bytes, bn - 2 * found + (sizeof GW_REDACTED - 1) * found);
	}
	free(big);
	gw_scrub_free(s);

	/* an emit error stops the feed */
	CHECK_EQ_INT(gw_scrub_new(one, 1, &s), 0);
	{
		struct sink full = { .n = sizeof full.b - 2 };

		CHECK_EQ_INT(gw_scrub_feed(s, "zzzzzzzz", 8, collect, &full), -ENOSPC);
	}
	gw_scrub_free(s);

	/* refusals */
	CHECK_EQ_INT(gw_scrub_new(NULL, 0, &s), -EINVAL);
	{
		static const char *const empty[] = { "" };

		CHECK_EQ_INT(gw_scrub_new(empty, 1, &s), -EINVAL);
	}

	/* headers: the route's scrubber, Basic's base64 form too */
	CHECK_EQ_INT(gw_cred_scrub_new(tab, R_BASIC, &s), 0);
	gw_hdrs_init(&h);
	hadd(&h, "X-Echo", "got " BASIC_SECRET " back");
	hadd(&h, "X-Auth-Echo", b64(BASIC_SECRET));
	hadd(&h, "Content-Type", "text/plain");
	CHECK_EQ_INT(gw_scrub_headers(s, &h), 2);
	CHECK_EQ_STR(gw_hdrs_get(&h, "x-echo"), "got [REDACTED] back");
	CHECK_EQ_STR(gw_hdrs_get(&h, "x-auth-echo"), "[REDACTED]");
	CHECK_EQ_STR(gw_hdrs_get(&h, "content-type"), "text/plain");
	gw_hdrs_clear(&h);
	/* headers scrubbed mid-body leave the body's held-back bytes alone */
	o.n = 0;
	gw_scrub_feed(s, "body alice:s3c", 14, collect, &o);
	gw_hdrs_init(&h);
	hadd(&h, "X-Late", BASIC_SECRET);
	CHECK_EQ_INT(gw_scrub_headers(s, &h), 1);
	gw_scrub_feed(s, "r3t pass end", 12, collect, &o);
	gw_scrub_finish(s, collect, &o);
	CHECK_EQ_STR(o.b, "body [REDACTED] end");
	gw_hdrs_clear(&h);
	gw_scrub_free(s);
	/* query_param: the percent-encoded form it travelled in */
	CHECK_EQ_INT(gw_cred_scrub_new(tab, R_MAPS, &s), 0);
	o.n = 0;
	{
		const char *echo = "{\"url\":\"/api?api_key=maps%20key%2Fwith%2Bstuff\"}";

		gw_scrub_feed(s, echo, strlen(echo), collect, &o);
	}
	gw_scrub_finish(s, collect, &o);
	CHECK_EQ_STR(o.b, "{\"url\":\"/api?api_key=[REDACTED]\"}");
	gw_scrub_free(s);
	CHECK_EQ_INT(gw_cred_scrub_new(tab, R_AWS, &s), -EINVAL);

	/* compressed responses cannot be scanned */
	gw_hdrs_init(&h);
	CHECK(gw_cred_response_encoding_ok(&h));
	hadd(&h, "Content-Encoding", " identity ");
	CHECK(gw_cred_response_encoding_ok(&h));
	hadd(&h, "content-encoding", "gzip");
	CHECK(!gw_cred_response_encoding_ok(&h));
	gw_hdrs_clear(&h);
}

static const struct test_case tests[] = {
	{ "hdrs", test_hdrs },
	{ "phantoms", test_phantoms },
	{ "table_set_phantom", test_table_set_phantom },
	{ "table_read_secrets", test_table_read_secrets },
	{ "sandbox_env", test_sandbox_env },
	{ "matching", test_matching },
	{ "specificity", test_specificity },
	{ "bearer", test_bearer },
	{ "custom_header", test_custom_header },
	{ "basic", test_basic },
	{ "query_param", test_query_param },
	{ "always_unbound", test_always_and_unbound },
	{ "scoping", test_scoping },
	{ "aws", test_aws },
	{ "aws_profile", test_aws_profile },
	{ "scrub_splits", test_scrub_splits },
	{ "scrub_more", test_scrub_more },
};

static void teardown(void)
{
	gw_cred_table_free(tab);
	box_config_free(cfg);
}

int main(int argc, char **argv)
{
	setup();
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
		if (argc <= 1 || strcmp(argv[1], tests[i].name) == 0)
			tests[i].fn();
	teardown();
	printf("%lu passed, %lu failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

unsigned long test_passed, test_failed;
