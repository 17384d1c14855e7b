#!/usr/bin/env python3
"""A small HTTP server on loopback that plays the remote inventory APIs in tests.

It stands in for systems a test cannot run: virtflow-scheduler's node API and
the Proxmox VE API. It serves fixture files on given paths, answers as those
APIs do, and can be told to fail.

Usage:
  fake_http.py --route /nodes=fixtures/inventory/nodeapi/nodes.json ...
               [--proxmox-token 'USER@REALM!TOKENID=SECRET']

On start it binds 127.0.0.1 on an ephemeral port and prints the port as the
first line of stdout. Paths under /api2/ require the header
"Authorization: PVEAPIToken=<token>" when --proxmox-token is given, and answer
401 otherwise, as Proxmox does.

Control (the test drives the fake over HTTP):
  GET /_control/mode?m=ok|500|garbage|hang   how every route answers from now on
  GET /_control/serve?path=/nodes&file=F     serve file F on path
  GET /_control/requests                     JSON count of requests per path
Also: /redirect answers 302 to /nodes (clients must not follow it).
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self, routes, token):
        self.lock = threading.Lock()
        self.routes = dict(routes)
        self.token = token
        self.mode = "ok"
        self.requests = {}


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # keep test output quiet
            pass

        def send(self, code, body, content_type="application/json", reason=None, extra=None):
            data = body if isinstance(body, bytes) else body.encode()
            self.send_response(code, reason)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def control(self, url):
            query = parse_qs(url.query)
            with state.lock:
                if url.path == "/_control/mode":
                    state.mode = query["m"][0]
                elif url.path == "/_control/serve":
                    state.routes[query["path"][0]] = query["file"][0]
                elif url.path == "/_control/requests":
                    return self.send(200, json.dumps(state.requests))
                else:
                    return self.send(404, '{"error": "unknown control"}')
            self.send(200, '{"ok": true}')

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path.startswith("/_control/"):
                return self.control(url)
            with state.lock:
                state.requests[url.path] = state.requests.get(url.path, 0) + 1
                mode = state.mode
                file = state.routes.get(url.path)
                token = state.token

            if url.path.startswith("/api2/") and token is not None:
                if self.headers.get("Authorization") != "PVEAPIToken=" + token:
                    return self.send(401, "", reason="No ticket")
            if mode == "500":
                return self.send(500, '{"error": "internal"}')
            if mode == "garbage":
                return self.send(200, "<html>502 Bad Gateway</html>\n", "text/html")
            if mode == "hang":
                time.sleep(60)  # longer than any client timeout in the tests
                return self.send(200, "[]")
            if url.path == "/redirect":
                return self.send(302, "", extra={"Location": "/nodes"})
            if file is None:
                return self.send(404, '{"error": "not found"}')
            with open(file, "rb") as f:
                self.send(200, f.read())

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--route", action="append", default=[], help="PATH=FILE")
    parser.add_argument("--proxmox-token", default=None)
    args = parser.parse_args()
    routes = [tuple(r.split("=", 1)) for r in args.route]
    state = State(routes, args.proxmox_token)

    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
