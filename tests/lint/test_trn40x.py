"""TRN401 unsafe-log and TRN402 log-of-softmax on whole files, and proof with
real torch that the flagged code yields inf/NaN gradients and the fixed code
does not."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from casefiles import CONFIG, findings_of

from traindoctor.lint import fix_source, lint_source

CASES = Path(__file__).parent / "cases"
CODES = ("TRN401", "TRN402", "TRN406")


def test_one_finding_per_problem():
    source = "import torch\np = torch.softmax(x, -1)\ny = torch.log(p)\nz = torch.log(torch.sigmoid(x))\n"
    assert findings_of(source, CODES) == [(3, "TRN402"), (4, "TRN402")]


def test_ranges_are_the_call_and_the_division():
    source = "import torch\ndef f(a, n):\n    return torch.log(torch.relu(a)) + a.sum() / n + n.clamp(min=1)\n"
    result = lint_source(source, "m.py", CONFIG)
    line = source.splitlines()[2]
    spans = sorted(line[f.range.start.column:f.range.end.column] for f in result.findings if f.code in ("TRN401", "TRN406"))
    assert spans == ["a.sum() / n", "torch.log(torch.relu(a))"]


def test_a_mask_written_out_as_data_is_not_taken_for_a_batch_mask():
    """d2l's word2vec chapter: the variable is named `mask`, but its rows are data in the
    source (none of them empty), not a mask read from a batch."""
    literal = ("import torch\ndef f(loss, pred, label):\n    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])\n"
               "    return loss(pred, label, mask) * mask.shape[1] / mask.sum(axis=1)\n")
    assert findings_of(literal, CODES) == []
    # a batch's mask is not reported for its name either: only when the code itself shows the count can be 0
    from_batch = literal.replace("torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])", "batch['attention_mask']")
    assert findings_of(from_batch, CODES) == []
    tested = from_batch.replace("    return", "    lengths = mask.sum(axis=1)\n    empty = lengths == 0\n    return")
    assert findings_of(tested.replace("/ mask.sum(axis=1)", "/ lengths"), CODES) == [(6, "TRN406")]


def _run(source: str, **inputs: torch.Tensor) -> list[torch.Tensor]:
    """Execute `source` (which defines `loss(**inputs)`) and return the input gradients."""
    namespace: dict = {}
    exec(compile(source, "<snippet>", "exec"), namespace)
    leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    namespace["loss"](**leaves).backward()
    return [leaf.grad for leaf in leaves.values()]


# Each snippet: flagged code whose gradient is really inf/NaN on these inputs.
NUMERIC_CASES = [
    pytest.param(
        "import torch\nimport torch.nn.functional as F\n"
        "def loss(logits):\n    y = torch.tensor([1])\n"
        "    return F.nll_loss(torch.log(F.softmax(logits, dim=-1)), y)\n",
        {"logits": torch.tensor([[200.0, 0.0, 0.0]])}, "TRN402", id="log-softmax"),
    pytest.param(
        "import torch\ndef loss(logits):\n    p = torch.sigmoid(logits)\n    t = torch.tensor([1.0, 0.0])\n"
        "    pt = p * t + (1 - p) * (1 - t)\n    return -torch.log(pt).sum()\n",
        {"logits": torch.tensor([-120.0, 120.0])}, "TRN401", id="focal-pt"),
    pytest.param(
        "import torch\ndef loss(a, b):\n    return torch.sqrt(((a - b) ** 2).sum(-1)).sum()\n",
        {"a": torch.ones(2, 3), "b": torch.ones(2, 3)}, "TRN401", id="sqrt-distance"),
    pytest.param(
        "import torch\ndef loss(values):\n    mask = torch.zeros(4)\n    n = mask.sum()\n"
        "    out = (values * mask).sum() / n\n    return torch.where(n == 0, torch.zeros(()), out)\n",
        {"values": torch.randn(4)}, "TRN406", id="empty-mask-overwritten"),
    pytest.param(
        "import torch\ndef loss(adv):\n    total = 0\n    for batch in adv.split(5):\n"
        "        total = total + ((batch - batch.mean()) / batch.std()).pow(2).sum()\n    return total\n",
        {"adv": torch.full((5,), 3.0)}, "TRN406", id="constant-std"),
]


@pytest.mark.parametrize("source, inputs, code", NUMERIC_CASES)
def test_flagged_code_really_breaks_and_the_fix_repairs_it(source, inputs, code):
    assert code in [c for _, c in findings_of(source, CODES)]
    broken = _run(source, **inputs)
    assert any(not torch.isfinite(g).all() for g in broken), "the flagged code should produce inf/NaN gradients"
    fixed, applied = fix_source(source, "snippet.py", CONFIG, unsafe=True)  # TRN401/403 fixes are unsafe
    assert applied >= 1 and findings_of(fixed, CODES) == []
    repaired = _run(fixed, **inputs)
    assert all(torch.isfinite(g).all() for g in repaired), fixed


def test_log_softmax_fix_keeps_values():
    source = "import torch\ndef f(x):\n    return torch.log(torch.softmax(x, dim=1))\n"
    fixed, _ = fix_source(source, "m.py", CONFIG)
    assert "torch.log_softmax(x, dim=1)" in fixed
    x = torch.randn(3, 5)
    namespace: dict = {}
    exec(fixed, namespace)
    assert torch.allclose(namespace["f"](x), torch.log(torch.softmax(x, dim=1)), atol=1e-6)
    assert math.isfinite(namespace["f"](torch.tensor([[500.0, 0.0]]))[0, 1].item())


_CALLERS = """import torch
import torch.nn as nn


