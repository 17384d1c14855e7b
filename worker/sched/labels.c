/* labels: a host's topology labels (labels.h). */
#include "labels.h"

#include <string.h>

#include "json_util.h"

const char label_key_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789._/-";
const char label_value_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._-";

static bool valid(const char *text, size_t size, const char *chars)
{
    size_t len = strlen(text);
    return len > 0 && len < size && strspn(text, chars) == len;
}

bool label_key_valid(const char *key)
{
    return valid(key, LABEL_KEY_LEN, label_key_chars);
}

const char *label_set_get(const label_set *set, const char *key)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->items[i].key, key) == 0)
            return set->items[i].value;
    return NULL;
}

int label_set_put(label_set *set, const char *key, const char *value, vf_error *err)
{
    if (!label_key_valid(key)) {
        vf_error_set(err, VF_EINVAL,
                     "label key \"%.64s\": expected 1..%d characters of "
                     "[A-Za-z0-9._/-]",
                     key, LABEL_KEY_LEN - 1);
        return -1;
    }
    if (!valid(value, LABEL_VALUE_LEN, label_value_chars)) {
        vf_error_set(err, VF_EINVAL,
                     "label %s: value \"%.64s\": expected 1..%d characters of "
                     "[A-Za-z0-9._-]",
                     key, value, LABEL_VALUE_LEN - 1);
        return -1;
    }
    label *item = NULL;
    for (size_t i = 0; i < set->n && !item; i++)
        if (strcmp(set->items[i].key, key) == 0)
            item = &set->items[i];
    if (!item) {
        if (set->n >= LABELS_MAX) {
            vf_error_set(err, VF_EINVAL, "more than %d labels", LABELS_MAX);
            return -1;
        }
        item = &set->items[set->n++];
        memcpy(item->key, key, strlen(key) + 1);
    }
    memcpy(item->value, value, strlen(value) + 1);
    return 0;
}

int label_set_parse(const json_t *object, const char *what, label_set *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (!object || json_is_null(object))
        return 0;
    if (!json_is_object(object)) {
        vf_error_set(err, VF_EINVAL, "%s: expected an object of key: value, got %s", what,
                     json_util_type_name(object));
        return -1;
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        if (!json_is_string(value)) {
            vf_error_set(err, VF_EINVAL, "%s.%.48s: expected a string, got %s", what, key,
                         json_util_type_name(value));
            return -1;
        }
        if (label_set_put(out, key, json_string_value(value), err) < 0) {
            vf_error_prefix(err, "%s", what);
            return -1;
        }
    }
    return 0;
}

json_t *label_set_to_json(const label_set *set)
{
    json_t *object = json_object();
    for (size_t i = 0; object && i < set->n; i++)
        if (json_object_set_new(object, set->items[i].key, json_string(set->items[i].value)) < 0) {
            json_decref(object);
            return NULL;
        }
    return object;
}
