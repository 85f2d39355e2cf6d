"""One live-diagnosis session: DAP connections to a debuggee and its children.

Each connection (the root process, then every subprocess debugpy announces
with `debugpyAttach`) gets its own thread. On a `stopped` event for an
exception the thread reads exceptionInfo and the stack, evaluates the fixed
probes in the deepest user frame, and builds the Diagnosis.

debugpy stops twice for a failure in the user's code: first when the exception
leaves user code (`userUnhandled`, breakMode "always") and again when it ends
the process (`uncaught`, breakMode "unhandled"). Only the second proves a
failure; in a subprocess the first is kept as pending evidence, since the
library may still handle it. A DataLoader worker's exception is handled by torch inside the
worker and re-raised in the parent, so a pending stop in a child whose
exception type the final exception names is the better explanation: it carries
the worker's own frame and tensors.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..internal_frames import excepthook_expression
from ..model import Diagnosis, Probes
from .dap import DapConnection, DapError
from .from_dap import (
    build_probes,
    current_frame,
    diagnose_probes,
    parse_probe_results,
    traceback_text,
    user_frame,
    with_process,
)
from .probes import probe_expressions

_NOTE_MARK = "       (note:"
# Deliberate exits and Ctrl-C: the exit code already tells the story.
_NOT_FAILURES = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")
# How debugpy's adapter answers pending requests once the debuggee process died.
_GONE_MARKERS = ("disconnected unexpectedly", "No more messages")
DIED_WHILE_READING = "the process died while traindoctor was reading it"
# Handled exceptions probed per subprocess (each costs a few hundred ms).
_MAX_PROBED_HANDLED = 3
# TRAINDOCTOR_LIVE_TRACE=1 logs every DAP event to stderr (for debugging traindoctor itself).
_TRACE = os.environ.get("TRAINDOCTOR_LIVE_TRACE") == "1"


@dataclass(frozen=True)
class Timeouts:
    connect: float = 30.0  # until the adapter accepts the first connection
    handshake: float = 20.0  # initialize .. configurationDone
    request: float = 10.0  # exceptionInfo, stackTrace, continue
    probe: float = 5.0  # one probe evaluation
    probes_total: float = 15.0  # all probes of one stop


@dataclass(frozen=True)
class StopReport:
    """What one exception stop produced."""

    diagnosis: Diagnosis | None
    error: str | None
    unhandled: bool
    exception_type: str
    message: str
    process: dict[str, Any]
    traceback: str
    stopped_at: float  # time.monotonic() of the first stop for this exception
    seconds: float  # from the stopped event to the diagnosis
    probes: Probes | None = None


@dataclass
class _Process:
    connection: DapConnection
    label: str
    subprocess: bool
    pid: int | None = None
    name: str | None = None
    exit_code: int | None = None
    pending: list[StopReport] = field(default_factory=list)
    stopped: bool = False  # inside an exception stop (reading it)
    handled: int = 0  # exceptions that left user code but were handled (userUnhandled stops)


class LiveSession:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        on_report: Callable[[StopReport], None],
        timeouts: Timeouts = Timeouts(),
        follow_subprocesses: bool = True,
        forward_trace: Callable[[int | None], str] | None = None,
    ) -> None:
        """`forward_trace(pid)`: what anomaly mode printed in that process before the exception
        (the forward call of the failing autograd node), read in front of the traceback."""
        self.host = host
        self._forward_trace = forward_trace
        self.port = port
        self.timeouts = timeouts
        self.follow_subprocesses = follow_subprocesses
        self._on_report = on_report
        self._lock = threading.Lock()
        self._processes: list[_Process] = []
        self._threads: list[threading.Thread] = []
        self.final: StopReport | None = None
        self.errors: list[str] = []
        self.finished = threading.Event()  # the root connection ended or the final report went out
        self._root: _Process | None = None
        self._closing = False
        self._attaching = 0  # subprocess announcements being attached

    # --- lifecycle --------------------------------------------------------------

    def start(self, retry_while: Callable[[], bool] | None = None) -> None:
        """Connect to the root debuggee and finish the handshake (raises DapError)."""
        connection = DapConnection.connect(
            self.host, self.port, timeout=self.timeouts.connect, name="debuggee", retry_while=retry_while
        )
        process = _Process(connection, "main", subprocess=False)
        self._root = process
        try:
            backlog = self._handshake(process, {})
        except DapError:
            connection.close()
            raise
        self._spawn_thread(process, backlog)

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    @property
    def pending(self) -> list[StopReport]:
        with self._lock:
            return [r for p in self._processes for r in p.pending]

    @property
    def handled(self) -> int:
        with self._lock:
            return sum(p.handled for p in self._processes)

    @property
    def root_exit_code(self) -> int | None:
        return self._root.exit_code if self._root else None

    def root_ended(self) -> bool:
        """Whether the root process's connection is gone (it exited, or we closed it)."""
        return self._root is None or self._root.connection.closed.is_set()

    def following_subprocesses(self) -> bool:
        """Whether a subprocess connection is still open (or still being attached)."""
        with self._lock:
            open_connections = any(p.subprocess and not p.connection.closed.is_set() for p in self._processes)
            return open_connections or self._attaching > 0

    def close(self) -> None:
        """Disconnect from every process, letting each run on (never terminate it)."""
        with self._lock:
            self._closing = True
            processes = list(self._processes)
        for process in processes:
            connection = process.connection
            if connection.closed.is_set():
                continue
            try:
                connection.request("disconnect", {"restart": False, "terminateDebuggee": False}, timeout=2.0)
            except DapError:
                pass
            connection.close()
        for thread in list(self._threads):
            thread.join(timeout=2.0)

    # --- per connection -------------------------------------------------------------

    def _handshake(self, process: _Process, attach_arguments: dict[str, Any]) -> list[dict[str, Any]]:
        connection = process.connection
        t = self.timeouts.handshake
        try:
            connection.request(
                "initialize",
                {
                    "clientID": "traindoctor",
                    "clientName": "traindoctor",
                    "adapterID": "debugpy",
                    "pathFormat": "path",
                    "linesStartAt1": True,
                    "columnsStartAt1": True,
                    "supportsRunInTerminalRequest": False,
                    "supportsStartDebuggingRequest": False,
                },
                timeout=t,
            )
        except DapError as exc:
            raise DapError(f"{self.host}:{self.port} did not answer as a debug adapter ({exc})") from None
        arguments = dict(attach_arguments)
        arguments.pop("request", None)
        arguments.update({"justMyCode": True, "subProcess": self.follow_subprocesses, "redirectOutput": False})
        attach = connection.send_request("attach", arguments)
        backlog: list[dict[str, Any]] = []
        deadline = time.monotonic() + t
        while True:
            event = connection.next_event(max(0.0, deadline - time.monotonic()))
            if event is None:
                if connection.closed.is_set():
                    raise DapError("the debuggee closed the connection during the handshake")
                raise DapError(f"no 'initialized' event from the debug adapter within {t:g} s")
            if event.get("event") == "initialized":
                break
            backlog.append(event)
        connection.request("setExceptionBreakpoints", {"filters": ["uncaught", "userUnhandled"]}, timeout=t)
        connection.request("configurationDone", {}, timeout=t)
        connection.wait_response(attach, "attach", t)
        with self._lock:
            self._processes.append(process)
        return backlog

    def _spawn_thread(self, process: _Process, backlog: list[dict[str, Any]]) -> None:
        thread = threading.Thread(target=self._serve, args=(process, backlog), name=f"td-{process.label}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self, process: _Process, backlog: list[dict[str, Any]]) -> None:
        connection = process.connection
        try:
            for event in backlog:
                self._handle(process, event)
            while not connection.closed.is_set():
                event = connection.next_event(0.5)
                if event is None:
                    continue
                if not self._handle(process, event):
                    break
        except DapError as exc:
            if self.final is None:
                gone = connection.closed.is_set() or any(m in str(exc) for m in _GONE_MARKERS)
                self._note_error(DIED_WHILE_READING if gone and process.stopped else f"{process.label}: {exc}")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # A message of the wrong shape: not debugpy, or a broken one. One line, no traceback.
            self._note_error(f"{process.label}: unexpected message from the debug adapter ({type(exc).__name__})")
        finally:
            connection.close()
            if process is self._root:
                self.finished.set()

    def _handle(self, process: _Process, event: dict[str, Any]) -> bool:
        """Act on one event; False ends this connection."""
        name = event.get("event")
        body = event.get("body")
        if not isinstance(body, dict):
            body = {}
        if _TRACE:
            print(f"traindoctor-trace: {process.label}: {name} {str(body)[:300]}", file=sys.stderr, flush=True)
        if name == "process":
            process.pid = body.get("systemProcessId")
            process.name = body.get("name")
        elif name == "exited":
            process.exit_code = body.get("exitCode")
        elif name == "terminated":
            return False
        elif name == "debugpyAttach" and not self._closing:
            # Also after the diagnosis: an announced subprocess waits for us, paused.
            self._follow(body)
        elif name == "stopped" and body.get("reason") == "exception":
            self._on_exception(process, body.get("threadId"))
        return True

    def _follow(self, body: dict[str, Any]) -> None:
        """Attach to a subprocess debugpy announced (a torchrun rank, a DataLoader worker)."""
        connect = body.get("connect") or {}
        host = str(connect.get("host") or self.host)
        port = int(connect.get("port") or self.port)
        label = f"subprocess {body.get('subProcessId', '?')}"

        with self._lock:
            self._attaching += 1

        def attach() -> None:
            try:
                try:
                    connection = DapConnection.connect(host, port, timeout=self.timeouts.connect, name=label)
                    process = _Process(connection, label, subprocess=True, pid=body.get("subProcessId"))
                    try:
                        backlog = self._handshake(process, body)
                    except DapError:
                        connection.close()
                        raise
                finally:
                    with self._lock:
                        self._attaching -= 1
                self._serve(process, backlog)
            except DapError as exc:
                if _TRACE:
                    print(f"traindoctor-trace: could not follow {label}: {exc}", file=sys.stderr, flush=True)
                self._note_error(f"could not follow {label}: {exc}")

        thread = threading.Thread(target=attach, name=f"td-{label}", daemon=True)
        self._threads.append(thread)
        thread.start()

    # --- stops ----------------------------------------------------------------------

    def _on_exception(self, process: _Process, thread_id: Any) -> None:
        connection = process.connection
        request_timeout = self.timeouts.request

        def resume() -> None:
            connection.request("continue", {"threadId": thread_id}, timeout=request_timeout)
            process.stopped = False

        if self.final is not None:
            if connection.request("exceptionInfo", {"threadId": thread_id},
                                  timeout=request_timeout).get("breakMode") == "unhandled":
                self._hide_internal_frames(connection, thread_id)
            resume()
            return
        started = time.monotonic()
        process.stopped = True
        info = connection.request("exceptionInfo", {"threadId": thread_id}, timeout=request_timeout)
        unhandled = info.get("breakMode") == "unhandled"
        exception_type = str((info.get("details") or {}).get("typeName") or info.get("exceptionId") or "")
        exception_type = exception_type.split(_NOTE_MARK)[0].strip()
        message = str(info.get("description") or "")
        if exception_type.rsplit(".", 1)[-1] in _NOT_FAILURES:
            resume()
            return
        if not unhandled:
            process.handled += 1
            # Only a subprocess's handled exception can be the story (torch's worker
            # loop catches the dataset's error); in the root process the uncaught
            # stop that follows a real failure has the same frames. Bounded, so
            # code that raises and handles exceptions routinely stays fast.
            if not process.subprocess or len(process.pending) >= _MAX_PROBED_HANDLED:
                resume()
                return
        earlier = next(
            (r for r in process.pending if r.exception_type == exception_type and r.message == message), None
        )
        if unhandled and earlier is not None:
            # The same exception, now ending the process: its first stop already read everything.
            report = dataclasses.replace(earlier, unhandled=True, seconds=time.monotonic() - earlier.stopped_at)
        else:
            report = self._diagnose(process, thread_id, info, exception_type, message, unhandled, started)
        if not unhandled:
            with self._lock:
                process.pending.append(report)
            resume()
            return
        self._finish(report)
        # Let it go on to its end (printing its traceback, running atexit, joining
        # its children) as it would without us, but for debugpy's and runpy's frames.
        self._hide_internal_frames(connection, thread_id)
        try:
            resume()
        except DapError:
            pass  # it already went away: nothing left to resume

    def _diagnose(self, process: _Process, thread_id: Any, info: dict[str, Any], exception_type: str,
                  message: str, unhandled: bool, started: float) -> StopReport:
        connection = process.connection
        stack = connection.request(
            "stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 200}, timeout=self.timeouts.request
        )
        raw_frame, _ = user_frame(stack)
        raw_current = current_frame(stack)
        oom = "out of memory" in message.lower() or "OutOfMemory" in exception_type or "can't allocate memory" in message
        answers: dict[str, Any] = {}
        budget_end = time.monotonic() + self.timeouts.probes_total
        for probe in probe_expressions():
            if probe["when"] == "oom" and not oom:
                continue
            frame = raw_current if probe["name"] == "traceback" else raw_frame
            answers[probe["name"]] = self._evaluate(connection, probe["expression"], frame, budget_end)
        results = parse_probe_results(answers)
        probes = build_probes(results, user_frame(stack)[1])
        warning = self._forward_trace(process.pid) if self._forward_trace is not None else ""
        text = traceback_text(info, results, warning)
        process_info = {"label": process.label, "pid": process.pid, "name": process.name,
                        "subprocess": process.subprocess}
        diagnosis, error = self._build(text, probes, process_info)
        return StopReport(diagnosis, error, unhandled, exception_type, message, process_info, text,
                          started, time.monotonic() - started, probes)

    def _hide_internal_frames(self, connection: DapConnection, thread_id: Any) -> None:
        """Before a debuggee goes on to die of an unhandled exception: the traceback it prints
        shows the user's frames, not debugpy's, runpy's or ours, and says how many it hid
        (internal_frames.py's excepthook). Best effort: without it, Python's own traceback."""
        try:
            stack = connection.request("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 1},
                                       timeout=self.timeouts.request)
            frames = stack.get("stackFrames") or []
            if frames:
                connection.request("evaluate", {"expression": excepthook_expression(), "frameId": frames[0].get("id"),
                                                "context": "watch"}, timeout=self.timeouts.probe)
        except (DapError, OSError):  # OSError: internal_frames.py unreadable
            pass

    @staticmethod
    def _build(text: str, probes: Probes, process_info: dict[str, Any]) -> tuple[Diagnosis | None, str | None]:
        try:
            diagnosis = diagnose_probes(text, probes)
        except Exception as exc:  # the traceback engine failing must not lose the session
            return None, f"could not build the diagnosis: {type(exc).__name__}: {exc}"
        if diagnosis.rank is not None:
            process_info["rank"] = diagnosis.rank
        if probes.worker is not None:
            process_info["worker"] = probes.worker
        return with_process(diagnosis, process_info), None

    def _evaluate(self, connection: DapConnection, expression: str, frame: dict[str, Any] | None,
                  budget_end: float) -> dict[str, Any]:
        if frame is None:
            return {"error": "no frame to evaluate in"}
        remaining = budget_end - time.monotonic()
        if remaining <= 0:
            return {"error": "skipped: the probe time budget was spent"}
        try:
            return connection.request(
                "evaluate",
                {"expression": expression, "frameId": frame.get("id"), "context": "watch"},
                timeout=min(self.timeouts.probe, remaining),
            )
        except DapError as exc:
            if connection.closed.is_set() or any(m in str(exc) for m in _GONE_MARKERS):
                raise
            return {"error": str(exc)}

    def _finish(self, report: StopReport) -> None:
        with self._lock:
            if self.final is not None:
                return
            self.final = report  # claim it: later stops only resume
            cause = self._child_cause(report)
        if cause is not None:
            # The parent's re-raise classifies the failure (its text holds the
            # worker's traceback); the child's stop supplies the frame and tensors.
            process_info = dict(cause.process)
            diagnosis, error = self._build(report.traceback, cause.probes, process_info)
            if diagnosis is not None:
                details = dict(diagnosis.details)
                details["reraised_by"] = dict(report.process)
                diagnosis = dataclasses.replace(diagnosis, details=details)
                report = dataclasses.replace(
                    report, diagnosis=diagnosis, error=error, process=process_info, probes=cause.probes,
                    seconds=time.monotonic() - cause.stopped_at,
                )
                self.final = report
        try:
            self._on_report(report)
        except Exception as exc:  # printing must not kill the session thread
            self._note_error(f"could not report the diagnosis: {type(exc).__name__}: {exc}")
        finally:
            self.finished.set()

    def _child_cause(self, report: StopReport) -> StopReport | None:
        """A subprocess's pending stop whose exception the final one re-raises."""
        for process in self._processes:
            if not process.subprocess:
                continue
            for pending in process.pending:
                type_name = pending.exception_type.rsplit(".", 1)[-1]
                # The re-raise quotes the original: "Caught ValueError in DataLoader
                # worker process 0. Original Traceback ... ValueError: <message>".
                if (pending.probes is not None and type_name and type_name in report.message
                        and pending.message.strip() in report.message):
                    return pending
        return None

    def _note_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)
