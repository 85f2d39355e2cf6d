"""Mechanisms added for recall on programs re-created from public bug reports
(bench/recreated, dev half): each test is a small program that the rule missed before, and a
look-alike that must stay quiet."""

from __future__ import annotations

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


# -- TRN701: a loop zeroes the generator's gradients only; the discriminator's optimizer steps unzeroed

GAN_LOOP = '''import torch
import torch.nn as nn

generator = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
discriminator = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(params=discriminator.parameters(), lr=2e-4)
loss_fn = nn.BCEWithLogitsLoss()

for real in loader:
    opt_g.zero_grad()
    fake = generator(torch.randn(real.size(0), 16))
    loss_g = loss_fn(discriminator(fake), torch.ones(real.size(0), 1))
    loss_g.backward()
    opt_g.step()
{zero_d}
    loss_d = loss_fn(discriminator(real), torch.ones(real.size(0), 1)) + \\
        loss_fn(discriminator(fake.detach()), torch.zeros(real.size(0), 1))
    loss_d.backward()
    opt_d.step()
'''


def test_discriminator_optimizer_never_zeroed():
    assert _lines(GAN_LOOP.format(zero_d=""), "TRN701") == [20]


def test_discriminator_zeroed_too_is_quiet():
    for zero in ("    opt_d.zero_grad()", "    discriminator.zero_grad()"):
        assert _lines(GAN_LOOP.format(zero_d=zero), "TRN701") == []


def test_zeroing_of_a_model_holding_both_is_quiet():
    source = GAN_LOOP.format(zero_d="").replace(
        "opt_g = torch.optim", "gan = nn.ModuleList([generator, discriminator])\nopt_g = torch.optim").replace(
        "    opt_g.zero_grad()", "    gan.zero_grad()")
    assert _lines(source, "TRN701") == []


def test_optimizer_over_both_models_is_quiet():
    source = GAN_LOOP.format(zero_d="").replace(
        "params=discriminator.parameters()", "params=list(discriminator.parameters()) + list(generator.parameters())")
    assert _lines(source, "TRN701") == []


# -- TRN602: a model built by a model zoo's factory function, saved whole and loaded

ZOO_SAVE = '''import torch
import pretrainedmodels

m = {built}
torch.save({saved}, "here.pt")
restored = torch.load("here.pt")
'''


def test_model_zoo_model_saved_whole_then_loaded():
    source = ZOO_SAVE.format(built='pretrainedmodels.resnet18(num_classes=1000, pretrained="imagenet")', saved="m")
    assert _lines(source, "TRN602") == [6]


def test_model_zoo_state_dict_and_zoo_transform_are_quiet():
    built = 'pretrainedmodels.resnet18(num_classes=1000, pretrained="imagenet")'
    assert _lines(ZOO_SAVE.format(built=built, saved="m.state_dict()"), "TRN602") == []
    transform = "pretrainedmodels.utils.TransformImage(None)"  # not a model: nothing says what it pickles
    assert _lines(ZOO_SAVE.format(built=transform, saved="m"), "TRN602") == []


# -- TRN101: a meter of this file, held by a local name, that sums the tensors it is given

LOCAL_METER = '''import torch
import torch.nn.functional as F


class Average:
    def __init__(self):
        self.total = torch.tensor(0.)
        self.count = 0

    def update(self, value):
        self.total += {stored}
        self.count += 1


def train(model, optimizer, loader):
    running = Average()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        running.update(loss)
        loss.backward()
        optimizer.step()
    return running.total / running.count
'''


def test_local_meter_that_sums_the_loss():
    assert _lines(LOCAL_METER.format(stored="value.cpu()"), "TRN101") == [20]


def test_local_meter_that_detaches_is_quiet():
    assert _lines(LOCAL_METER.format(stored="value.detach().cpu()"), "TRN101") == []
    assert _lines(LOCAL_METER.format(stored="value.item()"), "TRN101") == []
    unknown = LOCAL_METER.format(stored="value.cpu()").replace("running = Average()", "running = meters.Average()")
    assert _lines("import meters\n" + unknown, "TRN101") == []


# -- TRN302: skorch runs `criterion(module(x), y)` itself; the module class returns softmax outputs

SKORCH = '''import torch
from torch import nn
from skorch import NeuralNetClassifier


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 10)
        self.out = nn.Linear(10, 2)

    def forward(self, X):
        return {returned}


net = NeuralNetClassifier(Classifier, criterion={criterion}, max_epochs=10, lr=0.1)
net.fit(X, y)
'''


def test_skorch_module_returning_softmax_with_cross_entropy():
    source = SKORCH.format(returned="torch.softmax(self.out(torch.relu(self.hidden(X))), dim=-1)",
                           criterion="nn.CrossEntropyLoss")
    assert _lines(source, "TRN302") == [16]


