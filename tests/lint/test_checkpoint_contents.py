"""TRN602 (issue 27, d-batch dev misses): what a checkpoint holds, read further than the load's own
name. (1) The loaded value or an item of it is used as an object (`ckpt["optimizer"].state_dict()`),
followed along the function's def-use chains. (2) A saved dict entry is an attribute of `self`
that a method fills with what another method returns (a list of per-epoch `np.mean` values).
Each shape is a real program: the default load really raises on the installed torch, the look-alike
really loads, and the offered fix (weights_only=False) really loads."""

from __future__ import annotations

import importlib
import pickle

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config(select=("strict",))
TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(TORCH < (2, 6), reason="weights_only=True is the default from torch 2.6")


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "t.py", CONFIG).findings if f.code == "TRN602"]


def _import(tmp_path, monkeypatch, name: str, source: str):
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


# -- (1) an item of the loaded value used as an object, on one path

ITEMS = '''import torch


def save(model, optimizer, path, whole):
    if whole:
        torch.save({"model": model, "optimizer": optimizer}, path)
    else:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)


def restore(path, model, whole):
    if whole:
        saved = torch.load(path)
        new_model = saved["model"]
        new_optimizer = saved["optimizer"]
    else:
        state = torch.load(path)
        new_model = model
        new_model.load_state_dict(state["model"])
        new_optimizer = torch.optim.SGD(new_model.parameters(), lr=0.1)
        new_optimizer.load_state_dict(state["optimizer"])
    return new_model, new_optimizer.state_dict()
'''


