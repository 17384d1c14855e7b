/* The file source and the inventory handle, driven by fixtures:
 *   fixtures/inventory/file/valid/<case>.{yaml,json} + <case>.hosts (expected hosts, one per line)
 *   fixtures/inventory/file/invalid/<case>.{yaml,json} + <case>.error (expected message after
 * "<path>: ") plus the example inventory shipped in deploy/. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inventory.h"
#include "source.h"
#include "testlib.h"

#define VALID_DIR "fixtures/inventory/file/valid"
#define INVALID_DIR "fixtures/inventory/file/invalid"

/* One line per host with every field, then the used vmids: what the .hosts files hold. */
static char *dump_hostset(const hostset *set)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    for (size_t i = 0; i < set->n_hosts; i++) {
        const host *h = &set->hosts[i];
        /* A usage the inventory did not give prints as "-", not as 0. */
        char usage_cpu[32] = "-", usage_mem[32] = "-";
        if (h->has_usage_cpu)
            snprintf(usage_cpu, sizeof usage_cpu, "%g", h->usage_cpu);
        if (h->has_usage_mem)
            snprintf(usage_mem, sizeof usage_mem, "%g", h->usage_mem);
        fprintf(out,
                "%s ip=%s pool=%s dedicated=%s model=%s status=%s cpu=%g memory=%lld "
                "storage=%lld usage_cpu=%s usage_mem=%s allocated_cpu=%g allocated_memory=%lld "
                "max_vms=%d current_vms=%d\n",
                h->name, h->ip, h->pool, h->dedicated ? "true" : "false", h->model,
                host_status_name(h->status), h->cpu, (long long)h->memory, (long long)h->storage,
                usage_cpu, usage_mem, h->allocated_cpu, (long long)h->allocated_memory, h->max_vms,
                h->current_vms);
        /* Traits, resources and labels only when the host has some. */
        const trait_set *traits = h->traits ? &h->traits->traits : NULL;
        const resource_amounts *resources = h->traits ? &h->traits->resources : NULL;
        for (size_t t = 0; traits && t < traits->n; t++)
            fprintf(out, "%s%s", t ? " " : "  traits:", traits->names[t]);
        if (traits && traits->n)
            fputc('\n', out);
        for (size_t r = 0; resources && r < resources->n; r++)
            fprintf(out, "%s%s=%lld", r ? " " : "  resources:", resources->items[r].name,
                    (long long)resources->items[r].amount);
        if (resources && resources->n)
            fputc('\n', out);
        const label_set *labels = h->traits ? &h->traits->labels : NULL;
        for (size_t l = 0; labels && l < labels->n; l++)
            fprintf(out, "%s%s=%s", l ? " " : "  labels:", labels->items[l].key,
                    labels->items[l].value);
        if (labels && labels->n)
            fputc('\n', out);
    }
    fputs("vmids:", out);
    for (size_t i = 0; i < set->n_used_vmids; i++)
        fprintf(out, " %u", set->used_vmids[i]);
    fputc('\n', out);
    fclose(out);
    return text;
}

