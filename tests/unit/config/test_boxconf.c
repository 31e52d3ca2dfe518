/* test_boxconf.c - the box.toml model (src/config/boxconf.c).
 *
 * The full example is tests/data/boxconf/full.toml; refusals are checked with
 * their message and the line:col of the key or value they name. */
#include <errno.h>
#include <string.h>

#include "boxconf.h"
#include "test.h"

#define HOME "/home/op"
#define REQ "name = \"b\"\nbox_dir = \"/var/lib/b\"\n"   /* lines 1-2 */

static struct box_config *load(const char *text, struct box_config_error *err)
{
	struct box_config *cfg = NULL;
	int rc = box_config_load("/etc/cairn/box.toml", text, strlen(text), HOME, &cfg, err);

	if (rc != 0) {
		fprintf(stderr, "  load failed: %s: %s\n", err->where, err->msg);
		CHECK(cfg == NULL);
		return NULL;
	}
	return cfg;
}

/* text is refused at line:col with a message containing want. */
static void refused(const char *text, unsigned line, unsigned col, const char *want)
{
	struct box_config_error err;
	struct box_config *cfg = NULL;
	int rc = box_config_load("/etc/cairn/box.toml", text, strlen(text), HOME, &cfg, &err);

	CHECK_EQ_INT(rc, -EINVAL);
	CHECK(cfg == NULL);
	if (rc != -EINVAL) {
		box_config_free(cfg);
		fprintf(stderr, "  accepted: %s\n", text);
		return;
	}
	if (strstr(err.msg, want) == NULL)
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.msg, want);
	CHECK(strstr(err.msg, want) != NULL);
	if (err.line != line || err.col != col)
		fprintf(stderr, "  %s: at %u:%u, want %u:%u\n", want, err.line, err.col, line, col);
	CHECK_EQ_INT(err.line, line);
	CHECK_EQ_INT(err.col, col);
	if (line) {
		char where[64];

		snprintf(where, sizeof where, "/etc/cairn/box.toml:%u:%u", line, col);
		CHECK_EQ_STR(err.where, where);
	}
}

