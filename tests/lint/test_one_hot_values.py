"""A one-hot row (`F.one_hot(y, k)`) is 0 in every entry but one, like a comparison's mask: a KL divergence to
one-hot targets written out, `p * torch.log(p / q)`, takes the log of 0 there (-inf) and multiplies it by
0, so the loss is NaN and so is every gradient. The value model did not know what one_hot holds, and TRN401
was quiet; the claim, the fix and the quiet twins are run on torch here."""

from __future__ import annotations

import subprocess
import sys

import torch
import torch.nn.functional as F

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))

PROGRAM = '''import torch
import torch.nn.functional as F


def kl_to_labels(logits, y):
    q = F.softmax(logits, -1)
    p = F.one_hot(y, 10).float()
    return (p * torch.log(p / q)).sum()
'''
KL = "return (p * torch.log(p / q)).sum()"


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN401"]


def _run(source: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    logits = torch.randn(4, 10, requires_grad=True)
    y = torch.tensor([1, 2, 3, 4])
    namespace: dict = {}
    exec(compile(source, "t.py", "exec"), namespace)
    loss = namespace["kl_to_labels"](logits, y)
    loss.backward()
    return loss.detach(), logits.grad, logits.detach(), y


def test_kl_to_one_hot_targets_is_reported_and_nan_on_torch(tmp_path):
    assert _lines(PROGRAM) == [8]
    loss, grad, _, _ = _run(PROGRAM)
    assert torch.isnan(loss) and torch.isnan(grad).any()
    fixed = fix_source(PROGRAM, "t.py", CONFIG, unsafe=True)[0]
    assert "torch.log((p / q).clamp_min(1e-12))" in fixed and _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    loss, grad, logits, y = _run(fixed)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    # what the KL to a one-hot target is: the cross entropy of the labelled class
    assert torch.allclose(loss, F.cross_entropy(logits, y, reduction="sum"), atol=1e-5)


def test_one_hot_quiet_twins():
    twins = (
        # label smoothing keeps every entry positive
        PROGRAM.replace("p = F.one_hot(y, 10).float()", "p = F.one_hot(y, 10).float() * 0.9 + 0.01"),
        # the library's KL treats 0 * log(0) as 0
        PROGRAM.replace(KL, 'return F.kl_div(F.log_softmax(logits, -1), p, reduction="sum")'),
    )
    for source in twins:
        assert _lines(source) == []
        loss, grad, _, _ = _run(source)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()
    # the log of a mask alone is an additive -inf bias, logged on purpose: no finding, as for a comparison
    assert _lines(PROGRAM.replace(KL, "return (torch.log(p) + F.log_softmax(logits, -1)).logsumexp(-1).sum()")) == []
