/* tmbuf.h - a growable byte buffer for the encoders (OTLP/JSON, protobuf).
 * An allocation failure sets oom and makes every later append a no-op, so
 * an encoder checks once, at the end. */
#ifndef CAIRN_TM_BUF_H
#define CAIRN_TM_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tm_buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

/* Room for k more bytes: a pointer to them, or NULL (oom set). */
uint8_t *tm_buf_room(struct tm_buf *b, size_t k);
void tm_buf_free(struct tm_buf *b);

/* The appends are inline: an encoder makes hundreds of them per record,
 * most of a literal's few bytes, and a call each (with strlen and a memcpy
 * call) was a third of the writer's time (docs/records.md "What records
 * cost").  Inline, a literal's length is known where it is written and its
 * copy is a move or two. */
static inline void tm_buf_put(struct tm_buf *b, const void *p, size_t k)
{
	if (k == 0)
		return;
	uint8_t *d = !b->oom && k <= b->cap - b->n ? b->p + b->n : tm_buf_room(b, k);
	if (d != NULL) {
		memcpy(d, p, k);
		b->n += k;
	}
}

static inline void tm_buf_puts(struct tm_buf *b, const char *s)
{
	tm_buf_put(b, s, strlen(s));
}

static inline void tm_buf_putc(struct tm_buf *b, char c)
{
	tm_buf_put(b, &c, 1);
}

#endif
