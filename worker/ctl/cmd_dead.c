/* virtflowctl dead list | redrive: the parking lot (virtflow.dead).
 *
 * list reads the store's record of parked messages (store_dead_letters.h, as
 * GET /v1/dead-letters does) and never touches the queue: taking messages
 * off to look at them and putting them back counts a delivery against each
 * one of a quorum queue, and a delivery-limit then drops them (issue 34). It
 * only asks the broker, by a passive declare that moves nothing, how many
 * messages the queue holds, to say when some are not recorded.
 *
 * redrive, an operator's act, takes messages with basic.get and holds them
 * unacked while it moves them, so the walk sees each one once; whatever is
 * not moved goes back with a requeue. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_link_admin.h"
#include "ctl.h"
#include "grow.h"
#include "store_dead_letters.h"

#define CONFIRM_TIMEOUT_MS 30000
#define DEFAULT_LIST_LIMIT 100

static void dead_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl dead list [-c CONFIG] [--reason R] [--limit N] [--json]\n"
            "       virtflowctl dead redrive [-c CONFIG] (ID | --all) [--reason R] [--json]\n"
            "\n"
            "list     show the messages parked in virtflow.dead, newest first, as the store\n"
            "         records them (the workers and relays that park them write the record):\n"
            "         message_id, why, the routing key it came with, when and by whom it was\n"
            "         parked, and the start of its body. It reads the store only and never\n"
            "         takes a message off the queue (each look would count a delivery against\n"
            "         it); it asks the broker how many messages the queue holds, to say when\n"
            "         some are not recorded (dead-lettered by the broker itself). At most\n"
            "         --limit messages (default %d).\n"
            "redrive  publish parked messages again, as they are (body and properties; the\n"
            "         attempt count starts over), to exchange virtflow with their original\n"
            "         routing key (x-virtflow-routing-key, or x-death's for messages the broker\n"
            "         dead-lettered), wait for the broker's confirm, then remove the parked\n"
            "         copy. ID picks messages by message_id; --all takes every one.\n"
            "  --reason R  only messages whose error contains R (e.g. \"not JSON\", \"rejected\")\n"
            "  --limit N   list: at most N messages (default 100)\n"
            "  --all       redrive: every parked message (instead of one ID)\n"
            "\n"
            "A task that is already final (completed or failed) is not scheduled again\n"
            "when redriven: the worker acks it and replays its recorded result.\n"
            "\n"
            "examples:\n"
            "  virtflowctl dead list --reason \"not JSON\"\n"
            "  virtflowctl dead redrive --all --reason rejected\n"
            "\n"
            "exit status: 0 ok (redrive: at least one moved), 1 nothing matched, 2 usage,\n"
            "3 configuration error, 4 store (list) or broker (redrive) unreachable, or a\n"
            "republish not confirmed.\n",
            DEFAULT_LIST_LIMIT);
}

/* Why the message is parked, as one line (owned). */
static char *why_parked(const amqp_link_delivery *d)
{
    char buf[512];
    if (d->error)
        snprintf(buf, sizeof buf, "%s", d->error);
    else if (d->death_reason)
        snprintf(buf, sizeof buf, "dead-lettered by the broker: %s from %s%s", d->death_reason,
                 d->death_queue ? d->death_queue : "?",
                 d->too_large ? " (larger than amqp.max_message_bytes)" : "");
    else
        snprintf(buf, sizeof buf, "(no reason recorded)");
    return strdup(buf);
}

static const char *original_key(const amqp_link_delivery *d)
{
    return d->original_key ? d->original_key : d->death_key;
}

/* A property as a JSON string. A publisher may put bytes that are not UTF-8
 * in a message id, which JSON cannot hold: those come out escaped like the
 * text output (\xff), rather than dropping the message from the list. */
static json_t *property_json(const char *value)
{
    if (!value)
        return json_null();
    json_t *text = json_string(value);
    return text ? text : json_string(ctl_text(value));
}

/* ---- list: the store's record ---- */

