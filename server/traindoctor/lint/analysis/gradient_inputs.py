"""Inputs a block of code marks as needing a gradient, and the calls it hands them to.

`x.requires_grad = True`, `x.requires_grad_()`, `x = x.clone().requires_grad_(True)` and
`x = Variable(x, requires_grad=True)` (also one element of a tuple assignment) mark `x`. Marking
alone only makes autograd record a graph; the gradient is used where the marked tensor is handed
to code that reads it (a criterion that calls `autograd.grad` on its input, Sobolev training).
Which callee may read it is the caller's question: this module only finds the hand-overs.

Layer 1 of the analysis: it imports only names.py and the walker."""

from __future__ import annotations

import libcst as cst

from ..walk import iter_nodes
from .names import dotted_name


def _is_true(node: cst.BaseExpression | None) -> bool:
    return type(node) is cst.Name and node.value == "True"  # type: ignore[attr-defined]


def _marks(value: cst.BaseExpression) -> bool:
    """`value` makes a tensor that requires grad: a call with `requires_grad=True`, or ending in
    `.requires_grad_()` / `.requires_grad_(True)`."""
    if type(value) is not cst.Call:
        return False
    if any(a.keyword is not None and a.keyword.value == "requires_grad" and _is_true(a.value) for a in value.args):
        return True
    func = value.func
    return (type(func) is cst.Attribute and func.attr.value == "requires_grad_"
            and (not value.args or _is_true(value.args[0].value)))


def marked_inputs(block: cst.CSTNode) -> frozenset[str]:
    """Dotted names that `block` marks as requiring grad."""
    marked: set[str] = set()
    for node in iter_nodes(block):
        kind = type(node)
        if kind is cst.Assign:
            pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
            for target in node.targets:
                left, right = target.target, node.value
                if type(left) is cst.Attribute and left.attr.value == "requires_grad" and _is_true(right):
                    name = dotted_name(left.value)
                    if name is not None:
                        marked.add(name)
                    continue
                if type(left) in (cst.Tuple, cst.List) and type(right) in (cst.Tuple, cst.List) \
                        and len(left.elements) == len(right.elements):
                    pairs += [(a.value, b.value) for a, b in zip(left.elements, right.elements)]
                else:
                    pairs.append((left, right))
            for left, right in pairs:
                name = dotted_name(left)
                if name is not None and _marks(right):
                    marked.add(name)
        elif kind is cst.Expr and _marks(node.value):  # `x.requires_grad_()` on its own line
            name = dotted_name(node.value.func.value)  # type: ignore[attr-defined]
            if name is not None and node.value.func.attr.value == "requires_grad_":  # type: ignore[attr-defined]
                marked.add(name)
    return frozenset(marked)


def handed_over(block: cst.CSTNode) -> list[cst.Call]:
    """The calls of `block` that take an input `block` marks as requiring grad as an argument."""
    marked = marked_inputs(block)
    if not marked:
        return []
    return [node for node in iter_nodes(block) if type(node) is cst.Call and not _marks(node) and
            any(dotted_name(a.value) in marked for a in node.args)]
