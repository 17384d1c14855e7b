/* config: every fixture under fixtures/config/{valid,invalid}, then the values
 * a user depends on: defaults, relative paths, $VIRTFLOW_CONFIG. */
#include "config.h"
#include "testlib.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURES "fixtures/config"

static int compare_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Sorted *.yaml names of a fixture folder, so failures read in a stable order. */
static size_t list_cases(const char *dir, char names[][128], size_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) && n < max) {
        size_t len = strlen(entry->d_name);
        if (len > 5 && len < 128 && !strcmp(entry->d_name + len - 5, ".yaml"))
            memcpy(names[n++], entry->d_name, len + 1);
    }
    closedir(d);
    qsort(names, n, 128, compare_names);
    return n;
}

static void strip_newline(char *s)
{
    size_t len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        s[--len] = '\0';
}

static void test_valid_fixtures(void)
{
    static char names[64][128];
    size_t n = list_cases(FIXTURES "/valid", names, 64);
    CHECKF(n >= 8, "only %zu valid fixtures found", n);
    for (size_t i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, FIXTURES "/valid/%s", names[i]);
        vf_error err;
        vf_error_init(&err);
        vf_config *config = config_load(path, &err);
        CHECKF(config != NULL, "%s: %s", path, err.text);
        config_free(config);
    }
}

/* Each invalid case fails with exactly the text in <case>.error. The text is
 * written for the name "config.yaml" (loaded from a string); loading the
 * file itself must give the same text with its own path in front. */
static void test_invalid_fixtures(void)
{
    static char names[128][128];
    size_t n = list_cases(FIXTURES "/invalid", names, 128);
    CHECKF(n >= 25, "only %zu invalid fixtures found", n);
    for (size_t i = 0; i < n; i++) {
        char path[256], error_path[256];
        snprintf(path, sizeof path, FIXTURES "/invalid/%s", names[i]);
        snprintf(error_path, sizeof error_path, FIXTURES "/invalid/%.*s.error",
                 (int)(strlen(names[i]) - 5), names[i]);
        size_t len = 0;
        char *text = test_read_file(path, &len);
        char *want = test_read_file(error_path, NULL);
        CHECKF(text && want, "%s: cannot read the case or its .error", path);
        if (!text || !want) {
            free(text);
            free(want);
            continue;
        }
        strip_newline(want);

        vf_error err;
        vf_error_init(&err);
        vf_config *config = config_load_string(text, len, "config.yaml", &err);
        CHECKF(config == NULL, "%s: loaded although invalid", path);
        CHECKF(err.code == VF_ECONFIG, "%s: code %s", path, vf_error_code_name(err.code));
        CHECKF(!strcmp(err.text, want), "%s:\n  got  \"%s\"\n  want \"%s\"", path, err.text, want);
        config_free(config);

        char want_file[512];
        snprintf(want_file, sizeof want_file, "%s%s", path, want + strlen("config.yaml"));
        vf_error_init(&err);
        config = config_load(path, &err);
        CHECKF(config == NULL && !strcmp(err.text, want_file), "%s: from file got \"%s\"", path,
               err.text);
        config_free(config);
        free(text);
        free(want);
    }
}

static void check_defaults(const vf_config *c)
{
    CHECK(c->amqp.n_urls == 1);
    CHECK_STR(c->amqp.urls[0], "amqp://guest:guest@127.0.0.1:5672/");
    CHECK(c->amqp.password_file == NULL);
    CHECK(c->amqp.queue_type == CONFIG_QUEUE_QUORUM);
    CHECK(c->amqp.prefetch == 200);
    CHECK(c->amqp.heartbeat_s == 20);
    CHECK(!c->amqp.single_active_consumer);
    CHECK(c->amqp.max_message_bytes == 1048576);
    CHECK(c->amqp.ca_file == NULL);
    CHECK(c->amqp.tls_verify);
    CHECK_STR(c->store.path, "virtflow.db");
    CHECK(c->store.retention_s == 30LL * 86400);
    CHECK_STR(c->api.listen, "127.0.0.1:8080"); /* the prototype's port */
    CHECK(c->store.url == NULL && c->store.password_file == NULL && c->store.ca_file == NULL);
    CHECK(c->store.tls_verify);
    CHECK(c->store.statement_timeout_ms == 30000);
    CHECK(c->inventory.source == CONFIG_INVENTORY_FILE);
    CHECK_STR(c->inventory.path, "deploy/inventory.example.yaml");
    CHECK(c->inventory.url == NULL && c->inventory.token_file == NULL);
    CHECK(c->inventory.refresh_s == 10);
    CHECK(c->inventory.max_age_s == 300);
    CHECK(c->inventory.timeout_s == 5);
    CHECK(c->inventory.tls_verify);
    CHECK(c->scheduler.overcommit_cpu == 4.0 && c->scheduler.overcommit_memory == 1.0);
    CHECK(c->scheduler.reserve_cpu == 0 && c->scheduler.reserve_memory == 0);
    CHECK(c->scheduler.dedicated_exclusive);
    CHECK(c->scheduler.subset_size == 1);
    CHECK(c->scheduler.reservation_ttl_s == 900);
    CHECK(c->scheduler.n_plugins == 0);
    CHECK(c->retry.max_attempts == 5);
    static const int delays[] = {5, 30, 120, 600};
    CHECK(c->retry.n_delays == 4 && !memcmp(c->retry.delays_s, delays, sizeof delays));
    static const int schedule[] = {0, 5, 300, 1800, 7200, 18000, 36000, 36000};
    CHECK(c->relay.n_schedule == 8 && !memcmp(c->relay.schedule_s, schedule, sizeof schedule));
    CHECK(c->relay.n_receivers == 0);
    CHECK(c->relay.n_trusted_publishers == 0 && c->relay.trusted_publishers == NULL);
    CHECK(config_trusts_publisher(c, "guest") && !config_trusts_publisher(c, "virtflow-client"));
    CHECK(c->spare.anti_affinity_strict);
    CHECK_STR(c->spare.name_pattern, "spare-{upgrade_id}-{index}");
    CHECK_STR(c->spare.provisioner.type, "none");
    CHECK_STR(c->spare.provisioner.ref, "main");
    CHECK(c->spare.provisioner.url == NULL && c->spare.provisioner.project == NULL);
    CHECK(c->spare.provisioner.n_command == 0);
    CHECK(c->spare.provisioner.timeout_s == 600);
    CHECK_STR(c->spare.readiness.type, "none");
    CHECK(c->spare.readiness.api_url == NULL && c->spare.readiness.token_file == NULL);
    CHECK(c->spare.readiness.poll_s == 10);
    CHECK(c->log.level == VF_LOG_INFO);
}

