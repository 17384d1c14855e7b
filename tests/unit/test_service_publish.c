/* service_publish without a broker (service_fixture.h): confirms matched to
 * their publishes by tag, what settling does with each kind (a confirmed
 * event marked in the store, a nacked one left in the outbox, a retry never
 * acked on a lost link), the confirmed list kept until its transaction
 * commits, and the outbox sweep: only by the housekeeping lease holder,
 * marks first, then a publish that fails on the lost link. */
#include "service_fixture.h"
#include "store_hosts.h"

static void track(service *svc, uint64_t tag, publish_kind kind, const char *event_id)
{
    CHECK(grow_array((void **)&svc->pubs, &svc->cap_pubs, svc->n_pubs + 1, sizeof *svc->pubs) == 0);
    svc->pubs[svc->n_pubs++] =
        (pending_publish){tag, kind, 0, event_id ? strdup(event_id) : NULL, 0};
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
    service *svc = &f->svc;
    track(svc, 3, PUB_EVENT, "e-1");
    track(svc, 5, PUB_REPLY, "task-1");
    track(svc, 9, PUB_EVENT, "e-2");
    track(svc, 12, PUB_RETRY, NULL);
    CHECK(service_republish_waiting(svc));

    service_on_confirm(3, true, NULL, svc);
    service_on_confirm(9, false, "nacked", svc);
    service_on_confirm(7, true, NULL, svc); /* no such tag: nothing changes */
    service_on_confirm(13, true, NULL, svc);
    CHECK(svc->pubs[0].state == 1);
    CHECK(svc->pubs[1].state == 0);
    CHECK(svc->pubs[2].state == -1);
    CHECK(svc->pubs[3].state == 0);

    /* The link is down: everything is settled now; the confirmed event is
     * to be marked, the nacked one stays in the outbox for the sweep, the
     * retry's message is not acked (the broker hands it back itself). */
    vf_error err;
    vf_error_init(&err);
    CHECK(service_settle_confirms(svc, &err) == 0);
    CHECK(svc->n_pubs == 0);
    CHECK(!service_republish_waiting(svc));
    CHECK(svc->confirmed.n == 1);
    if (svc->confirmed.n == 1)
        CHECK_STR(svc->confirmed.ids[0], "e-1");
}

static void test_publish_on_lost_link(service_fixture *f)
{
    service *svc = &f->svc;
    amqp_link_message msg = {.body = "{}", .body_len = 2, .message_id = "e-9"};
    vf_error err;
    vf_error_init(&err);
    CHECK(service_publish_tracked(svc, AMQP_TOPOLOGY_EXCHANGE, "event.task.placed", &msg, PUB_EVENT,
                                  0, "e-9", &err) == -1);
    CHECK(err.text[0] != '\0');
    CHECK(svc->n_pubs == 0); /* nothing waits for a confirm that cannot come */
}

static void test_id_list(void)
{
    id_list list = {0};
    service_id_list_drop_first(&list, 3); /* empty, ids NULL */
    CHECK(list.n == 0);
    const char *names[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++) {
        CHECK(grow_array((void **)&list.ids, &list.cap, list.n + 1, sizeof *list.ids) == 0);
        list.ids[list.n++] = strdup(names[i]);
    }
    service_id_list_drop_first(&list, 2);
    CHECK(list.n == 1);
    if (list.n == 1)
        CHECK_STR(list.ids[0], "c");
    service_id_list_drop_first(&list, 5);
    CHECK(list.n == 0);
    service_id_list_clear(&list);
    free(list.ids);
}

static void test_flush_and_sweep(service_fixture *f)
{
    service *svc = &f->svc;
    vf_error err;
    vf_error_init(&err);
    add_event(svc, "e-1"); /* confirmed in test_confirms */
    add_event(svc, "e-2"); /* nacked there */
    add_event(svc, "e-3");

    /* Another live worker holds the housekeeping lease: it sweeps, not this
     * one; the confirmed event is marked all the same. */
    CHECK(lease_hold(svc->store, "housekeeping", "other:2", NULL, &err) == 1);
    CHECKF(service_sweep_outbox(svc, false, &err) == 0, "%s", err.text);
    CHECK(svc->confirmed.n == 0);
    pending_ids p = pending(svc);
    CHECK(p.n == 2);
    CHECK_STR(p.ids[0], "e-2");
    CHECK_STR(p.ids[1], "e-3");
    CHECK(svc->last_sweep != 0);

    /* This worker's turn: it publishes the unconfirmed events, and the lost
     * link fails the sweep on the broker's side, not the store's. */
    CHECK(store_lease_release(svc->store, "housekeeping", "other:2", &err) == 0);
    CHECK(service_sweep_outbox(svc, false, &err) == SWEEP_BROKER);
    CHECK(pending(svc).n == 2); /* still there for the next sweep */
    CHECK(svc->n_pubs == 0);

    /* Marks in a transaction of their own, and only what was listed. */
    CHECK(grow_array((void **)&svc->confirmed.ids, &svc->confirmed.cap, 2,
                     sizeof *svc->confirmed.ids) == 0);
    svc->confirmed.ids[svc->confirmed.n++] = strdup("e-3");
    CHECKF(service_flush_confirmed_now(svc, &err) == 0, "%s", err.text);
    CHECK(svc->confirmed.n == 0);
    p = pending(svc);
    CHECK(p.n == 1);
    CHECK_STR(p.ids[0], "e-2");
    CHECK(service_flush_confirmed_now(svc, &err) == 0); /* nothing to mark */
}

int main(void)
{
    vf_log_set_level(VF_LOG_ERROR);
    test_id_list();
    service_fixture f;
    if (!service_fixture_open(&f)) {
        CHECK(!"fixture");
        service_fixture_close(&f);
        return test_summary();
    }
    test_confirms(&f);
    test_publish_on_lost_link(&f);
    test_flush_and_sweep(&f);
    service_fixture_close(&f);
    return test_summary();
}
