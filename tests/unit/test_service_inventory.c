/* service_inventory without a broker (service_fixture.h), over a real
 * inventory read from a fixture file: before any fetch nothing is placeable;
 * a new snapshot switches the engine and drops the reservations whose VMs
 * it shows on their own hosts (reported once); the same snapshot again
 * changes nothing; a snapshot older than inventory.max_age_s stops
 * placements until it is fresh again. Each change of content is recorded
 * once as an inventory snapshot, the same content never twice. */
#include "service_fixture.h"

#define INVENTORY "fixtures/inventory/file/valid/all-fields.yaml"

static void hold(service *svc, const char *task_id, const char *node, uint32_t vmid)
{
    vf_error err;
    vf_error_init(&err);
    sched_reservation res = {.cpu = 1, .memory = 512, .vmid = vmid};
    snprintf(res.task_id, sizeof res.task_id, "%s", task_id);
    snprintf(res.node, sizeof res.node, "%s", node);
    CHECKF(sched_engine_reserve(svc->engine, &res, &err) == 0, "%s", err.text);
}

static void test_follow(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    free(f->config->inventory.path);
    f->config->inventory.path = strdup(INVENTORY);
    svc->inventory = inventory_new(f->config, &err);
    CHECKF(svc->inventory != NULL, "%s", err.text);
    if (!svc->inventory)
        return;

    /* No fetch yet: the engine keeps what it had, nothing is placeable. */
    materialised gone = {0};
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    CHECK(svc->view.hosts == NULL);
    CHECK(svc->placeable == NULL);
    CHECK(sched_engine_snapshot(svc->engine) == f->hosts);

    /* gpu-01 lists vmids 300-302: the hold for 300 there has materialised;
     * 301 held on another host, and 555 anywhere, still hold. */
    hold(svc, "t-300", "gpu-01", 300);
    hold(svc, "t-301", "bm-002", 301);
    hold(svc, "t-555", "bm-003", 555);
    CHECK(inventory_refresh(svc->inventory, &err) == 0);
    CHECKF(service_follow_inventory(svc, &gone, &err) == 0, "%s", err.text);
    CHECK(svc->view.hosts != NULL);
    CHECK(sched_engine_snapshot(svc->engine) == svc->view.hosts);
    CHECK(svc->placeable == svc->view.hosts);
    CHECK(!svc->inventory_too_old);
    CHECK(svc->view_fetched_ms > 0);
    CHECK(gone.n == 1);
    if (gone.n == 1) {
        CHECK(gone.vms[0].vmid == 300);
        CHECK_STR(gone.vms[0].node, "gpu-01");
    }
    CHECK(sched_engine_reservation_count(svc->engine) == 2);

    /* The same snapshot: nothing switches, nothing more is reported. */
    const hostset *before = svc->view.hosts;
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    CHECK(svc->view.hosts == before);
    CHECK(gone.n == 1);

    /* Older than inventory.max_age_s (0 s here, after a pause): placements
     * stop, the engine keeps the snapshot; fresh again, they resume. */
    f->config->inventory.max_age_s = 0;
    usleep(20 * 1000);
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    CHECK(svc->inventory_too_old);
    CHECK(svc->placeable == NULL);
    CHECK_CONTAINS(svc->note, "older than inventory.max_age_s");
    f->config->inventory.max_age_s = 300;
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    CHECK(!svc->inventory_too_old);
    CHECK(svc->placeable == svc->view.hosts);

    free(gone.vms);
    inventory_release(&svc->view);
    inventory_free(svc->inventory);
    svc->inventory = NULL;
}

static int count_snapshot(const store_inventory_snapshot *snapshot, void *ctx)
{
    int *n = ctx;
    json_t *doc = json_loads(snapshot->hosts, 0, NULL);
    vf_error err;
    vf_error_init(&err);
    hostset *set = doc ? host_json_inventory(doc, &err) : NULL;
    CHECKF(set != NULL, "snapshot %lld: %s", (long long)snapshot->id, err.text);
    json_decref(doc);
    hostset_free(set);
    (*n)++;
    return 0;
}

