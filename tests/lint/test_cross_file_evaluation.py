"""TRN102 across files: an evaluation helper of another file that runs a model over its data with
autograd on (analysis/evaluation.py, the summary's `evaluates` / `evaluates_own`), called with an
evaluated model outside no_grad. Reported at the call, through `traindoctor check` on a project."""

from __future__ import annotations

import torch
from project_helpers import places_found_by_check, write_project
from torch import nn

EVALUATION = '''\
def evaluate(model, loader):
    correct = 0
    for x, y in loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
'''

TRAIN = '''\
import torch
from torch import nn

from evaluation import evaluate

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]


def main():
    for epoch in range(2):
        model.train()
        for x, y in data:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        correct = evaluate(model, data)
        print(epoch, correct)


main()
'''

WRAPPER = '''\
import torch
from torch import nn


class Classifier:
    def __init__(self, multi_gpu=False):
        self.network = nn.Linear(4, 2)
        self.mnetwork = nn.DataParallel(self.network) if multi_gpu else self.network
        self.optimizer = torch.optim.SGD(self.network.parameters(), lr=0.1)

    def update(self, x, y):
        self.network.train()
        loss = nn.functional.cross_entropy(self.mnetwork(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def predict(self, x):
        self.network.eval()
        score = self.mnetwork(x)
        return score.argmax(1).tolist()
'''

HELPERS = '''\
def eval_model(model, data):
    predictions = []
    for x, _ in data:
        predictions.extend(model.predict(x))
    return predictions


def gold(data):
    return [y for _, y in data]
'''

MAIN = '''\
import torch

from helpers import eval_model
from wrapper import Classifier

data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]


def main():
    model = Classifier()
    for epoch in range(2):
        for x, y in data:
            model.update(x, y)
        predictions = eval_model(model, data)
        print(epoch, len(predictions))


main()
'''


