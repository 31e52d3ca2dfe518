/* fuzz_shim_frame.c - libFuzzer target: the shim's frames (src/broker/frame.h).
 *
 * The input is one frame's JSON (what follows the length prefix).  brk_parse
 * must keep frame.h's promises, which this target checks:
 *
 *   - It returns 0, BRK_E_MALFORMED or BRK_E_VERSION, and on failure a
 *     non-empty message and an empty frame (no argv, no strings, fds -1).
 *   - On success the frame is of one of the four types with its fields in
 *     their ranges: a spawn has 1..BRK_ARGV_MAX words, NULL-terminated, and
 *     an absolute cwd; a signal is one brk_signal_forwarded takes; an exit
 *     is 0..255; a refusal 125..127 with a message.
 *   - What brk_send writes for it is read back by brk_recv as the same
 *     frame (a spawn with three descriptors attached), and parsing the same
 *     bytes twice gives the same answer.
 *
 * A broken promise aborts; leaks are ASan's to report. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const struct brk_frame *a, const struct brk_frame *b)
{
	if (a->type != b->type)
		abort();
	switch (a->type) {
	case BRK_SPAWN:
		if (a->argc != b->argc || a->foreground != b->foreground ||
		    strcmp(a->cwd, b->cwd) != 0)
			abort();
		for (size_t i = 0; i < a->argc; i++)
			if (strcmp(a->argv[i], b->argv[i]) != 0)
				abort();
		break;
	case BRK_SIGNAL:
		if (a->signal != b->signal)
			abort();
		break;
	case BRK_EXIT:
		if (a->status != b->status)
			abort();
		break;
	case BRK_REFUSED:
		if (a->status != b->status || strcmp(a->message, b->message) != 0)
			abort();
		break;
	}
}

static void check(const struct brk_frame *f)
{
	switch (f->type) {
	case BRK_SPAWN:
		if (f->argc < 1 || f->argc > BRK_ARGV_MAX || f->argv[f->argc] != NULL ||
		    f->cwd == NULL || f->cwd[0] != '/')
			abort();
		break;
	case BRK_SIGNAL:
		if (!brk_signal_forwarded(f->signal))
			abort();
		break;
	case BRK_EXIT:
		if (f->status < 0 || f->status > 255)
			abort();
		break;
	case BRK_REFUSED:
		if (f->status < 125 || f->status > 127 || f->message == NULL)
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct brk_frame f, g;
	char err[512], err2[512];
	int v, v2;
	err[0] = err2[0] = '\0';
	int rc = brk_parse((const char *)data, size, &f, &v, err, sizeof(err));
	int rc2 = brk_parse((const char *)data, size, &g, &v2, err2, sizeof(err2));
	if (rc != rc2 || strcmp(err, err2) != 0)
		abort();
	if (rc != 0) {
		if ((rc != BRK_E_MALFORMED && rc != BRK_E_VERSION) || err[0] == '\0' ||
		    f.argv != NULL || f.cwd != NULL || f.message != NULL || f.fds[0] != -1)
			abort();
		return 0;
	}
	check(&f);
	same(&f, &g);
	brk_frame_clear(&g);
	/* what it sends is what comes back */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	int fds[3] = { 0, 1, 2 };
	size_t nfds = f.type == BRK_SPAWN ? 3 : 0;
	/* a frame near the limit may not fit the socket's buffer unread: a
	 * reader thread is more than this check needs, so skip those */
	if (size < 100000) {
		if (brk_send(sv[0], &f, fds, nfds, err, sizeof(err)) != 0)
			abort();
		if (brk_recv(sv[1], 1000, &g, &v2, err, sizeof(err)) != 1)
			abort();
		same(&f, &g);
		brk_frame_clear(&g);
	}
	close(sv[0]);
	close(sv[1]);
	brk_frame_clear(&f);
	return 0;
}
