/* spare_kube: which Kubernetes API server a spare's cluster uses (the
 * requests' `cluster` against spare.clusters), and what an unknown cluster
 * is told. The HTTP calls themselves are tested against the fake APIs
 * (tests/integration/test_spare_clusters). */
#include "spare_kube.h"
#include "testlib.h"

#include <string.h>

static vf_config *load(const char *yaml)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(yaml, strlen(yaml), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    return c;
}

static void test_single_cluster_default(void)
{
    vf_config *c = load("spare:\n  readiness:\n    type: kubernetes\n"
                        "    api_url: https://k8s.example:6443\n    token_file: /k8s.token\n");
    if (!c)
        return;
    spare_kube_api api;
    vf_error err;
    vf_error_init(&err);
    /* Without spare.clusters every cluster name goes to readiness.api_url. */
    CHECK(spare_kube_api_for(c, "prod-a", &api, &err) == 0);
    CHECK_STR(api.api_url, "https://k8s.example:6443");
    CHECK_STR(api.token_file, "/k8s.token");
    CHECK(api.ca_file == NULL);
    CHECK(spare_kube_api_for(c, NULL, &api, &err) == 0);
    CHECK_STR(api.api_url, "https://k8s.example:6443");
    config_free(c);
}

static void test_clusters(void)
{
    vf_config *c = load("spare:\n  readiness:\n    type: kubernetes\n"
                        "    api_url: https://default:6443\n    token_file: /default.token\n"
                        "  clusters:\n"
                        "    prod-a: {api_url: \"https://a:6443\", token_file: /a.token}\n"
                        "    prod-b: {api_url: \"https://b:6443\", token_file: /b.token, "
                        "ca_file: /b-ca.pem}\n");
    if (!c)
        return;
    spare_kube_api api;
    vf_error err;
    vf_error_init(&err);
    CHECK(spare_kube_api_for(c, "prod-b", &api, &err) == 0);
    CHECK_STR(api.api_url, "https://b:6443");
    CHECK_STR(api.token_file, "/b.token");
    CHECK_STR(api.ca_file, "/b-ca.pem");
    CHECK(spare_kube_api_for(c, "prod-a", &api, &err) == 0);
    CHECK_STR(api.api_url, "https://a:6443");
    CHECK(api.ca_file == NULL);
    /* A request naming no cluster keeps the single-cluster default. */
    CHECK(spare_kube_api_for(c, "", &api, &err) == 0);
    CHECK_STR(api.api_url, "https://default:6443");
    CHECK(spare_kube_api_for(c, "prod-z", &api, &err) == -1);
    CHECK(err.code == VF_EINVAL);
    CHECK_STR(err.text, "unknown cluster \"prod-z\": spare.clusters has prod-a, prod-b");
    config_free(c);
}

static void test_release_none_is_silent(void)
{
    /* kubernetes: none never calls the API, even without one configured. */
    vf_config *c = load("spare:\n  release: {kubernetes: none}\n");
    if (!c)
        return;
    spare_kube_api api = {0};
    vf_error err;
    vf_error_init(&err);
    int evicted = -1;
    CHECK(spare_kube_release(c, &api, "spare-1", NULL, &evicted, &err) == 0 && evicted == 0);
    config_free(c);
    c = load("spare:\n  release: {kubernetes: delete}\n");
    if (!c)
        return;
    CHECK(spare_kube_release(c, &api, "spare-1", NULL, &evicted, &err) == -1);
    CHECK_CONTAINS(err.text, "no Kubernetes API configured");
    config_free(c);
}

int main(void)
{
    test_single_cluster_default();
    test_clusters();
    test_release_none_is_silent();
    return test_summary();
}
