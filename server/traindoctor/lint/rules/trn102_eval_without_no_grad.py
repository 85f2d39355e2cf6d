"""TRN102 eval-without-no-grad: an evaluation loop (after `model.eval()`, never
calling backward or an optimizer step) calls the model outside no_grad/
inference_mode, so every forward pass records an autograd graph it never uses.

The evaluated model may be a parameter that every in-file caller fills with a model it has
put in eval mode (`model.eval(); evaluate(model, loader)`), an attribute that every calling
method of the class has put in eval mode (`self.model.eval(); self._validate(loader)`), a model
another project file returns in eval mode, or a model given trained weights (`load_state_dict`,
`torch.load`, `from_pretrained`) in a file that trains nothing and never hands the model out.
Quiet in functions decorated with or only called under no_grad (or a decorator, here or in
another project file, that runs them under it), for a model whose parameters were all frozen
before the loop (`requires_grad_(False)`: no graph is recorded), here or by every in-file caller that
passes it, in a block that runs whenever the loop or the call does, in Lightning's
validation/test/predict hooks (Lightning disables grad), in unit tests (a script's own
`def test(model, loader)` loop is not one), and where the code asks for gradients itself
(saliency maps, attacks: reading `.grad`, `autograd.grad`; an input made with `requires_grad=True`
alone is not a use, but handed to a call this file cannot read it may be), also through a function or
method of the file that the loop calls (FROMP's `self.cac_grad(loss, ...)`). A forward whose output is
only read detached is reported in a loop, not as one forward pass per call (a sample grid after
`eval()`, one `infer()`): that graph is freed on return. Quiet, too, where the
project pins torch < 0.4: `torch.no_grad()` does not exist there, and inference without a graph
was `Variable(x, volatile=True)`.

A base class's method that calls `self.eval_step(batch)` outside no_grad is reported at the call when
project subclasses, in other files, override `eval_step` to put their own module in eval mode and run
it with autograd on (the project's `evaluating_overrides`; quiet when any project definition of the
method trains or runs under no_grad): on a subclass's instance the call is one batch of an evaluation.

In a function that trains, the evaluation loop after the model's own `.eval()` is reported when no
backward follows it, and so is the forward of a function shared by training and evaluation whose
backward and `.eval()` lie on the two branches of a flag its caller gives (`if is_train:`,
branch_conditions.py)."""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import libcst as cst

from ..analysis.autograd_off import frozen_before, runs_without_grad
from ..analysis.branch_conditions import branches, specialised_code
from ..analysis.detached_use import only_detached
from ..analysis.environment import torch_version
from ..analysis.evaluation import runs as _runs
from ..analysis.gradient_inputs import handed_over
from ..analysis.events import Event, disables_grad
from ..analysis.iteration_output import stays_in_iteration
from ..analysis.names import dotted_name
from ..analysis.scopes import code, mentions_any
from ..analysis.summarize import function_summary
from ..analysis.summary import ClassSummary
from ..analysis.vocab import vocab
from ..analysis.training import BACKWARD, STEP, Routine, same_object
from ..rule import FixSpec, InsertBefore
from ..walk import child_nodes, iter_nodes, subtree_nodes
from .trn7xx_training_base import RoutineRule


NO_GRAD_SINCE = (0, 4)  # torch.no_grad() was added in 0.4, which also made `volatile=True` a no-op


