/* Proxmox VE source: one GET of /api2/json/cluster/resources gives nodes,
 * VMs (qemu) and containers (lxc) of the whole cluster.
 *
 * Mapping of a "node" item to a host:
 *   name = node, status = status (online/offline/unknown; anything else unknown),
 *   cpu = maxcpu, usage_cpu = cpu (fraction), memory = maxmem / MiB,
 *   usage_mem = mem / maxmem (each unknown when the item lacks it), storage = (maxdisk - disk) /
 * GiB (the node's own root storage, the only disk figure cluster/resources gives per node),
 *   allocated_cpu / allocated_memory = sum of maxcpu / maxmem of the node's
 *   non-template qemu and lxc guests, running or stopped (a stopped guest can
 *   be started at any time), current_vms = their count.
 *   max_vms = 1000: Proxmox has no per-node guest limit.
 *   pool, dedicated: from Proxmox's resource pools (below); a node in none
 *   is in pool "default" and shared.
 *   ip and model stay empty: cluster/resources does not carry them.
 * Offline nodes are kept (usually with no capacity figures) so the scheduler
 * can say "node offline" instead of not knowing the node.
 * Every qemu and lxc vmid, templates included, is recorded as used.
 * Items of other types (storage, pool, sdn, ...) are ignored.
 *
 * Pools and dedication. Proxmox VE has no node tags and its resource pools
 * cannot hold a node, only guests and storages (GET /api2/json/pools/{poolid}
 * answers {"data": {"comment": "...", "members": [{"id": "storage/pve1/local",
 * "node": "pve1", "storage": "local", "type": "storage", ...}, {"id":
 * "qemu/100", "node": "pve1", "type": "qemu", "vmid": 100, ...}]}}). A node's
 * local storage is bound to that node, so an administrator puts a node in
 * pool P by adding one of its storages (say `local`) to P: the node is in
 * the pool whose members include a storage on it. Guests say nothing (they
 * migrate), and a shared storage appears once per node, so adding one puts
 * every node that sees it in the pool. A node with storages in several
 * pools takes the first poolid in name order. A node is dedicated when its
 * pool's comment contains "virtflow:dedicated" (comments are free text an
 * administrator edits in the same dialog). Traits and custom resources
 * (docs/scheduling.md "Traits and custom resources") come the same way, for
 * every node of the pool: "virtflow:trait:NAME" adds trait NAME and
 * "virtflow:resource:NAME=N" gives each node N units of NAME (a word of
 * the comment each; a malformed one is left out, as other text is). Topology
 * labels too: "virtflow:label:KEY=VALUE" (labels.h: `virtflow:label:rack=r1`),
 * and every node gets the label `cluster` with the name of its Proxmox VE
 * cluster (GET /api2/json/cluster/status, its item of type "cluster"; a
 * standalone node has none) unless its pool's comment sets `cluster`
 * itself. Pools need Pool.Audit on /pool/{poolid}, which the PVEAuditor role
 * has; a pool the token cannot see is simply not listed. */
#include "source.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "secret_file.h"

#define PROXMOX_MAX_VMS 1000
#define MIB 1048576.0
#define GIB 1073741824.0
#define TOKEN_MAX SECRET_FILE_MAX /* bytes; real tokens are under 200 */

static double number_or_zero(const json_t *item, const char *key)
{
    const json_t *value = json_object_get(item, key);
    double number = json_number_value(value);
    return isfinite(number) && number > 0 ? number : 0;
}

/* A size in whole units (floored): 0 for nothing, negative or NaN; an
 * amount past any machine's (a value a fuzzer or a broken API sends) held
 * at 2^62 instead of overflowing the integer. */
static int64_t whole_units(double units)
{
    if (!(units > 0))
        return 0;
    if (units >= 4611686018427387904.0)
        return INT64_C(4611686018427387904);
    return (int64_t)floor(units);
}