static void test_full(void)
{
	char path[512];
	size_t n;
	char *text;
	struct box_config_error err;
	struct box_config *cfg = NULL;
	const struct box_tool *git;
	const struct box_egress *e;
	const struct box_mcp *m;

	snprintf(path, sizeof path, "%s/tests/data/boxconf/full.toml", CAIRN_SOURCE_DIR);
	text = test_read_file(path, &n);
	CHECK(text != NULL);
	if (text == NULL)
		return;
	CHECK_EQ_INT(box_config_load("/srv/box/box.toml", text, n, HOME, &cfg, &err), 0);
	free(text);
	if (cfg == NULL) {
		fprintf(stderr, "  %s: %s\n", err.where, err.msg);
		return;
	}
	CHECK_EQ_STR(cfg->name, "codex-1");
	CHECK_EQ_STR(cfg->box_dir.authored, "/var/lib/boxes/codex");
	CHECK_EQ_STR(cfg->policy.authored, "policy.dw");
	CHECK_EQ_STR(cfg->policy.resolved, "/srv/box/policy.dw");
	CHECK_EQ_INT(cfg->policy.line, 4);
	CHECK_EQ_INT(cfg->policy.col, 10);

	CHECK(cfg->agent.present);
	CHECK_EQ_INT(cfg->agent.command.n, 2);
	CHECK_EQ_STR(cfg->agent.command.v[0], "codex");
	CHECK_EQ_STR(cfg->agent.command.v[1], "--full-auto");
	CHECK_EQ_STR(cfg->agent.workspace.resolved, "/home/op/project");
	CHECK_EQ_INT(cfg->agent.env.n, 2);
	CHECK_EQ_STR(box_env_get(&cfg->agent.env, "HOME"), "/home/op/agent-home");
	CHECK_EQ_STR(box_env_get(&cfg->agent.env, "TERM"), "xterm-256color");
	CHECK_EQ_INT(cfg->agent.fs[BOX_FS_READ].n, 2);
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ].v[0].authored, "~/project");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ].v[0].resolved, "/home/op/project");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ].v[1].resolved, "/etc/hosts");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_WRITE].v[0].resolved, "/home/op/project/out");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ_FILE].v[0].resolved, "/home/op/.gitconfig");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_WRITE_FILE].v[0].resolved, "/home/op/notes.txt");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_METADATA].v[0].resolved, "/opt");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_EXEC].v[0].resolved, "/usr/local/bin/rg");
	CHECK_EQ_STR(cfg->agent.fs[BOX_FS_DENY].v[0].resolved, "/home/op/project/.env");
	CHECK_EQ_INT(cfg->agent.fs[BOX_FS_LIST].n, 0);
	CHECK(cfg->agent.contain_egress);
	CHECK(cfg->agent.limits.present);
	CHECK_EQ_INT(cfg->agent.limits.pids, 256);
	CHECK_EQ_INT(cfg->agent.limits.memory, 2ll << 30);
	CHECK_EQ_INT(cfg->agent.limits.cpu_milli, 1500);
	CHECK_EQ_INT(cfg->agent.limits.tmp_size, 512ll << 20);

	CHECK_EQ_INT(cfg->n_tools, 1);
	git = box_config_tool(cfg, "git");
	CHECK(git != NULL);
	if (git != NULL) {
		CHECK_EQ_INT(git->proc.command.n, 3);
		CHECK_EQ_STR(git->proc.command.v[2], "core.pager=cat");
		CHECK(!git->proc.contain_egress);
		CHECK(git->proc.has_egress_routes);
		CHECK_EQ_INT(git->proc.egress_routes.n, 1);
		CHECK_EQ_STR(git->proc.egress_routes.v[0], "github");
		CHECK_EQ_STR(git->proc.fs[BOX_FS_WRITE].v[0].resolved, "/home/op/project");
		CHECK_EQ_INT(git->proc.limits.pids, 64);
		CHECK_EQ_INT(git->proc.limits.memory, 268435456);
		CHECK_EQ_INT(git->proc.limits.cpu_milli, 500);
		CHECK_EQ_INT(git->proc.limits.tmp_size, 0);
		CHECK(git->proc.workspace.authored == NULL);
	}

	CHECK_EQ_INT(cfg->n_egress, 3);
	e = box_config_egress(cfg, "github");
	CHECK(e != NULL);
	if (e != NULL) {
		CHECK_EQ_INT(e->destinations.n, 2);
		CHECK_EQ_STR(e->destinations.v[0].host, "api.github.com");
		CHECK_EQ_INT(e->destinations.v[0].port, 0);
		CHECK(e->destinations.v[1].wildcard);
		CHECK_EQ_STR(e->destinations.v[1].host, "*.githubusercontent.com");
		CHECK_EQ_INT(e->destinations.v[1].port, 443);
		CHECK_EQ_INT(e->secret.scheme, BOX_SECRET_ENV);
		CHECK_EQ_STR(e->secret.ref_name, "GITHUB_TOKEN");
		CHECK_EQ_INT(e->secret.placement, BOX_PLACE_HEADER);
		CHECK_EQ_STR(e->secret.header, "Authorization");
		CHECK_EQ_STR(e->secret.prefix, "Bearer ");
		CHECK_EQ_INT(e->secret.inject, BOX_INJECT_PHANTOM);
		CHECK_EQ_STR(e->secret.phantom_prefix, "strands_box_");
		CHECK(e->secret.param == NULL);
	}
	e = box_config_egress(cfg, "stripe");
	CHECK(e != NULL);
	if (e != NULL) {
		CHECK_EQ_STR(e->destinations.v[0].path, "/v1");
		CHECK_EQ_INT(e->secret.placement, BOX_PLACE_QUERY_PARAM);
		CHECK_EQ_STR(e->secret.param, "api_key");
		CHECK_EQ_INT(e->secret.inject, BOX_INJECT_ALWAYS);
		CHECK_EQ_STR(e->secret.prefix, "");
	}
	e = box_config_egress(cfg, "bedrock");
	CHECK(e != NULL && e->secret.scheme == BOX_SECRET_AWS);
	CHECK(e != NULL && strcmp(e->secret.ref_name, "dev") == 0);

	CHECK_EQ_INT(cfg->n_mcp, 2);
	m = box_config_mcp(cfg, "files");
	CHECK(m != NULL && m->type == BOX_MCP_STDIO);
	if (m != NULL) {
		CHECK_EQ_STR(m->proc.command.v[0], "mcp-files");
		CHECK_EQ_STR(m->proc.command.v[2], "${OTEL_EXPORTER_OTLP_ENDPOINT}");
		CHECK_EQ_STR(box_env_get(&m->proc.env, "LOG"), "debug");
		CHECK_EQ_STR(m->proc.fs[BOX_FS_READ].v[0].resolved, "/home/op/docs");
		CHECK(m->proc.contain_egress);
		CHECK(!m->proc.limits.present);
	}
	m = box_config_mcp(cfg, "search");
	CHECK(m != NULL && m->type == BOX_MCP_HTTP);
	if (m != NULL) {
		CHECK_EQ_STR(m->url, "http://search.example.com:8443/mcp");
		CHECK(m->secret.present);
		CHECK_EQ_STR(m->secret.header, "x-api-key");
		CHECK_EQ_STR(m->secret.prefix, "");
	}

	CHECK_EQ_INT(cfg->n_telemetry, 2);
	if (cfg->n_telemetry == 2) {
		CHECK_EQ_STR(cfg->telemetry[0].label, "local");
		CHECK_EQ_INT(cfg->telemetry[0].kind, BOX_TELEMETRY_FILE);
		CHECK_EQ_STR(cfg->telemetry[0].destination.resolved, "/home/op/box-records.jsonl");
		CHECK_EQ_INT(cfg->telemetry[0].include, BOX_SIG_DENY | BOX_SIG_KERNEL);
		CHECK_EQ_INT(cfg->telemetry[1].kind, BOX_TELEMETRY_OTLP);
		CHECK_EQ_STR(cfg->telemetry[1].destination.resolved, "https://otel.example.com");
		CHECK_EQ_INT(cfg->telemetry[1].include, BOX_SIG_ALL);
		CHECK(cfg->telemetry[1].has_secret);
		CHECK_EQ_STR(cfg->telemetry[1].secret_ref, "env://OTEL_TOKEN");
		CHECK_EQ_STR(cfg->telemetry[1].secret_header, "Authorization");
	}
	CHECK(!cfg->private_proc);

	CHECK(cfg->gateway.present);
	CHECK(!cfg->gateway.destination_floor);
	CHECK_EQ_INT(cfg->gateway.n_hosts, 2);
	if (cfg->gateway.n_hosts == 2) {
		CHECK_EQ_STR(cfg->gateway.hosts[0].name, "upstream.local");
		CHECK_EQ_STR(cfg->gateway.hosts[0].address, "127.0.0.1");
		CHECK_EQ_STR(cfg->gateway.hosts[1].address, "::1");
	}
	CHECK_EQ_INT(cfg->gateway.extra_ca_files.n, 2);
	if (cfg->gateway.extra_ca_files.n == 2) {
		CHECK_EQ_STR(cfg->gateway.extra_ca_files.v[0].resolved, "/srv/box/certs/test-ca.pem");
		CHECK_EQ_STR(cfg->gateway.extra_ca_files.v[1].resolved, "/home/op/ca/other.pem");
	}
	CHECK_EQ_INT(box_config_check_workload(cfg, &err), 0);
	box_config_free(cfg);
}

