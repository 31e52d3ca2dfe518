/* preflight.c - what this host offers the sandbox, checked before the box
 * starts, with a refusal that names the fix (never a degraded run). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain.h"
#include "landlock.h"

/* The first line of a small file, or NULL. */
static char *read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *r = fgets(buf, (int)len, f);
	fclose(f);
	if (r)
		r[strcspn(r, "\n")] = '\0';
	return r;
}

static long read_long(const char *path, long dflt)
{
	char buf[64];
	if (!read_line(path, buf, sizeof(buf)))
		return dflt;
	return strtol(buf, NULL, 10);
}

/* The mount point of the first filesystem of `type` (mountinfo field 9),
 * and for cgroup v1 the one whose super options name `opt`. */
static int find_mount(const char *type, const char *opt, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	char line[1024];
	int found = -1;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char fstype[64], src[256], sopts[512] = "";
		if (sscanf(sep + 3, "%63s %255s %511s", fstype, src, sopts) < 2)
			continue;
		if (strcmp(fstype, type) != 0)
			continue;
		if (opt) {
			/* exact option among the comma-separated super options */
			bool hit = false;
			char *save = NULL;
			for (char *o = strtok_r(sopts, ",", &save); o; o = strtok_r(NULL, ",", &save))
				hit |= strcmp(o, opt) == 0;
			if (!hit)
				continue;
		}
		char mnt[512];
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			continue;
		snprintf(out, len, "%s", mnt);
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

/* cgroup v2: the nearest ancestor of our own cgroup (ourselves included)
 * that we may write and whose children get the controllers we need. */
static bool find_cgroup2(const struct ct_limits *want, char *out, size_t len)
{
	char root[512], line[1024], rel[768] = "";
	if (find_mount("cgroup2", NULL, root, sizeof(root)) < 0)
		return false;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(rel, sizeof(rel), "%.700s", line + 3);
			rel[strcspn(rel, "\n")] = '\0';
		}
	fclose(f);
	for (;;) {
		char dir[1300], file[1400], ctl[256];
		snprintf(dir, sizeof(dir), "%s%s", root, strcmp(rel, "/") == 0 ? "" : rel);
		snprintf(file, sizeof(file), "%s/cgroup.subtree_control", dir);
		if (read_line(file, ctl, sizeof(ctl)) &&
		    (!want->pids || has_word(ctl, "pids")) &&
		    (!want->memory || has_word(ctl, "memory")) &&
		    (!want->cpu_milli || has_word(ctl, "cpu")) && access(dir, W_OK) == 0) {
			snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
			if (access(file, W_OK) == 0 && strlen(dir) < len) {
				memcpy(out, dir, strlen(dir) + 1);
				return true;
			}
		}
		char *slash = strrchr(rel, '/');
		if (!slash || rel[0] == '\0' || strcmp(rel, "/") == 0)
			return false;
		if (slash == rel)
			strcpy(rel, "/");
		else
			*slash = '\0';
	}
}

/* cgroup v1 with pids, memory and cpu hierarchies, for root only: the
 * parent directory holding them (usually /sys/fs/cgroup). */
static bool find_cgroup1(char *out, size_t len)
{
	if (geteuid() != 0)
		return false;
	char mnt[512], parent[512] = "";
	static const char *const need[] = { "pids", "memory", "cpu" };
	for (size_t i = 0; i < 3; i++) {
		if (find_mount("cgroup", need[i], mnt, sizeof(mnt)) < 0)
			return false;
		char *slash = strrchr(mnt, '/');
		if (!slash || strcmp(slash + 1, need[i]) != 0)
			return false;   /* co-mounted (cpu,cpuacct): naming differs; not ours */
		*slash = '\0';
		if (parent[0] && strcmp(parent, mnt) != 0)
			return false;
		snprintf(parent, sizeof(parent), "%s", mnt);
		char d[600];
		snprintf(d, sizeof(d), "%s/%s", mnt, need[i]);
		if (access(d, W_OK) != 0)
			return false;
	}
	snprintf(out, len, "%s", parent);
	return true;
}

