"""TRN404 grad-scaler-misuse, in a loop that backpropagates `scaler.scale(loss)`:
- `optimizer.step()` called directly (no `scaler.step(optimizer)`): the update uses
  gradients still multiplied by the scale (65536 at first), and inf/NaN steps are
  not skipped -> `scaler.step(optimizer)`;
- `optimizer.step()` called directly as well as `scaler.step(optimizer)` in the same iteration:
  a second update with the same gradients, not skipped on inf/NaN -> remove it;
- `scaler.step(...)` without `scaler.update()`: an enabled scaler raises RuntimeError at the next step
  (`step() has already been called since the last update()`) -> add it;
- gradient clipping between the scaled backward and `scaler.step` without
  `scaler.unscale_(optimizer)` first: it clips scaled gradients -> insert `unscale_`.
- a tensor hook that clamps the gradient it receives (`p.register_hook(lambda g: g.clamp(-c, c))`,
  or an in-file function doing so), in a file whose loop backpropagates `scaler.scale(loss)`:
  the hook runs inside that backward, on gradients multiplied by the loss scale (checked in
  torch), so it clamps scaled gradients -> clip after `scaler.unscale_(optimizer)` instead.
Clipping through accelerate/Lightning (which unscale themselves) is not flagged."""

from __future__ import annotations

import libcst as cst

from ..analysis.facts import Marker
from ..analysis.names import clamp_parts, dotted_name
from ..analysis.training import TRAINING_READS, Routine
from ..rule import FixSpec, InsertAfter, InsertBefore, Related, Replace
from ..walk import iter_nodes
from .trn7xx_training_base import RoutineRule


