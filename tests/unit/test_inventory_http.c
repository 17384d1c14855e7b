/* The http and proxmox inventory sources, and common/http, against a real
 * HTTP server on loopback (tests/fakes/fake_http.py) that plays
 * virtflow-scheduler's node API and the Proxmox VE API from fixtures. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http.h"
#include "inventory.h"
#include "source.h"
#include "engine.h"
#include "testlib.h"

#define SECRET "3f1c2a9e-6d4b-4e1f-9a77-token-secret"
#define TOKEN "root@pam!virtflow=" SECRET

static pid_t fake_pid = -1;
static int fake_port;
static char base_url[64];
static char dir[] = "/tmp/vf-inventory-http-XXXXXX";
static char token_path[256];

static int start_fake(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    fake_pid = fork();
    if (fake_pid < 0)
        return -1;
    if (fake_pid == 0) {
        /* If the test dies (a failed sanitizer check aborts it), the fake must
         * not outlive it holding ctest's output pipe open. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            _exit(127);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("python3", "python3", "fakes/fake_http.py", "--route",
               "/nodes=fixtures/inventory/nodeapi/nodes.json", "--route",
               "/wrapped=fixtures/inventory/nodeapi/nodes-wrapped.json", "--route",
               "/wrong-shape=fixtures/inventory/nodeapi/wrong-shape.json", "--route",
               "/bad-host=fixtures/inventory/nodeapi/bad-host.json", "--route",
               "/api2/json/cluster/resources=fixtures/inventory/proxmox/cluster-resources.json",
               "--route", "/api2/json/pools=fixtures/inventory/proxmox/pools.json", "--route",
               "/api2/json/pools/gpu=fixtures/inventory/proxmox/pool-gpu.json", "--route",
               "/api2/json/pools/prod=fixtures/inventory/proxmox/pool-prod.json", "--route",
               "/api2/json/pools/zz-backup=fixtures/inventory/proxmox/pool-zz-backup.json",
               "--route",
               "/api2/json/cluster/status=fixtures/inventory/proxmox/cluster-status.json",
               "--proxmox-token", TOKEN, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[32];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t got = read(fds[0], line + n, 1);
        if (got <= 0 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    close(fds[0]);
    fake_port = atoi(line);
    if (fake_port <= 0)
        return -1;
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d", fake_port);
    return 0;
}

static void stop_fake(void)
{
    if (fake_pid > 0) {
        kill(fake_pid, SIGTERM);
        waitpid(fake_pid, NULL, 0);
        fake_pid = -1;
    }
}

static int fake_control(const char *path_and_query)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", base_url, path_and_query);
    http_request request = {.url = url, .timeout_s = 5};
    http_response response;
    vf_error err;
    vf_error_init(&err);
    if (http_get(&request, &response, &err) < 0)
        return -1;
    int rc = response.status == 200 ? 0 : -1;
    http_response_close(&response);
    return rc;
}

static inventory *new_inventory(config_inventory_source source, const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", base_url, path);
    vf_config config;
    memset(&config, 0, sizeof config);
    config.inventory.source = source;
    config.inventory.url = url;
    config.inventory.token_file = token_path;
    config.inventory.timeout_s = 1.0;
    config.inventory.tls_verify = true;
    vf_error err;
    vf_error_init(&err);
    inventory *inv = inventory_new(&config, &err);
    CHECKF(inv != NULL, "%s", err.text);
    return inv;
}

static void test_http_get(void)
{
    char url[256];
    http_response response;
    vf_error err;

    snprintf(url, sizeof url, "%s/nodes", base_url);
    http_request request = {.url = url, .timeout_s = 5};
    vf_error_init(&err);
    CHECK(http_get(&request, &response, &err) == 0);
    CHECK(response.status == 200);
    CHECK_CONTAINS(response.body, "\"name\": \"node1\"");
    http_response_close(&response);
    http_response_close(&response); /* closing twice is fine */

    /* The body cap is enforced. */
    request.max_body = 64;
    vf_error_init(&err);
    CHECK(http_get(&request, &response, &err) == -1);
    CHECK(response.body == NULL);
    char want[1024];
    snprintf(want, sizeof want, "GET %s: response body exceeds 64 bytes", url);
    CHECK_STR(err.text, want);

    /* Redirects come back as they are, never followed. */
    snprintf(url, sizeof url, "%s/redirect", base_url);
    http_request redirect = {.url = url, .timeout_s = 5};
    vf_error_init(&err);
    CHECK(http_get(&redirect, &response, &err) == 0);
    CHECK(response.status == 302);
    http_response_close(&response);

    /* Credentials in a URL and header values never reach a message. */
    snprintf(url, sizeof url, "http://admin:hunter2@127.0.0.1:%d/nodes?token=hunter2", fake_port);
    const char *bad_headers[] = {"X-Token: hunter2\r\nX-Injected: 1"};
    http_request leaky = {.url = url, .headers = bad_headers, .n_headers = 1};
    vf_error_init(&err);
    CHECK(http_get(&leaky, &response, &err) == -1);
    CHECK(err.code == VF_EINVAL);
    CHECK_CONTAINS(err.text, "header 1 contains control characters");
    CHECK(strstr(err.text, "hunter2") == NULL);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/nodes?...", fake_port);
    CHECK_CONTAINS(err.text, want);

    http_request ftp = {.url = "ftp://127.0.0.1/x"};
    vf_error_init(&err);
    CHECK(http_get(&ftp, &response, &err) == -1);
    CHECK_CONTAINS(err.text, "only http:// and https:// URLs are supported");
}

