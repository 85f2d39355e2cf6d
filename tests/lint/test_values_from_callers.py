"""What a parameter holds, from every in-file call that fills it, module-level code included:

- `fit(Classifier(3), loader)` at the bottom of a script: `model` in `fit` is a Classifier, whose
  forward returns softmax outputs, so `loss_fn(model(x), y)` with a CrossEntropyLoss softmaxes twice;
- `self.model = model` in `Trainer.__init__`, with `Trainer(Classifier(3))` the only construction: the
  attribute holds what every construction passes, wherever a method reads it.

Quiet where the callers disagree, where a subclass may be built with other arguments, and where another
method rebinds the attribute. Each reported model is run on torch: its outputs are probabilities."""

from __future__ import annotations

import textwrap

import torch

from casefiles import expected_lines, findings_of

MODEL = '''\
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.body = nn.Linear(10, 32)
        self.head = nn.Sequential(nn.Linear(32, n), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class Logits(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(10, n)

    def forward(self, x):
        return self.fc(x)
'''

FUNCTION_CALLED_BY_SCRIPT = MODEL + '''

def fit(model, loader):
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters())
    for x, y in loader:
        loss = loss_fn(model(x), y)  # expect: TRN302
        opt.zero_grad()
        loss.backward()
        opt.step()


fit(Classifier(3), [(torch.randn(4, 10), torch.tensor([0, 1, 2, 0]))])
'''

TRAINER = MODEL + '''

class Trainer:
    def __init__(self, model):
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.opt = torch.optim.Adam(model.parameters())

    def step(self, x, y):
        loss = self.loss_fn(self.model(x), y)  # expect: TRN302
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss
'''

TRAINER_BUILT_ONCE = TRAINER + '''

trainer = Trainer(Classifier(3))
trainer.step(torch.randn(4, 10), torch.tensor([0, 1, 2, 0]))
'''


def _quiet(source: str) -> str:
    return source.replace("  # expect: TRN302", "")


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "case"}
    exec(compile(textwrap.dedent(source), "case.py", "exec"), namespace)
    return namespace


def test_a_script_call_fills_a_functions_model() -> None:
    assert findings_of(FUNCTION_CALLED_BY_SCRIPT, ("TRN302",)) == expected_lines(FUNCTION_CALLED_BY_SCRIPT)
    probs = _run(FUNCTION_CALLED_BY_SCRIPT)["Classifier"](3)(torch.randn(5, 10))
    assert torch.allclose(probs.sum(-1), torch.ones(5))  # what cross_entropy is given: probabilities


def test_an_attribute_holds_what_every_construction_passes() -> None:
    assert findings_of(TRAINER_BUILT_ONCE, ("TRN302",)) == expected_lines(TRAINER_BUILT_ONCE)
    trainer = _run(TRAINER_BUILT_ONCE)["trainer"]
    assert torch.allclose(trainer.model(torch.randn(5, 10)).sum(-1), torch.ones(5))


def test_callers_that_disagree_say_nothing() -> None:
    source = _quiet(FUNCTION_CALLED_BY_SCRIPT) + "fit(Logits(3), [])\n"
    assert findings_of(source, ("TRN302",)) == []
    source = _quiet(TRAINER_BUILT_ONCE) + "other = Trainer(Logits(3))\n"
    assert findings_of(source, ("TRN302",)) == []


def test_logits_passed_everywhere_stay_quiet() -> None:
    source = _quiet(FUNCTION_CALLED_BY_SCRIPT).replace("fit(Classifier(3)", "fit(Logits(3)")
    assert findings_of(source, ("TRN302",)) == []


def test_a_subclass_built_with_other_arguments_leaves_it_unknown() -> None:
    source = _quiet(TRAINER_BUILT_ONCE) + '''

class LogitTrainer(Trainer):
    pass


LogitTrainer(Logits(3))
'''
    assert findings_of(source, ("TRN302",)) == []


def test_an_attribute_rebound_in_another_method_is_not_the_argument() -> None:
    source = _quiet(TRAINER_BUILT_ONCE).replace(
        "    def step(self, x, y):",
        "    def swap(self):\n        self.model = Logits(3)\n\n    def step(self, x, y):")
    assert findings_of(source, ("TRN302",)) == []


def test_without_a_construction_the_attribute_is_unknown() -> None:
    assert findings_of(_quiet(TRAINER), ("TRN302",)) == []
