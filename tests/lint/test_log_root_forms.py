"""TRN401 on a log or a square root written in another form: a root as a power (`x ** 0.5`,
`x.pow(0.5)`, `torch.pow(x, 0.5)`, `** -0.5`), with sqrt's inf gradient at 0, and a log as another
Tensor method (`x.log2()`, `x.log10()`). The rule read `sqrt`/`rsqrt`/`log` alone before: each
program failed then; the quiet twins stay quiet; the claims are checked against torch and the
fixes run."""

from __future__ import annotations

import subprocess
import sys

import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN401"]


HEAD = '''import torch
import torch.nn.functional as F


class GaussianHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = torch.nn.Linear(3, 2)
        self.raw_var = torch.nn.Linear(3, 2)

    def forward(self, x):
        var = F.softplus(self.raw_var(x))
        return self.mu(x), var ** 0.5


def nll_grads(x, target, bias=-200.0):
    torch.manual_seed(0)
    head = GaussianHead()
    with torch.no_grad():
        head.raw_var.bias.fill_(bias)  # softplus below about -104 is exactly 0 in float32
    mu, std = head(x)
    loss = (((target - mu) / (std + 1e-3)) ** 2).mean()
    loss.backward()
    return head.raw_var.weight.grad
'''
ROOT = "var ** 0.5"


def test_power_half_of_a_value_that_can_be_zero(tmp_path):
    assert _lines(HEAD) == [13]
    # the claim, on torch: an underflowed softplus makes the root's gradient NaN, as torch.sqrt's does
    x, target = torch.zeros(2, 3), torch.ones(2, 2)
    namespace: dict = {}
    exec(compile(HEAD, "t.py", "exec"), namespace)
    assert torch.isnan(namespace["nll_grads"](x, target)).all()
    fixed = fix_source(HEAD, "t.py", CONFIG, unsafe=True)[0]
    assert "(var + torch.finfo(var.dtype).tiny) ** 0.5" in fixed and _lines(fixed) == []
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = subprocess.run([sys.executable, "-m", "pyflakes", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    fixed_namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), fixed_namespace)
    assert torch.isfinite(fixed_namespace["nll_grads"](x, target)).all()
    # away from 0 the fix changes nothing measurable
    assert torch.allclose(namespace["nll_grads"](x, target, 0.0), fixed_namespace["nll_grads"](x, target, 0.0))


def test_every_power_form_of_a_root():
    assert _lines(HEAD.replace(ROOT, "var.pow(0.5)")) == [13]
    assert _lines(HEAD.replace(ROOT, "torch.pow(var, 0.5)")) == [13]
    assert _lines(HEAD.replace(ROOT, "1 / var ** -0.5")) == [13]
    z = torch.zeros(2)
    assert torch.isinf(z ** -0.5).all()  # -0.5: inf already forward, as rsqrt


def test_root_power_twins_stay_quiet():
    assert _lines(HEAD.replace(ROOT, "(var + 1e-6) ** 0.5")) == []
    assert _lines(HEAD.replace(ROOT, "var ** 2")) == []
    # a Python number's root (an attention scale) has no gradient
    assert _lines(HEAD.replace(ROOT, "var * x.size(-1) ** -0.5")) == []
    # an exp is never 0 in practice (the rule's convention for sqrt too)
    assert _lines(HEAD.replace("F.softplus(self.raw_var(x))", "torch.exp(self.raw_var(x))")) == []


# A log written as another Tensor method: `x.log2()` / `x.log10()` (and in place) are -inf at 0 like `x.log()`.
ENTROPY_BITS = '''import torch


def bits(logits, bias=0.0):
    p = torch.relu(logits + bias)
    p = p / (p.sum(-1, keepdim=True) + 1e-6)
    return -(p * p.log2()).sum(-1).mean()
'''


def test_log2_method_of_a_value_that_can_be_zero():
    assert _lines(ENTROPY_BITS) == [7]
    assert _lines(ENTROPY_BITS.replace("p.log2()", "p.log10()")) == [7]
    assert _lines(ENTROPY_BITS.replace("p.log2()", "(p + 1e-12).log2()")) == []
    namespace: dict = {}
    exec(compile(ENTROPY_BITS, "t.py", "exec"), namespace)
    logits = torch.tensor([[1.0, -1.0, 2.0]], requires_grad=True)  # a ReLU zero: 0 * log2(0) = NaN
    out = namespace["bits"](logits)
    assert torch.isnan(out)
    fixed = fix_source(ENTROPY_BITS, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    fixed_namespace: dict = {}
    exec(compile(fixed, "t.py", "exec"), fixed_namespace)
    assert torch.isfinite(fixed_namespace["bits"](logits))