static void test_node_api(void)
{
    inventory *inv = new_inventory(CONFIG_INVENTORY_HTTP, "/nodes");
    if (!inv)
        return;
    vf_error err;
    vf_error_init(&err);
    hostset *set = inventory_fetch(inv, &err);
    CHECKF(set != NULL, "%s", err.text);
    if (set) {
        CHECK(set->n_hosts == 2);
        const host *node1 = hostset_find(set, "node1");
        CHECK(node1 && node1->cpu == 32 && node1->memory == 131072 && node1->storage == 1000);
        CHECK(node1 && node1->max_vms == 50 && node1->current_vms == 10);
        /* No allocations in the node API: derived from usage. */
        CHECK(node1 && node1->allocated_memory == 65536);
        CHECK(node1 && node1->allocated_cpu > 9.59 && node1->allocated_cpu < 9.61);
        const host *node2 = hostset_find(set, "node2");
        CHECK(node2 && node2->dedicated && strcmp(node2->pool, "general") == 0);
        CHECK(node2 && strcmp(node2->model, "R640") == 0);
        /* The node API's hosts carry labels as the file's do. */
        CHECK(node1 && host_traits_label(node1->traits, "rack") &&
              strcmp(host_traits_label(node1->traits, "rack"), "r1") == 0 &&
              strcmp(host_traits_label(node1->traits, "zone"), "z1") == 0);
        CHECK(node2 && node2->traits == NULL);
    }
    hostset_free(set);
    inventory_free(inv);

    inv = new_inventory(CONFIG_INVENTORY_HTTP, "/wrapped");
    vf_error_init(&err);
    set = inv ? inventory_fetch(inv, &err) : NULL;
    CHECKF(set && set->n_hosts == 1 && hostset_find(set, "node9"), "%s", err.text);
    hostset_free(set);
    inventory_free(inv);

    struct {
        const char *path;
        const char *message;
    } failures[] = {
        {"/wrong-shape", "expected a list of hosts, or a mapping with a nodes: list"},
        {"/bad-host", "host 2 (node2): usage_cpu: expected a fraction 0..1 (0.3 means 30%)"},
        {"/missing", "HTTP 404"},
        {"/redirect", "HTTP 302"},
    };
    for (size_t i = 0; i < sizeof failures / sizeof failures[0]; i++) {
        inv = new_inventory(CONFIG_INVENTORY_HTTP, failures[i].path);
        vf_error_init(&err);
        set = inv ? inventory_fetch(inv, &err) : NULL;
        CHECK(set == NULL);
        CHECK(err.code == VF_EUNAVAILABLE);
        char want[1024];
        snprintf(want, sizeof want, "GET %s%s: %s", base_url, failures[i].path,
                 failures[i].message);
        CHECK_STR(err.text, want);
        hostset_free(set);
        inventory_free(inv);
    }
}

