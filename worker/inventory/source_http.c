#include "source.h"

#include "host_json.h"
#include "http.h"

hostset *source_http_fetch(const source_remote *remote, vf_error *err)
{
    hostset *set = NULL;
    json_t *root = NULL;
    http_response response = {0};
    char shown[256];
    http_redact_url(remote->url, shown, sizeof shown);

    static const char *const headers[] = {"Accept: application/json"};
    http_request request = {
        .url = remote->url,
        .headers = headers,
        .n_headers = 1,
        .timeout_s = remote->timeout_s,
        .ca_file = remote->ca_file,
        .tls_skip_verify = !remote->tls_verify,
    };
    if (http_get(&request, &response, err) < 0)
        goto out;
    if (response.status < 200 || response.status > 299) {
        vf_error_set(err, VF_EUNAVAILABLE, "GET %s: HTTP %ld", shown, response.status);
        goto out;
    }
    json_error_t json_err;
    root = json_loadb(response.body, response.body_len, 0, &json_err);
    if (!root) {
        vf_error_set(err, VF_EUNAVAILABLE, "GET %s: response is not JSON: line %d: %s", shown,
                     json_err.line, json_err.text);
        goto out;
    }
    set = host_json_inventory(root, err);
    if (!set) {
        /* The node API answered, but with something we cannot use. */
        if (err && err->code == VF_EINVAL)
            err->code = VF_EUNAVAILABLE;
        vf_error_prefix(err, "GET %s", shown);
    }
out:
    json_decref(root);
    http_response_close(&response);
    return set;
}
