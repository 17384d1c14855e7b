/* relay_policy: matching, Retry-After and the retry schedule. */
#include "relay_policy.h"

#include "event_types.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

bool relay_policy_match(const char *pattern, const char *type)
{
    if (!pattern || !type)
        return false;
    if (strcmp(pattern, "*") == 0) {
        /* Operational events only to a receiver that asks for them by name:
         * "*" predates them, and a receiver taking every task event need
         * not hear about the relay's receivers. */
        int known = event_types_find(type);
        return known < 0 || !event_types_is_operational((event_type)known);
    }
    size_t len = strlen(pattern);
    if (len >= 2 && strcmp(pattern + len - 2, ".*") == 0) {
        /* Keep the dot: "task.*" must not match "tasks.x" or "task". */
        return strncmp(type, pattern, len - 1) == 0 && type[len - 1] != '\0';
    }
    return strcmp(pattern, type) == 0;
}

bool relay_policy_match_any(char *const *patterns, size_t n, const char *type)
{
    for (size_t i = 0; i < n; i++)
        if (relay_policy_match(patterns[i], type))
            return true;
    return false;
}

static int parse_http_date(const char *value, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    /* IMF-fixdate, the form RFC 9110 requires senders to use. */
    const char *end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    *out = (int64_t)t;
    return 0;
}

int relay_policy_retry_after(const char *value, int64_t now, double *delay_s)
{
    if (!value)
        return -1;
    while (isspace((unsigned char)*value))
        value++;
    if (!*value)
        return -1;
    double delay;
    if (isdigit((unsigned char)*value)) {
        double seconds = 0;
        const char *c = value;
        for (; isdigit((unsigned char)*c); c++) {
            if (seconds < RELAY_RETRY_AFTER_MAX_S * 10)
                seconds = seconds * 10 + (*c - '0');
        }
        while (isspace((unsigned char)*c))
            c++;
        if (*c)
            return -1;
        delay = seconds;
    } else {
        int64_t at;
        if (parse_http_date(value, &at) < 0)
            return -1;
        delay = at > now ? (double)(at - now) : 0;
    }
    *delay_s = delay > RELAY_RETRY_AFTER_MAX_S ? RELAY_RETRY_AFTER_MAX_S : delay;
    return 0;
}

double relay_policy_next_delay(const int *schedule_s, size_t n_schedule, int attempts,
                               double retry_after_s, double random01)
{
    if (attempts < 1 || (size_t)attempts >= n_schedule)
        return -1;
    double base = schedule_s[attempts];
    if (random01 < 0)
        random01 = 0;
    if (random01 >= 1)
        random01 = 0.999999;
    double delay = base * (1 + RELAY_JITTER * (2 * random01 - 1));
    if (retry_after_s >= 0 && delay < retry_after_s)
        delay = retry_after_s;
    return delay;
}

static bool usable_event_id(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len > RELAY_EVENT_ID_MAX)
        return false;
    for (const char *c = id; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return false;
    return true;
}

int relay_policy_event(const void *body, size_t body_len, const char *message_id, char **id,
                       char **type, vf_error *err)
{
    *id = NULL;
    *type = NULL;
    json_error_t jerr;
    json_t *event = json_loadb(body, body_len, 0, &jerr);
    if (!event) {
        vf_error_set(err, VF_EINVAL, "body is not JSON");
        return -1;
    }
    const char *type_text = json_string_value(json_object_get(event, "type"));
    const char *id_text = json_string_value(json_object_get(event, "id"));
    if (!id_text || !*id_text)
        id_text = message_id;
    if (!json_is_object(event) || !type_text || !*type_text || !id_text ||
        !usable_event_id(id_text)) {
        vf_error_set(err, VF_EINVAL,
                     "event without a string \"type\" and an \"id\" of 1-%d printable characters",
                     RELAY_EVENT_ID_MAX);
        json_decref(event);
        return -1;
    }
    *id = strdup(id_text);
    *type = strdup(type_text);
    json_decref(event);
    if (!*id || !*type) {
        free(*id);
        free(*type);
        *id = NULL;
        *type = NULL;
        vf_error_set(err, VF_ENOMEM, "out of memory keeping an event");
        return -1;
    }
    return 0;
}

void relay_policy_escape(const char *text, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    if (!text)
        text = "(none)";
    size_t at = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        bool plain = *c >= 0x20 && *c < 0x7f && *c != '\\' && *c != '"';
        size_t need = plain ? 1 : 4;
        if (at + need + 4 > size) { /* room for "..." and the NUL */
            memcpy(out + at, "...", 3);
            at += 3;
            break;
        }
        if (plain) {
            out[at++] = (char)*c;
        } else {
            out[at++] = '\\';
            out[at++] = 'x';
            out[at++] = hex[*c >> 4];
            out[at++] = hex[*c & 15];
        }
    }
    out[at] = '\0';
}
