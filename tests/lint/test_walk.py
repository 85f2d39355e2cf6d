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


_EVERY_ORDER_CASE = """\
@decorate(k=1)
class A(Base, metaclass=Meta):
    def f(self, a, /, b, *c, d, **e) -> int:
        try:
            return g(a, key=b) if a else d
        except ValueError as error:
            raise error
        match a:
            case [x] if x > 0:
                return x
"""


def test_child_nodes_are_the_children_that_hold_code_in_source_order():
    """`child_nodes` stands in for libcst's `.children` (which runs a visitor per node: it was
    about half of a whole-tree check): it may leave out only whitespace, punctuation and
    operators, never a child that holds a name, and it keeps source order, which rules read
    as "before" and "after"."""
    import pathlib

    import torch

    from traindoctor.lint.walk import child_nodes, iter_nodes

    sources = [_EVERY_ORDER_CASE, (pathlib.Path(torch.__file__).parent / "optim" / "adamw.py").read_text()]
    checked = 0
    for source in sources:
        for node in iter_nodes(cst.parse_module(source)):
            kept = list(child_nodes(node))
            everything = list(node.children)
            assert [c for c in everything if any(c is k for k in kept)] == kept, type(node)
            for left_out in (c for c in everything if not any(c is k for k in kept)):
                assert not any(type(n) is cst.Name for n in _all_nodes(left_out)), (type(node), type(left_out))
            checked += 1
    assert checked > 400


def test_lint_code_does_not_walk_libcst_children():
    import pathlib
    import re

    import traindoctor.lint as lint

    root = pathlib.Path(lint.__file__).parent
    users = [str(path.relative_to(root)) for path in sorted(root.rglob("*.py"))
             if path.name != "walk.py" and re.search(r"\.children\b(?!`)", path.read_text())]
    assert users == []


def _all_nodes(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _all_nodes(child)


def test_child_nodes_memo_answers_only_for_the_node_it_was_asked_about():
    """child_nodes keeps each node's children for the rest of the lint; a tree parsed after
    forget_children (whose nodes may reuse freed ids) gets its own children."""
    from traindoctor.lint.walk import child_nodes, forget_children, iter_nodes

    first = cst.parse_module("a = f(x)\n")
    assert [type(n).__name__ for n in iter_nodes(first)][:3] == ["Module", "SimpleStatementLine", "Assign"]
    assert child_nodes(first) is child_nodes(first)
    forget_children()
    del first
    second = cst.parse_module("for i in range(3):\n    g(i)\n")
    assert [type(n).__name__ for n in child_nodes(second.body[0])] == ["Name", "Call", "IndentedBlock"]
    forget_children()
