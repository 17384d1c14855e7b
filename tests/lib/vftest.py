"""Helpers for virtflow's integration tests: a private vhost on the test
broker, a worker process with a generated config, publishing with confirms,
reading the store, and the audit every fault test ends with.

Run by Debian's /usr/bin/python3 (python3-pika). The broker comes from
tests/run.sh: VF_AMQP_URL, and VF_RABBITMQCTL to create a vhost per test.
A test without them exits 77 (skipped). PostgreSQL, when a test wants it,
comes from VF_PG_URL (tests/run.sh starts a private server): PgSchema gives
a test a schema of its own, and db_rows reads a store given by path or URL."""

import atexit
import base64
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pika

SKIP = 77
SOURCE = os.environ.get("VF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("VF_BUILD_DIR", os.path.join(SOURCE, "build"))
WORKER = os.path.join(BUILD, "worker", "virtflow-worker")
CTL = os.path.join(BUILD, "worker", "virtflowctl")
API = os.path.join(BUILD, "worker", "virtflow-api")


def skip_without_broker():
    if not os.environ.get("VF_AMQP_URL") or not os.environ.get("VF_RABBITMQCTL"):
        print("skipped: VF_AMQP_URL and VF_RABBITMQCTL not set (tests/run.sh sets them)")
        sys.exit(SKIP)


def rabbitmqctl(*args, check=True):
    cmd = shlex.split(os.environ["VF_RABBITMQCTL"]) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def broker_api(method, path, body=None):
    """A call to the test broker's management HTTP API ($VF_RABBITMQ_API,
    e.g. http://guest:guest@127.0.0.1:15673/api); raises on an error status."""
    base = urllib.parse.urlsplit(os.environ["VF_RABBITMQ_API"])
    netloc = base.hostname + (":%d" % base.port if base.port else "")
    url = urllib.parse.urlunsplit((base.scheme, netloc, base.path.rstrip("/") + path, "", ""))
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"content-type": "application/json"})
    login = "%s:%s" % (urllib.parse.unquote(base.username or "guest"),
                       urllib.parse.unquote(base.password or "guest"))
    req.add_header("authorization", "Basic " + base64.b64encode(login.encode()).decode())
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status


class Vhost:
    """A fresh vhost on the test broker, deleted on close: through the
    broker's HTTP API when tests/run.sh gives one ($VF_RABBITMQ_API), else
    through rabbitmqctl (each run boots an Erlang VM: seconds, and about
    0.6 s of CPU)."""

    def __init__(self, tag):
        self.name = "vf-%s-%d-%s" % (tag, os.getpid(), uuid.uuid4().hex[:6])
        quoted = urllib.parse.quote(self.name, safe="")
        base = urllib.parse.urlsplit(os.environ["VF_AMQP_URL"])
        user = urllib.parse.unquote(base.username or "guest")  # the tests' login
        if os.environ.get("VF_RABBITMQ_API"):
            broker_api("PUT", "/vhosts/" + quoted, {})
            broker_api("PUT", "/permissions/%s/%s" % (quoted, urllib.parse.quote(user, safe="")),
                       {"configure": ".*", "write": ".*", "read": ".*"})
        else:
            rabbitmqctl("add_vhost", self.name)
            rabbitmqctl("set_permissions", "-p", self.name, user, ".*", ".*", ".*")
        self.url = "%s://%s/%s" % (base.scheme, base.netloc, quoted)

    def close(self):
        if os.environ.get("VF_RABBITMQ_API"):
            try:
                broker_api("DELETE", "/vhosts/" + urllib.parse.quote(self.name, safe=""))
                return
            except (urllib.error.URLError, OSError):
                pass  # the broker may be down by design (a test stopped it): as below
        # A rabbitmqctl run takes seconds, and nothing after the test needs
        # this name (unique to the run) gone: it is deleted in the background.
        cmd = shlex.split(os.environ["VF_RABBITMQCTL"]) + ["delete_vhost", self.name]
        subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)


def write_inventory(path, n_hosts, cpu=64, memory=262144, pool="default", max_vms=1000):
    hosts = [{"name": "bm-%03d" % i, "ip": "10.9.0.%d" % (i + 1), "pool": pool, "cpu": cpu,
              "memory": memory, "storage": 10000, "max_vms": max_vms} for i in range(n_hosts)]
    with open(path, "w") as f:
        json.dump(hosts, f)
    return hosts


