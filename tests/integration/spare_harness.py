"""Shared pieces of the tests/integration/test_spare_* drivers: the fake GitLab
and Kubernetes APIs (tests/fakes/fake_upgrade_apis.py), a worker whose config
has a spare section with short polls, spare.prepare / spare.release
publishing, and event collection where every spare event is validated
against schema/event.json."""
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import validate_event  # noqa: E402
import vftest  # noqa: E402

FAKE = os.path.join(HERE, "..", "fakes", "fake_upgrade_apis.py")


class Fake:
    """The fake APIs as a child process."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(["/usr/bin/python3", FAKE] + list(args), stdout=subprocess.PIPE,
                                     text=True)
        vftest._children.append(self.proc)
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d" % self.port

    def control(self, what):
        with urllib.request.urlopen(self.url + "/_control/" + what, timeout=5) as resp:
            return json.loads(resp.read())

    def state(self):
        return self.control("state")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class World:
    """vhost + directory + inventory + fake + worker config for one test."""

    def __init__(self, tag, n_hosts=4, provisioner="gitlab", readiness="kubernetes",
                 fake_args=(), extra_spare="", anti_affinity="strict", max_attempts=3,
                 command=None, postgresql=False):
        """postgresql: the store in a PostgreSQL schema of its own (VF_PG_URL)
        instead of an SQLite file."""
        vftest.skip_without_broker()
        self.schema = vftest.PgSchema(tag) if postgresql else None
        self.directory = vftest.tempdir(tag)
        self.vhost = vftest.Vhost(tag)
        self.inventory = os.path.join(self.directory, "hosts.json")
        self.hosts = vftest.write_inventory(self.inventory, n_hosts)
        self.fake = Fake(*fake_args)
        for name, token in (("gitlab.token", "glptt-test\n"), ("k8s.token", "k8s-test\n"),
                            ("gitlab-api.token", "glpat-test\n"), ("awx.token", "awx-test\n")):
            with open(os.path.join(self.directory, name), "w") as f:
                f.write(token)
            os.chmod(os.path.join(self.directory, name), 0o600)  # as a secret should be
        spare = """spare:
  anti_affinity: %s
  name_pattern: "spare-{upgrade_id}-{index}"
  provisioner:
    type: %s
    url: %s
    project: "42"
    ref: main
    token_file: %s
    api_token_file: gitlab-api.token
    job_template: 7
    command: %s
    timeout_s: 5
  readiness:
    type: %s
    api_url: %s
    token_file: k8s.token
    poll_s: 1
%s""" % (anti_affinity, provisioner, self.fake.url,
         "awx.token" if provisioner == "awx" else "gitlab.token", json.dumps(command or []), readiness,
         self.fake.url, extra_spare)
        store = 'url: "%s"' % self.schema.url if self.schema else None
        self.config = vftest.write_config(self.directory, self.vhost.url, self.inventory, spare,
                                          store=store)
        with open(self.config) as f:
            text = f.read().replace("max_attempts: 3", "max_attempts: %d" % max_attempts)
        with open(self.config, "w") as f:
            f.write(text)
        self.db = self.schema.url if self.schema else os.path.join(self.directory, "virtflow.db")
        vftest.declare_topology_queue(self.vhost.url, "test.events")
        self.events = []  # (routing key, decoded body), every one validated
        self.invalid = []

    def start(self):
        self.worker = vftest.Worker(self.config, self.directory).start()
        vftest.wait_until(lambda: "consuming" in self.worker.log(), 30, "the worker to consume")
        return self.worker

    def prepare(self, task_id, upgrade_id, count=2, ready_timeout_s=5, **fields):
        body = {"task_id": task_id, "upgrade_id": upgrade_id, "cluster": "prod-a", "count": count,
                "requested_cpu": 2, "requested_memory": 4096, "requested_disk": 20,
                "ready_timeout_s": ready_timeout_s}
        body.update(fields)
        vftest.publish(self.vhost.url, [(body, {"routing_key": "spare.prepare"})])

    def release(self, task_id, upgrade_id):
        vftest.publish(self.vhost.url, [({"upgrade_id": upgrade_id},
                                         {"routing_key": "spare.release", "message_id": task_id})])

    def task(self, task_id):
        rows = vftest.db_rows(self.db, "SELECT status, reason, error FROM tasks WHERE id = ?",
                              (task_id,))
        return rows[0] if rows else (None, None, None)

    def wait_status(self, task_id, statuses, timeout=40):
        vftest.wait_until(lambda: self.task(task_id)[0] in statuses, timeout,
                          "task %s to reach %s (now %s)" % (task_id, statuses, self.task(task_id)))
        return self.task(task_id)

    def collect(self, timeout=2.0):
        """Events published so far (validated); returns all seen in this test."""
        for props, body in vftest.drain(self.vhost.url, "test.events", timeout=timeout):
            event = json.loads(body)
            errors = validate_event.event_errors(body, routing_key="event." + event["type"],
                                                 message_id=props.message_id)
            if errors:
                self.invalid.append((event, errors))
            self.events.append(event)
        return self.events

    def wait_event(self, task_id, event_type, timeout=30):
        def seen():
            self.collect(timeout=0.5)
            return any(e["type"] == event_type and e["data"].get("task_id") == task_id
                       for e in self.events)
        vftest.wait_until(seen, timeout, "event %s for %s" % (event_type, task_id))
        return [e for e in self.events
                if e["type"] == event_type and e["data"].get("task_id") == task_id][-1]

    def live_reservations(self, task_id):
        return vftest.db_rows(self.db, "SELECT COUNT(*) FROM reservations WHERE task_id = ? AND "
                                       "released_at IS NULL", (task_id,))[0][0]

    def spares(self, task_id):
        return vftest.db_rows(self.db, "SELECT name, node, vmid, state FROM spares WHERE task_id = ? "
                                       "ORDER BY spare_index", (task_id,))

    def history(self, task_id):
        return vftest.db_rows(self.db, "SELECT status, detail FROM task_events WHERE task_id = ? "
                                       "ORDER BY id", (task_id,))

    def close(self):
        try:
            if getattr(self, "worker", None) and self.worker.alive():
                self.worker.stop()
        finally:
            self.fake.stop()
            self.vhost.close()
            if self.schema:
                self.schema.close()

    def check_events_valid(self, checks):
        self.collect(timeout=0.5)
        checks.check(not self.invalid, "every event matches schema/event.json (%s)" % self.invalid[:2])


PAUSED_PROVISIONER = """#!/usr/bin/python3
import json, os, time
def note(event):
    with open(%(record)r, "a") as f:
        f.write(json.dumps({"event": event, "ppid": os.getppid(),
                            "action": os.environ.get("VIRTFLOW_ACTION"),
                            "name": os.environ.get("VIRTFLOW_VM_NAME"),
                            "key": os.environ.get("VIRTFLOW_IDEMPOTENCY_KEY")}) + "\\n")
