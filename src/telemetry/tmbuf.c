/* tmbuf.c - the encoders' buffer (tmbuf.h). */
#include <stdlib.h>

#include "tmbuf.h"

uint8_t *tm_buf_room(struct tm_buf *b, size_t k)
{
	if (b->oom)
		return NULL;
	if (k > b->cap - b->n) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap - b->n < k) {
			if (cap > SIZE_MAX / 2) {
				b->oom = true;
				return NULL;
			}
			cap *= 2;
		}
		uint8_t *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	return b->p + b->n;
}

void tm_buf_free(struct tm_buf *b)
{
	free(b->p);
	*b = (struct tm_buf){ 0 };
}
