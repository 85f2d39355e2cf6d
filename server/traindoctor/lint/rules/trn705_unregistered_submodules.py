"""TRN705 unregistered-submodules: `self.layers = [nn.Linear(...) for ...]` in
a model class. A plain list/dict/tuple is not a Module: its modules are missing
from parameters() (never trained), .to(device), state_dict() and train()/eval().
nn.ModuleList/nn.ModuleDict register them. The rewrite is safe when the value
is a literal or comprehension of modules built right there and the attribute
is used only in ways ModuleList/ModuleDict support; otherwise it is unsafe."""

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
        if kind is None or not self._modules_built_here(value, function):
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
        if prefix is not None:
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
