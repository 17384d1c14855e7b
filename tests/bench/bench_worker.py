#!/usr/bin/python3
"""bench_worker: virtflow-worker's figures, printed beside the broker's own
ceiling measured in the same run (issue: throughput >= 0.7 of the ceiling
with 1,000 hosts; p99 < 25 ms at 1,000 tasks/s offered; resident memory
< 64 MiB with 10,000 hosts and 100,000 recorded tasks). Prints; asserts nothing.

  VF_AMQP_URL=... VF_RABBITMQCTL=... bench_worker.py [--tasks N] [--rate R]
      [--seconds S] [--rss-tasks M] [--queue-type classic|quorum] [--repeat K] [--no-pin]
      [--metrics-cost] [--latency-only] [--memory-only [--rss-hosts H] [--rss-source http]]
      [--idle-only [--rss-hosts H] [--rss-source http] [--seconds S]]

The latency publisher paces its tasks at --rate with publisher confirms on an
asynchronous connection: only tasks the broker confirmed count, so an event
missing for one of them was lost after the broker had it, not on the way in.

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


def serve_directory(directory):
    """A loopback HTTP server for `directory` (the node API's stand-in);
    returns its port. It runs until the process ends."""
    import functools
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def setup(tag, hosts, queue_type, extra="", source="file"):
    """source "http": the worker reads the inventory from a loopback HTTP
    server (inventory.source: http) instead of the file."""
    vhost = vftest.Vhost(tag)
    directory = vftest.tempdir(tag)
    inventory = os.path.join(directory, "hosts.json")
    vftest.write_inventory(inventory, hosts)
    config = vftest.write_config(directory, vhost.url, inventory, extra)
    with open(config) as f:
        text = f.read().replace("queue_type: classic", "queue_type: " + queue_type)
    if source == "http":
        url = "http://127.0.0.1:%d/hosts.json" % serve_directory(directory)
        text = text.replace("source: file\n  path: %s" % inventory,
                            "source: http\n  url: %s\n  timeout_s: 30" % url)
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


class ConfirmedPublisher:
    """Publishes `total` placement requests at `rate` per second with
    publisher confirms, on an asynchronous connection so that waiting for the
    broker's acks does not slow the pace (the broker acks persistent messages
    in batches, after writing them). A task counts as offered only once the
    broker confirmed it: an event missing for a confirmed task is then the
    worker's (or the receiver's), not a message lost on the way in.
    Unroutable (returned) and nacked messages are counted apart."""

    TICK_S = 0.001

    def __init__(self, url, rate, total):
        self.url, self.rate, self.total = url, rate, total
        self.sent = {}          # task id -> time published
        self.by_tag = {}        # delivery tag -> task id, until confirmed
        self.confirmed = set()  # task ids the broker acked (and did not return)
        self.returned = set()
        self.nacked = set()
        self.next = 0
        self.t0 = None
        self.elapsed = None
        self.error = None
        self.props = pika.BasicProperties(delivery_mode=2, content_type="application/json")

    def run(self):
        """Blocks until every message is published and answered (or the connection fails)."""
        params = pika.URLParameters(self.url + "?heartbeat=30&blocked_connection_timeout=60")
        self.conn = pika.SelectConnection(params, on_open_callback=self._opened,
                                          on_open_error_callback=self._failed,
                                          on_close_callback=self._closed)
        self.conn.ioloop.start()
        if self.error:
            raise RuntimeError("latency publisher: %s" % self.error)
        return self

    def _failed(self, _conn, error):
        self.error = str(error)
        self.conn.ioloop.stop()

    def _closed(self, _conn, reason):
        if len(self.confirmed) + len(self.nacked) + len(self.returned) < self.total:
            self.error = "connection closed: %s" % reason
        self.conn.ioloop.stop()

    def _opened(self, conn):
        conn.channel(on_open_callback=self._channel_open)

    def _channel_open(self, channel):
        self.channel = channel
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(ack_nack_callback=self._on_confirm, callback=self._start)

    def _start(self, _frame):
        self.t0 = time.time()
        self._tick()

    def _tick(self):
        """Publish what is due by now; come back in a millisecond."""
        due = min(self.total, int((time.time() - self.t0) * self.rate) + 1)
        while self.next < due:
            tid = "lat-%07d" % self.next
            self.next += 1
            self.sent[tid] = time.time()
            self.by_tag[self.next] = tid  # delivery tags count from 1 on this channel
            self.channel.basic_publish(
                "virtflow", "task.schedule",
                '{"task_id":"%s","requested_cpu":1,"requested_memory":512}' % tid,
                self.props, mandatory=True)
        if self.next < self.total:
            self.conn.ioloop.call_later(self.TICK_S, self._tick)
        else:
            self.elapsed = time.time() - self.t0

    def _on_return(self, _channel, _method, _props, body):
        self.returned.add(json.loads(body)["task_id"])

    def _on_confirm(self, frame):
        method = frame.method
        tags = ([t for t in self.by_tag if t <= method.delivery_tag] if method.multiple
                else [method.delivery_tag])
        nack = isinstance(method, pika.spec.Basic.Nack)
        for tag in tags:
            tid = self.by_tag.pop(tag, None)
            if tid is None:
                continue
            if nack:
                self.nacked.add(tid)
            elif tid not in self.returned:  # a returned message is acked after its return
                self.confirmed.add(tid)
        if self.next >= self.total and not self.by_tag:
            self.conn.close()


def latency(rate, seconds, hosts, queue_type):
    """Returns offered rate, p50 and p99 in ms, events received, tasks the
    broker confirmed, and tasks published."""
    vhost, directory, config, db = setup("lat", hosts, queue_type)
    try:
        vftest.declare_topology_queue(vhost.url, "bench.events")
        worker = vftest.Worker(config, directory).start()
        vftest.wait_until(lambda: "consuming" in worker.log(), 30, "the worker")
        received = {}
        total = int(rate * seconds)
        publisher = ConfirmedPublisher(vhost.url, rate, total)
        publishing = threading.Event()
        publishing.set()

        def consume():
            """Events until one arrived for every published task, or none for
            30 s after the publisher finished (a lagging worker still gets to
            finish: no deadline fixed in advance cuts its last events off)."""
            conn = vftest.connect(vhost.url)
            ch = conn.channel()
            ch.basic_qos(prefetch_count=1000)
            last = [time.time()]

            def on_event(channel, method, props, body):
                now = time.time()
                last[0] = now
                task = json.loads(body)["data"]["task_id"]
                received.setdefault(task, now)
                channel.basic_ack(method.delivery_tag)
                if len(received) >= total:
                    channel.stop_consuming()

            def check_idle():
                if not publishing.is_set() and time.time() - last[0] > 30:
                    ch.stop_consuming()
                else:
                    conn.call_later(1, check_idle)

            ch.basic_consume("bench.events", on_event)
            conn.call_later(1, check_idle)
            ch.start_consuming()
            conn.close()

        consumer = threading.Thread(target=consume)
        consumer.start()
        try:
            publisher.run()
        finally:
            publishing.clear()
            consumer.join()
            worker.stop()
        offered = total / publisher.elapsed if publisher.elapsed else float("nan")
        if publisher.returned or publisher.nacked:
            print("latency publisher: %d returned unroutable, %d nacked by the broker"
                  % (len(publisher.returned), len(publisher.nacked)))
        sent = publisher.sent
        samples = sorted((received[t] - sent[t]) * 1000 for t in publisher.confirmed
                         if t in received)
        confirmed = len(publisher.confirmed)
        if not samples:
            return offered, float("nan"), float("nan"), 0, confirmed, total
        pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]  # noqa: E731
        return offered, pick(0.50), pick(0.99), len(samples), confirmed, total
    finally:
        vhost.close()


def memory(tasks, hosts, queue_type, source="file"):
    vhost, directory, config, db = setup("rss", hosts, queue_type, source=source)
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


def cpu_seconds(pid):
    """utime + stime of a process so far, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(hosts, seconds, queue_type, source="file"):
    """The worker's CPU while no task comes, refreshing an unchanged
    inventory of `hosts` every second (inventory.refresh_s: 1): what the
    refreshes alone cost. Returns (CPU seconds per second, refreshes)."""
    vhost, directory, config, db = setup("idle", hosts, queue_type, source=source)
    try:
        start_and_stop(config, directory)
        worker = vftest.Worker(config, directory).start()
        vftest.wait_until(lambda: "deciding over %d hosts" % hosts in open(worker.log_path).read(),
                          300, "the worker's first snapshot")
        time.sleep(2)
        before, start = cpu_seconds(worker.proc.pid), time.time()
        time.sleep(seconds)
        used, elapsed = cpu_seconds(worker.proc.pid) - before, time.time() - start
        worker.stop()
        return used / elapsed, int(elapsed)
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


