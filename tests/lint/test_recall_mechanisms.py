"""Mechanisms added for recall on real bug-fix commits (bench/bugs, dev half): each test is a
small real program that the rule missed before, and a quiet twin that must stay quiet."""

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


# -- TRN203: the sampler built inside a loop over the configured phases; the epoch loop comes later

SAMPLER_BUILT_IN_A_LOOP = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(opt, model, optimizer, datasets):
    for phase, dataset in datasets.items():
        if phase == "train":
            train_sampler = DistributedSampler(dataset, shuffle=opt["shuffle"])
            train_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    for epoch in range(100):
        for x, y in train_loader:
            model.feed(x, y)
            model.optimize()
'''


def test_sampler_built_before_an_epoch_loop_without_events():
    assert _lines(SAMPLER_BUILT_IN_A_LOOP, "TRN203") == [12]
    fixed = fix_source(SAMPLER_BUILT_IN_A_LOOP, "t.py", CONFIG, unsafe=True)[0]
    ast.parse(fixed)
    assert "train_sampler.set_epoch(epoch)" in fixed and not _found(fixed, "TRN203")


def test_epoch_loop_before_the_sampler_is_quiet():
    source = SAMPLER_BUILT_IN_A_LOOP.replace("    for epoch in range(100):\n        for x, y in train_loader:\n",
                                             "    for epoch in range(100):\n        for x, y in other_loader:\n")
    assert _found(source, "TRN203") == []


# -- TRN203: library loaders (PyG's DataLoader takes sampler=, DGL's builds its own under use_ddp)

PYG_LOADER = '''import torch
from torch.utils.data.distributed import DistributedSampler
from torch_geometric.loader import DataLoader


def run(rank, world_size, dataset, model, optimizer):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=128, sampler=sampler)
    for epoch in range(1, 51):
        model.train()
        for data in loader:
            optimizer.zero_grad()
            model(data).sum().backward()
            optimizer.step()
'''

DGL_LOADER = '''import dgl
import torch


def run(g, train_idx, sampler, model, optimizer, n_gpus):
    loader = dgl.dataloading.NodeDataLoader(g, train_idx, sampler, use_ddp=n_gpus > 1, batch_size=64,
                                            shuffle=True)
    for epoch in range(10):
        model.train()
        for input_nodes, seeds, blocks in loader:
            optimizer.zero_grad()
            model(blocks).sum().backward()
            optimizer.step()
'''


def test_pyg_loader_with_a_distributed_sampler():
    assert _lines(PYG_LOADER, "TRN203") == [11]


def test_dgl_loader_with_use_ddp_has_its_own_set_epoch():
    found = _found(DGL_LOADER, "TRN203")
    assert [f.range.start.line + 1 for f in found] == [10]
    assert "`loader`" in found[0].message
    assert found[0].fix is None  # DGL raises in set_epoch when use_ddp is off: n_gpus > 1 varies per run


def test_dgl_loader_fix_when_always_distributed():
    source = DGL_LOADER.replace("use_ddp=n_gpus > 1", "use_ddp=True")
    fixed = fix_source(source, "t.py", CONFIG, unsafe=True)[0]
    assert "loader.set_epoch(epoch)" in fixed and not _found(fixed, "TRN203")


def test_dgl_loader_quiet_without_shuffle_or_ddp():
    assert _found(DGL_LOADER.replace("shuffle=True", "shuffle=False"), "TRN203") == []
    assert _found(DGL_LOADER.replace("use_ddp=n_gpus > 1, ", ""), "TRN203") == []
    assert _found(DGL_LOADER.replace("    for epoch in range(10):\n",
                                     "    for epoch in range(10):\n        loader.set_epoch(epoch)\n"),
                  "TRN203") == []


# -- TRN705: an empty list (or [None] * n) that __init__ fills with modules afterwards

FILLED_LIST = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, depth=3):
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.blocks = []
        for i in range(depth):
            block = nn.Linear(4, 4)
            self.blocks.append(block)
        self.norms = [None] * depth
        for i in range(depth):
            self.norms[i] = nn.LayerNorm(4)

    def forward(self, x):
        for block, norm in zip(self.blocks, self.norms):
            x = norm(block(x))
        return self.head(x)
'''


