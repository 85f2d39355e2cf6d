"""The training events of a one-line block (`if (i + 1) % accum == 0: optimizer.step()`,
`if is_train: model.train()`) are read like those of an indented one. Before, a block's small
statements were never an event's root, so a step, a zero_grad or a mode switch written on the `if`
line was invisible to every training rule (TRN102's shared train/evaluate function, TRN701 here)."""

from __future__ import annotations

import torch
from project_helpers import run_check

ACCUMULATING = """\
import torch


def train(model, loader, optimizer, accum=2):
    model.train()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0: optimizer.step()
"""


def test_a_step_on_the_if_line_is_seen(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(ACCUMULATING)
    assert [f["line"] for f in run_check(path, "TRN701")] == [8]
    path.write_text(ACCUMULATING.replace("optimizer.step()", "optimizer.step(); optimizer.zero_grad()"))
    assert run_check(path, "TRN701") == []  # the reset on the same line is seen too


def test_on_torch_the_reported_loop_steps_with_every_gradient_so_far():
    namespace: dict = {}
    exec(compile(ACCUMULATING, "train.py", "exec"), namespace)
    model = torch.nn.Linear(2, 1, bias=False)
    loader = [(torch.ones(1, 2), torch.zeros(1, 1))] * 4
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights, and each batch's gradient, stay
    namespace["train"](model, loader, optimizer)
    one = torch.autograd.grad(torch.nn.functional.mse_loss(model(torch.ones(1, 2)), torch.zeros(1, 1)) / 2,
                              model.weight)[0]
    assert torch.allclose(model.weight.grad, 4 * one)  # the second step applied all four batches' gradients
