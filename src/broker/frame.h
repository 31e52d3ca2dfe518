/* frame.h - the wire between a tool's shim and the broker (docs/tools.md
 * "The shim's protocol").
 *
 * The shim (cairn-shim, in the agent's sandbox, untrusted) connects to
 * <box_dir>/run/box.sock and sends one `spawn` frame carrying its argv and
 * cwd by value and its descriptors 0-2 (SCM_RIGHTS); then, while the tool
 * runs, `signal` frames for the signals it forwards.  The broker answers
 * with one terminal frame, `exit` (the tool ran) or `refused` (it did not:
 * the status and the line the shim prints), and closes.
 *
 * A frame is a 4-byte big-endian length (1 .. BRK_FRAME_MAX, checked
 * before anything is allocated) and that many bytes of JSON:
 *
 *   {"version":1,"frame_type":"spawn","body":{"argv":[..],"cwd":"/..",
 *                                              "foreground":false}}
 *   {"version":1,"frame_type":"signal","body":{"signal":2}}
 *   {"version":1,"frame_type":"exit","body":{"status":0}}
 *   {"version":1,"frame_type":"refused","body":{"status":126,"message":".."}}
 *
 * Strict, as Box's alias protocol is:
 * unknown keys refused in the header and the body, every key required,
 * strings UTF-8 without NUL, argv 1 .. BRK_ARGV_MAX words.  The version is
 * read before anything else, so a shim of another build is told which
 * version this box speaks rather than that its frame is malformed.
 *
 * Descriptors travel only with a spawn frame, exactly three; any other
 * frame that carries some, or a spawn frame with more or fewer, is
 * malformed.  Everything received is O_CLOEXEC. */
#ifndef CAIRN_BROKER_FRAME_H
#define CAIRN_BROKER_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#define BRK_VERSION 1
#define BRK_FRAME_MAX (1u << 20)        /* Box's 1 MiB */
#define BRK_ARGV_MAX 4096
#define BRK_FRAME_MS 5000               /* the rest of a frame once its first byte came */

enum brk_type { BRK_SPAWN = 1, BRK_SIGNAL, BRK_EXIT, BRK_REFUSED };

struct brk_frame {
	enum brk_type type;
	char **argv;                    /* SPAWN: argc words, NULL-terminated */
	size_t argc;
	char *cwd;                      /* SPAWN: absolute */
	bool foreground;                /* SPAWN: the shim's group owns its terminal */
	int signal;                     /* SIGNAL */
	int status;                     /* EXIT: 0..255; REFUSED: 125, 126 or 127 */
	char *message;                  /* REFUSED: the line the shim prints */
	int fds[3];                     /* SPAWN: received; -1 otherwise */
	size_t n_fds;
};

/* What brk_recv returns besides a frame (1) and a clean end (0). */
enum {
	BRK_E_IO = -1,                  /* the peer went away mid-frame, or a timeout */
	BRK_E_MALFORMED = -2,           /* the frame breaks the rules above */
	BRK_E_VERSION = -3,             /* a well-formed header of another version:
	                                   *version_out says which */
};

/* The signals a shim forwards (docs/tools.md): true for those a signal
 * frame may carry. */
bool brk_signal_forwarded(int sig);

/* Read one frame from fd.  wait_ms bounds the wait for its first byte (-1:
 * none); the rest must come within BRK_FRAME_MS.  1 and *f (free with
 * brk_frame_clear), 0 on a clean end (EOF before any byte), or a BRK_E_*
 * with err; *version_out gets the header's version when it could be read. */
int brk_recv(int fd, int wait_ms, struct brk_frame *f, int *version_out, char *err,
	     size_t errlen);

/* Parse the JSON of one frame (brk_recv's second half; the fuzz target's
 * entry).  0, BRK_E_MALFORMED or BRK_E_VERSION. */
int brk_parse(const char *text, size_t len, struct brk_frame *f, int *version_out, char *err,
	      size_t errlen);

/* Write f (its type's fields), with fds[0, n_fds) attached when n_fds > 0.
 * Blocks at most BRK_FRAME_MS.  0, or -1 with err. */
int brk_send(int fd, const struct brk_frame *f, const int *fds, size_t n_fds, char *err,
	     size_t errlen);

/* Free what brk_recv/brk_parse allocated and close the received fds that
 * are still >= 0; f is left empty (fds -1).  NULL is a no-op. */
void brk_frame_clear(struct brk_frame *f);

#endif
