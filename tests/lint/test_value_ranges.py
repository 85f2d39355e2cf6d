"""Value ranges with their backward pass: what TRN401 says about sqrt and log at 0 is
checked against torch itself — the rule reports exactly when the loss or its gradient
at z = 0 is not finite. `z` is a difference of two inputs, a value that really is 0 where they
are equal; squares of values that are never 0 in practice (a learned output, a gradient, a
positive gain) are checked to stay quiet, with torch showing they are finite."""

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


def loss_fn(a, b):
    z = a - b
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
    # ... also through a square or abs of the ReLU's output: sqrt's inf times the square's 0 is NaN, and
    # ReLU's backward drops it (the norm of a ReLU layer's output)
    "torch.sqrt(torch.relu(z) ** 2)",
    "torch.sqrt((F.relu(z) ** 2).sum())",
    "torch.sqrt(F.relu(z).pow(2).sum())",
    "torch.sqrt(torch.abs(torch.relu(z)))",
    # no selecting backward in the way: inf or NaN reaches z
    "torch.sqrt(torch.abs(z))",
    "torch.sqrt(z ** 2)",
    "torch.sqrt((z * z).sum())",
    "torch.sqrt(torch.relu(z) ** 2 + z ** 2)",
    "torch.sqrt(z.var())",
    # forward -inf/inf whatever the gradient
    "torch.log(torch.relu(z))",
    "torch.rsqrt(torch.relu(z))",
    "torch.log(torch.relu(z) ** 2)",
    # guarded
    "torch.sqrt(torch.abs(z) + 1e-8)",
]


def _not_finite_at_zero(expr: str) -> bool:
    a = torch.ones(4, requires_grad=True)
    z = a - torch.ones(4)  # a == b: the difference is exactly 0
    loss = eval(f"({expr}).sum()", {"torch": torch, "F": F, "z": z})
    loss.backward()
    return not math.isfinite(loss.item()) or not torch.isfinite(a.grad).all().item()


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


# -- squares of values that are never 0 in practice stay quiet (TRN401) -----------------------------------

NEVER_ZERO = {
    # the norm of a learned projection: a zero input still gets the bias
    "projection-norm": "    z = proj(x)\n    return torch.sqrt((z ** 2).sum(-1)).sum()\n",
    # a path-length penalty: the norm of a Jacobian-vector product
    "jvp-norm": ("    y = proj(x)\n"
                 "    g, = torch.autograd.grad((y * torch.randn_like(y)).sum(), [x], create_graph=True)\n"
                 "    return (g.square().sum(-1).sqrt() - 1).square().sum()\n"),
    # gains normalised by a weighted sum of their squares: every gain is positive
    "positive-gains": ("    t = torch.ones(x.shape[0], 4)\n"
                       "    power = torch.tensor([10.0, 1.0, 1.0, 1.0]) / 13\n"
                       "    t = t / (power * t.square()).sum(dim=-1, keepdim=True).sqrt()\n"
                       "    return (proj(x) * t).sum()\n"),
}

_NEVER_ZERO_SOURCE = """import torch
import torch.nn as nn

proj = nn.Linear(8, 4)


def loss_fn(x):
{body}"""


@pytest.mark.parametrize("name", list(NEVER_ZERO))
def test_trn401_is_quiet_on_squares_of_values_that_are_never_zero(name):
    source = _NEVER_ZERO_SOURCE.format(body=NEVER_ZERO[name])
    assert not [f for f in lint_source(source, "n.py", CONFIG).findings if f.code == "TRN401"], name
    namespace: dict = {}
    exec(compile(source, "n.py", "exec"), namespace)
    torch.manual_seed(0)
    for x in (torch.zeros(3, 8), torch.randn(3, 8)):  # even an all-zero input
        x = x.requires_grad_(True)
        namespace["loss_fn"](x).backward()
        grads = [x.grad] + [p.grad for p in namespace["proj"].parameters()]
        assert all(torch.isfinite(g).all().item() for g in grads if g is not None), name


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

# name: (body, reported). The reported ones give a non-finite result or gradient on the input below
# (an all-zero row, an empty mask row); the quiet ones are either finite there, or undecidable from the
# code (a whole input mask, the norm of a raw input), and TRN406 stays quiet where it cannot tell.
DIVISIONS = {
    "projection-norm": ("        z = self.proj(x)\n        return z / z.norm(dim=-1, keepdim=True)", False),
    "count-masked-fill": ("        counts = mask.sum(1)\n        counts.masked_fill_(counts == 0, 1)\n"
                          "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", False),
    "count-clamp": ("        counts = mask.sum(1)\n        counts.clamp_(min=1)\n"
                    "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", False),
    "count-plus-is-zero": ("        counts = mask.sum(1)\n"
                           "        return (x * mask.unsqueeze(-1)).sum(1) / (counts + (counts == 0)).unsqueeze(-1)",
                           False),
    # the function overwrites the result where the count is 0: the forward is finite, the gradient is 0/0
    "count-overwritten-after": ("        counts = mask.sum(1)\n"
                                "        out = (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)\n"
                                "        out[(counts == 0)] = 0\n        return out", True),
    # the same count clamped in one branch and not in the other
    "count-clamped-elsewhere": ("        counts = mask.sum(1)\n        if self.training:\n"
                                "            return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)\n"
                                "        return (x * mask.unsqueeze(-1)).sum(1) / counts.clamp(min=1).unsqueeze(-1)",
                                True),
    # undecidable from the code: quiet
    "input-norm": ("        return x / x.norm(dim=-1, keepdim=True)", False),
    "count-unguarded": ("        counts = mask.sum(1)\n"
                        "        return (x * mask.unsqueeze(-1)).sum(1) / counts.unsqueeze(-1)", False),
}
UNDECIDABLE = ("input-norm", "count-unguarded")


