#include "host_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <string.h>

#include "grow.h"

/* null counts as absent: a YAML key with nothing after it means "default". */
static const json_t *field(const json_t *object, const char *key)
{
    const json_t *value = json_object_get(object, key);
    return json_is_null(value) ? NULL : value;
}

static bool valid_label(const char *text, size_t max_len)
{
    size_t len = strlen(text);
    if (len == 0 || len > max_len)
        return false;
    return strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

static int get_label(const json_t *object, const char *key, char *out, size_t size, vf_error *err)
{
    const json_t *value = field(object, key);
    if (!value)
        return 0;
    if (!json_is_string(value) || !valid_label(json_string_value(value), size - 1)) {
        vf_error_set(err, VF_EINVAL, "%s: expected 1-%zu characters of [A-Za-z0-9._-]", key,
                     size - 1);
        return -1;
    }
    snprintf(out, size, "%s", json_string_value(value));
    return 0;
}

static int get_text(const json_t *object, const char *key, char *out, size_t size, vf_error *err)
{
    const json_t *value = field(object, key);
    if (!value)
        return 0;
    if (!json_is_string(value) || json_string_length(value) > size - 1 ||
        strlen(json_string_value(value)) != json_string_length(value)) {
        vf_error_set(err, VF_EINVAL, "%s: expected text of at most %zu bytes", key, size - 1);
        return -1;
    }
    snprintf(out, size, "%s", json_string_value(value));
    return 0;
}

/* A number within [min, max]; `*present` tells whether the key was given. */
static int get_number(const json_t *object, const char *key, double min, double max,
                      const char *expected, bool *present, double *out, vf_error *err)
{
    const json_t *value = field(object, key);
    *present = value != NULL;
    if (!value)
        return 0;
    double number = json_number_value(value);
    if (!json_is_number(value) || !isfinite(number) || number < min || number > max) {
        vf_error_set(err, VF_EINVAL, "%s: expected %s", key, expected);
        return -1;
    }
    *out = number;
    return 0;
}

/* A whole number; a real like 12.0 (as Python may send) is accepted. */
static int get_count(const json_t *object, const char *key, int32_t *out, vf_error *err)
{
    const json_t *value = field(object, key);
    if (!value)
        return 0;
    double number = json_number_value(value);
    if (!json_is_number(value) || number < 0 || number > INT32_MAX || floor(number) != number) {
        vf_error_set(err, VF_EINVAL, "%s: expected a whole number >= 0", key);
        return -1;
    }
    *out = (int32_t)number;
    return 0;
}

static int parse_fields(const json_t *object, host *h, host_traits *traits, vf_error *err)
{
    bool present = false;
    double number = 0;

    if (get_text(object, "ip", h->ip, sizeof h->ip, err) < 0 ||
        get_label(object, "pool", h->pool, sizeof h->pool, err) < 0 ||
        get_text(object, "model", h->model, sizeof h->model, err) < 0)
        return -1;

    const json_t *dedicated = field(object, "dedicated");
    if (dedicated) {
        if (!json_is_boolean(dedicated)) {
            vf_error_set(err, VF_EINVAL, "dedicated: expected true or false");
            return -1;
        }
        h->dedicated = json_is_true(dedicated);
    }

    const json_t *status = field(object, "status");
    if (status) {
        if (!json_is_string(status) ||
            host_status_parse(json_string_value(status), &h->status) < 0) {
            vf_error_set(err, VF_EINVAL,
                         "status: expected one of online, offline, maintenance, unknown");
            return -1;
        }
    }

    if (!field(object, "cpu")) {
        vf_error_set(err, VF_EINVAL, "cpu: missing");
        return -1;
    }
    if (get_number(object, "cpu", 0, 1e9, "a number > 0", &present, &h->cpu, err) < 0)
        return -1;
    if (h->cpu <= 0) {
        vf_error_set(err, VF_EINVAL, "cpu: expected a number > 0");
        return -1;
    }

    if (!field(object, "memory")) {
        vf_error_set(err, VF_EINVAL, "memory: missing");
        return -1;
    }
    /* 2^53 MiB is far beyond any machine and keeps the double -> int64 exact. */
    if (get_number(object, "memory", 1, 9007199254740992.0, "a number of MiB >= 1", &present,
                   &number, err) < 0)
        return -1;
    h->memory = (int64_t)floor(number);

    if (get_number(object, "storage", 0, 9007199254740992.0, "a number of GiB >= 0", &present,
                   &number, err) < 0)
        return -1;
    h->storage = present ? (int64_t)floor(number) : 0;

    /* Absent is not 0: TargetLoadPacking scores an unmeasured host neutrally. */
    if (get_number(object, "usage_cpu", 0, 1, "a fraction 0..1 (0.3 means 30%)", &h->has_usage_cpu,
                   &h->usage_cpu, err) < 0 ||
        get_number(object, "usage_mem", 0, 1, "a fraction 0..1 (0.3 means 30%)", &h->has_usage_mem,
                   &h->usage_mem, err) < 0)
        return -1;

    /* Sources that only measure utilisation (virtflow-scheduler's node API)
     * send no allocation; take measured use as what is committed. */
    if (get_number(object, "allocated_cpu", 0, 1e9, "a number of vCPUs >= 0", &present, &number,
                   err) < 0)
        return -1;
    h->allocated_cpu = present ? number : h->usage_cpu * h->cpu;
    if (get_number(object, "allocated_memory", 0, 9007199254740992.0, "a number of MiB >= 0",
                   &present, &number, err) < 0)
        return -1;
    h->allocated_memory =
        present ? (int64_t)floor(number) : (int64_t)floor(h->usage_mem * (double)h->memory);

    h->max_vms = HOST_JSON_DEFAULT_MAX_VMS;
    if (get_count(object, "max_vms", &h->max_vms, err) < 0 ||
        get_count(object, "current_vms", &h->current_vms, err) < 0)
        return -1;
    /* Traits, custom resources and topology labels (traits.h, labels.h):
     * optional, empty by default. */
    if (trait_set_parse(field(object, "traits"), "traits", &traits->traits, err) < 0 ||
        resource_amounts_parse(field(object, "resources"), "resources", &traits->resources, err) <
            0 ||
        label_set_parse(field(object, "labels"), "labels", &traits->labels, err) < 0)
        return -1;
    h->traits = traits; /* hostset_add keeps a copy */
    return 0;
}

/* The vmids of `vmids`, as guests of host number `host_index`, or only as
 * used when host_index is negative. */
static int add_vmid_list(hostset *set, const json_t *vmids, const char *what, long host_index,
                         vf_error *err)
{
    if (!json_is_array(vmids)) {
        vf_error_set(err, VF_EINVAL, "%s: expected a list of vmids", what);
        return -1;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(vmids, i, item)
    {
        json_int_t vmid = json_integer_value(item);
        if (!json_is_integer(item) || vmid < VMID_MIN || vmid > VMID_MAX) {
            vf_error_set(err, VF_EINVAL, "%s[%zu]: expected an integer %u..%u", what, i, VMID_MIN,
                         VMID_MAX);
            return -1;
        }
        if (host_index < 0 ? hostset_add_vmid(set, (uint32_t)vmid, err)
                           : hostset_add_guest(set, (uint32_t)vmid, (size_t)host_index, err))
            return -1;
    }
    return 0;
}

int host_json_add_vmids(hostset *set, const json_t *vmids, const char *what, vf_error *err)
{
    return add_vmid_list(set, vmids, what, -1, err);
}

int host_json_add(hostset *set, const json_t *object, size_t index, vf_error *err)
{
    host h;
    memset(&h, 0, sizeof h);
    snprintf(h.pool, sizeof h.pool, "default");
    h.status = HOST_ONLINE;

    if (!json_is_object(object)) {
        vf_error_set(err, VF_EINVAL, "host %zu: expected a mapping of host fields", index);
        return -1;
    }
    if (!field(object, "name")) {
        vf_error_set(err, VF_EINVAL, "host %zu: name: missing", index);
        return -1;
    }
    if (get_label(object, "name", h.name, sizeof h.name, err) < 0) {
        vf_error_prefix(err, "host %zu", index);
        return -1;
    }
    const json_t *vmids = field(object, "vmids");
    /* The host goes in first: its vmids are recorded as its guests. */
    host_traits traits;
    memset(&traits, 0, sizeof traits);
    if (parse_fields(object, &h, &traits, err) < 0 || hostset_add(set, &h, err) < 0 ||
        (vmids && add_vmid_list(set, vmids, "vmids", (long)set->n_hosts - 1, err) < 0)) {
        vf_error_prefix(err, "host %zu (%s)", index, h.name);
        return -1;
    }
    return 0;
}

int host_json_add_each(const json_t *item, size_t index, void *set, vf_error *err)
{
    return host_json_add(set, item, index + 1, err);
}

int host_json_add_all(hostset *set, const json_t *hosts, vf_error *err)
{
    if (!json_is_array(hosts)) {
        vf_error_set(err, VF_EINVAL, "expected a list of hosts");
        return -1;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(hosts, i, item)
    {
        if (host_json_add(set, item, i + 1, err) < 0)
            return -1;
    }
    return 0;
}

int host_json_inventory_into(hostset *set, const json_t *root, vf_error *err)
{
    if (json_is_array(root)) {
        if (host_json_add_all(set, root, err) < 0)
            return -1;
    } else if (json_is_object(root)) {
        const json_t *nodes = json_object_get(root, "nodes");
        if (!nodes) {
            vf_error_set(err, VF_EINVAL,
                         "expected a list of hosts, or a mapping with a nodes: list");
            return -1;
        }
        if (!json_is_array(nodes)) {
            vf_error_set(err, VF_EINVAL, "nodes: expected a list of hosts");
            return -1;
        }
        if (host_json_add_all(set, nodes, err) < 0)
            return -1;
        const json_t *vmids = field(root, "vmids");
        if (vmids && host_json_add_vmids(set, vmids, "vmids", err) < 0)
            return -1;
    } else {
        vf_error_set(err, VF_EINVAL, "expected a list of hosts, or a mapping with a nodes: list");
        return -1;
    }
    return hostset_finish(set, err);
}

hostset *host_json_inventory(const json_t *root, vf_error *err)
{
    hostset *set = hostset_new();
    if (!set) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    if (host_json_inventory_into(set, root, err) < 0) {
        hostset_free(set);
        return NULL;
    }
    return set;
}

/* A JSON array of n vmids, or NULL (out of memory). */
static json_t *number_array(const uint32_t *values, size_t n)
{
    json_t *array = json_array();
    for (size_t i = 0; array && i < n; i++)
        if (json_array_append_new(array, json_integer(values[i])) < 0) {
            json_decref(array);
            return NULL;
        }
    return array;
}

static json_t *host_object(const host *h)
{
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:f, s:I, s:I, s:f, s:I, s:i, s:i}", "name",
                  h->name, "ip", h->ip, "pool", h->pool, "dedicated", h->dedicated, "model",
                  h->model, "status", host_status_name(h->status), "cpu", h->cpu, "memory",
                  (json_int_t)h->memory, "storage", (json_int_t)h->storage, "allocated_cpu",
                  h->allocated_cpu, "allocated_memory", (json_int_t)h->allocated_memory, "max_vms",
                  (int)h->max_vms, "current_vms", (int)h->current_vms);
    /* Absent stays absent: TargetLoadPacking tells unmeasured from 0. */
    if (o && h->has_usage_cpu)
        json_object_set_new(o, "usage_cpu", json_real(h->usage_cpu));
    if (o && h->has_usage_mem)
        json_object_set_new(o, "usage_mem", json_real(h->usage_mem));
    if (o && h->traits && h->traits->traits.n)
        json_object_set_new(o, "traits", trait_set_to_json(&h->traits->traits));
    if (o && h->traits && h->traits->resources.n)
        json_object_set_new(o, "resources", resource_amounts_to_json(&h->traits->resources));
    if (o && h->traits && h->traits->labels.n)
        json_object_set_new(o, "labels", label_set_to_json(&h->traits->labels));
    return o;
}

/* Each host's guests' vmids, grouped by host in one pass (counting sort):
 * host i's are vmids[start[i]] .. vmids[start[i + 1] - 1]. */
typedef struct guests_by_host {
    size_t *start;
    uint32_t *vmids;
} guests_by_host;

static void guests_by_host_free(guests_by_host *g)
{
    free(g->start);
    free(g->vmids);
}

static int guests_by_host_make(const hostset *set, guests_by_host *g)
{
    g->start = calloc(set->n_hosts + 1, sizeof *g->start);
    g->vmids = malloc((set->n_guests ? set->n_guests : 1) * sizeof *g->vmids);
    size_t *fill = calloc(set->n_hosts + 1, sizeof *fill);
    if (!g->start || !g->vmids || !fill) {
        free(fill);
        guests_by_host_free(g);
        return -1;
    }
    for (size_t i = 0; i < set->n_guests; i++)
        g->start[set->guests[i].host_index + 1]++;
    for (size_t i = 0; i < set->n_hosts; i++)
        g->start[i + 1] += g->start[i];
    for (size_t i = 0; i < set->n_guests; i++) {
        uint32_t h = set->guests[i].host_index;
        g->vmids[g->start[h] + fill[h]++] = set->guests[i].vmid;
    }
    free(fill);
    return 0;
}

/* Host i's entry of the document: its fields and its guests' vmids. */
static json_t *host_entry(const hostset *set, const guests_by_host *g, size_t i)
{
    json_t *o = host_object(&set->hosts[i]);
    if (o && g->start[i + 1] > g->start[i]) {
        json_t *vmids = number_array(g->vmids + g->start[i], g->start[i + 1] - g->start[i]);
        if (!vmids || json_object_set_new(o, "vmids", vmids) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* The used vmids that are no host's guest (both lists sorted by vmid), each
 * passed to fn; stops at fn's first -1 and returns it. */
static int each_other_vmid(const hostset *set, int (*fn)(uint32_t vmid, void *ctx), void *ctx)
{
    size_t g = 0;
    for (size_t v = 0; v < set->n_used_vmids; v++) {
        uint32_t vmid = set->used_vmids[v];
        while (g < set->n_guests && set->guests[g].vmid < vmid)
            g++;
        if (g < set->n_guests && set->guests[g].vmid == vmid)
            continue;
        if (fn(vmid, ctx) < 0)
            return -1;
    }
    return 0;
}

static int append_vmid(uint32_t vmid, void *ctx)
{
    return json_array_append_new(ctx, json_integer(vmid));
}

json_t *host_json_from_hostset(const hostset *set)
{
    json_t *nodes = json_array();
    json_t *root = json_pack("{s:o}", "nodes", nodes);
    guests_by_host g = {0};
    if (!root || guests_by_host_make(set, &g) < 0)
        goto fail;
    for (size_t i = 0; i < set->n_hosts; i++)
        if (json_array_append_new(nodes, host_entry(set, &g, i)) < 0)
            goto fail;
    json_t *others = json_array();
    if (!others || json_object_set_new(root, "vmids", others) < 0 ||
        each_other_vmid(set, append_vmid, others) < 0)
        goto fail;
    guests_by_host_free(&g);
    return root;
fail:
    guests_by_host_free(&g);
    json_decref(root);
    return NULL;
}

/* The text being written by host_json_dump_hostset. */
typedef struct dump_text {
    char *text;
    size_t len, cap;
} dump_text;

static int dump_put(const char *data, size_t size, void *ctx)
{
    dump_text *d = ctx;
    if (grow_array((void **)&d->text, &d->cap, d->len + size + 1, 1) < 0)
        return -1;
    memcpy(d->text + d->len, data, size);
    d->len += size;
    d->text[d->len] = '\0';
    return 0;
}

static int dump_vmid(uint32_t vmid, void *ctx)
{
    dump_text *d = ctx;
    char number[16];
    int n = snprintf(number, sizeof number, "%s%u", d->text[d->len - 1] == '[' ? "" : ",", vmid);
    return dump_put(number, (size_t)n, d);
}

char *host_json_dump_hostset(const hostset *set)
{
    dump_text d = {0};
    guests_by_host g = {0};
    if (guests_by_host_make(set, &g) < 0 || dump_put("{\"nodes\":[", 10, &d) < 0)
        goto fail;
    for (size_t i = 0; i < set->n_hosts; i++) {
        json_t *entry = host_entry(set, &g, i);
        int rc = entry && (i == 0 || dump_put(",", 1, &d) == 0)
                     ? json_dump_callback(entry, dump_put, &d, JSON_COMPACT)
                     : -1;
        json_decref(entry);
        if (rc < 0)
            goto fail;
    }
    if (dump_put("],\"vmids\":[", 11, &d) < 0 || each_other_vmid(set, dump_vmid, &d) < 0 ||
        dump_put("]}", 2, &d) < 0)
        goto fail;
    guests_by_host_free(&g);
    return d.text;
fail:
    guests_by_host_free(&g);
    free(d.text);
    return NULL;
}

/* Append `len` bytes to buf at *at (the caller sized buf for a host). */
static void put(unsigned char *buf, size_t *at, const void *data, size_t len)
{
    memcpy(buf + *at, data, len);
    *at += len;
}

int host_json_content_hash(const hostset *set, char out[HOST_JSON_HASH_SIZE])
{
    out[0] = '\0';
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return -1;
    }
    int ok = 1;
    /* Each field the document holds, fixed width, strings with their NUL. */
    unsigned char buf[sizeof(host) + 64];
    for (size_t i = 0; ok && i < set->n_hosts; i++) {
        const host *h = &set->hosts[i];
        size_t at = 0;
        put(buf, &at, h->name, strlen(h->name) + 1);
        put(buf, &at, h->ip, strlen(h->ip) + 1);
        put(buf, &at, h->pool, strlen(h->pool) + 1);
        put(buf, &at, h->model, strlen(h->model) + 1);
        unsigned char flags[4] = {h->dedicated, (unsigned char)h->status, h->has_usage_cpu,
                                  h->has_usage_mem};
        put(buf, &at, flags, sizeof flags);
        double usage_cpu = h->has_usage_cpu ? h->usage_cpu : 0;
        double usage_mem = h->has_usage_mem ? h->usage_mem : 0;
        put(buf, &at, &h->cpu, sizeof h->cpu);
        put(buf, &at, &h->memory, sizeof h->memory);
        put(buf, &at, &h->storage, sizeof h->storage);
        put(buf, &at, &usage_cpu, sizeof usage_cpu);
        put(buf, &at, &usage_mem, sizeof usage_mem);
        put(buf, &at, &h->allocated_cpu, sizeof h->allocated_cpu);
        put(buf, &at, &h->allocated_memory, sizeof h->allocated_memory);
        put(buf, &at, &h->max_vms, sizeof h->max_vms);
        put(buf, &at, &h->current_vms, sizeof h->current_vms);
        ok = EVP_DigestUpdate(ctx, buf, at);
        /* Only when present, so the hash of a host without them is what it was. */
        const host_traits *ht = h->traits;
        if (ok && ht) {
            unsigned char more[sizeof(host_traits) + 8];
            size_t used = 0;
            put(more, &used, &ht->traits.n, sizeof ht->traits.n);
            for (size_t t = 0; t < ht->traits.n; t++)
                put(more, &used, ht->traits.names[t], strlen(ht->traits.names[t]) + 1);
            put(more, &used, &ht->resources.n, sizeof ht->resources.n);
            for (size_t r = 0; r < ht->resources.n; r++) {
                const resource_amount *item = &ht->resources.items[r];
                put(more, &used, item->name, strlen(item->name) + 1);
                put(more, &used, &item->amount, sizeof item->amount);
            }
            /* Labels likewise only when present: a host with traits and no
             * labels hashes as it did before labels were read. */
            if (ht->labels.n) {
                put(more, &used, &ht->labels.n, sizeof ht->labels.n);
                for (size_t l = 0; l < ht->labels.n; l++) {
                    const label *item = &ht->labels.items[l];
                    put(more, &used, item->key, strlen(item->key) + 1);
                    put(more, &used, item->value, strlen(item->value) + 1);
                }
            }
            ok = EVP_DigestUpdate(ctx, more, used);
        }
    }
    /* The counts first, so hosts, guests and vmids cannot run into each other. */
    uint64_t counts[2] = {set->n_guests, set->n_used_vmids};
    ok = ok && EVP_DigestUpdate(ctx, counts, sizeof counts);
    for (size_t g = 0; ok && g < set->n_guests; g++) {
        uint32_t pair[2] = {set->guests[g].vmid, set->guests[g].host_index};
        ok = EVP_DigestUpdate(ctx, pair, sizeof pair);
    }
    ok = ok && (set->n_used_vmids == 0 ||
                EVP_DigestUpdate(ctx, set->used_vmids, set->n_used_vmids * sizeof(uint32_t)));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, digest, &size) == 1 && size == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -1;
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < size; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * size] = '\0';
    return 0;
}
