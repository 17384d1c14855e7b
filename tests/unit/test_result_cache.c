/* result_cache: an answer comes back only for a row equal, in every field
 * GET /result's answer is made from, to the row it was kept for. */
#include "result_cache.h"
#include "testlib.h"

#include <string.h>

static store_task row(char *id, char *status, int attempts, char *result)
{
    store_task t = {.id = id, .status = status, .attempts = attempts, .result = result, .vmid = -1};
    return t;
}

static void check_hit(const result_cache *cache, const store_task *task, const char *want)
{
    size_t len = 0;
    const char *got = result_cache_get(cache, task, &len);
    CHECKF(got && len == strlen(want) && strcmp(got, want) == 0, "got %s, want %s",
           got ? got : "(none)", want);
}

static void check_miss(const result_cache *cache, const store_task *task, const char *why)
{
    size_t len = 0;
    CHECKF(result_cache_get(cache, task, &len) == NULL, "an answer kept for another row: %s", why);
}

static void test_equal_rows_only(void)
{
    result_cache *cache = result_cache_new(16);
    CHECK(cache != NULL);
    char id[] = "t-1", completed[] = "completed", processing[] = "processing",
         result[] = "{\"node\":{\"name\":\"bm-001\"}}",
         other[] = "{\"node\":{\"name\":\"bm-002\"}}", node[] = "bm-001", why[] = "preempted",
         error[] = "gone";
    store_task task = row(id, processing, 0, NULL);
    check_miss(cache, &task, "empty cache");
    result_cache_put(cache, &task, "A", 1);
    check_hit(cache, &task, "A");

    /* Every field the answer reads makes a different row. */
    store_task changed = task;
    changed.status = completed;
    check_miss(cache, &changed, "status");
    changed = task;
    changed.attempts = 1;
    check_miss(cache, &changed, "attempts");
    changed = task;
    changed.result = result;
    check_miss(cache, &changed, "result from NULL");
    changed = task;
    changed.node = node;
    check_miss(cache, &changed, "node");
    changed = task;
    changed.vmid = 100;
    check_miss(cache, &changed, "vmid");
    changed = task;
    changed.reason = why;
    check_miss(cache, &changed, "reason");
    changed = task;
    changed.error = error;
    check_miss(cache, &changed, "error");

    /* The row moved on: its new answer replaces the old. */
    store_task done = row(id, completed, 1, result);
    result_cache_put(cache, &done, "B", 1);
    check_hit(cache, &done, "B");
    check_miss(cache, &task, "the old row after the new one was kept");
    store_task rewritten = row(id, completed, 1, other);
    check_miss(cache, &rewritten, "result text");
    result_cache_free(cache);
}

static void test_one_slot(void)
{
    /* Two tasks in one slot: the later one takes it, the earlier is a miss
     * (and is built again by the caller), never the other's answer. */
    result_cache *cache = result_cache_new(1);
    char a[] = "t-a", b[] = "t-b", queued[] = "queued";
    store_task first = row(a, queued, 0, NULL), second = row(b, queued, 0, NULL);
    result_cache_put(cache, &first, "first", 5);
    result_cache_put(cache, &second, "second", 6);
    check_hit(cache, &second, "second");
    check_miss(cache, &first, "another task's slot");
    result_cache_free(cache);
    result_cache_free(NULL);
}

int main(void)
{
    test_equal_rows_only();
    test_one_slot();
    return test_summary();
}