static void test_defaults(void)
{
    vf_config *c = config_defaults();
    CHECK(c != NULL);
    if (c) {
        CHECK(c->path == NULL);
        check_defaults(c);
    }
    config_free(c);
    config_free(NULL);

    /* An empty file and one whose sections are all null mean the same. */
    const char *files[] = {FIXTURES "/valid/empty.yaml", FIXTURES "/valid/null_sections.yaml",
                           FIXTURES "/valid/comments_only.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        vf_error err;
        vf_error_init(&err);
        c = config_load(files[i], &err);
        CHECKF(c != NULL, "%s: %s", files[i], err.text);
        if (c) {
            CHECK_STR(c->path, files[i]);
            check_defaults(c);
        }
        config_free(c);
    }
}

static void test_plugins(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/plugins.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->scheduler.n_plugins == 4);
    if (c->scheduler.n_plugins == 4) {
        const config_plugin *p = c->scheduler.plugins;
        CHECK(p[0].kind == CONFIG_PLUGIN_FILTER);
        CHECK_STR(p[0].name, "CPUOvercommit");
        CHECK(!p[0].enable && !p[0].has_weight && p[0].line == 4);
        CHECK_STR(p[1].name, "Pool");
        CHECK(p[1].enable && !p[1].has_weight && p[1].line == 5);
        CHECK(p[2].kind == CONFIG_PLUGIN_SCORE);
        CHECK_STR(p[2].name, "FreeResources");
        CHECK(p[2].enable && p[2].has_weight && p[2].weight == 2 && p[2].line == 7);
        CHECK_STR(p[3].name, "MostAllocated"); /* null value: enabled, no weight */
        CHECK(p[3].kind == CONFIG_PLUGIN_SCORE && p[3].enable && !p[3].has_weight);
    }
    config_free(c);
}

/* TargetLoadPacking's args: parsed into the entry, bounded (a target of 0 or
 * 100 % has no "below" or no "above"; a score is 0..100). */
static void test_target_load_args(void)
{
    static const char ok[] = "scheduler:\n  plugins:\n    scores:\n      TargetLoadPacking:\n"
                             "        args: {target_percent: 60, missing_score: 30}\n";
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(ok, strlen(ok), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->scheduler.n_plugins == 1);
        const config_plugin *p = c->scheduler.plugins;
        CHECK_STR(p[0].name, "TargetLoadPacking");
        CHECK(p[0].enable && p[0].kind == CONFIG_PLUGIN_SCORE);
        CHECK(p[0].has_target_percent && p[0].target_percent == 60);
        CHECK(p[0].has_missing_score && p[0].missing_score == 30);
    }
    config_free(c);

    static const char *const bad[][2] = {
        {"target_percent: 100", "target_percent: expected a number in 1..99"},
        {"target_percent: 0", "target_percent: expected a number in 1..99"},
        {"missing_score: 101", "missing_score: expected a number in 0..100"},
        {"missing_score: -1", "missing_score: expected a number in 0..100"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "scheduler:\n  plugins:\n    scores:\n      TargetLoadPacking:\n"
                 "        args: {%s}\n",
                 bad[i][0]);
        vf_error_init(&err);
        c = config_load_string(text, strlen(text), "c.yaml", &err);
        CHECKF(c == NULL, "%s accepted", bad[i][0]);
        CHECK_CONTAINS(err.text, "scheduler.plugins.scores.TargetLoadPacking.args.");
        CHECK_CONTAINS(err.text, bad[i][1]);
        config_free(c);
    }
}

/* scheduler.plugin_config reads qemu-scheduler's own file; its entries come
 * first, so the config file's own scheduler.plugins entries win; args and
 * the strategy are parsed. */
static void test_plugin_config_file(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/plugin_config.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->scheduler.strategy == CONFIG_STRATEGY_PACK);
    CHECK_STR(c->scheduler.plugin_config, FIXTURES "/valid/../plugin_config/qemu-scheduler.yaml");
    CHECK(c->scheduler.n_plugins == 5);
    if (c->scheduler.n_plugins == 5) {
        const config_plugin *p = c->scheduler.plugins;
        /* From the plugin-config file, in its order, attributed to it. */
        CHECK_STR(p[0].name, "CPUOvercommit");
        CHECK(p[0].kind == CONFIG_PLUGIN_FILTER && !p[0].enable && p[0].line == 4);
        CHECK(p[0].file == c->scheduler.plugin_config);
        CHECK_STR(p[1].name, "MemoryOvercommit");
        CHECK(p[1].enable && p[1].file);
        CHECK_STR(p[2].name, "Regex");
        CHECK(p[2].kind == CONFIG_PLUGIN_VMID && !p[2].enable && p[2].line == 9);
        /* Then the config file's own, which the engine applies last. */
        CHECK_STR(p[3].name, "CPUOvercommit");
        CHECK(p[3].enable && p[3].file == NULL && p[3].line == 6);
        CHECK(p[3].has_ratio && p[3].ratio == 8 && p[3].has_reserve && p[3].reserve == 2);
        CHECK(!p[3].has_seed && !p[3].has_subset_size);
        CHECK_STR(p[4].name, "Random");
        CHECK(p[4].has_subset_size && p[4].subset_size == 2 && p[4].has_seed && p[4].seed == 7);
    }
    config_free(c);

    /* A missing file names the key and the path. */
    static const char missing[] = "scheduler:\n  plugin_config: /nonexistent/plugin-config.yaml\n";
    vf_error_init(&err);
    c = config_load_string(missing, strlen(missing), "c.yaml", &err);
    CHECK(c == NULL && err.code == VF_ECONFIG);
    CHECK_STR(err.text, "scheduler.plugin_config: /nonexistent/plugin-config.yaml: cannot open: No "
                        "such file or directory");

    /* Only a regular file: a directory, a FIFO or a device is refused. */
    static const char directory[] = "scheduler:\n  plugin_config: /tmp\n";
    vf_error_init(&err);
    c = config_load_string(directory, strlen(directory), "c.yaml", &err);
    CHECK(c == NULL);
    CHECK_STR(err.text, "scheduler.plugin_config: /tmp: not a regular file");

    /* An error inside it names its own file and line. */
    char dir[] = "/tmp/vf-test-config.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[128], text[256];
    snprintf(file, sizeof file, "%s/plugin-config.yaml", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("filters:\n  CPUOvercommit:\n    enable: no\n", f);
        fclose(f);
    }
    snprintf(text, sizeof text, "scheduler:\n  plugin_config: %s\n", file);
    vf_error_init(&err);
    c = config_load_string(text, strlen(text), "c.yaml", &err);
    CHECK(c == NULL);
    char want[256];
    snprintf(want, sizeof want, "%s:3: filters.CPUOvercommit.enable: expected true or false", file);
    CHECKF(strncmp(err.text, want, strlen(want)) == 0, "got \"%s\"", err.text);
    unlink(file);
    rmdir(dir);
}

