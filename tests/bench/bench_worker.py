#!/usr/bin/python3
"""bench_worker: virtflow-worker's figures, printed beside the broker's own
ceiling measured in the same run (issue: throughput >= 0.7 of the ceiling
with 1,000 hosts; p99 < 25 ms at 1,000 tasks/s offered; resident memory
< 64 MiB with 10,000 hosts and 100,000 recorded tasks). Prints; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... bench_worker.py [--tasks N] [--rate R]
      [--seconds S] [--rss-tasks M] [--queue-type classic|quorum] [--repeat K] [--no-pin]
      [--metrics-cost]

--metrics-cost prints only the cost of worker.http_listen on throughput:
turns alternate between a worker without the endpoints (null) and one with
them on a free loopback port, scraped every second while it works; medians.

The throughput comparison runs twice: with everything sharing the machine's
cores, then with the broker pinned to CPU 0 and the worker (or the ceiling's
client) on the others, so the broker has the same CPU in both runs of a pair.

Build first (RelWithDebInfo): VF_BUILD_DIR points at the build (default build/)."""
import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pika  # noqa: E402
import vftest  # noqa: E402


def start_and_stop(config, directory):
    worker = vftest.Worker(config, directory, "declare").start()
    vftest.wait_until(lambda: "consuming" in worker.log(), 30, "the worker to declare")
    worker.stop()


def finished(db):
    rows = vftest.db_rows(db, "SELECT (SELECT COUNT(*) FROM tasks WHERE status IN "
                              "('completed','failed')), (SELECT COUNT(*) FROM outbox WHERE "
                              "confirmed_at IS NULL)")
    return rows[0]


def wait_finished(db, n, interval):
    """Poll until n tasks are final and no event is unconfirmed. The frequent
    check is cheap (newest task rowid, the small partial index of unconfirmed
    events) so the poller does not take CPU from the worker it measures; the
    full count confirms the end."""
    while not os.path.exists(db):
        time.sleep(interval)
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        while True:
            recorded, unconfirmed = conn.execute(
                "SELECT (SELECT IFNULL(MAX(rowid), 0) FROM tasks), (SELECT COUNT(*) FROM outbox "
                "WHERE confirmed_at IS NULL)").fetchone()
            if recorded >= n and unconfirmed == 0:
                done, unconfirmed = finished(db)
                if done >= n and unconfirmed == 0:
                    return
            time.sleep(interval)
    finally:
        conn.close()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def setup(tag, hosts, queue_type, extra=""):
    vhost = vftest.Vhost(tag)
    directory = vftest.tempdir(tag)
    inventory = os.path.join(directory, "hosts.json")
    vftest.write_inventory(inventory, hosts)
    config = vftest.write_config(directory, vhost.url, inventory, extra)
    with open(config) as f:
        text = f.read().replace("queue_type: classic", "queue_type: " + queue_type)
    with open(config, "w") as f:
        f.write(text)
    return vhost, directory, config, os.path.join(directory, "virtflow.db")


def ceiling(n, queue_type):
    out = subprocess.run([os.path.join(vftest.BUILD, "tests", "bench_amqp_ceiling"), str(n), "200",
                          queue_type], capture_output=True, text=True, check=True).stdout
    print(out.strip())
    rates = re.findall(r"([0-9.]+) (?:msg|messages)/s", out)
    return float(rates[-1]) if rates else float("nan")


def scrape_while(worker, stop):
    """GET /metrics every second until stop is set, as a (busy) Prometheus would."""
    while not stop.is_set():
        found = re.search(r"/readyz on port (\d+)", worker.log())
        if found:
            vftest.http_get(int(found.group(1)), "/metrics")
        stop.wait(1.0)


