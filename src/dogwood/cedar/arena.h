/* arena.h - bump allocator for parse trees, stores and per-request scratch.
 *
 * Everything a policy set, schema or entity store owns comes from one arena and is
 * released at once with it, so no error path can leak a piece.  Allocation
 * never fails silently: it returns NULL on out-of-memory and leaves the arena
 * usable.  Not thread-safe: an
 * arena belongs to one owner at a time. */
#ifndef DW_ARENA_H
#define DW_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct dw_arena_chunk;

struct dw_arena {
	struct dw_arena_chunk *head;   /* current chunk (newest first) */
	char *cur, *end;               /* free space in head */
	size_t total;                  /* bytes obtained from malloc, for limits */
	size_t limit;                  /* 0 = unlimited; else allocation fails past it */
};

/* A mark remembers the arena's position so scratch work can be dropped. */
struct dw_arena_mark {
	struct dw_arena_chunk *head;
	char *cur, *end;
};

void  dw_arena_init(struct dw_arena *a);
void  dw_arena_fini(struct dw_arena *a);          /* frees every chunk; a is reusable */
void *dw_arena_alloc(struct dw_arena *a, size_t size, size_t align);   /* NULL on ENOMEM */
void *dw_arena_zalloc(struct dw_arena *a, size_t size, size_t align);
/* Copy n bytes (not NUL-terminated in the source) and add a NUL; NULL on ENOMEM. */
char *dw_arena_strndup(struct dw_arena *a, const char *s, size_t n);
char *dw_arena_strdup(struct dw_arena *a, const char *s);
char *dw_arena_printf(struct dw_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct dw_arena_mark dw_arena_mark(const struct dw_arena *a);
/* Drop everything allocated since m (chunks obtained since are freed).  Give a
 * scratch arena a first chunk big enough for typical work so resets stay free. */
void dw_arena_reset(struct dw_arena *a, struct dw_arena_mark m);

#define DW_NEW(a, T) ((T *)dw_arena_zalloc((a), sizeof(T), _Alignof(T)))
#define DW_NEWN(a, T, n) ((T *)dw_arena_alloc((a), sizeof(T) * (size_t)(n), _Alignof(T)))

#endif