static void test_receivers(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/receivers.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->relay.n_receivers == 2);
    CHECK(c->relay.n_schedule == 2 && c->relay.schedule_s[1] == 60);
    if (c->relay.n_receivers == 2) {
        const config_receiver *r = &c->relay.receivers[0];
        CHECK_STR(r->name, "upgradectrl");
        CHECK(r->n_events == 1);
        CHECK_STR(r->events[0], "spare.*");
        CHECK(r->n_secret_files == 2);
        if (r->n_secret_files == 2) {
            CHECK_STR(r->secret_files[0], FIXTURES "/valid/upgradectrl.secret");
            CHECK_STR(r->secret_files[1], "/etc/virtflow/upgradectrl.old.secret");
        }
        CHECK(r->n_headers == 2);
        if (r->n_headers == 2) {
            CHECK_STR(r->headers[0].name, "X-Team");
            CHECK_STR(r->headers[0].value, "infra\tplatform");
            CHECK_STR(r->headers[1].name, "Authorization-Hint");
        }
        CHECK(!r->enabled && r->max_in_flight == 1024 && r->timeout_s == 2.5);

        r = &c->relay.receivers[1]; /* everything not given takes the receiver defaults */
        CHECK_STR(r->name, "audit.log-1");
        CHECK_STR(r->secret_env, "AUDIT_WEBHOOK_SECRET");
        CHECK(r->n_events == 1 && r->events && !strcmp(r->events[0], "*"));
        CHECK(r->n_secret_files == 0 && r->n_headers == 0);
        CHECK(r->enabled && r->max_in_flight == 8 && r->timeout_s == 15);
    }
    config_free(c);
}

static void test_sources(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/sources.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->amqp.n_urls == 2);
    CHECK_STR(c->amqp.urls[1], "amqps://virtflow@rabbit-2.example:5671/prod");
    CHECK_STR(c->amqp.password_file, "/run/secrets/amqp-password");
    CHECK_STR(c->amqp.ca_file, FIXTURES "/valid/ca.pem");
    CHECK(c->amqp.prefetch == 65535 && c->amqp.heartbeat_s == 0);
    CHECK(c->amqp.single_active_consumer && c->amqp.max_message_bytes == 134217728);
    CHECK(c->inventory.source == CONFIG_INVENTORY_PROXMOX);
    CHECK_STR(c->inventory.url, "https://pve.example:8006");
    CHECK_STR(c->inventory.token_file, FIXTURES "/valid/pve.token");
    CHECK(c->inventory.refresh_s == 30 && c->inventory.timeout_s == 2.5);
    CHECK(c->inventory.max_age_s == 900);
    CHECK(c->scheduler.overcommit_cpu == 8 && c->scheduler.overcommit_memory == 1.5);
    CHECK(c->scheduler.reserve_cpu == 0.5 && c->scheduler.reserve_memory == 4096);
    CHECK(!c->scheduler.dedicated_exclusive && c->scheduler.subset_size == 3);
    CHECK(c->retry.max_attempts == 1 && c->retry.n_delays == 1 && c->retry.delays_s[0] == 0);
    CHECK(!c->spare.anti_affinity_strict);
    CHECK_STR(c->spare.provisioner.type, "gitlab");
    CHECK_STR(c->spare.provisioner.project, "1234");
    CHECK_STR(c->spare.provisioner.ref, "release");
    CHECK(c->spare.provisioner.timeout_s == 1200);
    CHECK_STR(c->spare.readiness.type, "kubernetes");
    CHECK_STR(c->spare.readiness.ca_file, FIXTURES "/valid/k8s-ca.pem");
    CHECK(c->spare.readiness.poll_s == 5);
    CHECK(c->log.level == VF_LOG_DEBUG);
    config_free(c);

    vf_error_init(&err);
    c = config_load(FIXTURES "/valid/command_provisioner.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->spare.provisioner.n_command == 3);
        if (c->spare.provisioner.n_command == 3) /* argv is not a path: never resolved */
            CHECK_STR(c->spare.provisioner.command[0], "/usr/local/bin/make-spare");
        CHECK_STR(c->spare.provisioner.command[2], "general");
    }
    config_free(c);
}