/* The API goes bad in every way we know; the last good hosts stay in use. */
static void test_node_api_outage_keeps_last_good(void)
{
    inventory *inv = new_inventory(CONFIG_INVENTORY_HTTP, "/nodes");
    if (!inv)
        return;
    vf_error err;
    vf_error_init(&err);
    CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
    inventory_view before;
    inventory_acquire(inv, &before);
    /* The same body again: the same snapshot, fetched anew (not parsed). */
    CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
    inventory_view again;
    inventory_acquire(inv, &again);
    CHECK(again.hosts == before.hosts && again.fetch == before.fetch + 1 && !again.stale);
    inventory_release(&again);

    struct {
        const char *mode;
        const char *message;
    } outages[] = {
        {"500", "HTTP 500"},
        {"garbage", "response is not JSON"},
        {"hang", "no answer within 1 s"},
    };
    for (size_t i = 0; i < sizeof outages / sizeof outages[0]; i++) {
        char control[64];
        snprintf(control, sizeof control, "/_control/mode?m=%s", outages[i].mode);
        CHECK(fake_control(control) == 0);
        vf_error_init(&err);
        CHECK(inventory_refresh(inv, &err) == -1);
        char want[1024];
        snprintf(want, sizeof want, "GET %s/nodes: %s", base_url, outages[i].message);
        CHECK_CONTAINS(err.text, want);

        inventory_view view;
        inventory_acquire(inv, &view);
        CHECK(view.stale);
        CHECK(view.hosts && view.hosts->n_hosts == 2 && hostset_find(view.hosts, "node1"));
        CHECK_CONTAINS(view.error, want);
        char why_buf[512];
        const char *why = why_buf;
        CHECK(inventory_view_describe(&view, why_buf, sizeof why_buf));
        CHECK_CONTAINS(why, "inventory is stale (");
        CHECK_CONTAINS(why, want);
        inventory_release(&view);
    }

    CHECK(fake_control("/_control/mode?m=ok") == 0);
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == 0);
    inventory_view view;
    inventory_acquire(inv, &view);
    CHECK(!view.stale && view.error[0] == '\0' && view.hosts && view.hosts->n_hosts == 2);
    /* Back with the bytes it had: the snapshot of before the outage, fetched now. */
    CHECK(view.hosts == before.hosts && view.fetch > before.fetch);
    inventory_release(&view);
    /* Other bytes (one host, wrapped in {"nodes": ...}): parsed. */
    inventory *wrapped = new_inventory(CONFIG_INVENTORY_HTTP, "/wrapped");
    if (wrapped) {
        inventory_adopt_settings(inv, wrapped);
        vf_error_init(&err);
        CHECKF(inventory_refresh(inv, &err) == 0, "%s", err.text);
        inventory_acquire(inv, &view);
        CHECK(view.hosts && view.hosts != before.hosts && view.hosts->n_hosts == 1 &&
              hostset_find(view.hosts, "node9"));
        inventory_release(&view);
    }
    inventory_release(&before);
    inventory_free(inv);
}