static void trim_newline(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

static bool is_input(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
           (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of input files in dir; returns the count (0 when missing). */
static size_t list_inputs(const char *dir, char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    char **names = NULL;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (!is_input(entry->d_name))
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown)
            break;
        names = grown;
        names[n++] = strdup(entry->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    *out = names;
    return n;
}

static void companion_path(char *buf, size_t size, const char *dir, const char *input,
                           const char *ext)
{
    size_t stem = strlen(input) - 5;
    snprintf(buf, size, "%s/%.*s%s", dir, (int)stem, input, ext);
}

static void test_valid_fixtures(void)
{
    char **names;
    size_t n = list_inputs(VALID_DIR, &names);
    CHECKF(n >= 4, "only %zu valid fixtures found", n);
    for (size_t i = 0; i < n; i++) {
        char path[512], expected_path[512];
        snprintf(path, sizeof path, "%s/%s", VALID_DIR, names[i]);
        companion_path(expected_path, sizeof expected_path, VALID_DIR, names[i], ".hosts");
        char *expected = test_read_file(expected_path, NULL);
        CHECKF(expected != NULL, "missing %s", expected_path);
        vf_error err;
        vf_error_init(&err);
        hostset *set = source_file_fetch(path, &err);
        CHECKF(set != NULL, "%s: %s", path, err.text);
        char *got = set ? dump_hostset(set) : NULL;
        if (got && expected)
            CHECKF(strcmp(got, expected) == 0, "%s:\n--- got\n%s--- want\n%s", path, got, expected);
        free(got);
        free(expected);
        hostset_free(set);
        free(names[i]);
    }
    free(names);
}

static void test_invalid_fixtures(void)
{
    char **names;
    size_t n = list_inputs(INVALID_DIR, &names);
    CHECKF(n >= 15, "only %zu invalid fixtures found", n);
    for (size_t i = 0; i < n; i++) {
        char path[512], error_path[512], want[1024];
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, names[i]);
        companion_path(error_path, sizeof error_path, INVALID_DIR, names[i], ".error");
        char *expected = test_read_file(error_path, NULL);
        CHECKF(expected != NULL, "missing %s", error_path);
        if (expected) {
            trim_newline(expected);
            snprintf(want, sizeof want, "%s: %s", path, expected);
            vf_error err;
            vf_error_init(&err);
            hostset *set = source_file_fetch(path, &err);
            CHECKF(set == NULL, "%s was accepted", path);
            CHECK(err.code == VF_EINVAL);
            CHECK_STR(err.text, want);
            hostset_free(set);
        }
        free(expected);
        free(names[i]);
    }
    free(names);
}

static void test_example_inventory(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = source_file_fetch("../deploy/inventory.example.yaml", &err);
    CHECKF(set != NULL, "%s", err.text);
    if (!set)
        return;
    CHECK(set->n_hosts >= 8 && set->n_hosts <= 12);
    CHECK(hostset_pool_id(set, "default") >= 0);
    CHECK(hostset_pool_id(set, "general") >= 0);
    CHECK(hostset_pool_id(set, "ai") >= 0);
    size_t dedicated = 0, maintenance = 0, offline = 0;
    for (size_t i = 0; i < set->n_hosts; i++) {
        dedicated += set->hosts[i].dedicated;
        maintenance += set->hosts[i].status == HOST_MAINTENANCE;
        offline += set->hosts[i].status == HOST_OFFLINE;
    }
    CHECK(dedicated >= 2);
    CHECK(maintenance == 1);
    CHECK(offline == 1);
    const host *bm2 = hostset_find(set, "bm-002");
    CHECK(bm2 && bm2->allocated_memory == 26214); /* 0.20 x 131072, derived */
    CHECK(hostset_vmid_used(set, 9000));          /* top-level vmids */
    CHECK(hostset_vmid_used(set, 300));           /* a host's vmids */
    CHECK(!hostset_vmid_used(set, 106));
    hostset_free(set);
}

static double fake_now;
static double fake_clock(void *context)
{
    (void)context;
    return fake_now;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* An inventory of the file at `path` (inventory_new copies what it needs),
 * or NULL, the test failed. */
static inventory *file_inventory(const char *path)
{
    vf_config config;
    memset(&config, 0, sizeof config);
    config.inventory.source = CONFIG_INVENTORY_FILE;
    config.inventory.path = (char *)path;
    config.inventory.tls_verify = true;
    vf_error err;
    vf_error_init(&err);
    inventory *inv = inventory_new(&config, &err);
    CHECKF(inv != NULL, "%s", err.text);
    return inv;
}

static void test_refresh_keeps_last_good_snapshot(void)
{
    char dir[] = "/tmp/vf-inventory-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/hosts.yaml", dir);
    CHECK(write_file(path, "- {name: bm-001, cpu: 8, memory: 16384}\n") == 0);

    vf_error err;
    vf_error_init(&err);
    inventory *inv = file_inventory(path);
    if (!inv)
        return;
    inventory_set_clock(inv, fake_clock, NULL);

    /* Before any refresh there is nothing to decide over, and the view says so. */
    inventory_view view;
    char why_buf[512];
    const char *why = why_buf; /* a pointer, so the CHECK macros can test it for NULL */
    inventory_acquire(inv, &view);
    CHECK(view.hosts == NULL && view.stale);
    CHECK(inventory_view_describe(&view, why_buf, sizeof why_buf));
    CHECK_CONTAINS(why, "no inventory yet");
    inventory_release(&view);

    fake_now = 100;
    CHECK(inventory_refresh(inv, &err) == 0);
    inventory_acquire(inv, &view);
    CHECK(view.hosts && view.hosts->n_hosts == 1 && !view.stale);
    CHECK(!inventory_view_describe(&view, why_buf, sizeof why_buf));
    CHECK(why[0] == '\0');
    inventory_release(&view);

    /* An edit breaks the file: the old hosts stay, and decisions can say why. */
    CHECK(write_file(path, "- {name: bm-001, cpu: 0, memory: 16384}\n") == 0);
    fake_now = 142;
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == -1);
    CHECK_CONTAINS(err.text, "cpu: expected a number > 0");
    inventory_view held;
    inventory_acquire(inv, &held);
    CHECK(held.hosts && held.hosts->n_hosts == 1);
    CHECK(held.stale);
    CHECK(held.age_s == 42);
    CHECK(inventory_view_describe(&held, why_buf, sizeof why_buf));
    char want[512];
    snprintf(want, sizeof want,
             "inventory is stale (42 s old): %s: host 1 (bm-001): cpu: expected a number > 0",
             path);
    CHECK_STR(why, want);

    /* Fixed again: a new snapshot replaces the old one, while a view taken
     * before still sees its own snapshot intact. */
    CHECK(write_file(path, "- {name: bm-001, cpu: 8, memory: 16384}\n"
                           "- {name: bm-002, cpu: 8, memory: 16384}\n") == 0);
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == 0);
    inventory_acquire(inv, &view);
    CHECK(view.hosts && view.hosts->n_hosts == 2 && !view.stale && view.age_s == 0);
    CHECK(held.hosts->n_hosts == 1 && strcmp(held.hosts->hosts[0].name, "bm-001") == 0);
    inventory_release(&held);
    inventory_release(&view);
    inventory_release(&view); /* a cleared view is fine */

    /* inventory_fetch leaves the cache alone. */
    hostset *fetched = inventory_fetch(inv, &err);
    CHECK(fetched && fetched->n_hosts == 2);
    hostset_free(fetched);

    /* A reload points it at another file: the snapshot stays until the next
     * refresh, which reads the new file. */
    char other[256];
    snprintf(other, sizeof other, "%s/other.yaml", dir);
    CHECK(write_file(other, "- {name: bm-100, cpu: 8, memory: 16384}\n") == 0);
    inventory *next = file_inventory(other);
    if (next) {
        inventory_adopt_settings(inv, next);
        inventory_acquire(inv, &view);
        CHECK(view.hosts && view.hosts->n_hosts == 2);
        inventory_release(&view);
        vf_error_init(&err);
        CHECK(inventory_refresh(inv, &err) == 0);
        inventory_acquire(inv, &view);
        CHECK(view.hosts && view.hosts->n_hosts == 1 &&
              strcmp(view.hosts->hosts[0].name, "bm-100") == 0);
        inventory_release(&view);
    }
    remove(other);

    inventory_free(inv);
    inventory_free(NULL);
    remove(path);
    rmdir(dir);
}

