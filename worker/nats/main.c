/* virtflow-nats: every event also on a NATS JetStream stream (nats_sink.h). */
#include "config.h"
#include "log.h"
#include "nats_sink.h"
#include "program.h"

static const char usage[] =
    "usage: virtflow-nats [-c FILE | --defaults]\n"
    "       virtflow-nats --version\n\n"
    "Consumes events from virtflow.nats (declared while nats.url is set) and\n"
    "publishes each to the JetStream stream nats.stream, subject\n"
    "nats.subject_prefix.<type>, with the event id as Nats-Msg-Id; acks them on\n"
    "the broker only once JetStream has stored them. -c FILE, else\n"
    "$VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml when it exists.\n"
    "SIGTERM/SIGINT: finish the window in hand, then exit 0.\n"
    "exit status: 0 stopped, 1 runtime failure, 2 usage, 3 configuration error.\n";

int main(int argc, char **argv)
{
    int status;
    vf_config *config =
        program_start("virtflow-nats", usage, PROGRAM_NOTES_HANGUP, argc, argv, &status);
    if (!config)
        return status;
    vf_error err;
    vf_error_init(&err);
    nats_sink *sink = nats_sink_new(config, &err);
    if (!sink) {
        log_error("%s", err.text);
        status = err.code == VF_ECONFIG ? PROGRAM_EXIT_CONFIG : PROGRAM_EXIT_FAILED;
        config_free(config);
        return status;
    }
    int rc = nats_sink_run(sink, &program_stop_requested, &err);
    nats_sink_free(sink);
    config_free(config);
    return rc == 0 ? PROGRAM_EXIT_OK : PROGRAM_EXIT_FAILED;
}
