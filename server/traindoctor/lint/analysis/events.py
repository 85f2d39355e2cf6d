"""Training events: per function (and per block of module-level code) its loops and
the ordered training events in them, collected once per block (`training_facts`,
cached with the block like every other fact category) as typed `Routine` facts.
training.py answers the file-wide questions about them.

Event kinds: zero_grad, backward, scaled_backward (scaler.scale(l).backward();
receiver = the scaler), step (an optimizer's), scaler_step (arg = the optimizer),
scaler_update, other_update (`x.update()` with no argument but a scaler's `new_scale=`),
unscale, sched_step, other_step (deepspeed engines...), clip, eval,
train, set_epoch, build_optimizer, build_scheduler, build_model, sampler (a
DistributedSampler bound to `receiver`), loader (a DataLoader; arg = its sampler, or "use_ddp"
for a loader that builds a shuffling DistributedSampler itself and has its own `set_epoch`;
"use_ddp=?" when only some runs make it distributed),
empty_cache, host_transfer (`torch.zeros(..).to(dev)`; arg = the device), grad_mode
(`torch.set_grad_enabled(...)` as a statement; arg = "off" | "on"), call (a call of a
plain/dotted name: receiver = the callee, args = argument sources).

The kinds of `.step()` / `.update()` events here are read from the receiver's name (vocab
`training_*_pattern`): a block's events are collected before the file's objects are known.
training.py (`Training`, `step_kind`) re-reads them from what the receiver is, where that is
known; rules read events through it, never from the block facts.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field, replace
from typing import Optional

import libcst as cst

from ..walk import child_nodes
from .names import Names, dotted_name
from .vocab import vocab

Node = Optional[cst.CSTNode]


def _node() -> Node:
    return field(default=None, compare=False, hash=False, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True)
class Event:
    kind: str
    receiver: str  # dotted receiver / bound name / callee ("" when none)
    arg: str = ""  # see the module docstring
    loops: tuple[int, ...] = ()  # indices (Routine.loops) of the enclosing loops, outermost first
    conditional: bool = False  # under an if/try/except inside its innermost loop (or its function)
    no_grad: bool = False  # inside a no_grad/inference_mode region (or after set_grad_enabled(False))
    args: tuple[str, ...] = ()  # kind == "call": positional argument sources
    bound: str = ""  # the name the call's result is bound to (`x = call(...)`)
    returned: bool = False  # the call is what a `return` returns
    keywords: tuple[tuple[str, str], ...] = ()  # kind == "call": (keyword, argument source)
    node: Node = _node()  # the call (or assignment)
    stmt: Node = _node()  # the statement holding it, directly in a block body
    after: int = field(default=0, compare=False)  # loops of the routine begun before it (Loop.index >= after: later)
    unpacked: tuple[str, ...] = ()  # `a, b = call(...)`: the names the result's elements are bound to

    def passed(self, params: tuple[str, ...] | list[str]) -> dict[str, str]:
        """A call event's argument sources by the callee's parameter, by position and by keyword
        (`self`/`cls` are not among the ones filled)."""
        own = [p for p in params if p not in ("self", "cls")]
        found = dict(zip(own, self.args))
        found.update((k, a) for k, a in self.keywords if k in own)
        return found


@dataclass(frozen=True)
class Loop:
    index: int
    parent: int  # enclosing loop's index, -1 at the routine's top
    target: str  # `for` target source ("" for while)
    iter: str  # iterable (or while test) source
    node: Node = _node()


@dataclass(frozen=True)
class Routine:
    qualname: str  # "Class.method", "function", "" for module-level code
    klass: str
    params: tuple[str, ...]
    no_grad: bool  # decorated with no_grad/inference_mode
    loops: tuple[Loop, ...]
    events: tuple[Event, ...]  # in source order
    node: Node = _node()  # the FunctionDef (None: module-level code of one block)

    def events_in(self, loop: int) -> list[Event]:
        return [e for e in self.events if loop in e.loops]

    def innermost(self, event: Event) -> int:
        return event.loops[-1] if event.loops else -1

    def has(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)


BACKWARD = ("backward", "scaled_backward")
STEP = ("step", "scaler_step")


def _v(key: str):
    return vocab().raw[key]


def training_facts(module: cst.Module, names: Names, text: str | None,
                   candidates: dict[int, list[cst.CSTNode]]) -> tuple[Routine, ...]:
    """`candidates`: id(root) -> the calls and assignments under that root (a small statement or a
    loop/if/with header), in source order; the block's collect walk gathers them, so that events
    are found without a second traversal of every expression (see collect.training_root)."""
    if text is not None and not any(word in text for word in _WORDS):
        return ()
    collector = _Collector(names, candidates)
    collector.routine(module.body, "", "", (), False, None)
    return tuple(collector.routines)


_WORDS = ("backward", ".grad", "set_grad_enabled", ".step(", ".eval(", ".train(", "zero_grad", "set_epoch", "Sampler", "empty_cache", ".to(",
          ".cuda(", "optim", "GradScaler", "scaler", "DataLoader", "for ", "while ", "loader")


class _Collector:
    def __init__(self, names: Names, candidates: dict[int, list[cst.CSTNode]]) -> None:
        self.names = names
        self.candidates = candidates
        self.routines: list[Routine] = []
        self.loops: list[Loop] = []
        self.events: list[Event] = []
        self.v = vocab()
        # `train_sampler = RandomSampler if local_rank == -1 else DistributedSampler`: names bound (in
        # the routine being collected) to a DistributedSampler class on some path
        self.sampler_classes: set[str] = set()

    def routine(self, body, qualname: str, klass: str, params: tuple[str, ...], no_grad: bool,
                node: cst.FunctionDef | None) -> None:
        outer = (self.loops, self.events, self.sampler_classes)
        self.loops, self.events, self.sampler_classes = [], [], set()
        self._body(body, (), False, no_grad, qualname, klass)
        loops, events = self.loops, self.events
        self.loops, self.events, self.sampler_classes = outer
        if node is None and not events and not loops:
            return
        self.routines.append(Routine(qualname, klass, params, no_grad, tuple(loops), tuple(events), node))

    def _body(self, body, loops: tuple[int, ...], cond: bool, no_grad: bool, qualname: str, klass: str) -> bool:
        """Statements in order; returns the no_grad state after them (set_grad_enabled(False))."""
        for stmt in body:
            no_grad = self._stmt(stmt, loops, cond, no_grad, qualname, klass)
        return no_grad

    def _stmt(self, stmt, loops, cond, no_grad, qualname, klass) -> bool:
        if isinstance(stmt, cst.FunctionDef):
            self._function(stmt, klass, qualname)
            return no_grad
        if isinstance(stmt, cst.ClassDef):
            for item in stmt.body.body:
                if isinstance(item, cst.FunctionDef):
                    self._function(item, stmt.name.value, "")
            return no_grad
        # a line's statements, or one of a one-line block's (`if is_train: model.train()`: the block's body
        # is its small statements themselves, each its own holder)
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else \
            (stmt,) if isinstance(stmt, cst.BaseSmallStatement) else None
        if smalls is not None:
            for small in smalls:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                        self.names.qualify(small.value.func) == "torch.set_grad_enabled" and small.value.args:
                    arg = small.value.args[0].value
                    no_grad = isinstance(arg, cst.Name) and arg.value == "False"
                    self.events.append(Event("grad_mode", "", "off" if no_grad else "on", loops, cond, no_grad, (),
                                             node=small.value, stmt=stmt))
                    continue
                self._note_sampler_class(small)
                self._expr(small, stmt, loops, cond, no_grad)
            return no_grad
        if isinstance(stmt, (cst.For, cst.While)):
            is_for = isinstance(stmt, cst.For)
            header = stmt.iter if is_for else stmt.test
            self._expr(header, stmt, loops, cond, no_grad)
            index = len(self.loops)
            self.loops.append(Loop(index, loops[-1] if loops else -1, _code(stmt.target) if is_for else "",
                                   _code(header), stmt))
            self._body(stmt.body.body, loops + (index,), False, no_grad, qualname, klass)
            if stmt.orelse is not None:
                self._body(stmt.orelse.body.body, loops, True, no_grad, qualname, klass)
            return no_grad
        if isinstance(stmt, cst.If):
            self._expr(stmt.test, stmt, loops, cond, no_grad)
            self._body(stmt.body.body, loops, True, no_grad, qualname, klass)
            orelse = stmt.orelse
            if orelse is not None:
                if isinstance(orelse, cst.If):
                    self._stmt(orelse, loops, True, no_grad, qualname, klass)
                else:
                    self._body(orelse.body.body, loops, True, no_grad, qualname, klass)
            return no_grad
        if isinstance(stmt, cst.With):
            inner = no_grad or any(disables_grad(self.names, item.item) for item in stmt.items)
            for item in stmt.items:
                self._expr(item.item, stmt, loops, cond, no_grad)
            self._body(stmt.body.body, loops, cond, inner, qualname, klass)
            return no_grad
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            self._body(stmt.body.body, loops, cond, no_grad, qualname, klass)
            for handler in stmt.handlers:
                self._body(handler.body.body, loops, True, no_grad, qualname, klass)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self._body(extra.body.body, loops, cond, no_grad, qualname, klass)
            return no_grad
        if isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self._body(case.body.body, loops, True, no_grad, qualname, klass)
        return no_grad

    def _sampler_class(self, func) -> bool:
        return bool(self.sampler_classes) and (dotted_name(func) or "") in self.sampler_classes

    def _note_sampler_class(self, small) -> None:
        """`name = A if test else B` where A or B is a DistributedSampler class."""
        if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.value) is not cst.IfExp:
            return
        name = dotted_name(small.targets[0].target)
        branches = (small.value.body, small.value.orelse)
        if name and any((self.names.qualify(b) or "").rsplit(".", 1)[-1] in _SAMPLER_CLASSES for b in branches):
            self.sampler_classes.add(name)

    def _function(self, node: cst.FunctionDef, klass: str, outer: str) -> None:
        params = node.params
        names = tuple(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))
        qualname = f"{klass}.{node.name.value}" if klass else node.name.value
        no_grad = any(disables_grad(self.names, d.decorator) for d in node.decorators)
        self.routine(node.body.body if isinstance(node.body, cst.IndentedBlock) else [], qualname, klass, names,
                     no_grad, node)

    # -- events in one statement's expressions ----------------------------------------

    def _expr(self, root, stmt, loops, cond, no_grad) -> None:
        found: list[Event] = []
        for node in self.candidates.get(id(root), ()):
            kind = type(node)
            if kind is cst.Call:
                event = self._call(node, root, loops, cond, no_grad, stmt)  # type: ignore[arg-type]
                if event is not None:
                    found.append(event)
            elif kind is cst.Assign:
                for target in node.targets:  # type: ignore[attr-defined]
                    t = target.target
                    if type(t) is cst.Attribute and t.attr.value == "grad":  # p.grad = None / = g
                        found.append(Event("zero_grad", dotted_name(t.value) or "", "", loops, cond, no_grad, (),
                                           node, stmt))
        if len(found) > 1:  # several in one statement: in evaluation order (arguments before the call)
            rank = {id(n): i for i, n in enumerate(_evaluation_order(root))}
            found.sort(key=lambda e: rank.get(id(e.node), -1))
        self.events.extend(found)

    def _call(self, node: cst.Call, root, loops, cond, no_grad, stmt) -> Event | None:
        func = node.func
        def first() -> str:
            return _code(node.args[0].value) if node.args else ""

        bound = _bound_name(root, node)
        unpacked = _unpacked_names(root, node)
        returned = type(root) is cst.Return and root.value is node

        one_path = _one_branch(getattr(root, "value", None), node)

        def make(kind: str, receiver: str, arg: str = "", args: tuple[str, ...] = (),
                 keywords: tuple[tuple[str, str], ...] = ()) -> Event:
            return Event(kind, receiver, arg, loops, cond or one_path, no_grad, args, bound, returned, keywords, node,
                         stmt, len(self.loops), unpacked)

        qualified = self.names.qualify(func) or ""
        if qualified == "torch.cuda.empty_cache":
            return make("empty_cache", "")
        if qualified.rsplit(".", 1)[-1] in self.v.training_clip_functions:
            owner = dotted_name(func.value) or "" if isinstance(func, cst.Attribute) else ""
            return make("clip", "" if qualified.startswith("torch.") else owner, first())
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = dotted_name(func.value) or ""
            last = receiver.rsplit(".", 1)[-1]
            if method in _v("training_zero_grad_methods"):
                return make("zero_grad", receiver)
            if method in _v("training_grad_reset_methods") and \
                    receiver.endswith((".grad", ".grad.data")):
                return make("zero_grad", receiver)
            if method in self.v.backward_methods:
                value = func.value
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                        value.func.attr.value == "scale":
                    return make("scaled_backward", dotted_name(value.func.value) or "", _code(value.args[0].value)
                                if value.args else "")
                return make("backward", receiver, first())
            if method == "step" and receiver == "self":
                pass  # `self.step(x, y)`: the class's own method, a call like any other (below)
            elif method == "step":
                scheduler = self.v.pattern("training_scheduler_pattern")
                if self.v.pattern("training_scaler_pattern").search(last):
                    return make("scaler_step", receiver, first())
                if self.v.pattern("training_optimizer_pattern").search(last) and \
                        not scheduler.search(last.replace("lr_", "")):
                    return make("step", receiver, first())
                if scheduler.search(last):
                    return make("sched_step", receiver, first())
                return make("other_step", receiver, first())
            if method == "update" and self.v.pattern("training_scaler_pattern").search(last):
                return make("scaler_update", receiver)
            if method == "update" and receiver and all(a.keyword is not None and a.keyword.value == "new_scale"
                                                       for a in node.args):
                # `gs.update()` of a GradScaler named otherwise; training.py decides from what `gs` is
                return make("other_update", receiver)
            if method == "unscale_":
                return make("unscale", receiver, first())
            if method in ("eval", "train") and not receiver:  # model.to(device).train()
                receiver = _through_moves(func.value)
            if method in ("eval", "train") and receiver and len(node.args) <= (method == "train") and \
                    all(a.keyword is None for a in node.args):
                off = method == "train" and node.args and _code(node.args[0].value) == "False"
                return make("eval" if method == "eval" or off else "train", receiver)
            if method == "set_epoch":
                return make("set_epoch", receiver, first())
            if method in ("to", "cuda") and isinstance(func.value, cst.Call):
                inner = self.names.qualify(func.value.func) or ""
                if inner.startswith("torch.") and inner.rsplit(".", 1)[-1] in self.v.training_constant_creators:
                    return make("host_transfer", inner, first() if method == "to" else "cuda")
        last = qualified.rsplit(".", 1)[-1]
        if qualified.startswith(tuple(self.v.optimizer_prefixes)) and last[:1].isupper() and \
                not self.v.starts("not_optimizers", qualified) or \
                qualified.startswith(tuple(self.v.scheduler_prefixes)):
            scheduler = "lr_scheduler" in qualified or qualified.startswith(tuple(self.v.scheduler_prefixes))
            return make("build_scheduler" if scheduler else "build_optimizer", bound, qualified)
        if last in _SAMPLER_CLASSES or self._sampler_class(func):
            shuffle = next((_code(k.value) for k in node.args if k.keyword and k.keyword.value == "shuffle"), "")
            event = make("sampler", bound, f"shuffle={shuffle}" if shuffle else "")
            # a class chosen at run time: a RandomSampler (or another) on the other path
            return event if last in _SAMPLER_CLASSES else replace(event, conditional=True)
        if qualified in self.v.training_ddp_loaders:  # builds its own DistributedSampler under use_ddp=
            keywords = {k.keyword.value: _code(k.value) for k in node.args if k.keyword}
            ddp = keywords.get("use_ddp", "False")
            if ddp != "False" and keywords.get("shuffle", "False") != "False":
                return make("loader", bound, "use_ddp" if ddp == "True" else "use_ddp=?")
        if qualified in self.v.dataloaders or qualified in self.v.training_sampler_loaders:
            value = next((k.value for k in node.args if k.keyword and k.keyword.value == "sampler"), None)
            sampler = _code(value) if value is not None else ""
            if type(value) is cst.Call and self._sampler_class(value.func):
                sampler = "DistributedSampler(" + sampler  # built inline from a chosen DistributedSampler class
            return make("loader", bound, sampler)
        if qualified.startswith(tuple(self.v.model_constructors)) and last[:1].isupper() and \
                not self.v.starts("not_model_constructors", qualified):
            return make("build_model", bound, qualified)
        callee = dotted_name(func)
        if callee is not None and self.v.pattern("training_zeroing_function_pattern").search(callee.rsplit(".", 1)[-1]):
            return make("zero_grad", _arg_text(node.args[0].value) if node.args else callee)  # zero_grad(params)
        if callee is not None and not qualified.startswith("torch.") and callee not in _BUILTINS and (
                "." not in callee or (callee.startswith("self.") and callee.count(".") == 1) or
                callee.endswith(".forward")):
            return make("call", callee, "", tuple(_arg_text(a.value) for a in node.args if a.keyword is None
                                                  and not a.star),
                        tuple((a.keyword.value, _arg_text(a.value)) for a in node.args if a.keyword is not None))
        return None


def _arg_text(node: cst.BaseExpression) -> str:
    name = dotted_name(node)
    if name is not None:
        return name
    return _code(node) if type(node) in (cst.Call, cst.Subscript) and len(getattr(node, "args", ())) < 4 else ""


def _through_moves(node: cst.BaseExpression) -> str:
    """`model.to(device)` / `model.cuda()` / `model.eval()`: the module the chain starts from."""
    while type(node) is cst.Call and type(node.func) is cst.Attribute and \
            node.func.attr.value in _v("training_module_moves"):
        node = node.func.value
    return dotted_name(node) or ""


def _evaluation_order(root: cst.CSTNode) -> list[cst.CSTNode]:
    """Nodes under `root` children first (a call's arguments before the call), lambdas skipped."""
    found: list[cst.CSTNode] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            found.append(node)
            continue
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(child_nodes(node)))
    return found