/* The shipped example must load, and its relative paths land beside it. */
static void test_example(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load("../deploy/config.example.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK_STR(c->inventory.path, "../deploy/inventory.example.yaml");
    CHECK_STR(c->store.path, "../deploy/virtflow.db");
    CHECK(c->amqp.queue_type == CONFIG_QUEUE_CLASSIC);
    CHECK(c->scheduler.n_plugins == 18);
    CHECK(c->relay.n_receivers == 1);
    if (c->relay.n_receivers == 1) {
        const config_receiver *r = &c->relay.receivers[0];
        CHECK_STR(r->name, "example");
        CHECK_STR(r->url, "http://127.0.0.1:8808/hooks");
        CHECK(r->n_events == 2 && !strcmp(r->events[1], "spare.*"));
        CHECK(r->n_secret_files == 1);
        if (r->n_secret_files == 1)
            CHECK_STR(r->secret_files[0], "../deploy/example-webhook.secret");
    }
    config_free(c);

    /* full.yaml is meant to be the same file, so the fixture tests test it. */
    char *example = test_read_file("../deploy/config.example.yaml", NULL);
    char *full = test_read_file(FIXTURES "/valid/full.yaml", NULL);
    CHECKF(example && full && !strcmp(example, full),
           "fixtures/config/valid/full.yaml differs from deploy/config.example.yaml");
    free(example);
    free(full);
}

/* /etc/virtflow/config.yaml saying `inventory.path: hosts.yaml` means
 * /etc/virtflow/hosts.yaml: tried in a temporary directory. */
static void test_relative_paths(void)
{
    char dir[] = "/tmp/vf-config-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    static const char text[] = "inventory:\n  path: hosts.yaml\n  token_file: /abs/pve.token\n"
                               "store:\n  path: data/virtflow.db\n";
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(path, &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        char want[160];
        snprintf(want, sizeof want, "%s/hosts.yaml", dir);
        CHECK_STR(c->inventory.path, want);
        snprintf(want, sizeof want, "%s/data/virtflow.db", dir);
        CHECK_STR(c->store.path, want);
        CHECK_STR(c->inventory.token_file, "/abs/pve.token");
    }
    config_free(c);

    /* From a string there is no file: relative to the working directory. */
    vf_error_init(&err);
    c = config_load_string(text, strlen(text), "inline", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK_STR(c->inventory.path, "hosts.yaml");
        CHECK_STR(c->store.path, "data/virtflow.db");
        CHECK(c->path == NULL);
    }
    config_free(c);
    unlink(path);
    rmdir(dir);
}

static void test_resolve(void)
{
    vf_error err;
    const char *plugins = FIXTURES "/valid/plugins.yaml";
    const char *sources = FIXTURES "/valid/sources.yaml";

    /* The system path only where it exists: absent, built-in defaults. */
    unsetenv("VIRTFLOW_CONFIG");
    vf_error_init(&err);
    vf_config *c = config_resolve_from(NULL, FIXTURES "/no-such-dir/config.yaml", &err);
    CHECK(c != NULL && c->path == NULL);
    if (c)
        check_defaults(c);
    config_free(c);

    setenv("VIRTFLOW_CONFIG", "", 1); /* empty means unset */
    c = config_resolve_from(NULL, NULL, &err);
    CHECK(c != NULL && c->path == NULL);
    config_free(c);

    /* No -c, no environment: the system file, where it exists (as
     * /etc/virtflow/config.yaml, where the units and the image put it). */
    c = config_resolve_from(NULL, plugins, &err);
    CHECK(c != NULL && c->path && !strcmp(c->path, plugins) && c->scheduler.n_plugins == 4);
    config_free(c);
    /* The environment and -c win over it. */
    setenv("VIRTFLOW_CONFIG", sources, 1);
    c = config_resolve_from(NULL, plugins, &err);
    CHECK(c != NULL && c->path && !strcmp(c->path, sources));
    config_free(c);
    c = config_resolve_from(sources, plugins, &err);
    CHECK(c != NULL && c->path && !strcmp(c->path, sources));
    config_free(c);
    unsetenv("VIRTFLOW_CONFIG");

    setenv("VIRTFLOW_CONFIG", plugins, 1);
    c = config_resolve(NULL, &err);
    CHECK(c != NULL && c->path && !strcmp(c->path, plugins) && c->scheduler.n_plugins == 4);
    config_free(c);

    /* -c wins over the environment */
    c = config_resolve(sources, &err);
    CHECK(c != NULL && c->path && !strcmp(c->path, sources) && c->scheduler.n_plugins == 0);
    config_free(c);

    setenv("VIRTFLOW_CONFIG", FIXTURES "/no-such-file.yaml", 1);
    vf_error_init(&err);
    c = config_resolve(NULL, &err);
    CHECK(c == NULL && err.code == VF_EIO);
    CHECK_CONTAINS(err.text, FIXTURES "/no-such-file.yaml: cannot open:");
    unsetenv("VIRTFLOW_CONFIG");
}

/* relay.trusted_publishers: the users whose events count. Unset, it means
 * the user names of amqp.urls (as amqp_link logs in: percent-decoded, guest
 * when a URL names none); set, only the names listed. */
static void test_trusted_publishers(void)
{
    static const char from_urls[] =
        "amqp:\n  urls: [\"amqp://virtflow-worker:pw@a:5672/\", \"amqp://w%40corp:pw@b/\",\n"
        "         \"amqp://c:5672/\"]\n";
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(from_urls, strlen(from_urls), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->relay.n_trusted_publishers == 0);
        CHECK(config_trusts_publisher(c, "virtflow-worker"));
        CHECK(config_trusts_publisher(c, "w@corp"));
        CHECK(config_trusts_publisher(c, "guest")); /* the third URL names no user */
        CHECK(!config_trusts_publisher(c, "pw") && !config_trusts_publisher(c, "virtflow-client"));
        CHECK(!config_trusts_publisher(c, NULL) && !config_trusts_publisher(c, ""));
    }
    config_free(c);

    static const char listed[] = "amqp:\n  urls: [\"amqp://virtflow-relay:pw@a/\"]\n"
                                 "relay:\n  trusted_publishers: [virtflow-worker, worker-b]\n";
    vf_error_init(&err);
    c = config_load_string(listed, strlen(listed), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->relay.n_trusted_publishers == 2);
        CHECK(config_trusts_publisher(c, "virtflow-worker") &&
              config_trusts_publisher(c, "worker-b"));
        CHECK(!config_trusts_publisher(c, "virtflow-relay")); /* the URL's user no longer counts */
        CHECK(!config_trusts_publisher(c, "virtflow-worke") &&
              !config_trusts_publisher(c, "virtflow-worker "));
    }
    config_free(c);
}

static void test_errors_in_detail(void)
{
    /* A URL's password never reaches an error message. */
    static const char bad_url[] = "amqp:\n  urls: [\"https://admin:hunter2@rabbit/\"]\n";
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(bad_url, strlen(bad_url), "c.yaml", &err);
    CHECK(c == NULL);
    CHECK(strstr(err.text, "hunter2") == NULL);
    CHECK_CONTAINS(err.text, "https://admin:***@rabbit/");

    /* Even when the URL is too mangled to find the user part. */
    static const char mangled[] = "amqp:\n  urls: [\"amqp:/admin:hunter2@rabbit/\"]\n";
    vf_error_init(&err);
    c = config_load_string(mangled, strlen(mangled), "c.yaml", &err);
    CHECK(c == NULL);
    CHECK(strstr(err.text, "hunter2") == NULL);
    CHECK_CONTAINS(err.text, "got \"***@rabbit/\"");

    /* A YAML syntax error gives file:line and libyaml's own words. */
    static const char broken[] = "log:\n  level: info\n  - debug\n";
    vf_error_init(&err);
    c = config_load_string(broken, strlen(broken), "c.yaml", &err);
    CHECK(c == NULL && err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, "c.yaml:3: ");

    /* A NUL inside a value would silently cut it short. */
    static const char nul[] = "store:\n  path: \"a\\0b.db\"\n";
    vf_error_init(&err);
    c = config_load_string(nul, strlen(nul), "c.yaml", &err);
    CHECK(c == NULL);
    CHECK_STR(err.text, "c.yaml:2: store.path: expected a string without NUL characters");

    /* NULL err is allowed. */
    CHECK(config_load_string(nul, strlen(nul), "c.yaml", NULL) == NULL);
}

