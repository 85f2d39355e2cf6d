"""Value ranges through contractions (issue 27, d-batch dev misses): `a @ b`, matmul, einsum, bmm
are sums of products of their operands' elements, so they keep what a product and then a sum keep.
A softmax-weighted mix of sigmoid outputs (a neural autoregressive flow's transformer, a mixture
probability) is exactly 0 in float32 where every sigmoid underflows, and exactly 1 where every one
saturates: `log(d)` and `log(1 - d)` are then -inf and their gradients NaN. Checked against torch."""

from __future__ import annotations

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("strict",))

MIX = '''import torch
from torch import nn


class SigmoidMix(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.params = nn.Linear(1, 3 * hidden)
        self.hidden = hidden

    def forward(self, x):
        h = self.params(x[:, None])
        a, b, w = h.split(self.hidden, dim=-1)
        weights = torch.softmax(w, dim=-1)
        c = torch.sigmoid(nn.functional.softplus(a) * x[:, None] + b)
        d = torch.einsum("...i,...i->...", weights, c)
        log_det = torch.log(d) - torch.log(1 - d)
        return log_det.sum()
'''


def _lines(source: str, code: str = "TRN401") -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


@pytest.mark.parametrize("form", [
    'torch.einsum("...i,...i->...", weights, c)',
    'torch.einsum("...i,...i->...", [weights, c])',
    "(weights[:, None, :] @ c[:, :, None]).squeeze()",
    "torch.matmul(weights[:, None, :], c[:, :, None]).squeeze()",
    "weights[:, None, :].bmm(c[:, :, None]).squeeze()",
    "(weights * c).sum(-1)",  # the same sum of products, written out (already known)
])
def test_log_of_a_softmax_weighted_mix_of_sigmoids(form):
    source = MIX.replace('torch.einsum("...i,...i->...", weights, c)', form)
    assert _lines(source) == [17, 17]  # log(d) and log(1 - d)


@pytest.mark.parametrize("change", [
    # the fix of the real bug: the mix clipped away from 0 and 1
    ('        log_det = ', '        d = d.clamp(1e-6, 1 - 1e-6)\n        log_det = '),
    # a mix of values nothing says can be 0 (a learned output), not of probabilities
    ('torch.einsum("...i,...i->...", weights, c)', 'torch.einsum("...i,...i->...", a, b)'),
    # the stable form: log of the mix from log-weights and log-sigmoids
    ('        d = torch.einsum("...i,...i->...", weights, c)\n        log_det = torch.log(d) - torch.log(1 - d)',
     '        log_det = torch.logsumexp(torch.log_softmax(w, -1) + nn.functional.logsigmoid(a + b), -1)'),
])
def test_log_of_a_mix_quiet(change):
    old, new = change
    assert old in MIX
    assert _lines(MIX.replace(old, new)) == []


def test_the_mix_saturates_on_the_installed_torch():
    """The claims, in float32: the mix is exactly 0 where every sigmoid underflows and exactly 1
    where every one saturates; log there is -inf and the gradient NaN; the clipped form is finite."""
    weights = torch.softmax(torch.tensor([[0.3, -0.2, 1.0]]), dim=-1)
    for logit, bad in ((-120.0, lambda d: torch.log(d)), (40.0, lambda d: torch.log(1 - d))):
        z = torch.full((1, 3), logit, requires_grad=True)
        d = torch.einsum("...i,...i->...", weights, torch.sigmoid(z))
        assert d.item() in (0.0, 1.0)
        out = bad(d)
        assert torch.isinf(out).all()
        out.sum().backward()
        assert not torch.isfinite(z.grad).all()
        z2 = torch.full((1, 3), logit, requires_grad=True)
        d2 = torch.einsum("...i,...i->...", weights, torch.sigmoid(z2)).clamp(1e-6, 1 - 1e-6)
        (torch.log(d2) - torch.log(1 - d2)).sum().backward()
        assert torch.isfinite(z2.grad).all()
    # the model program of the test, run: the flagged log is -inf for a far-out input
    namespace: dict = {}
    exec(compile(MIX, "mix.py", "exec"), namespace)
    model = namespace["SigmoidMix"](4)
    with torch.no_grad():
        model.params.bias.fill_(0.0)
        model.params.weight.fill_(0.0)
        model.params.bias[4:8] = -200.0  # b: every sigmoid underflows
    assert torch.isinf(model(torch.ones(2)))
