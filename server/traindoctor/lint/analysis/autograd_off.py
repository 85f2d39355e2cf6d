"""Where autograd records nothing, decided from the code rather than from names:

- an in-file decorator that runs the function it wraps inside no_grad/inference_mode,

      def nograd(f):
          def new_f(*args, **kwargs):
              with torch.no_grad():
                  return f(*args, **kwargs)
          return new_f

  so that a method decorated with `@nograd` runs as under `@torch.no_grad()`;
- a project context manager whose `__enter__` enters a no_grad context (one it built in
  `__init__`, or `set_grad_enabled(False)`), always or when an `__init__` argument is true,

      with eval_mode(model, no_grad=True):   # __enter__: if self.no_grad: self.ctx.__enter__()

  so that its `with` block runs as under `torch.no_grad()`;
- a module whose every parameter was frozen before a point (`model.requires_grad_(False)`,
  `model.eval().requires_grad_(False)`, or `p.requires_grad = False` for each `p` of
  `model.parameters()`), unconditionally: calling it on inputs that need no gradient records
  no graph.

Reads the file model (model.py) and the walk state's no-grad test (context.py).
"""

from __future__ import annotations

import libcst as cst

from ..context import WalkState
from ..walk import child_nodes
from .model import FileModel
from .names import dotted_name

# Calls that return the module they are called on (`model.eval().requires_grad_(False).to(device)`).
_RETURNS_SELF = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16",
                           "requires_grad_", "type"})


def runs_without_grad(model: FileModel, function: cst.FunctionDef) -> bool:
    """`function` is decorated with an in-file decorator that runs it with autograd off."""
    if not function.decorators:
        return False
    wrappers = model.remembered("autograd_off.wrappers", lambda: _grad_off_wrappers(model))
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in wrappers  # type: ignore[operator]
               for d in function.decorators)


def _grad_off_wrappers(model: FileModel) -> frozenset[str]:
    walk = WalkState(model.names)
    return frozenset(name for name, (info, _) in model.function_home.items()
                     if "." not in name and isinstance(info.node, cst.FunctionDef) and
                     _wraps_without_grad(walk, info.node))


def wraps_without_grad(model: FileModel, decorator: cst.FunctionDef) -> bool:
    """`def d(f)` returns an inner function that calls `f` only with autograd off (the one
    definition: the project index's summaries use it too)."""
    return _wraps_without_grad(WalkState(model.names), decorator)


def _wraps_without_grad(walk: WalkState, decorator: cst.FunctionDef) -> bool:
    """`def d(f)` returns an inner function that calls `f` only with autograd off."""
    params = decorator.params.params
    if len(params) != 1 or not isinstance(decorator.body, cst.IndentedBlock):
        return False
    wrapped = params[0].name.value
    body = decorator.body.body
    inner = {stmt.name.value: stmt for stmt in body if isinstance(stmt, cst.FunctionDef)}
    returned = [stmt.body[0].value for stmt in body if isinstance(stmt, cst.SimpleStatementLine) and
                isinstance(stmt.body[0], cst.Return)]
    if not returned or not all(isinstance(r, cst.Name) and r.value in inner for r in returned):
        return False
    for name in {r.value for r in returned}:  # type: ignore[union-attr]
        function = inner[name]
        off = walk.disables_grad(function)
        calls = list(_calls_of(walk, function.body, wrapped, off))
        if not calls or not all(calls):
            return False
    return True