/* worker.http_listen, relay.http_listen: on by default on loopback, null
 * turns them off, and a bad address is an error with its line; log.format. */
static void test_http_listen(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_defaults();
    CHECK_STR(c->worker.http_listen, "127.0.0.1:9464");
    CHECK_STR(c->relay.http_listen, "127.0.0.1:9465");
    CHECK(c->log.format == VF_LOG_FORMAT_TEXT);
    config_free(c);

    static const char off[] = "worker:\n  http_listen: null\nrelay:\n  http_listen: ~\n"
                              "log:\n  format: json\n";
    c = config_load_string(off, strlen(off), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->worker.http_listen == NULL && c->relay.http_listen == NULL);
        CHECK(c->log.format == VF_LOG_FORMAT_JSON);
    }
    config_free(c);

    static const char *const good[] = {"0.0.0.0:9464", "[::1]:0", "localhost:65535"};
    static const char *const bad[] = {"9464",  ":9464",    "[::1]9464", "::1:9464",
                                      "host:", "host:12x", "host:-1",   " host:1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0] + sizeof bad / sizeof bad[0]; i++) {
        bool ok = i < sizeof good / sizeof good[0];
        const char *value = ok ? good[i] : bad[i - sizeof good / sizeof good[0]];
        char text[128];
        snprintf(text, sizeof text, "worker:\n  http_listen: \"%s\"\n", value);
        vf_error_init(&err);
        c = config_load_string(text, strlen(text), "c.yaml", &err);
        CHECKF((c != NULL) == ok, "%s: %s", value, c ? "accepted" : err.text);
        if (c && ok)
            CHECK_STR(c->worker.http_listen, value);
        if (!ok)
            CHECK_CONTAINS(err.text, "c.yaml:2: worker.http_listen: expected HOST:PORT");
        config_free(c);
    }
}

/* store.retention: each unit, and the parser virtflowctl prune shares. */
static void test_retention(void)
{
    static const struct {
        const char *text;
        int64_t seconds;
    } good[] = {{"90s", 90}, {"45m", 2700}, {"12h", 43200}, {"30d", 2592000}, {"1s", 1}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char yaml[64];
        snprintf(yaml, sizeof yaml, "store:\n  retention: %s\n", good[i].text);
        vf_error err;
        vf_error_init(&err);
        vf_config *c = config_load_string(yaml, strlen(yaml), "c.yaml", &err);
        CHECKF(c && c->store.retention_s == good[i].seconds, "%s: %s", good[i].text, err.text);
        config_free(c);
    }
    static const char *bad[] = {"",
                                "s",
                                "10",
                                "10 s",
                                " 10s",
                                "10S",
                                "1.5h",
                                "+5s",
                                "-5s",
                                "0d",
                                "10ss",
                                "36501d",
                                "99999999999999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t seconds = -7;
        CHECKF(config_parse_duration(bad[i], &seconds) < 0 && seconds == -7, "\"%s\" accepted",
               bad[i]);
    }
    int64_t seconds = 0;
    CHECK(config_parse_duration("36500d", &seconds) == 0 && seconds == 36500LL * 86400);
    /* null keeps the default */
    static const char null_value[] = "store:\n  retention: null\n";
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(null_value, strlen(null_value), "c.yaml", &err);
    CHECK(c && c->store.retention_s == 30LL * 86400);
    config_free(c);
}

/* spare.clusters, spare.release.kubernetes, spare.max_age and
 * spare.provisioner.api_token_file (UpgradeCtrl's whole spare flow). */
static void test_spare_clusters(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_defaults();
    CHECK(c && c->spare.n_clusters == 0 && c->spare.max_age_s == 0);
    if (c) {
        CHECK_STR(c->spare.release_kubernetes, "none");
        CHECK(c->spare.provisioner.api_token_file == NULL);
        CHECK(config_spare_cluster(c, "prod-a") == NULL);
    }
    config_free(c);
    static const char yaml[] =
        "spare:\n"
        "  provisioner: {api_token_file: /etc/virtflow/gitlab-api.token}\n"
        "  clusters:\n"
        "    prod-a: {api_url: \"https://a.example:6443\", token_file: a.token}\n"
        "    prod-b:\n"
        "      api_url: https://b.example:6443\n"
        "      token_file: /etc/virtflow/b.token\n"
        "      ca_file: /etc/virtflow/b-ca.pem\n"
        "  release: {kubernetes: drain_delete}\n"
        "  max_age: 2d\n";
    c = config_load_string(yaml, strlen(yaml), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->spare.n_clusters == 2);
    const config_cluster *b = config_spare_cluster(c, "prod-b");
    CHECK(b && !strcmp(b->api_url, "https://b.example:6443") &&
          !strcmp(b->ca_file, "/etc/virtflow/b-ca.pem"));
    const config_cluster *a = config_spare_cluster(c, "prod-a");
    CHECK(a && a->ca_file == NULL && !strcmp(a->token_file, "a.token"));
    CHECK(config_spare_cluster(c, "prod-z") == NULL);
    CHECK_STR(c->spare.release_kubernetes, "drain_delete");
    CHECK(c->spare.max_age_s == 2 * 86400);
    CHECK_STR(c->spare.provisioner.api_token_file, "/etc/virtflow/gitlab-api.token");
    config_free(c);
}

/* store.url replaces the SQLite path; its files resolve like the others. */
static void test_store_postgresql(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/store_postgresql.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->store.path == NULL);
    CHECK_STR(c->store.url, "postgresql://virtflow@db.example:5432/virtflow");
    CHECK_STR(c->store.password_file, FIXTURES "/valid/store.password");
    CHECK_STR(c->store.ca_file, "/etc/ssl/certs/db-ca.pem");
    CHECK(c->store.tls_verify);
    CHECK(c->store.statement_timeout_ms == 10000);
    config_free(c);
}

