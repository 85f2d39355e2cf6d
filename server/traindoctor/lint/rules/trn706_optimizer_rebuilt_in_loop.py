"""TRN706 optimizer-rebuilt-in-loop: an optimizer or LR scheduler constructed inside
the loop that steps it (every step), or inside the epoch loop around it, so its
state (momentum, Adam moments, the schedule's position) starts over each time.

Quiet on conditional rebuilds (switching optimizer at a phase), on loops that also
build a new model (hyperparameter searches, folds, meta-learning tasks), on loops
that are not epoch loops around the stepping loop, and on schedulers given
`last_epoch`. No fix: hoisting it changes which parameters it holds."""

from __future__ import annotations

import re

from ..analysis.training import Routine
from ..rule import Related
from .trn7xx_training_base import RoutineRule

_EPOCH = re.compile(r"epoch", re.I)


class OptimizerRebuiltInLoop(RoutineRule):
    CODE = "TRN706"
    READS = ("names", "classes", "training")

    def check(self, routine: Routine) -> None:
        training = self.training
        for build in routine.events:
            if build.kind not in ("build_optimizer", "build_scheduler") or not build.loops or build.conditional \
                    or not build.receiver or "last_epoch" in _text(build.node):
                continue
            index = build.loops[-1]
            inside = training.loop_effects(routine, index)
            if any(e.kind == "build_model" or (e.kind == "call" and e.receiver in self.model.model_classes)
                   for e in inside):
                continue
            name = build.receiver
            steps = [e for e in routine.events_in(index) if
                     (e.kind in ("step", "sched_step") and e.receiver == name) or
                     (e.kind == "scaler_step" and e.arg == name)]
            if not steps:
                continue
            loop = routine.loops[index]
            same = [s for s in steps if routine.innermost(s) == index]
            if not same and not (_EPOCH.search(loop.target) or _EPOCH.search(loop.iter)):
                continue
            what = "scheduler" if build.kind == "build_scheduler" else "optimizer"
            state = "its position in the schedule" if what == "scheduler" else "its state (momentum, Adam moments)"
            how = "every step" if same else "every epoch"
            message = (f"the {what} `{name}` is built inside the loop, so {state} starts over {how}: "
                       f"build it once before the loop.")
            self.report(build.node, message, related=[Related(steps[0].node, f"the {what} steps here")])


def _text(node) -> str:
    from ..analysis.scopes import code

    return code(node) if node is not None else ""
