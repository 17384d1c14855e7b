/* service_follower without a broker (service_fixture.h), over a real
 * inventory read from a fixture file: before any fetch nothing is placeable
 * and the reservation clock has not started; a new snapshot switches the
 * engine and ends the holds whose VMs it shows on their own hosts; the same
 * snapshot again changes nothing, and the same bytes fetched again switch
 * nothing but move the reservation clock (a hold expired by it ends); a
 * snapshot older than inventory.max_age_s stops placements until it is
 * fresh again. Each change of content is
 * recorded once as an inventory snapshot, the same content never twice,
 * and at most once in inventory.record_every_s. */
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

/* The fake monotonic clock the recorded snapshots are spaced by. */
static int64_t fake_now_ms;

static int64_t fake_mono_ms(void *context)
{
    (void)context;
    return fake_now_ms;
}

static inventory *open_inventory(service_fixture *f, const char *path)
{
    vf_error err;
    vf_error_init(&err);
    free(f->config->inventory.path);
    f->config->inventory.path = strdup(path);
    inventory *source = inventory_new(f->config, &err);
    CHECKF(source != NULL, "%s", err.text);
    return source;
}

static service_follower *open_follower(service_fixture *f, inventory *source)
{
    vf_error err;
    vf_error_init(&err);
    service_follower *follower =
        service_follower_new(source, f->svc.engine, f->svc.store, f->config, &err);
    CHECKF(follower != NULL, "%s", err.text);
    if (follower)
        service_follower_set_clock(follower, fake_mono_ms, NULL);
    return follower;
}

/* One round's sync; returns whether it said the room may have changed. */
static bool sync_round(service_fixture *f, service_follower *follower)
{
    vf_error err;
    vf_error_init(&err);
    bool room_changed = false;
    CHECKF(service_follower_sync(follower, f->config->inventory.record_every_s, &room_changed,
                                 &err) == 0,
           "%s", err.text);
    return room_changed;
}

