/* live.h - a decision as one line for the operator (docs/records.md "On the
 * terminal"): `cairn: deny  net:connect  api.test:443  [default-deny]`.
 * The same form for `cairn run --decisions` and `cairn records show`. */
#ifndef CAIRN_TM_LIVE_H
#define CAIRN_TM_LIVE_H

#include <stddef.h>

/* The line, '\n' included, into buf[0, cap) NUL-terminated; returns its
 * length (cut to fit).  The rule is shown without Box's angle brackets
 * (`<default-deny>` as `[default-deny]`).  Every byte a terminal could take
 * as a control (C0, DEL, and the C1 range in UTF-8) is written as \xNN:
 * a host name or a path comes from the workload. */
size_t tm_live_format(char *buf, size_t cap, const char *verdict, const char *action,
		      const char *resource, const char *rule);

#endif
