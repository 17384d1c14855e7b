/* virtflow-relay: delivers events as signed webhooks (docs/contracts.md "Programs"). */
#include "config.h"
#include "log.h"
#include "program.h"
#include "relay.h"

static const char usage[] =
    "usage: virtflow-relay [-c FILE | --defaults]\n"
    "       virtflow-relay --version\n\n"
    "Consumes events from virtflow.relay and delivers them as signed webhooks\n"
    "to the receivers in relay.receivers. -c FILE, else $VIRTFLOW_CONFIG, else\n"
    "/etc/virtflow/config.yaml when it exists; without any of them it refuses to\n"
    "start unless --defaults asks for the built-in defaults.\n"
    "SIGTERM/SIGINT: finish requests in flight, then exit 0.\n"
    "SIGHUP: read the file again; apply relay.receivers (secrets read again),\n"
    "relay.schedule_s and log.level; log other changed keys as needing a restart.\n"
    "exit status: 0 stopped, 1 runtime failure, 2 usage, 3 configuration error.\n";

int main(int argc, char **argv)
{
    int status;
    /* SIGHUP asks for a reload (relay.c). */
    vf_config *config =
        program_start("virtflow-relay", usage, PROGRAM_RELOADS, argc, argv, &status);
    if (!config)
        return status;
    vf_error err;
    vf_error_init(&err);
    relay *r = relay_new(config, &err);
    if (!r) {
        if (err.code == VF_ECONFIG && config->path)
            log_error("%s: %s", config->path, err.text);
        else
            log_error("%s", err.text);
        status = err.code == VF_ECONFIG ? PROGRAM_EXIT_CONFIG : PROGRAM_EXIT_FAILED;
        config_free(config);
        return status;
    }
    int rc = relay_run(r, &program_stop_requested, &err);
    relay_free(r);
    config_free(config);
    return rc == 0 ? PROGRAM_EXIT_OK : PROGRAM_EXIT_FAILED;
}
