/* med_exec.c - launches (docs/mediator.md "Launches").
 *
 * execve cannot be performed for the process, so it is decided and then
 * let through, and what the kernel then ran is checked:
 *
 *  1. At the notification the file and argv are read once, the file is
 *     resolved in the view, and shell:exec is decided with that argv.
 *  2. The call continues.  The kernel reads the path and argv again: a
 *     thread of the process may have rewritten them, or a link been
 *     swapped, meanwhile.
 *  3. At the new image's first mediated call (a dynamic binary's loader
 *     opens its cache at once) the process's executable (dev, ino) and its
 *     argv (/proc/<pid>/cmdline) are compared with what was decided; on a
 *     mismatch it is killed before that call is answered.  The image is
 *     known new by AT_RANDOM: the kernel writes 16 fresh random bytes for
 *     every exec, so their change says the exec happened (a failed one
 *     leaves the old image, and its ticket gets ::error).
 *
 * Each launch's tgid is watched through a pidfd; its exit status
 * (PIDFD_GET_INFO, 6.15: also after the parent reaped it) is recorded as
 * shell:exec::response output.status, 128 + N for a signal. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "med_int.h"
#include "med_mem.h"

#define ARGS_MAX 4096                   /* arguments read of one exec */
#define ARGS_BYTES (1u << 20)           /* and their bytes together */
#define TICKETS_MAX 16                  /* execs of one process recorded */
#define SHEBANG_MAX 256
#define AT_RANDOM_ 25

/* PIDFD_GET_INFO (6.13; exit information 6.15): not in Debian 12's headers */
struct med_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define MED_PIDFD_GET_INFO _IOWR(0xFF, 11, struct med_pidfd_info)
#define MED_PIDFD_INFO_EXIT (1ull << 3)

struct launch {
	struct launch *next;
	pid_t tgid;
	pid_t exec_tid;                 /* the thread that called execve */
	int pidfd;
	uint64_t tickets[TICKETS_MAX];
	size_t n_tickets;
	bool checking;                  /* a launch waits for its check */
	uint64_t ticket;                /* ... this one */
	dev_t dev;                      /* the image the kernel should run */
	ino_t ino;
	char *cmdline;                  /* argv as the new image should have it */
	size_t cmdline_len;
	unsigned char rnd[16];          /* the old image's AT_RANDOM bytes */
	bool rnd_ok;
	bool exited;
};

struct med_execs {
	pthread_mutex_t lock;
	struct launch *head;
	atomic_uint checking;           /* launches waiting for a check: the fast path */
	atomic_uint live;               /* launches in the table */
	int epfd;
	int wake;                       /* eventfd: the watcher ends */
	pthread_t watcher;
	bool have_watcher;
};

/* ---- exit statuses ------------------------------------------------------------- */

static int status_of(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return -1;
}

static void launch_free(struct launch *l)
{
	if (l->pidfd >= 0)
		close(l->pidfd);
	free(l->cmdline);
	free(l);
}

/* Record what is known of l's end (status -1: none) and drop it.  Lock held. */
static void launch_end(struct med *m, struct launch *l, int status)
{
	struct med_execs *x = m->execs;
	for (struct launch **p = &x->head; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			atomic_fetch_sub(&x->live, 1);
			break;
		}
	if (l->checking) {
		atomic_fetch_sub(&x->checking, 1);
		/* never reached its check: a failed exec, or killed at once */
		med_exec_done(m, l->ticket, status >= 0 && l->n_tickets > 0 ? status : -1);
	}
	for (size_t i = 0; i < l->n_tickets; i++)
		med_exec_done(m, l->tickets[i], status);
	launch_free(l);
}

/* The exit status through the pidfd: 1 with *status, 0 when the process
 * has not ended or not yet been reaped. */
