#include "inventory.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "source.h"

#define DEFAULT_TIMEOUT_S 5.0

struct inventory_snapshot {
    atomic_int references;
    hostset *hosts; /* owned */
    /* The bytes it was built from (file and http sources) and from which
     * kind of source: a refresh that reads them again keeps the snapshot. */
    source_digest digest;
    config_inventory_source source;
    /* Under the inventory's lock: a refresh that reads the same bytes again
     * moves them (the snapshot's content never changes). */
    double fetched_at; /* seconds, inventory clock */
    uint64_t fetch;    /* inventory.fetches when last fetched */
};

struct inventory {
    config_inventory_source source;
    char *path;
    char *url;
    char *token_file;
    char *ca_file;
    double timeout_s;
    bool tls_verify;

    double (*now_s)(void *context);
    void *clock_context;

    pthread_mutex_t lock; /* guards the fields below */
    inventory_snapshot
        *current; /* one reference held by the handle; NULL before the first success */
    bool failing;
    char error[VF_ERROR_TEXT];
    uint64_t fetches; /* successful ones */
};

static double monotonic_now(void *context)
{
    (void)context;
    return (double)clock_mono_us() / 1e6;
}

static const char *source_name(config_inventory_source source)
{
    switch (source) {
    case CONFIG_INVENTORY_FILE:
        return "file";
    case CONFIG_INVENTORY_HTTP:
        return "http";
    case CONFIG_INVENTORY_PROXMOX:
        return "proxmox";
    }
    return "unknown";
}

static int copy_optional(char **out, const char *in, vf_error *err)
{
    *out = NULL;
    if (!in)
        return 0;
    *out = strdup(in);
    if (!*out) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    return 0;
}

inventory *inventory_new(const vf_config *config, vf_error *err)
{
    inventory *inv = calloc(1, sizeof *inv);
    if (!inv) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&inv->lock, NULL) != 0) {
        free(inv);
        vf_error_set(err, VF_EINTERNAL, "cannot create a mutex");
        return NULL;
    }
    inv->source = config->inventory.source;
    inv->timeout_s =
        config->inventory.timeout_s > 0 ? config->inventory.timeout_s : DEFAULT_TIMEOUT_S;
    inv->tls_verify = config->inventory.tls_verify;
    inv->now_s = monotonic_now;
    snprintf(inv->error, sizeof inv->error, "no refresh has run yet");
    if (copy_optional(&inv->path, config->inventory.path, err) < 0 ||
        copy_optional(&inv->url, config->inventory.url, err) < 0 ||
        copy_optional(&inv->token_file, config->inventory.token_file, err) < 0 ||
        copy_optional(&inv->ca_file, config->inventory.ca_file, err) < 0)
        goto fail;

    const char *name = source_name(inv->source);
    bool remote = inv->source == CONFIG_INVENTORY_HTTP || inv->source == CONFIG_INVENTORY_PROXMOX;
    if (inv->source != CONFIG_INVENTORY_FILE && !remote) {
        vf_error_set(err, VF_ECONFIG, "inventory.source: expected file, http or proxmox");
        goto fail;
    }
    if (inv->source == CONFIG_INVENTORY_FILE && (!inv->path || !*inv->path)) {
        vf_error_set(err, VF_ECONFIG, "inventory.path: required when inventory.source is file");
        goto fail;
    }
    if (remote && (!inv->url || (strncmp(inv->url, "http://", 7) != 0 &&
                                 strncmp(inv->url, "https://", 8) != 0))) {
        vf_error_set(err, VF_ECONFIG,
                     "inventory.url: an http:// or https:// URL is required when "
                     "inventory.source is %s",
                     name);
        goto fail;
    }
    if (inv->source == CONFIG_INVENTORY_PROXMOX && (!inv->token_file || !*inv->token_file)) {
        vf_error_set(err, VF_ECONFIG,
                     "inventory.token_file: required when inventory.source is proxmox");
        goto fail;
    }
    if (!inv->tls_verify && inv->source != CONFIG_INVENTORY_FILE)
        log_warn("inventory: TLS certificate verification is OFF for %s source", name);
    return inv;
fail:
    inventory_free(inv);
    return NULL;
}

