#include "spare_status.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "http.h"

int spare_status_get(const spare_status_request *request, char *status, size_t size, vf_error *err)
{
    const char *headers[] = {"Accept: application/json", request->authorization};
    http_request req = {.url = request->url,
                        .headers = headers,
                        .n_headers = request->authorization ? 2 : 1,
                        .timeout_s = 10};
    http_response resp;
    if (http_get(&req, &resp, err) < 0)
        return -1;
    int rc = -1;
    json_t *body = json_loadb(resp.body, resp.body_len, 0, NULL);
    const char *value = json_string_value(json_object_get(body, "status"));
    bool refused = resp.status == request->refused[0] || resp.status == request->refused[1];
    if (resp.status != 200)
        vf_error_set(err, VF_EUNAVAILABLE, "%s: HTTP %ld%s", request->what, resp.status,
                     refused && request->refused_hint ? request->refused_hint : "");
    else if (!value)
        vf_error_set(err, VF_EUNAVAILABLE, "%s: the answer has no status", request->what);
    else {
        snprintf(status, size, "%s", value);
        rc = 0;
    }
    json_decref(body);
    http_response_close(&resp);
    return rc;
}
