/* bench_store: how many tasks per second the store records with group
 * commit, in the production settings (WAL, synchronous=FULL).
 *
 * One "task" is what the worker writes for a placement: the task row, two
 * history rows, a reservation and an outbox event. For each group size the
 * program records `count` tasks in transactions of that many tasks and
 * prints tasks/s. The file lives in a fresh directory under /tmp (or the
 * directory given as argv[1]: the fsync cost depends on the disk).
 *
 * Usage: bench_store [dir] [tasks per run] */
#include "store.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "benchlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int record_task(store *s, int run, int count, int i, const char *now, vf_error *err)
{
    /* Every reservation stays live (until 2099): each needs a vmid of its own,
     * the store refusing a live vmid twice. */
    uint32_t vmid = 100u + (uint32_t)run * (uint32_t)count + (uint32_t)i;
    char id[64], event_id[64], detail[128];
    snprintf(id, sizeof id, "bench-%d-%d", run, i);
    snprintf(event_id, sizeof event_id, "evt_bench-%d-%d", run, i);
    store_task_fields f = {.id = id,
                           .kind = "schedule",
                           .status = "completed",
                           .attempts = 1,
                           .request = "{\"requested_cpu\":4,\"requested_memory\":8192,"
                                      "\"requested_disk\":40,\"requested_pool\":\"default\"}",
                           .result = "{\"status\":\"completed\",\"node\":\"bm-001\",\"vmid\":120,"
                                     "\"score\":87.5}",
                           .node = "bm-001",
                           .vmid = vmid,
                           .at = now};
    snprintf(detail, sizeof detail, "{\"attempt\":1,\"score\":87.5,\"node\":\"bm-001\"}");
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"type\":\"task.completed\",\"timestamp\":\"%s\",\"data\":"
             "{\"task_id\":\"%s\",\"status\":\"completed\"}}",
             event_id, now, id);
    if (store_task_insert(s, &f, err) ||
        store_task_event_add(s, id, now, "processing", NULL, err) ||
        store_task_event_add(s, id, now, "completed", detail, err) ||
        store_reservation_add(s, id, "bm-001", 4, 8192, 40, vmid, now, "2099-01-01T00:00:00.000Z",
                              err) ||
        store_outbox_add(s, event_id, "event.task.completed", body, now, err))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    char dir[256];
    const char *parent = argc > 1 ? argv[1] : "/tmp";
    int count = argc > 2 ? atoi(argv[2]) : 2000;
    if (count <= 0)
        count = 2000;
    snprintf(dir, sizeof dir, "%s/vf-bench-store-XXXXXX", parent);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[300];
    snprintf(path, sizeof path, "%s/bench.db", dir);
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    if (!s) {
        fprintf(stderr, "bench_store: %s\n", err.text);
        return 1;
    }
    int status = 0;
    const int groups[] = {1, 10, 100, 200};
    printf("store %s, WAL + synchronous=FULL, %d tasks per run\n", path, count);
    printf("one task = task row + 2 history rows + reservation + outbox event\n");
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int group = groups[g];
        char now[STORE_TIME_SIZE];
        store_now(now);
        double start = bench_now_s();
        for (int i = 0; i < count; i += group) {
            if (store_begin(s, &err) != 0)
                goto fail;
            for (int k = i; k < i + group && k < count; k++)
                if (record_task(s, (int)g, count, k, now, &err) != 0)
                    goto fail;
            if (store_commit(s, &err) != 0)
                goto fail;
        }
        double elapsed = bench_now_s() - start;
        printf("group commit %3d: %9.0f tasks/s  (%d tasks in %.3f s, %d commits)\n", group,
               count / elapsed, count, elapsed, (count + group - 1) / group);
    }
    goto out;
fail:
    fprintf(stderr, "bench_store: %s\n", err.text);
    (void)store_rollback(s, NULL);
    status = 1;
out:
    store_close(s);
    char file[320];
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        unlink(file);
    }
    rmdir(dir);
    return status;
}
