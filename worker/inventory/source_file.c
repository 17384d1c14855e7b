#include "source.h"

#include "host_json.h"
#include "yaml_json.h"

hostset *source_file_fetch(const char *path, vf_error *err)
{
    json_t *root = yaml_json_load_file(path, err); /* errors already name the path */
    if (!root)
        return NULL;
    hostset *set = host_json_inventory(root, err);
    if (!set)
        vf_error_prefix(err, "%s", path);
    json_decref(root);
    return set;
}
