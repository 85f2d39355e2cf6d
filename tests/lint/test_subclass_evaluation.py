"""TRN102 through a subclass's override: a base class's method calls `self.eval_step(batch)`, an
abstract method that project subclasses in other files override to put their module in eval mode and
run it with autograd on (the summary's `evaluating_overrides`). Reported at the base's call, where
`with torch.no_grad():` goes (ParlAI's `TorchAgent.batch_act`)."""

from __future__ import annotations

from project_helpers import places_found_by_check, write_project

BASE = '''\
import torch


class Agent:
    def __init__(self):
        self.replies = []

    def batch_act(self, batch, training):
        if training:
            output = self.train_step(batch)
        else:
            output = self.eval_step(batch)
        self.replies.append(output)
        return output

    def evaluate(self, batches):
        return [self.batch_act(batch, training=False) for batch in batches]

    def train_step(self, batch):
        raise NotImplementedError("subclasses train")

    def eval_step(self, batch):
        raise NotImplementedError("subclasses evaluate")
'''

CLASSIFIER = '''\
import torch
from torch import nn

from agent import Agent


class ClassifierAgent(Agent):
    def __init__(self):
        super().__init__()
        self.model = nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train_step(self, batch):
        x, y = batch
        self.model.train()
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def eval_step(self, batch):
        x, _ = batch
        self.model.eval()
        scores = self.model(x)
        return scores.argmax(1).tolist()
'''

# a subclass of a subclass, in a third file: the chain of bases is followed
RANKER = '''\
import torch

from classifier import ClassifierAgent


class RankerAgent(ClassifierAgent):
    def rank(self, batch):
        return self.batch_act(batch, training=False)
'''


def test_a_base_method_calling_an_evaluating_override_outside_no_grad(tmp_path):
    root = write_project(tmp_path, {"agent.py": BASE, "classifier.py": CLASSIFIER})
    assert places_found_by_check(root, "TRN102") == [("TRN102", "agent.py", 12)]


def test_the_override_may_be_in_an_indirect_subclass(tmp_path):
    # the base's only subclass with an evaluating eval_step derives from an intermediate class
    intermediate = CLASSIFIER.replace("class ClassifierAgent(Agent):", "class ClassifierAgent(Middle):").replace(
        "from agent import Agent\n", "from middle import Middle\n")
    middle = "from agent import Agent\n\n\nclass Middle(Agent):\n    pass\n"
    root = write_project(tmp_path, {"agent.py": BASE, "middle.py": middle, "classifier.py": intermediate,
                                    "ranker.py": RANKER})
    assert places_found_by_check(root, "TRN102") == [("TRN102", "agent.py", 12)]


def test_quiet_when_the_call_runs_without_grad(tmp_path):
    wrapped = BASE.replace("            output = self.eval_step(batch)\n",
                           "            with torch.no_grad():\n                output = self.eval_step(batch)\n")
    root = write_project(tmp_path, {"agent.py": wrapped, "classifier.py": CLASSIFIER})
    assert places_found_by_check(root, "TRN102") == []


def test_quiet_when_an_override_turns_autograd_off_or_trains(tmp_path):
    # another subclass runs eval_step under no_grad: the project's authors turn it off where it belongs
    other = CLASSIFIER.replace("class ClassifierAgent", "class QuietAgent").replace(
        "    def eval_step(self, batch):\n", "    @torch.no_grad()\n    def eval_step(self, batch):\n")
    root = write_project(tmp_path / "a", {"agent.py": BASE, "classifier.py": CLASSIFIER, "quiet.py": other})
    assert places_found_by_check(root, "TRN102") == []
    # the override backpropagates: not an evaluation
    training = CLASSIFIER.replace("        return scores.argmax(1).tolist()\n",
                                  "        scores.sum().backward()\n        return scores.argmax(1).tolist()\n")
    root = write_project(tmp_path / "b", {"agent.py": BASE, "classifier.py": training})
    assert places_found_by_check(root, "TRN102") == []


def test_quiet_when_the_override_evaluates_nothing_of_its_own(tmp_path):
    # eval_step runs the model without putting it in eval mode: nothing says it evaluates
    plain = CLASSIFIER.replace("        self.model.eval()\n", "")
    root = write_project(tmp_path / "a", {"agent.py": BASE, "classifier.py": plain})
    assert places_found_by_check(root, "TRN102") == []
    # a class that does not derive from the base defines the evaluating method: the call never reaches it
    unrelated = CLASSIFIER.replace("class ClassifierAgent(Agent):", "class ClassifierAgent:").replace(
        "        super().__init__()\n", "")
    root = write_project(tmp_path / "b", {"agent.py": BASE, "classifier.py": unrelated})
    assert places_found_by_check(root, "TRN102") == []
