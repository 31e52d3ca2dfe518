/* json_load.h - jansson's json_loadb, plus NUL inside object keys.
 *
 * Cedar allows any string as an attribute name, U+0000 included, and
 * jansson's parser refuses `\u0000` in a key although its object API holds
 * such keys (json_object_keylen_foreach).  dw_json_loadb rewrites each
 * `\u0000` escape inside a key to `\uffff` before parsing (same length, so
 * error positions are unchanged) and restores the NULs in the parsed keys.
 * A document that already has U+FFFF in a key and also a NUL in one is
 * refused, so the mapping is never ambiguous.  Same contract as json_loadb. */
#ifndef DW_JSON_LOAD_H
#define DW_JSON_LOAD_H

#include <jansson.h>
#include <stddef.h>

json_t *dw_json_loadb(const char *src, size_t len, size_t flags, json_error_t *err);

#endif
