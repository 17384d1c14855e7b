/* amqp_refusals: see amqp_refusals.h. */
#include "amqp_refusals.h"

#include <amqp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

typedef struct path {
    char exchange[AMQP_REFUSALS_NAME];
    char key[AMQP_REFUSALS_NAME]; /* "": the whole exchange */
} path;

struct amqp_refusals {
    pthread_mutex_t lock;
    path *paths;
    size_t n, cap;
};

amqp_refusals *amqp_refusals_new(void)
{
    amqp_refusals *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->lock, NULL);
    return r;
}

void amqp_refusals_free(amqp_refusals *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->paths);
    free(r);
}

/* The quoted name after `marker` in text into out; false when absent. */
static bool quoted_after(const char *text, const char *marker, char out[AMQP_REFUSALS_NAME])
{
    const char *at = strstr(text, marker);
    if (!at)
        return false;
    at += strlen(marker);
    const char *end = strchr(at, '\'');
    if (!end || (size_t)(end - at) >= AMQP_REFUSALS_NAME)
        return false;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = '\0';
    return true;
}

bool amqp_refusals_parse(const char *text, char exchange[AMQP_REFUSALS_NAME],
                         char key[AMQP_REFUSALS_NAME])
{
    if (!text || !strstr(text, "ACCESS_REFUSED") || !quoted_after(text, "exchange '", exchange))
        return false;
    if (strstr(text, "access to topic '")) { /* "write access to topic" in newer brokers */
        if (!quoted_after(text, "access to topic '", key))
            return false;
    } else if (strstr(text, "access to exchange '")) {
        key[0] = '\0';
    } else {
        return false;
    }
    if (strcmp(exchange, "amq.default") == 0)
        exchange[0] = '\0';
    return true;
}

bool amqp_refusals_add(amqp_refusals *r, const char *exchange, const char *key)
{
    if (!r)
        return false;
    pthread_mutex_lock(&r->lock);
    bool known = false;
    for (size_t i = 0; i < r->n && !known; i++)
        known = strcmp(r->paths[i].exchange, exchange) == 0 && strcmp(r->paths[i].key, key) == 0;
    bool added = false;
    if (!known && grow_array((void **)&r->paths, &r->cap, r->n + 1, sizeof *r->paths) == 0) {
        snprintf(r->paths[r->n].exchange, AMQP_REFUSALS_NAME, "%s", exchange);
        snprintf(r->paths[r->n].key, AMQP_REFUSALS_NAME, "%s", key);
        r->n++;
        added = true;
    }
    pthread_mutex_unlock(&r->lock);
    return added;
}

bool amqp_refusals_note(amqp_refusals *r, const amqp_link *link, char exchange[AMQP_REFUSALS_NAME],
                        char key[AMQP_REFUSALS_NAME])
{
    const char *text = NULL;
    if (!r || amqp_link_broker_close(link, &text) != AMQP_ACCESS_REFUSED ||
        !amqp_refusals_parse(text, exchange, key))
        return false;
    return amqp_refusals_add(r, exchange, key);
}

bool amqp_refusals_blocks(amqp_refusals *r, const char *exchange, const char *key)
{
    if (!r)
        return false;
    const char *ex = exchange ? exchange : "";
    pthread_mutex_lock(&r->lock);
    bool blocked = false;
    for (size_t i = 0; i < r->n && !blocked; i++)
        blocked = strcmp(r->paths[i].exchange, ex) == 0 &&
                  (!r->paths[i].key[0] || (key && strcmp(r->paths[i].key, key) == 0));
    pthread_mutex_unlock(&r->lock);
    return blocked;
}
