"""The walker leaves no reference cycle behind: the engine pauses the cycle collector
while it lints (engine.collector_paused), so a cycle per walk would pile up."""

from __future__ import annotations

import gc

import libcst as cst

from traindoctor.lint.walk import walk


def test_a_walk_leaves_no_garbage_for_the_cycle_collector():
    module = cst.parse_module("import torch\nx = torch.zeros(3) * 2.0\n")
    seen: list[str] = []

    def note(node: cst.CSTNode) -> None:
        seen.append(type(node).__name__)

    walk(module, [], note, lambda node: None)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(100):
            walk(module, [], note, lambda node: None)
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()
    assert seen[:3] == ["Module", "SimpleStatementLine", "Import"]
