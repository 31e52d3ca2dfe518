/* med_path.c - the view and the resolver (med_path.h). */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "med_path.h"

#define LINKS_MAX 40

static int openat2_path(int dirfd, const char *p, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };
	long fd = syscall(SYS_openat2, dirfd, p, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* ---- the view ------------------------------------------------------------ */

/* dir holds p (p is dir or beneath it). */
static bool holds(const char *dir, size_t dl, const char *p, size_t len)
{
	if (dl == 1)
		return true;
	return len >= dl && memcmp(p, dir, dl) == 0 && (len == dl || p[dl] == '/');
}

static int area_cmp(const void *a, const void *b)
{
	const struct med_area *x = a, *y = b;
	return strcmp(x->path, y->path);
}

/* An anchor in the view: the tree's root resolved beneath the sandbox's
 * root without following any link (the plan made them canonical). */
static int view_anchor(int vroot, const char *path)
{
	if (strcmp(path, "/") == 0)
		return fcntl(vroot, F_DUPFD_CLOEXEC, 3);
	return openat2_path(vroot, path + 1, O_PATH | O_CLOEXEC | O_NOFOLLOW,
			    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

int med_view_open(struct med_view *vw, const struct med_config *cfg, char *err, size_t errlen)
{
	memset(vw, 0, sizeof(*vw));
	vw->root = -1;
	int vroot = cfg->view_fd < 0 ? -1 : fcntl(cfg->view_fd, F_DUPFD_CLOEXEC, 3);
	if (vroot < 0) {
		snprintf(err, errlen, "no view of the sandbox to mediate in: %s",
			 cfg->view_fd < 0 ? "the launcher sent none" : strerror(errno));
		return -1;
	}
	vw->v = calloc(cfg->n_areas + 1, sizeof(*vw->v));
	if (vw->v == NULL)
		goto nomem;
	bool have_root = false;
	for (size_t i = 0; i < cfg->n_areas; i++) {
		const struct med_area_spec *s = &cfg->areas[i];
		if (s->path[0] != '/') {
			snprintf(err, errlen, "mediated tree %s is not absolute", s->path);
			goto fail;
		}
		struct med_area *a = &vw->v[vw->n++];
		a->path = strdup(s->path);
		if (a->path == NULL)
			goto nomem;
		a->len = strlen(a->path);
		if (a->len > 1 && a->path[a->len - 1] == '/')
			a->path[--a->len] = '\0';
		a->cls = s->cls;
		a->access = s->access;
		a->why = s->why;
		a->fd = -1;
		have_root |= a->len == 1;
	}
	if (!have_root) {
		struct med_area *a = &vw->v[vw->n++];
		a->path = strdup("/");
		if (a->path == NULL)
			goto nomem;
		a->len = 1, a->cls = MED_ROOT, a->fd = -1;
	}
	qsort(vw->v, vw->n, sizeof(*vw->v), area_cmp);
	for (size_t i = 0; i < vw->n; i++) {
		struct med_area *a = &vw->v[i];
		if (i > 0 && strcmp(a->path, vw->v[i - 1].path) == 0) {
			snprintf(err, errlen, "mediated tree %s is named twice", a->path);
			goto fail;
		}
		if (a->len == 1)
			vw->root = (int)i;
		/* a tree holding another of a different kind is walked through */
		bool inner = false;
		for (size_t j = 0; j < vw->n; j++)
			inner |= j != i && vw->v[j].len > a->len && vw->v[j].cls != a->cls &&
				 holds(a->path, a->len, vw->v[j].path, vw->v[j].len);
		a->terminal = !inner && (a->cls == MED_RUNTIME || a->cls == MED_KERNEL ||
					 a->cls == MED_FLOOR);
		switch (a->cls) {
		case MED_FLOOR:
		case MED_RUNTIME:
		case MED_KERNEL:
			if (a->terminal)
				break;  /* refused, or left to the kernel: never walked from */
			/* walked in the view to the trees inside */
			__attribute__((fallthrough));
		default:
			a->fd = view_anchor(vroot, a->path);
			if (a->fd < 0 && a->len == 1) {
				snprintf(err, errlen, "cannot open the sandbox's root: %s",
					 strerror(-a->fd));
				goto fail;
			}
			if (a->fd < 0)
				a->fd = -1;     /* an optional tree the view lacks */
			break;
		}
	}
	/* the skeleton ("/" and the directories above the trees) is cairn's,
	 * with no Landlock right for the workload: nothing in it can become a
	 * link, so a stretch of it needs no check per call */
	for (size_t i = 0; i < vw->n; i++) {
		struct med_area *a = &vw->v[i];
		const char *slash = a->len > 1 ? memrchr(a->path, '/', a->len) : NULL;
		size_t pl = slash == NULL ? 0 : slash == a->path ? 1 : (size_t)(slash - a->path);
		a->in_skeleton = pl > 0 && vw->v[vw->root].cls == MED_ROOT &&
				 med_view_find(vw, a->path, pl) == &vw->v[vw->root];
	}
	if (cfg->home != NULL) {
		char real[PATH_MAX];
		if (realpath(cfg->home, real) != NULL && (vw->home = strdup(real)) == NULL)
			goto nomem;
		vw->home_len = vw->home ? strlen(vw->home) : 0;
	}
	const char *auth[2] = { cfg->config_path, cfg->policy_path };
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		if (auth[i] == NULL || stat(auth[i], &st) != 0)
			continue;
		if ((vw->auth_path[vw->n_auth] = strdup(auth[i])) == NULL)
			goto nomem;
		vw->auth_dev[vw->n_auth] = st.st_dev;
		vw->auth_ino[vw->n_auth++] = st.st_ino;
	}
	close(vroot);
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	close(vroot);
	med_view_close(vw);
	return -1;
}

void med_view_close(struct med_view *vw)
{
	for (size_t i = 0; i < vw->n; i++) {
		free(vw->v[i].path);
		if (vw->v[i].fd >= 0)
			close(vw->v[i].fd);
	}
	free(vw->v);
	for (size_t i = 0; i < vw->n_auth; i++)
		free(vw->auth_path[i]);
	free(vw->home);
	memset(vw, 0, sizeof(*vw));
	vw->root = -1;
}


const struct med_area *med_view_find(const struct med_view *vw, const char *p, size_t len)
{
	const struct med_area *best = &vw->v[vw->root];
	for (size_t i = 0; i < vw->n; i++) {
		const struct med_area *a = &vw->v[i];
		if (a->len > best->len && holds(a->path, a->len, p, len))
			best = a;
	}
	return best;
}

const char *med_view_authority(const struct med_view *vw, const struct stat *st)
{
	for (size_t i = 0; i < vw->n_auth; i++)
		if (vw->auth_dev[i] == st->st_dev && vw->auth_ino[i] == st->st_ino)
			return vw->auth_path[i];
	return NULL;
}

bool med_view_holds_authority(const struct med_view *vw, const char *p, size_t len)
{
	for (size_t i = 0; i < vw->n_auth; i++)
		if (holds(p, len, vw->auth_path[i], strlen(vw->auth_path[i])))
			return true;
	return false;
}

const char *med_view_spell(const struct med_view *vw, const char *p, char *out, size_t outlen)
{
	size_t len = strlen(p);
	if (vw->home != NULL && vw->home_len > 1 && holds(vw->home, vw->home_len, p, len))
		snprintf(out, outlen, "~%s", p + vw->home_len);
	else
		snprintf(out, outlen, "%s", p);
	return out;
}

/* ---- the resolver --------------------------------------------------------- */

void med_res_close(struct med_res *r)
{
	if (r->dirfd >= 0)
		close(r->dirfd);
	if (r->fd >= 0)
		close(r->fd);
	r->dirfd = r->fd = -1;
}

/* The walk's position: cur[0, len) canonical, in tree area; fd its
 * descriptor (owned), or -1 until reopened from the tree's anchor. */
struct walk {
	const struct med_view *vw;
	char cur[PATH_MAX];
	size_t len;
	const struct med_area *area;
	int fd;
};

static void walk_drop(struct walk *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* cur's descriptor: cur is canonical, so no link is on the way from its
 * tree's anchor. */
static int walk_fd(struct walk *w)
{
	if (w->fd >= 0)
		return 0;
	const struct med_area *a = w->area;
	if (a->fd < 0)
		return -ENOENT;
	int fd;
	if (w->len == a->len) {
		fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 3);
		fd = fd < 0 ? -errno : fd;
	} else {
		fd = openat2_path(a->fd, w->cur + a->len + (a->len > 1),
				  O_PATH | O_CLOEXEC | O_NOFOLLOW,
				  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	}
	if (fd < 0)
		return fd;
	w->fd = fd;
	return 0;
}

static int walk_take_fd(struct walk *w)
{
	int rc = walk_fd(w);
	if (rc < 0)
		return rc;
	rc = w->fd;
	w->fd = -1;
	return rc;
}

static void walk_root(struct walk *w)
{
	walk_drop(w);
	w->cur[0] = '/';
	w->cur[1] = '\0';
	w->len = 1;
	w->area = &w->vw->v[w->vw->root];
}

static void walk_set(struct walk *w, const char *p, size_t len, const struct med_area *a, int fd)
{
	walk_drop(w);
	memmove(w->cur, p, len);
	w->cur[len] = '\0';
	w->len = len;
	w->area = a;
	w->fd = fd;
}

static bool kernel_tree(const struct med_area *a)
{
	return a->terminal;
}

/* A walk that reached a tree the kernel answers for (or a floor): at
 * p[0, len), with rest still to go, as written. */
static int stop_at(const char *p, size_t len, const char *rest, const struct med_area *a,
		   struct med_res *out)
{
	int n = snprintf(out->path, sizeof(out->path), "%.*s%s%s", (int)len, p,
			 *rest && len > 1 ? "/" : "", rest);
	if (n < 0 || (size_t)n >= sizeof(out->path))
		return -ENAMETOOLONG;
	out->len = (size_t)n;
	out->area = a;
	out->stopped = true;
	return 0;
}

/* One component off the front of *rest; *dir: a '/' followed it.  Returns
 * its length, or SIZE_MAX when it is longer than NAME_MAX. */
static size_t next_component(const char **rest, char name[NAME_MAX + 1], bool *dir)
{
	const char *s = *rest;
	while (*s == '/')
		s++;
	const char *e = strchrnul(s, '/');
	size_t n = (size_t)(e - s);
	*dir = *e == '/';
	while (*e == '/')
		e++;
	*rest = e;
	if (n > NAME_MAX)
		return SIZE_MAX;
	memcpy(name, s, n);
	name[n] = '\0';
	return n;
}

/* The object the walk ended on (a directory reached by ".", ".." or a
 * trailing "/"): its descriptor, and its name in its parent unless it is
 * a tree's root (whose name belongs to the other side). */
static int end_on_dir(struct walk *w, struct med_res *out)
{
	int fd = walk_take_fd(w);
	if (fd < 0)
		return fd;
	out->fd = fd;
	if (fstat(fd, &out->st) != 0)
		return -errno;
	out->exists = true;
	memcpy(out->path, w->cur, w->len + 1);
	out->len = w->len;
	out->area = w->area;
	if (w->len == w->area->len)
		return 0;
	char *slash = memrchr(w->cur, '/', w->len);
	snprintf(out->name, sizeof(out->name), "%s", slash + 1);
	size_t dl = slash == w->cur ? 1 : (size_t)(slash - w->cur);
	walk_set(w, w->cur, dl, med_view_find(w->vw, w->cur, dl), -1);
	int dfd = walk_take_fd(w);
	if (dfd < 0)
		out->name[0] = '\0';
	else
		out->dirfd = dfd;
	return 0;
}

/* The directory p[0, len) beneath seg's anchor (len > seg->len), with no
 * link on the way: its descriptor, or -errno. */
static int segment_open(const struct med_area *seg, const char *p, size_t len)
{
	char rel[PATH_MAX];
	size_t off = seg->len + (seg->len > 1);
	memcpy(rel, p + off, len - off);
	rel[len - off] = '\0';
	return openat2_path(seg->fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC,
			    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* A stretch that failed for a reason the walk would give too: a directory
 * on the way missing, or not a directory.  With RESOLVE_NO_SYMLINKS every
 * component before it was a directory and no link (a link is ELOOP), so
 * the walk could only have found the same. */
static bool segment_final(int rc)
{
	return rc == -ENOENT || rc == -ENOTDIR;
}

/* The directory p[0, len) opened from seg, the deepest anchor at or above
 * it that the walk crossed, with no link on the way (the walk's own checks,
 * in one openat2): its descriptor, or -errno (-EAGAIN: seg is absent). */
static int segment_dir(const struct med_area *seg, const char *p, size_t len)
{
	if (seg->fd < 0)
		return -EAGAIN;
	if (len == seg->len) {
		int fd = fcntl(seg->fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	return segment_open(seg, p, len);
}

/* segment_dir's check alone, no descriptor kept: 0 (link-free), or
 * -errno. */
static int segment_clean(const struct med_area *seg, const char *p, size_t len)
{
	if (seg->fd < 0)
		return -EAGAIN;
	if (len == seg->len)
		return 0;
	int fd = segment_open(seg, p, len);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* resolve_direct's answer for a last component that does not exist: the
 * name a call would create, in its directory dfd (taken). */
static int to_create(struct med_res *out, int dfd, const char *name, size_t n,
		     const char *path, size_t len, const struct med_area *a)
{
	out->dirfd = dfd;
	memcpy(out->name, name, n + 1);
	memcpy(out->path, path, len + 1);
	out->len = len;
	out->area = a;
	return 1;
}

/* The walk's answer without its per-component calls, for the common path:
 * no "..", no link on the way, not ending on a directory by "/" or ".".
 * The components are classed as the walk classes them, each stretch
 * between the anchors it crosses is checked link-free by one openat2
 * (RESOLVE_NO_SYMLINKS), and the last component is opened as the walk
 * opens it.  1: *out is the walk's answer; -ENOENT or -ENOTDIR: the walk's
 * answer too (a directory on the way missing, or not one; nothing held);
 * 0: take the walk (nothing held). */
static int resolve_direct(const struct med_view *vw, const char *full, unsigned flags,
			  struct med_res *out)
{
	char cur[PATH_MAX], name[NAME_MAX + 1];
	size_t len = 1;
	const struct med_area *seg = &vw->v[vw->root];
	const char *rest = full;
	cur[0] = '/';
	cur[1] = '\0';
	for (;;) {
		bool slash;
		size_t n = next_component(&rest, name, &slash);
		bool last = *rest == '\0';
		if (n == SIZE_MAX || n == 0 || (n == 1 && name[0] == '.') ||
		    (n == 2 && name[0] == '.' && name[1] == '.') || (last && slash))
			return 0;
		if (len + 1 + n >= sizeof(cur))
			return 0;
		size_t nl = len;
		if (len > 1)
			cur[nl++] = '/';
		memcpy(cur + nl, name, n + 1);
		nl += n;
		const struct med_area *a = med_view_find(vw, cur, nl);
		bool anchor = a->len == nl;
		if (kernel_tree(a) || anchor || last) {
			/* the stretch from the last anchor to this component's
			 * directory, link-free */
			bool known = anchor && a->in_skeleton && seg == &vw->v[vw->root];
			int sc = (kernel_tree(a) || anchor) && !known ? segment_clean(seg, cur, len) : 0;
			if (sc < 0)
				return segment_final(sc) ? sc : 0;
			if (kernel_tree(a))
				return stop_at(cur, nl, rest, a, out) == 0;
			if (!last) {
				seg = a;
				len = nl;
				continue;
			}
			int fd, dfd = -1;
			if (anchor) {
				fd = a->fd < 0 ? -1 : fcntl(a->fd, F_DUPFD_CLOEXEC, 3);
			} else if ((dfd = segment_dir(seg, cur, len)) < 0) {
				return segment_final(dfd) ? dfd : 0;
			} else if (flags & MED_META) {
				/* no descriptor: what it is, from its directory */
				struct stat st;
				if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
					if (errno != ENOENT) {
						close(dfd);
						return 0;
					}
					return to_create(out, dfd, name, n, cur, nl, a);
				}
				if (S_ISLNK(st.st_mode) && (flags & MED_FOLLOW)) {
					close(dfd);
					return 0;
				}
				out->st = st;
				out->exists = true;
				memcpy(out->path, cur, nl + 1);
				out->len = nl;
				out->area = a;
				memcpy(out->name, name, n + 1);
				out->dirfd = dfd;
				return 1;
			} else {
				fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
				if (fd < 0 && errno == ENOENT)
					return to_create(out, dfd, name, n, cur, nl, a);
			}
			struct stat st;
			if (fd < 0 || fstat(fd, &st) != 0 ||
			    (S_ISLNK(st.st_mode) && (flags & MED_FOLLOW))) {
				if (fd >= 0)
					close(fd);
				if (dfd >= 0)
					close(dfd);
				return 0;
			}
			out->fd = fd;
			out->st = st;
			out->exists = true;
			memcpy(out->path, cur, nl + 1);
			out->len = nl;
			out->area = a;
			if (!anchor) {
				memcpy(out->name, name, n + 1);
				out->dirfd = dfd;
			}
			return 1;
		}
		len = nl;
	}
}

int med_resolve(const struct med_view *vw, const char *base, const char *path, unsigned flags,
		struct med_res *out)
{
	char buf[2][PATH_MAX * 2];
	char next[PATH_MAX], name[NAME_MAX + 1];
	int cur_buf = 0, links = 0, rc = 0;
	struct walk w = { .vw = vw, .fd = -1 };

	memset(out, 0, sizeof(*out));
	out->dirfd = out->fd = -1;
	if (path[0] == '\0')
		return -ENOENT;
	size_t pl = strlen(path);
	if (pl >= PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] == '/' || base == NULL) {
		memcpy(buf[0], path, pl + 1);
	} else {
		int n = snprintf(buf[0], sizeof(buf[0]), "%s/%s", base, path);
		if (n < 0 || (size_t)n >= sizeof(buf[0]))
			return -ENAMETOOLONG;
	}
	int direct = resolve_direct(vw, buf[0], flags, out);
	if (direct != 0)
		return direct == 1 ? 0 : direct;
	walk_root(&w);
	const char *rest = buf[0];

	for (;;) {
		bool slash;
		size_t n = next_component(&rest, name, &slash);
		if (n == SIZE_MAX) {
			rc = -ENAMETOOLONG;
			goto fail;
		}
		bool last = *rest == '\0';
		if (n == 0 || (n == 1 && name[0] == '.')) {
			if (last)
				break;
			continue;
		}
		if (n == 2 && name[0] == '.' && name[1] == '.') {
			if (w.len > 1) {
				char *s = memrchr(w.cur, '/', w.len);
				size_t dl = s == w.cur ? 1 : (size_t)(s - w.cur);
				walk_set(&w, w.cur, dl, med_view_find(vw, w.cur, dl), -1);
			}
			if (kernel_tree(w.area)) {
				rc = stop_at(w.cur, w.len, rest, w.area, out);
				goto done;
			}
			if (last)
				break;
			continue;
		}
		if (w.len + 1 + n >= sizeof(next)) {
			rc = -ENAMETOOLONG;
			goto fail;
		}
		int nl = snprintf(next, sizeof(next), "%s%s%s", w.cur, w.len > 1 ? "/" : "", name);
		const struct med_area *a = med_view_find(vw, next, (size_t)nl);
		if (kernel_tree(a)) {
			rc = stop_at(next, (size_t)nl, rest, a, out);
			goto done;
		}
		bool anchor = a->len == (size_t)nl;
		int fd;
		if (anchor) {
			/* a tree's own root, opened on its own side */
			fd = a->fd < 0 ? -ENOENT : fcntl(a->fd, F_DUPFD_CLOEXEC, 3);
			if (a->fd >= 0 && fd < 0)
				fd = -errno;
		} else {
			if ((rc = walk_fd(&w)) < 0)
				goto fail;
			fd = openat(w.fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				fd = -errno;
		}
		if (fd == -ENOENT && last && !anchor) {
			/* the name a call would create, in the directory we are in */
			if ((rc = walk_fd(&w)) < 0)
				goto fail;
			out->dirfd = walk_take_fd(&w);
			memcpy(out->name, name, n + 1);
			memcpy(out->path, next, (size_t)nl + 1);
			out->len = (size_t)nl;
			out->area = a;
			return 0;
		}
		if (fd < 0) {
			rc = fd;
			goto fail;
		}
		struct stat st;
		if (fstat(fd, &st) != 0) {
			rc = -errno;
			close(fd);
			goto fail;
		}
		if (S_ISLNK(st.st_mode) && (!last || slash || (flags & MED_FOLLOW))) {
			char tgt[PATH_MAX];
			ssize_t tl = readlinkat(fd, "", tgt, sizeof(tgt));
			close(fd);
			if (tl < 0) {
				rc = -errno;
				goto fail;
			}
			if ((size_t)tl >= sizeof(tgt) || tl == 0) {
				rc = tl == 0 ? -ENOENT : -ENAMETOOLONG;
				goto fail;
			}
			tgt[tl] = '\0';
			if (++links > LINKS_MAX) {
				rc = -ELOOP;
				goto fail;
			}
			/* the link's target, then what was left (its '/' kept) */
			int nb = cur_buf ^ 1;
			int k = snprintf(buf[nb], sizeof(buf[nb]), "%s%s%s", tgt,
					 *rest || slash ? "/" : "", rest);
			if (k < 0 || (size_t)k >= sizeof(buf[nb])) {
				rc = -ENAMETOOLONG;
				goto fail;
			}
			cur_buf = nb;
			rest = buf[nb];
			if (tgt[0] == '/')
				walk_root(&w);
			continue;
		}
		if ((!last || slash) && !S_ISDIR(st.st_mode)) {
			close(fd);
			rc = -ENOTDIR;
			goto fail;
		}
		if (last) {
			out->fd = fd;
			out->st = st;
			out->exists = true;
			memcpy(out->path, next, (size_t)nl + 1);
			out->len = (size_t)nl;
			out->area = a;
			if (!anchor) {
				/* its directory, for calls that act on the name */
				memcpy(out->name, name, n + 1);
				if ((rc = walk_fd(&w)) < 0)
					goto fail;
				out->dirfd = walk_take_fd(&w);
			}
			walk_drop(&w);
			return 0;
		}
		walk_set(&w, next, (size_t)nl, a, fd);
	}
	rc = end_on_dir(&w, out);
	if (rc < 0)
		goto fail;
done:
	walk_drop(&w);
	return rc;
fail:
	walk_drop(&w);
	med_res_close(out);
	return rc;
}
