/* gwerr.c - the gateway's failures with a message (gwerr.h). */
#include <stdarg.h>
#include <stdio.h>

#include "gwerr.h"

int gw_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}
