#!/usr/bin/python3
"""Publish one task.schedule request to virtflow and wait for its result.

A plain AMQP client, as any team would write one: it needs only Python's pika
(Debian: `apt install python3-pika`). The broker comes from the first argument,
else $VIRTFLOW_AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/ (quickstart
prints the URL it used as "broker: ..."):

    VIRTFLOW_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ \\
        python3 deploy/examples/publish_request.py [URL] [--timeout 60]

Prints the worker's answer (the task's result, a JSON object) and exits 0 when
the task completed, 1 when it failed, 3 when no answer came within --timeout
seconds (the task may still be retrying: `virtflowctl task ID` tells), and 2
when the broker refused the request or could not be reached."""
import argparse
import json
import os
import sys
import time
import uuid

try:
    import pika
except ImportError:
    sys.exit("publish_request.py needs pika: apt install python3-pika")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default=os.environ.get(
        "VIRTFLOW_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"))
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for the answer (default 60)")
    parser.add_argument("--cpu", type=int, default=2)
    parser.add_argument("--memory", type=int, default=2048, help="MiB")
    args = parser.parse_args()

    task_id = "tsk_" + uuid.uuid4().hex
    request = {"task_id": task_id, "requested_cpu": args.cpu, "requested_memory": args.memory}
    try:
        conn = pika.BlockingConnection(pika.URLParameters(args.url))
    except pika.exceptions.AMQPError as e:
        print("cannot reach the broker at %s: %r" % (args.url, e), file=sys.stderr)
        return 2
    try:
        ch = conn.channel()
        ch.confirm_delivery()  # basic_publish raises unless the broker took it
        replies = ch.queue_declare("", exclusive=True).method.queue
        try:
            ch.basic_publish("virtflow", "task.schedule", json.dumps(request),
                             pika.BasicProperties(delivery_mode=2, content_type="application/json",
                                                  message_id=task_id, reply_to=replies,
                                                  correlation_id=task_id),
                             mandatory=True)
        except (pika.exceptions.UnroutableError, pika.exceptions.NackError) as e:
            print("the broker refused the request (is virtflow's topology declared?): %r" % e,
                  file=sys.stderr)
            return 2
        print("published %s, waiting up to %g s" % (task_id, args.timeout), file=sys.stderr)
        deadline = time.monotonic() + args.timeout
        # inactivity_timeout yields (None, None, None) when nothing came: the
        # loop checks its deadline then instead of waiting forever.
        for _method, props, body in ch.consume(replies, auto_ack=True, inactivity_timeout=1.0):
            if props is not None and props.correlation_id == task_id:
                result = json.loads(body)
                print(json.dumps(result, indent=2))
                return 0 if result.get("status") == "completed" else 1
            if time.monotonic() >= deadline:
                print("no answer for %s within %g s; the worker may still be retrying it: "
                      "virtflowctl task %s" % (task_id, args.timeout, task_id), file=sys.stderr)
                return 3
    finally:
        conn.close()
    return 3


if __name__ == "__main__":
    sys.exit(main())
