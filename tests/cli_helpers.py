"""The `traindoctor` command line run as a user runs it: a fresh `python -m traindoctor` process of
this interpreter, its output captured as text, stdin closed (a command that waited on it would hang
the suite), and a timeout, so that a hang fails the test instead of stalling it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PYTHON = sys.executable


def traindoctor(*args: str, cwd: Path | None = None, timeout: float = 120,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "traindoctor", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL)