note("start")
if os.environ.get("VIRTFLOW_ACTION") == "create":
    time.sleep(3)
note("end")
"""


def paused_holder(kind, checks):
    """Two workers on one store (kind: "sqlite" or "postgresql"). The one
    driving the spares is paused (SIGSTOP) in the middle of a create, longer
    than the "spares" lease lives; the other takes the lease over and runs
    the same create again. Whatever the paused worker does once resumed, the
    repeated create carries the same idempotency key as the first, the stale
    worker's record of it is refused, it calls the provisioner no more, and
    each spare is recorded created once."""
    import signal
    import stat
    directory = vftest.tempdir("paused")
    record = os.path.join(directory, "calls.jsonl")
    script = os.path.join(directory, "provision.py")
    with open(script, "w") as f:
        f.write(PAUSED_PROVISIONER % {"record": record})
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)

    def calls(event="start", action="create"):
        if not os.path.exists(record):
            return []
        with open(record) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return [r for r in rows if r["event"] == event and r["action"] == action]

    world = World("paused" + kind[:2], n_hosts=3, provisioner="command", command=[script],
                  fake_args=["--nodes-exist", "--ready-after-polls", "1"],
                  postgresql=kind == "postgresql")
    paused = b = None
    try:
        a = world.start()
        b = vftest.Worker(world.config, world.directory, name="worker-b").start()
        vftest.wait_until(lambda: "consuming" in b.log(), 30, "the second worker to consume")
        workers = {a.proc.pid: a, b.proc.pid: b}
        world.prepare("paused-1", "upg-paused", count=2, ready_timeout_s=60)
        vftest.wait_until(lambda: calls(), 30, "the first create to start")
        first = calls()[0]
        paused = workers.get(first["ppid"])
        checks.check(paused is not None, "%s: a worker runs the first create (%s)" % (kind, first))
        if paused is None:
            return
        other = b if paused is a else a
        os.kill(paused.proc.pid, signal.SIGSTOP)
        print("%s: paused the worker running the create of %s (pid %d)"
              % (kind, first["name"], paused.proc.pid), flush=True)
        again = lambda: [c for c in calls() if c["name"] == first["name"]
                         and c["ppid"] == other.proc.pid]
        try:
            vftest.wait_until(again, 45, "the other worker to take the lease and create again")
        finally:
            os.kill(paused.proc.pid, signal.SIGCONT)
        print("%s: resumed it once the other worker ran the same create" % kind, flush=True)
        status = world.wait_status("paused-1", ("ready", "failed"), timeout=60)
        checks.check(status[0] == "ready", "%s: the spares reach ready (%s)" % (kind, (status,)))

        creates = calls()
        keys = {}
        for c in creates:
            keys.setdefault(c["name"], set()).add(c["key"])
        print("%s: creates %s" % (kind, [(c["name"], c["ppid"], c["key"]) for c in creates]))
        checks.check(all(c["key"] for c in creates),
                     "%s: every create carries an idempotency key" % kind)
        checks.check(len(keys) == 2 and all(len(k) == 1 for k in keys.values()),
                     "%s: the repeated create has the first one's key, one key per spare (%s)"
                     % (kind, keys))
        checks.check(len(set().union(*keys.values())) == 2 if keys else False,
                     "%s: the two spares have different keys" % kind)
        stale = [c for c in creates if c["ppid"] == paused.proc.pid]
        checks.check(len(stale) == 1,
                     "%s: the resumed worker calls the provisioner no more (%d creates)"
                     % (kind, len(stale)))
        log = paused.log()
        checks.check("fenced" in log, "%s: the resumed worker's record is refused (fenced)" % kind)
        checks.check("spare %s created" % first["name"] not in log,
                     "%s: the resumed worker records no create" % kind)
        created = {}
        for _, detail in world.history("paused-1"):
            d = json.loads(detail) if detail else {}
            if d.get("step") == "created":
                created[d["spare"]] = created.get(d["spare"], 0) + 1
        checks.check(sorted(created.values()) == [1, 1],
                     "%s: each spare recorded created once (%s)" % (kind, created))
        checks.check(other.stop() == 0, "%s: the other worker stops cleanly" % kind)
        checks.check(paused.stop() == 0, "%s: the resumed worker stops cleanly" % kind)
    finally:
        if paused is not None and paused.alive():
            os.kill(paused.proc.pid, signal.SIGCONT)
        if b is not None and b.alive():
            b.stop()
        world.close()