static int exit_info(int pidfd, int *status)
{
	struct med_pidfd_info i = { .mask = MED_PIDFD_INFO_EXIT };
	if (ioctl(pidfd, MED_PIDFD_GET_INFO, &i) != 0 || !(i.mask & MED_PIDFD_INFO_EXIT))
		return 0;
	*status = status_of(i.exit_code);
	return 1;
}

static void *watcher(void *arg)
{
	struct med *m = arg;
	struct med_execs *x = m->execs;
	prctl(PR_SET_NAME, "cairn-launches", 0, 0, 0);
	for (;;) {
		struct epoll_event ev[32];
		/* an exited process is readable before its parent reaps it, and
		 * its status exists only after: those are looked at again */
		pthread_mutex_lock(&x->lock);
		bool zombies = false;
		for (struct launch *l = x->head; l; l = l->next)
			zombies |= l->exited;
		pthread_mutex_unlock(&x->lock);
		int64_t due = med_kernel_due(m), now;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		int timeout = zombies ? 20 : -1;
		if (due != INT64_MAX) {
			int t = due <= now ? 0 : (int)((due - now) / 1000000 + 1);
			timeout = timeout < 0 || t < timeout ? t : timeout;
		}
		int n = epoll_wait(x->epfd, ev, 32, timeout);
		med_kernel_tick(m);
		if (n < 0 && errno != EINTR)
			break;
		bool stop = false;
		pthread_mutex_lock(&x->lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == 0) {
				stop = true;
				continue;
			}
			for (struct launch *l = x->head; l; l = l->next)
				if ((uint64_t)l->tgid == ev[i].data.u64) {
					l->exited = true;
					epoll_ctl(x->epfd, EPOLL_CTL_DEL, l->pidfd, NULL);
					break;
				}
		}
		for (struct launch *l = x->head, *next; l; l = next) {
			next = l->next;
			int st;
			if (l->exited && exit_info(l->pidfd, &st))
				launch_end(m, l, st);
		}
		pthread_mutex_unlock(&x->lock);
		if (stop)
			break;
	}
	return NULL;
}

void med_execs_sweep(struct med *m)
{
	struct med_execs *x = m->execs;
	struct pollfd pf[256];
	struct launch *ls[256];
	size_t n = 0;
	if (x == NULL || atomic_load(&x->live) == 0)
		return;
	pthread_mutex_lock(&x->lock);
	for (struct launch *l = x->head; l && n < 256; l = l->next) {
		pf[n] = (struct pollfd){ .fd = l->pidfd, .events = POLLIN };
		ls[n++] = l;
	}
	if (n > 0 && poll(pf, n, 0) > 0) {
		for (size_t i = 0; i < n; i++) {
			int st;
			if ((pf[i].revents & POLLIN) && exit_info(ls[i]->pidfd, &st))
				launch_end(m, ls[i], st);
		}
	}
	pthread_mutex_unlock(&x->lock);
}

int med_execs_new(struct med *m, char *err, size_t errlen)
{
	struct med_execs *x = calloc(1, sizeof(*x));
	if (x == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&x->lock, NULL);
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	x->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	if (x->epfd < 0 || x->wake < 0 || epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->wake, &ev) != 0) {
		snprintf(err, errlen, "cannot watch launches: %s", strerror(errno));
		goto fail;
	}
	m->execs = x;
	int e = pthread_create(&x->watcher, NULL, watcher, m);
	if (e != 0) {
		snprintf(err, errlen, "cannot start the launch watcher: %s", strerror(e));
		m->execs = NULL;
		goto fail;
	}
	x->have_watcher = true;
	return 0;
fail:
	if (x->epfd >= 0)
		close(x->epfd);
	if (x->wake >= 0)
		close(x->wake);
	pthread_mutex_destroy(&x->lock);
	free(x);
	return -1;
}