typedef struct listing {
    const char *reason; /* --reason, or NULL */
    long limit;
    bool as_json;
    json_t *rows; /* as_json: the array printed */
    size_t shown;
} listing;

static json_t *record_json(const store_dead_letter *row)
{
    return json_pack("{s:I, s:o, s:o, s:s, s:s, s:s, s:s, s:I, s:s}", "id", (json_int_t)row->id,
                     "message_id", property_json(row->message_id), "task_id",
                     property_json(row->task_id), "error", row->reason, "routing_key",
                     row->routing_key, "parked_by", row->parked_by, "parked_at", row->parked_at,
                     "body_bytes", (json_int_t)row->body_bytes, "body_excerpt",
                     row->body_excerpt ? row->body_excerpt : "");
}

static int list_one(const store_dead_letter *row, void *ctx)
{
    listing *l = ctx;
    if (l->reason && !strstr(row->reason, l->reason))
        return 0;
    l->shown++;
    if (l->as_json) {
        json_array_append_new(l->rows, record_json(row));
    } else {
        printf("%zu. %s  key %s  %lld bytes\n", l->shown,
               row->message_id ? ctl_text(row->message_id) : "(no id)", ctl_text(row->routing_key),
               (long long)row->body_bytes);
        printf("   why:    %s\n", ctl_text(row->reason));
        printf("   parked: %s by %s%s%s\n", row->parked_at, ctl_text(row->parked_by),
               row->task_id ? ", task " : "", row->task_id ? ctl_text(row->task_id) : "");
        printf("   body:   %s\n", ctl_text(row->body_excerpt ? row->body_excerpt : ""));
    }
    return l->limit && (long)l->shown >= l->limit ? 1 : 0;
}

/* How many messages the queue holds, by a passive declare (nothing moves);
 * -1 when the broker cannot say (a note, not an error: the list is the
 * store's). */
static long queue_depth(const vf_config *config)
{
    amqp_link *link = amqp_link_new(config, "virtflowctl dead list", NULL);
    vf_error err;
    vf_error_init(&err);
    uint32_t messages = 0, consumers = 0;
    long depth = -1;
    if (link)
        amqp_link_set_read_only(link); /* a look declares nothing either */
    if (link && amqp_link_connect(link, &err) == 0 &&
        amqp_link_queue_depth(link, BROKER_DEAD_QUEUE, &messages, &consumers, &err) == 0)
        depth = (long)messages;
    else
        fprintf(stderr, "virtflowctl: note: how many messages %s holds is unknown: %s\n",
                BROKER_DEAD_QUEUE, err.text[0] ? err.text : "no broker link");
    amqp_link_free(link);
    return depth;
}

static int list_parked(const vf_config *config, const char *reason, long limit, bool as_json)
{
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        return CTL_EXIT_UNAVAILABLE;
    listing l = {reason, limit, as_json, as_json ? json_array() : NULL, 0};
    store_dead_letter_filter filter = {.parked = 1};
    vf_error err;
    vf_error_init(&err);
    int rc = store_dead_letter_list(s, &filter, list_one, &l, &err);
    store_close(s);
    if (rc < 0) {
        ctl_error("reading the store's record of dead letters: %s", err.text);
        json_decref(l.rows);
        return CTL_EXIT_UNAVAILABLE;
    }
    if (as_json) {
        ctl_print_json(l.rows);
        json_decref(l.rows);
        return CTL_EXIT_OK;
    }
    printf("%zu message%s parked in %s%s (the store's record)\n", l.shown, l.shown == 1 ? "" : "s",
           BROKER_DEAD_QUEUE, reason ? " matching --reason" : "");
    long depth = queue_depth(config);
    if (depth >= 0 && !reason && (size_t)depth > l.shown && !(limit && (long)l.shown >= limit))
        printf("%s holds %ld: %ld not recorded (dead-lettered by the broker itself, e.g. a "
               "delivery-limit on a work queue); dead redrive --all moves them too\n",
               BROKER_DEAD_QUEUE, depth, depth - (long)l.shown);
    return CTL_EXIT_OK;
}

/* ---- redrive: the queue ---- */

