/* config: the one YAML file every program reads: worker, relay, api, nats,
 * virtflowctl (docs/contracts.md, Configuration).
 *
 * config_load parses a file with libyaml, checks every value and returns an
 * owned vf_config. Every key is optional; config_defaults gives the built-in
 * defaults that work against a broker on 127.0.0.1:5672 with guest/guest.
 * Errors name the file, the line and the key path, e.g.
 *   config.yaml:12: scheduler.overcommit.cpu: expected a number > 0
 * Unknown keys are errors too (a typo must not silently fall back to a default).
 * A key given as null (`key:`, `key: null`, `~`) keeps its default.
 * Relative paths in a file (store.path, inventory.path, *_file, secret_files)
 * are resolved against the directory of that file; built-in defaults stay
 * relative to the working directory.
 * Secrets are never read here: only the paths of the files that hold them,
 * and a URL quoted in an error has its password replaced by ***. */
#ifndef VF_CONFIG_H
#define VF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h"
#include "vf_error.h"

typedef enum { CONFIG_QUEUE_QUORUM = 0, CONFIG_QUEUE_CLASSIC } config_queue_type;
typedef enum {
    CONFIG_INVENTORY_FILE = 0,
    CONFIG_INVENTORY_HTTP,
    CONFIG_INVENTORY_PROXMOX
} config_inventory_source;
typedef enum {
    CONFIG_PLUGIN_FILTER = 0,
    CONFIG_PLUGIN_SCORE,
    CONFIG_PLUGIN_VMID
} config_plugin_kind;

/* One entry under scheduler.plugins.{filters,scores,vmids}. Only entries the
 * file names appear here; the engine applies them over its own defaults and
 * rejects unknown names, quoting `line`. */
typedef struct config_plugin {
    config_plugin_kind kind;
    char name[48];
    bool enable;     /* default true */
    bool has_weight; /* weight given in the file */
    double weight;   /* >= 0 */
    int line;        /* where the entry starts, for error messages */
    /* `args:`, each with has_*: given in the file. The engine refuses an
     * argument the plugin does not take. */
    bool has_ratio;
    double ratio; /* CPUOvercommit, MemoryOvercommit: the overcommit ratio, > 0 */
    bool has_reserve;
    double reserve; /* CPUOvercommit: cores, MemoryOvercommit: MiB kept free, >= 0 */
    bool has_subset_size;
    int subset_size; /* Random: pick among the top N, >= 1 */
    bool has_seed;
    int64_t seed; /* Random: >= 0; 0 = from the clock */
    bool has_target_percent;
    double target_percent; /* TargetLoadPacking: the utilisation scored best, 1..99 % */
    bool has_missing_score;
    double missing_score; /* TargetLoadPacking: score of a host without usage, 0..100 */
    const char *file; /* NULL: the config file itself; else scheduler.plugin_config (borrowed) */
    /* NULL: scheduler.plugins; else the profile's key, "scheduler.profiles.NAME" (borrowed) */
    const char *section;
} config_plugin;

typedef enum { CONFIG_STRATEGY_SPREAD = 0, CONFIG_STRATEGY_PACK } config_strategy;
/* scheduler.unfit_requests: a request no host of the inventory could hold
 * even empty fails at once (never_fits), or waits like one that finds no
 * room now. */
typedef enum { CONFIG_UNFIT_FAIL = 0, CONFIG_UNFIT_WAIT } config_unfit;
typedef enum { CONFIG_REGEX_FULL = 0, CONFIG_REGEX_SEARCH } config_regex_match;

/* scheduler.profiles.NAME: a request's scheduler_name picks one. Only how
 * hosts are filtered and scored differs; overcommit, reserve, near_best_*,
 * regex_match and reservations are the scheduler section's. */
typedef struct config_profile {
    char *name;               /* 1..63 of [A-Za-z0-9._-], not "default" */
    char *section;            /* "scheduler.profiles.NAME", for messages */
    config_strategy strategy; /* spread (default) | pack */
    config_plugin *plugins;   /* plugin_config's entries first, then plugins' (as scheduler's) */
    size_t n_plugins;
    char *plugin_config; /* qemu-scheduler's plugin-config YAML; NULL = none */
} config_profile;
/* scheduler.priority_classes.NAME: a request's priority_class names one;
 * preemption: whether it may take lower priorities' unbound reservations
 * (worker/sched/preempt.h). */
