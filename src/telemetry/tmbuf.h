/* tmbuf.h - a growable byte buffer for the encoders (OTLP/JSON, protobuf).
 * An allocation failure sets oom and makes every later append a no-op, so
 * an encoder checks once, at the end. */
#ifndef CAIRN_TM_BUF_H
#define CAIRN_TM_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tm_buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

/* Room for k more bytes: a pointer to them, or NULL (oom set). */
uint8_t *tm_buf_room(struct tm_buf *b, size_t k);
void tm_buf_put(struct tm_buf *b, const void *p, size_t k);
void tm_buf_puts(struct tm_buf *b, const char *s);
void tm_buf_putc(struct tm_buf *b, char c);
void tm_buf_free(struct tm_buf *b);

#endif
