"""One traversal of a libcst tree for many visitors, without rebuilding it.

libcst's own `visit_batched` goes through `_visit_and_replace_children`, which
re-creates every node, and collects each visitor's methods with
`inspect.getmembers` on every call; on a 3,000-line file that is seconds. This
walker reads the child fields directly (skipping whitespace, parentheses and
punctuation, which no rule looks at), dispatches by node class name, and
caches the per-class method tables. Children are visited in source order;
decorators before the definition they decorate.

Semantics kept from libcst's batched visitors: `visit_<Node>(node)` before
the children, `leave_<Node>(node)` after, return values ignored.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Callable, Sequence

import libcst as cst

if TYPE_CHECKING:
    from .context import WalkState

_SKIPPED_FIELDS = {
    "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer", "comma", "semicolon",
    "equal", "colon", "dot", "star", "default_comma", "newline", "trailing_whitespace", "encoding",
    "default_indent", "default_newline", "has_trailing_newline", "asynchronous", "operator", "asname_whitespace",
}
_LEAF_TYPES: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.Comma, cst.Semicolon, cst.Dot, cst.Colon, cst.AssignEqual,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
)


@functools.cache
def _child_fields(node_type: type) -> tuple[str, ...]:
    names = [
        f.name for f in dataclasses.fields(node_type)
        if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
    ]
    # Source order where libcst's field order differs from it (checked against `.children` in
    # tests/lint/test_walk.py): rules compare walk positions to tell "before" from "after".
    first = _SOURCE_ORDER_FIRST.get(node_type, ())
    return tuple(name for name in first if name in names) + tuple(name for name in names if name not in first)


_SOURCE_ORDER_FIRST: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns"),  # `-> T:` before the body
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords"),  # `class A(B):` before the body
    cst.ExceptHandler: ("type", "name"),  # `except E as e:` before the body
    cst.Arg: ("keyword",),  # `k=v`
    cst.Parameters: ("posonly_params", "posonly_ind"),  # `def f(a, /, b)`
    cst.MatchCase: ("pattern", "guard"),  # `case p if guard:` before the body
    cst.IfExp: ("body", "test", "orelse"),  # `body if test else orelse`
}


@functools.cache
def _handlers(visitor_type: type) -> tuple[tuple[str, bool, Handler], ...]:
    """(node class name, is a visit_ handler, function) for the visit_/leave_
    methods the visitor's own classes define (libcst's base classes define a
    no-op for every node type; calling those is waste). A handler set to None
    by a subclass is switched off."""
    names = set()
    for klass in visitor_type.__mro__:
        if klass.__module__.startswith("libcst"):
            continue
        names.update(
            name for name in vars(klass)
            if (name.startswith("visit_") or name.startswith("leave_")) and name.count("_") == 1
        )
    found = []
    for name in sorted(names):
        function = getattr(visitor_type, name)
        if function is not None:
            found.append((name[6:], name[0] == "v", function))
    return tuple(found)


@functools.cache
def handled_types(visitor_type: type) -> frozenset[str]:
    """Class names of the nodes the visitor has a visit_ or leave_ handler for."""
    return frozenset(type_name for type_name, _, _ in _handlers(visitor_type))


_NOT_A_NODE, _LEAF, _NODE = 0, 1, 2


@functools.cache
def _kind(value_type: type) -> int:
    if not issubclass(value_type, cst.CSTNode):
        return _NOT_A_NODE
    return _LEAF if issubclass(value_type, _LEAF_TYPES) else _NODE


Handler = Callable[[cst.CSTNode], object]


class _IsNode(dict):
    """type -> is it a node the walk enters (a dict: a lookup per child is the hot path)."""

    def __missing__(self, value_type: type) -> bool:
        self[value_type] = found = _kind(value_type) is _NODE
        return found


class _Fields(dict):
    """node type -> its child fields (see _child_fields)."""

    def __missing__(self, node_type: type) -> tuple[str, ...]:
        self[node_type] = found = _child_fields(node_type)
        return found


_IS_NODE, _FIELDS = _IsNode(), _Fields()


@functools.lru_cache(maxsize=256)
def _dispatch(visitor_types: tuple[type, ...]) -> tuple[dict[str, tuple[tuple[Handler, int], ...]], ...]:
    """(visit table, leave table) for visitors of these classes: node class name ->
    ((unbound handler, index of its visitor), ...). Cached per combination, because the
    engine walks every block with the same few combinations of rules."""
    tables: tuple[dict[str, list[tuple[Handler, int]]], dict[str, list[tuple[Handler, int]]]] = ({}, {})
    for index, visitor_type in enumerate(visitor_types):
        for type_name, is_visit, function in _handlers(visitor_type):
            tables[0 if is_visit else 1].setdefault(type_name, []).append((function, index))
    return tuple({name: tuple(entries) for name, entries in table.items()} for table in tables)


def walk(
    root: cst.CSTNode,
    visitors: Sequence[object],
    state: "WalkState",
    seen: set[str] | None = None,
) -> None:
    """Visit every node under `root`, keeping `state` (context.WalkState) current: its
    visit counter and ancestor stack here, for every node; loops, functions, classes and
    `with` through its enter/leave hooks (two calls for every node were 1-2 % of a lint).
    `seen`, when given, receives the class names of the nodes visited (what the engine
    skips rules by)."""
    visit_table, leave_table = _dispatch(tuple(type(visitor) for visitor in visitors))
    seen_add = seen.add if seen is not None else None

    is_node, fields_of = _IS_NODE, _FIELDS
    sequence_types = (tuple, list)
    structural = state.STRUCTURAL
    push, pop = state.stack.append, state.stack.pop

    def visit(node: cst.CSTNode) -> None:
        node_type = type(node)
        type_name = node_type.__name__
        if seen_add is not None:
            seen_add(type_name)
        state.order += 1
        push(node)
        if node_type in structural:
            state.enter(node)
        handlers = visit_table.get(type_name)
        if handlers:
            for handler, index in handlers:
                handler(visitors[index], node)
        for field in fields_of[node_type]:
            value = getattr(node, field)
            value_type = type(value)
            if value_type in sequence_types:
                for item in value:
                    if is_node[type(item)]:
                        visit(item)
            elif is_node[value_type]:
                visit(value)
        handlers = leave_table.get(type_name)
        if handlers:
            for handler, index in handlers:
                handler(visitors[index], node)
        pop()
        if node_type in structural:
            state.leave(node)

    visit(root)
    # The closure refers to itself: break the cycle, so its memory goes without the collector.
    visit = None  # type: ignore[assignment]


# node id -> (node, its children): the analyses walk the same function bodies many times (one
# question each); the node is kept beside its children, so a reused id never answers for another.
# Emptied at the end of each lint (forget_children).
_CHILDREN: dict[int, tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = {}


def child_nodes(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """The direct children of `node` that rules look at (cheap: no libcst `.children`)."""
    known = _CHILDREN.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    children: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for field in _FIELDS[type(node)]:
        value = getattr(node, field)
        if type(value) in (tuple, list):
            children.extend(item for item in value if is_node[type(item)])
        elif is_node[type(value)]:
            children.append(value)
    found = _CHILDREN[id(node)] = (node, tuple(children))
    return found[1]


# (root id, own scope only) -> (root, its nodes): subtree_nodes' and scope_nodes' memo, the same way.
_SUBTREES: dict[tuple[int, bool], tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def subtree_nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    """iter_nodes(root) as a list kept for the rest of the lint: for a function body that many
    questions scan (do not change the list)."""
    return _subtree(root, False)


def scope_nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    """subtree_nodes without the functions, lambdas and classes nested under `root` (nor their
    insides): what a function's own body does."""
    return _subtree(root, True)


def _subtree(root: cst.CSTNode, own: bool) -> list[cst.CSTNode]:
    key = (id(root), own)
    known = _SUBTREES.get(key)
    if known is not None and known[0] is root:
        return known[1]
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if own and type(node) in _SCOPES and node is not root:
            continue
        found.append(node)
        stack.extend(child_nodes(node)[::-1])
    _SUBTREES[key] = (root, found)
    return found


def forget_children() -> None:
    """Drop the memos of child_nodes, subtree_nodes and scope_nodes (the end of a lint: its trees may go)."""
    _CHILDREN.clear()
    _SUBTREES.clear()


def iter_nodes(root: cst.CSTNode):
    """Every node under `root` (itself included), in source order, skipping
    whitespace and punctuation: a cheap replacement for a libcst visitor in
    rules that look inside one expression."""
    stack = [root]
    memo = _CHILDREN
    while stack:
        node = stack.pop()
        yield node
        known = memo.get(id(node))  # child_nodes' memo, read here: a call per node is most of the cost
        stack.extend((known[1] if known is not None and known[0] is node else child_nodes(node))[::-1])
