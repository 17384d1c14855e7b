/* service_publish without a broker (service_fixture.h): confirms matched to
 * their publishes by tag, what settling does with each kind (a confirmed
 * event marked in the store, a nacked one left in the outbox, a retry never
 * acked on a lost link), the confirmed list kept until its transaction
 * commits, a reconnect failing what was waiting, and the outbox sweep: only by the housekeeping
 * lease holder, marks first, then a publish that fails on the lost link. */
#include "service_fixture.h"
#include "store_hosts.h"

static void track(service_publisher *pub, uint64_t tag, publish_kind kind, const char *event_id)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(service_publish_track(pub, tag, kind, 0, event_id, &err) == 0);
}

/* An event confirmed by the broker: listed to be marked in the store. */
static void confirm(service_publisher *pub, uint64_t tag, const char *event_id)
{
    vf_error err;
    vf_error_init(&err);
    track(pub, tag, PUB_EVENT, event_id);
    service_publish_on_confirm(tag, true, NULL, pub);
    CHECK(service_publish_settle(pub, &err) == 0);
}

static void add_event(service *svc, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    char body[96];
    snprintf(body, sizeof body, "{\"id\":\"%s\"}", id);
    CHECKF(store_outbox_add(svc->store, id, "event.task.placed", body, "2026-11-22T01:02:03.250Z",
                            &err) == 0,
           "%s", err.text);
}

typedef struct pending_ids {
    int n;
    char ids[8][32];
} pending_ids;

static int note_pending(const store_outbox_event *event, void *user)
{
    pending_ids *p = user;
    if (p->n < 8)
        snprintf(p->ids[p->n], sizeof p->ids[0], "%s", event->id);
    p->n++;
    return 0;
}

static pending_ids pending(service *svc)
{
    pending_ids p = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_outbox_pending(svc->store, NULL, 0, note_pending, &p, &err) == 0);
    return p;
}

static void test_confirms(service_fixture *f)
{
    service_publisher *pub = f->svc.publisher;
    track(pub, 3, PUB_EVENT, "e-1");
    track(pub, 5, PUB_REPLY, "task-1");
    track(pub, 9, PUB_EVENT, "e-2");
    track(pub, 12, PUB_RETRY, NULL);
    CHECK(service_publish_republish_waiting(pub));
    CHECK(service_publish_in_flight(pub) == 4);

    service_publish_on_confirm(3, true, NULL, pub);
    service_publish_on_confirm(9, false, "nacked", pub);
    service_publish_on_confirm(7, true, NULL, pub); /* no such tag: nothing changes */
    service_publish_on_confirm(13, true, NULL, pub);
    CHECK(service_publish_state(pub, 3) == 1);
    CHECK(service_publish_state(pub, 5) == 0);
    CHECK(service_publish_state(pub, 9) == -1);
    CHECK(service_publish_state(pub, 12) == 0);
    CHECK(service_publish_state(pub, 7) == -2);
    CHECK(service_publish_state(pub, 13) == -2);

    /* The link is down: everything is settled now; the confirmed event is
     * to be marked, the nacked one stays in the outbox for the sweep, the
     * retry's message is not acked (the broker hands it back itself). */
    vf_error err;
    vf_error_init(&err);
    CHECK(service_publish_settle(pub, &err) == 0);
    CHECK(service_publish_in_flight(pub) == 0);
    CHECK(!service_publish_republish_waiting(pub));
    CHECK(service_publish_confirmed_count(pub) == 1);
    if (service_publish_confirmed_count(pub) == 1)
        CHECK_STR(service_publish_confirmed_id(pub, 0), "e-1");
}

/* A new connection: what was waiting on the old one is failed (its event
 * stays in the outbox); what was confirmed stays confirmed. */
static void test_link_lost(service_fixture *f)
{
    service_publisher *pub = f->svc.publisher;
    track(pub, 20, PUB_EVENT, "e-20");
    track(pub, 21, PUB_EVENT, "e-21");
    service_publish_on_confirm(21, true, NULL, pub);
    service_publish_link_lost(pub);
    CHECK(service_publish_state(pub, 20) == -1);
    CHECK(service_publish_state(pub, 21) == 1);
    vf_error err;
    vf_error_init(&err);
    CHECK(service_publish_settle(pub, &err) == 0);
    CHECK(service_publish_confirmed_count(pub) == 1);
    if (service_publish_confirmed_count(pub) == 1)
        CHECK_STR(service_publish_confirmed_id(pub, 0), "e-21");
}

