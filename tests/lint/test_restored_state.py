"""Three shapes where the state a rule warns about is already right, decided from what the code
does (issue 27, the false findings of the third test measurement, fixed after their repositories
moved to dev):

- TRN703: a helper puts a submodule in eval mode, and the loop calls `train()` on the nn.Module that
  holds it; nn.Module.train() sets the mode of every registered submodule.
- TRN503: `torch.zeros_like(src).cuda()` builds the tensor on `src`'s device, so there is a host copy
  only where `src` is known to be on the CPU.
- TRN706: a loop that rebuilds an optimizer together with a scheduler whose schedule the loop changes
  runs one independent run per pass.

Each claim is checked against torch, and each has a look-alike that is a real bug and stays found."""

from __future__ import annotations

import textwrap

import torch
import torch.nn as nn

from traindoctor.config import Config
from traindoctor.lint import lint_source


def _hits(source: str, code: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", Config(select=(code,)))
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings if f.code == code]


# -- TRN703: a parent's train() restores the child's mode ---------------------------------------

PARENT_TRAINS = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


class SentenceRE(nn.Module):
    def __init__(self, encoder, train_loader, val_loader, epochs=3):
        super().__init__()
        self.model = nn.DataParallel(encoder)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
{train_override}
    def train_model(self):
{before}        for epoch in range(self.epochs):
{top}            for x, y in self.train_loader:
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            self.accuracy = self.eval_model(self.val_loader)

    def eval_model(self, loader):
        self.model.eval()
        with torch.no_grad():
            hits = [(self.model(x).argmax(-1) == y).float().mean().item() for x, y in loader]
        return sum(hits) / len(hits)
"""


def _trn703_program(top: str = "            self.train()\n", before: str = "", train_override: str = "") -> str:
    return PARENT_TRAINS.format(top=top, before=before, train_override=train_override)


def test_trn703_the_parent_train_restores_the_child_mode_in_torch():
    namespace: dict = {}
    exec(_trn703_program(), namespace)  # noqa: S102 - the test's own program
    batches = [(torch.randn(4, 8), torch.randint(0, 3, (4,))) for _ in range(2)]
    runner = namespace["SentenceRE"](namespace["Encoder"](), batches, batches)
    dropout = runner.model.module.net[1]
    seen: list[bool] = []
    dropout.register_forward_hook(lambda module, args, out: seen.append(module.training) if torch.is_grad_enabled()
                                  else None)
    runner.train_model()
    assert len(seen) == 6 and all(seen)  # every training step of every epoch ran in train mode
    assert not dropout.training  # the last evaluation left it in eval mode, and no step came after


def test_trn703_is_quiet_when_the_loop_trains_the_module_that_holds_the_model():
    assert _hits(_trn703_program(), "TRN703") == []


def test_trn703_still_fires_when_the_parent_trains_only_once_before_the_loop():
    source = _trn703_program(top="", before="        self.train()\n")
    assert len(_hits(source, "TRN703")) == 1


def test_trn703_still_fires_when_the_parent_train_is_its_own_and_sets_nothing():
    override = "\n    def train(self, mode=True):\n        self.epochs_run = 0\n        return self\n"
    assert len(_hits(_trn703_program(train_override=override), "TRN703")) == 1


# -- TRN503: zeros_like(src) is built on src's device -------------------------------------------

MULTI_LABEL = """
import torch
import torch.nn as nn


class MultiLabelRE(nn.Module):
    def __init__(self, model, loader, num_class):
        super().__init__()
        self.model = model
        self.loader = loader
        self.class_weight = torch.ones(num_class)
        self.criterion = nn.BCEWithLogitsLoss()
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
        if torch.cuda.is_available():
            self.cuda()

    def train_model(self):
        self.train()
        for data in self.loader:
            data = [d.cuda() for d in data]
            label, args = data[0], data[1:]
            logits = self.model(*args)
{make_target}
            label_vec[torch.arange(label.size(0)), label] = 1
            loss = self.criterion(logits, label_vec)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def test_trn503_a_like_tensor_is_built_on_its_source_device_in_torch():
    source = torch.empty(4, 3, device="meta")  # any device but the CPU shows it; no GPU needed
    assert torch.zeros_like(source).device == source.device
    assert torch.ones_like(source, dtype=torch.float16).device == source.device


