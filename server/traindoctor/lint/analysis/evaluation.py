"""What a function evaluates, told to other files (summary.py's `evaluates`, `evaluates_own`):

- the parameters it runs with autograd on inside a loop (`for batch in data: out = model(batch)`,
  or `score = model.predict(batch)`: a method of the object given an input, its result used), in a
  function that neither trains nor asks for gradients;
- for a method, that it puts a module of its own instance in eval mode and then runs it (or a
  wrapper of it: `self.mnetwork = DataParallel(self.network)`) with autograd on: one batch of an
  evaluation (`predict`).

A caller in another file that hands an evaluated model to such a function outside no_grad records
an autograd graph on every batch for nothing (TRN102 reads it at the call site, where the fix goes)."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes, iter_nodes
from .events import disables_grad
from .names import dotted_name
from .scopes import names_in
from .vocab import vocab

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def runs(function: cst.CSTNode, model: str, names=None) -> bool:
    """`function` calls `model` (or its forward) or one of its methods on an input, outside a
    no_grad/inference_mode block (with `names`, the file's, to tell them)."""
    todo = list(child_nodes(function))
    while todo:
        node = todo.pop()
        if names is not None and type(node) is cst.With and \
                any(disables_grad(names, item.item) for item in node.items):
            continue
        todo.extend(child_nodes(node))
        if type(node) is not cst.Call:
            continue
        name = dotted_name(node.func) or ""
        if name in (model, f"{model}.forward"):
            return True
        if type(node.func) is cst.Attribute and node.args and dotted_name(node.func.value) == model and \
                node.func.attr.value not in vocab().module_state_methods:
            return True
    return False


def evaluated_parameters(function: cst.FunctionDef, params: tuple[str, ...], names,
                         own_switches: bool = False) -> tuple[str, ...]:
    """The parameters `function` runs inside a loop with autograd on: "p" for `p(x)`/`p.forward(x)`,
    "p.method" for `y = p.method(x)` (a method other than the Module state API and library methods
    that turn autograd off themselves, whose result is used). The caller checks that the function
    trains nothing; a parameter the function itself puts in eval mode is its own finding, not listed
    (`own_switches`: listed too, for a file that is not linted)."""
    v = vocab()
    found: dict[str, str] = {}
    candidates = {p for p in params if p not in ("self", "cls")}
    if not candidates:
        return ()
    switched: set[str] = set()
    dropped: set[int] = set()  # calls that are whole expression statements: state changes, not runs
    todo: list[tuple[cst.CSTNode, bool]] = [(child, False) for child in child_nodes(function)]
    while todo:
        node, looping = todo.pop()
        kind = type(node)
        if kind in _SCOPES:
            continue
        if kind is cst.With and any(disables_grad(names, item.item) for item in node.items):
            continue
        if kind is cst.Expr:
            dropped.add(id(node.value))
        if kind is cst.Call and _root_name(node.func) in candidates:  # most calls name no parameter: cheap test
            name = dotted_name(node.func) or ""
            head, _, method = name.rpartition(".")
            if method in ("eval", "train") and head in candidates:
                switched.add(head)
            elif looping and name in candidates:
                found[name] = name
            elif looping and head in candidates and method == "forward":
                found[head] = head
            elif looping and head in candidates and node.args and id(node) not in dropped and \
                    method not in v.module_state_methods and method not in v.self_no_grad_methods:
                found.setdefault(head, name)
        inner = looping or kind in _LOOPS
        todo.extend((child, inner) for child in child_nodes(node))
    return tuple(sorted(entry for param, entry in found.items() if own_switches or param not in switched))


def _root_name(func: cst.BaseExpression) -> str:
    """`model` of `model(x)`, `model.predict(x)`, `model.module.forward(x)`; "" otherwise."""
    while type(func) is cst.Attribute:
        func = func.value
    return func.value if type(func) is cst.Name else ""


def evaluates_own(function: cst.FunctionDef, events, klass: cst.ClassDef | None) -> bool:
    """A method that puts a module of its instance in eval mode (`self.network.eval()`) and, after it,
    runs that module or an attribute the class builds from it (`self.mnetwork = DataParallel(self.network)`)
    on an input whose result it keeps, with autograd on, and never switches back to train mode or
    backpropagates. `events`: the method's training events (training.py), in source order."""
    if klass is None:
        return False
    evaluated: set[str] = set()
    for event in events:
        if event.kind in ("backward", "scaled_backward", "step", "train"):
            return False
        if event.kind == "eval" and not event.no_grad and event.receiver.startswith("self.") and \
                event.receiver.count(".") == 1:
            evaluated.add(event.receiver)
        elif event.kind == "call" and not event.no_grad and evaluated and \
                (event.bound or event.returned or event.unpacked) and \
                any(event.receiver == m or _built_from(klass, event.receiver, m) for m in evaluated):
            return True
    return False


def _built_from(klass: cst.ClassDef, attribute: str, module: str) -> bool:
    """Every assignment of `attribute` (`self.x`) in the class's methods is an expression that holds
    `module` (`DataParallel(self.network)`, `... if multi_gpu else self.network`): the same module."""
    values = [node.value for node in iter_nodes(klass)
              if type(node) is cst.Assign and any(dotted_name(t.target) == attribute for t in node.targets)]
    return bool(values) and all(module in names_in(value) for value in values)
