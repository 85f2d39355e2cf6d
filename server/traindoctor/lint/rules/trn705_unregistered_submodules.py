"""TRN705 unregistered-submodules: `self.layers = [nn.Linear(...) for ...]` in
a model class. A plain list/dict/tuple is not a Module: its modules are missing
from parameters() (never trained), .to(device), state_dict() and train()/eval().
nn.ModuleList/nn.ModuleDict register them. The rewrite is safe when the value
is a literal or comprehension of modules built right there and the attribute
is used only in ways ModuleList/ModuleDict support; otherwise it is unsafe.
An empty list/dict (or `[None] * n`) that the same method fills with modules
(`append`, `extend`, `insert`, `self.x[i] = ...`) is a container of modules too."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.vocab import vocab
from ..rule import FixSpec, Replace, Rule
from ..walk import iter_nodes


class UnregisteredSubmodules(Rule):
    CODE = "TRN705"
    READS = ("names", "classes")

    def visit_Assign(self, node: cst.Assign) -> None:
        klass, function = self.walk.klass, self.walk.function
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
        return self.model.kind_of_callee(callee) in ("model", "sequential", "softmax", "sigmoid") and \
            not callee.startswith("torch.nn.functional")

    def _uses(self, klass: cst.ClassDef, attr: str, assign: cst.Assign) -> bool | None:
        """None when the class registers or rebinds the attribute elsewhere; else whether
        every use is one ModuleList/ModuleDict supports (the fix keeps the code working)."""
        allowed, registering = vocab().module_list_methods, vocab().registering_calls
        supported = True
        for node in iter_nodes(klass):
            if isinstance(node, cst.Call):
                callee = self.names.qualify(node.func) or ""
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("add_module", "register_module"):
                    return None
                if callee == "setattr" and node.args and dotted_name(node.args[0].value) == "self":
                    return None  # setattr(self, name, module) registers through Module.__setattr__
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


def _empty_or_placeholders(value: cst.BaseExpression) -> bool:
    """`[]`, `{}`, `[None] * n`: a container that the function fills afterwards."""
    if isinstance(value, (cst.List, cst.Dict)):
        return not value.elements
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply) and \
        isinstance(value.left, cst.List) and len(value.left.elements) == 1 and \
        isinstance(value.left.elements[0].value, cst.Name) and value.left.elements[0].value.value == "None"
