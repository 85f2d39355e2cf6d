"""TRN101 loss-accumulation-keeps-graph.

A tensor with autograd history (a loss, a model output: the model's `values`
fact) accumulated in a loop into something that outlives the iteration keeps
every iteration's graph alive. Quiet where no gradient flows (no_grad regions,
functions only called under them, detached values), on Python numbers, and on
sub-losses summed into the loss that is backpropagated in the same step.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ..analysis.scopes import code
from ..analysis.flow import accumulates, binding
from ..analysis.meters import accumulated_params, returned_from_params
from ..analysis.names import dotted_name
from ..analysis.training import STEP
from ..fixes import with_method
from ..rule import FixSpec, Related, Replace, Rule

_LIST_METHODS = {"append", "extend", "insert"}
_METER_METHODS = {"update", "add", "add_", "push", "accumulate"}
# Uses of an accumulator that work the same on a Python float as on a 0-d tensor.
_NUMBER_FUNCTIONS = {"print", "float", "int", "round", "str", "format", "abs", "min", "max", "len"}


class LossAccumulationKeepsGraph(Rule):
    CODE = "TRN101"
    READS = ("names", "objects", "classes", "functions", "calls", "globals", "program", "training", "meters", "project")
    MODULE_HOOK_JUDGES_VISITS = True  # leave_Module judges the sites the visits collected

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._pending: list[list[tuple]] = [[]]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pending.append([])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._judge(self._pending.pop(), node)

    def leave_Module(self, node: cst.Module) -> None:
        self._judge(self._pending.pop(), None)

    # -- sinks ------------------------------------------------------------------------

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            target = node.target.value if isinstance(node.target, cst.Subscript) else node.target
            self._consider(node, node.value, dotted_name(target), "+=")

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, cst.BinaryOperation) or \
                not isinstance(value.operator, (cst.Add, cst.Subtract)):
            return
        name = dotted_name(node.targets[0].target)
        operands = [value.left, value.right]
        others = [o for o in operands if dotted_name(o) != name]
        if name is not None and len(others) == 1:
            self._consider(node, others[0], name, "=")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or not node.args or not isinstance(self.walk.parent, cst.Expr):
            return
        method = func.attr.value
        if method not in _LIST_METHODS and method not in _METER_METHODS:
            self._project_meter(node, method)
            return
        receiver = func.value
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        value = node.args[-1].value if method == "insert" else node.args[0].value
        self._consider(node, value, dotted_name(receiver), method)

    def _consider(self, stmt: cst.CSTNode, value: cst.BaseExpression, accumulator: str | None, how: str) -> None:
        loop = self.walk.innermost_loop()
        if accumulator is None or not self.gradient_flows():
            return
        base = accumulator.split("[")[0]
        statement = stmt if how in ("+=", "=") else self.walk.parent  # the call's `Expr` statement
        root = self.walk.function or self.walk.stack[0]
        if loop is None:
            # a training_step / an engine's process function: the framework's loop calls it per batch
            loop = self._step_function(base)
            if loop is None or not self.scope().flow(loop).outlives_call(statement, base):
                return
        elif self.scope().bound_in_loop(base, loop) and (
                self.scope().rebound_every_iteration(base, loop, statement, root) or
                self._reset_with_each_step(base, loop)):
            return  # rebound on every path around the loop (or each optimizer step): does not outlive it
        found = self.values(value)
        if not found.tensor_with_history:
            found = self._through_project_call(value) or found
        if not found.tensor_with_history:
            return
        if how in _METER_METHODS and (found.role != "loss" or not self._meter_keeps_graph(stmt, how)):
            return  # metric.update(outputs, y) takes outputs by design; a meter must visibly keep the tensor
        per_call = how in _LIST_METHODS and self.walk.function is not None and \
            self._local_list_reset_around(base, loop)
        spent = isinstance(value, cst.Name) and _spent(self.scope().flow(root), statement, value.value)
        self._pending[-1].append((stmt, value, base, how, found, loop, per_call, spent))

    def _local_list_reset_around(self, name: str, loop: cst.CSTNode) -> bool:
        """`name` is a plain local list of the function (not a parameter, attribute or global), bound
        afresh inside every loop that encloses `loop`: what it holds lives for one pass at most."""
        function = self.walk.function
        if "." in name or "[" in name or function is None or \
                any(p.name.value == name for p in (*function.params.params, *function.params.kwonly_params,
                                                   *function.params.posonly_params)) or \
                any(type(node) in (cst.Global, cst.Nonlocal) and any(n.name.value == name for n in node.names)
                    for node in _nodes(function.body)):
            return False
        binds = [node for node in _nodes(function.body) if isinstance(node, cst.Assign) and
                 any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)]
        if not binds or not all(isinstance(b.value, (cst.List, cst.ListComp)) or
                                dotted_name(b.value.func if isinstance(b.value, cst.Call) else b.value) == "list"
                                for b in binds):
            return False
        outer = [l for l in self.walk.loops_here() if l is not loop]
        return all(any(_contains(l.body, b) for b in binds) for l in outer)

    def _project_meter(self, call: cst.Call, method: str) -> None:
        """`meter.update_value(name, value)` where the meter's class (of this file or of another
        project file) adds that parameter into its own state (`self.avg[k] = self.avg[k] * n + v`,
        analysis/meters.py): the meter keeps every tensor it is given."""
        receiver = dotted_name(call.func.value)  # type: ignore[attr-defined]
        if receiver is None:
            return
        accumulates, params = self._meter_method(receiver, method)
        if not accumulates:
            return
        params = tuple(p for p in params if p not in ("self", "cls"))
        passed = {p: a.value for p, a in zip(params, (a for a in call.args if a.keyword is None))}
        passed.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
        for param in accumulates:  # a key or a count is accumulated too: `_consider` keeps tensors only
            if param in passed:
                self._consider(call, passed[param], receiver, method)

    def _meter_method(self, receiver: str, method: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the parameters a method of the receiver's class accumulates, its parameters)."""
        built = self._built_by(receiver)
        if not built:
            return (), ()
        klass = built.rsplit(".", 1)[-1]
        if klass in self.model.classes:
            info = self.model.function(f"{klass}.{method}")
            if info is None or not isinstance(info.node, cst.FunctionDef):
                return (), ()
            return accumulated_params(info.node, info.params), info.params
        summary = self.model.imported.klass(built)
        found = summary.method(method) if summary is not None else None
        return (found.accumulates, found.params) if found is not None else ((), ())

    def _built_by(self, name: str) -> str:
        """The callee (as this file qualifies it) that the object a name holds was built by."""
        if "." not in name:
            bound = self.scope().lookup(name, self.walk.order)
            if bound is not None and bound.how == "assign" and bound.index is None and \
                    isinstance(bound.value, cst.Call):
                return self.names.qualify(bound.value.func) or ""
            if bound is not None:
                return ""
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        obj = self.model.object(name, klass)
        return obj.callee if obj is not None else ""

    def _through_project_call(self, value: cst.BaseExpression):
        """A value computed by a function of this file or of another project file whose returned
        tensor is computed from a parameter by tensor operations (analysis/meters.py), called
        with a tensor with history there: the argument's Value, with no role of its own."""
        call = value
        if isinstance(value, cst.Name):
            bound = self.scope().lookup(value.value, self.walk.order)
            call = bound.value if bound is not None and bound.how == "assign" and bound.index is None and \
                not bound.grad_off else None
        if not isinstance(call, cst.Call):
            return None
        name = dotted_name(call.func) or ""
        info = self.model.function(name) if "." not in name else None
        if info is not None and isinstance(info.node, cst.FunctionDef):
            sources, params = returned_from_params(info.node, info.params), info.params
        else:
            summary = self.model.imported.function(self.names.qualify(call.func))
            if summary is None:
                return None
            sources, params = summary.returns_from, summary.params
        params = tuple(p for p in params if p not in ("self", "cls"))
        passed = {p: a.value for p, a in zip(params, (a for a in call.args if a.keyword is None))}
        passed.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
        for param in sources:
            if param in passed:
                found = self.values(passed[param])
                if found.tensor_with_history:
                    return replace(found, role="", origin=call)
        return None

    def _reset_with_each_step(self, name: str, loop: cst.CSTNode) -> bool:
        """Every reset of `name` in the loop sits under an `if` that also steps the optimizer:
        a gradient-accumulation window's running loss, kept for that window only (a reset
        under a logging `if` is not one: the sum grows for the whole interval)."""
        resets, windows = [], []
        for node in _nodes(loop):
            if isinstance(node, cst.Assign) and any(dotted_name(t.target) == name for t in node.targets) and \
                    not accumulates(name, node.value):
                resets.append(node)
            elif isinstance(node, cst.If) and self._steps(node.body):
                windows.append(node)
        return bool(resets) and all(any(_contains(w.body, r) for w in windows) for r in resets)

    def _steps(self, body: cst.CSTNode) -> bool:
        """An optimizer's (or a GradScaler's) `.step()` is called in `body` (of the function being
        walked): its step events, whose kind training.py reads from what the receiver is."""
        training = self.training
        function = self.walk.function
        routine = training.routine_at(function) if function is not None else training.block_routine(self.analysis)
        steps = {id(e.node) for e in routine.events if e.kind in STEP} if routine is not None else set()
        return bool(steps) and any(id(node) in steps for node in _nodes(body))

    def _step_function(self, accumulator: str) -> cst.FunctionDef | None:
        """The enclosing function when a framework calls it once per batch, or a loop of this file calls it
        each iteration (`for x, y in loader: self.step(x, y)`), and `accumulator` outlives the call (an
        attribute such as `self.history`, or a global/nonlocal name)."""
        function = self.walk.function
        if function is None or not self.training.per_iteration(self.walk.qualname()):
            return None
        if "." in accumulator or any(type(node) in (cst.Global, cst.Nonlocal) and any(
                n.name.value == accumulator for n in node.names) for node in _nodes(function.body)):
            return function
        return None

    # -- judged when the scope ends (is the accumulator backpropagated or returned later?) --

    def _judge(self, pending: list[tuple], function: cst.FunctionDef | None) -> None:
        if not pending:
            return
        scope = self.analysis.scope_of(function)
        feeding, returning = scope.feeds_backward(), scope.feeds_return()
        kept = []
        for stmt, value, accumulator, how, found, loop, per_call, spent in pending:
            if accumulator in feeding:
                continue  # sub-losses summed into the loss backpropagated in this step
            trains = id(loop) in scope.training_loops or self._trains_through_helpers(function, loop)
            if accumulator in returning and not trains:
                continue  # e.g. per-head or per-scale losses summed inside one loss call, then returned
            if per_call and not trains and accumulator not in returning and \
                    _backward_after(function, loop) and not _escapes(function, accumulator):
                continue  # the terms of one update, built before its backward: freed when the call returns
            if (found.role != "loss" or found.grad == "likely") and not (scope.trains or trains):
                continue  # outputs, or values only named like losses, outside training code
            kept.append((stmt, value, accumulator, how, found, spent))
        summed = {accumulator for _, _, accumulator, how, _, _ in kept if how in ("+=", "=")}
        for stmt, value, accumulator, how, found, spent in kept:
            if how not in ("+=", "=") and _mentions(value, summed - {accumulator}):
                continue  # e.g. `losses.append(total / n)`: the finding on `total += loss` is the cause and its fix
            self._report(stmt, value, accumulator, how, found, scope, function, spent)

    def _trains_through_helpers(self, function: cst.FunctionDef | None, loop: cst.CSTNode) -> bool:
        """The loop's iterations call backward or step inside in-file helpers (`loss, acc =
        train_step(model, opt, x, y)`): it is a training loop although its own code is not."""
        training = self.training
        if function is not None:
            routine = training.routine_at(function)
        else:
            routine = training.block_routine(self.analysis)
        if routine is None:
            return False
        index = next((l.index for l in routine.loops if l.node is loop), None)
        return index is not None and training.trains(routine, index)

    def _report(self, stmt, value, accumulator, how, found, scope, function, spent) -> None:
        text = code(value)
        method = "detach" if how not in ("+=", "=") or not self._number_only(accumulator, function) else "item"
        fixed = with_method(value, method)
        what = "the model output" if found.role == "output" else "the loss" if found.role == "loss" else \
            "a tensor computed from a tensor with history"
        if how in ("+=", "="):
            said = f"`{accumulator}` sums {what} `{text}` with its autograd graph"
        else:
            said = f"`{code(stmt.func)}({text})` stores {what} with its autograd graph"  # as written: `h["loss"].append`
        if spent:  # its backward frees the saved tensors (before or after the sum): the chain of nodes stays
            message = (f"{said}; its backward frees the saved activations, but every iteration's graph nodes "
                       f"stay chained to `{accumulator}`, so memory grows each step, without bound, until out of "
                       f"memory. Use `{fixed}`.")
        else:
            message = (f"{said}: every iteration's graph (activations included) stays alive, so memory grows "
                       f"each step until CUDA OOM. Use `{fixed}`.")
        # A fix relies on the value being a tensor: only when the analysis knows it is.
        fix = None
        if found.grad == "known":
            fix = FixSpec(f"Accumulate `{fixed}` instead of the tensor", (Replace(value, fixed),))
        related = []
        if found.origin is not None and found.origin is not value:
            related.append(Related(found.origin, "the tensor with autograd history comes from here"))
        backward = next(iter(scope.backward.values()), None)
        if backward is not None:
            related.append(Related(backward, "backward() is called here: the graph is meant to be freed after it"))
        self.report(stmt, message, fix=fix, related=related)

    def _meter_keeps_graph(self, call: cst.Call, method: str) -> bool:
        """`meter.update(loss)` keeps the graph only if the meter's class (in this file)
        stores what it gets without `.item()`/`.detach()`/`float()`; unknown meters are trusted.
        The meter is a module-level name, an attribute, or a local (`meter = Metric(); meter.update(loss)`)."""
        name = self._built_by(dotted_name(call.func.value) or "")
        info = self.model.function(f"{name}.{method}") if name in self.model.classes else None
        if info is None:
            return False
        for node in _nodes(info.node):
            if isinstance(node, cst.Call) and (dotted_name(node.func) in ("float", "int") or (
                    isinstance(node.func, cst.Attribute) and node.func.attr.value in ("item", "detach", "tolist"))):
                return False
        return True

    def _number_only(self, accumulator: str, function: cst.FunctionDef | None) -> bool:
        """`.item()` turns the accumulator into a Python float: only when every use
        of it in the scope works the same on a float (no tensor methods, not returned)."""
        scope = self.analysis.scope_of(function)
        if accumulator in scope.returned or "." in accumulator:
            return False
        root = function if function is not None else self.walk.stack[0]
        for node in _nodes(root):
            if isinstance(node, cst.Attribute) and dotted_name(node.value) == accumulator:
                return False
            if isinstance(node, cst.Call) and any(dotted_name(a.value) == accumulator for a in node.args):
                callee = dotted_name(node.func) or ""
                if callee not in _NUMBER_FUNCTIONS and not callee.endswith((".append", ".log", ".info")):
                    return False
        return True


