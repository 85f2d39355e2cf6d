"""TRN707 parameters-missing-from-optimizer: an optimizer built over
`model.parameters()`, and then a layer of that model replaced or added
(`model.fc = nn.Linear(...)`) in the same function. The optimizer holds the old
layer's parameters; the new layer gets gradients but is never updated (the
classic transfer-learning head that stays at its random initialisation).
Flagged only when the optimizer is not rebuilt and no param group is added
after the replacement. A call that swaps a model's layers in place (NNI's
`ModelSpeedup(model, ...).speedup_model()`: vocabulary module_replacing_methods) is a
replacement too. And a param group dict filled with parameters but, unlike the groups
bound to the same name before it, never appended to the list the optimizer is built
from: its parameters are never updated.
No fix: where to build the optimizer is the author's call.

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
from ..walk import child_nodes


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

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A param group dict built like the others (`group = {...}; group["params"].append(p)`) but,
        unlike them, never added to the list the optimizer is built from: its parameters never train."""
        groups = [statement.body[0] for statement in node.body.body
                  if type(statement) is cst.SimpleStatementLine and type(statement.body[0]) is cst.Assign and
                  len(statement.body[0].targets) == 1 and type(statement.body[0].targets[0].target) is cst.Name and
                  type(statement.body[0].value) is cst.Dict]
        if not groups:
            return  # no group dict bound in the body: nothing to walk for (most functions)
        order: list[tuple[cst.CSTNode, cst.CSTNode | None]] = list(_preorder(node.body, None))
        position = {id(n): i for i, (n, _) in enumerate(order)}
        parents = {id(n): parent for n, parent in order}
        optimizers = []  # (position, the optimizer's source, the list it is built from)
        appended: dict[str, set[str]] = {}  # list name -> group names appended to it
        for n, _ in order:
            if type(n) is cst.Call and n.args and type(n.args[0].value) is cst.Name and n.args[0].keyword is None:
                if self.model.kind_of_callee(self.names.qualify(n.func) or "") == "optimizer":
                    optimizers.append((position[id(n)], n, n.args[0].value.value))
                elif isinstance(n.func, cst.Attribute) and n.func.attr.value == "append" and \
                        type(n.func.value) is cst.Name:
                    appended.setdefault(n.func.value.value, set()).add(n.args[0].value.value)
        for bind in groups:
            group = bind.targets[0].target.value
            start = position[id(bind)]
            built = next(((at, call, source) for at, call, source in optimizers
                          if at > start and group in appended.get(source, ())), None)
            if built is None:
                continue
            filled = False
            for n, parent in order[start + 1:]:
                if type(n) is not cst.Name or n.value != group or n is bind.targets[0].target:
                    continue
                if type(parent) is cst.AssignTarget:
                    break  # rebound: this group's uses end here
                filled_here = _fills_group(n, parents)
                if not filled_here:
                    break  # read: it may reach the optimizer
                filled = True
            else:
                if filled and built[0] > start:
                    self._report_dropped(bind, group, built[2], built[1])
                continue
            if type(parent) is cst.AssignTarget and filled and position[id(n)] < built[0]:
                self._report_dropped(bind, group, built[2], built[1])

    def _report_dropped(self, bind: cst.Assign, group: str, source: str, optimizer: cst.Call) -> None:
        message = (f"The param group `{group}` built here is filled with parameters but never added to "
                   f"`{source}`, which the optimizer is built from (the other groups bound to `{group}` are): its "
                   f"parameters get gradients but are never updated; `{source}.append({group})`")
        self.report(bind.targets[0].target, message,
                    related=[Related(optimizer, "the optimizer is built here, without that group")])

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


def _preorder(node: cst.CSTNode, parent: cst.CSTNode | None):
    """(node, parent) in source order, nested functions and classes left out. `child_nodes`, not libcst's
    `.children`, which runs a visitor per node: with it this walk of every function body was 60 % of a
    `check` of torch's own tree."""
    yield node, parent
    for child in child_nodes(node):
        if type(child) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            yield from _preorder(child, node)


def _fills_group(name: cst.Name, parents: dict[int, cst.CSTNode | None]) -> bool:
    """`group["params"] = [...]`, `group["params"].append(p)`: the name only receives parameters here."""
    subscript = parents.get(id(name))
    if type(subscript) is not cst.Subscript:
        return False
    above = parents.get(id(subscript))
    if type(above) is cst.AssignTarget:
        return True
    if type(above) is cst.Attribute and above.attr.value in ("append", "extend"):
        return type(parents.get(id(above))) is cst.Call and type(parents.get(id(parents.get(id(above))))) is cst.Expr
    return False