typedef enum { CONFIG_PREEMPT_LOWER = 0, CONFIG_PREEMPT_NEVER } config_preemption;
typedef struct config_priority_class {
    char *name; /* 1..63 of [A-Za-z0-9._-] */
    int value;  /* higher is decided first */
    config_preemption preemption;
} config_priority_class;
typedef enum {
    CONFIG_NEAR_BEST_AUTO = 0,
    CONFIG_NEAR_BEST_OFF,
    CONFIG_NEAR_BEST_TASK,
    CONFIG_NEAR_BEST_WORKER
} config_near_best;

typedef struct config_header {
    char *name;
    char *value;
} config_header;

typedef struct config_receiver {
    char *name;
    char *url;
    char **events; /* type patterns: "task.*", "spare.ready", "*" */
    size_t n_events;
    char **secret_files; /* paths; several while rotating */
    size_t n_secret_files;
    char *secret_env; /* name of an environment variable holding whsec_... (optional) */
    double timeout_s;
    config_header *headers; /* extra request headers */
    size_t n_headers;
    bool enabled;
    int max_in_flight; /* per-receiver concurrency limit, default 8 */
    char *ca_file;     /* https:// trust anchors; NULL = the system store */
    int *schedule_s;   /* its own retry schedule; NULL/0: relay.schedule_s */
    size_t n_schedule;
    double rate_per_s;   /* deliveries started per second at most; 0: no pace */
    int disable_after_s; /* failing this long: disabled (circuit breaker); 0: never */
    int probe_s;         /* while disabled: one delivery tried this often, seconds */
} config_receiver;

/* spare.clusters.NAME: the Kubernetes API server of one cluster. */
typedef struct config_cluster {
    char *name;
    char *api_url;
    char *token_file;
    char *ca_file; /* NULL: the system store */
} config_cluster;

/* worker.headroom_shapes.NAME: a reference request shape the worker's
 * /metrics counts headroom in (worker/sched/headroom.h). */
typedef struct config_shape {
    char *name;
    double cpu;        /* vCPUs, > 0 */
    int64_t memory;    /* MiB, > 0 */
    int64_t disk;      /* GiB, >= 0; 0: not counted */
    int64_t min_hosts; /* the alert's threshold: hosts that must take one; 0: none */
} config_shape;

