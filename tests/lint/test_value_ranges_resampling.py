"""Resampling keeps a row of zeros: `F.interpolate` and 1-d pooling compute each output row from one
input row, so a frame-weight row that is all zeros stays all zeros, and a sum over the rows of the
resampled weights is 0 there (vocabulary zero_row_keeping_functions). The claim is checked on torch
for every function and mode listed, and TRN406 reads it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.analysis.vocab import vocab

CONFIG = Config(select=("strict",))

RESAMPLINGS = {
    "torch.nn.functional.interpolate": [lambda w, mode=mode: F.interpolate(w, size=7, mode=mode)
                                        for mode in ("nearest", "linear", "area", "nearest-exact")],
    "torch.nn.functional.upsample": [lambda w: F.upsample(w, scale_factor=2, mode="linear")],
    "torch.nn.functional.avg_pool1d": [lambda w: F.avg_pool1d(w, 2)],
    "torch.nn.functional.adaptive_avg_pool1d": [lambda w: F.adaptive_avg_pool1d(w, 3)],
    "torch.nn.functional.max_pool1d": [lambda w: F.max_pool1d(w, 2)],
    "torch.nn.functional.adaptive_max_pool1d": [lambda w: F.adaptive_max_pool1d(w, 3)],
}


def test_every_listed_function_is_checked():
    assert set(RESAMPLINGS) == set(vocab().zero_row_keeping_functions)


@pytest.mark.filterwarnings("ignore:.*upsample.*deprecated")
@pytest.mark.parametrize("name", sorted(RESAMPLINGS))
def test_a_row_of_zeros_stays_a_row_of_zeros(name):
    weights = torch.rand(3, 1, 10) + 0.1
    weights[1] = 0.0  # one sample whose frames all have weight 0
    for resample in RESAMPLINGS[name]:
        sums = resample(weights).sum(dim=-1)
        assert sums[1].item() == 0.0 and bool((sums[[0, 2]] > 0).all())
        assert bool(torch.isnan(sums / sums)[1].all())  # dividing by it there: 0/0


POOL = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class StatsPool(nn.Module):
    def forward(self, sequences, weights):
        weights = weights.unsqueeze(dim=1)
        if sequences.shape[-1] != weights.shape[-1]:
            weights = F.interpolate(weights, size=sequences.shape[-1], mode="linear")
        v1 = weights.sum(dim=-1)
        mean = torch.sum(sequences * weights, dim=-1) / (v1 + 1e-8)
        v2 = torch.square(weights).sum(dim=-1)
        dx2 = torch.square(sequences - mean.unsqueeze(-1))
        return torch.sum(dx2 * weights, dim=-1) / ((v1 - v2 / v1) + 1e-8)
'''


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN406"]


def test_division_by_the_sum_of_resampled_weights():
    assert _lines(POOL) == [15]
    assert _lines(POOL.replace("v2 / v1", "v2 / (v1 + 1e-8)")) == []


def test_a_learned_resampling_is_not_data():
    # a convolution's output is a learned layer's: training never makes a whole row of it 0
    learned = POOL.replace('F.interpolate(weights, size=sequences.shape[-1], mode="linear")',
                           "self.conv(weights)")
    assert _lines(learned) == []


def test_the_nan_on_torch():
    """The finding's premise on torch: a sample whose frame weights are all 0 gives a NaN
    variance and NaN gradients, and the fix's epsilon keeps both finite."""
    namespace: dict = {}
    exec(compile(POOL, "pool.py", "exec"), namespace)
    pool = namespace["StatsPool"]()
    sequences = torch.randn(2, 4, 8, requires_grad=True)
    weights = torch.rand(2, 5)
    weights[1] = 0.0
    out = pool(sequences, weights)
    out.sum().backward()
    assert torch.isnan(out[1]).all() and torch.isnan(sequences.grad[1]).all()
    exec(compile(POOL.replace("v2 / v1", "v2 / (v1 + 1e-8)"), "pool.py", "exec"), namespace)
    sequences.grad = None
    out = namespace["StatsPool"]()(sequences, weights)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(sequences.grad).all()