void med_execs_free(struct med *m)
{
	struct med_execs *x = m->execs;
	if (x == NULL)
		return;
	if (x->have_watcher) {
		uint64_t one = 1;
		if (write(x->wake, &one, sizeof(one)) == sizeof(one))
			pthread_join(x->watcher, NULL);
	}
	pthread_mutex_lock(&x->lock);
	/* the box has ended: every process in it is gone, reaped by the kernel
	 * with the pid namespace */
	while (x->head != NULL) {
		struct launch *l = x->head;
		int st = -1;
		for (int tries = 0; tries < 50 && !exit_info(l->pidfd, &st); tries++)
			usleep(2000);
		launch_end(m, l, st);
	}
	pthread_mutex_unlock(&x->lock);
	close(x->epfd);
	close(x->wake);
	pthread_mutex_destroy(&x->lock);
	free(x);
	m->execs = NULL;
}

/* ---- the image's identity -------------------------------------------------------------- */

/* AT_RANDOM's 16 bytes of pid's current image: 0, or -1. */
static int image_random(pid_t pid, unsigned char out[16])
{
	char p[64];
	uint64_t av[2 * 64];
	snprintf(p, sizeof(p), "/proc/%d/auxv", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; n > 0 && (size_t)(i + 1) * 16 <= (size_t)n; i++) {
		if (av[2 * i] == 0)
			break;
		if (av[2 * i] == AT_RANDOM_)
			return med_read(pid, av[2 * i + 1], out, 16) == 0 ? 0 : -1;
	}
	return -1;
}

static char *read_all(const char *path, size_t *len, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	while (b != NULL) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				b = NULL;
				break;
			}
			char *nb = realloc(b, cap * 2);
			if (nb == NULL) {
				free(b);
				b = NULL;
				break;
			}
			b = nb, cap *= 2;
		}
		ssize_t k = read(fd, b + n, cap - n);
		if (k < 0) {
			free(b);
			b = NULL;
		} else if (k == 0) {
			break;
		} else {
			n += (size_t)k;
		}
	}
	close(fd);
	*len = n;
	return b;
}

/* The new image of l's process is the one decided. */
static bool image_is(pid_t pid, const struct launch *l)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	if (stat(p, &st) != 0 || st.st_dev != l->dev || st.st_ino != l->ino)
		return false;
	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
	size_t n;
	char *cl = read_all(p, &n, ARGS_BYTES * 2);
	bool same = cl != NULL && n == l->cmdline_len && memcmp(cl, l->cmdline, n) == 0;
	free(cl);
	return same;
}

bool med_exec_check(struct med_call *c)
{
	struct med *m = c->m;
	struct med_execs *x = m->execs;
	if (atomic_load(&x->checking) == 0)
		return true;
	pthread_mutex_lock(&x->lock);
	struct launch *l = x->head;
	for (; l; l = l->next)
		if (l->checking && (l->tgid == c->pid || l->exec_tid == c->pid))
			break;
	if (l == NULL) {
		pthread_mutex_unlock(&x->lock);
		return true;
	}
	unsigned char rnd[16];
	bool fresh = l->rnd_ok ? image_random(c->pid, rnd) == 0 &&
				 memcmp(rnd, l->rnd, sizeof(rnd)) != 0
			       : image_is(c->pid, l);
	if (!fresh) {
		if (c->pid == l->exec_tid) {
			/* the exec'ing thread calls again in its old image: the
			 * exec failed (ENOENT, ENOEXEC, EACCES from Landlock...) */
			l->checking = false;
			atomic_fetch_sub(&x->checking, 1);
			med_exec_done(m, l->ticket, -1);
			l->ticket = 0;
		}
		pthread_mutex_unlock(&x->lock);
		return true;
	}
	l->checking = false;
	atomic_fetch_sub(&x->checking, 1);
	bool ok = image_is(c->pid, l);
	if (ok && l->n_tickets < TICKETS_MAX)
		l->tickets[l->n_tickets++] = l->ticket;
	else if (ok)
		med_exec_done(m, l->ticket, -1);
	uint64_t ticket = l->ticket;
	l->ticket = 0;
	int pidfd = l->pidfd;
	pthread_mutex_unlock(&x->lock);
	if (ok)
		return true;
	/* not what was decided: it ran nothing of its own yet but the loader */
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	med_exec_done(m, ticket, -1);
	med_tell(c, "exec-check", "killed a process whose program or arguments changed "
				  "after its launch was decided");
	med_fail(c, EACCES);
	return false;
}

