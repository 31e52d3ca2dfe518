/* boxdir.h - the box directory (docs/box-compat.md "The box directory"):
 * created 0700 if absent, owner and mode checked, one run at a time, the
 * layout bin/ run/ trust/ private/, and the box's id (private/box-id).  Every operation is relative to the
 * directory fd opened here, never to a path looked up again. */
#ifndef CAIRN_BOXDIR_H
#define CAIRN_BOXDIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define BOXDIR_ID_LEN 20                /* "box-" + 16 hex digits */

struct boxdir {
	int fd;                 /* box_dir: O_DIRECTORY|O_NOFOLLOW; its flock is held only
	                           while boxdir_open sets the directory up */
	int private_fd;         /* private/ */
	int lock_fd;            /* private/.lock, flock(LOCK_EX) held for the run */
	dev_t dev;
	ino_t ino;
	bool created;           /* this call made box_dir */
	char id[BOXDIR_ID_LEN + 1];     /* "box-<16 hex>", settled on first use */
	char path[PATH_MAX];    /* as authored (absolute), trailing slashes removed */
};

/* Open (creating when absent, mode 0700; its parent must exist) the box
 * directory `path` of the box `name`, check it is a directory owned by the
 * effective uid with mode exactly 0700, take the run lock, and make bin/,
 * run/, trust/ and private/ (0700) inside.  A second run of the same box gets
 * Box's message "box <name> is already running, and one run owns a box at a
 * time; wait for that run to exit, or start a configuration with a different
 * `box_dir`".  Returns 0 and *out (close with boxdir_close), or -1 with Box's
 * text in err[0, errlen) ("unsafe box directory <p>: its mode is not 0700").
 * While another opener is between its own checks and its run lock, the text
 * is "another cairn operation is in progress for this box; retry shortly".
 * A failure closes what it opened and leaves a directory it created.  Sets
 * the process umask for a moment, so call it before any thread starts. */
int boxdir_open(const char *path, const char *name, struct boxdir *out, char *err, size_t errlen);

/* Re-check that box_dir is still the directory boxdir_open judged (same dev
 * and ino at the same path).  0, or -1 with Box's "its identity changed" text. */
int boxdir_verify(const struct boxdir *b, char *err, size_t errlen);

/* Release the lock and close every descriptor.  Leaves the directory. */
void boxdir_close(struct boxdir *b);

#endif