static int snapshots(service *svc)
{
    vf_error err;
    vf_error_init(&err);
    int n = 0;
    CHECKF(store_inventory_snapshots(svc->store, NULL, count_snapshot, &n, &err) == 0, "%s",
           err.text);
    return n;
}

/* What sync_inventory does with a new view, in its transaction. */
static void record(service *svc, const char *at)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(store_begin(svc->store, &err) == 0);
    CHECKF(service_record_snapshot(svc, at, &err) == 0, "%s", err.text);
    CHECK(store_commit(svc->store, &err) == 0);
    if (svc->snapshot_pending[0]) {
        memcpy(svc->snapshot_hash, svc->snapshot_pending, sizeof svc->snapshot_hash);
        svc->snapshot_recorded_ms = clock_mono_ms();
    }
}

static void test_snapshots(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    free(f->config->inventory.path);
    f->config->inventory.path = strdup(INVENTORY);
    svc->inventory = inventory_new(f->config, &err);
    CHECKF(svc->inventory != NULL, "%s", err.text);
    if (!svc->inventory)
        return;
    materialised gone = {0};
    record(svc, "2026-11-01T00:00:00.000Z"); /* no view yet: nothing */
    CHECK(snapshots(svc) == 0);
    CHECK(inventory_refresh(svc->inventory, &err) == 0);
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    record(svc, "2026-11-01T00:00:01.000Z");
    CHECK(snapshots(svc) == 1);
    /* A new fetch of the same content: not recorded, neither by this worker
     * (it remembers the hash) nor by another one (the store compares). */
    CHECK(inventory_refresh(svc->inventory, &err) == 0);
    CHECK(service_follow_inventory(svc, &gone, &err) == 0);
    record(svc, "2026-11-01T00:00:02.000Z");
    svc->snapshot_hash[0] = '\0';
    record(svc, "2026-11-01T00:00:03.000Z");
    CHECK(snapshots(svc) == 1);
    /* Other content: a second snapshot. */
    inventory *other = NULL;
    free(f->config->inventory.path);
    f->config->inventory.path = strdup("fixtures/inventory/file/valid/defaults.yaml");
    other = inventory_new(f->config, &err);
    CHECKF(other != NULL, "%s", err.text);
    if (other) {
        inventory_adopt_settings(svc->inventory, other);
        CHECK(inventory_refresh(svc->inventory, &err) == 0);
        CHECK(service_follow_inventory(svc, &gone, &err) == 0);
        /* Within inventory.record_every_s of the last one: not yet. */
        f->config->inventory.record_every_s = 3600;
        record(svc, "2026-11-01T00:00:04.000Z");
        CHECK(snapshots(svc) == 1);
        /* An hour later: recorded. */
        svc->snapshot_recorded_ms -= 3600 * 1000;
        record(svc, "2026-11-01T01:00:04.000Z");
        CHECK(snapshots(svc) == 2);
        /* record_every_s 0 records none, however long ago the last one was. */
        f->config->inventory.record_every_s = 0;
        svc->snapshot_hash[0] = 'x';
        svc->snapshot_recorded_ms -= 7200 * 1000;
        record(svc, "2026-11-01T03:00:04.000Z");
        CHECK(snapshots(svc) == 2);
    }
    free(gone.vms);
    inventory_release(&svc->view);
    inventory_free(svc->inventory);
    svc->inventory = NULL;
}

int main(void)
{
    vf_log_set_level(VF_LOG_ERROR);
    service_fixture f;
    if (!service_fixture_open(&f)) {
        CHECK(!"fixture");
        service_fixture_close(&f);
        return test_summary();
    }
    test_follow(&f);
    test_snapshots(&f);
    service_fixture_close(&f);
    return test_summary();
}
