"""A cause line other than the failing frame is a structured location in the JSON
(`cause_location`: path, line, code, why) and a line of the CLI text (issue 28, point 4).
Real torch runs: the in-place op that breaks backward; the forward op anomaly mode names."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from traindoctor.diagnose import diagnose_text, render_text

from diagnose_helpers import line_of, run_failing

INPLACE = '''
import torch


def step(x):
    y = x.sigmoid()
    y.add_(1)
    return y.sum()


x = torch.ones(3, requires_grad=True)
step(x).backward()
'''

NAN = '''
import torch

torch.autograd.set_detect_anomaly(True)
w = torch.tensor([0.0, 1.0], requires_grad=True)


def loss_of(w):
    out = torch.sqrt(w - 1.0)
    return out.sum()


loss = loss_of(w)
loss.backward()
'''


def test_the_inplace_statement_is_the_cause_location(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(INPLACE))
    log = run_failing([sys.executable, "train.py"], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "inplace-modification"
    cause = diagnosis.to_json()["cause_location"]
    assert cause is not None and cause["path"].endswith("train.py")
    assert cause["line"] == line_of(tmp_path / "train.py", "y.add_(1)") != diagnosis.location.line
    assert cause["code"] == "y.add_(1)" and "in-place" in cause["why"]
    assert f"cause at {cause['path']}:{cause['line']}: y.add_(1)" in render_text(diagnosis)
    # the fix that rewrites that statement names it the same way
    fixes = data_fixes(diagnosis)
    edit = next(f for f in fixes if f["title"].startswith("Make `y.add_(1)` out of place"))
    assert edit["location"] == {"path": cause["path"], "line": cause["line"]}
    assert all("location" not in f for f in fixes if f is not edit)


def test_anomaly_modes_forward_op_is_the_cause_not_the_backward_call(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(NAN))
    log = run_failing([sys.executable, "train.py"], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "nan-inf", (diagnosis.kind, log[-400:])
    cause = diagnosis.cause_location
    assert cause is not None and cause["line"] == line_of(tmp_path / "train.py", "torch.sqrt")
    backward = line_of(tmp_path / "train.py", "loss.backward()")
    assert f":{backward}" in cause["why"]
    guard = next(f for f in data_fixes(diagnosis) if f["title"] == "Guard the operation at the forward line")
    assert guard["location"] == {"path": cause["path"], "line": cause["line"]}


def test_no_cause_location_when_the_failing_frame_is_the_cause() -> None:
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    out = model(x)\n"
           "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x5)\n")
    diagnosis = diagnose_text(log, correlate=False)
    assert diagnosis.kind == "shape-mismatch"
    assert diagnosis.to_json()["cause_location"] is None


def data_fixes(diagnosis) -> list[dict]:
    return diagnosis.to_json()["fixes"]


def test_the_accumulating_line_is_the_cause_and_its_fix_names_it(tmp_path: Path) -> None:
    """A CUDA OOM raised at `torch.randn` whose cause is the `running += loss` that TRN101 flags
    (the e2e fixture: extension/test/fixtures)."""
    fixtures = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures"
    (tmp_path / "train_accumulate.py").write_text((fixtures / "workspace" / "train_accumulate.py").read_text())
    log = (fixtures / "accumulate_oom.log.in").read_text().replace("{WORKSPACE}", str(tmp_path))
    diagnosis = diagnose_text(log, base_dir=tmp_path)
    line = line_of(tmp_path / "train_accumulate.py", "        running += loss")
    cause = diagnosis.to_json()["cause_location"]
    assert (cause["line"], cause["code"]) == (line, "running += loss") != (diagnosis.location.line, None)
    assert cause["why"].startswith("TRN101")
    first = data_fixes(diagnosis)[0]
    assert first["location"] == {"path": cause["path"], "line": line}
    assert f"at {cause['path']}:{line}" in render_text(diagnosis)


def test_a_diagnosis_without_references_still_renders() -> None:
    import dataclasses

    diagnosis = diagnose_text("hello world", correlate=False)
    assert isinstance(render_text(dataclasses.replace(diagnosis, references=())), str)