def own_ports(text):
    """Config text with worker.http_listen and relay.http_listen on a port
    each program picks (127.0.0.1:0) unless the text names them: a program
    that cannot listen where told stops, and tests run side by side would
    otherwise all ask for the defaults (9464, 9465). A section present
    without the key gets it as its first line (block style, two spaces)."""
    for section in ("worker", "relay"):
        header = re.search(r"^%s:[ \t]*\n" % section, text, re.M)
        if not header:
            text = text.rstrip("\n") + "\n%s:\n  http_listen: 127.0.0.1:0\n" % section
            continue
        body = re.match(r"(?:(?:  .*)?\n)*", text[header.end():]).group(0)
        if not re.search(r"^  http_listen:", body, re.M):
            text = text[:header.end()] + "  http_listen: 127.0.0.1:0\n" + text[header.end():]
    return text


def write_config(directory, url, inventory, extra="", store=None):
    """store: the store section's body, e.g. 'url: "postgresql://..."';
    default the SQLite file virtflow.db in directory. The programs' probes
    listen on ports of their own (own_ports) unless `extra` says where."""
    path = os.path.join(directory, "config.yaml")
    if store is None:
        store = "path: %s" % os.path.join(directory, "virtflow.db")
    with open(path, "w") as f:
        f.write(own_ports("""amqp:
  urls: ["%s"]
  queue_type: classic
  prefetch: 200
store:
  %s
inventory:
  source: file
  path: %s
  refresh_s: 1
retry:
  max_attempts: 3
  delays_s: [1, 1]
%s
""" % (url, store, inventory, extra)))
    return path


_children = []


@atexit.register
def _kill_children():
    """A test that fails half-way must not leave workers running behind it."""
    for proc in _children:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


_started_workers = []  # every Worker started, for wait_until's report


class Worker:
    """virtflow-worker as a child process, its log in the test directory."""

    def __init__(self, config, directory, name="worker"):
        self.config = config
        self.log_path = os.path.join(directory, name + ".log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([WORKER, "-c", self.config], stdout=log, stderr=log)
        _children.append(self.proc)
        _started_workers.append(self)
        log.close()
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=30):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        with open(self.log_path) as f:
            return f.read()


class Api:
    """virtflow-api as a child process (started at once), its log in the
    test directory; port: the one it says it listens on (api.listen
    127.0.0.1:0 lets it choose), None when it stopped first (the log says
    why). binary: another build's virtflow-api; env: its environment."""

    def __init__(self, config, directory, name="api", binary=None, env=None):
        self.log_path = os.path.join(directory, name + ".log")
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([binary or API, "-c", config], stdout=log, stderr=log,
                                     env=env)
        _children.append(self.proc)
        log.close()
        found = []

        def listening():
            m = re.search(r"listening on \S+ \(port (\d+)\)", self.log())
            if m:
                found.append(int(m.group(1)))
            return bool(found) or self.proc.poll() is not None
        wait_until(listening, 30, "%s to listen or stop" % name)
        self.port = found[0] if found else None

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=30)


def connect(url):
    return pika.BlockingConnection(pika.URLParameters(url + "?heartbeat=30&blocked_connection_timeout=60"))


def declare_topology_queue(url, name, key="event.#"):
    """A durable queue bound to the virtflow exchange (declared by the worker),
    created here first so nothing published before the worker starts is missed."""
    conn = connect(url)
    ch = conn.channel()
    ch.exchange_declare("virtflow", "topic", durable=True)
    ch.queue_declare(name, durable=True)
    ch.queue_bind(name, "virtflow", key)
    conn.close()


class PublishError(Exception):
    """A message the broker nacked, or returned because no queue took it."""


# Messages in flight before publish() waits for confirms: enough to hide the
# round trip, few enough that a failure is seen soon after it happens.
PUBLISH_WINDOW = 256


def publish(url, messages, key="task.schedule"):
    """messages: list of (body bytes or JSON-able, dict of properties).
    Confirmed: returns once the broker has confirmed every message (persisted
    and routed); raises PublishError for a nack or a message no queue took
    (mandatory). The confirms are awaited in windows, not one round trip per
    message as BlockingChannel's confirm mode does (~250 messages/s)."""
    conn = connect(url)
    publish_on(conn, conn.channel(), messages, key)
    conn.close()


