"""`traindoctor run -- CMD` and `traindoctor attach HOST:PORT`: live diagnosis.

`run` starts CMD under debugpy on loopback, stops it at the failing
exception, probes the failing frame and prints the Diagnosis; the child's
output streams through unchanged and its exit code is ours. `attach` does the
same for a process already listening (`python -m debugpy --listen 5678 ...`).

Text goes to stderr as soon as the failure is diagnosed (stdout stays the
child's). `--format json` prints one object on stdout once the child ended:
{"failure", "exit_code", "note", "diagnosis"}.

An autograd error whose forward line only anomaly mode gives (live/anomaly.py) adds
"anomaly_rerun": {"offered", "command"}; `--anomaly=auto` runs the command once more with
anomaly detection and adds "rerun", its "exit_code", and "first_diagnosis" (or a "note" when
the re-run did not fail). `--anomaly` runs with anomaly detection from the start.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import re
import signal
import socket
import sys
import time
from typing import Any, Iterator

from . import errors

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run",
        help="run a training command under debugpy and diagnose it live when it fails",
        description="Run CMD under debugpy (loopback only), stop at the failing exception, read the failing "
        "frame's tensors, modules, optimizer and memory, and explain the failure. The exit code is the "
        "command's.",
        usage="traindoctor run [--format text|json] [--record DIR] [--anomaly[=auto]] -- python train.py ARGS",
    )
    _common_options(run)
    run.add_argument(
        "--anomaly", nargs="?", const="on", default="off", choices=("on", "auto", "off"),
        help="on: run with autograd anomaly detection (torch.autograd.set_detect_anomaly(True), set up by "
        "traindoctor; the script is unchanged), which names the forward line of an in-place error or of a NaN "
        "from backward. auto: run normally and, only on such an error, run the command once more with it on. "
        "off (default): offer the command that re-runs with it.",
    )
    run.add_argument("command", nargs=argparse.REMAINDER, help="python train.py ARGS | python -m module | torchrun ...")
    run.set_defaults(func=run_command)

    attach = subparsers.add_parser(
        "attach",
        help="attach to a process listening with debugpy and diagnose it live when it fails",
        description="Connect to `python -m debugpy --listen HOST:PORT ...` and diagnose its failure. Exit "
        "code: 1 when a failure was diagnosed, else the process's exit code (0 if unknown).",
    )
    attach.add_argument("address", metavar="HOST:PORT", help="where debugpy listens (e.g. 127.0.0.1:5678 or 5678)")
    attach.add_argument("--allow-remote", action="store_true", help="allow a host other than loopback")
    _common_options(attach)
    attach.set_defaults(func=attach_command)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--record", metavar="DIR", help="also write a Markdown debug record into DIR")
    parser.add_argument("--probe-timeout", type=float, default=5.0, metavar="S", help=argparse.SUPPRESS)


def _fail(message: str, code: int = 2) -> int:
    return errors.error(message, code)


# --- output -------------------------------------------------------------------------


class _Reporter:
    """Prints the diagnosis the moment it exists (text) or once at the end (JSON)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.format = args.format
        self.record = args.record
        self.report: Any = None
        self.record_error: str | None = None
        self.extra: dict[str, Any] = {}  # more top-level keys of the JSON object
        self.note: str | None = None  # how the run ended, when that is not a diagnosed failure

    def on_report(self, report: Any) -> None:
        self.report = report
        if self.record and report.diagnosis is not None:
            try:
                from ..diagnose.record import write_record

                write_record(report.diagnosis, self.record, source_text=report.traceback)
            except Exception as exc:  # a record that cannot be written must not hide the diagnosis
                self.record_error = f"could not write the record into {self.record}: {exc}"
        if self.format == "text":
            self._print_text(report)

    def _print_text(self, report: Any) -> None:
        out = sys.stderr
        if report.diagnosis is None:
            print(f"traindoctor: {report.exception_type}: {report.message[:300]} ({report.error})", file=out)
        else:
            from ..diagnose import render_text

            where = _where(report.process)
            print(f"\ntraindoctor: live diagnosis{where} ({report.seconds:.2f} s after the exception)", file=out)
            print(render_text(report.diagnosis).rstrip("\n"), file=out)
        if self.record_error:
            print(f"traindoctor: {self.record_error}", file=out)
        out.flush()

    def finish(self, exit_code: int, note: str | None) -> None:
        if self.format == "text":
            if note:
                print(f"traindoctor: {note}", file=sys.stderr)
            return
        report = self.report
        payload = {
            "failure": report is not None,
            "exit_code": exit_code,
            "note": note,
            "diagnosis": None if report is None or report.diagnosis is None else _diagnosis_json(report),
        }
        if report is not None and report.diagnosis is None:
            payload["error"] = report.error
            payload["exception"] = {"type": report.exception_type, "message": report.message}
        if self.record_error:
            payload["record_error"] = self.record_error
        payload.update(self.extra)
        sys.stdout.flush()
        print(json.dumps(payload, default=str), flush=True)


