"""Does a call's result stay inside the current loop iteration, out of every backward? Followed
through one function's def-use chains (flow.py's reaching definitions, def_use.py): the result,
every local name computed from it, and every container bound in the loop that it is put into.

Used for a model run after an iteration's last backward and optimizer step (a sample generated
for logging): if nothing later in the iteration backpropagates and the value cannot outlive the
iteration, the autograd graph recorded while computing it is built for nothing.

Unknown stays unknown: the answer is False when a value is read before the call (carried into the
next iteration) or after the loop, stored in an attribute or in a container bound outside the
loop, returned, yielded, or handed to a callee that `may_keep` says may keep or backpropagate it."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from ..walk import iter_nodes
from .def_use import assigned_names, parents_of, uses_by_node
from .flow import FlowGraph
from .vocab import vocab

_CONTAINER_METHODS = ("append", "extend", "insert", "update", "setdefault", "add")
# Expressions a value passes through unchanged in kind: arithmetic, containers, formatting.
_CARRIERS = (cst.BinaryOperation, cst.UnaryOperation, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.Element,
             cst.DictElement, cst.StarredElement, cst.StarredDictElement, cst.FormattedStringExpression,
             cst.FormattedString, cst.IfExp, cst.Index, cst.SubscriptElement, cst.Slice)


def stays_in_iteration(function: cst.FunctionDef, loop: cst.For | cst.While, call: cst.Call, flow: FlowGraph,
                       may_keep: Callable[[cst.Call], bool]) -> bool:
    """`call`'s result (bound by an assignment in `loop`'s body) is used only later in the same
    iteration, and only by conversions, arithmetic, local containers bound in the loop and callees
    that `may_keep` clears (see the module)."""
    parents = parents_of(function)
    order = {id(node): index for index, node in enumerate(iter_nodes(function))}
    inside = {id(node) for node in iter_nodes(loop)}
    start = order.get(id(call), -1)
    statement = _enclosing_statement(call, parents)
    if type(statement) is not cst.Assign or not _carried_to(call, statement.value, parents):
        return False
    names = assigned_names(statement, starred=True)
    if not names:
        return False
    uses = uses_by_node(flow)
    conversions = vocab().detaching_conversions
    todo = [(statement, name) for name in names]
    seen: set[tuple[int, str]] = set()
    while todo:
        definition, name = todo.pop()
        if (id(definition), name) in seen:
            continue
        seen.add((id(definition), name))
        if len(seen) > 32:
            return False  # a long chain: not followed
        for node, loads in uses.get(name, ()):
            loads = [load for load in loads if not _bound_here(load, parents)]  # `o, *_ = ...` binds o
            if not loads or not any(d is definition for d in flow.reaching(node, name, through_accumulation=False)):
                continue
            if id(node) not in inside or order.get(id(node), -1) < start:
                return False  # read after the loop, or in the next iteration before the call
            for load in loads:
                derived = _where_it_goes(load, node, parents, conversions, may_keep, flow, inside)
                if derived is None:
                    return False
                todo.extend(derived)
    return True


def _where_it_goes(load: cst.Name, statement: cst.CSTNode, parents: dict[int, cst.CSTNode], conversions,
                   may_keep: Callable[[cst.Call], bool], flow: FlowGraph, inside: set[int]
                   ) -> list[tuple[cst.CSTNode, str]] | None:
    """The (definition, name) pairs that now hold the value read at `load`; None when it may leave
    the iteration or reach a backward."""
    node: cst.CSTNode = load
    while True:
        parent = parents.get(id(node))
        kind = type(parent)
        if parent is None or parent is statement and kind is not cst.Assign:
            break
        if kind is cst.Attribute and parent.value is node:  # type: ignore[union-attr]
            if parent.attr.value in conversions:  # type: ignore[union-attr]
                return []  # `.detach()`, `.item()`, `.numpy()`: nothing of the graph goes further
            node = parent
            continue
        if kind is cst.Subscript and parent.value is node:  # type: ignore[union-attr]
            node = parent
            continue
        if kind is cst.Call:
            if parent.func is node:  # type: ignore[union-attr]
                if type(node) is cst.Attribute and node.attr.value in _CONTAINER_METHODS:
                    return []  # a container being filled: what goes in does not take it anywhere
                node = parent  # a method of the value: its result is computed from it
                continue
            return None  # an argument: handled at the Arg
        if kind is cst.Arg:
            call = parents.get(id(parent))
            if type(call) is not cst.Call:
                return None
            func = call.func
            if type(func) is cst.Attribute and func.attr.value in _CONTAINER_METHODS and type(func.value) is cst.Name:
                holder = func.value.value
                definitions = flow.reaching(statement, holder, through_accumulation=False)
                if not definitions or any(id(d) not in inside or not _fresh_container(d) for d in definitions):
                    return None  # a container from outside the loop (or another name for one) keeps it
                return [(d, holder) for d in definitions]
            if may_keep(call):
                return None
            node = call  # a callee that keeps nothing: its result is computed from the value
            continue
        if kind is cst.Comparison or kind is cst.ComparisonTarget:
            return []  # a comparison's result has no graph
        if isinstance(parent, _CARRIERS):
            node = parent
            continue
        if kind is cst.Assign and parent.value is node:  # type: ignore[union-attr]
            names = assigned_names(parent, starred=True)  # type: ignore[arg-type]
            return [(parent, name) for name in names] if names is not None else None
        return None  # returned, yielded, stored in an attribute or subscript, augmented, awaited...
    if type(parent) is cst.Expr or (parent is statement and type(statement) in (cst.If, cst.While)):
        return []  # a discarded result, or a test
    return None


def _fresh_container(definition: cst.CSTNode) -> bool:
    """`x = {}`, `x = []`, `x = dict(...)`: a new container, not another name for one."""
    if type(definition) is not cst.Assign:
        return False
    value = definition.value  # type: ignore[union-attr]
    return type(value) in (cst.Dict, cst.List, cst.Set, cst.Tuple) or \
        (type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in ("dict", "list", "set"))


def _bound_here(name: cst.Name, parents: dict[int, cst.CSTNode]) -> bool:
    """`name` is (an element of) an assignment's target: bound there, not read."""
    node: cst.CSTNode = name
    while True:
        parent = parents.get(id(node))
        if type(parent) is cst.AssignTarget:
            return True
        if type(parent) not in (cst.Tuple, cst.List, cst.Element, cst.StarredElement):
            return False
        node = parent  # type: ignore[assignment]


def _carried_to(call: cst.Call, value: cst.BaseExpression, parents: dict[int, cst.CSTNode]) -> bool:
    """`value` is `call` itself, or an attribute/subscript of its result (`net(x)[0]`)."""
    node: cst.CSTNode = call
    while node is not value:
        parent = parents.get(id(node))
        if type(parent) not in (cst.Attribute, cst.Subscript) or parent.value is not node:  # type: ignore[union-attr]
            return False
        node = parent
    return True


def _enclosing_statement(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> cst.CSTNode | None:
    while node is not None and not isinstance(node, cst.BaseSmallStatement):
        node = parents.get(id(node))  # type: ignore[assignment]
    return node
