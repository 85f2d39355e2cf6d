"""TRN706 optimizer-rebuilt-in-loop: an optimizer or LR scheduler constructed inside
the loop that steps it (every step), or inside the epoch loop around it, so its
state (momentum, Adam moments, the schedule's position) starts over each time.

Quiet on conditional rebuilds (switching optimizer at a phase), on loops that also
build a new model (hyperparameter searches, folds, meta-learning tasks), on loops
around the stepping loop that build it from what they change (a learning rate or the
parameters of a phase: `for lr in lrs`) or with a scheduler whose schedule they change (each
pass a run of its own), and on schedulers given `last_epoch`. No fix: hoisting
it changes which parameters it holds."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.names import dotted_name
from ..analysis.scopes import names_in
from ..analysis.training import TRAINING_READS, Routine
from ..walk import child_nodes, iter_nodes
from ..rule import Related
from .trn7xx_training_base import RoutineRule

_EPOCH = re.compile(r"epoch", re.I)


class OptimizerRebuiltInLoop(RoutineRule):
    CODE = "TRN706"
    READS = ("names", *TRAINING_READS)

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
            if not same and not (_EPOCH.search(loop.target) or _EPOCH.search(loop.iter) or
                                 _same_every_time(build.node, loop.node, routine, index)):
                continue
            what = "scheduler" if build.kind == "build_scheduler" else "optimizer"
            state = "its position in the schedule" if what == "scheduler" else "its state (momentum, Adam moments)"
            how = "every step" if same else "every epoch" if _EPOCH.search(loop.target + loop.iter) else \
                "every pass of the loop around the one that steps it"
            message = (f"the {what} `{name}` is built inside the loop, so {state} starts over {how}: "
                       f"build it once before the loop.")
            self.report(build.node, message, related=[Related(steps[0].node, f"the {what} steps here")])


def _same_every_time(build, loop, routine: Routine, index: int, asked: frozenset = frozenset()) -> bool:
    """The loop around the stepping loop builds the same thing each time: nothing the
    constructor reads is bound in the loop (its target, an assignment), other than an optimizer
    rebuilt there the same way (a scheduler's). An optimizer rebuilt per phase or per learning rate reads
    what the loop changes. `asked`: the builds whose answer is being worked out (two optimizers built
    in one loop ask about each other; one that is asked again counts as not the same)."""
    if not isinstance(build, cst.Call) or not isinstance(loop, (cst.For, cst.While)):
        return False
    asked = asked | {id(build)}
    rebuilt = {e.receiver for e in routine.events_in(index) if e.kind == "build_optimizer" and e.node is not build
               and id(e.node) not in asked and _same_every_time(e.node, loop, routine, index, asked)}
    bound: set[str] = set()
    for node in iter_nodes(loop):
        if type(node) is cst.For:
            bound |= _target_names(node.target)
        elif type(node) in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign):
            bound |= _target_names(node.target)
        elif type(node) is cst.AsName:
            bound |= _target_names(node.name)
        elif type(node) is cst.NamedExpr:
            bound |= _target_names(node.target)
    bound -= rebuilt
    if _reads_any(_reads(build), bound):
        return False
    # An optimizer rebuilt with a scheduler whose schedule the loop changes (`LambdaLR(opt, lambda s:
    # rate(s, *config))` for each config): each pass is a run of its own, and a run starts from fresh state.
    built = next((e.receiver for e in routine.events_in(index) if e.node is build and e.kind == "build_optimizer"), "")
    return not built or not any(e.kind == "build_scheduler" and built in _reads(e.node) and
                                _reads_any(_reads(e.node) - {built}, bound) for e in routine.events_in(index))


def _reads_any(read: set[str], bound: set[str]) -> bool:
    return any(name == b or name.startswith(b + ".") for name in read for b in bound)


def _reads(call) -> set[str]:
    """The names a constructor's arguments read; a lambda reads what its body reads besides its own
    parameters (`lambda step: rate(step, ...)` reads no `step` of the loop)."""
    read: set[str] = set()
    for a in call.args:
        read |= _free_names(a.value)
    return read


def _free_names(expr) -> set[str]:
    if type(expr) is cst.Lambda:
        own = {p.name.value for p in expr.params.params}
        return {n for n in _free_names(expr.body) if n.split(".")[0] not in own}
    if not any(type(node) is cst.Lambda for node in iter_nodes(expr)):
        return names_in(expr)
    found: set[str] = set()
    for child in child_nodes(expr):
        found |= _free_names(child)
    return found


def _target_names(target) -> set[str]:
    found = set()
    for node in iter_nodes(target):
        name = dotted_name(node) if type(node) in (cst.Name, cst.Attribute) else None
        if name is not None:
            found.add(name)
    return found


def _text(node) -> str:
    from ..analysis.scopes import code

    return code(node) if node is not None else ""
