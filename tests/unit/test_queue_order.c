/* queue_order: a request's priority against scheduler.priority_classes, and
 * the order a worker decides what it holds in (QueueSort). Pure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "queue_order.h"
#include "testlib.h"

static const char classes[] = "scheduler:\n"
                              "  priority_classes:\n"
                              "    high: {value: 1000, preemption: lower}\n"
                              "    low: {value: -10, preemption: never}\n"
                              "    normal: {value: 5}\n";

/* Parse `text` as a task.schedule body and resolve its priority. */
static int priority_of(const vf_config *c, const char *text, int32_t *out, vf_error *err)
{
    json_t *body = json_loads(text, 0, NULL);
    CHECKF(body != NULL, "not JSON: %s", text);
    sched_request req;
    int rc = body ? sched_request_parse(body, &req, err) : -1;
    json_decref(body);
    return rc < 0 ? -1 : queue_order_priority(&req, c, out, err);
}

static void test_priority(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(classes, strlen(classes), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    int32_t p = -1;
    /* Neither given, no default class: 0. */
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1}", &p, &err) == 0 && p == 0);
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":-7}", &p,
                      &err) == 0 &&
          p == -7);
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"high\"}",
                      &p, &err) == 0 &&
          p == 1000);
    /* Both, agreeing. */
    CHECK(priority_of(c,
                      "{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"low\","
                      "\"priority\":-10}",
                      &p, &err) == 0 &&
          p == -10);
    /* Both, disagreeing: invalid, with the reason. */
    CHECK(priority_of(c,
                      "{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"low\","
                      "\"priority\":10}",
                      &p, &err) < 0);
    CHECK_STR(err.text,
              "priority: 10 disagrees with priority_class \"low\" (-10) (give one, or the class's "
              "value)");
    /* An unknown class: invalid, named. */
    vf_error_init(&err);
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"gold\"}",
                      &p, &err) < 0);
    CHECK_STR(err.text, "priority_class: no class \"gold\" in scheduler.priority_classes");
    config_free(c);

    /* A default class applies to a request that names none, not to one
     * that gives its own priority. */
    char with_default[512];
    snprintf(with_default, sizeof with_default, "%s  default_priority_class: normal\n", classes);
    c = config_load_string(with_default, strlen(with_default), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1}", &p, &err) == 0 && p == 5);
    CHECK(priority_of(c, "{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":3}", &p, &err) ==
              0 &&
          p == 3);
    config_free(c);
}

static void test_sort(void)
{
    /* Higher first; equals keep their delivery order (stable). */
    const int32_t priority[] = {0, 0, 5, 0, 1000, 5, -10, 0};
    const size_t want[] = {4, 2, 5, 0, 1, 3, 7, 6};
    size_t order[8];
    queue_order_sort(priority, 8, order);
    CHECK(memcmp(order, want, sizeof want) == 0);
    /* All equal: delivery order, untouched (FIFO as before). */
    const int32_t equal[] = {3, 3, 3, 3};
    size_t same[4];
    queue_order_sort(equal, 4, same);
    for (size_t i = 0; i < 4; i++)
        CHECK(same[i] == i);
    /* One high message last in a full window of lows: it comes first. */
    enum { WINDOW = 200 };
    int32_t window[WINDOW] = {0};
    window[WINDOW - 1] = 1000;
    size_t order_window[WINDOW];
    queue_order_sort(window, WINDOW, order_window);
    CHECK(order_window[0] == WINDOW - 1);
    for (size_t i = 1; i < WINDOW; i++)
        CHECK(order_window[i] == i - 1);
    queue_order_sort(priority, 0, order); /* nothing to order: no access */
}

/* Which requests virtflow's publishers send to the priority lane: at or
 * above scheduler.priority_lane_min (default 1000), by priority or by class
 * (or the default class); never an unreadable or invalid one. */
static void test_lane(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(classes, strlen(classes), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(c->scheduler.priority_lane_min == 1000);
#define LANE(text)                                                                                 \
    (strcmp(queue_order_text_routing_key(text, strlen(text), c), "task.schedule.priority") == 0)
    CHECK(LANE("{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"high\"}"));
    CHECK(LANE("{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":1000}"));
    CHECK(LANE("{\"priority\":2000000000}"));
    CHECK(!LANE("{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":999}"));
    CHECK(!LANE("{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"low\"}"));
    CHECK(!LANE("{\"requested_cpu\":1,\"requested_memory\":1}"));
    /* Invalid (unknown class, disagreeing priority, out of range) and
     * unreadable bodies go the normal way; the handler names the reason. */
    CHECK(!LANE("{\"priority_class\":\"gold\"}"));
    CHECK(!LANE("{\"priority_class\":\"low\",\"priority\":5000}"));
    CHECK(!LANE("{\"priority\":4294967296}"));
    CHECK(!LANE("not json"));
    CHECK(!LANE("[1000]"));
    CHECK(strcmp(queue_order_text_routing_key(NULL, 0, c), "task.schedule") == 0);
    /* The key by priority, as the preemption's republish and virtflow-api
     * (which holds the body parsed) ask for it. */
    CHECK(strcmp(queue_order_routing_key(1000, c), "task.schedule.priority") == 0);
    CHECK(strcmp(queue_order_routing_key(999, c), "task.schedule") == 0);
    config_free(c);

    /* The threshold is configurable, and a default class can carry a request
     * into the lane. */
    char lowered[512];
    snprintf(lowered, sizeof lowered,
             "%s  default_priority_class: normal\n  priority_lane_min: 5\n", classes);
    c = config_load_string(lowered, strlen(lowered), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(LANE("{\"requested_cpu\":1,\"requested_memory\":1}"));
    CHECK(LANE("{\"priority_class\":\"normal\"}"));
    CHECK(!LANE("{\"priority\":4}"));
    CHECK(queue_order_lane(5, c) && !queue_order_lane(4, c));
    config_free(c);

    /* With a threshold of 0 or less, a request with no priority belongs in
     * the lane, but text that is no request object still goes the normal
     * way. */
    snprintf(lowered, sizeof lowered, "%s  priority_lane_min: 0\n", classes);
    c = config_load_string(lowered, strlen(lowered), "c.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    if (!c)
        return;
    CHECK(LANE("{\"requested_cpu\":1,\"requested_memory\":1}"));
    CHECK(!LANE("[1000]"));
    CHECK(!LANE("not json"));
    CHECK(!LANE("{\"priority\":-1}"));
#undef LANE
    config_free(c);
}

int main(void)
{
    test_priority();
    test_sort();
    test_lane();
    return test_summary();
}