def _backward_after(function: cst.FunctionDef | None, loop: cst.CSTNode) -> bool:
    """A `.backward(...)` call of the function comes after `loop`, outside it: the loop collects
    what one update needs, and the update follows it."""
    if function is None:
        return False
    passed = False
    for node in _nodes(function.body):
        if node is loop:
            passed = True
        elif passed and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value == "backward" and not _contains(loop, node):
            return True
    return False


def _spent(flow, statement: cst.CSTNode, name: str) -> bool:
    """`name`'s graph has its saved tensors freed by a backward of it in the same pass: before
    `statement` reads it (`loss.backward(); total += loss`) or after (`total += loss; loss.backward()`)."""
    return _freed_on_every_path(flow, statement, name, after=False) or \
        _freed_on_every_path(flow, statement, name, after=True)


def _freed_on_every_path(flow, statement: cst.CSTNode, name: str, after: bool) -> bool:
    """Every path into `statement` (`after`: every path on from it) passes a `name.backward()` (or a
    backward of arithmetic on `name`) that neither retains nor builds a graph, with `name` not rebound in
    between. Going on, a path also fails when it comes round to `statement` again or reaches the end."""
    start = flow.node_of(statement)
    if start is None:
        return False
    neighbours = flow.successors() if after else flow.preds
    stops = set(flow.exits) | set(flow.returns) | {start} if after else set()
    seen, stack = set(), list(neighbours[start])
    if not stack:
        return False
    while stack:
        index = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        node = flow.nodes[index]
        if _frees_graph_of(node, name):
            continue
        if index in stops or binding(node, name) or not neighbours[index]:
            return False  # round the loop, the end or the function's entry, or rebound, before any backward of it
        stack.extend(neighbours[index])
    return True


