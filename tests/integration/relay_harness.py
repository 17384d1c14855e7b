"""Shared pieces of the tests/integration/test_relay* drivers: a private
vhost, a verifying HTTP receiver with switchable failure modes, the relay
process with a generated config, a pika publisher and store queries.

Every receiver verifies every signature with deploy/examples/webhook_receiver.py
(the code users copy) and counts, per webhook-id, the verified 2xx answers.
"""
import json
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import quote

SOURCE = os.environ.get("VF_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("VF_BUILD_DIR", os.path.join(SOURCE, "build"))
sys.path.insert(0, os.path.join(SOURCE, "deploy", "examples"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "lib"))
import webhook_receiver as wr  # noqa: E402
import vftest  # noqa: E402

RELAY = os.path.join(BUILD, "worker", "virtflow-relay")
CTL = os.path.join(BUILD, "worker", "virtflowctl")
SECRET_A = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECRET_B = "whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24="

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def finish():
    print("%d failed" % len(failures))
    sys.exit(1 if failures else 0)


def wait_for(pred, timeout_s, what):
    """Poll pred until true; a bound, not a timing assertion."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    print("  timed out waiting for: " + what, flush=True)
    return pred()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """A private vhost (when VF_RABBITMQCTL is set) on the VF_AMQP_URL broker."""

    def __init__(self):
        base = os.environ.get("VF_AMQP_URL")
        if not base:
            print("skipped: VF_AMQP_URL is not set")
            sys.exit(77)
        import pika  # python3-pika (tests/lib/packages.sh)
        self.pika = pika
        params = pika.URLParameters(base)
        self.host, self.port = params.host, params.port
        self.user = params.credentials.username
        self.password = params.credentials.password
        self.ctl = os.environ.get("VF_RABBITMQCTL")
        self.vhost = params.virtual_host
        self.own_vhost = None
        if self.ctl:
            self.own_vhost = vftest.Vhost("relay")
            self.vhost = self.own_vhost.name
        self.url = "amqp://%s:%s@%s:%d/%s" % (self.user, self.password, self.host, self.port,
                                             quote(self.vhost, safe=""))
        self.conn = None

    def run_ctl(self, args):
        subprocess.run("%s %s" % (self.ctl, args), shell=True, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def channel(self):
        if self.conn is None or self.conn.is_closed:
            self.conn = self.pika.BlockingConnection(self.pika.URLParameters(self.url))
            self.ch = self.conn.channel()
            self.ch.confirm_delivery()
            self.ch.exchange_declare("virtflow", "topic", durable=True)
        return self.ch

    def publish(self, event):
        """Publish one event (dict or raw bytes with an id) confirmed, as the
        worker does: with user_id, which the relay requires of a trusted
        publisher (the relay's default trusts this same login). Returns the body."""
        body = event if isinstance(event, bytes) else json.dumps(event).encode()
        ev = json.loads(body)
        self.channel().basic_publish(
            "virtflow", "event." + ev["type"], body,
            self.pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                      message_id=ev["id"], user_id=self.user),
            mandatory=True)
        return body

    def close(self):
        if self.conn and self.conn.is_open:
            self.conn.close()
        if self.own_vhost:
            self.own_vhost.close()


def event(n, type_="task.completed"):
    return {"id": "evt_%s_%d" % (uuid.uuid4().hex[:8], n), "type": type_,
            "timestamp": "2026-11-22T01:02:03Z",
            "data": {"task_id": "t-%d" % n, "status": "completed", "vmid": 100 + n}}


class Receiver:
    """A verifying receiver on 127.0.0.1. mode: 'ok', 'fail' (500), 'busy'
    (429 + Retry-After), 'hang' (answer after hang_s), 'slow' (accept after
    hang_s, counted as 'ok'). Counts verified
    2xx-answered requests per id and keeps the raw bodies."""

    def __init__(self, secrets, port=None, mode="ok", hang_s=3.0, retry_after="2", tls=None):
        self.tls = tls  # (certfile, keyfile): serve https on "localhost"
        self.keys = [wr.parse_secret(s) for s in secrets]
        self.port = port or free_port()
        self.mode = mode
        self.hang_s = hang_s
        self.retry_after = retry_after
        self.lock = threading.Lock()
        self.ok = {}       # id -> number of 2xx answers
        self.bodies = {}   # id -> raw body
        self.attempts = 0
        self.bad = []      # reasons of refused signatures
        self.timestamps = []
        self.times = {}    # id -> arrival time of every verified attempt
        self.server = None

    def start(self):
        owner = self

        class Handler(wr.WebhookHandler):
            def do_POST(self):
                body = self.read_body()
                msg_id = self.headers.get("webhook-id", "")
                ts = self.headers.get("webhook-timestamp", "")
                try:
                    wr.verify(owner.keys, msg_id, ts, self.headers.get("webhook-signature", ""),
                              body)
                except wr.BadSignature as e:
                    with owner.lock:
                        owner.bad.append(str(e))
                    return self.reply(401, str(e))
                with owner.lock:
                    owner.attempts += 1
                    owner.times.setdefault(msg_id, []).append(time.time())
                    mode = owner.mode
                if mode == "fail":
                    return self.reply(500, "internal trouble\n")
                if mode == "busy":
                    self.send_response(429)
                    self.send_header("Retry-After", owner.retry_after)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "slow":
                    time.sleep(owner.hang_s)
                    mode = "ok"
                if mode == "hang":
                    time.sleep(owner.hang_s)
                    try:
                        self.reply(200, "late")
                    except OSError:
                        pass
                    return
                with owner.lock:
                    owner.ok[msg_id] = owner.ok.get(msg_id, 0) + 1
                    owner.bodies[msg_id] = body
                    owner.timestamps.append(int(ts))
                self.reply(200, "ok")

        self.server = wr.make_server("127.0.0.1", self.port, self.keys, wr.SeenIds(), Handler)
        if self.tls:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def url(self):
        if self.tls:
            return "https://localhost:%d/hook" % self.port
        return "http://127.0.0.1:%d/hook" % self.port

    def got(self, ids):
        with self.lock:
            return all(i in self.ok for i in ids)

    def min_gap(self, first=0):
        """Shortest time between attempt first+1 and first+2 of any id, seconds."""
        with self.lock:
            gaps = [t[first + 1] - t[first] for t in self.times.values() if len(t) > first + 1]
        return min(gaps) if gaps else None

    def duplicates(self):
        with self.lock:
            return sum(n - 1 for n in self.ok.values())


class Relay:
    """virtflow-relay in a temp dir with a generated config."""

    def __init__(self, broker, receivers, schedule=(0, 1, 1, 2), extra=None, store=None):
        """store: lines of the store section (e.g. ['  url: "postgresql://..."']);
        default an SQLite file in the relay's directory."""
        self.dir = tempfile.mkdtemp(prefix="vf-relay-")
        self.store = os.path.join(self.dir, "store.db")
        self.config = os.path.join(self.dir, "config.yaml")
        self.log = os.path.join(self.dir, "relay.log")
        lines = ["amqp:", "  urls: [%s]" % json.dumps(broker.url if broker else
                                                      "amqp://guest:guest@127.0.0.1:1/"),
                 "  queue_type: classic", "  heartbeat_s: 5",
                 "store:"] + (store or ["  path: %s" % json.dumps(self.store)]) + [
                 "log:", "  level: info",
                 "relay:", "  schedule_s: [%s]" % ", ".join(str(s) for s in schedule),
                 "  receivers:"]
        for r in receivers:
            lines.append("    - name: %s" % r["name"])
            lines.append("      url: %s" % json.dumps(r["url"]))
            files = []
            for i, secret in enumerate(r.get("secrets", [])):
                path = os.path.join(self.dir, "%s-%d.secret" % (r["name"], i))
                with open(path, "w") as f:
                    f.write(secret + "\n")
                files.append(path)
            files += r.get("secret_paths", [])
            if files:
                lines.append("      secret_files: [%s]" % ", ".join(json.dumps(f) for f in files))
            for key in ("events", "timeout_s", "max_in_flight", "secret_env", "headers", "ca_file",
                        "schedule_s", "rate_per_s", "disable_after_s", "probe_s"):
                if key in r:
                    lines.append("      %s: %s" % (key, json.dumps(r[key])))
        lines += extra or []
        if not any(line.strip().startswith("http_listen:") for line in lines):
            # A port of its own: a relay that cannot listen where told stops,
            # and relays of tests run side by side would all ask for 9465.
            lines.insert(lines.index("relay:") + 1, "  http_listen: 127.0.0.1:0")
        with open(self.config, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = None

    def start(self, env=None, wait=True, prefix=()):
        """prefix: a command that runs the relay (e.g. unshare ...)."""
        count = self.log_text().count("consuming virtflow.relay") if os.path.exists(self.log) else 0
        logf = open(self.log, "a")
        self.proc = subprocess.Popen(list(prefix) + [RELAY, "-c", self.config], stdout=logf,
                                     stderr=logf,
                                     env=dict(os.environ, **(env or {})))
        if wait:
            wait_for(lambda: self.log_text().count("consuming virtflow.relay") > count or
                     self.proc.poll() is not None, 20, "relay consuming")
        return self


    def run_once(self, env=None, timeout=20):
        """Start, expecting an early exit: (exit code, output)."""
        p = subprocess.run([RELAY, "-c", self.config], capture_output=True, text=True,
                           timeout=timeout, env=dict(os.environ, **(env or {})))
        return p.returncode, p.stdout + p.stderr

    def stop(self, sig=signal.SIGTERM, timeout=40):
        if not self.proc:
            return None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def rows(self, where="1=1", args=()):
        if not os.path.exists(self.store):
            return []
        db = sqlite3.connect("file:%s?mode=ro" % self.store, uri=True, timeout=10)
        db.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in db.execute("SELECT * FROM deliveries WHERE " + where, args)]
        except sqlite3.OperationalError:
            return []
        finally:
            db.close()

    def ctl(self, *args):
        p = subprocess.run([CTL] + list(args) + ["-c", self.config], capture_output=True,
                           text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def cleanup(self):
        if self.proc:
            self.stop(signal.SIGKILL)
        if not failures:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print("  relay files kept in " + self.dir)
