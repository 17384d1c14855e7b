#!/usr/bin/python3
"""delay_proxy: a TCP proxy that holds every byte for a fixed delay in each
direction, so that a loopback PostgreSQL looks like one across a network
(bench_shared_store.py; test_workers_shared_store's proxied variant).

  delay_proxy.py --upstream HOST:PORT --rtt-ms 2.0 [--listen HOST:PORT] [--measure URL]

Prints "listening on HOST:PORT" once it accepts, then (with --measure, a
postgresql:// URL naming the upstream server) the round trip it measured:
the median time of `SELECT 1` over one connection through itself, and the
same without it. Runs until killed.

Each direction of each connection has a reader thread, which stamps what it
reads with the time it is due, and a writer thread, which sends it then:
order is kept and the delay does not add up over chunks. time.sleep (not an
event loop's millisecond timeouts) keeps sub-millisecond delays honest."""
import argparse
import hashlib
import queue
import socket
import statistics
import struct
import sys
import threading
import time
import urllib.parse


class Delay:
    """Seconds each way, read at every chunk (the measurement may correct it)."""

    def __init__(self, seconds):
        self.seconds = seconds


def pump(source, sink, delay):
    due = queue.Queue()

    def writer():
        while True:
            when, data = due.get()
            if data is None:
                break
            wait = when - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                sink.sendall(data)
            except OSError:
                break
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    while True:
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        due.put((time.monotonic() + delay.seconds, data or None))
        if not data:
            break
    thread.join()


def serve_one(client, upstream, delay):
    try:
        server = socket.create_connection(upstream)
    except OSError:
        client.close()
        return
    for s in (client, server):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    there = threading.Thread(target=pump, args=(client, server, delay), daemon=True)
    there.start()
    pump(server, client, delay)
    there.join()
    client.close()
    server.close()


def serve(listener, upstream, delay):
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve_one, args=(client, upstream, delay), daemon=True).start()


# ---- measuring: just enough of the PostgreSQL protocol for SELECT 1 ----

def read_message(sock):
    def exactly(n):
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            out += chunk
        return out

    head = exactly(5)
    kind, length = head[:1], struct.unpack("!I", head[1:])[0]
    return kind, exactly(length - 4)


def until_ready(sock, user, password):
    while True:
        kind, body = read_message(sock)
        if kind == b"E":
            raise ConnectionError("server error: %r" % body)
        if kind == b"R":
            code = struct.unpack("!I", body[:4])[0]
            if code == 3 and password is not None:
                secret = password.encode() + b"\0"
            elif code == 5 and password is not None:
                inner = hashlib.md5(password.encode() + user.encode()).hexdigest().encode()
                secret = b"md5" + hashlib.md5(inner + body[4:8]).hexdigest().encode() + b"\0"
            elif code == 0:
                continue
            else:
                raise ConnectionError("authentication method %d is not supported here" % code)
            sock.sendall(b"p" + struct.pack("!I", 4 + len(secret)) + secret)
        elif kind == b"Z":
            return


def select_one_ms(host, port, url, samples):
    parts = urllib.parse.urlparse(url)
    user = urllib.parse.unquote(parts.username or "postgres")
    password = urllib.parse.unquote(parts.password) if parts.password else None
    database = parts.path.lstrip("/") or user
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        params = b"user\0" + user.encode() + b"\0database\0" + database.encode() + b"\0\0"
        sock.sendall(struct.pack("!II", 8 + len(params), 196608) + params)
        until_ready(sock, user, password)
        query = b"SELECT 1\0"
        times = []
        for _ in range(samples):
            t0 = time.perf_counter()
            sock.sendall(b"Q" + struct.pack("!I", 4 + len(query)) + query)
            until_ready(sock, user, password)
            times.append((time.perf_counter() - t0) * 1000)
        sock.sendall(b"X\0\0\0\4")
        return statistics.median(times)
    finally:
        sock.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the server")
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--rtt-ms", type=float, required=True,
                        help="round trip added: half of it each way")
    parser.add_argument("--measure", metavar="URL", help="a postgresql:// URL of the upstream")
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    up_host, up_port = args.upstream.rsplit(":", 1)
    upstream = (up_host, int(up_port))
    host, port = args.listen.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(128)
    bound = listener.getsockname()
    delay = Delay(args.rtt_ms / 2000.0)
    threading.Thread(target=serve, args=(listener, upstream, delay), daemon=True).start()
    if args.measure:
        # The threads' own hand-offs add a little: measure, take it off the
        # delay once, and measure again (what is printed is what clients get).
        through = select_one_ms(bound[0], bound[1], args.measure, args.samples)
        delay.seconds = max(0.0, delay.seconds - (through - args.rtt_ms) / 2000.0)
    print("listening on %s:%d" % bound, flush=True)
    if args.measure:
        direct = select_one_ms(upstream[0], upstream[1], args.measure, args.samples)
        through = select_one_ms(bound[0], bound[1], args.measure, args.samples)
        print("round trip (median SELECT 1 of %d): %.3f ms through the proxy, %.3f ms direct "
              "(delay %.3f ms each way)" % (args.samples, through, direct, delay.seconds * 1000),
              flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
