"""What an editor's debug tracker does with a real debugpy: its own DAP session,
stopped on the uncaught exception, the server's probe expressions evaluated in
the top frame. Used by the live and the language-server tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from traindoctor.live.dap import DapConnection
from traindoctor.live.probes import probe_expressions


@contextlib.contextmanager
def debugpy_session(target: list[str], cwd: Path, env: dict[str, str] | None = None
                    ) -> Iterator[tuple[DapConnection, subprocess.Popen]]:
    """`python -m debugpy --listen <loopback port> --wait-for-client *target`, and a DAP connection
    to it. On exit the connection closes and the debuggee is gone (killed if it still runs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    environment = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1", **(env or {}))
    debuggee = subprocess.Popen(
        [sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client", *target],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, cwd=cwd,
    )
    try:
        connection = DapConnection.connect("127.0.0.1", port, timeout=30, retry_while=lambda: debuggee.poll() is None)
        try:
            yield connection, debuggee
            connection.request("disconnect", {"terminateDebuggee": True})
        finally:
            connection.close()
    finally:
        if debuggee.poll() is None:
            debuggee.kill()
        debuggee.wait()


def stop_at_uncaught_exception(connection: DapConnection, attach: dict, timeout: float = 120) -> int:
    """Initialize, attach with `attach` (VS Code's default exception filter: uncaught) and run
    until the debuggee stops on its exception; the stopped thread's id."""
    connection.request("initialize", {"adapterID": "debugpy", "linesStartAt1": True, "columnsStartAt1": True,
                                      "pathFormat": "path"})
    answer = connection.send_request("attach", attach)
    while (event := connection.next_event(30)) and event.get("event") != "initialized":
        pass
    connection.request("setExceptionBreakpoints", {"filters": ["uncaught"]})
    connection.request("configurationDone")
    connection.wait_response(answer, "attach", 30)
    while True:
        event = connection.next_event(timeout)
        assert event is not None, "the debuggee never stopped"
        if event.get("event") == "stopped" and event["body"].get("reason") == "exception":
            return event["body"]["threadId"]


def stop_and_probe(connection: DapConnection) -> dict:
    """Attach, run to the uncaught exception and collect `{exceptionInfo,
    stackTrace, probes}` as the VS Code extension sends them to the server.
    The caller disconnects."""
    thread_id = stop_at_uncaught_exception(connection, {"justMyCode": True}, timeout=60)
    exception_info = connection.request("exceptionInfo", {"threadId": thread_id})
    stack_trace = connection.request("stackTrace", {"threadId": thread_id})
    frame_id = stack_trace["stackFrames"][0]["id"]
    probes = {}
    for probe in probe_expressions():
        try:
            probes[probe["name"]] = connection.request(
                "evaluate", {"expression": probe["expression"], "frameId": frame_id, "context": "watch"})
        except Exception as exc:  # an evaluation error travels as an error dict
            probes[probe["name"]] = {"error": str(exc)}
    return {"exceptionInfo": exception_info, "stackTrace": stack_trace, "probes": probes}


def stop_under_debugpy(script: Path, launch_env: dict[str, str] | None = None) -> tuple[dict, int]:
    """Run `script` under a real debugpy (with `launch_env` merged into the environment), stop on
    its uncaught exception and collect what an editor's debug tracker sends: exceptionInfo,
    stackTrace and the probe results; with the debuggee's pid."""
    with debugpy_session([str(script)], script.parent, launch_env) as (connection, debuggee):
        return stop_and_probe(connection), debuggee.pid
