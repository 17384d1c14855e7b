/* process_view: the processes table and the leases, as one JSON list. */
#include "process_view.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ids.h"
#include "leases.h"
#include "store_processes.h"

typedef struct listing {
    json_t *list;
    int64_t now_s;
    bool failed;
} listing;

static int add_process(const store_process *p, void *ctx)
{
    listing *l = ctx;
    int64_t beat_s = 0;
    int64_t age = ids_parse_time(p->beat_at, &beat_s) == 0 ? l->now_s - beat_s : -1;
    json_t *row =
        json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:b, s:I, s:s, s:[]}", "program", p->program,
                  "host", p->host, "pid", (json_int_t)p->pid, "version", p->version, "started_at",
                  p->started_at, "beat_at", p->beat_at, "beat_age_s",
                  (json_int_t)(age < 0 ? 0 : age), "alive", age >= 0 && age <= LEASE_TTL_S,
                  "in_hand", (json_int_t)p->in_hand, "owner", p->owner, "leases");
    if (!row || json_array_append_new(l->list, row) < 0)
        l->failed = true;
    return 0;
}

static int add_lease(const store_lease_row *lease, void *ctx)
{
    listing *l = ctx;
    if (strncmp(lease->name, LEASE_PRESENCE_PREFIX, strlen(LEASE_PRESENCE_PREFIX)) == 0)
        return 0;
    size_t i;
    json_t *row;
    json_array_foreach(l->list, i, row)
    {
        if (strcmp(json_string_value(json_object_get(row, "owner")), lease->owner) != 0)
            continue;
        json_t *held = json_pack("{s:s, s:I, s:s, s:s}", "name", lease->name, "epoch",
                                 (json_int_t)lease->epoch, "acquired_at", lease->acquired_at,
                                 "expires_at", lease->expires_at);
        if (!held || json_array_append_new(json_object_get(row, "leases"), held) < 0)
            l->failed = true;
    }
    return 0;
}

json_t *process_view_list(store *s, bool all, vf_error *err)
{
    int64_t now_ms = clock_wall_ms();
    listing l = {.list = json_array(), .now_s = now_ms / 1000};
    char now[STORE_TIME_SIZE], since[STORE_TIME_SIZE];
    store_format_time(now_ms, now);
    store_format_time(now_ms - (int64_t)(all ? STORE_PROCESS_FORGET_S : LEASE_TTL_S) * 1000, since);
    if (!l.list || store_processes_list(s, since, add_process, &l, err) < 0 ||
        store_leases_list(s, now, add_lease, &l, err) < 0)
        goto fail;
    if (l.failed) {
        vf_error_set(err, VF_ENOMEM, "out of memory listing processes");
        goto fail;
    }
    return l.list;
fail:
    json_decref(l.list);
    return NULL;
}
