"""Scopes: the bindings of each function (and of a block's module-level code) in
source order, what is backpropagated and returned there, and the syntax helpers
every later layer shares (a statement's targets, the names an expression reads,
a function's own return statements).

Layer 1 of the analysis (names -> scopes and flow -> summaries -> values ->
training events): it imports only names.py and the walker."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst

from ..walk import child_nodes, iter_nodes
from .flow import FlowGraph, accumulates
from .names import dotted_name


@dataclass(frozen=True)
class Def:
    """One binding of a name: `value` is what it was bound to (None: unknown),
    `index` the position in a tuple target, `how` assign | aug | iter | param | other."""

    order: int  # visible to uses whose order is >= this
    how: str
    value: cst.BaseExpression | None
    index: int | None
    loops: tuple[int, ...]  # ids of the loops (in this scope) around the binding
    grad_off: bool = False  # bound where autograd records nothing (no_grad/inference_mode, not re-enabled)
    op: str = ""  # for `aug`: the operator's libcst class ("AddAssign", ...)
    annotation: cst.BaseExpression | None = None  # for `param`: its annotation (`avg: Dict[str, float]`)


@dataclass
class Scope:
    node: cst.CSTNode | None
    qualname: str
    defs: dict[str, list[Def]] = field(default_factory=dict)
    backward: dict[str, cst.CSTNode] = field(default_factory=dict)  # name -> its backward() call
    backward_at: dict[str, list[int]] = field(default_factory=dict)  # name -> the orders of its backward() calls
    # name -> the values bound to it; the names they read are found when asked (most scopes never are)
    sources: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    returned: set[str] = field(default_factory=set)
    guarded: set[str] = field(default_factory=set)  # names tested by an `if`, `while` or `assert`
    training_loops: set[int] = field(default_factory=set)
    trains: bool = False
    loop_iters: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(for loop) -> what it iterates
    _closures: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)
    _flow: FlowGraph | None = field(default=None, repr=False, compare=False)

    def lookup(self, name: str, at: int) -> Def | None:
        found = None
        for definition in self.defs.get(name, ()):
            if definition.order <= at:
                found = definition
        return found

    def reaches_backward(self, name: str, definition: Def) -> bool:
        """This binding of `name` is the one a backward() call of it reads: a later rebinding
        (`loss = loss.detach().cpu().numpy()` after `loss.backward()`) is not backpropagated; an
        in-place update (`loss *= n` after it) is the backpropagated tensor, changed."""
        while definition is not None:
            if any(self.lookup(name, at) is definition for at in self.backward_at.get(name, ())):
                return True
            definition = self.lookup(name, definition.order - 1) if definition.how == "aug" else None
        return False

    def bound_in_loop(self, name: str, loop: cst.CSTNode) -> bool:
        """Rebound (not accumulated: `+=`, `x = x + ...`) inside `loop`."""
        return any(id(loop) in d.loops and d.how != "aug" and not accumulates(name, d.value)
                   for d in self.defs.get(name, ()))

    def flow(self, root: cst.CSTNode) -> FlowGraph:
        """The control-flow graph of the scope: `root` is its FunctionDef, or the block's
        Module for module-level code. Built on the first question, then kept."""
        if self._flow is None:
            self._flow = FlowGraph(root.body.body if isinstance(root, cst.FunctionDef) else root.body)
        return self._flow

    def rebound_every_iteration(self, name: str, loop: cst.CSTNode, stmt: cst.CSTNode, root: cst.CSTNode) -> bool:
        """`name` gets a new value on every path around the loop before `stmt` (in it) runs
        again: what `stmt` adds to it does not outlive the iteration. A reset under an `if`
        in the loop is not one."""
        return self.bound_in_loop(name, loop) and not self.flow(root).survives_iteration(stmt, name)

    def feeds_backward(self) -> frozenset[str]:
        """Names the backpropagated values were computed from (transitively)."""
        return self._computed_from("backward", self.backward)

    def feeds_return(self) -> frozenset[str]:
        """Names the returned values were computed from (transitively)."""
        return self._computed_from("returned", self.returned)

    def bound_without_grad(self, name: str, at: int) -> bool:
        """The binding of `name` visible at `at` was made with autograd off (no_grad/inference_mode)."""
        definition = self.lookup(name, at)
        return definition is not None and definition.grad_off

    def _computed_from(self, key: str, names) -> frozenset[str]:
        """Asked by rules once collection is over, when the scope no longer changes."""
        cached = self._closures.get(key)
        if cached is not None:
            return cached
        found = set(names)
        frontier = list(found)
        while frontier:
            for value in self.sources.get(frontier.pop(), ()):
                for source in names_in(value):
                    if source not in found:
                        found.add(source)
                        frontier.append(source)
        self._closures[key] = closure = frozenset(found)
        return closure


def grad_disabled(walk) -> bool:
    """Autograd is off here: the innermost grad-mode `with` (or the function's
    decorator) up to the enclosing function disables it, and no `enable_grad()`/
    `set_grad_enabled(...)` inside it turns it back on."""
    for node in reversed(walk.stack):
        if isinstance(node, (cst.With, cst.FunctionDef)):
            if walk.disables_grad(node):
                return True
            items = [i.item for i in node.items] if isinstance(node, cst.With) else \
                [d.decorator for d in node.decorators]
            for item in items:
                func = item.func if isinstance(item, cst.Call) else item
                if (walk.names.qualify(func) or "").endswith(("enable_grad", "set_grad_enabled")):
                    return False
            if isinstance(node, cst.FunctionDef):
                return False
    return False


def targets(target: cst.BaseExpression) -> list[tuple[cst.BaseExpression, int | None]]:
    if type(target) in SEQUENCES:
        return [(element.value, i) for i, element in enumerate(target.elements)]
    return [(target, None)]


def names_in(expr: cst.CSTNode) -> set[str]:
    if type(expr) is cst.Name:
        return {expr.value}  # type: ignore[attr-defined]
    if type(expr) in _NAMELESS:
        return set()
    found: set[str] = set()
    for node in iter_nodes(expr):
        if type(node) is cst.Name:
            found.add(node.value)  # type: ignore[attr-defined]
        elif type(node) is cst.Attribute:
            name = dotted_name(node)
            if name is not None:
                found.add(name)
    return found


_NAMELESS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)
# What a test reads of a tensor when it asks only for its rank or type, never its values or sizes (a
# size test, `len(x) > 1`, can rule out a batch of one, whose std is NaN: it stays a guard).
_SHAPE_METHODS = frozenset(("dim", "ndimension"))
_SHAPE_ATTRIBUTES = frozenset(("ndim", "dtype", "device", "is_cuda", "is_sparse"))
_SHAPE_FUNCTIONS = frozenset(("isinstance",))


def value_names_in(test: cst.CSTNode) -> set[str]:
    """names_in(test) less the names it reads only for their rank or type, or whether they are None:
    `adj.dim() == 2`, `isinstance(mask, Tensor)`, `x.dtype == torch.bool`, `mask is None` say nothing
    about which values are 0."""
    kind = type(test)
    if kind is cst.Attribute and test.attr.value in _SHAPE_ATTRIBUTES:  # type: ignore[attr-defined]
        return set()
    if kind is cst.Comparison and all(type(c.comparator) is cst.Name and c.comparator.value == "None"
                                      for c in test.comparisons):  # type: ignore[attr-defined]
        return set()  # `mask is not None`: whether it was passed, not which of its values are 0
    if kind is cst.Call:
        func = test.func  # type: ignore[attr-defined]
        if (type(func) is cst.Attribute and func.attr.value in _SHAPE_METHODS) or \
                (type(func) is cst.Name and func.value in _SHAPE_FUNCTIONS):
            return set()
    if kind is cst.Name or kind is cst.Attribute:
        found = names_in(test) if kind is cst.Name else {n for n in (dotted_name(test),) if n is not None}
        if kind is cst.Attribute:
            found |= value_names_in(test.value)  # type: ignore[attr-defined]
        return found
    found: set[str] = set()
    for child in child_nodes(test):
        found |= value_names_in(child)
    return found
# Exact-type tests on the hot paths: isinstance against a libcst class goes through
# ABCMeta.__instancecheck__, a Python call (a tenth of the analysis of one-line statements).
SEQUENCES = (cst.Tuple, cst.List)
DEFINITIONS = (cst.FunctionDef, cst.ClassDef)
IMPORTS = (cst.Import, cst.ImportFrom)
NAME_BINDERS = (cst.AssignTarget, cst.For, cst.AugAssign, cst.AnnAssign, cst.AsName)
BUILTINS = frozenset(dir(builtins))  # print(...), len(...): never in-file functions


def code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def mentions_any(node: cst.CSTNode, words) -> bool:
    """The source of `node` contains one of `words` (its code is generated once, not once per word:
    for a whole function that was most of a lint's time)."""
    text = code(node)
    return any(word in text for word in words)


_EMPTY = cst.Module(body=[])


def returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The function's own return statements (not those of nested functions)."""
    found = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) is cst.Return:
            found.append(node)  # type: ignore[arg-type]
        elif type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and \
                not isinstance(node, cst.BaseExpression):
            stack.extend(child_nodes(node))
    return found
