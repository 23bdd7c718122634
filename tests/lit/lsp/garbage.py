"""Replays broken input at `accelc lsp`: random bytes, truncated frames, a huge header, bodies
that are not JSON-RPC. Each must get a JSON-RPC error (or be dropped, for notifications), the
server must keep answering real requests between them, and it must exit cleanly, never by a
signal and never by hanging.

usage: garbage.py ACCELC
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client, frame  # noqa: E402

accelc = sys.argv[1]


def error_code(message):
    assert "error" in message, message
    return message["error"]["code"]


def next_error(client):
    return client.wait(lambda m: "error" in m)


def raw(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# Requests before initialize, then exit without shutdown: -32002, and exit status 1.
client = Client(accelc)
assert error_code(client.request("textDocument/hover", {})) == -32002
client.notify("exit")
assert client.finish() == 1
print("before initialize: -32002; exit without shutdown: 1")

client = Client(accelc)
client.request("initialize", {"capabilities": {}})
cases = [
    (raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\""), -32700, "truncated JSON"),
    (raw(bytes(random.Random(1).randrange(256) for _ in range(300))), -32700, "random body"),
    (raw(b"[1, 2, 3]"), -32600, "not an object"),
    (raw(b"{\"jsonrpc\": \"2.0\", \"id\": 9}"), -32600, "no method"),
    (b"Content-Type: text/plain\r\n\r\n", -32600, "no Content-Length"),
    (b"Content-Length: twelve\r\n\r\n", -32600, "non-numeric Content-Length"),
    (b"X" * 20000 + b"\r\n\r\n", -32600, "20 KB header"),
    # Parsed and freed recursively, this nesting overflowed the stack.
    (raw(b"{\"jsonrpc\": \"2.0\", \"id\": 13, \"method\": \"x\", \"params\": " + b"[" * 50000 + b"]" * 50000 + b"}"),
     -32700, "body nested 50,000 deep"),
    (frame({"jsonrpc": "2.0", "id": 10, "method": "no/such/method"}), -32601, "unknown method"),
    (frame({"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover", "params": {"textDocument": 3}}), -32602,
     "wrong params"),
    (frame({"jsonrpc": "2.0", "id": 12, "method": "textDocument/completion", "params": [1]}), -32602,
     "params not an object"),
]
for data, code, what in cases:
    client.send_bytes(data)
    got = error_code(next_error(client))
    assert got == code, (what, got)
    print("%s: %d" % (what, got))
    # Still serving: the next request gets its own answer.
    not_open = client.request("textDocument/documentSymbol", {"textDocument": {"uri": "file:///none.accel"}})
    assert not_open["error"]["message"] == "`file:///none.accel` is not open", not_open
# A document over the 16 MiB a spec file may have is one diagnostic, not a parse of it.
big = "job j {\n// " + "x" * (17 << 20) + "\n}\n"
client.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///big.accel", "languageId": "accel",
                                                        "version": 1, "text": big}})
published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
diagnostics = published["params"]["diagnostics"]
assert [d["code"] for d in diagnostics] == ["A1008"], diagnostics
assert "spec files are limited to 16 MiB" in diagnostics[0]["message"], diagnostics
print("17 MiB document: A1008 alone")
# Notifications that are unknown or malformed are dropped without an answer; the next request
# is the next answer.
client.notify("no/such/notification", {"x": 1})
client.notify("textDocument/didOpen", {"textDocument": {"uri": 5}})
client.send_bytes(frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}))
answer = client.wait(lambda m: "id" in m or "error" in m)
assert answer.get("id") == 99 and answer.get("result", 0) is None, answer
# An oversized body is refused and skipped without being stored; the input then ends inside it.
client.send_bytes(b"Content-Length: 999999999999\r\n\r\n" + b"{" * 1000)
assert error_code(next_error(client)) == -32600
status = client.finish()
assert status == 0, status
print("oversized body: -32600; end of input after shutdown: exit 0")

# Pure noise, and noise cut mid-frame: the server ends when its input does, with 0 or 1.
for seed in range(5):
    rnd = random.Random(seed)
    noise = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 50000)))
    if seed % 2:
        noise = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + noise
    client = Client(accelc)
    client.send_bytes(noise + b"Content-Length: 100\r\n\r\n{\"trunc")
    status = client.finish()
    assert status in (0, 1), (seed, status)
print("noise: every run exits cleanly")