static void test_defaults(void)
{
	struct box_config_error err;
	struct box_config *cfg = load(REQ, &err);

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	CHECK_EQ_STR(cfg->name, "b");
	CHECK_EQ_STR(cfg->box_dir.resolved, "/var/lib/b");
	CHECK(cfg->policy.authored == NULL);
	CHECK(!cfg->agent.present);
	CHECK_EQ_INT(cfg->n_tools + cfg->n_egress + cfg->n_mcp + cfg->n_telemetry, 0);
	CHECK(cfg->private_proc);
	CHECK(!cfg->gateway.present);
	CHECK(cfg->gateway.destination_floor);
	CHECK_EQ_INT(box_config_check_workload(cfg, &err), -EINVAL);
	CHECK(strncmp(err.msg, "no workload to run: the configuration has no `[agent]` table",
		      60) == 0);
	box_config_free(cfg);

	cfg = load(REQ "[agent]\ncommand = [\"sh\"]\n", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK(cfg->agent.contain_egress);
		CHECK(!cfg->agent.limits.present);
		CHECK(cfg->agent.workspace.authored == NULL);
		CHECK_EQ_INT(cfg->agent.env.n, 0);
		box_config_free(cfg);
	}
	/* credsd, basic_auth with a custom header: no Bearer prefix. */
	cfg = load(REQ "[egress.a]\ndestinations = [\"a.example\"]\nsecret.ref = \"credsd://x\"\n"
		       "[egress.b]\ndestinations = [\"b.example\"]\nsecret.ref = \"env://B\"\n"
		       "secret.placement = \"basic_auth\"\n", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK_EQ_INT(cfg->egress[0].secret.scheme, BOX_SECRET_CREDSD);
		CHECK_EQ_STR(cfg->egress[1].secret.prefix, "");
		box_config_free(cfg);
	}
}

static void test_paths(void)
{
	struct box_config_error err;
	struct box_config *cfg = NULL;
	const char *t = REQ "policy = \"../p/policy.dw\"\n[agent]\ncommand = [\"x\"]\n"
			"filesystem.read = [\"~\", \"~/a/b\"]\n";

	CHECK_EQ_INT(box_config_load("/etc/cairn/box.toml", t, strlen(t), "/home/op/", &cfg, &err),
		     0);
	if (cfg != NULL) {
		CHECK_EQ_STR(cfg->policy.resolved, "/etc/cairn/../p/policy.dw");
		CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ].v[0].resolved, "/home/op");
		CHECK_EQ_STR(cfg->agent.fs[BOX_FS_READ].v[1].resolved, "/home/op/a/b");
		box_config_free(cfg);
		cfg = NULL;
	}
	/* A bare file name: relative stays relative to the caller's directory. */
	CHECK_EQ_INT(box_config_load("box.toml", t, strlen(t), HOME, &cfg, &err), 0);
	if (cfg != NULL) {
		CHECK_EQ_STR(cfg->policy.resolved, "../p/policy.dw");
		box_config_free(cfg);
		cfg = NULL;
	}
	/* An absolute policy is kept; a config at the root joins without "//". */
	t = REQ "policy = \"/x/policy.dw\"\n[gateway]\nextra_ca_files = [\"ca.pem\"]\n";
	CHECK_EQ_INT(box_config_load("/box.toml", t, strlen(t), HOME, &cfg, &err), 0);
	if (cfg != NULL) {
		CHECK_EQ_STR(cfg->policy.resolved, "/x/policy.dw");
		CHECK_EQ_STR(cfg->gateway.extra_ca_files.v[0].resolved, "/ca.pem");
		box_config_free(cfg);
		cfg = NULL;
	}
	/* No home: a `~` path cannot be resolved. */
	t = REQ "[agent]\ncommand = [\"x\"]\nfilesystem.read = [\"~/a\"]\n";
	CHECK_EQ_INT(box_config_load("/b.toml", t, strlen(t), NULL, &cfg, &err), -EINVAL);
	CHECK_EQ_STR(err.msg, "HOME is not set");
	CHECK_EQ_INT(err.line, 5);
}

