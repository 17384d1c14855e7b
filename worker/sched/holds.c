#include "holds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

const char *hold_task(const hold *h)
{
    return h->names;
}

const char *hold_node(const hold *h)
{
    return h->names + strlen(h->names) + 1;
}

void hold_to_reservation(const hold *h, sched_reservation *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->task_id, sizeof out->task_id, "%s", hold_task(h));
    snprintf(out->node, sizeof out->node, "%s", hold_node(h));
    out->cpu = h->cpu;
    out->memory = h->memory;
    out->disk = h->disk;
    out->vmid = h->vmid;
    out->expires = h->expires;
    out->has_priority = h->preemptible;
    out->priority = h->priority;
    out->created = h->created;
}

void holds_init(holds *set)
{
    memset(set, 0, sizeof *set);
    vmidset_init(&set->reserved_vmids);
}

void holds_close(holds *set)
{
    for (size_t i = 0; i < set->n_held; i++)
        free(set->held[i].names);
    free(set->held);
    vmidset_close(&set->reserved_vmids);
    memset(set, 0, sizeof *set);
}

hold *holds_add(holds *set, const sched_reservation *res, vf_error *err)
{
    if (grow_array((void **)&set->held, &set->cap_held, set->n_held + 1, sizeof *set->held) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory holding a reservation");
        return NULL;
    }
    if (res->vmid && vmidset_add(&set->reserved_vmids, res->vmid) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory holding vmid %u", res->vmid);
        return NULL;
    }
    size_t task_len = strnlen(res->task_id, sizeof res->task_id - 1);
    size_t node_len = strnlen(res->node, sizeof res->node - 1);
    char *names = malloc(task_len + node_len + 2);
    if (!names) {
        if (res->vmid)
            vmidset_remove(&set->reserved_vmids, res->vmid);
        vf_error_set(err, VF_ENOMEM, "out of memory holding a reservation");
        return NULL;
    }
    memcpy(names, res->task_id, task_len);
    names[task_len] = '\0';
    memcpy(names + task_len + 1, res->node, node_len);
    names[task_len + 1 + node_len] = '\0';
    hold *h = &set->held[set->n_held++];
    *h = (hold){.names = names,
                .cpu = res->cpu,
                .memory = res->memory,
                .disk = res->disk,
                .expires = res->expires,
                .created = res->created,
                .vmid = res->vmid,
                .host_index = -1,
                .priority = res->priority,
                .preemptible = res->has_priority};
    if (res->expires > 0 && (set->earliest_expiry == 0 || res->expires < set->earliest_expiry))
        set->earliest_expiry = res->expires;
    return h;
}

size_t holds_drop_where(holds *set, bool (*ends)(const hold *, const void *), const void *arg,
                        void (*on_drop)(const hold *, void *), void *user)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < set->n_held; i++) {
        hold *h = &set->held[i];
        if (!ends(h, arg)) {
            set->held[kept++] = *h;
            continue;
        }
        if (on_drop)
            on_drop(h, user);
        if (h->vmid)
            vmidset_remove(&set->reserved_vmids, h->vmid);
        free(h->names);
        dropped++;
    }
    set->n_held = kept;
    return dropped;
}

void holds_recompute_expiry(holds *set)
{
    set->earliest_expiry = 0;
    for (size_t i = 0; i < set->n_held; i++) {
        int64_t e = set->held[i].expires;
        if (e > 0 && (set->earliest_expiry == 0 || e < set->earliest_expiry))
            set->earliest_expiry = e;
    }
}
