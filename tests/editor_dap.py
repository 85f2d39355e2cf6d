"""What an editor's debug tracker does with a real debugpy: its own DAP session,
stopped on the uncaught exception, the server's probe expressions evaluated in
the top frame. Used by the live and the language-server tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from traindoctor.live.dap import DapConnection
from traindoctor.live.probes import probe_expressions


def stop_and_probe(connection: DapConnection) -> dict:
    """Attach, run to the uncaught exception and collect `{exceptionInfo,
    stackTrace, probes}` as the VS Code extension sends them to the server.
    The caller disconnects."""
    connection.request("initialize", {"adapterID": "debugpy", "linesStartAt1": True, "columnsStartAt1": True,
                                      "pathFormat": "path"})
    attach = connection.send_request("attach", {"justMyCode": True})
    while (event := connection.next_event(30)) and event.get("event") != "initialized":
        pass
    connection.request("setExceptionBreakpoints", {"filters": ["uncaught"]})
    connection.request("configurationDone")
    connection.wait_response(attach, "attach", 30)
    while True:
        event = connection.next_event(60)
        assert event is not None, "the debuggee never stopped"
        if event.get("event") == "stopped" and event["body"].get("reason") == "exception":
            break
    thread_id = event["body"]["threadId"]
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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    environment = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1", **(launch_env or {}))
    debuggee = subprocess.Popen(
        [sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, cwd=script.parent,
    )
    try:
        connection = DapConnection.connect("127.0.0.1", port, timeout=30, retry_while=lambda: debuggee.poll() is None)
        payload = stop_and_probe(connection)
        connection.request("disconnect", {"terminateDebuggee": True})
        connection.close()
        return payload, debuggee.pid
    finally:
        if debuggee.poll() is None:
            debuggee.kill()
        debuggee.wait()