typedef struct held {
    amqp_link_delivery d;
    char *why;
    bool selected;
    uint64_t publish_tag;
    int outcome;                     /* 0 unknown, 1 confirmed, -1 failed */
    char parked_at[STORE_TIME_SIZE]; /* the store's record of its park; "": none */
} held;

typedef struct walk {
    held *items;
    size_t n, cap;
} walk;

static void walk_free(walk *w)
{
    for (size_t i = 0; i < w->n; i++) {
        amqp_link_delivery_close(&w->items[i].d);
        free(w->items[i].why);
    }
    free(w->items);
}

/* Take up to `limit` messages (0: all there were at the start) from
 * virtflow.dead, unacked. Returns 0 or -1 (printed). */
static int take_all(amqp_link *link, size_t limit, walk *w)
{
    vf_error err;
    vf_error_init(&err);
    size_t total = 0; /* what was there at the start: never walk our own republishes */
    /* A broker no program has used yet has no virtflow.dead: nothing is
     * parked (dead list declares nothing, as a read should not). */
    if (amqp_link_queue_depth(link, BROKER_DEAD_QUEUE, NULL, NULL, &err) < 0) {
        if (err.code == VF_EINVAL && amqp_link_is_connected(link))
            return 0;
        ctl_error("reading %s: %s", BROKER_DEAD_QUEUE, err.text);
        return -1;
    }
    for (;;) {
        if ((limit && w->n >= limit) || (w->n > 0 && w->n >= total))
            return 0;
        if (grow_array((void **)&w->items, &w->cap, w->n + 1, sizeof *w->items) < 0) {
            ctl_error("out of memory");
            return -1;
        }
        held *h = &w->items[w->n];
        memset(h, 0, sizeof *h);
        uint32_t remaining = 0;
        int got = amqp_link_get(link, BROKER_DEAD_QUEUE, &h->d, &remaining, &err);
        if (got < 0) {
            ctl_error("reading %s: %s", BROKER_DEAD_QUEUE, err.text);
            return -1;
        }
        if (got == 0)
            return 0;
        if (w->n == 0)
            total = (size_t)remaining + 1;
        h->why = why_parked(&h->d);
        w->n++;
    }
}

static void on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    walk *w = user;
    for (size_t i = 0; i < w->n; i++) {
        if (w->items[i].selected && w->items[i].publish_tag == tag) {
            w->items[i].outcome = ok ? 1 : -1;
            if (!ok)
                ctl_error("republishing %s failed: %s",
                          w->items[i].d.message_id ? w->items[i].d.message_id : "(no id)",
                          reason ? reason : "");
        }
    }
}

/* The store's record of the parking lot (GET /v1/dead-letters reads it)
 * learns what was moved: before the move, when each selected message was
 * last parked; after it, those moved are marked redriven unless parked anew
 * meanwhile (a worker may park a redriven message again before our acks).
 * The messages move whatever happens here: a store that cannot be used only
 * leaves them listed as parked. */
static store *read_parks(const vf_config *config, walk *w)
{
    store *s = ctl_open_store(config, STORE_READ_WRITE);
    if (!s) {
        ctl_error("the store's record of dead letters will list the moved messages as parked");
        return NULL;
    }
    vf_error err;
    vf_error_init(&err);
    for (size_t i = 0; i < w->n; i++) {
        held *h = &w->items[i];
        if (h->selected &&
            store_dead_letter_parked_at(s, original_key(&h->d), h->d.message_id, h->d.body,
                                        h->d.body_len, h->parked_at, &err) < 0) {
            ctl_error("reading the store's record of dead letters: %s", err.text);
            store_close(s);
            return NULL;
        }
    }
    return s;
}

static void mark_redriven(store *s, const walk *w)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    vf_error err;
    vf_error_init(&err);
    for (size_t i = 0; s && i < w->n; i++) {
        const held *h = &w->items[i];
        if (!h->selected || h->outcome != 1 || !h->parked_at[0])
            continue;
        if (store_dead_letter_redriven(s, original_key(&h->d), h->d.message_id, h->d.body,
                                       h->d.body_len, h->parked_at, now, &err) < 0) {
            ctl_error("marking %s redriven in the store: %s",
                      h->d.message_id ? ctl_text(h->d.message_id) : "(no id)", err.text);
            break;
        }
    }
}

