/* med_path.h - the sandbox's view as the mediator sees it: the trees that
 * class every path (mediate.h), and the resolver that turns the bytes a
 * call named into the canonical path the policy judges and the directory
 * descriptor the operation is then performed on.
 *
 * A path is resolved component by component, symbolic links followed as
 * the kernel would (at most 40), ".." taken on the canonical prefix.  Each
 * tree has an anchor: a descriptor of its root, opened once in the
 * sandbox's view (through /proc/<pid>/root).  Walking stops at a runtime or
 * kernel tree, which holds nothing the mediator decides. */
#ifndef CAIRN_MED_PATH_H
#define CAIRN_MED_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "mediate.h"

struct med_area {
	char *path;
	size_t len;
	enum med_class cls;
	unsigned access;
	const char *why;
	int fd;                         /* O_PATH anchor; -1: absent (nothing resolves in it) */
	bool terminal;                  /* runtime, kernel or floor with no other tree inside:
	                                   a walk stops on entering it */
	bool in_skeleton;               /* its parent is in the view's own skeleton, which
	                                   the workload cannot change: the stretch from "/"
	                                   to it holds no link */
};

struct med_view {
	struct med_area *v;
	size_t n;
	int root;                       /* index of "/" */
	char *home;                     /* canonical operator home, or NULL */
	size_t home_len;
	dev_t auth_dev[2];              /* the loaded config and policy, by identity */
	ino_t auth_ino[2];
	char *auth_path[2];
	size_t n_auth;
};

/* Open every anchor beneath cfg->view_fd.  0, or -1 with err. */
int med_view_open(struct med_view *vw, const struct med_config *cfg, char *err, size_t errlen);
void med_view_close(struct med_view *vw);

/* The deepest tree holding the canonical path p[0, len) (never NULL: "/"
 * holds everything). */
const struct med_area *med_view_find(const struct med_view *vw, const char *p, size_t len);

/* The loaded config or policy, by identity: its path, or NULL. */
const char *med_view_authority(const struct med_view *vw, const struct stat *st);

/* p is the loaded config or policy, or one of their ancestors. */
bool med_view_holds_authority(const struct med_view *vw, const char *p, size_t len);

/* Spell p as Box's policies see it: "~" or "~/…" under the operator's
 * home, else as is.  Returns out. */
const char *med_view_spell(const struct med_view *vw, const char *p, char *out, size_t outlen);

enum {
	MED_FOLLOW = 1u << 0,           /* follow a symbolic link in the last component */
	MED_PARENT = 1u << 1,           /* the call acts on the name itself (creates, removes):
	                                   a missing last component is not an error */
	MED_META = 1u << 2,             /* the call reads the object's metadata only: its
	                                   descriptor may be left out (fd -1, st and dirfd
	                                   set) */
};

struct med_res {
	char path[PATH_MAX];            /* canonical; for a stopped walk, the rest as written */
	size_t len;
	const struct med_area *area;    /* the tree holding path */
	bool stopped;                   /* the walk reached a runtime/kernel tree: the
	                                   kernel resolves the rest */
	int dirfd;                      /* O_PATH of the last component's directory (owned) */
	char name[NAME_MAX + 1];        /* the last component; "" for "/" or an anchor */
	int fd;                         /* O_PATH of the object itself (owned), -1 if absent */
	bool exists;
	struct stat st;                 /* exists: the object (not followed if a link) */
};

/* Resolve path (as the call named it) against base (the canonical
 * directory a relative path starts from: the thread's cwd or the call's
 * dirfd; NULL when path is absolute).  0 and *out (release with
 * med_res_close), or -errno: ENOENT (a directory on the way is missing),
 * ENOTDIR, ELOOP, ENAMETOOLONG, EACCES (the walk needs a tree the view
 * does not hold).  The last component missing is 0 with exists false. */
int med_resolve(const struct med_view *vw, const char *base, const char *path, unsigned flags,
		struct med_res *out);
void med_res_close(struct med_res *r);

#endif
