"""Run `traindoctor run|attach` on the failing scripts in tests/live/scripts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_helpers import traindoctor as run_cli

SCRIPTS = Path(__file__).parent / "scripts"
PYTHON = sys.executable


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def payload(self) -> dict[str, Any]:
        """The JSON object `--format json` prints as the last stdout line."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, f"no output; stderr:\n{self.stderr}"
        return json.loads(lines[-1])

    @property
    def diagnosis(self) -> dict[str, Any]:
        payload = self.payload
        assert payload["failure"], payload
        assert payload["diagnosis"] is not None, payload
        return payload["diagnosis"]


def env() -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("TRAINDOCTOR_LIVE_TRACE", None)
    bin_dir = str(Path(PYTHON).parent)
    environment["PATH"] = bin_dir + os.pathsep + environment.get("PATH", "")
    return environment


def traindoctor(*args: str, cwd: Path | None = None, timeout: float = 60) -> Outcome:
    done = run_cli(*args, cwd=cwd, timeout=timeout, env=env())
    return Outcome(done.returncode, done.stdout, done.stderr)


def run_json(script: str, *script_args: str, cwd: Path | None = None) -> Outcome:
    return traindoctor("run", "--format", "json", "--", PYTHON, str(SCRIPTS / script), *script_args, cwd=cwd)


def plain(script: str, *script_args: str, cwd: Path | None = None) -> Outcome:
    done = subprocess.run(
        [PYTHON, str(SCRIPTS / script), *script_args], capture_output=True, text=True, timeout=60, cwd=cwd, env=env()
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tensor(diagnosis: dict[str, Any], name: str) -> dict[str, Any]:
    tensors = diagnosis["details"]["probes"]["tensors"]
    found = [t for t in tensors if t["name"] == name]
    assert found, f"no tensor {name!r} among {[t['name'] for t in tensors]}"
    return found[0]
