/* lex.h - tokens of Cedar and Dogwood sources (policies, macro bodies, the
 * temporal sublanguage).  The lexer never allocates; a token is a span. */
#ifndef DW_LEX_H
#define DW_LEX_H

#include <stddef.h>
#include <stdint.h>

enum dw_tok {
	DW_T_EOF = 0,
	DW_T_ERROR,      /* bad character or unterminated string; msg in lexer */
	DW_T_IDENT,      /* [_a-zA-Z][_a-zA-Z0-9]* */
	DW_T_INT,        /* [0-9]+ */
	DW_T_STR,        /* "…" raw, quotes included */
	DW_T_QIDENT,     /* ?ident (slot or macro parameter) */
	DW_T_DIDENT,     /* $ident (macro fresh binder) */
	DW_T_AT,         /* @ */
	DW_T_DOT, DW_T_COMMA, DW_T_SEMI, DW_T_COLON, DW_T_COLON2,
	DW_T_LPAREN, DW_T_RPAREN, DW_T_LBRACE, DW_T_RBRACE, DW_T_LBRACKET, DW_T_RBRACKET,
	DW_T_EQ2, DW_T_NE, DW_T_LT, DW_T_LE, DW_T_GE, DW_T_GT,
	DW_T_OR2, DW_T_AND2,
	DW_T_PLUS, DW_T_MINUS, DW_T_STAR, DW_T_SLASH, DW_T_PERCENT,
	DW_T_BANG, DW_T_EQ,
};

struct dw_token {
	enum dw_tok kind;
	uint32_t off, end;
};

struct dw_lexer {
	const char *src;
	size_t len;
	size_t pos;
	const char *err;     /* for DW_T_ERROR */
};

void dw_lex_init(struct dw_lexer *lx, const char *src, size_t len, size_t start);
struct dw_token dw_lex_next(struct dw_lexer *lx);
const char *dw_tok_name(enum dw_tok k);   /* "`(`", "identifier", ... */

#endif
