"""Which branch of which `if` each node of a function lies on, and the function's code with one
condition fixed: what runs when a shared train/evaluate function is called in evaluation mode
(`def run_epoch(model, loader, is_train)`: `if is_train: model.train() else: model.eval()`, the
forward for both, `if is_train: loss.backward()`).

A condition is the source of an `if` test without a leading `not` (`is_train`, `mode == "train"`),
with the value it has on that branch: `if not is_train:` puts its body on ("is_train", False).
Nested functions, lambdas and classes are not entered: their code runs elsewhere."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes
from .scopes import code

Branch = tuple[str, bool]  # (condition source, the value it has there)

_OPAQUE = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def _test(test: cst.BaseExpression) -> Branch:
    """`not x` is ("x", False); anything else is itself, true."""
    value = True
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, value = test.expression, not value
    return code(test.with_changes(lpar=[], rpar=[]) if test.lpar else test), value


def branches(function: cst.FunctionDef) -> dict[int, frozenset[Branch]]:
    """id(node) -> the branches it lies on, for every node of the function's body."""
    found: dict[int, frozenset[Branch]] = {}
    todo: list[tuple[cst.CSTNode, frozenset[Branch]]] = [(function.body, frozenset())]
    while todo:
        node, on = todo.pop()
        found[id(node)] = on
        if isinstance(node, _OPAQUE):
            continue
        if type(node) is cst.If:
            condition, value = _test(node.test)
            todo.append((node.test, on))
            todo.append((node.body, on | {(condition, value)}))
            if node.orelse is not None:  # `else:` or `elif ...:`, both where the condition is the other value
                todo.append((node.orelse, on | {(condition, not value)}))
            continue
        todo.extend((child, on) for child in child_nodes(node))
    return found


class _Specialise(cst.CSTTransformer):
    """Keeps, of each `if` on `condition`, the branch that runs when it has `value`."""

    def __init__(self, condition: str, value: bool) -> None:
        self.condition, self.value = condition, value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's ifs run elsewhere

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.BaseStatement | cst.FlattenSentinel | \
            cst.RemovalSentinel:
        condition, value = _test(original.test)
        if condition != self.condition:
            return updated
        taken = updated.body if value == self.value else updated.orelse
        if taken is None:
            return cst.RemoveFromParent()
        if type(taken) is cst.If:  # an elif: its own test decides from here
            return taken
        block = taken.body if type(taken) is cst.Else else taken  # an if's body is the block itself
        return cst.FlattenSentinel(block.body) if isinstance(block, cst.IndentedBlock) else \
            cst.FlattenSentinel([cst.SimpleStatementLine(block.body)])  # type: ignore[union-attr]


def specialised_code(function: cst.FunctionDef, condition: str, value: bool) -> str:
    """The function body's source with every `if` on `condition` replaced by the branch `value` takes."""
    return code(function.body.visit(_Specialise(condition, value)))
