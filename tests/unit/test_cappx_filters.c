/* virtflow's answers to CAPPX against CAPPX's own qemu-scheduler filters
 * (docs/cappx.md "CAPPX's own filters"). When the admission webhook has set
 * spec.node and spec.vmID, CAPPX still runs its scheduler on create: every
 * enabled filter over every node, then the one node left, then the vmid
 * given. So each of virtflow's placements must pass the filters left on,
 * or the machine is never created.
 *
 * CAPPX's rules, restated here in our words from its published source,
 * github.com/k8s-proxmox/cluster-api-provider-proxmox at tag v0.4.3 (commit
 * def20e29bc7277d8c0599e0c861f459c5169a921):
 *   cloud/scheduler/plugins/registry.go lines 54-70: the filters, in order
 *     NodeName, CPUOvercommit, MemoryOvercommit, NodeRegex, each on unless
 *     the plugin-config file says `enable: false`;
 *   cloud/scheduler/scheduler.go lines 281-310 and 358-379: SelectNode runs
 *     the enabled filters on every node (the first to fail rejects it), is
 *     done when one node is left (lines 295-297), scores otherwise; lines
 *     312-326: SelectVMID returns the machine's vmid when it has one;
 *   cloud/services/compute/instance/qemu.go lines 102-157: the create
 *     options carry spec.node as Node (line 138), spec.vmID as VMID (line
 *     155), hardware cpu and sockets as Cores and Sockets, memory (MiB);
 *   cloud/scheduler/plugins/nodename/node_name.go lines 25-37: a node passes
 *     when Node is empty or is its name;
 *   cloud/scheduler/plugins/overcommit/cpu_overcommit.go lines 26-52: a
 *     node is rejected when (the vCPUs of its RUNNING QEMU VMs + cores x
 *     sockets, sockets 0 counting 1) / its maxcpu is above 4, in float32;
 *   cloud/scheduler/plugins/overcommit/memory_overcommit.go lines 26-48: a
 *     node is rejected when (the maxmem bytes of its running QEMU VMs +
 *     memory MiB x 2^20) / its maxmem is 1 or more, in float32;
 *   cloud/scheduler/plugins/regex/node_regex.go lines 28-54: with the
 *     annotation node.qemu-scheduler/regex, a node whose name the Go regexp
 *     does not match anywhere is rejected (no annotation, or one that does
 *     not compile: every node passes).
 * Its shipped ConfigMap qemu-scheduler-configs (config/manager/manager.yaml
 * lines 115-134, since v0.3.3) turns the two overcommit filters off; the
 * code's default, with no plugin-config or one that does not name them,
 * is on.
 *
 * The cluster: tests/fixtures/cappx/cluster-resources.json, in the shape of
 * Proxmox VE's GET /cluster/resources; virtflow reads it with its proxmox
 * source's parser. Each machine virtflow places is then created, running,
 * in CAPPX's view of its node. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "sched_fixture.h"
#include "source.h"
#include "testlib.h"

#define GIB 1073741824.0
#define MIB 1048576.0

/* ---- CAPPX's view of a node (framework.NodeInfo: the node and its QEMU
 * VMs) and its filters, as restated above. ---- */

typedef struct cappx_node {
    char name[64];
    double maxcpu;       /* api.Node MaxCpu */
    double maxmem;       /* bytes */
    double running_cpus; /* sum of Cpus of its running QEMU VMs */
    double running_mem;  /* sum of MaxMem (bytes) of its running QEMU VMs */
} cappx_node;

typedef struct cappx_machine {
    const char *node; /* spec.node */
    int cores, sockets;
    int64_t memory_mib;
    const char *node_regex; /* the annotation; NULL none */
} cappx_machine;

typedef struct cappx_plugins {
    bool node_name, cpu_overcommit, memory_overcommit, node_regex;
} cappx_plugins;

/* Every filter on: CAPPX without a plugin-config naming them. */
static const cappx_plugins cappx_code_defaults = {true, true, true, true};
/* docs/cappx.md's plugin-config: the two overcommit filters off. */
static const cappx_plugins cappx_recommended = {true, false, false, true};

static bool cappx_node_name_passes(const cappx_machine *m, const cappx_node *n)
{
    return !m->node || !m->node[0] || strcmp(m->node, n->name) == 0;
}

static bool cappx_cpu_passes(const cappx_machine *m, const cappx_node *n)
{
    int sockets = m->sockets == 0 ? 1 : m->sockets;
    float ratio = (float)(n->running_cpus + m->cores * sockets) / (float)n->maxcpu;
    return !(ratio > 4);
}

static bool cappx_memory_passes(const cappx_machine *m, const cappx_node *n)
{
    float ratio = (float)(n->running_mem + MIB * (double)m->memory_mib) / (float)n->maxmem;
    return !(ratio >= 1);
}

