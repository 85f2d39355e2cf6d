"""A parameter knows what the callers in the project's other files pass (issue 27, summaries across
files): `train_one_epoch(model, loader, criterion)` in engine.py, called from main.py with a model ending
in softmax and `nn.CrossEntropyLoss()`, applies softmax twice; a class built in main.py with `nn.BCELoss()`
keeps it as `self.criterion`; a helper's `sigma` is a softplus output its caller passes. Each buggy project
is quiet once one caller passes something else (every call must pass the fact), and each claim is run on
torch: the programs run, and the double softmax really keeps the loss away from 0."""

from __future__ import annotations

import runpy
import sys

import pytest
import torch
from project_helpers import places_found_by_check, write_project
from torch import nn

ENGINE = '''\
import torch


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    total = 0.0
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)
'''

MAIN = '''\
import torch
import torch.nn as nn
from engine import train_one_epoch

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 3), nn.Softmax(dim=1))
opt = torch.optim.SGD(model.parameters(), lr=1.0)
x = torch.randn(64, 10)
loader = [(x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long())]
for epoch in range(300):
    last = train_one_epoch(model, loader, nn.CrossEntropyLoss(), opt)
'''

# the same engine reached through a package and a module import (`import engine as e; e.train_one_epoch`)
MAIN_THROUGH_MODULE = MAIN.replace("from engine import train_one_epoch", "import engine as e").replace(
    "last = train_one_epoch(", "last = e.train_one_epoch(")

# a second script passes the logits model: not every call gives softmax outputs
EVALUATE_LOGITS = '''\
import torch
import torch.nn as nn
from engine import train_one_epoch

model = nn.Linear(10, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_one_epoch(model, [(torch.randn(4, 10), torch.randint(0, 3, (4,)))], nn.CrossEntropyLoss(), opt)
'''

TRAINER = '''\
import torch


class Trainer:
    def __init__(self, model, criterion, lr=0.1):
        self.model = model
        self.criterion = criterion
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def step(self, x, y):
        out = torch.sigmoid(self.model(x))
        loss = self.criterion(out, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()
'''

MAIN_TRAINER = '''\
import torch
import torch.nn as nn
from trainer import Trainer

trainer = Trainer(nn.Linear(10, 1), nn.BCELoss())
x, y = torch.randn(8, 10), torch.rand(8, 1).round()
for _ in range(3):
    trainer.step(x, y)
'''

LOSSES = '''\
import torch


def gaussian_nll(mu, sigma, y):
    return (torch.log(sigma) + (y - mu) ** 2 / (2 * sigma ** 2)).mean()
'''

MAIN_NLL = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from losses import gaussian_nll

