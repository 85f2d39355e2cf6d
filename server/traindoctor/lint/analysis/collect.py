"""One traversal per block: the block's file-wide facts (facts.py) and its local
scopes (reaching definitions, backward calls, returns), cached with the block."""

from __future__ import annotations

import functools

import libcst as cst

from ..context import WalkState
from ..walk import iter_nodes, subtree_nodes, walk
from .facts import BlockFacts, CallSite, ClassInfo, Expressions, FuncInfo, Marker, Obj, TopLevel
from .meters import self_updates
from .names import Names, constructor_func, dotted_name, item_key
from .padding import PaddingFacts
from .program import ProgramFacts
from .randomness import SeedingFacts
from .scopes import (BUILTINS, DEFINITIONS, IMPORTS, NAME_BINDERS, SEQUENCES, Def, Scope, code,
                     grad_disabled, names_in, returns, targets, value_names_in)
from .events import block_routine, training_facts
from .vocab import vocab
from .zero_evidence import zero_evidence


# In-place methods that replace a tensor's zeros (given a mask or a positive minimum).
_ZEROS_REPLACED_IN_PLACE = frozenset(("masked_fill_", "clamp_", "clamp_min_", "clip_"))


class BlockAnalysis:
    """Facts and scopes of one parsed block."""

    def __init__(self, module: cst.Module, names: Names, text: str | None = None) -> None:
        self.scopes: dict[int, Scope] = {}
        self._zero_evidence: dict[int, dict[str, cst.CSTNode]] = {}  # function id -> zero_evidence()
        self.index = 0  # position in the file, set by the file model
        self.module_scope = Scope(None, "")
        # What a module-level binding's fact compares by: the block's code without the blank
        # and comment lines before it (which change when a neighbour is inserted).
        self.text = _without_leading_lines(text) if text is not None else None
        collector = (_Collector if _may_pad(text) else _CollectorWithoutPadding)(self, names)
        seen: set[str] = set()
        walk(module, [collector], collector.walk, seen)
        # class names of the block's nodes: rules without a handler for any are skipped
        self.node_types = _shared(frozenset(seen))
        collector.finish(module)
        collector.lists["training"] = list(training_facts(module, names, text, collector.training_candidates))
        self.facts = collector.result()
        # What decides which rules can report on the block (Rule.applies_to): its node types,
        # and whether it has module-level training code.
        self.shape = _shared((self.node_types, block_routine(self) is not None))

    def scope_of(self, function: cst.FunctionDef | None) -> Scope:
        return self.module_scope if function is None else self.scopes.get(id(function), self.module_scope)

    def zero_evidence(self, function: cst.FunctionDef, names: Names) -> dict[str, cst.CSTNode]:
        """zero_evidence.py's names for one of the block's functions, kept with the block (the
        block's aliases are `names`'; a new Names makes a new BlockAnalysis)."""
        found = self._zero_evidence.get(id(function))
        if found is None:
            found = self._zero_evidence[id(function)] = zero_evidence(function.body, names.qualify)
        return found

    @functools.cached_property
    def self_assignments(self) -> tuple[tuple[str, str, str], ...]:
        """(class, `self.attr`, name) for each `self.attr = name` in the block's methods, kept with the
        block (values.py asks which hold a plain function)."""
        found = []
        for info in self.facts.functions:
            if not info.klass or not isinstance(info.node, cst.FunctionDef):
                continue
            for node in subtree_nodes(info.node.body):
                if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Name:
                    target = dotted_name(node.targets[0].target)
                    if target is not None and target.startswith("self.") and target.count(".") == 1:
                        found.append((info.klass, target, node.value.value))
        return tuple(found)

    @functools.cached_property
    def enclosing(self) -> dict[int, FuncInfo]:
        """id of each node in the block's function bodies -> the innermost function whose body holds
        it. Kept with the block (whose tree stays alive with it): an edit elsewhere does not rebuild it."""
        found: dict[int, FuncInfo] = {}
        for info in self.facts.functions:  # in source order: a nested function's nodes come later, and win
            if isinstance(info.node, cst.FunctionDef):
                for node in subtree_nodes(info.node.body):
                    found[id(node)] = info
        return found


