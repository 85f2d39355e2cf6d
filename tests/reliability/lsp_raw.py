"""A raw JSON-RPC client for the real `traindoctor serve` process (no LSP library in between)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

from reliability_helpers import env


class RawServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "traindoctor", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
        self.responses: dict[Any, dict] = {}
        self.diagnostics: dict[str, list] = {}
        self._arrived = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._arrived.put(None)
                    return
                if not line.strip():
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if "id" in message and "method" not in message:
                with self._lock:
                    self.responses[message["id"]] = message
                self._arrived.put(message["id"])
            elif message.get("method") == "textDocument/publishDiagnostics":
                with self._lock:
                    self.diagnostics[message["params"]["uri"]] = message["params"]["diagnostics"]
            elif "id" in message:  # a request from the server: answer it empty
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float = 60, raw_id: Any = None) -> dict:
        self._next += 1
        msg_id = raw_id if raw_id is not None else self._next
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait(msg_id, timeout)

    def wait(self, msg_id: Any, timeout: float) -> dict:
        import time

        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if msg_id in self.responses:
                    return self.responses.pop(msg_id)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no response to request {msg_id!r} within {timeout} s")
            try:
                if self._arrived.get(timeout=left) is None:
                    raise AssertionError(f"the server exited before answering {msg_id!r}")
            except queue.Empty:
                pass

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self) -> None:
        self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self.notify("initialized", {})

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
