"""`traindoctor attach`, connection failures, and the DAP contract the editor uses."""

from __future__ import annotations

import os
import socket
import subprocess
import threading

import pytest

from editor_dap import stop_and_probe
from live_helpers import PYTHON, SCRIPTS, env, free_port, tensor, traindoctor
from traindoctor.live.dap import DapConnection
from traindoctor.live.from_dap import diagnose_from_dap


def _listening_debuggee(script: str, port: int) -> subprocess.Popen:
    environment = env()
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return subprocess.Popen(
        [PYTHON, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client", str(SCRIPTS / script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment,
    )


def _wait_listening(port: int, process: subprocess.Popen) -> None:
    probe = DapConnection.connect("127.0.0.1", port, timeout=30, retry_while=lambda: process.poll() is None)
    probe.close()  # debugpy accepts a fresh client after this one goes


@pytest.mark.slow
def test_attach_to_a_listening_process():
    port = free_port()
    debuggee = _listening_debuggee("shape_mismatch.py", port)
    try:
        outcome = traindoctor("attach", f"127.0.0.1:{port}", "--format", "json")
        diagnosis = outcome.diagnosis
        assert diagnosis["kind"] == "shape-mismatch"
        assert diagnosis["location"]["line"] == 7
        assert tensor(diagnosis, "inputs")["shape"] == [8, 10]
        assert outcome.code == 1
        assert debuggee.wait(timeout=30) == 1  # attach leaves the process to finish on its own
    finally:
        if debuggee.poll() is None:
            debuggee.kill()
            debuggee.wait()


@pytest.mark.slow
def test_editor_path_probe_expressions_and_diagnose_from_dap():
    """What the VS Code extension does: its own DAP session, our probes, our Diagnosis."""
    port = free_port()
    debuggee = _listening_debuggee("nan_anomaly.py", port)
    try:
        connection = DapConnection.connect("127.0.0.1", port, timeout=30, retry_while=lambda: debuggee.poll() is None)
        stop = stop_and_probe(connection)
        exception_info, stack_trace, probe_results = stop["exceptionInfo"], stop["stackTrace"], stop["probes"]
        probe_results["optimizers"] = {"error": "timed out"}  # a failed probe is recorded, not fatal
        diagnosis = diagnose_from_dap(exception_info, stack_trace, probe_results)
        connection.request("disconnect", {"terminateDebuggee": False})
        connection.close()
        assert diagnosis.kind == "nan-inf"
        assert diagnosis.location is not None and diagnosis.location.line == 11
        nan_names = [t["name"] for t in diagnosis.details["probes"]["tensors"] if t["nan_count"]]
        assert nan_names[:2] == ["root", "loss"]
        assert diagnosis.details["probes"]["errors"]["optimizers"] == "timed out"
        assert diagnosis.details["probes"]["env"]["torch"].startswith("2.")
        debuggee.wait(timeout=30)
    finally:
        if debuggee.poll() is None:
            debuggee.kill()
            debuggee.wait()


def test_refused_connection_is_one_line():
    port = free_port()
    outcome = traindoctor("attach", f"127.0.0.1:{port}")
    assert outcome.code == 2
    assert outcome.stderr.strip() == f"traindoctor attach: could not connect to 127.0.0.1:{port}: connection refused"


def test_remote_host_needs_allow_remote():
    outcome = traindoctor("attach", "10.1.2.3:5678")
    assert outcome.code == 2
    assert outcome.stderr.strip() == (
        "traindoctor attach: 10.1.2.3 is not a loopback address; pass --allow-remote to connect to another machine"
    )


def test_port_taken_by_something_that_is_not_debugpy():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def hang_up():
        conn, _ = server.accept()
        conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        outcome = traindoctor("attach", f"127.0.0.1:{port}", timeout=30)
    finally:
        server.close()
    assert outcome.code == 2
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not answer as a debug adapter" in lines[0]


def test_bad_address_and_bad_commands():
    assert traindoctor("attach", "localhost:notaport").stderr.strip() == (
        "traindoctor attach: invalid address 'localhost:notaport': expected HOST:PORT"
    )
    outcome = traindoctor("run", "--", "ls", "-l")
    assert outcome.code == 2
    assert outcome.stderr.startswith("traindoctor run: cannot run `ls` under debugpy")
    outcome = traindoctor("run")
    assert outcome.code == 2 and "needs a command" in outcome.stderr
    outcome = traindoctor("run", "--", "python", "no_such_script.py")
    assert outcome.code == 2 and outcome.stderr.strip() == "traindoctor run: no such script: no_such_script.py"


@pytest.mark.slow
def test_python_without_debugpy_is_a_clear_error(tmp_path):
    # An interpreter that cannot import debugpy: isolated mode hides site-packages.
    script = tmp_path / "ok.py"
    script.write_text("print('hi')\n")
    outcome = traindoctor("run", "--", "python", "-I", "-S", str(script))
    assert outcome.code != 0
    last = outcome.stderr.strip().splitlines()[-1]
    assert last.startswith("traindoctor run: the command exited with code 1 before debugpy accepted a connection")
    assert os.path.exists(PYTHON)
