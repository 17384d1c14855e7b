/* json_each: read a JSON text whose one long list should not exist as a
 * tree (a node API's answer for 100,000 hosts is 13 MB of text and ten times
 * that as jansson values).
 *
 * The items of the top-level array, or, when the text is an object, of the
 * array under its key `key`, are parsed one at a time with jansson
 * (json_loadb with JSON_DISABLE_EOF_CHECK) and handed to `each`, which
 * borrows the item: it is freed when `each` returns. Everything else in the
 * text is loaded as usual. The same contract as yaml_json_load_each, for
 * strict JSON. */
#ifndef VF_JSON_EACH_H
#define VF_JSON_EACH_H

#include <stddef.h>

#include <jansson.h>

#include "vf_error.h"

/* Returns 0, or -1 with err filled. `index` counts items from 0. */
typedef int (*json_each_fn)(const json_t *item, size_t index, void *context, vf_error *err);

/* Parse `len` bytes of `text`. Returns the document with the streamed array
 * left empty ([] or {"key": [], ...}), or NULL:
 *   - the text is not JSON (or its top level is neither an array nor an
 *     object): `syntax` gets jansson's account (line counted from the start
 *     of the text, text, position) and err "line N: <text>" (VF_EINVAL);
 *   - `each` failed: err is its error and syntax->text is "". After a
 *     failure the remaining items are still parsed, not handed over, so a
 *     syntax error later in the text wins, as it would if the whole text had
 *     been loaded before any item was looked at.
 * Duplicate keys are allowed, the last one winning, as json_loadb does. */
json_t *json_each_loadb(const char *text, size_t len, const char *key, json_each_fn each,
                        void *context, json_error_t *syntax, vf_error *err)
    __attribute__((warn_unused_result));

#endif
