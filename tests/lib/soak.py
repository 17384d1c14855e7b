"""The soak run's driver (tests/soak.sh starts it): minutes of steady load on
worker + relay + receivers while faults are injected at random points, then
the audit and the figures.

Faults: kill -9 of the worker, kill -9 of the relay, broker restarts
(stop_app/start_app when VF_SOAK_OWN_BROKER=1, i.e. soak.sh started a private
node; else every connection of the vhost is closed by force, which the
programs see the same way), and inventory garbage (the inventory file
rewritten with garbage for a few seconds, then restored). One receiver
accepts connections and never answers (the relay must time out and keep
delivering to the others).

Usage: soak.py SECONDS. Prints the figures; exits 1 if a target is missed:
tasks lost, duplicate placements or events never delivered must all be 0."""
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import vftest  # noqa: E402

vftest.skip_without_broker()
from relay_harness import SECRET_A, Receiver  # noqa: E402

DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 180.0
OWN_BROKER = os.environ.get("VF_SOAK_OWN_BROKER") == "1"
RELAY_BIN = os.path.join(vftest.BUILD, "worker", "virtflow-relay")
rng = random.Random(int(os.environ.get("VF_SOAK_SEED", time.time())))


class Silent:
    """A receiver that accepts connections, reads, and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def url(self):
        return "http://127.0.0.1:%d/hook" % self.port


class Proc:
    """A program restarted at will, its log appended to one file."""

    def __init__(self, argv, log_path):
        self.argv = argv
        self.log_path = log_path
        self.proc = None

    def start(self):
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log)
        vftest._children.append(self.proc)

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(timeout=60)


def main():
    directory = vftest.tempdir("soak")
    vhost = vftest.Vhost("soak")
    good = Receiver([SECRET_A]).start()
    silent = Silent()
    faults = {"worker kill -9": 0, "relay kill -9": 0, "broker restart": 0,
              "inventory garbage": 0}
    try:
        inventory = os.path.join(directory, "hosts.json")
        hosts = vftest.write_inventory(inventory, 60, cpu=64, memory=524288)
        with open(inventory) as f:
            inventory_text = f.read()
        config = vftest.write_config(directory, vhost.url, inventory)
        db = os.path.join(directory, "virtflow.db")
        secret = os.path.join(directory, "hook.secret")
        with open(secret, "w") as f:
            f.write(SECRET_A + "\n")
        os.chmod(secret, 0o600)
        relay_config = os.path.join(directory, "relay.yaml")
        relay_db = os.path.join(directory, "relay.db")
        with open(relay_config, "w") as f:
            f.write(vftest.own_ports("amqp:\n  urls: [%s]\n  queue_type: classic\n  heartbeat_s: 5\n"
                    "store:\n  path: %s\nrelay:\n  schedule_s: [0, 1, 1, 2, 2, 5, 5, 5, 5, 5, 5, 5, "
                    "5, 5, 5, 5, 5, 5, 5, 5]\n  receivers:\n"
                    "    - name: good\n      url: %s\n      secret_files: [%s]\n"
                    "    - name: silent\n      url: %s\n      secret_files: [%s]\n"
                    "      timeout_s: 2\n"
                    % (json.dumps(vhost.url), json.dumps(relay_db), json.dumps(good.url()),
                       json.dumps(secret), json.dumps(silent.url()), json.dumps(secret))))
        vftest.declare_topology_queue(vhost.url, "soak.events")
        worker = Proc([vftest.WORKER, "-c", config], os.path.join(directory, "worker.log"))
        relay = Proc([RELAY_BIN, "-c", relay_config], os.path.join(directory, "relay.log"))
        worker.start()
        relay.start()
        vftest.wait_until(lambda: "consuming" in open(worker.log_path).read(), 30, "worker")

        published = []
        stop = threading.Event()

        def publisher():
            n = 0
            while not stop.is_set():
                batch = ["soak-%06d" % (n + i) for i in range(40)]
                n += len(batch)
                try:
                    vftest.publish(vhost.url, [({"task_id": t, "requested_cpu": 1,
                                                 "requested_memory": 1024}, {}) for t in batch])
                    published.extend(batch)
                except Exception as e:  # broker restarting: publish again later
                    print("publisher: %s (retrying the batch)" % type(e).__name__, flush=True)
                    n -= len(batch)
                    time.sleep(1)
                time.sleep(0.25)

        pub = threading.Thread(target=publisher, daemon=True)
        pub.start()
        started = time.time()
        while time.time() - started < DURATION:
            time.sleep(rng.uniform(2, 6))
            kind = rng.choice(list(faults))
            faults[kind] += 1
            print("%5.0f s: %s" % (time.time() - started, kind), flush=True)
            if kind == "worker kill -9":
                worker.kill9()
                time.sleep(rng.uniform(0.2, 2))
                worker.start()
            elif kind == "relay kill -9":
                relay.kill9()
                time.sleep(rng.uniform(0.2, 2))
                relay.start()
            elif kind == "broker restart":
                if OWN_BROKER:
                    vftest.rabbitmqctl("stop_app")
                    time.sleep(rng.uniform(1, 3))
                    vftest.rabbitmqctl("start_app")
                else:
                    vftest.rabbitmqctl("close_all_connections", "--vhost", vhost.name,
                                       "soak: forced close", check=False)
            else:
                with open(inventory, "w") as f:
                    f.write(rng.choice(["{{{ not json", "- name: [", "[]garbage", "\0\1\2",
                                        json.dumps([{"name": "x y"}])]))
                time.sleep(rng.uniform(1, 4))
                with open(inventory, "w") as f:
                    f.write(inventory_text)
        stop.set()
        pub.join()
        print("load stopped after %.0f s; %d tasks published; waiting for the rest"
              % (time.time() - started, len(published)), flush=True)

        def final():
            return vftest.db_rows(db, "SELECT COUNT(*) FROM tasks WHERE status IN "
                                      "('completed','failed')")[0][0]

        vftest.wait_until(lambda: final() >= len(published), 300, "every task final")
        checks = vftest.Checks()
        events = vftest.drain(vhost.url, "soak.events", timeout=10)
        event_ids = set(json.loads(b)["id"] for _, b in events)
        vftest.wait_until(lambda: good.got(event_ids), 300, "every event at the good receiver")
        tasks = vftest.audit(checks, db, hosts, published, events)
        worker.stop()
        relay.stop()
        lost = sum(1 for t in published if t not in tasks or
                   tasks[t][1] not in ("completed", "failed"))
        placements = vftest.db_rows(db, "SELECT task_id, COUNT(*) FROM reservations "
                                        "GROUP BY task_id HAVING COUNT(*) > 1")
        outcomes = {}
        for _, body in events:
            ev = json.loads(body)
            if ev["type"] not in vftest.PROGRESS_EVENTS:
                outcomes.setdefault(ev["data"]["task_id"], set()).add(ev["id"])
        dup_events = sum(1 for ids in outcomes.values() if len(ids) > 1)
        undelivered = sum(1 for i in event_ids if i not in good.ok)
        print("\nsoak figures (%.0f s of faults)" % DURATION)
        print("  tasks published:          %d" % len(published))
        print("  tasks final:              %d" % final())
        print("  events (distinct):        %d" % len(event_ids))
        print("  webhooks delivered:       %d (redelivered after a crash: %d)"
              % (len(good.ok), good.duplicates()))
        print("  faults injected:          %s" % ", ".join("%s x%d" % kv for kv in faults.items()))
        print("  broker restarts were:     %s" % ("stop_app/start_app" if OWN_BROKER
                                                  else "forced connection closes"))
        print("  tasks lost:               %d (target 0)" % lost)
        print("  duplicate placements:     %d (target 0)" % (len(placements) + dup_events))
        print("  events never delivered:   %d (target 0)" % undelivered)
        ok = lost == 0 and not placements and dup_events == 0 and undelivered == 0
        print("  verdict:                  %s" % ("ok" if ok and checks.failed == 0 else "FAILED"))
        print("  files:                    %s" % directory)
        return 0 if ok and checks.failed == 0 else 1
    finally:
        good.stop()
        vhost.close()


if __name__ == "__main__":
    sys.exit(main())
