/* render.h - printing diagnostics for people (file:line:col, the source line,
 * a caret under the span) and for programs (JSON). */
#ifndef CAIRN_RENDER_H
#define CAIRN_RENDER_H

#include <stdio.h>

#include "dogwood.h"

enum render_format { RENDER_HUMAN = 0, RENDER_JSON };

/* Human form of every diagnostic in d, to f. */
void render_diags_human(FILE *f, const struct dw_diags *d);
/* A JSON array of the diagnostics of one severity (-1: all). */
struct json_t;
struct json_t *render_diags_json(const struct dw_diags *d, int severity);

#endif
