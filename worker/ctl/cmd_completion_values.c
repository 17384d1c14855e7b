/* virtflowctl completion values KIND: what the shell completion offers for
 * a value it cannot know from the option tables, read when it completes:
 * the newest task ids, the hosts and pools of the inventory the worker
 * recorded last, the receivers of the configuration. One word a line;
 * nothing (and exit 4) when the store cannot be read, which the completion
 * shows as no candidates. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "store_inventory.h"

/* A completion waits on this: the newest are the likely ones. */
#define TASK_CANDIDATES 200

static int print_task_id(const store_task *t, void *ctx)
{
    (void)ctx;
    printf("%s\n", ctl_text(t->id));
    return 0;
}

static int tasks(const vf_config *config, store *s)
{
    (void)config;
    store_task_filter newest = {.limit = TASK_CANDIDATES};
    return store_task_list(s, &newest, print_task_id, NULL, NULL) < 0 ? -1 : 0;
}

/* The hosts' `key` (name, pool) of the snapshot in force now, each once. */
static int print_hosts(const store_inventory_snapshot *snapshot, void *ctx)
{
    const char *key = ctx;
    json_t *doc = json_loads(snapshot->hosts, 0, NULL);
    json_t *seen = json_object();
    size_t i;
    const json_t *host;
    json_array_foreach(json_object_get(doc, "nodes"), i, host)
    {
        const char *value = json_string_value(json_object_get(host, key));
        if (value && !json_object_get(seen, value)) {
            json_object_set_new(seen, value, json_true());
            printf("%s\n", ctl_text(value));
        }
    }
    json_decref(seen);
    json_decref(doc);
    return 1; /* the first is the one in force now */
}

static int inventory_field(store *s, const char *key)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    return store_inventory_snapshots(s, now, print_hosts, (void *)key, NULL) < 0 ? -1 : 0;
}

static int hosts(const vf_config *config, store *s)
{
    (void)config;
    return inventory_field(s, "name");
}

static int pools(const vf_config *config, store *s)
{
    (void)config;
    return inventory_field(s, "pool");
}

static int receivers(const vf_config *config, store *s)
{
    (void)s;
    for (size_t i = 0; i < config->relay.n_receivers; i++)
        printf("%s\n", ctl_text(config->relay.receivers[i].name));
    return 0;
}

static const struct {
    const char *kind;
    bool needs_store;
    int (*print)(const vf_config *config, store *s);
} kinds[] = {
    {"tasks", true, tasks},
    {"hosts", true, hosts},
    {"pools", true, pools},
    {"receivers", false, receivers},
};

int ctl_completion_values(const char *kind, const char *config_path)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(kinds[i].kind, kind) != 0)
            continue;
        vf_config *config = ctl_load_config(config_path);
        if (!config)
            return CTL_EXIT_CONFIG;
        store *s = kinds[i].needs_store ? ctl_open_store(config, STORE_READ_ONLY) : NULL;
        int rc = kinds[i].needs_store && !s ? -1 : kinds[i].print(config, s);
        store_close(s);
        config_free(config);
        return rc < 0 ? CTL_EXIT_UNAVAILABLE : CTL_EXIT_OK;
    }
    ctl_error("completion values: expected tasks, hosts, pools or receivers, got '%s'", kind);
    return CTL_EXIT_USAGE;
}
