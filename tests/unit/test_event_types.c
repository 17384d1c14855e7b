/* event_types: the table the emitting code names events by, against the
 * contract users validate them with (schema/event.json): the same types in
 * both directions, a data schema for each, and the final ones as the
 * schema's description names them. */
#include "event_types.h"
#include "testlib.h"

#include <jansson.h>
#include <string.h>

static json_t *load_schema(void)
{
    json_error_t jerr;
    json_t *schema = json_load_file("../schema/event.json", 0, &jerr);
    CHECKF(schema != NULL, "../schema/event.json: line %d: %s", jerr.line, jerr.text);
    return schema;
}

static json_t *schema_enum(json_t *schema)
{
    json_t *types =
        json_object_get(json_object_get(json_object_get(schema, "properties"), "type"), "enum");
    CHECKF(json_is_array(types), "schema/event.json: properties.type.enum is not an array");
    return types;
}

/* Every type the schema allows is in the table. */
static void test_schema_in_table(json_t *types)
{
    size_t i;
    json_t *value;
    json_array_foreach(types, i, value)
    {
        const char *name = json_string_value(value);
        CHECKF(event_types_find(name) >= 0,
               "schema/event.json allows \"%s\", which common/base/event_types.c does not have",
               name ? name : "(not a string)");
    }
}

/* Every type in the table is in the schema's enum and has its data schema. */
static void test_table_in_schema(json_t *schema, json_t *types)
{
    json_t *defs = json_object_get(schema, "$defs");
    for (int t = 0; t < EVENT_TYPE_COUNT; t++) {
        const char *name = event_types_name((event_type)t);
        CHECKF(name != NULL, "event type %d has no name", t);
        if (!name)
            continue;
        bool listed = false;
        size_t i;
        json_t *value;
        json_array_foreach(types, i, value) listed =
            listed || (json_is_string(value) && strcmp(json_string_value(value), name) == 0);
        CHECKF(listed,
               "common/base/event_types.c emits \"%s\", which schema/event.json's enum lacks",
               name);
        CHECKF(json_is_object(json_object_get(defs, name)),
               "schema/event.json has no $defs entry describing the data of \"%s\"", name);
        CHECK(event_types_find(name) == t);
    }
    CHECK(json_array_size(types) == EVENT_TYPE_COUNT);
}

/* The schema's description lists the final events first: "Final events: a,
 * b, c. Progress events ...". The table must call the same ones final. */
static void test_final(json_t *schema)
{
    const char *text = json_string_value(json_object_get(
        json_object_get(json_object_get(schema, "properties"), "type"), "description"));
    const char *start = text ? strstr(text, "Final events: ") : NULL;
    const char *end = start ? strstr(start, ". ") : NULL;
    CHECKF(start && end, "schema/event.json: type.description should read \"Final events: ...\"");
    if (!start || !end)
        return;
    start += strlen("Final events: ");
    for (int t = 0; t < EVENT_TYPE_COUNT; t++) {
        const char *name = event_types_name((event_type)t);
        bool named = false;
        for (const char *at = start; (at = strstr(at, name)) && at < end; at += strlen(name)) {
            char after = at[strlen(name)];
            named = named || after == ',' || after == '.';
        }
        CHECKF(named == event_types_is_final((event_type)t),
               "\"%s\" is %s in common/base/event_types.c but %s among schema/event.json's final "
               "events",
               name, event_types_is_final((event_type)t) ? "final" : "progress",
               named ? "listed" : "not listed");
    }
}

/* "Operational events: a, b, c." in the same description: the table's
 * operational ones. */
static void test_operational(json_t *schema)
{
    const char *text = json_string_value(json_object_get(
        json_object_get(json_object_get(schema, "properties"), "type"), "description"));
    const char *start = text ? strstr(text, "Operational events") : NULL;
    const char *colon = start ? strstr(start, ": ") : NULL;
    /* Names hold dots: the list ends at ". " or at the end of the text. */
    const char *end = colon ? strstr(colon, ". ") : NULL;
    if (colon && !end)
        end = colon + strlen(colon);
    CHECKF(start && colon && end,
           "schema/event.json: type.description should read \"Operational events (...): ...\"");
    if (!start || !colon || !end)
        return;
    for (int t = 0; t < EVENT_TYPE_COUNT; t++) {
        const char *name = event_types_name((event_type)t);
        bool named = false;
        for (const char *at = colon; (at = strstr(at, name)) && at < end; at += strlen(name)) {
            char after = at[strlen(name)];
            named = named || after == ',' || after == '.' || after == '\0';
        }
        CHECKF(named == event_types_is_operational((event_type)t),
               "\"%s\" is %s in common/base/event_types.c but %s among schema/event.json's "
               "operational events",
               name, event_types_is_operational((event_type)t) ? "operational" : "not operational",
               named ? "listed" : "not listed");
    }
}

static void test_bounds(void)
{
    CHECK(event_types_name(EVENT_TYPE_COUNT) == NULL);
    CHECK(event_types_name((event_type)-1) == NULL);
    CHECK(!event_types_is_final(EVENT_TYPE_COUNT));
    CHECK(event_types_find(NULL) == -1);
    CHECK(event_types_find("task") == -1);
    CHECK(event_types_find("task.completed.x") == -1);
    CHECK_STR(event_types_name(EVENT_TASK_COMPLETED), "task.completed");
    CHECK(event_types_is_final(EVENT_SPARE_READY));
    CHECK(!event_types_is_final(EVENT_TASK_RETRYING));
    CHECK(event_types_is_operational(EVENT_RECEIVER_DISABLED));
    CHECK(!event_types_is_operational(EVENT_TASK_FAILED));
    CHECK(!event_types_is_final(EVENT_DELIVERY_EXHAUSTED));
}

int main(void)
{
    json_t *schema = load_schema();
    json_t *types = schema ? schema_enum(schema) : NULL;
    if (types) {
        test_schema_in_table(types);
        test_table_in_schema(schema, types);
        test_final(schema);
        test_operational(schema);
    }
    test_bounds();
    json_decref(schema);
    return test_summary();
}
