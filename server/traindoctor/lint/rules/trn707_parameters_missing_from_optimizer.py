"""TRN707 parameters-missing-from-optimizer: an optimizer built over
`model.parameters()`, and then a layer of that model replaced or added
(`model.fc = nn.Linear(...)`) in the same function. The optimizer holds the old
layer's parameters; the new layer gets gradients but is never updated (the
classic transfer-learning head that stays at its random initialisation).
Flagged only when the optimizer is not rebuilt and no param group is added
after the replacement. No fix: where to build the optimizer is the author's call.

The other shape the issue names (an optimizer over a subset such as
`model.encoder.parameters()` while other parts get gradients) is usually a
deliberate partial fine-tune and is not flagged."""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import code
from ..analysis.names import dotted_name
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import Related, Rule


class ParametersMissingFromOptimizer(Rule):
    CODE = "TRN707"
    READS = ("names", "classes", "objects", "globals")

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target = dotted_name(node.targets[0].target) or ""
        owner, _, attr = target.rpartition(".")
        if not owner or owner == "self" or not self._builds_module(node.value):
            return
        if not self._same_scope(node, target, owner) and self.walk.function is None and \
                not self.walk.loops_here():
            self._module_level(node, target, owner)

    def visit_Call(self, node: cst.Call) -> None:
        """`ModelSpeedup(model, ...).speedup_model()` (vocabulary: module_replacing_methods) replaces
        the model's layers in place, like an assignment of a new layer."""
        func = node.func
        if not isinstance(func, cst.Attribute) or not isinstance(self.walk.parent, cst.Expr):
            return
        built = func.value
        if isinstance(built, cst.Name):
            bound = self.scope().lookup(built.value, self.walk.order)
            built = bound.value if bound is not None and bound.how == "assign" and bound.index is None else None
        if not isinstance(built, cst.Call):
            return
        methods = vocab().module_replacing_methods.get(self.names.qualify(built.func) or "", ())
        model = arg(built, 0, "model")
        owner = dotted_name(model) if model is not None and func.attr.value in methods else None
        if not owner or owner == "self":
            return
        target = f"{code(func)}()"
        if not self._same_scope(node, target, owner, "replaced its layers") and self.walk.function is None and \
                not self.walk.loops_here():
            self._module_level(node, target, owner, "replaced its layers")

    def _same_scope(self, node: cst.CSTNode, target: str, owner: str, how: str = "was replaced") -> bool:
        scope = self.scope()
        here = self.walk.order
        loops = tuple(id(loop) for loop in self.walk.loops_here())
        for name, defs in scope.defs.items():
            before = [d for d in defs if d.order <= here]
            if not before:
                continue
            last = before[-1]
            value = last.value
            if not isinstance(value, cst.Call) or last.how != "assign" or last.loops != loops:
                continue
            callee = self.names.qualify(value.func) or ""
            if self.model.kind_of_callee(callee) != "optimizer" or not value.args:
                continue
            params = code(value.args[0].value)
            if f"{owner}.parameters()" not in params and f"{owner}.named_parameters()" not in params:
                continue
            if any(d.order > here for d in defs) or self._param_group_added(name):
                continue  # rebuilt or extended after the replacement
            self._report(node, name, owner, target, value, how)
            return True
        return False

    def _module_level(self, node: cst.CSTNode, target: str, owner: str, how: str = "was replaced") -> None:
        """Top-level statements live in separate blocks: module-level objects and their blocks."""
        index = self.analysis.index
        for obj in self.model.facts["objects"]:
            call = obj.node
            if obj.where != "module" or not isinstance(call, cst.Call) or not call.args or \
                    self.model.kind_of_callee(obj.callee) != "optimizer":
                continue
            params = code(call.args[0].value)
            if f"{owner}.parameters()" not in params and f"{owner}.named_parameters()" not in params:
                continue
            homes = [a.index for a in self.model.global_defs.get(obj.name, ())]
            earlier = [i for i in homes if i < index]
            if not earlier or any(i >= index for i in homes) or self.model.objects[obj.name][-1] is not obj:
                continue  # built after the replacement, or rebuilt
            self._report(node, obj.name, owner, target, call, how)
            return

    def _report(self, node: cst.CSTNode, name: str, owner: str, target: str, value: cst.Call, how: str) -> None:
        message = (f"`{name}` was built over `{owner}.parameters()` before `{target}` {how}: the new "
                   f"layer's parameters are not in the optimizer, so it gets gradients but is never updated; "
                   f"build the optimizer after changing the model")
        self.report(node.targets[0].target if isinstance(node, cst.Assign) else node, message,
                    related=[Related(value, "the optimizer is built here, over the old parameters")])

    def _builds_module(self, call: cst.Call) -> bool:
        callee = self.names.qualify(call.func) or ""
        last = callee.rsplit(".", 1)[-1]
        if callee.startswith("torch.nn.") and callee.count(".") == 2 and last[:1].isupper():
            return last not in ("Parameter", "Buffer", "Identity") and not last.endswith("Loss")
        return self.model.kind_of_callee(callee) in ("model", "sequential")

    def _param_group_added(self, name: str) -> bool:
        function = self.walk.function
        text = code(function) if function is not None else ""
        return f"{name}.add_param_group" in text
