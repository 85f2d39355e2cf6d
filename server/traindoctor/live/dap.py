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


class DapProtocolError(DapError):
    """The peer sent something that is not a DAP message; the connection is dropped."""


# debugpy's messages are small (values are truncated); anything beyond is not DAP.
MAX_HEADER_LINE = 1024
MAX_HEADER_LINES = 32
MAX_CONTENT_LENGTH = 32 * 1024 * 1024


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
        self.failure: str | None = None  # why the connection was dropped, when it was our decision
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
            why = f" ({self.failure})" if self.failure else ""
            raise DapClosed(f"{self.name}: connection closed while waiting for {command!r}{why}")
        if response.get("success") is not True:
            message = response.get("message")
            raise DapError(message if isinstance(message, str) and message else f"{command} failed")
        body = response.get("body")
        return body if isinstance(body, dict) else {}

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
                    request_seq = message.get("request_seq")
                    with self._pending_lock:
                        answer = self._pending.pop(request_seq, None) if isinstance(request_seq, int) else None
                    if answer is not None:
                        answer.put(message)
                elif kind == "event":
                    self.events.put(message)
                elif kind == "request":
                    # Reverse requests (runInTerminal, startDebugging): we never
                    # advertise support for them, so refuse politely.
                    self._send({"seq": next(self._seq), "type": "response", "request_seq": message.get("seq"),
                                "command": message.get("command"), "success": False, "message": "not supported"})
        except DapProtocolError as exc:
            self.failure = str(exc)
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
    """One framed message, None at end of stream; DapProtocolError for anything
    that is not DAP (never reads more than the bounds above into memory)."""
    length = None
    for _ in range(MAX_HEADER_LINES + 1):
        line = stream.readline(MAX_HEADER_LINE + 1)
        if not line:
            return None
        if len(line) > MAX_HEADER_LINE:
            raise DapProtocolError(f"not a debug adapter: a header line longer than {MAX_HEADER_LINE} bytes")
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise DapProtocolError(f"not a debug adapter: bad Content-Length {value[:40]!r}") from None
    else:
        raise DapProtocolError(f"not a debug adapter: more than {MAX_HEADER_LINES} header lines")
    if length is None:
        raise DapProtocolError("not a debug adapter: a message without Content-Length")
    if not 0 <= length <= MAX_CONTENT_LENGTH:
        raise DapProtocolError(f"not a debug adapter: Content-Length {length} is out of bounds "
                               f"(0..{MAX_CONTENT_LENGTH})")
    body = stream.read(length)
    if len(body) < length:
        return None
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise DapProtocolError("not a debug adapter: a message that is not UTF-8 JSON") from None
    if not isinstance(message, dict):
        raise DapProtocolError(f"not a debug adapter: a JSON {type(message).__name__} instead of an object")
    return message


def _reason(exc: OSError | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return exc.strerror or str(exc)
