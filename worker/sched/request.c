#include "request.h"

#include <string.h>

#include "json_util.h"

const char request_task_id_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789._:-";

static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._-";

void sched_request_init(sched_request *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->pool, "default");
    out->count = 1;
}

static const char *const group_policy_names[] = {
    [SCHED_GROUP_NONE] = "",
    [SCHED_GROUP_AFFINITY] = "affinity",
    [SCHED_GROUP_ANTI_AFFINITY] = "anti-affinity",
    [SCHED_GROUP_SOFT_AFFINITY] = "soft-affinity",
    [SCHED_GROUP_SOFT_ANTI_AFFINITY] = "soft-anti-affinity",
};

const char *sched_group_policy_name(sched_group_policy policy)
{
    return (unsigned)policy < sizeof group_policy_names / sizeof group_policy_names[0]
               ? group_policy_names[policy]
               : "";
}

const char *sched_spread_when_name(bool soft)
{
    return soft ? "score" : "do_not_schedule";
}

/* spread: {key, max_skew, when_unsatisfiable, min_domains}; absent or null:
 * none. */
static int parse_spread(const json_t *body, sched_request *out, vf_error *err)
{
    static const char *const allowed[] = {"key", "max_skew", "when_unsatisfiable", "min_domains",
                                          NULL};
    const json_t *spread = json_object_get(body, "spread");
    if (!spread || json_is_null(spread))
        return 0;
    if (!json_is_object(spread)) {
        vf_error_set(err, VF_EINVAL, "spread: expected an object, got %s",
                     json_util_type_name(spread));
        return -1;
    }
    sched_spread *s = &out->spread;
    char when[24] = "do_not_schedule";
    int64_t max_skew = 1, min_domains = 1;
    if (json_util_only_keys(spread, allowed, err) < 0 ||
        json_util_string(spread, "key", true, label_key_chars, s->key, sizeof s->key, err) < 0 ||
        json_util_int(spread, "max_skew", false, 1, REQUEST_MAX_SKEW, &max_skew, err) < 0 ||
        json_util_string(spread, "when_unsatisfiable", false, NULL, when, sizeof when, err) < 0 ||
        json_util_int(spread, "min_domains", false, 1, REQUEST_MAX_DOMAINS, &min_domains, err) <
            0) {
        vf_error_prefix(err, "spread");
        s->key[0] = '\0';
        return -1;
    }
    s->max_skew = (int32_t)max_skew;
    s->min_domains = (int32_t)min_domains;
    if (strcmp(when, "score") == 0) {
        s->soft = true;
    } else if (strcmp(when, "do_not_schedule") != 0) {
        vf_error_set(err, VF_EINVAL,
                     "spread.when_unsatisfiable: \"%s\" is not one of do_not_schedule, score",
                     when);
        s->key[0] = '\0';
        return -1;
    }
    /* As Kubernetes' minDomains: a domain count to reach before skew is
     * measured from the emptiest domain; a preference has nothing to hold. */
    if (s->soft && json_object_get(spread, "min_domains")) {
        vf_error_set(err, VF_EINVAL,
                     "spread.min_domains: only with when_unsatisfiable do_not_schedule");
        s->key[0] = '\0';
        return -1;
    }
    return 0;
}