def test_skorch_logits_or_nll_loss_are_quiet():
    logits = "self.out(torch.relu(self.hidden(X)))"
    assert _lines(SKORCH.format(returned=logits, criterion="nn.CrossEntropyLoss"), "TRN302") == []
    softmax = "torch.softmax(self.out(torch.relu(self.hidden(X))), dim=-1)"
    assert _lines(SKORCH.format(returned=softmax, criterion="nn.NLLLoss"), "TRN302") == []  # skorch takes the log


# -- TRN404: an optimizer stepped through the scaler and again directly in the same iteration

SCALER_TWICE = '''import torch

scaler = torch.cuda.amp.GradScaler()


def train(model, optimizer, loader, use_amp):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
{steps}
'''


def test_optimizer_stepped_through_the_scaler_and_directly():
    steps = "        scaler.step(optimizer)\n        scaler.update()\n        optimizer.step()"
    assert _lines(SCALER_TWICE.format(steps=steps), "TRN404") == [14]


def test_one_step_per_iteration_is_quiet():
    assert _lines(SCALER_TWICE.format(steps="        scaler.step(optimizer)\n        scaler.update()"), "TRN404") == []
    either = ("        if use_amp:\n            scaler.step(optimizer)\n            scaler.update()\n"
              "        else:\n            optimizer.step()")
    assert _lines(SCALER_TWICE.format(steps=either), "TRN404") == []


# -- TRN707: NNI's ModelSpeedup replaces the pruned model's layers in place

SPEEDUP = '''import torch
from nni.compression.pytorch.speedup import ModelSpeedup


def finetune(model, masks, loader):
    {before}
    ModelSpeedup(model, torch.rand(8, 3, 32, 32), masks).speedup_model()
    {after}
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
'''

BUILD = "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)"


def test_optimizer_built_before_model_speedup():
    assert _lines(SPEEDUP.format(before=BUILD, after=""), "TRN707") == [7]


def test_optimizer_built_after_model_speedup_is_quiet():
    assert _lines(SPEEDUP.format(before="", after=BUILD), "TRN707") == []
    assert _lines(SPEEDUP.format(before=BUILD, after=BUILD), "TRN707") == []


# -- TRN707: a param group built like the others but never added to the optimizer's list

GROUPS = '''import torch


def build_optimizer(model, lr):
    groups = []
    group = {{"lr": lr, "params": []}}
    for name, p in model.named_parameters():
        if name.startswith("encoder"):
            group["params"].append(p)
    groups.append(group)

    group = {{"lr": lr * 10}}
    group["params"] = []
    for name, p in model.named_parameters():
        if name.startswith("head"):
            group["params"].append(p)
{added}
    return torch.optim.AdamW(groups)
'''


def test_param_group_never_added():
    assert _lines(GROUPS.format(added=""), "TRN707") == [12]


def test_param_group_added_or_read_is_quiet():
    assert _lines(GROUPS.format(added="    groups.append(group)"), "TRN707") == []
    assert _lines(GROUPS.format(added="    groups.insert(0, group)"), "TRN707") == []
    assert _lines(GROUPS.format(added="    print(len(group))"), "TRN707") == []


# -- TRN701: a per-batch step method that zeroes the generator only (no loop in the file)

GAN_STEP = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.gen = nn.Sequential(nn.Linear(8, 32), nn.Tanh())
        self.disc = nn.Sequential(nn.Linear(32, 1))
        self.opt_gen = torch.optim.Adam(self.gen.parameters())
        self.opt_disc = torch.optim.Adam(self.disc.parameters())

    def step(self, real):
{zero_disc}
        fake = self.gen(torch.randn(real.size(0), 8))
        loss_d = self.disc(fake.detach()).mean() - self.disc(real).mean()
        loss_d.backward()
        self.opt_disc.step()
        self.opt_gen.zero_grad()
        loss_g = -self.disc(fake).mean()
        loss_g.backward()
        self.opt_gen.step()
'''


def test_step_method_zeroes_the_generator_only():
    assert _lines(GAN_STEP.format(zero_disc=""), "TRN701") == [17]


def test_step_method_that_zeroes_both_is_quiet():
    assert _lines(GAN_STEP.format(zero_disc="        self.opt_disc.zero_grad()"), "TRN701") == []
    assert _lines(GAN_STEP.format(zero_disc="        self.zero_grad()"), "TRN701") == []  # cannot place it


def test_discriminator_attached_to_the_zeroed_model_is_quiet():
    for attach in ("generator.critic = discriminator", "generator.add_module('critic', discriminator)"):
        source = GAN_LOOP.format(zero_d="").replace("opt_g = torch.optim", attach + "\nopt_g = torch.optim")
        assert _lines(source, "TRN701") == []