static void test_proxmox(void)
{
    inventory *inv = new_inventory(CONFIG_INVENTORY_PROXMOX, "/");
    if (!inv)
        return;
    vf_error err;
    vf_error_init(&err);
    hostset *set = inventory_fetch(inv, &err);
    CHECKF(set != NULL, "%s", err.text);
    if (set) {
        CHECK(set->n_hosts == 3);
        const host *pve1 = hostset_find(set, "pve1");
        CHECK(pve1 && pve1->status == HOST_ONLINE);
        CHECK(pve1 && pve1->cpu == 32 && pve1->usage_cpu == 0.25);
        CHECK(pve1 && pve1->memory == 131072 && pve1->usage_mem == 0.25);
        CHECK(pve1 && pve1->storage == 90);
        /* VMs 100 and 101 (stopped) count; template 9000 does not. */
        CHECK(pve1 && pve1->allocated_cpu == 6 && pve1->allocated_memory == 12288);
        CHECK(pve1 && pve1->current_vms == 2 && pve1->max_vms == 1000);
        /* Pools from Proxmox: pve1's storage local-lvm is in pool prod (and
         * its backup storage in zz-backup, which sorts later). */
        CHECK(pve1 && strcmp(pve1->pool, "prod") == 0 && !pve1->dedicated);
        const host *pve2 = hostset_find(set, "pve2");
        CHECK(pve2 && pve2->allocated_cpu == 9 && pve2->allocated_memory == 16896);
        CHECK(pve2 && pve2->current_vms == 2 && pve2->memory == 65536);
        CHECK(pve2 && pve2->usage_mem == 0.75 && pve2->storage == 90);
        /* pve2's storage is in gpu, whose comment marks it dedicated. */
        CHECK(pve2 && strcmp(pve2->pool, "gpu") == 0 && pve2->dedicated);
        /* ... and gives it traits and 4 GPUs; pve1's pools mark none. */
        CHECK(pve2 && pve2->traits && pve2->traits->traits.n == 2 &&
              trait_set_has(&pve2->traits->traits, "CUSTOM_GPU") &&
              trait_set_has(&pve2->traits->traits, "nvme") &&
              resource_amounts_get(&pve2->traits->resources, "gpu") == 4);
        CHECK(pve1 && pve1->traits && pve1->traits->traits.n == 0 &&
              pve1->traits->resources.n == 0);
        /* Topology labels: prod's comment puts pve1 in rack r1, zone z1; every
         * node is labelled with its cluster's name (cluster/status), unless
         * its pool's comment says otherwise (gpu's: gpu-lab). */
        CHECK(pve1 && host_traits_label(pve1->traits, "rack") &&
              strcmp(host_traits_label(pve1->traits, "rack"), "r1") == 0 &&
              strcmp(host_traits_label(pve1->traits, "zone"), "z1") == 0 &&
              strcmp(host_traits_label(pve1->traits, "cluster"), "pve-east") == 0);
        CHECK(pve2 && host_traits_label(pve2->traits, "rack") &&
              strcmp(host_traits_label(pve2->traits, "rack"), "r2") == 0 &&
              strcmp(host_traits_label(pve2->traits, "cluster"), "gpu-lab") == 0 &&
              !host_traits_label(pve2->traits, "zone"));
        /* The offline node is kept, so decisions can say "node offline". */
        const host *pve3 = hostset_find(set, "pve3");
        CHECK(pve3 && pve3->status == HOST_OFFLINE && pve3->cpu == 0);
        /* pve1's cpu and mem are measurements (TargetLoadPacking reads them);
         * the offline pve3 carries none: unknown, not idle. */
        CHECK(pve1 && pve1->has_usage_cpu && pve1->has_usage_mem);
        CHECK(pve3 && !pve3->has_usage_cpu && !pve3->has_usage_mem);
        CHECK(pve3 && pve3->current_vms == 1);
        /* Only a guest of pve3 is in a pool: the node stays in default. */
        CHECK(pve3 && strcmp(pve3->pool, "default") == 0 && !pve3->dedicated);
        CHECK(pve3 && pve3->traits && pve3->traits->labels.n == 1 &&
              strcmp(host_traits_label(pve3->traits, "cluster"), "pve-east") == 0);
        const uint32_t used[] = {100, 101, 102, 103, 105, 9000};
        CHECK(set->n_used_vmids == 6);
        for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
            CHECKF(hostset_vmid_used(set, used[i]), "vmid %u", used[i]);
        CHECK(!hostset_vmid_used(set, 104));
        /* Each guest on its node: what ends a reservation for that node. */
        CHECK(hostset_guest_on(set, 100, "pve1") && hostset_guest_on(set, 102, "pve2"));
        CHECK(hostset_guest_on(set, 103, "pve3") && !hostset_guest_on(set, 102, "pve1"));

        /* The engine sees them: a dedicated gpu request lands on pve2, a
         * shared one cannot (dedicated_exclusive keeps it off pve2). */
        sched_params params;
        memset(&params, 0, sizeof params);
        params.overcommit_cpu = 4;
        params.overcommit_memory = 1;
        params.subset_size = 1;
        params.dedicated_exclusive = true;
        sched_engine *engine = sched_engine_new(&params, &err);
        CHECK(engine && sched_engine_set_hosts(engine, set, NULL, NULL, &err) == 0);
        sched_request req;
        sched_request_init(&req);
        req.cpu = 1;
        req.memory = 1024;
        snprintf(req.pool, sizeof req.pool, "gpu");
        req.dedicated = true;
        sched_decision d;
        CHECK(engine && sched_engine_decide(engine, &req, &d, &err) == 0);
        CHECK_STR(d.node ? d.node->name : NULL, "pve2");
        req.dedicated = false;
        CHECK(engine && sched_engine_decide(engine, &req, &d, &err) == 0);
        CHECK(!d.placed);
        CHECK_CONTAINS(d.message, "dedicated host");
        snprintf(req.pool, sizeof req.pool, "prod");
        CHECK(engine && sched_engine_decide(engine, &req, &d, &err) == 0);
        CHECK_STR(d.node ? d.node->name : NULL, "pve1");
        sched_engine_free(engine);
    }
    hostset_free(set);

    /* Stale cache over Proxmox too. */
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == 0);
    CHECK(fake_control("/_control/mode?m=500") == 0);
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == -1);
    char want[1024];
    snprintf(want, sizeof want, "GET %s/api2/json/cluster/resources: HTTP 500", base_url);
    CHECK_STR(err.text, want);
    inventory_view view;
    inventory_acquire(inv, &view);
    CHECK(view.stale && view.hosts && view.hosts->n_hosts == 3);
    inventory_release(&view);
    CHECK(fake_control("/_control/mode?m=ok") == 0);
    inventory_free(inv);
}