class ARGA(nn.Module):
    def __init__(self):
        super().__init__()
        self.discriminator = nn.Linear(4, 1)

    def discriminate(self, z):
        real = torch.sigmoid(self.discriminator(torch.randn_like(z)))
        fake = torch.sigmoid(self.discriminator(z))
        return real, fake

    def discriminator_loss(self, real, fake):
        return -torch.log(real).mean() - torch.log((1 - fake).clamp(min=1e-8)).mean()

    def loss(self, z):
        return self.discriminator_loss(*self.discriminate(z))


class ARGVA(ARGA):  # keeps discriminate: its call passes ARGA's sigmoids too
    def loss(self, z, mu):
        return self.discriminator_loss(*self.discriminate(z + mu))


def nll(p, y):
    return -torch.log(p).mean()


def step(x, y, model):
    return nll(torch.softmax(model(x), -1), y) + nll(model(x), y)
"""


def test_a_parameter_is_a_probability_when_every_in_file_caller_passes_one():
    # discriminator_loss's `real` is always the sigmoid returned by discriminate (through `*`);
    # (also from a subclass that keeps discriminate); nll's `p` is a softmax at one call and a model
    # output at the other: nothing is known
    assert findings_of(_CALLERS, CODES) == [(16, "TRN402")]
    overriding = _CALLERS.replace("    def loss(self, z, mu):", "    def discriminate(self, z):\n        return z, z\n\n"
                                  "    def loss(self, z, mu):")
    assert findings_of(overriding, CODES) == []
    namespace: dict = {}
    exec(compile(_CALLERS, "a.py", "exec"), namespace)
    model = namespace["ARGA"]()
    with torch.no_grad():
        model.discriminator.bias.fill_(-200.0)  # a discriminator sure that everything is fake
    loss = model.loss(torch.zeros(2, 4))
    assert torch.isinf(loss).item()  # log(sigmoid(-200)) = log(0)


_HELPERS = """import torch
import torch.nn.functional as F


def loss_fn(p, y):
    return F.cross_entropy(p, y)


def bce(p, y):
    return F.binary_cross_entropy(p, y)


def step(out, y):
    return loss_fn(torch.softmax(out, -1), y) + bce(torch.sigmoid(out[:, 0]), y.float())
"""


def test_a_loss_helper_fed_probabilities_by_its_only_caller():
    found = findings_of(_HELPERS, ("TRN302", "TRN407"))
    assert found == [(6, "TRN302"), (10, "TRN407")]
    namespace: dict = {}
    exec(compile(_HELPERS, "h.py", "exec"), namespace)
    out = torch.tensor([[30.0, 0.0]], requires_grad=True)
    y = torch.tensor([0])
    # softmax twice: the loss of a confident right answer stays far from 0 (log(1 + e^-1) = 0.31)
    assert namespace["loss_fn"](torch.softmax(out, -1), y).item() > 0.3 > F_cross_entropy(out, y)
    # BCE on a saturated sigmoid: a confident wrong answer gets no gradient at all
    wrong = torch.tensor([-120.0, 0.0], requires_grad=True)  # below the float32 underflow logit (-88.7)
    namespace["bce"](torch.sigmoid(wrong[:1]), torch.ones(1)).backward()
    assert wrong.grad[0].item() == 0.0


def F_cross_entropy(out, y):
    return torch.nn.functional.cross_entropy(out, y).item()
