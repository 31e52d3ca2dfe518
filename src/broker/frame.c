/* frame.c - the shim's frames (frame.h; docs/tools.md "The shim's protocol"). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define MAX_FDS 3

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err != NULL && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

bool brk_signal_forwarded(int sig)
{
	switch (sig) {
	case SIGINT: case SIGTERM: case SIGHUP: case SIGQUIT:
	case SIGUSR1: case SIGUSR2: case SIGWINCH: case SIGCONT:
		return true;
	default:
		return false;
	}
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is readable (or writable) by deadline (-1: forever). */
static int wait_fd(int fd, short ev, long long deadline)
{
	for (;;) {
		int t = -1;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			t = left < 0 ? 0 : (int)left;
		}
		struct pollfd p = { .fd = fd, .events = ev };
		int r = poll(&p, 1, t);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Read exactly n bytes, keeping what descriptors arrive with them in fds
 * (beyond MAX_FDS: closed, and *extra set).  The frame's first byte is
 * waited for until first_deadline (-1: forever) unless *rest is set; from
 * the first byte on, everything must come by *rest (first byte +
 * BRK_FRAME_MS), one deadline for the whole frame, so a peer trickling a
 * byte at a time holds nothing for longer.  Returns n, 0 at EOF before the
 * first byte, -1 short or on error. */
static ssize_t read_full(int fd, unsigned char *buf, size_t n, long long first_deadline,
			 long long *rest, int *fds, size_t *n_fds, bool *extra)
{
	size_t got = 0;
	while (got < n) {
		long long dl = *rest >= 0 ? *rest : first_deadline;
		if (wait_fd(fd, POLLIN, dl) < 0)
			return -1;
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * (MAX_FDS + 1))];
		} cm;
		struct iovec iov = { .iov_base = buf + got, .iov_len = n - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b) };
		ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -1;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *in = (int *)CMSG_DATA(c);
			for (size_t i = 0; i < k; i++) {
				if (*n_fds < MAX_FDS) {
					fds[(*n_fds)++] = in[i];
				} else {
					close(in[i]);
					*extra = true;
				}
			}
		}
		if (mh.msg_flags & MSG_CTRUNC)
			*extra = true;          /* more than the buffer held: refused */
		if (r == 0)
			return got == 0 && *rest < 0 ? 0 : -1;
		if (*rest < 0)
			*rest = now_ms() + BRK_FRAME_MS;
		got += (size_t)r;
	}
	return (ssize_t)n;
}

/* ---- parsing --------------------------------------------------------------------- */