static void test_top_refusals(void)
{
	refused("name = \"b\"\n", 0, 0, "missing field `box_dir`");
	refused("box_dir = \"/b\"\n", 0, 0, "missing field `name`");
	refused(REQ "wat = 1\n", 3, 1, "unknown field `wat`, expected one of `name`, `box_dir`");
	refused(REQ "command = [\"x\"]\n", 3, 1, "unknown field `command`");
	refused("name = 5\nbox_dir = \"/b\"\n", 1, 8,
		"invalid type: integer `5`, expected a string for key `name`");
	refused("name = \"a/b\"\nbox_dir = \"/b\"\n", 1, 8,
		"box name \"a/b\" is invalid: it carries a character other than letters, digits, "
		"'.', '_', or '-'; use one component of letters, digits, '.', '_', or '-'");
	refused("name = \"..\"\nbox_dir = \"/b\"\n", 1, 8, "box name \"..\" is invalid");
	refused("name = \"\"\nbox_dir = \"/b\"\n", 1, 8, "box name \"\" is invalid: it is empty");
	refused("name = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\nbox_dir = \"/b\"\n", 1, 8,
		"readable label");
	refused("name = \"b\"\nbox_dir = \"state\"\n", 2, 11, "`box_dir` must be absolute: state");
	refused(REQ "workspace = \"/w\"\n", 3, 1,
		"/etc/cairn/box.toml carries `workspace`, which this build does not read; write "
		"`[agent] workspace` instead");
	refused(REQ "[filesystem]\nread = []\n", 3, 2, "carries `filesystem`");
	refused(REQ "name = \"c\"\n", 3, 1, "duplicate key `name`");
	refused(REQ "[containment]\nprivate_proc = \"no\"\n", 4, 16,
		"expected a boolean for key `private_proc`");
	refused(REQ "[containment]\nshared = true\n", 4, 1,
		"unknown field `shared`, expected one of `private_proc`, `mediate`, `mediate_sync`");
	refused(REQ "[containment]\nmediate = \"yes\"\n", 4, 11,
		"expected a boolean for key `mediate`");
	refused(REQ "[containment]\nmediate_sync = \"sometimes\"\n", 4, 16,
		"unknown variant `sometimes`, expected `group` or `each` for key `mediate_sync`");
}

static void test_process_refusals(void)
{
	refused(REQ "[agent]\nworkspace = \"/w\"\n", 3, 1, "missing field `command`");
	refused(REQ "[agent]\ncommand = []\n", 4, 11,
		"`command` must name a program as its first entry");
	refused(REQ "[agent]\ncommand = [\"bin/x\"]\n", 4, 12,
		"`command` element 0 \"bin/x\" is a relative path; write an absolute path, or a "
		"bare name that `env.PATH` resolves");
	refused(REQ "[agent]\ncommand = [\"${X}\"]\n", 4, 12, "carries `${`");
	refused(REQ "[agent]\ncommand = \"x\"\n", 4, 11, "expected an array of strings");
	refused(REQ "[agent]\ncommand = [\"x\"]\nworkspace = \"w\"\n", 5, 13,
		"`workspace` must be absolute: w");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.HTTP_PROXY = \"x\"\n", 5, 5,
		"`env` name \"HTTP_PROXY\" is set by the box itself, so a table cannot claim it");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.LD_PRELOAD = \"x\"\n", 5, 5,
		"`env` name \"LD_PRELOAD\" is set by the box itself");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.PYTHONPATH = \"x\"\n", 5, 5, "set by the box");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.OTEL_EXPORTER_OTLP_HEADERS = \"x\"\n", 5, 5,
		"set by the box");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.HOME = \"home\"\n", 5, 12,
		"`env.HOME` must be an absolute path: \"home\"");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.TMPDIR = \"t\"\n", 5, 14,
		"`env.TMPDIR` must be an absolute path");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.\"1A\" = \"t\"\n", 5, 5,
		"is not an environment name");
	refused(REQ "[agent]\ncommand = [\"x\"]\nenv.A = 1\n", 5, 9, "for key `env.A`");
	refused(REQ "[agent]\ncommand = [\"x\"]\n[agent.network]\ncontain_egress = false\n", 5, 8,
		"`network` is refused on `[agent]`: the agent always reaches the network through "
		"the egress gateway");
	refused(REQ "[agent]\ncommand = [\"x\"]\npacks = []\n", 5, 1, "carries `packs`");
	refused(REQ "[agent]\ncommand = [\"x\"]\negress = []\n", 5, 1, "unknown field `egress`");
	refused(REQ "[tool.\"a b\"]\ncommand = [\"x\"]\n", 3, 7,
		"the label must be one component of letters, digits, '.', '_', or '-'");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nexec = \"x\"\n", 5, 1, "carries `exec`");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nnetwork.contain_egress = 1\n", 5, 26,
		"expected a boolean");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nnetwork.other = 1\n", 5, 9, "unknown field `other`");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\negress = [\"nope\"]\n", 5, 10,
		"`[tool.t]` egress names \"nope\", which no `[egress.nope]` declares");
}

