#!/usr/bin/python3
"""bench_priority_lane: how many low-priority tasks are decided before a
high-priority one published after them (issue 24, item 3: with 10,000 lows
queued, fewer than 500). Quorum queues (the default), amqp.prefetch 200.
Prints; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... bench_priority_lane.py [--lows N] [--workers W]
      [--postgresql]

Two figures, each counted from the store's history (task_events, in commit
order), never from a clock:
  queued:  the lows are queued with the workers stopped, then the high task
           (routing key task.schedule.priority, the lane), then the workers
           start: lows decided before the high one.
  running: the lows are queued, the workers start, and the high task is
           published once a tenth of the lows are decided: lows decided after
           that point and before the high one (overtaken = what was left).

Build first (RelWithDebInfo): VF_BUILD_DIR points at the build (default build/)."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402

CLASSES = """scheduler:
  priority_classes:
    high: {value: 1000, preemption: lower}
    low: {value: -10, preemption: never}
"""


def completed(db):
    ids = [r[0] for r in vftest.db_rows(db, "SELECT task_id FROM task_events WHERE "
                                        "status = 'completed' ORDER BY id")]
    return ids


def lows_decided(db):
    return vftest.db_rows(db, "SELECT count(*) FROM tasks WHERE status = 'completed' "
                          "AND id LIKE 'low-%'")[0][0]


def run(mode, lows, n_workers, postgresql):
    directory = vftest.tempdir("bench-lane")
    vhost = vftest.Vhost("bench-lane")
    db = os.path.join(directory, "virtflow.db")
    store = None
    schema = vftest.PgSchema("bench_lane") if postgresql else None
    if schema:
        db, store = schema.url, 'url: "%s"' % schema.url
    workers = []
    try:
        inventory = os.path.join(directory, "hosts.json")
        vftest.write_inventory(inventory, 50, cpu=4096, memory=16777216)
        config = vftest.write_config(directory, vhost.url, inventory, CLASSES, store=store)
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace("queue_type: classic", "queue_type: quorum"))
        first = vftest.Worker(config, directory, "declare").start()
        vftest.wait_until(lambda: "consuming" in first.log(), 30, "worker to consume")
        first.stop()
        vftest.publish(vhost.url, [({"task_id": "low-%05d" % i, "requested_cpu": 1,
                                     "requested_memory": 64, "priority_class": "low"}, {})
                                   for i in range(lows)])
        high = [({"task_id": "high", "requested_cpu": 1, "requested_memory": 64,
                  "priority_class": "high"}, {})]
        at_publish = 0
        if mode == "queued":
            vftest.publish(vhost.url, high, key="task.schedule.priority")
        workers = [vftest.Worker(config, directory, "worker-%d" % i).start()
                   for i in range(n_workers)]
        if mode == "running":
            # Opened beforehand: publishing is then one confirmed round trip.
            connection = vftest.connect(vhost.url)
            channel = connection.channel()
            channel.confirm_delivery()
            vftest.wait_until(lambda: lows_decided(db) >= lows // 10, 300, "a tenth decided")
            at_publish = lows_decided(db)
            channel.basic_publish("virtflow", "task.schedule.priority",
                                  json.dumps(high[0][0]).encode(), mandatory=True)
        vftest.wait_until(lambda: vftest.db_rows(db, "SELECT count(*) FROM tasks WHERE status = "
                                                 "'completed'")[0][0] == lows + 1, 600, "all")
        if mode == "running":
            connection.close()
        ids = completed(db)
        before = sum(1 for t in ids[:ids.index("high")] if t.startswith("low-"))
        if mode == "queued":
            print("queued:  %d of %d lows decided before the high one (%d worker%s, %s, "
                  "prefetch 200)" % (before, lows, n_workers, "" if n_workers == 1 else "s",
                                     "PostgreSQL" if schema else "SQLite"))
        else:
            print("running: %d lows decided after the high one was published and before it; "
                  "%d were left when it was published, %d decided before it in all "
                  "(%d worker%s, %s, prefetch 200)"
                  % (before - at_publish, lows - at_publish, before, n_workers,
                     "" if n_workers == 1 else "s", "PostgreSQL" if schema else "SQLite"))
    finally:
        for w in workers:
            w.stop()
        vhost.close()
        if schema:
            schema.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lows", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--postgresql", action="store_true", help="the store on VF_PG_URL")
    args = parser.parse_args()
    vftest.skip_without_broker()
    for mode in ("queued", "running"):
        run(mode, args.lows, args.workers, args.postgresql)


if __name__ == "__main__":
    main()
