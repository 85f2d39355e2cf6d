"""Framework vocabulary (rules/vocab/): library seeding helpers, accelerate's backward,
and the steps a framework's own loop calls once per batch (Lightning training_step,
HF Trainer.compute_loss, ignite Engine process functions)."""

from __future__ import annotations

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()


def _codes(source: str, code: str) -> list:
    return [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


_SEEDED_BY = '''
import numpy as np
import torch
{imp}

torch.manual_seed(0)
{call}(0)
noise = np.random.rand(3)
'''


@pytest.mark.parametrize("imp, call", [
    ("import lightning", "lightning.seed_everything"),
    ("import pytorch_lightning as pl", "pl.seed_everything"),
    ("from transformers import set_seed", "set_seed"),
    ("from accelerate.utils import set_seed", "set_seed"),
    ("from ignite.utils import manual_seed", "manual_seed"),
    ("from detectron2.utils.env import seed_all_rng", "seed_all_rng"),
    ("from mmengine.runner import set_random_seed", "set_random_seed"),
    ("from timm.utils import random_seed", "random_seed"),
])
def test_library_seeding_helpers_seed_everything(imp, call):
    source = _SEEDED_BY.format(imp=imp, call=call)
    assert not _codes(source, "TRN202"), call
    unseeded = source.replace(f"\n{call}(0)\n", "\n")
    assert _codes(unseeded, "TRN202")  # without the helper, numpy is unseeded


_LIGHTNING = '''
import torch
import torch.nn.functional as F
import lightning as L


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 2)
        self.epoch_loss = 0.0

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.epoch_loss += loss
        return loss
'''

_HF_TRAINER = '''
import torch
import torch.nn.functional as F
from transformers import Trainer


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = F.cross_entropy(outputs.logits, labels)
        self.running_loss += loss
        return (loss, outputs) if return_outputs else loss
'''

_IGNITE = '''
import torch
import torch.nn.functional as F
from ignite.engine import Engine

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0


def train_step(engine, batch):
    global total
    x, y = batch
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss
    return loss.item()


trainer = Engine(train_step)
'''


@pytest.mark.parametrize("source, name", [(_LIGHTNING, "epoch_loss"), (_HF_TRAINER, "running_loss"),
                                          (_IGNITE, "total")], ids=["lightning", "hf-trainer", "ignite"])
def test_a_step_function_body_is_a_loop_body(source, name):
    [found] = _codes(source, "TRN101")
    assert f"`{name}`" in found.message or f"`self.{name}`" in found.message
    detached = source.replace("+= loss\n", "+= loss.detach()\n")
    assert detached != source and not _codes(detached, "TRN101")


def test_a_local_total_in_a_step_function_dies_with_the_call():
    source = _LIGHTNING.replace("self.epoch_loss += loss", "epoch_loss = 0.0\n        epoch_loss += loss")
    assert not _codes(source, "TRN101")


def test_a_reset_after_the_sum_on_every_path_keeps_the_step_quiet():
    source = _LIGHTNING.replace("        self.epoch_loss += loss\n",
                                "        self.epoch_loss += loss\n        self.log('loss', self.epoch_loss)\n"
                                "        self.epoch_loss = 0.0\n")
    assert not _codes(source, "TRN101")
    conditional = source.replace("        self.epoch_loss = 0.0\n",
                                 "        if batch_idx % 10 == 0:\n            self.epoch_loss = 0.0\n")
    assert _codes(conditional, "TRN101")


def test_a_plain_method_of_another_class_is_not_a_step():
    source = _LIGHTNING.replace("L.LightningModule", "torch.nn.Module")
    assert not _codes(source, "TRN101")


def test_accelerate_backward_is_a_backward():
    source = '''
import torch
import torch.nn.functional as F
from accelerate import Accelerator

accelerator = Accelerator()


def train(model, loader, optimizer):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    total = 0.0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total += loss
'''
    [found] = _codes(source, "TRN101")
    assert any("backward() is called here" in r.message for r in found.related)