def publish_on(conn, ch, messages, key="task.schedule", progress=None):
    """publish() on a channel of one's own; progress(n) after the n-th message."""
    ch.exchange_declare("virtflow", "topic", durable=True)
    pending, failed, returned = set(), [], []

    def on_confirm(frame):
        method = frame.method
        if isinstance(method, pika.spec.Basic.Nack):
            failed.append(method.delivery_tag)
        if method.multiple:
            pending.difference_update([t for t in pending if t <= method.delivery_tag])
        else:
            pending.discard(method.delivery_tag)

    ready = []
    ch._impl.confirm_delivery(ack_nack_callback=on_confirm, callback=lambda _frame: ready.append(1))
    ch.add_on_return_callback(lambda _ch, _method, _props, body: returned.append(body))
    # Short slices: process_data_events(time_limit=1) returned only after the
    # whole second even when Confirm.SelectOk had come, a second per publish().
    deadline = time.time() + 60
    while not ready:
        if time.time() > deadline:
            raise PublishError("no Confirm.SelectOk within 60 s")
        conn.process_data_events(time_limit=0.01)

    def settle(limit):
        deadline = time.time() + 60
        while len(pending) > limit and time.time() < deadline:
            conn.process_data_events(time_limit=0.01)
        conn.process_data_events(time_limit=0)  # the returns come before their confirms
        if failed or returned or len(pending) > limit:
            raise PublishError("nacked %s, returned (unroutable) %r, unconfirmed %d"
                               % (failed[:5], returned[:1], len(pending)))

    tag = 0
    for body, props in messages:
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        props = dict(props)
        routing_key = props.pop("routing_key", key)
        properties = pika.BasicProperties(delivery_mode=2, content_type="application/json", **props)
        tag += 1
        pending.add(tag)
        ch.basic_publish("virtflow", routing_key, body, properties, mandatory=True)
        if progress:
            progress(tag)
        if len(pending) >= PUBLISH_WINDOW:
            settle(PUBLISH_WINDOW // 2)
    settle(0)


def publish_tasks(url, n, prefix):
    """n small placement requests with task ids <prefix>-0000000 on, confirmed
    (the benchmarks' load)."""
    publish(url, (('{"task_id":"%s-%07d","requested_cpu":1,"requested_memory":512}' % (prefix, i),
                   {}) for i in range(n)))


def drain(url, queue, expect=None, timeout=30.0):
    """Messages from `queue` (acked), until `expect` arrived (or, without
    `expect`, as many as the queue held when called) or timeout. Consumed
    with a prefetch window, not one basic.get round trip per message (which
    took seconds for a few thousand events); what was delivered beyond
    `expect` goes back to the queue. Returns a list of (properties, body bytes)."""
    conn = connect(url)
    ch = conn.channel()
    if expect is None:
        expect = ch.queue_declare(queue, passive=True).method.message_count
    got = []
    last_tag = acked_tag = None
    deadline = time.time() + timeout
    if expect > 0:
        ch.basic_qos(prefetch_count=min(expect, 1000))
        for method, props, body in ch.consume(queue, inactivity_timeout=0.1):
            if method is not None:
                got.append((props, body))
                last_tag = method.delivery_tag
                if len(got) % 500 == 0:  # before the prefetch window fills
                    ch.basic_ack(last_tag, multiple=True)
                    acked_tag = last_tag
            if len(got) >= expect or time.time() >= deadline:
                break
        if last_tag != acked_tag:
            ch.basic_ack(last_tag, multiple=True)
        ch.cancel()  # requeues the unacked rest
    conn.close()
    return got


def queue_depth(url, queue):
    conn = connect(url)
    ch = conn.channel()
    depth = ch.queue_declare(queue, passive=True).method.message_count
    conn.close()
    return depth


def _pg_value(text):
    if text == "\x01":
        return None
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"-?[0-9]+\.[0-9]*(e[-+]?[0-9]+)?", text):
        return float(text)
    return text