def test_an_item_of_the_load_used_as_an_object(tmp_path, monkeypatch):
    assert _lines(ITEMS) == [13]  # not the state-dict load of line 17
    message = next(f.message for f in lint_source(ITEMS, "t.py", CONFIG).findings if f.code == "TRN602")
    assert "new_optimizer.state_dict()" in message
    fixed = fix_source(ITEMS, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    before = _import(tmp_path, monkeypatch, "items_before", ITEMS)
    after = _import(tmp_path, monkeypatch, "items_after", fixed)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before.save(model, optimizer, tmp_path / "whole.pt", True)
    before.save(model, optimizer, tmp_path / "state.pt", False)
    with pytest.raises(pickle.UnpicklingError):
        before.restore(tmp_path / "whole.pt", model, True)
    assert isinstance(after.restore(tmp_path / "whole.pt", model, True)[0], torch.nn.Linear)
    assert before.restore(tmp_path / "state.pt", model, False)[1]["param_groups"]  # the look-alike loads


@pytest.mark.parametrize("change", [
    # the loaded item is replaced on every path before the object use
    ('        new_optimizer = saved["optimizer"]\n',
     '        new_optimizer = saved["optimizer"]\n        new_optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n'),
    # items used as state dicts only
    ('    return new_model, new_optimizer.state_dict()', '    return new_model, new_optimizer'),
    ('        saved = torch.load(path)', '        saved = torch.load(path, weights_only=False)'),
])
def test_an_item_of_the_load_used_as_an_object_quiet(change):
    old, new = change
    assert old in ITEMS
    assert 13 not in _lines(ITEMS.replace(old, new))


# -- (2) a saved attribute that a method fills with another method's NumPy value

HISTORY = '''import numpy as np
import torch


class Runner:
    def __init__(self, model, optimizer, batches):
        self.model = model
        self.optimizer = optimizer
        self.batches = batches
        self.losses = []

    def _epoch(self):
        losses = []
        for x, y in self.batches:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        mean = np.mean(losses)
        return mean

    def train(self, epochs):
        for _ in range(epochs):
            loss = self._epoch()
            self.losses.append(loss)

    def save_checkpoint(self, filename):
        checkpoint = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                      "loss": self.losses}
        torch.save(checkpoint, filename)

    def load_checkpoint(self, filename):
        checkpoint = torch.load(filename)
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.losses = checkpoint["loss"]
'''


def test_a_saved_attribute_filled_with_numpy_values(tmp_path, monkeypatch):
    assert _lines(HISTORY) == [34]
    message = next(f.message for f in lint_source(HISTORY, "t.py", CONFIG).findings if f.code == "TRN602")
    assert "`numpy.mean`" in message and "Runner._epoch" in message and "Runner.train" in message
    fixed = fix_source(HISTORY, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    plain = HISTORY.replace("        return mean\n", "        return float(mean)\n")
    assert _lines(plain) == []  # the look-alike: plain floats
    programs = [_import(tmp_path, monkeypatch, name, source)
                for name, source in (("history_before", HISTORY), ("history_after", fixed), ("history_plain", plain))]
    batches = [(torch.randn(4, 2), torch.randn(4, 1))]
    for index, program in enumerate(programs):
        model = torch.nn.Linear(2, 1)
        runner = program.Runner(model, torch.optim.SGD(model.parameters(), lr=0.1), batches)
        runner.train(2)
        path = tmp_path / f"{index}.pt"
        runner.save_checkpoint(path)
        if index == 0:
            with pytest.raises(pickle.UnpicklingError):
                runner.load_checkpoint(path)
        else:
            runner.load_checkpoint(path)
            assert len(runner.losses) == 2


@pytest.mark.parametrize("change", [
    ("            self.losses.append(loss)", "            self.losses.append(loss.item())"),  # not a NumPy value
    ('                      "loss": self.losses}', '                      "loss": list(map(float, self.losses))}'),
    ("        torch.save(checkpoint, filename)", "        torch.save(checkpoint, filename + '.full')"),
])
def test_a_saved_attribute_filled_with_numpy_values_quiet(change):
    old, new = change
    assert old in HISTORY
    assert _lines(HISTORY.replace(old, new)) == []


# -- (3) a whole object of a class of this file saved, and loaded back through a path of the same shape
# (pytorch-tabular's disk cache, an f-batch dev miss: `torch.save(train_dataset, cache / "train_dataset")`
# and `torch.load(cache / f"{tag}_dataset")`)

CACHE = '''from pathlib import Path

import torch
from torch.utils.data import Dataset


class Rows(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 3)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


class DataModule:
    def __init__(self, cache_dir):
        self.cache_dir = Path(cache_dir)

    def setup(self):
        train_dataset = Rows(8)
        validation_dataset = Rows(4)
        torch.save(train_dataset, self.cache_dir / "train_dataset")
        torch.save(validation_dataset, self.cache_dir / "validation_dataset")

    def load(self, tag="train"):
        return torch.load(self.cache_dir / f"{tag}_dataset")
'''


def test_a_whole_dataset_cached_and_loaded_through_an_f_string_path(tmp_path, monkeypatch):
    assert _lines(CACHE) == [29]
    message = next(f.message for f in lint_source(CACHE, "t.py", CONFIG).findings if f.code == "TRN602")
    assert "`torch.save(train_dataset, ...)`, which saves a `Rows` object" in message
    fixed = fix_source(CACHE, "t.py", CONFIG, unsafe=True)[0]
    assert _lines(fixed) == []
    before, after = (_import(tmp_path, monkeypatch, name, source)
                     for name, source in (("cache_before", CACHE), ("cache_after", fixed)))
    for index, program in enumerate((before, after)):
        (tmp_path / str(index)).mkdir()
        module = program.DataModule(tmp_path / str(index))
        module.setup()
        if index == 0:
            with pytest.raises(pickle.UnpicklingError):
                module.load("validation")
        else:
            assert len(module.load("validation")) == 4


@pytest.mark.parametrize("change", [
    ('return torch.load(self.cache_dir / f"{tag}_dataset")', 'return torch.load(self.cache_dir / f"{tag}_model")'),
    ('return torch.load(self.cache_dir / f"{tag}_dataset")', 'return torch.load(Path("/data") / f"{tag}_dataset")'),
    ("torch.save(train_dataset, ", "torch.save(train_dataset.x, "),
])
def test_a_cached_dataset_look_alike_is_quiet(change):
    old, new = change
    source = CACHE.replace(old, new)
    if "train_dataset.x" in new:
        source = source.replace("torch.save(validation_dataset, ", "torch.save(validation_dataset.x, ")
    assert source != CACHE
    assert _lines(source) == []
