"""Run `traindoctor watch|overfit|repro|curves` on the scripts in tests/monitor/scripts."""

from __future__ import annotations

import json
import os
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

    def finding(self, kind: str) -> dict[str, Any]:
        found = [f for f in self.payload["findings"] if f["kind"] == kind]
        assert found, f"no {kind} finding in {[f['kind'] for f in self.payload['findings']]}\n{self.stderr}"
        return found[0]


def env() -> dict[str, str]:
    environment = dict(os.environ)
    # Two cores shared by many processes: one thread each keeps the scripts quick.
    environment["OMP_NUM_THREADS"] = "1"
    environment.pop("TRAINDOCTOR_MONITOR", None)
    return environment


def traindoctor(*args: str, cwd: Path | None = None, timeout: float = 240) -> Outcome:
    done = run_cli(*args, cwd=cwd, timeout=timeout, env=env())
    return Outcome(done.returncode, done.stdout, done.stderr)


def monitored(command: str, script: str, *options: str, script_args: tuple[str, ...] = (), cwd: Path,
              timeout: float = 240) -> Outcome:
    return traindoctor(command, "--format", "json", "--timeout", "200", *options, "--", PYTHON,
                       str(SCRIPTS / script), *script_args, cwd=cwd, timeout=timeout)


def plain(script: str, *script_args: str, cwd: Path) -> Outcome:
    done = subprocess.run([PYTHON, str(SCRIPTS / script), *script_args], capture_output=True, text=True,
                          timeout=240, cwd=cwd, env=env())
    return Outcome(done.returncode, done.stdout, done.stderr)
