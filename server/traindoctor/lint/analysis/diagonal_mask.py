"""Masks defined by their diagonal: the self-pairs of a contrastive loss.

`1 - torch.eye(n)`, `~torch.eye(n, dtype=torch.bool)` and `torch.scatter(torch.ones_like(m), 1,
torch.arange(n).view(-1, 1), 0)` (SupContrast's `logits_mask`) are ones except at (i, i): every row and
every column keeps all its other entries. A row sum of a positive value times such a mask (the
denominator of a softmax over the other samples) is therefore never 0 while the row has more than one
entry, whatever the mask is named. Only the forms whose zeros torch's semantics fix are read: a scatter
along dim 0, or at an index that is not one column of `arange`, may zero a whole column.

The converse: a vector compared with itself in another layout (`torch.eq(labels, labels.T)`, `y[:, None] ==
y[None, :]`) is true at (i, i), since an integer label equals itself: every row and column holds a 1, so
its sums are at least 1 until the diagonal is removed (times a mask above).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .names import arg, dotted_name, literal_number, without_moves
from .vocab import vocab

Qualify = Callable[[cst.BaseExpression], "str | None"]


def _called(expr: cst.BaseExpression, qualify: Qualify, names: list[str]) -> bool:
    expr = without_moves(expr)
    return type(expr) is cst.Call and (qualify(expr.func) or "") in names


def _all_ones(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    expr = without_moves(expr)
    if type(expr) is not cst.Call:
        return False
    if (qualify(expr.func) or "") in vocab().ones_factories:
        return True
    return type(expr.func) is cst.Attribute and expr.func.attr.value in vocab().ones_factory_methods


def _one_column_of_range(index: cst.BaseExpression, qualify: Qualify) -> bool:
    """`torch.arange(n).view(-1, 1)` (`reshape(-1, 1)`, `unsqueeze(1)`, `[:, None]`): row i holds i."""
    index = without_moves(index)
    if type(index) is cst.Subscript:  # arange(n)[:, None]
        parts = [s.slice for s in index.slice]
        if len(parts) == 2 and type(parts[0]) is cst.Slice and parts[0].lower is None and parts[0].upper is None \
                and type(parts[1]) is cst.Index and type(parts[1].value) is cst.Name and parts[1].value.value == "None":
            return _called(index.value, qualify, vocab().index_ranges)
        return False
    if type(index) is not cst.Call or type(index.func) is not cst.Attribute:
        return False
    method, shape = index.func.attr.value, [literal_number(a.value) for a in index.args]
    if method in ("view", "reshape") and shape == [-1, 1] or method == "unsqueeze" and shape in ([1], [-1]):
        return _called(index.func.value, qualify, vocab().index_ranges)
    return False


def diagonal_scatter(call: cst.Call, qualify: Qualify) -> bool:
    """`torch.scatter(ones, 1, arange(n).view(-1, 1), 0)` or `ones.scatter(1, ...)`: 0 at (i, i) only."""
    function = qualify(call.func) or ""
    if function == "torch.scatter":
        source, rest = arg(call, 0, "input"), 1
    elif type(call.func) is cst.Attribute and call.func.attr.value == "scatter" and not function.startswith("torch."):
        source, rest = call.func.value, 0
    else:
        return False
    dim, index = arg(call, rest, "dim"), arg(call, rest + 1, "index")
    value = arg(call, rest + 2, "value")
    # a 2-D scatter (the index is one column): dim -1 is dim 1
    return source is not None and index is not None and _all_ones(source, qualify) and literal_number(dim) in (1, -1) \
        and type(value) in (cst.Integer, cst.Float) and float(value.value) == 0.0 \
        and _one_column_of_range(index, qualify)


def identity_complement(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """`1 - torch.eye(n)` or `~torch.eye(n, dtype=torch.bool)`: ones off the diagonal, 0 on it."""
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.BitInvert:
        return _called(expr.expression, qualify, vocab().identity_factories)
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Subtract:
        left = expr.left
        one = type(left) in (cst.Integer, cst.Float) and float(left.value) == 1.0
        return (one or _all_ones(left, qualify)) and _called(expr.right, qualify, vocab().identity_factories)
    return False


def _layout_base(expr: cst.BaseExpression) -> str | None:
    """The name whose elements `expr` lays out again (`y.T`, `y.view(-1, 1)`, `y[:, None]`, `y.unsqueeze(0)`),
    without selecting or changing any element; None when `expr` does more than that."""
    methods = vocab().layout_methods
    while True:
        if type(expr) is cst.Attribute and expr.attr.value in ("T", "mT"):
            expr = expr.value
        elif type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in methods:
            expr = expr.func.value
        elif type(expr) is cst.Subscript and all(
                type(s.slice) is cst.Slice and s.slice.lower is s.slice.upper is s.slice.step is None or
                type(s.slice) is cst.Index and type(s.slice.value) in (cst.Name, cst.Ellipsis) and
                getattr(s.slice.value, "value", "None") == "None" for s in expr.slice):
            expr = expr.value  # y[:, None]: a new axis, every element kept
        else:
            return dotted_name(expr)


def reflexive_comparison(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """`torch.eq(y, y.T)`, `y.eq(y.t())`, `y[:, None] == y[None, :]` (or `>=`, `<=`): two layouts of one
    value compared element by element, true where an element meets itself, the diagonal."""
    reflexive = vocab().reflexive_comparisons
    if type(expr) is cst.Comparison:
        if len(expr.comparisons) != 1 or type(expr.comparisons[0].operator) not in (
                cst.Equal, cst.GreaterThanEqual, cst.LessThanEqual):
            return False
        left, right = expr.left, expr.comparisons[0].comparator
    elif type(expr) is cst.Call and len(expr.args) >= 1 and all(a.keyword is None for a in expr.args[:2]):
        function = qualify(expr.func) or ""
        if function.startswith("torch.") and function.rsplit(".", 1)[-1] in reflexive and len(expr.args) == 2:
            left, right = expr.args[0].value, expr.args[1].value
        elif type(expr.func) is cst.Attribute and expr.func.attr.value in reflexive and len(expr.args) == 1 and \
                not function.startswith("torch."):
            left, right = expr.func.value, expr.args[0].value
        else:
            return False
    else:
        return False
    base = _layout_base(left)
    return base is not None and base == _layout_base(right)
