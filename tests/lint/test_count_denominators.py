"""TRN406: division by a count of the elements where a condition the code computes holds
(`mask = labels != -100; ... / mask.sum()`): 0 for a batch or row where it holds nowhere. Three dev
bug-fix commits guard exactly this (f014 pixel accuracy over `segs >= 0`, f029 top-5 accuracy over
`(labels != -100) & (labels != PAD)`, f034 a masked L1 loss), which the rule used to leave quiet as "a
whole batch's count". A mask known only by its name (`attention_mask`, a parameter) stays quiet: that
it can be all zeros is not read from code.

On torch: an all-ignored batch makes the loss NaN and every gradient NaN; the quick fix
(`.clamp_min(1)`) makes it 0 with zero gradients and leaves other batches' values unchanged."""

from __future__ import annotations

import pytest
import torch
from project_helpers import run_check

PROGRAM = """\
import torch


def masked_nll(log_probs, labels):
    mask = labels != -100
    picked = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return -(picked * mask).sum() / mask.sum()
"""


def _loss(source: str, labels: torch.Tensor):
    namespace: dict = {}
    exec(compile(source, "loss.py", "exec"), namespace)
    logits = torch.randn(2, 3, 5, requires_grad=True)
    loss = namespace["masked_nll"](logits.log_softmax(-1), labels)
    loss.backward()
    return loss, logits.grad


def test_a_count_of_a_computed_mask_is_reported_and_the_fix_runs(tmp_path):
    path = tmp_path / "loss.py"
    path.write_text(PROGRAM)
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]
    ignored = torch.full((2, 3), -100)
    loss, grad = _loss(PROGRAM, ignored)
    assert loss.isnan() and grad.isnan().all()  # the reported division: NaN loss, NaN gradients
    run_check(path, "TRN406", "--fix", "--unsafe-fixes")
    fixed = path.read_text()
    assert "mask.sum().clamp_min(1)" in fixed
    loss, grad = _loss(fixed, ignored)
    assert loss.item() == 0 and torch.equal(grad, torch.zeros_like(grad))
    labels = torch.tensor([[1, -100, 2], [0, 4, -100]])
    torch.manual_seed(0)
    before, _ = _loss(PROGRAM, labels)
    torch.manual_seed(0)
    after, _ = _loss(fixed, labels)
    assert torch.equal(before, after)  # any batch with a label keeps its value


@pytest.mark.parametrize("mask", [
    "(labels != -100) & (labels != 0)",  # f029's combined mask
    "labels.ne(-100)",
    "(labels >= 0).float()",
])
def test_other_computed_masks_are_counts(tmp_path, mask):
    path = tmp_path / "loss.py"
    path.write_text(PROGRAM.replace("mask = labels != -100", f"mask = {mask}"))
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]


@pytest.mark.parametrize("old,new", [
    ("mask = labels != -100\n", "mask = attention_mask\n"),  # a mask known by its name only
    ("mask.sum()\n", "mask.sum().clamp_min(1)\n"),
    ("mask.sum()\n", "(mask.sum() + 1e-8)\n"),
    ("    return -(picked", "    if mask.sum() == 0:\n        return picked.sum() * 0\n    return -(picked"),
])
def test_quiet_twins(tmp_path, old, new):
    source = PROGRAM.replace("(log_probs, labels)", "(log_probs, labels, attention_mask=None)")
    assert old in source
    path = tmp_path / "loss.py"
    path.write_text(source.replace(old, new))
    assert run_check(path, "TRN406") == []


MASKED_MSE = """\
import torch


def masked_mse(preds, labels, null_val=0.0):
    mask = (labels != null_val)
    mask = mask.float()
    mask /= torch.mean((mask))
    mask = torch.where(torch.isnan(mask), torch.zeros_like(mask), mask)
    return torch.mean((preds - labels) ** 2 * mask)
"""


def test_a_quotient_without_gradient_whose_nans_are_replaced_is_quiet(tmp_path):
    """Graph-WaveNet's masked losses (ecosystem dev): the mask carries no gradient, and its NaNs are
    replaced right after the division; without the repair the division is reported."""
    path = tmp_path / "metrics.py"
    path.write_text(MASKED_MSE)
    assert run_check(path, "TRN406") == []
    namespace: dict = {}
    exec(compile(MASKED_MSE, "metrics.py", "exec"), namespace)
    preds = torch.randn(4, requires_grad=True)
    loss = namespace["masked_mse"](preds, torch.zeros(4))  # every label is the null value
    loss.backward()
    assert loss.item() == 0 and not preds.grad.isnan().any()  # repaired: no NaN forward or backward
    path.write_text(MASKED_MSE.replace("    mask = torch.where(torch.isnan(mask), torch.zeros_like(mask), mask)\n", ""))
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]


@pytest.mark.parametrize("source,lines", [
    # the function form of a comparison is a mask too
    ("def f(x, labels):\n    pos = torch.eq(labels, 3).float()\n    return x.sum() / pos.sum()\n", [6]),
    # a mask known by its name stays a guess through a product (SCAN's `mask = mask * logits_mask`)
    ("def f(x, mask, b):\n    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b).view(-1, 1), 0)\n"
     "    mask = mask * logits_mask\n    return x.sum(1) / mask.sum(1)\n", []),
    # ... but a computed condition in the product can hold nowhere, whatever the named mask is
    ("def f(x, mask, keep):\n    mask = mask * (keep > 0)\n    return x.sum() / mask.sum()\n", [6]),
    # a positive per row by construction: `eye(b)` tiled, the self-pair masked out (one positive per row)
    ("def f(log_prob, b):\n    pos = torch.eye(b).repeat(1, 2)\n"
     "    logits_mask = torch.scatter(torch.ones_like(pos), 1, torch.arange(b).view(-1, 1), 0)\n"
     "    pos = pos * logits_mask\n    return ((pos * log_prob).sum(1) / pos.sum(1)).mean()\n", []),
])
def test_what_is_a_computed_mask(tmp_path, source, lines):
    path = tmp_path / "loss.py"
    path.write_text("import torch\n\n\n" + source)
    assert [f["line"] for f in run_check(path, "TRN406")] == lines
