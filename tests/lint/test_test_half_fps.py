"""The false findings that the ecosystem test half showed on 2026-12-05 (issue 27), fixed in
general after their repositories moved to dev: each shape is decided by what the code does,
never by a name, and each has a true twin that must still be found.

- TRN101: a name rebound to a NumPy array after its backward (reaching definitions decide which
  binding the backward read).
- TRN101: a helper that returns a project loss object's number: `.backward()` on an attribute
  set up once in `__init__` is that object's own method, not evidence of a loss tensor.
- TRN102: `env.eval()` on an instance of a project class that derives from nothing (not an
  nn.Module): its `eval` is its own method.
"""

from __future__ import annotations

import pytest
import torch
from project_helpers import lines_found_in_project


# -- TRN101: a name rebound after its backward ------------------------------------------------

REBOUND = """
import torch
import torch.nn.functional as F


def train_epoch(model, batches, optimizer):
    model.train()
    total = 0.0
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {rebind}
        total += loss
    return total / len(batches)
"""


@pytest.mark.parametrize("rebind, found", [
    ("loss = loss.detach().cpu().numpy()", []),  # the accumulated binding is a NumPy array
    ("loss = loss.item()", []),
    ("loss = loss * 2.0", [15]),  # still the backpropagated tensor's graph
    ("loss *= x.size(0)", [15]),  # the backpropagated tensor, updated in place
    ("pass", [15]),
])
def test_trn101_reaching_definition_decides_not_the_name(rebind, found, tmp_path):
    assert lines_found_in_project(tmp_path, {"train.py": REBOUND.format(rebind=rebind)}, "TRN101") == found


def test_a_numpy_array_of_a_detached_loss_holds_no_graph():
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    loss.backward()
    value = loss.detach().cpu().numpy()
    assert not isinstance(value, torch.Tensor) and not hasattr(value, "grad_fn")


# -- TRN101: a helper returning a project loss object's number --------------------------------

LOSSES = """
class Accumulated:
    def __init__(self, criterion):
        self.criterion = criterion
        self.acc = 0
        self.count = 0

    def reset(self):
        self.acc = 0
        self.count = 0

    def add(self, outputs, target):
        self.acc = self.acc + self.criterion(outputs, target)
        self.count += 1

    def backward(self):
        self.acc.backward()

    def value(self):
        number = self.acc.data.item()
        number /= self.count
        return number
"""

TRAINER = """
import torch.nn as nn
import torch.nn.functional as F

from losses import Accumulated


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.loss = Accumulated(nn.CrossEntropyLoss())

    def _batch(self, x, y):
{body}

    def fit(self, batches):
        self.model.train()
        running = 0
        for x, y in batches:
            loss = self._batch(x, y)
            running += loss
        return running
"""

OBJECT_BODY = """\
        loss = self.loss
        loss.reset()
        for step_out, target in zip(self.model(x), y):
            loss.add(step_out, target)
        self.model.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.value()"""

TENSOR_BODY = """\
        loss = F.cross_entropy(self.model(x), y)
        self.model.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss"""


def test_trn101_a_project_loss_objects_number_is_not_a_loss_tensor(tmp_path):
    files = {"losses.py": LOSSES, "trainer.py": TRAINER.format(body=OBJECT_BODY)}
    assert lines_found_in_project(tmp_path, files, "TRN101", target="trainer.py") == []


def test_trn101_a_helper_returning_the_backpropagated_tensor_is_still_found(tmp_path):
    files = {"losses.py": LOSSES, "trainer.py": TRAINER.format(body=TENSOR_BODY)}
    assert lines_found_in_project(tmp_path, files, "TRN101", target="trainer.py") == [26]


def test_trn101_an_attribute_rebound_outside_init_may_be_a_fresh_loss(tmp_path):
    """`self.loss` rebound in a method other than `__init__`: it may hold each step's loss
    tensor, so its `.backward()` still says what it is."""
    body = OBJECT_BODY.replace("        loss = self.loss\n",
                               "        self.loss = F.cross_entropy(self.model(x), y)\n        loss = self.loss\n")
    body = body.replace("        return loss.value()", "        return loss")
    files = {"losses.py": LOSSES, "trainer.py": TRAINER.format(body=body)}
    assert lines_found_in_project(tmp_path, files, "TRN101", target="trainer.py") == [30]


def test_a_tensor_with_history_built_once_cannot_be_backpropagated_every_step():
    """Why an attribute set up once in `__init__` and backpropagated per step is no tensor."""
    weight = torch.ones(2, requires_grad=True)
    built_once = (weight * 3).sum()
    built_once.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        built_once.backward()


# -- TRN102: `eval()` of an object that is not a module ---------------------------------------

ENV = """
import torch


class Env:
    def __init__(self, seed):
        self.training = True
        self.generator = torch.Generator().manual_seed(seed)

    def eval(self):
        self.training = False

    def reset(self):
        return torch.zeros(4)

    def step(self, action):
        return torch.rand(4, generator=self.generator), 1.0, bool(action)
"""

EVALUATE = """
import torch
import torch.nn as nn

from env import Env


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, state):
        return self.net(state)


def evaluate(agent, episodes):
    {build}
    {evaluated}.eval()
    total = 0.0
    for _ in range(episodes):
        state = env.reset()
        done = False
        while not done:
            action = agent.act(state)
            state, reward, done = {stepped}
            total += reward
    return total
"""


@pytest.mark.parametrize("build, evaluated, stepped, found", [
    # an environment of a project class deriving from nothing: its eval() is its own
    ("env = Env(0)", "env", "env.step(action)", []),
    # an nn.Module subclass in eval mode, run in the loop without no_grad: still found
    ("env = Env(0); policy = Policy()", "policy", "env.step(policy(state).argmax().item())", [26]),
])
def test_trn102_only_a_module_is_evaluated(build, evaluated, stepped, found, tmp_path):
    files = {"env.py": ENV, "evaluate.py": EVALUATE.format(build=build, evaluated=evaluated, stepped=stepped)}
    assert lines_found_in_project(tmp_path, files, "TRN102", target="evaluate.py") == found


def test_trn102_an_in_file_environment_class_is_not_a_module(tmp_path):
    source = ENV + EVALUATE.replace("from env import Env\n", "").format(
        build="env = Env(0)", evaluated="env", stepped="env.step(action)")
    assert lines_found_in_project(tmp_path, {"evaluate.py": source}, "TRN102", target="evaluate.py") == []