/* group: {name, policy, max_per_host}; absent or null: not a member. */
static int parse_group(const json_t *body, sched_request *out, vf_error *err)
{
    static const char *const allowed[] = {"name", "policy", "max_per_host", NULL};
    const json_t *group = json_object_get(body, "group");
    if (!group || json_is_null(group))
        return 0;
    if (!json_is_object(group)) {
        vf_error_set(err, VF_EINVAL, "group: expected an object, got %s",
                     json_util_type_name(group));
        return -1;
    }
    char policy[24] = "";
    int64_t max_per_host = 0;
    /* A group may go without a policy when its members spread: they are
     * then counted for the spread only. */
    bool policy_required = !out->spread.key[0];
    const json_t *given = json_object_get(group, "policy");
    if (policy_required && json_is_object(group) && (!given || json_is_null(given))) {
        vf_error_set(err, VF_EINVAL,
                     "group: policy: missing (a group needs one unless the request has a spread)");
        return -1;
    }
    if (json_util_only_keys(group, allowed, err) < 0 ||
        json_util_string(group, "name", true, name_chars, out->group, sizeof out->group, err) < 0 ||
        json_util_string(group, "policy", policy_required, NULL, policy, sizeof policy, err) < 0 ||
        json_util_int(group, "max_per_host", false, 1, REQUEST_MAX_PER_HOST, &max_per_host, err) <
            0) {
        vf_error_prefix(err, "group");
        out->group[0] = '\0';
        return -1;
    }
    for (int p = SCHED_GROUP_AFFINITY; p <= SCHED_GROUP_SOFT_ANTI_AFFINITY; p++)
        if (strcmp(policy, group_policy_names[p]) == 0)
            out->group_policy = (sched_group_policy)p;
    if (out->group_policy == SCHED_GROUP_NONE && policy[0]) {
        vf_error_set(err, VF_EINVAL,
                     "group.policy: \"%s\" is not one of affinity, anti-affinity, "
                     "soft-affinity, soft-anti-affinity",
                     policy);
        out->group[0] = '\0';
        return -1;
    }
    out->group_max_per_host = (int32_t)max_per_host;
    if (out->group_max_per_host == 0 && out->group_policy == SCHED_GROUP_ANTI_AFFINITY)
        out->group_max_per_host = 1;
    return 0;
}

static int parse_annotations(const json_t *body, sched_request *out, vf_error *err)
{
    const json_t *annotations = json_object_get(body, "annotations");
    if (!annotations || json_is_null(annotations))
        return 0;
    if (!json_is_object(annotations)) {
        vf_error_set(err, VF_EINVAL, "annotations: expected an object, got %s",
                     json_util_type_name(annotations));
        return -1;
    }
    static const struct {
        const char *key;
        size_t offset;
        size_t size;
    } known[] = {
        {ANNOTATION_NODE_REGEX, offsetof(sched_request, node_regex), REQUEST_ANNOTATION_LEN},
        {ANNOTATION_NODE_NAME, offsetof(sched_request, node_name), HOST_NAME_LEN},
        {ANNOTATION_VMID_RANGE, offsetof(sched_request, vmid_range), REQUEST_ANNOTATION_LEN},
        {ANNOTATION_VMID_REGEX, offsetof(sched_request, vmid_regex), REQUEST_ANNOTATION_LEN},
        {ANNOTATION_SCHEDULER_NAME, offsetof(sched_request, scheduler_name),
         REQUEST_SCHEDULER_NAME_LEN},
    };
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)annotations, key, value)
    {
        if (!json_is_string(value)) {
            vf_error_set(err, VF_EINVAL, "annotations.%.64s: expected a string, got %s", key,
                         json_util_type_name(value));
            return -1;
        }
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
            if (strcmp(key, known[i].key) != 0)
                continue;
            char *dest = (char *)out + known[i].offset;
            const char *chars =
                known[i].offset == offsetof(sched_request, scheduler_name) ? name_chars : NULL;
            if (json_util_string(annotations, key, true, chars, dest, known[i].size, err) < 0) {
                vf_error_prefix(err, "annotations");
                return -1;
            }
        }
    }
    return 0;
}