def _pg_rows(url, sql, args):
    """psql (Debian's postgresql-client) stands in for a Python driver: the
    ? placeholders become psql variables, quoted by psql itself."""
    count = [0]

    def variable(_):
        count[0] += 1
        return ":'p%d'" % count[0]
    text = re.sub(r"\?", variable, sql)
    cmd = ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-R", "\x1e", "-P", "null=\x01",
           "-v", "ON_ERROR_STOP=1", url]
    for i, value in enumerate(args):
        cmd += ["-v", "p%d=%s" % (i + 1, value)]
    out = subprocess.run(cmd, input=text + ";\n", capture_output=True, text=True, check=True).stdout
    out = out.rstrip("\n")
    if not out:
        return []
    return [tuple(_pg_value(v) for v in row.split("\x1f")) for row in out.split("\x1e")]


class PgSchema:
    """A fresh schema on VF_PG_URL's server, dropped on close; .url is a
    postgresql:// URL whose connections see only it (a store of its own)."""

    def __init__(self, tag):
        base = os.environ["VF_PG_URL"]
        self.name = "vft_%s_%d_%s" % (re.sub(r"[^a-z0-9]", "", tag.lower()), os.getpid(),
                                      uuid.uuid4().hex[:6])
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", base, "-c",
                        "CREATE SCHEMA %s" % self.name], check=True, capture_output=True)
        self.url = "%s%soptions=-csearch_path%%3D%s" % (base, "&" if "?" in base else "?", self.name)

    def close(self):
        subprocess.run(["psql", "-X", "-q", os.environ["VF_PG_URL"], "-c",
                        "DROP SCHEMA IF EXISTS %s CASCADE" % self.name], capture_output=True)


class DelayProxy:
    """tests/bench/delay_proxy.py in front of the PostgreSQL server of `url`,
    adding rtt_ms to each round trip, as across a network; .through(url)
    is a URL of that server reached through it, .measured the round trip
    the proxy measured. Each connection to the
    proxy is one to the server, so a server that restarts behind it is
    reached again by the next connection."""

    def __init__(self, url, rtt_ms):
        base = urllib.parse.urlparse(url)
        self.proc = subprocess.Popen([sys.executable,
                                      os.path.join(SOURCE, "tests", "bench", "delay_proxy.py"),
                                      "--upstream", "%s:%d" % (base.hostname, base.port or 5432),
                                      "--rtt-ms", str(rtt_ms), "--measure", url],
                                     stdout=subprocess.PIPE, text=True)
        self.address = re.search(r"listening on (\S+)", self.proc.stdout.readline()).group(1)
        self.measured = self.proc.stdout.readline().strip()  # the round trip, as it printed it

    def through(self, url):
        parts = urllib.parse.urlparse(url)
        user = parts.netloc.rsplit("@", 1)
        return urllib.parse.urlunparse(parts._replace(
            netloc=(user[0] + "@" if len(user) == 2 else "") + self.address))

    def close(self):
        self.proc.kill()
        self.proc.wait()


def db_rows(path, sql, args=()):
    """Rows of sql from the store at path: an SQLite file, or a
    postgresql:// URL."""
    if path.startswith("postgresql://") or path.startswith("postgres://"):
        return _pg_rows(path, sql, args)
    conn = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def wait_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    _report_workers()
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def _report_workers(lines=8):
    """The last lines of every worker's log, and whether it still runs: what
    a test that waited in vain can show of what they were doing instead
    (CI keeps only the test's output)."""
    for w in _started_workers:
        try:
            tail = "".join(w.log().splitlines(True)[-lines:])
        except OSError as e:
            tail = "(%s)\n" % e
        state = "running" if w.alive() else "exited with %s" % w.proc.returncode
        print("--- %s (%s), last lines:\n%s" % (w.log_path, state, tail), end="", flush=True)


