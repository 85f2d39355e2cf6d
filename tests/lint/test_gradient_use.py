"""analysis/gradient_use.py follows a value to its uses: a sqrt or log whose result only
feeds comparisons, `.item()` metrics or an `if` sends no gradient back, so TRN401's
"infinite gradient at 0" does not apply there. Any use that may keep the value (a return,
a loss, an attribute, a list, an unknown call) keeps the finding. The claim that no
gradient comes back is checked against torch, at the exact 0 the rule warns about."""

from __future__ import annotations

import textwrap

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("TRN401",))

SHAPE = """
import torch
def flow_loss(pred, gt, valid, store):  # a loss function: its values are backpropagated
    d = torch.sum((pred - gt) ** 2, dim=1).sqrt()
    {use}
"""


def _hits(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", CONFIG)
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings if f.code == "TRN401"]


@pytest.mark.parametrize("use, quiet", [
    ("return (pred - gt).abs().mean(), {'epe': d.mean().item()}", True),
    ("valid = valid & (d < 400)\n    return ((pred - gt).abs() * valid[:, None]).mean()", True),
    ("d = d.view(-1)[valid.view(-1)]\n    return (d < 1).float().mean().item()", True),
    ("if d.max() > 10:\n        print('far')\n    return pred.sum()", True),
    ("return pred[d.argmax()].sum()", True),  # an index: integer positions
    ("return d.mean()", False),  # the loss itself
    ("loss = d.mean() + 1\n    return loss", False),
    ("store.append(d)", False),  # kept somewhere we cannot see
    ("store.last = d", False),
    ("return helper(d)", False),  # an unknown function may backpropagate it
    ("d = d.view(-1)\n    return d.mean().item(), d.sum()", False),  # one use of two keeps it
    ("m = d.item()\n    return torch.where(valid, d, 0).sum()", False),
])
def test_a_root_that_only_feeds_masks_and_metrics_sends_no_gradient_back(use, quiet):
    hits = _hits(SHAPE.format(use=use))
    assert (hits == []) is quiet, hits


def test_a_read_in_a_nested_function_keeps_the_finding():
    source = """
    import torch
    def loss_fn(pred, gt):
        d = torch.sum((pred - gt) ** 2, dim=1).sqrt()
        def closure():
            return d.mean()
        return closure
    """
    assert _hits(source) == [4]


def test_torch_agrees_no_gradient_flows_through_a_mask_and_a_metric_at_zero():
    """The RAFT shape: ground truth 0 at a pixel, prediction equal to it at another. The
    roots are exactly 0 there, and the loss's gradient is still finite everywhere."""
    gt = torch.zeros(1, 2, 2, 2)
    gt[0, :, 0, 0] = torch.tensor([3.0, 4.0])
    pred = gt.clone().requires_grad_(True)  # end-point error exactly 0 everywhere
    mag = torch.sum(gt ** 2, dim=1).sqrt()
    valid = mag < 400
    loss = (valid[:, None] * (pred - gt).abs()).mean()
    epe = torch.sum((pred - gt) ** 2, dim=1).sqrt()
    metric = epe.view(-1)[valid.view(-1)].mean().item()
    loss.backward()
    assert metric == 0.0 and torch.isfinite(pred.grad).all()
    # whereas the same root inside the loss has an infinite slope at 0: NaN
    pred.grad = None
    torch.sum((pred - gt) ** 2, dim=1).sqrt().mean().backward()
    assert torch.isnan(pred.grad).any()


def test_a_global_is_read_elsewhere():
    source = """
    import torch
    last_epe = None
    def flow_loss(pred, gt):
        global last_epe
        last_epe = torch.sum((pred - gt) ** 2, dim=1).sqrt()
        return (pred - gt).abs().mean(), (last_epe < 1).float().mean().item()
    """
    assert _hits(source) == [6]
