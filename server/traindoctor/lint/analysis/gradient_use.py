"""Whether a tensor computed at some point of a function can carry a gradient back: some
use of it reaches a loss, a return, an attribute, a container or a call that may keep
it; or every use ends where autograd does not differentiate (a comparison, `.item()`,
`.detach()`, an integer cast, a shape, a printed or formatted value, an `if` test).

`sqrt(x)` has an infinite gradient at 0 and `log(x)` is -inf there, but neither matters
to backward when the result only feeds a validity mask or a logged metric.

Followed within one function (or module-level code): through expressions, and through
the plain names the value is assigned to, to the reads of those names that the assignment
reaches (flow.py: a binding overwritten on every path before a read is not read there).
Anything not known to drop the gradient keeps it (a call of an unknown function, a return, a
`self.x = ...`): the answer "no gradient" is given only when every path is known.

Layer 1 of the analysis: it imports only names.py, flow.py and the walker."""

from __future__ import annotations

from typing import Callable, Sequence

import libcst as cst

from ..walk import child_nodes, iter_nodes
from .flow import FlowGraph

# Tensor methods and attributes whose result carries no gradient (a Python number, a
# NumPy array, an integer or boolean tensor, a detached copy, metadata).
_DROPPING_METHODS = frozenset({
    "item", "tolist", "numpy", "detach", "detach_", "long", "int", "bool", "short", "byte", "char",
    "argmax", "argmin", "argsort", "nonzero", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf",
    "isfinite", "sign", "size", "dim", "numel", "all", "any", "count_nonzero", "__bool__", "__len__"})
_DROPPING_ATTRIBUTES = frozenset({"shape", "dtype", "device", "data", "ndim", "is_cuda", "requires_grad", "grad_fn"})
# Functions whose result from a tensor argument carries no gradient.
_DROPPING_FUNCTIONS = frozenset({
    "float", "int", "bool", "len", "round", "str", "repr", "print", "format", "math.isnan", "math.isfinite",
    "math.isinf", "torch.argmax", "torch.argmin", "torch.argsort", "torch.isnan", "torch.isinf",
    "torch.isfinite", "torch.sign", "torch.eq", "torch.ne", "torch.lt", "torch.le", "torch.gt", "torch.ge",
    "torch.nonzero", "torch.count_nonzero", "torch.all", "torch.any", "torch.numel",
    "logging.info", "logging.debug", "logging.warning", "logging.error"})
_DROPPING_CALL_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "write", "format", "add_scalar",
                                    "set_postfix", "set_description", "log_metrics"})
_PREFIXES_KEEPING = ("torch.",)  # torch ops: their result carries the argument's gradient
_MAX_NAMES = 16


def reaches_gradient(stack: Sequence[cst.CSTNode], qualify: Callable[[cst.BaseExpression], str | None]) -> bool:
    """`stack` is the walk's stack down to the expression (its last entry). True unless every
    use of the expression's value provably drops the gradient."""
    root = next((node for node in reversed(stack) if type(node) in (cst.FunctionDef, cst.Module)), None)
    if root is None:
        return True
    parents = _parents(root)
    reached = _Reached(root, parents)
    seen: set[tuple[str, int]] = set()
    pending: list[cst.CSTNode] = [stack[-1]]
    while pending:
        node = pending.pop()
        outcome = _follow(node, parents, qualify)
        if outcome is True:
            return True
        names, binding = outcome if outcome else ([], None)
        for name in names:
            if (name, id(binding)) in seen:
                continue
            seen.add((name, id(binding)))
            if len(seen) > _MAX_NAMES:
                return True
            reads = _reads(root, name, parents)
            if reads is None:
                return True  # read in a nested function or class: it may go anywhere
            pending.extend(read for read in reads if reached(binding, name, read))
    return False


def value_unused(stack: Sequence[cst.CSTNode]) -> bool:
    """The expression (the last entry of the walk's `stack`) is the whole value of an assignment to
    plain local names, and no read of any of them is reached by that assignment: every path
    rebinds them first, or nothing reads them. A value nobody reads cannot turn a loss NaN. Only in a
    function: a module's names may be imported and read elsewhere."""
    root = next((node for node in reversed(stack) if type(node) in (cst.FunctionDef, cst.Module)), None)
    if type(root) is not cst.FunctionDef or len(stack) < 2 or type(stack[-2]) is not cst.Assign or stack[-2].value is not stack[-1]:
        return False
    statement = stack[-2]
    names = [_plain(t.target) for t in statement.targets]
    if any(group is None for group in names):
        return False
    parents = _parents(root)
    reached = _Reached(root, parents)
    for name in (n for group in names for n in group):
        reads = _reads(root, name, parents)
        if reads is None or any(reached(statement, name, read) for read in reads):
            return False
    return True


