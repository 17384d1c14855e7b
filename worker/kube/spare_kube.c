#include "spare_kube.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "json_util.h"
#include "secret_file.h"

/* An eviction refused (429) is tried this often, a second apart, before the
 * step fails and is retried by the driver's backoff. */
#define EVICTION_TRIES 10

int spare_kube_api_for(const vf_config *config, const char *cluster, spare_kube_api *out,
                       vf_error *err)
{
    out->api_url = config->spare.readiness.api_url;
    out->token_file = config->spare.readiness.token_file;
    out->ca_file = config->spare.readiness.ca_file;
    if (config->spare.n_clusters == 0 || !cluster || !*cluster)
        return 0;
    const config_cluster *c = config_spare_cluster(config, cluster);
    if (!c) {
        char names[256] = "";
        size_t used = 0;
        for (size_t i = 0; i < config->spare.n_clusters && used < sizeof names; i++) {
            int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                             config->spare.clusters[i].name);
            if (n < 0)
                break;
            used += (size_t)n;
        }
        vf_error_set(err, VF_EINVAL, "unknown cluster \"%s\": spare.clusters has %s", cluster,
                     names);
        return -1;
    }
    out->api_url = c->api_url;
    out->token_file = c->token_file;
    out->ca_file = c->ca_file;
    return 0;
}

/* One call to the API: path (already escaped) appended to api_url. */
static int call(const spare_kube_api *api, const char *method, const char *path,
                const char *content_type, const char *body, double timeout_s, http_response *resp,
                vf_error *err)
{
    if (!api->api_url) {
        vf_error_set(err, VF_ECONFIG, "no Kubernetes API configured (spare.readiness.api_url)");
        return -1;
    }
    char token[SECRET_FILE_MAX];
    if (!api->token_file) {
        vf_error_set(err, VF_ECONFIG, "no Kubernetes token_file configured");
        return -1;
    }
    if (secret_file_read("kubernetes token_file", api->token_file, token, sizeof token, err) < 0)
        return -1;
    char auth[SECRET_FILE_MAX + 32], type[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    memset(token, 0, sizeof token);
    snprintf(type, sizeof type, "Content-Type: %s",
             content_type ? content_type : "application/json");
    const char *headers[] = {auth, "Accept: application/json", type};
    char url[2048];
    size_t base = strlen(api->api_url);
    while (base > 0 && api->api_url[base - 1] == '/')
        base--;
    snprintf(url, sizeof url, "%.*s%s", (int)base, api->api_url, path);
    http_request req = {.url = url,
                        .headers = headers,
                        .n_headers = body ? 3 : 2,
                        .timeout_s = timeout_s,
                        .ca_file = api->ca_file};
    int rc = strcmp(method, "GET") == 0 ? http_get(&req, resp, err)
                                        : http_send(&req, method, body, resp, err);
    memset(auth, 0, sizeof auth);
    return rc;
}

int spare_kube_ready(const spare_kube_api *api, int poll_s, const char *name, char *why,
                     size_t size)
{
    vf_error err;
    vf_error_init(&err);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    http_response resp;
    double timeout_s = poll_s > 10 ? 10 : (poll_s > 1 ? poll_s : 2);
    if (call(api, "GET", path, NULL, NULL, timeout_s, &resp, &err) < 0) {
        snprintf(why, size, "%s", err.text);
        return 0;
    }
    int ready = 0;
    if (resp.status == 404) {
        snprintf(why, size, "node not joined yet (404)");
    } else if (resp.status != 200) {
        snprintf(why, size, "Kubernetes API answered HTTP %ld", resp.status);
    } else {
        json_t *node = json_loadb(resp.body, resp.body_len, 0, NULL);
        json_t *conditions = json_object_get(json_object_get(node, "status"), "conditions");
        size_t i;
        json_t *condition;
        snprintf(why, size, "node has no Ready condition yet");
        json_array_foreach(conditions, i, condition)
        {
            const char *type = json_string_value(json_object_get(condition, "type"));
            const char *status = json_string_value(json_object_get(condition, "status"));
            if (type && strcmp(type, "Ready") == 0) {
                ready = status && strcmp(status, "True") == 0;
                snprintf(why, size, "Ready is %s", status ? status : "(missing)");
            }
        }
        json_decref(node);
    }
    http_response_close(&resp);
    return ready;
}

static int status_error(const http_response *resp, const char *what, vf_error *err)
{
    /* The API explains itself in a Status object's "message". */
    json_t *status = json_loadb(resp->body, resp->body_len, 0, NULL);
    const char *message = json_string_value(json_object_get(status, "message"));
    vf_error_set(err, VF_EUNAVAILABLE, "%s: Kubernetes API answered HTTP %ld%s%.160s", what,
                 resp->status, message ? ": " : "", message ? message : "");
    json_decref(status);
    return -1;
}

/* Pods a drain leaves alone: a DaemonSet's (its controller would put them
 * back) and mirror pods (the kubelet owns them). */
static bool drain_skips(json_t *pod)
{
    json_t *metadata = json_object_get(pod, "metadata");
    if (json_object_get(json_object_get(metadata, "annotations"), "kubernetes.io/config.mirror"))
        return true;
    size_t i;
    json_t *owner;
    json_array_foreach(json_object_get(metadata, "ownerReferences"), i, owner)
    {
        const char *kind = json_string_value(json_object_get(owner, "kind"));
        if (kind && strcmp(kind, "DaemonSet") == 0)
            return true;
    }
    return false;
}

static int evict(const spare_kube_api *api, const char *node, const char *ns, const char *pod,
                 volatile const sig_atomic_t *stop, vf_error *err)
{
    char *ns_escaped = curl_escape(ns, 0), *pod_escaped = curl_escape(pod, 0);
    json_t *eviction = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind",
                                 "Eviction", "metadata", "name", pod, "namespace", ns);
    char *body = eviction ? json_util_dump(eviction) : NULL;
    json_decref(eviction);
    int rc = -1;
    if (!ns_escaped || !pod_escaped || !body) {
        vf_error_set(err, VF_ENOMEM, "out of memory evicting %s/%s", ns, pod);
        goto out;
    }
    char path[1024], what[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/eviction", ns_escaped, pod_escaped);
    snprintf(what, sizeof what, "node %s: evicting pod %s/%s", node, ns, pod);
    for (int attempt = 1; attempt <= EVICTION_TRIES; attempt++) {
        http_response resp;
        if (call(api, "POST", path, "application/json", body, 10, &resp, err) < 0)
            goto out;
        long status = resp.status;
        if (status == 200 || status == 201 || status == 404) {
            http_response_close(&resp);
            rc = 0;
            goto out;
        }
        if (status != 429 || attempt == EVICTION_TRIES || (stop && *stop)) {
            if (status == 429)
                vf_error_set(err, VF_EUNAVAILABLE,
                             "%s: still refused (429, a PodDisruptionBudget) after %d tries", what,
                             attempt);
            else
                status_error(&resp, what, err);
            http_response_close(&resp);
            goto out;
        }
        http_response_close(&resp);
        /* 429: the budget allows no disruption now; ask again shortly. */
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);
    }
out:
    curl_free(ns_escaped);
    curl_free(pod_escaped);
    free(body);
    return rc;
}

