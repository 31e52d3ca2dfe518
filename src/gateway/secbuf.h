/* secbuf.h - a growable text that may hold secret bytes (credentials, the
 * canonical request of a signature): every block it lets go of is wiped.
 * A failed allocation sticks (oom), so a chain of appends is checked once,
 * at gw_sb_take.  Texts are NUL-terminated and bounded at 16 MiB.  Also the
 * RFC 3986 percent-encoding both cred.c and sigv4.c use. */
#ifndef CAIRN_GW_SECBUF_H
#define CAIRN_GW_SECBUF_H

#include <stdbool.h>
#include <stddef.h>

struct gw_sb {
	char *p;
	size_t len, cap;
	bool oom;
};

void gw_sb_free(struct gw_sb *b);                       /* wipes; the struct may be reused */
bool gw_sb_reserve(struct gw_sb *b, size_t n);          /* room for n more bytes and a NUL */
void gw_sb_addn(struct gw_sb *b, const void *s, size_t n);
void gw_sb_add(struct gw_sb *b, const char *s);
void gw_sb_addc(struct gw_sb *b, char c);
/* The text, moved out (the caller frees it), or NULL after any failed
 * allocation (the buffer is then freed). */
char *gw_sb_take(struct gw_sb *b);

/* RFC 3986 unreserved: A-Z a-z 0-9 - . _ ~ */
bool gw_unreserved(unsigned char c);
int gw_hexval(char c);                                  /* 0-15, or -1 */
/* Every byte but unreserved ones (and '/' when keep_slash) as %XX, upper-case hex. */
void gw_sb_pct_encode(struct gw_sb *b, const char *s, size_t n, bool keep_slash);
/* %XX decoded (a '%' without two hex digits stays literal); form: '+' is a space. */
void gw_sb_pct_decode(struct gw_sb *b, const char *s, size_t n, bool form);

#endif
