"""A small Debug Adapter Protocol client over TCP, enough to drive debugpy.

One reader thread per connection parses the `Content-Length` framed JSON
messages; requests block the caller until their response arrives or a timeout
passes; events land in a queue the session reads. Every wait is bounded: a
debuggee that dies closes the socket, which fails all pending requests at once.
"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import threading
import time
from typing import Any


class DapError(Exception):
    """A request failed, timed out, or the connection went away."""


class DapTimeout(DapError):
    pass


class DapClosed(DapError):
    pass


class DapConnection:
    def __init__(self, sock: socket.socket, name: str = "debugpy") -> None:
        self.name = name
        self._sock = sock
        self._send_lock = threading.Lock()
        self._seq = itertools.count(1)
        self._pending: dict[int, queue.Queue[dict[str, Any] | None]] = {}
        self._pending_lock = threading.Lock()
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name=f"dap-reader-{name}", daemon=True)
        self._reader.start()

    # --- connecting -------------------------------------------------------

    @classmethod
    def connect(cls, host: str, port: int, *, timeout: float, name: str = "debugpy",
                retry_while: Any = None) -> "DapConnection":
        """Connect, retrying refused connections until `timeout` passes.

        `retry_while` (a callable) stops the retries early when it returns False,
        e.g. once the process that should be listening has exited.
        """
        deadline = time.monotonic() + timeout
        last: OSError | None = None
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=min(5.0, timeout))
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return cls(sock, name)
            except OSError as exc:
                last = exc
            if time.monotonic() >= deadline or (retry_while is not None and not retry_while()):
                break
            time.sleep(0.05)
        raise DapError(f"could not connect to {host}:{port}: {_reason(last)}")

    # --- sending ----------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._send_lock:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise DapClosed(f"{self.name}: connection lost ({_reason(exc)})") from None

    def send_request(self, command: str, arguments: dict[str, Any] | None = None) -> "queue.Queue[dict[str, Any] | None]":
        """Send without waiting; `wait_response` collects the answer later."""
        if self.closed.is_set():
            raise DapClosed(f"{self.name}: connection closed")
        seq = next(self._seq)
        answer: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=1)
        with self._pending_lock:
            self._pending[seq] = answer
        message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        try:
            self._send(message)
        except DapError:
            with self._pending_lock:
                self._pending.pop(seq, None)
            raise
        return answer

    def wait_response(self, answer: "queue.Queue[dict[str, Any] | None]", command: str, timeout: float) -> dict[str, Any]:
        try:
            response = answer.get(timeout=timeout)
        except queue.Empty:
            raise DapTimeout(f"{self.name}: no answer to {command!r} within {timeout:g} s") from None
        if response is None:
            raise DapClosed(f"{self.name}: connection closed while waiting for {command!r}")
        if not response.get("success", False):
            raise DapError(response.get("message") or f"{command} failed")
        return response.get("body") or {}

    def request(self, command: str, arguments: dict[str, Any] | None = None, *, timeout: float = 10.0) -> dict[str, Any]:
        return self.wait_response(self.send_request(command, arguments), command, timeout)

    def next_event(self, timeout: float) -> dict[str, Any] | None:
        """The next event, or None on timeout or once the connection closed."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    # --- receiving --------------------------------------------------------

    def _read_loop(self) -> None:
        stream = self._sock.makefile("rb")
        try:
            while True:
                message = _read_message(stream)
                if message is None:
                    break
                kind = message.get("type")
                if kind == "response":
                    with self._pending_lock:
                        answer = self._pending.pop(message.get("request_seq"), None)
                    if answer is not None:
                        answer.put(message)
                elif kind == "event":
                    self.events.put(message)
                elif kind == "request":
                    # Reverse requests (runInTerminal, startDebugging): we never
                    # advertise support for them, so refuse politely.
                    self._send({"seq": next(self._seq), "type": "response", "request_seq": message.get("seq"),
                                "command": message.get("command"), "success": False, "message": "not supported"})
        except (OSError, ValueError, DapError):
            pass
        finally:
            self.closed.set()
            with self._pending_lock:
                pending, self._pending = list(self._pending.values()), {}
            for answer in pending:
                answer.put(None)
            self.events.put(None)


def _read_message(stream: Any) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError("DAP message without Content-Length")
    body = stream.read(length)
    if len(body) < length:
        return None
    return json.loads(body.decode("utf-8"))


def _reason(exc: OSError | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return exc.strerror or str(exc)
