#!/usr/bin/python3
"""bench_api: what virtflow-api answers per second, against a real broker
(VF_AMQP_URL, a vhost of its own), a worker taking the tasks, and the SQLite
store (or PostgreSQL with --postgresql, on VF_PG_URL). Prints; asserts
nothing. Issue 23's targets are printed beside the figures.

  bench_api.py [--requests N] [--clients C] [--postgresql] [--keys]

POST /schedule: N requests from 1 client, then from C clients at once (each
a keep-alive connection on a thread of its own); every 200 is a task recorded
as queued and confirmed by the broker. GET /result: N reads of one completed
task, from 1 and from C clients; GET /v1/tasks/{id} (the task with its history and
reservations) and GET /v1/tasks?limit=50 (one page) the same way. --keys: with
api.keys_file, every request carrying a key (the cost of checking it). Latencies are per request, client side. The
load average is printed with the figures: the machine may be shared."""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402

API = os.path.join(vftest.BUILD, "worker", "virtflow-api")


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
    args = parser.parse_args()
    vftest.skip_without_broker()
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
    worker = vftest.Worker(config, directory).start()
    log_path = os.path.join(directory, "api.log")
    with open(log_path, "w") as log:
        api = subprocess.Popen([API, "-c", config], stdout=log, stderr=log,
                               env=dict(os.environ, VIRTFLOW_LOG_LEVEL=args.log_level))
    print("virtflow-api's log: %s" % log_path)
    vftest._children.append(api)
    found = []

    def listening():
        with open(log_path) as f:
            m = re.search(r"\(port (\d+)\)", f.read())
        if m:
            found.append(int(m.group(1)))
        return bool(found)
    try:
        vftest.wait_until(listening, 30, "virtflow-api to listen")
        port = found[0]
        print("virtflow-api, %s store%s, %d requests per run, load average %s"
              % ("PostgreSQL" if schema else "SQLite", ", keys" if args.keys else "", args.requests,
                 " ".join(open("/proc/loadavg").read().split()[:3])))
        post = lambda: ("POST", "/schedule", json.dumps({"requested_cpu": 1, "requested_memory": 64}))  # noqa: E731
        for clients in (1, args.clients):
            rate, lat = run(port, args.requests, clients, post)
            show("POST /schedule, %d client%s" % (clients, "s" if clients > 1 else ""), rate, lat,
                 "target >= 3,000/s")
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
        worker.stop()
        vhost.close()
        if schema:
            schema.close()


if __name__ == "__main__":
    main()
