/* json_util: typed, range-checked reads of fields from jansson objects.
 *
 * Each getter reads `key` from `obj` and fails with a VF_EINVAL error naming
 * the key ("requested_cpu: expected an integer, got a string"). A missing
 * key is an error when `required`, else the caller's default stays in *out.
 * Returns 1 when the key was present and valid, 0 when absent and optional,
 * -1 on error. */
#ifndef VF_JSON_UTIL_H
#define VF_JSON_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

/* "an integer", "a string", ... for messages. */
const char *json_util_type_name(const json_t *value);

int json_util_int(const json_t *obj, const char *key, bool required, int64_t min, int64_t max,
                  int64_t *out, vf_error *err) __attribute__((warn_unused_result));
/* Integers are accepted where a number is expected. */
int json_util_number(const json_t *obj, const char *key, bool required, double min, double max,
                     double *out, vf_error *err) __attribute__((warn_unused_result));
int json_util_bool(const json_t *obj, const char *key, bool required, bool *out, vf_error *err)
    __attribute__((warn_unused_result));
/* Copies into buf (size bytes incl. NUL). The string must be 1..size-1 bytes,
 * contain no NUL, and when `charset` is non-NULL only characters from it. */
int json_util_string(const json_t *obj, const char *key, bool required, const char *charset,
                     char *buf, size_t size, vf_error *err) __attribute__((warn_unused_result));

/* Fail with "unknown field 'x'" for any key of obj not listed in `allowed`
 * (a NULL-terminated array). A typo must not silently become a default. */
int json_util_only_keys(const json_t *obj, const char *const *allowed, vf_error *err)
    __attribute__((warn_unused_result));

/* `text` as a new JSON string, or JSON null when text is NULL; NULL when the
 * text is not UTF-8 or memory runs out (json_object_set_new then fails). */
json_t *json_util_string_or_null(const char *text);

/* Serialise compactly with keys in insertion order; owned string, NULL on failure. */
char *json_util_dump(const json_t *value);

#endif