class Checks:
    """Collects results; ends with the plain 'N passed, N failed' line."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return ok

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        if not self.failed:
            for path in _tempdirs:
                shutil.rmtree(path, ignore_errors=True)
        sys.exit(1 if self.failed else 0)


def audit(checks, db, hosts, published_ids, events, overcommit_cpu=4.0):
    """The audit every fault test ends with: published vs recorded vs final,
    reservations vs capacity, vmids unique, events delivered. Prints it."""
    tasks = dict((r[0], r) for r in db_rows(db, "SELECT id, status, reason, node, vmid FROM tasks"))
    final = [t for t in tasks.values() if t[1] in ("completed", "failed")]
    completed = [t for t in tasks.values() if t[1] == "completed"]
    missing = [i for i in published_ids if i not in tasks]
    not_final = [i for i in published_ids if i in tasks and tasks[i][1] not in ("completed", "failed")]
    vmids = [t[4] for t in completed]
    reserved = db_rows(db, "SELECT node, SUM(cpu), SUM(memory), COUNT(*) FROM reservations "
                           "WHERE released_at IS NULL GROUP BY node")
    capacity = dict((h["name"], h) for h in hosts)
    over = [r[0] for r in reserved
            if r[1] > capacity[r[0]]["cpu"] * overcommit_cpu or r[2] > capacity[r[0]]["memory"]]
    event_tasks = {}
    event_ids = set()
    duplicates = 0
    for props, body in events:
        event = json.loads(body)
        if event["id"] in event_ids:
            duplicates += 1
            continue
        event_ids.add(event["id"])
        if event["type"] in PROGRESS_EVENTS:
            continue  # a task may retry many times; its outcome is the final event
        event_tasks.setdefault(event["data"]["task_id"], []).append(event["type"])
    twice = [t for t, types in event_tasks.items() if len(types) > 1]
    no_event = [t[0] for t in final if t[0] not in event_tasks]
    unconfirmed = db_rows(db, "SELECT COUNT(*) FROM outbox WHERE confirmed_at IS NULL")[0][0]
    if db.startswith("postgres"):
        # The server keeps its own files consistent; check what the schema
        # promises the workers: every reservation belongs to a recorded task.
        integrity = db_rows(db, "SELECT CASE WHEN EXISTS (SELECT 1 FROM reservations r WHERE NOT "
                                "EXISTS (SELECT 1 FROM tasks t WHERE t.id = r.task_id)) "
                                "THEN 'a reservation without its task' ELSE 'ok' END")[0][0]
    else:
        integrity = db_rows(db, "PRAGMA integrity_check")[0][0]
    print("audit: published=%d recorded=%d final=%d completed=%d | hosts overcommitted=%d | "
          "vmids given twice=%d | events: distinct=%d duplicates=%d tasks-with-two-outcomes=%d "
          "final-without-event=%d outbox-unconfirmed=%d | store integrity: %s"
          % (len(published_ids), len(tasks), len(final), len(completed), len(over),
             len(vmids) - len(set(vmids)), len(event_ids), duplicates, len(twice), len(no_event),
             unconfirmed, integrity), flush=True)
    checks.check(integrity == "ok", "the store passes its integrity check: %s" % integrity)
    checks.check(not missing, "every published task recorded (missing: %s)" % missing[:5])
    checks.check(not not_final, "every task final (not final: %s)" % not_final[:5])
    checks.check(not over, "no host overcommitted (%s)" % over[:5])
    checks.check(len(vmids) == len(set(vmids)), "no vmid given twice")
    checks.check(not twice, "no task announced with two outcomes (%s)" % twice[:5])
    checks.check(not no_event, "every final task has its event (%s)" % no_event[:5])
    return tasks


# Events that tell where a task is, not how it ended (schema/event.json).
PROGRESS_EVENTS = ("task.retrying", "spare.provisioning", "spare.waiting_ready", "task.preempted")


_tempdirs = []  # made by tempdir: removed by Checks.finish when every check passed


def tempdir(tag):
    """A new directory in $TMPDIR for a test's files (config, logs, store).
    A test that ends with every check passed removes it (Checks.finish);
    a failed one, or a benchmark, leaves it to be read."""
    path = tempfile.mkdtemp(prefix="vf-%s-" % tag)
    _tempdirs.append(path)
    return path


# ---- the programs' HTTP endpoints (worker.http_listen, relay.http_listen) ----

def http_get(port, path):
    """(status, body text) of GET http://127.0.0.1:port/path; 4xx/5xx too."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text format -> ({(name, frozenset of (label, raw value))}: value,
    set of family names from # TYPE). Fails on a line that is not a sample."""
    samples, families = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.add(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        samples[(m.group(1), frozenset(_LABEL.findall(m.group(3) or "")))] = float(m.group(4))
    return samples, families


def metric_value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def process_checks(samples, families, check, program):
    """process_* and virtflow_build_info in a scrape (issue 26 item 5)."""
    import os as _os
    import re as _re
    import time as _time
    with open(_os.path.join(SOURCE, "CMakeLists.txt")) as f:
        version = _re.search(r"project\(virtflow VERSION ([0-9.]+)", f.read()).group(1)
    info = [labels for (name, labels) in samples if name == "virtflow_build_info"]
    check(len(info) == 1 and ("version", version) in info[0]
          and samples[("virtflow_build_info", info[0])] == 1,
          "%s: virtflow_build_info{version=%s} 1 (%r)" % (program, version, info))
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_max_fds", "process_start_time_seconds"):
        check(name in families and (name, frozenset()) in samples, "%s: %s exported" % (program, name))
    value = lambda name: samples.get((name, frozenset()), -1)
    check(value("process_resident_memory_bytes") > 1 << 20, "%s: resident memory over 1 MiB" % program)
    check(value("process_open_fds") >= 3, "%s: open fds counted (%s)" % (program, value("process_open_fds")))
    check(value("process_cpu_seconds_total") >= 0, "%s: CPU seconds read" % program)
    start = value("process_start_time_seconds")
    check(_time.time() - 3600 < start <= _time.time() + 1,
          "%s: started within the last hour (%s)" % (program, start))


def deploy_metric_names():
    """Metric family names the alert rules and the dashboard use (histogram
    suffixes taken off), so the tests can check each exists in a real scrape."""
    names = set()
    for rel in ("deploy/prometheus/rules.yml", "deploy/grafana/virtflow-dashboard.json"):
        with open(os.path.join(SOURCE, rel)) as f:
            for name in re.findall(r"virtflow_[a-z0-9_]+", f.read()):
                names.add(re.sub(r"_(bucket|sum|count)$", "", name))
    return names


def openapi_problems(exchanges):
    """What schema/openapi.json does not describe among `exchanges`, a list
    of (method, path, status, content type, parsed body) a test recorded:
    each answer needs a documented status and content type and a body its
    schema accepts (an undocumented route only 404 or 405). Needs
    python3-jsonschema."""
    import jsonschema
    with open(os.path.join(SOURCE, "schema", "openapi.json")) as f:
        doc = json.load(f)
    store = {}
    for name in ("request.task.schedule.json", "request.spare.prepare.json",
                 "request.spare.release.json"):
        with open(os.path.join(SOURCE, "schema", name)) as f:
            store["http://api.invalid/" + name] = json.load(f)
    resolver = jsonschema.RefResolver("http://api.invalid/openapi.json", doc, store=store)

    def template_of(path):
        for template in doc["paths"]:
            pattern = "^" + "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", template)) + "$"
            if re.match(pattern, path):
                return template
        return None
    problems = []
    for method, path, status, content_type, body in exchanges:
        template = template_of(path.split("?")[0])
        op = doc["paths"].get(template, {}).get(method.lower()) if template else None
        if op is None:
            if status not in (404, 405):
                problems.append("%s %s: undocumented, answered %s" % (method, path, status))
            continue
        response = op["responses"].get(str(status))
        if response is None:
            problems.append("%s %s: status %s not documented" % (method, path, status))
            continue
        if "$ref" in response:
            response = doc["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        media = content_type.split(";")[0].strip()
        if media not in response.get("content", {}):
            problems.append("%s %s %s: %r not documented" % (method, path, status, media))
            continue
        try:
            jsonschema.Draft202012Validator(response["content"][media]["schema"],
                                            resolver=resolver).validate(body)
        except jsonschema.ValidationError as e:
            problems.append("%s %s %s: %s" % (method, path, status, e.message))
    return problems
def bash_complete(script, words, cwd, env=None):
    """COMPREPLY of virtflowctl's bash completion `script` for the command
    line `words` (the last being the word under the cursor), run in cwd;
    None when bash failed."""
    line = " ".join("'%s'" % w for w in words)
    program = ('source "$1"; cd "$2"; COMP_WORDS=(%s); COMP_CWORD=%d; _virtflowctl; '
               'complete -p virtflowctl >/dev/null || exit 9; printf "%%s\\n" "${COMPREPLY[@]}"'
               % (line, len(words) - 1))
    proc = subprocess.run(["bash", "-c", program, "bash", script, cwd], capture_output=True,
                          text=True, timeout=30, env=env)
    if proc.returncode != 0:
        print("bash failed (%d): %s" % (proc.returncode, proc.stderr))
        return None
    return sorted(w for w in proc.stdout.split("\n") if w)