def _built(source: str) -> torch.nn.Module:
    namespace: dict = {}
    exec(compile(source, "net.py", "exec"), namespace)
    return namespace["Net"]()


def test_list_filled_with_modules_later():
    assert _lines(FILLED_LIST, "TRN705") == [9, 13]
    assert len(list(_built(FILLED_LIST).parameters())) == 2  # the bug: only the head is registered
    fixed = fix_source(FILLED_LIST, "t.py", CONFIG, unsafe=True)[0]
    assert "self.blocks = nn.ModuleList()" in fixed and "self.norms = [None] * depth" in fixed
    model = _built(fixed)
    assert len(list(model.parameters())) == 2 + 3 * 2  # the blocks' weights now train
    model(torch.zeros(1, 4))
    assert _lines(fixed, "TRN705") == [13]  # `[None] * n` has no ModuleList equivalent: no fix


@pytest.mark.parametrize("fill", [
    "self.blocks.append((i, i))",                       # a list of int tuples
    "self.blocks.append(nn.Parameter(torch.zeros(4)))",  # parameters: nn.ParameterList's business
    "self.blocks.append(nn.ReLU())",                     # no weights, nothing lost
    "self.blocks.append(make_block(i))",                 # unknown: what it returns is not known here
])
def test_list_filled_with_other_things_is_quiet(fill):
    source = FILLED_LIST.replace("self.blocks.append(block)", fill)
    assert 9 not in _lines(source, "TRN705")


def test_list_registered_afterwards_is_quiet():
    source = FILLED_LIST.replace("        self.norms = [None] * depth\n",
                                 "        self.blocks = nn.ModuleList(self.blocks)\n        self.norms = [None] * depth\n")
    assert 9 not in _lines(source, "TRN705")
    _built(source)


# -- TRN602: what the loaded file holds, known from the loaded object itself

LOAD_USED_AS_MODULE = '''import torch


class Generator:
    def __init__(self, path):
        self.net = torch.load(path, map_location=torch.device("cpu"))
        self.net.eval()
'''

LOAD_ANNOTATED = '''import torch


class Forecaster:
    def save(self, path):
        torch.save(self, path)

    @staticmethod
    def load(path):
        with open(path, "rb") as f:
            model: Forecaster = torch.load(f, map_location="cpu")
        return model
'''


def test_load_used_as_a_module():
    found = _found(LOAD_USED_AS_MODULE, "TRN602")
    assert [f.range.start.line + 1 for f in found] == [6]
    assert "self.net.eval()" in found[0].message
    fixed = fix_source(LOAD_USED_AS_MODULE, "t.py", CONFIG, unsafe=True)[0]
    assert "weights_only=False" in fixed and not _found(fixed, "TRN602")


def test_load_annotated_as_a_class_of_the_file():
    assert _lines(LOAD_ANNOTATED, "TRN602") == [11]


@pytest.mark.parametrize("source", [
    LOAD_USED_AS_MODULE.replace("self.net.eval()", "self.model.load_state_dict(self.net)"),  # a state dict
    LOAD_USED_AS_MODULE.replace("self.net.eval()", "self.net = build()\n        self.net.eval()"),  # rebound
    LOAD_USED_AS_MODULE.replace("map_location=", "weights_only=False, map_location="),
    LOAD_ANNOTATED.replace("model: Forecaster", "model: dict"),
    LOAD_ANNOTATED.replace("class Forecaster:", "class State(TypedDict):\n    step: int\n\n\nclass Forecaster:")
                  .replace("model: Forecaster", "model: State").replace("torch.save(self, path)", "pass"),
])
def test_weights_only_loads_are_quiet(source):
    assert _found(source, "TRN602") == []


def test_a_pickled_module_is_refused_by_the_default_load(tmp_path):
    """The claim, on the installed torch: the default torch.load refuses a whole module."""
    if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 6):
        pytest.skip("weights_only=True is the default from torch 2.6")
    path = tmp_path / "net.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(Exception, match="[Ww]eights only load failed"):
        torch.load(path)
    assert isinstance(torch.load(path, weights_only=False), torch.nn.Linear)


