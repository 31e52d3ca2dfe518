/* lex.c - see lex.h. */
#include "lex.h"

#include <stdbool.h>

static bool dw_is_ident_start(unsigned char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool dw_is_ident_char(unsigned char c)
{
	return dw_is_ident_start(c) || (c >= '0' && c <= '9');
}

void dw_lex_init(struct dw_lexer *lx, const char *src, size_t len, size_t start)
{
	lx->src = src;
	lx->len = len;
	lx->pos = start;
	lx->err = NULL;
}

/* Skip whitespace (Unicode White_Space, as the Rust regex `\s` does) and // comments. */
static void dw_lex_skip(struct dw_lexer *lx)
{
	const unsigned char *s = (const unsigned char *)lx->src;

	while (lx->pos < lx->len) {
		unsigned char c = s[lx->pos];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
			lx->pos++;
		} else if (c == '/' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '/') {
			while (lx->pos < lx->len && s[lx->pos] != '\n' && s[lx->pos] != '\r')
				lx->pos++;
		} else if (c == 0xC2 && lx->pos + 1 < lx->len &&
			   (s[lx->pos + 1] == 0x85 || s[lx->pos + 1] == 0xA0)) {
			lx->pos += 2;   /* NEL, NBSP */
		} else if (c == 0xE1 && lx->pos + 2 < lx->len && s[lx->pos + 1] == 0x9A &&
			   s[lx->pos + 2] == 0x80) {
			lx->pos += 3;   /* U+1680 */
		} else if (c == 0xE2 && lx->pos + 2 < lx->len &&
			   ((s[lx->pos + 1] == 0x80 &&
			     (s[lx->pos + 2] <= 0x8A || s[lx->pos + 2] == 0xA8 ||
			      s[lx->pos + 2] == 0xA9 || s[lx->pos + 2] == 0xAF)) ||
			    (s[lx->pos + 1] == 0x81 && s[lx->pos + 2] == 0x9F))) {
			lx->pos += 3;   /* U+2000..200A, 2028, 2029, 202F, 205F */
		} else if (c == 0xE3 && lx->pos + 2 < lx->len && s[lx->pos + 1] == 0x80 &&
			   s[lx->pos + 2] == 0x80) {
			lx->pos += 3;   /* U+3000 */
		} else {
			break;
		}
	}
}

struct dw_token dw_lex_next(struct dw_lexer *lx)
{
	struct dw_token t;
	const unsigned char *s = (const unsigned char *)lx->src;
	unsigned char c, d;