/* Marks the held messages `reason` (a part of why each was parked) and `id`
 * select (NULL: any). Returns how many. */
static size_t select_matching(walk *w, const char *reason, const char *id)
{
    size_t matched = 0;
    for (size_t i = 0; i < w->n; i++) {
        held *h = &w->items[i];
        if (reason && !strstr(h->why, reason))
            continue;
        if (id && (!h->d.message_id || strcmp(h->d.message_id, id) != 0))
            continue;
        h->selected = true;
        matched++;
    }
    return matched;
}

/* Publishes each selected message again to its original routing key, as it
 * was sent minus our bookkeeping headers: a fresh first attempt. One whose
 * key or body is unknown stays parked (counted in *skipped). Returns 0, or
 * -1 when a publish failed (err set). */
static int republish_selected(amqp_link *link, walk *w, size_t *skipped, vf_error *err)
{
    for (size_t i = 0; i < w->n; i++) {
        held *h = &w->items[i];
        if (!h->selected)
            continue;
        const char *key = original_key(&h->d);
        if (!key || !h->d.body) {
            ctl_error("%s stays parked: %s", h->d.message_id ? h->d.message_id : "(no id)",
                      !key ? "its original routing key is unknown"
                           : "its body is larger than amqp.max_message_bytes");
            h->selected = false;
            (*skipped)++;
            continue;
        }
        amqp_link_message msg = {.body = h->d.body,
                                 .body_len = h->d.body_len,
                                 .content_type = h->d.content_type,
                                 .message_id = h->d.message_id,
                                 .correlation_id = h->d.correlation_id,
                                 .reply_to = h->d.reply_to};
        if (amqp_link_publish(link, BROKER_EXCHANGE, key, &msg, &h->publish_tag, err) < 0)
            return -1;
    }
    return 0;
}

/* Acks each selected message whose copy the broker confirmed (moved) and
 * unselects the others (failed: they go back). Returns the moved ones as
 * JSON rows, printing each unless as_json. */
static json_t *settle_confirmed(amqp_link *link, walk *w, bool as_json, size_t *moved,
                                size_t *failed)
{
    vf_error err;
    vf_error_init(&err);
    json_t *rows = json_array();
    for (size_t i = 0; i < w->n; i++) {
        held *h = &w->items[i];
        if (!h->selected)
            continue;
        if (h->outcome == 1 && amqp_link_ack(link, h->d.delivery_tag, false, &err) == 0) {
            (*moved)++;
            json_array_append_new(rows, json_pack("{s:o, s:o}", "message_id",
                                                  property_json(h->d.message_id), "routing_key",
                                                  property_json(original_key(&h->d))));
            if (!as_json)
                printf("redriven %s -> %s\n",
                       h->d.message_id ? ctl_text(h->d.message_id) : "(no id)",
                       ctl_text(original_key(&h->d)));
        } else {
            h->selected = false;
            (*failed)++;
        }
    }
    return rows;
}

/* Everything not moved goes back where it was. */
static void requeue_unmoved(amqp_link *link, walk *w)
{
    vf_error err;
    vf_error_init(&err);
    for (size_t i = 0; i < w->n; i++) {
        held *h = &w->items[i];
        if (h->selected)
            continue;
        if (amqp_link_reject(link, h->d.delivery_tag, true, &err) < 0)
            break; /* the connection's close requeues the rest */
    }
}

/* dead redrive: takes up to `limit` parked messages (0: all), republishes
 * those selected, acks what the broker confirmed, puts the rest back, and
 * marks the moved ones redriven in the store. Returns the exit code. */
