"""TRN705 unregistered-submodules: `self.layers = [nn.Linear(...) for ...]` in
a model class. A plain list/dict/tuple is not a Module: its modules are missing
from parameters() (never trained), .to(device), state_dict() and train()/eval().
nn.ModuleList/nn.ModuleDict register them. The rewrite is safe when the value
is a literal or comprehension of modules built right there and the attribute
is used only in ways ModuleList/ModuleDict support; otherwise it is unsafe.
An empty list/dict (or `[None] * n`) that the same method fills with modules
(`append`, `extend`, `insert`, `self.x[i] = ...`) is a container of modules too.
A list whose every module's `parameters()` the class registers by hand
(`self.register_parameter(name, p)` for each, directly or through one of its
own methods) loses nothing when its modules hold only parameters (Linear,
Conv, Embedding: no buffers, no train/eval behaviour), and is not reported."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import arg, dotted_name
from ..analysis.vocab import vocab
from ..rule import FixSpec, Replace, Rule
from ..walk import child_nodes, iter_nodes


class UnregisteredSubmodules(Rule):
    CODE = "TRN705"
    READS = ("names", "classes", "functions")

    def visit_Assign(self, node: cst.Assign) -> None:
        klass, function = self.walk.klass, self.walk.function
        if klass is None and function is not None and len(node.targets) == 1 and \
                type(node.targets[0].target) is cst.Name and type(node.value) is cst.List and not node.value.elements:
            self._returned_into_a_model(node, node.targets[0].target.value, function)
            return
        if klass is None or function is None or klass.name.value not in self.model.model_classes:
            return
        if len(node.targets) != 1:
            return
        target = dotted_name(node.targets[0].target) or ""
        if not target.startswith("self.") or target.count(".") != 1:
            return
        value = node.value
        kind = {cst.List: "list", cst.ListComp: "list", cst.Tuple: "tuple", cst.Dict: "dict",
                cst.DictComp: "dict"}.get(type(value))
        filled_later = _empty_or_placeholders(value)
        if filled_later:
            kind = "dict" if isinstance(value, cst.Dict) else "list"
            if not self._filled_with_modules(function, target):
                return
        elif kind is None or not self._modules_built_here(value, function):
            return
        attr = target[5:]
        uses = self._uses(klass, attr, node)
        if uses is None:
            return  # registered later (ModuleList(self.x), add_module) or rebound
        if not filled_later and self._parameters_registered_by_hand(klass, target, value):
            return
        if _each_module_registered(klass, function, target, filled_later):
            return  # every module of the list is also an attribute of the Module itself
        container = "nn.ModuleDict" if kind == "dict" else "nn.ModuleList"
        message = (f"`{target}` is a plain {kind} of modules: they are not registered, so their weights are "
                   f"missing from `parameters()` (never trained), `.to(device)`, `state_dict()` and "
                   f"`train()`/`eval()`; wrap it in `{container}`")
        nn = self.names.alias_of("torch.nn") or next((k for k, v in self.names.imports.items() if v == "torch.nn"),
                                                    None)
        prefix = nn or (f"{self.names.alias_of('torch')}.nn" if self.names.alias_of("torch") else None)
        fix = None
        if prefix is not None and filled_later:
            if isinstance(value, (cst.List, cst.Dict)):  # `[]` / `{}` filled by append / by key
                fix = FixSpec(f"Make it an empty {container}", (Replace(value, f"{prefix}.{container[3:]}()"),),
                              safe=bool(uses) and kind == "list")  # dict keys: strings only in a ModuleDict
        elif prefix is not None:
            inner = code(value)
            if kind == "tuple":
                inner = f"[{inner[1:-1] if isinstance(value, cst.Tuple) and value.lpar else inner}]"
            new = f"{prefix}.{container[3:]}({inner})"
            string_keys = kind != "dict" or (isinstance(value, cst.Dict) and all(
                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and "." not in e.key.value
                for e in value.elements))
            safe = uses and string_keys and kind != "tuple" and not isinstance(value, cst.DictComp)
            fix = FixSpec(f"Wrap in {container}", (Replace(value, new),), safe=safe)
        self.report(node.targets[0].target, message, fix=fix)

    def _returned_into_a_model(self, node: cst.Assign, local: str, function: cst.FunctionDef) -> None:
        """`module_list = []` in a module-level function that fills it with modules and returns it (as its
        value, or as one item of the tuple it returns), and a model class of this file stores that result
        in `self.x` (`self.info, self.layers = build(cfg)`): the model's list of modules is a plain list.
        Reported here, where `nn.ModuleList()` goes."""
        if sum(1 for a in iter_nodes(function) if type(a) is cst.Assign and any(
                type(t.target) is cst.Name and t.target.value == local for t in a.targets)) != 1 or \
                not self._filled_with_modules(function, local):
            return
        places = {_returned_item(r.value, local) for r in iter_nodes(function)
                  if type(r) is cst.Return and r.value is not None}
        if len(places) != 1 or -1 in places:
            return
        index = places.pop()
        for info, _ in self.model.function_home.values():
            klass = self.model.classes.get(info.klass) if info.klass in self.model.model_classes else None
            if klass is None or type(info.node) is not cst.FunctionDef or type(klass.node) is not cst.ClassDef:
                continue
            for stored in iter_nodes(info.node):
                if type(stored) is not cst.Assign or len(stored.targets) != 1 or type(stored.value) is not cst.Call or \
                        type(stored.value.func) is not cst.Name or stored.value.func.value != function.name.value:
                    continue
                target = stored.targets[0].target
                if index is not None:
                    elements = target.elements if type(target) in (cst.Tuple, cst.List) else ()  # type: ignore[union-attr]
                    target = elements[index].value if index < len(elements) else None
                name = dotted_name(target) if target is not None else None
                if not name or not name.startswith("self.") or name.count(".") != 1 or \
                        self._uses(klass.node, name[5:], stored) is None or \
                        _each_module_registered(klass.node, info.node, name, True):
                    continue
                nn = self.names.alias_of("torch.nn") or \
                    next((k for k, v in self.names.imports.items() if v == "torch.nn"), None) or \
                    (f"{self.names.alias_of('torch')}.nn" if self.names.alias_of("torch") else None)
                fix = FixSpec("Make it an empty nn.ModuleList", (Replace(node.value, f"{nn}.ModuleList()"),),
                              safe=False) if nn is not None else None
                self.report(node.targets[0].target,
                            f"`{local}` is a plain list of modules that `{function.name.value}()` returns into "
                            f"`{name}` of `{klass.name}`: they are not registered, so their weights are missing from "
                            f"`parameters()` (never trained), `.to(device)`, `state_dict()` and `train()`/`eval()`; "
                            f"make it an `nn.ModuleList`", fix=fix)
                return

    def _modules_built_here(self, value: cst.BaseExpression, function: cst.FunctionDef) -> bool:
        if isinstance(value, (cst.ListComp, cst.DictComp)):
            items = [value.elt if isinstance(value, cst.ListComp) else value.value]
        elif isinstance(value, cst.Dict):
            items = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
            if len(items) != len(value.elements):
                return False
        else:
            elements = value.elements  # type: ignore[union-attr]
            items = [e.value for e in elements if not isinstance(e, cst.StarredElement)]
            if len(items) != len(elements):
                return False
        return bool(items) and all(self._is_module_call(item) for item in items)

    def _filled_with_modules(self, function: cst.FunctionDef, target: str) -> bool:
        """`self.x.append(nn.Linear(...))`, `.extend([...])`, `.insert(i, m)`, `self.x[i] = m` in the
        same function: every item put in is a module built there (directly or through a local
        name bound only to module calls), and there is at least one."""
        items: list[cst.BaseExpression] = []
        for node in iter_nodes(function):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                    dotted_name(node.func.value) == target:
                method, args = node.func.attr.value, [a.value for a in node.args]
                if method == "append" and len(args) == 1:
                    items.append(args[0])
                elif method == "insert" and len(args) == 2:
                    items.append(args[1])
                elif method == "extend" and len(args) == 1 and isinstance(args[0], (cst.List, cst.ListComp)):
                    value = args[0]
                    items.extend([value.elt] if isinstance(value, cst.ListComp) else
                                 [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
                                 if all(not isinstance(e, cst.StarredElement) for e in value.elements) else [None])
                elif method in ("append", "insert", "extend", "update", "__setitem__"):
                    return False  # filled with something this does not follow
            elif isinstance(node, cst.Assign):
                for t in node.targets:
                    if isinstance(t.target, cst.Subscript) and dotted_name(t.target.value) == target:
                        items.append(node.value)
        return bool(items) and all(item is not None and self._module_value(item, function) for item in items)

    def _module_value(self, item: cst.BaseExpression, function: cst.FunctionDef) -> bool:
        if isinstance(item, cst.Name):
            bound = [node.value for node in iter_nodes(function) if isinstance(node, cst.Assign) and
                     any(isinstance(t.target, cst.Name) and t.target.value == item.value for t in node.targets)]
            rebound = any(isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor,
                                            cst.WithItem)) and
                          any(isinstance(n, cst.Name) and n.value == item.value
                              for n in iter_nodes(getattr(node, "target", None) or getattr(node, "asname", None)
                                                  or cst.Name("_")))
                          for node in iter_nodes(function))
            rebound = rebound or any(isinstance(node, cst.Assign) and any(
                not isinstance(t.target, cst.Name) and any(isinstance(n, cst.Name) and n.value == item.value
                                                           for n in iter_nodes(t.target)) for t in node.targets)
                for node in iter_nodes(function))
            return bool(bound) and not rebound and all(self._is_module_call(v) for v in bound)
        return self._is_module_call(item)

    def _is_module_call(self, item: cst.BaseExpression) -> bool:
        if not isinstance(item, cst.Call):
            return False
        callee = self.names.qualify(item.func) or ""
        last = callee.rsplit(".", 1)[-1]
        if callee in vocab().not_submodules or last in vocab().stateless_modules or last.endswith("Loss"):
            return False  # no weights and no train/eval behaviour: nothing is lost unregistered
        if callee.startswith("torch.nn.") and callee.count(".") == 2 and last[:1].isupper():
            return True
        if callee == last and self._stateless_class(last, frozenset()):
            return False  # an in-file Module that holds nothing unregistered could lose
        return self.model.kind_of_callee(callee) in ("model", "sequential", "softmax", "sigmoid") and \
            not callee.startswith("torch.nn.functional")

    def _stateless_class(self, name: str, seen: frozenset[str]) -> bool:
        """An in-file class deriving from nn.Module (or from such a class) whose instances hold
        no state a registration would reach: every `self.x = ...` binds a stateless torch module,
        an instance of such a class, a constant, or a value the class only uses in arithmetic (a
        number: a Module or a Parameter there would be another thing); it registers nothing by
        hand and never reads `self.training`. A plain list of them loses nothing."""
        info = self.model.classes.get(name)
        if info is None or name in seen or not info.bases:
            return False
        seen = seen | {name}
        if not all(b == "torch.nn.Module" or (b in self.model.classes and self._stateless_class(b, seen))
                   for b in info.bases):
            return False
        klass = info.node
        for node in iter_nodes(klass):
            if isinstance(node, cst.Attribute) and dotted_name(node) == "self.training":
                return False
            if isinstance(node, cst.Call) and (dotted_name(node.func) or "").split(".")[-1] in (
                    "register_buffer", "register_parameter", "add_module", "register_module", "__setattr__",
                    "setattr"):
                return False
            if isinstance(node, (cst.AugAssign, cst.AnnAssign)) and (dotted_name(node.target) or "").startswith("self."):
                return False
            if isinstance(node, cst.Assign) and any(
                    isinstance(t.target, (cst.Tuple, cst.List, cst.Subscript)) and "self." in code(t.target)
                    for t in node.targets):
                return False
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    attr = dotted_name(t.target) or ""
                    if attr.startswith("self.") and not self._stateless_value(node.value, attr, klass, seen):
                        return False
        return True

    def _stateless_value(self, value: cst.BaseExpression, attr: str, klass: cst.ClassDef,
                         seen: frozenset[str]) -> bool:
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
                isinstance(value, cst.Name) and value.value in ("True", "False", "None")):
            return True
        if isinstance(value, cst.Call):
            callee = self.names.qualify(value.func) or ""
            last = callee.rsplit(".", 1)[-1]
            return (callee.startswith("torch.nn.") and last in vocab().stateless_modules) or \
                (callee == last and self._stateless_class(last, seen))
        uses = [node for node in iter_nodes(klass) if isinstance(node, (cst.BinaryOperation, cst.Comparison,
                                                                         cst.UnaryOperation))]
        mentions = sum(1 for node in iter_nodes(klass) if isinstance(node, cst.Attribute) and dotted_name(node) == attr)
        in_arithmetic = sum(1 for op in uses for child in child_nodes(op)
                            if isinstance(child, cst.Attribute) and dotted_name(child) == attr) + sum(
            1 for op in uses if isinstance(op, cst.Comparison) for c in op.comparisons
            if isinstance(c.comparator, cst.Attribute) and dotted_name(c.comparator) == attr)
        bindings = sum(1 for node in iter_nodes(klass) if isinstance(node, cst.Assign)
                       for t in node.targets if dotted_name(t.target) == attr)
        return in_arithmetic >= 1 and in_arithmetic == mentions - bindings  # every read is arithmetic

    def _uses(self, klass: cst.ClassDef, attr: str, assign: cst.Assign) -> bool | None:
        """None when the class registers or rebinds the attribute elsewhere; else whether
        every use is one ModuleList/ModuleDict supports (the fix keeps the code working)."""
        allowed, registering = vocab().module_list_methods, vocab().registering_calls
        supported = True
        for node in iter_nodes(klass):
            if isinstance(node, cst.Call):
                callee = self.names.qualify(node.func) or ""
                if callee in registering and any(f"self.{attr}" in code(a.value) for a in node.args):
                    return None
            elif isinstance(node, cst.Assign) and node is not assign:
                if any(dotted_name(t.target) == f"self.{attr}" for t in node.targets):
                    return None
            elif isinstance(node, cst.Attribute) and dotted_name(node.value) == f"self.{attr}":
                supported = supported and node.attr.value in allowed
            elif isinstance(node, (cst.BinaryOperation, cst.Comparison)) and f"self.{attr}" in code(node):
                supported = False
        if f"isinstance(self.{attr}" in code(klass):
            supported = False
        return supported


    def _parameters_registered_by_hand(self, klass: cst.ClassDef, target: str, value: cst.BaseExpression) -> bool:
        """Every module of the list holds only parameters, and a loop over the whole list hands each
        one's `parameters()` to `self.register_parameter`, there or in a method of the class: the
        weights are in `parameters()`, `state_dict()`, and `.to()` converts the very Parameter
        objects the listed modules hold (Module._apply keeps them)."""
        items = [value.elt] if isinstance(value, cst.ListComp) else \
            [e.value for e in getattr(value, "elements", ())] if isinstance(value, (cst.List, cst.Tuple)) else []
        kinds = vocab().parameter_only_modules
        if not items or not all(isinstance(i, cst.Call) and (self.names.qualify(i.func) or "").startswith("torch.nn.")
                                and (self.names.qualify(i.func) or "").rsplit(".", 1)[-1] in kinds for i in items):
            return False
        methods = {s.name.value: s for s in klass.body.body if isinstance(s, cst.FunctionDef)}
        for loop in iter_nodes(klass):
            element = _loop_element(loop, target) if isinstance(loop, cst.For) else None
            if element is None:
                continue
            for node in iter_nodes(loop.body):
                if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                        and node.func.attr.value == "parameters" and dotted_name(node.func.value) == element):
                    continue
                if any(_registers_each(inner, node) for inner in iter_nodes(loop.body) if isinstance(inner, cst.For)):
                    return True
                if any(self._method_registers(call, node, methods) for call in iter_nodes(loop.body)
                       if isinstance(call, cst.Call)):
                    return True
        return False

    def _method_registers(self, call: cst.Call, argument: cst.Call, methods: dict[str, cst.FunctionDef]) -> bool:
        """`self.m(..., module.parameters(), ...)` where method `m` registers each item of that argument."""
        name = dotted_name(call.func) or ""
        method = methods.get(name[5:]) if name.startswith("self.") else None
        if method is None:
            return False
        params = [p.name.value for p in method.params.params][1:]  # after self
        for position, a in enumerate(call.args):
            if a.value is not argument or a.star:
                continue
            param = a.keyword.value if a.keyword is not None else params[position] if position < len(params) else None
            return param is not None and any(_registers_each(loop, cst.Name(param)) for loop in iter_nodes(method)
                                             if isinstance(loop, cst.For))
        return False


def _iterated(loop: cst.For) -> tuple[cst.BaseExpression, cst.Name | None]:
    """What a loop iterates and the name it binds to each item: `for m in X` and
    `for i, m in enumerate(X)` both give (X, m); the name is None for any other target."""
    iterable, names = loop.iter, loop.target
    if isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "enumerate" and len(iterable.args) == 1:
        iterable = iterable.args[0].value
        names = names.elements[1].value if isinstance(names, cst.Tuple) and len(names.elements) == 2 else None
    return iterable, names if isinstance(names, cst.Name) else None


def _loop_element(loop: cst.For, target: str) -> str | None:
    """The name a loop binds to each item of `target` (`for m in self.x`, `for i, m in enumerate(self.x)`)."""
    iterable, name = _iterated(loop)
    return name.value if name is not None and dotted_name(iterable) == target else None


def _registers_each(loop: cst.For, source: cst.BaseExpression) -> bool:
    """`for p in <source>:` (or `enumerate(<source>)`) whose body calls `self.register_parameter(..., p)`."""
    iterable, names = _iterated(loop)
    if names is None or not (iterable is source or code(iterable) == code(source)):
        return False
    return any(isinstance(node, cst.Call) and dotted_name(node.func) == "self.register_parameter"
               and isinstance(arg(node, 1, "param"), cst.Name) and arg(node, 1, "param").value == names.value
               for node in iter_nodes(loop.body))


def _returned_item(value: cst.BaseExpression, local: str) -> int | None:
    """Where a `return` gives back the local `local`: None (the whole value), the item's index in a
    returned tuple, or -1 (not at all)."""
    if type(value) is cst.Name and value.value == local:
        return None
    if type(value) in (cst.Tuple, cst.List):
        for i, element in enumerate(value.elements):  # type: ignore[attr-defined]
            if type(element.value) is cst.Name and element.value.value == local:
                return i
    return -1


def _empty_or_placeholders(value: cst.BaseExpression) -> bool:
    """`[]`, `{}`, `[None] * n`: a container that the function fills afterwards."""
    if isinstance(value, (cst.List, cst.Dict)):
        return not value.elements
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply) and \
        isinstance(value.left, cst.List) and len(value.left.elements) == 1 and \
        isinstance(value.left.elements[0].value, cst.Name) and value.left.elements[0].value.value == "None"


def _registered_name(call: cst.Call) -> str | None:
    """The local name a call registers as a submodule of `self`: `self.add_module(key, m)`,
    `self.register_module(key, m)`, `self.__setattr__(key, m)`, `setattr(self, key, m)` (all go
    through Module.__setattr__ / _modules). `object.__setattr__(self, ...)` bypasses it: not one."""
    func = dotted_name(call.func) or ""
    if func in ("self.add_module", "self.register_module"):
        module = arg(call, 1, "module")
    elif func == "self.__setattr__":
        module = arg(call, 1, "value")
    elif func == "setattr" and call.args and dotted_name(call.args[0].value) == "self":
        module = arg(call, 2, "value")
    else:
        return None
    return module.value if isinstance(module, cst.Name) else None


def _regions(node: cst.CSTNode, region: cst.CSTNode, out: list[tuple[cst.CSTNode, cst.CSTNode]]) -> None:
    """Each node paired with its innermost enclosing loop (or the function): one pass of a loop
    binds a local name to one object, so a name registered and appended in the same pass is the
    same module."""
    for child in child_nodes(node):
        out.append((child, region))
        _regions(child, child if isinstance(child, (cst.For, cst.While)) else region, out)


def _each_module_registered(klass: cst.ClassDef, function: cst.FunctionDef, target: str, filled: bool) -> bool:
    """Every module put in the plain list `target` is also registered on `self` (add_module,
    register_module, `self.__setattr__`, `setattr(self, ...)`): by a loop over the whole list in
    any method (`for i, m in enumerate(self.x): self.add_module(str(i), m)`), or, for a list filled
    by `append`/`insert`/`self.x[i] = m` in `function`, by registering the same local name in the
    same pass of the same loop. The list then only aliases registered modules: parameters(),
    state_dict(), .to() and train()/eval() all reach them."""
    for loop in iter_nodes(klass):
        element = _loop_element(loop, target) if isinstance(loop, cst.For) else None
        if element is not None and any(isinstance(n, cst.Call) and _registered_name(n) == element
                                       for n in iter_nodes(loop.body)):
            return True
    if not filled:
        return False
    pairs: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    _regions(function, function, pairs)
    registered = {(id(region), _registered_name(n)) for n, region in pairs if isinstance(n, cst.Call)}
    items: list[tuple[cst.CSTNode, cst.BaseExpression | None]] = []
    for node, region in pairs:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                dotted_name(node.func.value) == target:
            method, args = node.func.attr.value, [a.value for a in node.args]
            if method == "append" and len(args) == 1:
                items.append((region, args[0]))
            elif method == "insert" and len(args) == 2:
                items.append((region, args[1]))
            elif method in ("extend", "update", "__setitem__"):
                items.append((region, None))  # several modules at once: not followed
        elif isinstance(node, cst.Assign):
            items.extend((region, node.value) for t in node.targets
                         if isinstance(t.target, cst.Subscript) and dotted_name(t.target.value) == target)
    return bool(items) and all(isinstance(item, cst.Name) and (id(region), item.value) in registered
                               for region, item in items)
