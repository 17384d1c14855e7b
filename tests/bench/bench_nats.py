#!/usr/bin/python3
"""bench_nats: events per second from the broker to a NATS JetStream stream
through virtflow-nats, with JetStream's publish acknowledgements
(docs/webhooks.md "Events on NATS JetStream").

  VF_AMQP_URL=amqp://... [VF_RABBITMQCTL=...] VF_BUILD_DIR=build \\
      tests/bench/bench_nats.py [--events 50000] [--window 2000] [--runs 2]

Each run starts a private nats-server with JetStream (tests/lib/nats.sh, file
storage) and a private vhost, queues N events on virtflow.nats (the sink
stopped), starts virtflow-nats and counts until the stream holds N
(amqp.prefetch = --window: the events published before their acks are
awaited). Scenario "steady": nothing interrupts it. Scenario "kill -9":
the sink is killed (SIGKILL) and restarted once a third is in, and
nats-server once two thirds are (restarted on its data). Then every
message is read back: lost (ids missing) and duplicated (ids twice, or more
messages than events) are counted. Figures are printed, never asserted."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from relay_harness import Broker, wait_for  # noqa: E402

BUILD = os.environ.get("VF_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
SINK = os.path.join(BUILD, "worker", "virtflow-nats")
STREAM_TOOL = os.path.join(BUILD, "tests", "nats_stream")
NATS_SH = os.path.join(HERE, "..", "lib", "nats.sh")


def nats(command, directory):
    return subprocess.run(["bash", NATS_SH, command, "-d", directory], capture_output=True,
                          text=True, timeout=60).stdout.strip()


def count(url):
    out = subprocess.run([STREAM_TOOL, url, "BENCH", "--count"], capture_output=True, text=True,
                         timeout=60)
    return int(out.stdout.split()[1]) if out.returncode == 0 else -1


def ids(url):
    out = subprocess.run([STREAM_TOOL, url, "BENCH"], capture_output=True, text=True, timeout=1200)
    return [line.split()[1] for line in out.stdout.splitlines()[1:]]


def queue_events(broker, n, run):
    conn = broker.pika.BlockingConnection(broker.pika.URLParameters(broker.url))
    ch = conn.channel()
    props = broker.pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                        user_id=broker.user)
    sent = []
    for i in range(n):
        event_id = "evt_%s_%07d" % (run, i)
        body = json.dumps({"id": event_id, "type": "task.completed",
                           "timestamp": "2026-11-28T01:02:03Z",
                           "data": {"task_id": "t-%d" % i, "status": "completed",
                                    "node": {"name": "bm-001", "ip": "10.0.0.1", "pool": "default"},
                                    "vmid": 100 + i % 50, "score": 87.5, "attempts": 1}})
        props.message_id = event_id
        ch.basic_publish("virtflow", "event.task.completed", body, props)
        sent.append(event_id)
    wait_for(lambda: ch.queue_declare("virtflow.nats", passive=True).method.message_count >= n,
             300, "events queued")
    conn.close()
    return sent


def run(broker, n, window, kill):
    directory = tempfile.mkdtemp(prefix="vf-bench-nats-")
    nats_dir = os.path.join(directory, "nats")
    url = nats("start", nats_dir)
    config = os.path.join(directory, "config.yaml")
    with open(config, "w") as f:
        f.write("amqp:\n  urls: [%s]\n  queue_type: classic\n  prefetch: %d\n"
                "store:\n  path: %s\nnats:\n  url: %s\n  stream: BENCH\n"
                % (json.dumps(broker.url), window, os.path.join(directory, "v.db"), url))
    log_path = os.path.join(directory, "sink.log")

    def start():
        log = open(log_path, "a")
        return subprocess.Popen([SINK, "-c", config], stdout=log, stderr=log)

    sink = start()  # declares virtflow.nats and the stream
    wait_for(lambda: "consuming virtflow.nats" in open(log_path).read(), 30, "the sink")
    sink.send_signal(signal.SIGTERM)
    sink.wait()
    sent = queue_events(broker, n, uuid.uuid4().hex[:8])
    began = time.time()
    sink = start()
    if kill:
        wait_for(lambda: count(url) >= n // 3, 300, "a third")
        sink.send_signal(signal.SIGKILL)
        sink.wait()
        sink = start()
        wait_for(lambda: count(url) >= 2 * n // 3, 300, "two thirds")
        nats("kill", nats_dir)
        nats("start", nats_dir)
    wait_for(lambda: count(url) >= n, 600, "every event")
    elapsed = time.time() - began
    time.sleep(2)  # a late copy would show as one message more
    held = count(url)
    stored = ids(url)
    sink.send_signal(signal.SIGTERM)
    sink.wait()
    lost = len(set(sent) - set(stored))
    duplicated = len(stored) - len(set(stored))
    abandoned = open(log_path).read().count("come again from virtflow.nats")
    nats("stop", nats_dir)
    shutil.rmtree(directory, ignore_errors=True)
    return elapsed, held, lost, duplicated, abandoned


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=50000)
    ap.add_argument("--window", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    broker = Broker()
    try:
        for _ in range(args.runs):
            for kill in (False, True):
                t, held, lost, dup, abandoned = run(broker, args.events, args.window, kill)
                print("%-8s %d events in %.2f s = %.0f events/s (window %d); stream holds %d; "
                      "lost %d, duplicated %d; windows taken again %d"
                      % ("kill -9" if kill else "steady", args.events, t, args.events / t,
                         args.window, held, lost, dup, abandoned), flush=True)
    finally:
        broker.close()


if __name__ == "__main__":
    main()
