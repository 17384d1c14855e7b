/* GET /v1/dead-letters (read scope): the messages parked in virtflow.dead, as
 * the store records them (store_dead_letters.h), newest first, in keyset
 * pages. The queue itself is never read here: a basic.get with requeue
 * counts a delivery against each message of a quorum queue (which a
 * delivery-limit turns into dropping it) and hides it from every other
 * reader while held, so polling clients would disturb what they look at
 * (docs/api.md "Dead letters"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "log.h"
#include "problem.h"
#include "store_dead_letters.h"

#define DEAD_LETTERS_DEFAULT_LIMIT 50
#define DEAD_LETTERS_MAX_LIMIT 500

typedef struct page_ctx {
    json_t *rows;
    int count;
    char last[STORE_TIME_SIZE + 24]; /* the last row's cursor */
} page_ctx;

/* A text as a JSON string. What a publisher chose (a message_id, a reason
 * quoting it) may be bytes that are not UTF-8, which JSON cannot hold: those
 * bytes come out as '?' rather than failing the page. NULL: null. */
static json_t *text_json(const char *text)
{
    if (!text)
        return json_null();
    json_t *string = json_string(text);
    if (string)
        return string;
    char *copy = strdup(text);
    if (!copy)
        return NULL;
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80 || (unsigned char)*c < 0x20)
            *c = '?';
    string = json_string(copy);
    free(copy);
    return string;
}

static int add_row(const store_dead_letter *d, void *user)
{
    page_ctx *ctx = user;
    json_t *row = json_pack(
        "{s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o}", "id", (json_int_t)d->id,
        "status", d->redriven_at ? "redriven" : "parked", "message_id", text_json(d->message_id),
        "task_id", text_json(d->task_id), "routing_key", text_json(d->routing_key), "reason",
        text_json(d->reason), "parked_by", text_json(d->parked_by), "parked_at",
        text_json(d->parked_at), "body_bytes", (json_int_t)d->body_bytes, "body_excerpt",
        text_json(d->body_excerpt), "redriven_at", text_json(d->redriven_at));
    if (!row || json_array_append_new(ctx->rows, row) < 0)
        return -1;
    ctx->count++;
    snprintf(ctx->last, sizeof ctx->last, "%s,%" PRId64, d->parked_at ? d->parked_at : "", d->id);
    return 0;
}

/* "PARKED_AT,ID" into the filter; `copy` holds the time. -1 when malformed. */
static int parse_cursor(const char *cursor, char copy[STORE_TIME_SIZE],
                        store_dead_letter_filter *filter)
{
    const char *comma = strchr(cursor, ',');
    size_t time_len = comma ? (size_t)(comma - cursor) : 0;
    if (!comma || time_len == 0 || time_len >= STORE_TIME_SIZE ||
        strspn(cursor, "0123456789-:.TZ") != time_len)
        return -1;
    char *end;
    errno = 0;
    long long id = strtoll(comma + 1, &end, 10);
    if (errno || end == comma + 1 || *end || id < 1)
        return -1;
    memcpy(copy, cursor, time_len);
    copy[time_len] = '\0';
    filter->after_parked_at = copy;
    filter->after_id = id;
    return 0;
}

void api_dead_letters(api *a, const httpd_request *req, httpd_response *resp)
{
    static const char *const known[] = {"status", "limit", "cursor", NULL};
    const char *unknown = httpd_query_unknown(req, known);
    if (unknown) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "unknown parameter '%.64s' (filters: status, limit, cursor)", unknown);
        problem_reply(resp, 400, detail);
        return;
    }
    store_dead_letter_filter filter = {.parked = -1, .limit = DEAD_LETTERS_DEFAULT_LIMIT};
    const char *status = httpd_query(req, "status");
    const char *limit_text = httpd_query(req, "limit");
    const char *cursor = httpd_query(req, "cursor");
    char after[STORE_TIME_SIZE];
    if (status && strcmp(status, "parked") == 0) {
        filter.parked = 1;
    } else if (status && strcmp(status, "redriven") == 0) {
        filter.parked = 0;
    } else if (status) {
        problem_reply(resp, 400, "status: expected parked or redriven");
        return;
    }
    if (limit_text) {
        char *end;
        errno = 0;
        long limit = strtol(limit_text, &end, 10);
        if (errno || end == limit_text || *end || limit < 1 || limit > DEAD_LETTERS_MAX_LIMIT) {
            problem_reply(resp, 400, "limit: expected a number from 1 to 500");
            return;
        }
        filter.limit = (int)limit;
    }
    if (cursor && parse_cursor(cursor, after, &filter) < 0) {
        problem_reply(resp, 400, "cursor: expected the next_cursor of the previous page");
        return;
    }
    page_ctx ctx = {.rows = json_array()};
    vf_error err;
    vf_error_init(&err);
    if (!ctx.rows || store_dead_letter_list(a->store, &filter, add_row, &ctx, &err) < 0) {
        json_decref(ctx.rows);
        if (err.code == VF_OK) {
            problem_reply(resp, 500, "out of memory");
            return;
        }
        log_error("GET /v1/dead-letters: store: %s", err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        return;
    }
    json_t *next = ctx.count == filter.limit ? json_string(ctx.last) : json_null();
    api_reply_json(resp, 200,
                   json_pack("{s:o, s:o}", "dead_letters", ctx.rows, "next_cursor", next));
}
