/* virtflowctl: pieces every command shares (opening the store, reaching the
 * broker, JSON output, option parsing), with errors that say what to do. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "human.h"
#include "ids.h"
#include "inventory.h"
#include "spare_place.h"
#include "store_tasks.h"
#include "task_view.h"
#include "text_escape.h"
#include "store_config.h"

store *ctl_open_store_at(const char *path, store_mode mode)
{
    struct stat st;
    if (mode == STORE_READ_ONLY && !store_is_url(path) && stat(path, &st) != 0) {
        int saved = errno;
        if (saved == ENOENT)
            ctl_error("no store at %s: start virtflow-worker once or check store.path", path);
        else
            ctl_error("cannot reach the store at %s: %s%s", path, strerror(saved),
                      saved == EACCES ? " (run as the worker's user, or check the directory's "
                                        "permissions)"
                                      : "");
        return NULL;
    }
    if (mode == STORE_READ_ONLY && !store_is_url(path) && access(path, R_OK) != 0) {
        int saved = errno;
        ctl_error("cannot read the store at %s: %s%s", path, strerror(saved),
                  saved == EACCES ? " (run as the worker's user, e.g. sudo -u virtflow)" : "");
        return NULL;
    }
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, mode, &err);
    if (!s)
        ctl_error("%s", err.text);
    return s;
}

store *ctl_open_store(const vf_config *config, store_mode mode)
{
    /* Password file and TLS keys go with a URL; a path has none. */
    if (!config->store.url)
        return ctl_open_store_at(config->store.path, mode);
    vf_error err;
    vf_error_init(&err);
    store *s = store_config_open(config, mode, &err);
    if (!s)
        ctl_error("%s%s", err.text,
                  err.code == VF_EUNAVAILABLE
                      ? " (is PostgreSQL running? check store.url and store.password_file)"
                      : "");
    return s;
}

const char *ctl_store_name(const vf_config *config)
{
    static char name[512];
    return store_config_name(config, name, sizeof name);
}

amqp_link *ctl_connect(const vf_config *config, const char *command, int access, int *status)
{
    char name[64];
    snprintf(name, sizeof name, "virtflowctl %s", command);
    vf_error err;
    vf_error_init(&err);
    *status = CTL_EXIT_CONFIG;
    amqp_link *link = amqp_link_new(config, name, &err);
    if (!link) {
        ctl_error("%s", err.text);
        return NULL;
    }
    if (access == CTL_BROKER_READ)
        amqp_link_set_read_only(link);
    if (amqp_link_connect(link, &err) < 0) {
        if (err.code == VF_ECONFIG) {
            /* Reached, but not usable as configured: no "is it running?". */
            ctl_error("broker %s", err.text);
        } else {
            char url[256] = "(no amqp.urls)";
            if (config->amqp.n_urls > 0)
                (void)amqp_link_redact_url(config->amqp.urls[0], url, sizeof url);
            ctl_error("broker unreachable at %s%s: %s (is RabbitMQ running? check amqp.urls)", url,
                      config->amqp.n_urls > 1 ? " and the other amqp.urls" : "", err.text);
            *status = CTL_EXIT_UNAVAILABLE;
        }
        amqp_link_free(link);
        return NULL;
    }
    *status = CTL_EXIT_OK;
    return link;
}

void ctl_print_json(const json_t *value)
{
    char *text = json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    if (text)
        puts(text);
    free(text);
}

/* The shapes and the syntax are task_view's, shared with virtflow-api. */
json_t *ctl_parse_stored_json(const char *text)
{
    return task_view_stored_json(text);
}

json_t *ctl_task_json(const store_task *t)
{
    return task_view_json(t);
}

int ctl_parse_since(const char *text, char out[STORE_TIME_SIZE])
{
    return task_view_parse_since(text, out);
}

static int request_integer(json_t *request, const char *key, const char *option, const char *text)
{
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        ctl_error("%s: expected an integer, got '%s'", option, text);
        return -1;
    }
    json_object_set_new(request, key, json_integer(value));
    return 0;
}

int ctl_request_flag(const ctl_option *option, const char *value)
{
    json_t *request = option->target;
    const char *key = option->detail;
    if (strcmp(option->name, "cpu") == 0 || strcmp(option->name, "memory") == 0 ||
        strcmp(option->name, "disk") == 0) {
        char name[32];
        snprintf(name, sizeof name, "--%s", option->name);
        return request_integer(request, key, name, value);
    }
    if (strcmp(option->name, "dedicated") == 0) {
        json_object_set_new(request, key, json_true());
        return 0;
    }
    if (strcmp(option->name, "annotation") == 0) {
        const char *eq = strchr(value, '=');
        if (!eq || eq == value) {
            ctl_error("--annotation: expected KEY=VALUE, got '%s'", value);
            return -1;
        }
        json_t *annotations = json_object_get(request, key);
        if (!json_is_object(annotations)) {
            annotations = json_object();
            json_object_set_new(request, key, annotations);
        }
        if (json_object_setn_new(annotations, value, (size_t)(eq - value), json_string(eq + 1)) <
            0) {
            ctl_error("--annotation: '%s' is not valid UTF-8", value);
            return -1;
        }
        return 0;
    }
    /* --pool, --vm-name, --node-name, --scheduler: text as given */
    json_object_set_new(request, key, json_string(value));
    return 0;
}