def latency_report(args):
    offered, p50, p99, got, confirmed, total = latency(args.rate, args.seconds, args.hosts,
                                                       args.queue_type)
    print("latency publish -> event received: offered %.0f tasks/s for %.0f s, %d published, "
          "%d confirmed by the broker, events for %d of them, p50 %.1f ms, p99 %.1f ms"
          % (offered, args.seconds, total, confirmed, got, p50, p99))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rss-tasks", type=int, default=100000)
    parser.add_argument("--rss-hosts", type=int, default=10000)
    parser.add_argument("--rss-source", choices=("file", "http"), default="file",
                        help="where the worker reads the inventory in the memory run")
    parser.add_argument("--queue-type", default="classic")
    parser.add_argument("--repeat", type=int, default=3, help="ceiling/worker turns")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="skip the second comparison with the broker on a CPU of its own")
    parser.add_argument("--metrics-cost", action="store_true",
                        help="only the throughput cost of worker.http_listen")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the publish-to-event latency at --rate for --seconds")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the resident-memory figure (timing-insensitive)")
    parser.add_argument("--idle-only", action="store_true",
                        help="only the CPU an idle worker spends refreshing an unchanged "
                             "inventory of --rss-hosts (from --rss-source) for --seconds")
    args = parser.parse_args()
    vftest.skip_without_broker()
    print("machine: %d cores" % os.cpu_count())
    if args.metrics_cost:
        metrics_cost(args)
        return
    if args.latency_only:
        latency_report(args)
        return
    if args.idle_only:
        share, refreshes = idle_cpu(args.rss_hosts, args.seconds, args.queue_type, args.rss_source)
        print("worker idle: %d hosts (%s source), refreshed every 1 s for %d s: %.3f CPU-seconds "
              "per second" % (args.rss_hosts, args.rss_source, refreshes, share))
        return
    if args.memory_only:
        rss, peak = memory(args.rss_tasks, args.rss_hosts, args.queue_type, args.rss_source)
        print("worker memory: %d hosts (%s source), %d tasks recorded: RSS %.1f MiB, peak %.1f MiB"
              % (args.rss_hosts, args.rss_source, args.rss_tasks, rss / 1024, peak / 1024))
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
    latency_report(args)
    if args.rss_tasks:
        rss, peak = memory(args.rss_tasks, args.rss_hosts, args.queue_type)
        print("worker memory: %d hosts, %d tasks recorded: RSS %.1f MiB, peak %.1f MiB"
              % (args.rss_hosts, args.rss_tasks, rss / 1024, peak / 1024))


if __name__ == "__main__":
    main()