static void test_proxmox_token_errors(void)
{
    /* A wrong token gets 401; the message helps and holds no secret. */
    FILE *f = fopen(token_path, "w");
    fputs("root@pam!virtflow=wrong-" SECRET "\n", f);
    fclose(f);
    inventory *inv = new_inventory(CONFIG_INVENTORY_PROXMOX, "");
    vf_error err;
    vf_error_init(&err);
    hostset *set = inv ? inventory_fetch(inv, &err) : NULL;
    CHECK(set == NULL);
    char want[1024];
    snprintf(want, sizeof want,
             "GET %s/api2/json/cluster/resources: HTTP 401: the API token was refused (check "
             "inventory.token_file)",
             base_url);
    CHECK_STR(err.text, want);
    CHECK(strstr(err.text, SECRET) == NULL);
    hostset_free(set);

    /* A token with a line break inside would smuggle a header: refused, unshown. */
    f = fopen(token_path, "w");
    fputs("root@pam!virtflow=" SECRET "\nX-Other: 1\n", f);
    fclose(f);
    vf_error_init(&err);
    set = inv ? inventory_fetch(inv, &err) : NULL;
    CHECK(set == NULL);
    CHECK(err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, "more than one line or control characters");
    CHECK(strstr(err.text, SECRET) == NULL);
    hostset_free(set);

    remove(token_path);
    vf_error_init(&err);
    set = inv ? inventory_fetch(inv, &err) : NULL;
    CHECK(set == NULL);
    snprintf(want, sizeof want, "inventory.token_file %s: cannot open: No such file or directory",
             token_path);
    CHECK_STR(err.text, want);
    hostset_free(set);
    inventory_free(inv);
}

