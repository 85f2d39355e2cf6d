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


def test_anomaly_modes_forward_op_is_the_cause_not_the_backward_call(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(NAN))
    log = run_failing([sys.executable, "train.py"], tmp_path)
    diagnosis = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert diagnosis.kind == "nan-inf", (diagnosis.kind, log[-400:])
    cause = diagnosis.cause_location
    assert cause is not None and cause["line"] == line_of(tmp_path / "train.py", "torch.sqrt")
    backward = line_of(tmp_path / "train.py", "loss.backward()")
    assert f":{backward}" in cause["why"]


def test_no_cause_location_when_the_failing_frame_is_the_cause() -> None:
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    out = model(x)\n"
           "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x5)\n")
    diagnosis = diagnose_text(log, correlate=False)
    assert diagnosis.kind == "shape-mismatch"
    assert diagnosis.to_json()["cause_location"] is None
