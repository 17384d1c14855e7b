/* virtflow-worker: consumes task.schedule, schedules, records, publishes
 * completion events (docs/contracts.md "Programs"). */
#include "config.h"
#include "log.h"
#include "program.h"
#include "service.h"
#include "version.h"

static const char usage[] =
    "usage: virtflow-worker [-c CONFIG | --defaults]\n"
    "       virtflow-worker --version\n"
    "\n"
    "Consumes task.schedule requests from RabbitMQ, places each VM, records the\n"
    "task and its history in SQLite and publishes a completion event.\n"
    "CONFIG defaults to $VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml when it\n"
    "exists. Without any of them it refuses to start unless --defaults asks for\n"
    "the built-in defaults (a broker on 127.0.0.1:5672 as guest, store\n"
    "virtflow.db in the current directory).\n"
    "SIGTERM or SIGINT: stop consuming, finish the messages in hand, exit 0.\n"
    "SIGHUP: read the file again; apply the scheduler and inventory sections and\n"
    "log.level, log any other changed key as needing a restart\n"
    "(docs/operations.md).\n";

int main(int argc, char **argv)
{
    int status;
    /* SIGHUP asks for a reload (service.c). */
    vf_config *config =
        program_start("virtflow-worker", usage, PROGRAM_RELOADS, argc, argv, &status);
    if (!config)
        return status;
    log_info("virtflow-worker %s%s%s starting with %s", vf_version(),
             vf_version_commit()[0] ? " commit " : "", vf_version_commit(),
             config->path ? config->path : "built-in defaults");
    int rc = service_run(config, &program_stop_requested);
    config_free(config);
    return rc == 0 ? PROGRAM_EXIT_OK : PROGRAM_EXIT_FAILED;
}
