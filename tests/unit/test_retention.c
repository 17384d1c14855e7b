/* retention's cutoffs (retention_cutoffs_at): the rows' at now -
 * store.retention; final tasks and reservations an inventory ended no later
 * than the configuration's windows (config_final_task_keep_s,
 * config_bound_reservation_keep_s) however short the retention (issue 34);
 * and the interval between rounds. What a prune does with the cutoffs is
 * test_store_prune's. */
#include "config.h"
#include "retention.h"
#include "testlib.h"

#include <string.h>

/* 2026-11-22T00:00:00.000Z */
#define NOW_MS INT64_C(1795305600000)

int main(void)
{
    vf_config *c = config_defaults();
    retention_cutoffs cut;
    /* 30 days: the windows (300 s, 600 s) are well inside it. */
    CHECK(retention_cutoffs_at(c, c->store.retention_s, NOW_MS, &cut) == 0);
    CHECK_STR(cut.rows, "2026-10-23T00:00:00.000Z");
    CHECK_STR(cut.tasks, cut.rows);
    CHECK_STR(cut.bound, cut.rows);
    /* 5 s: the rows go after 5 s, the others wait out their windows. */
    CHECK(retention_cutoffs_at(c, 5, NOW_MS, &cut) == 0);
    CHECK_STR(cut.rows, "2026-11-21T23:59:55.000Z");
    CHECK_STR(cut.bound, "2026-11-21T23:55:00.000Z"); /* inventory.max_age_s */
    CHECK_STR(cut.tasks, "2026-11-21T23:50:00.000Z"); /* the longest retry delay */
    store_prune_cutoffs view = retention_cutoffs_view(&cut);
    CHECK(view.rows == cut.rows && view.tasks == cut.tasks && view.bound == cut.bound);
    c->inventory.max_age_s = 3600;
    c->retry.delays_s[3] = 5;
    CHECK(retention_cutoffs_at(c, 5, NOW_MS, &cut) == 0);
    CHECK_STR(cut.bound, "2026-11-21T23:00:00.000Z");
    CHECK_STR(cut.tasks, "2026-11-21T23:58:00.000Z"); /* the longest delay is now 120 s */
    /* Reaching before 1970: nothing to prune. */
    CHECK(retention_cutoffs_at(c, NOW_MS, NOW_MS, &cut) < 0);
    CHECK(retention_interval_ms(5) == 1250 && retention_interval_ms(1) == 1000 &&
          retention_interval_ms(30LL * 86400) == 60000);
    config_free(c);
    return test_summary();
}
