#!/usr/bin/env python3
"""Fake GitLab pipeline-trigger API and Kubernetes node API on loopback, for
the spare tests (systems a test cannot run). Standard library only.

  GitLab:     POST /api/v4/projects/<id>/trigger/pipeline (form: token, ref,
              variables[...]) -> 201 {"id", "iid", "project_id", "sha", "ref",
              "status": "created", "source": "trigger", "web_url", ...}
              401 {"message": "401 Unauthorized"} for a wrong token
  Kubernetes: GET /api/v1/nodes/<name> with "Authorization: Bearer <token>"
              -> 200 {"kind": "Node", "apiVersion": "v1", "metadata": {"name"},
              "status": {"conditions": [{"type": "Ready", "status": "True"|"False",
              ...}]}} once the node exists; 404 {"kind": "Status", "reason":
              "NotFound", "code": 404, ...} before; 401 for a wrong token

A node "exists" once a create pipeline was triggered for its VM_NAME (or at
once with --nodes-exist, for the command provisioner), and turns Ready after
--ready-after-polls GETs (-1: never). Prints the port as the first line.

Control (GET, JSON answers):
  /_control/gitlab?status=201|401|500|...   how triggers answer from now on
  /_control/k8s?status=200|503|...          503: the API is "down"
  /_control/ready_after?n=N                 polls before Ready (-1 never)
  /_control/state                           triggers (their form fields) and polls per node
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
                if url.path == "/_control/state":
                    return self.send(200, {"triggers": state.triggers, "polls": state.polls})
                if url.path.startswith("/api/v1/nodes/"):
                    return self.node(url.path[len("/api/v1/nodes/"):])
            self.send(404, {"message": "404 Not Found"})

        def node(self, name):
            if self.headers.get("Authorization") != "Bearer " + state.k8s_token:
                return self.send(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "message": "Unauthorized", "reason": "Unauthorized",
                                       "code": 401})
            if state.k8s_status != 200:
                return self.send(state.k8s_status, {"kind": "Status", "apiVersion": "v1",
                                                    "status": "Failure", "code": state.k8s_status,
                                                    "message": "service unavailable"})
            if name not in state.created and not state.nodes_exist:
                return self.send(404, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                       "status": "Failure", "reason": "NotFound", "code": 404,
                                       "message": 'nodes "%s" not found' % name,
                                       "details": {"name": name, "kind": "nodes"}})
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
            form = parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
            fields = dict((k, v[0]) for k, v in form.items())
            parts = url.path.split("/")
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
                if fields.get("variables[ACTION]") == "create":
                    state.created.add(name)
                else:
                    state.created.discard(name)
                state.next_id += 1
                pid = state.next_id
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
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(args)))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
