#!/usr/bin/python3
"""bench_console: how long the console's pages take over HTTP on a store of
1,000,000 tasks (issue 14's figure: tasks list, one task, hosts, each under
100 ms). Prints; asserts nothing.

  bench_console.py [--tasks N] [--hosts H] [--runs R] [--keep DIR]

The store is created by virtflowctl itself (schema and migrations, as a
worker would), then filled with bulk SQL in one transaction: N tasks over the
last 7 days (90% completed with a node and vmid, 8% unschedulable, 2%
invalid), one history row each (an attempt with per-host reasons for the
failed ones), and a live reservation on every host. `virtflowctl serve`
answers on loopback; each page is fetched once to warm up, then R times, and
the median and the slowest are printed. Needs no broker (the dead-letter page
is not timed). The load average is printed with the figures: the machine may
be shared."""
import argparse
import http.client
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest  # noqa: E402


def fill(db, n, hosts):
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous = OFF")
    start = time.time() - 7 * 86400
    step = 7 * 86400 / n
    conn.execute("BEGIN")
    # One statement per table, the rows made by SQLite itself: a million
    # rows in seconds rather than minutes of Python round trips.
    conn.execute("""
        WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1)
        INSERT INTO tasks (id, kind, status, reason, attempts, request, result, error, node,
                           vmid, created_at, updated_at)
        SELECT printf('bench-%07d', i), 'schedule',
               CASE WHEN i % 50 = 7 THEN 'failed' WHEN i % 100 < 8 THEN 'failed' ELSE 'completed' END,
               CASE WHEN i % 50 = 7 THEN 'invalid' WHEN i % 100 < 8 THEN 'unschedulable' END,
               CASE WHEN i % 100 < 8 AND i % 50 != 7 THEN 3 ELSE 1 END,
               printf('{"task_id":"bench-%07d","requested_cpu":2,"requested_memory":4096}', i),
               CASE WHEN i % 100 < 8 THEN '{"status":"failed"}'
                    ELSE printf('{"status":"completed","node":"bm-%03d","vmid":%d}', i % ?2, 100 + i) END,
               CASE WHEN i % 50 = 7 THEN 'requested_cpu: expected an integer'
                    WHEN i % 100 < 8 THEN printf('0/%d nodes are available: %d insufficient cpu', ?2, ?2) END,
               CASE WHEN i % 100 < 8 THEN NULL ELSE printf('bm-%03d', i % ?2) END,
               CASE WHEN i % 100 < 8 THEN NULL ELSE 100 + i END,
               strftime('%Y-%m-%dT%H:%M:%f', ?3 + i * ?4, 'unixepoch') || 'Z',
               strftime('%Y-%m-%dT%H:%M:%f', ?3 + i * ?4 + 1, 'unixepoch') || 'Z'
        FROM k""", (n, hosts, start, step))
    reasons = "{" + ",".join('"bm-%03d":"insufficient cpu"' % h for h in range(min(hosts, 50))) + "}"
    conn.execute("""
        INSERT INTO task_events (task_id, at, status, detail)
        SELECT id, updated_at, status,
               CASE WHEN status = 'failed' THEN
                    '{"attempt":1,"error":"' || coalesce(error, '') || '","rejections":' || ?1 || '}'
                    ELSE '{"attempt":1,"node":"' || node || '"}' END
        FROM tasks""", (reasons,))
    now = time.time()
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"  # noqa: E731
    conn.executemany("""
        INSERT INTO reservations (task_id, node, cpu, memory, disk, vmid, created_at, expires_at)
        VALUES (?, ?, 2, 4096, 20, ?, ?, ?)""",
        [("bench-%07d" % (n - 1 - h * 100 - 8), "bm-%03d" % (h % hosts), 5000000 + h,
          stamp(now - 60), stamp(now + 86400)) for h in range(hosts)])
    conn.commit()
    conn.close()


def timed(port, path, runs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times = []
    size = 0
    for i in range(runs + 1):
        t0 = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        elapsed = time.perf_counter() - t0
        if resp.status != 200:
            raise SystemExit("%s answered %d: %s" % (path, resp.status, body[:300]))
        size = len(body)
        if i:  # the first one warms the page cache and the statement
            times.append(elapsed * 1000)
    conn.close()
    return statistics.median(times), max(times), size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000000)
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--keep", help="build the store in DIR and leave it there")
    args = ap.parse_args()
    directory = args.keep or vftest.tempdir("benchconsole")
    os.makedirs(directory, exist_ok=True)
    inventory = os.path.join(directory, "hosts.json")
    vftest.write_inventory(inventory, args.hosts)
    config = vftest.write_config(directory, "amqp://guest:guest@127.0.0.1:9/", inventory)
    db = os.path.join(directory, "virtflow.db")
    if os.path.exists(db):
        os.remove(db)
    # Any read-write command creates the store with every migration applied.
    subprocess.run([vftest.CTL, "redeliver", "-c", config, "evt_none"], capture_output=True)
    t0 = time.time()
    fill(db, args.tasks, args.hosts)
    print("filled %d tasks (+ history, %d live reservations) in %.1f s, store %.0f MB" %
          (args.tasks, args.hosts, time.time() - t0, os.path.getsize(db) / 1e6), flush=True)
    proc = subprocess.Popen([vftest.CTL, "serve", "-c", config, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split("console on port ")[1].split()[0])
        middle = "bench-%07d" % (args.tasks // 2 // 100 * 100 + 50)
        failed = "bench-%07d" % (args.tasks // 2 // 100 * 100 + 1)
        pages = [
            ("tasks list (newest 50)", "/tasks"),
            ("tasks, 100th page (keyset cursor)", None),
            ("tasks failed/unschedulable", "/tasks?status=failed&reason=unschedulable"),
            ("one task (completed)", "/task?id=" + middle),
            ("one task (unschedulable, reasons)", "/task?id=" + failed),
            ("hosts (%d hosts)" % args.hosts, "/hosts"),
            ("pictures (24 h; not a target)", "/charts"),
            ("search: task id prefix (100 match)", "/tasks?id=" + middle[:-2]),
            ("search: one node (20,000 tasks)", "/tasks?node=bm-017"),
            ("search: node prefix bm-01* (180,000)", "/tasks?node=bm-01*"),
            ("tasks, Newer from the 100th page", None),
            ("overview (stats; not a target)", "/overview"),
        ]
        # A cursor 100 pages deep: the 5000th newest task.
        deep = "bench-%07d" % (args.tasks - 1 - 5000)
        row = vftest.db_rows(db, "SELECT created_at FROM tasks WHERE id = ?", (deep,))[0][0]
        pages[1] = (pages[1][0], "/tasks?before=%s&before_id=%s" % (row, deep))
        pages[10] = (pages[10][0], "/tasks?after=%s&after_id=%s" % (row, deep))
        print("load average %.2f %.2f %.2f on %d cores (shared machine)" %
              (os.getloadavg() + (os.cpu_count(),)))
        print("%-38s %10s %10s %9s" % ("page", "median ms", "max ms", "bytes"))
        for name, path in pages:
            med, worst, size = timed(port, path, args.runs)
            print("%-38s %10.1f %10.1f %9d" % (name, med, worst, size), flush=True)
    finally:
        proc.terminate()
        proc.wait()
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
