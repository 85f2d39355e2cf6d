"""TRN702 misordered-step: within one training iteration (read cyclically, as the
loop runs it), `optimizer.zero_grad()` between `backward()` and that optimizer's
`step()`, so every step applies zero gradients; or gradient clipping that is not
between `backward()` and `step()` (after the step, or before the backward), so it
clips nothing that the step uses.

Quiet on conditional zeroing (skipping a bad batch), on other optimizers' zeroing
(GANs), and on clipping inside helpers."""

from __future__ import annotations

from ..analysis.training import BACKWARD, STEP, Routine
from ..rule import FixSpec, Related, Replace
from .trn7xx_training_base import RoutineRule

_KINDS = BACKWARD + STEP + ("zero_grad", "clip")


class MisorderedStep(RoutineRule):
    CODE = "TRN702"

    def check(self, routine: Routine) -> None:
        for index in self.training.step_loops(routine):
            seq = [e for e in routine.events_in(index) if e.kind in _KINDS]
            self._zeroing(seq)
            self._clipping(seq)

    def _zeroing(self, seq) -> None:
        n = len(seq)
        for i, step in enumerate(seq):
            optimizer = self.optimizer_of(step) if step.kind in STEP else ""
            if not optimizer:
                continue
            between, backward, wrapped = [], None, False
            for k in range(1, n + 1):
                event = seq[(i - k) % n]
                if event.kind in BACKWARD:
                    backward, wrapped = event, i - k < 0
                    break
                if event.kind == "zero_grad" and event.receiver == optimizer and not event.conditional:
                    between.append(event)
            if not between or backward is None:
                continue
            zero = between[0]
            if wrapped:
                message = (f"`{optimizer}.step()` comes before `backward()` in the loop, with `{optimizer}.zero_grad()` "
                           f"in between: every step applies the gradients that were just zeroed.")
                self.report(step.node, message, related=[Related(backward.node, "the gradients are computed here")])
                continue
            message = (f"`{optimizer}.zero_grad()` runs between `backward()` and `{optimizer}.step()`: the step "
                       f"applies zero gradients and the model never learns.")
            fix = None
            if all(len(getattr(e.stmt, "body", ())) == 1 and e.node is getattr(e.stmt.body[0], "value", None)
                   for e in (zero, step)) and not step.conditional:
                fix = FixSpec(f"Swap `{optimizer}.zero_grad()` and the step",  # backward -> step -> zero_grad
                              (Replace(zero.stmt.body[0], step.stmt.body[0]),  # type: ignore[union-attr]
                               Replace(step.stmt.body[0], zero.stmt.body[0])), safe=False)  # type: ignore[union-attr]
            self.report(zero.node, message, fix=fix, related=[Related(backward.node, "gradients computed here"),
                                                               Related(step.node, "and applied here")])

    def _clipping(self, seq) -> None:
        clips = [i for i, e in enumerate(seq) if e.kind == "clip"]
        if not clips or not any(e.kind in BACKWARD for e in seq):
            return
        for i in clips:
            before = [e for e in seq[:i] if e.kind in BACKWARD or e.kind in STEP]
            after = [e for e in seq[i + 1:] if e.kind in BACKWARD or e.kind in STEP]
            if before and before[-1].kind in BACKWARD and after and after[0].kind in STEP:
                return  # one clip sits where it works
            if not before and after and after[0].kind in STEP and any(e.kind in BACKWARD for e in seq[i + 1:]):
                return  # step first, backward last: cyclically backward -> clip -> step
        where = seq[clips[0]]
        message = ("gradient clipping is not between `backward()` and the optimizer step: it clips gradients the "
                   "step has already applied (or zeroed ones), so the update is never clipped.")
        self.report(where.node, message)