def test_an_evaluated_model_handed_to_an_evaluation_helper_of_another_file(tmp_path):
    root = write_project(tmp_path, {"evaluation.py": EVALUATION, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN102") == [("TRN102", "train.py", 20)]


def test_quiet_under_no_grad_or_without_an_evaluated_model(tmp_path):
    wrapped = TRAIN.replace("        correct = evaluate(model, data)\n",
                            "        with torch.no_grad():\n            correct = evaluate(model, data)\n")
    root = write_project(tmp_path / "a", {"evaluation.py": EVALUATION, "train.py": wrapped})
    assert places_found_by_check(root, "TRN102") == []
    decorated = "import torch\n\n\n@torch.no_grad()\n" + EVALUATION
    root = write_project(tmp_path / "b", {"evaluation.py": decorated, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN102") == []
    # back in train mode before the call: the helper may be fitting it, not evaluating it
    trained = TRAIN.replace("        model.eval()\n", "        model.eval()\n        model.train()\n")
    root = write_project(tmp_path / "c", {"evaluation.py": EVALUATION, "train.py": trained})
    assert places_found_by_check(root, "TRN102") == []
    # the helper backpropagates through what it runs: a training step, not an evaluation
    training = EVALUATION.replace("        correct += (out.argmax(1) == y).sum().item()\n",
                                  "        out.sum().backward()\n")
    root = write_project(tmp_path / "d", {"evaluation.py": training, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN102") == []


def test_a_helper_that_evaluates_the_model_itself_is_reported_there_once(tmp_path):
    own = EVALUATION.replace("    correct = 0\n", "    model.eval()\n    correct = 0\n")
    linted = "import torch\n\n\n" + own  # a file that names torch is linted: its own loop is the finding
    root = write_project(tmp_path / "a", {"evaluation.py": linted, "train.py": TRAIN})
    found = places_found_by_check(root, "TRN102")
    assert found == [("TRN102", "evaluation.py", 8)]  # not a second one at the call
    # a torch-free helper file that calls `.eval()` is linted in its project too: the same one finding, there
    root = write_project(tmp_path / "b", {"evaluation.py": own, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN102") == [("TRN102", "evaluation.py", 5)]


def test_a_method_of_a_project_class_that_evaluates_its_own_network(tmp_path):
    root = write_project(tmp_path, {"wrapper.py": WRAPPER, "helpers.py": HELPERS, "main.py": MAIN})
    assert places_found_by_check(root, "TRN102") == [("TRN102", "main.py", 14)]


def test_quiet_when_the_method_turns_autograd_off_or_trains(tmp_path):
    quiet = WRAPPER.replace("        score = self.mnetwork(x)\n",
                            "        with torch.no_grad():\n            score = self.mnetwork(x)\n")
    root = write_project(tmp_path / "a", {"wrapper.py": quiet, "helpers.py": HELPERS, "main.py": MAIN})
    assert places_found_by_check(root, "TRN102") == []
    # a method that runs another object (not the module it put in eval mode) says nothing
    other = WRAPPER.replace("        score = self.mnetwork(x)\n", "        score = self.scorer(x)\n")
    root = write_project(tmp_path / "b", {"wrapper.py": other, "helpers.py": HELPERS, "main.py": MAIN})
    assert places_found_by_check(root, "TRN102") == []
    # the call is already under no_grad
    wrapped = MAIN.replace("        predictions = eval_model(model, data)\n",
                           "        with torch.no_grad():\n            predictions = eval_model(model, data)\n")
    root = write_project(tmp_path / "c", {"wrapper.py": WRAPPER, "helpers.py": HELPERS, "main.py": wrapped})
    assert places_found_by_check(root, "TRN102") == []


def test_the_claim_on_torch_an_eval_mode_forward_records_a_graph_and_no_grad_gives_the_same_output():
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    model.eval()
    x = torch.randn(8, 4)
    out = model(x)
    assert out.requires_grad and out.grad_fn is not None  # eval() alone keeps recording the graph
    with torch.no_grad():
        quiet = model(x)
    assert quiet.grad_fn is None and torch.equal(out.detach(), quiet)  # the fix changes no result


NET = '''\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.opt = torch.optim.SGD(self.parameters(), lr=0.1)

    def forward(self, x):
        return self.fc(x)

    def fit_batch(self, x, y):
        loss = nn.functional.cross_entropy(self(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()
'''

FIT = '''\
def fit(model, data):
    losses = []
    for x, y in data:
        losses.append(model.fit_batch(x, y))
    return losses
'''

FIT_MAIN = '''\
import torch

from fitting import fit
from net import Net

data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]
net = Net()
net.eval()  # a frozen-BatchNorm fine-tune: eval mode, but trained through the method
print(fit(net, data))
'''


def test_quiet_when_the_helper_runs_a_method_a_project_class_trains_in(tmp_path):
    root = write_project(tmp_path, {"net.py": NET, "fitting.py": FIT, "main.py": FIT_MAIN})
    assert places_found_by_check(root, "TRN102") == []


def test_the_evaluating_class_may_be_defined_in_the_calling_file(tmp_path):
    body = WRAPPER.split("\n", 3)[3]  # the class, without its imports
    here = MAIN.replace("from wrapper import Classifier\n", "from torch import nn\n") \
        .replace("data = [", body + "\n\ndata = [", 1)
    root = write_project(tmp_path, {"helpers.py": HELPERS, "main.py": here})
    found = places_found_by_check(root, "TRN102")
    line = here.splitlines().index("        predictions = eval_model(model, data)") + 1
    assert found == [("TRN102", "main.py", line)]


AGENT = '''\
import torch
from torch import nn


class Agent:
    def __init__(self):
        self.net = nn.Linear(4, 2)

    def eval(self):
        self.net.eval()

    def act(self, state):
        with torch.no_grad():
            return self.net(state).argmax(1)
'''

ROLLOUT = '''\
def test(agent, states):
    actions = []
    for state in states:
        actions.append(agent.act(state))
    return actions
'''

AGENT_MAIN = '''\
import torch

from agent import Agent
from rollout import test

agent = Agent()
agent.eval()
print(test(agent, [torch.randn(8, 4) for _ in range(3)]))
'''


def test_quiet_when_the_method_the_helper_runs_turns_autograd_off_inside(tmp_path):
    # an agent's own eval() and an `act` whose forward is under `with torch.no_grad():`
    root = write_project(tmp_path, {"agent.py": AGENT, "rollout.py": ROLLOUT, "main.py": AGENT_MAIN})
    assert places_found_by_check(root, "TRN102") == []