/* scheduler.profiles: each profile its own strategy and plugins (its
 * plugin_config's entries first), none inheriting the scheduler section's
 * plugins; a profile without keys is spread with the defaults. */
static void test_profiles(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/profiles.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->scheduler.n_plugins == 1);
    CHECK(c->scheduler.n_profiles == 3);
    if (c->scheduler.n_profiles == 3) {
        const config_profile *packer = &c->scheduler.profiles[0];
        CHECK_STR(packer->name, "packer");
        CHECK_STR(packer->section, "scheduler.profiles.packer");
        CHECK(packer->strategy == CONFIG_STRATEGY_PACK && packer->n_plugins == 0);
        const config_profile *gpu = config_scheduler_profile(c, "gpu-only");
        CHECK(gpu == &c->scheduler.profiles[1]);
        CHECK(gpu && gpu->strategy == CONFIG_STRATEGY_SPREAD && gpu->n_plugins == 4);
        if (gpu && gpu->n_plugins == 4) {
            CHECK_STR(gpu->plugins[0].name, "CPUOvercommit");
            CHECK(gpu->plugins[0].file == gpu->plugin_config);
            CHECK_STR(gpu->plugins[0].section, "scheduler.profiles.gpu-only");
            CHECK_STR(gpu->plugins[3].name, "Disk");
            CHECK(!gpu->plugins[3].enable && gpu->plugins[3].file == NULL &&
                  gpu->plugins[3].line == 14);
            CHECK_STR(gpu->plugins[3].section, "scheduler.profiles.gpu-only");
        }
        const config_profile *bare = &c->scheduler.profiles[2];
        CHECK_STR(bare->name, "bare");
        CHECK(bare->strategy == CONFIG_STRATEGY_SPREAD && bare->n_plugins == 0);
    }
    CHECK(config_scheduler_profile(c, "default") == NULL);
    CHECK(config_scheduler_profile(c, "nope") == NULL);
    config_free(c);
}

/* scheduler.priority_classes: value and preemption per class (preemption
 * lower by default), looked up by name; the default class. */
