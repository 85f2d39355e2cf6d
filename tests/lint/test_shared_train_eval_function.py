"""TRN102 in a function shared by training and evaluation (re-created dev r083, jpata/particleflow#290,
merged as "fix torch no grad ... to allow larger batch sizes not to OOM"): `if is_train: model.train()
else: model.eval()`, the forward for both, and backward only `if is_train`. Called for evaluation, every
batch records a graph that nothing uses. Before, any backward in the function kept the rule quiet.

The finding names `torch.set_grad_enabled(<condition>)`; on torch, the evaluation call's outputs hold a
graph, and with that wrapper they hold none while training still gets gradients. Quiet twins: the
wrapper itself, a `train()` that also runs on the evaluation path, a condition that is not the
caller's flag, and the forward split by the flag with no_grad on the evaluation side."""

from __future__ import annotations


import pytest
import torch
import torch.nn as nn
from project_helpers import run_check

PROGRAM = """\
import torch


def run_epoch(model, loader, optimizer, is_train=True):
    if is_train:
        model.train()
    else:
        model.eval()
    outputs, total = [], 0.0
    for x, y in loader:
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, y)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
        outputs.append(out)
    return total, outputs


def fit(model, train_loader, val_loader, optimizer):
    run_epoch(model, train_loader, optimizer, is_train=True)
    return run_epoch(model, val_loader, optimizer, is_train=False)
"""

FORWARD = "        out = model(x)\n        loss = torch.nn.functional.mse_loss(out, y)\n"
WRAPPED = PROGRAM.replace(FORWARD, "        with torch.set_grad_enabled(is_train):\n            out = model(x)\n"
                                   "            loss = torch.nn.functional.mse_loss(out, y)\n")
MODES = "    if is_train:\n        model.train()\n    else:\n        model.eval()\n"


def _run(source: str, is_train: bool):
    namespace: dict = {}
    exec(compile(source, "shared.py", "exec"), namespace)
    model = nn.Linear(4, 2)
    loader = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(2)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.detach().clone()
    _, outputs = namespace["run_epoch"](model, loader, optimizer, is_train=is_train)
    return outputs, not torch.equal(before, model.weight.detach())


def _lines(tmp_path, source: str) -> list[int]:
    path = tmp_path / "shared.py"
    path.write_text(source)
    return [f["line"] for f in run_check(path, "TRN102")]


def test_the_evaluation_branch_is_reported_at_the_forward(tmp_path):
    path = tmp_path / "shared.py"
    path.write_text(PROGRAM)
    findings = run_check(path, "TRN102")
    assert [f["line"] for f in findings] == [11]  # `out = model(x)`
    assert "torch.set_grad_enabled(is_train)" in findings[0]["message"]
    assert findings[0].get("fix") is None  # the function trains: nothing to decorate


def test_on_torch_the_evaluation_call_keeps_graphs_and_the_named_wrapper_does_not():
    outputs, _ = _run(PROGRAM, is_train=False)
    assert all(out.grad_fn is not None for out in outputs)
    outputs, _ = _run(WRAPPED, is_train=False)
    assert all(out.grad_fn is None for out in outputs)
    _, trained = _run(WRAPPED, is_train=True)
    assert trained  # training still gets gradients under the wrapper


def test_the_same_shape_written_otherwise_is_reported(tmp_path):
    negated = PROGRAM.replace(MODES, "    if not is_train:\n        model.eval()\n    else:\n        model.train()\n")
    assert _lines(tmp_path, negated) == [11]
    by_name = PROGRAM.replace("if is_train:", 'if mode == "train":').replace("is_train=True)", 'mode="train")') \
        .replace("is_train=False)", 'mode="val")')
    assert _lines(tmp_path, by_name) == [11]
    one_line = PROGRAM.replace(MODES, "    if is_train: model.train()\n    else: model.eval()\n")
    assert _lines(tmp_path, one_line) == [9]


@pytest.mark.parametrize("old,new", [
    (FORWARD, WRAPPED[WRAPPED.index("        with torch.set_grad"):WRAPPED.index("        if is_train:\n            optimizer")]),
    # the forward split by the flag, under no_grad for evaluation (r083's fix)
    ("        out = model(x)\n", "        if is_train:\n            out = model(x)\n        else:\n"
                               "            with torch.no_grad():\n                out = model(x)\n"),
    (MODES, "    model.train()\n"),  # train mode on both paths: not an evaluation
    # a condition on the data, not the caller's flag
    ("        if is_train:\n            optimizer.zero_grad()", "        if total < 10:\n            optimizer.zero_grad()"),
])
def test_quiet_twins(tmp_path, old, new):
    assert old in PROGRAM
    assert _lines(tmp_path, PROGRAM.replace(old, new)) == []


def test_quiet_when_the_evaluation_call_runs_under_no_grad(tmp_path):
    """gordicaleksa/pytorch-original-transformer (ecosystem dev): `train_val_loop(is_train=False, ...)`
    is called inside `with torch.no_grad():`."""
    source = PROGRAM.replace("    return run_epoch(model, val_loader, optimizer, is_train=False)\n",
                             "    with torch.no_grad():\n"
                             "        return run_epoch(model, val_loader, optimizer, is_train=False)\n")
    assert _lines(tmp_path, source) == []