static int add_node(hostset *set, const json_t *item, size_t index, vf_error *err)
{
    host h;
    memset(&h, 0, sizeof h);
    const char *name = json_string_value(json_object_get(item, "node"));
    size_t len = name ? strlen(name) : 0;
    if (!name || len == 0 || len >= sizeof h.name ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != len) {
        vf_error_set(err, VF_EUNAVAILABLE, "data[%zu]: node item without a valid node name", index);
        return -1;
    }
    memcpy(h.name, name, len + 1);
    snprintf(h.pool, sizeof h.pool, "default");
    const char *status = json_string_value(json_object_get(item, "status"));
    if (!status || host_status_parse(status, &h.status) < 0 || h.status == HOST_MAINTENANCE)
        h.status = HOST_UNKNOWN;

    h.cpu = number_or_zero(item, "maxcpu");
    h.usage_cpu = fmin(number_or_zero(item, "cpu"), 1.0);
    /* An offline node's item carries no cpu/mem: its use is unknown, not 0. */
    h.has_usage_cpu = json_is_number(json_object_get(item, "cpu"));
    double maxmem = number_or_zero(item, "maxmem");
    double mem = number_or_zero(item, "mem");
    h.memory = whole_units(maxmem / MIB);
    h.usage_mem = maxmem > 0 ? fmin(mem / maxmem, 1.0) : 0;
    h.has_usage_mem = maxmem > 0 && json_is_number(json_object_get(item, "mem"));
    double maxdisk = number_or_zero(item, "maxdisk");
    double disk = number_or_zero(item, "disk");
    h.storage = maxdisk > disk ? whole_units((maxdisk - disk) / GIB) : 0;
    h.max_vms = PROXMOX_MAX_VMS;
    return hostset_add(set, &h, err);
}

static host *find_unsorted(hostset *set, const char *name)
{
    for (size_t i = 0; i < set->n_hosts; i++)
        if (strcmp(set->hosts[i].name, name) == 0)
            return &set->hosts[i];
    return NULL;
}

static int add_guest(hostset *set, const json_t *item, size_t index, vf_error *err)
{
    const json_t *vmid = json_object_get(item, "vmid");
    json_int_t id = json_integer_value(vmid);
    if (!json_is_integer(vmid) || id < VMID_MIN || id > VMID_MAX) {
        vf_error_set(err, VF_EUNAVAILABLE, "data[%zu]: guest without a valid vmid", index);
        return -1;
    }
    const char *node = json_string_value(json_object_get(item, "node"));
    host *h = node ? find_unsorted(set, node) : NULL;
    /* A guest on a node we do not list: its vmid still counts. */
    if (h ? hostset_add_guest(set, (uint32_t)id, (size_t)(h - set->hosts), err)
          : hostset_add_vmid(set, (uint32_t)id, err))
        return -1;
    /* template is 0/1 in the API; accept a boolean too. */
    const json_t *template = json_object_get(item, "template");
    if (!h || json_is_true(template) || json_integer_value(template) != 0)
        return 0;
    h->allocated_cpu += number_or_zero(item, "maxcpu");
    h->allocated_memory += (int64_t)floor(number_or_zero(item, "maxmem") / MIB);
    h->current_vms++;
    return 0;
}

/* A "virtflow:label:KEY=VALUE" word at `at` (past the mark) into `labels`;
 * a malformed one is left out, as other text is. */
static void comment_label(const char *at, label_set *labels)
{
    size_t key_len = strspn(at, label_key_chars);
    char key[LABEL_KEY_LEN], value[LABEL_VALUE_LEN];
    if (key_len == 0 || key_len >= sizeof key || at[key_len] != '=')
        return;
    size_t value_len = strspn(at + key_len + 1, label_value_chars);
    if (value_len == 0 || value_len >= sizeof value)
        return;
    memcpy(key, at, key_len);
    key[key_len] = '\0';
    memcpy(value, at + key_len + 1, value_len);
    value[value_len] = '\0';
    vf_error ignored;
    vf_error_init(&ignored);
    (void)!label_set_put(labels, key, value, &ignored);
}

/* The traits, resources and labels a pool comment marks (see the top of the
 * file): each "virtflow:trait:NAME", "virtflow:resource:NAME=N" and
 * "virtflow:label:KEY=VALUE" word. */