static void test_priority_classes(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load(FIXTURES "/valid/priority_classes.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->scheduler.n_priority_classes == 3);
    const config_priority_class *high = config_priority_class_named(c, "high");
    CHECK(high && high->value == 1000 && high->preemption == CONFIG_PREEMPT_LOWER);
    const config_priority_class *low = config_priority_class_named(c, "low");
    CHECK(low && low->value == -10 && low->preemption == CONFIG_PREEMPT_NEVER);
    const config_priority_class *normal = config_priority_class_named(c, "normal");
    CHECK(normal && normal->value == 0 && normal->preemption == CONFIG_PREEMPT_LOWER);
    CHECK(config_priority_class_named(c, "gold") == NULL);
    CHECK_STR(c->scheduler.default_priority_class, "normal");
    config_free(c);
}

/* ---- VIRTFLOW_* environment overrides ---- */

typedef struct env_names_seen {
    char names[256][128];
    size_t n, settable, duplicates;
} env_names_seen;

static int collect_env_name(const char *name, const char *key, bool settable, void *user)
{
    env_names_seen *seen = user;
    for (size_t i = 0; i < seen->n; i++)
        if (!strcmp(seen->names[i], name)) {
            seen->duplicates++;
            fprintf(stderr, "%s: two keys share this variable (%s)\n", name, key);
        }
    if (seen->n < 256)
        snprintf(seen->names[seen->n++], sizeof seen->names[0], "%s", name);
    seen->settable += settable;
    return 0;
}

/* The rule (VIRTFLOW_ + the key path in capitals, '.' as '_') keeps single
 * underscores, so two key paths could in principle make one name
 * (a.b_c, a_b.c): the table must never have such a pair. */
static void test_env_names(void)
{
    static env_names_seen seen;
    CHECK(config_env_each(collect_env_name, &seen) == 0);
    CHECKF(seen.duplicates == 0, "%zu variables name two keys", seen.duplicates);
    CHECKF(seen.settable > 60, "%zu keys settable from the environment", seen.settable);
    char name[64];
    CHECK(config_env_name("amqp.urls", name, sizeof name) == 0);
    CHECK_STR(name, "VIRTFLOW_AMQP_URLS");
    CHECK(config_env_name("scheduler.overcommit.cpu", name, sizeof name) == 0);
    CHECK_STR(name, "VIRTFLOW_SCHEDULER_OVERCOMMIT_CPU");
    CHECK(config_env_name("inventory.max_age_s", name, 10) == -1);
}

/* Applies `vars` (NULL-terminated) over `yaml`. Returns the config, or NULL
 * with err. */
static vf_config *with_env(const char *yaml, const char *const *vars, vf_error *err)
{
    vf_error_init(err);
    vf_config *c = config_load_string(yaml, strlen(yaml), "test.yaml", err);
    if (c && config_apply_environment(c, vars, err) < 0) {
        config_free(c);
        c = NULL;
    }
    return c;
}

static void test_env_overrides(void)
{
    vf_error err;
    /* Over the file, with the file's own checks; each key says where it came from. */
    const char *over[] = {"PATH=/usr/bin",
                          "VIRTFLOW_LOG_LEVEL=debug",
                          "VIRTFLOW_RETRY_DELAYS_S= 1, 2 ,3",
                          "VIRTFLOW_AMQP_URLS=amqp://a:pw@h1:5672/,amqp://b@h2/",
                          "VIRTFLOW_SCHEDULER_OVERCOMMIT_CPU=2.5",
                          "VIRTFLOW_STORE_RETENTION=2d",
                          "VIRTFLOW_INVENTORY_PATH=hosts.yaml",
                          "VIRTFLOW_WORKER_HTTP_LISTEN=null",
                          "VIRTFLOW_SCHEDULER_UNFIT_REQUESTS=wait",
                          "VIRTFLOW_LOG_LEVEL=error",     /* the first of two wins, as getenv's */
                          "VIRTFLOW_RETRY_MAX_ATTEMPTS=", /* empty: not set */
                          "VIRTFLOW_CONFIG=/elsewhere.yaml",
                          "VIRTFLOW_VM_NAME=spare-1", /* a provisioner's, not a key */
                          NULL};
    vf_config *c = with_env("log:\n  level: warn\nretry:\n  max_attempts: 7\n", over, &err);
    CHECKF(c != NULL, "%s", err.text);
    if (c) {
        CHECK(c->log.level == VF_LOG_DEBUG);
        CHECK(c->retry.n_delays == 3 && c->retry.delays_s[0] == 1 && c->retry.delays_s[2] == 3);
        CHECK(c->amqp.n_urls == 2);
        CHECK_STR(c->amqp.n_urls == 2 ? c->amqp.urls[1] : NULL, "amqp://b@h2/");
        CHECK(c->scheduler.overcommit_cpu == 2.5);
        CHECK(c->store.retention_s == 2 * 86400);
        CHECK_STR(c->inventory.path, "hosts.yaml"); /* the working directory's */
        CHECK(c->worker.http_listen == NULL);
        CHECK(c->scheduler.unfit_requests == CONFIG_UNFIT_WAIT);
        CHECK(c->retry.max_attempts == 7); /* the file's */
        CHECK(c->n_env == 8);
        CHECK_STR(config_key_origin(c, "log.level"), "VIRTFLOW_LOG_LEVEL");
        CHECK_STR(config_key_origin(c, "amqp.urls"), "VIRTFLOW_AMQP_URLS");
        CHECK(config_key_origin(c, "retry.max_attempts") == NULL);
        CHECK(!config_is_builtin(c));
    }
    config_free(c);

    /* Without a file: only a broker or store chosen counts as configured. */
    const char *log_only[] = {"VIRTFLOW_LOG_FORMAT=json", NULL};
    c = config_defaults();
    CHECK(c && config_is_builtin(c));
    CHECK(c && config_apply_environment(c, log_only, &err) == 0 && config_is_builtin(c) &&
          c->log.format == VF_LOG_FORMAT_JSON);
    const char *broker[] = {"VIRTFLOW_AMQP_URLS=amqp://x@broker/", NULL};
    CHECK(c && config_apply_environment(c, broker, &err) == 0 && !config_is_builtin(c));
    config_free(c);

    /* Errors name the variable and the key, never a line. */
    static const struct {
        const char *var, *message;
    } bad[] = {
        {"VIRTFLOW_RETRY_MAX_ATTEMPTS=0",
         "VIRTFLOW_RETRY_MAX_ATTEMPTS: retry.max_attempts: expected an integer >= 1"},
        {"VIRTFLOW_LOG_LEVEL=loud", "VIRTFLOW_LOG_LEVEL: log.level: expected one of debug|info"},
        {"VIRTFLOW_AMQP_URLS=amqp://a@h/,http://u:secret@x/",
         "VIRTFLOW_AMQP_URLS: amqp.urls[1]: expected an amqp:// or amqps:// URL, got "
         "\"http://u:***@x/\""},
        {"VIRTFLOW_RETRY_DELAYS_S=5,,30", "VIRTFLOW_RETRY_DELAYS_S: retry.delays_s[1]: expected"},
        {"VIRTFLOW_AMQP_PREFETCH=\"5\"", "VIRTFLOW_AMQP_PREFETCH: amqp.prefetch: expected an"},
        {"VIRTFLOW_AMQP_URL=amqp://h/", "VIRTFLOW_AMQP_URL: names no configuration key of amqp"},
        {"VIRTFLOW_RELAY_RECEIVERS=x",
         "VIRTFLOW_RELAY_RECEIVERS: relay.receivers cannot be set from the environment"},
        {"VIRTFLOW_SCHEDULER_PLUGIN_CONFIG=p.yaml",
         "VIRTFLOW_SCHEDULER_PLUGIN_CONFIG: scheduler.plugin_config cannot be set"},
        {"VIRTFLOW_INVENTORY_REFRESH_S=400",
         "environment (VIRTFLOW_INVENTORY_REFRESH_S): inventory.max_age_s: 300 must be greater"},
        {"VIRTFLOW_STORE_PASSWORD_FILE=pw",
         "VIRTFLOW_STORE_PASSWORD_FILE: store.password_file: only used with store.url"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *vars[] = {bad[i].var, NULL};
        c = with_env("", vars, &err);
        CHECKF(c == NULL && err.code == VF_ECONFIG, "%s accepted", bad[i].var);
        CHECKF(strncmp(err.text, bad[i].message, strlen(bad[i].message)) == 0, "%s: got \"%s\"",
               bad[i].var, err.text);
        CHECKF(!strstr(err.text, "secret"), "%s: the password shows: %s", bad[i].var, err.text);
        config_free(c);
    }

    /* A receiver's secret_env is its own business, whatever its name. */
    const char *secret[] = {"VIRTFLOW_RELAY_SECRET=whsec_x", NULL};
    c = with_env("relay:\n  receivers:\n    - name: r\n      url: http://127.0.0.1:1/\n"
                 "      secret_env: VIRTFLOW_RELAY_SECRET\n",
                 secret, &err);
    CHECKF(c != NULL && c->n_env == 0, "%s", err.text);
    config_free(c);

    /* store.url from the environment over a file's path chooses PostgreSQL,
     * and store.path over a file's url SQLite; both in the environment is
     * the file's error. */
    const char *url[] = {"VIRTFLOW_STORE_URL=postgresql://v@db:5432/v", NULL};
    c = with_env("store:\n  path: a.db\n", url, &err);
    CHECKF(c != NULL && c->store.path == NULL && c->store.url, "%s", err.text);
    config_free(c);
    const char *path[] = {"VIRTFLOW_STORE_PATH=/tmp/b.db", NULL};
    c = with_env("store:\n  url: postgresql://v@db/v\n", path, &err);
    CHECKF(c != NULL && c->store.url == NULL, "%s", err.text);
    CHECK_STR(c ? c->store.path : NULL, "/tmp/b.db");
    config_free(c);
    const char *both[] = {"VIRTFLOW_STORE_PATH=b.db", "VIRTFLOW_STORE_URL=postgresql://v@db/v",
                          NULL};
    c = with_env("", both, &err);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.text, "store: both path (SQLite) and url (PostgreSQL) are set");
    config_free(c);

    /* config_resolve applies the process's environment. */
    unsetenv("VIRTFLOW_CONFIG");
    setenv("VIRTFLOW_RETRY_MAX_ATTEMPTS", "9", 1);
    c = config_resolve_from(FIXTURES "/valid/plugins.yaml", NULL, &err);
    CHECK(c != NULL && c->retry.max_attempts == 9 && c->path != NULL);
    config_free(c);
    setenv("VIRTFLOW_RETRY_MAX_ATTEMPTS", "many", 1);
    vf_error_init(&err);
    c = config_resolve_from(NULL, NULL, &err);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.text, "VIRTFLOW_RETRY_MAX_ATTEMPTS: retry.max_attempts");
    unsetenv("VIRTFLOW_RETRY_MAX_ATTEMPTS");
}

