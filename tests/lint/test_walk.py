"""The walker visits in source order, keeps the walk state current, and leaves no
reference cycle behind: the engine pauses the cycle collector while it lints
(engine.collector_paused), so a cycle per walk would pile up."""

from __future__ import annotations

import gc

import libcst as cst

from traindoctor.lint.analysis.names import Names
from traindoctor.lint.context import WalkState
from traindoctor.lint.walk import walk

SOURCE = """\
import torch
x = torch.zeros(3) * 2.0
def train(model):
    for batch in model:
        with torch.no_grad():
            y = batch
"""


class _Recorder:
    def __init__(self, state: WalkState) -> None:
        self.state = state
        self.seen: list[tuple[str, int, int, int, bool]] = []

    def _note(self, node: cst.CSTNode) -> None:
        state = self.state
        self.seen.append((type(node).__name__, state.order, len(state.stack), len(state.loops), state.in_no_grad))

    visit_Module = visit_SimpleStatementLine = visit_Import = visit_For = visit_Assign = _note


def _walk(module: cst.Module) -> tuple[_Recorder, WalkState]:
    state = WalkState(Names((("torch", "torch"),)))
    recorder = _Recorder(state)
    walk(module, [recorder], state)
    return recorder, state


def test_the_walk_keeps_order_stack_loops_and_no_grad_current():
    recorder, state = _walk(cst.parse_module(SOURCE))
    assert [entry[0] for entry in recorder.seen[:3]] == ["Module", "SimpleStatementLine", "Import"]
    orders = [entry[1] for entry in recorder.seen]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    last_assign = recorder.seen[-1]
    assert last_assign[0] == "Assign" and last_assign[3] == 2 and last_assign[4]  # function + for; no_grad
    assert state.stack == [] and state.loops == [] and state.functions == [] and not state.in_no_grad


def test_a_walk_leaves_no_garbage_for_the_cycle_collector():
    module = cst.parse_module(SOURCE)
    _walk(module)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(100):
            _walk(module)
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()
