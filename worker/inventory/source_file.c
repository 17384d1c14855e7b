#include "source.h"

#include "host_json.h"
#include "yaml_json.h"

/* `rest` is what the streamed document left: its host list emptied. */
static hostset *finish(hostset *set, json_t *rest, vf_error *err)
{
    if (!rest || host_json_inventory_into(set, rest, err) < 0) {
        hostset_free(set);
        set = NULL;
    }
    json_decref(rest);
    return set;
}

hostset *source_file_fetch(const char *path, vf_error *err)
{
    hostset *set = hostset_new();
    if (!set) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    /* The loader's errors, the hosts' included, already name the path. */
    json_t *rest = yaml_json_load_file_each(path, "nodes", host_json_add_each, set, err);
    if (!rest) {
        hostset_free(set);
        return NULL;
    }
    set = finish(set, rest, err);
    if (!set)
        vf_error_prefix(err, "%s", path);
    return set;
}

hostset *source_file_parse(const char *text, size_t len, vf_error *err)
{
    hostset *set = hostset_new();
    if (!set) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    return finish(set, yaml_json_load_each(text, len, "nodes", host_json_add_each, set, err), err);
}