head = nn.Linear(10, 2)
x, y = torch.randn(8, 10), torch.randn(8)
out = head(x)
loss = gaussian_nll(out[:, 0], F.softplus(out[:, 1]), y)
loss.backward()
'''


def _run(root, script: str) -> dict:
    sys.path.insert(0, str(root))
    try:
        return runpy.run_path(str(root / script), run_name="__main__")
    finally:
        sys.path.remove(str(root))
        for name in ("engine", "trainer", "losses"):
            sys.modules.pop(name, None)


def test_a_model_and_a_loss_passed_from_another_file_make_a_double_softmax(tmp_path):
    write_project(tmp_path, {"engine.py": ENGINE, "main.py": MAIN})
    assert places_found_by_check(tmp_path, "TRN302") == [("TRN302", "engine.py", 9)]
    # the claim, on torch: trained 300 steps on separable data, the softmax model's loss stays far from 0,
    # while the same training of the logits reaches a small loss
    assert _run(tmp_path, "main.py")["last"] > 0.55
    torch.manual_seed(0)
    logits = nn.Linear(10, 3)
    opt = torch.optim.SGD(logits.parameters(), lr=1.0)
    x = torch.randn(64, 10)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    for _ in range(300):
        loss = nn.functional.cross_entropy(logits(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.3


@pytest.mark.parametrize("main", [MAIN_THROUGH_MODULE, MAIN.replace("import train_one_epoch", "import *")],
                         ids=["module", "star"])
def test_a_module_or_star_import_reaches_the_same_function(tmp_path, main):
    write_project(tmp_path, {"engine.py": ENGINE, "main.py": main})
    assert places_found_by_check(tmp_path, "TRN302") == [("TRN302", "engine.py", 9)]


@pytest.mark.parametrize("other", ["logits", "star"])
def test_every_call_must_pass_it(tmp_path, other):
    second = EVALUATE_LOGITS if other == "logits" else \
        "import torch.nn as nn\nfrom engine import train_one_epoch\n\nargs = []\ntrain_one_epoch(*args)\n"
    write_project(tmp_path, {"engine.py": ENGINE, "main.py": MAIN, "evaluate.py": second})
    assert places_found_by_check(tmp_path, "TRN302") == []


def test_a_loss_object_given_to_a_class_in_another_file_is_its_criterion(tmp_path):
    write_project(tmp_path, {"trainer.py": TRAINER, "main.py": MAIN_TRAINER})
    assert places_found_by_check(tmp_path, "TRN407") == [("TRN407", "trainer.py", 12)]
    # no fix may point at the constructor: it is in the other file
    fixed = write_project(tmp_path / "fixed", {"trainer.py": TRAINER, "main.py": MAIN_TRAINER})
    places_found_by_check(fixed, "TRN407", "--fix", "--unsafe-fixes")
    assert (fixed / "trainer.py").read_text() == TRAINER and (fixed / "main.py").read_text() == MAIN_TRAINER
    _run(tmp_path, "main.py")


def test_a_softplus_output_passed_to_a_helper_of_another_file_can_be_exactly_zero(tmp_path):
    write_project(tmp_path, {"losses.py": LOSSES, "main.py": MAIN_NLL})
    assert places_found_by_check(tmp_path, "TRN401") == [("TRN401", "losses.py", 5)]
    # the claim, on torch: softplus underflows to exactly 0 in float32, and the log's gradient there is inf
    sigma = nn.functional.softplus(torch.tensor([-120.0], requires_grad=True))
    assert sigma.item() == 0.0
    h = torch.tensor([-120.0], requires_grad=True)
    torch.log(nn.functional.softplus(h)).sum().backward()
    assert not torch.isfinite(h.grad).all()
    _run(tmp_path, "main.py")


def test_a_caller_passing_a_positive_value_says_nothing(tmp_path):
    write_project(tmp_path, {"losses.py": LOSSES,
                             "main.py": MAIN_NLL.replace("F.softplus(out[:, 1])", "F.softplus(out[:, 1]) + 1e-6")})
    assert places_found_by_check(tmp_path, "TRN401") == []


NORMALIZE = '''\
import torch


def normalize(feats):
    return feats / feats.norm(dim=1, keepdim=True)
'''


@pytest.mark.parametrize("passed, found", [("encoder(x)", []), ("x", [("TRN406", "utils.py", 5)])],
                         ids=["learned", "data"])
def test_a_norm_of_what_another_file_passes(tmp_path, passed, found):
    """A learned layer's output, passed from main.py, is no data with all-zero rows: its norm is not 0 in
    practice. Data passed as it is stays reported (an all-zero row's norm is exactly 0, and 0/0 is NaN)."""
    main = ("import torch\nimport torch.nn as nn\nfrom utils import normalize\n\n"
            "encoder = nn.Linear(10, 4)\nx = torch.randn(8, 10)\n"
            f"z = normalize({passed})\n")
    write_project(tmp_path, {"utils.py": NORMALIZE, "main.py": main})
    assert places_found_by_check(tmp_path, "TRN406", "--select", "strict") == found
    rows = torch.zeros(2, 3, requires_grad=True)
    (rows / rows.norm(dim=1, keepdim=True)).sum().backward()
    assert torch.isnan(rows.grad).all()


BUILD_CRITERION = '''\
import torch.nn as nn


def build_criterion():
    return nn.BCELoss()
'''

TRAIN_WITH_BUILT_CRITERION = '''\
import torch
import torch.nn as nn
from losses import build_criterion

model = nn.Linear(10, 1)
criterion = build_criterion()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 10), torch.rand(8, 1).round()
for _ in range(3):
    loss = criterion(torch.sigmoid(model(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def test_a_loss_object_returned_by_another_files_factory_keeps_its_class(tmp_path):
    """The same fact the other way: what a factory returns (FunctionSummary.returns_ctor)."""
    write_project(tmp_path, {"losses.py": BUILD_CRITERION, "train.py": TRAIN_WITH_BUILT_CRITERION})
    assert places_found_by_check(tmp_path, "TRN407") == [("TRN407", "train.py", 10)]
    places_found_by_check(tmp_path, "TRN407", "--fix", "--unsafe-fixes")  # the constructor is not here to fix
    assert (tmp_path / "train.py").read_text() == TRAIN_WITH_BUILT_CRITERION
    _run(tmp_path, "train.py")
