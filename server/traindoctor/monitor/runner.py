"""Start the user's command with the step monitor (optionally under debugpy) and wait for it.

`python [opts] train.py ARGS` becomes `python [opts] <monitor>/bootstrap.py train.py ARGS`
(and `-m module` likewise); the child inherits stdout and stderr, so its output
streams through unchanged. With `stop_on`, the same command runs under debugpy
and the live session of `traindoctor run` diagnoses the stop in the training frame.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..live.launcher import DebuggeeCommand, LaunchError, exit_code, free_port, parse_command
from .launchers import accelerate_command, is_launcher, torchrun_command

MONITOR_DIR = Path(__file__).resolve().parent
BOOTSTRAP = MONITOR_DIR / "bootstrap.py"
CONFIG_VARIABLE = "TRAINDOCTOR_MONITOR"


@dataclass(frozen=True)
class MonitoredRun:
    run_dir: Path
    exit_code: int
    timed_out: bool = False
    live: Any = None  # the live session's StopReport, when it stopped under debugpy
    live_note: str | None = None


def prepare(command: list[str]) -> DebuggeeCommand:
    """The user's command, checked (raises LaunchError with a one-line reason)."""
    if command and command[0] == "--":
        command = command[1:]
    debuggee = accelerate_command(command) or parse_command(command)
    if debuggee.target and debuggee.target[0] == "-c":
        raise LaunchError("`python -c` is not supported: pass a script or `-m module`")
    if is_launcher(debuggee):
        torchrun_command(debuggee)  # checks the launcher's own options and the script (LaunchError)
    return debuggee


def new_run_dir(debuggee: DebuggeeCommand, base: Path | None = None, label: str = "") -> Path:
    target = debuggee.target[1] if debuggee.target[0] == "-m" else Path(debuggee.target[0]).stem
    if is_launcher(debuggee):  # the job is named after its script
        script = torchrun_command(debuggee).script  # type: ignore[union-attr]
        target = Path(script).stem if script.endswith(".py") else script
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", target)[:40]
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"{stamp}-{slug}{('-' + label) if label else ''}-{secrets.token_hex(2)}"
    folder = (base or Path.cwd() / ".traindoctor" / "runs") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _environment(config: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    env[CONFIG_VARIABLE] = json.dumps(config)
    return env


def run_plain(debuggee: DebuggeeCommand, config: dict[str, Any], timeout: float | None = None) -> MonitoredRun:
    argv = [debuggee.python, *debuggee.python_options, str(BOOTSTRAP), *debuggee.target]
    try:
        child = subprocess.Popen(argv, env=_environment(config))
    except OSError as exc:
        raise LaunchError(f"cannot start `{debuggee.python}`: {exc.strerror or exc}") from None
    returncode, timed_out = supervise(child, _stop, timeout)
    return MonitoredRun(Path(config["run_dir"]), exit_code(returncode), timed_out)


def run_debugged(debuggee: DebuggeeCommand, config: dict[str, Any], timeout: float | None = None,
                 on_report: Any = None) -> MonitoredRun:
    """Under debugpy: the monitor raises at the stop step, the live session reads the training frame."""
    from ..live.dap import DapError
    from ..live.session import LiveSession

    host = "127.0.0.1"
    port = free_port(host)
    wrapped = DebuggeeCommand(debuggee.python, debuggee.python_options, (str(BOOTSTRAP), *debuggee.target))
    env = _environment(config)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # The monitor's own frames are library code to debugpy: the stop shows the user's line.
    env["PYDEVD_FILTERS"] = json.dumps({f"{MONITOR_DIR.as_posix()}/**": True})
    try:
        child = subprocess.Popen(wrapped.argv(host, port), env=env)
    except OSError as exc:
        raise LaunchError(f"cannot start `{debuggee.python}`: {exc.strerror or exc}") from None
    reports: list[Any] = []

    def report(stop: Any) -> None:
        reports.append(stop)
        if on_report is not None:
            on_report(stop)

    session = LiveSession(host, port, on_report=report)
    deadline = None if timeout is None else time.monotonic() + timeout
    timed_out = False
    with interrupts_noted() as interrupts:
        try:
            try:
                session.start(retry_while=lambda: child.poll() is None and not interrupts)
            except DapError as exc:
                if interrupts:
                    raise KeyboardInterrupt from None
                if child.poll() is None:
                    _stop(child)
                raise LaunchError(f"could not start the debug session: {exc}") from None
            while not session.wait(0.2):
                if interrupts:
                    raise KeyboardInterrupt
                if child.poll() is not None:
                    session.wait(3.0)
                    break
                if deadline is not None and time.monotonic() > deadline:
                    timed_out = True
                    break
            session.close()
            returncode = _stop(child) if timed_out else child.wait()
        except BaseException:  # as in run_plain
            session.close()
            _stop(child)
            raise
    note = None if reports else ("; ".join(session.errors[:2]) or None)
    return MonitoredRun(Path(config["run_dir"]), exit_code(returncode), timed_out,
                        reports[0] if reports else None, note)


_POLL_S = 0.2


def supervise(child: subprocess.Popen[bytes], stop: Callable[[subprocess.Popen[bytes]], int],
              timeout: float | None = None, on_poll: Callable[[], int | None] | None = None,
              poll_s: float = _POLL_S) -> tuple[int, bool]:
    """Wait for `child`: (its return code, whether the timeout stopped it). Between polls a noted Ctrl-C or the
    timeout stops it with `stop(child)`, and `on_poll()` may end the wait with a return code of its own (a hang
    it stopped). Whatever ends the wait early, a bug of ours included, the child does not outlive it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with interrupts_noted() as interrupts:
        try:
            while True:
                try:
                    return child.wait(poll_s), False
                except subprocess.TimeoutExpired:
                    pass
                if interrupts:
                    raise KeyboardInterrupt
                if deadline is not None and time.monotonic() > deadline:
                    return stop(child), True
                if on_poll is not None:
                    returncode = on_poll()
                    if returncode is not None:
                        return returncode, False
        except BaseException:  # Ctrl-C, or a bug of ours (a second Ctrl-C is only noted: the stop runs in peace)
            stop(child)
            raise


@contextmanager
def interrupts_noted() -> Iterator[list[int]]:
    """Ctrl-C only noted (the list fills), to be acted on between polls: a KeyboardInterrupt raised inside
    Popen.wait(timeout) or poll() between the wait lock's acquire and its try leaves the lock held, and the
    final wait() of the stop then blocks for ever (a fresh-clone CI run's watch of a torchrun job did not stop
    120 s after SIGINT). Off the main thread Python delivers no signal, and nothing is installed."""
    interrupts: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: interrupts.append(signum))
    except ValueError:
        previous = None
    try:
        yield interrupts
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _stop(child: subprocess.Popen[bytes]) -> int:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
    return child.wait()
