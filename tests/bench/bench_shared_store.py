#!/usr/bin/python3
"""bench_shared_store: tasks/s with 1, 2 and 3 workers sharing one store, on
SQLite (one file) and on PostgreSQL (store.url), and how often a batch had to
be decided again because another worker changed its hosts first (issue 12's
figures). Prints; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... VF_PG_URL=... bench_shared_store.py
      [--tasks N] [--workers 1,2,3] [--stores sqlite,postgresql] [--hosts H]

Each run publishes N one-vCPU tasks first, then starts the workers at once
and times them from start until every task is final (every run places all of
them: the hosts have room to spare). Runs share the machine with the broker
and the database server; the core count is printed with the figures."""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402


def final_count(db):
    return vftest.db_rows(db, "SELECT COUNT(*) FROM tasks WHERE status IN ('completed','failed')")[0][0]


def run(kind, workers, n, hosts, log_level):
    vhost = vftest.Vhost("bench%s%d" % (kind[:2], workers))
    directory = vftest.tempdir("benchshared")
    schema = vftest.PgSchema("bench") if kind == "postgresql" else None
    try:
        inventory = os.path.join(directory, "hosts.json")
        vftest.write_inventory(inventory, hosts, cpu=1000, memory=10 ** 8, max_vms=100000)
        if schema:
            db, store = schema.url, 'url: "%s"' % schema.url
        else:
            db = os.path.join(directory, "virtflow.db")
            store = "path: %s" % db
        config = vftest.write_config(directory, vhost.url, inventory, "log:\n  level: %s" % log_level,
                                     store=store)
        first = vftest.Worker(config, directory, name="declare").start()
        vftest.wait_until(lambda: "consuming" in first.log(), 30, "the topology to be declared")
        first.stop()
        vftest.publish_tasks(vhost.url, n, "bench")
        t0 = time.time()
        procs = [vftest.Worker(config, directory, name="w%d" % i).start() for i in range(workers)]
        while final_count(db) < n:
            time.sleep(0.2)
        elapsed = time.time() - t0
        for w in procs:
            w.stop()
        again = 0
        for w in procs:
            again += sum(int(m) for m in re.findall(r"decided (\d+) batches again", w.log()))
        completed = vftest.db_rows(db, "SELECT COUNT(*) FROM tasks WHERE status = 'completed'")[0][0]
        return n / elapsed, again, completed
    finally:
        vhost.close()
        if schema:
            schema.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=6000)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--log-level", default="info", help="debug: per-batch timings in the logs")
    args = parser.parse_args()
    vftest.skip_without_broker()
    stores = args.stores.split(",")
    if "postgresql" in stores and not os.environ.get("VF_PG_URL"):
        print("VF_PG_URL unset: PostgreSQL left out")
        stores.remove("postgresql")
    print("logs in /tmp/vf-benchshared-*")
    print("%d tasks, %d hosts, %d cores shared by the workers, the broker and the database"
          % (args.tasks, args.hosts, os.cpu_count()))
    print("%-11s %7s %10s %22s %10s" % ("store", "workers", "tasks/s", "batches decided again",
                                        "placed"))
    for kind in stores:
        for k in (int(w) for w in args.workers.split(",")):
            rate, again, placed = run(kind, k, args.tasks, args.hosts, args.log_level)
            print("%-11s %7d %10.0f %22d %10d" % (kind, k, rate, again, placed), flush=True)


main()
