"""Control flow of one function (or of a block's module-level code): a graph of its
statements and the definitions of a name that reach a statement on some path.

Built only when a rule asks (most scopes never are), then kept with the scope.
Nodes are small statements (`x = 1; y += x` is two) and the headers of compound
statements (a loop's header is its head: the body's end and `continue` go back
to it). Handled: if/elif/else, for/while (with `else`, `break`, `continue`,
`while True`), try/except/else/finally (a statement of the body may raise before
it completes: the one before it is where a handler is entered from), with,
match (a case binds its captures; no case may match), return/raise, nested
function and class definitions (one binding each). A comprehension's variables
are its own; a walrus binds in the enclosing scope.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import libcst as cst

from ..walk import iter_nodes
from .names import dotted_name


def accumulates(name: str, value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.BinaryOperation) and name in (dotted_name(value.left), dotted_name(value.right))


class FlowGraph:
    """The statement graph of `body` (a function's or a module's statements)."""

    def __init__(self, body: Sequence[cst.CSTNode]) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.preds: list[list[int]] = []
        self._index: dict[int, int] = {}
        self._loops: list[tuple[int, list[int]]] = []  # (head, break nodes) of the enclosing loops
        self._raisers: list[list[int]] = []  # per enclosing try body: nodes a handler is entered after
        self.returns: list[int] = []
        self.exits: list[int] = self._sequence(body, [])  # falling off the end; returns are added
        self._successors: list[list[int]] | None = None

    # -- queries ------------------------------------------------------------------------

    def node_of(self, stmt: cst.CSTNode) -> int | None:
        return self._index.get(id(stmt))

    def reaching(self, stmt: cst.CSTNode, name: str, through_accumulation: bool = True) -> list[cst.CSTNode]:
        """The statements binding `name` whose binding reaches `stmt` (before it runs) on some
        path. With `through_accumulation`, a binding that adds to the name (`x += v`,
        `x = x + v`, `xs.append(v)` is not one) keeps what reached it: it is found and passed
        through. The function's entry (a parameter, an outer name) is not a statement: not listed."""
        start = self._index.get(id(stmt))
        if start is None:
            return []
        found: list[cst.CSTNode] = []
        seen: set[int] = set()
        stack = list(self.preds[start])
        while stack:
            index = stack.pop()
            if index in seen:
                continue
            seen.add(index)
            node = self.nodes[index]
            how = binding(node, name)
            if how:
                found.append(node)
                if how == "kill" or not through_accumulation:
                    continue
            stack.extend(self.preds[index])
        return found

    def survives_iteration(self, stmt: cst.CSTNode, name: str) -> bool:
        """What `stmt` leaves in `name` (a sum, a list it appended to) reaches `stmt` again on
        some path: no rebinding of the name on every path around the loop."""
        return any(node is stmt for node in self.reaching(stmt, name))

    def outlives_call(self, stmt: cst.CSTNode, name: str) -> bool:
        """What `stmt` leaves in `name` reaches the end of the function (a return, or the
        last statement) on some path: no rebinding of the name after it on every path."""
        start = self._index.get(id(stmt))
        if start is None:
            return False
        successors = self.successors()
        ends = set(self.exits) | set(self.returns)
        seen, stack = set(), [start]
        while stack:
            index = stack.pop()
            if index in seen:
                continue
            seen.add(index)
            if index != start and binding(self.nodes[index], name) == "kill":
                continue
            if index in ends:
                return True
            stack.extend(successors[index])
        return False

    def successors(self) -> list[list[int]]:
        """Each node's successors (the graph keeps predecessors); built once."""
        if self._successors is None:
            self._successors = [[] for _ in self.nodes]
            for index, preds in enumerate(self.preds):
                for pred in preds:
                    self._successors[pred].append(index)
        return self._successors

    # -- construction ---------------------------------------------------------------------

    def _new(self, node: cst.CSTNode, preds: Iterable[int]) -> int:
        index = len(self.nodes)
        self.nodes.append(node)
        self.preds.append(list(preds))
        self._index.setdefault(id(node), index)
        if self._raisers:
            self._raisers[-1].append(index)
        return index

    def _sequence(self, body: Sequence[cst.CSTNode], frontier: list[int]) -> list[int]:
        for stmt in body:
            frontier = self._statement(stmt, frontier)
        return frontier

    def _block(self, suite: cst.BaseSuite | None, frontier: list[int]) -> list[int]:
        if suite is None:
            return frontier
        body = suite.body if isinstance(suite, cst.IndentedBlock) else suite.body  # SimpleStatementSuite: smalls
        return self._sequence(body, frontier)

    def _statement(self, stmt: cst.CSTNode, frontier: list[int]) -> list[int]:
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            return self._sequence(stmt.body, frontier)
        if kind is cst.Return:
            self.returns.append(self._new(stmt, frontier))
            return []
        if kind is cst.Raise:
            self._new(stmt, frontier)
            return []
        if kind is cst.Break:
            index = self._new(stmt, frontier)
            if self._loops:
                self._loops[-1][1].append(index)
            return []
        if kind is cst.Continue:
            index = self._new(stmt, frontier)
            if self._loops:
                self.preds[self._loops[-1][0]].append(index)
            return []
        if kind is cst.If:
            test = self._new(stmt, frontier)
            exits = self._block(stmt.body, [test])
            orelse = stmt.orelse
            if orelse is None:
                return exits + [test]
            if type(orelse) is cst.If:
                return exits + self._statement(orelse, [test])
            return exits + self._block(orelse.body, [test])
        if kind is cst.For or kind is cst.While:
            head = self._new(stmt, frontier)
            self._loops.append((head, []))
            ends = self._block(stmt.body, [head])
            _, breaks = self._loops.pop()
            self.preds[head].extend(ends)
            endless = kind is cst.While and _always_true(stmt.test)
            exits = [] if endless else [head]
            if stmt.orelse is not None:
                exits = self._block(stmt.orelse.body, exits)
            return exits + breaks
        if kind is cst.With:
            return self._block(stmt.body, [self._new(stmt, frontier)])
        if kind is cst.Try or kind is cst.TryStar:
            return self._try(stmt, frontier)
        if kind is cst.Match:
            subject = self._new(stmt, frontier)
            exits: list[int] = []
            exhaustive = False
            for case in stmt.cases:
                exits += self._block(case.body, [self._new(case, [subject])])
                exhaustive = exhaustive or (case.guard is None and _irrefutable(case.pattern))
            return exits if exhaustive else exits + [subject]
        # small statements, definitions, anything else: one node that falls through
        return [self._new(stmt, frontier)]

    def _try(self, stmt: cst.Try | cst.TryStar, frontier: list[int]) -> list[int]:
        entry = self._new(stmt, frontier)
        self._raisers.append([entry])
        ends = self._block(stmt.body, [entry])
        raisers = self._raisers.pop()
        exits: list[int] = []
        for handler in stmt.handlers:
            exits += self._block(handler.body, [self._new(handler, raisers)])
        exits = (self._block(stmt.orelse.body, ends) if stmt.orelse is not None else ends) + exits
        if stmt.finalbody is not None:
            # an exception no handler catches runs the finally block too
            exits = self._block(stmt.finalbody.body, exits + (raisers if not stmt.handlers else []))
        return exits