int ctl_only_common_options(int argc, char **argv, const char *command, void (*print_usage)(FILE *),
                            const char **config_path, bool *as_json)
{
    ctl_args args;
    int rc = ctl_options_parse(command, argc, argv, NULL, print_usage, false, &args);
    if (rc >= 0)
        return rc;
    if (args.operand_count > 0) {
        ctl_error("%s: unexpected argument '%s'", command, args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    *config_path = args.config_path;
    *as_json = args.json;
    return -1;
}

/* ---- request bodies and publish confirms (submit, spare) ---- */

char *ctl_request_body(const char *path, json_t *flags, const char *task_id_flag, bool id_in_body,
                       char task_id[CTL_TASK_ID_SIZE])
{
    json_t *body = NULL;
    if (path) {
        json_error_t jerr;
        body = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_DECODE_ANY, &jerr)
                                      : json_load_file(path, JSON_DECODE_ANY, &jerr);
        if (!body) {
            ctl_error("invalid request: %s:%d: not valid JSON: %s", path, jerr.line, jerr.text);
            return NULL;
        }
        if (!json_is_object(body)) {
            ctl_error("invalid request: %s: the body must be a JSON object", path);
            json_decref(body);
            return NULL;
        }
    } else {
        body = json_incref(flags);
    }
    const char *in_body = json_string_value(json_object_get(body, "task_id"));
    if (in_body && task_id_flag && strcmp(in_body, task_id_flag) != 0) {
        ctl_error("invalid request: the body's task_id %s differs from --task-id %s", in_body,
                  task_id_flag);
        json_decref(body);
        return NULL;
    }
    if (in_body || task_id_flag) {
        snprintf(task_id, CTL_TASK_ID_SIZE, "%s", in_body ? in_body : task_id_flag);
    } else {
        char fresh[IDS_LEN];
        ids_new("tsk", fresh);
        snprintf(task_id, CTL_TASK_ID_SIZE, "%s", fresh);
    }
    if (id_in_body)
        json_object_set_new(body, "task_id", json_string(task_id));
    char *text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(body);
    return text;
}

void ctl_amounts(const json_t *figures, char *out, size_t size)
{
    static const struct {
        const char *key, *unit;
    } units[] = {
        {"cpu", "vCPUs"}, {"memory_mib", "MiB"}, {"disk_gib", "GiB"}, {"vm_slots", "slots"}};
    size_t used = 0;
    if (size)
        out[0] = '\0';
    for (size_t u = 0; u < sizeof units / sizeof units[0] && used < size; u++) {
        const json_t *v = json_object_get(figures, units[u].key);
        if (!json_is_integer(v) ||
            (strcmp(units[u].key, "disk_gib") == 0 && !json_integer_value(v)))
            continue;
        int n = snprintf(out + used, size - used, "%s%lld %s", used ? ", " : "",
                         (long long)json_integer_value(v), units[u].unit);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int ctl_parse_spare_prepare(const json_t *body, sched_request *req, int *count,
                            int *ready_timeout_s, vf_error *err)
{
    sched_request_init(req);
    const json_t *n = json_object_get(body, "count");
    const json_t *timeout = json_object_get(body, "ready_timeout_s");
    if (!json_is_integer(n) || json_integer_value(n) < 1 ||
        json_integer_value(n) > SCHED_SPARE_MAX_COUNT ||
        (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1 ||
                     json_integer_value(timeout) > 86400))) {
        vf_error_set(err, VF_EINVAL, "not a spare.prepare request: count or ready_timeout_s");
        return -1;
    }
    if (sched_request_parse_placement(body, req, err) < 0)
        return -1;
    *count = (int)json_integer_value(n);
    if (ready_timeout_s)
        *ready_timeout_s = timeout ? (int)json_integer_value(timeout) : SCHED_SPARE_READY_TIMEOUT_S;
    return 0;
}

hostset *ctl_fetch_hosts(const vf_config *config, inventory **inv, int *rc)
{
    vf_error err;
    vf_error_init(&err);
    *rc = CTL_EXIT_CONFIG;
    if (!(*inv = inventory_new(config, &err))) {
        ctl_error("%s", err.text);
        return NULL;
    }
    *rc = CTL_EXIT_UNAVAILABLE;
    hostset *hosts = inventory_fetch(*inv, &err);
    if (!hosts)
        ctl_error("inventory unavailable: %s", err.text);
    return hosts;
}

void ctl_retry_text(const json_t *retry, char *out, size_t size)
{
    const char *at = json_string_value(json_object_get(retry, "next_attempt_at"));
    int64_t at_s = 0;
    char when[HUMAN_SIZE + 40] = "";
    if (at && ids_parse_time(at, &at_s) == 0) {
        int64_t in_s = at_s - clock_wall_ms() / 1000;
        char amount[HUMAN_SIZE];
        human_duration(in_s < 0 ? -in_s : in_s, amount);
        snprintf(when, sizeof when, in_s >= 0 ? " (in %s)" : " (due %s ago: waiting for a worker)",
                 amount);
    }
    snprintf(out, size, "attempt %lld of %lld failed; attempt %lld at %s%s",
             (long long)json_integer_value(json_object_get(retry, "attempt")),
             (long long)json_integer_value(json_object_get(retry, "max_attempts")),
             (long long)json_integer_value(json_object_get(retry, "next_attempt")),
             ctl_text(at ? at : "?"), when);
}