static void test_publish_on_lost_link(service_fixture *f)
{
    service_publisher *pub = f->svc.publisher;
    amqp_link_message msg = {.body = "{}", .body_len = 2, .message_id = "e-9"};
    vf_error err;
    vf_error_init(&err);
    CHECK(service_publish_tracked(pub, BROKER_EXCHANGE, "event.task.placed", &msg, PUB_EVENT, 0,
                                  "e-9", &err) == -1);
    CHECK(err.text[0] != '\0');
    CHECK(service_publish_in_flight(pub) == 0); /* nothing waits for a confirm that cannot come */
}

/* The confirmed list is kept until the transaction marking it commits: a
 * rollback keeps it for the next one, and confirms arriving meanwhile stay
 * listed after the commit. */
static void test_marks_kept_until_commit(service_fixture *f)
{
    service *svc = &f->svc;
    service_publisher *pub = svc->publisher;
    vf_error err;
    vf_error_init(&err);
    service_publish_marks_committed(pub, 3); /* nothing listed */
    CHECK(service_publish_confirmed_count(pub) == 0);
    confirm(pub, 30, "m-1");
    confirm(pub, 31, "m-2");
    size_t marked = 0;
    CHECK(store_begin(svc->store, &err) == 0);
    CHECK(service_publish_mark_confirmed(pub, "2026-11-22T01:02:04.000Z", &marked, &err) == 0);
    CHECK(marked == 2);
    CHECK(store_rollback(svc->store, &err) == 0);
    CHECK(service_publish_confirmed_count(pub) == 2); /* rolled back: still listed */

    CHECK(store_begin(svc->store, &err) == 0);
    CHECK(service_publish_mark_confirmed(pub, "2026-11-22T01:02:04.000Z", &marked, &err) == 0);
    confirm(pub, 32, "m-3"); /* arrives while the transaction is open */
    CHECK(store_commit(svc->store, &err) == 0);
    service_publish_marks_committed(pub, marked);
    CHECK(service_publish_confirmed_count(pub) == 1);
    if (service_publish_confirmed_count(pub) == 1)
        CHECK_STR(service_publish_confirmed_id(pub, 0), "m-3");
    service_publish_marks_committed(pub, 5); /* more than listed */
    CHECK(service_publish_confirmed_count(pub) == 0);
}

static void test_flush_and_sweep(service_fixture *f)
{
    service *svc = &f->svc;
    service_publisher *pub = svc->publisher;
    vf_error err;
    vf_error_init(&err);
    add_event(svc, "e-1"); /* confirmed in test_confirms */
    add_event(svc, "e-2"); /* nacked there */
    add_event(svc, "e-3");

    /* Another live worker holds the housekeeping lease: it sweeps, not this
     * one; the confirmed event is marked all the same. */
    CHECK(lease_hold(svc->store, "housekeeping", "other:2", NULL, &err) == 1);
    CHECKF(service_publish_sweep_outbox(pub, false, &err) == 0, "%s", err.text);
    CHECK(service_publish_confirmed_count(pub) == 0);
    pending_ids p = pending(svc);
    CHECK(p.n == 2);
    CHECK_STR(p.ids[0], "e-2");
    CHECK_STR(p.ids[1], "e-3");
    CHECK(!service_publish_sweep_due(pub)); /* swept just now */

    /* This worker's turn: it publishes the unconfirmed events, and the lost
     * link fails the sweep on the broker's side, not the store's. */
    CHECK(store_lease_release(svc->store, "housekeeping", "other:2", &err) == 0);
    CHECK(service_publish_sweep_outbox(pub, false, &err) == SWEEP_BROKER);
    CHECK(pending(svc).n == 2); /* still there for the next sweep */
    CHECK(service_publish_in_flight(pub) == 0);

    /* Marks in a transaction of their own, and only what was listed. */
    confirm(pub, 40, "e-3");
    CHECKF(service_publish_flush_confirmed_now(pub, &err) == 0, "%s", err.text);
    CHECK(service_publish_confirmed_count(pub) == 0);
    p = pending(svc);
    CHECK(p.n == 1);
    CHECK_STR(p.ids[0], "e-2");
    CHECK(service_publish_flush_confirmed_now(pub, &err) == 0); /* nothing to mark */
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
    test_confirms(&f);
    test_publish_on_lost_link(&f);
    test_flush_and_sweep(&f);
    test_marks_kept_until_commit(&f);
    test_link_lost(&f);
    service_fixture_close(&f);
    return test_summary();
}
