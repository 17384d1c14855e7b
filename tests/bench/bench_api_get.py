#!/usr/bin/python3
"""bench_api_get: GET /result/{task_id} per second from virtflow-api (issue 23:
>= 10,000/s), measured with bench_http_load (C, libcurl's multi interface, one
thread, kept-alive connections) rather than Python threads, which top out near 3,600 requests/s on
this machine whatever they ask for. Prints; asserts nothing.

  bench_api_get.py [--requests N] [--connections 1,16] [--repeat R]
                   [--builds before=DIR,after=DIR] [--postgresql]

A worker (SQLite store, or PostgreSQL on VF_PG_URL with --postgresql) completes
one task; then for each turn and each build (turns alternate between builds, the
same store), virtflow-api is started from DIR/worker/virtflow-api (default: this
build) and asked N times for /healthz (the cheapest route: the ceiling of server
and client together) and /result/bench-read, from each number of connections.
(bench_api.py --loadgen python shows the Python client's own ceiling.) Medians
over the turns at the end.
The load average is printed with each turn: the machine may be shared."""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402

CLIENT = os.path.join(vftest.BUILD, "tests", "bench_http_load")


def c_client(port, path, connections, n):
    out = subprocess.run([CLIENT, "http://127.0.0.1:%d%s" % (port, path), "-c", str(connections),
                          "-n", str(n)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"failed (\d+) seconds \S+ rate (\d+)/s p50 (\S+) ms p99 (\S+) ms", out)
    if not m:
        raise RuntimeError("bench_http_load said: %r" % out)
    if int(m.group(1)):
        print("  %s: %s answers were not 200" % (path, m.group(1)))
    return float(m.group(2)), float(m.group(3)), float(m.group(4))


def start_api(binary, config, directory, tag):
    api = vftest.Api(config, directory, "api-%s" % tag, binary=binary)
    if api.port is None:
        raise RuntimeError("virtflow-api did not listen: %s" % api.log()[-300:])
    return api.proc, api.port


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=50000)
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--builds", default="this=%s" % vftest.BUILD)
    parser.add_argument("--postgresql", action="store_true")
    args = parser.parse_args()
    vftest.skip_without_broker()
    builds = [b.split("=", 1) for b in args.builds.split(",")]
    connections = [int(c) for c in args.connections.split(",")]
    directory = vftest.tempdir("bench-api-get")
    vhost = vftest.Vhost("bench-api-get")
    schema = vftest.PgSchema("benchapiget") if args.postgresql else None
    inventory = os.path.join(directory, "hosts.json")
    vftest.write_inventory(inventory, 50)
    config = vftest.write_config(directory, vhost.url, inventory,
                                 store='url: "%s"' % schema.url if schema else None,
                                 extra="worker:\n  http_listen: null\napi:\n  listen: 127.0.0.1:0\n")
    worker = vftest.Worker(config, directory).start()
    clients = [("C", c_client)]
    results = {}
    try:
        api, port = start_api(os.path.join(builds[0][1], "worker", "virtflow-api"), config, directory,
                              "setup")
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/schedule", json.dumps({"task_id": "bench-read", "requested_cpu": 1,
                                                      "requested_memory": 64}),
                     {"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
        vftest.wait_until(lambda: vftest.db_rows(schema.url if schema else os.path.join(directory, "virtflow.db"),
                                                 "SELECT 1 FROM tasks WHERE id = 'bench-read' AND status = 'completed'"),
                          60, "bench-read to complete")
        api.terminate()
        api.wait()
        print("virtflow-api, %s store, %d requests per run; logs in %s"
              % ("PostgreSQL" if schema else "SQLite", args.requests, directory))
        for turn in range(args.repeat):
            for name, build in builds:
                api, port = start_api(os.path.join(build, "worker", "virtflow-api"), config, directory,
                                      "%s-%d" % (name, turn))
                try:
                    load = " ".join(open("/proc/loadavg").read().split()[:3])
                    for client, run in clients:
                        for path in ("/healthz", "/result/bench-read"):
                            for c in connections:
                                rate, p50, p99 = run(port, path, c, args.requests)
                                results.setdefault((name, client, path, c), []).append(rate)
                                print("turn %d %-8s %-6s %-20s %3d conn %8.0f/s  p50 %6.2f ms  p99 %6.2f ms  (load %s)"
                                      % (turn + 1, name, client, path, c, rate, p50, p99, load))
                finally:
                    api.terminate()
                    api.wait()
        print("\nmedians over %d turns (target: GET /result >= 10,000/s)" % args.repeat)
        for (name, client, path, c), rates in results.items():
            print("%-8s %-6s %-20s %3d conn %8.0f/s   (turns: %s)"
                  % (name, client, path, c, statistics.median(rates), ", ".join("%.0f" % r for r in rates)))
    finally:
        worker.stop()
        vhost.close()
        if schema:
            schema.close()


if __name__ == "__main__":
    main()
