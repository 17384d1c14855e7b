#!/usr/bin/python3
"""bench_relay: webhook deliveries per second through virtflow-relay.

  VF_AMQP_URL=amqp://... [VF_RABBITMQCTL=...] VF_BUILD_DIR=build \
      tests/bench/bench_relay.py [--events 20000] [--in-flight 64]

Scenario 1: one fast loopback receiver. N events are queued first (the relay
has declared the topology and is stopped), then the relay is started and the
clock runs until the receiver has answered 2xx to all N: consume + record in
SQLite (WAL, synchronous=FULL, group commit) + sign + POST + record outcome.
Scenario 2: the same fast receiver beside one answering after 2 s
(max_in_flight 8): the fast receiver's rate must not collapse.

The receivers are asyncio HTTP/1.1 keep-alive servers, each in its own
process, answering 200 without verifying (one request in 500 is verified, so a
signing bug still shows); Python's http.server would be the bottleneck well
below the relay's rate. Figures are printed, never asserted.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from relay_harness import SECRET_A, Broker, Relay, free_port, wait_for, wr  # noqa: E402


async def read_request(reader):
    """One HTTP/1.1 request off a kept-alive connection: (headers with
    lower-case names, body). Raises asyncio.IncompleteReadError at its end."""
    head = await reader.readuntil(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return headers, body


def serve(port, delay_s, counter, bad):
    key = wr.parse_secret(SECRET_A)

    async def handle(reader, writer):
        try:
            while True:
                headers, body = await read_request(reader)
                with counter.get_lock():
                    counter.value += 1
                    n = counter.value
                if n % 500 == 1:
                    try:
                        wr.verify([key], headers.get("webhook-id"), headers.get("webhook-timestamp"),
                                  headers.get("webhook-signature"), body)
                    except wr.BadSignature:
                        with bad.get_lock():
                            bad.value += 1
                if delay_s:
                    await asyncio.sleep(delay_s)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
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


def start_receiver(delay_s=0.0):
    port = free_port()
    counter, bad = multiprocessing.Value("q", 0), multiprocessing.Value("q", 0)
    p = multiprocessing.Process(target=serve, args=(port, delay_s, counter, bad), daemon=True)
    p.start()
    time.sleep(0.3)
    return p, port, counter, bad


def queue_events(broker, n):
    ch = broker.pika.BlockingConnection(broker.pika.URLParameters(broker.url)).channel()
    # user_id as the worker sets it: the relay delivers only trusted publishers' events.
    props = broker.pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                        user_id=broker.user)
    for i in range(n):
        body = json.dumps({"id": "evt_bench_%d_%d" % (os.getpid(), i), "type": "task.completed",
                           "timestamp": "2026-11-22T01:02:03Z",
                           "data": {"task_id": "t-%d" % i, "status": "completed",
                                    "node": {"name": "bm-001", "ip": "10.0.0.1",
                                             "pool": "default"},
                                    "vmid": 100 + i % 50, "score": 87.5, "attempts": 1}})
        ch.basic_publish("virtflow", "event.task.completed", body, props)
    wait_for(lambda: ch.queue_declare("virtflow.relay", passive=True).method.message_count >= n,
             120, "events queued")
    ch.connection.close()


def run(broker, receivers, n, fast_counter):
    relay = Relay(broker, receivers)
    relay.start()      # declares the topology
    relay.stop()
    queue_events(broker, n)
    start = time.time()
    relay.start(wait=False)
    wait_for(lambda: fast_counter.value >= n, 600, "fast receiver")
    elapsed = time.time() - start
    relay.stop()
    relay.cleanup()
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--in-flight", type=int, default=64)
    args = ap.parse_args()
    broker = Broker()
    try:
        p1, port1, c1, bad1 = start_receiver()
        t = run(broker, [{"name": "fast", "url": "http://127.0.0.1:%d/" % port1,
                          "secrets": [SECRET_A], "max_in_flight": args.in_flight}],
                args.events, c1)
        print("scenario 1, one fast receiver: %d deliveries in %.2f s = %.0f deliveries/s "
              "(bad signatures in samples: %d)" % (args.events, t, args.events / t, bad1.value))
        c1.value = 0
        p2, port2, c2, _ = start_receiver(delay_s=2.0)
        t2 = run(broker, [
            {"name": "fast", "url": "http://127.0.0.1:%d/" % port1, "secrets": [SECRET_A],
             "max_in_flight": args.in_flight},
            {"name": "slow", "url": "http://127.0.0.1:%d/" % port2, "secrets": [SECRET_A],
             "max_in_flight": 8, "timeout_s": 5}], args.events, c1)
        print("scenario 2, fast beside a 2 s receiver: fast got %d in %.2f s = %.0f deliveries/s; "
              "slow answered %d meanwhile" % (args.events, t2, args.events / t2, c2.value))
        p1.terminate()
        p2.terminate()
    finally:
        broker.close()


if __name__ == "__main__":
    main()