static void test_filesystem_refusals(void)
{
	const char *a = REQ "[agent]\ncommand = [\"x\"]\n";   /* filesystem at line 5 */
	char t[512];

#define FS(line_) (snprintf(t, sizeof t, "%s%s", a, line_), t)
	refused(FS("filesystem.read = [\"rel\"]\n"), 5, 20,
		"`[agent]` filesystem entry \"rel\" is refused: it must be absolute or begin with "
		"`~/`");
	refused(FS("filesystem.read = [\"~op/x\"]\n"), 5, 20, "must be absolute");
	refused(FS("filesystem.read = [\"/a/*\"]\n"), 5, 20, "no pattern or control character");
	refused(FS("filesystem.read = [\"/a\\tb\"]\n"), 5, 20, "no pattern or control character");
	refused(FS("filesystem.read = [\"/a/../b\"]\n"), 5, 20, "carries a `..` component");
	refused(FS("filesystem.write = [\"/a\", \"/b\", \"/a\"]\n"), 5, 33,
		"\"/a\" is refused: it is duplicated in `write`");
	/* `list`: a leaf's entry is refused here in Box's words; the agent's when
	 * the run plans it (tests/unit/run/test_plan.c), after Box's path checks */
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nfilesystem.list = [\"~/a\"]\n", 5, 20,
		"`[tool.t]` filesystem entry \"~/a\" is refused: " HOME "/a cannot be listed "
		"without its contents on Linux: the namespace backend has no lowering for `list`; "
		"grant `read` instead");
	{
		struct box_config_error err;
		struct box_config *cfg = load(FS("filesystem.list = [\"/a\"]\n"), &err);

		CHECK(cfg != NULL && cfg->agent.fs[BOX_FS_LIST].n == 1);
		box_config_free(cfg);
	}
	refused(FS("filesystem.secret = [\"/a\"]\n"), 5, 12, "unknown field `secret`");
	refused(FS("filesystem.read = \"/a\"\n"), 5, 19, "expected an array of paths");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nfilesystem.exec = [\"/a\"]\n", 5, 12,
		"carries `exec`");
	refused(REQ "[tool.t]\ncommand = [\"x\"]\nfilesystem.lookup = [\"/a\"]\n", 5, 12,
		"unknown field `lookup`, expected one of `read`, `write`, `read_file`, "
		"`write_file`, `list`, `deny`");
	refused(REQ "[mcp.m]\ntype = \"stdio\"\ncommand = [\"x\"]\nfilesystem.metadata = [\"/a\"]\n",
		6, 12, "carries `metadata`");
#undef FS
}

static void test_limits(void)
{
	const char *a = REQ "[agent]\ncommand = [\"x\"]\n[agent.limits]\n";   /* line 6 */
	struct box_config_error err;
	struct box_config *cfg;
	char t[512];

#define LIM(line_) (snprintf(t, sizeof t, "%s%s", a, line_), t)
	cfg = load(LIM("memory = \"64k\"\ntmp_size = \"1T\"\ncpu = \"250%\"\npids = 1\n"), &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK_EQ_INT(cfg->agent.limits.memory, 64 << 10);
		CHECK_EQ_INT(cfg->agent.limits.tmp_size, 1ll << 40);
		CHECK_EQ_INT(cfg->agent.limits.cpu_milli, 2500);
		CHECK_EQ_INT(cfg->agent.limits.pids, 1);
		box_config_free(cfg);
	}
	cfg = load(LIM("cpu = 2\nmemory = \"1048576\"\n"), &err);
	CHECK(cfg != NULL && cfg->agent.limits.cpu_milli == 2000 &&
	      cfg->agent.limits.memory == 1048576);
	box_config_free(cfg);
	refused(LIM("pids = 0\n"), 6, 8, "`pids` must be a positive integer");
	refused(LIM("pids = \"10\"\n"), 6, 8, "expected a positive integer for key `pids`");
	refused(LIM("memory = \"2 G\"\n"), 6, 10, "`memory` = \"2 G\" is not a size");
	refused(LIM("memory = \"2GB\"\n"), 6, 10, "is not a size");
	refused(LIM("memory = -1\n"), 6, 10, "`memory` must be a positive size");
	refused(LIM("tmp_size = \"99999999999999999999\"\n"), 6, 12, "is not a size");
	refused(LIM("tmp_size = \"0M\"\n"), 6, 12, "is not a size");
	refused(LIM("cpu = 0\n"), 6, 7, "`cpu` must be a number of CPUs");
	refused(LIM("cpu = \"1.5\"\n"), 6, 7, "`cpu` must be a number of CPUs");
	refused(LIM("cpu = inf\n"), 6, 7, "`cpu` must be a number of CPUs");
	refused(LIM("cpu = true\n"), 6, 7, "expected a number of CPUs");
	refused(LIM("swap = 1\n"), 6, 1,
		"unknown field `swap`, expected one of `pids`, `memory`, `cpu`, `tmp_size`");
	refused(REQ "[mcp.m]\ntype = \"stdio\"\ncommand = [\"x\"]\nlimits.pids = 3\n", 6, 1,
		"unknown field `limits`");
#undef LIM
}

