"""Recall mechanisms of issue 27 built by the kind of fact a rule lacked (bench/bugs dev half), not
by case: each test is a small real program of that shape the rule missed before, and quiet twins."""

from __future__ import annotations

import ast

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))


def _found(source: str, code: str) -> list:
    return [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


def _lines(source: str, code: str) -> list[int]:
    return [f.range.start.line + 1 for f in _found(source, code)]


# -- TRN102: a method of the evaluated model other than forward runs the model (decode, predict...)

TAGGER = '''import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)

    def decode(self, x):
        return self.lin(x).softmax(-1)


def evaluate(model, batches):
    model.eval()
    out = []
    for x in batches:
        out.append(model.decode(x))
    return out


if __name__ == "__main__":
    print(len(evaluate(Tagger(), [torch.randn(2, 4) for _ in range(3)])))
'''


def test_method_of_an_evaluated_model_runs_it():
    assert _lines(TAGGER, "TRN102") == [21]
    fixed = fix_source(TAGGER, "t.py", CONFIG)[0]
    assert "@torch.no_grad()\ndef evaluate" in fixed and not _found(fixed, "TRN102")
    namespace: dict = {"__name__": "t"}
    exec(compile(fixed, "t.py", "exec"), namespace)  # the fixed code runs, and records no graph
    model = namespace["Tagger"]()
    assert all(not y.requires_grad for y in namespace["evaluate"](model, [torch.randn(2, 4)]))
    before: dict = {"__name__": "t"}
    exec(compile(TAGGER, "t.py", "exec"), before)  # the claim: decode after eval() records a graph
    assert all(y.requires_grad for y in before["evaluate"](before["Tagger"](), [torch.randn(2, 4)]))


@pytest.mark.parametrize("change", [
    ("    for x in batches:\n        out.append(model.decode(x))",
     "    with torch.no_grad():\n        for x in batches:\n            out.append(model.decode(x))"),
    ("    for x in batches:\n        out.append(model.decode(x))",
     "    for x in batches:\n        with torch.inference_mode():\n            out.append(model.decode(x))"),
    ("out.append(model.decode(x))", "out.append(model.generate(x))"),  # HF generate is under no_grad
    ("out.append(model.decode(x))", "model.load_state_dict(x)"),  # state, not computation
    ("out.append(model.decode(x))", "out.append(model.decode())"),  # no input
    ("    def decode(self, x):", "    @torch.no_grad()\n    def decode(self, x):"),
    ("    model.eval()\n", ""),  # not put in eval mode: nothing says it is evaluated
    ("        out.append(model.decode(x))",
     "        loss = model.decode(x).sum()\n        loss.backward()"),  # it trains
])
def test_method_of_an_evaluated_model_quiet(change):
    old, new = change
    assert old in TAGGER
    assert not _found(TAGGER.replace(old, new), "TRN102")
