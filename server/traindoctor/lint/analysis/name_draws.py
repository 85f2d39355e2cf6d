"""Draws that make up a name: characters picked or shuffled from one of Python's identifier alphabets
(`string.ascii_letters`, `string.digits`, ...) and joined into a string, as in
`"".join(random.choices(string.ascii_lowercase, k=8))` or
`a = list(string.ascii_letters); random.shuffle(a); return "".join(a[:3])`.

Such a string names a run, a temporary folder or a checkpoint file that the same run writes and reads
back: no trained value depends on which letters were drawn, so an unseeded `random` drawing them leaves
the training reproducible. Characters drawn from another population (`"ACGT"`, a vocabulary) may be
training data and stay draws."""

from __future__ import annotations

from typing import Callable, Sequence

import libcst as cst

from ..walk import iter_nodes
from .names import arg, dotted_name
from .vocab import vocab

_PICKS = ("random.choice", "random.choices", "random.sample")


def draws_a_name(call: cst.Call, qualified: str, function: cst.FunctionDef | None,
                 stack: Sequence[cst.CSTNode], qualify: Callable[[cst.BaseExpression], str | None]) -> bool:
    """`call` (a draw from Python's `random`) picks or shuffles an identifier alphabet's characters,
    and what it gives is joined into a string."""
    if qualified not in (*_PICKS, "random.shuffle") or function is None:
        return False
    population = arg(call, 0, "population" if qualified != "random.shuffle" else "x")
    if population is None or not _alphabet(population, function, qualify):
        return False
    if qualified == "random.shuffle":
        shuffled = dotted_name(population)
        return shuffled is not None and any(
            _is_join(node) and any(dotted_name(n) == shuffled for a in node.args for n in iter_nodes(a.value))
            for node in iter_nodes(function))
    return any(_is_join(ancestor) for ancestor in stack)


def _is_join(node: cst.CSTNode) -> bool:
    """`"".join(...)`, `sep.join(...)`: a string made of the pieces."""
    return type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "join" and \
        type(node.func.value) in (cst.SimpleString, cst.Name) and len(node.args) == 1


def _alphabet(expr: cst.BaseExpression, function: cst.FunctionDef, qualify, depth: int = 2) -> bool:
    """`string.ascii_letters`, `list(...)` of one, a sum of them, or a local name bound only to one."""
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Add:
        return _alphabet(expr.left, function, qualify, depth) and _alphabet(expr.right, function, qualify, depth)
    if type(expr) is cst.Call and dotted_name(expr.func) == "list" and len(expr.args) == 1:
        return _alphabet(expr.args[0].value, function, qualify, depth)
    if (qualify(expr) or "") in vocab().identifier_alphabets:
        return True
    name = expr.value if type(expr) is cst.Name else None
    if name is None or depth <= 0:
        return False
    bound = [node.value for node in iter_nodes(function) if type(node) is cst.Assign and
             any(type(t.target) is cst.Name and t.target.value == name for t in node.targets)]
    return bool(bound) and all(_alphabet(value, function, qualify, depth - 1) for value in bound)