static int drain(const spare_kube_api *api, const char *name, volatile const sig_atomic_t *stop,
                 int *evicted, vf_error *err)
{
    char path[512], what[256];
    snprintf(what, sizeof what, "node %s: cordon", name);
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    http_response resp;
    if (call(api, "PATCH", path, "application/strategic-merge-patch+json",
             "{\"spec\":{\"unschedulable\":true}}", 10, &resp, err) < 0)
        return -1;
    if (resp.status == 404) {
        http_response_close(&resp);
        return 1; /* gone already: nothing to drain or delete */
    }
    if (resp.status != 200) {
        status_error(&resp, what, err);
        http_response_close(&resp);
        return -1;
    }
    http_response_close(&resp);
    snprintf(what, sizeof what, "node %s: listing its pods", name);
    snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", name);
    if (call(api, "GET", path, NULL, NULL, 10, &resp, err) < 0)
        return -1;
    if (resp.status != 200) {
        status_error(&resp, what, err);
        http_response_close(&resp);
        return -1;
    }
    json_t *list = json_loadb(resp.body, resp.body_len, 0, NULL);
    http_response_close(&resp);
    json_t *items = json_object_get(list, "items");
    if (!json_is_array(items)) {
        vf_error_set(err, VF_EUNAVAILABLE, "%s: the answer is not a PodList", what);
        json_decref(list);
        return -1;
    }
    size_t i;
    json_t *pod;
    int rc = 0;
    json_array_foreach(items, i, pod)
    {
        json_t *metadata = json_object_get(pod, "metadata");
        const char *pod_name = json_string_value(json_object_get(metadata, "name"));
        const char *ns = json_string_value(json_object_get(metadata, "namespace"));
        if (!pod_name || !ns || drain_skips(pod))
            continue;
        if (evict(api, name, ns, pod_name, stop, err) < 0) {
            rc = -1;
            break;
        }
        (*evicted)++;
    }
    json_decref(list);
    return rc;
}

int spare_kube_release(const vf_config *config, const spare_kube_api *api, const char *name,
                       volatile const sig_atomic_t *stop, int *evicted, vf_error *err)
{
    *evicted = 0;
    const char *mode = config->spare.release_kubernetes ? config->spare.release_kubernetes : "none";
    if (strcmp(mode, "none") == 0)
        return 0;
    if (strcmp(mode, "drain_delete") == 0) {
        int drained = drain(api, name, stop, evicted, err);
        if (drained < 0)
            return -1;
        if (drained == 1)
            return 0;
    }
    char path[512], what[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    snprintf(what, sizeof what, "node %s: delete", name);
    http_response resp;
    if (call(api, "DELETE", path, NULL, NULL, 10, &resp, err) < 0)
        return -1;
    int rc = 0;
    if (resp.status != 200 && resp.status != 202 && resp.status != 404)
        rc = status_error(&resp, what, err);
    http_response_close(&resp);
    return rc;
}
