/* store_admission (schema/017): a CAPPX machine's task, on SQLite and on
 * PostgreSQL. A new machine is recorded once (a second review of it finds
 * the first's task), replaced only while it still has the task the caller
 * read, forgotten only with that task; the owner travels with it. */
#include <string.h>

#include "store.h"
#include "store_admission.h"
#include "store_fixture.h"
#include "testlib.h"

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    static const char machine[] = "clusters/prod-control-plane-x7k2p";
    static const char at[] = "2026-11-28T08:00:00.000Z";
    store_admission_machine m;
    CHECK(store_admission_get(s, machine, &m, &err) == 1);

    /* New: recorded; a second review with another task finds the first's. */
    CHECK(store_admission_set(s, machine, "cappx-1", "owner-a", NULL, at, &err) == 1);
    CHECK(store_admission_set(s, machine, "cappx-2", "owner-a", NULL, at, &err) == 0);
    CHECK(store_admission_get(s, machine, &m, &err) == 0);
    CHECK_STR(m.task_id, "cappx-1");
    CHECK_STR(m.owner, "owner-a");

    /* Replaced only from the task read: a stale replacement changes nothing. */
    CHECK(store_admission_set(s, machine, "cappx-3", "owner-b", "cappx-2", at, &err) == 0);
    CHECK(store_admission_set(s, machine, "cappx-3", "owner-b", "cappx-1", at, &err) == 1);
    CHECK(store_admission_get(s, machine, &m, &err) == 0);
    CHECK_STR(m.task_id, "cappx-3");
    CHECK_STR(m.owner, "owner-b");

    /* Forgotten only with its task; then new again. Other machines apart. */
    CHECK(store_admission_set(s, "clusters/other", "cappx-9", "", NULL, at, &err) == 1);
    CHECK(store_admission_forget(s, machine, "cappx-1", &err) == 0);
    CHECK(store_admission_forget(s, machine, "cappx-3", &err) == 1);
    CHECK(store_admission_forget(s, machine, "cappx-3", &err) == 0);
    CHECK(store_admission_get(s, machine, &m, &err) == 1);
    CHECK(store_admission_get(s, "clusters/other", &m, &err) == 0);
    CHECK_STR(m.task_id, "cappx-9");
    CHECK_STR(m.owner, "");
    CHECK(store_admission_set(s, machine, "cappx-4", "", NULL, at, &err) == 1);
    CHECKF(err.text[0] == '\0', "%s", err.text);
    store_close(s);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-admission") != 0)
        return 1;
    store_fixture_each(&f, "admission", run);
    store_fixture_close(&f);
    return test_summary();
}
