/* relay_sender: libcurl multi transfers for webhook deliveries. */
#include "relay_sender.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "signature.h"

typedef struct transfer {
    relay_request request;
    CURL *easy;
    struct curl_slist *headers;
    char curl_error[CURL_ERROR_SIZE];
    char retry_after[64];
    char body[RELAY_SENDER_BODY_MAX + 1];
    size_t body_len;
    struct transfer *prev, *next;
} transfer;

struct relay_sender {
    CURLM *multi;
    relay_receiver *receivers;
    size_t n_receivers;
    transfer *running; /* doubly linked list */
    size_t n_running;
};

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    transfer *t = user;
    size_t len = size * n;
    size_t room = RELAY_SENDER_BODY_MAX - t->body_len;
    size_t keep = len < room ? len : room;
    memcpy(t->body + t->body_len, data, keep);
    t->body_len += keep;
    t->body[t->body_len] = '\0';
    return len; /* the rest is read and dropped, so the connection can be reused */
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    transfer *t = user;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t start = sizeof name - 1;
        while (start < len && (data[start] == ' ' || data[start] == '\t'))
            start++;
        size_t end = len;
        while (end > start &&
               (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' '))
            end--;
        size_t copy =
            end - start < sizeof t->retry_after - 1 ? end - start : sizeof t->retry_after - 1;
        memcpy(t->retry_after, data + start, copy);
        t->retry_after[copy] = '\0';
    }
    return len;
}

int relay_sender_set_receivers(relay_sender *sender, relay_receiver *receivers, size_t n_receivers)
{
    if (sender->n_running > 0)
        return -1;
    sender->receivers = receivers;
    sender->n_receivers = n_receivers;
    return 0;
}

relay_sender *relay_sender_new(relay_receiver *receivers, size_t n_receivers, vf_error *err)
{
    relay_sender *s = calloc(1, sizeof *s);
    if (!s) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    s->multi = curl_multi_init();
    if (!s->multi) {
        vf_error_set(err, VF_EINTERNAL, "curl_multi_init failed");
        free(s);
        return NULL;
    }
    /* Reuse connections across many small requests to the same receivers. */
    curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, 256L);
    s->receivers = receivers;
    s->n_receivers = n_receivers;
    return s;
}

static void transfer_free(relay_sender *s, transfer *t, bool free_request)
{
    if (t->easy) {
        curl_multi_remove_handle(s->multi, t->easy);
        curl_easy_cleanup(t->easy);
    }
    curl_slist_free_all(t->headers);
    if (free_request) {
        free(t->request.event_id);
        free(t->request.body);
    }
    free(t);
}

static void unlink_transfer(relay_sender *s, transfer *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        s->running = t->next;
    if (t->next)
        t->next->prev = t->prev;
    s->n_running--;
    if (t->request.receiver < s->n_receivers)
        s->receivers[t->request.receiver].in_flight--;
}

void relay_sender_free(relay_sender *s)
{
    if (!s)
        return;
    while (s->running) {
        transfer *t = s->running;
        unlink_transfer(s, t);
        transfer_free(s, t, true);
    }
    curl_multi_cleanup(s->multi);
    free(s);
}

static struct curl_slist *add_header(struct curl_slist *list, const char *line, bool *ok)
{
    struct curl_slist *grown = curl_slist_append(list, line);
    if (!grown) {
        *ok = false;
        return list;
    }
    return grown;
}

int relay_sender_start(relay_sender *s, relay_request *request, int64_t now_s, vf_error *err)
{
    if (request->receiver >= s->n_receivers) {
        vf_error_set(err, VF_EINTERNAL, "no receiver %zu", request->receiver);
        return -1;
    }
    relay_receiver *r = &s->receivers[request->receiver];
    transfer *t = calloc(1, sizeof *t);
    if (!t) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char signature[SIGNATURE_SIZE * 8 + 32];
    if (signature_header(r->keys, r->n_keys, request->event_id, now_s, request->body,
                         request->body_len, signature, sizeof signature, err) < 0) {
        free(t);
        return -1;
    }
    char line[sizeof signature + 64];
    bool ok = true;
    t->headers = add_header(t->headers, "Content-Type: application/json", &ok);
    snprintf(line, sizeof line, "webhook-id: %s", request->event_id);
    t->headers = add_header(t->headers, line, &ok);
    snprintf(line, sizeof line, "webhook-timestamp: %" PRId64, now_s);
    t->headers = add_header(t->headers, line, &ok);
    snprintf(line, sizeof line, "webhook-signature: %s", signature);
    t->headers = add_header(t->headers, line, &ok);
    /* libcurl would send "Expect: 100-continue" for larger bodies and wait. */
    t->headers = add_header(t->headers, "Expect:", &ok);
    for (size_t i = 0; i < r->n_header_lines; i++)
        t->headers = add_header(t->headers, r->header_lines[i], &ok);
    t->easy = curl_easy_init();
    if (!ok || !t->easy) {
        vf_error_set(err, VF_ENOMEM, "out of memory building a request");
        transfer_free(s, t, false);
        return -1;
    }
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, r->config->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (r->config->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, r->config->ca_file);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(r->config->timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->config->timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, request->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "virtflow-relay/0.1");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    CURLMcode mc = curl_multi_add_handle(s->multi, e);
    if (mc != CURLM_OK) {
        vf_error_set(err, VF_EINTERNAL, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
        transfer_free(s, t, false);
        return -1;
    }
    t->request = *request;
    t->next = s->running;
    if (s->running)
        s->running->prev = t;
    s->running = t;
    s->n_running++;
    r->in_flight++;
    return 0;
}

size_t relay_sender_running(const relay_sender *s)
{
    return s->n_running;
}

int relay_sender_poll(relay_sender *s, int timeout_ms, vf_error *err)
{
    int still = 0;
    CURLMcode mc = curl_multi_perform(s->multi, &still);
    if (mc == CURLM_OK && s->n_running > 0)
        mc = curl_multi_poll(s->multi, NULL, 0, timeout_ms, NULL);
    if (mc == CURLM_OK)
        mc = curl_multi_perform(s->multi, &still);
    if (mc != CURLM_OK) {
        vf_error_set(err, VF_EINTERNAL, "libcurl: %s", curl_multi_strerror(mc));
        return -1;
    }
    return 0;
}

int relay_sender_next_result(relay_sender *s, relay_result *out)
{
    int left = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(s->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        transfer *t = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        if (!t)
            continue;
        CURLcode code = msg->data.result;
        memset(out, 0, sizeof *out);
        out->request = t->request;
        out->transport_ok = code == CURLE_OK;
        if (out->transport_ok) {
            curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &out->status);
        } else {
            /* libcurl's texts name host and port at most, never credentials. */
            snprintf(out->error, sizeof out->error, "%s",
                     t->curl_error[0] ? t->curl_error : curl_easy_strerror(code));
        }
        memcpy(out->retry_after, t->retry_after, sizeof out->retry_after);
        memcpy(out->body, t->body, t->body_len + 1);
        out->body_len = t->body_len;
        unlink_transfer(s, t);
        transfer_free(s, t, false);
        return 1;
    }
    return 0;
}

void relay_sender_abandon(relay_sender *s, void (*fn)(relay_request *request, void *ctx), void *ctx)
{
    while (s->running) {
        transfer *t = s->running;
        unlink_transfer(s, t);
        relay_request request = t->request;
        transfer_free(s, t, false);
        fn(&request, ctx);
    }
}
