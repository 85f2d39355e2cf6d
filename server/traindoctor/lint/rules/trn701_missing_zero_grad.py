"""TRN701 missing-zero-grad: a loop calls backward and an optimizer step every
iteration and never zeroes the gradients, so each step applies the sum of every
gradient so far.

Quiet on any zeroing in the loop (optimizer/model `zero_grad`, `set_to_none`,
`p.grad = None`, `p.grad.zero_()`, in a helper called there), unless every zeroing
there reaches a known model and an optimizer over another, separately built model
steps unzeroed (a GAN's discriminator); on gradient
accumulation that zeroes after its conditional step, on LBFGS-style closures, on
loops that hand the optimizer to a function we cannot see, on optimizer classes of
the file whose `step` zeroes, and on loops that build a new model each iteration.
An ignite Engine's process function is one iteration of the engine's loop.
A zeroing in one arm of an `if`/`else` whose other arm also steps does not count for
that other arm when nothing else in the loop zeroes (an AMP branch that forgot it).
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.def_use import parents_of
from ..analysis.facts import Marker
from ..analysis.names import dotted_name
from ..analysis.scopes import code
from ..analysis.training import BACKWARD, STEP, TRAINING_READS, Routine
from ..rule import FixSpec, InsertAfter, InsertBefore, Related
from .trn7xx_training_base import RoutineRule


class MissingZeroGrad(RoutineRule):
    CODE = "TRN701"
    READS = ("names", *TRAINING_READS, "program")

    def check(self, routine: Routine) -> None:
        training = self.training
        self._check_process_function(routine)
        loops = training.step_loops(routine, through_calls=True)
        if not loops and routine.node is not None:
            self._check_step_function(routine)
        for index in loops:
            pairs = training.expanded(routine, index)
            events = [e for _, e in pairs]
            if any(e.kind == "build_model" for e in events):
                continue
            if any(e.kind == "zero_grad" for e in events):
                if not self._check_arms(routine, pairs):
                    self._check_partial(routine, index, events)
                continue
            steps = [e for e in events if e.kind in STEP]
            backwards = [local for local, e in pairs if e.kind in BACKWARD]
            optimizers = {self.optimizer_of(s) for s in steps}
            if any(s.kind == "step" and s.arg for s in steps) or "" in optimizers:
                continue  # a closure (LBFGS) zeroes; or a step we cannot name
            if any(training.unresolved_calls_with(routine, index, name) for name in optimizers):
                continue  # the optimizer goes to code we cannot see (a helper elsewhere, a base-class method)
            if any(self._step_zeroes(name, routine.klass) for name in optimizers):
                continue
            first = backwards[0]
            inner = next(e for _, e in pairs if e.kind in BACKWARD)
            related = []
            if inner is not first:  # the backward is in a helper called here: one finding per bug
                sites = self._call_sites(inner)
                if self._reported_in_helper(inner) or not sites or sites[0][:2] != (id(routine.node), index):
                    continue  # the helper's own loop, or the helper's first calling loop, reports it
                related = [Related(inner.node, "backward() is called here, in the helper")] + [
                    Related(call.node, "the helper is also called every iteration here") for *_, call in sites[1:]]
            names = ", ".join(f"`{n}`" for n in sorted(optimizers))
            message = (f"{names} steps every iteration but the gradients are never zeroed: `backward()` adds to "
                       f"`.grad`, so each step applies the sum of all gradients so far. Call "
                       f"`{sorted(optimizers)[0]}.zero_grad()` before `backward()` (or after the step).")
            direct = first in routine.events and all(s in routine.events for s in steps)
            self.report(first.node, message, fix=self._fix(routine, index, first, steps, optimizers) if direct else None,
                        related=[Related(steps[0].node, "the optimizer steps here")] if direct else related)

    def _check_arms(self, routine: Routine, pairs: list) -> bool:
        """An `if`/`else` in the loop whose arms both step the optimizer, one zeroing after its step and the
        other not (LAVIS: `if use_amp: scaler.step(opt); scaler.update()` / `else: opt.step(); opt.zero_grad()`),
        with no zeroing elsewhere in the loop: on the arm without it every later backward adds to the gradients
        that step applied. True when reported."""
        if routine.node is None or len({id(local.node) for local, e in pairs if e.kind in STEP}) < 2:
            return False  # both arms step: two step sites (most loops have one; the parents walk is skipped)
        zeroings = [local for local, e in pairs if e.kind == "zero_grad"]
        parents = parents_of(routine.node)
        for local, step in ((local, e) for local, e in pairs if e.kind in STEP):
            name = self.optimizer_of(step)
            for branch, arm, other in _arms_around(local.node, parents):
                if any(not _inside(z.node, branch, parents) for z in zeroings):
                    break  # a zeroing outside this if: paths through it may zero
                if any(_inside(z.node, arm, parents) for z in zeroings):
                    break  # this arm zeroes
                zeroes_there = [z for z in zeroings if _inside(z.node, other, parents)]
                steps_there = [l for l, e in pairs if e.kind in STEP and _inside(l.node, other, parents)]
                if not name or not zeroes_there or not steps_there:
                    continue
                message = (f"`{name}` steps in this branch without zeroing the gradients, while the other branch of "
                           f"this `if` zeroes them after its step, and nothing else in the loop does: on this path "
                           f"`backward()` keeps adding to `.grad`, so each step applies the sum of all gradients so "
                           f"far. Call `{name}.zero_grad()` after this step too.")
                block = arm.body if isinstance(arm, cst.Else) else arm
                fix = FixSpec(f"Zero the gradients after this branch's step (`{name}.zero_grad()`)",
                              (InsertAfter(block.body[-1], f"{name}.zero_grad()"),)) \
                    if isinstance(block, cst.IndentedBlock) and block.body else None
                self.report(local.node, message, fix=fix,
                            related=[Related(zeroes_there[0].node, "the other branch zeroes the gradients here")])
                return True
        return False

    def _check_partial(self, routine: Routine, index: int, events) -> None:
        """A loop that zeroes some gradients but steps an optimizer over another model: every
        zeroing reaches a known model (`opt_g.zero_grad()`: the model `opt_g` was built over;
        `gen.zero_grad()`), and a stepped optimizer's model is a different object built apart
        from all of them (the GAN discriminator whose optimizer is never zeroed)."""
        zeroed = []
        for event in events:
            if event.kind == "zero_grad":
                module = self._zeroed_module(event.receiver, routine.klass)
                if module is None:
                    return  # a zeroing we cannot place may reach every model
                zeroed.append(module)
        for step in (e for e in events if e.kind in STEP):
            stepped = self._steps_another_model(step, zeroed, routine, index)
            if stepped is None:
                continue
            name, module = stepped
            backward = next(e for e in events if e.kind in BACKWARD)
            message = (f"`{name}` steps `{module}` every iteration but `{module}`'s gradients are never zeroed "
                       f"(this loop zeroes only {', '.join(f'`{m}`' for m in sorted(set(zeroed)))}'s): "
                       f"`backward()` adds to `.grad`, so each step applies the sum of all gradients so far. Call "
                       f"`{name}.zero_grad()` before its backward.")
            self.report(step.node if step in routine.events else backward.node, message,
                        related=[Related(e.node, "this zeroes another model's gradients only")
                                 for e in events if e.kind == "zero_grad" and e in routine.events][:1])
            return

    def _check_step_function(self, routine: Routine) -> None:
        """A function that zeroes one model's gradients before its backward (so it runs once per
        batch: a GAN's `step(batch)`) and steps an optimizer over another, separately built model
        whose gradients nothing in the file zeroes."""
        pairs = self.training.expanded(routine)
        events = [e for _, e in pairs]
        if not any(e.kind in BACKWARD for e in events) or not any(e.kind == "zero_grad" for e in events):
            return
        everywhere = [e for r in self.training.all for _, e in self.training.expanded(r) if e.kind == "zero_grad"]
        zeroed = [self._zeroed_module(e.receiver, routine.klass) for e in everywhere]
        if None in zeroed or any(e.kind == "build_model" for e in events):
            return  # a zeroing we cannot place may reach every model
        for step in (e for e in events if e.kind in STEP):
            stepped = self._steps_another_model(step, zeroed, routine, None)
            if stepped is None:
                continue
            name, module = stepped
            message = (f"`{routine.qualname}` zeroes the gradients of {', '.join(f'`{m}`' for m in sorted(set(zeroed)))} "
                       f"only, so it runs once per batch, but `{name}` steps `{module}` here and nothing in the file "
                       f"zeroes `{module}`'s gradients: `backward()` adds to `.grad`, so each step applies the sum of "
                       f"all gradients so far. Call `{name}.zero_grad()` before its backward.")
            self.report(step.node if step in routine.events else routine.node.name, message)
            return

    def _steps_another_model(self, step, zeroed: list[str], routine: Routine,
                             index: int | None) -> tuple[str, str] | None:
        """(optimizer, model) when `step` steps an optimizer over one named model built apart from
        every zeroed one, whose own `step` does not zero, with no closure argument and no call we
        cannot see that receives the optimizer; None otherwise."""
        name = self.optimizer_of(step)
        module = self._optimized_module(name, routine.klass) if name else None
        if module is None or (step.kind == "step" and step.arg) or self._step_zeroes(name, routine.klass) or \
                not all(self._apart(module, other, routine.klass) for other in zeroed) or \
                self.training.unresolved_calls_with(routine, index, name):
            return None
        return name, module

    def _optimized_module(self, name: str, klass: str) -> str | None:
        """The model an optimizer object was built over (`Adam(d.parameters())`,
        `Adam(params=d.parameters())`), None when not exactly one named model."""
        obj = self.model.object(name, klass)
        if obj is None or self.model.kind_of_callee(obj.callee) != "optimizer" or type(obj.node) is not cst.Call:
            return None
        params = next((a.value for a in obj.node.args if a.keyword is None or a.keyword.value == "params"), None)
        if not (type(params) is cst.Call and type(params.func) is cst.Attribute and
                params.func.attr.value == "parameters" and not params.args):
            return None
        return dotted_name(params.func.value)

    def _zeroed_module(self, receiver: str, klass: str) -> str | None:
        """The model a zeroing reaches: an optimizer's model, or a model object zeroed itself."""
        obj = self.model.object(receiver, klass) if receiver else None
        if obj is None:
            return None
        if self.model.kind_of_callee(obj.callee) == "optimizer":
            return self._optimized_module(receiver, klass)
        return receiver

    def _apart(self, first: str, second: str, klass: str) -> bool:
        """Two names of models built by separate constructors, neither built from or holding the other."""
        if first == second or first.startswith(second + ".") or second.startswith(first + "."):
            return False
        a, b = self.model.object(first, klass), self.model.object(second, klass)
        if a is None or b is None or a.node is b.node:
            return False
        mentions = re.compile(r"(^|[^\w])(%s|%s)($|[^\w])" % (re.escape(first.rsplit(".", 1)[-1]),
                                                                 re.escape(second.rsplit(".", 1)[-1])))
        if mentions.search(code(a.node)) or mentions.search(code(b.node)):
            return False
        return not any(self._attaches(x, y) for x, y in ((first, second), (second, first)))

    def _attaches(self, owner: str, part: str) -> bool:
        """Somewhere in the file `part` may become a submodule of `owner`: `owner.d = part`,
        `owner.add_module("d", part)`, `owner.layers.append(part)`, `setattr(owner, "d", part)`.
        Read from every block's text (the rule sees one block's nodes); no text: cannot tell."""
        o, p = re.escape(owner), re.escape(part)
        attached = re.compile(rf"(^|[^\w.]){o}(\.\w+)*([ \t]*=|\.\w+\().*[^\w.\n]{p}($|[^\w])|"
                              rf"setattr\([ \t]*{o}[ \t]*,.*[^\w.\n]{p}($|[^\w])", re.MULTILINE)
        texts = [analysis.text for analysis in self.model.analyses]
        return any(text is None or attached.search(text) for text in texts)

    def _check_process_function(self, routine: Routine) -> None:
        """A function an engine calls once per batch (ignite's `Engine(process_function)`: the
        engine adds nothing to it) is one loop iteration: backward and step in it, and no zeroing
        of that optimizer anywhere in the file (an event handler may zero), accumulate."""
        if routine.node is None or routine.qualname not in self._engine_steps():
            return
        pairs = self.training.expanded(routine)
        events = [e for _, e in pairs]
        steps = [e for e in events if e.kind in STEP]
        backwards = [local for local, e in pairs if e.kind in BACKWARD]
        if not steps or not backwards or any(e.kind in ("zero_grad", "build_model") for e in events):
            return
        optimizers = {self.optimizer_of(s) for s in steps}
        if any(s.kind == "step" and s.arg for s in steps) or "" in optimizers or \
                any(self.training.unresolved_calls_with(routine, None, name) for name in optimizers) or \
                any(self._step_zeroes(name, routine.klass) for name in optimizers):
            return
        if any(e.kind == "zero_grad" for r in self.training.all for e in r.events):
            return  # zeroed elsewhere: an ITERATION_STARTED handler, a helper
        first = backwards[0]
        names = ", ".join(f"`{n}`" for n in sorted(optimizers))
        message = (f"`{routine.qualname}` is the engine's process function, run once per batch: {names} steps "
                   f"there but the gradients are never zeroed, so each step applies the sum of all gradients "
                   f"so far. Call `{sorted(optimizers)[0]}.zero_grad()` before `backward()`.")
        direct = first in routine.events and all(s in routine.events for s in steps)
        fix = None
        if direct and len(optimizers) == 1 and not first.loops and not first.conditional and \
                first.stmt is not None and all(not s.loops and not s.conditional for s in steps):
            name = next(iter(optimizers))
            fix = FixSpec(f"Insert `{name}.zero_grad()` before the backward",
                          (InsertBefore(first.stmt, f"{name}.zero_grad()"),))
        self.report(first.node, message, fix=fix,
                    related=[Related(steps[0].node, "the optimizer steps here")] if direct else [])

    def _engine_steps(self) -> frozenset[str]:
        return frozenset(f.text for f in self.model.facts["program"] if isinstance(f, Marker) and f.kind == "step-fn")

    def _call_sites(self, inner) -> list[tuple[int, int, object]]:
        """(id of the routine's node, loop, the call there) of every step loop, in file order,
        whose first backward is `inner` (in a helper it calls)."""
        def compute():
            training, found = self.training, []
            for routine in training.all:
                for index in training.step_loops(routine, through_calls=True):
                    pairs = [(local, e) for local, e in training.expanded(routine, index) if e.kind in BACKWARD]
                    if pairs and pairs[0][1].node is inner.node and pairs[0][0] is not pairs[0][1]:
                        found.append((id(routine.node), index, pairs[0][0]))
            return found
        return self.model.remembered((self.CODE, "sites", id(inner.node)), compute)

    def _reported_in_helper(self, inner) -> bool:
        """The helper's own loop around the backward steps the optimizer: reported there."""
        for routine in self.training.all:
            if any(e.node is inner.node for e in routine.events):
                loops = self.training.step_loops(routine, through_calls=True)
                return bool(inner.loops) and any(index in inner.loops for index in loops)
        return False

    def _fix(self, routine: Routine, index: int, backward, steps, optimizers) -> FixSpec | None:
        """Safe when one optimizer is stepped unconditionally right in this loop after the backward."""
        if len(optimizers) != 1 or backward.conditional or backward.stmt is None or \
                routine.innermost(backward) != index:
            return None
        if any(s.conditional or routine.innermost(s) != index for s in steps):
            return None  # a conditional step is accumulation: zeroing before every backward would break it
        name = next(iter(optimizers))
        return FixSpec(f"Insert `{name}.zero_grad()` before the backward", (InsertBefore(backward.stmt,
                                                                                           f"{name}.zero_grad()"),))

    def _step_zeroes(self, name: str, klass: str) -> bool:
        obj = self.model.object(name, klass)
        if obj is None:
            return False
        cls = obj.callee.rsplit(".", 1)[-1]
        return any(r.has("zero_grad") for r in self.training.routines(f"{cls}.step"))


def _arms_around(node: cst.CSTNode, parents: dict[int, cst.CSTNode]):
    """(the `if`, the arm holding `node`, the other arm) for each `if` around `node` that has an `else`,
    innermost first, up to the function; an `elif` chain is the `if`'s other arm as a whole."""
    child, current = node, parents.get(id(node))
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.For, cst.While)):
        if isinstance(current, cst.If) and current.orelse is not None:
            if child is current.body:
                yield current, current.body, current.orelse
            elif child is current.orelse:
                yield current, current.orelse, current.body
        child, current = current, parents.get(id(current))


def _inside(node: cst.CSTNode, region: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> bool:
    while node is not None:
        if node is region:
            return True
        node = parents.get(id(node))
    return False