class _Reached:
    """Whether a binding statement reaches a read of `name` (flow.py's reaching definitions over
    `root`'s statements); yes whenever the flow graph cannot tell."""

    def __init__(self, root: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> None:
        self.root, self.parents = root, parents
        self._flow: FlowGraph | None = None

    def __call__(self, binding: cst.CSTNode | None, name: str, read: cst.CSTNode) -> bool:
        if binding is None:
            return True
        if self._flow is None:
            body = self.root.body.body if type(self.root) is cst.FunctionDef else self.root.body
            self._flow = FlowGraph(body if isinstance(body, (list, tuple)) else [])
        flow = self._flow
        if flow.node_of(binding) is None:
            return True
        statement: cst.CSTNode | None = read
        while statement is not None and flow.node_of(statement) is None:
            statement = self.parents.get(id(statement))
        if statement is None:
            return True
        return any(found is binding for found in flow.reaching(statement, name))


def _follow(node: cst.CSTNode, parents: dict[int, cst.CSTNode], qualify) -> bool | tuple[list[str], cst.CSTNode | None]:
    """Climb from `node` while the value flows on: True when it may keep a gradient, the
    names it is assigned to (to follow) with the assignment, or () when the gradient is dropped here."""
    child = node
    while True:
        parent = parents.get(id(child))
        if parent is None:
            return True
        kind = type(parent)
        if kind is cst.Comparison or kind is cst.ComparisonTarget:
            return ()
        if kind is cst.FormattedStringExpression or kind is cst.FormattedString:
            return ()
        if kind is cst.Attribute:
            if parent.value is child and parent.attr.value in _DROPPING_ATTRIBUTES:
                return ()
        elif kind is cst.Call:
            func = parent.func
            if func is child:  # x.method(...)
                if type(func) is cst.Attribute and func.attr.value in _DROPPING_METHODS:
                    return ()
            else:  # an argument (through its Arg)
                qualified = qualify(func) or ""
                if qualified in _DROPPING_FUNCTIONS or \
                        (type(func) is cst.Attribute and func.attr.value in _DROPPING_CALL_METHODS):
                    return ()
                if not qualified.startswith(_PREFIXES_KEEPING):
                    return True  # an unknown callee (or a method given the value: `losses.append(x)`) may keep it
        elif kind is cst.Subscript:
            if parent.value is not child:
                return ()  # an index: integer positions carry no gradient
        elif kind in (cst.SubscriptElement, cst.Index, cst.Slice):
            pass
        elif kind is cst.IfExp:
            if parent.test is child:
                return ()
        elif kind in (cst.If, cst.While, cst.Assert):
            return ()  # a test
        elif kind is cst.Assign:
            names = [_plain(t.target) for t in parent.targets]
            return True if any(n is None for n in names) else ([n for group in names for n in group], parent)
        elif kind is cst.AnnAssign or kind is cst.AugAssign:
            names = _plain(parent.target)
            return True if names is None else (names, None)  # an accumulation: every read
        elif kind in (cst.Arg, cst.BinaryOperation, cst.UnaryOperation, cst.Tuple, cst.List, cst.Element,
                      cst.StarredElement, cst.Dict, cst.DictElement, cst.Set):
            pass
        else:
            return True  # a return, a statement expression, a loop header, a lambda, ...
        child = parent


def _plain(target: cst.BaseExpression) -> list[str] | None:
    """The names of a target made only of plain names (`x`, `a, b`); None otherwise."""
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        found: list[str] = []
        for element in target.elements:
            names = _plain(element.value)
            if names is None:
                return None
            found.extend(names)
        return found
    return None


def _reads(root: cst.CSTNode, name: str, parents: dict[int, cst.CSTNode]) -> list[cst.CSTNode] | None:
    """The loads of `name` in `root`'s own code; None if a nested function or class reads it,
    or the name is declared global/nonlocal."""
    found: list[cst.CSTNode] = []
    if any(type(node) in (cst.Global, cst.Nonlocal) and any(n.name.value == name for n in node.names)
           for node in iter_nodes(root) if type(node) in (cst.Global, cst.Nonlocal)):
        return None  # bound for code elsewhere to read
    stack = list(child_nodes(root))
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            if any(type(n) is cst.Name and n.value == name for n in iter_nodes(node)):
                return None
            continue
        if kind is cst.Name and node.value == name and not _is_store(node, parents):
            found.append(node)
        elif kind is cst.Attribute:
            stack.append(node.value)  # `x.attr`: x is read; `obj.x` is not the name x
            continue
        elif kind is cst.Arg:
            stack.append(node.value)  # `f(x=...)`: the keyword is not a read
            continue
        stack.extend(child_nodes(node))
    return found


def _is_store(name: cst.Name, parents: dict[int, cst.CSTNode]) -> bool:
    node: cst.CSTNode = name
    while True:
        parent = parents.get(id(node))
        if type(parent) in (cst.Tuple, cst.List, cst.Element, cst.StarredElement):
            node = parent
            continue
        if type(parent) is cst.AssignTarget or (type(parent) in (cst.AnnAssign,) and parent.target is node):
            return True
        if type(parent) is cst.For and parent.target is node:
            return True
        return False  # an AugAssign target is read too


def _parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    parents: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            parents[id(child)] = node
            if type(child) not in (cst.FunctionDef, cst.ClassDef):
                stack.append(child)
    return parents
