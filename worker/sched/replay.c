/* replay: see replay.h. */
#include "replay.h"
#include "replay_internal.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "spare_place.h"

replay *replay_new(sched_engine *a, sched_engine *b, int ttl_a_s, int ttl_b_s, vf_error *err)
{
    replay *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting a replay");
        return NULL;
    }
    r->engine[0] = a;
    r->engine[1] = b;
    r->ttl_s[0] = ttl_a_s;
    r->ttl_s[1] = ttl_b_s;
    for (int c = 0; c < 2; c++) {
        r->spare_strict[c] = true;
        r->spare_ttl_s[c] = r->ttl_s[c];
    }
    return r;
}

void replay_free(replay *r)
{
    if (!r)
        return;
    replay_outcomes_free(r);
    free(r->peaks);
    free(r->slot);
    free(r->req_cpu);
    free(r->req_memory);
    free(r);
}

/* Raise host i's peaks under configuration c to what it commits now. */
static void note_peak(replay *r, int c, size_t i)
{
    const host *h = &r->hosts->hosts[i];
    const sched_host_load *load = sched_engine_host_load(r->engine[c], i);
    replay_host_peak *p = &r->peaks[r->slot[i]];
    double cpu = h->allocated_cpu + (load ? load->cpu : 0);
    int64_t memory = h->allocated_memory + (load ? load->memory : 0);
    if (cpu > p->cpu[c])
        p->cpu[c] = cpu;
    if (memory > p->memory[c])
        p->memory[c] = memory;
    const sched_params *params = sched_engine_params(r->engine[c]);
    p->cpu_capacity[c] = sched_cpu_capacity(params, h);
    p->memory_capacity[c] = sched_memory_capacity(params, h);
}

/* Merge the snapshot's host names into peaks (both sorted by name) and map
 * each host index to its slot. */
static int merge_hosts(replay *r, const hostset *hosts, vf_error *err)
{
    size_t cap = r->n_peaks + hosts->n_hosts;
    replay_host_peak *merged = calloc(cap ? cap : 1, sizeof *merged);
    size_t *slot = calloc(hosts->n_hosts ? hosts->n_hosts : 1, sizeof *slot);
    if (!merged || !slot) {
        free(merged);
        free(slot);
        vf_error_set(err, VF_ENOMEM, "out of memory following a replayed inventory");
        return -1;
    }
    size_t a = 0, b = 0, n = 0;
    while (a < r->n_peaks || b < hosts->n_hosts) {
        int order = a == r->n_peaks       ? 1
                    : b == hosts->n_hosts ? -1
                                          : strcmp(r->peaks[a].name, hosts->hosts[b].name);
        if (order < 0) {
            merged[n++] = r->peaks[a++];
            continue;
        }
        if (order == 0) {
            merged[n] = r->peaks[a++];
        } else {
            memcpy(merged[n].name, hosts->hosts[b].name, sizeof merged[n].name);
        }
        slot[b++] = n++;
    }
    free(r->peaks);
    free(r->slot);
    r->peaks = merged;
    r->n_peaks = n;
    r->slot = slot;
    return 0;
}

int replay_inventory(replay *r, const hostset *hosts, int64_t at_ms, vf_error *err)
{
    if (merge_hosts(r, hosts, err) < 0)
        return -1;
    for (int c = 0; c < 2; c++) {
        if (sched_engine_set_hosts(r->engine[c], hosts, NULL, NULL, err) < 0)
            return -1;
        (void)sched_engine_expire(r->engine[c], at_ms / 1000);
    }
    r->hosts = hosts;
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < hosts->n_hosts; i++)
            note_peak(r, c, i);
    replay_recheck(r, at_ms); /* a new snapshot, holds expired: room may have grown */
    return 0;
}

/* Keep the request's shape for the median (replay_stranded_now). */
int replay_note_shape(replay *r, const sched_request *req, vf_error *err)
{
    if (r->n_req == r->cap_req) {
        size_t cap = r->cap_req ? r->cap_req * 2 : 1024;
        if (resize_array((void **)&r->req_cpu, cap, sizeof *r->req_cpu) < 0 ||
            resize_array((void **)&r->req_memory, cap, sizeof *r->req_memory) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory replaying");
            return -1;
        }
        r->cap_req = cap;
    }
    r->req_cpu[r->n_req] = req->cpu;
    r->req_memory[r->n_req++] = (double)req->memory;
    return 0;
}