def _where(process: dict[str, Any]) -> str:
    parts = []
    if process.get("rank") is not None:
        parts.append(f"rank {process['rank']}")
    if process.get("worker") is not None:
        parts.append(f"DataLoader worker {process['worker']}")
    if process.get("pid"):
        parts.append(f"pid {process['pid']}")
    return " of " + ", ".join(parts) if parts else ""


def _diagnosis_json(report: Any) -> dict[str, Any]:
    diagnosis = report.diagnosis
    data = diagnosis.to_json() if hasattr(diagnosis, "to_json") else {}
    details = diagnosis.details or {}
    shown = data.get("details") if isinstance(data.get("details"), dict) else {}
    live = {k: v for k, v in details.items() if k in ("probes", "process", "memory", "worker", "reraised_as")
            and k not in shown}
    if live:
        data["live"] = live
    data["seconds_to_diagnosis"] = round(report.seconds, 3)
    return data


# --- run ------------------------------------------------------------------------------


# After an interrupt or termination request: how long the debuggee may take to
# stop before the next, harder signal (SIGINT -> SIGTERM -> SIGKILL). Ctrl-C gets longer:
# Python unwinds through the user's handlers (a checkpoint saved on KeyboardInterrupt) and
# the debugger's stop on the KeyboardInterrupt, and a second Ctrl-C stops at once.
_STOP_GRACE = 5.0
_INTERRUPT_GRACE = 20.0
# After the debuggee exits: how long we keep serving subprocesses it left running.
_CHILDREN_GRACE = 10.0
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_command(args: argparse.Namespace) -> int:
    from ..live import anomaly
    from ..live.launcher import LaunchError, parse_command

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    try:
        debuggee = parse_command(command)
    except LaunchError as exc:
        return _fail(str(exc))
    if args.anomaly != "off" and set(debuggee.python_options) & set(anomaly.IGNORES_SITE):
        return _fail(f"--anomaly needs the interpreter to load sitecustomize from PYTHONPATH; drop "
                     f"{', '.join(sorted(set(debuggee.python_options) & set(anomaly.IGNORES_SITE)))}")
    reporter = _Reporter(args)
    try:
        code, interrupted = _run_once(args, debuggee, reporter, anomaly_mode=args.anomaly == "on")
    except _NotStarted as exc:
        return exc.code
    first = reporter.report.diagnosis if reporter.report is not None else None
    if args.anomaly == "on" or interrupted or not anomaly.wants_forward_line(first):
        reporter.finish(code, reporter.note)
        return code
    rerun = anomaly.rerun_command(_passed_options(args), command)
    if args.anomaly == "off":
        reporter.extra["anomaly_rerun"] = {"offered": True, "command": rerun}
        if args.format == "text":
            print("traindoctor: torch names the autograd node, not the forward line that created it; anomaly "
                  f"detection prints that line. To run once more with it on: {rerun}", file=sys.stderr, flush=True)
        reporter.finish(code, reporter.note)
        return code
    _rerun_with_anomaly(args, debuggee, reporter, rerun, code)
    return code


def _rerun_with_anomaly(args: argparse.Namespace, debuggee: Any, reporter: "_Reporter", rerun: str,
                        code: int) -> None:
    """--anomaly=auto after an autograd error: the user asked for one more run, with anomaly detection.
    The re-run's diagnosis is the one printed (JSON); the exit code stays the first run's."""
    from ..live import anomaly

    if args.format == "text":
        print("traindoctor: running the command once more with anomaly detection on, to find the forward line "
              "(--anomaly=auto)", file=sys.stderr, flush=True)
    second = _Reporter(args)
    first = reporter.report.diagnosis
    try:
        # An in-place error: only the forward trace is wanted, not a new NaN check that
        # could stop the run at an earlier, different place (torch's own hint: check_nan=False).
        rerun_code, _ = _run_once(args, debuggee, second, anomaly_mode=True,
                                  check_nan=anomaly.nan_from_backward(first))
    except _NotStarted as exc:
        rerun_code = exc.code
    summary: dict[str, Any] = {"offered": True, "command": rerun, "rerun": True, "exit_code": rerun_code}
    if second.report is None or second.report.diagnosis is None:
        summary["note"] = "the run with anomaly detection did not fail the same way" + (
            f" ({second.note})" if second.note else "")
        reporter.extra["anomaly_rerun"] = summary
        if args.format == "text":
            print(f"traindoctor: {summary['note']}; the diagnosis above stands", file=sys.stderr, flush=True)
        reporter.finish(code, reporter.note)
        return
    summary["first_diagnosis"] = _diagnosis_json(reporter.report)
    summary["first_diagnosis"].pop("live", None)  # the first run's probes: the re-run's are in "diagnosis"
    second.extra["anomaly_rerun"] = summary
    second.finish(code, reporter.note)


