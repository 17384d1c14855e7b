#include "source.h"

#include "host_json.h"
#include "yaml_json.h"

/* Each host becomes a compact `host` as soon as it is read, and its JSON is
 * freed: a 100,000-host file never exists as one tree (which took about 200
 * MiB beside the snapshot in use). */
static int add_host(const json_t *item, size_t index, void *context, vf_error *err)
{
    return host_json_add(context, item, index + 1, err);
}

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
    json_t *rest = yaml_json_load_file_each(path, "nodes", add_host, set, err);
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
    return finish(set, yaml_json_load_each(text, len, "nodes", add_host, set, err), err);
}