static void comment_traits(const char *comment, host_traits *out)
{
    static const char trait_mark[] = "virtflow:trait:", resource_mark[] = "virtflow:resource:",
                      label_mark[] = "virtflow:label:";
    memset(out, 0, sizeof *out);
    vf_error ignored;
    vf_error_init(&ignored);
    for (const char *at = comment; at && (at = strstr(at, "virtflow:")); at++) {
        if (strncmp(at, label_mark, sizeof label_mark - 1) == 0) {
            comment_label(at + sizeof label_mark - 1, &out->labels);
            continue;
        }
        bool trait = strncmp(at, trait_mark, sizeof trait_mark - 1) == 0;
        bool resource = strncmp(at, resource_mark, sizeof resource_mark - 1) == 0;
        if (!trait && !resource)
            continue;
        const char *name = at + (trait ? sizeof trait_mark : sizeof resource_mark) - 1;
        size_t len = strspn(name, traits_name_chars);
        char word[TRAIT_NAME_LEN];
        if (len == 0 || len >= sizeof word)
            continue;
        memcpy(word, name, len);
        word[len] = '\0';
        if (trait) {
            (void)!trait_set_add(&out->traits, word, &ignored);
            continue;
        }
        if (name[len] != '=' || !isdigit((unsigned char)name[len + 1]))
            continue;
        errno = 0;
        char *end = NULL;
        long long amount = strtoll(name + len + 1, &end, 10);
        if (errno == 0 && amount <= RESOURCE_MAX_AMOUNT)
            (void)!resource_amounts_set(&out->resources, word, amount, &ignored);
    }
}

/* Assign the pool of every node with a storage in `pool` (one item of the
 * pools array), unless an earlier poolid in name order already has it. */
static int apply_pool(hostset *set, const json_t *pool, size_t index, vf_error *err)
{
    const char *poolid = json_string_value(json_object_get(pool, "poolid"));
    size_t len = poolid ? strlen(poolid) : 0;
    if (!poolid || len == 0 || len >= HOST_POOL_LEN ||
        strspn(poolid, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            len) {
        vf_error_set(err, VF_EUNAVAILABLE, "pools[%zu]: pool without a valid poolid", index);
        return -1;
    }
    const char *comment = json_string_value(json_object_get(pool, "comment"));
    bool dedicated = comment && strstr(comment, PROXMOX_DEDICATED_MARK);
    host_traits traits;
    comment_traits(comment, &traits);
    const json_t *members = json_object_get(pool, "members");
    if (members && !json_is_array(members)) {
        vf_error_set(err, VF_EUNAVAILABLE, "pools[%zu] (%s): members is not a list", index, poolid);
        return -1;
    }
    size_t i;
    const json_t *member;
    json_array_foreach(members, i, member)
    {
        const char *type = json_string_value(json_object_get(member, "type"));
        const char *node = json_string_value(json_object_get(member, "node"));
        if (!type || strcmp(type, "storage") != 0 || !node)
            continue;
        host *h = find_unsorted(set, node);
        if (!h)
            continue;
        /* "default" until a pool claims it; the first poolid in name order wins. */
        if (strcmp(h->pool, "default") != 0 && strcmp(h->pool, poolid) <= 0)
            continue;
        memcpy(h->pool, poolid, len + 1);
        h->dedicated = dedicated;
        if (hostset_set_traits(set, (size_t)(h - set->hosts), &traits, err) < 0)
            return -1;
    }
    return 0;
}

hostset *source_proxmox_parse(const json_t *root, vf_error *err)
{
    return source_proxmox_parse_pools(root, NULL, err);
}

hostset *source_proxmox_parse_pools(const json_t *root, const json_t *pools, vf_error *err)
{
    return source_proxmox_parse_cluster(root, pools, NULL, err);
}

const char *source_proxmox_cluster_name(const json_t *status)
{
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(status, "data"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type && strcmp(type, "cluster") == 0)
            return json_string_value(json_object_get(item, "name"));
    }
    return NULL;
}

/* Every node's label `cluster` (PROXMOX_CLUSTER_LABEL), unless its pool's
 * comment gave one; a cluster name that is no label value is left out. */