def binding(node: cst.CSTNode, name: str) -> str:
    """How a flow node binds `name`: "kill" (a new value), "add" (adds to what it held:
    `x += v`, `x = x + v`), or "" (not at all)."""
    kind = type(node)
    if kind is cst.AugAssign:
        return "add" if dotted_name(node.target) == name else _walrus(node.value, name)
    if kind is cst.Assign:
        if any(name in _target_names(t.target) for t in node.targets):
            return "add" if accumulates(name, node.value) else "kill"
        return _walrus(node.value, name)
    if kind is cst.AnnAssign:
        if node.value is not None and name in _target_names(node.target):
            return "add" if accumulates(name, node.value) else "kill"
        return ""
    if kind is cst.For:
        return "kill" if name in _target_names(node.target) else _walrus(node.iter, name)
    if kind is cst.With:
        if any(item.asname is not None and name in _target_names(item.asname.name) for item in node.items):
            return "kill"
        return _walrus(node, name, header_of=node)
    if kind is cst.ExceptHandler:
        return "kill" if node.name is not None and name in _target_names(node.name.name) else ""
    if kind is cst.Del:
        return "kill" if name in _target_names(node.target) else ""
    if kind in (cst.FunctionDef, cst.ClassDef):
        return "kill" if node.name.value == name else ""
    if kind in (cst.Import, cst.ImportFrom):
        return "kill" if not isinstance(node.names, cst.ImportStar) and any(
            (a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
             else (dotted_name(a.name) or "").split(".")[0]) == name for a in node.names) else ""
    if kind is cst.MatchCase:
        return "kill" if any(type(n) is cst.Name and n.value == name for n in iter_nodes(node.pattern)) else ""
    if kind is cst.If or kind is cst.While:
        return _walrus(node.test, name)
    if kind is cst.Match:
        return _walrus(node.subject, name)
    if kind in (cst.Expr, cst.Return):
        return _walrus(node.value, name) if node.value is not None else ""
    return ""


def _walrus(expr: cst.CSTNode, name: str, header_of: cst.With | None = None) -> str:
    """`(name := ...)` in the expression (a with statement: in its items only)."""
    roots = [item.item for item in header_of.items] if header_of is not None else [expr]
    for root in roots:
        for node in iter_nodes(root):
            if type(node) is cst.NamedExpr and dotted_name(node.target) == name:
                return "kill"
    return ""


def _target_names(target: cst.CSTNode) -> set[str]:
    """Names and dotted attributes (`self.total`) a target binds; subscripts bind none."""
    name = dotted_name(target)
    if name is not None:
        return {name}
    if type(target) in (cst.Tuple, cst.List):
        found: set[str] = set()
        for element in target.elements:
            found |= _target_names(element.value)
        return found
    if type(target) is cst.StarredElement:
        return _target_names(target.value)
    return set()


def _always_true(test: cst.BaseExpression) -> bool:
    return (type(test) is cst.Name and test.value == "True") or (type(test) is cst.Integer and test.value != "0")


def _irrefutable(pattern: cst.MatchPattern) -> bool:
    """`case _:` and `case name:` match anything."""
    return type(pattern) is cst.MatchAs and pattern.pattern is None
