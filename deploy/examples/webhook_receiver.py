#!/usr/bin/env python3
"""A small webhook receiver for virtflow events, in Python's standard library.

virtflow-relay signs each webhook the Standard Webhooks way
(https://www.standardwebhooks.com). This receiver shows everything a real one
must do, in the order it must do it:

  1. read the three headers webhook-id, webhook-timestamp, webhook-signature;
  2. refuse a timestamp more than 5 minutes away from now (replay protection);
  3. compute HMAC-SHA256(key, "<id>.<timestamp>.<raw body>") with the key being
     the base64-decoded part of the "whsec_..." secret, and compare it in
     constant time with EVERY "v1,<base64>" entry of webhook-signature (there
     are several while a secret is being rotated: any match is enough);
  4. only then parse the body (as bytes received: never re-serialise JSON
     before verifying);
  5. deduplicate on webhook-id: the relay retries until it sees a 2xx, so the
     same event can arrive twice if a 2xx got lost; answer 2xx to a duplicate
     and do nothing else. Record an id only once its handler has succeeded:
     if the handler fails, answer 5xx and the relay's retry handles it again
     (recording it first would answer that retry "duplicate": an event lost).
     Keep ids longer than the relay's whole retry schedule (relay.schedule_s:
     27.6 h by default), and no longer: the set must not grow forever;
  6. answer 2xx quickly. Anything else (or no answer within the relay's
     timeout) is retried later on the relay's schedule. A 429 or 503 with
     Retry-After: <seconds> asks the relay to wait at least that long.

Usage:
  webhook_receiver.py --port 8080 --secret-file /etc/virtflow/hook.secret \
      [--secret-file OLD.secret] [--seen-file seen.txt] [--host 127.0.0.1]
      [--seen-hours 48] [--seen-max 1000000]
Environment instead of options: WEBHOOK_PORT, WEBHOOK_SECRET_FILE (several
paths separated by ':'), WEBHOOK_SECRET (the secret itself), WEBHOOK_SEEN_FILE.

It prints one line per request to stdout: "<status> <webhook-id> <type> <detail>".
Copy it and replace handle_event() with your own logic.
"""

import argparse
import base64
import collections
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 5 * 60
MAX_BODY = 1024 * 1024
SEEN_HOURS = 48        # > the relay's default schedule (27.6 h from first to last attempt)
SEEN_MAX = 1000000     # ids kept at most (about 200 MB of memory), oldest dropped first


class BadSignature(Exception):
    """The request must be refused; str(exc) says why."""


def parse_secret(text):
    """'whsec_<base64>' -> key bytes."""
    text = text.strip()
    if not text.startswith("whsec_"):
        raise ValueError("secret must start with whsec_")
    raw = text[len("whsec_"):]
    raw += "=" * (-len(raw) % 4)  # tolerate a secret written without padding
    key = base64.b64decode(raw, validate=True)
    if not key:
        raise ValueError("empty secret")
    return key


def sign(key, msg_id, timestamp, body):
    """The v1 signature of one message, as the relay computes it."""
    signed = msg_id.encode() + b"." + str(timestamp).encode() + b"." + body
    mac = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(keys, msg_id, timestamp, signature_header, body, now=None):
    """Raise BadSignature unless the message is authentic and fresh."""
    if not msg_id or not timestamp or not signature_header:
        raise BadSignature("malformed header: missing webhook-id, -timestamp or -signature")
    if not timestamp.isdigit():
        raise BadSignature("malformed header: webhook-timestamp is not Unix seconds")
    now = time.time() if now is None else now
    if abs(now - int(timestamp)) > TOLERANCE_S:
        raise BadSignature("stale timestamp")
    # Every "v1,<base64>" entry is a candidate; other versions are ignored.
    candidates = []
    for entry in signature_header.split(" "):
        version, _, value = entry.partition(",")
        if version == "v1" and value:
            try:
                candidates.append(base64.b64decode(value, validate=True))
            except ValueError:
                raise BadSignature("malformed header: signature is not base64")
    if not candidates:
        raise BadSignature("malformed header: no v1 signature")
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    matched = False
    for key in keys:
        expected = hmac.new(key, signed, hashlib.sha256).digest()
        for candidate in candidates:
            # compare_digest takes the same time whatever bytes differ.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise BadSignature("bad signature")