class EvalWithoutNoGrad(RoutineRule):
    CODE = "TRN102"
    READS = ("names", "objects", "classes", "functions", "calls", "globals", "training", "project", "layout")

    def check(self, routine: Routine) -> None:
        version = torch_version(self.model.path)
        if version is not None and version < NO_GRAD_SINCE:
            return  # the advice cannot be followed on the project's torch
        training = self.training
        if routine.no_grad or self._decorated_no_grad(routine) or \
                (routine.node is not None and runs_without_grad(self.model, routine.node)) or \
                routine.qualname.rsplit(".", 1)[-1].startswith(tuple(vocab().training_eval_hooks)) or \
                self.model.is_unit_test(routine.qualname):
            return
        if self._project_helper_evaluates(routine):
            return
        steps = [event for event, inner in training.expanded(routine) if inner.kind in BACKWARD or inner.kind in STEP]
        trains = bool(steps)
        if trains:
            if self._run_after_last_backward(routine) or self._evaluated_on_one_branch(routine, steps):
                return
            # the loops that train nothing, outermost first (`for epoch: model.train(); <train loop>;
            # model.eval(); <evaluation loop>`): an evaluation loop of a training function
            loops = [loop for loop in routine.loops if not training.trains(routine, loop.index) and
                     (loop.parent == -1 or training.trains(routine, loop.parent))]
        else:
            info = self.model.function(routine.qualname) if routine.node is not None else None
            if info is not None and self.model.only_called_without_grad(info):
                return
            if self._subclass_evaluates(routine):
                return
            loops = [loop for loop in routine.loops if loop.parent == -1]
        events = routine.events
        for loop in loops:
            inside = routine.events_in(loop.index)
            # the events before the loop (Event.after: the loops begun before an event)
            before = events[:events.index(inside[0])] if inside else \
                [e for e in events if e.after <= loop.index and loop.index not in e.loops]
            if any(self._turns_grad_off(e, routine) for e in before):
                return
            modes = [m for m in (self._mode(e, routine) for e in before) if m is not None]
            if routine.node is None:  # module-level code: the mode switches of earlier blocks count too
                earlier = training.routines("")
                modes = [e for r in earlier[:earlier.index(routine)] for e in r.events
                         if e.kind in ("eval", "train") and not e.no_grad and not e.loops] + modes
            models = [e.receiver for e in modes if e.kind == "eval" and
                      not any(t.kind == "train" and t.receiver == e.receiver for t in modes[modes.index(e):])]
            if trains and (not models or self._trains_after(routine, inside)):
                continue  # in a function that trains: only a loop after the model's own `.eval()`, with no
                # backward after it (what the loop computes could be backpropagated there)
            by_callers = not modes
            trainer = ""
            restored = False
            if by_callers:  # no mode switch here: the callers' (every one evaluates the model it passes)
                models, attributes = self._evaluated_by_callers(routine)
                if not models:  # or a model that another function of the file trains
                    models, trainer = self._trained_elsewhere(routine, loop)
                if not models:  # or an attribute every calling method of the class evaluates
                    models = attributes
                if not models:  # or a model given trained weights here, in a file that trains nothing
                    models = self._restored_untrained(routine, loop)
                    restored = bool(models)
            if not models:
                continue
            root = routine.node if routine.node is not None else self._file_statements()
            models = [m for m in models if not frozen_before(root, m, loop.node, _one_object) and
                      not self._plain_object(m, routine) and not (by_callers and self._frozen_by_callers(routine, m))]
            calls = [e for e in inside if e.kind == "call" and not e.no_grad and
                     any(same_object(e.receiver.removesuffix(".forward"), m) for m in models)]
            nodes = [e.node for e in calls] or \
                ([] if _under_no_grad(self.names, root, loop.node) else self._method_runs(loop.node, models))
            through_helper = not nodes
            nodes = nodes or self._helper_runs(routine, inside, models)
            if not nodes:
                continue
            if mentions_any(loop.node, vocab().training_wants_grad_words) or \
                    self._helper_asks_for_gradients(loop.node, routine.klass) or \
                    self._marked_input_handed_out(loop.node, routine.klass, models):  # type: ignore[arg-type]
                return
            first = nodes[0]
            model = calls[0].receiver.removesuffix(".forward") if calls else \
                models[0] if through_helper else code(first.func.value)  # type: ignore[attr-defined]
            when = f"it is trained in `{trainer}()`, not here" if trainer else \
                "its trained weights are loaded and nothing in this file trains it" if restored else \
                "every caller puts it in eval mode first" if by_callers else "after `.eval()`"
            message = (f"`{model}` is evaluated ({when}, no backward) outside `torch.no_grad()`/"
                       f"`torch.inference_mode()`: every forward pass records an autograd graph and keeps its "
                       f"activations, for nothing (more memory, slower, OOM on large batches).")
            # a function that trains cannot run under no_grad as a whole: the message names the loop to wrap
            self.report(nodes[0], message, fix=None if trains else self._fix(routine))
            return
        runs = self._discarded_runs(routine) if not trains else []
        if runs:
            call, model = runs[0]
            model = "this module (`self`)" if model == "self" else f"`{model}`"
            message = (f"{model} runs outside `torch.no_grad()`/`torch.inference_mode()`, but its output is only "
                       f"used detached (`.detach()`, `.data`, `.numpy()`, `.item()`, `.tolist()`) and nothing here "
                       f"backpropagates: the autograd graph it records, with its activations, is built for nothing "
                       f"(more memory, slower, OOM on large inputs).")
            self.report(call, message, fix=self._fix(routine))

    def _evaluated_on_one_branch(self, routine: Routine, steps: list[Event]) -> bool:
        """A function shared by training and evaluation (`run_epoch(model, loader, is_train)`): every
        backward and optimizer step lies on one branch of a condition on a parameter (`if is_train:`),
        the model's `.eval()` on the other, and the model's forward runs in a loop on both, outside
        no_grad. Called for evaluation, that loop records a graph nothing uses. Reported at the forward,
        with no fix (the function trains); the message names `torch.set_grad_enabled(<condition>)`,
        which records the graph for training only. `steps`: the routine's events that backpropagate or
        step (a helper's call stands for those inside it), never empty. True: reported."""
        function = routine.node
        if not isinstance(function, cst.FunctionDef):
            return False
        if any(site.in_no_grad for site in self.model.call_sites(function.name.value, routine.klass)):
            return False  # a caller runs it under no_grad: the evaluation call, as a rule
        on = branches(function)

        def lies_on(event: Event) -> frozenset:
            return on.get(id(event.node), frozenset())

        params = set(routine.params) - {"self", "cls"}
        events = routine.events
        for condition, trains_when in sorted(frozenset.intersection(*(lies_on(e) for e in steps))):
            if not set(re.findall(r"[A-Za-z_]\w*", condition)) & params:
                continue  # a mode flag the caller gives, not a test of the data or the step
            training = (condition, trains_when)
            evaluates = [e for e in events if e.kind == "eval" and not e.no_grad and
                         (condition, not trains_when) in lies_on(e)]
            if not evaluates:
                continue
            model, start = evaluates[0].receiver, events.index(evaluates[0])
            if any(e.kind == "train" and same_object(e.receiver, model) and training not in lies_on(e) for e in events):
                continue  # train() runs on the evaluation branch too
            runs = [e for e in events[start + 1:] if e.kind == "call" and e.loops and not e.no_grad and
                    same_object(e.receiver.removesuffix(".forward"), model) and training not in lies_on(e)]
            evaluation = specialised_code(function, condition, not trains_when)
            if not runs or any(word in evaluation for word in vocab().training_wants_grad_words):
                continue
            enabled = condition if trains_when else f"not {condition}"
            message = (f"`{model}` runs here both to train and to evaluate: where `{condition}` is {not trains_when} "
                       f"it is in eval mode and nothing backpropagates, but the forward runs outside "
                       f"`torch.no_grad()`, so every evaluation batch records an autograd graph and keeps its "
                       f"activations, for nothing (more memory, slower, OOM on large batches). Run it under "
                       f"`with torch.set_grad_enabled({enabled}):`.")
            self.report(runs[0].node, message)
            return True
        return False

    def _project_helper_evaluates(self, routine: Routine) -> bool:
        """A call, outside no_grad, of a function of another project file whose summary says it runs one
        of its parameters over a loop with autograd on and trains nothing (analysis/evaluation.py), given
        an evaluated model: a module this function put in eval mode before the call (no `train()` since)
        that the helper runs directly, or an object of a project class whose method the helper runs puts
        its own module in eval mode and runs it (`score = model.predict(batch)` of a `predict` that calls
        `self.network.eval()`).
        Reported at the call, where `with torch.no_grad():` goes: the helper's file cannot see its callers."""
        if not self.model.imported:
            return False
        for at, event in enumerate(routine.events):
            if event.kind != "call" or event.no_grad or not (event.args or event.keywords):
                continue
            switches = [e for e in routine.events[:at] if e.kind in ("eval", "train") and not e.no_grad]
            passed = [(i, "", a) for i, a in enumerate(event.args)] + [(-1, k, a) for k, a in event.keywords]
            for position, keyword, argument in passed:
                if not argument:
                    continue
                mine = [e for e in switches if same_object(e.receiver, argument)]
                evaluated_here = bool(mine) and mine[-1].kind == "eval"
                if not evaluated_here and (mine or not any(self._built_by(argument, routine))):
                    continue  # neither evaluated here nor an object this code builds: ask nothing
                entry = self.model.project_evaluated_argument(event.receiver, position, keyword)
                method = entry.partition(".")[2]
                if not entry or method and (self.model.imported.training_method(method) or
                                            self.model.imported.no_grad_method(method)):
                    continue  # a method some project class trains in, or runs under no_grad
                # Put in eval mode here: run directly (`model(x)`), a module; through a method, only a
                # method known to evaluate its own module (it may turn autograd off inside: an agent's
                # `act` under `with torch.no_grad()`).
                why = "put in eval mode here" if not method and evaluated_here and \
                    not self._plain_object(argument, routine) else \
                    f"`{method}()` puts its network in eval mode" if method and \
                    self._evaluating_method(argument, method, routine) else ""
                if why:
                    message = (f"`{event.receiver}()` (another file) runs `{argument}` over its data with autograd "
                               f"on and trains nothing, and `{argument}` is evaluated ({why}): called outside "
                               f"`torch.no_grad()`/`torch.inference_mode()`, every forward pass records an "
                               f"autograd graph and keeps its activations, for nothing (more memory, slower, OOM "
                               f"on large batches). Wrap the call in `with torch.no_grad():`.")
                    self.report(event.node, message)
                    return True
        return False

    def _subclass_evaluates(self, routine: Routine) -> bool:
        """A method of a base class that calls, outside no_grad, a method of its own instance
        (`self.eval_step(batch)`) that project subclasses override to put their module in eval mode
        and run it with autograd on, training nothing, while no project definition of that method
        trains or runs under no_grad (summary.py's `evaluating_overrides`): on a subclass's instance
        the call runs one batch of an evaluation and records its graph for nothing. The method that
        calls it trains nothing (it may dispatch to a `train_step` on another branch). Reported at
        the call, where `with torch.no_grad():` goes: the subclasses' files cannot see this caller."""
        if not routine.klass or not self.model.imported:
            return False
        for event in routine.events:
            head, _, method = event.receiver.rpartition(".")
            if event.kind != "call" or event.no_grad or head != "self":
                continue
            subclass = self.model.imported.evaluating_override(routine.klass, method)
            if subclass:
                if mentions_any(routine.node, vocab().training_wants_grad_words):  # type: ignore[arg-type]
                    return False  # read last: the method's whole source
                message = (f"`self.{method}()` runs an evaluation on a subclass's instance: `{subclass}.{method}` "
                           f"(another file) puts its module in eval mode and runs it with autograd on, training "
                           f"nothing, and no class of the project runs `{method}` under no_grad. Called here "
                           f"outside `torch.no_grad()`/`torch.inference_mode()`, every call records an autograd "
                           f"graph and keeps its activations, for nothing (more memory, slower, OOM on large "
                           f"batches). Wrap the call in `with torch.no_grad():`.")
                self.report(event.node, message)
                return True
        return False

    def _evaluating_method(self, name: str, method: str, routine: Routine) -> bool:
        """Every binding of `name` builds an object of a project class (of this file or another) whose
        `method` puts the instance's module in eval mode and runs it with autograd on (`evaluates_own`)."""
        callees = self._built_by(name, routine)
        if not callees:
            return False
        for callee in callees:
            last = callee.rsplit(".", 1)[-1]
            if f"{last}.{method}" in self.model.function_home:  # a class of this file: its own summary
                found = function_summary(self.model, f"{last}.{method}", {})
            else:
                klass = self.model.imported.klass(callee) if callee else None
                found = klass.method(method) if klass is not None else None
            if found is None or not found.evaluates_own:
                return False
        return True

    def _run_after_last_backward(self, routine: Routine) -> bool:
        """A training loop (every backward and optimizer step of the function in one loop) that, after
        the iteration's last backward and step, runs a model it trains in that iteration (called
        before the backward; a module: mode-switched here or known as a model) on an input, outside
        no_grad, and whose output only serves the rest of the iteration (a sample for the logs):
        nothing backpropagates it, so its graph is recorded for nothing (iteration_output.py). True: reported."""
        function = routine.node
        trains = [e for e in routine.events if e.kind in BACKWARD or e.kind in STEP]
        if not isinstance(function, cst.FunctionDef) or not trains or not trains[-1].loops:
            return False
        index = trains[-1].loops[-1]
        if any(index not in e.loops for e in trains):
            return False
        loop = routine.loops[index].node
        switched = {e.receiver for e in routine.events if e.kind in ("train", "eval")}
        candidates = [e for e in routine.events if e.kind == "call" and index in e.loops and
                      (e.receiver in switched or self.model.object_kind(e.receiver, routine.klass) == "model")]
        if not candidates:
            return False
        order: dict[int, int] = {}  # one walk of the loop, in source order
        calls: list[tuple[int, cst.Call]] = []
        todo: list[tuple[cst.CSTNode, bool]] = [(loop, False)]
        while todo:
            node, off = todo.pop()
            order[id(node)] = at = len(order)
            kind = type(node)
            if kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                continue
            if kind is cst.With and any(disables_grad(self.names, item.item) for item in node.items):
                off = True
            if kind is cst.Call and not off:
                calls.append((at, node))  # type: ignore[arg-type]
            todo.extend((child, off) for child in reversed(child_nodes(node)))
        last = max(order.get(id(e.node), -1) for e in trains)
        trained = [e.receiver for e in candidates if 0 <= order.get(id(e.node), last) < last]
        if not trained:
            return False
        runs = [(call, model) for at, call in calls if at > last and
                (model := self._module_run(call, trained, routine.klass))]
        if not runs:
            return False
        flow = self.analysis.scope_of(function).flow(function)
        for call, model in runs:
            if stays_in_iteration(function, loop, call, flow, lambda c: self._may_keep(c, routine)):  # type: ignore
                what = "backward and optimizer step" if any(e.kind in STEP for e in trains) else "backward"
                message = (f"`{model}` runs after this iteration's last {what}, outside "
                           f"`torch.no_grad()`, and its output only serves the rest of the iteration (nothing "
                           f"backpropagates it, nothing keeps it): the autograd graph it records, with its "
                           f"activations, is built for nothing and held while the output lives (more memory, "
                           f"slower); run it under `with torch.no_grad():`.")
                self.report(call, message)
                return True
        return False

    def _trains_after(self, routine: Routine, inside: list[Event]) -> bool:
        """A backward or an optimizer step later in the source than the loop's events."""
        if not inside:
            return True
        after = routine.events[routine.events.index(inside[-1]) + 1:]
        effects = [i for e in after if e.kind == "call" for i in self.training.effects(e, routine)]
        return any(e.kind in BACKWARD or e.kind in STEP for e in (*after, *effects))

    def _may_keep(self, call: cst.Call, routine: Routine) -> bool:
        """A callee that may keep what it is given past the iteration or backpropagate it: anything
        but a torch/NumPy/math function, a builtin, or a function of this file or of another
        project file that neither trains nor adds its arguments into an object's state."""
        name = dotted_name(call.func)
        if name is None or name in routine.params:
            return True
        info = self.model.function(name, routine.klass)
        if info is not None:
            return info.trains or any(e.kind in BACKWARD or e.kind in STEP for r in self.training.routines(info.qualname)
                                      for _, e in self.training.expanded(r))
        if self.model.project_plain_function(name):
            return False
        if self.model.project_fact(name, "qualname"):
            return bool(self.model.project_fact(name, "backward") or self.model.project_fact(name, "accumulates") or
                        self.model.project_fact(name, "calls"))
        qualified = self.names.qualify(call.func) or ""
        builtin = qualified in (name, f"builtins.{name}") and (name in vocab().python_number_builtins or name == "print")
        return not (qualified.startswith(("torch.", "numpy.", "math.")) or builtin)

    def _plain_object(self, name: str, routine: Routine) -> bool:
        """`name` holds an instance of a project class (of this file or another project file) that
        derives from nothing: not an nn.Module, so its `eval()` is its own method (an environment's
        evaluation mode), and calling it records no graph of its own. Every binding of a local
        name must be such a construction; `self.x` and module-level names by the object they hold."""
        callees = self._built_by(name, routine)
        return bool(callees) and all(self._plain_class(callee) for callee in callees)

    def _built_by(self, name: str, routine: Routine) -> list[str]:
        """The callees of every binding of `name` ("" for a binding that is no call)."""
        if "." not in name and routine.node is not None:
            defs = self.analysis.scope_of(routine.node).defs.get(name, ())
            return [self.names.qualify(d.value.func) or "" if d.how == "assign" and d.index is None and
                    isinstance(d.value, cst.Call) else "" for d in defs]
        obj = self.model.object(name, routine.klass)
        return [obj.callee] if obj is not None else []

    def _plain_class(self, callee: str) -> bool:
        if not callee:
            return False
        last = callee.rsplit(".", 1)[-1]
        if last in self.model.classes:
            info = self.model.classes[last]
            return last not in self.model.model_classes and all(b in ("object", "builtins.object") for b in info.bases)
        summary = self.model.imported.klass(callee) if self.model.imported else None
        return summary is not None and not summary.module and \
            all(b in ("object", "builtins.object") for b in summary.bases)

    def _discarded_runs(self, routine: Routine) -> list[tuple[cst.Call, str]]:
        """Runs of a module in this function whose output, and every local value computed from it,
        is used only through a conversion that drops the graph (analysis/detached_use.py): the
        graph can reach no backward. The module is one this function puts in eval mode, one the
        file knows as a model, or this module itself (`self(x)` in an nn.Module's method), and the
        run is marked as inference: that module is in eval mode here, or the run is in a loop here.
        Quiet when another run of a module here keeps its output's graph (a target network
        detached beside a trained one), when the output goes to a callable parameter (it may
        backpropagate: a `loss_compute(out, y)` that calls backward), when the function yields,
        or asks for gradients itself."""
        function = routine.node
        if not isinstance(function, cst.FunctionDef) or self._yields(function):
            return []
        switches = [e for e in routine.events if e.kind in ("eval", "train") and not e.no_grad]
        evaluated = [e.receiver for at, e in enumerate(switches) if e.kind == "eval" and
                     not any(t.kind == "train" and t.receiver == e.receiver for t in switches[at:])]
        # Only a forward that something marks as inference: the module put in eval mode here (and
        # not back), or a run inside a loop's body here (a pass over many inputs). One forward per
        # call of a module trained in the same program (an RL agent's action selection each
        # environment step) builds a graph that is freed at once: waste, not a bug a reviewer must fix.
        runs = []
        loop_runs = 0
        todo = [(child, False) for child in reversed(list(child_nodes(function.body)))]
        while todo:
            node, looping = todo.pop()
            kind = type(node)
            if kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                continue
            if kind is cst.With and any(disables_grad(self.names, item.item) for item in node.items):
                continue
            body = node.body if kind is cst.For or kind is cst.While else None  # type: ignore[union-attr]
            todo.extend((child, looping or child is body) for child in reversed(list(child_nodes(node))))
            if kind is cst.Call:
                model = self._module_run(node, evaluated, routine.klass)  # type: ignore[arg-type]
                if model and (looping or any(same_object(model, m) for m in evaluated)):
                    runs.append((node, model))
                    loop_runs += looping
        if not runs:
            return []  # most functions: nothing below (source text, flow graph) is built for them
        if len(runs) == 1 and not loop_runs and self._one_forward(runs[0][0]):
            return []  # one forward pass per call, in no loop: its graph is freed on return (a sample grid)
        text = code(function)
        if any(word in text for word in vocab().training_wants_grad_words):
            return []
        opaque = frozenset(p for p in routine.params if p not in ("self", "cls")) - set(evaluated)
        flow = self.analysis.scope_of(function).flow(function)
        for node, _ in runs:
            if not only_detached(function, node, flow, opaque):  # type: ignore[arg-type]
                return []  # this run's output may reach a backward (a caller's): the function may train
        return runs

    def _helper_asks_for_gradients(self, loop: cst.CSTNode, klass: str) -> bool:
        """The loop calls a function or method of this file (`self.cac_grad(loss, ...)`) that asks
        for gradients itself (`torch.autograd.grad`, `.backward()`): the graph is used there."""
        words = vocab().training_wants_grad_words
        for node in iter_nodes(loop):
            if type(node) is cst.Call:
                name = dotted_name(node.func)
                info = self.model.function(name, klass) if name is not None else None
                if info is not None and info.node is not None and mentions_any(info.node, words):
                    return True
        return False

    def _marked_input_handed_out(self, loop: cst.CSTNode, klass: str, models: list[str]) -> bool:
        """The loop marks an input as requiring grad and hands it to a call that may read its gradient:
        not a run of an evaluated model, not torch's own or an inert builtin, and not a function of this
        file that reads no gradient (a criterion held in a dict that calls `autograd.grad` on the input,
        AberHu/Knowledge-Distillation-Zoo's Sobolev loss; a teacher network this file cannot resolve)."""
        words = vocab().training_wants_grad_words
        for call in handed_over(loop):
            name = dotted_name(call.func)
            if name is not None and any(same_object(name.removesuffix(".forward"), m) for m in models):
                continue
            qualified = self.names.qualify(call.func) or ""
            if qualified.startswith("torch.") or qualified in vocab().training_inert_callees:
                continue
            info = self.model.function(name, klass) if name is not None else None
            if info is not None and info.node is not None and not mentions_any(info.node, words):
                continue  # a function of this file that reads no gradient
            return True
        return False

    def _one_forward(self, call: cst.Call) -> bool:
        """`call` is one forward pass of a module: the module called (`model(x)`, `self(x)`), its
        `forward`, or a submodule that a class of this file binds on `self` (`model.decoder(z)`).
        A method (`generate`, `decode`, `infer`) may run the model many times inside
        (autoregressive generation), and an attribute the file does not bind is not known: not one."""
        func = call.func
        if type(func) is cst.Name:
            return True
        return type(func) is cst.Attribute and (func.attr.value == "forward" or
                                                func.attr.value in self._submodule_attributes)

    @functools.cached_property
    def _submodule_attributes(self) -> frozenset[str]:
        """Attributes that a class of this file binds on `self` to a call (`self.decoder = nn.Sequential(...)`)
        and that no class of the file defines as a method."""
        bound, methods = set(), set()
        for node in iter_nodes(self._file_statements()):
            if type(node) is cst.FunctionDef:
                methods.add(node.name.value)
            elif type(node) is cst.Assign and type(node.value) is cst.Call:
                for target in node.targets:
                    name = dotted_name(target.target)
                    if name is not None and name.startswith("self.") and name.count(".") == 1:
                        bound.add(name[5:])
        return frozenset(bound - methods)

    def _module_run(self, call: cst.Call, evaluated: list[str], klass: str) -> str:
        """The module that `call` runs on an input (`model(x)`, `model.forward(x)`, a computing
        method `model.decode(x)`, `self(x)` in a module's method), "" when it is not one."""
        if not call.args:
            return ""
        def is_module(name: str) -> bool:
            if name == "self":
                return bool(klass) and klass in self.model.model_classes
            return any(same_object(name, m) for m in evaluated) or self.model.object_kind(name, klass) == "model"
        name = dotted_name(call.func)
        if name is not None and is_module(name):
            return name
        if type(call.func) is not cst.Attribute:
            return ""
        head, method = dotted_name(call.func.value), call.func.attr.value
        v = vocab()
        if head is None or not is_module(head) or (head == "self" and method != "forward") or \
                method in v.module_state_methods or method in v.self_no_grad_methods or \
                (method != "forward" and self._no_grad_method(method)):
            return ""
        return head

    def _trained_elsewhere(self, routine: Routine, loop) -> tuple[list[str], str]:
        """An evaluation that no mode switch marks: a loop here runs a model (a module-level
        object, or an attribute of this class) that another function of the file trains (calls it
        and backpropagates, and an optimizer of the file is built over its parameters), while
        nothing here, or in the helpers called here, calls backward or steps. Not when the
        function's results can carry the graph elsewhere: it yields, the loop stores into a
        container of the object or of a parameter (`self.log_probs.append(...)`), or it returns a
        tensor with history that a caller backpropagates (or that no in-file caller receives)."""
        function = routine.node
        if not isinstance(function, cst.FunctionDef) or self._yields(function):
            return [], ""
        training = self.training
        candidates = []
        for event in routine.events_in(loop.index):
            model = event.receiver.removesuffix(".forward")
            if event.kind == "call" and not event.no_grad and training.callee(event, routine) is None and \
                    model not in candidates and self._shared_object(model, routine):
                candidates.append(model)
        if not candidates or self._stores_outside(loop.node, routine) or not self._results_stay(routine):
            return [], ""
        trainers = training.training_functions
        for model in [m for m in candidates if self._optimized(m, routine)]:
            for other in training.all:
                if other is routine or other.qualname not in trainers or other.node is None or \
                        (model.startswith("self.") and other.klass != routine.klass) or \
                        not self._shared_object(model, other):
                    continue
                if _runs(other.node, model, self.names):
                    return [model], other.qualname.rsplit(".", 1)[-1]
        return [], ""

    def _restored_untrained(self, routine: Routine, loop) -> list[str]:
        """An evaluation that no mode switch marks: the loop runs a model that holds trained
        weights (`m.load_state_dict(...)` earlier in the function or script, or an attribute built
        by a `from_pretrained`-style factory) in a file that trains nothing (no backward, optimizer
        step or optimizer construction anywhere), and the model never leaves the code that can
        see it (it is not passed to a call, returned, stored elsewhere, nor are its parameters
        handed out: `train(model)` in another file could train it). The function's results must
        stay out of any backward as for `_trained_elsewhere`."""
        training = self.training
        if training.event_kinds & {*BACKWARD, *STEP, "build_optimizer"} or routine.klass in self.model.model_classes:
            return []  # a model's own method: a training loop elsewhere may run it
        function = routine.node
        if function is not None and (not isinstance(function, cst.FunctionDef) or
                                     self._yields(function) or
                                     self._stores_outside(loop.node, routine) or not self._results_stay(routine)):
            return []
        root = function if function is not None else self._file_statements()
        found = []
        for event in routine.events_in(loop.index):
            model = event.receiver.removesuffix(".forward")
            if event.kind != "call" or event.no_grad or model in found or training.callee(event, routine) is not None:
                continue
            if model.startswith("self."):
                obj = self.model.object(model, routine.klass)
                restored = obj is not None and obj.callee.endswith(tuple(vocab().pretrained_factory_suffixes)) and \
                    self.model.object_kind(model, routine.klass) == "model" or \
                    self._restored_in_init(model, routine.klass)
                scope: cst.CSTNode | None = self.model.classes[routine.klass].node \
                    if routine.klass in self.model.classes else None
            elif "." not in model and model not in routine.params:
                restored = _restores_weights(root, model, loop.node, self.names)
                scope = root
            else:
                continue
            if restored and scope is not None and _stays_here(scope, model):
                found.append(model)
        return found

    def _restored_in_init(self, attribute: str, klass: str) -> bool:
        """The class's `__init__` loads trained weights into `self.x` (`self.net.load_state_dict(torch.load(p))`,
        `self.net = torch.load(p)`), whatever module its caller passed in."""
        init = self.model.function_home.get(f"{klass}.__init__") if klass else None
        return init is not None and _restores_weights(init[0].node, attribute, None, self.names)

    def _optimized(self, model: str, routine: Routine) -> bool:
        """An optimizer of the file is built over `model`'s parameters (in this class, for `self.` ones)."""
        for other in self.training.all:
            if model.startswith("self.") and other.klass != routine.klass:
                continue
            for event in other.events:
                if event.kind != "build_optimizer" or type(event.node) is not cst.Call:
                    continue
                params = event.node.args[0].value if event.node.args else None
                if params is not None and any(dotted_name(n) == model for n in iter_nodes(params)):
                    return True
        return False

    def _shared_object(self, name: str, routine: Routine) -> bool:
        """`name` is the same object in every function of the file: an attribute of this class's
        instance (`self.model`), or a module-level name that `routine` does not bind; and as far as
        the file says, a module (not a loss function, an optimizer...)."""
        if self.model.object_kind(name, routine.klass) not in (None, "model", "sequential"):
            return False
        if name.startswith("self.") and name.count(".") == 1:
            return bool(routine.klass)
        if "." in name or name in routine.params or name not in self.model.global_defs:
            return False
        home = self.model.function_home.get(routine.qualname)
        return home is not None and name not in home[1].scope_of(routine.node).defs

    def _stores_outside(self, loop, routine: Routine) -> bool:
        """The loop puts values into a container it does not own: one of the object's
        attributes or of a parameter (`self.saved.append(x)`, `buffer[i] = x`)."""
        outside = set(routine.params) | {"self"}
        for node in iter_nodes(loop):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    node.func.attr.value in ("append", "extend", "insert", "add", "update", "put", "push"):
                target = node.func.value
            elif type(node) in (cst.Assign, cst.AugAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                target = next((t for t in targets if type(t) is cst.Subscript), None)
                target = target.value if target is not None else None
            else:
                continue
            head = (dotted_name(target) or "").split(".")[0] if target is not None else ""
            if head in outside:
                return True
        return False

    def _results_stay(self, routine: Routine) -> bool:
        """What the function returns carries no graph, or no in-file caller backpropagates it
        (and there is one)."""
        info = self.model.function(routine.qualname)
        if info is None:
            return False
        if not info.returns or not self.values.summary(info).tensor_with_history:
            return True
        sites = [(caller, e) for caller in self.training.all for e in caller.events
                 if e.kind == "call" and self.training.callee(e, caller) is routine]
        for caller, event in sites:
            home = self.model.function_home.get(caller.qualname)
            if home is None or caller.node is None:
                return False
            bound = _assigned_names(event.stmt, event.node)
            if not bound or bound & home[1].scope_of(caller.node).feeds_backward():
                return False
        return bool(sites)

    def _helper_runs(self, routine: Routine, inside: list[Event], models: list[str]) -> list[cst.CSTNode]:
        """Calls in the loop, outside no_grad, of an in-file helper that gets an evaluated model as
        an argument and runs it (`result = run_model(model, batch)` whose body calls
        `model.decode(...)`); the helper neither trains (the routine's expanded events say so) nor
        runs under no_grad."""
        found = []
        for event in inside:
            if event.kind != "call" or event.no_grad:
                continue
            helper = self.model.function(event.receiver, routine.klass)  # a FuncInfo: it may hold no event
            if helper is None or helper.node is None or helper.node is routine.node or helper.trains or \
                    helper.no_grad or \
                    runs_without_grad(self.model, helper.node):  # type: ignore[arg-type]
                continue
            passed = event.passed(helper.params)
            if any(any(same_object(argument, m) for m in models) and _runs(helper.node, param, self.names) and
                   not self._trains_through_methods(helper.node, param)
                   for param, argument in passed.items() if argument):
                found.append(event.node)
            elif event.receiver.startswith("self.") and helper.qualname.startswith(f"{routine.klass}.") and \
                    any(m.startswith("self.") and _runs(helper.node, m, self.names) for m in models):
                found.append(event.node)  # a method of this class that runs the instance's evaluated model
        return found

    def _method_runs(self, loop: cst.CSTNode | None, models: list[str]) -> list[cst.Call]:
        """Calls in `loop`, outside no_grad, of a method of an evaluated model that runs its
        computation on an input (`model.decode(**batch)`, `self.model.predict(x)`, a submodule
        `self.decoder(h)`): a module's method other than its state and bookkeeping API
        (`module_state_methods`), given an argument, whose result is used (a call whose result is
        dropped changes state: `model.set_cache(n)`), and neither a library method that turns
        autograd off itself (`self_no_grad_methods`, e.g. Hugging Face `generate`) nor one that a
        class of this file or of the project defines under no_grad. None when the loop turns
        autograd off for part of its body: the author chose what runs without it there."""
        if loop is None:
            return []
        v = vocab()
        found: list[cst.Call] = []
        dropped: set[int] = set()  # calls that are whole expression statements
        todo = [loop.body] if isinstance(loop, (cst.For, cst.While)) else []
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                continue
            if kind is cst.With and any(disables_grad(self.names, item.item) for item in node.items):
                return []
            if kind is cst.Expr:
                dropped.add(id(node.value))
            if kind is cst.Call and type(node.func) is cst.Attribute and node.args and id(node) not in dropped:
                method = node.func.attr.value
                head = dotted_name(node.func.value)
                if head is not None and method not in v.module_state_methods and \
                        method not in v.self_no_grad_methods and method not in ("forward", "__call__") and \
                        any(same_object(head, m) for m in models) and not self._no_grad_method(method):
                    found.append(node)
            todo.extend(reversed(list(child_nodes(node))))
        return found

    def _trains_through_methods(self, helper: cst.CSTNode, model: str) -> bool:
        """The helper calls a method of `model` that a class of this file or of the project
        trains in (backward, an optimizer step): it may be fitting something, not evaluating."""
        for node in iter_nodes(helper):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    dotted_name(node.func.value) == model:
                method = node.func.attr.value
                if self.model.imported.training_method(method) or any(
                        q.rsplit(".", 1)[-1] == method and "." in q and info.trains
                        for q, (info, _) in self.model.function_home.items()):
                    return True
        return False

    def _no_grad_method(self, method: str) -> bool:
        """A class of this file, or an imported project class, defines `method` under no_grad; or
        every class of the project that defines it does (the model's class is not known here)."""
        if self.model.imported.no_grad_method(method):
            return True
        for qualname, (info, _) in self.model.function_home.items():
            if qualname.rsplit(".", 1)[-1] == method and "." in qualname and \
                    (self.model.only_called_without_grad(info) or _decorated_no_grad(self.names, info.node) or
                     runs_without_grad(self.model, info.node)):
                return True
        for _, symbol in self.model.imported.symbols:
            found = symbol.method(method) if isinstance(symbol, ClassSummary) else None
            if found is not None and found.no_grad:
                return True
        return False

    def _evaluated_by_callers(self, routine: Routine) -> tuple[list[str], list[str]]:
        """Parameters that every in-file caller fills with a model it has put in eval mode (no
        `train()` since), outside no_grad, from a routine that does not train through this call;
        and, for a method, the attributes of the instance (`self.model`) that every caller, a
        method of the same class, has put in eval mode before calling it (`self.model.eval();
        self.validate(...)`): the object is the same one in the caller and here."""
        training = self.training
        params = [p for p in routine.params if p not in ("self", "cls")]
        if routine.node is None:
            return [], []
        evaluated: dict[str, bool] = {}
        attributes: set[str] | None = None  # the attributes every caller left in eval mode
        for caller in training.all:
            if caller is routine:
                continue
            for at, event in enumerate(caller.events):
                if event.kind != "call" or training.callee(event, caller) is not routine:
                    continue
                mapping = event.passed(routine.params)
                before = [e for e in caller.events[:at] if e.kind in ("eval", "train")]
                for param in params:
                    argument = mapping.get(param, "")
                    switches = [e for e in before if argument and same_object(e.receiver, argument)]
                    evaluated[param] = evaluated.get(param, True) and not event.no_grad and \
                        bool(switches) and switches[-1].kind == "eval"
                left = set()
                if routine.klass and caller.klass == routine.klass and not event.no_grad:
                    for switch in before:
                        if switch.receiver.startswith("self.") and switch.receiver.count(".") == 1:
                            left.add(switch.receiver) if switch.kind == "eval" else left.discard(switch.receiver)
                attributes = left if attributes is None else attributes & left
        return [p for p, ok in evaluated.items() if ok], sorted(attributes or ())

    def _frozen_by_callers(self, routine: Routine, param: str) -> bool:
        """Every in-file caller froze the model it passes as `param` before the call
        (`model.requires_grad_(False); model.eval(); evaluate(..., model)`): no graph is recorded."""
        training = self.training
        called = False
        for caller in training.all:
            if caller is routine:
                continue
            for event in caller.events:
                if event.kind != "call" or training.callee(event, caller) is not routine:
                    continue
                argument = event.passed(routine.params).get(param, "")
                root = caller.node if caller.node is not None else self._file_statements()
                if not argument or event.stmt is None or not frozen_before(root, argument, event.stmt, _one_object):
                    return False
                called = True
        return called

    def _mode(self, event: Event, routine: Routine | None = None) -> Event | None:
        """A train/eval switch; `model = load()` where the helper (in another project file, or in
        this one: also `model, vocab = load()` of `return model, vocab`) returns a model it put in
        eval mode counts as `model.eval()`."""
        if event.no_grad:
            return None
        if event.kind in ("eval", "train"):
            return event
        if event.kind == "call" and event.bound and self.model.project_fact(event.receiver, "returns_eval"):
            return replace(event, kind="eval", receiver=event.bound)
        if event.kind == "call" and routine is not None:
            helper = self.training.callee(event, routine)
            position = _returns_evaluated(helper) if helper is not None else None
            if position is not None:
                bound = _bound_at(event.stmt, event.node, position)
                if bound:
                    return replace(event, kind="eval", receiver=bound)
        return None

    def _turns_grad_off(self, event: Event, routine: Routine) -> bool:
        """A helper called before the loop (unconditionally) returns with autograd off."""
        if event.kind != "call" or event.loops or event.conditional:
            return False
        target = self.training.callee(event, routine)
        if target is not None:
            return self.training.leaves_grad_off(target.qualname) is not None
        return bool(self.model.project_fact(event.receiver, "leaves_grad_off"))

    def _decorated_no_grad(self, routine: Routine) -> bool:
        """Decorated with a decorator of another project file that runs the function under no_grad
        (an in-file one: autograd_off.runs_without_grad)."""
        function = routine.node
        if not isinstance(function, cst.FunctionDef):
            return False
        for decorator in function.decorators:
            expr = decorator.decorator
            name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
            if self.model.project_fact(name, "no_grad_decorator"):
                return True
        return False

    def _yields(self, function: cst.FunctionDef) -> bool:
        """A `yield` anywhere in the function (a nested one's included): walked once per function."""
        return self.model.remembered(("trn102:yields", id(function)),
                                     lambda: any(type(node) is cst.Yield for node in subtree_nodes(function)))

    def _file_statements(self) -> cst.Module:
        """The file's top-level statements, in order: a module-level loop's earlier code."""
        return cst.Module(body=[t.node for t in self.model.facts["layout"] if t.node is not None])

    def _fix(self, routine: Routine) -> FixSpec | None:
        function = routine.node
        torch = self.names.alias_of("torch")
        if not isinstance(function, cst.FunctionDef) or function.decorators or function.asynchronous or torch is None:
            return None
        if self._yields(function):
            return None
        info = self.model.function(routine.qualname)
        safe = info is None or not info.returns or not self.values.summary(info).tensor_with_history
        return FixSpec(f"Decorate `{function.name.value}` with `@{torch}.no_grad()`",
                       (InsertBefore(function, f"@{torch}.no_grad()"),), safe=safe)


def _restores_weights(root: cst.CSTNode, model: str, before: cst.CSTNode | None, names) -> bool:
    """Before `before` (source order) in `root`, `model.load_state_dict(...)` runs
    (`weight_loading_methods`) or `model = torch.load(...)` binds it (`weight_loading_functions`: a
    whole pickled module): the module holds weights someone trained."""
    v = vocab()
    for node in iter_nodes(root):
        if node is before:
            return False
        if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                node.func.attr.value in v.weight_loading_methods and dotted_name(node.func.value) == model:
            return True
        if type(node) is cst.Assign and type(node.value) is cst.Call and len(node.targets) == 1 and \
                dotted_name(node.targets[0].target) == model and \
                (names.qualify(node.value.func) or "") in v.weight_loading_functions:
            return True
    return False


def _stays_here(scope: cst.CSTNode, model: str) -> bool:
    """`model` (a name or `self.x`) is used in `scope` only by running it, by its own methods other
    than those that hand out its parameters or switch it to training, and as an assignment target:
    never passed to a call, returned, yielded, aliased or put in a container."""
    handing_out = ("parameters", "named_parameters", "train", "requires_grad_", "register_hook", "state_dict")
    todo: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(scope, None)]
    while todo:
        node, parent = todo.pop()
        if type(node) in (cst.Name, cst.Attribute) and dotted_name(node) == model:
            if type(parent) is cst.Call and parent.func is node:
                continue  # run on an input
            if type(parent) is cst.Attribute and parent.value is node:
                if parent.attr.value in handing_out:
                    return False
                continue  # one of its own methods or attributes (`model.load_state_dict`, `model.config`)
            if type(parent) is cst.AssignTarget:
                continue
            return False
        todo.extend((child, node) for child in child_nodes(node))
    return True


