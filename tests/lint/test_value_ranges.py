"""Value ranges with their backward pass: what TRN401 says about sqrt and log at 0 is
checked against torch itself — the rule reports exactly when the loss or its gradient
at z = 0 is not finite."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()

_TEMPLATE = """import torch
import torch.nn.functional as F


def loss_fn(z):
    return ({expr}).sum()
"""

CASES = [
    # ReLU's backward selects: 0 where its input is <= 0, so sqrt's inf there never reaches z
    "torch.sqrt(torch.relu(z))",
    "torch.sqrt(F.relu(z))",
    "z.relu().sqrt()",
    "torch.sqrt(F.relu6(z))",
    "torch.sqrt(torch.relu(z)) - torch.sqrt(torch.relu(-z))",
    "torch.sqrt(torch.relu(z) + torch.relu(-z))",
    "torch.sqrt(torch.relu(z).sum())",
    # no selecting backward in the way: inf or NaN reaches z
    "torch.sqrt(torch.abs(z))",
    "torch.sqrt(z ** 2)",
    "torch.sqrt((z * z).sum())",
    "torch.sqrt(z.var())",
    # forward -inf/inf whatever the gradient
    "torch.log(torch.relu(z))",
    "torch.rsqrt(torch.relu(z))",
    # guarded
    "torch.sqrt(torch.abs(z) + 1e-8)",
]


def _not_finite_at_zero(expr: str) -> bool:
    z = torch.zeros(4, requires_grad=True)
    loss = eval(f"({expr}).sum()", {"torch": torch, "F": F, "z": z})
    loss.backward()
    return not math.isfinite(loss.item()) or not torch.isfinite(z.grad).all().item()


@pytest.mark.parametrize("expr", CASES)
def test_trn401_reports_exactly_when_torch_is_not_finite(expr):
    reported = any(f.code == "TRN401" for f in lint_source(_TEMPLATE.format(expr=expr), "l.py", CONFIG).findings)
    assert reported == _not_finite_at_zero(expr), expr


def test_the_relu_cases_really_have_zero_gradient():
    z = torch.zeros(3, requires_grad=True)
    (torch.sqrt(torch.relu(z)) - torch.sqrt(torch.relu(-z))).sum().backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