# -- TRN204: Process(target=fn) under the spawn start method starts a fresh interpreter

SPAWNED_PROCESS = '''import numpy as np
import torch
import torch.multiprocessing as mp


def play(queue, steps):
    for _ in range(steps):
        queue.put(np.random.rand() + torch.rand(1).item())
    queue.put(None)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    np.random.seed(0)
    torch.manual_seed(0)
    queue = mp.Queue()
    proc = mp.Process(target=play, args=(queue, 10))
    proc.start()
'''


def test_process_target_under_spawn_is_a_spawned_worker():
    assert _lines(SPAWNED_PROCESS, "TRN204") == [6]


def test_process_target_under_fork_is_quiet():
    assert _found(SPAWNED_PROCESS.replace('    mp.set_start_method("spawn")\n', ""), "TRN204") == []
    assert _found(SPAWNED_PROCESS.replace('"spawn"', '"fork"'), "TRN204") == []


# -- TRN502: batches from next(iter(loader)), the loader a parameter that every caller fills

PASSED_LOADER = '''import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, optimizer, labeled_loader, steps, device):
    batches = iter(labeled_loader)
    for step in range(steps):
        try:
            inputs, targets = next(batches)
        except StopIteration:
            batches = iter(labeled_loader)
            inputs, targets = next(batches)
        inputs = inputs.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    dataset = TensorDataset(torch.randn(16, 3), torch.randn(16, 1))
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    model = torch.nn.Linear(3, 1)
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), loader, 8, "cpu")


if __name__ == "__main__":
    main()
'''


def test_loader_passed_by_the_caller_and_drawn_with_next():
    assert _lines(PASSED_LOADER, "TRN502") == [13, 14]
    fixed = fix_source(PASSED_LOADER, "t.py", CONFIG)[0]
    assert "DataLoader(dataset, batch_size=4, shuffle=True, pin_memory=True)" in fixed
    assert not _found(fixed, "TRN502")
    exec(compile(fixed, "t.py", "exec"), {"__name__": "__main__"})  # still runs (pinning is skipped without a GPU)


@pytest.mark.parametrize("change", [
    ("shuffle=True)", "shuffle=True, pin_memory=True)"),  # pinned
    ("    train(model, torch.optim", "    train(model, optimizer=None, labeled_loader=make(), steps=1, device=0)\n"
                                     "    train(model, torch.optim"),  # another caller passes an unknown object
    ("    for step in range(steps):", "    for step in range(steps):\n        break"),  # not reached in a loop: no
])
def test_passed_loader_quiet(change):
    source = PASSED_LOADER.replace(*change)
    if change[0].startswith("    for step"):
        source = source.replace("        loss.backward()\n", "").replace("        optimizer.step()\n", "")
    assert _found(source, "TRN502") == []


# -- TRN203: the loader built by the caller, the epoch loop in the function it is passed to

