"""Run the real `traindoctor` CLI and look at the processes it leaves."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parents[2]


def env(**extra: str) -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("TRAINDOCTOR_LIVE_TRACE", None)
    environment["PATH"] = str(Path(PYTHON).parent) + os.pathsep + environment.get("PATH", "")
    environment.update(extra)
    return environment


def traindoctor(*args: str, cwd: Path | None = None, timeout: float = 120, input: bytes | None = None,
                **popen: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([PYTHON, "-m", "traindoctor", *args], capture_output=True, timeout=timeout,
                          cwd=cwd, env=popen.pop("env", None) or env(), input=input, **popen)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains `marker`, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2:].split()[0]
        if marker in cmdline and state != b"Z":
            found.append(int(entry))
    return found


def processes_with_env(marker: str) -> list[int]:
    """Live processes whose environment holds TD_RELIABILITY_MARKER=`marker` (all a test's descendants)."""
    wanted = f"TD_RELIABILITY_MARKER={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        if wanted in environ and stat[stat.rfind(b")") + 2:].split()[0] != b"Z":
            found.append(int(entry))
    return found


def wait_until_gone(marker: str, timeout: float = 15.0) -> list[int]:
    """The processes still alive with the environment `marker` after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with_env(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def kill_quietly(pids: list[int]) -> None:
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
