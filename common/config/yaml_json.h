/* yaml_json: read a YAML document into a jansson value.
 *
 * JSON is a subset of YAML, so the same loader reads both. Plain scalars
 * resolve by the YAML 1.2 core schema: null, ~ or nothing -> null;
 * true/false (also True/TRUE/False/FALSE) -> boolean; decimal, 0o octal and
 * 0x hex integers (with sign) -> integer; decimal floats -> real; anything
 * else -> string. Quoted scalars and scalars tagged !!str are always strings,
 * so "123" stays text. Unlike YAML 1.1, yes/no/on/off are strings.
 *
 * Rejected with an error naming the line ("line 7: ..."): aliases (so no
 * alias cycles or billion-laughs expansion), nesting deeper than
 * YAML_JSON_MAX_DEPTH, non-scalar or duplicate mapping keys, more than one
 * document, integers outside int64, .inf and .nan (JSON has neither).
 * Anchors on their own are harmless and ignored. */
#ifndef VF_YAML_JSON_H
#define VF_YAML_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "vf_error.h"

#define YAML_JSON_MAX_DEPTH 64

/* Parse `len` bytes of `text` (need not be NUL-terminated). An empty
 * document yields json null. Returns a new reference, or NULL with err
 * filled (VF_EINVAL "line N: what is wrong", VF_ENOMEM). */
json_t *yaml_json_load(const char *text, size_t len, vf_error *err)
    __attribute__((warn_unused_result));

/* Same, from a file; messages are prefixed with the path
 * ("inventory.yaml: line 7: ..."). A file that cannot be read is VF_EIO. */
json_t *yaml_json_load_file(const char *path, vf_error *err) __attribute__((warn_unused_result));

/* Streaming, for documents too large to hold as one tree (an inventory of
 * 100,000 hosts is 13 MB of text but ten times that as a tree): the items of
 * the document's top-level sequence, or, when the document is a mapping, of
 * the sequence under its key `key` (NULL: none), are handed to `each` one at
 * a time, in order, `index` counting from 0. `item` is borrowed: it is freed
 * when `each` returns. `each` returns 0, or -1 with `err` filled; after a
 * failure the remaining items are still parsed but not handed over.
 *
 * Returns the document with the streamed sequence left empty ([] or
 * {"key": [], ...}), or NULL with err filled. The text's own errors (syntax,
 * aliases, ...) win over an error of `each`, even when they come later in
 * the text, as they would if the whole tree were loaded first; the file
 * variant prefixes either with the path. */
typedef int (*yaml_json_each_fn)(const json_t *item, size_t index, void *context, vf_error *err);
json_t *yaml_json_load_each(const char *text, size_t len, const char *key, yaml_json_each_fn each,
                            void *context, vf_error *err) __attribute__((warn_unused_result));
json_t *yaml_json_load_file_each(const char *path, const char *key, yaml_json_each_fn each,
                                 void *context, vf_error *err) __attribute__((warn_unused_result));

/* The same from a reader (the inventory's file source hashes the very bytes
 * it parses): `read` puts up to `size` bytes into `buffer` and their number
 * into *got, 0 at the end, and returns 0, or -1 when it cannot read (the
 * load then fails with VF_EIO "cannot read"). Messages are not prefixed. */
typedef int (*yaml_json_read_fn)(void *context, unsigned char *buffer, size_t size, size_t *got);
json_t *yaml_json_load_reader_each(yaml_json_read_fn read, void *read_context, const char *key,
                                   yaml_json_each_fn each, void *context, vf_error *err)
    __attribute__((warn_unused_result));

#endif