static void test_follow(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    inventory *source = open_inventory(f, INVENTORY);
    service_follower *follower = source ? open_follower(f, source) : NULL;
    if (!follower) {
        inventory_free(source);
        return;
    }

    f->config->inventory.record_every_s = 0; /* recording: test_snapshots */

    /* No fetch yet: the engine keeps what it had, nothing is placeable, the
     * reservation clock stands. */
    CHECK(service_follower_start(follower, &err) == 0);
    CHECK(!sync_round(f, follower));
    CHECK(service_follower_placeable(follower) == NULL);
    CHECK(service_follower_clock_ms(follower) == 0);
    CHECK(sched_engine_snapshot(svc->engine) == f->hosts);

    /* gpu-01 lists vmids 300-302: the hold for 300 there has materialised;
     * 301 held on another host, and 555 anywhere, still hold. */
    hold(svc, "t-300", "gpu-01", 300);
    hold(svc, "t-301", "bm-002", 301);
    hold(svc, "t-555", "bm-003", 555);
    CHECK(inventory_refresh(source, &err) == 0);
    CHECK(sync_round(f, follower));
    const hostset *placeable = service_follower_placeable(follower);
    CHECK(placeable != NULL);
    CHECK(sched_engine_snapshot(svc->engine) == placeable);
    CHECK(service_follower_clock_ms(follower) > 0);
    CHECK(sched_engine_reservation_count(svc->engine) == 2);
    CHECK_STR(service_follower_note(follower), "");

    /* The same snapshot: nothing switches, nothing more ends. */
    int64_t clock_ms = service_follower_clock_ms(follower);
    CHECK(!sync_round(f, follower));
    CHECK(service_follower_placeable(follower) == placeable);
    CHECK(service_follower_clock_ms(follower) == clock_ms);
    CHECK(sched_engine_reservation_count(svc->engine) == 2);

    /* The same bytes fetched again (the inventory keeps its snapshot):
     * nothing switches, but the reservation clock moves with the fetch, and
     * a hold expired by it ends. */
    int64_t expires_s = clock_ms / 1000 + 1;
    sched_reservation ttl = {.cpu = 1, .memory = 512, .vmid = 556, .expires = expires_s};
    snprintf(ttl.task_id, sizeof ttl.task_id, "t-ttl");
    snprintf(ttl.node, sizeof ttl.node, "bm-003");
    CHECKF(sched_engine_reserve(svc->engine, &ttl, &err) == 0, "%s", err.text);
    while (clock_wall_ms() / 1000 < expires_s)
        usleep(20 * 1000);
    CHECK(!sync_round(f, follower)); /* no fetch since: the clock stands */
    CHECK(sched_engine_reservation_count(svc->engine) == 3);
    CHECK(inventory_refresh(source, &err) == 0);
    CHECK(sync_round(f, follower));
    CHECK(service_follower_placeable(follower) == placeable);
    CHECK(sched_engine_snapshot(svc->engine) == placeable);
    CHECK(service_follower_clock_ms(follower) >= expires_s * 1000);
    CHECK(sched_engine_reservation_count(svc->engine) == 2);

    /* Older than inventory.max_age_s (0 s here, after a pause): placements
     * stop, the engine keeps the snapshot; fresh again, they resume. */
    f->config->inventory.max_age_s = 0;
    usleep(20 * 1000);
    CHECK(!sync_round(f, follower));
    CHECK(service_follower_placeable(follower) == NULL);
    CHECK(sched_engine_snapshot(svc->engine) == placeable);
    CHECK_CONTAINS(service_follower_note(follower), "older than inventory.max_age_s");
    f->config->inventory.max_age_s = 300;
    CHECK(!sync_round(f, follower));
    CHECK(service_follower_placeable(follower) == placeable);

    /* Which holds ended: the one whose VM showed up. */
    CHECK(sched_engine_release(svc->engine, "t-300") == 0);
    CHECK(sched_engine_release(svc->engine, "t-301") == 1);
    CHECK(sched_engine_release(svc->engine, "t-555") == 1);
    service_follower_free(follower);
    inventory_free(source);
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

/* A new fetch, a little later than the last (the reservation clock moves
 * only with a later fetch), and a round. */
static void fetch_and_sync(service_fixture *f, inventory *source, service_follower *follower)
{
    vf_error err;
    vf_error_init(&err);
    usleep(5 * 1000);
    CHECKF(inventory_refresh(source, &err) == 0, "%s", err.text);
    (void)sync_round(f, follower);
}

/* inventory.record_decided: every content decided over is in the store at
 * once, whatever record_every_s says, and the follower names its row: the
 * record a decision keeps (provenance.h). */
static void test_decided_snapshots(service_fixture *f)
{
    service *svc = &f->svc;
    f->config->inventory.record_decided = true;
    f->config->inventory.record_every_s = 7200;
    inventory *source = open_inventory(f, INVENTORY);
    service_follower *follower = source ? open_follower(f, source) : NULL;
    if (!follower)
        goto out;
    int before = snapshots(svc);
    fake_now_ms += 10000;
    fetch_and_sync(f, source, follower);
    int64_t first = service_follower_snapshot_id(follower);
    CHECK(first > 0);
    inventory *other = open_inventory(f, "fixtures/inventory/file/valid/defaults.yaml");
    if (!other)
        goto out;
    inventory_adopt_settings(source, other); /* frees it */
    fake_now_ms += 10000;                    /* well within record_every_s */
    fetch_and_sync(f, source, follower);
    int64_t second = service_follower_snapshot_id(follower);
    CHECK(second > first);
    CHECK(snapshots(svc) >= before + 1);
    /* The same content again: the row already recorded, none added. */
    int now = snapshots(svc);
    fake_now_ms += 10000;
    fetch_and_sync(f, source, follower);
    CHECK(service_follower_snapshot_id(follower) == second);
    CHECK(snapshots(svc) == now);
out:
    service_follower_free(follower);
    inventory_free(source);
}

static void test_snapshots(service_fixture *f)
{
    service *svc = &f->svc;
    inventory *source = open_inventory(f, INVENTORY);
    service_follower *follower = source ? open_follower(f, source) : NULL;
    service_follower *other_worker = follower ? open_follower(f, source) : NULL;
    if (!other_worker)
        goto out;
    fake_now_ms = 1000000;
    f->config->inventory.record_every_s = 60;
    (void)sync_round(f, follower); /* no fetch yet: nothing */
    CHECK(snapshots(svc) == 0);
    fetch_and_sync(f, source, follower);
    CHECK(snapshots(svc) == 1);
    /* New fetches of the same content: not recorded, neither by this worker
     * (it remembers the hash) nor by another one (the store compares). */
    fake_now_ms += 3600 * 1000;
    fetch_and_sync(f, source, follower);
    fetch_and_sync(f, source, other_worker);
    CHECK(snapshots(svc) == 1);
    /* Other content: a second snapshot, but not within
     * inventory.record_every_s of the last one. */
    inventory *other = open_inventory(f, "fixtures/inventory/file/valid/defaults.yaml");
    if (!other)
        goto out;
    inventory_adopt_settings(source, other);    /* frees it */
    f->config->inventory.record_every_s = 7200; /* an hour since the first */
    fetch_and_sync(f, source, follower);
    CHECK(snapshots(svc) == 1);
    /* Two hours since the first: recorded. */
    fake_now_ms += 3600 * 1000;
    fetch_and_sync(f, source, follower);
    CHECK(snapshots(svc) == 2);
    /* record_every_s 0 records none, however long ago the last one was:
     * not even content that differs from the store's newest, seen by a
     * worker that remembers none. */
    f->config->inventory.record_every_s = 0;
    fake_now_ms += 7200 * 1000;
    inventory *first = open_inventory(f, INVENTORY);
    if (!first)
        goto out;
    inventory_adopt_settings(source, first); /* frees it */
    fetch_and_sync(f, source, other_worker);
    fetch_and_sync(f, source, follower);
    CHECK(snapshots(svc) == 2);
out:
    service_follower_free(other_worker);
    service_follower_free(follower);
    inventory_free(source);
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
    /* record_every_s alone until test_decided_snapshots. */
    f.config->inventory.record_decided = false;
    test_follow(&f);
    test_snapshots(&f);
    test_decided_snapshots(&f);
    service_fixture_close(&f);
    return test_summary();
}