/* Pools straight through the parser: the first poolid in name order wins
 * whatever order Proxmox lists them in; a malformed pool is an error, not a
 * silently shared node. */
static void test_proxmox_pools_parse(void)
{
    char *text = test_read_file("fixtures/inventory/proxmox/cluster-resources.json", NULL);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    CHECK(root != NULL);
    if (!root)
        return;
    json_t *pools = json_loads(
        "[{\"poolid\": \"zz\", \"comment\": \"virtflow:dedicated\", \"members\": "
        "[{\"id\": \"storage/pve1/a\", \"node\": \"pve1\", \"storage\": \"a\", \"type\": "
        "\"storage\"}]},"
        " {\"poolid\": \"aa\", \"members\": [{\"id\": \"storage/pve1/b\", \"node\": \"pve1\", "
        "\"storage\": \"b\", \"type\": \"storage\"}, {\"id\": \"lxc/105\", \"node\": \"pve2\", "
        "\"type\": \"lxc\", \"vmid\": 105}]}]",
        0, NULL);
    vf_error err;
    vf_error_init(&err);
    hostset *set = source_proxmox_parse_pools(root, pools, &err);
    CHECKF(set != NULL, "%s", err.text);
    if (set) {
        const host *pve1 = hostset_find(set, "pve1"), *pve2 = hostset_find(set, "pve2");
        CHECK(pve1 && strcmp(pve1->pool, "aa") == 0 && !pve1->dedicated);
        CHECK(pve2 && strcmp(pve2->pool, "default") == 0); /* a container says nothing */
    }
    hostset_free(set);
    json_decref(pools);

    pools = json_loads("[{\"poolid\": \"bad pool\"}]", 0, NULL);
    vf_error_init(&err);
    CHECK(source_proxmox_parse_pools(root, pools, &err) == NULL);
    CHECK_STR(err.text, "pools[0]: pool without a valid poolid");
    json_decref(pools);
    /* Labels from a comment: malformed words are left out, a repeated key
     * keeps its last value; a standalone node (no cluster) gets no label. */
    pools = json_loads(
        "[{\"poolid\": \"p\", \"comment\": \"virtflow:label:rack=r9 virtflow:label:=x "
        "virtflow:label:pdu virtflow:label:pdu=p3 virtflow:label:rack=r4\", \"members\": "
        "[{\"id\": \"storage/pve1/a\", \"node\": \"pve1\", \"storage\": \"a\", \"type\": "
        "\"storage\"}]}]",
        0, NULL);
    vf_error_init(&err);
    set = source_proxmox_parse_pools(root, pools, &err);
    CHECKF(set != NULL, "%s", err.text);
    if (set) {
        const host *pve1 = hostset_find(set, "pve1"), *pve2 = hostset_find(set, "pve2");
        CHECK(pve1 && pve1->traits && pve1->traits->labels.n == 2 &&
              strcmp(host_traits_label(pve1->traits, "rack"), "r4") == 0 &&
              strcmp(host_traits_label(pve1->traits, "pdu"), "p3") == 0);
        CHECK(pve2 && pve2->traits == NULL);
    }
    hostset_free(set);
    json_decref(pools);
    json_t *status = json_loads("{\"data\": [{\"type\": \"node\", \"name\": \"pve1\"}]}", 0, NULL);
    CHECK(source_proxmox_cluster_name(status) == NULL);
    json_decref(status);
    pools = json_loads("[{\"poolid\": \"p\", \"members\": {}}]", 0, NULL);
    vf_error_init(&err);
    CHECK(source_proxmox_parse_pools(root, pools, &err) == NULL);
    CHECK_STR(err.text, "pools[0] (p): members is not a list");
    json_decref(pools);
    json_decref(root);
}

