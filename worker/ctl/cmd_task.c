/* virtflowctl task ID: one task's request, result, reservations and its whole
 * history (every attempt, with the per-host reasons of each rejection). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_task_actions.h"
#include "cmd_watch.h"
#include "ctl.h"
#include "store_tasks.h"
#include "task_view.h"

static void task_usage(FILE *out)
{
    fprintf(
        out,
        "usage: virtflowctl task [-c CONFIG] ID [--watch] [--json]\n"
        "       virtflowctl task cancel ID [--reason TEXT] [--by NAME] [--json]\n"
        "       virtflowctl task retry-now ID [--by NAME] [--json]\n"
        "       virtflowctl task resubmit ID [--by NAME] [--json]\n"
        "\n"
        "Show one task from the store (opened read-only): its state, request, result,\n"
        "reservations and full history, one block per history row (each attempt, with\n"
        "why every rejected host was rejected).\n"
        "\n"
        "A retrying task says which attempt failed, out of retry.max_attempts, and when\n"
        "the next one comes: retry  attempt 1 of 3 failed; attempt 2 at ... (in 25 s).\n"
        "\n"
        "  --json   one object {\"task\": {...}, \"history\": [{\"at\", \"status\", \"detail\"}],\n"
        "           \"reservations\": [{node, cpu, memory, disk, vmid, created_at,\n"
        "           expires_at, released_at}], \"retry\"?: {attempt, max_attempts,\n"
        "           next_attempt, next_attempt_at} (a retrying task)}\n"
        "  --watch  follow it instead: its history rows so far, then each as it is\n"
        "           recorded, one line each (--json: one object each, {task_id, seq, at,\n"
        "           status, detail}), until it ends (completed, failed, released,\n"
        "           cancelled) or a spare task is ready; exit 1 when it failed or was\n"
        "           cancelled\n"
        "\n"
        "cancel     end a queued or retrying task at once: it is `cancelled` in the store\n"
        "           (nothing reserved; task.cancelled goes out through the outbox), and\n"
        "           the copy still in the broker is dropped when a worker takes it.\n"
        "           Idempotent; refused for a task in any other state.\n"
        "retry-now  decide a retrying task at once: its request is published again\n"
        "           (confirmed by the broker) and the delayed copy is dropped when it\n"
        "           comes back; the attempt count goes on.\n"
        "resubmit   submit a failed or cancelled task's request again, as a new task\n"
        "           (new id, printed; recorded queued and published as submit does);\n"
        "           the old task's history says which (resubmitted, {\"as\": ID}).\n"
        "  --reason TEXT  a note for the history and task.cancelled\n"
        "  --by NAME      who asks, for the history (default: virtflowctl (user <you>))\n"
        "\n"
        "\n"
        "examples:\n"
        "  virtflowctl task tsk_019ab4c2d3e4f5a6b7c8d9e0f1a2b3c4\n"
        "  virtflowctl task cancel tsk_019ab4c2d3e4f5a6b7c8d9e0f1a2b3c4 --reason 'VM not needed'\n"
        "\n"
        "exit status: 0 found (cancel: cancelled, or already; retry-now: requested), 1 no\n"
        "such task or refused (another state), 2 usage, 3 configuration error, 4 store\n"
        "or broker unreachable.\n");
}

static char *compact(const json_t *value)
{
    return json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                 JSON_REAL_PRECISION(15));
}

/* One history row as a readable block: the time and status, then the
 * detail's keys, the rejections one host per line. */
static void print_history_row(const json_t *row)
{
    const json_t *detail = json_object_get(row, "detail");
    printf("  %s  %s\n", ctl_text(json_string_value(json_object_get(row, "at"))),
           ctl_text(json_string_value(json_object_get(row, "status"))));
    if (!json_is_object(detail)) {
        if (!json_is_null(detail)) {
            char *text = compact(detail);
            printf("      %s\n", ctl_text(text));
            free(text);
        }
        return;
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)detail, key, value)
    {
        if (strcmp(key, "rejections") == 0 && json_is_object(value)) {
            /* A sample when the inventory is large (rejections_omitted). */
            json_int_t omitted = json_integer_value(json_object_get(detail, "rejections_omitted"));
            if (omitted > 0)
                printf("      rejections (%zu of %lld hosts; %lld more not recorded, all "
                       "counted below):\n",
                       json_object_size(value), (long long)(json_object_size(value) + omitted),
                       (long long)omitted);
            else
                printf("      rejections:\n");
            const char *host;
            const json_t *why;
            json_object_foreach((json_t *)value, host, why)
            {
                char *text = json_is_string(why) ? NULL : compact(why);
                printf("        %-24s %s\n", ctl_text(host),
                       ctl_text(text ? text : json_string_value(why)));
                free(text);
            }
            continue;
        }
        if (strcmp(key, "rejections_omitted") == 0)
            continue; /* said in the rejections heading */
        if (strcmp(key, "rejection_counts") == 0 && json_is_object(value)) {
            printf("      hosts by reason:\n");
            const char *reason;
            const json_t *count;
            json_object_foreach((json_t *)value, reason, count)
            {
                printf("        %-24s %lld\n", reason, (long long)json_integer_value(count));
            }
            continue;
        }
        if (json_is_string(value)) {
            printf("      %-18s %s\n", ctl_text(key), ctl_text(json_string_value(value)));
        } else {
            char *text = compact(value);
            printf("      %-18s %s\n", ctl_text(key), ctl_text(text));
            free(text);
        }
    }
}

