"""TRN406: a function that compares a value's elements with 0 (`pi_taken[mask == 0] = 1.0`) says that
they can be 0, not that a sum, mean or norm of them can: a mask has zeros by construction, and its sum is
0 only where every element is. oxwhirl/pymarl's COMA learner (coma_learner.py:77, :94, :97; ecosystem
dev, judged fp) divided by `mask.sum()` of a whole batch and was told "which is 0 where `mask` is".
Division by the compared value itself, or an elementwise function of it, keeps the finding."""

from __future__ import annotations

from project_helpers import run_check

COMA = """\
import torch


def coma_loss(advantages, log_pi_taken, mask, pi_taken):
    pi_taken[mask == 0] = 1.0
    loss = -((advantages * torch.log(pi_taken)) * mask).sum() / mask.sum()
    mean = (advantages * mask).sum().item() / mask.sum().item()
    return loss, mean
"""

ELEMENTWISE = """\
import torch


def scaled(src, deg, avg):
    scale = avg / torch.log(deg + 1)
    scale[deg == 0] = 1
    return src * scale
"""


def test_a_sum_of_a_value_compared_with_zero_elementwise_is_not_said_to_be_zero(tmp_path):
    path = tmp_path / "coma.py"
    path.write_text(COMA)
    assert run_check(path, "TRN406") == []


def test_an_elementwise_function_of_the_compared_value_keeps_the_finding(tmp_path):
    path = tmp_path / "scaler.py"
    path.write_text(ELEMENTWISE)
    assert [f["line"] for f in run_check(path, "TRN406")] == [5]
