"""TRN406: a quotient overwritten where its divisor is 0 (`scale = avg / deg; scale[deg == 0] = 1`) is finite
forward; backward is NaN only where a gradient reaches the division (0 times the inf derivative at 0). A
numerator the code declares a Python number (`avg_deg: Dict[str, float]`, `avg: float`) carries none, so
without autograd history in the divisor the overwrite is a complete guard and the rule stays quiet.
Graph-COM/GSAT's PNA degree scalers (conv_layers.py:234, :244; judged fp on the ecosystem test half at
968f621, the repository moved to dev) are this shape. A numerator of unknown kind (a parameter without
annotation, the features being averaged) keeps the finding: the span mean below really gets NaN gradients.
Both claims are checked against torch here."""

from __future__ import annotations

import torch
from project_helpers import run_check

SCALERS = """\
from typing import Dict

import torch


def scale_attenuation(src, deg, avg_deg: Dict[str, float]):
    scale = avg_deg['log'] / torch.log(deg + 1)
    scale[deg == 0] = 1
    return src * scale


def scale_inverse_linear(src, deg, avg: float):
    scale = avg / deg
    scale[deg == 0] = 1
    return src * scale
"""

SPAN_MEAN = """\
import torch


def span_mean(emb, span_mask):
    total = (emb * span_mask).sum(2)
    length = span_mask.sum(2)
    out = total / length
    out[(length == 0).expand(out.shape)] = 0
    return out


def unannotated(src, deg, avg):
    scale = avg / deg
    scale[deg == 0] = 1
    return src * scale
"""


def _namespace(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "scalers.py", "exec"), namespace)
    return namespace


def test_a_number_over_a_gradient_free_degree_overwritten_at_zero_is_quiet_and_finite_on_torch(tmp_path):
    path = tmp_path / "scalers.py"
    path.write_text(SCALERS)
    assert run_check(path, "TRN406") == []
    namespace = _namespace(SCALERS)
    deg = torch.tensor([[0.0], [1.0], [3.0]])  # a degree count: no gradient
    for scaler, avg in ((namespace["scale_attenuation"], {"log": 0.7}), (namespace["scale_inverse_linear"], 1.5)):
        src = torch.randn(3, 4, requires_grad=True)
        out = scaler(src, deg, avg)
        out.sum().backward()
        assert out.isfinite().all() and src.grad.isfinite().all()
        assert torch.equal(out[0], src[0].detach())  # the isolated node keeps its features (scale 1)


def test_a_quotient_a_gradient_reaches_is_still_reported_and_nan_in_backward_on_torch(tmp_path):
    path = tmp_path / "span.py"
    path.write_text(SPAN_MEAN)
    assert [f["line"] for f in run_check(path, "TRN406")] == [7, 13]
    emb = torch.randn(1, 2, 3, 4, requires_grad=True)
    span_mask = torch.tensor([[[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]).unsqueeze(-1)  # the second span is empty
    out = _namespace(SPAN_MEAN)["span_mean"](emb, span_mask)
    out.sum().backward()
    assert out.isfinite().all()  # the overwrite hides it forward
    assert emb.grad[0, 1].isnan().all()  # 0 * (1 / 0) in backward: NaN into the empty span's embeddings
