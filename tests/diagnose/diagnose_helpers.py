"""Helpers for the diagnosis tests: run a real failing script, read bundled logs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
DATA = HERE / "data"
REPO = HERE.parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_failing(args: list[str], cwd: Path, timeout: float = 60) -> str:
    """Run a command that must fail; return its stderr (the log a user would paste)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode != 0, f"{args} did not fail:\n{done.stdout}\n{done.stderr}"
    return done.stderr


def run_script(name: str, cwd: Path, *extra: str) -> str:
    return run_failing([sys.executable, str(SCRIPTS / name), *extra], cwd)


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line containing `needle` (so tests survive edits)."""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