static void test_egress_refusals(void)
{
	const char *e = REQ "[egress.g]\n";   /* keys from line 4 */
	char t[512];

#define EG(body_) (snprintf(t, sizeof t, "%s%s", e, body_), t)
	refused(EG("secret.ref = \"env://T\"\n"), 3, 1, "missing field `destinations`");
	refused(EG("destinations = []\nsecret.ref = \"env://T\"\n"), 4, 16, "names no destination");
	refused(EG("destinations = [\"*\"]\nsecret.ref = \"env://T\"\n"), 4, 17,
		"matches every host");
	refused(EG("destinations = [\"*:443\"]\nsecret.ref = \"env://T\"\n"), 4, 17,
		"matches every host");
	refused(EG("destinations = [\"a.com:0\"]\nsecret.ref = \"env://T\"\n"), 4, 17,
		"port outside 1 to 65535");
	refused(EG("destinations = [\"a.com:70000\"]\nsecret.ref = \"env://T\"\n"), 4, 17,
		"port outside 1 to 65535");
	refused(EG("destinations = [\"https://a.com\"]\nsecret.ref = \"env://T\"\n"), 4, 17,
		"carries a scheme");
	refused(EG("destinations = [\"a.com\", \"x.a.com\", \"A.com:443\"]\nsecret.ref = \"env://T\"\n"),
		4, 37, "destination \"A.com:443\" overlaps \"a.com\"");
	refused(EG("destinations = [\"*.a.com\", \"x.a.com/v1\"]\nsecret.ref = \"env://T\"\n"), 4, 28,
		"overlaps \"*.a.com\"");
	refused(EG("destinations = [\"a.com\"]\n"), 3, 1,
		"an entry with no secret declares only a destination, which policy already decides");
	refused(EG("destinations = [\"a.com\"]\nprotocol = \"mcp\"\nsecret.ref = \"env://T\"\n"), 5, 12,
		"`[egress.g]` sets `protocol = \"mcp\"`, which is no longer supported; declare a "
		"remote MCP server as `[mcp.g]` with `type = \"http\"`");
	refused(EG("destinations = [\"a.com\"]\nprotocol = \"grpc\"\nsecret.ref = \"env://T\"\n"), 5, 12,
		"only \"http\"");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"sk-live-123\"\n"), 5, 14,
		"secret.ref \"sk-live-123\" is refused");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"file:///k\"\n"), 5, 14, "is refused");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://HOME\"\n"), 5, 14,
		"reserves or will not read");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://AWS_SECRET_ACCESS_KEY\"\n"), 5,
		14, "reserves or will not read");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://\"\n"), 5, 14,
		"names nothing after its scheme");
	refused(EG("destinations = [\"a.com\"]\nsecret.placement = \"cookie\"\nsecret.ref = \"env://T\"\n"),
		5, 20, "secret.placement \"cookie\" is not one of: header, basic_auth, query_param");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.placement = \"query_param\"\n"),
		5, 1, "needs secret.param");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.param = \"k\"\n"), 6, 8,
		"applies only to secret.placement = \"query_param\"");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"aws://p\"\nsecret.header = \"X\"\n"), 6, 8,
		"`[egress.g]` secret.header does not apply to a aws:// secret.ref");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.header = \"a b\"\n"), 6,
		17, "is not an HTTP header name");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.prefix = \"{x}\"\n"), 6,
		17, "control character or a brace");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.inject = \"never\"\n"), 6,
		17, "is not one of: phantom, always");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.phantom_prefix = \"a b\"\n"),
		6, 25, "must be 1 to 64 of");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.phantom = true\n"), 6, 8,
		"carries `phantom`");
	refused(EG("destinations = [\"a.com\"]\nsecret.ref = \"env://T\"\nsecret.url = 1\n"), 6, 8,
		"unknown field `url`");
	refused(EG("destinations = [\"a.com\"]\nsecret.header = \"X\"\n"), 5, 1, "missing field `ref`");
	/* Across entries, and across http MCP servers. */
	refused(REQ "[egress.a]\ndestinations = [\"a.com/v1\"]\nsecret.ref = \"env://A\"\n"
		    "[egress.b]\ndestinations = [\"a.com:443/v1/x\"]\nsecret.ref = \"env://B\"\n", 7, 17,
		"destination \"a.com:443/v1/x\" of `b` overlaps \"a.com/v1\" of `a`");
	refused(REQ "[egress.a]\ndestinations = [\"m.com\"]\nsecret.ref = \"env://A\"\n"
		    "[mcp.m]\ntype = \"http\"\ndestinations = [\"m.com:443\"]\n", 8, 17,
		"of `m` overlaps \"m.com\" of `a`");