def throughput(n, hosts, queue_type, extra="", scrape=False):
    vhost, directory, config, db = setup("tput", hosts, queue_type, extra)
    try:
        start_and_stop(config, directory)
        vftest.publish_tasks(vhost.url, n, "tput")
        worker = vftest.Worker(config, directory).start()
        stop = threading.Event()
        scraper = threading.Thread(target=scrape_while, args=(worker, stop))
        if scrape:
            scraper.start()
        t0 = time.time()
        wait_finished(db, n, 0.01)
        elapsed = time.time() - t0
        stop.set()
        if scrape:
            scraper.join()
        worker.stop()
        return n / elapsed, elapsed
    finally:
        vhost.close()


def latency(rate, seconds, hosts, queue_type):
    vhost, directory, config, db = setup("lat", hosts, queue_type)
    try:
        vftest.declare_topology_queue(vhost.url, "bench.events")
        worker = vftest.Worker(config, directory).start()
        vftest.wait_until(lambda: "consuming" in worker.log(), 30, "the worker")
        sent = {}
        received = {}
        total = int(rate * seconds)

        def consume():
            conn = vftest.connect(vhost.url)
            ch = conn.channel()
            ch.basic_qos(prefetch_count=1000)

            def on_event(channel, method, props, body):
                now = time.time()
                task = json.loads(body)["data"]["task_id"]
                received.setdefault(task, now)
                channel.basic_ack(method.delivery_tag)
                if len(received) >= total:
                    channel.stop_consuming()

            ch.basic_consume("bench.events", on_event)
            conn.call_later(seconds + 30, ch.stop_consuming)
            ch.start_consuming()
            conn.close()

        consumer = threading.Thread(target=consume)
        consumer.start()
        conn = vftest.connect(vhost.url)
        ch = conn.channel()
        props = pika.BasicProperties(delivery_mode=2, content_type="application/json")
        t0 = time.time()
        for i in range(total):
            due = t0 + i / rate
            pause = due - time.time()
            if pause > 0:
                time.sleep(pause)
            tid = "lat-%07d" % i
            sent[tid] = time.time()
            ch.basic_publish("virtflow", "task.schedule",
                             '{"task_id":"%s","requested_cpu":1,"requested_memory":512}' % tid,
                             props)
        offered = total / (time.time() - t0)
        conn.close()
        consumer.join()
        worker.stop()
        samples = sorted((received[t] - sent[t]) * 1000 for t in sent if t in received)
        if not samples:
            return offered, float("nan"), float("nan"), 0, total
        pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]  # noqa: E731
        return offered, pick(0.50), pick(0.99), len(samples), total
    finally:
        vhost.close()


def memory(tasks, hosts, queue_type):
    vhost, directory, config, db = setup("rss", hosts, queue_type)
    try:
        start_and_stop(config, directory)
        vftest.publish_tasks(vhost.url, tasks, "rss")
        worker = vftest.Worker(config, directory).start()
        wait_finished(db, tasks, 0.2)
        time.sleep(2)  # a refresh or two of the 10,000-host inventory
        rss, peak = rss_kib(worker.proc.pid)
        worker.stop()
        print("store after %d tasks: integrity_check %s" % (
            tasks, vftest.db_rows(db, "PRAGMA integrity_check")[0][0]))
        return rss, peak
    finally:
        vhost.close()


def broker_pid():
    """The broker's OS pid, from the broker itself; None when it cannot say."""
    out = vftest.rabbitmqctl("eval", "os:getpid().", check=False).stdout.strip().strip('"')
    return int(out) if out.isdigit() else None


