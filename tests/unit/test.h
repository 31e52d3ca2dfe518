/* test.h - the unit-test harness: checks that count, report and never abort.
 *
 * A test file defines test functions and a table; main() comes from
 * TEST_MAIN(table).  Each CHECK prints file:line and the expression when it
 * fails.  The run ends with `N passed, N failed` (checks, not functions) and
 * exits non-zero on any failure. */
#ifndef CAIRN_TEST_H
#define CAIRN_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern unsigned long test_passed, test_failed;

#define CHECK(cond)                                                                      \
	((cond) ? (void)test_passed++                                                    \
		: (void)(test_failed++, fprintf(stderr, "%s:%d: CHECK failed: %s\n",      \
						__FILE__, __LINE__, #cond)))

#define CHECK_EQ_INT(a, b)                                                               \
	do {                                                                             \
		long long test_a_ = (long long)(a), test_b_ = (long long)(b);            \
		if (test_a_ == test_b_)                                                  \
			test_passed++;                                                   \
		else {                                                                   \
			test_failed++;                                                   \
			fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, test_a_, #b, test_b_);           \
		}                                                                        \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                               \
	do {                                                                             \
		const char *test_a_ = (a), *test_b_ = (b);                               \
		if (test_a_ != NULL && test_b_ != NULL && strcmp(test_a_, test_b_) == 0) \
			test_passed++;                                                   \
		else {                                                                   \
			test_failed++;                                                   \
			fprintf(stderr, "%s:%d: CHECK_EQ_STR failed:\n  %s = \"%s\"\n  %s = \"%s\"\n", \
				__FILE__, __LINE__, #a, test_a_ ? test_a_ : "(null)", #b, \
				test_b_ ? test_b_ : "(null)");                           \
		}                                                                        \
	} while (0)

/* Read a whole file into a NUL-terminated malloc'd buffer (*n: its length,
 * without the NUL); NULL when it cannot be read.  The caller frees. */
static inline char *test_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long len;

	*n = 0;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)len + 1)) != NULL) {
		*n = fread(b, 1, (size_t)len, f);
		b[*n] = '\0';
	}
	fclose(f);
	return b;
}

/* The tests' data: tests/data/ of the source tree (cedar/, dogwood/, box/, ...;
 * tests/data/README.md says what each holds).  meson passes the tree's absolute
 * path as CAIRN_SOURCE_DIR, so a test finds its data from any working
 * directory; a test that names TEST_DATA_DIR does not build without it. */
#ifdef CAIRN_SOURCE_DIR
#define TEST_DATA_DIR CAIRN_SOURCE_DIR "/tests/data"
#endif

struct test_case {
	const char *name;
	void (*fn)(void);
};

#define TEST_MAIN(table)                                                                 \
	unsigned long test_passed, test_failed;                                          \
	int main(int argc, char **argv)                                                  \
	{                                                                                \
		for (size_t i_ = 0; i_ < sizeof(table) / sizeof((table)[0]); i_++) {     \
			if (argc > 1 && strcmp(argv[1], (table)[i_].name) != 0)           \
				continue;                                                \
			(table)[i_].fn();                                                \
		}                                                                        \
		printf("%lu passed, %lu failed\n", test_passed, test_failed);            \
		return test_failed ? 1 : 0;                                              \
	}

#endif
