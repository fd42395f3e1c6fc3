#!/usr/bin/env python3
"""A minimal MCP client over a unix socket (newline-delimited JSON-RPC), for
`lackpy serve` tests and scripts/soak. Standard library only.

    mcp_client.py SOCKET PROGRAM [--tools a,b] [--profile P]   # one run_program, prints structuredContent

Exit status as `lackpy run`'s: 0 when the program ran (`ok` true); when it
failed, 2 validation, 1 runtime/tool/limit, 3 config, 4 internal (from the
error's kind); 1 for a protocol error or an `isError` result without one.
"""
import json
import socket
import sys


class JsonRpcClient:
    """An MCP client over newline-delimited JSON-RPC; a subclass supplies
    `send(obj)` and `recv()` (the next message) for its transport."""

    next_id = 1
    client_name = "lackpy-test-client"

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            resp = self.recv()
            if resp.get("id") == rid or (resp.get("id") is None and "error" in resp):
                return resp

    def initialize(self):
        resp = self.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": self.client_name, "version": "0"},
        })
        if "error" in resp:
            return resp
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return resp

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})


class Client(JsonRpcClient):
    """The client on a unix socket (`lackpy serve`)."""

    def __init__(self, path, timeout=30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def recv(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.sock.close()


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(3)
    path, program = args[0], args[1]
    extra = {}
    i = 2
    while i < len(args):
        if args[i] == "--tools":
            extra["tools"] = args[i + 1].split(",")
            i += 2
        elif args[i] == "--profile":
            extra["profile"] = args[i + 1]
            i += 2
        else:
            print(f"unknown argument {args[i]}", file=sys.stderr)
            sys.exit(3)
    c = Client(path)
    init = c.initialize()
    if "error" in init:
        print(json.dumps(init))
        sys.exit(1)
    resp = c.call("run_program", dict(program=program, **extra))
    if "error" in resp:
        print(json.dumps(resp))
        sys.exit(1)
    result = resp.get("result") or {}
    content = result.get("structuredContent")
    print(json.dumps(content))
    c.close()
    sys.exit(exit_status(result, content))


# The CLI's exit status for each error kind.
EXIT_BY_KIND = {"validation": 2, "runtime": 1, "limit": 1, "tool": 1, "config": 3, "internal": 4}


def exit_status(result, content):
    """0 when the run succeeded, else the CLI's status for its error kind."""
    if isinstance(content, dict) and content.get("ok") is True and not result.get("isError"):
        return 0
    if isinstance(content, dict) and isinstance(content.get("error"), dict):
        return EXIT_BY_KIND.get(content["error"].get("kind"), 1)
    return 1


if __name__ == "__main__":
    main()