	dw_lex_skip(lx);
	t.off = (uint32_t)lx->pos;
	if (lx->pos >= lx->len) {
		t.kind = DW_T_EOF;
		t.end = t.off;
		return t;
	}
	c = s[lx->pos];
	d = lx->pos + 1 < lx->len ? s[lx->pos + 1] : 0;
	if (dw_is_ident_start(c)) {
		while (lx->pos < lx->len && dw_is_ident_char(s[lx->pos]))
			lx->pos++;
		t.kind = DW_T_IDENT;
	} else if (c >= '0' && c <= '9') {
		while (lx->pos < lx->len && s[lx->pos] >= '0' && s[lx->pos] <= '9')
			lx->pos++;
		t.kind = DW_T_INT;
	} else if (c == '"') {
		lx->pos++;
		for (;;) {
			if (lx->pos >= lx->len) {
				lx->err = "unterminated string literal";
				t.kind = DW_T_ERROR;
				t.end = (uint32_t)lx->pos;
				return t;
			}
			if (s[lx->pos] == '\\' && lx->pos + 1 < lx->len) {
				/* `\\.` in Cedar's token regex: any char but a newline */
				if (s[lx->pos + 1] == '\n') {
					lx->err = "unterminated string literal";
					t.kind = DW_T_ERROR;
					t.end = (uint32_t)lx->pos;
					return t;
				}
				lx->pos += 2;
				/* skip the rest of a multi-byte character after the backslash */
				while (lx->pos < lx->len && (s[lx->pos] & 0xC0) == 0x80)
					lx->pos++;
				continue;
			}
			if (s[lx->pos] == '"') {
				lx->pos++;
				break;
			}
			lx->pos++;
		}
		t.kind = DW_T_STR;
	} else if ((c == '?' || c == '$') && dw_is_ident_start(d)) {
		lx->pos++;
		while (lx->pos < lx->len && dw_is_ident_char(s[lx->pos]))
			lx->pos++;
		t.kind = c == '?' ? DW_T_QIDENT : DW_T_DIDENT;
	} else {
		lx->pos++;
		switch (c) {
		case '@': t.kind = DW_T_AT; break;
		case '.': t.kind = DW_T_DOT; break;
		case ',': t.kind = DW_T_COMMA; break;
		case ';': t.kind = DW_T_SEMI; break;
		case ':':
			if (d == ':') { lx->pos++; t.kind = DW_T_COLON2; }
			else t.kind = DW_T_COLON;
			break;
		case '(': t.kind = DW_T_LPAREN; break;
		case ')': t.kind = DW_T_RPAREN; break;
		case '{': t.kind = DW_T_LBRACE; break;
		case '}': t.kind = DW_T_RBRACE; break;
		case '[': t.kind = DW_T_LBRACKET; break;
		case ']': t.kind = DW_T_RBRACKET; break;
		case '=':
			if (d == '=') { lx->pos++; t.kind = DW_T_EQ2; }
			else t.kind = DW_T_EQ;
			break;
		case '!':
			if (d == '=') { lx->pos++; t.kind = DW_T_NE; }
			else t.kind = DW_T_BANG;
			break;
		case '<':
			if (d == '=') { lx->pos++; t.kind = DW_T_LE; }
			else t.kind = DW_T_LT;
			break;
		case '>':
			if (d == '=') { lx->pos++; t.kind = DW_T_GE; }
			else t.kind = DW_T_GT;
			break;
		case '|':
			if (d == '|') { lx->pos++; t.kind = DW_T_OR2; break; }
			goto bad;
		case '&':
			if (d == '&') { lx->pos++; t.kind = DW_T_AND2; break; }
			goto bad;
		case '+': t.kind = DW_T_PLUS; break;
		case '-': t.kind = DW_T_MINUS; break;
		case '*': t.kind = DW_T_STAR; break;
		case '/': t.kind = DW_T_SLASH; break;
		case '%': t.kind = DW_T_PERCENT; break;
		default:
		bad:
			/* report the whole (possibly multi-byte) character */
			while (lx->pos < lx->len && (s[lx->pos] & 0xC0) == 0x80)
				lx->pos++;
			lx->err = "invalid token";
			t.kind = DW_T_ERROR;
			break;
		}
	}
	t.end = (uint32_t)lx->pos;
	return t;
}

const char *dw_tok_name(enum dw_tok k)
{
	switch (k) {
	case DW_T_EOF: return "end of input";
	case DW_T_ERROR: return "invalid token";
	case DW_T_IDENT: return "identifier";
	case DW_T_INT: return "number";
	case DW_T_STR: return "string literal";
	case DW_T_QIDENT: return "`?name`";
	case DW_T_DIDENT: return "`$name`";
	case DW_T_AT: return "`@`";
	case DW_T_DOT: return "`.`";
	case DW_T_COMMA: return "`,`";
	case DW_T_SEMI: return "`;`";
	case DW_T_COLON: return "`:`";
	case DW_T_COLON2: return "`::`";
	case DW_T_LPAREN: return "`(`";
	case DW_T_RPAREN: return "`)`";
	case DW_T_LBRACE: return "`{`";
	case DW_T_RBRACE: return "`}`";
	case DW_T_LBRACKET: return "`[`";
	case DW_T_RBRACKET: return "`]`";
	case DW_T_EQ2: return "`==`";
	case DW_T_NE: return "`!=`";
	case DW_T_LT: return "`<`";
	case DW_T_LE: return "`<=`";
	case DW_T_GE: return "`>=`";
	case DW_T_GT: return "`>`";
	case DW_T_OR2: return "`||`";
	case DW_T_AND2: return "`&&`";
	case DW_T_PLUS: return "`+`";
	case DW_T_MINUS: return "`-`";
	case DW_T_STAR: return "`*`";
	case DW_T_SLASH: return "`/`";
	case DW_T_PERCENT: return "`%`";
	case DW_T_BANG: return "`!`";
	case DW_T_EQ: return "`=`";
	}
	return "token";
}
