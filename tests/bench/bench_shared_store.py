#!/usr/bin/python3
"""bench_shared_store: tasks/s with 1, 2, 3 (or 8) workers sharing one store,
on SQLite (one file) and on PostgreSQL (store.url), directly and behind
delay_proxy.py at the round-trip times given (issues 22 and 35), each worker
optionally capped to a share of one CPU. Also how many batches, and how many
tasks, had to be decided again (a claim that missed: docs/operations.md
"Running several workers"; a build before claims by fit decided whole
batches again, counted here as their average size each), the store round
trips per task (virtflow_store_round_trips_total of every worker, less what
a worker spends starting idle) and the time waited for the store's locks
per task (virtflow_store_lock_wait_seconds_total), and the workers' own CPU
per task (user and system, and the system part alone, less what an idle
start costs). Prints; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... VF_PG_URL=... bench_shared_store.py
      [--tasks N] [--workers 1,2,3,8] [--stores sqlite,postgresql] [--rtts 0,2,10]
      [--cpu-cap 0.05] [--hosts H] [--repeat K] [--no-pin]

--cpu-cap F puts each worker in a cgroup (v1, the cpu controller at
/sys/fs/cgroup/cpu; root) whose CFS quota is F of one CPU per 100 ms period,
as a container limit or a busy neighbour gives it: a worker then stops for
the rest of a period mid-batch. The groups are removed after each run.

Each run publishes N one-vCPU tasks first, then starts the workers at once
and times them from start until every task is final (every run places all of
them: the hosts have room to spare). The configurations take turns, K turns
in all, and the medians are printed (a shared machine has quieter and busier
moments; no configuration should get all of either). With the pin (default
on a machine of 2 cores or more) the broker runs on CPU 0 and this script,
its workers and the proxies on the others, as bench_worker.py does; the
database server is not moved. Runs share the machine with the broker and the
database server; the core count is printed with the figures."""
import argparse
import math
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import vftest  # noqa: E402
from bench_worker import broker_pid, set_broker_affinity  # noqa: E402

LISTEN = "worker:\n  http_listen: 127.0.0.1:0\n"
NEAR_BEST = ""  # --near-best: a scheduler section choosing it


def cpu_split(pid):
    """(user, system) CPU seconds a live process has used so far."""
    try:
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid):
    """User and system CPU a live process has used so far."""
    return sum(cpu_split(pid))


def final_count(db):
    return vftest.db_rows(db, "SELECT COUNT(*) FROM tasks WHERE status IN ('completed','failed')")[0][0]


def scrape(worker):
    """(store round trips, batches committed, claims missed, lock wait s) from
    the worker's /metrics; NaN for what a build does not count."""
    found = re.search(r"/readyz on port (\d+)", worker.log())
    if not found:
        return (float("nan"),) * 4
    status, body = vftest.http_get(int(found.group(1)), "/metrics")
    samples, families = vftest.parse_metrics(body)

    def value(name):
        return vftest.metric_value(samples, name) if name in families else float("nan")

    return (value("virtflow_store_round_trips_total"),
            vftest.metric_value(samples, "virtflow_batch_size_count"),
            value("virtflow_claims_missed_total"), value("virtflow_store_lock_wait_seconds_total"))


CGROUP_CPU = "/sys/fs/cgroup/cpu"


