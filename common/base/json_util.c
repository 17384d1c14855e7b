#include "json_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *json_util_type_name(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a value";
}

/* Returns the value, NULL when absent (and that is allowed), or NULL with err set. */
static const json_t *field(const json_t *obj, const char *key, bool required, vf_error *err,
                           int *status)
{
    const json_t *value = json_object_get(obj, key);
    *status = 0;
    if (!value || json_is_null(value)) {
        if (required) {
            vf_error_set(err, VF_EINVAL, "%s: missing", key);
            *status = -1;
        }
        return NULL;
    }
    *status = 1;
    return value;
}

int json_util_int(const json_t *obj, const char *key, bool required, int64_t min, int64_t max,
                  int64_t *out, vf_error *err)
{
    int status;
    const json_t *value = field(obj, key, required, err, &status);
    if (!value)
        return status;
    if (!json_is_integer(value)) {
        vf_error_set(err, VF_EINVAL, "%s: expected an integer, got %s", key,
                     json_util_type_name(value));
        return -1;
    }
    json_int_t n = json_integer_value(value);
    if (n < min || n > max) {
        vf_error_set(err, VF_EINVAL, "%s: must be between %lld and %lld, got %lld", key,
                     (long long)min, (long long)max, (long long)n);
        return -1;
    }
    *out = n;
    return 1;
}

int json_util_number(const json_t *obj, const char *key, bool required, double min, double max,
                     double *out, vf_error *err)
{
    int status;
    const json_t *value = field(obj, key, required, err, &status);
    if (!value)
        return status;
    if (!json_is_number(value)) {
        vf_error_set(err, VF_EINVAL, "%s: expected a number, got %s", key,
                     json_util_type_name(value));
        return -1;
    }
    double n = json_number_value(value);
    if (!isfinite(n) || n < min || n > max) {
        vf_error_set(err, VF_EINVAL, "%s: must be between %g and %g, got %g", key, min, max, n);
        return -1;
    }
    *out = n;
    return 1;
}

int json_util_bool(const json_t *obj, const char *key, bool required, bool *out, vf_error *err)
{
    int status;
    const json_t *value = field(obj, key, required, err, &status);
    if (!value)
        return status;
    if (!json_is_boolean(value)) {
        vf_error_set(err, VF_EINVAL, "%s: expected true or false, got %s", key,
                     json_util_type_name(value));
        return -1;
    }
    *out = json_is_true(value);
    return 1;
}

int json_util_string(const json_t *obj, const char *key, bool required, const char *charset,
                     char *buf, size_t size, vf_error *err)
{
    int status;
    const json_t *value = field(obj, key, required, err, &status);
    if (!value)
        return status;
    if (!json_is_string(value)) {
        vf_error_set(err, VF_EINVAL, "%s: expected a string, got %s", key,
                     json_util_type_name(value));
        return -1;
    }
    const char *text = json_string_value(value);
    size_t len = json_string_length(value);
    if (len == 0 || len >= size) {
        vf_error_set(err, VF_EINVAL, "%s: must be 1 to %zu characters long, got %zu", key, size - 1,
                     len);
        return -1;
    }
    if (strlen(text) != len) {
        vf_error_set(err, VF_EINVAL, "%s: contains a NUL character", key);
        return -1;
    }
    if (charset) {
        size_t ok = strspn(text, charset);
        if (ok != len) {
            vf_error_set(err, VF_EINVAL, "%s: character %zu (0x%02x) is not allowed", key, ok + 1,
                         (unsigned char)text[ok]);
            return -1;
        }
    }
    memcpy(buf, text, len + 1);
    return 1;
}

int json_util_only_keys(const json_t *obj, const char *const *allowed, vf_error *err)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        bool known = false;
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0)
                known = true;
        if (!known) {
            vf_error_set(err, VF_EINVAL, "unknown field '%.64s'", key);
            return -1;
        }
    }
    return 0;
}

json_t *json_util_string_or_null(const char *text)
{
    return text ? json_string(text) : json_null();
}

char *json_util_dump(const json_t *value)
{
    /* 15 significant digits: scores print as 85.31, not 85.310000000000002. */
    const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15);
    /* Most texts (a result, an event) fit on the stack: one copy out,
     * instead of json_dumps's buffer grown from 16 bytes and copied again. */
    char small[1024];
    size_t len = json_dumpb(value, small, sizeof small, flags);
    if (len == 0 || len >= sizeof small)
        return json_dumps(value, flags);
    char *text = malloc(len + 1);
    if (!text)
        return NULL;
    memcpy(text, small, len);
    text[len] = '\0';
    return text;
}
