/* relay_receivers: secrets, URLs and headers of the configured receivers. */
#include "relay_receivers.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

static int check_url(const config_receiver *rc, size_t index, vf_error *err)
{
    CURLU *u = curl_url();
    if (!u) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char *host = NULL;
    int rc_value = 0;
    CURLUcode code = curl_url_set(u, CURLUPART_URL, rc->url, 0);
    if (code == CURLUE_OK)
        code = curl_url_get(u, CURLUPART_HOST, &host, 0);
    if (code != CURLUE_OK || !host || !*host) {
        char shown[512];
        http_redact_url(rc->url, shown, sizeof shown);
        vf_error_set(err, VF_ECONFIG, "relay.receivers[%zu].url: not a usable URL \"%s\": %s",
                     index, shown, code != CURLUE_OK ? curl_url_strerror(code) : "no host name");
        rc_value = -1;
    }
    curl_free(host);
    curl_url_cleanup(u);
    return rc_value;
}

static int load_one(const config_receiver *rc, size_t index, relay_receiver *r, vf_error *err)
{
    r->config = rc;
    http_redact_url(rc->url, r->safe_url, sizeof r->safe_url);
    if (check_url(rc, index, err) < 0)
        return -1;
    size_t n = rc->n_secret_files + (rc->secret_env ? 1 : 0);
    r->keys = calloc(n ? n : 1, sizeof *r->keys);
    if (!r->keys) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < rc->n_secret_files; i++) {
        vf_error inner;
        vf_error_init(&inner);
        if (signature_key_read_file(rc->secret_files[i], &r->keys[r->n_keys], &inner) < 0) {
            vf_error_set(err, VF_ECONFIG, "relay.receivers[%zu].secret_files[%zu]: %s", index, i,
                         inner.text);
            return -1;
        }
        r->n_keys++;
    }
    if (rc->secret_env) {
        const char *value = getenv(rc->secret_env);
        vf_error inner;
        vf_error_init(&inner);
        if (!value || !*value) {
            vf_error_set(err, VF_ECONFIG,
                         "relay.receivers[%zu].secret_env: environment variable %s is not set",
                         index, rc->secret_env);
            return -1;
        }
        if (signature_key_parse(value, &r->keys[r->n_keys], &inner) < 0) {
            vf_error_set(err, VF_ECONFIG, "relay.receivers[%zu].secret_env: %s: %s", index,
                         rc->secret_env, inner.text);
            return -1;
        }
        r->n_keys++;
    }
    if (r->n_keys == 0) {
        vf_error_set(err, VF_ECONFIG, "relay.receivers[%zu].secret_files: no secret", index);
        return -1;
    }
    r->header_lines = calloc(rc->n_headers ? rc->n_headers : 1, sizeof *r->header_lines);
    if (!r->header_lines) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < rc->n_headers; i++) {
        size_t len = strlen(rc->headers[i].name) + strlen(rc->headers[i].value) + 3;
        r->header_lines[i] = malloc(len);
        if (!r->header_lines[i]) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            return -1;
        }
        snprintf(r->header_lines[i], len, "%s: %s", rc->headers[i].name, rc->headers[i].value);
        r->n_header_lines++;
    }
    return 0;
}

int relay_receivers_load(const vf_config *config, relay_receiver **out, size_t *n, vf_error *err)
{
    *out = NULL;
    *n = 0;
    size_t count = config->relay.n_receivers;
    relay_receiver *receivers = calloc(count ? count : 1, sizeof *receivers);
    if (!receivers) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        if (load_one(&config->relay.receivers[i], i, &receivers[i], err) < 0) {
            relay_receivers_free(receivers, count);
            return -1;
        }
    }
    *out = receivers;
    *n = count;
    return 0;
}

void relay_receivers_free(relay_receiver *receivers, size_t n)
{
    if (!receivers)
        return;
    for (size_t i = 0; i < n; i++) {
        if (receivers[i].keys)
            OPENSSL_cleanse(receivers[i].keys, receivers[i].n_keys * sizeof *receivers[i].keys);
        free(receivers[i].keys);
        for (size_t h = 0; h < receivers[i].n_header_lines; h++)
            free(receivers[i].header_lines[h]);
        free(receivers[i].header_lines);
    }
    free(receivers);
}
