"""What a model's call returns, where the model is not a constructor in sight:

- `self(x)` in a method of the module (Lightning's `training_step`, a `fit` method): it runs the
  class's own forward, so a forward that ends in softmax feeds `F.cross_entropy` probabilities
  (TRN302), one that ends in sigmoid feeds `F.binary_cross_entropy` saturating values (TRN407);
  unknown when an in-file subclass overrides forward;
- a model built by a factory of another project file (`model = build_model(10)` with
  `return nn.Sequential(..., nn.Softmax(dim=1))` in model.py): the summary says what the built
  object's call returns.

Quiet where the forward returns logits on the training path. Each reported claim is run on torch 2.13:
the outputs are probabilities, and cross entropy of them stays far from 0 however sure the logits are."""

from __future__ import annotations

import textwrap

import torch
import torch.nn.functional as F

from casefiles import expected_lines, findings_of
from project_helpers import places_found_by_check, write_project

SELF_CALL = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1)

    def training_step(self, batch):
        x, y = batch
        y_hat = self(x)
        return F.cross_entropy(y_hat, y)  # expect: TRN302


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x)).squeeze(1)

    def loss(self, x, y):
        return F.binary_cross_entropy(self(x), y)  # expect: TRN407
'''

LOGITS_WHILE_TRAINING = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        logits = self.fc(x)
        if self.training:
            return logits
        return torch.softmax(logits, dim=1)

    def training_step(self, batch):
        x, y = batch
        return F.cross_entropy(self(x), y)
'''

FACTORY = '''\
import torch.nn as nn


def build_model(num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, num_classes),
                         nn.Softmax(dim=1))
'''

TRAIN = '''\
import torch
import torch.nn.functional as F
from model import build_model


def main():
    model = build_model(10)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(2):
        x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
'''


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "case"}
    exec(compile(textwrap.dedent(source), "case.py", "exec"), namespace)
    return namespace


def test_self_call_runs_the_class_forward() -> None:
    assert findings_of(SELF_CALL, ("TRN302", "TRN407")) == expected_lines(SELF_CALL)
    namespace = _run(SELF_CALL)
    classifier = namespace["Classifier"]()
    x = torch.randn(6, 10)
    assert torch.allclose(classifier(x).sum(-1), torch.ones(6))  # what cross_entropy is given: probabilities
    detector = namespace["Detector"]()
    with torch.no_grad():
        detector.fc.weight.fill_(10.0)
    assert (detector(torch.ones(4, 10)) == 1.0).all()  # float32 sigmoid saturates to exactly 1


def test_cross_entropy_of_probabilities_stays_far_from_zero() -> None:
    # the claim of the message: even logits that are sure of the right class leave a loss near
    # log(C) - 1 + ..., against about 0 for the logits themselves
    logits = torch.tensor([[50.0, 0.0, 0.0]], requires_grad=True)
    target = torch.tensor([0])
    assert F.cross_entropy(logits, target).item() < 1e-6
    twice = F.cross_entropy(torch.softmax(logits, dim=1), target)
    assert twice.item() > 0.5
    twice.backward()
    assert logits.grad.abs().max().item() < 1e-6  # and its gradient has vanished


def test_a_subclass_that_overrides_forward_leaves_self_call_unknown() -> None:
    source = SELF_CALL.replace("  # expect: TRN302", "") + '''

class LogitClassifier(Classifier):
    def forward(self, x):
        return self.fc(x)
'''
    assert findings_of(source, ("TRN302",)) == []


def test_logits_on_the_training_path_stay_quiet() -> None:
    assert findings_of(LOGITS_WHILE_TRAINING, ("TRN302",)) == []


def test_a_factory_in_another_file_says_what_its_model_returns(tmp_path) -> None:
    root = write_project(tmp_path / "demo", {"model.py": FACTORY, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN302") == [("TRN302", "train.py", 11)]
    namespace: dict = {}
    exec(compile(FACTORY, "model.py", "exec"), namespace)
    probs = namespace["build_model"](10)(torch.randn(3, 1, 28, 28))
    assert torch.allclose(probs.sum(-1), torch.ones(3))


def test_a_factory_that_returns_logits_stays_quiet(tmp_path) -> None:
    logits = FACTORY.replace(",\n                         nn.Softmax(dim=1))", ")")
    root = write_project(tmp_path / "demo", {"model.py": logits, "train.py": TRAIN})
    assert places_found_by_check(root, "TRN302") == []


HEAD_REPLACED = '''\
import torch
import torch.nn as nn
import torchvision


def main():
    model = torchvision.models.resnet18(weights=None)
    model.fc = nn.Sequential(nn.Linear(512, 10), nn.Softmax(dim=1))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for images, labels in [(torch.randn(2, 3, 64, 64), torch.tensor([1, 2]))]:
        loss = criterion(model(images), labels)  # expect: TRN302
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''

HEAD_REPLACED_IN_A_FACTORY = '''\
import torch.nn as nn
import torch.nn.functional as F
from torchvision import models


def build(num_classes):
    net = models.densenet121(weights="DEFAULT")
    net.classifier = nn.Sequential(nn.Linear(1024, num_classes), nn.Sigmoid())
    return net


def step(batch, targets):
    model = build(5)
    return F.binary_cross_entropy_with_logits(model(batch), targets)  # expect: TRN302
'''


def test_a_replaced_classifier_head_is_what_the_model_returns() -> None:
    # torchvision's classifiers end by returning their head's output (vocabulary classifier_heads,
    # checked on torchvision 0.28 with torch 2.13 when the entry was written)
    assert findings_of(HEAD_REPLACED, ("TRN302",)) == expected_lines(HEAD_REPLACED)
    assert findings_of(HEAD_REPLACED_IN_A_FACTORY, ("TRN302",)) == expected_lines(HEAD_REPLACED_IN_A_FACTORY)


def test_heads_of_logits_or_log_probabilities_and_unlisted_models_stay_quiet() -> None:
    quiet = HEAD_REPLACED.replace("  # expect: TRN302", "")
    assert findings_of(quiet.replace("nn.Sequential(nn.Linear(512, 10), nn.Softmax(dim=1))", "nn.Linear(512, 10)"),
                       ("TRN302",)) == []
    assert findings_of(quiet.replace("nn.Softmax(dim=1)", "nn.LogSoftmax(dim=1)"), ("TRN302",)) == []
    # GoogLeNet returns a tuple with auxiliary logits while training: its `fc` is not its output
    assert findings_of(quiet.replace("resnet18", "googlenet"), ("TRN302",)) == []
    # a head assigned to another model than the one called
    other = quiet.replace("    model.fc = ", "    other = torchvision.models.resnet18()\n    other.fc = ")
    assert findings_of(other, ("TRN302",)) == []