def _bound_name(root, call: cst.Call) -> str:
    """The name `call`'s result is bound to: `x = call(...)`, or on one path `x = call(...) if c else y`."""
    if isinstance(root, (cst.Assign, cst.AnnAssign)) and \
            (getattr(root, "value", None) is call or _one_branch(getattr(root, "value", None), call)):
        target = root.targets[0].target if isinstance(root, cst.Assign) else root.target
        return dotted_name(target) or ""
    return ""


def _one_branch(value, call: cst.Call) -> bool:
    """`value` is `call(...) if c else y` (or `y if c else call(...)`): the call runs on one path only."""
    return isinstance(value, cst.IfExp) and (value.body is call or value.orelse is call)


_SAMPLER_CLASSES = ("DistributedSampler", "ElasticDistributedSampler")


def _unpacked_names(root, call: cst.Call) -> tuple[str, ...]:
    """`a, b = call(...)` (or `[a, b] = ...`): the dotted names of the elements, "" for a starred or
    nested one; () for any other binding."""
    if isinstance(root, cst.Assign) and root.value is call and len(root.targets) == 1 and \
            isinstance(root.targets[0].target, (cst.Tuple, cst.List)):
        elements = root.targets[0].target.elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return ()
        return tuple(dotted_name(e.value) or "" for e in elements)
    return ()


def disables_grad(names: Names, expr: cst.BaseExpression) -> bool:
    """`expr` (a `with` item or a decorator) turns autograd off: no_grad, inference_mode,
    set_grad_enabled(False)."""
    if isinstance(expr, cst.Call):
        target = names.qualify(expr.func) or ""
        if target == "torch.set_grad_enabled":
            return bool(expr.args) and isinstance(expr.args[0].value, cst.Name) and \
                expr.args[0].value.value == "False"
        expr = expr.func
    target = names.qualify(expr) or ""
    return target in vocab().no_grad_contexts or target.endswith((".no_grad", ".inference_mode")) or \
        target in ("no_grad", "inference_mode")


_EMPTY = cst.Module(body=[])
_BUILTINS = frozenset(dir(builtins))


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def block_routine(analysis) -> Routine | None:
    """The module-level code of one block (a BlockAnalysis)."""
    return next((r for r in analysis.facts.training if not r.qualname and r.node is None), None)
