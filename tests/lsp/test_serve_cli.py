"""`traindoctor serve` on the command line: TCP on loopback only, clear errors."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

SERVE = [sys.executable, "-m", "traindoctor", "serve"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read_message(sock: socket.socket, timeout: float = 20) -> dict:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    header, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(line for line in header.decode().split("\r\n") if line.lower().startswith("content-length")).split(":")[1])
    while len(rest) < length:
        rest += sock.recv(4096)
    return json.loads(rest[:length])


@pytest.mark.parametrize("address", ["0.0.0.0:2087", "8.8.8.8:2087", "localhost", "127.0.0.1:99999", "example.invalid:2087"])
def test_tcp_refuses_anything_but_a_loopback_address(address):
    done = subprocess.run([*SERVE, "--tcp", address], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.startswith("traindoctor serve: ") and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_tcp_on_loopback_speaks_lsp():
    port = _free_port()
    server = subprocess.Popen([*SERVE, "--tcp", f"127.0.0.1:{port}"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "server never listened"
                time.sleep(0.1)
        with sock:
            sock.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
            reply = _read_message(sock)
            assert reply["id"] == 1
            capabilities = reply["result"]["capabilities"]
            assert "traindoctor.diagnoseTraceback" in capabilities["executeCommandProvider"]["commands"]
            assert capabilities["codeActionProvider"]["resolveProvider"] is True
    finally:
        server.kill()
        server.wait()
