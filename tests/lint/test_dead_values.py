"""A log or square root whose result nobody reads cannot turn a loss NaN: TRN401/TRN402 stay quiet on a
value bound to a name that every path rebinds before any read (analysis/gradient_use.py, reaching
definitions of flow.py). Seen in quantumiracle/Popular-RL-Algorithms' discrete SAC (h/prec8's carry-over
group, dev): `log_probs = torch.log(probs)` overwritten at once by a guarded log, four findings.

Look-alikes that stay found: a rebinding under an `if` (the first value still reaches the return on the
other path), and a value bound at the end of a loop body and read at the top of the next iteration. The
torch fact is checked: a -inf nobody reads leaves the gradient finite."""

from __future__ import annotations

import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

STRICT = Config(select=("strict",))

HEADER = """\
import torch
import torch.nn.functional as F
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.output = nn.Linear(4, 3)

    def forward(self, x):
        return F.softmax(self.output(x), dim=-1)

"""

OVERWRITTEN = HEADER + """\
    def evaluate(self, state, epsilon=1e-8):
        probs = self.forward(state)
        log_probs = torch.log(probs)
        log_probs = torch.log(probs.clamp(min=epsilon))
        return log_probs
"""

OVERWRITTEN_ON_ONE_PATH = HEADER + """\
    def evaluate(self, state, epsilon=1e-8):
        probs = self.forward(state)
        log_probs = torch.log(probs)
        if state.sum() > 0:
            log_probs = torch.log(probs.clamp(min=epsilon))
        return log_probs
"""

READ_IN_THE_NEXT_ITERATION = HEADER + """\
    def rollout(self, states):
        loss = 0
        log_probs = torch.zeros(3)
        for state in states:
            loss = loss + log_probs.sum()
            log_probs = torch.log(self.forward(state))
        return loss
"""

DEAD_ROOT = """\
import torch


def spread_loss(x):
    spread = torch.sqrt(((x - x.mean()) ** 2).mean())
    spread = torch.sqrt(((x - x.mean()) ** 2).mean() + 1e-12)
    return spread
"""


def _lines(source: str, code: str) -> list[int]:
    return [f.to_json()["line"] for f in lint_source(source, "p.py", STRICT).findings if f.code == code]


def test_a_log_overwritten_before_any_read_is_not_reported():
    line = OVERWRITTEN.splitlines().index("        log_probs = torch.log(probs)") + 1
    assert line not in _lines(OVERWRITTEN, "TRN402")
    assert line not in _lines(OVERWRITTEN, "TRN401")


def test_a_log_overwritten_on_one_path_only_is_reported():
    line = OVERWRITTEN_ON_ONE_PATH.splitlines().index("        log_probs = torch.log(probs)") + 1
    assert line in _lines(OVERWRITTEN_ON_ONE_PATH, "TRN402")


def test_a_log_read_in_the_next_iteration_is_reported():
    line = READ_IN_THE_NEXT_ITERATION.splitlines().index("            log_probs = torch.log(self.forward(state))") + 1
    assert line in _lines(READ_IN_THE_NEXT_ITERATION, "TRN402")


def test_a_square_root_overwritten_before_any_read_is_not_reported():
    assert _lines(DEAD_ROOT, "TRN401") == []
    live = DEAD_ROOT.replace("    spread = torch.sqrt(((x - x.mean()) ** 2).mean() + 1e-12)\n", "")
    assert _lines(live, "TRN401") == [5]


def test_torch_a_minus_inf_nobody_reads_leaves_the_gradient_finite():
    logits = torch.tensor([[0.0, 0.0, -200.0]], requires_grad=True)  # the last probability underflows to 0
    probs = torch.softmax(logits, dim=-1)
    assert probs[0, 2].item() == 0.0
    log_probs = torch.log(probs)
    assert torch.isinf(log_probs).any()  # what the dead line computes
    log_probs = torch.log(probs.clamp(min=1e-8))
    (probs * log_probs).sum().backward()
    assert torch.isfinite(logits.grad).all()
    # and the dead value, had it been read, would have made it NaN
    logits.grad = None
    probs = torch.softmax(logits, dim=-1)
    (probs * torch.log(probs)).sum().backward()
    assert torch.isnan(logits.grad).any()