#undef EG
	/* Paths by whole segment, ports exactly: no overlap. */
	{
		struct box_config_error err;
		struct box_config *cfg = load(
			REQ "[egress.a]\ndestinations = [\"a.com/v1\", \"a.com/v10\", \"a.com:8080\"]\n"
			    "secret.ref = \"env://A\"\n", &err);

		CHECK(cfg != NULL);
		box_config_free(cfg);
	}
}

static void test_mcp_telemetry_gateway(void)
{
	refused(REQ "[mcp.m]\ncommand = [\"x\"]\n", 3, 1, "missing field `type`");
	refused(REQ "[mcp.m]\ntype = \"sse\"\n", 4, 8, "unknown variant `sse`, expected `stdio` or `http`");
	refused(REQ "[mcp.m]\ntype = \"http\"\ncommand = [\"x\"]\n", 5, 1,
		"unknown field `command`, expected one of `type`, `destinations`, `secret`");
	refused(REQ "[mcp.m]\ntype = \"http\"\n", 3, 1, "missing field `destinations`");
	refused(REQ "[mcp.m]\ntype = \"stdio\"\ncommand = [\"x\"]\nlimits = {}\n", 6, 1,
		"unknown field `limits`");

	refused(REQ "[telemetry.t]\ndestination = \"/x\"\n", 3, 1, "missing field `kind`");
	refused(REQ "[telemetry.t]\nkind = \"file\"\n", 3, 1, "missing field `destination`");
	refused(REQ "[telemetry.t]\nkind = \"syslog\"\n", 4, 8, "unknown variant `syslog`");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"rel.jsonl\"\n", 5, 15,
		"a file destination must be absolute or begin with `~/`");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/a/../b\"\n", 5, 15,
		"carries a `..` component");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/x\"\ninclude = []\n", 6, 11,
		"the target names no signal, so nothing would reach it; write one or more of: "
		"deny, permit, trace, logs, metrics, kernel");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/x\"\ninclude = [\"deny\", \"deny\"]\n",
		6, 20, "the target names deny twice");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/x\"\ninclude = [\"audit\"]\n", 6,
		12, "\"audit\", which is no signal");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/x\"\nsignals = [\"deny\"]\n", 6, 1,
		"carries `signals`");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/var/lib/b/run/r.jsonl\"\n", 5, 15,
		"\"/var/lib/b/run/r.jsonl\" is inside the box directory /var/lib/b but outside its "
		"private tree, where a process could truncate it");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/var/lib/b/private\"\n", 5, 15,
		"outside its private tree");
	refused(REQ "[telemetry.t]\nkind = \"otlp\"\ndestination = \"otel:4318\"\n", 5, 15,
		"is not a collector URL");
	refused(REQ "[telemetry.t]\nkind = \"otlp\"\ndestination = \"http://c\"\nsecret.ref = \"T\"\n",
		6, 14, "write env://NAME or secret://NAME");
	refused(REQ "[telemetry.t]\nkind = \"file\"\ndestination = \"/x\"\nsecret.ref = \"env://T\"\n",
		3, 1, "takes no secret");
	{
		struct box_config_error err;
		struct box_config *cfg = load(REQ "[telemetry.t]\nkind = \"file\"\n"
					      "destination = \"/var/lib/b/private/t.jsonl\"\n", &err);

		CHECK(cfg != NULL);
		box_config_free(cfg);
	}

	refused(REQ "[gateway]\nhosts = { a = \"not-an-ip\" }\n", 4, 15,
		"`[gateway] hosts.a` = \"not-an-ip\" is not an IPv4 or IPv6 address");
	refused(REQ "[gateway]\nhosts = { \"a b\" = \"1.2.3.4\" }\n", 4, 11, "is not a host name");
	refused(REQ "[gateway]\nhosts = { A = \"1.2.3.4\", a = \"::1\" }\n", 4, 26, "twice");
	refused(REQ "[gateway]\nextra_ca_files = [\"/a.pem\", \"/a.pem\"]\n", 4, 29, "twice");
	refused(REQ "[gateway]\ndestination_floor = \"off\"\n", 4, 21, "expected a boolean");
	refused(REQ "[gateway]\nmetadata = false\n", 4, 1,
		"unknown field `metadata`, expected one of `hosts`, `extra_ca_files`, "
		"`destination_floor`");
}

