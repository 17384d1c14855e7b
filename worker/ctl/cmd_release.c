/* virtflowctl release: give a task's reservation back (task.release) and
 * wait for the worker's answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ids.h"
#include "task_intake.h"

#define DEFAULT_WAIT_S 30

static void release_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl release [-c CONFIG] TASK_ID [--timeout S] [--json]\n"
            "\n"
            "Publish a task.release request for a completed task whose VM will not be\n"
            "created (the create failed, the client gave up): the worker ends its\n"
            "reservation at once, so its capacity and vmid are free again, records who\n"
            "asked in the task's history and publishes task.released. Only the task's\n"
            "submitter (the same broker user) or a trusted publisher\n"
            "(relay.trusted_publishers) may; releasing twice is harmless.\n"
            "\n"
            "  --timeout S   how long to wait for the worker's answer (default %d s)\n"
            "  --json        print the answer object\n"
            "\n"
            "exit status: 0 released (or nothing was held), 1 refused, 2 usage, 3\n"
            "configuration error, 4 broker unreachable, 5 published but no answer within\n"
            "--timeout (a release for a task not recorded yet is retried: see virtflowctl\n"
            "task ID).\n",
            DEFAULT_WAIT_S);
}

int ctl_release(int argc, char **argv)
{
    long timeout_s = DEFAULT_WAIT_S;
    const ctl_option options[] = {
        {"timeout", 0, CTL_OPTION_POSITIVE, &timeout_s, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("release", argc, argv, options, release_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count != 1) {
        ctl_error("give exactly one task ID (try virtflowctl release --help)");
        return CTL_EXIT_USAGE;
    }
    const char *task_id = args.operands[0];
    vf_config *config = ctl_load_config_writing(args.config_path, "release");
    if (!config)
        return CTL_EXIT_CONFIG;
    char *text = task_intake_release_body(task_id); /* the API's body too */
    char id[IDS_LEN];
    ids_new("rel", id);
    ctl_request request = {.command = "release",
                           .routing_key = BROKER_KEY_TASK_RELEASE,
                           .body = text,
                           .id = id,
                           .wait_s = timeout_s,
                           .announce = NULL};
    json_t *answer = NULL;
    int status = text ? ctl_publish_request(config, &request, &answer) : CTL_EXIT_UNAVAILABLE;
    if (status == CTL_EXIT_OK) {
        const char *state = json_string_value(json_object_get(answer, "status"));
        const char *note = json_string_value(json_object_get(answer, "note"));
        if (args.json)
            ctl_print_json(answer);
        else
            printf("%s: %s%s%s\n", ctl_text(task_id), state ? ctl_text(state) : "unknown",
                   note ? ": " : "", note ? ctl_text(note) : "");
        if (!state || strcmp(state, "released") != 0)
            status = CTL_EXIT_NEGATIVE;
    }
    json_decref(answer);
    free(text);
    config_free(config);
    return status;
}
