"""`traindoctor run` leaves no process behind and never leaves one stuck (checked in /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from reliability_helpers import PYTHON, env, kill_quietly, processes_with_env, wait_until_gone

SCRIPTS = Path(__file__).parent / "scripts"
pytestmark = pytest.mark.slow


class Run:
    """`traindoctor run -- python SCRIPT` whose every descendant carries a marker in its environment."""

    def __init__(self, script: str) -> None:
        self.marker = uuid.uuid4().hex
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "traindoctor", "run", "--", PYTHON, str(SCRIPTS / script)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(TD_RELIABILITY_MARKER=self.marker),
        )

    def wait_for(self, line: bytes, timeout: float = 120) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.proc.stdout.readline()
            if not got:
                raise AssertionError(f"exited before printing {line!r}: {self.proc.wait()} {self.proc.stderr.read()}")
            if got.strip() == line:
                return
        raise AssertionError(f"no {line!r} within {timeout} s")

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cleanup()
            raise
        return self.proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def left_behind(self, timeout: float = 15) -> list[int]:
        left = wait_until_gone(self.marker, timeout)
        kill_quietly(left)
        return left

    def cleanup(self) -> None:
        self.proc.kill()
        self.proc.wait()
        kill_quietly(processes_with_env(self.marker))


def _describe(pids: list[int]) -> str:
    out = []
    for pid in pids:
        try:
            out.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            pass
    return "\n".join(out)


def test_children_still_running_when_the_parent_fails_finish_and_nothing_stays():
    run = Run("parent_fails_children_run.py")
    code, out, err = run.finish()
    left = run.left_behind()
    assert not left, _describe(left)
    assert code == 1, err
    assert "forked child done" in out and "subprocess done" in out  # they finished as under plain python
    assert "ValueError" in err


def test_children_announced_after_the_diagnosis_are_answered():
    run = Run("late_children.py")
    code, out, err = run.finish()
    left = run.left_behind()
    assert not left, _describe(left)
    assert "late child 0 done" in out and "late child 1 done" in out, err
    assert "KeyError" in err  # diagnosed before the children started
    assert code == 0, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_is_forwarded_and_nothing_is_left(signum):
    run = Run("sleeper.py")
    try:
        run.wait_for(b"ready")
        run.proc.send_signal(signum)
        code, _out, err = run.finish(timeout=60)
    finally:
        left = run.left_behind()
    assert not left, _describe(left)
    assert code == 128 + signum, err
    # The child's own KeyboardInterrupt traceback is its business; none comes from traindoctor.
    assert "traindoctor/cli" not in err and "traindoctor/live" not in err, err


def test_the_child_dies_when_traindoctor_is_killed():
    run = Run("sleeper.py")
    try:
        run.wait_for(b"ready")
        assert len(processes_with_env(run.marker)) >= 3  # traindoctor, the child, its grandchild (and more)
        run.proc.kill()
        run.proc.wait()
    finally:
        left = run.left_behind(timeout=20)
    assert not left, _describe(left)


def test_a_child_ignoring_sigint_and_sigterm_is_killed_with_everything_it_started():
    run = Run("stubborn.py")
    try:
        run.wait_for(b"ready")
        run.proc.send_signal(signal.SIGINT)
        code, _out, err = run.finish(timeout=90)
    finally:
        left = run.left_behind()
    assert not left, _describe(left)
    assert code == 137, err
    note = err.strip().splitlines()[-1]
    assert "traindoctor killed the process with SIGKILL" in note, err
    assert "out-of-memory" not in err