typedef struct vf_config {
    char *path; /* file it came from, or NULL for built-in defaults */
    /* The VIRTFLOW_* variables applied over the file or the defaults
     * (config_apply_environment): env_names[i] set the key env_keys[i]. */
    char **env_names;
    char **env_keys;
    size_t n_env;

    struct {
        char **urls; /* default: amqp://guest:guest@127.0.0.1:5672/ */
        size_t n_urls;
        char *password_file;
        config_queue_type queue_type;
        int prefetch;    /* default 200, 1..65535 */
        int heartbeat_s; /* default 20, 0 disables */
        bool single_active_consumer;
        int64_t max_message_bytes; /* default 1048576 */
        char *ca_file;             /* amqps:// trust anchors; NULL = system store */
        bool tls_verify;           /* default true; false is logged loudly */
    } amqp;

    struct {
        char *path;               /* SQLite file, default virtflow.db; NULL when url is set */
        char *url;                /* postgresql://USER@HOST:PORT/DB: PostgreSQL instead of path */
        char *password_file;      /* PostgreSQL password (url only) */
        char *ca_file;            /* PostgreSQL TLS trust anchors: sslmode verify-full (url only) */
        bool tls_verify;          /* default true; false with ca_file: sslmode require, logged */
        int64_t retention_s;      /* store.retention: final rows older than this are pruned;
                                     default 30d (2592000 s), > 0 */
        int statement_timeout_ms; /* PostgreSQL: bound of each command (ms); default
                                     30000, 0: none (url only) */
    } store;

    struct {
        config_inventory_source source;
        char *path; /* default deploy/inventory.example.yaml */
        char *url;
        char *token_file;
        int refresh_s;       /* default 10 */
        int max_age_s;       /* a snapshot older than this stops placements; default 300 */
        int record_every_s;  /* least time between recorded snapshots (replay); 0: none; 3600 */
        bool record_decided; /* also record every content decided over (explain --replay); true */
        double timeout_s;    /* http/proxmox request timeout, default 5 */
        char *ca_file;       /* proxmox https trust anchors; NULL = system store */
        bool tls_verify;     /* default true */
    } inventory;

    struct {
        double overcommit_cpu;         /* default 4.0, > 0 */
        double overcommit_memory;      /* default 1.0, > 0 */
        double reserve_cpu;            /* cores kept free per host, default 0, >= 0 */
        int64_t reserve_memory;        /* MiB kept free per host, default 0, >= 0 */
        bool dedicated_exclusive;      /* default true */
        int subset_size;               /* default 1, >= 1 */
        config_near_best near_best_by; /* auto (default): worker with store.url, else off */
        int near_best_hosts;           /* by task: how many of the best, >= 1, default 4 */
        double near_best_max_loss;     /* score points (0..100), default 5, >= 0 */
        int vmid_stride;               /* 0 (auto): 64 with store.url, else 1 */
        int reservation_ttl_s;         /* default 900, > 0 */
        config_plugin *plugins;        /* scheduler.plugin_config's entries first, then
                                          scheduler.plugins' (the engine applies them in
                                          order, so the config file's own entries win) */
        size_t n_plugins;
        config_strategy strategy;       /* spread (default) | pack */
        config_regex_match regex_match; /* full (default) | search */
        char *plugin_config;            /* qemu-scheduler's plugin-config YAML; NULL = none */
        config_profile *profiles;       /* scheduler.profiles, in file order */
        size_t n_profiles;
        config_unfit unfit_requests;             /* fail (default) | wait */
        config_priority_class *priority_classes; /* in file order */
        size_t n_priority_classes;
        char *default_priority_class; /* NULL: a request without one has priority 0 */
        int priority_lane_min;        /* default 1000: this priority or more takes the lane */
        int preemption_grace_s;       /* default 300, > inventory.refresh_s */
    } scheduler;

    struct {
        int max_attempts; /* default 5, >= 1 */
        int *delays_s;    /* seconds; default 5, 30, 120, 600; each >= 0, at least one */
        size_t n_delays;
        int recheck_on_room; /* waiting tasks sent again per second when room grows; 0: off */
    } retry;

    struct {
        config_receiver *receivers;
        size_t n_receivers;
        int *schedule_s; /* default 0, 5, 300, 1800, 7200, 18000, 36000, 36000 */
        size_t n_schedule;
        /* AMQP user names whose events the relay delivers and whose
         * x-virtflow-attempt the worker believes. NULL/0 = the default: the
         * user names of amqp.urls (ask config_trusts_publisher). Never an
         * empty list otherwise: `[]` is a configuration error. */
        char **trusted_publishers;
        size_t n_trusted_publishers;
        /* /metrics, /healthz, /readyz: HOST:PORT, default 127.0.0.1:9465; NULL = off */
        char *http_listen;
    } relay;

    /* virtflow-nats: every event also on a NATS JetStream stream
     * (docs/webhooks.md "Events on NATS JetStream"). */
    struct {
        char *url;              /* nats:// or tls://; NULL = no sink (the default) */
        char *stream;           /* the JetStream stream, default VIRTFLOW_EVENTS */
        char *subject_prefix;   /* subjects are PREFIX.<type>, default virtflow.events */
        int duplicate_window_s; /* the stream's duplicate window when the sink creates it */
    } nats;

    struct {
        /* /metrics, /healthz, /readyz: HOST:PORT, default 127.0.0.1:9464; NULL = off */
        char *http_listen;
        config_shape *headroom_shapes; /* in file order; none by default */
        size_t n_headroom_shapes;
    } worker;

    struct {
        /* virtflow-api's HTTP address: HOST:PORT, default 127.0.0.1:8080 (the
         * prototype's port); never NULL */
        char *listen;
        /* Host names it answers to besides loopback ones and the listen
         * address (a proxy's public name); NULL/0 = none */
        char **allowed_hosts;
        size_t n_allowed_hosts;
        /* The keys file (worker/api/api_keys.h): hashed keys, each with a
         * name and scopes; NULL = none (open, and loopback only) */
        char *keys_file;
        /* TLS inside virtflow-api (docs/api.md "TLS"): PEM certificate
         * (chain) and private key files, both or neither; NULL = plain HTTP */
        char *tls_cert_file;
        char *tls_key_file;
        /* The requeue sweep (worker/api/api_sweep.h): a task still queued
         * this long after its last write is published again; 0 = no sweep.
         * Default 300. */
        int requeue_after_s;
        /* Republishes before such a task ends failed (reason "lost").
         * Default 3. */
        int requeue_max;
        /* Files of the secret Idempotency-Key task ids are keyed with
         * (worker/api/api_idempotency.h): the first keys new ids, the
         * others are looked up too (rotation); NULL/0 = none */
        char **idempotency_secret_files;
        size_t n_idempotency_secret_files;
        /* Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For
         * names the client (httpd.h); NULL/0 = none */
        char **trusted_proxies;
        size_t n_trusted_proxies;
    } api;

    struct {
        bool anti_affinity_strict; /* "strict" (default) or "preferred" */
        char *name_pattern;        /* default "spare-{upgrade_id}-{index}" */
        struct {
            char *type; /* none | gitlab | command | awx; default none */
            char *url;
            char *project;
            char *ref; /* default main */
            char *token_file;
            char **command; /* argv */
            size_t n_command;
            int timeout_s;        /* default 600; also bounds waiting for a gitlab pipeline */
            char *api_token_file; /* gitlab: token with read_api, to poll pipelines */
            int64_t job_template; /* awx: the job template's id */
        } provisioner;
        struct {
            char *type; /* none | kubernetes; default none */
            char *api_url;
            char *token_file;
            char *ca_file;
            int poll_s; /* default 10 */
        } readiness;
        /* A request's `cluster` names one of these; empty: every cluster
         * uses readiness.api_url (the single-cluster default). */
        config_cluster *clusters;
        size_t n_clusters;
        char *release_kubernetes; /* none | delete | drain_delete; default none */
        int64_t max_age_s;        /* spares older than this are released by policy; 0: never */
    } spare;

    struct {
        vf_log_level level;   /* default info */
        vf_log_format format; /* default text; json: one object per line */
    } log;
} vf_config;