int sched_request_parse_placement(const json_t *body, sched_request *out, vf_error *err)
{
    if (!json_is_object(body)) {
        vf_error_set(err, VF_EINVAL, "request: expected a JSON object, got %s",
                     json_util_type_name(body));
        return -1;
    }
    int64_t cpu = 0;
    if (json_util_int(body, "requested_cpu", true, 1, REQUEST_MAX_CPU, &cpu, err) < 0)
        return -1;
    out->cpu = (int32_t)cpu;
    if (json_util_int(body, "requested_memory", true, 1, REQUEST_MAX_MEMORY, &out->memory, err) < 0)
        return -1;
    if (json_util_int(body, "requested_disk", false, 0, REQUEST_MAX_DISK, &out->disk, err) < 0)
        return -1;
    if (json_util_string(body, "requested_pool", false, name_chars, out->pool, sizeof out->pool,
                         err) < 0)
        return -1;
    if (json_util_bool(body, "dedicated", false, &out->dedicated, err) < 0)
        return -1;
    if (trait_set_parse(json_object_get(body, "required_traits"), "required_traits",
                        &out->required_traits, err) < 0 ||
        trait_set_parse(json_object_get(body, "forbidden_traits"), "forbidden_traits",
                        &out->forbidden_traits, err) < 0 ||
        resource_amounts_parse(json_object_get(body, "resources"), "resources", &out->resources,
                               err) < 0)
        return -1;
    for (size_t i = 0; i < out->required_traits.n; i++)
        if (trait_set_has(&out->forbidden_traits, out->required_traits.names[i])) {
            vf_error_set(err, VF_EINVAL,
                         "forbidden_traits: \"%s\" is also in required_traits (no host could "
                         "satisfy both)",
                         out->required_traits.names[i]);
            return -1;
        }
    return parse_annotations(body, out, err);
}

int sched_request_parse(const json_t *body, sched_request *out, vf_error *err)
{
    static const char *const allowed[] = {"task_id",
                                          "requested_cpu",
                                          "requested_memory",
                                          "requested_disk",
                                          "requested_pool",
                                          "dedicated",
                                          "vm_name",
                                          "annotations",
                                          "node_name",
                                          "scheduler_name",
                                          "priority",
                                          "priority_class",
                                          "group",
                                          "count",
                                          "required_traits",
                                          "forbidden_traits",
                                          "resources",
                                          "spread",
                                          NULL};
    sched_request_init(out);
    if (sched_request_parse_placement(body, out, err) < 0)
        return -1;
    if (json_util_only_keys(body, allowed, err) < 0)
        return -1;
    if (json_util_string(body, "task_id", false, request_task_id_chars, out->task_id,
                         sizeof out->task_id, err) < 0)
        return -1;
    if (json_util_string(body, "vm_name", false, name_chars, out->vm_name, sizeof out->vm_name,
                         err) < 0)
        return -1;
    char node_name[HOST_NAME_LEN] = "";
    if (json_util_string(body, "node_name", false, NULL, node_name, sizeof node_name, err) < 0)
        return -1;
    if (node_name[0] && out->node_name[0] && strcmp(node_name, out->node_name) != 0) {
        vf_error_set(err, VF_EINVAL,
                     "node_name: \"%s\" disagrees with annotations.%s: \"%s\" (give one, or the "
                     "same name in both)",
                     node_name, ANNOTATION_NODE_NAME, out->node_name);
        return -1;
    }
    if (node_name[0])
        memcpy(out->node_name, node_name, sizeof node_name);
    char scheduler_name[REQUEST_SCHEDULER_NAME_LEN] = "";
    if (json_util_string(body, "scheduler_name", false, name_chars, scheduler_name,
                         sizeof scheduler_name, err) < 0)
        return -1;
    if (scheduler_name[0] && out->scheduler_name[0] &&
        strcmp(scheduler_name, out->scheduler_name) != 0) {
        vf_error_set(err, VF_EINVAL,
                     "scheduler_name: \"%s\" disagrees with annotations.%s: \"%s\" (give one, or "
                     "the same name in both)",
                     scheduler_name, ANNOTATION_SCHEDULER_NAME, out->scheduler_name);
        return -1;
    }
    if (scheduler_name[0])
        memcpy(out->scheduler_name, scheduler_name, sizeof scheduler_name);
    const json_t *priority_value = json_object_get(body, "priority");
    if (priority_value && !json_is_null(priority_value)) {
        int64_t priority = 0;
        if (json_util_int(body, "priority", false, -1000000000, 1000000000, &priority, err) < 0)
            return -1;
        out->has_priority = true;
        out->priority = (int32_t)priority;
    }
    if (json_util_string(body, "priority_class", false, name_chars, out->priority_class,
                         sizeof out->priority_class, err) < 0)
        return -1;
    int64_t count = 1;
    if (json_util_int(body, "count", false, 1, REQUEST_MAX_COUNT, &count, err) < 0)
        return -1;
    out->count = (int32_t)count;
    if (parse_spread(body, out, err) < 0)
        return -1;
    return parse_group(body, out, err);
}

