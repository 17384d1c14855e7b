#include "source.h"

#include <string.h>

#include <openssl/evp.h>

#include "host_json.h"
#include "http.h"
#include "json_each.h"

hostset *source_http_parse(const char *body, size_t len, json_error_t *syntax, vf_error *err)
{
    hostset *set = hostset_new();
    if (!set) {
        if (syntax)
            syntax->text[0] = '\0';
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    /* Host by host, as the file source reads: the body never becomes one tree. */
    json_t *rest = json_each_loadb(body, len, "nodes", host_json_add_each, set, syntax, err);
    if (!rest || host_json_inventory_into(set, rest, err) < 0) {
        hostset_free(set);
        set = NULL;
    }
    json_decref(rest);
    return set;
}

hostset *source_http_fetch(const source_remote *remote, vf_error *err)
{
    source_digest none = {.known = false};
    bool unchanged = false;
    return source_http_fetch_since(remote, &none, &unchanged, err);
}

hostset *source_http_fetch_since(const source_remote *remote, source_digest *seen, bool *unchanged,
                                 vf_error *err)
{
    *unchanged = false;
    hostset *set = NULL;
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
    unsigned char digest[SOURCE_DIGEST_SIZE];
    unsigned int digest_len = 0;
    bool hashed = EVP_Digest(response.body ? response.body : "", response.body_len, digest,
                             &digest_len, EVP_sha256(), NULL) == 1 &&
                  digest_len == SOURCE_DIGEST_SIZE;
    if (hashed && seen->known && memcmp(digest, seen->bytes, SOURCE_DIGEST_SIZE) == 0) {
        *unchanged = true;
        goto out;
    }
    json_error_t json_err;
    vf_error local;
    vf_error_init(&local);
    set = source_http_parse(response.body, response.body_len, &json_err, &local);
    if (!set && json_err.text[0])
        vf_error_set(err, VF_EUNAVAILABLE, "GET %s: response is not JSON: line %d: %s", shown,
                     json_err.line, json_err.text);
    else if (!set) /* the node API answered, but with something we cannot use */
        vf_error_set(err, local.code == VF_EINVAL ? VF_EUNAVAILABLE : local.code, "GET %s: %s",
                     shown, local.text);
    if (set) {
        seen->known = hashed;
        memcpy(seen->bytes, digest, SOURCE_DIGEST_SIZE);
    }
out:
    http_response_close(&response);
    return set;
}
