/* kernel_limit.c - the rate limit on kernel refusal records (kernel_limit.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_limit.h"

#define OVERFLOW_MAX 512                /* per system call: more than the filter names */

struct entry {
	uint64_t hash;
	char *key;                      /* program '\0' syscall '\0' arguments */
	size_t key_len;
	int64_t window_end;             /* 0: idle, the next refusal is recorded at once */
	uint64_t count;                 /* repeats in the window */
	struct tm_rec *last;            /* the latest repeat's record, to be said at the end */
};

struct tm_kernel_limit {
	struct tm_collector *c;
	struct entry keys[TM_KERNEL_KEYS];
	size_t n_keys;
	struct entry *over;             /* per system call, past TM_KERNEL_KEYS */
	size_t n_over;
	bool said_overflow;
	uint64_t refused, recorded;
};

struct tm_kernel_limit *tm_kernel_limit_new(struct tm_collector *c)
{
	struct tm_kernel_limit *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	l->over = calloc(OVERFLOW_MAX, sizeof(*l->over));
	if (l->over == NULL) {
		free(l);
		return NULL;
	}
	l->c = c;
	return l;
}

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
	return h;
}

static void emit(struct tm_kernel_limit *l, struct tm_rec *r)
{
	if (r == NULL)
		return;
	l->recorded++;
	if (l->c != NULL)
		tm_emit(l->c, r);
	else
		free(r);
}

/* The entry of key (made when absent and there is room), or NULL. */
static struct entry *lookup(struct entry *v, size_t *n, size_t max, const char *key, size_t len)
{
	uint64_t h = fnv(key, len);
	for (size_t i = 0; i < *n; i++)
		if (v[i].hash == h && v[i].key_len == len && memcmp(v[i].key, key, len) == 0)
			return &v[i];
	if (*n == max)
		return NULL;
	char *k = malloc(len);
	if (k == NULL)
		return NULL;
	memcpy(k, key, len);
	v[*n] = (struct entry){ .hash = h, .key = k, .key_len = len };
	return &v[(*n)++];
}

static void close_window(struct tm_kernel_limit *l, struct entry *e)
{
	if (e->count > 0 && e->last != NULL) {
		tm_record_set_int(e->last, "strands.box.containment.suppressed", (int64_t)e->count);
		emit(l, e->last);
		e->last = NULL;
	}
	free(e->last);
	e->last = NULL;
	e->count = 0;
	e->window_end = 0;
}

void tm_kernel_tick(struct tm_kernel_limit *l, int64_t now)
{
	for (size_t i = 0; i < l->n_keys; i++)
		if (l->keys[i].window_end != 0 && now >= l->keys[i].window_end)
			close_window(l, &l->keys[i]);
	for (size_t i = 0; i < l->n_over; i++)
		if (l->over[i].window_end != 0 && now >= l->over[i].window_end)
			close_window(l, &l->over[i]);
}

int64_t tm_kernel_due(const struct tm_kernel_limit *l)
{
	int64_t due = INT64_MAX;
	for (size_t i = 0; i < l->n_keys; i++)
		if (l->keys[i].window_end != 0 && l->keys[i].window_end < due)
			due = l->keys[i].window_end;
	for (size_t i = 0; i < l->n_over; i++)
		if (l->over[i].window_end != 0 && l->over[i].window_end < due)
			due = l->over[i].window_end;
	return due;
}

void tm_kernel_refused(struct tm_kernel_limit *l, const struct tm_kernel_refusal *k, int64_t now)
{
	const char *prog = k->program ? k->program : "", *args = k->arguments ? k->arguments : "";
	char key[8192];
	int n = snprintf(key, sizeof(key), "%s%c%s%c%s", prog, 0, k->syscall, 0, args);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(key) ? (size_t)n : sizeof(key) - 1;

	l->refused++;
	tm_kernel_tick(l, now);
	struct entry *e = lookup(l->keys, &l->n_keys, TM_KERNEL_KEYS, key, len);
	if (e == NULL) {
		/* past the keys: one per system call */
		n = snprintf(key, sizeof(key), "%c%s", 0, k->syscall);
		len = n < 0 ? 0 : (size_t)n < sizeof(key) ? (size_t)n : sizeof(key) - 1;
		e = lookup(l->over, &l->n_over, OVERFLOW_MAX, key, len);
		if (!l->said_overflow && l->c != NULL) {
			l->said_overflow = true;
			char detail[160];
			snprintf(detail, sizeof(detail), "more than %d kinds of kernel refusal: further "
				 "kinds are counted per system call", TM_KERNEL_KEYS);
			tm_control(l->c, TM_REFUSALS_UNOBSERVED, "seccomp", NULL, detail);
		}
		if (e == NULL)
			return;         /* no memory: the refusal stands, unrecorded */
	}
	struct tm_kernel_refusal r = *k;
	r.suppressed = 0;
	if (e->window_end == 0) {
		emit(l, tm_record_kernel(&r));
		e->window_end = now + TM_KERNEL_WINDOW_NS;
		return;
	}
	e->count++;
	struct tm_rec *rec = tm_record_kernel(&r);
	if (rec != NULL) {
		free(e->last);
		e->last = rec;
	}
}

void tm_kernel_stats(const struct tm_kernel_limit *l, struct tm_kernel_stats *out)
{
	out->refused = l->refused;
	out->recorded = l->recorded;
}

void tm_kernel_limit_free(struct tm_kernel_limit *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n_keys; i++) {
		close_window(l, &l->keys[i]);
		free(l->keys[i].key);
	}
	for (size_t i = 0; i < l->n_over; i++) {
		close_window(l, &l->over[i]);
		free(l->over[i].key);
	}
	free(l->over);
	free(l);
}