_SHARED: dict = {}


def _shared(value):
    """One object for equal node-type sets and shapes: most blocks share a few (each block's
    own set was a tenth of the memory of a file of one-line statements)."""
    found = _SHARED.get(value)
    if found is None:
        if len(_SHARED) > 10_000:
            _SHARED.clear()
        found = _SHARED[value] = value
    return found


def _without_leading_lines(text: str) -> str:
    start = 0
    while True:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if end < 0 or (line.strip() and not line.lstrip().startswith("#")):
            return text[start:]
        start = end + 1


class _Collector(SeedingFacts, PaddingFacts, ProgramFacts, cst.BatchableCSTVisitor):
    def __init__(self, owner: BlockAnalysis, names: Names) -> None:
        super().__init__()
        self.owner = owner
        self.names = names
        self.walk = WalkState(names)
        self.v = vocab()
        self.lists: dict[str, list] = {key: [] for key in BlockFacts.__dataclass_fields__}
        self.functions: list[dict] = []
        self.training_candidates: dict[int, list[cst.CSTNode]] = {}  # see training_root

    # -- scopes -------------------------------------------------------------------

    def scope(self) -> Scope:
        return self.owner.scope_of(self.walk.function)

    def bind(self, target: cst.BaseExpression, how: str, value: cst.BaseExpression | None,
             index: int | None = None, op: str = "") -> None:
        if type(target) in SEQUENCES:
            parts: list = [None] * len(target.elements)
            if type(value) in SEQUENCES and len(value.elements) == len(target.elements):
                parts = [e.value for e in value.elements]
                for (element, i), part in zip(targets(target), parts):
                    self.bind(element, how, part)
                return
            for element, i in targets(target):
                self.bind(element, how, value, i)
            return
        if type(target) is cst.StarredElement:
            self.bind(target.value, "other", None)
            return
        name = dotted_name(target) if type(target) is not cst.Subscript else item_key(target)
        if name is None:
            return
        loops = tuple(id(loop) for loop in self.walk.loops_here())
        grad_off = self.walk.in_no_grad and grad_disabled(self.walk)
        self.scope().defs.setdefault(name, []).append(Def(self.walk.order + 1, how, value, index, loops, grad_off, op))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = Scope(node, self.walk.qualname())
        self.owner.scopes[id(node)] = scope
        params = node.params
        plain = [*params.posonly_params, *params.params, *params.kwonly_params]
        names = [p.name.value for p in plain]
        names += [s.name.value for s in (params.star_arg, params.star_kwarg) if isinstance(s, cst.Param)]
        annotations = {p.name.value: p.annotation.annotation for p in plain if p.annotation is not None}
        for name in names:
            scope.defs.setdefault(name, []).append(Def(0, "param", None, None, (), annotation=annotations.get(name)))
        self.functions.append({"node": node, "params": tuple(names), "no_grad": self.walk.in_no_grad,
                               "klass": self.walk.klass.name.value if self.walk.klass else "",
                               "qualname": scope.qualname})

    def _training_candidate(self, node: cst.CSTNode) -> None:
        root = training_root(self.walk.stack)
        if root is not None:
            self.training_candidates.setdefault(id(root), []).append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._training_candidate(node)  # `p.grad = None` zeroes gradients
        self._determinism(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        scope = self.scope()
        for target in node.targets:
            self.bind(target.target, "assign", node.value)
            for name in names_in(target.target):
                scope.sources.setdefault(name, []).append(node.value)
        self._record_binding(node, [t.target for t in node.targets], node.value)
        for target in node.targets:  # x[x == 0] = 1: zeros replaced
            t = target.target
            if type(t) is cst.Subscript and any(isinstance(e.slice, cst.Index) and
                                                   isinstance(e.slice.value, cst.Comparison) for e in t.slice):
                scope.guarded |= names_in(t.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, "assign", node.value)
            self._record_binding(node, [node.target], node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.bind(node.target, "aug", node.value, op=node.operator.__class__.__name__)
        name = dotted_name(node.target)
        if name is not None:
            self.scope().sources.setdefault(name, []).append(node.value)

    def visit_For(self, node: cst.For) -> None:
        self.bind(node.target, "iter", node.iter)
        self.scope().loop_iters[id(node)] = node.iter

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bind(node.asname.name, "other", None)

    def visit_If(self, node: cst.If) -> None:
        self.scope().guarded |= value_names_in(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.scope().guarded |= value_names_in(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.scope().guarded |= value_names_in(node.test)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.scope().returned |= names_in(node.value)

    # -- module-level objects and constants -----------------------------------------

    def _record_binding(self, stmt: cst.CSTNode, bound: list[cst.BaseExpression],
                        assigned: cst.BaseExpression) -> None:
        walk, function, klass = self.walk, self.walk.function, self.walk.klass
        at_module = function is None and klass is None
        for target in bound:  # `a, b = c, d = x, y`: each target pairs with what is assigned
            pairs = [(expr, assigned) for expr, _ in targets(target)]
            if type(target) in SEQUENCES and type(assigned) in SEQUENCES \
                    and len(assigned.elements) == len(target.elements):
                pairs = [(t.value, v.value) for t, v in zip(target.elements, assigned.elements)]
            for expr, value in pairs:
                name = dotted_name(expr)
                if name is None:
                    if type(expr) is cst.Subscript:
                        self._padding_subscript(expr, value, stmt)
                    continue
                self._padding_name(name, value)
                if at_module and walk.loops:
                    continue  # rebound every iteration of a top-level loop: not an object
                if at_module and "." not in name:
                    # The block's text stands for the value: it changes whenever the value does, and
                    # costs nothing (generating the value's code did, on files of many statements).
                    self.lists["globals"].append((name, self.owner.text if self.owner.text is not None
                                                  else code(value)))
                    if type(value) is cst.Integer:
                        self.lists["constants"].append((name, value.value))
                    elif type(value) is cst.UnaryOperation and type(value.expression) is cst.Integer:
                        self.lists["constants"].append((name, code(value)))
                elif not (name.startswith("self.") and klass is not None and function is not None):
                    continue
                entries = value
                if type(value) is cst.Call:
                    self._record_object(name, value, stmt, at_module)
                    # nn.ModuleDict({"ce": nn.CrossEntropyLoss()}): its entries, as a dict's
                    if value.args and (self.names.qualify(value.func) or "") in vocab().module_dicts:
                        entries = value.args[0].value
                if type(entries) is cst.Dict:  # a dict of losses / models: each entry by its key
                    for element in entries.elements:
                        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                                and isinstance(element.value, cst.Call):
                            key = f"{name}[{element.key.value.strip(chr(39) + chr(34))}]"
                            self._record_object(key, element.value, stmt, at_module)

    def _record_object(self, name: str, value: cst.Call, stmt: cst.CSTNode, at_module: bool) -> None:
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "manual_seed" and isinstance(func.value, cst.Call):
            func = func.value.func  # torch.Generator().manual_seed(0) returns the generator
        func = constructor_func(func)  # Net().cuda(), nn.Linear(4, 2).to(device): still the model
        callee = self.names.qualify(func) or code(func)
        klass = self.walk.klass
        owner = klass.name.value if name.startswith("self.") and klass is not None else ""
        where = "module" if at_module else self.walk.function.name.value  # type: ignore[union-attr]
        self.lists["objects"].append(Obj(name, owner, callee, Expressions((value,)), where, value, stmt))

    # -- classes, calls, training ---------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = tuple(self.names.qualify(b.value) or "" for b in node.bases)
        self.lists["classes"].append(ClassInfo(node.name.value, bases, node))

    def visit_Call(self, node: cst.Call) -> None:
        self._training_candidate(node)
        func = node.func
        qualified = self.names.qualify(func)
        if type(func) is cst.Attribute and func.attr.value in _ZEROS_REPLACED_IN_PLACE:
            self.scope().guarded |= names_in(func.value)  # n.masked_fill_(n == 0, 1), n.clamp_(min=1)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in self.v.backward_methods:
                self._note_backward(node, func, method)
            elif method == "register_hook" and len(node.args) == 1:  # a tensor's gradient hook (TRN404)
                self.lists["precision"].append(Marker("grad-hook", node=node))
            elif method == "step":
                receiver = (dotted_name(func.value) or "").rsplit(".", 1)[-1].lower()
                if any(word in receiver for word in ("optim", "opt", "scaler", "sgd", "adam")):
                    self._note_training()
        if isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                                          and func.value.value == "self"):
            callee = func.value if isinstance(func, cst.Name) else f"self.{func.attr.value}"  # type: ignore[union-attr]
            if callee not in BUILTINS:
                self.lists["calls"].append(CallSite(callee, self.walk.in_no_grad, node=node))
        # torch's and timm's scalers, and a project's own (Megatron's DynamicGradScaler); what a value is named
        # says nothing (`scaler = StandardScaler()` is sklearn's)
        if qualified is not None and (qualified in self.v.grad_scalers or qualified.endswith("GradScaler")):
            self.lists["precision"].append(Marker("grad-scaler", qualified))
        if qualified is not None and qualified.startswith("torch."):
            out = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "out"), None)
            if type(out) is cst.Name:
                self.bind(out, "assign", node)  # torch.exp(x, out=y): y now holds exp(x)
        if qualified is not None:
            self._randomness(node, qualified)
            self._padding_call(node, qualified)
            self._program_call(node, qualified)

    def _note_backward(self, node: cst.Call, func: cst.Attribute, method: str) -> None:
        scope = self.scope()
        if method == "backward" and all(a.keyword is not None and a.keyword.value in vocab().tensor_backward_keywords
                                        for a in node.args):
            receiver = func.value  # `loss.backward()`, `loss.backward(retain_graph=True)`
            # scaler.scale(loss).backward()
            if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                    and receiver.func.attr.value == "scale" and receiver.args:
                # the GradScaler protocol: the loss is scaled, whoever built the scaler (a parameter, another file)
                self.lists["precision"].append(Marker("grad-scaler", dotted_name(receiver.func.value) or ""))
                receiver = receiver.args[0].value
            names = names_in(receiver)
        elif (self.names.qualify(func.value) or "").startswith("torch.autograd"):
            names = names_in(node.args[0].value) if node.args else set()
        else:
            names = names_in(node.args[0].value) if node.args else names_in(func.value)
        for name in names:
            scope.backward.setdefault(name, node)
            scope.backward_at.setdefault(name, []).append(self.walk.order)
        self._note_training()

    def _note_training(self) -> None:
        scope = self.scope()
        if self.walk.function is None and not self.lists["precision"][-1:] == [Marker("module-backward")]:
            self.lists["precision"].append(Marker("module-backward"))
        scope.trains = True
        for loop in self.walk.loops_here():
            scope.training_loops.add(id(loop))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "PL_SEED_WORKERS" in node.value:
            self.lists["seeding"].append(Marker("workers-seeded"))
        self._pad_string(node)

    # -- result ---------------------------------------------------------------------------

    def finish(self, module: cst.Module) -> None:
        for info in self.functions:
            node = info["node"]
            scope = self.owner.scopes[id(node)]
            returned = Expressions(stmt.value for stmt in returns(node) if stmt.value is not None)
            self.lists["functions"].append(FuncInfo(info["qualname"], node.name.value, info["klass"],
                                                    info["params"], returned, info["no_grad"] or
                                                    self.walk.disables_grad(node), scope.trains, node))
            if info["klass"]:
                updates = self_updates(node)
                if updates:
                    self.lists["meters"].append(Expressions(updates))
        for index, stmt in enumerate(module.body):
            lines = (list(module.header) if index == 0 else []) + list(stmt.leading_lines)
            blanks = 0
            for line in reversed(lines):
                if line.comment is not None:
                    break
                blanks += 1
            is_import = type(stmt) is cst.SimpleStatementLine and any(type(s) in IMPORTS for s in stmt.body)
            self.lists["layout"].append(TopLevel(is_import, tuple(sorted(_bound_names(stmt))), blanks, stmt))

    def result(self) -> BlockFacts:
        return BlockFacts(**{key: tuple(value) for key, value in self.lists.items()})


class _CollectorWithoutPadding(_Collector):
    """For blocks that cannot hold padding facts: no per-name visitors (a third of the cost)."""

    visit_Attribute = visit_Name = visit_UnaryOperation = None  # type: ignore[assignment]

    def _padding_call(self, node, callee) -> None:
        pass

    def _padding_name(self, name, value) -> None:
        pass

    def _padding_subscript(self, target, value, stmt) -> None:
        pass


def _may_pad(text: str | None) -> bool:
    """Padding facts need a pad mention, the ignore index -100 or an IGNORE name."""
    if text is None:
        return True
    lowered = text.lower()
    return "pad" in lowered or "100" in lowered or "ignore" in lowered


_HEADER_FIELDS = {cst.For: "iter", cst.While: "test", cst.If: "test", cst.WithItem: "item"}
_STATEMENT_LEVEL = (cst.IndentedBlock, cst.FunctionDef, cst.ClassDef, cst.Module)


def training_root(stack: list[cst.CSTNode]) -> cst.CSTNode | None:
    """The root that training.py looks for events under, for the node on top of the walk's
    `stack`: its small statement (of a line or a one-line block), or the loop/if/with header expression it is in; None
    elsewhere (decorators, defaults, bases), where training.py does not look."""
    for index in range(len(stack) - 1, 0, -1):
        node, parent = stack[index], stack[index - 1]
        kind = type(parent)
        if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:  # `if x: model.train()` too
            return node
        field = _HEADER_FIELDS.get(kind)
        if field is not None and getattr(parent, field) is node:
            return node
        if kind in _STATEMENT_LEVEL:
            return None
    return None


def _bound_names(stmt: cst.CSTNode) -> set[str]:
    """Names a top-level statement binds in the module namespace (also inside if/try/for/with)."""
    if type(stmt) in DEFINITIONS:
        return {stmt.name.value}
    found: set[str] = set()
    # A simple line binds only through its targets and imports: its values are not walked
    # (on files of many one-line statements, walking them cost a tenth of the lint).
    nodes = stmt.body if type(stmt) is cst.SimpleStatementLine else iter_nodes(stmt)
    for node in nodes:
        kind = type(node)
        if kind in DEFINITIONS:
            found.add(node.name.value)
        elif kind in IMPORTS and type(node.names) is not cst.ImportStar:
            for alias in node.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found.add(alias.asname.name.value)
                else:
                    found.add((dotted_name(alias.name) or "").split(".")[0])
        elif kind is cst.Assign:
            for target in node.targets:
                found |= _target_names(target.target)
        elif kind in NAME_BINDERS:
            target = getattr(node, "target", None) or getattr(node, "name", None)
            if target is not None:
                found |= _target_names(target)
    return found


def _target_names(target: cst.CSTNode) -> set[str]:
    """Plain names bound by an assignment target (not attributes: `self.x = ...` binds no name)."""
    if type(target) is cst.Name:
        return {target.value}  # type: ignore[attr-defined]
    return {n.value for n in iter_nodes(target) if type(n) is cst.Name
            and not any(type(a) is cst.Attribute and a.attr is n for a in iter_nodes(target))}