def set_broker_affinity(pid, cpus):
    """Every thread of the broker's Erlang VM onto `cpus`."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass  # a thread that just ended


def compare(args, placement):
    """Ceiling and worker take turns, so that neither gets the quieter
    moments of a shared machine (or the broker's housekeeping after the
    other's run); the medians are compared."""
    tops, rates = [], []
    for turn in range(args.repeat):
        tops.append(ceiling(args.tasks, args.queue_type))
        rate, elapsed = throughput(args.tasks, args.hosts, args.queue_type)
        rates.append(rate)
        print("turn %d: worker %.0f tasks/s (%.2f s), ceiling %.0f msg/s, ratio %.2f"
              % (turn + 1, rate, elapsed, tops[-1], rate / tops[-1]))
    top, rate = statistics.median(tops), statistics.median(rates)
    print("worker throughput (%s): %d tasks, %d hosts, %s queues, prefetch 200: median %.0f "
          "tasks/s; broker ceiling median %.0f msg/s; ratio %.2f (%d turns)"
          % (placement, args.tasks, args.hosts, args.queue_type, rate, top, rate / top,
             args.repeat))


def metrics_cost(args):
    """Throughput without and with worker.http_listen, in alternating turns."""
    off, on = [], []
    for turn in range(args.repeat):
        for into, extra, scrape in ((off, "worker:\n  http_listen: null\n", False),
                                    (on, "worker:\n  http_listen: 127.0.0.1:0\n", True)):
            rate, elapsed = throughput(args.tasks, args.hosts, args.queue_type, extra, scrape)
            into.append(rate)
        print("turn %d: without metrics %.0f tasks/s, with metrics (scraped every second) %.0f "
              "tasks/s" % (turn + 1, off[-1], on[-1]), flush=True)
    a, b = statistics.median(off), statistics.median(on)
    print("metrics cost: %d tasks, %d hosts, %d turns: median %.0f tasks/s without, %.0f with: "
          "%+.1f %%" % (args.tasks, args.hosts, args.repeat, a, b, (b - a) / a * 100))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rss-tasks", type=int, default=100000)
    parser.add_argument("--rss-hosts", type=int, default=10000)
    parser.add_argument("--queue-type", default="classic")
    parser.add_argument("--repeat", type=int, default=3, help="ceiling/worker turns")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="skip the second comparison with the broker on a CPU of its own")
    parser.add_argument("--metrics-cost", action="store_true",
                        help="only the throughput cost of worker.http_listen")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the resident-memory figure (timing-insensitive)")
    args = parser.parse_args()
    vftest.skip_without_broker()
    print("machine: %d cores" % os.cpu_count())
    if args.metrics_cost:
        metrics_cost(args)
        return
    if args.memory_only:
        rss, peak = memory(args.rss_tasks, args.rss_hosts, args.queue_type)
        print("worker memory: %d hosts, %d tasks recorded: RSS %.1f MiB, peak %.1f MiB"
              % (args.rss_hosts, args.rss_tasks, rss / 1024, peak / 1024))
        return
    compare(args, "broker, worker and ceiling client sharing all cores")
    broker = broker_pid()
    if args.pin and broker and os.cpu_count() >= 2:
        # The broker on CPU 0, the worker (or the ceiling's client) on the
        # rest: in both runs the broker has the same CPU to itself, as it has
        # on a machine of its own. Sharing, the worker's CPU is taken from
        # the broker's while the ceiling's light client takes almost none.
        everything = os.sched_getaffinity(0)
        rest = everything - {0}
        try:
            set_broker_affinity(broker, {0})
            os.sched_setaffinity(0, rest)
            compare(args, "broker on CPU 0, worker or ceiling client on CPUs %s"
                    % ",".join(str(c) for c in sorted(rest)))
        finally:
            os.sched_setaffinity(0, everything)
            set_broker_affinity(broker, everything)
    offered, p50, p99, got, total = latency(args.rate, args.seconds, args.hosts, args.queue_type)
    print("latency publish -> event received: offered %.0f tasks/s for %.0f s, %d/%d events, "
          "p50 %.1f ms, p99 %.1f ms" % (offered, args.seconds, got, total, p50, p99))
    if args.rss_tasks:
        rss, peak = memory(args.rss_tasks, args.rss_hosts, args.queue_type)
        print("worker memory: %d hosts, %d tasks recorded: RSS %.1f MiB, peak %.1f MiB"
              % (args.rss_hosts, args.rss_tasks, rss / 1024, peak / 1024))


if __name__ == "__main__":
    main()
