"""Facts the collect walk records for a block (analysis/collect.py)."""

from __future__ import annotations

import libcst as cst

from traindoctor.lint.analysis.collect import BlockAnalysis
from traindoctor.lint.analysis.names import Names, top_level_aliases


def _facts(source: str):
    module = cst.parse_module(source)
    return BlockAnalysis(module, Names(top_level_aliases(module)), source).facts


def test_each_target_of_a_chained_assignment_holds_its_own_object():
    """`a, b = c, d = (loss, layer)`: the second target list once paired with what the first
    one's last element held (the layer for both `c` and `d`)."""
    objects = _facts("import torch.nn as nn\n"
                     "a, b = c, d = nn.CrossEntropyLoss(), nn.Linear(2, 2)\n").objects
    assert {obj.name: obj.callee for obj in objects} == {
        "a": "torch.nn.CrossEntropyLoss", "b": "torch.nn.Linear",
        "c": "torch.nn.CrossEntropyLoss", "d": "torch.nn.Linear"}
