"""Draws whose value becomes a seed: `seed = random.randint(0, 2**32 - 1)` then
`torch.manual_seed(seed)`, or a function that returns such a draw to a caller that seeds with it
(a "randomize seed" option). The run is then fixed by the seed it picked, which the program may
record (print it, return it to the interface); the draw is the choice of the seed, not
randomness that the seed leaves uncontrolled.

The value is followed through one function body at a time (`scope_nodes`, in source order): a
name bound to it and read after the binding, `int()`/`abs()` and `%` around it, a conditional
expression or `or` that picks it, a return to the function's in-file callers, and an argument of
an in-file function whose parameter the function seeds with. Each read of it is one of:
- a seed: the seed argument of a seeding call (randomness.classify_seed's kinds, not determinism);
- a record: returned inside a tuple, printed, formatted into a string;
- anything else (it is computed with, handed to an unknown function): the draw is not only a seed."""

from __future__ import annotations

import libcst as cst

from .def_use import parents_of
from .facts import Draw
from .model import FileModel
from .names import dotted_name
from .randomness import arg
from ..walk import scope_nodes

_DEPTH = 3
_WRAPPERS = frozenset({"int", "abs"})
_RECORDERS = frozenset({"print", "str", "repr"})


def draws_a_seed(model: FileModel, draw: Draw) -> bool:
    """Every use of the draw's value is a seed or a record of it, and one is a seed."""
    return isinstance(draw.node, cst.Call) and seeds_with(model, draw.node)


def returns_its_draw(model: FileModel, draw: Draw) -> bool:
    """Every use of the draw's value is its function's return (or a record of it): what the value is
    for is its callers' to say (a project summary's `returned_draws`; `seeds_with` at a call site)."""
    return draw.node is not None and _flow(model, draw.node, _DEPTH, at_return=True) == "returned"


def seeds_with(model: FileModel, call: cst.Call) -> bool:
    """The value `call` returns becomes a seed here (and is otherwise only recorded)."""
    return _flow(model, call, _DEPTH) == "seed"


def _scope(model: FileModel, node: cst.CSTNode) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]] | None:
    """The nodes of the function body that holds `node` (source order) and their parents; None at
    module level (module names are read from functions too: not followed)."""
    info = model.enclosing_function(node)
    if info is None or not isinstance(info.node, cst.FunctionDef):
        return None
    return _body(model, info.node)


def _body(model: FileModel, root: cst.FunctionDef) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]]:
    """The nodes of function `root` (source order) and their parents, once per lint."""
    return model.remembered(("seed_draws.scope", id(root)), lambda: (scope_nodes(root), parents_of(root)))


def _seed_calls(model: FileModel) -> dict[int, cst.Call]:
    return model.remembered("seed_draws.seeds", lambda: {
        id(s.node): s.node for s in model.seeds if s.kind != "determinism" and isinstance(s.node, cst.Call)})


def _join(results: list[str | None]) -> str | None:
    if not results or None in results:
        return None
    return next((kind for kind in ("seed", "returned") if kind in results), "record")


def _flow(model: FileModel, node: cst.CSTNode, depth: int, at_return: bool = False) -> str | None:
    """Where the value of expression `node` goes: "seed", "record", "returned" (with `at_return`: the
    function returns it) or None (elsewhere)."""
    found = _scope(model, node)
    if found is None:
        return None
    nodes, parents = found
    while True:
        parent = parents.get(id(node))
        if type(parent) is cst.Arg and parent.value is node and not parent.star:
            call = parents.get(id(parent))
            if type(call) is not cst.Call:
                return None
            name = dotted_name(call.func) or ""
            if name in _WRAPPERS and len(call.args) == 1:
                node = call
                continue
            if id(call) in _seed_calls(model):
                return "seed" if arg(call, "seed", 0) is node else None
            if name in _RECORDERS:
                return "record"
            return "seed" if depth > 0 and _seeding_parameter(model, call, parent, depth - 1) else None
        if type(parent) is cst.IfExp and node is not parent.test:
            node = parent
            continue
        if type(parent) is cst.BooleanOperation and type(parent.operator) is cst.Or:
            node = parent
            continue
        if type(parent) is cst.BinaryOperation and type(parent.operator) is cst.Modulo and node is parent.left:
            node = parent
            continue
        if type(parent) in (cst.FormattedStringExpression,):
            return "record"
        if type(parent) is cst.Element and type(parents.get(id(parent))) is cst.Tuple and \
                type(parents.get(id(parents.get(id(parent))))) is cst.Return:
            return "record"  # `return images, seed`: handed back with the results
        if type(parent) is cst.Return:
            return "returned" if at_return else _returned(model, parent, depth)
        if type(parent) in (cst.Assign, cst.AnnAssign) and parent.value is node:
            targets = [t.target for t in parent.targets] if type(parent) is cst.Assign else [parent.target]
            if len(targets) != 1 or type(targets[0]) is not cst.Name:
                return None
            return _name_flow(model, nodes, parents, targets[0].value, parent, depth, at_return)
        return None


def _name_flow(model, nodes, parents, name: str, binding: cst.CSTNode | None, depth: int,
               at_return: bool = False) -> str | None:
    """The reads of local `name` after `binding` (from the start when None): all of them, also after
    a later binding (which a branch may skip)."""
    start = 0
    if binding is not None:
        start = next((i for i, n in enumerate(nodes) if n is binding), None)
        if start is None:
            return None
        inside = {id(n) for n in scope_nodes(binding)}
        start += len(inside)
    results = []
    for n in nodes[start:]:
        if type(n) is cst.Name and n.value == name and _is_read(n, parents):
            results.append(_flow(model, n, depth, at_return))
    return _join(results)


def _is_read(name: cst.Name, parents) -> bool:
    parent = parents.get(id(name))
    if type(parent) is cst.Attribute and parent.attr is name:
        return False
    if type(parent) is cst.Arg and parent.keyword is name:
        return False
    if type(parent) in (cst.Param, cst.FunctionDef, cst.ClassDef, cst.AssignTarget):
        return False
    return True


def _returned(model: FileModel, statement: cst.Return, depth: int) -> str | None:
    """A function that returns the value: where it goes at each in-file call (all of them, one at least)."""
    info = model.enclosing_function(statement)
    if info is None or depth <= 0:
        return None
    sites = [s.node for s in model.call_sites(info.name, info.klass) if isinstance(s.node, cst.Call)]
    return _join([_flow(model, site, depth - 1) for site in sites])


def _seeding_parameter(model: FileModel, call: cst.Call, argument: cst.Arg, depth: int) -> bool:
    """`call` calls an in-file function whose parameter that receives `argument` it seeds with (and
    otherwise only records)."""
    name = dotted_name(call.func) or ""
    caller = model.enclosing_function(call)
    info = model.function(name, caller.klass if caller is not None and name.startswith("self.") else "")
    if info is None or not isinstance(info.node, cst.FunctionDef):
        return False
    params = [p.name.value for p in info.node.params.params]
    if name.startswith("self.") or (info.klass and params[:1] == ["self"]):
        params = params[1:]
    if argument.keyword is not None:
        param = argument.keyword.value
    else:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        index = next(i for i, a in enumerate(positional) if a is argument)
        param = params[index] if index < len(params) else None
    if param is None or param not in params:
        return False
    nodes, parents = _body(model, info.node)
    return _name_flow(model, nodes, parents, param, None, depth) == "seed"