typedef struct reported {
    char text[2048];
    int keeps, warns, refuses;
} reported;

static void report_rule(const config_rule *rule, const char *why, void *user)
{
    reported *r = user;
    size_t n = strlen(r->text);
    snprintf(r->text + n, sizeof r->text - n, "%s\n", why);
    r->keeps += rule->outcome == CONFIG_RULE_KEEPS;
    r->warns += rule->outcome == CONFIG_RULE_WARNS;
    r->refuses += rule->outcome == CONFIG_RULE_REFUSES;
}

static reported rules_of(const char *text, const char *program, int *rc, vf_error *err)
{
    reported r = {0};
    vf_error_init(err);
    vf_config *c = config_load_string(text, strlen(text), "c.yaml", err);
    CHECKF(c != NULL, "%s", err->text);
    *rc = c ? config_check_rules(c, program, report_rule, &r, err) : -2;
    config_free(c);
    return r;
}

/* Keys that must agree (config_rules.c): what each pair does, the table the
 * reference lists, and config_resolve refusing a contradiction (issue 34). */
static void test_rules(void)
{
    vf_error err;
    int rc;
    reported r = rules_of("amqp: {urls: [\"amqp://guest@h/\"]}\n", NULL, &rc, &err);
    CHECK(rc == 0 && r.keeps == 0 && r.warns == 0 && r.refuses == 0);

    /* A short retention: kept longer (two windows), said, not refused. */
    r = rules_of("store: {retention: 5s}\n", "virtflow-worker", &rc, &err);
    CHECK(rc == 0 && r.keeps == 2 && r.refuses == 0);
    CHECK_CONTAINS(r.text, "store.retention (5 s) is shorter than inventory.max_age_s (300 s)");
    CHECK_CONTAINS(r.text, "kept 300 s");
    CHECK_CONTAINS(r.text, "the longest of retry.delays_s (600 s)");
    CHECK(config_bound_reservation_keep_s(&(vf_config){.inventory.max_age_s = 300}) == 300);

    /* A reservation that ends before the refresh that could show its VM. */
    r = rules_of("inventory: {refresh_s: 30, max_age_s: 300}\nscheduler: {reservation_ttl_s: 30}\n",
                 NULL, &rc, &err);
    CHECK(rc == -1 && err.code == VF_ECONFIG && r.refuses == 1);
    CHECK_CONTAINS(err.text, "scheduler.reservation_ttl_s (30 s) is not longer than "
                             "inventory.refresh_s (30 s)");

    /* A preemption grace within a refresh is refused, whichever section
     * comes first; one past it is not, whichever comes first. */
    const char *graces[] = {"inventory: {refresh_s: 30}\nscheduler: {preemption_grace_s: 30}\n",
                            "scheduler: {preemption_grace_s: 30}\ninventory: {refresh_s: 30}\n",
                            "inventory: {refresh_s: 300, max_age_s: 900}\n"};
    for (size_t g = 0; g < sizeof graces / sizeof graces[0]; g++) {
        r = rules_of(graces[g], NULL, &rc, &err);
        CHECKF(rc == -1 && r.refuses == 1, "%s", graces[g]);
        CHECK_CONTAINS(err.text, "is not longer than inventory.refresh_s");
    }
    r = rules_of("scheduler: {preemption_grace_s: 2}\ninventory: {refresh_s: 1}\n", NULL, &rc,
                 &err);
    CHECK(rc == 0 && r.refuses == 0);

    /* The worker's own login not trusted: the worker is warned, not the relay. */
    const char *untrusted = "amqp: {urls: [\"amqp://worker@h/\"]}\n"
                            "relay: {trusted_publishers: [someone-else]}\n";
    r = rules_of(untrusted, "virtflow-worker", &rc, &err);
    CHECK(rc == 0 && r.warns == 1);
    CHECK_CONTAINS(r.text, "does not name worker");
    r = rules_of(untrusted, "virtflow-relay", &rc, &err);
    CHECK(rc == 0 && r.warns == 0);

    /* Every rule has its words for the reference. */
    size_t n = 0;
    const config_rule *rules = config_rules(&n);
    CHECK(n >= 5);
    for (size_t i = 0; i < n; i++)
        CHECK(rules[i].keys && rules[i].relation && rules[i].guarantee && rules[i].handling);

    /* config_resolve (every program's start, config check) refuses it. */
    char path[] = "/tmp/vf-test-rules-XXXXXX";
    int fd = mkstemp(path);
    const char *bad = "scheduler: {reservation_ttl_s: 5}\ninventory: {refresh_s: 10}\n";
    CHECK(fd >= 0 && write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    vf_error_init(&err);
    vf_config *c = config_resolve(path, &err);
    CHECK(c == NULL && err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, "reservation_ttl_s (5 s)");
    config_free(c);
    /* ... unless a variable over the file mends it. */
    setenv("VIRTFLOW_SCHEDULER_RESERVATION_TTL_S", "60", 1);
    vf_error_init(&err);
    c = config_resolve(path, &err);
    CHECKF(c != NULL, "%s", err.text);
    config_free(c);
    unsetenv("VIRTFLOW_SCHEDULER_RESERVATION_TTL_S");
    unlink(path);
}

int main(void)
{
    test_rules();
    test_valid_fixtures();
    test_store_postgresql();
    test_spare_clusters();
    test_invalid_fixtures();
    test_defaults();
    test_plugins();
    test_plugin_config_file();
    test_target_load_args();
    test_profiles();
    test_priority_classes();
    test_receivers();
    test_sources();
    test_example();
    test_relative_paths();
    test_resolve();
    test_errors_in_detail();
    test_trusted_publishers();
    test_retention();
    test_http_listen();
    test_env_names();
    test_env_overrides();
    return test_summary();
}
