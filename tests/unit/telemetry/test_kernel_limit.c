/* test_kernel_limit.c - kernel refusal records (record.c tm_record_kernel)
 * and Box's rate limit on them (kernel_limit.c), on a clock the test
 * drives: the first of each kind at once, repeats counted for 10 s and said
 * when the window closes, 256 kinds then one per system call, every count
 * said by the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "kernel_limit.h"
#include "test.h"

#define S 1000000000LL

static struct tm_kernel_refusal refusal(const char *syscall, const char *args, const char *prog)
{
	static const char *const argv[] = { "-c", "print(1)", "--flag", "--key=value" };
	return (struct tm_kernel_refusal){ .time_ns = 1767225600123456789LL, .syscall = syscall,
					   .arguments = args, .pid = 42, .program = prog,
					   .n_args = 4, .args = argv, .cwd = "/work" };
}

static void test_windows(void)
{
	struct tm_kernel_limit *l = tm_kernel_limit_new(NULL);
	struct tm_kernel_stats st;
	struct tm_kernel_refusal k = refusal("socket", "family=AF_PACKET type=SOCK_RAW",
					     "/usr/bin/python3");
	int64_t t0 = 100 * S;
	CHECK_EQ_INT(tm_kernel_due(l), INT64_MAX);
	tm_kernel_refused(l, &k, t0);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.recorded, 1);                   /* the first, at once */
	CHECK_EQ_INT(tm_kernel_due(l), t0 + 10 * S);
	for (int i = 1; i <= 4; i++)
		tm_kernel_refused(l, &k, t0 + i * S);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.refused, 5);
	CHECK_EQ_INT(st.recorded, 1);                   /* repeats counted */
	tm_kernel_tick(l, t0 + 10 * S - 1);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.recorded, 1);
	tm_kernel_tick(l, t0 + 10 * S);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.recorded, 2);                   /* the window closed: said */
	CHECK_EQ_INT(tm_kernel_due(l), INT64_MAX);
	tm_kernel_refused(l, &k, t0 + 11 * S);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.recorded, 3);                   /* idle again: at once */
	/* another program, or other arguments, is another kind */
	struct tm_kernel_refusal k2 = refusal("socket", "family=AF_NETLINK type=SOCK_RAW",
					      "/usr/bin/python3");
	struct tm_kernel_refusal k3 = refusal("socket", "family=AF_PACKET type=SOCK_RAW",
					      "/usr/bin/node");
	tm_kernel_refused(l, &k2, t0 + 12 * S);
	tm_kernel_refused(l, &k3, t0 + 12 * S);
	tm_kernel_refused(l, &k3, t0 + 13 * S);
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.recorded, 5);
	tm_kernel_limit_free(l);                        /* k3's repeat: said, not checked */
}

static void test_records_and_overflow(void)
{
	char dir[] = "/tmp/tm-kernel-XXXXXX", path[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/r.jsonl", dir);
	const struct tm_file_target t = { NULL, path, -1, TM_SIG_KERNEL | TM_SIG_TRACE };
	const struct tm_config cfg = { .box_id = "box-0011223344556677", .n_files = 1,
				       .files = &t, .live_fd = -1 };
	struct tm_collector *c = NULL;
	char err[256];
	CHECK_EQ_INT(tm_collector_open(&cfg, &c, err, sizeof(err)), 0);
	struct tm_kernel_limit *l = tm_kernel_limit_new(c);
	struct tm_kernel_refusal k = refusal("socket", "family=AF_PACKET type=SOCK_RAW",
					     "/usr/bin/python3");
	tm_kernel_refused(l, &k, 1 * S);
	tm_kernel_refused(l, &k, 2 * S);
	tm_kernel_refused(l, &k, 3 * S);
	/* 300 kinds of unshare: 256 kept (one taken above), the rest per call */
	char prog[64];
	for (int i = 0; i < 300; i++) {
		snprintf(prog, sizeof(prog), "/bin/p%d", i);
		struct tm_kernel_refusal u = refusal("unshare", "flags=CLONE_NEWUSER", prog);
		tm_kernel_refused(l, &u, 4 * S);
	}
	struct tm_kernel_stats st;
	tm_kernel_stats(l, &st);
	CHECK_EQ_INT(st.refused, 303);
	CHECK_EQ_INT(st.recorded, 1 + 255 + 1);         /* 255 kinds, then one for unshare */
	tm_kernel_limit_free(l);                        /* socket's 2, unshare's 44: said */
	CHECK_EQ_INT(tm_collector_close(c, err, sizeof(err)), 0);
	size_t n;
	char *text = test_read_file(path, &n);
	CHECK(text != NULL);
	if (text != NULL) {
		/* Box's attributes, in Box's order, on a log record of its own scope */
		CHECK(strstr(text, "{\"scope\":{\"name\":\"strands-box.containment\"") != NULL);
		CHECK(strstr(text, "\"severityNumber\":14,\"severityText\":\"refused\"") != NULL);
		CHECK(strstr(text, "\"attributes\":[{\"key\":\"strands.box.containment.mechanism\","
				   "\"value\":{\"stringValue\":\"seccomp\"}},{\"key\":\"strands.box."
				   "containment.syscall\",\"value\":{\"stringValue\":\"socket\"}},{\"key\":"
				   "\"strands.box.containment.arguments\",\"value\":{\"stringValue\":"
				   "\"family=AF_PACKET type=SOCK_RAW\"}},{\"key\":\"strands.box.containment."
				   "errno\",\"value\":{\"stringValue\":\"EPERM\"}},{\"key\":\"strands.box."
				   "containment.suppressed\",\"value\":{\"intValue\":\"0\"}},{\"key\":"
				   "\"process.pid\",\"value\":{\"intValue\":\"42\"}},{\"key\":\"process."
				   "command\",\"value\":{\"stringValue\":\"/usr/bin/python3\"}},{\"key\":"
				   "\"process.command_args\",\"value\":{\"arrayValue\":{\"values\":[{"
				   "\"stringValue\":\"/usr/bin/python3\"},{\"stringValue\":\"-c\"},{"
				   "\"stringValue\":\"<redacted>\"},{\"stringValue\":\"--flag\"},{"
				   "\"stringValue\":\"--key=<redacted>\"}]}}},{\"key\":\"process."
				   "working_directory\",\"value\":{\"stringValue\":\"/work\"}}]") != NULL);
		CHECK(strstr(text, "\"eventName\":\"strands.box.containment.refusal\"") != NULL);
		CHECK(strstr(text, "containment.suppressed\",\"value\":{\"intValue\":\"2\"}") != NULL);
		CHECK(strstr(text, "containment.suppressed\",\"value\":{\"intValue\":\"44\"}") != NULL);
		CHECK(strstr(text, "\"stringValue\":\"refusals_unobserved\"") != NULL);
		CHECK(strstr(text, "\"name\":\"policy ") == NULL && strstr(text, "refusal\"}],"
									  "\"resourceSpans") == NULL);
		CHECK(strstr(text, "\"name\":\"seccomp\"") == NULL);    /* no span of a refusal */
	}
	free(text);
	unlink(path);
	rmdir(dir);
}

static const struct test_case tests[] = {
	{ "windows", test_windows },
	{ "records_and_overflow", test_records_and_overflow },
};

TEST_MAIN(tests)