static void print_retry(const json_t *retry)
{
    char text[CTL_RETRY_TEXT];
    ctl_retry_text(retry, text, sizeof text);
    printf("  %-11s %s\n", "retry", text);
}

static void print_human(const json_t *all)
{
    const json_t *task = json_object_get(all, "task");
    const char *fields[] = {"status", "reason", "attempts",   "node",
                            "vmid",   "error",  "created_at", "updated_at"};
    printf("task %s (%s)\n", ctl_text(json_string_value(json_object_get(task, "id"))),
           ctl_text(json_string_value(json_object_get(task, "kind"))));
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const json_t *v = json_object_get(task, fields[i]);
        if (!v || json_is_null(v))
            continue;
        char *text = json_is_string(v) ? NULL : compact(v);
        printf("  %-11s %s\n", fields[i], ctl_text(text ? text : json_string_value(v)));
        free(text);
        if (i == 0 && json_object_get(all, "retry"))
            print_retry(json_object_get(all, "retry"));
    }
    const char *blocks[] = {"request", "result"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(task, blocks[i]);
        if (!v || json_is_null(v))
            continue;
        char *text = compact(v);
        printf("%s:\n  %s\n", blocks[i], ctl_text(text));
        free(text);
    }
    const json_t *reservations = json_object_get(all, "reservations");
    printf("reservations:%s\n", json_array_size(reservations) ? "" : " none");
    size_t i;
    const json_t *r;
    json_array_foreach(reservations, i, r)
    {
        const json_t *released = json_object_get(r, "released_at");
        const json_t *vmid = json_object_get(r, "vmid");
        char vmid_text[24] = "none";
        if (json_is_integer(vmid))
            snprintf(vmid_text, sizeof vmid_text, "%lld", (long long)json_integer_value(vmid));
        printf("  %s: %g vCPU, %lld MiB, %lld GiB, vmid %s, from %s, %s %s\n",
               ctl_text(json_string_value(json_object_get(r, "node"))),
               json_number_value(json_object_get(r, "cpu")),
               (long long)json_integer_value(json_object_get(r, "memory")),
               (long long)json_integer_value(json_object_get(r, "disk")), vmid_text,
               ctl_text(json_string_value(json_object_get(r, "created_at"))),
               json_is_string(released) ? "released" : "held until",
               ctl_text(json_is_string(released)
                            ? json_string_value(released)
                            : json_string_value(json_object_get(r, "expires_at"))));
    }
    const json_t *history = json_object_get(all, "history");
    printf("history (%zu):\n", json_array_size(history));
    const json_t *row;
    json_array_foreach(history, i, row) print_history_row(row);
}

int ctl_task(int argc, char **argv)
{
    const char *reason = NULL, *by = NULL;
    bool watch = false;
    const ctl_option options[] = {
        {"reason", 0, CTL_OPTION_STRING, &reason, NULL, NULL, NULL, NULL},
        {"by", 0, CTL_OPTION_STRING, &by, NULL, NULL, NULL, NULL},
        {"watch", 'w', CTL_OPTION_SET, &watch, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("task", argc, argv, options, task_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count == 2 && strcmp(args.operands[0], "resubmit") == 0) {
        if (reason) {
            ctl_error("task resubmit: --reason is for cancel");
            return CTL_EXIT_USAGE;
        }
        return ctl_task_resubmit(args.operands[1], by, args.config_path, args.json);
    }
    if (args.operand_count == 2 &&
        (strcmp(args.operands[0], "cancel") == 0 || strcmp(args.operands[0], "retry-now") == 0)) {
        if (reason && strcmp(args.operands[0], "cancel") != 0) {
            ctl_error("task retry-now: --reason is for cancel");
            return CTL_EXIT_USAGE;
        }
        return ctl_task_action(args.operands[0], args.operands[1], by, reason, args.config_path,
                               args.json);
    }
    if (reason || by) {
        ctl_error("task: --reason and --by go with cancel or retry-now");
        return CTL_EXIT_USAGE;
    }
    if (args.operand_count != 1) {
        ctl_error("give exactly one task ID (try virtflowctl task --help; to list: "
                  "virtflowctl tasks)");
        return CTL_EXIT_USAGE;
    }
    if (watch)
        return ctl_task_watch(args.config_path, args.operands[0], args.json);
    const char *config_path = args.config_path;
    bool as_json = args.json;
    const char *id = args.operands[0];
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_UNAVAILABLE;
    json_t *all = NULL;
    store_task task = {0};
    vf_error err;
    vf_error_init(&err);
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        goto out;
    int found = store_task_get(s, id, &task, &err);
    if (found < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (found == 1) {
        ctl_error("no task %s in %s (virtflowctl tasks lists the newest)", id,
                  ctl_store_name(config));
        rc = CTL_EXIT_NEGATIVE;
        goto out;
    }
    if (!(all = task_view_detail_json(s, &task, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    json_t *retry = task_view_retry(all, config->retry.max_attempts);
    if (retry)
        json_object_set_new(all, "retry", retry);
    if (as_json)
        ctl_print_json(all);
    else
        print_human(all);
    rc = CTL_EXIT_OK;
out:
    json_decref(all);
    store_task_clear(&task);
    store_close(s);
    config_free(config);
    return rc;
}
