/* task_handler: what happens to one task.schedule message, decided and
 * recorded inside the caller's open store transaction (group commit).
 *
 *   not readable (too large, not a JSON object)  -> park in virtflow.dead
 *   task id already final                        -> ack, schedule nothing
 *   invalid request                              -> failed/invalid + task.failed
 *   placed                                       -> completed + reservation + task.completed
 *   no host fits, attempts left                  -> retrying + task.retrying, back through
 *                                                   a delay tier
 *   no host fits, last attempt                   -> failed/unschedulable + task.failed
 *   no inventory, attempts left                  -> retrying + task.retrying
 *   no inventory, last attempt                   -> failed/exhausted + task.failed + parked
 *
 * The task row, its history rows, the reservation and the outbox event are
 * written through `store` in the caller's transaction; the engine holds the
 * reservation at once so the next message in the same batch sees it. If the
 * caller rolls back, it must release the engine reservations of every
 * outcome with `reserved` set. A reservation whose host another worker
 * changed since the engine's picture of it fails with VF_ECONFLICT: roll
 * back, catch the book up and decide the batch again. No broker I/O here: the caller publishes the
 * outcome's event, reply, retry or dead letter after the commit. */
#ifndef VF_TASK_HANDLER_H
#define VF_TASK_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "reservations.h"
#include "store.h"

typedef struct task_handler {
    store *store;               /* borrowed, in a transaction */
    sched_engine *engine;       /* borrowed */
    const vf_config *config;    /* borrowed */
    const hostset *hosts;       /* the engine's snapshot; NULL = no inventory yet */
    const char *inventory_note; /* "inventory is stale (...)" or "" */
    int64_t (*now_ms)(void);    /* clock seam: Unix milliseconds */
    reservation_book *book;     /* borrowed; claims each reservation's host at the generation
                                   decided from. NULL: the store's only writer (tests) */
    const char *worker;         /* this worker's name (store_owner_name), in every attempt's
                                   history: several workers share a store. NULL: none */
} task_handler;

/* The message as it came off the queue; borrowed. */
typedef struct task_message {
    const unsigned char *body; /* NUL-terminated (as amqp_link hands it out) */
    size_t body_len;
    bool too_large;
    uint64_t body_size; /* announced by the broker, for the too-large reason */
    const char *routing_key;
    const char *message_id;
    const char *reply_to;
    bool redelivered;
    int64_t attempt; /* x-virtflow-attempt; 0 = absent (first attempt) */
    /* The AMQP user_id (checked by the broker), NULL when absent: `attempt`
     * is believed only from a trusted publisher (the worker's own retries),
     * see task_attempt_open. */
    const char *user_id;
} task_message;

typedef enum {
    TASK_ACK = 0, /* done: ack after commit (and after the event's publish, if any) */
    TASK_RETRY,   /* republish through retry tier `delay_s` with attempt `next_attempt` */
    TASK_DEAD,    /* republish to virtflow.dead with `error`, then ack */
} task_action;

typedef struct task_outcome {
    task_action action;
    char task_id[REQUEST_TASK_ID_LEN]; /* "" when the message was unreadable */
    bool reserved;                     /* the engine holds a reservation under task_id */
    bool duplicate;                    /* the task was already final: nothing was recorded */
    bool placed;      /* an ordinary placement: logged at debug, counted in the periodic summary */
    char *event_id;   /* owned; the outbox row written, to publish after commit */
    char *event_key;  /* owned; routing key event.<type> */
    char *event_body; /* owned; JSON text */
    char *reply_body; /* owned; the result for reply_to, or NULL */
    int next_attempt;
    int delay_s;
    char *error;       /* owned; for TASK_DEAD (x-virtflow-error) and logs */
    char status[16];   /* the task's status as recorded ("" when nothing was), for metrics */
    char reason[16];   /* its reason when failed, else "" */
    char summary[768]; /* one line for the log */
} task_outcome;

void task_outcome_close(task_outcome *outcome);

/* Decide and record one message. Returns 0 with *out filled, or -1 with err
 * when the store failed (the caller rolls the whole batch back). */
int task_handler_handle(task_handler *handler, const task_message *msg, task_outcome *out,
                        vf_error *err) __attribute__((warn_unused_result));

#endif
