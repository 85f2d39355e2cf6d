"""TRN102 in a function that trains (issue 27): the epoch loop trains, then puts the model in eval
mode and runs it over the test loader outside no_grad. Before, any backward in the function kept
TRN102 quiet for all of it, which missed the commonest script shape (bench/recreated r025, an OOM
thread fixed by wrapping the evaluation loop in `torch.no_grad()`).

Reported: a loop that trains nothing, after the model's own `.eval()`, with no backward after it.
Quiet: the same loop under no_grad, a loop with no `.eval()` before it, and an evaluation loop whose
outputs a later backward could use. No fix is offered here: a training function cannot be
decorated with no_grad, and the message names the loop to wrap."""

from __future__ import annotations

import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()

SCRIPT = '''import torch
from torch import nn

net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loss_func = nn.CrossEntropyLoss()
train_loader = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(3)]
test_loader = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(3)]
outputs = []

for epoch in range(2):
    net.train()
    for x, y in train_loader:
        loss = loss_func(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    correct = 0
    for x, y in test_loader:
        predict = net(x)
        outputs.append(predict)
        correct += (predict.argmax(1) == y).sum().item()
'''
_EVAL_LOOP = SCRIPT[SCRIPT.index("    for x, y in test_loader:"):]


def _findings(source: str):
    return [f for f in lint_source(source, "train.py", CONFIG).findings if f.code == "TRN102"]


def _run(source: str) -> list:
    namespace: dict = {}
    exec(compile(source, "train.py", "exec"), namespace)
    return namespace["outputs"]


def test_the_evaluation_loop_of_a_training_loop_is_reported_and_records_a_graph():
    found = _findings(SCRIPT)
    assert [f.range.start.line + 1 for f in found] == [21]
    assert "after `.eval()`" in found[0].message and found[0].fix is None
    # the claim, on torch: every evaluation output holds a graph
    assert all(out.grad_fn is not None for out in _run(SCRIPT))
    wrapped = SCRIPT.replace(_EVAL_LOOP, _EVAL_LOOP.replace("\n    ", "\n        ").replace(
        "    for x, y", "    with torch.no_grad():\n        for x, y", 1))
    assert "with torch.no_grad():\n        for x, y in test_loader:\n            predict = net(x)" in wrapped
    assert _findings(wrapped) == []
    assert all(out.grad_fn is None for out in _run(wrapped))


def test_quiet_twins():
    # no `.eval()` before the loop: not known to be an evaluation
    assert _findings(SCRIPT.replace("    net.eval()\n", "")) == []
    # a backward after the loop could use what it computes
    later = SCRIPT + "    torch.stack(outputs).sum().backward()\n"
    assert _findings(later) == []
    # a training loop alone is not an evaluation
    assert _findings(SCRIPT.split("    net.eval()\n")[0]) == []
    assert torch.is_grad_enabled()