static void test_toml_errors(void)
{
	refused(REQ "[agent\n", 3, 7, "expected `]` to close the table header");
	refused("name = \"b\"\nname = \"c\"\n", 2, 1, "duplicate key `name` (first defined at 1:1)");
}


/* An env table may not set the variable that carries a route's phantom. */
static void test_phantom_env(void)
{
	struct box_config_error err;
	struct box_config *cfg;

	refused(REQ "[agent]\ncommand = [\"x\"]\nenv = { LANG = \"C\", API_TOKEN = \"sk-live\" }\n"
		"[egress.api]\ndestinations = [\"api.example\"]\nsecret.ref = \"env://API_TOKEN\"\n",
		5, 21,
		"`[agent.env]` sets API_TOKEN, the variable that carries the phantom of "
		"`[egress.api]` (secret.ref \"env://API_TOKEN\" at 8:14): the table's value would "
		"replace the phantom, and the gateway refuses every request of that route without "
		"it (403 blocked by egress control); remove API_TOKEN from `[agent.env]`, because "
		"the box sets it");
	/* the [agent.env] table form, an http MCP server's secret */
	refused(REQ "[agent]\ncommand = [\"x\"]\n[agent.env]\nMCP_KEY = \"k\"\n"
		"[mcp.docs]\ntype = \"http\"\ndestinations = [\"mcp.example\"]\n"
		"secret.ref = \"env://MCP_KEY\"\n",
		6, 1, "`[agent.env]` sets MCP_KEY, the variable that carries the phantom of "
		"`[mcp.docs]` (secret.ref \"env://MCP_KEY\" at 10:14)");
	/* a tool and a stdio MCP server receive every phantom too */
	refused(REQ "[agent]\ncommand = [\"x\"]\n[tool.gh]\ncommand = [\"gh\"]\n"
		"env = { GH_TOKEN = \"x\" }\n"
		"[egress.gh]\ndestinations = [\"api.github.com\"]\nsecret.ref = \"env://GH_TOKEN\"\n",
		7, 9, "`[tool.gh.env]` sets GH_TOKEN");
	refused(REQ "[agent]\ncommand = [\"x\"]\n[mcp.fs]\ntype = \"stdio\"\ncommand = [\"srv\"]\n"
		"env = { GH_TOKEN = \"x\" }\n"
		"[egress.gh]\ndestinations = [\"api.github.com\"]\nsecret.ref = \"env://GH_TOKEN\"\n",
		8, 9, "`[mcp.fs.env]` sets GH_TOKEN");
	/* ... unless its `egress` list leaves that route out */
	cfg = load(REQ "[agent]\ncommand = [\"x\"]\n[tool.gh]\ncommand = [\"gh\"]\negress = [\"other\"]\n"
		   "env = { GH_TOKEN = \"x\" }\n"
		   "[egress.gh]\ndestinations = [\"api.github.com\"]\nsecret.ref = \"env://GH_TOKEN\"\n"
		   "[egress.other]\ndestinations = [\"other.example\"]\nsecret.ref = \"env://O\"\n",
		   &err);
	CHECK(cfg != NULL);
	box_config_free(cfg);
	refused(REQ "[agent]\ncommand = [\"x\"]\n[tool.gh]\ncommand = [\"gh\"]\negress = [\"gh\"]\n"
		"env = { GH_TOKEN = \"x\" }\n"
		"[egress.gh]\ndestinations = [\"api.github.com\"]\nsecret.ref = \"env://GH_TOKEN\"\n",
		8, 9, "`[tool.gh.env]` sets GH_TOKEN");
	/* an aws:// route signs; its placeholder keys are no phantom of an env table */
	cfg = load(REQ "[agent]\ncommand = [\"x\"]\nenv = { AWS_REGION = \"eu-west-1\" }\n"
		   "[egress.s3]\ndestinations = [\"s3.amazonaws.com\"]\nsecret.ref = \"aws://default\"\n",
		   &err);
	CHECK(cfg != NULL);
	box_config_free(cfg);
}

static const struct test_case tests[] = {
	{ "full", test_full },
	{ "defaults", test_defaults },
	{ "paths", test_paths },
	{ "top_refusals", test_top_refusals },
	{ "process_refusals", test_process_refusals },
	{ "filesystem_refusals", test_filesystem_refusals },
	{ "limits", test_limits },
	{ "egress_refusals", test_egress_refusals },
	{ "mcp_telemetry_gateway", test_mcp_telemetry_gateway },
	{ "toml_errors", test_toml_errors },
	{ "phantom_env", test_phantom_env },
};

TEST_MAIN(tests)