class GradScalerMisuse(RoutineRule):
    CODE = "TRN404"
    READS = ("names", *TRAINING_READS, "project", "precision")

    def check(self, routine: Routine) -> None:
        bodies = [(routine.events_in(loop.index), self.training.loop_effects(routine, loop.index))
                  for loop in routine.loops
                  if loop.parent == -1 or not any(e.kind == "scaled_backward" for e in routine.events_in(loop.parent))]
        if not routine.loops and routine.node is not None and self.training.per_iteration(routine.qualname):
            # a step function a loop calls per batch (`self.train_step(x, y)`): its body is the loop body
            bodies.append((list(routine.events), self.training.loop_effects(routine, None)))
        for own, events in bodies:  # an inner loop is judged with its outer loop when that one scales
            self._judge(routine, own, events)

    def _judge(self, routine: Routine, own: list, events: list) -> None:
        """One loop body: `own`, its events, and `events`, the same with the helpers it calls expanded."""
        scaled = [e for e in own if e.kind == "scaled_backward"]
        if not scaled:
            return
        scaler = scaled[0].receiver
        scaler_steps = [e for e in events if e.kind == "scaler_step"]
        plain = [e for e in own if e.kind == "step" and not e.arg]
        if plain and not scaler_steps:
            step = plain[0]
            name = self.optimizer_of(step)
            fix = None
            if name and step.stmt is not None and len(getattr(step.stmt, "body", ())) == 1:
                text = f"{scaler}.step({name})"
                changes = [Replace(step.node, text)]  # type: ignore[arg-type]
                if not any(e.kind == "scaler_update" for e in events):
                    changes.append(InsertAfter(step.stmt, f"{scaler}.update()"))
                fix = FixSpec(f"Step through the scaler: `{text}`", tuple(changes),
                              safe=self._known_scaler(scaler, routine) and not scaled[0].conditional)
            self.report(step.node, f"the loss is scaled with `{scaler}.scale(...)` but `{name or 'the optimizer'}"
                                   f".step()` is called directly: the update uses gradients still multiplied by "
                                   f"the loss scale and inf/NaN steps are not skipped. Use "
                                   f"`{scaler}.step({name or 'optimizer'})` and `{scaler}.update()`.", fix=fix)
            return
        # both unconditional: `if amp: scaler.step(opt) else: opt.step()` is one step
        through_scaler = {e.arg for e in scaler_steps if e.arg and not e.conditional}
        for step in plain:
            name = self.optimizer_of(step)
            if name and name in through_scaler and not step.conditional:
                self.report(step.node, f"`{name}` is stepped twice each iteration: through `{scaler}.step({name})` "
                                       f"and again directly with `{name}.step()`, which applies the same "
                                       f"gradients a second time and ignores the scaler's inf/NaN check. "
                                       f"Remove `{name}.step()`.",
                            related=[Related(next(e.node for e in scaler_steps if e.arg == name and not e.conditional),
                                             "the scaler steps it here")])
        for step in scaler_steps:
            if step in own and not any(e.kind == "scaler_update" and e.receiver == step.receiver for e in events):
                fix = None
                if step.stmt is not None and not step.conditional and len(getattr(step.stmt, "body", ())) == 1:
                    fix = FixSpec(f"Call `{step.receiver}.update()` after the step",
                                  (InsertAfter(step.stmt, f"{step.receiver}.update()"),))
                self.report(step.node, f"`{step.receiver}.step(...)` without `{step.receiver}.update()`: the next "
                                       f"`{step.receiver}.step(...)` raises RuntimeError (\"step() has already been "
                                       f"called since the last update()\") whenever the scaler is enabled; "
                                       f"`update()` resets it and adapts the loss scale.", fix=fix)
        self._clipping(own, scaler, safe=not any(e.conditional for e in scaled))
        self._clamping_hooks(scaled[0], scaler)

    def _clamping_hooks(self, backward, scaler: str) -> None:
        """The file's gradient hooks that clamp, reported at the scaled backward that runs them."""
        hooks = self.model.remembered((self.CODE, "hooks"), self._find_clamping_hooks)
        if not hooks or self.__dict__.get("_hooks_reported"):
            return
        self._hooks_reported = True  # one finding per file: the hooks are the bug
        self.report(backward.node, f"`{scaler}.scale(loss)` is backpropagated through a gradient hook that clamps "
                                   f"every gradient: the hook runs inside this backward, on gradients still "
                                   f"multiplied by the loss scale (65536 at first), so it clamps scaled values and "
                                   f"the real bound shrinks with the scale. Remove the hook and clip after "
                                   f"`{scaler}.unscale_(optimizer)` (`torch.nn.utils.clip_grad_value_`).",
                    related=[Related(call, "this hook clamps the gradient it is given") for call in hooks])

    def _find_clamping_hooks(self) -> list[cst.Call]:
        """`t.register_hook(hook)` calls (collect.py's "grad-hook" markers) whose hook clamps or
        clips the gradient it is given: a lambda, or a function of this file, whose body calls
        `g.clamp(...)`/`g.clamp_(...)`/`g.clip(...)` or `torch.clamp(g, ...)` on its parameter."""
        return [m.node for m in self.model.facts["precision"] if isinstance(m, Marker) and m.kind == "grad-hook"
                and type(m.node) is cst.Call and self._clamps(m.node.args[0].value)]

    def _clamps(self, hook: cst.BaseExpression) -> bool:
        if type(hook) is cst.Lambda:
            params, body = hook.params.params, hook.body
        elif type(hook) is cst.Name and self.model.function(hook.value) is not None:
            function = self.model.function(hook.value).node
            params, body = function.params.params, function.body
        else:
            return False
        if len(params) != 1:
            return False
        grad = params[0].name.value
        for call in iter_nodes(body):
            if type(call) is not cst.Call:
                continue
            parts = clamp_parts(call, self.names)
            if parts is not None and parts[0] is not None and dotted_name(parts[0]) == grad:
                return True
        return False

    def _clipping(self, own, scaler: str, safe: bool) -> None:
        """`safe`: the scaled backward is unconditional (the scaler exists wherever the clip runs)."""
        seq = [e for e in own if e.kind in ("scaled_backward", "unscale", "clip", "scaler_step")]
        for i, event in enumerate(seq):
            if event.kind != "clip" or event.receiver:
                continue
            before = [e for e in seq[:i] if e.kind != "clip"]
            after = [e for e in seq[i + 1:] if e.kind != "clip"]
            if not before or before[-1].kind != "scaled_backward" or not after or after[0].kind != "scaler_step":
                continue
            optimizer = after[0].arg
            fix = None
            if optimizer and event.stmt is not None and self._single(event):
                fix = FixSpec(f"Unscale first: `{scaler}.unscale_({optimizer})`",
                              (InsertBefore(event.stmt, f"{scaler}.unscale_({optimizer})"),), safe=safe)
            self.report(event.node, f"gradients are clipped while still multiplied by the loss scale: call "
                                    f"`{scaler}.unscale_({optimizer or 'optimizer'})` before clipping, or the max-norm "
                                    f"applies to scaled gradients (and clips almost everything).", fix=fix)

    def _single(self, event) -> bool:
        return len(getattr(event.stmt, "body", ())) == 1

    def _known_scaler(self, name: str, routine: Routine) -> bool:
        return self.model.object_kind(name, routine.klass) == "scaler"