def _frees_graph_of(node: cst.CSTNode, name: str) -> bool:
    """`node` is a small statement that calls `.backward()` on `name` or on arithmetic that has `name`
    as an operand (`(loss / n).backward()`), without retain_graph, create_graph or inputs."""
    if isinstance(node, (cst.BaseCompoundStatement, cst.FunctionDef, cst.ClassDef)):
        return False
    for call in _nodes(node):
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward" \
                and not any(a.keyword is not None and a.keyword.value in ("retain_graph", "create_graph", "inputs")
                            for a in call.args) and not any(a.keyword is None for a in call.args[1:]):
            receiver = call.func.value
            while isinstance(receiver, cst.BinaryOperation):
                if isinstance(receiver.right, cst.Name) and receiver.right.value == name:
                    return True
                receiver = receiver.left
            if isinstance(receiver, cst.Name) and receiver.value == name:
                return True
    return False


def _escapes(function: cst.FunctionDef | None, name: str) -> bool:
    """The list object is handed to something that may outlive the call: stored in an attribute,
    an item or another container, yielded, or bound to another name."""
    for node in _nodes(function) if function is not None else ():
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == name:
            return True
        if isinstance(node, (cst.Yield, cst.Lambda)) and _mentions(node, {name}):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in _LIST_METHODS | {"add", "update", "__setitem__"} and \
                any(isinstance(a.value, cst.Name) and a.value.value == name for a in node.args):
            return True
        if isinstance(node, cst.Element) and isinstance(node.value, cst.Name) and node.value.value == name:
            return True  # `[losses, ...]`, `(losses,)`
    return False


def _mentions(value: cst.BaseExpression, names: set[str]) -> bool:
    return any(isinstance(node, cst.Name) and node.value in names for node in _nodes(value))


def _nodes(root: cst.CSTNode):
    from ..walk import iter_nodes

    return iter_nodes(root)


def _contains(body: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(inner is node for inner in _nodes(body))
