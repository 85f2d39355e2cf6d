"""analysis/autograd_off.py decides from the code where autograd records nothing: an in-file
decorator counts only when its wrapper calls the function inside no_grad on every call, and a
model is frozen only by an unconditional `requires_grad_(False)` (or a loop over its
parameters) that is not undone before the loop. TRN102 is the rule that asks."""

from __future__ import annotations

import textwrap

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config(select=("TRN102",))

DECORATED = """
import torch
{decorator}
class Detector(torch.nn.Module):
    @wrap
    def predict(self, images):
        self.eval()
        boxes = []
        for img in images:
            boxes.append(self(img[None]))
        return boxes
"""


def _hits(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", CONFIG)
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings if f.code == "TRN102"]


@pytest.mark.parametrize("decorator, quiet", [
    ("def wrap(f):\n    def g(*a, **k):\n        with torch.no_grad():\n            return f(*a, **k)\n    return g", True),
    ("def wrap(f):\n    @torch.inference_mode()\n    def g(*a, **k):\n        return f(*a, **k)\n    return g", True),
    # one call outside no_grad: the wrapper may run the function with autograd on
    ("def wrap(f):\n    def g(*a, **k):\n        if k.pop('grad', False):\n            return f(*a, **k)\n"
     "        with torch.no_grad():\n            return f(*a, **k)\n    return g", False),
    # returns something else than the wrapper that disables grad
    ("def wrap(f):\n    def g(*a, **k):\n        with torch.no_grad():\n            return f(*a, **k)\n    return f", False),
])
def test_an_in_file_decorator_counts_by_what_its_wrapper_does(decorator, quiet):
    hits = _hits(DECORATED.format(decorator=decorator))
    assert (hits == []) is quiet, hits


@pytest.mark.parametrize("freeze, quiet", [
    ("model.eval().requires_grad_(False).to(device)", True),
    ("model.eval()\n    model.requires_grad_(False)", True),
    ("model.eval()\n    for p in model.parameters():\n        p.requires_grad_(False)", True),
    ("model.eval()\n    model.requires_grad_(False)\n    model.requires_grad_()", False),  # undone
    ("model.eval()\n    if frozen:\n        model.requires_grad_(False)", False),  # only sometimes
    ("model.eval()\n    other.requires_grad_(False)", False),  # another module
    ("model.eval()\n    ema.model.requires_grad_(False)", False),  # another module, same last name
])
def test_a_frozen_model_records_no_graph(freeze, quiet):
    source = f"import torch\ndef evaluate(model, other, ema, loader, device, frozen):\n    {freeze}\n    out = []\n" \
             f"    for x in loader:\n        out.append(model(x))\n    return out\n"
    hits = _hits(source)
    assert (hits == []) is quiet, hits


def test_torch_records_no_graph_for_a_frozen_module_on_fresh_inputs():
    """The claim the rule's silence rests on, checked against torch."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).eval().requires_grad_(False)
    out = model(torch.randn(3, 4))
    assert out.grad_fn is None and not out.requires_grad
    live = torch.nn.Linear(4, 4).eval()
    assert live(torch.randn(3, 4)).grad_fn is not None  # an eval() module alone still records one


def test_a_freeze_in_an_earlier_top_level_statement_counts():
    script = "import torch\nnet.eval()\n{freeze}preds = []\nfor images, _ in test_loader:\n" \
             "    preds.append(net(images).argmax(1))\n"
    assert _hits(script.format(freeze="net.requires_grad_(False)\n")) == []
    assert _hits(script.format(freeze="")) == [5]
