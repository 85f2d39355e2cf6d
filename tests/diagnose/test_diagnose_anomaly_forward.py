"""A log with anomaly mode's "Traceback of forward call" in front of an in-place error: the
forward's file, not on the failing stack, is searched for the in-place operation (real torch)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from traindoctor.diagnose import diagnose_text

from diagnose_helpers import line_of, run_failing

MODEL = '''
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        h = torch.sigmoid(x)
        h.mul_(2.0)
        return h
'''

TRAIN = '''
import sys
import torch
from model import Gate

torch.autograd.set_detect_anomaly(sys.argv[1] == "anomaly")


def train_step(model, batch):
    loss = model(batch).sum()
    loss.backward()


train_step(Gate(), torch.randn(4, 3, requires_grad=True))
'''


def _diagnose(tmp_path: Path, mode: str):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN))
    log = run_failing([sys.executable, "train.py", mode], tmp_path)
    return diagnose_text(log, correlate=False, base_dir=tmp_path), tmp_path / "model.py"


def test_the_forward_trace_locates_the_inplace_op_in_the_forward_file(tmp_path: Path) -> None:
    diagnosis, model = _diagnose(tmp_path, "anomaly")
    facts = diagnosis.details["facts"]
    sigmoid, mul = line_of(model, "torch.sigmoid"), line_of(model, "mul_")
    assert diagnosis.kind == "inplace-modification"
    assert facts["forward_site"].endswith(f"model.py:{sigmoid}")
    assert facts["inplace_site"].endswith(f"model.py:{mul}") and facts["inplace_code"] == "h.mul_(2.0)"
    assert any(e.startswith("anomaly mode: the forward call that created it is") and e.endswith("h = torch.sigmoid(x)")
               for e in diagnosis.evidence)
    assert diagnosis.fixes[0].title.startswith("Make `h.mul_(2.0)` out of place")


def test_without_anomaly_mode_the_forward_file_is_unknown(tmp_path: Path) -> None:
    diagnosis, _ = _diagnose(tmp_path, "off")
    assert diagnosis.kind == "inplace-modification"
    assert "inplace_site" not in diagnosis.details["facts"] and "forward_site" not in diagnosis.details["facts"]


def test_the_anomaly_warning_is_no_hypothesis_when_its_exception_follows(tmp_path: Path) -> None:
    """The warning stands for a lost exception only when the exception line is really missing."""
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN))
    log = run_failing([sys.executable, "train.py", "anomaly"], tmp_path)
    assert "Error detected in SigmoidBackward0" in log and "RuntimeError: one of the variables" in log

    whole = diagnose_text(log, correlate=False, base_dir=tmp_path)
    assert [h.kind for h in whole.hypotheses if h.kind == "nan-inf"] == []
    assert not any("exception line is missing" in h.cause for h in whole.hypotheses)

    cut = log[:log.index("Traceback (most recent call last)")]  # the paste lost the traceback after the warning
    truncated = diagnose_text(cut, correlate=False, base_dir=tmp_path)
    assert truncated.kind == "nan-inf" and truncated.details["signature"] == "nan-anomaly-warning"
