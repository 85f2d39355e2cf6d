"""Training structure across a file: the queries rules ask about the `Routine` facts
of events.py, across blocks and through in-file helpers:

    t = training_of(model)                               # Training, built once per lint
    routine = t.routine_at(function_node)                # a FunctionDef's Routine
    routine = t.block_routine(analysis)                  # a block's module-level code
    routine.loops, routine.events, routine.events_in(i)  # Loop facts; ordered Events
    t.expanded(routine, i) / t.loop_effects(routine, i)  # helpers called there expanded (params renamed)
    t.step_loops(routine, through_calls=False)           # innermost loops doing backward + step
    t.unresolved_calls_with(routine, i, "optimizer")     # handed to code outside the file?
    t.training_functions, t.only_reached_from_eval(q)    # file-wide function facts
    t.per_iteration(q)                                   # called once per iteration (a loop body)
    same_object("self.model", "model.module")            # loose receiver identity
    t.receiver_kind(routine, "trainer")                   # what a step's receiver is: optimizer, scaler...

The routines here are the block facts' with each `.step()` / `.update()` event's kind read
from what its receiver is (`receiver_kind`, `step_kind`) where the file says so, the
collector's guess from the receiver's name only where it does not: rules read events here
(`routine_at`, `block_routine`, `all`), never from `analysis.facts.training`.

The top layer of the analysis: it reads the file model (model.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import libcst as cst

from ..walk import child_nodes, iter_nodes
from . import events as _events
from .events import BACKWARD, STEP, Event, Routine  # noqa: F401  (BACKWARD, STEP: for rules)
from .model import FileModel
from .names import constructor_func, dotted_name
from .scopes import Scope, code
from .vocab import vocab


# The fact categories Training's answers depend on besides "training" (and "project", which every
# rule reads): a step's kind is read from the objects the file builds (`object_kind`: "objects", and
# "classes" for its model classes). A rule reading Training names them in its READS.
TRAINING_READS = ("training", "objects", "classes")

# Event kinds whose kind training.py reads again from what the receiver is.
STEP_EVENTS = ("step", "scaler_step", "sched_step", "other_step")
UPDATE_EVENTS = ("scaler_update", "other_update")
_STEP_OF = {"optimizer": "step", "scaler": "scaler_step", "scheduler": "sched_step"}


def step_kind(event: Event, kind: str | None) -> str:
    """The kind of a `.step()` / `.update()` event whose receiver is an object of `kind`
    (FileModel.kind_of_callee's kinds: optimizer, scheduler, scaler, model...): an optimizer's
    `step`, a GradScaler's `scaler_step` / `scaler_update`, an LR scheduler's `sched_step`,
    anything else's `other_step` / `other_update`. `kind` None (not known: a parameter, an
    object of a library the vocabulary does not know): the collector's reading of the name."""
    if kind is None or event.kind not in STEP_EVENTS + UPDATE_EVENTS:
        return event.kind
    if event.kind in UPDATE_EVENTS:
        return "scaler_update" if kind == "scaler" else "other_update"
    return _STEP_OF.get(kind, "other_step")


def training_of(model: FileModel) -> "Training":
    """The file's training structure, built once per lint."""
    return model.remembered("training", lambda: Training(model))


