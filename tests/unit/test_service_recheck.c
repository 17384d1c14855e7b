/* service_recheck without a broker (service_fixture.h): room that grows
 * makes the waiting tasks due a recheck, room that shrinks does not; a
 * recheck is skipped when off, refused or too soon after the last, sends
 * nothing when no task waits, and a publish lost with the link fails the
 * round; a link lost for another reason than a refused recheck leaves
 * rechecks on. */
#include "service_fixture.h"
#include "store_tasks.h"

static void test_room(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    service_room_changed(svc); /* from nothing to three hosts' room */
    CHECK(svc->recheck_pending);
    CHECK(svc->room_cpu > 0 && svc->room_memory > 0);
    double cpu = svc->room_cpu;
    svc->recheck_pending = false;

    sched_reservation res = {.cpu = 4, .memory = 4096};
    snprintf(res.task_id, sizeof res.task_id, "held-1");
    snprintf(res.node, sizeof res.node, "bm-001");
    CHECK(sched_engine_reserve(svc->engine, &res, &err) == 0);
    service_room_changed(svc);
    CHECK(!svc->recheck_pending); /* less room: nothing new fits */
    CHECK(svc->room_cpu == cpu - 4);

    service_room_changed(svc);
    CHECK(!svc->recheck_pending); /* the same room */

    CHECK(sched_engine_release(svc->engine, "held-1") == 1);
    service_room_changed(svc);
    CHECK(svc->recheck_pending);
    CHECK(svc->room_cpu == cpu);
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

    svc->recheck_pending = false;
    CHECK(service_recheck_waiting(svc, &err) == 0);
    CHECK(svc->recheck_at_ms == 0); /* not due: nothing looked at */

    /* Due, but no task waits: the round is spent, nothing is sent. */
    svc->recheck_pending = true;
    CHECK(service_recheck_waiting(svc, &err) == 0);
    CHECK(!svc->recheck_pending);
    CHECK(svc->recheck_at_ms != 0);
    CHECK(!svc->recheck_sent);

    add_waiting(svc, "w-1");
    /* Within a second of the last round: still pending, for the next. */
    svc->recheck_pending = true;
    svc->recheck_at_ms = clock_mono_us() / 1000;
    CHECK(service_recheck_waiting(svc, &err) == 0);
    CHECK(svc->recheck_pending);

    /* retry.recheck_on_room: 0 turns them off. */
    f->config->retry.recheck_on_room = 0;
    svc->recheck_at_ms = 0;
    CHECK(service_recheck_waiting(svc, &err) == 0);
    CHECK(svc->recheck_pending && svc->recheck_at_ms == 0);
    f->config->retry.recheck_on_room = 20;

    /* A broker that refused one before: off too. */
    svc->recheck_refused = true;
    CHECK(service_recheck_waiting(svc, &err) == 0);
    CHECK(svc->recheck_at_ms == 0);
    svc->recheck_refused = false;

    /* Due, a task waits, the link is down: the publish fails the round. */
    CHECK(service_recheck_waiting(svc, &err) == -1);
    CHECK(err.text[0] != '\0');
    CHECK(!svc->recheck_pending);
    CHECK(!svc->recheck_sent);
    CHECK(service_publish_in_flight(svc->publisher) == 0);
}

static void test_refused(service_fixture *f)
{
    service *svc = &f->svc;
    /* No recheck sent on this connection: a lost link is not about them. */
    CHECK(!service_recheck_refused(svc));
    /* Sent, but the broker did not close the link refusing it. */
    svc->recheck_sent = true;
    svc->recheck_pending = true;
    CHECK(!service_recheck_refused(svc));
    CHECK(!svc->recheck_sent); /* per connection */
    CHECK(!svc->recheck_refused);
    CHECK(svc->recheck_pending);
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
    test_refused(&f);
    service_fixture_close(&f);
    return test_summary();
}