class CpuCap:
    """A cgroup v1 cpu group capping its processes to `share` of one CPU."""

    def __init__(self, name, share):
        self.path = os.path.join(CGROUP_CPU, name)
        os.mkdir(self.path)
        with open(os.path.join(self.path, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(self.path, "cpu.cfs_quota_us"), "w") as f:
            f.write(str(max(1000, int(share * 100000))))

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))  # every thread of it, and those it makes later

    def close(self):
        # Its processes have exited (or are moved back): an empty group goes.
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                for pid in f.read().split():
                    with open(os.path.join(CGROUP_CPU, "cgroup.procs"), "w") as root:
                        root.write(pid)
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def run(kind, proxy, workers, n, hosts, log_level, cpu_cap=0.0):
    vhost = vftest.Vhost("bench%s%d" % (kind[:2], workers))
    directory = vftest.tempdir("benchshared")
    schema = vftest.PgSchema("bench") if kind == "postgresql" else None
    try:
        inventory = os.path.join(directory, "hosts.json")
        vftest.write_inventory(inventory, hosts, cpu=1000, memory=10 ** 8, max_vms=100000)
        if schema:
            db = schema.url  # read directly, never through the proxy
            store = 'url: "%s"' % (proxy.through(schema.url) if proxy else schema.url)
        else:
            db = os.path.join(directory, "virtflow.db")
            store = "path: %s" % db
        config = vftest.write_config(directory, vhost.url, inventory,
                                     "log:\n  level: %s\n%s%s" % (log_level, LISTEN, NEAR_BEST),
                                     store=store)
        # Two idle starts: the first declares the topology and migrates the
        # store; the second is what starting costs a worker in round trips.
        idle = 0.0
        for name in ("declare", "idle"):
            first = vftest.Worker(config, directory, name=name).start()
            vftest.wait_until(lambda: "consuming" in first.log() and "/readyz on port" in first.log(),
                              30, "the worker to consume")
            idle = scrape(first)[0]
            idle_cpu = cpu_seconds(first.proc.pid)
            idle_system = cpu_split(first.proc.pid)[1]
            first.stop()
        vftest.publish_tasks(vhost.url, n, "bench")
        caps = []
        t0 = time.time()
        procs = [vftest.Worker(config, directory, name="w%d" % i).start() for i in range(workers)]
        if cpu_cap > 0:
            for i, w in enumerate(procs):
                caps.append(CpuCap("vf-bench-%d-w%d" % (os.getpid(), i), cpu_cap))
                caps[-1].add(w.proc.pid)
        while final_count(db) < n:
            time.sleep(0.2)
        elapsed = time.time() - t0
        scraped = [scrape(w) for w in procs]
        # What deciding the tasks cost the workers, less what starting costs.
        worker_cpu = sum(cpu_seconds(w.proc.pid) for w in procs) - idle_cpu * workers
        worker_system = sum(cpu_split(w.proc.pid)[1] for w in procs) - idle_system * workers
        trips = sum(t[0] for t in scraped) - idle * workers
        batches = sum(t[1] for t in scraped)
        missed = sum(t[2] for t in scraped)
        lock_wait = sum(t[3] for t in scraped)
        for w in procs:
            w.stop(timeout=120)
        again = missed_lines = 0
        for w in procs:
            again += sum(int(m) for m in re.findall(r"decided (\d+) batches again", w.log()))
            missed_lines += sum(int(m) for m in
                                re.findall(r"decided (\d+) placements again", w.log()))
        # Tasks decided again: the claims that missed; a build that decided
        # whole batches again (no such counter) costs their average size each.
        tasks_again = missed if not math.isnan(missed) else again * (n / batches if batches else 0)
        completed = vftest.db_rows(db, "SELECT COUNT(*) FROM tasks WHERE status = 'completed'")[0][0]
        return (n / elapsed, again, completed, max(trips, 0.0) / n, batches, tasks_again,
                lock_wait * 1000 / n, max(worker_cpu, 0.0) * 1e6 / n,
                max(worker_system, 0.0) * 1e6 / n)
    finally:
        for cap in caps if "caps" in locals() else []:
            cap.close()
        vhost.close()
        if schema:
            schema.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=6000)
    parser.add_argument("--workers", default="1,2,3", help="e.g. 1,2,3,8")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--rtts", default="0,0.5,2",
                        help="PostgreSQL: round trips added by delay_proxy.py, ms (0: direct)")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1, help="turns; medians are printed")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="leave the broker on every CPU")
    parser.add_argument("--near-best", choices=["auto", "off", "task", "worker"], default="auto",
                        help="scheduler.near_best_by for the workers")
    parser.add_argument("--builds", default="",
                        help="NAME=BUILD_DIR,...: take turns between these builds' workers "
                             "(before/after a change); default the one build (VF_BUILD_DIR)")
    parser.add_argument("--log-level", default="info", help="debug: per-batch timings in the logs")
    parser.add_argument("--cpu-cap", type=float, default=0.0,
                        help="each worker capped to this share of one CPU (cgroup v1 quota; "
                             "0: none)")
    args = parser.parse_args()
    global NEAR_BEST
    if args.near_best != "auto":  # a build before the key would refuse it
        NEAR_BEST = "scheduler:\n  near_best_by: %s\n" % args.near_best
    vftest.skip_without_broker()
    stores = args.stores.split(",")
    if "postgresql" in stores and not os.environ.get("VF_PG_URL"):
        print("VF_PG_URL unset: PostgreSQL left out")
        stores.remove("postgresql")
    builds = [tuple(b.split("=", 1)) for b in args.builds.split(",") if b] or [("", vftest.BUILD)]
    configs = []
    proxies = {}
    for kind in stores:
        for rtt in ([float(r) for r in args.rtts.split(",")] if kind == "postgresql" else [0.0]):
            if rtt > 0 and rtt not in proxies:
                proxies[rtt] = vftest.DelayProxy(os.environ["VF_PG_URL"], rtt)
                print("proxy +%g ms: %s" % (rtt, proxies[rtt].measured), flush=True)
            for k in (int(w) for w in args.workers.split(",")):
                for build in builds:
                    configs.append((kind, rtt, k, build))
    broker = broker_pid() if args.pin and os.cpu_count() >= 2 else None
    everything = os.sched_getaffinity(0)
    try:
        if broker:
            set_broker_affinity(broker, {0})
            os.sched_setaffinity(0, everything - {0})
            print("broker on CPU 0; workers, proxies and this script on CPUs %s"
                  % ",".join(str(c) for c in sorted(everything - {0})))
        print("logs in /tmp/vf-benchshared-*; load average at the start %.2f %.2f %.2f"
              % os.getloadavg())
        print("%d tasks, %d hosts, %d cores shared by the workers, the broker and the database; "
              "%d turn(s), medians; scheduler.near_best_by %s; each worker capped at %s"
              % (args.tasks, args.hosts, os.cpu_count(), args.repeat, args.near_best,
                 ("%g CPU" % args.cpu_cap) if args.cpu_cap > 0 else "nothing"))
        results = {c: [] for c in configs}
        for turn in range(args.repeat):
            for c in configs:
                kind, rtt, k, (name, build) = c
                vftest.WORKER = os.path.join(build, "worker", "virtflow-worker")
                results[c].append(run(kind, proxies.get(rtt), k, args.tasks, args.hosts,
                                      args.log_level, args.cpu_cap))
                if args.repeat > 1:
                    print("  turn %d: %s %s +%g ms, %d workers: %.0f tasks/s (load %.2f)" % (
                        turn + 1, name, kind, rtt, k, results[c][-1][0], os.getloadavg()[0]),
                        flush=True)
        print("%-8s %-11s %7s %7s %9s %8s %14s %12s %8s %16s %13s %15s %10s" % (
            "build", "store", "+rtt ms", "workers", "tasks/s", "batches", "batches again",
            "tasks again", "placed", "round trips/task", "lock ms/task", "worker CPU µs/task",
            "of it sys"))
        for c in configs:
            kind, rtt, k, (name, build) = c
            rows = results[c]
            lock = statistics.median(r[6] for r in rows)
            # A build without the counter (before it came) has no figure.
            lock_text = "-" if math.isnan(lock) else "%.3f" % lock
            print("%-8s %-11s %7g %7d %9.0f %8.0f %14.0f %12.0f %8d %16.3f %13s %15.0f %10.0f" % (
                name or "-", kind, rtt, k, statistics.median(r[0] for r in rows),
                statistics.median(r[4] for r in rows), statistics.median(r[1] for r in rows),
                statistics.median(r[5] for r in rows), min(r[2] for r in rows),
                statistics.median(r[3] for r in rows), lock_text,
                statistics.median(r[7] for r in rows), statistics.median(r[8] for r in rows)),
                flush=True)
        print("load average at the end %.2f %.2f %.2f" % os.getloadavg())
    finally:
        if broker:
            os.sched_setaffinity(0, everything)
            set_broker_affinity(broker, everything)
        for p in proxies.values():
            p.close()


main()
