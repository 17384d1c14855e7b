/* reload: see reload.h. */
#include "reload.h"

#include <string.h>

#include "log.h"

void reload_init(reloader *r, const vf_config *startup, unsigned program)
{
    r->startup = startup;
    r->applied = NULL;
    r->program = program;
    r->always = false;
}

const vf_config *reload_current(const reloader *r)
{
    return r->applied ? r->applied : r->startup;
}

/* The sections a program never reads (one file serves all three): a change
 * there is another program's, not a restart this one needs. */
static const struct {
    unsigned program;
    const char *const sections[6];
} unread[] = {
    {CONFIG_RELOADS_WORKER, {"relay", "api", NULL}},
    {CONFIG_RELOADS_RELAY, {"worker", "api", "scheduler", "inventory", "spare", NULL}},
};

static bool reads_key(unsigned program, const char *key)
{
    size_t dot = strcspn(key, ".");
    for (size_t i = 0; i < sizeof unread / sizeof unread[0]; i++) {
        if (unread[i].program != program)
            continue;
        for (size_t k = 0; unread[i].sections[k]; k++)
            if (strlen(unread[i].sections[k]) == dot &&
                strncmp(key, unread[i].sections[k], dot) == 0)
                return false;
    }
    return true;
}

static void log_restart_key(const char *key, bool reloads, void *user)
{
    const reloader *r = user;
    if (reloads)
        return;
    if (!reads_key(r->program, key))
        log_debug("reload: %s changed: not read by this program", key);
    else
        log_warn("reload: %s changed: needs a restart (the running value stays until then)", key);
}

static void count_reload_key(const char *key, bool reloads, void *user)
{
    (void)key;
    if (reloads)
        ++*(size_t *)user;
}

static void log_applied_key(const char *key, bool reloads, void *user)
{
    (void)user;
    if (reloads)
        log_info("reload: %s changed: applied", key);
}

vf_config *reload_read(reloader *r)
{
    if (!r->startup->path) {
        log_warn("reload: started on the built-in defaults, there is no file to read again; "
                 "nothing changed");
        return NULL;
    }
    vf_error err;
    vf_error_init(&err);
    vf_config *next = config_load(r->startup->path, &err);
    /* The VIRTFLOW_* variables still stand over the file, as at start-up:
     * without them every key they set would look changed back. */
    extern char **environ;
    if (next && (config_apply_environment(next, (const char *const *)environ, &err) < 0 ||
                 config_check_rules(next, NULL, NULL, NULL, &err) < 0)) {
        config_free(next);
        next = NULL;
    }
    if (!next) {
        log_error("reload: %s; nothing changed, the running configuration stays", err.text);
        return NULL;
    }
    log_info("reload: read %s", r->startup->path);
    config_diff(r->startup, next, r->program, log_restart_key, r);
    size_t to_apply = 0;
    config_diff(reload_current(r), next, r->program, count_reload_key, &to_apply);
    if (to_apply == 0) {
        log_info("reload: nothing this program reloads changed in the file");
        if (!r->always) {
            config_free(next);
            return NULL;
        }
    }
    return next;
}

void reload_commit(reloader *r, vf_config *next)
{
    config_diff(reload_current(r), next, r->program, log_applied_key, NULL);
    config_free(r->applied);
    r->applied = next;
}

void reload_abandon(reloader *r, vf_config *next, const char *why)
{
    (void)r;
    log_error("reload: %s; nothing was applied, the running configuration stays", why);
    config_free(next);
}

void reload_close(reloader *r)
{
    config_free(r->applied);
    r->applied = NULL;
}
