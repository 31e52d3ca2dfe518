/* history_cmd.c - `cairn history show|verify BOX_DIR`.
 *
 *   cairn history show BOX_DIR [--since DURATION] [--action A]
 *       every event of the box's history as one JSON object per line, oldest
 *       first, a decided event with its stored decision and a refusal with
 *       its note (docs/formats.md §5); --since 10m keeps events of the last
 *       ten minutes (s, m, h, d); --action keeps one action (`fs:read` or
 *       `Box::Action::"fs:read"`).
 *   cairn history verify BOX_DIR
 *       checks every record's CRC and the hash chain; names the first bad one.
 *
 * The history lives in BOX_DIR/private/history (a directory holding
 * history.log); a directory that itself holds history.log is taken as is.
 * Reading never takes the box's lock and never changes a byte, so both work
 * beside a running box.  Exit 0; 2 when the history is damaged; 1 on usage or
 * I/O errors. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "dogwood.h"

static char *history_dir(const char *box)
{
	char *p = NULL;
	struct stat st;

	if (asprintf(&p, "%s/private/history", box) < 0)
		return NULL;
	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return p;
	free(p);
	if (asprintf(&p, "%s/history.log", box) < 0)
		return NULL;
	if (stat(p, &st) == 0) {
		free(p);
		return strdup(box);
	}
	free(p);
	return asprintf(&p, "%s/private/history", box) < 0 ? NULL : p;
}

/* "90s", "10m", "2h", "1d" -> nanoseconds; -1 if malformed. */
static int64_t parse_duration(const char *s)
{
	char *end;
	long long n;
	int64_t unit, r;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || end == s || n < 0 || end[0] == '\0' || end[1] != '\0')
		return -1;
	switch (*end) {
	case 's': unit = 1; break;
	case 'm': unit = 60; break;
	case 'h': unit = 3600; break;
	case 'd': unit = 86400; break;
	default: return -1;
	}
	if (__builtin_mul_overflow((int64_t)n, unit * 1000000000LL, &r))
		return -1;
	return r;
}

struct show {
	int64_t since;           /* ns; INT64_MIN: everything */
	const char *action;      /* NULL: every action */
	uint64_t shown;
};

static int show_one(void *arg, const struct dw_history_event *ev)
{
	struct show *sh = arg;

	if (ev->ts < sh->since)
		return 0;
	if (sh->action != NULL && strcmp(sh->action, ev->action) != 0) {
		/* also accept the full UID: Box::Action::"fs:read" */
		char *uid = NULL;
		int same = asprintf(&uid, "%s::\"%s\"", ev->ns, ev->action) >= 0 &&
			   strcmp(uid, sh->action) == 0;
		free(uid);
		if (!same)
			return 0;
	}
	puts(ev->json);
	sh->shown++;
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	struct show sh = { INT64_MIN, NULL, 0 };
	const char *box = NULL;
	char err[600], *dir;
	int r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--since") == 0 && i + 1 < argc) {
			int64_t d = parse_duration(argv[++i]);
			struct timespec now;
			if (d < 0) {
				fprintf(stderr, "cairn: error: --since takes a duration like 90s, 10m, "
					"2h or 1d, not `%s`\n", argv[i]);
				return EXIT_USAGE;
			}
			clock_gettime(CLOCK_REALTIME, &now);
			sh.since = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - d;
		} else if (strcmp(argv[i], "--action") == 0 && i + 1 < argc) {
			sh.action = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "cairn: error: unknown option `%s` for `history show`\n", argv[i]);
			return EXIT_USAGE;
		} else if (box == NULL) {
			box = argv[i];
		} else {
			fprintf(stderr, "cairn: error: `history show` takes one box directory\n");
			return EXIT_USAGE;
		}
	}
	if (box == NULL) {
		fprintf(stderr, "usage: cairn history show BOX_DIR [--since DURATION] [--action A]\n");
		return EXIT_USAGE;
	}
	if ((dir = history_dir(box)) == NULL)
		return EXIT_USAGE;
	r = dw_history_read(dir, show_one, &sh, err, sizeof err);
	free(dir);
	if (r == -EUCLEAN) {
		fprintf(stderr, "cairn: warning: %s (the box repairs it when it next opens)\n", err);
		return EXIT_OK;
	}
	if (r != 0) {
		fprintf(stderr, "cairn: error: %s\n", r == -ENOMEM ? "out of memory" : err);
		return r == -EBADMSG ? EXIT_REJECTED : EXIT_USAGE;
	}
	return EXIT_OK;
}

static int cmd_verify(int argc, char **argv)
{
	char err[600], *dir;
	uint64_t n = 0;
	int r;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: cairn history verify BOX_DIR\n");
		return EXIT_USAGE;
	}
	if ((dir = history_dir(argv[1])) == NULL)
		return EXIT_USAGE;
	r = dw_history_verify(dir, &n, err, sizeof err);
	free(dir);
	if (r == 0) {
		printf("OK: %" PRIu64 " record%s, every CRC and the hash chain intact.\n", n,
		       n == 1 ? "" : "s");
		return EXIT_OK;
	}
	if (r == -EBADMSG || r == -EUCLEAN) {
		printf("FAILED: %s\n", err);
		if (r == -EUCLEAN)
			printf("(%" PRIu64 " intact record%s before it; a torn tail is what a crash "
			       "mid-write leaves, and the box truncates it when it next opens)\n", n,
			       n == 1 ? "" : "s");
		return EXIT_REJECTED;
	}
	fprintf(stderr, "cairn: error: %s\n", err);
	return EXIT_USAGE;
}

int cmd_history(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "show") == 0)
		return cmd_show(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return cmd_verify(argc - 1, argv + 1);
	fprintf(stderr, "usage: cairn history show|verify BOX_DIR ...\n");
	return EXIT_USAGE;
}
