#!/usr/bin/env python3
"""Fake GitLab pipeline-trigger API and Kubernetes node API on loopback, for
the spare tests (systems a test cannot run). Standard library only.

  GitLab:     POST /api/v4/projects/<id>/trigger/pipeline (form: token, ref,
              variables[...]) -> 201 {"id", "iid", "project_id", "sha", "ref",
              "status": "created", "source": "trigger", "web_url", ...}
              401 {"message": "401 Unauthorized"} for a wrong token
              GET /api/v4/projects/<id>/pipelines/<pipeline_id> with PRIVATE-TOKEN
              -> 200 {"id", "iid", "project_id", "status", "ref", "sha",
              "source", "web_url", ...}; status created, then running, then
              the outcome set by /_control/pipeline (default success) after
              --pipeline-polls GETs; 401 without the read_api token, 404 unknown
  Kubernetes: GET /api/v1/nodes/<name> with "Authorization: Bearer <token>"
              -> 200 {"kind": "Node", "apiVersion": "v1", "metadata": {"name"},
              "status": {"conditions": [{"type": "Ready", "status": "True"|"False",
              ...}]}} once the node exists; 404 {"kind": "Status", "reason":
              "NotFound", "code": 404, ...} before; 401 for a wrong token

              PATCH /api/v1/nodes/<name> (strategic merge patch) -> 200 Node;
              spec.unschedulable recorded (cordon)
              DELETE /api/v1/nodes/<name> -> 200 Status Success, 404 when gone
              GET /api/v1/pods?fieldSelector=spec.nodeName=<name> -> 200 PodList
              of the pods given with --pods (NODE/NS/NAME[/pdb|/daemonset])
              POST /api/v1/namespaces/<ns>/pods/<name>/eviction (policy/v1
              Eviction) -> 201; 429 TooManyRequests once for a pod marked pdb
              ("Cannot evict pod as it would violate the pod's disruption budget.")

  AWX:        POST /api/v2/job_templates/7/launch/ (JSON {"extra_vars": {...}},
              Authorization: Bearer <awx token>) -> 201 {"job": id, "id": id,
              "status": "pending", ...}; GET /api/v2/jobs/<id>/ -> pending,
              then running, then the outcome set by /_control/job after
              --pipeline-polls GETs; 401 {"detail": ...} without the token,
              404 {"detail": "Not found."} for another template or job

A node "exists" once a create pipeline was triggered for its VM_NAME (or at
once with --nodes-exist, for the command provisioner), and turns Ready after
--ready-after-polls GETs (-1: never). Prints the port as the first line.

Control (GET, JSON answers):
  /_control/gitlab?status=201|401|500|...   how triggers answer from now on
  /_control/k8s?status=200|503|...          503: the API is "down"
  /_control/ready_after?n=N                 polls before Ready (-1 never)
  /_control/pipeline?status=success|failed|canceled  how pipelines end from now on
  /_control/job?status=successful|failed|error|canceled  how AWX jobs end from now on
  /_control/state                           triggers (their form fields), polls per node,
                                            cordoned, evictions (ns/name, code), deleted
"""
import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.gitlab_token = args.gitlab_token
        self.k8s_token = args.k8s_token
        self.gitlab_status = 201
        self.k8s_status = 200
        self.ready_after = args.ready_after_polls
        self.nodes_exist = args.nodes_exist
        self.triggers = []      # form fields of each trigger (token removed)
        self.polls = {}         # node name -> GETs answered
        self.created = set()    # node names with a create trigger
        self.next_id = 1000
        self.gitlab_api_token = args.gitlab_api_token
        self.pipeline_outcome = "success"
        self.pipeline_polls = args.pipeline_polls
        self.pipelines = {}     # id -> {"project", "polls", "outcome", "ref"}
        self.awx_token = args.awx_token
        self.job_outcome = "successful"
        self.jobs = {}          # AWX job id -> {"template", "polls", "outcome", "extra_vars"}
        self.launches = []      # AWX launch bodies, with the answered status
        self.pods = []          # {"node", "namespace", "name", "pdb", "daemonset"}
        for spec in args.pods:
            parts = spec.split("/")
            self.pods.append({"node": parts[0], "namespace": parts[1], "name": parts[2],
                              "pdb": "pdb" in parts[3:], "daemonset": "daemonset" in parts[3:],
                              "refused": 0})
        self.cordoned = []
        self.evictions = []     # [ns/name, code]
        self.deleted = []


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def send(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            with state.lock:
                if url.path == "/_control/gitlab":
                    state.gitlab_status = int(query["status"][0])
                    return self.send(200, {"ok": True})
                if url.path == "/_control/k8s":
                    state.k8s_status = int(query["status"][0])
                    return self.send(200, {"ok": True})
                if url.path == "/_control/ready_after":
                    state.ready_after = int(query["n"][0])
                    return self.send(200, {"ok": True})
                if url.path == "/_control/pipeline":
                    state.pipeline_outcome = query["status"][0]
                    return self.send(200, {"ok": True})
                if url.path == "/_control/job":
                    state.job_outcome = query["status"][0]
                    return self.send(200, {"ok": True})
                if url.path == "/_control/state":
                    return self.send(200, {"triggers": state.triggers, "polls": state.polls,
                                           "jobs": state.jobs, "launches": state.launches,
                                           "cordoned": state.cordoned, "evictions": state.evictions,
                                           "deleted": state.deleted,
                                           "pipelines": state.pipelines})
                if url.path.startswith("/api/v1/nodes/"):
                    return self.node(url.path[len("/api/v1/nodes/"):])
                if url.path == "/api/v1/pods":
                    return self.pods(query)
                parts = url.path.split("/")
                if url.path.startswith("/api/v4/projects/") and len(parts) == 7 and parts[5] == "pipelines":
                    return self.pipeline(parts[4], parts[6])
                if url.path.startswith("/api/v2/jobs/") and len(parts) == 6 and parts[5] == "":
                    return self.awx_job(parts[4])
            self.send(404, {"message": "404 Not Found"})

        def awx_denied(self):
            if self.headers.get("Authorization") != "Bearer " + state.awx_token:
                self.send(401, {"detail": "Authentication credentials were not provided. "
                                          "To establish a login session, visit /api/login/."})
                return True
            return False

        def awx_job_body(self, jid, job, status):
            # The fields of GET /api/v2/jobs/{id}/ a client reads (AWX's
            # JobSerializer); extra_vars is a JSON text there.
            finished = status in ("successful", "failed", "error", "canceled")
            return {"id": jid, "type": "job", "url": "/api/v2/jobs/%d/" % jid,
                    "related": {"job_template": "/api/v2/job_templates/%s/" % job["template"],
                                "stdout": "/api/v2/jobs/%d/stdout/" % jid},
                    "name": "spares", "launch_type": "manual", "status": status,
                    "failed": status in ("failed", "error"),
                    "started": None if status in ("new", "pending", "waiting") else "2026-01-01T00:00:00.000000Z",
                    "finished": "2026-01-01T00:01:00.000000Z" if finished else None,
                    "canceled_on": None, "elapsed": 60.0 if finished else 0.0,
                    "job_explanation": "", "job_type": "run", "playbook": "spares.yml",
                    "job_template": int(job["template"]),
                    "extra_vars": json.dumps(job["extra_vars"])}

        def awx_job(self, jid):
            if self.awx_denied():
                return
            job = state.jobs.get(jid)
            if job is None:
                return self.send(404, {"detail": "Not found."})
            job["polls"] += 1
            if job["polls"] <= 1:
                status = "pending"
            elif job["polls"] <= state.pipeline_polls:
                status = "running"
            else:
                status = job["outcome"]
                if status == "successful" and job["extra_vars"].get("action") == "create":
                    state.created.add(job["extra_vars"].get("vm_name"))
            self.send(200, self.awx_job_body(int(jid), job, status))

        def awx_launch(self, template, raw):
            if self.awx_denied():
                return
            try:
                body = json.loads(raw or "{}")
            except ValueError:
                return self.send(400, {"detail": "JSON parse error"})
            extra = body.get("extra_vars", {})
            if isinstance(extra, str):
                extra = json.loads(extra or "{}")
            state.launches.append({"template": template, "extra_vars": extra,
                                   "answered": state.gitlab_status})
            if template != "7":
                return self.send(404, {"detail": "Not found."})
            if state.gitlab_status != 201:
                return self.send(state.gitlab_status, {"detail": "%d fake failure" % state.gitlab_status})
            if extra.get("action") != "create":
                state.created.discard(extra.get("vm_name"))
            state.next_id += 1
            jid = state.next_id
            job = {"template": template, "polls": 0, "outcome": state.job_outcome, "extra_vars": extra}
            state.jobs[str(jid)] = job
            # POST .../launch/ answers 201 with the new job: "job" (its id)
            # beside the job's own fields, and "ignored_fields".
            answer = self.awx_job_body(jid, job, "pending")
            answer["job"] = jid
            answer["ignored_fields"] = {}
            self.send(201, answer)

        def k8s_denied(self):
            if self.headers.get("Authorization") != "Bearer " + state.k8s_token:
                self.send(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
                return True
            return False

        def not_found(self, kind, name):
            self.send(404, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "reason": "NotFound", "code": 404,
                            "message": '%s "%s" not found' % (kind, name),
                            "details": {"name": name, "kind": kind}})

        def pipeline(self, project, pid):
            if self.headers.get("PRIVATE-TOKEN") != state.gitlab_api_token:
                return self.send(401, {"message": "401 Unauthorized"})
            p = state.pipelines.get(pid)
            if p is None or p["project"] != project:
                return self.send(404, {"message": "404 Not found"})
            p["polls"] += 1
            if p["polls"] <= 1:
                status = "created"
            elif p["polls"] <= state.pipeline_polls:
                status = "running"
            else:
                status = p["outcome"]
                if p["outcome"] == "success" and p["action"] == "create":
                    state.created.add(p["vm"])
            self.send(200, {"id": int(pid), "iid": int(pid) - 1000,
                            "project_id": int(project) if project.isdigit() else 1,
                            "sha": "a91957a858320c0e17f3a0eca7cfacbff50ea29a", "ref": p["ref"],
                            "status": status, "source": "trigger",
                            "created_at": "2026-01-01T00:00:00.000Z",
                            "updated_at": "2026-01-01T00:00:00.000Z",
                            "web_url": "http://gitlab.invalid/infra/spares/-/pipelines/%s" % pid})

        def pods(self, query):
            if self.k8s_denied():
                return
            selector = query.get("fieldSelector", [""])[0]
            node = selector[len("spec.nodeName="):] if selector.startswith("spec.nodeName=") else None
            items = []
            for pod in state.pods:
                if node is not None and pod["node"] != node:
                    continue
                metadata = {"name": pod["name"], "namespace": pod["namespace"]}
                if pod["daemonset"]:
                    metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                    "name": "ds", "controller": True}]
                items.append({"metadata": metadata, "spec": {"nodeName": pod["node"]},
                              "status": {"phase": "Running"}})
            self.send(200, {"kind": "PodList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "1"}, "items": items})

        def do_PATCH(self):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with state.lock:
                if self.k8s_denied():
                    return
                if not url.path.startswith("/api/v1/nodes/"):
                    return self.send(404, {"message": "404 Not Found"})
                name = url.path[len("/api/v1/nodes/"):]
                if name not in state.created and not state.nodes_exist:
                    return self.not_found("nodes", name)
                if body.get("spec", {}).get("unschedulable"):
                    state.cordoned.append(name)
                self.send(200, {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name},
                                "spec": {"unschedulable": True}})

        def do_DELETE(self):
            url = urlsplit(self.path)
            with state.lock:
                if self.k8s_denied():
                    return
                if not url.path.startswith("/api/v1/nodes/"):
                    return self.send(404, {"message": "404 Not Found"})
                name = url.path[len("/api/v1/nodes/"):]
                if name in state.deleted or (name not in state.created and not state.nodes_exist):
                    return self.not_found("nodes", name)
                state.deleted.append(name)
                state.pods = [p for p in state.pods if p["node"] != name]
                self.send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success", "details": {"name": name, "kind": "nodes"}})

        def eviction(self, ns, name, body):
            if self.k8s_denied():
                return
            pod = next((p for p in state.pods if p["namespace"] == ns and p["name"] == name), None)
            if pod is None:
                return self.not_found("pods", name)
            if body.get("kind") != "Eviction" or body.get("apiVersion") != "policy/v1":
                return self.send(400, {"kind": "Status", "status": "Failure", "code": 400,
                                       "message": "not a policy/v1 Eviction"})
            if pod["pdb"] and pod["refused"] == 0:
                pod["refused"] += 1
                state.evictions.append(["%s/%s" % (ns, name), 429])
                return self.send(429, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                                       "reason": "TooManyRequests", "code": 429,
                                       "details": {"causes": [{"reason": "DisruptionBudget",
                                                               "message": "The disruption budget pdb needs 1 healthy pods and has 1 currently"}]}})
            state.evictions.append(["%s/%s" % (ns, name), 201])
            state.pods.remove(pod)
            self.send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201})

        def node(self, name):
            if self.k8s_denied():
                return
            if state.k8s_status != 200:
                return self.send(state.k8s_status, {"kind": "Status", "apiVersion": "v1",
                                                    "status": "Failure", "code": state.k8s_status,
                                                    "message": "service unavailable"})
            if (name not in state.created and not state.nodes_exist) or name in state.deleted:
                return self.not_found("nodes", name)
            polls = state.polls.get(name, 0) + 1
            state.polls[name] = polls
            ready = state.ready_after >= 0 and polls > state.ready_after
            self.send(200, {
                "kind": "Node", "apiVersion": "v1",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {},
                "status": {"conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                    {"type": "Ready", "status": "True" if ready else "False",
                     "reason": "KubeletReady" if ready else "KubeletNotReady",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})

        def do_POST(self):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length).decode()
            parts = url.path.split("/")
            if url.path.startswith("/api/v1/namespaces/") and url.path.endswith("/eviction") and len(parts) == 8:
                with state.lock:
                    return self.eviction(parts[4], parts[6], json.loads(raw or "{}"))
            if url.path.startswith("/api/v2/job_templates/") and url.path.endswith("/launch/") and len(parts) == 7:
                with state.lock:
                    return self.awx_launch(parts[4], raw)
            form = parse_qs(raw, keep_blank_values=True)
            fields = dict((k, v[0]) for k, v in form.items())
            if not (url.path.startswith("/api/v4/projects/") and url.path.endswith("/trigger/pipeline")):
                return self.send(404, {"message": "404 Not Found"})
            with state.lock:
                if fields.get("token") != state.gitlab_token:
                    return self.send(401, {"message": "401 Unauthorized"})
                record = dict(fields)
                record.pop("token")
                record["project"] = parts[4]
                record["answered"] = state.gitlab_status
                state.triggers.append(record)
                if state.gitlab_status != 201:
                    return self.send(state.gitlab_status, {"message": "%d fake failure" % state.gitlab_status})
                name = fields.get("variables[VM_NAME]", "")
                action = fields.get("variables[ACTION]")
                # The node joins once its pipeline succeeds (when polled), or at once for
                # a client that never asks.
                if action == "create" and state.pipeline_outcome == "success":
                    state.created.add(name)
                elif action != "create":
                    state.created.discard(name)
                state.next_id += 1
                pid = state.next_id
                state.pipelines[str(pid)] = {"project": parts[4], "polls": 0, "ref": fields.get("ref"),
                                             "outcome": state.pipeline_outcome, "vm": name,
                                             "action": action}
            self.send(201, {"id": pid, "iid": pid - 1000, "project_id": int(parts[4]) if parts[4].isdigit() else 1,
                            "sha": "a91957a858320c0e17f3a0eca7cfacbff50ea29a", "ref": fields.get("ref"),
                            "status": "created", "source": "trigger",
                            "created_at": "2026-01-01T00:00:00.000Z",
                            "updated_at": "2026-01-01T00:00:00.000Z",
                            "web_url": "http://gitlab.invalid/infra/spares/-/pipelines/%d" % pid})

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gitlab-token", default="glptt-test")
    parser.add_argument("--k8s-token", default="k8s-test")
    parser.add_argument("--ready-after-polls", type=int, default=1)
    parser.add_argument("--nodes-exist", action="store_true")
    parser.add_argument("--gitlab-api-token", default="glpat-test")
    parser.add_argument("--pipeline-polls", type=int, default=2,
                        help="GETs of a pipeline before it ends (created, running..., outcome)")
    parser.add_argument("--awx-token", default="awx-test")
    parser.add_argument("--pods", action="append", default=[],
                        help="NODE/NAMESPACE/NAME[/pdb][/daemonset]: a pod on a node")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(args)))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
