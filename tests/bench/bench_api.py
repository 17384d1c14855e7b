#!/usr/bin/python3
"""bench_api: what virtflow-api answers per second, against a real broker
(VF_AMQP_URL, a vhost of its own), a worker taking the tasks, and the SQLite
store (or PostgreSQL with --postgresql, on VF_PG_URL). Prints; asserts
nothing. Issue 23's targets are printed beside the figures.

  bench_api.py [--requests N] [--clients C] [--postgresql] [--keys]
               [--loadgen c|python] [--rate R --seconds S] [--post-only]
               [--healthz] [--pin] [--api PATH] [--worker-later]

POST /schedule: N requests from 1 client, then from C clients at once (each
a keep-alive connection on a thread of its own); every 200 is a task recorded
as queued and confirmed by the broker. GET /result: N reads of one completed
task, from 1 and from C clients; GET /v1/tasks/{id} (the task with its history and
reservations) and GET /v1/tasks?limit=50 (one page) the same way. --keys: with
api.keys_file, every request carrying a key (the cost of checking it). Latencies are per request, client side. The
load average is printed with the figures: the machine may be shared.

--loadgen c (the default once built): requests come from tests/bench's
bench_http_load (libcurl multi, one thread, connections spread over
127.0.0.x source addresses past the server's 16 per address); python: from
the threads here, which peak near 1,000 requests/s themselves (--healthz
prints either one's ceiling against GET /healthz, which touches neither
store nor broker). --rate R: POST /schedule offered at R per second for
--seconds S (a request is due every 1/R s however the earlier ones fare;
its latency runs from when it was due), p50 and p99 printed (issue 23:
p99 <= 20 ms at 500/s); needs --loadgen c. --post-only: no GET figures.
--pin: the broker (VF_RABBITMQCTL finds its pid) on CPU 0 and this script,
virtflow-api, the worker and the load generator on the other CPUs, as
bench_worker.py pins it; restored at the end. --api: another virtflow-api
binary (a before/after comparison). --worker-later: the worker starts only
after the POST runs, so that their figures are virtflow-api's acceptance
alone, the queue taking what workers on other machines would (the
pinned run otherwise puts the worker deciding every task on virtflow-api's
CPU)."""
import argparse
import http.client
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402
from bench_worker import broker_pid, set_broker_affinity  # noqa: E402

API = vftest.API
LOADGEN = os.path.join(vftest.BUILD, "tests", "bench_http_load")


HEADERS = {}


