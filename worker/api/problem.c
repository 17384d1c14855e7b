#include "problem.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"

/* Seconds a client should wait before trying again after a 503: long enough
 * for a broker to come back or lift its flow control, short enough that a
 * client does not give up. */
#define PROBLEM_RETRY_AFTER_S "5"

const char *problem_title(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

void problem_reply(httpd_response *resp, int status, const char *detail)
{
    json_t *problem = json_pack("{s:s, s:s, s:i}", "type", "about:blank", "title",
                                problem_title(status), "status", status);
    if (problem && detail)
        json_object_set_new(problem, "detail", json_string(detail));
    char *text = problem ? json_util_dump(problem) : NULL;
    json_decref(problem);
    if (!text) {
        httpd_reply_text(resp, 500, "text/plain; charset=utf-8", "out of memory\n");
        return;
    }
    httpd_reply_take(resp, status, PROBLEM_CONTENT_TYPE, text, strlen(text));
    if (status == 503)
        snprintf(resp->retry_after, sizeof resp->retry_after, "%s", PROBLEM_RETRY_AFTER_S);
}
