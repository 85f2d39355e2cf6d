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
from traindoctor.lint.analysis.vocab import vocab

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


# -- where float32 saturates: the numbers TRN402's messages state (rules/vocab/values.yaml) ------------


def _first(xs: torch.Tensor, values: torch.Tensor) -> float:
    return xs[torch.isinf(values)][0].item()


def test_log_one_minus_sigmoid_is_minus_inf_from_the_stated_logit():
    xs = torch.arange(10.0, 30.0, 0.01)
    first = _first(xs, torch.log(1 - torch.sigmoid(xs)))
    assert abs(first - vocab().fp32_sigmoid_saturation_logit) < 0.02
    source = _TEMPLATE.format(expr="torch.log(1 - torch.sigmoid(z))")
    [found] = [f for f in lint_source(source, "l.py", CONFIG).findings if f.code == "TRN402"]
    assert f"{vocab().fp32_sigmoid_saturation_logit:g}" in found.message


def test_log_sigmoid_underflows_below_the_stated_logit():
    xs = -torch.arange(80.0, 100.0, 0.01)
    assert abs(_first(xs, torch.log(torch.sigmoid(xs))) - vocab().fp32_sigmoid_underflow_logit) < 0.02


def test_softmax_underflows_at_the_stated_gap():
    gaps = torch.arange(80, 130)
    zero = [g.item() for g in gaps if torch.softmax(torch.tensor([0.0, -float(g)]), 0)[1].item() == 0.0]
    assert zero[0] == vocab().fp32_softmax_underflow_gap
    source = _TEMPLATE.format(expr="torch.log(torch.softmax(z, dim=0))")
    [found] = [f for f in lint_source(source, "l.py", CONFIG).findings if f.code == "TRN402"]
    assert f"about {vocab().fp32_softmax_underflow_gap} below the largest" in found.message


# -- what can really be exactly 0 (TRN406, strict) -------------------------------------------------------

_POOL = '''import torch
import torch.nn as nn


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x, mask):
{body}
'''

DIVISIONS = {
    # the norm of a learned projection: never exactly 0 (a zero input still gets the bias)
    "projection-norm": ("        z = self.proj(x)\n        return z / z.norm(dim=-1, keepdim=True)", False),
    # the norm of the raw input: a zero row (padding) is exactly 0
    "input-norm": ("        return x / x.norm(dim=-1, keepdim=True)", True),
    # a count whose zeros were replaced in place
    "count-masked-fill": ("        counts = mask.sum(1)\n        counts.masked_fill_(counts == 0, 1)\n"
                          "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", False),
    "count-clamp": ("        counts = mask.sum(1)\n        counts.clamp_(min=1)\n"
                    "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", False),
    "count-plus-is-zero": ("        counts = mask.sum(1)\n"
                           "        return (x * mask.unsqueeze(-1)).sum(1) / (counts + (counts == 0)).unsqueeze(-1)",
                           False),
    "count-unguarded": ("        counts = mask.sum(1)\n"
                        "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", True),
}


@pytest.mark.parametrize("name", list(DIVISIONS))
def test_trn406_reports_exactly_the_divisions_that_can_be_by_zero(name):
    body, can_be_zero = DIVISIONS[name]
    source = _POOL.format(body=body)
    config = Config(select=("strict",))
    reported = any(f.code == "TRN406" for f in lint_source(source, "p.py", config).findings)
    assert reported == can_be_zero, name
    # torch agrees: with an all-zero input row and an empty mask row, the result is finite exactly when
    # the rule is quiet (the projection's bias keeps its norm above 0)
    namespace: dict = {}
    exec(compile(source, "p.py", "exec"), namespace)
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)  # batch, tokens, features
    x[0] = 0.0
    mask = torch.ones(3, 5)
    mask[0] = 0.0
    out = namespace["Pool"]()(x, mask)
    assert torch.isfinite(out).all().item() != can_be_zero, name
