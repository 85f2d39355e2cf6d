"""The value rules (TRN302-305, TRN403, TRN405) on whole snippets, and proof with
real torch that what they flag is really wrong and what they fix is right."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from casefiles import CONFIG, findings_of

from traindoctor.lint import fix_source

RUNNABLE = Path(__file__).parent / "runnable"
CODES = ("TRN302", "TRN303", "TRN304", "TRN305", "TRN403", "TRN405")


def test_double_softmax_cannot_reach_a_low_loss():
    """cross_entropy of softmax outputs stays near log(C) even for a perfect, confident prediction."""
    logits = torch.tensor([[50.0, 0.0, 0.0, 0.0]])
    y = torch.tensor([0])
    assert F.cross_entropy(logits, y) < 1e-6
    assert F.cross_entropy(F.softmax(logits, dim=-1), y) > 0.7  # log(3 + e) - 1 = 0.74
    source = "import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(logits, dim=-1), y)\n"
    assert findings_of(source, CODES) == [(2, "TRN302")]


def test_bce_on_logits_raises_outside_the_unit_interval():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([2.5]), torch.tensor([1.0]))
    fixed = F.binary_cross_entropy_with_logits(torch.tensor([2.5]), torch.tensor([1.0]))
    assert math.isclose(float(fixed), math.log1p(math.exp(-2.5)), rel_tol=1e-6)


def test_unknown_model_outputs_are_not_logits():
    source = ("import torch.nn.functional as F\nfrom mylib import build\nmodel = build()\n"
              "loss = F.binary_cross_entropy(model(x), y)\n")
    assert findings_of(source, CODES) == []


def test_misweighted_averages_are_off_by_the_batch_size(tmp_path: Path):
    path = RUNNABLE / "trn304_epoch_averages.py"
    before = runpy.run_path(str(path), run_name="fixture")
    fixed, applied = fix_source(path.read_text(), str(path), CONFIG, unsafe=True)
    assert applied == 2
    target = tmp_path / path.name
    target.write_text(fixed)
    after = runpy.run_path(str(target), run_name="fixture")
    assert math.isclose(after["LOSS"] / before["LOSS"], 8.0, rel_tol=1e-6)  # batch_size=8
    assert math.isclose(before["ACCURACY"] / after["ACCURACY"], 8.0, rel_tol=1e-6)
    assert 0.0 <= after["ACCURACY"] <= 1.0


@pytest.mark.parametrize("snippet, expected", [
    # the mean of per-batch means over the batches: common practice, not flagged
    ("def f(model, loader, criterion):\n    t = 0\n    for x, y in loader:\n"
     "        t += criterion(model(x), y).item()\n    return t / len(loader)\n", []),
    # a reduction='sum' criterion divided by the number of samples: right
    ("import torch.nn as nn\nc = nn.MSELoss(reduction='sum')\ndef f(model, loader):\n    t = 0\n"
     "    for x, y in loader:\n        t += c(model(x), y).item()\n    return t / len(loader.dataset)\n", []),
    # a total that is not accumulated over batches (a per-sample inner loop) is not judged
    ("import torch.nn as nn\nc = nn.MSELoss()\ndef f(model, loader):\n    t = 0\n    for x, y in loader:\n"
     "        for i in range(len(x)):\n            t += c(model(x[i]), y[i]).item()\n"
     "    return t / len(loader.dataset)\n", []),
    # mean accuracy per batch, summed, divided by samples
    ("def f(model, val_loader, val_set):\n    acc = 0\n    for x, y in val_loader:\n"
     "        acc += (model(x).argmax(-1) == y).float().mean().item()\n    return acc / len(val_set)\n",
     [(5, "TRN304")]),
])
def test_misweighted_average_shapes(snippet, expected):
    assert findings_of("import torch\n" + snippet, CODES) == [(line + 1, code) for line, code in expected]


def test_float16_gradients_underflow_without_scaling():
    """What TRN403 prevents: a float16 gradient of 1e-8 is 0; scaled by 65536 first, it survives."""
    x = torch.tensor([1.0], dtype=torch.float16, requires_grad=True)
    (x * 1e-8).sum().backward()
    assert float(x.grad) == 0.0
    x.grad = None
    (x * 1e-8 * 65536).sum().backward()
    assert float(x.grad) > 0.0


@pytest.mark.parametrize("snippet, expected", [
    ("def train(model, loader, optimizer):\n    for x, y in loader:\n"
     "        with torch.cuda.amp.autocast(dtype=torch.float16):\n            loss = model(x, y)\n"
     "        loss.backward()\n        optimizer.step()\n", [(3, "TRN403")]),
    # a scaler built in __init__ of a trainer class counts
    ("class T:\n    def __init__(self):\n        self.scaler = torch.cuda.amp.GradScaler()\n"
     "    def step(self, model, x, opt):\n        with torch.cuda.amp.autocast():\n            loss = model(x)\n"
     "        self.scaler.scale(loss).backward()\n        self.scaler.step(opt)\n        self.scaler.update()\n", []),
    # a dtype the analysis cannot read is not assumed to be float16
    ("def train(model, x, opt, dtype):\n    with torch.autocast('cuda', dtype=dtype):\n        loss = model(x)\n"
     "    loss.backward()\n    opt.step()\n", []),
    # autocast for a forward in a function that does not call backward
    ("def forward_loss(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n", []),
    # DeepSpeed scales the loss itself
    ("def train(engine, x):\n    with torch.autocast('cuda'):\n        loss = engine(x)\n    engine.backward(loss)\n"
     "    engine.step()\n", []),
])
def test_fp16_without_grad_scaler_shapes(snippet, expected):
    assert findings_of("import torch\n" + snippet, CODES) == [(line + 1, code) for line, code in expected]


def test_exp_of_logits_overflows():
    """What TRN405 flags: a hand-written softmax of large logits is NaN; the shifted one is not."""
    logits = torch.tensor([[100.0, 0.0]])
    naive = torch.exp(logits) / torch.exp(logits).sum(-1, keepdim=True)
    assert torch.isnan(naive).any()
    shifted = logits - logits.max(-1, keepdim=True).values
    assert torch.isfinite(shifted.exp() / shifted.exp().sum(-1, keepdim=True)).all()


def test_padding_in_metric_needs_padded_targets():
    body = "def acc(logits, labels):\n    return (logits.argmax(-1) == labels).float().mean()\n"
    assert findings_of("import torch\n" + body, CODES) == []  # nothing in the file is padded
    padded = "import torch\nfrom torch.nn.utils.rnn import pad_sequence\nlabels = pad_sequence(ys, batch_first=True)\n"
    assert findings_of(padded + body, CODES) == [(5, "TRN305")]


def test_a_scaler_added_in_another_block_clears_the_warm_cache_finding():
    """TRN403 reads the `precision` facts: a GradScaler built in another function counts after an edit."""
    from traindoctor.lint import LintCache, lint_source

    train = ("import torch\n\n\ndef train(model, x, opt):\n    with torch.autocast('cuda'):\n        loss = model(x)\n"
             "    loss.backward()\n    opt.step()\n\n\ndef setup():\n    pass\n")
    cache = LintCache()
    assert [f.code for f in lint_source(train, "t.py", CONFIG, cache).findings] == ["TRN403"]
    edited = train.replace("    pass\n", "    return torch.amp.GradScaler('cuda')\n")
    assert lint_source(edited, "t.py", CONFIG, cache).findings == ()


@pytest.mark.parametrize("call, found", [
    ("F.cross_entropy(F.softmax(z, dim=-1), y)", True),                       # the function
    ("nn.CrossEntropyLoss()(F.softmax(z, dim=-1), y)", True),                 # an inline object
    ("self.criterion(F.softmax(z, dim=-1), y)", True),                        # built in __init__
    ("self.head(F.softmax(z, dim=-1), y)", False),                            # not a loss
    ("self.losses['ce'](F.softmax(z, dim=-1), y)", True),                     # a dict of losses
    ("self.crit['ce'](F.softmax(z, dim=-1), y)", True),                       # an nn.ModuleDict of losses
    ("self.losses['mse'](F.softmax(z, dim=-1), y)", False),                   # another entry
    ("nn.CrossEntropyLoss(F.softmax(z, dim=-1), y)", False),                  # builds a loss, applies none
])
def test_every_value_rule_finds_the_loss_a_call_applies_the_same_way(call, found):
    # one query (Values.loss_call) answers "which loss does this call apply" for TRN301/302/303/402
    source = ("import torch.nn as nn\nimport torch.nn.functional as F\n\n"
              "class Net(nn.Module):\n"
              "    def __init__(self):\n"
              "        super().__init__()\n"
              "        self.criterion = nn.CrossEntropyLoss()\n"
              "        self.head = nn.Linear(4, 4)\n"
              "        self.losses = {'ce': nn.CrossEntropyLoss(), 'mse': nn.MSELoss()}\n"
              "        self.crit = nn.ModuleDict({'ce': nn.CrossEntropyLoss()})\n\n"
              "    def step(self, z, y):\n"
              f"        return {call}\n")
    assert findings_of(source, ("TRN302",)) == ([(13, "TRN302")] if found else [])
