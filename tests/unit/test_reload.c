/* reload: what a SIGHUP reads and hands the program to apply. The key that
 * matters is compared with the last config applied, so a change made and
 * then undone is applied both ways; an invalid file hands nothing. */
#include "config.h"
#include "reload.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_config(const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/vf-reload-%d.yaml", (int)getpid());
    write_config("scheduler: {strategy: spread}\namqp: {prefetch: 10}\n");
    vf_error err;
    vf_error_init(&err);
    vf_config *startup = config_load(path, &err);
    CHECKF(startup != NULL, "%s", err.text);
    if (!startup)
        return test_summary();
    reloader r;
    reload_init(&r, startup, CONFIG_RELOADS_WORKER);
    CHECK(reload_current(&r) == startup);

    /* Unchanged, or only a key the worker cannot apply: nothing to apply. */
    CHECK(reload_read(&r) == NULL);
    write_config("scheduler: {strategy: spread}\namqp: {prefetch: 20}\n");
    CHECK(reload_read(&r) == NULL);

    /* Invalid: nothing, whatever else changed. */
    write_config("scheduler: {strategy: sideways}\n");
    CHECK(reload_read(&r) == NULL);

    /* A reloadable change: handed over, applied, current from then on. */
    write_config("scheduler: {strategy: pack}\n");
    vf_config *next = reload_read(&r);
    CHECK(next != NULL);
    if (next) {
        reload_commit(&r, next);
        CHECK(reload_current(&r) == next);
        CHECK(reload_current(&r)->scheduler.strategy == CONFIG_STRATEGY_PACK);
    }
    /* The same file again: the applied config already has it. */
    CHECK(reload_read(&r) == NULL);

    /* Undone: back to the start-up value, which differs from the applied one. */
    write_config("scheduler: {strategy: spread}\n");
    next = reload_read(&r);
    CHECK(next != NULL);
    if (next) {
        /* Refused by the program: the applied config stays. */
        reload_abandon(&r, next, "refused in a test");
        CHECK(reload_current(&r)->scheduler.strategy == CONFIG_STRATEGY_PACK);
    }
    next = reload_read(&r);
    CHECK(next != NULL);
    if (next) {
        reload_commit(&r, next);
        CHECK(reload_current(&r)->scheduler.strategy == CONFIG_STRATEGY_SPREAD);
    }

    /* `always`: a valid file is handed over even unchanged (the relay reads
     * its secret files again); an invalid one still is not. */
    r.always = true;
    next = reload_read(&r);
    CHECK(next != NULL);
    if (next)
        reload_commit(&r, next);
    write_config("scheduler: {strategy: sideways}\n");
    CHECK(reload_read(&r) == NULL);

    /* A VIRTFLOW_* variable stands over the file at every reload, as at
     * start-up: the key it sets does not look changed back to the file's. */
    r.always = false;
    write_config("scheduler: {strategy: spread}\n");
    setenv("VIRTFLOW_SCHEDULER_STRATEGY", "pack", 1);
    vf_config *from_env = config_resolve_from(path, NULL, &err);
    CHECKF(from_env && from_env->scheduler.strategy == CONFIG_STRATEGY_PACK, "%s", err.text);
    if (from_env) {
        reloader env_reloader;
        reload_init(&env_reloader, from_env, CONFIG_RELOADS_WORKER);
        CHECK(reload_read(&env_reloader) == NULL);
        /* and a bad variable is an invalid configuration: nothing applied */
        setenv("VIRTFLOW_SCHEDULER_STRATEGY", "sideways", 1);
        write_config("scheduler: {strategy: spread}\nlog: {level: debug}\n");
        CHECK(reload_read(&env_reloader) == NULL);
        reload_close(&env_reloader);
    }
    unsetenv("VIRTFLOW_SCHEDULER_STRATEGY");
    config_free(from_env);

    /* The built-in defaults have no file to read. */
    vf_config *defaults = config_defaults();
    reloader none;
    reload_init(&none, defaults, CONFIG_RELOADS_RELAY);
    CHECK(reload_read(&none) == NULL);
    reload_close(&none);
    config_free(defaults);

    reload_close(&r);
    config_free(startup);
    remove(path);
    return test_summary();
}
