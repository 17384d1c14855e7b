/* api_reply: what every route answers with: JSON bodies, the scope check
 * and its 401/403, task ids from paths (api_internal.h). */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "json_util.h"
#include "problem.h"

void api_reply_json(httpd_response *resp, int status, json_t *value)
{
    char *text = value ? json_util_dump(value) : NULL;
    json_decref(value);
    if (!text) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    httpd_reply_take(resp, status, "application/json", text, strlen(text));
}

bool api_allow(const api_caller *caller, int needed, httpd_response *resp)
{
    if ((caller->scopes & needed) == needed)
        return true;
    if (caller->scopes == 0) {
        problem_reply(resp, 401,
                      caller->presented ? "the key is not one of api.keys_file's"
                                        : "this route needs a key: Authorization: Bearer KEY");
        snprintf(resp->authenticate, sizeof resp->authenticate, "%s",
                 caller->presented ? "Bearer realm=\"virtflow-api\", error=\"invalid_token\""
                                   : "Bearer realm=\"virtflow-api\"");
        return false;
    }
    problem_reply(resp, 403, "the key lacks the scope this route needs (docs/api.md#keys)");
    return false;
}

bool api_task_id_is_valid(const char *id)
{
    size_t len = strlen(id);
    return len >= 1 && len < REQUEST_TASK_ID_LEN && strspn(id, request_task_id_chars) == len;
}
