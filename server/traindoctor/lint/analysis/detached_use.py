"""Does a call's result only ever leave the autograd graph? Followed through one function's
def-use chains (flow.py's reaching definitions): the result, and every local name computed from
it, is used only through a conversion that drops the graph (`.detach()`, `.data`, `.numpy()`,
`.item()`, `.tolist()`: vocab `detaching_conversions`). Then nothing can backpropagate through it,
and the graph recorded while computing it was built for nothing.

Unknown stays unknown: a use that is anything else (returned, yielded, stored in an attribute or
a container, passed to a call whose result is not bound to a local name, an augmented assignment,
a name read before the flow graph knows it) answers False."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes
from .def_use import assigned_names, parents_of, uses_by_node
from .flow import FlowGraph
from .vocab import vocab

_CHAIN = (cst.Attribute, cst.Call, cst.Subscript)


def only_detached(function: cst.FunctionDef, call: cst.Call, flow: FlowGraph,
                  opaque: frozenset[str] = frozenset()) -> bool:
    """Every use of `call`'s result in `function` drops its autograd graph (see the module), and
    there is one.
    A value handed to a call of an `opaque` name (a callable parameter: it may backpropagate
    what it gets) is not followed."""
    parents = parents_of(function)
    top, detached = _chain_top(call, parents)
    if detached:
        return True
    stmt = parents.get(id(top))
    if type(stmt) is not cst.Assign or stmt.value is not top:
        return False
    names = assigned_names(stmt, starred=False)
    if names is None:
        return False
    uses = uses_by_node(flow)
    enclosed = _read_in_closures(function)
    todo = [(stmt, name) for name in names]
    seen: set[tuple[int, str]] = set()
    converted = False  # an output nothing reads says nothing: a forward run for its side effects
    while todo:
        definition, name = todo.pop()
        if (id(definition), name) in seen:
            continue
        seen.add((id(definition), name))
        if name in enclosed or len(seen) > 64:  # a closure may read it anywhere; a long chain: not followed
            return False  # a long chain of derived names: not followed
        for node, found in uses.get(name, ()):
            if definition not in flow.reaching(node, name, through_accumulation=False):
                continue
            for use in found:
                top, detached = _chain_top(use, parents)
                if detached:
                    converted = True
                    continue
                derived = _bound_by(top, node, parents, opaque)
                if derived is None:
                    return False
                todo.extend((node, n) for n in derived)
    return converted


def _chain_top(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> tuple[cst.CSTNode, bool]:
    """The outermost expression of the attribute/call/subscript chain that `node` heads
    (`x.max(1)[1].cpu()` for `x`), and whether the chain drops the graph on the way."""
    conversions = vocab().detaching_conversions
    while True:
        parent = parents.get(id(node))
        kind = type(parent)
        if kind is cst.Attribute and parent.value is node:  # type: ignore[union-attr]
            if parent.attr.value in conversions:  # type: ignore[union-attr]
                return parent, True
        elif not ((kind is cst.Call and parent.func is node) or  # type: ignore[union-attr]
                  (kind is cst.Subscript and parent.value is node)):  # type: ignore[union-attr]
            return node, False
        node = parent  # type: ignore[assignment]


def _bound_by(expr: cst.CSTNode, stmt: cst.CSTNode, parents: dict[int, cst.CSTNode],
              opaque: frozenset[str]) -> list[str] | None:
    """The local names `stmt` (an assignment) binds to a value computed from `expr`: `expr` lies in
    its value, inside nothing but arithmetic, calls (as an argument) and containers. None when the
    value may go anywhere else."""
    if type(stmt) is not cst.Assign:
        return None
    node = expr
    while node is not stmt.value:
        parent = parents.get(id(node))
        if parent is None or type(parent) in (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr) or \
                isinstance(parent, cst.BaseComp) or \
                (type(parent) is cst.Call and type(parent.func) is cst.Name and parent.func.value in opaque):
            return None
        node = parent
    return assigned_names(stmt, starred=False)


def _read_in_closures(function: cst.FunctionDef) -> set[str]:
    """Names read inside the function's nested functions and lambdas."""
    found: set[str] = set()
    todo = list(child_nodes(function.body))
    while todo:
        node = todo.pop()
        if type(node) in (cst.FunctionDef, cst.Lambda):
            found.update(n.value for n in _names(node))
            continue
        todo.extend(child_nodes(node))
    return found


def _names(root: cst.CSTNode) -> list[cst.Name]:
    found = []
    todo = [root]
    while todo:
        node = todo.pop()
        if type(node) is cst.Name:
            found.append(node)
        todo.extend(child_nodes(node))
    return found
