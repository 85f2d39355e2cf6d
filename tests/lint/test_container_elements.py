"""Containers have element facts: a list of int tuples is not a list of modules, and no
fix ever turns it into an nn.ModuleList. Every variant's fixed code (unsafe fixes
included) is run: the model builds, and its submodules' weights are registered."""

from __future__ import annotations

import pytest
import torch

from traindoctor.config import Config
from traindoctor.lint import fix_source, lint_source

CONFIG = Config()

_MODEL = '''
import torch
import torch.nn as nn
from torch.nn.modules.utils import _pair


class Net(nn.Module):
    def __init__(self, sizes=(3, 5)):
        super().__init__()
        self.kernels = {value}
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(x)
'''

INT_TUPLES = ["[_pair(k) for k in sizes]", "[(k, k) for k in sizes]", "[_pair(3), _pair(5)]",
              "[torch.nn.modules.utils._pair(k) for k in sizes]", "(_pair(3), _pair(5))"]
MODULES = ["[nn.Linear(4, 4) for _ in sizes]", "[nn.Conv2d(1, 1, k) for k in sizes]"]


def _run(source: str) -> torch.nn.Module:
    namespace: dict = {}
    exec(compile(source, "net.py", "exec"), namespace)
    return namespace["Net"]()


@pytest.mark.parametrize("value", INT_TUPLES)
def test_int_tuples_are_not_modules(value):
    source = _MODEL.format(value=value)
    assert not [f for f in lint_source(source, "net.py", CONFIG).findings if f.code == "TRN705"]
    fixed, _ = fix_source(source, "net.py", CONFIG, unsafe=True)
    assert "ModuleList" not in fixed
    net = _run(fixed)
    assert all(isinstance(k, tuple) for k in net.kernels)


@pytest.mark.parametrize("value", MODULES)
def test_a_list_of_modules_is_wrapped_and_its_weights_registered(value):
    source = _MODEL.format(value=value)
    assert [f for f in lint_source(source, "net.py", CONFIG).findings if f.code == "TRN705"]
    before = sum(p.numel() for p in _run(source).parameters())
    fixed, _ = fix_source(source, "net.py", CONFIG, unsafe=True)
    assert "nn.ModuleList(" in fixed
    after = sum(p.numel() for p in _run(fixed).parameters())
    assert after > before  # the listed layers' weights are now the model's