class SeenIds:
    """webhook-ids already handled, each kept `keep_s` seconds and at most
    `max_ids` of them, oldest dropped first. In memory, and in a file (if
    given) so a restarted receiver still recognises them; the file is
    rewritten with only the kept ids whenever it has grown to twice as many
    lines, so it stays bounded too."""

    clock = time.time  # tests replace it

    def __init__(self, path=None, keep_s=SEEN_HOURS * 3600, max_ids=SEEN_MAX):
        self.lock = threading.Lock()
        self.ids = collections.OrderedDict()  # id -> when handled (Unix s), oldest first
        self.running = set()                  # ids whose handler runs right now
        self.keep_s, self.max_ids, self.path = keep_s, max_ids, path
        self.file, self.lines = None, 0
        if path:
            if os.path.exists(path):
                with open(path) as f:
                    for line in f:  # "<id> <unix time>"; a line with only an id is kept too
                        msg_id, _, at = line.strip().partition(" ")
                        if msg_id:
                            self.ids.pop(msg_id, None)
                            self.ids[msg_id] = float(at) if at else self.clock()
            self.forget_old()
            self.rewrite()

    def begin(self, msg_id):
        """'new': handle it, then call done() or failed(). 'duplicate': handled
        already. 'running': another request is handling it at this moment."""
        with self.lock:
            if msg_id in self.ids:
                return "duplicate"
            if msg_id in self.running:
                return "running"
            self.running.add(msg_id)
            return "new"

    def done(self, msg_id):
        """The handler succeeded: from now on the id is a duplicate."""
        with self.lock:
            self.running.discard(msg_id)
            self.ids[msg_id] = self.clock()
            self.forget_old()
            if self.file:
                self.file.write("%s %d\n" % (msg_id, self.ids[msg_id]))
                self.file.flush()
                self.lines += 1
                if self.lines > 2 * max(len(self.ids), 1000):
                    self.rewrite()

    def failed(self, msg_id):
        """The handler failed: the relay's retry will find the id new again."""
        with self.lock:
            self.running.discard(msg_id)

    def forget_old(self):
        cutoff = self.clock() - self.keep_s
        while self.ids:
            oldest = next(iter(self.ids.values()))
            if oldest >= cutoff and len(self.ids) <= self.max_ids:
                break
            self.ids.popitem(last=False)

    def rewrite(self):
        """Replace the file with the ids kept now (write aside, then rename)."""
        with open(self.path + ".tmp", "w") as f:
            f.writelines("%s %d\n" % item for item in self.ids.items())
        os.replace(self.path + ".tmp", self.path)
        if self.file:
            self.file.close()
        self.file = open(self.path, "a")
        self.lines = len(self.ids)


def handle_event(event):
    """Your logic goes here. It runs until it succeeds once per event id:
    raise, and the relay sends the event again later."""
    return None


def shown(text):
    """A header value as printable text: an unauthenticated sender picks it,
    and escape sequences in a log would act on the terminal reading it."""
    return repr(text)[1:-1]


class WebhookHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the relay reuses connections
    keys = []                      # set by make_server
    seen = None

    def log_message(self, fmt, *args):  # the default logs every request to stderr
        pass

    def reply(self, status, text=""):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadSignature("body too large")
        return self.rfile.read(length)

    def do_POST(self):
        body = self.read_body()
        msg_id = self.headers.get("webhook-id", "")
        try:
            verify(self.keys, msg_id, self.headers.get("webhook-timestamp", ""),
                   self.headers.get("webhook-signature", ""), body)
        except BadSignature as e:
            print("401 %s - %s" % (shown(msg_id) or "-", e), flush=True)
            return self.reply(401, str(e))
        event = json.loads(body)
        state = self.seen.begin(msg_id)
        if state == "duplicate":
            print("200 %s %s duplicate" % (msg_id, event.get("type")), flush=True)
            return self.reply(200, "duplicate")
        if state == "running":  # the relay gave up waiting and retried: answer later
            print("503 %s %s still being handled" % (msg_id, event.get("type")), flush=True)
            self.send_response(503)
            self.send_header("Retry-After", "30")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            handle_event(event)
        except Exception as e:
            self.seen.failed(msg_id)
            print("500 %s %s handler failed: %s" % (msg_id, event.get("type"), shown(str(e))),
                  flush=True)
            return self.reply(500, "handler failed")
        self.seen.done(msg_id)
        print("200 %s %s ok" % (msg_id, event.get("type")), flush=True)
        self.reply(200, "ok")


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A sender that drops its connection (timeout, restart) is routine.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def make_server(host, port, keys, seen, handler=WebhookHandler):
    cls = type("ConfiguredHandler", (handler,), {"keys": keys, "seen": seen})
    server = QuietServer((host, port), cls)
    server.daemon_threads = True
    return server


def main(argv=None):
    p = argparse.ArgumentParser(description="Verify and log virtflow webhooks.")
    p.add_argument("--host", default=os.environ.get("WEBHOOK_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("WEBHOOK_PORT", "8080")))
    p.add_argument("--secret-file", action="append", default=None,
                   help="file holding a whsec_ secret; repeat while rotating")
    p.add_argument("--seen-file", default=os.environ.get("WEBHOOK_SEEN_FILE"),
                   help="remember handled webhook-ids across restarts")
    p.add_argument("--seen-hours", type=float, default=SEEN_HOURS,
                   help="how long a handled id is remembered; keep it longer than the "
                        "relay's retry schedule (default %(default)s)")
    p.add_argument("--seen-max", type=int, default=SEEN_MAX,
                   help="at most this many ids remembered, oldest dropped (default %(default)s)")
    args = p.parse_args(argv)

    files = args.secret_file or [f for f in os.environ.get("WEBHOOK_SECRET_FILE", "").split(":") if f]
    secrets = [open(f).read() for f in files]
    if os.environ.get("WEBHOOK_SECRET"):
        secrets.append(os.environ["WEBHOOK_SECRET"])
    if not secrets:
        p.error("give --secret-file, WEBHOOK_SECRET_FILE or WEBHOOK_SECRET")
    keys = [parse_secret(s) for s in secrets]

    seen = SeenIds(args.seen_file, args.seen_hours * 3600, args.seen_max)
    server = make_server(args.host, args.port, keys, seen)
    print("listening on %s:%d" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
