#!/usr/bin/python3
"""bench_redeliver: bulk recovery of a receiver back from an outage
(docs/webhooks.md "Bulk redelivery").

  VF_AMQP_URL=amqp://... [VF_RABBITMQCTL=...] VF_BUILD_DIR=build \
      tests/bench/bench_redeliver.py [--deliveries 10000] [--pace 200] [--by receiver|rate]

N events reach virtflow-relay while its receiver is down (nothing listens on
its port: each delivery's one attempt, schedule_s [0], fails and the delivery
is `failed`). Then the receiver comes up, the relay is given the receiver's
pace by SIGHUP (relay.receivers[].rate_per_s = --pace; --by rate leaves the
receiver unpaced and asks `--rate` of the redelivery instead), and
`virtflowctl deliveries redeliver --receiver target --since 1h` is run. The
receiver, an asyncio HTTP/1.1 server in a process of its own, verifies the
signature of every request (deploy/examples/webhook_receiver.py's verify)
and notes each arrival. Printed: the redelivery's rate from the first to
the last arrival and over the middle 90 %, its deviation from the pace,
deliveries received more than once, and bad signatures. Figures are
printed, never asserted."""
import argparse
import asyncio
import json
import multiprocessing
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from relay_harness import SECRET_A, Broker, Relay, free_port, wait_for, wr  # noqa: E402
from bench_relay import read_request  # noqa: E402


def serve(port, log_path):
    """Answer 200 to every verified request, 401 otherwise; one line per
    request: webhook-id, arrival time, 1 verified / 0 not."""
    key = wr.parse_secret(SECRET_A)
    log = open(log_path, "a", buffering=1)

    async def handle(reader, writer):
        try:
            while True:
                headers, body = await read_request(reader)
                ok = 1
                try:
                    wr.verify([key], headers.get("webhook-id"), headers.get("webhook-timestamp"),
                              headers.get("webhook-signature"), body)
                except wr.BadSignature:
                    ok = 0
                log.write("%s %.6f %d\n" % (headers.get("webhook-id"), time.time(), ok))
                status = b"200 OK" if ok else b"401 Unauthorized"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=512)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def queue_events(broker, n):
    conn = broker.pika.BlockingConnection(broker.pika.URLParameters(broker.url))
    ch = conn.channel()
    props = broker.pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                        user_id=broker.user)
    for i in range(n):
        body = json.dumps({"id": "evt_rdl_%d_%d" % (os.getpid(), i), "type": "task.completed",
                           "timestamp": "2026-11-22T01:02:03Z",
                           "data": {"task_id": "t-%d" % i, "status": "completed",
                                    "node": {"name": "bm-001", "ip": "10.0.0.1",
                                             "pool": "default"},
                                    "vmid": 100 + i % 50, "score": 87.5, "attempts": 1}})
        ch.basic_publish("virtflow", "event.task.completed", body, props)
    conn.close()


def failed_count(relay):
    db = sqlite3.connect("file:%s?mode=ro" % relay.store, uri=True, timeout=30)
    try:
        return db.execute("SELECT COUNT(*) FROM deliveries WHERE receiver = 'target' "
                          "AND status = 'failed'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def arrivals(log_path):
    rows = []
    if os.path.exists(log_path):
        with open(log_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    rows.append((parts[0], float(parts[1]), parts[2] == "1"))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deliveries", type=int, default=10000)
    ap.add_argument("--pace", type=float, default=200.0, help="deliveries per second")
    ap.add_argument("--by", choices=("receiver", "rate"), default="receiver",
                    help="the receiver's rate_per_s paces it, or the redelivery's --rate")
    args = ap.parse_args()
    n = args.deliveries
    broker = Broker()
    port = free_port()
    relay = Relay(broker, [{"name": "target", "url": "http://127.0.0.1:%d/hook" % port,
                            "secrets": [SECRET_A], "schedule_s": [0], "disable_after_s": 0,
                            "rate_per_s": 0, "max_in_flight": 32}])
    log_path = os.path.join(relay.dir, "arrivals.log")
    receiver = None
    try:
        relay.start()
        relay.stop()
        queue_events(broker, n)
        start = time.time()
        relay.start(wait=False)
        wait_for(lambda: failed_count(relay) >= n, 1200, "the deliveries to fail")
        print("outage: %d deliveries failed (connection refused) in %.1f s"
              % (failed_count(relay), time.time() - start), flush=True)

        receiver = multiprocessing.Process(target=serve, args=(port, log_path), daemon=True)
        receiver.start()
        wait_for(lambda: os.path.exists(log_path), 10, "the receiver")
        if args.by == "receiver":
            with open(relay.config) as f:
                text = f.read()
            with open(relay.config, "w") as f:
                f.write(text.replace("rate_per_s: 0", "rate_per_s: %g" % args.pace))
            before = relay.log_text().count("receivers rebuilt")
            relay.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: relay.log_text().count("receivers rebuilt") > before, 30, "reload")
        command = ["deliveries", "redeliver", "--receiver", "target", "--since", "1h", "--json"]
        if args.by == "rate":
            command += ["--rate", "%g" % args.pace]
        asked = time.time()
        rc, out, err = relay.ctl(*command)
        if rc != 0:
            print("virtflowctl: exit %d: %s" % (rc, err))
            return
        redelivery = json.loads(out)
        print("redelivery %s: %d reset in %.2f s (virtflowctl)"
              % (redelivery["id"], redelivery["matched"], time.time() - asked), flush=True)
        wait_for(lambda: len({r[0] for r in arrivals(log_path) if r[2]}) >= n,
                 n / args.pace * 3 + 60, "every delivery")
        rows = arrivals(log_path)
        times = sorted(t for _, t, ok in rows if ok)
        ids = [i for i, _, ok in rows if ok]
        duplicates = len(ids) - len(set(ids))
        bad = sum(1 for _, _, ok in rows if not ok)
        whole = (len(times) - 1) / (times[-1] - times[0])
        lo, hi = times[len(times) // 20], times[len(times) * 19 // 20]
        middle = (len(times) * 18 // 20) / (hi - lo)
        print("paced by the %s at %g/s: %d delivered once each of %d, %d received twice, %d bad "
              "signatures" % ("receiver's rate_per_s" if args.by == "receiver" else
                              "redelivery's --rate", args.pace, len(set(ids)), n, duplicates, bad))
        print("  first to last: %.1f s, %.1f deliveries/s (%+.1f %% of the pace); middle 90 %%: "
              "%.1f/s (%+.1f %%); first arrival %.2f s after the command"
              % (times[-1] - times[0], whole, (whole / args.pace - 1) * 100, middle,
                 (middle / args.pace - 1) * 100, times[0] - asked))
        delivered = lambda: len(relay.rows("receiver = 'target' AND status = 'delivered'"))
        wait_for(lambda: delivered() >= n, 30, "the last outcomes recorded")
        print("  the store: %d of %d deliveries delivered" % (delivered(), n))
    finally:
        if receiver:
            receiver.terminate()
        relay.stop()
        relay.cleanup()
        broker.close()


if __name__ == "__main__":
    main()
