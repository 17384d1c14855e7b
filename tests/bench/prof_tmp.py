import os, sys, subprocess, time, signal
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import vftest
N = int(sys.argv[1]); out = sys.argv[2]
d = vftest.tempdir("prof")
vh = vftest.Vhost("prof")
inv = os.path.join(d, "hosts.json"); vftest.write_inventory(inv, 1000)
cfg = vftest.write_config(d, vh.url, inv, "")
db = os.path.join(d, "virtflow.db")
w = vftest.Worker(cfg, d, "declare").start()
vftest.wait_until(lambda: "consuming" in w.log(), 30, "declare"); w.stop()
vftest.publish_tasks(vh.url, N, "p")
log = open(os.path.join(d, "w.log"), "w")
p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, vftest.WORKER, "-c", cfg], stdout=log, stderr=log)
t0 = time.time()
while True:
    time.sleep(1)
    try:
        r = vftest.db_rows(db, "SELECT (SELECT COUNT(*) FROM tasks WHERE status IN ('completed','failed')), (SELECT COUNT(*) FROM outbox WHERE confirmed_at IS NULL)")[0]
    except Exception:
        continue
    if r[0] >= N and r[1] == 0: break
    if time.time() - t0 > 900: print("timeout", r); break
p.send_signal(signal.SIGTERM); p.wait()
print("done", N, time.time() - t0)
vh.close()