/* The cluster called `name` in spare.clusters, or NULL. Borrowed from c. */
const config_cluster *config_spare_cluster(const vf_config *c, const char *name);
/* scheduler.profiles.NAME, or NULL (also for "default", which is the
 * scheduler section itself). Borrowed from `c`. */
const config_profile *config_scheduler_profile(const vf_config *c, const char *name);
/* The i-th (from 0) of the arguments `args:` set on a plugin entry, in the
 * key table's order ("ratio", "reserve", ...), or NULL past the last: the
 * one list of plugin arguments, which the scheduler checks each plugin's
 * against (worker/sched/plugin_config.c). */
const char *config_plugin_arg_set(const config_plugin *plugin, size_t i);
/* scheduler.priority_classes.NAME, or NULL. */
const config_priority_class *config_priority_class_named(const vf_config *c, const char *name);

/* Built-in defaults. Returns an owned config, or NULL when out of memory. */
vf_config *config_defaults(void);

/* Load and check a YAML file over the defaults. Returns an owned config
 * (its `path` a copy of `path`), or NULL with err filled: VF_ECONFIG
 * "path:line: key.path: what was expected" (YAML syntax errors:
 * "path:line: libyaml's problem"), VF_EIO when the file cannot be read,
 * VF_ENOMEM. Logs a warning when a tls_verify key is false. */
vf_config *config_load(const char *path, vf_error *err) __attribute__((warn_unused_result));

/* Same, from a string; `name` stands for the file name in messages. There is
 * no file, so relative paths stay relative to the working directory and the
 * result's `path` is NULL. */
vf_config *config_load_string(const char *text, size_t len, const char *name, vf_error *err)
    __attribute__((warn_unused_result));

/* Where the packages, the container image and the units put the file. */
#define CONFIG_SYSTEM_PATH "/etc/virtflow/config.yaml"