/* The same bytes read again keep the snapshot (the file is not parsed
 * again), fetched anew; other bytes are parsed, whatever the file's size and
 * time say. */
static void test_refresh_same_bytes(void)
{
    char dir[] = "/tmp/vf-inventory-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/hosts.yaml", dir);
    const char *text = "- {name: bm-001, cpu: 8, memory: 16384}\n";
    CHECK(write_file(path, text) == 0);
    vf_error err;
    vf_error_init(&err);
    inventory *inv = file_inventory(path);
    if (!inv)
        return;
    inventory_set_clock(inv, fake_clock, NULL);

    fake_now = 100;
    CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
    inventory_view first;
    inventory_acquire(inv, &first);
    CHECK(first.hosts && first.hosts->n_hosts == 1 && first.fetch == 1);

    /* Unchanged, then rewritten with the same bytes (a new mtime): kept. */
    inventory_view view;
    for (int round = 0; round < 2; round++) {
        fake_now += 30;
        if (round == 1)
            CHECK(write_file(path, text) == 0);
        CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
        inventory_acquire(inv, &view);
        CHECK(view.hosts == first.hosts && view.fetch == first.fetch + 1 + (uint64_t)round &&
              view.age_s == 0 && !view.stale);
        inventory_release(&view);
    }

    /* One byte changed, the size and the modification time as they were: parsed. */
    struct stat was;
    CHECK(stat(path, &was) == 0);
    CHECK(write_file(path, "- {name: bm-001, cpu: 9, memory: 16384}\n") == 0);
    struct timespec times[2] = {was.st_atim, was.st_mtim};
    CHECK(utimensat(AT_FDCWD, path, times, 0) == 0);
    fake_now += 30;
    CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
    inventory_acquire(inv, &view);
    CHECK(view.hosts && view.hosts != first.hosts && view.hosts->hosts[0].cpu == 9);
    const hostset *nine = view.hosts;
    inventory_release(&view);
    /* A view taken before keeps its own hosts. */
    CHECK(first.hosts->n_hosts == 1 && first.hosts->hosts[0].cpu == 8);
    inventory_release(&first);

    /* Broken, then back to the bytes of the snapshot kept meanwhile: that
     * snapshot, fresh again. */
    CHECK(write_file(path, "- {name: bm-001, cpu: 0, memory: 16384}\n") == 0);
    fake_now += 30;
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == -1);
    CHECK(write_file(path, "- {name: bm-001, cpu: 9, memory: 16384}\n") == 0);
    fake_now += 30;
    vf_error_init(&err);
    CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
    inventory_acquire(inv, &view);
    CHECK(view.hosts == nine && !view.stale && view.age_s == 0 && view.error[0] == '\0');
    inventory_release(&view);

    /* Gone: an error naming the file, the snapshot kept. */
    remove(path);
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == -1);
    CHECK_CONTAINS(err.text, "cannot open");
    inventory_acquire(inv, &view);
    CHECK(view.hosts == nine && view.stale);
    inventory_release(&view);
    inventory_free(inv);
    rmdir(dir);
}

