"""Values an object records, one per call: a list attribute that a method of the class appends to
(`self._losses.append(loss)`), read back as a window (`torch.stack(self._losses[:-1])`). A spread
of such a window is 0 whenever the recorded values are all equal (a plateaued loss, a clipped
norm, one value recorded twice), however often the reading method runs."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from ..walk import iter_nodes
from .names import arg, dotted_name
from .scopes import Scope
from .vocab import vocab

# Calls that turn a list of recorded tensors or numbers into one tensor.
_GATHERS = ("torch.stack", "torch.cat", "torch.tensor", "torch.as_tensor")
_APPENDS = ("append", "extend", "insert")


def recorded_window(expr: cst.BaseExpression, scope: Scope, at: int, klass: cst.ClassDef | None,
                    qualify: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """`self.x` when `expr` (a name bound to it, or the call itself) is a std or var of a window of
    `self.x`, a list the class appends to; else None."""
    if klass is None:
        return None
    spread = _bound(expr, scope, at)
    if type(spread) is not cst.Call:
        return None
    v = vocab()
    if (qualify(spread.func) or "") in (*v.spreads, *v.spread_means):
        source = arg(spread, 0, "input")
    elif type(spread.func) is cst.Attribute and spread.func.attr.value in ("std", "var"):
        source = spread.func.value
    else:
        return None
    for _ in range(6):  # torch.stack(self.x[:-1]), a local bound to it
        if source is None:
            return None
        if type(source) is cst.Call and (qualify(source.func) or "") in _GATHERS:
            source = arg(source, 0, "tensors") or arg(source, 0, "data")
        elif type(source) is cst.Subscript:
            source = source.value
        elif type(source) is cst.Name:
            source = _bound(source, scope, at)
        else:
            break
    name = dotted_name(source) if source is not None else None
    if name is None or not name.startswith("self.") or name.count(".") != 1:
        return None
    return name if _appended_in(klass, name) else None


def _bound(expr: cst.BaseExpression, scope: Scope, at: int) -> cst.BaseExpression | None:
    """What a local name is bound to (its one plain or unpacked assignment before `at`), or `expr`."""
    if type(expr) is not cst.Name:
        return expr
    definition = scope.lookup(expr.value, at)
    if definition is None or definition.how != "assign" or definition.value is None:
        return None
    return definition.value


def _appended_in(klass: cst.ClassDef, name: str) -> bool:
    for node in iter_nodes(klass):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _APPENDS and \
                dotted_name(node.func.value) == name:
            return True
    return False
