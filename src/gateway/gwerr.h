/* gwerr.h - how the gateway's modules fail: a negative errno returned, and
 * what failed and why written into err[0, errlen) (NUL-terminated; err may be
 * NULL or errlen 0).  ca.c adds OpenSSL's error queue to its own. */
#ifndef CAIRN_GW_GWERR_H
#define CAIRN_GW_GWERR_H

#include <stddef.h>

/* Writes the message and returns code. */
int gw_fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