def test_trn503_is_quiet_on_a_like_tensor_of_a_model_output():
    source = MULTI_LABEL.format(make_target="            label_vec = torch.zeros_like(logits).cuda()")
    assert _hits(source, "TRN503") == []


def test_trn503_still_fires_on_a_like_tensor_of_a_cpu_tensor():
    source = MULTI_LABEL.format(make_target=(
        "            weights = torch.ones(logits.size(1))\n"
        "            label_vec = torch.zeros_like(weights).cuda()"))
    assert _hits(source, "TRN503") == [24]
    moved = MULTI_LABEL.format(make_target=(
        "            host = logits.detach().cpu()\n"
        "            label_vec = torch.zeros_like(host).cuda()"))
    assert _hits(moved, "TRN503") == [24]


def test_trn503_still_fires_on_a_cpu_constant():
    source = MULTI_LABEL.format(make_target="            label_vec = torch.zeros(logits.shape).cuda()")
    assert _hits(source, "TRN503") == [23]


# -- TRN706: one run per pass, with the schedule the pass sets -----------------------------------

SCHEDULE_DEMO = """
import torch
from torch.optim.lr_scheduler import LambdaLR


def rate(step, model_size, factor, warmup):
    if step == 0:
        step = 1
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


def learning_schedules(configs, steps):
    model = torch.nn.Linear(1, 1)
    curves = []
    for {target} in {iterable}:
        optimizer = torch.optim.Adam(model.parameters(), lr=1, betas=(0.9, 0.98), eps=1e-9)
        scheduler = LambdaLR(optimizer=optimizer, lr_lambda=lambda step: rate(step, {schedule}))
        lrs = []
        for step in range(steps):
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        curves.append(lrs)
    return curves
"""


def test_trn706_each_pass_is_a_run_with_its_own_schedule_in_torch():
    namespace: dict = {}
    exec(SCHEDULE_DEMO.format(target="config", iterable="configs", schedule="*config"), namespace)  # noqa: S102
    configs = [(512, 1, 4000), (512, 1, 8000), (256, 1, 4000)]
    curves = namespace["learning_schedules"](configs, 5)
    for config, curve in zip(configs, curves):
        assert curve == [namespace["rate"](step, *config) for step in range(5)]


def test_trn706_is_quiet_on_a_loop_whose_pass_sets_the_schedule():
    source = SCHEDULE_DEMO.format(target="config", iterable="configs", schedule="*config")
    assert _hits(source, "TRN706") == []


def test_trn706_still_fires_when_every_pass_builds_the_same_schedule():
    source = SCHEDULE_DEMO.format(target="config", iterable="configs", schedule="512, 1, 4000")
    assert _hits(source, "TRN706") == [16, 17]


def test_trn706_still_fires_on_an_epoch_loop_that_rebuilds_both():
    source = SCHEDULE_DEMO.format(target="epoch", iterable="range(10)", schedule="512, 1, epoch + 1")
    assert 16 in _hits(source, "TRN706")


def test_trn703_names_the_enclosing_loop_where_the_parent_trains_only_there():
    source = """
import torch
import torch.nn as nn


class Runner(nn.Module):
    def __init__(self, encoder, loader):
        super().__init__()
        self.model = encoder
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train()
            for step, (x, y) in enumerate(self.loader):
                nn.functional.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                if step % 100 == 0:
                    self.model.eval()
"""
    result = lint_source(textwrap.dedent(source), "example.py", Config(select=("TRN703",)))
    [found] = [f for f in result.findings if f.code == "TRN703"]
    assert found.range.start.line + 1 == 21 and "`self.train()` only in an enclosing loop" in found.message
