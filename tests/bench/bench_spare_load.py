#!/usr/bin/python3
"""bench_spare_load: task.schedule throughput with the worker idle, and again
while 100 spares wait for Kubernetes readiness (the fake Kubernetes API never
says Ready; readiness.poll_s 1, so the spare driver probes ~100 nodes a
second on its own thread and store handle). Issue: the second figure stays
within 10% of the first. Prints both; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... bench_spare_load.py [--tasks N] [--hosts H]

Build first (RelWithDebInfo): VF_BUILD_DIR points at the build (default build/)."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import spare_harness  # noqa: E402
import vftest  # noqa: E402


def drain_rate(world, n, prefix):
    """Start the worker on n queued tasks; tasks/s until all are final and confirmed."""
    def done():
        rows = vftest.db_rows(world.db, "SELECT (SELECT COUNT(*) FROM tasks WHERE id LIKE ? AND "
                                        "status IN ('completed','failed')), (SELECT COUNT(*) FROM "
                                        "outbox WHERE confirmed_at IS NULL AND body LIKE ?)",
                              (prefix + "-%", '%"' + prefix + '-%'))
        return rows[0]
    t0 = time.time()
    while True:
        final, unconfirmed = done()
        if final >= n and unconfirmed == 0:
            break
        time.sleep(0.01)
    return n / (time.time() - t0)


def run(tasks, hosts):
    world = spare_harness.World("benchspare", n_hosts=hosts, fake_args=["--nodes-exist",
                                                                         "--ready-after-polls", "-1"])
    try:
        world.start()
        world.worker.stop()
        # Idle: the queue is filled first, then the worker drains it alone.
        vftest.publish_tasks(world.vhost.url, tasks, "idle")
        world.start()
        idle = drain_rate(world, tasks, "idle")
        # 100 spares (4 upgrades x 25) waiting for a Ready that never comes.
        for u in range(4):
            world.prepare("bench-prep-%d" % u, "upg-bench-%d" % u, count=25, ready_timeout_s=3600)
        vftest.wait_until(lambda: vftest.db_rows(world.db, "SELECT COUNT(*) FROM spares WHERE "
                                                           "state = 'waiting_ready'")[0][0] >= 100,
                          120, "100 spares waiting for readiness")
        polls0 = sum(world.fake.state()["polls"].values())
        world.worker.stop()
        vftest.publish_tasks(world.vhost.url, tasks, "busy")
        world.start()
        t0 = time.time()
        busy = drain_rate(world, tasks, "busy")
        probes = (sum(world.fake.state()["polls"].values()) - polls0) / (time.time() - t0)
        waiting = vftest.db_rows(world.db, "SELECT COUNT(*) FROM spares WHERE state = 'waiting_ready'")[0][0]
        print("task.schedule throughput, %d tasks, %d hosts:" % (tasks, hosts))
        print("  idle:                              %8.0f tasks/s" % idle)
        print("  while %3d spares wait for Ready:   %8.0f tasks/s  (%.0f readiness probes/s; %+.1f%%)"
              % (waiting, busy, probes, (busy - idle) / idle * 100))
    finally:
        world.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    vftest.skip_without_broker()
    run(args.tasks, args.hosts)


if __name__ == "__main__":
    main()
