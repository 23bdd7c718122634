"""A small LSP client for the tests: spawns `accelc lsp`, frames JSON-RPC messages, and reads
the server's messages on a thread so that every wait has a timeout (a hung server fails the
test instead of hanging it)."""
import json
import queue
import subprocess
import threading

TIMEOUT = 10  # seconds for any one answer


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(stream, sink):
    """Puts each message the server writes on `sink`, then None at the end of its output."""
    while True:
        headers = b""
        while not headers.endswith(b"\r\n\r\n"):
            byte = stream.read(1)
            if not byte:
                sink.put(None)
                return
            headers += byte
        length = None
        for line in headers.decode().split("\r\n"):
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        assert length is not None, "server frame without Content-Length: %r" % headers
        body = stream.read(length)
        sink.put(json.loads(body))


class Client:
    def __init__(self, accelc, env=None):
        self.process = subprocess.Popen([accelc, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env)
        self.messages = queue.Queue()
        self.pending = []  # messages read while waiting for another
        threading.Thread(target=read_frames, args=(self.process.stdout, self.messages), daemon=True).start()
        self.next_id = 1

    def send_bytes(self, data):
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send_bytes(frame(message))

    def request(self, method, params=None):
        request_id = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_bytes(frame(message))
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)

    def wait(self, matches):
        """The first message (read now or earlier) that `matches`; fails after TIMEOUT."""
        for i, message in enumerate(self.pending):
            if matches(message):
                return self.pending.pop(i)
        while True:
            try:
                message = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError("no answer from accelc lsp within %d s" % TIMEOUT)
            if message is None:
                raise AssertionError("accelc lsp ended its output; stderr: %s" % self.stderr())
            if matches(message):
                return message
            self.pending.append(message)

    def diagnostics(self, uri, version=None):
        """The next publishDiagnostics for `uri` (of `version`, if given)."""
        def matches(m):
            if m.get("method") != "textDocument/publishDiagnostics" or m["params"]["uri"] != uri:
                return False
            return version is None or m["params"].get("version") == version
        return self.wait(matches)["params"]["diagnostics"]

    def finish(self, timeout=TIMEOUT):
        """Closes stdin and returns the exit status; kills a server that does not exit."""
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("accelc lsp did not exit within %d s" % timeout)

    def stderr(self):
        return self.process.stderr.read().decode(errors="replace") if self.process.poll() is not None else ""


def apply_edits(text, edits):
    """Applies LSP TextEdits (UTF-16 positions) to `text`, last first."""
    def offset(position):
        lines = text.split("\n")
        before = sum(len(line) + 1 for line in lines[:position["line"]])
        line = lines[position["line"]] if position["line"] < len(lines) else ""
        units = line.encode("utf-16-le")[:2 * position["character"]].decode("utf-16-le")
        return before + len(units)
    ordered = sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]))
    for edit in reversed(ordered):
        text = text[:offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]):]
    return text
