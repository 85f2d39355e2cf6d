"""Recall mechanisms of issue 27, third pass (helper "ddev"): seeding and training-structure rules.
Each mechanism is built for the kind of fact a rule lacked on the bench/bugs dev half, not for a
case: a small real program of that shape that the rule missed before, its quiet twins, and the
library or numeric claim behind it checked against torch."""

from __future__ import annotations

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("strict",))


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


# -- TRN405: a log-sum-exp written out; overflow above ~88 and underflow below ~-104 (float32)

def test_written_out_logsumexp_overflows_and_underflows_in_torch():
    big = torch.tensor([[100.0, 0.0]], requires_grad=True)
    assert torch.isinf(big.exp().sum(1).log()).all()
    assert torch.isfinite(torch.logsumexp(big, 1)).all()
    small = torch.tensor([[-200.0, -210.0]], requires_grad=True)
    out = small.exp().sum(1).log()
    assert torch.isneginf(out).all()
    out.sum().backward()
    assert not torch.isfinite(small.grad).all()  # 0 * inf in the backward of log at 0
    assert torch.isfinite(torch.logsumexp(small, 1)).all()


MIXTURE = '''import torch
from torch import nn


class Mixture(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.head = nn.Linear(16, n)

    def forward(self, x, component_log_probs):
        joint = component_log_probs + self.head(x)
        return torch.log(torch.sum(torch.exp(joint), dim=1))

    def mixing_log_prob(self, x):
        mixing = self.head(x)
        return mixing - mixing.exp().sum(dim=1, keepdim=True).log()
'''


def test_written_out_logsumexp_is_reported():
    assert _lines(MIXTURE, "TRN405") == [12, 16]


@pytest.mark.parametrize("old,new", [
    ("torch.exp(joint)", "torch.exp(joint - joint.max(1, keepdim=True).values)"),  # shifted
    ("torch.exp(joint)", "torch.exp(torch.tanh(joint))"),  # bounded on both sides
    ("torch.log(torch.sum(torch.exp(joint), dim=1))", "torch.logsumexp(joint, dim=1)"),
    ("torch.log(torch.sum(torch.exp(joint), dim=1))", "torch.sum(torch.exp(joint), dim=1)"),  # no log
])
def test_written_out_logsumexp_quiet(old, new):
    source = MIXTURE.replace(old, new)
    assert 12 not in _lines(source, "TRN405")


def test_numpy_logsumexp_is_not_torch():
    source = "import numpy as np\n\n\ndef lse(x):\n    return np.log(np.sum(np.exp(x)))\n"
    assert _lines(source, "TRN405") == []


# -- TRN704: a model class whose base is a library class that derives from nn.Module

DIFFUSION_BLOCK = '''import torch
import torch.nn.functional as F
from torch import nn
from labml_helpers.module import Module


class ResidualBlock(Module):
    def __init__(self, channels, dropout_rate=0.1):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.dropout_rate = dropout_rate

    def forward(self, x):
        return x + self.conv(F.dropout(x, self.dropout_rate))
'''


def test_functional_dropout_in_a_library_module_subclass():
    assert _lines(DIFFUSION_BLOCK, "TRN704") == [14]


@pytest.mark.parametrize("old,new", [
    ("F.dropout(x, self.dropout_rate)", "F.dropout(x, self.dropout_rate, training=self.training)"),
    ("from labml_helpers.module import Module", "from somewhere_unknown import Module"),  # not known to be a Module
])
def test_functional_dropout_library_module_quiet(old, new):
    assert _lines(DIFFUSION_BLOCK.replace(old, new), "TRN704") == []


# -- TRN201: what DataLoader workers do to NumPy's global RNG depends on the torch version. Since
#    torch 1.9 every worker seeds `random`, torch and NumPy's global RNG from its own seed, so a
#    dataset drawing from `np.random` is not a bug on the installed torch (checked here with real
#    workers); before 1.9 NumPy was not reseeded and every worker drew the same numbers. The rule
#    reports it only where the file's own project pins a torch before 1.9.

class _GlobalDraws(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        import random

        import numpy as np
        return torch.tensor([float(np.random.rand()), random.random(), float(torch.rand(()))])


def test_workers_reseed_numpy_random_and_torch_on_the_installed_torch():
    loader = torch.utils.data.DataLoader(_GlobalDraws(), batch_size=1, num_workers=2,
                                         multiprocessing_context="fork")
    first, second = list(loader)[:2]  # item 0 from worker 0, item 1 from worker 1 (in order)
    assert (first != second).all()  # NumPy, random and torch: each worker has its own stream


NUMPY_DATASET = '''import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Crops(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        return np.random.randint(0, 10)


def train():
    loader = DataLoader(Crops(), batch_size=8, num_workers=4)
    for batch in loader:
        pass
'''


@pytest.mark.parametrize("pin, expected", [("torch==1.8.1\n", [15]), ("torch>=1.9\n", []), (None, [])])
def test_numpy_global_draws_in_workers_follow_the_projects_torch(tmp_path, pin, expected):
    if pin is not None:
        (tmp_path / "requirements.txt").write_text(pin)
    script = tmp_path / "train.py"
    script.write_text(NUMPY_DATASET)
    found = lint_source(NUMPY_DATASET, str(script), CONFIG).findings
    assert [f.range.start.line + 1 for f in found if f.code == "TRN201"] == expected


# -- TRN404: a gradient hook that clamps runs inside the scaled backward, on scaled gradients

def test_a_tensor_hook_sees_gradients_multiplied_by_the_loss_scale():
    weight = torch.ones(3, requires_grad=True)
    seen = []
    weight.register_hook(lambda grad: seen.append(grad.clone()))
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale((weight * torch.tensor([1.0, 2.0, 3.0])).sum()).backward()
    assert torch.equal(seen[0], torch.tensor([1024.0, 2048.0, 3072.0]))


HOOKED = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")


def clip_gradients(max_value):
    for p in model.parameters():
        p.register_hook(lambda grad: grad.clamp(-max_value, max_value))


def train(loader):
    clip_gradients(1.0)
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = ((model(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
'''


def test_clamping_gradient_hook_with_a_scaled_backward():
    [found] = [f for f in lint_source(HOOKED, "t.py", CONFIG).findings if f.code == "TRN404"]
    assert found.range.start.line + 1 == 20
    assert [r.range.start.line + 1 for r in found.related] == [11]  # the hook, in another function


def test_clamping_gradient_hook_defined_as_a_function():
    source = HOOKED.replace("        p.register_hook(lambda grad: grad.clamp(-max_value, max_value))",
                            "        p.register_hook(clamp_grad)").replace(
        "def clip_gradients", "def clamp_grad(g):\n    return torch.clamp(g, -1.0, 1.0)\n\n\ndef clip_gradients")
    assert len(_lines(source, "TRN404")) == 1


@pytest.mark.parametrize("old,new", [
    ("scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()",
     "loss.backward()\n        optimizer.step()"),  # no loss scale: the hook sees the real gradients
    ("grad.clamp(-max_value, max_value)", "grad * 0.5"),  # the hook does not clamp
    ("lambda grad: grad.clamp(-max_value, max_value)", "lambda grad: other.clamp(0, 1)"),  # not its gradient
])
def test_clamping_gradient_hook_quiet(old, new):
    assert _lines(HOOKED.replace(old, new), "TRN404") == []