/* Resolve the file the programs use: `cli_path` if given, else $VIRTFLOW_CONFIG
 * when set and non-empty, else CONFIG_SYSTEM_PATH when it exists, else
 * built-in defaults (the result's `path` NULL: callers that write to a broker
 * or store refuse those unless told otherwise, config_is_builtin); then the
 * VIRTFLOW_* overrides of the process environment (config_apply_environment).
 * Errors as config_load and config_apply_environment. */
vf_config *config_resolve(const char *cli_path, vf_error *err) __attribute__((warn_unused_result));

/* config_resolve with another system path (NULL: none), for tests. */
vf_config *config_resolve_from(const char *cli_path, const char *system_path, vf_error *err)
    __attribute__((warn_unused_result));

/* Environment overrides (docs/configuration.md, "Environment"). Every key
 * of the key table whose value is a scalar, a plain list or a duration has a
 * variable: VIRTFLOW_ and its key path in capitals, each '.' a '_'
 * (amqp.urls: VIRTFLOW_AMQP_URLS, inventory.max_age_s:
 * VIRTFLOW_INVENTORY_MAX_AGE_S). Lists are comma-separated. A value is taken
 * as the same plain YAML scalar a file would hold and checked by the same
 * walker and section checks, over what the file (or the defaults) gave;
 * "null" means what it means in a file. Relative paths are relative to the
 * working directory. An empty variable is not set. A VIRTFLOW_<SECTION>_...
 * variable that names no key, or a key the environment cannot set (lists of
 * sections: receivers, plugins, clusters; scheduler.plugin_config), is an
 * error, as an unknown key in a file is; other VIRTFLOW_* names
 * (VIRTFLOW_CONFIG, a provisioner's VIRTFLOW_VM_NAME, a receiver's
 * secret_env) are left alone.
 *
 * Applies the VIRTFLOW_* entries of `environment` ("NAME=value" strings, NULL
 * terminated, as `environ`) to `config`. Returns 0 (config->env_* list what
 * was applied), or -1 with err: VF_ECONFIG "VIRTFLOW_LOG_LEVEL: log.level:
 * expected one of debug|info|warn|error", VF_ENOMEM. On error `config` may
 * be half changed: free it. */
int config_apply_environment(vf_config *config, const char *const *environment, vf_error *err)
    __attribute__((warn_unused_result));

/* The variable that sets key path `key` ("amqp.urls" → "VIRTFLOW_AMQP_URLS")
 * into out. Returns 0, or -1 when it does not fit. */
int config_env_name(const char *key, char *out, size_t size);

/* The variable that set `key` in this config, or NULL when the key came from
 * the file or the defaults. Borrowed from config. */
const char *config_key_origin(const vf_config *config, const char *key);

/* No file, and no VIRTFLOW_AMQP_* or VIRTFLOW_STORE_* variable: the broker
 * and store are the built-in defaults' (127.0.0.1, virtflow.db in the
 * working directory), which writers refuse unless told otherwise. */
bool config_is_builtin(const vf_config *config);

/* Calls fn for every key of the key table with its variable and whether the
 * environment can set it, in the table's order; stops at and returns the
 * first non-zero fn returns, else 0. */
int config_env_each(int (*fn)(const char *name, const char *key, bool settable, void *user),
                    void *user);

/* Is `user` (an AMQP user_id property, NULL when absent) one of
 * relay.trusted_publishers, or, when that key is not set, the user name of one
 * of amqp.urls (a URL without one means guest, as for rabbitmq-c)? NULL and ""
 * are never trusted. */
bool config_trusts_publisher(const vf_config *config, const char *user);

/* ---- keys that must agree (config_rules.c) ----
 *
 * Some guarantees hang on two keys at once: a retention shorter than a
 * worker's inventory window, a reservation that ends before the refresh
 * that could show its VM. Each such pair is a rule: checked on every
 * configuration the programs resolve (config_resolve, a SIGHUP's reload), and
 * listed in docs/configuration.md ("Keys that must agree") from this one
 * table. A rule either keeps what the guarantee needs whatever the keys say
 * (KEEPS: retention keeps rows longer), warns (a program would still work,
 * and refusing would stop running deployments at an upgrade), or refuses
 * the configuration (the guarantee cannot hold). */

