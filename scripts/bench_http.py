#!/usr/bin/env python3
"""`lackpy serve` over Streamable HTTP vs the unix socket, in the same run.

One server listens on both (`--socket` and `--listen`); the same trivial
`run_program` is timed over each: p50/p99 of N sequential calls on one
connection/session, then runs/s with C concurrent HTTP clients (processes,
each its own MCP session on a keep-alive connection).

Usage: bench_http.py --bin target/release/lackpy [--calls 400] [--clients 8] [--runs 2000]
"""

import argparse
import hashlib
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TOKEN = "bench-token-0c5e1f"
PROGRAM = "1 + 1"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


class Unix:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, v):
        self.f.write((json.dumps(v) + "\n").encode())
        self.f.flush()

    def call(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            v = json.loads(self.f.readline())
            if v.get("id") == self.id:
                return v

    def run(self, program):
        return self.call("tools/call", {"name": "run_program", "arguments": {"program": program}})


class McpHttp:
    """An MCP session over Streamable HTTP; a subclass opens the connection
    and sends one POST (`post(msg)` -> (content type, body))."""

    def __init__(self):
        self.sid = None
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, method, params):
        self.id += 1
        ct, body = self.post({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        # The server answers with one JSON object or an SSE stream (both are
        # the transport's; a quick run gets JSON).
        if ct.startswith("application/json"):
            v = json.loads(body)
            if v.get("id") == self.id:
                return v
        for line in body.splitlines():
            if line.startswith("data:") and line[5:].strip():
                v = json.loads(line[5:])
                if v.get("id") == self.id:
                    return v
        raise RuntimeError(f"no response in {body!r}")

    def run(self, program):
        return self.call("tools/call", {"name": "run_program", "arguments": {"program": program}})


class Lean(McpHttp):
    """A minimal HTTP/1.1 keep-alive client, as lean as the unix client above.

    One write per request (as curl, hyper/reqwest and Go's net/http do), the
    response read by its Content-Length (or chunks). Python's http.client
    costs ~80 µs of client CPU per call on this machine (it sends the head and
    the body in two writes and parses headers with the email package): that
    is the client's cost, not the transport's, so it has its own row.
    """

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.host = addr
        self.s = socket.create_connection((host, int(port)), timeout=60)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        super().__init__()

    def fill(self, n):
        while len(self.buf) < n:
            b = self.s.recv(65536)
            if not b:
                raise RuntimeError("server closed the connection")
            self.buf += b

    def post(self, msg):
        body = json.dumps(msg).encode()
        head = (f"POST /mcp HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
        if self.sid:
            head += f"Mcp-Session-Id: {self.sid}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
        self.s.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self.fill(len(self.buf) + 1)
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdr = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdr[k.strip().lower()] = v.strip()
        if "content-length" in hdr:
            n = int(hdr["content-length"])
            self.fill(n)
            data, self.buf = self.buf[:n], self.buf[n:]
        else:  # chunked (an SSE reply)
            data = b""
            while True:
                while b"\r\n" not in self.buf:
                    self.fill(len(self.buf) + 1)
                size, self.buf = self.buf.split(b"\r\n", 1)
                n = int(size, 16)
                self.fill(n + 2)
                data, self.buf = data + self.buf[:n], self.buf[n + 2:]
                if n == 0:
                    break
        if status >= 300:
            raise RuntimeError(f"HTTP {status}: {data!r}")
        self.sid = self.sid or hdr.get("mcp-session-id")
        return hdr.get("content-type", ""), data.decode()


class Http(McpHttp):
    """Python's http.client, as is."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.c = http.client.HTTPConnection(host, int(port), timeout=60)
        self.c.connect()
        self.c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().__init__()

    def post(self, msg):
        h = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
            h["Mcp-Protocol-Version"] = "2025-11-25"
        self.c.request("POST", "/mcp", body=json.dumps(msg), headers=h)
        r = self.c.getresponse()
        body = r.read().decode()
        if r.status >= 300:
            raise RuntimeError(f"HTTP {r.status}: {body}")
        self.sid = self.sid or r.getheader("mcp-session-id")
        return r.getheader("content-type", ""), body


def check(v):
    sc = v.get("result", {}).get("structuredContent", {})
    if sc.get("value") != 2:
        raise RuntimeError(f"wrong result: {v}")


def timed(client, n):
    for _ in range(20):
        check(client.run(PROGRAM))
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        check(client.run(PROGRAM))
        lat.append((time.perf_counter() - t) * 1000)
    return lat


def worker(args):
    addr, n = args
    c = Lean(addr)
    bad = 0
    for _ in range(n):
        v = c.run(PROGRAM)
        if v.get("result", {}).get("structuredContent", {}).get("value") != 2:
            bad += 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/lackpy")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2000)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="lackpy-bench-http.")
    ws = os.path.join(d, "ws")
    os.mkdir(ws)
    sock = os.path.join(d, "s.sock")
    cfg = os.path.join(d, "serve.toml")
    uid = os.geteuid()
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with open(cfg, "w") as f:
        f.write(f"""[serve]
pool_size = 8
max_in_flight = 16
[[serve.clients]]
uid = {uid}
workspace = "{ws}"
max_concurrent = 16
[[serve.clients]]
token_sha256 = "{digest}"
workspace = "{ws}"
max_concurrent = 16
max_connections = 32
""")
    p = subprocess.Popen([a.bin, "serve", "--socket", sock, "--listen", "127.0.0.1:0",
                          "--config", cfg], stderr=subprocess.PIPE, text=True)
    addr = None
    while addr is None:
        line = p.stderr.readline()
        if not line:
            sys.exit("server did not start")
        if "listening on http://" in line:
            addr = line.split("http://", 1)[1].strip().removesuffix("/mcp")
    while not os.path.exists(sock):
        time.sleep(0.02)
    time.sleep(1.0)  # pools warm
    try:
        u, h, h2 = Unix(sock), Lean(addr), Http(addr)
        # Interleave the three so drift hits them alike.
        lu, lh, l2 = [], [], []
        for _ in range(4):
            lu += timed(u, a.calls // 4)
            lh += timed(h, a.calls // 4)
            l2 += timed(h2, a.calls // 4)
        print("Python clients, one connection each, calls interleaved in blocks:\n")
        print("| transport | calls | p50 ms | p99 ms | p50 − unix p50 |")
        print("|---|---|---|---|---|")
        base = statistics.median(lu)
        for name, lat in (("unix socket (JSON lines)", lu),
                          ("HTTP, session, keep-alive (minimal client)", lh),
                          ("HTTP, same, Python's http.client", l2)):
            m = statistics.median(lat)
            print(f"| {name} | {len(lat)} | {m:.3f} | {pct(lat, 0.99):.3f} | {m - base:+.3f} ms |")
        print(f"\nHTTP p50 - unix p50 = {statistics.median(lh) - base:+.3f} ms (minimal clients on both)")
        per = a.runs // a.clients
        t = time.perf_counter()
        with multiprocessing.Pool(a.clients) as pool:
            bad = sum(pool.map(worker, [(addr, per)] * a.clients))
        dt = time.perf_counter() - t
        print(f"\nHTTP throughput: {per * a.clients} runs, {a.clients} clients: "
              f"{per * a.clients / dt:.0f} runs/s ({bad} wrong)")
    finally:
        p.terminate()
        p.wait(timeout=30)


if __name__ == "__main__":
    main()
