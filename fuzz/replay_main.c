/* replay_main.c - run a libFuzzer target over saved inputs, without libFuzzer.
 *
 * Usage: replay_<target> PATH...
 * Each PATH is a file or a directory (walked recursively, entries in name order,
 * dot files skipped).  Every file is read into a buffer of exactly its size (so
 * ASan sees any read past the end) and passed to LLVMFuzzerTestOneInput, as
 * libFuzzer would.  `make test` builds this with the targets under ASan+UBSan
 * to replay fuzz/corpus/.
 *
 * Prints `N passed, N failed` (files).  A file fails when it cannot be read or
 * when the target crashes on it; a crash ends the process (the sanitizer
 * report, or the signal, then names the file on stderr), so after a complete
 * run the count is `N passed, 0 failed`.  Exit status 0 iff nothing failed and
 * at least one input ran. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional hooks: defined by a target that wants them / by the sanitizer runtimes. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static unsigned long rp_passed, rp_failed;
static const char *volatile rp_current;   /* the file being run, for crash reports */

static void rp_say_current(void)
{
	const char *f = rp_current;

	if (f != NULL) {
		/* async-signal-safe: only write(2) */
		static const char pre[] = "replay: crashed on input ";
		ssize_t w = write(STDERR_FILENO, pre, sizeof pre - 1);
		w = write(STDERR_FILENO, f, strlen(f));
		w = write(STDERR_FILENO, "\n", 1);
		(void)w;
	}
}

static void rp_on_signal(int sig)
{
	rp_say_current();
	raise(sig);   /* SA_RESETHAND restored the default action */
}

/* Name the input before dying of a signal; on an alternate stack, so a stack
 * overflow is reported too. */
static void rp_catch_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	struct sigaction sa;

	if (sigaltstack(&ss, NULL) != 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = rp_on_signal;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		(void)sigaction(sigs[i], &sa, NULL);
}

/* Read all of path into a malloc'd buffer of exactly its size (1 byte for an
 * empty file, of which 0 are passed).  0 or -errno. */
static int rp_slurp(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		return errno ? -errno : -EIO;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *p = realloc(buf, ncap);
			if (p == NULL) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = p, cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno ? errno : EIO;
		free(buf);
		fclose(f);
		return -e;
	}
	fclose(f);
	/* Shrink to the exact size so an over-read is outside the allocation. */
	uint8_t *exact = malloc(n ? n : 1);
	if (exact == NULL) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(exact, buf, n);
	free(buf);
	*out = exact;
	*len = n;
	return 0;
}

static void rp_file(const char *path)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int r = rp_slurp(path, &data, &len);

	if (r != 0) {
		fprintf(stderr, "FAIL: %s: cannot read: %s\n", path, strerror(-r));
		rp_failed++;
		return;
	}
	rp_current = path;
	(void)LLVMFuzzerTestOneInput(data, len);
	rp_current = NULL;
	free(data);
	rp_passed++;
}

static int rp_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rp_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "FAIL: %s: %s\n", path, strerror(errno));
		rp_failed++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		rp_file(path);
		return;
	}

	DIR *dir = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (dir == NULL) {
		fprintf(stderr, "FAIL: %s: %s\n", path, strerror(errno));
		rp_failed++;
		return;
	}
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **p = realloc(names, ncap * sizeof *p);
			if (p == NULL)
				break;
			names = p, cap = ncap;
		}
		if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0)
			break;
		n++;
	}
	closedir(dir);
	if (n > 1)
		qsort(names, n, sizeof *names, rp_name_cmp);
	for (size_t i = 0; i < n; i++) {
		rp_path(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE-OR-DIR...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize != NULL)
		(void)LLVMFuzzerInitialize(&argc, &argv);
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(rp_say_current);
	else
		rp_catch_signals();   /* a sanitizer's own handlers report better */

	for (int i = 1; i < argc; i++)
		rp_path(argv[i]);

	printf("%lu passed, %lu failed\n", rp_passed, rp_failed);
	if (rp_passed + rp_failed == 0)
		fprintf(stderr, "replay: no inputs found\n");
	return rp_failed == 0 && rp_passed > 0 ? 0 : 1;
}
