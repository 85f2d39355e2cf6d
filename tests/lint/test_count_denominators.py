"""TRN406: division by a count of the elements where a condition the code computes holds
(`mask = labels != -100`), per row (`(lp * mask).sum(-1) / mask.sum(-1)`: a padded row) or under
another count (`correct.sum() / mask.sum()`: a metric). Both are 0 where the condition holds nowhere.
Dev bug-fix commits guard exactly these (f014 pixel accuracy over `segs >= 0`, f029 top-5 accuracy
over `(labels != -100) & (labels != PAD)`), which the rule used to leave quiet as whole-batch counts.
A loss over a whole batch's count stays quiet (0 only for an empty batch, where PyTorch's own mean is
NaN too: the ecosystem verdicts' convention), and so does a mask known only by its name.

On torch: a row whose labels are all ignored makes the loss NaN and every gradient NaN; the quick fix
(`.clamp_min(1)`) makes that row's term 0 and leaves the other rows' values unchanged."""

from __future__ import annotations

import pytest
import torch
from project_helpers import run_check

PROGRAM = """\
import torch


def sequence_nll(log_probs, labels):
    mask = labels != -100
    picked = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return -((picked * mask).sum(-1) / mask.sum(-1)).mean()
"""


def _loss(source: str, labels: torch.Tensor, seed: int = 0):
    namespace: dict = {}
    exec(compile(source, "loss.py", "exec"), namespace)
    torch.manual_seed(seed)
    logits = torch.randn(2, 3, 5, requires_grad=True)
    loss = namespace["sequence_nll"](logits.log_softmax(-1), labels)
    loss.backward()
    return loss, logits.grad


def test_a_per_row_count_of_a_computed_mask_is_reported_and_the_fix_runs(tmp_path):
    path = tmp_path / "loss.py"
    path.write_text(PROGRAM)
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]
    padded_row = torch.tensor([[1, 2, 3], [-100, -100, -100]])
    loss, grad = _loss(PROGRAM, padded_row)
    assert loss.isnan() and grad[1].isnan().all()  # the padded row: NaN loss, NaN gradients into the model
    run_check(path, "TRN406", "--fix", "--unsafe-fixes")
    fixed = path.read_text()
    assert "mask.sum(-1).clamp_min(1)" in fixed
    loss, grad = _loss(fixed, padded_row)
    assert loss.isfinite() and grad.isfinite().all()
    labels = torch.tensor([[1, -100, 2], [0, 4, -100]])
    assert torch.equal(_loss(PROGRAM, labels)[0], _loss(fixed, labels)[0])  # rows with a label keep their value


ACCURACY = """\
import torch


def accuracy(logits, labels):
    mask = labels != -100
    correct = (logits.argmax(-1) == labels) & mask
    return correct.sum() / mask.sum()
"""


def test_a_ratio_of_counts_is_reported_and_is_nan_on_torch(tmp_path):
    path = tmp_path / "metrics.py"
    path.write_text(ACCURACY)
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]
    namespace: dict = {}
    exec(compile(ACCURACY, "metrics.py", "exec"), namespace)
    assert namespace["accuracy"](torch.randn(4, 3), torch.full((4,), -100)).isnan()


@pytest.mark.parametrize("mask", [
    "(labels != -100) & (labels != 0)",  # f029's combined mask
    "labels.ne(-100)",
    "torch.ne(labels, -100)",
    "(labels >= 0).float()",
])
def test_other_computed_masks_are_counts(tmp_path, mask):
    path = tmp_path / "loss.py"
    path.write_text(PROGRAM.replace("mask = labels != -100", f"mask = {mask}"))
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]


@pytest.mark.parametrize("old,new", [
    ("mask = labels != -100\n", "mask = attention_mask\n"),  # a mask known by its name only
    ("mask.sum(-1))", "mask.sum(-1).clamp_min(1))"),
    ("mask.sum(-1))", "(mask.sum(-1) + 1e-8))"),
    # a loss over a whole batch's count: NaN only for an empty batch, as PyTorch's own mean
    ("-((picked * mask).sum(-1) / mask.sum(-1)).mean()", "-(picked * mask).sum() / mask.sum()"),
])
def test_quiet_twins(tmp_path, old, new):
    source = PROGRAM.replace("(log_probs, labels)", "(log_probs, labels, attention_mask=None)")
    assert old in source
    path = tmp_path / "loss.py"
    path.write_text(source.replace(old, new))
    assert run_check(path, "TRN406") == []


@pytest.mark.parametrize("source,lines", [
    # a mask known by its name stays a guess through a product (SCAN's `mask = mask * logits_mask`)
    ("def f(x, mask, b):\n    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b).view(-1, 1), 0)\n"
     "    mask = mask * logits_mask\n    return x.sum(1) / mask.sum(1)\n", []),
    # ... but a computed condition in the product can hold nowhere, whatever the named mask is
    ("def f(x, mask, keep):\n    mask = mask * (keep > 0)\n    return x.sum(1) / mask.sum(1)\n", [6]),
    # a positive per row by construction: `eye(b)` tiled, the self-pair masked out (one positive per row)
    ("def f(log_prob, b):\n    pos = torch.eye(b).repeat(1, 2)\n"
     "    logits_mask = torch.scatter(torch.ones_like(pos), 1, torch.arange(b).view(-1, 1), 0)\n"
     "    pos = pos * logits_mask\n    return ((pos * log_prob).sum(1) / pos.sum(1)).mean()\n", []),
    # a bincount is not a mask's count (class weights: a class absent from the labels is never weighted)
    ("def f(labels):\n    weight = torch.bincount(labels)\n    return weight.max() / weight\n", []),
])
def test_what_is_a_computed_mask(tmp_path, source, lines):
    path = tmp_path / "loss.py"
    path.write_text("import torch\n\n\n" + source)
    assert [f["line"] for f in run_check(path, "TRN406")] == lines


STABILITY = """\
import torch


def stability_score(masks, threshold, offset):
    intersections = (masks > (threshold + offset)).sum(-1, dtype=torch.int16).sum(-1, dtype=torch.int32)
    unions = (masks > (threshold - offset)).sum(-1, dtype=torch.int16).sum(-1, dtype=torch.int32)
    return intersections / unions
"""


def test_a_sum_of_per_row_counts_is_still_a_count(tmp_path):
    # segment-anything's stability score (dev bug case f004): a sum of counts is 0 where every count is
    path = tmp_path / "amg.py"
    path.write_text(STABILITY)
    assert [f["line"] for f in run_check(path, "TRN406")] == [7]
    namespace: dict = {}
    exec(compile(STABILITY, "amg.py", "exec"), namespace)
    masks = torch.stack([torch.randn(4, 4) + 5, torch.full((4, 4), -10.0)])  # the second mask is empty
    assert namespace["stability_score"](masks, 0.0, 1.0)[1].isnan()
    run_check(path, "TRN406", "--fix", "--unsafe-fixes")
    fixed = path.read_text()
    exec(compile(fixed, "amg.py", "exec"), namespace)
    assert namespace["stability_score"](masks, 0.0, 1.0).isfinite().all()
