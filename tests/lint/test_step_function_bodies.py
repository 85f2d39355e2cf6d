"""A method that a loop of the file calls once per batch (`for x, y in loader: self.train_step(x, y)`) is a
loop body, as a framework's `training_step` is:

- TRN404: `self.scaler.step(self.opt)` with no `self.scaler.update()` anywhere. Checked on torch (the CPU
  GradScaler): the second step raises RuntimeError, and the fixed method runs step after step;
- TRN101: `self.history.append(loss)` keeps every step's graph in an attribute that outlives the call.
  Checked on torch: the kept losses carry their graphs.

`self.step(x, y)` is such a call of the class's own method, not an optimizer's step. Quiet where the method
updates the scaler, and where the method is not called in a loop."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from traindoctor.config import Config
from traindoctor.lint import lint_source
from traindoctor.lint.api import apply_fixes

SCALER = '''\
import torch


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.scaler = torch.amp.GradScaler("cpu")

    def train_step(self, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.opt.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)

    def fit(self, loader):
        for x, y in loader:
            self.train_step(x, y)
'''

HISTORY = '''\
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt
        self.history = []

    def train_step(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.history.append(loss)

    def fit(self, loader):
        for x, y in loader:
            self.train_step(x, y)
'''


def _lint(source: str, code: str):
    result = lint_source(source, "trainer.py", Config(select=(code,)))
    assert result.error is None, result.error
    return result


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in _lint(source, code).findings]


def _trainer(source: str):
    namespace: dict = {}
    exec(compile(source, "trainer.py", "exec"), namespace)
    model = nn.Linear(3, 1)
    return namespace["Trainer"](model, torch.optim.SGD(model.parameters(), lr=0.01))


def _batches(n: int = 3):
    return [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(n)]


def test_a_scaler_stepped_per_batch_without_update_is_reported_and_raises_in_torch() -> None:
    assert _lines(SCALER, "TRN404") == [14]
    with pytest.raises(RuntimeError, match="since the last update"):
        _trainer(SCALER).fit(_batches())


def test_the_update_fix_runs_step_after_step() -> None:
    result = _lint(SCALER, "TRN404")
    fixed = apply_fixes(SCALER, [f for f in result.findings if f.fix is not None])
    assert "self.scaler.update()" in fixed and _lines(fixed, "TRN404") == []
    _trainer(fixed).fit(_batches())


def test_quiet_without_a_loop_calling_the_method() -> None:
    assert _lines(SCALER.split("    def fit")[0], "TRN404") == []


def test_losses_kept_by_a_per_batch_method_are_reported() -> None:
    assert _lines(HISTORY, "TRN101") == [16]
    trainer = _trainer(HISTORY)
    trainer.fit(_batches())
    assert all(loss.grad_fn is not None for loss in trainer.history)


def test_a_detached_history_stays_quiet() -> None:
    assert _lines(HISTORY.replace("self.history.append(loss)", "self.history.append(loss.item())"), "TRN101") == []


def test_a_method_named_step_is_the_class_s_own_method_not_an_optimizer() -> None:
    source = HISTORY.replace("def train_step(", "def step(").replace("self.train_step(x, y)", "self.step(x, y)")
    assert _lines(source, "TRN101") == [16]