def _returns_evaluated(routine: Routine) -> int | None:
    """Where a function returns a module it put in eval mode: -1 for the whole value (`return
    model`), i for the i-th element of a returned tuple (`return model, vocab`), else None."""
    function = routine.node
    if not isinstance(function, cst.FunctionDef):
        return None
    evaluated = {e.receiver for e in routine.events if e.kind == "eval" and not e.loops}
    if not evaluated:
        return None
    for node in iter_nodes(function.body):
        if type(node) is not cst.Return or node.value is None:
            continue
        if dotted_name(node.value) in evaluated:
            return -1
        if type(node.value) is cst.Tuple:
            for index, element in enumerate(node.value.elements):
                if dotted_name(element.value) in evaluated:
                    return index
    return None


def _bound_at(stmt, call, position: int) -> str:
    """The name `stmt` binds to the call's result (-1) or to element `position` of it."""
    small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
    if type(small) is not cst.Assign or small.value is not call or len(small.targets) != 1:
        return ""
    target = small.targets[0].target
    if position == -1:
        return dotted_name(target) or ""
    if type(target) in (cst.Tuple, cst.List) and position < len(target.elements):
        element = target.elements[position]
        return "" if type(element) is cst.StarredElement else dotted_name(element.value) or ""
    return ""


def _assigned_names(stmt, call) -> set[str]:
    """The names a statement `x, y = call(...)` binds to the call's result (empty otherwise)."""
    small = stmt.body[0] if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 else None
    if type(small) is not cst.Assign or small.value is not call:
        return set()
    return {n.value for t in small.targets for n in iter_nodes(t.target) if type(n) is cst.Name}


def _decorated_no_grad(names, function: cst.FunctionDef) -> bool:
    """`@torch.no_grad()` / `@torch.inference_mode()` on a function."""
    return any(disables_grad(names, d.decorator) for d in function.decorators)


def _under_no_grad(names, root: cst.CSTNode, target: cst.CSTNode | None) -> bool:
    """`target` lies inside a `with torch.no_grad():` (or inference_mode) block of `root`."""
    todo: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while todo:
        node, off = todo.pop()
        if node is target:
            return off
        if type(node) is cst.With and any(disables_grad(names, item.item) for item in node.items):
            off = True
        todo.extend((child, off) for child in child_nodes(node))
    return False


def _one_object(a: str, b: str) -> bool:
    """Two receivers in one function name one module: `self.net` and `net.module` are `net`."""
    def norm(text: str) -> str:
        return text.removeprefix("self.").removesuffix(".module")
    return bool(a) and norm(a) == norm(b)