/* A pipe is parsed as it comes, every time: never hashed first (it could
 * not be read again). A writer gives one host, then two. */
static void test_refresh_from_a_pipe(void)
{
    char dir[] = "/tmp/vf-inventory-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/hosts.fifo", dir);
    CHECK(mkfifo(path, 0600) == 0);
    int go[2]; /* the writer writes once per byte read here */
    CHECK(pipe(go) == 0);
    pid_t writer = fork();
    if (writer == 0) {
        close(go[1]);
        const char *texts[] = {"- {name: bm-001, cpu: 8, memory: 16384}\n",
                               "- {name: bm-001, cpu: 8, memory: 16384}\n"
                               "- {name: bm-002, cpu: 8, memory: 16384}\n"};
        char byte;
        for (int i = 0; i < 2; i++)
            if (read(go[0], &byte, 1) != 1 || write_file(path, texts[i]) < 0)
                _exit(1);
        _exit(0);
    }
    close(go[0]);
    vf_error err;
    vf_error_init(&err);
    inventory *inv = file_inventory(path);
    for (size_t want = 1; inv && want <= 2; want++) {
        CHECK(write(go[1], "w", 1) == 1);
        vf_error_init(&err);
        CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
        inventory_view view;
        inventory_acquire(inv, &view);
        CHECKF(view.hosts && view.hosts->n_hosts == want && !view.stale, "refresh %zu: %zu hosts",
               want, view.hosts ? view.hosts->n_hosts : 0);
        inventory_release(&view);
    }
    close(go[1]);
    int status = -1;
    CHECK(waitpid(writer, &status, 0) == writer && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    inventory_free(inv);
    remove(path);
    rmdir(dir);
}

static void test_config_is_checked(void)
{
    vf_config config;
    memset(&config, 0, sizeof config);
    vf_error err;

    config.inventory.source = CONFIG_INVENTORY_FILE;
    vf_error_init(&err);
    CHECK(inventory_new(&config, &err) == NULL);
    CHECK(err.code == VF_ECONFIG);
    CHECK_STR(err.text, "inventory.path: required when inventory.source is file");

    config.inventory.source = CONFIG_INVENTORY_HTTP;
    config.inventory.url = (char *)"ftp://example";
    vf_error_init(&err);
    CHECK(inventory_new(&config, &err) == NULL);
    CHECK_CONTAINS(err.text, "inventory.url: an http:// or https:// URL is required");

    config.inventory.source = CONFIG_INVENTORY_PROXMOX;
    config.inventory.url = (char *)"https://127.0.0.1:8006";
    vf_error_init(&err);
    CHECK(inventory_new(&config, &err) == NULL);
    CHECK_STR(err.text, "inventory.token_file: required when inventory.source is proxmox");
}

int main(void)
{
    test_valid_fixtures();
    test_invalid_fixtures();
    test_example_inventory();
    test_refresh_keeps_last_good_snapshot();
    test_refresh_same_bytes();
    test_refresh_from_a_pipe();
    test_config_is_checked();
    return test_summary();
}