json_t *sched_request_to_json(const sched_request *req)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    if (req->task_id[0])
        json_object_set_new(obj, "task_id", json_string(req->task_id));
    json_object_set_new(obj, "requested_cpu", json_integer(req->cpu));
    json_object_set_new(obj, "requested_memory", json_integer(req->memory));
    json_object_set_new(obj, "requested_disk", json_integer(req->disk));
    json_object_set_new(obj, "requested_pool", json_string(req->pool));
    json_object_set_new(obj, "dedicated", json_boolean(req->dedicated));
    if (req->vm_name[0])
        json_object_set_new(obj, "vm_name", json_string(req->vm_name));
    if (req->node_name[0])
        json_object_set_new(obj, "node_name", json_string(req->node_name));
    if (req->scheduler_name[0])
        json_object_set_new(obj, "scheduler_name", json_string(req->scheduler_name));
    if (req->has_priority)
        json_object_set_new(obj, "priority", json_integer(req->priority));
    if (req->priority_class[0])
        json_object_set_new(obj, "priority_class", json_string(req->priority_class));
    if (req->count != 1)
        json_object_set_new(obj, "count", json_integer(req->count));
    if (req->group[0]) {
        json_t *group = json_pack("{s:s}", "name", req->group);
        if (group && req->group_policy != SCHED_GROUP_NONE)
            json_object_set_new(group, "policy",
                                json_string(sched_group_policy_name(req->group_policy)));
        if (group && req->group_max_per_host > 0)
            json_object_set_new(group, "max_per_host", json_integer(req->group_max_per_host));
        json_object_set_new(obj, "group", group);
    }
    if (req->spread.key[0]) {
        json_t *spread = json_pack("{s:s, s:i, s:s}", "key", req->spread.key, "max_skew",
                                   (int)req->spread.max_skew, "when_unsatisfiable",
                                   sched_spread_when_name(req->spread.soft));
        if (spread && !req->spread.soft)
            json_object_set_new(spread, "min_domains", json_integer(req->spread.min_domains));
        json_object_set_new(obj, "spread", spread);
    }
    if (req->required_traits.n)
        json_object_set_new(obj, "required_traits", trait_set_to_json(&req->required_traits));
    if (req->forbidden_traits.n)
        json_object_set_new(obj, "forbidden_traits", trait_set_to_json(&req->forbidden_traits));
    if (req->resources.n)
        json_object_set_new(obj, "resources", resource_amounts_to_json(&req->resources));
    json_t *annotations = json_object();
    if (req->node_regex[0])
        json_object_set_new(annotations, ANNOTATION_NODE_REGEX, json_string(req->node_regex));
    if (req->vmid_range[0])
        json_object_set_new(annotations, ANNOTATION_VMID_RANGE, json_string(req->vmid_range));
    if (req->vmid_regex[0])
        json_object_set_new(annotations, ANNOTATION_VMID_REGEX, json_string(req->vmid_regex));
    json_object_set_new(obj, "annotations", annotations);
    return obj;
}
