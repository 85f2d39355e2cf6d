"""Which in-file functions produce the probabilities a program draws its actions (or
tokens, or classes) from: the `probs` of a `Categorical`/`OneHotCategorical` whose
`sample()` is taken, or of `torch.multinomial`. The probability such a function gives
to an index it was sampled at is not exactly 0: the draw never picks a zero-probability
index, so `log(p.gather(1, a))` of the drawn `a` is finite.

A call is resolved to the function it runs by what its receiver is, not by its name:
`self.pi(...)` in class C is `C.pi`; `model.pi(...)` where `model = C()` in the same
function (or at module level) is `C.pi`; `net(x)` where `net = C()` is `C.forward`; a
plain `f(...)` is the in-file function `f`.

Model layer of the analysis: it reads the file model's functions and classes."""

from __future__ import annotations

import libcst as cst

from ..walk import child_nodes
from .vocab import vocab

_SHAPE_ONLY = frozenset({"squeeze", "unsqueeze", "view", "reshape", "flatten", "contiguous", "float", "double",
                         "to", "cpu", "cuda", "clone"})


def sampled_functions(model) -> frozenset[str]:
    """Qualnames of the in-file functions whose returned probabilities are sampled from."""
    return model.remembered(("sampled_functions",), lambda: _sampled_functions(model))


def _sampled_functions(model) -> frozenset[str]:
    samplers = vocab().index_samplers
    found: set[str] = set()
    for info, _ in model.function_home.values():
        function = info.node
        if function is None:
            continue
        local = local_bindings(function)
        calls = list(_calls(function))
        sample_calls = [n for n in calls if type(n.func) is cst.Attribute and n.func.attr.value == "sample"]
        sampled = {id(n.func.value) for n in sample_calls}  # Categorical(p).sample()
        for n in sample_calls:  # m = Categorical(p); m.sample()
            if type(n.func.value) is cst.Name:
                sampled.update(id(v) for v in local.get(n.func.value.value, ()) if v is not None)
        for node in calls:
            qualified = model.names.qualify(node.func) or ""
            if qualified not in samplers:
                continue
            if not qualified.endswith("multinomial") and id(node) not in sampled:
                continue
            probs = _probs(node)
            if probs is None:
                continue
            if type(probs) is cst.Name:
                probs = _only_value(probs.value, local)
            if type(probs) is cst.Call:
                callee = resolve_call(probs, info.klass, local, model)
                if callee is not None:
                    found.add(callee)
    return frozenset(found)


def probability_of_drawn_index(target: cst.BaseExpression, function: cst.FunctionDef | None, klass: str,
                               model) -> bool:
    """`target` picks single entries (`p.gather(dim, a)`, `p[i, a]`) out of probabilities that
    an in-file function returned, and the program draws its indices from that function's
    output. Names are followed to their only binding in `function`."""
    if function is None:
        return False
    local = local_bindings(function)
    expr: cst.BaseExpression | None = target
    selected = False
    for _ in range(8):
        if expr is None:
            return False
        kind = type(expr)
        if kind is cst.Name:
            expr = _only_value(expr.value, local)
        elif kind is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "gather" \
                and not selected:
            selected, expr = True, expr.func.value
        elif kind is cst.Subscript and not selected and _picks_at_computed_index(expr):
            selected, expr = True, expr.value
        elif kind is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _SHAPE_ONLY:
            expr = expr.func.value
        elif kind is cst.Call:
            callee = resolve_call(expr, klass, local, model)
            return selected and callee is not None and callee in sampled_functions(model)
        else:
            return False
    return False


def _picks_at_computed_index(subscript: cst.Subscript) -> bool:
    """`p[a]`, `p[range(n), a]`: the last position is a computed index (an action), not a
    literal row (`p[0]`) or a slice (`p[:, 1:]`), which keep whole distributions."""
    last = subscript.slice[-1].slice
    return type(last) is cst.Index and type(last.value) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _only_value(name: str, local: dict[str, list[cst.BaseExpression | None]]) -> cst.BaseExpression | None:
    """The one value `name` is bound to, besides reshapes of itself (`prob = prob.view(-1)`)."""
    values = [v for v in local.get(name, ()) if not _reshapes(v, name)]
    return values[0] if len(values) == 1 else None


def _reshapes(value: cst.BaseExpression | None, name: str) -> bool:
    while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _SHAPE_ONLY:
        value = value.func.value
        if type(value) is cst.Name:
            return value.value == name
    return False


def _probs(node: cst.Call) -> cst.BaseExpression | None:
    for a in node.args:
        if a.keyword is not None and a.keyword.value in ("probs", "input"):
            return a.value
    positional = [a for a in node.args if a.keyword is None and not a.star]
    return positional[0].value if positional else None


def resolve_call(call: cst.Call, klass: str, local: dict[str, list[cst.BaseExpression]], model) -> str | None:
    """The qualname of the in-file function `call` runs, when its receiver says which."""
    func = call.func
    if type(func) is cst.Name:
        if func.value in model.classes:
            return None  # a constructor
        instance = _instance_class(func.value, local, model)
        if instance is not None:
            return _method(instance, "forward", model)
        return func.value if func.value in model.function_home else None
    if type(func) is cst.Attribute and type(func.value) is cst.Name:
        receiver, method = func.value.value, func.attr.value
        if receiver == "self":
            return _method(klass, method, model) if klass else None
        instance = _instance_class(receiver, local, model)
        return _method(instance, method, model) if instance is not None else None
    return None


def _instance_class(name: str, local: dict[str, list[cst.BaseExpression]], model) -> str | None:
    """The in-file class `name` is an instance of: bound once, here or at module level, to `C(...)`."""
    values = local.get(name)
    if values is None:
        obj = model.object(name)
        return obj.callee if obj is not None and obj.callee in model.classes else None
    if len(values) != 1 or type(values[0]) is not cst.Call or type(values[0].func) is not cst.Name:
        return None
    klass = values[0].func.value
    return klass if klass in model.classes else None


def _method(klass: str, method: str, model) -> str | None:
    """`klass.method`, or the method inherited from an in-file base class."""
    seen: set[str] = set()
    while klass and klass not in seen:
        seen.add(klass)
        if f"{klass}.{method}" in model.function_home:
            return f"{klass}.{method}"
        info = model.classes.get(klass)
        klass = next((b.rsplit(".", 1)[-1] for b in info.bases if b.rsplit(".", 1)[-1] in model.classes), "") \
            if info is not None else ""
    return None


def local_bindings(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    """Each plain name the function binds, with every value assigned to it (None: bound
    another way, by a loop or `+=`). A tuple target's names get the whole right-hand side."""
    found: dict[str, list[cst.BaseExpression | None]] = {}
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if kind is cst.Assign:
            for target in node.targets:
                for name in _target_names(target.target):
                    found.setdefault(name, []).append(node.value)
        elif kind in (cst.AugAssign, cst.For, cst.AnnAssign, cst.NamedExpr):
            for name in _target_names(node.target):
                found.setdefault(name, []).append(None)
        stack.extend(child_nodes(node))
    return found


def _target_names(target: cst.BaseExpression) -> list[str]:
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _calls(function: cst.FunctionDef):
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef):
            continue
        if type(node) is cst.Call:
            yield node
        stack.extend(child_nodes(node))