/* Go's regexp.MatchString: a match anywhere (POSIX ERE stands in for the
 * simple patterns used here). */
static bool cappx_regex_passes(const cappx_machine *m, const cappx_node *n)
{
    regex_t re;
    if (!m->node_regex || regcomp(&re, m->node_regex, REG_EXTENDED | REG_NOSUB) != 0)
        return true;
    bool ok = regexec(&re, n->name, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* SelectNode's filter step: how many nodes pass, and the last one that does
 * (the node CAPPX creates the VM on when it is the only one). */
static size_t cappx_feasible(const cappx_plugins *on, const cappx_machine *m,
                             const cappx_node *nodes, size_t n, const char **only)
{
    size_t feasible = 0;
    *only = NULL;
    for (size_t i = 0; i < n; i++) {
        const cappx_node *node = &nodes[i];
        if ((on->node_name && !cappx_node_name_passes(m, node)) ||
            (on->cpu_overcommit && !cappx_cpu_passes(m, node)) ||
            (on->memory_overcommit && !cappx_memory_passes(m, node)) ||
            (on->node_regex && !cappx_regex_passes(m, node)))
            continue;
        feasible++;
        *only = node->name;
    }
    return feasible;
}

/* CAPPX's view of the fixture cluster: nodes, with their running QEMU VMs
 * (not stopped ones, not containers, not templates). */
static size_t cappx_view(const json_t *root, cappx_node *nodes, size_t max)
{
    size_t n = 0, i;
    const json_t *item;
    json_array_foreach(json_object_get(root, "data"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || strcmp(type, "node") != 0 || n >= max)
            continue;
        cappx_node *node = &nodes[n++];
        memset(node, 0, sizeof *node);
        snprintf(node->name, sizeof node->name, "%s",
                 json_string_value(json_object_get(item, "node")));
        node->maxcpu = json_number_value(json_object_get(item, "maxcpu"));
        node->maxmem = json_number_value(json_object_get(item, "maxmem"));
    }
    json_array_foreach(json_object_get(root, "data"), i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        const char *status = json_string_value(json_object_get(item, "status"));
        const char *on = json_string_value(json_object_get(item, "node"));
        if (!type || strcmp(type, "qemu") != 0 || !status || strcmp(status, "running") != 0)
            continue;
        for (size_t k = 0; k < n; k++)
            if (on && strcmp(nodes[k].name, on) == 0) {
                nodes[k].running_cpus += json_number_value(json_object_get(item, "maxcpu"));
                nodes[k].running_mem += json_number_value(json_object_get(item, "maxmem"));
            }
    }
    return n;
}

/* ---- virtflow's side ---- */

typedef struct world {
    json_t *root;
    hostset *hosts;
    sched_engine *engine;
    cappx_node nodes[8];
    size_t n_nodes;
    int placed;
} world;

static bool world_open(world *w, double overcommit_cpu, double overcommit_memory)
{
    memset(w, 0, sizeof *w);
    char *text = test_read_file("fixtures/cappx/cluster-resources.json", NULL);
    w->root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    vf_error err;
    vf_error_init(&err);
    w->hosts = w->root ? source_proxmox_parse(w->root, &err) : NULL;
    CHECKF(w->hosts != NULL, "%s", err.text);
    sched_params params;
    fixture_params(&params);
    params.overcommit_cpu = overcommit_cpu;
    params.overcommit_memory = overcommit_memory;
    w->engine = w->hosts ? sched_engine_new(&params, &err) : NULL;
    CHECK(w->engine && sched_engine_set_hosts(w->engine, w->hosts, NULL, NULL, &err) == 0);
    w->n_nodes = w->root ? cappx_view(w->root, w->nodes, 8) : 0;
    return w->engine != NULL && w->n_nodes == 2;
}

static void world_close(world *w)
{
    sched_engine_free(w->engine);
    hostset_free(w->hosts);
    json_decref(w->root);
}

/* What CAPPX does with one of virtflow's answers. */
typedef struct verdict {
    bool placed;                       /* virtflow placed the machine */
    bool created_default;              /* CAPPX, every filter on, creates it where virtflow said */
    bool created_ours;                 /* CAPPX with the recommended plugin-config does */
    size_t feasible_without_node_name; /* nodes passing with NodeName off too */
} verdict;

/* Place `m` (spec.node left to virtflow) by the engine, as the webhook's
 * task would, hold it, and judge the answer by CAPPX's filters; the VM then
 * runs on its node in CAPPX's view. */
static verdict place_and_judge(world *w, cappx_machine m)
{
    verdict v = {0};
    sched_request req;
    fixture_request(&req, m.cores * (m.sockets ? m.sockets : 1), m.memory_mib);
    if (m.node_regex)
        snprintf(req.node_regex, sizeof req.node_regex, "%s", m.node_regex);
    snprintf(req.task_id, sizeof req.task_id, "cappx-%d", w->placed);
    sched_decision d;
    vf_error err;
    vf_error_init(&err);
    CHECKF(sched_engine_decide(w->engine, &req, &d, &err) == 0, "%s", err.text);
    if (!d.placed)
        return v;
    v.placed = true;
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, req.task_id, 0);
    CHECK(sched_engine_reserve(w->engine, &res, &err) == 0);
    w->placed++;
    m.node = d.node->name;
    const char *only = NULL;
    v.created_default =
        cappx_feasible(&cappx_code_defaults, &m, w->nodes, w->n_nodes, &only) == 1 &&
        strcmp(only, d.node->name) == 0;
    v.created_ours = cappx_feasible(&cappx_recommended, &m, w->nodes, w->n_nodes, &only) == 1 &&
                     strcmp(only, d.node->name) == 0;
    cappx_plugins no_name = cappx_recommended;
    no_name.node_name = false;
    v.feasible_without_node_name = cappx_feasible(&no_name, &m, w->nodes, w->n_nodes, &only);
    for (size_t k = 0; k < w->n_nodes; k++)
        if (strcmp(w->nodes[k].name, d.node->name) == 0) {
            w->nodes[k].running_cpus += m.cores * (m.sockets ? m.sockets : 1);
            w->nodes[k].running_mem += MIB * (double)m.memory_mib;
        }
    return v;
}

/* Ordinary machines, as a cluster's workers are: every answer passes
 * CAPPX's filters, defaults included (virtflow counts what CAPPX counts and
 * more: stopped guests, containers, placements not yet created). */
static void test_ordinary_machines_agree(void)
{
    world w;
    if (!world_open(&w, 4, 1))
        return;
    int agreed = 0, placed = 0;
    for (int i = 0; i < 10; i++) {
        cappx_machine m = {NULL, 2, 1, 4096, i % 3 == 0 ? "pve1" : NULL};
        verdict v = place_and_judge(&w, m);
        placed += v.placed;
        agreed += v.placed && v.created_default && v.created_ours;
    }
    CHECKF(placed == 10 && agreed == 10, "%d placed, %d as CAPPX would create them", placed,
           agreed);
    world_close(&w);
}

/* A machine that fills pve2's memory exactly: virtflow places it (committed
 * equal to capacity fits), CAPPX's MemoryOvercommit refuses a ratio of 1:
 * with CAPPX's defaults the machine is never created. */
static void test_memory_overcommit_must_be_off(void)
{
    world w;
    if (!world_open(&w, 4, 1))
        return;
    /* pve2: 64 GiB, 16 GiB running; 48 GiB fills it. */
    cappx_machine m = {NULL, 4, 1, 48 * 1024, "pve2"};
    verdict v = place_and_judge(&w, m);
    CHECK(v.placed);
    CHECK(!v.created_default);
    CHECK(v.created_ours);
    world_close(&w);
}

/* With scheduler.overcommit.cpu 8, virtflow places past CAPPX's fixed
 * ratio of 4: its CPUOvercommit refuses what virtflow was told to allow. */
static void test_cpu_overcommit_must_be_off(void)
{
    world w;
    if (!world_open(&w, 8, 1))
        return;
    /* pve2: 16 cores, 16 vCPUs running; 64 more is 5 per core. */
    cappx_machine m = {NULL, 32, 2, 4096, "pve2"};
    verdict v = place_and_judge(&w, m);
    CHECK(v.placed);
    CHECK(!v.created_default);
    CHECK(v.created_ours);
    world_close(&w);
}

/* NodeName must stay on: it is what makes CAPPX create the VM on spec.node.
 * Off, more than one node passes the filters left (CAPPX then scores and
 * picks its own); and NodeRegex agrees with virtflow, which matched the
 * same annotation on the whole name, so it may stay on. */
static void test_node_name_must_stay_on(void)
{
    world w;
    if (!world_open(&w, 4, 1))
        return;
    cappx_machine m = {NULL, 2, 1, 2048, NULL};
    verdict v = place_and_judge(&w, m);
    CHECK(v.placed && v.created_ours);
    CHECK(v.feasible_without_node_name == 2);
    cappx_machine named = {NULL, 2, 1, 2048, "pve[12]"};
    v = place_and_judge(&w, named);
    CHECK(v.placed && v.created_ours && v.created_default);
    world_close(&w);
}

int main(void)
{
    test_ordinary_machines_agree();
    test_memory_overcommit_must_be_off();
    test_cpu_overcommit_must_be_off();
    test_node_name_must_stay_on();
    return test_summary();
}
