#include "traits.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "json_util.h"

const char traits_name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789_.:+-";

static int check_name(const char *name, size_t size, const char *kind, vf_error *err)
{
    size_t len = strlen(name);
    if (len == 0 || len >= size || strspn(name, traits_name_chars) != len) {
        vf_error_set(err, VF_EINVAL, "%s \"%.64s\": expected 1..%zu characters of [A-Za-z0-9_.:+-]",
                     kind, name, size - 1);
        return -1;
    }
    return 0;
}

bool trait_set_has(const trait_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcasecmp(set->names[i], name) == 0)
            return true;
    return false;
}

int trait_set_add(trait_set *set, const char *name, vf_error *err)
{
    if (check_name(name, TRAIT_NAME_LEN, "trait", err) < 0)
        return -1;
    if (trait_set_has(set, name))
        return 0;
    if (set->n >= TRAITS_MAX) {
        vf_error_set(err, VF_EINVAL, "more than %d traits", TRAITS_MAX);
        return -1;
    }
    memcpy(set->names[set->n++], name, strlen(name) + 1);
    return 0;
}

int resource_amounts_find(const resource_amounts *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcasecmp(set->items[i].name, name) == 0)
            return (int)i;
    return -1;
}

int64_t resource_amounts_get(const resource_amounts *set, const char *name)
{
    int i = resource_amounts_find(set, name);
    return i < 0 ? 0 : set->items[i].amount;
}

int resource_amounts_set(resource_amounts *set, const char *name, int64_t amount, vf_error *err)
{
    if (check_name(name, RESOURCE_NAME_LEN, "resource", err) < 0)
        return -1;
    if (amount < 0 || amount > RESOURCE_MAX_AMOUNT) {
        vf_error_set(err, VF_EINVAL, "resource \"%s\": expected a whole number 0..%d", name,
                     RESOURCE_MAX_AMOUNT);
        return -1;
    }
    int i = resource_amounts_find(set, name);
    if (i >= 0) {
        set->items[i].amount = amount;
        return 0;
    }
    if (set->n >= RESOURCES_MAX) {
        vf_error_set(err, VF_EINVAL, "more than %d resources", RESOURCES_MAX);
        return -1;
    }
    resource_amount *item = &set->items[set->n++];
    memcpy(item->name, name, strlen(name) + 1);
    item->amount = amount;
    return 0;
}

int trait_set_parse(const json_t *list, const char *what, trait_set *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list)) {
        vf_error_set(err, VF_EINVAL, "%s: expected a list of names, got %s", what,
                     json_util_type_name(list));
        return -1;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(list, i, item)
    {
        if (!json_is_string(item)) {
            vf_error_set(err, VF_EINVAL, "%s[%zu]: expected a string, got %s", what, i,
                         json_util_type_name(item));
            return -1;
        }
        if (trait_set_add(out, json_string_value(item), err) < 0) {
            vf_error_prefix(err, "%s[%zu]", what, i);
            return -1;
        }
    }
    return 0;
}

size_t resource_name_lower(const char *name, char out[RESOURCE_NAME_LEN])
{
    size_t k = 0;
    for (; name[k] && k < RESOURCE_NAME_LEN - 1; k++) {
        char ch = name[k];
        out[k] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    out[k] = '\0';
    return k;
}

int resource_amounts_parse(const json_t *object, const char *what, resource_amounts *out,
                           vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (!object || json_is_null(object))
        return 0;
    if (!json_is_object(object)) {
        vf_error_set(err, VF_EINVAL, "%s: expected an object of whole numbers, got %s", what,
                     json_util_type_name(object));
        return -1;
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        double number = json_number_value(value);
        if (!json_is_number(value) || !isfinite(number) || floor(number) != number || number < 0 ||
            number > RESOURCE_MAX_AMOUNT) {
            vf_error_set(err, VF_EINVAL, "%s.%.32s: expected a whole number 0..%d", what, key,
                         RESOURCE_MAX_AMOUNT);
            return -1;
        }
        if (resource_amounts_set(out, key, (int64_t)number, err) < 0) {
            vf_error_prefix(err, "%s", what);
            return -1;
        }
    }
    return 0;
}

json_t *trait_set_to_json(const trait_set *set)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < set->n; i++)
        if (json_array_append_new(list, json_string(set->names[i])) < 0) {
            json_decref(list);
            return NULL;
        }
    return list;
}

json_t *resource_amounts_to_json(const resource_amounts *set)
{
    json_t *object = json_object();
    for (size_t i = 0; object && i < set->n; i++)
        if (json_object_set_new(object, set->items[i].name, json_integer(set->items[i].amount)) <
            0) {
            json_decref(object);
            return NULL;
        }
    return object;
}