PASSED_DISTRIBUTED_LOADER = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def fit(model, optimizer, loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


def main(model, optimizer, dataset):
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    fit(model, optimizer, epochs=10, loader=train_loader)
'''


def test_distributed_loader_passed_to_the_epoch_loop():
    assert _lines(PASSED_DISTRIBUTED_LOADER, "TRN203") == [8]
    fixed = fix_source(PASSED_DISTRIBUTED_LOADER, "t.py", CONFIG, unsafe=True)[0]
    assert 'if hasattr(loader.sampler, "set_epoch"):\n            loader.sampler.set_epoch(epoch)' in fixed
    assert not _found(fixed, "TRN203")


@pytest.mark.parametrize("change", [
    ("DistributedSampler(dataset)", "DistributedSampler(dataset, shuffle=False)"),
    ("loader=train_loader", "loader=other_loader"),
    ("    for epoch in range(epochs):\n", "    for epoch in range(epochs):\n        loader.sampler.set_epoch(epoch)\n"),
])
def test_passed_loader_quiet_cases(change):
    assert _found(PASSED_DISTRIBUTED_LOADER.replace(*change), "TRN203") == []


def test_list_of_modules_registered_by_setattr_is_quiet():
    source = FILLED_LIST.replace("            self.blocks.append(block)",
                                 "            setattr(self, f'block{i}', block)\n            self.blocks.append(block)")
    assert 9 not in _lines(source, "TRN705")
    assert len(list(_built(source).parameters())) == 2 + 3 * 2  # registered: nothing to report


# -- TRN102: the evaluation loop in a helper, the eval() switch in its callers

EVALUATED_BY_CALLER = '''import torch
import torch.nn.functional as F


def evaluate(net, loader):
    correct = 0
    for x, y in loader:
        correct += (net(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def train_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def main(model, train_loader, val_loader, optimizer):
    for epoch in range(10):
        model.train()
        train_epoch(model, train_loader, optimizer)
        model.eval()
        print(evaluate(model, val_loader))
'''


def test_model_evaluated_by_every_caller():
    found = _found(EVALUATED_BY_CALLER, "TRN102")
    assert [f.range.start.line + 1 for f in found] == [8]
    assert "every caller puts it in eval mode" in found[0].message
    fixed = fix_source(EVALUATED_BY_CALLER, "t.py", CONFIG)[0]
    assert "@torch.no_grad()\ndef evaluate(net, loader):" in fixed and not _found(fixed, "TRN102")


@pytest.mark.parametrize("change", [
    ("        print(evaluate(model, val_loader))",
     "        with torch.no_grad():\n            print(evaluate(model, val_loader))"),  # the caller disables grad
    ("        model.eval()\n", ""),                                                       # still in train mode
    ("        print(evaluate(model, val_loader))",
     "        print(evaluate(model, val_loader))\n        model.train()\n        evaluate(model, train_loader)"),
    ("        correct += (net(x).argmax(1) == y).sum().item()",
     "        correct += (net(x).argmax(1) == y).sum().item()\n        net.zero_grad()\n"
     "        F.cross_entropy(net(x), y).backward()"),                                    # it wants gradients
])
def test_model_evaluated_by_callers_quiet(change):
    assert _found(EVALUATED_BY_CALLER.replace(*change), "TRN102") == []


# -- TRN101: a loop that trains through an in-file helper, its summed loss returned

TRAINS_THROUGH_HELPER = '''import torch
import torch.nn as nn


def train_step(model, opt, x, y):
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss, out


def fit(model, opt, loader):
    total = 0
    for x, y in loader:
        loss, _ = train_step(model, opt, x, y)
        total += loss
    return total / len(loader)
'''


def test_loss_summed_in_a_loop_that_trains_through_a_helper():
    assert _lines(TRAINS_THROUGH_HELPER, "TRN101") == [18]


def test_loss_summed_in_a_loop_that_does_not_train_is_quiet():
    source = TRAINS_THROUGH_HELPER.replace("    loss.backward()\n    opt.step()\n", "")
    assert _found(source, "TRN101") == []


# -- TRN701: an ignite Engine's process function is one iteration of the engine's loop

ENGINE_STEP = '''import torch
import torch.nn.functional as F
from ignite.engine import Engine

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(engine, batch):
    model.train()
    x, y = batch
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


trainer = Engine(train_step)
'''


def test_engine_process_function_without_zero_grad():
    found = _found(ENGINE_STEP, "TRN701")
    assert [f.range.start.line + 1 for f in found] == [13]
    fixed = fix_source(ENGINE_STEP, "t.py", CONFIG)[0]
    assert "    optimizer.zero_grad()\n    loss.backward()" in fixed and not _found(fixed, "TRN701")


@pytest.mark.parametrize("change", [
    ("    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n"),
    ("trainer = Engine(train_step)\n", "trainer = Engine(train_step)\n\n\n"
     "@trainer.on(Events.ITERATION_STARTED)\ndef reset(engine):\n    optimizer.zero_grad()\n"),
    ("trainer = Engine(train_step)\n", "trainer = other_engine(train_step)\n"),  # not known to be an engine
])
def test_engine_process_function_quiet(change):
    assert _found(ENGINE_STEP.replace(*change), "TRN701") == []