static void snapshot_unref(inventory_snapshot *snapshot)
{
    if (snapshot && atomic_fetch_sub(&snapshot->references, 1) == 1) {
        hostset_free(snapshot->hosts);
        free(snapshot);
    }
}

void inventory_free(inventory *inv)
{
    if (!inv)
        return;
    snapshot_unref(inv->current);
    pthread_mutex_destroy(&inv->lock);
    free(inv->path);
    free(inv->url);
    free(inv->token_file);
    free(inv->ca_file);
    free(inv);
}

/* The source settings, copied under the lock: a reload may replace them
 * while a fetch runs (inventory_adopt_settings). */
typedef struct settings_copy {
    config_inventory_source source;
    char *path, *url, *token_file, *ca_file;
    double timeout_s;
    bool tls_verify;
} settings_copy;

static void settings_copy_free(settings_copy *c)
{
    free(c->path);
    free(c->url);
    free(c->token_file);
    free(c->ca_file);
}

static int settings_copy_take(inventory *inv, settings_copy *c, vf_error *err)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_lock(&inv->lock);
    c->source = inv->source;
    c->timeout_s = inv->timeout_s;
    c->tls_verify = inv->tls_verify;
    int rc = copy_optional(&c->path, inv->path, err) < 0 ||
                     copy_optional(&c->url, inv->url, err) < 0 ||
                     copy_optional(&c->token_file, inv->token_file, err) < 0 ||
                     copy_optional(&c->ca_file, inv->ca_file, err) < 0
                 ? -1
                 : 0;
    pthread_mutex_unlock(&inv->lock);
    if (rc < 0)
        settings_copy_free(c);
    return rc;
}

/* Fetch with the current settings; their source's kind into *source. With
 * `seen` (file and http sources; seen->known and the same kind as
 * `seen_source`), bytes that are seen's again are not parsed: NULL with
 * *unchanged set. Otherwise seen->known says whether *seen is now the
 * digest of what the returned hosts were built from. */
static hostset *fetch(inventory *inv, config_inventory_source seen_source, source_digest *seen,
                      bool *unchanged, config_inventory_source *source, vf_error *err)
{
    *unchanged = false;
    settings_copy c;
    if (settings_copy_take(inv, &c, err) < 0)
        return NULL;
    *source = c.source;
    source_remote remote = {
        .url = c.url,
        .token_file = c.token_file,
        .timeout_s = c.timeout_s,
        .ca_file = c.ca_file,
        .tls_verify = c.tls_verify,
    };
    source_digest none = {.known = false};
    if (!seen)
        seen = &none;
    if (c.source != seen_source)
        seen->known = false;
    hostset *hosts = NULL;
    switch (c.source) {
    case CONFIG_INVENTORY_FILE:
        hosts = source_file_fetch_since(c.path, seen, unchanged, err);
        break;
    case CONFIG_INVENTORY_HTTP:
        hosts = source_http_fetch_since(&remote, seen, unchanged, err);
        break;
    case CONFIG_INVENTORY_PROXMOX:
        seen->known = false; /* several requests: not one body to compare */
        hosts = source_proxmox_fetch(&remote, err);
        break;
    default:
        vf_error_set(err, VF_EINTERNAL, "unknown inventory source");
        break;
    }
    settings_copy_free(&c);
    return hosts;
}

hostset *inventory_fetch(inventory *inv, vf_error *err)
{
    bool unchanged = false;
    config_inventory_source source = CONFIG_INVENTORY_FILE;
    return fetch(inv, CONFIG_INVENTORY_FILE, NULL, &unchanged, &source, err);
}

void inventory_adopt_settings(inventory *inv, inventory *from)
{
    pthread_mutex_lock(&inv->lock);
    /* The old strings go to `from`, which frees them. */
    char *path = inv->path, *url = inv->url, *token_file = inv->token_file, *ca_file = inv->ca_file;
    inv->source = from->source;
    inv->path = from->path;
    inv->url = from->url;
    inv->token_file = from->token_file;
    inv->ca_file = from->ca_file;
    inv->timeout_s = from->timeout_s;
    inv->tls_verify = from->tls_verify;
    from->path = path;
    from->url = url;
    from->token_file = token_file;
    from->ca_file = ca_file;
    pthread_mutex_unlock(&inv->lock);
    inventory_free(from); /* the settings inv had */
}

