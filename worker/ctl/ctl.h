/* virtflowctl: shared pieces of the command-line tool. Each command lives in
 * its own cmd_<name>.c and is listed once in main.c's table. */
#ifndef VF_CTL_H
#define VF_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "amqp_link.h"
#include "config.h"
#include "ids.h"
#include "ctl_options.h"
#include "request.h"
#include "store.h"
#include "store_tasks.h"

/* Exit statuses, the same for every command (documented in --help). */
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_NEGATIVE = 1,    /* the answer is "no": not placed, bad signature, task failed */
    CTL_EXIT_USAGE = 2,       /* bad command line or bad request */
    CTL_EXIT_CONFIG = 3,      /* configuration could not be loaded */
    CTL_EXIT_UNAVAILABLE = 4, /* broker, store or inventory could not be reached */
    CTL_EXIT_PENDING = 5      /* published, but no final answer within --timeout: still running */
};

typedef struct ctl_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
} ctl_command;

int ctl_place(int argc, char **argv);
int ctl_verify(int argc, char **argv);
int ctl_deliveries(int argc, char **argv);
int ctl_redeliver(int argc, char **argv);
int ctl_submit(int argc, char **argv);
int ctl_release(int argc, char **argv);
int ctl_tasks(int argc, char **argv);
int ctl_task(int argc, char **argv);
int ctl_dead(int argc, char **argv);
int ctl_nodes(int argc, char **argv);
int ctl_stats(int argc, char **argv);
int ctl_workers(int argc, char **argv);
/* The store half of `virtflowctl stats --json` from an open store (path: its
 * name in the report), for stats and the console's overview. New reference. */
json_t *ctl_stats_store(store *s, const char *path);
int ctl_health(int argc, char **argv);
int ctl_spares(int argc, char **argv);
int ctl_spare(int argc, char **argv);
int ctl_prune(int argc, char **argv);
int ctl_simulate(int argc, char **argv);
int ctl_explain(int argc, char **argv);
int ctl_headroom(int argc, char **argv);
/* headroom --plan (ctl_plan.c): the fewest hosts like `like` to add, within
 * max_hosts, over `days` of projected demand from the last window_days;
 * prints the answer. Returns an exit status. */
int ctl_plan(const vf_config *config, store *s, const char *like, int days, int window_days,
             int max_hosts, bool as_json);
int ctl_completion(int argc, char **argv);
/* `completion values KIND` (cmd_completion_values.c): the candidates the
 * shell completion reads for tasks, hosts, pools or receivers. */
int ctl_completion_values(const char *kind, const char *config_path);
int ctl_serve(int argc, char **argv);
int ctl_config(int argc, char **argv);

/* Load the configuration named by -c (may be NULL: $VIRTFLOW_CONFIG, then
 * /etc/virtflow/config.yaml when it exists, then built-in defaults), for a
 * command that only reads: when no file was named (-c or the environment),
 * says on stderr which configuration it uses. Prints the error and returns
 * NULL on failure. */
vf_config *ctl_load_config(const char *path);

/* ctl_load_config for `command`, which writes to a broker or store: on
 * built-in defaults it refuses (prints why and returns NULL, exit
 * CTL_EXIT_CONFIG) unless --defaults was given. */
vf_config *ctl_load_config_writing(const char *path, const char *command);

/* Print "virtflowctl: <message>" to stderr. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- shared by the commands (ctl_common.c) ---- */

/* The request flags of place and submit: --cpu N --memory MiB --disk GiB
 * --pool NAME --dedicated --vm-name NAME --node-name HOST --annotation KEY=VALUE, each
 * setting its field of the JSON object `request` (a json_t *) as the option
 * table entries this expands to are applied. */
#define CTL_REQUEST_OPTIONS(request)                                                                 \
    {"cpu", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "requested_cpu", NULL},           \
        {"memory", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "requested_memory", NULL}, \
        {"disk", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "requested_disk", NULL},     \
        {"pool", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "requested_pool", "@pools"}, \
        {"dedicated", 0,   CTL_OPTION_CALL_BARE, (request), NULL, ctl_request_flag,                  \
         "dedicated", NULL},                                                                         \
        {"vm-name", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "vm_name", NULL},         \
        {"node-name", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "node_name", "@hosts"}, \
        {"scheduler",      0,   CTL_OPTION_CALL, (request), NULL, ctl_request_flag,                  \
         "scheduler_name", NULL},                                                                    \
    {                                                                                                \
        "annotation", 0, CTL_OPTION_CALL, (request), NULL, ctl_request_flag, "annotations", NULL     \
    }

/* The options of a command that takes only -c FILE, --json and --help.
 * Returns -1 to go on (config_path and as_json set), or the exit status to
 * return at once (--help, or a usage error, already printed). */
int ctl_only_common_options(int argc, char **argv, const char *command, void (*print_usage)(FILE *),
                            const char **config_path, bool *as_json);

/* CTL_OPTION_CALL of the request flags: apply `value` to the request
 * (option->target) under option->detail. Returns 0, or -1 after printing
 * what is wrong with the value. */
int ctl_request_flag(const ctl_option *option, const char *value);

/* Open the store at `location` (an SQLite path or a postgresql:// URL) and
 * say what to do when that fails: no file ("start virtflow-worker once or
 * check store.path"), permission denied, not a database, server unreachable.
 * Returns an owned handle, or NULL after printing the error. */
store *ctl_open_store_at(const char *location, store_mode mode);

/* ctl_open_store_at for the configured store (store.path, or store.url with
 * its password file and TLS keys). */
store *ctl_open_store(const vf_config *config, store_mode mode);