def _calls_of(walk: WalkState, node: cst.CSTNode, name: str, off: bool):
    """For each call of `name` under `node`: whether autograd is off there."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return
    if isinstance(node, cst.With) and walk.disables_grad(node):
        off = True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
        yield off
    for child in child_nodes(node):
        yield from _calls_of(walk, child, name, off)


GradOffFlag = tuple[str, int, bool]  # (the __init__ parameter, its position or -1, its default is true)


def call_turns_grad_off(model: FileModel, call: cst.Call) -> bool:
    """`call` (a `with` item) builds a context manager of this file or of the project that turns
    autograd off for its block, with the arguments it is given here."""
    name = dotted_name(call.func)
    if name is None:
        return False
    info = model.classes.get(name)
    if info is not None and isinstance(info.node, cst.ClassDef):
        flag = model.remembered(("autograd_off.context", name),
                                lambda: class_turns_grad_off(model.names, info.node))  # type: ignore[arg-type]
    else:
        found = model.imported.klass(model.names.qualify(call.func)) if model.imported else None
        flag = found.grad_off if found is not None else None
    return flag is not None and _flag_is_true(call, flag)


def class_turns_grad_off(names, klass: cst.ClassDef) -> GradOffFlag | None:
    """How entering an instance of `klass` turns autograd off: ("", -1, True) always, or
    (parameter, position, default is true) when its `__init__` argument `parameter` is true;
    None when `__enter__` enters no no_grad context (read from the class's own methods)."""
    methods = {m.name.value: m for m in klass.body.body if isinstance(m, cst.FunctionDef)} \
        if isinstance(klass.body, cst.IndentedBlock) else {}
    enter, init = methods.get("__enter__"), methods.get("__init__")
    if enter is None or not isinstance(enter.body, cst.IndentedBlock):
        return None
    walk = WalkState(names)
    contexts: set[str] = set()  # self attributes bound to a no_grad context
    flags: dict[str, str] = {}  # self attribute -> the __init__ parameter it holds
    for method in (init, enter):
        for target, value in _self_assignments(method):
            if isinstance(value, cst.Call) and walk.is_no_grad_expr(value):
                contexts.add(target)
            elif isinstance(value, cst.Name):
                flags[target] = value.value
    for stmt in enter.body.body:
        if _enters(walk, stmt, contexts):
            return ("", -1, True)
        test = stmt.test if isinstance(stmt, cst.If) and stmt.orelse is None else None
        attr = _self_attribute(test) if test is not None else None
        if attr in flags and isinstance(stmt.body, cst.IndentedBlock) and \
                any(_enters(walk, inner, contexts) for inner in stmt.body.body) and init is not None:
            return _parameter(init, flags[attr])
    return None


def _self_assignments(method: cst.FunctionDef | None):
    """(attribute, value) for each `self.attribute = value` statement at the top of `method`."""
    if method is None or not isinstance(method.body, cst.IndentedBlock):
        return
    for stmt in method.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    attr = _self_attribute(small.targets[0].target)
                    if attr:
                        yield attr, small.value


def _self_attribute(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _enters(walk: WalkState, stmt: cst.CSTNode, contexts: set[str]) -> bool:
    """`stmt` is `self.ctx.__enter__()` of a no_grad context, `torch.no_grad().__enter__()` or
    `torch.set_grad_enabled(False)`."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
        if call is None:
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "__enter__" and not call.args:
            receiver = func.value
            if _self_attribute(receiver) in contexts or \
                    (isinstance(receiver, cst.Call) and walk.is_no_grad_expr(receiver)):
                return True
        elif walk.names.qualify(func) == "torch.set_grad_enabled" and walk.is_no_grad_expr(call):
            return True
    return False


def _parameter(init: cst.FunctionDef, name: str) -> GradOffFlag | None:
    params = init.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]  # after self
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            position = positional.index(name) if name in positional else -1
            return (name, position, _true_literal(param.default) if param.default is not None else False)
    return None


def _flag_is_true(call: cst.Call, flag: GradOffFlag) -> bool:
    name, position, default = flag
    if not name:
        return True
    positional = []
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return _true_literal(arg.value)
        elif arg.star:
            return False  # cannot tell which argument lands where
        else:
            positional.append(arg.value)
    if 0 <= position < len(positional):
        return _true_literal(positional[position])
    return default


def _true_literal(expr: cst.BaseExpression) -> bool:
    """`True` or a non-zero integer: a value we know is true without running anything."""
    if isinstance(expr, cst.Name):
        return expr.value == "True"
    return isinstance(expr, cst.Integer) and expr.evaluated_value != 0


def frozen_before(root: cst.CSTNode, module: str, until: cst.CSTNode, same) -> bool:
    """Every parameter of `module` has requires_grad False when `until` (a statement of
    `root`'s body, at any depth) starts: the last switch before it that runs whenever `until`
    does (outside loops, `if`s and `try`s that do not hold `until`; in the block that holds it:
    `if run_eval: model.requires_grad_(False); evaluate(model)`) freezes it. `same(a, b)`:
    whether two receivers are one object."""
    frozen = False
    for stmt, plain in _statements_before(root, until):
        if not plain:
            continue
        switch = _switch(stmt, module, same)
        if switch is not None:
            frozen = switch
    return frozen


def _holders(root: cst.CSTNode, until: cst.CSTNode) -> set[int]:
    """The ids of the nodes between `root` and `until` (both included); empty when `until` is not under it."""
    path: list[cst.CSTNode] = []

    def find(node: cst.CSTNode) -> bool:
        path.append(node)
        if node is until or any(find(child) for child in child_nodes(node)
                                if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda))):
            return True
        path.pop()
        return False

    find(root)
    return {id(node) for node in path}


def _statements_before(root: cst.CSTNode, until: cst.CSTNode):
    """(statement, runs whenever `until` does) in source order up to `until`: compound statements
    are entered; a statement runs whenever `until` does when every loop, `if`, `try` or handler
    that encloses it also encloses `until` (a `with` body always runs)."""
    stop = []
    holders = _holders(root, until)

    def visit(body, plain):
        for stmt in body:
            if stmt is until or stop:
                stop.append(True)
                return
            yield stmt, plain
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            for child in child_nodes(stmt):
                if isinstance(child, cst.IndentedBlock):
                    yield from visit(child.body, plain and (isinstance(stmt, cst.With) or id(child) in holders))
                elif isinstance(child, (cst.Else, cst.Finally, cst.ExceptHandler, cst.If)):
                    yield from visit(_bodies(child), plain and id(child) in holders)
                if stop:
                    return

    body = root.body.body if isinstance(root, cst.FunctionDef) and isinstance(root.body, cst.IndentedBlock) \
        else getattr(root, "body", ())
    yield from visit(body, True)


def _bodies(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.If):
        return [node]
    block = getattr(node, "body", None)
    return list(block.body) if isinstance(block, cst.IndentedBlock) else []


def _switch(stmt: cst.CSTNode, module: str, same) -> bool | None:
    """What `stmt` sets `module`'s parameters' requires_grad to (None: it does not)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            found = _requires_grad_call(value, module, same) if value is not None else None
            if found is not None:
                return found
    if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and isinstance(stmt.iter, cst.Call) and \
            isinstance(stmt.iter.func, cst.Attribute) and stmt.iter.func.attr.value == "parameters" and \
            not stmt.iter.args and same(dotted_name(stmt.iter.func.value) or "", module) and \
            isinstance(stmt.body, cst.IndentedBlock):
        param = stmt.target.value
        for line in stmt.body.body:  # `p.requires_grad = False` / `p.requires_grad_(False)`, unconditionally
            for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        dotted_name(small.targets[0].target) == f"{param}.requires_grad" and \
                        isinstance(small.value, cst.Name) and small.value.value in ("False", "True"):
                    return small.value.value == "False"
                if isinstance(small, cst.Expr) and _requires_grad_call(small.value, param, lambda a, b: a == b) \
                        is not None:
                    return _requires_grad_call(small.value, param, lambda a, b: a == b)
    return None


def _requires_grad_call(expr: cst.BaseExpression, module: str, same) -> bool | None:
    """`module[.eval()...].requires_grad_(flag)[.to(...)]`: the flag (default True)."""
    flag = None
    node = expr
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in _RETURNS_SELF:
        if node.func.attr.value == "requires_grad_" and flag is None:  # the outermost call runs last
            first = node.args[0].value if node.args else None
            flag = not (isinstance(first, cst.Name) and first.value == "False")
        node = node.func.value
    if flag is None:
        return None
    name = dotted_name(node)
    return (not flag) if name is not None and same(name, module) else None