int inventory_refresh(inventory *inv, vf_error *err)
{
    vf_error local;
    vf_error_init(&local);
    /* Only one refresh runs at a time: the current snapshot is this one's
     * to replace. */
    source_digest digest = {.known = false};
    config_inventory_source seen_source = CONFIG_INVENTORY_FILE;
    pthread_mutex_lock(&inv->lock);
    config_inventory_source source = inv->source; /* fetch says which it read */
    if (inv->current) {
        digest = inv->current->digest;
        seen_source = inv->current->source;
    }
    pthread_mutex_unlock(&inv->lock);
    bool unchanged = false;
    hostset *hosts = fetch(inv, seen_source, &digest, &unchanged, &source, &local);
    inventory_snapshot *fresh = NULL;
    if (hosts) {
        fresh = calloc(1, sizeof *fresh);
        if (!fresh) {
            hostset_free(hosts);
            vf_error_set(&local, VF_ENOMEM, "out of memory");
        } else {
            atomic_init(&fresh->references, 1);
            fresh->hosts = hosts;
            fresh->digest = digest;
            fresh->source = source;
        }
    }
    double now = inv->now_s(inv->clock_context);

    pthread_mutex_lock(&inv->lock);
    bool was_failing = inv->failing;
    inventory_snapshot *old = NULL;
    inventory_snapshot *kept = fresh ? fresh : unchanged ? inv->current : NULL;
    if (fresh) {
        old = inv->current;
        inv->current = fresh;
    }
    if (kept) {
        /* A new snapshot, or the same bytes read again: fetched now either way. */
        kept->fetched_at = now;
        kept->fetch = ++inv->fetches;
        inv->failing = false;
        inv->error[0] = '\0';
    } else {
        inv->failing = true;
        snprintf(inv->error, sizeof inv->error, "%s", local.text);
    }
    size_t n_hosts = kept ? kept->hosts->n_hosts : 0;
    pthread_mutex_unlock(&inv->lock);
    snapshot_unref(old); /* outside the lock: freeing a large set takes a moment */

    if (kept) {
        if (was_failing)
            log_info("inventory: %s source recovered: %zu hosts", source_name(source), n_hosts);
        else if (!fresh)
            log_debug("inventory: %s source unchanged (the same bytes): %zu hosts, kept",
                      source_name(source), n_hosts);
        return 0;
    }
    if (!was_failing)
        log_warn("inventory: refresh from %s source failed, keeping the last good snapshot: %s",
                 source_name(source), local.text);
    else
        log_debug("inventory: refresh still failing: %s", local.text);
    vf_error_set(err, local.code, "%s", local.text);
    return -1;
}

void inventory_acquire(inventory *inv, inventory_view *view)
{
    memset(view, 0, sizeof *view);
    pthread_mutex_lock(&inv->lock);
    inventory_snapshot *snapshot = inv->current;
    if (snapshot) {
        atomic_fetch_add(&snapshot->references, 1);
        view->snapshot = snapshot;
        view->hosts = snapshot->hosts;
        double age = inv->now_s(inv->clock_context) - snapshot->fetched_at;
        view->age_s = age > 0 ? age : 0;
        view->fetch = snapshot->fetch;
    }
    view->stale = inv->failing || !snapshot;
    if (view->stale)
        snprintf(view->error, sizeof view->error, "%s", inv->error);
    pthread_mutex_unlock(&inv->lock);
}

void inventory_release(inventory_view *view)
{
    if (!view)
        return;
    snapshot_unref(view->snapshot);
    memset(view, 0, sizeof *view);
}

bool inventory_view_describe(const inventory_view *view, char *buf, size_t size)
{
    if (!size)
        return view->stale;
    buf[0] = '\0';
    if (!view->stale)
        return false;
    if (view->hosts)
        snprintf(buf, size, "inventory is stale (%.0f s old): %s", view->age_s, view->error);
    else
        snprintf(buf, size, "no inventory yet: %s", view->error);
    return true;
}

void inventory_set_clock(inventory *inv, double (*now_s)(void *context), void *context)
{
    inv->now_s = now_s ? now_s : monotonic_now;
    inv->clock_context = now_s ? context : NULL;
}