static int label_cluster(hostset *set, const char *cluster, vf_error *err)
{
    for (size_t i = 0; cluster && i < set->n_hosts; i++) {
        host_traits traits;
        memset(&traits, 0, sizeof traits);
        if (set->hosts[i].traits)
            traits = *set->hosts[i].traits;
        if (label_set_get(&traits.labels, PROXMOX_CLUSTER_LABEL))
            continue;
        vf_error ignored;
        vf_error_init(&ignored);
        if (label_set_put(&traits.labels, PROXMOX_CLUSTER_LABEL, cluster, &ignored) < 0)
            return 0;
        if (hostset_set_traits(set, i, &traits, err) < 0)
            return -1;
    }
    return 0;
}

hostset *source_proxmox_parse_cluster(const json_t *root, const json_t *pools, const char *cluster,
                                      vf_error *err)
{
    const json_t *data = json_object_get(root, "data");
    if (!json_is_array(data)) {
        vf_error_set(err, VF_EUNAVAILABLE, "expected {\"data\": [...]}");
        return NULL;
    }
    hostset *set = hostset_new();
    if (!set) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    size_t i;
    const json_t *item;
    /* Nodes first, so guests can be charged to them in the second pass. */
    json_array_foreach(data, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!json_is_object(item) || !type) {
            vf_error_set(err, VF_EUNAVAILABLE, "data[%zu]: expected an object with a type", i);
            goto fail;
        }
        if (strcmp(type, "node") == 0 && add_node(set, item, i, err) < 0)
            goto fail;
    }
    json_array_foreach(data, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if ((strcmp(type, "qemu") == 0 || strcmp(type, "lxc") == 0) &&
            add_guest(set, item, i, err) < 0)
            goto fail;
    }
    if (pools && !json_is_array(pools)) {
        vf_error_set(err, VF_EUNAVAILABLE, "pools: expected a list");
        goto fail;
    }
    json_array_foreach(pools, i, item)
    {
        if (!json_is_object(item)) {
            vf_error_set(err, VF_EUNAVAILABLE, "pools[%zu]: expected an object", i);
            goto fail;
        }
        if (apply_pool(set, item, i, err) < 0)
            goto fail;
    }
    if (label_cluster(set, cluster, err) < 0 || hostset_finish(set, err) < 0)
        goto fail;
    return set;
fail:
    hostset_free(set);
    return NULL;
}

/* Read the token file into buf, trimmed. The token is never part of a message. */
static int read_token(const char *path, char *buf, size_t size, vf_error *err)
{
    vf_error inner;
    vf_error_init(&inner);
    if (secret_file_read("inventory.token_file", path, buf, size, &inner) < 0) {
        vf_error_set(err, VF_ECONFIG, "inventory.token_file %s", inner.text);
        return -1;
    }
    if (!strchr(buf, '=') || !strchr(buf, '!')) {
        explicit_bzero(buf, size);
        vf_error_set(err, VF_ECONFIG,
                     "inventory.token_file %s: expected one line USER@REALM!TOKENID=SECRET", path);
        return -1;
    }
    return 0;
}

/* GET {base}{path} with the token header; the parsed JSON body, or NULL
 * with err naming the URL (never the token). */
static json_t *get_json(const source_remote *remote, const char *authorization, const char *base,
                        int base_len, const char *path, vf_error *err)
{
    json_t *root = NULL;
    http_response response = {0};
    char *url = NULL;
    char shown[256];
    if (asprintf(&url, "%.*s%s", base_len, base, path) < 0) {
        url = NULL;
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto out;
    }
    http_redact_url(url, shown, sizeof shown);
    const char *headers[] = {authorization, "Accept: application/json"};
    http_request request = {
        .url = url,
        .headers = headers,
        .n_headers = 2,
        .timeout_s = remote->timeout_s,
        .ca_file = remote->ca_file,
        .tls_skip_verify = !remote->tls_verify,
    };
    if (http_get(&request, &response, err) < 0)
        goto out;
    if (response.status == 401) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "GET %s: HTTP 401: the API token was refused (check inventory.token_file)",
                     shown);
        goto out;
    }
    if (response.status == 403) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "GET %s: HTTP 403: the API token lacks permission (it needs at least the "
                     "PVEAuditor role on /)",
                     shown);
        goto out;
    }
    if (response.status < 200 || response.status > 299) {
        vf_error_set(err, VF_EUNAVAILABLE, "GET %s: HTTP %ld", shown, response.status);
        goto out;
    }
    json_error_t json_err;
    root = json_loadb(response.body, response.body_len, 0, &json_err);
    if (!root)
        vf_error_set(err, VF_EUNAVAILABLE, "GET %s: response is not JSON: line %d: %s", shown,
                     json_err.line, json_err.text);
