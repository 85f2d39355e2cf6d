"""`log(p + (p == 0) * eps)` is never -inf: the indicator adds eps exactly where p is 0 and leaves p
unchanged elsewhere, so TRN401 stays quiet on it (analysis/values.py, `_zero_indicator`), written inline or
through a local (`z = (probs == 0.0).float() * epsilon`) while `p` still holds the tested value. Seen in
quantumiracle/Popular-RL-Algorithms' discrete SAC (h/prec8's carry-over group, dev), two findings.

Look-alikes that stay found: an indicator of 1 instead of 0, one that tested an earlier binding of the
name, and one scaled by a value that is not a positive constant. The torch fact is checked: the guarded log
of a softmax that underflows to exactly 0 has a finite value and gradient, the unguarded one does not."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from project_helpers import functions_reporting

PROGRAM = """\
import torch
import torch.nn.functional as F
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.output = nn.Linear(4, 3)

    def forward(self, x):
        return F.softmax(self.output(x), dim=-1)

    def guarded(self, state, epsilon=1e-8):
        probs = self.forward(state)
        z = (probs == 0.0).float() * epsilon
        return torch.log(probs + z)

    def guarded_inline(self, state):
        probs = self.forward(state)
        return torch.log(probs + 1e-8 * (probs == 0).float())

    def one_indicated(self, state, epsilon=1e-8):
        probs = self.forward(state)
        z = (probs == 1.0).float() * epsilon
        return torch.log(probs + z)

    def stale_indicator(self, state, other, epsilon=1e-8):
        probs = self.forward(state)
        z = (probs == 0.0).float() * epsilon
        probs = self.forward(other)
        return torch.log(probs + z)

    def scaled_by_a_value(self, state, weight):
        probs = self.forward(state)
        z = (probs == 0.0).float() * weight
        return torch.log(probs + z)
"""


def test_a_log_guarded_by_a_zero_indicator_is_not_reported():
    found = functions_reporting(PROGRAM, "TRN401", "sac.py")
    assert "guarded" not in found
    assert "guarded_inline" not in found


def test_indicators_that_do_not_cover_the_zeros_stay_reported():
    found = functions_reporting(PROGRAM, "TRN401", "sac.py")
    assert {"one_indicated", "stale_indicator", "scaled_by_a_value"} <= found


def test_torch_the_indicator_keeps_the_log_and_its_gradient_finite():
    logits = torch.tensor([[0.0, -200.0, 5.0]], requires_grad=True)
    probs = F.softmax(logits, dim=-1)
    assert probs[0, 1].item() == 0.0  # float32 underflow: exactly 0

    guarded = torch.log(probs + (probs == 0.0).float() * 1e-8)
    (guarded * torch.tensor([[1.0, 1.0, 1.0]])).sum().backward()
    assert torch.isfinite(guarded).all() and torch.isfinite(logits.grad).all()
    # elsewhere the indicator adds exactly 0: the value is the plain log there
    assert torch.equal(guarded[0, [0, 2]], torch.log(probs)[0, [0, 2]])

    logits.grad = None
    plain = torch.log(F.softmax(logits, dim=-1))
    plain.sum().backward()
    assert not torch.isfinite(plain).all() and not torch.isfinite(logits.grad).all()