int ct_preflight(struct ct_host *h, const struct ct_limits *want, struct ct_error *err)
{
	memset(h, 0, sizeof(*h));
	err->msg[0] = '\0';

	int abi = ct_landlock_abi();
	if (abi < 1) {
		snprintf(err->msg, sizeof(err->msg),
			 "refusing to run: Landlock is not available (%s); cairn needs Linux 5.13 or "
			 "later with Landlock enabled: add `landlock` to the kernel's lsm= boot "
			 "parameter (CONFIG_SECURITY_LANDLOCK=y)",
			 strerror(-abi));
		return -1;
	}
	h->landlock_abi = abi;

	/* User namespaces: a sysctl may forbid them, or AppArmor may strip them. */
	if (read_long("/proc/sys/user/max_user_namespaces", 1) == 0) {
		snprintf(err->msg, sizeof(err->msg),
			 "refusing to run: user namespaces are disabled (user.max_user_namespaces = 0); "
			 "fix: sysctl -w user.max_user_namespaces=15000");
		return -1;
	}
	if (geteuid() != 0) {
		if (read_long("/proc/sys/kernel/unprivileged_userns_clone", 1) == 0) {
			snprintf(err->msg, sizeof(err->msg),
				 "refusing to run: unprivileged user namespaces are disabled "
				 "(kernel.unprivileged_userns_clone = 0); fix: sysctl -w "
				 "kernel.unprivileged_userns_clone=1");
			return -1;
		}
		if (read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 1) {
			snprintf(err->msg, sizeof(err->msg),
				 "refusing to run: AppArmor strips the capabilities of unprivileged "
				 "user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1), so "
				 "the sandbox cannot build its view; fix: install an AppArmor profile "
				 "that grants `userns,` to the cairn binary (see docs/security.md), or "
				 "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
			return -1;
		}
	}
	h->userns = true;

	bool limited = want && (want->pids || want->memory || want->cpu_milli);
	if (!limited) {
		/* Nothing to enforce: the pid namespace alone tears the run down. */
		h->limits_mode = CT_LIMITS_RLIMIT;
		snprintf(h->limits_text, sizeof(h->limits_text), "none requested");
		return 0;
	}
	if (find_cgroup2(want, h->cgroup_dir, sizeof(h->cgroup_dir))) {
		h->limits_mode = CT_LIMITS_CGROUP2;
		snprintf(h->limits_text, sizeof(h->limits_text), "cgroup v2 under %.120s",
			 h->cgroup_dir);
	} else if (find_cgroup1(h->cgroup_dir, sizeof(h->cgroup_dir))) {
		h->limits_mode = CT_LIMITS_CGROUP1;
		snprintf(h->limits_text, sizeof(h->limits_text),
			 "cgroup v1 (pids, memory, cpu) under %.60s: no cgroup v2 subtree with these "
			 "controllers is delegated", h->cgroup_dir);
	} else {
		h->limits_mode = CT_LIMITS_RLIMIT;
		snprintf(h->limits_text, sizeof(h->limits_text),
			 "rlimits, per process (RLIMIT_NPROC for pids, RLIMIT_DATA for memory: "
			 "shared memory and tmpfs are not counted); no cgroup v2 subtree is "
			 "delegated to this user");
		if (want->cpu_milli) {
			snprintf(err->msg, sizeof(err->msg),
				 "refusing to run: `cpu` in [agent.limits] needs a cgroup, and no "
				 "cgroup v2 subtree with the cpu controller is delegated to this user; "
				 "fix: start cairn in a delegated scope (systemd-run --user --scope -p "
				 "Delegate=yes cairn run …) or remove `cpu`");
			return -1;
		}
		if (want->pids && geteuid() == 0) {
			/* The kernel does not apply RLIMIT_NPROC to uid 0. */
			snprintf(err->msg, sizeof(err->msg),
				 "refusing to run: `pids` in [agent.limits] cannot be enforced for root "
				 "without a cgroup (the kernel exempts uid 0 from RLIMIT_NPROC); fix: "
				 "mount cgroup v2 with the pids controller, or run cairn as a regular "
				 "user");
			return -1;
		}
	}
	return 0;
}
