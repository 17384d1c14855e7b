/* service_recheck without a broker (service_fixture.h): room that grows
 * makes the waiting tasks due a recheck, room that shrinks does not; a
 * recheck is skipped when off or too soon after the last, sends nothing
 * when no task waits, and a publish lost with the link fails the round; a
 * link lost for another reason than a refused recheck leaves rechecks on.
 * (The refusal itself is the service's: amqp_refusals.h.)
 * (A broker that refuses one: tests/integration/test_recheck_refused.) */
#include "service_fixture.h"
#include "store_tasks.h"

/* The fake monotonic clock the recheck rounds are spaced by. */
static int64_t fake_now_ms;

static int64_t fake_mono_ms(void *context)
{
    (void)context;
    return fake_now_ms;
}

static service_rechecker *open_rechecker(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    service_rechecker *r =
        service_recheck_new(f->config, svc->engine, svc->store, svc->link, svc->publisher, &err);
    CHECKF(r != NULL, "%s", err.text);
    if (r)
        service_recheck_set_clock(r, fake_mono_ms, NULL);
    return r;
}

/* A round more than a second after the last, with no task waiting: spends
 * what was due. */
static void spend(service_rechecker *r)
{
    vf_error err;
    vf_error_init(&err);
    fake_now_ms += 1000;
    CHECK(service_recheck_waiting(r, &err) == 0);
    CHECK(!service_recheck_due(r));
}

static void test_room(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    service_rechecker *r = open_rechecker(f);
    if (!r)
        return;
    CHECK(!service_recheck_due(r));
    service_recheck_room_changed(r); /* from nothing to three hosts' room */
    CHECK(service_recheck_due(r));
    spend(r);

    sched_reservation res = {.cpu = 4, .memory = 4096};
    snprintf(res.task_id, sizeof res.task_id, "held-1");
    snprintf(res.node, sizeof res.node, "bm-001");
    CHECK(sched_engine_reserve(svc->engine, &res, &err) == 0);
    service_recheck_room_changed(r);
    CHECK(!service_recheck_due(r)); /* less room: nothing new fits */

    service_recheck_room_changed(r);
    CHECK(!service_recheck_due(r)); /* the same room */

    CHECK(sched_engine_release(svc->engine, "held-1") == 1);
    service_recheck_room_changed(r);
    CHECK(service_recheck_due(r)); /* the room seen before the hold, again */
    spend(r);

    service_recheck_room_returned(r); /* a committed release */
    CHECK(service_recheck_due(r));
    service_recheck_free(r);
}

static void add_waiting(service *svc, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields t = {.id = id,
                           .kind = "schedule",
                           .status = "retrying",
                           .attempts = 1,
                           .request = "{\"task_id\":\"w-1\",\"cpu\":1,\"memory\":512}",
                           .vmid = -1,
                           .at = "2026-11-22T01:02:03.250Z"};
    CHECKF(store_task_insert(svc->store, &t, &err) == 0, "%s", err.text);
}

static void test_recheck(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    service_rechecker *r = open_rechecker(f);
    if (!r)
        return;
    fake_now_ms = 5000;

    /* Not due: nothing looked at. */
    CHECK(service_recheck_waiting(r, &err) == 0);

    /* Due, but no task waits: the round is spent, nothing is sent. */
    service_recheck_room_returned(r);
    CHECK(service_recheck_waiting(r, &err) == 0);
    CHECK(!service_recheck_due(r));

    add_waiting(svc, "w-1");
    /* Within a second of the last round: still due, for the next. */
    service_recheck_room_returned(r);
    fake_now_ms += 999;
    CHECK(service_recheck_waiting(r, &err) == 0);
    CHECK(service_recheck_due(r));

    /* retry.recheck_on_room: 0 turns them off (and spends no round). */
    fake_now_ms += 1;
    f->config->retry.recheck_on_room = 0;
    CHECK(service_recheck_waiting(r, &err) == 0);
    CHECK(service_recheck_due(r));
    f->config->retry.recheck_on_room = 20;

    /* Due, a task waits, the link is down: the publish fails the round. */
    CHECK(service_recheck_waiting(r, &err) == -1);
    CHECK(err.text[0] != '\0');
    CHECK(!service_recheck_due(r));
    CHECK(service_publish_in_flight(svc->publisher) == 0);

    /* The link lost, but not by a refused recheck: rechecks stay on. */
    service_recheck_room_returned(r);
    CHECK(service_recheck_due(r));
    vf_error_init(&err);
    fake_now_ms += 1000;
    CHECK(service_recheck_waiting(r, &err) == -1); /* tried again */
    service_recheck_free(r);
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
    test_room(&f);
    test_recheck(&f);
    service_fixture_close(&f);
    return test_summary();
}