@pytest.mark.parametrize("name", list(DIVISIONS))
def test_trn406_reports_exactly_the_divisions_the_code_shows_can_be_by_zero(name):
    body, reported = DIVISIONS[name]
    source = _POOL.format(body=body)
    config = Config(select=("strict",))
    assert any(f.code == "TRN406" for f in lint_source(source, "p.py", config).findings) == reported, name
    # torch agrees: with an all-zero input row and an empty mask row, the output or the input's
    # gradient is not finite exactly for the reported ones (and for the undecidable ones)
    namespace: dict = {}
    exec(compile(source, "p.py", "exec"), namespace)
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)  # batch, tokens, features
    x[0] = 0.0
    x.requires_grad_(True)
    mask = torch.ones(3, 5)
    mask[0] = 0.0
    out = namespace["Pool"]()(x, mask)
    out.sum().backward()
    broken = not torch.isfinite(out).all().item() or not torch.isfinite(x.grad).all().item()
    assert broken == (reported or name in UNDECIDABLE), name


def test_trn406_std_of_a_batch_in_a_loop_is_nan_on_a_constant_batch():
    source = ("import torch\n\n\ndef loss(adv_all):\n    total = 0\n    for adv in adv_all.split(4):\n"
              "        total = total + ((adv - adv.mean()) / adv.std()).square().sum()\n    return total\n")
    config = Config(select=("strict",))
    assert [f.code for f in lint_source(source, "a.py", config).findings] == ["TRN406"]
    namespace: dict = {}
    exec(compile(source, "a.py", "exec"), namespace)
    adv = torch.cat([torch.randn(4), torch.full((4,), 2.0)]).requires_grad_(True)  # the second batch is constant
    namespace["loss"](adv).backward()
    assert not torch.isfinite(adv.grad).all().item()


def test_trn406_log_of_a_count_plus_one_is_zero_where_the_count_is():
    source = ("import torch\n\n\ndef scale(out, deg, avg):\n"
              "    a = out * (avg / torch.log(deg + 1))\n    b = out * (avg / deg.clamp(1))\n    return a + b\n")
    config = Config(select=("strict",))
    [found] = [f for f in lint_source(source, "s.py", config).findings if f.code == "TRN406"]
    assert found.range.start.line == 4  # 0-based: the log line
    namespace: dict = {}
    exec(compile(source, "s.py", "exec"), namespace)
    out = torch.ones(3, requires_grad=True)
    namespace["scale"](out, torch.tensor([0.0, 1.0, 2.0]), 1.0).sum().backward()
    assert not torch.isfinite(out.grad).all().item()  # an isolated node (degree 0): 1 / log(1) = inf


# -- exp clamped after it is taken, and a softmax written out (TRN405, strict) -----------------------------


def test_clamping_exp_after_it_overflowed_gives_a_nan_gradient():
    source = "import torch\n\n\ndef att(a):\n    return torch.exp(a).clamp(-10, 10)\n"
    assert [f.code for f in lint_source(source, "e.py", Config(select=("strict",))).findings] == ["TRN405"]
    a = torch.tensor([1.0, 100.0], requires_grad=True)
    torch.exp(a).clamp(-10, 10).sum().backward()
    assert torch.isnan(a.grad[1]).item()  # the clamp's zero gradient times exp's inf
    shifted = "import torch\n\n\ndef att(a):\n    return torch.exp(a.clamp(-10, 10))\n"
    assert not lint_source(shifted, "e.py", Config(select=("strict",))).findings


def test_a_softmax_written_out_overflows_where_softmax_does_not():
    source = ("import torch\n\n\ndef softmax(src):\n    out = src.exp()\n"
              "    out = out / out.sum(-1, keepdim=True)\n    return out\n")
    assert [f.code for f in lint_source(source, "s.py", Config(select=("strict",))).findings] == ["TRN405"]
    namespace: dict = {}
    exec(compile(source, "s.py", "exec"), namespace)
    scores = torch.tensor([[100.0, 0.0]])
    assert torch.isnan(namespace["softmax"](scores)).any().item()
    assert torch.isfinite(torch.softmax(scores, -1)).all().item()


# -- what counts as the code's own evidence that a value can be 0 ----------------------------------------

EVIDENCE = {
    "compared-with-0": ("    bad = n == 0\n", True),
    "compared-after-cast": ("    bad = n.float() != 0\n", True),
    "clamped-to-1": ("    safe = torch.clamp(n, min=1)\n", True),
    "clamped-method": ("    safe = n.clamp(1)\n", True),
    # defensive epsilons say nothing: they are added to values that are never 0 too
    "epsilon-added": ("    safe = n + 1e-8\n", False),
    "clamped-to-epsilon": ("    safe = n.clamp(min=1e-6)\n", False),
    # a selection by sign is not a test for exact zeros
    "positive-selected": ("    pos = n > 0\n", False),
}


@pytest.mark.parametrize("name", list(EVIDENCE))
def test_only_a_zero_test_or_a_count_floor_is_evidence(name):
    line, reported = EVIDENCE[name]
    source = f"import torch\n\n\ndef f(total, n):\n{line}    return total / n\n"
    found = [f.code for f in lint_source(source, "e.py", Config(select=("strict",))).findings]
    assert ("TRN406" in found) == reported, name