/* ---- the call ---------------------------------------------------------------------------- */

/* argv of the call: *argc strings in one block (each NUL-ended). */
static int read_argv(struct med_call *c, uint64_t addr, char **block, size_t *blen,
		     const char ***argv, size_t *argc)
{
	uint64_t ptrs[64];
	size_t n = 0, cap = 64, used = 0, bcap = 4096;
	const char **v = NULL;
	char *b = malloc(bcap);
	size_t *offs = malloc(cap * sizeof(*offs));
	int rc = 0;
	if (b == NULL || offs == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (bool end = addr == 0; !end;) {
		if (med_read(c->pid, addr + n * 8, ptrs, sizeof(ptrs[0])) != 0) {
			rc = -EFAULT;
			goto out;
		}
		if (ptrs[0] == 0)
			break;
		if (n >= ARGS_MAX) {
			rc = -E2BIG;
			goto out;
		}
		if (n == cap) {
			size_t *no = realloc(offs, cap * 2 * sizeof(*offs));
			if (no == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			offs = no, cap *= 2;
		}
		for (;;) {
			ssize_t k = med_read_str(c->pid, ptrs[0], b + used, bcap - used);
			if (k >= 0) {
				offs[n++] = used;
				used += (size_t)k + 1;
				break;
			}
			if (k != -ENAMETOOLONG) {
				rc = -EFAULT;
				goto out;
			}
			if (bcap >= ARGS_BYTES) {
				rc = -E2BIG;
				goto out;
			}
			char *nb = realloc(b, bcap * 2);
			if (nb == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			b = nb, bcap *= 2;
		}
	}
	v = malloc((n + 1) * sizeof(*v));
	if (v == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = b + offs[i];
	v[n] = NULL;
	*block = b, *blen = used, *argv = v, *argc = n;
	b = NULL;
out:
	free(b);
	free(offs);
	return rc;
}

/* The first line of a script: its interpreter and optional argument (as
 * the kernel splits it).  1 when fd holds "#!", 0 when it does not. */
static int shebang(int fd, char interp[SHEBANG_MAX], char opt[SHEBANG_MAX], bool *has_opt)
{
	char b[SHEBANG_MAX];
	char p[40];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int rfd = open(p, O_RDONLY | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	ssize_t n = pread(rfd, b, sizeof(b) - 1, 0);
	close(rfd);
	if (n < 2 || b[0] != '#' || b[1] != '!')
		return 0;
	b[n] = '\0';
	char *e = strchr(b, '\n');
	if (e)
		*e = '\0';
	char *s = b + 2;
	while (*s == ' ' || *s == '\t')
		s++;
	char *t = s;
	while (*t && *t != ' ' && *t != '\t')
		t++;
	size_t il = (size_t)(t - s);
	memcpy(interp, s, il);
	interp[il] = '\0';
	while (*t == ' ' || *t == '\t')
		t++;
	char *end = t + strlen(t);
	while (end > t && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	*has_opt = *t != '\0';
	snprintf(opt, SHEBANG_MAX, "%s", t);
	return il > 0;
}

/* The file a path names, as the kernel will open it to run it: followed
 * through every link, in the view.  0 with *fd (O_PATH), or -errno. */
static int exec_target(struct med_call *c, const char *base, const char *path,
		       struct med_res *r, char *resolved, size_t rlen)
{
	int rc = med_resolve(&c->m->view, path[0] == '/' ? NULL : base, path, MED_FOLLOW, r);
	if (rc < 0)
		return rc;
	if (r->stopped) {
		/* a runtime tree the kernel resolves: so do we, beneath the view's
		 * root, following links as it will */
		int root = c->m->view.v[c->m->view.root].fd;
		struct open_how how = { .flags = O_PATH | O_CLOEXEC,
					.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
		int fd = (int)syscall(SYS_openat2, root, r->path, &how, sizeof(how));
		rc = fd < 0 ? -errno : 0;
		if (rc < 0)
			return rc;
		r->fd = fd;
		if (fstat(fd, &r->st) != 0)
			return -errno;
		r->exists = true;
	}
	snprintf(resolved, rlen, "%s", r->path);
	return r->exists ? 0 : -ENOENT;
}

/* The name the program goes by: the last component of where the walk
 * ended.  Links the agent could make (scratch, grants, decided trees) were
 * followed; a walk that reached a runtime tree keeps the name given there,
 * the distribution's (/usr/bin/npm, not npm-cli.js): docs/mediator.md
 * "Launches". */
static const char *program_name(const char *resolved)
{
	const char *s = strrchr(resolved, '/');
	return s ? s + 1 : resolved;
}

/* The magic links a program re-executes itself through: /proc/self/exe
 * names the binary (Codex runs every command so), /proc/self/fd/N and
 * /dev/fd/N a descriptor.  1 with target (a path in the view), 0 when path
 * is none of them, -errno. */
static int magic_target(struct med_call *c, const char *path, char target[PATH_MAX],
			bool *memfd)
{
	char p[80];
	int fdn = -1;
	pid_t who = c->pid;
	*memfd = false;
	if (strcmp(path, "/proc/self/exe") == 0 || strcmp(path, "/proc/thread-self/exe") == 0) {
		snprintf(p, sizeof(p), "/proc/%d/exe", (int)who);
	} else if (sscanf(path, "/proc/self/fd/%d", &fdn) == 1 ||
		   sscanf(path, "/dev/fd/%d", &fdn) == 1 ||
		   sscanf(path, "/proc/thread-self/fd/%d", &fdn) == 1) {
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)who, fdn);
	} else {
		return 0;
	}
	ssize_t n = readlink(p, target, PATH_MAX - 1);
	if (n < 0)
		return -ENOENT;
	target[n] = '\0';
	if (strncmp(target, "/memfd:", 7) == 0) {
		*memfd = true;
		return 1;
	}
	if (target[0] != '/')
		return -EACCES;
	return 1;
}

/* argv as the new image will hold it (the kernel's rewrite for scripts). */
static int expected_cmdline(struct med_call *c, struct launch *l, const char *filename,
			    const char *const *argv, size_t argc, int fd0)
{
	char interp[4][SHEBANG_MAX], opt[4][SHEBANG_MAX];
	bool has_opt[4];
	int depth = 0, fd = fd0;
	struct med_res r[4];
	for (; depth < 4; depth++) {
		if (!shebang(fd, interp[depth], opt[depth], &has_opt[depth]))
			break;
		char resolved[PATH_MAX];
		if (exec_target(c, NULL, interp[depth], &r[depth], resolved, sizeof(resolved)) < 0) {
			depth++;
			break;
		}
		fd = r[depth].fd;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		l->dev = st.st_dev;
		l->ino = st.st_ino;
	}
	/* [interp_k, opt_k?, name_k, ... interp_0, opt_0?, filename, argv[1..]] */
	size_t len = 0;
	for (int k = depth - 1; k >= 0; k--)
		len += strlen(interp[k]) + 1 + (has_opt[k] ? strlen(opt[k]) + 1 : 0);
	if (depth > 0)
		len += strlen(filename) + 1;
	for (size_t i = depth > 0 ? 1 : 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *b = malloc(len ? len : 1);
	if (b != NULL) {
		size_t n = 0;
#define ADD(s) do { size_t k_ = strlen(s) + 1; memcpy(b + n, (s), k_); n += k_; } while (0)
		for (int k = depth - 1; k >= 0; k--) {
			ADD(interp[k]);
			if (has_opt[k])
				ADD(opt[k]);
		}
		if (depth > 0)
			ADD(filename);
		for (size_t i = depth > 0 ? 1 : 0; i < argc; i++)
			ADD(argv[i]);
#undef ADD
		l->cmdline = b;
		l->cmdline_len = n;
	}
	for (int k = 0; k < depth; k++)
		med_res_close(&r[k]);
	return b ? 0 : -ENOMEM;
}

static struct launch *launch_for(struct med *m, pid_t tgid)
{
	struct med_execs *x = m->execs;
	for (struct launch *l = x->head; l; l = l->next)
		if (l->tgid == tgid)
			return l;
	struct launch *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	l->tgid = tgid;
	l->pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
	if (l->pidfd < 0) {
		free(l);
		return NULL;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)tgid };
	if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, l->pidfd, &ev) != 0) {
		launch_free(l);
		return NULL;
	}
	l->next = x->head;
	x->head = l;
	atomic_fetch_add(&x->live, 1);
	return l;
}

static pid_t tgid_of(pid_t tid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *t = strstr(buf, "\nTgid:");
	return t ? (pid_t)strtol(t + 6, NULL, 10) : -1;
}

void med_exec_call(struct med_call *c)
{
	struct med *m = c->m;
	bool at = c->n->data.nr == SYS_execveat;
	int dirfd = at ? (int)(int32_t)c->n->data.args[0] : AT_FDCWD;
	uint64_t paddr = c->n->data.args[at ? 1 : 0];
	uint64_t aaddr = c->n->data.args[at ? 2 : 1];
	int flags = at ? (int)c->n->data.args[4] : 0;

	if (!atomic_load(&m->launched) && c->pid == m->workload) {
		/* the box's own start: the workload's command, not the agent's */
		atomic_store(&m->launched, true);
		med_continue(c);
		return;
	}
	char path[PATH_MAX], base[PATH_MAX] = "", cwd[PATH_MAX], target[PATH_MAX];
	ssize_t pn = med_read_str(c->pid, paddr, path, sizeof(path));
	if (pn < 0) {
		med_fail(c, pn == -ENAMETOOLONG ? ENAMETOOLONG : EFAULT);
		return;
	}
	int rc = med_base(c, AT_FDCWD, cwd);
	if (rc < 0) {
		med_fail(c, -rc);
		return;
	}
	bool memfd = false;
	const char *walk = path;
	if (path[0] == '\0') {
		if (!(flags & AT_EMPTY_PATH)) {
			med_fail(c, ENOENT);
			return;
		}
		/* execveat(fd, "", AT_EMPTY_PATH): the descriptor's file */
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)c->pid, dirfd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n < 0) {
			med_fail(c, EBADF);
			return;
		}
		target[n] = '\0';
		memfd = strncmp(target, "/memfd:", 7) == 0;
		walk = target;
	} else {
		if (path[0] != '/' && dirfd != AT_FDCWD && (rc = med_base(c, dirfd, base)) < 0) {
			med_fail(c, -rc);
			return;
		}
		rc = magic_target(c, path, target, &memfd);
		if (rc < 0) {
			med_fail(c, -rc);
			return;
		}
		if (rc == 1)
			walk = target;
	}
	char *block = NULL;
	const char **argv = NULL;
	size_t blen = 0, argc = 0;
	rc = read_argv(c, aaddr, &block, &blen, &argv, &argc);
	if (rc < 0 || !med_valid(c)) {
		med_fail(c, rc < 0 ? -rc : ENOENT);
		goto out;
	}
	if (memfd) {
		/* Landlock cannot see a memfd's exec (docs/security.md "seccomp") */
		med_tell(c, "memfd", "refused to run a program from memory (memfd): only files "
				     "in the view run");
		med_fail(c, EACCES);
		goto out;
	}
	struct med_res r;
	char resolved[PATH_MAX];
	const char *b = walk[0] == '/' ? NULL : (base[0] ? base : cwd);
	rc = exec_target(c, b, walk, &r, resolved, sizeof(resolved));
	if (rc < 0) {
		/* nothing there (or not reachable): the kernel says so, and a
		 * program that exists nowhere is not found, never denied */
		med_res_close(&r);
		med_continue(c);
		goto out;
	}
	if (!S_ISREG(r.st.st_mode)) {
		med_res_close(&r);
		med_continue(c);
		goto out;
	}
	const struct med_exec_ask a = { program_name(resolved), argv, argc, cwd };
	/* A tool's program runs in its leaf, through its shim (docs/tools.md);
	 * the shim's own exec is the broker's to decide, as shell:spawn.  The
	 * program is known by its file and by its name: Debian ships copies
	 * (/usr/lib/git-core/git beside /usr/bin/git). */
	bool shim = m->shim_ino != 0 && r.st.st_dev == m->shim_dev && r.st.st_ino == m->shim_ino;
	for (size_t i = 0; !shim && i < m->n_tools; i++) {
		const struct med_tool_program *t = &m->tools[i];
		if ((r.st.st_dev == t->dev && r.st.st_ino == t->ino) ||
		    strcmp(a.program, strrchr(t->path, '/') + 1) == 0) {
			char why[2 * PATH_MAX + 200];
			snprintf(why, sizeof(why), "%s runs as a tool in this box, in a sandbox of "
				 "its own: call it through its shim, %s (first on PATH)", t->path,
				 t->shim);
			med_res_close(&r);
			med_exec_floor(c, &a, "enforcement:tool-program", why);
			(void)med_sync(c);
			med_fail(c, EACCES);
			goto out;
		}
	}
	uint64_t ticket = 0;
	pid_t tgid = tgid_of(c->pid);
	struct launch probe = { 0 };
	probe.rnd_ok = image_random(c->pid, probe.rnd) == 0;
	/* the name a script's interpreter is given: the kernel's filename */
	char fname[PATH_MAX + 32];
	if (at && path[0] == '\0')
		snprintf(fname, sizeof(fname), "/dev/fd/%d", dirfd);
	else if (at && path[0] != '/' && dirfd != AT_FDCWD)
		snprintf(fname, sizeof(fname), "/dev/fd/%d/%s", dirfd, path);
	else
		snprintf(fname, sizeof(fname), "%s", path);
	if (tgid < 0 || expected_cmdline(c, &probe, fname, argv, argc, r.fd) < 0) {
		med_res_close(&r);
		free(probe.cmdline);
		med_fail(c, ENOMEM);
		goto out;
	}
	med_res_close(&r);
	if (!shim && med_exec_decide(c, &a, &ticket) != 1) {
		free(probe.cmdline);
		(void)med_sync(c);
		med_fail(c, EACCES);
		goto out;
	}
	struct med_execs *x = m->execs;
	pthread_mutex_lock(&x->lock);
	struct launch *l = launch_for(m, tgid);
	if (l == NULL) {
		pthread_mutex_unlock(&x->lock);
		free(probe.cmdline);
		med_exec_done(m, ticket, -1);
		med_fail(c, EAGAIN);
		goto out;
	}
	if (l->checking) {
		/* an earlier exec never reached its check */
		med_exec_done(m, l->ticket, -1);
		atomic_fetch_sub(&x->checking, 1);
	}
	free(l->cmdline);
	l->cmdline = probe.cmdline;
	l->cmdline_len = probe.cmdline_len;
	l->dev = probe.dev;
	l->ino = probe.ino;
	memcpy(l->rnd, probe.rnd, sizeof(l->rnd));
	l->rnd_ok = probe.rnd_ok;
	l->exec_tid = c->pid;
	l->ticket = ticket;
	l->checking = true;
	atomic_fetch_add(&x->checking, 1);
	pthread_mutex_unlock(&x->lock);
	(void)med_sync(c);
	med_continue(c);
out:
	free(block);
	free(argv);
}