class Training:
    """The training structure of a file (FileModel.training)."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._kinds: dict[tuple[int, str], str | None] = {}
        self._scopes: dict[int, Scope] = {}  # id(routine) -> the bindings of its function (or block)
        self._read: dict[int, Routine] = {}  # id(block fact routine) -> the routine with its steps read
        found: list[Routine] = []
        for analysis in model.analyses:  # the order of model.facts["training"]
            for routine in analysis.facts.training:
                self._scopes[id(routine)] = analysis.scope_of(routine.node)  # type: ignore[arg-type]
                read = self._with_step_kinds(routine)
                self._read[id(routine)] = read
                self._scopes[id(read)] = self._scopes[id(routine)]
                found.append(read)
        self.all: tuple[Routine, ...] = tuple(found)
        self.by_name: dict[str, list[Routine]] = {}
        self.by_node: dict[int, Routine] = {}
        for routine in self.all:
            self.by_name.setdefault(routine.qualname, []).append(routine)
            if routine.node is not None:
                self.by_node[id(routine.node)] = routine

    def routines(self, qualname: str) -> list[Routine]:
        return self.by_name.get(qualname, [])

    def routine_at(self, function: cst.FunctionDef | None) -> Routine | None:
        return self.by_node.get(id(function)) if function is not None else None

    def block_routine(self, analysis) -> Routine | None:
        """The module-level code of one block (a BlockAnalysis), its steps read as every routine's."""
        found = _events.block_routine(analysis)
        return self._read.get(id(found), found) if found is not None else None

    # -- what a step's receiver is ----------------------------------------------------------

    def _with_step_kinds(self, routine: Routine) -> Routine:
        events = tuple(self._step_read(e, routine) for e in routine.events)
        if all(a is b for a, b in zip(events, routine.events)):
            return routine
        return replace(routine, events=events)

    def _step_read(self, event: Event, routine: Routine) -> Event:
        if event.kind not in STEP_EVENTS and event.kind not in UPDATE_EVENTS:
            return event
        kind = step_kind(event, self.receiver_kind(routine, event.receiver))
        return event if kind == event.kind else replace(event, kind=kind)

    def receiver_kind(self, routine: Routine, name: str) -> str | None:
        """What the object `name` holds where `routine` runs: optimizer, scheduler, scaler, model,
        ... (FileModel.kind_of_callee's kinds) from the constructor it was bound to: in the routine
        itself (`trainer = torch.optim.SGD(...)`, `self.G_solver = Adam(...)` in the method), else a
        module-level name or a `self.` attribute of the routine's class (FileModel.object_kind,
        through the project index for imported names). A local bound several times takes the
        kind its readable bindings agree on (`if opt is None: opt = SGD(...)`: the parameter and
        `opt = None` say nothing). None when not known: a parameter or another local bound
        otherwise, a constructor the vocabulary does not know, an attribute of an unknown object,
        or constructors of different kinds."""
        key = (id(routine), name)
        if key not in self._kinds:
            self._kinds[key] = self._receiver_kind(routine, name)
        return self._kinds[key]

    def _receiver_kind(self, routine: Routine, name: str) -> str | None:
        if not name:
            return None
        scope = self._scopes.get(id(routine))
        defs = scope.defs.get(name, ()) if scope is not None else ()
        if defs:
            kinds = {self._bound_kind(d) for d in defs} - {None}
            return kinds.pop() if len(kinds) == 1 else None
        head = name.split(".", 1)[0]
        if head != "self" and "." in name and scope is not None and head in scope.defs:
            return None  # `args.optimizer` of a local or a parameter `args`: not a module-level object
        return self.model.object_kind(name, routine.klass if head == "self" else "")

    def _bound_kind(self, definition) -> str | None:
        """The kind of what one binding (scopes.Def) binds: a constructor call's, through `.to(device)`."""
        value = definition.value
        if definition.how != "assign" or definition.index is not None or type(value) is not cst.Call:
            return None
        func = constructor_func(value.func)
        callee = self.model.names.qualify(func) or dotted_name(func)
        return self.model.kind_of_callee(callee) if callee else None

    def callee(self, event: Event, routine: Routine) -> Routine | None:
        """The in-file function a `call` event calls (plain name or self.method)."""
        name = event.receiver
        if name.startswith("self.") and routine.klass and name.count(".") == 1:
            found = self.routines(f"{routine.klass}.{name[5:]}")
        elif "." not in name:
            found = self.routines(name)
        else:
            return None
        return found[0] if found else None

    def effects(self, event: Event, routine: Routine, depth: int = 0) -> list[Event]:
        """What calling an in-file helper does: its events (and its helpers'), with the
        receivers that are its parameters renamed to the caller's arguments. A step on a
        parameter takes its kind from what the caller passes, where the caller knows it
        (`train_epoch(net, trainer)` with `trainer = torch.optim.SGD(...)`: the helper's
        `updater.step()` is an optimizer's); deeper helpers keep their own reading."""
        target = self.callee(event, routine)
        if target is None:
            return self._project_effects(event)
        if depth > 3 or target is routine:
            return []
        mapping = _named_arguments(event, target.params)
        found = []
        for inner in target.events:
            receiver = _in_caller(inner.receiver, mapping)
            if receiver is not None:
                renamed = _renamed(inner, receiver)
                if depth == 0 and inner.kind in STEP_EVENTS + UPDATE_EVENTS and \
                        self.receiver_kind(target, inner.receiver) is None:
                    renamed = self._step_read(renamed, routine)  # the caller's names, the caller's objects
                inner = renamed
            if inner.kind == "call":
                inner = replace(inner, args=tuple(mapping.get(a, a) for a in inner.args),
                                keywords=tuple((k, mapping.get(a, a)) for k, a in inner.keywords))
                found.append(inner)
                found.extend(self.effects(inner, target, depth + 1))
            else:
                found.append(inner)
        return found

    def per_iteration(self, qualname: str) -> bool:
        """The function runs once per iteration of a loop: a framework calls it per batch (a Lightning
        `training_step`, an ignite process function), or a loop of this file calls it (`for x, y in loader:
        self.train_step(x, y)`). Its body is then a loop body."""
        if qualname in self.model.step_functions:
            return True
        return qualname in self.model.remembered("training.called-in-loops", lambda: frozenset(
            callee.qualname for routine in self.all for event in routine.events
            if event.kind == "call" and event.loops and (callee := self.callee(event, routine)) is not None
            and callee is not routine))

    def _project_effects(self, event: Event) -> list[Event]:
        """What calling a function of another project file does to the modules passed to it: its summary's
        mode switches on its parameters (`evaluate(model, loader)` that calls `model.eval()`), renamed to the
        caller's arguments, at the call."""
        if event.kind != "call" or not event.receiver:
            return []
        switches = self.model.project_fact(event.receiver, "param_modes")
        if not switches:
            return []
        mapping = _named_arguments(event, self.model.project_fact(event.receiver, "params") or ())
        return [replace(event, kind=kind, receiver=receiver, arg="", args=(), keywords=(), bound="", returned=False,
                        unpacked=())
                for kind, inner in switches if (receiver := _in_caller(inner, mapping)) is not None]

    def _project_inert(self, event: Event) -> bool:
        """A function of another project file that trains and zeroes nothing and calls no function of another
        module (its summary says so): what it does to a module passed to it is its `param_modes`."""
        fact = functools.partial(self.model.project_fact, event.receiver)
        return bool(fact("qualname")) and not fact("backward") and not fact("zeroes") and not fact("calls")

    def returns(self, qualname: str, depth: int = 0) -> frozenset[str]:
        """What an in-file function returns, among the objects training events build:
        "sampler" (a shuffling DistributedSampler) and "distributed-loader" (a DataLoader
        over one), "distributed-loader:i" (one as the i-th element of a returned tuple), also
        through the helpers it calls; "conditional" when another path builds another sampler
        (a RandomSampler when not distributed). Once per lint."""
        key = ("training.returns", qualname)
        if key in self.model.memo or depth > 4:
            return self.model.memo.get(key, frozenset())  # type: ignore[return-value]
        self.model.memo[key] = frozenset()  # recursion guard
        found: set[str] = set()
        info = self.model.function(qualname)
        names = {dotted_name(r) for r in info.returns} if info is not None else set()
        elements = _returned_elements(info.returns) if info is not None else {}
        for routine in self.routines(qualname):
            samplers: set[str] = set()
            conditional: dict[str, bool] = {}
            for event in self.with_returned_objects(routine, depth + 1):
                # `shuffle=shuffle`: the caller decides; only a sampler that always shuffles is told
                if event.kind == "sampler" and event.arg in ("", "shuffle=True"):
                    samplers.add(event.bound)
                    conditional[event.bound] = event.conditional
                    if event.returned or (event.bound and event.bound in names):
                        found.add("sampler")
                        found.update(("conditional",) if event.conditional else ())
                elif event.kind == "loader" and (event.arg in samplers or "DistributedSampler(" in event.arg and (
                        "shuffle=" not in event.arg or "shuffle=True" in event.arg)):
                    kinds = set(f"distributed-loader:{i}" for i in elements.get(event.bound, ()) if event.bound)
                    if event.returned or (event.bound and event.bound in names):
                        kinds.add("distributed-loader")
                    if kinds and (event.conditional or conditional.get(event.arg, False)):
                        kinds.add("conditional")  # a RandomSampler (or none) on another path: no set_epoch there
                    found.update(kinds)
        self.model.memo[key] = result = frozenset(found)
        return result

    def epoch_loop(self, routine: Routine, loader: str, built: Event | None = None):
        """(loop, node using it): the first loop (after `built`, the loader's construction, when
        given) that iterates the loader `loader` in an inner loop, or hands it to a function, each
        iteration — an epoch loop over it (TRN203)."""
        word = re.compile(rf"(^|[^\w.]){re.escape(loader)}($|[^\w])")
        if built is not None:
            built = next((e for e in routine.events if e.node is built.node), built)  # a helper call for it
        own = built is not None and built in routine.events
        for loop in routine.loops:
            inside = routine.events_in(loop.index)
            if loop.parent != -1 or (own and loop.index < built.after and (
                    not inside or routine.events.index(inside[0]) < routine.events.index(built))):
                continue  # neither after the construction nor a loop that builds it first
            for other in routine.loops:
                if other.index != loop.index and isinstance(other.node, cst.For) and word.search(other.iter) and \
                        _under(routine, other, loop):
                    return loop, other.node.iter
            if not word.search(loop.iter):
                for e in inside:  # handed to a function (`len(loader)` or `print(loader)` does not iterate it)
                    if e.kind == "call" and e.receiver not in _NOT_ITERATING and any(word.search(a) for a in e.args):
                        return loop, e.node
                restarted = self._iter_call(loop, loader)  # `it = iter(loader)` again when it is exhausted
                if restarted is not None:
                    return loop, restarted
        return None

    def _iter_call(self, loop, loader: str) -> cst.Call | None:
        """An `iter(loader)` call inside the loop (builtins make no call events)."""
        if loop.node is None:
            return None
        key = ("training.iter-calls", id(loop.node))
        calls = self.model.memo.get(key)
        if calls is None:
            calls = self.model.memo[key] = _iter_calls(loop.node)
        return calls.get(loader)

    def leaves_grad_off(self, qualname: str) -> Event | None:
        """The `set_grad_enabled(False)` an in-file function leaves in force when it returns:
        its last unconditional grad-mode switch outside loops turns autograd off."""
        for routine in self.routines(qualname):
            switches = [e for e in routine.events if e.kind == "grad_mode" and not e.loops and not e.conditional]
            if switches and switches[-1].arg == "off":
                return switches[-1]
        return None

    def with_returned_objects(self, routine: Routine, depth: int = 0) -> list[Event]:
        """The routine's events, with each call of an in-file helper that returns a sampler or a
        distributed DataLoader (see `returns`) standing for building one, bound where it is."""
        found = []
        for event in routine.events:
            target = self.callee(event, routine) if event.kind == "call" else None
            kinds = self.returns(target.qualname, depth) if target is not None and target is not routine \
                else self.project_returns(event)
            if "conditional" in kinds:
                event = replace(event, conditional=True)
            if "sampler" in kinds:
                event = replace(event, kind="sampler", receiver=event.bound, arg="")
            elif "distributed-loader" in kinds:
                found.append(replace(event, kind="sampler", receiver="", arg="", bound=""))
                event = replace(event, kind="loader", receiver=event.bound, arg="DistributedSampler(")
            elif event.unpacked and any(k.startswith("distributed-loader:") for k in kinds):
                # `train_loader, val_loader = build_loaders(...)`: the elements the builder returns as loaders
                unpacked = [name for i, name in enumerate(event.unpacked)
                            if name and f"distributed-loader:{i}" in kinds]
                if unpacked:
                    found.append(replace(event, kind="sampler", receiver="", arg="", bound=""))
                    found.extend(replace(event, kind="loader", receiver=name, arg="DistributedSampler(", bound=name)
                                 for name in unpacked)
                    continue
            found.append(event)
        return found

    def project_returns(self, event: Event) -> frozenset[str]:
        """What a call of another project file's function returns among samplers and distributed
        loaders (its summary's `returns_sampling`, the kinds of `returns`)."""
        if event.kind != "call" or not event.receiver or event.receiver.startswith("self."):
            return frozenset()
        return frozenset(self.model.project_fact(event.receiver, "returns_sampling") or ())

    def expanded(self, routine: Routine, loop: int | None = None) -> list[tuple[Event, Event]]:
        """(event of the routine, event it stands for) for the loop's events (all the
        routine's when `loop` is None), helper calls expanded in order."""
        found = []
        for event in (routine.events if loop is None else routine.events_in(loop)):
            found.append((event, event))
            if event.kind == "call":
                found.extend((event, inner) for inner in self.effects(event, routine))
        return found

    def loop_effects(self, routine: Routine, loop: int) -> list[Event]:
        """Events inside the loop, with each helper call expanded (in order)."""
        return [inner for _, inner in self.expanded(routine, loop)]

    def unresolved_calls_with(self, routine: Routine, loop: int | None, name: str) -> bool:
        """The loop hands `name` to a function that is not in this file (it may do anything)."""
        for _, event in self.expanded(routine, loop):
            if event.kind == "call" and self.callee(event, routine) is None and \
                    (any(same_object(a, name) for a in event.args) or
                     (name.startswith("self.") and event.receiver.startswith("self.") and
                      not same_object(event.receiver.removesuffix(".forward"), name) and
                      not self._callable_attribute(event.receiver.removesuffix(".forward"), routine.klass))) and \
                    not self._inert_helper(event.receiver, routine.klass) and not self._project_inert(event):
                return True
        return False

    def _inert_helper(self, name: str, klass: str) -> bool:
        """`name` calls an in-file function that cannot switch a module's mode or touch an optimizer: no
        routine was built for it (its code holds no training event: no zero_grad, step, backward, train()
        or eval()), its code never says `train`, `eval` or `apply`, and it hands its parameters only to
        torch, to the builtins, or to their own methods (`torch.save(model.state_dict(), path)`: a
        checkpoint helper)."""
        info = self.model.function(name, klass)
        if info is None or info.node is None or self.routines(info.qualname):
            return False
        return self.model.remembered(("inert-helper", info.qualname), lambda: self._inert_body(info))

    def _inert_body(self, info) -> bool:
        """The body half of `_inert_helper`'s test, once per helper (it renders and walks the code)."""
        text = code(info.node)
        if any(word in text for word in ("train", "eval", "apply")):
            return False
        params = set(info.params) - {"self", "cls"}
        for node in iter_nodes(info.node.body):
            if type(node) is not cst.Call or not any(type(a.value) is cst.Name and a.value.value in params
                                                     for a in node.args):
                continue
            callee = self.model.names.qualify(node.func) or dotted_name(node.func) or ""
            if not (callee.startswith("torch.") or callee in vocab().training_inert_callees):
                return False  # a parameter handed on to code whose effect is not read here
        return True

    def _callable_attribute(self, name: str, klass: str) -> bool:
        """`self.model(...)`, `self.criterion(...)`: a module held by an attribute, not a method."""
        last = name.rsplit(".", 1)[-1]
        v = vocab()
        return self.model.object(name, klass) is not None or bool(
            v.pattern("model_name_pattern").search(last) or v.pattern("loss_name_pattern").search(last))

    def step_loops(self, routine: Routine, through_calls: bool = False) -> list[int]:
        """Innermost loops whose iterations (nested loops included) call backward and step
        (also inside in-file helpers called there, with `through_calls`)."""
        found = [loop.index for loop in routine.loops if _has_both(
            self.loop_effects(routine, loop.index) if through_calls else routine.events_in(loop.index))]
        return [i for i in found if not any(_inside(routine, j, i) for j in found if j != i)]

    def trains(self, routine: Routine, loop: int | None = None) -> bool:
        events = routine.events if loop is None else self.loop_effects(routine, loop)
        return any(e.kind in BACKWARD or e.kind in STEP for e in events)

    @functools.cached_property
    def training_functions(self) -> frozenset[str]:
        """Functions that call backward or step, themselves or through in-file helpers."""
        return frozenset(r.qualname for r in self.all if r.qualname and any(
            e.kind in BACKWARD or e.kind in STEP for _, e in self.expanded(r)))

    @functools.cached_property
    def event_kinds(self) -> frozenset[str]:
        """The kinds of every event in the file."""
        return frozenset(e.kind for r in self.all for e in r.events)

    @functools.cached_property
    def _call_sites(self) -> dict[str, list[tuple[Routine, Event]]]:
        """Last part of a called name -> the `call` events that call it, with their routine."""
        found: dict[str, list[tuple[Routine, Event]]] = {}
        for routine in self.all:
            for event in routine.events:
                if event.kind == "call":
                    found.setdefault(event.receiver.rsplit(".", 1)[-1], []).append((routine, event))
        return found

    def only_reached_from_eval(self, qualname: str) -> bool:
        """Every in-file call of the function is under no_grad or in a routine that
        puts a model in eval mode and never trains; False when it has no caller here."""
        sites = self._call_sites.get(qualname.rsplit(".", 1)[-1], ())
        return bool(sites) and all(e.no_grad or (r.has("eval") and not self.trains(r)) for r, e in sites)


