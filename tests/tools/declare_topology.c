/* declare_topology: connect to the broker the way every virtflow program does
 * (amqp_link_connect, which declares the whole topology of amqp_topology.h)
 * and report whether the broker accepted it.
 *
 *   declare_topology -c CONFIG
 *
 * Exit 0 when the topology was declared, 1 when the broker refused it (the
 * reason, e.g. "406 PRECONDITION_FAILED - inequivalent arg ...", on stderr), 3
 * when the configuration cannot be loaded. tests/integration/test_definitions
 * runs it against a vhost loaded from deploy/rabbitmq/definitions.json. */
#include <stdio.h>
#include <string.h>

#include "amqp_link.h"
#include "config.h"
#include "log.h"

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "-c") != 0) {
        fprintf(stderr, "usage: declare_topology -c CONFIG\n");
        return 2;
    }
    vf_log_set_program("declare_topology");
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_load(argv[2], &err);
    if (!config) {
        fprintf(stderr, "declare_topology: %s\n", err.text);
        return 3;
    }
    int status = 1;
    amqp_link *link = amqp_link_new(config, "declare_topology", &err);
    if (!link)
        goto out;
    if (amqp_link_connect(link, &err) < 0)
        goto out;
    status = 0;
out:
    if (status != 0)
        fprintf(stderr, "declare_topology: %s\n", err.text);
    else
        printf("declared\n");
    amqp_link_free(link);
    config_free(config);
    return status;
}
