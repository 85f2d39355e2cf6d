"""The findings not true that the ecosystem test half showed at `2fc7ef1` (issue 27), fixed in
general after their repositories moved to dev (bench/ecosystem/README.md, *Moves*): each shape is
decided by what the code does, each has a true twin that must still be found, and each torch fact
the decision rests on is checked here against torch.

- TRN705: a plain list of `nn.Linear` whose every module's `parameters()` the class registers by
  hand with `register_parameter` (kefirski/pytorch_RVAE's Highway).
- TRN101: a function-local list that collects the terms of one update in a loop that does not
  train, before the backward that follows the loop (sweetice's actor-critic `finish_episode`).
- TRN101: `loss.backward(retain_graph=True)` backpropagates `loss` (only a bare `.backward()` was
  read as one, so a sum fed to it looked unused: sweetice's REINFORCE with baseline).
- TRN102: a module run once per call whose output is only read detached (RL `select_action`),
  with no `.eval()` and no loop over data here, is not reported; see `test_detached_runs_*`.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from project_helpers import lines_found_in_project


# -- TRN705: parameters of a plain list registered by hand --------------------------------------

HIGHWAY = """
import torch.nn as nn


class Highway(nn.Module):
    def __init__(self, size, num_layers):
        super().__init__()
        self.linear = [{build} for _ in range(num_layers)]
        for i, module in enumerate(self.linear):
            {register}

    def forward(self, x):
        for layer in self.linear:
            x = layer(x)
        return x

    def _add_to_parameters(self, parameters, name):
        for i, parameter in enumerate(parameters):
            self.register_parameter(name='{{}}-{{}}'.format(name, i), param=parameter)
"""
BY_HELPER = "self._add_to_parameters(module.parameters(), 'linear_{}'.format(i))"
DIRECTLY = "for j, p in enumerate(module.parameters()):\n                self.register_parameter(f'l{i}_{j}', p)"


@pytest.mark.parametrize("build, register, found", [
    ("nn.Linear(size, size)", BY_HELPER, []),  # every Linear's parameters registered through the class's helper
    ("nn.Linear(size, size)", DIRECTLY, []),  # ... or right in the loop
    ("nn.BatchNorm1d(size)", BY_HELPER, [8]),  # buffers (running stats) are not parameters: still lost
    ("nn.Linear(size, size)", "pass", [8]),  # nothing registered
    ("nn.Linear(size, size)", "self._add_to_parameters([], 'linear_{}'.format(i))", [8]),  # not the module's
])
def test_trn705_parameters_registered_by_hand(build, register, found, tmp_path):
    files = {"train.py": HIGHWAY.format(build=build, register=register)}
    assert lines_found_in_project(tmp_path, files, "TRN705") == found


def test_hand_registered_parameters_are_trained_saved_and_converted():
    class Highway(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = [nn.Linear(3, 3) for _ in range(2)]
            self.norms = [nn.BatchNorm1d(3)]
            for i, module in enumerate(self.linear + self.norms):
                for j, p in enumerate(module.parameters()):
                    self.register_parameter(f"m{i}-{j}", p)

    model = Highway()
    listed = {id(p) for m in model.linear for p in m.parameters()}
    assert listed <= {id(p) for p in model.parameters()}  # the optimizer gets them
    assert len(model.state_dict()) == 6  # 2 Linear x (weight, bias) + BatchNorm's weight and bias
    model.to(torch.float64)
    assert all(m.weight.dtype == torch.float64 for m in model.linear)  # .to() reaches the listed Linear
    assert model.linear[0](torch.ones(1, 3, dtype=torch.float64)).dtype == torch.float64
    # the twin: a BatchNorm's running statistics are buffers, neither saved nor converted
    assert not any("running" in key for key in model.state_dict())
    assert model.norms[0].running_mean.dtype == torch.float32


# -- TRN101: the terms of one update, collected before its backward -----------------------------

FINISH_EPISODE = """
import torch
import torch.nn.functional as F

{bind_outside}

def finish_episode(policy, optimizer, saved, rewards):
    {bind_inside}
    policy_loss = []
    for (log_prob, value), r in zip(saved, rewards):
        policy_loss.append(-log_prob * (r - value.item()))
        value_loss.append(F.smooth_l1_loss(value, torch.tensor([r])))
    optimizer.zero_grad()
    loss = torch.stack(policy_loss).sum()
    loss.backward()
    optimizer.step()
    {after}
