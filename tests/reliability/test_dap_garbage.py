"""The DAP client against a loopback server that answers garbage: one clean line, no traceback."""

from __future__ import annotations

import json
import socket
import threading
from typing import Callable

import pytest
from reliability_helpers import traindoctor

from traindoctor.live.dap import MAX_CONTENT_LENGTH, DapConnection, DapError


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class GarbageServer:
    """Accepts one connection, reads the first request, then runs `reply(conn)`."""

    def __init__(self, reply: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(20)
            try:
                conn.recv(65536)
                self.reply(conn)
                conn.recv(65536)  # until the client hangs up
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _send(*frames: bytes) -> Callable[[socket.socket], None]:
    def reply(conn: socket.socket) -> None:
        for frame in frames:
            conn.sendall(frame)
    return reply


def _no_newline(conn: socket.socket) -> None:
    chunk = b"x" * 65536
    for _ in range(64):  # 4 MB of a header line that never ends
        conn.sendall(chunk)


GARBAGE = {
    "json_array": _send(_frame(b"[1, 2, 3]")),
    "json_string": _send(_frame(b'"hello"')),
    "json_number": _send(_frame(b"42")),
    "json_null": _send(_frame(b"null")),
    "not_json": _send(_frame(b"{not json")),
    "not_utf8": _send(_frame(b"\xff\xfe{}")),
    "huge_length": _send(b"Content-Length: 1000000000000\r\n\r\n{}"),
    "negative_length": _send(b"Content-Length: -5\r\n\r\n{}"),
    "bad_length": _send(b"Content-Length: ten\r\n\r\n{}"),
    "no_length": _send(b"X-Other: 1\r\n\r\n{}"),
    "endless_headers": _send(b"X: 1\r\n" * 10000),
    "no_newline": _no_newline,
    "http": _send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
    "wrong_shapes": _send(
        _frame(json.dumps({"type": "response", "request_seq": "1", "success": "yes", "body": []}).encode()),
        _frame(json.dumps({"type": "response", "request_seq": 1, "success": True, "body": "caps"}).encode()),
        _frame(json.dumps({"type": "event", "event": "initialized", "body": [1]}).encode()),
        _frame(json.dumps({"type": ["event"], "seq": {}}).encode()),
        _frame(json.dumps({"type": "request", "command": 5, "seq": None}).encode()),
        _frame(json.dumps({"type": "event", "event": "stopped", "body": "exception"}).encode()),
        _frame(json.dumps({"type": "event", "event": "debugpyAttach", "body": {"connect": "nowhere"}}).encode()),
    ),
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_attach_to_garbage_is_one_clean_line(case):
    server = GarbageServer(GARBAGE[case])
    try:
        outcome = traindoctor("attach", f"127.0.0.1:{server.port}", timeout=90)
    finally:
        server.close()
    lines = outcome.stderr.strip().splitlines()
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.returncode == 2, outcome
    assert len(lines) == 1 and lines[0].startswith("traindoctor attach: "), outcome.stderr


@pytest.mark.parametrize("case", ["json_array", "huge_length", "no_newline", "endless_headers", "not_json"])
def test_the_connection_gives_up_with_a_reason_and_bounded_memory(case):
    server = GarbageServer(GARBAGE[case])
    try:
        connection = DapConnection.connect("127.0.0.1", server.port, timeout=10)
        with pytest.raises(DapError) as raised:
            connection.request("initialize", {}, timeout=30)
        connection.close()
    finally:
        server.close()
    assert connection.closed.is_set()
    assert connection.failure and connection.failure.startswith("not a debug adapter"), connection.failure
    assert "not a debug adapter" in str(raised.value)
    assert MAX_CONTENT_LENGTH <= 64 * 1024 * 1024
