"""TRN602 through a name bound more than once: `best = 0.0`, then `best = acc` with `acc = np.mean(...)`, then
`torch.save({..., "best_acc": best}, path)`: the save reads the last binding above it, a NumPy scalar, which
torch >= 2.6's weights-only `torch.load` refuses. Checked on the installed torch: the load raises, and the
look-alike that saves `float(acc)` loads."""

from __future__ import annotations

import pickle

import pytest
from torch import nn

from traindoctor.config import Config
from traindoctor.lint import lint_source

SOURCE = '''\
import numpy as np
import torch


def train(model, path):
    best = 0.0
    for epoch in range(2):
        acc = np.mean([1.0, 0.0]) + epoch
        if acc > best:
            best = acc
            torch.save({"model": model.state_dict(), "best_acc": best, "epoch": epoch}, path)


def resume(model, path):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return state["epoch"]
'''

PLAIN = SOURCE.replace("            best = acc\n", "            best = float(acc)\n")


def _lines(source: str) -> list[int]:
    result = lint_source(source, "train.py", Config(select=("TRN602",)))
    assert result.error is None, result.error
    return [f.range.start.line + 1 for f in result.findings]


def _round_trip(source: str, tmp_path) -> int:
    namespace: dict = {}
    exec(compile(source, "train.py", "exec"), namespace)
    path = tmp_path / "best.pt"
    namespace["train"](nn.Linear(2, 2), path)
    return namespace["resume"](nn.Linear(2, 2), path)


def test_the_last_binding_above_the_save_is_what_it_writes(tmp_path) -> None:
    assert _lines(SOURCE) == [15]
    with pytest.raises(pickle.UnpicklingError):
        _round_trip(SOURCE, tmp_path)


def test_a_python_float_loads_and_stays_quiet(tmp_path) -> None:
    assert _lines(PLAIN) == []
    assert _round_trip(PLAIN, tmp_path) == 1


def test_a_binding_below_the_save_is_not_what_it_writes() -> None:
    source = SOURCE.replace("            best = acc\n", "            best = 1.0\n").replace(
        '"epoch": epoch}, path)\n', '"epoch": epoch}, path)\n            best = acc\n', 1)
    assert _lines(source) == []