def _has_both(events: list[Event]) -> bool:
    return any(e.kind in BACKWARD for e in events) and any(e.kind in STEP for e in events)


def _inside(routine: Routine, inner: int, outer: int) -> bool:
    parent = routine.loops[inner].parent
    while parent != -1:
        if parent == outer:
            return True
        parent = routine.loops[parent].parent
    return False


def _named_arguments(call: Event, params) -> dict[str, str]:
    """A call event's arguments that are (dotted) names, by the callee's parameter."""
    return {p: a for p, a in call.passed(params).items() if dotted_name_text(a)}


def _in_caller(receiver: str, mapping: dict[str, str]) -> str | None:
    """A callee's receiver (`model`, `model.backbone`) as its caller names it, when it starts with a parameter the
    call fills with a name; else None."""
    head, dot, rest = receiver.partition(".")
    return mapping[head] + dot + rest if head in mapping else None


def _renamed(event: Event, receiver: str, args: tuple[str, ...] | None = None) -> Event:
    return replace(event, receiver=receiver, args=event.args if args is None else args)


def same_object(a: str, b: str) -> bool:
    """Loose identity of two receivers: `self.model`, `model`, `model.module`, `ddp_model.module`."""
    def norm(text: str) -> str:
        text = text[5:] if text.startswith("self.") else text
        return text[:-7] if text.endswith(".module") else text
    a, b = norm(a), norm(b)
    return bool(a) and (a == b or a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1])


