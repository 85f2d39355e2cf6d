"""Where the code itself says that a value can be exactly 0.

A function that compares a value with 0 (`n == 0`, `n != 0`), clamps it to a positive
minimum (`n.clamp(min=1)`, `torch.clamp(n, min=1)`, `max(n, 1)`) or adds an epsilon to it
(`std + 1e-8`) tells the reader that its author has seen it reach 0. A division or log of
the same value elsewhere in that function, without the guard, is then a hazard the code
states itself, not a guess from the value's name. An `if`/`assert`/conditional expression
on it is a guard of the whole function (the scope's `guarded` names), handled by the rules.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from ..walk import iter_nodes
from .names import arg, dotted_name

# Casts and shape changes that keep which elements are 0: `n.float() == 0` tests `n`.
_KEEPS_ZEROS = ("float", "double", "half", "int", "long", "item", "to", "type_as", "view", "reshape",
                "unsqueeze", "squeeze", "expand", "expand_as", "flatten", "detach", "clone", "cpu", "cuda")
_CLAMPS = ("torch.clamp", "torch.clip", "torch.clamp_min")


def _number(node: cst.BaseExpression) -> float | None:
    if type(node) in (cst.Integer, cst.Float):
        try:
            return float(node.evaluated_value)  # type: ignore[attr-defined]
        except (ValueError, OverflowError):
            return None
    return None


def subject(expr: cst.BaseExpression) -> str | None:
    """The dotted name whose zeros `expr` keeps: `n` for `n`, `n.float()`, `n.item()`."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
            expr.func.attr.value in _KEEPS_ZEROS:  # type: ignore[attr-defined]
        expr = expr.func.value  # type: ignore[attr-defined]
    return dotted_name(expr)


def zero_evidence(root: cst.CSTNode, qualify: Callable[[cst.BaseExpression], str | None],
                  is_epsilon: Callable[[cst.BaseExpression], bool]) -> dict[str, cst.CSTNode]:
    """Names that `root` (a function) compares with 0, clamps to a positive minimum or adds an
    epsilon to, each with the first node that does."""
    found: dict[str, cst.CSTNode] = {}
    for node in iter_nodes(root):
        name = _tested(node, qualify, is_epsilon)
        if name is not None and name not in found:
            found[name] = node
    return found


def _tested(node: cst.CSTNode, qualify, is_epsilon) -> str | None:
    kind = type(node)
    if kind is cst.Comparison and len(node.comparisons) == 1:  # type: ignore[attr-defined]
        test = node.comparisons[0]  # type: ignore[attr-defined]
        if type(test.operator) not in (cst.Equal, cst.NotEqual):
            return None  # `x > 0` selects positive elements; it says nothing about exact zeros
        if _number(test.comparator) == 0.0:
            return subject(node.left)  # type: ignore[attr-defined]
        if _number(node.left) == 0.0:  # type: ignore[attr-defined]
            return subject(test.comparator)
        return None
    if kind is cst.Call:
        func = node.func  # type: ignore[attr-defined]
        qualified = qualify(func) or ""
        if qualified in _CLAMPS or qualified == "max":
            first, low = arg(node, 0, "input"), arg(node, 1, "min")  # type: ignore[arg-type]
            if first is not None and low is not None and _positive(low, is_epsilon):
                return subject(first)
        elif type(func) is cst.Attribute and func.attr.value in ("clamp", "clamp_", "clip", "clamp_min",
                                                                  "clamp_min_"):
            low = arg(node, 0, "min")  # type: ignore[arg-type]
            return subject(func.value) if low is not None and _positive(low, is_epsilon) else None
        return None
    if kind is cst.BinaryOperation and type(node.operator) is cst.Add:  # type: ignore[attr-defined]
        left, right = node.left, node.right  # type: ignore[attr-defined]
        for value, other in ((left, right), (right, left)):
            number = _number(other)
            if (number is not None and 0 < number < 1e-3) or (number is None and is_epsilon(other)):
                return subject(value)
    return None


def _positive(node: cst.BaseExpression, is_epsilon) -> bool:
    number = _number(node)
    return number > 0 if number is not None else is_epsilon(node)