"""


@pytest.mark.parametrize("bind_outside, bind_inside, after, found", [
    ("", "value_loss = []", "", []),  # local, freed when the call returns
    ("value_loss = []", "", "", [12]),  # module-level: grows with every episode
    ("", "value_loss = []", "policy.history = value_loss", [12]),  # kept on an object
])
def test_trn101_one_updates_terms_in_a_local_list(bind_outside, bind_inside, after, found, tmp_path):
    source = FINISH_EPISODE.format(bind_outside=bind_outside, bind_inside=bind_inside, after=after)
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN101") == found


def test_trn101_a_local_list_filled_by_a_training_loop_is_still_found(tmp_path):
    source = """
    import torch.nn.functional as F


    def train(model, batches, optimizer):
        losses = []
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return sum(l.item() for l in losses) / len(losses)
    """
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN101") == [12]


def test_trn101_a_local_list_of_an_outer_loop_is_still_found(tmp_path):
    source = """
    import torch


    def run(policy, optimizer, episodes):
        value_loss = []
        for episode in episodes:
            terms = []
            for state, target in episode:
                value = policy(state)
                terms.append((value - target).pow(2).mean())
                value_loss.append(torch.nn.functional.mse_loss(value, target))
            optimizer.zero_grad()
            torch.stack(terms).sum().backward()
            optimizer.step()
    """
    # bound once for all episodes: it grows
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN101") == [12]


def test_a_local_lists_graphs_are_freed_when_the_call_returns():
    layer = nn.Linear(2, 1)
    seen = []

    def finish_episode():
        value_loss = []
        for _ in range(3):
            term = F.mse_loss(layer(torch.ones(1, 2)), torch.zeros(1, 1))
            seen.append(weakref.ref(term))
            value_loss.append(term)

    finish_episode()
    gc.collect()
    assert seen and all(ref() is None for ref in seen)


# -- TRN101: backward with keyword arguments backpropagates its receiver -------------------------

RETAIN = """
import torch.nn.functional as F


def fit(model, batches, optimizer):
    for epoch in range(10):
        total = 0.0
        for x, y in batches:
            total = total + F.mse_loss(model(x), y)
        optimizer.zero_grad()
        {backward}
        optimizer.step()
"""


@pytest.mark.parametrize("backward, found", [
    ("total.backward()", []),
    ("total.backward(retain_graph=True)", []),  # was read as a backward of nothing
    ("total.backward(create_graph=False, retain_graph=True)", []),
    ("print(total.item())", [9]),  # nothing backpropagates the sum: it only grows
])
def test_trn101_backward_keywords(backward, found, tmp_path):
    assert lines_found_in_project(tmp_path, {"train.py": RETAIN.format(backward=backward)}, "TRN101") == found


def test_backward_with_retain_graph_backpropagates_its_receiver():
    w = torch.ones(2, requires_grad=True)
    total = (w * 3).sum()
    total.backward(retain_graph=True)
    assert torch.equal(w.grad, torch.full((2,), 3.0))


# -- TRN102: a module run whose output is only read detached, marked as inference or not ----------

AGENT = """
import numpy as np
import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 1)

    def forward(self, state):
        return torch.tanh(self.l1(state))


class Agent:
    def __init__(self):
        self.actor = Actor()
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-3)

    def select_action(self, state):
        {before}
        state = torch.FloatTensor(state.reshape(1, -1))
        return self.actor(state).cpu().data.numpy().flatten()

    def train(self, states):
        loss = -self.actor(states).mean()
        self.actor_optimizer.zero_grad()
        loss.backward()
        self.actor_optimizer.step()
"""


@pytest.mark.parametrize("before, found", [
    ("pass", []),  # one forward per environment step: its graph is freed at once
    # eval() marks it as inference, but it is still one forward per call, in no loop (h/prec6):
    # its graph is freed on return. tests/lint/test_single_forward_after_eval.py has the ones found.
    ("self.actor.eval()", []),
])
def test_detached_runs_need_a_mark_of_inference(before, found, tmp_path):
    assert lines_found_in_project(tmp_path, {"train.py": AGENT.format(before=before)}, "TRN102") == found


def test_detached_runs_in_a_loop_over_inputs_are_still_found(tmp_path):
    source = AGENT.format(before="pass").replace(
        "    def select_action(self, state):",
        "    def values(self, states):\n"
        "        found = []\n"
        "        for state in states:\n"
        "            found.append(self.actor(torch.as_tensor(state)).detach().numpy())\n"
        "        return found\n\n"
        "    def select_action(self, state):")
    assert lines_found_in_project(tmp_path, {"train.py": source}, "TRN102") == [24]


def test_a_forward_whose_output_is_only_read_detached_is_freed_on_return():
    actor = nn.Linear(3, 1)
    seen = []

    def select_action(state):
        out = actor(torch.as_tensor(state, dtype=torch.float32).reshape(1, -1))
        seen.append(weakref.ref(out))
        return out.cpu().data.numpy().flatten()

    assert select_action([0.1, 0.2, 0.3]).shape == (1,)
    gc.collect()
    assert seen[0]() is None  # the output, and the graph only it kept alive, are gone
    actor.eval()
    assert actor(torch.ones(1, 3)).grad_fn is not None  # eval() alone records a graph all the same