class _NotStarted(Exception):
    """The command could not be started under debugpy (the reason is already printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _passed_options(args: argparse.Namespace) -> list[str]:
    """The options given to this `run`, to repeat in the command it suggests."""
    options = ["--format", args.format] if args.format != "text" else []
    return options + (["--record", args.record] if args.record else [])


def _run_once(args: argparse.Namespace, debuggee: Any, reporter: "_Reporter", *,
              anomaly_mode: bool, check_nan: bool = True) -> tuple[int, bool]:
    """Run the command to its end under debugpy; the diagnosis goes to `reporter`.
    Returns the exit code and whether the user interrupted it."""
    import shutil
    import tempfile

    from ..live import anomaly
    from ..live.dap import DapError
    from ..live.launcher import LaunchError, exit_code, free_port, signal_name, spawn
    from ..live.session import LiveSession, Timeouts

    host = "127.0.0.1"
    traces = tempfile.mkdtemp(prefix="traindoctor-anomaly-") if anomaly_mode else None
    try:
        env = anomaly.setup(traces, dict(os.environ), check_nan) if traces else None
        try:
            port = free_port(host)
            child = spawn(debuggee, host, port, env)
        except (LaunchError, OSError) as exc:
            raise _NotStarted(_fail(str(exc))) from None
        stopper = _Stopper(child)
        oom_kills_before = _oom_kills()
        forward_trace = (lambda pid: anomaly.forward_trace(traces, pid)) if traces else None
        session = LiveSession(host, port, on_report=reporter.on_report, timeouts=Timeouts(probe=args.probe_timeout),
                              forward_trace=forward_trace)
        try:
            with stopper.forwarding():
                try:
                    session.start(retry_while=lambda: child.poll() is None and stopper.requested is None)
                except DapError as exc:
                    if child.poll() is not None:
                        code = exit_code(child.returncode)
                        raise _NotStarted(_fail(f"the command exited with code {code} before debugpy accepted a "
                                                "connection (is debugpy installed for that Python? is the port "
                                                "taken?)", code or 2)) from None
                    if stopper.requested is None:
                        raise _NotStarted(_fail(f"could not start the debug session: {exc}")) from None
                # Serve the debuggee until it exits, even after the diagnosis: its
                # subprocesses may still announce themselves and must be attached and
                # resumed, or they (and a parent waiting on them) stay paused.
                while child.poll() is None:
                    stopper.escalate()
                    session.wait(0.2)
                # Subprocesses it left running: follow them a while, then let go.
                deadline = time.monotonic() + _CHILDREN_GRACE
                while session.following_subprocesses() and time.monotonic() < deadline:
                    stopper.escalate()
                    time.sleep(0.1)
                session.close()
                returncode = child.wait()
        finally:
            session.close()
            child.close()
    finally:
        if traces:
            shutil.rmtree(traces, ignore_errors=True)
    code = exit_code(returncode)
    reporter.note = _note(session, code, signal_name(returncode), child.killed_by_us, child.pid, oom_kills_before)
    return code, stopper.requested is not None


class _Stopper:
    """Forwards SIGINT/SIGTERM/SIGHUP to the debuggee's process group, then, while
    it does not stop, sends the harder signals: SIGTERM, then SIGKILL to all of it."""

    def __init__(self, child: Any) -> None:
        self.child = child
        self.requested: int | None = None
        self._since = 0.0
        self._sent_term = False

    @contextlib.contextmanager
    def forwarding(self) -> Iterator["_Stopper"]:
        previous = {}
        for signum in _FORWARDED:
            try:
                previous[signum] = signal.signal(signum, self._on_signal)
            except (ValueError, OSError):  # not the main thread
                pass
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.requested is None:
            self.requested, self._since = signum, time.monotonic()
        elif signum == signal.SIGINT:  # a second Ctrl-C: stop now
            self._since = 0.0
        self.child.signal(signum)

    def escalate(self) -> None:
        if self.requested is None:
            return
        grace = _INTERRUPT_GRACE if self.requested == signal.SIGINT and not self._sent_term else _STOP_GRACE
        if time.monotonic() - self._since < grace:
            return
        if not self._sent_term and self.requested != signal.SIGTERM:
            self._sent_term, self._since = True, time.monotonic()
            self.child.signal(signal.SIGTERM)
        else:
            self.child.signal(signal.SIGKILL)


def _note(session: Any, code: int, signal: str | None, killed_by_us: bool = False, pid: int = 0,
          oom_kills_before: int | None = None) -> str | None:
    if session.final is not None:
        failed = [e for e in session.errors if e.startswith("could not report")]
        return failed[0] if failed else None
    if signal:
        if killed_by_us:
            return (f"no Python exception: traindoctor killed the process with {signal} after it did not stop "
                    f"when asked; exit code {code}")
        hint = f" ({_oom_evidence(pid, oom_kills_before)})" if signal == "SIGKILL" else ""
        return f"no Python exception: the process was killed by {signal}{hint}; exit code {code}"
    from ..live.session import DIED_WHILE_READING

    if DIED_WHILE_READING in session.errors:
        return f"{DIED_WHILE_READING} (at an exception stop); exit code {code}"
    errors = "; ".join(session.errors[:2])
    pending = session.pending
    if code == 0:
        handled = f"; {session.handled} exception(s) left user code and were handled" if session.handled else ""
        return f"no failure: the process exited with code 0{handled}"
    note = f"no uncaught Python exception, but the process exited with code {code}"
    if pending:
        last = pending[-1]
        note += f" after handling {last.exception_type}: {last.message[:200]}"
    return note + (f" ({errors})" if errors else "")


def _oom_kills() -> int | None:
    """The cgroup's count of processes the out-of-memory killer killed (cgroup v2)."""
    try:
        with open("/sys/fs/cgroup/memory.events", "rb") as handle:
            for line in handle:
                name, _, value = line.partition(b" ")
                if name == b"oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def _kernel_killed(pid: int) -> bool:
    """Whether the kernel log (when readable) says the OOM killer killed `pid`."""
    wanted = re.compile(rb"Killed process %d\b" % pid)
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        for _ in range(1_000_000):
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                return False
            except OSError:
                continue  # a record overwritten while reading: go on
            if not record:
                return False
            if wanted.search(record):
                return True
    finally:
        os.close(fd)
    return False


