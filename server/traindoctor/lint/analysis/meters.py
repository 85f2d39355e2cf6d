"""What a function does with the tensors it is given, read from its body: folds a parameter into
its own object's state, where it outlives the call (a running average: `self.avg[k] = self.avg[k] *
n + value`), or returns a tensor computed from its parameters by tensor operations (`return
x.max(dim=1)[0].mean()`). Function summaries carry both, so that a call in another file knows that a
tensor with history handed to a meter is kept, and that a helper's result has its argument's history.

A parameter converted to a number (`float(v)`, `v.item()`, `v.detach()`) is not kept."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes, iter_nodes, scope_nodes
from .names import dotted_name, literal_number
from .vocab import vocab


def accumulated_params(function: cst.FunctionDef, params: tuple[str, ...]) -> tuple[str, ...]:
    """Parameters that the method adds into an attribute of `self` (`self.total += v`,
    `self.avg[k] = self.avg[k] * n + v`), unconverted."""
    candidates = set(params) - {"self", "cls"}
    found: set[str] = set()
    for node in scope_nodes(function.body):
        if type(node) is cst.AugAssign and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            if _of_self(node.target):
                found |= _raw_reads(node.value, candidates)
        elif type(node) is cst.Assign and len(node.targets) == 1 and _of_self(node.targets[0].target):
            target = _text(node.targets[0].target)
            if any(_text(inner) == target for inner in iter_nodes(node.value)
                   if type(inner) in (cst.Attribute, cst.Subscript)):
                found |= _raw_reads(node.value, candidates)
    return tuple(sorted(found))


def self_updates(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The method's assignments into its object's state (what `accumulated_params` reads)."""
    found: list[cst.CSTNode] = []
    for node in scope_nodes(function.body):
        if (type(node) is cst.AugAssign and _of_self(node.target)) or \
                (type(node) is cst.Assign and any(_of_self(t.target) for t in node.targets)):
            found.append(node)
    return found


def returned_from_params(function: cst.FunctionDef, params: tuple[str, ...]) -> tuple[str, ...]:
    """Parameters every return value is computed from by tensor operations: a chain of tensor
    methods, indexing and arithmetic on a parameter (not a conversion, not a size or an index)."""
    candidates = set(params) - {"self", "cls"}
    found: set[str] = set()
    returns = [n for n in scope_nodes(function.body) if type(n) is cst.Return]
    if not returns:
        return ()
    for node in returns:
        roots = _tensor_roots(node.value) if node.value is not None else None
        if not roots or not roots <= candidates:
            return ()
        found |= roots
    return tuple(sorted(found))


def _tensor_roots(expr: cst.BaseExpression) -> set[str] | None:
    """The names a tensor expression is computed from, None when it is anything else."""
    v = vocab()
    kind = type(expr)
    if kind is cst.Name:
        return {expr.value}  # type: ignore[union-attr]
    if kind is cst.BinaryOperation:
        left, right = _tensor_roots(expr.left), _tensor_roots(expr.right)  # type: ignore[union-attr]
        if left is None and right is None:
            return None
        if (left is None and literal_number(expr.left) is None) or \
                (right is None and literal_number(expr.right) is None):  # type: ignore[union-attr]
            return None
        return (left or set()) | (right or set())
    if kind is cst.Subscript:
        return _tensor_roots(expr.value)  # type: ignore[union-attr]
    if kind is cst.Call and type(expr.func) is cst.Attribute:  # type: ignore[union-attr]
        method = expr.func.attr.value  # type: ignore[union-attr]
        if method in v.detaching_conversions or method in v.untracked_tensor_methods:
            return None
        return _tensor_roots(expr.func.value)  # type: ignore[union-attr]
    return None


def _of_self(target: cst.BaseExpression) -> bool:
    while type(target) is cst.Subscript:
        target = target.value  # type: ignore[union-attr]
    return (dotted_name(target) or "").startswith("self.")


def _raw_reads(expr: cst.BaseExpression, names: set[str]) -> set[str]:
    """`names` read in `expr` other than through a conversion to a number or a detached tensor."""
    found: set[str] = set()
    conversions = vocab().detaching_conversions
    todo: list[cst.CSTNode] = [expr]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is cst.Call and (dotted_name(node.func) in ("float", "int") or (  # type: ignore[union-attr]
                type(node.func) is cst.Attribute and node.func.attr.value in conversions)):  # type: ignore
            continue
        if kind is cst.Attribute and node.attr.value in conversions:  # type: ignore[union-attr]
            continue
        if kind is cst.Name and node.value in names:  # type: ignore[union-attr]
            found.add(node.value)  # type: ignore[union-attr]
        if kind in (cst.Lambda, cst.FunctionDef):
            continue
        todo.extend(child_nodes(node))
    return found


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
