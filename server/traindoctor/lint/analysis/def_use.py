"""Def-use helpers over one function's flow graph (flow.py): which names each flow node reads,
and each syntax node's parent, so that a rule can follow a value from its binding to its uses."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes
from .flow import FlowGraph


def uses_by_node(flow: FlowGraph) -> dict[str, list[tuple[cst.CSTNode, list[cst.Name]]]]:
    """name -> (flow node, the loads of it that the node evaluates) for every flow node."""
    found: dict[str, list[tuple[cst.CSTNode, list[cst.Name]]]] = {}
    for node in flow.nodes:
        loads: dict[str, list[cst.Name]] = {}
        for expr in _evaluated(node):
            for name in _loads(expr):
                loads.setdefault(name.value, []).append(name)
        for name, names in loads.items():
            found.setdefault(name, []).append((node, names))
    return found


def _evaluated(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What a flow node evaluates: a small statement whole (an assignment: its value and the
    subscripts/attributes of its targets), a compound statement's header only."""
    kind = type(node)
    if kind is cst.Assign:
        return [node.value] + [t.target for t in node.targets if type(t.target) is not cst.Name]  # type: ignore
    if kind is cst.If or kind is cst.While:
        return [node.test]  # type: ignore[union-attr]
    if kind is cst.For:
        return [node.iter]  # type: ignore[union-attr]
    if kind is cst.With:
        return [item.item for item in node.items]  # type: ignore[union-attr]
    if kind in (cst.Try, cst.TryStar, cst.Finally):
        return []
    if kind is cst.ExceptHandler:
        return [node.type] if node.type is not None else []  # type: ignore[union-attr]
    if kind is cst.Match:
        return [node.subject]  # type: ignore[union-attr]
    if kind in (cst.FunctionDef, cst.ClassDef):
        return list(node.decorators)  # type: ignore[union-attr]
    if kind is cst.MatchCase:
        return []
    return [node]


def _loads(expr: cst.CSTNode) -> list[cst.Name]:
    """Names read in `expr`, not inside nested functions or lambdas; an attribute's name part is
    not a read."""
    found: list[cst.Name] = []
    todo = [expr]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is cst.Name:
            found.append(node)  # type: ignore[arg-type]
            continue
        if kind is cst.Lambda or kind is cst.FunctionDef:
            continue
        if kind is cst.Attribute:
            todo.append(node.value)  # type: ignore[union-attr]
            continue
        if kind is cst.Arg and node.keyword is not None:  # type: ignore[union-attr]
            todo.append(node.value)  # type: ignore[union-attr]
            continue
        todo.extend(child_nodes(node))
    return found


def assigned_names(statement: cst.Assign, *, starred: bool) -> list[str] | None:
    """The plain local names an assignment binds (also inside tuple and list targets); None when it
    stores into an attribute or a subscript, and, unless `starred`, when a target is starred (a
    starred name holds a list of the values, which not every caller can follow)."""
    names: list[str] = []
    for target in statement.targets:
        todo: list[cst.CSTNode] = [target.target]
        while todo:
            node = todo.pop()
            if type(node) is cst.Name:
                names.append(node.value)  # type: ignore[union-attr]
            elif type(node) in (cst.Tuple, cst.List):
                todo.extend(e.value for e in node.elements)  # type: ignore[union-attr]
            elif type(node) is cst.StarredElement and starred:
                todo.append(node.value)  # type: ignore[union-attr]
            else:
                return None
    return names


def parents_of(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    found: dict[int, cst.CSTNode] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        for child in child_nodes(node):
            found[id(child)] = node
            todo.append(child)
    return found