/* The configured store's name for messages (path, or URL without password);
 * valid until the next call. */
const char *ctl_store_name(const vf_config *config);

/* What a command does on the broker: CTL_BROKER_READ declares nothing
 * (stats, health, dead list: looking leaves no queue behind),
 * CTL_BROKER_WRITE declares the topology first, as the programs do, so that
 * what it publishes has a queue to go to. */
enum { CTL_BROKER_READ, CTL_BROKER_WRITE };

/* A connected broker link named "virtflowctl <command>". On failure prints
 * why and returns NULL with *status CTL_EXIT_UNAVAILABLE ("broker
 * unreachable at <URL without password>: <why>") or CTL_EXIT_CONFIG (a
 * broker that answers but does not fit the configuration: its queues were
 * declared with other arguments, the URL cannot be parsed); CTL_EXIT_OK
 * with a link. */
amqp_link *ctl_connect(const vf_config *config, const char *command, int access, int *status);

/* `text` escaped for a terminal (text_escape.h): every string that came
 * from a client, the broker, the store or a receiver goes through this
 * before it is printed, so an escape sequence in a message id cannot act on
 * the operator's terminal. Never NULL. The result lives in one of
 * CTL_TEXT_SLOTS rotating buffers: valid until that many later calls, so
 * one printf may take up to that many. */
#define CTL_TEXT_SLOTS 8
const char *ctl_text(const char *text);

/* Print JSON to stdout, indented, keys in insertion order. */
void ctl_print_json(const json_t *value);

/* Parse JSON text held in the store; a JSON null (not NULL) when the text is
 * NULL or not JSON, so callers can always json_object_set_new it. */
json_t *ctl_parse_stored_json(const char *text);

/* A task row as JSON (request and result parsed): the shape of `tasks --json`
 * items and of `task --json`'s "task". Owned. */
json_t *ctl_task_json(const store_task *task);

/* The fields of a recorded spare.prepare body a placement reads (the
 * worker's spare_handler checked the rest when it was recorded) into *req,
 * its count (1..64) and ready_timeout_s (may be NULL). Returns 0 or -1 with
 * err. */
/* The configured inventory fetched once: *inv owned (inventory_free, also
 * when NULL is returned), the hostset owned. NULL after printing why, with
 * *rc the exit status: CTL_EXIT_CONFIG (the source's settings),
 * CTL_EXIT_UNAVAILABLE (it did not answer). */
struct inventory;
struct hostset *ctl_fetch_hosts(const vf_config *config, struct inventory **inv, int *rc);

int ctl_parse_spare_prepare(const json_t *body, sched_request *req, int *count,
                            int *ready_timeout_s, vf_error *err);

/* "--since": "30m", "1h", "2d", "45s" before now, or an RFC 3339 time
 * ("2026-11-22T01:02:03Z", fractions allowed). Writes a store timestamp.
 * Returns 0, or -1 for text in neither form. */
int ctl_parse_since(const char *text, char out[STORE_TIME_SIZE]);

/* Parse a positive integer option; prints the error and returns -1 otherwise. */
int ctl_parse_positive(const char *option, const char *text, long *out);

/* The task id buffer of ctl_request_body: a client's id may be long. */
#define CTL_TASK_ID_SIZE (IDS_LEN * 3)

/* The body submit and spare publish, as compact text (owned), or NULL after
 * printing why: the JSON object in file `path` ("-": stdin) sent as written,
 * else the object `flags` built. The task id (the body's task_id, else
 * `task_id_flag`, else a new tsk_ id; the two must agree) goes to `task_id`,
 * and into the body too when `id_in_body`. */
char *ctl_request_body(const char *path, json_t *flags, const char *task_id_flag, bool id_in_body,
                       char task_id[CTL_TASK_ID_SIZE]);

/* "2 vCPUs, 4096 MiB" from a suggestion's figures ({"cpu":2,"memory_mib":4096};
 * worker/sched/suggest.h; a disk of 0 left out) into `out`, truncated to `size`. */
void ctl_amounts(const json_t *figures, char *out, size_t size);

/* One request for ctl_publish_request; borrowed strings. */
typedef struct ctl_request {
    const char *command;     /* "submit": the connection's name */
    const char *routing_key; /* on exchange virtflow */
    const char *body;        /* JSON text */
    const char *id;          /* message_id, and correlation_id of the reply */
    long wait_s;             /* > 0: wait this long for the end (reply or final event) */
    const char *announce;    /* printed once the broker confirmed, before waiting; or NULL */
    bool progress;           /* while waiting, print the task's task.retrying events */
    bool *confirmed;         /* if not NULL: set true once the broker confirmed the message */
    /* Follow the request through events instead of a reply (spare requests:
     * their end comes from the spare driver long after the message was
     * acked): the queue is bound to these keys (NULL-terminated) before the
     * publish, and on_event sees every trusted event of the task; it returns
     * -1 to go on waiting, else the exit status (the event was final). */
    const char *const *event_keys;
    int (*on_event)(const char *type, json_t *data, void *ctx);
    void *event_ctx;
} ctl_request;

/* "attempt 1 of 3 failed; attempt 2 at 2026-11-22T01:02:03Z (in 25 s)": where
 * a retrying task stands (task_view_retry's object), into out. */
#define CTL_RETRY_TEXT 160
void ctl_retry_text(const json_t *retry, char *out, size_t size);

/* "retrying in S s (attempt N): ERROR" for a task.retrying event's data. */
void ctl_print_retrying(const json_t *data);

int ctl_publish_request(const vf_config *config, const ctl_request *request, json_t **reply)
    __attribute__((warn_unused_result));

#endif
