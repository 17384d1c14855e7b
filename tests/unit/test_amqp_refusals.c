/* amqp_refusals: the paths a broker's 403 names (RabbitMQ's close texts,
 * topic and resource permissions, the default exchange), noted once, and
 * what they block: the key itself, or the whole exchange. */
#include "amqp_refusals.h"
#include "testlib.h"

#include <string.h>

int main(void)
{
    char exchange[AMQP_REFUSALS_NAME], key[AMQP_REFUSALS_NAME];
    CHECK(amqp_refusals_parse("ACCESS_REFUSED - access to topic 'task.schedule' in exchange "
                              "'virtflow' in vhost 'v' refused for user 'guest'",
                              exchange, key));
    CHECK_STR(exchange, "virtflow");
    CHECK_STR(key, "task.schedule");
    CHECK(amqp_refusals_parse("ACCESS_REFUSED - write access to topic 'task.release' in exchange "
                              "'virtflow' in vhost '/' refused for user 'virtflow-client'",
                              exchange, key));
    CHECK_STR(key, "task.release");
    CHECK(amqp_refusals_parse("ACCESS_REFUSED - access to exchange 'virtflow.retry.5s' in vhost "
                              "'/' refused for user 'u'",
                              exchange, key));
    CHECK_STR(exchange, "virtflow.retry.5s");
    CHECK_STR(key, "");
    CHECK(amqp_refusals_parse("ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' "
                              "refused for user 'u'",
                              exchange, key));
    CHECK_STR(exchange, "");
    CHECK(!amqp_refusals_parse("NOT_FOUND - no exchange 'x' in vhost '/'", exchange, key));
    CHECK(!amqp_refusals_parse("ACCESS_REFUSED - login refused", exchange, key));
    CHECK(!amqp_refusals_parse(NULL, exchange, key));

    amqp_refusals *r = amqp_refusals_new();
    CHECK(!amqp_refusals_blocks(r, "virtflow", "task.schedule"));
    CHECK(amqp_refusals_add(r, "virtflow", "task.schedule"));
    CHECK(!amqp_refusals_add(r, "virtflow", "task.schedule")); /* known: said once */
    CHECK(amqp_refusals_blocks(r, "virtflow", "task.schedule"));
    CHECK(!amqp_refusals_blocks(r, "virtflow", "task.schedule.priority"));
    CHECK(!amqp_refusals_blocks(r, "virtflow", "event.task.completed"));
    CHECK(amqp_refusals_add(r, "virtflow.retry.5s", ""));
    CHECK(amqp_refusals_blocks(r, "virtflow.retry.5s", "task.schedule"));
    CHECK(!amqp_refusals_blocks(r, "virtflow.retry.30s", "task.schedule"));
    CHECK(!amqp_refusals_blocks(NULL, "virtflow", "task.schedule"));
    amqp_refusals_free(r);
    amqp_refusals_free(NULL);
    return test_summary();
}
