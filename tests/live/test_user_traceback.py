"""The user's traceback, not ours (issue 28, point 6): the traceback a failing script prints under
`traindoctor run` and `traindoctor watch --stop-on nan` shows none of the frames of traindoctor's
bootstrap and hooks, debugpy, pydevd or runpy, and a line says how many were hidden; the
diagnosis JSON drops them from its frames and counts them (details.hidden_frames).

The real runs are real torch scripts under the real debugpy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from traindoctor.diagnose import diagnose_text
from traindoctor.internal_frames import hide_internal_frames

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
# Spelled out here rather than taken from internal_frames.py, so that a gap in its definition fails.
OURS_OR_THE_DEBUGGER_S = ("debugpy", "pydevd", "runpy", "<frozen traindoctor", "traindoctor/monitor/",
                          "traindoctor/live/", "traindoctor\\monitor\\", "traindoctor\\live\\")
HIDDEN_LINE = re.compile(r"^  \[(\d+) frames? of traindoctor, the debugger or runpy hidden\]$", re.M)

# What `traindoctor run` printed before this change (debugpy's launcher above the user's script).
UNDER_DEBUGPY = '''Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/venv/lib/python3.11/site-packages/debugpy/__main__.py", line 71, in <module>
    cli.main()
  File "/venv/lib/python3.11/site-packages/debugpy/server/cli.py", line 377, in run_file
    runpy.run_path(target, run_name="__main__")
  File "/venv/lib/python3.11/site-packages/debugpy/_vendored/pydevd/_pydevd_bundle/pydevd_runpy.py", line 118, in _run_code
    exec(code, run_globals)
  File "fail.py", line 11, in <module>
    loss = step(model, x)
           ^^^^^^^^^^^^^^
  File "fail.py", line 5, in step
    out = model(x)
          ^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 134, in forward
    return F.linear(input, self.weight, self.bias)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x5 and 4x2)
'''


def _file_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith('File "')]


def _internal(lines: list[str]) -> list[str]:
    return [line for line in lines if any(mark in line for mark in OURS_OR_THE_DEBUGGER_S)]


def test_hidden_frames_leave_the_text_and_a_line_counts_them() -> None:
    shown, hidden = hide_internal_frames(UNDER_DEBUGPY)
    assert hidden == 5
    assert shown.splitlines()[:2] == ["Traceback (most recent call last):",
                                      "  [5 frames of traindoctor, the debugger or runpy hidden]"]
    assert not _internal(_file_lines(shown))
    assert "cli.main()" not in shown and "exec(code, run_globals)" not in shown  # their source lines too
    assert shown.endswith("out = model(x)\n          ^^^^^^^^\n"
                          '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 134, '
                          "in forward\n    return F.linear(input, self.weight, self.bias)\n"
                          "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
                          "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x5 and 4x2)\n")


def test_the_shown_traceback_diagnoses_as_the_full_one() -> None:
    full, shown = diagnose_text(UNDER_DEBUGPY, correlate=False), diagnose_text(hide_internal_frames(UNDER_DEBUGPY)[0],
                                                                              correlate=False)
    assert (shown.kind, shown.location.path, shown.location.line) == (full.kind, "fail.py", 5)
    assert [f.path for f in shown.frames] == [f.path for f in full.frames]
    assert full.details["hidden_frames"] == 5


def test_each_traceback_of_a_chain_counts_its_own() -> None:
    chained = UNDER_DEBUGPY + "\nDuring handling of the above exception, another exception occurred:\n\n" + UNDER_DEBUGPY
    shown, hidden = hide_internal_frames(chained)
    assert hidden == 10
    assert [int(n) for n in HIDDEN_LINE.findall(shown)] == [5, 5]


def test_a_traceback_without_them_is_unchanged() -> None:
    text = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    f()\nValueError: bad\n'
    assert hide_internal_frames(text) == (text, 0)


def _traindoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TRAINDOCTOR_LIVE_TRACE", None)
    env.pop("TRAINDOCTOR_MONITOR", None)
    env["PATH"] = str(Path(PYTHON).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([PYTHON, "-m", "traindoctor", *args], capture_output=True, text=True, timeout=240,
                          cwd=cwd, env=env)


def _printed_traceback(stderr: str) -> str:
    start = stderr.rindex("Traceback (most recent call last):")
    return stderr[start:]


def test_run_prints_the_user_s_traceback_and_counts_what_it_hid(tmp_path: Path) -> None:
    done = _traindoctor("run", "--format", "json", "--", PYTHON, str(ROOT / "live" / "scripts" / "shape_mismatch.py"),
                        cwd=tmp_path)
    printed = _printed_traceback(done.stderr)
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in printed, done.stderr
    assert not _internal(_file_lines(printed)), printed
    assert any("shape_mismatch.py" in line for line in _file_lines(printed)), printed
    counts = [int(n) for n in HIDDEN_LINE.findall(printed)]
    assert counts and counts[0] >= 3, printed  # runpy's and debugpy's launcher frames at least
    diagnosis = json.loads(done.stdout.strip().splitlines()[-1])["diagnosis"]
    assert diagnosis["kind"] == "shape-mismatch"
    assert not _internal([f'File "{frame["path"]}"' for frame in diagnosis["frames"]])
    assert diagnosis["details"]["hidden_frames"] == counts[0]
    assert done.returncode == 1


def test_watch_stop_on_nan_prints_the_user_s_traceback_and_counts_what_it_hid(tmp_path: Path) -> None:
    done = _traindoctor("watch", "--format", "json", "--timeout", "200", "--stop-on", "nan", "--", PYTHON,
                        str(ROOT / "monitor" / "scripts" / "nan_lr.py"), cwd=tmp_path)
    printed = _printed_traceback(done.stderr)
    assert "NonFiniteTraining: traindoctor: loss is" in printed, done.stderr
    assert not _internal(_file_lines(printed)), printed
    assert any("nan_lr.py" in line for line in _file_lines(printed)), printed
    # bootstrap.py, runpy, debugpy and the monitor's hooks: all of them were in this traceback
    assert [int(n) >= 8 for n in HIDDEN_LINE.findall(printed)] == [True], printed
    live = json.loads(done.stdout.strip().splitlines()[-1])["live"]["diagnosis"]
    assert [Path(frame["path"]).name for frame in live["frames"]] == ["nan_lr.py", "optimizer.py"]
    assert not _internal([f'File "{frame["path"]}"' for frame in live["frames"]])
    assert live["details"]["hidden_frames"] > 0
    assert done.returncode != 0
