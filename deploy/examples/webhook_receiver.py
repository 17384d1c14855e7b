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
     and do nothing else;
  6. answer 2xx quickly. Anything else (or no answer within the relay's
     timeout) is retried later on the relay's schedule. A 429 or 503 with
     Retry-After: <seconds> asks the relay to wait at least that long.

Usage:
  webhook_receiver.py --port 8080 --secret-file /etc/virtflow/hook.secret \
      [--secret-file OLD.secret] [--seen-file seen.txt] [--host 127.0.0.1]
Environment instead of options: WEBHOOK_PORT, WEBHOOK_SECRET_FILE (several
paths separated by ':'), WEBHOOK_SECRET (the secret itself), WEBHOOK_SEEN_FILE.

It prints one line per request to stdout: "<status> <webhook-id> <type> <detail>".
Copy it and replace handle_event() with your own logic.
"""

import argparse
import base64
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
    """webhook-ids already handled: in memory, and appended to a file (if
    given) so a restarted receiver still recognises them."""

    def __init__(self, path=None):
        self.lock = threading.Lock()
        self.ids = set()
        self.file = None
        if path:
            if os.path.exists(path):
                with open(path) as f:
                    self.ids.update(line.strip() for line in f if line.strip())
            self.file = open(path, "a")

    def add(self, msg_id):
        """True the first time an id is seen, False for a duplicate."""
        with self.lock:
            if msg_id in self.ids:
                return False
            self.ids.add(msg_id)
            if self.file:
                self.file.write(msg_id + "\n")
                self.file.flush()
            return True


def handle_event(event):
    """Your logic goes here. It runs once per event id. Raise to get a retry."""
    return None


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
            print("401 %s - %s" % (msg_id or "-", e), flush=True)
            return self.reply(401, str(e))
        event = json.loads(body)
        if not self.seen.add(msg_id):
            print("200 %s %s duplicate" % (msg_id, event.get("type")), flush=True)
            return self.reply(200, "duplicate")
        handle_event(event)
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
    args = p.parse_args(argv)

    files = args.secret_file or [f for f in os.environ.get("WEBHOOK_SECRET_FILE", "").split(":") if f]
    secrets = [open(f).read() for f in files]
    if os.environ.get("WEBHOOK_SECRET"):
        secrets.append(os.environ["WEBHOOK_SECRET"])
    if not secrets:
        p.error("give --secret-file, WEBHOOK_SECRET_FILE or WEBHOOK_SECRET")
    keys = [parse_secret(s) for s in secrets]

    server = make_server(args.host, args.port, keys, SeenIds(args.seen_file))
    print("listening on %s:%d" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