def dotted_name_text(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w.]*", text))


# Builtins that take a loader without iterating it.
_NOT_ITERATING = frozenset(("len", "print", "isinstance", "type", "id", "str", "repr", "hasattr", "getattr", "bool"))


def _under(routine: Routine, inner, outer) -> bool:
    parent = inner.parent
    while parent != -1:
        if parent == outer.index:
            return True
        parent = routine.loops[parent].parent
    return False


def _iter_calls(loop: cst.CSTNode) -> dict[str, cst.Call]:
    """name -> the first `iter(name)` call in the loop's body."""
    found: dict[str, cst.Call] = {}
    stack = [loop]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "iter" and \
                len(node.args) == 1:
            name = dotted_name(node.args[0].value)
            if name:
                found.setdefault(name, node)
        stack.extend(reversed(child_nodes(node)))
    return found


def _returned_elements(returns) -> dict[str, tuple[int, ...]]:
    """name -> the positions it holds in a returned tuple or list (`return train_loader, val_loader`)."""
    found: dict[str, tuple[int, ...]] = {}
    for value in returns:
        if isinstance(value, (cst.Tuple, cst.List)):
            for i, element in enumerate(value.elements):
                name = dotted_name(element.value) if not isinstance(element, cst.StarredElement) else None
                if name:
                    found[name] = found.get(name, ()) + (i,)
    return found
