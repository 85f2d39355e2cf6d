"""Summaries across functions and classes: what a helper or a method returns (a loss, a
tuple of facts), what it does (eval(), set_epoch), attributes set in `__init__`, arguments
mapped by keyword, objects handed through helpers."""

from __future__ import annotations

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

CONFIG = Config()


def _found(source: str, code: str) -> list:
    return [f for f in lint_source(source, "t.py", CONFIG).findings if f.code == code]


INIT_CRITERION = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, model):
        self.model = model
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self, loader):
        total = 0.0
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss
        return total / len(loader)
'''

HELPER_LOSS = '''import torch
import torch.nn.functional as F


def compute_loss(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits, y)


def train(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = compute_loss(model, x, y)
        loss.backward()
        optimizer.step()
        total += loss
    print(total)
'''

TUPLE_RETURN = '''import torch
import torch.nn.functional as F


def forward_step(model, x, y, optimizer):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return logits.argmax(1), loss


def train(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        preds, loss = forward_step(model, x, y, optimizer)
        total += loss
    print(total)
'''

KEYWORDS = '''import torch
import torch.nn.functional as F


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            model(x)


def train(net, loader, val_loader, opt):
    net.train()
    for epoch in range(10):
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
        validate(model=net, loader=val_loader)
'''

MODULE_NET = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x)


net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)


def train(loader):
    net.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()


def test(loader):
    net.eval()
    correct = 0
    for x, y in loader:
        out = net(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
'''

SAMPLER_FROM_HELPER = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def make_sampler(dataset):
    return DistributedSampler(dataset, shuffle=True)


def main(dataset, model, optimizer):
    sampler = make_sampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
'''

LOADER_FROM_HELPERS = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def make_sampler(dataset):
    return DistributedSampler(dataset, shuffle=True)


def build_loader(dataset):
    sampler = make_sampler(dataset)
    return DataLoader(dataset, batch_size=32, sampler=sampler)


def main(dataset, model, optimizer):
    loader = build_loader(dataset)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
'''


HELPERS_701 = '''import torch
import torch.nn.functional as F


def train_epoch(model, loader, opt):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()


def update(model, x, y, opt):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def main(model, loader, opt):
    for epoch in range(10):
        train_epoch(model, loader, opt)
    for x, y in loader:
        update(model, x, y, opt)
    for x, y in loader:
        update(model, x, y, opt)
'''

GRAD_LEFT_OFF = '''import torch
import torch.nn.functional as F


def evaluate(model, loader):
    torch.set_grad_enabled(False)
    model.eval()
    return sum(model(x).sum().item() for x, _ in loader)


def train(model, loader, val_loader, optimizer):
    for epoch in range(10):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        evaluate(model, val_loader)
'''

SDPA = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_drop = nn.Dropout(0.1)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p)
'''


def test_a_criterion_built_in_init_is_a_loss_wherever_it_is_used():
    [found] = _found(INIT_CRITERION, "TRN101")
    assert "`total` sums the loss `loss`" in found.message
    # no backward in the loop, a name that says nothing: only __init__ tells that `self.fn` is a loss
    evaluate = INIT_CRITERION.replace("self.criterion", "self.fn").replace("            loss.backward()\n", "")
    assert _found(evaluate, "TRN101")
    assert not _found(evaluate.replace("self.fn = nn.CrossEntropyLoss()", "self.fn = print"), "TRN101")


def test_a_helper_returning_a_loss():
    [found] = _found(HELPER_LOSS, "TRN101")
    assert "`total` sums the loss" in found.message
    assert not _found(HELPER_LOSS.replace("total += loss", "total += loss.item()"), "TRN101")


def test_tuple_returns_keep_each_elements_facts():
    [found] = _found(TUPLE_RETURN, "TRN101")  # the loss is element 1 of `return logits.argmax(1), loss`
    assert "`total` sums the loss `loss`" in found.message
    # element 0 is an argmax: no autograd history, nothing to report
    assert not _found(TUPLE_RETURN.replace("total += loss", "total += preds"), "TRN101")
    swapped = TUPLE_RETURN.replace("return logits.argmax(1), loss", "return loss.item(), logits.argmax(1)")
    assert not _found(swapped, "TRN101")


def test_arguments_map_by_keyword():
    [found] = _found(KEYWORDS, "TRN703")  # validate(model=net): net is left in eval mode
    assert "`net.eval()`" in found.message
    assert _found(KEYWORDS.replace("validate(model=net, loader=val_loader)", "validate(net, val_loader)"), "TRN703")
    assert not _found(KEYWORDS.replace("validate(model=net, loader=val_loader)",
                                       "validate(model=net, loader=val_loader)\n        net.train()"), "TRN703")


def test_a_module_level_net_evaluated_in_a_script_test_function():
    [found] = _found(MODULE_NET, "TRN102")
    assert "`net` is evaluated" in found.message
    assert not _found(MODULE_NET.replace("def test(loader):", "@torch.no_grad()\ndef test(loader):"), "TRN102")


def test_a_unit_test_that_asserts_is_still_quiet():
    unit = MODULE_NET.replace("def test(loader):", "def test_accuracy(loader):").replace(
        "    return correct", "    assert correct >= 0")
    assert not _found(unit, "TRN102")


@pytest.mark.parametrize("source", [SAMPLER_FROM_HELPER, LOADER_FROM_HELPERS], ids=["sampler", "loader"])
def test_a_distributed_sampler_handed_through_helpers(source):
    [found] = _found(source, "TRN203")
    assert "set_epoch" in found.message
    fixed = source.replace("    for epoch in range(10):\n",
                           "    for epoch in range(10):\n        loader.sampler.set_epoch(epoch)\n")
    assert fixed != source and not _found(fixed, "TRN203")
    assert not _found(source.replace("shuffle=True", "shuffle=False"), "TRN203")


def test_trn701_one_finding_per_bug_with_related_locations():
    found = sorted(_found(HELPERS_701, "TRN701"), key=lambda f: f.range.start.line)
    # train_epoch's own loop (not again at main's epoch loop that calls it); update() once, at its
    # first calling loop, with the helper's backward and the other calling loop as related locations
    assert [f.range.start.line + 1 for f in found] == [8, 22]
    related = [(r.range.start.line + 1, r.message) for r in found[1].related]
    assert related == [(14, "backward() is called here, in the helper"),
                       (24, "the helper is also called every iteration here")]
    fixed = HELPERS_701.replace("    loss.backward()\n    opt.step()\n", "    opt.zero_grad()\n    loss.backward()\n"
                                "    opt.step()\n")
    assert [f.range.start.line + 1 for f in _found(fixed, "TRN701")] == [8]


def test_a_helper_that_leaves_autograd_off():
    [found] = _found(GRAD_LEFT_OFF, "TRN603")
    assert found.range.start.line + 1 == 19 and "`evaluate(...)` leaves autograd off" in found.message
    assert [r.range.start.line + 1 for r in found.related] == [6]
    # torch agrees: the second epoch's backward raises
    import torch

    namespace: dict = {}
    exec(compile(GRAD_LEFT_OFF, "g.py", "exec"), namespace)
    model = torch.nn.Linear(4, 3)
    loader = [(torch.randn(2, 4), torch.tensor([0, 1]))]
    try:
        with pytest.raises(RuntimeError, match="does not require grad"):
            namespace["train"](model, loader, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    finally:
        torch.set_grad_enabled(True)
    restored = GRAD_LEFT_OFF.replace("    return sum(", "    torch.set_grad_enabled(True)\n    return sum(")
    assert not _found(restored, "TRN603")
    scoped = GRAD_LEFT_OFF.replace("    torch.set_grad_enabled(False)\n    model.eval()\n    return sum(",
                                   "    model.eval()\n    with torch.no_grad():\n        return sum(")
    assert scoped != GRAD_LEFT_OFF and not _found(scoped, "TRN603")


def test_attention_dropout_not_gated_on_the_module_mode():
    import torch

    from traindoctor.lint import fix_source

    [found] = _found(SDPA, "TRN704")
    assert "dropout_p=self.attn_drop.p" in found.message
    fixed, count = fix_source(SDPA, "a.py", CONFIG)
    assert count == 1 and not _found(fixed, "TRN704")

    def eval_outputs(source):
        namespace: dict = {}
        exec(compile(source, "a.py", "exec"), namespace)
        torch.manual_seed(0)
        module = namespace["Attention"](8).eval()
        x = torch.randn(2, 5, 8)
        return module(x), module(x)

    first, second = eval_outputs(SDPA)  # torch agrees: dropout runs in eval mode
    assert not torch.equal(first, second)
    first, second = eval_outputs(fixed)
    assert torch.equal(first, second)
    gated = SDPA.replace("dropout_p=self.attn_drop.p", "dropout_p=self.attn_drop.p if self.training else 0.0")
    assert not _found(gated, "TRN704") and not _found(SDPA.replace("self.attn_drop.p", "0.0"), "TRN704")
