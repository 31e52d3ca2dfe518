/* arena.c - see arena.h. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dw_arena_chunk {
	struct dw_arena_chunk *next;
	size_t size;                     /* bytes of data[] */
	_Alignas(16) char data[];
};

#define DW_ARENA_MIN_CHUNK (16u * 1024u - sizeof(struct dw_arena_chunk))

void dw_arena_init(struct dw_arena *a)
{
	memset(a, 0, sizeof *a);
}

void dw_arena_fini(struct dw_arena *a)
{
	struct dw_arena_chunk *c = a->head, *next;

	while (c != NULL) {
		next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->cur = a->end = NULL;
	a->total = 0;
}

static int dw_arena_grow(struct dw_arena *a, size_t need)
{
	struct dw_arena_chunk *c;
	size_t size = DW_ARENA_MIN_CHUNK;

	/* Chunks double with the arena so a large store costs O(log n) mallocs. */
	if (a->total / 2 > size)
		size = a->total / 2;
	if (size > (size_t)64 << 20)
		size = (size_t)64 << 20;
	if (need > SIZE_MAX - 64 - sizeof *c)
		return -1;
	if (size < need + 16)
		size = need + 16;
	if (a->limit != 0 && (a->total + size > a->limit || a->total + size < a->total))
		return -1;
	c = malloc(sizeof *c + size);
	if (c == NULL)
		return -1;
	c->size = size;
	c->next = a->head;
	a->head = c;
	a->cur = c->data;
	a->end = c->data + size;
	a->total += size;
	return 0;
}

void *dw_arena_alloc(struct dw_arena *a, size_t size, size_t align)
{
	uintptr_t p;

	if (align == 0)
		align = 1;
	for (int tries = 0; tries < 2; tries++) {
		if (a->cur != NULL) {
			p = ((uintptr_t)a->cur + (align - 1)) & ~(uintptr_t)(align - 1);
			if (p <= (uintptr_t)a->end && size <= (uintptr_t)a->end - p) {
				a->cur = (char *)(p + size);
				return (void *)p;
			}
		}
		if (dw_arena_grow(a, size + align) != 0)
			return NULL;
	}
	return NULL;
}

void *dw_arena_zalloc(struct dw_arena *a, size_t size, size_t align)
{
	void *p = dw_arena_alloc(a, size, align);

	if (p != NULL)
		memset(p, 0, size);
	return p;
}

char *dw_arena_strndup(struct dw_arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = dw_arena_alloc(a, n + 1, 1);
	if (p == NULL)
		return NULL;
	if (n != 0)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *dw_arena_strdup(struct dw_arena *a, const char *s)
{
	return dw_arena_strndup(a, s, strlen(s));
}

char *dw_arena_printf(struct dw_arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = dw_arena_alloc(a, (size_t)n + 1, 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

struct dw_arena_mark dw_arena_mark(const struct dw_arena *a)
{
	struct dw_arena_mark m = { a->head, a->cur, a->end };
	return m;
}

void dw_arena_reset(struct dw_arena *a, struct dw_arena_mark m)
{
	struct dw_arena_chunk *c = a->head, *next;

	while (c != NULL && c != m.head) {
		next = c->next;
		a->total -= c->size;
		free(c);
		c = next;
	}
	a->head = m.head;
	a->cur = m.cur;
	a->end = m.end;
}