def run(port, n, clients, make):
    """n requests split over `clients` threads; returns (per second, sorted latencies s)."""
    latencies, errors = [], []
    lock = threading.Lock()

    def worker(count):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine = []
        for _ in range(count):
            method, path, body = make()
            start = time.perf_counter()
            headers = dict(HEADERS, **({"Content-Type": "application/json"} if body else {}))
            conn.request(method, path, body, headers)
            response = conn.getresponse()
            response.read()
            mine.append(time.perf_counter() - start)
            if response.status != 200:
                errors.append(response.status)
        with lock:
            latencies.extend(mine)
    threads = [threading.Thread(target=worker, args=(n // clients,)) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        print("  %d requests failed: statuses %s" % (len(errors), sorted(set(errors))))
    latencies.sort()
    return len(latencies) / elapsed, latencies


PROCS = {}  # name -> pid, whose CPU time run_c reports


def cpu_s(pid):
    """User + system CPU seconds of a running process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_c(port, clients, path, body=None, requests=None, rate=None, seconds=None):
    """bench_http_load; returns (answers of 200 per second, p50 ms, p99 ms, failures).
    Prints the CPU time each process spent per answered request: unlike the
    rates, that hardly depends on what else the machine runs."""
    cmd = [LOADGEN, "http://127.0.0.1:%d%s" % (port, path), "-c", str(clients), "--spread-sources"]
    if body is not None:
        cmd += ["-X", "POST", "-d", body, "-H", "Content-Type: application/json"]
    for name, value in HEADERS.items():
        cmd += ["-H", "%s: %s" % (name, value)]
    cmd += ["-r", str(rate), "-s", str(seconds)] if rate else ["-n", str(requests)]
    before = {name: cpu_s(pid) for name, pid in PROCS.items()}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = {name: cpu_s(pid) - before[name] for name, pid in PROCS.items()}
    used["load generator"] = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    m = re.search(r"failed (\d+) seconds \S+ rate (\d+)/s p50 (\S+) ms p99 (\S+) ms", out)
    if not m:
        raise RuntimeError("bench_http_load said: %r" % out)
    if int(m.group(1)):
        print("  " + out.strip().replace("\n", "; "))
    answered = int(re.search(r"ok (\d+)", out).group(1))
    if answered:
        print("  CPU per answered request: " + ", ".join(
            "%s %.0f us" % (name, t / answered * 1e6) for name, t in used.items()), flush=True)
    return int(m.group(2)), float(m.group(3)), float(m.group(4)), int(m.group(1))


def show_c(what, figures, target):
    rate, p50, p99, _ = figures
    print("%-44s %8.0f/s   p50 %6.1f ms   p99 %6.1f ms   (%s)" % (what, rate, p50, p99, target),
          flush=True)


def show(what, rate, latencies, target):
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    print("%-44s %8.0f/s   p50 %6.1f ms   p99 %6.1f ms   (%s)" % (what, rate, pick(0.5), pick(0.99), target))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--keys", action="store_true")
    parser.add_argument("--log-level", default="info",
                        help="virtflow-api's; debug: one line per submission group (size, times)")
    parser.add_argument("--loadgen", choices=("c", "python"),
                        default="c" if os.path.exists(LOADGEN) else "python")
    parser.add_argument("--rate", type=float, help="POST /schedule offered at this rate")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--post-only", action="store_true")
    parser.add_argument("--healthz", action="store_true",
                        help="also the load generator's ceiling against GET /healthz")
    parser.add_argument("--pin", action="store_true")
    parser.add_argument("--worker-later", action="store_true")
    parser.add_argument("--api", default=API)
    args = parser.parse_args()
    if args.rate and args.loadgen != "c":
        parser.error("--rate needs --loadgen c (build the bench_http_load target)")
    vftest.skip_without_broker()
    broker, everything = None, os.sched_getaffinity(0)
    if args.pin and os.cpu_count() >= 2:
        broker = broker_pid()
        if broker:
            set_broker_affinity(broker, {0})
            os.sched_setaffinity(0, everything - {0})  # inherited by every child
            print("broker (pid %d) on CPU 0; virtflow-api, worker, load generator on CPUs %s"
                  % (broker, ",".join(str(c) for c in sorted(everything - {0}))))
        else:
            print("--pin: the broker's pid is unknown (VF_RABBITMQCTL); nothing pinned")
    try:
        bench(args)
    finally:
        if broker:
            os.sched_setaffinity(0, everything)
            set_broker_affinity(broker, everything)


def bench(args):
    directory = vftest.tempdir("bench-api")
    vhost = vftest.Vhost("bench-api")
    schema = vftest.PgSchema("benchapi") if args.postgresql else None
    inventory = os.path.join(directory, "hosts.json")
    vftest.write_inventory(inventory, 50, max_vms=100000)
    extra = "worker:\n  http_listen: null\napi:\n  listen: 127.0.0.1:0\n"
    if args.keys:
        lines = subprocess.run([API, "new-key", "bench", "admin"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        key, line = [x for x in lines if not x.startswith("#")]
        with open(os.path.join(directory, "api.keys"), "w") as f:
            f.write(line + "\n")
        extra += "  keys_file: %s\n" % os.path.join(directory, "api.keys")
        HEADERS["Authorization"] = "Bearer " + key
    config = vftest.write_config(directory, vhost.url, inventory,
                                 store='url: "%s"' % schema.url if schema else None, extra=extra)
    worker = None if args.worker_later else vftest.Worker(config, directory).start()
    started = vftest.Api(config, directory, binary=args.api,
                         env=dict(os.environ, VIRTFLOW_LOG_LEVEL=args.log_level))
    api, port = started.proc, started.port
    print("virtflow-api's log: %s" % started.log_path)
    PROCS.update({"virtflow-api": api.pid})
    if worker:
        PROCS["worker"] = worker.proc.pid
    try:
        if port is None:
            raise RuntimeError("virtflow-api did not listen: %s" % started.log()[-300:])
        print("virtflow-api (%s), %s store%s, %d requests per run, load generator %s, "
              "load average %s" % (args.api, "PostgreSQL" if schema else "SQLite",
                                   ", keys" if args.keys else "", args.requests, args.loadgen,
                                   " ".join(open("/proc/loadavg").read().split()[:3])), flush=True)
        post_body = json.dumps({"requested_cpu": 1, "requested_memory": 64})
        post = lambda: ("POST", "/schedule", post_body)  # noqa: E731
        if args.healthz:
            for clients in (1, args.clients):
                what = "GET /healthz (load generator's ceiling), %d client%s" % (
                    clients, "s" if clients > 1 else "")
                if args.loadgen == "c":
                    show_c(what, run_c(port, clients, "/healthz", requests=args.requests * 5),
                           "no target")
                else:
                    rate, lat = run(port, args.requests, clients, lambda: ("GET", "/healthz", None))
                    show(what, rate, lat, "no target")
        for clients in (1, args.clients):
            what = "POST /schedule, %d client%s" % (clients, "s" if clients > 1 else "")
            if args.loadgen == "c":
                # One client gets a tenth: it answers near 100/s, and says so in seconds.
                n = args.requests if clients > 1 else max(1, args.requests // 10)
                show_c(what, run_c(port, clients, "/schedule", post_body, requests=n),
                       "target >= 3,000/s")
            else:
                rate, lat = run(port, args.requests, clients, post)
                show(what, rate, lat, "target >= 3,000/s")
        if args.rate:
            show_c("POST /schedule offered %.0f/s for %.0f s, %d conn." % (
                args.rate, args.seconds, args.clients),
                run_c(port, args.clients, "/schedule", post_body, rate=args.rate,
                      seconds=args.seconds), "target p99 <= 20 ms at 500/s")
        if args.post_only:
            return
        if not worker:
            worker = vftest.Worker(config, directory).start()
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/schedule", json.dumps({"task_id": "bench-read", "requested_cpu": 1,
                                                      "requested_memory": 64}),
                     dict(HEADERS, **{"Content-Type": "application/json"}))
        conn.getresponse().read()
        vftest.wait_until(lambda: vftest.db_rows(schema.url if schema else os.path.join(directory, "virtflow.db"),
                                                 "SELECT 1 FROM tasks WHERE id = 'bench-read' AND status = 'completed'"),
                          60, "bench-read to complete")
        get = lambda: ("GET", "/result/bench-read", None)  # noqa: E731
        for clients in (1, args.clients):
            rate, lat = run(port, args.requests, clients, get)
            show("GET /result, %d client%s" % (clients, "s" if clients > 1 else ""), rate, lat,
                 "target >= 10,000/s")
        for what, path in (("GET /v1/tasks/{id}", "/v1/tasks/bench-read"),
                           ("GET /v1/tasks?limit=50", "/v1/tasks?limit=50")):
            for clients in (1, args.clients):
                rate, lat = run(port, args.requests, clients, lambda: ("GET", path, None))
                show("%s, %d client%s" % (what, clients, "s" if clients > 1 else ""), rate, lat,
                     "no target")
    finally:
        api.terminate()
        api.wait()
        if worker:
            worker.stop()
        vhost.close()
        if schema:
            schema.close()


if __name__ == "__main__":
    main()