out:
    free(url);
    http_response_close(&response);
    return root;
}

/* The cluster's pools with their members, in the shape
 * source_proxmox_parse_pools takes: GET /pools lists them (poolid, comment),
 * GET /pools/{poolid} gives each one's members (the list carries members only
 * on Proxmox VE 8.1 and later, and only when asked for one pool). */
static json_t *fetch_pools(const source_remote *remote, const char *authorization, const char *base,
                           int base_len, vf_error *err)
{
    json_t *list = get_json(remote, authorization, base, base_len, "/api2/json/pools", err);
    if (!list)
        return NULL;
    json_t *pools = json_array();
    const json_t *data = json_object_get(list, "data");
    if (!pools || !json_is_array(data)) {
        vf_error_set(err, VF_EUNAVAILABLE, "GET /api2/json/pools: expected {\"data\": [...]}");
        goto fail;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(data, i, item)
    {
        const char *poolid = json_string_value(json_object_get(item, "poolid"));
        size_t len = poolid ? strlen(poolid) : 0;
        if (!poolid || len == 0 || len >= HOST_POOL_LEN ||
            strspn(poolid, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                len) {
            vf_error_set(err, VF_EUNAVAILABLE, "GET /api2/json/pools: data[%zu]: no valid poolid",
                         i);
            goto fail;
        }
        char path[HOST_POOL_LEN + 32];
        snprintf(path, sizeof path, "/api2/json/pools/%s", poolid);
        json_t *one = get_json(remote, authorization, base, base_len, path, err);
        if (!one)
            goto fail;
        const json_t *config = json_object_get(one, "data");
        json_t *pool = json_pack("{s:s, s:O?, s:O?}", "poolid", poolid, "comment",
                                 json_object_get(config, "comment"), "members",
                                 json_object_get(config, "members"));
        json_decref(one);
        if (!pool || json_array_append_new(pools, pool) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            goto fail;
        }
    }
    json_decref(list);
    return pools;
fail:
    json_decref(list);
    json_decref(pools);
    return NULL;
}

hostset *source_proxmox_fetch(const source_remote *remote, vf_error *err)
{
    hostset *set = NULL;
    json_t *root = NULL, *pools = NULL, *status = NULL;
    char token[TOKEN_MAX];
    char authorization[TOKEN_MAX + 64];
    authorization[0] = '\0';

    size_t base_len = strlen(remote->url);
    while (base_len > 0 && remote->url[base_len - 1] == '/')
        base_len--;
    if (read_token(remote->token_file, token, sizeof token, err) < 0)
        goto out;
    snprintf(authorization, sizeof authorization, "Authorization: PVEAPIToken=%s", token);
    explicit_bzero(token, sizeof token);

    root = get_json(remote, authorization, remote->url, (int)base_len,
                    "/api2/json/cluster/resources", err);
    if (!root)
        goto out;
    pools = fetch_pools(remote, authorization, remote->url, (int)base_len, err);
    if (!pools)
        goto out;
    status = get_json(remote, authorization, remote->url, (int)base_len,
                      "/api2/json/cluster/status", err);
    if (!status)
        goto out;
    set = source_proxmox_parse_cluster(root, pools, source_proxmox_cluster_name(status), err);
    if (!set) {
        char *url = NULL, shown[256];
        if (asprintf(&url, "%.*s/api2/json/cluster/resources", (int)base_len, remote->url) >= 0) {
            http_redact_url(url, shown, sizeof shown);
            vf_error_prefix(err, "GET %s", shown);
            free(url);
        }
    }
out:
    explicit_bzero(authorization, sizeof authorization);
    json_decref(root);
    json_decref(pools);
    json_decref(status);
    return set;
}
