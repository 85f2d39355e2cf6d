"""TRN701 per branch: a loop whose `if use_amp:` arm steps without zeroing while its `else:` arm zeroes
after its step (LAVIS base_task.train_inner_loop, dev case g010). On the arm without the zeroing,
every backward adds to the gradients already applied: checked on torch, and the fix runs."""

from __future__ import annotations

import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))

LOOP = '''import torch


def train(model, batches, optimizer, plain):
    grads = []
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        grads.append(model.weight.grad.clone())
        if plain:
            optimizer.step()
            optimizer.zero_grad()
        else:
            optimizer.step()
    return grads
'''


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN701"]


def _run(source: str, plain: bool) -> list[torch.Tensor]:
    namespace: dict = {}
    exec(compile(source, "t.py", "exec"), namespace)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the same gradient every step
    batch = (torch.randn(4, 3), torch.randn(4, 1))
    return namespace["train"](model, [batch] * 3, optimizer, plain)


def test_the_branch_without_zeroing_is_reported_and_accumulates_on_torch():
    assert _lines(LOOP) == [14]
    plain, other = _run(LOOP, True), _run(LOOP, False)
    assert torch.allclose(plain[2], plain[0])  # zeroed after each step: each backward starts afresh
    assert torch.allclose(other[2], 3 * other[0])  # the other arm: the third step applies three gradients


def test_the_fix_zeroes_that_branch_and_runs():
    fixed = fix_source(LOOP, "t.py", CONFIG)[0]
    assert "        else:\n            optimizer.step()\n            optimizer.zero_grad()\n" in fixed
    assert _lines(fixed) == []
    grads = _run(fixed, False)
    assert torch.allclose(grads[2], grads[0])


def test_quiet_when_the_loop_also_zeroes_outside_the_if():
    zeroed_first = LOOP.replace("        loss = torch.nn", "        optimizer.zero_grad()\n        loss = torch.nn")
    assert _lines(zeroed_first) == []


def test_quiet_when_only_one_arm_steps():
    # gradient accumulation: the other arm does not step, so nothing is applied twice
    accumulating = LOOP.replace("        else:\n            optimizer.step()\n", "        else:\n            pass\n")
    assert _lines(accumulating) == []