static void test_proxmox_parse_rejects_wrong_shape(void)
{
    char *text = test_read_file("fixtures/inventory/proxmox/not-data.json", NULL);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    vf_error err;
    vf_error_init(&err);
    hostset *set = source_proxmox_parse(root, &err);
    CHECK(set == NULL);
    CHECK_STR(err.text, "expected {\"data\": [...]}");
    json_decref(root);
    free(text);
}

static void test_server_gone(void)
{
    inventory *inv = new_inventory(CONFIG_INVENTORY_HTTP, "/nodes");
    if (!inv)
        return;
    vf_error err;
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == 0);
    stop_fake();
    vf_error_init(&err);
    CHECK(inventory_refresh(inv, &err) == -1);
    CHECK(err.code == VF_EUNAVAILABLE);
    char want[1024];
    snprintf(want, sizeof want, "GET %s/nodes: ", base_url);
    CHECK_CONTAINS(err.text, want);
    inventory_view view;
    inventory_acquire(inv, &view);
    CHECK(view.stale && view.hosts && view.hosts->n_hosts == 2);
    inventory_release(&view);
    inventory_free(inv);
}

/* Sizes past any machine's (a broken API, or the fuzzer's 1e300 bytes) are
 * held at 2^62 units, not cast into an overflowing integer (undefined); a
 * negative one is 0. */
static void test_proxmox_absurd_sizes(void)
{
    json_error_t jerr;
    json_t *root = json_loads("{\"data\": [{\"type\": \"node\", \"node\": \"pve1\", "
                              "\"status\": \"online\", \"maxcpu\": 8, \"maxmem\": 1e300, "
                              "\"mem\": 0, \"maxdisk\": 1e300, \"disk\": -1e300}, "
                              "{\"type\": \"node\", \"node\": \"pve2\", \"status\": "
                              "\"online\", \"maxcpu\": 8, \"maxmem\": -5e20, \"mem\": 0}]}",
                              0, &jerr);
    CHECKF(root != NULL, "%s", jerr.text);
    vf_error err;
    vf_error_init(&err);
    hostset *set = source_proxmox_parse(root, &err);
    CHECKF(set != NULL, "%s", err.text);
    const host *a = set ? hostset_find(set, "pve1") : NULL;
    const host *b = set ? hostset_find(set, "pve2") : NULL;
    CHECK(a && a->memory == INT64_C(4611686018427387904) &&
          a->storage == INT64_C(4611686018427387904));
    CHECK(b && b->memory == 0);
    hostset_free(set);
    json_decref(root);
}

int main(void)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(http_global_init(&err) == 0, "%s", err.text);
    test_proxmox_absurd_sizes();
    CHECK(mkdtemp(dir) != NULL);
    snprintf(token_path, sizeof token_path, "%s/pve.token", dir);
    FILE *f = fopen(token_path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("  " TOKEN "  \n", f); /* surrounding blanks are trimmed */
        fclose(f);
    }
    if (start_fake() < 0) {
        CHECKF(false, "cannot start fakes/fake_http.py with python3");
        stop_fake();
        return test_summary();
    }
    test_http_get();
    test_node_api();
    test_node_api_outage_keeps_last_good();
    test_proxmox();
    test_proxmox_token_errors();
    test_proxmox_parse_rejects_wrong_shape();
    test_proxmox_pools_parse();
    test_server_gone();
    stop_fake();
    remove(token_path);
    rmdir(dir);
    return test_summary();
}
