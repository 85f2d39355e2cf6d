"""Where the code itself says that a value can be exactly 0.

A function that compares a value with 0 (`n == 0`, `n != 0`) or clamps it to a count of
at least 1 (`n.clamp(min=1)`, `torch.clamp(n, min=1)`, `max(n, 1)`) tells the reader that its
author has seen it reach 0. A division or log of the same value elsewhere in that function,
without the guard, is then a hazard the code states itself, not a guess from the value's name.
An epsilon (`sigma + 1e-44`, `std.clamp(min=1e-5)`) is not such evidence: it is often added
defensively to values that are never 0 (noise levels, stds of latents). An `if`/`assert`/
conditional expression on the value guards the whole function (the scope's `guarded` names),
which the rules handle.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from ..walk import subtree_nodes
from .names import arg, dotted_name, literal_number

# Casts and shape changes that keep which elements are 0: `n.float() == 0` tests `n`.
_KEEPS_ZEROS = ("float", "double", "half", "int", "long", "item", "to", "type_as", "view", "reshape",
                "unsqueeze", "squeeze", "expand", "expand_as", "flatten", "detach", "clone", "cpu", "cuda")
_CLAMPS = ("torch.clamp", "torch.clip", "torch.clamp_min")


def subject(expr: cst.BaseExpression) -> str | None:
    """The dotted name whose zeros `expr` keeps: `n` for `n`, `n.float()`, `n.item()`."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute and \
            expr.func.attr.value in _KEEPS_ZEROS:  # type: ignore[attr-defined]
        expr = expr.func.value  # type: ignore[attr-defined]
    return dotted_name(expr)


def zero_evidence(root: cst.CSTNode, qualify: Callable[[cst.BaseExpression], str | None]) -> dict[str, cst.CSTNode]:
    """Names that `root` (a function) compares with 0 or clamps to at least 1, each with the
    first node that does."""
    found: dict[str, cst.CSTNode] = {}
    for node in subtree_nodes(root):
        name = _tested(node, qualify)
        if name is not None and name not in found:
            found[name] = node
    return found


def _tested(node: cst.CSTNode, qualify) -> str | None:
    kind = type(node)
    if kind is cst.Comparison and len(node.comparisons) == 1:  # type: ignore[attr-defined]
        test = node.comparisons[0]  # type: ignore[attr-defined]
        if type(test.operator) not in (cst.Equal, cst.NotEqual):
            return None  # `x > 0` selects positive elements; it says nothing about exact zeros
        if literal_number(test.comparator) == 0.0:
            return subject(node.left)  # type: ignore[attr-defined]
        if literal_number(node.left) == 0.0:  # type: ignore[attr-defined]
            return subject(test.comparator)
        return None
    if kind is cst.Call:
        func = node.func  # type: ignore[attr-defined]
        qualified = qualify(func) or ""
        if qualified in _CLAMPS or qualified == "max":
            first, low = arg(node, 0, "input"), arg(node, 1, "min")  # type: ignore[arg-type]
            if first is not None and low is not None and _count_floor(low):
                return subject(first)
        elif type(func) is cst.Attribute and func.attr.value in ("clamp", "clamp_", "clip", "clamp_min",
                                                                  "clamp_min_"):
            low = arg(node, 0, "min")  # type: ignore[arg-type]
            return subject(func.value) if low is not None and _count_floor(low) else None
    return None


def _count_floor(node: cst.BaseExpression) -> bool:
    """`1` (or another whole number >= 1): the floor of a count, not a defensive epsilon."""
    number = literal_number(node)
    return number is not None and number >= 1 and number == int(number)
