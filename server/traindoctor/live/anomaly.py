"""`traindoctor run --anomaly`: autograd anomaly detection in the debuggee, and the forward
line torch prints with it.

An in-place error ("modified by an inplace operation ... output 0 of SigmoidBackward0") or a
NaN returned by a backward node names an autograd node, not the line of the forward pass that
created it. Anomaly mode records that line and prints it as a warning ("Error detected in
SigmoidBackward0. Traceback of forward call that caused the error: ...") just before the
exception. `setup` writes a sitecustomize (anomaly_sitecustomize.py) into a folder of the run and
puts that folder first on the child's PYTHONPATH; it switches anomaly mode on when torch loads and
copies that warning into a file per process in the same folder. The live session puts the copy in
front of the traceback, and the traceback engine reads it as it reads a pasted log.

- `setup(directory, env, check_nan)`: the child's environment with anomaly mode on.
- `forward_trace(directory, pid)`: the last anomaly warning process `pid` recorded, or "".
- `wants_forward_line(diagnosis)`: an autograd error whose forward line only anomaly mode gives.
- `rerun_command(options, command)`: the command line that re-runs with anomaly mode on.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from ..model import Diagnosis

SITECUSTOMIZE = Path(__file__).resolve().parent / "anomaly_sitecustomize.py"
DIRECTORY_VARIABLE = "TRAINDOCTOR_ANOMALY_DIR"
CHECK_NAN_VARIABLE = "TRAINDOCTOR_ANOMALY_CHECK_NAN"
# Interpreter options under which the sitecustomize is not loaded.
IGNORES_SITE = ("-E", "-I", "-S")
_MAX_TRACE_BYTES = 200_000


def setup(directory: str, env: dict[str, str], check_nan: bool = True) -> dict[str, str]:
    """Write the sitecustomize into `directory` (a fresh folder of this run) and return `env` with
    that folder first on PYTHONPATH. `check_nan`: anomaly mode also raises at the first backward
    output holding NaN (torch's default)."""
    shutil.copyfile(SITECUSTOMIZE, os.path.join(directory, "sitecustomize.py"))
    env = dict(env)
    paths = [directory, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[DIRECTORY_VARIABLE] = directory
    env[CHECK_NAN_VARIABLE] = "1" if check_nan else "0"
    return env


def forward_trace(directory: str, pid: int | None) -> str:
    """The anomaly warning `pid` wrote last (the newest of any process when the pid is unknown)."""
    folder = Path(directory)
    try:
        if pid is not None:
            path = folder / f"{pid}.txt"
        else:
            written = sorted(folder.glob("*.txt"), key=lambda p: p.stat().st_mtime)
            if not written:
                return ""
            path = written[-1]
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(_MAX_TRACE_BYTES)
    except OSError:
        return ""


def nan_from_backward(diagnosis: Diagnosis) -> bool:
    """A backward node returned NaN (torch says so only under anomaly mode's NaN check)."""
    message = diagnosis.exception.message if diagnosis.exception is not None else ""
    return diagnosis.kind == "nan-inf" and "returned nan values" in message


def wants_forward_line(diagnosis: Diagnosis | None) -> bool:
    """An in-place error, or a NaN a backward node returned, without the forward line."""
    if diagnosis is None:
        return False
    facts = (diagnosis.details or {}).get("facts") or {}
    if facts.get("forward_site"):
        return False
    return diagnosis.kind == "inplace-modification" or nan_from_backward(diagnosis)


def rerun_command(options: list[str], command: list[str]) -> str:
    return shlex.join(["traindoctor", "run", "--anomaly", *options, "--", *command])
