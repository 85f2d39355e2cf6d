"""What a `.step()` / `.update()` steps is read from what its receiver is (analysis/training.py,
`Training.receiver_kind`), not from its name: a local, a module-level name or a `self.` attribute
bound to a torch optimizer, LR scheduler or GradScaler constructor says which; the vocabulary's
name patterns (`training_*_pattern`) decide only where the file does not say (a parameter, an
object of an unknown library). Until 2026-12 the name alone decided: d2l's `trainer =
torch.optim.SGD(...)` and `self.G_solver = torch.optim.Adam(...)` were not optimizers, and an LR
scheduler named `optim_warmup` was one."""

from __future__ import annotations

import torch
from casefiles import findings_of

from traindoctor.config import Config
from traindoctor.lint import lint_source

D2L_HEAD = """\
import torch
from torch import nn

net = nn.Sequential(nn.Linear(4, 2))
loss = nn.MSELoss()
"""


def _messages(source: str, code: str) -> list[str]:
    return [f.message for f in lint_source(source, "train.py", Config(select=("all",))).findings if f.code == code]


def test_a_module_level_optimizer_named_trainer_is_an_optimizer():
    # d2l: `trainer` does not match the optimizer pattern; its constructor says what it is
    source = D2L_HEAD + """\
trainer = torch.optim.SGD(net.parameters(), lr=0.1)

for X, y in data_iter:
    l = loss(net(X), y)
    l.backward()
    trainer.zero_grad()
    trainer.step()
"""
    assert findings_of(source, ("TRN702",)) == [(11, "TRN702")]


def test_a_local_optimizer_built_in_the_loop_is_an_optimizer():
    source = D2L_HEAD + """\

def fit(data_iter):
    for epoch in range(10):
        trainer = torch.optim.SGD(net.parameters(), lr=0.1)
        for X, y in data_iter:
            trainer.zero_grad()
            l = loss(net(X), y)
            l.backward()
            trainer.step()
"""
    assert findings_of(source, ("TRN706",)) == [(9, "TRN706")]


def test_an_optimizer_attribute_is_an_optimizer_whatever_its_name():
    source = """\
import torch
from torch import nn


class GAN:
    def __init__(self):
        self.G = nn.Linear(8, 8)
        self.D = nn.Linear(8, 1)
        self.G_solver = torch.optim.Adam(self.G.parameters(), lr=2e-4)

    def fit(self, loader):
        for z in loader:
            g_loss = -self.D(self.G(z)).mean()
            g_loss.backward()
            self.G_solver.step()
"""
    assert findings_of(source, ("TRN701",)) == [(14, "TRN701")]
    assert "`self.G_solver` steps every iteration" in _messages(source, "TRN701")[0]


def test_a_helpers_step_on_a_parameter_is_what_the_caller_passes():
    # the helper's `updater` is a parameter (not known there); the caller hands it an optimizer
    source = D2L_HEAD + """\


def train_epoch(net, train_iter, loss, updater):
    for X, y in train_iter:
        l = loss(net(X), y)
        l.backward()
        updater.step()


trainer = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(10):
    train_epoch(net, train_iter, loss, trainer)
"""
    assert findings_of(source, ("TRN701",)) == [(17, "TRN701")]  # the call in the epoch loop


def test_a_scaler_named_otherwise_steps_and_updates_through_the_scaler():
    # `gs` is a GradScaler: `gs.step(optimizer)` steps the optimizer and `gs.update()` updates the
    # scale, so the extra `optimizer.step()` is a second step (not a step that bypasses the scaler)
    source = """\
import torch

gs = torch.cuda.amp.GradScaler()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda"):
        loss = criterion(model(x), y)
    gs.scale(loss).backward()
    gs.step(optimizer)
    gs.update()
    optimizer.step()
"""
    messages = _messages(source, "TRN404")
    assert len(messages) == 1 and "`optimizer` is stepped twice each iteration" in messages[0]


def test_a_scheduler_named_like_an_optimizer_is_not_an_optimizer():
    # `optim_warmup` matches the optimizer pattern; LinearLR is an LR scheduler, so the clip still
    # sits between backward() and the optimizer's step
    source = """\
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
optim_warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=100)

for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optim_warmup.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""
    assert findings_of(source, ("TRN702",)) == []
    # a clip after the optimizer's step is still out of place
    clip = "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    late = source.replace(clip, "").replace("    optimizer.step()\n", "    optimizer.step()\n" + clip)
    assert findings_of(late, ("TRN702",)) == [(12, "TRN702")]


def test_a_gradient_accumulation_window_stepped_by_trainer_resets_its_sum():
    # TRN101: a running loss reset under the `if` that steps the optimizer lives for one window
    source = """\
import torch
from torch import nn

model = nn.Linear(4, 1)
criterion = nn.MSELoss()
trainer = torch.optim.SGD(model.parameters(), lr=0.1)

window_loss = 0
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / 4
    loss.backward()
    window_loss += loss
    if (i + 1) % 4 == 0:
        trainer.step()
        trainer.zero_grad()
        print(window_loss.item())
        window_loss = 0
"""
    assert findings_of(source, ("TRN101",)) == []
    # a window closed by something that is not an optimizer: the sum grows across windows
    logged = source.replace("trainer.step()", "logger.step()").replace("trainer.zero_grad()", "pass")
    assert findings_of(logged, ("TRN101",)) == [(12, "TRN101")]


def test_a_parameter_is_read_by_its_name():
    # nothing in the file says what `opt` is: the name pattern still decides
    source = """\
import torch


def train(model, loader, opt, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        opt.zero_grad()
        opt.step()
"""
    assert findings_of(source, ("TRN702",)) == [(8, "TRN702")]
    # nor what `trainer` is, and the name is not an optimizer's: not read as one
    assert findings_of(source.replace("opt", "trainer"), ("TRN702",)) == []


AVERAGED = """\\
import torch
from torch.optim.swa_utils import AveragedModel


def train(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        swa = AveragedModel(model)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            swa.update_parameters(model)
"""


def test_an_averaged_model_is_a_model_not_an_optimizer() -> None:
    from traindoctor.lint.analysis.training import training_of
    from traindoctor.lint.engine import LintCache

    cache = LintCache()
    result = lint_source(AVERAGED, "swa.py", Config(select=("strict",)), cache=cache)
    assert result.error is None and [f.code for f in result.findings] == []
    assert cache.model.kind_of_callee("torch.optim.swa_utils.AveragedModel") == "model"
    built = {e.kind for r in training_of(cache.model).all for e in r.events if e.kind.startswith("build_")}
    assert built == {"build_optimizer", "build_model"}  # SGD, and the AveragedModel
    assert not isinstance(torch.optim.swa_utils.AveragedModel(torch.nn.Linear(2, 1)), torch.optim.Optimizer)