static int redrive_parked(const vf_config *config, const char *reason, const char *id, size_t limit,
                          bool as_json)
{
    int rc = CTL_EXIT_UNAVAILABLE;
    walk w = {0};
    json_t *out_json = NULL;
    store *records = NULL;
    vf_error err;
    vf_error_init(&err);
    amqp_link *link = ctl_connect(config, "dead redrive", CTL_BROKER_WRITE, &rc);
    if (!link)
        goto out;
    rc = CTL_EXIT_UNAVAILABLE;
    amqp_link_set_confirm_callback(link, on_confirm, &w);
    if (take_all(link, limit, &w) < 0)
        goto out;
    size_t matched = select_matching(&w, reason, id), moved = 0, failed = 0, skipped = 0;
    if (matched)
        records = read_parks(config, &w);
    if (republish_selected(link, &w, &skipped, &err) < 0) {
        ctl_error("republishing: %s", err.text);
        goto out; /* unacked messages go back to the queue with the connection */
    }
    if (amqp_link_wait_confirms(link, CONFIRM_TIMEOUT_MS, &err) < 0) {
        ctl_error("waiting for the broker's confirms: %s", err.text);
        goto out;
    }
    out_json = settle_confirmed(link, &w, as_json, &moved, &failed);
    mark_redriven(records, &w);
    if (as_json) {
        json_t *summary =
            json_pack("{s:I, s:I, s:I, s:O}", "moved", (json_int_t)moved, "failed",
                      (json_int_t)failed, "skipped", (json_int_t)skipped, "messages", out_json);
        ctl_print_json(summary);
        json_decref(summary);
    } else {
        printf("moved %zu message%s from %s to exchange %s", moved, moved == 1 ? "" : "s",
               BROKER_DEAD_QUEUE, BROKER_EXCHANGE);
        if (failed || skipped)
            printf(" (%zu failed, %zu left parked)", failed, skipped);
        printf("\n");
    }
    rc = failed ? CTL_EXIT_UNAVAILABLE : moved ? CTL_EXIT_OK : CTL_EXIT_NEGATIVE;
    if (matched == 0)
        ctl_error("nothing in %s matches%s%s", BROKER_DEAD_QUEUE, id ? " message id " : "",
                  id ? id : "");
    requeue_unmoved(link, &w);
out:
    store_close(records);
    json_decref(out_json);
    walk_free(&w);
    amqp_link_free(link);
    return rc;
}

int ctl_dead(int argc, char **argv)
{
    const char *reason = NULL, *id = NULL;
    bool all = false;
    long limit = 0;
    const ctl_option options[] = {
        {"reason", 0, CTL_OPTION_STRING, &reason, NULL, NULL, NULL, NULL},
        {"limit", 0, CTL_OPTION_POSITIVE, &limit, NULL, NULL, NULL, NULL},
        {"all", 0, CTL_OPTION_SET, &all, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("dead", argc, argv, options, dead_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count < 1 ||
        (strcmp(args.operands[0], "list") != 0 && strcmp(args.operands[0], "redrive") != 0)) {
        ctl_error("dead: expected 'list' or 'redrive' (try virtflowctl dead --help)");
        return CTL_EXIT_USAGE;
    }
    bool redrive = strcmp(args.operands[0], "redrive") == 0;
    if (limit == 0)
        limit = redrive ? 0 : DEFAULT_LIST_LIMIT;
    const char *config_path = args.config_path;
    bool as_json = args.json;
    int rest = args.operand_count - 1;
    if (redrive) {
        if (rest == 1 && !all)
            id = args.operands[1];
        else if (!(rest == 0 && all)) {
            ctl_error("dead redrive: give one message ID or --all");
            return CTL_EXIT_USAGE;
        }
    } else if (rest != 0 || all) {
        ctl_error("dead list: unexpected argument (filters: --reason, --limit)");
        return CTL_EXIT_USAGE;
    }

    vf_config *config = redrive ? ctl_load_config_writing(config_path, "dead redrive")
                                : ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    if (!redrive) {
        int listed = list_parked(config, reason, limit, as_json);
        config_free(config);
        return listed;
    }
    int rc = redrive_parked(config, reason, id, (size_t)limit, as_json);
    config_free(config);
    return rc;
}