def _oom_evidence(pid: int, kills_before: int | None) -> str:
    """Why a SIGKILL nobody here sent may be the out-of-memory killer, in words."""
    kills_after = _oom_kills()
    if _kernel_killed(pid):
        return "the kernel log shows the out-of-memory killer killed it: host memory ran out"
    if kills_before is not None and kills_after is not None and kills_after > kills_before:
        return "the out-of-memory killer of this cgroup killed processes during the run: likely host memory"
    return "not sent by traindoctor; no sign of the out-of-memory killer was readable"


# --- attach ------------------------------------------------------------------------------


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port_text = address.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", address
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"invalid address {address!r}: expected HOST:PORT") from None
    if not 0 < port < 65536:
        raise ValueError(f"invalid port {port}")
    return host, port


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def attach_command(args: argparse.Namespace) -> int:
    from ..live.dap import DapError
    from ..live.session import LiveSession, Timeouts

    try:
        host, port = parse_address(args.address)
    except ValueError as exc:
        return _fail(str(exc))
    if not is_loopback(host) and not args.allow_remote:
        return _fail(f"{host} is not a loopback address; pass --allow-remote to connect to another machine")
    reporter = _Reporter(args)
    session = LiveSession(host, port, on_report=reporter.on_report,
                          timeouts=Timeouts(connect=3.0, probe=args.probe_timeout))
    try:
        session.start()
    except DapError as exc:
        return _fail(str(exc))
    except socket.gaierror as exc:
        return _fail(f"cannot resolve {host}: {exc}")
    try:
        # Follow it to its end, also after the diagnosis: subprocesses announced
        # later are attached and resumed, never left paused.
        while not session.root_ended():
            session.wait(0.5)
        deadline = time.monotonic() + _CHILDREN_GRACE
        while session.following_subprocesses() and time.monotonic() < deadline:
            time.sleep(0.1)
    except KeyboardInterrupt:
        session.close()
        return 130
    session.close()
    if session.final is not None:
        code = 1
    else:
        code = session.root_exit_code if session.root_exit_code is not None else 0
    reporter.finish(code, _note(session, code, None))
    return code