/* How long after an inventory ended a reservation (bound_at, and its
 * expiry) the row is still counted by a worker whose snapshot is older:
 * inventory.max_age_s, past which a worker stops placing. (Fetch times are
 * wall clock times of different machines: keep them in sync.) */
int64_t config_bound_reservation_keep_s(const vf_config *config);

/* How long after a final task was last written a copy of its message may
 * still come back from a retry tier (a task a recheck completed meanwhile):
 * the longest of retry.delays_s (then it waits in its work queue, however
 * deep that is). */
int64_t config_final_task_keep_s(const vf_config *config);

typedef enum {
    CONFIG_RULE_KEEPS,   /* what the guarantee needs is kept whatever the keys say */
    CONFIG_RULE_WARNS,   /* a warning at start and in config check */
    CONFIG_RULE_REFUSES, /* the configuration is refused (exit 3) */
} config_rule_outcome;

typedef struct config_rule {
    const char *keys;      /* Markdown: "`store.retention`, `inventory.max_age_s`" */
    const char *relation;  /* what must hold */
    const char *guarantee; /* what breaks otherwise */
    config_rule_outcome outcome;
    const char *handling; /* what virtflow does about it, and why not more */
    const char *program;  /* the one program it concerns ("virtflow-worker"); NULL: all */
    /* Writes why `config` breaks the rule into why[size] and returns true;
     * false when it holds. NULL: checked while the file is read (the
     * section's own check). */
    bool (*broken)(const vf_config *config, char *why, size_t size);
} config_rule;

/* The rules, in the order the reference lists them. */
const config_rule *config_rules(size_t *count);

/* Called for each rule `config` breaks (a KEEPS or WARNS one, or the
 * REFUSES one that stops the check), with the reason. */
typedef void (*config_rule_report_fn)(const config_rule *rule, const char *why, void *user);

/* Check the rules concerning `program` (NULL: every rule). Each broken rule
 * goes to `report` (NULL: none); the first broken REFUSES rule ends the
 * check: -1 with err VF_ECONFIG "<keys>: <why>". Returns 0 otherwise. */
int config_check_rules(const vf_config *config, const char *program, config_rule_report_fn report,
                       void *user, vf_error *err) __attribute__((warn_unused_result));

/* Parse a duration of store.retention's form: a positive integer and one
 * unit, s, m, h or d ("90s", "45m", "12h", "30d"), into *seconds (at most
 * 100 years). Returns 0, or -1 for anything else (no sign, no space, no
 * fraction, no missing unit). Shared with virtflowctl prune --older-than. */
int config_parse_duration(const char *text, int64_t *seconds) __attribute__((warn_unused_result));

/* Writes the configuration reference, docs/configuration.md, as Markdown:
 * every key of the key table with its type, default and meaning, one table
 * per top-level section. Returns 0, or -1 with err: VF_ECONFIG naming a key
 * that has no description, VF_ENOMEM, VF_EIO when `out` fails. */
int config_write_reference(FILE *out, vf_error *err) __attribute__((warn_unused_result));

/* Which program applies a changed key on SIGHUP: bits of the key table's
 * `reloads` (config_keys.c), also shown in docs/configuration.md. */
#define CONFIG_RELOADS_WORKER 1u
#define CONFIG_RELOADS_RELAY 2u
#define CONFIG_RELOADS_NEVER 0x80u

/* Called by config_diff for each key whose value differs: its path
 * ("scheduler.strategy", "relay.receivers") and whether `program` applies
 * the change on reload (else it takes a restart). */
typedef void (*config_diff_fn)(const char *key, bool reloads, void *user);

/* Compares two loaded configs key by key along the key table and calls `fn`
 * for each key that differs; `program` is one CONFIG_RELOADS_* bit. A list of
 * sections (relay.receivers, spare.clusters) counts as one key. Returns the
 * number of keys that differ. */
size_t config_diff(const vf_config *before, const vf_config *after, unsigned program,
                   config_diff_fn fn, void *user);

/* Frees the config and every string and list in it; NULL is a no-op. */
void config_free(vf_config *config);

#endif