/* A placement of configuration c on host `index` of the snapshot. */
void replay_note_placement(replay *r, int c, size_t index)
{
    replay_host_peak *p = &r->peaks[r->slot[index]];
    if (p->placements[c]++ == 0)
        r->totals.hosts_used[c]++;
    note_peak(r, c, index);
}

void replay_spare_policy(replay *r, int c, bool strict, int64_t ttl_s)
{
    r->spare_strict[c] = strict;
    r->spare_ttl_s[c] = ttl_s;
}

int replay_decide_spares(replay *r, const sched_request *req, int count, int ready_timeout_s,
                         int64_t at_ms, vf_error *err)
{
    sched_spare_placement placed[2][SCHED_SPARE_MAX_COUNT];
    bool all[2] = {false, false}, refused = false;
    if (replay_note_shape(r, req, err) < 0)
        return -1;
    r->totals.spare_prepares++;
    for (int c = 0; c < 2 && r->hosts; c++) {
        sched_engine *decider = sched_engine_profile(r->engine[c], req->scheduler_name);
        sched_decision last;
        vf_error refusal;
        vf_error_init(&refusal);
        int rc = decider ? sched_spares_place(r->engine[c], decider, req, count, r->spare_strict[c],
                                              req->task_id,
                                              at_ms / 1000 + ready_timeout_s + r->spare_ttl_s[c],
                                              placed[c], &last, &refusal)
                         : -1;
        if (rc < 0 && refusal.code == VF_ENOMEM) {
            vf_error_set(err, VF_ENOMEM, "%s", refusal.text);
            return -1;
        }
        if (rc < 0)
            refused = true;
        if (rc != 1)
            continue;
        all[c] = true;
        r->totals.spares_placed[c]++;
        for (int i = 0; i < count; i++)
            replay_note_placement(r, c, placed[c][i].host_index);
    }
    if (refused)
        r->totals.errors++;
    if (all[0] && all[1]) {
        for (int i = 0; i < count; i++) {
            bool shared = false;
            for (int j = 0; j < count && !shared; j++)
                shared = strcmp(placed[1][i].node->name, placed[0][j].node->name) == 0;
            r->totals.spares_moved += !shared;
        }
    } else if (all[0]) {
        r->totals.spares_newly_unschedulable++;
    } else if (all[1]) {
        r->totals.spares_newly_schedulable++;
    }
    return 0;
}

void replay_release(replay *r, const char *task_id, int64_t at_ms)
{
    for (int c = 0; c < 2; c++) {
        (void)sched_engine_release(r->engine[c], task_id);
        replay_members_drop(r, c, task_id);
    }
    replay_recheck(r, at_ms); /* room grew */
}

void replay_result(const replay *r, replay_totals *totals)
{
    *totals = r->totals;
    replay_outcomes_count(r, totals);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (the lower middle one for an even n). */
static double median(const double *values, size_t n, double *scratch)
{
    memcpy(scratch, values, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, compare_doubles);
    return scratch[(n - 1) / 2];
}

int replay_stranded_now(replay *r, int c, replay_stranded *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (!r->n_req || !r->hosts)
        return 0;
    double *scratch = malloc(r->n_req * sizeof *scratch);
    if (!scratch) {
        vf_error_set(err, VF_ENOMEM, "out of memory computing stranded capacity");
        return -1;
    }
    out->median_cpu = median(r->req_cpu, r->n_req, scratch);
    out->median_memory = median(r->req_memory, r->n_req, scratch);
    free(scratch);
    const sched_params *params = sched_engine_params(r->engine[c]);
    for (size_t i = 0; i < r->hosts->n_hosts; i++) {
        const host *h = &r->hosts->hosts[i];
        if (h->status != HOST_ONLINE)
            continue;
        sched_room room = sched_host_room(params, h, sched_engine_host_load(r->engine[c], i));
        double cpu = room.cpu > 0 ? room.cpu : 0, memory = room.memory > 0 ? room.memory : 0;
        if ((cpu <= 0 && memory <= 0) || (cpu >= out->median_cpu && memory >= out->median_memory))
            continue;
        out->cpu += cpu;
        out->memory += memory;
        out->hosts++;
    }
    return 0;
}

const replay_host_peak *replay_peaks(replay *r, size_t *n)
{
    *n = r->n_peaks;
    return r->peaks;
}