/* Every key of o is one of names[0, n), and each of them is present. */
static bool exact_keys(json_t *o, const char *const *names, size_t n)
{
	if (!json_is_object(o) || json_object_size(o) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (json_object_get(o, names[i]) == NULL)
			return false;
	return true;
}

/* A JSON string without NUL, copied. */
static char *take_str(json_t *v)
{
	if (!json_is_string(v))
		return NULL;
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	if (memchr(s, '\0', len) != NULL)
		return NULL;
	return strdup(s);
}

static bool small_int(json_t *v, long long lo, long long hi, int *out)
{
	if (!json_is_integer(v))
		return false;
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return false;
	*out = (int)x;
	return true;
}

static int parse_spawn(json_t *b, struct brk_frame *f, char *err, size_t errlen)
{
	static const char *const keys[] = { "argv", "cwd", "foreground" };
	if (!exact_keys(b, keys, 3))
		return fail(err, errlen, BRK_E_MALFORMED, "a spawn body holds exactly argv, cwd "
			    "and foreground");
	json_t *av = json_object_get(b, "argv"), *fg = json_object_get(b, "foreground");
	size_t n = json_is_array(av) ? json_array_size(av) : 0;
	if (n == 0 || n > BRK_ARGV_MAX)
		return fail(err, errlen, BRK_E_MALFORMED, "argv must hold 1 to %d words",
			    BRK_ARGV_MAX);
	if (!json_is_boolean(fg))
		return fail(err, errlen, BRK_E_MALFORMED, "foreground must be a boolean");
	f->argv = calloc(n + 1, sizeof(*f->argv));
	if (f->argv == NULL)
		return fail(err, errlen, BRK_E_MALFORMED, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((f->argv[i] = take_str(json_array_get(av, i))) == NULL)
			return fail(err, errlen, BRK_E_MALFORMED, "argv[%zu] is not a string "
				    "without NUL", i);
		f->argc = i + 1;
	}
	f->cwd = take_str(json_object_get(b, "cwd"));
	if (f->cwd == NULL || f->cwd[0] != '/')
		return fail(err, errlen, BRK_E_MALFORMED, "cwd must be an absolute path");
	f->foreground = json_is_true(fg);
	return 0;
}

int brk_parse(const char *text, size_t len, struct brk_frame *f, int *version_out, char *err,
	      size_t errlen)
{
	static const char *const with_body[] = { "version", "frame_type", "body" };
	memset(f, 0, sizeof(*f));
	f->fds[0] = f->fds[1] = f->fds[2] = -1;
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	int rc = BRK_E_MALFORMED;
	if (root == NULL) {
		fail(err, errlen, rc, "not JSON: %s at %d:%d", je.text, je.line, je.column);
		goto out;
	}
	/* The version first: another build's shim is told what this one speaks. */
	json_t *v = json_object_get(root, "version");
	int ver;
	if (!json_is_object(root) || !small_int(v, 0, INT32_MAX, &ver)) {
		fail(err, errlen, rc, "the frame has no version");
		goto out;
	}
	if (version_out != NULL)
		*version_out = ver;
	if (ver != BRK_VERSION) {
		rc = fail(err, errlen, BRK_E_VERSION, "unsupported protocol version %d; this box "
			  "speaks %d", ver, BRK_VERSION);
		goto out;
	}
	if (!exact_keys(root, with_body, 3)) {
		fail(err, errlen, rc, "a frame holds exactly version, frame_type and body");
		goto out;
	}
	const char *t = json_string_value(json_object_get(root, "frame_type"));
	json_t *b = json_object_get(root, "body");
	if (t == NULL || !json_is_object(b)) {
		fail(err, errlen, rc, "frame_type must be a string and body an object");
		goto out;
	}
	static const char *const k_signal[] = { "signal" }, *const k_exit[] = { "status" },
			  *const k_refused[] = { "status", "message" };
	if (strcmp(t, "spawn") == 0) {
		f->type = BRK_SPAWN;
		if (parse_spawn(b, f, err, errlen) != 0)
			goto out;
	} else if (strcmp(t, "signal") == 0) {
		f->type = BRK_SIGNAL;
		if (!exact_keys(b, k_signal, 1) ||
		    !small_int(json_object_get(b, "signal"), 1, 64, &f->signal) ||
		    !brk_signal_forwarded(f->signal)) {
			fail(err, errlen, rc, "a signal body holds one signal a shim forwards");
			goto out;
		}
	} else if (strcmp(t, "exit") == 0) {
		f->type = BRK_EXIT;
		if (!exact_keys(b, k_exit, 1) ||
		    !small_int(json_object_get(b, "status"), 0, 255, &f->status)) {
			fail(err, errlen, rc, "an exit body holds one status, 0 to 255");
			goto out;
		}
	} else if (strcmp(t, "refused") == 0) {
		f->type = BRK_REFUSED;
		if (!exact_keys(b, k_refused, 2) ||
		    !small_int(json_object_get(b, "status"), 125, 127, &f->status) ||
		    (f->message = take_str(json_object_get(b, "message"))) == NULL) {
			fail(err, errlen, rc, "a refused body holds a status (125-127) and a "
			     "message");
			goto out;
		}
	} else {
		/* not echoed: a cut name could end mid-character */
		fail(err, errlen, rc, "the frame_type is none of spawn, signal, exit, refused");
		goto out;
	}
	rc = 0;
out:
	json_decref(root);
	if (rc != 0)
		brk_frame_clear(f);
	return rc;
}

int brk_recv(int fd, int wait_ms, struct brk_frame *f, int *version_out, char *err,
	     size_t errlen)
{
	int fds[MAX_FDS];
	size_t n_fds = 0;
	bool extra = false;
	unsigned char hdr[4];
	char *body = NULL;
	int rc;

	memset(f, 0, sizeof(*f));
	f->fds[0] = f->fds[1] = f->fds[2] = -1;
	if (version_out != NULL)
		*version_out = -1;
	long long rest = -1;
	ssize_t r = read_full(fd, hdr, 4, wait_ms < 0 ? -1 : now_ms() + wait_ms, &rest, fds, &n_fds,
			      &extra);
	if (r == 0) {
		rc = 0;
		goto out;
	}
	if (r < 0) {
		rc = fail(err, errlen, BRK_E_IO, "the frame's length did not arrive");
		goto out;
	}
	uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 |
		       hdr[3];
	if (len == 0 || len > BRK_FRAME_MAX) {
		rc = fail(err, errlen, BRK_E_MALFORMED, "a frame of %u bytes (1 to %u allowed)",
			  len, BRK_FRAME_MAX);
		goto out;
	}
	if ((body = malloc(len)) == NULL) {
		rc = fail(err, errlen, BRK_E_IO, "out of memory");
		goto out;
	}
	if (read_full(fd, (unsigned char *)body, len, -1, &rest, fds, &n_fds, &extra) !=
	    (ssize_t)len) {
		rc = fail(err, errlen, BRK_E_IO, "the frame ended after its length");
		goto out;
	}
	rc = brk_parse(body, len, f, version_out, err, errlen);
	if (rc != 0)
		goto out;
	bool want = f->type == BRK_SPAWN;
	if (extra || (want && n_fds != MAX_FDS) || (!want && n_fds != 0)) {
		brk_frame_clear(f);
		rc = fail(err, errlen, BRK_E_MALFORMED, "a spawn frame carries exactly three "
			  "descriptors and no other frame any (got %zu%s)", n_fds,
			  extra ? " and more" : "");
		goto out;
	}
	for (size_t i = 0; i < n_fds; i++)
		f->fds[i] = fds[i];
	f->n_fds = n_fds;
	n_fds = 0;
	rc = 1;
out:
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	free(body);
	return rc;
}

/* ---- writing --------------------------------------------------------------------- */

static json_t *body_of(const struct brk_frame *f)
{
	switch (f->type) {
	case BRK_SPAWN: {
		json_t *av = json_array();
		for (size_t i = 0; av != NULL && i < f->argc; i++)
			if (json_array_append_new(av, json_stringn(f->argv[i], strlen(f->argv[i]))))
				return json_decref(av), NULL;
		return json_pack("{s:o, s:s, s:b}", "argv", av, "cwd", f->cwd ? f->cwd : "",
				 "foreground", f->foreground);
	}
	case BRK_SIGNAL:
		return json_pack("{s:i}", "signal", f->signal);
	case BRK_EXIT:
		return json_pack("{s:i}", "status", f->status);
	case BRK_REFUSED:
		return json_pack("{s:i, s:s}", "status", f->status, "message",
				 f->message ? f->message : "");
	}
	return NULL;
}

static const char *type_name(enum brk_type t)
{
	switch (t) {
	case BRK_SPAWN: return "spawn";
	case BRK_SIGNAL: return "signal";
	case BRK_EXIT: return "exit";
	case BRK_REFUSED: return "refused";
	}
	return "";
}

int brk_send(int fd, const struct brk_frame *f, const int *fds, size_t n_fds, char *err,
	     size_t errlen)
{
	json_t *b = body_of(f);
	json_t *root = b ? json_pack("{s:i, s:s, s:o}", "version", BRK_VERSION, "frame_type",
				     type_name(f->type), "body", b) : NULL;
	/* jansson refuses strings that are not UTF-8: the word is named */
	if (root == NULL)
		return fail(err, errlen, -1, "the frame cannot be written (a word that is not "
			    "UTF-8?)");
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (text == NULL)
		return fail(err, errlen, -1, "out of memory");
	size_t len = strlen(text);
	if (len > BRK_FRAME_MAX) {
		free(text);
		return fail(err, errlen, -1, "the frame would be %zu bytes, over %u", len,
			    BRK_FRAME_MAX);
	}
	size_t total = len + 4, off = 0;
	unsigned char *buf = malloc(total);
	if (buf == NULL) {
		free(text);
		return fail(err, errlen, -1, "out of memory");
	}
	buf[0] = (unsigned char)(len >> 24), buf[1] = (unsigned char)(len >> 16);
	buf[2] = (unsigned char)(len >> 8), buf[3] = (unsigned char)len;
	memcpy(buf + 4, text, len);
	free(text);
	long long deadline = now_ms() + BRK_FRAME_MS;
	int rc = 0;
	while (off < total) {
		if (wait_fd(fd, POLLOUT, deadline) < 0) {
			rc = fail(err, errlen, -1, "the peer did not take the frame in time");
			break;
		}
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		} cm;
		struct iovec iov = { .iov_base = buf + off, .iov_len = total - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (off == 0 && n_fds > 0 && n_fds <= MAX_FDS) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
		}
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0) {
			rc = fail(err, errlen, -1, "write: %s", strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	free(buf);
	return rc;
}

void brk_frame_clear(struct brk_frame *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; f->argv != NULL && f->argv[i] != NULL; i++)
		free(f->argv[i]);
	free(f->argv);
	free(f->cwd);
	free(f->message);
	for (size_t i = 0; i < 3; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	memset(f, 0, sizeof(*f));
	f->fds[0] = f->fds[1] = f->fds[2] = -1;
}
