"""TRN404 grad-scaler-misuse, in a loop that backpropagates `scaler.scale(loss)`:
- `optimizer.step()` called directly (no `scaler.step(optimizer)`): the update uses
  gradients still multiplied by the scale (65536 at first), and inf/NaN steps are
  not skipped -> `scaler.step(optimizer)`;
- `scaler.step(...)` without `scaler.update()`: the scale never adapts -> add it;
- gradient clipping between the scaled backward and `scaler.step` without
  `scaler.unscale_(optimizer)` first: it clips scaled gradients -> insert `unscale_`.
Clipping through accelerate/Lightning (which unscale themselves) is not flagged."""

from __future__ import annotations

from ..analysis.training import Routine
from ..rule import FixSpec, InsertAfter, InsertBefore, Replace
from .trn7xx_training_base import RoutineRule


class GradScalerMisuse(RoutineRule):
    CODE = "TRN404"
    READS = ("names", "objects", "training", "project")

    def check(self, routine: Routine) -> None:
        for loop in routine.loops:
            if loop.parent != -1 and any(e.kind == "scaled_backward" for e in routine.events_in(loop.parent)):
                continue  # judged with the outer loop
            events = self.training.loop_effects(routine, loop.index)
            own = routine.events_in(loop.index)
            scaled = [e for e in own if e.kind == "scaled_backward"]
            if not scaled:
                continue
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
                continue
            for step in scaler_steps:
                if step in own and not any(e.kind == "scaler_update" and e.receiver == step.receiver for e in events):
                    fix = None
                    if step.stmt is not None and not step.conditional and len(getattr(step.stmt, "body", ())) == 1:
                        fix = FixSpec(f"Call `{step.receiver}.update()` after the step",
                                      (InsertAfter(step.stmt, f"{step.receiver}.update()"),))
                    self.report(step.node, f"`{step.receiver}.step(...)` without `{step.receiver}.update()`: the loss "
                                           f"scale never adapts (after one inf/NaN every later step is skipped, "
                                           f"or the scale stays needlessly small).", fix=fix)
            self._clipping(own, scaler, safe=not any(e.conditional for e in scaled))

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
